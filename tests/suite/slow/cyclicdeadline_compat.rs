//! `latscope cyclicdeadline` against Debian's rt-tests 2.40 cyclicdeadline,
//! run side by side in the same test where it is installed (said on stderr
//! where it is not: then against what it printed when these tests were
//! written): help and usage errors byte for byte, runs line for line with
//! the measured numbers (tids, latencies, counts) masked and the
//! reservations exact, the `--json` file in layout and as LKFT's and
//! KernelCI's parsers read it, Ctrl-C/SIGTERM, `-b`, and the kernel's
//! admission control refusing a thread when the bandwidth is full.
//!
//! The runs need SCHED_DEADLINE (root or CAP_SYS_NICE); they say why they
//! skip without. rt-tests' cyclicdeadline needs HRTICK for runtimes under
//! 2 ms (a runtime is 60 % of the interval), which it cannot turn on where
//! debugfs' sched features are closed, so the runs compared use intervals
//! of 4 ms and more.

use crate::common::*;
use regex::Regex;
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The runs of this file reserve deadline bandwidth, as the other
/// deadline tests do: one at a time, so that the refusal test alone fills it.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    crate::common::turns::realtime_turn()
}

/// Debian's cyclicdeadline, when installed.
fn real_tool() -> Option<&'static str> {
    let found = std::path::Path::new("/usr/bin/cyclicdeadline").exists();
    found.then_some("cyclicdeadline")
}

fn ours(args: &[&str]) -> Output {
    run(latscope(60).arg("cyclicdeadline").args(args))
}

fn theirs(tool: &str, args: &[&str]) -> Output {
    Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run cyclicdeadline")
}

/// SCHED_DEADLINE needs root or CAP_SYS_NICE (FIFO stands for the same
/// privilege).
fn skip_without_deadline(test: &str) -> bool {
    skip_without_realtime(test)
}

/// What a run prints that is measured (tids, latencies, counts, the time of
/// its own check) masked; the reservations, indexes and every other byte
/// kept. The running display's redraws that are equal once masked are one.
fn masked(text: &str) -> String {
    let rules: [(&str, &str); 5] = [
        (r"deadline thread \d+", "deadline thread TID"),
        (r"thread\[\d+\]", "thread[TID]"),
        (r"main thread \d+", "main thread TID"),
        (r"Tested at \d+us", "Tested at Nus"),
        (r"# Break (thread|value): \d+", "# Break $1: N"),
    ];
    let mut text = text.to_string();
    for (pattern, with) in rules {
        text = Regex::new(pattern)
            .unwrap()
            .replace_all(&text, with)
            .into_owned();
    }
    // A measured value wider than its printf field (`Act:%5ld` of 100 ms
    // and more on a busy machine) widens the line by how late the run was:
    // each field is compared up to its width, a narrower one still differs.
    let fields = Regex::new(r"\b(C|Min|Act|Avg|Max):( *-?\d+)").unwrap();
    text = fields
        .replace_all(&text, |c: &regex::Captures| {
            let width = match &c[1] {
                "Act" | "Avg" => 5,
                "C" | "Min" => 7,
                _ => 8,
            };
            format!("{}:{}", &c[1], "N".repeat(c[2].len().min(width)))
        })
        .into_owned();
    let tid = Regex::new(r"^(T: *\d+ )\( *\d+\)").unwrap();
    let mut lines: Vec<String> = text
        .split_inclusive('\n')
        .map(|l| mask_padded(&tid.replace(l, "${1}(TID)")))
        .collect();
    // The threads and the main thread print these as they start, in an
    // order that varies from run to run in cyclicdeadline: compared as a set.
    let starting = |l: &String| {
        ["deadline thread", "thread[", "main thread"]
            .iter()
            .any(|p| l.starts_with(p))
    };
    if let Some(first) = lines.iter().position(starting) {
        let count = lines[first..].iter().take_while(|l| starting(l)).count();
        lines[first..first + count].sort();
    }
    squeeze_redraws(&lines.concat())
}

