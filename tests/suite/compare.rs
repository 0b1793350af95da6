//! `latscope compare` and `--fail-if` through the real binary: one short real
//! futex run gives a report; the others are that report with known figures
//! written in, so every table cell, delta and threshold is exact.

use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// `latscope futex ARGS` (short, two pairs), with `--no-mlockall` where needed.
fn futex(extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = latscope(30);
    cmd.args(args("futex -l 200 -i 100 -t 2 -q"))
        .args(extra)
        .args(mlock_args());
    cmd
}

/// A real report of two pairs, written once per test into `dir`.
fn real_report(dir: &Path) -> Value {
    let file = dir.join("real.json");
    let out = run(futex(&["--json", file.to_str().unwrap()]));
    assert_code(&out, 0);
    read_json(&file)
}

/// Sets a summary's min, avg, p50, p99, p99.9 and max (microseconds).
fn set_figures(summary: &mut Value, us: [f64; 6]) {
    let ns = us.map(|u| (u * 1000.0).round() as i64);
    summary["min_ns"] = json!(ns[0]);
    summary["avg_ns"] = json!(ns[1] as f64);
    summary["max_ns"] = json!(ns[5]);
    for p in summary["percentiles"].as_array_mut().unwrap() {
        let at = p["percentile"].as_f64().unwrap();
        for (q, v) in [(50.0, ns[2]), (99.0, ns[3]), (99.9, ns[4])] {
            if (at - q).abs() < 1e-9 {
                p["ns"] = json!(v);
            }
        }
    }
}

/// The real report with these figures for pair 0, pair 1 (p99 + 1 us) and the
/// overall summary (p99 + 2 us), written to `dir/name`.
fn variant(dir: &Path, real: &Value, name: &str, us: [f64; 6]) -> PathBuf {
    let mut report = real.clone();
    let test = &mut report["tests"][0];
    let plus = |d: f64| us.map(|v| v + d);
    set_figures(&mut test["series"][0], us);
    set_figures(&mut test["series"][1], plus(1.0));
    set_figures(&mut test["overall"], plus(2.0));
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    path
}

const BASE: [f64; 6] = [1.0, 2.0, 1.5, 10.0, 11.0, 12.0];
const NEW: [f64; 6] = [1.0, 2.5, 1.5, 12.0, 13.0, 14.0];

struct Files {
    _dir: TempDir,
    real: Value,
    base: PathBuf,
    new: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let real = real_report(dir.path());
    let base = variant(dir.path(), &real, "base.json", BASE);
    let new = variant(dir.path(), &real, "new.json", NEW);
    Files {
        _dir: dir,
        real,
        base,
        new,
    }
}

fn compare(argv: &[&str], code: i32) -> (String, String) {
    let out = run(latscope(10).arg("compare").args(argv));
    assert_code(&out, code);
    (stdout_of(&out), stderr_of(&out))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn table_shows_every_series_with_deltas() {
    let f = files();
    let (text, _) = compare(&[p(&f.base), p(&f.new)], 0);
    for line in [
        "futex pair 0 (samples: base 200, new 200)",
        "Metric     Base      New     Delta  Change",
        "min     1.00 us  1.00 us      0 ns    0.0%",
        "avg     2.00 us  2.50 us   +500 ns  +25.0%",
        "p50     1.50 us  1.50 us      0 ns    0.0%",
        "p99     10.0 us  12.0 us  +2.00 us  +20.0%",
        "p99.9   11.0 us  13.0 us  +2.00 us  +18.2%",
        "max     12.0 us  14.0 us  +2.00 us  +16.7%",
        "futex pair 1 (samples: base 200, new 200)",
        "p99     11.0 us  13.0 us  +2.00 us  +18.2%",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} missing:\n{text}");
    }
    assert!(!text.contains("all series"), "{text}");
}

#[test]
fn merge_compares_the_overall_figures() {
    let f = files();
    let (text, _) = compare(&["--merge", p(&f.base), p(&f.new)], 0);
    assert!(
        text.contains("futex all series (samples: base 400, new 400)"),
        "{text}"
    );
    // overall = figures + 2 us
    assert!(
        text.lines()
            .any(|l| l == "p99     12.0 us  14.0 us  +2.00 us  +16.7%"),
        "{text}"
    );
    assert!(!text.contains("pair 0"), "{text}");
}

