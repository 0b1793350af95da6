//! `latscope suite`: the main job. Runs every available test briefly (the
//! IPC primitives, the timer, the OS noise of one CPU, a log-disk writer)
//! and prints one overview table of this machine's latencies.

use crate::cli::SuiteArgs;
use crate::ipc::PRIMITIVES;
use crate::ipc::harness::{Mode, Tasks};
use crate::live::logdisk::ProgressLine as LogdiskProgressLine;
use crate::live::noise::ProgressLine as NoiseProgressLine;
use crate::live::timer::ProgressLine as TimerProgressLine;
use crate::measure::ipc::{self as ipc_run, SequenceSpec};
use crate::measure::{logdisk as logdisk_run, noise as noise_run, timer as timer_run};
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::EndReason;
use crate::report::console::overview::SuiteOverview;
use crate::rt::sched::{self, Policy};
use crate::settings::noise::NoiseSettings;
use crate::settings::timer::TimerSettings;
use crate::settings::{PairLayout, Placement, Timing, VerdictSettings};
use crate::units::format_run_time;
use crate::units::values::{DEFAULT_INTERVAL_US, DEFAULT_RT_PRIORITY};
use std::time::{Duration, Instant};

/// Time the timer test needs besides measuring (threads, report).
const TIMER_SETUP_RESERVE: Duration = Duration::from_millis(20);
/// Time the noise test needs besides measuring (its thread, the start).
const NOISE_SETUP_RESERVE: Duration = Duration::from_millis(20);
/// The noise row is short: one CPU for at most this long.
const NOISE_AT_MOST: Duration = Duration::from_secs(1);
/// Time the log-disk test needs besides measuring (two 1 MiB files written
/// out and removed).
const LOGDISK_SETUP_RESERVE: Duration = Duration::from_millis(60);

pub fn run(args: &SuiteArgs) -> Result<i32, CommandError> {
    let total = args.duration;
    let verdict = VerdictSettings::from_args(&args.verdict)?;
    // The whole command, checks included, ends within --duration.
    let started = Instant::now();
    let realtime = sched::can_use_realtime();
    if !realtime {
        crate::rt::stdio::note_line(&format!(
            "latscope: note: real-time priority is not available to this user; measuring at normal priority ({})",
            sched::RT_PRIVILEGE_FIX
        ));
    }
    let (policy, priority) = if realtime {
        (Policy::Fifo, DEFAULT_RT_PRIORITY as i32)
    } else {
        (Policy::Other, 0)
    };
    pipeline::run(&mut Suite {
        total,
        started,
        policy,
        priority,
        verdict,
        wide: args.wide,
    })
}

struct Suite {
    wide: bool,
    total: Duration,
    started: Instant,
    policy: Policy,
    priority: i32,
    verdict: VerdictSettings,
}

impl Measurement for Suite {
    fn plan(&self) -> Plan {
        Plan {
            // A failing mlockall is reported, not fatal: the overview runs
            // for any user.
            prepare: PrepareSpec {
                lock_memory: true,
                require_mlock: false,
                hold_dma_latency: true,
                loads: self.verdict.loads.clone(),
                cpus: sched::allowed_cpus(),
            },
            fail_if: self.verdict.fail_if.clone(),
            actions: self.verdict.actions.clone(),
            breaks: None,
            outputs: self.verdict.outputs.clone(),
            presentation: Presentation::modern(Box::new(SuiteOverview { wide: self.wide })),
        }
    }

    /// Every IPC primitive one-way, then the timer, then the OS noise of
    /// one CPU, then a log-disk writer, each in one share of the time (the
    /// noise at most a second); every output file is rewritten after each
    /// test, so a crash of a later test leaves the earlier results.
    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let mut finished = self.measure_ipc(run)?;
        if !interrupted(&finished) {
            finished.push(self.measure_timer(run));
            run.checkpoint(&finished);
        }
        if !interrupted(&finished) {
            finished.push(self.measure_noise(run));
            run.checkpoint(&finished);
        }
        if !interrupted(&finished) {
            self.measure_logdisk(run, &mut finished);
        }
        if interrupted(&finished) {
            let not_run = not_run(&finished);
            if !not_run.is_empty() {
                run.warn(format!(
                    "interrupted: not run: {} (the table shows the tests that ran)",
                    not_run.join(", ")
                ));
            }
        }
        Ok(finished)
    }
}

impl Suite {
    /// The time left, less `reserve`, but at least 10 ms.
    fn left(&self, reserve: Duration) -> Duration {
        self.total
            .saturating_sub(self.started.elapsed())
            .saturating_sub(reserve)
            .max(Duration::from_millis(10))
    }

