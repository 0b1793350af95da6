//! OS noise on a CPU (`latscope noise`, the `oslat` and osnoise family):
//! one thread per measured CPU spins reading the clock, and every gap
//! between two consecutive reads above the threshold is an interruption:
//! time the CPU was taken from the thread (an interrupt, a softirq, the
//! tick, another task, RT throttling, or the hardware and the hypervisor,
//! which no kernel event shows). Where the interference counter runs
//! (`probes::interference`, loaded by the measure layer), each spinner
//! reads it once per clock read and counts the interruptions across which
//! it did not move as hardware (`hardware.rs`).
//!
//! The spinning loop is `spinner::run`. The controller here starts one
//! spinner per CPU, lets them go together, optionally starts the kernel
//! trace that names the cause of every interruption above `--trace-spikes`
//! (`crate::spikes`: each interruption is handed over as a spike whose
//! window is the gap), then monitors: the live output, the per-second
//! windows, the stop (Ctrl-C/SIGTERM, the duration, a spinner's error).

pub mod hardware;
pub mod oslat;
pub mod spinner;

use crate::report::EndReason;
use crate::rt::sched::Policy;
use crate::rt::signals::take_snapshot_request;
use crate::stats::LatencyRecorder;
use crate::stats::window::{
    LiveCounters, SecondStats, WindowHook, WindowRing, WindowSeries, fold_short_tail,
};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Stack of a spinning thread: small, since `mlockall` locks all of it.
const SPINNER_STACK: usize = 256 * 1024;
/// Time from the start signal to the first clock read of every spinner, so
/// that they all start together once the trace (if any) is running.
const START_DELAY_NS: u64 = 2_000_000;

/// The spinners' duty cycle (osnoise's `runtime`/`period`): spin `runtime_ns`
/// of every `period_ns`, sleep the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DutyCycle {
    pub runtime_ns: u64,
    pub period_ns: u64,
}

impl DutyCycle {
    /// Whether the spinner ever sleeps.
    pub fn sleeps(self) -> bool {
        self.runtime_ns < self.period_ns
    }
}

/// Everything a noise run needs, checked by the settings.
pub struct NoisePlan {
    /// One spinning thread per CPU listed.
    pub cpus: Vec<usize>,
    pub policy: Policy,
    pub priority: i32,
    /// A gap above this is an interruption (ns).
    pub threshold_ns: u64,
    /// Measuring time; None = until stopped.
    pub duration_ns: Option<u64>,
    pub duty: DutyCycle,
    /// `--max-latency`: interruptions above this are counted (ns).
    pub limit_ns: Option<u64>,
    /// `--trace-spikes`: name the causes of every interruption above this (ns).
    pub spike_threshold_ns: Option<u64>,
    /// `--collector`: how the spike trace collects kernel events.
    pub collector: crate::rt::bpf::CollectorChoice,
    /// Set to stop every spinner.
    pub stop: Arc<AtomicBool>,
    /// What the spinners read (`Counter::detect`).
    pub counter: crate::rt::ticks::Counter,
    /// `--samples`: each spinner's sample ring (by CPU index).
    pub samples: Option<crate::stats::samples::TestSamples>,
    /// The interference counter's programs, loaded (None: off, or it
    /// cannot run here): each pinned spinner reads its CPU's counter once
    /// per iteration and counts the interruptions it saw none in as
    /// hardware (`hardware.rs`).
    pub interference: Option<Arc<crate::probes::interference::load::LoadedInterference>>,
}

/// What a spinner and the controller share while the run goes on.
pub struct CpuShared {
    pub ready: AtomicBool,
    pub tid: AtomicI32,
    /// 0 until the controller lets the spinners go; then the monotonic time
    /// of their first clock read.
    pub start_ns: AtomicU64,
    pub error: Mutex<Option<String>>,
    /// Live figures, published by the spinner about every 100 us of its time.
    pub interruptions: AtomicU64,
    pub noise_ns: AtomicU64,
    pub max_ns: AtomicU64,
    pub measured_ns: AtomicU64,
    /// Interruptions above `--max-latency` so far.
    pub above_limit: AtomicU64,
    pub finished: AtomicBool,
    /// The interruptions of each second (count, sum = noise, max).
    pub windows: WindowRing,
    /// Interruptions above `--trace-spikes`, for the spike trace.
    pub spikes: Arc<crate::spikes::CandidateQueue>,
}

