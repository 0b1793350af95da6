//! `latscope logdisk` through the real binary: the write pattern's figures,
//! block-size lists, several writers, think time, separate sync timing, the
//! CSV (replace / append), the JSON report, the safety of test files (an
//! existing file is refused untouched, --reuse, --keep, removal after a
//! normal end, Ctrl-C and a full disk) and every bad input. Runs are short
//! (1 s per block size, small files) in directories under `target/` (ext4
//! here; /tmp may be tmpfs).

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tempfile::TempDir;

/// A fresh directory under the repository's `target/`.
fn work_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("logdisk-test-")
        .tempdir_in(concat!(env!("CARGO_MANIFEST_DIR"), "/target"))
        .expect("temp dir under target/")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn logdisk(dir: &Path, extra: &str) -> assert_cmd::Command {
    let mut cmd = latscope(60);
    cmd.arg("logdisk")
        .arg(format!("--dir={}", dir.display()))
        .args(args("--fileSize 64K --numFiles 2 --duration 1 -q"))
        .args(args(extra));
    cmd
}

/// Runs logdisk with `--json` into `work`; returns output and report.
fn logdisk_json(work: &Path, dir: &Path, extra: &str, code: i32) -> (std::process::Output, Value) {
    run_with_report(logdisk(dir, extra), &work.join("report.json"), code)
}

/// Checks one writer's (or the merge's) figures against its latency summary.
fn check_writer(d: &Value, latency: &Value, block_size: u64) {
    let writes = u64_of(&d["writes"], "writes");
    assert!(writes > 0, "{d}");
    assert_eq!(u64_of(&latency["samples"], "samples"), writes);
    assert_eq!(u64_of(&d["bytes"], "bytes"), writes * block_size);
    assert_eq!(u64_of(&d["block_size"], "block_size"), block_size);
    let duration = f64_of(&d["duration_s"], "duration_s");
    assert!((0.99..3.0).contains(&duration), "duration_s {duration}");
    let iops = f64_of(&d["iops"], "iops");
    let expected = writes as f64 / duration;
    assert!(
        (iops - expected).abs() / expected < 1e-6,
        "{iops} {expected}"
    );
    let max = i64_of(&latency["max_ns"], "max_ns") as u128;
    let min = i64_of(&latency["min_ns"], "min_ns") as u128;
    let b = u128::from(block_size) * 1_000_000_000;
    assert_eq!(
        u128::from(u64_of(&d["slowest_write_bytes_per_s"], "slowest")),
        b / max
    );
    assert_eq!(
        u128::from(u64_of(&d["fastest_write_bytes_per_s"], "fastest")),
        b / min
    );
    let i = &d["interval_bandwidth"];
    assert!(u64_of(&i["intervals"], "intervals") >= 1, "{i}");
    let (imax, imin, iavg) = (
        u64_of(&i["max_bytes_per_s"], "max"),
        u64_of(&i["min_bytes_per_s"], "min"),
        u64_of(&i["avg_bytes_per_s"], "avg"),
    );
    assert!(imin <= iavg && iavg <= imax, "{i}");
    let seconds = array_of(&d["per_second"], "per_second");
    let per_second: u64 = seconds.iter().map(|s| u64_of(&s["writes"], "writes")).sum();
    assert_eq!(per_second, writes);
    // Each entry's rates are over the time it covers; a short tail (the
    // write that completes after the deadline) is folded into the entry
    // before it rather than shown as a near-empty second.
    for s in seconds {
        let covered = f64_of(&s["covered_s"], "covered_s");
        assert!(covered > 0.0, "{s}");
        let iops = f64_of(&s["iops"], "iops");
        let expected = u64_of(&s["writes"], "writes") as f64 / covered;
        assert!((iops - expected).abs() <= expected * 1e-9, "{s}");
    }
    let contiguous = seconds.windows(2).all(|p| {
        u64_of(&p[0]["second"], "second") + u64_of(&p[0]["span_s"], "span_s")
            == u64_of(&p[1]["second"], "second")
    });
    if contiguous && seconds.len() > 1 {
        let last = seconds.last().map(|s| f64_of(&s["covered_s"], "covered_s"));
        assert!(last >= Some(0.5), "a near-empty last second: {seconds:?}");
    }
}

