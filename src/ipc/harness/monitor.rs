//! The monitor: this process's main thread while the tasks measure. Every
//! tick it looks for a stop signal, drains the per-second windows, checks
//! the senders (errors, dead processes), ends the run when every pair is
//! done or the duration is over, once a second shows the progress, and
//! serves a snapshot (SIGUSR1) when one is asked for.

use super::live::Progress;
use super::plan::RunPlan;
use super::process::check_senders;
use super::start::Started;
use super::state::RunState;
use crate::report::EndReason;
use crate::rt::signals::{take_snapshot_request, wait_for_stop_signal};
use crate::stats::LatencyRecorder;
use crate::stats::window::{WindowHook, WindowSeries};
use std::time::{Duration, Instant, SystemTime};

/// How often the monitor wakes to check for signals, dead senders and
/// per-second data.
const MONITOR_TICK: Duration = Duration::from_millis(100);

/// Monitors until the run stops; returns the per-second series drained.
/// `started_at` is the run's start on the wall clock (for snapshots);
/// `hook` learns of every window drained (the live outputs).
pub(super) fn monitor(
    plan: &RunPlan,
    state: &RunState,
    tasks: &mut Started,
    (started, started_at): (Instant, SystemTime),
    progress: &mut dyn Progress,
    hook: &mut dyn WindowHook,
) -> Vec<WindowSeries> {
    let mut per_second: Vec<WindowSeries> =
        plan.pairs.iter().map(|_| WindowSeries::default()).collect();
    let mut next_progress = Duration::from_secs(1);
    // A snapshot asked for: each pair's copy once its receiver made it.
    let mut snapshot: Option<Vec<Option<LatencyRecorder>>> = None;
    loop {
        // Wake at the end of the duration, not up to a tick later.
        let tick = plan.duration.map_or(MONITOR_TICK, |d| {
            d.saturating_sub(started.elapsed())
                .clamp(Duration::from_millis(1), MONITOR_TICK)
        });
        if wait_for_stop_signal(tick).is_some() {
            state.request_stop(EndReason::Interrupted);
        }
        for (i, (live, out)) in state.live.iter().zip(per_second.iter_mut()).enumerate() {
            live.windows
                .drain_into_with(out, &mut |w, h| hook.window(i, w, h));
            hook.counters(i, live.counters());
        }
        hook.drained();
        check_senders(state, &mut tasks.sender_processes);
        let elapsed = started.elapsed();
        if state.live.iter().all(|l| l.done()) {
            state.request_stop(EndReason::LoopsDone);
        }
        if plan.duration.is_some_and(|d| elapsed >= d) {
            state.request_stop(EndReason::DurationElapsed);
        }
        if state.stopping() {
            // The final report follows at once: a pending snapshot is moot.
            break;
        }
        if take_snapshot_request() && snapshot.is_none() {
            for live in &state.live {
                live.snapshot.request(LatencyRecorder::new);
            }
            snapshot = Some(plan.pairs.iter().map(|_| None).collect());
        }
        if let Some(copies) = &mut snapshot {
            // Each receiver copies after its next sample: a pair waiting for
            // a slow sample delays the snapshot, never the run.
            for (copy, live) in copies.iter_mut().zip(&state.live) {
                if copy.is_none() {
                    *copy = live.snapshot.take();
                }
            }
            if copies.iter().all(Option::is_some) {
                let recorders = snapshot.take().into_iter().flatten().flatten().collect();
                progress.snapshot(super::outcome::snapshot(
                    &plan.pairs,
                    state,
                    recorders,
                    &per_second,
                    started_at,
                    elapsed,
                ));
            }
        }
        if elapsed >= next_progress {
            progress.tick(elapsed, &state.live);
            next_progress += Duration::from_secs(1);
        }
    }
    progress.finish();
    per_second
}
