//! `--trace-spikes USEC`: cause attribution of the samples above a threshold.
//!
//! While a test runs, a private tracefs instance records the scheduler, IRQ
//! and softirq events of the measured CPUs (`rt::tracefs::events::ACTIVITY`,
//! plus the x86 system vectors where the kernel has them), and the
//! SCHED_OTHER trace reader keeps a bounded recent history per CPU
//! (`attribution::CpuHistory`). A measuring thread whose sample is above the
//! threshold pushes a `Candidate` (due time, run time, CPU) into its own
//! lock-free queue (`SpscRing`: no allocation, no lock, no system call in the
//! loop); the reader collects the candidates at each pass, and once the trace
//! has been delivered past a candidate's run time it attributes the window
//! from its CPU's history (`attribution::attribute`). The worst `MAX_KEPT`
//! spikes are kept with their events; the others are counted.

pub mod attribution;
pub mod error;
pub mod flight;
pub mod queue;
pub mod recent;

use crate::probes::choice;
use crate::probes::recorder::{self, load::Hooks};
use crate::report::{Spike, SpikeTrace};
use crate::rt::bpf::{CollectorChoice, CollectorUsed};
use crate::rt::tracefs::events::{
    ACTIVITY, EventDecoder, NMI, TraceEvent, VECTOR_EVENTS, VECTOR_SYSTEM,
};
use crate::rt::tracefs::reader::{Consumer, LostSpan, ReaderCounts};
use crate::rt::tracefs::{self, TraceOptions, TraceRun};
use attribution::{CpuHistory, Wait, Window};
pub use error::SpikeError;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The most spikes kept per test (the worst); the rest are counted.
pub const MAX_KEPT: usize = 100;
/// Candidates waiting for their trace (bounded: beyond, counted as dropped).
const MAX_PENDING: usize = 8192;
/// Spans of lost kernel events remembered, to flag the spikes they may
/// touch (beyond, a new span widens the latest one of its CPU: spikes may be
/// flagged needlessly, never missed).
const MAX_GAPS: usize = 4096;

/// A sample above the threshold, as the measuring thread hands it over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Candidate {
    /// The CPU the measuring task woke on.
    pub cpu: u32,
    /// CLOCK_MONOTONIC ns the wake-up was due / the task ran.
    pub expected_ns: u64,
    pub actual_ns: u64,
}

impl Candidate {
    /// How late it ran.
    pub fn latency_ns(&self) -> u64 {
        self.actual_ns.saturating_sub(self.expected_ns)
    }
}

pub use queue::{CandidateQueue, QUEUE_SLOTS, candidate_queue};

/// One measured series: where its candidates come from and whose time is
/// its own.
#[derive(Clone)]
pub struct Source {
    /// The series' label in the report.
    pub label: String,
    pub queue: Arc<CandidateQueue>,
    /// The measuring task first, then its peer (IPC), as kernel task ids.
    pub tids: Vec<i32>,
    /// What its samples wait for (`attribution::Wait`).
    pub wait: Wait,
}

/// The trace events recorded, for the report (`optional`: those of
/// `optional_events` this kernel has).
fn source_text(optional: &[(&str, &str)]) -> String {
    let mut names: Vec<String> = ACTIVITY.iter().map(|(s, e)| format!("{s}:{e}")).collect();
    names.extend(optional.iter().map(|(s, e)| format!("{s}:{e}")));
    let mut text = format!("trace events {}", names.join(", "));
    if !optional.contains(&NMI) {
        text.push_str(" (this kernel has no nmi:nmi_handler: time in NMIs is not named)");
    }
    text
}

/// The flight recorder's events and how they were hooked, for the report.
fn recorder_source_text(optional: &[(&str, &str)], hooks: &Hooks) -> String {
    source_text(optional).replacen(
        "trace events",
        &format!("BPF flight recorder ({}) on", hooks.describe()),
        1,
    )
}

