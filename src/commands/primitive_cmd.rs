//! The single-primitive subcommands (`mq`, `sem`, `signal`, `svsem`, `mutex`, `pipe`,
//! `eventfd`, `futex`, `unix`, `svmq`): one code path, differing only in the
//! transport and in which original tool's classic output they print.

use crate::cli::OutputFormat;
use crate::ipc::harness::{Progress, RunPlan};
use crate::ipc::{SetupError, Transport};
use crate::live::ipc::{ClassicLive, LiveLine};
use crate::measure::ipc::{self as ipc_run, IpcTest};
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::cells::RtTestsFlavor;
use crate::report::classic_rt_tests::ClassicRtTests;
use crate::report::classic_semtest::ClassicSemtest;
use crate::report::console::ModernConsole;
use crate::report::json::{LatscopeJson, RtTestsJson};
use crate::rt::tracefs::BreakTrace;
use crate::settings::{IpcSettings, UsageError};

/// The original tool whose exact output `--format classic` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicTool {
    /// One of the rt-tests pair tools (lines and JSON layout).
    RtTests(RtTestsFlavor),
    Semtest,
}

/// A pair test runs at the priority -p gives (0, normal, by default).
const PRIORITY_OPTION: Option<&'static str> = Some("-p");

pub fn run(
    transport: &dyn Transport,
    settings: IpcSettings,
    classic: ClassicTool,
) -> Result<i32, CommandError> {
    for notice in &settings.notices {
        crate::rt::stdio::note_line(&format!("latscope: warning: {notice}"));
    }
    let breaks = ipc_run::break_crossings(
        &settings.verdict.actions,
        transport.name(),
        &settings.plan.pairs,
    );
    pipeline::run(&mut PairTest {
        transport,
        settings,
        classic,
        breaks,
    })
}

struct PairTest<'a> {
    transport: &'a dyn Transport,
    settings: IpcSettings,
    classic: ClassicTool,
    /// `-b` as the trigger of `--on-threshold`: its crossings.
    breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

impl PairTest<'_> {
    fn classic_format(&self) -> bool {
        self.settings.format == OutputFormat::Classic
    }
}

impl Measurement for PairTest<'_> {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.settings.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        let settings = &self.settings;
        let presentation = match (self.classic_format(), self.classic) {
            (false, _) => Presentation::modern(Box::new(ModernConsole)),
            // semtest has no JSON of its own: the latscope report.
            (true, ClassicTool::Semtest) => Presentation {
                console: Box::new(ClassicSemtest),
                classic: true,
                json: Box::new(LatscopeJson),
            },
            (true, ClassicTool::RtTests(flavor)) => Presentation {
                console: Box::new(ClassicRtTests::new(flavor)),
                classic: true,
                json: Box::new(RtTestsJson::new(flavor)),
            },
        };
        Plan {
            prepare: PrepareSpec {
                lock_memory: settings.lock_memory,
                require_mlock: true,
                hold_dma_latency: settings.hold_dma_latency,
                loads: settings.verdict.loads.clone(),
                cpus: ipc_run::cpus_of(&settings.plan.pairs),
            },
            fail_if: settings.verdict.fail_if.clone(),
            actions: settings.verdict.actions.clone(),
            breaks: self.breaks.clone(),
            outputs: settings.verdict.outputs.clone(),
            presentation,
        }
    }

    fn check(&self) -> Result<(), CommandError> {
        pipeline::check_spike_tracing(self.settings.trace_spikes_us, self.settings.collector)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let settings = &self.settings;
        let breaktrace = match settings.breaktrace_us {
            None => None,
            Some(_) => match BreakTrace::open() {
                Ok(t) => Some(t),
                Err(why) => {
                    run.warn(format!("-b: {why}; the run still stops at the limit"));
                    None
                }
            },
        };
        let config = ipc_run::config_of(settings, run.prep);
        let mut progress: Box<dyn Progress> =
            match self.classic {
                ClassicTool::RtTests(flavor) if self.classic_format() => Box::new(
                    ClassicLive::new(&settings.plan.pairs, flavor, settings.verdict.quiet),
                ),
                _ => Box::new(
                    LiveLine::new(self.transport.name(), settings.verdict.quiet)
                        .until_stopped(settings.plan.runs_until_stopped()),
                ),
            };
        let mut finished = match ipc_run::run(IpcTest {
            transport: self.transport,
            plan: RunPlan {
                // Peer processes lock their memory when this process could.
                lock_memory: run.prep.memory.is_locked(),
                samples: ipc_run::samples_for(run.prep, self.transport, &settings.plan.pairs),
                breaks: self.breaks.clone(),
                ..settings.plan.clone()
            },
            config: config.clone(),
            breaktrace,
            progress: progress.as_mut(),
            on_snapshot: Some(&mut |mut so_far| {
                so_far.facts.priority_option = PRIORITY_OPTION;
                run.snapshot(&[], so_far)
            }),
            run: Some(run),
        }) {
            Ok(finished) => finished,
            // The kernel lacks the primitive: a skipped test (exit 4), reported.
            Err(e @ SetupError::KernelLacksFeature(_)) => {
                ipc_run::failed_to_start(self.transport, &settings.plan, config, e)
            }
            Err(SetupError::Usage(e)) => return Err(UsageError(e).into()),
            Err(e) => return Err(CommandError::Runtime(e.to_string())),
        };
        finished.facts.priority_option = PRIORITY_OPTION;
        if let Some(note) = &finished.facts.breaktrace_note {
            crate::rt::stdio::note_line(&format!("latscope: break-trace limit crossed: {note}"));
        }
        Ok(vec![finished])
    }
}
