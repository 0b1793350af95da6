//! The spinning thread: pinned to its CPU, at the policy asked (SCHED_OTHER
//! by default), it reads a counter (the TSC where it is constant, else
//! CLOCK_MONOTONIC through the vDSO: no system call; `counter.rs`) as fast
//! as it can. A gap between two consecutive reads longer than the threshold
//! means the CPU was taken from the thread: one interruption, recorded with
//! its length (`LatencyRecorder`, per-second windows, and with
//! `--trace-spikes` a candidate for the trace reader).
//!
//! The loop allocates nothing, takes no lock and makes no system call (the
//! read is an instruction, or the vDSO's clock). Everything else (publishing the live figures, the stop
//! flag with a relaxed load, the end of the run, the duty cycle) is looked
//! at once every `CHECK_NS` of clock time, so that a spinner notices a stop
//! within a tenth of a millisecond of its own time, and the per-iteration
//! cost is one counter read, one subtraction and two comparisons; with the
//! interference counter (the HW column, `hardware.rs`) one load more.
//!
//! `spin_loop` is that loop, written once; what is done with the gaps is a
//! `Visit`: `latscope noise`'s interruptions here, oslat's buckets in
//! `super::oslat`.

use super::hardware::HwTally;
use super::{CpuShared, NoisePlan};
use crate::probes::interference::verdict::{
    Interference, InterferenceCounter, NoCounter, SlotCounter, Watch,
};
use crate::rt::clock::monotonic_ns;
use crate::rt::sched;
#[cfg(target_arch = "x86_64")]
use crate::rt::ticks::Tsc;
use crate::rt::ticks::{Counter, Monotonic, Scale, Ticks, Timebase};
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
    /// `--policy deadline`: periods whose spinning ended after the
    /// deadline, and the periods the kernel throttled the spinner in.
    pub missed_deadlines: u64,
    pub throttled: u64,
    /// Monotonic time of the first and the last clock read (0 if none).
    pub from_ns: u64,
    pub until_ns: u64,
    /// The interruptions the interference counter saw none in (None: it
    /// did not run on this spinner).
    pub hardware: Option<HwTally>,
}

impl SpinEnd {
    fn not_started(recorder: LatencyRecorder) -> SpinEnd {
        SpinEnd {
            recorder,
            noise_ns: 0,
            measured_ns: 0,
            loops: 0,
            above_limit: 0,
            missed_deadlines: 0,
            throttled: 0,
            from_ns: 0,
            until_ns: 0,
            hardware: None,
        }
    }
}

/// Sleeps until `deadline_ns` in slices, returning early when `plan.stop`
/// is set. Returns whether the run goes on.
fn sleep_until_or_stop(plan: &NoisePlan, deadline_ns: u64) -> bool {
    sleep_until_or(&plan.stop, deadline_ns)
}

/// Sleeps until `deadline_ns` in slices, returning early (false) when
/// `stop` is set.
pub fn sleep_until_or(stop: &std::sync::atomic::AtomicBool, deadline_ns: u64) -> bool {
    crate::rt::clock::sleep_until_or_stop(stop, deadline_ns, SLEEP_SLICE_NS)
}

/// Runs the spinner of CPU `plan.cpus[index]` until the run ends.
pub fn run(
    plan: &NoisePlan,
    index: usize,
    shared: &CpuShared,
    recorder: LatencyRecorder,
) -> SpinEnd {
    let cpu = plan.cpus[index];
    // A deadline spinner is not pinned (see `Policy::may_pin`).
    let pinned = if plan.policy.may_pin() {
        sched::pin_current_thread(cpu)
    } else {
        Ok(())
    };
    let set_up = pinned.and_then(|()| sched::set_current_thread_policy(plan.policy, plan.priority));
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

/// What a spinning loop does after a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Go,
    /// The visitor slept (a duty cycle's off time): the next gap starts at a
    /// fresh read, not at the last one.
    Resume,
    Stop,
}

/// What one spinning loop does with what it reads: `latscope noise`'s
/// interruptions (`NoiseVisit`), oslat's buckets (`crate::noise::oslat`).
pub trait Visit {
    /// Work done before each read (oslat's `-w memmove`); none by default.
    #[inline(always)]
    fn work(&mut self) {}
    /// One gap between two consecutive reads, in ticks, ending at `now`.
    fn gap(&mut self, now: u64, gap: u64);
    /// About every `check_ticks` of counter time: publish, look at the end
    /// and the stop flag.
    fn check(&mut self, now: u64) -> Next;
    /// After `Next::Resume`: the fresh read the next gap starts at.
    fn resumed(&mut self, _now: u64) {}
}

/// What the loop itself counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spun {
    pub loops: u64,
    /// The first and the last read, in ticks.
    pub first: u64,
    pub last: u64,
}

