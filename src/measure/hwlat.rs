//! The hardware-latency test run and turned into report data: shared by
//! `latscope hwlat` and the `hwlatdetect` name.

use crate::hwlat::gap_log::GapLog;
pub use crate::hwlat::machine::SmiCounting;
use crate::hwlat::over_time::{Placement, in_seconds};
pub use crate::hwlat::sampler::CpuOutcome;
pub use crate::hwlat::tier::{Decision, Tier, TierChoice};
pub use crate::hwlat::{HwlatOutcome, HwlatPlan, Prepared, UNPRIVILEGED_TIER};
use crate::pipeline::{CpuWindow, FinishedTest, Run, RunFacts};
use crate::report::{
    ConfigDetail, EndReason, HwlatConfig, HwlatCpu, HwlatSample, OsCause, Series, SeriesDetail,
    TestConfig, TestResult,
};
use crate::rt::signals::stop_signalled;
use crate::settings::hwlat::HwlatSettings;
use crate::stats::LatencyRecorder;
use std::time::{Duration, SystemTime};

/// What one sample is, for the report.
pub const DESCRIPTION: &str =
    "hardware gaps: gaps between two clock reads above the threshold with no interference counted";

/// Runs `plan` until its duration ends or SIGINT/SIGTERM.
pub fn run(plan: &HwlatPlan) -> HwlatOutcome {
    crate::hwlat::run(plan, &mut stop_signalled)
}

/// The hypervisor latscope runs under, as doctor names it.
pub fn hypervisor() -> Option<String> {
    crate::doctor::platform::hypervisor(&crate::doctor::Machine::live())
}

/// How SMIs are counted, in words for the output.
pub fn describe_smi(smi: &SmiCounting) -> String {
    match smi {
        SmiCounting::Perf(event) => {
            format!("counted by perf's {} event (MSR_SMI_COUNT)", event.name)
        }
        SmiCounting::Msr => "counted from MSR_SMI_COUNT (/dev/cpu/N/msr at 0x34)".into(),
        SmiCounting::NotCountable(why) => format!("not countable here ({why})"),
    }
}

/// The tier `choice` gives here (the error is the user's line, exit 1).
pub fn decide_tier(choice: TierChoice) -> Result<Decision, String> {
    crate::hwlat::tier::TierFacts::live()
        .decide(choice)
        .map_err(|e| e.to_string())
}

/// A tier asked for by name that cannot run here: its own line, before the
/// real-time set-up (an ordinary user gets this line, not the set-up's).
pub fn check_before_run(settings: &HwlatSettings) -> Result<(), String> {
    match settings.tier {
        TierChoice::Auto | TierChoice::Unprivileged => Ok(()),
        choice => decide_tier(choice).map(|_| ()),
    }
}

/// The `hwlatdetect` name's run, started before its header: the most
/// precise tier that runs here (`--tier auto`, which never refuses) is
/// loaded, or its trace started, so that `detector:` names the tier that
/// runs even when the one decided could not start; why another tier runs
/// is told to `debug` (its `--debug` lines).
pub fn start_hwlatdetect(
    cpus: Vec<usize>,
    (threshold_us, width_us, window_us): (u64, u64, u64),
    duration_s: u64,
    debug: &mut dyn FnMut(&str),
) -> (HwlatPlan, Prepared) {
    let decision = crate::hwlat::tier::TierFacts::live().available();
    let plan = hwlatdetect_plan(
        cpus,
        (threshold_us, width_us, window_us),
        duration_s,
        decision.tier,
    );
    let prepared = crate::hwlat::prepare(&plan);
    let why = crate::hwlat::tier::join_fallbacks(
        decision.fallback,
        prepared.tier_fallback().map(str::to_string),
    );
    if let Some(why) = why {
        debug(&format!("tier: {} ({why})", prepared.tier().describe()));
    }
    (plan, prepared)
}

/// Runs a started plan until its duration ends or SIGINT/SIGTERM.
pub fn run_prepared(plan: &HwlatPlan, prepared: Prepared) -> HwlatOutcome {
    crate::hwlat::run_prepared(plan, prepared, &mut stop_signalled)
}

