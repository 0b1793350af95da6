//! The receiver: the task of a pair that paces it, takes every sample and
//! owns its statistics. Always a thread of this process. THE IPC sample is
//! timed in `ReceiverLoop::take_sample`.

use super::live::PairLive;
use super::plan::Mode;
use super::state::{RunState, StartGate, TaskContext, set_up_current_task, sleep_until_or_stop};
use crate::ipc::{PairChannels, Wake};
use crate::report::EndReason;
use crate::rt::clock::monotonic_ns;
use crate::rt::sched;
use crate::stats::LatencyRecorder;
use crate::stats::samples::ring_of;
use crate::stats::window::WindowWriter;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What a receiver thread hands back: its samples and how many were above
/// the limit.
pub(super) type ReceiverResult = (LatencyRecorder, u64);

/// The receiver thread: set up, wait for the start, sample, release the sender.
pub(super) fn receiver_task(
    ctx: &TaskContext,
    gate: &StartGate,
    mut latencies: LatencyRecorder,
) -> ReceiverResult {
    let live = ctx.live();
    let pair = ctx.pair();
    live.receiver_tid
        .store(sched::current_tid(), Ordering::Relaxed);
    let setup = set_up_current_task(pair.receiver_cpu, pair);
    live.receiver_cpu.store(
        pair.receiver_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    ctx.receiver_in().attach_waiter();
    live.receiver_setup.report(setup);
    gate.wait();
    let mut above_limit = 0u64;
    if !ctx.state.stopping() {
        let mut sampling = ReceiverLoop::new(ctx, &mut latencies);
        sampling.sample_until_stopped();
        above_limit = sampling.above_limit;
    }
    // The sender is released after the last sample too: it waits for this
    // instead of running on (thread exit) while the last sample is still in
    // flight on a shared CPU. `interrupt` never blocks, even if the sender is gone.
    ctx.sender_in().interrupt();
    live.receiver_cpu.store(
        pair.receiver_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    live.receiver_done.store(true, Ordering::Release);
    (latencies, above_limit)
}

/// One sample: when it was due (one way: the sender's stamp; round trip: the
/// receiver's first stamp) and the receiver's stamp after its wake-up.
#[derive(Clone, Copy)]
struct Sample {
    due_ns: u64,
    end_ns: u64,
    latency_ns: u64,
}

/// The measuring loop of one pair and its state. Nothing here allocates,
/// locks or prints per sample (the break-trace limit, which ends the run,
/// is the exception).
struct ReceiverLoop<'a> {
    ctx: &'a TaskContext,
    state: &'a RunState,
    live: &'a PairLive,
    channels: &'a PairChannels,
    latencies: &'a mut LatencyRecorder,
    windows: WindowWriter<'a>,
    mode: Mode,
    loops: u64,
    limit_ns: u64,
    breaktrace_ns: u64,
    spike_ns: u64,
    timeout: Option<Duration>,
    /// 0: back to back.
    interval: u64,
    end_ns: u64,
    /// The start of the next period.
    next: u64,
    min_seen: u64,
    max_seen: u64,
    sum_seen: u64,
    above_limit: u64,
    /// `--policy deadline`: the relative deadline of every period, and the
    /// receiver's throttled periods when it began.
    relative_deadline: Option<u64>,
    throttled_before: u64,
}

impl<'a> ReceiverLoop<'a> {
    fn new(ctx: &'a TaskContext, latencies: &'a mut LatencyRecorder) -> ReceiverLoop<'a> {
        let state = &*ctx.state;
        let live = ctx.live();
        let start_ns = state.start_ns.load(Ordering::SeqCst);
        let interval = ctx.pair().interval_ns;
        let unset = |limit: Option<u64>| limit.unwrap_or(u64::MAX);
        ReceiverLoop {
            ctx,
            state,
            live,
            channels: ctx.channels(),
            latencies,
            windows: WindowWriter::new(&live.windows, start_ns)
                .with_samples(ring_of(&ctx.plan.samples, ctx.index)),
            mode: ctx.plan.mode,
            loops: unset(ctx.pair().loops),
            limit_ns: unset(ctx.plan.limit_ns),
            breaktrace_ns: unset(ctx.plan.breaktrace_ns),
            spike_ns: unset(ctx.plan.spike_threshold_ns),
            timeout: ctx.plan.receive_timeout,
            interval,
            end_ns: state.end_ns.load(Ordering::SeqCst),
            // Pairs start out of phase, spread over the period: pairs that
            // woke in lockstep would contend for the same kernel locks (all
            // threads of one process share one signal lock, for one) and
            // measure each other instead of the primitive. The originals'
            // relative sleeps drift apart the same way.
            next: start_ns + interval * ctx.index as u64 / ctx.plan.pairs.len().max(1) as u64,
            min_seen: u64::MAX,
            max_seen: 0,
            sum_seen: 0,
            above_limit: 0,
            relative_deadline: ctx.pair().policy.reservation().map(|r| r.deadline_ns),
            throttled_before: sched::throttled_periods(),
        }
    }

    /// Samples until the loop count, the duration, the break-trace limit, an
    /// error or a stop request ends the pair.
    fn sample_until_stopped(&mut self) {
        while self.latencies.count() < self.loops && !self.state.stopping() {
            if !self.sleep_until_next_period() {
                break;
            }
            let Some(sample) = self.take_sample() else {
                // Stopped with a sample in flight: the periods it held up
                // (a stalled sender) are missed, up to the end of the run.
                self.account_overruns(monotonic_ns().min(self.end_ns));
                break;
            };
            self.record(sample);
            self.account_deadline(sample);
            if self.crossed_breaktrace(sample) || self.duration_over(sample.end_ns) {
                break;
            }
            self.account_overruns(sample.end_ns);
        }
        self.windows.flush();
        // A snapshot asked for later (other pairs still running) holds
        // this pair's final results.
        self.live.snapshot.finish(self.latencies);
    }

    /// Sleeps until the start of the next period (not back to back); false
    /// when the run is stopping.
    fn sleep_until_next_period(&self) -> bool {
        if self.interval > 0 {
            sleep_until_or_stop(self.next, &self.state.flags);
            return !self.state.stopping();
        }
        true
    }

    /// THE IPC sample. One way: hand the turn to the sender (`sync`), which
    /// stamps and posts on `test` as soon as it wakes; the sample is the
    /// clock read right after this task's wake-up minus the sender's stamp
    /// carried by the channel. Round trip: stamp, post on `test`, be woken
    /// back on `sync` by the echo, stamp again. `None` when the run stops.
    #[inline]
    fn take_sample(&mut self) -> Option<Sample> {
        let (posted, begin_ns) = match self.mode {
            Mode::OneWay => (self.channels.sync.post(0), 0),
            Mode::RoundTrip => {
                let t0 = monotonic_ns();
                (self.channels.test.post(t0), t0)
            }
        };
        if let Err(e) = posted {
            self.state.fail(format!("pair {}: {e}", self.ctx.index));
            return None;
        }
        let stamp = self.wait_for_answer()?;
        let end_ns = monotonic_ns();
        let due_ns = match self.mode {
            Mode::OneWay => stamp,
            Mode::RoundTrip => begin_ns,
        };
        Some(Sample {
            due_ns,
            end_ns,
            latency_ns: end_ns.saturating_sub(due_ns),
        })
    }

    /// Blocks for the answer of the current sample; `None` when the run
    /// stops. Timeouts are counted and the wait goes on for the same answer,
    /// so the sample still measures the whole delay.
    #[inline]
    fn wait_for_answer(&self) -> Option<u64> {
        loop {
            match self.ctx.receiver_in().wait(self.timeout) {
                Ok(Wake::Message(stamp)) => return Some(stamp),
                Ok(Wake::TimedOut) => {
                    self.live.timeouts.fetch_add(1, Ordering::Relaxed);
                    if self.state.stopping() {
                        return None;
                    }
                }
                Ok(Wake::Interrupted) => return None,
                Err(e) => {
                    self.state.fail(format!("pair {}: {e}", self.ctx.index));
                    return None;
                }
            }
        }
    }

    /// The sample into the statistics, the per-second windows, the live
    /// values, the limit count and the spike queue.
    #[inline]
    fn record(&mut self, sample: Sample) {
        let latency = sample.latency_ns;
        // A one-way latency is at most the run's length: it fits an i64.
        let signed_latency = latency as i64;
        self.latencies.record(signed_latency);
        self.windows.record(sample.end_ns, signed_latency);
        let live = self.live;
        live.samples
            .store(self.latencies.count(), Ordering::Relaxed);
        live.last_ns.store(latency, Ordering::Relaxed);
        if latency > self.max_seen {
            self.max_seen = latency;
            live.max_ns.store(latency, Ordering::Relaxed);
        }
        if latency < self.min_seen {
            self.min_seen = latency;
            live.min_ns.store(latency, Ordering::Relaxed);
        }
        self.sum_seen = self.sum_seen.saturating_add(latency);
        live.sum_ns.store(self.sum_seen, Ordering::Relaxed);
        if latency > self.limit_ns {
            self.above_limit += 1;
            live.above_limit.store(self.above_limit, Ordering::Relaxed);
        }
        if latency > self.spike_ns {
            // Lock-free and allocation-free: the trace reader attributes it
            // on the CPU this task woke on.
            live.spikes.push(crate::spikes::Candidate {
                cpu: sched::current_cpu() as u32,
                expected_ns: sample.due_ns,
                actual_ns: sample.end_ns,
            });
        }
        // A snapshot asked for: copied now, after the sample, before the
        // next period's sleep or wait (rt::snapshot); else one load.
        live.snapshot.offer(self.latencies);
    }

    /// `--policy deadline`: a sample done after its period's start (paced
    /// runs) plus the deadline missed it; the periods the kernel throttled
    /// the receiver in since the last sample are overruns.
    #[inline]
    fn account_deadline(&mut self, sample: Sample) {
        let Some(deadline) = self.relative_deadline else {
            return;
        };
        let live = self.live;
        if sample.end_ns > self.next.saturating_add(deadline) {
            live.missed_deadlines.fetch_add(1, Ordering::Relaxed);
        }
        let throttled = sched::throttled_periods().saturating_sub(self.throttled_before);
        let before = live.throttled.swap(throttled, Ordering::Relaxed);
        live.overruns
            .fetch_add(throttled.saturating_sub(before), Ordering::Relaxed);
    }

    /// Above the break-trace limit: fires the tracer and stops the run;
    /// counted first when it triggers `--on-threshold`, and with its
    /// `continue` only counted (the run goes on).
    fn crossed_breaktrace(&self, sample: Sample) -> bool {
        if sample.latency_ns <= self.breaktrace_ns
            || !crate::stats::crossings::break_stops_run(
                self.ctx.plan.breaks.as_deref(),
                self.ctx.index,
            )
        {
            return false;
        }
        fire_breaktrace(self.ctx, sample.latency_ns);
        true
    }

    /// Checked here too: back-to-back pairs can keep the monitor off the CPU.
    fn duration_over(&self, now: u64) -> bool {
        if now >= self.end_ns {
            self.state.request_stop(EndReason::DurationElapsed);
            return true;
        }
        false
    }

    /// The next period; whole periods that went by while the sample was in
    /// flight are overruns, skipped, never silently absorbed. `now` is the
    /// end of the sample: it is done at that moment.
    #[inline]
    fn account_overruns(&mut self, now: u64) {
        let interval = self.interval;
        if interval == 0 {
            return;
        }
        self.next += interval;
        if now >= self.next + interval {
            let missed = (now - self.next) / interval;
            self.next += missed * interval;
            self.live.overruns.fetch_add(missed, Ordering::Relaxed);
        }
    }
}

fn fire_breaktrace(ctx: &TaskContext, latency_ns: u64) {
    if let Ok(mut guard) = ctx.state.breaktrace.lock()
        && let Some(trace) = guard.as_mut()
    {
        let mut message = [0u8; 96];
        let text = format!(
            "latscope: pair {} latency {latency_ns} ns > break trace limit\n",
            ctx.index
        );
        let n = text.len().min(message.len());
        message[..n].copy_from_slice(&text.as_bytes()[..n]);
        trace.fire(&message[..n]);
    }
    ctx.state.request_stop(EndReason::BreakTrace);
}
