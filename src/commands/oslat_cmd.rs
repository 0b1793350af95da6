//! `latscope oslat` / the `oslat` compat name: rt-tests 2.40 oslat's
//! options (settings::oslat), its lines while it runs (the version, the
//! header block, "Pre-heat ...", the bias, "Test starts..."), its final
//! block and `--json` (report::classic_oslat) through the pipeline's
//! classic presentation, so that latscope's own warnings go to stderr only.
//! The spinning is `noise::oslat` on THE spinning loop.

use crate::noise::counter::Counter;
use crate::noise::oslat::{self as run_oslat, Buckets, OslatPlan, PhaseOutcome};
use crate::pipeline::{
    self, CommandError, CpuWindow, FinishedTest, Measurement, Plan, PrepareSpec, Presentation,
    RunFacts,
};
use crate::report::classic_oslat::ClassicOslat;
use crate::report::json::OslatJson;
use crate::report::{
    ConfigDetail, EndReason, NoiseConfig, NoiseCpu, OslatCpu, Series, SeriesDetail, TestConfig,
    TestResult,
};
use crate::rt::sched::Policy;
use crate::rt::tracefs::BreakTrace;
use crate::settings::oslat::{Machine, OslatSettings, OslatUsage};
use crate::settings::{Outputs, UsageError, check_output_path};
use crate::stats::LatencySummary;
use std::io::Write;
use std::time::{Duration, SystemTime};

/// The version line oslat prints first, whatever the options: latscope
/// stands in for rt-tests 2.40's oslat, and scripts read this line.
const VERSION_LINE: &str = "oslat V 2.40\n";

/// What a sample is, for the report.
const DESCRIPTION: &str =
    "oslat: every gap between two counter reads of a spinning thread, in whole microseconds";

/// `latscope oslat ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    // clap hands over the words after an explicit `--` too; the compat name
    // always puts one first.
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    print(VERSION_LINE);
    let usage = || {
        print(
            crate::settings::oslat::HELP
                .split_once('\n')
                .map_or("", |(_, rest)| rest),
        )
    };
    let machine = crate::doctor::Machine::live();
    let isolated = crate::doctor::isolation::isolated_cpus(&machine);
    let (rt_runtime_us, rt_period_us) = crate::doctor::sched::rt_bandwidth(&machine);
    let allowed = crate::rt::sched::allowed_cpus();
    // SAFETY: sysconf has no preconditions.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    let parsed = OslatSettings::parse(
        args,
        &Machine {
            allowed: &allowed,
            configured,
            isolated: &isolated,
            rt_runtime_us,
        },
    );
    let settings = match parsed {
        Ok(s) => s,
        Err(OslatUsage::Getopt(message)) => {
            let _ = writeln!(std::io::stderr(), "{}: {message}", program_name());
            usage();
            return Ok(1);
        }
        Err(OslatUsage::Help) => {
            usage();
            return Ok(0);
        }
        Err(OslatUsage::Version) => return Ok(0),
        Err(OslatUsage::Invalid(line)) => {
            print(&format!("{line}\n"));
            return Ok(1);
        }
        Err(OslatUsage::Fatal(text)) => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            return Ok(1);
        }
        Err(OslatUsage::Bad(message)) => return Err(UsageError(message).into()),
    };
    let json = settings
        .json
        .as_deref()
        .map(|p| check_output_path("--json", p))
        .transpose()?;
    let mut command = OslatCommand {
        outputs: Outputs {
            json,
            ..Outputs::default()
        },
        isolated,
        rt_runtime_us,
        rt_period_us,
        settings,
        triggered: false,
    };
    let code = pipeline::run(&mut command)?;
    // oslat quits with 1 after `-T` stopped it.
    Ok(if command.triggered { 1 } else { code })
}

/// The name oslat's messages start with (its argv[0]).
fn program_name() -> String {
    crate::cli::getopt_program_name(crate::cli::OSLAT_COMPAT)
}

