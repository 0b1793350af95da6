//! SIGUSR1 while a test runs: a snapshot of the results so far is shown and
//! every output file is rewritten, and the run goes on to its normal end
//! (docs/fleet.md, "Snapshots (SIGUSR1)").

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits until `file` holds a complete report (the outputs are written to a
/// temporary name and renamed, so a file that exists is whole). Generous:
/// the snapshot comes after the receiver's next sample and the monitor's
/// next tick, which a busy machine can delay by seconds, never minutes.
fn wait_for_report(file: &Path, all: &dyn Fn() -> String) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "no snapshot written to {}\n{}",
            file.display(),
            all()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    read_json(file)
}

/// Waits until process `pid` has `count` threads (its measuring threads
/// beside the main one: an IPC pair's receiver thread and sender, thread or
/// process, make 3), so a SIGUSR1 is not sent before the run started (it
/// would still be served, at the start).
fn wait_for_threads(pid: u32, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.count())
            .unwrap_or(0);
        if threads >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "latscope {pid} never started measuring"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `latscope ARGV --json FILE` for 6 s with one SIGUSR1 once it measures:
/// the snapshot file (end reason `running`, samples so far), then the final
/// file (the same test, ended by its duration, with more samples), and the
/// snapshot on the console stream `snapshot_on` names.
fn snapshot_during(argv: &[&str], json_to_stdout: bool) {
    snapshot_of(argv, &["-D", "6s"], 3, json_to_stdout);
}

/// `snapshot_during` for any test: `run_for` sets its duration (6 s),
/// `threads` is how many threads it has once it measures.
fn snapshot_of(argv: &[&str], run_for: &[&str], threads: usize, json_to_stdout: bool) {
    let (_dir, file) = temp_file("report.json");
    let mut argv: Vec<&str> = argv.to_vec();
    argv.extend_from_slice(run_for);
    // The log-disk writer locks no memory (it has no --no-mlockall).
    if argv[0] != "logdisk" {
        argv.extend_from_slice(mlock_args());
    }
    // The final report goes to the file; with `json_to_stdout` it goes to
    // standard output as well (a second output, --csv -) to show where the
    // snapshot's console goes then.
    argv.extend(["--json", file.to_str().unwrap()]);
    if json_to_stdout {
        argv.extend(["--csv", "-"]);
    }
    let spawned = spawn(&argv);
    let pid = spawned.child.id();
    wait_for_threads(pid, threads);
    std::thread::sleep(Duration::from_millis(500));
    spawned.signal(libc::SIGUSR1);
    let snapshot = wait_for_report(&file, &|| format!("{argv:?}"));
    let (status, out, err) = spawned.wait(Duration::from_secs(120));
    let all = dump(status, &out, &err);
    // With --max-latency the run ends with exit 3 (samples above it).
    let limited = argv.contains(&"--max-latency");
    assert_eq!(status.code(), Some(if limited { 3 } else { 0 }), "{all}");

    check_report_header(&snapshot);
    let test = &snapshot["tests"][0];
    assert_eq!(test["end_reason"], "running", "{all}");
    let early = test["overall"]["samples"].as_u64().unwrap();
    assert!(early > 0, "the snapshot holds no samples\n{all}");
    // What the windows do not carry is in the snapshot too: with a limit of
    // 1 us every series has samples above it by its first window (no IPC
    // wake-up, timer wake-up or interruption takes under 1 us here), and a
    // noise CPU its noise so far.
    if limited {
        for series in test["series"].as_array().unwrap() {
            let above = series["above_limit"].as_u64().unwrap();
            assert!(
                above > 0,
                "{} above the limit in the snapshot\n{all}",
                series["label"]
            );
            if series["detail"]["kind"] == "noise_cpu" {
                let share = series["detail"]["noise_percent"].as_f64().unwrap();
                assert!(share > 0.0, "noise share {share} in the snapshot\n{all}");
            }
        }
    }

    let report = read_json(&file);
    let test = &report["tests"][0];
    assert_eq!(test["end_reason"], "duration_elapsed", "{all}");
    let total = test["overall"]["samples"].as_u64().unwrap();
    assert!(
        total > early,
        "final {total} samples, snapshot {early}\n{all}"
    );

    // The console: one heading and the summary, on stdout for people, on
    // stderr when an output owns stdout.
    let (shown, other) = if json_to_stdout {
        (&err, &out)
    } else {
        (&out, &err)
    };
    assert_eq!(
        shown
            .lines()
            .filter(|l| l.starts_with("latscope: snapshot after "))
            .count(),
        1,
        "{all}"
    );
    assert!(shown.contains("still running (snapshot)"), "{all}");
    assert!(!other.contains("snapshot"), "{all}");
}

#[test]
fn sigusr1_snapshots_an_mq_run_which_goes_on() {
    snapshot_during(&["mq", "--max-latency", "1"], false);
}

#[test]
fn sigusr1_snapshot_goes_to_stderr_when_an_output_owns_stdout() {
    snapshot_during(&["mq"], true);
}

#[test]
fn sigusr1_snapshots_a_signal_run_without_disturbing_its_wake_ups() {
    // The signal test wakes its own tasks with SIGUSR1 (threads, and a
    // forked sender): an outsider's SIGUSR1 is a snapshot, never a sample.
    snapshot_during(&["signal"], false);
    snapshot_during(&["signal", "-f"], false);
}

// The timer, noise and log-disk tests take their snapshots from the
// windows drained so far (pipeline::live): one asked for before the first
// window closed waits for it, so the snapshot always holds samples.

#[test]
fn sigusr1_snapshots_a_timer_run_which_goes_on() {
    // One sampling thread (CPU 0) beside the main thread.
    snapshot_of(
        &["timer", "-q", "-p", "1000", "-c", "0", "--max-latency", "1"],
        &["-T", "6s"],
        2,
        false,
    );
}

#[test]
fn sigusr1_snapshots_a_noise_run_at_normal_priority() {
    snapshot_of(
        &[
            "noise",
            "-q",
            "--policy",
            "other",
            "--cpus",
            "0",
            "--max-latency",
            "1",
        ],
        &["-D", "6s"],
        2,
        false,
    );
}

#[test]
fn sigusr1_snapshots_a_logdisk_run_which_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap().to_string();
    snapshot_of(
        &["logdisk", "-q", "--no-direct", "--dir", &dir],
        &["--duration", "6"],
        2,
        false,
    );
}
