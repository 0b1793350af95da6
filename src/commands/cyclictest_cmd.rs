//! `latscope cyclictest` and the `cyclictest` compat name: rt-tests 2.x's
//! options (GNU getopt, settings::cyclictest), its semantics
//! (timer::cyclic), its running display (live::cyclictest) and its exact
//! outputs (report::classic_cyclictest): the `T:` lines, `-v` values, the
//! `-h`/`-H` histogram, `--spike`, `-b`'s break lines and `--json`, and its
//! stderr lines and exit codes.
//!
//! With `--latscope-json FILE` the run goes through `pipeline::run`
//! (`CyclicMeasurement`): the machine facts, the memory lock, latscope's
//! validity warnings (on stderr only: the presentation is classic) and the
//! full Report in FILE, while stdout, cyclictest's own `--json`, its stderr
//! lines and its exit codes stay cyclictest's. Without it the run does not:
//! the pipeline's footer would add lines to cyclictest's stderr, and its
//! machine facts and kernel-log follower cost memory and start-up time
//! that cyclictest's users compare against.

use crate::live::cyclictest::{CyclicDisplay, DisplayForm, ThreadLabel};
use crate::pipeline::{
    CommandError, CpuWindow, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
    RunFacts,
};
use crate::report::classic_cyclictest::{self as classic, CyclicThread, JsonHeader};
use crate::report::json::LatscopeJson;
use crate::report::{
    ConfigDetail, EndReason, Series, SeriesDetail, TestConfig, TestResult, TimerConfig,
    TimerThread, XenomaiHistogram,
};
use crate::rt::signals::{Collected, wait_for_stop_or_user_signal};
use crate::settings::cyclictest::{CyclicPolicy, CyclicSettings};
use crate::settings::getopt::GetoptUsage;
use crate::settings::{OutputTarget, Outputs};
use crate::stats::LatencyRecorder;
use crate::stats::window::WindowSeries;
use crate::timer::cyclic::{self, CyclicAlign, CyclicOptions, CyclicThreadPlan, CyclicWake};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What the command line asks for once parsed.
pub enum Start {
    /// Already answered (help, a getopt error, a FATAL line): the exit code.
    Answered(i32),
    /// A run with these settings, on these CPUs (the process's allowed ones).
    Run {
        settings: Box<CyclicSettings>,
        online: Vec<usize>,
    },
}

/// Parses cyclictest's arguments; help and cyclictest's usage errors are
/// answered here, as cyclictest answers them.
pub fn start(args: &[String]) -> Result<Start, CommandError> {
    // Every word as typed: the `--` the compat name puts before them is
    // clap's, consumed there; one the user typed ends getopt's options, as
    // in cyclictest (`cyclictest -- -l 5` runs until stopped).
    let online = crate::rt::sched::allowed_cpus();
    let usage = || {
        let mut out = crate::rt::stdio::out();
        let _ = out.write_all(crate::settings::cyclictest::USAGE.as_bytes());
        let _ = out.flush();
    };
    let settings = match CyclicSettings::parse(args, &online, cyclic::has_smi_counter()) {
        Ok(s) => s,
        Err(GetoptUsage::Getopt(message)) => {
            let _ = writeln!(std::io::stderr(), "{}: {message}", program_name());
            usage();
            return Ok(Start::Answered(0));
        }
        Err(GetoptUsage::Help) => {
            usage();
            return Ok(Start::Answered(0));
        }
        Err(GetoptUsage::Invalid(lines)) => {
            for line in lines {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            usage();
            return Ok(Start::Answered(1));
        }
        Err(GetoptUsage::Fatal(message)) => {
            let _ = writeln!(std::io::stderr(), "FATAL: {message}");
            return Ok(Start::Answered(1));
        }
        Err(GetoptUsage::Bad(message)) => {
            return Err(CommandError::Usage(crate::settings::UsageError(message)));
        }
    };
    Ok(Start::Run {
        settings: Box::new(settings),
        online,
    })
}

/// `latscope cyclictest ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    let (settings, online) = match start(args)? {
        Start::Answered(code) => return Ok(code),
        Start::Run { settings, online } => (settings, online),
    };
    match settings.latscope_json.clone() {
        None => run_classic(&settings, &online),
        Some(path) => {
            print_warnings(&settings);
            crate::pipeline::run(&mut CyclicMeasurement {
                settings: &settings,
                online: &online,
                path,
                final_block: std::sync::Arc::default(),
            })
        }
    }
}

