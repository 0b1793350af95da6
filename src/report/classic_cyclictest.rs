//! rt-tests 2.x cyclictest's exact outputs: the `T:` line, the `-h`
//! histogram block and the `--json` file. Widths, separators and the stray
//! colons of its JSON keys are kept as cyclictest prints them (its
//! `print_stat`, `print_hist` and `rt_write_json`): parsers depend on them.

use super::{ConfigDetail, CyclicOutput, CyclicThread, Exporter, Report, SeriesDetail};
use std::fmt::Write;

/// The console of `cyclictest --latscope-json`: cyclictest's final block,
/// exactly as a run without the option prints it, from the Report (each
/// timer thread's `cyclictest` figures, the config's `cyclictest` options).
pub struct FinalBlock;

impl Exporter for FinalBlock {
    fn write(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for test in &report.tests {
            let ConfigDetail::Timer(config) = &test.config.detail else {
                continue;
            };
            let Some(output) = &config.cyclictest else {
                continue;
            };
            let threads: Vec<CyclicThread> = test
                .series
                .iter()
                .filter_map(|s| match &s.detail {
                    SeriesDetail::TimerThread(t) => t.cyclictest.clone(),
                    _ => None,
                })
                .collect();
            out.write_all(final_block(output, &threads).as_bytes())?;
        }
        Ok(())
    }
}

/// cyclictest's block after the run: -q's `T:` lines, `--spike`'s, the
/// histogram (unless it went to `--histfile`), `-b`'s thread list.
pub fn final_block(output: &CyclicOutput, threads: &[CyclicThread]) -> String {
    let mut text = String::new();
    if output.quiet && output.histogram_cells == 0 {
        for (i, t) in threads.iter().enumerate() {
            text.push_str(&t_line(i, t, output.nsecs, output.smi));
        }
    }
    if output.spikes {
        let mut kept: Vec<(usize, Spike)> = threads
            .iter()
            .enumerate()
            .flat_map(|(thread, t)| {
                t.spikes.iter().map(move |s| {
                    let spike = Spike {
                        thread,
                        diff: s.diff,
                        ts_us: s.ts_us,
                    };
                    (s.order, spike)
                })
            })
            .collect();
        kept.sort_by_key(|(order, _)| *order);
        let kept: Vec<Spike> = kept.into_iter().map(|(_, s)| s).collect();
        let count: u64 = threads.iter().map(|t| t.spikes_seen).sum();
        text.push_str(&spikes(&kept, count as usize));
    }
    if output.histogram_cells > 0 && !output.histogram_to_file {
        text.push_str(&histogram(
            threads,
            output.histogram_cells,
            output.histofall,
            output.smi,
        ));
    }
    // cyclictest lists the thread ids for any -b other than 0, a negative
    // one (which never breaks) included.
    if output.lists_threads {
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        let broke = threads
            .iter()
            .find_map(|t| t.broke_at.map(|value| (t.tid, value)));
        text.push_str(&break_block(&tids, broke));
    }
    text
}

impl CyclicThread {
    /// cyclictest's integer average (`avg / cycles`, truncated).
    fn avg(&self) -> i64 {
        if self.cycles == 0 {
            0
        } else {
            self.sum / self.cycles as i64
        }
    }
}

/// cyclictest's `T:` line (with its newline); `--smi` adds an SMI column.
pub fn t_line(index: usize, t: &CyclicThread, nsecs: bool, smi: bool) -> String {
    // -N widens Act and Avg (nanoseconds need more digits); nothing else moves.
    let w = if nsecs { 8 } else { 5 };
    let mut line = format!(
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:w$} Avg:{:w$} Max:{:8}",
        index,
        t.tid,
        t.priority,
        t.interval_us,
        t.cycles,
        t.min,
        t.act,
        t.avg(),
        t.max
    );
    if smi {
        let _ = write!(line, " SMI:{:8}", t.smi_count);
    }
    line.push('\n');
    line
}