/// The tracefs collector: a private instance on `cpus` whose reader thread
/// attributes the spikes into the returned book.
fn start_tracefs(
    tracefs: &Path,
    events: &[(&'static str, &'static str)],
    sources: Vec<Source>,
    cpus: &[usize],
    also_measured: &[usize],
    tids: &[i32],
) -> Result<(TraceRun, SharedBook), SpikeError> {
    let decoder = EventDecoder::read_events(&tracefs.join("events"), events)?;
    let book = Arc::new(Mutex::new(None));
    let collector = TracefsSpikeCollector::new(sources, book.clone());
    let run = TraceRun::start(
        tracefs,
        cpus,
        TraceOptions {
            reader_keeps_off: also_measured.to_vec(),
            ..TraceOptions::default()
        },
        decoder,
        Box::new(collector),
        |instance| {
            // Only the measured tasks' wake-ups matter; every switch and
            // interrupt of the measured CPUs does.
            instance.write(
                "events/sched/sched_wakeup/filter",
                &tracefs::pid_filter("pid", tids),
            )?;
            tracefs::enable(instance, events)
        },
    )?;
    Ok((run, book))
}

/// The events beyond `ACTIVITY` this kernel traces: the system vectors
/// (both their entry and exit) and NMIs.
pub fn optional_events(tracefs: &Path) -> Vec<(&'static str, &'static str)> {
    let mut found = Vec::new();
    if tracefs::has_event(tracefs, NMI) {
        found.push(NMI);
    }
    for (entry, exit) in VECTOR_EVENTS {
        if tracefs::has_event(tracefs, (VECTOR_SYSTEM, entry))
            && tracefs::has_event(tracefs, (VECTOR_SYSTEM, exit))
        {
            found.push((VECTOR_SYSTEM, entry));
            found.push((VECTOR_SYSTEM, exit));
        }
    }
    found
}

/// Whether `--trace-spikes` can run here with `collector`, creating
/// nothing: tracefs (`check_available`), or BPF itself with
/// `--collector bpf`.
pub fn check_before_run(
    collector: crate::rt::bpf::CollectorChoice,
) -> Result<(), choice::CheckError> {
    choice::check_before_run(collector, recorder::check, check_available)
}

/// Whether this machine can trace spikes, creating nothing.
pub fn check_available() -> Result<(), SpikeError> {
    // Not root, or tracefs not mounted yet: the base check says which.
    if let Some(tracefs) = tracefs::check_usable(&ACTIVITY)? {
        EventDecoder::read_events(&tracefs.join("events"), &ACTIVITY)?;
    }
    Ok(())
}

/// Where the events come from while a trace runs.
enum Backend {
    /// A tracefs instance and its reader thread, which attributes.
    Tracefs { run: TraceRun, book: SharedBook },
    /// The BPF flight recorder and its collector thread.
    Bpf(flight::Recorder),
}

/// A running spike trace.
pub struct SpikeTracer {
    backend: Backend,
    threshold_ns: u64,
    source: String,
    collector: CollectorUsed,
    queues: Vec<Arc<CandidateQueue>>,
}

