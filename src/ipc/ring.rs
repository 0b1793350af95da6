//! A ring of threads passing one signal round, as rt-tests signaltest
//! measures it: thread i waits for SIGUSR1 (`sigwait`), then sends it on to
//! thread i+1 with `pthread_kill`, the last thread to thread 0. Each
//! thread's sample is one lap of the ring as it sees it: from its own
//! send to its next wake-up. Thread 0 pauses 10 ms before every 16th send,
//! as signaltest's does (so the laps of the other threads that span that
//! pause are 10 ms long, and the ring takes a few percent of a CPU, never a
//! whole one: every thread blocks in `sigwait` between its turns).
//!
//! The wake-ups are the signal transport's channels (ipc/signal.rs: SIGUSR1
//! blocked, `pthread_kill`, `sigtimedwait`), one per thread, waited on by that
//! thread alone. A stop (`Ring::stop`) interrupts every channel; every
//! thread then ends at its next wait, and the threads are joined only after
//! every one of them has made its last send, so that no `pthread_kill` ever
//! names a joined thread.
//!
//! Laps are whole microseconds, truncated as rt-tests' `calcdiff` does
//! (seconds apart times a million, plus the nanoseconds apart over 1000).

use super::{Channel, ChannelError, Wake};
use crate::rt::clock::monotonic_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `-v`'s values kept per thread (signaltest's VALBUF_SIZE, a power of 2):
/// the reader must take them within that many laps.
pub const KEPT_VALUES: usize = 16384;

/// Thread 0 pauses before every this many sends (signaltest's `& 0x0F`).
const LAPS_PER_PAUSE: u64 = 16;
/// Thread 0's pause.
const PAUSE: Duration = Duration::from_millis(10);
/// Each thread's stack: the ring's loop needs little.
const STACK: usize = 256 * 1024;
/// How long the threads may take to set up, or to end after a stop.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Debug, Clone)]
pub struct RingPlan {
    /// Each thread's CPU (the ring has as many threads).
    pub cpus: Vec<usize>,
    /// SCHED_FIFO priority of every thread; 0 is SCHED_OTHER.
    pub priority: i32,
    /// Laps each thread measures; 0 until stopped.
    pub loops: u64,
    /// Stop when thread 0 measures a lap longer than this (us).
    pub break_us: Option<i64>,
    /// `-b` as the trigger of `--on-threshold`: thread 0's laps above it
    /// are counted there (series 0); with `continue` none stops the ring.
    pub breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
    /// Keep every lap for a reader (`-v`).
    pub keep_values: bool,
}

/// What one thread publishes, on its own cache lines.
#[repr(align(128))]
pub struct RingThreadLive {
    pub tid: AtomicI32,
    /// Laps measured (the first wake-up is not one).
    pub cycles: AtomicU64,
    pub min: AtomicI64,
    pub max: AtomicI64,
    /// The last lap.
    pub act: AtomicI64,
    pub sum: AtomicI64,
    /// Could not be pinned to its CPU (said once by the reader).
    pub unpinned: AtomicBool,
    /// Lap k (from 0) at `k % KEPT_VALUES`; empty without `keep_values`.
    values: Box<[AtomicI64]>,
}

impl RingThreadLive {
    fn new(keep_values: bool) -> RingThreadLive {
        let kept = if keep_values { KEPT_VALUES } else { 0 };
        RingThreadLive {
            tid: AtomicI32::new(0),
            cycles: AtomicU64::new(0),
            // signaltest's starting values, shown by a thread that measured nothing.
            min: AtomicI64::new(1_000_000),
            max: AtomicI64::new(-1_000_000),
            act: AtomicI64::new(0),
            sum: AtomicI64::new(0),
            unpinned: AtomicBool::new(false),
            values: (0..kept).map(|_| AtomicI64::new(0)).collect(),
        }
    }

