//! `--on-threshold` and `--on-end` where they were missing, through the
//! real binary: `logdisk --max-latency`, and the drop-ins whose original
//! tool has a break value (cyclictest, ptsematest and pmqtest `-b`, oslat
//! `-T`, signaltest `-b`), where the crossing of that value triggers
//! `--on-threshold`. Each drop-in takes the two options only spelled out in
//! full: an abbreviation is refused as the tool refuses any unknown option.
//!
//! The crossing is provoked far above any machine's noise: a break value or
//! limit of 1 us, which a wake-up, a mutex hand-over, a spinning CPU's
//! interrupts or a synchronous disk write exceed everywhere. Each shell
//! action appends the shell's own pid (`$$`) to a file: one line is one
//! run of the action.

use crate::common::*;
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `shell,command=...` appending `$$` (the action's own shell) and
/// `$LATSCOPE_EVENT` to `file`.
fn marker(file: &Path) -> String {
    format!(
        "shell,command=echo \"$$ $LATSCOPE_EVENT $LATSCOPE_SERIES\" >> {}",
        file.display()
    )
}

/// The lines of `file` (none when it does not exist: no action ran).
fn lines_of(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The files a run's marker actions append to, in a directory of their own.
struct Markers {
    dir: tempfile::TempDir,
    threshold: PathBuf,
    end: PathBuf,
}

impl Markers {
    fn new() -> Markers {
        let dir = tempfile::tempdir().unwrap();
        let (threshold, end) = (dir.path().join("t"), dir.path().join("e"));
        Markers {
            dir,
            threshold,
            end,
        }
    }

    /// `cmd` with a marker action on the threshold and one on the end.
    fn acting<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.args(["--on-threshold", &marker(&self.threshold)])
            .args(["--on-end", &marker(&self.end)])
    }
}

/// One threshold action ran (for `series`) and one end action.
fn assert_acted_once(markers: &Markers, series: &str, out: &std::process::Output) {
    let (threshold, end) = (&markers.threshold, &markers.end);
    let t = lines_of(threshold);
    assert_eq!(t.len(), 1, "{t:?}\n{}", describe(out));
    let words: Vec<&str> = t[0].split(' ').collect();
    assert!(words[0].parse::<u32>().is_ok(), "a pid first: {t:?}");
    assert_eq!(words[1], "threshold", "{t:?}");
    assert_eq!(words[2..].join(" "), series, "{t:?}");
    let e = lines_of(end);
    assert_eq!(e.len(), 1, "{e:?}\n{}", describe(out));
    assert!(e[0].ends_with(" end "), "{e:?}");
}

/// The report's action runs: one threshold run for `series` of `test`,
/// then one end run.
fn assert_recorded(report: &Value, test: &str, series: &str) {
    let runs = array_of(&report["actions"]["runs"], "actions.runs");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["trigger"], "threshold");
    assert_eq!(runs[0]["outcome"], "ok", "{}", runs[0]);
    assert_eq!(runs[0]["test"], test);
    assert_eq!(runs[0]["series"], series);
    assert_eq!(runs[1]["trigger"], "end");
    assert_eq!(runs[1]["outcome"], "ok", "{}", runs[1]);
}

/// What a drop-in answers to `bad` among `args`, with `bad` written as
/// `--zz-unknown` in both the answer and the arguments: equal for an
/// abbreviation of an option the tool refuses as any unknown option.
fn answer_to(tool: &[&str], bad: &str) -> (Option<i32>, String, String) {
    let out = run(latscope(30).args(tool).args([bad, "x"]));
    let clean = |t: String| t.replace(bad, "--zz-unknown");
    (
        out.status.code(),
        clean(stdout_of(&out)),
        clean(stderr_of(&out)),
    )
}

/// `--on-thr` (an abbreviation of `--on-threshold`) and `--on-e` are
/// refused exactly as an unknown option, in the tool's own words.
fn assert_abbreviations_refused(tool: &[&str], unrecognized: &str) {
    let unknown = answer_to(tool, "--zz-unknown");
    assert!(
        unknown.2.contains(unrecognized),
        "{tool:?} --zz-unknown: {unknown:?}"
    );
    for abbreviation in ["--on-thr", "--on-e", "--on-threshol"] {
        assert_eq!(
            answer_to(tool, abbreviation),
            unknown,
            "{tool:?} {abbreviation}"
        );
    }
}