impl SpikeTracer {
    /// Starts tracing `cpus` for the spikes of `sources` above `threshold_ns`;
    /// the trace reader keeps off `cpus` and `also_measured` (CPUs of
    /// measured tasks whose wake-ups are not traced, as a pair's sender).
    /// `choice` says which collector (`--collector`).
    pub fn start(
        sources: Vec<Source>,
        cpus: &[usize],
        also_measured: &[usize],
        threshold_ns: u64,
        choice: CollectorChoice,
    ) -> Result<SpikeTracer, SpikeError> {
        let tracefs = tracefs::tracefs_for(&ACTIVITY)?;
        let optional = optional_events(&tracefs);
        let mut events = ACTIVITY.to_vec();
        events.extend(&optional);
        let tids: Vec<i32> = sources
            .iter()
            .flat_map(|s| s.tids.iter().copied())
            .filter(|&t| t > 0)
            .collect();
        if tids.is_empty() {
            return Err(SpikeError::NoTask);
        }
        let queues = sources.iter().map(|s| s.queue.clone()).collect();
        let mut collector = match choice::plan(choice, recorder::check)? {
            choice::Plan::Bpf => CollectorUsed::bpf(),
            choice::Plan::Tracefs(used) => used,
        };
        if collector.bpf_unavailable.is_none() {
            let mut keep_off = also_measured.to_vec();
            keep_off.extend(cpus);
            let started =
                flight::Recorder::start(&tracefs, &events, sources.clone(), cpus, keep_off);
            match started {
                Ok(run) => {
                    let source = recorder_source_text(&optional, &run.hooks());
                    return Ok(SpikeTracer {
                        backend: Backend::Bpf(run),
                        threshold_ns,
                        source,
                        collector,
                        queues,
                    });
                }
                Err(why) => {
                    collector = choice::fall_back(choice, why.to_string())?;
                }
            }
        }
        let backend = {
            let (run, book) =
                start_tracefs(&tracefs, &events, sources, cpus, also_measured, &tids)?;
            Backend::Tracefs { run, book }
        };
        let source = source_text(&optional);
        Ok(SpikeTracer {
            backend,
            threshold_ns,
            source,
            collector,
            queues,
        })
    }

    /// For tests with one measuring thread per CPU (timer, noise): thread i
    /// (its candidate queue and task id) runs on `cpus[i]`, its series is
    /// labelled `CPU n`, its samples wait for `wait`. The error says what
    /// the option needs.
    pub fn start_per_cpu(
        cpus: &[usize],
        threads: impl Iterator<Item = (Arc<CandidateQueue>, i32)>,
        wait: Wait,
        threshold_ns: u64,
        choice: CollectorChoice,
    ) -> Result<SpikeTracer, SpikeError> {
        let sources = cpus
            .iter()
            .zip(threads)
            .map(|(cpu, (queue, tid))| Source {
                label: format!("CPU {cpu}"),
                queue,
                tids: vec![tid],
                wait,
            })
            .collect();
        SpikeTracer::start(sources, cpus, &[], threshold_ns, choice).map_err(|e| {
            SpikeError::Needs {
                need: "--trace-spikes needs kernel tracing",
                why: Box::new(e),
            }
        })
    }

    /// Stops tracing, attributes what is still pending, removes the
    /// instance or unloads the programs; the spikes for the report.
    pub fn stop(mut self) -> SpikeTrace {
        let queue_dropped: u64 = self.queues.iter().map(|q| q.dropped()).sum();
        let (mut windows_overwritten, mut events_refused) = (0, 0);
        let (book, events_read, events_lost, cpu_ns, on_measured) = match &mut self.backend {
            Backend::Tracefs { run, book } => {
                let end = run.shutdown();
                let book = book
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .unwrap_or_default();
                let (counts, events_lost) =
                    end.map_or((ReaderCounts::default(), 0), |e| (e.counts, e.events_lost));
                (
                    book,
                    counts.events_read,
                    events_lost,
                    counts.cpu_ns,
                    counts.on_traced_cpus,
                )
            }
            Backend::Bpf(recorder) => {
                let (book, end) = recorder.stop();
                windows_overwritten = end.overwritten;
                events_refused = end.refused;
                (
                    book,
                    end.records,
                    end.missed,
                    end.cpu_ns,
                    end.on_traced_cpus,
                )
            }
        };
        let mut spikes = book.kept;
        spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        SpikeTrace {
            threshold_ns: self.threshold_ns,
            source: std::mem::take(&mut self.source),
            collector: std::mem::take(&mut self.collector),
            max_kept: MAX_KEPT,
            spikes_seen: book.seen,
            spikes_not_kept: book.not_kept,
            spikes_dropped: queue_dropped + book.dropped,
            events_read,
            events_lost,
            windows_overwritten,
            events_refused,
            reader_cpu_ns: cpu_ns,
            reader_on_measured_cpus: on_measured,
            spikes,
        }
    }
}

