//! Channels over file descriptors whose 8 bytes are the stamp itself (pipes,
//! unix-domain socket pairs, eventfds).
//!
//! One sample spans the poster's `write()` of the 8-byte stamp (native-endian
//! `u64`) to the return of the waiter's blocked `read()` of it. The three
//! primitives differ only in how their descriptors are created, so they share
//! this one channel: what the measurements compare is the kernel's wake-up
//! path of each primitive, not three slightly different loops around it.
//!
//! Without a timeout, `wait` is a single blocking `read()` (the measured call).
//! With one, it first waits for `POLLIN` with `ppoll` (nanosecond timeout,
//! where `poll` would round to milliseconds), recomputing the time left from a
//! CLOCK_MONOTONIC deadline when a signal interrupts it, then reads.
//!
//! Descriptors are `OwnedFd`s, created with close-on-exec and closed when the
//! channel is dropped. A forked child inherits them; it leaves with `_exit`
//! and never drops the channel. Nothing here has a name, so nothing can leak:
//! the kernel frees each object when the last process holding it is gone.

use super::{Channel, ChannelError, STOP_STAMP, SetupError, Wake};
use crate::rt::clock::Deadline;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

const STAMP_SIZE: usize = 8;

/// How the 8 bytes are written, and what they mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A pipe: the bytes are the stamp. `interrupt` uses a plain `write`: it
    /// cannot block, since at most one stamp and two stops (24 bytes) are ever
    /// in a pipe, and even a pipe shrunk to its minimum (one page, when the
    /// user's pipe-user-pages-soft is exhausted) holds 4096 bytes; writes this
    /// small are merged into the same page.
    Pipe,
    /// A socket: the bytes are the stamp, one message each; `interrupt` sends
    /// with `MSG_DONTWAIT`, so a full send buffer makes it give up, not wait.
    Socket,
    /// An eventfd counter: a write adds to it, a read returns it and resets it
    /// to 0. The stamp travels as `stamp + 1`, since adding 0 wakes nobody
    /// (the one-way hand-over posts 0); see `eventfd.rs` for why it can never
    /// overflow, so that a plain `write` never blocks.
    EventCounter,
}

impl Kind {
    #[inline]
    fn encode(self, stamp_ns: u64) -> u64 {
        match self {
            Kind::Pipe | Kind::Socket => stamp_ns,
            // At most STOP_STAMP + 1: a stamp at or above STOP_STAMP reads as
            // a stop, as it does on every other transport.
            Kind::EventCounter => stamp_ns.min(STOP_STAMP) + 1,
        }
    }

    #[inline]
    fn decode(self, value: u64) -> Wake {
        let stamp = match self {
            Kind::Pipe | Kind::Socket => value,
            // A blocking eventfd read never returns 0. Several writes pending
            // add up: with a stop among them the sum is above STOP_STAMP.
            Kind::EventCounter => value.saturating_sub(1),
        };
        if stamp >= STOP_STAMP {
            Wake::Interrupted
        } else {
            Wake::Message(stamp)
        }
    }
}

/// One direction of wake-up over descriptors: write to `write_fd`, read from
/// `read_fd`.
pub struct FdChannel {
    read_fd: OwnedFd,
    /// `None` when the read descriptor writes too (eventfd): one descriptor,
    /// owned once, closed once.
    write_fd: Option<OwnedFd>,
    kind: Kind,
}

impl FdChannel {
    /// A channel over two descriptors (pipe ends, socket pair ends).
    pub fn new(read_fd: OwnedFd, write_fd: OwnedFd, kind: Kind) -> FdChannel {
        FdChannel {
            read_fd,
            write_fd: Some(write_fd),
            kind,
        }
    }

    /// A channel over one descriptor that both reads and writes (eventfd).
    pub fn shared(fd: OwnedFd, kind: Kind) -> FdChannel {
        FdChannel {
            read_fd: fd,
            write_fd: None,
            kind,
        }
    }

    /// The raw (read, write) descriptors, equal for a shared one.
    pub fn raw_fds(&self) -> (RawFd, RawFd) {
        (self.read_fd.as_raw_fd(), self.write_raw())
    }

    #[inline]
    fn write_raw(&self) -> RawFd {
        self.write_fd.as_ref().unwrap_or(&self.read_fd).as_raw_fd()
    }

