//! `latscope ipc`'s checked settings: which primitives in which modes, the
//! pairs' layout and timing, and the verdict, checked before anything is
//! measured.

use super::{PairLayout, Timing, UsageError, VerdictSettings};
use crate::cli::{IpcArgs, IpcModeArg};
use crate::ipc::PRIMITIVES;
use crate::ipc::harness::{Mode, PairPlan, Tasks};
use crate::rt::sched;
use crate::units::values::{DEFAULT_INTERVAL_US, DEFAULT_RT_PRIORITY, DEFAULT_TIME_PER_PRIMITIVE};
use std::time::Duration;

pub struct IpcSequenceSettings {
    pub primitives: Vec<&'static str>,
    pub modes: &'static [Mode],
    pub layout: PairLayout,
    pub timing: Timing,
    /// The pairs of one test, laid out (their CPUs are the run's).
    pub pairs: Vec<PairPlan>,
    pub tasks: Tasks,
    pub cross_cpu: bool,
    /// How long each test runs (None: until its loops are done).
    pub per_test: Option<Duration>,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
    pub deepest_idle_state: Option<u32>,
    pub spike_threshold_us: Option<u64>,
    pub collector: crate::rt::bpf::CollectorChoice,
    pub verdict: VerdictSettings,
    /// Whether this user may use a real-time priority.
    pub realtime: bool,
    /// What the user should know before the run (printed by the command).
    pub notices: Vec<String>,
}

impl IpcSequenceSettings {
    pub fn from_args(args: &IpcArgs) -> Result<IpcSequenceSettings, UsageError> {
        let mut notices = Vec::new();
        let realtime = sched::can_use_realtime();
        let layout = PairLayout::from_args(
            &args.layout,
            if realtime { DEFAULT_RT_PRIORITY } else { 0 },
            true,
            &mut notices,
        )?;
        let timing = Timing::from_args(&args.layout, DEFAULT_INTERVAL_US);
        let per_primitive = match (args.duration, timing.loops) {
            (Some(d), _) => Some(d),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_TIME_PER_PRIMITIVE),
        };
        let modes: &'static [Mode] = match args.mode {
            IpcModeArg::Oneway => &[Mode::OneWay],
            IpcModeArg::Roundtrip => &[Mode::RoundTrip],
            IpcModeArg::Both => &[Mode::OneWay, Mode::RoundTrip],
        };
        let primitives = chosen_primitives(&args.only)?;
        // Checked now, before anything is measured.
        let pairs = layout.pairs(timing, args.cross_cpu)?;
        Ok(IpcSequenceSettings {
            primitives,
            modes,
            layout,
            timing,
            pairs,
            tasks: if args.fork {
                Tasks::Processes
            } else {
                Tasks::Threads
            },
            cross_cpu: args.cross_cpu,
            per_test: per_primitive.map(|d| d / modes.len() as u32),
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            deepest_idle_state: args.idle.deepest_idle_state,
            verdict: VerdictSettings::from_args(&args.verdict)?,
            spike_threshold_us: args.spikes.trace_spikes,
            collector: super::collector(&args.spikes, None)?,
            realtime,
            notices,
        })
    }
}

/// `--only`: the primitives named, each once, in the order given (every
/// one when none is named).
fn chosen_primitives(only: &[String]) -> Result<Vec<&'static str>, UsageError> {
    if only.is_empty() {
        return Ok(PRIMITIVES.to_vec());
    }
    let mut chosen = Vec::new();
    for name in only {
        let name = name.trim();
        let known = PRIMITIVES.iter().find(|p| **p == name).ok_or_else(|| {
            UsageError(format!(
                "--only: unknown primitive '{}' (known: {})",
                crate::units::shown(name),
                PRIMITIVES.join(", ")
            ))
        })?;
        if !chosen.contains(known) {
            chosen.push(*known);
        }
    }
    Ok(chosen)
}
