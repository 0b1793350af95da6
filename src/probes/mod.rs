//! Every program latscope runs in the kernel, in one home, by family, on
//! the mechanism of `rt::bpf` (emitter, system calls, BTF, attachment):
//!
//! - `wakeups`: the timer breakdown's wake-up slots (`--breakdown`): one
//!   slot per CPU that the sampling thread reads after each wake-up.
//! - `recorder`: the flight recorder of `--trace-spikes` (timer, noise,
//!   IPC): per-CPU circular buffers of scheduler, IRQ and softirq events,
//!   read only for a spike (its collector thread is `spikes::flight`).
//! - `interference`: `latscope hwlat`'s bpf tier: a per-CPU counter of
//!   IRQs, system vectors, softirqs, NMIs and switches, with the last
//!   causes, read by the user-space sampler with one load.
//!
//! What every family shares: `hook` attaches one program to one event the
//! cheapest way the kernel takes (tp_btf, raw tracepoint, classic
//! tracepoint), the family saying which ways it can be written for and
//! how (`generate`); a refusal saves the verifier's whole log with the
//! program's listing; `choice` decides between BPF and tracefs for every
//! option that collects kernel events; `listings` gives every program's
//! listing, for `doctor --bpf` and the golden listings the unit tests
//! compare (`golden/`); `cost` times one run of an empty program on each
//! way and counts the programs each family puts on a wake-up (`doctor
//! --bpf`); `ring` is what the recorder and the interference counter
//! share: a per-CPU area of one mmapped array holding a ring of entries
//! under commit words, its layout and the emitted steps that write it. A
//! new family (a per-CPU interference counter read
//! by a user-space sampler, say) is a module here with its generator, its
//! ladder and its entry in `listings`.

pub mod choice;
pub mod cost;
pub mod error;
pub mod hook;
pub mod interference;
pub mod listings;
pub mod recorder;
pub mod ring;
pub mod wakeups;

pub use error::ProbeError;
pub use hook::{AttachWay, Event, EventView, Hooked, KernelTypes, hook};

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod interpreter;
#[cfg(test)]
mod tests_live;

#[cfg(test)]
mod golden;
