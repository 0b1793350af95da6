//! cyclictest's run (`latscope cyclictest`, the `cyclictest` name and the
//! lean drop-in binary): settings -> the threads' plans -> `timer::cyclic`'s
//! threads under its main loop (`timer::cyclic::control`) -> cyclictest's
//! figures and its final block (`run`); with `--latscope-json` those
//! figures as a `FinishedTest` for the pipeline (`finished_test`).
//!
//! Everything cyclictest prints before and during the run is printed here,
//! in its words: the early lines, `-v`'s CPU lines, the `/dev/cpu_dma_latency`
//! line, the `WARN:` lines, the running display; the final block is returned.

use crate::live::cyclictest::{CyclicDisplay, DisplayForm, ThreadLabel};
use crate::live::cyclictest_status::CyclicStatus;
use crate::pipeline::{CommandError, CpuUse, CpuWindow, FinishedTest, Run, RunFacts};
use crate::pipeline::{JsonFailure, RunTimes, write_rt_tests_json};
use crate::report::classic_cyclictest as classic;
use crate::report::{
    ConfigDetail, CyclicOutput, CyclicSpike, CyclicThread, EndReason, Series, SeriesDetail,
    TestConfig, TestResult, TimerConfig, TimerThread,
};
use crate::rt::cpuidle::IdleLimit;
use crate::rt::dma_latency::{self, RequestFailed};
use crate::rt::fifo::OwnFifo;
use crate::rt::os_error_text;
use crate::rt::signals::Collected;
use crate::rt::stdio::print;
use crate::settings::cyclictest::{CyclicPolicy, CyclicSettings};
use crate::stats::LatencyRecorder;
use crate::stats::crossings::{BreakCrossings, CrossingSeries};
use crate::stats::window::WindowSeries;
use crate::timer::cyclic::control::{self, Control, CyclicScreen};
use crate::timer::cyclic::{
    self, CyclicAlign, CyclicOptions, CyclicShared, CyclicThreadPlan, CyclicWake, ThreadReport,
};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// What a run leaves besides its output so far.
pub struct CyclicRan {
    /// cyclictest's block after the run (-q's `T:` lines, spikes, the
    /// histogram, the break lines), not yet printed.
    pub final_block: String,
    pub threads: Vec<CyclicThread>,
    /// latscope's figures per thread (with `--latscope-json`).
    pub figures: Vec<Option<ThreadReport>>,
    /// Per thread: its per-second windows and the windows lost.
    pub windows: Vec<(WindowSeries, u64)>,
    /// `/dev/cpu_dma_latency` as the Report says it.
    pub dma_latency: String,
    pub end_reason: EndReason,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    /// `--json` could not be written: what cyclictest says then.
    pub json_failure: Option<JsonFailure>,
}

/// The CPUs the threads measure on: their own when pinned, else every CPU
/// the process may use.
pub fn measured_cpus(s: &CyclicSettings, online: &[usize]) -> Vec<usize> {
    match &s.affinity {
        Some(cpus) => {
            let mut used: Vec<usize> = (0..s.threads).filter_map(|i| s.cpu_of(i)).collect();
            used.sort_unstable();
            used.dedup();
            if used.is_empty() { cpus.clone() } else { used }
        }
        None => online.to_vec(),
    }
}

