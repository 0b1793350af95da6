//! rt-tests 2.x rt-migrate-test's exact outputs: its progress bar (on
//! stderr), the `Iter:` table of every round (each task's start after the
//! release, its end, its busy-loop count, in us), each task's
//! `Max/Min/Tot/Avg`, ` Passed!`/` Failed!` and its `--json` part
//! (`num_threads`, `thread.<i>.{prio,min,avg,max,total}`), which Linaro's
//! test-definitions read with `return_code`.

use std::fmt::Write;

/// Width of the progress bar.
const PROGRESS_CHARS: usize = 70;

/// One task's figures of one round (ns after the release, and its loops).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    pub start_ns: u64,
    pub end_ns: u64,
    pub loops: u64,
}

/// One task as the final lines name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub prio: i32,
    pub tid: i32,
}

/// The progress bar drawn at `percent` (rt-migrate-test's
/// `print_progress_bar`: the empty bar, then the dashes over it).
pub fn progress_bar(percent: usize) -> String {
    let dashes = PROGRESS_CHARS * percent.min(100) / 100;
    format!(
        "\r|{}|\r|{}",
        " ".repeat(PROGRESS_CHARS),
        "-".repeat(dashes)
    )
}

/// Max, min and sum of each task's starts (ns) over `rounds`.
fn per_task(rounds: &[Vec<Round>], tasks: usize) -> Vec<(u64, u64, u64)> {
    (0..tasks)
        .map(|t| {
            rounds.iter().fold((0, u64::MAX, 0), |(max, min, sum), r| {
                let v = r[t].start_ns;
                (max.max(v), min.min(v), sum + v)
            })
        })
        .collect()
}

/// The lines after the run: the table, the parent pid, each task, and the
/// check's verdict when `-c` was given (`check`: Some(passed)).
pub fn results(rounds: &[Vec<Round>], tasks: &[Task], parent: i32, check: Option<bool>) -> String {
    let us = |ns: u64| ns / 1000;
    let mut out = String::from("Iter: ");
    for t in 0..tasks.len() {
        let _ = write!(out, "{t:6}  ");
    }
    out.push('\n');
    for (i, r) in rounds.iter().enumerate() {
        let _ = write!(out, "{i:4}:   ");
        for x in r {
            let _ = write!(out, "{:6}  ", us(x.start_ns));
        }
        out.push_str("\n len:   ");
        for x in r {
            let _ = write!(out, "{:6}  ", us(x.end_ns));
        }
        out.push_str("\n loops: ");
        for x in r {
            let _ = write!(out, "{:6}  ", x.loops);
        }
        out.push_str("\n\n");
    }
    let _ = writeln!(out, "Parent pid: {parent}");
    let n = rounds.len().max(1) as u64;
    for (t, (task, (max, min, sum))) in tasks.iter().zip(per_task(rounds, tasks.len())).enumerate()
    {
        let _ = write!(
            out,
            " Task {t} (prio {}) (pid {}):\n   Max: {} us\n   Min: {} us\n   Tot: {} us\n   Avg: {} us\n\n",
            task.prio,
            task.tid,
            us(max),
            us(min),
            us(sum),
            us(sum / n)
        );
    }
    match check {
        Some(true) => out.push_str(" Passed!\n"),
        Some(false) => out.push_str(" Failed!\n"),
        None => {}
    }
    out
}

/// rt-migrate-test's part of its `--json` file (its average is the total
/// in us divided by the rounds, as it computes it).
pub fn json_body(rounds: &[Vec<Round>], tasks: &[Task]) -> String {
    let us = |ns: u64| ns / 1000;
    let n = rounds.len().max(1) as u64;
    let mut out = format!("  \"num_threads\": {},\n  \"thread\": {{\n", tasks.len());
    let figures = per_task(rounds, tasks.len());
    for (i, (task, (max, min, sum))) in tasks.iter().zip(figures).enumerate() {
        let comma = if i + 1 == tasks.len() { "" } else { "," };
        let _ = write!(
            out,
            "    \"{i}\": {{\n      \"prio\": {},\n      \"min\": {},\n      \"avg\": {},\n      \
             \"max\": {},\n      \"total\": {}\n    }}{comma}\n",
            task.prio,
            us(min),
            us(sum) / n,
            us(max),
            us(sum)
        );
    }
    out.push_str("  }\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(v: &[(u64, u64, u64)]) -> Vec<Round> {
        v.iter()
            .map(|&(start_ns, end_ns, loops)| Round {
                start_ns,
                end_ns,
                loops,
            })
            .collect()
    }

    #[test]
    fn table_and_tasks_are_rt_migrate_tests() {
        let rounds = vec![
            round(&[
                (20_066_500, 40_066_000, 745169),
                (54_000, 20_054_000, 769731),
            ]),
            round(&[(39_000, 20_094_000, 736), (79_900, 20_079_000, 739077)]),
        ];
        let tasks = [Task { prio: 2, tid: 10 }, Task { prio: 3, tid: 11 }];
        assert_eq!(
            results(&rounds, &tasks, 9, Some(false)),
            "Iter:      0       1  \n\
             \x20  0:    20066      54  \n len:    40066   20054  \n loops: 745169  769731  \n\n\
             \x20  1:       39      79  \n len:    20094   20079  \n loops:    736  739077  \n\n\
             Parent pid: 9\n Task 0 (prio 2) (pid 10):\n   Max: 20066 us\n   Min: 39 us\n   \
             Tot: 20105 us\n   Avg: 10052 us\n\n Task 1 (prio 3) (pid 11):\n   Max: 79 us\n   \
             Min: 54 us\n   Tot: 133 us\n   Avg: 66 us\n\n Failed!\n"
        );
        // The JSON's average divides the total in us (rt-migrate-test's own rounding).
        let json = json_body(&rounds, &tasks);
        assert!(
            json.contains(
                "\"avg\": 66,\n      \"max\": 79,\n      \"total\": 133\n    }\n  }\n}\n"
            ),
            "{json}"
        );
        let whole: serde_json::Value = serde_json::from_str(&format!("{{\n{json}")).unwrap();
        assert_eq!(whole["thread"]["0"]["avg"], 10052);
    }

    #[test]
    fn progress_bar_draws_over_the_empty_bar() {
        let bar = progress_bar(50);
        assert!(bar.starts_with(&format!("\r|{}|\r|", " ".repeat(70))));
        assert!(bar.ends_with(&format!("|{}", "-".repeat(35))));
        assert_eq!(progress_bar(0), format!("\r|{}|\r|", " ".repeat(70)));
    }
}
