//! One IPC latency test, or a sequence of them, run and turned into report
//! data; shared by the pair commands (`mq`, `sem`, ...), `ipc` and `suite`.

use crate::ipc::harness::{self, PairOutcome, PairPlan};
use crate::live::ipc::LiveLine;
use crate::pipeline::{
    CommandError, CpuUse, CpuWindow, FinishedTest, Preparation, Run, RunFacts, running_skeleton,
    series_without_samples,
};
use crate::report::{
    ConfigDetail, EndReason, IpcConfig, IpcPair, Series, SeriesDetail, TestConfig, TestResult,
};
use crate::rt::sched;
use crate::rt::tracefs::BreakTrace;
use crate::settings::{IpcSettings, PairLayout, Timing, UsageError};
use crate::stats::LatencyRecorder;
use crate::stats::samples::TestSamples;
use crate::units::format_run_time;
use std::time::Duration;

// The words a command plans an IPC test with: the primitives and how to
// find one, the modes and kinds of task, what its live display implements,
// and how setting up a pair fails. A command takes them from here, so that
// it reaches the test only through its measure module (tests/suite/layers.rs).
pub use crate::ipc::harness::{Mode, Progress, RunPlan, Tasks};
pub use crate::ipc::{PRIMITIVES, SetupError, Transport, transport_named};

/// The CPUs the pairs run on: their pinned CPUs, or every usable CPU when
/// one of them is left to the scheduler.
pub fn cpus_of(pairs: &[PairPlan]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for pair in pairs {
        for cpu in [pair.receiver_cpu, pair.sender_cpu] {
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

/// With `--samples`: the sample rings of a test of `pairs`, one per pair,
/// labelled as the report's series; None without.
pub fn samples_for(
    prep: &Preparation,
    transport: &dyn Transport,
    pairs: &[PairPlan],
) -> Option<TestSamples> {
    let series: Vec<(String, Option<usize>)> = pairs
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("pair {i}"), p.receiver_cpu))
        .collect();
    prep.samples_for(transport.name(), "ipc_pair", &series)
}

/// One IPC test to run.
pub struct IpcTest<'a> {
    pub transport: &'a dyn Transport,
    pub plan: RunPlan,
    pub config: TestConfig,
    pub breaktrace: Option<BreakTrace>,
    /// Shows the run while it goes on (or not).
    pub progress: &'a mut dyn Progress,
    /// Takes a snapshot of the test going on (SIGUSR1; `pipeline::Run::snapshot`).
    /// None: a snapshot request is collected and nothing is shown.
    pub on_snapshot: Option<&'a mut dyn FnMut(FinishedTest)>,
    /// The run, told of every window as it closes (its live outputs).
    pub run: Option<&'a Run<'a>>,
}

pub fn run(test: IpcTest<'_>) -> Result<FinishedTest, SetupError> {
    let window = CpuWindow::open();
    let IpcTest {
        transport,
        plan,
        config,
        breaktrace,
        progress,
        on_snapshot,
        run,
    } = test;
    let mut no_hook = crate::stats::window::NoWindowHook;
    let mut live_hook = run.map(|run| {
        run.begin_test(skeleton(transport, &plan, &config));
        run.window_hook()
    });
    let hook: &mut dyn crate::stats::window::WindowHook = match live_hook.as_mut() {
        Some(h) => h,
        None => &mut no_hook,
    };
    let outcome = run_harness(
        transport,
        &plan,
        &config,
        &window,
        breaktrace,
        progress,
        on_snapshot,
        hook,
    );
    if let Some(run) = run {
        run.end_test();
    }
    let outcome = outcome?;
    let deadlines: Vec<_> = outcome
        .pairs
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let reservation = p.plan.policy.reservation()?;
            Some((
                pair_label(i),
                reservation,
                (p.missed_deadlines, p.throttled),
            ))
        })
        .collect();
    let mut finished = finished_of(transport, &plan, config, outcome, window.close());
    finished.deadline = deadlines
        .into_iter()
        .map(|(label, reservation, counts)| {
            crate::report::DeadlineSeries::of(&finished.result, &label, reservation, counts)
        })
        .collect();
    Ok(finished)
}

/// A pair command's one test (`mq`, `sem`, ...): its primitive, its
/// settings and `-b`'s crossings as the trigger of `--on-threshold`.
pub struct PairTest<'a> {
    pub transport: &'a dyn Transport,
    pub settings: &'a IpcSettings,
    pub breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

