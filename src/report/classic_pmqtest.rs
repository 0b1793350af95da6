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

/// What one pair's two pmqtest lines show; filled from a finished `Series`,
/// or from the live counters while a run goes on.
#[derive(Debug, Clone, Default)]
pub struct ClassicPair {
    pub receiver_tid: i32,
    pub sender_tid: i32,
    pub priority: i32,
    pub receiver_cpu: usize,
    pub sender_cpu: usize,
    pub interval_us: u64,
    pub timeouts: u64,
    pub cycles: u64,
    pub samples: u64,
    pub min_ns: u64,
    pub last_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
}

impl From<&Series> for ClassicPair {
    fn from(s: &Series) -> Self {
        ClassicPair {
            receiver_tid: s.receiver_tid,
            sender_tid: s.sender_tid,
            priority: s.priority,
            receiver_cpu: s.receiver_cpu,
            sender_cpu: s.sender_cpu,
            interval_us: s.interval_us,
            timeouts: s.timeouts,
            cycles: s.sent,
            samples: s.latency.samples,
            min_ns: s.latency.min_ns,
            last_ns: s.latency.last_ns,
            avg_ns: s.latency.avg_ns,
            max_ns: s.latency.max_ns,
        }
    }
}

/// pmqtest's block: one settings line per pair, then one latency line per pair.
pub fn pair_lines(pairs: &[ClassicPair]) -> Vec<String> {
    let mut lines = Vec::with_capacity(pairs.len() * 2);
    for (i, p) in pairs.iter().enumerate() {
        lines.push(format!(
            "#{}: ID{}, P{}, CPU{}, I{}; #{}: ID{}, P{}, CPU{}, TO {}, Cycles {}",
            i * 2,
            p.receiver_tid,
            p.priority,
            p.receiver_cpu,
            p.interval_us,
            i * 2 + 1,
            p.sender_tid,
            p.priority,
            p.sender_cpu,
            p.timeouts,
            p.cycles
        ));
    }
    for (i, p) in pairs.iter().enumerate() {
        let avg = if p.samples > 0 {
            (p.avg_ns / 1000.0 + 0.5).floor() as u64
        } else {
            0
        };
        lines.push(format!(
            "#{} -> #{}, Min {:4}, Cur {:4}, Avg {:4}, Max {:4}",
            i * 2 + 1,
            i * 2,
            ns_to_us_rounded(p.min_ns),
            ns_to_us_rounded(p.last_ns),
            avg,
            ns_to_us_rounded(p.max_ns)
        ));
    }
    lines
}

impl Exporter for ClassicPmqtest {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let pairs: Vec<ClassicPair> = report
            .tests
            .iter()
            .flat_map(|t| t.series.iter())
            .map(ClassicPair::from)
            .collect();
        for line in pair_lines(&pairs) {
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
        let pairs: Vec<ClassicPair> = report.tests[0]
            .series
            .iter()
            .map(ClassicPair::from)
            .collect();
        let lines = pair_lines(&pairs);
        assert!(lines[0].contains(", I1000000; "), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "#1 -> #0, Min    2, Cur 12346, Avg    3, Max 2000000"
        );
    }
}
