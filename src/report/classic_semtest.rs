//! semtest's own output, byte for byte as its first public version prints it
//! (the seed `semtest-README.txt`; the format strings are the constants and
//! tests below), tabs and
//! all, including the BEL byte (0x07) its format string has where a tab was
//! meant (`us\avg:`, which a terminal shows as `usvg:`): parsers written
//! against semtest see the bytes they know.
//!
//! ```text
//! Starting test:
//! Affinity:\tOn
//! Iterations:\t10000
//! num_cpus:\t8
//! Priority:\t90
//! Policy:\t\tSCHED_FIFO
//! Summary of 10000 iterations
//! P:  0, 7\tPri: 90\tMax:\t     248\tMin:\t       3
//! (Max) Global:          304 us\x07avg: 228.6250 us\tmiddle: 218.500000
//! (Min) Global:            3 us\x07avg: 3.3750 us\tmiddle: 3.000000
//! Test took 0 hours 0 mins 10.734532 secs to complete
//! ```
//!
//! What the lines hold:
//! - `Affinity`: `On` when every series was pinned, `Off` otherwise (`-A`).
//! - `Iterations` and `Summary of N iterations`: the loops asked for; in a run
//!   by duration (no loop count), the largest sample count of the series.
//! - `num_cpus`: the number of pairs; `Priority`, `Policy`: the test's.
//! - One `P:` line per series (a semtest pair): the CPU of the task that stamps
//!   both ends (semtest's "marco", the series' receiver), the CPU of the echoing
//!   peer ("polo", the sender), the priority, the largest and the smallest
//!   round trip in microseconds rounded to nearest. An unpinned series prints
//!   `-1,-1` for the CPUs. A series without samples prints Max and Min 0.
//! - `(Max) Global`: the largest per-pair maximum; `(Min) Global`: the smallest
//!   per-pair minimum. `avg` is the mean and `middle` the median (the mean of
//!   the two middle values for an even count) of the per-pair values, computed
//!   from the rounded microseconds as semtest works in integer microseconds.
//!   Series without samples are left out of these figures (all 0 when no
//!   series has samples).
//! - `Test took`: the run's duration.
//!
//! A report with several tests shows its first test that has series.
//!
//! Defects of semtest that this output does not copy:
//! - `(Min) Global` is the true smallest per-pair minimum; semtest's inverted
//!   comparison prints the largest.
//! - `Test took` pads the microseconds to six digits (11.057402 s prints as
//!   `11.057402`; semtest prints `11.57402`).
//! - An unpinned run (semtest `-A`, which crashes on a null pointer) prints
//!   `Affinity: Off` and `-1` for the CPUs of its pairs.
//! - Latencies are rounded to the nearest microsecond from nanosecond
//!   measurements, not truncated to microseconds before the subtraction.
//!
//! The measurement itself also fixes semtest's defects (absolute periods instead
//! of a relative sleep, affinity actually applied); see docs/measurement.md.

use super::{Exporter, Report, Series};
use crate::units::ns_to_us_rounded;
use std::io::Write;

/// semtest's console summary (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassicSemtest;

/// semtest's name of a scheduling policy (`fifo` -> `SCHED_FIFO`).
fn policy_name(policy: &str) -> String {
    match policy {
        "fifo" => "SCHED_FIFO".to_string(),
        "rr" => "SCHED_RR".to_string(),
        "other" => "SCHED_OTHER".to_string(),
        other => format!("SCHED_{}", other.to_ascii_uppercase()),
    }
}

/// The extreme (`largest` or smallest), mean and median of per-pair values;
/// all 0 for no values.
fn global(values: &[i64], largest: bool) -> (i64, f64, f64) {
    if values.is_empty() {
        return (0, 0.0, 0.0);
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let extreme = if largest { sorted[n - 1] } else { sorted[0] };
    let avg = sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
    let middle = if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0
    };
    (extreme, avg, middle)
}