/// The run, as cyclictest does it: everything it prints before and during
/// the run is printed; the final block is returned. `lock_memory`: `-m`'s
/// mlockall is done here (not when the pipeline has done it already).
pub fn run(
    s: &CyclicSettings,
    online: &[usize],
    lock_memory: bool,
    breaks: Option<Arc<BreakCrossings>>,
) -> Result<CyclicRan, CommandError> {
    // Held for the whole run; dropped (closed) at the end, as cyclictest
    // does. The idle states disabled are enabled again when `_idle` drops,
    // on every way out of this function.
    let (dma, _idle) = before_threads(s, lock_memory)?;
    let dma_latency = match &dma {
        Some(_) => format!("held at {} us", s.latency_target),
        None if s.laptop || s.default_system || s.deepest_idle_state.is_some() => {
            "not requested".to_string()
        }
        None => "not set (see the WARN line on stderr)".to_string(),
    };
    let plans = plans_of(s);
    let opts = CyclicOptions {
        breaks,
        ..options_of(s)
    };
    let display = display_of(s);
    if opts.tracemark && opts.break_limit.is_some() {
        // rt-tests names the debugfs tracing directory it uses.
        crate::rt::tracefs::mount::print_debugfs_mountpoint_info();
    }
    // `/cyclictest<pid>` for SIGUSR2, created before the threads start as
    // cyclictest's rstat_setup does; removed when the screen is dropped, on
    // every way out of this function.
    let status = CyclicStatus::open();
    // Created before the threads start, as cyclictest's fifo thread does
    // first thing; removed when the run ends (only the pipe made here).
    let fifo = match &s.fifo {
        Some(path) => Some(OwnFifo::create(path).map_err(|e| {
            CommandError::Runtime(format!("Error creating fifo {path}: {}", os_error_text(&e)))
        })?),
        None => None,
    };
    let start_time = crate::units::rfc2822_local(SystemTime::now());
    let started = SystemTime::now();
    let clock_start = Instant::now();
    let threads_run = cyclic::start(&plans, &opts).map_err(CommandError::Runtime)?;
    let shared = Arc::clone(&threads_run.shared);
    let fifo_thread = fifo.map(|f| serve_fifo(f, &shared, &display));
    if let Some(cpus) = &s.main_affinity {
        pin_main_thread(cpus);
    }
    let until = Control {
        loops: s.loops,
        refresh_on_max: s.refresh_on_max,
    };
    let mut screen = Screen { display, status };
    let controlled = control::control(threads_run, until, &mut screen);
    let elapsed = clock_start.elapsed();
    let ended = SystemTime::now();
    if let Some(t) = fifo_thread {
        let _ = t.join();
    }
    let end_time = crate::units::rfc2822_local(SystemTime::now());
    let figured = figures_of(s, online, controlled.results);
    drop(dma);
    let (mut threads, figures) = figured?;
    spikes_and_break_into(&shared, &mut threads);
    let json_failure = match &s.json {
        Some(path) => write_json(s, path, &start_time, &end_time, &threads).err(),
        None => None,
    };
    let end_reason = if shared.break_tid.load(Ordering::Acquire) != 0 {
        EndReason::BreakTrace
    } else if controlled.signalled {
        EndReason::Interrupted
    } else if controlled.loops_done || s.duration.is_none() {
        EndReason::LoopsDone
    } else {
        EndReason::DurationElapsed
    };
    Ok(CyclicRan {
        final_block: final_block(s, &threads),
        threads,
        figures,
        windows: controlled.windows,
        dma_latency,
        end_reason,
        started,
        ended,
        json_failure,
        elapsed,
    })
}

