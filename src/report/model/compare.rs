//! `latscope compare`'s data: the part of a latscope report it reads (any
//! schema-2 or later report: other fields are ignored) and the comparison it
//! writes with `--json` (schema `latscope-compare`). `crate::compare` fills
//! it, the console and `compare --html` print it.

use super::ThresholdCheck;
use crate::stats::LatencySummary;
use serde::{Deserialize, Serialize};

/// The part of a latscope report that compare reads (other fields ignored,
/// so reports of any latscope version with schema 2 are read).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportView {
    pub tests: Vec<TestView>,
    /// What the run was made on and with: compare names every difference
    /// between two reports (a FIFO run against an unprivileged one reads as
    /// a regression otherwise). Absent parts read as unknown.
    #[serde(default)]
    pub tool: ToolView,
    #[serde(default)]
    pub sysinfo: MachineView,
    #[serde(default)]
    pub loads: Vec<LoadView>,
}

impl ReportView {
    /// How compare names `test`, one of this report's tests (`test_key`:
    /// with its block size or mode where the name repeats).
    pub fn key_of(&self, test: &TestView) -> String {
        let repeated = self.tests.iter().filter(|o| o.test == test.test).count() > 1;
        let block = test.config["detail"]["block_size"].as_u64();
        super::test_key(&test.test, &test.mode, block, repeated)
    }
}

/// `tool` of a report.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolView {
    #[serde(default)]
    pub version: String,
}

/// The parts of `sysinfo` that change what a latency means.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MachineView {
    #[serde(default)]
    pub nodename: String,
    #[serde(default)]
    pub release: String,
    #[serde(default)]
    pub preempt_rt: bool,
    #[serde(default)]
    pub clocksource: String,
    #[serde(default)]
    pub cpus_allowed: Vec<usize>,
    #[serde(default)]
    pub cpus_isolated: String,
    #[serde(default)]
    pub virtualization: Option<String>,
}

/// One `--load` generator of a report: what it ran.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LoadView {
    #[serde(default)]
    pub spec: String,
}

/// A kernel collector as a report names it (`spikes.collector`,
/// `detail.breakdown.collector`); its other fields are skipped unread.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CollectorView {
    #[serde(default)]
    pub collector: CollectorName,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CollectorName {
    #[serde(default)]
    pub name: String,
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
    /// `--trace-spikes`: only its collector is read.
    #[serde(default)]
    pub spikes: Option<CollectorView>,
}

impl TestView {
    /// The kernel collector that ran for this test (`--trace-spikes` or
    /// `--breakdown`), if one did.
    pub fn collector(&self) -> Option<&str> {
        let breakdown = self
            .series
            .iter()
            .find_map(|s| s.breakdown_collector.as_deref());
        self.spikes
            .as_ref()
            .map(|c| c.collector.name.as_str())
            .filter(|n| !n.is_empty())
            .or(breakdown)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(from = "SeriesFields")]
pub struct SeriesView {
    pub label: String,
    pub latency: LatencySummary,
    /// `--breakdown`: the collector that filled it.
    pub breakdown_collector: Option<String>,
}

/// A series' `detail`, of which compare reads only the breakdown's collector.
#[derive(Default, Deserialize)]
struct DetailView {
    #[serde(default)]
    breakdown: Option<CollectorView>,
}

/// A series as the file has it: the label and the summary's figures side by
/// side. Read field by field instead of `#[serde(flatten)]`, which buffers
/// every other field of the series (per-second windows, histograms) in
/// memory first: that made compare need many times the report's size. The
/// histogram is skipped: compare reads only the summary figures.
#[derive(Deserialize)]
struct SeriesFields {
    label: String,
    samples: u64,
    min_ns: i64,
    avg_ns: f64,
    max_ns: i64,
    stddev_ns: f64,
    min_at_sample: u64,
    max_at_sample: u64,
    last_ns: i64,
    percentiles: Vec<crate::stats::Percentile>,
    overflow: u64,
    #[serde(default)]
    detail: Option<DetailView>,
}

impl From<SeriesFields> for SeriesView {
    fn from(f: SeriesFields) -> SeriesView {
        SeriesView {
            label: f.label,
            latency: LatencySummary {
                samples: f.samples,
                min_ns: f.min_ns,
                avg_ns: f.avg_ns,
                max_ns: f.max_ns,
                stddev_ns: f.stddev_ns,
                min_at_sample: f.min_at_sample,
                max_at_sample: f.max_at_sample,
                last_ns: f.last_ns,
                percentiles: f.percentiles,
                histogram: Vec::new(),
                overflow: f.overflow,
            },
            breakdown_collector: f
                .detail
                .and_then(|d| d.breakdown)
                .map(|b| b.collector.name)
                .filter(|n| !n.is_empty()),
        }
    }
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
    /// Every setting the reports do not share (policy, duration, load,
    /// host, kernel, collector, version...): figures may differ for that
    /// alone. Empty when the runs were made alike.
    pub config_differences: Vec<ConfigDifference>,
    pub exit_code: i32,
}

/// One setting whose value differs between the compared reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigDifference {
    /// `host`, `load`, `timer: policy`, `mq: interval_us`.
    pub what: String,
    /// Each value found, with the reports holding it, in the order given.
    pub values: Vec<DifferentValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DifferentValue {
    pub value: String,
    pub reports: Vec<String>,
}

impl ConfigDifference {
    /// `timer: policy: fifo 99 (base.json); other (new.json)`.
    pub fn line(&self) -> String {
        let values: Vec<String> = self
            .values
            .iter()
            .map(|v| format!("{} ({})", v.value, v.reports.join(", ")))
            .collect();
        format!("{}: {}", self.what, values.join("; "))
    }
}

pub const COMPARE_SCHEMA: &str = "latscope-compare";
pub const BASE_RULE: &str =
    "per metric, the median of the bases' values (even count: the mean of the two middle values)";
