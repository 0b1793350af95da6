//! `latscope ipc`: every wake-up primitive with the same settings, one after
//! another, and one table that compares them.

use crate::cli::IpcArgs;
use crate::measure::ipc::{self as ipc_run, SequenceSpec};
use crate::pipeline::{self, CommandError, FinishedTest, Measurement, Plan, Presentation, Run};
use crate::report::console::overview::IpcComparison;
use crate::rt::sched;
use crate::settings::ipc_sequence::IpcSequenceSettings;

pub fn run(args: &IpcArgs) -> Result<i32, CommandError> {
    let settings = IpcSequenceSettings::from_args(args)?;
    for notice in &settings.notices {
        crate::rt::stdio::note_line(&format!("latscope: warning: {notice}"));
    }
    let per_primitive = settings.per_test.map(|d| d * settings.modes.len() as u32);
    if let Some(line) = ipc_run::expected_total_line(settings.primitives.len(), per_primitive)
        && !settings.verdict.quiet
    {
        crate::rt::stdio::note_line(&line);
    }
    if !settings.realtime && args.layout.priority.is_none() {
        crate::rt::stdio::note_line(&format!(
            "latscope: note: real-time priority is not available to this user; measuring at normal priority ({})",
            sched::RT_PRIVILEGE_FIX
        ));
    }
    pipeline::run(&mut IpcCommand {
        cpus: ipc_run::cpus_of(&settings.pairs),
        settings,
    })
}

/// `latscope ipc` as the pipeline runs it.
struct IpcCommand {
    settings: IpcSequenceSettings,
    cpus: Vec<usize>,
}

impl Measurement for IpcCommand {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.settings.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        let settings = &self.settings;
        Plan::measuring(
            &settings.verdict,
            settings.lock_memory,
            settings.hold_dma_latency,
            self.cpus.clone(),
            Presentation::modern(Box::new(IpcComparison)),
        )
    }

    fn check(&self) -> Result<(), CommandError> {
        pipeline::check_spike_tracing(self.settings.spike_threshold_us, self.settings.collector)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let settings = &self.settings;
        let items = ipc_run::sequence(&SequenceSpec {
            primitives: &settings.primitives,
            modes: settings.modes,
            layout: &settings.layout,
            timing: settings.timing,
            tasks: settings.tasks,
            cross_cpu: settings.cross_cpu,
            per_test: settings.per_test,
            max_latency_us: settings.verdict.max_latency_us,
            spike_threshold_ns: settings
                .spike_threshold_us
                .map(|us| us.saturating_mul(1000)),
            collector: settings.collector,
            prep: run.prep,
        })?;
        ipc_run::run_sequence(
            items,
            None,
            settings.verdict.quiet,
            run,
            &mut |done| run.checkpoint(done),
            &mut |done, so_far| run.snapshot(done, so_far),
        )
    }
}