/// The classification sub-window of the `hwlatdetect` name (docs/hwlat.md).
const HWLATDETECT_SUB_WINDOW_NS: u64 = 500_000;

/// The `hwlatdetect` name's run: (threshold, width, window) in us as it
/// takes them, FIFO 99 (the hwlat tracer's kernel thread's place), `tier`
/// or the unprivileged one when it cannot start.
pub fn hwlatdetect_plan(
    cpus: Vec<usize>,
    (threshold_us, width_us, window_us): (u64, u64, u64),
    duration_s: u64,
    tier: Tier,
) -> HwlatPlan {
    HwlatPlan {
        cpus,
        priority: 99,
        // hwlatdetect compares whole microseconds: a gap counts from
        // threshold + 1 us on.
        threshold_ns: threshold_us * 1000 + 999,
        width_ns: width_us * 1000,
        window_ns: window_us * 1000,
        sub_window_ns: HWLATDETECT_SUB_WINDOW_NS.min(width_us * 1000),
        duration_ns: Some(duration_s.saturating_mul(1_000_000_000)),
        tier,
        fall_back: true,
        keep_gaps: false,
    }
}

pub fn plan_of(settings: &HwlatSettings, decision: &Decision) -> HwlatPlan {
    HwlatPlan {
        cpus: settings.cpus.clone(),
        priority: settings.priority,
        threshold_ns: settings.threshold_ns,
        width_ns: settings.width_ns,
        window_ns: settings.window_ns,
        sub_window_ns: settings.sub_window_ns,
        duration_ns: settings.duration.map(crate::rt::clock::duration_ns),
        tier: decision.tier,
        fall_back: settings.tier == TierChoice::Auto,
        keep_gaps: settings.gaps.is_some(),
    }
}

/// Measures with `settings`: the finished test and its warnings.
pub fn measure(
    settings: &HwlatSettings,
    run: &Run<'_>,
) -> Result<(FinishedTest, Vec<String>), String> {
    let decision = decide_tier(settings.tier)?;
    let plan = plan_of(settings, &decision);
    let window = CpuWindow::open();
    let started = SystemTime::now();
    let outcome = run.measuring(None, |_| self::run(&plan));
    let ended = SystemTime::now();
    let cpu_use = window.close().of(&settings.cpus);
    let hypervisor = hypervisor();
    let mut warnings = warnings_of(&outcome, hypervisor.as_deref());
    let fallback =
        crate::hwlat::tier::join_fallbacks(decision.fallback, outcome.tier_fallback.clone());
    warnings.extend(crate::hwlat::tier::fallback_line(
        outcome.tier,
        fallback.as_deref(),
    ));
    if let Some(path) = &settings.gaps {
        let logs: Vec<(usize, &GapLog)> = outcome
            .cpus
            .iter()
            .filter_map(|c| Some((c.cpu, c.gap_log.as_ref()?)))
            .collect();
        crate::hwlat::gap_log::write_csv(path, &logs)
            .map_err(|e| format!("could not write the gaps to {}: {e}", path.display()))?;
    }
    let mut config = config_of(settings, run, hypervisor, &outcome.smi);
    if let ConfigDetail::Hwlat(c) = &mut config.detail {
        c.tier = outcome.tier.describe().into();
        c.tier_fallback = fallback;
        if outcome.tier == Tier::Bpf {
            // Its sub-windows only bound the gaps kept between two
            // classifications.
            c.sub_window_ns = settings.width_ns.min(crate::hwlat::BPF_SUB_WINDOW_NS);
        }
    }
    let result = result_of(config, &outcome, settings.priority);
    let facts = RunFacts {
        elapsed: outcome.measured,
        priority_option: Some("-p"),
        ..RunFacts::measured(true, &settings.cpus, cpu_use, &result.series, None)
    };
    Ok((
        FinishedTest {
            result,
            started,
            ended,
            elapsed: outcome.measured,
            facts,
            // hwlat's samplers are FIFO only: no reservation to report.
            deadline: Vec::new(),
        },
        warnings,
    ))
}

