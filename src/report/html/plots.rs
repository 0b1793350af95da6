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
}
