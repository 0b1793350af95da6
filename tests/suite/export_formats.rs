//! `--csv` and `--markdown` through the real binary: the files of a short
//! IPC run, one CSV row per series of every test of `suite`, `-` for
//! standard output, and output paths that cannot be written (refused with
//! exit 2 and one line before anything is measured, an existing file left
//! as it was).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// `latscope CMD ARGS`, with `--no-mlockall` where this user cannot lock
/// memory (for the commands that take it).
fn cmd(command: &str, arguments: &[&str], timeout_s: u64) -> assert_cmd::Command {
    let mut c = latscope(timeout_s);
    c.arg(command).args(arguments);
    if command != "suite" && command != "logdisk" {
        c.args(mlock_args());
    }
    c
}

/// `latscope CMD` with the arguments of `line` (split at whitespace) and
/// each `(option, file)` of `outputs`.
fn with_outputs(command: &str, line: &str, outputs: &[(&str, &Path)]) -> assert_cmd::Command {
    let mut c = cmd(command, &args(line), 60);
    for (option, file) in outputs {
        c.arg(option).arg(file);
    }
    c
}

/// The CSV's header and rows, each row by column name.
fn read_csv(text: &str) -> (Vec<String>, Vec<Vec<(String, String)>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|row| {
            let row = row.expect("a well-formed CSV row");
            assert_eq!(row.len(), header.len(), "{text}");
            header
                .iter()
                .cloned()
                .zip(row.iter().map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

fn cell<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
    &row.iter()
        .find(|(c, _)| c == column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .1
}

const COLUMNS: &str = "test,label,kind,cpus,policy,priority,samples,min_ns,avg_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,stddev_ns,overruns,mode,above_limit,timeouts,interval_us,block_size,writes,iops,bytes_per_s,end_reason";

#[test]
fn futex_writes_csv_and_markdown_files() {
    let (dir, csv_file) = temp_file("futex.csv");
    let md_file = dir.path().join("futex.md");
    let out = run(with_outputs(
        "futex",
        "-l 200 -i 100 -q",
        &[("--csv", &csv_file), ("--markdown", &md_file)],
    ));
    assert_code(&out, 0);
    // The console table still goes to standard output.
    assert!(
        stdout_of(&out).contains("futex latency"),
        "{}",
        describe(&out)
    );
    let text = std::fs::read_to_string(&csv_file).unwrap();
    assert!(text.starts_with(&format!("{COLUMNS}\n")), "{text}");
    let (header, rows) = read_csv(&text);
    assert_eq!(header.join(","), COLUMNS);
    assert_eq!(rows.len(), 1, "{text}");
    let row = &rows[0];
    assert_eq!(cell(row, "test"), "futex");
    assert_eq!(cell(row, "label"), "pair 0");
    assert_eq!(cell(row, "kind"), "ipc_pair");
    assert_eq!(cell(row, "samples"), "200");
    assert_eq!(cell(row, "mode"), "one-way");
    assert_eq!(cell(row, "interval_us"), "100");
    assert_eq!(cell(row, "end_reason"), "loops_done");
    let ns = |c: &str| cell(row, c).parse::<f64>().unwrap();
    assert!(ns("min_ns") > 0.0);
    assert!(ns("min_ns") <= ns("p50_ns") && ns("p50_ns") <= ns("p99_ns"));
    assert!(ns("p99.99_ns") <= ns("max_ns"));
    let md = std::fs::read_to_string(&md_file).unwrap();
    assert!(md.starts_with("### latscope results\n"), "{md}");
    assert!(md.contains("\nMachine: "), "{md}");
    assert!(
        md.contains("| Test | Mode | Series | CPUs | Policy | Samples |"),
        "{md}"
    );
    assert!(md.contains("| futex | one-way | pair 0 | "), "{md}");
    assert!(md.contains("| 200 | "), "{md}");
    // Nothing but the two files is left in the directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn suite_writes_one_csv_row_per_series_of_every_test() {
    let (dir, csv_file) = temp_file("suite.csv");
    let json_file = dir.path().join("suite.json");
    let md_file = dir.path().join("suite.md");
    let out = run(with_outputs(
        "suite",
        "--duration 1s -q",
        &[
            ("--csv", &csv_file),
            ("--json", &json_file),
            ("--markdown", &md_file),
        ],
    ));
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{}",
        describe(&out)
    );
    let report = read_json(&json_file);
    let (_, rows) = read_csv(&std::fs::read_to_string(&csv_file).unwrap());
    let mut expected = Vec::new();
    for t in report["tests"].as_array().unwrap() {
        let name = t["test"].as_str().unwrap();
        let series = t["series"].as_array().unwrap();
        if series.is_empty() {
            expected.push((name.to_string(), String::new()));
        }
        for s in series {
            expected.push((name.to_string(), s["label"].as_str().unwrap().to_string()));
        }
    }
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| (cell(r, "test").to_string(), cell(r, "label").to_string()))
        .collect();
    assert_eq!(got, expected);
    // Every IPC primitive and the timer are there.
    for name in ["mq", "futex", "pipe", "timer"] {
        assert!(
            got.iter().any(|(t, _)| t == name),
            "{name} missing: {got:?}"
        );
    }
    for (row, t) in rows.iter().zip(
        report["tests"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| std::iter::repeat_n(t, t["series"].as_array().unwrap().len().max(1))),
    ) {
        assert_eq!(cell(row, "mode"), t["mode"].as_str().unwrap());
    }
    let md = std::fs::read_to_string(&md_file).unwrap();
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| ")).count(),
        expected.len() + 2,
        "{md}"
    );
    // The rewrites after each test left no temporary file behind.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["suite.csv", "suite.json", "suite.md"]);
}

