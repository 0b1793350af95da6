//! `latscope timer` (and the timer part of `suite`): settings to a running
//! `timer` test, live output (Xenomai's RTD lines or a progress line), and the
//! finished test as report data.

use super::ipc_test::{self, FinishedTest, Preparation};
use super::validity::{CpuWindow, RunFacts};
use super::{CommandError, deliver, write_output};
use crate::cli::{OutputFormat, TimerArgs};
use crate::report::classic_xenomai::{
    self, ClassicXenomai, HeaderCadence, LoopLine, XenomaiGnuplot,
};
use crate::report::console::{ModernConsole, ModernConsoleWithHistograms};
use crate::report::json::LatscopeJson;
use crate::report::{
    ConfigDetail, Exporter, Series, SeriesDetail, TestConfig, TestResult, TimerConfig, TimerThread,
};
use crate::rt::signals::wait_for_stop_signal;
use crate::rt::sysinfo::SysInfo;
use crate::rt::tracefs::{self, BreakTrace};
use crate::settings::JsonTarget;
use crate::settings::timer::TimerSettings;
use crate::stats::LatencyRecorder;
use crate::timer::figure::LoopStats;
use crate::timer::{self, Figure, ThreadShared, TimerOutcome, TimerPlan, TimerProgress};
use crate::units::format_ns;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// What one sample spans, for the report.
fn description(figure: Figure, wake: timer::WakeMethod) -> String {
    let what = match figure {
        Figure::User => "clock read after waking",
        Figure::Thread => "thread scheduled in (kernel trace)",
        Figure::Irq => "timer interrupt handler (kernel trace)",
    };
    format!("periodic wake-up, {}: {what} - expiry", wake.as_str())
}

pub fn plan_of(settings: &TimerSettings, stop: Arc<AtomicBool>) -> TimerPlan {
    TimerPlan {
        cpus: settings.cpus.clone(),
        policy: settings.policy,
        priority: settings.priority,
        period_ns: settings.period_us * 1000,
        wake: settings.wake,
        warmup_loops: settings.warmup_loops,
        duration_ns: settings.duration.map(crate::rt::clock::duration_ns),
        histogram_cells: settings.histogram_cells,
        bucket_ns: settings.bucket_ns,
        limit_ns: settings
            .max_latency_us
            .map(|us| us.saturating_mul(1000).min(i64::MAX as u64) as i64),
        freeze_trace: settings.freeze_trace,
        break_on_switch: settings.break_on_switch,
        breakdown: settings.breakdown,
        spike_threshold_ns: settings.trace_spikes_us.map(|us| us.saturating_mul(1000)),
        figure: settings.figure,
        stop,
    }
}

fn config_of(settings: &TimerSettings, plan: &TimerPlan, prep: &Preparation) -> TestConfig {
    TestConfig {
        policy: settings.policy.to_string(),
        priority: settings.priority,
        loops: None,
        duration_s: settings.duration.map(|d| d.as_secs_f64()),
        max_latency_us: settings.max_latency_us,
        mlockall: prep.memory.is_locked(),
        cpu_dma_latency: prep.dma_latency.describe(),
        detail: ConfigDetail::Timer(TimerConfig {
            cpus: settings.cpus.clone(),
            period_us: settings.period_us,
            wake: settings.wake.as_str().to_string(),
            figure: settings.figure.as_str().to_string(),
            test_mode: settings.figure.test_mode() as u8,
            warmup_loops: settings.warmup_loops,
            samples_per_loop: plan.samples_per_loop(),
            histogram_cells: settings.histogram_cells,
            bucket_ns: settings.bucket_ns,
            breakdown: settings.breakdown,
            freeze_trace: settings.freeze_trace,
            break_on_switch: settings.break_on_switch,
        }),
    }
}

