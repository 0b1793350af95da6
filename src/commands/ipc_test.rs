//! Running one IPC latency test and turning its outcome into report data;
//! shared by `latscope mq` and `latscope suite`.

use super::background::Background;
use super::validity::{self, CpuWindow, RunFacts};
use crate::ipc::Transport;
use crate::ipc::harness::{self, PairOutcome, PairPlan, Progress, RunPlan};
use crate::load::LoadSpec;
use crate::report::{
    ConfigDetail, IpcConfig, IpcPair, Report, SCHEMA_NAME, SCHEMA_VERSION, Series, SeriesDetail,
    TestConfig, TestResult, Tool,
};
use crate::rt::dma_latency::DmaLatency;
use crate::rt::sched;
use crate::rt::sysinfo::{self, SysInfo};
use crate::rt::tracefs::BreakTrace;
use crate::settings::IpcSettings;
use crate::stats::LatencyRecorder;
use std::time::{Duration, SystemTime};

/// Whether `mlockall` is in force, for the report and the validity checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryLock {
    Locked,
    NotRequested,
    Failed(String),
}

impl MemoryLock {
    pub fn is_locked(&self) -> bool {
        *self == MemoryLock::Locked
    }
}

/// Process-wide preparation for measuring, with what it achieved; every
/// command goes through it.
pub struct Preparation {
    pub memory: MemoryLock,
    pub dma_latency: DmaLatency,
    pub warnings: Vec<String>,
    /// The `--load` generators and the kernel-log follower.
    pub background: Background,
}

impl Preparation {
    /// Locks memory, holds `/dev/cpu_dma_latency`, follows the kernel log
    /// and starts the `loads` on the `measured_cpus`. With `require_mlock`, a
    /// failing mlockall is an error (exit 1); otherwise the run goes on and the
    /// report says so. Call it from the main thread: the loads' parent-death
    /// signal is tied to the thread that starts them.
    pub fn apply(
        lock_memory: bool,
        require_mlock: bool,
        hold_dma: bool,
        loads: &[LoadSpec],
        measured_cpus: &[usize],
    ) -> Result<Preparation, String> {
        let mut warnings = Vec::new();
        let memory = if lock_memory {
            match sched::lock_all_memory() {
                Ok(()) => MemoryLock::Locked,
                Err(e) if require_mlock => return Err(e),
                Err(e) => MemoryLock::Failed(e),
            }
        } else {
            MemoryLock::NotRequested
        };
        let dma_latency = if hold_dma {
            DmaLatency::request_zero()
        } else {
            DmaLatency::NotRequested
        };
        if let DmaLatency::Unavailable(why) = &dma_latency {
            warnings.push(format!(
                "could not hold {} at 0 ({why}): CPU idle-state exits may add latency",
                crate::rt::dma_latency::PATH
            ));
        }
        let background = Background::start(loads, measured_cpus)?;
        Ok(Preparation {
            memory,
            dma_latency,
            warnings,
            background,
        })
    }

    /// After the last sample, before the results are shown: stops the loads
    /// and the kernel-log follower and records them in `report`.
    pub fn finish(&mut self, report: &mut Report) {
        self.background.finish_into(report);
    }
}

