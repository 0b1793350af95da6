//! The text pieces several exporters share: the aligned table, the cells of
//! a latency figure, the machine line, the end reason, and which rt-tests
//! tool an output imitates. Exporters import only the model, `stats/`,
//! `units` and this file (tests/suite/layers.rs), so that no exporter depends on
//! another (console <-> console_timer was an import circle).

pub mod breakdown;
pub mod verdict;

use super::{Series, SysInfo, TestResult};
use crate::stats::LatencySummary;
use crate::units::format_ns;
use std::fmt::Write;

/// The markup a text is escaped for (`escape_markup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// HTML (and the SVG inside it): `'` as `&#39;`, which every HTML
    /// version reads.
    Html,
    /// Element content only (SVG `<title>` text): `&`, `<` and `>`; quotes
    /// stay as typed, as no attribute ends there.
    Content,
    /// XML 1.0 (JUnit): `'` as `&apos;`; a tab, line feed or carriage
    /// return as a character reference, so that it survives in an
    /// attribute; any other control character, which XML 1.0 cannot carry
    /// even escaped, as U+FFFD.
    Xml,
}

/// Text for `markup`: `&`, `<` and `>` as references, and for content and
/// attribute values (`Html`, `Xml`) `"` and `'`, and what `Markup::Xml` says.
pub fn escape_markup(text: &str, markup: Markup) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match (c, markup) {
            ('&', _) => out.push_str("&amp;"),
            ('<', _) => out.push_str("&lt;"),
            ('>', _) => out.push_str("&gt;"),
            ('"', Markup::Html | Markup::Xml) => out.push_str("&quot;"),
            ('\'', Markup::Html) => out.push_str("&#39;"),
            ('\'', Markup::Xml) => out.push_str("&apos;"),
            (c, Markup::Html | Markup::Content) => out.push(c),
            ('\n', Markup::Xml) => out.push_str("&#10;"),
            ('\t', Markup::Xml) => out.push_str("&#9;"),
            ('\r', Markup::Xml) => out.push_str("&#13;"),
            (c, Markup::Xml) if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push('\u{FFFD}')
            }
            (c, Markup::Xml) => out.push(c),
        }
    }
    out
}