fn logdisk_test(report: &Value, index: usize) -> &Value {
    let t = &report["tests"][index];
    assert_eq!(t["test"], "logdisk");
    assert_eq!(t["config"]["detail"]["kind"], "logdisk");
    t
}

#[test]
fn one_block_size_reports_mqldt_figures_and_removes_its_files() {
    let work = work_dir();
    let dir = work.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let (out, report) = logdisk_json(work.path(), &dir, "--bsize=4K", 0);
    let stdout = stdout_of(&out);
    assert!(
        stdout.starts_with("logdisk 4 KiB sequential log write, pwrite (O_DSYNC|O_DIRECT)"),
        "{}",
        describe(&out)
    );
    assert!(
        stdout.contains("IOPS") && stdout.contains("P99.99"),
        "{stdout}"
    );
    let t = logdisk_test(&report, 0);
    assert_eq!(t["end_reason"], "duration_elapsed");
    assert_eq!(t["mode"], "dsync");
    let c = &t["config"]["detail"];
    assert_eq!(c["block_size"], 4096);
    assert_eq!(c["file_size"], 65536);
    assert_eq!(c["num_files"], 2);
    assert_eq!(c["writers"], 1);
    assert_eq!(c["direct"], true);
    assert_eq!(c["file_prefix"], "mqldt_testfile");
    let s = &series(&report)[0];
    check_summary(s, "writer", true);
    let d = &s["detail"];
    assert_eq!(d["kind"], "disk_writer");
    assert_eq!(d["writer"], 0);
    check_writer(d, s, 4096);
    assert!(d["write_call"].is_null() && d["sync_call"].is_null());
    let files: Vec<&str> = array_of(&d["files"], "files")
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2);
    assert!(files[0].ends_with("/d/mqldt_testfile.0000"), "{files:?}");
    assert!(files[1].ends_with("/d/mqldt_testfile.0001"), "{files:?}");
    // One writer: the merge is the writer.
    assert_eq!(t["overall_detail"]["writes"], d["writes"]);
    assert!(entries(&dir).is_empty(), "files left: {:?}", entries(&dir));
}

#[test]
fn a_list_of_block_sizes_runs_each_in_turn() {
    let work = work_dir();
    let (out, report) = logdisk_json(work.path(), work.path(), "--bsize 4K,8192 --numFiles 1", 0);
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("logdisk 4 KiB") && stdout.contains("logdisk 8 KiB"),
        "{stdout}"
    );
    for (i, size) in [4096, 8192].into_iter().enumerate() {
        let t = logdisk_test(&report, i);
        assert_eq!(t["config"]["detail"]["block_size"], size);
        assert_eq!(
            t["config"]["detail"]["block_sizes"],
            serde_json::json!([4096, 8192])
        );
        let s = &t["series"][0];
        check_writer(&s["detail"], s, size);
    }
    assert_eq!(entries(work.path()), ["report.json"]);
}

#[test]
fn two_writers_in_their_own_directories_append_to_the_csv() {
    let work = work_dir();
    for i in 1..=2 {
        std::fs::create_dir(work.path().join(format!("qm{i}"))).unwrap();
    }
    let csv = work.path().join("log.csv");
    let extra = format!("--qm 2 --bsize 4K --csvFile {}", csv.display());
    let (out, report) = logdisk_json(work.path(), &work.path().join("qm"), &extra, 0);
    assert!(stdout_of(&out).contains("\nall "), "{}", describe(&out));
    let t = logdisk_test(&report, 0);
    let writers = array_of(&t["series"], "series");
    assert_eq!(writers.len(), 2);
    let mut total = 0;
    for (i, s) in writers.iter().enumerate() {
        assert_eq!(s["label"], format!("qm {}", i + 1));
        assert_eq!(s["detail"]["writer"], i as u64 + 1);
        assert!(
            s["detail"]["dir"]
                .as_str()
                .unwrap()
                .ends_with(&format!("qm{}", i + 1))
        );
        check_writer(&s["detail"], s, 4096);
        total += u64_of(&s["detail"]["writes"], "writes");
    }
    let all = &t["overall_detail"];
    assert_eq!(u64_of(&all["writes"], "all writes"), total);
    assert_eq!(u64_of(&t["overall"]["samples"], "samples"), total);
    // A second run appends its rows, without a second header.
    let again = run(logdisk(&work.path().join("qm"), &extra));
    assert_code(&again, 0);
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 3, "{text}");
    assert!(lines[0].starts_with("Blocksize,Total writes to files,"));
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("Blocksize")).count(),
        1
    );
    for (i, l) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = l.split(',').collect();
        assert_eq!(cells.len(), 18, "{l}");
        assert_eq!(cells[0], "4096");
        assert_eq!(cells[17], ["1", "2", "all"][i % 3], "{l}");
    }
    for i in 1..=2 {
        assert!(entries(&work.path().join(format!("qm{i}"))).is_empty());
    }
}

