//! Pipes (the classic wake-up of ipc-bench and friends): the stamp travels as
//! the 8 bytes written into the pipe.
//!
//! One sample spans the poster's `write()` to the return of the waiter's
//! blocked `read()`. Each channel is its own `pipe2(O_CLOEXEC)`, so the two
//! directions of a pair never share a buffer or a wait queue. A pipe has no
//! name and dies with the last process holding it: nothing can leak. A forked
//! child inherits both ends.

use super::fd::{FdChannel, Kind, adopt};
use super::{AnonymousPairs, SetupError};

/// The pipe transport. Nothing named: descriptors only.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "pipe",
        describe: "pipe, write -> read",
        channel: |_across_processes| Ok(Box::new(channel()?)),
    }
}

/// A new pipe: write to one end, read from the other.
fn channel() -> Result<FdChannel, SetupError> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    let created = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0;
    // SAFETY: once created, two fresh descriptors that nothing else owns.
    let [read, write] = unsafe { adopt(created, fds, "a pipe") }?;
    Ok(FdChannel::new(read, write, Kind::Pipe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::Transport;
    use crate::ipc::Wake;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&transport());
    }

    #[test]
    fn descriptors_close_on_exec_and_on_drop() {
        crate::ipc::fd::tests::check_closed_on_drop(channel);
    }

    #[test]
    fn stamp_zero_travels_and_interrupt_wakes() {
        let pair = transport().open_pair(0, false).expect("pipes");
        pair.sync.post(0).unwrap();
        assert_eq!(pair.sync.wait(None).unwrap(), Wake::Message(0));
        pair.test.interrupt();
        assert_eq!(pair.test.wait(None).unwrap(), Wake::Interrupted);
        assert!(pair.resource_names.is_empty());
    }
}
