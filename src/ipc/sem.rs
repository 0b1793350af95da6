//! POSIX unnamed semaphores: one sample spans `sem_post` in the poster to the
//! return of `sem_wait` in the waiter (glibc: an atomic increment, plus
//! FUTEX_WAKE when the waiter sleeps, then its return from FUTEX_WAIT).
//! The stamp itself travels through the `SlotChannel` slot.
//!
//! The `sem_t` is unnamed and lives in its own `MAP_SHARED` mapping
//! (`SharedBox`): it never moves (glibc keeps futex words inside it), a forked
//! child sees the same object, and there is no name in /dev/shm that a killed
//! run could leave behind. It is initialised process-shared only when a child
//! will use it, so a threads-only run gets glibc's private (cheaper) futex
//! path. A semaphore counts, so the stop ring of `interrupt` always finds room
//! next to a real post and never blocks.

use super::in_place::InPlace;
use super::slot::{Doorbell, SlotChannel};
use super::{AnonymousPairs, ChannelError, SetupError};
use crate::rt::clock::realtime_deadline;
use std::time::Duration;

/// The sem transport. Unnamed and in anonymous memory: no kernel object has a name.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "sem",
        describe: "POSIX semaphore, sem_post -> sem_wait",
        channel: |across_processes| {
            Ok(Box::new(SlotChannel::new(Semaphore::new(
                across_processes,
            )?)?))
        },
    }
}

/// An initialised semaphore at a fixed address; destroyed on drop.
struct Semaphore {
    sem: InPlace<libc::sem_t>,
}

impl Semaphore {
    fn new(across_processes: bool) -> Result<Semaphore, SetupError> {
        // SAFETY: an all-zero `sem_t` is only storage; sem_init below sets it up.
        let sem = unsafe { InPlace::zeroed() }?;
        // SAFETY: the sem_t is in its final place (it never moves) and not
        // yet used by anyone.
        let rc = unsafe { libc::sem_init(sem.ptr(), across_processes as libc::c_int, 0) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            let hint = if err.raw_os_error() == Some(libc::ENOSYS) {
                " (kernel or libc built without process-shared semaphores)"
            } else {
                ""
            };
            // Not initialised, so not destroyed: the SharedBox just unmaps it.
            return Err(SetupError::of_creation(
                &err,
                format!("could not create a POSIX semaphore: {err}{hint}"),
            ));
        }
        Ok(Semaphore { sem })
    }

    fn ptr(&self) -> *mut libc::sem_t {
        self.sem.ptr()
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once. A forked child never
        // drops it (it leaves with _exit), and the parent drops the channels
        // only after the run, when nobody waits on it any more.
        unsafe { libc::sem_destroy(self.ptr()) };
    }
}

impl Doorbell for Semaphore {
    #[inline]
    fn ring(&self) -> Result<(), ChannelError> {
        // SAFETY: an initialised semaphore.
        if unsafe { libc::sem_post(self.ptr()) } == 0 {
            Ok(())
        } else {
            Err(ChannelError::last("sem_post"))
        }
    }

    #[inline]
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError> {
        // Absolute, so retries after EINTR do not stretch the wait.
        // sem_timedwait only takes CLOCK_REALTIME deadlines.
        let deadline = timeout.map(realtime_deadline);
        loop {
            // SAFETY: an initialised semaphore and a valid timespec.
            let rc = unsafe {
                match &deadline {
                    None => libc::sem_wait(self.ptr()),
                    Some(ts) => libc::sem_timedwait(self.ptr(), ts),
                }
            };
            if rc == 0 {
                return Ok(true);
            }
            let err = ChannelError::last(if deadline.is_some() {
                "sem_timedwait"
            } else {
                "sem_wait"
            });
            match err.errno {
                libc::EINTR => continue,
                libc::ETIMEDOUT => return Ok(false),
                _ => return Err(err),
            }
        }
    }
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
    fn private_and_process_shared_semaphores_both_work() {
        for across in [false, true] {
            let pair = transport().open_pair(0, across).expect("open");
            assert!(pair.resource_names.is_empty());
            crate::ipc::slot::tests::check_echo(&pair);
            // Rings count: a post and a stop both stay pending.
            pair.test.post(5).unwrap();
            pair.test.interrupt();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Interrupted);
            assert_eq!(
                pair.sync.wait(Some(Duration::from_millis(5))).unwrap(),
                Wake::TimedOut
            );
        }
    }
}
