//! One-row-per-test tables: `latscope ipc`'s comparison of the primitives
//! and `latscope suite`'s overview of this machine.

use super::write_footer;
use crate::report::cells::{Table, end_reason_text, latency_cell, machine_line, percentile_cell};
use crate::report::{Exporter, Report};
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
        ]);
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