#[test]
fn logdisk_max_latency_acts_and_exits_3() {
    let dir = disk_dir("act-logdisk");
    let markers = Markers::new();
    let json = dir.path().join("run.json");
    let mut cmd = latscope(60);
    cmd.arg("logdisk")
        .arg("--dir")
        .arg(dir.path())
        .args(["-D", "1", "--numFiles", "2", "--fileSize", "1M", "-q"])
        .args(["--max-latency", "1"]);
    markers.acting(&mut cmd);
    let (out, report) = run_with_report(cmd, &json, 3);
    let above: u64 = series(&report)
        .iter()
        .map(|s| u64_of(&s["above_limit"], "above_limit"))
        .sum();
    assert!(above > 0, "no write above 1 us: nothing was provoked");
    assert_eq!(report["tests"][0]["config"]["max_latency_us"], 1);
    assert_acted_once(&markers, "writer", &out);
    assert_recorded(&report, "logdisk", "writer");
}

#[test]
fn logdisk_on_threshold_needs_max_latency() {
    let dir = disk_dir("act-logdisk-usage");
    let out = run(latscope(30)
        .arg("logdisk")
        .arg("--dir")
        .arg(dir.path())
        .args(["--on-threshold", "shell,command=true"]));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("give --max-latency USEC"),
        "{}",
        describe(&out)
    );
}

#[test]
fn cyclictest_break_runs_the_actions_once_and_they_are_recorded() {
    let markers = Markers::new();
    let report = markers.dir.path().join("r.json");
    let out = run(markers.acting(
        latscope(60)
            .args(["cyclictest", "-q", "-D", "5", "-i", "1000", "-b", "1"])
            .arg("--latscope-json")
            .arg(&report),
    ));
    assert_code(&out, 0);
    // cyclictest's own end of a break.
    assert!(
        stdout_of(&out).contains("# Break thread: "),
        "{}",
        describe(&out)
    );
    assert_acted_once(&markers, "thread 0", &out);
    assert_recorded(&read_json(&report), "cyclictest", "thread 0");
}

#[test]
fn cyclictest_actions_without_latscope_json() {
    let markers = Markers::new();
    let out = run(markers.acting(latscope(60).args([
        "cyclictest",
        "-q",
        "-D",
        "5",
        "-i",
        "1000",
        "-b",
        "1",
    ])));
    assert_code(&out, 0);
    assert!(stdout_of(&out).contains("# Break value: "));
    assert_acted_once(&markers, "thread 0", &out);
}

/// `continue`: the break stops nothing (the run lasts its -D, no break
/// lines) and the action runs again, at most once per second.
#[test]
fn cyclictest_continue_keeps_the_run_going() {
    let dir = tempfile::tempdir().unwrap();
    let threshold = dir.path().join("t");
    let out = run(latscope(60)
        .args(["cyclictest", "-q", "-D", "3", "-i", "1000", "-b", "1"])
        .args(["--on-threshold", &marker(&threshold)])
        .args(["--on-threshold", "continue"]));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(!stdout.contains("# Break"), "{}", describe(&out));
    let cycles: u64 = stdout
        .split("C:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no C: in {stdout}"));
    assert!(
        cycles > 2000,
        "the run went on for its 3 s: {cycles} cycles"
    );
    let acted = lines_of(&threshold).len();
    // One per window (second) of a 3 s run, the last one possibly at the end.
    assert!((2..=4).contains(&acted), "{acted} runs");
}

#[test]
fn cyclictest_sigterm_runs_the_end_actions() {
    let dir = tempfile::tempdir().unwrap();
    let end = dir.path().join("e");
    let on_end = marker(&end);
    let child = spawn(&["cyclictest", "-q", "-i", "1000", "--on-end", &on_end]);
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("T: 0 "), "{stdout}");
    let e = lines_of(&end);
    assert_eq!(e.len(), 1, "{e:?}\n{stderr}");
}