/// A pair test runs at the priority -p gives (0, normal, by default).
const PRIORITY_OPTION: Option<&'static str> = Some("-p");

/// Runs a pair command's test on the prepared process, `progress` showing
/// it: a kernel without the primitive makes it a skipped test (exit 4),
/// reported; a pair that cannot be set up ends the run.
pub fn measure_pair(
    test: PairTest<'_>,
    progress: &mut dyn Progress,
    run: &mut Run<'_>,
) -> Result<FinishedTest, CommandError> {
    let PairTest {
        transport,
        settings,
        breaks,
    } = test;
    let breaktrace = match settings.breaktrace_us {
        None => None,
        Some(_) => match BreakTrace::open() {
            Ok(t) => Some(t),
            Err(why) => {
                run.warn(format!("-b: {why}; the run still stops at the limit"));
                None
            }
        },
    };
    let config = config_of(settings, run.prep);
    let mut finished = match self::run(IpcTest {
        transport,
        plan: RunPlan {
            // Peer processes lock their memory when this process could.
            lock_memory: run.prep.memory.is_locked(),
            samples: samples_for(run.prep, transport, &settings.plan.pairs),
            breaks,
            ..settings.plan.clone()
        },
        config: config.clone(),
        breaktrace,
        progress,
        on_snapshot: Some(&mut |mut so_far| {
            so_far.facts.priority_option = PRIORITY_OPTION;
            run.snapshot(&[], so_far)
        }),
        run: Some(run),
    }) {
        Ok(finished) => finished,
        Err(e @ SetupError::KernelLacksFeature(_)) => {
            failed_to_start(transport, &settings.plan, config, e)
        }
        Err(SetupError::Usage(e)) => return Err(UsageError(e).into()),
        Err(e) => return Err(CommandError::Runtime(e.to_string())),
    };
    finished.facts.priority_option = PRIORITY_OPTION;
    if let Some(note) = &finished.facts.breaktrace_note {
        crate::rt::stdio::note_line(&format!("latscope: break-trace limit crossed: {note}"));
    }
    Ok(finished)
}

/// The label of the series of pair `index`.
fn pair_label(index: usize) -> String {
    format!("pair {index}")
}

/// `-b` as the trigger of `--on-threshold` (`actions`): the crossings of
/// `pairs`, each named as its series (None when `-b` is not the trigger).
pub fn break_crossings(
    actions: &crate::settings::actions::Actions,
    test: &str,
    pairs: &[crate::ipc::harness::PairPlan],
) -> Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>> {
    use crate::stats::crossings::{BreakCrossings, CrossingSeries};
    actions.on_break().then(|| {
        let series = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| CrossingSeries {
                label: pair_label(i),
                cpu: p.receiver_cpu,
            })
            .collect();
        std::sync::Arc::new(BreakCrossings::new(
            test,
            series,
            actions.break_keeps_running(),
        ))
    })
}

/// The harness run, with the snapshots turned into finished tests.
#[allow(clippy::too_many_arguments)]
fn run_harness(
    transport: &dyn Transport,
    plan: &RunPlan,
    config: &TestConfig,
    window: &CpuWindow,
    breaktrace: Option<BreakTrace>,
    progress: &mut dyn Progress,
    on_snapshot: Option<&mut dyn FnMut(FinishedTest)>,
    hook: &mut dyn crate::stats::window::WindowHook,
) -> Result<harness::RunOutcome, SetupError> {
    let (plan, config) = (plan, config);
    Ok(match on_snapshot {
        None => harness::run_with_windows(transport, plan, breaktrace, progress, hook)?,
        Some(on_snapshot) => {
            let mut with_snapshots = WithSnapshots {
                progress,
                on_snapshot,
                transport,
                plan,
                config,
                window,
            };
            harness::run_with_windows(transport, plan, breaktrace, &mut with_snapshots, hook)?
        }
    })
}

/// The test before its first sample: a series per pair with no samples,
/// filled from the windows as they close (pipeline::Run's live outputs).
fn skeleton(transport: &dyn Transport, plan: &RunPlan, config: &TestConfig) -> FinishedTest {
    let not_started = failed_to_start(
        transport,
        plan,
        config.clone(),
        SetupError::Failed(String::new()),
    );
    let series = plan
        .pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut cpus: Vec<usize> = p.receiver_cpu.into_iter().collect();
            if let Some(sender) = p.sender_cpu
                && p.sender_cpu != p.receiver_cpu
            {
                cpus.push(sender);
            }
            series_without_samples(
                format!("pair {i}"),
                cpus,
                (p.receiver_cpu.is_some(), p.policy.to_string(), p.priority),
                SeriesDetail::IpcPair(IpcPair {
                    receiver_cpu: p.receiver_cpu.unwrap_or(0),
                    sender_cpu: p.sender_cpu.unwrap_or(0),
                    receiver_tid: 0,
                    sender_tid: 0,
                    interval_us: p.interval_ns / 1000,
                    sent: 0,
                    timeouts: 0,
                    resources: Vec::new(),
                }),
            )
        })
        .collect();
    let mut test = running_skeleton(not_started, series);
    test.facts.cpus_used = cpus_of(&plan.pairs);
    test
}

