//! The results of a run: per pair (statistics, counters, task ids and CPUs,
//! per-second series) and for the run (why it ended, its error, its times),
//! assembled from the tasks' results and live values once they are joined.

use super::live::PairLive;
use super::plan::PairPlan;
use super::receiver::ReceiverResult;
use super::state::RunState;
use crate::ipc::PairChannels;
use crate::report::EndReason;
use crate::stats::LatencyRecorder;
use crate::stats::window::{SecondStats, WindowSeries};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// Results of one pair.
#[derive(Clone)]
pub struct PairOutcome {
    pub plan: PairPlan,
    /// Every sample of the pair (the receiver's).
    pub recorder: LatencyRecorder,
    pub sent: u64,
    pub timeouts: u64,
    /// Missed periods, throttled ones included.
    pub overruns: u64,
    /// `--policy deadline`: samples done after their deadline, and the
    /// periods the kernel throttled the receiver in.
    pub missed_deadlines: u64,
    pub throttled: u64,
    pub above_limit: u64,
    pub receiver_tid: i32,
    /// Thread id of the sender; its process id with `Tasks::Processes`.
    pub sender_tid: i32,
    pub receiver_cpu: usize,
    pub sender_cpu: usize,
    pub per_second: Vec<SecondStats>,
    pub per_second_dropped: u64,
    pub resource_names: Vec<String>,
}

pub struct RunOutcome {
    pub pairs: Vec<PairOutcome>,
    pub end_reason: EndReason,
    pub error: Option<String>,
    pub breaktrace_note: Option<String>,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    /// With `--trace-spikes`.
    pub spikes: Option<crate::report::SpikeTrace>,
}

/// When the run started and ended.
pub(super) struct RunTimes {
    pub(super) started: SystemTime,
    pub(super) ended: SystemTime,
    pub(super) elapsed: Duration,
}

/// One pair's outcome: `recorder` and `above_limit` from its receiver, the
/// rest from what the pair's tasks published.
fn pair_outcome(
    pair: &PairPlan,
    live: &PairLive,
    channels: &PairChannels,
    recorder: LatencyRecorder,
    above_limit: u64,
    per_second: Vec<SecondStats>,
) -> PairOutcome {
    PairOutcome {
        plan: pair.clone(),
        recorder,
        above_limit,
        sent: live.sender.sent.load(Ordering::Relaxed),
        timeouts: live.timeouts.load(Ordering::Relaxed),
        overruns: live.overruns.load(Ordering::Relaxed),
        missed_deadlines: live.missed_deadlines.load(Ordering::Relaxed),
        throttled: live.throttled.load(Ordering::Relaxed),
        receiver_tid: live.receiver_tid.load(Ordering::Relaxed),
        sender_tid: live.sender.tid.load(Ordering::Relaxed),
        receiver_cpu: live.receiver_cpu.load(Ordering::Relaxed),
        sender_cpu: live.sender.cpu.load(Ordering::Relaxed),
        per_second_dropped: live.windows.dropped(),
        per_second,
        resource_names: channels.resource_names.clone(),
    }
}

/// A snapshot of the run going on (SIGUSR1): each pair's statistics as its
/// receiver copied them (`recorders`), the per-second series drained so far,
/// and the rest as the tasks published it. Nothing is stopped or joined.
pub(super) fn snapshot(
    pairs: &[PairPlan],
    state: &RunState,
    recorders: Vec<LatencyRecorder>,
    per_second: &[WindowSeries],
    started: SystemTime,
    elapsed: Duration,
) -> RunOutcome {
    let pairs = pairs
        .iter()
        .zip(recorders)
        .zip(state.live.iter().zip(&state.channels))
        .zip(per_second)
        .map(|(((pair, recorder), (live, channels)), per_second)| {
            let above_limit = live.above_limit.load(Ordering::Relaxed);
            pair_outcome(
                pair,
                live,
                channels,
                recorder,
                above_limit,
                per_second.windows().to_vec(),
            )
        })
        .collect();
    RunOutcome {
        pairs,
        end_reason: EndReason::Running,
        error: state.error.get().cloned(),
        breaktrace_note: None,
        started,
        ended: SystemTime::now(),
        elapsed,
        spikes: None,
    }
}

/// The outcome from the run's state (its tasks joined), the receivers'
/// results and the per-second series drained so far.
pub(super) fn collect(
    pairs: &[PairPlan],
    state: RunState,
    receivers: Vec<ReceiverResult>,
    per_second: Vec<WindowSeries>,
    times: RunTimes,
    spikes: Option<crate::report::SpikeTrace>,
) -> RunOutcome {
    let breaktrace_note = state.breaktrace.lock().ok().and_then(|b| {
        b.as_ref()
            .map(|b| format!("tracer stopped in {}", b.dir.display()))
    });
    let RunState {
        end_reason,
        error,
        channels,
        live,
        ..
    } = state;
    let pairs = pairs
        .iter()
        .zip(receivers)
        .zip(live)
        .zip(per_second)
        .zip(channels)
        .map(
            |((((pair, (recorder, above_limit)), live), mut per_second), channels)| {
                live.windows.drain_into(&mut per_second);
                pair_outcome(
                    pair,
                    &live,
                    &channels,
                    recorder,
                    above_limit,
                    per_second.into_windows(),
                )
            },
        )
        .collect();
    let end_reason = end_reason.get().copied().unwrap_or(EndReason::LoopsDone);
    RunOutcome {
        pairs,
        breaktrace_note: (end_reason == EndReason::BreakTrace)
            .then_some(breaktrace_note)
            .flatten(),
        end_reason,
        error: error.get().cloned(),
        started: times.started,
        ended: times.ended,
        elapsed: times.elapsed,
        spikes,
    }
}
