//! The modern console output: one aligned table per test, then warnings and the
//! verdict. Units are chosen per value (ns, us, ms, s).

// The console exporter's own parts: the timer's and the log-disk test's tables.
pub mod compare;
pub mod hwlat;
pub mod logdisk;
pub mod noise;
pub mod overview;
pub mod timer;

use super::cells::{
    Table, cpus_cell, end_reason_text, interrupted_before_measuring, latency_cell, percentile_cell,
};
use super::{Exporter, Report, Series, TestResult};
use crate::units::format_ns;
use std::io::Write;

pub fn series_table(test: &TestResult) -> Table {
    let mut table = Table::new(&[
        "Pair", "CPU", "Prio", "Interval", "Samples", "Timeouts", "Overruns", "Min", "Avg", "P50",
        "P99", "P99.9", "Max",
    ])
    .dropping(&[
        "P50", "P99.9", "Interval", "Timeouts", "Prio", "Avg", "Samples", "Overruns",
    ]);
    for s in &test.series {
        let Some(pair) = s.ipc_pair() else { continue };
        let l = &s.latency;
        let p = |q: f64| percentile_cell(l, q);
        table.row(vec![
            s.label.clone(),
            cpus_cell(s),
            format!("{} {}", s.policy, s.priority),
            format_ns(pair.interval_us.saturating_mul(1000) as i64),
            l.samples.to_string(),
            pair.timeouts.to_string(),
            s.overruns.to_string(),
            latency_cell(l, l.min_ns),
            latency_cell(l, l.avg_ns.round() as i64),
            p(50.0),
            p(99.0),
            p(99.9),
            latency_cell(l, l.max_ns),
        ]);
    }
    table
}

/// Warnings, the end reason when it is not a normal end, and the limit
/// verdict, each line wrapped to fit a 100-column terminal.
pub fn write_footer(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    for line in footer_lines(report) {
        note(out, &line)?;
    }
    Ok(())
}

/// `write_footer` with every note on one line, as the original tools'
/// exact output sends it to standard error (scripts read it line by line).
pub fn write_footer_unwrapped(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    for line in footer_lines(report) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The footer's notes, one per line (unwrapped).
fn footer_lines(report: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    for load in &report.loads {
        lines.push(format!("load: {}", load.describe()));
    }
    for test in &report.tests {
        if let Some(error) = &test.error {
            if test.end_reason == crate::report::EndReason::Skipped {
                lines.push(format!("skipped: {}: {error}", test.test));
            } else {
                lines.push(format!("error: {} stopped early: {error}", test.test));
            }
        }
    }
    for test in &report.tests {
        if let Some(spikes) = &test.spikes {
            // `ipc --mode both` runs each primitive twice: say which run.
            let repeated = report.tests.iter().filter(|t| t.test == test.test).count() > 1;
            let name = crate::report::test_key(&test.test, &test.mode, None, repeated);
            lines.push(format!("spikes: {name}: {}", spikes.count_line()));
            if let Some(line) = spikes.worst_line() {
                lines.push(format!("spikes: {name}: {line}"));
            }
        }
    }
    lines.extend(report.deadline.iter().map(|d| d.line()));
    lines.extend(report.idle_states.iter().map(|i| i.line()));
    lines.extend(report.actions.iter().flat_map(|a| a.lines()));
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    lines.extend(where_this_run_falls(report));
    lines.extend(crate::report::cells::verdict::verdict_lines(report));
    lines
}

/// One note under the tables (a warning, the context line, a verdict),
/// wrapped to fit a 100-column terminal.
pub fn note(out: &mut dyn Write, line: &str) -> std::io::Result<()> {
    writeln!(out, "{}", crate::units::wrap_line(line))
}

/// One line of the console that is no note (a test's title, a table's
/// caption): whole as scripts have always read it, wrapped only when the
/// output is fitted to a terminal (`crate::units::fit_line`).
pub fn fitted(out: &mut dyn Write, line: &str) -> std::io::Result<()> {
    writeln!(out, "{}", crate::units::fit_line(line))
}

/// Worst wake-up latencies below this are what PREEMPT_RT on bare metal
/// keeps (OSADL's QA farm: worst cases of tens of microseconds).
const RT_CLASS_NS: i64 = 100_000;
/// At or above this, spikes of a millisecond: no hard real-time use.
const SPIKE_CLASS_NS: i64 = 1_000_000;

/// One line that places the run's worst latency (IPC and timer series;
/// disk writes are another matter) among the classes of machine in
/// docs/interpreting.md, in words that match what was measured: a round
/// trip is two wake-ups (classed against twice the bounds), and a run at
/// normal priority or on a kernel without PREEMPT_RT is said to be one, since
/// nothing bounds its worst case however low it came out. None when the run
/// has no such series.
pub fn where_this_run_falls(report: &Report) -> Option<String> {
    let measured: Vec<(&TestResult, &Series)> = report
        .tests
        .iter()
        .flat_map(|t| t.series.iter().map(move |s| (t, s)))
        .filter(|(_, s)| {
            // A disk write and an OS-noise interruption are no wake-up latency.
            s.latency.samples > 0
                && s.disk_writer().is_none()
                && s.noise_cpu().is_none()
                && s.hwlat_cpu().is_none()
        })
        .collect();
    let worst = measured.iter().map(|(_, s)| s.latency.max_ns).max()?;
    let round_trips = measured
        .iter()
        .filter(|(t, _)| t.mode == "round-trip")
        .count();
    let (what, wake_ups) = if round_trips == 0 {
        ("wake-up latency", 1)
    } else if round_trips == measured.len() {
        ("round trip (two wake-ups)", 2)
    } else {
        ("latency (one-way wake-ups and round trips)", 1)
    };
    let mut circumstances = Vec::new();
    if measured.iter().any(|(_, s)| s.policy == "other") {
        circumstances.push("at normal priority");
    }
    if !report.sysinfo.preempt_rt {
        circumstances.push("on a kernel without PREEMPT_RT");
    }
    let class = if worst < RT_CLASS_NS * wake_ups {
        if circumstances.is_empty() {
            "within what PREEMPT_RT on bare metal keeps (tens of us)"
        } else {
            "as low as PREEMPT_RT on bare metal keeps (tens of us) in this run, but nothing bounds it here"
        }
    } else if worst < SPIKE_CLASS_NS * wake_ups {
        "above PREEMPT_RT on bare metal (tens of us), typical of a stock kernel or a VM"
    } else {
        "millisecond spikes, as a VM, RT throttling or a loaded stock kernel give: not for hard real time"
    };
    let circumstances = if circumstances.is_empty() {
        String::new()
    } else {
        format!(" ({})", circumstances.join(", "))
    };
    Some(format!(
        "context: worst {what} {}{circumstances}: {class} (docs/interpreting.md)",
        crate::units::format_ns(worst)
    ))
}

/// One `FAIL:` line per crossed `--fail-if` check, or one `ok:` line when
/// every check held (nothing without checks), each wrapped as `note` does.
pub fn write_threshold_verdict(
    checks: &[crate::report::ThresholdCheck],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for line in crate::report::cells::verdict::threshold_verdict(checks) {
        note(out, &line)?;
    }
    Ok(())
}

pub struct ModernConsole;

/// The modern console of a timer run with `-h`: after each timer test's
/// tables, its three histograms (Xenomai's; the classic format prints them
/// as HSD lines) as one table per sampling thread.
pub struct ModernConsoleWithHistograms;

impl Exporter for ModernConsole {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        write_modern(report, false, out)
    }
}

