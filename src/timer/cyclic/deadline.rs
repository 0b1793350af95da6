//! cyclicdeadline's measuring thread (`CyclicWake::DeadlineYield`): a
//! SCHED_DEADLINE task that gives up the rest of its runtime every period
//! with `sched_yield`, so that the kernel wakes it at the start of its next
//! period; the sample is how late it runs after the period's start.
//!
//! rt-tests' semantics, kept so that the figures compare: times are whole
//! microseconds of CLOCK_MONOTONIC_RAW; the first period starts when the
//! thread first runs after its first yield (that first sample is ~0 and is
//! counted); every next period starts one deadline later, and is not moved
//! on when a wake-up missed whole periods (the samples after it then carry
//! the periods missed); a wake-up before the period's start restarts the
//! timeline there (sample 0); the minimum treats 0 as "none yet" (a sample
//! of 0 is replaced by the next one). The loop blocks every period: the
//! kernel throttles a deadline task that yields until its next period, so
//! it cannot starve the CPU.

use super::thread::break_run;
use super::{CyclicFigures, CyclicOptions, CyclicShared, CyclicThreadPlan};
use crate::rt::clock::read_clock;
use crate::rt::sched;
use crate::rt::tracefs::BreakTrace;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// The thread's whole life: the reservation, the first yield, the loop.
pub(super) fn sample(
    index: usize,
    plan: &CyclicThreadPlan,
    opts: &CyclicOptions,
    shared: &CyclicShared,
    trace: Option<&Mutex<BreakTrace>>,
) -> Result<CyclicFigures, String> {
    let live = &shared.threads[index];
    let tid = sched::current_tid();
    live.tid.store(tid, Ordering::Relaxed);
    live.min.store(0, Ordering::Relaxed);
    let reservation = plan
        .reservation
        .ok_or("a deadline thread needs its reservation")?;
    sched::set_current_thread_yielding_deadline(reservation)?;
    let deadline_us = reservation.deadline_ns / 1000;
    let now_us = || read_clock(opts.clock) / 1000;
    let mut f = CyclicFigures {
        tid,
        ..CyclicFigures::default()
    };
    let stop_at = opts
        .duration_ns
        .map(|d| read_clock(opts.clock).saturating_add(d));
    yield_period();
    let mut period = now_us();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = now_us();
        if now < period {
            period = now;
        }
        let diff = (now - period) as i64;
        if diff > f.max {
            f.max = diff;
            live.max.store(diff, Ordering::Relaxed);
            shared.max_epoch.fetch_add(1, Ordering::Relaxed);
        }
        if f.min == 0 || diff < f.min {
            f.min = diff;
            live.min.store(diff, Ordering::Relaxed);
        }
        f.act = diff;
        live.act.store(diff, Ordering::Relaxed);
        f.sum += diff;
        live.sum.store(f.sum, Ordering::Relaxed);
        f.cycles += 1;
        live.cycles.store(f.cycles, Ordering::Release);
        if let Some(limit) = opts.break_limit
            && f.max > limit
        {
            break_run(shared, tid, f.max, limit, trace);
            break;
        }
        if stop_at.is_some_and(|s| now * 1000 >= s) {
            shared.stop.store(true, Ordering::Relaxed);
            break;
        }
        period += deadline_us;
        yield_period();
    }
    Ok(f)
}

/// Gives up the rest of this period's runtime: a deadline task sleeps until
/// its next period starts.
fn yield_period() {
    // SAFETY: sched_yield has no arguments and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}
