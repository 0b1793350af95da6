//! Helpers shared by the integration tests: running the real binary with a
//! timeout, privilege checks (with a printed reason when a test skips), JSON
//! report checks, POSIX queue leak checks and running as an unprivileged user.
//!
//! Every test module uses a different subset of these helpers.
#![allow(dead_code)]

mod mask;
mod sleep;
pub mod turns;
// Used by the provoking tests of the suite; the other test binaries do not.
#[allow(unused_imports)]
pub use sleep::*;
// Used by the output comparisons; the other test binaries do not.
#[allow(unused_imports)]
pub use mask::*;

use assert_cmd::Command;
use predicates::Predicate;
use serde_json::Value;
use std::ffi::CString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A captured output of the original tool: `tests/golden/TOOL/NAME`.
pub fn golden_bytes(tool: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(tool)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `golden_bytes` as text: the goldens of text outputs are UTF-8.
pub fn golden(tool: &str, name: &str) -> String {
    String::from_utf8(golden_bytes(tool, name))
        .unwrap_or_else(|e| panic!("tests/golden/{tool}/{name}: {e}"))
}

/// CLOCK_MONOTONIC now, in ns: the clock of latscope's samples (and of the
/// spikes' `expected_ns` and `actual_ns`).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    default_hangup_disposition();
    PathBuf::from(env!("CARGO_BIN_EXE_latscope"))
}

/// latscope keeps SIGHUP ignored when it starts with it ignored (as under
/// `nohup`: on purpose, see rt::signals), and a signal disposition is
/// inherited across fork and exec. So the binary under test starts with the
/// default disposition, not with whatever the test runner was started with:
/// a suite run under `nohup` otherwise fails every SIGHUP test.
fn default_hangup_disposition() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: setting a standard signal's disposition to the default.
    ONCE.call_once(|| unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_DFL);
    });
}

/// `latscope` with a timeout, so a hang fails the test instead of blocking CI.
pub fn latscope(timeout_s: u64) -> Command {
    default_hangup_disposition();
    let mut cmd = Command::cargo_bin("latscope").expect("the latscope binary is built");
    cmd.timeout(Duration::from_secs(timeout_s));
    cmd
}

/// `latscope mq ARGS`, adding `--no-mlockall` when this user may not lock
/// memory (mq treats a failed mlockall as a run-time error, exit 1).
pub fn mq(args: &[&str], timeout_s: u64) -> Command {
    let mut cmd = latscope(timeout_s);
    cmd.arg("mq").args(args).args(mlock_args());
    cmd
}

/// Runs `cmd` and returns its output; a timeout or spawn error fails the test.
pub fn run(mut cmd: impl std::borrow::BorrowMut<Command>) -> Output {
    let cmd = cmd.borrow_mut();
    cmd.output()
        .unwrap_or_else(|e| panic!("running {cmd:?} failed (timeout or spawn error): {e}"))
}

/// An argument list written as one line, split at whitespace:
/// `args("-l 200 -i 100")` is `["-l", "200", "-i", "100"]`. Only for
/// arguments that have no whitespace (and are not empty) themselves.
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `latscope mq ARGS` (see `mq`) and asserts its exit code.
pub fn run_mq(args: &[&str], timeout_s: u64, code: i32) -> Output {
    let out = run(mq(args, timeout_s));
    assert_code(&out, code);
    out
}

/// A fresh directory on a disk-backed filesystem, under the directory cargo
/// gives integration tests (`CARGO_TARGET_TMPDIR`, inside whatever target
/// directory this build uses). Tests that need direct I/O use it: `/tmp` may
/// be a tmpfs, which refuses O_DIRECT.
pub fn disk_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap_or_else(|e| panic!("temp dir under {}: {e}", env!("CARGO_TARGET_TMPDIR")))
}

