//! `latscope hwlat`'s gaps over time: per CPU, each second's longest
//! hardware gap (the hypervisor's in a guest) and longest OS gap, told apart
//! by their marker (filled circle, cross) and the legend, in the CPU's
//! colour, on a log gap axis against the seconds since the start.
//!
//! Drawn from the report's windows of each class (the series' `per_second`
//! and the CPU's `os_per_second`), merged beyond `MAX_TIME_POINTS` as the
//! other plots over time are (the longest of the merged windows is kept).

use super::{
    DrawResult, MAX_TIME_POINTS, TimeAxes, TimeMark, color, downsampled, draw_legend,
    drawing_error, log_bounds_ns, log_time_chart, mark_legend, mark_shapes, svg_with_overlay,
    time_unit,
};
use crate::stats::window::SecondStats;
use plotters::prelude::*;

/// One CPU's gaps over time, per class.
pub struct GapSeries<'a> {
    pub label: String,
    pub hardware: &'a [SecondStats],
    pub os: &'a [SecondStats],
}

/// One class of one CPU as drawn: its colour (the CPU's index), its class,
/// its legend, and each drawn window's (seconds since the start, longest
/// gap in ns).
#[derive(Debug, Clone, PartialEq)]
pub struct GapMarks {
    pub series: usize,
    pub hardware: bool,
    pub label: String,
    pub points: Vec<(f64, i64)>,
}

/// The marks of `series`: per CPU its hardware gaps (named `hardware_name`:
/// `hypervisor` in a guest), then its OS gaps; a class without gaps has
/// none. Each window's mark lies inside it, the i-th of N CPUs at (i + 1/2)
/// / N of its span, so that the CPUs' marks of one second stand apart.
pub fn gap_marks(series: &[GapSeries], hardware_name: &str) -> Vec<GapMarks> {
    let n = series.len().max(1) as f64;
    let mut out = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let classes = [(true, s.hardware, hardware_name), (false, s.os, "OS")];
        for (hardware, windows, class) in classes {
            if windows.is_empty() {
                continue;
            }
            let at = (i as f64 + 0.5) / n;
            let points = downsampled(windows)
                .iter()
                .map(|w| (w.second as f64 + w.span_s as f64 * at, w.max_ns))
                .collect();
            out.push(GapMarks {
                series: i,
                hardware,
                label: format!("{} {class} gaps", s.label),
                points,
            });
        }
    }
    out
}

/// The gaps' log axis: from the shortest drawn gap to the longest (`None`
/// without gaps).
pub fn gap_axis(marks: &[GapMarks]) -> Option<(i64, i64)> {
    let values = || marks.iter().flat_map(|m| m.points.iter().map(|p| p.1));
    let high = values().max()?;
    let low = values().filter(|&v| v > 0).min().unwrap_or(1);
    Some(log_bounds_ns(low, high))
}

