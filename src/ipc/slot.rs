//! Channels for primitives that carry no data (semaphores, futexes, signals):
//! the stamp travels through a shared, cache-line-aligned slot, and the
//! primitive itself is only a doorbell that wakes the waiter.
//!
//! The slot lives in a `MAP_SHARED` mapping, so the same channel works between
//! threads and between a parent and its forked child. A stop is a flag in the
//! slot plus one extra ring: the waiter checks the flag whenever it wakes.

use super::{Channel, ChannelError, Wake};
use crate::rt::shm::SharedBox;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How one task wakes another, without data.
pub trait Doorbell: Send + Sync {
    /// Wakes the waiter (or leaves a wake-up pending for its next `block`).
    /// Must not block, and must keep room for one extra ring (the stop).
    fn ring(&self) -> Result<(), ChannelError>;
    /// Blocks until rung (true) or until `timeout` has passed (false).
    /// Consumes one ring. Retries by itself on EINTR and spurious wake-ups.
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError>;
    /// See `Channel::attach_waiter`.
    fn attach_waiter(&self) {}
    /// The last `block` was rung with no post behind it (a stray wake-up,
    /// already ignored by the channel); the doorbell may know whose it was.
    fn rung_without_post(&self) {}
}

/// The stamp and the stop flag, on their own cache line so that the two tasks
/// of a pair share nothing else.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Slot {
    stamp: AtomicU64,
    /// Posts so far (written by the one poster of the channel).
    posted: AtomicU64,
    /// Posts the waiter has taken (written by the one waiter).
    taken: AtomicU64,
    stop: AtomicBool,
}

/// A `Channel` made of a shared slot and a doorbell.
pub struct SlotChannel<D> {
    slot: SharedBox<Slot>,
    bell: D,
}

impl<D: Doorbell> SlotChannel<D> {
    pub fn new(bell: D) -> Result<SlotChannel<D>, String> {
        Ok(SlotChannel {
            slot: SharedBox::new(Slot::default())?,
            bell,
        })
    }

    pub fn bell(&self) -> &D {
        &self.bell
    }
}

