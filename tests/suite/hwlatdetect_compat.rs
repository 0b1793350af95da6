//! The `hwlatdetect` name through the real binary (a symlink, as installed):
//! every option's bad values are one line and exit 2 (never a traceback,
//! never exit 1, which means "above --hardlimit"), `--help` is argparse's
//! text, and a short run prints hwlatdetect's lines in its order.

use crate::common::*;

fn hwlatdetect(args: &[&str]) -> (tempfile::TempDir, assert_cmd::Command) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("hwlatdetect");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let mut cmd = assert_cmd::Command::new(&link);
    cmd.args(args).timeout(std::time::Duration::from_secs(30));
    (dir, cmd)
}

#[test]
fn every_bad_option_value_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--bogus"], "unrecognized arguments: --bogus"),
        (&["stray"], "unrecognized arguments: stray"),
        (
            &["--d", "5"],
            "ambiguous option: --d could match --duration, --debug",
        ),
        (
            &["--duration"],
            "argument --duration: expected one argument",
        ),
        (&["--duration", "5ms"], "illegal suffix for seconds: 'm'"),
        (&["--duration", "5x"], "invalid input for seconds: '5x'"),
        (
            &["--threshold", "1.5"],
            "invalid input for microseconds: '1.5'",
        ),
        (
            &["--hardlimit", "ten"],
            "invalid input for microseconds: 'ten'",
        ),
        (
            &["--window", "5min"],
            "invalid input for microseconds: '5min'",
        ),
        (&["--width", "-3"], "invalid input for microseconds: '-3'"),
        (&["--report"], "argument --report: expected one argument"),
        (&["--cpu-list", "1-"], "invalid --cpu-list '1-'"),
        (&["--cpu-list", "4000"], "CPU 4000"),
        (
            &["--debug=1"],
            "argument --debug: ignored explicit argument '1'",
        ),
        // 960 ms of every 1 s: above the RT throttling budget (950 of 1000 ms).
        (&["--width", "960ms"], "RT throttling budget"),
        (
            &["--window", "500ms", "--width", "500ms"],
            "not shorter than the window",
        ),
    ];
    for (args, message) in cases {
        let (_dir, mut cmd) = hwlatdetect(args);
        let out = cmd.output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {}", describe(&out));
        assert!(
            stderr.starts_with("hwlatdetect: error: ") && stderr.contains(message),
            "{args:?}: {}",
            describe(&out)
        );
        assert!(stdout_of(&out).is_empty(), "{args:?}: {}", describe(&out));
    }
}

#[test]
fn help_is_argparses_text() {
    let (_dir, mut cmd) = hwlatdetect(&["--help"]);
    let out = cmd.output().unwrap();
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(
        text.starts_with("usage: hwlatdetect [-h] [--duration DURATION]"),
        "{text}"
    );
    assert!(text.contains("  --watch               print sample data to stdout as it arrives\n"));
}

/// One second on CPU 0 in 100 ms windows, with a hard limit of an hour: no
/// gap of this run can cross it.
const SHORT_RUN: &[&str] = &[
    "--duration=1",
    "--window",
    "100ms",
    "--threshold",
    "20us",
    "--hardlimit",
    "3600s",
    "--cpu-list",
    "0",
];

#[test]
fn a_short_run_prints_hwlatdetects_lines_and_judges_by_the_hardlimit() {
    if skip_without_realtime("a_short_run_prints_hwlatdetects_lines_and_judges_by_the_hardlimit") {
        return;
    }
    let (dir, mut cmd) = hwlatdetect(&[]);
    let report = dir.path().join("samples.txt");
    cmd.args(SHORT_RUN).arg("--report").arg(&report);
    let out = cmd.output().unwrap();
    assert_code(&out, 0);
    let text = stdout_of(&out);
    // The most precise tier that runs here: root here, so the bpf tier's
    // programs load (as an ordinary user the unprivileged tier measures).
    let detector = if euid_is_root() {
        "latscope-bpf"
    } else {
        "latscope-unprivileged"
    };
    let expected_head = format!(
        "hwlatdetect:  test duration 1 seconds\n   detector: {detector}\n   parameters:\n        CPU list:          0\n        Latency threshold: 20us\n        Sample window:      100000us\n        Sample width:      50000us\n     Non-sampling period:  50000us\n"
    );
    assert!(text.starts_with(&expected_head), "{}", describe(&out));
    let lines: Vec<&str> = text.lines().collect();
    let finished = lines
        .iter()
        .position(|l| *l == "test finished")
        .expect("test finished");
    assert!(lines[finished + 1].starts_with("Max Latency: "), "{text}");
    assert!(
        lines[finished + 2].starts_with("Samples recorded: "),
        "{text}"
    );
    assert!(
        lines[finished + 3].starts_with("Samples exceeding threshold: "),
        "{text}"
    );
    let recorded: usize = lines[finished + 2]["Samples recorded: ".len()..]
        .parse()
        .unwrap();
    let saved = std::fs::read_to_string(&report).unwrap();
    assert_eq!(saved.lines().count(), recorded, "{text}");
    let sample =
        regex::Regex::new(r"^ts: \d+\.\d{9}, inner:\d+, outer:\d+, cpu:0, count:[1-9]\d*$")
            .unwrap();
    for line in saved.lines() {
        assert!(sample.is_match(line), "{line}");
        // Every sample is above the threshold (whole microseconds).
        let worst = line
            .split([':', ','])
            .filter_map(|w| w.trim().parse::<u64>().ok())
            .collect::<Vec<_>>();
        assert!(worst[0].max(worst[1]) > 20, "{line}");
    }
    assert!(text.contains(&format!(
        "report saved to {} ({recorded} samples)",
        report.display()
    )));
}

/// The `detector:` line names the tier that runs, not the one decided
/// before it started: with 10 file descriptors the bpf tier passes its
/// check (a map and a program at once) but cannot load its programs, so
/// the tracefs (or unprivileged) tier runs, and the header says so.
#[test]
fn the_detector_line_names_the_tier_that_started() {
    const TEST: &str = "hwlatdetect_compat::the_detector_line_names_the_tier_that_started";
    if skip_without_realtime(TEST) {
        return;
    }
    if !euid_is_root() {
        return latscope::testing::skip(TEST, "needs root: the bpf tier must pass its check");
    }
    let (dir, _) = hwlatdetect(&[]);
    let link = dir.path().join("hwlatdetect");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 10 && exec \"$0\" \"$@\"")
        .arg(&link)
        .args(SHORT_RUN)
        .arg("--debug")
        .output()
        .unwrap();
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let tier_line = text
        .lines()
        .find(|l| l.starts_with("tier: "))
        .unwrap_or_else(|| panic!("no tier: line (bpf started?): {}", describe(&out)));
    if !tier_line.contains("Too many open files") {
        // The check refused bpf already: no start failed here.
        return latscope::testing::skip(
            TEST,
            &format!("the bpf tier cannot run here: {tier_line}"),
        );
    }
    let ran = tier_line["tier: ".len()..]
        .split_whitespace()
        .next()
        .unwrap();
    assert_ne!(ran, "bpf", "{text}");
    let detector = format!("   detector: latscope-{ran}");
    let header = text
        .find("hwlatdetect:  test duration")
        .expect("the header");
    assert!(text.lines().any(|l| l == detector), "{text}");
    // The tier line (a --debug line) comes before the header, as the
    // tier starts before it is printed.
    assert!(text.find(tier_line).unwrap() < header, "{text}");
    assert!(tier_line.contains("(bpf: "), "{tier_line}");
    assert!(text.contains("\ntest finished\n"), "{text}");
}
