//! The process latscope was started under, for `signal,pid=parent`.
//!
//! Recorded first thing at start (`record`): its pid and a pidfd of it.
//! Later, `getppid()` no longer names it once it has ended (latscope is
//! then adopted by a subreaper or init), and its pid may even belong to
//! another process by then; the pidfd names that one process for good:
//! a signal through it reaches the parent or nobody.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// The parent as recorded at start.
struct Parent {
    pid: libc::pid_t,
    /// None where the kernel has no pidfd_open (before Linux 5.3).
    pidfd: Option<OwnedFd>,
}

static PARENT: OnceLock<Parent> = OnceLock::new();

/// Why the parent was not signalled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParentSignalError {
    /// The process latscope started under has ended.
    #[error(
        "the process latscope started under (pid {started_under}) is gone (latscope's parent is now pid {now}): not sent"
    )]
    Gone {
        started_under: libc::pid_t,
        now: libc::pid_t,
    },
    #[error("pid {pid}: {reason}")]
    Refused { pid: libc::pid_t, reason: String },
}

/// Records the parent; call before anything can have outlived it (first
/// thing in `main`). Later calls keep the first record.
pub fn record() {
    PARENT.get_or_init(|| {
        // SAFETY: getppid cannot fail.
        let pid = unsafe { libc::getppid() };
        let pidfd = open_pidfd(pid);
        // The parent may have ended between the two calls: then the pidfd
        // (if any) names whoever has its pid now, or nothing.
        // SAFETY: getppid cannot fail.
        let pidfd = pidfd.filter(|_| unsafe { libc::getppid() } == pid);
        Parent { pid, pidfd }
    });
}

fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a fresh descriptor, owned by nobody else (close-on-exec).
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends `signal` to the process latscope was started under; its pid.
pub fn signal(signal: i32) -> Result<libc::pid_t, ParentSignalError> {
    record();
    let Some(parent) = PARENT.get() else {
        unreachable!("recorded just above");
    };
    // SAFETY: getppid cannot fail.
    let now = unsafe { libc::getppid() };
    let gone = ParentSignalError::Gone {
        started_under: parent.pid,
        now,
    };
    if now != parent.pid {
        return Err(gone);
    }
    // SAFETY: plain system calls; the pidfd is open, the pid above 0.
    let rc = unsafe {
        match &parent.pidfd {
            Some(fd) => libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            ) as i32,
            None => libc::kill(parent.pid, signal),
        }
    };
    if rc == 0 {
        return Ok(parent.pid);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ESRCH) {
        return Err(gone);
    }
    Err(ParentSignalError::Refused {
        pid: parent.pid,
        reason: crate::rt::os_error_text(&error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signal 0 checks without sending: the test runner is alive.
    #[test]
    fn the_parent_recorded_is_reached() {
        record();
        // SAFETY: getppid cannot fail.
        let ppid = unsafe { libc::getppid() };
        assert_eq!(signal(0), Ok(ppid));
    }

    #[test]
    fn a_gone_parent_is_said_in_one_line() {
        let gone = ParentSignalError::Gone {
            started_under: 4242,
            now: 1,
        };
        assert_eq!(
            gone.to_string(),
            "the process latscope started under (pid 4242) is gone (latscope's parent is now pid 1): not sent"
        );
    }
}
