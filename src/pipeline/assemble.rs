//! Finished tests into one `Report`: the facts of the run, the tests'
//! results, and the validity warnings that say what the figures cannot mean.

use super::prepare::MemoryLock;
use super::validity::{self, RunFacts};
use crate::report::{DeadlineSeries, SysInfo};
use crate::report::{Report, SCHEMA_NAME, SCHEMA_VERSION, TestResult, Tool};
use std::time::{Duration, SystemTime};

/// A finished IPC test: report data plus the facts the validity checks need.
#[derive(Clone)]
pub struct FinishedTest {
    pub result: TestResult,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    pub facts: RunFacts,
    /// `--policy deadline`: how each series' reservation held (the report's
    /// `deadline`). It travels with its test, so that a report made of
    /// finished tests (final, checkpoint or snapshot) has every one of them.
    pub deadline: Vec<DeadlineSeries>,
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
            deadline: Vec::new(),
        }
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
        let mut facts = RunFacts::combine(&facts);
        // Asked only when it matters: the advice for a run without it.
        if !facts.realtime_policy {
            // One probe: allowed, or refused and why (the doctor's words).
            let machine = crate::doctor::Machine::live();
            facts.realtime_refusal = crate::doctor::realtime::fifo_refusal(&machine);
            facts.realtime_allowed = facts.realtime_refusal.is_none();
        }
        facts.machine_warnings_quieted = validity::machine_warnings_quieted();
        for w in validity::warnings(&sysinfo, &facts, memory) {
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
        start_time: crate::units::rfc3339(started),
        end_time: crate::units::rfc3339(ended),
        duration_s: tests.iter().map(|t| t.elapsed.as_secs_f64()).sum(),
        sysinfo,
        deadline: tests.iter().flat_map(|t| t.deadline.clone()).collect(),
        tests: tests.into_iter().map(|t| t.result).collect(),
        warnings,
        thresholds: Vec::new(),
        loads: Vec::new(),
        kernel_log: Default::default(),
        exit_code: 0,
        samples_file: None,
        idle_states: None,
        actions: None,
    };
    report.exit_code = super::judge::exit_code_for(&report);
    report
}