/// Evidence for an assertion message: `text` itself when short; otherwise
/// its first and last lines and the name of a file (under
/// `CARGO_TARGET_TMPDIR/evidence/`) that holds all of it, so that a failure
/// message stays readable (a whole report is tens of KB).
pub fn evidence(what: &str, text: &str) -> String {
    const LIMIT: usize = 4000;
    const EDGE: usize = 12;
    if text.len() <= LIMIT {
        return text.to_string();
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("evidence");
    let saved = std::fs::create_dir_all(&dir)
        .and_then(|()| {
            tempfile::Builder::new()
                .prefix(&format!("{what}-"))
                .suffix(".txt")
                .tempfile_in(&dir)
        })
        .and_then(|f| {
            std::fs::write(f.path(), text)?;
            // Kept on purpose: it is the evidence the message names.
            f.keep().map_err(|e| e.error)
        });
    let all: Vec<&str> = text.lines().collect();
    let shown = |l: &[&str]| -> String {
        l.iter()
            .map(|l| l.chars().take(200).collect::<String>() + "\n")
            .collect()
    };
    let cut = if all.len() > 2 * EDGE {
        format!(
            "{}[... {} lines ...]\n{}",
            shown(&all[..EDGE]),
            all.len() - 2 * EDGE,
            shown(&all[all.len() - EDGE..])
        )
    } else {
        shown(&all).chars().take(LIMIT).collect()
    };
    match saved {
        Ok((_, path)) => format!(
            "[{what}: {} bytes, all of it in {}]\n{cut}",
            text.len(),
            path.display()
        ),
        Err(e) => format!("[{what}: {} bytes, not saved: {e}]\n{cut}", text.len()),
    }
}

/// A fresh temporary directory and the path of `name` in it. Keep the
/// directory: dropping it removes the directory and the file.
pub fn temp_file(name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join(name);
    (dir, file)
}

/// A finished `latscope mq ARGS --json FILE`, FILE in its own temporary
/// directory, which lives as long as this value.
pub struct MqJsonRun {
    pub out: Output,
    pub file: PathBuf,
    /// How long the run itself took (from start to exit).
    pub elapsed: Duration,
    pub dir: TempDir,
}

/// Runs `latscope mq ARGS --json FILE` (see `mq`) and checks nothing.
pub fn mq_json(args: &[&str], timeout_s: u64) -> MqJsonRun {
    let (dir, file) = temp_file("report.json");
    let mut argv = args.to_vec();
    argv.extend(["--json", file.to_str().expect("utf-8 temp path")]);
    let started = Instant::now();
    let out = run(mq(&argv, timeout_s));
    let elapsed = started.elapsed();
    MqJsonRun {
        out,
        file,
        elapsed,
        dir,
    }
}

/// Runs `latscope mq ARGS --json FILE`, asserts the exit code and reads the
/// report (with `read_json`'s checks). Keep the `TempDir` while the report
/// file is needed.
pub fn run_mq_json(args: &[&str], timeout_s: u64, code: i32) -> (Output, Value, TempDir) {
    let MqJsonRun { out, file, dir, .. } = mq_json(args, timeout_s);
    assert_code(&out, code);
    let report = read_json(&file);
    (out, report, dir)
}

/// `run_mq_json` of a run that must exit 0 with a latscope report, whose
/// common parts are checked (`check_report_header`).
pub fn run_mq_report(args: &[&str], timeout_s: u64) -> (Output, Value, TempDir) {
    let (out, report, dir) = run_mq_json(args, timeout_s, 0);
    check_report_header(&report);
    (out, report, dir)
}

/// The tracer switch, if this process could write it (then a `-b` run may
/// turn the system tracer off).
pub fn tracing_on_file() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(|d| Path::new(d).join("tracing_on"))
        .find(|p| std::fs::OpenOptions::new().write(true).open(p).is_ok())
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A readable dump of a finished process from its parts, for assertion
/// messages.
pub fn dump(status: ExitStatus, stdout: &str, stderr: &str) -> String {
    format!(
        "status {status:?}\n--- stdout ---\n{}--- stderr ---\n{}",
        evidence("stdout", stdout),
        evidence("stderr", stderr)
    )
}

/// A readable dump of a finished command, for assertion messages.
pub fn describe(out: &Output) -> String {
    use std::os::unix::process::ExitStatusExt;
    let killed = match out.status.signal() {
        Some(libc::SIGKILL) => " (killed: the test's timeout expired?)",
        Some(_) => " (ended by a signal)",
        None => "",
    };
    format!(
        "status: {:?}{killed}\n--- stdout ---\n{}--- stderr ---\n{}",
        out.status,
        evidence("stdout", &stdout_of(out)),
        evidence("stderr", &stderr_of(out))
    )
}

/// Asserts the exit code, showing all output when it differs.
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit code {code}\n{}",
        describe(out)
    );
}

