//! The OS-noise test run and turned into report data: shared by `latscope
//! noise` and `latscope suite`.

use crate::noise::hardware::HwTally;
use crate::noise::{self, NoiseOutcome, NoisePlan, NoiseProgress};
use crate::pipeline::{
    CpuShare, CpuWindow, FinishedTest, Preparation, Run, RunFacts, per_cpu_skeleton,
};
use crate::probes::interference::load::LoadedInterference;
use crate::report::{
    Cause, ConfigDetail, EndReason, HwCounter, HwInterruption, NoiseCauses, NoiseConfig, NoiseCpu,
    NoiseHardware, Series, SeriesDetail, SpikeTrace, TestConfig, TestResult,
};
use crate::rt::signals::stop_signalled;
use crate::settings::noise::NoiseSettings;
use crate::stats::LatencyRecorder;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

/// What one sample (one interruption) is, for the report.
pub const DESCRIPTION: &str =
    "OS noise: a gap between two clock reads of a spinning thread above the threshold";

pub fn plan_of(settings: &NoiseSettings, stop: Arc<AtomicBool>) -> NoisePlan {
    NoisePlan {
        cpus: settings.cpus.clone(),
        policy: settings.policy,
        priority: settings.priority,
        threshold_ns: settings.threshold_ns,
        duration_ns: settings.duration.map(crate::rt::clock::duration_ns),
        duty: settings.duty,
        limit_ns: settings
            .verdict
            .max_latency_us
            .map(|us| us.saturating_mul(1000)),
        spike_threshold_ns: settings.trace_spikes_us.map(|us| us.saturating_mul(1000)),
        collector: settings.collector,
        stop,
        counter: crate::rt::ticks::Counter::detect(),
        samples: None,
        interference: None,
    }
}

/// What the interference counter is, as the report names it.
pub const HW_COUNTER: &str = "bpf interference counter (bumped in the kernel on every IRQ, softirq, NMI and context switch of the CPU), one load per clock read";

/// The interference counter for `settings`, loaded, or why it does not run.
pub fn hw_counter(settings: &NoiseSettings) -> Result<Arc<LoadedInterference>, String> {
    if let Some(why) = settings.hw_counter_off {
        return Err(why.into());
    }
    if !settings.policy.may_pin() {
        return Err(format!(
            "off: {} (a CPU's counter counts only what ran on that CPU)",
            crate::settings::DEADLINE_UNPINNED
        ));
    }
    crate::hwlat::load_counter().map_err(|why| format!("cannot run here: {why}"))
}

/// The report's word on the counter: what ran, or why not (and in a guest,
/// whose time the hardware interruptions are).
fn hw_counter_state(counter: &Result<Arc<LoadedInterference>, String>) -> HwCounter {
    match counter {
        Ok(_) => HwCounter {
            ran: true,
            detail: HW_COUNTER.into(),
            hypervisor: crate::doctor::platform::hypervisor(&crate::doctor::Machine::live()),
        },
        Err(why) => HwCounter {
            ran: false,
            detail: why.clone(),
            hypervisor: None,
        },
    }
}

/// One CPU's hardware interruptions, for the report.
fn hardware_of(hw: &HwTally) -> NoiseHardware {
    NoiseHardware {
        interruptions: hw.count,
        noise_ns: hw.ns,
        max_ns: hw.max_ns,
        last: hw
            .kept()
            .into_iter()
            .map(|(at_ns, ns)| HwInterruption { at_ns, ns })
            .collect(),
    }
}

pub fn config_of(settings: &NoiseSettings, prep: &Preparation) -> TestConfig {
    TestConfig {
        policy: settings.policy.to_string(),
        priority: settings.priority,
        loops: None,
        duration_s: settings.duration.map(|d| d.as_secs_f64()),
        max_latency_us: settings.verdict.max_latency_us,
        mlockall: prep.memory.is_locked(),
        cpu_dma_latency: prep.dma_latency.describe(),
        detail: ConfigDetail::Noise(NoiseConfig {
            cpus: settings.cpus.clone(),
            cpus_from: settings.cpus_from.as_str().to_string(),
            threshold_ns: settings.threshold_ns,
            runtime_ns: settings.duty.runtime_ns,
            period_ns: settings.duty.period_ns,
            clock: crate::rt::ticks::Counter::detect().describe(),
            rt_runtime_us: settings.rt_runtime_us,
            rt_period_us: settings.rt_period_us,
            forced: settings.force,
            cpus_left_out: settings.cpus_left_out.clone(),
            hw_counter: None,
        }),
    }
}