/// Consecutive redraws (each starting at a cursor-up escape) that are the
/// same once masked count as one: how many there are depends on timing.
fn squeeze_redraws(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest[1.min(rest.len())..].find("\x1b[").map(|i| i + 1) {
        out.push(&rest[..at]);
        rest = &rest[at..];
    }
    out.push(rest);
    out.dedup();
    out.concat()
}

/// The `T:` lines of an output: (index, cycles, min, avg, max).
fn t_lines(text: &str) -> Vec<(u64, u64, i64, i64, i64)> {
    let re = Regex::new(
        r"T: *(\d+) \( *\d+\) I:\d+ C: *(\d+) Min: *(-?\d+) Act: *-?\d+ Avg: *(-?\d+) Max: *(-?\d+)",
    )
    .unwrap();
    re.captures_iter(text)
        .map(|c| {
            let n = |i: usize| c[i].parse::<i64>().unwrap();
            (n(1) as u64, n(2) as u64, n(3), n(4), n(5))
        })
        .collect()
}

#[test]
fn help_and_usage_errors_are_cyclicdeadlines() {
    let vectors: [&[&str]; 19] = [
        &["--help"],
        &["-h"],
        &["--he"],
        &["-Z"],
        &["--bogus"],
        &["-i"],
        &["--json"],
        &["--t", "2"],
        &["--quiet=1"],
        &["-c"],
        &["-a", "5"],
        &["-a", "abc"],
        &["--affinity=9"],
        &["-a", "-D"],
        // Lists cyclicdeadline refuses before it changes anything.
        &["-a", "0-2"],
        &["-a", "1-0"],
        &["-a", "0,,1"],
        &["-a", ","],
        &["-c", "2"],
    ];
    let real = real_tool();
    if real.is_none() {
        eprintln!(
            "cyclicdeadline (Debian's rt-tests) is not installed: checked against the outputs it gave when written"
        );
    }
    for args in vectors {
        let out = ours(args);
        let (stdout, stderr, code) = (stdout_of(&out), stderr_of(&out), out.status.code());
        if let Some(tool) = real {
            let t = theirs(tool, args);
            assert_eq!(stdout, stdout_of(&t), "{args:?}: stdout");
            assert_eq!(stderr, stderr_of(&t), "{args:?}: stderr");
            assert_eq!(code, t.status.code(), "{args:?}: exit code");
            continue;
        }
        let usage = golden("cyclicdeadline", "help.out");
        let usage = usage.as_str();
        match args[0] {
            "--help" | "-h" | "--he" => {
                assert_eq!((stdout.as_str(), code), (usage, Some(0)), "{args:?}")
            }
            "-a" | "-c" | "--affinity=9" if args.get(1) != Some(&"-D") => {
                assert!(stderr.starts_with("FATAL: Invalid cpu input '"), "{args:?}");
                assert_eq!((stdout.as_str(), code), ("", Some(1)), "{args:?}");
            }
            _ => {
                assert!(stderr.starts_with("cyclicdeadline: "), "{args:?}: {stderr}");
                assert_eq!((stdout.as_str(), code), (usage, Some(1)), "{args:?}");
            }
        }
    }
}

/// latscope's own refusals, where cyclicdeadline would misbehave or change
/// the machine: one line, exit 2.
#[test]
fn refusals_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["-i", "0"][..], "runtime"),
        // An empty list: no CPU, so no runtime for the threads.
        (&["-a", ""], "runtime"),
        (&["-t", "-1"], "thread count"),
        (&["-i", "9000000"], "bounds"),
    ] {
        let out = ours(args);
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {}", describe(&out));
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(stdout_of(&out).is_empty(), "{args:?}: {}", describe(&out));
    }
}

