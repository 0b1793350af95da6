//! Stress: many short real-time runs, stopped by SIGINT or SIGTERM at random
//! moments (during setup, at the first samples, in the middle), and many
//! complete short runs. Each must end with exit code 0 within its time limit,
//! never hang (it is killed with SIGKILL and the test fails), never panic.
//!
//! The runs of one test follow each other; the tests take turns through a
//! lock so that no more than one pair set at SCHED_FIFO 50 competes for the
//! two CPUs at a time.

use crate::common::*;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A small xorshift generator; the seed is printed so a failure can be
/// replayed with LATSCOPE_STRESS_SEED.
struct Rng(u64);

impl Rng {
    fn new(test: &str) -> Rng {
        let seed = std::env::var("LATSCOPE_STRESS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos() as u64
                    | 1
            });
        eprintln!("{test}: LATSCOPE_STRESS_SEED={seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn check_no_panic(what: &str, status: std::process::ExitStatus, stdout: &str, stderr: &str) {
    let all = format!("{what}: {}", dump(status, stdout, stderr));
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{all}"
    );
    assert_eq!(status.code(), Some(0), "{all}");
    assert!(
        stdout.lines().any(|l| l.starts_with("mq latency")),
        "no summary printed\n{all}"
    );
}

/// `runs` runs of an endless `latscope mq`, each stopped with `sig` after a
/// random 5..300 ms; each must exit 0 within 5 s of the signal.
fn interrupt_many(test: &str, sig: libc::c_int, runs: usize) {
    if skip_without_realtime(test) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::new(test);
    let mut argv = args("mq -t 2 -p 50 -i 100 -T 1 -q");
    argv.extend_from_slice(mlock_args());
    let mut ended_by_signal = 0;
    for run in 0..runs {
        let delay = Duration::from_millis(5 + rng.below(296));
        let child = spawn(&argv);
        std::thread::sleep(delay);
        child.signal(sig);
        let signalled = Instant::now();
        // Spawned::wait kills the child with SIGKILL and fails on timeout.
        let (status, stdout, stderr) = child.wait(Duration::from_secs(5));
        let what = format!("{test}: run {run}, signal {sig} after {delay:?}");
        check_no_panic(&what, status, &stdout, &stderr);
        assert!(
            stdout.contains("ended: interrupted"),
            "{what}: the end is not named 'interrupted'\n{stdout}"
        );
        assert!(
            signalled.elapsed() < Duration::from_secs(5),
            "{what}: took {:?} to stop",
            signalled.elapsed()
        );
        ended_by_signal += 1;
    }
    assert_eq!(ended_by_signal, runs);
}

#[test]
fn twenty_runs_interrupted_by_sigint_at_random_moments() {
    interrupt_many(
        "twenty_runs_interrupted_by_sigint_at_random_moments",
        libc::SIGINT,
        20,
    );
}

#[test]
fn ten_runs_terminated_by_sigterm_at_random_moments() {
    interrupt_many(
        "ten_runs_terminated_by_sigterm_at_random_moments",
        libc::SIGTERM,
        10,
    );
}

/// Ten complete runs in a row: every pair does all its 300 loops, within 10 s.
#[test]
fn ten_short_complete_runs() {
    let test = "ten_short_complete_runs";
    if skip_without_realtime(test) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    for run in 0..10 {
        let file = dir.path().join(format!("run{run}.json"));
        let mut argv = args("mq -t 2 -p 50 -i 50 -l 300 -q --json");
        argv.push(file.to_str().unwrap());
        argv.extend_from_slice(mlock_args());
        let started = Instant::now();
        let (status, stdout, stderr) = spawn(&argv).wait(Duration::from_secs(10));
        let what = format!("{test}: run {run} ({:?})", started.elapsed());
        check_no_panic(&what, status, &stdout, &stderr);
        assert!(
            stdout.contains("ended: all loops done"),
            "{what}: not all loops done\n{stdout}"
        );
        let report = read_json(&file);
        check_report_header(&report);
        let series = series(&report);
        assert_eq!(series.len(), 2, "{what}");
        for (i, s) in series.iter().enumerate() {
            assert_eq!(
                check_summary(s, &format!("{what}: series[{i}]"), true),
                300,
                "{what}: pair {i} did not run all its loops"
            );
        }
    }
}