/// The rule around cyclictest's status block.
const STATUS_RULE: &str = "#---------------------------\n";

/// cyclictest's status block (its SIGUSR1 handler on stderr, its SIGUSR2
/// handler into `/cyclictest<pid>`): a rule, the title, every thread's
/// `T:` line (`print_stat` without -q or -v, whatever the run's options;
/// -N and --smi as in the final lines) and the rule again.
pub fn status_block(threads: &[CyclicThread], nsecs: bool, smi: bool) -> String {
    let mut block = String::with_capacity(60 + threads.len() * 90);
    block.push_str(STATUS_RULE);
    block.push_str("# cyclictest current status:\n");
    for (i, t) in threads.iter().enumerate() {
        block.push_str(&t_line(i, t, nsecs, smi));
    }
    block.push_str(STATUS_RULE);
    block
}

/// The running display's head line (`policy: fifo: loadavg: ...`) and the
/// empty line after it. `policy` is the policy asked for; `/other` follows
/// when some thread runs as SCHED_OTHER. `loadavg` is /proc/loadavg without
/// its newline.
pub fn policy_line(policy: &str, some_other: bool, loadavg: &str) -> String {
    let (slash, second) = if some_other { ("/", "other") } else { ("", "") };
    format!("policy: {policy}{slash}{second}: loadavg: {loadavg}          \n\n")
}

/// The escape sequence that moves the cursor up over the running display
/// (its `T:` lines and the two lines above them) before the next redraw.
pub fn cursor_up(threads: usize) -> String {
    format!("\x1b[{}A", threads + 2)
}

/// `-M`'s escape sequence at the end: the cursor back below the display.
pub fn cursor_down(threads: usize) -> String {
    format!("\x1b[{}B", threads + 2)
}

/// One `-v` line: thread, cycle, value (and the cycle's SMIs with --smi).
pub fn verbose_line(index: usize, cycle: u64, value: i64, smi: Option<u64>) -> String {
    match smi {
        Some(n) => format!("{index:8}:{cycle:8}:{value:8}{n:8}\n"),
        None => format!("{index:8}:{cycle:8}:{value:8}\n"),
    }
}

/// One recorded `--spike`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spike {
    pub thread: usize,
    pub diff: i64,
    /// The wake-up time, us of the measuring clock.
    pub ts_us: i64,
}

/// `--spike`'s block after the run (nothing when no spike was recorded):
/// the kept spikes in order and the count of all of them.
pub fn spikes(kept: &[Spike], count: usize) -> String {
    if kept.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n");
    for s in kept {
        let _ = writeln!(
            out,
            "T:{:2} Spike:{:8}: TS: {:12}",
            s.thread, s.diff, s.ts_us
        );
    }
    let _ = write!(out, "spikes = {count}\n\n");
    out
}

/// `-b`'s block after the run: every thread's id, and which thread broke
/// with which value, when one did.
pub fn break_block(tids: &[i32], broke: Option<(i32, i64)>) -> String {
    let mut out = String::from("# Thread Ids:");
    for t in tids {
        let _ = write!(out, " {t:05}");
    }
    out.push('\n');
    if let Some((tid, value)) = broke {
        let _ = writeln!(out, "# Break thread: {tid}");
        let _ = writeln!(out, "# Break value: {value}");
    }
    out
}

