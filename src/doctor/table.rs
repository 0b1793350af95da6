//! The doctor's table as `latscope doctor` prints it: group (on its first
//! row), verdict, check, value, fix; with `--explain`, what each finding
//! that is not ok means; the summary line.

use crate::report::SysInfo;
use crate::report::cells::{Table, machine_line};
use crate::report::{Check, Summary, Verdict};

/// The table: group (on its first row), verdict, check, value, fix; then,
/// with `explain`, what each finding that is not ok means; then the summary.
pub fn render(sysinfo: &SysInfo, checks: &[Check], explain: bool, quiet: bool) -> String {
    let fit = crate::units::fit_line;
    let mut out = fit(&format!("latscope doctor: {}", machine_line(sysinfo)));
    out.push_str("\n\n");
    let shown: Vec<&Check> = checks
        .iter()
        .filter(|c| !quiet || c.verdict != Verdict::Ok)
        .collect();
    if !shown.is_empty() {
        let mut table = Table::of_text(&["group", "verdict", "check", "value", "fix"])
            .wrapping(&["fix", "value", "check"]);
        let mut last_group = "";
        for check in &shown {
            let group = check.group();
            table.row(vec![
                if group == last_group {
                    String::new()
                } else {
                    group.to_string()
                },
                check.verdict.as_str().to_string(),
                check.title.clone(),
                check.value.clone(),
                check.fix.clone().unwrap_or_default(),
            ]);
            last_group = group;
        }
        out.push_str(&table.render());
        out.push('\n');
    }
    let problems: Vec<&&Check> = shown.iter().filter(|c| c.verdict != Verdict::Ok).collect();
    if explain && !problems.is_empty() {
        out.push_str("what the findings mean:\n");
        for check in problems {
            let line = format!(
                "  {} ({}): {}",
                check.title,
                check.verdict.as_str(),
                check.meaning
            );
            out.push_str(&fit(&line));
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&fit(&summary_line(Summary::of(checks))));
    out
}

pub fn summary_line(s: Summary) -> String {
    let verdict = if s.bad > 0 {
        "not ready for real time: fix what is bad first (exit 3)"
    } else if s.warn > 0 {
        "nothing bad; each warning costs latency or trust in the figures"
    } else {
        "ready for real time"
    };
    format!(
        "summary: {} ok, {} warn, {} bad: {verdict}\n",
        s.ok, s.warn, s.bad
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::fixture::Fixture;

    #[test]
    fn table_of_a_known_machine() {
        let mut sysinfo = SysInfo::of(&Fixture::stock_vm().machine());
        sysinfo.cpus_allowed = vec![0, 1];
        let checks = std::mem::take(&mut sysinfo.checks);
        let text = render(&sysinfo, &checks, false, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "latscope doctor: rig (Linux 6.18.0, not PREEMPT_RT, clocksource tsc, 2 CPUs usable)"
        );
        assert!(lines[2].starts_with("group      verdict  check "), "{text}");
        assert!(
            lines[3].starts_with("kernel     bad      preemption model "),
            "{text}"
        );
        assert!(
            lines[3].contains(" PREEMPT_DYNAMIC (not PREEMPT_RT) "),
            "{text}"
        );
        assert!(lines[3].ends_with(" boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; e.g. Debian's linux-image-rt-amd64, Ubuntu Pro's realtime kernel)"), "{text}");
        // The group is named once, on its first row; an ok row has no fix.
        assert!(
            lines[4].starts_with("           ok       clocksource "),
            "{text}"
        );
        assert!(lines[4].trim_end().ends_with("tsc"), "{text}");
        assert_eq!(lines.len(), 3 + 29 + 2, "{text}");
        assert_eq!(
            lines.last().copied(),
            Some(
                "summary: 8 ok, 19 warn, 2 bad: not ready for real time: fix what is bad first (exit 3)"
            )
        );
        // -q: only the problems; --explain: what they mean.
        let quiet = render(&sysinfo, &checks, true, true);
        assert!(!quiet.contains("  ok  "), "{quiet}");
        assert!(quiet.contains("\nkernel     bad  "), "{quiet}");
        assert!(quiet.contains("what the findings mean:\n  preemption model (bad): kernel 6.18.0 is not PREEMPT_RT: worst-case latencies are not bounded\n"), "{quiet}");
        assert_eq!(Summary::of(&checks).bad, 2);
    }

    #[test]
    fn a_narrow_terminal_wraps_the_long_texts_under_their_column() {
        let mut table = Table::of_text(&["group", "verdict", "check", "value", "fix"])
            .wrapping(&["fix", "value", "check"]);
        table.row(vec![
            "isolation".into(),
            "warn".into(),
            "isolated CPUs".into(),
            "none".into(),
            "boot with isolcpus=CPUS nohz_full=CPUS and run the real-time work there".into(),
        ]);
        assert_eq!(
            table.render_fitted(Some(60)),
            "\
group      verdict  check         value  fix
isolation  warn     isolated      none   boot with
                    CPUs                 isolcpus=CPUS
                                         nohz_full=CPUS and
                                         run the real-time
                                         work there
(wrapped to fit 60 columns; --wide: one line a row)
"
        );
    }

    #[test]
    fn a_tuned_machine_is_ready() {
        let mut sysinfo = SysInfo::of(&Fixture::tuned_rt().machine());
        let checks = std::mem::take(&mut sysinfo.checks);
        let text = render(&sysinfo, &checks, true, true);
        assert!(!text.contains("group"), "nothing to show: {text}");
        assert!(
            text.ends_with("summary: 29 ok, 0 warn, 0 bad: ready for real time\n"),
            "{text}"
        );
        assert_eq!(Summary::of(&checks).bad, 0);
    }
}
