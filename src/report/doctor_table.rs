//! `latscope doctor`'s table of the machine's checks, for people.

use crate::report::cells::{Table, machine_line};
use crate::report::{Check, Summary, SysInfo, Verdict};

/// The table: group (on its first row), verdict, check, value, fix; then,
/// with `explain`, what each finding that is not ok means; then the summary.
pub fn render(sysinfo: &SysInfo, checks: &[Check], explain: bool, quiet: bool) -> String {
    let mut out = format!("latscope doctor: {}\n\n", machine_line(sysinfo));
    let shown: Vec<&Check> = checks
        .iter()
        .filter(|c| !quiet || c.verdict != Verdict::Ok)
        .collect();
    if !shown.is_empty() {
        let mut table = Table::of_text(&["group", "verdict", "check", "value", "fix"]);
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
            out.push_str(&format!(
                "  {} ({}): {}\n",
                check.title,
                check.verdict.as_str(),
                check.meaning
            ));
        }
        out.push('\n');
    }
    out.push_str(&summary_line(Summary::of(checks)));
    out
}

/// The last line: the counts, and what they mean for real-time use.
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
