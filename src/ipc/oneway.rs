//! The pair harness: for each pair, a sender thread stamps the clock right
//! before waking its receiver, the receiver stamps right after its blocking
//! call returns, and the difference is one sample. A sync channel hands the
//! turn back, so exactly one wake-up is in flight per pair.
//!
//! The order of events is pmqtest's, so both tools measure the same path: the
//! receiver paces the pair (it sleeps until its next period, then hands the turn
//! to the sender and blocks); the sender, woken by that hand-over, stamps and
//! sends at once. Periods are absolute (`next += interval`,
//! `clock_nanosleep(TIMER_ABSTIME)`); a period that has entirely passed before
//! the receiver could start it is counted as an overrun and skipped, never
//! silently absorbed. Each pair runs its own loop count; the run ends when every
//! pair is done, the duration expires, the break-trace limit is crossed, an error
//! occurs or the user interrupts. In every case the results so far are returned.

use super::{PairChannels, Transport, Wake};
use crate::rt::clock::{monotonic_ns, sleep_until_ns};
use crate::rt::sched::{self, Policy};
use crate::rt::signals::wait_for_stop_signal;
use crate::rt::tracefs::BreakTrace;
use crate::stats::LatencyRecorder;
use crate::stats::window::{SecondStats, WindowRing, WindowWriter};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant, SystemTime};

/// Stack of every measuring thread: small, because `mlockall(MCL_FUTURE)` locks
/// all of it; the histogram lives on the heap and is built before the loop.
const MEASURING_THREAD_STACK: usize = 256 * 1024;
/// Longest single sleep of a sender, so that a stop request with a long
/// interval is seen within this time.
const MAX_SLEEP_SLICE_NS: u64 = 50_000_000;
/// How often the monitor wakes to check for signals and drain per-second data.
const MONITOR_TICK: Duration = Duration::from_millis(100);
/// Longest wait for the measuring threads to report their setup.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of one sender/receiver pair.
#[derive(Debug, Clone)]
pub struct PairPlan {
    /// Pin both threads to this CPU; `None` lets the scheduler choose.
    pub cpu: Option<usize>,
    pub policy: Policy,
    pub priority: i32,
    pub interval_ns: u64,
    /// Samples to take; `None` runs until stopped.
    pub loops: Option<u64>,
}

/// Settings of a whole run.
#[derive(Debug, Clone, Default)]
pub struct RunPlan {
    pub pairs: Vec<PairPlan>,
    pub duration: Option<Duration>,
    /// Receiver waits time out after this long; timeouts are counted and the
    /// wait goes on, so the sample still measures the whole delay.
    pub receive_timeout: Option<Duration>,
    /// Extra delay of the sender before each send (pmqtest `-f`), to provoke timeouts.
    pub forced_send_delay: Option<Duration>,
    /// Stop the run (and the kernel tracer) at the first sample above this.
    pub breaktrace_ns: Option<u64>,
    /// Count samples above this per pair (the `--max-latency` verdict).
    pub limit_ns: Option<u64>,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Every pair finished its loops.
    LoopsDone,
    DurationElapsed,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// A sample crossed the break-trace limit.
    BreakTrace,
    /// A measuring thread failed; see the error.
    Error,
}

/// Live values published by the threads of one pair, read by the monitor.
#[derive(Default)]
pub struct PairLive {
    pub samples: AtomicU64,
    pub last_ns: AtomicU64,
    /// Valid once `samples` > 0.
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// Sum of the samples so far (saturating), for a live mean.
    pub sum_ns: AtomicU64,
    pub timeouts: AtomicU64,
    pub overruns: AtomicU64,
    pub sent: AtomicU64,
    pub receiver_tid: AtomicI32,
    pub sender_tid: AtomicI32,
    /// The pinned CPU, or where the thread last ran (set at start and end).
    pub receiver_cpu: AtomicUsize,
    pub sender_cpu: AtomicUsize,
    receiver_done: AtomicBool,
    sender_done: AtomicBool,
    windows: WindowRing,
}

/// Results of one pair.
#[derive(Clone)]
pub struct PairOutcome {
    pub plan: PairPlan,
    pub recorder: LatencyRecorder,
    pub sent: u64,
    pub timeouts: u64,
    pub overruns: u64,
    pub above_limit: u64,
    pub receiver_tid: i32,
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
}

