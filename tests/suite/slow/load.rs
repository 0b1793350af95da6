//! `--load SPEC` (background load by stress-ng and hackbench) and the
//! kernel-log follower, through the real binary: what ran is in the report,
//! the generators and their workers are gone after a normal end, Ctrl-C and
//! kill -9, bad specs and missing programs are usage errors, and a message
//! written to the kernel log during a run lands in the report.
//!
//! The generators of a run are found by their environment
//! (`LATSCOPE_LOAD_OWNER=<latscope pid>`), their workers by process group
//! (stress-ng renames its workers, which overwrites their environment), so
//! tests running in parallel never see each other's loads.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// True when `program` is installed; otherwise says why the test skips.
pub(super) fn have(program: &str, test: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        latscope::testing::skip(
            test,
            &format!("{program} is not installed (.ci/run installs it)"),
        );
    }
    found
}

/// Fields of /proc/PID/stat after the command name: state, ppid, pgrp.
fn stat_of(pid: &str) -> Option<(char, i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

pub(super) fn pids() -> Vec<String> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
                .collect()
        })
        .unwrap_or_default()
}

/// The load generators latscope `owner` started (their pids lead their
/// process groups).
pub(super) fn generators_of(owner: u32) -> Vec<i32> {
    let marker = format!("LATSCOPE_LOAD_OWNER={owner}");
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        })
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// Live (not zombie) processes in these process groups, with their names.
pub(super) fn live_members(groups: &[i32]) -> Vec<String> {
    pids()
        .into_iter()
        .filter_map(|pid| {
            let (state, _, pgrp) = stat_of(&pid)?;
            (state != 'Z' && groups.contains(&pgrp)).then(|| {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                format!("{pid} {}", comm.trim())
            })
        })
        .collect()
}

