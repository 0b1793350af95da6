//! The BPF flight recorder of `--trace-spikes`: programs generated at run
//! time on the events the tracefs collector reads (`ACTIVITY` and the
//! system vectors) append compact records to a circular buffer per CPU in
//! one mmapped map, and keep the CPU's current task; nothing leaves the
//! kernel per event. Only for a spike does the collector thread (below
//! every measured task, off the measured CPUs when it can) copy that CPU's
//! window out of the map with plain loads, decode it into `TraceEvent`s and
//! attribute it with `spikes::attribution`, as the tracefs collector does
//! (`spikes::flight`). The spike holds its window until then (`hold.rs`).

use crate::rt::bpf::probe::Unavailable;

pub mod decode;
pub mod hold;
pub mod layout;
pub mod load;
pub mod program;

#[cfg(test)]
mod tests_live;

/// Whether the flight recorder can run here: BPF itself (`rt::bpf::probe`),
/// a kernel with `BPF_FETCH` (`probes::ring::MIN_KERNEL`) and a CPU that
/// keeps stores in order (see `layout.rs`). `Err` is why not.
pub fn check() -> Result<(), Unavailable> {
    if !cfg!(target_arch = "x86_64") {
        return Err(Unavailable(
            "the flight recorder needs x86-64's store ordering".to_string(),
        ));
    }
    crate::probes::ring::check_kernel("the flight recorder reserves records with BPF_FETCH")
}