/// What cyclictest does before it starts its threads: its early lines,
/// `-v`'s CPU counts, the main thread on the affinity CPUs, `-m`, the
/// `/dev/cpu_dma_latency` request or `--deepest-idle-state`'s limit (both
/// returned, held while the run lasts), the high-resolution timer check
/// and `-R`.
fn before_threads(
    s: &CyclicSettings,
    lock_memory: bool,
) -> Result<(Option<std::fs::File>, Option<IdleLimit>), CommandError> {
    for line in &s.early_lines {
        print(&format!("{line}\n"));
    }
    if s.verbose {
        let (conf, onln) = crate::rt::sysinfo::configured_and_online_cpus();
        print(&format!("Max CPUs = {conf}\nOnline CPUs = {onln}\n"));
    }
    if let Some(cpus) = s.listed_affinity() {
        pin_main_thread(cpus);
        if s.verbose {
            print(&format!("Using {} cpus.\n", cpus.len()));
        }
    }
    if s.mlockall && lock_memory {
        use crate::rt::sched::MlockSkipped;
        // MCL_ONFAULT: see rt::sched::lock_memory_if_affordable (measured
        // in docs/benchmarks.md part 7: RSS a third, first samples alike).
        match crate::rt::sched::lock_memory_if_affordable(true) {
            Ok(()) => {}
            Err(MlockSkipped::Unaffordable(why) | MlockSkipped::Failed(why)) => {
                eprintln!("latscope: warning: memory not locked: {why}");
            }
        }
    }
    let dma = latency_target(s);
    let idle = limit_idle_states(s)?;
    if !crate::rt::clock::has_high_resolution_timers() {
        warn("High resolution timers not available");
    }
    if s.resolution {
        check_resolution(s);
    }
    if s.verbose {
        let mut text = String::new();
        for i in 0..s.threads {
            if s.listed_affinity().is_some()
                && let Some(cpu) = s.cpu_of(i)
            {
                text.push_str(&format!("Thread {i} using cpu {cpu}.\n"));
            }
            // cyclictest prints its interval after adding the distance: the
            // next thread's.
            text.push_str(&format!("Thread {i} Interval: {}\n", s.interval_of(i + 1)));
        }
        print(&text);
    }
    Ok((dma, idle))
}

/// `--deepest-idle-state N` as cyclictest 2.8 does it: on the CPUs of `-a`
/// (every CPU without it), the states deeper than N disabled (all for -1),
/// each recorded in the registry for `latscope cleanup`. What cyclictest
/// passes over in silence (no cpuidle driver, nothing deeper) is said in
/// latscope's warning lines on stderr.
fn limit_idle_states(s: &CyclicSettings) -> Result<Option<IdleLimit>, CommandError> {
    let Some(deepest) = s.deepest_idle_state else {
        return Ok(None);
    };
    let cpus = match &s.affinity {
        Some(cpus) => cpus.clone(),
        None => {
            let (configured, _) = crate::rt::sysinfo::configured_and_online_cpus();
            (0..configured.max(1) as usize).collect()
        }
    };
    let limit = IdleLimit::apply(&cpus, deepest).map_err(CommandError::Runtime)?;
    for note in &limit.record().notes {
        eprintln!("latscope: warning: --deepest-idle-state {deepest}: {note}");
    }
    Ok(Some(limit))
}

fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "WARN: {line}");
}

/// Pins the calling (main) thread to `cpus`, as cyclictest does with its
/// affinity mask and `--mainaffinity`.
fn pin_main_thread(cpus: &[usize]) {
    if let Err(e) = crate::rt::sched::try_pin_current_thread_to(cpus) {
        warn(&format!(
            "Couldn't setaffinity in main thread: {}",
            e.desc()
        ));
    }
}

/// `/dev/cpu_dma_latency` as cyclictest's `set_latency_target`: held (with
/// its line on stdout) unless --laptop or --default-system say otherwise.
fn latency_target(s: &CyclicSettings) -> Option<std::fs::File> {
    if s.laptop {
        warn("not setting cpu_dma_latency to save battery power");
        return None;
    }
    if s.default_system {
        warn("not setting cpu_dma_latency from cyclictest");
        return None;
    }
    if s.deepest_idle_state.is_some() {
        warn("not setting cpu_dma_latency, --deepest-idle-state is set instead");
        return None;
    }
    let path = dma_latency::PATH;
    match dma_latency::request(s.latency_target) {
        Ok(file) => {
            print(&format!(
                "# /dev/cpu_dma_latency set to {}us\n",
                s.latency_target
            ));
            Some(file)
        }
        Err(RequestFailed::Stat(e)) => {
            eprintln!("WARN: stat {path} failed: {}", os_error_text(&e));
            None
        }
        Err(RequestFailed::Open(e)) => {
            eprintln!("WARN: open {path}: {}", os_error_text(&e));
            None
        }
        Err(RequestFailed::Write(e)) => {
            eprintln!(
                "# error setting cpu_dma_latency to {}!: {}",
                s.latency_target,
                os_error_text(&e)
            );
            None
        }
    }
}

