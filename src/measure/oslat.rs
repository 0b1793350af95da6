//! oslat's run (`latscope oslat`, the `oslat` name): settings -> `OslatPlan`
//! -> `noise::oslat`'s two phases (pre-heat, test) on THE spinning loop ->
//! oslat's figures per CPU -> a `FinishedTest` whose series carry them
//! (`NoiseCpu::oslat`), for the classic final block and oslat's JSON.
//! oslat's lines while it runs (the header, "Pre-heat ...", the bias,
//! "Test starts...", "Test completed.", -T's stderr lines) are printed here.

use crate::noise::oslat::{self as run_oslat, Buckets, OslatPlan, PhaseOutcome};
use crate::pipeline::{CommandError, CpuWindow, FinishedTest, Run, RunFacts};
use crate::report::{
    ConfigDetail, EndReason, NoiseConfig, NoiseCpu, OslatCpu, Series, SeriesDetail, TestConfig,
    TestResult,
};
use crate::rt::sched::Policy;
use crate::rt::stdio::print;
use crate::rt::ticks::Counter;
use crate::rt::tracefs::BreakTrace;
use crate::settings::oslat::{Machine, OslatSettings};
use crate::stats::LatencySummary;
use crate::stats::crossings::{BreakCrossings, CrossingSeries};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What a sample is, for the report.
const DESCRIPTION: &str = "oslat: every gap between two counter reads of a spinning thread, \
     in whole microseconds (with -W, in its bucket width's unit)";

/// The machine's facts oslat's options are checked against (read before
/// parsing) and its report records.
pub struct OslatFacts {
    /// CPUs this process may run on.
    pub allowed: Vec<usize>,
    /// `sysconf(_SC_NPROCESSORS_CONF)`.
    pub configured: usize,
    pub isolated: Vec<usize>,
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
}

impl OslatFacts {
    /// This machine's.
    pub fn read() -> OslatFacts {
        let machine = crate::doctor::Machine::live();
        let (rt_runtime_us, rt_period_us) = crate::doctor::sched::rt_bandwidth(&machine);
        let (configured, _) = crate::rt::sysinfo::configured_and_online_cpus();
        OslatFacts {
            // Allowed and in the cgroup's cpuset (rt::pod_cpus); oslat's own
            // default of which to leave out (-C's core) stays settings::oslat's.
            allowed: Some(crate::rt::pod_cpus::live().usable)
                .filter(|usable| !usable.is_empty())
                .unwrap_or_else(crate::rt::sched::allowed_cpus),
            configured: configured.max(1) as usize,
            isolated: crate::doctor::isolation::isolated_cpus(&machine),
            rt_runtime_us,
            rt_period_us,
        }
    }

    /// As settings::oslat checks the options against them.
    pub fn machine(&self) -> Machine<'_> {
        Machine {
            allowed: &self.allowed,
            configured: self.configured,
            isolated: &self.isolated,
            rt_runtime_us: self.rt_runtime_us,
            smt_siblings: crate::rt::sysinfo::smt_siblings,
        }
    }
}

/// The test on the prepared process (memory locked): the `FinishedTest`,
/// and whether `-T` stopped it (oslat then exits 1). `app_name`: the name
/// oslat's messages start with. `breaks`: `-T`'s crossings, counted for
/// `--on-threshold` (`break_crossings`).
pub fn measure(
    s: &OslatSettings,
    facts: &OslatFacts,
    app_name: &str,
    run: &mut Run<'_>,
    breaks: Option<Arc<BreakCrossings>>,
) -> Result<(FinishedTest, bool), CommandError> {
    if s.rtprio.is_some() && s.cpus.contains(&0) {
        print("WARNING: Running SCHED_FIFO workload on CPU 0 may hang the thread\n");
    }
    crate::rt::sched::pin_current_thread(s.cpu_main_thread)
        .map_err(|e| CommandError::Runtime(format!("-C {}: {e}", s.cpu_main_thread)))?;
    let trace = s.trace_threshold_us.and_then(|_| {
        // oslat names the debugfs tracing directory as it opens its marker.
        crate::rt::tracefs::mount::print_debugfs_mountpoint_info();
        BreakTrace::open()
            .map_err(|why| run.warn(format!("-T: {why}; the run still stops at the threshold")))
            .ok()
    });
    let plan = OslatPlan {
        breaks,
        ..plan_of(s)
    };
    if !s.quiet {
        print(&s.header());
        print("Pre-heat for 1 seconds...\n");
    }
    let preheat = run_oslat::run_phase(&plan, true, 0, None, app_name, &mut wait_for_stop)
        .map_err(CommandError::Runtime)?;
    let window = CpuWindow::open();
    let started = SystemTime::now();
    let (test, end_reason) = if preheat.interrupted {
        (nothing_ran(&plan), EndReason::Interrupted)
    } else {
        test_phase(s, &plan, &preheat, trace, app_name)?
    };
    let ended = SystemTime::now();
    let cpu_use = window.close();
    let triggered = match (test.triggered, s.trace_threshold_us) {
        (Some((cpu, units)), Some(threshold)) => {
            let message = run_oslat::trigger_message(app_name, threshold, cpu, units, s.scale);
            let _ = std::io::stderr().write_all(message.as_bytes());
            true
        }
        _ => {
            if !s.quiet {
                print("Test completed.\n\n");
            }
            false
        }
    };
    let figures = run_oslat::figures_of(&test);
    let elapsed = Duration::from_secs_f64(
        figures
            .iter()
            .map(|(_, f)| f.duration_s)
            .fold(0.0, f64::max),
    );
    let series: Vec<Series> = figures
        .into_iter()
        .map(|(cpu, f)| series_of(s, facts, cpu, f))
        .collect();
    let facts_of_run = RunFacts {
        elapsed,
        priority_option: Some("-f"),
        ..RunFacts::measured(
            s.rtprio.is_some(),
            &s.cpus,
            cpu_use.of(&s.cpus),
            &series,
            None,
        )
    };
    let result = TestResult {
        test: "oslat".to_string(),
        description: DESCRIPTION.to_string(),
        mode: "every-gap".to_string(),
        config: config_of(s, facts, run.prep.memory.is_locked(), &plan),
        end_reason,
        error: None,
        overall: overall_of(&series),
        series,
        overall_detail: None,
        spikes: None,
        started_s: None,
    };
    let test = FinishedTest {
        result,
        started,
        ended,
        elapsed,
        facts: facts_of_run,
        deadline: Vec::new(),
    };
    Ok((test, triggered))
}

