//! The state every task of a run shares: the stop flag and why the run
//! ended, the channels and live values of each pair, the start gate, and the
//! per-task view of it all (`TaskContext`).

use super::live::{PairLive, SetupStep};
use super::plan::{Mode, PairPlan, RunPlan};
use crate::ipc::{Channel, PairChannels};
use crate::report::EndReason;
use crate::rt::shm::SharedBox;
use crate::rt::tracefs::BreakTrace;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Longest single sleep of a task, so that a stop request with a long
/// interval is seen within this time.
const MAX_SLEEP_SLICE_NS: u64 = 50_000_000;

/// The run-wide values a forked sender must see, in shared memory.
#[derive(Default)]
pub(super) struct RunFlags {
    pub(super) stop: AtomicBool,
}

/// State shared by all tasks of a run.
pub(super) struct RunState {
    pub(super) flags: SharedBox<RunFlags>,
    pub(super) end_reason: OnceLock<EndReason>,
    pub(super) error: OnceLock<String>,
    pub(super) start_ns: AtomicU64,
    /// CLOCK_MONOTONIC time at which the duration ends (u64::MAX: none).
    pub(super) end_ns: AtomicU64,
    pub(super) channels: Vec<PairChannels>,
    pub(super) live: Vec<PairLive>,
    pub(super) breaktrace: Mutex<Option<BreakTrace>>,
}

impl RunState {
    pub(super) fn new(
        plan: &RunPlan,
        channels: Vec<PairChannels>,
        breaktrace: Option<BreakTrace>,
    ) -> Result<RunState, String> {
        Ok(RunState {
            flags: SharedBox::new(RunFlags::default())?,
            end_reason: OnceLock::new(),
            error: OnceLock::new(),
            start_ns: AtomicU64::new(0),
            end_ns: AtomicU64::new(u64::MAX),
            live: plan
                .pairs
                .iter()
                .map(|_| PairLive::new())
                .collect::<Result<_, _>>()?,
            channels,
            breaktrace: Mutex::new(breaktrace),
        })
    }

    /// Idempotent: the first caller records why and wakes every blocked task.
    pub(super) fn request_stop(&self, reason: EndReason) {
        let _ = self.end_reason.set(reason);
        if !self.flags.stop.swap(true, Ordering::SeqCst) {
            for pair in &self.channels {
                pair.test.interrupt();
                pair.sync.interrupt();
            }
        }
    }

    pub(super) fn fail(&self, message: String) {
        let _ = self.error.set(message);
        self.request_stop(EndReason::Error);
    }

    pub(super) fn stopping(&self) -> bool {
        self.flags.stop.load(Ordering::Relaxed)
    }
}

/// Opened once by the monitor when every task is set up (or to cancel).
#[derive(Default)]
pub(super) struct StartGate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl StartGate {
    pub(super) fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    pub(super) fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What a task needs to know; cheap to clone per task.
pub(super) struct TaskContext {
    pub(super) index: usize,
    pub(super) plan: RunPlan,
    pub(super) state: Arc<RunState>,
}

impl TaskContext {
    pub(super) fn pair(&self) -> &PairPlan {
        &self.plan.pairs[self.index]
    }

    pub(super) fn live(&self) -> &PairLive {
        &self.state.live[self.index]
    }

    pub(super) fn channels(&self) -> &PairChannels {
        &self.state.channels[self.index]
    }

    /// The channel the receiver blocks on for each sample's answer.
    pub(super) fn receiver_in(&self) -> &dyn Channel {
        match self.plan.mode {
            Mode::OneWay => self.channels().test.as_ref(),
            Mode::RoundTrip => self.channels().sync.as_ref(),
        }
    }

    /// The channel the sender blocks on between samples.
    pub(super) fn sender_in(&self) -> &dyn Channel {
        match self.plan.mode {
            Mode::OneWay => self.channels().sync.as_ref(),
            Mode::RoundTrip => self.channels().test.as_ref(),
        }
    }
}

/// Sleeps until `deadline_ns` in slices, so a stop request is seen promptly.
pub(super) fn sleep_until_or_stop(deadline_ns: u64, flags: &RunFlags) {
    crate::rt::clock::sleep_until_or_stop(&flags.stop, deadline_ns, MAX_SLEEP_SLICE_NS);
}

/// Affinity, timer slack, scheduling: the part of the setup every task does.
/// Allocation-free, for forked children.
pub(super) fn set_up_current_task(
    cpu: Option<usize>,
    pair: &PairPlan,
) -> Result<(), (SetupStep, i32)> {
    crate::rt::sched::minimal_timer_slack();
    if let Some(cpu) = cpu {
        crate::rt::sched::try_pin_current_thread(cpu).map_err(|e| (SetupStep::Pin, e))?;
    }
    crate::rt::sched::try_set_current_thread_policy(pair.policy, pair.priority)
        .map_err(|e| (SetupStep::Policy, e))
}