#[test]
fn one_writer_replaces_the_csv() {
    let work = work_dir();
    let csv = work.path().join("log.csv");
    std::fs::write(&csv, "old,rows\n1,2\n3,4\n").unwrap();
    let out = run(logdisk(
        work.path(),
        &format!("--bsize 4K --csvFile={}", csv.display()),
    ));
    assert_code(&out, 0);
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].ends_with(",IOPS,P50 latency of write (ns),P90 latency of write (ns),P99 latency of write (ns),P99.9 latency of write (ns),P99.99 latency of write (ns),Writer"));
    assert!(lines[1].starts_with("4096,"), "{text}");
}

#[test]
fn think_time_between_writes_is_not_write_latency() {
    let work = work_dir();
    let (_, report) = logdisk_json(work.path(), work.path(), "--delay 20000", 0);
    let t = logdisk_test(&report, 0);
    assert_eq!(t["config"]["detail"]["delay_us"], 20000);
    let s = &series(&report)[0];
    let writes = u64_of(&s["samples"], "samples");
    // 1 s with 20 ms between writes: at most ~50 writes.
    assert!((1..=52).contains(&writes), "{writes} writes");
    let avg = f64_of(&s["avg_ns"], "avg_ns");
    assert!(avg < 20_000_000.0, "the delay was counted: avg {avg} ns");
}

#[test]
fn fdatasync_times_the_write_and_the_sync_separately() {
    let work = work_dir();
    let (out, report) = logdisk_json(work.path(), work.path(), "--sync fdatasync", 0);
    let stdout = stdout_of(&out);
    assert!(stdout.contains("pwrite + fdatasync (O_DIRECT)"), "{stdout}");
    assert!(stdout.contains("fdatasync p99"), "{stdout}");
    let s = &series(&report)[0];
    let d = &s["detail"];
    let writes = u64_of(&d["writes"], "writes");
    for part in ["write_call", "sync_call"] {
        check_summary(&d[part], part, false);
        assert_eq!(u64_of(&d[part]["samples"], part), writes);
    }
    // The durable write spans both calls.
    assert!(i64_of(&s["min_ns"], "min") >= i64_of(&d["write_call"]["min_ns"], "w min"));
    assert_eq!(report["tests"][0]["mode"], "fdatasync");
}

#[test]
fn an_existing_test_file_is_refused_before_anything_is_written() {
    let work = work_dir();
    let precious = work.path().join("mqldt_testfile.0001");
    std::fs::write(&precious, "precious data").unwrap();
    let json = work.path().join("r.json");
    let out = run(logdisk(work.path(), &format!("--json {}", json.display())));
    assert_code(&out, 2);
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("mqldt_testfile.0001 already exists") && err.contains("--reuse"),
        "{err}"
    );
    assert!(stdout_of(&out).is_empty());
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious data");
    assert_eq!(entries(work.path()), ["mqldt_testfile.0001"]);
    // --reuse of a file of another size: refused too, untouched.
    let out = run(logdisk(work.path(), "--reuse"));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("exactly --fileSize"),
        "{}",
        describe(&out)
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious data");
}

