//! `latscope compare`: reports written by `--json`, side by side. A new
//! report against one base, or against the median of several (per metric;
//! for an even count of bases the mean of the two middle values). Series
//! match by test and label; `--merge` compares each test's `overall` instead.
//! `--fail-if` thresholds are held against every matched series (exit 3).

use super::{CommandError, EXIT_LIMIT, EXIT_OK};
use crate::cli::CompareArgs;
use crate::report::console::Table;
use crate::report::{SCHEMA_NAME, SCHEMA_VERSION};
use crate::settings::UsageError;
use crate::settings::compare::CompareSettings;
use crate::stats::LatencySummary;
use crate::threshold::{self, Metric, Threshold, ThresholdCheck, median, relative_change};
use crate::units::{format_ns, shown};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The metrics of the table, in its order.
pub const TABLE_METRICS: [Metric; 6] = [
    Metric::Min,
    Metric::Avg,
    Metric::Percentile(50_000),
    Metric::Percentile(99_000),
    Metric::Percentile(99_900),
    Metric::Max,
];

/// The part of a latscope report that compare reads (other fields ignored,
/// so reports of any latscope version with schema 2 are read).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportView {
    pub tests: Vec<TestView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TestView {
    pub test: String,
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub config: serde_json::Value,
    pub overall: LatencySummary,
    pub series: Vec<SeriesView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SeriesView {
    pub label: String,
    #[serde(flatten)]
    pub latency: LatencySummary,
}

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
            let repeated = report.tests.iter().filter(|o| o.test == t.test).count() > 1;
            let block = t.config["detail"]["block_size"].as_u64();
            let test = match (repeated, block) {
                (false, _) => t.test.clone(),
                (true, Some(bytes)) => {
                    format!(
                        "{} {}",
                        t.test,
                        crate::settings::logdisk::format_size(bytes)
                    )
                }
                (true, None) => format!("{} {}", t.test, t.mode),
            };
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

/// One metric of one matched series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDelta {
    pub metric: String,
    /// The base's value (the median of the bases), nanoseconds.
    pub base_ns: f64,
    pub new_ns: f64,
    /// new - base.
    pub delta_ns: f64,
    /// (new - base) / base in percent; absent when the base is 0.
    pub change_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesComparison {
    pub test: String,
    pub series: String,
    /// Samples of the series in each base, in the order given.
    pub base_samples: Vec<u64>,
    pub new_samples: u64,
    pub metrics: Vec<MetricDelta>,
}

/// The result of a comparison (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub schema: String,
    pub schema_version: u32,
    pub bases: Vec<String>,
    pub new: String,
    pub merged: bool,
    /// How several bases are combined.
    pub base_rule: String,
    pub series: Vec<SeriesComparison>,
    /// Series in some base but not in the new report, and the reverse.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    pub thresholds: Vec<ThresholdCheck>,
    pub exit_code: i32,
}

pub const COMPARE_SCHEMA: &str = "latscope-compare";
pub const BASE_RULE: &str =
    "per metric, the median of the bases' values (even count: the mean of the two middle values)";

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

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Reads a report written by `latscope ... --json`. Every way it can be
/// wrong is a usage error of one line.
pub fn load(path: &Path) -> Result<ReportView, UsageError> {
    let shown_path = shown(&path.to_string_lossy());
    let text =
        std::fs::read(path).map_err(|e| UsageError(format!("cannot read {shown_path}: {e}")))?;
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        UsageError(format!(
            "{shown_path} is not JSON ({e}); give a file written by latscope --json"
        ))
    })?;
    if value["schema"] != SCHEMA_NAME {
        return Err(UsageError(format!(
            "{shown_path} is not a latscope report (no \"schema\": \"{SCHEMA_NAME}\"); give a file written by latscope --json (not --format classic)"
        )));
    }
    if value["schema_version"] != SCHEMA_VERSION {
        return Err(UsageError(format!(
            "{shown_path} has schema_version {}, this latscope reads {SCHEMA_VERSION}; compare it with the latscope that wrote it",
            shown(&value["schema_version"].to_string())
        )));
    }
    serde_json::from_value(value).map_err(|e| {
        UsageError(format!(
            "{shown_path} is not a valid latscope report: {}",
            shown(&e.to_string())
        ))
    })
}

