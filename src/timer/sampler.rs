//! The sampling thread: pinned, real-time, waking on absolute CLOCK_MONOTONIC
//! expiries (`clock_nanosleep(TIMER_ABSTIME)` or a periodic timerfd), one
//! sample per wake-up: latency = clock read after the wake-up - expiry, signed.
//!
//! Missed periods are overruns, never hidden: a wake-up that comes after later
//! expiries have passed counts them (the timerfd's expiration count, or the
//! same arithmetic after `clock_nanosleep`) and the next expiry is the first
//! one still ahead, as in Xenomai and cyclictest.
//!
//! Once per one-second loop (never per sample) the thread reads its own
//! resource counters (`getrusage(RUSAGE_THREAD)`): involuntary context
//! switches and page faults are the plain-Linux events that can explain a late
//! wake-up, reported as Xenomai's "msw" column.

use super::breakdown::KernelFigures;
use super::figure::FigureSink;
use super::posix_timer::PosixTimer;
use super::{Figure, ThreadShared, TimerPlan, WakeMethod};
use crate::rt::clock::{monotonic_ns, timespec, try_sleep_until_ns};
use crate::rt::sched;
use crate::rt::tracefs::BreakTrace;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;

/// What the sampling thread hands back when it ends.
pub struct SamplerEnd {
    /// The user-latency figure (the thread's own clock reads).
    pub user: FigureSink,
    /// Missed periods, throttled ones (`--policy deadline`) included.
    pub overruns: u64,
    pub above_limit: u64,
    /// `--policy deadline`: wake-ups whose work ended after the deadline.
    pub missed_deadlines: u64,
    /// `--policy deadline`: periods in which the kernel throttled the thread.
    pub throttled: u64,
    pub counters: SwitchCounters,
    /// Monotonic time the measurement (after the warm-up) began and ended.
    pub measuring_from_ns: u64,
    pub measuring_until_ns: u64,
    /// Expiry of the last sample taken (0 if none).
    pub last_expiry_ns: u64,
    /// Whether the last loop was cut short by a stop (not the end of -T).
    pub last_loop_partial: bool,
    /// `-b` stopped the run: the counters that moved.
    pub broke_on_switch: Option<SwitchCounters>,
    /// The in-kernel breakdown (BPF collector).
    pub kernel: Option<KernelFigures>,
}

/// The sampling thread's own counters of events that delay a wake-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    pub involuntary_switches: u64,
    pub major_faults: u64,
    pub minor_faults: u64,
}

impl SwitchCounters {
    fn read() -> SwitchCounters {
        // SAFETY: a zeroed rusage is a valid output buffer.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD reports the calling thread into `usage`.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        SwitchCounters {
            involuntary_switches: usage.ru_nivcsw as u64,
            major_faults: usage.ru_majflt as u64,
            minor_faults: usage.ru_minflt as u64,
        }
    }

    fn since(self, earlier: SwitchCounters) -> SwitchCounters {
        SwitchCounters {
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
        }
    }

    fn add(&mut self, other: SwitchCounters) {
        self.involuntary_switches += other.involuntary_switches;
        self.major_faults += other.major_faults;
        self.minor_faults += other.minor_faults;
    }

    /// Xenomai's msw column: every event counted here.
    pub fn total(&self) -> u64 {
        self.involuntary_switches + self.major_faults + self.minor_faults
    }
}

/// How the thread waits for its next expiry.
enum Waker {
    Sleep,
    Timerfd(OwnedFd),
    PosixTimer(PosixTimer),
}

