//! cyclictest's measuring threads, with cyclictest's semantics rather than
//! Xenomai's: no warm-up, each thread its own interval and priority, `-l`
//! loops per thread, latency truncated to whole us unless ns are asked for,
//! `clock_nanosleep(TIMER_ABSTIME)` on CLOCK_MONOTONIC, missed periods
//! skipped as cyclictest does (next expiry = last expiry + interval until it
//! is ahead of the clock).

use crate::rt::clock::{monotonic_ns, try_sleep_until_ns};
use crate::rt::sched::{self, Policy};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One thread's plan.
#[derive(Debug, Clone)]
pub struct CyclicThreadPlan {
    pub interval_ns: u64,
    pub priority: i32,
    pub cpu: Option<usize>,
    /// 0 = until stopped.
    pub loops: u64,
    /// Histogram cells (0 = none), in the figure's unit.
    pub hist_cells: usize,
    pub nsecs: bool,
}

/// One thread's figures, in us (or ns).
#[derive(Debug, Clone, Default)]
pub struct CyclicFigures {
    pub tid: i32,
    pub cycles: u64,
    pub min: i64,
    pub act: i64,
    pub sum: i64,
    pub max: i64,
    pub hist: Vec<u64>,
    pub overflows: u64,
    pub outliers: Vec<u64>,
}

/// Runs one measuring thread until its loops are done or `stop` is set.
/// `done` is set when the thread ends (so the controller stops waiting).
pub fn run_thread(
    plan: &CyclicThreadPlan,
    stop: &AtomicBool,
    done: &AtomicBool,
) -> Result<CyclicFigures, String> {
    let result = sample(plan, stop);
    done.store(true, Ordering::Release);
    result
}

fn sample(plan: &CyclicThreadPlan, stop: &AtomicBool) -> Result<CyclicFigures, String> {
    if let Some(cpu) = plan.cpu {
        sched::pin_current_thread(cpu)?;
    }
    if plan.priority > 0 {
        sched::set_current_thread_policy(Policy::Fifo, plan.priority)?;
    }
    sched::minimal_timer_slack();
    let mut f = CyclicFigures {
        // SAFETY: gettid has no preconditions.
        tid: unsafe { libc::gettid() },
        min: i64::MAX,
        hist: vec![0; plan.hist_cells],
        // cyclictest keeps one overflow cycle number per histogram cell.
        outliers: Vec::with_capacity(plan.hist_cells),
        ..CyclicFigures::default()
    };
    let mut next = monotonic_ns() + plan.interval_ns;
    while !stop.load(Ordering::Relaxed) {
        if let Err(errno) = try_sleep_until_ns(next) {
            if errno == libc::EINTR {
                continue;
            }
            return Err(format!(
                "clock_nanosleep failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ));
        }
        let now = monotonic_ns();
        let diff_ns = now as i64 - next as i64;
        let diff = if plan.nsecs { diff_ns } else { diff_ns / 1000 };
        if diff < f.min {
            f.min = diff;
        }
        if diff > f.max {
            f.max = diff;
        }
        f.act = diff;
        f.sum += diff;
        if plan.hist_cells > 0 {
            if diff >= plan.hist_cells as i64 || diff < 0 {
                f.overflows += 1;
                if f.outliers.len() < plan.hist_cells {
                    f.outliers.push(f.cycles);
                }
            } else {
                f.hist[diff as usize] += 1;
            }
        }
        f.cycles += 1;
        next += plan.interval_ns;
        while next < now {
            next += plan.interval_ns;
        }
        if plan.loops > 0 && f.cycles >= plan.loops {
            break;
        }
    }
    if f.cycles == 0 {
        f.min = 0;
    }
    Ok(f)
}

/// Starts every thread, waits until one is done, `stop` is set, or the
/// deadline passes (then sets `stop`), and joins them. `wait` is called
/// between checks and returns true when a stop signal came.
pub fn run_all(
    plans: &[CyclicThreadPlan],
    deadline_ns: Option<u64>,
    mut wait: impl FnMut() -> bool,
) -> Vec<Result<CyclicFigures, String>> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let mut dones = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let plan = plan.clone();
        let stop_t = Arc::clone(&stop);
        let done = Arc::new(AtomicBool::new(false));
        let done_t = Arc::clone(&done);
        let spawned = std::thread::Builder::new()
            .name(format!("cyclic{i}"))
            .stack_size(256 * 1024)
            .spawn(move || run_thread(&plan, &stop_t, &done_t));
        match spawned {
            Ok(h) => {
                handles.push(Some(h));
                dones.push(done);
            }
            Err(e) => {
                // Stop those already running; report the failure in place.
                stop.store(true, Ordering::Relaxed);
                handles.push(None);
                dones.push(Arc::new(AtomicBool::new(true)));
                let _ = e;
            }
        }
    }
    // As cyclictest's main loop: once any thread has ended (its `-l` loops
    // done), all are stopped at the next poll; so with `-l` a thread with a
    // longer interval ends with fewer cycles, exactly as in cyclictest.
    loop {
        let any_done = dones.iter().any(|d| d.load(Ordering::Acquire));
        if any_done || wait() || deadline_ns.is_some_and(|d| monotonic_ns() >= d) {
            stop.store(true, Ordering::Relaxed);
            break;
        }
    }
    handles
        .into_iter()
        .map(|h| match h {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err("a measuring thread panicked".to_string())),
            None => Err("could not start a measuring thread".to_string()),
        })
        .collect()
}