/// The tracefs collector's book, handed from its reader thread at the end.
type SharedBook = Arc<Mutex<Option<SpikeBook>>>;

/// What a collector found, handed over when it finishes.
#[derive(Default)]
pub struct SpikeBook {
    kept: Vec<Spike>,
    seen: u64,
    not_kept: u64,
    dropped: u64,
}

impl SpikeBook {
    /// Counts a spike of `latency_ns`; whether it is to be attributed and
    /// kept (once `MAX_KEPT` are kept, only one worse than the least bad,
    /// which it replaces).
    pub fn admit(&mut self, latency_ns: u64) -> bool {
        self.seen += 1;
        if self.kept.len() < MAX_KEPT {
            return true;
        }
        let (least, least_ns) = self
            .kept
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.latency_ns))
            .min_by_key(|&(_, ns)| ns)
            .expect("kept is full");
        self.not_kept += 1;
        if latency_ns <= least_ns {
            return false;
        }
        self.kept.swap_remove(least);
        true
    }

    /// Whether `admit` would take a spike of `latency_ns` now (counting
    /// nothing): whose window is worth copying.
    pub fn would_admit(&self, latency_ns: u64) -> bool {
        self.kept.len() < MAX_KEPT || self.kept.iter().any(|s| s.latency_ns < latency_ns)
    }

    pub fn keep(&mut self, spike: Spike) {
        self.kept.push(spike);
    }
}

/// The reader's consumer: per-CPU histories, the pending candidates, the
/// kept spikes.
struct TracefsSpikeCollector {
    sources: Vec<Source>,
    cpus: BTreeMap<usize, CpuHistory>,
    /// (source index, candidate), waiting for the trace to pass their time.
    pending: Vec<(usize, Candidate)>,
    gaps: VecDeque<LostSpan>,
    /// The trace reader's task id (the thread this collector runs in).
    reader_tid: i32,
    book: SpikeBook,
    out: Arc<Mutex<Option<SpikeBook>>>,
}

impl TracefsSpikeCollector {
    fn new(sources: Vec<Source>, out: Arc<Mutex<Option<SpikeBook>>>) -> TracefsSpikeCollector {
        TracefsSpikeCollector {
            sources,
            cpus: BTreeMap::new(),
            pending: Vec::new(),
            gaps: VecDeque::new(),
            reader_tid: 0,
            book: SpikeBook::default(),
            out,
        }
    }

    /// Attributes every pending candidate the trace has passed (all of
    /// them with `until` = None).
    fn settle(&mut self, until: Option<u64>) {
        let mut i = 0;
        while i < self.pending.len() {
            let (source, candidate) = self.pending[i];
            if until.is_some_and(|t| candidate.actual_ns >= t) {
                i += 1;
                continue;
            }
            self.pending.swap_remove(i);
            self.attribute(source, candidate);
        }
    }

    fn attribute(&mut self, source: usize, c: Candidate) {
        if !self.book.admit(c.actual_ns.saturating_sub(c.expected_ns)) {
            return;
        }
        let src = &self.sources[source];
        let window = Window {
            cpu: c.cpu as usize,
            expected_ns: c.expected_ns,
            actual_ns: c.actual_ns,
            measured: &src.tids,
            tracer: self.reader_tid,
            wait: src.wait,
        };
        let mut spike = match self.cpus.get(&window.cpu) {
            Some(history) => attribution::attribute(history, &window),
            None => attribution::attribute_events(
                &attribution::CpuState::default(),
                std::iter::empty(),
                &window,
                true,
            ),
        };
        spike.series = src.label.clone();
        spike.tid = src.tids.first().copied().unwrap_or(0);
        self.flag_lost_events(&mut spike);
        self.book.keep(spike);
    }

