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
use crate::settings::runner::{RunnerSettings, RunnerTool, go_list};
use std::io::Write;

/// klog.Fatalf's exit status.
const FATAL: i32 = 255;
/// klog's exit when its log file cannot be opened.
const LOG_FILE_FAILED: i32 = 2;

/// Where each line comes from in the runner's Go source (cnf-tests
/// `cmd/<tool>-runner/main.go` and `internal/node/node.go`), by message.
fn place(tool: RunnerTool, what: Line) -> (&'static str, u32) {
    use Line::*;
    let line = match (tool, what) {
        (_, Cmdline) => return ("node.go", 39),
        (_, Kernel) => return ("node.go", 46),
        (RunnerTool::Oslat, MainCpu) => 35,
        (RunnerTool::Oslat, Siblings) => 41,
        (RunnerTool::Oslat, TooFew) => 31,
        (RunnerTool::Oslat, Smt) => 50,
        (RunnerTool::Oslat, Running) => 73,
        (RunnerTool::Oslat, Ran) => 76,
        (RunnerTool::Cyclictest, MainCpu) => 34,
        (RunnerTool::Cyclictest, Siblings) => 40,
        (RunnerTool::Cyclictest, TooFew | Smt) => 49,
        (RunnerTool::Cyclictest, Running) => 77,
        (RunnerTool::Cyclictest, Ran) => 80,
        (RunnerTool::Hwlatdetect, Running) => 50,
        (RunnerTool::Hwlatdetect, _) => 53,
    };
    ("main.go", line)
}

#[derive(Clone, Copy)]
enum Line {
    MainCpu,
    Siblings,
    TooFew,
    Smt,
    Cmdline,
    Kernel,
    Running,
    Ran,
}

/// The runner's logger, with the runner's directory when `-add_dir_header`.
struct Log {
    klog: Klog,
    tool: RunnerTool,
    dir: bool,
}

impl Log {
    fn write(&mut self, severity: Severity, what: Line, message: &str) -> Result<(), LogFileError> {
        let (file, line) = place(self.tool, what);
        let file = match (self.dir, file) {
            (false, f) => f.to_string(),
            (true, "node.go") => "node/node.go".to_string(),
            (true, f) => format!("{}/{f}", self.tool.name()),
        };
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
    // klog names its files after the program's base name.
    let base = std::path::Path::new(&program)
        .file_name()
        .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let settings = match RunnerSettings::parse(tool, words, &base) {
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
        log.write(Severity::Info, Line::MainCpu, &format!("{name} main thread cpu: {main}"))?;
        let siblings = format!("{name} main thread's cpu siblings: {}", go_list(&cpus.first_core));
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
    log.write(Severity::Info, Line::Cmdline, &format!("Environment information: /proc/cmdline: {cmdline}"))?;
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    log.write(Severity::Info, Line::Kernel, &format!("Environment information: kernel version {release}"))?;
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
            log.write(Severity::Fatal, Line::Ran, &format!("failed to run {name} command {e}"))?;
            return Ok(FATAL);
        }
    };
    let out = String::from_utf8_lossy(&ended.output);
    if ended.status.success() {
        log.write(Severity::Info, Line::Ran, &format!("succeeded to run the {name} command: {out}"))?;
        return Ok(0);
    }
    let m = format!("failed to run {name} command; out: {out}; err: {}", go_exit_error(&ended.status));
    log.write(Severity::Fatal, Line::Ran, &m)?;
    Ok(FATAL)
}

/// How Go's `exec.ExitError` prints a status: `exit status 1`, `signal:
/// terminated`.
fn go_exit_error(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(libc::SIGTERM)) => "signal: terminated".to_string(),
        (None, Some(libc::SIGKILL)) => "signal: killed".to_string(),
        (None, Some(libc::SIGINT)) => "signal: interrupt".to_string(),
        (None, Some(sig)) => format!("signal: {sig}"),
        _ => status.to_string(),
    }
}
