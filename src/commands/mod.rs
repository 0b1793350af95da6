//! The subcommands: each turns settings into a `Report`, prints it, writes
//! its output files (JSON, CSV, Markdown) and decides the exit code. The
//! measuring itself is in `ipc`, `timer` and `logdisk`.

pub mod background;
pub mod cleanup;
pub mod compare;
pub mod doctor_cmd;
pub mod install_files;
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
use crate::report::csv::SeriesCsv;
use crate::report::markdown::MarkdownTable;
use crate::report::{Exporter, Report};
use crate::settings::{IpcSettings, JsonTarget, Outputs, UsageError};
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
/// `--max-latency` or a `--fail-if` threshold crossed; for `doctor`, a check is bad.
pub const EXIT_LIMIT: i32 = 3;
/// Nothing could be measured because this machine lacks what the test needs
/// (a kernel feature, a filesystem); the reason is in the report's warnings.
pub const EXIT_SKIPPED: i32 = 4;

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
        Command::Compare(a) => compare::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Doctor(a) => doctor_cmd::run(a),
        Command::Cleanup(a) => cleanup::run(a),
        Command::Completions(a) => install_files::completions(a),
        Command::Manpages(a) => install_files::manpages(a),
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

/// The exit code a finished report calls for: a run-time error (1) before a
/// crossed limit or threshold (3), before a run that measured nothing because
/// every test was skipped (4).
/// With `--trace-spikes`: whether this machine can trace, checked before
/// anything is set up or measured (root, tracefs, the events).
pub fn check_spike_tracing(threshold_us: Option<u64>) -> Result<(), CommandError> {
    if threshold_us.is_some() {
        crate::spikes::check_available().map_err(|e| {
            CommandError::Runtime(format!("--trace-spikes needs kernel tracing: {e}"))
        })?;
    }
    Ok(())
}

pub fn exit_code_for(report: &Report) -> i32 {
    // A skipped test keeps its reason in `error`; it is not a failure.
    if report
        .tests
        .iter()
        .any(|t| t.error.is_some() && t.end_reason != crate::report::EndReason::Skipped)
    {
        EXIT_RUNTIME
    } else if !report.series_over_limit().is_empty() || report.thresholds_crossed().next().is_some()
    {
        EXIT_LIMIT
    } else if !report.tests.is_empty()
        && report
            .tests
            .iter()
            .all(|t| t.end_reason == crate::report::EndReason::Skipped)
    {
        EXIT_SKIPPED
    } else {
        EXIT_OK
    }
}

/// Holds the `--fail-if` thresholds against every series of the finished
/// run, records the checks in the report and sets its exit code.
pub fn judge(report: &mut Report, thresholds: &[crate::threshold::Threshold]) {
    report.thresholds = crate::threshold::check_report(thresholds, report);
    report.exit_code = exit_code_for(report);
}

/// Writes `report` with `exporter` to `target` (a file is written whole to a
/// temporary name first, then renamed, so readers never see half a file and
/// a rewrite replaces it atomically).
pub fn write_output(
    target: &JsonTarget,
    exporter: &dyn Exporter,
    report: &Report,
) -> Result<(), String> {
    write_with(target, &mut |out| exporter.write(report, out))
}

/// Writes what `write` produces to the target: standard output, or a file
/// written whole to a temporary name first, then renamed.
pub fn write_with(
    target: &JsonTarget,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    match target {
        // A closed pipe or a failure is handled by rt::stdio (quiet end, or
        // one line and exit 1 at the end).
        JsonTarget::Stdout => {
            let mut out = crate::rt::stdio::out();
            write(&mut out)
                .and_then(|_| out.flush())
                .map_err(|e| format!("could not write to standard output: {e}"))
        }
        // The rule for links, devices and regular files is in rt::outfile.
        JsonTarget::File(path) => crate::rt::outfile::write_output_file(path, write)
            .map_err(|e| format!("could not write {}: {e}", path.display())),
    }
}

