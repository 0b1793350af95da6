//! Freezing a spike's window: the ring that holds it is written no more
//! until the collector has copied it (`layout.rs`, "Freezing a window").
//!
//! Each CPU's region has one control word (`header::RING`) that only user
//! space writes: its low bits name the ring the programs write, and from
//! `HELD_SHIFT` one bit per ring held. A freeze switches the programs to a
//! ring neither written nor held, with one compare-and-swap, and holds the
//! ring they wrote: everything up to the freeze is there, whole, however
//! late the collector comes. The measuring thread freezes when it sees a
//! spike (only then: a sample that is not a spike does nothing of this);
//! the collector freezes a CPU whose spike could not (every ring held), and
//! releases each ring once it has copied the windows in it.

use super::layout::{RINGS, Region, header, ring};
use crate::rt::bpf::MappedArray;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The ring index bits of the control word.
const WRITTEN: u64 = RINGS as u64 - 1;

/// The control word `word` after freezing: the ring written is held and the
/// programs write the first ring neither written nor held; None when every
/// other ring is held.
pub fn frozen(word: u64) -> Option<u64> {
    let written = word & WRITTEN;
    let held = word >> header::HELD_SHIFT;
    let free = (0..RINGS as u64).find(|&k| k != written && held & (1 << k) == 0)?;
    Some(free | (held | 1 << written) << header::HELD_SHIFT)
}

/// Switches the rings of the recorder's regions (cheap to clone: the
/// mapping is shared and stays mapped while one lives).
#[derive(Clone)]
pub struct RingSwitch {
    mapped: Arc<MappedArray>,
    region: Region,
}

impl RingSwitch {
    pub fn new(mapped: Arc<MappedArray>, region: Region) -> RingSwitch {
        RingSwitch { mapped, region }
    }

    fn control(&self, cpu: usize) -> Option<&AtomicU64> {
        let at = self.mapped.entry_ptr(cpu)?;
        // SAFETY: `header::RING` is an 8-aligned u64 inside entry `cpu`, in
        // a mapping alive as long as `self`; every access to it is atomic
        // (the programs only load it).
        Some(unsafe { &*at.add(header::RING).cast::<AtomicU64>() })
    }

    /// Freezes `cpu`'s window as it is now: the ring held, or None when
    /// every other ring is already held (or `cpu` has no region). For the
    /// measuring thread at a spike: a load, a compare-and-swap and a store.
    pub fn freeze(&self, cpu: usize) -> Option<usize> {
        let control = self.control(cpu)?;
        let word = control.load(Ordering::Acquire);
        let next = frozen(word)?;
        // Before the switch: every record of the new ring comes after it.
        let now = crate::rt::clock::monotonic_ns();
        control
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        let written = (next & WRITTEN) as usize;
        self.mapped
            .write_u64(cpu, self.region.ring_field(written, ring::SINCE), now)?;
        Some((word & WRITTEN) as usize)
    }

    /// The collector has copied every window in ring `ring` of `cpu`.
    pub fn release(&self, cpu: usize, ring: usize) {
        if let Some(control) = self.control(cpu) {
            control.fetch_and(!(1 << (header::HELD_SHIFT + ring as u32)), Ordering::AcqRel);
        }
    }

    /// The rings of `cpu` held now (a bit each).
    pub fn held(&self, cpu: usize) -> u64 {
        self.control(cpu)
            .map_or(0, |c| c.load(Ordering::Acquire) >> header::HELD_SHIFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freeze_holds_the_ring_written_and_writes_a_free_one() {
        // Ring 0 written, nothing held: ring 1 written, ring 0 held.
        assert_eq!(frozen(0), Some(1 | 0b1 << header::HELD_SHIFT));
        // Ring 1 written, ring 0 held: ring 2, rings 0 and 1 held.
        assert_eq!(
            frozen(1 | 0b1 << header::HELD_SHIFT),
            Some(2 | 0b11 << header::HELD_SHIFT)
        );
        // Ring 3 written, ring 0 released since: back to ring 0.
        assert_eq!(
            frozen(3 | 0b110 << header::HELD_SHIFT),
            Some(0b1110 << header::HELD_SHIFT)
        );
        // Every other ring held: no freeze.
        assert_eq!(frozen(3 | 0b111 << header::HELD_SHIFT), None);
    }

    #[test]
    fn freezing_and_releasing_in_a_region_in_memory() {
        let region = Region::with_slots(64);
        // Anonymous memory stands for the map's mapping: one CPU.
        let mapped = Arc::new(MappedArray::anonymous(region.size(), 1).unwrap());
        let switch = RingSwitch::new(mapped.clone(), region);
        let before = crate::rt::clock::monotonic_ns();
        assert_eq!(switch.freeze(0), Some(0));
        assert_eq!(switch.held(0), 0b1);
        assert_eq!(mapped.read_u64(0, header::RING).unwrap() & WRITTEN, 1);
        let since = mapped.read_u64(0, region.ring_field(1, ring::SINCE)).unwrap();
        assert!(since >= before);
        assert_eq!(switch.freeze(0), Some(1));
        assert_eq!(switch.freeze(0), Some(2));
        assert_eq!(switch.freeze(0), None, "every other ring held");
        switch.release(0, 1);
        assert_eq!(switch.held(0), 0b101);
        assert_eq!(switch.freeze(0), Some(3));
        assert_eq!(mapped.read_u64(0, header::RING).unwrap() & WRITTEN, 1);
        assert_eq!(switch.freeze(1), None, "no such CPU");
    }
}
