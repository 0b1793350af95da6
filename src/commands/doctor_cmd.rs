//! `latscope doctor`: the doctor's checks of this machine as a table (and
//! JSON); exit 3 when a check is bad. Reads only: it changes nothing.

use crate::cli::DoctorArgs;
use crate::pipeline::{CommandError, EXIT_LIMIT, EXIT_OK, write_with};
use crate::report::SysInfo;
use crate::report::Tool;
use crate::report::cells::{Table, machine_line};
use crate::report::{Check, Summary, Verdict};
use crate::settings::{OutputTarget, check_json_path};
use crate::units::rfc3339;
use serde::Serialize;
use std::io::Write;

/// Identifies the JSON document; bump the version on any incompatible change.
pub const SCHEMA_NAME: &str = "latscope-doctor";
pub const SCHEMA_VERSION: u32 = 1;

/// `latscope doctor --json`: the machine, every check, the counts, the exit code.
#[derive(Debug, Serialize)]
pub struct DoctorDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub tool: Tool,
    /// RFC 3339, UTC.
    pub time: String,
    /// The machine's facts (a report's `sysinfo`, without its `checks`).
    pub sysinfo: SysInfo,
    pub checks: &'a [Check],
    pub summary: Summary,
    pub exit_code: i32,
}

pub fn exit_code_of(summary: Summary) -> i32 {
    if summary.bad > 0 { EXIT_LIMIT } else { EXIT_OK }
}

pub fn run(args: &DoctorArgs) -> Result<i32, CommandError> {
    if args.bpf {
        return write_with(&OutputTarget::Stdout, &mut |out| {
            out.write_all(crate::doctor::programs::listings_text().as_bytes())
        })
        .map(|()| EXIT_OK)
        .map_err(CommandError::Runtime);
    }
    let json = args.json.as_deref().map(check_json_path).transpose()?;
    let mut sysinfo = SysInfo::collect();
    let checks = std::mem::take(&mut sysinfo.checks);
    let summary = Summary::of(&checks);
    let exit_code = exit_code_of(summary);
    let table = render(&sysinfo, &checks, args.explain, args.quiet);
    match &json {
        // Standard output is the JSON's: the people's part goes to standard error.
        Some(OutputTarget::Stdout) => eprint!("{}", summary_line(summary)),
        _ => {
            let mut out = crate::rt::stdio::out();
            let _ = out.write_all(table.as_bytes()).and_then(|_| out.flush());
        }
    }
    if let Some(target) = &json {
        let document = DoctorDocument {
            schema: SCHEMA_NAME,
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            time: rfc3339(std::time::SystemTime::now()),
            sysinfo,
            checks: &checks,
            summary,
            exit_code,
        };
        write_with(target, &mut |out| {
            serde_json::to_writer_pretty(&mut *out, &document)?;
            out.write_all(b"\n")
        })
        .map_err(CommandError::Runtime)?;
    }
    Ok(exit_code)
}

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

fn summary_line(s: Summary) -> String {
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
        assert_eq!(lines.len(), 3 + 23 + 2, "{text}");
        assert_eq!(
            lines.last().copied(),
            Some(
                "summary: 3 ok, 18 warn, 2 bad: not ready for real time: fix what is bad first (exit 3)"
            )
        );
        // -q: only the problems; --explain: what they mean.
        let quiet = render(&sysinfo, &checks, true, true);
        assert!(!quiet.contains("  ok  "), "{quiet}");
        assert!(quiet.contains("\nkernel     bad  "), "{quiet}");
        assert!(quiet.contains("what the findings mean:\n  preemption model (bad): kernel 6.18.0 is not PREEMPT_RT: worst-case latencies are not bounded\n"), "{quiet}");
        assert_eq!(exit_code_of(Summary::of(&checks)), EXIT_LIMIT);
    }

    #[test]
    fn a_tuned_machine_is_ready() {
        let mut sysinfo = SysInfo::of(&Fixture::tuned_rt().machine());
        let checks = std::mem::take(&mut sysinfo.checks);
        let text = render(&sysinfo, &checks, true, true);
        assert!(!text.contains("group"), "nothing to show: {text}");
        assert!(
            text.ends_with("summary: 23 ok, 0 warn, 0 bad: ready for real time\n"),
            "{text}"
        );
        assert_eq!(exit_code_of(Summary::of(&checks)), EXIT_OK);
    }
}