/// A run without `--latscope-json`: cyclictest's outputs only, no pipeline.
/// This is all the lean drop-in binary (src/bin/latscope-cyclictest.rs)
/// links of latscope, which is what keeps its memory at cyclictest's.
pub fn run_classic(settings: &CyclicSettings, online: &[usize]) -> Result<i32, CommandError> {
    print_warnings(settings);
    let ran = measure(settings, online, true)?;
    // cyclictest writes the JSON before its final block and ends there when
    // it cannot: no final block then.
    match ran.json_failure {
        Some(f) => {
            let _ = std::io::stderr().write_all(f.message.as_bytes());
            Ok(f.code)
        }
        None => {
            print(&ran.final_block);
            Ok(0)
        }
    }
}

/// cyclictest's warnings about the options, on stderr before the run.
fn print_warnings(settings: &CyclicSettings) {
    for line in &settings.warnings {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// `--latscope-json`: the run as a pipeline `Measurement`.
struct CyclicMeasurement<'a> {
    settings: &'a CyclicSettings,
    online: &'a [usize],
    path: std::path::PathBuf,
    /// cyclictest's final block, rendered by the measure step (it holds
    /// what the Report does not: whole-us cells, outlier cycles, the break
    /// thread), printed by the console exporter at delivery.
    final_block: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Measurement for CyclicMeasurement<'_> {
    fn plan(&self) -> Plan {
        let s = self.settings;
        Plan {
            prepare: PrepareSpec {
                lock_memory: s.mlockall,
                require_mlock: false,
                // cyclictest's own handling (its stdout line, --latency,
                // --laptop) is kept: see `latency_target`.
                hold_dma_latency: false,
                loads: Vec::new(),
                cpus: measured_cpus(s, self.online),
            },
            fail_if: Vec::new(),
            outputs: Outputs {
                json: Some(OutputTarget::File(self.path.clone())),
                ..Outputs::default()
            },
            presentation: Presentation {
                console: Box::new(classic::FinalBlock(std::sync::Arc::clone(
                    &self.final_block,
                ))),
                classic: true,
                json: Box::new(LatscopeJson),
            },
        }
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let s = self.settings;
        let window = CpuWindow::open();
        let ran = measure(s, self.online, false)?;
        if let Some(f) = &ran.json_failure {
            return Err(CommandError::Runtime(
                f.message.trim_end().replace('\n', ""),
            ));
        }
        let cpu_use = window.close();
        if let Ok(mut block) = self.final_block.lock() {
            block.clone_from(&ran.final_block);
        }
        let cpus = measured_cpus(s, self.online);
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
            let (per_second, dropped) = windows;
            let empty = || XenomaiHistogram::new(1, 1000).ok();
            let (Some(all), Some(loop_min), Some(loop_max)) = (empty(), empty(), empty()) else {
                continue;
            };
            let pinned = s.cpu_of(i).is_some();
            series.push(Series {
                label: format!("thread {i}"),
                cpus: vec![s.cpu_of(i).unwrap_or(r.cpu)],
                pinned,
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
                    // Xenomai's histograms are the timer test's; cyclictest's
                    // own -h histogram is in its output.
                    histogram_all: all,
                    histogram_loop_min: loop_min,
                    histogram_loop_max: loop_max,
                    breakdown: None,
                })),
            });
        }
        let facts = RunFacts {
            elapsed: ran.elapsed,
            priority_option: Some("-p"),
            ..RunFacts::measured(s.policy.is_realtime(), &cpus, usage, &series, None)
        };
        // The timer test's names (docs/json-schema.md); -s is cyclictest's own.
        let wake = if s.posix_timers {
            crate::timer::WakeMethod::PosixTimer.as_str()
        } else if s.system {
            "nanosleep"
        } else {
            crate::timer::WakeMethod::Nanosleep.as_str()
        };
        let result = TestResult {
            test: "cyclictest".to_string(),
            description: format!(
                "periodic wake-up, {wake}{}: clock read after waking - expiry (cyclictest's figures)",
                if s.relative { " (relative)" } else { "" }
            ),
            mode: "user".to_string(),
            config: TestConfig {
                policy: s.policy.name().to_string(),
                priority: s.priority,
                loops: (s.loops > 0).then_some(s.loops),
                duration_s: s.duration.map(|d| d.as_secs_f64()),
                max_latency_us: None,
                mlockall: run.prep.memory.is_locked(),
                cpu_dma_latency: ran.dma_latency.clone(),
                detail: ConfigDetail::Timer(TimerConfig {
                    cpus,
                    period_us: s.interval_us,
                    wake: wake.to_string(),
                    figure: "user".to_string(),
                    test_mode: 0,
                    warmup_loops: 0,
                    samples_per_loop: 1_000_000 / s.interval_us.max(1),
                    histogram_cells: s.histogram,
                    bucket_ns: if s.nsecs { 1 } else { 1000 },
                    breakdown: false,
                    freeze_trace: false,
                    break_on_switch: false,
                }),
            },
            end_reason: ran.end_reason,
            error: None,
            overall: overall.summary(),
            series,
            overall_detail: None,
            spikes: None,
            started_s: None,
        };
        Ok(vec![FinishedTest {
            result,
            started: ran.started,
            ended: ran.ended,
            elapsed: ran.elapsed,
            facts,
        }])
    }
}

