//! `--policy deadline` through the real binary: the timer, an IPC test and
//! noise run as SCHED_DEADLINE tasks with the reservation asked (read back
//! from the kernel with `sched_getattr` on the running threads), the JSON
//! and the console say so, a deadline no wake-up can meet is counted as
//! missed, the kernel's admission control refuses a reservation that does
//! not fit beside another run's (one line naming the limit, exit 1), and
//! impossible reservations are usage errors (exit 2).
//!
//! Root (or CAP_SYS_NICE) is needed; the tests say why they skip without.

use crate::common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The runs of this file reserve deadline bandwidth, as the other
/// deadline tests do: one at a time, so that the refusal test alone fills it.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    crate::common::turns::realtime_turn()
}

/// SCHED_DEADLINE needs root or CAP_SYS_NICE (checked as the kernel sees
/// it: FIFO stands for the same privilege).
fn skip_without_deadline(test: &str) -> bool {
    skip_without_realtime(test)
}

/// The kernel's `struct sched_attr` (its first version).
#[repr(C)]
#[derive(Default, Debug)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

const SCHED_DEADLINE: u32 = 6;

/// The scheduling attributes of thread `tid`, as the kernel has them.
fn sched_attr_of(tid: i32) -> Option<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most `size` bytes into `attr`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0,
        )
    };
    (rc == 0).then_some(attr)
}

/// The threads of process `pid` that are SCHED_DEADLINE now, with their
/// attributes.
fn deadline_threads(pid: u32) -> Vec<SchedAttr> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(sched_attr_of)
        .filter(|a| a.policy == SCHED_DEADLINE)
        .collect()
}

