//! Xenomai `latency`'s own output (Xenomai 3, `testsuite/latency`), byte for
//! byte, as pure building blocks: each function takes plain values and returns
//! finished text, every line ending in `\n`, so an exporter only concatenates
//! and writes. The format strings are in the functions and tests below; an
//! example run:
//!
//! ```text
//! == Sampling period: 100 us
//! == Test mode: in-kernel periodic task
//! == All results in microseconds
//! warming up...
//! RTT|  00:00:01  (in-kernel periodic task, 100 us period, priority 99)
//! RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst
//! RTD|      1.485|      2.709|     83.739|       0|     0|      1.485|     83.739
//! ...
//! ---|--param|----range-|--samples
//! HSD|    min|   1 -  2 |        1
//! ...
//! HSH|--param|--samples-|--average--|---stddev--
//! HSS|    min|         4|      1.750|      0.500
//! ...
//! ---|-----------|-----------|-----------|--------|------|-------------------------
//! RTS|      1.485|      2.711|     86.141|       0|     0|    00:00:05/00:00:05
//! ```
//!
//! The order of a run: [`startup_header`] once (with `-q`, [`quiet_notice`] on
//! stderr); for each one-second loop after the warm-up, when
//! [`HeaderCadence::due`] says so, [`rtt_line`] and [`RTH_LINE`], then
//! [`rtd_line`] (none of these with `-q`); at the end, [`histogram_part`] if
//! any of `-h`, `-s` or `-g` was given, then [`rts_block`]; with `-g`,
//! [`gnuplot_dump`] to its file (or stdout for `-`).
//!
//! Latencies are nanoseconds in, microseconds out (`ns / 1000.0`, printed with
//! three decimals, rounded to nearest with ties to even on the exact binary
//! value, as glibc does). Counts wider than the original's columns widen the
//! line rather than being cut.
//!
//! Defects of the original that this output does not copy:
//! - After the mode-switch warning the original prints a second line,
//!   `Please contact xenomai@xenomai.org`; latscope is not Xenomai and does
//!   not send its users to Xenomai's mailing list, so that line is left out.
//! - The average of an empty histogram is a division by zero there (`nan` or
//!   `-nan` in its HSS line); latscope prints `0.000`.
//! - Its gnuplot dump of an all-empty histogram runs its cell indices past the
//!   histogram's ends (an unsigned wrap); latscope prints the three comment
//!   lines and no data rows.

use super::XenomaiHistogram;

/// The names of the test modes (`-t 0`, `-t 1`, `-t 2`).
pub const TEST_MODE_NAMES: [&str; 3] = [
    "periodic user-mode task",
    "in-kernel periodic task",
    "in-kernel timer handler",
];

/// The name of test mode `mode`; callers accept only 0..=2, and any other
/// value prints `unknown test mode` rather than failing.
pub fn test_mode_name(mode: usize) -> &'static str {
    TEST_MODE_NAMES
        .get(mode)
        .copied()
        .unwrap_or("unknown test mode")
}

/// The RTH line: the column titles of the RTD lines.
pub const RTH_LINE: &str =
    "RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst\n";

/// The line between the last RTD (or histogram) line and the RTS line.
const RTS_SEPARATOR: &str =
    "---|-----------|-----------|-----------|--------|------|-------------------------\n";

/// The warning after RTS when the sampling thread switched mode. The original
/// follows it with `Please contact xenomai@xenomai.org`, which latscope does
/// not print (see the module documentation).
const MSW_WARNING: &str =
    "Warning! some latency peaks may have been due to involuntary mode switches.\n";

/// C's `printf("%g", x)`: six significant digits, trailing zeros (and a
/// trailing point) removed, the exponent form (`1.23457e+06`, at least two
/// exponent digits) when the decimal exponent after rounding is below -4 or
/// at least 6; `inf`, `-inf`, `nan` and `-nan` as glibc prints them.
pub fn c_format_g(x: f64) -> String {
    const PRECISION: i32 = 6;
    if let Some(special) = c_special(x) {
        return special.to_string();
    }
    // Rust's `{:e}` with a precision rounds exactly (ties to even on the
    // binary value), as glibc does; its exponent is the one after rounding.
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_fraction_zeros(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let decimals = (PRECISION - 1 - exponent) as usize;
        strip_fraction_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

/// How glibc prints a NaN or an infinity; `None` for a finite number.
fn c_special(x: f64) -> Option<&'static str> {
    match (x.is_nan(), x.is_infinite(), x.is_sign_negative()) {
        (true, _, false) => Some("nan"),
        (true, _, true) => Some("-nan"),
        (_, true, false) => Some("inf"),
        (_, true, true) => Some("-inf"),
        _ => None,
    }
}

/// `1.50000` -> `1.5`, `2.00000` -> `2`; a number without a point is kept.
fn strip_fraction_zeros(number: &str) -> &str {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    }
}

/// C's `%{width}.3f` of `x`.
fn c_fixed3(x: f64, width: usize) -> String {
    match c_special(x) {
        Some(special) => format!("{special:>width$}"),
        None => format!("{x:width$.3}"),
    }
}

/// Nanoseconds as the original's `%11.3f` microseconds.
fn us11(ns: f64) -> String {
    c_fixed3(ns / 1000.0, 11)
}

