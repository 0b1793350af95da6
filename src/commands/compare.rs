//! `latscope compare`: the reports read (`crate::compare::load`), compared
//! (`crate::compare::compare`), the text on standard output (or standard
//! error when `--json -`/`--html -` owns it), the `--json` document and the
//! `--html` page written; exit 3 when a `--fail-if` threshold was crossed.

use crate::cli::CompareArgs;
use crate::compare::{Entry, compare, differences, document, entries, load};
use crate::pipeline::{CommandError, EXIT_LIMIT, EXIT_OK, write_with};
use crate::report::console::compare::write_text;
use crate::report::{Comparison, ReportView, SeriesComparison};
use crate::settings::UsageError;
use crate::settings::compare::CompareSettings;
use crate::stats::LatencySummary;
use std::io::Write;
use std::path::Path;

/// `latscope compare`.
pub fn run(args: &CompareArgs) -> Result<i32, CommandError> {
    let settings = CompareSettings::from_args(args)?;
    let base_reports = settings
        .bases
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;
    let new_report = load(&settings.new).map_err(UsageError)?;
    let bases: Vec<Vec<Entry>> = base_reports
        .iter()
        .map(|r| entries(r, settings.merge))
        .collect();
    let new = entries(&new_report, settings.merge);
    let outcome = compare(&bases, &new, &settings.fail_if).map_err(UsageError)?;
    let display = |p: &Path| p.display().to_string();
    let names: Vec<String> = settings
        .bases
        .iter()
        .chain([&settings.new])
        .map(|p| display(p))
        .collect();
    let reports: Vec<(&str, &ReportView)> = names
        .iter()
        .map(String::as_str)
        .zip(base_reports.iter().chain([&new_report]))
        .collect();
    let exit_code = if outcome.crossed() {
        EXIT_LIMIT
    } else {
        EXIT_OK
    };
    let comparison = document(
        settings.bases.iter().map(|p| display(p)).collect(),
        display(&settings.new),
        settings.merge,
        outcome,
        differences(&reports),
        exit_code,
    );
    let page = match &settings.html {
        Some(_) => Some(html_page(&comparison, &bases, &new).map_err(CommandError::Runtime)?),
        None => None,
    };
    let stdout = Some(crate::settings::OutputTarget::Stdout);
    let json_to_stdout = settings.json == stdout || settings.html == stdout;
    let mut text = Vec::new();
    let _ = write_text(&comparison, &mut text);
    // Test names, series labels and paths come from the reports: a control
    // character in them (a terminal escape) is shown, never obeyed.
    let text = crate::units::escape_controls(&String::from_utf8_lossy(&text)).into_bytes();
    if json_to_stdout {
        let _ = std::io::stderr().write_all(&text);
    } else {
        let _ = crate::rt::stdio::out().write_all(&text);
    }
    if let Some(target) = &settings.json {
        write_with(target, &mut |out| {
            serde_json::to_writer_pretty(&mut *out, &comparison)?;
            out.write_all(b"\n")
        })
        .map_err(CommandError::Runtime)?;
    }
    if let (Some(target), Some(page)) = (&settings.html, &page) {
        write_with(target, &mut |out| out.write_all(page.as_bytes()))
            .map_err(CommandError::Runtime)?;
    }
    Ok(comparison.exit_code)
}

/// The `--html` page of `c`: the figures of each matched series as `compare`
/// found them, with the bases' and the new report's summaries to plot.
fn html_page(c: &Comparison, bases: &[Vec<Entry>], new: &[Entry]) -> Result<String, String> {
    use crate::report::html::compare::{ComparePage, ComparedSeries, MetricRow, render};
    let find = |entries: &'_ [Entry], s: &SeriesComparison| -> Option<usize> {
        entries
            .iter()
            .position(|e| e.test == s.test && e.series == s.series)
    };
    let series = c
        .series
        .iter()
        .filter_map(|s| {
            let new = &new[find(new, s)?].latency;
            let bases: Vec<&LatencySummary> = bases
                .iter()
                .filter_map(|b| find(b, s).map(|i| &b[i].latency))
                .collect();
            Some(ComparedSeries {
                test: s.test.clone(),
                series: s.series.clone(),
                metrics: s
                    .metrics
                    .iter()
                    .map(|m| MetricRow {
                        metric: m.metric.clone(),
                        base_ns: m.base_ns,
                        new_ns: m.new_ns,
                        change_pct: m.change_pct,
                    })
                    .collect(),
                bases,
                new,
            })
        })
        .collect();
    render(&ComparePage {
        bases: c.bases.clone(),
        new: c.new.clone(),
        base_rule: c.base_rule.clone(),
        series,
        only_in_base: c.only_in_base.clone(),
        only_in_new: c.only_in_new.clone(),
        thresholds: c.thresholds.clone(),
        differences: c.config_differences.iter().map(|d| d.line()).collect(),
    })
}
