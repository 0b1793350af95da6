//! `--markdown`: the run as a GitHub-flavoured Markdown table, to paste into
//! an issue or a wiki page: the command and the machine it ran on, one row
//! per series of every test (latencies with their units, as the console
//! shows them), then the errors, warnings and the limit verdict.

use super::cells::{end_reason_text, latency_cells, machine_line};
use super::{Exporter, Report, Series, TestResult};
use std::io::Write;

pub struct MarkdownTable;

const HEADER: [&str; 13] = [
    "Test", "Mode", "Series", "CPUs", "Policy", "Samples", "Min", "Avg", "P50", "P99", "P99.9",
    "Max", "Overruns",
];
/// Columns from `Samples` on are numbers: right-aligned.
const FIRST_NUMBER_COLUMN: usize = 5;

/// A table cell: `|` escaped, line breaks joined, so a value cannot break
/// the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Inline code that survives backticks in `text` (a longer fence, padded).
fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest > 0 {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

fn row(cells: &[String]) -> String {
    let escaped: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    format!("| {} |", escaped.join(" | "))
}

fn series_row(t: &TestResult, s: &Series) -> Vec<String> {
    let cpus: Vec<String> = s.cpus.iter().map(usize::to_string).collect();
    let mut cells = vec![
        t.test.clone(),
        t.mode.clone(),
        s.label.clone(),
        if cpus.is_empty() {
            "-".to_string()
        } else {
            cpus.join(", ")
        },
        format!("{} {}", s.policy, s.priority),
        s.latency.samples.to_string(),
    ];
    cells.extend(latency_cells(&s.latency));
    cells.push(s.overruns.to_string());
    cells
}

/// A test without series: its name and why it has no figures.
fn empty_test_row(t: &TestResult) -> Vec<String> {
    let mut cells = vec![
        t.test.clone(),
        t.mode.clone(),
        format!("({})", end_reason_text(t)),
        "-".to_string(),
        format!("{} {}", t.config.policy, t.config.priority),
        "0".to_string(),
    ];
    cells.extend(std::iter::repeat_n(
        "-".to_string(),
        HEADER.len() - cells.len(),
    ));
    cells
}

impl Exporter for MarkdownTable {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "### latscope results")?;
        writeln!(out)?;
        writeln!(
            out,
            "{}, {} .. {} ({:.1} s measured), latscope {}",
            code(&report.command_line.join(" ")),
            report.start_time,
            report.end_time,
            report.duration_s,
            report.tool.version
        )?;
        writeln!(out)?;
        writeln!(out, "Machine: {}", cell(&machine_line(&report.sysinfo)))?;
        writeln!(out)?;
        writeln!(out, "{}", row(&HEADER.map(String::from)))?;
        let rule: Vec<&str> = (0..HEADER.len())
            .map(|i| {
                if i >= FIRST_NUMBER_COLUMN {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        writeln!(out, "| {} |", rule.join(" | "))?;
        for t in &report.tests {
            if t.series.is_empty() {
                writeln!(out, "{}", row(&empty_test_row(t)))?;
            }
            for s in &t.series {
                writeln!(out, "{}", row(&series_row(t, s)))?;
            }
        }
        let mut notes = Vec::new();
        for t in &report.tests {
            if let Some(e) = &t.error {
                notes.push(format!("**error**: {} stopped early: {e}", t.test));
            }
        }
        notes.extend(
            report
                .loads
                .iter()
                .map(|l| format!("load: {}", l.describe())),
        );
        notes.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
        // The verdict as the console words it, --fail-if included.
        notes.extend(
            crate::report::cells::verdict::verdict_lines(report)
                .into_iter()
                .map(|l| match l.strip_prefix("FAIL:") {
                    Some(rest) => format!("**FAIL**:{rest}"),
                    None => l,
                }),
        );
        if !notes.is_empty() {
            writeln!(out)?;
            for n in notes {
                writeln!(out, "- {}", n.replace(['\n', '\r'], " "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{
        logdisk_report, sample_report, timer_report, with_a_test_that_did_not_start, written,
    };

    fn markdown_of(report: &Report) -> String {
        written(&MarkdownTable, report)
    }

    const TABLE_HEAD: &str = "\
| Test | Mode | Series | CPUs | Policy | Samples | Min | Avg | P50 | P99 | P99.9 | Max | Overruns |
| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
";

    #[test]
    fn ipc_report() {
        assert_eq!(
            markdown_of(&sample_report()),
            format!(
                "### latscope results\n\n\
                 `latscope mq -l 3 --json \"x\".json`, 2026-11-21T10:00:00Z .. 2026-11-21T10:00:01Z (1.0 s measured), latscope 0.1.0\n\n\
                 Machine: rig (Linux 6.18.0, not PREEMPT_RT, clocksource tsc, 2 CPUs usable)\n\n\
                 {TABLE_HEAD}\
                 | mq | one-way | pair 0 | 1 | fifo 99 | 3 | 2.00 us | 3.33 us | 3.00 us | 5.00 us | 5.00 us | 5.00 us | 0 |\n\
                 \n\
                 - warning: kernel is not PREEMPT_RT\n"
            )
        );
    }

    #[test]
    fn timer_report_with_verdict_and_escaped_cells() {
        let mut report = timer_report();
        report.tests[0].series[0].label = "CPU 0 | hot".into();
        let text = markdown_of(&report);
        assert!(
            text.starts_with(
                "### latscope results\n\n`latscope timer --smp -T 1`, 2026-11-21T10:00:00Z"
            ),
            "{text}"
        );
        assert!(text.contains(&format!(
            "{TABLE_HEAD}\
             | timer | user | CPU 0 \\| hot | 0 | fifo 99 | 4 | -1.00 us | 1.75 us | 1.00 us | 4.00 us | 4.00 us | 4.00 us | 0 |\n\
             | timer | user | CPU 1 | 1 | fifo 99 | 4 | -1.00 us | 1.75 us | 1.00 us | 4.00 us | 4.00 us | 4.00 us | 3 |\n\
             \n\
             - warning: kernel is not PREEMPT_RT\n\
             - **FAIL**: latency limit crossed by timer CPU 1\n"
        )));
        // A crossed --fail-if is said as the console says it (it was left
        // out before).
        report.thresholds = vec![crate::report::ThresholdCheck {
            expr: "p99>2us".into(),
            test: "timer".into(),
            series: "CPU 0 | hot".into(),
            value_ns: 4_000.0,
            base_ns: None,
            crossed: true,
        }];
        let text = markdown_of(&report);
        assert!(
            text.contains("- **FAIL**: timer CPU 0 | hot: p99>2us crossed (p99 = 4.00 us)\n"),
            "{text}"
        );
    }

    #[test]
    fn logdisk_report_and_a_test_that_did_not_start() {
        let report = with_a_test_that_did_not_start(logdisk_report());
        let text = markdown_of(&report);
        assert!(text.contains(&format!(
            "{TABLE_HEAD}\
             | logdisk | dsync | writer | - | other 0 | 3 | 1.00 ms | 2.00 ms | 2.00 ms | 3.00 ms | 3.00 ms | 3.00 ms | 0 |\n\
             | svmq | one-way | (error) | - | other 0 | 0 | - | - | - | - | - | - | - |\n\
             \n\
             - **error**: svmq stopped early: msgget: No space left on device\n\
             - warning: running in a virtual machine (kvm): the host decides\n"
        )), "{text}");
    }

    #[test]
    fn the_load_is_a_note() {
        let report = crate::report::testdata::with_load_and_kernel_message(sample_report());
        assert!(markdown_of(&report).contains(
            "- load: /usr/bin/stress-ng --cpu 1 --timeout 0 (stress-ng, version 0.15.06) on CPU 0,1 at normal priority\n"
        ));
    }

    #[test]
    fn inline_code_survives_backticks() {
        assert_eq!(code("a"), "`a`");
        assert_eq!(code("a `b` c"), "`` a `b` c ``");
    }
}
