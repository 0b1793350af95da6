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

use super::figure::FigureSink;
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
    pub overruns: u64,
    pub above_limit: u64,
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
}

impl Waker {
    fn new(method: WakeMethod) -> Result<Waker, String> {
        match method {
            WakeMethod::Nanosleep => Ok(Waker::Sleep),
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

    /// Arms a periodic timerfd at its first expiry (a sleep needs nothing).
    fn arm(&self, first_ns: u64, period_ns: u64) -> Result<(), String> {
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
        }
    }
}

/// Sets the thread up as planned: CPU, policy, timer slack, waker.
fn set_up(plan: &TimerPlan, cpu: usize) -> Result<Waker, String> {
    sched::pin_current_thread(cpu)?;
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

/// The whole life of one sampling thread. `user` was built (and its memory
/// touched) by the spawning thread.
pub fn run(
    plan: &TimerPlan,
    index: usize,
    shared: &ThreadShared,
    mut user: FigureSink,
    mut freeze: Option<BreakTrace>,
) -> SamplerEnd {
    let cpu = plan.cpus[index];
    let period = plan.period_ns;
    let end = |user: FigureSink| SamplerEnd {
        user,
        overruns: 0,
        above_limit: 0,
        counters: SwitchCounters::default(),
        measuring_from_ns: 0,
        measuring_until_ns: 0,
        last_expiry_ns: 0,
        last_loop_partial: true,
        broke_on_switch: None,
    };
    let waker = match set_up(plan, cpu) {
        Ok(w) => w,
        Err(e) => {
            shared.fail(e);
            return end(user);
        }
    };
    shared.tid.store(sched::current_tid(), Ordering::Relaxed);
    shared.ready.store(true, Ordering::Release);
    // The controller starts tracing (when asked) once every thread is ready,
    // then gives the first expiry. Polling with sleeps: this thread is
    // already real-time and must block.
    let first = loop {
        if plan.stop.load(Ordering::Relaxed) {
            return end(user);
        }
        let first = shared.first_expiry_ns.load(Ordering::Acquire);
        if first != 0 {
            break first;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    if let Err(e) = waker.arm(first, period) {
        shared.fail(e);
        return end(user);
    }
    let samples_per_loop = plan.samples_per_loop();
    let user_is_figure = plan.figure == Figure::User;
    let spike_ns = plan
        .spike_threshold_ns
        .map_or(i64::MAX, |ns| ns.min(i64::MAX as u64) as i64);
    let mut expected = first;
    let mut warmup_left = plan.warmup_loops;
    let mut in_loop = 0u64;
    let mut measuring_from = first;
    // The duration counts from the end of the warm-up (set there).
    let mut deadline = plan
        .duration_ns
        .filter(|_| warmup_left == 0)
        .map(|d| first.saturating_add(d));
    if warmup_left == 0 {
        shared.measuring_from_ns.store(first, Ordering::Release);
    }
    let mut overruns = 0u64;
    let mut loop_overruns = 0u64;
    let mut above_limit = 0u64;
    let mut worst = i64::MIN;
    let mut counters = SwitchCounters::default();
    let mut baseline = SwitchCounters::read();
    let mut broke_on_switch = None;
    let mut last_now = first;
    let mut last_expiry = 0;
    let mut last_loop_partial = true;
    loop {
        let (ticks, now) = match waker.wait(expected, period) {
            Ok(x) => x,
            Err(errno) => {
                shared.fail(format!(
                    "waiting for the timer on CPU {cpu} failed: {}",
                    std::io::Error::from_raw_os_error(errno)
                ));
                break;
            }
        };
        last_now = now;
        last_expiry = expected;
        let latency = now as i64 - expected as i64;
        expected += ticks * period;
        in_loop += 1;
        if warmup_left == 0 {
            loop_overruns += ticks - 1;
            user.add(latency);
            if user_is_figure {
                shared.live.record(latency);
            }
            if plan.limit_ns.is_some_and(|limit| latency > limit) {
                above_limit += 1;
            }
            if latency > spike_ns {
                // Lock-free and allocation-free: the trace reader attributes it.
                shared.spikes.push(crate::spikes::Candidate {
                    cpu: cpu as u32,
                    expected_ns: last_expiry,
                    actual_ns: now,
                });
            }
            if latency > worst {
                worst = latency;
                if let Some(trace) = freeze.as_mut() {
                    let mut line = MarkerLine {
                        buf: [0; 96],
                        len: 0,
                    };
                    let _ = writeln!(line, "latscope: new max latency {latency} ns on CPU {cpu}");
                    trace.mark(&line.buf[..line.len]);
                }
            }
        }
        let stopping = plan.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| expected >= d);
        if in_loop == samples_per_loop || stopping {
            let now_counters = SwitchCounters::read();
            let moved = now_counters.since(baseline);
            baseline = now_counters;
            in_loop = 0;
            if warmup_left > 0 {
                if !stopping {
                    warmup_left -= 1;
                    if warmup_left == 0 {
                        // The measurement starts at the next expiry.
                        measuring_from = expected;
                        shared.measuring_from_ns.store(expected, Ordering::Release);
                        deadline = plan.duration_ns.map(|d| expected.saturating_add(d));
                    }
                }
            } else {
                counters.add(moved);
                overruns += loop_overruns;
                loop_overruns = 0;
                shared.overruns.store(overruns, Ordering::Relaxed);
                shared.msw.store(counters.total(), Ordering::Relaxed);
                // Stopped before the loop was complete (not at the end of -T).
                last_loop_partial = stopping && deadline.is_none_or(|d| expected < d);
                let closed = user.close_loop(last_loop_partial);
                if user_is_figure && let Some(stats) = closed {
                    shared.loops.push(stats);
                }
                if plan.break_on_switch && moved.total() > 0 {
                    broke_on_switch = Some(moved);
                    plan.stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        if stopping {
            break;
        }
    }
    SamplerEnd {
        user,
        overruns,
        above_limit,
        counters,
        measuring_from_ns: measuring_from,
        measuring_until_ns: if warmup_left == 0 {
            last_now.max(measuring_from)
        } else {
            measuring_from
        },
        last_expiry_ns: last_expiry,
        last_loop_partial,
        broke_on_switch,
    }
}
