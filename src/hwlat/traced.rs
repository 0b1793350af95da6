//! The tracefs tier: a private trace instance (clock `mono`, the samplers'
//! CLOCK_MONOTONIC) records every IRQ, softirq, x86 system vector, NMI and
//! context switch of the measured CPUs. Each sampler hands its gaps and the
//! stretches it sampled to the trace reader through a lock-free queue
//! (between sub-windows, off the clock pairs); the reader classifies each
//! gap once the trace has passed its end. Gap-precise:
//!
//! - a gap that an event overlaps (an interrupt context open across its
//!   start, an entry, exit, switch or NMI inside it) is the **OS**'s, named
//!   by what took its time, largest first (`irq 24 (virtio0-input)`, `irq
//!   LOC + softirq TIMER`, `softirq NET_RX`, `NMI`, `task stress-ng (pid
//!   1234)`);
//! - a gap that no event covers is **hardware** (the hypervisor in a guest);
//! - a gap the trace cannot speak for (the kernel lost events around it, or
//!   its events were no longer kept) is `unclassified`, and its stretch does
//!   not count as classified.
//!
//! The accounting is the spike attribution's (`spikes::attribution`, with
//! the sampler as the measured task and `Wait::Gap`): every nanosecond of a
//! gap goes to the innermost context running, the sampler's own time in it
//! is time no event explains.

use super::classify::{GapClass, Tally, WindowSample, note_sample};
use super::gap_log::GapLog;
use super::protocol::{Gap, Interference};
use crate::report::Cause;
use crate::rt::tracefs::events::{EventDecoder, Kind, TraceEvent};
use crate::rt::tracefs::reader::{Consumer, LostSpan, ReaderCounts};
use crate::rt::tracefs::{self, TraceOptions, TraceRun};
use crate::spikes::attribution::{self, CpuHistory, HARDWARE_KIND, NMI_KIND, TRACER_KIND};
use crate::spikes::attribution::{Wait, Window};
use crate::stats::live::SpscRing;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

/// Items one sampler can queue between two passes of the reader (10 ms
/// apart: 20 sub-windows and their gaps); beyond, they are counted as lost.
const FEED_SLOTS: usize = 16_384;
/// Spans of lost kernel events remembered per CPU (beyond, the latest is
/// widened: a gap may be called unclassified needlessly, never wrongly).
const MAX_LOST_SPANS: usize = 256;
/// The cause of a gap the trace cannot speak for.
pub const UNCLASSIFIED: &str = "unclassified (trace events lost)";

/// What a sampler hands the reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Fed {
    #[default]
    Nothing,
    /// A gap above the threshold.
    Gap {
        at_ns: u64,
        inner_ns: u64,
        outer_ns: u64,
        window: u64,
    },
    /// `[start, end]` of duty window `window` was sampled; its gaps came before.
    Sampled { start: u64, end: u64, window: u64 },
}

impl Fed {
    /// The time after which the trace says everything about this item.
    fn end(&self) -> u64 {
        match *self {
            Fed::Nothing => 0,
            Fed::Gap {
                at_ns,
                inner_ns,
                outer_ns,
                ..
            } => at_ns + inner_ns + outer_ns,
            Fed::Sampled { end, .. } => end,
        }
    }
}

/// The sampler's end of its CPU's queue.
#[derive(Clone)]
pub struct Feed {
    queue: Arc<SpscRing<Fed>>,
    sampler: Arc<AtomicI32>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("sampler", &self.sampler.load(Ordering::Relaxed))
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Feed {
    /// The sampler's task id: its own time in a gap is no event's.
    pub fn started(&self, tid: i32) {
        self.sampler.store(tid, Ordering::Release);
    }

    /// Hands over one stretch of window `window` and its gaps.
    pub fn sampled(&self, gaps: &[Gap], start: u64, end: u64, window: u64) {
        for g in gaps {
            self.queue.push(Fed::Gap {
                at_ns: g.at_ns,
                inner_ns: g.inner_ns,
                outer_ns: g.outer_ns,
                window,
            });
        }
        self.queue.push(Fed::Sampled { start, end, window });
    }

    /// Items the reader was too slow to take (their gaps are not classified).
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }
}

