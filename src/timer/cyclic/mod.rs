//! cyclictest's measuring threads, with cyclictest's semantics rather than
//! Xenomai's: no warm-up, each thread its own interval and priority, `-l`
//! loops per thread, latency truncated to whole us unless ns are asked for,
//! missed periods skipped as cyclictest does (next expiry = last expiry +
//! interval until it is ahead of the clock).
//!
//! What the main thread shows while the run goes on (the running display,
//! `-v` values, `-M`) it reads from `CyclicLive`: atomics each thread stores
//! after every sample, and a preallocated ring of values for `-v`. The loop
//! itself never allocates, locks or prints; `-b` and `--spike` claim their
//! slot with one atomic operation.
//!
//! With `--latscope-json` each thread also keeps what latscope's Report
//! needs (`ThreadReport`): every latency in ns in a `LatencyRecorder` and
//! per-second windows in a `WindowRing` the main thread drains. Built before
//! the loop, and only then: a plain cyclictest run carries none of it.

pub mod control;
mod deadline;
mod thread;

use crate::rt::clock::read_clock;
use crate::rt::tracefs::BreakTrace;
use crate::stats::LatencyRecorder;
use crate::stats::window::WindowRing;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// cyclictest's ring of values for `-v` (a power of two).
pub const VALBUF_SIZE: usize = 16384;

/// cyclictest starts every minimum at this value (us or ns alike), and a
/// thread that has not sampled yet shows it.
pub const MIN_START: i64 = 1_000_000;

/// How a thread waits for its next period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CyclicWake {
    /// `clock_nanosleep` (absolute, or relative with `-r`): the default.
    ClockNanosleep,
    /// `-s`: `nanosleep` for one interval from the time read before it.
    Nanosleep,
    /// `-x`: a POSIX interval timer signalling the thread, taken by `sigwait`.
    PosixTimer,
    /// cyclicdeadline: a SCHED_DEADLINE task (the plan's `reservation`)
    /// yielding the rest of every period (timer::cyclic::deadline).
    DeadlineYield,
}

/// Where the first expiry is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CyclicAlign {
    /// One interval after the thread's own start.
    None,
    /// With `-S -m` (and neither `-A` nor `--secaligned`): with two threads
    /// or more, up to one interval later than `None`, their expiries spread
    /// over the period (see `first_expiry`).
    Spread,
    /// `-A USEC`: all threads from one common start, thread n offset by n*USEC.
    Aligned { offset_ns: u64 },
    /// `--secaligned USEC`: from the next full second (plus USEC).
    SecAligned { offset_ns: u64 },
}

/// One thread's plan.
#[derive(Debug, Clone)]
pub struct CyclicThreadPlan {
    pub interval_ns: u64,
    pub priority: i32,
    /// The raw scheduling policy (SCHED_FIFO, SCHED_RR, SCHED_OTHER, ...).
    pub policy: libc::c_int,
    pub cpu: Option<usize>,
    /// 0 = until stopped.
    pub loops: u64,
    /// Histogram cells (0 = none), in the figure's unit.
    pub hist_cells: usize,
    pub nsecs: bool,
    /// Keep latscope's Report figures (`ThreadReport`) beside cyclictest's.
    pub report: bool,
    /// `CyclicWake::DeadlineYield`: the thread's SCHED_DEADLINE reservation
    /// (its deadline is its period; `policy` and `priority` are unused).
    pub reservation: Option<crate::rt::sched::Reservation>,
}

/// What every thread shares.
#[derive(Debug, Clone)]
pub struct CyclicOptions {
    pub clock: libc::clockid_t,
    pub wake: CyclicWake,
    pub relative: bool,
    /// `-D`: each thread stops everything once this long has passed.
    pub duration_ns: Option<u64>,
    /// `-b`: a sample above this stops all threads (figure units).
    pub break_limit: Option<i64>,
    /// `-b` as the trigger of `--on-threshold`: every crossing is counted
    /// there (by thread index); with `continue` none stops the run.
    pub breaks: Option<Arc<crate::stats::crossings::BreakCrossings>>,
    /// `--tracemark` with `-b`: the trace mark is written here.
    pub tracemark: bool,
    /// `--spike`: samples above this are recorded (figure units).
    pub spike_trigger: Option<i64>,
    /// `--spike-nodes`: how many spikes are kept.
    pub spike_nodes: usize,
    /// `-v`: keep every value in a ring for the main thread.
    pub verbose: bool,
    pub align: CyclicAlign,
    /// `--smi`: read the SMI count MSR of the thread's CPU every sample.
    pub smi: bool,
}

