//! POSIX thread mutexes, as rt-tests' ptsematest uses them: one sample spans
//! `pthread_mutex_unlock` in the poster to the return of `pthread_mutex_lock`
//! in the waiter (glibc: an atomic exchange, plus FUTEX_WAKE when the lock is
//! contended, then the waiter's return from FUTEX_WAIT and its own exchange).
//! The stamp travels through the `SlotChannel` slot.
//!
//! The mutex is used as ptsematest uses it: as a binary semaphore. It starts
//! locked; `block` locks it (and so sleeps until someone unlocks it), `ring`
//! unlocks it, from whichever task posts. That is an unlock by a task that
//! does not own the mutex, which POSIX leaves undefined in general but which
//! glibc defines for the default (normal, non-robust, non-PI) type: no owner
//! check, only the lock word and a wake. ptsematest's figures are those of
//! this very path, so latscope takes the same one (an error-checking, robust
//! or priority-inheritance mutex would refuse it, or measure something else).
//!
//! Two unlocks before a lock (a post and the stop) merge into one, which
//! `Channel::interrupt` allows: the stop flag is read after every wake-up.
//! The `pthread_mutex_t` lives in its own `MAP_SHARED` mapping (it never
//! moves, and a forked child sees the same one); it is process-shared only
//! when a child will use it, so a threads-only run gets glibc's private
//! futex path, as ptsematest (threads only) does.

use super::in_place::InPlace;
use super::slot::{Doorbell, SlotChannel};
use super::{AnonymousPairs, ChannelError, SetupError};
use crate::rt::clock::realtime_deadline;
use std::time::Duration;

/// The mutex transport. In anonymous memory: no kernel object has a name.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "mutex",
        describe: "pthread mutex, pthread_mutex_unlock -> pthread_mutex_lock",
        channel: |across_processes| Ok(Box::new(SlotChannel::new(Mutex::new(across_processes)?)?)),
    }
}

/// An initialised mutex at a fixed address, locked until first rung.
struct Mutex {
    mutex: InPlace<libc::pthread_mutex_t>,
}

/// A pthread call's result (they return the error number, errno is untouched).
fn checked(call: &'static str, rc: libc::c_int) -> Result<(), ChannelError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(ChannelError { call, errno: rc })
    }
}

impl Mutex {
    fn new(across_processes: bool) -> Result<Mutex, SetupError> {
        let failed = |call: &str, rc: libc::c_int| {
            let err = std::io::Error::from_raw_os_error(rc);
            SetupError::of_creation(
                &err,
                format!("could not create a pthread mutex: {call}: {err}"),
            )
        };
        // SAFETY: all-zero bytes are only storage; pthread_mutex_init below
        // sets the mutex up in its final place.
        let mutex = unsafe { InPlace::zeroed() }?;
        // SAFETY: the attribute object is initialised before use and
        // destroyed after; the mutex is in its final place and unused.
        let rc = unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            let rc = libc::pthread_mutexattr_init(&mut attr);
            if rc != 0 {
                return Err(failed("pthread_mutexattr_init", rc));
            }
            let shared = if across_processes {
                libc::PTHREAD_PROCESS_SHARED
            } else {
                libc::PTHREAD_PROCESS_PRIVATE
            };
            let mut rc = libc::pthread_mutexattr_setpshared(&mut attr, shared);
            if rc == 0 {
                rc = libc::pthread_mutex_init(mutex.ptr(), &attr);
            }
            libc::pthread_mutexattr_destroy(&mut attr);
            rc
        };
        if rc != 0 {
            // Not initialised, so not destroyed: the SharedBox just unmaps it.
            return Err(failed("pthread_mutex_init", rc));
        }
        let mutex = Mutex { mutex };
        // Locked from the start, as ptsematest's main thread locks it: the
        // first `block` then waits for the first ring. Uncontended, it
        // cannot fail on a fresh normal mutex.
        // SAFETY: an initialised mutex.
        let rc = unsafe { libc::pthread_mutex_lock(mutex.ptr()) };
        if rc != 0 {
            return Err(failed("pthread_mutex_lock", rc));
        }
        Ok(mutex)
    }

    fn ptr(&self) -> *mut libc::pthread_mutex_t {
        self.mutex.ptr()
    }
}

impl Drop for Mutex {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once, when nobody waits on
        // it any more (a forked child never drops it: it leaves with _exit).
        // glibc answers EBUSY when locks and unlocks did not pair up (a stop
        // unlock merged with a post): a normal mutex holds no resource, so
        // there is nothing to leak and the mapping is freed all the same.
        unsafe { libc::pthread_mutex_destroy(self.ptr()) };
    }
}

impl Doorbell for Mutex {
    #[inline]
    fn ring(&self) -> Result<(), ChannelError> {
        // SAFETY: an initialised normal mutex (see the module comment on
        // unlocking from a task that did not lock it).
        checked("pthread_mutex_unlock", unsafe {
            libc::pthread_mutex_unlock(self.ptr())
        })
    }

    #[inline]
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError> {
        let Some(timeout) = timeout else {
            // SAFETY: an initialised mutex. A normal mutex has no deadlock
            // check: locking it again in the task that locked it last just
            // sleeps until the next unlock, which is the point.
            return checked("pthread_mutex_lock", unsafe {
                libc::pthread_mutex_lock(self.ptr())
            })
            .map(|()| true);
        };
        // pthread_mutex_timedlock takes an absolute CLOCK_REALTIME deadline
        // and retries EINTR by itself.
        let deadline = realtime_deadline(timeout);
        // SAFETY: an initialised mutex and a valid timespec.
        match unsafe { libc::pthread_mutex_timedlock(self.ptr(), &deadline) } {
            0 => Ok(true),
            libc::ETIMEDOUT => Ok(false),
            rc => Err(ChannelError {
                call: "pthread_mutex_timedlock",
                errno: rc,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&transport());
    }

    #[test]
    fn private_and_process_shared_mutexes_both_work() {
        crate::ipc::slot::tests::check_rings_do_not_count(&transport());
    }
}