/// The CPUs the pairs run on: their pinned CPUs, or every usable CPU when
/// one of them is left to the scheduler.
pub fn cpus_of(pairs: &[PairPlan]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for pair in pairs {
        for cpu in [pair.recorder_cpu, pair.peer_cpu] {
            match cpu {
                Some(cpu) => cpus.push(cpu),
                None => return sched::allowed_cpus(),
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// One IPC test to run.
pub struct IpcTest<'a> {
    pub transport: &'a dyn Transport,
    pub plan: RunPlan,
    pub config: TestConfig,
    pub breaktrace: Option<BreakTrace>,
    /// Shows the run while it goes on (or not).
    pub progress: &'a mut dyn Progress,
}

/// A finished IPC test: report data plus the facts the validity checks need.
#[derive(Clone)]
pub struct FinishedTest {
    pub result: TestResult,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    pub facts: RunFacts,
}

pub fn run(test: IpcTest<'_>) -> Result<FinishedTest, String> {
    let window = CpuWindow::open();
    let outcome = harness::run(test.transport, &test.plan, test.breaktrace, test.progress)?;
    let cpu_use = window.close();

    let cpus_used: Vec<usize> = {
        let mut c: Vec<usize> = outcome
            .pairs
            .iter()
            .flat_map(|p| [p.recorder_cpu, p.peer_cpu])
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let mut overall = LatencyRecorder::new();
    for pair in &outcome.pairs {
        overall.merge(&pair.recorder);
    }
    let series: Vec<Series> = outcome
        .pairs
        .iter()
        .enumerate()
        .map(|(i, p)| series_of(i, p))
        .collect();
    let (busy_fraction, own_cpu_seconds, load_fraction) = cpu_use.of(&cpus_used);
    let facts = RunFacts {
        realtime_policy: test
            .plan
            .pairs
            .first()
            .is_some_and(|p| p.policy.is_realtime()),
        cpus_used: cpus_used.clone(),
        busy_fraction,
        own_cpu_seconds,
        load_fraction,
        elapsed: outcome.elapsed,
        max_ns: overall.max(),
        windows_dropped: series.iter().map(|s| s.per_second_dropped).sum(),
        breaktrace_note: outcome.breaktrace_note.clone(),
        scheduling_free: false,
        // Set by the pair tests, which take -p (see pair_test).
        priority_option: None,
    };
    Ok(FinishedTest {
        result: TestResult {
            test: test.transport.name().to_string(),
            description: test.transport.describe().to_string(),
            mode: test.plan.mode.as_str().to_string(),
            config: test.config,
            end_reason: outcome.end_reason,
            error: outcome.error,
            overall: overall.summary(),
            series,
            overall_detail: None,
            spikes: outcome.spikes,
        },
        started: outcome.started,
        ended: outcome.ended,
        elapsed: outcome.elapsed,
        facts,
    })
}

/// A test whose tasks or kernel objects could not be set up: reported with
/// its error and no samples, so a sequence can go on with the next one.
pub fn failed_to_start(
    transport: &dyn Transport,
    plan: &RunPlan,
    config: TestConfig,
    error: String,
) -> FinishedTest {
    // A kernel without the primitive: the test is skipped, with the reason.
    let end_reason = if crate::ipc::lacks_kernel_feature(&error) {
        harness::EndReason::Skipped
    } else {
        harness::EndReason::Error
    };
    FinishedTest::not_started(
        TestResult {
            test: transport.name().to_string(),
            description: transport.describe().to_string(),
            mode: plan.mode.as_str().to_string(),
            config,
            end_reason,
            error: Some(error),
            overall: LatencyRecorder::new().summary(),
            series: Vec::new(),
            overall_detail: None,
            spikes: None,
        },
        plan.pairs.first().is_some_and(|p| p.policy.is_realtime()),
    )
}

impl FinishedTest {
    /// A test that ended before measuring (its `result` says why), so that
    /// a sequence can report it and go on.
    pub fn not_started(result: TestResult, realtime_policy: bool) -> FinishedTest {
        let now = SystemTime::now();
        FinishedTest {
            result,
            started: now,
            ended: now,
            elapsed: Duration::ZERO,
            facts: RunFacts {
                realtime_policy,
                ..RunFacts::default()
            },
        }
    }
}

fn series_of(index: usize, p: &PairOutcome) -> Series {
    let mut cpus = vec![p.recorder_cpu];
    if p.peer_cpu != p.recorder_cpu {
        cpus.push(p.peer_cpu);
    }
    Series {
        label: format!("pair {index}"),
        cpus,
        pinned: p.plan.recorder_cpu.is_some(),
        policy: p.plan.policy.to_string(),
        priority: p.plan.priority,
        overruns: p.overruns,
        above_limit: p.above_limit,
        latency: p.recorder.summary(),
        per_second: p.per_second.clone(),
        per_second_dropped: p.per_second_dropped,
        detail: SeriesDetail::IpcPair(IpcPair {
            receiver_cpu: p.recorder_cpu,
            sender_cpu: p.peer_cpu,
            receiver_tid: p.recorder_tid,
            sender_tid: p.peer_tid,
            interval_us: p.plan.interval_ns / 1000,
            sent: p.sent,
            timeouts: p.timeouts,
            resources: p.resource_names.clone(),
        }),
    }
}

/// Builds the report of a command from its finished tests, with the
/// validity warnings of the tests whose figures depend on scheduling.
pub fn assemble_report(
    tests: Vec<FinishedTest>,
    sysinfo: SysInfo,
    mut warnings: Vec<String>,
    memory: &MemoryLock,
) -> Report {
    let facts: Vec<RunFacts> = tests
        .iter()
        .filter(|t| !t.facts.scheduling_free)
        .map(|t| t.facts.clone())
        .collect();
    if !facts.is_empty() {
        for w in validity::warnings(&sysinfo, &RunFacts::combine(&facts), memory) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    build_report(tests, sysinfo, warnings)
}

/// Builds the report of finished tests with these warnings and no others.
pub fn build_report(tests: Vec<FinishedTest>, sysinfo: SysInfo, warnings: Vec<String>) -> Report {
    let started = tests.first().map_or_else(SystemTime::now, |t| t.started);
    let ended = tests.last().map_or_else(SystemTime::now, |t| t.ended);
    let mut report = Report {
        schema: SCHEMA_NAME.to_string(),
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        // Lossy: a non-UTF-8 argument (a file name, say) must not cost the results.
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        start_time: sysinfo::rfc3339(started),
        end_time: sysinfo::rfc3339(ended),
        duration_s: tests.iter().map(|t| t.elapsed.as_secs_f64()).sum(),
        sysinfo,
        tests: tests.into_iter().map(|t| t.result).collect(),
        warnings,
        thresholds: Vec::new(),
        loads: Vec::new(),
        kernel_log: Default::default(),
        exit_code: 0,
    };
    report.exit_code = super::exit_code_for(&report);
    report
}

/// The report's record of a single IPC test's settings.
pub fn config_of(settings: &IpcSettings, prep: &Preparation) -> TestConfig {
    TestConfig {
        policy: settings.policy.to_string(),
        priority: settings.priority,
        loops: settings.loops,
        duration_s: secs(settings.plan.duration),
        max_latency_us: settings.verdict.max_latency_us,
        mlockall: prep.memory.is_locked(),
        cpu_dma_latency: prep.dma_latency.describe(),
        detail: ConfigDetail::Ipc(IpcConfig {
            pairs: settings.plan.pairs.len(),
            tasks: settings.plan.tasks.as_str().to_string(),
            cross_cpu: settings.cross_cpu,
            same_priority: settings.same_priority,
            interval_us: settings.interval_us,
            distance_us: settings.distance_us,
            receive_timeout_s: secs(settings.plan.receive_timeout),
            forced_send_delay_s: secs(settings.plan.forced_send_delay),
            breaktrace_us: settings.breaktrace_us,
        }),
    }
}

/// Seconds as the report writes them.
pub fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::EndReason;

    #[test]
    fn a_kernel_without_the_primitive_skips_the_test() {
        let transport = crate::ipc::transport_named("svmq").unwrap();
        let plan = RunPlan::default();
        let config = crate::report::testdata::sample_report().tests[0]
            .config
            .clone();
        let skipped = failed_to_start(
            transport.as_ref(),
            &plan,
            config.clone(),
            "msgget failed: Function not implemented (kernel built without System V IPC)".into(),
        );
        assert_eq!(skipped.result.end_reason, EndReason::Skipped);
        let failed = failed_to_start(
            transport.as_ref(),
            &plan,
            config,
            "msgget failed: No space left on device".into(),
        );
        assert_eq!(failed.result.end_reason, EndReason::Error);
        let sys = crate::report::testdata::sample_report().sysinfo;
        let report = assemble_report(
            vec![skipped.clone()],
            sys.clone(),
            vec![],
            &MemoryLock::Locked,
        );
        assert_eq!(report.exit_code, crate::commands::EXIT_SKIPPED);
        let both = assemble_report(vec![skipped, failed], sys, vec![], &MemoryLock::Locked);
        assert_eq!(both.exit_code, crate::commands::EXIT_RUNTIME);
    }
}
