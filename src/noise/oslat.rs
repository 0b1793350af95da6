//! oslat's measurement (the `oslat` drop-in, rt-tests 2.40's semantics, or
//! 2.8's with `-W`): one thread per CPU spins on the counter (THE loop,
//! `spinner::spin_loop`) and puts EVERY gap between two reads, in whole
//! microseconds (`floor(ticks / MHz) + 1`, so a gap under 1 us is "1 us";
//! with `-W` as `OslatScale` says), into one of `-b` buckets, the last
//! taking everything above; `-B` takes the smallest gap of the pre-heat off
//! every bucket; `-T` stops every thread at the first gap of at least that
//! many microseconds and marks the kernel trace.
//!
//! A run is two phases, as oslat's: a pre-heat of one second (its figures
//! only give the bias), then the test. Each phase starts its threads, lets
//! them go together and joins them.

use super::spinner::{Next, Visit, sleep_until_or, spin_on};
use crate::report::{OslatCpu, OslatScale};
use crate::rt::clock::monotonic_ns;
use crate::rt::sched::{self, Policy};
use crate::rt::ticks::Counter;
use crate::rt::tracefs::BreakTrace;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Stack of a spinning thread: small, since `mlockall` locks all of it.
const THREAD_STACK: usize = 256 * 1024;
/// How often (counter time) a thread looks at the stop flag and its end.
const CHECK_NS: u64 = 100_000;
/// From the start signal to the first read of every thread, so that they
/// start together.
const START_DELAY_NS: u64 = 2_000_000;
/// oslat's pre-heat: one second.
pub const PREHEAT_NS: u64 = 1_000_000_000;

/// Everything a run needs, checked by settings::oslat.
pub struct OslatPlan {
    /// One thread per CPU.
    pub cpus: Vec<usize>,
    /// `-f`: SCHED_FIFO at this priority; None = SCHED_OTHER.
    pub rtprio: Option<i32>,
    /// `-b` (or `-W`'s count).
    pub bucket_size: usize,
    /// 2.40's whole microseconds, or `-W`'s width and unit.
    pub scale: OslatScale,
    /// `-B`.
    pub bias: bool,
    /// `-s`: the pre-heat on the first CPU only.
    pub single_preheat: bool,
    /// `-w memmove`: bytes copied before every read (`-m`).
    pub memmove_bytes: Option<usize>,
    /// `-T`, in us.
    pub trace_threshold_us: Option<u64>,
    /// `-T` as the trigger of `--on-threshold`: each CPU's crossings (by
    /// its index in `cpus`); with `continue` none stops the test.
    pub breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
    /// `-D`.
    pub duration_ns: u64,
    pub counter: Counter,
}

/// One thread's buckets, filled as oslat's `insert_bucket` fills them.
#[derive(Debug, Clone)]
pub struct Buckets {
    mhz: u64,
    scale: OslatScale,
    /// Gaps below this many ticks take the fast path: they all land in
    /// `fast_bucket` and none crosses `-T`, so they are only counted (and
    /// the smallest kept), put in that bucket at the end.
    fast_below: u64,
    fast_bucket: usize,
    fast: u64,
    fast_min_ticks: u64,
    counts: Vec<u64>,
    /// In units.
    bias: u64,
    min: u64,
    max: u64,
    /// What the gaps of the last bucket exceed it by, in bucket widths
    /// (oslat's `overflow_sum`, with its off-by-one kept: `index -
    /// bucket_size`).
    overflow_sum: u64,
    /// `-T` in units (u64::MAX: none).
    trace_units: u64,
    /// The first gap at or above `-T`, in units.
    pub triggered: Option<u64>,
    /// Gaps at or above `-T` so far (all of them, not only the first).
    pub crossings: u64,
}

