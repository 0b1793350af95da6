//! The HTML report's plots, drawn with plotters' SVG backend: the classic
//! latency histogram (x = latency in us, y = samples on a log axis, one line
//! per series) and the per-second minimum, mean and maximum over time.
//!
//! Text is written as SVG `<text>` elements with the generic `sans-serif`
//! family: no font file is read when the plot is made or shown.
//!
//! Both plots are bounded in size whatever the run's length: the histogram is
//! re-binned into at most `MAX_BINS` bins of one "nice" width (1, 2 or 5 x
//! 10^k ns), and the time series into at most `MAX_TIME_POINTS` windows, each
//! merging consecutive windows with their minimum, sample-weighted mean and
//! maximum (`stats::window::coarsened`): a spike is never averaged away.

use crate::stats::LatencySummary;
use crate::stats::window::{SecondStats, coarsened};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Plot size in SVG pixels.
pub const WIDTH: u32 = 1100;
pub const HEIGHT: u32 = 420;
/// Most histogram bins per plot.
pub const MAX_BINS: usize = 250;
/// Most per-second windows drawn per series.
pub const MAX_TIME_POINTS: usize = 1000;

/// Series colours (Tableau 10, then a few more); series beyond repeat them.
const PALETTE: [RGBColor; 14] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 110, 70),
    RGBColor(70, 70, 0),
];

/// The colour of the `i`-th series of a plot.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colour as CSS (for the tables beside the plots).
pub fn css_color(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// One series as a plot sees it.
pub struct PlotSeries<'a> {
    pub label: String,
    pub latency: &'a LatencySummary,
    pub per_second: &'a [SecondStats],
}

/// A histogram re-binned to one width: bin `i` spans
/// `[low_ns + i * width_ns, low_ns + (i + 1) * width_ns)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bins {
    pub low_ns: i64,
    pub width_ns: i64,
    pub counts: Vec<u64>,
}

/// The smallest width of 1, 2 or 5 x 10^k ns that covers `[low, high]` in at
/// most `max_bins` bins.
pub fn bin_width_ns(low_ns: i64, high_ns: i64, max_bins: usize) -> i64 {
    let span = (high_ns as i128 - low_ns as i128).max(0) + 1;
    let max_bins = max_bins.max(1) as i128;
    let mut decade: i128 = 1;
    loop {
        for step in [1, 2, 5] {
            let width = step * decade;
            if (span + width - 1) / width <= max_bins {
                return width.min(i64::MAX as i128) as i64;
            }
        }
        decade *= 10;
    }
}

/// The range `[low, high]` (ns) every series' histogram fits in: from 0, or
/// from the lowest bucket when latencies are negative.
fn histogram_range(series: &[PlotSeries]) -> Option<(i64, i64)> {
    let buckets = || series.iter().flat_map(|s| &s.latency.histogram);
    let low = buckets().map(|b| b.low_ns).min()?.min(0);
    let high = buckets().map(|b| b.high_ns).max()?;
    Some((low, high))
}

/// `summary`'s buckets counted into bins of `width_ns` from `low_ns` (each
/// bucket by its middle), `bins` of them.
pub fn rebin(summary: &LatencySummary, low_ns: i64, width_ns: i64, bins: usize) -> Bins {
    let mut counts = vec![0u64; bins];
    for b in &summary.histogram {
        let middle = (b.low_ns as i128 + b.high_ns as i128) / 2;
        let i = ((middle - low_ns as i128) / width_ns as i128).clamp(0, bins as i128 - 1);
        counts[i as usize] += b.count;
    }
    Bins {
        low_ns,
        width_ns,
        counts,
    }
}

/// `values[i]` held over `[x(i), x(i + 1))`, as the corners of a step line
/// (only where the value changes), starting and ending at `floor`.
fn steps(xs: impl Iterator<Item = (f64, f64, f64)>, floor: f64) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let mut last: Option<(f64, f64)> = None;
    for (start, end, y) in xs {
        match last {
            Some((prev_end, prev_y)) if prev_end == start && prev_y == y => {}
            Some((prev_end, prev_y)) => {
                points.push((prev_end, prev_y));
                if prev_end != start {
                    points.push((prev_end, floor));
                    points.push((start, floor));
                }
                points.push((start, y));
            }
            None => {
                points.push((start, floor));
                points.push((start, y));
            }
        }
        last = Some((end, y));
    }
    if let Some((end, y)) = last {
        points.push((end, y));
        points.push((end, floor));
    }
    points
}