/// A test that did not run (the suite's row without real-time rights): its
/// configuration, how it ended and why.
pub fn not_run(
    settings: &HwlatSettings,
    run: &Run<'_>,
    end: EndReason,
    why: String,
) -> FinishedTest {
    let smi = crate::hwlat::machine::smi_counting(&settings.cpus);
    let config = config_of(settings, run, hypervisor(), &smi);
    FinishedTest::not_started(
        TestResult::new("hwlat", DESCRIPTION, "gaps", config, end, Some(why)),
        true,
    )
}

fn config_of(
    settings: &HwlatSettings,
    run: &Run<'_>,
    hypervisor: Option<String>,
    smi: &SmiCounting,
) -> TestConfig {
    TestConfig {
        policy: "fifo".into(),
        priority: settings.priority,
        loops: None,
        duration_s: settings.duration.map(|d| d.as_secs_f64()),
        max_latency_us: settings.verdict.max_latency_us,
        mlockall: run.prep.memory.is_locked(),
        cpu_dma_latency: run.prep.dma_latency.describe(),
        detail: ConfigDetail::Hwlat(HwlatConfig {
            cpus: settings.cpus.clone(),
            threshold_ns: settings.threshold_ns,
            width_ns: settings.width_ns,
            window_ns: settings.window_ns,
            sub_window_ns: settings.sub_window_ns,
            tier: UNPRIVILEGED_TIER.into(),
            tier_fallback: None,
            hypervisor,
            smi_counting: describe_smi(smi),
            rt_runtime_us: settings.rt_runtime_us,
            rt_period_us: settings.rt_period_us,
        }),
    }
}

/// Warnings of the run: SMT siblings that were busy, time that could not
/// be classified, gaps not kept.
pub fn warnings_of(outcome: &HwlatOutcome, hypervisor: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = outcome
        .busy_siblings
        .iter()
        .map(|b| {
            format!(
                "CPU {}'s SMT sibling CPU {} was busy {:.0}% of the run: its work shares the core and slows the sampler, which is not hardware latency",
                b.cpu, b.sibling, b.busy_percent
            )
        })
        .collect();
    for c in &outcome.cpus {
        if c.spun_ns > 0 && c.classified_ns * 2 < c.spun_ns {
            out.push(format!(
                "CPU {}: only {:.0}% of the time sampled could be classified (reading /proc between sub-windows took the rest)",
                c.cpu,
                c.classified_ns as f64 * 100.0 / c.spun_ns as f64
            ));
        }
    }
    if let Some(hv) = hypervisor
        && outcome.cpus.iter().any(|c| c.tally.hardware_count() > 0)
    {
        out.push(format!(
            "running under {hv}: the hardware gaps are the hypervisor's time (or the host's firmware): a bare-metal machine must be measured to know its own"
        ));
    }
    out
}

/// Where CPU `cpu`'s duty windows lay in the run (`config`'s CPUs start
/// staggered), to place its gaps in seconds since the start.
fn placement(config: &TestConfig, cpu: usize) -> Placement {
    let (cpus, window_ns, width_ns) = config.hwlat().map_or((&[][..], 1, 1), |h| {
        (h.cpus.as_slice(), h.window_ns.max(1), h.width_ns)
    });
    let i = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    Placement {
        first_ns: crate::hwlat::stagger_ns(window_ns, i, cpus.len()),
        window_ns,
        width_ns,
    }
}

/// The report's test: one series per CPU (its hardware gaps, and per second
/// of the run both classes'), all merged.
pub fn result_of(config: TestConfig, outcome: &HwlatOutcome, priority: i32) -> TestResult {
    let mut overall = LatencyRecorder::new();
    let series: Vec<Series> = outcome
        .cpus
        .iter()
        .map(|c| {
            overall.merge(&c.tally.hardware);
            let at = placement(&config, c.cpu);
            let mut cpu = cpu_of(c, outcome);
            cpu.os_per_second = in_seconds(&c.tally.over_time.os, at);
            Series {
                label: format!("CPU {}", c.cpu),
                cpus: vec![c.cpu],
                pinned: true,
                policy: "fifo".into(),
                priority,
                overruns: 0,
                above_limit: 0,
                latency: c.tally.hardware.summary(),
                per_second: in_seconds(&c.tally.over_time.hardware, at),
                per_second_dropped: 0,
                detail: SeriesDetail::HwlatCpu(Box::new(cpu)),
            }
        })
        .collect();
    TestResult {
        overall: overall.summary(),
        series,
        ..TestResult::new(
            "hwlat",
            DESCRIPTION,
            "gaps",
            config,
            outcome.end_reason,
            outcome.error.clone(),
        )
    }
}

