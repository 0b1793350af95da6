//! Periodic timer wake-up latency (Xenomai's `latency`, cyclictest): how late
//! a real-time thread runs after its timer expires.
//!
//! One sampling thread per CPU (`sampler`), each with its own figures
//! (`figure`). The controller here starts them, optionally starts the kernel
//! trace that splits every wake-up into IRQ, thread and user latency
//! (`breakdown`), and then monitors: it drains each thread's completed
//! one-second loops for the live output and the per-second series, and stops
//! the threads on Ctrl-C/SIGTERM, at the end of `-T`, at `-b`, or when a
//! thread fails.

pub mod breakdown;
pub mod cyclic;
pub mod figure;
pub mod posix_timer;
pub mod sampler;

use crate::report::EndReason;
use crate::rt::bpf::CollectorUsed;
use crate::rt::clock::monotonic_ns;
use crate::rt::sched::Policy;
use crate::rt::signals::take_snapshot_request;
use crate::rt::tracefs::BreakTrace;
use crate::stats::live::{LiveHistogram, SpscRing};
use crate::stats::window::{LiveCounters, SecondStats, WindowHook, WindowSeries};
use crate::stats::window_histogram::HistogramRing;
use figure::{FigureSink, LoopStats};
use sampler::SamplerEnd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Stack of a sampling thread: small, since `mlockall` locks all of it.
const SAMPLING_THREAD_STACK: usize = 256 * 1024;
/// Loops buffered between two drains of the monitor (it drains every 100 ms).
const LOOP_RING_SLOTS: usize = 64;
/// Time from the start signal to the first expiry, so that every thread (and
/// the trace, with `--breakdown`) is waiting when it comes.
const FIRST_EXPIRY_DELAY_NS: u64 = 1_000_000;

/// How the sampling threads wait for their expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMethod {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, as cyclictest.
    Nanosleep,
    /// A periodic timerfd read, as Xenomai's Linux build.
    Timerfd,
    /// A POSIX interval timer signalling the thread, taken by sigwait
    /// (cyclictest's `-x`).
    PosixTimer,
}

impl WakeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeMethod::Nanosleep => "clock_nanosleep",
            WakeMethod::Timerfd => "timerfd",
            WakeMethod::PosixTimer => "posix timer",
        }
    }
}

/// Which latency of a wake-up is the run's main figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The thread's own clock read after waking - expiry (Xenomai `-t 0`).
    User,
    /// Scheduled in - expiry, from the kernel trace (`-t 1`).
    Thread,
    /// Timer interrupt handler start - expiry, from the kernel trace (`-t 2`).
    Irq,
}

impl Figure {
    pub fn as_str(self) -> &'static str {
        match self {
            Figure::User => "user",
            Figure::Thread => "thread",
            Figure::Irq => "irq",
        }
    }

    /// Xenomai's `-t` number.
    pub fn test_mode(self) -> usize {
        match self {
            Figure::User => 0,
            Figure::Thread => 1,
            Figure::Irq => 2,
        }
    }
}

/// Everything a timer run needs, checked by the settings.
pub struct TimerPlan {
    /// One sampling thread per CPU listed.
    pub cpus: Vec<usize>,
    pub policy: Policy,
    pub priority: i32,
    pub period_ns: u64,
    pub wake: WakeMethod,
    pub warmup_loops: u64,
    /// Measuring time after the warm-up; None = until stopped.
    pub duration_ns: Option<u64>,
    pub histogram_cells: usize,
    pub bucket_ns: u64,
    pub limit_ns: Option<i64>,
    /// `-f`: mark each new maximum in the kernel trace, stop tracing at the end.
    pub freeze_trace: bool,
    /// `-b`: stop at the first context switch or page fault of a sampling thread.
    pub break_on_switch: bool,
    /// Trace the kernel side of every wake-up.
    pub breakdown: bool,
    pub figure: Figure,
    /// `--trace-spikes`: attribute every sample above this (ns).
    pub spike_threshold_ns: Option<u64>,
    /// Set to stop every thread (by the controller, or by a thread at `-b`).
    pub stop: Arc<AtomicBool>,
    /// `--samples`: each thread's sample ring (by thread index).
    pub samples: Option<crate::stats::samples::TestSamples>,
    /// `--collector`: where the kernel events of `--breakdown` are gathered.
    pub collector: crate::rt::bpf::CollectorChoice,
}