#[test]
fn several_bases_compare_with_their_median() {
    let f = files();
    let dir = f._dir.path();
    let b1 = variant(dir, &f.real, "b1.json", [1.0, 2.0, 1.5, 30.0, 31.0, 32.0]);
    let b2 = variant(dir, &f.real, "b2.json", [1.0, 2.0, 1.5, 10.0, 11.0, 12.0]);
    let b3 = variant(dir, &f.real, "b3.json", [3.0, 2.0, 1.5, 20.0, 21.0, 22.0]);
    let new = variant(dir, &f.real, "n.json", [1.0, 2.0, 1.5, 22.0, 21.0, 22.0]);
    let (text, _) = compare(
        &[
            "--base",
            p(&b1),
            "--base",
            p(&b2),
            "--base",
            p(&b3),
            p(&new),
            "--fail-if",
            "p99>+5%",
        ],
        3,
    );
    assert!(text.starts_with("base: median of 3 reports ("), "{text}");
    assert!(
        text.contains("(samples: base 200/200/200, new 200)"),
        "{text}"
    );
    for line in [
        "min     1.00 us  1.00 us      0 ns    0.0%",
        "p99     20.0 us  22.0 us  +2.00 us  +10.0%",
        "p99.9   21.0 us  21.0 us      0 ns    0.0%",
        "FAIL: futex pair 0: p99>+5% crossed (p99 = 22.0 us, base 20.0 us: +2.00 us, +10.0%)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} missing:\n{text}");
    }
    // Two bases: the mean of the two middle values (10 and 30 us).
    let (text, _) = compare(&["--base", p(&b1), "--base", p(&b2), p(&new)], 0);
    assert!(
        text.lines()
            .any(|l| l == "p99     20.0 us  22.0 us  +2.00 us  +10.0%"),
        "{text}"
    );
}

#[test]
fn each_threshold_form_crosses_or_holds() {
    let f = files();
    // p99 10 -> 12 us (+20 %), p99.9 11 -> 13 us (+2 us), max 12 -> 14 us;
    // pair 1 is 1 us higher on both sides.
    for (expr, code) in [
        ("p99>+25%", 0),
        ("p99>+15%", 3),
        ("p99.9>+2us", 0),
        ("p99.9>+1.5us", 3),
        ("max>200us", 0),
        ("max>14.5us", 3),
        ("avg>2.4us", 3),
        ("p99.99>1h", 0),
    ] {
        let (text, _) = compare(&[p(&f.base), p(&f.new), "--fail-if", expr], code);
        if code == 3 {
            let fail = format!("FAIL: futex pair 1: {expr} crossed");
            assert!(
                text.lines().any(|l| l.starts_with(&fail)),
                "{expr}:\n{text}"
            );
        } else {
            assert!(!text.contains("FAIL"), "{expr}:\n{text}");
            assert!(
                text.contains("ok: every --fail-if threshold held"),
                "{text}"
            );
        }
    }
    // Only pair 1 crosses max>14.5us (its max is 15 us).
    let (text, _) = compare(&[p(&f.base), p(&f.new), "--fail-if", "max>14.5us"], 3);
    assert_eq!(text.matches("FAIL").count(), 1, "{text}");
}

#[test]
fn json_output_has_the_comparison() {
    let f = files();
    let out_file = f._dir.path().join("cmp.json");
    compare(
        &[
            p(&f.base),
            p(&f.new),
            "--fail-if",
            "p99>+10%",
            "--json",
            p(&out_file),
        ],
        3,
    );
    let c = read_json(&out_file);
    assert_eq!(c["schema"], "latscope-compare");
    assert_eq!(c["exit_code"], 3);
    let s = &c["series"][0];
    assert_eq!(
        (s["test"].as_str(), s["series"].as_str()),
        (Some("futex"), Some("pair 0"))
    );
    let p99 = &s["metrics"][3];
    assert_eq!(p99["metric"], "p99");
    assert_eq!(p99["delta_ns"], 2000.0);
    assert_eq!(p99["change_pct"], 20.0);
    assert_eq!(c["thresholds"][0]["crossed"], true);
    assert_eq!(c["thresholds"][0]["base_ns"], 10000.0);
}

