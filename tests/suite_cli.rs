//! `latscope suite`: the overview of this machine, as root and as an ordinary
//! user (who gets normal priority and is told so once).

mod common;

use common::*;
use std::time::Duration;

fn check_suite_output(stdout: &str, context: &str) {
    assert!(
        stdout.lines().any(|l| l.starts_with("mq ")),
        "no overview row for mq\n{context}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("Test ")),
        "no overview header\n{context}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("timer ")),
        "no overview row for the timer\n{context}"
    );
}

fn check_suite_report(report: &serde_json::Value) {
    check_report_header(report);
    let tests = report["tests"].as_array().unwrap();
    let mut names: Vec<&str> = tests.iter().map(|t| t["test"].as_str().unwrap()).collect();
    // The log-disk test runs where the current directory is writable;
    // elsewhere (an ordinary user in the repository) it is skipped, saying so.
    if names.last() == Some(&"logdisk") {
        names.pop();
        let disk = tests.last().unwrap();
        assert_eq!(disk["config"]["detail"]["kind"], "logdisk");
        check_summary(&disk["series"][0], "logdisk series", true);
    } else {
        let warnings = report["warnings"].as_array().unwrap();
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with("logdisk skipped: ")),
            "no logdisk row and no note why: {warnings:?}"
        );
    }
    assert_eq!(
        names,
        [
            "mq", "sem", "svsem", "signal", "pipe", "eventfd", "futex", "unix", "svmq", "timer",
            "noise"
        ],
        "every primitive in order, then the timer, the noise (then logdisk)"
    );
    for t in tests {
        assert_eq!(t["end_reason"], "duration_elapsed", "{}", t["test"]);
        let expected_mode = match t["test"].as_str() {
            Some("timer") => "user",
            Some("noise") => "interruptions",
            Some("logdisk") => "dsync",
            _ => "one-way",
        };
        assert_eq!(t["mode"], expected_mode);
    }
    // The timer test: one thread per usable CPU, each with samples.
    let timer = &tests[9];
    assert_eq!(timer["config"]["detail"]["kind"], "timer");
    let threads = timer["series"].as_array().unwrap();
    assert_eq!(threads.len(), allowed_cpus().len());
    for (i, s) in threads.iter().enumerate() {
        check_summary(s, &format!("timer series {i}"), true);
    }
    // The noise row: one CPU at normal priority, its time spun recorded.
    let noise = &tests[10];
    assert_eq!(noise["config"]["detail"]["kind"], "noise");
    assert_eq!(noise["config"]["policy"], "other");
    let spinners = noise["series"].as_array().unwrap();
    assert_eq!(spinners.len(), 1);
    assert!(u64_of(&spinners[0]["detail"]["measured_ns"], "measured_ns") > 0);
    assert_eq!(tests[0]["test"], "mq");
    assert_eq!(tests[0]["end_reason"], "duration_elapsed");
    check_summary(&tests[0]["overall"], "tests[0].overall", false);
    for (i, s) in series(report).iter().enumerate() {
        check_summary(s, &format!("tests[0].series[{i}]"), true);
    }
}

#[test]
fn suite_prints_an_overview_and_writes_a_report() {
    let (_dir, file) = temp_file("suite.json");
    let started = std::time::Instant::now();
    let out = run(latscope(30)
        .args(args("suite --duration 2s --json"))
        .arg(&file));
    let elapsed = started.elapsed();
    assert_code(&out, 0);
    // The whole suite ends within the duration asked: wall time with room
    // for process start and exit on a noisy machine, and the measured time
    // of the nine tests together (each used to overrun its share by up to a
    // monitor tick: about 2.8 s in all).
    assert!(
        elapsed < Duration::from_millis(3_000),
        "suite --duration 2s took {elapsed:?}"
    );
    let measured = read_json(&file)["duration_s"].as_f64().unwrap();
    assert!(
        measured <= 2.1,
        "the tests of suite --duration 2s took {measured} s"
    );
    check_suite_output(&stdout_of(&out), &describe(&out));
    let report = read_json(&file);
    check_suite_report(&report);
    if can_use_realtime() {
        assert_eq!(report["tests"][0]["config"]["policy"], "fifo");
    }
}

#[test]
fn suite_as_an_ordinary_user_runs_at_normal_priority_and_says_so_once() {
    let mut cmd = match nobody_runner() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED suite as an ordinary user: {why}");
            return;
        }
    };
    let dir = temp_dir_with_mode(0o1777);
    let file = dir.path().join("suite-nobody.json");
    cmd.arg(bin())
        .args(args("suite --duration 1s --json"))
        .arg(&file);
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 0);
    check_suite_output(&stdout_of(&out), &describe(&out));
    let stderr = stderr_of(&out);
    let notes = stderr
        .lines()
        .filter(|l| l.contains("real-time priority"))
        .count();
    assert_eq!(
        notes,
        1,
        "expected one note about real-time priority on stderr\n{}",
        describe(&out)
    );
    let report = read_json(&file);
    check_suite_report(&report);
    assert_eq!(report["tests"][0]["config"]["policy"], "other");
}

/// `--max-latency` judges every test of the suite (the IPC rows, the timer
/// and the log-disk writer), as `--fail-if` does: a 1 us limit is crossed by
/// every test on any machine, so each must count samples above it.
#[test]
fn suite_max_latency_judges_every_test() {
    let (_dir, file) = temp_file("suite-limit.json");
    let out = run(latscope(60)
        .args(args("suite --duration 1s --max-latency 1 --json"))
        .arg(&file));
    assert_code(&out, 3);
    let report = read_json(&file);
    let tests = report["tests"].as_array().unwrap();
    assert!(
        tests.iter().any(|t| t["test"] == "timer"),
        "no timer test in the suite"
    );
    for t in tests
        .iter()
        .filter(|t| !t["series"].as_array().unwrap().is_empty())
    {
        let name = t["test"].as_str().unwrap();
        assert_eq!(
            t["config"]["max_latency_us"], 1,
            "{name}: limit not recorded"
        );
        for s in t["series"].as_array().unwrap() {
            let samples = s["samples"].as_u64().unwrap();
            let above = s["above_limit"].as_u64().unwrap();
            assert!(
                samples == 0 || above > 0,
                "{name} {}: {samples} samples, none above a 1 us limit",
                s["label"]
            );
        }
    }
}
