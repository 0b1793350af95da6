//! rt-tests 2.40 cyclicdeadline's exact outputs: its `T:` line (no
//! priority, its deadline after `I:`), its lines before the run, and its
//! part of the `--json` file (cycles, min, max, avg per thread, indented
//! with a tab and a space as it writes them). Parsers (LKFT's, KernelCI's)
//! read these; the layout is cyclicdeadline's, byte for byte.

use super::CyclicThread;
use super::cells::{rt_tests_json_average, rt_tests_json_threads};
use std::fmt::Write;

/// cyclicdeadline's `T:` line of thread `index` (`print_stat`): the
/// thread's deadline after `I:`, its average truncated.
pub fn t_line(index: usize, t: &CyclicThread) -> String {
    let avg = if t.cycles == 0 {
        0
    } else {
        t.sum / t.cycles as i64
    };
    format!(
        "T:{:2} ({:5}) I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}\n",
        index, t.tid, t.interval_us, t.cycles, t.min, t.act, avg, t.max
    )
}

/// Every thread's `T:` line.
pub fn t_lines(threads: &[CyclicThread]) -> String {
    threads
        .iter()
        .enumerate()
        .map(|(i, t)| t_line(i, t))
        .collect()
}

/// The lines cyclicdeadline prints for each thread before starting them:
/// its reservation, and how long its own check of one sample took.
pub fn reservation_lines(runtime_us: u64, deadline_us: u64, tested_us: u64) -> String {
    format!("interval: {runtime_us}:{deadline_us}\n  Tested at {tested_us}us of {runtime_us}us\n")
}

/// What each thread prints as it starts (`deadline thread TID`, then its
/// reservation); `main thread TID` follows them.
pub fn thread_lines(tid: i32, runtime_us: u64, deadline_us: u64) -> (String, String) {
    (
        format!("deadline thread {tid}\n"),
        format!("thread[{tid}] runtime={runtime_us}us deadline={deadline_us}us\n"),
    )
}

/// The escape sequence that moves the cursor up over the `T:` lines
/// before the next redraw (and after the last one).
pub fn cursor_up(threads: usize) -> String {
    format!("\x1b[{threads}A")
}

/// The escape sequence at the end of a run without `-q`: the cursor below
/// the `T:` lines and one line further.
pub fn cursor_below(threads: usize) -> String {
    format!("\x1b[{}B", threads + 2)
}

/// `-b`: which thread crossed the limit and with what maximum.
pub fn break_lines(tid: i32, value: i64) -> String {
    format!("# Break thread: {tid}\n# Break value: {value}\n")
}

/// cyclicdeadline's part of its `--json` file, after rt-tests' header
/// (report::cells::rt_tests_json_header) to the closing brace. The average
/// of a thread without a sample is 0.00, as the signaltest drop-in writes
/// it: cyclicdeadline divides 0 by 0 there and prints `-nan`, which no JSON
/// reader takes.
pub fn json_threads(threads: &[CyclicThread]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  \"num_threads\": {},", threads.len());
    out.push_str("  \"resolution_in_ns\": 0,\n");
    let fields: Vec<Vec<(&str, String)>> = threads
        .iter()
        .map(|t| {
            let avg = rt_tests_json_average(t.sum, t.cycles);
            vec![
                ("cycles", t.cycles.to_string()),
                ("min", t.min.to_string()),
                ("max", t.max.to_string()),
                ("avg", format!("{avg:.2}")),
            ]
        })
        .collect();
    out.push_str(&rt_tests_json_threads(&fields, "\t "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: i32, deadline: u64, cycles: u64, min: i64, sum: i64, max: i64) -> CyclicThread {
        CyclicThread {
            tid,
            interval_us: deadline,
            cycles,
            min,
            act: 3,
            sum,
            max,
            ..CyclicThread::default()
        }
    }

    /// The widths of rt-tests 2.40's `print_stat` (a line of Debian's
    /// `cyclicdeadline -q -i 4000 -D 1`, numbers as printed).
    #[test]
    fn t_line_is_cyclicdeadlines() {
        assert_eq!(
            t_line(0, &thread(4242, 4000, 250, 7, 2501, 61)),
            "T: 0 ( 4242) I:4000 C:    250 Min:      7 Act:    3 Avg:   10 Max:      61\n"
        );
        assert_eq!(
            t_line(1, &thread(123456, 4500, 0, 0, 0, 0)),
            "T: 1 (123456) I:4500 C:      0 Min:      0 Act:    3 Avg:    0 Max:       0\n"
        );
    }

    #[test]
    fn json_part_is_cyclicdeadlines() {
        let text = json_threads(&[thread(1, 4000, 4, 2, 10, 5), thread(2, 4500, 0, 0, 0, 0)]);
        assert_eq!(
            text,
            "  \"num_threads\": 2,\n  \"resolution_in_ns\": 0,\n  \"thread\": {\n    \"0\": {\n\t \"cycles\": 4,\n\t \"min\": 2,\n\t \"max\": 5,\n\t \"avg\": 2.50\n    },\n    \"1\": {\n\t \"cycles\": 0,\n\t \"min\": 0,\n\t \"max\": 0,\n\t \"avg\": 0.00\n    }\n  }\n}\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&format!("{{\n{text}")).unwrap();
        assert_eq!(parsed["thread"]["1"]["avg"], 0.0);
    }

    #[test]
    fn lines_before_the_run() {
        assert_eq!(
            reservation_lines(600, 1000, 0),
            "interval: 600:1000\n  Tested at 0us of 600us\n"
        );
        let (first, second) = thread_lines(77, 2400, 4000);
        assert_eq!(first, "deadline thread 77\n");
        assert_eq!(second, "thread[77] runtime=2400us deadline=4000us\n");
        assert_eq!(
            break_lines(9, 120),
            "# Break thread: 9\n# Break value: 120\n"
        );
        assert_eq!(cursor_up(2), "\x1b[2A");
        assert_eq!(cursor_below(2), "\x1b[4B");
    }
}