    /// Flags a spike whose window (with the margin shown before it) the
    /// kernel may have lost events of, on any traced CPU: its attribution
    /// may then miss what ran.
    fn flag_lost_events(&self, spike: &mut Spike) {
        let from = spike
            .expected_ns
            .saturating_sub(attribution::MARGIN_BEFORE_NS);
        let to = spike.actual_ns.max(spike.expected_ns);
        if !spike.events_lost && self.gaps.iter().any(|g| g.overlaps(from, to)) {
            spike.events_lost = true;
            spike.summary = attribution::summary(spike);
        }
    }

    fn remember_gap(&mut self, lost: LostSpan) {
        if self.gaps.len() == MAX_GAPS {
            // Full: widen the latest span of that CPU (or the latest at all).
            let latest = self.gaps.iter_mut().rev().find(|g| g.cpu == lost.cpu);
            let widened = match latest {
                Some(g) => g,
                None => self.gaps.back_mut().expect("full"),
            };
            widened.since_ns = widened.since_ns.min(lost.since_ns);
            widened.until_ns = widened.until_ns.max(lost.until_ns);
            return;
        }
        self.gaps.push_back(lost);
    }
}

impl Consumer for TracefsSpikeCollector {
    fn started(&mut self, reader_tid: i32) {
        self.reader_tid = reader_tid;
    }

    fn poll(&mut self) {
        for (index, source) in self.sources.iter().enumerate() {
            let (pending, dropped) = (&mut self.pending, &mut self.book.dropped);
            source.queue.drain(|q| {
                if pending.len() < MAX_PENDING {
                    pending.push((index, q));
                } else {
                    *dropped += 1;
                }
            });
        }
    }

    fn event(&mut self, event: &TraceEvent, _: &mut ReaderCounts) {
        // Every event up to this time has been delivered (time order): the
        // candidates that ran before it can be attributed.
        if !self.pending.is_empty() {
            self.settle(Some(event.time));
        }
        self.cpus.entry(event.cpu).or_default().push(*event);
    }

    fn gap(&mut self, lost: LostSpan, _: &mut ReaderCounts) {
        self.remember_gap(lost);
    }

