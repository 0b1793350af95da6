//! `--on-threshold` and `--on-end` (rtla's actions) through the real binary:
//! every action (shell, signal to a provoked target and to the parent,
//! trace), `continue`, a shell command that hangs (killed at its timeout)
//! and one that fails (its status recorded), a signal to no process (a
//! failed action, the run goes on), and bad ACTION strings (exit 2).
//!
//! The crossing is provoked far above any machine's noise: `--max-latency 1`
//! (1 us) on a timer or message-queue run, whose wake-ups take more than a
//! microsecond everywhere; each test first asserts the report counts samples
//! above the limit, so a run without a crossing fails rather than passes.
//! What an action did is identified by identity (the pid, the file it wrote,
//! the series and CPU of the report), never by rank.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `latscope timer ARGS` (1 ms period, no warm-up: every second counts).
fn timer(args: &[&str], timeout_s: u64) -> assert_cmd::Command {
    let mut cmd = latscope(timeout_s);
    cmd.arg("timer")
        .args(["-p", "1000", "--warmup", "0", "-q"])
        .args(args)
        .args(mlock_args());
    cmd
}

/// Runs `cmd --json FILE` expecting `code`; the report.
fn report_of(cmd: assert_cmd::Command, dir: &Path, code: i32) -> (std::process::Output, Value) {
    run_with_report(cmd, &dir.join("run.json"), code)
}

/// The report's action runs.
fn action_runs(report: &Value) -> &Vec<Value> {
    array_of(&report["actions"]["runs"], "actions.runs")
}

/// The samples above `--max-latency` in every series: the crossing happened.
fn assert_crossed(report: &Value) {
    let above: u64 = series(report)
        .iter()
        .map(|s| u64_of(&s["above_limit"], "above_limit"))
        .sum();
    assert!(above > 0, "no sample above 1 us: nothing was provoked");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `--on-threshold shell`: runs once (no `continue`) with the crossing in
/// its environment, its status and first line in the report.
#[test]
fn a_shell_action_gets_the_crossing_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let command = format!(
        "shell,command=echo first line; echo \"$LATSCOPE_EVENT|$LATSCOPE_TEST|$LATSCOPE_SERIES|\
         $LATSCOPE_CPU|$LATSCOPE_LIMIT_US|$LATSCOPE_ABOVE_LIMIT|$LATSCOPE_PID\" >> {}",
        seen.display()
    );
    let (_, report) = report_of(
        timer(
            &["-T", "2", "--max-latency", "1", "--on-threshold", &command],
            60,
        ),
        dir.path(),
        3,
    );
    assert_crossed(&report);
    let runs = action_runs(&report);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run["trigger"], "threshold");
    assert_eq!(run["action"], "shell");
    assert_eq!(run["outcome"], "ok", "{run}");
    assert_eq!(run["exit_status"], "exit code 0");
    assert_eq!(run["output"], serde_json::json!(["first line"]));
    let s = &series(&report)[0];
    assert_eq!(run["series"], s["label"]);
    let cpu = u64_of(&s["cpus"][0], "cpus[0]");
    assert_eq!(u64_of(&run["cpu"], "cpu"), cpu);
    let text = read(&seen);
    let fields: Vec<&str> = text.trim_end().split('|').collect();
    assert_eq!(fields.len(), 7, "{text}");
    let label = s["label"].as_str().unwrap();
    assert_eq!(
        fields[..5],
        ["threshold", "timer", label, cpu.to_string().as_str(), "1"]
    );
    assert!(fields[5].parse::<u64>().unwrap() >= 1, "{text}");
    assert!(fields[6].parse::<u32>().unwrap() > 0, "{text}");
    assert_eq!(
        report["actions"]["on_threshold"],
        serde_json::json!([command])
    );
}

