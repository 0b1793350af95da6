//! Each kind of test run on a prepared process and turned into report data
//! (`pipeline::FinishedTest`): the measure functions the commands hand the
//! pipeline. The measuring itself is in `ipc`, `timer` and `logdisk`; here
//! their outcomes become `Series` and `TestResult`s with the facts the
//! validity checks need.

pub mod ipc;
pub mod logdisk;
pub mod noise;
pub mod timer;
