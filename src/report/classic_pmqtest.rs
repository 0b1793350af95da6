//! pmqtest's own output lines, byte for byte (format strings in REFERENCE.md):
//!
//! ```text
//! #0: ID6096, P99, CPU0, I100; #1: ID6097, P99, CPU0, TO 0, Cycles 20000
//! #1 -> #0, Min    1, Cur    2, Avg    2, Max   70
//! ```
//!
//! All values are microseconds rounded to nearest. Unlike pmqtest, the interval
//! is printed in full (pmqtest prints `I0` for one second) and latencies of a
//! second or more are not wrapped.

use super::{Exporter, Report, Series};
use crate::units::ns_to_us_rounded;
use std::io::Write;

pub struct ClassicPmqtest;

pub fn pair_lines(series: &[&Series]) -> Vec<String> {
    let mut lines = Vec::with_capacity(series.len() * 2);
    for (i, s) in series.iter().enumerate() {
        lines.push(format!(
            "#{}: ID{}, P{}, CPU{}, I{}; #{}: ID{}, P{}, CPU{}, TO {}, Cycles {}",
            i * 2,
            s.receiver_tid,
            s.priority,
            s.receiver_cpu,
            s.interval_us,
            i * 2 + 1,
            s.sender_tid,
            s.priority,
            s.sender_cpu,
            s.timeouts,
            s.sent
        ));
    }
    for (i, s) in series.iter().enumerate() {
        let l = &s.latency;
        let avg = if l.samples > 0 {
            (l.avg_ns / 1000.0 + 0.5).floor() as u64
        } else {
            0
        };
        lines.push(format!(
            "#{} -> #{}, Min {:4}, Cur {:4}, Avg {:4}, Max {:4}",
            i * 2 + 1,
            i * 2,
            ns_to_us_rounded(l.min_ns),
            ns_to_us_rounded(l.last_ns),
            avg,
            ns_to_us_rounded(l.max_ns)
        ));
    }
    lines
}

impl Exporter for ClassicPmqtest {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let series: Vec<&Series> = report.tests.iter().flat_map(|t| t.series.iter()).collect();
        for line in pair_lines(&series) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    #[test]
    fn exact_lines() {
        let mut buf = Vec::new();
        ClassicPmqtest.write(&sample_report(), &mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "#0: ID6096, P99, CPU1, I100; #1: ID6097, P99, CPU1, TO 2, Cycles 3\n\
             #1 -> #0, Min    2, Cur    5, Avg    3, Max    5\n"
        );
    }

    #[test]
    fn long_latencies_and_wide_numbers_are_not_truncated() {
        let mut report = sample_report();
        let s = &mut report.tests[0].series[0];
        s.latency.max_ns = 2_000_000_000;
        s.latency.last_ns = 12_345_678;
        s.interval_us = 1_000_000;
        let series: Vec<&Series> = report.tests[0].series.iter().collect();
        let lines = pair_lines(&series);
        assert!(lines[0].contains(", I1000000; "), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "#1 -> #0, Min    2, Cur 12346, Avg    3, Max 2000000"
        );
    }
}