/// `continue`: a run whose every second crosses acts more than once, and
/// never twice in one window (second) of the test.
#[test]
fn continue_acts_again_at_most_once_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("acted");
    let command = format!(
        "shell,command=echo $LATSCOPE_ABOVE_LIMIT >> {}",
        log.display()
    );
    let (_, report) = report_of(
        timer(
            &[
                "-T",
                "3",
                "--max-latency",
                "1",
                "--on-threshold",
                &command,
                "--on-threshold",
                "continue",
            ],
            60,
        ),
        dir.path(),
        3,
    );
    assert_crossed(&report);
    let runs = action_runs(&report);
    let lines = read(&log).lines().count();
    assert_eq!(lines, runs.len(), "one line per action run");
    // A 3 s test has windows 0, 1, 2 and the partial one at its end.
    assert!((2..=4).contains(&runs.len()), "{runs:?}");
    // The counts grow: each run is a later crossing.
    let counts: Vec<u64> = read(&log).lines().map(|l| l.parse().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    let windows: Vec<u64> = runs
        .iter()
        .map(|r| u64_of(&r["window"], "window"))
        .collect();
    assert!(
        windows.windows(2).all(|w| w[0] < w[1]),
        "two actions in one window: {windows:?}"
    );
}

/// A target process that records SIGUSR1 into `file` and exits; ready (its
/// trap set) once `ready` exists.
fn signal_recorder(file: &Path, ready: &Path) -> std::process::Child {
    let script = format!(
        "trap 'echo USR1 > {}; exit 0' USR1; : > {}; while :; do sleep 0.05; done",
        file.display(),
        ready.display()
    );
    let child = std::process::Command::new("/bin/sh")
        .args(["-c", &script])
        .spawn()
        .expect("/bin/sh");
    let until = Instant::now() + Duration::from_secs(10);
    while !ready.exists() {
        assert!(Instant::now() < until, "the signal recorder did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits up to 10 s for `child` to end; kills it after that (no leak).
fn ended_within(child: &mut std::process::Child) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// `signal,num=10,pid=P` on a crossing reaches the process P, which says so.
#[test]
fn a_signal_action_reaches_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let (got, ready) = (dir.path().join("got"), dir.path().join("ready"));
    let mut target = signal_recorder(&got, &ready);
    let action = format!("signal,num=10,pid={}", target.id());
    let (_, report) = report_of(
        mq_timer_free_crossing(&["--on-threshold", &action]),
        dir.path(),
        3,
    );
    assert_crossed(&report);
    let ended = ended_within(&mut target);
    assert!(ended, "the target never got the signal");
    assert_eq!(read(&got).trim(), "USR1");
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "ok", "{run}");
    assert_eq!(run["detail"], format!("signal 10 to pid {}", target.id()));
    assert_eq!(run["test"], "mq");
    assert_eq!(run["series"], "pair 0");
}

/// `latscope mq` with a crossing of 1 us, 2000 one-way wake-ups: an IPC test
/// acts as the timer does.
fn mq_timer_free_crossing(extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = latscope(60);
    cmd.args(["mq", "-l", "2000", "-i", "200", "-q", "--max-latency", "1"])
        .args(extra)
        .args(mlock_args());
    cmd
}

/// `--on-end signal,num=10,pid=parent` reaches the shell that started
/// latscope, before latscope ends.
#[test]
fn an_end_signal_reaches_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got");
    let json = dir.path().join("run.json");
    // A trapped signal ends the shell's wait early (POSIX: status above
    // 128): it then waits again for latscope's real end.
    let script = format!(
        "trap 'echo USR1 >> {got}' USR1; \"$0\" timer -p 1000 --warmup 0 -q -T 1 {mlock} \
         --on-end signal,num=10,pid=parent --json {json} & p=$!; \
         wait $p; s=$?; if [ $s -gt 128 ]; then wait $p; s=$?; fi; exit $s",
        got = got.display(),
        json = json.display(),
        mlock = mlock_args().join(" ")
    );
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &script, bin().to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&out, 0);
    assert_eq!(read(&got).trim(), "USR1", "{}", describe(&out));
    let report = read_json(&json);
    let run = &action_runs(&report)[0];
    assert_eq!(run["trigger"], "end");
    assert_eq!(run["outcome"], "ok", "{run}");
    assert!(run["test"].is_null() && run["cpu"].is_null(), "{run}");
}

/// A signal to a pid no process can have: a failed action, said on
/// standard error; the run ends as it would have (exit 0).
#[test]
fn a_signal_to_no_process_fails_and_the_run_goes_on() {
    let pid_max: u64 = read(Path::new("/proc/sys/kernel/pid_max"))
        .trim()
        .parse()
        .unwrap();
    let missing = pid_max + 1;
    let dir = tempfile::tempdir().unwrap();
    let action = format!("signal,num=10,pid={missing}");
    let (out, report) = report_of(timer(&["-T", "1", "--on-end", &action], 60), dir.path(), 0);
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "failed", "{run}");
    let detail = run["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("signal 10 to pid {missing}: No such process")),
        "{detail}"
    );
    assert!(
        stderr_of(&out).contains(&format!("latscope: warning: --on-end signal: {detail}")),
        "{}",
        describe(&out)
    );
    assert!(u64_of(&series(&report)[0]["samples"], "samples") > 0);
}

