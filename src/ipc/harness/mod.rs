//! The pair harness, written once for every primitive and both loop shapes.
//!
//! Each pair has two tasks, named as in the README and the reports. The
//! *receiver* is always a thread of this process: it paces the pair, takes
//! every sample and owns the statistics (`receiver`). The *sender* only
//! answers: a thread, or with `Tasks::Processes` a child forked before any
//! thread starts (`sender`, `process`). The two loop shapes differ only in
//! which channel carries what (see `Mode`):
//!
//! - one way (pmqtest, sigwaittest): the receiver sleeps until its next
//!   period, hands the turn to the sender (`sync`) and blocks on `test`; the
//!   sender, woken by the hand-over, stamps and posts at once. Sample =
//!   receive stamp - the sender's stamp carried by the channel.
//! - round trip (semtest): the receiver is the task that stamps, posts on
//!   `test` and blocks on `sync`; the sender is its peer, which echoes each
//!   wake-up back. Sample = second stamp - first.
//!
//! Where a sample is timed: `receiver::ReceiverLoop::take_sample`.
//!
//! Periods are absolute (`next += interval`, `clock_nanosleep(TIMER_ABSTIME)`);
//! a period that has entirely passed before the receiver could start it is
//! counted as an overrun and skipped, never silently absorbed. Interval 0 runs
//! samples back to back (no sleep, no overruns; each task still blocks on its
//! primitive every sample). Each pair runs its own loop count; the run ends
//! when every pair is done, the duration expires, the break-trace limit is
//! crossed, an error occurs, a sender process dies, or the user interrupts.
//! In every case the results so far are returned.
//!
//! Files: `plan` (what to run), `state` (what the tasks share), `start`
//! (start the tasks, wait for their setup), `receiver` and `sender` (the two
//! loops), `process` (forked senders), `monitor` (the main thread during the
//! run), `live` (what the tasks publish), `outcome` (the results).

mod live;
mod monitor;
mod outcome;
mod plan;
mod process;
mod receiver;
mod sender;
mod start;
mod state;

use crate::report::EndReason;
pub use live::{PairLive, Progress, SenderLive};
pub use outcome::{PairOutcome, RunOutcome};
pub use plan::{Mode, PairPlan, RunPlan, Tasks};

use super::{SetupError, Transport};
use crate::rt::clock::monotonic_ns;
use crate::rt::tracefs::BreakTrace;
use crate::stats::window::{NoWindowHook, WindowHook};
use outcome::RunTimes;
use start::Started;
use state::{RunState, StartGate};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