#[test]
fn mismatched_or_bad_input_is_one_line_and_exit_2() {
    let f = files();
    let dir = f._dir.path();
    let write = |name: &str, v: &Value| {
        let path = dir.join(name);
        std::fs::write(&path, v.to_string()).unwrap();
        path
    };
    let mut other_test = f.real.clone();
    other_test["tests"][0]["test"] = json!("mq");
    let other_test = write("mq.json", &other_test);
    let mut relabelled = f.real.clone();
    for s in relabelled["tests"][0]["series"].as_array_mut().unwrap() {
        s["label"] = json!("thread 9");
    }
    let relabelled = write("relabelled.json", &relabelled);
    let mut v4 = f.real.clone();
    v4["schema_version"] = json!(4);
    let v4 = write("v4.json", &v4);
    let not_ours = write("other.json", &json!({"file_version": 1}));
    let text = dir.join("text.json");
    std::fs::write(&text, "hello").unwrap();
    let missing = dir.join("missing.json");
    let base = p(&f.base);
    for (argv, needle) in [
        (vec![base, p(&other_test)], "measured different tests"),
        (vec![base, p(&relabelled)], "no series in common"),
        (vec![base, p(&v4)], "has schema_version 4"),
        (vec![base, p(&not_ours)], "is not a latscope report"),
        (vec![base, p(&text)], "is not JSON"),
        (vec![base, p(&missing)], "cannot read"),
        (vec![base], "needs a base as well"),
        (vec![base, p(&f.new), "--fail-if", "p99>10"], "needs a unit"),
        (
            vec![base, p(&f.new), "--fail-if", "p42>1us"],
            "unknown metric",
        ),
    ] {
        let (out, err) = compare(&argv, 2);
        assert!(out.is_empty(), "{argv:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{argv:?}: {err}");
        assert!(err.starts_with("latscope: error: "), "{argv:?}: {err}");
        assert!(err.contains(needle), "{argv:?}: {err}");
    }
    // --merge compares what relabelled series cannot.
    compare(&["--merge", base, p(&relabelled)], 0);
}

#[test]
fn fail_if_on_a_test_run() {
    let (dir, file) = temp_file("run.json");
    let out = run(futex(&[
        "--fail-if",
        "max>1ns",
        "--fail-if",
        "p99>1h",
        "--json",
        p(&file),
    ]));
    assert_code(&out, 3);
    let text = stdout_of(&out);
    for pair in ["pair 0", "pair 1"] {
        let line = format!("FAIL: futex {pair}: max>1ns crossed (max = ");
        assert!(text.lines().any(|l| l.starts_with(&line)), "{text}");
    }
    assert!(!text.contains("p99>1h crossed"), "{text}");
    let report = read_json(&file);
    assert_eq!(report["exit_code"], 3);
    let checks = array_of(&report["thresholds"], "thresholds");
    assert_eq!(checks.len(), 4, "two thresholds x two pairs");
    assert_eq!(checks[0]["expr"], "max>1ns");
    assert_eq!(checks[0]["test"], "futex");
    assert_eq!(checks[0]["series"], "pair 0");
    assert_eq!(checks[0]["crossed"], true);
    assert_eq!(
        f64_of(&checks[0]["value_ns"], "value_ns"),
        f64_of(&report["tests"][0]["series"][0]["max_ns"], "max_ns")
    );
    assert_eq!(checks[1]["expr"], "p99>1h");
    assert_eq!(checks[1]["crossed"], false);
    drop(dir);

    let out = run(futex(&["--fail-if", "p99>1h"]));
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("ok: every --fail-if threshold held (2 checks)"),
        "{}",
        describe(&out)
    );

    // A relative form needs a base: bad usage before anything runs.
    let out = run(futex(&["--fail-if", "p99>+10%"]));
    assert_code(&out, 2);
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs latscope compare"), "{err}");
}

#[test]
fn logdisk_block_sizes_are_told_apart() {
    // On disk (O_DIRECT works), as tests/suite/slow/logdisk.rs does.
    let work = disk_dir("compare-logdisk");
    let report = work.path().join("l.json");
    let out = run(latscope(60)
        .arg("logdisk")
        .arg(format!("--dir={}", work.path().display()))
        .args(args(
            "--fileSize 64K --numFiles 2 --duration 1 --bsize 4K,8K -q --fail-if max>1ns --json",
        ))
        .arg(&report));
    assert_code(&out, 3);
    let text = stdout_of(&out);
    for size in ["4 KiB", "8 KiB"] {
        let line = format!("FAIL: logdisk {size} writer: max>1ns crossed");
        assert!(text.lines().any(|l| l.starts_with(&line)), "{text}");
    }
    let (text, _) = compare(&[p(&report), p(&report), "--fail-if", "max>+0%"], 0);
    assert!(
        text.contains("logdisk 4 KiB writer (samples: base "),
        "{text}"
    );
    assert!(
        text.contains("logdisk 8 KiB writer (samples: base "),
        "{text}"
    );
    assert!(
        text.contains("ok: every --fail-if threshold held (2 checks)"),
        "{text}"
    );
}