/// A command that fails: its exit status and output are recorded.
#[test]
fn a_failing_shell_action_records_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = report_of(
        timer(
            &["-T", "1", "--on-end", "shell,command=echo oops >&2; exit 3"],
            60,
        ),
        dir.path(),
        0,
    );
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "failed", "{run}");
    assert_eq!(run["exit_status"], "exit code 3");
    assert_eq!(run["output"], serde_json::json!(["oops"]));
    assert_eq!(
        run["detail"],
        "'echo oops >&2; exit 3' ended with exit code 3"
    );
}

/// Whether process `pid` still exists (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

/// A command that hangs is ended with its process group at its timeout;
/// the run is held up no longer than that.
#[test]
fn a_hanging_shell_action_is_killed_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let child_pid = dir.path().join("child");
    let action = format!(
        "shell,timeout=1,command=echo started; sleep 60 & echo $! > {}; wait",
        child_pid.display()
    );
    let started = Instant::now();
    let (_, report) = report_of(timer(&["-T", "1", "--on-end", &action], 60), dir.path(), 0);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "the run took {took:?}");
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "timed_out", "{run}");
    // Ended with its process group: SIGTERM first (SIGKILL after a grace).
    assert_eq!(run["exit_status"], "signal 15");
    assert_eq!(
        run["group_ended"],
        "its process group (2 processes) ended with SIGTERM"
    );
    assert_eq!(run["output"], serde_json::json!(["started"]));
    let lasted = f64_of(&run["duration_s"], "duration_s");
    assert!((1.0..10.0).contains(&lasted), "{lasted}");
    // The command's own child went with it (the whole process group).
    let sleeper: u32 = read(&child_pid).trim().parse().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while alive(sleeper) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(sleeper),
        "sleep {sleeper} outlived its timed-out command"
    );
}

/// `trace,file=F` saves the crossing CPU's recent kernel trace, and the
/// trace instance is gone after the run.
#[test]
fn a_trace_action_saves_the_crossing_cpus_trace() {
    if !tracefs_usable("a_trace_action_saves_the_crossing_cpus_trace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace: PathBuf = dir.path().join("spike.txt");
    let pid_file = dir.path().join("pid");
    let (_, report) = report_of(
        timer(
            &[
                "-T",
                "2",
                "--max-latency",
                "1",
                "--on-threshold",
                &format!("trace,file={}", trace.display()),
                "--on-end",
                &format!("shell,command=echo $LATSCOPE_PID > {}", pid_file.display()),
            ],
            60,
        ),
        dir.path(),
        3,
    );
    assert_crossed(&report);
    let run = &action_runs(&report)[0];
    assert_eq!(run["action"], "trace");
    assert_eq!(run["outcome"], "ok", "{run}");
    let cpu = u64_of(&run["cpu"], "cpu");
    let text = read(&trace);
    assert!(
        text.starts_with("# tracer: nop"),
        "{}",
        evidence("trace", &text)
    );
    let on_cpu = format!("[{cpu:03}]");
    let events: Vec<&str> = text.lines().filter(|l| l.contains(": sched_")).collect();
    assert!(
        events.iter().any(|l| l.contains("sched_switch")),
        "{}",
        evidence("trace", &text)
    );
    assert!(
        events.iter().all(|l| l.contains(&on_cpu)),
        "an event of another CPU than {cpu}: {}",
        evidence("trace", &text)
    );
    let detail = run["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("CPU {cpu}'s recent trace (")),
        "{detail}"
    );
    let pid = read(&pid_file).trim().to_string();
    let leftover = std::fs::read_dir("/sys/kernel/tracing/instances")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(&format!("latscope-{pid}-")));
    assert_eq!(leftover, None, "the trace instance outlived the run");
}

