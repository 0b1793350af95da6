//! CLOCK_MONOTONIC in nanoseconds (read through the vDSO) and absolute sleeps.

use std::time::Duration;

/// Current CLOCK_MONOTONIC time in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// Current CLOCK_REALTIME as a timespec: `mq_timedreceive` deadlines are
/// absolute on this clock.
pub fn realtime_deadline(after: Duration) -> libc::timespec {
    timespec(read_clock(libc::CLOCK_REALTIME).saturating_add(duration_ns(after)))
}

/// Nanoseconds as a kernel timespec.
pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// A duration in nanoseconds, saturating (u64 holds 584 years).
pub fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A timeout as an absolute CLOCK_MONOTONIC time, so that a wait retried after
/// EINTR or a spurious wake-up does not stretch it: calls that take a relative
/// timeout get the time left.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(u64);

impl Deadline {
    pub fn after(timeout: Duration) -> Deadline {
        Deadline(monotonic_ns().saturating_add(duration_ns(timeout)))
    }

    /// The deadline in CLOCK_MONOTONIC nanoseconds.
    pub fn ns(self) -> u64 {
        self.0
    }

    /// Nanoseconds left (0 once passed).
    pub fn left_ns(self) -> u64 {
        self.0.saturating_sub(monotonic_ns())
    }

    /// The time left, as the relative timespec of a kernel call.
    pub fn left(self) -> libc::timespec {
        timespec(self.left_ns())
    }

    pub fn passed(self) -> bool {
        self.left_ns() == 0
    }
}

/// The time of `clock` in ns.
#[inline]
pub fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; these clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns`
/// (`clock_nanosleep(TIMER_ABSTIME)`), retrying on signal interruption.
pub fn sleep_until_ns(deadline_ns: u64) {
    let _ = try_sleep_until_ns(deadline_ns);
}

/// `sleep_until_ns` that reports a failure (the error number) instead of
/// returning early without saying so.
#[inline]
pub fn try_sleep_until_ns(deadline_ns: u64) -> Result<(), i32> {
    let ts = timespec(deadline_ns);
    loop {
        // SAFETY: `ts` is valid; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            err => return Err(err),
        }
    }
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` in slices
/// of at most `slice_ns`, looking at `stop` before each: a wait of any
/// length (an IPC interval of an hour, a log-disk think time of a minute)
/// ends within one slice of a stop request. Returns true when the deadline
/// came, false (at once) when `stop` is set. A wait shorter than a slice is
/// one `clock_nanosleep` to the deadline itself.
pub fn sleep_until_or_stop(
    stop: &std::sync::atomic::AtomicBool,
    deadline_ns: u64,
    slice_ns: u64,
) -> bool {
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= deadline_ns {
            return true;
        }
        let _ = try_sleep_until_ns(deadline_ns.min(now.saturating_add(slice_ns)));
    }
}

/// The resolution `clock_getres` reports for `clock`, in ns.
pub fn reported_resolution_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid, writable timespec.
    if unsafe { libc::clock_getres(clock, &mut res) } != 0 {
        return None;
    }
    Some(res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64)
}

/// Whether CLOCK_MONOTONIC has high-resolution timers behind it (a
/// resolution of 1 ns, as cyclictest's check wants it).
pub fn has_high_resolution_timers() -> bool {
    reported_resolution_ns(libc::CLOCK_MONOTONIC) == Some(1)
}

/// The smallest step `clock` is seen to make in a burst of about 1 ms of
/// reads (at least 1000, at most 100000, sized as cyclictest sizes them);
/// None when no two reads differed.
pub fn smallest_measured_step_ns(clock: libc::clockid_t) -> Option<u64> {
    let read = || read_clock(clock);
    let first = read();
    let mut last = first;
    for _ in 0..1000 {
        last = read();
    }
    let per_call = (last - first) / 1000;
    let times = 1_000_000u64
        .checked_div(per_call)
        .map_or(100_000, |t| t.clamp(1000, 100_000));
    let stamps: Vec<u64> = (0..times).map(|_| read()).collect();
    stamps
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min()
}
