//! `latscope report`: one self-contained HTML page for people, made from one
//! or more JSON reports. Everything is inline (CSS, SVG plots): the page
//! loads nothing, runs no script and needs no font file.
//!
//! Layout: one section per run (command line, times, machine, validity
//! warnings), then one section per test (a test name and mode, and the block
//! size for log-disk tests) with the summary table of every series of every
//! run, the latency histogram and the per-second figures over time, the runs'
//! series overlaid in distinct colours.

use super::cells::{cpus_cell, end_reason_text, latency_cell, percentile_cell};
mod breakdown;
pub mod compare;
mod hwlat;
pub mod plots;
mod verdict;

use super::cells::{Markup, escape_markup};
use super::{Report, Series, TestResult};
use crate::stats::LatencySummary;
use crate::units::format_ns;
use plots::PlotSeries;
use std::fmt::Write;

/// One JSON report given to `latscope report`, with the name it is shown by.
pub struct Run<'a> {
    /// The file as given on the command line.
    pub source: String,
    pub report: &'a Report,
}

/// One plot, as written inline and with `--svg` as a file.
#[derive(Debug, Clone)]
pub struct Plot {
    /// A file name without extension: `1-futex-one-way-histogram`.
    pub name: String,
    pub svg: String,
}

pub struct Rendered {
    pub html: String,
    pub plots: Vec<Plot>,
}

/// Text for HTML content and attribute values (and SVG's).
pub fn escape(text: &str) -> String {
    escape_markup(text, Markup::Html)
}