/// Seconds as `%.2ld:%.2ld:%.2ld` (hours widen past two digits).
fn hms(seconds: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The lines printed once at the start: sampling period (us), test mode,
/// the unit notice, and `warming up...` (the first one-second loop is
/// discarded).
pub fn startup_header(period_us: u64, mode: usize) -> String {
    format!(
        "== Sampling period: {period_us} us\n\
         == Test mode: {}\n\
         == All results in microseconds\n\
         warming up...\n",
        test_mode_name(mode)
    )
}

/// The stderr line of `-q` (only with `-T`): the run's duration in seconds.
pub fn quiet_notice(duration_s: u64) -> String {
    format!("running quietly for {duration_s} seconds\n")
}

/// The RTT line: `elapsed_s` seconds since the end of the warm-up, the test
/// mode, the sampling period (us) and the sampling thread's priority.
pub fn rtt_line(elapsed_s: u64, mode: usize, period_us: u64, priority: i32) -> String {
    format!(
        "RTT|  {}  ({}, {period_us} us period, priority {priority})\n",
        hms(elapsed_s),
        test_mode_name(mode)
    )
}

/// When the RTT/RTH pair is due: before RTD line number 0, `data_lines`,
/// `2 * data_lines`, ... (`-l`); never for `data_lines` 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderCadence {
    data_lines: u64,
    /// RTD lines since the last header, modulo `data_lines`.
    position: u64,
}

impl HeaderCadence {
    pub fn new(data_lines: u64) -> Self {
        HeaderCadence {
            data_lines,
            position: 0,
        }
    }

    /// Call once per RTD line, before printing it: whether the RTT/RTH pair
    /// goes before it.
    pub fn due(&mut self) -> bool {
        if self.data_lines == 0 {
            return false;
        }
        let due = self.position == 0;
        self.position = (self.position + 1) % self.data_lines;
        due
    }
}

/// What one RTD line shows: one one-second loop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoopLine {
    /// The loop's smallest, mean and largest latency.
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    /// Missed periods since the end of the warm-up.
    pub overruns: u64,
    /// Mode switches (or latscope's stand-in for them) so far.
    pub msw: u64,
    /// The smallest loop minimum and the largest loop maximum so far.
    pub best_ns: i64,
    pub worst_ns: i64,
}

/// The RTD line of one loop.
pub fn rtd_line(l: &LoopLine) -> String {
    format!(
        "RTD|{}|{}|{}|{:8}|{:6}|{}|{}\n",
        us11(l.min_ns as f64),
        us11(l.avg_ns),
        us11(l.max_ns as f64),
        l.overruns,
        l.msw,
        us11(l.best_ns as f64),
        us11(l.worst_ns as f64)
    )
}

/// What the RTS line and the gnuplot dump's comments show: the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunTotals {
    /// The run's smallest latency, mean of the loop averages, largest latency.
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    pub overruns: u64,
    pub msw: u64,
    /// How long the run lasted, and how long `-T` asked for (the same as
    /// `actual_s` when no `-T` was given).
    pub actual_s: u64,
    pub requested_s: u64,
}

/// The end of the run: the separator, the RTS line and, if any mode switch
/// happened, the warning.
pub fn rts_block(t: &RunTotals) -> String {
    let mut text = format!(
        "{RTS_SEPARATOR}RTS|{}|{}|{}|{:8}|{:6}|    {}/{}\n",
        us11(t.min_ns as f64),
        us11(t.avg_ns),
        us11(t.max_ns as f64),
        t.overruns,
        t.msw,
        hms(t.actual_s),
        hms(t.requested_s)
    );
    if t.msw > 0 {
        text.push_str(MSW_WARNING);
    }
    text
}

/// The histogram part printed before [`rts_block`] when `-h`, `-s` or `-g`
/// was given: with `-h` (`with_hsd`), the non-empty cells of the min, avg
/// and max histograms (HSD lines); always the HSH line and one HSS line per
/// histogram (count, mean and standard deviation in cell units).
pub fn histogram_part(
    min: &XenomaiHistogram,
    avg: &XenomaiHistogram,
    max: &XenomaiHistogram,
    with_hsd: bool,
) -> String {
    let kinds = [("min", min), ("avg", avg), ("max", max)];
    let mut text = String::new();
    if with_hsd {
        for (kind, histogram) in kinds {
            text.push_str("---|--param|----range-|--samples\n");
            for (index, count) in histogram.non_empty() {
                text.push_str(&format!(
                    "HSD|    {kind}| {index:3} -{:3} | {count:8}\n",
                    index as u64 + 1
                ));
            }
        }
    }
    text.push_str("HSH|--param|--samples-|--average--|---stddev--\n");
    for (kind, histogram) in kinds {
        let (total, mean, stddev) = histogram.stats();
        text.push_str(&format!(
            "HSS|    {kind}| {total:9}| {}| {}\n",
            c_fixed3(mean, 10),
            c_fixed3(stddev, 10)
        ));
    }
    text
}

