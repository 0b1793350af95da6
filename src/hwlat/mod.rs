//! Hardware, firmware and hypervisor latency (`latscope hwlat`, the
//! `hwlatdetect` name): a busy sampler per measured CPU, all CPUs in every
//! window, each reading clock pairs for `width` of every `window` and
//! classifying each gap above the threshold as **hardware** (nothing the
//! kernel counts ran across it: firmware, an SMI, or the hypervisor in a
//! guest) or **OS** (with its cause).
//!
//! Tiers (tier.rs decides): the **bpf** tier (`bpf_counter.rs`: a per-CPU
//! counter the kernel bumps, read with one load around each pair through
//! the read protocol's `InterferenceCounter`, so each gap is decided by
//! itself), the **tracefs** tier (traced.rs: gap-precise, each gap
//! overlapped with the IRQ, softirq, NMI and switch events of a private
//! trace instance), and the **unprivileged** tier (window-precise: the
//! CPU's `/proc/interrupts` and `/proc/softirqs` columns and the sampler's
//! context switches, read between 0.5 ms sub-windows).
//!
//! The CPUs' duty windows are staggered (CPU i starts i/N of a window
//! later) so that, while the duty cycle allows it, some CPU is always free
//! for the rest of the machine: a 2-CPU box stays responsive at 50 %.

pub mod bpf_counter;
pub mod classify;
pub mod gap_log;
pub mod machine;
pub mod over_time;
pub mod proc_counts;
pub mod protocol;
pub mod sampler;
pub mod tier;
pub mod traced;

use crate::probes::interference::load::LoadedInterference;
use crate::report::EndReason;
use crate::rt::sched::Policy;
use machine::SmiCounter;
use sampler::{CpuOutcome, SamplerPlan};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tier::Tier;
use traced::{GapTrace, TracedCpu};

/// Stack of a sampler thread: small, since `mlockall` locks all of it.
const SAMPLER_STACK: usize = 256 * 1024;
/// From the start to the first window, so that every sampler is set up.
const START_DELAY_NS: u64 = 20_000_000;

/// The tier that ran, as the output names it.
pub use tier::UNPRIVILEGED_TIER;
/// The bpf tier classifies each gap by itself: its sub-windows only bound
/// the gaps kept between two classifications.
pub const BPF_SUB_WINDOW_NS: u64 = 100_000_000;

/// Everything a run needs, checked by the settings.
#[derive(Debug, Clone)]
pub struct HwlatPlan {
    pub cpus: Vec<usize>,
    pub priority: i32,
    pub threshold_ns: u64,
    pub width_ns: u64,
    pub window_ns: u64,
    pub sub_window_ns: u64,
    pub duration_ns: Option<u64>,
    /// The tier decided (tier.rs); `fall_back`: when it cannot start, the
    /// next tier runs instead (`--tier auto`: bpf, tracefs, unprivileged).
    pub tier: Tier,
    pub fall_back: bool,
    /// Log every gap (`--gaps`).
    pub keep_gaps: bool,
}

/// A measured CPU's SMT sibling that was busy while it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BusySibling {
    pub cpu: usize,
    pub sibling: usize,
    /// Share of the run the sibling was busy, percent.
    pub busy_percent: f64,
}

/// What a run gives.
#[derive(Debug, Clone)]
pub struct HwlatOutcome {
    pub cpus: Vec<CpuOutcome>,
    /// Steal time per measured CPU over the run, ns (from USER_HZ ticks).
    pub steal_ns: BTreeMap<usize, u64>,
    pub busy_siblings: Vec<BusySibling>,
    pub smi: machine::SmiCounting,
    /// SMIs per measured CPU over the run, when countable.
    pub smis: BTreeMap<usize, u64>,
    pub measured: Duration,
    pub end_reason: EndReason,
    pub error: Option<String>,
    /// The tier that ran, and why it is not the one planned (it could not start).
    pub tier: Tier,
    pub tier_fallback: Option<String>,
}