/// A command line as a shell would take it back (single quotes where needed).
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A name safe as a file name: letters, digits, `.`, `_` and `-`.
fn file_safe(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut out = String::new();
    for c in s.chars() {
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches(|c| c == '-' || c == '.')
        .chars()
        .take(60)
        .collect()
}

const STYLE: &str = "
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1180px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.3em; border-bottom: 2px solid #ccd; padding-bottom: .2em; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 1em 0 .3em; }
table { border-collapse: collapse; margin: .4em 0; font-size: .9em; }
th, td { padding: .2em .6em; border-bottom: 1px solid #e3e3e8; }
table.facts th { text-align: left; font-weight: 600; color: #445; }
table.summary td { text-align: right; font-variant-numeric: tabular-nums; }
table.summary td.l, table.summary th.l { text-align: left; }
table.summary th { background: #f0f0f5; text-align: right; }
tr.all td { font-weight: 600; background: #fafafc; }
code { font-family: monospace; background: #f4f4f8; padding: .1em .3em; word-break: break-all; }
.swatch { display: inline-block; width: .9em; height: .9em; border-radius: 2px; vertical-align: -.1em; }
.warn { color: #8a5300; }
.err { color: #b00020; font-weight: 600; }
.ok { color: #226622; }
figure { margin: .8em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e3e3e8; }
figcaption { font-size: .85em; color: #555; }
.note { font-size: .85em; color: #555; }
";

/// The words and figure names of the page in plain words (the header links
/// here).
const LEGEND: &str = "<section class=\"legend\" id=\"words\">
<h2>The words on this page</h2>
<dl>
<dt>latency</dt><dd>How late a task ran: from the moment it was due (a message sent, a timer \
expiring, a write started) to the moment it ran (or the write returned).</dd>
<dt>one-way, round-trip</dt><dd>One-way: from the sender's clock read just before waking the \
receiver to the receiver's clock read just after it woke. Round-trip: one task wakes the other and \
is woken back; the whole trip is one sample.</dd>
<dt>user, thread, irq</dt><dd>The timer test's figures: <i>user</i> is the latency the \
measuring thread sees after its sleep returns (what an application gets); <i>thread</i> ends when \
the kernel switched to the thread; <i>irq</i> ends when the timer interrupt ran.</dd>
<dt>Samples</dt><dd>How many latencies were measured.</dd>
<dt>Min, Avg, Max</dt><dd>The smallest, the mean and the largest latency.</dd>
<dt>P50, P99, P99.9, P99.99 (percentiles)</dt><dd>P99 is the latency that 99 % of the samples \
stayed at or under: 1 sample in 100 took longer. P50 is the median; each further nine looks ten \
times deeper into the slow end.</dd>
<dt>all</dt><dd>Every series of a test merged into one.</dd>
<dt>CPU</dt><dd>The CPUs the series' tasks ran on; <code>~</code> means not pinned (the \
scheduler could move them).</dd>
<dt>Policy</dt><dd>The scheduling policy and priority (<code>fifo 99</code>: real-time, \
highest; <code>other 0</code>: normal time sharing).</dd>
<dt>Overruns</dt><dd>Periods missed: a wake-up came so late that the next one was already \
due. Counted, never hidden.</dd>
<dt>Timeouts</dt><dd>Waits of an IPC test that ended without a wake-up.</dd>
<dt>Msw</dt><dd>The timer thread's involuntary context switches and page faults (Xenomai's \
\"mode switches\"): things that should not happen to a real-time thread.</dd>
<dt>Above limit</dt><dd>Samples above <code>--max-latency</code>.</dd>
<dt>IOPS, MB/s</dt><dd>Log-disk writes per second and bytes written per second.</dd>
<dt>interruption, Noise, Loops/s</dt><dd>OS noise (<code>latscope noise</code>): a thread spins \
reading the clock; a gap between two reads above the threshold is an <i>interruption</i> (the CPU \
ran something else), and its length is the sample. <i>Noise</i> is the interruptions' sum as a \
share of the time spun; <i>Loops/s</i> how often the loop read the clock (a slower loop cannot \
see shorter interruptions); <i>Causes</i> what the kernel trace saw run in them \
(<code>--trace-spikes</code>).</dd>
<dt>hardware gap, hypervisor gap, OS gap, steal</dt><dd>Hardware latency (<code>latscope \
hwlat</code>): a thread spins reading the clock; a gap between two reads above the threshold \
during which nothing the kernel counts ran on its CPU (no interrupt, softirq, NMI or task \
switch) is a <i>hardware</i> gap: firmware, an SMI, or in a guest the <i>hypervisor</i>. Any \
other gap is an <i>OS</i> gap. <i>Steal</i> is the time the host's scheduler says it gave the \
vCPU's physical CPU to something else, counted in 10 ms ticks.</dd>
<dt>outlier</dt><dd>One of the few slowest samples (at most 20) lying more than 4 times beyond \
the rest: the histogram marks them one by one in a strip at its right.</dd>
<dt>window</dt><dd>One second of a run (longer when merged): the over-time plot draws each \
window's minimum, mean and maximum.</dd>
<dt>spike</dt><dd>With <code>--trace-spikes</code>: a sample above the threshold, traced in \
the kernel; the over-time plot marks it, its cause on hover.</dd>
<dt>kernel log</dt><dd>What the kernel said while measuring (RT throttling, lockups, errors).</dd>
</dl>
</section>
";

/// The start of a page titled `title`, up to and with its `<h1>`.
pub fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    )
}

/// A plot and its caption as a figure of the page.
pub fn figure_html(svg: &str, caption: &str) -> String {
    format!(
        "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(caption)
    )
}

/// The page for `runs`.
pub fn render(runs: &[Run]) -> Result<Rendered, String> {
    let mut page = Page::default();
    page.header(runs);
    // The verdict first: what CI acts on, then the figures.
    page.html.push_str(&verdict::section(runs));
    page.at_a_glance(runs);
    let shared = page.machine_section(runs);
    for (i, run) in runs.iter().enumerate() {
        page.run_section(i, run, &shared);
    }
    for (i, group) in test_groups(runs).iter().enumerate() {
        page.test_section(i + 1, runs, group)?;
    }
    page.html.push_str(LEGEND);
    page.html.push_str("</body>\n</html>\n");
    Ok(Rendered {
        html: page.html,
        plots: page.plots,
    })
}

#[derive(Default)]
struct Page {
    html: String,
    plots: Vec<Plot>,
}

/// The tests of every run that share a heading, in the order first seen.
struct TestGroup<'a> {
    heading: String,
    /// (run index, test)
    tests: Vec<(usize, &'a TestResult)>,
    /// `--max-latency` and absolute `--fail-if` limits of these tests.
    limits: Vec<plots::Limit>,
}

/// The latency limits held against `test` in `report`: `--max-latency`, and
/// every absolute `--fail-if` limit (`p99>50us`; a change from a base such
/// as `p99>+10%` is no latency and is not drawn).
fn limits_of(report: &Report, test: &TestResult) -> Vec<plots::Limit> {
    let mut limits = Vec::new();
    if let Some(us) = test.config.max_latency_us {
        limits.push(plots::Limit {
            label: "--max-latency".to_string(),
            ns: us.saturating_mul(1000).min(i64::MAX as u64) as i64,
        });
    }
    for check in report.thresholds.iter().filter(|c| c.test == test.test) {
        let Some((_, limit)) = check.expr.split_once('>') else {
            continue;
        };
        if limit.starts_with('+') {
            continue;
        }
        if let Ok(d) = crate::units::parse_duration(limit, 1_000) {
            limits.push(plots::Limit {
                label: format!("--fail-if {}", check.expr),
                ns: d.as_nanos().min(i64::MAX as u128) as i64,
            });
        }
    }
    limits
}

/// How a test is named across runs: its name and mode, plus the block size
/// of a log-disk test (one test per block size).
fn heading(test: &TestResult) -> String {
    match test.config.logdisk() {
        Some(c) => format!(
            "{} ({}, {} blocks)",
            test.test,
            test.mode,
            crate::units::format_bytes(c.block_size)
        ),
        None => format!("{} ({})", test.test, test.mode),
    }
}

fn test_groups<'a>(runs: &[Run<'a>]) -> Vec<TestGroup<'a>> {
    let mut groups: Vec<TestGroup<'a>> = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for test in &run.report.tests {
            let h = heading(test);
            let limits = limits_of(run.report, test);
            let i = match groups.iter().position(|g| g.heading == h) {
                Some(i) => i,
                None => {
                    groups.push(TestGroup {
                        heading: h,
                        tests: Vec::new(),
                        limits: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            let group = &mut groups[i];
            group.tests.push((r, test));
            for limit in limits {
                if !group.limits.contains(&limit) {
                    group.limits.push(limit);
                }
            }
        }
    }
    groups
}

/// One row of a fact table (`value` is HTML).
fn fact(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "<tr><th>{}</th><td>{value}</td></tr>", escape(name));
}

/// The doctor's counts, then each finding that is not ok: `title: value`.
fn doctor_fact(checks: &[crate::report::Check]) -> String {
    use crate::report::{Summary, Verdict};
    let summary = Summary::of(checks);
    let findings: Vec<String> = checks
        .iter()
        .filter(|c| c.verdict != Verdict::Ok)
        .map(|c| {
            format!(
                "<span class=\"warn\">{}</span> {}: {}",
                c.verdict.as_str(),
                escape(&c.title),
                escape(&c.value)
            )
        })
        .collect();
    let mut text = format!(
        "{} ok, {} warn, {} bad",
        summary.ok, summary.warn, summary.bad
    );
    if !findings.is_empty() {
        text.push_str("<br>");
        text.push_str(&findings.join("<br>"));
    }
    text
}

/// The facts of the machine a report was made on, as rows (name, HTML):
/// host and kernel, PREEMPT_RT, clocksource, CPUs, virtualization, RT
/// throttling, and the doctor's findings when the report has them.
fn machine_facts(r: &Report) -> Vec<(&'static str, String)> {
    let s = &r.sysinfo;
    let rt = if s.preempt_rt {
        "<span class=\"ok\">yes</span>"
    } else {
        "<span class=\"warn\">no</span>"
    };
    let isolated = if s.cpus_isolated.is_empty() {
        "none".to_string()
    } else {
        s.cpus_isolated.clone()
    };
    let throttling = match (s.rt_runtime_us, s.rt_period_us) {
        (Some(-1), _) => "off".to_string(),
        (Some(run), Some(period)) => format!("{run} us per {period} us"),
        _ => "unknown".to_string(),
    };
    let mut facts = vec![
        (
            "Host / kernel",
            escape(&format!(
                "{} / {} {} {} {}",
                s.nodename, s.sysname, s.release, s.version, s.machine
            )),
        ),
        ("PREEMPT_RT", rt.to_string()),
        ("Clocksource", escape(&s.clocksource)),
        (
            "CPUs",
            escape(&format!(
                "{} online, allowed {:?}, isolated: {isolated}",
                s.cpus_online, s.cpus_allowed
            )),
        ),
        (
            "Virtualization",
            escape(s.virtualization.as_deref().unwrap_or("none seen")),
        ),
        ("RT throttling", escape(&throttling)),
    ];
    if !s.checks.is_empty() {
        facts.push(("latscope doctor", doctor_fact(&s.checks)));
    }
    facts
}

/// The marks of a test group's over-time plot and what could not be marked.
#[derive(Default)]
struct Marks {
    marks: Vec<plots::TimeMark>,
    /// Traced spikes whose time could not be found on the axis.
    spikes_unplaced: usize,
    /// Kernel messages of runs of several tests (not drawn: see `caption`).
    kernel_unplaced: usize,
}

impl Marks {
    /// What the caption says about the marks.
    fn caption(&self) -> String {
        let spikes = self
            .marks
            .iter()
            .filter(|m| m.kind == plots::MarkKind::Spike)
            .count();
        let kernel = self.marks.len() - spikes;
        let mut text = String::new();
        if spikes > 0 {
            text.push_str(&format!(
                " Triangles: the {spikes} spike(s) --trace-spikes kept, each pointing at its \
                 time and latency in its series' colour; hover over one for its cause."
            ));
        }
        if kernel > 0 {
            text.push_str(&format!(
                " Diamonds: the {kernel} kernel log message(s), at their time from the start \
                 of the run (the test starts a moment later, seconds later with --load); \
                 hover over one for its text."
            ));
        }
        if self.spikes_unplaced > 0 {
            text.push_str(&format!(
                " {} traced spike(s) could not be placed in time (none of their series' \
                 windows matches a spike) and are only in the spike table.",
                self.spikes_unplaced
            ));
        }
        if self.kernel_unplaced > 0 {
            text.push_str(&format!(
                " {} kernel log message(s) are not marked: their run holds several tests and \
                 its report (written before latscope recorded each test's start) cannot \
                 tell in which test they happened.",
                self.kernel_unplaced
            ));
        }
        text
    }
}

/// The share of its time an OS-noise test's spinner ran (`--runtime` /
/// `--period`), 1 for other tests and when unknown.
fn noise_duty(test: &TestResult) -> f64 {
    match &test.config.detail {
        crate::report::ConfigDetail::Noise(n) if n.period_ns > 0 && n.runtime_ns > 0 => {
            (n.runtime_ns as f64 / n.period_ns as f64).min(1.0)
        }
        _ => 1.0,
    }
}

/// The share of its time a spinning series' thread spun, and the time it
/// spun (ns): OS noise's (`--runtime` / `--period`), hwlat's (`--width` /
/// `--window`); None for series that do not spin.
fn spinning(test: &TestResult, series: &Series) -> Option<(f64, u64)> {
    if let Some(cpu) = series.noise_cpu() {
        return Some((noise_duty(test), cpu.measured_ns));
    }
    let (cpu, config) = (series.hwlat_cpu()?, test.config.hwlat()?);
    let duty = match config.window_ns {
        0 => 1.0,
        window => (config.width_ns as f64 / window as f64).min(1.0),
    };
    Some((duty, cpu.spun_ns))
}

/// The spikes and kernel messages of `group`'s tests as marks on its
/// over-time plot (series colours numbered as the plot numbers them).
fn time_marks(runs: &[Run], group: &TestGroup) -> Marks {
    let mut marks = Marks::default();
    let mut first_series = 0;
    for &(r, test) in &group.tests {
        if let Some(trace) = &test.spikes {
            let starts = spike_clock_starts(test, trace);
            for spike in &trace.spikes {
                let index = test.series.iter().position(|s| s.label == spike.series);
                // The series' own start, else the test's (its series start together).
                let start = index
                    .and_then(|i| starts[i])
                    .or_else(|| lower_median(starts.iter().flatten().copied().collect()));
                let Some(start) = start else {
                    marks.spikes_unplaced += 1;
                    continue;
                };
                let second = (spike.actual_ns as f64 - start) / 1e9;
                marks.marks.push(plots::TimeMark {
                    second,
                    kind: plots::MarkKind::Spike,
                    series: index.map(|i| first_series + i),
                    ns: Some(spike.latency_ns.min(i64::MAX as u64) as i64),
                    text: format!(
                        "{:.1} s, {}: {}",
                        second.max(0.0),
                        spike.series,
                        spike.summary
                    ),
                });
            }
        }
        let report = runs[r].report;
        let log = &report.kernel_log.messages;
        // The messages count from the run's start; the plot from the test's.
        // A report of one test without `started_s` (before version 3.1) had
        // its test start with the run, within the set-up's fraction of a
        // second; with several tests only `started_s` can tell whose a
        // message is.
        let offset = match (test.started_s, report.tests.len()) {
            (Some(s), _) => Some(s),
            (None, 1) => Some(0.0),
            (None, _) => None,
        };
        let Some(offset) = offset else {
            marks.kernel_unplaced += log.len();
            first_series += test.series.len();
            continue;
        };
        // A test's own messages: from its start to the start of the next test
        // of the run (or the end of time), so that each message is marked once.
        let next_start = report
            .tests
            .iter()
            .filter_map(|t| t.started_s)
            .filter(|&s| s > offset)
            .fold(f64::INFINITY, f64::min);
        let first_test = report.tests.first().is_some_and(|t| std::ptr::eq(t, test));
        for m in log {
            // Messages before the first test (set-up) go to the first test.
            let before = m.time_s < offset && !first_test;
            if before || m.time_s >= next_start {
                continue;
            }
            let second = m.time_s - offset;
            marks.marks.push(plots::TimeMark {
                second,
                kind: plots::MarkKind::KernelLog,
                series: None,
                ns: None,
                text: format!(
                    "kernel log, {:.1} s {} the test's start ({:.1} s into the run): {}",
                    second.abs(),
                    if second < 0.0 { "before" } else { "after" },
                    m.time_s,
                    m.text
                ),
            });
        }
        first_series += test.series.len();
    }
    marks
}

/// The caption of the over-time plot of `series`: what it draws, how windows
/// merge, the marks in it (`marks`), and what the figures are for OS noise.
fn per_second_caption(
    series: &[(usize, &TestResult, &Series)],
    marks: &Marks,
    noise: bool,
) -> String {
    let merged = series
        .iter()
        .any(|(_, _, s)| s.per_second.iter().any(|w| w.span_s > 1));
    let with_p99 = series
        .iter()
        .any(|(_, _, s)| s.per_second.iter().any(|w| plots::window_p99(w).is_some()));
    let mut caption = format!(
        "Over time, on a log latency axis so one spike does not flatten the rest: each \
         window's minimum (thin, lightest), mean (lighter) and maximum (thick, the series' \
         colour) latency per series{}. \
         Beyond {} windows per series, consecutive windows are merged for the plot \
         (minimum of the minima, maximum of the maxima, sample-weighted mean{}).",
        if with_p99 {
            ", and its p99 (dashed, darker)"
        } else {
            " (this report keeps no percentile per window, so no p99 is drawn)"
        },
        plots::MAX_TIME_POINTS,
        if with_p99 { ", highest p99" } else { "" }
    );
    caption.push_str(&marks.caption());
    if merged {
        caption.push_str(
            " Some windows already span several seconds in the report (long runs keep \
             at most two hours of one-second windows).",
        );
    }
    if noise {
        caption.push_str(
            " For OS noise each window's figures are its interruptions: the shortest, \
             the mean and the longest.",
        );
    }
    caption
}

/// The lower median: the middle value of an odd count, the lower of the two
/// middle ones of an even count; always one of `values`, unlike
/// `threshold::median`, which averages the two middle ones.
fn lower_median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len().saturating_sub(1) / 2).copied()
}

/// Per series of `test`: when its window 0 began on the monotonic clock
/// (ns), as its traced spikes tell. The report keeps spike times on the
/// monotonic clock and windows in seconds from the test's start: a spike
/// whose latency is the maximum of exactly one window of its series lies in
/// that window, so the start lies within one window's span before it. The
/// spans of all such spikes are intersected and the middle taken; when they
/// do not meet (windows of loops rather than exact seconds), the lower median of
/// the window middles.
fn spike_clock_starts(test: &TestResult, trace: &crate::report::SpikeTrace) -> Vec<Option<f64>> {
    test.series
        .iter()
        .map(|series| {
            // (earliest, latest) start each spike allows, ns.
            let spans: Vec<(f64, f64)> = trace
                .spikes
                .iter()
                .filter(|spike| spike.series == series.label)
                .filter_map(|spike| {
                    let mut matching = series
                        .per_second
                        .iter()
                        .filter(|w| w.max_ns == spike.latency_ns.min(i64::MAX as u64) as i64);
                    let w = matching.next()?;
                    if matching.next().is_some() {
                        return None;
                    }
                    let at = spike.actual_ns as f64;
                    Some((
                        at - (w.second + w.span_s) as f64 * 1e9,
                        at - w.second as f64 * 1e9,
                    ))
                })
                .collect();
            let earliest = spans.iter().map(|s| s.0).fold(f64::MIN, f64::max);
            let latest = spans.iter().map(|s| s.1).fold(f64::MAX, f64::min);
            if spans.is_empty() {
                None
            } else if earliest <= latest {
                Some(best_start(series, trace, earliest, latest))
            } else {
                lower_median(spans.iter().map(|s| (s.0 + s.1) / 2.0).collect())
            }
        })
        .collect()
}

/// The start (ns) within `[earliest, latest]` that fits the most of the
/// series' spikes: a spike fits when it falls in a window whose maximum is
/// at least its latency. The window maxima alone allow a span of up to a
/// second; the other spikes narrow it (the middle of the best-fitting
/// stretch of 64 evenly spaced candidates is taken).
fn best_start(
    series: &Series,
    trace: &crate::report::SpikeTrace,
    earliest: f64,
    latest: f64,
) -> f64 {
    const CANDIDATES: usize = 64;
    let windows = &series.per_second;
    let fits = |start: f64| {
        trace
            .spikes
            .iter()
            .filter(|spike| spike.series == series.label)
            .filter(|spike| {
                let t = (spike.actual_ns as f64 - start) / 1e9;
                let k = windows.partition_point(|w| ((w.second + w.span_s) as f64) <= t);
                windows.get(k).is_some_and(|w| {
                    w.second as f64 <= t && w.max_ns >= spike.latency_ns.min(i64::MAX as u64) as i64
                })
            })
            .count()
    };
    let candidate =
        |k: usize| earliest + (latest - earliest) * (k as f64 + 0.5) / CANDIDATES as f64;
    let scores: Vec<usize> = (0..CANDIDATES).map(|k| fits(candidate(k))).collect();
    let best = scores.iter().copied().max().unwrap_or(0);
    let first = scores.iter().position(|&s| s == best).unwrap_or(0);
    let last = first + scores[first..].iter().take_while(|&&s| s == best).count() - 1;
    (candidate(first) + candidate(last)) / 2.0
}

fn run_name(index: usize) -> String {
    format!("run {}", index + 1)
}

impl Page {
    fn header(&mut self, runs: &[Run]) {
        let title = match runs {
            [one] => format!("latscope report: {}", one.source),
            _ => format!("latscope report: {} runs", runs.len()),
        };
        self.html.push_str(&page_start(&title));
        let _ = writeln!(
            self.html,
            "<p class=\"note\">Made by latscope {} from {}. Latencies in automatic units \
             (ns, us, ms). <a href=\"#words\">The words on this page</a> are explained \
             at its end.</p>",
            env!("CARGO_PKG_VERSION"),
            runs.iter()
                .enumerate()
                .map(|(i, r)| format!("{} <code>{}</code>", run_name(i), escape(&r.source)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    /// Right under the title, before the facts of the machine and the
    /// runs: each test's overall figures (all its series merged), so that
    /// the page's first numbers are its latencies.
    fn at_a_glance(&mut self, runs: &[Run]) {
        let several = runs.len() > 1;
        let out = &mut self.html;
        out.push_str(
            "<section class=\"glance\" id=\"glance\">\n<h2>At a glance</h2>\n\
             <table class=\"summary\">\n<tr><th class=\"l\">Test</th>",
        );
        if several {
            out.push_str("<th class=\"l\">Run</th>");
        }
        out.push_str(
            "<th>Samples</th><th>Min</th><th>P50</th><th>P99</th><th>P99.9</th><th>Max</th>\
             <th class=\"l\">Ended</th></tr>\n",
        );
        for (i, run) in runs.iter().enumerate() {
            for (k, t) in run.report.tests.iter().enumerate() {
                let o = &t.overall;
                let _ = write!(
                    out,
                    "<tr><td class=\"l\">{}</td>",
                    escape(&run.report.test_key_of(k))
                );
                if several {
                    let _ = write!(out, "<td class=\"l\">{}</td>", escape(&run_name(i)));
                }
                let _ = writeln!(
                    out,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                     <td class=\"l\">{}</td></tr>",
                    o.samples,
                    escape(&latency_cell(o, o.min_ns)),
                    escape(&percentile_cell(o, 50.0)),
                    escape(&percentile_cell(o, 99.0)),
                    escape(&percentile_cell(o, 99.9)),
                    escape(&latency_cell(o, o.max_ns)),
                    escape(end_reason_text(t))
                );
            }
        }
        out.push_str("</table>\n</section>\n");
    }

    /// The machine's facts once, when every run has the same ones (same
    /// host, kernel, CPUs, settings, doctor findings); each run's section
    /// then shows only its own facts and the machine facts that differ.
    fn machine_section(&mut self, runs: &[Run]) -> Vec<bool> {
        let facts: Vec<Vec<(&str, String)>> =
            runs.iter().map(|r| machine_facts(r.report)).collect();
        let shared: Vec<bool> = match facts.as_slice() {
            [] | [_] => Vec::new(),
            [first, rest @ ..] => first
                .iter()
                .enumerate()
                .map(|(k, f)| rest.iter().all(|other| other.get(k) == Some(f)))
                .collect(),
        };
        if shared.iter().any(|&s| s) {
            let _ = writeln!(
                self.html,
                "<section class=\"machine\" id=\"machine\">\n<h2>Machine (the same in all {} runs)</h2>\n<table class=\"facts\">",
                runs.len()
            );
            for ((name, value), _) in facts[0].iter().zip(&shared).filter(|(_, s)| **s) {
                fact(&mut self.html, name, value);
            }
            self.html.push_str("</table>\n</section>\n");
        }
        shared
    }

    /// A run's section; `shared[k]` tells the machine facts already shown
    /// once for all runs.
    fn run_section(&mut self, index: usize, run: &Run, shared: &[bool]) {
        let r = run.report;
        let out = &mut self.html;
        let _ = writeln!(
            out,
            "<section class=\"run\" id=\"run-{}\">\n<h2>{}: <code>{}</code></h2>\n<table class=\"facts\">",
            index + 1,
            escape(&run_name(index)),
            escape(&run.source)
        );
        fact(
            out,
            "Command line",
            &format!("<code>{}</code>", escape(&shell_line(&r.command_line))),
        );
        fact(
            out,
            "Start / end",
            &escape(&format!(
                "{} / {} ({:.1} s)",
                r.start_time, r.end_time, r.duration_s
            )),
        );
        fact(
            out,
            "Tool / exit code",
            &escape(&format!(
                "{} {} / {}",
                r.tool.name, r.tool.version, r.exit_code
            )),
        );
        let loads: Vec<String> = r.loads.iter().map(|l| l.describe()).collect();
        let loads = if loads.is_empty() {
            "none".to_string()
        } else {
            loads.join("; ")
        };
        fact(out, "Load (--load)", &escape(&loads));
        let log = &r.kernel_log;
        let kernel_log = match (&log.note, log.followed) {
            (Some(note), _) => note.clone(),
            (None, true) => format!(
                "followed: {} message(s) while measuring",
                log.messages.len() as u64 + log.messages_not_kept
            ),
            (None, false) => "not followed".to_string(),
        };
        fact(out, "Kernel log", &escape(&kernel_log));
        for (k, (name, value)) in machine_facts(r).iter().enumerate() {
            if !shared.get(k).copied().unwrap_or(false) {
                fact(out, name, value);
            }
        }
        out.push_str("</table>\n");
        if r.warnings.is_empty() {
            out.push_str("<p class=\"ok\">No validity warnings.</p>\n");
        } else {
            out.push_str("<h3>Validity warnings</h3>\n<ul class=\"warnings\">\n");
            for w in &r.warnings {
                let _ = writeln!(out, "<li class=\"warn\">{}</li>", escape(w));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</section>\n");
    }

    /// One line per run of the group's test: what it measured, how it was
    /// set up and how it ended, and its error if any.
    fn test_facts(&mut self, run_count: usize, group: &TestGroup) {
        for &(r, test) in &group.tests {
            let who = if run_count > 1 {
                format!("{}: ", run_name(r))
            } else {
                String::new()
            };
            let _ = writeln!(
                self.html,
                "<p>{}{}, {}; ended: {}.</p>",
                escape(&who),
                escape(&test.description),
                escape(&config_text(test)),
                escape(end_reason_text(test))
            );
            if let Some(e) = &test.error {
                let _ = writeln!(
                    self.html,
                    "<p class=\"err\">{}error: {}</p>",
                    escape(&who),
                    escape(e)
                );
            }
        }
    }

    /// A share plot (`text`, the file name's `suffix`, `caption`): each
    /// window's share of the time spun that the CPU lost, for the series
    /// that spin (OS noise's interruptions, hwlat's hardware gaps).
    fn share_figure(
        &mut self,
        (title, stem): (&str, &str),
        (series, plotted): (&[(usize, &TestResult, &Series)], &[PlotSeries]),
        (text, suffix, caption): (&plots::ShareText, &str, &str),
    ) -> Result<(), String> {
        let shares: Vec<plots::ShareSeries> = series
            .iter()
            .zip(plotted)
            .filter_map(|(&(_, t, s), p)| {
                let (duty, spun_ns) = spinning(t, s)?;
                Some(plots::ShareSeries {
                    label: p.label.clone(),
                    per_second: &s.per_second,
                    duty,
                    // The time spun is the run less the duty cycle's off time.
                    end_s: spun_ns as f64 / 1e9 / duty,
                })
            })
            .collect();
        let share = plots::share_svg(title, text, &shares)?;
        self.figure(share, format!("{stem}-{suffix}"), caption);
        Ok(())
    }

    /// The `section`-th test section (numbers the plot files).
    fn test_section(
        &mut self,
        section: usize,
        runs: &[Run],
        group: &TestGroup,
    ) -> Result<(), String> {
        let run_count = runs.len();
        let _ = writeln!(
            self.html,
            "<section class=\"test\">\n<h2>{}</h2>",
            escape(&group.heading)
        );
        self.test_facts(run_count, group);
        let series: Vec<(usize, &TestResult, &Series)> = group
            .tests
            .iter()
            .flat_map(|&(r, t)| t.series.iter().map(move |s| (r, t, s)))
            .collect();
        self.summary_table(run_count, group, &series);
        for &(r, test) in &group.tests {
            let who = if run_count > 1 {
                format!("{}: ", run_name(r))
            } else {
                String::new()
            };
            self.html.push_str(&breakdown::section(&who, test));
        }

        let plotted: Vec<PlotSeries> = series
            .iter()
            .map(|&(r, _, s)| PlotSeries {
                label: if run_count > 1 {
                    format!("{} {}", run_name(r), s.label)
                } else {
                    s.label.clone()
                },
                latency: &s.latency,
                per_second: &s.per_second,
            })
            .collect();
        let title = &group.heading;
        let stem = format!("{section}-{}", file_safe(title));
        // OS noise: the samples are interruptions of a spinning thread, not
        // wake-ups; the captions say so.
        let noise = series.iter().any(|(_, _, s)| s.noise_cpu().is_some());
        // hwlat: the samples are the hardware gaps of a spinning thread.
        let hwlat = series.iter().any(|(_, _, s)| s.hwlat_cpu().is_some());
        let percentiles = plots::percentile_svg(title, &plotted, &group.limits)?;
        self.figure(
            percentiles,
            format!("{stem}-percentiles"),
            if noise || hwlat {
                "Interruption length by percentile: how long the longest 50 %, 10 %, 1 %, \
                 0.1 % ... of the interruptions lasted, one line per CPU, on a log axis. Each \
                 step to the right adds a nine (99, 99.9, 99.99 ...), so the tail gets as much \
                 room as the body; the last point is the longest. Horizontal lines: the limits \
                 (--max-latency, --fail-if)."
            } else {
                "Latency by percentile: how long the slowest 50 %, 10 %, 1 %, 0.1 % ... of \
                 the wake-ups took, one line per series, on a log latency axis. Each step to \
                 the right adds a nine (99, 99.9, 99.99 ...), so the tail gets as much room as \
                 the body; the last point is the maximum. Horizontal lines: the limits \
                 (--max-latency, --fail-if)."
            },
        );
        let histogram = plots::histogram_svg(title, &plotted)?;
        self.figure(
            histogram,
            format!("{stem}-histogram"),
            &format!(
                "{}{rest_text}",
                if noise || hwlat {
                    "Interruption histogram: interruptions per bin (log scale) over their \
                     length (log scale), one line per CPU, so the body and the tail show at once."
                } else {
                    "Latency histogram: samples per bin (log scale) over the latency (log \
                     scale), one line per series, so the body and the tail show at once."
                },
                rest_text = " Each bin is a \
             fixed ratio wider than the last. When at most 20 samples lie far (over 4 \
             times) beyond the rest, the axis is broken: they are marked one by one in the \
             strip at the right. The marks under the axis are each series' p50, p99 and \
             maximum. Empty bins are drawn on the floor below 1."
            ),
        );
        self.over_time_figures((title, &stem), runs, group, (&series, &plotted))?;
        for &(r, test) in &group.tests {
            if let Some(spikes) = &test.spikes {
                let who = if run_count > 1 {
                    format!("{}: ", run_name(r))
                } else {
                    String::new()
                };
                self.spikes_section(&who, spikes);
            }
        }
        self.html.push_str("</section>\n");
        Ok(())
    }

    /// The plots over time of `group`'s `series` (as `plotted`): hwlat's
    /// gaps and hardware time, or the latency per second (and OS noise's
    /// share), with the spikes and kernel messages marked.
    fn over_time_figures(
        &mut self,
        (title, stem): (&str, &str),
        runs: &[Run],
        group: &TestGroup,
        (series, plotted): (&[(usize, &TestResult, &Series)], &[PlotSeries]),
    ) -> Result<(), String> {
        let noise = series.iter().any(|(_, _, s)| s.noise_cpu().is_some());
        let hwlat = series.iter().any(|(_, _, s)| s.hwlat_cpu().is_some());
        let marks = time_marks(runs, group);
        if hwlat {
            // Both classes of gaps over time, and the hardware time.
            self.hwlat_figures((title, stem), (series, plotted), &marks)?;
        } else {
            let per_second = plots::per_second_svg(title, plotted, &marks.marks)?;
            let caption = per_second_caption(series, &marks, noise);
            self.figure(per_second, format!("{stem}-per-second"), &caption);
        }
        if noise {
            self.share_figure(
                (title, stem),
                (series, plotted),
                (
                    &plots::NOISE_SHARE,
                    "noise-share",
                    "Noise over time: the share of each window's spinning time the CPU lost to \
                     interruptions (the sum of the window's interruptions over the time spun in \
                     it), one line per CPU, on a linear axis. Zero where no interruption above \
                     the threshold happened. The table's Noise column is the same share over the \
                     whole run.",
                ),
            )?;
        }
        Ok(())
    }

    /// `--trace-spikes`: a table of the kept spikes with their causes, then
    /// the worst spike's trace events.
    fn spikes_section(&mut self, who: &str, spikes: &crate::report::SpikeTrace) {
        let _ = writeln!(
            self.html,
            "<h3>{}Spikes: {}</h3>\n<p>From {}; the worst {} kept.</p>",
            escape(who),
            escape(&spikes.count_line()),
            escape(&spikes.source),
            spikes.max_kept
        );
        if spikes.spikes.is_empty() {
            return;
        }
        self.html.push_str(
            "<table>\n<tr><th>Latency</th><th>Series</th><th>CPU</th><th>Woken after</th>\
             <th>Causes (time in the window)</th><th>Idle</th><th>Unexplained</th><th>Notes</th></tr>\n",
        );
        let ns = |v: u64| crate::units::format_ns(v as i64);
        for spike in &spikes.spikes {
            let causes: Vec<String> = spike.causes.iter().map(|c| c.describe()).collect();
            let mut notes = Vec::new();
            if let Some(p) = &spike.preempted_by {
                notes.push(format!("preempted by {p}"));
            }
            if spike.rt_throttling {
                notes.push("real-time throttling".to_string());
            }
            if spike.window_truncated {
                notes.push("trace did not reach back".to_string());
            }
            if spike.events_lost {
                notes.push("trace events lost".to_string());
            }
            let _ = writeln!(
                self.html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ns(spike.latency_ns),
                escape(&spike.series),
                spike.cpu,
                spike.woken_after_ns.map_or_else(|| "-".to_string(), ns),
                escape(&causes.join(", ")),
                ns(spike.idle_ns),
                ns(spike.unexplained_ns),
                escape(&notes.join("; "))
            );
        }
        self.html.push_str("</table>\n");
        let worst = &spikes.spikes[0];
        let _ = writeln!(
            self.html,
            "<p>The worst spike's trace ({}), times from when the wake-up was due:</p>\n<table>\n<tr><th>Time</th><th>Event</th><th>Fields</th></tr>",
            escape(&worst.summary)
        );
        for event in &worst.events {
            let _ = writeln!(
                self.html,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                crate::units::format_ns(event.at_ns),
                escape(&event.event),
                escape(&event.text)
            );
        }
        self.html.push_str("</table>\n");
    }

    /// A plot and its caption, or a note when there is nothing to draw.
    fn figure(&mut self, svg: Option<String>, name: String, caption: &str) {
        match svg {
            Some(svg) => {
                self.html.push_str(&figure_html(&svg, caption));
                self.plots.push(Plot { name, svg });
            }
            None => {
                let _ = writeln!(
                    self.html,
                    "<p class=\"note\">No samples to plot ({}).</p>",
                    if name.ends_with("histogram") {
                        "histogram"
                    } else if name.ends_with("percentiles") {
                        "by percentile"
                    } else {
                        "over time"
                    }
                );
            }
        }
    }

    fn summary_table(
        &mut self,
        run_count: usize,
        group: &TestGroup,
        series: &[(usize, &TestResult, &Series)],
    ) {
        let columns = Columns::of(group, series);
        let text_columns = columns.text_columns();
        let out = &mut self.html;
        out.push_str("<table class=\"summary\">\n<tr>");
        for (i, h) in columns.head().iter().enumerate() {
            let class = if i < text_columns { " class=\"l\"" } else { "" };
            let _ = write!(out, "<th{class}>{}</th>", escape(h));
        }
        out.push_str("</tr>\n");
        let row = |out: &mut String,
                   swatch: &str,
                   label: &str,
                   s: Option<&Series>,
                   l: &LatencySummary| {
            let cells = columns.cells(swatch, label, s, l);
            let class = if s.is_none() { " class=\"all\"" } else { "" };
            let _ = write!(out, "<tr{class}>");
            for (i, c) in cells.iter().enumerate() {
                let class = if i < text_columns { " class=\"l\"" } else { "" };
                let _ = write!(out, "<td{class}>{c}</td>");
            }
            out.push_str("</tr>\n");
        };
        let mut index = 0;
        for &(r, test) in &group.tests {
            let prefix = if run_count > 1 {
                format!("{} ", run_name(r))
            } else {
                String::new()
            };
            for s in &test.series {
                let swatch = format!(
                    "<span class=\"swatch\" style=\"background:{}\"></span>",
                    plots::css_color(index)
                );
                index += 1;
                row(
                    out,
                    &swatch,
                    &format!("{prefix}{}", s.label),
                    Some(s),
                    &s.latency,
                );
            }
            if test.series.len() > 1 {
                row(out, "", &format!("{prefix}all"), None, &test.overall);
            }
        }
        out.push_str("</table>\n");
    }
}

/// The columns of a summary table: the figures every series has, and those
/// of the kinds of series in it. A column that says nothing is left out.
struct Columns {
    cpus: bool,
    overruns: bool,
    ipc: bool,
    timer: bool,
    disk: bool,
    noise: bool,
    limit: bool,
}

impl Columns {
    fn of(group: &TestGroup, series: &[(usize, &TestResult, &Series)]) -> Columns {
        let any = |f: &dyn Fn(&Series) -> bool| series.iter().any(|(_, _, s)| f(s));
        let ipc = any(&|s| s.ipc_pair().is_some());
        let timer = any(&|s| s.timer_thread().is_some());
        let disk = any(&|s| s.disk_writer().is_some());
        let noise = any(&|s| s.noise_cpu().is_some());
        let limit = group
            .tests
            .iter()
            .any(|(_, t)| t.config.max_latency_us.is_some());
        // A column that says nothing is left out: CPUs when no series was
        // pinned nor placed (log-disk writers: every cell a bare `~`), and
        // overruns where nothing is periodic and none happened.
        let cpus = any(&|s| s.pinned || !s.cpus.is_empty());
        let overruns = ipc || timer || any(&|s| s.overruns > 0);
        Columns {
            cpus,
            overruns,
            ipc,
            timer,
            disk,
            noise,
            limit,
        }
    }

    /// The left-aligned columns, first: the swatch, the names and the policy.
    fn text_columns(&self) -> usize {
        if self.cpus { 4 } else { 3 }
    }

    fn head(&self) -> Vec<&'static str> {
        let mut head = vec!["", "Series"];
        if self.cpus {
            head.push("CPU");
        }
        head.extend(["Policy", "Samples"]);
        head.extend(["Min", "Avg", "P50", "P99", "P99.9", "P99.99", "Max"]);
        if self.overruns {
            head.push("Overruns");
        }
        if self.ipc {
            head.push("Timeouts");
        }
        if self.timer {
            head.push("Msw");
        }
        if self.disk {
            head.extend(["IOPS", "MB/s"]);
        }
        if self.noise {
            head.extend(["Noise", "Loops/s", "Causes (traced)"]);
        }
        if self.limit {
            head.push("Above limit");
        }
        head
    }

    /// One row's cells: a series (`s`), or a test's series merged (None).
    fn cells(
        &self,
        swatch: &str,
        label: &str,
        s: Option<&Series>,
        l: &LatencySummary,
    ) -> Vec<String> {
        let mut cells: Vec<String> = vec![swatch.to_string(), escape(label)];
        if self.cpus {
            cells.push(s.map_or(String::new(), |s| escape(&cpus_cell(s))));
        }
        cells.push(s.map_or(String::new(), |s| {
            escape(&format!("{} {}", s.policy, s.priority))
        }));
        cells.extend(latency_cells(l).iter().map(|c| escape(c)));
        if self.overruns {
            cells.push(s.map_or(String::new(), |s| s.overruns.to_string()));
        }
        if self.ipc {
            cells.push(
                s.and_then(Series::ipc_pair)
                    .map_or(String::new(), |p| p.timeouts.to_string()),
            );
        }
        if self.timer {
            cells.push(
                s.and_then(Series::timer_thread)
                    .map_or(String::new(), |t| t.msw.to_string()),
            );
        }
        if self.disk {
            let w = s.and_then(Series::disk_writer);
            cells.push(w.map_or(String::new(), |w| format!("{:.0}", w.iops)));
            cells.push(w.map_or(String::new(), |w| format!("{:.1}", w.bytes_per_s / 1e6)));
        }
        if self.noise {
            let n = s.and_then(Series::noise_cpu);
            cells.push(n.map_or(String::new(), |n| format!("{:.4} %", n.noise_percent)));
            cells.push(n.map_or(String::new(), |n| format!("{:.0}", n.loops_per_s)));
            cells.push(n.map_or(String::new(), |n| {
                escape(
                    &n.causes
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |c| c.shares_line(3)),
                )
            }));
        }
        if self.limit {
            cells.push(s.map_or(String::new(), |s| s.above_limit.to_string()));
        }
        cells
    }
}

fn latency_cells(l: &LatencySummary) -> Vec<String> {
    vec![
        l.samples.to_string(),
        latency_cell(l, l.min_ns),
        latency_cell(l, l.avg_ns.round() as i64),
        percentile_cell(l, 50.0),
        percentile_cell(l, 99.0),
        percentile_cell(l, 99.9),
        percentile_cell(l, 99.99),
        latency_cell(l, l.max_ns),
    ]
}

/// The resolved configuration of a test in one line.
fn config_text(test: &TestResult) -> String {
    let c = &test.config;
    let mut parts = vec![format!("{} {}", c.policy, c.priority)];
    if let Some(loops) = c.loops {
        parts.push(format!("{loops} loops"));
    }
    if let Some(d) = c.duration_s {
        parts.push(format!("{d} s"));
    }
    if let Some(ipc) = c.ipc() {
        parts.push(format!(
            "{} pair(s) of {}, interval {}",
            ipc.pairs,
            ipc.tasks,
            format_ns(ipc.interval_us.saturating_mul(1000) as i64)
        ));
        if ipc.cross_cpu {
            parts.push("cross-CPU".into());
        }
    }
    if let Some(t) = c.timer() {
        parts.push(format!(
            "period {}, CPUs {:?}, {} wake-ups, figure {}",
            format_ns(t.period_us.saturating_mul(1000) as i64),
            t.cpus,
            t.wake,
            t.figure
        ));
    }
    if let Some(d) = c.logdisk() {
        parts.push(format!(
            "{} writer(s) in {}, sync {}{}",
            d.writers,
            d.dir,
            d.sync,
            if d.direct { ", O_DIRECT" } else { "" }
        ));
    }
    if let Some(limit) = c.max_latency_us {
        parts.push(format!("limit {limit} us"));
    }
    parts.push(if c.mlockall {
        "mlockall".into()
    } else {
        "no mlockall".into()
    });
    parts.push(format!("cpu_dma_latency {}", c.cpu_dma_latency));
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;
    use crate::stats::LatencyRecorder;
    use crate::stats::window::SecondStats;

    fn render_one(report: &Report) -> Rendered {
        render(&[Run {
            source: "a.json".into(),
            report,
        }])
        .unwrap()
    }

    #[test]
    fn run_facts_name_the_load_and_the_kernel_log() {
        let report = crate::report::testdata::with_load_and_kernel_message(sample_report());
        let html = render_one(&report).html;
        assert!(html.contains(
            "/usr/bin/stress-ng --cpu 1 --timeout 0 (stress-ng, version 0.15.06) on CPU 0,1 at normal priority"
        ));
        assert!(html.contains("followed: 1 message(s) while measuring"));
        let plain = render_one(&sample_report()).html;
        assert!(plain.contains("Load (--load)</th><td>none"), "{plain}");
    }

    #[test]
    fn the_first_latency_numbers_come_before_the_machine_facts() {
        let report = sample_report();
        let html = render_one(&report).html;
        let glance = html.find("<h2>At a glance</h2>").expect("the glance");
        let facts = html.find("Command line").expect("the run's facts");
        assert!(glance < facts, "{html}");
        let o = &report.tests[0].overall;
        let p99 = format!("<td>{}</td>", escape(&percentile_cell(o, 99.0)));
        let first = html.find(&p99).expect("the p99 in the glance");
        assert!(first < facts, "{html}");
    }

    #[test]
    fn page_is_self_contained_and_escaped() {
        let mut report = sample_report();
        report.warnings.push("<script>alert(1)</script>".into());
        report.tests[0].series[0].label = "pair \"0\" <b>".into();
        let r = render_one(&report);
        let html = &r.html;
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.ends_with("</html>\n"));
        assert!(!html.contains("<script"), "no script at all");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        for external in ["http://", "https://", "src=", "<link", "@import", "url("] {
            let outside_svg_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
            assert!(!outside_svg_ns.contains(external), "{external} in the page");
        }
        assert_eq!(r.plots.len(), 3);
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(
            html.contains("latscope mq -l 3 --json &#39;&quot;x&quot;.json&#39;"),
            "{html}"
        );
        assert!(html.contains("kernel is not PREEMPT_RT"));
        assert!(
            !html.contains("latscope doctor"),
            "no checks in this report"
        );
        for column in ["P99.99", "Timeouts", "Overruns", "3.33 us"] {
            assert!(html.contains(column), "{column}");
        }
        assert_eq!(r.plots[0].name, "1-mq-one-way-percentiles");
        assert_eq!(r.plots[1].name, "1-mq-one-way-histogram");
        assert_eq!(r.plots[2].name, "1-mq-one-way-per-second");
    }

    #[test]
    fn runs_side_by_side_share_the_plots_of_a_test() {
        let a = sample_report();
        let mut b = sample_report();
        b.tests[0].series[0].latency.max_ns = 9_000;
        let r = render(&[
            Run {
                source: "a.json".into(),
                report: &a,
            },
            Run {
                source: "b.json".into(),
                report: &b,
            },
        ])
        .unwrap();
        assert_eq!(
            r.plots.len(),
            3,
            "one percentile plot, one histogram and one time plot for mq"
        );
        assert!(r.html.contains("run 1 pair 0") && r.html.contains("run 2 pair 0"));
        assert!(r.plots[0].svg.contains("run 2 pair 0"));
        assert!(r.html.contains(&plots::css_color(1)), "second run's colour");
    }

    #[test]
    fn a_shared_machine_is_shown_once_and_differences_per_run() {
        let a = sample_report();
        let mut b = sample_report();
        let two = |a: &Report, b: &Report| {
            render(&[
                Run {
                    source: "a.json".into(),
                    report: a,
                },
                Run {
                    source: "b.json".into(),
                    report: b,
                },
            ])
            .unwrap()
            .html
        };
        let html = two(&a, &b);
        assert!(
            html.contains("<h2>Machine (the same in all 2 runs)</h2>"),
            "{html}"
        );
        assert_eq!(html.matches("<th>Host / kernel</th>").count(), 1);
        assert_eq!(html.matches("<th>Clocksource</th>").count(), 1);
        assert_eq!(
            html.matches("<th>Command line</th>").count(),
            2,
            "each run's own"
        );
        // Another clocksource: that row per run, the rest still once.
        b.sysinfo.clocksource = "hpet".into();
        let html = two(&a, &b);
        assert_eq!(html.matches("<th>Host / kernel</th>").count(), 1);
        assert_eq!(html.matches("<th>Clocksource</th>").count(), 2);
        assert!(html.contains("<td>hpet</td>"));
        // One run: no machine section, every fact in the run's.
        let one = render_one(&a).html;
        assert!(!one.contains("Machine (the same"));
        assert_eq!(one.matches("<th>Host / kernel</th>").count(), 1);
        assert!(one.contains("<h2>The words on this page</h2>") && one.contains("href=\"#words\""));
    }

    #[test]
    fn columns_that_say_nothing_are_left_out() {
        let mut report = sample_report();
        let html = render_one(&report).html;
        assert!(html.contains("<th class=\"l\">CPU</th>") && html.contains("<th>Overruns</th>"));
        // Unpinned tasks without a CPU: no CPU column; an IPC test keeps
        // its overruns (periodic), even at 0.
        report.tests[0].series[0].pinned = false;
        report.tests[0].series[0].cpus.clear();
        let html = render_one(&report).html;
        assert!(!html.contains(">CPU</th>"), "{html}");
        assert!(html.contains("<th>Overruns</th>"));
        assert!(html.contains("<th class=\"l\">Policy</th><th>Samples</th>"));
    }

    #[test]
    fn the_percentile_plot_draws_the_limits_of_the_test() {
        use crate::report::ThresholdCheck;
        let mut report = sample_report();
        report.tests[0].config.max_latency_us = Some(200);
        let check = |expr: &str| ThresholdCheck {
            expr: expr.to_string(),
            test: report.tests[0].test.clone(),
            series: "pair 0".into(),
            value_ns: 3_000.0,
            base_ns: None,
            crossed: false,
        };
        report.thresholds = vec![check("p99>50us"), check("p99>+10%"), check("max>1ms")];
        let r = render_one(&report);
        let svg = &r.plots[0].svg;
        assert_eq!(r.plots[0].name, "1-mq-one-way-percentiles");
        for text in [
            "--max-latency (200 us)",
            "--fail-if p99&gt;50us (50 us)",
            "--fail-if max&gt;1ms (1 ms)",
        ] {
            assert!(svg.contains(text), "{text} in {svg}");
        }
        assert!(!svg.contains("+10%"), "a relative limit is no latency");
    }

    /// 24 hours of one-second windows for 16 series: the page stays small.
    pub fn day_long_report() -> Report {
        let mut report = sample_report();
        let mut recorder = LatencyRecorder::new();
        let mut x: u64 = 12345;
        for _ in 0..200_000 {
            // A cheap spread from 1 us to a few ms.
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            recorder.record(1_000 + ((x >> 33) % 5_000) as i64 * ((x >> 60) as i64 + 1));
        }
        let summary = recorder.summary();
        let template = report.tests[0].series[0].clone();
        report.tests[0].series = (0..16)
            .map(|i| {
                let mut s = template.clone();
                s.label = format!("pair {i}");
                s.latency = summary.clone();
                s.per_second = (0..86_400u64)
                    .map(|second| SecondStats {
                        second,
                        span_s: 1,
                        samples: 10_000,
                        min_ns: 1_000 + (second % 7) as i64,
                        avg_ns: 2_000.0 + (second % 100) as f64,
                        max_ns: 5_000 + ((second * 7919 + i) % 3_000) as i64,
                        ..SecondStats::default()
                    })
                    .collect();
                s
            })
            .collect();
        report
    }

    #[test]
    fn spikes_get_a_table_and_the_worst_ones_events() {
        use crate::report::{Cause, Spike, SpikeEvent, SpikeTrace};
        let mut report = day_long_report();
        report.tests[0].spikes = Some(SpikeTrace {
            threshold_ns: 50_000,
            source: "trace events sched:sched_switch".into(),
            max_kept: 100,
            spikes_seen: 2,
            spikes: vec![Spike {
                series: "CPU 1".into(),
                cpu: 1,
                latency_ns: 85_000,
                causes: vec![Cause {
                    kind: "softirq".into(),
                    name: "NET_RX".into(),
                    ns: 52_000,
                    count: 1,
                }],
                summary: "worst 85.0 us on CPU 1: softirq NET_RX 52.0 us".into(),
                events: vec![SpikeEvent {
                    at_ns: -1_500,
                    event: "softirq_entry".into(),
                    text: "vec=3 [NET_RX] <x>".into(),
                }],
                ..Spike::default()
            }],
            ..SpikeTrace::default()
        });
        let page = render_one(&report).html;
        assert!(
            page.contains("Spikes: 2 samples above 50.0 us traced"),
            "{page}"
        );
        assert!(page.contains("<td>softirq NET_RX 52.0 us</td>"));
        assert!(
            page.contains(
                "<td>-1.50 us</td><td>softirq_entry</td><td>vec=3 [NET_RX] &lt;x&gt;</td>"
            )
        );
    }

    #[test]
    fn spikes_and_kernel_messages_are_marked_over_time() {
        use crate::report::{Spike, SpikeTrace};
        let mut report = crate::report::testdata::with_load_and_kernel_message(sample_report());
        let series = &mut report.tests[0].series[0];
        series.per_second = (0..20u64)
            .map(|second| SecondStats {
                second,
                span_s: 1,
                samples: 1000,
                min_ns: 2_000,
                avg_ns: 3_000.0,
                max_ns: match second {
                    7 => 85_000,
                    12 => 60_000,
                    _ => 5_000,
                },
                ..SecondStats::default()
            })
            .collect();
        // The test's window 0 began at 1000 s on the monotonic clock.
        let spike = |latency_ns: u64, at_s: f64, summary: &str| Spike {
            series: "pair 0".into(),
            latency_ns,
            actual_ns: (1_000e9 + at_s * 1e9) as u64,
            summary: summary.into(),
            ..Spike::default()
        };
        report.tests[0].spikes = Some(SpikeTrace {
            threshold_ns: 50_000,
            spikes_seen: 3,
            spikes: vec![
                spike(85_000, 7.5, "worst 85.0 us: softirq NET_RX 52.0 us"),
                spike(60_000, 12.5, "60.0 us: IRQ 24 virtio0-input 40.0 us"),
                // Not any window's maximum: placed by the others' clock.
                spike(55_000, 12.25, "55.0 us: task kworker/1:1 (pid 42) 30.0 us"),
            ],
            ..SpikeTrace::default()
        });
        let runs = [Run {
            source: "a.json".into(),
            report: &report,
        }];
        let groups = test_groups(&runs);
        let marks = time_marks(&runs, &groups[0]);
        assert_eq!(marks.spikes_unplaced, 0);
        let seconds: Vec<f64> = marks.marks.iter().map(|m| m.second).collect();
        // Each spike inside its window (the window maxima tie the clocks to
        // within a second, the third spike narrows it to 0.75 s, whose
        // middle is taken: 0.125 s late); the kernel message at its time.
        for (got, want) in seconds.iter().zip([7.5, 12.5, 12.25, 2.5]) {
            assert!((got - want).abs() <= 0.125 + 1e-6, "{seconds:?}");
        }
        assert_eq!(seconds[3], 2.5);
        assert_eq!(marks.marks[0].series, Some(0));
        assert_eq!(marks.marks[3].kind, plots::MarkKind::KernelLog);
        let html = render_one(&report).html;
        assert!(
            html.contains("s, pair 0: worst 85.0 us: softirq NET_RX 52.0 us</title>"),
            "{html}"
        );
        assert!(html.contains(
            "<title>kernel log, 2.5 s after the test's start (2.5 s into the run): sched: RT \
             throttling activated</title>"
        ));
        assert!(html.contains("the 3 spike(s) --trace-spikes kept"));
        assert!(html.contains("the 1 kernel log message(s)"));

        // Without a window to tie the clocks, a spike is not drawn but said.
        report.tests[0].series[0].per_second[7].max_ns = 5_000;
        report.tests[0].series[0].per_second[12].max_ns = 5_000;
        let runs = [Run {
            source: "a.json".into(),
            report: &report,
        }];
        let marks = time_marks(&runs, &test_groups(&runs)[0]);
        assert_eq!(marks.spikes_unplaced, 3);
        assert!(
            marks
                .caption()
                .contains("3 traced spike(s) could not be placed")
        );
        // A run of several tests written before `started_s`: kernel messages
        // are counted, not drawn.
        let mut two = report.clone();
        two.tests.push(two.tests[0].clone());
        two.tests[1].test = "sem".into();
        let runs = [Run {
            source: "a.json".into(),
            report: &two,
        }];
        let marks = time_marks(&runs, &test_groups(&runs)[0]);
        assert_eq!(marks.kernel_unplaced, 1);
        assert!(marks.marks.iter().all(|m| m.kind == plots::MarkKind::Spike));
    }

    #[test]
    fn noise_tests_get_their_share_plot_and_columns() {
        let r = render_one(&crate::report::testdata::noise_report());
        assert_eq!(r.plots.len(), 4);
        assert!(
            r.html
                .contains("<th>Noise</th><th>Loops/s</th><th>Causes (traced)</th>")
        );
        assert!(
            r.html
                .contains("<td>0.0015 %</td><td>40000000</td><td>-</td>"),
            "{}",
            r.html
        );
        assert!(r.html.contains("Noise over time: the share of each window"));
        assert!(r.html.contains("Interruption length by percentile"));
        // Other tests keep their words and plots.
        let plain = render_one(&sample_report());
        assert_eq!(plain.plots.len(), 3);
        assert!(!plain.html.contains("Noise over time"));
        assert!(plain.html.contains("Latency by percentile"));
    }

    #[test]
    fn kernel_messages_go_to_the_test_they_happened_in() {
        let mut report = sample_report();
        report.tests.push(report.tests[0].clone());
        report.tests[1].test = "sem".into();
        report.tests[0].started_s = Some(0.5);
        report.tests[1].started_s = Some(10.0);
        let message = |time_s: f64, text: &str| crate::report::KernelMessage {
            time_s,
            level: 4,
            kind: crate::report::MessageKind::RtThrottling,
            text: text.into(),
        };
        report.kernel_log.messages = vec![
            message(0.2, "during set-up"),
            message(2.5, "in the first"),
            message(12.0, "in the second"),
        ];
        let runs = [Run {
            source: "a.json".into(),
            report: &report,
        }];
        let groups = test_groups(&runs);
        assert_eq!(groups.len(), 2);
        let texts = |g: usize| -> Vec<(f64, String)> {
            time_marks(&runs, &groups[g])
                .marks
                .into_iter()
                .filter(|m| m.kind == plots::MarkKind::KernelLog)
                .map(|m| (m.second, m.text))
                .collect()
        };
        let first = texts(0);
        let second = texts(1);
        assert_eq!(first.len(), 2, "{first:?}");
        assert!((first[0].0 - -0.3).abs() < 1e-9, "{first:?}");
        assert_eq!(
            first[0].1,
            "kernel log, 0.3 s before the test's start (0.2 s into the run): during set-up"
        );
        assert!((first[1].0 - 2.0).abs() < 1e-9, "{first:?}");
        assert_eq!(second.len(), 1, "{second:?}");
        assert!((second[0].0 - 2.0).abs() < 1e-9, "{second:?}");
        assert_eq!(
            second[0].1,
            "kernel log, 2.0 s after the test's start (12.0 s into the run): in the second"
        );
        assert_eq!(time_marks(&runs, &groups[1]).kernel_unplaced, 0);
    }

    #[test]
    fn empty_runs_and_tests_without_samples_render() {
        let mut report = sample_report();
        report.tests[0].series[0].latency = LatencyRecorder::new().summary();
        report.tests[0].series[0].per_second.clear();
        report.tests[0].error = Some("peer died".into());
        let r = render_one(&report);
        assert!(r.plots.is_empty());
        assert_eq!(r.html.matches("No samples to plot").count(), 3);
        assert!(r.html.contains("error: peer died"));
        report.tests.clear();
        report.warnings.clear();
        let r = render_one(&report);
        assert!(r.html.contains("No validity warnings."));
        assert!(r.plots.is_empty());
    }

    #[test]
    fn a_day_of_sixteen_series_stays_under_5_mb() {
        let report = day_long_report();
        let r = render_one(&report);
        assert_eq!(r.plots.len(), 3);
        assert!(
            r.html.len() < 5_000_000,
            "24-hour page is {} bytes",
            r.html.len()
        );
    }

    #[test]
    fn the_doctors_findings_are_among_the_facts() {
        let mut report = sample_report();
        // The model's checks as the doctor's builder makes them (`of(..).ok`,
        // `.warn`); exporters do not import the doctor.
        use crate::report::{Check, Verdict};
        let check =
            |id: &str, title: &str, verdict, value: &str, meaning: &str, fix: Option<&str>| Check {
                id: id.to_string(),
                title: title.to_string(),
                verdict,
                value: value.to_string(),
                meaning: meaning.to_string(),
                fix: fix.map(str::to_string),
            };
        report.sysinfo.checks = vec![
            check(
                "kernel.clocksource",
                "clocksource",
                Verdict::Ok,
                "tsc",
                "fast",
                None,
            ),
            check(
                "platform.virtualization",
                "virtualization",
                Verdict::Warn,
                "<KVM>",
                "a VM",
                Some("bare metal"),
            ),
        ];
        let html = render_one(&report).html;
        assert!(
            html.contains(
                "<tr><th>latscope doctor</th><td>1 ok, 1 warn, 0 bad<br><span class=\"warn\">warn</span> virtualization: &lt;KVM&gt;</td></tr>"
            ),
            "{html}"
        );
    }
}
