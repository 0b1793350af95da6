//! Each kind of test run on a prepared process and turned into report data
//! (`pipeline::FinishedTest`): the measure functions the commands hand the
//! pipeline. The measuring itself is in `ipc`, `timer`, `logdisk` and
//! `noise` (cyclictest's threads in `timer::cyclic`, oslat's phases in
//! `noise::oslat`); here their outcomes become `Series` and `TestResult`s
//! with the facts the validity checks need. A command reaches its test
//! through here (tests/layers.rs).

pub mod cyclictest;
pub mod ipc;
pub mod logdisk;
pub mod noise;
pub mod oslat;
pub mod timer;

use crate::report::{DeadlineSeries, TestResult};
use crate::rt::sched::Reservation;

/// `--policy deadline`: the report's record of the series `label` of
/// `test`, with its missed deadlines and throttled periods.
pub fn deadline_series(
    test: &TestResult,
    label: &str,
    reservation: Reservation,
    (missed_deadlines, throttled_periods): (u64, u64),
) -> DeadlineSeries {
    DeadlineSeries {
        test: test.test.clone(),
        mode: test.mode.clone(),
        series: label.to_string(),
        runtime_ns: reservation.runtime_ns,
        deadline_ns: reservation.deadline_ns,
        period_ns: reservation.period_ns,
        missed_deadlines,
        throttled_periods,
    }
}