/// Runs cyclicdeadline can make here (intervals of 4 ms and more) print the
/// same lines as Debian's, measured numbers masked; each run's figures are
/// those of its duration.
#[test]
fn runs_print_cyclicdeadlines_lines() {
    let test = "runs_print_cyclicdeadlines_lines";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let vectors: [&[&str]; 7] = [
        &["-q", "-i", "4000", "-D", "1"],
        &["-t", "2", "-i", "4000", "-s", "1000", "-D", "1", "-q"],
        &["-i", "5000", "-D", "1"],
        &["-t", "3", "-i", "4000", "-D", "1", "-q"],
        // Lists of every CPU: "Using all CPUS", no cpuset (a list of some
        // CPUs only: some_cpus_only_run_as_cyclicdeadline_without_its_cpusets).
        &["-a", "0-1", "-i", "10000", "-D", "1", "-q"],
        &["-a", "1,0", "-t", "3", "-i", "10000", "-D", "1", "-q"],
        &["-i", "10000", "-D", "1", "-q", "-a"],
    ];
    if cpu_count() != 2 {
        latscope::testing::skip(test, "its lists name the CPUs of a 2-CPU machine");
        return;
    }
    let real = real_tool();
    for args in vectors {
        let out = ours(args);
        assert_code(&out, 0);
        let stdout = stdout_of(&out);
        let threads = t_lines(&stdout);
        let expected_threads = expected_thread_count(args);
        let last: Vec<_> = threads
            .iter()
            .rev()
            .take(expected_threads as usize)
            .collect();
        for (index, cycles, min, avg, max) in last {
            // Thread n's period is -i + n * -s; in 1 s it wakes about
            // 1 s / period times (the first sample at its start).
            let step: u64 = if args.contains(&"-s") { 1000 } else { 500 };
            let interval: u64 = args[args.iter().position(|a| *a == "-i").unwrap() + 1]
                .parse()
                .unwrap();
            let period = interval + index * step;
            let expected = 1_000_000 / period;
            // Never more than the periods of the run; fewer when the
            // machine is busy: a thread woken a period late carries the lag,
            // as rt-tests' timeline does (beside stress-ng: 226 of 250).
            // At least half: a run whose thread barely ran is a defect.
            assert!(
                *cycles * 2 >= expected && *cycles <= expected + 2,
                "{args:?}: thread {index}: {cycles} cycles, about {expected} expected\n{stdout}"
            );
            // Not min <= avg: a 0 us sample is no min to cyclicdeadline
            // (see json_is_rt_tests_and_reads_as_lkft_reads_it).
            assert!(
                0 <= *min && *min <= *max && 0 <= *avg && *avg <= *max,
                "{args:?}: {stdout}"
            );
        }
        let Some(tool) = real else {
            eprintln!("{test}: cyclicdeadline is not installed: layout not compared");
            continue;
        };
        let t = theirs(tool, args);
        assert_eq!(
            t.status.code(),
            Some(0),
            "cyclicdeadline {args:?}: {}",
            describe(&t)
        );
        assert_eq!(masked(&stdout), masked(&stdout_of(&t)), "{args:?}: stdout");
        assert_eq!(stderr_of(&out), stderr_of(&t), "{args:?}: stderr");
    }
}

/// cyclicdeadline's output with a list of some CPUs only, less what it
/// says of the cpusets it makes (latscope makes none): `Creating cpuset`,
/// `Removing`, `Moving N out of`, and the threads' tids that its
/// `cat .../my_cpuset/tasks` prints.
fn without_cpuset_lines(text: &str) -> String {
    let said =
        Regex::new(r"(Creating cpuset '[^']*'|Removing my_cpuset(_all)?|Moving \d+ out of \S+)\n")
            .unwrap();
    let tids = Regex::new(r"(?m)^\d+\n").unwrap();
    tids.replace_all(&said.replace_all(text, ""), "")
        .into_owned()
}

/// The affinity of each task of a process while it runs: (tid, CPUs,
/// scheduling policy), read from /proc.
fn tasks_of(pid: u32) -> Vec<(i32, String, i32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                .trim()
                .to_string();
            let sched = std::fs::read_to_string(t.path().join("sched")).ok()?;
            let policy = sched
                .lines()
                .find(|l| l.starts_with("policy"))?
                .rsplit(' ')
                .next()?
                .parse()
                .ok()?;
            Some((tid, cpus, policy))
        })
        .collect()
}