/// Waits until `child` has `want` deadline threads (its setup is done).
fn wait_deadline_threads(child: &mut Child, want: usize) -> Vec<SchedAttr> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let threads = deadline_threads(child.id());
        if threads.len() >= want {
            return threads;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut stderr);
            }
            panic!("latscope ended before its threads were deadline ones: {status:?}\n{stderr}");
        }
        assert!(
            Instant::now() < deadline,
            "pid {} has {} deadline threads, expected {want}",
            child.id(),
            threads.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .args(mlock_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn latscope")
}

/// `latscope ARGS --json FILE`: the output and the report.
fn with_report(args: &[&str], code: i32) -> (std::process::Output, Value) {
    let (_dir, file) = temp_file("report.json");
    let mut cmd = latscope(60);
    cmd.args(args).args(mlock_args());
    run_with_report(cmd, &file, code)
}

/// The report's `deadline` entries.
fn deadline_entries(report: &Value) -> &Vec<Value> {
    report["deadline"]
        .as_array()
        .unwrap_or_else(|| panic!("no deadline entries: {report}"))
}

#[test]
fn a_deadline_timer_run_has_the_reservation_asked_and_says_so() {
    if skip_without_deadline("a_deadline_timer_run_has_the_reservation_asked_and_says_so") {
        return;
    }
    let _turn = turn();
    // The kernel's view of the running thread: SCHED_DEADLINE with exactly
    // this reservation, overruns signalled (SCHED_FLAG_DL_OVERRUN).
    let mut child = spawn(&[
        "timer",
        "--policy",
        "deadline",
        "--runtime",
        "200",
        "--deadline",
        "800us",
        "-p",
        "1000",
        "-T",
        "2",
    ]);
    let threads = wait_deadline_threads(&mut child, 1);
    assert_eq!(threads.len(), 1, "{threads:?}");
    let t = &threads[0];
    assert_eq!(
        (t.runtime, t.deadline, t.period, t.flags & 0x04),
        (200_000, 800_000, 1_000_000, 0x04),
        "{t:?}"
    );
    assert_eq!(child.wait().expect("wait").code(), Some(0));

    let (out, report) = with_report(
        &args("timer --policy deadline --runtime 200 --deadline 800us -p 1000 -T 2"),
        0,
    );
    let test = &report["tests"][0];
    assert_eq!(test["config"]["policy"], "deadline");
    assert_eq!(test["config"]["priority"], 0);
    let s = &series(&report)[0];
    assert_eq!(
        (&s["policy"], &s["priority"]),
        (&"deadline".into(), &0.into())
    );
    assert_eq!(s["pinned"], false, "a deadline thread is not pinned");
    let samples = u64_of(&s["samples"], "samples");
    assert!(samples > 1000, "{s}");
    let d = &deadline_entries(&report)[0];
    assert_eq!(
        (&d["test"], &d["mode"], &d["series"]),
        (&"timer".into(), &"user".into(), &"CPU 0".into()),
        "{d}"
    );
    assert_eq!(
        (&d["runtime_ns"], &d["deadline_ns"], &d["period_ns"]),
        (&200_000.into(), &800_000.into(), &1_000_000.into())
    );
    let throttled = u64_of(&d["throttled_periods"], "throttled_periods");
    assert!(u64_of(&s["overruns"], "overruns") >= throttled, "{s}\n{d}");
    // 800 us to finish a wake-up that takes microseconds: nearly all meet it.
    assert!(
        u64_of(&d["missed_deadlines"], "missed") * 2 < samples,
        "{d}"
    );
    let stdout = unwrapped(&stdout_of(&out));
    assert!(
        stdout.contains("deadline: timer CPU 0: runtime "),
        "{}",
        describe(&out)
    );
}

#[test]
fn a_deadline_no_wake_up_can_meet_is_missed_by_every_sample() {
    if skip_without_deadline("a_deadline_no_wake_up_can_meet_is_missed_by_every_sample") {
        return;
    }
    let _turn = turn();
    // 1.1 us after the expiry: the timer interrupt, the switch to the thread
    // and its clock read take longer on any machine. (A 1 us runtime gets
    // the thread throttled for most periods: few samples, all late.)
    let (_, report) = with_report(
        &args("timer --policy deadline --runtime 1024ns --deadline 1100ns -p 1000 -T 1"),
        0,
    );
    let samples = u64_of(&series(&report)[0]["samples"], "samples");
    let d = &deadline_entries(&report)[0];
    let missed = u64_of(&d["missed_deadlines"], "missed");
    assert!(samples >= 5, "{report}");
    assert!(
        missed * 10 >= samples * 9,
        "{missed} of {samples} missed: {d}"
    );
}

#[test]
fn an_ipc_test_and_noise_run_as_deadline_tasks() {
    if skip_without_deadline("an_ipc_test_and_noise_run_as_deadline_tasks") {
        return;
    }
    let _turn = turn();
    // Both tasks of a pair get the reservation; the period is the interval.
    let mut child = spawn(&[
        "pipe",
        "--policy",
        "deadline",
        "--runtime",
        "50",
        "-i",
        "2000",
        "-D",
        "2",
    ]);
    let threads = wait_deadline_threads(&mut child, 2);
    for t in &threads {
        assert_eq!(
            (t.runtime, t.deadline, t.period),
            (50_000, 2_000_000, 2_000_000)
        );
    }
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    let (_, report) = with_report(
        &args("pipe --policy deadline --runtime 50 -i 2000 -l 300"),
        0,
    );
    let s = &series(&report)[0];
    assert_eq!(
        (&s["policy"], &s["pinned"]),
        (&"deadline".into(), &false.into())
    );
    assert_eq!(u64_of(&s["samples"], "samples"), 300);
    let d = &deadline_entries(&report)[0];
    assert_eq!(
        (&d["test"], &d["series"]),
        (&"pipe".into(), &"pair 0".into())
    );
    assert_eq!(d["period_ns"], 2_000_000);

    // noise: --runtime is the reservation; the spinner stops 0.3 ms short.
    let (_, report) = with_report(
        &args("noise --cpus 0 --policy deadline --runtime 2ms --period 10ms -D 1"),
        0,
    );
    let test = &report["tests"][0];
    assert_eq!(test["config"]["policy"], "deadline");
    assert_eq!(test["config"]["detail"]["runtime_ns"], 1_700_000, "{test}");
    let d = &deadline_entries(&report)[0];
    assert_eq!(
        (&d["test"], &d["series"], &d["runtime_ns"], &d["period_ns"]),
        (
            &"noise".into(),
            &"CPU 0".into(),
            &2_000_000.into(),
            &10_000_000.into()
        )
    );
}

/// `sched_rt_runtime_us` and `sched_rt_period_us`.
fn rt_bandwidth() -> (i64, i64) {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .unwrap_or(-1)
    };
    (read("sched_rt_runtime_us"), read("sched_rt_period_us"))
}

/// A first run holding 90 % of a CPU's deadline share on every CPU (one
/// timer thread per CPU, 1 ms periods), and a runtime (us, per 1 ms) that
/// no longer fits beside it; None (the skip said) where that cannot be set
/// up here.
fn hold_most_bandwidth(test: &str) -> Option<(Child, i64)> {
    let (rt_runtime, rt_period) = rt_bandwidth();
    if rt_runtime < 0 || rt_period <= 0 {
        latscope::testing::skip(
            test,
            "deadline admission control is off (sched_rt_runtime_us = -1)",
        );
        return None;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
    let share = rt_runtime as f64 / rt_period as f64;
    let first_us = (share * 900.0) as i64;
    let left_us = (cpus as f64 * share * 1000.0) as i64 - cpus * first_us;
    let second_us = left_us + 100;
    if second_us > 1000 {
        latscope::testing::skip(
            test,
            &format!("{cpus} CPUs leave more than one period's bandwidth free"),
        );
        return None;
    }
    let first_runtime = first_us.to_string();
    let mut holder = spawn(&[
        "timer",
        "--policy",
        "deadline",
        "--runtime",
        &first_runtime,
        "-p",
        "1000",
        "--smp",
    ]);
    wait_deadline_threads(&mut holder, cpus as usize);
    Some((holder, second_us))
}

/// Ends the holder of `hold_most_bandwidth`: it must end normally.
fn release(mut holder: Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(holder.id() as libc::pid_t, libc::SIGTERM) };
    let held = holder.wait().expect("wait");
    assert_eq!(held.code(), Some(0), "the first run ends normally");
}