/// Bad ACTION strings and rules: one line, exit 2, before measuring.
#[test]
fn bad_actions_are_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--on-threshold", "reboot"], "unknown action 'reboot'"),
        (
            &["--on-threshold", "signal,num=10"],
            "signal needs pid=PID or pid=parent",
        ),
        (&["--on-threshold", "signal,pid=1"], "signal needs num=N"),
        (
            &["--on-threshold", "signal,num=ten,pid=1"],
            "num=ten: a signal number",
        ),
        (&["--on-threshold", "shell"], "shell needs command=COMMAND"),
        (&["--on-end", "continue"], "--on-end continue:"),
        (&["--on-end", "shell,timeout=0,command=true"], "timeout=0"),
    ];
    for (extra, expected) in cases {
        let mut cmd = latscope(30);
        cmd.args(["timer", "-T", "1", "--max-latency", "5"])
            .args(*extra);
        let out = run(cmd);
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{}", describe(&out));
        assert!(stderr.contains(expected), "{extra:?}: {}", describe(&out));
        assert!(stdout_of(&out).is_empty(), "{}", describe(&out));
    }
    // A threshold action needs a threshold; the IPC tests say so too.
    let out = run(latscope(30).args(["mq", "-l", "10", "--on-threshold", "continue"]));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("give --max-latency USEC"),
        "{}",
        describe(&out)
    );
}

/// A trace action's file named by another output of the run, under any
/// spelling (the same name, `./`, `dir/..`, a link to it): a usage error,
/// exit 2, before measuring, as for any two outputs naming one file. Two
/// trace actions may share a file (each crossing replaces the trace anyway).
#[test]
fn a_trace_file_named_by_another_output_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("x.json"), "").unwrap();
    std::os::unix::fs::symlink(d.join("x.json"), d.join("link.json")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let trace = |file: String| format!("trace,file={file}");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "timer".into(),
                "--on-threshold".into(),
                trace(p("x.json")),
                "--json".into(),
                p("x.json"),
            ],
            "--json and --on-threshold trace,file= name the same file",
        ),
        (
            vec![
                "timer".into(),
                "--on-end".into(),
                trace(p("sub/../t.txt")),
                "--csv".into(),
                p("t.txt"),
            ],
            "--csv and --on-end trace,file= name the same file",
        ),
        (
            vec![
                "timer".into(),
                "--on-threshold".into(),
                trace(p("x.json")),
                "--json".into(),
                p("link.json"),
            ],
            "--json and --on-threshold trace,file= name the same file",
        ),
        (
            vec![
                "mq".into(),
                "-l".into(),
                "10".into(),
                "--on-end".into(),
                trace(p("m.json")),
                "--markdown".into(),
                p("./m.json"),
            ],
            "--markdown and --on-end trace,file= name the same file",
        ),
        (
            vec![
                "oslat".into(),
                "-D".into(),
                "1".into(),
                "-T".into(),
                "5".into(),
                "--on-threshold".into(),
                trace(p("o.json")),
                format!("--json={}", p("o.json")),
            ],
            "--json and --on-threshold trace,file= name the same file",
        ),
        (
            vec![
                "cyclictest".into(),
                "-D".into(),
                "1".into(),
                "-b".into(),
                "500".into(),
                "--on-threshold".into(),
                trace(p("h.txt")),
                format!("--histfile={}", p("./h.txt")),
            ],
            "--histfile and --on-threshold trace,file= name the same file",
        ),
        (
            vec![
                "signaltest".into(),
                "-D".into(),
                "1".into(),
                "-b".into(),
                "500".into(),
                "--on-end".into(),
                trace(p("s.json")),
                format!("--json={}", p("s.json")),
            ],
            "--json and --on-end trace,file= name the same file",
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = latscope(30);
        cmd.args(&args);
        if args[0] == "timer" {
            cmd.args(["-T", "1", "--max-latency", "5"]);
        } else if args[0] == "mq" {
            cmd.args(["--max-latency", "5"]);
        }
        let out = run(cmd);
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert!(stderr.contains(expected), "{args:?}: {}", describe(&out));
        assert_eq!(
            stderr.lines().filter(|l| l.contains("latscope")).count(),
            1,
            "{}",
            describe(&out)
        );
    }
    assert_eq!(
        std::fs::read(d.join("x.json")).unwrap(),
        b"",
        "a refused run wrote the file"
    );
    // Two trace actions on one file: allowed (the run is no usage error).
    let out = run(timer(
        &[
            "-T",
            "1",
            "--max-latency",
            "1",
            "--on-threshold",
            &trace(p("one.txt")),
            "--on-end",
            &trace(p("./one.txt")),
        ],
        60,
    ));
    assert_ne!(out.status.code(), Some(2), "{}", describe(&out));
}