impl TimerPlan {
    /// Samples per one-second loop, as Xenomai: `1 s / period`, at least one.
    pub fn samples_per_loop(&self) -> u64 {
        (1_000_000_000 / self.period_ns).max(1)
    }
}

/// What a sampling thread and the controller share.
pub struct ThreadShared {
    pub ready: AtomicBool,
    pub tid: AtomicI32,
    /// 0 until the controller lets the thread start; then its first expiry.
    pub first_expiry_ns: AtomicU64,
    /// 0 during the warm-up; then the first expiry that is measured.
    pub measuring_from_ns: AtomicU64,
    pub error: Mutex<Option<String>>,
    /// Completed loops of the run's main figure.
    pub loops: SpscRing<LoopStats>,
    /// Their histograms, each published before its loop.
    pub window_histograms: HistogramRing,
    /// Samples of the main figure, for the live percentile.
    pub live: LiveHistogram,
    pub overruns: AtomicU64,
    /// Samples above `--max-latency` so far (published with `overruns`).
    pub above_limit: AtomicU64,
    pub msw: AtomicU64,
    pub finished: AtomicBool,
    /// Samples above `--trace-spikes`, for the spike trace.
    pub spikes: Arc<crate::spikes::CandidateQueue>,
    /// `--breakdown` in the kernel: this thread's slot, set by the controller
    /// before the first expiry.
    pub kernel_slot: std::sync::OnceLock<crate::probes::wakeups::SlotReader>,
}

impl Default for ThreadShared {
    fn default() -> Self {
        ThreadShared {
            ready: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            first_expiry_ns: AtomicU64::new(0),
            measuring_from_ns: AtomicU64::new(0),
            error: Mutex::new(None),
            loops: SpscRing::with_capacity(LOOP_RING_SLOTS),
            window_histograms: HistogramRing::default(),
            live: LiveHistogram::default(),
            overruns: AtomicU64::new(0),
            above_limit: AtomicU64::new(0),
            msw: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            spikes: crate::spikes::candidate_queue(),
            kernel_slot: std::sync::OnceLock::new(),
        }
    }
}

impl ThreadShared {
    pub fn fail(&self, message: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(message);
        }
    }

    fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// What the live output sees while the run goes on.
pub trait TimerProgress {
    /// Loops of thread `thread` completed since the last call, in order.
    fn loops(&mut self, thread: usize, loops: &[LoopStats], shared: &ThreadShared);
    /// Called about every 100 ms.
    fn tick(&mut self, elapsed: Duration, threads: &[Arc<ThreadShared>]);
    /// The run is over (clear a progress line).
    fn finish(&mut self);
}

/// The results of one sampling thread.
pub struct ThreadOutcome {
    pub cpu: usize,
    pub tid: i32,
    /// The main figure's samples (user latency, or a traced one with `-t 1/2`).
    pub figure: FigureSink,
    pub overruns: u64,
    pub above_limit: u64,
    /// `--policy deadline`: wake-ups done after their deadline, and the
    /// throttled periods (also in `overruns`).
    pub missed_deadlines: u64,
    pub throttled: u64,
    pub counters: sampler::SwitchCounters,
    pub per_second: Vec<SecondStats>,
    pub per_second_dropped: u64,
    pub breakdown: Option<crate::report::Breakdown>,
}

pub struct TimerOutcome {
    pub threads: Vec<ThreadOutcome>,
    pub end_reason: EndReason,
    pub error: Option<String>,
    /// What `-b` saw, for the message: (CPU, counters that moved).
    pub break_on_switch: Option<(usize, sampler::SwitchCounters)>,
    /// Measuring time (after the warm-up), the longest of the threads.
    pub measured: Duration,
    pub trace_stats: Option<breakdown::TraceSummary>,
    /// With `--trace-spikes`.
    pub spikes: Option<crate::report::SpikeTrace>,
}

