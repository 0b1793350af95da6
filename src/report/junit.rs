//! `--junit FILE`: the verdicts as JUnit XML (the Ant format that Jenkins,
//! GitLab and most CI systems read), so that a fleet's runs show up as test
//! results: one `<testsuite>` per test, one `<testcase>` per threshold per
//! series.
//!
//! - `--max-latency USEC`: a case `LABEL: max-latency<=USECus` per series,
//!   failed when a sample was above it (the count and the measured max in the
//!   message);
//! - `--fail-if EXPR`: a case `LABEL: fail-if EXPR` per series, failed when
//!   crossed (the measured value in the message, as the console says it);
//! - without either, a case `LABEL: measured` per series, so that every run
//!   has cases;
//! - a test that ended with a run-time error: one more case `run` holding
//!   the `<error>`; a skipped test: its cases `<skipped>` with the reason
//!   (there are no series: one case per threshold, or `run`);
//! - the validity warnings (numbers that may not mean what they seem) are
//!   each suite's `<system-out>`.
//!
//! tests/junit/jenkins-junit.xsd is the schema the output is checked against.

use super::cells::{Markup, escape_markup};
use super::{EndReason, Exporter, Report, TestResult};
use crate::units::format_ns;
use std::io::Write;

pub struct JunitXml;

/// One `<testcase>`.
struct Case {
    name: String,
    outcome: Outcome,
}

enum Outcome {
    Passed,
    Failed { kind: &'static str, message: String },
    Error(String),
    Skipped(String),
}

impl Exporter for JunitXml {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let suites: Vec<(String, Vec<Case>)> = report
            .tests
            .iter()
            .enumerate()
            .map(|(i, t)| (report.test_key_of(i), cases_of(report, i, t)))
            .collect();
        let count = |f: fn(&Outcome) -> bool| -> usize {
            suites
                .iter()
                .flat_map(|(_, cases)| cases)
                .filter(|c| f(&c.outcome))
                .count()
        };
        writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
        writeln!(
            out,
            r#"<testsuites name="latscope" tests="{}" failures="{}" errors="{}" time="{:.3}">"#,
            count(|_| true),
            count(|o| matches!(o, Outcome::Failed { .. })),
            count(|o| matches!(o, Outcome::Error(_))),
            report.duration_s
        )?;
        // Ant's timestamp: ISO 8601 without a zone (the report's is UTC).
        let timestamp = report.start_time.trim_end_matches('Z');
        for (id, (key, cases)) in suites.iter().enumerate() {
            let of = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
            writeln!(
                out,
                r#"  <testsuite name="{}" tests="{}" failures="{}" errors="{}" skipped="{}" id="{id}" package="latscope" timestamp="{}" hostname="{}">"#,
                xml(key),
                cases.len(),
                of(|o| matches!(o, Outcome::Failed { .. })),
                of(|o| matches!(o, Outcome::Error(_))),
                of(|o| matches!(o, Outcome::Skipped(_))),
                xml(timestamp),
                xml(&report.sysinfo.nodename),
            )?;
            writeln!(out, "    <properties>")?;
            let sys = &report.sysinfo;
            let properties = [
                ("latscope.version", report.tool.version.clone()),
                ("command_line", report.command_line.join(" ")),
                ("kernel", sys.release.clone()),
                ("preempt_rt", sys.preempt_rt.to_string()),
                (
                    "virtualization",
                    sys.virtualization.clone().unwrap_or_else(|| "none".into()),
                ),
                ("clocksource", sys.clocksource.clone()),
            ];
            for (name, value) in properties {
                writeln!(
                    out,
                    r#"      <property name="{name}" value="{}"/>"#,
                    xml(&value)
                )?;
            }
            writeln!(out, "    </properties>")?;
            let classname = format!("latscope.{key}");
            for case in cases {
                write_case(out, &classname, case)?;
            }
            if !report.warnings.is_empty() {
                writeln!(
                    out,
                    "    <system-out>{}</system-out>",
                    xml(&report.warnings.join("\n"))
                )?;
            }
            writeln!(out, "  </testsuite>")?;
        }
        writeln!(out, "</testsuites>")
    }
}

fn write_case(out: &mut dyn Write, classname: &str, case: &Case) -> std::io::Result<()> {
    let open = format!(
        r#"    <testcase classname="{}" name="{}""#,
        xml(classname),
        xml(&case.name)
    );
    match &case.outcome {
        Outcome::Passed => writeln!(out, "{open}/>"),
        Outcome::Failed { kind, message } => writeln!(
            out,
            "{open}>\n      <failure type=\"{kind}\" message=\"{m}\">{m}</failure>\n    </testcase>",
            m = xml(message)
        ),
        Outcome::Error(message) => writeln!(
            out,
            "{open}>\n      <error type=\"runtime\" message=\"{m}\">{m}</error>\n    </testcase>",
            m = xml(message)
        ),
        Outcome::Skipped(message) => writeln!(
            out,
            "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>",
            xml(message)
        ),
    }
}