impl Buckets {
    /// `mhz`: counter ticks per us; `bias`: units taken off every gap's
    /// bucket; `trace_us`: `-T` (None in the pre-heat).
    pub fn new(
        mhz: u64,
        scale: OslatScale,
        bucket_size: usize,
        bias: u64,
        trace_us: Option<u64>,
    ) -> Buckets {
        let mhz = mhz.max(1);
        let trace_units = trace_us.map_or(u64::MAX, |us| us.saturating_mul(scale.unit_per_us));
        let mut b = Buckets {
            mhz,
            scale,
            fast_below: 0,
            fast_bucket: 0,
            fast: 0,
            fast_min_ticks: u64::MAX,
            // Allocated (and touched) here, before the loop.
            counts: vec![0; bucket_size.max(1)],
            bias,
            min: u64::MAX,
            max: 0,
            overflow_sum: 0,
            trace_units,
            triggered: None,
            crossings: 0,
        };
        b.fast_below = b.fast_path_end();
        b.fast_bucket = b.index_of(scale.gap(0, mhz)).0;
        b
    }

    /// The bucket of a gap of `units` (the last for every gap beyond it)
    /// and what it exceeds the last by, in widths.
    fn index_of(&self, units: u64) -> (usize, u64) {
        let index = self.scale.bucket(units, self.bias);
        let size = self.counts.len() as u64;
        if index >= size {
            (size as usize - 1, index - size)
        } else {
            (index as usize, 0)
        }
    }

    /// The smallest tick count whose gap lands elsewhere than a gap of 0
    /// ticks, or crosses `-T`: both only grow with the ticks, so the first
    /// is found by doubling, then halving.
    fn fast_path_end(&self) -> u64 {
        let first = self.index_of(self.scale.gap(0, self.mhz));
        let same = |ticks: u64| {
            let units = self.scale.gap(ticks, self.mhz);
            units < self.trace_units && self.index_of(units) == first
        };
        if !same(0) {
            return 0;
        }
        let mut high = 1u64;
        while same(high) {
            if high > u64::MAX / 2 {
                return high;
            }
            high *= 2;
        }
        // same(low) holds, same(high) does not.
        let mut low = high / 2;
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if same(mid) {
                low = mid;
            } else {
                high = mid;
            }
        }
        high
    }

    /// One gap of `ticks`.
    #[inline(always)]
    pub fn insert(&mut self, ticks: u64) {
        if ticks < self.fast_below {
            self.fast += 1;
            self.fast_min_ticks = self.fast_min_ticks.min(ticks);
        } else {
            self.insert_slow(ticks);
        }
    }

    #[inline(never)]
    fn insert_slow(&mut self, ticks: u64) {
        let units = self.scale.gap(ticks, self.mhz);
        if units >= self.trace_units {
            self.crossings += 1;
            if self.triggered.is_none() {
                self.triggered = Some(units);
            }
        }
        self.max = self.max.max(units);
        self.min = self.min.min(units);
        let (index, extra) = self.index_of(units);
        self.overflow_sum = self.overflow_sum.saturating_add(extra);
        self.counts[index] += 1;
    }

    /// The counts with the fast path's gaps in their bucket, the smallest
    /// and largest gap (units; 0 when there was none), the loops.
    fn totals(&self) -> (Vec<u64>, u64, u64, u64) {
        let mut counts = self.counts.clone();
        counts[self.fast_bucket] += self.fast;
        let mut min = self.min;
        if self.fast > 0 {
            min = min.min(self.scale.gap(self.fast_min_ticks, self.mhz));
        }
        let loops = counts.iter().sum();
        (counts, if loops == 0 { 0 } else { min }, self.max, loops)
    }

    /// The smallest gap, in units (None when there was none): what `-B`
    /// takes as bias.
    pub fn min_gap(&self) -> Option<u64> {
        let (_, min, _, loops) = self.totals();
        (loops > 0).then_some(min)
    }

    /// oslat's figures of this thread, `ticks` of counter time long.
    pub fn figures(&self, ticks: u64) -> OslatCpu {
        let (buckets, min, max, loops) = self.totals();
        // oslat's `calculate`: each bucket at its label, plus the overflow
        // (2.8 adds it in units to a sum of us; here it is in us).
        let width_us = self.scale.bucket_width as f64 / self.scale.unit_per_us as f64;
        let sum: f64 = buckets
            .iter()
            .enumerate()
            .map(|(j, &n)| n as f64 * self.scale.label_us(j, self.bias))
            .sum::<f64>()
            + self.overflow_sum as f64 * width_us;
        OslatCpu {
            counter_mhz: self.mhz,
            scale: self.scale,
            bias: self.bias,
            buckets,
            min,
            max,
            average_us: if loops == 0 { 0.0 } else { sum / loops as f64 },
            // oslat's `cycles_to_sec` computes in float.
            duration_s: f64::from((ticks as f64 / (self.mhz as f64 * 1e6)) as f32),
        }
    }
}

