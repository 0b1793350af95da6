//! Signals, the way rt-tests sigwaittest measures them: one sample spans
//! `pthread_kill` (threads) or `kill` (a forked child) of SIGUSR1 in the poster
//! to the return of `sigwait` in the waiter, which keeps SIGUSR1 blocked so the
//! signal stays pending until it is collected (no handler ever runs). The
//! stamp travels through the `SlotChannel` slot.
//!
//! A signal addresses a task, not an object, so the doorbell is the waiter's
//! identity: `attach_waiter` blocks SIGUSR1 in the calling thread and then
//! publishes its pid and tid in shared memory (a `MAP_SHARED` box, so a
//! forked child's attach is seen by the parent). Both channels of a pair use
//! SIGUSR1, as sigwaittest does; their waiters are different tasks.
//!
//! How `ring` sends:
//! - threads (one process): `pthread_kill(waiter, SIGUSR1)`, exactly as
//!   sigwaittest, including glibc's signal-mask save/restore around its
//!   `tgkill` (measured: about 0.6 us of sigwaittest's sample on this VM);
//! - `--fork`, waiter in the forked sender (single-threaded, so tid == pid):
//!   `kill(pid)`, a process-directed signal, like sigwaittest `-f`. This relies
//!   on the child having one thread: in a multi-threaded process another
//!   thread could take the signal;
//! - `--fork`, waiter is latscope's recording thread: `tgkill(pid, tid)`, as a
//!   process-directed signal could be taken by another thread of latscope.
//!
//! Standard signals do not queue: a post and a stop pending together merge
//! into one delivery. That is allowed (`Channel::interrupt`): only one wake-up
//! is in flight per pair, and the stop flag is read after every wake-up.
//!
//! A SIGUSR1 from outside (`kill -USR1 <latscope pid>`, a snapshot request,
//! rt::signals) is process-directed, so a waiting task may dequeue it. The
//! channel's post count already keeps it from becoming a sample (a ring
//! without a post is a stray wake-up, `SlotChannel::wait`); a stray whose
//! `si_code` says it was not one of ours (thread-directed ones are
//! `SI_TKILL`) is handed on as a snapshot request, so it is not lost either.
//! The siginfo costs nothing measurable: glibc's `sigwait`, which
//! sigwaittest calls, passes one too.
//!
//! A ring before any waiter has attached sends nothing. The harness never
//! posts before the waiter is attached; an early stop is still seen, because
//! the `SlotChannel` stop flag is checked before blocking.

use super::slot::{Doorbell, SlotChannel};
use super::{AnonymousPairs, ChannelError};
use crate::rt::clock::{Deadline, timespec};
use crate::rt::shm::SharedBox;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::time::Duration;

const SIGNAL: libc::c_int = libc::SIGUSR1;

/// The signal transport. Signals create no kernel object.
pub fn transport() -> AnonymousPairs {
    AnonymousPairs {
        name: "signal",
        describe: "signal, pthread_kill/kill -> sigwait",
        channel: |across_processes| {
            Ok(Box::new(SlotChannel::new(SignalBell::new(
                across_processes,
            )?)?))
        },
    }
}

/// One channel between two threads of this process (signaltest's ring,
/// ipc/ring.rs): `pthread_kill` -> `sigwait`.
pub fn thread_channel() -> Result<Box<dyn super::Channel>, String> {
    Ok(Box::new(SlotChannel::new(SignalBell::new(false)?)?))
}

/// The waiter's pid (high half) and tid (low half) in one word, so `ring`
/// reads a consistent pair with one load. 0: no waiter attached yet (no task
/// has pid 0).
struct SignalBell {
    waiter: SharedBox<AtomicU64>,
    /// The waiter's `pthread_t`, valid in its own process only (threads mode).
    thread: SharedBox<AtomicU64>,
    /// The two tasks are in different processes (`--fork`).
    across_processes: bool,
    /// Just {SIGUSR1}; built once, so the wait path does no set building.
    set: libc::sigset_t,
    /// The process that made the bell (latscope). A waiter in any other
    /// process is a forked, single-threaded sender.
    creator: libc::pid_t,
    /// The waiter's last SIGUSR1 was not thread-directed (not `SI_TKILL`):
    /// if no post was behind it, someone outside sent it (written and read
    /// by the waiting task only; each process has its own copy).
    external: AtomicBool,
}

fn pack(pid: libc::pid_t, tid: libc::pid_t) -> u64 {
    ((pid as u32 as u64) << 32) | tid as u32 as u64
}

fn unpack(word: u64) -> (libc::pid_t, libc::pid_t) {
    (
        (word >> 32) as u32 as libc::pid_t,
        word as u32 as libc::pid_t,
    )
}