/// Warnings that belong to how the test was set up, known before it runs:
/// a real-time spinner on a CPU that is not isolated is paused by RT
/// throttling (if on) every period, which it measures as noise.
pub fn setup_warnings(settings: &NoiseSettings) -> Vec<String> {
    let mut warnings = Vec::new();
    if settings.policy.reservation().is_some() {
        warnings.push(format!(
            "{}: each spinner is named after the CPU it was started for, and an interruption may be a migration",
            crate::settings::DEADLINE_UNPINNED
        ));
    }
    // RT throttling bounds FIFO and RR (a deadline task, its reservation).
    if !settings.policy.takes_priority() {
        return warnings;
    }
    let exposed: Vec<usize> = settings
        .cpus
        .iter()
        .copied()
        .filter(|c| !settings.isolated.contains(c))
        .collect();
    if exposed.is_empty() {
        return warnings;
    }
    let cpus = crate::units::cpu_list(&exposed);
    match (settings.rt_runtime_us, settings.rt_period_us) {
        (Some(runtime), Some(period)) if runtime >= 0 && runtime < period => {
            warnings.push(format!(
                "the {} spinner on CPU {cpus} (not isolated) is bounded by RT throttling: the kernel stops it for {} ms of every {} ms so that other tasks run, and that pause is measured as one interruption per period",
                settings.policy,
                (period - runtime) / 1000,
                period / 1000
            ));
        }
        (Some(runtime), _) if runtime < 0 => warnings.push(format!(
            "the {} spinner on CPU {cpus} (not isolated) ran with RT throttling off (--force): nothing else ran on that CPU meanwhile",
            settings.policy
        )),
        _ => {}
    }
    warnings
}

/// Measures with `settings` and returns the finished test (report data and
/// the facts for the validity warnings), plus warnings of its own.
/// `run` learns of every window as it closes (the live outputs, SIGUSR1
/// snapshots from the windows so far).
pub fn measure(
    settings: &NoiseSettings,
    run: &Run<'_>,
    progress: &mut dyn NoiseProgress,
) -> Result<(FinishedTest, Vec<String>), String> {
    let prep = run.prep;
    let mut plan = plan_of(settings, Arc::new(AtomicBool::new(false)));
    plan.samples = prep.samples_per_cpu("noise", "noise_cpu", &plan.cpus);
    // Loaded before the spinners start, detached when `counter` drops.
    let counter = hw_counter(settings);
    plan.interference = counter.as_ref().ok().cloned();
    let window = CpuWindow::open();
    let started = SystemTime::now();
    let outcome = run.measuring(Some(skeleton(settings, prep)), |hook| {
        noise::run(&plan, progress, &mut stop_signalled, hook)
    })?;
    let ended = SystemTime::now();
    let cpu_use = window.close();
    let mut warnings = setup_warnings(settings);
    if let Some(spikes) = &outcome.spikes
        && spikes.events_lost > 0
    {
        warnings.push(format!(
            "the kernel trace lost {} events (the reader fell behind): some interruptions may be attributed in part",
            spikes.events_lost
        ));
    }
    let cpu_use = cpu_use.of(&settings.cpus);
    let counts: Vec<(usize, (u64, u64))> = outcome
        .cpus
        .iter()
        .map(|c| (c.cpu, (c.missed_deadlines, c.throttled)))
        .collect();
    let mut finished = finished(settings, prep, outcome, started, ended, cpu_use);
    if let ConfigDetail::Noise(config) = &mut finished.result.config.detail {
        config.hw_counter = Some(hw_counter_state(&counter));
    }
    if let Some(reservation) = settings.policy.reservation() {
        finished.deadline = counts
            .into_iter()
            .map(|(cpu, counts)| {
                crate::report::DeadlineSeries::of(
                    &finished.result,
                    &format!("CPU {cpu}"),
                    reservation,
                    counts,
                )
            })
            .collect();
    }
    Ok((finished, warnings))
}

fn finished(
    settings: &NoiseSettings,
    prep: &Preparation,
    outcome: NoiseOutcome,
    started: SystemTime,
    ended: SystemTime,
    cpu_use: CpuShare,
) -> FinishedTest {
    let mut overall = LatencyRecorder::new();
    let series: Vec<Series> = outcome
        .cpus
        .iter()
        .map(|c| {
            overall.merge(&c.recorder);
            let spun_s = c.measured_ns as f64 / 1e9;
            Series {
                label: format!("CPU {}", c.cpu),
                cpus: vec![c.cpu],
                pinned: settings.policy.may_pin(),
                policy: settings.policy.to_string(),
                priority: settings.priority,
                // A period the kernel throttled a deadline spinner in.
                overruns: c.throttled,
                above_limit: c.above_limit,
                latency: c.recorder.summary(),
                per_second: c.per_second.clone(),
                per_second_dropped: c.per_second_dropped,
                detail: SeriesDetail::NoiseCpu(Box::new(NoiseCpu {
                    cpu: c.cpu,
                    tid: c.tid,
                    isolated: settings.isolated.contains(&c.cpu),
                    measured_ns: c.measured_ns,
                    noise_ns: c.noise_ns,
                    noise_percent: if c.measured_ns > 0 {
                        c.noise_ns as f64 * 100.0 / c.measured_ns as f64
                    } else {
                        0.0
                    },
                    loops: c.loops,
                    loops_per_s: if spun_s > 0.0 {
                        c.loops as f64 / spun_s
                    } else {
                        0.0
                    },
                    causes: outcome.spikes.as_ref().map(|t| causes_of(t, c.cpu)),
                    oslat: None,
                    hardware: c.hardware.as_ref().map(hardware_of),
                })),
            }
        })
        .collect();
    let facts = RunFacts {
        elapsed: outcome.measured,
        priority_option: Some("-p"),
        ..RunFacts::measured(
            settings.policy.is_realtime(),
            &settings.cpus,
            cpu_use,
            &series,
            outcome.spikes.as_ref(),
        )
    };
    let result = TestResult {
        overall: overall.summary(),
        series,
        spikes: outcome.spikes,
        ..TestResult::new(
            "noise",
            DESCRIPTION,
            "interruptions",
            config_of(settings, prep),
            outcome.end_reason,
            outcome.error.clone(),
        )
    };
    FinishedTest {
        result,
        started,
        ended,
        elapsed: outcome.measured,
        facts,
        deadline: Vec::new(),
    }
}

