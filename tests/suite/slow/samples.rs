//! `--samples FILE` and `latscope samples FILE`: every sample of every series
//! reaches the file, exactly as many as the report counts, with the report's
//! exact minimum and maximum; the limit is one line and a bounded file; bad
//! input is one line and exit 2; Ctrl-C leaves a whole file under its name.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The file's trailer and series records may go past `--samples-limit`
/// (docs/samples.md): 16 bytes, plus at most 352 per series.
const SLACK_FIXED: u64 = 16;
const SLACK_PER_SERIES: u64 = 352;

/// Per series id: (samples, min, max) of `latscope samples FILE`'s CSV.
fn csv_series(file: &Path) -> BTreeMap<u64, (u64, i64, i64)> {
    let out = run(latscope(60).arg("samples").arg(file));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("series,test,label,cpu,t_ns,latency_ns"),
        "{}",
        describe(&out)
    );
    let mut per = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 6, "row {line}");
        let id: u64 = cells[0].parse().expect("series id");
        let latency: i64 = cells[5].parse().expect("latency");
        let e = per.entry(id).or_insert((0, i64::MAX, i64::MIN));
        e.0 += 1;
        e.1 = e.1.min(latency);
        e.2 = e.2.max(latency);
    }
    per
}

/// Every series the report lists in `samples_file` holds, in the CSV, all
/// of its samples (none dropped or left out) with its exact min and max.
fn assert_file_matches_report(report: &Value, file: &Path) {
    let csv = csv_series(file);
    let listed = array_of(&report["samples_file"]["series"], "samples_file.series");
    assert!(!listed.is_empty(), "no series in samples_file");
    let mut all = 0;
    for s in listed {
        let id = u64_of(&s["id"], "id");
        let test = u64_of(&s["test"], "test") as usize;
        let index = u64_of(&s["series"], "series") as usize;
        let series = &report["tests"][test]["series"][index];
        let samples = u64_of(&series["samples"], "samples");
        assert_eq!(u64_of(&s["dropped"], "dropped"), 0, "{s}");
        assert_eq!(u64_of(&s["not_written"], "not_written"), 0, "{s}");
        assert_eq!(u64_of(&s["written"], "written"), samples, "{s}");
        let got = csv.get(&id).copied().unwrap_or((0, 0, 0));
        assert_eq!(
            got.0, samples,
            "series {id}: CSV rows vs the report's samples"
        );
        if samples > 0 {
            assert_eq!(
                got.1,
                i64_of(&series["min_ns"], "min_ns"),
                "series {id} min"
            );
            assert_eq!(
                got.2,
                i64_of(&series["max_ns"], "max_ns"),
                "series {id} max"
            );
        }
        all += samples;
    }
    assert_eq!(csv.values().map(|c| c.0).sum::<u64>(), all);
    let size = std::fs::metadata(file).expect("the samples file").len();
    assert_eq!(u64_of(&report["samples_file"]["bytes"], "bytes"), size);
}

/// Only the files the test named are in `dir` (no temporary file left).
fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn mq_samples_match_the_report_exactly() {
    let (dir, samples) = temp_file("mq.samples");
    let (_out, report, _d) = run_mq_json(
        &[
            "-l",
            "2000",
            "-i",
            "200",
            "-q",
            "--samples",
            samples.to_str().unwrap(),
        ],
        120,
        0,
    );
    assert_eq!(u64_of(&series(&report)[0]["samples"], "samples"), 2000);
    assert_file_matches_report(&report, &samples);
    assert_only(dir.path(), &["mq.samples"]);
}

#[test]
fn timer_samples_match_the_report_exactly() {
    if skip_without_realtime("timer_samples_match_the_report_exactly") {
        return;
    }
    let (dir, samples) = temp_file("timer.samples");
    let json = dir.path().join("r.json");
    let mut cmd = latscope(120);
    cmd.args(["timer", "-T", "1", "-q", "--samples"])
        .arg(&samples);
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert!(u64_of(&series(&report)[0]["samples"], "samples") > 0);
    assert_file_matches_report(&report, &samples);
}

#[test]
fn noise_samples_match_the_report_exactly() {
    let (dir, samples) = temp_file("noise.samples");
    let json = dir.path().join("r.json");
    let cpu = allowed_cpus().last().expect("a CPU").to_string();
    let mut cmd = latscope(120);
    cmd.args(["noise", "--cpus", &cpu, "-D", "1", "-q", "--samples"])
        .arg(&samples)
        .args(mlock_args());
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert_file_matches_report(&report, &samples);
}

