//! The tracefs collector of the timer breakdown: a `TraceRun` (the private
//! instance and its reader thread, `rt::tracefs`) on the events the pairing
//! needs, filtered to the sampling threads, whose events the pairing
//! (`super::pairing`) turns into one `WakeupRecord` per wake-up, handed to a
//! sink as soon as it closes. The BPF collector (`super::WakeupSlots`) gives
//! the same figures without moving an event to user space.

use super::pairing::{Matcher, TracedThread, WakeupRecord};
use crate::probes::ProbeError;
use crate::rt::tracefs::events::{EventDecoder, TraceEvent};
use crate::rt::tracefs::format::RingLayout;
use crate::rt::tracefs::instance::Instance;
use crate::rt::tracefs::reader::{Consumer, LostSpan, ReaderCounts};
use crate::rt::tracefs::{
    RunEnd, TraceOptions, TraceRun, check_usable, enable, has_event, pid_filter, tracefs_for,
};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// `(system, event)` of the events the breakdown cannot do without.
pub const NEEDED: [(&str, &str); 3] = [
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
    ("sched", "sched_switch"),
];

/// The event that marks a thread's return to user space, used when the
/// kernel has it (CONFIG_RSEQ): written on the way out of the kernel by every
/// task registered for restartable sequences (glibc 2.35+ registers every
/// thread) after it was switched out. It is needed because a kernel may not
/// trace every switch: on this machine (6.18, KVM guest) a switch *from the
/// idle task* on CPU 1 never emits `sched_switch` (CPU 0 does; `perf stat`
/// counts more context switches than `sched:sched_switch` events, so the
/// tracepoint itself is skipped), and a thread woken on idle CPU 1 has no
/// sched-in event.
pub const RETURN: (&str, &str) = ("rseq", "rseq_update");

/// The records the pairing delivered, counted as they went to the sink.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Wake-up records delivered to the sink, complete or not.
    pub delivered: u64,
    /// Of those, records without the IRQ latency or without both the
    /// thread and return latencies (see `WakeupRecord::is_complete`).
    pub incomplete: u64,
    /// Records without a sched-in: the kernel did not trace the switch to
    /// the thread (on this machine: every wake-up on idle CPU 1) or lost it.
    pub without_sched_in: u64,
}

/// What a session saw, for the report and its warnings: how its trace run
/// ended (the reader's counts, the kernel's losses), the records it
/// delivered, and whether the return-to-user events were traced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceStats {
    pub end: RunEnd,
    pub records: RecordCounts,
    /// Whether return-to-user events (`rseq_update`) were traced.
    pub return_traced: bool,
}

/// A running trace of some sampling threads' wake-ups.
pub struct WakeupTrace {
    run: TraceRun,
    records: Arc<Mutex<RecordCounts>>,
    return_traced: bool,
}

impl WakeupTrace {
    /// Creates the instance, enables the events, starts the reader and turns
    /// tracing on, with default options. The threads must not have armed
    /// their first timer yet: a wake-up is only recorded when its arming is.
    pub fn start(
        threads: &[TracedThread],
        sink: Box<dyn FnMut(WakeupRecord) + Send>,
    ) -> Result<WakeupTrace, ProbeError> {
        WakeupTrace::start_with(threads, sink, TraceOptions::default())
    }

    pub fn start_with(
        threads: &[TracedThread],
        sink: Box<dyn FnMut(WakeupRecord) + Send>,
        options: TraceOptions,
    ) -> Result<WakeupTrace, ProbeError> {
        check_threads(threads)?;
        let tracefs = tracefs_for(&NEEDED).map_err(ProbeError::Tracefs)?;
        let with_return = has_event(&tracefs, RETURN);
        let decoder = decoder(&tracefs.join("events"), with_return)?;
        let cpus: Vec<usize> = threads.iter().map(|t| t.cpu).collect();
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        let records = Arc::new(Mutex::new(RecordCounts::default()));
        let consumer = Box::new(WakeupConsumer {
            matcher: Matcher::new(threads, with_return),
            sink,
            counts: records.clone(),
        });
        let run = TraceRun::start(&tracefs, &cpus, options, decoder, consumer, |instance| {
            // The tracefs layer's closures speak its own one-line errors.
            configure(instance, &tids, with_return).map_err(|e| e.to_string())
        })
        .map_err(ProbeError::Tracefs)?;
        Ok(WakeupTrace {
            run,
            records,
            return_traced: with_return,
        })
    }

    /// The instance directory (for messages and tests).
    pub fn instance_dir(&self) -> Option<&Path> {
        self.run.instance_dir()
    }

    /// Stops tracing, delivers the remaining records, removes the instance.
    pub fn stop(mut self) -> TraceStats {
        let end = self.run.shutdown().unwrap_or_default();
        // The reader thread is joined: nothing counts any more.
        let records = *self.records.lock().unwrap_or_else(PoisonError::into_inner);
        TraceStats {
            end,
            records,
            return_traced: self.return_traced,
        }
    }
}

/// Whether the kernel offers what `WakeupTrace::start` needs, creating
/// nothing (tracefs is not mounted by this check: when it is missing but the
/// kernel has it, `start` will mount it, and the events are checked then).
pub fn check_available() -> Result<(), ProbeError> {
    if let Some(tracefs) = check_usable(&NEEDED).map_err(ProbeError::Tracefs)? {
        let events = tracefs.join("events");
        RingLayout::read(&events).map_err(ProbeError::Tracefs)?;
        decoder(&events, has_event(&tracefs, RETURN))?;
    }
    Ok(())
}