/// State shared by all threads of a run.
struct Shared {
    stop: AtomicBool,
    end_reason: OnceLock<EndReason>,
    error: OnceLock<String>,
    start_ns: AtomicU64,
    channels: Vec<PairChannels>,
    live: Vec<PairLive>,
    breaktrace: Mutex<Option<BreakTrace>>,
}

impl Shared {
    /// Idempotent: the first caller records why and wakes every blocked thread.
    fn request_stop(&self, reason: EndReason) {
        let _ = self.end_reason.set(reason);
        if !self.stop.swap(true, Ordering::SeqCst) {
            for pair in &self.channels {
                pair.test.interrupt();
                pair.sync.interrupt();
            }
        }
    }

    fn fail(&self, message: String) {
        let _ = self.error.set(message);
        self.request_stop(EndReason::Error);
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Opened once by the monitor when every thread is set up (or to cancel).
#[derive(Default)]
struct StartGate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl StartGate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Something that wants a look at the run once a second (live progress).
pub trait Progress {
    fn tick(&mut self, elapsed: Duration, live: &[PairLive]);
    fn finish(&mut self);
}

/// Runs `plan` over `transport`. Errors before measuring (thread setup, queue
/// creation) are returned as `Err`; errors during the run end it and are
/// reported in the outcome next to the samples taken so far.
pub fn run(
    transport: &dyn Transport,
    plan: &RunPlan,
    breaktrace: Option<BreakTrace>,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, String> {
    let channels = plan
        .pairs
        .iter()
        .enumerate()
        .map(|(i, _)| transport.open_pair(i))
        .collect::<Result<Vec<_>, _>>()?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        end_reason: OnceLock::new(),
        error: OnceLock::new(),
        start_ns: AtomicU64::new(0),
        live: plan.pairs.iter().map(|_| PairLive::default()).collect(),
        channels,
        breaktrace: Mutex::new(breaktrace),
    });

    let gate = Arc::new(StartGate::default());
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut receivers = Vec::new();
    let mut senders = Vec::new();
    let mut setup_error = None;
    for (index, pair) in plan.pairs.iter().enumerate() {
        // Built here, before mlockall'ed threads start: allocation and page
        // faults happen now, not during the measurement.
        let recorder = LatencyRecorder::new();
        let ctx = ThreadContext {
            index,
            role: Role::Sender,
            pair: pair.clone(),
            run: plan.clone(),
            shared: Arc::clone(&shared),
            gate: Arc::clone(&gate),
            ready: ready_tx.clone(),
        };
        // A pair runs only if both of its threads started.
        let receiver = spawn_measuring_thread(
            format!("lat-recv{index}"),
            ctx.clone_for_peer(),
            move |ctx| receive_loop(ctx, recorder),
        );
        let sender = spawn_measuring_thread(format!("lat-send{index}"), ctx, send_loop);
        match (receiver, sender) {
            (Ok(r), Ok(s)) => {
                receivers.push(r);
                senders.push(s);
            }
            (r, s) => {
                // Keep whichever thread did start, so that it is joined.
                match r {
                    Ok(r) => receivers.push(r),
                    Err(e) => setup_error = Some(e),
                }
                match s {
                    Ok(s) => senders.push(s),
                    Err(e) => setup_error = Some(e),
                }
                break;
            }
        }
    }
    drop(ready_tx);

    // Exactly one report per started thread (the threads keep their sender
    // alive). A thread that neither reports nor dies within the timeout
    // cancels the run.
    for _ in 0..senders.len() + receivers.len() {
        match ready_rx.recv_timeout(SETUP_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                setup_error.get_or_insert(e);
            }
            Err(_) => {
                setup_error.get_or_insert(format!(
                    "measuring threads did not start within {} s",
                    SETUP_TIMEOUT.as_secs()
                ));
                break;
            }
        }
    }
    if let Some(e) = setup_error {
        shared.stop.store(true, Ordering::SeqCst);
        gate.open();
        join_all(receivers, senders);
        return Err(e);
    }

    let started = SystemTime::now();
    let started_instant = Instant::now();
    shared.start_ns.store(monotonic_ns(), Ordering::SeqCst);
    gate.open();

