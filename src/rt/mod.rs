//! The operating-system layer: clocks, scheduling, memory locking, power
//! management latency, tracing and system facts. Everything that talks to the
//! kernel directly lives here so the measuring code reads as plain logic.

pub mod barrier;
pub mod bpf;
pub mod cgroup;
pub mod clock;
pub mod cpuidle;
pub mod dma_latency;
pub mod fifo;
pub mod klog;
pub mod oom;
pub mod outfile;
pub mod parent;
pub mod perf;
pub mod pmu;
pub mod pod_cpus;
pub mod private_dir;
pub mod procstat;
pub mod registry;
pub mod sched;
pub mod self_exec;
pub mod setup;
pub mod shm;
pub mod signals;
pub mod smi;
pub mod snapshot;
pub mod stdio;
pub mod sysinfo;
pub mod terminal;
pub mod ticks;
pub mod tracefs;

use std::io;

/// An I/O error as a message shows it: the system's text without Rust's
/// "(os error N)". Here, in the OS layer, because every layer reports
/// system errors (the registry, the settings' checks, the log-disk files).
pub fn os_error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_has_no_os_error_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(os_error_text(&e), "No space left on device");
    }
}
