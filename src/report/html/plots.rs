//! The HTML report's plots, drawn with plotters' SVG backend: latency by
//! percentile (log latency against the "nines"), the latency histogram (log
//! latency, log count, the few far outliers marked apart on a broken axis)
//! and the per-second minimum, mean and maximum over time; for OS noise,
//! the share of each window the CPU lost.
//!
//! Text is written as SVG `<text>` elements with the generic `sans-serif`
//! family: no font file is read when the plot is made or shown.
//!
//! The plots are bounded in size whatever the run's length: the histogram is
//! re-binned into `LOG_BINS` log bins, and the time series into at most
//! `MAX_TIME_POINTS` windows, each
//! merging consecutive windows with their minimum, sample-weighted mean and
//! maximum (`stats::window::coarsened`): a spike is never averaged away.

use crate::report::cells::{Markup, escape_markup};
use crate::stats::LatencySummary;
use crate::stats::window::{SecondStats, coarsened};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

pub mod gaps;

/// Plot size in SVG pixels.
pub const WIDTH: u32 = 1100;
pub const HEIGHT: u32 = 420;
/// Most per-second windows drawn per series.
pub const MAX_TIME_POINTS: usize = 1000;

/// Series colours: Okabe and Ito's palette, told apart with the common
/// forms of colour blindness (its yellow left out: too faint on white), then
/// a grey; series beyond repeat them.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(120, 120, 120),
];

/// The colour of the `i`-th series of a plot.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The colour as CSS (for the tables beside the plots).
pub fn css_color(i: usize) -> String {
    css(color(i))
}

fn css(c: RGBColor) -> String {
    let RGBColor(r, g, b) = c;
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// `c` moved toward `to` by `share` (0: `c`, 1: `to`).
fn blend(c: RGBColor, to: RGBColor, share: f64) -> RGBColor {
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * share).round() as u8;
    RGBColor(mix(c.0, to.0), mix(c.1, to.1), mix(c.2, to.2))
}

/// The shades of one series' four lines over time, so that they are told
/// apart by colour too, not only by width and dashes: the minimum light,
/// the mean lighter than the series' colour, the maximum in it, the p99
/// dark.
fn figure_shades(c: RGBColor) -> [RGBColor; 4] {
    [
        blend(c, WHITE, 0.55),
        blend(c, WHITE, 0.25),
        c,
        blend(c, BLACK, 0.45),
    ]
}

/// One series as a plot sees it.
pub struct PlotSeries<'a> {
    pub label: String,
    pub latency: &'a LatencySummary,
    pub per_second: &'a [SecondStats],
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

/// One figure of a window (its minimum, mean or maximum), in ns.
type Figure = fn(&SecondStats) -> f64;

type DrawResult<T> = Result<T, String>;

fn drawing_error(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// Draws into an SVG string; `draw` gets the whole drawing area.
fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult<()>) -> DrawResult<String> {
    svg_with_overlay(|root| draw(root).map(|()| Vec::new()))
}

/// Draws into an SVG string, then adds the raw SVG elements `draw` returns
/// on top (last in the document). plotters has no `<title>` (the hover
/// text of an element) nor dashed polylines: those are written by hand, in
/// the backend's pixel coordinates.
fn svg_with_overlay(
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult<Vec<String>>,
) -> DrawResult<String> {
    let mut text = String::new();
    let overlay;
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        overlay = draw(&root)?;
        root.present().map_err(drawing_error)?;
    }
    if !overlay.is_empty() {
        let end = text.rfind("</svg>").unwrap_or(text.len());
        text.insert_str(end, &(overlay.join("\n") + "\n"));
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

/// Most samples marked one by one beyond the histogram's body.
pub const MAX_OUTLIERS: u64 = 20;
/// Log bins across the histogram's body.
pub const LOG_BINS: usize = 120;
/// The share of the x axis the body gets when outliers are drawn apart.
const BODY_SHARE: f64 = 0.84;
/// A histogram mark (p50, p99, max) right of this share of the x axis has
/// its text written to its left: "max 10.0 ms" is about 10 % of the width.
const MARK_TEXT_TO_THE_LEFT: f64 = 0.85;
/// Where the outliers' strip starts on the x axis (after a gap that shows
/// the axis is broken).
const STRIP_START: f64 = 0.88;

/// How a histogram's latency axis is laid out: a log axis over the body
/// `[low_ns, high_ns]`, and, when the few slowest samples lie far beyond
/// it, a strip at the right where they are marked one by one over
/// `[high_ns, strip_high_ns]` (a broken axis), so one 10 ms outlier does
/// not squeeze the body into one bin.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramAxis {
    pub low_ns: f64,
    pub high_ns: f64,
    /// `Some(top)` when the outliers are drawn apart.
    pub strip_high_ns: Option<f64>,
}

impl HistogramAxis {
    /// Lays out the axis for buckets `(middle ns, count)`: the body ends at
    /// the smallest latency with at most `MAX_OUTLIERS` samples above it; the
    /// axis breaks when the slowest sample is over 4 times that.
    pub fn of(buckets: &[(i64, u64)]) -> Option<HistogramAxis> {
        let mut sorted: Vec<(i64, u64)> = buckets.iter().copied().filter(|b| b.1 > 0).collect();
        sorted.sort_unstable();
        let (&(first, _), &(last, _)) = (sorted.first()?, sorted.last()?);
        let mut above = 0u64;
        let mut body_top = last;
        for &(ns, count) in sorted.iter().rev() {
            if above + count > MAX_OUTLIERS {
                body_top = ns;
                break;
            }
            above += count;
            body_top = ns;
        }
        let low = first.max(1) as f64;
        let broken = above > 0 && last as f64 > 4.0 * (body_top.max(1) as f64);
        let top = if broken { body_top } else { last };
        // A 5 % margin in log space on each side, and never an empty span.
        let span = (top.max(1) as f64 / low).max(1.2);
        let pad = span.powf(0.05);
        Some(HistogramAxis {
            low_ns: low / pad,
            high_ns: low * span * pad,
            strip_high_ns: broken.then_some(last as f64 * 1.5),
        })
    }

    /// Where `ns` sits on the x axis, 0 to 1 (latencies at or below zero sit
    /// at the left edge).
    pub fn position(&self, ns: f64) -> f64 {
        let log_share = |v: f64, lo: f64, hi: f64| (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln());
        match self.strip_high_ns {
            None => log_share(ns, self.low_ns, self.high_ns).min(1.0),
            Some(top) if ns > self.high_ns => {
                STRIP_START + (1.0 - STRIP_START) * log_share(ns, self.high_ns, top).min(1.0)
            }
            Some(_) => BODY_SHARE * log_share(ns, self.low_ns, self.high_ns),
        }
    }