const US: f64 = 1000.0;

/// One figure of a window (its minimum, mean or maximum), in ns.
type Figure = fn(&SecondStats) -> f64;

type DrawResult<T> = Result<T, String>;

fn drawing_error(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// Draws into an SVG string; `draw` gets the whole drawing area.
fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult<()>) -> DrawResult<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        draw(&root)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(text)
}

/// A chart with the report's common look.
fn chart_builder<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    builder
}

/// A legend line of `style`, as plotters draws one per series.
fn legend_mark(style: ShapeStyle) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)
}

/// The latency histogram of `series` (one line each), in one SVG. `None`
/// when no series has a histogram bucket.
pub fn histogram_svg(title: &str, series: &[PlotSeries]) -> DrawResult<Option<String>> {
    let Some((low, high)) = histogram_range(series) else {
        return Ok(None);
    };
    let width = bin_width_ns(low, high, MAX_BINS);
    let bins = ((high as i128 - low as i128) / width as i128 + 1) as usize;
    let binned: Vec<Bins> = series
        .iter()
        .map(|s| rebin(s.latency, low, width, bins))
        .collect();
    let top = binned
        .iter()
        .flat_map(|b| &b.counts)
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    // Empty bins sit on the floor, just below a count of 1.
    let floor = 0.5;
    let x_low = low as f64 / US;
    let x_high = (low as f64 + (bins as f64) * width as f64) / US;
    let caption = format!("{title}: latency histogram ({} bins)", bin_text(width));
    svg(|root| {
        let mut chart = chart_builder(root, &caption)
            .build_cartesian_2d(x_low..x_high, (floor..top * 3.0).log_scale())
            .map_err(drawing_error)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc("latency (us)")
            .y_desc("samples (log)")
            .y_label_formatter(&|v| {
                if *v >= 1.0 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(drawing_error)?;
        for (i, (s, b)) in series.iter().zip(&binned).enumerate() {
            let w = b.width_ns as f64;
            let points = steps(
                b.counts.iter().enumerate().map(|(k, &c)| {
                    let start = (b.low_ns as f64 + k as f64 * w) / US;
                    let y = if c == 0 { floor } else { c as f64 };
                    (start, start + w / US, y)
                }),
                floor,
            );
            let style = color(i).stroke_width(2);
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(drawing_error)?
                .label(s.label.as_str())
                .legend(legend_mark(style));
        }
        draw_legend(&mut chart)
    })
    .map(Some)
}

fn draw_legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(drawing_error)
}

/// A bin width for people: `10 ns`, `1 us`, `500 us`.
fn bin_text(width_ns: i64) -> String {
    crate::units::format_ns(width_ns)
        .replace(".00 ", " ")
        .replace(".0 ", " ")
}

/// The time unit of an axis spanning `seconds`, and its length in seconds.
fn time_unit(seconds: f64) -> (&'static str, f64) {
    if seconds > 3.0 * 3600.0 {
        ("h", 3600.0)
    } else if seconds > 3.0 * 60.0 {
        ("min", 60.0)
    } else {
        ("s", 1.0)
    }
}

/// The per-second windows of `series` as drawn: at most `MAX_TIME_POINTS`.
pub fn downsampled(windows: &[SecondStats]) -> Vec<SecondStats> {
    coarsened(windows, windows.len().div_ceil(MAX_TIME_POINTS))
}

/// Per-second minimum, mean and maximum of every series over time (thick:
/// maximum, medium: mean, thin and faint: minimum), in one SVG. `None` when
/// no series has a window.
pub fn per_second_svg(title: &str, series: &[PlotSeries]) -> DrawResult<Option<String>> {
    let drawn: Vec<Vec<SecondStats>> = series.iter().map(|s| downsampled(s.per_second)).collect();
    let all = || drawn.iter().flatten();
    let Some(end) = all().map(|w| w.second + w.span_s).max() else {
        return Ok(None);
    };
    let start = all().map(|w| w.second).min().unwrap_or(0);
    let y_low = all().map(|w| w.min_ns).min().unwrap_or(0).min(0) as f64 / US;
    let y_high = (all().map(|w| w.max_ns).max().unwrap_or(1) as f64 / US).max(0.001) * 1.08;
    let merged = series
        .iter()
        .zip(&drawn)
        .map(|(s, d)| s.per_second.len().div_ceil(d.len().max(1)))
        .max()
        .unwrap_or(1);
    let (unit, unit_s) = time_unit((end - start) as f64);
    let caption = if merged > 1 {
        format!("{title}: min / avg / max per window over time ({merged} windows merged per point)")
    } else {
        format!("{title}: min / avg / max per second over time")
    };
    svg(|root| {
        let mut chart = chart_builder(root, &caption)
            .build_cartesian_2d(start as f64 / unit_s..end as f64 / unit_s, y_low..y_high)
            .map_err(drawing_error)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(format!(
                "time since start ({unit}); thick: max, medium: avg, thin: min"
            ))
            .y_desc("latency (us)")
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(drawing_error)?;
        for (i, (s, windows)) in series.iter().zip(&drawn).enumerate() {
            let c = color(i);
            let figures: [(Figure, ShapeStyle); 3] = [
                (|w| w.min_ns as f64, c.mix(0.6).stroke_width(1)),
                (|w| w.avg_ns, c.mix(0.9).stroke_width(1)),
                (|w| w.max_ns as f64, c.stroke_width(2)),
            ];
            for (k, (figure, style)) in figures.into_iter().enumerate() {
                let points: Vec<(f64, f64)> = steps(
                    windows.iter().map(|w| {
                        (
                            w.second as f64 / unit_s,
                            (w.second + w.span_s) as f64 / unit_s,
                            figure(w) / US,
                        )
                    }),
                    f64::NAN,
                )
                .into_iter()
                .filter(|p| !p.1.is_nan())
                .collect();
                let drawn = chart
                    .draw_series(LineSeries::new(points, style))
                    .map_err(drawing_error)?;
                if k == 2 {
                    drawn.label(s.label.as_str()).legend(legend_mark(style));
                }
            }
        }
        draw_legend(&mut chart)
    })
    .map(Some)
}

/// Where percentile `p` sits on the "nines" axis: one unit per nine
/// (50 -> 0.30, 90 -> 1, 99 -> 2, 99.9 -> 3, ...), so the tail gets as much
/// room as the body.
pub fn nines_position(p: f64) -> f64 {
    (100.0 / (100.0 - p)).log10()
}

/// Where the maximum is drawn on the nines axis: one unit beyond 99.999.
pub const MAX_POSITION: f64 = 6.0;

/// The nines axis' ticks: the reported percentiles, then `max`.
pub fn nines_ticks() -> Vec<(f64, String)> {
    let mut ticks: Vec<(f64, String)> = crate::stats::REPORTED_PERCENTILES
        .iter()
        .map(|&p| (nines_position(p), format!("{p}")))
        .collect();
    ticks.push((MAX_POSITION, "max".to_string()));
    ticks
}

/// The 1, 2 and 5 x 10^k ns steps from 1 ns up to 1000 s.
fn nice_steps() -> impl Iterator<Item = i64> {
    (0..13).flat_map(|k| [1, 2, 5].map(|m| m * 10i64.pow(k)))
}

/// The bounds of a log latency axis holding `[low_ns, high_ns]`: the nearest
/// 1, 2 or 5 x 10^k at or below the low end (at least 1 ns: a log axis has
/// no zero) and at or above the high end, and never the same.
pub fn log_bounds_ns(low_ns: i64, high_ns: i64) -> (i64, i64) {
    let low_ns = low_ns.max(1);
    let low = nice_steps()
        .take_while(|&v| v <= low_ns)
        .last()
        .unwrap_or(1);
    let high_ns = high_ns.max(low + 1);
    let high = nice_steps()
        .find(|&v| v >= high_ns)
        .unwrap_or(1_000_000_000_000);
    (low, high.max(low * 2))
}

/// The ticks of a log latency axis over `[low_ns, high_ns]`: every 1, 2 and
/// 5 x 10^k inside, or only the powers of ten when that would be more than
/// nine ticks.
pub fn log_ticks_ns(low_ns: i64, high_ns: i64) -> Vec<i64> {
    let inside = |v: &i64| (low_ns..=high_ns).contains(v);
    let all: Vec<i64> = nice_steps().filter(inside).collect();
    if all.len() <= 9 {
        return all;
    }
    (0..13).map(|k| 10i64.pow(k)).filter(inside).collect()
}

/// A tick label without needless decimals: `500 ns`, `1 us`, `2.5 ms`.
pub fn tick_label(ns: i64) -> String {
    let (value, unit) = match ns.unsigned_abs() {
        0..1_000 => (ns as f64, "ns"),
        1_000..1_000_000 => (ns as f64 / 1e3, "us"),
        1_000_000..1_000_000_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// A latency drawn across a plot as a line: `--max-latency` or an absolute
/// `--fail-if` limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub label: String,
    pub ns: i64,
}

/// Draws the tick labels and grid lines of a chart whose mesh has none:
/// `x_ticks` and `y_ticks` are (value in chart coordinates, label).
fn draw_ticks<Y: Ranged<ValueType = f64>>(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &mut ChartContext<SVGBackend, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    x_ticks: &[(f64, String)],
    y_ticks: &[(f64, String)],
) -> DrawResult<()> {
    let x_range = chart.x_range();
    let y_range = chart.y_range();
    let grid = BLACK.mix(0.12).stroke_width(1);
    let font = ("sans-serif", 14).into_font();
    for (x, label) in x_ticks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, y_range.start), (*x, y_range.end)],
                grid,
            )))
            .map_err(drawing_error)?;
        let (px, py) = chart.backend_coord(&(*x, y_range.start));
        let style = TextStyle::from(font.clone()).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ));
        root.draw(&Text::new(label.clone(), (px, py + 6), style))
            .map_err(drawing_error)?;
    }
    for (y, label) in y_ticks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x_range.start, *y), (x_range.end, *y)],
                grid,
            )))
            .map_err(drawing_error)?;
        let (px, py) = chart.backend_coord(&(x_range.start, *y));
        let style = TextStyle::from(font.clone()).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Right,
            plotters::style::text_anchor::VPos::Center,
        ));
        root.draw(&Text::new(label.clone(), (px - 6, py), style))
            .map_err(drawing_error)?;
    }
    Ok(())
}

