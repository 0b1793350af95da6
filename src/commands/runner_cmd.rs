//! `latscope runner oslat|cyclictest|hwlatdetect` and the names
//! `oslat-runner`, `cyclictest-runner`, `hwlatdetect-runner`: the cnf-tests
//! runners OpenShift's node-tuning latency test starts. Their flags and
//! klog's in Go's syntax (settings::runner), klog's lines where klog's
//! flags send them (rt::klog), the CPU rule of rt::pod_cpus (the main
//! thread's CPU and its SMT siblings left out; 2 CPUs, 4 with SMT), then the
//! tool (latscope under its name, rt::self_exec), whose output, both streams
//! in one, is logged as the runners log Go's `CombinedOutput`: in an `I`
//! line when it succeeds, in klog.Fatalf's `F` line (exit 255) when not.

use crate::pipeline::CommandError;
use crate::rt::klog::{Klog, LogFileError, Severity};
use crate::rt::self_exec::{self, Output};
use crate::settings::goflag::{self, GoFlagUsage};
use crate::settings::runner::{Line, RunnerSettings, RunnerTool, go_list, source_place};
use std::io::Write;

/// klog.Fatalf's exit status.
const FATAL: i32 = 255;
/// klog's exit when its log file cannot be opened.
const LOG_FILE_FAILED: i32 = 2;

/// The runner's logger, with the runner's directory when `-add_dir_header`.
struct Log {
    klog: Klog,
    tool: RunnerTool,
    dir: bool,
}

impl Log {
    fn write(&mut self, severity: Severity, what: Line, message: &str) -> Result<(), LogFileError> {
        let (file, line) = source_place(self.tool, what, self.dir);
        self.klog.log(severity, (&file, line), message)
    }
}

/// `latscope runner TOOL WORDS` (or TOOL-runner WORDS).
pub fn run(tool: RunnerTool, words: &[String]) -> Result<i32, CommandError> {
    // clap hands over the words after an explicit `--` too; the runner's
    // name always puts one first.
    let words = match words.first().map(String::as_str) {
        Some("--") => &words[1..],
        _ => words,
    };
    let program = crate::cli::getopt_program_name(tool.name());
    let settings = match RunnerSettings::parse(tool, words, &program) {
        Ok(s) => s,
        Err(usage) => {
            let text = goflag::usage(&program, &tool.flags());
            let (line, code) = match usage {
                GoFlagUsage::Help => (String::new(), 0),
                GoFlagUsage::Bad(m) => (format!("{m}\n"), 2),
            };
            let _ = std::io::stderr().write_all(format!("{line}{text}").as_bytes());
            return Ok(code);
        }
    };
    let mut log = Log {
        klog: Klog::new(settings.klog.clone()),
        tool,
        dir: settings.add_dir_header,
    };
    match run_logged(&settings, &mut log) {
        Ok(code) => Ok(code),
        Err(LogFileError(e)) => {
            let _ = writeln!(std::io::stderr(), "log: exiting because of error: {e}");
            Ok(LOG_FILE_FAILED)
        }
    }
}

fn run_logged(settings: &RunnerSettings, log: &mut Log) -> Result<i32, LogFileError> {
    let tool = settings.tool;
    let name = tool.tool();
    let (main, measured) = if tool.keeps_housekeeping() {
        let cpus = crate::rt::pod_cpus::live();
        if cpus.usable.len() < 2 {
            let m = format!(
                "the amount of requested CPUs less than 2, the {name} requires at least 2 CPUs to run"
            );
            log.write(Severity::Fatal, Line::TooFew, &m)?;
            return Ok(FATAL);
        }
        let main = cpus.usable[0];
        let m = format!("{name} main thread cpu: {main}");
        log.write(Severity::Info, Line::MainCpu, &m)?;
        let siblings = format!(
            "{name} main thread's cpu siblings: {}",
            go_list(&cpus.first_core)
        );
        log.write(Severity::Info, Line::Siblings, &siblings)?;
        if cpus.shortfall().is_some() {
            let m = format!("when hyper-threading enabled {name} pod requires at least 4 CPUs");
            log.write(Severity::Fatal, Line::Smt, &m)?;
            return Ok(FATAL);
        }
        (main, cpus.measured.clone())
    } else {
        (0, Vec::new())
    };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let m = format!("Environment information: /proc/cmdline: {cmdline}");
    log.write(Severity::Info, Line::Cmdline, &m)?;
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let m = format!("Environment information: kernel version {release}");
    log.write(Severity::Info, Line::Kernel, &m)?;
    if settings.start_delay_s > 0 {
        let delay = std::time::Duration::from_secs(settings.start_delay_s as u64);
        if let Some(sig) = self_exec::sleep_until_stopped(Some(delay)) {
            // Go's runner is killed by the signal: the test never ran.
            return Ok(128 + sig);
        }
    }
    let args = settings.tool_args(main, &measured);
    let running = format!("running {name} command with arguments {}", go_list(&args));
    log.write(Severity::Info, Line::Running, &running)?;
    let ended = match self_exec::run_as(name, &args, Output::Collect) {
        Ok(ended) => ended,
        Err(e) => {
            let m = format!("failed to run {name} command {e}");
            log.write(Severity::Fatal, Line::Ran, &m)?;
            return Ok(FATAL);
        }
    };
    let out = String::from_utf8_lossy(&ended.output);
    if ended.status.success() {
        let m = format!("succeeded to run the {name} command: {out}");
        log.write(Severity::Info, Line::Ran, &m)?;
        return Ok(0);
    }
    let m = format!(
        "failed to run {name} command; out: {out}; err: {}",
        ended.go_error()
    );
    log.write(Severity::Fatal, Line::Ran, &m)?;
    Ok(FATAL)
}
