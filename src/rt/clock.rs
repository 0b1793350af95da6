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
    let now = read_clock(libc::CLOCK_REALTIME) as u128 + after.as_nanos();
    libc::timespec {
        tv_sec: (now / 1_000_000_000) as libc::time_t,
        tv_nsec: (now % 1_000_000_000) as libc::c_long,
    }
}

#[inline]
fn read_clock(clock: libc::clockid_t) -> u64 {
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
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
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
        if rc != libc::EINTR {
            return;
        }
    }
}
