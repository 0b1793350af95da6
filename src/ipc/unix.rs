//! Unix-domain socket pairs: the stamp travels as one 8-byte message.
//!
//! One sample spans the poster's `write()` on one end to the return of the
//! waiter's blocked `read()` on the other (on a socket these are `send` and
//! `recv` without flags; `write`/`read` let pipes, sockets and eventfds share
//! one channel, `fd::FdChannel`). Each channel is its own
//! `socketpair(AF_UNIX, SOCK_SEQPACKET)`: a sequenced-packet socket keeps
//! message boundaries (one read, one stamp) on a connected pair, and a pair
//! has no address, so no socket file in the filesystem that could be left
//! behind. Only one direction of each pair is used, so the two channels of a
//! pair never share a buffer or a wait queue. A forked child inherits both
//! ends. `interrupt` sends with `MSG_DONTWAIT` and gives up on a full buffer.

use super::fd::{FdChannel, Kind, adopt};
use super::{AnonymousPairs, SetupError};

/// The unix transport. Nothing named: the pairs have no address.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "unix",
        describe: "unix-domain socket pair, send -> recv",
        channel: |_across_processes| Ok(Box::new(channel()?)),
    }
}

/// A new connected socket pair: write to one end, read from the other.
fn channel() -> Result<FdChannel, SetupError> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair returns.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    // SAFETY: once created, two fresh descriptors that nothing else owns.
    let [write, read] = unsafe { adopt(rc == 0, fds, "a unix socket pair") }?;
    Ok(FdChannel::new(read, write, Kind::Socket))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::{Channel, Wake};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&transport());
    }

    #[test]
    fn descriptors_close_on_exec_and_on_drop() {
        crate::ipc::fd::tests::check_closed_on_drop(channel);
    }

    #[test]
    fn messages_keep_their_boundaries() {
        let channel = channel().unwrap();
        channel.post(0).unwrap();
        channel.post(5).unwrap();
        channel.interrupt();
        assert_eq!(channel.wait(None).unwrap(), Wake::Message(0));
        assert_eq!(channel.wait(None).unwrap(), Wake::Message(5));
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
    }

    #[test]
    fn interrupt_never_blocks_on_a_full_buffer() {
        let channel = Arc::new(channel().unwrap());
        let (_, write) = channel.raw_fds();
        let small: libc::c_int = 1;
        // SAFETY: a valid int option value for our own socket; the kernel
        // raises it to its minimum.
        unsafe {
            libc::setsockopt(
                write,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&small as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // Fill the buffer with messages nobody reads.
        let mut sent = 0;
        loop {
            let bytes = 1u64.to_ne_bytes();
            // SAFETY: 8 readable bytes to our own socket.
            let n = unsafe { libc::send(write, bytes.as_ptr().cast(), 8, libc::MSG_DONTWAIT) };
            if n < 0 {
                let errno = std::io::Error::last_os_error().raw_os_error();
                assert_eq!(errno, Some(libc::EAGAIN));
                break;
            }
            sent += 1;
            assert!(sent < 1_000_000, "the buffer never filled");
        }
        crate::ipc::slot::tests::check_interrupt_returns(&channel, "a full socket buffer");
        // The queued messages are all there, and nothing else.
        for _ in 0..sent {
            assert_eq!(channel.wait(None).unwrap(), Wake::Message(1));
        }
        assert_eq!(channel.wait(Some(Duration::ZERO)).unwrap(), Wake::TimedOut);
    }
}