impl SignalBell {
    fn new(across_processes: bool) -> Result<SignalBell, String> {
        // SAFETY: sigemptyset/sigaddset only write the local set.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, SIGNAL);
            set
        };
        Ok(SignalBell {
            waiter: SharedBox::new(AtomicU64::new(0))?,
            thread: SharedBox::new(AtomicU64::new(0))?,
            across_processes,
            set,
            // SAFETY: getpid cannot fail.
            creator: unsafe { libc::getpid() },
            external: AtomicBool::new(false),
        })
    }

    /// The attached waiter, if any.
    #[inline]
    fn waiter(&self) -> Option<(libc::pid_t, libc::pid_t)> {
        let mut word = self.waiter.load(Ordering::Acquire);
        if word == 0 {
            // The stop protocol is store-then-load on both sides: `interrupt`
            // stores the stop flag then reads the waiter here; the waiter
            // stores itself (`attach_waiter`) then reads the stop flag. The
            // two SeqCst fences make at least one side see the other's store,
            // so a stop racing with an attach is never lost. Paid only when
            // no waiter was seen, never on a real post.
            fence(Ordering::SeqCst);
            word = self.waiter.load(Ordering::Acquire);
        }
        (word != 0).then(|| unpack(word))
    }
}

impl Doorbell for SignalBell {
    #[inline]
    fn ring(&self) -> Result<(), ChannelError> {
        let Some((pid, tid)) = self.waiter() else {
            return Ok(());
        };
        if !self.across_processes {
            // Threads: pthread_kill, as sigwaittest (glibc adds a signal-mask
            // save/restore around its tgkill; that is part of what a program
            // that uses pthread_kill pays, so it is part of the sample).
            let thread = self.thread.load(Ordering::Relaxed) as libc::pthread_t;
            // SAFETY: the waiter published its own pthread_t before its
            // pid/tid word (Release/Acquire), and the harness joins waiting
            // threads only after the last ring. pthread functions return the
            // error number.
            return match unsafe { libc::pthread_kill(thread, SIGNAL) } {
                0 => Ok(()),
                errno => Err(ChannelError {
                    call: "pthread_kill",
                    errno,
                }),
            };
        }
        // Processes. Decided without a getpid syscall inside the measured
        // span: a waiter outside the process that made the channel can only
        // be the forked, single-threaded sender.
        let (rc, call) = if pid != self.creator && tid == pid {
            // SAFETY: plain syscall; SIGUSR1 is blocked by the waiter (it was
            // blocked before its pid was published), so it stays pending.
            (unsafe { libc::kill(pid, SIGNAL) }, "kill")
        } else {
            // The receiver thread of latscope, from the sender process: a
            // process-directed kill could be taken by any of latscope's
            // threads waiting for SIGUSR1.
            // SAFETY: as above; tgkill checks that tid belongs to pid.
            (unsafe { libc::tgkill(pid, tid, SIGNAL) }, "tgkill")
        };
        if rc == 0 {
            Ok(())
        } else {
            // ESRCH: the waiter is gone.
            Err(ChannelError::last(call))
        }
    }

    #[inline]
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError> {
        // sigtimedwait takes a relative timeout: recomputed from this absolute
        // deadline after EINTR, so a retry does not stretch the wait.
        let deadline = timeout.map(Deadline::after);
        loop {
            let ts;
            let ts_ptr = match deadline {
                // sigwait: no timeout.
                None => std::ptr::null(),
                Some(deadline) => {
                    ts = deadline.left();
                    &ts as *const libc::timespec
                }
            };
            // SAFETY: an all-zero siginfo_t is valid; a valid set, siginfo
            // and a valid or null timeout.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let sig = unsafe { libc::sigtimedwait(&self.set, &mut info, ts_ptr) };
            if sig == SIGNAL {
                // Whether a post is behind it is the channel's to check.
                self.external
                    .store(info.si_code != libc::SI_TKILL, Ordering::Relaxed);
                return Ok(true);
            }
            let err = ChannelError::last("sigtimedwait");
            match err.errno {
                // Another signal's handler ran: wait on.
                libc::EINTR => continue,
                // sigtimedwait reports an expired timeout as EAGAIN.
                libc::EAGAIN => return Ok(false),
                _ => return Err(err),
            }
        }
    }

    fn rung_without_post(&self) {
        // An outsider's SIGUSR1 (`kill -USR1`): a snapshot request. One of
        // ours without a post (a stop merged with a post) is not.
        if self.external.load(Ordering::Relaxed) {
            crate::rt::signals::note_snapshot_request();
        }
    }

