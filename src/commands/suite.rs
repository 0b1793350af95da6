//! `latscope suite`: the main job. Runs every available test briefly (the
//! IPC primitives, the timer, a log-disk writer) and prints one overview
//! table of this machine's latencies.

use super::ipc_cmd::{
    DEFAULT_INTERVAL_US, DEFAULT_RT_PRIORITY, SequenceSpec, run_sequence, sequence,
};
use super::ipc_test::{self, Preparation};
use super::{CommandError, deliver, logdisk_cmd, timer_cmd, write_files};
use crate::cli::SuiteArgs;
use crate::ipc::PRIMITIVES;
use crate::ipc::harness::{Mode, Tasks};
use crate::report::EndReason;
use crate::report::console::{
    Table, end_reason_text, latency_cell, machine_line, percentile_cell, write_footer,
};
use crate::report::json::LatscopeJson;
use crate::report::{Exporter, Report};
use crate::rt::sched::{self, Policy};
use crate::rt::sysinfo::SysInfo;
use crate::settings::timer::TimerSettings;
use crate::settings::{PairLayout, Placement, UsageError, VerdictSettings};
use crate::units::format_run_time;
use crate::units::parse_duration;
use std::io::Write;
use std::time::Duration;

/// Time the timer test needs besides measuring (threads, report).
const TIMER_SETUP_RESERVE: Duration = Duration::from_millis(20);
/// Time the log-disk test needs besides measuring (two 1 MiB files written
/// out and removed).
const LOGDISK_SETUP_RESERVE: Duration = Duration::from_millis(60);

