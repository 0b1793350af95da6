//! The single-primitive subcommands (`mq`, `sem`, `signal`, `svsem`, `pipe`,
//! `eventfd`, `futex`, `unix`, `svmq`): one code path, differing only in the
//! transport and in which original tool's classic output they print.

use super::ipc_test::{self, IpcTest, Preparation};
use super::progress::{ClassicLive, LiveLine};
use super::{CommandError, deliver};
use crate::cli::OutputFormat;
use crate::ipc::Transport;
use crate::ipc::harness::{Progress, RunPlan};
use crate::report::Exporter;
use crate::report::classic_rt_tests::{ClassicRtTests, RtTestsFlavor};
use crate::report::classic_semtest::ClassicSemtest;
use crate::report::console::ModernConsole;
use crate::report::json::{LatscopeJson, RtTestsJson};
use crate::rt::sysinfo::SysInfo;
use crate::rt::tracefs::BreakTrace;
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
        eprintln!("latscope: warning: {notice}");
    }
    super::check_spike_tracing(settings.trace_spikes_us)?;
    let sysinfo = SysInfo::collect();
    let mut prep = Preparation::apply(
        settings.lock_memory,
        true,
        settings.hold_dma_latency,
        &settings.verdict.loads,
        &ipc_test::cpus_of(&settings.plan.pairs),
    )
    .map_err(CommandError::Runtime)?;
    let mut warnings = prep.warnings.clone();
    let breaktrace = match settings.breaktrace_us {
        None => None,
        Some(_) => match BreakTrace::open() {
            Ok(t) => Some(t),
            Err(why) => {
                warnings.push(format!("-b: {why}; the run still stops at the limit"));
                None
            }
        },
    };
    let config = ipc_test::config_of(&settings, &prep);
    let classic_format = settings.format == OutputFormat::Classic;
    let mut progress: Box<dyn Progress> = match classic {
        ClassicTool::RtTests(flavor) if classic_format => Box::new(ClassicLive::new(
            &settings.plan.pairs,
            flavor,
            settings.verdict.quiet,
        )),
        _ => Box::new(LiveLine::new(transport.name(), settings.verdict.quiet)),
    };
    let mut finished = match ipc_test::run(IpcTest {
        transport,
        plan: RunPlan {
            // Peer processes lock their memory when this process could.
            lock_memory: prep.memory.is_locked(),
            ..settings.plan.clone()
        },
        config: config.clone(),
        breaktrace,
        progress: progress.as_mut(),
    }) {
        Ok(finished) => finished,
        // The kernel lacks the primitive: a skipped test (exit 4), reported.
        Err(e) if crate::ipc::lacks_kernel_feature(&e) => {
            ipc_test::failed_to_start(transport, &settings.plan, config, e)
        }
        Err(e) => return Err(CommandError::Runtime(e)),
    };
    // A pair test runs at the priority -p gives (0, normal, by default).
    finished.facts.priority_option = Some("-p");
    if let Some(note) = &finished.facts.breaktrace_note {
        eprintln!("latscope: break-trace limit crossed: {note}");
    }
    let mut report = ipc_test::assemble_report(vec![finished], sysinfo, warnings, &prep.memory);
    prep.finish(&mut report);
    drop(prep);
    super::judge(&mut report, &settings.verdict.fail_if);

    let (console, json): (Box<dyn Exporter>, Box<dyn Exporter>) = match (settings.format, classic) {
        (OutputFormat::Modern, _) => (Box::new(ModernConsole), Box::new(LatscopeJson)),
        // semtest has no JSON of its own: the latscope report.
        (OutputFormat::Classic, ClassicTool::Semtest) => {
            (Box::new(ClassicSemtest), Box::new(LatscopeJson))
        }
        (OutputFormat::Classic, ClassicTool::RtTests(flavor)) => (
            Box::new(ClassicRtTests::new(flavor)),
            Box::new(RtTestsJson::new(flavor)),
        ),
    };
    deliver(
        &report,
        console.as_ref(),
        classic_format,
        json.as_ref(),
        &settings.verdict.outputs,
    )
    .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}