pub fn euid_is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True when this process may lock all its memory (root, or no memlock limit).
pub fn can_mlock() -> bool {
    if euid_is_root() {
        return true;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    rc == 0 && lim.rlim_cur == libc::RLIM_INFINITY
}

pub fn mlock_args() -> &'static [&'static str] {
    if can_mlock() { &[] } else { &["--no-mlockall"] }
}

/// Tries SCHED_FIFO priority 1 on a short-lived thread: what actually matters.
pub fn can_use_realtime() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: valid thread handle (self) and parameter.
        unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap_or(false)
}

/// Returns true (after printing why) when a test needs real-time priority
/// and this process cannot have it. CI runs as root, so these tests do run.
pub fn skip_without_realtime(test: &str) -> bool {
    if can_use_realtime() {
        return false;
    }
    latscope::testing::skip(
        test,
        "SCHED_FIFO is not permitted for this user (run the tests as root or with CAP_SYS_NICE)",
    );
    true
}

/// `text` with latscope's wrapped notes joined again: a line that starts
/// with two blanks continues the line before it (notes wrap at 100 columns
/// with an indent of two; no table row starts with blanks).
pub fn unwrapped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match line.strip_prefix("  ") {
            Some(rest) if !out.is_empty() => {
                out.pop();
                out.push(' ');
                out.push_str(rest.trim_start());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Lines of `text` without the trailing empty one.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Whether `line` matches the regular expression `pattern`.
pub fn matches(pattern: &str, line: &str) -> bool {
    predicates::str::is_match(pattern)
        .unwrap_or_else(|e| panic!("bad test regex {pattern}: {e}"))
        .eval(line)
}

/// The stat line of pmqtest pair `pair`: `#1 -> #0, Min %4d, Cur %4d, Avg %4d, Max %4d`.
pub fn classic_stat_regex(pair: usize) -> String {
    format!(
        r"^#{} -> #{}, Min {n}, Cur {n}, Avg {n}, Max {n}$",
        2 * pair + 1,
        2 * pair,
        n = NUM4
    )
}

/// A number printed as C's `%4d`: 1..3 digits right-aligned in 4 columns,
/// or 4 and more digits unpadded.
pub const NUM4: &str = r"(?:   \d|  \d{2}| \d{3}|\d{4,})";

/// The four numbers (Min, Cur, Avg, Max) of a classic stat line.
pub fn classic_stat_numbers(line: &str) -> [u64; 4] {
    let mut values = [0u64; 4];
    for (i, key) in ["Min", "Cur", "Avg", "Max"].iter().enumerate() {
        let at = line
            .find(&format!("{key} "))
            .unwrap_or_else(|| panic!("no {key} in {line:?}"));
        let rest = &line[at + key.len()..];
        let number: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        values[i] = number
            .parse()
            .unwrap_or_else(|_| panic!("no number after {key} in {line:?}"));
    }
    values
}

/// Parses a JSON file, failing with its text on error; refuses NaN/Infinity.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("JSON file {} not readable: {e}", path.display()));
    for bad in ["NaN", "Infinity"] {
        assert!(
            !text.contains(bad),
            "{} contains {bad}:\n{}",
            path.display(),
            evidence("json", &text)
        );
    }
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{} is not valid JSON ({e}):\n{}",
            path.display(),
            evidence("json", &text)
        )
    })
}

pub fn u64_of(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} is not a non-negative integer: {v}"))
}

/// A signed integer field (latencies are signed since schema 2).
pub fn i64_of(v: &Value, what: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"))
}

/// A float field; `null` here is how serde_json writes a NaN or infinity.
pub fn f64_of(v: &Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number (NaN written as null?): {v}"));
    assert!(x.is_finite(), "{what} is not finite: {x}");
    x
}

/// An array field.
pub fn array_of<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what} is not an array"))
}

pub const PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999];

