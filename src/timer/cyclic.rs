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

use crate::rt::clock::{read_clock, timespec};
use crate::rt::sched;
use crate::rt::tracefs::BreakTrace;
use crate::stats::LatencyRecorder;
use crate::stats::window::{WindowRing, WindowWriter};
use crate::timer::posix_timer::PosixTimer;
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

/// The calling thread's (involuntary switches, major faults, minor faults).
fn thread_counters() -> (u64, u64, u64) {
    // SAFETY: a zeroed rusage is a valid output buffer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD reports the calling thread into `usage`.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    (
        usage.ru_nivcsw as u64,
        usage.ru_majflt as u64,
        usage.ru_minflt as u64,
    )
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
                let result = sample(i, &plan, &opts, &shared_t, trace.as_deref());
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

/// How much of the period the threads' phases are spread over at most.
/// With the default 1000 us interval: the whole period.
const PHASE_SPREAD_MAX_NS: u64 = 1_000_000;

/// With `-S -m` and without `-A`, the first expiry of thread `index` of `threads`, which
/// started at `now`: the first point of its own timeline that is at least
/// one interval after its start, the timeline being `base` plus
/// `index / threads` of the interval (of 1 ms at most) plus whole intervals.
///
/// Why: with `-S -m`, cyclictest's threads start milliseconds apart (each
/// has its 8 MiB stack made resident first: 18.9 MB peak RSS with two
/// threads), so their wake-ups fall at unrelated phases (traced on the
/// 2-CPU guest: 262 and 406 us apart), while latscope's (MCL_ONFAULT:
/// nothing to populate up front) start a few us apart and would wake in
/// lock step for the whole run, every CPU's timer at the same instant.
/// With `-t2 -a -m` or without `-m`, cyclictest's threads wake 0 to 62 us
/// apart (traced), and so do latscope's: no spread there. Wake-ups that coincide on two CPUs
/// cost each other: on the 2-CPU KVM guest of docs/benchmarks.md part 7,
/// `cyclictest -S -A 0` (all together) against `-S` (cyclictest's threads
/// start milliseconds apart, each after its 8 MiB stack is locked, so
/// their phases fall anywhere), and latscope's lock step against `-A 500`,
/// cost 4 to 15 % more CPU per wake-up (medians of 8 alternating rounds,
/// two series on a lightly loaded machine; nothing visible when it was
/// saturated) and up to 2 us more avg. Spreading the phases on purpose
/// gives every `-S -m` run the case cyclictest gets by chance. The spread is held
/// within 1 ms so that with `-l` the last thread is never more than 1 ms
/// behind the first (the main loop stops the others 10 ms after the first
/// is done, as cyclictest's does). `-r` and `-s` sleep relative to each
/// loop, so their phases are where each thread starts.
fn first_expiry(base: u64, index: usize, threads: usize, interval: u64, now: u64) -> u64 {
    let offset = interval.min(PHASE_SPREAD_MAX_NS) * index as u64 / threads.max(1) as u64;
    let anchor = base + offset;
    let earliest = now + interval;
    if anchor >= earliest || interval == 0 {
        return anchor.max(earliest);
    }
    anchor + (earliest - anchor).div_ceil(interval) * interval
}

// What the loop does for a few samples only, or only with --latscope-json,
// is kept out of line: the loop a plain run executes every period stays a
// few cache lines of code (the hot path of `sample`, 8 KiB with these
// inlined, spread over three pages), which a wake-up on a CPU whose caches
// another task has just used refetches.

/// The Report's figures of one sample (with `--latscope-json` only).
#[inline(never)]
fn record_report(
    report: &mut Option<ThreadReport>,
    windows: &mut Option<WindowWriter<'_>>,
    now: u64,
    diff_ns: i64,
) {
    if let Some(r) = report {
        r.recorder.record(diff_ns);
    }
    if let Some(w) = windows {
        w.record(now, diff_ns);
    }
}

