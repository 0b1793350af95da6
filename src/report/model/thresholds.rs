//! `--fail-if`'s checks as a report records them; `threshold.rs` parses the
//! expressions and makes the checks.

use crate::stats::relative_change;
use crate::units::format_ns;
use serde::{Deserialize, Serialize};

/// One threshold held against one series, as the report records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdCheck {
    /// The `--fail-if` expression (`p99>50us`).
    pub expr: String,
    /// The test (`futex`) and the series label (`pair 0`).
    pub test: String,
    pub series: String,
    /// The series' value of the metric, nanoseconds.
    pub value_ns: f64,
    /// The base's value (`compare` only: the median of the bases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ns: Option<f64>,
    pub crossed: bool,
}

impl ThresholdCheck {
    /// `futex pair 0: p99>50us crossed (p99 = 63.2 us)`, one line.
    pub fn describe(&self) -> String {
        let metric = self.expr.split('>').next().unwrap_or("");
        let value = format_ns(self.value_ns.round() as i64);
        let verdict = if self.crossed { "crossed" } else { "held" };
        match self.base_ns {
            None => format!(
                "{} {}: {} {verdict} ({metric} = {value})",
                self.test, self.series, self.expr
            ),
            Some(base) => {
                let delta = (self.value_ns - base).round() as i64;
                let sign = if delta > 0 { "+" } else { "" };
                let change = relative_change(base, self.value_ns)
                    .map_or(String::new(), |pct| format!(", {sign}{pct:.1}%"));
                format!(
                    "{} {}: {} {verdict} ({metric} = {value}, base {}: {sign}{}{change})",
                    self.test,
                    self.series,
                    self.expr,
                    format_ns(base.round() as i64),
                    format_ns(delta)
                )
            }
        }
    }
}