/// Max and min of one series in rounded microseconds, if it has samples.
fn max_min_us(s: &Series) -> Option<(i64, i64)> {
    (s.latency.samples > 0).then(|| {
        (
            ns_to_us_rounded(s.latency.max_ns),
            ns_to_us_rounded(s.latency.min_ns),
        )
    })
}

impl Exporter for ClassicSemtest {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let Some(test) = report
            .tests
            .iter()
            .find(|t| !t.series.is_empty())
            .or(report.tests.first())
        else {
            return Ok(());
        };
        let config = &test.config;
        let pinned = test.series.iter().all(|s| s.pinned);
        let iterations = config.loops.unwrap_or_else(|| {
            test.series
                .iter()
                .map(|s| s.latency.samples)
                .max()
                .unwrap_or(0)
        });
        writeln!(out, "Starting test:")?;
        writeln!(out, "Affinity:\t{}", if pinned { "On" } else { "Off" })?;
        writeln!(out, "Iterations:\t{iterations}")?;
        let pairs = config.ipc().map_or(test.series.len(), |c| c.pairs);
        writeln!(out, "num_cpus:\t{pairs}")?;
        writeln!(out, "Priority:\t{}", config.priority)?;
        writeln!(out, "Policy:\t\t{}", policy_name(&config.policy))?;
        writeln!(out, "Summary of {iterations} iterations")?;

        let mut maxes = Vec::with_capacity(test.series.len());
        let mut mins = Vec::with_capacity(test.series.len());
        for s in &test.series {
            let Some(pair) = s.ipc_pair() else { continue };
            let (marco, polo) = if s.pinned {
                (pair.receiver_cpu as i64, pair.sender_cpu as i64)
            } else {
                (-1, -1)
            };
            let (max, min) = max_min_us(s).unwrap_or((0, 0));
            if s.latency.samples > 0 {
                maxes.push(max);
                mins.push(min);
            }
            writeln!(
                out,
                "P: {marco:2},{polo:2}\tPri: {}\tMax:\t{max:8}\tMin:\t{min:8}",
                s.priority
            )?;
        }
        let (max, max_avg, max_middle) = global(&maxes, true);
        let (min, min_avg, min_middle) = global(&mins, false);
        writeln!(
            out,
            "(Max) Global: {max:12} us\x07avg: {max_avg:.4} us\tmiddle: {max_middle:.6}"
        )?;
        writeln!(
            out,
            "(Min) Global: {min:12} us\x07avg: {min_avg:.4} us\tmiddle: {min_middle:.6}"
        )?;

