//! Ctrl-C (SIGINT) and SIGTERM in the middle of an endless run: the results so
//! far are printed and written exactly as at a normal end, exit code 0, and no
//! message queue is left behind.

mod common;

use common::*;
use std::time::Duration;

/// Starts an endless `latscope mq` run, lets it measure, then signals it.
fn interrupt_run(
    extra: &[&str],
    sig: libc::c_int,
) -> (std::process::ExitStatus, String, String, u32) {
    let mut args = vec!["mq", "-i", "1000"];
    args.extend_from_slice(extra);
    args.extend_from_slice(mlock_args());
    let child = spawn(&args);
    let pid = child.child.id();
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(sig);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(10));
    (status, stdout, stderr, pid)
}

#[test]
fn sigint_reports_results_so_far_and_leaves_no_queue() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("int.json");
    let (status, stdout, stderr, pid) =
        interrupt_run(&["--json", file.to_str().unwrap()], libc::SIGINT);
    let all = format!("status {status:?}\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}");
    assert_eq!(status.code(), Some(0), "{all}");
    assert!(
        stdout.lines().any(|l| l.starts_with("pair 0")),
        "no result table on stdout\n{all}"
    );
    assert!(stdout.contains("interrupted"), "end not named\n{all}");

    let report = read_json(&file);
    check_report_header(&report);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    let series = series(&report);
    assert_eq!(series.len(), 1);
    let mut queues = Vec::new();
    for (i, s) in series.iter().enumerate() {
        assert!(check_summary(s, &format!("series[{i}]"), true) > 0);
        let names = s["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("series[{i}].resources missing: {s}"));
        assert!(!names.is_empty(), "no queue names in series[{i}].resources");
        queues.extend(names.iter().map(|n| n.as_str().unwrap().to_string()));
    }
    for q in &queues {
        assert!(
            q.starts_with("/latscope-"),
            "queue {q} is not named /latscope-*"
        );
        assert_queue_gone(q);
    }
    assert_no_latscope_queues(pid);
}

#[test]
fn sigterm_with_classic_format_reports_and_leaves_no_queue() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("term.json");
    let (status, stdout, stderr, pid) = interrupt_run(
        &["--format", "classic", "--json", file.to_str().unwrap()],
        libc::SIGTERM,
    );
    let all = format!("status {status:?}\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}");
    assert_eq!(status.code(), Some(0), "{all}");
    let got = lines(&stdout);
    assert_eq!(got.len(), 2, "classic output is 2 lines per pair\n{all}");
    assert!(
        matches(
            r"^#0: ID\d+, P0, CPU\d+, I1000; #1: ID\d+, P0, CPU\d+, TO 0, Cycles [1-9]\d*$",
            got[0]
        ),
        "{all}"
    );
    assert!(matches(&classic_stat_regex(0), got[1]), "{all}");

    let v = read_json(&file);
    assert_eq!(v["return_code"], 0);
    assert_eq!(v["num_threads"], 1);
    let samples = u64_of(&v["thread"]["0"]["sender"]["samples"], "sender.samples");
    assert!(samples > 0, "no samples before SIGTERM: {v}");
    assert!(
        u64_of(&v["thread"]["0"]["receiver"]["max"], "receiver.max")
            >= u64_of(&v["thread"]["0"]["receiver"]["min"], "receiver.min")
    );
    assert_no_latscope_queues(pid);
}
