//! The operating-system layer: clocks, scheduling, memory locking, power
//! management latency, tracing and system facts. Everything that talks to the
//! kernel directly lives here so the measuring code reads as plain logic.

pub mod clock;
pub mod dma_latency;
pub mod kmsg;
pub mod outfile;
pub mod procstat;
pub mod registry;
pub mod sched;
pub mod shm;
pub mod signals;
pub mod stdio;
pub mod sysinfo;
pub mod tracefs;
