//! The subcommands: each turns settings into a `Report`, prints it, writes
//! JSON and decides the exit code. The measuring itself is in `ipc`.

pub mod ipc_cmd;
pub mod ipc_test;
pub mod logdisk_cmd;
pub mod pair_test;
pub mod progress;
pub mod report_cmd;
pub mod suite;
pub mod timer_cmd;
pub mod validity;

use crate::cli::Command;
use crate::report::{Exporter, Report};
use crate::settings::{IpcSettings, JsonTarget, UsageError};
use std::io::Write;

/// How a command failed: usage errors exit 2 before measuring, run-time errors exit 1.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    Usage(#[from] UsageError),
    #[error("{0}")]
    Runtime(String),
}

pub const EXIT_OK: i32 = 0;
pub const EXIT_RUNTIME: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_LIMIT: i32 = 3;

/// Runs the subcommand the user asked for.
pub fn dispatch(command: &Command) -> Result<i32, CommandError> {
    use crate::report::classic_rt_tests::RtTestsFlavor;
    use pair_test::ClassicTool;
    let single = |name: &str, settings: IpcSettings, classic: ClassicTool| {
        let transport = crate::ipc::transport_named(name)
            .ok_or_else(|| CommandError::Runtime(format!("primitive {name} is not built in")))?;
        check_fork(transport.as_ref(), settings.plan.tasks)?;
        pair_test::run(transport.as_ref(), settings, classic)
    };
    match command {
        Command::Mq(a) => single(
            "mq",
            IpcSettings::from_mq_args(a)?,
            ClassicTool::RtTests(RtTestsFlavor::Pmqtest),
        ),
        Command::Sem(a) => single("sem", IpcSettings::from_sem_args(a)?, ClassicTool::Semtest),
        Command::Signal(a) => single(
            "signal",
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
            ClassicTool::RtTests(RtTestsFlavor::Sigwaittest),
        ),
        Command::Svsem(a) => single(
            "svsem",
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
            ClassicTool::RtTests(RtTestsFlavor::Svsematest),
        ),
        Command::Pipe(a)
        | Command::Eventfd(a)
        | Command::Futex(a)
        | Command::Unix(a)
        | Command::Svmq(a) => {
            let name = match command {
                Command::Pipe(_) => "pipe",
                Command::Eventfd(_) => "eventfd",
                Command::Futex(_) => "futex",
                Command::Unix(_) => "unix",
                _ => "svmq",
            };
            // Their classic lines are rt-tests' (as svsematest prints them).
            single(
                name,
                IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
                ClassicTool::RtTests(RtTestsFlavor::Svsematest),
            )
        }
        Command::Ipc(a) => ipc_cmd::run(a),
        Command::Timer(a) => timer_cmd::run(a),
        Command::Logdisk(a) => logdisk_cmd::run(a),
        Command::Suite(a) => suite::run(a),
        Command::Report(a) => report_cmd::run(a),
    }
}

/// `--fork` with a primitive that cannot connect two processes is bad usage.
pub fn check_fork(
    transport: &dyn crate::ipc::Transport,
    tasks: crate::ipc::harness::Tasks,
) -> Result<(), UsageError> {
    if tasks == crate::ipc::harness::Tasks::Processes && !transport.crosses_processes() {
        return Err(UsageError(format!(
            "{} cannot connect two processes: run it without -f/--fork",
            transport.name()
        )));
    }
    Ok(())
}

/// The exit code a finished report calls for.
pub fn exit_code_for(report: &Report) -> i32 {
    if report.tests.iter().any(|t| t.error.is_some()) {
        EXIT_RUNTIME
    } else if !report.series_over_limit().is_empty() {
        EXIT_LIMIT
    } else {
        EXIT_OK
    }
}

/// Writes `report` with `exporter` to the JSON target (see `write_output`).
pub fn write_json(
    target: &JsonTarget,
    exporter: &dyn Exporter,
    report: &Report,
) -> Result<(), String> {
    write_output(target, "JSON", &mut |out| exporter.write(report, out))
}

/// Writes `what` (for messages) with `write` to standard output or a file. A
/// file is written whole to a temporary name first, then renamed, so readers
/// never see half a file.
pub fn write_output(
    target: &JsonTarget,
    what: &str,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    match target {
        JsonTarget::Stdout => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            write(&mut lock)
                .and_then(|_| lock.flush())
                .map_err(|e| format!("could not write {what} to standard output: {e}"))
        }
        JsonTarget::File(path) => {
            // Short, so that it fits wherever a valid name does (NAME_MAX).
            let tmp = path.with_file_name(format!(".latscope-{}.tmp", std::process::id()));
            let result = (|| {
                // O_EXCL (which also refuses a symlink planted at that name):
                // a root-run tool must not write through someone else's link.
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)?;
                let mut buffered = std::io::BufWriter::new(&mut file);
                write(&mut buffered)?;
                buffered.flush()?;
                drop(buffered);
                file.sync_all()?;
                std::fs::rename(&tmp, path)
            })();
            if result.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            result.map_err(|e| format!("could not write {}: {e}", path.display()))
        }
    }
}

/// Shows the report and writes its JSON. People get `console` on standard
/// output; with `--json -` the JSON owns standard output instead, and the
/// warnings and verdict go to standard error. With `footer_to_stderr` (classic
/// formats, which must stay byte-exact) they go to standard error anyway.
/// Run-time errors of the tests end up as `latscope: error:` lines on stderr.
pub fn deliver(
    report: &Report,
    console: &dyn Exporter,
    footer_to_stderr: bool,
    json: &dyn Exporter,
    target: Option<&JsonTarget>,
) -> Result<(), String> {
    let json_to_stdout = matches!(target, Some(JsonTarget::Stdout));
    if !json_to_stdout {
        print(console, report);
    }
    if footer_to_stderr || json_to_stdout {
        let _ = crate::report::console::write_footer(report, &mut std::io::stderr());
    }
    if let Some(target) = target {
        write_json(target, json, report)?;
    }
    // A test that failed while running: its results are shown above; the
    // failure itself is the one error line a script sees on stderr (exit 1).
    for test in &report.tests {
        if let Some(e) = &test.error {
            eprintln!("latscope: error: {} failed while running: {e}", test.test);
        }
    }
    Ok(())
}

/// Prints with `exporter` to standard output, ignoring a closed pipe.
pub fn print(exporter: &dyn Exporter, report: &Report) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = exporter.write(report, &mut lock);
    let _ = lock.flush();
}
