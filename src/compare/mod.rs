//! `latscope compare`'s comparison: reports written by `--json`, side by
//! side. A new report against one base, or against the median of several
//! (per metric; for an even count of bases the mean of the two middle
//! values). Series match by test and label; `--merge` compares each test's
//! `overall` instead. `--fail-if` thresholds are held against every matched
//! series. Pure but for `load`; the command (commands/compare.rs) prints and
//! writes what it finds.

use crate::report::{
    BASE_RULE, COMPARE_SCHEMA, Comparison, MetricDelta, OLDEST_READ_SCHEMA_VERSION, ReportView,
    SCHEMA_NAME, SCHEMA_VERSION, SeriesComparison, ThresholdCheck, schema_version_readable,
};
use crate::stats::{LatencySummary, relative_change};
use crate::threshold::{self, Metric, Threshold, median};
use crate::units::shown;
use serde::Deserialize;
use std::path::Path;

mod differences;
pub use differences::differences;

/// The metrics of the table, in its order.
pub const TABLE_METRICS: [Metric; 6] = [
    Metric::Min,
    Metric::Avg,
    Metric::Percentile(50_000),
    Metric::Percentile(99_000),
    Metric::Percentile(99_900),
    Metric::Max,
];

/// One series of one report, named for matching.
#[derive(Debug, Clone)]
pub struct Entry {
    pub test: String,
    pub series: String,
    pub latency: LatencySummary,
}

/// The series of a report (or with `merge` its tests' overall figures). A
/// test whose name repeats in the report (`ipc --mode both`, logdisk's block
/// sizes) is named with its mode or block size.
pub fn entries(report: &ReportView, merge: bool) -> Vec<Entry> {
    report
        .tests
        .iter()
        .flat_map(|t| {
            let test = report.key_of(t);
            let merged = std::iter::once(("all series".to_string(), &t.overall));
            let each = t.series.iter().map(|s| (s.label.clone(), &s.latency));
            let chosen: Vec<(String, &LatencySummary)> = if merge {
                merged.collect()
            } else {
                each.collect()
            };
            chosen.into_iter().map(move |(series, latency)| Entry {
                test: test.clone(),
                series,
                latency: latency.clone(),
            })
        })
        .collect()
}

/// The `--json` document for these files and what `compare` found, ending
/// with `exit_code` (the command's: 3 when `outcome.crossed()`).
pub fn document(
    bases: Vec<String>,
    new: String,
    merged: bool,
    outcome: Outcome,
    config_differences: Vec<crate::report::ConfigDifference>,
    exit_code: i32,
) -> Comparison {
    Comparison {
        schema: COMPARE_SCHEMA.to_string(),
        schema_version: 1,
        bases,
        new,
        merged,
        base_rule: BASE_RULE.to_string(),
        series: outcome.series,
        only_in_base: outcome.only_in_base,
        only_in_new: outcome.only_in_new,
        thresholds: outcome.thresholds,
        config_differences,
        exit_code,
    }
}

/// The median of the bases' values of `metric` (bases without it left out).
fn base_value(bases: &[&LatencySummary], metric: Metric) -> Option<f64> {
    let values: Vec<f64> = bases.iter().filter_map(|b| metric.of(b)).collect();
    median(&values)
}

/// Compares `new` with `bases` (each already reduced to entries). Pure.
/// `Err` is one line: nothing in common.
pub fn compare(
    bases: &[Vec<Entry>],
    new: &[Entry],
    thresholds: &[Threshold],
) -> Result<Outcome, String> {
    let name = |e: &Entry| format!("{} {}", e.test, e.series);
    let find = |entries: &'_ [Entry], test: &str, series: &str| -> Option<usize> {
        entries
            .iter()
            .position(|e| e.test == test && e.series == series)
    };
    let tests_of = |entries: &[Entry]| -> Vec<String> {
        let mut t: Vec<String> = entries.iter().map(|e| e.test.clone()).collect();
        t.dedup();
        t
    };
    let new_tests = tests_of(new);
    if let Some(base) = bases
        .iter()
        .find(|b| !tests_of(b).iter().any(|t| new_tests.contains(t)))
    {
        return Err(format!(
            "the reports measured different tests (base: {}; new: {}): nothing to compare",
            list_or_none(&tests_of(base)),
            list_or_none(&new_tests)
        ));
    }
    let mut compared = Vec::new();
    let mut checks = Vec::new();
    let mut only_in_new = Vec::new();
    for entry in new {
        let matched: Option<Vec<&LatencySummary>> = bases
            .iter()
            .map(|b| find(b, &entry.test, &entry.series).map(|i| &b[i].latency))
            .collect();
        let Some(matched) = matched else {
            only_in_new.push(name(entry));
            continue;
        };
        let metrics = TABLE_METRICS
            .iter()
            .filter_map(|&m| {
                let (base_ns, new_ns) = (base_value(&matched, m)?, m.of(&entry.latency)?);
                Some(MetricDelta {
                    metric: m.name().to_string(),
                    base_ns,
                    new_ns,
                    delta_ns: new_ns - base_ns,
                    change_pct: relative_change(base_ns, new_ns),
                })
            })
            .collect();
        let base_of = |m: Metric| base_value(&matched, m);
        checks.extend(threshold::check_series(
            thresholds,
            &entry.test,
            &entry.series,
            &entry.latency,
            Some(&base_of),
        ));
        compared.push(SeriesComparison {
            test: entry.test.clone(),
            series: entry.series.clone(),
            base_samples: matched.iter().map(|b| b.samples).collect(),
            new_samples: entry.latency.samples,
            metrics,
        });
    }
    let mut only_in_base: Vec<String> = Vec::new();
    for base in bases {
        for e in base {
            if find(new, &e.test, &e.series).is_none() && !only_in_base.contains(&name(e)) {
                only_in_base.push(name(e));
            }
        }
    }
    if compared.is_empty() {
        return Err(format!(
            "no series in common (base: {}; new: {}); --merge compares whole tests",
            list_or_none(&only_in_base),
            list_or_none(&only_in_new)
        ));
    }
    Ok(Outcome {
        series: compared,
        thresholds: checks,
        only_in_base,
        only_in_new,
    })
}