    fn measure_ipc(&self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        // One pinned pair per usable CPU, all at the same priority (-S).
        let layout = PairLayout {
            count: sched::allowed_cpus().len() as u64,
            placement: Placement::Spread,
            policy: self.policy,
            priority: self.priority,
            same_priority: true,
        };
        let items = ipc_run::sequence(&SequenceSpec {
            primitives: &PRIMITIVES,
            modes: &[Mode::OneWay],
            layout: &layout,
            timing: Timing {
                interval_us: DEFAULT_INTERVAL_US,
                distance_us: 0,
                loops: None,
            },
            tasks: Tasks::Threads,
            cross_cpu: false,
            // Set per test from the time left (see run_sequence).
            per_test: None,
            max_latency_us: self.verdict.max_latency_us,
            spike_threshold_ns: None,
            collector: crate::rt::bpf::CollectorChoice::Auto,
            prep: run.prep,
        })?;
        // The timer, the noise and the log-disk tests get one share of the
        // time each, like each IPC test.
        let shares = PRIMITIVES.len() as u32 + 3;
        let budget = self.total.saturating_sub(self.started.elapsed());
        Ok(ipc_run::run_sequence(
            items,
            Some(budget / shares * (shares - 3)),
            self.verdict.quiet,
            run,
            &mut |done| run.checkpoint(done),
            &mut |done, so_far| run.snapshot(done, so_far),
        ))
    }

    fn measure_timer(&self, run: &mut Run<'_>) -> FinishedTest {
        let left = self.left(TIMER_SETUP_RESERVE + NOISE_SETUP_RESERVE + LOGDISK_SETUP_RESERVE) / 3;
        let left = left.max(Duration::from_millis(10));
        let mut settings = TimerSettings::for_suite(self.policy, self.priority, left);
        // --max-latency bounds the wake-up tests: the IPC rows and this one.
        settings.max_latency_us = self.verdict.max_latency_us;
        if !self.verdict.quiet {
            crate::rt::stdio::note_line(&format!(
                "latscope: running timer (one thread per CPU, {} us period) for {} ...",
                settings.period_us,
                format_run_time(left)
            ));
        }
        let mut progress = TimerProgressLine::new(self.verdict.quiet);
        match timer_run::measure(&settings, run, &mut progress) {
            Ok((done, own_warnings, _)) => {
                for warning in own_warnings {
                    run.warn(warning);
                }
                done
            }
            Err(e) => timer_run::failed(&settings, run.prep, e),
        }
    }

    /// The noise of one CPU (the last usable one) at SCHED_OTHER: what the
    /// system takes from a task that never sleeps.
    fn measure_noise(&self, run: &mut Run<'_>) -> FinishedTest {
        let left = (self.left(NOISE_SETUP_RESERVE + LOGDISK_SETUP_RESERVE) / 2)
            .clamp(Duration::from_millis(10), NOISE_AT_MOST);
        // No --max-latency here: it bounds wake-ups, and an interruption of
        // a spinning thread is not one (suite --help says so).
        let settings = NoiseSettings::for_suite(left);
        if !self.verdict.quiet {
            crate::rt::stdio::note_line(&format!(
                "latscope: running noise (a thread spinning on CPU {}, normal priority) for {} ...",
                crate::units::cpu_list(&settings.cpus),
                format_run_time(left)
            ));
        }
        let mut progress = NoiseProgressLine::new(self.verdict.quiet);
        let mut done = match noise_run::measure(&settings, run, &mut progress) {
            Ok((done, own_warnings)) => {
                for warning in own_warnings {
                    run.warn(warning);
                }
                done
            }
            Err(e) => noise_run::failed(&settings, run.prep, e),
        };
        // This row is at normal priority by design (what the system takes
        // from an ordinary task that never sleeps), as the log-disk writer
        // is: the real-time advice of the other rows is not for it.
        done.facts.scheduling_free = true;
        done
    }

    fn measure_logdisk(&self, run: &mut Run<'_>, finished: &mut Vec<FinishedTest>) {
        let left = self.left(LOGDISK_SETUP_RESERVE);
        if !self.verdict.quiet {
            crate::rt::stdio::note_line(&format!(
                "latscope: running logdisk (4 KiB O_DSYNC writes, 2 files of 1 MiB in a private directory here) for {} ...",
                format_run_time(left)
            ));
        }
        let mut progress = LogdiskProgressLine::new(self.verdict.quiet);
        // A durable write is not a wake-up: --max-latency leaves it alone.
        match logdisk_run::measure_for_suite(left, None, run, &mut progress) {
            Ok(done) => finished.extend(done),
            Err(why) => {
                let note = format!("logdisk skipped: {why}");
                crate::rt::stdio::note_line(&format!("latscope: note: {note}"));
                run.warn(note);
            }
        }
    }
}

/// The suite's tests, in the order it runs them.
fn suite_tests() -> impl Iterator<Item = &'static str> {
    PRIMITIVES
        .iter()
        .copied()
        .chain(["timer", "noise", "logdisk"])
}

/// The suite's tests that an interrupt left out, in their order.
fn not_run(finished: &[FinishedTest]) -> Vec<&'static str> {
    suite_tests()
        .filter(|name| !finished.iter().any(|t| t.result.test == *name))
        .collect()
}

fn interrupted(finished: &[FinishedTest]) -> bool {
    finished
        .last()
        .is_some_and(|t| t.result.end_reason == EndReason::Interrupted)
}
