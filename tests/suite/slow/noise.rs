//! `latscope noise` through the real binary: the JSON report's noise
//! figures and their consistency, the console table, bad input, and a
//! provoked interruption (a bounded SCHED_FIFO thread of known length on
//! the measured CPU) measured and named as the cause. Runs are short
//! (1-2 s) and at SCHED_OTHER unless the test is about a real-time task.

use crate::common::*;
use serde_json::Value;
use std::time::Duration;

/// The tests of this file measure the same CPU, and one of them runs a
/// real-time spinner there: they take turns with each other and with the
/// spike tests, so that none measures another.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::common::turns::realtime_turn()
}

fn noise(args: &[&str], timeout_s: u64) -> assert_cmd::Command {
    let mut cmd = latscope(timeout_s);
    cmd.arg("noise").args(args).args(mlock_args());
    cmd
}

fn noise_json(args: &[&str], code: i32) -> (std::process::Output, Value) {
    let (_dir, file) = temp_file("noise.json");
    run_with_report(noise(args, 60), &file, code)
}

#[test]
fn a_short_run_gives_a_consistent_report() {
    let _turn = serial();
    let cpu = measured_cpu().to_string();
    let (out, report) = noise_json(&["--cpus", &cpu, "-D", "1", "-q"], 0);
    let stdout = stdout_of(&out);
    assert!(stdout.starts_with("noise (OS noise"), "{}", describe(&out));
    assert!(stdout.contains("Interruptions"), "{}", describe(&out));
    let t = &report["tests"][0];
    assert_eq!(t["test"], "noise");
    assert_eq!(t["end_reason"], "duration_elapsed");
    let config = &t["config"]["detail"];
    assert_eq!(config["kind"], "noise");
    assert_eq!(config["cpus_from"], "named");
    assert_eq!(config["threshold_ns"], 1000);
    assert_eq!(config["runtime_ns"], config["period_ns"]);
    assert_eq!(t["config"]["policy"], "other");
    let s = &series(&report)[0];
    assert_eq!(s["cpus"][0], measured_cpu());
    let d = &s["detail"];
    assert_eq!(d["kind"], "noise_cpu");
    let measured = u64_of(&d["measured_ns"], "measured_ns");
    let noise_ns = u64_of(&d["noise_ns"], "noise_ns");
    let loops = u64_of(&d["loops"], "loops");
    // One second of spinning: far more than a tenth of it measured, and
    // never more than the run itself took (both bounds far from the value).
    assert!(
        (100_000_000..=30_000_000_000).contains(&measured),
        "measured {measured}"
    );
    assert!(noise_ns <= measured, "noise {noise_ns} of {measured}");
    assert!(loops > 1000, "only {loops} clock reads in a second");
    let share = f64_of(&d["noise_percent"], "noise_percent");
    let expected = noise_ns as f64 * 100.0 / measured as f64;
    assert!((share - expected).abs() < 1e-6, "{share} vs {expected}");
    let samples = u64_of(&s["samples"], "samples");
    // Every interruption is a sample of the series, above the threshold; the
    // per-second windows hold them all, and the series' max is the largest.
    let windows = array_of(&s["per_second"], "per_second");
    let in_windows: u64 = windows
        .iter()
        .map(|w| u64_of(&w["samples"], "window samples"))
        .sum();
    assert_eq!(in_windows, samples, "{}", evidence("json", &s.to_string()));
    if samples > 0 {
        assert!(i64_of(&s["min_ns"], "min_ns") > 1000);
        let max = i64_of(&s["max_ns"], "max_ns");
        let window_max = windows.iter().map(|w| i64_of(&w["max_ns"], "max")).max();
        assert_eq!(window_max, Some(max));
        let window_noise: f64 = windows
            .iter()
            .map(|w| f64_of(&w["avg_ns"], "avg") * u64_of(&w["samples"], "n") as f64)
            .sum();
        assert!(
            (window_noise - noise_ns as f64).abs() <= 1.0 + noise_ns as f64 * 1e-9,
            "{window_noise} vs {noise_ns}"
        );
    } else {
        assert_eq!(noise_ns, 0);
    }
}