/// `-a` with some CPUs only: cyclicdeadline's lines (the golden captures of
/// tests/golden/cyclicdeadline/, measured numbers masked) without those of
/// its cpusets, exit 0; its deadline threads on the listed CPUs where the
/// kernel lets a deadline task stay there (they are a partition already),
/// else on every CPU with one line on stderr saying so; the thread that
/// prints (cyclicdeadline's main thread) on the other CPUs, as
/// cyclicdeadline's. The real tool is not run here: it moves every task of
/// the machine into cpusets of its own for the run.
#[test]
fn some_cpus_only_run_as_cyclicdeadline_without_its_cpusets() {
    let test = "some_cpus_only_run_as_cyclicdeadline_without_its_cpusets";
    if skip_without_deadline(test) {
        return;
    }
    if cpu_count() != 2 {
        latscope::testing::skip(test, "the captures are of a 2-CPU machine");
        return;
    }
    let _turn = turn();
    let main_thread = Regex::new(r"main thread (\d+)").unwrap();
    for (args, golden_file, listed) in [
        (
            &["-a", "1", "-t", "2", "-i", "10000", "-D", "1", "-q"][..],
            "affinity_1_t2_q.out",
            "1",
        ),
        (
            &["-t", "1", "-a", "0", "-i", "10000", "-D", "1"],
            "t1_affinity_0.out",
            "0",
        ),
    ] {
        let child = Command::new(bin())
            .arg("cyclicdeadline")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once every deadline thread holds its reservation.
        let started = Instant::now();
        let expected_threads = expected_thread_count(args) as usize;
        let mut tasks = tasks_of(child.id());
        while tasks.iter().filter(|t| t.2 == 6).count() < expected_threads
            && started.elapsed() < Duration::from_millis(900)
        {
            std::thread::sleep(Duration::from_millis(20));
            tasks = tasks_of(child.id());
        }
        let out = child.wait_with_output().unwrap();
        assert_code(&out, 0);
        let stderr = stderr_of(&out);
        let confined = stderr.is_empty();
        let deadline: Vec<&String> = tasks.iter().filter(|t| t.2 == 6).map(|t| &t.1).collect();
        assert_eq!(deadline.len(), expected_threads, "{args:?}: {tasks:?}");
        let everywhere = "0-1".to_string();
        let expected_cpus = if confined {
            listed
        } else {
            everywhere.as_str()
        };
        assert!(
            deadline.iter().all(|c| *c == expected_cpus),
            "{args:?}: {tasks:?}\n{stderr}"
        );
        if !confined {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "cyclicdeadline -a {listed}: the deadline threads run on CPUs 0-1 rather than on {listed} only"
                )) && stderr.contains("partition"),
                "{args:?}: {stderr}"
            );
        }
        let stdout = stdout_of(&out);
        let main_tid = main_thread
            .captures(&stdout)
            .unwrap_or_else(|| panic!("{args:?}: {}", describe(&out)))[1]
            .parse::<i32>()
            .unwrap();
        let other = if listed == "1" { "0" } else { "1" };
        assert!(
            tasks.iter().any(|t| t.0 == main_tid && t.1 == other),
            "{args:?}: main thread {main_tid}: {tasks:?}"
        );
        let expected = without_cpuset_lines(&golden("cyclicdeadline", golden_file));
        assert_eq!(masked(&stdout), masked(&expected), "{args:?}: stdout");
    }
}

/// The configured CPUs (cyclicdeadline's `cpu_count`).
fn cpu_count() -> usize {
    // SAFETY: sysconf has no side effects.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize
}

/// cyclicdeadline's thread count for ARGS: `-t`'s, else one per CPU with
/// `-a` (before any `-t`), else 1.
fn expected_thread_count(args: &[&str]) -> u64 {
    match args.iter().position(|a| *a == "-t") {
        Some(at) => args[at + 1].parse().unwrap(),
        None if args.contains(&"-a") => cpu_count() as u64,
        None => 1,
    }
}