/// The causes of the interruptions of `cpu` the spike trace kept, summed.
/// The spinner's own time in a window (the trace shows it running, yet its
/// clock jumped: nothing the kernel traced took the CPU) counts as
/// unexplained with the time the trace cannot place: that is what the
/// hardware (an SMI) or the hypervisor (a VM exit) took, as hwnoise counts it.
pub fn causes_of(trace: &SpikeTrace, cpu: usize) -> NoiseCauses {
    let mut out = NoiseCauses::default();
    let mut by_cause: BTreeMap<(String, String), (u64, u32)> = BTreeMap::new();
    for spike in trace.spikes.iter().filter(|s| s.cpu == cpu) {
        out.interruptions += 1;
        out.interrupted_ns += spike.latency_ns;
        out.unexplained_ns += spike.unexplained_ns + spike.measured_ns;
        for c in &spike.causes {
            // The spinner's own time in its gap, named by the attribution.
            if c.kind == crate::spikes::attribution::HARDWARE_KIND {
                out.unexplained_ns += c.ns;
                continue;
            }
            let entry = by_cause
                .entry((c.kind.clone(), c.name.clone()))
                .or_default();
            entry.0 += c.ns;
            entry.1 += c.count;
        }
    }
    out.causes = by_cause
        .into_iter()
        .map(|((kind, name), (ns, count))| Cause {
            kind,
            name,
            ns,
            count,
        })
        .collect();
    out.causes
        .sort_by(|a, b| b.ns.cmp(&a.ns).then(a.name.cmp(&b.name)));
    out
}

/// The test before its first interruption: one series per spinning CPU
/// with no samples, filled from the windows as they close.
fn skeleton(settings: &NoiseSettings, prep: &Preparation) -> FinishedTest {
    per_cpu_skeleton(
        failed(settings, prep, String::new()),
        &settings.cpus,
        (settings.policy.to_string(), settings.priority),
        |cpu| {
            SeriesDetail::NoiseCpu(Box::new(NoiseCpu {
                cpu,
                tid: 0,
                isolated: settings.isolated.contains(&cpu),
                measured_ns: 0,
                noise_ns: 0,
                noise_percent: 0.0,
                loops: 0,
                loops_per_s: 0.0,
                causes: None,
                oslat: None,
                hardware: None,
            }))
        },
    )
}

/// A noise test that could not run: reported with its error and no samples.
pub fn failed(settings: &NoiseSettings, prep: &Preparation, error: String) -> FinishedTest {
    FinishedTest::not_started(
        TestResult::new(
            "noise",
            DESCRIPTION,
            "interruptions",
            config_of(settings, prep),
            EndReason::Error,
            Some(error),
        ),
        settings.policy.is_realtime(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Spike;

    #[test]
    fn causes_are_summed_per_cpu_and_the_spinners_own_time_is_unexplained() {
        let cause = |kind: &str, name: &str, ns| Cause {
            kind: kind.into(),
            name: name.into(),
            ns,
            count: 1,
        };
        let spike = |cpu, causes: Vec<Cause>, unexplained_ns, measured_ns| Spike {
            cpu,
            latency_ns: 100,
            causes,
            unexplained_ns,
            measured_ns,
            ..Spike::default()
        };
        let trace = SpikeTrace {
            spikes: vec![
                spike(1, vec![cause("irq", "local_timer", 60)], 0, 10),
                spike(
                    1,
                    vec![cause("irq", "local_timer", 30), cause("softirq", "RCU", 50)],
                    5,
                    0,
                ),
                spike(2, vec![cause("task", "x (pid 3)", 99)], 0, 0),
            ],
            ..SpikeTrace::default()
        };
        let c = causes_of(&trace, 1);
        assert_eq!(
            (c.interruptions, c.interrupted_ns, c.unexplained_ns),
            (2, 200, 15)
        );
        assert_eq!(c.causes[0].name, "local_timer");
        assert_eq!((c.causes[0].ns, c.causes[0].count), (90, 2));
        assert_eq!(c.causes[1].name, "RCU");
        assert_eq!(c.causes.len(), 2);
    }
}