fn signed_ns(ns: f64) -> String {
    let rounded = ns.round() as i64;
    if rounded > 0 {
        format!("+{}", format_ns(rounded))
    } else {
        format_ns(rounded)
    }
}

fn change_cell(change: Option<f64>) -> String {
    match change {
        Some(pct) if pct > 0.0 => format!("+{pct:.1}%"),
        Some(pct) => format!("{pct:.1}%"),
        None => "n/a".to_string(),
    }
}

/// The comparison for people: one table per matched series, the series
/// only one side has, then one line per crossed threshold.
pub fn write_text(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    let base = match c.bases.as_slice() {
        [one] => one.clone(),
        many => format!("median of {} reports ({})", many.len(), many.join(", ")),
    };
    writeln!(out, "base: {base}")?;
    writeln!(out, "new:  {}", c.new)?;
    for s in &c.series {
        let base_samples: Vec<String> = s.base_samples.iter().map(u64::to_string).collect();
        writeln!(
            out,
            "\n{} {} (samples: base {}, new {})",
            s.test,
            s.series,
            base_samples.join("/"),
            s.new_samples
        )?;
        let mut table = Table::new(&["Metric", "Base", "New", "Delta", "Change"]);
        for m in &s.metrics {
            table.row(vec![
                m.metric.clone(),
                format_ns(m.base_ns.round() as i64),
                format_ns(m.new_ns.round() as i64),
                signed_ns(m.delta_ns),
                change_cell(m.change_pct),
            ]);
        }
        write!(out, "{}", table.render())?;
    }
    if !c.only_in_base.is_empty() || !c.only_in_new.is_empty() {
        writeln!(out)?;
    }
    if !c.only_in_base.is_empty() {
        writeln!(out, "only in the base: {}", c.only_in_base.join(", "))?;
    }
    if !c.only_in_new.is_empty() {
        writeln!(out, "only in the new report: {}", c.only_in_new.join(", "))?;
    }
    if !c.thresholds.is_empty() {
        writeln!(out)?;
    }
    for check in c.thresholds.iter().filter(|c| c.crossed) {
        writeln!(out, "FAIL: {}", check.describe())?;
    }
    if !c.thresholds.is_empty() && c.thresholds.iter().all(|c| !c.crossed) {
        writeln!(
            out,
            "ok: every --fail-if threshold held ({} checks)",
            c.thresholds.len()
        )?;
    }
    Ok(())
}

/// `latscope compare`.
pub fn run(args: &CompareArgs) -> Result<i32, CommandError> {
    let settings = CompareSettings::from_args(args)?;
    let bases = settings
        .bases
        .iter()
        .map(|p| load(p).map(|r| entries(&r, settings.merge)))
        .collect::<Result<Vec<_>, _>>()?;
    let new = entries(&load(&settings.new)?, settings.merge);
    let outcome = compare(&bases, &new, &settings.fail_if).map_err(UsageError)?;
    let exit_code = if outcome.thresholds.iter().any(|c| c.crossed) {
        EXIT_LIMIT
    } else {
        EXIT_OK
    };
    let display = |p: &Path| p.display().to_string();
    let comparison = Comparison {
        schema: COMPARE_SCHEMA.to_string(),
        schema_version: 1,
        bases: settings.bases.iter().map(|p| display(p)).collect(),
        new: display(&settings.new),
        merged: settings.merge,
        base_rule: BASE_RULE.to_string(),
        series: outcome.series,
        only_in_base: outcome.only_in_base,
        only_in_new: outcome.only_in_new,
        thresholds: outcome.thresholds,
        exit_code,
    };
    let json_to_stdout = matches!(settings.json, Some(super::JsonTarget::Stdout));
    let mut text = Vec::new();
    let _ = write_text(&comparison, &mut text);
    if json_to_stdout {
        let _ = std::io::stderr().write_all(&text);
    } else {
        let _ = std::io::stdout().write_all(&text);
    }
    if let Some(target) = &settings.json {
        super::write_output(target, &mut |out| {
            serde_json::to_writer_pretty(&mut *out, &comparison)?;
            out.write_all(b"\n")
        })
        .map_err(CommandError::Runtime)?;
    }
    Ok(exit_code)
}
