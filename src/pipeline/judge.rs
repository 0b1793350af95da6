//! The verdict on a finished report: thresholds held against every series,
//! and the exit code.

use crate::report::Report;

pub const EXIT_OK: i32 = 0;
pub const EXIT_RUNTIME: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
/// `--max-latency` or a `--fail-if` threshold crossed; for `doctor`, a check is bad.
pub const EXIT_LIMIT: i32 = 3;
/// Nothing could be measured because this machine lacks what the test needs
/// (a kernel feature, a filesystem); the reason is in the report's warnings.
pub const EXIT_SKIPPED: i32 = 4;

/// The exit code a finished report calls for: a run-time error (1) before a
/// crossed limit or threshold (3), before a run that measured nothing because
/// every test was skipped (4).
pub fn exit_code_for(report: &Report) -> i32 {
    // A skipped test keeps its reason in `error`; it is not a failure.
    if report
        .tests
        .iter()
        .any(|t| t.error.is_some() && t.end_reason != crate::report::EndReason::Skipped)
    {
        EXIT_RUNTIME
    } else if !report.series_over_limit().is_empty() || report.thresholds_crossed().next().is_some()
    {
        EXIT_LIMIT
    } else if !report.tests.is_empty()
        && report
            .tests
            .iter()
            .all(|t| t.end_reason == crate::report::EndReason::Skipped)
    {
        EXIT_SKIPPED
    } else {
        EXIT_OK
    }
}

/// Holds the `--fail-if` thresholds against every series of the finished
/// run, records the checks in the report and sets its exit code.
pub fn judge(report: &mut Report, thresholds: &[crate::threshold::Threshold]) {
    report.thresholds = crate::threshold::check_report(thresholds, report);
    report.exit_code = exit_code_for(report);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::EndReason;
    use crate::report::testdata::sample_report;

    #[test]
    fn exit_codes_in_order_of_precedence() {
        let mut report = sample_report();
        assert_eq!(exit_code_for(&report), EXIT_OK);
        report.tests[0].end_reason = EndReason::Skipped;
        assert_eq!(exit_code_for(&report), EXIT_SKIPPED, "every test skipped");
        let mut other = report.tests[0].clone();
        other.end_reason = EndReason::LoopsDone;
        report.tests.push(other);
        assert_eq!(exit_code_for(&report), EXIT_OK, "one test ran");
        judge(&mut report, &[crate::threshold::parse("max>1us").unwrap()]);
        assert_eq!(report.exit_code, EXIT_LIMIT);
        report.tests[1].error = Some("peer died".into());
        assert_eq!(exit_code_for(&report), EXIT_RUNTIME);
    }

    /// `--fail-if` end to end: parsed, judged, then the console footer.
    #[test]
    fn threshold_verdict_names_series_and_threshold() {
        let mut report = sample_report();
        let parse = |t: &str| crate::threshold::parse(t).unwrap();
        judge(&mut report, &[parse("max>4us"), parse("avg>1h")]);
        assert_eq!(report.exit_code, EXIT_LIMIT);
        let mut buf = Vec::new();
        crate::report::console::write_footer(&report, &mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "warning: kernel is not PREEMPT_RT\n\
             context: worst wake-up latency 5.00 us (on a kernel without PREEMPT_RT): as low as PREEMPT_RT on\n  \
             bare metal keeps (tens of us) in this run, but nothing bounds it here (docs/interpreting.md)\n\
             FAIL: mq pair 0: max>4us crossed (max = 5.00 us)\n"
        );
        judge(&mut report, &[parse("avg>1h")]);
        assert_eq!(report.exit_code, 0);
        let mut buf = Vec::new();
        crate::report::console::write_footer(&report, &mut buf).unwrap();
        assert!(
            String::from_utf8(buf)
                .unwrap()
                .ends_with("ok: every --fail-if threshold held (1 check)\n")
        );
    }
}
