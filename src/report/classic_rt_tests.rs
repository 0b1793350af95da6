//! The rt-tests IPC tools' own output lines, byte for byte (the format
//! strings are in the functions and tests below). One implementation serves pmqtest, sigwaittest, svsematest and ptsematest;
//! they differ only in pmqtest's `TO n, ` (its timeout count) before `Cycles`:
//!
//! ```text
//! #0: ID6096, P99, CPU0, I100; #1: ID6097, P99, CPU0, TO 0, Cycles 20000     (pmqtest)
//! #0: ID11510, P99, CPU0, I100; #1: ID11511, P99, CPU0, Cycles 1000000       (sigwaittest, svsematest, ptsematest)
//! #1 -> #0, Min    1, Cur    2, Avg    3, Max   30
//! ```
//!
//! All values are microseconds rounded to nearest. Unlike the originals, the
//! interval is printed in full (they print `I0` for one second) and latencies of
//! a second or more are not wrapped.

use super::cells::RtTestsFlavor;
use super::{Exporter, Report, Series};
use crate::units::ns_to_us_rounded;
use std::io::Write;

/// The classic console exporter of the rt-tests IPC tools: every series of the
/// report (all tests, in order) as one pair of the tool's block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassicRtTests {
    pub flavor: RtTestsFlavor,
}

impl ClassicRtTests {
    pub const fn new(flavor: RtTestsFlavor) -> ClassicRtTests {
        ClassicRtTests { flavor }
    }
}

/// What one pair's two lines show; filled from a finished `Series`, or from
/// the live counters while a run goes on.
#[derive(Debug, Clone, Default)]
pub struct ClassicPair {
    pub receiver_tid: i32,
    pub sender_tid: i32,
    pub priority: i32,
    pub receiver_cpu: usize,
    pub sender_cpu: usize,
    pub interval_us: u64,
    /// Shown by pmqtest only.
    pub timeouts: u64,
    pub cycles: u64,
    pub samples: u64,
    pub min_ns: i64,
    pub last_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
}

impl ClassicPair {
    /// The pair's line values, for series that are IPC pairs.
    pub fn of(s: &Series) -> Option<ClassicPair> {
        let pair = s.ipc_pair()?;
        Some(ClassicPair {
            receiver_tid: pair.receiver_tid,
            sender_tid: pair.sender_tid,
            priority: s.priority,
            receiver_cpu: pair.receiver_cpu,
            sender_cpu: pair.sender_cpu,
            interval_us: pair.interval_us,
            timeouts: pair.timeouts,
            cycles: pair.sent,
            samples: s.latency.samples,
            min_ns: s.latency.min_ns,
            last_ns: s.latency.last_ns,
            avg_ns: s.latency.avg_ns,
            max_ns: s.latency.max_ns,
        })
    }
}

