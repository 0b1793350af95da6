//! `latscope suite`: the main job. Runs every available test briefly (the
//! IPC primitives, the timer, the OS noise of one CPU, the hardware's gaps
//! on every CPU, a log-disk writer) and prints one overview table of this
//! machine's latencies.

mod hardware;
mod shares;
mod steps;

use crate::cli::SuiteArgs;
use crate::measure::ipc::PRIMITIVES;
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::EndReason;
use crate::report::console::overview::SuiteOverview;
use crate::rt::sched::{self, Policy};
use crate::settings::VerdictSettings;
use crate::units::values::DEFAULT_RT_PRIORITY;
use std::time::{Duration, Instant};

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
        wide: args.verdict.outputs.width.wide,
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
    /// one CPU, then the hardware's gaps on every CPU, then a log-disk
    /// writer, each in one share of the time (the noise and the hardware at
    /// most a second); every output file is rewritten after each
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
            let share = self.left(shares::HWLAT_SETUP_RESERVE + shares::LOGDISK_SETUP_RESERVE) / 2;
            finished.push(self.measure_hwlat(run, share));
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
}

/// The suite's tests, in the order it runs them.
fn suite_tests() -> impl Iterator<Item = &'static str> {
    PRIMITIVES
        .iter()
        .copied()
        .chain(["timer", "noise", "hwlat", "logdisk"])
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