/// A trace file name with a right-to-left override (and an escape) goes out
/// escaped in the "saved to" line, on the console and in the report.
#[test]
fn a_trace_file_name_is_escaped_where_it_is_shown() {
    if !tracefs_usable("a_trace_file_name_is_escaped_where_it_is_shown") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("spike\u{202e}txt.exe\u{1b}[2J");
    let (out, report) = report_of(
        timer(
            &[
                "-T",
                "1",
                "--max-latency",
                "1",
                "--on-threshold",
                &format!("trace,file={}", trace.display()),
            ],
            60,
        ),
        dir.path(),
        3,
    );
    assert_crossed(&report);
    assert!(trace.exists(), "the trace was not saved");
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "ok", "{run}");
    let detail = run["detail"].as_str().unwrap();
    assert!(
        detail.contains("saved to ") && detail.ends_with("spike\\u{202e}txt.exe\\u{1b}[2J"),
        "{detail}"
    );
    for (what, text) in [
        ("detail", detail.to_string()),
        ("stdout", stdout_of(&out)),
        ("stderr", stderr_of(&out)),
    ] {
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{1b}'),
            "{what} carries the raw controls: {text:?}"
        );
    }
    assert!(
        stdout_of(&out).contains("spike\\u{202e}txt.exe\\u{1b}[2J"),
        "{}",
        describe(&out)
    );
}

/// `--on-threshold shell` 20 times over with `continue` on a threshold every
/// sample crosses: at least 100 commands start during a 6 s timer run, and
/// the timer thread takes no page fault (a fork of the mlocked process
/// made its pages copy-on-write: Msw 0 -> 861 in 4 s before). Involuntary
/// switches are the machine's (another real-time task), not the actions':
/// Msw holds nothing else.
#[test]
fn shell_actions_that_fire_100_times_leave_msw_at_0() {
    if !can_mlock() {
        latscope::testing::skip(
            "shell_actions_that_fire_100_times_leave_msw_at_0",
            "memory cannot be locked here: no fault-free timer thread to compare with",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["-T", "6", "--max-latency", "1"];
    for _ in 0..20 {
        args.extend(["--on-threshold", "shell,command=true"]);
    }
    args.extend(["--on-threshold", "continue"]);
    let (_, report) = report_of(timer(&args, 120), dir.path(), 3);
    assert_crossed(&report);
    let runs = action_runs(&report);
    let ok = runs.iter().filter(|r| r["outcome"] == "ok").count();
    assert!(ok >= 100, "only {ok} commands ran: {runs:?}");
    let thread = &series(&report)[0]["detail"];
    assert_eq!(thread["kind"], "timer_thread", "{thread}");
    let faults = u64_of(&thread["minor_faults"], "minor_faults")
        + u64_of(&thread["major_faults"], "major_faults");
    assert_eq!(
        faults, 0,
        "the timer thread faulted beside {ok} commands: {thread}"
    );
    assert_eq!(
        u64_of(&thread["msw"], "msw"),
        u64_of(&thread["involuntary_switches"], "involuntary_switches"),
        "{thread}"
    );
}

/// Peak of `Shmem + the process's resident set` (KiB) sampled while `pid`
/// runs: the memory a command's output costs, in a memory file or in
/// latscope itself.
fn peak_memory_kib(pid: u32, child: &mut std::process::Child) -> u64 {
    let kib = |text: &str, key: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    let base = kib(&read(Path::new("/proc/meminfo")), "Shmem:");
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        let shmem = kib(&read(Path::new("/proc/meminfo")), "Shmem:").saturating_sub(base);
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map(|s| kib(&s, "VmRSS:"))
            .unwrap_or(0);
        peak = peak.max(shmem + rss);
        std::thread::sleep(Duration::from_millis(20));
    }
    peak
}

/// `shell,timeout=2,command=yes`: gigabytes of output, of which the first
/// lines are kept and the rest counted; the memory stays bounded (the
/// output went to an unbounded memory file before: 1.6 GB in 1 s).
#[test]
fn a_shell_actions_output_is_bounded_and_the_rest_counted() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["timer", "-p", "1000", "--warmup", "0", "-q", "-T", "1"])
        .args(["--on-end", "shell,timeout=2,command=yes", "--json"])
        .arg(&json)
        .args(mlock_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let peak = peak_memory_kib(child.id(), &mut child);
    assert!(child.wait().unwrap().success());
    assert!(peak < 256 * 1024, "peak memory {peak} KiB");
    let report = read_json(&json);
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "timed_out", "{run}");
    assert_eq!(run["output"], serde_json::json!(vec!["y"; 10]));
    let bytes = u64_of(&run["output_bytes_dropped"], "output_bytes_dropped");
    let lines = u64_of(&run["output_lines_dropped"], "output_lines_dropped");
    assert!(bytes > 1 << 20, "yes wrote only {bytes} bytes more");
    // Every line is "y\n" (the last one perhaps cut by the end).
    assert!(
        bytes.abs_diff(2 * lines) <= 1,
        "{bytes} bytes, {lines} lines"
    );
    let detail = run["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "({lines} lines) of output beyond its first 10 lines not kept"
        )),
        "{detail}"
    );
}