#[test]
fn dash_sends_csv_or_markdown_to_standard_output() {
    let out = run(cmd("futex", &args("-l 50 -i 100 --csv -"), 30));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let (header, rows) = read_csv(&stdout);
    assert_eq!(header.join(","), COLUMNS);
    assert_eq!(rows.len(), 1);
    // The console table is left out of standard output; warnings go to stderr.
    assert!(!stdout.contains("latency"), "{stdout}");
    assert!(stderr_of(&out).contains("warning:"), "{}", describe(&out));

    let out = run(cmd("pipe", &args("-l 50 -i 100 --markdown -"), 30));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(stdout.starts_with("### latscope results\n"), "{stdout}");
    assert!(stdout.contains("| pipe | one-way | pair 0 |"), "{stdout}");

    let out = run(cmd(
        "timer",
        &args("-T 1 --warmup 0 -p 1000 -q --csv -"),
        30,
    ));
    assert_code(&out, 0);
    let (_, rows) = read_csv(&stdout_of(&out));
    assert_eq!(rows.len(), 1, "{}", describe(&out));
    assert_eq!(cell(&rows[0], "kind"), "timer_thread");
    assert_eq!(cell(&rows[0], "interval_us"), "1000");
}

#[test]
fn logdisk_takes_csv_besides_its_csv_file() {
    let work = disk_dir("export-test-");
    let csv_file = work.path().join("common.csv");
    let mqldt_csv = work.path().join("mqldt.csv");
    let out = run(with_outputs(
        "logdisk",
        "--fileSize 64K --numFiles 2 --duration 1 -q",
        &[
            ("--dir", work.path()),
            ("--csv", &csv_file),
            ("--csvFile", &mqldt_csv),
        ],
    ));
    assert_code(&out, 0);
    let (_, rows) = read_csv(&std::fs::read_to_string(&csv_file).unwrap());
    assert_eq!(rows.len(), 1);
    assert_eq!(cell(&rows[0], "kind"), "disk_writer");
    assert_eq!(cell(&rows[0], "block_size"), "4096");
    assert_eq!(cell(&rows[0], "writes"), cell(&rows[0], "samples"));
    // mqldt's CSV is still its own.
    assert!(
        std::fs::read_to_string(&mqldt_csv)
            .unwrap()
            .starts_with("Blocksize,Total writes to files,")
    );
}

/// Runs `command ARGS` and checks it was refused as bad usage: exit 2, one
/// line naming `needle`, nothing on standard output, and quickly (the
/// arguments would otherwise measure for a long time).
fn assert_refused_up_front(command: &str, arguments: &[&str], needle: &str) {
    let started = Instant::now();
    let out = run(cmd(command, arguments, 30));
    let elapsed = started.elapsed();
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert_eq!(
        stderr.lines().count(),
        1,
        "{command} {arguments:?}: {stderr}"
    );
    assert!(stderr.starts_with("latscope: error: "), "{stderr}");
    assert!(stderr.contains(needle), "{command} {arguments:?}: {stderr}");
    assert!(stdout_of(&out).is_empty(), "{}", describe(&out));
    assert!(
        elapsed < Duration::from_secs(3),
        "{command} {arguments:?} took {elapsed:?}: it measured first"
    );
}

