//! In-kernel (BPF) collection through the real binary: `timer --breakdown
//! --collector bpf` has the breakdown of every sample (or counts it), idle
//! wake-ups included; `--collector` falls back and fails as documented;
//! `kill -9` leaves no program or map behind. The live tests need root (or
//! CAP_BPF + CAP_PERFMON) and a kernel with BPF on trace events; each says
//! why it skips.

use crate::common::*;
use serde_json::Value;
use std::time::Duration;

/// Whether this process may create a BPF map (the cheapest real try);
/// prints why a test skips when not.
pub(super) fn bpf_usable(test: &str) -> bool {
    // union bpf_attr for BPF_MAP_CREATE: an array of one 8-byte value.
    let mut attr = [0u32; 8];
    attr[0] = 2; // BPF_MAP_TYPE_ARRAY
    attr[1] = 4; // key size
    attr[2] = 8; // value size
    attr[3] = 1; // entries
    // SAFETY: a valid attr of its size; the fd is closed below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            0 as libc::c_long,
            attr.as_mut_ptr(),
            std::mem::size_of_val(&attr) as libc::c_uint,
        )
    };
    if fd < 0 {
        latscope::testing::skip(
            test,
            &format!(
                "BPF maps cannot be created here ({}): needs root or CAP_BPF",
                std::io::Error::last_os_error()
            ),
        );
        return false;
    }
    // SAFETY: our own fresh descriptor.
    unsafe { libc::close(fd as i32) };
    true
}

fn timer_json(args: &[&str]) -> (std::process::Output, Value) {
    let (_dir, file) = temp_file("timer.json");
    let mut cmd = latscope(90);
    cmd.arg("timer").args(args).args(mlock_args());
    run_with_report(cmd, &file, 0)
}

/// The counters and extremes of a breakdown, for failure messages (the
/// whole object holds histograms: far too long to print).
fn brief(b: &Value) -> String {
    let mut text = format!("collector {}", b["collector"]);
    for key in [
        "traced_wakeups",
        "torn_wakeups",
        "incomplete_wakeups",
        "unordered_wakeups",
    ] {
        text.push_str(&format!(", {key} {}", b[key]));
    }
    for figure in ["irq", "thread", "user"] {
        let f = &b[figure];
        text.push_str(&format!(
            ", {figure} {} samples {}..{} ns",
            f["samples"], f["min_ns"], f["max_ns"]
        ));
    }
    text
}

/// Checks one thread's in-kernel breakdown: every sample accounted for,
/// nearly all of them complete, each in order; returns (complete, samples).
fn check_in_kernel(s: &Value, what: &str) -> (u64, u64) {
    let b = &s["detail"]["breakdown"];
    let why = brief(b);
    assert_eq!(b["collector"]["name"], "bpf", "{what}: {why}");
    assert!(b["collector"]["bpf_unavailable"].is_null(), "{what}: {why}");
    // The user figure has every sample (the series' own count is the main
    // figure's, which with -t 1/-t 2 is a kernel-side one).
    let samples = u64_of(&b["user"]["samples"], "user samples");
    let complete = u64_of(&b["traced_wakeups"], "traced_wakeups");
    let torn = u64_of(&b["torn_wakeups"], "torn_wakeups");
    let missing = u64_of(&b["incomplete_wakeups"], "incomplete_wakeups");
    // Every sample is complete, torn or counted as missing: nothing guessed.
    assert_eq!(complete + torn + missing, samples, "{what}: {why}");
    assert_eq!(b["irq"]["samples"], complete, "{what}: {why}");
    assert_eq!(b["thread"]["samples"], complete, "{what}: {why}");
    // Only a wake-up whose record a program could not finish is missing:
    // a few at most, whatever the load.
    assert!(
        (torn + missing) * 100 <= samples + 200,
        "{what}: {torn} torn, {missing} missing of {samples}: {why}"
    );
    // Every complete sample had IRQ <= thread <= user.
    assert_eq!(b["unordered_wakeups"], 0, "{what}: {why}");
    let irq_min = i64_of(&b["irq"]["min_ns"], "irq min");
    assert!(
        irq_min >= 0,
        "{what}: the handler ran before the expiry: {why}"
    );
    let max = |x: &Value| i64_of(&x["max_ns"], "max");
    assert!(max(&b["irq"]) <= max(&b["thread"]), "{what}: {why}");
    assert!(max(&b["thread"]) <= max(&b["user"]), "{what}: {why}");
    (complete, samples)
}

