//! rt-tests 2.x cyclictest's exact outputs: the `T:` line, the `-h`
//! histogram block and the `--json` file. Widths, separators and the stray
//! colons of its JSON keys are kept as cyclictest prints them (its
//! `print_stat`, `print_hist` and `rt_write_json`): parsers depend on them.

use std::fmt::Write;

/// One thread's figures, in cyclictest's units (us, or ns with `-N`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CyclicThread {
    pub tid: i32,
    pub priority: i32,
    pub interval_us: u64,
    pub cycles: u64,
    pub min: i64,
    pub act: i64,
    /// Sum of every latency (for cyclictest's truncating average).
    pub sum: i64,
    pub max: i64,
    pub cpu: usize,
    /// `-h` cells (empty without `-h`).
    pub hist: Vec<u64>,
    pub overflows: u64,
    /// Cycle numbers of the first overflows (at most one per histogram cell).
    pub outliers: Vec<u64>,
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

/// cyclictest's `T:` line (with its newline).
pub fn t_line(index: usize, t: &CyclicThread, nsecs: bool) -> String {
    // -N widens Act and Avg (nanoseconds need more digits); nothing else moves.
    let w = if nsecs { 8 } else { 5 };
    format!(
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:w$} Avg:{:w$} Max:{:8}\n",
        index,
        t.tid,
        t.priority,
        t.interval_us,
        t.cycles,
        t.min,
        t.act,
        t.avg(),
        t.max
    )
}

/// The line cyclictest prints when it holds `/dev/cpu_dma_latency`.
pub fn dma_latency_line() -> &'static str {
    "# /dev/cpu_dma_latency set to 0us\n"
}

/// cyclictest's `-h` block (`print_hist` without `-H`).
pub fn histogram(threads: &[CyclicThread], cells: usize) -> String {
    let mut out = String::from("# Histogram\n");
    let mut totals = vec![0u64; threads.len()];
    for i in 0..cells {
        let _ = write!(out, "{i:06} ");
        for (j, t) in threads.iter().enumerate() {
            let n = t.hist.get(i).copied().unwrap_or(0);
            totals[j] += n;
            let _ = write!(out, "{n:06}");
            if j + 1 < threads.len() {
                out.push('\t');
            }
        }
        out.push('\n');
    }
    out.push_str("# Total:");
    for n in &totals {
        let _ = write!(out, " {n:09}");
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
    out.push_str("\n# Histogram Overflows:");
    for t in threads {
        let _ = write!(out, " {:05}", t.overflows);
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
    out.push('\n');
    out
}

/// What the JSON's header says about the run and the machine.
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

/// cyclictest's `--json` file (rt-tests' `rt_write_json` plus
/// cyclictest's per-thread part), byte for byte in layout.
pub fn json(h: &JsonHeader, threads: &[CyclicThread], nsecs: bool) -> String {
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"file_version\": 1,");
    let _ = writeln!(out, "  \"cmdline:\": {},", json_string(h.cmdline));
    let _ = writeln!(out, "  \"rt_test_version:\": \"2.40\",");
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
        let _ = writeln!(out, "      \"node\": 0");
        let comma = if i + 1 < threads.len() { "," } else { "" };
        let _ = writeln!(out, "    }}{comma}");
    }
    out.push_str("  }\n}\n");
    out
}