/// NMIs of one CPU over the run (`nmi:nmi_handler`: one per handler run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NmiTally {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// What the tracefs tier found on one CPU.
#[derive(Debug, Clone, Default)]
pub struct TracedCpu {
    pub tally: Tally,
    /// One per window with hardware gaps (hwlatdetect's samples).
    pub samples: Vec<WindowSample>,
    /// Time sampled whose gaps the trace could speak for.
    pub classified_ns: u64,
    /// Gaps the trace could not speak for (also in `tally` as OS, `UNCLASSIFIED`).
    pub unclassified: u64,
    pub nmis: NmiTally,
    pub log: Option<GapLog>,
}

/// The events of this tier (`probes::interference::tier`, whose check
/// the doctor makes too).
pub use crate::probes::interference::tier::base_events;

/// Whether the tier can run here, creating nothing.
pub fn check() -> Result<(), String> {
    crate::probes::interference::tier::TierFacts::live()
        .tracefs_ok()
        .map_err(|why| why.0)
}

/// A running trace of the measured CPUs and its classifier.
pub struct GapTrace {
    run: TraceRun,
    feeds: Vec<(usize, Feed)>,
    book: Arc<Mutex<Option<BTreeMap<usize, TracedCpu>>>>,
}

impl GapTrace {
    /// Starts tracing `cpus` (before their samplers spin). `keep_gaps`:
    /// log every gap (`--gaps`).
    pub fn start(
        cpus: &[usize],
        realtime_offset_ns: i64,
        keep_gaps: bool,
    ) -> Result<GapTrace, String> {
        let mut events = base_events();
        let tracefs = tracefs::tracefs_for(&events)?;
        events.extend(crate::spikes::optional_events(&tracefs));
        let decoder = EventDecoder::read_events(&tracefs.join("events"), &events)?;
        let feeds: Vec<(usize, Feed)> = cpus
            .iter()
            .map(|&cpu| {
                let feed = Feed {
                    queue: Arc::new(SpscRing::with_capacity(FEED_SLOTS)),
                    sampler: Arc::new(AtomicI32::new(0)),
                };
                (cpu, feed)
            })
            .collect();
        let book = Arc::new(Mutex::new(None));
        let classifier = GapClassifier::new(&feeds, realtime_offset_ns, keep_gaps, book.clone());
        let run = start_run(&tracefs, cpus, decoder, classifier, &events)?;
        Ok(GapTrace { run, feeds, book })
    }

    /// The feed of `cpu`'s sampler.
    pub fn feed(&self, cpu: usize) -> Option<Feed> {
        self.feeds
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, f)| f.clone())
    }

    /// Stops tracing, classifies what is pending and removes the instance.
    pub fn finish(mut self) -> BTreeMap<usize, TracedCpu> {
        self.run.shutdown();
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    }
}

fn start_run(
    tracefs: &Path,
    cpus: &[usize],
    decoder: EventDecoder,
    classifier: GapClassifier,
    events: &[(&str, &str)],
) -> Result<TraceRun, String> {
    TraceRun::start(
        tracefs,
        cpus,
        TraceOptions::default(),
        decoder,
        Box::new(classifier),
        |instance| tracefs::enable(instance, events),
    )
}

/// One CPU's side of the classifier.
struct CpuBook {
    cpu: usize,
    feed: Feed,
    history: CpuHistory,
    /// Fed items waiting for the trace to pass them, in the sampler's order.
    pending: VecDeque<Fed>,
    lost: Vec<LostSpan>,
    /// The window being summed into a hwlatdetect sample.
    window: Option<(u64, Option<WindowSample>)>,
    /// A gap of the stretch being settled could not be classified.
    stretch_unclassified: bool,
    found: TracedCpu,
}