/// Measures with `settings` and returns the finished test (report data and
/// the facts for the validity warnings), plus warnings of its own.
pub fn measure(
    settings: &TimerSettings,
    prep: &Preparation,
    progress: &mut dyn TimerProgress,
) -> Result<(FinishedTest, Vec<String>, TimerOutcome), String> {
    let plan = plan_of(settings, Arc::new(AtomicBool::new(false)));
    let window = CpuWindow::open();
    let started = SystemTime::now();
    let outcome = timer::run(&plan, progress, &mut |timeout| {
        wait_for_stop_signal(timeout).is_some()
    })?;
    let ended = SystemTime::now();
    let cpu_use = window.close();
    let mut overall = LatencyRecorder::signed();
    let mut warnings = Vec::new();
    let series: Vec<Series> = outcome
        .threads
        .iter()
        .map(|t| {
            overall.merge(&t.figure.recorder);
            if let Some(b) = &t.breakdown
                && b.without_sched_in > 0
            {
                warnings.push(format!(
                    "CPU {}: the kernel traced no switch into the sampling thread for {} of {} wake-ups (on some kernels a CPU leaving its idle task emits no sched_switch): Sched covers the other {}, Return covers all",
                    t.cpu,
                    b.without_sched_in,
                    b.traced_wakeups,
                    b.traced_wakeups - b.without_sched_in
                ));
            }
            if t.overruns > 0 {
                warnings.push(format!(
                    "the sampling thread on CPU {} missed {} period{} (overruns): the period is too short for this machine, or real-time throttling or a higher-priority task stopped it",
                    t.cpu, t.overruns, if t.overruns == 1 { "" } else { "s" }
                ));
            }
            Series {
                label: format!("CPU {}", t.cpu),
                cpus: vec![t.cpu],
                pinned: true,
                policy: settings.policy.to_string(),
                priority: settings.priority,
                overruns: t.overruns,
                above_limit: t.above_limit,
                latency: t.figure.recorder.summary(),
                per_second: t.per_second.clone(),
                per_second_dropped: t.per_second_dropped,
                detail: SeriesDetail::TimerThread(Box::new(TimerThread {
                    cpu: t.cpu,
                    tid: t.tid,
                    period_us: settings.period_us,
                    loops: t.figure.loops_done(),
                    msw: t.counters.total(),
                    involuntary_switches: t.counters.involuntary_switches,
                    major_faults: t.counters.major_faults,
                    minor_faults: t.counters.minor_faults,
                    histogram_all: t.figure.all.clone(),
                    histogram_loop_min: t.figure.loop_min.clone(),
                    histogram_loop_max: t.figure.loop_max.clone(),
                    breakdown: t.breakdown.clone(),
                })),
            }
        })
        .collect();
    if let Some(stats) = &outcome.trace_stats
        && stats.events_lost > 0
    {
        warnings.push(format!(
            "the kernel trace lost {} events (the reader fell behind): the breakdown misses some wake-ups",
            stats.events_lost
        ));
    }
    let (busy_fraction, own_cpu_seconds, load_fraction) = cpu_use.of(&settings.cpus);
    let facts = RunFacts {
        realtime_policy: settings.policy.is_realtime(),
        cpus_used: settings.cpus.clone(),
        busy_fraction,
        own_cpu_seconds,
        load_fraction,
        elapsed: outcome.measured,
        max_ns: overall.max(),
        windows_dropped: series.iter().map(|s| s.per_second_dropped).sum(),
        breaktrace_note: None,
        scheduling_free: false,
        priority_option: None,
    };
    let result = TestResult {
        test: "timer".to_string(),
        description: description(settings.figure, settings.wake),
        mode: settings.figure.as_str().to_string(),
        config: config_of(settings, &plan, prep),
        end_reason: outcome.end_reason,
        error: outcome.error.clone(),
        overall: overall.summary(),
        series,
        overall_detail: None,
        spikes: outcome.spikes.clone(),
    };
    let finished = FinishedTest {
        result,
        started,
        ended,
        elapsed: outcome.measured,
        facts,
    };
    Ok((finished, warnings, outcome))
}

/// A timer test that could not run: reported with its error and no samples.
pub fn failed(settings: &TimerSettings, prep: &Preparation, error: String) -> FinishedTest {
    let plan = plan_of(settings, Arc::new(AtomicBool::new(true)));
    FinishedTest::not_started(
        TestResult {
            test: "timer".to_string(),
            description: description(settings.figure, settings.wake),
            mode: settings.figure.as_str().to_string(),
            config: config_of(settings, &plan, prep),
            end_reason: crate::report::EndReason::Error,
            error: Some(error),
            overall: LatencyRecorder::new().summary(),
            series: Vec::new(),
            overall_detail: None,
            spikes: None,
        },
        settings.policy.is_realtime(),
    )
}

/// The live output of a timer test in modern format (nothing when `quiet`
/// or not on a terminal).
pub fn progress_line(quiet: bool) -> Box<dyn TimerProgress> {
    Box::new(ProgressLine::new(quiet))
}