/// Runs the test until it ends; `wait_for_stop` polls for Ctrl-C/SIGTERM;
/// `hook` learns of every loop (window) drained and serves the snapshots
/// (SIGUSR1).
pub fn run(
    plan: &TimerPlan,
    progress: &mut dyn TimerProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> Result<TimerOutcome, String> {
    let plan_ref: &TimerPlan = plan;
    let shared: Vec<Arc<ThreadShared>> = plan
        .cpus
        .iter()
        .map(|_| Arc::new(ThreadShared::default()))
        .collect();
    // Figures and marker files are built here, before any thread is real-time.
    let outcome = std::thread::scope(|scope| -> Result<TimerOutcome, String> {
        let mut handles = Vec::with_capacity(plan.cpus.len());
        // Threads already started wait for the first expiry: on an error
        // they must be told to stop before the scope joins them.
        let give_up = |e: String| {
            plan.stop.store(true, Ordering::Relaxed);
            e
        };
        for (index, thread_shared) in shared.iter().enumerate() {
            let user = FigureSink::new(plan.histogram_cells, plan.bucket_ns).map_err(give_up)?;
            let user = if plan.figure == Figure::User {
                user.with_window()
            } else {
                user
            };
            // The in-kernel figures, if the controller starts the BPF
            // collector (the main figure's with its per-loop window).
            let kernel_sinks = if plan.breakdown {
                let sink = |main: bool| {
                    FigureSink::new(plan.histogram_cells, plan.bucket_ns)
                        .map(|s| if main { s.with_window() } else { s })
                };
                Some((
                    sink(plan.figure == Figure::Irq).map_err(give_up)?,
                    sink(plan.figure == Figure::Thread).map_err(give_up)?,
                ))
            } else {
                None
            };
            let freeze = if plan.freeze_trace {
                BreakTrace::open().ok()
            } else {
                None
            };
            let thread_shared = thread_shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("sampling-{}", plan.cpus[index]))
                .stack_size(SAMPLING_THREAD_STACK)
                .spawn_scoped(scope, move || {
                    let end =
                        sampler::run(plan_ref, index, &thread_shared, user, freeze, kernel_sinks);
                    thread_shared.finished.store(true, Ordering::Release);
                    end
                })
                .map_err(|e| give_up(format!("could not start a sampling thread: {e}")))?;
            handles.push(handle);
        }
        let result = control(plan, &shared, progress, wait_for_stop, hook);
        plan.stop.store(true, Ordering::Relaxed);
        let ends: Vec<SamplerEnd> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "a sampling thread panicked".to_string())
            })
            .collect::<Result<_, _>>()?;
        let mut control = result?;
        Ok(control.finish(plan, &shared, ends, progress, hook))
    })?;
    Ok(outcome)
}

/// The controller's state while the threads run.
struct Control {
    end_reason: EndReason,
    per_second: Vec<WindowSeries>,
    trace: Option<breakdown::TraceSession>,
    /// `--breakdown` collected in the kernel (BPF).
    in_kernel: Option<crate::probes::wakeups::WakeupSlots>,
    /// Which collector gathers the breakdown, and why.
    collector: CollectorUsed,
    spikes: Option<crate::spikes::SpikeTracer>,
}