/// Polls `check` until it is true or `limit` passes; returns the last result.
pub(super) fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An endless `latscope mq` with these loads, its generators and their
/// workers found once they run.
struct LoadedRun {
    child: Spawned,
    groups: Vec<i32>,
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn start_loaded_run(loads: &[&str], generators: usize) -> LoadedRun {
    let (dir, file) = temp_file("report.json");
    // One pair pinned to CPU 0: the loads must be confined to it.
    let mut argv = args("mq -a 0 -i 1000 -q");
    for load in loads {
        argv.extend(["--load", load]);
    }
    argv.extend(["--json", file.to_str().unwrap()]);
    argv.extend_from_slice(mlock_args());
    let child = spawn(&argv);
    let owner = child.child.id();
    let mut groups = Vec::new();
    let started = eventually(Duration::from_secs(5), || {
        groups = generators_of(owner);
        groups.len() == generators && live_members(&groups).len() > generators
    });
    assert!(
        started,
        "the generators and their workers did not start: groups {groups:?}, members {:?}",
        live_members(&groups)
    );
    LoadedRun {
        child,
        groups,
        file,
        _dir: dir,
    }
}

pub(super) fn assert_all_gone(groups: &[i32], after: &str) {
    let mut left = Vec::new();
    let gone = eventually(Duration::from_secs(5), || {
        left = live_members(groups);
        left.is_empty()
    });
    assert!(gone, "load processes left {after}: {left:?}");
}

pub(super) fn loads_of(report: &Value) -> &Vec<Value> {
    array_of(&report["loads"], "loads")
}

#[test]
fn a_loaded_run_records_the_load_and_leaves_no_generator() {
    if !have("stress-ng", "a_loaded_run_records_the_load") {
        return;
    }
    let (dir, file) = temp_file("report.json");
    let mut argv = args("mq -D 1 --load cpu:1 --json");
    argv.push(file.to_str().unwrap());
    argv.extend_from_slice(mlock_args());
    let out = run(latscope(30).args(&argv));
    assert_code(&out, 0);
    let report = read_json(&file);
    let loads = loads_of(&report);
    assert_eq!(loads.len(), 1, "{}", evidence("json", &report.to_string()));
    let load = &loads[0];
    assert_eq!(load["spec"], "cpu:1");
    let argv: Vec<&str> = array_of(&load["command_line"], "command_line")
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(argv[0].ends_with("stress-ng"), "{argv:?}");
    assert_eq!(argv[1..], ["--cpu", "1", "--timeout", "0"]);
    assert!(
        load["version"]
            .as_str()
            .unwrap()
            .starts_with("stress-ng, version"),
        "{load}"
    );
    assert_eq!(load["stopped_with"], "SIGTERM");
    assert_eq!(load["ended_early"], false);
    assert!(!array_of(&load["cpus"], "cpus").is_empty());
    // The footer's notes wrap at 100 columns: read them whole.
    let stdout = unwrapped(&stdout_of(&out));
    assert!(
        stdout.contains("load: ")
            && stdout.contains("--cpu 1")
            && stdout.contains("normal priority"),
        "{}",
        describe(&out)
    );
    let pid = load["pid"].as_i64().unwrap() as i32;
    assert_all_gone(&[pid], "after a normal end");
    drop(dir);
}

/// A field of /proc/PID/status (`Cpus_allowed_list`).
pub(super) fn status_field(pid: &str, name: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Scheduling policy (0: SCHED_OTHER) and nice of a process, from
/// /proc/PID/stat (fields 41 and 19).
fn policy_and_nice(pid: &str) -> Option<(i64, i64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    // fields[0] is field 3 (state).
    Some((fields[41 - 3].parse().ok()?, fields[19 - 3].parse().ok()?))
}

#[test]
fn sigint_mid_run_stops_every_load_and_reports_them() {
    if !have("stress-ng", "sigint_mid_run_stops_every_load")
        || !have("hackbench", "sigint_mid_run_stops_every_load")
    {
        return;
    }
    let run = start_loaded_run(&["cpu:1,vm:1", "hackbench"], 2);
    // Every generator and worker: on the measured CPU only, at normal priority.
    for member in live_members(&run.groups) {
        let pid = member.split(' ').next().unwrap();
        let allowed = status_field(pid, "Cpus_allowed_list");
        if allowed.is_empty() {
            continue; // ended meanwhile
        }
        assert_eq!(allowed, "0", "{member}");
        if let Some(policy_nice) = policy_and_nice(pid) {
            assert_eq!(policy_nice, (0, 0), "{member}: SCHED_OTHER, nice 0");
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    run.child.signal(libc::SIGINT);
    let (status, stdout, stderr) = run.child.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    assert_all_gone(&run.groups, "after SIGINT");
    let report = read_json(&run.file);
    let loads = loads_of(&report);
    let specs: Vec<&str> = loads.iter().map(|l| l["spec"].as_str().unwrap()).collect();
    assert_eq!(specs, ["cpu:1,vm:1", "hackbench"]);
    for load in loads {
        assert!(load["stopped_with"].is_string(), "{load}");
        assert_eq!(load["ended_early"], false, "{load}");
    }
    assert_eq!(stdout.matches("load: ").count(), 2, "{stdout}");
}

#[test]
fn kill_9_of_latscope_takes_every_load_with_it() {
    if !have("stress-ng", "kill_9_of_latscope") || !have("hackbench", "kill_9_of_latscope") {
        return;
    }
    let run = start_loaded_run(&["cpu:1,vm:1", "hackbench:1"], 2);
    run.child.signal(libc::SIGKILL);
    let (status, _, _) = run.child.wait(Duration::from_secs(60));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert_all_gone(&run.groups, "after kill -9 of latscope");
}

#[test]
fn an_unknown_stressor_is_a_usage_error_before_measuring() {
    if !have("stress-ng", "an_unknown_stressor_is_a_usage_error") {
        return;
    }
    let out = run(latscope(20).args(args("mq -D 5 --load cpu:1,nosuchstressor:2")));
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--load: stress-ng has no stressor 'nosuchstressor'"),
        "{stderr}"
    );
    assert!(
        stdout_of(&out).is_empty(),
        "nothing measured: {}",
        describe(&out)
    );
    for (spec, why) in [
        ("cpu:0", "from 1 to 1024"),
        ("cpu:1,cpu:2", "cpu is given twice"),
        ("cpu;reboot", "is not a load name"),
    ] {
        let out = run(latscope(20).args(["timer", "-T", "5", "--load", spec]));
        assert_code(&out, 2);
        assert!(stderr_of(&out).contains(why), "{spec}: {}", describe(&out));
    }
}

#[test]
fn a_missing_generator_names_the_package_to_install() {
    let empty = tempfile::tempdir().unwrap();
    for (spec, package) in [
        ("cpu", "apt-get install stress-ng"),
        ("hackbench:2", "apt-get install rt-tests"),
    ] {
        let out = run(latscope(20)
            .env("PATH", empty.path())
            .args(["pipe", "-D", "5", "--load", spec]));
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("not installed") && stderr.contains(package),
            "{spec}: {stderr}"
        );
    }
}

/// A stand-in stress-ng in its own directory: it knows the stressor `cpu`,
/// and when run as a load it writes `said` to stderr after `after_s` seconds
/// and exits with code 3.
fn fake_stress_ng(after_s: &str, said: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("stress-ng");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n  --stressors) echo \"cpu vm\"; exit 0;;\n  --version) echo \"stress-ng, version fake\"; exit 0;;\nesac\n/bin/sleep {after_s}\necho \"{said}\" >&2\nexit 3\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn a_load_that_ends_during_the_run_is_a_warning() {
    let fake = fake_stress_ng("0.6", "fake stress-ng: out of workers");
    let (_dir, file) = temp_file("report.json");
    let mut argv = args("mq -D 1.5 --load cpu:1 --json");
    argv.push(file.to_str().unwrap());
    argv.extend_from_slice(mlock_args());
    let out = run(latscope(30).env("PATH", fake.path()).args(&argv));
    assert_code(&out, 0);
    let report = read_json(&file);
    let load = &loads_of(&report)[0];
    assert_eq!(load["ended_early"], true, "{load}");
    assert_eq!(load["exit_status"], "exit code 3");
    assert!(load["stopped_with"].is_null(), "{load}");
    let warned = array_of(&report["warnings"], "warnings").iter().any(|w| {
        w.as_str()
            .unwrap()
            .starts_with("load cpu:1 ended during the run (exit code 3)")
            && w.as_str()
                .unwrap()
                .ends_with("its last output: fake stress-ng: out of workers")
    });
    assert!(warned, "{}", evidence("json", &report.to_string()));
}

#[test]
fn a_load_that_ends_at_once_is_a_runtime_error_before_measuring() {
    let fake = fake_stress_ng("0", "fake stress-ng: cannot start");
    let out = run(latscope(30)
        .env("PATH", fake.path())
        .args(["pipe", "-D", "5", "--load", "cpu"])
        .args(mlock_args()));
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("ended at once (exit code 3): fake stress-ng: cannot start"),
        "{stderr}"
    );
    assert!(stdout_of(&out).is_empty(), "{}", describe(&out));
}