impl Waker {
    fn new(method: WakeMethod) -> Result<Waker, String> {
        match method {
            WakeMethod::Nanosleep => Ok(Waker::Sleep),
            WakeMethod::PosixTimer => Ok(Waker::PosixTimer(PosixTimer::for_this_thread(
                libc::CLOCK_MONOTONIC,
            )?)),
            WakeMethod::Timerfd => {
                // SAFETY: plain syscall; the fd is owned below.
                let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
                if fd < 0 {
                    return Err(format!(
                        "timerfd_create failed: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                // SAFETY: a fresh descriptor nobody else owns.
                Ok(Waker::Timerfd(unsafe { OwnedFd::from_raw_fd(fd) }))
            }
        }
    }

    /// Arms a periodic timerfd or POSIX timer at its first expiry (a sleep
    /// needs nothing).
    fn arm(&self, first_ns: u64, period_ns: u64) -> Result<(), String> {
        if let Waker::PosixTimer(t) = self {
            return t.arm(first_ns, period_ns, true);
        }
        if let Waker::Timerfd(fd) = self {
            let spec = libc::itimerspec {
                it_interval: timespec(period_ns),
                it_value: timespec(first_ns),
            };
            // SAFETY: valid fd and spec; a null old-value pointer is allowed.
            let rc = unsafe {
                libc::timerfd_settime(
                    fd.as_raw_fd(),
                    libc::TFD_TIMER_ABSTIME,
                    &spec,
                    std::ptr::null_mut(),
                )
            };
            if rc != 0 {
                return Err(format!(
                    "timerfd_settime failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        Ok(())
    }

    /// Blocks until `expected`; returns how many expiries have passed by the
    /// time the thread runs again (1 when on time) and the clock read.
    #[inline]
    fn wait(&self, expected: u64, period_ns: u64) -> Result<(u64, u64), i32> {
        match self {
            Waker::Sleep => {
                try_sleep_until_ns(expected)?;
                let now = monotonic_ns();
                Ok((1 + now.saturating_sub(expected) / period_ns, now))
            }
            Waker::Timerfd(fd) => {
                let mut ticks = 0u64;
                loop {
                    // SAFETY: reads 8 bytes into `ticks`.
                    let n = unsafe { libc::read(fd.as_raw_fd(), (&raw mut ticks).cast(), 8) };
                    if n == 8 {
                        break;
                    }
                    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                    if n < 0 && errno == libc::EINTR {
                        continue;
                    }
                    return Err(errno);
                }
                Ok((ticks.max(1), monotonic_ns()))
            }
            Waker::PosixTimer(t) => {
                t.wait()?;
                let now = monotonic_ns();
                // The expiries missed while the signal was pending, plus this.
                Ok((1 + t.overruns(), now))
            }
        }
    }
}

/// Sets the thread up as planned: CPU (not for a deadline thread, see
/// `Policy::may_pin`), policy, timer slack, waker.
fn set_up(plan: &TimerPlan, cpu: usize) -> Result<Waker, String> {
    if plan.policy.may_pin() {
        sched::pin_current_thread(cpu)?;
    }
    sched::set_current_thread_policy(plan.policy, plan.priority)?;
    sched::minimal_timer_slack();
    Waker::new(plan.wake)
}

/// A fixed-size line for the trace marker, written without allocating.
struct MarkerLine {
    buf: [u8; 96],
    len: usize,
}

impl Write for MarkerLine {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&data[..n]);
        self.len += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The whole life of one sampling thread: set up, wait for the first expiry,
/// sample until stopped. `user` was built (and its memory touched) by the
/// spawning thread.
pub fn run(
    plan: &TimerPlan,
    index: usize,
    shared: &ThreadShared,
    user: FigureSink,
    freeze: Option<BreakTrace>,
    kernel_sinks: Option<(FigureSink, FigureSink)>,
) -> SamplerEnd {
    let cpu = plan.cpus[index];
    let waker = match set_up(plan, cpu) {
        Ok(w) => w,
        Err(e) => {
            shared.fail(e);
            return SamplerEnd::not_started(user);
        }
    };
    shared.tid.store(sched::current_tid(), Ordering::Relaxed);
    shared.ready.store(true, Ordering::Release);
    let Some(first) = wait_for_first_expiry(plan, shared) else {
        return SamplerEnd::not_started(user);
    };
    if let Err(e) = waker.arm(first, plan.period_ns) {
        shared.fail(e);
        return SamplerEnd::not_started(user);
    }
    let mut sampling = Sampling::new(plan, shared, cpu, waker, user, freeze, first);
    sampling.samples = crate::stats::samples::ring_of(&plan.samples, index);
    // The controller published the slot reader before the first expiry.
    sampling.kernel = kernel_sinks.and_then(|(irq, thread)| {
        let reader = shared.kernel_slot.get()?.clone();
        Some(KernelFigures::new(reader, irq, thread))
    });
    sampling.sample_until_stopped();
    sampling.end()
}

/// The controller starts tracing (when asked) once every thread is ready,
/// then gives the first expiry; `None` when the run is stopped first.
/// Polling with sleeps: this thread is already real-time and must block.
fn wait_for_first_expiry(plan: &TimerPlan, shared: &ThreadShared) -> Option<u64> {
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            return None;
        }
        let first = shared.first_expiry_ns.load(Ordering::Acquire);
        if first != 0 {
            return Some(first);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

impl SamplerEnd {
    /// The end of a thread that never took a sample.
    fn not_started(user: FigureSink) -> SamplerEnd {
        SamplerEnd {
            user,
            overruns: 0,
            above_limit: 0,
            missed_deadlines: 0,
            throttled: 0,
            counters: SwitchCounters::default(),
            measuring_from_ns: 0,
            measuring_until_ns: 0,
            last_expiry_ns: 0,
            last_loop_partial: true,
            broke_on_switch: None,
            kernel: None,
        }
    }
}

/// How many of the `ticks` expiries a wake-up accounts for (the one it was
/// waiting for at `expiry_ns`, then the ones that passed while it was late)
/// belong to the run: those before `deadline_ns`, the end of `-T`. Periods
/// after the end of the run are not part of it, so a late last wake-up does
/// not count them as overruns and "samples + overruns = T / period" holds.
/// At least 1: the expiry waited for is always inside the run (the loop stops
/// before waiting for one at or past the deadline).
fn periods_in_run(expiry_ns: u64, ticks: u64, period_ns: u64, deadline_ns: Option<u64>) -> u64 {
    match deadline_ns {
        Some(deadline) if deadline > expiry_ns => {
            // Expiries expiry, expiry + period, ... strictly before the deadline.
            let before_deadline = (deadline - expiry_ns).div_ceil(period_ns);
            ticks.min(before_deadline).max(1)
        }
        Some(_) => 1,
        None => ticks,
    }
}

/// One sampling thread's loop and its state. The loop body reads top to
/// bottom in `sample_until_stopped`; each step is a small method. Nothing
/// here allocates, locks or prints per sample: the only system calls per
/// sample are the wait and its clock read (`getrusage` once per loop).
struct Sampling<'a> {
    plan: &'a TimerPlan,
    shared: &'a ThreadShared,
    cpu: usize,
    waker: Waker,
    user: FigureSink,
    /// `-f`: the trace to mark each new maximum in.
    freeze: Option<BreakTrace>,
    period: u64,
    samples_per_loop: u64,
    user_is_figure: bool,
    spike_ns: i64,
    /// The next expiry to wait for.
    expected: u64,
    warmup_left: u64,
    /// Wake-ups in the current one-second loop (warm-up ones too).
    in_loop: u64,
    measuring_from: u64,
    /// End of `-T`: counts from the end of the warm-up (set there).
    deadline: Option<u64>,
    overruns: u64,
    /// Overruns of the open loop, added to `overruns` when it closes.
    loop_overruns: u64,
    above_limit: u64,
    /// `--policy deadline`: the relative deadline of every wake-up.
    relative_deadline: Option<u64>,
    missed_deadlines: u64,
    /// Throttled periods since the warm-up, and the thread's count then.
    throttled: u64,
    throttled_before: u64,
    /// Whether the thread is pinned to `cpu` (else the spike candidates
    /// name the CPU it woke on).
    pinned: bool,
    worst: i64,
    counters: SwitchCounters,
    /// The counters at the start of the current loop.
    baseline: SwitchCounters,
    broke_on_switch: Option<SwitchCounters>,
    last_now: u64,
    last_expiry: u64,
    last_loop_partial: bool,
    /// `--samples`: every measured sample (the user-space latency) goes here too.
    samples: Option<std::sync::Arc<crate::stats::samples::SampleRing>>,
    /// `--breakdown` collected in the kernel: the slot read after each wake-up.
    kernel: Option<KernelFigures>,
}

impl<'a> Sampling<'a> {
    fn new(
        plan: &'a TimerPlan,
        shared: &'a ThreadShared,
        cpu: usize,
        waker: Waker,
        user: FigureSink,
        freeze: Option<BreakTrace>,
        first: u64,
    ) -> Sampling<'a> {
        let warmup_left = plan.warmup_loops;
        if warmup_left == 0 {
            shared.measuring_from_ns.store(first, Ordering::Release);
        }
        Sampling {
            plan,
            shared,
            cpu,
            waker,
            user,
            freeze,
            period: plan.period_ns,
            samples_per_loop: plan.samples_per_loop(),
            user_is_figure: plan.figure == Figure::User,
            spike_ns: plan
                .spike_threshold_ns
                .map_or(i64::MAX, |ns| ns.min(i64::MAX as u64) as i64),
            expected: first,
            warmup_left,
            in_loop: 0,
            measuring_from: first,
            deadline: plan
                .duration_ns
                .filter(|_| warmup_left == 0)
                .map(|d| first.saturating_add(d)),
            overruns: 0,
            loop_overruns: 0,
            above_limit: 0,
            relative_deadline: plan.policy.reservation().map(|r| r.deadline_ns),
            missed_deadlines: 0,
            throttled: 0,
            throttled_before: sched::throttled_periods(),
            pinned: plan.policy.may_pin(),
            worst: i64::MIN,
            counters: SwitchCounters::default(),
            baseline: SwitchCounters::read(),
            broke_on_switch: None,
            last_now: first,
            last_expiry: 0,
            last_loop_partial: true,
            samples: None,
            kernel: None,
        }
    }

    /// THE timer sample: wait for the expiry, read the clock (in `wait`),
    /// latency = clock read - expiry.
    fn sample_until_stopped(&mut self) {
        while let Some((ticks, now)) = self.wait() {
            let expiry = self.expected;
            let latency = now as i64 - expiry as i64;
            self.advance(ticks, now);
            if self.warmup_left == 0 {
                self.account_overruns(expiry, ticks);
                self.record(latency, expiry, now);
                self.account_deadline(expiry);
            }
            let stopping = self.stop_requested();
            if (self.in_loop == self.samples_per_loop || stopping) && self.end_loop(stopping) {
                break;
            }
            if stopping {
                break;
            }
        }
    }

    /// Blocks until the expected expiry; `None` (the run's error set) when
    /// the wait fails.
    #[inline]
    fn wait(&self) -> Option<(u64, u64)> {
        match self.waker.wait(self.expected, self.period) {
            Ok(x) => Some(x),
            Err(errno) => {
                self.shared.fail(format!(
                    "waiting for the timer on CPU {} failed: {}",
                    self.cpu,
                    std::io::Error::from_raw_os_error(errno)
                ));
                None
            }
        }
    }

    /// The next expiry is the first one still ahead.
    #[inline]
    fn advance(&mut self, ticks: u64, now: u64) {
        self.last_now = now;
        self.last_expiry = self.expected;
        self.expected += ticks * self.period;
        self.in_loop += 1;
    }

    /// The expiries this wake-up missed, inside the run (see `periods_in_run`).
    #[inline]
    fn account_overruns(&mut self, expiry: u64, ticks: u64) {
        self.loop_overruns += periods_in_run(expiry, ticks, self.period, self.deadline) - 1;
    }

    /// `--policy deadline`: the wake-up's work (this sample) done after
    /// its absolute deadline, expiry + relative deadline, is a miss.
    #[inline]
    fn account_deadline(&mut self, expiry: u64) {
        if let Some(deadline) = self.relative_deadline
            && monotonic_ns() > expiry.saturating_add(deadline)
        {
            self.missed_deadlines += 1;
        }
    }

    /// `--policy deadline`: the periods the kernel throttled the thread in
    /// since the warm-up are overruns (counted in the open loop).
    fn account_throttled(&mut self) {
        if self.relative_deadline.is_none() {
            return;
        }
        let throttled = sched::throttled_periods().saturating_sub(self.throttled_before);
        self.loop_overruns += throttled.saturating_sub(self.throttled);
        self.throttled = throttled;
    }

    /// One measured sample into the figures, the limit count, the spike
    /// queue and the `-f` trace marker.
    #[inline]
    fn record(&mut self, latency: i64, expiry: u64, now: u64) {
        self.user.add(latency);
        if let Some(ring) = &self.samples {
            ring.push(now, latency);
        }
        if self.user_is_figure {
            self.shared.live.record(latency);
        }
        // The kernel's side of this wake-up: loads from the mmapped slot.
        if let Some(kernel) = self.kernel.as_mut()
            && let Some((irq, thread)) = kernel.take(expiry, latency)
        {
            match self.plan.figure {
                Figure::Irq => self.shared.live.record(irq),
                Figure::Thread => self.shared.live.record(thread),
                Figure::User => {}
            }
        }
        if self.plan.limit_ns.is_some_and(|limit| latency > limit) {
            self.above_limit += 1;
            // Published at once (not only at the loop's end): the monitor
            // acts on a crossing within its tick (`--on-threshold`).
            self.shared
                .above_limit
                .store(self.above_limit, Ordering::Relaxed);
        }
        if latency > self.spike_ns {
            let cpu = if self.pinned {
                self.cpu
            } else {
                sched::current_cpu()
            };
            // Lock-free and allocation-free: the trace reader attributes it.
            self.shared.spikes.push(crate::spikes::Candidate {
                cpu: cpu as u32,
                expected_ns: expiry,
                actual_ns: now,
            });
        }
        if latency > self.worst {
            self.worst = latency;
            self.mark_new_maximum(latency);
        }
    }

    /// `-f`: a line in the kernel trace at each new maximum.
    fn mark_new_maximum(&mut self, latency: i64) {
        if let Some(trace) = self.freeze.as_mut() {
            let mut line = MarkerLine {
                buf: [0; 96],
                len: 0,
            };
            let _ = writeln!(
                line,
                "latscope: new max latency {latency} ns on CPU {}",
                self.cpu
            );
            trace.mark(&line.buf[..line.len]);
        }
    }

    /// A stop from the controller (or another thread's `-b`), or the end of `-T`.
    #[inline]
    fn stop_requested(&self) -> bool {
        self.plan.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| self.expected >= d)
    }

    /// Closes the one-second loop (a warm-up loop, or a measured one);
    /// returns true when `-b` saw a switch or fault and stops the run.
    fn end_loop(&mut self, stopping: bool) -> bool {
        let now_counters = SwitchCounters::read();
        let moved = now_counters.since(self.baseline);
        self.baseline = now_counters;
        self.in_loop = 0;
        if self.warmup_left > 0 {
            if !stopping {
                self.end_warmup_loop();
            }
            return false;
        }
        self.counters.add(moved);
        self.account_throttled();
        self.overruns += self.loop_overruns;
        self.loop_overruns = 0;
        self.shared.overruns.store(self.overruns, Ordering::Relaxed);
        self.shared
            .above_limit
            .store(self.above_limit, Ordering::Relaxed);
        self.shared
            .msw
            .store(self.counters.total(), Ordering::Relaxed);
        // Stopped before the loop was complete (not at the end of -T).
        self.last_loop_partial = stopping && self.deadline.is_none_or(|d| self.expected < d);
        let closed = self.user.close_loop(self.last_loop_partial);
        if self.user_is_figure
            && let Some(stats) = closed
        {
            self.user
                .publish_window(&self.shared.window_histograms, stats.index);
            self.shared.loops.push(stats);
        }
        self.close_kernel_loops();
        if self.plan.break_on_switch && moved.total() > 0 {
            self.broke_on_switch = Some(moved);
            self.plan.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Closes the loop of the in-kernel figures; with `-t 1`/`-t 2` one of
    /// them is the main figure, whose loop goes to the live output.
    fn close_kernel_loops(&mut self) {
        let Some(k) = self.kernel.as_mut() else {
            return;
        };
        let irq = k.irq.close_loop(self.last_loop_partial);
        let thread = k.thread.close_loop(self.last_loop_partial);
        let main = match self.plan.figure {
            Figure::Irq => irq.map(|stats| (stats, &mut k.irq)),
            Figure::Thread => thread.map(|stats| (stats, &mut k.thread)),
            Figure::User => None,
        };
        if let Some((stats, sink)) = main {
            sink.publish_window(&self.shared.window_histograms, stats.index);
            self.shared.loops.push(stats);
        }
    }

    /// One warm-up loop less; after the last one the measurement (and `-T`)
    /// starts at the next expiry.
    fn end_warmup_loop(&mut self) {
        self.warmup_left -= 1;
        if self.warmup_left == 0 {
            self.throttled_before = sched::throttled_periods();
            self.measuring_from = self.expected;
            self.shared
                .measuring_from_ns
                .store(self.expected, Ordering::Release);
            self.deadline = self
                .plan
                .duration_ns
                .map(|d| self.expected.saturating_add(d));
        }
    }

    fn end(self) -> SamplerEnd {
        SamplerEnd {
            measuring_until_ns: if self.warmup_left == 0 {
                self.last_now.max(self.measuring_from)
            } else {
                self.measuring_from
            },
            user: self.user,
            overruns: self.overruns,
            above_limit: self.above_limit,
            missed_deadlines: self.missed_deadlines,
            throttled: self.throttled,
            counters: self.counters,
            measuring_from_ns: self.measuring_from,
            last_expiry_ns: self.last_expiry,
            last_loop_partial: self.last_loop_partial,
            broke_on_switch: self.broke_on_switch,
            kernel: self.kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::periods_in_run;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_late_last_wake_up_counts_no_periods_past_the_end_of_the_run() {
        // -T 2 at 1 ms: the measurement starts at 10 ms, ends at 2010 ms. The
        // last expiry inside it (2009 ms) is woken 9.4 ms late: the wait
        // reports 10 passed expiries, of which only the first is in the run.
        let from = 10 * MS;
        let deadline = from + 2_000 * MS;
        let last = deadline - MS;
        let ticks = 1 + (9_400_000 / MS);
        assert_eq!(ticks, 10);
        assert_eq!(periods_in_run(last, ticks, MS, Some(deadline)), 1);
        // Two periods before the end, 9.4 ms late: that expiry and the next.
        assert_eq!(periods_in_run(last - MS, 10, MS, Some(deadline)), 2);
        // Far from the end, every missed period counts.
        assert_eq!(periods_in_run(from, 10, MS, Some(deadline)), 10);
        // Without -T, too.
        assert_eq!(periods_in_run(last, 10, MS, None), 10);
    }

    #[test]
    fn samples_and_overruns_add_up_to_the_periods_of_the_run() {
        // Wake-ups at every expiry of a 2 s run at 1 ms, some late by several
        // periods, the last by 9.4 ms: one sample each plus the overruns
        // counted must be exactly 2000.
        let period = MS;
        let from = 5 * MS;
        let deadline = from + 2_000 * MS;
        for late_ns in [0, 400_000, 3_200_000, 9_400_000, 1_000 * MS] {
            let mut expected = from;
            let mut samples = 0u64;
            let mut overruns = 0u64;
            let mut n = 0u64;
            while expected < deadline {
                n += 1;
                // Every 97th wake-up and the last possible one are late.
                let late = if n.is_multiple_of(97) || expected + period >= deadline {
                    late_ns
                } else {
                    0
                };
                let ticks = 1 + late / period;
                samples += 1;
                overruns += periods_in_run(expected, ticks, period, Some(deadline)) - 1;
                expected += ticks * period;
            }
            assert_eq!(samples + overruns, 2_000, "late {late_ns} ns");
        }
    }
}
