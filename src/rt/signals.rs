//! Stop signals without signal handlers: the main thread blocks them before
//! any other thread exists (so every thread inherits the mask) and then
//! collects them synchronously with `sigtimedwait` while it monitors the run.
//!
//! The stop signals: SIGINT (Ctrl-C), SIGTERM, SIGHUP (a dropped ssh session
//! or closed terminal), SIGQUIT (Ctrl-\), SIGALRM and SIGUSR2 (both end a
//! process by default and latscope uses neither): each ends the run as
//! Ctrl-C does, with the results so far printed and written and every object
//! removed. SIGXFSZ (a write beyond the file-size limit) is blocked and never
//! collected, so the write fails with EFBIG and the run ends through its
//! ordinary write-error path instead of being killed. SIGUSR1 is ignored
//! (see `ignore_stray_wake_signals`). A process-directed blocked signal is
//! discarded when latscope exits, and is not inherited by child processes
//! (the load generators reset the mask before exec).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The signals that end the run cleanly (see the module comment).
pub const STOP_SIGNALS: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGALRM,
    libc::SIGUSR2,
];

/// SIGHUP was ignored when latscope started (`nohup`): it stays ignored and
/// is neither blocked nor collected (a blocked signal is queued even when
/// ignored), so a dropped session does not end a run started with nohup.
static HUP_IGNORED: AtomicBool = AtomicBool::new(false);

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset only write the local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOP_SIGNALS {
            if !(sig == libc::SIGHUP && HUP_IGNORED.load(Ordering::Relaxed)) {
                libc::sigaddset(&mut set, sig);
            }
        }
        set
    }
}

/// Blocks the stop signals and SIGXFSZ in the calling thread and in all
/// threads it creates afterwards. Call first thing in `main`.
pub fn block_stop_signals() {
    // SAFETY: reading the disposition (a null new action changes nothing).
    let hup_ignored = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    };
    HUP_IGNORED.store(hup_ignored, Ordering::Relaxed);
    let mut set = stop_signals();
    // SAFETY: valid set; a null old-set pointer is allowed. The dispositions
    // are reset to default because a shell starts background jobs with SIGINT
    // ignored and an ignored signal would never
    // reach `sigtimedwait`; while blocked, the default action (termination)
    // never runs.
    unsafe {
        libc::sigaddset(&mut set, libc::SIGXFSZ);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        for sig in STOP_SIGNALS {
            if !(sig == libc::SIGHUP && hup_ignored) {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// Waits up to `timeout` for a stop signal; returns the signal if one came.
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

/// The usual name of a stop signal, for messages.
pub fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGALRM => "SIGALRM",
        libc::SIGUSR2 => "SIGUSR2",
        _ => "a signal",
    }
}

/// For the commands that measure nothing and so have no monitor loop to
/// collect a stop signal (`report`, `compare`): a thread that waits for one
/// and ends the process at once, even while the main thread is blocked
/// reading a large file or opening a FIFO nobody writes. The temporary file
/// of an output being written is removed first (rt::outfile), so nothing is
/// left; no output was replaced, since a rename is the last step. The
/// SIGTERM that a closed standard output sends (rt::stdio) is not a stop
/// request here. Exit code 1, one line naming `what` was interrupted.
pub fn exit_on_stop_signal(what: &'static str) {
    let spawned = std::thread::Builder::new()
        .name("stop-signals".into())
        .spawn(move || {
            loop {
                let Some(sig) = wait_for_stop_signal(Duration::from_secs(3600)) else {
                    continue;
                };
                if sig == libc::SIGTERM && crate::rt::stdio::take_own_sigterm() {
                    continue;
                }
                crate::rt::outfile::remove_pending_temporaries();
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("latscope: error: {what} interrupted by {}\n", name(sig)).as_bytes(),
                );
                std::process::exit(1);
            }
        });
    // Without the thread (no memory for one), the command still finishes;
    // it is only deaf to the signals.
    drop(spawned);
}
