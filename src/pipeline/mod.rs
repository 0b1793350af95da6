//! The one run sequence every measuring command goes through:
//!
//! 1. **check** what the command needs of the machine (kernel tracing, ...),
//!    before anything is set up;
//! 2. collect the **machine facts** (`SysInfo`, with the doctor's checks);
//! 3. **prepare** the process (mlockall, `/dev/cpu_dma_latency`, the `--load`
//!    generators, the kernel-log follower);
//! 4. **measure**: the command's own part, which returns finished tests (and
//!    may write the results so far after each one: `Run::checkpoint`);
//! 5. **assemble** one `Report` with the validity warnings;
//! 6. stop what runs beside the test and record it, **judge** (thresholds,
//!    exit code), **deliver** (console, output files, the command's extra
//!    files).
//!
//! A command supplies a `Measurement`: its settings, its measure function
//! (usually one from `crate::measure`) and how its report is shown.

mod action_shell;
mod actions;
mod assemble;
mod background;
mod deliver;
pub mod hdrlog;
mod judge;
mod live;
mod plan;
mod prepare;
mod validity;

pub use actions::ActionRunner;
pub use deliver::{JsonFailure, RunTimes, write_rt_tests_json, write_rt_tests_json_returning};

pub use assemble::{FinishedTest, assemble_report, build_report};
pub use deliver::{deliver, print, write_files, write_output, write_with};
pub use judge::{
    EXIT_LIMIT, EXIT_OK, EXIT_RUNTIME, EXIT_SKIPPED, EXIT_USAGE, exit_code_for, judge,
};
pub use live::{LiveHook, per_cpu_skeleton, running_skeleton, series_without_samples};
pub use prepare::{MemoryLock, Preparation, PrepareSpec};
pub use validity::{CpuShare, CpuUse, CpuWindow, RunFacts, ThrottleEvidence};

use crate::report::SysInfo;
use crate::report::json::LatscopeJson;
use crate::report::{Exporter, Report};
use crate::settings::{Outputs, UsageError};
use crate::threshold::Threshold;

/// How a command failed: usage errors exit 2 before measuring, run-time errors exit 1.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    Usage(#[from] UsageError),
    #[error("{0}")]
    Runtime(String),
}

/// How a command shows its report.
pub struct Presentation {
    /// What people see on standard output at the end.
    pub console: Box<dyn Exporter>,
    /// The console is an original tool's exact output: latscope's warnings
    /// and verdict go to standard error so that it stays byte-exact.
    pub classic: bool,
    /// The layout of `--json` (latscope's, or the original tool's).
    pub json: Box<dyn Exporter>,
}

impl Presentation {
    /// latscope's own console exporter and JSON layout.
    pub fn modern(console: Box<dyn Exporter>) -> Presentation {
        Presentation {
            console,
            classic: false,
            json: Box::new(LatscopeJson),
        }
    }
}

/// What a measuring command declares up front.
pub struct Plan {
    pub prepare: PrepareSpec,
    /// `--fail-if` thresholds, held against every series at the end.
    pub fail_if: Vec<Threshold>,
    pub outputs: Outputs,
    pub presentation: Presentation,
    /// `--on-threshold`, `--on-end` (pipeline::actions).
    pub actions: crate::settings::actions::Actions,
    /// A drop-in's break crossings, which its measuring threads count and
    /// the actions' runner polls when the break value is the trigger.
    pub breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

/// A measuring command, as the pipeline runs it.
pub trait Measurement {
    /// What to prepare, judge and deliver.
    fn plan(&self) -> Plan;

    /// `--deepest-idle-state`: the deepest cpuidle state the measured CPUs
    /// may enter while the command runs (the pipeline disables the deeper
    /// ones and enables them again at the end; `rt::cpuidle`).
    fn deepest_idle_state(&self) -> Option<u32> {
        None
    }

    /// Checks that must pass before anything is set up or measured.
    fn check(&self) -> Result<(), CommandError> {
        Ok(())
    }

