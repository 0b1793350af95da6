//! rt-migrate-test's run (`latscope rt-migrate-test`, the
//! `rt-migrate-test` name): N SCHED_FIFO tasks at rising priorities are
//! released together every round (the highest one moved to the next CPU
//! each round), each busy-loops for its run time, and the main thread,
//! above them all, sleeps; with `-c` a round where a lower-priority task
//! started more than `-m` after a higher one (and it was not only
//! preempted) fails the run (exit 255). A stop signal or `-D` ends the run
//! after the round (exit 1, or 255 if the check failed). Times are
//! CLOCK_MONOTONIC, where rt-migrate-test reads the wall clock.

use crate::pipeline::{CommandError, RunTimes, write_rt_tests_json_returning};
use crate::report::classic_rt_migrate::{self as classic, Round, Task};
use crate::rt::barrier::PthreadBarrier;
use crate::rt::clock::monotonic_ns;
use crate::settings::rt_migrate::MigrateSettings;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

/// What the tasks and the main thread share.
struct Shared {
    tasks: usize,
    loops: usize,
    run_ns: u64,
    /// pthread barriers, as rt-migrate-test's: std's would make a woken
    /// task wait for the waker's mutex (rt::barrier), delaying its start.
    start: PthreadBarrier,
    end: PthreadBarrier,
    done: AtomicBool,
    /// The round being run, and its release time.
    round: AtomicU64,
    now: AtomicU64,
    /// Per round and task: start, end (ns after the release) and loops.
    cells: Vec<[AtomicU64; 3]>,
    tids: Vec<AtomicI32>,
}

impl Shared {
    fn cell(&self, round: usize, task: usize) -> &[AtomicU64; 3] {
        &self.cells[round * self.tasks + task]
    }

    fn round(&self, round: usize) -> Vec<Round> {
        (0..self.tasks)
            .map(|t| {
                let c = self.cell(round, t);
                Round {
                    start_ns: c[0].load(Ordering::Acquire),
                    end_ns: c[1].load(Ordering::Acquire),
                    loops: c[2].load(Ordering::Acquire),
                }
            })
            .collect()
    }
}

/// The run; the exit code.
pub fn run(s: &MigrateSettings) -> Result<i32, CommandError> {
    let shared = Arc::new(Shared {
        tasks: s.tasks,
        loops: s.loops,
        run_ns: s.run.as_nanos() as u64,
        start: barrier(s.tasks + 1)?,
        end: barrier(s.tasks + 1)?,
        done: AtomicBool::new(false),
        round: AtomicU64::new(0),
        now: AtomicU64::new(0),
        cells: (0..s.loops * s.tasks).map(|_| Default::default()).collect(),
        tids: (0..s.tasks).map(|_| AtomicI32::new(0)).collect(),
    });
    let allowed = crate::rt::sched::allowed_cpus();
    let mut threads = Vec::new();
    for id in 0..s.tasks {
        let (sh, prio, cpus) = (shared.clone(), s.prio_of(id), allowed.clone());
        let t = std::thread::Builder::new()
            .name(format!("migrate{id}"))
            .stack_size(64 * 1024)
            .spawn(move || task(&sh, id, prio, &cpus))
            .map_err(|e| CommandError::Runtime(format!("rt-migrate-test: starting a task: {e}")))?;
        threads.push(t);
    }
    let main_prio = s.tasks as i32 + s.prio;
    if crate::rt::sched::try_set_current_thread_policy(crate::rt::sched::Policy::Fifo, main_prio)
        .is_err()
    {
        eprintln!("Warning, can't set priority of main thread!");
    }
    let started = SystemTime::now();
    let (rounds, stopped, failed) = rounds(s, &shared);
    eprintln!();
    // The tasks' last release: they see `done` after it.
    shared.round.store(u64::MAX, Ordering::Release);
    shared.start.wait();
    shared.done.store(true, Ordering::Release);
    shared.end.wait();
    for t in threads {
        let _ = t.join();
    }
    let table: Vec<Vec<Round>> = (0..rounds).map(|r| shared.round(r)).collect();
    let tasks: Vec<Task> = (0..s.tasks)
        .map(|id| Task {
            prio: s.prio_of(id),
            tid: shared.tids[id].load(Ordering::Acquire),
        })
        .collect();
    let check = s.check.then_some(!failed);
    crate::rt::stdio::print(&classic::results(
        &table,
        &tasks,
        std::process::id() as i32,
        check,
    ));
    if let Some(path) = &s.json {
        let start_time = crate::units::rfc2822_local(started);
        let end_time = crate::units::rfc2822_local(SystemTime::now());
        let run = RunTimes {
            cmdline: &s.cmdline,
            start_time: &start_time,
            end_time: &end_time,
        };
        let body = classic::json_body(&table, &tasks);
        if let Err(f) = write_rt_tests_json_returning(path, &run, i32::from(failed), &body) {
            eprint!("{}", f.message);
            return Ok(f.code);
        }
    }
    Ok(match (failed, stopped) {
        (true, _) => 255,
        (false, true) => 1,
        (false, false) => 0,
    })
}

