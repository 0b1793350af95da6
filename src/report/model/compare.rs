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
#[serde(from = "SeriesFields")]
pub struct SeriesView {
    pub label: String,
    pub latency: LatencySummary,
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
    pub exit_code: i32,
}

pub const COMPARE_SCHEMA: &str = "latscope-compare";
pub const BASE_RULE: &str =
    "per metric, the median of the bases' values (even count: the mean of the two middle values)";