/// What `compare` finds: the matched series, the threshold checks, and the
/// series only one side has.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub series: Vec<SeriesComparison>,
    pub thresholds: Vec<ThresholdCheck>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
}

impl Outcome {
    /// Whether a `--fail-if` threshold was crossed (`compare` exits 3).
    pub fn crossed(&self) -> bool {
        self.thresholds.iter().any(|c| c.crossed)
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Reads a report written by `latscope ... --json`. Every way it can be
/// wrong is one line (a usage error to the command).
pub fn load(path: &Path) -> Result<ReportView, String> {
    let shown_path = shown(&path.to_string_lossy());
    let text = std::fs::read(path).map_err(|e| format!("cannot read {shown_path}: {e}"))?;
    // The header first, without building the whole document as a tree
    // (serde_json::Value takes several times the file's size).
    #[derive(Deserialize)]
    struct Header {
        #[serde(default)]
        schema: serde_json::Value,
        #[serde(default)]
        schema_version: serde_json::Value,
    }
    let value: Header = serde_json::from_slice(&text).map_err(|e| {
        format!("{shown_path} is not JSON ({e}); give a file written by latscope --json")
    })?;
    if value.schema != SCHEMA_NAME {
        return Err(format!(
            "{shown_path} is not a latscope report (no \"schema\": \"{SCHEMA_NAME}\"); give a file written by latscope --json (not --format classic)"
        ));
    }
    if !value
        .schema_version
        .as_u64()
        .is_some_and(schema_version_readable)
    {
        return Err(format!(
            "{shown_path} has schema_version {}, this latscope reads {OLDEST_READ_SCHEMA_VERSION} to {SCHEMA_VERSION}{}; compare it with the latscope that wrote it",
            shown(&value.schema_version.to_string()),
            // "2" (text) shown next to 2 would read as a contradiction.
            if value.schema_version.is_number() {
                ""
            } else {
                " (a number)"
            }
        ));
    }
    serde_json::from_slice(&text).map_err(|e| {
        format!(
            "{shown_path} is not a valid latscope report: {}",
            shown(&e.to_string())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Percentile;

    /// A summary with these figures (ns) and 100 samples.
    fn summary(min: i64, avg: f64, p50: i64, p99: i64, p999: i64, max: i64) -> LatencySummary {
        LatencySummary {
            samples: 100,
            min_ns: min,
            avg_ns: avg,
            max_ns: max,
            percentiles: [(50.0, p50), (99.0, p99), (99.9, p999)]
                .map(|(percentile, ns)| Percentile { percentile, ns })
                .to_vec(),
            ..LatencySummary::default()
        }
    }

    fn entry(test: &str, series: &str, latency: LatencySummary) -> Entry {
        Entry {
            test: test.into(),
            series: series.into(),
            latency,
        }
    }

    fn one(p99: i64) -> Vec<Entry> {
        vec![entry(
            "futex",
            "pair 0",
            summary(1_000, 2_000.0, 1_500, p99, p99 + 1_000, p99 + 2_000),
        )]
    }

    fn metric<'a>(s: &'a SeriesComparison, name: &str) -> &'a MetricDelta {
        s.metrics.iter().find(|m| m.metric == name).unwrap()
    }

    #[test]
    fn deltas_are_exact() {
        let base = one(10_000);
        let new = vec![entry(
            "futex",
            "pair 0",
            summary(1_200, 2_500.0, 1_500, 12_500, 11_000, 0),
        )];
        let out = compare(&[base], &new, &[]).unwrap();
        let s = &out.series[0];
        assert_eq!(s.metrics.len(), 6);
        let min = metric(s, "min");
        assert_eq!(
            (min.base_ns, min.new_ns, min.delta_ns),
            (1_000.0, 1_200.0, 200.0)
        );
        assert_eq!(min.change_pct, Some(20.0));
        assert_eq!(metric(s, "avg").change_pct, Some(25.0));
        assert_eq!(metric(s, "p50").delta_ns, 0.0);
        assert_eq!(metric(s, "p99").delta_ns, 2_500.0);
        assert_eq!(metric(s, "p99").change_pct, Some(25.0));
        assert_eq!(metric(s, "p99.9").change_pct, Some(0.0));
        assert_eq!(metric(s, "max").delta_ns, -12_000.0);
        assert_eq!(metric(s, "max").change_pct, Some(-100.0));
    }

    #[test]
    fn several_bases_give_their_median_per_metric() {
        let bases = [one(30_000), one(10_000), one(20_000)];
        let out = compare(&bases, &one(20_000), &[]).unwrap();
        let p99 = metric(&out.series[0], "p99");
        assert_eq!((p99.base_ns, p99.delta_ns), (20_000.0, 0.0));
        assert_eq!(out.series[0].base_samples, [100, 100, 100]);
        // Even count: the mean of the two middle values (20 and 30 us).
        let bases = [one(30_000), one(10_000), one(20_000), one(40_000)];
        let out = compare(&bases, &one(20_000), &[]).unwrap();
        let p99 = metric(&out.series[0], "p99");
        assert_eq!((p99.base_ns, p99.delta_ns), (25_000.0, -5_000.0));
        assert_eq!(p99.change_pct, Some(-20.0));
    }

    #[test]
    fn thresholds_hold_against_the_median() {
        let th = |t: &str| threshold::parse(t).unwrap();
        let bases = [one(10_000), one(10_000)];
        let list = [
            th("p99>+10%"),
            th("p99>+2us"),
            th("max>100us"),
            th("p50>1us"),
        ];
        let out = compare(&bases, &one(11_000), &list).unwrap();
        let crossed: Vec<(&str, bool)> = out
            .thresholds
            .iter()
            .map(|c| (c.expr.as_str(), c.crossed))
            .collect();
        assert_eq!(
            crossed,
            [
                ("p99>+10%", false),
                ("p99>+2us", false),
                ("max>100us", false),
                ("p50>1us", true)
            ]
        );
        let out = compare(&bases, &one(11_001), &list).unwrap();
        assert!(out.thresholds[0].crossed, "+10.01 % is above +10 %");
        assert_eq!(
            out.thresholds[0].describe(),
            "futex pair 0: p99>+10% crossed (p99 = 11.0 us, base 10.0 us: +1.00 us, +10.0%)"
        );
    }

    #[test]
    fn unmatched_series_and_tests() {
        let mut new = one(1_000);
        new.push(entry("futex", "pair 1", summary(1, 1.0, 1, 1, 1, 1)));
        let out = compare(&[one(1_000)], &new, &[]).unwrap();
        assert_eq!(out.series.len(), 1);
        assert_eq!(out.only_in_new, ["futex pair 1"]);
        assert!(out.only_in_base.is_empty());

        let other = vec![entry("mq", "pair 0", summary(1, 1.0, 1, 1, 1, 1))];
        let err = compare(&[one(1_000)], &other, &[]).unwrap_err();
        assert_eq!(
            err,
            "the reports measured different tests (base: futex; new: mq): nothing to compare"
        );
        let renamed = vec![entry("futex", "pair 7", summary(1, 1.0, 1, 1, 1, 1))];
        let err = compare(&[one(1_000)], &renamed, &[]).unwrap_err();
        assert_eq!(
            err,
            "no series in common (base: futex pair 0; new: futex pair 7); --merge compares whole tests"
        );
        // A series must be in every base.
        let out = compare(&[one(1_000), other], &new, &[]);
        assert!(out.is_err(), "{out:?}");
    }

    #[test]
    fn entries_name_repeated_tests_and_merge() {
        let mut report: ReportView = serde_json::from_value(
            serde_json::to_value(crate::report::testdata::sample_report()).unwrap(),
        )
        .unwrap();
        let names = |r: &ReportView, merge| -> Vec<String> {
            entries(r, merge)
                .iter()
                .map(|e| format!("{} {}", e.test, e.series))
                .collect()
        };
        assert_eq!(names(&report, false), ["mq pair 0"]);
        assert_eq!(names(&report, true), ["mq all series"]);
        let mut second = report.tests[0].clone();
        second.mode = "round-trip".into();
        report.tests.push(second);
        assert_eq!(
            names(&report, false),
            ["mq one-way pair 0", "mq round-trip pair 0"]
        );
    }

    #[test]
    fn a_crossed_threshold_is_in_the_outcome_and_the_document_keeps_the_code() {
        let th = threshold::parse("p99>+10%").unwrap();
        let out = compare(&[one(10_000)], &one(12_000), &[th]).unwrap();
        assert!(out.crossed());
        let doc = document(
            vec!["a.json".into()],
            "b.json".into(),
            false,
            out,
            Vec::new(),
            3,
        );
        assert_eq!((doc.exit_code, doc.schema.as_str()), (3, COMPARE_SCHEMA));
        assert!(
            !compare(&[one(10_000)], &one(10_000), &[])
                .unwrap()
                .crossed()
        );
    }
}