    fn attach_waiter(&self) {
        // SAFETY: valid set; a null old-set pointer is allowed; getpid and
        // gettid cannot fail; a zero timeout only polls.
        unsafe {
            // Blocked before anyone can learn our tid: SIGUSR1's default
            // action would end the process.
            libc::pthread_sigmask(libc::SIG_BLOCK, &self.set, std::ptr::null_mut());
            // A SIGUSR1 still pending on this thread from an earlier channel
            // (say, a stop rung after its waiter had already seen the flag)
            // would end our first wait at once, with no post behind it. The
            // harness starts new tasks per run so it has none; tests reuse
            // threads. Nothing can be rung for *this* channel yet (we are not
            // published), so draining loses nothing. This assumes one waiting
            // channel per thread at a time, which the harness guarantees.
            let poll = timespec(0);
            let mut info: libc::siginfo_t = std::mem::zeroed();
            while libc::sigtimedwait(&self.set, &mut info, &poll) == SIGNAL {
                if info.si_code != libc::SI_TKILL {
                    crate::rt::signals::note_snapshot_request();
                }
            }
            self.thread
                .store(libc::pthread_self() as u64, Ordering::Relaxed);
            let me = pack(libc::getpid(), libc::gettid());
            self.waiter.store(me, Ordering::Release);
        }
        // Pairs with the fence in `waiter()` (see there).
        fence(Ordering::SeqCst);
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
    fn pid_and_tid_round_trip_through_one_word() {
        assert_eq!(unpack(pack(4_194_304, 123)), (4_194_304, 123));
        assert_ne!(pack(1, 1), 0);
    }

    #[test]
    fn a_ring_before_attach_sends_nothing_but_a_stop_still_stops() {
        // In a fresh thread: its signal mask and pending set are its own.
        std::thread::spawn(|| {
            let pair = transport().open_pair(0, false).unwrap();
            // No waiter: nothing is sent (SIGUSR1 is not blocked here, so a
            // signal would end the test process).
            pair.test.post(1).unwrap();
            pair.test.interrupt();
            pair.test.attach_waiter();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Interrupted);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_stale_pending_signal_is_drained_on_attach() {
        std::thread::spawn(|| {
            let old = transport().open_pair(0, false).unwrap();
            old.sync.attach_waiter();
            // A stop after the waiter has seen the flag leaves SIGUSR1 pending.
            old.sync.interrupt();
            assert_eq!(old.sync.wait(None).unwrap(), Wake::Interrupted);
            old.sync.interrupt();
            let new = transport().open_pair(1, false).unwrap();
            new.sync.attach_waiter();
            assert_eq!(
                new.sync.wait(Some(Duration::from_millis(5))).unwrap(),
                Wake::TimedOut
            );
        })
        .join()
        .unwrap();
    }

    /// An outsider's `kill -USR1` (SI_USER from another pid), forged and
    /// sent to the waiting thread only (a process-directed one would reach
    /// the test harness's threads, which do not block SIGUSR1).
    fn send_outsider_signal_to_this_thread() {
        // SAFETY: an all-zero siginfo_t is valid; si_pid lies right after
        // the three ints and their padding (read back below to be sure);
        // rt_tgsigqueueinfo to a thread of our own process may carry any
        // si_code.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            info.si_signo = SIGNAL;
            info.si_code = libc::SI_USER;
            let pid_field = (&mut info as *mut libc::siginfo_t as *mut u8)
                .add(std::mem::size_of::<libc::c_int>() * 4)
                as *mut libc::pid_t;
            *pid_field = 1;
            assert_eq!(info.si_pid(), 1);
            let rc = libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                libc::getpid(),
                libc::gettid(),
                SIGNAL,
                &info as *const libc::siginfo_t,
            );
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        }
    }

    #[test]
    fn a_gone_waiter_is_an_error_for_post() {
        // Across processes, so that the post is a tgkill: a pthread_kill to a
        // joined thread would be undefined (the harness never does that).
        let pair = transport().open_pair(0, true).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| pair.test.attach_waiter()).join().unwrap();
        });
        // pthread_join can return while the kernel still tears the thread
        // down; a signal to a dying thread succeeds and is discarded.
        let start = std::time::Instant::now();
        let err = loop {
            match pair.test.post(1) {
                Err(err) => break err,
                Ok(()) if start.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Ok(()) => panic!("the waiter thread never went away"),
            }
        };
        assert_eq!((err.call, err.errno), ("tgkill", libc::ESRCH));
        // Interrupts ignore it.
        pair.test.interrupt();
    }

    #[test]
    fn a_stray_signal_is_not_taken_for_a_post() {
        std::thread::spawn(|| {
            let pair = transport().open_pair(0, false).unwrap();
            pair.test.attach_waiter();
            pair.test.post(7).unwrap();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(7));
            // A SIGUSR1 from elsewhere, with no post behind it.
            // SAFETY: signalling this very thread, which blocks SIGUSR1.
            unsafe { libc::tgkill(libc::getpid(), libc::gettid(), SIGNAL) };
            // Not a message (the old stamp 7 again): the wait goes on.
            assert_eq!(
                pair.test.wait(Some(Duration::from_millis(20))).unwrap(),
                Wake::TimedOut
            );
            pair.test.post(8).unwrap();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(8));
            // An outsider's `kill -USR1` (a snapshot request): collected, so
            // it cannot linger, and not a message either.
            send_outsider_signal_to_this_thread();
            assert_eq!(
                pair.test.wait(Some(Duration::from_millis(20))).unwrap(),
                Wake::TimedOut
            );
            pair.test.post(9).unwrap();
            assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(9));
        })
        .join()
        .unwrap();
    }
}