impl Default for CpuShared {
    fn default() -> Self {
        CpuShared {
            ready: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            start_ns: AtomicU64::new(0),
            error: Mutex::new(None),
            interruptions: AtomicU64::new(0),
            noise_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            measured_ns: AtomicU64::new(0),
            above_limit: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            windows: WindowRing::default(),
            spikes: crate::spikes::candidate_queue(),
        }
    }
}

impl CpuShared {
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
pub trait NoiseProgress {
    /// Called about every 100 ms with the CPUs and their live figures.
    fn tick(&mut self, elapsed: Duration, cpus: &[usize], shared: &[Arc<CpuShared>]);
    /// The run is over (clear a progress line).
    fn finish(&mut self);
}

/// The results of one spinning thread.
pub struct CpuOutcome {
    pub cpu: usize,
    pub tid: i32,
    /// Every interruption, in ns.
    pub recorder: LatencyRecorder,
    pub noise_ns: u64,
    /// Time spent spinning (the duty cycle's sleeps excluded).
    pub measured_ns: u64,
    pub loops: u64,
    pub above_limit: u64,
    /// `--policy deadline`: periods whose spinning ended after the
    /// deadline, and the periods the kernel throttled the spinner in.
    pub missed_deadlines: u64,
    pub throttled: u64,
    pub per_second: Vec<SecondStats>,
    pub per_second_dropped: u64,
    /// The interruptions the interference counter saw none in (None: it
    /// did not run).
    pub hardware: Option<hardware::HwTally>,
}

pub struct NoiseOutcome {
    pub cpus: Vec<CpuOutcome>,
    pub end_reason: EndReason,
    pub error: Option<String>,
    /// From the first clock read to the last, the longest of the spinners.
    pub measured: Duration,
    /// With `--trace-spikes`.
    pub spikes: Option<crate::report::SpikeTrace>,
}

/// Runs the test until it ends; `wait_for_stop` waits up to its timeout for
/// Ctrl-C/SIGTERM and says whether one came; `hook` learns of every window
/// drained and serves the snapshots (SIGUSR1).
pub fn run(
    plan: &NoisePlan,
    progress: &mut dyn NoiseProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> Result<NoiseOutcome, String> {
    let shared: Vec<Arc<CpuShared>> = plan
        .cpus
        .iter()
        .map(|_| Arc::new(CpuShared::default()))
        .collect();
    std::thread::scope(|scope| -> Result<NoiseOutcome, String> {
        let mut handles = Vec::with_capacity(plan.cpus.len());
        // Spinners already started wait for the start: on an error they must
        // be told to stop before the scope joins them.
        let give_up = |e: String| {
            plan.stop.store(true, Ordering::Relaxed);
            e
        };
        for (index, cpu_shared) in shared.iter().enumerate() {
            // Built (and its pages touched) here, before the thread is real-time.
            let recorder = LatencyRecorder::new();
            let cpu_shared = cpu_shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("noise-{}", plan.cpus[index]))
                .stack_size(SPINNER_STACK)
                .spawn_scoped(scope, move || {
                    let end = spinner::run(plan, index, &cpu_shared, recorder);
                    cpu_shared.finished.store(true, Ordering::Release);
                    end
                })
                .map_err(|e| give_up(format!("could not start a spinning thread: {e}")))?;
            handles.push(handle);
        }
        let result = control(plan, &shared, progress, wait_for_stop, hook);
        plan.stop.store(true, Ordering::Relaxed);
        let ends: Vec<spinner::SpinEnd> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "a spinning thread panicked".to_string())
            })
            .collect::<Result<_, _>>()?;
        let mut control = result?;
        Ok(control.finish(plan, &shared, ends, progress, hook))
    })
}

/// The controller's state while the spinners run.
struct Control {
    end_reason: EndReason,
    per_second: Vec<WindowSeries>,
    spikes: Option<crate::spikes::SpikeTracer>,
}