impl Exporter for ModernConsoleWithHistograms {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        write_modern(report, true, out)
    }
}

fn write_modern(report: &Report, histograms: bool, out: &mut dyn Write) -> std::io::Result<()> {
    {
        for test in &report.tests {
            if let Some(config) = test.config.logdisk() {
                logdisk::write_test(test, config, out)?;
                continue;
            }
            if test.config.noise().is_some() {
                noise::write_test(report, test, out)?;
                continue;
            }
            if test.config.hwlat().is_some() {
                hwlat::write_test(report, test, out)?;
                continue;
            }
            fitted(
                out,
                &format!(
                    "{} latency ({}, {}), {:.1} s, ended: {}",
                    test.test,
                    test.description,
                    test.mode,
                    report.duration_s,
                    end_reason_text(test)
                ),
            )?;
            if interrupted_before_measuring(test) {
                continue;
            }
            if test.config.timer().is_some() {
                write!(out, "{}", timer::thread_table(test).render())?;
                if let Some((table, left_out)) = timer::breakdown_table(test) {
                    fitted(
                        out,
                        "Where the latency was spent, from the expiry: IRQ = timer interrupt handler starts, Sched = thread scheduled in, Return = thread back in user space (then it reads the clock: the table above):",
                    )?;
                    write!(out, "{}", table.render())?;
                    for line in left_out {
                        note(out, &line)?;
                    }
                    if let Some(line) = crate::report::cells::breakdown::collector_line(test) {
                        fitted(out, &line)?;
                    }
                }
                if histograms {
                    timer::write_histograms(test, out)?;
                }
            } else {
                write!(out, "{}", series_table(test).render())?;
            }
        }
        write_footer(report, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    #[test]
    fn table_is_aligned() {
        let mut t = Table::new(&["Name", "Value"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["longer".into(), "12345".into()]);
        assert_eq!(t.render(), "Name    Value\na           1\nlonger  12345\n");
    }

    #[test]
    fn modern_output_for_a_known_report() {
        let mut buf = Vec::new();
        ModernConsole.write(&sample_report(), &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let expected = "\
mq latency (POSIX message queue, mq_send -> mq_receive, one-way), 1.0 s, ended: all loops done
Pair    CPU     Prio  Interval  Samples  Timeouts  Overruns      Min      Avg      P50      P99    P99.9      Max
pair 0    1  fifo 99    100 us        3         2         0  2.00 us  3.33 us  3.00 us  5.00 us  5.00 us  5.00 us
warning: kernel is not PREEMPT_RT
context: worst wake-up latency 5.00 us (on a kernel without PREEMPT_RT): as low as PREEMPT_RT on
  bare metal keeps (tens of us) in this run, but nothing bounds it here (docs/interpreting.md)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_narrow_terminal_leaves_out_the_least_important_columns_and_says_so() {
        let table = series_table(&sample_report().tests[0]);
        assert_eq!(
            table.render_fitted(Some(80)),
            "\
Pair    CPU     Prio  Samples  Overruns      Min      Avg      P99      Max
pair 0    1  fifo 99        3         0  2.00 us  3.33 us  5.00 us  5.00 us
(--wide shows all; left out to fit 80 columns: P50, P99.9, Interval, Timeouts)
"
        );
        assert_eq!(
            table.render_fitted(Some(60)),
            "\
Pair    CPU  Samples  Overruns      Min      P99      Max
pair 0    1        3         0  2.00 us  5.00 us  5.00 us
(--wide shows all; left out to fit 60 columns: P50, P99.9,
  Interval, Timeouts, Prio, Avg)
"
        );
        // Not fitted (a pipe, --wide): the full table.
        assert_eq!(table.render_fitted(None), table.render());
        assert!(
            table
                .render()
                .lines()
                .next()
                .unwrap()
                .ends_with("P99.9      Max")
        );
    }

    #[test]
    fn interrupted_before_the_first_sample_says_so_and_prints_no_table() {
        let mut report = sample_report();
        report.tests[0].end_reason = crate::report::EndReason::Interrupted;
        report.tests[0].series[0].latency = crate::stats::LatencySummary::default();
        let mut buf = Vec::new();
        ModernConsole.write(&report, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.ends_with("ended: interrupted before measuring"),
            "{text}"
        );
        assert!(!text.contains("Pair") && !text.contains(" - "), "{text}");
    }

    #[test]
    fn the_context_line_places_the_worst_latency() {
        let mut report = sample_report();
        let line = |r: &Report| where_this_run_falls(r).unwrap();
        assert!(line(&report).contains(
            "5.00 us (on a kernel without PREEMPT_RT): as low as PREEMPT_RT on bare metal keeps"
        ));
        report.sysinfo.preempt_rt = true;
        assert!(line(&report).contains("5.00 us: within what PREEMPT_RT"));
        report.tests[0].series[0].policy = "other".into();
        assert!(line(&report).contains("5.00 us (at normal priority): as low as"));
        report.tests[0].series[0].policy = "fifo".into();
        // A round trip is two wake-ups, and named as one.
        report.tests[0].mode = "round-trip".into();
        report.tests[0].series[0].latency.max_ns = 150_000;
        assert!(
            line(&report).contains("worst round trip (two wake-ups) 150 us: within what"),
            "{}",
            line(&report)
        );
        report.tests[0].mode = "one-way".into();
        report.tests[0].series[0].latency.max_ns = 514_000;
        assert!(line(&report).contains("514 us: above PREEMPT_RT"));
        report.tests[0].series[0].latency.max_ns = 1_000_000;
        assert!(line(&report).contains("1.00 ms: millisecond spikes"));
        report.tests[0].series[0].latency.samples = 0;
        assert_eq!(where_this_run_falls(&report), None);
    }

    #[test]
    fn the_footer_says_which_load_ran() {
        let report = crate::report::testdata::with_load_and_kernel_message(sample_report());
        let mut buf = Vec::new();
        write_footer_unwrapped(&report, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.starts_with("load: /usr/bin/stress-ng --cpu 1 --timeout 0 (stress-ng, version 0.15.06) on CPU 0,1 at normal priority\n"),
            "{text}"
        );
        // The modern footer wraps the same note to 100 columns.
        let mut buf = Vec::new();
        write_footer(&report, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.starts_with("load: /usr/bin/stress-ng --cpu 1 --timeout 0 (stress-ng, version 0.15.06) on CPU 0,1 at normal\n  priority\n"),
            "{text}"
        );
    }

    #[test]
    fn limit_verdict_names_the_pair() {
        let mut report = sample_report();
        report.tests[0].series[0].above_limit = 2;
        let mut buf = Vec::new();
        write_footer(&report, &mut buf).unwrap();
        assert!(
            String::from_utf8(buf)
                .unwrap()
                .contains("FAIL: latency limit crossed by mq pair 0")
        );
    }
}