/// One recorded spike (`--spike`).
#[derive(Debug, Default)]
pub struct SpikeSlot {
    pub thread: AtomicUsize,
    pub diff: AtomicI64,
    /// The wake-up time in us of the measuring clock, as cyclictest prints it.
    pub ts_us: AtomicI64,
}

/// One thread's live figures, stored after every sample.
///
/// Aligned to 128 bytes (two cache lines: the adjacent-line prefetcher
/// fetches lines in pairs) so that no two threads' figures share a line.
/// Unpadded, the 96-byte records of threads 0 and 1 shared one: every
/// period each thread's stores (`act`, `sum`, `cycles`) took the line away
/// from the other, whose next loop missed on it (a cross-CPU transfer per
/// wake-up and thread). cyclictest allocates each thread's statistics
/// separately (numa_alloc_onnode: a page each).
#[derive(Debug)]
#[repr(align(128))]
pub struct CyclicLive {
    pub tid: AtomicI32,
    pub cycles: AtomicU64,
    pub min: AtomicI64,
    pub act: AtomicI64,
    pub sum: AtomicI64,
    pub max: AtomicI64,
    pub smi_count: AtomicU64,
    /// `-v`: value of cycle n at `n % VALBUF_SIZE` (empty without -v).
    pub values: Box<[AtomicI64]>,
    /// `-v --smi`: the SMIs of that cycle.
    pub smis: Box<[AtomicU64]>,
    /// Set when the thread has left its loop.
    pub finished: AtomicBool,
}

impl CyclicLive {
    fn new(verbose: bool, smi: bool) -> CyclicLive {
        let ring = |on: bool| if on { VALBUF_SIZE } else { 0 };
        CyclicLive {
            tid: AtomicI32::new(0),
            cycles: AtomicU64::new(0),
            min: AtomicI64::new(MIN_START),
            act: AtomicI64::new(0),
            sum: AtomicI64::new(0),
            max: AtomicI64::new(0),
            smi_count: AtomicU64::new(0),
            values: (0..ring(verbose)).map(|_| AtomicI64::new(0)).collect(),
            smis: (0..ring(verbose && smi))
                .map(|_| AtomicU64::new(0))
                .collect(),
            finished: AtomicBool::new(false),
        }
    }
}

/// A value alone on its cache lines (see `CyclicLive`'s alignment): read
/// through `Deref` like the value itself.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct OwnLine<T>(pub T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Everything the threads and the main thread share.
pub struct CyclicShared {
    /// cyclictest's `shutdown`: set by a signal, `-D`, `-b` or a failure.
    /// Every thread reads it every period; on its own line so that the
    /// fields the threads write now and then (`max_epoch` on a new maximum,
    /// `spikes`) do not take it away from the others.
    pub stop: OwnLine<AtomicBool>,
    pub threads: Vec<CyclicLive>,
    /// `-b`: the tid of the thread that broke (0 = none) and its value.
    pub break_tid: AtomicI32,
    pub break_value: AtomicI64,
    /// Bumped on every new maximum (`-M` redraws on a change).
    pub max_epoch: OwnLine<AtomicU64>,
    /// `--spike`: slots claimed in order; `spikes` counts them all.
    pub spike_slots: Box<[SpikeSlot]>,
    pub spikes: AtomicUsize,
    /// With `--latscope-json`: each thread's per-second windows, drained by
    /// the main thread (empty otherwise).
    pub windows: Vec<WindowRing>,
    /// `-A`/`--secaligned`: the common start (ns of the clock), 0 = not yet.
    start_ns: AtomicU64,
    /// Without `-A`: the clock read before the threads start, from which
    /// their phases are spread (`first_expiry`).
    phase_base: u64,
    ready: AtomicUsize,
}

/// One thread's result.
#[derive(Debug, Clone, Default)]
pub struct CyclicFigures {
    pub tid: i32,
    pub cycles: u64,
    pub min: i64,
    pub act: i64,
    pub sum: i64,
    pub max: i64,
    pub hist: Vec<u64>,
    pub overflows: u64,
    pub outliers: Vec<u64>,
    pub smi_count: u64,
    /// `--spike`: samples above the trigger, kept or not.
    pub spikes_seen: u64,
    /// latscope's figures of the thread, when its plan asked for them.
    pub report: Option<ThreadReport>,
}

