//! rt-tests 2.x signaltest's exact outputs: its `T:` line, the running
//! display's head (the load average) and cursor-up escape, `-v`'s value
//! lines, the break line and its `--json` part. Widths and separators as
//! signaltest prints them (its `print_stat` and `write_stats`): parsers
//! depend on them.

use super::cells::{rt_tests_json_average, rt_tests_json_threads};
use std::fmt::Write;

/// One thread's figures as signaltest keeps them (whole us).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalThread {
    pub tid: i32,
    pub priority: i32,
    pub cycles: u64,
    pub min: i64,
    pub act: i64,
    /// Sum of every lap (for the truncating average).
    pub sum: i64,
    pub max: i64,
    pub cpu: usize,
}

impl SignalThread {
    /// signaltest's integer average (`(long)(avg / cycles)`), 0 without laps.
    fn avg(&self) -> i64 {
        if self.cycles == 0 {
            0
        } else {
            self.sum / self.cycles as i64
        }
    }
}

/// signaltest's `T:` line (with its newline).
pub fn t_line(index: usize, t: &SignalThread) -> String {
    format!(
        "T:{:2} ({:5}) P:{:2} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}\n",
        index,
        t.tid,
        t.priority,
        t.cycles,
        t.min,
        t.act,
        t.avg(),
        t.max
    )
}

/// The running display's head: /proc/loadavg without its newline, ten
/// blanks, an empty line.
pub fn loadavg_head(loadavg: &str) -> String {
    format!("{loadavg}          \n\n")
}

/// The escape that moves the cursor back over the display (its head, the
/// empty line and thread 0's line) before the next redraw.
pub const CURSOR_UP: &str = "\x1b[3A";

/// One `-v` line: thread, lap number (from 0), lap in us.
pub fn verbose_line(index: usize, lap: u64, value: i64) -> String {
    format!("{index:8}:{lap:8}:{value:8}\n")
}

/// The line before the final ones when thread `index` stopped the run
/// (`-b`).
pub fn exceeded_line(index: usize) -> String {
    format!("Thread {index} exceeded trace limit.\n")
}

/// `-v` with `-a LIST`: the CPU of each thread, said as it starts.
pub fn thread_cpu_line(index: usize, cpu: usize) -> String {
    format!("Thread {index} using cpu {cpu}.\n")
}

/// signaltest's part of its `--json` file, after rt-tests' header
/// (report::cells::rt_tests_json_header) to the closing brace: the thread count and each thread's laps,
/// min, max, average (2 decimals) and CPU. Linaro's test-definitions read
/// `num_threads` and each thread's `min`/`avg`/`max` from it.
pub fn json_body(threads: &[SignalThread]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  \"num_threads\": {},", threads.len());
    let fields: Vec<Vec<(&str, String)>> = threads
        .iter()
        .map(|t| {
            let avg = rt_tests_json_average(t.sum, t.cycles);
            vec![
                ("cycles", t.cycles.to_string()),
                ("min", t.min.to_string()),
                ("max", t.max.to_string()),
                ("avg", format!("{avg:.2}")),
                ("cpu", t.cpu.to_string()),
            ]
        })
        .collect();
    out.push_str(&rt_tests_json_threads(&fields, "      "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(cycles: u64, sum: i64) -> SignalThread {
        SignalThread {
            tid: 4242,
            priority: 90,
            cycles,
            min: 3,
            act: 7,
            sum,
            max: 10_512,
            cpu: 1,
        }
    }

    #[test]
    fn t_line_has_signaltests_widths() {
        assert_eq!(
            t_line(1, &thread(1000, 656_789)),
            "T: 1 ( 4242) P:90 C:   1000 Min:      3 Act:    7 Avg:  656 Max:   10512\n"
        );
        let idle = SignalThread {
            min: 1_000_000,
            max: -1_000_000,
            ..thread(0, 0)
        };
        assert_eq!(
            t_line(0, &idle),
            "T: 0 ( 4242) P:90 C:      0 Min:1000000 Act:    7 Avg:    0 Max:-1000000\n"
        );
    }

    #[test]
    fn running_pieces() {
        assert_eq!(
            loadavg_head("0.10 0.20 0.30 1/200 4242"),
            "0.10 0.20 0.30 1/200 4242          \n\n"
        );
        assert_eq!(verbose_line(0, 12, 37), "       0:      12:      37\n");
        assert_eq!(exceeded_line(0), "Thread 0 exceeded trace limit.\n");
        assert_eq!(thread_cpu_line(1, 1), "Thread 1 using cpu 1.\n");
    }

    #[test]
    fn json_body_is_signaltests_and_parses() {
        let body = json_body(&[thread(3, 10), thread(0, 0)]);
        assert_eq!(
            body,
            "  \"num_threads\": 2,\n  \"thread\": {\n    \"0\": {\n      \"cycles\": 3,\n      \
             \"min\": 3,\n      \"max\": 10512,\n      \"avg\": 3.33,\n      \"cpu\": 1\n    },\n    \
             \"1\": {\n      \"cycles\": 0,\n      \"min\": 3,\n      \"max\": 10512,\n      \
             \"avg\": 0.00,\n      \"cpu\": 1\n    }\n  }\n}\n"
        );
        let whole: serde_json::Value = serde_json::from_str(&format!("{{\n{body}")).unwrap();
        assert_eq!(whole["thread"]["0"]["avg"], 3.33);
    }
}