/// THE spinning loop: read the counter, hand the gap over, and about every
/// `check_ticks` let the visitor look beyond it. Generic over the counter
/// (`T`) and the visitor so that the iteration compiles to one read, one
/// subtraction, the visitor's comparison and the check's comparison.
pub fn spin_loop<T: Ticks, V: Visit>(visit: &mut V, check_ticks: u64) -> Spun {
    let first = T::read();
    let mut prev = first;
    let mut next_check = first.saturating_add(check_ticks);
    let mut loops = 0u64;
    loop {
        visit.work();
        let now = T::read();
        loops += 1;
        // wrapping: a counter never goes back on one CPU, but a read cannot
        // be allowed to panic if a hypervisor ever made it.
        visit.gap(now, now.wrapping_sub(prev));
        prev = now;
        if now < next_check {
            continue;
        }
        match visit.check(now) {
            Next::Go => {}
            Next::Resume => {
                prev = T::read();
                visit.resumed(prev);
            }
            Next::Stop => break,
        }
        next_check = prev.saturating_add(check_ticks);
    }
    Spun {
        loops,
        first,
        last: prev,
    }
}

/// `spin_loop` on the counter chosen (one instance per counter kind).
pub fn spin_on<V: Visit>(counter: Counter, visit: &mut V, check_ticks: u64) -> Spun {
    match counter {
        #[cfg(target_arch = "x86_64")]
        Counter::Tsc(_) => spin_loop::<Tsc, V>(visit, check_ticks),
        _ => spin_loop::<Monotonic, V>(visit, check_ticks),
    }
}

/// `latscope noise`'s visitor: a gap above the threshold is one
/// interruption. Thresholds are in ticks; an interruption is converted to
/// nanoseconds, and its end to CLOCK_MONOTONIC time through the pair
/// (ticks, monotonic ns) read at the last check, so that drift between the
/// calibrated scale and the clock never exceeds one check interval's worth.
/// With the interference counter (`C`: `SlotCounter`), each iteration
/// loads it once after its clock read (`Watch`), and an interruption it
/// did not move across is hardware; `NoCounter` compiles to nothing.
struct NoiseVisit<'a, C> {
    plan: &'a NoisePlan,
    cpu: usize,
    shared: &'a CpuShared,
    scale: Scale,
    threshold: u64,
    limit: u64,
    spike: u64,
    recorder: LatencyRecorder,
    window: WindowWriter<'a>,
    noise_ns: u64,
    measured_ns: u64,
    above_limit: u64,
    end_ns: u64,
    segment_from: u64,
    period_from: u64,
    run_until: u64,
    /// The last check: counter and CLOCK_MONOTONIC read together.
    timebase: Timebase,
    /// `--policy deadline`: the relative deadline of every period.
    relative_deadline: Option<u64>,
    missed_deadlines: u64,
    watch: Watch<C>,
    hardware: HwTally,
}

impl<C> NoiseVisit<'_, C> {
    #[inline]
    fn ns_at(&self, ticks: u64) -> u64 {
        self.timebase.ns_at(ticks)
    }
}

impl<C: InterferenceCounter> Visit for NoiseVisit<'_, C> {
    #[inline(always)]
    fn gap(&mut self, now: u64, gap: u64) {
        let bracket = self.watch.after_read();
        if gap > self.threshold {
            self.interruption(now, gap, bracket);
        }
    }

    fn check(&mut self, now: u64) -> Next {
        let now_ns = monotonic_ns();
        self.timebase = Timebase {
            ticks: now,
            ns: now_ns,
            scale: self.scale,
        };
        let spun = self.measured_ns + now_ns.saturating_sub(self.segment_from);
        let shared = self.shared;
        shared
            .interruptions
            .store(self.recorder.count(), Ordering::Relaxed);
        shared.noise_ns.store(self.noise_ns, Ordering::Relaxed);
        shared.max_ns.store(
            self.recorder.max().unwrap_or(0).max(0) as u64,
            Ordering::Relaxed,
        );
        shared.measured_ns.store(spun, Ordering::Relaxed);
        shared
            .above_limit
            .store(self.above_limit, Ordering::Relaxed);
        if now_ns >= self.end_ns || self.plan.stop.load(Ordering::Relaxed) {
            self.measured_ns = spun;
            return Next::Stop;
        }
        if now_ns < self.run_until {
            return Next::Go;
        }
        // The off time of the duty cycle: not measured, not noise.
        self.measured_ns = spun;
        if self
            .relative_deadline
            .is_some_and(|d| now_ns > self.period_from.saturating_add(d))
        {
            self.missed_deadlines += 1;
        }
        let duty = self.plan.duty;
        let next = (self.period_from + duty.period_ns).max(now_ns);
        if !sleep_until_or_stop(self.plan, next.min(self.end_ns)) {
            return Next::Stop;
        }
        self.period_from = next;
        self.run_until = next.saturating_add(duty.runtime_ns);
        // The next gap starts at the fresh read that follows.
        self.watch.restart();
        Next::Resume
    }

    fn resumed(&mut self, now: u64) {
        self.timebase = Timebase {
            ticks: now,
            ns: monotonic_ns(),
            scale: self.scale,
        };
        self.segment_from = self.timebase.ns;
    }
}