/// The decoder of the breakdown's events under `events_dir`
/// (`<tracefs>/events`); the return event only when `with_return` (it is
/// optional).
pub fn decoder(events_dir: &Path, with_return: bool) -> Result<EventDecoder, ProbeError> {
    let mut events = NEEDED.to_vec();
    events.extend(with_return.then_some(RETURN));
    EventDecoder::read_events(events_dir, &events).map_err(ProbeError::Tracefs)
}

/// The breakdown's consumer: the pairing, the sink of its records and
/// their counts.
struct WakeupConsumer {
    matcher: Matcher,
    sink: Box<dyn FnMut(WakeupRecord) + Send>,
    counts: Arc<Mutex<RecordCounts>>,
}

impl WakeupConsumer {
    /// The pairing's emit: counts each record and hands it to the sink.
    fn deliver(
        sink: &mut Box<dyn FnMut(WakeupRecord) + Send>,
        counts: &Mutex<RecordCounts>,
    ) -> impl FnMut(WakeupRecord) {
        move |record| {
            {
                let mut c = counts.lock().unwrap_or_else(PoisonError::into_inner);
                c.delivered += 1;
                c.incomplete += u64::from(!record.is_complete());
                c.without_sched_in += u64::from(record.thread_ns.is_none());
            }
            sink(record);
        }
    }
}

impl Consumer for WakeupConsumer {
    fn event(&mut self, event: &TraceEvent, _: &mut ReaderCounts) {
        let mut emit = WakeupConsumer::deliver(&mut self.sink, &self.counts);
        self.matcher.feed(event, &mut emit);
    }

    fn gap(&mut self, lost: LostSpan, _: &mut ReaderCounts) {
        let mut emit = WakeupConsumer::deliver(&mut self.sink, &self.counts);
        self.matcher.gap(lost.until_ns, &mut emit);
    }

    fn finish(&mut self, end: u64, _: &mut ReaderCounts) {
        let mut emit = WakeupConsumer::deliver(&mut self.sink, &self.counts);
        self.matcher.finish(end, &mut emit);
    }
}

fn check_threads(threads: &[TracedThread]) -> Result<(), ProbeError> {
    let bad = |why: String| Err(ProbeError::Threads(why));
    if threads.is_empty() {
        return bad("no thread to trace".into());
    }
    let mut tids = BTreeSet::new();
    for t in threads {
        if t.tid <= 0 || !tids.insert(t.tid) {
            return bad(format!("bad or repeated thread id {} to trace", t.tid));
        }
        if t.period_ns == 0 {
            return bad(format!("thread {} has a period of 0", t.tid));
        }
    }
    Ok(())
}

/// The breakdown's filters and events (tracing stays off until the reader
/// runs).
fn configure(instance: &Instance, tids: &[i32], with_return: bool) -> Result<(), ProbeError> {
    instance
        .write(
            "events/timer/hrtimer_start/filter",
            &pid_filter("common_pid", tids),
        )
        .map_err(ProbeError::Tracefs)?;
    instance
        .write(
            "events/sched/sched_switch/filter",
            &pid_filter("next_pid", tids),
        )
        .map_err(ProbeError::Tracefs)?;
    // hrtimer_expire_entry cannot be filtered by thread (it runs in the
    // interrupt, on whatever task was current); the CPU mask bounds it.
    let mut events = NEEDED.to_vec();
    if with_return {
        let (system, event) = RETURN;
        instance
            .write(
                &format!("events/{system}/{event}/filter"),
                &pid_filter("common_pid", tids),
            )
            .map_err(ProbeError::Tracefs)?;
        events.push(RETURN);
    }
    enable(instance, &events).map_err(ProbeError::Tracefs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_are_checked() {
        let t = TracedThread {
            tid: 5,
            cpu: 0,
            first_expiry_ns: 1,
            period_ns: 1,
        };
        assert!(check_threads(&[t]).is_ok());
        assert!(check_threads(&[]).is_err());
        assert!(check_threads(&[t, t]).is_err());
        assert!(check_threads(&[TracedThread { period_ns: 0, ..t }]).is_err());
        assert!(check_threads(&[TracedThread { tid: 0, ..t }]).is_err());
    }

    #[test]
    fn records_are_counted_as_they_reach_the_sink() {
        let counts = Mutex::new(RecordCounts::default());
        let got = Arc::new(Mutex::new(Vec::new()));
        let into = got.clone();
        let mut sink: Box<dyn FnMut(WakeupRecord) + Send> =
            Box::new(move |r| into.lock().unwrap().push(r));
        let whole = WakeupRecord {
            tid: 1,
            cpu: 0,
            expires_ns: 10,
            irq_ns: Some(1),
            thread_ns: Some(2),
            return_ns: None,
        };
        let no_switch = WakeupRecord {
            thread_ns: None,
            ..whole
        };
        let returned = WakeupRecord {
            return_ns: Some(3),
            ..no_switch
        };
        {
            let mut emit = WakeupConsumer::deliver(&mut sink, &counts);
            for r in [whole, no_switch, returned] {
                emit(r);
            }
        }
        assert_eq!(*got.lock().unwrap(), [whole, no_switch, returned]);
        assert_eq!(
            *counts.lock().unwrap(),
            RecordCounts {
                delivered: 3,
                incomplete: 1,
                without_sched_in: 2,
            }
        );
    }
}