fn control(
    plan: &NoisePlan,
    shared: &[Arc<CpuShared>],
    progress: &mut dyn NoiseProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> Result<Control, String> {
    let mut control = Control {
        end_reason: EndReason::DurationElapsed,
        per_second: shared.iter().map(|_| WindowSeries::default()).collect(),
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
    if let Some(threshold) = plan.spike_threshold_ns {
        let threads = shared
            .iter()
            .map(|s| (s.spikes.clone(), s.tid.load(Ordering::Relaxed)));
        control.spikes = Some(crate::spikes::SpikeTracer::start_per_cpu(
            &plan.cpus,
            threads,
            crate::spikes::attribution::Wait::Gap,
            threshold,
            plan.collector,
        )?);
    }
    let start = crate::rt::clock::monotonic_ns() + START_DELAY_NS;
    for s in shared {
        s.start_ns.store(start, Ordering::Release);
    }
    let started = std::time::Instant::now();
    loop {
        let signalled = wait_for_stop(Duration::from_millis(100));
        control.drain(shared, hook);
        if !signalled && take_snapshot_request() {
            hook.snapshot();
        }
        progress.tick(started.elapsed(), &plan.cpus, shared);
        if signalled {
            control.end_reason = EndReason::Interrupted;
            break;
        }
        if shared.iter().any(|s| s.error().is_some()) {
            control.end_reason = EndReason::Error;
            break;
        }
        if shared.iter().all(|s| s.finished.load(Ordering::Acquire)) {
            break;
        }
    }
    Ok(control)
}

impl Control {
    /// Moves the windows completed since the last call into the series.
    fn drain(&mut self, shared: &[Arc<CpuShared>], hook: &mut dyn WindowHook) {
        for (i, (s, series)) in shared.iter().zip(&mut self.per_second).enumerate() {
            s.windows
                .drain_into_with(series, &mut |w, h| hook.window(i, w, h));
            hook.counters(
                i,
                LiveCounters {
                    above_limit: s.above_limit.load(Ordering::Relaxed),
                    noise: Some((
                        s.noise_ns.load(Ordering::Relaxed),
                        s.measured_ns.load(Ordering::Relaxed),
                    )),
                    ..LiveCounters::default()
                },
            );
        }
        hook.drained();
    }

    fn finish(
        &mut self,
        plan: &NoisePlan,
        shared: &[Arc<CpuShared>],
        ends: Vec<spinner::SpinEnd>,
        progress: &mut dyn NoiseProgress,
        hook: &mut dyn WindowHook,
    ) -> NoiseOutcome {
        let spikes = self.spikes.take().map(crate::spikes::SpikeTracer::stop);
        // The spinners are done: what the rings still hold.
        self.drain(shared, hook);
        progress.finish();
        let error = shared.iter().find_map(|s| s.error());
        let mut measured = Duration::ZERO;
        let cpus = ends
            .into_iter()
            .enumerate()
            .map(|(i, end)| {
                let elapsed_ns = end.until_ns.saturating_sub(end.from_ns);
                measured = measured.max(Duration::from_nanos(elapsed_ns));
                // The last interruptions past the final whole second are no
                // window of their own (a plot would draw a whole second).
                fold_short_tail(&mut self.per_second[i], elapsed_ns);
                CpuOutcome {
                    cpu: plan.cpus[i],
                    tid: shared[i].tid.load(Ordering::Relaxed),
                    recorder: end.recorder,
                    noise_ns: end.noise_ns,
                    measured_ns: end.measured_ns,
                    loops: end.loops,
                    above_limit: end.above_limit,
                    missed_deadlines: end.missed_deadlines,
                    throttled: end.throttled,
                    per_second: std::mem::take(&mut self.per_second[i]).into_windows(),
                    per_second_dropped: shared[i].windows.dropped(),
                    hardware: end.hardware,
                }
            })
            .collect();
        NoiseOutcome {
            cpus,
            end_reason: if error.is_some() {
                EndReason::Error
            } else {
                self.end_reason
            },
            error,
            measured,
            spikes,
        }
    }
}
