//! `latscope compare --html`: one self-contained page of a new report against
//! its base (or the median of several bases): the verdict of every
//! `--fail-if` threshold, per matched series the table of figures and the
//! percentile plot of the bases and the new report overlaid.
//!
//! The comparison itself is `crate::compare`'s; the command hands this
//! exporter the figures as plain data (an exporter imports no command).

use super::{escape, figure_html, page_start, plots};
use crate::report::ThresholdCheck;
use crate::report::cells::{change_cell, signed_ns};
use crate::stats::LatencySummary;
use crate::units::format_ns;
use std::fmt::Write;

/// One metric of a matched series.
pub struct MetricRow {
    pub metric: String,
    pub base_ns: f64,
    pub new_ns: f64,
    pub change_pct: Option<f64>,
}

/// One series matched in the bases and the new report.
pub struct ComparedSeries<'a> {
    pub test: String,
    pub series: String,
    pub metrics: Vec<MetricRow>,
    /// Each base's figures, in the order the bases were given.
    pub bases: Vec<&'a LatencySummary>,
    pub new: &'a LatencySummary,
}

/// Everything the page shows.
pub struct ComparePage<'a> {
    pub bases: Vec<String>,
    pub new: String,
    /// How several bases are combined, in words.
    pub base_rule: String,
    pub series: Vec<ComparedSeries<'a>>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    pub thresholds: Vec<ThresholdCheck>,
    /// Each setting the reports do not share (`ConfigDifference::line`).
    pub differences: Vec<String>,
}

/// The absolute latency limits among `thresholds` for one series
/// (`p99>50us`), as lines of its plot; changes from the base (`+10%`,
/// `+5us`) are no latency and are not drawn.
fn limits(thresholds: &[ThresholdCheck], test: &str, series: &str) -> Vec<plots::Limit> {
    let mut out: Vec<plots::Limit> = Vec::new();
    for check in thresholds
        .iter()
        .filter(|c| c.test == test && c.series == series)
    {
        let Some((_, limit)) = check.expr.split_once('>') else {
            continue;
        };
        if limit.starts_with('+') {
            continue;
        }
        if let Ok(d) = crate::units::parse_duration(limit, 1_000) {
            let limit = plots::Limit {
                label: format!("--fail-if {}", check.expr),
                ns: d.as_nanos().min(i64::MAX as u128) as i64,
            };
            if !out.contains(&limit) {
                out.push(limit);
            }
        }
    }
    out
}

/// The settings the compared reports do not share, as a warning list.
fn differences(html: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    html.push_str(
        "<p class=\"warn\">The runs were not made alike; their figures may differ for \
         that alone:</p>\n<ul class=\"warnings\">\n",
    );
    for line in lines {
        let _ = writeln!(html, "<li class=\"warn\">{}</li>", escape(line));
    }
    html.push_str("</ul>\n");
}