/// The live progress, plus the snapshots turned into finished tests the
/// same way as the final outcome (`finished_of`), so both read alike.
struct WithSnapshots<'a, 'b> {
    progress: &'b mut dyn Progress,
    on_snapshot: &'b mut dyn FnMut(FinishedTest),
    transport: &'a dyn Transport,
    plan: &'b RunPlan,
    config: &'b TestConfig,
    window: &'b CpuWindow,
}

impl Progress for WithSnapshots<'_, '_> {
    fn tick(&mut self, elapsed: Duration, live: &[harness::PairLive]) {
        self.progress.tick(elapsed, live);
    }

    fn finish(&mut self) {
        self.progress.finish();
    }

    fn snapshot(&mut self, so_far: harness::RunOutcome) {
        let finished = finished_of(
            self.transport,
            self.plan,
            self.config.clone(),
            so_far,
            self.window.so_far(),
        );
        (self.on_snapshot)(finished);
    }
}

/// A test's outcome (final, or a snapshot's) as a finished test.
fn finished_of(
    transport: &dyn Transport,
    plan: &RunPlan,
    config: TestConfig,
    outcome: harness::RunOutcome,
    cpu_use: CpuUse,
) -> FinishedTest {
    let cpus_used: Vec<usize> = {
        let mut c: Vec<usize> = outcome
            .pairs
            .iter()
            .flat_map(|p| [p.receiver_cpu, p.sender_cpu])
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
    // priority_option is set by the pair tests, which take -p (see `measure_pair`).
    let facts = RunFacts {
        elapsed: outcome.elapsed,
        breaktrace_note: outcome.breaktrace_note.clone(),
        ..RunFacts::measured(
            plan.pairs.first().is_some_and(|p| p.policy.is_realtime()),
            &cpus_used,
            cpu_use.of(&cpus_used),
            &series,
            outcome.spikes.as_ref(),
        )
    };
    FinishedTest {
        result: TestResult {
            overall: overall.summary(),
            series,
            spikes: outcome.spikes,
            ..TestResult::new(
                transport.name(),
                transport.describe(),
                plan.mode.as_str(),
                config,
                outcome.end_reason,
                outcome.error,
            )
        },
        started: outcome.started,
        ended: outcome.ended,
        elapsed: outcome.elapsed,
        facts,
        deadline: Vec::new(),
    }
}

/// A test whose tasks or kernel objects could not be set up: reported with
/// its error and no samples, so a sequence can go on with the next one.
pub fn failed_to_start(
    transport: &dyn Transport,
    plan: &RunPlan,
    config: TestConfig,
    error: SetupError,
) -> FinishedTest {
    // A kernel without the primitive: the test is skipped, with the reason.
    let end_reason = if error.is_skip() {
        EndReason::Skipped
    } else {
        EndReason::Error
    };
    FinishedTest::not_started(
        TestResult::new(
            transport.name(),
            transport.describe(),
            plan.mode.as_str(),
            config,
            end_reason,
            Some(error.to_string()),
        ),
        plan.pairs.first().is_some_and(|p| p.policy.is_realtime()),
    )
}

fn series_of(index: usize, p: &PairOutcome) -> Series {
    let mut cpus = vec![p.receiver_cpu];
    if p.sender_cpu != p.receiver_cpu {
        cpus.push(p.sender_cpu);
    }
    Series {
        label: pair_label(index),
        cpus,
        pinned: p.plan.receiver_cpu.is_some(),
        policy: p.plan.policy.to_string(),
        priority: p.plan.priority,
        overruns: p.overruns,
        above_limit: p.above_limit,
        latency: p.recorder.summary(),
        per_second: p.per_second.clone(),
        per_second_dropped: p.per_second_dropped,
        detail: SeriesDetail::IpcPair(IpcPair {
            receiver_cpu: p.receiver_cpu,
            sender_cpu: p.sender_cpu,
            receiver_tid: p.receiver_tid,
            sender_tid: p.sender_tid,
            interval_us: p.plan.interval_ns / 1000,
            sent: p.sent,
            timeouts: p.timeouts,
            resources: p.resource_names.clone(),
        }),
    }
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

/// `--fork` with a primitive that cannot connect two processes is bad usage.
pub fn check_fork(
    transport: &dyn crate::ipc::Transport,
    tasks: crate::ipc::harness::Tasks,
) -> Result<(), crate::settings::UsageError> {
    if tasks == crate::ipc::harness::Tasks::Processes && !transport.crosses_processes() {
        return Err(crate::settings::UsageError(format!(
            "{} cannot connect two processes: run it without -f/--fork",
            transport.name()
        )));
    }
    Ok(())
}

/// One test of a sequence: a primitive in one mode with its plan.
pub struct SequenceItem {
    pub transport: Box<dyn Transport>,
    pub plan: RunPlan,
    pub config: TestConfig,
}

/// Time kept back per test still to run when a sequence has a total budget:
/// starting and stopping the tasks of one test takes a few milliseconds.
const SETUP_RESERVE: Duration = Duration::from_millis(40);

/// Runs the items one after another. A primitive that cannot start (a
/// missing kernel feature, a limit) is reported as a failed test and the
/// sequence goes on; an interrupt ends the sequence with what was measured.
/// With `budget`, each test gets a fair share of the time left when it starts,
/// so that the whole sequence ends within the budget.
/// `after_each` sees the tests finished so far after each one; `on_snapshot`
/// a snapshot (SIGUSR1) of the test going on, after those finished.
/// A scheduling refusal (`SetupError::SchedulingRefused`) ends the
/// sequence with its one line: every later test would be refused the same.
pub fn run_sequence(
    items: Vec<SequenceItem>,
    budget: Option<Duration>,
    quiet: bool,
    run_state: &Run<'_>,
    after_each: &mut dyn FnMut(&[FinishedTest]),
    on_snapshot: &mut dyn FnMut(&[FinishedTest], FinishedTest),
) -> Result<Vec<FinishedTest>, CommandError> {
    let started = std::time::Instant::now();
    let count = items.len();
    let mut finished = Vec::new();
    for (index, mut item) in items.into_iter().enumerate() {
        if let Some(budget) = budget {
            let left = (count - index) as u32;
            let share = budget
                .saturating_sub(started.elapsed())
                .saturating_sub(SETUP_RESERVE * left)
                / left;
            let share = share.max(Duration::from_millis(10));
            item.plan.duration = Some(share);
            item.config.duration_s = secs(Some(share));
        }
        let name = item.transport.name();
        if !quiet {
            crate::rt::stdio::note_line(&format!(
                "latscope: running {name} ({}, {}) ...",
                item.plan.mode.as_str(),
                item.plan
                    .duration
                    .map_or("until its loops are done".to_string(), |d| format!(
                        "for {}",
                        format_run_time(d)
                    ))
            ));
        }
        let mut progress = LiveLine::new(name, quiet).until_stopped(item.plan.runs_until_stopped());
        // The rings of this test only, allocated as it begins.
        item.plan.samples = samples_for(run_state.prep, item.transport.as_ref(), &item.plan.pairs);
        let plan = item.plan.clone();
        let config = item.config.clone();
        let done = match run(IpcTest {
            transport: item.transport.as_ref(),
            plan: item.plan,
            config: item.config,
            breaktrace: None,
            progress: &mut progress,
            on_snapshot: Some(&mut |so_far| on_snapshot(&finished, so_far)),
            run: Some(run_state),
        }) {
            Ok(done) => done,
            Err(SetupError::SchedulingRefused(e)) => return Err(CommandError::Runtime(e)),
            Err(e) => failed_to_start(item.transport.as_ref(), &plan, config, e),
        };
        let interrupted = done.result.end_reason == EndReason::Interrupted;
        finished.push(done);
        after_each(&finished);
        if interrupted {
            break;
        }
    }
    Ok(finished)
}

/// The line `latscope ipc` says before it starts: how long the whole run
/// takes, since its `-D` is per primitive (`suite -D` is the whole run):
/// `ipc -D 10s` runs 9 primitives for 1m30s. None when loops end the tests.
pub fn expected_total_line(primitives: usize, per_primitive: Option<Duration>) -> Option<String> {
    let per = per_primitive?;
    let total = per.saturating_mul(primitives as u32);
    Some(format!(
        "latscope: {primitives} primitive{} for {} each (-D is per primitive): about {} in all",
        if primitives == 1 { "" } else { "s" },
        crate::units::format_duration(per),
        crate::units::format_duration(total)
    ))
}

/// What a sequence of tests shares: every primitive in every mode runs with
/// these settings.
pub struct SequenceSpec<'a> {
    pub primitives: &'a [&'a str],
    pub modes: &'a [Mode],
    pub layout: &'a PairLayout,
    pub timing: Timing,
    pub tasks: Tasks,
    pub cross_cpu: bool,
    pub per_test: Option<Duration>,
    pub max_latency_us: Option<u64>,
    /// `--trace-spikes` (ns): every test traces its samples above it.
    pub spike_threshold_ns: Option<u64>,
    /// `--collector`: how the spike traces collect kernel events.
    pub collector: crate::rt::bpf::CollectorChoice,
    pub prep: &'a Preparation,
}