/// `--json`: rt-tests' layout (Debian's file beside it, numbers masked),
/// and what LKFT's and KernelCI's parsers read: `num_threads`, each
/// thread's `min`, `avg`, `max`, and `return_code`.
/// latscope cyclicdeadline ARGS --json=FILE: the output, the file's text
/// and the file as JSON.
fn ours_with_json(args: &[&str]) -> (Output, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dl.json");
    let json_arg = format!("--json={}", path.display());
    let mut all = args.to_vec();
    all.push(&json_arg);
    let out = ours(&all);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out, text, parsed)
}

#[test]
fn json_is_rt_tests_and_reads_as_lkft_reads_it() {
    let test = "json_is_rt_tests_and_reads_as_lkft_reads_it";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let (out, text, parsed) = ours_with_json(&["-t", "2", "-i", "4000", "-D", "1", "-q"]);
    assert_code(&out, 0);
    // LKFT's reading: the thread count, then each thread's figures.
    assert_eq!(parsed["return_code"], 0, "{text}");
    assert_eq!(parsed["num_threads"], 2, "{text}");
    for i in 0..2 {
        let thread = &parsed["thread"][i.to_string()];
        let figure = |k: &str| {
            thread[k]
                .as_f64()
                .unwrap_or_else(|| panic!("thread {i} {k}: {text}"))
        };
        let (min, avg, max) = (figure("min"), figure("avg"), figure("max"));
        // Not min <= avg: cyclicdeadline keeps a sample of 0 us out of its
        // min (0 means "no min yet") but not out of the average, so a thread
        // woken at its period's start under load has an average below its min.
        assert!(
            0.0 <= min && min <= max && 0.0 <= avg && avg <= max,
            "{text}"
        );
        assert!(figure("cycles") > 100.0, "{text}");
    }
    let Some(tool) = real_tool() else {
        return latscope::testing::skip_part(
            test,
            "layout against the real tool",
            "cyclicdeadline (rt-tests) is not installed",
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let theirs_path = dir.path().join("real.json");
    let theirs_arg = format!("--json={}", theirs_path.display());
    let t = theirs(
        tool,
        &[
            "-t",
            "2",
            "-i",
            "4000",
            "-D",
            "1",
            "-q",
            theirs_arg.as_str(),
        ],
    );
    assert_eq!(t.status.code(), Some(0), "{}", describe(&t));
    let theirs_text = std::fs::read_to_string(&theirs_path).unwrap();
    let mask_json = |s: &str| {
        let s = Regex::new(r#"("(?:start_time|end_time|cmdline:)": )"[^"]*""#)
            .unwrap()
            .replace_all(s, "$1\"T\"")
            .into_owned();
        Regex::new(r#"("(?:min|max|avg|cycles)": )-?\d+(\.\d+)?"#)
            .unwrap()
            .replace_all(&s, "${1}N")
            .into_owned()
    };
    assert_eq!(mask_json(&text), mask_json(&theirs_text));
}

/// SIGTERM (as Ctrl-C) ends the run with cyclicdeadline's final lines and
/// exit 0.
#[test]
fn sigterm_prints_the_final_lines() {
    let test = "sigterm_prints_the_final_lines";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let child = std::process::Command::new(bin())
        .args(["cyclicdeadline", "-q", "-i", "4000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_code(&out, 0);
    let threads = t_lines(&stdout_of(&out));
    assert_eq!(threads.len(), 1, "{}", describe(&out));
    assert!(threads[0].1 > 50, "{}", describe(&out));
}

/// `-b USEC`: a latency above it ends the run; the break lines name the
/// thread and its maximum (a limit of 0 us: the first late wake-up).
#[test]
fn breaktrace_names_the_thread_and_value() {
    let test = "breaktrace_names_the_thread_and_value";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let out = ours(&["-b", "1", "-q", "-i", "4000", "-D", "5"]);
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let re = Regex::new(r"# Break thread: (\d+)\n# Break value: (\d+)\n$").unwrap();
    let c = re
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{}", describe(&out)));
    let value: i64 = c[2].parse().unwrap();
    let threads = t_lines(&stdout);
    assert!(value > 1 && threads[0].4 == value, "{stdout}");
}

/// The kernel's admission control: with another run holding 90 % of every
/// CPU's deadline bandwidth, cyclicdeadline's 60 % thread is refused, in one
/// line naming the limit, exit 1.
#[test]
fn a_full_bandwidth_refuses_in_one_line_naming_the_limit() {
    let test = "a_full_bandwidth_refuses_in_one_line_naming_the_limit";
    if skip_without_deadline(test) {
        return;
    }
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .unwrap_or(-1)
    };
    let (rt_runtime, rt_period) = (read("sched_rt_runtime_us"), read("sched_rt_period_us"));
    if rt_runtime < 0 || rt_period <= 0 {
        latscope::testing::skip(
            test,
            "deadline admission control is off (sched_rt_runtime_us = -1)",
        );
        return;
    }
    let _turn = turn();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let share = rt_runtime as f64 / rt_period as f64;
    let held_us = (share * 900.0) as i64;
    // What is left of the root domain's bandwidth, in CPUs: less than 0.6.
    if cpus * share * (1.0 - 0.9) >= 0.6 {
        latscope::testing::skip(test, &format!("{cpus} CPUs leave room for a 60 % thread"));
        return;
    }
    let mut holder = std::process::Command::new(bin())
        .args(["timer", "--policy", "deadline", "--runtime"])
        .arg(held_us.to_string())
        .args(["-p", "1000", "--smp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until its threads hold their reservations.
    let held = Instant::now();
    while !std::fs::read_dir(format!("/proc/{}/task", holder.id()))
        .map(|tasks| {
            tasks
                .filter_map(|t| t.ok())
                .filter(|t| {
                    let sched = std::fs::read_to_string(t.path().join("sched")).unwrap_or_default();
                    sched
                        .lines()
                        .any(|l| l.starts_with("policy") && l.trim_end().ends_with(" 6"))
                })
                .count() as f64
                >= cpus
        })
        .unwrap_or(false)
    {
        assert!(
            held.elapsed() < Duration::from_secs(20),
            "the holder never held its bandwidth"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = ours(&["-q", "-i", "4000", "-D", "1"]);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(holder.id() as libc::pid_t, libc::SIGTERM) };
    let _ = holder.wait();
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    let error_lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(error_lines.len(), 1, "{}", describe(&out));
    assert!(
        stderr.contains("SCHED_DEADLINE runtime 2400 us, deadline 4000 us, period 4000 us refused")
            && stderr.contains("/proc/sys/kernel/sched_rt_runtime_us")
            && stderr.contains("use fewer threads (-t)"),
        "{}",
        describe(&out)
    );
}

/// A thread that never woke before the end (its period of 2.01 s is beyond
/// `-D 1`, which thread 0 ends) has `"avg": 0.00` in the JSON, as the
/// signaltest drop-in writes it, where cyclicdeadline writes `-nan`.
#[test]
fn a_thread_without_samples_has_an_average_of_zero_in_the_json() {
    let test = "a_thread_without_samples_has_an_average_of_zero_in_the_json";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let (out, text, parsed) =
        ours_with_json(&["-t", "2", "-i", "10000", "-s", "2000000", "-D", "1", "-q"]);
    assert_code(&out, 0);
    let threads = t_lines(&stdout_of(&out));
    assert_eq!(threads.len(), 2, "{}", describe(&out));
    assert!(text.contains("\t \"avg\": 0.00\n"), "{text}");
    assert!(!text.contains("nan"), "{text}");
    let slow = &parsed["thread"]["1"];
    assert_eq!(slow["cycles"], 0, "{text}");
    assert_eq!(slow["avg"], 0.0, "{text}");
    assert!(
        parsed["thread"]["0"]["cycles"].as_u64().unwrap() > 50,
        "{text}"
    );
}