/// A run whose tier has started (the bpf tier's programs loaded, or the
/// trace running, or the unprivileged tier) and whose SMI counters are
/// open: what it measures with is known before the samplers spin, so the
/// `hwlatdetect` name's `detector:` line names the tier that runs.
pub struct Prepared {
    started: Result<Started, String>,
    tier: Tier,
    tier_fallback: Option<String>,
    smi: SmiCounter,
    /// The samplers' clock, calibrated once per process (30 ms) before any
    /// sampler's start.
    ticks: crate::rt::ticks::Counter,
    stat_before: BTreeMap<usize, machine::CpuTimes>,
    realtime_offset_ns: i64,
}

impl Prepared {
    /// The tier that runs (the planned one, or the one it fell back to).
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// Why the planned tier did not start, when it did not.
    pub fn tier_fallback(&self) -> Option<&str> {
        self.tier_fallback.as_deref()
    }
}

/// Starts `plan`'s tier (falling back as the plan allows) and SMI counters.
pub fn prepare(plan: &HwlatPlan) -> Prepared {
    let ticks = crate::rt::ticks::Counter::detect();
    let smi = SmiCounter::start(&plan.cpus);
    let stat_before = machine::read_stat();
    let realtime_offset_ns = crate::rt::clock::read_clock(libc::CLOCK_REALTIME) as i64
        - crate::rt::clock::monotonic_ns() as i64;
    // The trace starts before the samplers spin, from this (unpinned) thread.
    let (started, tier, tier_fallback) = start_tier(plan, realtime_offset_ns);
    Prepared {
        started,
        tier,
        tier_fallback,
        smi,
        ticks,
        stat_before,
        realtime_offset_ns,
    }
}

/// Runs one sampler per CPU of `plan` until the duration ends, a sampler
/// fails, or `stop_signalled` (waiting up to its argument) says stop.
pub fn run(plan: &HwlatPlan, stop_signalled: &mut dyn FnMut(Duration) -> bool) -> HwlatOutcome {
    run_prepared(plan, prepare(plan), stop_signalled)
}

/// `run` on a run `prepare` started.
pub fn run_prepared(
    plan: &HwlatPlan,
    prepared: Prepared,
    stop_signalled: &mut dyn FnMut(Duration) -> bool,
) -> HwlatOutcome {
    let Prepared {
        started,
        tier,
        tier_fallback,
        smi,
        ticks,
        stat_before,
        realtime_offset_ns,
    } = prepared;
    let mut sampled = match &started {
        Err(e) => Sampled::failed(e.clone()),
        Ok(started) => sample(plan, (started, ticks), realtime_offset_ns, stop_signalled),
    };
    if let Ok(Started {
        trace: Some(trace), ..
    }) = started
    {
        // Items the reader was too slow to take: their gaps were not kept.
        for c in &mut sampled.cpus {
            c.gaps_dropped += trace.feed(c.cpu).map_or(0, |f| f.dropped());
        }
        let mut found = trace.finish();
        for c in &mut sampled.cpus {
            if let Some(t) = found.remove(&c.cpu) {
                take_traced(c, t);
            }
        }
    }
    let stat_after = machine::read_stat();
    let tick_ns = 1_000_000_000 / machine::user_hz();
    let measured = sampled.measured;
    HwlatOutcome {
        steal_ns: plan
            .cpus
            .iter()
            .map(|&c| {
                let before = stat_before.get(&c).map_or(0, |t| t.steal);
                let after = stat_after.get(&c).map_or(0, |t| t.steal);
                (c, after.saturating_sub(before) * tick_ns)
            })
            .collect(),
        busy_siblings: busy_siblings(&plan.cpus, &stat_before, &stat_after, measured),
        smi: smi.counting.clone(),
        smis: smi.finish(),
        cpus: sampled.cpus,
        measured,
        end_reason: sampled.end_reason,
        error: sampled.error,
        tier,
        tier_fallback,
    }
}

