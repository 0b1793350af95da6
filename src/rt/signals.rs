//! Ctrl-C and SIGTERM without signal handlers: the main thread blocks both
//! before any other thread exists (so every thread inherits the mask) and then
//! collects them synchronously with `sigtimedwait` while it monitors the run.

use std::time::Duration;

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset only write the local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread and in all threads it
/// creates afterwards. Call first thing in `main`.
pub fn block_stop_signals() {
    let set = stop_signals();
    // SAFETY: valid set; a null old-set pointer is allowed. The dispositions
    // are reset to default because a shell starts background jobs with SIGINT
    // ignored, and an ignored signal would never reach `sigtimedwait`; while
    // blocked, the default action (termination) never runs.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Waits up to `timeout` for SIGINT or SIGTERM; returns the signal if one came.
pub fn wait_for_stop_signal(timeout: Duration) -> Option<i32> {
    let set = stop_signals();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: valid set and timeout; a null siginfo pointer is allowed.
    let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    (sig > 0).then_some(sig)
}

/// Makes a stray SIGUSR1 sent to latscope from outside (`kill -USR1 PID`)
/// harmless. `latscope signal` wakes its tasks with SIGUSR1, which every
/// waiting task blocks and collects with `sigwait`; a blocked signal is never
/// ignored, so those still arrive. A process-directed SIGUSR1 is checked
/// against the main thread, which does not block it: with the disposition
/// SIG_IGN it is dropped, instead of ending the process (the default action)
/// or being taken by a waiting task as a false wake-up. Call first thing in
/// `main`.
pub fn ignore_stray_wake_signals() {
    // SAFETY: setting a disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGUSR1, libc::SIG_IGN) };
}