pub fn run(args: &SuiteArgs) -> Result<i32, CommandError> {
    let total = parse_duration(&args.duration, 1_000_000_000)
        .map_err(|e| UsageError(format!("--duration: {e}")))?;
    if total < Duration::from_millis(100) {
        return Err(UsageError("--duration must be at least 100ms".to_string()).into());
    }
    let verdict = VerdictSettings::from_args(&args.verdict)?;
    // The whole command, checks included, ends within --duration.
    let started = std::time::Instant::now();
    let sysinfo = SysInfo::collect();
    let realtime = sched::can_use_realtime();
    let mut warnings = Vec::new();
    if !realtime {
        eprintln!(
            "latscope: note: real-time priority is not available to this user; measuring at normal priority ({})",
            sched::RT_PRIVILEGE_FIX
        );
    }
    let mut prep = Preparation::apply(true, false, true, &verdict.loads, &sched::allowed_cpus())
        .map_err(CommandError::Runtime)?;
    warnings.extend(prep.warnings.iter().cloned());

    let (policy, priority) = if realtime {
        (Policy::Fifo, DEFAULT_RT_PRIORITY as i32)
    } else {
        (Policy::Other, 0)
    };
    // One pinned pair per usable CPU, all at the same priority (-S).
    let layout = PairLayout {
        count: sched::allowed_cpus().len() as u64,
        placement: Placement::Spread,
        policy,
        priority,
        same_priority: true,
    };
    let items = sequence(&SequenceSpec {
        primitives: &PRIMITIVES,
        modes: &[Mode::OneWay],
        layout: &layout,
        timing: (DEFAULT_INTERVAL_US, 0, None),
        tasks: Tasks::Threads,
        cross_cpu: false,
        // Set per test from the time left (see run_sequence).
        per_test: None,
        max_latency_us: verdict.max_latency_us,
        spike_threshold_ns: None,
        prep: &prep,
    })?;
    // The timer and the log-disk tests get one share of the time each, like
    // each IPC test.
    let shares = PRIMITIVES.len() as u32 + 2;
    let budget = total.saturating_sub(started.elapsed());
    // Every output file is rewritten whole after each test, with the tests
    // so far: a crash of a later test leaves the earlier results.
    let outputs = &verdict.outputs;
    let write_so_far = |done: &[ipc_test::FinishedTest], warnings: &[String]| {
        let mut report = ipc_test::assemble_report(
            done.to_vec(),
            sysinfo.clone(),
            warnings.to_vec(),
            &prep.memory,
        );
        prep.background.record_into(&mut report);
        write_files(outputs, &LatscopeJson, &report);
    };
    let mut finished = run_sequence(
        items,
        Some(budget / shares * (shares - 2)),
        verdict.quiet,
        &mut |done| write_so_far(done, &warnings),
    );
    let interrupted = |finished: &[ipc_test::FinishedTest]| {
        finished
            .last()
            .is_some_and(|t| t.result.end_reason == EndReason::Interrupted)
    };
    if !interrupted(&finished) {
        let left = (total
            .saturating_sub(started.elapsed())
            .saturating_sub(TIMER_SETUP_RESERVE + LOGDISK_SETUP_RESERVE)
            / 2)
        .max(Duration::from_millis(10));
        let settings = TimerSettings::for_suite(policy, priority, left);
        if !verdict.quiet {
            eprintln!(
                "latscope: running timer (one thread per CPU, {} us period) for {} ...",
                settings.period_us,
                format_run_time(left)
            );
        }
        let mut progress = timer_cmd::progress_line(verdict.quiet);
        match timer_cmd::measure(&settings, &prep, progress.as_mut()) {
            Ok((done, own_warnings, _)) => {
                finished.push(done);
                warnings.extend(own_warnings);
            }
            Err(e) => finished.push(timer_cmd::failed(&settings, &prep, e)),
        }
        write_so_far(&finished, &warnings);
    }
    if !interrupted(&finished) {
        let left = total
            .saturating_sub(started.elapsed())
            .saturating_sub(LOGDISK_SETUP_RESERVE)
            .max(Duration::from_millis(10));
        if !verdict.quiet {
            eprintln!(
                "latscope: running logdisk (4 KiB O_DSYNC writes, 2 files of 1 MiB in a private directory here) for {} ...",
                format_run_time(left)
            );
        }
        let mut progress = logdisk_cmd::ProgressLine::new(verdict.quiet);
        match logdisk_cmd::measure_for_suite(left, &mut progress) {
            Ok(done) => finished.extend(done),
            Err(why) => {
                let note = format!("logdisk skipped: {why}");
                eprintln!("latscope: note: {note}");
                warnings.push(note);
            }
        }
    }
    let mut report = ipc_test::assemble_report(finished, sysinfo, warnings, &prep.memory);
    prep.finish(&mut report);
    drop(prep);
    super::judge(&mut report, &verdict.fail_if);
    deliver(
        &report,
        &SuiteOverview,
        false,
        &LatscopeJson,
        &verdict.outputs,
    )
    .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}

/// One row per test: the overall (all pairs merged) statistics.
pub struct SuiteOverview;

impl Exporter for SuiteOverview {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "latscope suite on {}", machine_line(&report.sysinfo))?;
        let mut table = Table::new(&[
            "Test",
            "What one sample spans",
            "Series",
            "Policy",
            "Samples",
            "Min",
            "Avg",
            "P99",
            "P99.9",
            "P99.99",
            "Max",
            "Overruns",
            "Ended",
        ]);
        for t in &report.tests {
            let o = &t.overall;
            let v = |ns: i64| latency_cell(o, ns);
            let p = |q: f64| percentile_cell(o, q);
            table.row(vec![
                t.test.clone(),
                format!("{} ({})", t.description, t.mode),
                t.series.len().to_string(),
                format!("{} {}", t.config.policy, t.config.priority),
                o.samples.to_string(),
                v(o.min_ns),
                v(o.avg_ns.round() as i64),
                p(99.0),
                p(99.9),
                p(99.99),
                v(o.max_ns),
                t.series.iter().map(|s| s.overruns).sum::<u64>().to_string(),
                end_reason_text(t).to_string(),
            ]);
        }
        write!(out, "{}", table.render())?;
        write_footer(report, out)
    }
}
