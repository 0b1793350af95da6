//! Delivering a finished report: the console for people, every output file
//! (JSON, CSV, Markdown, JUnit, Prometheus text), and the one error line per
//! failed test.

use super::Presentation;
use crate::report::cells::{JsonHeader, rt_tests_json_header};
use crate::report::csv::SeriesCsv;
use crate::report::junit::JunitXml;
use crate::report::markdown::MarkdownTable;
use crate::report::prom::PromText;
use crate::report::rteval_xml::RtevalXml;
use crate::report::{Exporter, Report};
use crate::settings::{OutputTarget, Outputs, ReportFormat};
use std::io::Write;

/// An rt-tests tool's `--json` file that could not be written.
#[derive(Debug)]
pub struct JsonFailure {
    /// The line(s) for stderr, newline-terminated.
    pub message: String,
    /// The exit status.
    pub code: i32,
    /// The file was opened and writing it failed (a full disk, `/dev/full`).
    /// The original tools check only their `fopen`: they say nothing and
    /// exit 0 with the file empty or cut short. latscope says so (one line,
    /// exit 1) but, like them, after the run's usual output (docs/compat.md).
    pub after_open: bool,
}

impl JsonFailure {
    /// rt-tests' `err_exit(errno, "Failed to open '%s'\n", file)`: the
    /// line, `: ` and the reason, and the errno as the exit code.
    fn open(path: &str, reason: &str, errno: i32) -> Self {
        Self {
            message: format!("Failed to open '{path}'\n: {reason}\n"),
            code: errno,
            after_open: false,
        }
    }

    /// The file opened but its writing failed: one line (the name's
    /// control characters escaped), exit 1.
    fn write(path: &str, reason: &str) -> Self {
        Self {
            message: format!(
                "Failed to write '{}': {reason}\n",
                crate::units::escape_line(path)
            ),
            code: 1,
            after_open: true,
        }
    }

    /// Says the failure on stderr; the exit status to end with.
    pub fn report(&self) -> i32 {
        let _ = std::io::stderr().write_all(self.message.as_bytes());
        self.code
    }
}

/// What an rt-tests tool's JSON says of its run.
pub struct RunTimes<'a> {
    /// The command line as typed.
    pub cmdline: &'a str,
    pub start_time: &'a str,
    pub end_time: &'a str,
}

/// An rt-tests 2.40 tool's `--json` file (its `rt_write_json`): the header
/// (the run, uname, /sys/kernel/realtime) then the tool's own part, `body`;
/// or what the tool says when it cannot write it.
pub fn write_rt_tests_json(path: &str, run: &RunTimes, body: &str) -> Result<(), JsonFailure> {
    write_rt_tests_json_returning(path, run, 0, body)
}

/// `write_rt_tests_json` with the run's `return_code` (pi_stress and
/// rt-migrate-test write 1 or their failed check's code there).
pub fn write_rt_tests_json_returning(
    path: &str,
    run: &RunTimes,
    return_code: i32,
    body: &str,
) -> Result<(), JsonFailure> {
    let uts =
        nix::sys::utsname::uname().map_err(|e| JsonFailure::open(path, e.desc(), e as i32))?;
    let text_of = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    let header = JsonHeader {
        cmdline: run.cmdline,
        start_time: run.start_time,
        end_time: run.end_time,
        return_code,
        sysname: &text_of(uts.sysname()),
        nodename: &text_of(uts.nodename()),
        release: &text_of(uts.release()),
        version: &text_of(uts.version()),
        machine: &text_of(uts.machine()),
        realtime: std::path::Path::new("/sys/kernel/realtime").exists(),
    };
    let text = rt_tests_json_header(&header) + body;
    // Whether the file opened: the writer runs only once it has.
    let mut opened = false;
    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
        opened = true;
        w.write_all(text.as_bytes())
    })
    .map_err(|e| {
        // strerror's words and the errno, as err_exit; latscope's own
        // refusals (rt::outfile) have none: a directory is EISDIR there.
        let errno = e
            .raw_os_error()
            .or_else(|| std::path::Path::new(path).is_dir().then_some(libc::EISDIR));
        let reason = match errno {
            Some(n) => nix::errno::Errno::from_raw(n).desc().to_string(),
            None => e.to_string(),
        };
        match (opened, errno) {
            (true, _) => JsonFailure::write(path, &reason),
            (false, Some(n)) => JsonFailure::open(path, &reason, n),
            (false, None) => JsonFailure::open(path, &reason, 1),
        }
    })
}