    fn finish(&mut self, _: u64, _: &mut ReaderCounts) {
        self.settle(None);
        // A loss reported after a spike was attributed (the flagged page of
        // another CPU can come later than the events that settled it).
        let mut kept = std::mem::take(&mut self.book.kept);
        for spike in &mut kept {
            self.flag_lost_events(spike);
        }
        self.book.kept = kept;
        if let Ok(mut out) = self.out.lock() {
            *out = Some(std::mem::take(&mut self.book));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::tracefs::events::Kind;

    const MS: u64 = 1_000_000;

    fn collector() -> (
        TracefsSpikeCollector,
        Arc<CandidateQueue>,
        Arc<Mutex<Option<SpikeBook>>>,
    ) {
        let queue = candidate_queue();
        let out = Arc::new(Mutex::new(None));
        let source = Source {
            label: "thread 0".into(),
            queue: queue.clone(),
            tids: vec![42],
            wait: Wait::Remote,
        };
        (
            TracefsSpikeCollector::new(vec![source], out.clone()),
            queue,
            out,
        )
    }

    fn event_at(time: u64, cpu: usize) -> TraceEvent {
        TraceEvent {
            time,
            cpu,
            pid: 0,
            kind: Kind::Wakeup {
                pid: 7,
                prio: 120,
                target_cpu: cpu as i32,
            },
        }
    }

    fn finish(mut c: TracefsSpikeCollector, out: &Arc<Mutex<Option<SpikeBook>>>) -> Vec<Spike> {
        c.finish(0, &mut ReaderCounts::default());
        out.lock().unwrap().take().unwrap().kept
    }

    #[test]
    fn would_admit_says_what_admit_would_do_without_counting() {
        let mut book = SpikeBook::default();
        for k in 1..=MAX_KEPT as u64 {
            assert!(book.would_admit(k));
            assert!(book.admit(k));
            book.keep(Spike {
                latency_ns: k * 10,
                ..Spike::default()
            });
        }
        // Full, the least bad kept 10 ns: a spike of 10 ns or less is not
        // kept but counted; one of 11 ns is.
        assert!(!book.would_admit(10) && book.would_admit(11));
        assert_eq!((book.seen, book.not_kept), (MAX_KEPT as u64, 0));
        assert!(!book.admit(10));
        assert_eq!((book.seen, book.not_kept), (MAX_KEPT as u64 + 1, 1));
    }

    #[test]
    fn lost_spans_overlap_inclusively() {
        let span = LostSpan {
            cpu: 1,
            since_ns: 10,
            until_ns: 20,
        };
        assert!(span.overlaps(20, 30));
        assert!(span.overlaps(0, 10));
        assert!(span.overlaps(12, 13));
        assert!(span.overlaps(0, 100));
        assert!(!span.overlaps(21, 30));
        assert!(!span.overlaps(0, 9));
    }

    #[test]
    fn a_spike_inside_a_lost_span_is_flagged_even_when_the_loss_is_told_later() {
        let (mut c, queue, out) = collector();
        let counts = &mut ReaderCounts::default();
        // A spike on CPU 1 from 100 to 108 ms, another from 300 to 301 ms.
        for (due, ran) in [(100 * MS, 108 * MS), (300 * MS, 301 * MS)] {
            queue.push(Candidate {
                cpu: 1,
                expected_ns: due,
                actual_ns: ran,
            });
        }
        c.poll();
        // CPU 0's events pass both spikes: they are attributed now...
        c.event(&event_at(400 * MS, 0), counts);
        assert!(c.pending.is_empty());
        assert!(c.book.kept.iter().all(|s| !s.events_lost));
        // ...and only then does CPU 1's next page say that events between
        // 50 ms (its last event read) and 200 ms were lost.
        c.gap(
            LostSpan {
                cpu: 1,
                since_ns: 50 * MS,
                until_ns: 200 * MS,
            },
            counts,
        );
        let kept = finish(c, &out);
        let lost: Vec<(u64, bool)> = kept
            .iter()
            .map(|s| (s.expected_ns, s.events_lost))
            .collect();
        assert!(lost.contains(&(100 * MS, true)), "{lost:?}");
        assert!(lost.contains(&(300 * MS, false)), "{lost:?}");
        let flagged = kept.iter().find(|s| s.expected_ns == 100 * MS).unwrap();
        assert!(
            flagged
                .summary
                .ends_with("; the kernel lost trace events meanwhile"),
            "{}",
            flagged.summary
        );
    }

    #[test]
    fn a_full_gap_book_widens_spans_instead_of_forgetting_them() {
        let (mut c, _, _) = collector();
        let counts = &mut ReaderCounts::default();
        for i in 0..MAX_GAPS as u64 {
            let cpu = (i % 2) as usize;
            c.gap(
                LostSpan {
                    cpu,
                    since_ns: i * 10,
                    until_ns: i * 10 + 5,
                },
                counts,
            );
        }
        let last_cpu0 = c.gaps.iter().rev().find(|g| g.cpu == 0).copied().unwrap();
        c.gap(
            LostSpan {
                cpu: 0,
                since_ns: 1_000_000,
                until_ns: 1_000_100,
            },
            counts,
        );
        assert_eq!(c.gaps.len(), MAX_GAPS);
        let widened = c.gaps.iter().rev().find(|g| g.cpu == 0).unwrap();
        assert_eq!(widened.since_ns, last_cpu0.since_ns);
        assert_eq!(widened.until_ns, 1_000_100);
        // The first spans are still there.
        assert_eq!(c.gaps[0].since_ns, 0);
    }
}