    let mut per_second: Vec<Vec<SecondStats>> = plan.pairs.iter().map(|_| Vec::new()).collect();
    let mut next_progress = Duration::from_secs(1);
    loop {
        if wait_for_stop_signal(MONITOR_TICK).is_some() {
            shared.request_stop(EndReason::Interrupted);
        }
        for (live, out) in shared.live.iter().zip(per_second.iter_mut()) {
            live.windows.drain_into(out);
        }
        let elapsed = started_instant.elapsed();
        if shared.live.iter().all(|l| {
            l.receiver_done.load(Ordering::Acquire) && l.sender_done.load(Ordering::Acquire)
        }) {
            shared.request_stop(EndReason::LoopsDone);
        }
        if plan.duration.is_some_and(|d| elapsed >= d) {
            shared.request_stop(EndReason::DurationElapsed);
        }
        if shared.stopping() {
            break;
        }
        if elapsed >= next_progress {
            progress.tick(elapsed, &shared.live);
            next_progress += Duration::from_secs(1);
        }
    }
    progress.finish();

    let recorders = join_all(receivers, senders);
    let ended = SystemTime::now();
    let elapsed = started_instant.elapsed();
    let shared =
        Arc::try_unwrap(shared).map_err(|_| "internal error: threads still hold the run state")?;
    let breaktrace_note = shared.breaktrace.lock().ok().and_then(|b| {
        b.as_ref()
            .map(|b| format!("tracer stopped in {}", b.dir.display()))
    });
    let Shared {
        end_reason,
        error,
        channels,
        live,
        ..
    } = shared;
    let pairs = plan
        .pairs
        .iter()
        .zip(recorders)
        .zip(live)
        .zip(per_second)
        .zip(channels)
        .map(
            |((((pair, (recorder, above_limit)), live), mut per_second), channels)| {
                live.windows.drain_into(&mut per_second);
                PairOutcome {
                    plan: pair.clone(),
                    recorder,
                    above_limit,
                    sent: live.sent.load(Ordering::Relaxed),
                    timeouts: live.timeouts.load(Ordering::Relaxed),
                    overruns: live.overruns.load(Ordering::Relaxed),
                    receiver_tid: live.receiver_tid.load(Ordering::Relaxed),
                    sender_tid: live.sender_tid.load(Ordering::Relaxed),
                    receiver_cpu: live.receiver_cpu.load(Ordering::Relaxed),
                    sender_cpu: live.sender_cpu.load(Ordering::Relaxed),
                    per_second_dropped: live.windows.dropped(),
                    per_second,
                    resource_names: channels.resource_names.clone(),
                }
            },
        )
        .collect();
    let end_reason = end_reason.get().copied().unwrap_or(EndReason::LoopsDone);
    Ok(RunOutcome {
        pairs,
        breaktrace_note: (end_reason == EndReason::BreakTrace)
            .then_some(breaktrace_note)
            .flatten(),
        end_reason,
        error: error.get().cloned(),
        started,
        ended,
        elapsed,
    })
}

#[derive(Clone, Copy)]
enum Role {
    Receiver,
    Sender,
}

struct ThreadContext {
    index: usize,
    role: Role,
    pair: PairPlan,
    run: RunPlan,
    shared: Arc<Shared>,
    gate: Arc<StartGate>,
    ready: mpsc::Sender<Result<(), String>>,
}

impl ThreadContext {
    fn clone_for_peer(&self) -> ThreadContext {
        ThreadContext {
            index: self.index,
            role: match self.role {
                Role::Receiver => Role::Sender,
                Role::Sender => Role::Receiver,
            },
            pair: self.pair.clone(),
            run: self.run.clone(),
            shared: Arc::clone(&self.shared),
            gate: Arc::clone(&self.gate),
            ready: self.ready.clone(),
        }
    }

    fn live(&self) -> &PairLive {
        &self.shared.live[self.index]
    }

    fn channels(&self) -> &PairChannels {
        &self.shared.channels[self.index]
    }