#[test]
fn suite_and_logdisk_take_a_load_too() {
    if !have("stress-ng", "suite_and_logdisk_take_a_load_too") {
        return;
    }
    let (dir, file) = temp_file("suite.json");
    let out = run(latscope(60)
        .args(["suite", "-D", "1s", "-q", "--load", "--json"])
        .arg(&file));
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{}",
        describe(&out)
    );
    let report = read_json(&file);
    let loads = loads_of(&report);
    assert_eq!(loads.len(), 1, "{}", evidence("json", &report.to_string()));
    assert_eq!(loads[0]["spec"], "cpu", "bare --load is cpu");
    assert!(
        report["tests"].as_array().unwrap().len() > 3,
        "{}",
        evidence("json", &report.to_string())
    );
    assert_all_gone(&[loads[0]["pid"].as_i64().unwrap() as i32], "after suite");

    let json = dir.path().join("ipc.json");
    let out = run(latscope(60)
        .args(args(
            "ipc --only pipe,futex --mode oneway -D 1 -q --load cpu:1 --json",
        ))
        .arg(&json)
        .args(mlock_args()));
    assert_code(&out, 0);
    let report = read_json(&json);
    assert_eq!(
        loads_of(&report)[0]["spec"],
        "cpu:1",
        "{}",
        evidence("json", &report.to_string())
    );
    assert_eq!(report["tests"].as_array().unwrap().len(), 2);

    let logdir = dir.path().join("log");
    std::fs::create_dir(&logdir).unwrap();
    let json = dir.path().join("logdisk.json");
    let out = run(latscope(60)
        .args([
            "logdisk",
            "--duration",
            "1",
            "--fileSize",
            "1M",
            "--numFiles",
            "2",
            "--no-direct",
        ])
        .arg("--dir")
        .arg(&logdir)
        .args(["--load", "cpu:1", "--json"])
        .arg(&json));
    assert_code(&out, 0);
    let report = read_json(&json);
    assert_eq!(
        loads_of(&report)[0]["spec"],
        "cpu:1",
        "{}",
        evidence("json", &report.to_string())
    );
    assert!(!Path::new(&logdir).join("mqldt_testfile.0000").exists());
}

/// Runs latscope with `argv` and `--json FILE` and writes a warning to the
/// kernel log `after` its start: the report, the marker text, the run's
/// stdout and the temp dir. None (said) when not root: only root may write
/// to /dev/kmsg.
fn run_with_kernel_warning(
    test: &str,
    argv: &str,
    after: Duration,
) -> Option<(Value, String, String, tempfile::TempDir)> {
    if !euid_is_root() {
        latscope::testing::skip(test, "writing to /dev/kmsg needs root");
        return None;
    }
    // One such run at a time: each run reports every kernel warning of its
    // time, and its console line names the first, which must be its own
    // (two of these tests ran together once and each saw the other's).
    static ONE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, file) = temp_file("report.json");
    let mut argv = args(argv);
    argv.push("--json");
    argv.push(file.to_str().unwrap());
    argv.extend_from_slice(mlock_args());
    let child = spawn(&argv);
    let marker = format!(
        "latscope-test: WARNING: {test} {} {:?}",
        child.child.id(),
        Instant::now()
    );
    std::thread::sleep(after);
    std::fs::write("/dev/kmsg", format!("<4>{marker}\n")).expect("write /dev/kmsg as root");
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    Some((read_json(&file), marker, stdout, dir))
}