#[test]
fn ipc_sequence_samples_match_the_report_exactly() {
    // Two primitives in both modes, two pairs each: 8 series in 4 tests,
    // each matched to its test and pair through samples_file.
    let (dir, samples) = temp_file("ipc.samples");
    let json = dir.path().join("r.json");
    let mut cmd = latscope(120);
    cmd.args([
        "ipc", "--only", "mq,pipe", "-t", "2", "-l", "300", "-i", "200", "-q",
    ])
    .arg("--samples")
    .arg(&samples)
    .args(mlock_args());
    let (_out, report) = run_with_report(cmd, &json, 0);
    assert_eq!(
        array_of(&report["samples_file"]["series"], "series").len(),
        8
    );
    assert_file_matches_report(&report, &samples);
}

#[test]
fn logdisk_samples_match_the_report_exactly() {
    let work = disk_dir("samples-logdisk");
    let samples = work.path().join("l.samples");
    let json = work.path().join("r.json");
    let mut cmd = latscope(120);
    cmd.arg("logdisk")
        .arg(format!("--dir={}", work.path().display()))
        .args(args(
            "--fileSize 64K --numFiles 2 --duration 1 --bsize 4K,8K -q",
        ))
        .arg("--samples")
        .arg(&samples);
    let (_out, report) = run_with_report(cmd, &json, 0);
    // One test per block size, one writer each.
    assert_eq!(
        array_of(&report["samples_file"]["series"], "series").len(),
        2
    );
    assert_file_matches_report(&report, &samples);
}

#[test]
fn the_limit_is_one_line_and_a_bounded_file() {
    let (dir, samples) = temp_file("limited.samples");
    // 8000 samples are 125 KiB of samples: twice the limit.
    let (out, report, _d) = run_mq_json(
        &[
            "-l",
            "8000",
            "-i",
            "100",
            "-q",
            "--samples",
            samples.to_str().unwrap(),
            "--samples-limit",
            "64K",
        ],
        120,
        0,
    );
    let stderr = stderr_of(&out);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("--samples-limit 64 KiB reached"))
        .collect();
    assert_eq!(said.len(), 1, "{}", describe(&out));
    let size = std::fs::metadata(&samples).unwrap().len();
    assert!(
        size <= 65536 + SLACK_FIXED + SLACK_PER_SERIES,
        "{size} bytes"
    );
    let rec = &report["samples_file"];
    assert_eq!(rec["limit_reached"], true);
    let s = &rec["series"][0];
    let (written, not_written) = (u64_of(&s["written"], "w"), u64_of(&s["not_written"], "n"));
    assert_eq!(written + not_written, 8000);
    assert!(not_written > 0);
    assert_eq!(csv_series(&samples)[&0].0, written);
    let warnings = array_of(&report["warnings"], "warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap_or("").contains("--samples-limit 64 KiB")),
        "{warnings:?}"
    );
    assert_only(dir.path(), &["limited.samples"]);
}

/// One line on standard error, nothing on standard output, exit 2.
fn assert_usage_error(out: &std::process::Output, needle: &str) {
    assert_code(out, 2);
    let stderr = stderr_of(out);
    assert_eq!(stderr.lines().count(), 1, "{}", describe(out));
    assert!(stderr.contains(needle), "{}", describe(out));
}

#[test]
fn bad_paths_and_limits_are_one_line_and_exit_2() {
    let (dir, samples) = temp_file("x.samples");
    let path = samples.to_str().unwrap();
    let missing_dir = dir.path().join("missing/x.samples");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--samples", "-"], "not to standard output"),
        (
            vec!["--samples", missing_dir.to_str().unwrap()],
            "does not exist",
        ),
        (
            vec!["--samples", dir.path().to_str().unwrap()],
            "is a directory",
        ),
        (vec!["--samples-limit", "64K"], "needs --samples"),
        (vec!["--samples", path, "--samples-limit", "1K"], "below 4K"),
        (
            vec!["--samples", path, "--samples-limit", "lots"],
            "--samples-limit",
        ),
        (
            vec!["--samples", path, "--samples-limit", "0"],
            "--samples-limit",
        ),
        (vec!["--samples", path, "--json", path], "same file"),
    ];
    for (extra, needle) in cases {
        let mut argv = vec!["-l", "10"];
        argv.extend(extra);
        let out = run(mq(&argv, 30));
        assert_usage_error(&out, needle);
    }
    assert_only(dir.path(), &[]);
}