    /// Applies affinity and scheduling, reports the result, waits for the
    /// start. Returns false when the run was cancelled before it began.
    fn set_up_and_wait(&self) -> bool {
        let setup = (|| {
            sched::minimal_timer_slack();
            if let Some(cpu) = self.pair.cpu {
                sched::pin_current_thread(cpu)?;
            }
            sched::set_current_thread_policy(self.pair.policy, self.pair.priority)
        })();
        let cpu = self.pair.cpu.unwrap_or_else(sched::current_cpu);
        let live = self.live();
        match self.role {
            Role::Receiver => live.receiver_cpu.store(cpu, Ordering::Relaxed),
            Role::Sender => live.sender_cpu.store(cpu, Ordering::Relaxed),
        }
        let _ = self.ready.send(setup);
        self.gate.wait();
        !self.shared.stopping()
    }
}

type RecorderResult = (LatencyRecorder, u64);

fn spawn_measuring_thread<T: Send + 'static>(
    name: String,
    ctx: ThreadContext,
    body: impl FnOnce(ThreadContext) -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, String> {
    std::thread::Builder::new()
        .name(name)
        .stack_size(MEASURING_THREAD_STACK)
        .spawn(move || body(ctx))
        .map_err(|e| format!("could not start a measuring thread: {e}"))
}

fn join_all(
    receivers: Vec<std::thread::JoinHandle<RecorderResult>>,
    senders: Vec<std::thread::JoinHandle<()>>,
) -> Vec<RecorderResult> {
    for s in senders {
        let _ = s.join();
    }
    receivers
        .into_iter()
        .map(|r| r.join().unwrap_or_else(|_| (LatencyRecorder::new(), 0)))
        .collect()
}

fn receive_loop(ctx: ThreadContext, mut recorder: LatencyRecorder) -> RecorderResult {
    let live = ctx.live();
    live.receiver_tid
        .store(sched::current_tid(), Ordering::Relaxed);
    let mut above_limit = 0u64;
    if !ctx.set_up_and_wait() {
        live.receiver_done.store(true, Ordering::Release);
        return (recorder, above_limit);
    }
    let channels = ctx.channels();
    let start_ns = ctx.shared.start_ns.load(Ordering::SeqCst);
    let mut windows = WindowWriter::new(&live.windows, start_ns);
    let loops = ctx.pair.loops.unwrap_or(u64::MAX);
    let limit_ns = ctx.run.limit_ns.unwrap_or(u64::MAX);
    let breaktrace_ns = ctx.run.breaktrace_ns.unwrap_or(u64::MAX);
    let timeout = ctx.run.receive_timeout;
    let interval = ctx.pair.interval_ns.max(1);
    let mut next = start_ns;
    let mut max_seen = 0u64;
    let mut min_seen = u64::MAX;
    let mut sum_seen = 0u64;

    'samples: while recorder.count() < loops && !ctx.shared.stopping() {
        sleep_until_or_stop(next, &ctx.shared);
        if ctx.shared.stopping() {
            break;
        }
        // Your turn: the sender stamps and sends as soon as it wakes.
        if let Err(e) = channels.sync.post(0) {
            ctx.shared.fail(format!("pair {}: {e}", ctx.index));
            break;
        }
        let stamp = loop {
            match channels.test.wait(timeout) {
                Ok(Wake::Message(stamp)) => break stamp,
                Ok(Wake::TimedOut) => {
                    // Counted; keep waiting for the same message so the sample
                    // still measures the whole delay.
                    live.timeouts.fetch_add(1, Ordering::Relaxed);
                    if ctx.shared.stopping() {
                        break 'samples;
                    }
                }
                Ok(Wake::Interrupted) => break 'samples,
                Err(e) => {
                    ctx.shared.fail(format!("pair {}: {e}", ctx.index));
                    break 'samples;
                }
            }
        };
        let now = monotonic_ns();
        let latency = now.saturating_sub(stamp);
        recorder.record(latency);
        windows.record(now, latency);
        live.samples.store(recorder.count(), Ordering::Relaxed);
        live.last_ns.store(latency, Ordering::Relaxed);
        if latency > max_seen {
            max_seen = latency;
            live.max_ns.store(latency, Ordering::Relaxed);
        }
        if latency < min_seen {
            min_seen = latency;
            live.min_ns.store(latency, Ordering::Relaxed);
        }
        sum_seen = sum_seen.saturating_add(latency);
        live.sum_ns.store(sum_seen, Ordering::Relaxed);
        if latency > limit_ns {
            above_limit += 1;
        }
        if latency > breaktrace_ns {
            fire_breaktrace(&ctx, latency);
            break;
        }
        next += interval;
        // `now` is the receive stamp: the sample is done at that moment.
        if now >= next + interval {
            // Whole periods went by while this sample was in flight.
            let missed = (now - next) / interval;
            next += missed * interval;
            live.overruns.fetch_add(missed, Ordering::Relaxed);
        }
    }
    // Released after the last sample too: the sender waits for it instead of
    // running on (thread exit) while the last sample is still in flight on a
    // shared CPU. `interrupt` never blocks, even if the sender is already gone.
    channels.sync.interrupt();
    windows.flush();
    live.receiver_cpu.store(
        ctx.pair.cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    live.receiver_done.store(true, Ordering::Release);
    (recorder, above_limit)
}

