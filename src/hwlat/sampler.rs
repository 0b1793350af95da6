//! One CPU's sampler thread: SCHED_FIFO, pinned, it spins `width` of every
//! `window` reading clock pairs (protocol.rs) in sub-windows, and
//! classifies every gap between sub-windows (off the clock: that work's own
//! time is never a gap) with its tier's `Classifier`: the unprivileged
//! tier's /proc tables (`ProcClassifier`, classify.rs), or the bpf tier's
//! per-CPU counter (`bpf_counter.rs`).

use super::classify::{Classifier, GAPS_PER_SUB_WINDOW, SubWindow};
use super::classify::{GapClass, Moved, Tally, WindowSample, classify};
use super::proc_counts::{Column, Table, thread_switches};
use super::protocol::{Clock, Gap, Interference, InterferenceCounter, Monotonic, NoCounter};
use super::protocol::{Reading, gap_of, read_pair};
use crate::probes::interference::load::LoadedInterference;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Window samples kept for the hwlatdetect lines (one per window with a
/// hardware gap: a week of 1 s windows).
const MAX_SAMPLES: usize = 700_000;

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
    /// The bpf tier's counter (None: the unprivileged tier).
    pub counter: Option<Arc<LoadedInterference>>,
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
    /// the bpf tier's count of NMI handler runs).
    pub nmis: u64,
    /// The NMI handlers' time over the run, ns (the bpf tier only).
    pub nmi_ns: Option<u64>,
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

/// The unprivileged tier: the CPU's /proc tables per sub-window.
pub struct ProcClassifier {
    evidence: Evidence,
    counter: NoCounter,
    nmis_at_start: Option<u64>,
}

impl ProcClassifier {
    pub fn open(cpu: usize) -> Result<ProcClassifier, String> {
        let evidence = Evidence::open(cpu)?;
        Ok(ProcClassifier {
            nmis_at_start: evidence.nmi_count(),
            evidence,
            counter: NoCounter,
        })
    }
}

impl Classifier for ProcClassifier {
    type Counter = NoCounter;

    fn counter(&mut self) -> &mut NoCounter {
        &mut self.counter
    }

    fn open_window(&mut self) {
        // The evidence before the first sub-window of this window.
        self.evidence.step(false);
    }

    fn close_sub_window(&mut self, gaps: &[Gap], classes: &mut Vec<GapClass>) -> SubWindow {
        let moved = self.evidence.step(!gaps.is_empty());
        classes.extend(gaps.iter().map(|gap| classify(gap, moved.as_ref())));
        SubWindow {
            classified: moved.is_some(),
            quiet: moved.as_ref().is_some_and(Moved::is_quiet),
        }
    }

    fn nmis(&self) -> (u64, Option<u64>) {
        let nmis = self
            .evidence
            .nmi_count()
            .zip(self.nmis_at_start)
            .map_or(0, |(end, start)| end.saturating_sub(start));
        (nmis, None)
    }
}

/// Runs one sampler on the calling thread (already pinned and real-time),
/// with its tier's classifier.
pub fn run(plan: &SamplerPlan, stop: &Arc<AtomicBool>) -> CpuOutcome {
    let mut out = CpuOutcome {
        cpu: plan.cpu,
        tid: crate::rt::sched::current_tid(),
        ..CpuOutcome::default()
    };
    let started = match &plan.counter {
        None => ProcClassifier::open(plan.cpu).map(|c| run_with(plan, stop, c, &mut out)),
        Some(loaded) => super::bpf_counter::BpfClassifier::new(loaded, plan.cpu, out.tid)
            .map(|c| run_with(plan, stop, c, &mut out)),
    };
    if let Err(e) = started {
        out.error = Some(e);
    }
    out
}

/// Samples window after window with `classifier`.
fn run_with<C: Classifier>(
    plan: &SamplerPlan,
    stop: &Arc<AtomicBool>,
    mut classifier: C,
    out: &mut CpuOutcome,
) {
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
        sample_window(plan, stop, &mut classifier, buffers, window_end, out);
        out.windows += 1;
        window_start += plan.window_ns;
    }
    (out.nmis, out.nmi_ns) = classifier.nmis();
}

