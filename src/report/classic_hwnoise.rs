//! `latscope hwlat --format hwnoise`: rtla hwnoise's summary table, so
//! that its parsers work (crucible takes the rows whose first and sixth
//! columns are numbers, and the sixth: Max Noise). Times in us.

use super::{Exporter, Report, Series};
use std::io::Write;

pub struct Hwnoise;

const TITLE: &str = "                                          Hardware-related Noise";
const HEADER: &str = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI";

/// One CPU's row, as rtla prints it: `%3d #%-6d %12llu` then the columns.
pub fn row(series: &Series) -> Option<String> {
    let c = series.hwlat_cpu()?;
    let runtime_us = c.spun_ns / 1000;
    let noise_us = c.hardware_ns / 1000;
    let available = if c.spun_ns > 0 {
        100.0 - c.hardware_ns as f64 * 100.0 / c.spun_ns as f64
    } else {
        100.0
    };
    let max_single_us = if series.latency.samples > 0 {
        series.latency.max_ns.max(0) as u64 / 1000
    } else {
        0
    };
    Some(format!(
        "{:>3} #{:<6} {:>12} {:>12}   {:.5} {:>12} {:>12} {:>12} {:>12}",
        c.cpu,
        c.windows,
        runtime_us,
        noise_us,
        available,
        c.max_window_ns() / 1000,
        max_single_us,
        c.hardware_gaps,
        c.nmis
    ))
}

/// rtla's `duration:   D HH:MM:SS | time is in us`.
pub fn duration_line(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!(
        "duration: {:>3} {:02}:{:02}:{:02} | time is in us",
        s / 86400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

impl Exporter for Hwnoise {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{TITLE}")?;
        writeln!(out, "{}", duration_line(report.duration_s))?;
        writeln!(out, "{HEADER}")?;
        for test in &report.tests {
            for s in &test.series {
                if let Some(line) = row(s) {
                    writeln!(out, "{line}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{HwlatCpu, HwlatSample, SeriesDetail};

    #[test]
    fn the_row_has_numbers_in_columns_0_and_5_as_crucible_reads_them() {
        let mut s = crate::report::testdata::sample_report().tests[0].series[0].clone();
        s.latency.max_ns = 25_400;
        s.latency.samples = 3;
        s.detail = SeriesDetail::HwlatCpu(Box::new(HwlatCpu {
            cpu: 1,
            tid: 0,
            windows: 9,
            sub_windows: 0,
            quiet_sub_windows: 0,
            spun_ns: 4_500_000_000,
            classified_ns: 0,
            loops: 0,
            loops_per_s: 0.0,
            hardware_gaps: 3,
            hardware_ns: 45_000,
            os_gaps: 0,
            os_ns: 0,
            os_max_ns: 0,
            os_causes: vec![],
            os_per_second: vec![],
            gaps_dropped: 0,
            nmis: 2,
            nmi_ns: None,
            nmi_max_ns: None,
            smis: None,
            steal_ns: 0,
            samples: vec![HwlatSample {
                realtime_ns: 0,
                inner_ns: 0,
                outer_ns: 25_400,
                count: 2,
                sum_ns: 38_000,
                cpu: 1,
            }],
        }));
        let line = row(&s).unwrap();
        assert_eq!(
            line,
            "  1 #9           4500000           45   99.99900           38           25            3            2"
        );
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[0], "1");
        assert_eq!(cols[5], "38");
        assert_eq!(
            duration_line(3725.0),
            "duration:   0 01:02:05 | time is in us"
        );
    }
}
