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
/// programs write the ring neither written nor held that was written least
/// recently (`since`: when each ring was last switched to), whose records
/// are the least likely to belong to a window still to come; None when
/// every other ring is held.
pub fn frozen(word: u64, since: &[u64]) -> Option<u64> {
    let written = word & WRITTEN;
    let held = word >> header::HELD_SHIFT;
    let free = (0..RINGS as u64)
        .filter(|&k| k != written && held & (1 << k) == 0)
        .min_by_key(|&k| since.get(k as usize).copied().unwrap_or(0))?;
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
    /// measuring thread at a spike: a few loads, a compare-and-swap and
    /// four stores.
    pub fn freeze(&self, cpu: usize) -> Option<usize> {
        let control = self.control(cpu)?;
        let word = control.load(Ordering::Acquire);
        let mut since = [0u64; RINGS];
        for (k, at) in since.iter_mut().enumerate() {
            *at = self
                .mapped
                .read_u64(cpu, self.region.ring_field(k, ring::SINCE))?;
        }
        let next = frozen(word, &since)?;
        // Before the switch: every record of the new ring comes after it.
        let now = crate::rt::clock::monotonic_ns();
        control
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        // When each ring was written, for the reader (`decode.rs`): the
        // held one until now, the new one from now, its previous stretch
        // ended when it was last left.
        let (held, written) = ((word & WRITTEN) as usize, (next & WRITTEN) as usize);
        let field = |k: usize, f: usize| self.region.ring_field(k, f);
        let left = self.mapped.read_u64(cpu, field(written, ring::UNTIL))?;
        self.mapped
            .write_u64(cpu, field(written, ring::EARLIER), left)?;
        self.mapped.write_u64(cpu, field(written, ring::UNTIL), 0)?;
        self.mapped
            .write_u64(cpu, field(written, ring::SINCE), now)?;
        self.mapped.write_u64(cpu, field(held, ring::UNTIL), now)?;
        Some(held)
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

    /// The control word with ring `written` written and `held` held.
    fn word(written: u64, held: &[u64]) -> u64 {
        written | held.iter().map(|k| 1 << k).sum::<u64>() << header::HELD_SHIFT
    }

    #[test]
    fn a_freeze_holds_the_ring_written_and_writes_the_least_recent_free_one() {
        // Ring 0 written since 5, nothing held, ring 1 never written: ring
        // 1 written, ring 0 held.
        let mut since = [0u64; RINGS];
        since[0] = 5;
        assert_eq!(frozen(word(0, &[]), &since), Some(word(1, &[0])));
        // Rings 0 and 1 held, ring 2 written: the least recent free ring,
        // not the lowest.
        for (k, s) in since.iter_mut().enumerate() {
            *s = 100 - k as u64;
        }
        assert_eq!(
            frozen(word(2, &[0, 1]), &since),
            Some(word(RINGS as u64 - 1, &[0, 1, 2]))
        );
        // Every other ring held: no freeze.
        let all: Vec<u64> = (1..RINGS as u64).collect();
        assert_eq!(frozen(word(0, &all), &since), None);
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
        let since = mapped
            .read_u64(0, region.ring_field(1, ring::SINCE))
            .unwrap();
        assert!(since >= before);
        // Each spike gets its own ring, until every other one is held.
        for k in 1..RINGS - 1 {
            assert_eq!(switch.freeze(0), Some(k));
        }
        assert_eq!(switch.freeze(0), None, "every other ring held");
        switch.release(0, 3);
        assert_eq!(switch.held(0).count_ones() as usize, RINGS - 2);
        assert_eq!(switch.freeze(0), Some(RINGS - 1));
        assert_eq!(mapped.read_u64(0, header::RING).unwrap() & WRITTEN, 3);
        assert_eq!(switch.freeze(1), None, "no such CPU");
    }
}