/// One duty window: sub-windows until `window_end`, every gap classified.
fn sample_window<C: Classifier>(
    plan: &SamplerPlan,
    stop: &AtomicBool,
    classifier: &mut C,
    (gaps, classes): (&mut Vec<Gap>, &mut Vec<GapClass>),
    window_end: u64,
    out: &mut CpuOutcome,
) {
    let mut clock = Monotonic;
    let started = clock.now();
    let mut sample: Option<WindowSample> = None;
    classifier.open_window();
    while !stop.load(Ordering::Relaxed) {
        let now = clock.now();
        if now >= window_end {
            break;
        }
        let until = window_end.min(now + plan.sub_window_ns);
        gaps.clear();
        classes.clear();
        let counter = classifier.counter();
        let (span, loops, dropped) = spin(counter, &mut clock, until, plan.threshold_ns, gaps);
        let sub_window = classifier.close_sub_window(gaps, classes);
        out.sub_windows += 1;
        out.loops += loops;
        out.gaps_dropped += dropped;
        out.quiet_sub_windows += u64::from(sub_window.quiet);
        if sub_window.classified {
            out.classified_ns += span;
        }
        for (gap, class) in gaps.iter().zip(classes.drain(..)) {
            if out.tally.add(gap, class) {
                note_sample(&mut sample, gap, plan.realtime_offset_ns);
            }
        }
    }
    out.spun_ns += clock.now().saturating_sub(started);
    if let Some(s) = sample
        && out.samples.len() < MAX_SAMPLES
    {
        out.samples.push(s);
    }
}

/// Adds a hardware gap to its window's sample.
fn note_sample(sample: &mut Option<WindowSample>, gap: &Gap, realtime_offset_ns: i64) {
    let s = sample.get_or_insert(WindowSample {
        realtime_ns: (gap.at_ns as i64).saturating_add(realtime_offset_ns).max(0) as u64,
        inner_ns: 0,
        outer_ns: 0,
        count: 0,
        sum_ns: 0,
    });
    s.inner_ns = s.inner_ns.max(gap.inner_ns);
    s.outer_ns = s.outer_ns.max(gap.outer_ns);
    s.count += 1;
    s.sum_ns += gap.ns();
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

/// Spins reading pairs until the clock passes `until`; gaps above the
/// threshold go to `gaps`. Returns the time covered (first t1 to last t2),
/// the pairs read and the gaps that did not fit.
pub fn spin<C: InterferenceCounter, K: Clock>(
    counter: &mut C,
    clock: &mut K,
    until: u64,
    threshold_ns: u64,
    gaps: &mut Vec<Gap>,
) -> (u64, u64, u64) {
    let first = read_pair(counter, clock);
    let mut previous: Reading = first;
    let (mut loops, mut dropped) = (1u64, 0u64);
    if let Some(g) = gap_of(None, &first, threshold_ns) {
        keep(counter, gaps, g, first.before, first.after);
    }
    while previous.t2 < until {
        let reading = read_pair(counter, clock);
        loops += 1;
        if let Some(g) = gap_of(Some(&previous), &reading, threshold_ns) {
            if gaps.len() < gaps.capacity() {
                keep(counter, gaps, g, previous.after, reading.after);
            } else {
                dropped += 1;
            }
        }
        previous = reading;
    }
    (previous.t2.saturating_sub(first.t1), loops, dropped)
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
        let (span, loops, dropped) = spin(&mut counter, &mut clock, 9000, 1000, &mut gaps);
        assert_eq!((span, loops, dropped), (9070, 5, 0));
        assert_eq!(gaps.len(), 2);
        assert_eq!((gaps[0].at_ns, gaps[0].outer_ns), (30, 5000));
        assert_eq!(gaps[0].interference, Interference::None);
        assert_eq!((gaps[1].at_ns, gaps[1].outer_ns), (5060, 4000));
        assert_eq!(gaps[1].interference, Interference::Some);
    }

    #[test]
    fn gaps_beyond_the_buffer_are_counted_as_dropped() {
        let times: Vec<u64> = (0..40).map(|i| i * 1000).collect();
        let mut clock = ScriptClock(times, 0);
        let mut gaps = Vec::with_capacity(2);
        let (_, _, dropped) = spin(&mut NoCounter, &mut clock, 30_000, 500, &mut gaps);
        assert_eq!(gaps.len(), 2);
        assert!(dropped > 0);
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