fn fire_breaktrace(ctx: &ThreadContext, latency_ns: u64) {
    if let Ok(mut guard) = ctx.shared.breaktrace.lock()
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
    ctx.shared.request_stop(EndReason::BreakTrace);
}

/// Sleeps until `deadline_ns` in slices, so a stop request is seen promptly.
fn sleep_until_or_stop(deadline_ns: u64, shared: &Shared) {
    loop {
        let now = monotonic_ns();
        if now >= deadline_ns || shared.stopping() {
            return;
        }
        sleep_until_ns(deadline_ns.min(now + MAX_SLEEP_SLICE_NS));
    }
}

fn send_loop(ctx: ThreadContext) {
    let live = ctx.live();
    live.sender_tid
        .store(sched::current_tid(), Ordering::Relaxed);
    if !ctx.set_up_and_wait() {
        live.sender_done.store(true, Ordering::Release);
        return;
    }
    let channels = ctx.channels();
    let loops = ctx.pair.loops.unwrap_or(u64::MAX);
    let mut sent = 0u64;

    while sent < loops && !ctx.shared.stopping() {
        match channels.sync.wait(None) {
            Ok(Wake::Message(_)) | Ok(Wake::TimedOut) => {}
            Ok(Wake::Interrupted) => break,
            Err(e) => {
                ctx.shared.fail(format!("pair {}: {e}", ctx.index));
                break;
            }
        }
        if let Some(delay) = ctx.run.forced_send_delay {
            sleep_until_or_stop(monotonic_ns() + delay.as_nanos() as u64, &ctx.shared);
        }
        if ctx.shared.stopping() {
            break;
        }
        let stamp = monotonic_ns();
        if let Err(e) = channels.test.post(stamp) {
            ctx.shared.fail(format!("pair {}: {e}", ctx.index));
            break;
        }
        sent += 1;
        live.sent.store(sent, Ordering::Relaxed);
    }
    if sent >= loops {
        // Block until the receiver has taken the last sample (see receive_loop).
        let _ = channels.sync.wait(None);
    }
    live.sender_cpu.store(
        ctx.pair.cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    live.sender_done.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    //! The harness on an in-process transport: deterministic, no privileges.
    use super::*;
    use crate::ipc::Channel;
    use std::collections::VecDeque;

    /// A queue in memory; `delivery_delay` is added before a message is handed
    /// out, to make samples slower than the period.
    struct LocalChannel {
        queue: Mutex<VecDeque<u64>>,
        ready: Condvar,
        delivery_delay: Duration,
    }

    const SENTINEL: u64 = u64::MAX;

    impl Channel for LocalChannel {
        fn post(&self, stamp_ns: u64) -> Result<(), String> {
            self.queue.lock().unwrap().push_back(stamp_ns);
            self.ready.notify_one();
            Ok(())
        }

        fn wait(&self, timeout: Option<Duration>) -> Result<Wake, String> {
            let mut q = self.queue.lock().unwrap();
            let deadline = timeout.map(|t| Instant::now() + t);
            loop {
                if let Some(stamp) = q.pop_front() {
                    drop(q);
                    std::thread::sleep(self.delivery_delay);
                    return Ok(if stamp == SENTINEL {
                        Wake::Interrupted
                    } else {
                        Wake::Message(stamp)
                    });
                }
                match deadline {
                    None => q = self.ready.wait(q).unwrap(),
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            return Ok(Wake::TimedOut);
                        }
                        q = self.ready.wait_timeout(q, d - now).unwrap().0;
                    }
                }
            }
        }

        fn interrupt(&self) {
            let _ = self.post(SENTINEL);
        }
    }

    struct LocalTransport {
        delivery_delay: Duration,
    }

    impl Transport for LocalTransport {
        fn name(&self) -> &'static str {
            "local"
        }

        fn describe(&self) -> &'static str {
            "in-process queue"
        }

        fn open_pair(&self, _index: usize) -> Result<PairChannels, String> {
            let channel = |delay| {
                Box::new(LocalChannel {
                    queue: Mutex::new(VecDeque::new()),
                    ready: Condvar::new(),
                    delivery_delay: delay,
                })
            };
            Ok(PairChannels {
                test: channel(self.delivery_delay),
                sync: channel(Duration::ZERO),
                resource_names: vec![],
            })
        }
    }

    struct NoProgress;

    impl Progress for NoProgress {
        fn tick(&mut self, _: Duration, _: &[PairLive]) {}
        fn finish(&mut self) {}
    }

    fn pair(interval_us: u64, loops: Option<u64>) -> PairPlan {
        PairPlan {
            cpu: None,
            policy: Policy::Other,
            priority: 0,
            interval_ns: interval_us * 1000,
            loops,
        }
    }

    fn run_local(delay: Duration, plan: RunPlan) -> RunOutcome {
        let transport = LocalTransport {
            delivery_delay: delay,
        };
        run(&transport, &plan, None, &mut NoProgress).expect("run")
    }

    #[test]
    fn every_pair_runs_all_its_loops() {
        let plan = RunPlan {
            pairs: vec![pair(200, Some(20)), pair(2_000, Some(5))],
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        assert_eq!(out.end_reason, EndReason::LoopsDone);
        let samples: Vec<u64> = out.pairs.iter().map(|p| p.recorder.count()).collect();
        assert_eq!(samples, [20, 5]);
        assert_eq!(out.pairs[0].sent, 20);
        assert_eq!(out.pairs[1].sent, 5);
        let windowed: u64 = out.pairs[0].per_second.iter().map(|w| w.samples).sum();
        assert_eq!(windowed, 20);
    }

    #[test]
    fn samples_slower_than_the_period_count_overruns() {
        // 1 ms period, each delivery takes >= 3.5 ms: at least 2 whole periods
        // are missed per sample (3 after the first two).
        let plan = RunPlan {
            pairs: vec![pair(1_000, Some(4))],
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_micros(3_500), plan);
        let p = &out.pairs[0];
        assert_eq!(p.recorder.count(), 4);
        assert!(p.overruns >= 3 * 2, "overruns {}", p.overruns);
        assert!(p.recorder.summary().min_ns >= 3_500_000);
    }

    #[test]
    fn timeouts_are_counted_and_the_sample_still_taken() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, Some(2))],
            receive_timeout: Some(Duration::from_millis(5)),
            forced_send_delay: Some(Duration::from_millis(22)),
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        let p = &out.pairs[0];
        assert_eq!(p.recorder.count(), 2);
        assert!(p.timeouts >= 2 * 3, "timeouts {}", p.timeouts);
    }

    #[test]
    fn duration_ends_an_endless_run_with_results() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, None)],
            duration: Some(Duration::from_millis(300)),
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        assert_eq!(out.end_reason, EndReason::DurationElapsed);
        assert!(out.pairs[0].recorder.count() > 10);
        assert!(out.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn break_trace_limit_stops_the_run_without_tracefs() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, None)],
            breaktrace_ns: Some(1_000_000),
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_millis(2), plan);
        assert_eq!(out.end_reason, EndReason::BreakTrace);
        assert_eq!(out.pairs[0].recorder.count(), 1);
    }

    #[test]
    fn samples_above_the_limit_are_counted() {
        let plan = RunPlan {
            pairs: vec![pair(500, Some(3))],
            limit_ns: Some(1_000_000),
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_millis(2), plan);
        assert_eq!(out.pairs[0].above_limit, 3);
    }
}
