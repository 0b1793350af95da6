//! `latscope logdisk` through the real binary: the write pattern's figures,
//! block-size lists, several writers, think time, separate sync timing, the
//! CSV (replace / append), the JSON report, the safety of test files (an
//! existing file is refused untouched, --reuse, --keep, removal after a
//! normal end, Ctrl-C, a disk full while the files are written out and one
//! that fills up while measuring), a filesystem without direct I/O, and
//! every bad input. Runs are short
//! (1 s per block size, small files) in directories under cargo's
//! `CARGO_TARGET_TMPDIR` (on disk; /tmp may be tmpfs).

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tempfile::TempDir;

/// A fresh directory on disk (see `disk_dir`).
fn work_dir() -> TempDir {
    disk_dir("logdisk-test-")
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
    assert!(writes > 0, "{}", evidence("json", &d.to_string()));
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
        assert!(covered > 0.0, "{}", evidence("json", &s.to_string()));
        let iops = f64_of(&s["iops"], "iops");
        let expected = u64_of(&s["writes"], "writes") as f64 / covered;
        assert!(
            (iops - expected).abs() <= expected * 1e-9,
            "{}",
            evidence("json", &s.to_string())
        );
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

/// `-D` is the duration, as for every other test (it was refused); mqldt
/// has no `-D`, so the `mqldt` name takes it too, in the same meaning.
#[test]
fn d_is_the_duration_as_for_every_other_test() {
    let work = work_dir();
    for (name, words) in [
        (
            "latscope",
            "logdisk --bsize 4K --fileSize 64K --numFiles 2 -q -D 1",
        ),
        ("mqldt", "--bsize=4K --fileSize=64K --numFiles=2 -D 2"),
    ] {
        let json = work.path().join(format!("{name}.json"));
        let mut cmd = if name == "latscope" {
            latscope(60)
        } else {
            let link = work.path().join("mqldt");
            std::os::unix::fs::symlink(bin(), &link).unwrap();
            let mut c = assert_cmd::Command::new(&link);
            c.timeout(Duration::from_secs(60));
            c
        };
        cmd.args(args(words))
            .arg(format!("--dir={}", work.path().display()))
            .arg("--json")
            .arg(&json);
        let (out, report) = run_with_report(cmd, &json, 0);
        let t = logdisk_test(&report, 0);
        assert_eq!(t["end_reason"], "duration_elapsed", "{}", describe(&out));
        let seconds = if name == "latscope" { 1.0 } else { 2.0 };
        let asked = f64_of(&t["config"]["duration_s"], "config.duration_s");
        assert_eq!(asked, seconds, "{name}: {}", describe(&out));
    }
    let out = run(latscope(10).args(args("logdisk -D 0.5")));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("-D/--duration '0.5': at least 1 second"),
        "{}",
        describe(&out)
    );
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

/// The think time ends at the end of the run and on a stop, however long:
/// `--delay` of a minute after the first write of a 1 s run ends the run at
/// 1 s with that one write (it slept the whole minute), and a SIGINT during
/// it ends the run with its results.
#[test]
fn a_long_think_time_ends_at_the_run_s_end_and_on_a_stop() {
    let work = work_dir();
    // latscope(60): a run that slept the minute fails on the timeout.
    let (_, report) = logdisk_json(work.path(), work.path(), "--delay 60000000", 0);
    let t = logdisk_test(&report, 0);
    assert_eq!(t["end_reason"], "duration_elapsed");
    assert_eq!(u64_of(&series(&report)[0]["samples"], "samples"), 1);

    let json = work.path().join("stop.json");
    let dir = work.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let child = spawn(&[
        "logdisk",
        &format!("--dir={}", dir.display()),
        "--fileSize=64K",
        "--numFiles=2",
        "--duration=600",
        "--delay=60000000",
        "--json",
        json.to_str().unwrap(),
    ]);
    let measuring = writer_has_written(child.child.id(), Duration::from_secs(120));
    child.signal(libc::SIGINT);
    // Far less than the minute of think time it was in.
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    assert!(measuring, "no writer thread wrote\n{stdout}{stderr}");
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    let report = read_json(&json);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    assert_eq!(u64_of(&series(&report)[0]["samples"], "samples"), 1);
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
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
    // Interrupted once it measures (a writer has completed a write), not
    // after a fixed time a busy machine may need for the write-out.
    let measuring = writer_has_written(child.child.id(), Duration::from_secs(120));
    child.signal(libc::SIGINT);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(120));
    assert!(
        measuring,
        "no writer thread wrote within 120 s\n{stdout}{stderr}"
    );
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

/// Waits until a writer thread (`logdisk-N`, started once the files are
/// written out) of process `pid` has completed a write system call (its
/// `syscw` in /proc), i.e. the run is measuring; false after `timeout`.
fn writer_has_written(pid: u32, timeout: Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    let tasks = format!("/proc/{pid}/task");
    while std::time::Instant::now() < deadline {
        let wrote = std::fs::read_dir(&tasks)
            .into_iter()
            .flatten()
            .filter_map(|t| t.ok())
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("logdisk-"))
            })
            .any(|t| {
                std::fs::read_to_string(t.path().join("io"))
                    .unwrap_or_default()
                    .lines()
                    .find_map(|l| l.strip_prefix("syscw: "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            });
        if wrote {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// The exit code of a namespace script whose setup failed (a missing tool,
/// no loop device): the test skips with the script's message. latscope
/// itself never exits with it.
const SETUP_FAILED: i32 = 77;

/// A latscope run on filesystems that only exist for it: a shell script
/// (written into `work`) runs under `unshare --mount --propagation private`,
/// mounts what `setup` says (shell lines; `step CMD...` fails the setup
/// with `SETUP_FAILED`), runs latscope with `args` in the foreground, and
/// then lists the files left in `$w/$list` into `work/left`. Every mount
/// lives in that private namespace, which vanishes with its last process,
/// so no mount or loop device (mounted with autoclear) outlives the run,
/// even when the test dies half-way. The test sees the namespace's files
/// through `/proc/PID/root` (`NsRun::inside`).
struct NsRun {
    child: Spawned,
    work: PathBuf,
}

impl NsRun {
    fn start(work: &Path, setup: &str, list: &str, args: &[&str]) -> Result<NsRun, String> {
        if !euid_is_root() {
            return Err("not root: cannot mount a small filesystem".to_string());
        }
        if !Path::new("/usr/bin/unshare").exists() && !Path::new("/bin/unshare").exists() {
            return Err("unshare (util-linux) is not installed".to_string());
        }
        let script = work.join("in-private-mounts.sh");
        let text = format!(
            r#"#!/bin/sh
# Written by tests/suite/slow/logdisk.rs; runs in a private mount namespace.
w="$1"; shift
step() {{ "$@" || {{ echo "setup failed: $*" >&2; exit {SETUP_FAILED}; }}; }}
{setup}
"$@"
status=$?
ls -A "$w/{list}" > "$w/left"
exit $status
"#
        );
        std::fs::write(&script, text).map_err(|e| e.to_string())?;
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(["--mount", "--propagation", "private", "sh"])
            .arg(&script)
            .arg(work)
            .arg(bin())
            .args(args);
        Ok(NsRun {
            child: spawn_std(&mut cmd),
            work: work.to_path_buf(),
        })
    }

    /// `path` (under `work`) as the namespace sees it.
    fn inside(&self, path: &Path) -> PathBuf {
        let relative = path.strip_prefix("/").expect("an absolute path");
        Path::new(&format!("/proc/{}/root", self.child.child.id())).join(relative)
    }

    /// The latscope process: the script's child, once it has started.
    fn latscope_pid(&mut self) -> Option<libc::pid_t> {
        let script = self.child.child.id().to_string();
        std::fs::read_dir("/proc").ok()?.find_map(|e| {
            let e = e.ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid ...: comm may hold spaces, so after ')'.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?;
            (ppid == script && stat.contains("(latscope)"))
                .then(|| e.file_name().to_str()?.parse().ok())
                .flatten()
        })
    }

    fn has_exited(&mut self) -> bool {
        matches!(self.child.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for the end (the timeout only guards against a hang: it is far
    /// above any run's own duration); `Err` is the reason to skip when the
    /// setup failed. On success: status, stdout, stderr and the files left.
    fn finish(self, timeout: Duration) -> Result<(ExitStatus, String, String, String), String> {
        let (status, out, err) = self.child.wait(timeout);
        if status.code() == Some(SETUP_FAILED) {
            return Err(err.trim().to_string());
        }
        let left = std::fs::read_to_string(self.work.join("left")).unwrap_or_default();
        Ok((status, out, err, left))
    }
}

/// A hang guard for runs in a private namespace: far above what any of
/// these runs takes (their own durations are at most 30 s) even on a busy
/// machine, so that only a real hang reaches it.
const NS_HANG_GUARD: Duration = Duration::from_secs(300);

/// Runs a system tool the test needs; its absence or failure is the reason
/// the test skips.
fn tool(
    name: &str,
    args: impl FnOnce(&mut std::process::Command) -> &mut std::process::Command,
) -> Result<String, String> {
    let mut cmd = std::process::Command::new(name);
    let out = args(&mut cmd)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The files left (the namespace script's listing), one a line.
fn listed(left: &str) -> Vec<&str> {
    left.lines().collect()
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_no_files() {
    let test = "a_full_disk_is_a_clear_error_and_leaves_no_files";
    let work = work_dir();
    let small = work.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let json = work.path().join("r.json");
    let setup = r#"step mount -t tmpfs -o size=2m latscope-test "$w/small""#;
    let run = NsRun::start(
        work.path(),
        setup,
        "small",
        &[
            "logdisk",
            "--dir",
            small.to_str().unwrap(),
            "--fileSize=1M",
            "--numFiles=4",
            "--duration=1",
            "-q",
            "--no-direct",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let finished = run.and_then(|r| r.finish(NS_HANG_GUARD));
    let (status, stdout, err, left) = match finished {
        Ok(f) => f,
        Err(why) => return latscope::testing::skip(test, &why.to_string()),
    };
    let all = dump(status, &stdout, &err);
    assert_eq!(status.code(), Some(1), "{all}");
    assert!(
        err.contains("No space left on device") && err.contains("mqldt_testfile.000"),
        "{all}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("error")).count(),
        1,
        "{all}"
    );
    let report = read_json(&json);
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["tests"][0]["end_reason"], "error");
    assert!(listed(&left).is_empty(), "files left: {left}");
}

/// The physical extents (first and last 4 KiB block) of `file`, from
/// `filefrag -v` (its lines: `0: 0.. 255: 550.. 805: 256: last,eof`).
fn physical_extents(file: &Path) -> Result<Vec<(u64, u64)>, String> {
    let text = tool("filefrag", |c| c.arg("-v").arg(file))?;
    let extents: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l
                .split(|c: char| c == ':' || c == '.' || c.is_whitespace())
                .filter(|w| !w.is_empty())
                .collect();
            match f.as_slice() {
                [_, _, _, first, last, ..] if f[0].parse::<u64>().is_ok() => {
                    Some((first.parse().ok()?, last.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    if extents.is_empty() {
        return Err(format!("no extents in filefrag's output: {text}"));
    }
    Ok(extents)
}

/// Frees `blocks` (4 KiB, inclusive ranges) of `image`, so writing them
/// again needs new space where `image` lives.
fn punch_holes(image: &Path, blocks: &[(u64, u64)]) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(image)
        .map_err(|e| format!("open {}: {e}", image.display()))?;
    for &(first, last) in blocks {
        // SAFETY: an open descriptor; the range lies inside the image.
        let rc = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                (first * 4096) as libc::off_t,
                ((last - first + 1) * 4096) as libc::off_t,
            )
        };
        if rc != 0 {
            return Err(format!("punch hole: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Writes zeros to a new file in `dir` until its filesystem is full.
fn fill(dir: &Path) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).map_err(|e| format!("filler: {e}"))?;
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    Ok(())
}

/// Stops a process (SIGSTOP) and lets it go on when dropped, so that no
/// test failure in between leaves it stopped.
struct Paused(libc::pid_t);

impl Paused {
    fn new(pid: libc::pid_t) -> Paused {
        // SAFETY: signalling a process this test started.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        Paused(pid)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// The disk fills up while the writer is measuring (not while the files
/// are written out): an ext4 without journal on a loop device whose image
/// lies on a small tmpfs, both mounted in a private namespace (`NsRun`).
/// Once both test files are written out, the test stops latscope, frees
/// the image's blocks under the test files, fills the tmpfs and lets
/// latscope go on: its next overwrite of any of those blocks finds no space
/// (ENOSPC from the device). Stopping it makes this independent of speed:
/// a writer left running could rewrite every freed block before the tmpfs
/// is full, and then never meet the full disk.
#[test]
fn a_disk_that_fills_up_while_measuring_stops_the_run_with_the_results_so_far() {
    let test = "a_disk_that_fills_up_while_measuring_stops_the_run_with_the_results_so_far";
    let work = work_dir();
    let (backing, disk) = (work.path().join("backing"), work.path().join("disk"));
    std::fs::create_dir(&backing).unwrap();
    std::fs::create_dir(&disk).unwrap();
    let json = work.path().join("r.json");
    let setup = r#"step mount -t tmpfs -o size=24m latscope-test "$w/backing"
step truncate -s 32M "$w/backing/ext4.img"
step mkfs.ext4 -q -F -b 4096 -O ^has_journal "$w/backing/ext4.img"
step mount -o loop "$w/backing/ext4.img" "$w/disk""#;
    let started = NsRun::start(
        work.path(),
        setup,
        "disk",
        &[
            "logdisk",
            "--dir",
            disk.to_str().unwrap(),
            "--bsize=4K",
            "--fileSize=1M",
            "--numFiles=2",
            "--duration=30",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let mut run = match started {
        Ok(r) => r,
        Err(why) => return latscope::testing::skip(test, &why.to_string()),
    };
    // Measuring starts once both files are written out: each has all its
    // 256 blocks. No fixed sleep: a busy machine may take longer.
    let files: Vec<PathBuf> = ["mqldt_testfile.0000", "mqldt_testfile.0001"]
        .iter()
        .map(|f| run.inside(&disk.join(f)))
        .collect();
    let blocks = |e: &[(u64, u64)]| e.iter().map(|(a, b)| b - a + 1).sum::<u64>();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut extents = None;
    while extents.is_none() && !run.has_exited() && std::time::Instant::now() < deadline {
        let found: Result<Vec<Vec<(u64, u64)>>, String> =
            files.iter().map(|f| physical_extents(f)).collect();
        extents = found.ok().filter(|e| e.iter().all(|e| blocks(e) == 256));
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = run.latscope_pid();
    let (Some(extents), Some(pid)) = (extents, pid) else {
        // Not measuring: either the setup failed (skip) or latscope did.
        if let Some(pid) = run.latscope_pid() {
            // SAFETY: signalling the latscope this test started.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
        match run.finish(NS_HANG_GUARD) {
            Err(why) => return latscope::testing::skip(test, &why.to_string()),
            Ok((status, stdout, stderr, _)) => panic!(
                "the test files were never fully written out\n{}",
                dump(status, &stdout, &stderr)
            ),
        }
    };
    // Some results before the disk fills: 100 writes take a few ms on this
    // loop device over tmpfs, so 2 s is a margin of hundreds even when the
    // machine is busy.
    std::thread::sleep(Duration::from_secs(2));
    let image = run.inside(&backing.join("ext4.img"));
    {
        let _paused = Paused::new(pid);
        let freed =
            punch_holes(&image, &extents.concat()).and_then(|()| fill(&run.inside(&backing)));
        if let Err(why) = freed {
            panic!("{why}");
        }
    }
    let (status, stdout, stderr, left) = run.finish(NS_HANG_GUARD).expect("set up before");
    let all = dump(status, &stdout, &stderr);
    assert_eq!(status.code(), Some(1), "{all}");
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(error_lines.len(), 1, "{all}");
    assert!(
        error_lines[0].contains("No space left on device")
            && error_lines[0].contains("mqldt_testfile.000"),
        "{all}"
    );
    // The results so far: printed and written.
    assert!(stdout.contains("ended: error"), "{all}");
    let report = read_json(&json);
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["tests"][0]["end_reason"], "error");
    assert!(
        u64_of(&series(&report)[0]["samples"], "samples") > 100,
        "{all}"
    );
    // The test files are gone; only what mkfs made is left.
    assert_eq!(listed(&left), ["lost+found"], "{all}");
}

/// ramfs has no direct I/O: the refusal names `--no-direct`, which then works.
#[test]
fn a_filesystem_without_direct_io_is_refused_with_the_way_out() {
    let test = "a_filesystem_without_direct_io_is_refused_with_the_way_out";
    let work = work_dir();
    let ram = work.path().join("ram");
    std::fs::create_dir(&ram).unwrap();
    let json = work.path().join("report.json");
    let setup = r#"step mount -t ramfs latscope-test "$w/ram""#;
    let logdisk_in_ramfs = |extra: &[&str]| {
        let mut argv = vec!["logdisk".to_string(), format!("--dir={}", ram.display())];
        argv.extend(
            args("--fileSize 64K --numFiles 2 --duration 1 -q")
                .iter()
                .map(|s| s.to_string()),
        );
        argv.extend(extra.iter().map(|s| s.to_string()));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        NsRun::start(work.path(), setup, "ram", &argv).and_then(|r| r.finish(NS_HANG_GUARD))
    };
    let (status, stdout, err, left) = match logdisk_in_ramfs(&[]) {
        Ok(f) => f,
        Err(why) => return latscope::testing::skip(test, &why.to_string()),
    };
    let all = dump(status, &stdout, &err);
    assert_eq!(status.code(), Some(2), "{all}");
    assert_eq!(err.lines().count(), 1, "{all}");
    assert!(
        err.contains("refuses direct I/O") && err.contains("--no-direct"),
        "{all}"
    );
    assert!(listed(&left).is_empty(), "files left: {left}");
    let (status, stdout, err, left) =
        logdisk_in_ramfs(&["--no-direct", "--json", json.to_str().unwrap()])
            .expect("the same setup worked before");
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &err));
    let report = read_json(&json);
    check_report_header(&report);
    let config = &logdisk_test(&report, 0)["config"]["detail"];
    assert_eq!(config["direct"], false, "{config}");
    assert!(listed(&left).is_empty(), "files left: {left}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_written() {
    let work = work_dir();
    let d = work.path();
    let plain_file = d.join("plain");
    std::fs::write(&plain_file, "x").unwrap();
    let cases: Vec<String> = [
        "--dir /nonexistent/latscope-dir",
        // Directories where no file can be created, even by root: refused
        // before measuring (they were exit 1 after an empty table).
        "--dir /proc",
        "--dir /sys/kernel",
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