/// The CPUs the threads measure on: their own when pinned, else every CPU
/// the process may use.
fn measured_cpus(s: &CyclicSettings, online: &[usize]) -> Vec<usize> {
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

/// What a run leaves besides its output so far.
struct Ran {
    /// cyclictest's block after the run (-q's `T:` lines, spikes, the
    /// histogram, the break lines), not yet printed.
    final_block: String,
    threads: Vec<CyclicThread>,
    /// latscope's figures per thread (with `--latscope-json`).
    figures: Vec<Option<cyclic::ThreadReport>>,
    /// Per thread: its per-second windows and the windows lost.
    windows: Vec<(WindowSeries, u64)>,
    /// `/dev/cpu_dma_latency` as the Report says it.
    dma_latency: String,
    end_reason: EndReason,
    started: std::time::SystemTime,
    ended: std::time::SystemTime,
    elapsed: Duration,
    /// `--json` could not be written: what cyclictest says then.
    json_failure: Option<JsonFailure>,
}

/// rt-tests' `err_exit(errno, "Failed to open '%s'\n", file)`: the line,
/// `: ` and the reason, and the errno as the exit code.
struct JsonFailure {
    message: String,
    code: i32,
}

/// The name getopt's messages start with: argv[0] as typed when started
/// under the `cyclictest` name (as GNU getopt prints it), else `cyclictest`.
fn program_name() -> String {
    crate::cli::getopt_program_name(crate::cli::CYCLICTEST_COMPAT)
}

/// Writes `text` to standard output at once.
fn print(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = crate::rt::stdio::out();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "WARN: {line}");
}

/// Pins the calling (main) thread to `cpus`, as cyclictest does with its
/// affinity mask and `--mainaffinity`.
fn pin_main_thread(cpus: &[usize]) {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        let _ = set.set(c);
    }
    if let Err(e) = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set) {
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
    let path = crate::rt::dma_latency::PATH;
    if let Err(e) = std::fs::metadata(path) {
        eprintln!("WARN: stat {path} failed: {}", os_text(&e));
        return None;
    }
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("WARN: open {path}: {}", os_text(&e));
            return None;
        }
    };
    if let Err(e) = file.write_all(&s.latency_target.to_ne_bytes()) {
        eprintln!(
            "# error setting cpu_dma_latency to {}!: {}",
            s.latency_target,
            os_text(&e)
        );
        return None;
    }
    print(&format!(
        "# /dev/cpu_dma_latency set to {}us\n",
        s.latency_target
    ));
    Some(file)
}

/// An I/O error as strerror words it (without Rust's "(os error N)").
fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
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
    let read = || crate::rt::clock::read_clock(clock);
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid, writable timespec.
    let reported = if unsafe { libc::clock_getres(clock, &mut res) } != 0 {
        warn("clock_getres failed");
        u64::MAX
    } else {
        res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64
    };
    // About 1 ms of reads, as cyclictest sizes them.
    let prev = read();
    let mut last = prev;
    for _ in 0..1000 {
        last = read();
    }
    let per_call = (last - prev) / 1000;
    let times = 1_000_000u64
        .checked_div(per_call)
        .map_or(100_000, |t| t.clamp(1000, 100_000));
    let stamps: Vec<u64> = (0..times).map(|_| read()).collect();
    let min_step = stamps
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min()
        .unwrap_or(u64::MAX);
    if s.verbose || (min_step != u64::MAX && min_step > reported) {
        warn(&format!("reported clock resolution: {reported} nsec"));
        warn(&format!(
            "measured clock resolution approximately: {min_step} nsec"
        ));
    }
}