#[test]
fn the_in_kernel_breakdown_covers_every_sample_with_each_waker() {
    let test = "the_in_kernel_breakdown_covers_every_sample_with_each_waker";
    if skip_without_realtime(test) || !bpf_usable(test) {
        return;
    }
    for wake in ["--nanosleep", "--timerfd", "--posix-timer"] {
        let (out, report) = timer_json(&[
            "--breakdown",
            "--collector",
            "bpf",
            wake,
            "-T",
            "1",
            "-p",
            "500",
            "-q",
        ]);
        let s = &series(&report)[0];
        let (complete, samples) = check_in_kernel(s, wake);
        assert!(
            complete > 0 && samples >= 1000,
            "{wake}: {}",
            describe(&out)
        );
        let stdout = stdout_of(&out);
        assert!(stdout.contains("collector: bpf;"), "{}", describe(&out));
        assert!(stdout.contains("IRQ p50"), "{}", describe(&out));
    }
}

/// An idle CPU emits no sched_switch into the woken thread on some kernels
/// (this one): the in-kernel breakdown still has the thread figure. A long
/// period leaves the sampling CPU idle between wake-ups, whatever else runs,
/// unless the machine is saturated; the accounting is exact either way.
#[test]
fn idle_wake_ups_have_the_thread_figure_too() {
    let test = "idle_wake_ups_have_the_thread_figure_too";
    if skip_without_realtime(test) || !bpf_usable(test) {
        return;
    }
    let (out, report) = timer_json(&args("--breakdown --collector bpf -T 1 -p 5000 -q"));
    let s = &series(&report)[0];
    let (complete, samples) = check_in_kernel(s, "idle");
    let overruns = u64_of(&s["overruns"], "overruns");
    assert_eq!(samples + overruns, 200, "{}", describe(&out));
    assert_eq!(s["detail"]["breakdown"]["without_sched_in"], 0);
    assert!(complete > 0, "{}", describe(&out));
}

#[test]
fn modes_1_and_2_take_their_main_figure_from_the_kernel() {
    let test = "modes_1_and_2_take_their_main_figure_from_the_kernel";
    if skip_without_realtime(test) || !bpf_usable(test) {
        return;
    }
    for (mode, figure) in [("1", "thread"), ("2", "irq")] {
        let (out, report) = timer_json(&[
            "--format",
            "classic",
            "-t",
            mode,
            "--collector",
            "bpf",
            "-T",
            "1",
            "-p",
            "1000",
        ]);
        let s = &series(&report)[0];
        assert_eq!(report["tests"][0]["mode"], figure);
        check_in_kernel(s, figure);
        let b = &s["detail"]["breakdown"];
        assert_eq!(s["samples"], b[figure]["samples"], "{}", brief(b));
        assert!(stdout_of(&out).contains("RTD|"), "{}", describe(&out));
    }
}

#[test]
fn without_the_capabilities_auto_falls_back_to_tracefs_and_says_why() {
    let test = "without_the_capabilities_auto_falls_back_to_tracefs_and_says_why";
    if skip_without_realtime(test) || !setpriv_usable(test) {
        return;
    }
    let (_dir, file) = temp_file("t.json");
    let file_arg = file.to_str().unwrap();
    let mut a = args("timer --breakdown -T 1 -p 1000 -q --json");
    a.push(file_arg);
    a.extend(mlock_args());
    let out = without_bpf_capabilities(&a);
    assert_code(&out, 0);
    let why = "not permitted: needs CAP_BPF and CAP_PERFMON (or root)";
    assert!(
        stdout_of(&out).contains(&format!("collector: tracefs (bpf: {why})")),
        "{}",
        describe(&out)
    );
    let report = read_json(&file);
    let b = &series(&report)[0]["detail"]["breakdown"];
    assert_eq!(b["collector"]["name"], "tracefs", "{b}");
    assert_eq!(b["collector"]["bpf_unavailable"], why, "{b}");
    // With --collector bpf the same is a clear one-line error.
    let mut a = args("timer --breakdown --collector bpf -T 1 -p 1000 -q");
    a.extend(mlock_args());
    let out = without_bpf_capabilities(&a);
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    assert_eq!(
        stderr.trim(),
        format!("latscope: error: --collector bpf: BPF collection cannot run here: {why}"),
        "{}",
        describe(&out)
    );
}