/// Checks the internal consistency of one latscope series (or `overall`
/// summary when `is_series` is false) that has at least one sample.
pub fn check_summary(s: &Value, what: &str, is_series: bool) -> u64 {
    let samples = u64_of(&s["samples"], &format!("{what}.samples"));
    assert!(
        samples > 0,
        "{what}: no samples: {}",
        evidence("json", &s.to_string())
    );
    let min = i64_of(&s["min_ns"], &format!("{what}.min_ns"));
    let max = i64_of(&s["max_ns"], &format!("{what}.max_ns"));
    let avg = f64_of(&s["avg_ns"], &format!("{what}.avg_ns"));
    f64_of(&s["stddev_ns"], &format!("{what}.stddev_ns"));
    assert!(max > 0, "{what}: max_ns is 0");
    assert!(
        min as f64 <= avg && avg <= max as f64,
        "{what}: not min <= avg <= max: {min} {avg} {max}"
    );

    let percentiles = array_of(&s["percentiles"], &format!("{what}.percentiles"));
    let listed: Vec<f64> = percentiles
        .iter()
        .map(|p| {
            f64_of(
                &p["percentile"],
                &format!("{what}.percentiles[].percentile"),
            )
        })
        .collect();
    assert_eq!(listed, PERCENTILES, "{what}: percentiles listed");
    let mut previous = min;
    for p in percentiles {
        let ns = i64_of(&p["ns"], &format!("{what}.percentiles[].ns"));
        assert!(
            ns >= previous && ns <= max,
            "{what}: percentiles not monotone within [min, max] = [{min}, {max}]: {percentiles:?}"
        );
        previous = ns;
    }
    let p50 = i64_of(&percentiles[0]["ns"], "p50");
    let p99 = i64_of(&percentiles[2]["ns"], "p99");
    assert!(min <= p50 && p50 <= p99 && p99 <= max, "{what}: sanity");

    let buckets = array_of(&s["histogram"], &format!("{what}.histogram"));
    let mut in_buckets = 0;
    for b in buckets {
        let low = i64_of(&b["low_ns"], "bucket.low_ns");
        let high = i64_of(&b["high_ns"], "bucket.high_ns");
        assert!(
            low <= high && low >= min && high <= max,
            "{what}: bucket {b} outside [{min}, {max}]"
        );
        in_buckets += u64_of(&b["count"], "bucket.count");
    }
    let overflow = u64_of(&s["overflow"], &format!("{what}.overflow"));
    assert_eq!(
        in_buckets + overflow,
        samples,
        "{what}: histogram counts + overflow != samples"
    );

    if is_series {
        let seconds = array_of(&s["per_second"], &format!("{what}.per_second"));
        let mut in_seconds = 0;
        for w in seconds {
            let n = u64_of(&w["samples"], "per_second.samples");
            let wmin = i64_of(&w["min_ns"], "per_second.min_ns");
            let wmax = i64_of(&w["max_ns"], "per_second.max_ns");
            let wavg = f64_of(&w["avg_ns"], "per_second.avg_ns");
            assert!(
                n > 0 && wmin as f64 <= wavg && wavg <= wmax as f64 && wmin >= min && wmax <= max,
                "{what}: per-second window inconsistent: {w}"
            );
            in_seconds += n;
        }
        // The tests' runs are far shorter than the per-second ring (64 s), so
        // no window may be lost and every sample is in exactly one window.
        assert_eq!(
            u64_of(&s["per_second_dropped"], "per_second_dropped"),
            0,
            "{what}: per-second windows dropped in a short run"
        );
        assert_eq!(
            in_seconds, samples,
            "{what}: per_second samples do not add up to the samples"
        );
    }
    samples
}

/// Runs `cmd --json FILE`, asserts the exit code, reads the report and
/// checks its common parts (`check_report_header`).
pub fn run_with_report(mut cmd: Command, file: &Path, code: i32) -> (Output, Value) {
    cmd.arg("--json").arg(file);
    let out = run(cmd);
    assert_code(&out, code);
    let report = read_json(file);
    check_report_header(&report);
    (out, report)
}

/// Checks the parts of a latscope report every run has.
pub fn check_report_header(report: &Value) {
    assert_eq!(
        report["schema"],
        "latscope-report",
        "schema: {}",
        evidence("json", &report.to_string())
    );
    assert_eq!(report["schema_version"], 3, "schema_version");
    let sys = &report["sysinfo"];
    for key in [
        "sysname",
        "nodename",
        "release",
        "version",
        "machine",
        "clocksource",
    ] {
        assert!(
            sys[key].is_string(),
            "sysinfo.{key} missing: {}",
            evidence("json", &sys.to_string())
        );
    }
    assert_eq!(sys["sysname"], "Linux");
    assert!(
        sys["preempt_rt"].is_boolean(),
        "sysinfo.preempt_rt: {}",
        evidence("json", &sys.to_string())
    );
    assert!(
        u64_of(&sys["cpus_online"], "sysinfo.cpus_online") >= 1,
        "cpus_online"
    );
    assert!(
        !sys["cpus_allowed"]
            .as_array()
            .expect("sysinfo.cpus_allowed array")
            .is_empty(),
        "cpus_allowed empty"
    );
    assert!(
        report["warnings"]
            .as_array()
            .expect("warnings must be an array")
            .iter()
            .all(Value::is_string),
        "warnings must be strings"
    );
    assert!(report["tests"].is_array(), "tests must be an array");
    check_window_percentiles(report);
}

