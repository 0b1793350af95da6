//! Hardware, firmware and hypervisor latency (`latscope hwlat`, the
//! `hwlatdetect` name): a busy sampler per measured CPU, all CPUs in every
//! window, each reading clock pairs for `width` of every `window` and
//! classifying each gap above the threshold as **hardware** (nothing the
//! kernel counts ran across it: firmware, an SMI, or the hypervisor in a
//! guest) or **OS** (with its cause).
//!
//! Tiers (`tier.rs` decides): the **unprivileged** tier (window-precise:
//! the CPU's `/proc/interrupts` and `/proc/softirqs` columns and the
//! sampler's context switches, read between 0.5 ms sub-windows), and the
//! **bpf** tier (`bpf_counter.rs`: a per-CPU counter the kernel bumps,
//! read with one load around each pair, so each gap is decided by itself).
//!
//! The CPUs' duty windows are staggered (CPU i starts i/N of a window
//! later) so that, while the duty cycle allows it, some CPU is always free
//! for the rest of the machine: a 2-CPU box stays responsive at 50 %.

pub mod bpf_counter;
pub mod classify;
pub mod machine;
pub mod proc_counts;
pub mod protocol;
pub mod sampler;
pub mod tier;

use crate::probes::interference::load::LoadedInterference;
use crate::report::EndReason;
use crate::rt::sched::Policy;
use sampler::{CpuOutcome, SamplerPlan};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Stack of a sampler thread: small, since `mlockall` locks all of it.
const SAMPLER_STACK: usize = 256 * 1024;
/// From the start to the first window, so that every sampler is set up.
const START_DELAY_NS: u64 = 20_000_000;

pub use tier::UNPRIVILEGED_TIER;
/// The bpf tier classifies each gap by itself: its sub-windows only bound
/// the gaps kept between two classifications.
const BPF_SUB_WINDOW_NS: u64 = 100_000_000;

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
    /// The bpf tier's counter, loaded (None: the unprivileged tier).
    pub counter: Option<Arc<LoadedInterference>>,
}

/// Starts the tier `choice` asks for: the bpf tier's programs loaded when
/// it is the one that runs.
pub fn start_tier(
    choice: tier::TierChoice,
) -> Result<tier::Decision<Arc<LoadedInterference>>, tier::TierError> {
    tier::decide(choice, || {
        crate::probes::interference::check().map_err(|e| e.0)?;
        let tracefs = crate::rt::tracefs::mount::find()
            .unwrap_or_else(|| std::path::PathBuf::from("/sys/kernel/tracing"));
        LoadedInterference::load(&tracefs)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
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
}

/// Runs one sampler per CPU of `plan` until the duration ends, a sampler
/// fails, or `stop_signalled` (waiting up to its argument) says stop.
pub fn run(plan: &HwlatPlan, stop_signalled: &mut dyn FnMut(Duration) -> bool) -> HwlatOutcome {
    let smi = machine::smi_counting(&plan.cpus);
    let smis_before = smi_counts(&smi, &plan.cpus);
    let stat_before = machine::read_stat();
    let stop = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicUsize::new(0));
    let start_ns = crate::rt::clock::monotonic_ns() + START_DELAY_NS;
    let realtime_offset_ns = crate::rt::clock::read_clock(libc::CLOCK_REALTIME) as i64
        - crate::rt::clock::monotonic_ns() as i64;
    let n = plan.cpus.len() as u64;
    let mut handles = Vec::new();
    let mut error = None;
    for (i, &cpu) in plan.cpus.iter().enumerate() {
        let sampler = SamplerPlan {
            cpu,
            priority: plan.priority,
            threshold_ns: plan.threshold_ns,
            width_ns: plan.width_ns,
            window_ns: plan.window_ns,
            sub_window_ns: match plan.counter {
                Some(_) => plan.width_ns.min(BPF_SUB_WINDOW_NS),
                None => plan.sub_window_ns,
            },
            counter: plan.counter.clone(),
            first_window_ns: start_ns + plan.window_ns * i as u64 / n.max(1),
            end_ns: plan.duration_ns.map(|d| start_ns + d),
            realtime_offset_ns,
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
        if stop_signalled(Duration::from_millis(100)) {
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
    let stat_after = machine::read_stat();
    let tick_ns = 1_000_000_000 / machine::user_hz();
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
        smis: smis_before
            .iter()
            .zip(smi_counts(&smi, &plan.cpus))
            .map(|(&(cpu, before), (_, after))| (cpu, after.wrapping_sub(before) & 0xffff_ffff))
            .collect(),
        smi,
        cpus,
        measured,
        end_reason,
        error,
    }
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

fn smi_counts(smi: &machine::SmiCounting, cpus: &[usize]) -> Vec<(usize, u64)> {
    match smi {
        machine::SmiCounting::Msr => cpus
            .iter()
            .map(|&c| (c, machine::read_smi_count(c).unwrap_or(0)))
            .collect(),
        machine::SmiCounting::NotCountable(_) => Vec::new(),
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
