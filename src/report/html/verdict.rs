//! The report's first section: each run's verdict (PASS, FAIL, ERROR or
//! SKIPPED, from its exit code) with the gates it crossed or held, worded
//! as the console says them (`cells::verdict`). A failed run's page said
//! nothing of its failure before.

use super::{Run, escape, run_name};
use crate::report::cells::verdict::{gates_held, verdict_lines, verdict_word};
use std::fmt::Write;

/// The verdict section of `runs`, one block per run.
pub fn section(runs: &[Run]) -> String {
    let mut out = String::from("<section class=\"verdict\" id=\"verdict\">\n");
    for (i, run) in runs.iter().enumerate() {
        let report = run.report;
        let word = verdict_word(report);
        let class = if word == "PASS" { "ok" } else { "err" };
        let who = if runs.len() > 1 {
            format!("{}: ", run_name(i))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<h2 class=\"{class}\">{}Verdict: {word} (exit code {})</h2>",
            escape(&who),
            report.exit_code
        );
        let mut lines = verdict_lines(report);
        if lines.iter().all(|l| !l.starts_with("FAIL")) {
            lines.extend(gates_held(report));
        }
        lines.extend(report.tests.iter().filter_map(|t| {
            Some(format!(
                "error: {} stopped early: {}",
                t.test,
                t.error.as_ref()?
            ))
        }));
        if lines.is_empty() {
            continue;
        }
        out.push_str("<ul>\n");
        for line in lines {
            let class = if line.starts_with("FAIL") || line.starts_with("error") {
                "err"
            } else {
                "ok"
            };
            let _ = writeln!(out, "<li class=\"{class}\">{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{sample_report, timer_report};

    fn page_of(report: &crate::report::Report) -> String {
        section(&[Run {
            source: "a.json".into(),
            report,
        }])
    }

    #[test]
    fn a_failed_run_says_fail_and_the_crossed_gates() {
        let html = page_of(&timer_report());
        assert!(
            html.contains("<h2 class=\"err\">Verdict: FAIL (exit code 3)</h2>"),
            "{html}"
        );
        assert!(
            html.contains("<li class=\"err\">FAIL: latency limit crossed by timer CPU 1</li>"),
            "{html}"
        );
    }

    #[test]
    fn a_passed_run_names_the_gates_it_held() {
        let mut report = timer_report();
        report.exit_code = 0;
        for s in &mut report.tests[0].series {
            s.above_limit = 0;
        }
        let html = page_of(&report);
        assert!(html.contains("Verdict: PASS (exit code 0)"), "{html}");
        assert!(
            html.contains("ok: no sample above --max-latency (timer 3 us)"),
            "{html}"
        );
        let mut plain = sample_report();
        plain.exit_code = 0;
        assert!(page_of(&plain).contains("no gate was set"));
    }
}
