//! The text pieces several exporters share: the aligned table, the cells of
//! a latency figure, the machine line, the end reason, and which rt-tests
//! tool an output imitates. Exporters import only the model, `stats/`,
//! `units` and this file (tests/suite/layers.rs), so that no exporter depends on
//! another (console <-> console_timer was an import circle).

pub mod breakdown;
pub mod fit;
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
/// with every column left-aligned. On a terminal it is fitted to its width
/// (`fit`): the table says which columns may wrap and which may go.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    all_left: bool,
    wrap: Vec<usize>,
    drop_order: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            all_left: false,
            wrap: Vec::new(),
            drop_order: Vec::new(),
        }
    }

    /// A table of words rather than numbers: every column left-aligned.
    pub fn of_text(header: &[&str]) -> Table {
        Table {
            all_left: true,
            ..Table::new(header)
        }
    }

    /// The columns (by header) whose long texts may wrap onto continuation
    /// lines to fit a narrow terminal.
    pub fn wrapping(mut self, headers: &[&str]) -> Table {
        self.wrap = self.columns_named(headers);
        self
    }

    /// The columns (by header) that may be left out on a narrow terminal,
    /// the least important first.
    pub fn dropping(mut self, headers: &[&str]) -> Table {
        self.drop_order = self.columns_named(headers);
        self
    }

    fn columns_named(&self, headers: &[&str]) -> Vec<usize> {
        headers
            .iter()
            .filter_map(|h| self.header.iter().position(|c| c == h))
            .collect()
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, fitted to the width the output is fitted to
    /// (`crate::units::fit_columns`; full width when none).
    pub fn render(&self) -> String {
        self.render_fitted(crate::units::fit_columns())
    }

    /// The table fitted to `limit` columns (None: full width), with a line
    /// under it when it had to be narrowed.
    pub fn render_fitted(&self, limit: Option<usize>) -> String {
        let natural: Vec<usize> = (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let fitted = match limit {
            Some(limit) => fit::fit(&natural, &self.wrap, &self.drop_order, limit),
            None => fit::Fitted {
                columns: (0..natural.len()).collect(),
                widths: natural.clone(),
                left_out: Vec::new(),
                wrapped: false,
            },
        };
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            self.render_row(row, &fitted, &mut out);
        }
        if let Some(limit) = limit.filter(|_| fitted.wrapped || !fitted.left_out.is_empty()) {
            let gone: Vec<&str> = fitted
                .left_out
                .iter()
                .map(|&c| self.header[c].as_str())
                .collect();
            out.push_str(&fit::narrowed_line(&gone, fitted.wrapped, limit));
            out.push('\n');
        }
        out
    }

    /// One row: one line, or several when a wrapped cell needs them (the
    /// other cells blank on the continuation lines).
    fn render_row(&self, row: &[String], fitted: &fit::Fitted, out: &mut String) {
        let cells: Vec<Vec<String>> = fitted
            .columns
            .iter()
            .map(|&c| {
                let cell = row.get(c).map_or("", |s| s.as_str());
                if self.wrap.contains(&c) {
                    fit::wrap_cell(cell, fitted.widths[c])
                } else {
                    vec![cell.to_string()]
                }
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let parts: Vec<String> = fitted
                .columns
                .iter()
                .zip(&cells)
                .map(|(&c, lines)| {
                    let cell = lines.get(line).map_or("", |s| s.as_str());
                    let w = fitted.widths[c];
                    if c == 0 || self.all_left {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        }
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
