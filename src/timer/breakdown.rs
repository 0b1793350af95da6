//! The kernel side of every wake-up (`--breakdown`, `-t 1`, `-t 2`): the trace
//! reader (`rt::tracefs`) matches each expiry of a sampling thread's timer to
//! the start of its interrupt handler (IRQ latency) and to the moment the
//! thread is scheduled in (thread latency). Here those figures are collected
//! per thread, in the same loops, histograms and recorders as the user
//! latency, so that either can be the run's main figure.

use super::figure::FigureSink;
use super::{Figure, ThreadShared, TimerPlan};
use crate::report::Breakdown;
use crate::rt::tracefs::{TracedThread, WakeupRecord, WakeupTrace};
use serde::{Deserialize, Serialize};
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
    /// Wake-ups with both figures.
    pub complete: u64,
    /// Expiries of wake-ups the trace saw only in part (bounded; beyond,
    /// only counted): those after the thread's last sample are the timer's
    /// last arming, not a wake-up, and are left out at the end.
    incomplete_expiries: Vec<u64>,
    incomplete_unlisted: u64,
    pub incomplete: u64,
    tid: i32,
    first_expiry_ns: u64,
    /// The loop the figures are filling (counted in periods from the first
    /// expiry, warm-up included).
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
}

/// Incomplete wake-ups remembered per thread (8 bytes each).
const MAX_INCOMPLETE_LISTED: usize = 4096;

struct Collector {
    figures: Vec<TracedFigures>,
    shared: Vec<Arc<ThreadShared>>,
    figure: Figure,
    period_ns: u64,
    samples_per_loop: u64,
    warmup_loops: u64,
}

impl Collector {
    fn take(&mut self, record: WakeupRecord) {
        let Some(i) = self.figures.iter().position(|f| f.tid == record.tid) else {
            return;
        };
        let f = &mut self.figures[i];
        let period_index = record.expires_ns.saturating_sub(f.first_expiry_ns) / self.period_ns;
        let loop_index = period_index / self.samples_per_loop;

        if loop_index < self.warmup_loops {
            return;
        }
        while f.open_loop < loop_index {
            f.open_loop += 1;
            close_loop(f, self.figure, &self.shared[i], false);
        }
        let (Some(irq), Some(thread)) = (record.irq_ns, record.thread_ns) else {
            if f.incomplete_expiries.len() < MAX_INCOMPLETE_LISTED {
                f.incomplete_expiries.push(record.expires_ns);
            } else {
                f.incomplete_unlisted += 1;
            }
            return;
        };
        f.complete += 1;
        f.irq.add(irq);
        f.thread.add(thread);
        match self.figure {
            Figure::Irq => self.shared[i].live.record(irq),
            Figure::Thread => self.shared[i].live.record(thread),
            Figure::User => {}
        }
    }
}

/// Closes the open loop of both traced figures; the main figure's loop goes
/// to the live output.
fn close_loop(f: &mut TracedFigures, figure: Figure, shared: &ThreadShared, partial: bool) {
    let irq = f.irq.close_loop(partial);
    let thread = f.thread.close_loop(partial);
    let main = match figure {
        Figure::Irq => irq,
        Figure::Thread => thread,
        Figure::User => None,
    };
    if let Some(stats) = main {
        shared.loops.push(stats);
    }
}

/// A running trace of the sampling threads' wake-ups.
pub struct TraceSession {
    trace: WakeupTrace,
    collector: Arc<Mutex<Collector>>,
}

impl TraceSession {
    /// Starts the trace; every error is one line saying what is missing.
    pub fn start(
        plan: &TimerPlan,
        threads: &[Traced],
        shared: &[Arc<ThreadShared>],
    ) -> Result<TraceSession, String> {
        let mut figures = Vec::with_capacity(threads.len());
        for t in threads {
            figures.push(TracedFigures {
                irq: FigureSink::new(plan.histogram_cells, plan.bucket_ns)?,
                thread: FigureSink::new(plan.histogram_cells, plan.bucket_ns)?,
                complete: 0,
                incomplete_expiries: Vec::new(),
                incomplete_unlisted: 0,
                incomplete: 0,
                tid: t.tid,
                first_expiry_ns: t.first_expiry_ns,
                open_loop: plan.warmup_loops,
            });
        }
        let collector = Arc::new(Mutex::new(Collector {
            figures,
            shared: shared.to_vec(),
            figure: plan.figure,
            period_ns: plan.period_ns,
            samples_per_loop: plan.samples_per_loop(),
            warmup_loops: plan.warmup_loops,
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

    /// The first expiry the threads were given: on the phase announced at
    /// `start`, a whole number of periods later. Loops count from it.
    pub fn set_first_expiry(&self, first_expiry_ns: u64) {
        let mut c = self
            .collector
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for f in &mut c.figures {
            f.first_expiry_ns = first_expiry_ns;
        }
    }

    /// Stops the trace (the reader drains what is left) and hands back every
    /// thread's figures, their last loop closed. `last_expiries[i]` is the
    /// expiry of thread i's last sample.
    pub fn stop(self, last_expiries: &[u64]) -> (Vec<TracedFigures>, TraceSummary) {
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
            close_loop(f, figure, shared, true);
            let last = last_expiries.get(i).copied().unwrap_or(u64::MAX);
            f.incomplete = f.incomplete_unlisted
                + f.incomplete_expiries.iter().filter(|&&e| e <= last).count() as u64;
        }
        let summary = TraceSummary {
            source:
                "trace events: timer:hrtimer_start, timer:hrtimer_expire_entry, sched:sched_switch"
                    .into(),
            events_read: stats.events_read,
            events_lost: stats.events_lost,
        };
        (figures, summary)
    }
}

/// Picks the run's main figure for a thread and builds its breakdown.
pub fn assign(
    figure: Figure,
    user: FigureSink,
    traced: Option<TracedFigures>,
) -> (FigureSink, Option<Breakdown>) {
    let Some(t) = traced else {
        return (user, None);
    };
    let breakdown = Breakdown {
        irq: t.irq.recorder.summary(),
        thread: t.thread.recorder.summary(),
        user: user.recorder.summary(),
        traced_wakeups: t.complete,
        incomplete_wakeups: t.incomplete,
    };
    let main = match figure {
        Figure::User => user,
        Figure::Thread => t.thread,
        Figure::Irq => t.irq,
    };
    (main, Some(breakdown))
}
