//! One CPU's sampler thread: SCHED_FIFO, pinned, it spins `width` of every
//! `window` reading clock pairs (protocol.rs) in sub-windows. Between
//! sub-windows (off the clock: that time is never a gap) it either reads
//! the CPU's interference evidence and classifies the sub-window's gaps
//! (classify.rs: the unprivileged tier), or hands them to the trace reader
//! (traced.rs: the tracefs tier, which classifies each gap by the events
//! that overlap it; there the pairs run on across sub-windows, so that no
//! time between two of them goes unseen), or names each gap from the
//! per-CPU counter it read around every pair (`bpf_counter.rs`, a
//! `Classifier`: the bpf tier).

use super::bpf_counter::BpfClassifier;
use super::classify::{Classifier, GAPS_PER_SUB_WINDOW};
use super::classify::{GapClass, Moved, Tally, WindowSample, classify, note_sample};
use super::gap_log::GapLog;
use super::proc_counts::{Column, Table, thread_switches};
use super::protocol::{Clock, Gap, Interference, InterferenceCounter, NoCounter, TickClock};
use super::protocol::{Reading, gap_of, read_pair};
use super::traced::Feed;
use crate::probes::interference::load::LoadedInterference;
#[cfg(target_arch = "x86_64")]
use crate::rt::ticks::Tsc;
use crate::rt::ticks::{Counter as TickCounter, Monotonic};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Window samples kept for the hwlatdetect lines (one per window with a
/// hardware gap: a week of 1 s windows).
pub const MAX_SAMPLES: usize = 700_000;

/// What one sampler is asked to do.
#[derive(Debug, Clone)]
pub struct SamplerPlan {
    pub cpu: usize,
    pub priority: i32,
    pub threshold_ns: u64,
    pub width_ns: u64,
    pub window_ns: u64,
    pub sub_window_ns: u64,
    /// Monotonic time of this CPU's first window (staggered per CPU).
    pub first_window_ns: u64,
    /// Monotonic end of the run (None: until stopped).
    pub end_ns: Option<u64>,
    /// CLOCK_REALTIME - CLOCK_MONOTONIC, for the samples' time stamps.
    pub realtime_offset_ns: i64,
    /// The tracefs tier: where the gaps go to be classified (None: the
    /// unprivileged tier classifies them here).
    pub feed: Option<Feed>,
    /// The bpf tier's counter (None: another tier).
    pub counter: Option<Arc<LoadedInterference>>,
    /// The clock the pairs read (`noise`'s: the TSC, else CLOCK_MONOTONIC).
    pub ticks: TickCounter,
    /// Log every gap (`--gaps`).
    pub keep_gaps: bool,
}

/// One CPU's result.
#[derive(Debug, Clone, Default)]
pub struct CpuOutcome {
    pub cpu: usize,
    pub tid: i32,
    pub windows: u64,
    pub sub_windows: u64,
    /// Sub-windows in which nothing moved.
    pub quiet_sub_windows: u64,
    /// Time spun (the widths), and the part inside sub-windows whose gaps
    /// could be classified.
    pub spun_ns: u64,
    pub classified_ns: u64,
    pub loops: u64,
    pub gaps_dropped: u64,
    pub tally: Tally,
    pub samples: Vec<WindowSample>,
    /// NMIs counted on the CPU over the run (/proc/interrupts' NMI row, or
    /// the tracefs tier's `nmi:nmi_handler` events, or the bpf tier's count
    /// of NMI handler runs).
    pub nmis: u64,
    /// The NMIs' total handler time (tracefs and bpf tiers) and longest
    /// (tracefs tier only).
    pub nmi_ns: Option<u64>,
    pub nmi_max_ns: Option<u64>,
    /// Every gap with its class (`--gaps`).
    pub gap_log: Option<GapLog>,
    pub error: Option<String>,
}

/// The CPU's evidence tables and their values before the current sub-window.
struct Evidence {
    cpu: usize,
    irq_table: Table,
    soft_table: Table,
    irqs: Column,
    softirqs: Column,
    irq_before: Vec<u64>,
    soft_before: Vec<u64>,
    switches_before: u64,
    /// The rows changed during the last read: the sub-window is not classified.
    changed: bool,
}

impl Evidence {
    fn open(cpu: usize) -> Result<Evidence, String> {
        let open = |path: &str| Table::open(path).map_err(|e| format!("{path}: {e}"));
        let (mut irq_table, mut soft_table) = (open("/proc/interrupts")?, open("/proc/softirqs")?);
        let column = |table: &mut Table, path: &str| {
            let text = table.read().map_err(|e| format!("{path}: {e}"))?;
            Column::parse(text, cpu).ok_or_else(|| format!("{path} has no column for CPU {cpu}"))
        };
        let irqs = column(&mut irq_table, "/proc/interrupts")?;
        let softirqs = column(&mut soft_table, "/proc/softirqs")?;
        Ok(Evidence {
            cpu,
            irq_before: irqs.values.clone(),
            soft_before: softirqs.values.clone(),
            irq_table,
            soft_table,
            irqs,
            softirqs,
            switches_before: thread_switches(),
            changed: false,
        })
    }

    /// Reads the tables now, as the end of one sub-window and the start of
    /// the next. Returns what moved since the last call (None: the tables'
    /// rows changed, nothing can be said of this sub-window).
    fn step(&mut self, want_names: bool) -> Option<Moved> {
        let switches = thread_switches();
        let cpu = self.cpu;
        let irq_ok = refresh(&mut self.irq_table, &mut self.irqs, cpu);
        let soft_ok = refresh(&mut self.soft_table, &mut self.softirqs, cpu);
        let moved = (irq_ok && soft_ok && !self.changed).then(|| {
            let irq_moved = self.irqs.moved_since(&self.irq_before);
            let soft_moved = self.softirqs.moved_since(&self.soft_before);
            if want_names {
                Moved {
                    irqs: irq_moved.map(|(i, _)| self.irqs.names[i].clone()).collect(),
                    softirqs: soft_moved
                        .map(|(i, _)| self.softirqs.names[i].clone())
                        .collect(),
                    switches: switches - self.switches_before,
                }
            } else {
                // Only whether anything moved: no allocation.
                let any = irq_moved.count() + soft_moved.count() > 0;
                Moved {
                    switches: switches - self.switches_before + u64::from(any),
                    ..Moved::default()
                }
            }
        });
        self.changed = !(irq_ok && soft_ok);
        self.irq_before.clone_from(&self.irqs.values);
        self.soft_before.clone_from(&self.softirqs.values);
        self.switches_before = switches;
        moved
    }

    fn nmi_count(&self) -> Option<u64> {
        let i = self.irqs.names.iter().position(|n| n == "NMI")?;
        self.irqs.values.get(i).copied()
    }
}

/// Reads `table` into `column` in place, or parses it again when its rows
/// changed (returns false then).
fn refresh(table: &mut Table, column: &mut Column, cpu: usize) -> bool {
    let Ok(text) = table.read() else {
        return false;
    };
    if column.update(text, cpu) {
        return true;
    }
    if let Some(fresh) = Column::parse(text, cpu) {
        *column = fresh;
    }
    false
}

/// Where a sub-window's gaps are classified.
enum Judge {
    /// The unprivileged tier: the CPU's /proc counts, read between sub-windows.
    Proc(Box<Evidence>),
    /// The tracefs tier: the trace reader classifies them.
    Trace(Feed),
    /// The bpf tier: each gap by the counter read around its pairs.
    Bpf(Box<BpfClassifier>),
}

/// Runs one sampler on the calling thread (already pinned and real-time).
pub fn run(plan: &SamplerPlan, stop: &Arc<AtomicBool>) -> CpuOutcome {
    let mut out = CpuOutcome {
        cpu: plan.cpu,
        tid: crate::rt::sched::current_tid(),
        gap_log: plan.keep_gaps.then(GapLog::default),
        ..CpuOutcome::default()
    };
    let judged = match (&plan.feed, &plan.counter) {
        (Some(feed), _) => {
            feed.started(out.tid);
            Ok(Judge::Trace(feed.clone()))
        }
        (None, Some(loaded)) => {
            BpfClassifier::new(loaded, plan.cpu, out.tid).map(|c| Judge::Bpf(Box::new(c)))
        }
        (None, None) => Evidence::open(plan.cpu).map(|e| Judge::Proc(Box::new(e))),
    };
    let mut judge = match judged {
        Ok(judge) => judge,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let nmis_at_start = match &judge {
        Judge::Proc(e) => e.nmi_count(),
        Judge::Trace(_) | Judge::Bpf(_) => None,
    };
    let mut gaps: Vec<Gap> = Vec::with_capacity(GAPS_PER_SUB_WINDOW);
    let mut classes: Vec<GapClass> = Vec::with_capacity(GAPS_PER_SUB_WINDOW);
    out.samples.reserve(1024);
    let mut window_start = plan.first_window_ns;
    loop {
        if plan.end_ns.is_some_and(|end| window_start >= end) {
            break;
        }
        if !crate::rt::clock::sleep_until_or_stop(stop, window_start, 50_000_000) {
            break;
        }
        let window_end = plan.end_ns.map_or(window_start + plan.width_ns, |e| {
            e.min(window_start + plan.width_ns)
        });
        let buffers = (&mut gaps, &mut classes);
        sample_window(plan, stop, &mut judge, buffers, window_end, &mut out);
        out.windows += 1;
        window_start += plan.window_ns;
    }
    match &judge {
        Judge::Proc(e) => {
            out.nmis = e
                .nmi_count()
                .zip(nmis_at_start)
                .map_or(0, |(end, start)| end.saturating_sub(start));
        }
        Judge::Bpf(c) => (out.nmis, out.nmi_ns) = c.nmis(),
        Judge::Trace(_) => {}
    }
    out
}

/// One duty window: sub-windows until `window_end`, every gap classified
/// (here, or by the trace reader).
fn sample_window(
    plan: &SamplerPlan,
    stop: &AtomicBool,
    judge: &mut Judge,
    (gaps, classes): (&mut Vec<Gap>, &mut Vec<GapClass>),
    window_end: u64,
    out: &mut CpuOutcome,
) {
    let clock = crate::rt::clock::monotonic_ns;
    let started = clock();
    let window = out.windows;
    let mut sample: Option<WindowSample> = None;
    // The pair the next stretch goes on from (the tracefs tier only).
    let mut resume: Option<Reading> = None;
    match judge {
        // The evidence before the first sub-window of this window.
        Judge::Proc(evidence) => _ = evidence.step(false),
        Judge::Bpf(classifier) => classifier.open_window(),
        Judge::Trace(_) => {}
    }
    while !stop.load(Ordering::Relaxed) {
        let now = clock();
        if now >= window_end {
            break;
        }
        let until = window_end.min(now + plan.sub_window_ns);
        gaps.clear();
        let threshold = plan.threshold_ns;
        let ticks = plan.ticks;
        let stretch = match judge {
            Judge::Bpf(c) => spin_anchored(ticks, c.counter(), None, until, threshold, gaps),
            _ => spin_anchored(ticks, &mut NoCounter, resume, until, threshold, gaps),
        };
        out.sub_windows += 1;
        out.loops += stretch.loops;
        out.gaps_dropped += stretch.dropped;
        match judge {
            Judge::Proc(evidence) => {
                let moved = evidence.step(!gaps.is_empty());
                classify_here(
                    gaps,
                    moved.as_ref(),
                    &stretch,
                    window,
                    &mut sample,
                    plan,
                    out,
                );
            }
            Judge::Trace(feed) => {
                feed.sampled(gaps, stretch.start, stretch.end, window);
                resume = Some(stretch.last);
            }
            Judge::Bpf(classifier) => {
                classes.clear();
                let sub_window = classifier.close_sub_window(gaps, classes);
                out.quiet_sub_windows += u64::from(sub_window.quiet);
                if sub_window.classified {
                    out.classified_ns += stretch.end - stretch.start;
                }
                for (gap, class) in gaps.iter().zip(classes.drain(..)) {
                    tally_gap(gap, class, window, &mut sample, plan, out);
                }
            }
        }
    }
    out.spun_ns += clock().saturating_sub(started);
    if let Some(s) = sample
        && out.samples.len() < MAX_SAMPLES
    {
        out.samples.push(s);
    }
}

/// The unprivileged tier's classification of one sub-window's gaps by what
/// `moved` across it (None: the tables changed, nothing can be said).
fn classify_here(
    gaps: &[Gap],
    moved: Option<&Moved>,
    stretch: &Stretch,
    window: u64,
    sample: &mut Option<WindowSample>,
    plan: &SamplerPlan,
    out: &mut CpuOutcome,
) {
    match moved {
        Some(m) if m.is_quiet() => out.quiet_sub_windows += 1,
        _ => {}
    }
    if moved.is_some() {
        out.classified_ns += stretch.end - stretch.start;
    }
    for gap in gaps {
        tally_gap(gap, classify(gap, moved), window, sample, plan, out);
    }
}

/// Counts one classified gap (and logs it with `--gaps`).
fn tally_gap(
    gap: &Gap,
    class: GapClass,
    window: u64,
    sample: &mut Option<WindowSample>,
    plan: &SamplerPlan,
    out: &mut CpuOutcome,
) {
    if let Some(log) = &mut out.gap_log {
        log.note(window, gap, &class);
    }
    if out.tally.add(window, gap, class) {
        note_sample(sample, gap, plan.realtime_offset_ns);
    }
}

/// Adds `gap` to `gaps`; an interfered one has the counter note what moved
/// it from `from` to `to` (the bpf tier copies the causes now, before newer
/// events overwrite them).
#[inline(always)]
fn keep<C: InterferenceCounter>(
    counter: &mut C,
    gaps: &mut Vec<Gap>,
    gap: Gap,
    from: Option<u64>,
    to: Option<u64>,
) {
    if let (Interference::Some, Some(from), Some(to)) = (gap.interference, from, to) {
        counter.capture(gaps.len(), from, to);
    }
    gaps.push(gap);
}

/// One stretch of clock pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch {
    /// The time covered (monotonic ns): from the first t1 (or the resumed
    /// pair's t2) to the last t2.
    pub start: u64,
    pub end: u64,
    /// Pairs read, and gaps that did not fit the buffer.
    pub loops: u64,
    pub dropped: u64,
    /// The last pair (in ticks), for a stretch that goes on from it.
    pub last: Reading,
}

/// `spin` on the clock `ticks` reads, anchored to CLOCK_MONOTONIC now: an
/// anchor per sub-window keeps the calibrated scale's drift far below a
/// nanosecond at 0.5 ms, some 100 ns at the bpf tier's 100 ms. The pairs
/// go on from `resume` in ticks whatever the anchor.
pub fn spin_anchored<C: InterferenceCounter>(
    ticks: TickCounter,
    counter: &mut C,
    resume: Option<Reading>,
    until: u64,
    threshold_ns: u64,
    gaps: &mut Vec<Gap>,
) -> Stretch {
    let timebase = ticks.anchor();
    match ticks {
        #[cfg(target_arch = "x86_64")]
        TickCounter::Tsc(_) => {
            let mut clock = TickClock::<Tsc>::new(timebase);
            spin(counter, &mut clock, resume, until, threshold_ns, gaps)
        }
        _ => {
            let mut clock = TickClock::<Monotonic>::new(timebase);
            spin(counter, &mut clock, resume, until, threshold_ns, gaps)
        }
    }
}

/// Spins reading pairs until the clock passes `until` (monotonic ns),
/// going on from `resume` when given (its outer gap to the first pair is
/// measured); gaps above the threshold go to `gaps`. The loop compares
/// ticks; only a gap is converted to ns.
pub fn spin<C: InterferenceCounter, K: Clock>(
    counter: &mut C,
    clock: &mut K,
    resume: Option<Reading>,
    until_ns: u64,
    threshold_ns: u64,
    gaps: &mut Vec<Gap>,
) -> Stretch {
    let timebase = clock.timebase();
    let until = timebase.ticks_at(until_ns);
    let threshold = timebase.scale.ticks(threshold_ns);
    let tb = &timebase;
    let first = read_pair(counter, clock);
    let (mut loops, mut dropped) = (1u64, 0u64);
    if let Some(g) = gap_of(resume.as_ref(), &first, threshold, tb) {
        let from = resume.map_or(first.before, |r| r.after);
        keep(counter, gaps, g, from, first.after);
    }
    let mut previous: Reading = first;
    while previous.t2 < until {
        let reading = read_pair(counter, clock);
        loops += 1;
        if let Some(g) = gap_of(Some(&previous), &reading, threshold, tb) {
            if gaps.len() < gaps.capacity() {
                keep(counter, gaps, g, previous.after, reading.after);
            } else {
                dropped += 1;
            }
        }
        previous = reading;
    }
    Stretch {
        start: tb.ns_at(resume.map_or(first.t1, |r| r.t2)),
        end: tb.ns_at(previous.t2),
        loops,
        dropped,
        last: previous,
    }
}

#[cfg(test)]
mod tests {
    use super::super::protocol::Interference;
    use super::super::protocol::fake::{ScriptClock, ScriptCounter};
    use super::*;

    #[test]
    fn spinning_keeps_the_gaps_above_the_threshold_with_the_counters_word() {
        // Pairs at 0/10, 20/30, 5030/5040 (quiet outer 5000), 5050/5060,
        // 9060/9070 (outer 4000 with the counter moved), then past `until`.
        let times = vec![0, 10, 20, 30, 5030, 5040, 5050, 5060, 9060, 9070];
        let mut clock = ScriptClock(times, 0);
        let counts = vec![1, 1, 1, 1, 1, 1, 1, 1, 2, 2];
        let mut counter = ScriptCounter(counts, 0);
        let mut gaps = Vec::with_capacity(8);
        let s = spin(&mut counter, &mut clock, None, 9000, 1000, &mut gaps);
        assert_eq!((s.start, s.end, s.loops, s.dropped), (0, 9070, 5, 0));
        assert_eq!(gaps.len(), 2);
        assert_eq!((gaps[0].at_ns, gaps[0].outer_ns), (30, 5000));
        assert_eq!(gaps[0].interference, Interference::None);
        assert_eq!((gaps[1].at_ns, gaps[1].outer_ns), (5060, 4000));
        assert_eq!(gaps[1].interference, Interference::Some);
    }

    #[test]
    fn a_stretch_that_goes_on_measures_the_time_since_the_last_pair() {
        // The previous stretch ended at t2 = 100; the next pair comes 4900
        // ns later: one outer gap, and the stretch covers it.
        let resume = Reading {
            t1: 90,
            t2: 100,
            before: None,
            after: None,
            retries: 0,
        };
        let mut clock = ScriptClock(vec![5000, 5010], 0);
        let mut gaps = Vec::with_capacity(8);
        let s = spin(
            &mut NoCounter,
            &mut clock,
            Some(resume),
            5000,
            1000,
            &mut gaps,
        );
        assert_eq!((s.start, s.end, s.loops), (100, 5010, 1));
        assert_eq!(gaps.len(), 1);
        assert_eq!(
            (gaps[0].at_ns, gaps[0].outer_ns, gaps[0].inner_ns),
            (100, 4900, 10)
        );
        assert_eq!(s.last.t2, 5010);
    }

    #[test]
    fn gaps_beyond_the_buffer_are_counted_as_dropped() {
        let times: Vec<u64> = (0..40).map(|i| i * 1000).collect();
        let mut clock = ScriptClock(times, 0);
        let mut gaps = Vec::with_capacity(2);
        let s = spin(&mut NoCounter, &mut clock, None, 30_000, 500, &mut gaps);
        assert_eq!(gaps.len(), 2);
        assert!(s.dropped > 0);
    }

    #[test]
    fn a_windows_sample_keeps_the_longest_inner_and_outer_and_the_count() {
        let mut s = None;
        let g = |at_ns, inner_ns, outer_ns| Gap {
            at_ns,
            inner_ns,
            outer_ns,
            interference: Interference::None,
        };
        note_sample(&mut s, &g(100, 12_000, 0), 1_000);
        note_sample(&mut s, &g(200, 0, 30_000), 1_000);
        assert_eq!(
            s,
            Some(WindowSample {
                realtime_ns: 1_100,
                inner_ns: 12_000,
                outer_ns: 30_000,
                count: 2,
                sum_ns: 42_000
            })
        );
    }
}
