//! A process-private `pthread_barrier_t`, the barrier rt-tests' pi_stress and
//! rt-migrate-test synchronise their threads with.
//!
//! Why not `std::sync::Barrier`: it is a mutex and a condition variable, and
//! its last thread wakes the others while it still holds the mutex. When the
//! threads share one CPU at different SCHED_FIFO priorities (a pi_stress
//! group), a woken thread of higher priority preempts the waker at once,
//! finds the mutex held, blocks on it, and is woken again when the waker
//! lets go: two more context switches per barrier and thread. pi_stress does
//! five barrier waits per inversion, so with std's barrier latscope did about
//! half of pi_stress's inversions per second. glibc's barrier holds no lock
//! while it wakes the waiters (they sleep on a futex word of their round).

use std::cell::UnsafeCell;
use std::io;

/// pthread_barrier_init's refusal.
#[derive(Debug, thiserror::Error)]
#[error("pthread_barrier_init: {}", crate::rt::os_error_text(.0))]
pub struct BarrierRefused(pub io::Error);

/// A `pthread_barrier_t` at a fixed (boxed) address, destroyed on drop.
pub struct PthreadBarrier(Box<UnsafeCell<libc::pthread_barrier_t>>);

// SAFETY: a pthread barrier is made to be shared between threads; it is only
// used through the pthread_barrier_* calls.
unsafe impl Sync for PthreadBarrier {}
unsafe impl Send for PthreadBarrier {}

impl PthreadBarrier {
    /// A barrier for `count` threads (at least 1; EINVAL otherwise, as
    /// pthread_barrier_init says it).
    pub fn new(count: usize) -> Result<PthreadBarrier, BarrierRefused> {
        let refused = |rc| BarrierRefused(io::Error::from_raw_os_error(rc));
        let count = match u32::try_from(count) {
            Ok(n) if n > 0 => n,
            _ => return Err(refused(libc::EINVAL)),
        };
        // SAFETY: zeroed storage, initialised by pthread_barrier_init in its
        // final (boxed) place; it never moves afterwards.
        unsafe {
            let barrier = PthreadBarrier(Box::new(UnsafeCell::new(std::mem::zeroed())));
            match libc::pthread_barrier_init(barrier.0.get(), std::ptr::null(), count) {
                0 => Ok(barrier),
                rc => {
                    // Not initialised: nothing for Drop to destroy.
                    std::mem::forget(barrier);
                    Err(refused(rc))
                }
            }
        }
    }

    /// Waits until `count` threads wait; true for exactly one of them (the
    /// `PTHREAD_BARRIER_SERIAL_THREAD`, like std's `is_leader`).
    pub fn wait(&self) -> bool {
        // SAFETY: an initialised barrier; pthread_barrier_wait has no other
        // failure than an invalid barrier.
        unsafe { libc::pthread_barrier_wait(self.0.get()) == libc::PTHREAD_BARRIER_SERIAL_THREAD }
    }
}

impl Drop for PthreadBarrier {
    fn drop(&mut self) {
        // SAFETY: initialised (see new) and, being dropped, waited on by no one.
        unsafe { libc::pthread_barrier_destroy(self.0.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn one_leader_per_round_and_nobody_passes_early() {
        let barrier = Arc::new(PthreadBarrier::new(3).unwrap());
        let arrived = Arc::new(AtomicUsize::new(0));
        let leaders = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (b, a, l) = (barrier.clone(), arrived.clone(), leaders.clone());
                std::thread::spawn(move || {
                    for round in 1..=50 {
                        a.fetch_add(1, Ordering::SeqCst);
                        if b.wait() {
                            l.fetch_add(1, Ordering::SeqCst);
                        }
                        // Everyone of this round arrived before anyone left.
                        assert!(a.load(Ordering::SeqCst) >= round * 3);
                        b.wait();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(leaders.load(Ordering::SeqCst), 50);
    }

    #[test]
    fn a_barrier_of_nobody_is_refused() {
        let refused = PthreadBarrier::new(0).err().unwrap();
        assert_eq!(refused.0.raw_os_error(), Some(libc::EINVAL));
        assert_eq!(
            refused.to_string(),
            "pthread_barrier_init: Invalid argument"
        );
    }
}
