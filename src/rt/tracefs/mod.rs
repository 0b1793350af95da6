//! Kernel tracing through tracefs: access only, whatever is traced.
//!
//! - `BreakTrace`: mark and freeze the global trace when a limit is crossed.
//! - `TraceRun`: a private instance clocked on CLOCK_MONOTONIC and the reader
//!   thread that feeds its events, in time order, to a `Consumer`. What the
//!   events mean is the consumer's: the timer breakdown's pairing of
//!   wake-ups (`probes::wakeups::session`, beside its BPF sibling) and the
//!   spike attribution of `--trace-spikes` (`crate::spikes`).
//!
//! The pieces, each with one job: `mount` finds (or mounts) tracefs,
//! `instance` owns the private instance, `format` reads the kernel's record
//! layouts, `ring` decodes binary ring-buffer pages, `events` turns records
//! into events (one decoder keyed by event name), `merge` restores time order
//! across CPUs, `reader` is the thread that drives them into a `Consumer`,
//! and `session` ties them into a `TraceRun`.

mod breaktrace;
pub mod events;
pub mod format;
pub mod instance;
pub mod merge;
pub mod mount;
pub mod reader;
pub mod ring;
mod session;

#[cfg(test)]
pub(crate) mod tests_fixture;
#[cfg(test)]
pub(crate) mod tests_live;

pub use breaktrace::BreakTrace;
pub use session::{
    RunEnd, TraceOptions, TraceRun, check_tracefs, check_usable, check_usable_at, cpumask, enable,
    has_event, pid_filter, tracefs_for,
};
