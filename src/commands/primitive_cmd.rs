//! The single-primitive subcommands (`mq`, `sem`, `signal`, `svsem`, `mutex`, `pipe`,
//! `eventfd`, `futex`, `unix`, `svmq`): one code path, differing only in the
//! transport and in which original tool's classic output they print.

use crate::cli::OutputFormat;
use crate::live::ipc::{ClassicLive, LiveLine};
use crate::measure::ipc::{self as ipc_run, Progress, Transport};
use crate::pipeline::{self, CommandError, FinishedTest, Measurement, Plan, Presentation, Run};
use crate::report::cells::RtTestsFlavor;
use crate::report::classic_rt_tests::ClassicRtTests;
use crate::report::classic_semtest::ClassicSemtest;
use crate::report::console::ModernConsole;
use crate::report::json::{LatscopeJson, RtTestsJson};
use crate::settings::IpcSettings;

/// The original tool whose exact output `--format classic` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicTool {
    /// One of the rt-tests pair tools (lines and JSON layout).
    RtTests(RtTestsFlavor),
    Semtest,
}

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
    pipeline::run(&mut PairCommand {
        transport,
        settings,
        classic,
        breaks,
    })
}

struct PairCommand<'a> {
    transport: &'a dyn Transport,
    settings: IpcSettings,
    classic: ClassicTool,
    /// `-b` as the trigger of `--on-threshold`: its crossings.
    breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

impl PairCommand<'_> {
    fn classic_format(&self) -> bool {
        self.settings.format == OutputFormat::Classic
    }
}

impl Measurement for PairCommand<'_> {
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
            breaks: self.breaks.clone(),
            ..Plan::measuring(
                &settings.verdict,
                settings.lock_memory,
                settings.hold_dma_latency,
                ipc_run::cpus_of(&settings.plan.pairs),
                presentation,
            )
        }
    }

    fn check(&self) -> Result<(), CommandError> {
        pipeline::check_spike_tracing(self.settings.trace_spikes_us, self.settings.collector)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let settings = &self.settings;
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
        let test = ipc_run::PairTest {
            transport: self.transport,
            settings,
            breaks: self.breaks.clone(),
        };
        Ok(vec![ipc_run::measure_pair(test, progress.as_mut(), run)?])
    }
}
