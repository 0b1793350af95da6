//! Starting the tasks of a run: senders (threads or forked processes) and
//! receiver threads, each setting itself up (CPU, policy, timer slack), and
//! the wait until every one has reported its setup. `Started` holds what is
//! running, so that every exit path stops and joins it all.

use super::live::{SETUP_FAILED, SETUP_PENDING};
use super::plan::{RunPlan, Tasks};
use super::process::{SenderProcess, fork_sender};
use super::receiver::{ReceiverResult, receiver_task};
use super::sender::sender_task;
use super::state::{RunState, StartGate, TaskContext};
use crate::stats::LatencyRecorder;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Stack of every measuring thread: small, because `mlockall(MCL_FUTURE)` locks
/// all of it; the histogram lives on the heap and is built before the loop.
const MEASURING_THREAD_STACK: usize = 256 * 1024;
/// Longest wait for the tasks to report their setup.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The tasks started so far.
#[derive(Default)]
pub(super) struct Started {
    receivers: Vec<std::thread::JoinHandle<ReceiverResult>>,
    sender_threads: Vec<std::thread::JoinHandle<()>>,
    pub(super) sender_processes: Vec<(usize, SenderProcess)>,
}

impl Started {
    /// Joins (and reaps) every task; call after the stop was requested.
    pub(super) fn join(&mut self) -> Vec<ReceiverResult> {
        for t in self.sender_threads.drain(..) {
            let _ = t.join();
        }
        for (_, p) in &mut self.sender_processes {
            p.reap();
        }
        self.receivers
            .drain(..)
            .map(|r| r.join().unwrap_or_else(|_| (LatencyRecorder::new(), 0)))
            .collect()
    }
}

/// Starts the senders (processes first, while this process has no other
/// thread, so a child never inherits a lock held by a thread it does not
/// have), then the receiver threads.
pub(super) fn start_tasks(
    plan: &RunPlan,
    state: &Arc<RunState>,
    gate: &Arc<StartGate>,
    tasks: &mut Started,
) -> Result<(), String> {
    let context = |index| TaskContext {
        index,
        plan: plan.clone(),
        state: Arc::clone(state),
    };
    for index in 0..plan.pairs.len() {
        let ctx = context(index);
        match plan.tasks {
            Tasks::Processes => {
                let pid = fork_sender(&ctx)?;
                tasks
                    .sender_processes
                    .push((index, SenderProcess::new(pid)));
            }
            Tasks::Threads => tasks.sender_threads.push(spawn_measuring_thread(
                format!("lat-peer{index}"),
                move || sender_task(&ctx),
            )?),
        }
    }
    for index in 0..plan.pairs.len() {
        // Built here, before the thread starts: allocation and page faults
        // happen now, not during the measurement.
        let latencies = LatencyRecorder::new();
        let ctx = context(index);
        let gate = Arc::clone(gate);
        tasks.receivers.push(spawn_measuring_thread(
            format!("lat-rec{index}"),
            move || receiver_task(&ctx, &gate, latencies),
        )?);
    }
    Ok(())
}

/// Waits until every task has reported its setup; the first failure, a dead
/// sender process or a task that takes too long cancels the run.
pub(super) fn wait_for_setup(
    plan: &RunPlan,
    state: &RunState,
    tasks: &mut Started,
) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    loop {
        let mut pending = false;
        for (i, (live, pair)) in state.live.iter().zip(&plan.pairs).enumerate() {
            for (setup, who, cpu) in [
                (&live.receiver_setup, "receiver", pair.receiver_cpu),
                (&live.sender.setup, "sender", pair.sender_cpu),
            ] {
                match setup.state.load(Ordering::Acquire) {
                    SETUP_PENDING => pending = true,
                    SETUP_FAILED => {
                        return Err(setup.error_message(&format!("pair {i} {who}"), cpu, pair));
                    }
                    _ => {}
                }
            }
        }
        for (i, p) in &mut tasks.sender_processes {
            if let Some(how) = p.newly_ended() {
                return Err(format!(
                    "pair {i}: peer process {} {how} during setup",
                    p.pid
                ));
            }
        }
        if !pending {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "measuring tasks did not start within {} s",
                SETUP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn spawn_measuring_thread<T: Send + 'static>(
    name: String,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, String> {
    std::thread::Builder::new()
        .name(name)
        .stack_size(MEASURING_THREAD_STACK)
        .spawn(body)
        .map_err(|e| format!("could not start a measuring thread: {e}"))
}
