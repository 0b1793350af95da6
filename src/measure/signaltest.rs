//! signaltest's run (`latscope signaltest`, the `signaltest` name): the
//! checks it makes before starting (real-time privileges, `-m`, the main
//! thread on the `-a` CPUs), the ring of threads passing SIGUSR1
//! (ipc::ring, on the signal transport's channels), its running display
//! or `-v`'s values every 10 ms, the end (`-l` done by thread 0, `-D`, `-b`,
//! SIGINT/SIGTERM/SIGHUP), the final `T:` lines and `--json`. Everything
//! is printed here in signaltest's words (report::classic_signaltest); the
//! exit code is returned.

use crate::ipc::ring::{Ring, RingFigures, RingPlan};
use crate::pipeline::{ActionRunner, CommandError, RunTimes, write_rt_tests_json};
use crate::report::classic_signaltest::{self as classic, SignalThread};
use crate::rt::stdio::print;
use crate::settings::signaltest::SignalSettings;
use crate::stats::crossings::{BreakCrossings, CrossingSeries};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// How often signaltest's main loop redraws (its `usleep(10000)`).
const REDRAW: Duration = Duration::from_millis(10);
/// How long signaltest lets the other threads end their last lap after
/// thread 0's (its `usleep(50000)`).
const LAST_LAPS: Duration = Duration::from_millis(50);

/// What signaltest says when it may not use real-time priorities (rt-tests'
/// `check_privs`, made whatever `-p` is), before exiting with 1.
const NO_PRIVILEGES: &str =
    "Unable to change scheduling policy!\neither run as root or join realtime group\n";