/// Writes `text` to standard output at once (oslat's lines while it runs).
fn print(text: &str) {
    let mut out = crate::rt::stdio::out();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

struct OslatCommand {
    settings: OslatSettings,
    outputs: Outputs,
    isolated: Vec<usize>,
    rt_runtime_us: Option<i64>,
    rt_period_us: Option<i64>,
    /// `-T` stopped the test.
    triggered: bool,
}

impl Measurement for OslatCommand {
    fn plan(&self) -> Plan {
        Plan {
            prepare: PrepareSpec {
                // oslat locks its memory (and fails without it).
                lock_memory: true,
                require_mlock: true,
                // oslat leaves the CPU idle states alone: so does its drop-in,
                // so that their figures compare.
                hold_dma_latency: false,
                loads: Vec::new(),
                cpus: self.settings.cpus.clone(),
            },
            fail_if: Vec::new(),
            outputs: self.outputs.clone(),
            presentation: Presentation {
                console: Box::new(ClassicOslat {
                    zero_omit: self.settings.zero_omit,
                }),
                classic: true,
                json: Box::new(OslatJson),
            },
        }
    }

    fn measure(&mut self, run: &mut pipeline::Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let s = &self.settings;
        if s.rtprio.is_some() && s.cpus.contains(&0) {
            print("WARNING: Running SCHED_FIFO workload on CPU 0 may hang the thread\n");
        }
        crate::rt::sched::pin_current_thread(s.cpu_main_thread)
            .map_err(|e| CommandError::Runtime(format!("-C {}: {e}", s.cpu_main_thread)))?;
        let trace = match s.trace_threshold_us {
            None => None,
            Some(_) => match BreakTrace::open() {
                Ok(t) => Some(t),
                Err(why) => {
                    run.warn(format!("-T: {why}; the run still stops at the threshold"));
                    None
                }
            },
        };
        let plan = OslatPlan {
            cpus: s.cpus.clone(),
            rtprio: s.rtprio,
            bucket_size: s.bucket_size,
            bias: s.bias,
            single_preheat: s.single_preheat,
            memmove_bytes: s.memmove_bytes(),
            trace_threshold_us: s.trace_threshold_us,
            duration_ns: s.runtime_s.saturating_mul(1_000_000_000),
            counter: Counter::detect(),
        };
        if !s.quiet {
            print(&s.header());
            print("Pre-heat for 1 seconds...\n");
        }
        let app_name = program_name();
        // oslat's output has no place for a snapshot: a SIGUSR1 is said on
        // standard error and the run goes on.
        let mut wait = |timeout| {
            let stop = crate::rt::signals::stop_signalled(timeout);
            if crate::rt::signals::take_snapshot_request() {
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"latscope: no snapshot (SIGUSR1) of the oslat drop-in (its output has no \
                      place for one); the run goes on\n",
                );
            }
            stop
        };
        let preheat = run_oslat::run_phase(&plan, true, 0, None, &app_name, &mut wait)
            .map_err(CommandError::Runtime)?;
        let window = CpuWindow::open();
        let started = SystemTime::now();
        let (test, end_reason) = if preheat.interrupted {
            // Stopped in the pre-heat: no test; its block says nothing ran.
            let empty = PhaseOutcome {
                threads: plan
                    .cpus
                    .iter()
                    .map(|&c| {
                        (
                            c,
                            Buckets::new(plan.counter.scale().mhz(), s.bucket_size, 0, None),
                            0,
                        )
                    })
                    .collect(),
                interrupted: true,
                triggered: None,
            };
            (empty, EndReason::Interrupted)
        } else {
            let bias = if s.bias { preheat.min_us() } else { 0 };
            if s.bias {
                print(&format!("Global bias set to {bias} (us)\n"));
            }
            if !s.quiet {
                print("Test starts...\n");
            }
            let test = run_oslat::run_phase(&plan, false, bias, trace, &app_name, &mut wait)
                .map_err(CommandError::Runtime)?;
            let reason = match (test.triggered, test.interrupted) {
                (Some(_), _) => EndReason::BreakTrace,
                (None, true) => EndReason::Interrupted,
                (None, false) => EndReason::DurationElapsed,
            };
            (test, reason)
        };
        let ended = SystemTime::now();
        let cpu_use = window.close();
        if let (Some((cpu, us)), Some(threshold)) = (test.triggered, s.trace_threshold_us) {
            self.triggered = true;
            let _ = std::io::stderr()
                .write_all(run_oslat::trigger_message(&app_name, threshold, cpu, us).as_bytes());
        } else if !s.quiet {
            print("Test completed.\n\n");
        }
        let usage = cpu_use.of(&s.cpus);
        let figures = run_oslat::figures_of(&test);
        let elapsed = Duration::from_secs_f64(
            figures
                .iter()
                .map(|(_, f)| f.duration_s)
                .fold(0.0, f64::max),
        );
        let series: Vec<Series> = figures
            .into_iter()
            .map(|(cpu, f)| self.series_of(cpu, f))
            .collect();
        let overall = overall_of(&series);
        let facts = RunFacts {
            elapsed,
            priority_option: Some("-f"),
            ..RunFacts::measured(s.rtprio.is_some(), &s.cpus, usage, &series, None)
        };
        let result = TestResult {
            test: "oslat".to_string(),
            description: DESCRIPTION.to_string(),
            mode: "every-gap".to_string(),
            config: self.config_of(run.prep.memory.is_locked(), &plan),
            end_reason,
            error: None,
            overall,
            series,
            overall_detail: None,
            spikes: None,
            started_s: None,
        };
        Ok(vec![FinishedTest {
            result,
            started,
            ended,
            elapsed,
            facts,
        }])
    }
}

