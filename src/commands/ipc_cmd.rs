//! `latscope ipc`: every wake-up primitive with the same settings, one after
//! another, and one table that compares them.

use crate::cli::{IpcArgs, IpcModeArg};
use crate::ipc::PRIMITIVES;
use crate::ipc::harness::{Mode, Tasks};
use crate::measure::ipc::{self as ipc_run, SequenceSpec};
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::console::overview::IpcComparison;
use crate::rt::sched;
use crate::settings::{PairLayout, Timing, UsageError, VerdictSettings};
use crate::units::values::{DEFAULT_INTERVAL_US, DEFAULT_RT_PRIORITY, DEFAULT_TIME_PER_PRIMITIVE};
use std::time::Duration;

pub fn run(args: &IpcArgs) -> Result<i32, CommandError> {
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
    let primitives: Vec<&'static str> = if args.only.is_empty() {
        PRIMITIVES.to_vec()
    } else {
        let mut chosen = Vec::new();
        for name in &args.only {
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
        chosen
    };
    let modes: &'static [Mode] = match args.mode {
        IpcModeArg::Oneway => &[Mode::OneWay],
        IpcModeArg::Roundtrip => &[Mode::RoundTrip],
        IpcModeArg::Both => &[Mode::OneWay, Mode::RoundTrip],
    };
    // Checked now, before anything is measured.
    let pairs = layout.pairs(timing, args.cross_cpu)?;
    let verdict = VerdictSettings::from_args(&args.verdict)?;
    let spike_threshold_us = args.spikes.trace_spikes;
    let collector = crate::settings::collector(&args.spikes, None)?;
    for notice in &notices {
        crate::rt::stdio::note_line(&format!("latscope: warning: {notice}"));
    }
    if let Some(line) = ipc_run::expected_total_line(primitives.len(), per_primitive)
        && !verdict.quiet
    {
        crate::rt::stdio::note_line(&line);
    }
    if !realtime && args.layout.priority.is_none() {
        crate::rt::stdio::note_line(&format!(
            "latscope: note: real-time priority is not available to this user; measuring at normal priority ({})",
            sched::RT_PRIVILEGE_FIX
        ));
    }
    pipeline::run(&mut IpcCommand {
        primitives,
        modes,
        layout,
        timing,
        cpus: ipc_run::cpus_of(&pairs),
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
        spike_threshold_us,
        collector,
        verdict,
    })
}

/// `latscope ipc` as the pipeline runs it.
struct IpcCommand {
    primitives: Vec<&'static str>,
    modes: &'static [Mode],
    layout: PairLayout,
    timing: Timing,
    cpus: Vec<usize>,
    tasks: Tasks,
    cross_cpu: bool,
    per_test: Option<Duration>,
    lock_memory: bool,
    hold_dma_latency: bool,
    deepest_idle_state: Option<u32>,
    spike_threshold_us: Option<u64>,
    collector: crate::rt::bpf::CollectorChoice,
    verdict: VerdictSettings,
}

impl Measurement for IpcCommand {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        Plan {
            prepare: PrepareSpec {
                lock_memory: self.lock_memory,
                require_mlock: true,
                hold_dma_latency: self.hold_dma_latency,
                loads: self.verdict.loads.clone(),
                cpus: self.cpus.clone(),
            },
            fail_if: self.verdict.fail_if.clone(),
            actions: self.verdict.actions.clone(),
            breaks: None,
            outputs: self.verdict.outputs.clone(),
            presentation: Presentation::modern(Box::new(IpcComparison)),
        }
    }

    fn check(&self) -> Result<(), CommandError> {
        pipeline::check_spike_tracing(self.spike_threshold_us)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let items = ipc_run::sequence(&SequenceSpec {
            primitives: &self.primitives,
            modes: self.modes,
            layout: &self.layout,
            timing: self.timing,
            tasks: self.tasks,
            cross_cpu: self.cross_cpu,
            per_test: self.per_test,
            max_latency_us: self.verdict.max_latency_us,
            spike_threshold_ns: self.spike_threshold_us.map(|us| us.saturating_mul(1000)),
            collector: self.collector,
            prep: run.prep,
        })?;
        ipc_run::run_sequence(
            items,
            None,
            self.verdict.quiet,
            run,
            &mut |done| run.checkpoint(done),
            &mut |done, so_far| run.snapshot(done, so_far),
        )
    }
}