#[test]
fn unwritable_output_paths_are_refused_before_measuring() {
    let long_runs: [(&str, &[&str]); 6] = [
        ("mq", &["-l", "100000", "-i", "1000"]),
        ("futex", &["-l", "100000", "-i", "1000"]),
        ("sem", &["-i", "100000"]),
        ("timer", &["-T", "100"]),
        ("suite", &["--duration", "100s"]),
        ("ipc", &["-D", "100s"]),
    ];
    for (command, run_args) in long_runs {
        for option in ["--json", "--csv", "--markdown"] {
            let mut a = run_args.to_vec();
            // A new name: an existing /proc file (0444) is refused as read-only.
            a.extend([option, "/proc/latscope.out"]);
            assert_refused_up_front(
                command,
                &a,
                &format!("{option} /proc/latscope.out: cannot create a file in /proc"),
            );
        }
    }
    let work = disk_dir("export-test-");
    let dir_arg = format!("--dir={}", work.path().display());
    for option in ["--json", "--csv", "--markdown", "--csvFile"] {
        assert_refused_up_front(
            "logdisk",
            &[&dir_arg, "--duration", "100", option, "/proc/version"],
            "/proc/version: ",
        );
    }
    assert_refused_up_front(
        "timer",
        &["-T", "100", "-g", "/proc/latscope.out"],
        "-g /proc/latscope.out: cannot create a file in /proc",
    );
    // /sys refuses new files too.
    assert_refused_up_front(
        "mq",
        &["-l", "100000", "--csv", "/sys/kernel/x.csv"],
        "cannot create a file in /sys/kernel",
    );
    // A dangling symlink is not followed (a device node is written in
    // place: tests/suite/slow/hostile_input.rs).
    let dangling = work.path().join("dangling.md");
    std::os::unix::fs::symlink(work.path().join("missing"), &dangling).unwrap();
    assert_refused_up_front(
        "mq",
        &["-l", "100000", "--markdown", dangling.to_str().unwrap()],
        "symbolic link to a file that does not exist",
    );
    std::fs::remove_file(&dangling).unwrap();
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "logdisk created files before refusing"
    );
}

#[test]
fn a_refused_run_leaves_existing_files_untouched() {
    let (dir, json_file) = temp_file("old.json");
    std::fs::write(&json_file, "old results\n").unwrap();
    assert_refused_up_front(
        "mq",
        &[
            "-l",
            "100000",
            "--json",
            json_file.to_str().unwrap(),
            "--csv",
            "/proc/version",
        ],
        "--csv /proc/version",
    );
    assert_eq!(
        std::fs::read_to_string(&json_file).unwrap(),
        "old results\n"
    );
    // The probe file is gone again.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn only_one_output_may_be_standard_output() {
    for (command, a) in [
        ("mq", "-l 100000 --json - --csv -"),
        ("futex", "-l 100000 --csv - --markdown -"),
        ("suite", "--duration 100s --json - --markdown -"),
        ("timer", "-T 100 -g - --csv -"),
    ] {
        assert_refused_up_front(command, &args(a), "both want standard output");
    }
    // logdisk's classic format prints mqldt's lines on standard output.
    assert_refused_up_front(
        "logdisk",
        &args("--dir /tmp --duration 100 --format classic --csv -"),
        "--format classic prints mqldt's lines on standard output",
    );
}

/// The JSON report and the CSV agree on the figures of a series.
#[test]
fn csv_figures_are_the_reports() {
    let (dir, csv_file) = temp_file("mq.csv");
    let json_file = dir.path().join("mq.json");
    let out = run(with_outputs(
        "mq",
        "-l 100 -i 100 -t 2 -q",
        &[("--csv", &csv_file), ("--json", &json_file)],
    ));
    assert_code(&out, 0);
    let report: Value = read_json(&json_file);
    let (_, rows) = read_csv(&std::fs::read_to_string(&csv_file).unwrap());
    let series = series(&report);
    assert_eq!(rows.len(), series.len());
    for (row, s) in rows.iter().zip(series) {
        assert_eq!(cell(row, "label"), s["label"].as_str().unwrap());
        for column in ["samples", "min_ns", "max_ns", "overruns"] {
            assert_eq!(cell(row, column), s[column].to_string(), "{column}");
        }
        assert_eq!(
            cell(row, "timeouts"),
            s["detail"]["timeouts"].to_string(),
            "timeouts"
        );
    }
    assert!(Path::new(&csv_file).exists());
}

