//! `latscope mq` with its modern output and the latscope JSON report: the
//! report's schema and internal consistency, how runs end (loops, duration,
//! break trace), the latency limit verdict and receive timeouts.

use crate::common::*;
use std::time::Duration;

#[test]
fn json_report_of_a_short_run_is_complete_and_consistent() {
    if skip_without_realtime("json_report_of_a_short_run_is_complete_and_consistent") {
        return;
    }
    let (out, report, _dir) = run_mq_report(&args("-l 200 -i 100 -p 80 -q"), 30);
    assert_eq!(report["exit_code"], 0);
    let test = &report["tests"][0];
    assert_eq!(test["test"], "mq");
    assert_eq!(test["end_reason"], "loops_done");
    assert!(test["error"].is_null(), "error: {}", test["error"]);
    let series = series(&report);
    assert_eq!(series.len(), 1, "one pair by default");
    let s = &series[0];
    assert_eq!(check_summary(s, "series[0]", true), 200);
    assert_eq!(s["policy"], "fifo");
    assert_eq!(s["priority"], 80);
    assert_eq!(s["detail"]["interval_us"], 100);
    assert_eq!(s["detail"]["timeouts"], 0);
    assert!(u64_of(&s["detail"]["sent"], "sent") >= 200);
    assert_eq!(check_summary(&test["overall"], "overall", false), 200);
    // The modern console output names the pair even with -q.
    assert!(stdout_of(&out).contains("pair 0"), "{}", describe(&out));
}

#[test]
fn every_pair_runs_all_its_loops() {
    if skip_without_realtime("every_pair_runs_all_its_loops") {
        return;
    }
    let (_out, report, _dir) = run_mq_report(&args("-t 2 -i 100 -d 2000 -l 100 -p 80 -q"), 30);
    let series = series(&report);
    assert_eq!(series.len(), 2);
    for (i, s) in series.iter().enumerate() {
        // pmqtest stops every pair when the fastest is done; latscope must not.
        assert_eq!(
            check_summary(s, &format!("series[{i}]"), true),
            100,
            "pair {i} did not run all its loops"
        );
        assert_eq!(s["label"], format!("pair {i}"));
    }
    assert_eq!(series[0]["detail"]["interval_us"], 100);
    assert_eq!(series[1]["detail"]["interval_us"], 2100);
    assert_eq!(series[0]["priority"], 80);
    assert_eq!(series[1]["priority"], 79);
    assert_eq!(
        check_summary(&report["tests"][0]["overall"], "overall", false),
        200
    );
}

#[test]
fn duration_ends_the_run() {
    let job = mq_json(&args("-D 1 -i 100 -q"), 20);
    let elapsed = job.elapsed;
    assert_code(&job.out, 0);
    assert!(
        elapsed >= Duration::from_millis(950),
        "a 1 s run ended after {elapsed:?}"
    );
    let report = read_json(&job.file);
    check_report_header(&report);
    assert_eq!(report["tests"][0]["end_reason"], "duration_elapsed");
    let duration = f64_of(&report["duration_s"], "duration_s");
    assert!(
        (0.95..10.0).contains(&duration),
        "duration_s {duration} for -D 1"
    );
    check_summary(&series(&report)[0], "series[0]", true);
}

#[test]
fn max_latency_crossed_exits_3_after_the_report() {
    // No wake-up through a message queue takes 1 us or less on this kind of
    // machine (it takes several), so the limit is crossed.
    let job = mq_json(&args("--max-latency 1 -l 200 -i 100"), 30);
    let out = &job.out;
    assert_code(out, 3);
    let stdout = stdout_of(out);
    let stderr = stderr_of(out);
    let table_at = stdout
        .lines()
        .position(|l| l.starts_with("pair 0"))
        .unwrap_or_else(|| panic!("no report row for pair 0\n{}", describe(out)));
    // The verdict names the pair, on stdout after the report or on stderr.
    let verdict = |l: &str| l.contains("pair 0") && !l.starts_with("pair 0");
    let on_stdout = stdout.lines().position(verdict);
    let on_stderr = stderr.lines().any(verdict);
    assert!(
        on_stdout.is_some() || on_stderr,
        "no verdict naming pair 0\n{}",
        describe(out)
    );
    if let Some(at) = on_stdout {
        assert!(at > table_at, "verdict before the report\n{stdout}");
    }
    let report = read_json(&job.file);
    assert_eq!(report["exit_code"], 3);
    let s = &series(&report)[0];
    assert!(u64_of(&s["above_limit"], "above_limit") >= 1);
    assert_eq!(check_summary(s, "series[0]", true), 200);
}

#[test]
fn max_latency_not_crossed_exits_0() {
    let out = run_mq(&args("--max-latency 10000000 -l 50 -i 100 -q"), 30, 0);
    assert!(!stdout_of(&out).contains("FAIL"), "{}", describe(&out));
}

#[test]
fn forced_timeouts_are_counted_and_do_not_hang() {
    // pmqtest hangs here (its sender blocks on the sync queue after a timeout).
    let (_out, report, _dir) = run_mq_report(&args("-T 1 -f 2 -l 2 -i 1000 -q"), 15);
    assert_eq!(report["tests"][0]["end_reason"], "loops_done");
    let s = &series(&report)[0];
    let samples = check_summary(s, "series[0]", true);
    assert_eq!(samples, 2);
    let timeouts = u64_of(&s["detail"]["timeouts"], "timeouts");
    assert!(
        timeouts >= samples,
        "expected at least one timeout per sample (send delayed 2 s, timeout 1 s), got {timeouts}"
    );
}

#[test]
fn breaktrace_stops_the_run_by_itself() {
    // When this process can write the tracer switch, the run may turn the
    // tracer off; the test puts it back.
    let tracing_on = tracing_on_file();
    let saved = tracing_on
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    // Endless without -b: only the break-trace limit can end it.
    let job = mq_json(&args("-b 1 -i 100"), 20);
    let out = &job.out;
    let after = tracing_on
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    if let (Some(p), Some(v)) = (&tracing_on, &saved) {
        let _ = std::fs::write(p, v.trim());
    }
    if let Some(after) = after {
        assert_eq!(after.trim(), "0", "the tracer was not stopped");
    }
    assert_code(out, 0);
    let report = read_json(&job.file);
    check_report_header(&report);
    assert_eq!(report["tests"][0]["end_reason"], "break_trace");
    let s = &series(&report)[0];
    let samples = check_summary(s, "series[0]", true);
    assert!(u64_of(&s["max_ns"], "max_ns") > 1_000);
    assert!(samples >= 1);
    if tracing_on.is_none() {
        // Without tracefs the run still stops; the user is told why the
        // tracer was not stopped, once, and the report keeps the warning.
        let all = format!("{}{}", stdout_of(out), stderr_of(out));
        let mentions = all.lines().filter(|l| l.contains("tracefs")).count();
        assert_eq!(
            mentions,
            1,
            "expected one warning about tracefs (stdout or stderr)\n{}",
            describe(out)
        );
        assert!(
            report["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("tracefs")),
            "the report's warnings do not mention tracefs"
        );
    }
}
