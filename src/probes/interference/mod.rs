//! The interference counter of `latscope hwlat`'s bpf tier: what the
//! kernel's osnoise/hwnoise tracers keep, on a stock kernel. Programs on
//! every IRQ, x86 system vector, softirq, NMI and context switch add 1 to
//! their CPU's counter in one mmapped map and note the cause in a small
//! ring (`layout.rs`, `program.rs`); a sampler pinned on the CPU reads the
//! counter with one load around each pair of clock reads (`read.rs`), and
//! a gap across which it did not move is hardware time (`verdict.rs`, for
//! hwlat's pairs and noise's spinner alike). `load.rs` creates the map and
//! hooks the programs.

use crate::rt::bpf::probe::Unavailable;

pub mod layout;
pub mod load;
pub mod program;
pub mod read;
pub mod verdict;

#[cfg(test)]
mod tests;

/// The oldest kernel whose verifier takes the atomic fetch-and-add that
/// numbers the events (`BPF_FETCH`, Linux 5.12).
pub const MIN_KERNEL: (u32, u32) = (5, 12);

/// Whether the counter can run here: BPF itself (`rt::bpf::probe`) and a
/// kernel with `BPF_FETCH`. `Err` is why not.
pub fn check() -> Result<(), Unavailable> {
    let release = crate::rt::bpf::probe::Facts::live().release;
    if let Some(version) = crate::rt::bpf::probe::kernel_version(&release)
        && version < MIN_KERNEL
    {
        return Err(Unavailable(format!(
            "kernel {release} is older than {}.{} (the interference counter numbers events with BPF_FETCH)",
            MIN_KERNEL.0, MIN_KERNEL.1
        )));
    }
    crate::rt::bpf::probe::check()
}
