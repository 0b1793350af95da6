//! eventfd counters: the stamp travels in the counter itself.
//!
//! One sample spans the poster's `write()` of the stamp to the return of the
//! waiter's blocked `read()` of it. Each channel is its own
//! `eventfd(0, EFD_CLOEXEC)`, read and written through the same descriptor
//! (owned once by the channel, closed once). A forked child inherits it.
//!
//! Why the counter can carry a stamp: a write adds its value to the counter,
//! and a read returns the counter and resets it to 0. With exactly one wake-up
//! in flight per channel, the counter is 0 before each real write, so the
//! read returns what was written. What is written is `stamp + 1` (see
//! `fd::Kind::EventCounter`): adding 0 would wake nobody, and the one-way
//! hand-over posts the stamp 0.
//!
//! Why a stop is safe: `interrupt` adds the encoded STOP_STAMP (2^62 + 1), so
//! a read that finds a stop in the sum (a pending stamp plus stops) returns a
//! value above 2^62 and means "stop". At most one real stamp (at most
//! 2^62 + 1 encoded) and two stops are ever pending on a channel, a sum of at
//! most 3 * 2^62 + 3, far below the eventfd maximum 2^64 - 2. A write that
//! would pass that maximum is the only way an eventfd write blocks, so
//! `interrupt` can use a plain `write()` and still never block.

use super::fd::{FdChannel, Kind, adopt};
use super::{AnonymousPairs, SetupError};

/// The eventfd transport. Nothing named: descriptors only.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "eventfd",
        describe: "eventfd, write -> read",
        channel: |_across_processes| Ok(Box::new(channel()?)),
    }
}

/// A new eventfd, counter 0, that both reads and writes.
fn channel() -> Result<FdChannel, SetupError> {
    // SAFETY: plain syscall; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    // SAFETY: once created, a fresh descriptor that nothing else owns.
    let [fd] = unsafe { adopt(fd >= 0, [fd], "an eventfd") }?;
    Ok(FdChannel::shared(fd, Kind::EventCounter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::{Channel, STOP_STAMP, Wake};
    use std::time::Duration;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&transport());
    }

    #[test]
    fn descriptor_closes_on_exec_and_on_drop() {
        crate::ipc::fd::tests::check_closed_on_drop(channel);
    }

    #[test]
    fn one_descriptor_reads_and_writes() {
        let channel = channel().unwrap();
        let (read, write) = channel.raw_fds();
        assert_eq!(read, write);
    }

    #[test]
    fn stamp_zero_and_the_largest_stamp_travel() {
        let channel = channel().unwrap();
        for stamp in [0, 1, STOP_STAMP - 1] {
            channel.post(stamp).unwrap();
            assert_eq!(channel.wait(None).unwrap(), Wake::Message(stamp));
        }
        // A stamp at or above STOP_STAMP reads as a stop, as on other transports.
        channel.post(u64::MAX).unwrap();
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
    }

    #[test]
    fn stops_added_to_a_pending_stamp_stop_and_never_block() {
        let channel = channel().unwrap();
        // The most that can be pending: the largest stamp and two stops. If a
        // write would overflow the counter, `interrupt` would block here.
        channel.post(STOP_STAMP - 1).unwrap();
        channel.interrupt();
        channel.interrupt();
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
        // The read reset the counter: the channel works again.
        assert_eq!(
            channel.wait(Some(Duration::from_millis(1))).unwrap(),
            Wake::TimedOut
        );
        channel.interrupt();
        channel.post(3).unwrap();
        assert_eq!(channel.wait(None).unwrap(), Wake::Interrupted);
        channel.post(4).unwrap();
        assert_eq!(channel.wait(None).unwrap(), Wake::Message(4));
    }
}