/// The work done before each read.
trait Workload {
    fn run(&mut self);
}

struct NoWork;

impl Workload for NoWork {
    #[inline(always)]
    fn run(&mut self) {}
}

/// `-w memmove`: oslat's `memmove(dst, src, size)` of page-sized buffers.
struct Memmove {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl Workload for Memmove {
    #[inline(always)]
    fn run(&mut self) {
        self.dst.copy_from_slice(&self.src);
        // The copy is the load: it must not be optimised away.
        std::hint::black_box(&mut self.dst);
    }
}

/// What a phase's threads share with its controller.
struct PhaseShared {
    ready: AtomicUsize,
    start_ns: AtomicU64,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    /// `-T`: (CPU, us) of the first gap that crossed it.
    triggered: Mutex<Option<(usize, u64)>>,
    /// `-T`'s trace, fired once by the thread that crossed it.
    trace: Mutex<Option<BreakTrace>>,
}

struct OslatVisit<'a, W: Workload> {
    buckets: Buckets,
    work: W,
    end: u64,
    cpu: usize,
    shared: &'a PhaseShared,
    app_name: &'a str,
    /// `-T` triggers `--on-threshold`: where the crossings are counted,
    /// this thread's series there, and its count already handed over.
    breaks: Option<(&'a crate::stats::crossings::BreakCrossings, usize)>,
    published: u64,
}

impl<W: Workload> Visit for OslatVisit<'_, W> {
    #[inline(always)]
    fn work(&mut self) {
        self.work.run();
    }

    #[inline(always)]
    fn gap(&mut self, _now: u64, gap: u64) {
        self.buckets.insert(gap);
    }

    fn check(&mut self, now: u64) -> Next {
        let mut keep_running = false;
        if let Some((breaks, series)) = self.breaks {
            let crossings = self.buckets.crossings;
            if crossings > self.published {
                breaks.add(series, crossings - self.published);
                self.published = crossings;
            }
            keep_running = breaks.keep_running;
        }
        if let Some(us) = self.buckets.triggered
            && !keep_running
        {
            self.fire(us);
            return Next::Stop;
        }
        if now >= self.end || self.shared.stop.load(Ordering::Relaxed) {
            Next::Stop
        } else {
            Next::Go
        }
    }
}

impl<W: Workload> OslatVisit<'_, W> {
    /// `-T` crossed: the first thread to get here marks the trace, stops
    /// the tracer and every thread.
    #[cold]
    fn fire(&self, units: u64) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let Ok(mut first) = self.shared.triggered.lock() else {
            return;
        };
        if first.is_some() {
            return;
        }
        *first = Some((self.cpu, units));
        if let Ok(mut trace) = self.shared.trace.lock()
            && let Some(trace) = trace.as_mut()
        {
            let scale = self.buckets.scale;
            let threshold_us = self.buckets.trace_units / scale.unit_per_us;
            let message = trigger_message(self.app_name, threshold_us, self.cpu, units, scale);
            trace.fire(message.as_bytes());
        }
    }
}