/// `suite` rewrites its files after every test: killed in the middle, it
/// leaves the tests finished so far, as whole files.
#[test]
fn a_killed_suite_leaves_the_results_of_its_finished_tests() {
    let (dir, csv_file) = temp_file("suite.csv");
    let json_file = dir.path().join("suite.json");
    let (csv_arg, json_arg) = (csv_file.to_str().unwrap(), json_file.to_str().unwrap());
    let child = spawn(&[
        "suite",
        "--duration",
        "24s",
        "-q",
        "--csv",
        csv_arg,
        "--json",
        json_arg,
    ]);
    // Thirteen tests of about 1.8 s each: killed in the second (sem, whose
    // semaphores live in anonymous memory: a SIGKILL during svsem or svmq
    // would leave System V objects behind).
    std::thread::sleep(Duration::from_millis(2700));
    child.signal(libc::SIGKILL);
    let (status, _, _) = child.wait(Duration::from_secs(60));
    assert!(!status.success());
    let report = read_json(&json_file);
    let tests = report["tests"].as_array().unwrap();
    assert!(
        (1..11).contains(&tests.len()),
        "{} tests written",
        tests.len()
    );
    let (_, rows) = read_csv(&std::fs::read_to_string(&csv_file).unwrap());
    let series: usize = tests
        .iter()
        .map(|t| t["series"].as_array().unwrap().len().max(1))
        .sum();
    // The CSV was written with the same tests, or (killed between the two
    // writes) with one test fewer.
    let first_rows: Vec<&str> = rows.iter().map(|r| cell(r, "test")).collect();
    assert!(!first_rows.is_empty());
    assert!(rows.len() <= series, "{first_rows:?}");
    assert_eq!(first_rows[0], tests[0]["test"].as_str().unwrap());
}

/// A read-only tmpfs mounted for one test (root only), unmounted on drop.
struct ReadOnlyMount {
    dir: tempfile::TempDir,
}

impl ReadOnlyMount {
    fn new() -> Result<ReadOnlyMount, String> {
        if !euid_is_root() {
            return Err("mounting needs root".to_string());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=64k", "none"])
            .arg(dir.path())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("mount failed: {status}"));
        }
        Ok(ReadOnlyMount { dir })
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_read_only_filesystem_is_refused_up_front() {
    let ro = match ReadOnlyMount::new() {
        Ok(m) => m,
        Err(why) => {
            latscope::testing::skip(
                "export_formats::a_read_only_filesystem_is_refused_up_front",
                &why.to_string(),
            );
            return;
        }
    };
    let file = ro.dir.path().join("r.csv");
    for option in ["--json", "--csv", "--markdown"] {
        let mut a = args("-l 100000 -i 1000");
        let path = file.to_str().unwrap();
        a.extend([option, path]);
        assert_refused_up_front("mq", &a, "is not writable");
    }
}

/// In a sticky directory (as /tmp), another user's file cannot be replaced
/// by a rename: refused up front, not after the run.
#[test]
fn another_users_file_in_a_sticky_directory_is_refused_up_front() {
    let mut cmd = match nobody_runner() {
        Ok(c) => c,
        Err(why) => {
            latscope::testing::skip(
                "export_formats::another_users_file_in_a_sticky_directory_is_refused_up_front",
                &why.to_string(),
            );
            return;
        }
    };
    let dir = temp_dir_with_mode(0o1777);
    let file = dir.path().join("root.json");
    std::fs::write(&file, "root's\n").unwrap();
    cmd.arg(bin())
        .args(args("mq -l 100000 -i 1000 --json"))
        .arg(&file);
    let started = Instant::now();
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 2);
    assert!(started.elapsed() < Duration::from_secs(3));
    let stderr = stderr_of(&out);
    assert!(stderr.contains("belongs to another user"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "root's\n");
}
