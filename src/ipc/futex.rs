//! Raw futexes, the kernel primitive under every glibc lock and semaphore: one
//! sample spans the poster's store of the futex word plus `FUTEX_WAKE` to the
//! return of `FUTEX_WAIT` in the waiter. The stamp travels through the
//! `SlotChannel` slot.
//!
//! The doorbell is a one-bit flag: 1 = rung, 0 = not. `ring` sets it and
//! always wakes (no "is anyone waiting" bookkeeping, so every sample pays the
//! same syscall); `block` takes the flag with a swap and sleeps only while it
//! reads 0 — the kernel re-checks the word under its own lock, so a ring that
//! lands between the swap and the sleep makes FUTEX_WAIT return EAGAIN instead
//! of being lost. Two rings before a wait (a post and the stop) merge into
//! one, which `Channel::interrupt` allows: the stop flag is read after every
//! wake-up.
//!
//! The word lives in a `MAP_SHARED` mapping so it is the same word after
//! `fork()`. Between threads the futex ops carry FUTEX_PRIVATE_FLAG (the kernel
//! keys the futex by address in this process, no page lookup); across
//! processes they must not, so that parent and child reach the same futex.

use super::slot::{Doorbell, SlotChannel};
use super::{AnonymousPairs, ChannelError};
use crate::rt::clock::Deadline;
use crate::rt::shm::SharedBox;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The futex transport. A futex is only a word of memory: nothing to name or to leak.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "futex",
        describe: "futex, FUTEX_WAKE -> FUTEX_WAIT",
        channel: |across_processes| Ok(Box::new(SlotChannel::new(Futex::new(across_processes)?)?)),
    }
}

const RUNG: u32 = 1;
const IDLE: u32 = 0;

struct Futex {
    word: SharedBox<AtomicU32>,
    wait_op: libc::c_int,
    wake_op: libc::c_int,
}

impl Futex {
    fn new(across_processes: bool) -> Result<Futex, String> {
        let private = if across_processes {
            0
        } else {
            libc::FUTEX_PRIVATE_FLAG
        };
        Ok(Futex {
            word: SharedBox::new(AtomicU32::new(IDLE))?,
            wait_op: libc::FUTEX_WAIT | private,
            wake_op: libc::FUTEX_WAKE | private,
        })
    }

    /// Takes a pending ring, if any.
    #[inline]
    fn take(&self) -> bool {
        // Acquire: pairs with the Release store in `ring`, which follows the
        // slot's stamp store.
        self.word.swap(IDLE, Ordering::Acquire) == RUNG
    }
}

impl Doorbell for Futex {
    #[inline]
    fn ring(&self) -> Result<(), ChannelError> {
        self.word.store(RUNG, Ordering::Release);
        // SAFETY: FUTEX_WAKE on a live, aligned u32; the remaining arguments
        // are ignored by this op.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                self.wake_op,
                1 as libc::c_int,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0 as libc::c_int,
            )
        };
        if rc < 0 {
            Err(ChannelError::last("futex(FUTEX_WAKE)"))
        } else {
            Ok(())
        }
    }

    #[inline]
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError> {
        // FUTEX_WAIT takes a relative timeout: it is recomputed from this
        // absolute deadline on each round, so spurious wake-ups and EINTR do
        // not stretch the wait.
        let deadline = timeout.map(Deadline::after);
        loop {
            if self.take() {
                return Ok(true);
            }
            let ts;
            let ts_ptr = match deadline {
                None => std::ptr::null(),
                Some(deadline) => {
                    if deadline.passed() {
                        return Ok(self.take());
                    }
                    ts = deadline.left();
                    &ts as *const libc::timespec
                }
            };
            // SAFETY: FUTEX_WAIT on a live, aligned u32, with a valid or null
            // timeout; it sleeps only while the word still reads IDLE.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.word.as_ptr(),
                    self.wait_op,
                    IDLE,
                    ts_ptr,
                    std::ptr::null::<u32>(),
                    0 as libc::c_int,
                )
            };
            if rc == 0 {
                // Woken, or spuriously: the swap above tells which.
                continue;
            }
            let err = ChannelError::last("futex(FUTEX_WAIT)");
            match err.errno {
                // EAGAIN: the word was already rung when the kernel looked.
                libc::EAGAIN | libc::EINTR => continue,
                // A ring may have landed just as the timer fired.
                libc::ETIMEDOUT => return Ok(self.take()),
                _ => return Err(err),
            }
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
    fn private_and_shared_futexes_both_work() {
        crate::ipc::slot::tests::check_rings_do_not_count(&transport());
    }
}