    /// The body's `LOG_BINS` bin edges, each the previous one times the
    /// same ratio.
    pub fn edges(&self) -> Vec<f64> {
        let ratio = (self.high_ns / self.low_ns).powf(1.0 / LOG_BINS as f64);
        (0..=LOG_BINS)
            .map(|k| self.low_ns * ratio.powi(k as i32))
            .collect()
    }

    /// The bin of the body `ns` falls in (clamped to the body).
    pub fn bin(&self, ns: f64) -> usize {
        let share =
            (ns.max(self.low_ns).ln() - self.low_ns.ln()) / (self.high_ns.ln() - self.low_ns.ln());
        ((share * LOG_BINS as f64) as usize).min(LOG_BINS - 1)
    }

    /// The axis' tick values (ns) with their labels: the 1, 2, 5 steps in
    /// the body (five log-spaced values of two significant digits when the
    /// body spans too little for three), and the strip's top.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let (lo, hi) = (self.low_ns.ceil() as i64, self.high_ns.floor() as i64);
        let mut values: Vec<i64> = log_ticks_ns(lo, hi);
        if values.len() < 3 {
            values = (0..5)
                .map(|i| {
                    let v = self.low_ns * (self.high_ns / self.low_ns).powf((0.5 + i as f64) / 5.0);
                    let scale = 10f64.powi(v.log10().floor() as i32 - 1);
                    ((v / scale).round() * scale) as i64
                })
                .collect();
            values.dedup();
        }
        let mut ticks: Vec<(f64, String)> = values
            .into_iter()
            .map(|v| (self.position(v as f64), tick_label(v)))
            .collect();
        if let Some(top) = self.strip_high_ns {
            let (_, nice) = log_bounds_ns(top as i64, top as i64);
            let v = nice_steps()
                .take_while(|&v| (v as f64) <= top)
                .last()
                .unwrap_or(nice);
            if v as f64 > self.high_ns {
                ticks.push((self.position(v as f64), tick_label(v)));
            }
        }
        ticks
    }
}

/// One series' body bin counts and its outliers (ns, count).
type Binned = (Vec<u64>, Vec<(i64, u64)>);

/// The latency histogram of `series` (one line each) on a log latency axis
/// and a log count axis, the outliers marked apart, each series' p50, p99
/// and maximum marked on the axis. `None` when no series has a bucket.
pub fn histogram_svg(title: &str, series: &[PlotSeries]) -> DrawResult<Option<String>> {
    let middle = |b: &crate::stats::Bucket| ((b.low_ns as i128 + b.high_ns as i128) / 2) as i64;
    let all: Vec<(i64, u64)> = series
        .iter()
        .flat_map(|s| s.latency.histogram.iter().map(|b| (middle(b), b.count)))
        .collect();
    let Some(axis) = HistogramAxis::of(&all) else {
        return Ok(None);
    };
    let binned = bin_series(series, &axis, middle);
    let top = binned
        .iter()
        .flat_map(|(c, o)| c.iter().copied().chain(o.iter().map(|x| x.1)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let floor = 0.5;
    let y_high = 10f64.powi(top.log10().floor() as i32 + 1).max(10.0);
    let edges = axis.edges();
    let overflow: u64 = series.iter().map(|s| s.latency.overflow).sum();
    let caption = format!("{title}: latency histogram (log latency, log count)");
    let x_ticks: Vec<(f64, String)> = axis.ticks();
    let y_ticks: Vec<(f64, String)> = (0..=(y_high.log10() as i32))
        .map(|k| (10f64.powi(k), format!("{}", 10u64.pow(k as u32))))
        .collect();
    svg(|root| {
        let mut chart = ticked_chart(
            root,
            &caption,
            (0.0..1.0, floor..y_high),
            ("latency (log)", "samples (log)"),
            (&x_ticks, &y_ticks),
        )?;
        let text_style = |c: RGBColor| TextStyle {
            color: c.to_backend_color(),
            ..TextStyle::from(("sans-serif", 12).into_font())
        };
        if axis.strip_high_ns.is_some() {
            // The break: a gap between the body and the outliers' strip.
            let gap = (BODY_SHARE + STRIP_START) / 2.0;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(BODY_SHARE + 0.01, floor), (STRIP_START - 0.01, y_high)],
                    BLACK.mix(0.06).filled(),
                )))
                .map_err(drawing_error)?;
            // Half-way up (log): the legend takes the top right corner,
            // the outliers' own marks are low counts (at most MAX_OUTLIERS).
            chart
                .draw_series(std::iter::once(Text::new(
                    "outliers",
                    (
                        gap + 0.01,
                        (floor * y_high).sqrt().max(MAX_OUTLIERS as f64 * 2.0),
                    ),
                    text_style(BLACK),
                )))
                .map_err(drawing_error)?;
        }
        for (i, (s, (counts, outliers))) in series.iter().zip(&binned).enumerate() {
            let c = color(i);
            let points = steps(
                counts.iter().enumerate().map(|(k, &n)| {
                    let y = if n == 0 { floor } else { n as f64 };
                    (axis.position(edges[k]), axis.position(edges[k + 1]), y)
                }),
                floor,
            );
            let style = c.stroke_width(2);
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(drawing_error)?
                .label(s.label.as_str())
                .legend(legend_mark(style));
            for &(ns, n) in outliers {
                let x = axis.position(ns as f64);
                chart
                    .draw_series([PathElement::new(
                        vec![(x, floor), (x, n as f64)],
                        c.stroke_width(2),
                    )])
                    .map_err(drawing_error)?;
                chart
                    .draw_series(std::iter::once(Circle::new((x, n as f64), 4, c.filled())))
                    .map_err(drawing_error)?;
            }
            draw_percentile_marks(&mut chart, (s.latency, &axis), c, i, floor)?;
        }
        if overflow > 0 {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(
                        "{overflow} sample(s) beyond the histogram's range (over 1 h or below -1 s)"
                    ),
                    (0.02, y_high / 1.6),
                    text_style(RGBColor(176, 0, 32)),
                )))
                .map_err(drawing_error)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
    .map(Some)
}

/// Per series: the body's bin counts on `axis` and the outliers (ns,
/// count), each bucket counted at its `middle`.
fn bin_series(
    series: &[PlotSeries],
    axis: &HistogramAxis,
    middle: impl Fn(&crate::stats::Bucket) -> i64,
) -> Vec<Binned> {
    let mut binned: Vec<Binned> = Vec::new();
    for s in series {
        let mut counts = vec![0u64; LOG_BINS];
        let mut outliers = Vec::new();
        for b in &s.latency.histogram {
            let m = middle(b);
            if axis.strip_high_ns.is_some() && m as f64 > axis.high_ns {
                outliers.push((m, b.count));
            } else {
                counts[axis.bin(m as f64)] += b.count;
            }
        }
        binned.push((counts, outliers));
    }
    binned
}

