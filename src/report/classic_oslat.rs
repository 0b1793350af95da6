//! rt-tests 2.40 oslat's final block, exactly (`write_summary`: `%12s:\t`
//! labels, one ` value` column per thread, the `%03lu (us)` bucket rows,
//! `-z`'s `    ...` lines); with `-W`, rt-tests 2.8's (`%03.*f (us)` rows,
//! minimum and maximum in us with the scale's decimals, `(MHz)`). Parsers
//! depend on it. Its `--json` layout is `report::json::OslatJson`.
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
    let scale = threads
        .first()
        .map_or_else(Default::default, |(_, t)| t.scale);
    field(
        &mut out,
        "Counter Freq",
        &each(&|t| t.counter_mhz.to_string()),
        // rt-tests 2.7 corrected the unit's spelling.
        if scale.classic { " (Mhz)" } else { " (MHz)" },
    );
    let size = threads
        .iter()
        .map(|(_, t)| t.buckets.len())
        .max()
        .unwrap_or(0);
    let bias = threads.first().map_or(0, |(_, t)| t.bias);
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
        let label = format!("{:0>3} (us)", scale.label(j, bias));
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
        &each(&|t| scale.us_text(t.min)),
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
        &each(&|t| scale.us_text(t.max)),
        " (us)",
    );
    field(
        &mut out,
        "Max-Min",
        &each(&|t| scale.us_text(t.max.saturating_sub(t.min))),
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
    use crate::report::OslatScale;

    fn cpu(buckets: Vec<u64>, bias: u64) -> OslatCpu {
        OslatCpu {
            counter_mhz: 2597,
            scale: OslatScale::CLASSIC,
            bias,
            buckets,
            min: 1,
            max: 10060,
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

    #[test]
    fn the_block_as_rt_tests_2_8_prints_it_with_a_bucket_width() {
        // -W 500: rows labelled in us with 3 decimals, min and max too.
        let ns = OslatCpu {
            scale: OslatScale {
                unit_per_us: 1000,
                bucket_width: 500,
                classic: false,
            },
            min: 412,
            max: 15_873,
            ..cpu(vec![7, 3, 0, 1], 0)
        };
        assert_eq!(
            summary(&[(1, &ns)], true),
            "        Core:\t 1\nCounter Freq:\t 2597 (MHz)\n  0.500 (us):\t 7\n  1.000 (us):\t 3\n    ...\n  2.000 (us):\t 1 (including overflows)\n     Minimum:\t 0.412 (us)\n     Average:\t 1.044 (us)\n     Maximum:\t 15.873 (us)\n     Max-Min:\t 15.461 (us)\n    Duration:\t 1.997 (sec)\n\n"
        );
        // -W 2000: whole us, two per row; 2.8 rounds down, so 0 can show.
        let us = OslatCpu {
            scale: OslatScale {
                unit_per_us: 1,
                bucket_width: 2,
                classic: false,
            },
            min: 0,
            max: 7,
            ..cpu(vec![9, 1, 0, 2], 0)
        };
        let text = summary(&[(0, &us)], false);
        assert!(
            text.contains("    002 (us):\t 9\n    004 (us):\t 1\n    006 (us):\t 0\n    008 (us):\t 2 (including overflows)\n     Minimum:\t 0 (us)\n"),
            "{text}"
        );
        // With a bias of 1.250 us (units: ns), the labels start above it.
        let biased = OslatCpu {
            bias: 1250,
            ..ns.clone()
        };
        assert!(summary(&[(1, &biased)], false).contains("  1.750 (us):\t 7\n  2.250 (us):\t 3\n"));
    }
}