impl<C> NoiseVisit<'_, C> {
    /// Out of line: the loop's common path stays a comparison. `bracket`:
    /// the counter before and after the gap.
    #[inline(never)]
    fn interruption(&mut self, now: u64, gap: u64, bracket: (Option<u64>, Option<u64>)) {
        let gap_ns = self.scale.ns(gap);
        let now_ns = self.ns_at(now);
        let verdict = Interference::between(bracket.0, bracket.1);
        self.hardware.note(verdict, now_ns, gap_ns);
        self.recorder.record(gap_ns as i64);
        self.window.record(now_ns, gap_ns as i64);
        self.noise_ns += gap_ns;
        self.above_limit += u64::from(gap > self.limit);
        if gap >= self.spike {
            self.shared.spikes.push(crate::spikes::Candidate {
                cpu: self.cpu as u32,
                expected_ns: now_ns.saturating_sub(gap_ns),
                actual_ns: now_ns,
            });
        }
    }
}

/// The measuring loop of `latscope noise` (see the module's doc).
fn spin(
    plan: &NoisePlan,
    cpu: usize,
    shared: &CpuShared,
    recorder: LatencyRecorder,
    start: u64,
) -> SpinEnd {
    // The interference counter of this CPU's slot: a pinned spinner's
    // interferences are its CPU's (an unpinned one is never given it).
    let slot = plan
        .interference
        .as_ref()
        .filter(|_| plan.policy.may_pin())
        .and_then(|loaded| loaded.slot(cpu));
    match slot {
        Some(view) => spin_with(
            plan,
            (cpu, shared),
            recorder,
            start,
            SlotCounter::new(&view),
        ),
        None => SpinEnd {
            hardware: None,
            ..spin_with(plan, (cpu, shared), recorder, start, NoCounter)
        },
    }
}

/// `spin` with the interference counter `interference`.
fn spin_with<C: InterferenceCounter>(
    plan: &NoisePlan,
    (cpu, shared): (usize, &CpuShared),
    recorder: LatencyRecorder,
    start: u64,
    interference: C,
) -> SpinEnd {
    let counter = plan.counter;
    let scale = counter.scale();
    let in_ticks = |ns: Option<u64>| ns.map_or(u64::MAX, |ns| scale.ticks(ns));
    let from_ns = monotonic_ns();
    let duty = plan.duty;
    let mut visit = NoiseVisit {
        plan,
        cpu,
        shared,
        scale,
        threshold: scale.ticks(plan.threshold_ns),
        limit: in_ticks(plan.limit_ns),
        spike: in_ticks(plan.spike_threshold_ns),
        recorder,
        window: WindowWriter::new(&shared.windows, start).with_samples(
            (plan.cpus.iter().position(|&c| c == cpu)).and_then(|i| ring_of(&plan.samples, i)),
        ),
        noise_ns: 0,
        measured_ns: 0,
        above_limit: 0,
        end_ns: plan
            .duration_ns
            .map_or(u64::MAX, |d| start.saturating_add(d)),
        segment_from: from_ns,
        period_from: from_ns,
        run_until: if duty.sleeps() {
            from_ns.saturating_add(duty.runtime_ns)
        } else {
            u64::MAX
        },
        timebase: Timebase {
            ticks: counter.now(),
            ns: from_ns,
            scale,
        },
        relative_deadline: plan.policy.reservation().map(|r| r.deadline_ns),
        missed_deadlines: 0,
        hardware: HwTally::new(),
        // Read last, right before the loop's first clock read.
        watch: Watch::new(interference),
    };
    let throttled_before = sched::throttled_periods();
    let check_ticks = scale.ticks(CHECK_NS);
    let spun = spin_on(counter, &mut visit, check_ticks);
    let until_ns = visit.ns_at(spun.last);
    visit.window.flush();
    SpinEnd {
        recorder: visit.recorder,
        noise_ns: visit.noise_ns,
        measured_ns: visit.measured_ns,
        loops: spun.loops,
        above_limit: visit.above_limit,
        missed_deadlines: visit.missed_deadlines,
        throttled: sched::throttled_periods().saturating_sub(throttled_before),
        from_ns,
        until_ns,
        hardware: Some(visit.hardware),
    }
}