/// oslat's output has no place for a snapshot: a SIGUSR1 is said on
/// standard error and the run goes on. True on a stop signal.
fn wait_for_stop(timeout: Duration) -> bool {
    let stop = crate::rt::signals::stop_signalled(timeout);
    if crate::rt::signals::take_snapshot_request() {
        let _ = std::io::stderr().write_all(
            b"latscope: no snapshot (SIGUSR1) of the oslat drop-in (its output has no \
              place for one); the run goes on\n",
        );
    }
    stop
}

/// `-T` as the trigger of `--on-threshold`: the crossings of the CPUs,
/// each named as its series (None when it is not the trigger).
pub fn break_crossings(s: &OslatSettings) -> Option<Arc<BreakCrossings>> {
    s.actions.on_break().then(|| {
        let series = s
            .cpus
            .iter()
            .map(|&cpu| CrossingSeries {
                label: format!("CPU {cpu}"),
                cpu: Some(cpu),
            })
            .collect();
        Arc::new(BreakCrossings::new(
            "oslat",
            series,
            s.actions.break_keeps_running(),
        ))
    })
}

fn plan_of(s: &OslatSettings) -> OslatPlan {
    OslatPlan {
        cpus: s.cpus.clone(),
        rtprio: s.rtprio,
        bucket_size: s.bucket_size,
        scale: s.scale,
        bias: s.bias,
        single_preheat: s.single_preheat,
        memmove_bytes: s.memmove_bytes(),
        trace_threshold_us: s.trace_threshold_us,
        breaks: None,
        duration_ns: s.runtime_s.saturating_mul(1_000_000_000),
        counter: Counter::detect(),
    }
}

/// Stopped in the pre-heat: no test; its block says nothing ran.
fn nothing_ran(plan: &OslatPlan) -> PhaseOutcome {
    PhaseOutcome {
        threads: plan
            .cpus
            .iter()
            .map(|&c| {
                (
                    c,
                    Buckets::new(
                        plan.counter.scale().mhz(),
                        plan.scale,
                        plan.bucket_size,
                        0,
                        None,
                    ),
                    0,
                )
            })
            .collect(),
        interrupted: true,
        triggered: None,
    }
}

/// The test phase after the pre-heat: the bias (`-B`) from the pre-heat's
/// minimum, its lines, the run and why it ended.
fn test_phase(
    s: &OslatSettings,
    plan: &OslatPlan,
    preheat: &PhaseOutcome,
    trace: Option<BreakTrace>,
    app_name: &str,
) -> Result<(PhaseOutcome, EndReason), CommandError> {
    let bias = if s.bias { preheat.min_gap() } else { 0 };
    if s.bias {
        print(&format!(
            "Global bias set to {} (us)\n",
            s.scale.us_text(bias)
        ));
    }
    if !s.quiet {
        print("Test starts...\n");
    }
    let test = run_oslat::run_phase(plan, false, bias, trace, app_name, &mut wait_for_stop)
        .map_err(CommandError::Runtime)?;
    let reason = match (test.triggered, test.interrupted) {
        (Some(_), _) => EndReason::BreakTrace,
        (None, true) => EndReason::Interrupted,
        (None, false) => EndReason::DurationElapsed,
    };
    Ok((test, reason))
}

