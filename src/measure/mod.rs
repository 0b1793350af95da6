//! Each kind of test run on a prepared process and turned into report data
//! (`pipeline::FinishedTest`): the measure functions the commands hand the
//! pipeline. The measuring itself is in `ipc`, `timer`, `logdisk` and
//! `noise` (cyclictest's threads in `timer::cyclic`, oslat's phases in
//! `noise::oslat`); here their outcomes become `Series` and `TestResult`s
//! with the facts the validity checks need. A command reaches its test
//! through here (tests/suite/layers.rs).

pub mod cyclicdeadline;
pub mod cyclictest;
pub mod hwlat;
pub mod ipc;
pub mod logdisk;
pub mod noise;
pub mod oslat;
pub mod pi_stress;
pub mod rt_migrate;
pub mod signaltest;
pub mod timer;
