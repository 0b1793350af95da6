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
pub mod tier;
pub mod verdict;

#[cfg(test)]
mod tests;

/// Whether the counter can run here: BPF itself (`rt::bpf::probe`) and a
/// kernel with `BPF_FETCH` (`probes::ring::MIN_KERNEL`). `Err` is why not.
pub fn check() -> Result<(), Unavailable> {
    check_with(
        &crate::rt::bpf::probe::Facts::live(),
        &crate::rt::bpf::probe::try_the_system_call,
    )
}

/// `check` on `facts` (a machine's files: the doctor's fixtures too), with
/// `try_call` for what only the bpf() system call tells.
pub fn check_with(
    facts: &crate::rt::bpf::probe::Facts,
    try_call: &dyn Fn() -> Result<(), Unavailable>,
) -> Result<(), Unavailable> {
    crate::probes::ring::check_kernel_with(
        facts,
        try_call,
        "the interference counter numbers events with BPF_FETCH",
    )
}
