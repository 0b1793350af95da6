//! The kernel side of every wake-up (`--breakdown`, `-t 1`, `-t 2`): the trace
//! reader's pairing (`probes::wakeups::session`) matches each expiry of a sampling thread's timer to
//! the start of its interrupt handler (IRQ latency) and to the moment the
//! thread is scheduled in (thread latency). Here those figures are collected
//! per thread, in the same loops, histograms and recorders as the user
//! latency, so that either can be the run's main figure.

use super::figure::FigureSink;
use super::{Figure, ThreadShared, TimerPlan};
use crate::probes::wakeups::{SlotRead, SlotReader, TracedThread, WakeupRecord, WakeupTrace};
use crate::report::Breakdown;
use crate::rt::bpf::CollectorUsed;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// A sampling thread as the trace needs to know it.
pub struct Traced {
    pub tid: i32,
    pub cpu: usize,
    pub first_expiry_ns: u64,
}

/// The traced figures of one thread.
pub struct TracedFigures {
    pub irq: FigureSink,
    pub thread: FigureSink,
    pub return_to_user: FigureSink,
    /// Complete wake-ups without a traced switch to the thread.
    pub without_sched_in: u64,
    /// Wake-ups with both figures.
    pub complete: u64,
    /// Expiries of wake-ups the trace saw only in part (bounded; beyond,
    /// only counted): those after the thread's last sample are the timer's
    /// last arming, not a wake-up, and are left out at the end.
    incomplete_expiries: Vec<u64>,
    incomplete_unlisted: u64,
    pub incomplete: u64,
    tid: i32,
    /// The loop the figures are filling (counted in periods from the first
    /// measured expiry).
    open_loop: u64,
}

/// What the trace reader saw in total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Where the figures come from.
    pub source: String,
    pub events_read: u64,
    /// Events the kernel dropped because the reader fell behind.
    pub events_lost: u64,
    /// CPU time of the trace reader thread.
    pub reader_cpu_ns: u64,
    /// The reader had no CPU of its own and ran beside the sampling threads.
    #[serde(default)]
    pub reader_on_measured_cpus: bool,
}

const EVENTS: &str =
    "trace events timer:hrtimer_start, timer:hrtimer_expire_entry, sched:sched_switch";
const EVENTS_WITH_RETURN: &str = "trace events timer:hrtimer_start, timer:hrtimer_expire_entry, sched:sched_switch, rseq:rseq_update";

/// Incomplete wake-ups remembered per thread (8 bytes each).
const MAX_INCOMPLETE_LISTED: usize = 4096;

struct BreakdownRecords {
    figures: Vec<TracedFigures>,
    shared: Vec<Arc<ThreadShared>>,
    figure: Figure,
    period_ns: u64,
    samples_per_loop: u64,
}

impl BreakdownRecords {
    fn take(&mut self, record: WakeupRecord) {
        let Some(i) = self.figures.iter().position(|f| f.tid == record.tid) else {
            return;
        };
        let f = &mut self.figures[i];
        // The sampling thread says where its warm-up ended (in wake-ups, which
        // overruns make longer than in periods): earlier wake-ups are left out.
        let from = self.shared[i].measuring_from_ns.load(Ordering::Acquire);
        if from == 0 || record.expires_ns < from {
            return;
        }
        let loop_index = (record.expires_ns - from) / self.period_ns / self.samples_per_loop;
        while f.open_loop < loop_index {
            f.open_loop += 1;
            close_loop(f, self.figure, &self.shared[i], false);
        }
        let (true, Some(irq)) = (record.is_complete(), record.irq_ns) else {
            if f.incomplete_expiries.len() < MAX_INCOMPLETE_LISTED {
                f.incomplete_expiries.push(record.expires_ns);
            } else {
                f.incomplete_unlisted += 1;
            }
            return;
        };
        f.complete += 1;
        f.irq.add(irq);
        match record.thread_ns {
            Some(thread) => f.thread.add(thread),
            None => f.without_sched_in += 1,
        }
        if let Some(back) = record.return_ns {
            f.return_to_user.add(back);
        }
        let live = match self.figure {
            Figure::Irq => Some(irq),
            Figure::Thread => record.thread_ns,
            Figure::User => None,
        };
        if let Some(ns) = live {
            self.shared[i].live.record(ns);
        }
    }
}

