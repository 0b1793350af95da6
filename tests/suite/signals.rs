//! Ctrl-C (SIGINT) and SIGTERM in the middle of an endless run: the results so
//! far are printed and written exactly as at a normal end, exit code 0, and no
//! message queue is left behind.

use crate::common::*;
use std::time::Duration;

/// An endless run stopped by a signal, which exited with code 0.
struct Interrupted {
    stdout: String,
    /// Status, stdout and stderr, for assertion messages.
    all: String,
    pid: u32,
    /// The `--json` report, in `_dir`.
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// Starts an endless `latscope mq -i 1000 EXTRA --json FILE` run, lets it
/// measure, then signals it; asserts that it exits with code 0.
fn interrupt_run(extra: &str, sig: libc::c_int) -> Interrupted {
    let (dir, file) = temp_file("report.json");
    let mut argv = args("mq -i 1000");
    argv.extend(args(extra));
    argv.extend(["--json", file.to_str().unwrap()]);
    argv.extend_from_slice(mlock_args());
    let child = spawn(&argv);
    let pid = child.child.id();
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(sig);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(60));
    let all = dump(status, &stdout, &stderr);
    assert_eq!(status.code(), Some(0), "{all}");
    Interrupted {
        all,
        stdout,
        pid,
        file,
        _dir: dir,
    }
}

#[test]
fn sigint_reports_results_so_far_and_leaves_no_queue() {
    let job = interrupt_run("", libc::SIGINT);
    let (stdout, all) = (&job.stdout, &job.all);
    assert!(
        stdout.lines().any(|l| l.starts_with("pair 0")),
        "no result table on stdout\n{all}"
    );
    assert!(stdout.contains("interrupted"), "end not named\n{all}");

    let report = read_json(&job.file);
    check_report_header(&report);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    let series = series(&report);
    assert_eq!(series.len(), 1);
    let mut queues = Vec::new();
    for (i, s) in series.iter().enumerate() {
        assert!(check_summary(s, &format!("series[{i}]"), true) > 0);
        let names = s["detail"]["resources"].as_array().unwrap_or_else(|| {
            panic!(
                "series[{i}].resources missing: {}",
                evidence("json", &s.to_string())
            )
        });
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
    assert_no_latscope_queues(job.pid);
}

#[test]
fn sigterm_with_classic_format_reports_and_leaves_no_queue() {
    let job = interrupt_run("--format classic", libc::SIGTERM);
    let all = &job.all;
    let got = lines(&job.stdout);
    assert_eq!(got.len(), 2, "classic output is 2 lines per pair\n{all}");
    assert!(
        matches(
            r"^#0: ID\d+, P0, CPU\d+, I1000; #1: ID\d+, P0, CPU\d+, TO 0, Cycles [1-9]\d*$",
            got[0]
        ),
        "{all}"
    );
    assert!(matches(&classic_stat_regex(0), got[1]), "{all}");

    let v = read_json(&job.file);
    assert_eq!(v["return_code"], 0);
    assert_eq!(v["num_threads"], 1);
    let samples = u64_of(&v["thread"]["0"]["sender"]["samples"], "sender.samples");
    assert!(
        samples > 0,
        "no samples before SIGTERM: {}",
        evidence("json", &v.to_string())
    );
    assert!(
        u64_of(&v["thread"]["0"]["receiver"]["max"], "receiver.max")
            >= u64_of(&v["thread"]["0"]["receiver"]["min"], "receiver.min")
    );
    assert_no_latscope_queues(job.pid);
}
