//! `--prom FILE`: the run as Prometheus text exposition (format 0.0.4), for
//! node_exporter's textfile collector, so that a fleet's latencies land in
//! the monitoring system that already watches the machines.
//!
//! Every series of every test is one classic histogram on ONE fixed bucket
//! ladder (`LADDER_NS`, the same on every host and for every kind of test,
//! so that `sum by (le)` and `histogram_quantile` work across the fleet),
//! with counters and gauges beside it; docs/fleet.md is the reference.
//! Metric names and labels:
//!
//! - `latscope_latency_seconds` (histogram: `_bucket{le}`, `_sum`, `_count`)
//! - `latscope_samples_total`, `latscope_overruns_total`,
//!   `latscope_timeouts_total`, `latscope_above_limit_total` (counters)
//! - `latscope_max_seconds` (the run's exact max), `latscope_window_max_seconds`
//!   and `latscope_window_p99_seconds` (the last complete window's)
//! - labels of all of them: `test`, `mode` (the IPC primitive's mode, the
//!   timer's figure), `series`, `cpu`, `host`
//! - `latscope_info{host, version, kernel, preempt_rt, virtualization} 1`
//! - `latscope_doctor_check{host, check, verdict}`: 0 ok, 1 warn, 2 bad, one
//!   per check of `latscope doctor`.

use super::Verdict;
use super::{Exporter, Report, Series, TestResult};
use std::fmt::Write as _;
use std::io::Write;

/// The bucket ladder, upper bounds in nanoseconds: 1-2-5 steps from 1 us to
/// 10 s (then `+Inf`). Fixed for the whole fleet: changing it breaks every
/// dashboard's quantiles across hosts, so it is part of the format.
pub const LADDER_NS: [u64; 22] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

pub struct PromText;

/// Nanoseconds as Prometheus' base unit, seconds (shortest exact form).
fn seconds(ns: f64) -> String {
    format!("{}", ns / 1e9)
}

/// A label value: backslash, double quote and newline escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// The cumulative counts of `series` on the ladder: each histogram bucket
/// counts where its top lies (a bucket never straddles a rung by more than
/// its 0.1 % width; its top never understates). Negative samples (a timer
/// firing early) are in the first rung; samples beyond the histogram's
/// range (`overflow`) only in `+Inf`.
pub fn ladder_counts(series: &Series) -> [u64; LADDER_NS.len()] {
    let mut counts = [0u64; LADDER_NS.len()];
    for b in &series.latency.histogram {
        let top = b.high_ns.max(0) as u64;
        if let Some(rung) = LADDER_NS.iter().position(|&le| top <= le) {
            counts[rung] += b.count;
        }
    }
    let mut cumulative = 0;
    for c in counts.iter_mut() {
        cumulative += *c;
        *c = cumulative;
    }
    counts
}

struct Families {
    histogram: String,
    samples: String,
    overruns: String,
    timeouts: String,
    above_limit: String,
    max: String,
    window_max: String,
    window_p99: String,
}

impl Exporter for PromText {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let host = label(&report.sysinfo.nodename);
        let mut f = Families {
            histogram: String::new(),
            samples: String::new(),
            overruns: String::new(),
            timeouts: String::new(),
            above_limit: String::new(),
            max: String::new(),
            window_max: String::new(),
            window_p99: String::new(),
        };
        for (i, t) in report.tests.iter().enumerate() {
            let test = report.test_key_of(i);
            for s in &t.series {
                series_lines(&mut f, &host, &test, t, s);
            }
        }
        let sys = &report.sysinfo;
        let mut text = String::new();
        let _ = writeln!(
            text,
            "# HELP latscope_info The latscope run: version and machine.\n# TYPE latscope_info gauge"
        );
        let _ = writeln!(
            text,
            r#"latscope_info{{host="{host}",version="{}",kernel="{}",preempt_rt="{}",virtualization="{}"}} 1"#,
            label(&report.tool.version),
            label(&sys.release),
            sys.preempt_rt,
            label(sys.virtualization.as_deref().unwrap_or("none"))
        );
        let families: [(&str, &str, &str, &String); 8] = [
            (
                "latscope_latency_seconds",
                "histogram",
                "Latency of each sample (wake-up, timer expiry, durable write).",
                &f.histogram,
            ),
            (
                "latscope_samples_total",
                "counter",
                "Samples taken.",
                &f.samples,
            ),
            (
                "latscope_overruns_total",
                "counter",
                "Periods missed (a wake-up later than the next period).",
                &f.overruns,
            ),
            (
                "latscope_timeouts_total",
                "counter",
                "Receive timeouts (IPC tests).",
                &f.timeouts,
            ),
            (
                "latscope_above_limit_total",
                "counter",
                "Samples above --max-latency.",
                &f.above_limit,
            ),
            (
                "latscope_max_seconds",
                "gauge",
                "The run's exact maximum latency.",
                &f.max,
            ),
            (
                "latscope_window_max_seconds",
                "gauge",
                "The exact maximum of the last complete one-second window.",
                &f.window_max,
            ),
            (
                "latscope_window_p99_seconds",
                "gauge",
                "The p99 of the last complete one-second window.",
                &f.window_p99,
            ),
        ];
        for (name, kind, help, lines) in families {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}");
            text.push_str(lines);
        }
        let _ = writeln!(
            text,
            "# HELP latscope_doctor_check Verdict of each latscope doctor check: 0 ok, 1 warn, 2 bad.\n# TYPE latscope_doctor_check gauge"
        );
        for c in &sys.checks {
            let value = match c.verdict {
                Verdict::Ok => 0,
                Verdict::Warn => 1,
                Verdict::Bad => 2,
            };
            let _ = writeln!(
                text,
                r#"latscope_doctor_check{{host="{host}",check="{}",verdict="{}"}} {value}"#,
                label(&c.id),
                c.verdict.as_str()
            );
        }
        out.write_all(text.as_bytes())
    }
}