fn cpu_of(c: &CpuOutcome, outcome: &HwlatOutcome) -> HwlatCpu {
    let mut os_causes: Vec<OsCause> = c
        .tally
        .causes
        .iter()
        .map(|(cause, &(count, ns))| OsCause {
            cause: cause.clone(),
            count,
            ns,
        })
        .collect();
    os_causes.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.cause.cmp(&b.cause)));
    HwlatCpu {
        cpu: c.cpu,
        tid: c.tid,
        windows: c.windows,
        sub_windows: c.sub_windows,
        quiet_sub_windows: c.quiet_sub_windows,
        spun_ns: c.spun_ns,
        classified_ns: c.classified_ns,
        loops: c.loops,
        loops_per_s: if c.spun_ns > 0 {
            c.loops as f64 * 1e9 / c.spun_ns as f64
        } else {
            0.0
        },
        hardware_gaps: c.tally.hardware_count(),
        hardware_ns: c.tally.hardware_ns,
        os_gaps: c.tally.os_count,
        os_ns: c.tally.os_ns,
        os_max_ns: c.tally.os_max_ns,
        os_causes,
        gaps_dropped: c.gaps_dropped,
        nmis: c.nmis,
        nmi_ns: c.nmi_ns,
        nmi_max_ns: c.nmi_max_ns,
        smis: outcome.smis.get(&c.cpu).copied(),
        steal_ns: outcome.steal_ns.get(&c.cpu).copied().unwrap_or(0),
        os_per_second: Vec::new(),
        samples: samples_of(c),
    }
}

/// The windows' hardware samples, for hwlatdetect's lines and rtla's Max Noise.
pub fn samples_of(c: &CpuOutcome) -> Vec<HwlatSample> {
    c.samples
        .iter()
        .map(|s| HwlatSample {
            realtime_ns: s.realtime_ns,
            inner_ns: s.inner_ns,
            outer_ns: s.outer_ns,
            count: s.count,
            sum_ns: s.sum_ns,
            cpu: c.cpu,
        })
        .collect()
}

/// The run's length as measured, for the hwlatdetect face's MTBF.
pub fn measured_seconds(outcome: &HwlatOutcome) -> f64 {
    Duration::as_secs_f64(&outcome.measured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    /// A config of `hwlat` on `cpus`, windows of `window_ms` spinning
    /// `width_ms`.
    fn config(cpus: Vec<usize>, (window_ms, width_ms): (u64, u64)) -> TestConfig {
        let mut config = sample_report().tests[0].config.clone();
        config.detail = ConfigDetail::Hwlat(HwlatConfig {
            cpus,
            threshold_ns: 10_000,
            width_ns: width_ms * 1_000_000,
            window_ns: window_ms * 1_000_000,
            sub_window_ns: 500_000,
            tier: UNPRIVILEGED_TIER.into(),
            tier_fallback: None,
            hypervisor: None,
            smi_counting: String::new(),
            rt_runtime_us: None,
            rt_period_us: None,
        });
        config
    }

    #[test]
    fn each_cpus_windows_are_placed_where_its_staggered_widths_spun() {
        let at = |config: &TestConfig, cpu| {
            let p = placement(config, cpu);
            (p.first_ns, p.window_ns, p.width_ns)
        };
        let c = config(vec![2, 5, 7], (900, 300));
        assert_eq!(at(&c, 2), (0, 900_000_000, 300_000_000));
        assert_eq!(at(&c, 5), (300_000_000, 900_000_000, 300_000_000));
        assert_eq!(at(&c, 7), (600_000_000, 900_000_000, 300_000_000));
    }
}