/// `latscope timer`.
pub fn run(args: &TimerArgs) -> Result<i32, CommandError> {
    let settings = TimerSettings::from_args(args)?;
    for notice in &settings.notices {
        eprintln!("latscope: warning: {notice}");
    }
    if settings.breakdown {
        tracefs::check_available().map_err(|e| {
            CommandError::Runtime(format!(
                "{} needs kernel tracing: {e}",
                if settings.figure == Figure::User {
                    "--breakdown".to_string()
                } else {
                    format!("-t {}", settings.figure.test_mode())
                }
            ))
        })?;
    }
    super::check_spike_tracing(settings.trace_spikes_us)?;
    let sysinfo = SysInfo::collect();
    let mut prep = Preparation::apply(
        settings.lock_memory,
        true,
        settings.hold_dma_latency,
        &settings.loads,
        &settings.cpus,
    )
    .map_err(CommandError::Runtime)?;
    let mut warnings = prep.warnings.clone();
    let mut settings = settings;
    if settings.freeze_trace
        && let Err(why) = BreakTrace::open()
    {
        warnings.push(format!("-f: {why}; running without freezing the trace"));
        settings.freeze_trace = false;
    }
    let classic = settings.format == OutputFormat::Classic;
    // With `--json -` (or `--csv -`, `--markdown -`) that output owns
    // standard output: Xenomai's live lines go to standard error then.
    let live_to_stderr = settings.outputs.to_stdout();
    let mut progress: Box<dyn TimerProgress> = if classic {
        let mode = settings.figure.test_mode();
        let header = classic_xenomai::startup_header(settings.period_us, mode);
        if live_to_stderr {
            eprint!("{header}");
        } else {
            print!("{header}");
        }
        if settings.quiet {
            eprint!(
                "{}",
                classic_xenomai::quiet_notice(settings.duration.map_or(0, |d| d.as_secs()))
            );
        }
        let _ = std::io::stdout().flush();
        Box::new(RtdLines::new(&settings, live_to_stderr))
    } else {
        Box::new(ProgressLine::new(settings.quiet))
    };
    let (finished, own_warnings, outcome) =
        measure(&settings, &prep, progress.as_mut()).map_err(CommandError::Runtime)?;
    warnings.extend(own_warnings);
    if let Some((cpu, moved)) = outcome.break_on_switch {
        eprintln!(
            "latscope: -b: the sampling thread on CPU {cpu} had {} involuntary context switch(es), {} major and {} minor page fault(s): run stopped",
            moved.involuntary_switches, moved.major_faults, moved.minor_faults
        );
    }
    if settings.freeze_trace
        && let Ok(mut trace) = BreakTrace::open()
    {
        trace.stop();
        eprintln!(
            "latscope: -f: tracing stopped; each new maximum is marked in {}/trace",
            trace.dir.display()
        );
    }
    let mut report = ipc_test::assemble_report(vec![finished], sysinfo, warnings, &prep.memory);
    prep.finish(&mut report);
    drop(prep);
    super::judge(&mut report, &settings.fail_if);
    let gnuplot_to_stdout = settings.gnuplot == Some(JsonTarget::Stdout);
    let console: Box<dyn Exporter> = if classic {
        Box::new(ClassicXenomai {
            histograms: settings.print_histograms,
            stats: settings.print_stats,
            gnuplot: settings.gnuplot.is_some(),
            gnuplot_to_stdout,
        })
    } else if settings.print_histograms {
        Box::new(ModernConsoleWithHistograms)
    } else {
        Box::new(ModernConsole)
    };
    deliver(
        &report,
        console.as_ref(),
        classic,
        &LatscopeJson,
        &settings.outputs,
    )
    .map_err(CommandError::Runtime)?;
    match &settings.gnuplot {
        Some(JsonTarget::Stdout) if !classic => crate::commands::print(&XenomaiGnuplot, &report),
        Some(target @ JsonTarget::File(_)) => {
            write_output(target, &XenomaiGnuplot, &report).map_err(CommandError::Runtime)?
        }
        _ => {}
    }
    Ok(report.exit_code)
}

/// Classic live output: one RTD line per loop of the (single) sampling
/// thread, with the RTT/RTH header pair every `-l` lines, as Xenomai prints.
struct RtdLines {
    enabled: bool,
    to_stderr: bool,
    cadence: HeaderCadence,
    mode: usize,
    period_us: u64,
    priority: i32,
    loop_ns: u64,
    best: i64,
    worst: i64,
}