/// What latscope's Report needs of one thread beyond cyclictest's figures.
#[derive(Clone)]
pub struct ThreadReport {
    /// Every latency in ns (cyclictest's own figures are truncated to us).
    pub recorder: LatencyRecorder,
    /// Periods skipped because a wake-up came after the next expiry.
    pub overruns: u64,
    /// The CPU the thread ran on when it left its loop.
    pub cpu: usize,
    /// `getrusage(RUSAGE_THREAD)` over the loop: (involuntary context
    /// switches, major faults, minor faults).
    pub involuntary_switches: u64,
    pub major_faults: u64,
    pub minor_faults: u64,
}

impl std::fmt::Debug for ThreadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadReport")
            .field("samples", &self.recorder.count())
            .field("overruns", &self.overruns)
            .field("cpu", &self.cpu)
            .finish_non_exhaustive()
    }
}

/// The running threads.
pub struct CyclicRun {
    pub shared: Arc<CyclicShared>,
    handles: Vec<Result<std::thread::JoinHandle<Result<CyclicFigures, String>>, String>>,
}

impl CyclicRun {
    /// Sets the stop flag and joins every thread.
    pub fn stop_and_join(self) -> Vec<Result<CyclicFigures, String>> {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A thread asleep in a long period (cyclictest takes intervals of
        // days) is woken, as cyclictest's pthread_kill(SIGTERM) does.
        for (i, h) in self.handles.iter().enumerate() {
            if h.is_ok() {
                let live = &self.shared.threads[i];
                crate::rt::signals::wake_until(
                    || live.tid.load(Ordering::Relaxed),
                    || live.finished.load(Ordering::Acquire),
                );
            }
        }
        self.handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("a measuring thread panicked".to_string())),
                Err(e) => Err(e),
            })
            .collect()
    }
}

/// Starts one thread per plan. A break trace is opened before any starts
/// (`--tracemark`), so the measuring thread only writes.
pub fn start(plans: &[CyclicThreadPlan], opts: &CyclicOptions) -> Result<CyclicRun, String> {
    let trace = if opts.tracemark && opts.break_limit.is_some() {
        Some(Arc::new(Mutex::new(BreakTrace::open()?)))
    } else {
        None
    };
    let shared = Arc::new(CyclicShared {
        stop: OwnLine(AtomicBool::new(false)),
        threads: plans
            .iter()
            .map(|_| CyclicLive::new(opts.verbose, opts.smi))
            .collect(),
        break_tid: AtomicI32::new(0),
        break_value: AtomicI64::new(0),
        max_epoch: OwnLine(AtomicU64::new(0)),
        spike_slots: (0..if opts.spike_trigger.is_some() {
            opts.spike_nodes
        } else {
            0
        })
            .map(|_| SpikeSlot::default())
            .collect(),
        spikes: AtomicUsize::new(0),
        windows: if plans.iter().any(|p| p.report) {
            plans.iter().map(|_| WindowRing::default()).collect()
        } else {
            Vec::new()
        },
        start_ns: AtomicU64::new(0),
        ready: AtomicUsize::new(0),
        phase_base: read_clock(opts.clock),
    });
    let mut handles = Vec::with_capacity(plans.len());
    for (i, plan) in plans.iter().enumerate() {
        let plan = plan.clone();
        let opts = opts.clone();
        let shared_t = Arc::clone(&shared);
        let trace = trace.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("cyclic{i}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                let result = if opts.wake == CyclicWake::DeadlineYield {
                    deadline::sample(i, &plan, &opts, &shared_t, trace.as_deref())
                } else {
                    thread::sample(i, &plan, &opts, &shared_t, trace.as_deref())
                };
                if result.is_err() {
                    // A failed thread ends the run, as cyclictest's fatal().
                    shared_t.stop.store(true, Ordering::Relaxed);
                }
                shared_t.threads[i].finished.store(true, Ordering::Release);
                result
            });
        handles.push(spawned.map_err(|e| format!("could not start measuring thread {i}: {e}")));
        if handles.last().is_some_and(|h| h.is_err()) {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    Ok(CyclicRun { shared, handles })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_threads_share_a_cache_line_of_live_figures() {
        assert_eq!(std::mem::align_of::<CyclicLive>(), 128);
        assert_eq!(std::mem::size_of::<CyclicLive>() % 128, 0);
        assert_eq!(std::mem::align_of::<OwnLine<AtomicBool>>(), 128);
    }
}
