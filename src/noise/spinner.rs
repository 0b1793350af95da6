//! The spinning thread: pinned to its CPU, at the policy asked (SCHED_OTHER
//! by default), it reads CLOCK_MONOTONIC (the vDSO: no system call) as fast
//! as it can. A gap between two consecutive reads longer than the threshold
//! means the CPU was taken from the thread: one interruption, recorded with
//! its length (`LatencyRecorder`, per-second windows, and with
//! `--trace-spikes` a candidate for the trace reader).
//!
//! The loop allocates nothing, takes no lock and makes no system call but
//! the clock read. Everything else (publishing the live figures, the stop
//! flag with a relaxed load, the end of the run, the duty cycle) is looked
//! at once every `CHECK_NS` of clock time, so that a spinner notices a stop
//! within a tenth of a millisecond of its own time, and the per-iteration
//! cost is one clock read, one subtraction and two comparisons.

use super::{CpuShared, NoisePlan};
use crate::rt::clock::{monotonic_ns, try_sleep_until_ns};
use crate::rt::sched;
use crate::stats::LatencyRecorder;
use crate::stats::samples::ring_of;
use crate::stats::window::WindowWriter;
use std::sync::atomic::Ordering;

/// How often (clock time) the loop looks beyond the next clock read.
const CHECK_NS: u64 = 100_000;
/// Longest single sleep of the duty cycle's off time and of the wait for
/// the start: the stop flag is looked at in between.
const SLEEP_SLICE_NS: u64 = 10_000_000;

/// What the spinner hands back when it ends.
pub struct SpinEnd {
    pub recorder: LatencyRecorder,
    pub noise_ns: u64,
    pub measured_ns: u64,
    pub loops: u64,
    pub above_limit: u64,
    /// Monotonic time of the first and the last clock read (0 if none).
    pub from_ns: u64,
    pub until_ns: u64,
}

impl SpinEnd {
    fn not_started(recorder: LatencyRecorder) -> SpinEnd {
        SpinEnd {
            recorder,
            noise_ns: 0,
            measured_ns: 0,
            loops: 0,
            above_limit: 0,
            from_ns: 0,
            until_ns: 0,
        }
    }
}

/// Sleeps until `deadline_ns` in slices, returning early when `plan.stop`
/// is set. Returns whether the run goes on.
fn sleep_until_or_stop(plan: &NoisePlan, deadline_ns: u64) -> bool {
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= deadline_ns {
            return true;
        }
        let _ = try_sleep_until_ns(deadline_ns.min(now + SLEEP_SLICE_NS));
    }
}

/// Runs the spinner of CPU `plan.cpus[index]` until the run ends.
pub fn run(
    plan: &NoisePlan,
    index: usize,
    shared: &CpuShared,
    recorder: LatencyRecorder,
) -> SpinEnd {
    let cpu = plan.cpus[index];
    let set_up = sched::pin_current_thread(cpu)
        .and_then(|()| sched::set_current_thread_policy(plan.policy, plan.priority));
    if let Err(e) = set_up {
        shared.fail(format!("the spinning thread on CPU {cpu}: {e}"));
        return SpinEnd::not_started(recorder);
    }
    shared.tid.store(sched::current_tid(), Ordering::Relaxed);
    shared.ready.store(true, Ordering::Release);
    // The controller sets the start once every spinner is ready (and the
    // trace runs): until then the spinner sleeps, so that a slow set-up of
    // one does not count as noise on the others.
    let start = loop {
        let start = shared.start_ns.load(Ordering::Acquire);
        if start != 0 {
            break start;
        }
        if !sleep_until_or_stop(plan, monotonic_ns() + 1_000_000) {
            return SpinEnd::not_started(recorder);
        }
    };
    if !sleep_until_or_stop(plan, start) {
        return SpinEnd::not_started(recorder);
    }
    spin(plan, cpu, shared, recorder, start)
}

/// The measuring loop (see the module's doc).
fn spin(
    plan: &NoisePlan,
    cpu: usize,
    shared: &CpuShared,
    mut recorder: LatencyRecorder,
    start: u64,
) -> SpinEnd {
    let threshold = plan.threshold_ns;
    let limit = plan.limit_ns.unwrap_or(u64::MAX);
    let spike = plan.spike_threshold_ns.unwrap_or(u64::MAX);
    let end_ns = plan
        .duration_ns
        .map_or(u64::MAX, |d| start.saturating_add(d));
    let duty = plan.duty;
    let mut window = WindowWriter::new(&shared.windows, start).with_samples(
        (plan.cpus.iter().position(|&c| c == cpu)).and_then(|i| ring_of(&plan.samples, i)),
    );
    let mut noise_ns = 0u64;
    let mut measured_ns = 0u64;
    let mut above_limit = 0u64;
    let mut loops = 0u64;
    let from_ns = monotonic_ns();
    let mut segment_from = from_ns;
    let mut period_from = from_ns;
    let mut run_until = if duty.sleeps() {
        from_ns.saturating_add(duty.runtime_ns)
    } else {
        u64::MAX
    };
    let mut prev = from_ns;
    let mut next_check = from_ns + CHECK_NS;
    loop {
        let now = monotonic_ns();
        loops += 1;
        let gap = now - prev;
        prev = now;
        if gap > threshold {
            recorder.record(gap as i64);
            window.record(now, gap as i64);
            noise_ns += gap;
            above_limit += u64::from(gap > limit);
            if gap >= spike {
                shared.spikes.push(crate::spikes::Candidate {
                    cpu: cpu as u32,
                    expected_ns: now - gap,
                    actual_ns: now,
                });
            }
        }
        if now < next_check {
            continue;
        }
        // About every CHECK_NS: the live figures, the end, the duty cycle.
        let spun = measured_ns + (now - segment_from);
        shared
            .interruptions
            .store(recorder.count(), Ordering::Relaxed);
        shared.noise_ns.store(noise_ns, Ordering::Relaxed);
        shared
            .max_ns
            .store(recorder.max().unwrap_or(0).max(0) as u64, Ordering::Relaxed);
        shared.measured_ns.store(spun, Ordering::Relaxed);
        if now >= end_ns || plan.stop.load(Ordering::Relaxed) {
            measured_ns = spun;
            break;
        }
        if now >= run_until {
            // The off time of the duty cycle: not measured, not noise.
            measured_ns = spun;
            let next = (period_from + duty.period_ns).max(now);
            if !sleep_until_or_stop(plan, next.min(end_ns)) {
                break;
            }
            period_from = next;
            run_until = next.saturating_add(duty.runtime_ns);
            segment_from = monotonic_ns();
            prev = segment_from;
        }
        next_check = prev + CHECK_NS;
    }
    window.flush();
    SpinEnd {
        recorder,
        noise_ns,
        measured_ns,
        loops,
        above_limit,
        from_ns,
        until_ns: prev,
    }
}