#[test]
fn collector_tracefs_is_said_and_collector_alone_is_bad_usage() {
    let test = "collector_tracefs_is_said_and_collector_alone_is_bad_usage";
    let out = run(latscope(30).args(args("timer -T 1 --collector bpf")));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("--collector chooses how kernel events are collected: it needs --breakdown or --trace-spikes"),
        "{}",
        describe(&out)
    );
    let out = run(latscope(30).args(args("noise -D 1 --collector tracefs")));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("it needs --trace-spikes"),
        "{}",
        describe(&out)
    );
    let out = run(latscope(30).args(args("timer --breakdown --collector ebpf")));
    assert_code(&out, 2);
    if skip_without_realtime(test) {
        return;
    }
    if !euid_is_root() {
        return latscope::testing::skip_part(test, "tracefs as root", "needs root");
    }
    let mut a = args("timer --breakdown --collector tracefs -T 1 -p 1000 -q");
    a.extend(mlock_args());
    let out = run(latscope(60).args(&a));
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("collector: tracefs (bpf: --collector tracefs)"),
        "{}",
        describe(&out)
    );
}

#[test]
fn kill_9_in_the_middle_of_a_run_leaves_no_program_or_map() {
    check_kill_9_leaves_nothing(
        "kill_9_in_the_middle_of_a_run_leaves_no_program_or_map",
        "timer --breakdown --collector bpf -p 500 -T 60 -q",
        // The expiry and the switch-in (and the arming on kernels without
        // sched_exit_tp).
        2,
    );
}

#[test]
fn kill_9_in_the_middle_of_a_flight_recording_leaves_nothing() {
    check_kill_9_leaves_nothing(
        "kill_9_in_the_middle_of_a_flight_recording_leaves_nothing",
        "timer --trace-spikes 100 --collector bpf -p 500 -T 60 -q",
        // One per recorded event at least: switch, wake-up, IRQ entry and exit.
        4,
    );
}

/// Starts latscope with `line`, kills it with SIGKILL once it holds its
/// programs (at least `programs`) and map, and checks the kernel freed them all.
fn check_kill_9_leaves_nothing(test: &str, line: &str, programs: usize) {
    if skip_without_realtime(test) || !bpf_usable(test) {
        return;
    }
    if !bpftool_usable(test) {
        return;
    }
    let mut a = args(line);
    a.extend(mlock_args());
    let child = spawn(&a);
    let pid = child.child.id();
    // The programs are loaded once the threads are set up (well under 2 s).
    let held = bpf_ids_once_loaded(pid, programs);
    assert!(
        held.iter().any(|id| id.starts_with("map_id")),
        "the run holds no map: {held:?}"
    );
    assert!(
        held.iter().filter(|id| id.starts_with("prog_id")).count() >= programs,
        "the run holds its programs: {held:?}"
    );
    assert!(held.iter().all(|id| still_loaded(id)), "{held:?}");
    child.signal(libc::SIGKILL);
    let (status, _, _) = child.wait(Duration::from_secs(30));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    // The kernel frees them once the last descriptor is gone (after an RCU
    // grace period): give it a moment.
    let left = bpf_ids_left(&held);
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
    // No tracefs instance either (the BPF collector makes none).
    let instances: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .filter(|n| n.starts_with(&format!("latscope-{pid}-")))
                .collect()
        })
        .unwrap_or_default();
    assert!(instances.is_empty(), "{instances:?}");
}

#[test]
fn collector_bpf_as_an_ordinary_user_is_the_collector_bpf_line_on_every_command() {
    // An ordinary user cannot run BPF collection: `--collector bpf` must say
    // so in its documented words (docs/bpf.md), exit 1, on every command
    // that takes it, rather than the tracefs collector's "needs root" line
    // (which it printed before: the tracefs check ran first).
    let test =
        "slow::bpf::collector_bpf_as_an_ordinary_user_is_the_collector_bpf_line_on_every_command";
    if let Err(why) = nobody_runner() {
        latscope::testing::skip(test, &why);
        return;
    }
    let expected = "latscope: error: --collector bpf: BPF collection cannot run here: not permitted: needs CAP_BPF and CAP_PERFMON (or root)";
    for command in [
        "timer --breakdown --collector bpf -T 1 -p 1000 -q",
        "timer --trace-spikes 50 --collector bpf -T 1 -q",
        "noise --trace-spikes 50 --collector bpf -D 1 -q",
        "pipe --trace-spikes 50 --collector bpf -D 1 -q",
    ] {
        let mut cmd = nobody_runner().expect("checked above");
        cmd.arg(bin()).args(args(command));
        let out = run_std_with_timeout(cmd, Duration::from_secs(30));
        assert_code(&out, 1);
        assert_eq!(
            stderr_of(&out).trim(),
            expected,
            "{command}: {}",
            describe(&out)
        );
    }
    // With auto the same user is told what tracefs needs, as before.
    let mut cmd = nobody_runner().expect("checked above");
    cmd.arg(bin())
        .args(args("timer --breakdown -T 1 -p 1000 -q"));
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 1);
    assert!(
        stderr_of(&out).contains("--breakdown needs kernel tracing: kernel tracing needs root"),
        "{}",
        describe(&out)
    );
}