/// The message of `report`'s kernel log whose text is `marker`.
fn message_of(report: &Value, marker: &str) -> Value {
    array_of(&report["kernel_log"]["messages"], "messages")
        .iter()
        .find(|m| m["text"] == marker)
        .unwrap_or_else(|| panic!("{marker} not in {report}"))
        .clone()
}

#[test]
fn a_kernel_warning_during_the_run_is_in_the_report() {
    let Some((report, marker, stdout, _dir)) = run_with_kernel_warning(
        "a_kernel_warning_during_the_run",
        "mq -D 2",
        Duration::from_millis(800),
    ) else {
        return;
    };
    let log = &report["kernel_log"];
    assert_eq!(log["followed"], true, "{log}");
    let message = message_of(&report, &marker);
    assert_eq!(message["kind"], "kernel_warning");
    assert_eq!(message["level"], 4);
    let t = f64_of(&message["time_s"], "time_s");
    assert!((0.0..10.0).contains(&t), "{message}");
    assert!(
        unwrapped(&stdout).contains("warning: kernel log: ")
            && unwrapped(&stdout).contains(&marker),
        "{stdout}"
    );
}

/// A run of several tests: each records when it started on the run's clock
/// (`started_s`), and `latscope report` marks a kernel message on the test it
/// happened in, and only there. Which test that is depends on when the
/// message lands; the test finds the message by its text and its test by
/// the recorded starts, never by timing.
#[test]
fn a_kernel_message_of_a_run_of_several_tests_is_marked_on_its_test() {
    let Some((report, marker, _stdout, dir)) = run_with_kernel_warning(
        "a_kernel_message_of_a_run_of_several_tests",
        "ipc --only pipe,eventfd --mode oneway -D 1",
        Duration::from_millis(1500),
    ) else {
        return;
    };
    let file = dir.path().join("report.json");
    let tests = array_of(&report["tests"], "tests");
    assert_eq!(tests.len(), 2, "{report}");
    let starts: Vec<f64> = tests
        .iter()
        .map(|t| f64_of(&t["started_s"], "started_s"))
        .collect();
    assert!(
        starts[0] >= 0.0 && starts[0] < starts[1] && starts[1] < 30.0,
        "{starts:?}"
    );
    let message = message_of(&report, &marker);
    let at = f64_of(&message["time_s"], "time_s");
    let owner = if at >= starts[1] { 1 } else { 0 };

    let page = dir.path().join("report.html");
    let out = run(latscope(30).arg("report").arg(&file).arg("-o").arg(&page));
    assert_code(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    let sections: Vec<&str> = html.split("<section class=\"test\">").skip(1).collect();
    assert_eq!(sections.len(), 2, "one section per test");
    for (i, section) in sections.iter().enumerate() {
        let marked = section.contains(&marker);
        assert_eq!(
            marked,
            i == owner,
            "message at {at} s, tests started at {starts:?}: section {i} marked: {marked}"
        );
    }
    let want = format!(
        "kernel log, {:.1} s after the test's start ({at:.1} s into the run)",
        at - starts[owner]
    );
    assert!(
        sections[owner].contains(&want),
        "{want} in {}",
        sections[owner]
    );
}

#[test]
fn an_unreadable_kernel_log_is_a_note_not_an_error() {
    let restricted =
        std::fs::read_to_string("/proc/sys/kernel/dmesg_restrict").is_ok_and(|v| v.trim() == "1");
    if !restricted {
        latscope::testing::skip(
            "slow::load::an_unreadable_kernel_log_is_a_note_not_an_error",
            "kernel.dmesg_restrict is not 1, so every user may read /dev/kmsg",
        );
        return;
    }
    let mut cmd = match nobody_runner() {
        Ok(cmd) => cmd,
        Err(why) => {
            latscope::testing::skip(
                "slow::load::an_unreadable_kernel_log_is_a_note_not_an_error",
                &why.to_string(),
            );
            return;
        }
    };
    cmd.arg(bin()).args(args(
        "pipe -D 0.3 -q --no-mlockall --no-dma-latency --json -",
    ));
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 0);
    let report: Value = serde_json::from_slice(&out.stdout).expect("the report on stdout");
    let log = &report["kernel_log"];
    assert_eq!(log["followed"], false, "{log}");
    assert!(
        log["note"]
            .as_str()
            .unwrap()
            .starts_with("the kernel log was not followed: cannot open /dev/kmsg"),
        "{log}"
    );
}