#[test]
fn reuse_writes_over_a_right_sized_file_and_keeps_it_and_keep_keeps_all() {
    let work = work_dir();
    let reused = work.path().join("mqldt_testfile.0000");
    std::fs::write(&reused, vec![1u8; 65536]).unwrap();
    let (_, report) = logdisk_json(work.path(), work.path(), "--reuse", 0);
    assert_eq!(series(&report)[0]["detail"]["files_reused"], 1);
    assert_eq!(entries(work.path()), ["mqldt_testfile.0000", "report.json"]);
    std::fs::remove_file(&reused).unwrap();
    let out = run(logdisk(work.path(), "--keep --filePrefix kept"));
    assert_code(&out, 0);
    assert_eq!(
        entries(work.path()),
        ["kept.0000", "kept.0001", "report.json"]
    );
    assert_eq!(
        std::fs::metadata(work.path().join("kept.0001"))
            .unwrap()
            .len(),
        65536
    );
}

#[test]
fn sigint_mid_run_reports_writes_the_files_and_removes_the_test_files() {
    let work = work_dir();
    let json = work.path().join("r.json");
    let csv = work.path().join("r.csv");
    let dir = work.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let child = spawn(&[
        "logdisk",
        &format!("--dir={}", dir.display()),
        "--fileSize=64K",
        "--numFiles=2",
        "--duration=30",
        "--bsize=4K,8K",
        "--json",
        json.to_str().unwrap(),
        "--csvFile",
        csv.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(libc::SIGINT);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("ended: interrupted"), "{stdout}");
    let report = read_json(&json);
    let tests = array_of(&report["tests"], "tests");
    assert_eq!(tests.len(), 1, "the second block size never started");
    assert_eq!(tests[0]["end_reason"], "interrupted");
    assert!(u64_of(&series(&report)[0]["samples"], "samples") > 0);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 2);
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
}