/// A series' p50, p99 and maximum as marks on the latency axis of `chart`,
/// in its colour `c`; series `i`'s labels on their own line.
fn draw_percentile_marks(
    chart: &mut ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, LogCoord<f64>>>,
    (l, axis): (&LatencySummary, &HistogramAxis),
    c: RGBColor,
    i: usize,
    floor: f64,
) -> DrawResult<()> {
    let text_style = |c: RGBColor| TextStyle {
        color: c.to_backend_color(),
        ..TextStyle::from(("sans-serif", 12).into_font())
    };
    let marks = [
        ("p50", l.percentile(50.0)),
        ("p99", l.percentile(99.0)),
        ("max", (l.samples > 0).then_some(l.max_ns)),
    ];
    for (name, value) in marks {
        let Some(ns) = value else { continue };
        let x = axis.position(ns as f64);
        chart
            .draw_series([PathElement::new(
                vec![(x, floor), (x, floor * 2.2)],
                c.stroke_width(3),
            )])
            .map_err(drawing_error)?;
        // A mark near the right edge is written to its left, so
        // that the plot does not cut it ("max 686 u").
        let mut style = text_style(c);
        if x > MARK_TEXT_TO_THE_LEFT {
            style.pos = plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Top,
            );
        }
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{name} {}", crate::units::format_ns(ns)),
                (x, floor * (2.6 + 1.6 * i as f64)),
                style,
            )))
            .map_err(drawing_error)?;
    }
    Ok(())
}

/// The legend of the series (and marks) in the plots' one look, at `position`.
fn draw_legend<'a, 'b: 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(drawing_error)
}

/// A number for an axis label without needless decimals: `5`, `2.5`.
pub fn axis_number(v: f64) -> String {
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
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

/// A window's 99th percentile, when the report has one per window (schema
/// 3; reports of version 2 have none, and a window whose histogram was lost
/// has none).
pub fn window_p99(w: &SecondStats) -> Option<u64> {
    w.p99_ns.map(|ns| ns.max(0) as u64)
}

/// What a mark on the over-time plot stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A sample `--trace-spikes` traced (coloured as its series).
    Spike,
    /// A message of the kernel log.
    KernelLog,
}

/// A moment marked on the over-time plot, with its one-line cause shown on
/// hover (an SVG `<title>`).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeMark {
    /// Seconds on the plot's time axis (since the test's start).
    pub second: f64,
    pub kind: MarkKind,
    /// The series' colour index (spikes).
    pub series: Option<usize>,
    /// The latency it is drawn at (spikes), ns.
    pub ns: Option<i64>,
    /// The hover text: when and why.
    pub text: String,
}

/// The p99 of each drawn point: the windows `downsampled` merges into one
/// point (`n` consecutive ones), with the highest p99 among them, so a bad
/// window is never hidden by merging. `(start s, end s, p99 ns)`.
fn p99_points(
    windows: &[SecondStats],
    p99: fn(&SecondStats) -> Option<u64>,
) -> Vec<(u64, u64, Option<u64>)> {
    let n = windows.len().div_ceil(MAX_TIME_POINTS).max(1);
    windows
        .chunks(n)
        .map(|chunk| {
            let first = chunk[0].second;
            let end = chunk
                .iter()
                .map(|w| w.second + w.span_s)
                .max()
                .unwrap_or(first);
            (first, end, chunk.iter().filter_map(p99).max())
        })
        .collect()
}

/// Per-second minimum, mean and maximum of every series over time (thick:
/// maximum, medium: mean, thin and faint: minimum), the p99 per window
/// (dashed) where the report has it, and `marks` (traced spikes, kernel
/// messages) on the time axis, in one SVG. `None` when no series has a
/// window.
pub fn per_second_svg(
    title: &str,
    series: &[PlotSeries],
    marks: &[TimeMark],
) -> DrawResult<Option<String>> {
    over_time_svg(title, series, marks, window_p99)
}