fn clock_id(s: &CyclicSettings) -> libc::clockid_t {
    if s.clock == 1 {
        libc::CLOCK_REALTIME
    } else {
        libc::CLOCK_MONOTONIC
    }
}

/// `-R`: the clock's reported resolution against the smallest step seen in
/// a burst of reads; the two `WARN:` lines when the step is coarser (or -v).
fn check_resolution(s: &CyclicSettings) {
    let clock = clock_id(s);
    let reported = crate::rt::clock::reported_resolution_ns(clock).unwrap_or_else(|| {
        warn("clock_getres failed");
        u64::MAX
    });
    let min_step = crate::rt::clock::smallest_measured_step_ns(clock).unwrap_or(u64::MAX);
    if s.verbose || (min_step != u64::MAX && min_step > reported) {
        warn(&format!("reported clock resolution: {reported} nsec"));
        warn(&format!(
            "measured clock resolution approximately: {min_step} nsec"
        ));
    }
}

/// Each thread's plan: its interval, priority, policy and CPU.
fn plans_of(s: &CyclicSettings) -> Vec<CyclicThreadPlan> {
    (0..s.threads)
        .map(|i| CyclicThreadPlan {
            interval_ns: s.interval_of(i) as u64 * 1000,
            priority: s.priority_of(i),
            policy: s.policy_of(i).raw(),
            cpu: s.cpu_of(i),
            loops: s.loops,
            hist_cells: s.histogram,
            nsecs: s.nsecs,
            report: s.needs_pipeline(),
            reservation: None,
        })
        .collect()
}

/// `-b` as the trigger of `--on-threshold`: the crossings of the threads,
/// each named as its series (None when it is not the trigger).
pub fn break_crossings(s: &CyclicSettings) -> Option<Arc<BreakCrossings>> {
    s.actions.on_break().then(|| {
        let series = (0..s.threads)
            .map(|i| CrossingSeries {
                label: format!("thread {i}"),
                cpu: s.cpu_of(i),
            })
            .collect();
        Arc::new(BreakCrossings::new(
            "cyclictest",
            series,
            s.actions.break_keeps_running(),
        ))
    })
}

/// What every thread shares.
fn options_of(s: &CyclicSettings) -> CyclicOptions {
    CyclicOptions {
        clock: clock_id(s),
        wake: if s.posix_timers {
            CyclicWake::PosixTimer
        } else if s.system {
            CyclicWake::Nanosleep
        } else {
            CyclicWake::ClockNanosleep
        },
        relative: s.relative,
        duration_ns: s.duration.map(|d| d.as_nanos() as u64),
        break_limit: (s.breaktrace > 0).then_some(s.breaktrace),
        breaks: None,
        tracemark: s.tracemark,
        spike_trigger: (s.spike > 0).then_some(s.spike),
        spike_nodes: s.spike_nodes,
        verbose: s.verbose,
        align: match (s.aligned, s.secaligned) {
            (Some(us), _) => CyclicAlign::Aligned {
                offset_ns: us * 1000,
            },
            (None, Some(us)) => CyclicAlign::SecAligned {
                offset_ns: us * 1000,
            },
            // cyclictest's -S -m spreads its threads' phases (see
            // timer::cyclic's first_expiry).
            (None, None) if s.mlockall && s.smp => CyclicAlign::Spread,
            (None, None) => CyclicAlign::None,
        },
        smi: s.smi,
    }
}