/// `-g`'s dump of the avg histogram for gnuplot: three comment lines (run
/// duration, mode, period, priority; the titles; the run's figures), then
/// `x count` rows in microseconds: the left edge of the first non-empty cell
/// with 1, the middle of every cell from the first to the last non-empty one
/// with its count + 1 (so a log axis shows empty cells), and the right edge
/// of the last non-empty cell with 1. An empty histogram has no rows.
pub fn gnuplot_dump(
    avg: &XenomaiHistogram,
    t: &RunTotals,
    mode: usize,
    period_us: u64,
    priority: i32,
) -> String {
    let mut text = format!(
        "# {} ({}, {period_us} us period, priority {priority})\n\
         # ----lat min|----lat avg|----lat max|-overrun|---msw|\n\
         # {}|{}|{}|{:8}|{:6}|\n",
        hms(t.actual_s),
        test_mode_name(mode),
        us11(t.min_ns as f64),
        us11(t.avg_ns),
        us11(t.max_ns as f64),
        t.overruns,
        t.msw
    );
    let mut non_empty = avg.non_empty();
    let Some((start, _)) = non_empty.next() else {
        return text;
    };
    let stop = non_empty.last().map_or(start, |(index, _)| index);
    let bucket_ns = avg.bucket_ns();
    // The edges are an integer product in the original, the middles a double.
    let edge_us = |index: usize| (index as u128 * bucket_ns as u128) as f64 / 1000.0;
    text.push_str(&format!("{} 1\n", c_format_g(edge_us(start))));
    for index in start..=stop {
        let middle_us = (index as f64 + 0.5) * bucket_ns as f64 / 1000.0;
        text.push_str(&format!(
            "{} {}\n",
            c_format_g(middle_us),
            avg.count(index).saturating_add(1)
        ));
    }
    text.push_str(&format!("{} 1\n", c_format_g(edge_us(stop + 1))));
    text
}

/// The first timer test of a report with its thread's detail: what the
/// classic output describes (Xenomai's latency has one sampling thread).
fn timer_run(
    report: &crate::report::Report,
) -> Option<(
    &crate::report::TestResult,
    &crate::report::TimerConfig,
    Option<&crate::report::Series>,
)> {
    report.tests.iter().find_map(|t| {
        let config = t.config.timer()?;
        Some((
            t,
            config,
            t.series.iter().find(|s| s.timer_thread().is_some()),
        ))
    })
}

/// The run's totals as the RTS line and the gnuplot comments show them.
/// latscope's average is the mean of all samples (the original averages the
/// loops' integer means); durations are the measured time after the warm-up,
/// rounded to whole seconds.
pub fn run_totals(report: &crate::report::Report) -> Option<RunTotals> {
    let (test, _, series) = timer_run(report)?;
    let actual_s = report.duration_s.max(0.0).round() as u64;
    let (latency, overruns, msw) = match series {
        Some(s) => (
            &s.latency,
            s.overruns,
            s.timer_thread().map_or(0, |t| t.msw),
        ),
        None => (&test.overall, 0, 0),
    };
    Some(RunTotals {
        min_ns: latency.min_ns,
        avg_ns: latency.avg_ns,
        max_ns: latency.max_ns,
        overruns,
        msw,
        actual_s,
        requested_s: test
            .config
            .duration_s
            .map_or(actual_s, |d| d.max(0.0).round() as u64),
    })
}

/// The end of Xenomai latency's output, from a report: the histogram part
/// (with `-h`, `-s` or `-g`), the gnuplot dump when it goes to standard
/// output (the original prints it right after the HSS lines), then RTS.
pub struct ClassicXenomai {
    pub histograms: bool,
    pub stats: bool,
    pub gnuplot: bool,
    pub gnuplot_to_stdout: bool,
}

impl crate::report::Exporter for ClassicXenomai {
    fn write(
        &self,
        report: &crate::report::Report,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let Some(totals) = run_totals(report) else {
            return Ok(());
        };
        if let Some((all, loop_min, loop_max)) = timer_run(report)
            .and_then(|(_, _, s)| s?.timer_thread())
            .and_then(|t| t.xenomai_histograms())
            && (self.histograms || self.stats || self.gnuplot)
        {
            out.write_all(histogram_part(loop_min, all, loop_max, self.histograms).as_bytes())?;
            if self.gnuplot_to_stdout {
                XenomaiGnuplot.write(report, out)?;
            }
        }
        out.write_all(rts_block(&totals).as_bytes())
    }
}

/// `-g`: the all-samples histogram of the (first) sampling thread in
/// Xenomai's gnuplot format.
pub struct XenomaiGnuplot;

