//! latscope: latency measurements a real-time Linux system lives by.
//!
//! `cli` declares the command line, `settings` validates it, `commands` runs
//! the subcommands; the measuring ones go through `pipeline` (the one run
//! sequence) with a measure function from `measure` on the measuring core
//! (`ipc`, `timer`, `logdisk`, on `stats` and `rt`); `live` shows a run while
//! it goes on; `report` holds the result model and its exporters.

pub mod cli;

/// The system allocator; running out of memory is one line and exit 1
/// (rt::oom), in both binaries.
#[global_allocator]
static ALLOCATOR: rt::oom::ExitOnOom = rt::oom::ExitOnOom;

pub mod commands;
pub mod compare;
pub mod doctor;
pub mod entry;
pub mod hwlat;
pub mod ipc;
pub mod kernel_log;
pub mod live;
pub mod load;
pub mod logdisk;
pub mod measure;
pub mod noise;
pub mod pipeline;
pub mod probes;
pub mod report;
pub mod rt;
pub mod samples;
pub mod settings;
pub mod spikes;
pub mod stats;
#[doc(hidden)]
pub mod testing;
pub mod threshold;
pub mod timer;
pub mod units;
