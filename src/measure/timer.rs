//! The timer test run and turned into report data: shared by `latscope
//! timer` and `latscope suite`.

use crate::pipeline::{
    CommandError, CpuWindow, FinishedTest, Preparation, Run, RunFacts, per_cpu_skeleton,
};
use crate::report::XenomaiHistogram;
use crate::report::{
    ConfigDetail, Series, SeriesDetail, TestConfig, TestResult, TimerConfig, TimerThread,
};
use crate::rt::signals::stop_signalled;
use crate::settings::timer::TimerSettings;
use crate::stats::LatencyRecorder;
use crate::timer::{self, TimerOutcome, TimerPlan};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

// The words a command plans a timer test with: what a sample measures, and
// what its live display implements (tests/suite/layers.rs: a command
// reaches its test through here).
pub use crate::timer::{Figure, TimerProgress};

/// Whether this machine can trace what `settings` ask (`--breakdown` or a
/// kernel-traced figure, `--trace-spikes`), checked before anything is set
/// up or measured.
pub fn check_tracing(settings: &TimerSettings) -> Result<(), CommandError> {
    if settings.breakdown {
        crate::probes::wakeups::check_before_run(settings.collector).map_err(|e| {
            CommandError::Runtime(e.with_need(&format!(
                "{} needs kernel tracing",
                if settings.figure == Figure::User {
                    "--breakdown".to_string()
                } else {
                    format!("-t {}", settings.figure.test_mode())
                }
            )))
        })?;
    }
    crate::pipeline::check_spike_tracing(settings.trace_spikes_us, settings.collector)
}

/// What one sample spans, for the report.
pub fn description(figure: Figure, wake: timer::WakeMethod) -> String {
    let what = match figure {
        Figure::User => "clock read after waking",
        Figure::Thread => "thread scheduled in (kernel trace)",
        Figure::Irq => "timer interrupt handler (kernel trace)",
    };
    format!("periodic wake-up, {}: {what} - expiry", wake.as_str())
}

pub fn plan_of(settings: &TimerSettings, stop: Arc<AtomicBool>) -> TimerPlan {
    TimerPlan {
        cpus: settings.cpus.clone(),
        policy: settings.policy,
        priority: settings.priority,
        period_ns: settings.period_us * 1000,
        wake: settings.wake,
        warmup_loops: settings.warmup_loops,
        duration_ns: settings.duration.map(crate::rt::clock::duration_ns),
        histogram_cells: settings.histogram_cells,
        bucket_ns: settings.bucket_ns,
        limit_ns: settings
            .max_latency_us
            .map(|us| us.saturating_mul(1000).min(i64::MAX as u64) as i64),
        freeze_trace: settings.freeze_trace,
        break_on_switch: settings.break_on_switch,
        breakdown: settings.breakdown,
        spike_threshold_ns: settings.trace_spikes_us.map(|us| us.saturating_mul(1000)),
        figure: settings.figure,
        stop,
        samples: None,
        collector: settings.collector,
    }
}

pub fn config_of(settings: &TimerSettings, plan: &TimerPlan, prep: &Preparation) -> TestConfig {
    TestConfig {
        policy: settings.policy.to_string(),
        priority: settings.priority,
        loops: None,
        duration_s: settings.duration.map(|d| d.as_secs_f64()),
        max_latency_us: settings.max_latency_us,
        mlockall: prep.memory.is_locked(),
        cpu_dma_latency: prep.dma_latency.describe(),
        detail: ConfigDetail::Timer(TimerConfig {
            cpus: settings.cpus.clone(),
            period_us: settings.period_us,
            wake: settings.wake.as_str().to_string(),
            figure: settings.figure.as_str().to_string(),
            test_mode: settings.figure.test_mode() as u8,
            warmup_loops: settings.warmup_loops,
            samples_per_loop: plan.samples_per_loop(),
            histogram_cells: settings.histogram_cells,
            bucket_ns: settings.bucket_ns,
            breakdown: settings.breakdown,
            freeze_trace: settings.freeze_trace,
            break_on_switch: settings.break_on_switch,
            cyclictest: None,
        }),
    }
}