/// Closes the open loop of the traced figures; the main figure's loop goes
/// to the live output.
fn close_loop(f: &mut TracedFigures, figure: Figure, shared: &ThreadShared, partial: bool) {
    let irq = f.irq.close_loop(partial);
    let thread = f.thread.close_loop(partial);
    f.return_to_user.close_loop(partial);
    let main = match figure {
        Figure::Irq => irq.map(|stats| (stats, &mut f.irq)),
        Figure::Thread => thread.map(|stats| (stats, &mut f.thread)),
        Figure::User => None,
    };
    if let Some((stats, sink)) = main {
        sink.publish_window(&shared.window_histograms, stats.index);
        shared.loops.push(stats);
    }
}

/// A running trace of the sampling threads' wake-ups.
pub struct TraceSession {
    trace: WakeupTrace,
    collector: Arc<Mutex<BreakdownRecords>>,
}

impl TraceSession {
    /// Starts the trace; every error is one line saying what is missing.
    pub fn start(
        plan: &TimerPlan,
        threads: &[Traced],
        shared: &[Arc<ThreadShared>],
    ) -> Result<TraceSession, String> {
        let mut figures = Vec::with_capacity(threads.len());
        // The main figure's loops get their histograms (the per-second series).
        let sink = |main: bool| {
            FigureSink::new(plan.histogram_cells, plan.bucket_ns)
                .map(|s| if main { s.with_window() } else { s })
        };
        for t in threads {
            figures.push(TracedFigures {
                irq: sink(plan.figure == Figure::Irq)?,
                thread: sink(plan.figure == Figure::Thread)?,
                return_to_user: FigureSink::new(plan.histogram_cells, plan.bucket_ns)?,
                without_sched_in: 0,
                complete: 0,
                incomplete_expiries: Vec::new(),
                incomplete_unlisted: 0,
                incomplete: 0,
                tid: t.tid,
                open_loop: 0,
            });
        }
        let collector = Arc::new(Mutex::new(BreakdownRecords {
            figures,
            shared: shared.to_vec(),
            figure: plan.figure,
            period_ns: plan.period_ns,
            samples_per_loop: plan.samples_per_loop(),
        }));
        let sink = {
            let collector = collector.clone();
            Box::new(move |record: WakeupRecord| {
                if let Ok(mut c) = collector.lock() {
                    c.take(record);
                }
            })
        };
        let traced: Vec<TracedThread> = threads
            .iter()
            .map(|t| TracedThread {
                tid: t.tid,
                cpu: t.cpu,
                first_expiry_ns: t.first_expiry_ns,
                period_ns: plan.period_ns,
            })
            .collect();
        let trace = WakeupTrace::start(&traced, sink)
            .map_err(|e| format!("--breakdown/-t 1/-t 2 need kernel tracing: {e}"))?;
        Ok(TraceSession { trace, collector })
    }

    /// Stops the trace (the reader drains what is left) and hands back every
    /// thread's figures, their last loop closed. `last[i]` is the expiry of
    /// thread i's last sample and whether its last loop was cut short.
    pub fn stop(self, last: &[(u64, bool)]) -> (Vec<TracedFigures>, TraceSummary) {
        let stats = self.trace.stop();
        // The reader thread is joined: the lock is free (and a poisoned one
        // still holds the figures).
        let mut c = self
            .collector
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let figure = c.figure;
        let mut figures = std::mem::take(&mut c.figures);
        for (i, (f, shared)) in figures.iter_mut().zip(&c.shared).enumerate() {
            let (last_expiry, partial) = last.get(i).copied().unwrap_or((u64::MAX, true));
            close_loop(f, figure, shared, partial);
            f.incomplete = f.incomplete_unlisted
                + f.incomplete_expiries
                    .iter()
                    .filter(|&&e| e <= last_expiry)
                    .count() as u64;
        }
        let summary = TraceSummary {
            source: if stats.return_traced {
                EVENTS_WITH_RETURN.to_string()
            } else {
                EVENTS.to_string()
            },
            events_read: stats.end.counts.events_read,
            events_lost: stats.end.events_lost,
            reader_cpu_ns: stats.end.counts.cpu_ns,
            reader_on_measured_cpus: stats.end.counts.on_traced_cpus,
        };
        (figures, summary)
    }
}

