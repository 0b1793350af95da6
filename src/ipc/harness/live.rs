//! What the tasks of a pair publish while the run goes on: live values for
//! the monitor and the progress display, each task's setup result and a
//! sender's error. The sender's part lives in shared memory, so that a forked
//! sender reports exactly as a thread does.

use super::plan::PairPlan;
use crate::ipc::ChannelError;
use crate::rt::sched;
use crate::rt::shm::SharedBox;
use crate::rt::snapshot::SnapshotCell;
use crate::stats::window::WindowRing;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Live values of one pair, read by the monitor and the progress display.
pub struct PairLive {
    pub samples: AtomicU64,
    pub last_ns: AtomicU64,
    /// Valid once `samples` > 0.
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// Sum of the samples so far (saturating), for a live mean.
    pub sum_ns: AtomicU64,
    pub timeouts: AtomicU64,
    /// Missed periods, throttled ones (`--policy deadline`) included.
    pub overruns: AtomicU64,
    /// `--policy deadline`: samples done after their period's deadline,
    /// and the periods in which the kernel throttled the receiver.
    pub missed_deadlines: AtomicU64,
    pub throttled: AtomicU64,
    /// Samples above `--max-latency` so far (for a snapshot).
    pub above_limit: AtomicU64,
    pub receiver_tid: AtomicI32,
    /// The pinned CPU, or where the receiver last ran (set at start and end).
    pub receiver_cpu: AtomicUsize,
    pub(super) receiver_done: AtomicBool,
    pub(super) receiver_setup: TaskSetup,
    pub(super) windows: WindowRing,
    /// The receiver's statistics handed to a snapshot (SIGUSR1).
    pub(super) snapshot: SnapshotCell,
    /// Samples above `--trace-spikes`, for the spike trace.
    pub(super) spikes: Arc<crate::spikes::CandidateQueue>,
    pub sender: SharedBox<SenderLive>,
}

impl PairLive {
    pub(super) fn new() -> Result<PairLive, String> {
        Ok(PairLive {
            samples: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            min_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            missed_deadlines: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            above_limit: AtomicU64::new(0),
            receiver_tid: AtomicI32::new(0),
            receiver_cpu: AtomicUsize::new(0),
            receiver_done: AtomicBool::new(false),
            receiver_setup: TaskSetup::default(),
            windows: WindowRing::default(),
            snapshot: SnapshotCell::default(),
            spikes: crate::spikes::candidate_queue(),
            sender: SharedBox::new(SenderLive::default())?,
        })
    }

    /// Both tasks have left their loops.
    /// What the receiver counted so far beside its windows.
    pub(super) fn counters(&self) -> crate::stats::window::LiveCounters {
        crate::stats::window::LiveCounters {
            overruns: self.overruns.load(Ordering::Relaxed),
            above_limit: self.above_limit.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            noise: None,
        }
    }

    pub(super) fn done(&self) -> bool {
        self.receiver_done.load(Ordering::Acquire) && self.sender.done.load(Ordering::Acquire)
    }
}

/// What the sender of a pair publishes (in shared memory: it may be a child).
#[derive(Default)]
pub struct SenderLive {
    /// Wake-ups the sender posted (one way: samples sent; round trip: replies).
    pub sent: AtomicU64,
    pub tid: AtomicI32,
    /// The pinned CPU, or where the sender last ran (set at start and end).
    pub cpu: AtomicUsize,
    pub(super) done: AtomicBool,
    pub(super) setup: TaskSetup,
    pub(super) error: SharedError,
}

/// Something that wants a look at the run once a second (live progress),
/// and at a snapshot of the results so far when one is asked for (SIGUSR1).
pub trait Progress {
    fn tick(&mut self, elapsed: Duration, live: &[PairLive]);
    fn finish(&mut self);
    /// Every pair's results so far, the run going on (`EndReason::Running`).
    /// Called on the monitor thread; by default nobody shows it.
    fn snapshot(&mut self, _so_far: super::RunOutcome) {}
}

/// How far a task got with its setup; written by the task, read by the monitor.
#[derive(Default)]
pub(super) struct TaskSetup {
    /// `SETUP_PENDING`, `SETUP_READY` or `SETUP_FAILED`.
    pub(super) state: AtomicU32,
    step: AtomicU32,
    errno: AtomicI32,
}

pub(super) const SETUP_PENDING: u32 = 0;
const SETUP_READY: u32 = 1;
pub(super) const SETUP_FAILED: u32 = 2;

/// The setup steps a task can fail at (allocation-free error codes).
#[derive(Clone, Copy)]
#[repr(u32)]
pub(super) enum SetupStep {
    Pin = 1,
    Policy = 2,
    LockMemory = 3,
}

impl TaskSetup {
    pub(super) fn report(&self, result: Result<(), (SetupStep, i32)>) {
        if let Err((step, errno)) = result {
            self.step.store(step as u32, Ordering::Relaxed);
            self.errno.store(errno, Ordering::Relaxed);
            self.state.store(SETUP_FAILED, Ordering::Release);
        } else {
            self.state.store(SETUP_READY, Ordering::Release);
        }
    }

    /// Whether the task failed to get its scheduling policy.
    pub(super) fn policy_refused(&self) -> bool {
        self.state.load(Ordering::Acquire) == SETUP_FAILED
            && self.step.load(Ordering::Relaxed) == SetupStep::Policy as u32
    }

    pub(super) fn error_message(&self, who: &str, cpu: Option<usize>, pair: &PairPlan) -> String {
        let errno = self.errno.load(Ordering::Relaxed);
        let why = match self.step.load(Ordering::Relaxed) {
            s if s == SetupStep::Pin as u32 => sched::pin_error(cpu.unwrap_or(0), errno),
            s if s == SetupStep::Policy as u32 => {
                sched::policy_error(pair.policy, pair.priority, errno)
            }
            _ => format!(
                "mlockall failed ({}): {}",
                std::io::Error::from_raw_os_error(errno),
                sched::MLOCK_FIX
            ),
        };
        format!("{who}: {why}")
    }
}

/// A `ChannelError` kept in shared memory. The call name is a `&'static str`
/// of this binary: a forked child has the same image at the same addresses, so
/// its pointer is valid in the parent.
#[derive(Default)]
pub(super) struct SharedError {
    set: AtomicBool,
    call_ptr: AtomicUsize,
    call_len: AtomicUsize,
    errno: AtomicI32,
}

impl SharedError {
    pub(super) fn store(&self, e: ChannelError) {
        if self.set.load(Ordering::Acquire) {
            return;
        }
        self.call_ptr
            .store(e.call.as_ptr() as usize, Ordering::Relaxed);
        self.call_len.store(e.call.len(), Ordering::Relaxed);
        self.errno.store(e.errno, Ordering::Relaxed);
        self.set.store(true, Ordering::Release);
    }

    pub(super) fn load(&self) -> Option<ChannelError> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: pointer and length of a &'static str of this binary image
        // (see the type's documentation).
        let call = unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                self.call_ptr.load(Ordering::Relaxed) as *const u8,
                self.call_len.load(Ordering::Relaxed),
            ))
        };
        Some(ChannelError {
            call,
            errno: self.errno.load(Ordering::Relaxed),
        })
    }
}
