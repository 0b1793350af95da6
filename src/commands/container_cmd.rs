//! `latscope container cyclictest|oslat|hwlatdetect|timerlat`: the
//! container-perf-tools entrypoints (their `cmd.sh`). The settings come from
//! the environment (settings::container), the CPUs from rt::pod_cpus (right
//! where cmd.sh's string edit mangles the list), then cmd.sh's lines
//! (`allowed cpu list:`, `new cpu list:`, the command) and the tool itself,
//! latscope under the tool's name (rt::self_exec), its output as it is.
//!
//! Exit: the tool's own status; 4 when the pod's CPUs cannot host the test
//! (the runners' rule); 2 for a bad variable. Like cmd.sh, which ends in
//! `sleep infinity`, it then sleeps until stopped (`PAUSE=n`: it does not);
//! `manual=y` sleeps instead of running. SIGTERM or Ctrl-C end either sleep,
//! and during the run reach the tool, which reports and ends.

use crate::cli::{ContainerArgs, ContainerTool as Tool};
use crate::pipeline::{CommandError, EXIT_OK, EXIT_SKIPPED};
use crate::rt::pod_cpus::{self, PodCpus};
use crate::rt::self_exec::{self, Output};
use crate::rt::stdio::print;
use crate::settings::container::{ContainerSettings, ContainerTool};
use crate::units::cpu_list;

/// `latscope container TOOL`.
pub fn run(args: &ContainerArgs) -> Result<i32, CommandError> {
    let tool = match args.tool {
        Tool::Cyclictest => ContainerTool::Cyclictest,
        Tool::Oslat => ContainerTool::Oslat,
        Tool::Hwlatdetect => ContainerTool::Hwlatdetect,
        Tool::Timerlat => ContainerTool::Timerlat,
    };
    let settings = ContainerSettings::from_env(tool, &|name| std::env::var(name).ok())?;
    // A load that cannot start is refused before anything runs.
    let stress = if settings.stress {
        crate::load::from_args(&[crate::load::DEFAULT_SPEC.to_string()])
            .map_err(|e| crate::settings::UsageError(format!("stress=true: {}", e.0)))?
    } else {
        Vec::new()
    };
    let cpus = pod_cpus::live();
    print(&format!(
        "allowed cpu list: {}\n",
        cpu_list(&allowed_list(&cpus))
    ));
    let (main, measured) = match choose(tool, &settings, &cpus) {
        Ok(choice) => choice,
        Err(why) => {
            crate::rt::stdio::note_line(&format!("latscope: {why}"));
            return Ok(EXIT_SKIPPED);
        }
    };
    let command = settings.command(main, &measured);
    print(&format!("{}{}\n", tool.command_label(), command.join(" ")));
    if settings.manual {
        print("manual=y: the test is not run; stop the container (SIGTERM) to end\n");
        self_exec::sleep_until_stopped(None);
        return Ok(EXIT_OK);
    }
    if !settings.delay.is_zero() {
        print(&format!(
            "sleep {} before test\n",
            crate::units::format_duration(settings.delay)
        ));
        if self_exec::sleep_until_stopped(Some(settings.delay)).is_some() {
            return Ok(EXIT_OK);
        }
    }
    let loads =
        crate::load::process::Loads::start(&stress, &measured).map_err(CommandError::Runtime)?;
    let (program, words) = command.split_first().expect("a command has its program");
    let ended = self_exec::run_as(program, words, Output::Inherit);
    drop(loads);
    let ended = ended.map_err(CommandError::Runtime)?;
    if settings.pause && ended.stopped_by.is_none() {
        crate::rt::stdio::note_line(
            "latscope: the test has ended; pausing for the log to be read (PAUSE=n: exit instead); SIGTERM ends it",
        );
        self_exec::sleep_until_stopped(None);
    }
    Ok(ended.code())
}

/// What cmd.sh prints as the allowed list: the CPUs this process may use.
fn allowed_list(cpus: &PodCpus) -> Vec<usize> {
    cpus.usable.clone()
}

/// The main thread's CPU and the CPUs measured, with cmd.sh's `new cpu
/// list:` line and latscope's notes on what was left out; or why the pod's
/// CPUs cannot host the test.
fn choose(
    tool: ContainerTool,
    settings: &ContainerSettings,
    cpus: &PodCpus,
) -> Result<(usize, Vec<usize>), String> {
    let main = cpus.housekeeping.first().copied().unwrap_or(0);
    if !tool.keeps_housekeeping() {
        let measured = if settings.all_cpus {
            crate::rt::sysinfo::online_cpus()
        } else {
            cpus.usable.clone()
        };
        return Ok((main, measured));
    }
    if let Some(short) = cpus.shortfall() {
        return Err(short.describe(cpus));
    }
    for note in &cpus.notes {
        print(&format!("cpus: {note}\n"));
    }
    print(&format!("new cpu list: {}\n", cpu_list(&cpus.measured)));
    Ok((main, cpus.measured.clone()))
}