/// Latency (log axis) by percentile on the nines axis, one line per series,
/// every limit as a horizontal line. `None` when no series has a sample.
pub fn percentile_svg(
    title: &str,
    series: &[PlotSeries],
    limits: &[Limit],
) -> DrawResult<Option<String>> {
    let lines: Vec<(&PlotSeries, Vec<(f64, i64)>)> = series
        .iter()
        .filter(|s| s.latency.samples > 0)
        .map(|s| {
            let mut points: Vec<(f64, i64)> = s
                .latency
                .percentiles
                .iter()
                .map(|p| (nines_position(p.percentile), p.ns))
                .collect();
            points.push((MAX_POSITION, s.latency.max_ns));
            (s, points)
        })
        .collect();
    if lines.is_empty() {
        return Ok(None);
    }
    let values = || {
        lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, ns)| ns))
            .chain(limits.iter().map(|l| l.ns))
    };
    let positive_low = values().filter(|&v| v > 0).min().unwrap_or(1);
    let (low, high) = log_bounds_ns(positive_low, values().max().unwrap_or(1));
    let (y_low, y_high) = (low as f64, high as f64);
    // A latency at or below zero has no place on a log axis: drawn on the floor.
    let y = |ns: i64| (ns as f64).max(y_low);
    let caption = format!("{title}: latency by percentile");
    let y_ticks: Vec<(f64, String)> = log_ticks_ns(low, high)
        .into_iter()
        .map(|v| (v as f64, tick_label(v)))
        .collect();
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&caption, ("sans-serif", 18))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..MAX_POSITION + 0.15, (y_low..y_high).log_scale())
            .map_err(drawing_error)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .axis_desc_style(("sans-serif", 15))
            .x_desc("percentile (each step one more nine)")
            .y_desc("latency (log)")
            .draw()
            .map_err(drawing_error)?;
        draw_ticks(root, &mut chart, &nines_ticks(), &y_ticks)?;
        for (k, limit) in limits.iter().enumerate() {
            let style = BLACK.mix(0.7).stroke_width(if k == 0 { 2 } else { 1 });
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, y(limit.ns)), (MAX_POSITION + 0.15, y(limit.ns))],
                    style,
                )))
                .map_err(drawing_error)?
                .label(format!("{} ({})", limit.label, tick_label(limit.ns)))
                .legend(legend_mark(style));
        }
        for (i, (s, points)) in lines.iter().enumerate() {
            let index = series.iter().position(|x| std::ptr::eq(x, *s)).unwrap_or(i);
            let style = color(index).stroke_width(2);
            let points: Vec<(f64, f64)> = points.iter().map(|&(x, ns)| (x, y(ns))).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), style))
                .map_err(drawing_error)?
                .label(s.label.as_str())
                .legend(legend_mark(style));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color(index).filled())),
                )
                .map_err(drawing_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(drawing_error)
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencyRecorder;

    #[test]
    fn bin_widths_are_nice_and_bounded() {
        assert_eq!(bin_width_ns(0, 499, 500), 1);
        assert_eq!(bin_width_ns(0, 500, 500), 2);
        assert_eq!(bin_width_ns(0, 5_000, 500), 20);
        assert_eq!(bin_width_ns(0, 49_999, 500), 100);
        assert_eq!(bin_width_ns(0, 49_999, 250), 200);
        assert_eq!(bin_width_ns(-1_000, 3_600_000_000_000, 500), 10_000_000_000);
        assert_eq!(bin_width_ns(i64::MIN, i64::MAX, 1), i64::MAX);
    }

    #[test]
    fn rebinning_keeps_every_sample() {
        let mut r = LatencyRecorder::new();
        for ns in [1_000, 1_500, 2_000, 2_001, 99_000, 5_000_000] {
            r.record(ns);
        }
        let s = r.summary();
        let width = bin_width_ns(0, 5_010_000, MAX_BINS);
        let b = rebin(&s, 0, width, 500);
        assert_eq!(b.counts.iter().sum::<u64>(), 6);
        assert_eq!(b.counts[0], 4, "{b:?}");
        // 5 ms is in a bucket of a few us (3 significant digits).
        let at = (5_000_000 / width) as usize;
        assert_eq!(b.counts[at - 1] + b.counts[at], 1, "{b:?}");
    }

    #[test]
    fn steps_drop_to_the_floor_between_gaps() {
        let p = steps(
            [(0.0, 1.0, 5.0), (1.0, 2.0, 5.0), (3.0, 4.0, 2.0)].into_iter(),
            0.0,
        );
        assert_eq!(
            p,
            vec![
                (0.0, 0.0),
                (0.0, 5.0),
                (2.0, 5.0),
                (2.0, 0.0),
                (3.0, 0.0),
                (3.0, 2.0),
                (4.0, 2.0),
                (4.0, 0.0)
            ]
        );
    }

    #[test]
    fn downsampling_keeps_extremes_and_bounds_points() {
        let windows: Vec<SecondStats> = (0..86_400u64)
            .map(|s| SecondStats {
                second: s,
                span_s: 1,
                samples: 10,
                min_ns: if s == 40_000 { -7 } else { 1_000 },
                avg_ns: 2_000.0,
                max_ns: if s == 50_001 { 9_000_000 } else { 3_000 },
            })
            .collect();
        let d = downsampled(&windows);
        assert!(d.len() <= MAX_TIME_POINTS, "{}", d.len());
        assert_eq!(d.iter().map(|w| w.max_ns).max(), Some(9_000_000));
        assert_eq!(d.iter().map(|w| w.min_ns).min(), Some(-7));
        assert_eq!(d.iter().map(|w| w.samples).sum::<u64>(), 864_000);
        assert_eq!(d.last().map(|w| w.second + w.span_s), Some(86_400));
        assert!(d.iter().all(|w| (w.avg_ns - 2_000.0).abs() < 1e-9));
    }

    #[test]
    fn plots_are_svg_with_text_elements_and_no_font_files() {
        let mut r = LatencyRecorder::new();
        for ns in [2_000, 3_000, 5_000, 5_000] {
            r.record(ns);
        }
        let summary = r.summary();
        let windows = [SecondStats {
            second: 0,
            span_s: 1,
            samples: 4,
            min_ns: 2_000,
            avg_ns: 3_750.0,
            max_ns: 5_000,
        }];
        let series = [PlotSeries {
            label: "pair <0> & co".into(),
            latency: &summary,
            per_second: &windows,
        }];
        for svg in [
            histogram_svg("mq", &series).unwrap().unwrap(),
            per_second_svg("mq", &series).unwrap().unwrap(),
        ] {
            assert!(svg.starts_with("<svg"), "{svg}");
            assert!(svg.contains("<text"), "{svg}");
            assert!(svg.contains("pair &lt;0&gt; &amp; co"), "{svg}");
            assert!(svg.contains("<polyline"), "{svg}");
            assert!(!svg.contains("url("), "{svg}");
        }
        let empty = LatencySummary {
            histogram: vec![],
            ..summary.clone()
        };
        let none = [PlotSeries {
            label: "x".into(),
            latency: &empty,
            per_second: &[],
        }];
        assert_eq!(histogram_svg("mq", &none).unwrap(), None);
        assert_eq!(per_second_svg("mq", &none).unwrap(), None);
    }

    #[test]
    fn nines_axis_positions() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let expected = [
            (50.0, std::f64::consts::LOG10_2),
            (90.0, 1.0),
            (99.0, 2.0),
            (99.9, 3.0),
            (99.99, 4.0),
            (99.999, 5.0),
        ];
        for (p, x) in expected {
            assert!(close(nines_position(p), x), "{p}: {}", nines_position(p));
        }
        assert!(close(nines_position(0.0), 0.0));
        let ticks = nines_ticks();
        let labels: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["50", "90", "99", "99.9", "99.99", "99.999", "max"]);
        assert_eq!(ticks[6].0, MAX_POSITION);
    }

    #[test]
    fn log_axis_bounds_ticks_and_labels() {
        // The run: p50 13.7 us, one 9.81 ms outlier.
        assert_eq!(log_bounds_ns(13_700, 9_810_000), (10_000, 10_000_000));
        assert_eq!(log_bounds_ns(13_700, 22_900), (10_000, 50_000));
        assert_eq!(log_bounds_ns(-5, 0), (1, 2));
        assert_eq!(log_bounds_ns(2_000, 2_000), (2_000, 5_000));
        assert_eq!(log_bounds_ns(1_000, 1_000), (1_000, 2_000));
        assert_eq!(log_ticks_ns(10_000, 50_000), vec![10_000, 20_000, 50_000]);
        assert_eq!(
            log_ticks_ns(10_000, 10_000_000),
            vec![10_000, 100_000, 1_000_000, 10_000_000]
        );
        assert_eq!(
            log_ticks_ns(1_000, 100_000),
            vec![1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]
        );
        assert_eq!(tick_label(500), "500 ns");
        assert_eq!(tick_label(1_000), "1 us");
        assert_eq!(tick_label(20_000), "20 us");
        assert_eq!(tick_label(13_700), "13.7 us");
        assert_eq!(tick_label(2_500_000), "2.5 ms");
        assert_eq!(tick_label(10_000_000), "10 ms");
        assert_eq!(tick_label(2_000_000_000), "2 s");
    }

    #[test]
    fn percentile_plot_draws_series_limits_and_the_nines() {
        let mut r = LatencyRecorder::new();
        for ns in [13_000, 14_000, 15_000, 9_810_000] {
            r.record(ns);
        }
        let summary = r.summary();
        let series = [PlotSeries {
            label: "CPU 0".into(),
            latency: &summary,
            per_second: &[],
        }];
        let limits = [Limit {
            label: "--max-latency".into(),
            ns: 100_000,
        }];
        let svg = percentile_svg("timer", &series, &limits).unwrap().unwrap();
        // Every tick of both axes is a text of its own.
        for text in [
            "50",
            "90",
            "99.999",
            "max",
            "10 us",
            "100 us",
            "10 ms",
            "CPU 0",
            "--max-latency (100 us)",
        ] {
            assert!(
                svg.contains(&format!(">\n{text}\n</text>")),
                "{text} in {svg}"
            );
        }
        assert!(svg.contains("<polyline"));
        let empty = LatencyRecorder::new().summary();
        let none = [PlotSeries {
            label: "x".into(),
            latency: &empty,
            per_second: &[],
        }];
        assert_eq!(percentile_svg("t", &none, &limits).unwrap(), None);
    }
}