/// `--spike`: claims the next slot (one atomic operation) and fills it.
#[cold]
#[inline(never)]
fn record_spike(shared: &CyclicShared, index: usize, diff: i64, now: u64) {
    let slot = shared.spikes.fetch_add(1, Ordering::Relaxed);
    if let Some(s) = shared.spike_slots.get(slot) {
        s.thread.store(index, Ordering::Relaxed);
        s.diff.store(diff, Ordering::Relaxed);
        s.ts_us.store((now / 1000) as i64, Ordering::Relaxed);
    }
}

/// `-b`: a sample above the limit stops every thread; the first thread to
/// break records itself and writes the trace mark (`--tracemark`).
#[cold]
#[inline(never)]
fn break_run(
    shared: &CyclicShared,
    tid: i32,
    diff: i64,
    limit: i64,
    trace: Option<&Mutex<BreakTrace>>,
) {
    shared.stop.store(true, Ordering::Relaxed);
    if shared
        .break_tid
        .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        if let Some(trace) = trace
            && let Ok(mut t) = trace.try_lock()
        {
            let mut msg = [0u8; 96];
            let n = break_message(&mut msg, diff, limit);
            t.fire(&msg[..n]);
        }
        shared.break_value.store(diff, Ordering::Relaxed);
    }
}

/// `hit latency threshold (%llu > %d)` into a stack buffer (no allocation).
fn break_message(buf: &mut [u8; 96], diff: i64, limit: i64) -> usize {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(cursor, "hit latency threshold ({diff} > {limit})");
    cursor.position() as usize
}

/// The SMI count MSR (0x34) of the CPU behind `fd` (/dev/cpu/N/msr).
fn read_smi(fd: libc::c_int) -> Option<u64> {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into `value` from an open descriptor.
    let n = unsafe { libc::pread(fd, (&mut value as *mut u64).cast(), 8, 0x34) };
    (n == 8).then_some(value & 0xFFFF_FFFF)
}