/// Every per-second window's own percentiles (schema 3), where it has them,
/// lie in order inside its exact [min, max].
pub fn check_window_percentiles(report: &Value) {
    let tests = report["tests"].as_array().into_iter().flatten();
    for s in tests.flat_map(|t| t["series"].as_array().into_iter().flatten()) {
        for w in s["per_second"].as_array().into_iter().flatten() {
            let p = ["min_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns"].map(|k| w[k].as_i64());
            let present: Vec<i64> = p.iter().flatten().copied().collect();
            assert!(
                present.windows(2).all(|x| x[0] <= x[1]),
                "{}: window out of order: {w}",
                s["label"]
            );
        }
    }
}

/// The series of the first test of a report.
pub fn series(report: &Value) -> &Vec<Value> {
    report["tests"][0]["series"].as_array().unwrap_or_else(|| {
        panic!(
            "tests[0].series missing: {}",
            evidence("json", &report.to_string())
        )
    })
}

/// The CPUs this process may run on (what `-S` and bare `-t` use).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: zeroed cpu_set_t is a valid empty set; valid out pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Asserts that the POSIX message queue `name` does not exist (mq_open fails
/// with ENOENT).
pub fn assert_queue_gone(name: &str) {
    let c = CString::new(name).expect("queue name without NUL");
    // SAFETY: valid C string; O_RDONLY without O_CREAT takes no further arguments.
    let mqd = unsafe { libc::mq_open(c.as_ptr(), libc::O_RDONLY) };
    let err = std::io::Error::last_os_error();
    if mqd != -1 {
        // SAFETY: we just opened it.
        unsafe { libc::mq_close(mqd) };
        panic!("message queue {name} still exists after the run");
    }
    assert_eq!(
        err.raw_os_error(),
        Some(libc::ENOENT),
        "mq_open({name}) failed with {err}, expected ENOENT"
    );
}

/// The mount point of the mqueue filesystem at /dev/mqueue, if mounted.
pub fn mqueue_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() >= 3 && f[1] == "/dev/mqueue" && f[2] == "mqueue")
        .map(|_| PathBuf::from("/dev/mqueue"))
}

/// When /dev/mqueue is mounted: no `latscope-*` queue is left behind. Queues
/// of other latscope processes running at this moment exist only for an
/// instant (they are unlinked right after creation), so an entry must persist
/// over a few looks to count as leaked. Entries of `pid` count at once.
pub fn assert_no_latscope_queues(pid: u32) {
    let Some(dir) = mqueue_mount() else {
        eprintln!("note: /dev/mqueue is not a mounted mqueue fs; queue directory not checked");
        return;
    };
    let list = || -> Vec<String> {
        std::fs::read_dir(&dir)
            .expect("read /dev/mqueue")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("latscope-"))
            .collect()
    };
    let own = format!("latscope-{pid}-");
    let first = list();
    let mine: Vec<&String> = first.iter().filter(|n| n.starts_with(&own)).collect();
    assert!(mine.is_empty(), "queues of pid {pid} left behind: {mine:?}");
    let mut persistent = first;
    for _ in 0..3 {
        if persistent.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
        let now = list();
        persistent.retain(|n| now.contains(n));
    }
    assert!(
        persistent.is_empty(),
        "latscope queues left in /dev/mqueue: {persistent:?}"
    );
}

/// A child started with `std::process::Command`, its output collected by
/// threads so that a full pipe can never block it.
pub struct Spawned {
    pub child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

/// Starts `cmd` with no input and its output collected by threads
/// (`expect` is the message when it cannot be started).
fn start(cmd: &mut std::process::Command, expect: &str) -> Spawned {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect(expect);
    let stdout = read_all_on_a_thread(child.stdout.take().unwrap());
    let stderr = read_all_on_a_thread(child.stderr.take().unwrap());
    Spawned {
        child,
        stdout,
        stderr,
    }
}

fn read_all_on_a_thread(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = pipe.read_to_end(&mut v);
        v
    })
}