fn barrier(count: usize) -> Result<PthreadBarrier, CommandError> {
    PthreadBarrier::new(count).map_err(|e| CommandError::Runtime(format!("rt-migrate-test: {e}")))
}

/// The rounds, as rt-migrate-test's main loop runs them: (rounds done,
/// stopped by a signal or `-D`, the check failed).
fn rounds(s: &MigrateSettings, shared: &Shared) -> (usize, bool, bool) {
    let deadline = s.duration.map(|d| Instant::now() + d);
    let mut stopped = false;
    let sleep = |stopped: &mut bool| {
        *stopped |= crate::rt::signals::wait_for_stop_signal(s.sleep).is_some();
        *stopped |= deadline.is_some_and(|d| Instant::now() >= d);
    };
    if !s.quiet {
        eprint!("{}", classic::progress_bar(0));
    }
    for round in 0..s.loops {
        sleep(&mut stopped);
        shared.round.store(round as u64, Ordering::Release);
        shared.now.store(monotonic_ns(), Ordering::Release);
        shared.start.wait();
        sleep(&mut stopped);
        if !s.quiet {
            eprint!("{}", classic::progress_bar(round * 100 / s.loops));
        }
        shared.end.wait();
        let failed = s.check && late_start(&shared.round(round), s.max_err_ns);
        if stopped || failed {
            return (round + 1, stopped, failed);
        }
    }
    (s.loops, stopped, false)
}

/// rt-migrate-test's `check_times`: a task (in rising priority) that
/// started more than `max_err` after the one below it, unless it did more
/// loops, started before that one ended and did not end more than `max_err`
/// after it (it was only preempted).
pub fn late_start(round: &[Round], max_err: u64) -> bool {
    round.windows(2).any(|w| {
        let (last, this) = (w[0], w[1]);
        last.start_ns < this.start_ns
            && this.start_ns - last.start_ns > max_err
            && (this.loops < last.loops
                || this.start_ns > last.end_ns
                || (this.end_ns > last.end_ns && this.end_ns - last.end_ns > max_err))
    })
}

/// One task: its priority (task 0 says when it cannot have it), then a
/// busy loop of `run_ns` per round, the highest task on the next CPU each
/// round.
fn task(shared: &Shared, id: usize, prio: i32, cpus: &[usize]) {
    shared.tids[id].store(crate::rt::sched::current_tid(), Ordering::Release);
    let fifo = crate::rt::sched::Policy::Fifo;
    if crate::rt::sched::try_set_current_thread_policy(fifo, prio).is_err() && id == 0 {
        eprintln!("Warning, can't set priorities");
    }
    let highest = id + 1 == shared.tasks;
    let mut next_cpu = 0;
    while !shared.done.load(Ordering::Acquire) {
        if highest && !cpus.is_empty() {
            let _ = crate::rt::sched::try_pin_current_thread(cpus[next_cpu % cpus.len()]);
            next_cpu += 1;
        }
        shared.start.wait();
        let round = shared.round.load(Ordering::Acquire) as usize;
        let start = monotonic_ns();
        let mut loops = 0u64;
        let mut at = start;
        while at.saturating_sub(start) < shared.run_ns {
            loops += 1;
            at = monotonic_ns();
        }
        if round < shared.loops {
            let now = shared.now.load(Ordering::Acquire);
            let c = shared.cell(round, id);
            c[0].store(start.saturating_sub(now), Ordering::Release);
            c[1].store(monotonic_ns().saturating_sub(now), Ordering::Release);
            c[2].store(loops, Ordering::Release);
        }
        shared.end.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start_ns: u64, end_ns: u64, loops: u64) -> Round {
        Round {
            start_ns,
            end_ns,
            loops,
        }
    }

    #[test]
    fn late_start_is_rt_migrate_tests_check() {
        let ms = 1_000_000;
        // In order, within max_err: passes.
        assert!(!late_start(
            &[r(50_000, 20 * ms, 9), r(60_000, 20 * ms, 9)],
            ms
        ));
        // The higher task started 20 ms late, after the lower one ended: fails.
        assert!(late_start(
            &[r(40_000, 20 * ms, 9), r(20 * ms + 70_000, 40 * ms, 9)],
            ms
        ));
        // Late but preempted only (more loops, started before the other
        // ended, ended within max_err of it): passes.
        assert!(!late_start(
            &[r(40_000, 20 * ms, 9), r(3 * ms, 20 * ms + 500_000, 10)],
            ms
        ));
        // Fewer loops than the one below: fails.
        assert!(late_start(
            &[r(40_000, 20 * ms, 9), r(3 * ms, 20 * ms, 8)],
            ms
        ));
    }
}
