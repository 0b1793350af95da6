//! One-row-per-test tables: `latscope ipc`'s comparison of the primitives
//! and `latscope suite`'s overview of this machine.

use super::{note, write_footer};
use crate::report::cells::{Table, end_reason_text, latency_cell, machine_line, percentile_cell};
use crate::report::{Exporter, Report, TestResult};
use std::io::Write;

/// One row per test (a primitive in one mode, all its pairs merged), sorted
/// by p99: the primitives side by side.
pub struct IpcComparison;

impl Exporter for IpcComparison {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let mut table = Table::new(&[
            "Primitive",
            "Mode",
            "Tasks",
            "CPUs",
            "Pairs",
            "Samples",
            "Min",
            "Avg",
            "P50",
            "P99",
            "P99.9",
            "Max",
        ])
        .dropping(&["P50", "P99.9", "Tasks", "Pairs", "Avg", "CPUs"]);
        let mut tests: Vec<_> = report.tests.iter().collect();
        // Tests without samples (failed to start) go last.
        tests.sort_by_key(|t| {
            let o = &t.overall;
            (o.samples == 0, o.percentile(99.0).unwrap_or(i64::MAX))
        });
        for t in tests {
            let o = &t.overall;
            let v = |ns: i64| latency_cell(o, ns);
            let p = |q: f64| percentile_cell(o, q);
            table.row(vec![
                t.test.clone(),
                t.mode.clone(),
                t.config.ipc().map_or("-", |c| c.tasks.as_str()).to_string(),
                // `ipc` always pins its pairs (-S is its default): the two
                // tasks of a pair share a CPU unless --cross-cpu split them,
                // which changes the physics (an IPI per wake-up).
                match t.config.ipc() {
                    Some(c) if c.cross_cpu => "cross",
                    Some(_) => "same",
                    None => "-",
                }
                .to_string(),
                t.series.len().to_string(),
                o.samples.to_string(),
                v(o.min_ns),
                v(o.avg_ns.round() as i64),
                p(50.0),
                p(99.0),
                p(99.9),
                v(o.max_ns),
            ]);
        }
        write!(out, "{}", table.render())?;
        write_footer(report, out)
    }
}

/// One row per test: the overall (all pairs merged) statistics. The default
/// fits a 100-column terminal: the test, its result, then the figures every
/// test shares (p50 included); what each test's sample spans and its policy
/// are in `wide` (`latscope suite --wide`) and the JSON.
pub struct SuiteOverview {
    pub wide: bool,
}

impl Exporter for SuiteOverview {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        note(
            out,
            &format!("latscope suite on {}", machine_line(&report.sysinfo)),
        )?;
        let mut headers = vec!["Test", "Result"];
        if self.wide {
            headers.extend(["What one sample spans", "Series", "Policy"]);
        }
        headers.extend([
            "Samples", "Min", "Avg", "P50", "P99", "P99.9", "Max", "Overruns",
        ]);
        if self.wide {
            headers.extend(["P99.99", "Ended"]);
        }
        let mut table = Table::new(&headers).dropping(&["P50", "P99.9", "Avg", "Min", "Samples"]);
        for t in &report.tests {
            let o = &t.overall;
            let v = |ns: i64| latency_cell(o, ns);
            let p = |q: f64| percentile_cell(o, q);
            let mut row = vec![t.test.clone(), result_word(t).to_string()];
            if self.wide {
                row.extend([
                    format!("{} ({})", t.description, t.mode),
                    t.series.len().to_string(),
                    format!("{} {}", t.config.policy, t.config.priority),
                ]);
            }
            row.extend([
                o.samples.to_string(),
                v(o.min_ns),
                v(o.avg_ns.round() as i64),
                p(50.0),
                p(99.0),
                p(99.9),
                v(o.max_ns),
                t.series.iter().map(|s| s.overruns).sum::<u64>().to_string(),
            ]);
            if self.wide {
                row.extend([p(99.99), end_reason_text(t).to_string()]);
            }
            table.row(row);
        }
        write!(out, "{}", table.render())?;
        for line in noise_shares(report)
            .into_iter()
            .chain(hardware_lines(report))
        {
            note(out, &line)?;
        }
        if !self.wide {
            writeln!(
                out,
                "(--wide: what each test's sample spans, its policy, p99.99 and how it ended)"
            )?;
        }
        write_footer(report, out)
    }
}

/// A test's result in one word: whether it crossed `--max-latency`, else
/// how it ended.
fn result_word(test: &TestResult) -> &'static str {
    use crate::report::EndReason::*;
    if test.series.iter().any(|s| s.above_limit > 0) {
        return "FAIL";
    }
    match test.end_reason {
        LoopsDone | DurationElapsed => "ok",
        Interrupted => "stopped",
        BreakTrace | BreakOnSwitch => "break",
        Error => "error",
        Skipped => "skipped",
        Running => "running",
    }
}

/// The noise rows' share, which the latency columns cannot show: how much
/// of each measured CPU's time the interruptions took.
fn noise_shares(report: &Report) -> Vec<String> {
    report
        .tests
        .iter()
        .flat_map(|t| t.series.iter().map(move |s| (t, s)))
        .filter_map(|(t, s)| {
            let n = s.noise_cpu()?;
            Some(format!(
                "{}: CPU {} lost {:.3} % of its time ({} in {})",
                t.test,
                n.cpu,
                n.noise_percent,
                crate::units::format_ns(n.noise_ns as i64),
                crate::units::counted(s.latency.samples, "interruption")
            ))
        })
        .collect()
}

/// The hardware row's summary, which its latency columns (the hardware gaps
/// only) cannot give: the time sampled, the OS gaps set apart, the tier and
/// the share of the time it could classify.
fn hardware_lines(report: &Report) -> Vec<String> {
    report
        .tests
        .iter()
        .filter_map(|t| {
            let config = t.config.hwlat()?;
            let cpus: Vec<_> = t.series.iter().filter_map(|s| s.hwlat_cpu()).collect();
            if cpus.is_empty() {
                return None;
            }
            let spun: u64 = cpus.iter().map(|c| c.spun_ns).sum();
            let classified: u64 = cpus.iter().map(|c| c.classified_ns).sum();
            let hardware_ns: u64 = cpus.iter().map(|c| c.hardware_ns).sum();
            let os_gaps: u64 = cpus.iter().map(|c| c.os_gaps).sum();
            let kind = if config.hypervisor.is_some() { "hypervisor" } else { "hardware" };
            let tier = config.tier.split(" (").next().unwrap_or(&config.tier);
            Some(format!(
                "{}: {} ({} in all) in {} sampled on CPU {}; {}; tier {}, {:.0} % of the time classified",
                t.test,
                crate::units::counted(t.overall.samples, &format!("{kind} gap")),
                crate::units::format_ns(hardware_ns as i64),
                crate::units::format_ns(spun as i64),
                crate::units::cpu_list(&config.cpus),
                crate::units::counted(os_gaps, "OS gap"),
                tier,
                if spun == 0 { 0.0 } else { classified as f64 * 100.0 / spun as f64 }
            ))
        })
        .collect()
}
