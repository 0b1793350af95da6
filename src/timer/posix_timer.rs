//! A POSIX interval timer that signals only the thread that created it
//! (`timer_create` with SIGEV_THREAD_ID), taken there with `sigwait`: the
//! wake method of cyclictest's `-x` and of `latscope timer --posix-timer`.
//! The signal is a real-time one latscope uses for nothing else, blocked in
//! the waiting thread; being thread-directed, no other thread ever sees it
//! (so it never reaches the main thread's stop-signal wait).

use crate::rt::clock::timespec;

/// The signal the timer sends.
fn timer_signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// The calling thread's timer; deleted on drop.
pub struct PosixTimer {
    id: libc::timer_t,
    set: libc::sigset_t,
}

impl PosixTimer {
    /// Blocks the timer's signal in the calling thread and creates a timer
    /// on `clock` that signals this thread.
    pub fn for_this_thread(clock: libc::clockid_t) -> Result<PosixTimer, String> {
        // SAFETY: sigset operations on a local set; the mask changes only in
        // the calling thread.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, timer_signal());
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            set
        };
        // SAFETY: sigevent is plain data, zeroed then filled.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = timer_signal();
        // SAFETY: gettid has no preconditions.
        sev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid sigevent and output pointer.
        if unsafe { libc::timer_create(clock, &mut sev, &mut id) } != 0 {
            return Err(format!(
                "timer_create failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(PosixTimer { id, set })
    }

    /// Starts the timer: first expiry `first_ns` (absolute time of the
    /// clock, or relative to now when `absolute` is false), then every
    /// `period_ns`.
    pub fn arm(&self, first_ns: u64, period_ns: u64, absolute: bool) -> Result<(), String> {
        let spec = libc::itimerspec {
            it_interval: timespec(period_ns),
            it_value: timespec(first_ns),
        };
        let flags = if absolute { libc::TIMER_ABSTIME } else { 0 };
        // SAFETY: valid timer and spec; a null old-value pointer is allowed.
        if unsafe { libc::timer_settime(self.id, flags, &spec, std::ptr::null_mut()) } != 0 {
            return Err(format!(
                "timer_settime failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Blocks until the timer's signal comes (no allocation); the error is
    /// the error number: EINTR when the thread was woken
    /// (rt::signals::wake_signal), which glibc's `sigwait` would retry.
    #[inline]
    pub fn wait(&self) -> Result<(), i32> {
        self.wait_at_most(None).map(|_| ())
    }

    /// `wait` for at most `timeout` (None: no limit): true when the timer
    /// fired, false when the timeout passed first.
    #[inline]
    pub fn wait_at_most(&self, timeout: Option<&libc::timespec>) -> Result<bool, i32> {
        let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: valid set; a null siginfo and a null timeout are allowed.
        if unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), timeout) } > 0 {
            return Ok(true);
        }
        match std::io::Error::last_os_error().raw_os_error().unwrap_or(0) {
            libc::EAGAIN => Ok(false),
            e => Err(e),
        }
    }

    /// Expiries that passed while the last signal was pending.
    #[inline]
    pub fn overruns(&self) -> u64 {
        // SAFETY: valid timer.
        unsafe { libc::timer_getoverrun(self.id) }.max(0) as u64
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the timer was created by timer_create and is deleted once.
        unsafe { libc::timer_delete(self.id) };
    }
}