/// cyclictest's `-h` block (`print_hist`); `histofall` (-H) adds a column
/// summing all threads when there are several; `smi` adds `# SMIs:`.
pub fn histogram(threads: &[CyclicThread], cells: usize, histofall: bool, smi: bool) -> String {
    let sum_column = histofall && threads.len() > 1;
    let mut out = String::from("# Histogram\n");
    let mut totals = vec![0u64; threads.len()];
    let mut all_total = 0u64;
    for i in 0..cells {
        let _ = write!(out, "{i:06} ");
        let mut all = 0u64;
        for (j, t) in threads.iter().enumerate() {
            let n = t.hist.get(i).copied().unwrap_or(0);
            totals[j] += n;
            all += n;
            let _ = write!(out, "{n:06}");
            if j + 1 < threads.len() {
                out.push('\t');
            }
        }
        if sum_column {
            let _ = write!(out, "\t{all:06}");
            all_total += all;
        }
        out.push('\n');
    }
    out.push_str("# Total:");
    for n in &totals {
        let _ = write!(out, " {n:09}");
    }
    if sum_column {
        let _ = write!(out, " {all_total:09}");
    }
    out.push_str("\n# Min Latencies:");
    for t in threads {
        let _ = write!(out, " {:05}", t.min);
    }
    out.push_str("\n# Avg Latencies:");
    for t in threads {
        let _ = write!(out, " {:05}", t.avg());
    }
    out.push_str("\n# Max Latencies:");
    for t in threads {
        let _ = write!(out, " {:05}", t.max);
    }
    if sum_column {
        let maxmax = threads.iter().map(|t| t.max).max().unwrap_or(0).max(0);
        let _ = write!(out, " {maxmax:05}");
    }
    out.push_str("\n# Histogram Overflows:");
    for t in threads {
        let _ = write!(out, " {:05}", t.overflows);
    }
    if sum_column {
        let all: u64 = threads.iter().map(|t| t.overflows).sum();
        let _ = write!(out, " {all:05}");
    }
    out.push_str("\n# Histogram Overflow at cycle number:\n");
    for (i, t) in threads.iter().enumerate() {
        let _ = write!(out, "# Thread {i}:");
        for c in &t.outliers {
            let _ = write!(out, " {c:05}");
        }
        let shown = t.outliers.len() as u64;
        if shown < t.overflows {
            let _ = write!(out, " # {:05} others", t.overflows - shown);
        }
        out.push('\n');
    }
    if smi {
        out.push_str("# SMIs:");
        for t in threads {
            let _ = write!(out, " {:05}", t.smi_count);
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// cyclictest's part of its `--json` file, after rt-tests' header
/// (report::cells::rt_tests_json_header) to the closing brace, byte for
/// byte in layout. `smp`: `-S`, where cyclictest does not look up the
/// threads' NUMA nodes and writes `"node": -1` (else the node of the
/// thread's CPU: 0 here).
pub fn json_threads(threads: &[CyclicThread], nsecs: bool, smp: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  \"num_threads\": {},", threads.len());
    let _ = writeln!(out, "  \"resolution_in_ns\": {},", u8::from(nsecs));
    out.push_str("  \"thread\": {\n");
    for (i, t) in threads.iter().enumerate() {
        let _ = writeln!(out, "    \"{i}\": {{");
        let cells: Vec<(usize, u64)> = t
            .hist
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (k, *n))
            .collect();
        if cells.is_empty() {
            out.push_str("      \"histogram\": {      },\n");
        } else {
            out.push_str("      \"histogram\": {\n");
            for (k, (cell, n)) in cells.iter().enumerate() {
                let comma = if k + 1 < cells.len() { "," } else { "" };
                let _ = writeln!(out, "        \"{cell}\": {n}{comma}");
            }
            out.push_str("      },\n");
        }
        let avg = if t.cycles == 0 {
            0.0
        } else {
            t.sum as f64 / t.cycles as f64
        };
        let _ = writeln!(out, "      \"cycles\": {},", t.cycles);
        let _ = writeln!(out, "      \"min\": {},", t.min);
        let _ = writeln!(out, "      \"max\": {},", t.max);
        let _ = writeln!(out, "      \"avg\": {avg:.2},");
        let _ = writeln!(out, "      \"cpu\": {},", t.cpu);
        let _ = writeln!(out, "      \"node\": {}", if smp { -1 } else { 0 });
        let comma = if i + 1 < threads.len() { "," } else { "" };
        let _ = writeln!(out, "    }}{comma}");
    }
    out.push_str("  }\n}\n");
    out
}