/// `per_second_svg` with the per-window p99 taken by `p99` (tests give one).
fn over_time_svg(
    title: &str,
    series: &[PlotSeries],
    marks: &[TimeMark],
    p99: fn(&SecondStats) -> Option<u64>,
) -> DrawResult<Option<String>> {
    let drawn: Vec<Vec<SecondStats>> = series.iter().map(|s| downsampled(s.per_second)).collect();
    let p99s: Vec<Vec<(u64, u64, Option<u64>)>> = series
        .iter()
        .map(|s| p99_points(s.per_second, p99))
        .collect();
    let all = || drawn.iter().flatten();
    let Some(end) = all().map(|w| w.second + w.span_s).max() else {
        return Ok(None);
    };
    let start = all().map(|w| w.second).min().unwrap_or(0);
    // A log latency axis: one spike does not flatten the minima and means.
    // Latencies at or below zero have no place on it and sit on its floor.
    let positive_low = all()
        .map(|w| w.min_ns)
        .chain(all().map(|w| w.avg_ns.round() as i64))
        .filter(|&v| v > 0)
        .min()
        .unwrap_or(1);
    let (low, high) = log_bounds_ns(positive_low, all().map(|w| w.max_ns).max().unwrap_or(1));
    let (y_low, y_high) = (low as f64, high as f64);
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
    let any_p99 = p99s.iter().flatten().any(|p| p.2.is_some());
    let x_desc = if any_p99 {
        format!(
            "time since start ({unit}); max: thick; p99: dashed, darker; avg: lighter; min: thin, lightest"
        )
    } else {
        format!("time since start ({unit}); max: thick; avg: lighter; min: thin, lightest")
    };
    let (x_low, x_high) = (start as f64 / unit_s, end as f64 / unit_s);
    svg_with_overlay(|root| {
        let axes = TimeAxes {
            x: x_low..x_high,
            y_ns: (low, high),
            x_desc: &x_desc,
            y_desc: "latency (log)",
        };
        let mut chart = log_time_chart(root, &caption, axes)?;
        let mut overlay = Vec::new();
        for (i, (s, windows)) in series.iter().zip(&drawn).enumerate() {
            let [min_shade, avg_shade, max_shade, p99_shade] = figure_shades(color(i));
            let figures: [(Figure, ShapeStyle); 3] = [
                (|w| w.min_ns as f64, min_shade.stroke_width(1)),
                (|w| w.avg_ns, avg_shade.stroke_width(1)),
                (|w| w.max_ns as f64, max_shade.stroke_width(2)),
            ];
            for (k, (figure, style)) in figures.into_iter().enumerate() {
                let points: Vec<(f64, f64)> = steps(
                    windows.iter().map(|w| {
                        (
                            w.second as f64 / unit_s,
                            (w.second + w.span_s) as f64 / unit_s,
                            figure(w).max(y_low),
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
            overlay.extend(p99_polylines(
                &chart,
                &p99s[i],
                p99_shade,
                unit_s,
                (y_low, y_high),
            ));
        }
        mark_legend(&mut chart, marks)?;
        overlay.extend(mark_shapes(
            &chart,
            marks,
            unit_s,
            (x_low, x_high),
            (y_low, y_high),
        ));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(overlay)
    })
    .map(Some)
}

/// The axes of a plot over time: x in the time unit, a log y axis over
/// `[y_ns.0, y_ns.1]` (from `log_bounds_ns`), and their descriptions.
struct TimeAxes<'a> {
    x: std::ops::Range<f64>,
    y_ns: (i64, i64),
    x_desc: &'a str,
    y_desc: &'a str,
}

/// A chart of the report's look over time with a log latency axis, its
/// ticks drawn (`log_ticks_ns`): the over-time plot's and hwlat's gaps'.
fn log_time_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    axes: TimeAxes,
) -> DrawResult<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, LogCoord<f64>>>> {
    let (low, high) = axes.y_ns;
    let y_ticks: Vec<(f64, String)> = log_ticks_ns(low, high)
        .into_iter()
        .map(|v| (v as f64, tick_label(v)))
        .collect();
    let mut chart = chart_builder(root, caption)
        .build_cartesian_2d(axes.x, (low as f64..high as f64).log_scale())
        .map_err(drawing_error)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(&|v| axis_number(*v))
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(drawing_error)?;
    draw_ticks(root, &mut chart, &[], &y_ticks)?;
    Ok(chart)
}

/// The p99 per window of one series as dashed polylines over `chart`, in
/// `shade`: each run of windows that has one is a polyline of its own (a
/// window without one breaks it).
fn p99_polylines<Y: Ranged<ValueType = f64>>(
    chart: &ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, Y>>,
    points: &[(u64, u64, Option<u64>)],
    shade: RGBColor,
    unit_s: f64,
    (y_low, y_high): (f64, f64),
) -> Vec<String> {
    let mut overlay = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut flush = |run: &mut Vec<String>| {
        if run.len() > 1 {
            overlay.push(format!(
                "<polyline class=\"p99\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" \
                 stroke-dasharray=\"6 3\" points=\"{}\"/>",
                css(shade),
                run.join(" ")
            ));
        }
        run.clear();
    };
    for &(from, to, value) in points {
        match value {
            Some(ns) => {
                let y = (ns as f64).clamp(y_low, y_high);
                for x in [from, to] {
                    let (px, py) = chart.backend_coord(&(x as f64 / unit_s, y));
                    run.push(format!("{px},{py}"));
                }
            }
            None => flush(&mut run),
        }
    }
    flush(&mut run);
    overlay
}

/// A legend entry per kind of mark in `marks` (an empty series carries it).
fn mark_legend<Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, Y>>,
    marks: &[TimeMark],
) -> DrawResult<()> {
    let spike_shape: fn(i32, i32) -> Vec<(i32, i32)> =
        |x, y| vec![(x + 4, y - 5), (x + 16, y - 5), (x + 10, y + 5)];
    let kernel_shape: fn(i32, i32) -> Vec<(i32, i32)> =
        |x, y| vec![(x + 10, y - 6), (x + 16, y), (x + 10, y + 6), (x + 4, y)];
    let kinds = [
        (
            MarkKind::Spike,
            "traced spike (hover: its cause)",
            spike_shape,
            BLACK.mix(0.7),
        ),
        (
            MarkKind::KernelLog,
            "kernel log message (hover: its text)",
            kernel_shape,
            KERNEL_MARK.mix(1.0),
        ),
    ];
    for (kind, label, shape, fill) in kinds {
        if marks.iter().any(|m| m.kind == kind) {
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
                .map_err(drawing_error)?
                .label(label)
                .legend(move |(x, y)| Polygon::new(shape(x, y), fill.filled()));
        }
    }
    Ok(())
}

/// Each of `marks` on the time axis of `chart` (x in `unit_s`, y from
/// `y_low` to `y_high`), as SVG drawn over the plot with its hover text.
fn mark_shapes<Y: Ranged<ValueType = f64>>(
    chart: &ChartContext<SVGBackend, Cartesian2d<RangedCoordf64, Y>>,
    marks: &[TimeMark],
    unit_s: f64,
    (x_low, x_high): (f64, f64),
    (y_low, y_high): (f64, f64),
) -> Vec<String> {
    let mut overlay = Vec::new();
    for mark in marks {
        let t = (mark.second / unit_s).clamp(x_low, x_high);
        let (px, top) = chart.backend_coord(&(t, y_high));
        let (_, bottom) = chart.backend_coord(&(t, y_low));
        // A spike sits at its latency (a triangle pointing at it); a
        // kernel message has none: a diamond on the time axis and a
        // faint line up through the plot. The wide transparent line or
        // shape is what the pointer finds, so the hover works near the
        // mark, not only on its few pixels.
        let shape = match (mark.kind, mark.ns) {
            (MarkKind::Spike, ns) => {
                let y = ns.map_or(y_high, |ns| (ns as f64).clamp(y_low, y_high));
                let (_, py) = chart.backend_coord(&(t, y));
                let fill = mark.series.map_or("#444444".to_string(), css_color);
                format!(
                    "<path d=\"M{px},{py} l-6,-11 h12 z\" fill=\"{fill}\" stroke=\"#000000\" stroke-width=\"0.8\"/>"
                )
            }
            (MarkKind::KernelLog, _) => {
                let RGBColor(r, g, b) = KERNEL_MARK;
                let fill = format!("#{r:02x}{g:02x}{b:02x}");
                format!(
                    "<line x1=\"{px}\" y1=\"{top}\" x2=\"{px}\" y2=\"{bottom}\" stroke=\"{fill}\" stroke-opacity=\"0.6\" stroke-width=\"1\" stroke-dasharray=\"3 3\"/>\
                     <path d=\"M{px},{} l7,7 l-7,7 l-7,-7 z\" fill=\"{fill}\"/>\
                     <line x1=\"{px}\" y1=\"{top}\" x2=\"{px}\" y2=\"{bottom}\" stroke=\"#000000\" stroke-opacity=\"0\" stroke-width=\"9\"/>",
                    bottom - 14
                )
            }
        };
        overlay.push(format!(
            "<g class=\"mark\" data-x=\"{px}\"><title>{}</title>{shape}</g>",
            escape_markup(&mark.text, Markup::Content)
        ));
    }
    overlay
}

/// One noise CPU as the share plot sees it.
pub struct ShareSeries<'a> {
    pub label: String,
    pub per_second: &'a [SecondStats],
    /// The share of its time the spinner ran (`--runtime` / `--period`; 1
    /// when it always spins): a window's noise counts against the time spun.
    pub duty: f64,
    /// Where the test ended, s: the quiet seconds at the end (no window) are
    /// drawn at zero up to here.
    pub end_s: f64,
}

/// The noise share of a window, percent: its interruptions (samples x mean
/// length) over the time the spinner spun in it (the window's span x the
/// duty cycle). A window that merges several keeps the same meaning: the
/// merge sums samples and spans and weights the mean by samples.
pub fn window_share_percent(w: &SecondStats, duty: f64) -> f64 {
    let spun_ns = w.span_s as f64 * 1e9 * duty;
    if spun_ns <= 0.0 {
        return 0.0;
    }
    w.samples as f64 * w.avg_ns / spun_ns * 100.0
}

/// The axis top of a share plot: the highest share with some room above it,
/// rounded up to 1, 2 or 5 times a power of ten (at least 0.01 %).
pub fn share_axis_top(highest_percent: f64) -> f64 {
    let want = (highest_percent * 1.1).max(0.01);
    let mut decade = 10f64.powf(want.log10().floor());
    loop {
        for step in [1.0, 2.0, 5.0] {
            if step * decade >= want - 1e-12 {
                return step * decade;
            }
        }
        decade *= 10.0;
    }
}

/// What a share plot's windows hold: its caption after the test's name,
/// and its y axis.
pub struct ShareText {
    pub caption: &'static str,
    pub y_desc: &'static str,
}

/// OS noise's share plot: the interruptions.
pub const NOISE_SHARE: ShareText = ShareText {
    caption: "noise share per window over time",
    y_desc: "noise (% of the time spun)",
};

/// OS noise over time: the share of each window the CPU lost to
/// interruptions, one step line per CPU, on a linear percent axis (a window
/// without interruptions is at zero, not left out). `None` without CPUs.
pub fn noise_share_svg(title: &str, series: &[ShareSeries]) -> DrawResult<Option<String>> {
    share_svg(title, &NOISE_SHARE, series)
}

/// A share plot over time (`noise_share_svg`; hwlat's hardware time) whose
/// windows hold what `text` says.
pub fn share_svg(
    title: &str,
    text: &ShareText,
    series: &[ShareSeries],
) -> DrawResult<Option<String>> {
    if series.is_empty() {
        return Ok(None);
    }
    let drawn: Vec<Vec<SecondStats>> = series.iter().map(|s| downsampled(s.per_second)).collect();
    let end = series
        .iter()
        .zip(&drawn)
        .flat_map(|(s, d)| {
            d.iter()
                .map(|w| (w.second + w.span_s) as f64)
                .chain([s.end_s])
        })
        .fold(0.0, f64::max);
    if end <= 0.0 {
        return Ok(None);
    }
    let highest = series
        .iter()
        .zip(&drawn)
        .flat_map(|(s, d)| d.iter().map(|w| window_share_percent(w, s.duty)))
        .fold(0.0, f64::max);
    let top = share_axis_top(highest);
    let (unit, unit_s) = time_unit(end);
    let caption = format!("{title}: {}", text.caption);
    svg(|root| {
        let mut chart = chart_builder(root, &caption)
            .build_cartesian_2d(0.0..end / unit_s, 0.0..top)
            .map_err(drawing_error)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(format!("time since start ({unit})"))
            .y_desc(text.y_desc)
            .x_label_formatter(&|v| axis_number(*v))
            .y_label_formatter(&|v| format!("{} %", axis_number(*v)))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(drawing_error)?;
        for (i, (s, windows)) in series.iter().zip(&drawn).enumerate() {
            let style = color(i).stroke_width(2);
            let points = share_points(windows, s.duty, s.end_s, unit_s);
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(drawing_error)?
                .label(s.label.as_str())
                .legend(legend_mark(style));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
    .map(Some)
}

/// One CPU's share line: a step per window, zero between windows (no
/// interruption there) and over whole quiet seconds up to the run's end
/// `end_s`; x in units of `unit_s`.
fn share_points(windows: &[SecondStats], duty: f64, end_s: f64, unit_s: f64) -> Vec<(f64, f64)> {
    let mut points = steps(
        windows.iter().map(|w| {
            (
                w.second as f64 / unit_s,
                (w.second + w.span_s) as f64 / unit_s,
                window_share_percent(w, duty),
            )
        }),
        0.0,
    );
    let end_x = end_s / unit_s;
    let last = points.last().map_or(0.0, |p| p.0);
    let n = points.len();
    if n >= 2 && last < end_x && end_s - last * unit_s < 1.0 {
        // Less than a second past the last window: the run's end, whose
        // few samples that window holds (stats::window::fold_short_tail).
        // Its level holds to the end; a drop to zero there would show a
        // quiet time that was not measured.
        points[n - 2].0 = end_x;
        points[n - 1].0 = end_x;
    } else {
        if points.is_empty() {
            points.push((0.0, 0.0));
        }
        if last < end_x {
            points.push((end_x, 0.0));
        }
    }
    points
}

/// The colour of kernel-log marks (apart from every series colour).
const KERNEL_MARK: RGBColor = RGBColor(90, 0, 120);

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

/// An axis tick: its value in chart coordinates and its label.
type Tick = (f64, String);

/// The chart of the percentile plot and the histogram: a linear x axis over
/// `ranges.0` (positions the caller computes), a log y axis over `ranges.1`,
/// the axes described by `descs`, and every tick drawn by `draw_ticks` from
/// `ticks` (the mesh draws none: plotters' own log-axis labels have needless
/// decimals and its key points cannot be chosen).
fn ticked_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    ranges: (std::ops::Range<f64>, std::ops::Range<f64>),
    descs: (&str, &str),
    ticks: (&[Tick], &[Tick]),
) -> DrawResult<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, LogCoord<f64>>>> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(ranges.0, ranges.1.log_scale())
        .map_err(drawing_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        // A log axis still gets one key point of its own: the ticks are
        // drawn by `draw_ticks`.
        .y_label_formatter(&|_| String::new())
        .set_all_tick_mark_size(0)
        .axis_desc_style(("sans-serif", 15))
        .x_desc(descs.0)
        .y_desc(descs.1)
        .draw()
        .map_err(drawing_error)?;
    draw_ticks(root, &mut chart, ticks.0, ticks.1)?;
    Ok(chart)
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
        let mut chart = ticked_chart(
            root,
            &caption,
            (0.0..MAX_POSITION + 0.15, y_low..y_high),
            ("percentile (each step one more nine)", "latency (log)"),
            (&nines_ticks(), &y_ticks),
        )?;
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
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencyRecorder;

    #[test]
    fn noise_share_of_a_window_is_its_interruptions_over_the_time_spun() {
        // 4 interruptions of 25 us in one second: 100 us of 1 s = 0.01 %.
        let w = SecondStats::new(3, 1, 4, 10_000, 25_000.0, 40_000);
        assert!((window_share_percent(&w, 1.0) - 0.01).abs() < 1e-12);
        // Spinning half the time: the same noise is twice the share.
        assert!((window_share_percent(&w, 0.5) - 0.02).abs() < 1e-12);
        // Two merged windows: 4 of 25 us over 2 s.
        let merged = SecondStats::new(2, 2, 4, 10_000, 25_000.0, 40_000);
        assert!((window_share_percent(&merged, 1.0) - 0.005).abs() < 1e-12);
        assert_eq!(
            window_share_percent(&SecondStats::new(0, 0, 1, 1, 1.0, 1), 1.0),
            0.0
        );
    }

    #[test]
    fn a_share_line_holds_its_last_level_to_an_end_within_a_second() {
        let two_seconds = [
            SecondStats::new(0, 1, 10, 2_000, 100_000.0, 500_000),
            SecondStats::new(1, 1, 20, 2_000, 100_000.0, 500_000),
        ];
        // 10 x 100 us of a second = 0.1 %, then 0.2 % up to 2.004 s: no
        // third second, no drop to zero before the end.
        let points = share_points(&two_seconds, 1.0, 2.004, 1.0);
        let rounded: Vec<(f64, f64)> = points
            .iter()
            .map(|&(x, y)| ((x * 1000.0).round() / 1000.0, (y * 1000.0).round() / 1000.0))
            .collect();
        assert_eq!(
            rounded,
            [
                (0.0, 0.0),
                (0.0, 0.1),
                (1.0, 0.1),
                (1.0, 0.2),
                (2.004, 0.2),
                (2.004, 0.0)
            ]
        );
        // A whole quiet second after the last window is zero, drawn.
        let points = share_points(&two_seconds, 1.0, 3.5, 1.0);
        assert_eq!(points[points.len() - 2..], [(2.0, 0.0), (3.5, 0.0)]);
    }

    #[test]
    fn noise_share_axis_tops_are_round() {
        assert_eq!(share_axis_top(0.0), 0.01);
        assert_eq!(share_axis_top(0.004), 0.01);
        assert!((share_axis_top(0.0095) - 0.02).abs() < 1e-12);
        assert!((share_axis_top(0.3) - 0.5).abs() < 1e-12);
        assert_eq!(share_axis_top(4.0), 5.0);
        assert_eq!(share_axis_top(7.5), 10.0);
        assert_eq!(share_axis_top(50.0), 100.0);
    }

    #[test]
    fn noise_share_plot_draws_every_cpu_to_the_end_of_the_run() {
        let quiet_middle = [
            SecondStats::new(0, 1, 10, 2_000, 100_000.0, 500_000),
            SecondStats::new(2, 1, 5, 2_000, 100_000.0, 300_000),
        ];
        let series = [
            ShareSeries {
                label: "CPU 1".into(),
                per_second: &quiet_middle,
                duty: 1.0,
                end_s: 5.0,
            },
            ShareSeries {
                label: "CPU 3".into(),
                per_second: &[],
                duty: 1.0,
                end_s: 5.0,
            },
        ];
        let svg = noise_share_svg("noise", &series).unwrap().unwrap();
        assert!(
            svg.contains("\nCPU 1\n") && svg.contains("\nCPU 3\n"),
            "{svg}"
        );
        assert!(svg.contains("noise share per window over time"));
        // 10 x 100 us of a second = 0.1 %: the axis tops at 0.2 % (labelled).
        assert!(svg.contains("\n0.2 %\n"), "{svg}");
        assert!(noise_share_svg("noise", &[]).unwrap().is_none());
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
                ..SecondStats::default()
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
        let summary = summary_of(&[2_000, 3_000, 5_000, 5_000]);
        let windows = [SecondStats {
            second: 0,
            span_s: 1,
            samples: 4,
            min_ns: 2_000,
            avg_ns: 3_750.0,
            max_ns: 5_000,
            ..SecondStats::default()
        }];
        let series = [PlotSeries {
            label: "pair <0> & co".into(),
            latency: &summary,
            per_second: &windows,
        }];
        for svg in [
            histogram_svg("mq", &series).unwrap().unwrap(),
            per_second_svg("mq", &series, &[]).unwrap().unwrap(),
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
        assert_eq!(per_second_svg("mq", &none, &[]).unwrap(), None);
    }

    #[test]
    fn axis_numbers_have_no_needless_decimals() {
        assert_eq!(axis_number(0.0), "0");
        assert_eq!(axis_number(5.0), "5");
        assert_eq!(axis_number(2.5), "2.5");
        assert_eq!(axis_number(0.125), "0.125");
        assert_eq!(axis_number(-0.0001), "0");
        assert_eq!(axis_number(1_440.0), "1440");
    }

    #[test]
    fn over_time_a_spike_leaves_the_minima_apart_from_the_floor() {
        let summary = body_and_outlier(10, 9_810_000);
        let windows = windows_with_spike(5, 2);
        let series = [PlotSeries {
            label: "CPU 0".into(),
            latency: &summary,
            per_second: &windows,
        }];
        let svg = per_second_svg("timer", &series, &[]).unwrap().unwrap();
        for text in [
            "10 us",
            "100 us",
            "1 ms",
            "10 ms",
            "latency (log)",
            "0",
            "4",
        ] {
            assert!(
                svg.contains(&format!(">\n{text}\n</text>")),
                "{text} in {svg}"
            );
        }
        assert!(!svg.contains(">\n1.0\n</text>"), "no needless decimals");
        // The minimum (12 us) and mean (13.7 us) lines stay apart under a
        // 9.81 ms spike (on the old linear axis both lay flat on zero): on
        // 3 decades over about 320 px they are log10(13.7/12)/3 of it apart.
        let upper = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        let shades = figure_shades(color(0));
        let line_of = |c: RGBColor| {
            svg.lines()
                .find(|l| l.starts_with("<polyline") && l.contains(&upper(c)))
                .unwrap_or_else(|| panic!("no line in {}", upper(c)))
        };
        let lines = [line_of(shades[0]), line_of(shades[1])];
        let ys = |l: &str| -> Vec<f64> {
            l.split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .split_whitespace()
                .map(|p| p.split_once(',').unwrap().1.parse().unwrap())
                .collect()
        };
        let min_y = ys(lines[0])[0];
        let avg_y = ys(lines[1])[0];
        assert!(
            min_y - avg_y > 5.0,
            "min at {min_y} px, avg at {avg_y} px: apart"
        );
    }

    /// `n` windows of 12..23 us with a 9.81 ms maximum in window `spike_at`.
    fn windows_with_spike(n: u64, spike_at: u64) -> Vec<SecondStats> {
        (0..n)
            .map(|second| SecondStats {
                second,
                span_s: 1,
                samples: 10_000,
                min_ns: 12_000,
                avg_ns: 13_700.0,
                max_ns: if second == spike_at {
                    9_810_000
                } else {
                    22_900
                },
                ..SecondStats::default()
            })
            .collect()
    }

    /// The `d="..."`/attribute value `name` of the first element `line`.
    fn attribute<'a>(line: &'a str, name: &str) -> &'a str {
        line.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("{name} in {line}"))
    }

    #[test]
    fn marks_sit_at_their_time_with_their_cause_on_hover() {
        let summary = body_and_outlier(10, 9_810_000);
        let windows = windows_with_spike(10, 4);
        let series = [PlotSeries {
            label: "CPU 0".into(),
            latency: &summary,
            per_second: &windows,
        }];
        let marks = [
            TimeMark {
                second: 4.5,
                kind: MarkKind::Spike,
                series: Some(0),
                ns: Some(9_810_000),
                text: "4.5 s, CPU 0: softirq <NET_RX> & co".into(),
            },
            TimeMark {
                second: 0.0,
                kind: MarkKind::KernelLog,
                series: None,
                ns: None,
                text: "kernel log: RT throttling activated".into(),
            },
        ];
        let svg = per_second_svg("timer", &series, &marks).unwrap().unwrap();
        let groups: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<g class=\"mark\""))
            .collect();
        assert_eq!(groups.len(), 2, "{svg}");
        assert!(groups[0].contains("<title>4.5 s, CPU 0: softirq &lt;NET_RX&gt; &amp; co</title>"));
        assert!(groups[1].contains("<title>kernel log: RT throttling activated</title>"));
        assert!(
            groups[0].contains("fill=\"#0072b2\""),
            "spike in its series' colour"
        );
        assert!(
            svg.ends_with("</svg>\n") || svg.ends_with("</svg>"),
            "marks inside the SVG"
        );
        assert!(svg.contains(">\ntraced spike (hover: its cause)\n</text>"));
        assert!(svg.contains(">\nkernel log message (hover: its text)\n</text>"));
        // The time axis spans 0..10 s: 4.5 s is 45 % across the plotting area,
        // whose left edge is where the 0 s mark is.
        let x = |g: &str| attribute(g, "data-x").parse::<f64>().unwrap();
        let (left, spike) = (x(groups[1]), x(groups[0]));
        let (_, plot_right) = (left, left + (spike - left) / 0.45);
        assert!(
            left > 70.0 && plot_right < WIDTH as f64,
            "{left} {plot_right}"
        );
        assert!(!svg.contains("class=\"p99\""), "no p99 in this report");
        // Without marks, no legend entries for them.
        let plain = per_second_svg("timer", &series, &[]).unwrap().unwrap();
        assert!(!plain.contains("traced spike") && !plain.contains("class=\"mark\""));
    }

    #[test]
    fn p99_per_window_is_dashed_and_merged_by_its_highest() {
        fn fake_p99(w: &SecondStats) -> Option<u64> {
            // Windows 3 and 4 have none: the line breaks there.
            (!(3..5).contains(&w.second)).then_some(w.second * 1_000 + 15_000)
        }
        let summary = body_and_outlier(10, 9_810_000);
        let windows = windows_with_spike(10, 7);
        let series = [PlotSeries {
            label: "CPU 0".into(),
            latency: &summary,
            per_second: &windows,
        }];
        let svg = over_time_svg("timer", &series, &[], fake_p99)
            .unwrap()
            .unwrap();
        let lines: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains("class=\"p99\""))
            .collect();
        assert_eq!(lines.len(), 2, "split where windows have no p99: {svg}");
        assert_eq!(attribute(lines[0], "stroke-dasharray"), "6 3");
        // Windows 0..3 (3 windows, 2 corners each), then 5..10.
        assert_eq!(attribute(lines[0], "points").split(' ').count(), 6);
        assert_eq!(attribute(lines[1], "points").split(' ').count(), 10);
        assert!(svg.contains("p99: dashed, darker"));
        // Each of the series' four lines has its own shade.
        let shades = figure_shades(color(0));
        assert_eq!(attribute(lines[0], "stroke"), css(shades[3]));
        for (k, shade) in shades[..3].iter().enumerate() {
            let RGBColor(r, g, b) = *shade;
            assert!(
                svg.contains(&format!("stroke=\"#{r:02X}{g:02X}{b:02X}\"")),
                "figure {k}: {svg}"
            );
        }
        let distinct: std::collections::HashSet<String> = shades.iter().map(|&c| css(c)).collect();
        assert_eq!(distinct.len(), 4);
        assert_eq!(window_p99(&windows[0]), None, "a window without its p99");
        let with = SecondStats {
            p99_ns: Some(22_000),
            ..windows[0]
        };
        assert_eq!(window_p99(&with), Some(22_000));
        // Merged: the highest p99 of each group of windows.
        let day: Vec<SecondStats> = (0..86_400)
            .map(|s| SecondStats {
                second: s,
                ..windows[0]
            })
            .collect();
        let points = p99_points(&day, |w| {
            Some(if w.second == 50_001 {
                9_000_000
            } else {
                15_000
            })
        });
        assert!(points.len() <= MAX_TIME_POINTS);
        assert_eq!(points.iter().filter(|p| p.2 == Some(9_000_000)).count(), 1);
        assert_eq!(points.last().map(|p| p.1), Some(86_400));
        assert_eq!(
            points.len(),
            downsampled(&day).len(),
            "one p99 per drawn window"
        );
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
        let summary = summary_of(&[13_000, 14_000, 15_000, 9_810_000]);
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

    /// The summary of these samples (ns).
    fn summary_of(samples: &[i64]) -> LatencySummary {
        let mut r = LatencyRecorder::new();
        for &ns in samples {
            r.record(ns);
        }
        r.summary()
    }

    /// `n` samples spread over 12..20 us, and one at `outlier_ns`.
    fn body_and_outlier(n: u64, outlier_ns: i64) -> LatencySummary {
        let mut r = LatencyRecorder::new();
        for i in 0..n {
            r.record(12_000 + ((i * 7919) % 8_000) as i64);
        }
        r.record(outlier_ns);
        r.summary()
    }

    #[test]
    fn histogram_axis_breaks_for_far_outliers_only() {
        let axis = HistogramAxis::of(&[(10_000, 5), (40_000, 100), (9_810_000, 1)]).unwrap();
        // The body: 10..40 us with a 5 % log margin (span 4, pad 4^0.05).
        let pad = 4f64.powf(0.05);
        assert!((axis.low_ns - 10_000.0 / pad).abs() < 1e-6, "{axis:?}");
        assert!((axis.high_ns - 40_000.0 * pad).abs() < 1e-6, "{axis:?}");
        assert_eq!(axis.strip_high_ns, Some(9_810_000.0 * 1.5));
        assert!((axis.position(axis.low_ns) - 0.0).abs() < 1e-12);
        assert!((axis.position(axis.high_ns) - BODY_SHARE).abs() < 1e-12);
        assert!((axis.position(20_000.0) - BODY_SHARE * 0.5).abs() < 1e-12);
        assert!((axis.position(axis.high_ns * 1.0001) - STRIP_START).abs() < 1e-3);
        assert!((axis.position(9_810_000.0 * 1.5) - 1.0).abs() < 1e-12);
        assert_eq!(axis.position(-5.0), 0.0);
        // Outliers near the body (under 4 times) keep one unbroken axis.
        let near = HistogramAxis::of(&[(10_000, 500), (30_000, 3)]).unwrap();
        assert_eq!(near.strip_high_ns, None);
        assert!((near.position(near.high_ns) - 1.0).abs() < 1e-12);
        // More than MAX_OUTLIERS far samples are body, not outliers.
        let many = HistogramAxis::of(&[(10_000, 500), (5_000_000, 21)]).unwrap();
        assert_eq!(many.strip_high_ns, None);
        assert_eq!(HistogramAxis::of(&[(5, 0)]), None);
    }

    #[test]
    fn histogram_ticks_exact_values() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // Three decades: the powers of ten, a third of the axis apart.
        let wide = HistogramAxis {
            low_ns: 1_000.0,
            high_ns: 1_000_000.0,
            strip_high_ns: None,
        };
        let ticks = wide.ticks();
        let labels: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1 us", "10 us", "100 us", "1 ms"]);
        for (tick, want) in ticks.iter().zip([0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0]) {
            assert!(close(tick.0, want), "{ticks:?}");
        }
        // A narrow body (10..40 us: only 10 and 20 us are 1-2-5 steps):
        // five log-spaced ticks of two digits, 10 us x 4^((0.5 + i) / 5);
        // then the strip's top tick, the last 1-2-5 step under 15 ms.
        let narrow = HistogramAxis {
            low_ns: 10_000.0,
            high_ns: 40_000.0,
            strip_high_ns: Some(15_000_000.0),
        };
        let ticks = narrow.ticks();
        let labels: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(
            labels,
            ["11 us", "15 us", "20 us", "26 us", "35 us", "10 ms"]
        );
        // 20 us is half the body's log span: at half of its share.
        assert!(close(ticks[2].0, BODY_SHARE * 0.5), "{ticks:?}");
        let strip = STRIP_START
            + (1.0 - STRIP_START) * (10_000_000f64 / 40_000.0).ln()
                / (15_000_000f64 / 40_000.0).ln();
        assert!(close(ticks[5].0, strip), "{ticks:?}");
    }

    #[test]
    fn log_bin_edges_and_indices() {
        let axis = HistogramAxis {
            low_ns: 1_000.0,
            high_ns: 1_000_000.0,
            strip_high_ns: None,
        };
        let e = axis.edges();
        assert_eq!(e.len(), LOG_BINS + 1);
        // 120 bins over 3 decades: 40 a decade, each 10^(1/40) times the last.
        for (k, want) in [
            (0, 1_000.0),
            (40, 10_000.0),
            (60, 31_622.776_601_683_79),
            (120, 1_000_000.0),
        ] {
            assert!((e[k] - want).abs() / want < 1e-12, "edge {k}: {}", e[k]);
        }
        assert_eq!(axis.bin(999.0), 0);
        assert_eq!(axis.bin(1_000.0), 0);
        assert_eq!(axis.bin(10_001.0), 40);
        assert_eq!(axis.bin(9_999.0), 39);
        assert_eq!(axis.bin(2e9), LOG_BINS - 1);
    }

    /// The case: a 10 ms outlier among 50,000 samples of ~14 us
    /// leaves the body spread over at least half of the plot's width.
    #[test]
    fn a_10_ms_outlier_leaves_the_body_over_half_the_width() {
        let summary = body_and_outlier(50_000, 10_000_000);
        let series = [PlotSeries {
            label: "CPU 0".into(),
            latency: &summary,
            per_second: &[],
        }];
        let svg = histogram_svg("timer", &series).unwrap().unwrap();
        // The series' step line: the points above the floor are the body.
        let line = svg
            .lines()
            .find(|l| l.starts_with("<polyline") && l.contains("#0072B2"))
            .expect("the series' line");
        let points: Vec<(f64, f64)> = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let floor_y = points.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let body: Vec<f64> = points
            .iter()
            .filter(|p| p.1 < floor_y)
            .map(|p| p.0)
            .collect();
        let spread = body.iter().copied().fold(f64::MIN, f64::max)
            - body.iter().copied().fold(f64::MAX, f64::min);
        assert!(
            spread >= WIDTH as f64 / 2.0,
            "body spread {spread} px of {WIDTH}"
        );
        for text in ["outliers", "max 10.0 ms", "10 ms"] {
            assert!(
                svg.contains(&format!(">\n{text}\n</text>")),
                "{text} in {svg}"
            );
        }
        assert!(svg.contains(">\np50 1"), "p50 marked");
        assert!(svg.contains(">\np99 "), "p99 marked");
        // The max mark in the outliers' strip is written to its left (not
        // cut at the plot's edge); the outliers label sits half-way up,
        // below the legend in the top right corner.
        let text_element = |text: &str| {
            let at = svg.find(&format!(">\n{text}\n</text>")).unwrap();
            &svg[svg[..at].rfind("<text").unwrap()..at]
        };
        assert!(
            text_element("max 10.0 ms").contains("text-anchor=\"end\""),
            "{}",
            text_element("max 10.0 ms")
        );
        let label_y: f64 = attribute(text_element("outliers"), "y").parse().unwrap();
        assert!(
            label_y > HEIGHT as f64 / 3.0,
            "outliers label at y {label_y}"
        );
    }

    #[test]
    fn the_histogram_keeps_every_sample() {
        let summary = body_and_outlier(5_000, 3_000_000);
        let mid = |b: &crate::stats::Bucket| ((b.low_ns + b.high_ns) / 2, b.count);
        let buckets: Vec<(i64, u64)> = summary.histogram.iter().map(mid).collect();
        let axis = HistogramAxis::of(&buckets).unwrap();
        let mut counts = vec![0u64; LOG_BINS];
        let mut outliers = 0;
        for &(ns, n) in &buckets {
            if ns as f64 > axis.high_ns {
                outliers += n;
            } else {
                counts[axis.bin(ns as f64)] += n;
            }
        }
        assert_eq!(outliers, 1);
        assert_eq!(counts.iter().sum::<u64>(), 5_000);
        assert!(counts.iter().filter(|&&c| c > 0).count() > LOG_BINS / 2);
    }
}