/// cyclictest's running display for these settings.
fn display_of(s: &CyclicSettings) -> CyclicDisplay {
    let labels = (0..s.threads)
        .map(|i| ThreadLabel {
            priority: s.priority_of(i),
            interval_us: s.interval_of(i),
        })
        .collect();
    let some_other = (0..s.threads).any(|i| s.policy_of(i) == CyclicPolicy::Other);
    CyclicDisplay::new(
        labels,
        DisplayForm {
            policy: s.policy.name(),
            some_other,
            quiet: s.quiet,
            verbose: s.verbose,
            nsecs: s.nsecs,
            smi: s.smi,
            oscope: s.oscope,
        },
    )
}

/// The main loop's screen: cyclictest's display on stdout, its status
/// requests answered by `CyclicStatus`.
struct Screen {
    display: CyclicDisplay,
    status: CyclicStatus,
}

impl CyclicScreen for Screen {
    fn draw(&mut self, shared: &CyclicShared) {
        print(&self.display.block(shared));
    }

    fn rewind(&mut self) {
        print(&self.display.cursor_up());
    }

    fn leave(&mut self) {
        print(&self.display.cursor_down());
    }

    fn status(&mut self, signal: Collected, shared: &CyclicShared) {
        self.status.serve(signal, &self.display, shared);
    }
}

/// `-F`: every reader of the pipe gets the `T:` lines of that moment.
fn serve_fifo(
    fifo: OwnFifo,
    shared: &Arc<CyclicShared>,
    display: &CyclicDisplay,
) -> std::thread::JoinHandle<()> {
    let (labels, form) = display.labels();
    let pipe_display = CyclicDisplay::new(labels, form);
    let (for_stop, for_text) = (Arc::clone(shared), Arc::clone(shared));
    fifo.serve(
        move || for_stop.stop.load(Ordering::Relaxed),
        move || pipe_display.t_lines(&for_text),
    )
}

/// cyclictest's figures of each thread and latscope's; the first failure
/// of a thread instead of the figures.
fn figures_of(
    s: &CyclicSettings,
    online: &[usize],
    results: Vec<Result<cyclic::CyclicFigures, String>>,
) -> Result<(Vec<CyclicThread>, Vec<Option<ThreadReport>>), CommandError> {
    let mut threads = Vec::with_capacity(results.len());
    let mut figures = Vec::with_capacity(results.len());
    let mut failure = None;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(mut f) => {
                figures.push(f.report.take());
                threads.push(CyclicThread {
                    tid: f.tid,
                    priority: s.priority_of(i),
                    interval_us: s.interval_of(i) as u64,
                    cycles: f.cycles,
                    min: f.min,
                    act: f.act,
                    sum: f.sum,
                    max: f.max,
                    cpu: s.json_cpu_of(i, online),
                    hist: f.hist,
                    overflows: f.overflows,
                    outliers: f.outliers,
                    smi_count: f.smi_count,
                    spikes_seen: f.spikes_seen,
                    ..CyclicThread::default()
                })
            }
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    match failure {
        Some(e) => Err(CommandError::Runtime(e)),
        None => Ok((threads, figures)),
    }
}

/// The spikes kept (`--spike`) and the break (`-b`) into the figures of
/// the threads they came from.
fn spikes_and_break_into(shared: &CyclicShared, threads: &mut [CyclicThread]) {
    let recorded = shared.spikes.load(Ordering::Relaxed);
    for (order, slot) in shared.spike_slots.iter().take(recorded).enumerate() {
        if let Some(t) = threads.get_mut(slot.thread.load(Ordering::Relaxed)) {
            t.spikes.push(CyclicSpike {
                order,
                diff: slot.diff.load(Ordering::Relaxed),
                ts_us: slot.ts_us.load(Ordering::Relaxed),
            });
        }
    }
    let tid = shared.break_tid.load(Ordering::Acquire);
    if let Some(t) = threads.iter_mut().find(|t| tid != 0 && t.tid == tid) {
        t.broke_at = Some(shared.break_value.load(Ordering::Relaxed));
    }
}