    /// Lap `k` (from 0), kept with `keep_values`; valid while `k` is among
    /// the last KEPT_VALUES laps counted in `cycles`.
    pub fn value(&self, k: u64) -> i64 {
        self.values
            .get(k as usize % KEPT_VALUES.max(1))
            .map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// The figures so far (`cpu`: the thread's, as the plan gave it).
    pub fn figures(&self, cpu: usize) -> RingFigures {
        RingFigures {
            tid: self.tid.load(Ordering::Relaxed),
            cycles: self.cycles.load(Ordering::Acquire),
            min: self.min.load(Ordering::Relaxed),
            max: self.max.load(Ordering::Relaxed),
            act: self.act.load(Ordering::Relaxed),
            sum: self.sum.load(Ordering::Relaxed),
            cpu,
        }
    }

    /// One lap: written by the thread alone, so plain loads and stores.
    fn record(&self, lap: i64) {
        let cycles = self.cycles.load(Ordering::Relaxed);
        if lap < self.min.load(Ordering::Relaxed) {
            self.min.store(lap, Ordering::Relaxed);
        }
        if lap > self.max.load(Ordering::Relaxed) {
            self.max.store(lap, Ordering::Relaxed);
        }
        self.act.store(lap, Ordering::Relaxed);
        let sum = self.sum.load(Ordering::Relaxed);
        self.sum.store(sum.saturating_add(lap), Ordering::Relaxed);
        if let Some(slot) = self.values.get(cycles as usize % KEPT_VALUES) {
            slot.store(lap, Ordering::Relaxed);
        }
        // Release: a reader that sees the count sees the lap.
        self.cycles.store(cycles + 1, Ordering::Release);
    }
}

/// What the threads and the controlling thread share.
struct RingShared {
    plan: RingPlan,
    channels: Vec<Box<dyn Channel>>,
    threads: Vec<RingThreadLive>,
    /// Threads set up and waiting for their first signal.
    ready: AtomicUsize,
    /// Threads past their last send.
    finished: AtomicUsize,
    /// Thread 0 measured a lap above the break value.
    broke: AtomicBool,
    /// A stop was asked for (by `Ring::stop` or a thread).
    stopping: AtomicBool,
    /// The first failure of a thread (set-up or a send).
    failure: std::sync::Mutex<Option<String>>,
}

impl RingShared {
    fn fail(&self, message: String) {
        if let Ok(mut first) = self.failure.lock() {
            first.get_or_insert(message);
        }
        self.stopping.store(true, Ordering::Release);
    }
}

/// A running ring.
pub struct Ring {
    shared: Arc<RingShared>,
    handles: Vec<JoinHandle<()>>,
}

/// A thread's figures after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingFigures {
    pub tid: i32,
    pub cycles: u64,
    pub min: i64,
    pub max: i64,
    pub act: i64,
    pub sum: i64,
    pub cpu: usize,
}

/// rt-tests' `calcdiff(after, before)` in us from CLOCK_MONOTONIC ns.
pub fn lap_us(after_ns: u64, before_ns: u64) -> i64 {
    let split = |ns: u64| ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64);
    let ((a_s, a_ns), (b_s, b_ns)) = (split(after_ns), split(before_ns));
    (a_s - b_s) * 1_000_000 + (a_ns - b_ns) / 1000
}

impl Ring {
    /// Starts the threads (pinned, at their policy, each attached to its
    /// channel) and sends the first signal to thread 0. `channel` makes one
    /// wake-up channel between threads of this process.
    pub fn start(
        plan: RingPlan,
        channel: fn() -> Result<Box<dyn Channel>, String>,
    ) -> Result<Ring, String> {
        let n = plan.cpus.len();
        let channels = (0..n).map(|_| channel()).collect::<Result<Vec<_>, _>>()?;
        let threads = (0..n)
            .map(|_| RingThreadLive::new(plan.keep_values))
            .collect();
        let shared = Arc::new(RingShared {
            plan,
            channels,
            threads,
            ready: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            broke: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            failure: std::sync::Mutex::new(None),
        });
        let mut ring = Ring {
            shared,
            handles: Vec::with_capacity(n),
        };
        for index in 0..n {
            let shared = Arc::clone(&ring.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("signaltest-{index}"))
                .stack_size(STACK)
                .spawn(move || run_thread(index, &shared));
            match spawned {
                Ok(handle) => ring.handles.push(handle),
                Err(e) => {
                    // Those started are waiting for their first signal.
                    ring.shared.finished.fetch_add(n - index, Ordering::AcqRel);
                    ring.stop();
                    let _ = ring.join();
                    return Err(format!("failed to create thread {index}: {e}"));
                }
            }
        }
        let shared = &ring.shared;
        let all_set_up = wait_until(|| {
            shared.ready.load(Ordering::Acquire) + shared.finished.load(Ordering::Acquire) >= n
        });
        if !all_set_up || shared.stopping.load(Ordering::Acquire) {
            ring.stop();
            let failure = ring.join().err();
            return Err(failure.unwrap_or_else(|| "the ring's threads did not start".into()));
        }
        if let Err(e) = shared.channels[0].post(monotonic_ns()) {
            ring.stop();
            let _ = ring.join();
            return Err(format!("could not send the first signal: {e}"));
        }
        Ok(ring)
    }