fn control(
    plan: &TimerPlan,
    shared: &[Arc<ThreadShared>],
    progress: &mut dyn TimerProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> Result<Control, String> {
    let mut control = Control {
        end_reason: EndReason::DurationElapsed,
        per_second: shared.iter().map(|_| WindowSeries::default()).collect(),
        trace: None,
        in_kernel: None,
        collector: CollectorUsed::default(),
        spikes: None,
    };
    let set_up = crate::rt::setup::wait_until_set_up(
        || shared.iter().find_map(|s| s.error()),
        || shared.iter().all(|s| s.ready.load(Ordering::Acquire)),
        wait_for_stop,
    )?;
    if set_up == crate::rt::setup::SetUp::Stopped {
        control.end_reason = EndReason::Interrupted;
        return Ok(control);
    }
    // The trace is told the phase of the expiries before it starts; the first
    // expiry itself is chosen after (starting the trace takes tens of ms), on
    // the same phase, so that the warm-up is not spent catching up.
    let provisional = monotonic_ns() + FIRST_EXPIRY_DELAY_NS;
    if plan.breakdown {
        control.start_breakdown(plan, shared, provisional)?;
    }
    if let Some(threshold) = plan.spike_threshold_ns {
        let threads = shared
            .iter()
            .map(|s| (s.spikes.clone(), s.tid.load(Ordering::Relaxed)));
        control.spikes = Some(crate::spikes::SpikeTracer::start_per_cpu(
            &plan.cpus,
            threads,
            crate::spikes::attribution::Wait::Timer,
            threshold,
            plan.collector,
        )?);
    }
    let earliest = monotonic_ns() + FIRST_EXPIRY_DELAY_NS;
    let first_expiry = provisional
        + earliest
            .saturating_sub(provisional)
            .div_ceil(plan.period_ns)
            * plan.period_ns;
    for s in shared {
        s.first_expiry_ns.store(first_expiry, Ordering::Release);
    }
    let started = std::time::Instant::now();
    loop {
        let signalled = wait_for_stop(Duration::from_millis(100));
        control.drain(shared, progress, hook);
        if !signalled && take_snapshot_request() {
            hook.snapshot();
        }
        progress.tick(started.elapsed(), shared);
        if signalled {
            control.end_reason = EndReason::Interrupted;
            break;
        }
        if shared.iter().any(|s| s.error().is_some()) {
            control.end_reason = EndReason::Error;
            break;
        }
        if shared.iter().all(|s| s.finished.load(Ordering::Acquire)) {
            if plan.stop.load(Ordering::Relaxed) && plan.break_on_switch {
                control.end_reason = EndReason::BreakOnSwitch;
            }
            break;
        }
    }
    Ok(control)
}

impl Control {
    /// Starts the kernel side of `--breakdown` with the collector chosen:
    /// BPF where it can run (and loads), else tracefs, saying why.
    fn start_breakdown(
        &mut self,
        plan: &TimerPlan,
        shared: &[Arc<ThreadShared>],
        provisional: u64,
    ) -> Result<(), String> {
        use crate::probes::choice::{self, Plan};
        let plan_of_collection = choice::plan(plan.collector, crate::rt::bpf::probe::check)
            .map_err(|e| e.to_string())?;
        self.collector = match plan_of_collection {
            Plan::Bpf => match start_in_kernel(plan, shared, provisional) {
                Ok(slots) => {
                    self.in_kernel = Some(slots);
                    self.collector = CollectorUsed::bpf();
                    return Ok(());
                }
                Err(why) => choice::fall_back(plan.collector, why).map_err(|e| e.to_string())?,
            },
            Plan::Tracefs(used) => used,
        };
        let threads: Vec<breakdown::Traced> = shared
            .iter()
            .enumerate()
            .map(|(i, s)| breakdown::Traced {
                tid: s.tid.load(Ordering::Relaxed),
                cpu: plan.cpus[i],
                first_expiry_ns: provisional,
            })
            .collect();
        self.trace = Some(breakdown::TraceSession::start(plan, &threads, shared)?);
        Ok(())
    }

    /// Hands the loops completed since the last call to the live output and
    /// to the per-second series.
    fn drain(
        &mut self,
        shared: &[Arc<ThreadShared>],
        progress: &mut dyn TimerProgress,
        hook: &mut dyn WindowHook,
    ) {
        let mut batch = Vec::new();
        for (i, s) in shared.iter().enumerate() {
            s.loops.drain(|l| batch.push(l));
            if batch.is_empty() {
                continue;
            }
            progress.loops(i, &batch, s);
            self.per_second[i].extend_with(
                batch.drain(..).map(|l| {
                    SecondStats::new(l.index, 1, l.samples, l.min_ns, l.avg_ns(), l.max_ns)
                }),
                &s.window_histograms,
                &mut |w, h| hook.window(i, w, h),
            );
        }
        for (i, s) in shared.iter().enumerate() {
            hook.counters(
                i,
                LiveCounters {
                    overruns: s.overruns.load(Ordering::Relaxed),
                    above_limit: s.above_limit.load(Ordering::Relaxed),
                    ..LiveCounters::default()
                },
            );
        }
        hook.drained();
    }

    fn finish(
        &mut self,
        plan: &TimerPlan,
        shared: &[Arc<ThreadShared>],
        ends: Vec<SamplerEnd>,
        progress: &mut dyn TimerProgress,
        hook: &mut dyn WindowHook,
    ) -> TimerOutcome {
        let (mut traced, trace_stats) = match self.trace.take() {
            Some(session) => {
                let last: Vec<(u64, bool)> = ends
                    .iter()
                    .map(|e| (e.last_expiry_ns, e.last_loop_partial))
                    .collect();
                let (figures, stats) = session.stop(&last);
                (figures.into_iter().map(Some).collect(), Some(stats))
            }
            None => (Vec::new(), None),
        };
        let spikes = self.spikes.take().map(crate::spikes::SpikeTracer::stop);
        // The threads are joined: detach and close the programs.
        let in_kernel_source = self.in_kernel.take().map(|slots| slots.source.clone());
        // The threads and the trace are done: what the rings still hold.
        self.drain(shared, progress, hook);
        progress.finish();
        traced.resize_with(ends.len(), || None);
        let error = shared.iter().find_map(|s| s.error());
        let mut break_on_switch = None;
        let mut measured = Duration::ZERO;
        let threads = ends
            .into_iter()
            .zip(traced)
            .enumerate()
            .map(|(i, (end, traced))| {
                if let Some(moved) = end.broke_on_switch {
                    break_on_switch.get_or_insert((plan.cpus[i], moved));
                }
                measured = measured.max(Duration::from_nanos(
                    end.measuring_until_ns.saturating_sub(end.measuring_from_ns),
                ));
                let (figure, breakdown) = match (end.kernel, &in_kernel_source) {
                    (Some(kernel), Some(source)) => {
                        let (figure, b) =
                            breakdown::assign_in_kernel(plan.figure, end.user, kernel, source);
                        (figure, Some(b))
                    }
                    _ => breakdown::assign(
                        plan.figure,
                        end.user,
                        traced,
                        trace_stats.as_ref(),
                        &self.collector,
                    ),
                };
                ThreadOutcome {
                    cpu: plan.cpus[i],
                    tid: shared[i].tid.load(Ordering::Relaxed),
                    figure,
                    overruns: end.overruns,
                    above_limit: end.above_limit,
                    missed_deadlines: end.missed_deadlines,
                    throttled: end.throttled,
                    counters: end.counters,
                    per_second: std::mem::take(&mut self.per_second[i]).into_windows(),
                    per_second_dropped: shared[i].loops.dropped(),
                    breakdown,
                }
            })
            .collect();
        let end_reason = if error.is_some() {
            EndReason::Error
        } else if break_on_switch.is_some() {
            EndReason::BreakOnSwitch
        } else {
            self.end_reason
        };
        TimerOutcome {
            threads,
            end_reason,
            error,
            break_on_switch,
            measured,
            trace_stats,
            spikes,
        }
    }
}

/// Loads the in-kernel breakdown for the sampling threads and hands each
/// its slot; the error says why (with the verifier's log saved to a file).
fn start_in_kernel(
    plan: &TimerPlan,
    shared: &[Arc<ThreadShared>],
    provisional: u64,
) -> Result<crate::probes::wakeups::WakeupSlots, String> {
    use crate::probes::wakeups::{TracedThread, WakeupSlots};
    let tracefs = crate::rt::tracefs::mount::find_or_mount()?;
    let threads: Vec<TracedThread> = shared
        .iter()
        .enumerate()
        .map(|(i, s)| TracedThread {
            tid: s.tid.load(Ordering::Relaxed),
            cpu: plan.cpus[i],
            first_expiry_ns: provisional,
            period_ns: plan.period_ns,
        })
        .collect();
    // A verifier's refusal names the file of its log and listing.
    let slots = WakeupSlots::start(&tracefs, &threads).map_err(|e| e.to_string())?;
    for (i, s) in shared.iter().enumerate() {
        let reader = slots
            .reader(plan.cpus[i])
            .ok_or_else(|| format!("CPU {} has no slot", plan.cpus[i]))?;
        // Set once per run: a second set cannot happen.
        let _ = s.kernel_slot.set(reader);
    }
    Ok(slots)
}