impl crate::report::Exporter for XenomaiGnuplot {
    fn write(
        &self,
        report: &crate::report::Report,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let (Some(totals), Some((_, config, Some(series)))) =
            (run_totals(report), timer_run(report))
        else {
            return Ok(());
        };
        let Some(all) = series.timer_thread().and_then(|t| t.histogram_all.as_ref()) else {
            return Ok(());
        };
        out.write_all(
            gnuplot_dump(
                all,
                &totals,
                usize::from(config.test_mode),
                config.period_us,
                series.priority,
            )
            .as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::XenomaiHistogramError;
    use crate::units::values::MAX_CELLS;

    fn histogram(cells: usize, bucket_ns: u64, counts: &[(usize, u64)]) -> XenomaiHistogram {
        // Through the serialized form: the cells are the model's own.
        let sparse = serde_json::json!({"bucket_ns": bucket_ns, "cells": cells, "counts": counts});
        serde_json::from_value(sparse).expect("valid layout")
    }

    /// The seed's run (`latency -h -t 1 -T 5`): its RTD mins and maxes, and
    /// its avg histogram's HSD lines.
    const SEED_MINS_NS: [i64; 4] = [1485, 2616, 2616, 2276];
    const SEED_MAXS_NS: [i64; 4] = [83739, 34086, 86141, 63901];
    const SEED_AVGS_NS: [f64; 4] = [2709.0, 2703.0, 2721.0, 2711.0];
    const SEED_AVG_CELLS: [(usize, u64); 29] = [
        (1, 2),
        (2, 49391),
        (3, 437),
        (4, 35),
        (5, 12),
        (6, 9),
        (7, 42),
        (9, 1),
        (10, 7),
        (11, 6),
        (12, 8),
        (13, 6),
        (14, 2),
        (15, 1),
        (17, 1),
        (18, 1),
        (20, 2),
        (21, 1),
        (26, 2),
        (27, 1),
        (28, 2),
        (29, 1),
        (32, 2),
        (33, 1),
        (34, 1),
        (35, 1),
        (63, 1),
        (83, 1),
        (86, 1),
    ];

    /// The seed run's -H and -B (Xenomai's defaults).
    const SEED_CELLS: usize = 300;
    const SEED_BUCKET_NS: u64 = 1000;

    fn seed_histograms() -> [XenomaiHistogram; 3] {
        let mut min = XenomaiHistogram::new(SEED_CELLS, SEED_BUCKET_NS).unwrap();
        let mut max = min.clone();
        let avg = histogram(SEED_CELLS, SEED_BUCKET_NS, &SEED_AVG_CELLS);
        for (lo, hi) in SEED_MINS_NS.iter().zip(SEED_MAXS_NS) {
            min.add(*lo);
            max.add(hi);
        }
        [min, avg, max]
    }

    fn seed_totals() -> RunTotals {
        RunTotals {
            min_ns: 1485,
            avg_ns: 2711.0,
            max_ns: 86141,
            overruns: 0,
            msw: 0,
            actual_s: 5,
            requested_s: 5,
        }
    }

    /// The histogram part of the seed run with `-h`, as C's printf formats it.
    const SEED_HISTOGRAM_PART: &str = "\
---|--param|----range-|--samples
HSD|    min|   1 -  2 |        1
HSD|    min|   2 -  3 |        3
---|--param|----range-|--samples
HSD|    avg|   1 -  2 |        2
HSD|    avg|   2 -  3 |    49391
HSD|    avg|   3 -  4 |      437
HSD|    avg|   4 -  5 |       35
HSD|    avg|   5 -  6 |       12
HSD|    avg|   6 -  7 |        9
HSD|    avg|   7 -  8 |       42
HSD|    avg|   9 - 10 |        1
HSD|    avg|  10 - 11 |        7
HSD|    avg|  11 - 12 |        6
HSD|    avg|  12 - 13 |        8
HSD|    avg|  13 - 14 |        6
HSD|    avg|  14 - 15 |        2
HSD|    avg|  15 - 16 |        1
HSD|    avg|  17 - 18 |        1
HSD|    avg|  18 - 19 |        1
HSD|    avg|  20 - 21 |        2
HSD|    avg|  21 - 22 |        1
HSD|    avg|  26 - 27 |        2
HSD|    avg|  27 - 28 |        1
HSD|    avg|  28 - 29 |        2
HSD|    avg|  29 - 30 |        1
HSD|    avg|  32 - 33 |        2
HSD|    avg|  33 - 34 |        1
HSD|    avg|  34 - 35 |        1
HSD|    avg|  35 - 36 |        1
HSD|    avg|  63 - 64 |        1
HSD|    avg|  83 - 84 |        1
HSD|    avg|  86 - 87 |        1
---|--param|----range-|--samples
HSD|    max|  34 - 35 |        1
HSD|    max|  63 - 64 |        1
HSD|    max|  83 - 84 |        1
HSD|    max|  86 - 87 |        1
";

    /// The seed's statistics: min {1: 1, 2: 3} has mean 7/4 and stddev
    /// sqrt((0.75^2 + 3 * 0.25^2) / 3) = 0.5; max {34, 63, 83, 86} has mean
    /// 66.5 and stddev sqrt((32.5^2 + 3.5^2 + 16.5^2 + 19.5^2) / 3) =
    /// sqrt(1721 / 3) = 23.951; avg's 49978 and 2.034 are the seed's.
    const SEED_STATS: &str = "\
HSH|--param|--samples-|--average--|---stddev--
HSS|    min|         4|      1.750|      0.500
HSS|    avg|     49978|      2.034|      0.805
HSS|    max|         4|     66.500|     23.951
";

    // ---- c_format_g

    #[test]
    fn c_format_g_matches_glibc() {
        // Each pair checked against glibc's printf("%g") on this machine.
        let cases: [(f64, &str); 24] = [
            (0.0, "0"),
            (0.5, "0.5"),
            (1.0, "1"),
            (2.5, "2.5"),
            (100000.0, "100000"),
            (999999.4, "999999"),
            (999999.5, "1e+06"),
            (1e6, "1e+06"),
            (1234567.5, "1.23457e+06"),
            (1234565.0, "1.23456e+06"), // a tie: to even
            (1234575.0, "1.23458e+06"), // a tie: to even
            (123456.5, "123456"),       // a tie: to even
            (12345.65, "12345.6"),
            (0.0001, "0.0001"),
            (0.00009999995, "0.0001"),
            (0.000099999, "9.9999e-05"),
            (0.00001, "1e-05"),
            (123.456789, "123.457"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e-300, "1e-300"),
            (5e-324, "4.94066e-324"),
            (f64::MAX, "1.79769e+308"),
        ];
        for (x, expected) in cases {
            assert_eq!(c_format_g(x), expected, "%g of {x:e}");
        }
    }

    #[test]
    fn c_format_g_special_values() {
        assert_eq!(c_format_g(-0.0), "-0");
        assert_eq!(c_format_g(f64::INFINITY), "inf");
        assert_eq!(c_format_g(f64::NEG_INFINITY), "-inf");
        assert_eq!(c_format_g(f64::NAN), "nan");
        assert_eq!(c_format_g(-f64::NAN), "-nan");
    }

    #[test]
    fn c_fixed3_matches_glibc() {
        assert_eq!(c_fixed3(0.0625, 11), "      0.062"); // a tie: to even
        assert_eq!(c_fixed3(2.0005, 11), "      2.001"); // 2.000500000000000078...
        assert_eq!(c_fixed3(1.0005, 11), "      1.000"); // 1.000499999999999945...
        assert_eq!(c_fixed3(-0.0, 11), "     -0.000");
        assert_eq!(c_fixed3(f64::NAN, 11), "        nan");
        assert_eq!(c_fixed3(f64::NEG_INFINITY, 10), "      -inf");
        assert_eq!(c_fixed3(1e10, 11), "10000000000.000");
    }

    // ---- startup, RTT, RTH, RTD

    #[test]
    fn startup_header_is_exact() {
        assert_eq!(
            startup_header(100, 1),
            "== Sampling period: 100 us\n\
             == Test mode: in-kernel periodic task\n\
             == All results in microseconds\n\
             warming up...\n"
        );
        assert_eq!(
            startup_header(1000, 0),
            "== Sampling period: 1000 us\n\
             == Test mode: periodic user-mode task\n\
             == All results in microseconds\n\
             warming up...\n"
        );
    }

    #[test]
    fn quiet_notice_is_exact() {
        assert_eq!(quiet_notice(60), "running quietly for 60 seconds\n");
    }

    #[test]
    fn test_mode_names_and_fallback() {
        assert_eq!(test_mode_name(0), "periodic user-mode task");
        assert_eq!(test_mode_name(1), "in-kernel periodic task");
        assert_eq!(test_mode_name(2), "in-kernel timer handler");
        assert_eq!(test_mode_name(3), "unknown test mode");
        assert_eq!(test_mode_name(usize::MAX), "unknown test mode");
    }

    #[test]
    fn rtt_line_is_exact() {
        assert_eq!(
            rtt_line(1, 1, 100, 99),
            "RTT|  00:00:01  (in-kernel periodic task, 100 us period, priority 99)\n"
        );
        assert_eq!(
            rtt_line(3600 + 2 * 60 + 5, 2, 1000, 1),
            "RTT|  01:02:05  (in-kernel timer handler, 1000 us period, priority 1)\n"
        );
        // %.2ld is a minimum: 100 hours print three digits.
        assert_eq!(
            rtt_line(100 * 3600 + 59 * 60 + 59, 0, 100, 99),
            "RTT|  100:59:59  (periodic user-mode task, 100 us period, priority 99)\n"
        );
    }

    #[test]
    fn rth_line_is_the_titles_in_their_widths() {
        let titles = format!(
            "RTH|{:>11}|{:>11}|{:>11}|{:>8}|{:>6}|{:>11}|{:>11}\n",
            "----lat min",
            "----lat avg",
            "----lat max",
            "-overrun",
            "---msw",
            "---lat best",
            "--lat worst"
        );
        assert_eq!(RTH_LINE, titles);
        assert_eq!(
            RTH_LINE,
            "RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst\n"
        );
    }

    #[test]
    fn rtd_lines_of_the_seed() {
        let expected = [
            "RTD|      1.485|      2.709|     83.739|       0|     0|      1.485|     83.739\n",
            "RTD|      2.616|      2.703|     34.086|       0|     0|      1.485|     83.739\n",
            "RTD|      2.616|      2.721|     86.141|       0|     0|      1.485|     86.141\n",
            "RTD|      2.276|      2.711|     63.901|       0|     0|      1.485|     86.141\n",
        ];
        let (mut best, mut worst) = (i64::MAX, i64::MIN);
        for (i, line) in expected.iter().enumerate() {
            best = best.min(SEED_MINS_NS[i]);
            worst = worst.max(SEED_MAXS_NS[i]);
            let l = LoopLine {
                min_ns: SEED_MINS_NS[i],
                avg_ns: SEED_AVGS_NS[i],
                max_ns: SEED_MAXS_NS[i],
                overruns: 0,
                msw: 0,
                best_ns: best,
                worst_ns: worst,
            };
            assert_eq!(rtd_line(&l), *line);
        }
    }

    #[test]
    fn rtd_line_microseconds_negative_and_wide_values() {
        let l = LoopLine {
            min_ns: -1250,
            avg_ns: 62.5, // 0.0625 us: a tie, to even as glibc
            max_ns: 2_709_500,
            overruns: 123_456_789,
            msw: 1_234_567,
            best_ns: -1250,
            worst_ns: 1485,
        };
        assert_eq!(
            rtd_line(&l),
            "RTD|     -1.250|      0.062|   2709.500|123456789|1234567|     -1.250|      1.485\n"
        );
        let huge = LoopLine {
            min_ns: i64::MIN,
            avg_ns: f64::NAN,
            max_ns: i64::MAX,
            ..LoopLine::default()
        };
        assert_eq!(
            rtd_line(&huge),
            "RTD|-9223372036854776.000|        nan|9223372036854776.000|       0|     0|      0.000|      0.000\n"
        );
    }

    // ---- header cadence

    fn due_lines(data_lines: u64, lines: usize) -> Vec<usize> {
        let mut cadence = HeaderCadence::new(data_lines);
        (0..lines).filter(|_| cadence.due()).collect()
    }

    #[test]
    fn header_cadence_every_21_lines() {
        assert_eq!(due_lines(21, 64), [0, 21, 42, 63]);
    }

    #[test]
    fn header_cadence_zero_is_never_and_one_is_always() {
        assert_eq!(due_lines(0, 100), Vec::<usize>::new());
        assert_eq!(due_lines(1, 5), [0, 1, 2, 3, 4]);
        assert_eq!(due_lines(u64::MAX, 5), [0]);
    }

    // ---- RTS

    #[test]
    fn rts_block_of_the_seed() {
        assert_eq!(
            rts_block(&seed_totals()),
            "---|-----------|-----------|-----------|--------|------|-------------------------\n\
             RTS|      1.485|      2.711|     86.141|       0|     0|    00:00:05/00:00:05\n"
        );
    }

    #[test]
    fn rts_block_warns_of_mode_switches_without_the_mailing_list() {
        let t = RunTotals {
            min_ns: -3000,
            avg_ns: 1000.5, // 1.0005 us is 1.000499999... in binary
            max_ns: 1_000_000_000,
            overruns: 7,
            msw: 2,
            actual_s: 3725,
            requested_s: 360_000,
        };
        assert_eq!(
            rts_block(&t),
            "---|-----------|-----------|-----------|--------|------|-------------------------\n\
             RTS|     -3.000|      1.000|1000000.000|       7|     2|    01:02:05/100:00:00\n\
             Warning! some latency peaks may have been due to involuntary mode switches.\n"
        );
    }

    // ---- histograms

    #[test]
    fn new_refuses_empty_layouts() {
        assert_eq!(
            XenomaiHistogram::new(0, 1000),
            Err(XenomaiHistogramError::NoCells)
        );
        assert_eq!(
            XenomaiHistogram::new(300, 0),
            Err(XenomaiHistogramError::ZeroBucket)
        );
        assert_eq!(
            XenomaiHistogram::new(MAX_CELLS + 1, 1000),
            Err(XenomaiHistogramError::TooManyCells(MAX_CELLS + 1))
        );
        let h = XenomaiHistogram::new(MAX_CELLS, 1).unwrap();
        assert_eq!((h.cells(), h.bucket_ns(), h.total()), (MAX_CELLS, 1, 0));
    }

    #[test]
    fn add_counts_by_integer_division() {
        let mut h = XenomaiHistogram::new(10, 1000).unwrap();
        for dt in [0, 999, 1000, 1999, 2000, 9999] {
            h.add(dt);
        }
        assert_eq!(
            h.non_empty().collect::<Vec<_>>(),
            [(0, 2), (1, 2), (2, 1), (9, 1)]
        );
        assert_eq!(h.total(), 6);
    }

    #[test]
    fn add_counts_negative_latencies_by_magnitude() {
        let mut h = XenomaiHistogram::new(10, 1000).unwrap();
        h.add(-1);
        h.add(-999);
        h.add(-1000);
        h.add(-2500);
        assert_eq!(h.non_empty().collect::<Vec<_>>(), [(0, 2), (1, 1), (2, 1)]);
        h.add(i64::MIN);
        assert_eq!(h.count(9), 1);
    }

    #[test]
    fn add_counts_everything_beyond_in_the_last_cell() {
        let mut h = XenomaiHistogram::new(3, 1000).unwrap();
        h.add(2000); // the last cell itself
        h.add(3000); // one past
        h.add(1_000_000);
        h.add(i64::MAX);
        h.add(-5000);
        assert_eq!(h.non_empty().collect::<Vec<_>>(), [(2, 5)]);
        let mut one = XenomaiHistogram::new(1, 1).unwrap();
        one.add(0);
        one.add(12345);
        assert_eq!(one.non_empty().collect::<Vec<_>>(), [(0, 2)]);
    }

    #[test]
    fn counts_saturate() {
        let mut h = histogram(2, 1000, &[(1, u64::MAX)]);
        h.add(1000);
        assert_eq!(h.count(1), u64::MAX);
        h.add(0);
        assert_eq!(h.total(), u64::MAX);
        let full = h.clone();
        h.merge(&full).unwrap();
        assert_eq!(h.count(1), u64::MAX);
    }

    #[test]
    fn count_beyond_the_cells_is_zero() {
        let h = histogram(3, 1000, &[(2, 4)]);
        assert_eq!(h.count(2), 4);
        assert_eq!(h.count(3), 0);
        assert_eq!(h.count(usize::MAX), 0);
    }

    #[test]
    fn merge_adds_cells_of_the_same_layout_only() {
        let mut a = histogram(5, 1000, &[(0, 1), (3, 2)]);
        let b = histogram(5, 1000, &[(3, 5), (4, 1)]);
        a.merge(&b).unwrap();
        assert_eq!(a.non_empty().collect::<Vec<_>>(), [(0, 1), (3, 7), (4, 1)]);
        let before = a.clone();
        let other_bucket = XenomaiHistogram::new(5, 500).unwrap();
        let other_cells = XenomaiHistogram::new(6, 1000).unwrap();
        assert_eq!(
            a.merge(&other_bucket),
            Err(XenomaiHistogramError::LayoutMismatch {
                cells: 5,
                bucket_ns: 1000,
                other_cells: 5,
                other_bucket_ns: 500
            })
        );
        assert!(a.merge(&other_cells).is_err());
        assert_eq!(a, before);
    }

    // ---- histogram part

    #[test]
    fn histogram_part_of_the_seed_with_hsd() {
        let [min, avg, max] = seed_histograms();
        assert_eq!(
            histogram_part(&min, &avg, &max, true),
            format!("{SEED_HISTOGRAM_PART}{SEED_STATS}")
        );
    }

    #[test]
    fn histogram_part_without_hsd_is_the_statistics() {
        let [min, avg, max] = seed_histograms();
        assert_eq!(histogram_part(&min, &avg, &max, false), SEED_STATS);
    }

    #[test]
    fn hss_arithmetic_on_a_small_histogram() {
        // avg {0: 1, 1: 2, 4: 1}: mean (0 + 2 + 4) / 4 = 1.5, stddev
        // sqrt((1.5^2 + 2 * 0.5^2 + 2.5^2) / 3) = sqrt(3) = 1.732.
        // min {7: 1}: one count, stddev 0. max empty: mean 0, not nan.
        let min = histogram(300, 1000, &[(7, 1)]);
        let avg = histogram(300, 1000, &[(0, 1), (1, 2), (4, 1)]);
        let max = XenomaiHistogram::new(300, 1000).unwrap();
        assert_eq!(
            histogram_part(&min, &avg, &max, true),
            "---|--param|----range-|--samples\n\
             HSD|    min|   7 -  8 |        1\n\
             ---|--param|----range-|--samples\n\
             HSD|    avg|   0 -  1 |        1\n\
             HSD|    avg|   1 -  2 |        2\n\
             HSD|    avg|   4 -  5 |        1\n\
             ---|--param|----range-|--samples\n\
             HSH|--param|--samples-|--average--|---stddev--\n\
             HSS|    min|         1|      7.000|      0.000\n\
             HSS|    avg|         4|      1.500|      1.732\n\
             HSS|    max|         0|      0.000|      0.000\n"
        );
    }

    #[test]
    fn histogram_part_of_empty_histograms() {
        let empty = XenomaiHistogram::new(300, 1000).unwrap();
        let zero_line = |kind: &str| format!("HSS|    {kind}|         0|      0.000|      0.000\n");
        let stats = format!(
            "HSH|--param|--samples-|--average--|---stddev--\n{}{}{}",
            zero_line("min"),
            zero_line("avg"),
            zero_line("max")
        );
        assert_eq!(histogram_part(&empty, &empty, &empty, false), stats);
        assert_eq!(
            histogram_part(&empty, &empty, &empty, true),
            format!("{}{stats}", "---|--param|----range-|--samples\n".repeat(3))
        );
    }

    #[test]
    fn hsd_ranges_widen_past_three_digits() {
        let h = histogram(2000, 1000, &[(1234, 123_456_789)]);
        let empty = XenomaiHistogram::new(2000, 1000).unwrap();
        let text = histogram_part(&empty, &h, &empty, true);
        assert!(
            text.contains("HSD|    avg| 1234 -1235 | 123456789\n"),
            "{text}"
        );
        assert!(
            text.contains("HSS|    avg| 123456789|   1234.000|      0.000\n"),
            "{text}"
        );
    }

    // ---- gnuplot

    #[test]
    fn gnuplot_dump_of_a_small_histogram() {
        let avg = histogram(300, 1000, &[(2, 5), (3, 2), (5, 1)]);
        let t = RunTotals {
            min_ns: -1250,
            avg_ns: 2709.5,
            max_ns: 5999,
            overruns: 3,
            msw: 2,
            actual_s: 3725,
            requested_s: 0,
        };
        assert_eq!(
            gnuplot_dump(&avg, &t, 0, 1000, 80),
            "# 01:02:05 (periodic user-mode task, 1000 us period, priority 80)\n\
             # ----lat min|----lat avg|----lat max|-overrun|---msw|\n\
             #      -1.250|      2.709|      5.999|       3|     2|\n\
             2 1\n\
             2.5 6\n\
             3.5 3\n\
             4.5 1\n\
             5.5 2\n\
             6 1\n"
        );
    }

    #[test]
    fn gnuplot_dump_of_the_seed_starts_and_ends_at_cell_edges() {
        let [_, avg, _] = seed_histograms();
        let text = gnuplot_dump(&avg, &seed_totals(), 1, 100, 99);
        let lines: Vec<&str> = text.lines().collect();
        // 3 comments, the left edge, cells 1..=86, the right edge.
        assert_eq!(lines.len(), 3 + 1 + 86 + 1);
        assert_eq!(
            lines[..7],
            [
                "# 00:00:05 (in-kernel periodic task, 100 us period, priority 99)",
                "# ----lat min|----lat avg|----lat max|-overrun|---msw|",
                "#       1.485|      2.711|     86.141|       0|     0|",
                "1 1",
                "1.5 3",
                "2.5 49392",
                "3.5 438",
            ]
        );
        assert_eq!(lines[11], "8.5 1"); // an empty cell inside the range
        assert_eq!(lines[lines.len() - 3..], ["85.5 1", "86.5 2", "87 1"]);
    }

    #[test]
    fn gnuplot_dump_of_fine_and_coarse_cells() {
        let fine = histogram(10, 1, &[(0, 7), (1, 1)]);
        let t = RunTotals {
            avg_ns: 500.0,
            max_ns: 1999,
            ..RunTotals::default()
        };
        assert_eq!(
            gnuplot_dump(&fine, &t, 2, 50, 1),
            "# 00:00:00 (in-kernel timer handler, 50 us period, priority 1)\n\
             # ----lat min|----lat avg|----lat max|-overrun|---msw|\n\
             #       0.000|      0.500|      1.999|       0|     0|\n\
             0 1\n\
             0.0005 8\n\
             0.0015 2\n\
             0.002 1\n"
        );
        let coarse = histogram(3000, 700_000_000, &[(1428, 1), (1430, 4)]);
        let t = RunTotals {
            min_ns: 999_600_000,
            avg_ns: 1e9,
            max_ns: 1_001_000_000,
            overruns: 12_345_678,
            msw: 1_234_567,
            actual_s: 360_000,
            requested_s: 360_000,
        };
        assert_eq!(
            gnuplot_dump(&coarse, &t, 0, 1_000_000, 99),
            "# 100:00:00 (periodic user-mode task, 1000000 us period, priority 99)\n\
             # ----lat min|----lat avg|----lat max|-overrun|---msw|\n\
             #  999600.000|1000000.000|1001000.000|12345678|1234567|\n\
             9.996e+08 1\n\
             9.9995e+08 2\n\
             1.00065e+09 1\n\
             1.00135e+09 5\n\
             1.0017e+09 1\n"
        );
    }

    #[test]
    fn gnuplot_dump_of_an_empty_histogram_is_the_comments() {
        let empty = XenomaiHistogram::new(300, 1000).unwrap();
        assert_eq!(
            gnuplot_dump(&empty, &seed_totals(), 1, 100, 99),
            "# 00:00:05 (in-kernel periodic task, 100 us period, priority 99)\n\
             # ----lat min|----lat avg|----lat max|-overrun|---msw|\n\
             #       1.485|      2.711|     86.141|       0|     0|\n"
        );
    }

    #[test]
    fn gnuplot_dump_of_one_cell_at_the_end() {
        let mut h = XenomaiHistogram::new(4, 1000).unwrap();
        h.add(1_000_000);
        let text = gnuplot_dump(&h, &RunTotals::default(), 0, 100, 99);
        assert!(text.ends_with("|\n3 1\n3.5 2\n4 1\n"), "{text}");
    }

    // ---- serde

    #[test]
    fn serde_is_sparse_and_round_trips() {
        let [_, avg, _] = seed_histograms();
        let json = serde_json::to_string(&histogram(300, 1000, &[(3, 437), (2, 49391)])).unwrap();
        assert_eq!(
            json,
            r#"{"bucket_ns":1000,"cells":300,"counts":[[2,49391],[3,437]]}"#
        );
        let back: XenomaiHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, histogram(300, 1000, &[(2, 49391), (3, 437)]));
        let seed_back: XenomaiHistogram =
            serde_json::from_str(&serde_json::to_string(&avg).unwrap()).unwrap();
        assert_eq!(seed_back, avg);
        let empty = XenomaiHistogram::new(1, 1).unwrap();
        let json = serde_json::to_string(&empty).unwrap();
        assert_eq!(json, r#"{"bucket_ns":1,"cells":1,"counts":[]}"#);
        assert_eq!(
            serde_json::from_str::<XenomaiHistogram>(&json).unwrap(),
            empty
        );
    }

    #[test]
    fn serde_accepts_unsorted_and_zero_cells() {
        let h: XenomaiHistogram = serde_json::from_str(
            r#"{"bucket_ns":500,"cells":4,"counts":[[3,1],[0,0],[1,18446744073709551615]]}"#,
        )
        .unwrap();
        assert_eq!(h, histogram(4, 500, &[(1, u64::MAX), (3, 1)]));
    }

    #[test]
    fn serde_rejects_bad_documents() {
        let bad = [
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":[[3,1]]}"#,
                "outside its 3 cells",
            ),
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":[[1,1],[1,2]]}"#,
                "listed twice",
            ),
            (
                r#"{"bucket_ns":1000,"cells":0,"counts":[]}"#,
                "at least one cell",
            ),
            (r#"{"bucket_ns":0,"cells":3,"counts":[]}"#, "at least 1 ns"),
            (
                r#"{"bucket_ns":1000,"cells":1048577,"counts":[]}"#,
                "too many",
            ),
            (
                r#"{"bucket_ns":1000,"cells":18446744073709551615,"counts":[]}"#,
                "too many",
            ),
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":[[1,-1]]}"#,
                "invalid value",
            ),
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":[[-1,1]]}"#,
                "invalid value",
            ),
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":[[1]]}"#,
                "invalid length",
            ),
            (r#"{"bucket_ns":1000,"cells":3}"#, "missing field `counts`"),
            (
                r#"{"bucket_ns":1000,"cells":3,"counts":{}}"#,
                "invalid type",
            ),
            (r#"[1000,3]"#, "invalid"),
            ("", "EOF"),
        ];
        for (json, why) in bad {
            let err = serde_json::from_str::<XenomaiHistogram>(json)
                .expect_err(json)
                .to_string();
            assert!(err.contains(why), "{json}: {err}");
        }
    }