/// Runs `plan` over `transport`: set up, start, monitor, stop, collect.
/// Errors before measuring (task setup, object creation) are returned as
/// `Err`; errors during the run end it and are reported in the outcome next
/// to the samples taken so far.
pub fn run(
    transport: &dyn Transport,
    plan: &RunPlan,
    breaktrace: Option<BreakTrace>,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, SetupError> {
    run_with_windows(transport, plan, breaktrace, progress, &mut NoWindowHook)
}

/// `run`, telling `hook` of every per-second window as the monitor drains
/// it (the live outputs: `--prom` every window, `--hdr-log`).
pub fn run_with_windows(
    transport: &dyn Transport,
    plan: &RunPlan,
    breaktrace: Option<BreakTrace>,
    progress: &mut dyn Progress,
    hook: &mut dyn WindowHook,
) -> Result<RunOutcome, SetupError> {
    let state = Arc::new(set_up(transport, plan, breaktrace)?);
    let gate = Arc::new(StartGate::default());
    let mut tasks = Started::default();
    let spike_tracer = match start(plan, &state, &gate, &mut tasks) {
        Ok(tracer) => tracer,
        Err(e) => {
            // Every task started so far is released and joined.
            state.request_stop(EndReason::Error);
            gate.open();
            tasks.join();
            let refused = state.live.iter().any(|live| {
                live.receiver_setup.policy_refused() || live.sender.setup.policy_refused()
            });
            return Err(if refused {
                SetupError::SchedulingRefused(e)
            } else {
                SetupError::Failed(e)
            });
        }
    };

    let started = SystemTime::now();
    let started_instant = Instant::now();
    release(plan, &state, &gate);
    let per_second = monitor::monitor(
        plan,
        &state,
        &mut tasks,
        (started_instant, started),
        progress,
        hook,
    );

    // Stop: the monitor has requested it; every task leaves its loop.
    let receivers = tasks.join();
    let spikes = spike_tracer.map(crate::spikes::SpikeTracer::stop);
    // A sender error that came in while stopping still belongs to the report.
    process::check_senders(&state, &mut tasks.sender_processes);
    // The last windows (closed by the receivers' stop) for the live outputs;
    // `collect` drains again for anything later.
    let mut per_second = per_second;
    for (i, (live, out)) in state.live.iter().zip(per_second.iter_mut()).enumerate() {
        live.windows
            .drain_into_with(out, &mut |w, h| hook.window(i, w, h));
    }
    let times = RunTimes {
        started,
        ended: SystemTime::now(),
        elapsed: started_instant.elapsed(),
    };
    let state = Arc::try_unwrap(state).map_err(|_| {
        SetupError::Failed("internal error: threads still hold the run state".into())
    })?;
    Ok(outcome::collect(
        &plan.pairs,
        state,
        receivers,
        per_second,
        times,
        spikes,
    ))
}

/// The channels of every pair and the state the tasks will share.
fn set_up(
    transport: &dyn Transport,
    plan: &RunPlan,
    breaktrace: Option<BreakTrace>,
) -> Result<RunState, SetupError> {
    let across_processes = plan.tasks == Tasks::Processes;
    if across_processes && !transport.crosses_processes() {
        return Err(SetupError::Usage(format!(
            "{} cannot connect two processes: run it without --fork",
            transport.name()
        )));
    }
    let channels = (0..plan.pairs.len())
        .map(|i| transport.open_pair(i, across_processes))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RunState::new(plan, channels, breaktrace)?)
}

/// Starts every task and waits for their setup; then, every task set up
/// (its id known) and none measuring yet, the spike trace.
fn start(
    plan: &RunPlan,
    state: &Arc<RunState>,
    gate: &Arc<StartGate>,
    tasks: &mut Started,
) -> Result<Option<crate::spikes::SpikeTracer>, String> {
    start::start_tasks(plan, state, gate, tasks)?;
    start::wait_for_setup(plan, state, tasks)?;
    start_spike_trace(plan, state)
}

/// Sets the run's start (and the end of its duration) and opens the gate.
fn release(plan: &RunPlan, state: &RunState, gate: &StartGate) {
    let start_ns = monotonic_ns();
    state.start_ns.store(start_ns, Ordering::SeqCst);
    if let Some(d) = plan.duration {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        state
            .end_ns
            .store(start_ns.saturating_add(d), Ordering::SeqCst);
    }
    gate.open();
}

/// With `--trace-spikes`: the trace of the receivers' CPUs (every online
/// CPU when a receiver is not pinned), each pair's queue a source.
fn start_spike_trace(
    plan: &RunPlan,
    state: &RunState,
) -> Result<Option<crate::spikes::SpikeTracer>, String> {
    let Some(threshold) = plan.spike_threshold_ns else {
        return Ok(None);
    };
    let cpus: Vec<usize> = match plan
        .pairs
        .iter()
        .map(|p| p.receiver_cpu)
        .collect::<Option<Vec<_>>>()
    {
        Some(pinned) => pinned,
        None => crate::rt::sysinfo::online_cpus(),
    };
    let sources = state
        .live
        .iter()
        .enumerate()
        .map(|(i, live)| crate::spikes::Source {
            label: format!("pair {i}"),
            queue: live.spikes.clone(),
            tids: vec![
                live.receiver_tid.load(Ordering::Relaxed),
                live.sender.tid.load(Ordering::Relaxed),
            ],
            wait: crate::spikes::attribution::Wait::Remote,
        })
        .collect();
    // The senders' CPUs too: a sender held up by the reader delays the
    // wake-up it stamps.
    let senders: Vec<usize> = plan.pairs.iter().filter_map(|p| p.sender_cpu).collect();
    crate::spikes::SpikeTracer::start(sources, &cpus, &senders, threshold, plan.spike_collector)
        .map(Some)
        .map_err(|e| format!("--trace-spikes needs kernel tracing: {e}"))
}

#[cfg(test)]
mod tests;
