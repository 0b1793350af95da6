//! The suite's steps: the IPC primitives, the timer, the noise of one CPU
//! and a log-disk writer, each in its share of `--duration` (the hardware
//! row, between the noise and the disk, is in hardware.rs).

use super::Suite;
use crate::live::logdisk::ProgressLine as LogdiskProgressLine;
use crate::live::noise::ProgressLine as NoiseProgressLine;
use crate::live::timer::ProgressLine as TimerProgressLine;
use crate::measure::ipc::{self as ipc_run, Mode, PRIMITIVES, SequenceSpec, Tasks};
use crate::measure::{logdisk as logdisk_run, noise as noise_run, timer as timer_run};
use crate::pipeline::{CommandError, FinishedTest, Run};
use crate::rt::sched;
use crate::settings::noise::NoiseSettings;
use crate::settings::timer::TimerSettings;
use crate::settings::{PairLayout, Placement, Timing};
use crate::units::format_run_time;
use crate::units::values::DEFAULT_INTERVAL_US;
use std::time::Duration;

use super::shares::*;

impl Suite {
    pub(super) fn measure_ipc(&self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
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
        // The timer, the noise, the hardware and the log-disk tests get one
        // share of the time each, like each IPC test.
        let shares = PRIMITIVES.len() as u32 + AFTER_IPC;
        let budget = self.total.saturating_sub(self.started.elapsed());
        ipc_run::run_sequence(
            items,
            Some(budget / shares * (shares - AFTER_IPC)),
            self.verdict.quiet,
            run,
            &mut |done| run.checkpoint(done),
            &mut |done, so_far| run.snapshot(done, so_far),
        )
    }

    pub(super) fn measure_timer(&self, run: &mut Run<'_>) -> FinishedTest {
        let left = self.left(TIMER_SETUP_RESERVE + AFTER_TIMER_RESERVE) / AFTER_IPC;
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
    pub(super) fn measure_noise(&self, run: &mut Run<'_>) -> FinishedTest {
        let left = (self.left(AFTER_TIMER_RESERVE) / (AFTER_IPC - 1))
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

    pub(super) fn measure_logdisk(&self, run: &mut Run<'_>, finished: &mut Vec<FinishedTest>) {
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
            // The row stays, `skipped`, with the reason and what to do
            // (said again on stderr after the table).
            Err(why) => finished.push(logdisk_run::skipped_in_suite(
                left,
                self.verdict.max_latency_us,
                &why,
            )),
        }
    }
}
