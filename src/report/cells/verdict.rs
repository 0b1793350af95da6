//! A run's verdict as every exporter words it: the console's closing lines,
//! the HTML report's first section and the Markdown notes say the same
//! thing from the same Report (a failed run read FAIL on the console and
//! nothing in its HTML report before).

use crate::report::{Report, ThresholdCheck};

/// The verdict in one word, from the run's exit code (what CI acts on).
pub fn verdict_word(report: &Report) -> &'static str {
    match report.exit_code {
        0 => "PASS",
        3 => "FAIL",
        4 => "SKIPPED",
        _ => "ERROR",
    }
}

/// The lines that say why: one `FAIL:` line for the series above
/// `--max-latency`, one per crossed `--fail-if` check, or `ok:` when every
/// check held.
pub fn verdict_lines(report: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    let over = report.series_over_limit();
    if !over.is_empty() {
        lines.push(format!(
            "FAIL: latency limit crossed by {}",
            over.join(", ")
        ));
    }
    lines.extend(threshold_verdict(&report.thresholds));
    lines
}

/// The gates the run was held to, for a verdict without a crossing:
/// `--max-latency 100 us held by every series`, or that none was set.
pub fn gates_held(report: &Report) -> Vec<String> {
    let limits: Vec<String> = report
        .tests
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let us = t.config.max_latency_us?;
            Some(format!("{} {us} us", report.test_key_of(i)))
        })
        .collect();
    let mut lines = Vec::new();
    if !limits.is_empty() && report.series_over_limit().is_empty() {
        lines.push(format!(
            "ok: no sample above --max-latency ({})",
            limits.join(", ")
        ));
    }
    if limits.is_empty() && report.thresholds.is_empty() {
        lines.push("no gate was set (--max-latency, --fail-if)".to_string());
    }
    lines
}

/// One `FAIL:` line per crossed `--fail-if` check, or one `ok:` line when
/// every check held (nothing without checks).
pub fn threshold_verdict(checks: &[ThresholdCheck]) -> Vec<String> {
    let mut lines: Vec<String> = checks
        .iter()
        .filter(|c| c.crossed)
        .map(|c| format!("FAIL: {}", c.describe()))
        .collect();
    if !checks.is_empty() && checks.iter().all(|c| !c.crossed) {
        lines.push(format!(
            "ok: every --fail-if threshold held ({})",
            crate::units::counted(checks.len() as u64, "check")
        ));
    }
    lines
}
