//! The interference counter's memory: one slot per CPU (key = CPU number)
//! in one `BPF_F_MMAPABLE` array map, written by the programs of that CPU
//! only and read by the sampler pinned there with plain loads.
//!
//! A slot is a header and a small ring of the last causes:
//! - `COUNT`: every IRQ, system vector, softirq, NMI and context switch of
//!   the CPU adds 1 (an atomic fetch-and-add: the value before the add is
//!   the event's number `i`). The sampler reads this word alone around
//!   each pair of clock reads: one load.
//! - `NMIS` and `NMI_NS`: the NMI handlers' runs and their time.
//! - `RING_SLOTS` entries, event `i` in entry `i % RING_SLOTS`: what it
//!   was (kind, number; for a switch both tasks). An entry is cleared
//!   (`SEQ = 0`), written, then committed with `SEQ = i + 1`, last, so a
//!   reader that copies an entry between two loads of its `SEQ` knows it
//!   whole when both say the same (x86 keeps stores in order). A gap whose
//!   counter went from `a` to `b` had the events whose `SEQ` is in
//!   `(a, b]`: the last `RING_SLOTS` of them are still in the ring.

use crate::probes::ring::RingLayout;

/// Offsets in a slot's header.
pub mod header {
    /// u64: events counted so far.
    pub const COUNT: usize = 0;
    /// u64: NMI handler runs.
    pub const NMIS: usize = 8;
    /// u64: their time, ns (`nmi_handler`'s `delta_ns`).
    pub const NMI_NS: usize = 16;
    /// The header's size (a cache line: the ring starts on the next).
    pub const SIZE: usize = 64;
}

/// Offsets in one ring entry.
pub mod entry {
    /// u64: the event's number + 1 once whole, 0 while being written.
    pub const SEQ: usize = 0;
    /// u32: `super::Kind` code.
    pub const KIND: usize = 8;
    /// u32: the IRQ number, the vector's index, the softirq's number, the
    /// task switched in (pid), or an NMI's run (ns, low 32 bits).
    pub const NUMBER: usize = 12;
    /// u32: a switch's previous task (pid).
    pub const PREV_PID: usize = 16;
    /// `comm` of the task switched in, 16 bytes.
    pub const COMM: usize = 24;
    /// `comm` of the previous task, 16 bytes.
    pub const PREV_COMM: usize = 40;
    /// One entry (a power of two: the program indexes by a shift).
    pub const SIZE: usize = 64;
}
/// Causes kept per CPU (a power of two).
pub const RING_SLOTS: usize = 8;
/// Where the ring starts in a slot.
pub const RING: usize = header::SIZE;
/// The ring, as the programs write it and the sampler reads it.
pub const RING_LAYOUT: RingLayout = RingLayout {
    start: RING,
    entry_size: entry::SIZE,
    slots: RING_SLOTS,
};
/// A slot's size: the map's value size.
pub const SLOT_SIZE: usize = RING_LAYOUT.end();

const _: () = assert!(entry::SIZE.is_power_of_two() && RING_SLOTS.is_power_of_two());
const _: () = assert!(entry::PREV_COMM + 16 <= entry::SIZE && header::NMI_NS + 8 <= header::SIZE);

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// `irq:irq_handler_entry`: NUMBER the IRQ.
    Irq = 1,
    /// `irq_vectors:<vector>_entry`: NUMBER the index into `VECTORS`.
    Vector = 2,
    /// `irq:softirq_entry`: NUMBER the softirq (`vec`).
    Softirq = 3,
    /// `nmi:nmi_handler`: NUMBER its run, ns (low 32 bits).
    Nmi = 4,
    /// `sched:sched_switch`: NUMBER/COMM the next task, PREV_PID/PREV_COMM
    /// the previous one.
    Switch = 5,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Irq,
        Kind::Vector,
        Kind::Softirq,
        Kind::Nmi,
        Kind::Switch,
    ];

    pub fn from_code(code: u32) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u32 == code)
    }
}

/// The x86 system vectors counted (`irq_vectors:<name>_entry`, those this
/// kernel has), with the `/proc/interrupts` row each is counted in, so a
/// cause reads as the unprivileged tier names it (`irq LOC`).
pub const VECTORS: [(&str, &str); 11] = [
    ("local_timer", "LOC"),
    ("reschedule", "RES"),
    ("call_function", "CAL"),
    ("call_function_single", "CAL"),
    ("irq_work", "IWI"),
    ("x86_platform_ipi", "PLT"),
    ("thermal_apic", "TRM"),
    ("threshold_apic", "THR"),
    ("deferred_error_apic", "DFR"),
    ("error_apic", "ERR"),
    ("spurious_apic", "SPU"),
];

/// The `/proc/interrupts` row of vector `index` (`VEC<index>` when unknown).
pub fn vector_label(index: u32) -> String {
    VECTORS
        .get(index as usize)
        .map_or_else(|| format!("VEC{index}"), |(_, label)| (*label).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_a_header_line_then_the_ring() {
        assert_eq!(SLOT_SIZE, 64 + 8 * 64);
        assert_eq!(RING % 64, 0);
        for kind in Kind::ALL {
            assert_eq!(Kind::from_code(kind as u32), Some(kind));
        }
        assert_eq!(Kind::from_code(0), None);
        assert_eq!(vector_label(0), "LOC");
        assert_eq!(vector_label(3), "CAL");
        assert_eq!(vector_label(99), "VEC99");
    }
}
