//! `--fail-if` thresholds: the parser, and their evaluation over series
//! statistics. Pure: no I/O, no process state; `commands` decides what a
//! crossed threshold means for the exit code, `report` shows it.
//!
//! Forms (`METRIC>LIMIT`):
//! - `p99>50us`: absolute, the metric of the measured (or new) series is above
//!   the limit;
//! - `p99.9>+5us`: absolute delta, new minus base is above the limit
//!   (`latscope compare` only);
//! - `p99>+10%`: relative delta, (new - base) / base is above the percentage
//!   (`latscope compare` only). A base of 0 has no relative change: any
//!   increase from 0 crosses, no change does not.
//!
//! Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`; the number may have a
//! fraction (`1.5ms`). Metrics: min, avg, p50, p90, p99, p99.9, p99.99, max.

use crate::report::Report;
use crate::stats::LatencySummary;
use crate::units::shown;
use std::fmt;

/// A statistic of a series that a threshold (or `compare`) can look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Min,
    Avg,
    /// A reported percentile, in thousandths of a percent (99.9 = 99_900).
    Percentile(u32),
    Max,
}

/// Every metric a threshold accepts, by name.
pub const METRICS: [(&str, Metric); 8] = [
    ("min", Metric::Min),
    ("avg", Metric::Avg),
    ("p50", Metric::Percentile(50_000)),
    ("p90", Metric::Percentile(90_000)),
    ("p99", Metric::Percentile(99_000)),
    ("p99.9", Metric::Percentile(99_900)),
    ("p99.99", Metric::Percentile(99_990)),
    ("max", Metric::Max),
];

impl Metric {
    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// The metric's value in nanoseconds; `None` when the series has no
    /// samples or does not report that percentile.
    pub fn of(self, summary: &LatencySummary) -> Option<f64> {
        if summary.samples == 0 {
            return None;
        }
        match self {
            Metric::Min => Some(summary.min_ns as f64),
            Metric::Avg => Some(summary.avg_ns),
            Metric::Max => Some(summary.max_ns as f64),
            Metric::Percentile(milli) => summary
                .percentile(f64::from(milli) / 1000.0)
                .map(|ns| ns as f64),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the metric is held against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// The value itself, in nanoseconds.
    Absolute(u64),
    /// New minus base, in nanoseconds.
    Delta(u64),
    /// (New - base) / base, in percent.
    Relative(f64),
}

/// One parsed `--fail-if` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as given, without blanks (`p99>+10%`).
    pub expr: String,
    pub metric: Metric,
    pub limit: Limit,
}

impl Threshold {
    /// Whether it needs a base to compare with (`+5us`, `+10%`).
    pub fn is_relative(&self) -> bool {
        !matches!(self.limit, Limit::Absolute(_))
    }