/// A 2-second run has two windows, not a third of the few interruptions
/// after its second second: their samples fold into the second window, so
/// the per-second series (and the plots drawn from it) end at 2 s.
#[test]
fn a_two_second_run_has_two_windows_and_keeps_every_sample() {
    let _turn = serial();
    let cpu = measured_cpu().to_string();
    let (out, report) = noise_json(&["--cpus", &cpu, "-D", "2", "-q"], 0);
    let s = &series(&report)[0];
    let windows = array_of(&s["per_second"], "per_second");
    assert!(
        windows.iter().all(|w| u64_of(&w["second"], "second") < 2),
        "{}",
        evidence("per_second", &s["per_second"].to_string())
    );
    let in_windows: u64 = windows
        .iter()
        .map(|w| u64_of(&w["samples"], "samples"))
        .sum();
    assert_eq!(
        in_windows,
        u64_of(&s["samples"], "samples"),
        "{}",
        describe(&out)
    );
}

#[test]
fn the_duty_cycle_spins_only_its_runtime() {
    let _turn = serial();
    let cpu = measured_cpu().to_string();
    let (_, report) = noise_json(
        &[
            "--cpus",
            &cpu,
            "-D",
            "2",
            "-q",
            "--runtime",
            "100ms",
            "--period",
            "1s",
        ],
        0,
    );
    let d = &series(&report)[0]["detail"];
    let measured = u64_of(&d["measured_ns"], "measured_ns");
    // Two periods of 100 ms spinning: 200 ms, far from the 2 s of the run
    // (a late wake-up from the off time only shortens it; a spinner kept
    // off its CPU by other work at the end of a stretch lengthens it, by
    // far less than the 1.3 s of margin).
    assert!(
        (50_000_000..=1_500_000_000).contains(&measured),
        "measured {measured} ns: {}",
        evidence("json", &d.to_string())
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for line in [
        "--threshold 0",
        "--threshold 2s",
        "--runtime 2s --period 1s",
        "--cpus 1-0",
        "-D x",
        "-p 100",
    ] {
        let out = run(noise(&args(line), 10));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(err.starts_with("latscope: error: "), "{line}: {err}");
    }
}

#[test]
fn a_realtime_spinner_needs_named_or_isolated_cpus() {
    let _turn = serial();
    let isolated = std::fs::read_to_string("/sys/devices/system/cpu/isolated").unwrap_or_default();
    if !isolated.trim().is_empty() {
        latscope::testing::skip(
            "slow::noise::a_realtime_spinner_needs_named_or_isolated_cpus",
            "this machine has isolated CPUs, the default would be them",
        );
        return;
    }
    let out = run(noise(&args("--policy fifo -D 1"), 10));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("only on CPUs named with --cpus or isolated ones"),
        "{}",
        describe(&out)
    );
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// `latscope noise --cpus CPU -q ARGS --json FILE` started, once its
/// spinner on `cpu` has run (waits up to 30 s: a busy machine starts slowly).
fn noise_spinning(cpu: usize, args: &[&str], file: &std::path::Path) -> Spawned {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["noise", "--cpus", &cpu.to_string(), "-q"])
        .args(args)
        .args(mlock_args())
        .arg("--json")
        .arg(file);
    let spawned = spawn_std(&mut cmd);
    let pid = spawned.child.id();
    let mut waited = 0;
    while spinner_running(pid, cpu).is_none() {
        assert!(waited < 3000, "the spinner never ran");
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    }
    spawned
}

/// The spinning thread of `cpu` in latscope process `pid` has run (it has
/// CPU time): its id, once it has.
fn spinner_running(pid: u32, cpu: usize) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != format!("noise-{cpu}") {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        // utime and stime: fields 14 and 15, counted after the command name.
        let after_name = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        if ticks > 0 {
            return task.file_name().to_str()?.parse().ok();
        }
    }
    None
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid output pointer; the calling thread's CPU-time clock.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Takes `cpu` at SCHED_FIFO for `length_ns` of clock time (spinning) in a
/// thread of this test; returns its thread id and the CPU time it got
/// meanwhile: its own time on the CPU, whatever else of higher priority
/// (other real-time work on a shared machine) took some of the stretch.
/// Spins `length_ns` on `cpu` at SCHED_FIFO 10 from a new thread: its tid,
/// the wall time it spun (from its first clock read on `cpu` to its last)
/// and its CPU time over the same stretch.
fn provoke(cpu: usize, length_ns: u64) -> Provoked {
    std::thread::Builder::new()
        .name("noise-provoker".into())
        .spawn(move || {
            let param = libc::sched_param { sched_priority: 10 };
            // SAFETY: the calling thread and a valid parameter.
            let rc = unsafe {
                libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param)
            };
            assert_eq!(rc, 0, "SCHED_FIFO");
            // At SCHED_FIFO the move to `cpu` preempts the spinner there at once.
            pin(cpu);
            let cpu_from = thread_cpu_ns();
            let from = monotonic_ns();
            let mut now = from;
            while now - from < length_ns {
                now = monotonic_ns();
            }
            let cpu_time = thread_cpu_ns() - cpu_from;
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: as above; back to normal before the thread ends.
            unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param) };
            Provoked {
                tid,
                wall_ns: now - from,
                cpu_ns: cpu_time,
            }
        })
        .expect("thread")
        .join()
        .expect("the provoker ran")
}