/// Writes `report` with `exporter` to `target` (a file is written whole to a
/// temporary name first, then renamed, so readers never see half a file and
/// a rewrite replaces it atomically).
pub fn write_output(
    target: &OutputTarget,
    exporter: &dyn Exporter,
    report: &Report,
) -> Result<(), String> {
    write_with(target, &mut |out| exporter.write(report, out))
}

/// Writes what `write` produces to the target: standard output, or a file
/// written whole to a temporary name first, then renamed.
pub fn write_with(
    target: &OutputTarget,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    match target {
        OutputTarget::Stdout => {
            // A closed pipe or a failure is handled by rt::stdio (quiet end, or
            // one line and exit 1 at the end).
            let mut out = crate::rt::stdio::out();
            write(&mut out)
                .and_then(|_| out.flush())
                .map_err(|e| format!("could not write to standard output: {e}"))
        }
        // The rule for links, devices and regular files is in rt::outfile.
        OutputTarget::File(path) => crate::rt::outfile::write_output_file(path, write)
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
        if matches!(target, OutputTarget::File(p) if matches!(
            crate::rt::outfile::classify(p),
            Ok(crate::rt::outfile::Destination::Replace(_))
        )) && let Err(e) = write_output(target, exporter, report)
        {
            crate::rt::stdio::note_line(&format!("latscope: warning: {option}: {e}"));
        }
    }
}

/// The exporter that writes `format`; `json` is the presentation's JSON
/// layout (latscope's, or the original tool's).
fn exporter_of(format: ReportFormat, json: &dyn Exporter) -> &dyn Exporter {
    match format {
        ReportFormat::Json => json,
        ReportFormat::Csv => &SeriesCsv,
        ReportFormat::Markdown => &MarkdownTable,
        ReportFormat::Junit => &JunitXml,
        ReportFormat::Prom => &PromText,
        ReportFormat::RtevalXml => &RtevalXml,
    }
}

/// Each requested output with its option and the exporter that writes it.
fn exporters<'a>(
    outputs: &'a Outputs,
    json: &'a dyn Exporter,
) -> impl Iterator<Item = (&'static str, &'a OutputTarget, &'a dyn Exporter)> {
    outputs
        .files()
        .map(move |(format, target)| (format.option(), target, exporter_of(format, json)))
}

/// Shows the report and writes its output files. People get the
/// presentation's console on standard output; when one output (`--json -`,
/// `--csv -`, `--markdown -`) owns standard output instead, the warnings and
/// verdict go to standard error. A classic console (which must stay
/// byte-exact) sends them to standard error anyway. Run-time errors of the
/// tests end up as `latscope: error:` lines on stderr.
pub fn deliver(
    report: &Report,
    presentation: &Presentation,
    outputs: &Outputs,
) -> Result<(), String> {
    let Presentation {
        console,
        classic: footer_to_stderr,
        json,
    } = presentation;
    let (console, json) = (console.as_ref(), json.as_ref());
    let footer_to_stderr = *footer_to_stderr;
    let stdout_taken = outputs.to_stdout();
    if !stdout_taken {
        print(console, report);
    }
    if footer_to_stderr {
        let _ = crate::report::console::write_footer_unwrapped(report, &mut std::io::stderr());
    } else if stdout_taken {
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

/// Shows a snapshot (SIGUSR1) of the run going on: one line saying so and
/// how long the run has gone, then the presentation's console summary of
/// the results so far. On standard output, where people look, unless an
/// output owns it (`--json -` and the like) or the console is an original
/// tool's exact output (which must stay byte-exact for the parsers written
/// against it): then on standard error, so no machine format is broken.
pub fn show_snapshot(
    report: &Report,
    presentation: &Presentation,
    outputs: &Outputs,
    elapsed: std::time::Duration,
) {
    let heading = format!(
        "latscope: snapshot after {} (SIGUSR1; the run goes on)\n",
        crate::units::format_run_time(elapsed)
    );
    let to_stderr = presentation.classic || outputs.to_stdout();
    let shown = |out: &mut dyn Write| {
        out.write_all(heading.as_bytes())?;
        presentation.console.write(report, out)?;
        out.flush()
    };
    let _ = if to_stderr {
        shown(&mut std::io::stderr().lock())
    } else {
        shown(&mut crate::rt::stdio::out())
    };
}

/// Prints with `exporter` to standard output (a closed pipe or a failure is
/// handled by rt::stdio).
pub fn print(exporter: &dyn Exporter, report: &Report) {
    let mut out = crate::rt::stdio::out();
    let _ = exporter.write(report, &mut out);
    let _ = out.flush();
}
