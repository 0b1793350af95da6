//! rt-tests 2.40 oslat's final block, exactly (`write_summary`: `%12s:\t`
//! labels, one ` value` column per thread, the `%03lu (us)` bucket rows,
//! `-z`'s `    ...` lines). Parsers depend on it. Its `--json` layout is
//! `report::json::OslatJson`.
//! The lines printed while oslat runs (its version, the header block,
//! "Pre-heat ...") are the run's: settings::oslat and measure::oslat.

use super::{EndReason, Exporter, OslatCpu, Report};
use std::fmt::Write as _;
use std::io::Write;

/// Whether the run ended on `-T`: oslat then quits without its block.
fn stopped_by_trace(report: &Report) -> bool {
    report
        .tests
        .iter()
        .any(|t| t.end_reason == EndReason::BreakTrace)
}

/// The final block of `threads`, `-z` omitting the rows that are 0 on
/// every thread (but the last).
pub fn summary(threads: &[(usize, &OslatCpu)], zero_omit: bool) -> String {
    let mut out = String::new();
    let field = |out: &mut String, label: &str, values: &[String], end: &str| {
        let _ = write!(out, "{label:>12}:\t");
        for v in values {
            let _ = write!(out, " {v}");
        }
        let _ = writeln!(out, "{end}");
    };
    let each = |f: &dyn Fn(&OslatCpu) -> String| -> Vec<String> {
        threads.iter().map(|(_, t)| f(t)).collect()
    };
    field(
        &mut out,
        "Core",
        &threads
            .iter()
            .map(|(c, _)| c.to_string())
            .collect::<Vec<_>>(),
        "",
    );
    field(
        &mut out,
        "Counter Freq",
        &each(&|t| t.counter_mhz.to_string()),
        " (Mhz)",
    );
    let size = threads
        .iter()
        .map(|(_, t)| t.buckets.len())
        .max()
        .unwrap_or(0);
    let bias = threads.first().map_or(0, |(_, t)| t.bias_us);
    let count = |t: &OslatCpu, j: usize| t.buckets.get(j).copied().unwrap_or(0);
    let mut dots = false;
    for j in 0..size {
        if zero_omit && j + 1 < size && threads.iter().all(|(_, t)| count(t, j) == 0) {
            dots = true;
            continue;
        }
        if dots {
            out.push_str("    ...\n");
            dots = false;
        }
        let label = format!("{:03} (us)", bias + j as u64 + 1);
        let end = if j + 1 == size {
            " (including overflows)"
        } else {
            ""
        };
        field(&mut out, &label, &each(&|t| count(t, j).to_string()), end);
    }
    field(
        &mut out,
        "Minimum",
        &each(&|t| t.min_us.to_string()),
        " (us)",
    );
    field(
        &mut out,
        "Average",
        &each(&|t| format!("{:.3}", t.average_us)),
        " (us)",
    );
    field(
        &mut out,
        "Maximum",
        &each(&|t| t.max_us.to_string()),
        " (us)",
    );
    field(
        &mut out,
        "Max-Min",
        &each(&|t| t.max_us.saturating_sub(t.min_us).to_string()),
        " (us)",
    );
    field(
        &mut out,
        "Duration",
        &each(&|t| format!("{:.3}", t.duration_s)),
        " (sec)",
    );
    out.push('\n');
    out
}

/// oslat's final block on the console.
pub struct ClassicOslat {
    /// `-z`.
    pub zero_omit: bool,
}

impl Exporter for ClassicOslat {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        if stopped_by_trace(report) {
            return Ok(());
        }
        out.write_all(summary(&report.oslat_cpus(), self.zero_omit).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(buckets: Vec<u64>, bias_us: u64) -> OslatCpu {
        OslatCpu {
            counter_mhz: 2597,
            bias_us,
            buckets,
            min_us: 1,
            max_us: 10060,
            average_us: 1.0436,
            duration_s: 1.997,
        }
    }

    #[test]
    fn the_block_as_oslat_prints_it() {
        let mut buckets = vec![0; 8];
        buckets[0] = 29_759_120;
        buckets[1] = 95;
        buckets[7] = 1067;
        let t = cpu(buckets, 0);
        assert_eq!(
            summary(&[(1, &t)], false),
            "        Core:\t 1\nCounter Freq:\t 2597 (Mhz)\n    001 (us):\t 29759120\n    002 (us):\t 95\n    003 (us):\t 0\n    004 (us):\t 0\n    005 (us):\t 0\n    006 (us):\t 0\n    007 (us):\t 0\n    008 (us):\t 1067 (including overflows)\n     Minimum:\t 1 (us)\n     Average:\t 1.044 (us)\n     Maximum:\t 10060 (us)\n     Max-Min:\t 10059 (us)\n    Duration:\t 1.997 (sec)\n\n"
        );
        // -z: one `...` per run of rows zero on every thread; the last row
        // always shows. With -B the labels start above the bias.
        let z = cpu(vec![5, 0, 0, 2, 0, 0], 1);
        let other = cpu(vec![5, 0, 1, 0, 0, 0], 1);
        let text = summary(&[(1, &z), (2, &other)], true);
        assert!(text.starts_with("        Core:\t 1 2\nCounter Freq:\t 2597 2597 (Mhz)\n    002 (us):\t 5 5\n    ...\n    004 (us):\t 0 1\n    005 (us):\t 2 0\n    ...\n    007 (us):\t 0 0 (including overflows)\n"), "{text}");
    }
}