impl OslatCommand {
    fn policy(&self) -> (Policy, i32) {
        match self.settings.rtprio {
            Some(p) => (Policy::Fifo, p),
            None => (Policy::Other, 0),
        }
    }

    fn config_of(&self, mlockall: bool, plan: &OslatPlan) -> TestConfig {
        let (policy, priority) = self.policy();
        TestConfig {
            policy: policy.to_string(),
            priority,
            loops: None,
            duration_s: Some(self.settings.runtime_s as f64),
            max_latency_us: None,
            mlockall,
            cpu_dma_latency: "not requested".to_string(),
            detail: ConfigDetail::Noise(NoiseConfig {
                cpus: self.settings.cpus.clone(),
                cpus_from: "named".to_string(),
                // Every gap is a sample.
                threshold_ns: 0,
                runtime_ns: plan.duration_ns,
                period_ns: plan.duration_ns,
                clock: plan.counter.describe(),
                rt_runtime_us: self.rt_runtime_us,
                rt_period_us: self.rt_period_us,
                forced: false,
            }),
        }
    }

    fn series_of(&self, cpu: usize, f: OslatCpu) -> Series {
        let (policy, priority) = self.policy();
        let loops: u64 = f.buckets.iter().sum();
        let first_label_us = f.bias_us + 1;
        // The time in gaps above the first bucket (oslat's resolution).
        let noise_us = (f.average_us * loops as f64
            - f.buckets.first().copied().unwrap_or(0) as f64 * first_label_us as f64)
            .max(0.0);
        let measured_ns = (f.duration_s * 1e9) as u64;
        let noise_ns = (noise_us * 1000.0) as u64;
        Series {
            label: format!("CPU {cpu}"),
            cpus: vec![cpu],
            pinned: true,
            policy: policy.to_string(),
            priority,
            overruns: 0,
            above_limit: 0,
            latency: summary_of(&f, loops),
            per_second: Vec::new(),
            per_second_dropped: 0,
            detail: SeriesDetail::NoiseCpu(Box::new(NoiseCpu {
                cpu,
                tid: 0,
                isolated: self.isolated.contains(&cpu),
                measured_ns,
                noise_ns,
                noise_percent: if measured_ns > 0 {
                    noise_ns as f64 * 100.0 / measured_ns as f64
                } else {
                    0.0
                },
                loops,
                loops_per_s: if f.duration_s > 0.0 {
                    loops as f64 / f.duration_s
                } else {
                    0.0
                },
                causes: None,
                oslat: Some(f),
            })),
        }
    }
}

/// A series' summary from oslat's figures (us resolution; the buckets as
/// the histogram, no percentiles: oslat keeps none).
fn summary_of(f: &OslatCpu, loops: u64) -> LatencySummary {
    let us = |n: u64| i64::try_from(n.saturating_mul(1000)).unwrap_or(i64::MAX);
    LatencySummary {
        samples: loops,
        min_ns: us(f.min_us),
        avg_ns: f.average_us * 1000.0,
        max_ns: us(f.max_us),
        stddev_ns: 0.0,
        min_at_sample: 0,
        max_at_sample: 0,
        last_ns: 0,
        percentiles: Vec::new(),
        histogram: f
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(j, &count)| {
                let low = f.bias_us + j as u64;
                crate::stats::Bucket {
                    low_ns: us(low),
                    high_ns: if j + 1 == f.buckets.len() {
                        us(f.max_us.max(low + 1))
                    } else {
                        us(low + 1)
                    },
                    count,
                }
            })
            .collect(),
        overflow: 0,
    }
}

/// Every CPU together: the smallest minimum, the largest maximum, the
/// average weighted by loops.
fn overall_of(series: &[Series]) -> LatencySummary {
    let samples: u64 = series.iter().map(|s| s.latency.samples).sum();
    let with = || series.iter().filter(|s| s.latency.samples > 0);
    LatencySummary {
        samples,
        min_ns: with().map(|s| s.latency.min_ns).min().unwrap_or(0),
        avg_ns: if samples == 0 {
            0.0
        } else {
            with()
                .map(|s| s.latency.avg_ns * s.latency.samples as f64)
                .sum::<f64>()
                / samples as f64
        },
        max_ns: with().map(|s| s.latency.max_ns).max().unwrap_or(0),
        stddev_ns: 0.0,
        min_at_sample: 0,
        max_at_sample: 0,
        last_ns: 0,
        percentiles: Vec::new(),
        histogram: Vec::new(),
        overflow: 0,
    }
}
