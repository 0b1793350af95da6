//! The single-primitive subcommands (`mq`, `sem`, `signal`, `svsem`, `pipe`,
//! `eventfd`, `futex`, `unix`, `svmq`): one code path, differing only in the
//! transport and in which original tool's classic output they print.

use super::ipc_test::{self, IpcTest, Preparation};
use super::progress::{ClassicLive, LiveLine};
use super::{CommandError, deliver};
use crate::cli::OutputFormat;
use crate::ipc::Transport;
use crate::ipc::harness::Progress;
use crate::report::Exporter;
use crate::report::classic_pmqtest::ClassicPmqtest;
use crate::report::console::ModernConsole;
use crate::report::json::{LatscopeJson, RtTestsJson};
use crate::rt::sysinfo::SysInfo;
use crate::rt::tracefs::BreakTrace;
use crate::settings::IpcSettings;

/// The original tool whose exact output `--format classic` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicTool {
    Pmqtest,
    Sigwaittest,
    Svsematest,
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
    let sysinfo = SysInfo::collect();
    let prep = Preparation::apply(settings.lock_memory, true, settings.hold_dma_latency)
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
    let mut progress: Box<dyn Progress> = if classic_format && classic != ClassicTool::Semtest {
        Box::new(ClassicLive::new(
            &settings.plan.pairs,
            settings.verdict.quiet,
        ))
    } else {
        Box::new(LiveLine::new(transport.name(), settings.verdict.quiet))
    };
    let finished = ipc_test::run(IpcTest {
        transport,
        plan: settings.plan.clone(),
        config,
        breaktrace,
        progress: progress.as_mut(),
    })
    .map_err(CommandError::Runtime)?;
    if let Some(note) = &finished.facts.breaktrace_note {
        eprintln!("latscope: break-trace limit crossed: {note}");
    }
    let report = ipc_test::assemble_report(vec![finished], sysinfo, warnings, &prep.memory);
    drop(prep);

    let (console, json): (&dyn Exporter, &dyn Exporter) = match (settings.format, classic) {
        (OutputFormat::Modern, _) => (&ModernConsole, &LatscopeJson),
        (OutputFormat::Classic, ClassicTool::Semtest) => (&ClassicPmqtest, &LatscopeJson),
        (OutputFormat::Classic, _) => (&ClassicPmqtest, &RtTestsJson),
    };
    deliver(
        &report,
        console,
        classic_format,
        json,
        settings.verdict.json.as_ref(),
    )
    .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}