/// The tests of a sequence, each primitive in each mode, with the plan and
/// the report's record of its settings.
pub fn sequence(spec: &SequenceSpec<'_>) -> Result<Vec<SequenceItem>, CommandError> {
    let pairs = spec.layout.pairs(spec.timing, spec.cross_cpu)?;
    let mut items = Vec::new();
    for &name in spec.primitives {
        for &mode in spec.modes {
            let transport = transport_named(name).ok_or_else(|| {
                CommandError::Runtime(format!("primitive {name} is not built in"))
            })?;
            check_fork(transport.as_ref(), spec.tasks)?;
            let plan = RunPlan {
                pairs: pairs.clone(),
                mode,
                tasks: spec.tasks,
                duration: spec.per_test,
                limit_ns: spec.max_latency_us.map(|us| us.saturating_mul(1000)),
                lock_memory: spec.prep.memory.is_locked(),
                spike_threshold_ns: spec.spike_threshold_ns,
                spike_collector: spec.collector,
                ..RunPlan::default()
            };
            let config = TestConfig {
                policy: spec.layout.policy.to_string(),
                priority: spec.layout.priority,
                loops: spec.timing.loops,
                duration_s: secs(plan.duration),
                max_latency_us: spec.max_latency_us,
                mlockall: spec.prep.memory.is_locked(),
                cpu_dma_latency: spec.prep.dma_latency.describe(),
                detail: ConfigDetail::Ipc(IpcConfig {
                    pairs: plan.pairs.len(),
                    tasks: spec.tasks.as_str().to_string(),
                    cross_cpu: spec.cross_cpu,
                    same_priority: spec.layout.same_priority,
                    interval_us: spec.timing.interval_us,
                    distance_us: spec.timing.distance_us,
                    receive_timeout_s: None,
                    forced_send_delay_s: None,
                    breaktrace_us: None,
                }),
            };
            items.push(SequenceItem {
                transport,
                plan,
                config,
            });
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{MemoryLock, assemble_report};
    use crate::report::EndReason;

    #[test]
    fn the_expected_total_is_the_time_per_primitive_times_the_primitives() {
        assert_eq!(
            expected_total_line(9, Some(Duration::from_secs(10))).as_deref(),
            Some("latscope: 9 primitives for 10s each (-D is per primitive): about 1m30s in all")
        );
        assert_eq!(
            expected_total_line(1, Some(Duration::from_millis(500))).as_deref(),
            Some("latscope: 1 primitive for 500ms each (-D is per primitive): about 500ms in all")
        );
        assert_eq!(expected_total_line(9, None), None);
    }

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
            SetupError::KernelLacksFeature(
                "msgget failed: Function not implemented (kernel built without System V IPC)"
                    .into(),
            ),
        );
        assert_eq!(skipped.result.end_reason, EndReason::Skipped);
        let failed = failed_to_start(
            transport.as_ref(),
            &plan,
            config,
            SetupError::Failed("msgget failed: No space left on device".into()),
        );
        assert_eq!(failed.result.end_reason, EndReason::Error);
        let sys = crate::report::testdata::sample_report().sysinfo;
        let report = assemble_report(
            vec![skipped.clone()],
            sys.clone(),
            vec![],
            &MemoryLock::Locked,
        );
        assert_eq!(report.exit_code, crate::pipeline::EXIT_SKIPPED);
        let both = assemble_report(vec![skipped, failed], sys, vec![], &MemoryLock::Locked);
        assert_eq!(both.exit_code, crate::pipeline::EXIT_RUNTIME);
    }
}