#[test]
fn cyclictest_takes_the_options_in_full_only() {
    assert_abbreviations_refused(&["cyclictest"], "unrecognized option '--zz-unknown'");
    // Spelled in full, checked as latscope checks actions (one line, exit 2).
    for (words, says) in [
        (
            &["--on-threshold", "shell,command=true"][..],
            "give -b USEC",
        ),
        (
            &["-b", "5", "--on-threshold", "bogus"][..],
            "unknown action",
        ),
        (&["--on-end"][..], "--on-end needs an action"),
        (&["--on-end", "continue"][..], "--on-end continue"),
    ] {
        let out = run(latscope(30).arg("cyclictest").args(words));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert!(err.contains(says), "{words:?}: {}", describe(&out));
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // The `=` form.
    let dir = tempfile::tempdir().unwrap();
    let end = dir.path().join("e");
    let out = run(latscope(30)
        .args(["cyclictest", "-q", "-l", "50", "-i", "1000"])
        .arg(format!("--on-end={}", marker(&end))));
    assert_code(&out, 0);
    assert_eq!(lines_of(&end).len(), 1, "{}", describe(&out));
}

#[test]
fn oslat_trace_threshold_runs_the_actions_once() {
    if !can_mlock() {
        latscope::testing::skip(
            "slow::drop_in_actions::oslat_trace_threshold_runs_the_actions_once",
            "oslat locks its memory",
        );
        return;
    }
    let markers = Markers::new();
    let cpu = allowed_cpus()[0].to_string();
    let out =
        run(markers.acting(latscope(60).args(["oslat", "-q", "-D", "3", "-T", "1", "-c", &cpu])));
    // oslat quits with 1 after -T stopped it.
    assert_code(&out, 1);
    assert!(
        stderr_of(&out).contains("Trace threshold (1 us) triggered"),
        "{}",
        describe(&out)
    );
    assert_acted_once(&markers, &format!("CPU {cpu}"), &out);
    assert_abbreviations_refused(&["oslat"], "unrecognized option '--zz-unknown'");
}

/// `continue`: -T no longer stops oslat (its run completes, exit 0) and
/// the action runs again, at most once per second.
#[test]
fn oslat_continue_completes_the_run() {
    if !can_mlock() {
        latscope::testing::skip(
            "slow::drop_in_actions::oslat_continue_completes_the_run",
            "oslat locks its memory",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let threshold = dir.path().join("t");
    let cpu = allowed_cpus()[0].to_string();
    let out = run(latscope(60)
        .args(["oslat", "-D", "3", "-T", "1", "-c", &cpu])
        .args(["--on-threshold", &marker(&threshold)])
        .args(["--on-threshold", "continue"]));
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("Test completed."),
        "{}",
        describe(&out)
    );
    assert!(!stderr_of(&out).contains("Trace threshold"));
    let acted = lines_of(&threshold).len();
    assert!((2..=4).contains(&acted), "{acted} runs");
}

#[test]
fn ptsematest_break_runs_the_actions_once() {
    let markers = Markers::new();
    let out = run(markers.acting(latscope(60).args(["ptsematest", "-q", "-D", "5", "-b", "1"])));
    assert_code(&out, 0);
    assert!(
        stderr_of(&out).contains("break-trace limit crossed"),
        "{}",
        describe(&out)
    );
    assert_acted_once(&markers, "pair 0", &out);
    assert_abbreviations_refused(&["ptsematest"], "unrecognized option '--zz-unknown'");
}

#[test]
fn pmqtest_break_runs_the_actions_once() {
    let markers = Markers::new();
    let out = run(markers.acting(
        latscope(60)
            .args(["pmqtest", "-q", "-D", "5", "-i", "1000", "-b", "1"])
            .args(mlock_args()),
    ));
    assert_code(&out, 0);
    assert_acted_once(&markers, "pair 0", &out);
    // pmqtest's words are clap's: an abbreviation is an unexpected
    // argument, as every unknown option is (clap suggests the full name).
    for abbreviation in ["--on-thr", "--on-e"] {
        let out = run(latscope(30).args(["pmqtest", abbreviation, "x"]));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert!(
            err.starts_with(&format!(
                "latscope: error: unexpected argument '{abbreviation}' found"
            )),
            "{err}"
        );
    }
}

#[test]
fn signaltest_break_runs_the_actions_once() {
    if skip_without_realtime("signaltest_break_runs_the_actions_once") {
        return;
    }
    let markers = Markers::new();
    let out = run(markers.acting(latscope(60).args([
        "signaltest",
        "-q",
        "-D",
        "5",
        "-p",
        "1",
        "-b",
        "1",
    ])));
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).starts_with("Thread 0 exceeded trace limit."),
        "{}",
        describe(&out)
    );
    assert_acted_once(&markers, "thread 0", &out);
    assert_abbreviations_refused(&["signaltest"], "unrecognized option '--zz-unknown'");
}