    /// Blocks in one `read()` for the next 8 bytes.
    #[inline]
    fn read_value(&self) -> Result<u64, ChannelError> {
        let mut buf = [0u8; STAMP_SIZE];
        loop {
            // SAFETY: `buf` is STAMP_SIZE writable bytes; the descriptor is
            // owned by `self` and open.
            let n = unsafe {
                libc::read(
                    self.read_fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    STAMP_SIZE,
                )
            };
            if n == STAMP_SIZE as isize {
                return Ok(u64::from_ne_bytes(buf));
            }
            if n == 0 {
                // Every write end is closed: no stamp can ever come.
                return Err(ChannelError {
                    call: "read (end of file)",
                    errno: libc::EPIPE,
                });
            }
            if n > 0 {
                return Err(ChannelError {
                    call: "read (short read)",
                    errno: libc::EBADMSG,
                });
            }
            let err = ChannelError::last("read");
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
    }

    /// Waits until the read end is readable (true) or `timeout` has passed
    /// (false).
    fn poll_readable(&self, timeout: Duration) -> Result<bool, ChannelError> {
        let deadline = Deadline::after(timeout);
        let mut pfd = libc::pollfd {
            fd: self.read_fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            let ts = deadline.left();
            // SAFETY: one valid pollfd, a valid relative timeout, and no
            // signal mask (null: ppoll then behaves as poll).
            let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
            if rc > 0 {
                // POLLIN, or POLLHUP/POLLERR: the read reports what it is.
                return Ok(true);
            }
            if rc == 0 {
                if deadline.passed() {
                    return Ok(false);
                }
                continue;
            }
            let err = ChannelError::last("poll");
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
    }
}

impl Channel for FdChannel {
    #[inline]
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
        let bytes = self.kind.encode(stamp_ns).to_ne_bytes();
        loop {
            // SAFETY: `bytes` is STAMP_SIZE readable bytes; the descriptor is
            // owned by `self` and open.
            let n = unsafe { libc::write(self.write_raw(), bytes.as_ptr().cast(), STAMP_SIZE) };
            if n == STAMP_SIZE as isize {
                return Ok(());
            }
            if n >= 0 {
                // Cannot happen: pipe writes up to PIPE_BUF are atomic,
                // socket messages and eventfd writes are all or nothing.
                return Err(ChannelError {
                    call: "write (short write)",
                    errno: libc::EIO,
                });
            }
            let err = ChannelError::last("write");
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
    }

    #[inline]
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
        if let Some(timeout) = timeout
            && !self.poll_readable(timeout)?
        {
            return Ok(Wake::TimedOut);
        }
        Ok(self.kind.decode(self.read_value()?))
    }

    fn interrupt(&self) {
        let bytes = self.kind.encode(STOP_STAMP).to_ne_bytes();
        loop {
            // SAFETY: `bytes` is STAMP_SIZE readable bytes; the descriptor is
            // owned by `self` and open. Neither call can block (see `Kind`).
            let n = unsafe {
                match self.kind {
                    Kind::Socket => libc::send(
                        self.write_raw(),
                        bytes.as_ptr().cast(),
                        STAMP_SIZE,
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    ),
                    Kind::Pipe | Kind::EventCounter => {
                        libc::write(self.write_raw(), bytes.as_ptr().cast(), STAMP_SIZE)
                    }
                }
            };
            // On any failure but a signal, give up: a full buffer means the
            // waiter has wake-ups pending anyway.
            if n >= 0 || ChannelError::last("write").errno != libc::EINTR {
                return;
            }
        }
    }
}

/// Why creating descriptors (`what`: "a pipe") failed, from `errno`, with
/// the fix for the usual causes.
pub fn creation_error(what: &str) -> SetupError {
    let err = std::io::Error::last_os_error();
    let hint = match err.raw_os_error() {
        Some(libc::EMFILE) => " (too many open files: use fewer pairs, or raise ulimit -n)",
        Some(libc::ENFILE) => " (system-wide file limit reached, see /proc/sys/fs/file-max)",
        Some(libc::ENOSYS) => " (the kernel is built without it)",
        _ => "",
    };
    SetupError::of_creation(&err, format!("could not create {what}: {err}{hint}"))
}

/// The descriptors a creating call (`pipe2`, `socketpair`, `eventfd`) put
/// in `fds`, owned; or, when the call failed (`created` false), why
/// (`creation_error` of `what`, from the `errno` it left).
///
/// # Safety
/// When `created`, every one of `fds` is a fresh descriptor nothing else
/// owns.
pub unsafe fn adopt<const N: usize>(
    created: bool,
    fds: [RawFd; N],
    what: &str,
) -> Result<[OwnedFd; N], SetupError> {
    if !created {
        return Err(creation_error(what));
    }
    // SAFETY: fresh descriptors nothing else owns (the caller's promise).
    Ok(fds.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    /// A pipe's (read, write) ends.
    fn raw_pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors, owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Checks, in a forked child, that a channel made by `make` has
    /// close-on-exec descriptors and that dropping it closes them.
    ///
    /// In a child because it is sound there: the child has only this thread,
    /// so nothing can reuse a closed descriptor number before `fcntl` looks at
    /// it. In the test process, a test running in parallel could open a
    /// descriptor with the same number in between. The child only makes and
    /// drops the channel and calls `fcntl` (no allocation on success).
    pub fn check_closed_on_drop(make: fn() -> Result<FdChannel, SetupError>) {
        // SAFETY: the child runs only allocation-free code, then `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = (|| {
                let Ok(channel) = make() else { return 2 };
                let (read, write) = channel.raw_fds();
                for fd in [read, write] {
                    // SAFETY: fcntl on a descriptor number has no other effect.
                    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                    if flags < 0 || flags & libc::FD_CLOEXEC == 0 {
                        return 3;
                    }
                }
                drop(channel);
                for fd in [read, write] {
                    // SAFETY: as above.
                    let rc = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                    let errno = std::io::Error::last_os_error().raw_os_error();
                    if rc != -1 || errno != Some(libc::EBADF) {
                        return 4;
                    }
                }
                0
            })();
            // SAFETY: leave without running anything of the test process.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status:#x} (2: make failed, 3: not close-on-exec, 4: still open after drop)"
        );
    }

    fn pipe_channel() -> Result<FdChannel, SetupError> {
        let (read, write) = raw_pipe();
        Ok(FdChannel::new(read, write, Kind::Pipe))
    }

    #[test]
    fn descriptors_closed_on_drop() {
        check_closed_on_drop(pipe_channel);
    }

    #[test]
    fn stamps_in_order_then_stop() {
        let channel = pipe_channel().unwrap();
        channel.post(0).unwrap();
        channel.post(STOP_STAMP - 1).unwrap();
        channel.interrupt();
        channel.interrupt();
        assert_eq!(channel.wait(None).unwrap(), Wake::Message(0));
        assert_eq!(
            channel.wait(Some(Duration::from_secs(5))).unwrap(),
            Wake::Message(STOP_STAMP - 1)
        );
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
        assert_eq!(channel.wait(Some(Duration::ZERO)).unwrap(), Wake::TimedOut);
    }

    #[test]
    fn short_read_and_end_of_file_are_errors() {
        let channel = pipe_channel().unwrap();
        let (_, write) = channel.raw_fds();
        // SAFETY: 4 bytes from a valid buffer to our own pipe.
        assert_eq!(
            unsafe { libc::write(write, [1u8; 4].as_ptr().cast(), 4) },
            4
        );
        let err = channel.wait(Some(Duration::from_secs(5))).unwrap_err();
        assert_eq!(err.call, "read (short read)");

        // Reads from a pipe whose only write end is gone.
        let (read, write) = raw_pipe();
        let (_, other_write) = raw_pipe();
        drop(write);
        let channel = FdChannel::new(read, other_write, Kind::Pipe);
        let err = channel.wait(None).unwrap_err();
        assert_eq!(err.call, "read (end of file)");
        let err = channel.wait(Some(Duration::from_secs(5))).unwrap_err();
        assert_eq!(err.call, "read (end of file)");
    }

    #[test]
    fn eventfd_encoding_keeps_zero_and_stops_above() {
        let kind = Kind::EventCounter;
        for stamp in [0, 1, STOP_STAMP - 1] {
            assert_eq!(kind.decode(kind.encode(stamp)), Wake::Message(stamp));
        }
        let stop = kind.encode(STOP_STAMP);
        assert_eq!(kind.decode(stop), Wake::Interrupted);
        assert_eq!(kind.encode(u64::MAX), stop);
        // Sums of what can be pending at once: a stamp and up to two stops.
        let top = kind.encode(STOP_STAMP - 1);
        assert_eq!(kind.decode(top + stop), Wake::Interrupted);
        assert_eq!(kind.decode(kind.encode(0) + stop), Wake::Interrupted);
        assert!(top.checked_add(2 * stop).unwrap() < u64::MAX - 1);
    }
}