/// Waits for `child` up to `timeout`; on timeout kills and reaps it and
/// returns `None`.
fn wait_or_kill(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts any command (a wrapper script, a tool under another user) like
/// `spawn`: no input, its output collected by threads.
pub fn spawn_std(cmd: &mut std::process::Command) -> Spawned {
    start(cmd, "spawn")
}

pub fn spawn(args: &[&str]) -> Spawned {
    start(
        std::process::Command::new(bin()).args(args),
        "spawn latscope",
    )
}

/// Whether process `pid` blocks `sig` (its main thread's mask, `SigBlk:` of
/// /proc/PID/status).
pub fn signal_blocked(pid: u32, sig: libc::c_int) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1u64 << (sig - 1)) != 0)
}

/// Whether process `pid` has ended (a zombie not reaped yet, or gone).
fn process_ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("State:"))
                .is_some_and(|state| state.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Sends `sig` to latscope process `pid` once it collects it. latscope
/// blocks the signals it collects first thing in `main` (and collects them
/// with `sigtimedwait`); one sent before, while the dynamic loader still
/// runs on a busy machine, would take its default action and kill it. So
/// the process says it is ready by its signal mask, and the test waits for
/// that (up to a minute, then fails), never for a fixed time. SIGKILL,
/// SIGSTOP and SIGCONT, which no process can collect, go at once.
pub fn signal_when_ready(pid: u32, sig: libc::c_int) {
    if ![libc::SIGKILL, libc::SIGSTOP, libc::SIGCONT].contains(&sig) {
        let deadline = Instant::now() + Duration::from_secs(60);
        // A child that already ended collects nothing: the signal is
        // then sent for nothing, as before this wait.
        while !signal_blocked(pid, sig) && !process_ended(pid) {
            assert!(
                Instant::now() < deadline,
                "process {pid} did not block signal {sig} within a minute (not latscope, or it ended?)"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // SAFETY: signalling the caller's own child by pid (not reaped yet).
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill failed: {}", std::io::Error::last_os_error());
}

impl Spawned {
    /// Sends `sig` once the child collects it (`signal_when_ready`).
    pub fn signal(&self, sig: libc::c_int) {
        signal_when_ready(self.child.id(), sig);
    }

    /// Waits up to `timeout`; on timeout the child is killed and the test
    /// fails. The output is text (empty if it is not UTF-8).
    pub fn wait(mut self, timeout: Duration) -> (ExitStatus, String, String) {
        let status = wait_or_kill(&mut self.child, timeout);
        let text = |h: JoinHandle<Vec<u8>>| {
            String::from_utf8(h.join().unwrap_or_default()).unwrap_or_default()
        };
        let out = text(self.stdout);
        let err = text(self.stderr);
        match status {
            Some(status) => (status, out, err),
            None => panic!(
                "latscope did not exit within {timeout:?}; killed\n--- stdout ---\n{}--- stderr ---\n{}",
                evidence("stdout", &out),
                evidence("stderr", &err)
            ),
        }
    }
}

/// The setpriv command that runs a program as `nobody` (uid/gid 65534), or
/// why that is not possible here.
pub fn nobody_runner() -> Result<std::process::Command, String> {
    if !euid_is_root() {
        return Err("not root: cannot switch to another user".to_string());
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("setpriv is not installed")?;
    let make = || {
        let mut c = std::process::Command::new(setpriv);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        c
    };
    // The binary and every directory above it must be reachable for nobody.
    let probe = make()
        .arg(bin())
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("setpriv failed to start: {e}"))?;
    if !probe.status.success() {
        return Err(format!(
            "user 65534 cannot run {} (a parent directory without o+x?): {}",
            bin().display(),
            String::from_utf8_lossy(&probe.stderr).trim()
        ));
    }
    Ok(make())
}

/// Runs `cmd` (built by `nobody_runner`) with a timeout.
pub fn run_std_with_timeout(mut cmd: std::process::Command, timeout: Duration) -> Output {
    let mut child = start(&mut cmd, "spawn");
    let status = wait_or_kill(&mut child.child, timeout)
        .unwrap_or_else(|| panic!("{cmd:?} did not finish within {timeout:?}; killed"));
    Output {
        status,
        stdout: child.stdout.join().unwrap_or_default(),
        stderr: child.stderr.join().unwrap_or_default(),
    }
}

/// A temporary directory with the given mode (tempfile creates 0700).
pub fn temp_dir_with_mode(mode: u32) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode))
        .expect("chmod temp dir");
    dir
}

/// The keys of a JSON object in document order (independent of how
/// serde_json's `Map` orders them).
pub fn top_level_keys(text: &str) -> Vec<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Keys)
        .unwrap_or_else(|e| panic!("not a JSON object ({e}):\n{text}"))
}

