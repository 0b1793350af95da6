//! Sleeping to an absolute CLOCK_MONOTONIC time (the clock of latscope's
//! samples and gaps), for the threads that provoke interference at known
//! times (slow::hwlat_bpf, slow::hwlat_provoked).

/// `ns` of CLOCK_MONOTONIC (or any clock) as a `timespec`.
pub fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `ns` (at once if it is past).
pub fn sleep_until(ns: u64) {
    let at = timespec_of(ns);
    // SAFETY: a valid absolute time; no remaining time is asked for.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &at,
            std::ptr::null_mut(),
        )
    };
}