/// The plot of `series`' gaps over `end_s` seconds (the run's length; the
/// axis reaches the last mark if later), with `marks` (kernel messages).
/// `None` when no CPU had a gap.
pub fn gaps_over_time_svg(
    title: &str,
    series: &[GapSeries],
    (hardware_name, end_s): (&str, f64),
    marks: &[TimeMark],
) -> DrawResult<Option<String>> {
    let gaps = gap_marks(series, hardware_name);
    let Some((low, high)) = gap_axis(&gaps) else {
        return Ok(None);
    };
    let end = gaps
        .iter()
        .flat_map(|m| m.points.iter().map(|p| p.0))
        .fold(end_s, f64::max);
    let (unit, unit_s) = time_unit(end);
    let merged = series
        .iter()
        .flat_map(|s| [s.hardware.len(), s.os.len()])
        .map(|n| n.div_ceil(MAX_TIME_POINTS))
        .max()
        .unwrap_or(1);
    let caption = if merged > 1 {
        format!("{title}: the longest gap per window by class ({merged} windows merged per mark)")
    } else {
        format!("{title}: the longest gap of each second by class")
    };
    let x_desc = format!(
        "time since start ({unit}); {hardware_name}: filled circles; OS: crosses; colour: CPU"
    );
    let (y_low, y_high) = (low as f64, high as f64);
    svg_with_overlay(|root| {
        let axes = TimeAxes {
            x: 0.0..end / unit_s,
            y_ns: (low, high),
            x_desc: &x_desc,
            y_desc: "gap (log)",
        };
        let mut chart = log_time_chart(root, &caption, axes)?;
        for m in &gaps {
            let c = color(m.series);
            let points = m
                .points
                .iter()
                .map(move |&(x, ns)| (x / unit_s, (ns as f64).clamp(y_low, y_high)));
            if m.hardware {
                chart
                    .draw_series(points.map(|p| Circle::new(p, 3, c.filled())))
                    .map_err(drawing_error)?
                    .label(m.label.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
            } else {
                chart
                    .draw_series(points.map(|p| Cross::new(p, 4, c.stroke_width(2))))
                    .map_err(drawing_error)?
                    .label(m.label.as_str())
                    .legend(move |(x, y)| Cross::new((x + 10, y), 4, c.stroke_width(2)));
            }
        }
        mark_legend(&mut chart, marks)?;
        let x_range = (0.0, end / unit_s);
        let overlay = mark_shapes(&chart, marks, unit_s, x_range, (y_low, y_high));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(overlay)
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(second: u64, samples: u64, max_ns: i64) -> SecondStats {
        SecondStats::new(second, 1, samples, 10_000, max_ns as f64 / 2.0, max_ns)
    }

    #[test]
    fn each_cpus_classes_are_marked_at_their_seconds_longest_gap() {
        let hw0 = [w(0, 3, 40_000), w(2, 1, 2_500_000)];
        let os0 = [w(1, 5, 15_000)];
        let hw1 = [w(0, 2, 30_000)];
        let series = [
            GapSeries {
                label: "CPU 0".into(),
                hardware: &hw0,
                os: &os0,
            },
            GapSeries {
                label: "CPU 1".into(),
                hardware: &hw1,
                os: &[],
            },
        ];
        let marks = gap_marks(&series, "hypervisor");
        assert_eq!(
            marks,
            vec![
                GapMarks {
                    series: 0,
                    hardware: true,
                    label: "CPU 0 hypervisor gaps".into(),
                    points: vec![(0.25, 40_000), (2.25, 2_500_000)],
                },
                GapMarks {
                    series: 0,
                    hardware: false,
                    label: "CPU 0 OS gaps".into(),
                    points: vec![(1.25, 15_000)],
                },
                GapMarks {
                    series: 1,
                    hardware: true,
                    label: "CPU 1 hypervisor gaps".into(),
                    points: vec![(0.75, 30_000)],
                },
            ]
        );
        // The axis holds the shortest and the longest mark, on round values.
        assert_eq!(gap_axis(&marks), Some((10_000, 5_000_000)));
        let svg = gaps_over_time_svg("hwlat", &series, ("hypervisor", 3.0), &[])
            .unwrap()
            .unwrap();
        for text in [
            "CPU 0 hypervisor gaps",
            "CPU 0 OS gaps",
            "CPU 1 hypervisor gaps",
            "the longest gap of each second by class",
            "gap (log)",
            "\n10 us\n",
            "\n5 ms\n",
        ] {
            assert!(svg.contains(text), "{text} in {svg}");
        }
        assert!(!svg.contains("CPU 1 OS gaps"), "{svg}");
        // Three hardware marks and their legend's circle; one cross and its
        // legend's (a cross is two lines).
        assert_eq!(svg.matches("<circle").count(), 3 + 2, "{svg}");
    }

    #[test]
    fn a_run_without_gaps_has_no_plot_and_one_with_os_gaps_only_draws_them() {
        let empty = [GapSeries {
            label: "CPU 1".into(),
            hardware: &[],
            os: &[],
        }];
        assert!(gap_marks(&empty, "hardware").is_empty());
        assert_eq!(gap_axis(&[]), None);
        let svg = gaps_over_time_svg("hwlat", &empty, ("hardware", 2.0), &[]).unwrap();
        assert_eq!(svg, None);
        let os = [w(0, 4, 12_000), w(1, 2, 18_000)];
        let only_os = [GapSeries {
            label: "CPU 1".into(),
            hardware: &[],
            os: &os,
        }];
        let marks = gap_marks(&only_os, "hardware");
        assert_eq!(marks.len(), 1);
        assert!(!marks[0].hardware);
        assert_eq!(marks[0].points, vec![(0.5, 12_000), (1.5, 18_000)]);
        let svg = gaps_over_time_svg("hwlat", &only_os, ("hardware", 2.0), &[])
            .unwrap()
            .unwrap();
        assert!(svg.contains("CPU 1 OS gaps"), "{svg}");
        assert!(!svg.contains("hardware gaps"), "{svg}");
        assert!(!svg.contains("<circle"), "{svg}");
    }

    #[test]
    fn a_long_run_is_drawn_with_bounded_marks_keeping_the_longest() {
        let hw: Vec<SecondStats> = (0..86_400u64)
            .map(|s| w(s, 2, if s == 50_001 { 9_000_000 } else { 20_000 }))
            .collect();
        let series = [GapSeries {
            label: "CPU 0".into(),
            hardware: &hw,
            os: &[],
        }];
        let marks = gap_marks(&series, "hardware");
        assert!(marks[0].points.len() <= MAX_TIME_POINTS);
        assert_eq!(marks[0].points.iter().map(|p| p.1).max(), Some(9_000_000));
        let svg = gaps_over_time_svg("hwlat", &series, ("hardware", 86_400.0), &[])
            .unwrap()
            .unwrap();
        assert!(svg.contains("windows merged per mark"), "{svg}");
        assert!(svg.contains("time since start (h)"), "{svg}");
    }
}