    /// Whether `new` (with `base` for the delta forms) crosses it. A delta
    /// form without a base never crosses.
    pub fn crossed(&self, new: f64, base: Option<f64>) -> bool {
        match (self.limit, base) {
            (Limit::Absolute(limit), _) => new > limit as f64,
            (Limit::Delta(limit), Some(base)) => new - base > limit as f64,
            (Limit::Relative(pct), Some(base)) => match relative_change(base, new) {
                Some(change) => change > pct,
                None => new > base,
            },
            (_, None) => false,
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

// The arithmetic is pure and the model's ThresholdCheck::describe uses it too.
use crate::stats::relative_change;

/// The median of `values`: the middle value, or for an even count the mean of
/// the two middle values. `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

const FORMS: &str = "use METRIC>LIMIT, e.g. p99>50us, max>1ms, p99>+10%, p99.9>+5us";

/// Parses one expression. The error is one line naming what is wrong.
pub fn parse(text: &str) -> Result<Threshold, String> {
    let shown_text = shown(text);
    let expr: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let Some((metric_text, limit_text)) = expr.split_once('>') else {
        return Err(format!("'{shown_text}' has no '>' ({FORMS})"));
    };
    let metric_lower = metric_text.to_ascii_lowercase();
    let metric = METRICS
        .iter()
        .find(|(n, _)| *n == metric_lower)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
            if metric_text.is_empty() {
                format!(
                    "'{shown_text}' names no metric (one of {})",
                    names.join(", ")
                )
            } else {
                format!(
                    "'{shown_text}': unknown metric '{}' (one of {})",
                    shown(metric_text),
                    names.join(", ")
                )
            }
        })?;
    let limit =
        parse_limit(limit_text).map_err(|why| format!("'{shown_text}': {why} ({FORMS})"))?;
    Ok(Threshold {
        expr,
        metric,
        limit,
    })
}

fn parse_limit(text: &str) -> Result<Limit, String> {
    if text.is_empty() {
        return Err("no limit after '>'".to_string());
    }
    if text.starts_with('-') {
        return Err("a limit cannot be negative".to_string());
    }
    let (delta, rest) = match text.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if let Some(number) = rest.strip_suffix('%') {
        if !delta {
            return Err("a percentage is a change from the base: write it with '+' (+10%)".into());
        }
        let pct = decimal(number).ok_or_else(|| format!("'{}' is not a number", shown(number)))?;
        // 400 digits parse as infinity: no comparison could use it.
        if !pct.is_finite() {
            return Err(format!("'{}%' is too large", shown(number)));
        }
        return Ok(Limit::Relative(pct));
    }
    let ns = duration_ns(rest)?;
    Ok(if delta {
        Limit::Delta(ns)
    } else {
        Limit::Absolute(ns)
    })
}

/// Digits with at most one '.', and at least one digit.
fn decimal(text: &str) -> Option<f64> {
    let well_formed = text.chars().any(|c| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_digit() || c == '.')
        && text.matches('.').count() <= 1;
    well_formed.then(|| text.parse().ok()).flatten()
}

/// `50us`, `1.5ms`, `1h` in nanoseconds, rounded to the nearest (halves
/// up). Integer arithmetic: a limit printed in nanoseconds reads back as the
/// same number (through f64, anything above 2^53 ns, 104 days, drifted).
fn duration_ns(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if decimal(number).is_none() {
        return Err(if number.is_empty() {
            format!("'{}' does not start with a number", shown(text))
        } else {
            format!("'{}' is not a number", shown(number))
        });
    }
    let unit_ns: u128 = match unit {
        "" => {
            return Err(format!(
                "'{}' needs a unit: ns, us, ms, s, m or h",
                shown(text)
            ));
        }
        other => crate::units::duration_unit_ns(other).ok_or_else(|| {
            format!(
                "unknown unit '{}' (use ns, us, ms, s, m or h)",
                shown(other)
            )
        })?,
    };
    let too_large = || format!("'{}' is too large", shown(text));
    let ns = crate::units::scale_to_ns(number, unit_ns, crate::units::SubNanosecond::Round)
        .ok_or_else(too_large)?;
    if ns > 100 * 365 * 86_400 * 1_000_000_000 {
        return Err(too_large());
    }
    Ok(ns as u64)
}

// The checks are part of the Report model (report/model/thresholds.rs);
// compare and the commands name them through here.
use crate::report::ThresholdCheck;

/// Holds every threshold against one series (with its base for the delta
/// forms); metrics the series does not have are not checked.
pub fn check_series(
    thresholds: &[Threshold],
    test: &str,
    series: &str,
    new: &LatencySummary,
    base: Option<&dyn Fn(Metric) -> Option<f64>>,
) -> Vec<ThresholdCheck> {
    thresholds
        .iter()
        .filter_map(|t| {
            let value = t.metric.of(new)?;
            let base_ns = match (t.is_relative(), base) {
                (true, Some(base)) => Some(base(t.metric)?),
                (true, None) => return None,
                (false, _) => None,
            };
            Some(ThresholdCheck {
                expr: t.expr.clone(),
                test: test.to_string(),
                series: series.to_string(),
                value_ns: value,
                base_ns,
                crossed: t.crossed(value, base_ns),
            })
        })
        .collect()
}

/// Holds the (absolute) thresholds against every series of every test of a
/// finished run.
pub fn check_report(thresholds: &[Threshold], report: &Report) -> Vec<ThresholdCheck> {
    report
        .tests
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            let test = report.test_key_of(i);
            t.series
                .iter()
                .flat_map(move |s| check_series(thresholds, &test, &s.label, &s.latency, None))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;
    use proptest::prelude::*;

    fn t(text: &str) -> Threshold {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn parses_every_form_and_unit() {
        assert_eq!(t("p99>50us").limit, Limit::Absolute(50_000));
        assert_eq!(t("p99>50us").metric, Metric::Percentile(99_000));
        assert_eq!(t("max>1ms").limit, Limit::Absolute(1_000_000));
        assert_eq!(t("avg>5us").metric, Metric::Avg);
        assert_eq!(t("min>7ns").limit, Limit::Absolute(7));
        assert_eq!(t("max>2s").limit, Limit::Absolute(2_000_000_000));
        assert_eq!(t("p99>1h").limit, Limit::Absolute(3_600_000_000_000));
        assert_eq!(t("p50>1.5ms").limit, Limit::Absolute(1_500_000));
        assert_eq!(t("p99.9>+5us").limit, Limit::Delta(5_000));
        assert_eq!(t("p99.9>+5us").metric, Metric::Percentile(99_900));
        assert_eq!(t("p99.99>+2.5%").limit, Limit::Relative(2.5));
        assert_eq!(t("p99>+10%").metric, Metric::Percentile(99_000));
        assert_eq!(t("p90 > 3 us").expr, "p90>3us");
        assert_eq!(t("MAX>1µs").limit, Limit::Absolute(1_000));
        assert!(!t("max>1us").is_relative());
        assert!(t("max>+1us").is_relative() && t("max>+1%").is_relative());
    }

    #[test]
    fn bad_expressions_say_why_in_one_line() {
        for (text, needle) in [
            ("p99", "has no '>'"),
            ("", "has no '>'"),
            (">5us", "names no metric"),
            ("p98>5us", "unknown metric 'p98'"),
            ("p99>", "no limit"),
            ("p99>50", "needs a unit"),
            ("p99>50xs", "unknown unit 'xs'"),
            ("p99>10%", "write it with '+'"),
            ("p99>+x%", "is not a number"),
            ("p99>-5us", "cannot be negative"),
            ("p99>us", "does not start with a number"),
            ("p99>1.2.3us", "is not a number"),
            ("p99>99999999999h", "too large"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'), "{text}: {err}");
        }
    }

    #[test]
    fn crossing_is_strictly_above() {
        assert!(!t("max>1us").crossed(1_000.0, None));
        assert!(t("max>1us").crossed(1_001.0, None));
        // Delta: 10.0 -> 15.0 us is +5 us, not above +5 us; 15.001 is.
        assert!(!t("p99>+5us").crossed(15_000.0, Some(10_000.0)));
        assert!(t("p99>+5us").crossed(15_001.0, Some(10_000.0)));
        // Relative: 10 -> 11 us is exactly +10 %.
        assert!(!t("p99>+10%").crossed(11_000.0, Some(10_000.0)));
        assert!(t("p99>+10%").crossed(11_010.0, Some(10_000.0)));
        // From a base of 0 any increase crosses, none does not.
        assert!(t("p99>+10%").crossed(1.0, Some(0.0)));
        assert!(!t("p99>+10%").crossed(0.0, Some(0.0)));
        // Without a base the delta forms cannot be judged.
        assert!(!t("p99>+0%").crossed(1e12, None));
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[30.0, 10.0, 20.0]), Some(20.0));
        assert_eq!(median(&[40.0, 10.0, 30.0, 20.0]), Some(25.0));
        assert_eq!(median(&[1.0, 2.0]), Some(1.5));
    }

    #[test]
    fn relative_change_is_percent_of_the_base() {
        assert_eq!(relative_change(200.0, 250.0), Some(25.0));
        assert_eq!(relative_change(200.0, 150.0), Some(-25.0));
        assert_eq!(relative_change(0.0, 5.0), None);
    }

    #[test]
    fn checks_every_series_of_a_report() {
        // Samples 2, 3 and 5 us.
        let report = sample_report();
        let checks = check_report(&[t("max>4us"), t("min>2us"), t("p99>+1%")], &report);
        assert_eq!(
            checks.len(),
            2,
            "delta forms are not checked without a base"
        );
        assert_eq!(
            (checks[0].series.as_str(), checks[0].crossed),
            ("pair 0", true)
        );
        assert!((checks[0].value_ns - 5_000.0).abs() < 10.0, "{checks:?}");
        assert!(!checks[1].crossed, "min 2 us is not above 2 us");
        assert_eq!(
            checks[0].describe(),
            "mq pair 0: max>4us crossed (max = 5.00 us)"
        );
        // A test name that repeats (ipc --mode both) is told apart by mode.
        let mut report = report;
        let mut second = report.tests[0].clone();
        second.mode = "round-trip".into();
        report.tests.push(second);
        let tests: Vec<String> = check_report(&[t("max>4us")], &report)
            .into_iter()
            .map(|c| c.test)
            .collect();
        assert_eq!(tests, ["mq one-way", "mq round-trip"]);
    }

    proptest! {
        #[test]
        fn any_text_parses_or_fails_in_one_line(text in ".{0,40}") {
            if let Err(e) = parse(&text) {
                prop_assert!(!e.contains('\n') && !e.contains('\r'), "{}", e);
            }
        }

        #[test]
        fn shaped_text_parses_or_fails_in_one_line(
            metric in "(min|avg|max|p[0-9.]{0,6}|[a-z]{0,4})",
            sign in "[+-]?",
            number in "[0-9.]{0,25}",
            unit in "(ns|us|ms|s|m|h|%|[a-zµ%]{0,3})",
        ) {
            let text = format!("{metric}>{sign}{number}{unit}");
            match parse(&text) {
                Ok(th) => prop_assert_eq!(th.expr, text),
                Err(e) => prop_assert!(!e.contains('\n'), "{}", e),
            }
        }
    }
}