    /// Thread `index`'s live figures.
    pub fn live(&self, index: usize) -> &RingThreadLive {
        &self.shared.threads[index]
    }

    /// Whether every thread is past its last send (all loops done, or ended).
    pub fn all_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire) >= self.handles.len()
    }

    /// Whether a thread asked for the end: the break value crossed, or a
    /// failure.
    pub fn stop_requested(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }

    /// Whether thread 0 crossed the break value.
    pub fn broke(&self) -> bool {
        self.shared.broke.load(Ordering::Acquire)
    }

    /// Ends the ring: every thread ends at its next wait.
    pub fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        for channel in &self.shared.channels {
            channel.interrupt();
        }
    }

    /// Waits for every thread's last send, joins them, and gives their
    /// figures, or the first failure of a thread.
    pub fn join(mut self) -> Result<Vec<RingFigures>, String> {
        self.stop();
        let shared = Arc::clone(&self.shared);
        if !wait_until(|| shared.finished.load(Ordering::Acquire) >= shared.threads.len()) {
            // Never seen; joining now could let a late send name a joined
            // thread, so the threads are left to the process's exit.
            return Err("the ring's threads did not end within 10 s of the stop".into());
        }
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
        if let Some(failure) = shared.failure.lock().ok().and_then(|mut f| f.take()) {
            return Err(failure);
        }
        Ok(shared
            .threads
            .iter()
            .zip(&shared.plan.cpus)
            .map(|(t, &cpu)| t.figures(cpu))
            .collect())
    }
}