/// A 2 MiB tmpfs mounted on a directory of `work`, unmounted on drop.
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(work: &Path) -> Result<SmallFs, String> {
        if !euid_is_root() {
            return Err("not root: cannot mount a small filesystem".to_string());
        }
        let dir = work.join("small");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "latscope-test"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs refused: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallFs(dir))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_no_files() {
    let work = work_dir();
    let fs = match SmallFs::mount(work.path()) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("SKIPPED a_full_disk_is_a_clear_error_and_leaves_no_files: {why}");
            return;
        }
    };
    let json = work.path().join("r.json");
    let mut cmd = latscope(30);
    cmd.arg("logdisk")
        .arg("--dir")
        .arg(&fs.0)
        .args(args(
            "--fileSize 1M --numFiles 4 --duration 1 -q --no-direct --json",
        ))
        .arg(&json);
    let out = run(cmd);
    assert_code(&out, 1);
    let err = stderr_of(&out);
    assert!(
        err.contains("No space left on device") && err.contains("mqldt_testfile.000"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("error")).count(),
        1,
        "{err}"
    );
    let report = read_json(&json);
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["tests"][0]["end_reason"], "error");
    assert!(entries(&fs.0).is_empty(), "{:?}", entries(&fs.0));
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_written() {
    let work = work_dir();
    let d = work.path();
    let plain_file = d.join("plain");
    std::fs::write(&plain_file, "x").unwrap();
    let cases: Vec<String> = [
        "--dir /nonexistent/latscope-dir",
        &format!("--dir {}", plain_file.display()),
        &format!("--dir {}/qm --qm 2", d.display()),
        "--fileSize 5000",
        "--fileSize 2T",
        "--fileSize 2048G",
        "--bsize 128K --fileSize 64K",
        "--bsize 1000",
        "--bsize 4X",
        "--bsize -1",
        "--bsize 0",
        "--bsize 4K,",
        "--bsize 99999999999999999999",
        "--bsize 128M --fileSize 1G",
        "--qm 0",
        "--qm 11",
        "--qm two",
        "--qm 2 --bsize 4K,8K",
        "--numFiles abc",
        "--numFiles 0",
        "--numFiles 10001",
        "--duration 0.5",
        "--duration 0",
        "--duration forever",
        "--delay -5",
        "--delay 1e3",
        "--alignment 3000",
        "--filePrefix a/b",
        "--csvFile /nonexistent/x.csv",
        "--json /nonexistent/x.json",
        "--sync sometimes",
        "--bogus",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for case in &cases {
        let mut cmd = latscope(10);
        cmd.arg("logdisk");
        if !case.starts_with("--dir") {
            cmd.arg("--dir").arg(d);
        }
        cmd.args(args(case));
        let out = run(cmd);
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{case}: {err}");
        assert!(err.starts_with("latscope: error: "), "{case}: {err}");
        assert!(stdout_of(&out).is_empty(), "{case}");
        assert_eq!(entries(d), ["plain"], "{case}: something was written");
    }
}

/// mqldt's CSV header, exactly.
const MQLDT_CSV_HEADER: &str = "Blocksize,Total writes to files,Total bytes written to files,Max bytes/sec written to files (over 1 sec interval),Min bytes/sec written to files (over 1 sec interval),Avg bytes/sec written to files,Max latency of write (ns),Min latency of write (ns),Avg latency of write (ns),Min bytes/sec (slowest write),Max bytes/sec (fastest write)";

#[test]
fn classic_format_prints_mqldt_blocks_and_its_exact_csv() {
    let work = work_dir();
    let csv = work.path().join("mq.csv");
    std::fs::write(&csv, "stale\n").unwrap();
    let mut cmd = logdisk(
        work.path(),
        &format!("--format classic --bsize=4K,8K --csvFile={}", csv.display()),
    );
    cmd.env("LC_ALL", "C");
    let out = run(cmd);
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let l = lines(&stdout);
    assert_eq!(l[0], "", "{stdout}");
    assert_eq!(l[1], "Options (specified or defaulted to)");
    assert_eq!(l[2], "=".repeat(85));
    assert_eq!(
        l[3],
        "Write blocksize             (--bsize)              : 4K,8K"
    );
    assert!(
        stdout.contains("\nCreating files...for thread: 0\n"),
        "{stdout}"
    );
    // Per block size: the seconds counter's end, then the two blocks.
    assert_eq!(stdout.matches("\n1/1\n\n").count(), 2, "{stdout}");
    for label in [
        "Total writes to files                                : ",
        "IOPS                                                 : ",
        "Avg bytes/sec written to files                       : ",
        "Max latency of write (ns)      : ",
        "Avg latency of write (ns)      : ",
    ] {
        assert_eq!(stdout.matches(label).count(), 2, "{label}\n{stdout}");
    }
    // The C locale: no thousands separators.
    let writes_line = l.iter().find(|x| x.starts_with("Total writes")).unwrap();
    assert!(!writes_line.contains(','), "{writes_line}");
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("Executing test for write blocksize 4096 bytes (4KB). Seconds elapsed -> "),
        "{stderr}"
    );
    // The CSV: replaced (one writer), mqldt's header, one row per size,
    // numbers matching the console.
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(rows[0], MQLDT_CSV_HEADER);
    assert!(
        rows[1].starts_with("4096,") && rows[2].starts_with("8192,"),
        "{text}"
    );
    let total_writes = writes_line.rsplit(':').next().unwrap().trim();
    assert_eq!(rows[1].split(',').nth(1), Some(total_writes), "{text}");
    assert_eq!(
        entries(work.path()),
        vec!["mq.csv".to_string()],
        "test files removed"
    );
}

#[test]
fn the_mqldt_name_appends_its_csv_with_several_writers() {
    let work = work_dir();
    for i in 1..=2 {
        std::fs::create_dir(work.path().join(format!("qm{i}"))).unwrap();
    }
    let csv = work.path().join("qm.csv");
    std::fs::write(&csv, "earlier run\n").unwrap();
    let link = work.path().join("mqldt");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg(format!("--dir={}", work.path().join("qm").display()))
        .args(args(
            "--bsize=4K --fileSize=64K --numFiles=2 --duration=1 --qm=2",
        ))
        .arg(format!("--csvFile={}", csv.display()))
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("Creating files...for thread: 1\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Creating files...for thread: 2\n"),
        "{stdout}"
    );
    assert!(stdout.contains("by all queue managers"), "{stdout}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows[0], "earlier run", "appended: {text}");
    assert_eq!(rows[1], "Running MQLDT over 2 Queue Managers", "{text}");
    assert_eq!(rows.len(), 4, "{text}");
    assert!(rows[3].starts_with("4096,"), "{text}");
}
