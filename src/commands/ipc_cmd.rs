//! `latscope ipc`: every wake-up primitive with the same settings, one after
//! another, and one table that compares them. Also the sequence runner that
//! `latscope suite` uses.

use super::ipc_test::{self, FinishedTest, IpcTest, Preparation, secs};
use super::progress::LiveLine;
use super::{CommandError, deliver, write_files};
use crate::cli::{IpcArgs, IpcModeArg};
use crate::ipc::harness::{EndReason, Mode, RunPlan, Tasks};
use crate::ipc::{PRIMITIVES, Transport, transport_named};
use crate::report::console::{Table, latency_cell, percentile_cell, write_footer};
use crate::report::json::LatscopeJson;
use crate::report::{ConfigDetail, Exporter, IpcConfig, Report, TestConfig};
use crate::rt::sched;
use crate::rt::sysinfo::SysInfo;
use crate::settings::{PairLayout, Timing, UsageError, VerdictSettings, seconds};
use crate::units::format_run_time;
use std::io::Write;
use std::time::Duration;

/// Time per primitive when -D is not given: nine primitives in about a minute.
const DEFAULT_TIME_PER_PRIMITIVE: Duration = Duration::from_secs(6);
/// Interval when -i is not given: pmqtest's usual `-i100`.
pub const DEFAULT_INTERVAL_US: u64 = 100;
/// Priority when -p is not given and real-time scheduling is allowed.
pub const DEFAULT_RT_PRIORITY: u64 = 99;

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
/// `after_each` sees the tests finished so far after each one.
pub fn run_sequence(
    items: Vec<SequenceItem>,
    budget: Option<Duration>,
    quiet: bool,
    after_each: &mut dyn FnMut(&[FinishedTest]),
) -> Vec<FinishedTest> {
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
            eprintln!(
                "latscope: running {name} ({}, {}) ...",
                item.plan.mode.as_str(),
                item.plan
                    .duration
                    .map_or("until its loops are done".to_string(), |d| format!(
                        "for {}",
                        format_run_time(d)
                    ))
            );
        }
        let mut progress = LiveLine::new(name, quiet);
        let plan = item.plan.clone();
        let config = item.config.clone();
        let done = ipc_test::run(IpcTest {
            transport: item.transport.as_ref(),
            plan: item.plan,
            config: item.config,
            breaktrace: None,
            progress: &mut progress,
        })
        .unwrap_or_else(|e| ipc_test::failed_to_start(item.transport.as_ref(), &plan, config, e));
        let interrupted = done.result.end_reason == EndReason::Interrupted;
        finished.push(done);
        after_each(&finished);
        if interrupted {
            break;
        }
    }
    finished
}

/// What a sequence of tests shares: every primitive in every mode runs with
/// these settings.
pub struct SequenceSpec<'a> {
    pub primitives: &'a [&'a str],
    pub modes: &'a [Mode],
    pub layout: &'a PairLayout,
    /// Interval, distance (us) and loops.
    pub timing: (u64, u64, Option<u64>),
    pub tasks: Tasks,
    pub cross_cpu: bool,
    pub per_test: Option<Duration>,
    pub max_latency_us: Option<u64>,
    /// `--trace-spikes` (ns): every test traces its samples above it.
    pub spike_threshold_ns: Option<u64>,
    pub prep: &'a Preparation,
}