fn series_lines(f: &mut Families, host: &str, test: &str, t: &TestResult, s: &Series) {
    let labels = format!(
        r#"test="{}",mode="{}",series="{}",cpu="{}",host="{host}""#,
        label(test),
        label(&t.mode),
        label(&s.label),
        s.cpus.first().map_or(String::new(), |c| c.to_string())
    );
    let l = &s.latency;
    for (le, count) in LADDER_NS.iter().zip(ladder_counts(s)) {
        let _ = writeln!(
            f.histogram,
            r#"latscope_latency_seconds_bucket{{{labels},le="{}"}} {count}"#,
            seconds(*le as f64)
        );
    }
    let _ = writeln!(
        f.histogram,
        r#"latscope_latency_seconds_bucket{{{labels},le="+Inf"}} {}"#,
        l.samples
    );
    let _ = writeln!(
        f.histogram,
        "latscope_latency_seconds_sum{{{labels}}} {}",
        seconds(l.avg_ns * l.samples as f64)
    );
    let _ = writeln!(
        f.histogram,
        "latscope_latency_seconds_count{{{labels}}} {}",
        l.samples
    );
    let timeouts = s.ipc_pair().map_or(0, |p| p.timeouts);
    let _ = writeln!(
        f.samples,
        "latscope_samples_total{{{labels}}} {}",
        l.samples
    );
    let _ = writeln!(
        f.overruns,
        "latscope_overruns_total{{{labels}}} {}",
        s.overruns
    );
    let _ = writeln!(f.timeouts, "latscope_timeouts_total{{{labels}}} {timeouts}");
    let _ = writeln!(
        f.above_limit,
        "latscope_above_limit_total{{{labels}}} {}",
        s.above_limit
    );
    if l.samples > 0 {
        let _ = writeln!(
            f.max,
            "latscope_max_seconds{{{labels}}} {}",
            seconds(l.max_ns as f64)
        );
    }
    // The last window: the one a scrape during a long run wants.
    if let Some(w) = s.per_second.last() {
        let _ = writeln!(
            f.window_max,
            "latscope_window_max_seconds{{{labels}}} {}",
            seconds(w.max_ns as f64)
        );
        if let Some(p99) = w.p99_ns {
            let _ = writeln!(
                f.window_p99,
                "latscope_window_p99_seconds{{{labels}}} {}",
                seconds(p99 as f64)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    #[test]
    fn the_exact_text_of_a_known_report() {
        let mut report = sample_report();
        report.sysinfo.nodename = "rt\"1".into();
        report.tests[0].series[0].overruns = 2;
        report.tests[0].series[0].per_second[0].p99_ns = Some(5_000);
        let mut buf = Vec::new();
        PromText.write(&report, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let l = r#"test="mq",mode="one-way",series="pair 0",cpu="1",host="rt\"1""#;
        // The samples are 2, 3 and 5 us: 1 us 0, 2 us 1, 5 us 3.
        let mut want = String::new();
        for (le, n) in [
            ("0.000001", 0),
            ("0.000002", 1),
            ("0.000005", 3),
            ("0.00001", 3),
        ] {
            want.push_str(&format!(
                "latscope_latency_seconds_bucket{{{l},le=\"{le}\"}} {n}\n"
            ));
        }
        assert!(text.contains(&want), "{text}");
        for line in [
            format!("latscope_latency_seconds_bucket{{{l},le=\"10\"}} 3"),
            format!("latscope_latency_seconds_bucket{{{l},le=\"+Inf\"}} 3"),
            format!("latscope_latency_seconds_sum{{{l}}} 0.00001"),
            format!("latscope_latency_seconds_count{{{l}}} 3"),
            format!("latscope_samples_total{{{l}}} 3"),
            format!("latscope_overruns_total{{{l}}} 2"),
            format!("latscope_timeouts_total{{{l}}} 2"),
            format!("latscope_above_limit_total{{{l}}} 0"),
            format!("latscope_max_seconds{{{l}}} 0.000005"),
            format!("latscope_window_max_seconds{{{l}}} 0.000005"),
            format!("latscope_window_p99_seconds{{{l}}} 0.000005"),
            "# TYPE latscope_latency_seconds histogram".to_string(),
            "# TYPE latscope_samples_total counter".to_string(),
            "# TYPE latscope_window_p99_seconds gauge".to_string(),
        ] {
            assert!(text.lines().any(|x| x == line), "{line} missing:\n{text}");
        }
        assert!(text.contains(r#"latscope_info{host="rt\"1",version="0.1.0","#));
        // Every sample line: name{labels} value, and every family typed once.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(types, 10);
    }

    #[test]
    fn the_ladder_is_increasing_and_counts_are_cumulative() {
        assert!(LADDER_NS.windows(2).all(|w| w[0] < w[1]));
        let report = sample_report();
        let counts = ladder_counts(&report.tests[0].series[0]);
        assert!(counts.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(counts[LADDER_NS.len() - 1], 3);
    }

    #[test]
    fn doctor_checks_are_gauges() {
        let mut report = sample_report();
        report.sysinfo.checks = vec![crate::report::Check {
            id: "kernel.preempt_rt".into(),
            title: "PREEMPT_RT".into(),
            verdict: Verdict::Bad,
            value: "no".into(),
            meaning: String::new(),
            fix: None,
        }];
        let mut buf = Vec::new();
        PromText.write(&report, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.contains(
                r#"latscope_doctor_check{host="rig",check="kernel.preempt_rt",verdict="bad"} 2"#
            ),
            "{text}"
        );
    }
}