/// The run, as cyclictest does it: everything it prints before and during
/// the run is printed; the final block is returned. `lock_memory`: `-m`'s
/// mlockall is done here (not when the pipeline has done it already).
fn measure(s: &CyclicSettings, online: &[usize], lock_memory: bool) -> Result<Ran, CommandError> {
    let report = s.latscope_json.is_some();
    for line in &s.early_lines {
        print(&format!("{line}\n"));
    }
    if s.verbose {
        // SAFETY: sysconf has no preconditions.
        let (conf, onln) = unsafe {
            (
                libc::sysconf(libc::_SC_NPROCESSORS_CONF),
                libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
            )
        };
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
    // Held for the whole run; dropped (closed) at the end, as cyclictest does.
    let dma = latency_target(s);
    let dma_latency = match &dma {
        Some(_) => format!("held at {} us", s.latency_target),
        None if s.laptop || s.default_system => "not requested".to_string(),
        None => "not set (see the WARN line on stderr)".to_string(),
    };
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid, writable timespec.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } != 0
        || res.tv_sec != 0
        || res.tv_nsec != 1
    {
        warn("High resolution timers not available");
    }
    if s.resolution {
        check_resolution(s);
    }
    let plans: Vec<CyclicThreadPlan> = (0..s.threads)
        .map(|i| CyclicThreadPlan {
            interval_ns: s.interval_of(i) as u64 * 1000,
            priority: s.priority_of(i),
            policy: s.policy_of(i).raw(),
            cpu: s.cpu_of(i),
            loops: s.loops,
            hist_cells: s.histogram,
            nsecs: s.nsecs,
            report,
        })
        .collect();
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
    let opts = CyclicOptions {
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
            // timer::cyclic::first_expiry).
            (None, None) if s.mlockall && s.smp => CyclicAlign::Spread,
            (None, None) => CyclicAlign::None,
        },
        smi: s.smi,
    };
    let labels = (0..s.threads)
        .map(|i| ThreadLabel {
            priority: s.priority_of(i),
            interval_us: s.interval_of(i),
        })
        .collect();
    let some_other = (0..s.threads).any(|i| s.policy_of(i) == CyclicPolicy::Other);
    let mut display = CyclicDisplay::new(
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
    );
    if opts.tracemark && opts.break_limit.is_some() {
        // rt-tests names the debugfs tracing directory it uses.
        let _ = writeln!(
            std::io::stderr(),
            "INFO: debugfs mountpoint: {}",
            debugfs_tracing_dir()
        );
    }
    // `/cyclictest<pid>` for SIGUSR2, created before the threads start as
    // cyclictest's rstat_setup does; removed when `status` is dropped, on
    // every way out of this function.
    let mut status = crate::live::cyclictest_status::CyclicStatus::open();
    // Created before the threads start, as cyclictest's fifo thread does
    // first thing; removed when the run ends (only the pipe made here).
    let fifo = match &s.fifo {
        Some(path) => Some(StatsFifo::create(path)?),
        None => None,
    };
    let start_time = local_time();
    let started = std::time::SystemTime::now();
    let clock_start = std::time::Instant::now();
    let run = cyclic::start(&plans, &opts).map_err(CommandError::Runtime)?;
    let mut windows: Vec<WindowSeries> = run
        .shared
        .windows
        .iter()
        .map(|_| WindowSeries::default())
        .collect();
    let drain = |shared: &cyclic::CyclicShared, windows: &mut Vec<WindowSeries>| {
        for (ring, series) in shared.windows.iter().zip(windows.iter_mut()) {
            ring.drain_into(series);
        }
    };
    let mut signalled = false;
    let fifo_thread = fifo.map(|f| f.serve(std::sync::Arc::clone(&run.shared), display.labels()));
    if let Some(cpus) = &s.main_affinity {
        pin_main_thread(cpus);
    }
    let shared = std::sync::Arc::clone(&run.shared);
    let stopped = |shared: &cyclic::CyclicShared| shared.stop.load(Ordering::Relaxed);
    // cyclictest's main loop: draw, sleep 10 ms, stop on a signal, on the
    // threads' own stop (-D, -b) or once any thread has done its -l loops
    // (rt-tests 2.40 counts `allstopped` up per finished thread but breaks
    // as soon as it is not 0; then `shutdown` stops the others where they
    // are: with -t2 -d100 -l500 cyclictest's thread 1 ends near 466); else
    // move the cursor up and (with -M) wait for a new maximum.
    let mut loops_done = false;
    loop {
        print(&display.block(&shared));
        let one_done = s.loops > 0
            && shared
                .threads
                .iter()
                .any(|t| t.cycles.load(Ordering::Acquire) >= s.loops);
        // SIGUSR1/SIGUSR2 mean what they mean to cyclictest (its status on
        // stderr, in /cyclictest<pid>): served here, and the run goes on.
        match wait_for_stop_or_user_signal(Duration::from_millis(10)) {
            Some(Collected::Stop(_)) => {
                signalled = true;
                shared.stop.store(true, Ordering::Relaxed);
            }
            Some(user) => status.serve(user, &display, &shared),
            None => {}
        }
        drain(&shared, &mut windows);
        if stopped(&shared) || one_done {
            loops_done = one_done;
            break;
        }
        print(&display.cursor_up());
        if s.refresh_on_max {
            // Wait for a new maximum; a thread that ends its loops ends the
            // run here, as cyclictest's threads do with -M.
            let epoch = shared.max_epoch.load(Ordering::Relaxed);
            while shared.max_epoch.load(Ordering::Relaxed) == epoch && !stopped(&shared) {
                drain(&shared, &mut windows);
                let collected = wait_for_stop_or_user_signal(Duration::from_millis(10));
                if let Some(user @ (Collected::User1 | Collected::User2)) = collected {
                    status.serve(user, &display, &shared);
                }
                if matches!(collected, Some(Collected::Stop(_)))
                    || shared
                        .threads
                        .iter()
                        .any(|t| t.finished.load(Ordering::Acquire))
                {
                    shared.stop.store(true, Ordering::Relaxed);
                }
            }
            if stopped(&shared) {
                break;
            }
        }
    }
    if s.refresh_on_max {
        print(&display.cursor_down());
    }
    let results = run.stop_and_join();
    let elapsed = clock_start.elapsed();
    let ended = std::time::SystemTime::now();
    drain(&shared, &mut windows);
    if let Some(t) = fifo_thread {
        let _ = t.join();
    }
    let end_time = local_time();
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
                })
            }
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    drop(dma);
    if let Some(e) = failure {
        return Err(CommandError::Runtime(e));
    }
    let json_failure = match &s.json {
        Some(path) => write_json(s, path, &start_time, &end_time, &threads).err(),
        None => None,
    };
    let mut text = String::new();
    if s.quiet && s.histogram == 0 {
        for (i, t) in threads.iter().enumerate() {
            text.push_str(&classic::t_line(i, t, s.nsecs, s.smi));
        }
    }
    if opts.spike_trigger.is_some() {
        let count = shared.spikes.load(Ordering::Relaxed);
        let kept: Vec<classic::Spike> = shared
            .spike_slots
            .iter()
            .take(count)
            .map(|slot| classic::Spike {
                thread: slot.thread.load(Ordering::Relaxed),
                diff: slot.diff.load(Ordering::Relaxed),
                ts_us: slot.ts_us.load(Ordering::Relaxed),
            })
            .collect();
        text.push_str(&classic::spikes(&kept, count));
    }
    if s.histogram > 0 {
        let block = classic::histogram(&threads, s.histogram, s.histofall, s.smi);
        match &s.histfile {
            Some(path) => {
                let written =
                    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
                        w.write_all(block.as_bytes())
                    });
                if let Err(e) = written {
                    // cyclictest's perror, and the run still ends with 0.
                    eprintln!("opening histogram file:: {}", os_text(&e));
                }
            }
            None => text.push_str(&block),
        }
    }
    // cyclictest lists the thread ids for any -b other than 0, a negative
    // one (which never breaks) included.
    if s.breaktrace != 0 {
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        let tid = shared.break_tid.load(Ordering::Acquire);
        let broke = (tid != 0).then(|| (tid, shared.break_value.load(Ordering::Relaxed)));
        text.push_str(&classic::break_block(&tids, broke));
    }
    let end_reason = if shared.break_tid.load(Ordering::Acquire) != 0 {
        EndReason::BreakTrace
    } else if signalled {
        EndReason::Interrupted
    } else if loops_done || s.duration.is_none() {
        EndReason::LoopsDone
    } else {
        EndReason::DurationElapsed
    };
    let windows = windows
        .into_iter()
        .zip(shared.windows.iter())
        .map(|(w, ring)| (w, ring.dropped()))
        .collect();
    Ok(Ran {
        final_block: text,
        threads,
        figures,
        windows,
        dma_latency,
        end_reason,
        started,
        ended,
        json_failure,
        elapsed,
    })
}

