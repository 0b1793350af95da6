//! Kernel tracing through tracefs.
//!
//! - `BreakTrace`: mark and freeze the global trace when a limit is crossed.
//! - `WakeupTrace`: the timer test's kernel-side breakdown. For periodic
//!   sampling threads it records, per wake-up, when the timer interrupt ran
//!   and when the thread got the CPU, relative to the expiry, from the
//!   standard events `hrtimer_start`, `hrtimer_expire_entry` and
//!   `sched_switch` in a private instance clocked on CLOCK_MONOTONIC.
//!
//! - `TraceRun` with another consumer: the spike attribution of
//!   `--trace-spikes` (`crate::spikes`), from the scheduler, IRQ and softirq
//!   events of the measured CPUs.
//!
//! The pieces, each with one job: `mount` finds (or mounts) tracefs,
//! `instance` owns the private instance, `format` reads the kernel's record
//! layouts, `ring` decodes binary ring-buffer pages, `events` turns records
//! into events (one decoder keyed by event name), `merge` restores time order
//! across CPUs, `wakeups` pairs events into records, `reader` is the thread
//! that drives them into a `Consumer`, and `session` ties them into a
//! `TraceRun` (any session) and `WakeupTrace` (the breakdown).

mod breaktrace;
pub mod events;
pub mod format;
pub mod instance;
pub mod merge;
pub mod mount;
pub mod reader;
pub mod ring;
mod session;
pub mod wakeups;

#[cfg(test)]
mod tests_fixture;
#[cfg(test)]
mod tests_live;

pub use breaktrace::BreakTrace;
pub use session::{
    RunEnd, TraceOptions, TraceRun, TraceStats, WakeupTrace, check_available, check_tracefs,
    cpumask, enable, has_event, pid_filter, tracefs_for,
};
pub use wakeups::{TracedThread, WakeupRecord};