/// The reader's consumer.
pub(crate) struct GapClassifier {
    cpus: Vec<CpuBook>,
    reader_tid: i32,
    realtime_offset_ns: i64,
    out: Arc<Mutex<Option<BTreeMap<usize, TracedCpu>>>>,
}

impl GapClassifier {
    fn new(
        feeds: &[(usize, Feed)],
        realtime_offset_ns: i64,
        keep_gaps: bool,
        out: Arc<Mutex<Option<BTreeMap<usize, TracedCpu>>>>,
    ) -> GapClassifier {
        GapClassifier {
            cpus: feeds
                .iter()
                .map(|(cpu, feed)| CpuBook {
                    cpu: *cpu,
                    feed: feed.clone(),
                    history: CpuHistory::default(),
                    pending: VecDeque::new(),
                    lost: Vec::new(),
                    window: None,
                    stretch_unclassified: false,
                    found: TracedCpu {
                        log: keep_gaps.then(GapLog::default),
                        ..TracedCpu::default()
                    },
                })
                .collect(),
            reader_tid: 0,
            realtime_offset_ns,
            out,
        }
    }

    /// Classifies every fed item the trace has passed (all with None).
    fn settle(&mut self, until: Option<u64>) {
        for book in &mut self.cpus {
            while let Some(item) = book.pending.front().copied() {
                if until.is_some_and(|t| item.end() >= t) {
                    break;
                }
                book.pending.pop_front();
                book.settle(item, self.reader_tid, self.realtime_offset_ns);
            }
        }
    }
}

impl CpuBook {
    fn settle(&mut self, item: Fed, reader_tid: i32, realtime_offset_ns: i64) {
        match item {
            Fed::Nothing => {}
            Fed::Gap {
                at_ns,
                inner_ns,
                outer_ns,
                window,
            } => {
                let gap = Gap {
                    at_ns,
                    inner_ns,
                    outer_ns,
                    interference: Interference::Unknown,
                };
                self.next_window(window);
                let class = self.class_of(&gap, reader_tid);
                if class == GapClass::Os(UNCLASSIFIED.to_string()) {
                    self.found.unclassified += 1;
                    self.stretch_unclassified = true;
                }
                if let Some(log) = &mut self.found.log {
                    log.note(window, &gap, &class);
                }
                if self.found.tally.add(window, &gap, class)
                    && let Some((_, sample)) = &mut self.window
                {
                    note_sample(sample, &gap, realtime_offset_ns);
                }
                // Later gaps start after this one: the events before it
                // are state now.
                self.history.forget_before(gap.at_ns);
            }
            Fed::Sampled { start, end, window } => {
                // Its gaps came before it: the stretch is classified when
                // they all were and no loss touched it.
                let lost = self.lost.iter().any(|l| l.overlaps(start, end));
                if !lost && !std::mem::take(&mut self.stretch_unclassified) {
                    self.found.classified_ns += end.saturating_sub(start);
                }
                self.next_window(window);
                self.history.forget_before(end);
            }
        }
    }

    /// Closes the sample of the window before `window`.
    fn next_window(&mut self, window: u64) {
        if self.window.as_ref().is_some_and(|(w, _)| *w != window) {
            self.close_window();
        }
        self.window.get_or_insert((window, None));
    }

    fn close_window(&mut self) {
        if let Some((_, Some(sample))) = self.window.take() {
            self.found.samples.push(sample);
        }
    }

    /// Whether the trace holds every event of `[from, to]` on this CPU.
    fn speaks_for(&self, from: u64, to: u64) -> bool {
        self.history.covers(from) && !self.lost.iter().any(|l| l.overlaps(from, to))
    }

    fn class_of(&self, gap: &Gap, reader_tid: i32) -> GapClass {
        let end = gap.at_ns + gap.inner_ns + gap.outer_ns;
        if !self.speaks_for(gap.at_ns, end) {
            return GapClass::Os(UNCLASSIFIED.to_string());
        }
        let sampler = [self.feed.sampler.load(Ordering::Acquire)];
        let window = Window {
            cpu: self.cpu,
            expected_ns: gap.at_ns,
            actual_ns: end,
            measured: &sampler,
            tracer: reader_tid,
            wait: Wait::Gap,
        };
        let spike = attribution::attribute(&self.history, &window);
        class_of_causes(&spike.causes)
    }