fn policy(s: &OslatSettings) -> (Policy, i32) {
    match s.rtprio {
        Some(p) => (Policy::Fifo, p),
        None => (Policy::Other, 0),
    }
}

fn config_of(
    s: &OslatSettings,
    facts: &OslatFacts,
    mlockall: bool,
    plan: &OslatPlan,
) -> TestConfig {
    let (policy, priority) = policy(s);
    TestConfig {
        policy: policy.to_string(),
        priority,
        loops: None,
        duration_s: Some(s.runtime_s as f64),
        max_latency_us: None,
        mlockall,
        cpu_dma_latency: "not requested".to_string(),
        detail: ConfigDetail::Noise(NoiseConfig {
            cpus_left_out: Vec::new(),
            cpus: s.cpus.clone(),
            cpus_from: "named".to_string(),
            // Every gap is a sample.
            threshold_ns: 0,
            runtime_ns: plan.duration_ns,
            period_ns: plan.duration_ns,
            clock: plan.counter.describe(),
            rt_runtime_us: facts.rt_runtime_us,
            rt_period_us: facts.rt_period_us,
            forced: false,
            hw_counter: None,
        }),
    }
}

fn series_of(s: &OslatSettings, facts: &OslatFacts, cpu: usize, f: OslatCpu) -> Series {
    let (policy, priority) = policy(s);
    let loops: u64 = f.buckets.iter().sum();
    let first_label_us = f.scale.label_us(0, f.bias);
    // The time in gaps above the first bucket (oslat's resolution).
    let noise_us = (f.average_us * loops as f64
        - f.buckets.first().copied().unwrap_or(0) as f64 * first_label_us)
        .max(0.0);
    let measured_ns = (f.duration_s * 1e9) as u64;
    let noise_ns = (noise_us * 1000.0) as u64;
    Series {
        label: format!("CPU {cpu}"),
        cpus: vec![cpu],
        pinned: true,
        policy: policy.to_string(),
        priority,
        overruns: 0,
        above_limit: 0,
        latency: summary_of(&f, loops),
        per_second: Vec::new(),
        per_second_dropped: 0,
        detail: SeriesDetail::NoiseCpu(Box::new(NoiseCpu {
            cpu,
            tid: 0,
            isolated: facts.isolated.contains(&cpu),
            measured_ns,
            noise_ns,
            noise_percent: if measured_ns > 0 {
                noise_ns as f64 * 100.0 / measured_ns as f64
            } else {
                0.0
            },
            loops,
            loops_per_s: if f.duration_s > 0.0 {
                loops as f64 / f.duration_s
            } else {
                0.0
            },
            causes: None,
            oslat: Some(f),
            hardware: None,
        })),
    }
}

/// A series' summary from oslat's figures (its unit's resolution; the
/// buckets as the histogram, no percentiles: oslat keeps none).
fn summary_of(f: &OslatCpu, loops: u64) -> LatencySummary {
    let ns = |units: u64| i64::try_from(f.scale.ns(units)).unwrap_or(i64::MAX);
    let width = f.scale.bucket_width;
    LatencySummary {
        samples: loops,
        min_ns: ns(f.min),
        avg_ns: f.average_us * 1000.0,
        max_ns: ns(f.max),
        stddev_ns: 0.0,
        min_at_sample: 0,
        max_at_sample: 0,
        last_ns: 0,
        percentiles: Vec::new(),
        histogram: f
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(j, &count)| {
                let low = f.bias + j as u64 * width;
                crate::stats::Bucket {
                    low_ns: ns(low),
                    high_ns: if j + 1 == f.buckets.len() {
                        ns(f.max.max(low + width))
                    } else {
                        ns(low + width)
                    },
                    count,
                }
            })
            .collect(),
        overflow: 0,
    }
}

/// Every CPU together: the smallest minimum, the largest maximum, the
/// average weighted by loops.
fn overall_of(series: &[Series]) -> LatencySummary {
    let samples: u64 = series.iter().map(|s| s.latency.samples).sum();
    let with = || series.iter().filter(|s| s.latency.samples > 0);
    LatencySummary {
        samples,
        min_ns: with().map(|s| s.latency.min_ns).min().unwrap_or(0),
        avg_ns: if samples == 0 {
            0.0
        } else {
            with()
                .map(|s| s.latency.avg_ns * s.latency.samples as f64)
                .sum::<f64>()
                / samples as f64
        },
        max_ns: with().map(|s| s.latency.max_ns).max().unwrap_or(0),
        stddev_ns: 0.0,
        min_at_sample: 0,
        max_at_sample: 0,
        last_ns: 0,
        percentiles: Vec::new(),
        histogram: Vec::new(),
        overflow: 0,
    }
}