/// oslat's `-T` message (stderr and trace marker): the gap of `units` in
/// us; rt-tests 2.8 (`-W`) prints it with the scale's decimals and no
/// longer says "Stopping the test.".
pub fn trigger_message(
    app_name: &str,
    threshold_us: u64,
    cpu: usize,
    units: u64,
    scale: OslatScale,
) -> String {
    let head = format!(
        "{app_name}: Trace threshold ({threshold_us} us) triggered on cpu {cpu} with {} us!\n",
        scale.us_text(units)
    );
    if scale.classic {
        head + "Stopping the test.\n"
    } else {
        head
    }
}

/// How one phase ended.
pub struct PhaseOutcome {
    /// Per thread, in CPU order: the buckets and the counter time spun.
    pub threads: Vec<(usize, Buckets, u64)>,
    pub interrupted: bool,
    /// `-T`: (CPU, the gap in units).
    pub triggered: Option<(usize, u64)>,
}

impl PhaseOutcome {
    /// The smallest gap of every thread (`-B`'s bias), in units; 0 when no
    /// thread counted any.
    pub fn min_gap(&self) -> u64 {
        self.threads
            .iter()
            .filter_map(|(_, b, _)| b.min_gap())
            .min()
            .unwrap_or(0)
    }
}

/// One phase: the pre-heat (`preheat`: 1 s, no `-T`, on the first CPU only
/// with `-s`) or the test (with `bias`). `wait_for_stop` waits up to its
/// timeout for Ctrl-C/SIGTERM and says whether one came. `trace` is `-T`'s.
pub fn run_phase(
    plan: &OslatPlan,
    preheat: bool,
    bias: u64,
    trace: Option<BreakTrace>,
    app_name: &str,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
) -> Result<PhaseOutcome, String> {
    let cpus: &[usize] = if preheat && plan.single_preheat {
        &plan.cpus[..plan.cpus.len().min(1)]
    } else {
        &plan.cpus
    };
    let duration_ns = if preheat {
        PREHEAT_NS
    } else {
        plan.duration_ns
    };
    let trace_us = if preheat {
        None
    } else {
        plan.trace_threshold_us
    };
    let shared = PhaseShared {
        ready: AtomicUsize::new(0),
        start_ns: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        triggered: Mutex::new(None),
        trace: Mutex::new(trace),
    };
    let thread = ThreadPlan {
        plan,
        shared: &shared,
        duration_ns,
        bias,
        trace_us,
        app_name,
    };
    std::thread::scope(|scope| -> Result<PhaseOutcome, String> {
        let mut handles = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let thread = &thread;
            let spawned = std::thread::Builder::new()
                .name(format!("oslat-{cpu}"))
                .stack_size(THREAD_STACK)
                .spawn_scoped(scope, move || thread.run(cpu));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    return Err(format!("could not start a spinning thread: {e}"));
                }
            }
        }
        let control = control(&shared, cpus.len(), wait_for_stop);
        shared.stop.store(true, Ordering::Relaxed);
        let mut threads = Vec::with_capacity(handles.len());
        for h in handles {
            match h.join() {
                Ok(Some(done)) => threads.push(done),
                Ok(None) => {}
                Err(_) => return Err("a spinning thread panicked".to_string()),
            }
        }
        let interrupted = control?;
        if let Some(e) = shared.error.lock().ok().and_then(|e| e.clone()) {
            return Err(e);
        }
        let triggered = shared.triggered.lock().ok().and_then(|t| *t);
        Ok(PhaseOutcome {
            threads,
            interrupted,
            triggered,
        })
    })
}

