//! `latscope mq`: POSIX message-queue wake-up latency, pmqtest-compatible.

use super::ipc_test::{self, IpcTest, Preparation, secs};
use super::progress::{ClassicLive, LiveLine};
use super::{CommandError, deliver};
use crate::cli::{MqArgs, OutputFormat};
use crate::ipc::Transport;
use crate::ipc::harness::Progress;
use crate::ipc::mq::MessageQueues;
use crate::report::classic_rt_tests::{ClassicRtTests, RtTestsFlavor};
use crate::report::console::ModernConsole;
use crate::report::json::{LatscopeJson, RtTestsJson};
use crate::report::{Exporter, TestConfig};
use crate::rt::sysinfo::SysInfo;
use crate::rt::tracefs::BreakTrace;
use crate::settings::MqSettings;

pub fn run(args: &MqArgs) -> Result<i32, CommandError> {
    let settings = MqSettings::from_args(args)?;
    for notice in &settings.notices {
        eprintln!("latscope: warning: {notice}");
    }
    let sysinfo = SysInfo::collect();
    let prep = Preparation::apply(settings.lock_memory, true, settings.hold_dma_latency)
        .map_err(CommandError::Runtime)?;
    let mut warnings = prep.warnings;
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
    let config = TestConfig {
        pairs: settings.plan.pairs.len(),
        tasks: settings.plan.tasks.as_str().to_string(),
        cross_cpu: false,
        policy: settings.policy.to_string(),
        priority: settings.priority,
        same_priority: settings.same_priority,
        interval_us: settings.interval_us,
        distance_us: settings.distance_us,
        loops: settings.loops,
        duration_s: secs(settings.plan.duration),
        receive_timeout_s: secs(settings.plan.receive_timeout),
        forced_send_delay_s: secs(settings.plan.forced_send_delay),
        breaktrace_us: settings.breaktrace_us,
        max_latency_us: settings.verdict.max_latency_us,
        mlockall: prep.memory.is_locked(),
        cpu_dma_latency: prep.dma_latency.describe(),
    };
    let transport = MessageQueues::new();
    let mut progress: Box<dyn Progress> = match settings.format {
        OutputFormat::Classic => Box::new(ClassicLive::new(
            &settings.plan.pairs,
            RtTestsFlavor::Pmqtest,
            settings.verdict.quiet,
        )),
        OutputFormat::Modern => Box::new(LiveLine::new(transport.name(), settings.verdict.quiet)),
    };
    let finished = ipc_test::run(IpcTest {
        transport: &transport,
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
    drop(prep.dma_latency);

    let (console, json): (&dyn Exporter, &dyn Exporter) = match settings.format {
        OutputFormat::Modern => (&ModernConsole, &LatscopeJson),
        OutputFormat::Classic => (
            &ClassicRtTests::new(RtTestsFlavor::Pmqtest),
            &RtTestsJson::new(RtTestsFlavor::Pmqtest),
        ),
    };
    deliver(
        &report,
        console,
        settings.format == OutputFormat::Classic,
        json,
        settings.verdict.json.as_ref(),
    )
    .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}