/// The in-kernel (BPF) figures of one sampling thread, filled by the thread
/// itself after each wake-up from its CPU's slot (`probes::wakeups`).
pub struct KernelFigures {
    reader: SlotReader,
    pub irq: FigureSink,
    pub thread: FigureSink,
    /// Wake-ups with both figures.
    pub complete: u64,
    /// Wake-ups whose slot was written while read.
    pub torn: u64,
    /// Wake-ups the slot did not hold whole (another wake-up's record, a
    /// program that did not run), `unscheduled` included.
    pub missing: u64,
    /// Of those, wake-ups whose timer fired before the thread slept: no
    /// scheduling, so no thread figure (`SlotRead::Unscheduled`).
    pub unscheduled: u64,
    /// Complete wake-ups whose figures were out of order (irq <= thread <=
    /// user is expected of every one).
    pub unordered: u64,
}

impl KernelFigures {
    /// `irq` and `thread` were built (and touched) before the thread became
    /// real-time.
    pub fn new(reader: SlotReader, irq: FigureSink, thread: FigureSink) -> KernelFigures {
        KernelFigures {
            reader,
            irq,
            thread,
            complete: 0,
            torn: 0,
            missing: 0,
            unscheduled: 0,
            unordered: 0,
        }
    }

    /// Reads the wake-up of `expiry` from the slot (plain loads) and adds
    /// its IRQ and thread latency; returns them. `user` is the thread's own
    /// latency of that wake-up.
    #[inline]
    pub fn take(&mut self, expiry: u64, user: i64) -> Option<(i64, i64)> {
        match self.reader.read(expiry) {
            SlotRead::Complete { irq_ns, switch_ns } => {
                let irq = irq_ns.wrapping_sub(expiry) as i64;
                let thread = switch_ns.wrapping_sub(expiry) as i64;
                self.complete += 1;
                if !(irq <= thread && thread <= user) {
                    self.unordered += 1;
                }
                self.irq.add(irq);
                self.thread.add(thread);
                Some((irq, thread))
            }
            SlotRead::Torn => {
                self.torn += 1;
                None
            }
            SlotRead::Unscheduled { .. } => {
                self.missing += 1;
                self.unscheduled += 1;
                None
            }
            SlotRead::Missing => {
                self.missing += 1;
                None
            }
        }
    }
}

/// Builds the breakdown of a thread measured in the kernel, and picks its
/// main figure.
pub fn assign_in_kernel(
    figure: Figure,
    user: FigureSink,
    k: KernelFigures,
    source: &str,
) -> (FigureSink, Breakdown) {
    let breakdown = Breakdown {
        source: source.to_string(),
        irq: k.irq.recorder.summary(),
        thread: k.thread.recorder.summary(),
        // No return-to-user event in the kernel collection: the user
        // figure follows the switch-in by the thread's own clock read.
        return_to_user: crate::stats::LatencyRecorder::signed().summary(),
        user: user.recorder.summary(),
        traced_wakeups: k.complete,
        without_sched_in: 0,
        incomplete_wakeups: k.missing,
        events_lost: 0,
        collector: CollectorUsed::bpf(),
        torn_wakeups: k.torn,
        unordered_wakeups: k.unordered,
        unscheduled_wakeups: k.unscheduled,
    };
    let main = match figure {
        Figure::User => user,
        Figure::Thread => k.thread,
        Figure::Irq => k.irq,
    };
    (main, breakdown)
}

/// Picks the run's main figure for a thread and builds its breakdown.
pub fn assign(
    figure: Figure,
    user: FigureSink,
    traced: Option<TracedFigures>,
    trace: Option<&TraceSummary>,
    collector: &CollectorUsed,
) -> (FigureSink, Option<Breakdown>) {
    let (Some(t), Some(trace)) = (traced, trace) else {
        return (user, None);
    };
    let breakdown = Breakdown {
        source: trace.source.clone(),
        irq: t.irq.recorder.summary(),
        thread: t.thread.recorder.summary(),
        return_to_user: t.return_to_user.recorder.summary(),
        user: user.recorder.summary(),
        traced_wakeups: t.complete,
        without_sched_in: t.without_sched_in,
        incomplete_wakeups: t.incomplete,
        events_lost: trace.events_lost,
        collector: collector.clone(),
        torn_wakeups: 0,
        unordered_wakeups: 0,
        // Not told apart by the tracefs collector (in `incomplete_wakeups`).
        unscheduled_wakeups: 0,
    };
    let main = match figure {
        Figure::User => user,
        Figure::Thread => t.thread,
        Figure::Irq => t.irq,
    };
    (main, Some(breakdown))
}