/// What the tier that runs started: the tracefs tier's trace, the bpf
/// tier's loaded counter (neither: the unprivileged tier).
#[derive(Default)]
struct Started {
    trace: Option<GapTrace>,
    counter: Option<Arc<LoadedInterference>>,
}

/// Loads the bpf tier's programs and their per-CPU counter.
pub fn load_counter() -> Result<Arc<LoadedInterference>, String> {
    crate::probes::interference::check().map_err(|e| e.0)?;
    let tracefs = crate::rt::tracefs::mount::find()
        .unwrap_or_else(|| std::path::PathBuf::from("/sys/kernel/tracing"));
    LoadedInterference::load(&tracefs)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// Starts the planned tier's collection. A tier that cannot start is an
/// error, or with `fall_back` the next tier runs (bpf, tracefs,
/// unprivileged), with why.
fn start_tier(
    plan: &HwlatPlan,
    realtime_offset_ns: i64,
) -> (Result<Started, String>, Tier, Option<String>) {
    let mut fallback = None;
    let mut tier = plan.tier;
    if tier == Tier::Bpf {
        match load_counter() {
            Ok(counter) => {
                let started = Started {
                    counter: Some(counter),
                    trace: None,
                };
                return (Ok(started), Tier::Bpf, None);
            }
            Err(why) if plan.fall_back => {
                fallback = Some(format!("bpf: {why}"));
                tier = Tier::Tracefs;
            }
            Err(why) => {
                let why = format!("the bpf tier could not start: {why}");
                return (Err(why), Tier::Bpf, None);
            }
        }
    }
    if tier == Tier::Tracefs {
        match GapTrace::start(&plan.cpus, realtime_offset_ns, plan.keep_gaps) {
            Ok(trace) => {
                let started = Started {
                    trace: Some(trace),
                    counter: None,
                };
                return (Ok(started), Tier::Tracefs, fallback);
            }
            Err(why) if plan.fall_back => {
                fallback = tier::join_fallbacks(fallback, Some(format!("tracefs: {why}")));
                tier = Tier::Unprivileged;
            }
            Err(why) => {
                let why = format!("the tracefs tier could not start: {why}");
                return (Err(why), Tier::Tracefs, None);
            }
        }
    }
    (Ok(Started::default()), tier, fallback)
}

/// The tracefs tier's classification of a CPU's gaps, in its outcome.
fn take_traced(c: &mut CpuOutcome, t: TracedCpu) {
    c.tally = t.tally;
    c.samples = t.samples;
    c.samples.truncate(sampler::MAX_SAMPLES);
    c.classified_ns = t.classified_ns.min(c.spun_ns);
    c.nmis = t.nmis.count;
    c.nmi_ns = Some(t.nmis.total_ns);
    c.nmi_max_ns = Some(t.nmis.max_ns);
    c.gap_log = t.log;
}

/// What the samplers gave.
struct Sampled {
    cpus: Vec<CpuOutcome>,
    measured: Duration,
    end_reason: EndReason,
    error: Option<String>,
}

impl Sampled {
    fn failed(error: String) -> Sampled {
        Sampled {
            cpus: Vec::new(),
            measured: Duration::ZERO,
            end_reason: EndReason::Error,
            error: Some(error),
        }
    }
}

/// Runs the samplers (feeding the trace, or reading the counter, of the
/// tier `started`) until the end.
fn sample(
    plan: &HwlatPlan,
    (started, ticks): (&Started, crate::rt::ticks::Counter),
    realtime_offset_ns: i64,
    stop_signalled: &mut dyn FnMut(Duration) -> bool,
) -> Sampled {
    let stop = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicUsize::new(0));
    let start_ns = crate::rt::clock::monotonic_ns() + START_DELAY_NS;
    let mut handles = Vec::new();
    let mut error = None;
    let trace = started.trace.as_ref();
    for (i, &cpu) in plan.cpus.iter().enumerate() {
        let sampler = SamplerPlan {
            cpu,
            priority: plan.priority,
            threshold_ns: plan.threshold_ns,
            width_ns: plan.width_ns,
            window_ns: plan.window_ns,
            sub_window_ns: match started.counter {
                Some(_) => plan.width_ns.min(BPF_SUB_WINDOW_NS),
                None => plan.sub_window_ns,
            },
            counter: started.counter.clone(),
            ticks,
            first_window_ns: start_ns + stagger_ns(plan.window_ns, i, plan.cpus.len()),
            end_ns: plan.duration_ns.map(|d| start_ns + d),
            realtime_offset_ns,
            feed: trace.and_then(|t| t.feed(cpu)),
            keep_gaps: plan.keep_gaps,
        };
        let (stop_one, finished) = (Arc::clone(&stop), Arc::clone(&finished));
        let spawned = std::thread::Builder::new()
            .name(format!("hwlat/{cpu}"))
            .stack_size(SAMPLER_STACK)
            .spawn(move || {
                let out = start_sampler(&sampler, &stop_one);
                if out.error.is_some() {
                    stop_one.store(true, Ordering::Relaxed);
                }
                finished.fetch_add(1, Ordering::Release);
                out
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                error = Some(format!("could not start the sampler of CPU {cpu}: {e}"));
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    let mut end_reason = EndReason::DurationElapsed;
    while finished.load(Ordering::Acquire) < handles.len() {
        if stop_signalled(Duration::from_millis(10)) {
            stop.store(true, Ordering::Relaxed);
            end_reason = EndReason::Interrupted;
        }
    }
    let cpus: Vec<CpuOutcome> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    let measured = Duration::from_nanos(crate::rt::clock::monotonic_ns().saturating_sub(start_ns));
    if let Some(e) = cpus.iter().find_map(|c| c.error.clone()).or(error.clone()) {
        error = Some(e);
        end_reason = EndReason::Error;
    } else if plan.duration_ns.is_none() {
        end_reason = EndReason::Interrupted;
    }
    Sampled {
        cpus,
        measured,
        end_reason,
        error,
    }
}

/// How much later than the run's start the `i`-th of `n` CPUs starts its
/// windows: i/N of a window, so that some CPU is always free.
pub fn stagger_ns(window_ns: u64, i: usize, n: usize) -> u64 {
    window_ns * i as u64 / n.max(1) as u64
}

/// Pins and raises the calling thread, then samples.
fn start_sampler(plan: &SamplerPlan, stop: &Arc<AtomicBool>) -> CpuOutcome {
    let setup = crate::rt::sched::pin_current_thread(plan.cpu)
        .and_then(|()| crate::rt::sched::set_current_thread_policy(Policy::Fifo, plan.priority));
    match setup {
        Ok(()) => sampler::run(plan, stop),
        Err(e) => CpuOutcome {
            cpu: plan.cpu,
            error: Some(e),
            ..CpuOutcome::default()
        },
    }
}

/// SMT siblings of measured CPUs (not measured themselves) busy for more
/// than 10 % of the run: they shared the core with a sampler.
fn busy_siblings(
    cpus: &[usize],
    before: &BTreeMap<usize, machine::CpuTimes>,
    after: &BTreeMap<usize, machine::CpuTimes>,
    measured: Duration,
) -> Vec<BusySibling> {
    let run_ticks = measured.as_secs_f64() * machine::user_hz() as f64;
    let mut out = Vec::new();
    for &cpu in cpus {
        for sibling in crate::rt::sysinfo::smt_siblings(cpu) {
            if cpus.contains(&sibling) || run_ticks <= 0.0 {
                continue;
            }
            let busy = match (before.get(&sibling), after.get(&sibling)) {
                (Some(b), Some(a)) => a.busy.saturating_sub(b.busy) as f64,
                _ => continue,
            };
            let busy_percent = busy * 100.0 / run_ticks;
            if busy_percent > 10.0 {
                out.push(BusySibling {
                    cpu,
                    sibling,
                    busy_percent,
                });
            }
        }
    }
    out
}