/// What shapes cyclictest's final block.
fn output_of(s: &CyclicSettings) -> CyclicOutput {
    CyclicOutput {
        quiet: s.quiet,
        histogram_cells: s.histogram,
        histofall: s.histofall,
        histogram_to_file: s.histfile.is_some(),
        smi: s.smi,
        nsecs: s.nsecs,
        lists_threads: s.breaktrace != 0,
        spikes: s.spike > 0,
    }
}

/// cyclictest's block after the run (report::classic_cyclictest's
/// final_block); with `--histfile` the histogram written to that file.
fn final_block(s: &CyclicSettings, threads: &[CyclicThread]) -> String {
    if let Some(path) = &s.histfile
        && s.histogram > 0
    {
        let block = classic::histogram(threads, s.histogram, s.histofall, s.smi);
        let written = crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
            w.write_all(block.as_bytes())
        });
        if let Err(e) = written {
            // cyclictest's perror, and the run still ends with 0.
            eprintln!("opening histogram file:: {}", os_error_text(&e));
        }
    }
    classic::final_block(&output_of(s), threads)
}

/// `--json FILE`: cyclictest's JSON, or its failure line and exit code.
fn write_json(
    s: &CyclicSettings,
    path: &str,
    start_time: &str,
    end_time: &str,
    threads: &[CyclicThread],
) -> Result<(), JsonFailure> {
    let times = RunTimes {
        cmdline: &s.cmdline,
        start_time,
        end_time,
    };
    write_rt_tests_json(
        path,
        &times,
        &classic::json_threads(threads, s.nsecs, s.smp),
    )
}

/// With `--latscope-json` (the pipeline has prepared the process): the run,
/// as a `FinishedTest` whose figures hold cyclictest's too (its final block
/// is printed from them: report::classic_cyclictest::FinalBlock).
pub fn measure(
    s: &CyclicSettings,
    online: &[usize],
    run: &mut Run<'_>,
    breaks: Option<Arc<BreakCrossings>>,
) -> Result<FinishedTest, CommandError> {
    let window = CpuWindow::open();
    let mut ran = self::run(s, online, false, breaks)?;
    let failure = ran.json_failure.take();
    if let Some(f) = failure.as_ref().filter(|f| !f.after_open) {
        return Err(CommandError::Runtime(
            f.message.trim_end().replace('\n', ""),
        ));
    }
    let cpu_use = window.close();
    let mut finished = finished_test(s, online, ran, &cpu_use, run);
    // A write that failed after the open: the figures stand (they go to the
    // console and --latscope-json); the failure is the run's error line.
    if let Some(f) = failure {
        finished.result.error = Some(f.message.trim_end().to_string());
    }
    Ok(finished)
}

/// The run as a `FinishedTest`: one timer series per thread (latscope's ns
/// figures), the overall summary, the facts the validity checks read.
/// `cpu_use`: the CPUs' use over the run.
fn finished_test(
    s: &CyclicSettings,
    online: &[usize],
    ran: CyclicRan,
    cpu_use: &CpuUse,
    run: &mut Run<'_>,
) -> FinishedTest {
    let cpus = measured_cpus(s, online);
    let usage = cpu_use.of(&cpus);
    let mut overall = LatencyRecorder::signed();
    let mut series = Vec::with_capacity(ran.threads.len());
    for (i, ((t, figures), windows)) in ran
        .threads
        .iter()
        .zip(ran.figures)
        .zip(ran.windows)
        .enumerate()
    {
        let Some(r) = figures else { continue };
        overall.merge(&r.recorder);
        if r.overruns > 0 {
            run.warn(format!(
                "thread {i} missed {} period{} (overruns): the interval is too short for this machine, or real-time throttling or a higher-priority task stopped it",
                r.overruns,
                if r.overruns == 1 { "" } else { "s" }
            ));
        }
        series.push(series_of(s, i, t, r, windows));
    }
    let facts = RunFacts {
        elapsed: ran.elapsed,
        priority_option: Some("-p"),
        ..RunFacts::measured(s.policy.is_realtime(), &cpus, usage, &series, None)
    };
    let wake = wake_name(s);
    let result = TestResult {
        test: "cyclictest".to_string(),
        description: format!(
            "periodic wake-up, {wake}{}: clock read after waking - expiry (cyclictest's figures)",
            if s.relative { " (relative)" } else { "" }
        ),
        mode: "user".to_string(),
        config: config_of(s, cpus, run.prep.memory.is_locked(), ran.dma_latency),
        end_reason: ran.end_reason,
        error: None,
        overall: overall.summary(),
        series,
        overall_detail: None,
        spikes: None,
        started_s: None,
    };
    FinishedTest {
        result,
        started: ran.started,
        ended: ran.ended,
        elapsed: ran.elapsed,
        facts,
        deadline: Vec::new(),
    }
}