/// The property tests' settings: 512 cases, fast, and no regression files
/// written next to the sources.
pub fn proptest_config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: 512,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// The lines of the ownership registries in `dir` (`LATSCOPE_RUNTIME_DIR`)
/// as (kind, identity), of process `pid` only when given.
pub fn registry_entries(dir: &Path, pid: Option<u32>) -> Vec<(String, String)> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = pid.map(|p| format!("{p}."));
    let mut all = Vec::new();
    for e in listing.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        // A run's CPU note (`<pid>.<start>.cpus`) records no object.
        if name.ends_with(".tmp")
            || name.ends_with(".cpus")
            || prefix.as_ref().is_some_and(|p| !name.starts_with(p))
        {
            continue;
        }
        for line in std::fs::read_to_string(e.path())
            .unwrap_or_default()
            .lines()
        {
            let mut f = line.split('\t');
            if let (Some(kind), Some(id)) = (f.next(), f.next())
                && kind != "pidns"
            {
                all.push((kind.to_string(), id.to_string()));
            }
        }
    }
    all
}

/// Whether a registry object still exists: System V ids through
/// /proc/sysvipc, paths through the file system.
pub fn registry_object_exists(kind: &str, identity: &str) -> bool {
    let table = match kind {
        "sysv-sem" => "/proc/sysvipc/sem",
        "sysv-msq" => "/proc/sysvipc/msg",
        _ => return Path::new(identity).exists(),
    };
    std::fs::read_to_string(table)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| l.split_whitespace().nth(1) == Some(identity))
}

/// Whether kernel tracing can be used (root, tracefs mounted or mountable);
/// says why `what` is skipped when not.
pub fn tracefs_usable(what: &str) -> bool {
    if !euid_is_root() {
        latscope::testing::skip(what, "kernel tracing needs root");
        return false;
    }
    let instances = std::path::Path::new("/sys/kernel/tracing/instances");
    if !instances.exists() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    if !instances.exists() {
        latscope::testing::skip(what, "tracefs cannot be mounted here");
        return false;
    }
    true
}

/// A value clap refused (the options' values are read by their parsers
/// there): the message the user sees, clap's first line without its
/// `error: `. None for clap's other refusals (an unknown option...).
pub fn value_refusal(e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    let message = e.to_string();
    let first = message.lines().next().unwrap_or_default();
    Some(first.trim_start_matches("error: ").to_string())
}

// Kernel collection, shared by the spike tests (slow::spikes) and the
// tests that need the machine to themselves (tests/exclusive).

/// The CPU the live tests measure: the last this process may use (CPU 1
/// on a 2-CPU machine), never the only one the test process and the
/// machine's other work would have.
pub fn measured_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid output buffer.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size matches the buffer.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (0..libc::CPU_SETSIZE as usize)
        .rev()
        // SAFETY: reads a bit of the set.
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .unwrap_or(0)
}

/// Whether `--collector bpf` runs here; says why a test skips when not.
pub fn flight_recorder_usable(test: &str) -> bool {
    let mut cmd = latscope(20);
    cmd.args([
        "timer",
        "-p",
        "1000",
        "-T",
        "0.2",
        "--trace-spikes",
        "1000",
        "--collector",
        "bpf",
        "-q",
    ]);
    let out = run(cmd);
    if out.status.code() == Some(0) {
        return true;
    }
    latscope::testing::skip(
        test,
        &format!(
            "the BPF flight recorder cannot run here: {}",
            stderr_of(&out).trim()
        ),
    );
    false
}

/// Whether both collectors can run here (says why a test skips when not).
pub fn both_collectors_usable(test: &str) -> bool {
    !skip_without_realtime(test) && tracefs_usable(test) && flight_recorder_usable(test)
}

