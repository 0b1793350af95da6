//! The modern tables of a log-disk test (one block size): writes and
//! bandwidth per writer (and all writers), the write latency, and with
//! `--sync fdatasync|fsync` the write and sync calls side by side.

use super::fitted;
use crate::report::cells::{Table, end_reason_text, latency_cell, percentile_cell};
use crate::report::{DiskWriter, LogdiskConfig, Series, SeriesDetail, TestResult};
use crate::stats::LatencySummary;
use crate::units::format_bytes;
use std::io::Write;

/// Bytes per second as decimal megabytes per second, one decimal.
fn mb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1}", bytes_per_s / 1e6)
}

/// A latency with the 1-based number of the write it was: `2.49 ms (#1234)`.
fn latency_at(l: &LatencySummary, ns: i64, at: u64) -> String {
    if l.samples == 0 {
        "-".to_string()
    } else {
        format!("{} (#{at})", latency_cell(l, ns))
    }
}

/// The rows: each writer, then `all` when there are several.
fn rows(test: &TestResult) -> Vec<(String, &LatencySummary, &DiskWriter)> {
    let mut rows: Vec<_> = test
        .series
        .iter()
        .filter_map(|s: &Series| Some((s.label.clone(), &s.latency, s.disk_writer()?)))
        .collect();
    if rows.len() > 1
        && let Some(SeriesDetail::DiskWriter(all)) = &test.overall_detail
    {
        rows.push(("all".to_string(), &test.overall, all));
    }
    rows
}

pub fn write_test(
    test: &TestResult,
    config: &LogdiskConfig,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let duration = match &test.overall_detail {
        Some(SeriesDetail::DiskWriter(d)) => d.duration_s,
        _ => 0.0,
    };
    fitted(
        out,
        &format!(
            "logdisk {}; {} files x {} per writer in {}{}; {duration:.1} s, ended: {}",
            test.description,
            config.num_files,
            format_bytes(config.file_size),
            config.dirs.join(", "),
            if config.delay_us > 0 {
                format!(", {} us between writes", config.delay_us)
            } else {
                String::new()
            },
            end_reason_text(test)
        ),
    )?;
    if crate::report::cells::interrupted_before_measuring(test) {
        return Ok(());
    }
    let rows = rows(test);
    let mut bandwidth = Table::new(&[
        "Writer",
        "Writes",
        "IOPS",
        "MB/s",
        "Sec max MB/s",
        "Sec min MB/s",
        "Sec avg MB/s",
        "Slowest write MB/s",
        "Fastest write MB/s",
    ])
    .dropping(&[
        "Fastest write MB/s",
        "Sec avg MB/s",
        "Sec max MB/s",
        "Slowest write MB/s",
        "IOPS",
    ]);
    for (label, _, d) in &rows {
        let i = &d.interval_bandwidth;
        bandwidth.row(vec![
            label.clone(),
            d.writes.to_string(),
            format!("{:.0}", d.iops),
            mb_per_s(d.bytes_per_s),
            mb_per_s(i.max_bytes_per_s as f64),
            mb_per_s(i.min_bytes_per_s as f64),
            mb_per_s(i.avg_bytes_per_s as f64),
            mb_per_s(d.slowest_write_bytes_per_s as f64),
            mb_per_s(d.fastest_write_bytes_per_s as f64),
        ]);
    }
    write!(out, "{}", bandwidth.render())?;
    let mut latency = Table::new(&[
        "Writer", "Min", "Avg", "P50", "P90", "P99", "P99.9", "P99.99", "Max",
    ])
    .dropping(&["P90", "P99.99", "P50", "Avg"]);
    for (label, l, _) in &rows {
        latency.row(vec![
            label.clone(),
            latency_at(l, l.min_ns, l.min_at_sample),
            latency_cell(l, l.avg_ns.round() as i64),
            percentile_cell(l, 50.0),
            percentile_cell(l, 90.0),
            percentile_cell(l, 99.0),
            percentile_cell(l, 99.9),
            percentile_cell(l, 99.99),
            latency_at(l, l.max_ns, l.max_at_sample),
        ]);
    }
    write!(out, "{}", latency.render())?;
    let split: Vec<_> = rows
        .iter()
        .filter_map(|(label, _, d)| Some((label, d.write_call.as_ref()?, d.sync_call.as_ref()?)))
        .collect();
    if !split.is_empty() {
        let sync = &config.sync;
        let mut table = Table::new(&[
            "Writer",
            "Write p50",
            "Write p99",
            "Write max",
            &format!("{sync} p50"),
            &format!("{sync} p99"),
            &format!("{sync} max"),
        ])
        .dropping(&["Write p50", &format!("{sync} p50")]);
        for (label, w, s) in split {
            table.row(vec![
                (*label).clone(),
                percentile_cell(w, 50.0),
                percentile_cell(w, 99.0),
                latency_cell(w, w.max_ns),
                percentile_cell(s, 50.0),
                percentile_cell(s, 99.0),
                latency_cell(s, s.max_ns),
            ]);
        }
        write!(out, "{}", table.render())?;
    }
    Ok(())
}