/// rt-tests' tracing directory: `<debugfs>/tracing/` where debugfs is
/// mounted, else the standard tracefs place.
fn debugfs_tracing_dir() -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "debugfs").then(|| format!("{dir}/tracing/"))
        })
        .unwrap_or_else(|| "/sys/kernel/tracing/".to_string())
}

/// `-F PATH`: a named pipe latscope creates (never an existing file: where
/// cyclictest unlinks whatever is there, latscope refuses) and removes at
/// the end. Each reader that opens it gets the `T:` lines of that moment.
struct StatsFifo {
    path: std::path::PathBuf,
}

impl StatsFifo {
    fn create(path: &str) -> Result<StatsFifo, CommandError> {
        let c_path = std::ffi::CString::new(path)
            .map_err(|_| CommandError::Runtime(format!("invalid fifo path {path:?}")))?;
        // SAFETY: NUL-terminated path. mkfifo fails with EEXIST on any
        // existing name, so nothing is replaced.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o666) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(CommandError::Runtime(format!(
                "Error creating fifo {path}: {}",
                os_text(&e)
            )));
        }
        Ok(StatsFifo {
            path: std::path::PathBuf::from(path),
        })
    }

    /// The thread that writes the `T:` lines to every reader until the run
    /// stops, then removes the pipe.
    fn serve(
        self,
        shared: std::sync::Arc<cyclic::CyclicShared>,
        labels: (Vec<ThreadLabel>, DisplayForm),
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let (labels, form) = labels;
            let display = CyclicDisplay::new(labels, form);
            while !shared.stop.load(Ordering::Relaxed) {
                let opened = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&self.path);
                match opened {
                    Ok(mut f) => {
                        let _ = f.write_all(display.t_lines(&shared).as_bytes());
                        std::thread::sleep(Duration::from_micros(250));
                    }
                    // No reader yet: cyclictest retries every 0.5 s; latscope
                    // looks for the stop flag in between.
                    Err(_) => {
                        for _ in 0..10 {
                            if shared.stop.load(Ordering::Relaxed) {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            }
            drop(self);
        })
    }
}

