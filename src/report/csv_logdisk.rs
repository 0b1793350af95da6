//! latscope's log-disk CSV: mqldt's eleven columns first (its header text),
//! then IOPS, the write latency percentiles in ns and the writer. One row per
//! block size; with several writers one row per writer and one for all.
//! (mqldt's exact CSV is `classic_mqldt`'s.)

use super::{DiskWriter, Exporter, Report, SeriesDetail};
use crate::stats::LatencySummary;
use std::io::Write;

/// mqldt's CSV header, exactly.
pub const MQLDT_HEADER: &str = "Blocksize,Total writes to files,Total bytes written to files,Max bytes/sec written to files (over 1 sec interval),Min bytes/sec written to files (over 1 sec interval),Avg bytes/sec written to files,Max latency of write (ns),Min latency of write (ns),Avg latency of write (ns),Min bytes/sec (slowest write),Max bytes/sec (fastest write)";

/// The columns latscope adds.
pub const EXTRA_HEADER: &str = "IOPS,P50 latency of write (ns),P90 latency of write (ns),P99 latency of write (ns),P99.9 latency of write (ns),P99.99 latency of write (ns),Writer";

pub struct LogdiskCsv {
    /// Write the header line first.
    pub header: bool,
}

fn row(d: &DiskWriter, l: &LatencySummary, writer: &str) -> String {
    let i = &d.interval_bandwidth;
    let p = |q: f64| l.percentile(q).unwrap_or(0).to_string();
    [
        d.block_size.to_string(),
        d.writes.to_string(),
        d.bytes.to_string(),
        i.max_bytes_per_s.to_string(),
        i.min_bytes_per_s.to_string(),
        i.avg_bytes_per_s.to_string(),
        l.max_ns.to_string(),
        l.min_ns.to_string(),
        format!("{:.0}", l.avg_ns),
        d.slowest_write_bytes_per_s.to_string(),
        d.fastest_write_bytes_per_s.to_string(),
        format!("{:.0}", d.iops),
        p(50.0),
        p(90.0),
        p(99.0),
        p(99.9),
        p(99.99),
        writer.to_string(),
    ]
    .join(",")
}

impl Exporter for LogdiskCsv {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        if self.header {
            writeln!(out, "{MQLDT_HEADER},{EXTRA_HEADER}")?;
        }
        for test in &report.tests {
            if test.config.logdisk().is_none() || test.overall.samples == 0 {
                continue;
            }
            if test.series.len() > 1 {
                for s in &test.series {
                    if let Some(d) = s.disk_writer() {
                        writeln!(out, "{}", row(d, &s.latency, &d.writer.to_string()))?;
                    }
                }
            }
            if let Some(SeriesDetail::DiskWriter(all)) = &test.overall_detail {
                let label = if test.series.len() > 1 { "all" } else { "0" };
                writeln!(out, "{}", row(all, &test.overall, label))?;
            }
        }
        Ok(())
    }
}