/// `doctor --bpf` measures what one run of an empty program costs here on
/// each way of attaching it, and the observer effect per wake-up of
/// `--breakdown` and `--trace-spikes` from the programs each hooks, and
/// hwlat's interference programs per event; its JSON carries the same. Without the capabilities, one line says why.
#[test]
fn doctor_bpf_measures_one_program_run_and_the_effect_per_wakeup() {
    let test = "slow::bpf::doctor_bpf_measures_one_program_run_and_the_effect_per_wakeup";
    if !bpf_usable(test) {
        return;
    }
    let (_dir, file) = temp_file("cost.json");
    let out = run(latscope(60).args(["doctor", "--bpf", "--json", file.to_str().unwrap()]));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let doc = read_json(&file);
    assert_eq!(doc["schema"], "latscope-doctor-bpf", "{doc}");
    let cost = &doc["cost"];
    assert!(cost.get("unavailable").is_none(), "{cost}");
    // Plausible: more than nothing, far less than 100 us, for every way
    // that was measured, and at least one of the argument ways is.
    let plausible = |ns: f64| ns > 0.0 && ns < 100_000.0;
    let mut measured = Vec::new();
    for way in cost["ways"].as_array().unwrap() {
        if let Some(ns) = way["ns_per_run"].as_f64() {
            assert!(plausible(ns), "{way}");
            assert!(way["runs"].as_u64().unwrap() > 0, "{way}");
            let name = way["way"].as_str().unwrap();
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{name} ")))
                .unwrap_or_else(|| panic!("no {name} line: {text}"));
            assert!(line.contains(&format!("{ns:.0} ns per run")), "{line}");
            measured.push(name.to_string());
        }
    }
    assert!(
        measured.iter().any(|w| w == "tp_btf" || w == "raw_tp"),
        "{cost}"
    );
    for (path, option) in cost["paths"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["--breakdown", "--trace-spikes"])
    {
        assert_eq!(path["option"], option, "{path}");
        let Some(ns) = path["expected_ns_per_wakeup"].as_f64() else {
            latscope::testing::skip_part(test, option, &format!("not known here: {path}"));
            continue;
        };
        assert!(plausible(ns), "{path}");
        assert!(path["runs_per_wakeup"].as_u64().unwrap() >= 1, "{path}");
        assert!(path["programs_hooked"].as_u64().unwrap() >= 1, "{path}");
        assert!(
            text.contains(&format!(
                "{option:<15} {} programs hooked",
                path["programs_hooked"]
            )),
            "{text}"
        );
    }
    // hwlat's interference programs, each timed on the events that came:
    // the provoking thread's sleeps switch, so sched_switch's ran.
    let events = cost["interference"]
        .as_array()
        .unwrap_or_else(|| panic!("no interference programs: {cost}"));
    let switch = events
        .iter()
        .find(|e| e["event"] == "sched:sched_switch")
        .unwrap_or_else(|| panic!("{cost}"));
    assert!(switch["runs"].as_u64().unwrap() > 0, "{switch}");
    for e in events {
        if let Some(ns) = e["ns_per_run"].as_f64() {
            assert!(plausible(ns), "{e}");
            assert!(
                text.contains(&format!(
                    "  {:<42} {:<11} {ns:.0} ns per run",
                    e["event"].as_str().unwrap(),
                    e["way"].as_str().unwrap()
                )),
                "{e}: {text}"
            );
        }
    }
    // Without the capabilities: one line why.
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output();
    if !euid_is_root() || !setpriv.is_ok_and(|o| o.status.success()) {
        latscope::testing::skip_part(test, "unprivileged", "needs root and setpriv (util-linux)");
        return;
    }
    let out = without_bpf_capabilities(&["doctor", "--bpf"]);
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains(
            "  cannot be measured here: not permitted: needs CAP_BPF and CAP_PERFMON (or root)\n"
        ),
        "{}",
        describe(&out)
    );
}