/// The tool's block: one settings line per pair, then one latency line per pair.
pub fn pair_lines(pairs: &[ClassicPair], flavor: RtTestsFlavor) -> Vec<String> {
    let mut lines = Vec::with_capacity(pairs.len() * 2);
    for (i, p) in pairs.iter().enumerate() {
        let timeouts = if flavor.with_timeouts() {
            format!("TO {}, ", p.timeouts)
        } else {
            String::new()
        };
        lines.push(format!(
            "#{}: ID{}, P{}, CPU{}, I{}; #{}: ID{}, P{}, CPU{}, {timeouts}Cycles {}",
            i * 2,
            p.receiver_tid,
            p.priority,
            p.receiver_cpu,
            p.interval_us,
            i * 2 + 1,
            p.sender_tid,
            p.priority,
            p.sender_cpu,
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

impl Exporter for ClassicRtTests {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let pairs: Vec<ClassicPair> = report
            .tests
            .iter()
            .flat_map(|t| t.series.iter())
            .filter_map(ClassicPair::of)
            .collect();
        for line in pair_lines(&pairs, self.flavor) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    fn written(flavor: RtTestsFlavor, report: &Report) -> String {
        let mut buf = Vec::new();
        ClassicRtTests::new(flavor).write(report, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn exact_lines_pmqtest() {
        assert_eq!(
            written(RtTestsFlavor::Pmqtest, &sample_report()),
            "#0: ID6096, P99, CPU1, I100; #1: ID6097, P99, CPU1, TO 2, Cycles 3\n\
             #1 -> #0, Min    2, Cur    5, Avg    3, Max    5\n"
        );
    }

    #[test]
    fn exact_lines_sigwaittest_svsematest_and_ptsematest_have_no_timeout_count() {
        let expected = "#0: ID6096, P99, CPU1, I100; #1: ID6097, P99, CPU1, Cycles 3\n\
                        #1 -> #0, Min    2, Cur    5, Avg    3, Max    5\n";
        for flavor in [
            RtTestsFlavor::Sigwaittest,
            RtTestsFlavor::Svsematest,
            RtTestsFlavor::Ptsematest,
        ] {
            assert_eq!(written(flavor, &sample_report()), expected, "{flavor:?}");
        }
    }

    #[test]
    fn sigwaittest_man_page_sample() {
        // The first two pairs of sigwaittest(8)'s example.
        let pairs = [
            ClassicPair {
                receiver_tid: 11510,
                sender_tid: 11511,
                priority: 99,
                receiver_cpu: 0,
                sender_cpu: 0,
                interval_us: 100,
                timeouts: 0,
                cycles: 1_000_000,
                samples: 1_000_000,
                min_ns: 1_000,
                last_ns: 2_000,
                avg_ns: 2_600.0,
                max_ns: 30_000,
            },
            ClassicPair {
                receiver_tid: 11512,
                sender_tid: 11513,
                priority: 98,
                receiver_cpu: 1,
                sender_cpu: 1,
                interval_us: 125,
                timeouts: 0,
                cycles: 817_484,
                samples: 817_484,
                min_ns: 1_400,
                last_ns: 26_000,
                avg_ns: 3_499.0,
                max_ns: 41_500,
            },
        ];
        assert_eq!(
            pair_lines(&pairs, RtTestsFlavor::Sigwaittest),
            [
                "#0: ID11510, P99, CPU0, I100; #1: ID11511, P99, CPU0, Cycles 1000000",
                "#2: ID11512, P98, CPU1, I125; #3: ID11513, P98, CPU1, Cycles 817484",
                "#1 -> #0, Min    1, Cur    2, Avg    3, Max   30",
                "#3 -> #2, Min    1, Cur   26, Avg    3, Max   42",
            ]
        );
    }

    #[test]
    fn long_latencies_and_wide_numbers_are_not_truncated() {
        let mut report = sample_report();
        let s = &mut report.tests[0].series[0];
        s.latency.max_ns = 2_000_000_000;
        s.latency.last_ns = 12_345_678;
        s.ipc_pair_mut().unwrap().interval_us = 1_000_000;
        let pairs: Vec<ClassicPair> = report.tests[0]
            .series
            .iter()
            .filter_map(ClassicPair::of)
            .collect();
        let lines = pair_lines(&pairs, RtTestsFlavor::Pmqtest);
        assert!(lines[0].contains(", I1000000; "), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "#1 -> #0, Min    2, Cur 12346, Avg    3, Max 2000000"
        );
    }

    #[test]
    fn flavor_names() {
        assert!(RtTestsFlavor::Pmqtest.with_timeouts());
        assert!(!RtTestsFlavor::Sigwaittest.with_timeouts());
        assert!(!RtTestsFlavor::Svsematest.with_timeouts());
        assert!(!RtTestsFlavor::Ptsematest.with_timeouts());
        assert_eq!(RtTestsFlavor::Svsematest.tool_name(), "svsematest");
        assert_eq!(RtTestsFlavor::Ptsematest.tool_name(), "ptsematest");
    }
}