/// The page.
pub fn render(page: &ComparePage) -> Result<String, String> {
    let mut html = page_start(&format!("latscope compare: {}", page.new));
    let base_names: Vec<String> = page
        .bases
        .iter()
        .enumerate()
        .map(|(i, b)| match page.bases.len() {
            1 => format!("the base <code>{}</code>", escape(b)),
            _ => format!("base {} <code>{}</code>", i + 1, escape(b)),
        })
        .collect();
    let _ = writeln!(
        html,
        "<p>New report <code>{}</code> against {}{}.</p>",
        escape(&page.new),
        base_names.join(", "),
        if page.bases.len() > 1 {
            format!(
                " (the base figure of each metric: {})",
                escape(&page.base_rule)
            )
        } else {
            String::new()
        }
    );
    verdict(&mut html, &page.thresholds);
    differences(&mut html, &page.differences);
    for s in &page.series {
        let name = format!("{} {}", s.test, s.series);
        let _ = writeln!(html, "<section class=\"test\">\n<h2>{}</h2>", escape(&name));
        if s.metrics.is_empty() {
            html.push_str("<p class=\"note\">No samples on one side: nothing to compare.</p>\n");
        } else {
            html.push_str(
                "<table class=\"summary\">\n<tr><th class=\"l\">Metric</th><th>Base</th>\
                 <th>New</th><th>Delta</th><th>Change</th></tr>\n",
            );
            for m in &s.metrics {
                // Latency up is worse: a rise is marked, a fall is not.
                let class = if m.new_ns > m.base_ns {
                    " class=\"warn\""
                } else {
                    ""
                };
                let change = change_cell(m.change_pct);
                let _ = writeln!(
                    html,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td{class}>{}</td><td{class}>{}</td></tr>",
                    escape(&m.metric),
                    format_ns(m.base_ns.round() as i64),
                    format_ns(m.new_ns.round() as i64),
                    signed_ns(m.new_ns - m.base_ns),
                    change
                );
            }
            html.push_str("</table>\n");
        }
        let mut lines: Vec<plots::PlotSeries> = s
            .bases
            .iter()
            .enumerate()
            .map(|(k, latency)| plots::PlotSeries {
                label: if s.bases.len() == 1 {
                    "base".to_string()
                } else {
                    format!("base {}", k + 1)
                },
                latency,
                per_second: &[],
            })
            .collect();
        lines.push(plots::PlotSeries {
            label: "new".to_string(),
            latency: s.new,
            per_second: &[],
        });
        let title = format!("{name}: base against new");
        match plots::percentile_svg(
            &title,
            &lines,
            &limits(&page.thresholds, &s.test, &s.series),
        )? {
            Some(svg) => html.push_str(&figure_html(
                &svg,
                &format!(
                    "Latency by percentile of {}: each base and the new report, on a \
                     log latency axis; each step to the right adds a nine, the last point is \
                     the maximum. A line above another is slower at that percentile. \
                     Horizontal lines: the absolute --fail-if limits.",
                    name
                ),
            )),
            None => html.push_str("<p class=\"note\">No samples to plot (by percentile).</p>\n"),
        }
        html.push_str("</section>\n");
    }
    if !page.only_in_base.is_empty() || !page.only_in_new.is_empty() {
        html.push_str("<h2>Not compared</h2>\n<ul>\n");
        if !page.only_in_base.is_empty() {
            let _ = writeln!(
                html,
                "<li>Only in the base: {}</li>",
                escape(&page.only_in_base.join(", "))
            );
        }
        if !page.only_in_new.is_empty() {
            let _ = writeln!(
                html,
                "<li>Only in the new report: {}</li>",
                escape(&page.only_in_new.join(", "))
            );
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</body>\n</html>\n");
    Ok(html)
}

/// The verdict of the `--fail-if` thresholds: every crossed one, or that
/// all held, or that none was given.
fn verdict(html: &mut String, thresholds: &[ThresholdCheck]) {
    html.push_str("<h2>Verdict</h2>\n");
    if thresholds.is_empty() {
        html.push_str(
            "<p class=\"note\">No --fail-if threshold was given: the figures below are for \
             reading, no verdict is drawn.</p>\n",
        );
        return;
    }
    let crossed: Vec<&ThresholdCheck> = thresholds.iter().filter(|c| c.crossed).collect();
    if crossed.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"ok\">ok: every --fail-if threshold held ({}).</p>",
            crate::units::counted(thresholds.len() as u64, "check")
        );
    } else {
        let _ = writeln!(
            html,
            "<p class=\"err\">FAIL: {} of {} checks crossed (exit code 3).</p>",
            crossed.len(),
            thresholds.len()
        );
    }
    html.push_str("<ul>\n");
    for check in thresholds {
        let (class, word) = if check.crossed {
            ("err", "FAIL: ")
        } else {
            ("ok", "")
        };
        let _ = writeln!(
            html,
            "<li class=\"{class}\">{word}{}</li>",
            escape(&check.describe())
        );
    }
    html.push_str("</ul>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencyRecorder;

    fn summary(values: &[i64]) -> LatencySummary {
        let mut r = LatencyRecorder::new();
        for &v in values {
            r.record(v);
        }
        r.summary()
    }

    fn check(expr: &str, crossed: bool) -> ThresholdCheck {
        ThresholdCheck {
            expr: expr.into(),
            test: "futex".into(),
            series: "pair <0>".into(),
            value_ns: 63_200.0,
            base_ns: Some(50_000.0),
            crossed,
        }
    }

    #[test]
    fn the_page_has_the_verdict_the_table_and_one_overlaid_plot_per_series() {
        let base = summary(&[10_000, 12_000, 14_000, 50_000]);
        let other_base = summary(&[11_000, 12_000, 13_000, 40_000]);
        let new = summary(&[10_000, 12_000, 14_000, 90_000]);
        let page = ComparePage {
            bases: vec!["a.json".into(), "b.json".into()],
            new: "new <1>.json".into(),
            base_rule: "the median".into(),
            series: vec![ComparedSeries {
                test: "futex".into(),
                series: "pair <0>".into(),
                metrics: vec![MetricRow {
                    metric: "max".into(),
                    base_ns: 45_000.0,
                    new_ns: 90_000.0,
                    change_pct: Some(100.0),
                }],
                bases: vec![&base, &other_base],
                new: &new,
            }],
            only_in_base: vec!["futex pair 1".into()],
            only_in_new: vec![],
            thresholds: vec![check("p99>+10%", true), check("max>1ms", false)],
            differences: vec!["host: rig-17 (a.json); <vm> (b.json)".into()],
        };
        let html = render(&page).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(!html.contains("<script"));
        assert!(html.contains("<title>latscope compare: new &lt;1&gt;.json</title>"));
        assert!(
            html.contains("<li class=\"warn\">host: rig-17 (a.json); &lt;vm&gt; (b.json)</li>"),
            "{html}"
        );
        assert!(
            html.contains("FAIL: 1 of 2 checks crossed (exit code 3)."),
            "{html}"
        );
        assert!(html.contains("<h2>futex pair &lt;0&gt;</h2>"));
        assert!(html.contains(
            "<td class=\"l\">max</td><td>45.0 us</td><td>90.0 us</td><td class=\"warn\">+45.0 us</td><td class=\"warn\">+100.0%</td>"
        ), "{html}");
        assert!(html.contains("Only in the base: futex pair 1"));
        assert_eq!(html.matches("<svg").count(), 1);
        for label in ["base 1", "base 2", "new", "--fail-if max&gt;1ms (1 ms)"] {
            assert!(
                html.contains(&format!(">\n{label}\n</text>")),
                "{label} in {html}"
            );
        }
        assert!(!html.contains("+10%)"), "a relative limit is no line");
        // Held everywhere, and without thresholds.
        let held = ComparePage {
            thresholds: vec![check("max>1ms", false)],
            ..page
        };
        assert!(
            render(&held)
                .unwrap()
                .contains("ok: every --fail-if threshold held (1 check).")
        );
        let none = ComparePage {
            thresholds: vec![],
            bases: vec!["a.json".into()],
            ..held
        };
        let html = render(&none).unwrap();
        assert!(html.contains("No --fail-if threshold was given"));
        assert!(
            html.contains(">\nbase 1\n</text>"),
            "bases numbered as given"
        );
    }
}