/// The controller of a phase: waits for the threads' set-up, lets them go,
/// waits for their end or a stop signal (true: interrupted).
fn control(
    shared: &PhaseShared,
    threads: usize,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
) -> Result<bool, String> {
    let first_error = || shared.error.lock().ok().and_then(|e| e.clone());
    let set_up = crate::rt::setup::wait_until_set_up(
        first_error,
        || shared.ready.load(Ordering::Acquire) >= threads,
        wait_for_stop,
    )?;
    if set_up == crate::rt::setup::SetUp::Stopped {
        return Ok(true);
    }
    shared
        .start_ns
        .store(monotonic_ns() + START_DELAY_NS, Ordering::Release);
    loop {
        if wait_for_stop(Duration::from_millis(100)) {
            return Ok(true);
        }
        if let Some(e) = first_error() {
            return Err(e);
        }
        if shared.ready.load(Ordering::Acquire) == 0 {
            return Ok(false);
        }
    }
}

/// What every thread of a phase runs with.
struct ThreadPlan<'a> {
    plan: &'a OslatPlan,
    shared: &'a PhaseShared,
    duration_ns: u64,
    bias: u64,
    trace_us: Option<u64>,
    app_name: &'a str,
}

impl ThreadPlan<'_> {
    /// The thread of `cpu`: set up, wait for the start, spin, count itself
    /// out (`ready` back to 0 when all are done).
    fn run(&self, cpu: usize) -> Option<(usize, Buckets, u64)> {
        let done = self.set_up_and_spin(cpu);
        self.shared.ready.fetch_sub(1, Ordering::AcqRel);
        match done {
            Ok((b, t)) => Some((cpu, b, t)),
            Err(e) => {
                self.shared.stop.store(true, Ordering::Relaxed);
                if let Ok(mut slot) = self.shared.error.lock() {
                    slot.get_or_insert(e);
                }
                None
            }
        }
    }

    fn set_up_and_spin(&self, cpu: usize) -> Result<(Buckets, u64), String> {
        let plan = self.plan;
        let (policy, priority) = match plan.rtprio {
            Some(p) => (Policy::Fifo, p),
            None => (Policy::Other, 0),
        };
        let set_up = sched::pin_current_thread(cpu)
            .and_then(|()| sched::set_current_thread_policy(policy, priority))
            .map_err(|e| format!("the spinning thread on CPU {cpu}: {e}"));
        // Counted as ready even on failure, so that the controller's count
        // stays right; the error ends the phase.
        self.shared.ready.fetch_add(1, Ordering::AcqRel);
        set_up?;
        let scale = plan.counter.scale();
        let buckets = Buckets::new(
            scale.mhz(),
            plan.scale,
            plan.bucket_size,
            self.bias,
            self.trace_us,
        );
        let memmove = plan.memmove_bytes.map(|n| Memmove {
            src: vec![0; n],
            dst: vec![0; n],
        });
        // Sleep until the controller's start (all threads set up). Stopped
        // before it, the thread still reports its CPU, with nothing counted.
        let start = loop {
            let start = self.shared.start_ns.load(Ordering::Acquire);
            if start != 0 {
                break start;
            }
            if !sleep_until_or(&self.shared.stop, monotonic_ns() + 1_000_000) {
                return Ok((buckets, 0));
            }
        };
        if !sleep_until_or(&self.shared.stop, start) {
            return Ok((buckets, 0));
        }
        let left_ns = start
            .saturating_add(self.duration_ns)
            .saturating_sub(monotonic_ns());
        let end = plan.counter.now().saturating_add(scale.ticks(left_ns));
        let check = scale.ticks(CHECK_NS);
        let (buckets, spun) = match memmove {
            None => self.spin(cpu, buckets, NoWork, end, check),
            Some(work) => self.spin(cpu, buckets, work, end, check),
        };
        Ok((buckets, spun.last.saturating_sub(spun.first)))
    }
}