/// The tests of a sequence, each primitive in each mode, with the plan and
/// the report's record of its settings.
pub fn sequence(spec: &SequenceSpec<'_>) -> Result<Vec<SequenceItem>, CommandError> {
    let (interval_us, distance_us, loops) = spec.timing;
    let pairs = spec
        .layout
        .pairs(interval_us, distance_us, loops, spec.cross_cpu)?;
    let mut items = Vec::new();
    for &name in spec.primitives {
        for &mode in spec.modes {
            let transport = transport_named(name).ok_or_else(|| {
                CommandError::Runtime(format!("primitive {name} is not built in"))
            })?;
            super::check_fork(transport.as_ref(), spec.tasks)?;
            let plan = RunPlan {
                pairs: pairs.clone(),
                mode,
                tasks: spec.tasks,
                duration: spec.per_test,
                limit_ns: spec.max_latency_us.map(|us| us.saturating_mul(1000)),
                lock_memory: spec.prep.memory.is_locked(),
                spike_threshold_ns: spec.spike_threshold_ns,
                ..RunPlan::default()
            };
            let config = TestConfig {
                policy: spec.layout.policy.to_string(),
                priority: spec.layout.priority,
                loops,
                duration_s: secs(plan.duration),
                max_latency_us: spec.max_latency_us,
                mlockall: spec.prep.memory.is_locked(),
                cpu_dma_latency: spec.prep.dma_latency.describe(),
                detail: ConfigDetail::Ipc(IpcConfig {
                    pairs: plan.pairs.len(),
                    tasks: spec.tasks.as_str().to_string(),
                    cross_cpu: spec.cross_cpu,
                    same_priority: spec.layout.same_priority,
                    interval_us,
                    distance_us,
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

pub fn run(args: &IpcArgs) -> Result<i32, CommandError> {
    let mut notices = Vec::new();
    let realtime = sched::can_use_realtime();
    let layout = PairLayout::from_args(
        &args.layout,
        if realtime { DEFAULT_RT_PRIORITY } else { 0 },
        true,
        &mut notices,
    )?;
    let (interval_us, distance_us, loops) = Timing::from_args(&args.layout, DEFAULT_INTERVAL_US)?;
    let per_primitive = match (&args.duration, loops) {
        (Some(t), _) => Some(seconds("-D/--duration", t)?),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_TIME_PER_PRIMITIVE),
    };
    let primitives: Vec<&str> = if args.only.is_empty() {
        PRIMITIVES.to_vec()
    } else {
        let mut chosen = Vec::new();
        for name in &args.only {
            let name = name.trim();
            let known = PRIMITIVES.iter().find(|p| **p == name).ok_or_else(|| {
                UsageError(format!(
                    "--only: unknown primitive '{}' (known: {})",
                    crate::units::shown(name),
                    PRIMITIVES.join(", ")
                ))
            })?;
            if !chosen.contains(known) {
                chosen.push(*known);
            }
        }
        chosen
    };
    let modes: &[Mode] = match args.mode {
        IpcModeArg::Oneway => &[Mode::OneWay],
        IpcModeArg::Roundtrip => &[Mode::RoundTrip],
        IpcModeArg::Both => &[Mode::OneWay, Mode::RoundTrip],
    };
    // Checked now, before anything is measured.
    let pairs = layout.pairs(interval_us, distance_us, loops, args.cross_cpu)?;
    let verdict = VerdictSettings::from_args(&args.verdict)?;
    let spike_threshold_us = crate::settings::spike_threshold(&args.spikes)?;
    for notice in &notices {
        eprintln!("latscope: warning: {notice}");
    }
    if !realtime && args.layout.priority.is_none() {
        eprintln!(
            "latscope: note: real-time priority is not available to this user; measuring at normal priority ({})",
            sched::RT_PRIVILEGE_FIX
        );
    }
    super::check_spike_tracing(spike_threshold_us)?;
    let sysinfo = SysInfo::collect();
    let mut prep = Preparation::apply(
        !args.no_mlockall,
        true,
        !args.no_dma_latency,
        &verdict.loads,
        &ipc_test::cpus_of(&pairs),
    )
    .map_err(CommandError::Runtime)?;
    let items = sequence(&SequenceSpec {
        primitives: &primitives,
        modes,
        layout: &layout,
        timing: (interval_us, distance_us, loops),
        tasks: if args.fork {
            Tasks::Processes
        } else {
            Tasks::Threads
        },
        cross_cpu: args.cross_cpu,
        per_test: per_primitive.map(|d| d / modes.len() as u32),
        max_latency_us: verdict.max_latency_us,
        spike_threshold_ns: spike_threshold_us.map(|us| us.saturating_mul(1000)),
        prep: &prep,
    })?;
    let mut write_so_far = |done: &[FinishedTest]| {
        let mut report = ipc_test::assemble_report(
            done.to_vec(),
            sysinfo.clone(),
            prep.warnings.clone(),
            &prep.memory,
        );
        prep.background.record_into(&mut report);
        write_files(&verdict.outputs, &LatscopeJson, &report);
    };
    let finished = run_sequence(items, None, verdict.quiet, &mut write_so_far);
    let mut report =
        ipc_test::assemble_report(finished, sysinfo, prep.warnings.clone(), &prep.memory);
    prep.finish(&mut report);
    drop(prep);
    super::judge(&mut report, &verdict.fail_if);
    deliver(
        &report,
        &IpcComparison,
        false,
        &LatscopeJson,
        &verdict.outputs,
    )
    .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}

/// One row per test (a primitive in one mode, all its pairs merged), sorted
/// by p99: the primitives side by side.
pub struct IpcComparison;

impl Exporter for IpcComparison {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let mut table = Table::new(&[
            "Primitive",
            "Mode",
            "Tasks",
            "Pairs",
            "Samples",
            "Min",
            "Avg",
            "P50",
            "P99",
            "P99.9",
            "Max",
        ]);
        let mut tests: Vec<_> = report.tests.iter().collect();
        // Tests without samples (failed to start) go last.
        tests.sort_by_key(|t| {
            let o = &t.overall;
            (o.samples == 0, o.percentile(99.0).unwrap_or(i64::MAX))
        });
        for t in tests {
            let o = &t.overall;
            let v = |ns: i64| latency_cell(o, ns);
            let p = |q: f64| percentile_cell(o, q);
            table.row(vec![
                t.test.clone(),
                t.mode.clone(),
                t.config.ipc().map_or("-", |c| c.tasks.as_str()).to_string(),
                t.series.len().to_string(),
                o.samples.to_string(),
                v(o.min_ns),
                v(o.avg_ns.round() as i64),
                p(50.0),
                p(99.0),
                p(99.9),
                v(o.max_ns),
            ]);
        }
        write!(out, "{}", table.render())?;
        write_footer(report, out)
    }
}