/// Polls `done` every millisecond for up to SETTLE_LIMIT.
fn wait_until(done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > SETTLE_LIMIT {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// One thread of the ring: set up, the laps, then counted as finished.
fn run_thread(index: usize, shared: &RingShared) {
    if let Err(message) = set_up(index, shared) {
        shared.fail(message);
    } else {
        shared.ready.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = laps(index, shared) {
            // A send that fails while stopping names a thread that has
            // ended: not a failure.
            if !shared.stopping.load(Ordering::Acquire) {
                shared.fail(format!("thread {index}: {e}"));
            }
        }
    }
    shared.finished.fetch_add(1, Ordering::AcqRel);
}

/// The thread's CPU (a failure is said, as signaltest warns, and the thread
/// runs unpinned), its channel, then its policy (SCHED_FIFO at the priority,
/// or SCHED_OTHER for 0).
fn set_up(index: usize, shared: &RingShared) -> Result<(), String> {
    let me = &shared.threads[index];
    me.tid
        .store(crate::rt::sched::current_tid(), Ordering::Relaxed);
    if crate::rt::sched::try_pin_current_thread(shared.plan.cpus[index]).is_err() {
        me.unpinned.store(true, Ordering::Relaxed);
    }
    shared.channels[index].attach_waiter();
    let priority = shared.plan.priority;
    let policy = if priority > 0 {
        crate::rt::sched::Policy::Fifo
    } else {
        crate::rt::sched::Policy::Other
    };
    crate::rt::sched::set_current_thread_policy(policy, priority)
}

/// The laps: wait, (thread 0: pause every 16th time), stamp, send on, and
/// from the second wake-up on count the lap since this thread's last send.
fn laps(index: usize, shared: &RingShared) -> Result<(), ChannelError> {
    let n = shared.channels.len();
    let (mine, next) = (&shared.channels[index], &shared.channels[(index + 1) % n]);
    let me = &shared.threads[index];
    let plan = &shared.plan;
    let mut sent_at: Option<u64> = None;
    let mut cycles = 0u64;
    // signaltest's `while (!shutdown)`: after thread 0's break (or a
    // failure) no thread starts another lap, so thread 0 ends on the lap
    // that crossed `-b` and the others on the lap they were in.
    while !shared.stopping.load(Ordering::Acquire) {
        match mine.wait(None)? {
            Wake::Message(_) => {}
            Wake::Interrupted | Wake::TimedOut => return Ok(()),
        }
        let woke = monotonic_ns();
        if index == 0 && cycles.is_multiple_of(LAPS_PER_PAUSE) {
            std::thread::sleep(PAUSE);
        }
        let now = monotonic_ns();
        let last_lap = sent_at.is_some() && plan.loops != 0 && cycles + 1 == plan.loops;
        // Every thread ends on the same lap: the last one's last send would
        // go to thread 0, which has ended.
        if !(last_lap && index == n - 1) {
            next.post(now)?;
        }
        let Some(before) = sent_at.replace(now) else {
            continue;
        };
        let lap = lap_us(woke, before);
        me.record(lap);
        cycles += 1;
        if index == 0
            && plan.break_us.is_some_and(|limit| lap > limit)
            && crate::stats::crossings::break_stops_run(plan.breaks.as_deref(), 0)
        {
            shared.broke.store(true, Ordering::Release);
            shared.stopping.store(true, Ordering::Release);
        }
        if last_lap {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::signal::thread_channel;

    /// A CPU this test process may run on (every thread of a test ring on it).
    fn a_cpu() -> usize {
        crate::rt::sched::allowed_cpus()[0]
    }

    #[test]
    fn laps_are_truncated_as_calcdiff() {
        assert_eq!(lap_us(2_000_001_999, 2_000_000_000), 1);
        assert_eq!(lap_us(2_000_000_900, 2_000_000_000), 0);
        assert_eq!(lap_us(5_000_000_000, 4_000_000_000), 1_000_000);
        // Seconds and nanoseconds apart separately, as calcdiff: across a
        // second, 1 s minus 999 999.1 us (truncated towards zero: 999 999)
        // makes 1 us of a 900 ns lap, as signaltest counts it.
        assert_eq!(lap_us(3_000_000_500, 2_999_999_600), 1);
        assert_eq!(lap_us(3_000_000_000, 2_999_999_999), 1);
    }

    #[test]
    fn every_thread_measures_the_loops_asked_for() {
        let plan = RingPlan {
            cpus: vec![a_cpu(); 3],
            priority: 0,
            loops: 40,
            break_us: None,
            keep_values: true,
            breaks: None,
        };
        let ring = Ring::start(plan, thread_channel).unwrap();
        let start = Instant::now();
        while !ring.all_finished() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the ring did not end"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Thread 1's laps span thread 0's pause on every 16th lap.
        let longest_of_1 = ring.live(1).max.load(Ordering::Relaxed);
        assert!(longest_of_1 >= 10_000, "{longest_of_1}");
        assert!(ring.live(0).value(0) > 0);
        let figures = ring.join().unwrap();
        assert_eq!(figures.len(), 3);
        for f in &figures {
            assert_eq!(f.cycles, 40, "{f:?}");
            assert!(f.min <= f.max && f.min >= 0, "{f:?}");
            assert!(f.tid > 0);
        }
    }

    #[test]
    fn a_stop_ends_an_endless_ring() {
        let plan = RingPlan {
            cpus: vec![a_cpu(); 2],
            priority: 0,
            loops: 0,
            break_us: None,
            keep_values: false,
            breaks: None,
        };
        let ring = Ring::start(plan, thread_channel).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        ring.stop();
        let figures = ring.join().unwrap();
        assert!(figures[0].cycles >= 1, "{figures:?}");
    }

    #[test]
    fn a_lap_above_the_break_value_asks_for_the_end() {
        let plan = RingPlan {
            cpus: vec![a_cpu(); 2],
            priority: 0,
            loops: 0,
            // Every lap of thread 0 is longer than -1 us.
            break_us: Some(-1),
            keep_values: false,
            breaks: None,
        };
        let ring = Ring::start(plan, thread_channel).unwrap();
        let start = Instant::now();
        while !ring.stop_requested() {
            assert!(start.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(ring.broke());
        ring.join().unwrap();
    }
}