/// A command's background child (`sleep 100 &`) is ended with the
/// command's process group when its shell ends, and the report says so.
#[test]
fn a_shell_actions_background_children_end_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("sleeper");
    let action = format!("shell,command=sleep 100 & echo $! > {}", pid_file.display());
    let (out, report) = report_of(timer(&["-T", "1", "--on-end", &action], 60), dir.path(), 0);
    let sleeper: u32 = read(&pid_file).trim().parse().unwrap();
    let gone = !alive(sleeper);
    if !gone {
        // SAFETY: a process this test's command started; no leak either way.
        unsafe { libc::kill(sleeper as i32, libc::SIGKILL) };
    }
    assert!(gone, "sleep {sleeper} outlived latscope's action");
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "ok", "{run}");
    assert_eq!(
        run["group_ended"],
        "1 process it left running ended with SIGTERM"
    );
    assert!(
        unwrapped(&stdout_of(&out)).contains("1 process it left running ended with SIGTERM"),
        "{}",
        describe(&out)
    );
}

/// latscope started by an intermediate process that exits at once, under a
/// subreaper that adopts it: `--on-end signal,num=10,pid=parent` sends
/// nothing (the subreaper is not the parent latscope started under; it got
/// SIGUSR1 and died before), and the report says the parent is gone.
#[test]
fn a_signal_to_a_parent_that_is_gone_reaches_no_one() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let (got, pid_file, json) = (
        dir.path().join("got"),
        dir.path().join("pid"),
        dir.path().join("run.json"),
    );
    // The intermediate outlives latscope's start (its exec, then a margin
    // far above the microseconds to `main`), so that it is the parent
    // latscope started under; then it exits, long before the end action.
    let inner = format!(
        "\"$0\" timer -p 1000 --warmup 0 -q -T 2 {mlock} --on-end signal,num=10,pid=parent \
         --json {json} >/dev/null & echo $! > {pid}; \
         while [ \"$(readlink /proc/$!/exe)\" != \"$0\" ]; do sleep 0.01; done; sleep 0.3; exit 0",
        mlock = mlock_args().join(" "),
        json = json.display(),
        pid = pid_file.display()
    );
    // The subreaper records a SIGUSR1 and waits until the adopted latscope
    // has ended (a zombie of its own counts as ended).
    let script = format!(
        "trap 'echo USR1 >> {got}' USR1; sh -c '{inner}' \"$0\"; p=$(cat {pid}); \
         while [ -d /proc/$p ] && ! grep -q ') [ZX] ' /proc/$p/stat; do sleep 0.05; done; exit 0",
        got = got.display(),
        pid = pid_file.display(),
        inner = inner.replace('\'', "'\\''")
    );
    // As /proc/PID/exe names it.
    let binary = std::fs::canonicalize(bin()).unwrap();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", &script, binary.to_str().unwrap()]);
    // SAFETY: prctl only, between fork and exec; the subreaper flag
    // survives exec, so the shell adopts latscope.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run_std_with_timeout(cmd, Duration::from_secs(60));
    assert_code(&out, 0);
    assert!(
        !got.exists(),
        "the subreaper that adopted latscope got the parent's signal: {}",
        describe(&out)
    );
    let report = read_json(&json);
    let run = &action_runs(&report)[0];
    assert_eq!(run["outcome"], "failed", "{run}");
    let detail = run["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("signal 10 to the parent: the process latscope started under (pid ")
            && detail.ends_with(": not sent"),
        "{detail}"
    );
}