/// A right-aligned text table (first column left-aligned), or a text table
/// with every column left-aligned.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    all_left: bool,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            all_left: false,
        }
    }

    /// A table of words rather than numbers: every column left-aligned.
    pub fn of_text(header: &[&str]) -> Table {
        Table {
            all_left: true,
            ..Table::new(header)
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let cells: Vec<String> = (0..columns)
                .map(|c| {
                    let cell = row.get(c).map_or("", |s| s.as_str());
                    if c == 0 || self.all_left {
                        format!("{cell:<w$}", w = widths[c])
                    } else {
                        format!("{cell:>w$}", w = widths[c])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// The CPUs of a series (`~` when not pinned): `1`, or `0/1` for a pair
/// split across CPUs.
pub fn cpus_cell(s: &Series) -> String {
    let pin = if s.pinned { "" } else { "~" };
    let list: Vec<String> = s.cpus.iter().map(usize::to_string).collect();
    format!("{pin}{}", list.join("/"))
}

/// A latency of `summary` for a table cell: `-` when it has no samples.
pub fn latency_cell(summary: &LatencySummary, value: i64) -> String {
    if summary.samples == 0 {
        "-".to_string()
    } else {
        format_ns(value)
    }
}

/// The `q` percentile of `summary` for a table cell.
pub fn percentile_cell(summary: &LatencySummary, q: f64) -> String {
    latency_cell(summary, summary.percentile(q).unwrap_or(0))
}

/// Min, Avg, P50, P99, P99.9 and Max of `l` as table cells.
pub fn latency_cells(l: &LatencySummary) -> Vec<String> {
    vec![
        latency_cell(l, l.min_ns),
        latency_cell(l, l.avg_ns.round() as i64),
        percentile_cell(l, 50.0),
        percentile_cell(l, 99.0),
        percentile_cell(l, 99.9),
        latency_cell(l, l.max_ns),
    ]
}

/// The machine a report was measured on, in one line: `rig (Linux 6.18.0,
/// not PREEMPT_RT, clocksource tsc, 2 CPUs usable)`.
pub fn machine_line(s: &SysInfo) -> String {
    format!(
        "{} ({} {}, {}, clocksource {}, {} CPUs usable)",
        s.nodename,
        s.sysname,
        s.release,
        if s.preempt_rt {
            "PREEMPT_RT"
        } else {
            "not PREEMPT_RT"
        },
        s.clocksource,
        s.cpus_allowed.len()
    )
}

/// Ctrl-C or SIGTERM came before the test's first sample: there is nothing
/// to tabulate, and every kind of test says so the same way (its title line
/// ending "interrupted before measuring", no tables).
pub fn interrupted_before_measuring(test: &TestResult) -> bool {
    test.end_reason == crate::report::EndReason::Interrupted
        && test.series.iter().all(|s| s.latency.samples == 0)
}

pub fn end_reason_text(test: &TestResult) -> &'static str {
    use crate::report::EndReason::*;
    match test.end_reason {
        LoopsDone => "all loops done",
        DurationElapsed => "duration elapsed",
        Interrupted if interrupted_before_measuring(test) => "interrupted before measuring",
        Interrupted => "interrupted",
        BreakTrace => "break-trace limit crossed",
        BreakOnSwitch => "stopped at a context switch or page fault (-b)",
        Error => "error",
        Skipped => "skipped (this machine cannot run it)",
        Running => "still running (snapshot)",
    }
}

/// Which rt-tests tool's output to reproduce (classic lines and rt-tests JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtTestsFlavor {
    /// pmqtest: prints `TO n, ` and writes `timeoutcount`.
    Pmqtest,
    /// sigwaittest: no timeout count.
    Sigwaittest,
    /// svsematest: no timeout count.
    Svsematest,
    /// ptsematest: no timeout count (the same lines and JSON as svsematest).
    Ptsematest,
}

impl RtTestsFlavor {
    /// Whether the tool reports a timeout count (`TO n`, JSON `timeoutcount`).
    pub fn with_timeouts(self) -> bool {
        self == RtTestsFlavor::Pmqtest
    }

    /// The original tool's name.
    pub fn tool_name(self) -> &'static str {
        match self {
            RtTestsFlavor::Pmqtest => "pmqtest",
            RtTestsFlavor::Sigwaittest => "sigwaittest",
            RtTestsFlavor::Svsematest => "svsematest",
            RtTestsFlavor::Ptsematest => "ptsematest",
        }
    }
}

/// A change of latency with its sign: `+1.50 us`, `-200 ns`, `0 ns`
/// (`compare`'s table and page).
pub fn signed_ns(ns: f64) -> String {
    let rounded = ns.round() as i64;
    if rounded > 0 {
        format!("+{}", format_ns(rounded))
    } else {
        format_ns(rounded)
    }
}

/// A relative change: `+12.5%`, `-3.0%`, or `n/a` without a base.
pub fn change_cell(change: Option<f64>) -> String {
    match change {
        Some(pct) if pct > 0.0 => format!("+{pct:.1}%"),
        Some(pct) => format!("{pct:.1}%"),
        None => "n/a".to_string(),
    }
}

/// What an rt-tests tool's `--json` file says first, about the run and the
/// machine (rt-tests' `rt_write_json`, shared by its tools).
pub struct JsonHeader<'a> {
    pub cmdline: &'a str,
    pub start_time: &'a str,
    pub end_time: &'a str,
    pub return_code: i32,
    pub sysname: &'a str,
    pub nodename: &'a str,
    pub release: &'a str,
    pub version: &'a str,
    pub machine: &'a str,
    pub realtime: bool,
}

fn json_string(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The rt-tests release the classic drop-ins stand in for: their `--json`
/// files' `rt_test_version:` (rt-tests' `%1.2f` of its version).
pub const RT_TESTS_VERSION: &str = "2.40";

/// The `--json` file of an rt-tests 2.40 tool up to its own part:
/// `rt_write_json`'s opening brace and header lines, byte for byte (the
/// stray colons of `cmdline:` and `rt_test_version:` are rt-tests').
pub fn rt_tests_json_header(h: &JsonHeader) -> String {
    use std::fmt::Write;
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"file_version\": 1,");
    let _ = writeln!(out, "  \"cmdline:\": {},", json_string(h.cmdline));
    let _ = writeln!(out, "  \"rt_test_version:\": \"{RT_TESTS_VERSION}\",");
    let _ = writeln!(out, "  \"start_time\": {},", json_string(h.start_time));
    let _ = writeln!(out, "  \"end_time\": {},", json_string(h.end_time));
    let _ = writeln!(out, "  \"return_code\": {},", h.return_code);
    out.push_str("  \"sysinfo\": {\n");
    let _ = writeln!(out, "    \"sysname\": {},", json_string(h.sysname));
    let _ = writeln!(out, "    \"nodename\": {},", json_string(h.nodename));
    let _ = writeln!(out, "    \"release\": {},", json_string(h.release));
    let _ = writeln!(out, "    \"version\": {},", json_string(h.version));
    let _ = writeln!(out, "    \"machine\": {},", json_string(h.machine));
    let _ = writeln!(out, "    \"realtime\": {}", u8::from(h.realtime));
    out.push_str("  },\n");
    out
}

/// An rt-tests thread's average for its `--json` part: `sum / cycles`, and
/// 0 for a thread without a sample, where the tools divide 0 by 0 and print
/// `-nan`, which no JSON reader takes.
pub fn rt_tests_json_average(sum: i64, cycles: u64) -> f64 {
    if cycles == 0 {
        0.0
    } else {
        sum as f64 / cycles as f64
    }
}

/// rt-tests' `"thread"` object of a `--json` file, to the file's closing
/// brace: one member per thread, each field (name, value as the tool prints
/// it) on its own line after `indent`, the tool's own indentation
/// (cyclicdeadline's `"\t "`, signaltest's six blanks).
pub fn rt_tests_json_threads(threads: &[Vec<(&str, String)>], indent: &str) -> String {
    let mut out = String::from("  \"thread\": {\n");
    for (i, fields) in threads.iter().enumerate() {
        let _ = writeln!(out, "    \"{i}\": {{");
        for (k, (name, value)) in fields.iter().enumerate() {
            let comma = if k + 1 < fields.len() { "," } else { "" };
            let _ = writeln!(out, "{indent}\"{name}\": {value}{comma}");
        }
        let comma = if i + 1 < threads.len() { "," } else { "" };
        let _ = writeln!(out, "    }}{comma}");
    }
    out.push_str("  }\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_for_html_and_for_xml() {
        let text = "a&b<c>\"d'\u{1}\te";
        assert_eq!(
            escape_markup(text, Markup::Html),
            "a&amp;b&lt;c&gt;&quot;d&#39;\u{1}\te"
        );
        assert_eq!(
            escape_markup(text, Markup::Xml),
            "a&amp;b&lt;c&gt;&quot;d&apos;\u{FFFD}&#9;e"
        );
        assert_eq!(
            escape_markup(text, Markup::Content),
            "a&amp;b&lt;c&gt;\"d'\u{1}\te"
        );
    }
}
