//! `latscope compare`'s text for people: one table per matched series, the
//! series only one side has, then the `--fail-if` verdict.

use crate::report::Comparison;
use crate::report::cells::{Table, change_cell, signed_ns};
use crate::units::format_ns;
use std::io::Write;

/// The comparison for people: one table per matched series, the series
/// only one side has, then one line per crossed threshold.
pub fn write_text(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    let base = match c.bases.as_slice() {
        [one] => one.clone(),
        many => format!("median of {} reports ({})", many.len(), many.join(", ")),
    };
    writeln!(out, "base: {base}")?;
    writeln!(out, "new:  {}", c.new)?;
    if !c.config_differences.is_empty() {
        writeln!(
            out,
            "warning: the runs were not made alike; their figures may differ for that alone:"
        )?;
        for difference in &c.config_differences {
            writeln!(out, "  {}", difference.line())?;
        }
    }
    for s in &c.series {
        let base_samples: Vec<String> = s.base_samples.iter().map(u64::to_string).collect();
        writeln!(
            out,
            "\n{} {} (samples: base {}, new {})",
            s.test,
            s.series,
            base_samples.join("/"),
            s.new_samples
        )?;
        if s.metrics.is_empty() {
            writeln!(out, "no samples on one side: nothing to compare")?;
            continue;
        }
        let mut table = Table::new(&["Metric", "Base", "New", "Delta", "Change"]);
        for m in &s.metrics {
            table.row(vec![
                m.metric.clone(),
                format_ns(m.base_ns.round() as i64),
                format_ns(m.new_ns.round() as i64),
                signed_ns(m.delta_ns),
                change_cell(m.change_pct),
            ]);
        }
        write!(out, "{}", table.render())?;
    }
    if !c.only_in_base.is_empty() || !c.only_in_new.is_empty() {
        writeln!(out)?;
    }
    if !c.only_in_base.is_empty() {
        writeln!(out, "only in the base: {}", c.only_in_base.join(", "))?;
    }
    if !c.only_in_new.is_empty() {
        writeln!(out, "only in the new report: {}", c.only_in_new.join(", "))?;
    }
    if !c.thresholds.is_empty() {
        writeln!(out)?;
    }
    super::write_threshold_verdict(&c.thresholds, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{MetricDelta, SeriesComparison, ThresholdCheck};

    /// `metric`: base and new, in ns.
    fn delta(metric: &str, base_ns: f64, new_ns: f64) -> MetricDelta {
        MetricDelta {
            metric: metric.into(),
            base_ns,
            new_ns,
            delta_ns: new_ns - base_ns,
            change_pct: crate::stats::relative_change(base_ns, new_ns),
        }
    }

    #[test]
    fn text_shows_one_table_per_series() {
        let comparison = Comparison {
            schema: "latscope-compare".into(),
            schema_version: 1,
            bases: vec!["a.json".into()],
            new: "b.json".into(),
            merged: false,
            base_rule: String::new(),
            series: vec![SeriesComparison {
                test: "futex".into(),
                series: "pair 0".into(),
                base_samples: vec![100],
                new_samples: 100,
                metrics: vec![
                    delta("min", 1_000.0, 1_000.0),
                    delta("avg", 2_000.0, 2_000.0),
                    delta("p50", 1_500.0, 1_500.0),
                    delta("p99", 10_000.0, 12_000.0),
                    delta("p99.9", 11_000.0, 13_000.0),
                    delta("max", 12_000.0, 14_000.0),
                ],
            }],
            only_in_base: Vec::new(),
            only_in_new: Vec::new(),
            thresholds: vec![ThresholdCheck {
                expr: "p99>+10%".into(),
                test: "futex".into(),
                series: "pair 0".into(),
                value_ns: 12_000.0,
                base_ns: Some(10_000.0),
                crossed: true,
            }],
            config_differences: Vec::new(),
            exit_code: 3,
        };
        let mut buf = Vec::new();
        write_text(&comparison, &mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "base: a.json
new:  b.json

futex pair 0 (samples: base 100, new 100)
Metric     Base      New     Delta  Change
min     1.00 us  1.00 us      0 ns    0.0%
avg     2.00 us  2.00 us      0 ns    0.0%
p50     1.50 us  1.50 us      0 ns    0.0%
p99     10.0 us  12.0 us  +2.00 us  +20.0%
p99.9   11.0 us  13.0 us  +2.00 us  +18.2%
max     12.0 us  14.0 us  +2.00 us  +16.7%

FAIL: futex pair 0: p99>+10% crossed (p99 = 12.0 us, base 10.0 us: +2.00 us, +20.0%)
"
        );
    }
}