/// The cases of test `t` (the report's `index`-th).
fn cases_of(report: &Report, index: usize, t: &TestResult) -> Vec<Case> {
    let key = report.test_key_of(index);
    let limit_us = t.config.max_latency_us;
    // Every expression of --fail-if, as the checks of any series name them.
    let mut exprs: Vec<&str> = Vec::new();
    for c in &report.thresholds {
        if !exprs.contains(&c.expr.as_str()) {
            exprs.push(&c.expr);
        }
    }
    let mut names: Vec<String> = limit_us
        .map(|us| format!("max-latency<={us}us"))
        .into_iter()
        .chain(exprs.iter().map(|e| format!("fail-if {e}")))
        .collect();
    let mut cases = Vec::new();
    if t.end_reason == EndReason::Skipped {
        let reason = t.error.clone().unwrap_or_else(|| "skipped".into());
        if names.is_empty() {
            names.push("run".into());
        }
        return names
            .into_iter()
            .map(|name| Case {
                name,
                outcome: Outcome::Skipped(reason.clone()),
            })
            .collect();
    }
    for s in &t.series {
        if let Some(us) = limit_us {
            let outcome = if s.above_limit > 0 {
                Outcome::Failed {
                    kind: "max-latency",
                    message: format!(
                        "{key} {}: {} sample{} above {us} us (max = {})",
                        s.label,
                        s.above_limit,
                        if s.above_limit == 1 { "" } else { "s" },
                        format_ns(s.latency.max_ns)
                    ),
                }
            } else {
                Outcome::Passed
            };
            cases.push(Case {
                name: format!("{}: max-latency<={us}us", s.label),
                outcome,
            });
        }
        for check in report
            .thresholds
            .iter()
            .filter(|c| c.test == key && c.series == s.label)
        {
            cases.push(Case {
                name: format!("{}: fail-if {}", s.label, check.expr),
                outcome: if check.crossed {
                    Outcome::Failed {
                        kind: "fail-if",
                        message: check.describe(),
                    }
                } else {
                    Outcome::Passed
                },
            });
        }
        if limit_us.is_none() && exprs.is_empty() {
            cases.push(Case {
                name: format!("{}: measured", s.label),
                outcome: Outcome::Passed,
            });
        }
    }
    if let Some(e) = &t.error {
        cases.push(Case {
            name: "run".into(),
            outcome: Outcome::Error(format!("{key} failed while running: {e}")),
        });
    }
    cases
}

/// Text for XML content and attribute values (see `Markup::Xml`).
fn xml(text: &str) -> String {
    escape_markup(text, Markup::Xml)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    fn junit(report: &Report) -> String {
        let mut buf = Vec::new();
        JunitXml.write(report, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// The sample report with `--max-latency` and `--fail-if` checks as the
    /// judge records them: (expression, measured value, crossed).
    fn judged(thresholds: &[(&str, f64, bool)], limit_us: Option<u64>, above: u64) -> Report {
        let mut r = sample_report();
        r.tests[0].config.max_latency_us = limit_us;
        r.tests[0].series[0].above_limit = above;
        r.thresholds = thresholds
            .iter()
            .map(|&(expr, value_ns, crossed)| crate::report::ThresholdCheck {
                expr: expr.into(),
                test: "mq".into(),
                series: "pair 0".into(),
                value_ns,
                base_ns: None,
                crossed,
            })
            .collect();
        r
    }

    #[test]
    fn one_case_per_threshold_per_series_with_the_measured_value() {
        // The sample pair's samples are 2, 3 and 5 us.
        let text = junit(&judged(
            &[("max>4us", 5_000.0, true), ("p50>1ms", 3_000.0, false)],
            Some(4),
            1,
        ));
        assert!(
            text.contains(r#"tests="3" failures="2" errors="0""#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"<testcase classname="latscope.mq" name="pair 0: max-latency&lt;=4us">"#
            )
        );
        assert!(text.contains(r#"message="mq pair 0: 1 sample above 4 us (max = 5.00 us)""#));
        assert!(text.contains(r#"name="pair 0: fail-if max&gt;4us""#));
        assert!(text.contains(r#"message="mq pair 0: max&gt;4us crossed (max = 5.00 us)""#));
        assert!(
            text.contains(
                r#"<testcase classname="latscope.mq" name="pair 0: fail-if p50&gt;1ms"/>"#
            )
        );
    }

    #[test]
    fn without_thresholds_each_series_is_one_passing_case() {
        let text = junit(&sample_report());
        assert!(text.contains(r#"<testcase classname="latscope.mq" name="pair 0: measured"/>"#));
        assert!(text.contains(r#"tests="1" failures="0" errors="0" skipped="0""#));
    }

    #[test]
    fn errors_skips_and_warnings() {
        let mut r = judged(&[("max>1h", 5_000.0, false)], None, 0);
        r.tests[0].error = Some("peer died".into());
        r.warnings = vec!["not PREEMPT_RT".into(), "a <VM>".into()];
        let text = junit(&r);
        assert!(
            text.contains(r#"<error type="runtime" message="mq failed while running: peer died">"#)
        );
        assert!(text.contains("<system-out>not PREEMPT_RT&#10;a &lt;VM&gt;</system-out>"));
        let mut skipped = judged(&[], Some(50), 0);
        skipped.tests[0].end_reason = EndReason::Skipped;
        skipped.tests[0].error = Some("no futex_waitv".into());
        skipped.tests[0].series.clear();
        let text = junit(&skipped);
        assert!(text.contains(r#"skipped="1""#), "{text}");
        assert!(text.contains(r#"name="max-latency&lt;=50us">"#));
        assert!(text.contains(r#"<skipped message="no futex_waitv"/>"#));
    }

    #[test]
    fn text_is_escaped_and_control_characters_replaced() {
        assert_eq!(
            xml("a&b<c>\"d'\u{1}\te"),
            "a&amp;b&lt;c&gt;&quot;d&apos;\u{FFFD}&#9;e"
        );
    }
}