        // `as` saturates: a negative or NaN duration shows as 0.
        let total_us = (report.duration_s * 1e6).round() as u64;
        let secs = total_us / 1_000_000;
        writeln!(
            out,
            "Test took {} hours {} mins {}.{:06} secs to complete",
            secs / 3600,
            secs % 3600 / 60,
            secs % 60,
            total_us % 1_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    /// A round-trip report of `pairs` pairs: (marco CPU, polo CPU, max ns, min ns).
    fn semtest_report(pairs: &[(usize, usize, i64, i64)], policy: &str, priority: i32) -> Report {
        let mut report = sample_report();
        report.duration_s = 11.057402;
        let test = &mut report.tests[0];
        test.test = "sem".into();
        test.mode = "round-trip".into();
        test.config.ipc_mut().unwrap().pairs = pairs.len();
        test.config.loops = Some(10_000);
        test.config.policy = policy.into();
        test.config.priority = priority;
        let template = test.series[0].clone();
        test.series = pairs
            .iter()
            .enumerate()
            .map(|(i, &(marco, polo, max_ns, min_ns))| {
                let mut s = template.clone();
                s.label = format!("pair {i}");
                s.cpus = vec![marco, polo];
                let pair = s.ipc_pair_mut().unwrap();
                pair.receiver_cpu = marco;
                pair.sender_cpu = polo;
                s.policy = policy.into();
                s.priority = priority;
                s.latency.samples = 10_000;
                s.latency.max_ns = max_ns;
                s.latency.min_ns = min_ns;
                s
            })
            .collect();
        report
    }

    fn written(report: &Report) -> String {
        let mut buf = Vec::new();
        ClassicSemtest.write(report, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn seed_sample_sched_other() {
        // The seed's first run; values in ns around the rounding edges.
        let report = semtest_report(
            &[
                (0, 6, 302_500, 5_000),
                (1, 5, 173_000, 4_499),
                (2, 7, 154_000, 5_000),
                (3, 2, 348_000, 5_000),
                (4, 4, 196_000, 5_000),
                (5, 1, 140_000, 5_000),
                (6, 0, 157_000, 5_000),
                (7, 3, 151_400, 4_500),
            ],
            "other",
            0,
        );
        assert_eq!(
            written(&report),
            "Starting test:\n\
             Affinity:\tOn\n\
             Iterations:\t10000\n\
             num_cpus:\t8\n\
             Priority:\t0\n\
             Policy:\t\tSCHED_OTHER\n\
             Summary of 10000 iterations\n\
             P:  0, 6\tPri: 0\tMax:\t     303\tMin:\t       5\n\
             P:  1, 5\tPri: 0\tMax:\t     173\tMin:\t       4\n\
             P:  2, 7\tPri: 0\tMax:\t     154\tMin:\t       5\n\
             P:  3, 2\tPri: 0\tMax:\t     348\tMin:\t       5\n\
             P:  4, 4\tPri: 0\tMax:\t     196\tMin:\t       5\n\
             P:  5, 1\tPri: 0\tMax:\t     140\tMin:\t       5\n\
             P:  6, 0\tPri: 0\tMax:\t     157\tMin:\t       5\n\
             P:  7, 3\tPri: 0\tMax:\t     151\tMin:\t       5\n\
             (Max) Global:          348 us\x07avg: 202.7500 us\tmiddle: 165.000000\n\
             (Min) Global:            4 us\x07avg: 4.8750 us\tmiddle: 5.000000\n\
             Test took 0 hours 0 mins 11.057402 secs to complete\n"
        );
    }

    #[test]
    fn seed_sample_sched_fifo() {
        // The seed's second run: semtest printed (Min) Global 4 (the largest
        // minimum); the smallest is 3.
        let mut report = semtest_report(
            &[
                (0, 7, 248_000, 3_000),
                (1, 6, 198_000, 3_000),
                (2, 5, 183_000, 3_000),
                (3, 2, 195_000, 4_000),
                (4, 1, 236_000, 4_000),
                (5, 4, 264_000, 3_000),
                (6, 3, 201_000, 3_000),
                (7, 0, 304_000, 4_000),
            ],
            "fifo",
            90,
        );
        report.duration_s = 10.734532;
        assert_eq!(
            written(&report),
            "Starting test:\n\
             Affinity:\tOn\n\
             Iterations:\t10000\n\
             num_cpus:\t8\n\
             Priority:\t90\n\
             Policy:\t\tSCHED_FIFO\n\
             Summary of 10000 iterations\n\
             P:  0, 7\tPri: 90\tMax:\t     248\tMin:\t       3\n\
             P:  1, 6\tPri: 90\tMax:\t     198\tMin:\t       3\n\
             P:  2, 5\tPri: 90\tMax:\t     183\tMin:\t       3\n\
             P:  3, 2\tPri: 90\tMax:\t     195\tMin:\t       4\n\
             P:  4, 1\tPri: 90\tMax:\t     236\tMin:\t       4\n\
             P:  5, 4\tPri: 90\tMax:\t     264\tMin:\t       3\n\
             P:  6, 3\tPri: 90\tMax:\t     201\tMin:\t       3\n\
             P:  7, 0\tPri: 90\tMax:\t     304\tMin:\t       4\n\
             (Max) Global:          304 us\x07avg: 228.6250 us\tmiddle: 218.500000\n\
             (Min) Global:            3 us\x07avg: 3.3750 us\tmiddle: 3.000000\n\
             Test took 0 hours 0 mins 10.734532 secs to complete\n"
        );
    }

    #[test]
    fn unpinned_by_duration_with_an_empty_series() {
        let mut report = semtest_report(
            &[
                (0, 1, 20_000, 2_000),
                (1, 0, 10_000, 1_000),
                (0, 0, 0, 0),
                (1, 1, 1_234_567_000, 7_000),
            ],
            "rr",
            5,
        );
        let test = &mut report.tests[0];
        test.config.loops = None;
        test.series[0].latency.samples = 1_200;
        test.series[1].latency.samples = 1_500;
        test.series[2].latency.samples = 0;
        test.series[3].latency.samples = 900;
        for s in &mut test.series {
            s.pinned = false;
        }
        report.duration_s = 3723.000005;
        assert_eq!(
            written(&report),
            "Starting test:\n\
             Affinity:\tOff\n\
             Iterations:\t1500\n\
             num_cpus:\t4\n\
             Priority:\t5\n\
             Policy:\t\tSCHED_RR\n\
             Summary of 1500 iterations\n\
             P: -1,-1\tPri: 5\tMax:\t      20\tMin:\t       2\n\
             P: -1,-1\tPri: 5\tMax:\t      10\tMin:\t       1\n\
             P: -1,-1\tPri: 5\tMax:\t       0\tMin:\t       0\n\
             P: -1,-1\tPri: 5\tMax:\t 1234567\tMin:\t       7\n\
             (Max) Global:      1234567 us\x07avg: 411532.3333 us\tmiddle: 20.000000\n\
             (Min) Global:            1 us\x07avg: 3.3333 us\tmiddle: 2.000000\n\
             Test took 1 hours 2 mins 3.000005 secs to complete\n"
        );
    }

    #[test]
    fn first_test_with_series_and_no_samples_at_all() {
        let mut report = semtest_report(&[(0, 0, 0, 0)], "fifo", 1);
        report.tests[0].series[0].latency.samples = 0;
        let mut empty = report.tests[0].clone();
        empty.series.clear();
        empty.config.ipc_mut().unwrap().pairs = 3;
        report.tests.insert(0, empty);
        report.duration_s = 0.5;
        assert_eq!(
            written(&report),
            "Starting test:\n\
             Affinity:\tOn\n\
             Iterations:\t10000\n\
             num_cpus:\t1\n\
             Priority:\t1\n\
             Policy:\t\tSCHED_FIFO\n\
             Summary of 10000 iterations\n\
             P:  0, 0\tPri: 1\tMax:\t       0\tMin:\t       0\n\
             (Max) Global:            0 us\x07avg: 0.0000 us\tmiddle: 0.000000\n\
             (Min) Global:            0 us\x07avg: 0.0000 us\tmiddle: 0.000000\n\
             Test took 0 hours 0 mins 0.500000 secs to complete\n"
        );
    }

    #[test]
    fn no_tests_write_nothing() {
        let mut report = sample_report();
        report.tests.clear();
        assert_eq!(written(&report), "");
    }

    #[test]
    fn bel_byte_is_kept() {
        let text = written(&semtest_report(&[(0, 1, 9_000, 1_000)], "fifo", 90));
        assert!(text.contains("9 us\u{7}avg: 9.0000 us\tmiddle: 9.000000\n"));
        assert_eq!(text.bytes().filter(|&b| b == 0x07).count(), 2);
    }

    #[test]
    fn policy_names() {
        assert_eq!(policy_name("fifo"), "SCHED_FIFO");
        assert_eq!(policy_name("rr"), "SCHED_RR");
        assert_eq!(policy_name("other"), "SCHED_OTHER");
        assert_eq!(policy_name("batch"), "SCHED_BATCH");
    }
}