/// The timer test's names of the wake method (docs/json-schema.md); -s is
/// cyclictest's own.
fn wake_name(s: &CyclicSettings) -> &'static str {
    if s.posix_timers {
        crate::timer::WakeMethod::PosixTimer.as_str()
    } else if s.system {
        "nanosleep"
    } else {
        crate::timer::WakeMethod::Nanosleep.as_str()
    }
}

/// Thread `i`'s series: latscope's figures of it, cyclictest's own beside.
fn series_of(
    s: &CyclicSettings,
    i: usize,
    t: &CyclicThread,
    r: ThreadReport,
    (per_second, dropped): (WindowSeries, u64),
) -> Series {
    Series {
        label: format!("thread {i}"),
        cpus: vec![s.cpu_of(i).unwrap_or(r.cpu)],
        pinned: s.cpu_of(i).is_some(),
        policy: s.policy_of(i).name().to_string(),
        priority: t.priority,
        overruns: r.overruns,
        above_limit: 0,
        latency: r.recorder.summary(),
        per_second: per_second.into_windows(),
        per_second_dropped: dropped,
        detail: SeriesDetail::TimerThread(Box::new(TimerThread {
            cpu: s.cpu_of(i).unwrap_or(r.cpu),
            tid: t.tid,
            period_us: t.interval_us,
            loops: (t.cycles * t.interval_us).div_ceil(1_000_000),
            msw: r.involuntary_switches + r.major_faults + r.minor_faults,
            involuntary_switches: r.involuntary_switches,
            major_faults: r.major_faults,
            minor_faults: r.minor_faults,
            // Xenomai's histograms are the timer test's; cyclictest's own
            // -h histogram is in its figures.
            histogram_all: None,
            histogram_loop_min: None,
            histogram_loop_max: None,
            breakdown: None,
            cyclictest: Some(t.clone()),
        })),
    }
}

/// The test's configuration as the timer test's (docs/json-schema.md).
fn config_of(
    s: &CyclicSettings,
    cpus: Vec<usize>,
    mlockall: bool,
    cpu_dma_latency: String,
) -> TestConfig {
    TestConfig {
        policy: s.policy.name().to_string(),
        priority: s.priority,
        loops: (s.loops > 0).then_some(s.loops),
        duration_s: s.duration.map(|d| d.as_secs_f64()),
        max_latency_us: None,
        mlockall,
        cpu_dma_latency,
        detail: ConfigDetail::Timer(TimerConfig {
            cpus,
            period_us: s.interval_us,
            wake: wake_name(s).to_string(),
            figure: "user".to_string(),
            test_mode: 0,
            warmup_loops: 0,
            samples_per_loop: 1_000_000 / s.interval_us.max(1),
            histogram_cells: s.histogram,
            bucket_ns: if s.nsecs { 1 } else { 1000 },
            breakdown: false,
            freeze_trace: false,
            break_on_switch: false,
            cyclictest: Some(output_of(s)),
        }),
    }
}