/// The kept spikes of a report, as evidence for a failure.
pub fn kept_spikes(report: &Value) -> String {
    evidence(
        "spikes",
        &serde_json::to_string_pretty(&report["tests"][0]["spikes"]["spikes"]).unwrap(),
    )
}

// Provocations by threads of the test process (slow::spikes, slow::hwlat_provoked).

/// Names the current thread `name`, pins it to `cpu` and gives it `policy`
/// at `priority`; its thread id.
pub fn become_thread(
    name: &str,
    cpu: usize,
    policy: libc::c_int,
    priority: i32,
) -> Result<i32, String> {
    let cname = std::ffi::CString::new(name).unwrap();
    // SAFETY: plain calls on the current thread with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, cname.as_ptr() as libc::c_ulong, 0, 0, 0);
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("cannot pin to CPU {cpu}"));
        }
    }
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sets this thread's own policy.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
    if rc != 0 {
        return Err(format!(
            "cannot take policy {policy} at {priority}: error {rc}"
        ));
    }
    // SAFETY: gettid has no preconditions.
    Ok(unsafe { libc::gettid() })
}

// BPF objects a process holds, and root without the BPF capabilities
// (slow::bpf, slow::hwlat_bpf).

/// Root without CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON: BPF is refused,
/// tracefs (which needs only root's file access) still works.
pub fn without_bpf_capabilities(args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args([
        "--bounding-set=-sys_admin,-bpf,-perfmon",
        "--inh-caps=-sys_admin,-bpf,-perfmon",
    ])
    .arg(bin())
    .args(args);
    cmd.output().expect("setpriv runs")
}

pub fn setpriv_usable(test: &str) -> bool {
    let ok = euid_is_root()
        && std::process::Command::new("setpriv")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        latscope::testing::skip(
            test,
            "needs root and setpriv (util-linux) to drop capabilities",
        );
    }
    ok
}

/// `prog_id`/`map_id` of every BPF object the process `pid` holds open.
pub fn bpf_ids_of(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = fds
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| {
                    let (key, value) = l.split_once(':')?;
                    matches!(key, "prog_id" | "map_id").then(|| format!("{key} {}", value.trim()))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Whether the kernel still has that program or map (`bpftool ... show id N`).
pub fn still_loaded(id: &str) -> bool {
    let (kind, number) = id.split_once(' ').unwrap();
    let object = if kind == "prog_id" { "prog" } else { "map" };
    std::process::Command::new("bpftool")
        .args([object, "show", "id", number])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether bpftool runs here; says why a test skips when not.
pub fn bpftool_usable(test: &str) -> bool {
    let ok = std::process::Command::new("bpftool")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        latscope::testing::skip(test, "bpftool (Debian's bpftool package) is not installed");
    }
    ok
}

/// The BPF objects process `pid` holds once it holds `programs` programs
/// (they load once its threads are set up: waits up to 10 s).
pub fn bpf_ids_once_loaded(pid: u32, programs: usize) -> Vec<String> {
    let mut held = Vec::new();
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        held = bpf_ids_of(pid);
        if held.iter().filter(|id| id.starts_with("prog_id")).count() >= programs {
            break;
        }
    }
    held
}

/// Of `held`, what the kernel still has once their process is gone (it
/// frees them after an RCU grace period: waits up to 5 s).
pub fn bpf_ids_left(held: &[String]) -> Vec<String> {
    let mut left = held.to_vec();
    for _ in 0..50 {
        left.retain(|id| still_loaded(id));
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    left
}

/// Threads that provoke interference at real-time priority (slow::hwlat_bpf,
/// slow::hwlat_provoked): each checks `stop` and its own deadline, and
/// blocks between its bursts; dropping this sets `stop` and joins them all,
/// so none outlives its test, even when latscope fails or the test panics.
pub struct Provokers<T> {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<JoinHandle<T>>,
}

impl<T> Provokers<T> {
    pub fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Provokers<T> {
        Provokers {
            stop,
            threads: Vec::new(),
        }
    }

    pub fn add(&mut self, thread: JoinHandle<T>) {
        self.threads.push(thread);
    }

    /// Stops and joins every thread; what each gave, in the order added (a
    /// thread that panicked panics here, once all are joined).
    pub fn finish(mut self) -> Vec<T> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let joined: Vec<std::thread::Result<T>> =
            self.threads.drain(..).map(JoinHandle::join).collect();
        joined
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    }
}

impl<T> Drop for Provokers<T> {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
