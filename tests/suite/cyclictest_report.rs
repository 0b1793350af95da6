//! `latscope cyclictest --latscope-json FILE`: latscope's full Report of a
//! cyclictest run, beside cyclictest's own outputs and never in them. And
//! `-l` with several threads as rt-tests 2.40 counts it: each thread stops
//! after its own loops, the run ends once any thread has done them.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// `latscope cyclictest ARGS`, which must end within two minutes.
fn cyclictest(args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("cyclictest").args(args);
    run_std_with_timeout(cmd, Duration::from_secs(120))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a parser of cyclictest's lines relies on: every character but the
/// numbers, with each number (and the padding before it) as one `N`. The
/// exact field widths are tests/suite/slow/cyclictest_golden.rs's subject; here the
/// point is that the option adds, removes and reorders nothing.
fn shape(stdout: &str) -> Vec<String> {
    stdout.split('\n').map(mask_unpadded).collect()
}

fn read_json(path: &Path) -> Value {
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{}: {e}\n{body}", path.display()))
}

/// The report's series: (label, samples, windows).
fn series(report: &Value) -> Vec<(String, u64, usize)> {
    let test = &report["tests"][0];
    assert_eq!(test["test"], "cyclictest", "{report}");
    test["series"]
        .as_array()
        .expect("series")
        .iter()
        .map(|s| {
            (
                s["label"].as_str().expect("label").to_string(),
                s["samples"].as_u64().expect("samples"),
                s["per_second"].as_array().expect("per_second").len(),
            )
        })
        .collect()
}

/// rt-tests' JSON: each thread's cycles, in thread order.
fn cycles(rt_json: &Value) -> Vec<u64> {
    let threads = rt_json["thread"].as_object().expect("thread");
    (0..threads.len())
        .map(|i| threads[&i.to_string()]["cycles"].as_u64().expect("cycles"))
        .collect()
}

#[test]
fn latscope_json_holds_every_loop_and_stdout_stays_cyclictests() {
    for form in ["separate", "equals"] {
        let (_dir, report_path) = temp_file("report.json");
        let path = report_path.to_str().unwrap().to_string();
        let joined = format!("--latscope-json={path}");
        let mut args = vec!["-q", "-l", "50", "-i", "1000"];
        match form {
            "separate" => args.extend(["--latscope-json", &path]),
            _ => args.push(&joined),
        }
        let out = cyclictest(&args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(
            shape(&stdout),
            shape(&golden("cyclictest", "q_l50.txt")),
            "{args:?}: stdout\n{stdout}"
        );
        // latscope's warnings, if any, are on stderr only, in its words.
        for line in stderr.lines() {
            assert!(
                line.starts_with("warning: ") || line.starts_with("context: "),
                "{args:?}: unexpected stderr line {line:?}"
            );
        }
        let report = read_json(&report_path);
        let found = series(&report);
        assert_eq!(found.len(), 1, "{report}");
        assert_eq!(found[0].0, "thread 0");
        assert_eq!(found[0].1, 50, "every loop is a sample: {report}");
        assert!(found[0].2 >= 1, "per-second windows: {report}");
        let s = &report["tests"][0]["series"][0];
        assert!(s["percentiles"].as_array().is_some_and(|p| !p.is_empty()));
        assert!(s["histogram"].as_array().is_some_and(|h| !h.is_empty()));
        assert_eq!(report["tests"][0]["end_reason"], "loops_done");
        assert!(report["sysinfo"].is_object(), "machine facts: {report}");
    }
}

#[test]
fn without_the_option_nothing_but_cyclictests_lines() {
    let out = cyclictest(&["-q", "-l", "50", "-i", "1000"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        shape(&text(&out.stdout)),
        shape(&golden("cyclictest", "q_l50.txt"))
    );
    assert_eq!(text(&out.stderr), golden("cyclictest", "q_l50.err"));
}

/// rt-tests 2.40's main loop breaks once any thread has done its loops, and
/// its `shutdown` then stops the others where they are (`cyclictest -t2 -l
/// 500 -i 1000 -d 100` gives 500 and about 466 cycles). Thread 1's interval
/// is 11 ms here, so its 500 loops would take 5.5 s against thread 0's
/// 0.5 s: far from any scheduling noise. The Report counts what cyclictest's
/// JSON counts, thread by thread.
#[test]
fn loops_end_the_run_when_the_first_thread_is_done() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt_json = dir.path().join("rt.json");
    let report_path = dir.path().join("report.json");
    let rt_arg = format!("--json={}", rt_json.display());
    let out = cyclictest(&[
        "-q",
        "-t2",
        "-l",
        "500",
        "-i",
        "1000",
        "-d",
        "10000",
        &rt_arg,
        "--latscope-json",
        report_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let counted = cycles(&read_json(&rt_json));
    assert_eq!(counted[0], 500, "{counted:?}");
    assert!(
        counted[1] < 500,
        "thread 1 stopped with the run: {counted:?}"
    );
    let report = read_json(&report_path);
    let samples: Vec<u64> = series(&report).iter().map(|s| s.1).collect();
    assert_eq!(samples, counted, "{report}");
}

#[test]
fn bad_latscope_json_paths_are_usage_errors_before_measuring() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no/such/dir/report.json");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--latscope-json", missing.to_str().unwrap()],
            "--latscope-json",
        ),
        (&["--latscope-json", "-"], "standard output"),
        (&["--latscope-json"], "needs a file name"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["-q", "-l", "100000"];
        args.extend_from_slice(extra);
        let out = cyclictest(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(text(&out.stdout), "", "{args:?}: nothing measured");
    }
}

/// latscope's option is matched only when spelled in full: cyclictest's own
/// abbreviations keep their meaning (`--lat` is `--latency`), and an
/// abbreviation of it is getopt's unknown option, as in cyclictest.
#[test]
fn getopt_abbreviations_stay_cyclictests() {
    let out = cyclictest(&["-q", "-l", "5", "--lat", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        shape(&text(&out.stdout)),
        shape(&golden("cyclictest", "q_l50.txt"))
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("report.json");
    let out = cyclictest(&["-q", "-l", "5", "--latscope-js", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("unrecognized option '--latscope-js'"),
        "{}",
        text(&out.stderr)
    );
    assert!(!path.exists(), "no report from an unknown option");
}

/// `--smi` on a processor without the SMI counter (rt-tests checks
/// turbostat's list of Intel models; this VM's AMD EPYC has none, and its
/// kernel has no msr module either): cyclictest's `FATAL:` line, captured
/// from rt-tests 2.40 (`cyclictest --smi -a 0 -l 5 -q`), nothing on
/// stdout, exit 1.
#[test]
fn smi_without_the_counter_is_cyclictests_fatal_line() {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if cpuinfo.contains("GenuineIntel") {
        latscope::testing::skip(
            "cyclictest_report::smi_without_the_counter_is_cyclictests_fatal_line",
            "an Intel processor may have the SMI counter",
        );
        return;
    }
    let out = cyclictest(&["--smi", "-a", "0", "-l", "5", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        golden("cyclictest", "smi_unsupported.err")
    );
}

/// The lean drop-in binary (the package's `cyclictest` link) hands
/// `--latscope-json` to the full binary next to it: the same Report, and
/// stdout still cyclictest's.
#[test]
fn dropin_hands_latscope_json_to_the_full_binary() {
    let (_dir, report_path) = temp_file("report.json");
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("cyclictest");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_latscope-cyclictest"), &link).unwrap();
    let mut cmd = Command::new(&link);
    cmd.args(["-q", "-l", "50", "-i", "1000", "--latscope-json"])
        .arg(&report_path);
    let out = run_std_with_timeout(cmd, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        shape(&text(&out.stdout)),
        shape(&golden("cyclictest", "q_l50.txt"))
    );
    let report = read_json(&report_path);
    let found = series(&report);
    assert_eq!(found.len(), 1, "{report}");
    assert_eq!(found[0].1, 50, "every loop is a sample: {report}");
}

/// A drop-in binary installed without the full binary still runs
/// cyclictest, and says in one line what `--latscope-json` needs (exit 1,
/// nothing written) instead of failing obscurely.
#[test]
fn dropin_alone_says_what_latscope_json_needs() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("cyclictest");
    std::fs::copy(env!("CARGO_BIN_EXE_latscope-cyclictest"), &alone).unwrap();
    let report_path = dir.path().join("report.json");
    let mut cmd = Command::new(&alone);
    cmd.args(["-q", "-l", "5", "--latscope-json"])
        .arg(&report_path);
    let out = run_std_with_timeout(cmd, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("latscope: error: ") && stderr.contains("full latscope binary"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(!report_path.exists());
    let mut cmd = Command::new(&alone);
    cmd.args(["-q", "-l", "5"]);
    let out = run_std_with_timeout(cmd, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        shape(&text(&out.stdout)),
        shape(&golden("cyclictest", "q_l50.txt"))
    );
}