    // ---- properties

    proptest::proptest! {
        #[test]
        fn add_counts_every_latency_once_in_its_cell(
            cells in 1usize..400,
            bucket_ns in 1u64..5000,
            dts in proptest::collection::vec(proptest::num::i64::ANY, 0..50),
        ) {
            let mut h = XenomaiHistogram::new(cells, bucket_ns).unwrap();
            for &dt in &dts {
                let before = h.clone();
                h.add(dt);
                let cell = ((dt.unsigned_abs() / bucket_ns) as u128).min(cells as u128 - 1) as usize;
                proptest::prop_assert_eq!(h.count(cell), before.count(cell) + 1);
            }
            proptest::prop_assert_eq!(h.total(), dts.len() as u64);
            let back: XenomaiHistogram =
                serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, h);
        }

        #[test]
        fn c_format_g_reads_back_within_six_digits(x in proptest::num::f64::NORMAL) {
            let text = c_format_g(x);
            let back: f64 = text.parse().unwrap();
            proptest::prop_assert!(((back - x) / x).abs() <= 5e-6, "{} -> {}", x, text);
            let mantissa = text.split('e').next().unwrap();
            let significant = mantissa.trim_start_matches(['-', '0', '.']);
            let digits = significant.chars().filter(char::is_ascii_digit).count();
            proptest::prop_assert!(digits <= 6, "{} -> {}", x, text);
        }
    }
}