/// The refusal's line for a runtime of `runtime_us` per `period_us`.
fn full_bandwidth_line(runtime_us: i64, period_us: i64) -> String {
    format!(
        "SCHED_DEADLINE runtime {runtime_us} us, deadline {period_us} us, period {period_us} us refused: the root domain's deadline bandwidth is full"
    )
}

#[test]
fn a_reservation_beyond_the_bandwidth_left_is_refused_in_one_line() {
    let test = "a_reservation_beyond_the_bandwidth_left_is_refused_in_one_line";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let Some((holder, second_us)) = hold_most_bandwidth(test) else {
        return;
    };
    let second_runtime = second_us.to_string();
    let out = run(latscope(60).args([
        "timer",
        "--policy",
        "deadline",
        "--runtime",
        &second_runtime,
        "-p",
        "1000",
        "-T",
        "1",
    ]));
    release(holder);
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{}", describe(&out));
    assert!(
        stderr.contains(&full_bandwidth_line(second_us, 1000))
            && stderr.contains("/proc/sys/kernel/sched_rt_runtime_us"),
        "{}",
        describe(&out)
    );
}

/// `ipc --policy deadline` on a full bandwidth: the first test's refusal
/// stops the run with that one line and exit 1, as `timer` does, instead of
/// running every other primitive to the same refusal with 0 samples
/// (issue 40, item 9).
#[test]
fn an_ipc_run_refused_its_reservation_stops_at_the_first_test() {
    let test = "an_ipc_run_refused_its_reservation_stops_at_the_first_test";
    if skip_without_deadline(test) {
        return;
    }
    let _turn = turn();
    let Some((holder, second_us)) = hold_most_bandwidth(test) else {
        return;
    };
    let (_dir, file) = temp_file("ipc-refused.json");
    let second_runtime = second_us.to_string();
    let started = Instant::now();
    let out = run(latscope(60)
        .args([
            "ipc",
            "--policy",
            "deadline",
            "--runtime",
            &second_runtime,
            "-i",
            "1000",
            "-D",
            "1",
            "-q",
            "--json",
        ])
        .arg(&file));
    let took = started.elapsed();
    release(holder);
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    let refusals: Vec<&str> = stderr.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(refusals.len(), 1, "{}", describe(&out));
    // The pairs reserve at once, over their own intervals (1000 us, then
    // 1500 us with -d's default 500): neither fits, and whichever asks first
    // is the one refusal (pair 1's, at 1500 us, beside stress-ng in the
    // 11-29 trial s1).
    assert!(
        [1000, 1500]
            .iter()
            .any(|&period_us| refusals[0].contains(&full_bandwidth_line(second_us, period_us))),
        "{}",
        describe(&out)
    );
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("latscope: error"))
            .count(),
        1,
        "one error line\n{}",
        describe(&out)
    );
    // Nine primitives of 1 s would take 9 s; the refusal stops at once.
    assert!(
        took < Duration::from_secs(5),
        "took {took:?}\n{}",
        describe(&out)
    );
}

#[test]
fn impossible_reservations_are_usage_errors() {
    for (words, expected) in [
        (
            "timer --policy deadline --runtime 2000 -p 1000",
            "--runtime 2000 us is longer than the deadline (1000 us)",
        ),
        (
            "timer --policy deadline --runtime 100 --deadline 2000 -p 1000",
            "--deadline 2000 us is longer than the period (1000 us)",
        ),
        (
            "timer --policy deadline -p 1000",
            "--policy deadline needs --runtime TIME",
        ),
        (
            "timer --runtime 100 -p 1000",
            "--runtime belongs to a SCHED_DEADLINE reservation: add --policy deadline",
        ),
        (
            "timer --policy deadline --runtime 100 -P 5",
            "--policy deadline takes no priority",
        ),
        (
            "noise --cpus 0 --policy deadline --runtime 1ms --period 5s",
            "a deadline period of 5000000 us is outside the kernel's bounds",
        ),
        (
            "pipe --policy deadline --runtime 10 -i 0",
            "--policy deadline reserves CPU time in every period",
        ),
        (
            "pipe --policy deadline --runtime 10 --cross-cpu",
            "--cross-cpu pins the tasks of a pair",
        ),
        (
            "noise --cpus 0 --policy fifo --deadline 5ms",
            "--deadline belongs to a SCHED_DEADLINE reservation",
        ),
    ] {
        let out = run(latscope(30).args(args(words)));
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{words}: {}", describe(&out));
        assert!(stderr.contains(expected), "{words}: {}", describe(&out));
    }
}