    /// Measures on the prepared process: the finished tests, in order.
    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError>;

    /// Files only this command writes (`timer -g`, `logdisk --csv`), after
    /// the report was delivered.
    fn write_extras(&self, _report: &Report) -> Result<(), String> {
        Ok(())
    }
}

/// What the measure step sees of the run: the prepared process, the machine
/// facts, and the warnings so far (the preparation's first).
pub struct Run<'a> {
    pub prep: &'a Preparation,
    pub sysinfo: &'a SysInfo,
    warnings: Vec<String>,
    outputs: &'a Outputs,
    presentation: &'a Presentation,
    fail_if: &'a [Threshold],
    /// The outputs written as the tests run (pipeline::live).
    live: std::cell::RefCell<live::LiveState>,
    /// `--on-threshold`, `--on-end`: the crossings watched, the runner.
    actions: std::cell::RefCell<Option<actions::ActionRunner>>,
}

impl<'a> Run<'a> {
    /// A warning that ends up in the report.
    pub fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Writes every output file with the tests finished so far (not standard
    /// output): a crash or interrupt of a later test keeps the earlier
    /// results. Failures are warnings here; the final delivery reports them.
    pub fn checkpoint(&self, done: &[FinishedTest]) {
        self.live_state().done = done.to_vec();
        let report = self.report_so_far(done.to_vec());
        write_files(self.outputs, self.presentation.json.as_ref(), &report);
    }

    /// A snapshot asked for with SIGUSR1 while `current` goes on (its
    /// results so far, `EndReason::Running`), after the tests `done`: the
    /// console summary, headed by one line saying it is a snapshot, and
    /// every output file rewritten as `checkpoint` does. Nothing is judged
    /// and the run goes on. Called on a monitor thread, never a measuring one.
    pub fn snapshot(&self, done: &[FinishedTest], current: FinishedTest) {
        let elapsed = current.elapsed;
        let mut tests = done.to_vec();
        tests.push(current);
        let report = self.report_so_far(tests);
        deliver::show_snapshot(&report, self.presentation, self.outputs, elapsed);
        write_files(self.outputs, self.presentation.json.as_ref(), &report);
    }

    /// A test starts: `skeleton` is its report without samples (its series'
    /// labels and CPUs, its settings), which the windows drained while it
    /// runs fill (`window_hook`). Ends with `end_test`.
    pub fn begin_test(&self, skeleton: FinishedTest) {
        // Only a run that rewrites files as it goes moves its monitor.
        let keep_off = self.outputs.prom.is_some() || self.outputs.hdr_log.is_some();
        self.live_state().begin(skeleton, keep_off);
        if let Some(runner) = self.actions.borrow_mut().as_mut() {
            runner.begin_test();
        }
    }

    /// Series `series` of the running test counts `above_limit` samples
    /// above `--max-latency` so far: `--on-threshold` acts on a new one.
    fn watch_crossings(&self, series: usize, above_limit: u64) {
        if let Some(runner) = self.actions.borrow_mut().as_mut() {
            runner.saw(series, above_limit, || {
                self.live_state().crossing_in(series)
            });
        }
    }

    /// The test begun last ended.
    pub fn end_test(&self) {
        let mut live = self.live_state();
        // A snapshot still waiting for a window is moot: the final
        // report follows (as the IPC monitor drops a pending one).
        live.snapshot_pending = false;
        live.end();
    }

    /// A test of a sequence the command does not checkpoint (the block
    /// sizes of one log-disk run) finished: the live outputs keep it while
    /// the next one runs.
    pub fn note_finished(&self, test: &FinishedTest) {
        self.live_state().done.push(test.clone());
    }

    /// Runs `measure` as the test `skeleton` (None: without a live view),
    /// handing it the window hook for its monitor; the test ends after.
    pub fn measuring<R>(
        &self,
        skeleton: Option<FinishedTest>,
        measure: impl FnOnce(&mut dyn crate::stats::window::WindowHook) -> R,
    ) -> R {
        if let Some(skeleton) = skeleton {
            self.begin_test(skeleton);
        }
        let result = measure(&mut self.window_hook());
        self.end_test();
        result
    }

    /// The live outputs' state. Borrowed for one step at a time on the
    /// monitor's thread, never across a call that could come back here: a
    /// second borrow is a logic error of the pipeline, and it panics (with
    /// RefCell's "already borrowed") rather than let `--prom`, `--hdr-log`
    /// or a snapshot lose a window, a test's start or its end in silence.
    fn live_state(&self) -> std::cell::RefMut<'_, live::LiveState> {
        self.live.borrow_mut()
    }