/// What `provoke` did.
struct Provoked {
    tid: i64,
    wall_ns: u64,
    cpu_ns: u64,
}

#[test]
fn a_provoked_interruption_is_measured_and_named() {
    let _turn = serial();
    if skip_without_realtime("a_provoked_interruption_is_measured_and_named")
        || !tracefs_usable("a_provoked_interruption_is_measured_and_named")
    {
        return;
    }
    let cpu = measured_cpu();
    // Far above what the trace keeps as spikes otherwise (--trace-spikes
    // 40 ms keeps only gaps that long: the provoked one is among the kept
    // however busy the machine is).
    const LENGTH_NS: u64 = 60_000_000;
    // Provoked again (at most three runs, said on stderr) when no kept
    // spike holds the provoker and the collector flagged lost events: the
    // run then proved nothing either way. A loss it did not flag still fails.
    for attempt in 1..=3 {
        if provoked_interruption_named(cpu, LENGTH_NS, attempt == 3) {
            return;
        }
        eprintln!(
            "a_provoked_interruption_is_measured_and_named: events lost around the provoked gap (run {attempt} of 3): provoking again"
        );
    }
}

/// One run of `a_provoked_interruption_is_measured_and_named`: false when
/// it proved nothing (the provoker not found, with lost events flagged) and
/// `last` is not set.
fn provoked_interruption_named(cpu: usize, length_ns: u64, last: bool) -> bool {
    let (_dir, file) = temp_file("noise.json");
    // Provoked once the spinner runs (the trace is on by then), however
    // long the start took on a busy machine.
    let spawned = noise_spinning(cpu, &["-D", "4", "--trace-spikes", "40000"], &file);
    let Provoked {
        tid,
        wall_ns: spun,
        cpu_ns,
    } = provoke(cpu, length_ns);
    // The provoker by identity, its thread id: the trace may name it by the
    // name it had (its creator's) before it named itself, or by both.
    let is_provoker = |c: &Value| {
        c["kind"] == "task"
            && c["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(&format!("(pid {tid})")))
    };
    let (status, stdout, stderr) = spawned.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    let report = read_json(&file);
    let s = &series(&report)[0];
    // The gap is at least what the real-time thread took (other work may
    // lengthen it on a busy machine: that is no bound to test).
    let max = u64_of(&s["max_ns"], "max_ns");
    assert!(max >= spun * 95 / 100, "max {max} ns, provoked {spun} ns");
    // The trace names the provoker with its time on the CPU within 5 %.
    let causes = &s["detail"]["causes"];
    let ns: u64 = array_of(&causes["causes"], "causes")
        .iter()
        .filter(|c| is_provoker(c))
        .map(|c| u64_of(&c["ns"], "provoker ns"))
        .sum();
    // The spike that holds the provoker, found by identity, for the
    // evidence: whether the kernel lost events in its window (the trace
    // reader, a normal task, fell behind on a busy machine: then the
    // switches that would place the provoker's time may be missing).
    let spikes = &report["tests"][0]["spikes"];
    let kept = array_of(&spikes["spikes"], "spikes");
    let found = kept.iter().find(|sp| {
        array_of(&sp["causes"], "spike causes")
            .iter()
            .any(is_provoker)
    });
    let Some(provoked) = found else {
        let lost = kept.iter().any(|sp| sp["events_lost"] == true);
        if lost && !last {
            return false;
        }
        panic!(
            "no kept spike holds the provoker (pid {tid}; events lost in a kept spike: {lost}): {}",
            evidence("causes", &causes.to_string())
        )
    };
    // Interrupts that ran on top of the provoker (a busy disk's IRQ and
    // BLOCK softirq: milliseconds under `stress-ng --io`) are causes of their
    // own in the attribution (the innermost context owns the time). The
    // provoker held the CPU for the wall time it spun, so its share is that
    // less those interrupts, within 5 %. Not its CPU time: the kernel may
    // charge the interrupts to it or not (IRQ time accounting), and on a
    // virtual machine it leaves out the time the host ran something else
    // (steal), which no guest event shows: 5.5 ms of 60 were stolen in one
    // run beside stress-ng.
    let interrupts_ns: u64 = array_of(&provoked["causes"], "spike causes")
        .iter()
        .filter(|c| c["kind"] == "irq" || c["kind"] == "softirq")
        .map(|c| u64_of(&c["ns"], "interrupt ns"))
        .sum();
    let held_ns = spun.saturating_sub(interrupts_ns);
    let within = ns.abs_diff(held_ns) <= spun / 20;
    if !within && provoked["events_lost"] == true {
        latscope::testing::skip_part(
            "slow::noise (a provoked interruption)",
            "the 5 % check",
            &format!(
                "the kernel lost trace events in the provoked window ({})",
                provoked["summary"]
            ),
        );
        return true;
    }
    assert!(
        within,
        "provoker spun {spun} ns (CPU time {cpu_ns} ns), attributed {ns} ns, interrupts on top {interrupts_ns} ns: {}",
        evidence("spike", &provoked.to_string())
    );
    assert!(
        stdout.contains(&format!("causes: CPU {cpu}:")),
        "{}",
        dump(status, &stdout, &stderr)
    );
    true
}

#[test]
fn ctrl_c_ends_the_run_with_its_results() {
    let _turn = serial();
    let cpu = measured_cpu();
    let (_dir, file) = temp_file("noise.json");
    // No -D: until stopped.
    let spawned = noise_spinning(cpu, &[], &file);
    spawned.signal(libc::SIGINT);
    let (status, stdout, stderr) = spawned.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    assert!(stdout.contains("ended: interrupted"), "{stdout}");
    let report = read_json(&file);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    let d = &series(&report)[0]["detail"];
    assert!(u64_of(&d["measured_ns"], "measured_ns") > 0);
    assert!(u64_of(&d["loops"], "loops") > 0);
}

#[test]
fn a_short_realtime_run_on_a_named_cpu_says_rt_throttling_bounds_it() {
    let _turn = serial();
    if skip_without_realtime("a_short_realtime_run_on_a_named_cpu_says_rt_throttling_bounds_it") {
        return;
    }
    let runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok());
    let period = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us")
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok());
    let (Some(runtime), Some(period)) = (runtime, period) else {
        latscope::testing::skip(
            "slow::noise::a_short_realtime_run_on_a_named_cpu_says_rt_throttling_bounds_it",
            "no RT bandwidth control here",
        );
        return;
    };
    let isolated = std::fs::read_to_string("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let cpu = measured_cpu();
    if runtime < 0 || runtime >= period || !isolated.trim().is_empty() {
        latscope::testing::skip(
            "slow::noise::a_short_realtime_run_on_a_named_cpu_says_rt_throttling_bounds_it",
            "RT throttling off, or isolated CPUs here",
        );
        return;
    }
    // One bounded second at FIFO 1 on a named CPU: allowed, and the report
    // says the spinner is bounded by RT throttling.
    let (_, report) = noise_json(&["--cpus", &cpu.to_string(), "-p", "1", "-D", "1", "-q"], 0);
    let t = &report["tests"][0];
    assert_eq!(t["config"]["policy"], "fifo");
    assert_eq!(t["end_reason"], "duration_elapsed");
    assert_eq!(t["config"]["detail"]["rt_runtime_us"], runtime);
    let warnings = array_of(&report["warnings"], "warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("bounded by RT throttling"))),
        "{}",
        evidence("warnings", &report["warnings"].to_string())
    );
}

/// A CPU named twice is a slip, refused in one line (exit 2) rather than
/// measured once without a word; the same list parser serves `timer`.
#[test]
fn a_cpu_named_twice_is_refused() {
    for (cmd, list, bound) in [
        ("noise", "0,0", "-D"),
        ("noise", "0-1,1", "-D"),
        ("timer", "0,0", "-T"),
    ] {
        let out = run(latscope(30).args([cmd, "--cpus", list, bound, "1"]));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{}", describe(&out));
        assert!(
            err.contains("twice"),
            "{cmd} --cpus {list}: {}",
            describe(&out)
        );
    }
}