impl Drop for StatsFifo {
    fn drop(&mut self) {
        // Only the pipe this run created (mkfifo succeeded).
        let _ = std::fs::remove_file(&self.path);
    }
}

fn write_json(
    s: &CyclicSettings,
    path: &str,
    start_time: &str,
    end_time: &str,
    threads: &[CyclicThread],
) -> Result<(), JsonFailure> {
    let failed = |reason: String, code: i32| JsonFailure {
        message: format!("Failed to open '{path}'\n: {reason}\n"),
        code,
    };
    let uts = nix::sys::utsname::uname().map_err(|e| failed(e.desc().to_string(), e as i32))?;
    let text_of = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    let header = JsonHeader {
        cmdline: &s.cmdline,
        start_time,
        end_time,
        return_code: 0,
        sysname: &text_of(uts.sysname()),
        nodename: &text_of(uts.nodename()),
        release: &text_of(uts.release()),
        version: &text_of(uts.version()),
        machine: &text_of(uts.machine()),
        realtime: std::path::Path::new("/sys/kernel/realtime").exists(),
        smp: s.smp,
    };
    let body = classic::json(&header, threads, s.nsecs);
    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
        w.write_all(body.as_bytes())
    })
    .map_err(|e| {
        // strerror's words and the errno, as err_exit; latscope's own
        // refusals (rt::outfile) have none: a directory is EISDIR there.
        let errno = e
            .raw_os_error()
            .or_else(|| std::path::Path::new(path).is_dir().then_some(libc::EISDIR));
        match errno {
            Some(n) => failed(nix::errno::Errno::from_raw(n).desc().to_string(), n),
            None => failed(e.to_string(), 1),
        }
    })
}

/// Now as rt-tests writes it: `strftime("%a, %d %b %Y %T %z")`, local time.
fn local_time() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    unsafe { libc::localtime_r(&now, &mut tm) };
    let mut buf = [0u8; 64];
    // SAFETY: the buffer and the NUL-terminated format are valid.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a, %d %b %Y %T %z".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