    /// What the monitors call with every window drained.
    pub fn window_hook(&self) -> LiveHook<'_, 'a> {
        LiveHook { run: self }
    }

    /// After a drain: `--prom` rewritten when a window came (atomically, a
    /// regular file only, as `checkpoint` does), from the finished tests
    /// and the running one's windows.
    fn rewrite_live(&self) {
        let Some(prom) = &self.outputs.prom else {
            return;
        };
        let tests = {
            let mut live = self.live_state();
            if !live.take_fresh() {
                return;
            }
            let mut tests = live.done.clone();
            tests.extend(live.so_far());
            tests
        };
        if matches!(prom, crate::settings::OutputTarget::File(p) if matches!(
            crate::rt::outfile::classify(p),
            Ok(crate::rt::outfile::Destination::Replace(_))
        )) {
            let report = self.report_so_far(tests);
            if let Err(e) = write_output(prom, &crate::report::prom::PromText, &report) {
                crate::rt::stdio::note_line(&format!("latscope: warning: --prom: {e}"));
            }
        }
    }

    /// A snapshot (SIGUSR1) of the running test from its windows so far
    /// (the timer, noise and log-disk tests; see `stats::window::WindowHook`).
    /// Asked before the first window closed, it waits for that window.
    fn snapshot_from_windows(&self) {
        let (done, current) = {
            let mut live = self.live_state();
            live.snapshot_pending = !live.has_samples();
            if live.snapshot_pending {
                return;
            }
            (live.done.clone(), live.so_far())
        };
        if let Some(current) = current {
            self.snapshot(&done, current);
        }
    }

    /// The report of `tests` with the warnings and background so far.
    fn report_so_far(&self, mut tests: Vec<FinishedTest>) -> Report {
        place_on_run_clock(&mut tests, self.prep.background.origin());
        let mut report = assemble_report(
            tests,
            self.sysinfo.clone(),
            self.warnings.clone(),
            &self.prep.memory,
        );
        self.prep.background.record_into(&mut report);
        self.prep.record_into(&mut report);
        // Judged as the final report will be, so that the files (--junit's
        // verdicts above all) say the truth about the tests so far.
        judge(&mut report, self.fail_if);
        report
    }
}

/// Sets each test's `started_s`: seconds from the run's `origin` (the
/// clock of the kernel-log messages) to the test's start, so that a report
/// of several tests can place every message on the right test's time axis.
fn place_on_run_clock(tests: &mut [FinishedTest], origin: std::time::SystemTime) {
    for test in tests {
        // A clock stepped backwards between the two reads leaves it unknown.
        test.result.started_s = test
            .started
            .duration_since(origin)
            .ok()
            .map(|d| d.as_secs_f64());
    }
}

/// With `--trace-spikes`: whether this machine can trace, checked before
/// anything is set up or measured (root, tracefs, the events; BPF itself
/// with `--collector bpf`, whose line is its own).
pub fn check_spike_tracing(
    threshold_us: Option<u64>,
    collector: crate::rt::bpf::CollectorChoice,
) -> Result<(), CommandError> {
    if threshold_us.is_some() {
        crate::spikes::check_before_run(collector).map_err(|e| {
            CommandError::Runtime(e.with_need("--trace-spikes needs kernel tracing"))
        })?;
    }
    Ok(())
}