/// The run, as signaltest does it: its lines while it runs and at the end
/// are printed; the exit code is returned.
pub fn run(s: &SignalSettings) -> Result<i32, CommandError> {
    for line in &s.early_lines {
        print(&format!("{line}\n"));
    }
    for line in &s.warnings {
        eprintln!("{line}");
    }
    if !crate::rt::sched::can_use_realtime() {
        eprint!("{NO_PRIVILEGES}");
        return Ok(1);
    }
    if s.mlockall
        && let Err(e) = nix::sys::mman::mlockall(
            nix::sys::mman::MlockAllFlags::MCL_CURRENT | nix::sys::mman::MlockAllFlags::MCL_FUTURE,
        )
    {
        // signaltest's perror, and its exit(-1).
        eprintln!("mlockall: {}", e.desc());
        return Ok(255);
    }
    if let Some(cpus) = &s.listed_affinity {
        if let Err(e) = crate::rt::sched::try_pin_current_thread_to(cpus) {
            eprintln!("WARN: Couldn't setaffinity in main thread: {}", e.desc());
        }
        if s.verbose {
            for (i, &cpu) in s.cpus.iter().enumerate() {
                print(&classic::thread_cpu_line(i, cpu));
            }
        }
    }
    let start_time = crate::units::rfc2822_local(SystemTime::now());
    let breaks = break_crossings(s);
    // Outside the pipeline (signaltest's output and exit codes are its
    // own): the actions' runner is started and ended here.
    let actions =
        ActionRunner::start(&s.actions, &s.cpus, breaks.clone()).map_err(CommandError::Runtime)?;
    let plan = RingPlan {
        cpus: s.cpus.clone(),
        priority: s.priority,
        loops: s.loops,
        break_us: s.break_us,
        keep_values: s.verbose,
        breaks,
    };
    let ring = Ring::start(plan, crate::ipc::signal::thread_channel)
        .map_err(|e| CommandError::Runtime(format!("signaltest: {e}")))?;
    for (i, &cpu) in s.cpus.iter().enumerate() {
        if ring.live(i).unpinned.load(Ordering::Relaxed) {
            eprintln!("WARN: Could not set CPU affinity to CPU #{cpu}");
        }
    }
    let loops_done = watch(&ring, s);
    if loops_done {
        let start = Instant::now();
        while !ring.all_finished() && start.elapsed() < LAST_LAPS {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let broke = ring.broke();
    let figures = ring
        .join()
        .map_err(|e| CommandError::Runtime(format!("signaltest: {e}")))?;
    let threads: Vec<SignalThread> = figures.iter().map(|f| thread_of(f, s.priority)).collect();
    if let Some(actions) = actions {
        // The break's actions and the end's, before the final lines (their
        // records have no report to go to; a failure was said on stderr).
        let max_ns = figures.iter().map(|f| f.max.saturating_mul(1000)).max();
        actions.finish_with(0, max_ns);
    }
    print(&final_lines(&threads, broke));
    if let Some(path) = &s.json {
        let end_time = crate::units::rfc2822_local(SystemTime::now());
        let run = RunTimes {
            cmdline: &s.cmdline,
            start_time: &start_time,
            end_time: &end_time,
        };
        if let Err(f) = write_rt_tests_json(path, &run, &classic::json_body(&threads)) {
            return Ok(f.report());
        }
    }
    Ok(0)
}

/// `-b` as the trigger of `--on-threshold`: thread 0's crossings (only
/// thread 0 checks `-b`, as in signaltest); None when it is not the trigger.
fn break_crossings(s: &SignalSettings) -> Option<Arc<BreakCrossings>> {
    s.actions.on_break().then(|| {
        let series = vec![CrossingSeries {
            label: "thread 0".to_string(),
            cpu: s.cpus.first().copied(),
        }];
        Arc::new(BreakCrossings::new(
            "signaltest",
            series,
            s.actions.break_keeps_running(),
        ))
    })
}

/// signaltest's main loop: every 10 ms its display (the load average and
/// thread 0's line) or `-v`'s new values of thread 0, until thread 0 has
/// done `-l` laps (true), or `-D` has passed, a stop signal came or a
/// thread asked for the end (`-b`, a failure).
fn watch(ring: &Ring, s: &SignalSettings) -> bool {
    let deadline = s.duration.map(|d| Instant::now() + d);
    let display = !s.verbose && !s.quiet;
    let first = ring.live(0);
    let mut shown = 0u64;
    loop {
        if display {
            print(&classic::loadavg_head(&loadavg()));
        }
        let cycles = first.cycles.load(Ordering::Acquire);
        if s.verbose {
            let lines: String = (shown..cycles)
                .map(|k| classic::verbose_line(0, k, first.value(k)))
                .collect();
            print(&lines);
            shown = cycles;
        } else if !s.quiet {
            print(&classic::t_line(
                0,
                &thread_of(&first.figures(s.cpus[0]), s.priority),
            ));
        }
        let loops_done = s.loops != 0 && cycles >= s.loops;
        let step = deadline.map_or(REDRAW, |d| {
            d.saturating_duration_since(Instant::now()).min(REDRAW)
        });
        let signalled = crate::rt::signals::wait_for_stop_signal(step).is_some();
        let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
        if loops_done || signalled || timed_out || ring.stop_requested() {
            return loops_done;
        }
        if display {
            print(classic::CURSOR_UP);
        }
    }
}

/// /proc/loadavg without its newline, as signaltest shows it.
fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

/// A thread's figures in signaltest's terms.
fn thread_of(f: &RingFigures, priority: i32) -> SignalThread {
    SignalThread {
        tid: f.tid,
        priority,
        cycles: f.cycles,
        min: f.min,
        act: f.act,
        sum: f.sum,
        max: f.max,
        cpu: f.cpu,
    }
}

/// The lines after the run: the break line when thread 0 crossed `-b`,
/// then every thread's `T:` line (with or without `-q` and `-v`).
fn final_lines(threads: &[SignalThread], broke: bool) -> String {
    let mut text = String::new();
    for (i, t) in threads.iter().enumerate() {
        if i == 0 && broke {
            text.push_str(&classic::exceeded_line(0));
        }
        text.push_str(&classic::t_line(i, t));
    }
    text
}