fn sample(
    index: usize,
    plan: &CyclicThreadPlan,
    opts: &CyclicOptions,
    shared: &CyclicShared,
    trace: Option<&Mutex<BreakTrace>>,
) -> Result<CyclicFigures, String> {
    let live = &shared.threads[index];
    if let Some(cpu) = plan.cpu {
        sched::pin_current_thread(cpu)?;
    }
    sched::minimal_timer_slack();
    let tid = sched::current_tid();
    live.tid.store(tid, Ordering::Relaxed);
    let interval = plan.interval_ns;
    let timer = if opts.wake == CyclicWake::PosixTimer {
        Some(PosixTimer::for_this_thread(opts.clock)?)
    } else {
        None
    };
    let param = libc::sched_param {
        sched_priority: plan.priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is valid.
    if unsafe { libc::sched_setscheduler(0, plan.policy, &param) } != 0 {
        let errno = std::io::Error::last_os_error();
        return Err(format!(
            "timerthread{}: failed to set priority to {}: {errno}",
            plan.cpu.map_or(-1, |c| c as i64),
            plan.priority
        ));
    }
    let msr = if opts.smi {
        let cpu = plan.cpu.unwrap_or(0);
        let path = format!("/dev/cpu/{cpu}/msr\0");
        // SAFETY: NUL-terminated path.
        let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "/dev/cpu/{cpu}/msr open failed, try chown or chmod +r /dev/cpu/*/msr, or run as root: {}",
                std::io::Error::last_os_error()
            ));
        }
        Some(MsrFd(fd))
    } else {
        None
    };
    let mut smi_old = match &msr {
        Some(m) => read_smi(m.0).ok_or("Could not read SMI counter")?,
        None => 0,
    };
    let mut f = CyclicFigures {
        tid,
        min: MIN_START,
        hist: vec![0; plan.hist_cells],
        // cyclictest keeps one overflow cycle number per histogram cell.
        outliers: Vec::with_capacity(plan.hist_cells),
        ..CyclicFigures::default()
    };
    let n_threads = shared.threads.len();
    let mut now = match opts.align {
        CyclicAlign::None | CyclicAlign::Spread => read_clock(opts.clock),
        CyclicAlign::Aligned { offset_ns } | CyclicAlign::SecAligned { offset_ns } => {
            // Every thread waits for all, thread 0 reads the common start.
            shared.ready.fetch_add(1, Ordering::AcqRel);
            while shared.ready.load(Ordering::Acquire) < n_threads {
                if shared.stop.load(Ordering::Relaxed) {
                    return Ok(f);
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            if index == 0 {
                let mut t = read_clock(opts.clock);
                if matches!(opts.align, CyclicAlign::SecAligned { .. }) {
                    // Never a start in the past: the next full second, or the
                    // one after when less than 0.1 s is left.
                    let sec = t / 1_000_000_000;
                    let nsec = t % 1_000_000_000;
                    t = (sec + if nsec > 900_000_000 { 2 } else { 1 }) * 1_000_000_000;
                }
                shared.start_ns.store(t, Ordering::Release);
            }
            let mut t = shared.start_ns.load(Ordering::Acquire);
            while t == 0 {
                std::thread::sleep(std::time::Duration::from_micros(100));
                t = shared.start_ns.load(Ordering::Acquire);
            }
            match opts.align {
                CyclicAlign::Aligned { .. } => t + offset_ns * index as u64,
                _ => t + offset_ns,
            }
        }
    };
    let mut next = now + interval;
    if opts.align == CyclicAlign::Spread && n_threads > 1 {
        next = first_expiry(shared.phase_base, index, n_threads, interval, now);
        // The thread's own start, as -D and the windows count it, is one
        // interval before its first expiry: -D gives it as many periods.
        now = next - interval;
    }
    let stop_at = opts.duration_ns.map(|d| now + d);
    // Built (and its histograms touched) before the first sample.
    let mut report = plan.report.then(|| ThreadReport {
        recorder: LatencyRecorder::signed(),
        overruns: 0,
        cpu: 0,
        involuntary_switches: 0,
        major_faults: 0,
        minor_faults: 0,
    });
    let mut windows = shared
        .windows
        .get(index)
        .filter(|_| plan.report)
        .map(|ring| WindowWriter::new(ring, now));
    let counters_before = thread_counters();
    if let Some(t) = &timer {
        if opts.relative {
            t.arm(interval, interval, false)?;
        } else {
            t.arm(next, interval, true)?;
        }
    }
    // No wait lasts past the end of -D (cyclictest sleeps to the first
    // expiry after it: -i 5000000 -D 1 took 5 s, and -i 1000000000000 -D 1
    // 11.6 days): an expiry beyond it is not waited for, the thread sleeps
    // to the end and stops there without a sample. Expiries at or before it
    // are taken as cyclictest takes them (with an interval that divides -D,
    // the same count). A stop signal wakes a sleeping thread
    // (`stop_and_join`: the wake signal, EINTR here).
    let deadline = stop_at.unwrap_or(u64::MAX);
    let interval_ts = timespec(interval);
    let mut broke = false;
    while !shared.stop.load(Ordering::Relaxed) {
        match opts.wake {
            CyclicWake::PosixTimer => {
                let Some(t) = &timer else { break };
                let fired = if next > deadline {
                    // From the last wake-up: late by the time since it, a
                    // few microseconds.
                    t.wait_at_most(Some(&timespec(deadline.saturating_sub(now))))
                } else {
                    t.wait().map(|()| true)
                };
                match fired {
                    Ok(true) => {}
                    Ok(false) => {
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    Err(libc::EINTR) => continue,
                    Err(_) => break,
                }
            }
            CyclicWake::ClockNanosleep if !opts.relative => {
                let until = next.min(deadline);
                let ts = timespec(until);
                // SAFETY: valid timespec; null remainder with TIMER_ABSTIME.
                let rc = unsafe {
                    libc::clock_nanosleep(
                        opts.clock,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
                match rc {
                    0 if until < next => {
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    0 => {}
                    libc::EINTR => continue,
                    e => {
                        return Err(format!(
                            "clock_nanosleep failed: {}",
                            std::io::Error::from_raw_os_error(e)
                        ));
                    }
                }
            }
            CyclicWake::ClockNanosleep | CyclicWake::Nanosleep => {
                let before = read_clock(opts.clock);
                next = before + interval;
                let cut = next > deadline;
                let left;
                let ts = if cut {
                    left = timespec(deadline.saturating_sub(before));
                    &left
                } else {
                    &interval_ts
                };
                let rc = if opts.wake == CyclicWake::Nanosleep {
                    // SAFETY: valid timespec; the remainder is not wanted.
                    let failed = unsafe { libc::nanosleep(ts, std::ptr::null_mut()) } != 0;
                    // cyclictest ignores nanosleep's result; only a wake-up
                    // (a stop) counts here.
                    if failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    {
                        libc::EINTR
                    } else {
                        0
                    }
                } else {
                    // SAFETY: valid timespec; relative sleep.
                    unsafe { libc::clock_nanosleep(opts.clock, 0, ts, std::ptr::null_mut()) }
                };
                match rc {
                    libc::EINTR => continue,
                    0 if cut => {
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    0 => {}
                    e => {
                        return Err(format!(
                            "clock_nanosleep failed: {}",
                            std::io::Error::from_raw_os_error(e)
                        ));
                    }
                }
            }
        }
        now = read_clock(opts.clock);
        let mut diff_smi = 0;
        if let Some(m) = &msr {
            let Some(smi_now) = read_smi(m.0) else {
                return Err("Could not read SMI counter".to_string());
            };
            diff_smi = smi_now.wrapping_sub(smi_old) & 0xFFFF_FFFF;
            f.smi_count += diff_smi;
            smi_old = smi_now;
            live.smi_count.store(f.smi_count, Ordering::Relaxed);
        }
        let diff_ns = now as i64 - next as i64;
        // cyclictest's calcdiff truncates toward zero.
        let diff = if plan.nsecs { diff_ns } else { diff_ns / 1000 };
        if diff < f.min {
            f.min = diff;
            live.min.store(diff, Ordering::Relaxed);
        }
        if diff > f.max {
            f.max = diff;
            live.max.store(diff, Ordering::Relaxed);
            shared.max_epoch.fetch_add(1, Ordering::Relaxed);
        }
        f.sum += diff;
        live.sum.store(f.sum, Ordering::Relaxed);
        if report.is_some() {
            record_report(&mut report, &mut windows, now, diff_ns);
        }
        if let Some(trigger) = opts.spike_trigger
            && diff > trigger
        {
            record_spike(shared, index, diff, now);
        }
        if stop_at.is_some_and(|s| now >= s) {
            shared.stop.store(true, Ordering::Relaxed);
        }
        if let Some(limit) = opts.break_limit
            && !broke
            && diff > limit
        {
            broke = true;
            break_run(shared, tid, diff, limit, trace);
        }
        f.act = diff;
        live.act.store(diff, Ordering::Relaxed);
        if !live.values.is_empty() {
            let at = (f.cycles as usize) & (VALBUF_SIZE - 1);
            live.values[at].store(diff, Ordering::Relaxed);
            if let Some(s) = live.smis.get(at) {
                s.store(diff_smi, Ordering::Relaxed);
            }
        }
        if plan.hist_cells > 0 {
            if diff >= plan.hist_cells as i64 || diff < 0 {
                f.overflows += 1;
                if f.outliers.len() < plan.hist_cells {
                    f.outliers.push(f.cycles);
                }
            } else {
                f.hist[diff as usize] += 1;
            }
        }
        f.cycles += 1;
        // Release: the main thread reads the values of this cycle after it.
        live.cycles.store(f.cycles, Ordering::Release);
        next += interval;
        let mut skipped = 0;
        if let Some(t) = &timer {
            skipped = t.overruns();
            next += skipped * interval;
        }
        while now > next {
            next += interval;
            skipped += 1;
        }
        if let Some(r) = &mut report {
            r.overruns += skipped;
        }
        // Each thread ends after its own -l loops; the main thread ends the
        // run once it sees any thread done (cyclictest's main loop), which
        // stops the others where they are.
        if plan.loops > 0 && f.cycles >= plan.loops {
            break;
        }
    }
    if let Some(w) = &mut windows {
        w.flush();
    }
    if let Some(mut r) = report {
        let (ivcsw, majflt, minflt) = thread_counters();
        r.involuntary_switches = ivcsw.saturating_sub(counters_before.0);
        r.major_faults = majflt.saturating_sub(counters_before.1);
        r.minor_faults = minflt.saturating_sub(counters_before.2);
        r.cpu = sched::current_cpu();
        f.report = Some(r);
    }
    Ok(f)
}

/// An open /dev/cpu/N/msr, closed on drop.
struct MsrFd(libc::c_int);

impl Drop for MsrFd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// Whether this processor has the SMI count MSR (turbostat's check, as
/// cyclictest's `has_smi_counter`): Intel family 6 with MSRs, listed models.
pub fn has_smi_counter() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // CPUID is always available on x86_64.
        let v = __cpuid(0);
        if !(v.ebx == 0x756e_6547 && v.edx == 0x4965_6e69 && v.ecx == 0x6c65_746e) {
            return false;
        }
        // Leaf 1 exists on every x86_64 processor.
        let l1 = __cpuid(1);
        let fms = l1.eax;
        if (fms >> 8) & 0xf != 6 || l1.edx & (1 << 5) == 0 {
            return false;
        }
        let model = (((fms >> 16) & 0xf) << 4) + ((fms >> 4) & 0xf);
        const MODELS: [u32; 32] = [
            0x1A, 0x1E, 0x1F, 0x25, 0x2C, 0x2E, 0x2F, 0x2A, 0x2D, 0x3A, 0x3E, 0x3C, 0x3F, 0x45,
            0x46, 0x3D, 0x47, 0x4F, 0x56, 0x4E, 0x5E, 0x8E, 0x9E, 0x55, 0x37, 0x4D, 0x4C, 0x57,
            0x5C, 0x5F, 0x7A, 0x85,
        ];
        MODELS.contains(&model)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_expiries_spread_the_threads_over_the_period() {
        let base = 5_000_000_000;
        let ms = 1_000_000;
        // Two threads started 3 us and 40 us after the base: half a period apart.
        let t0 = first_expiry(base, 0, 2, ms, base + 3_000);
        let t1 = first_expiry(base, 1, 2, ms, base + 40_000);
        assert_eq!(t0, base + 2 * ms);
        assert_eq!(t1, base + ms + ms / 2);
        assert_eq!((t1 - base) % ms, ms / 2);
        // Thread 0 started at the base itself: exactly one interval later.
        assert_eq!(first_expiry(base, 0, 2, ms, base), base + ms);
        // Always at least one interval after the thread's start, less than two.
        for (index, start) in [(0, 0), (1, 999_999), (3, 123_456), (7, 2_500_000)] {
            let now = base + start;
            let first = first_expiry(base, index, 8, ms, now);
            assert!(first >= now + ms && first < now + 2 * ms, "{index} {start}");
            assert_eq!((first - base) % ms, index as u64 * ms / 8);
        }
    }

    #[test]
    fn the_spread_stays_within_one_millisecond_for_long_intervals() {
        let base = 1_000_000_000;
        let interval = 100_000_000;
        let first = first_expiry(base, 1, 2, interval, base + 10_000);
        assert_eq!(first, base + interval + 500_000);
    }

    #[test]
    fn no_two_threads_share_a_cache_line_of_live_figures() {
        assert_eq!(std::mem::align_of::<CyclicLive>(), 128);
        assert_eq!(std::mem::size_of::<CyclicLive>() % 128, 0);
        assert_eq!(std::mem::align_of::<OwnLine<AtomicBool>>(), 128);
    }
}