/// Runs `measurement` through the whole sequence and returns the exit code.
pub fn run(measurement: &mut dyn Measurement) -> Result<i32, CommandError> {
    let plan = measurement.plan();
    measurement.check()?;
    let sysinfo = SysInfo::collect();
    let mut prep = Preparation::apply(&plan.prepare).map_err(CommandError::Runtime)?;
    if let Some(deepest) = measurement.deepest_idle_state() {
        prep.limit_idle_states(deepest)
            .map_err(CommandError::Runtime)?;
    }
    if let Some(s) = &plan.outputs.samples {
        let file = crate::samples::SampleFile::start(&s.path, s.limit_bytes, &plan.prepare.cpus);
        prep.samples = Some(file.map_err(CommandError::Runtime)?);
    }
    let mut run = Run {
        prep: &prep,
        sysinfo: &sysinfo,
        warnings: prep.warnings.clone(),
        outputs: &plan.outputs,
        presentation: &plan.presentation,
        fail_if: &plan.fail_if,
        live: Default::default(),
        actions: Default::default(),
    };
    *run.actions.get_mut() =
        actions::ActionRunner::start(&plan.actions, &plan.prepare.cpus, plan.breaks.clone())
            .map_err(CommandError::Runtime)?;
    if let Some(crate::settings::OutputTarget::File(path)) = &plan.outputs.hdr_log {
        let log = hdrlog::HdrLog::create(path, std::time::SystemTime::now()).map_err(|e| {
            CommandError::Runtime(format!(
                "--hdr-log: could not write {}: {e}",
                path.display()
            ))
        })?;
        run.live.get_mut().hdr_log = Some(log);
    }
    let measured = measurement.measure(&mut run);
    let mut live = run.live.into_inner();
    let action_runner = run.actions.into_inner();
    if measured.is_err()
        && let Some(log) = live.hdr_log.take()
    {
        log.abandon();
    }
    let hdr_log = match live.hdr_log.map(|log| {
        let path = log.path().display().to_string();
        log.finish()
            .map_err(|e| format!("--hdr-log: could not write {path}: {e}"))
    }) {
        Some(Err(e)) => Some(e),
        _ => live.hdr_log_error.map(|e| format!("--hdr-log: {e}")),
    };
    let mut tests = measured?;
    place_on_run_clock(&mut tests, prep.background.origin());
    let mut warnings = run.warnings;
    warnings.extend(prep.shared_cpu_warnings());
    let mut report = assemble_report(tests, sysinfo, warnings, &prep.memory);
    // The end actions see the results, before they are judged and written.
    report.actions = action_runner.map(|runner| runner.finish(&report));
    let samples = prep.finish(&mut report);
    drop(prep);
    judge(&mut report, &plan.fail_if);
    let delivered = deliver(&report, &plan.presentation, &plan.outputs);
    let extras = measurement.write_extras(&report);
    let hdr_log = hdr_log.map_or(Ok(()), Err);
    delivered
        .and(extras)
        .and(hdr_log)
        .and(samples)
        .map_err(CommandError::Runtime)?;
    Ok(report.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;
    use crate::stats::window::{SecondStats, WindowHook};
    use crate::stats::window_histogram::PackedHistogram;

    /// The `_count` of the one series in a `--prom` file.
    fn prom_count(path: &std::path::Path) -> u64 {
        let text = std::fs::read_to_string(path).expect("the --prom file");
        let line = text
            .lines()
            .find(|l| l.starts_with("latscope_latency_seconds_count{"))
            .unwrap_or_else(|| panic!("no _count in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    /// A run for the tests of this module: nothing prepared, no thresholds.
    fn test_run<'a>(
        prep: &'a Preparation,
        sysinfo: &'a SysInfo,
        outputs: &'a Outputs,
        presentation: &'a Presentation,
    ) -> Run<'a> {
        Run {
            prep,
            sysinfo,
            warnings: Vec::new(),
            outputs,
            presentation,
            fail_if: &[],
            live: Default::default(),
            actions: Default::default(),
        }
    }

    /// Every window a monitor hands the hook reaches `--prom` (rewritten
    /// after each drain, its count the windows' samples so far) and
    /// `--hdr-log` (one interval per window): none is skipped on the way.
    #[test]
    fn every_window_reaches_prom_and_the_hdr_log() {
        let dir = tempfile::tempdir().unwrap();
        let (prom, hdr) = (dir.path().join("run.prom"), dir.path().join("run.hlog"));
        let outputs = Outputs {
            prom: Some(crate::settings::OutputTarget::File(prom.clone())),
            hdr_log: Some(crate::settings::OutputTarget::File(hdr.clone())),
            ..Outputs::default()
        };
        let presentation = Presentation::modern(Box::new(LatscopeJson));
        let prep = Preparation::apply(&PrepareSpec::default()).unwrap();
        let report = sample_report();
        let mut run = test_run(&prep, &report.sysinfo, &outputs, &presentation);
        run.live.get_mut().hdr_log =
            Some(hdrlog::HdrLog::create(&hdr, std::time::SystemTime::now()).unwrap());
        let test = FinishedTest::not_started(report.tests[0].clone(), false);
        let series = test.result.series.clone();
        run.begin_test(running_skeleton(test, series));
        const WINDOWS: u64 = 5;
        const PER_WINDOW: u64 = 10;
        for second in 0..WINDOWS {
            let mut h = crate::stats::window_histogram::window_histogram();
            for k in 0..PER_WINDOW {
                h.record(1_000 + k * 100).unwrap();
            }
            let window = SecondStats::new(second, 1, PER_WINDOW, 1_000, 1_450.0, 1_900);
            let mut hook = run.window_hook();
            hook.window(0, &window, Some(&PackedHistogram::of(&h)));
            hook.drained();
            assert_eq!(prom_count(&prom), (second + 1) * PER_WINDOW);
        }
        run.end_test();
        let log = run.live.into_inner().hdr_log.take().unwrap();
        log.finish().unwrap();
        let text = std::fs::read_to_string(&hdr).unwrap();
        let intervals = text.lines().filter(|l| l.starts_with("Tag=")).count();
        assert_eq!(intervals as u64, WINDOWS, "{text}");
    }

    /// `--policy deadline`: a finished test's reservations are in every
    /// report made of it, the checkpoints' and snapshots' (beside a test
    /// still running) as the final one. They travel with the test: nothing
    /// the run holds meanwhile can drop them, as a borrowed cell of the run
    /// once did (`record_deadline`'s `try_borrow_mut`).
    #[test]
    fn a_deadline_series_travels_with_its_test_into_every_report() {
        let outputs = Outputs::default();
        let presentation = Presentation::modern(Box::new(LatscopeJson));
        let prep = Preparation::apply(&PrepareSpec::default()).unwrap();
        let report = sample_report();
        let run = test_run(&prep, &report.sysinfo, &outputs, &presentation);
        let reservation = crate::rt::sched::Reservation {
            runtime_ns: 100_000,
            deadline_ns: 500_000,
            period_ns: 1_000_000,
        };
        let mut done = FinishedTest::not_started(report.tests[0].clone(), true);
        let series = crate::report::DeadlineSeries::of(&done.result, "CPU 0", reservation, (3, 1));
        done.deadline = vec![series.clone()];
        let running = running_skeleton(
            FinishedTest::not_started(report.tests[0].clone(), true),
            Vec::new(),
        );
        let snapshot = run.report_so_far(vec![done.clone(), running]);
        assert_eq!(snapshot.deadline, std::slice::from_ref(&series));
        let last = assemble_report(vec![done], report.sysinfo.clone(), Vec::new(), &prep.memory);
        assert_eq!(last.deadline, [series]);
    }
}