impl<D: Doorbell> Channel for SlotChannel<D> {
    #[inline]
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
        self.slot.stamp.store(stamp_ns, Ordering::Relaxed);
        // One poster per channel: a plain increment. Release: the waiter that
        // sees the count sees the stamp.
        let posted = self.slot.posted.load(Ordering::Relaxed) + 1;
        self.slot.posted.store(posted, Ordering::Release);
        self.bell.ring()
    }

    #[inline]
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
        if self.slot.stop.load(Ordering::Acquire) {
            return Ok(Wake::Interrupted);
        }
        loop {
            if !self.bell.block(timeout)? {
                return Ok(Wake::TimedOut);
            }
            if self.slot.stop.load(Ordering::Acquire) {
                return Ok(Wake::Interrupted);
            }
            let posted = self.slot.posted.load(Ordering::Acquire);
            if posted != self.slot.taken.load(Ordering::Relaxed) {
                self.slot.taken.store(posted, Ordering::Relaxed);
                return Ok(Wake::Message(self.slot.stamp.load(Ordering::Relaxed)));
            }
            // Rung without a post: a stray wake-up (say, a SIGUSR1 someone
            // sent the sender process). Taking it as a sample would pair the
            // waiter with an old stamp and put the pair out of step for the
            // rest of the run; wait for the real post instead.
            self.bell.rung_without_post();
        }
    }

    fn interrupt(&self) {
        self.slot.stop.store(true, Ordering::Release);
        let _ = self.bell.ring();
    }

    fn attach_waiter(&self) {
        self.bell.attach_waiter();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Checks every transport can share: stamps travel, a stop wakes a waiter
    //! that is already blocked, timeouts expire, and all of it across `fork()`.
    use super::super::{PairChannels, Transport};
    use super::*;
    use std::time::Instant;

    /// The contract of `Channel`, checked on pair 0 of `transport`: in one
    /// process (with threads), then with the sender in a forked child.
    pub fn check_transport(transport: &dyn Transport) {
        check_threads(&transport.open_pair(0, false).expect("open pair"));
        check_timeout(&transport.open_pair(1, false).expect("open pair"));
        if transport.crosses_processes() {
            check_fork(&transport.open_pair(2, true).expect("open pair"));
        }
    }

    /// Waits until `flag` is set: a waiter must be attached before the first
    /// post (a signal has nobody to go to before), and a fixed sleep is not
    /// enough on a loaded machine.
    fn wait_for(flag: &AtomicBool, what: &str) {
        let start = Instant::now();
        while !flag.load(Ordering::Acquire) {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn check_threads(pair: &PairChannels) {
        let echo_attached = AtomicBool::new(false);
        std::thread::scope(|s| {
            let echo = s.spawn(|| {
                pair.test.attach_waiter();
                echo_attached.store(true, Ordering::Release);
                // Echo every stamp back until stopped.
                loop {
                    match pair.test.wait(None).expect("wait") {
                        Wake::Message(stamp) => pair.sync.post(stamp).expect("post back"),
                        Wake::Interrupted => return,
                        Wake::TimedOut => panic!("no timeout was asked"),
                    }
                }
            });
            pair.sync.attach_waiter();
            wait_for(&echo_attached, "the echo thread did not attach");
            // Let the echo thread block first.
            std::thread::sleep(Duration::from_millis(20));
            for stamp in [1u64, 2, 1_000_000_007, STOP_LIMIT - 1] {
                pair.test.post(stamp).expect("post");
                assert_eq!(pair.sync.wait(None).expect("wait"), Wake::Message(stamp));
            }
            // A waiter already blocked is released by a stop.
            std::thread::sleep(Duration::from_millis(20));
            pair.test.interrupt();
            echo.join().expect("echo thread");
        });
        // After a stop, waits keep returning Interrupted.
        pair.sync.interrupt();
        assert_eq!(pair.sync.wait(None).unwrap(), Wake::Interrupted);
    }

    const STOP_LIMIT: u64 = super::super::STOP_STAMP;

    /// One post on `test`, doubled and posted back on `sync` by another thread.
    pub fn check_echo(pair: &PairChannels) {
        std::thread::scope(|s| {
            let echo = s.spawn(|| match pair.test.wait(None).unwrap() {
                Wake::Message(stamp) => pair.sync.post(stamp * 2).unwrap(),
                other => panic!("{other:?}"),
            });
            pair.test.post(21).unwrap();
            assert_eq!(pair.sync.wait(None).unwrap(), Wake::Message(42));
            echo.join().unwrap();
        });
    }

    /// For a transport whose rings do not count (a futex flag, a mutex): in
    /// one process and across processes, the pair has no named objects, an
    /// echo works, and a ring taken by one wait is gone (the next one times
    /// out); a post and a stop pending together end in the stop.
    pub fn check_rings_do_not_count(transport: &dyn Transport) {
        for across in [false, true] {
            let pair = transport.open_pair(0, across).expect("open");
            assert!(pair.resource_names.is_empty());
            check_echo(&pair);
            pair.test.post(5).unwrap();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(5));
            assert_eq!(
                pair.test.wait(Some(Duration::from_millis(5))).unwrap(),
                Wake::TimedOut
            );
            // A post and a stop merge into one ring; the stop wins.
            pair.sync.post(6).unwrap();
            pair.sync.interrupt();
            assert_eq!(pair.sync.wait(None).unwrap(), Wake::Interrupted);
        }
    }

    /// `channel.interrupt()` returns though nothing reads the channel (its
    /// buffer or queue full: `what`): run in a detached thread, so that a
    /// blocking one fails the test instead of hanging it.
    pub fn check_interrupt_returns<C: Channel + Send + Sync + 'static>(
        channel: &std::sync::Arc<C>,
        what: &str,
    ) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let interrupter = std::sync::Arc::clone(channel);
        std::thread::spawn(move || {
            interrupter.interrupt();
            let _ = done_tx.send(());
        });
        done_rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("interrupt blocked on {what}"));
    }

    fn check_timeout(pair: &PairChannels) {
        pair.sync.attach_waiter();
        let start = Instant::now();
        assert_eq!(
            pair.sync.wait(Some(Duration::from_millis(30))).unwrap(),
            Wake::TimedOut
        );
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(29), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // A pending post is taken at once, timeout or not.
        pair.test.attach_waiter();
        pair.test.post(77).unwrap();
        assert_eq!(
            pair.test.wait(Some(Duration::from_secs(5))).unwrap(),
            Wake::Message(77)
        );
    }

    fn check_fork(pair: &PairChannels) {
        let parent_ready = SharedBox::new(AtomicBool::new(false)).unwrap();
        let child_attached = SharedBox::new(AtomicBool::new(false)).unwrap();
        // SAFETY: the child only uses the channels (no allocation on success)
        // and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
            pair.test.attach_waiter();
            child_attached.store(true, Ordering::Release);
            let code = loop {
                match pair.test.wait(None) {
                    Ok(Wake::Message(stamp)) => {
                        while !parent_ready.load(Ordering::Acquire) {
                            std::hint::spin_loop();
                        }
                        if pair.sync.post(stamp + 1).is_err() {
                            break 3;
                        }
                    }
                    Ok(Wake::Interrupted) => break 0,
                    _ => break 4,
                }
            };
            unsafe { libc::_exit(code) };
        }
        pair.sync.attach_waiter();
        parent_ready.store(true, Ordering::Release);
        wait_for(&child_attached, "the child did not attach");
        // Let the child block first.
        std::thread::sleep(Duration::from_millis(20));
        for stamp in [10u64, 20, 30] {
            pair.test.post(stamp).expect("post to child");
            assert_eq!(pair.sync.wait(None).unwrap(), Wake::Message(stamp + 1));
        }
        std::thread::sleep(Duration::from_millis(20));
        pair.test.interrupt();
        let mut status = 0;
        // SAFETY: our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(rc, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status:#x}"
        );
    }
}
