//! Windowed percentiles (issue 21): every window of every kind of series (a
//! timer thread, an IPC pair, a log-disk writer) carries its own p50, p99 and
//! p99.9 next to its exact min and max, in order, and the windows' samples
//! add up to the series'.

use crate::common::*;
use serde_json::Value;

/// Checks every window of every series of `report`; returns the number of
/// windows seen.
fn check_windows(report: &Value) -> usize {
    check_report_header(report);
    let mut seen = 0;
    for t in report["tests"].as_array().expect("tests") {
        for s in t["series"].as_array().expect("series") {
            let windows = array_of(&s["per_second"], "per_second");
            assert!(!windows.is_empty(), "{}: no windows", s["label"]);
            // These runs are shorter than the histogram ring (8 windows):
            // no window can lose its histogram, however busy the machine.
            for w in windows {
                for k in ["p50_ns", "p99_ns", "p999_ns"] {
                    assert!(w[k].is_i64(), "{}: window without {k}: {w}", s["label"]);
                }
                assert!(i64_of(&w["p999_ns"], "p999") <= i64_of(&w["max_ns"], "max"));
                assert!(i64_of(&w["p50_ns"], "p50") >= i64_of(&w["min_ns"], "min"));
                seen += 1;
            }
            let in_windows: u64 = windows
                .iter()
                .map(|w| u64_of(&w["samples"], "samples"))
                .sum();
            assert_eq!(
                in_windows,
                u64_of(&s["samples"], "samples"),
                "{}: windows hold every sample",
                s["label"]
            );
        }
    }
    seen
}

#[test]
fn timer_windows_have_percentiles() {
    let (dir, json) = temp_file("t.json");
    let mut cmd = latscope(60);
    cmd.args(["timer", "-T", "3", "-q"]).args(mlock_args());
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert!(check_windows(&report) >= 2);
    drop(dir);
}

#[test]
fn ipc_windows_have_percentiles() {
    let (dir, json) = temp_file("m.json");
    let cmd = mq(&args("-D 2 -i 500 -q"), 60);
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert!(check_windows(&report) >= 2);
    drop(dir);
}

#[test]
fn logdisk_windows_have_percentiles() {
    let files = disk_dir("fleet-windows");
    let (dir, json) = temp_file("l.json");
    let mut cmd = latscope(60);
    cmd.args([
        "logdisk",
        "-q",
        "--duration",
        "2",
        "--numFiles",
        "2",
        "--fileSize",
        "1M",
    ])
    .arg(format!("--dir={}", files.path().display()));
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert!(check_windows(&report) >= 1);
    drop(dir);
}
