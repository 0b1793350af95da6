//! SIGUSR1 while a test runs: a snapshot of the results so far is shown and
//! every output file is rewritten, and the run goes on to its normal end
//! (docs/fleet.md, "Snapshots (SIGUSR1)").

mod common;

use common::*;
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

/// Waits until the run measures: its pair's tasks exist (latscope's
/// receiver thread and the sender, thread or process), so a SIGUSR1 is not
/// sent before the run started (it would still be served, at the start).
fn wait_until_measuring(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.count())
            .unwrap_or(0);
        if threads >= 3 {
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
    let (_dir, file) = temp_file("report.json");
    let mut argv: Vec<&str> = argv.to_vec();
    argv.extend(["-D", "6s"]);
    argv.extend_from_slice(mlock_args());
    // The final report goes to the file; with `json_to_stdout` it goes to
    // standard output as well (a second output, --csv -) to show where the
    // snapshot's console goes then.
    argv.extend(["--json", file.to_str().unwrap()]);
    if json_to_stdout {
        argv.extend(["--csv", "-"]);
    }
    let spawned = spawn(&argv);
    let pid = spawned.child.id();
    wait_until_measuring(pid);
    std::thread::sleep(Duration::from_millis(500));
    spawned.signal(libc::SIGUSR1);
    let snapshot = wait_for_report(&file, &|| format!("{argv:?}"));
    let (status, out, err) = spawned.wait(Duration::from_secs(120));
    let all = dump(status, &out, &err);
    assert_eq!(status.code(), Some(0), "{all}");

    check_report_header(&snapshot);
    let test = &snapshot["tests"][0];
    assert_eq!(test["end_reason"], "running", "{all}");
    let early = test["overall"]["samples"].as_u64().unwrap();
    assert!(early > 0, "the snapshot holds no samples\n{all}");

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
    snapshot_during(&["mq"], false);
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

#[test]
fn the_timer_says_it_has_no_snapshot_and_goes_on() {
    let (_dir, file) = temp_file("timer.json");
    let mut argv = vec!["timer", "-q", "-p", "1000", "-T", "4s"];
    argv.extend_from_slice(mlock_args());
    argv.extend(["--json", file.to_str().unwrap()]);
    let spawned = spawn(&argv);
    wait_until_measuring(spawned.child.id());
    spawned.signal(libc::SIGUSR1);
    let (status, out, err) = spawned.wait(Duration::from_secs(120));
    let all = dump(status, &out, &err);
    assert_eq!(status.code(), Some(0), "{all}");
    assert!(
        err.contains(
            "latscope: no snapshot (SIGUSR1) of the timer test in this version; the run goes on"
        ),
        "{all}"
    );
    let report = read_json(&file);
    assert_eq!(
        report["tests"][0]["end_reason"], "duration_elapsed",
        "{all}"
    );
}