impl ThreadPlan<'_> {
    fn spin<W: Workload>(
        &self,
        cpu: usize,
        buckets: Buckets,
        work: W,
        end: u64,
        check: u64,
    ) -> (Buckets, super::spinner::Spun) {
        // Not in the pre-heat, which has no -T.
        let breaks = self
            .trace_us
            .and(self.plan.breaks.as_deref())
            .zip(self.plan.cpus.iter().position(|&c| c == cpu));
        let mut visit = OslatVisit {
            buckets,
            work,
            end,
            cpu,
            shared: self.shared,
            app_name: self.app_name,
            breaks,
            published: 0,
        };
        let spun = spin_on(self.plan.counter, &mut visit, check);
        (visit.buckets, spun)
    }
}

/// The CPUs' figures of a finished test phase, with their counter time.
pub fn figures_of(outcome: &PhaseOutcome) -> Vec<(usize, OslatCpu)> {
    outcome
        .threads
        .iter()
        .map(|(cpu, b, ticks)| (*cpu, b.figures(*ticks)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLASSIC: OslatScale = OslatScale::CLASSIC;
    /// `-W 500`: ns, 500 ns buckets.
    const W500: OslatScale = OslatScale {
        unit_per_us: 1000,
        bucket_width: 500,
        classic: false,
    };
    /// `-W 2000`: us, 2 us buckets.
    const W2000: OslatScale = OslatScale {
        unit_per_us: 1,
        bucket_width: 2,
        classic: false,
    };

    #[test]
    fn gaps_go_to_whole_microsecond_buckets() {
        // 2000 ticks per us, 8 buckets, no bias.
        let mut b = Buckets::new(2000, CLASSIC, 8, 0, None);
        for ticks in [0, 1999, 2000, 3999, 4000, 15_999, 16_000, 40_000] {
            b.insert(ticks);
        }
        let f = b.figures(2_000_000_000);
        // 0 and 1999 -> 1 us (bucket 0); 2000, 3999 -> 2 us; 4000 -> 3 us;
        // 15999 -> 8 us (the last bucket); 16000 -> 9 us and 40000 -> 21 us
        // overflow into it, by 9-1-8 = 0 and 21-1-8 = 12.
        assert_eq!(f.buckets, vec![2, 2, 1, 0, 0, 0, 0, 3]);
        assert_eq!((f.min, f.max), (1, 21));
        // (2*1 + 2*2 + 1*3 + 3*8 + 12) / 8
        assert_eq!(f.average_us, 45.0 / 8.0);
        assert_eq!(f.duration_s, 1.0);
        assert_eq!(f.counter_mhz, 2000);
    }

    #[test]
    fn the_bias_shifts_every_bucket_and_clamps_at_the_first() {
        let mut b = Buckets::new(1000, CLASSIC, 4, 2, None);
        for ticks in [500, 1500, 2500, 3500, 9500] {
            b.insert(ticks);
        }
        let f = b.figures(0);
        // us 1, 2 -> index 0, 1 minus 2 -> 0; us 3 -> 0; us 4 -> 1; us 10 ->
        // index 9-2 = 7 >= 4: the last bucket, overflow 7-4 = 3.
        assert_eq!(f.buckets, vec![3, 1, 0, 1]);
        assert_eq!((f.min, f.max, f.bias), (1, 10, 2));
        // Labels 3, 4, 5, 6: (3*3 + 1*4 + 1*6 + 3) / 5
        assert_eq!(f.average_us, 22.0 / 5.0);
    }

    #[test]
    fn the_trace_threshold_triggers_at_or_above_it_once() {
        let mut b = Buckets::new(1000, CLASSIC, 32, 0, Some(5));
        b.insert(3999);
        assert_eq!(b.triggered, None);
        b.insert(4000);
        assert_eq!(b.triggered, Some(5));
        b.insert(9000);
        assert_eq!(b.triggered, Some(5), "the first crossing is kept");
        // -T 1: every gap crosses it, the fast path included.
        let mut one = Buckets::new(1000, CLASSIC, 32, 0, Some(1));
        one.insert(10);
        assert_eq!(one.triggered, Some(1));
    }

    #[test]
    fn an_empty_thread_has_zero_figures() {
        let f = Buckets::new(1000, CLASSIC, 32, 0, None).figures(0);
        assert_eq!((f.min, f.max, f.average_us), (0, 0, 0.0));
        assert_eq!(f.buckets.len(), 32);
    }

    #[test]
    fn trigger_message_is_oslats() {
        assert_eq!(
            trigger_message("oslat", 5, 1, 28, CLASSIC),
            "oslat: Trace threshold (5 us) triggered on cpu 1 with 28 us!\nStopping the test.\n"
        );
        // rt-tests 2.8's, with -W: the gap in us at the scale's decimals.
        assert_eq!(
            trigger_message("oslat", 1, 0, 1234, W500),
            "oslat: Trace threshold (1 us) triggered on cpu 0 with 1.234 us!\n"
        );
        assert_eq!(
            trigger_message("oslat", 5, 1, 28, W2000),
            "oslat: Trace threshold (5 us) triggered on cpu 1 with 28 us!\n"
        );
    }

    #[test]
    fn a_width_of_500_ns_counts_in_nanoseconds() {
        // 2000 ticks per us: 2 ticks per ns; -W 500 makes 64 buckets.
        let mut b = Buckets::new(2000, W500, 64, 0, None);
        // The gaps below 500 ns (1000 ticks) take the fast path.
        assert_eq!(b.fast_below, 1000);
        for ticks in [2, 999, 1000, 2999, 200_000] {
            b.insert(ticks);
        }
        let f = b.figures(0);
        // 1 and 499 ns -> bucket 0 (0.500 us); 500 -> 1 (1.000); 1499 -> 2
        // (1.500); 100000 ns -> index 200: the last, 200-64 = 136 over.
        let mut expected = vec![0; 64];
        expected[..3].copy_from_slice(&[2, 1, 1]);
        expected[63] = 1;
        assert_eq!(f.buckets, expected);
        // In ns, the fast path's smallest gap included.
        assert_eq!((f.min, f.max), (1, 100_000));
        assert_eq!(f.scale, W500);
        // (2*0.5 + 1.0 + 1.5 + 32.0 + 136 widths of 0.5 us) / 5
        assert_eq!(f.average_us, 103.5 / 5.0);
    }

    #[test]
    fn a_width_of_2000_ns_counts_whole_microseconds_rounded_down() {
        let mut b = Buckets::new(1000, W2000, 32, 0, None);
        for ticks in [999, 1500, 2500, 3999, 4000] {
            b.insert(ticks);
        }
        let f = b.figures(0);
        // 0, 1 us -> bucket 0 (2 us); 2, 3 -> 1 (4); 4 -> 2 (6). rt-tests
        // 2.8 rounds down where 2.40 added 1 us.
        assert_eq!(f.buckets[..4], [2, 2, 1, 0]);
        assert_eq!((f.min, f.max), (0, 4));
    }

    #[test]
    fn rt_tests_2_8s_bias_puts_the_smallest_gaps_one_unit_above_it() {
        // -W 1000 -B with a bias of 2 us: a gap at or below it counts as 1 us
        // (bucket 1 of 1 us buckets), one above it as the difference.
        let one_us = OslatScale {
            unit_per_us: 1,
            bucket_width: 1,
            classic: false,
        };
        let mut b = Buckets::new(1000, one_us, 8, 2, None);
        for ticks in [500, 2500, 3500, 5500] {
            b.insert(ticks);
        }
        let f = b.figures(0);
        assert_eq!(f.buckets[..4], [0, 3, 0, 1]);
        assert_eq!((f.min, f.max, f.bias), (0, 5, 2));
    }

    #[test]
    fn the_trace_threshold_in_nanoseconds() {
        let mut b = Buckets::new(2000, W500, 64, 0, Some(1));
        b.insert(1999);
        assert_eq!(b.triggered, None);
        b.insert(2000);
        assert_eq!(b.triggered, Some(1000), "1 us = 1000 ns");
    }
}
