//! latscope: latency measurements a real-time Linux system lives by.
//!
//! `cli` declares the command line, `settings` validates it, `commands` runs
//! the subcommands on the measuring core (`ipc`, `stats`, `rt`) and `report`
//! holds the result model and its exporters.

pub mod cli;
pub mod commands;
pub mod doctor;
pub mod ipc;
pub mod load;
pub mod logdisk;
pub mod report;
pub mod rt;
pub mod settings;
pub mod spikes;
pub mod stats;
pub mod threshold;
pub mod timer;
pub mod units;