    fn note_lost(&mut self, lost: LostSpan) {
        if self.lost.len() < MAX_LOST_SPANS {
            self.lost.push(lost);
        } else if let Some(latest) = self.lost.last_mut() {
            latest.since_ns = latest.since_ns.min(lost.since_ns);
            latest.until_ns = latest.until_ns.max(lost.until_ns);
        }
    }
}

/// The class of a gap from the time its events took (largest first): the
/// OS when any of them is not the sampler's own time, named by every such
/// cause, largest first (`task burst (pid 77) + irq LOC`, as the
/// unprivileged tier names every row that moved); else hardware.
pub fn class_of_causes(causes: &[Cause]) -> GapClass {
    let named: Vec<String> = causes
        .iter()
        .filter(|c| c.kind != HARDWARE_KIND && c.ns > 0)
        .map(cause_name)
        .collect();
    if named.is_empty() {
        GapClass::Hardware
    } else {
        GapClass::Os(named.join(" + "))
    }
}

/// A cause in the words of the other tiers: the IRQ rows of
/// /proc/interrupts for the x86 system vectors (`irq LOC`), `irq 24
/// (virtio0-input)`, `softirq NET_RX`, `NMI`, `task comm (pid N)`.
pub fn cause_name(c: &Cause) -> String {
    match c.kind.as_str() {
        "irq" => match c.name.split_once(' ') {
            Some((number, name)) if number.bytes().all(|b| b.is_ascii_digit()) => {
                format!("irq {number} ({name})")
            }
            _ => format!("irq {}", vector_row(&c.name)),
        },
        NMI_KIND => "NMI".to_string(),
        TRACER_KIND => format!("task {} (latscope's trace reader)", c.name),
        kind => format!("{kind} {}", c.name),
    }
}

/// The /proc/interrupts row that counts an x86 system vector.
fn vector_row(vector: &str) -> &str {
    match vector {
        "local_timer" => "LOC",
        "reschedule" => "RES",
        "call_function" | "call_function_single" => "CAL",
        "irq_work" => "IWI",
        other => other,
    }
}

impl Consumer for GapClassifier {
    fn started(&mut self, reader_tid: i32) {
        self.reader_tid = reader_tid;
    }

    fn poll(&mut self) {
        for book in &mut self.cpus {
            let pending = &mut book.pending;
            book.feed.queue.drain(|item| pending.push_back(item));
        }
    }

    fn event(&mut self, event: &TraceEvent, _: &mut ReaderCounts) {
        if let Some(book) = self.cpus.iter_mut().find(|b| b.cpu == event.cpu) {
            if let Kind::Nmi { delta_ns, .. } = event.kind {
                let n = &mut book.found.nmis;
                n.count += 1;
                n.total_ns += delta_ns;
                n.max_ns = n.max_ns.max(delta_ns);
            }
            book.history.push(*event);
        }
        // Every event up to this time has been delivered (time order).
        self.settle(Some(event.time));
    }

    fn gap(&mut self, lost: LostSpan, _: &mut ReaderCounts) {
        if let Some(book) = self.cpus.iter_mut().find(|b| b.cpu == lost.cpu) {
            book.note_lost(lost);
        }
    }

    fn finish(&mut self, _: u64, _: &mut ReaderCounts) {
        self.poll();
        self.settle(None);
        let mut found = BTreeMap::new();
        for book in &mut self.cpus {
            book.close_window();
            found.insert(book.cpu, std::mem::take(&mut book.found));
        }
        if let Ok(mut out) = self.out.lock() {
            *out = Some(found);
        }
    }
}

#[cfg(test)]
#[path = "tests_traced.rs"]
mod tests;