impl RtdLines {
    fn new(settings: &TimerSettings, to_stderr: bool) -> RtdLines {
        let period_ns = settings.period_us * 1000;
        RtdLines {
            enabled: !settings.quiet,
            to_stderr,
            cadence: HeaderCadence::new(settings.data_lines),
            mode: settings.figure.test_mode(),
            period_us: settings.period_us,
            priority: settings.priority,
            loop_ns: (1_000_000_000 / period_ns).max(1) * period_ns,
            best: i64::MAX,
            worst: i64::MIN,
        }
    }
}

impl TimerProgress for RtdLines {
    fn loops(&mut self, _thread: usize, loops: &[LoopStats], shared: &ThreadShared) {
        let mut text = String::new();
        for l in loops.iter().filter(|l| !l.partial) {
            self.best = self.best.min(l.min_ns);
            self.worst = self.worst.max(l.max_ns);
            if !self.enabled {
                continue;
            }
            if self.cadence.due() {
                let elapsed_s = (l.index + 1) * self.loop_ns / 1_000_000_000;
                text.push_str(&classic_xenomai::rtt_line(
                    elapsed_s,
                    self.mode,
                    self.period_us,
                    self.priority,
                ));
                text.push_str(classic_xenomai::RTH_LINE);
            }
            text.push_str(&classic_xenomai::rtd_line(&LoopLine {
                min_ns: l.min_ns,
                avg_ns: l.avg_ns(),
                max_ns: l.max_ns,
                overruns: shared.overruns.load(Ordering::Relaxed),
                msw: shared.msw.load(Ordering::Relaxed),
                best_ns: self.best,
                worst_ns: self.worst,
            }));
        }
        if !text.is_empty() {
            let mut out: Box<dyn Write> = if self.to_stderr {
                Box::new(std::io::stderr().lock())
            } else {
                Box::new(std::io::stdout().lock())
            };
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    fn tick(&mut self, _elapsed: Duration, _threads: &[Arc<ThreadShared>]) {}

    fn finish(&mut self) {}
}

/// What the progress line keeps per thread.
#[derive(Clone, Copy)]
struct ThreadSoFar {
    samples: u64,
    sum_ns: i128,
    min_ns: i64,
    max_ns: i64,
}

/// Modern live output: once a second on a terminal, one status line on
/// stderr with min/avg/p99/max/overruns of every thread.
struct ProgressLine {
    enabled: bool,
    threads: Vec<ThreadSoFar>,
    last_second: u64,
    printed: bool,
}

impl ProgressLine {
    fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            threads: Vec::new(),
            last_second: 0,
            printed: false,
        }
    }
}

impl TimerProgress for ProgressLine {
    fn loops(&mut self, thread: usize, loops: &[LoopStats], _shared: &ThreadShared) {
        if self.threads.len() <= thread {
            self.threads.resize(
                thread + 1,
                ThreadSoFar {
                    samples: 0,
                    sum_ns: 0,
                    min_ns: i64::MAX,
                    max_ns: i64::MIN,
                },
            );
        }
        let t = &mut self.threads[thread];
        for l in loops {
            t.samples += l.samples;
            t.sum_ns += i128::from(l.sum_ns);
            t.min_ns = t.min_ns.min(l.min_ns);
            t.max_ns = t.max_ns.max(l.max_ns);
        }
    }

    fn tick(&mut self, elapsed: Duration, threads: &[Arc<ThreadShared>]) {
        let second = elapsed.as_secs();
        if !self.enabled || second == self.last_second {
            return;
        }
        self.last_second = second;
        let mut parts = Vec::new();
        for (i, shared) in threads.iter().enumerate() {
            let Some(t) = self.threads.get(i).filter(|t| t.samples > 0) else {
                parts.push(format!("#{i} warming up"));
                continue;
            };
            parts.push(format!(
                "#{i} min {} avg {} p99 {} max {} ovr {}",
                format_ns(t.min_ns),
                format_ns((t.sum_ns / i128::from(t.samples)) as i64),
                format_ns(shared.live.percentile(99.0).unwrap_or(0)),
                format_ns(t.max_ns),
                shared.overruns.load(Ordering::Relaxed)
            ));
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K[{second:>4}s] timer: {}", parts.join(" | "));
        let _ = err.flush();
        self.printed = true;
    }

    fn finish(&mut self) {
        if self.printed {
            super::progress::clear_status_line();
        }
    }
}