/// Measures with `settings` and returns the finished test (report data and
/// the facts for the validity warnings), plus warnings of its own.
/// `run` learns of every loop as it completes (the live outputs, SIGUSR1
/// snapshots from the loops so far).
pub fn measure(
    settings: &TimerSettings,
    run: &Run<'_>,
    progress: &mut dyn TimerProgress,
) -> Result<(FinishedTest, Vec<String>, TimerOutcome), String> {
    let prep = run.prep;
    let mut plan = plan_of(settings, Arc::new(AtomicBool::new(false)));
    plan.samples = prep.samples_per_cpu("timer", "timer_thread", &plan.cpus);
    // The plan and the report's record of it, built once for the test.
    let config = config_of(settings, &plan, prep);
    let skeleton = skeleton(settings, not_started(settings, config.clone(), None));
    let window = CpuWindow::open();
    let started = SystemTime::now();
    let outcome = run.measuring(skeleton, |hook| {
        timer::run(&plan, progress, &mut stop_signalled, hook)
    })?;
    let ended = SystemTime::now();
    let cpu_use = window.close();
    let mut overall = LatencyRecorder::signed();
    let mut warnings = Vec::new();
    let series: Vec<Series> = outcome
        .threads
        .iter()
        .map(|t| {
            overall.merge(&t.figure.recorder);
            thread_series(settings, t, &mut warnings)
        })
        .collect();
    warnings.extend(trace_warnings(&outcome));
    let facts = RunFacts {
        elapsed: outcome.measured,
        ..RunFacts::measured(
            settings.policy.is_realtime(),
            &settings.cpus,
            cpu_use.of(&settings.cpus),
            &series,
            outcome.spikes.as_ref(),
        )
    };
    let result = TestResult {
        overall: overall.summary(),
        series,
        spikes: outcome.spikes.clone(),
        ..TestResult::new(
            "timer",
            description(settings.figure, settings.wake),
            settings.figure.as_str(),
            config,
            outcome.end_reason,
            outcome.error.clone(),
        )
    };
    let deadline = match settings.policy.reservation() {
        Some(reservation) => outcome
            .threads
            .iter()
            .map(|t| {
                crate::report::DeadlineSeries::of(
                    &result,
                    &format!("CPU {}", t.cpu),
                    reservation,
                    (t.missed_deadlines, t.throttled),
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let finished = FinishedTest {
        result,
        started,
        ended,
        elapsed: outcome.measured,
        facts,
        deadline,
    };
    Ok((finished, warnings, outcome))
}

/// The series of one sampling thread, and the warnings about it (wake-ups
/// the trace saw no switch-in for, missed periods).
fn thread_series(
    settings: &TimerSettings,
    t: &timer::ThreadOutcome,
    warnings: &mut Vec<String>,
) -> Series {
    if let Some(b) = &t.breakdown
        && b.without_sched_in > 0
    {
        warnings.push(format!(
            "CPU {}: the kernel traced no switch into the sampling thread for {} of {} wake-ups (on some kernels a CPU leaving its idle task emits no sched_switch): Sched covers the other {}, Return covers all",
            t.cpu,
            b.without_sched_in,
            b.traced_wakeups,
            b.traced_wakeups - b.without_sched_in
        ));
    }
    if t.overruns > 0 {
        warnings.push(format!(
            "the sampling thread on CPU {} missed {} period{} (overruns): the period is too short for this machine, or real-time throttling or a higher-priority task stopped it",
            t.cpu, t.overruns, if t.overruns == 1 { "" } else { "s" }
        ));
    }
    Series {
        label: format!("CPU {}", t.cpu),
        cpus: vec![t.cpu],
        pinned: settings.policy.may_pin(),
        policy: settings.policy.to_string(),
        priority: settings.priority,
        overruns: t.overruns,
        above_limit: t.above_limit,
        latency: t.figure.recorder.summary(),
        per_second: t.per_second.clone(),
        per_second_dropped: t.per_second_dropped,
        detail: SeriesDetail::TimerThread(Box::new(TimerThread {
            cpu: t.cpu,
            tid: t.tid,
            period_us: settings.period_us,
            loops: t.figure.loops_done(),
            msw: t.counters.total(),
            involuntary_switches: t.counters.involuntary_switches,
            major_faults: t.counters.major_faults,
            minor_faults: t.counters.minor_faults,
            histogram_all: Some(t.figure.all.clone()),
            histogram_loop_min: Some(t.figure.loop_min.clone()),
            histogram_loop_max: Some(t.figure.loop_max.clone()),
            breakdown: t.breakdown.clone(),
            cyclictest: None,
        })),
    }
}

/// The warnings about the tracefs breakdown's reader: events lost, or the
/// reader on the measured CPUs.
fn trace_warnings(outcome: &TimerOutcome) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(stats) = &outcome.trace_stats
        && stats.events_lost > 0
    {
        warnings.push(format!(
            "the kernel trace lost {} events (the reader fell behind): the breakdown misses some wake-ups",
            stats.events_lost
        ));
    }
    if let Some(stats) = &outcome.trace_stats
        && stats.reader_on_measured_cpus
    {
        warnings.push(
            "the trace reader ran on the measured CPUs (no other CPU was free for it): it may add to the latencies it breaks down".to_string(),
        );
    }
    warnings
}

/// The test before its first sample (`not_started`): one series per
/// sampling thread with no samples, filled from the loops as they complete
/// (pipeline::Run's live outputs and snapshots). None if Xenomai's
/// histograms cannot be built (the run itself then fails the same way).
fn skeleton(settings: &TimerSettings, not_started: FinishedTest) -> Option<FinishedTest> {
    let empty = XenomaiHistogram::new(settings.histogram_cells, settings.bucket_ns).ok()?;
    Some(per_cpu_skeleton(
        not_started,
        &settings.cpus,
        (settings.policy.to_string(), settings.priority),
        |cpu| {
            SeriesDetail::TimerThread(Box::new(TimerThread {
                cpu,
                tid: 0,
                period_us: settings.period_us,
                loops: 0,
                msw: 0,
                involuntary_switches: 0,
                major_faults: 0,
                minor_faults: 0,
                histogram_all: Some(empty.clone()),
                histogram_loop_min: Some(empty.clone()),
                histogram_loop_max: Some(empty.clone()),
                breakdown: None,
                cyclictest: None,
            }))
        },
    ))
}

/// A timer test that could not run: reported with its error and no samples.
pub fn failed(settings: &TimerSettings, prep: &Preparation, error: String) -> FinishedTest {
    let plan = plan_of(settings, Arc::new(AtomicBool::new(true)));
    not_started(settings, config_of(settings, &plan, prep), Some(error))
}

/// The timer test configured as `config` with no samples, ended by `error`.
fn not_started(
    settings: &TimerSettings,
    config: TestConfig,
    error: Option<String>,
) -> FinishedTest {
    FinishedTest::not_started(
        TestResult::new(
            "timer",
            description(settings.figure, settings.wake),
            settings.figure.as_str(),
            config,
            crate::report::EndReason::Error,
            error,
        ),
        settings.policy.is_realtime(),
    )
}