/// Writes the report to every output file of `outputs` (not to standard
/// output): what `suite` does after each test, so that the results so far
/// survive a later test's crash. Failures are warnings: the final
/// `deliver` reports them as errors.
pub fn write_files(outputs: &Outputs, json: &dyn Exporter, report: &Report) {
    for (option, target, exporter) in exporters(outputs, json) {
        // Only files replaced whole: a device, FIFO or standard stream named
        // as a path would get one copy per test (the final `deliver` writes it).
        if matches!(target, JsonTarget::File(p) if matches!(
            crate::rt::outfile::classify(p),
            Ok(crate::rt::outfile::Destination::Replace(_))
        )) && let Err(e) = write_output(target, exporter, report)
        {
            eprintln!("latscope: warning: {option}: {e}");
        }
    }
}

/// Each requested output with the exporter that writes it.
fn exporters<'a>(
    outputs: &'a Outputs,
    json: &'a dyn Exporter,
) -> Vec<(&'static str, &'a JsonTarget, &'a dyn Exporter)> {
    // In the order of `Outputs::named`.
    let formats: [&dyn Exporter; 3] = [json, &SeriesCsv, &MarkdownTable];
    outputs
        .named()
        .into_iter()
        .zip(formats)
        .filter_map(|((option, target), exporter)| Some((option, target?, exporter)))
        .collect()
}

/// Shows the report and writes its output files. People get `console` on
/// standard output; when one output (`--json -`, `--csv -`, `--markdown -`)
/// owns standard output instead, the warnings and verdict go to standard
/// error. With `footer_to_stderr` (classic formats, which must stay
/// byte-exact) they go to standard error anyway. `json` is the JSON layout
/// (latscope's, or the original tool's in classic format).
/// Run-time errors of the tests end up as `latscope: error:` lines on stderr.
pub fn deliver(
    report: &Report,
    console: &dyn Exporter,
    footer_to_stderr: bool,
    json: &dyn Exporter,
    outputs: &Outputs,
) -> Result<(), String> {
    let stdout_taken = outputs.to_stdout();
    if !stdout_taken {
        print(console, report);
    }
    if footer_to_stderr || stdout_taken {
        let _ = crate::report::console::write_footer(report, &mut std::io::stderr());
    }
    let mut failed = Vec::new();
    for (option, target, exporter) in exporters(outputs, json) {
        if let Err(e) = write_output(target, exporter, report) {
            failed.push(format!("{option}: {e}"));
        }
    }
    // A test that failed while running: its results are shown above; the
    // failure itself is the one error line a script sees on stderr (exit 1).
    for test in &report.tests {
        match (&test.error, test.end_reason) {
            (Some(e), crate::report::EndReason::Skipped) => {
                eprintln!("latscope: {} skipped: {e}", test.test)
            }
            (Some(e), _) => eprintln!("latscope: error: {} failed while running: {e}", test.test),
            (None, _) => {}
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// Prints with `exporter` to standard output (a closed pipe or a failure is
/// handled by rt::stdio).
pub fn print(exporter: &dyn Exporter, report: &Report) {
    let mut out = crate::rt::stdio::out();
    let _ = exporter.write(report, &mut out);
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::EndReason;
    use crate::report::testdata::sample_report;

    #[test]
    fn exit_codes_in_order_of_precedence() {
        let mut report = sample_report();
        assert_eq!(exit_code_for(&report), EXIT_OK);
        report.tests[0].end_reason = EndReason::Skipped;
        assert_eq!(exit_code_for(&report), EXIT_SKIPPED, "every test skipped");
        let mut other = report.tests[0].clone();
        other.end_reason = EndReason::LoopsDone;
        report.tests.push(other);
        assert_eq!(exit_code_for(&report), EXIT_OK, "one test ran");
        judge(&mut report, &[crate::threshold::parse("max>1us").unwrap()]);
        assert_eq!(report.exit_code, EXIT_LIMIT);
        report.tests[1].error = Some("peer died".into());
        assert_eq!(exit_code_for(&report), EXIT_RUNTIME);
    }
}