#[test]
fn the_reader_refuses_other_files_and_says_when_one_is_cut() {
    let (dir, samples) = temp_file("s.samples");
    let (_out, report, _d) = run_mq_json(
        &[
            "-l",
            "500",
            "-i",
            "200",
            "-q",
            "--samples",
            samples.to_str().unwrap(),
        ],
        60,
        0,
    );
    assert_file_matches_report(&report, &samples);
    // A report is not a samples file; a missing file is bad input too.
    let json = dir.path().join("r.json");
    std::fs::write(&json, report.to_string()).unwrap();
    assert_usage_error(
        &run(latscope(30).arg("samples").arg(&json)),
        "is not a latscope samples file",
    );
    assert_usage_error(
        &run(latscope(30).arg("samples").arg(dir.path().join("none"))),
        "No such file",
    );
    // A directory is bad input, as for `report DIR` and `compare DIR`.
    assert_usage_error(
        &run(latscope(30).arg("samples").arg(dir.path())),
        "Is a directory",
    );
    // The CSV may not replace the file it is read from.
    assert_usage_error(
        &run(latscope(30)
            .arg("samples")
            .arg(&samples)
            .arg("--csv")
            .arg(&samples)),
        "is the samples file itself",
    );
    assert_file_matches_report(&report, &samples);
    // Cut in the middle: the rows before the cut are written, then one
    // line and exit 1.
    let bytes = std::fs::read(&samples).unwrap();
    let cut = dir.path().join("cut.samples");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let csv = dir.path().join("cut.csv");
    let out = run(latscope(30).arg("samples").arg(&cut).arg("--csv").arg(&csv));
    assert_code(&out, 1);
    assert!(
        stderr_of(&out).contains("is truncated"),
        "{}",
        describe(&out)
    );
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count() as u64 - 1;
    assert!(rows > 0 && rows < 500, "{rows} rows");
}

#[test]
fn sigint_leaves_a_whole_file_under_its_name() {
    let (dir, samples) = temp_file("int.samples");
    let json = dir.path().join("r.json");
    let mut argv = vec!["mq", "-i", "1000", "-q", "--samples"];
    argv.push(samples.to_str().unwrap());
    argv.extend(["--json", json.to_str().unwrap()]);
    argv.extend_from_slice(mlock_args());
    let child = spawn(&argv);
    // Whenever the signal lands (before or after the first sample), the
    // file must be whole and agree with the report.
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(libc::SIGINT);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    let report = read_json(&json);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    assert_file_matches_report(&report, &samples);
    assert_only(dir.path(), &["int.samples", "r.json"]);
}

/// A `--samples` file that cannot be written (a full device, a disk that
/// fills mid-run: here the file-size limit) is the run's error, as for
/// `--prom` and `--hdr-log`: the results are shown, then one line on stderr
/// names the file and why, exit 1; and a regular file cut by the failure is
/// not named as the run's samples: nothing is left under the path, no
/// temporary file either.
#[test]
fn a_failed_samples_write_is_one_line_exit_1_and_no_cut_file() {
    let out = run(mq(
        &["-l", "2000", "-i", "100", "-q", "--samples", "/dev/full"],
        60,
    ));
    assert_code(&out, 1);
    let err = stderr_of(&out);
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{}", describe(&out));
    assert!(
        errors[0].starts_with("latscope: error: --samples /dev/full:")
            && errors[0].contains("No space left on device"),
        "{}",
        describe(&out)
    );
    assert!(stdout_of(&out).contains("pair 0"), "{}", describe(&out));
    assert!(!stdout_of(&out).contains("--samples"), "{}", describe(&out));

    // 20000 samples are 320 KB: the limit of 64 KiB cuts the file mid-run
    // (EFBIG: latscope blocks SIGXFSZ, so the write fails instead).
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.samples");
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("mq")
        .args(["-l", "20000", "-i", "50", "-q", "--samples"])
        .arg(&samples)
        .args(mlock_args());
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 * 1024,
                rlim_max: 64 * 1024,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run(assert_cmd::Command::from_std(cmd).timeout(Duration::from_secs(120)));
    assert_code(&out, 1);
    let err = stderr_of(&out);
    assert!(
        err.contains("latscope: error: --samples ")
            && err.contains("File too large")
            && err.contains("no file was left under that name"),
        "{}",
        describe(&out)
    );
    assert_only(dir.path(), &[]);
}
