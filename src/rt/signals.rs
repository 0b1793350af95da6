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
//! ordinary write-error path instead of being killed. A process-directed
//! blocked signal is discarded when latscope exits, and is not inherited by
//! child processes (the load generators reset the mask before exec).
//!
//! SIGUSR1 asks for a snapshot (`kill -USR1 PID`): the results so far are
//! shown and every output file rewritten while the run goes on
//! (docs/fleet.md, "Snapshots (SIGUSR1)"). It is blocked in every thread like
//! the stop signals, and the same `sigtimedwait` of the monitor collects it
//! (no handler: nothing runs in signal context; the monitor, a normal thread,
//! builds the snapshot, never a measuring thread). Every kind of test serves
//! it: the IPC tests from exact copies of their recorders (rt::snapshot),
//! the timer, noise and log-disk tests from the windows drained so far
//! (pipeline::live). `latscope signal` wakes
//! its own tasks with thread-directed SIGUSR1s (`pthread_kill`/`tgkill`),
//! which stay pending on the waiting thread and are collected only there.
//! A waiting task may still dequeue a process-directed SIGUSR1 from outside
//! (any thread waiting for a signal may take the process's pending one):
//! ipc/signal.rs tells the two apart by `si_code`/`si_pid` and hands the
//! outsider's on as a snapshot request (`note_snapshot_request`), so it is
//! neither a false wake-up nor lost. A SIGUSR1 that comes while nothing is
//! measured (a command that measures nothing, or the delivery at the end)
//! stays pending and is discarded at exit: harmless, as before.
//!
//! The cyclictest drop-in is the exception: cyclictest gives SIGUSR1 and
//! SIGUSR2 meanings of its own (its status on stderr; its status written to
//! the shared-memory object `/cyclictest<pid>`), and its main loop collects
//! them with `wait_for_stop_or_user_signal`, which returns them instead of
//! recording a snapshot or ending the run. Every other command keeps the
//! meanings above.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// The signal that asks for a snapshot (see the module comment).
pub const SNAPSHOT_SIGNAL: libc::c_int = libc::SIGUSR1;

/// Snapshot requests collected and not yet served.
static SNAPSHOT_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Records a snapshot request (a SIGUSR1 from outside, collected by
/// whichever thread dequeued it). Only an atomic add.
pub fn note_snapshot_request() {
    SNAPSHOT_REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Whether a snapshot was asked for since the last call (several requests
/// before the monitor saw them make one snapshot).
pub fn take_snapshot_request() -> bool {
    SNAPSHOT_REQUESTS.swap(0, Ordering::Relaxed) > 0
}

/// Blocks the stop signals, SIGUSR1 and SIGXFSZ in the calling thread and in
/// all threads it creates afterwards. Call first thing in `main`.
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
        libc::sigaddset(&mut set, SNAPSHOT_SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        for sig in STOP_SIGNALS {
            if !(sig == libc::SIGHUP && hup_ignored) {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// Waits up to `timeout` for a stop signal; returns the signal if one came.
/// A snapshot request (SIGUSR1) is collected too: it is recorded
/// (`take_snapshot_request`) and ends the wait early with None, so the
/// caller serves it at once.
pub fn wait_for_stop_signal(timeout: Duration) -> Option<i32> {
    let mut set = stop_signals();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: valid set and timeout; a null siginfo pointer is allowed.
    let sig = unsafe {
        libc::sigaddset(&mut set, SNAPSHOT_SIGNAL);
        libc::sigtimedwait(&set, std::ptr::null_mut(), &ts)
    };
    if sig == SNAPSHOT_SIGNAL {
        note_snapshot_request();
        return None;
    }
    (sig > 0).then_some(sig)
}

/// `wait_for_stop_signal` as the monitors' `wait_for_stop` takes it: true
/// when a stop signal came (a SIGUSR1 is recorded for the monitor).
pub fn stop_signalled(timeout: Duration) -> bool {
    wait_for_stop_signal(timeout).is_some()
}

/// What `wait_for_stop_or_user_signal` collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collected {
    /// A stop signal (SIGUSR2 never is one here).
    Stop(libc::c_int),
    /// SIGUSR1.
    User1,
    /// SIGUSR2.
    User2,
}

/// For a drop-in whose original tool gives SIGUSR1 and SIGUSR2 meanings of
/// its own (cyclictest: its status on stderr, its status in shared memory):
/// waits up to `timeout` like `wait_for_stop_signal`, but hands both user
/// signals to the caller instead of recording a snapshot request or ending
/// the run. The signals are blocked in every thread already
/// (`block_stop_signals`), so only the caller's `sigtimedwait` dequeues them:
/// the pipeline's snapshot machinery never sees them.
pub fn wait_for_stop_or_user_signal(timeout: Duration) -> Option<Collected> {
    let mut set = stop_signals();
    // SAFETY: sigaddset only writes the local set.
    unsafe {
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::sigaddset(&mut set, libc::SIGUSR2);
    }
    match timed_wait(&set, timeout) {
        libc::SIGUSR1 => Some(Collected::User1),
        libc::SIGUSR2 => Some(Collected::User2),
        s if s > 0 => Some(Collected::Stop(s)),
        _ => None,
    }
}

/// `sigtimedwait` for `set` up to `timeout`: the signal, or -1 when none
/// came.
fn timed_wait(set: &libc::sigset_t, timeout: Duration) -> libc::c_int {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: valid set and timeout; a null siginfo pointer is allowed.
    unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) }
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

/// The signal that wakes a measuring thread out of its wait when the run
/// stops (as cyclictest's `pthread_kill(thread, SIGTERM)`): a real-time
/// signal latscope uses for nothing else (the POSIX timers use SIGRTMIN+2),
/// thread-directed, with a handler that does nothing, installed without
/// SA_RESTART so that the interrupted wait (`clock_nanosleep`, `nanosleep`,
/// `sigtimedwait`, a timerfd's `read`) returns EINTR and the thread looks at
/// its stop flag. A period of any length (cyclictest takes -i 1000000000000)
/// then ends on a stop signal within a millisecond, and a short period's
/// loop is unchanged: nothing is added to it.
pub fn wake_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs the wake signal's handler (once per process; idempotent).
/// Call before starting the threads `wake_until` may wake.
pub fn install_wake_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask;
        // flags 0: no SA_RESTART, so the interrupted call returns EINTR.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_wake as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(wake_signal(), &act, std::ptr::null_mut());
        }
    });
}

/// Wakes the thread `tid` (of this process) with the wake signal every
/// millisecond until `finished` says it has ended: a signal that came just
/// before the thread went to sleep (after it last looked at its stop flag)
/// interrupts nothing, the next one does. `tid` 0 (not known yet) is never
/// signalled: that thread has not reached its wait and sees the stop flag
/// first. `finished` must turn true before the thread exits, so a tid is
/// never signalled once it may have been reused.
pub fn wake_until(tid: impl Fn() -> i32, finished: impl Fn() -> bool) {
    install_wake_handler();
    while !finished() {
        let t = tid();
        if t > 0 {
            // SAFETY: tgkill to a thread of this process that has not finished.
            unsafe {
                libc::syscall(
                    libc::SYS_tgkill,
                    libc::getpid(),
                    t as libc::c_long,
                    wake_signal() as libc::c_long,
                )
            };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
