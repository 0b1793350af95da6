//! Senders in child processes (`--fork`): the fork, the child's life, and the
//! parent's view of it (dead-child detection, reaping).

use super::live::SetupStep;
use super::sender::sender_task;
use super::state::{RunState, TaskContext};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a sender process gets to leave by itself after the stop.
const SENDER_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Forks the sender of one pair. The child sets itself up and runs
/// `sender_task` on the inherited channels and shared memory, then leaves
/// with `_exit` (no destructor, no atexit handler, no flush of the parent's
/// buffers). It dies with this thread (`PR_SET_PDEATHSIG`), so a killed
/// latscope leaves no child.
pub(super) fn fork_sender(ctx: &TaskContext) -> Result<libc::pid_t, String> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: this process has no other thread now (see `start::start_tasks`),
    // and the child runs only allocation-free code before `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "could not fork a peer process: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid > 0 {
        return Ok(pid);
    }
    // The child.
    // SAFETY: plain prctl/getppid calls.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            // The parent is already gone.
            libc::_exit(0);
        }
    }
    if ctx.plan.lock_memory {
        // SAFETY: plain syscall.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            ctx.live()
                .sender
                .setup
                .report(Err((SetupStep::LockMemory, errno)));
            // SAFETY: leave without running anything of the parent's.
            unsafe { libc::_exit(1) };
        }
    }
    sender_task(ctx);
    // SAFETY: as above.
    unsafe { libc::_exit(0) }
}

/// A sender that runs in a child process.
pub(super) struct SenderProcess {
    pub(super) pid: libc::pid_t,
    reaped: bool,
    /// How it ended, once seen (reported once).
    ended: Option<String>,
    /// Checks in a row that saw the child stopped (SIGSTOP, SIGTSTP, ...).
    stopped_checks: u32,
    /// Reported stopped (once); killed at the reap.
    stopped: bool,
}

/// Monitor checks in a row (100 ms apart) that must see a sender stopped
/// before the run ends: Ctrl-Z and `fg` stop and continue latscope and its
/// children together, and the monitor may run a moment before a child is
/// continued.
const STOPPED_CHECKS: u32 = 2;

impl SenderProcess {
    pub(super) fn new(pid: libc::pid_t) -> SenderProcess {
        SenderProcess {
            pid,
            reaped: false,
            ended: None,
            stopped_checks: 0,
            stopped: false,
        }
    }

    /// The signal that stopped the child, the first time it is seen stopped
    /// on `STOPPED_CHECKS` checks in a row. A stopped sender answers nothing: its pair measures nothing and its
    /// receiver misses every period until the end, so the run must not go on
    /// as if it were measuring. `WNOWAIT` leaves the state to be seen again.
    pub(super) fn newly_stopped(&mut self) -> Option<i32> {
        if self.reaped || self.stopped || self.ended.is_some() {
            return None;
        }
        let Some(info) = self
            .peek(libc::WSTOPPED)
            .filter(|i| i.si_code == libc::CLD_STOPPED)
        else {
            self.stopped_checks = 0;
            return None;
        };
        self.stopped_checks += 1;
        if self.stopped_checks < STOPPED_CHECKS {
            return None;
        }
        self.stopped = true;
        // SAFETY: as above.
        Some(unsafe { info.si_status() })
    }

    /// The child's state change of kind `which` (`WSTOPPED`, `WEXITED`), if
    /// it has one, left to be seen again (`WNOWAIT`) and never waited for.
    fn peek(&self, which: libc::c_int) -> Option<libc::siginfo_t> {
        // SAFETY: zeroed siginfo is a valid out value; our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                which | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info`; si_pid 0 means no such change yet.
        (rc == 0 && unsafe { info.si_pid() } != 0).then_some(info)
    }

    /// How the child ended, the first time it is seen to have ended. The
    /// child is left a zombie (`WNOWAIT`): its pid stays ours until `reap`,
    /// so a stop that still signals it (signal channels) can never reach an
    /// unrelated process that got the pid.
    pub(super) fn newly_ended(&mut self) -> Option<String> {
        if self.reaped || self.ended.is_some() {
            return None;
        }
        let info = self.peek(libc::WEXITED)?;
        // SAFETY: `peek` returns only a siginfo waitid filled for the child.
        let status = unsafe { info.si_status() };
        let how = match info.si_code {
            libc::CLD_EXITED => format!("exited with status {status}"),
            _ => format!("was killed by signal {status}"),
        };
        self.ended = Some(how.clone());
        Some(how)
    }

    /// Waits for the child to leave after a stop, killing it if it does not,
    /// and reaps it.
    pub(super) fn reap(&mut self) {
        if self.reaped {
            return;
        }
        if self.stopped {
            // A stopped child cannot leave by itself: no grace period that
            // would only make the run last longer than asked.
            // SAFETY: our own, not yet reaped child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        let deadline = Instant::now() + SENDER_EXIT_GRACE;
        loop {
            // SAFETY: our own, not yet reaped child (the pid cannot be reused).
            let rc = unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), libc::WNOHANG) };
            if rc == self.pid || rc < 0 {
                break;
            }
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, std::ptr::null_mut(), 0);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.reaped = true;
    }
}

/// Turns a sender's error, or the death or stop of a sender process, into the
/// run's error (the samples so far are reported).
pub(super) fn check_senders(state: &RunState, processes: &mut [(usize, SenderProcess)]) {
    for (i, live) in state.live.iter().enumerate() {
        if let Some(e) = live.sender.error.load()
            && state.error.get().is_none()
        {
            state.fail(format!("pair {i}: {e}"));
        }
    }
    for (i, p) in processes {
        if let Some(how) = p.newly_ended() {
            let finished = state.live[*i].sender.done.load(Ordering::Acquire);
            if !finished && state.error.get().is_none() {
                state.fail(format!(
                    "pair {i}: peer process {} {how}; results so far are reported",
                    p.pid
                ));
            }
        }
        if let Some(signal) = p.newly_stopped()
            && state.error.get().is_none()
        {
            state.fail(format!(
                "pair {i}: peer process {} was stopped by signal {signal} and answers no more; \
                 results so far are reported, the periods it held up counted as overruns",
                p.pid
            ));
        }
    }
}