/// Two runs made unlike (issue 40 item 20): FIFO 99 for 60 s under a
/// `--load` on another host with the bpf collector and an older latscope,
/// against the real run. Every difference is named above the comparison,
/// each with the value of each report, and `--json` holds them; a
/// comparison of like runs says nothing of the kind.
#[test]
fn unlike_runs_name_each_difference_above_the_comparison() {
    let f = files();
    let dir = f._dir.path();
    let mut unlike = f.real.clone();
    unlike["tool"]["version"] = json!("0.0.9");
    // Another host whatever this one is called (the suite runs under any
    // host name, rig-17 among them).
    let other_host = format!("not-{}", f.real["sysinfo"]["nodename"].as_str().unwrap());
    unlike["sysinfo"]["nodename"] = json!(other_host);
    unlike["sysinfo"]["release"] = json!("6.1.0-rt");
    unlike["sysinfo"]["cpus_allowed"] = json!([0, 1, 2, 3]);
    unlike["loads"] = json!([{"spec": "cpu:2,io:1"}]);
    let test = &mut unlike["tests"][0];
    test["config"]["policy"] = json!("fifo");
    test["config"]["priority"] = json!(99);
    test["config"]["duration_s"] = json!(60.0);
    test["config"]["loops"] = Value::Null;
    test["config"]["detail"]["interval_us"] = json!(250);
    test["spikes"] = json!({"collector": {"name": "bpf"}, "threshold_ns": 50000});
    let base = dir.join("unlike.json");
    std::fs::write(&base, serde_json::to_string(&unlike).unwrap()).unwrap();
    let json = dir.join("cmp.json");
    let (text, _) = compare(&[p(&base), p(&f.new), "--json", p(&json)], 0);
    let new = p(&f.new);
    let real_policy = match f.real["tests"][0]["config"]["priority"].as_i64().unwrap() {
        0 => f.real["tests"][0]["config"]["policy"]
            .as_str()
            .unwrap()
            .to_string(),
        prio => format!(
            "{} {prio}",
            f.real["tests"][0]["config"]["policy"].as_str().unwrap()
        ),
    };
    let real = |field: &str| f.real["sysinfo"][field].as_str().unwrap().to_string();
    let expected = [
        format!("  latscope version: 0.0.9 ({}); 0.1.0 ({new})", p(&base)),
        format!(
            "  host: {other_host} ({}); {} ({new})",
            p(&base),
            real("nodename")
        ),
        format!("  load: cpu:2,io:1 ({}); none ({new})", p(&base)),
        format!(
            "  futex: policy: fifo 99 ({}); {real_policy} ({new})",
            p(&base)
        ),
        format!("  futex: duration: 60 s ({}); none ({new})", p(&base)),
        format!("  futex: loops: none ({}); 200 ({new})", p(&base)),
        format!("  futex: collector: bpf ({}); none ({new})", p(&base)),
        format!("  futex: interval_us: 250 ({}); 100 ({new})", p(&base)),
    ];
    let lines: Vec<&str> = text.lines().collect();
    let warning = lines
        .iter()
        .position(|l| l.starts_with("warning: the runs were not made alike"))
        .unwrap_or_else(|| panic!("no warning of unlike runs:\n{text}"));
    let table = lines
        .iter()
        .position(|l| l.starts_with("futex pair 0"))
        .unwrap();
    assert!(
        warning < table,
        "the differences come above the comparison:\n{text}"
    );
    for line in &expected {
        assert!(lines.contains(&line.as_str()), "{line:?} missing:\n{text}");
    }
    assert!(
        lines.iter().any(|l| l.starts_with("  kernel: 6.1.0-rt (")),
        "the kernel is not named:\n{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  usable CPUs: 0-3 (")),
        "the CPUs are not named:\n{text}"
    );
    let doc = read_json(&json);
    let whats: Vec<&str> = array_of(&doc["config_differences"], "config_differences")
        .iter()
        .map(|d| d["what"].as_str().unwrap())
        .collect();
    for what in [
        "host",
        "load",
        "futex: policy",
        "futex: collector",
        "latscope version",
    ] {
        assert!(whats.contains(&what), "{what} not in --json: {whats:?}");
    }
    // Like runs: nothing to say.
    let (text, _) = compare(&[p(&f.base), p(&f.new)], 0);
    assert!(!text.contains("not made alike"), "{text}");
}
