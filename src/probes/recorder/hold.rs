//! Holding a spike's window: the records from the window's start on are
//! not overwritten until the collector has copied it (`layout.rs`,
//! "Holding a window").
//!
//! Each traced CPU's region has one hold word (`header::HOLD`) that only
//! user space writes and the programs only read. It stores the hold
//! complemented (`stored`), so that a zeroed map holds nothing; the hold's
//! high bits are a time (CLOCK_MONOTONIC ns, rounded down), its low
//! `GENERATION_BITS` a count of the holds made. A program does not write a record over one from that
//! time on, nor over the newest one before it (the window's predecessor):
//! it counts the event as refused instead (`header::REFUSED`). The
//! measuring thread holds when it has queued a spike (only then: a sample
//! that is not a spike does nothing of this), lowering the time to its
//! window's start; the collector reads the word before it drains the
//! queues and, once it has copied every window of its pass, releases the
//! hold with one compare-and-swap that fails when a spike held meanwhile
//! (the count changed): that spike's window stays held until the next pass.

use super::layout::header;
use crate::rt::bpf::MappedArray;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Low bits of the hold word that count the holds, not time: a release
/// that finds them changed knows a spike held meanwhile. 16 bits round
/// the time down by at most 65.5 us, which only holds a little more.
pub const GENERATION_BITS: u32 = 16;
const GENERATION: u64 = (1 << GENERATION_BITS) - 1;
/// The hold when nothing is held: no record's time reaches it.
pub const NOTHING_HELD: u64 = u64::MAX;

/// The word stored for `hold` (and back: the complement is its own
/// inverse): 0, the map's initial value, for `NOTHING_HELD`.
pub fn stored(hold: u64) -> u64 {
    !hold
}

/// The hold `hold` once the records from `from_ns` on are held too: the
/// earlier of both times, rounded down, and one more hold counted.
pub fn held_from(hold: u64, from_ns: u64) -> u64 {
    let time = (hold & !GENERATION).min(from_ns & !GENERATION);
    time | (hold.wrapping_add(1) & GENERATION)
}

/// The time from which `hold` holds records (None: nothing held).
pub fn held_since(hold: u64) -> Option<u64> {
    (hold != NOTHING_HELD).then_some(hold & !GENERATION)
}

/// Holds and releases the windows of the traced CPUs (cheap to clone: the
/// mapping is shared and stays mapped while one lives).
#[derive(Clone)]
pub struct Holds {
    mapped: Arc<MappedArray>,
    cpus: Vec<usize>,
}

impl Holds {
    /// The holds of `cpus` in `mapped` (a new map holds nothing).
    pub fn new(mapped: Arc<MappedArray>, cpus: &[usize]) -> Holds {
        Holds {
            mapped,
            cpus: cpus.to_vec(),
        }
    }

    fn word(&self, cpu: usize) -> Option<&AtomicU64> {
        if !self.cpus.contains(&cpu) {
            return None;
        }
        let at = self.mapped.entry_ptr(cpu)?;
        // SAFETY: `header::HOLD` is an 8-aligned u64 inside entry `cpu`, in
        // a mapping alive as long as `self`; user space only accesses it
        // atomically (the programs only load it).
        Some(unsafe { &*at.add(header::HOLD).cast::<AtomicU64>() })
    }

    /// Holds `cpu`'s records from `from_ns` on (nothing when `cpu` is not
    /// traced). For the measuring thread at a spike: a load and a
    /// compare-and-swap, again only when another thread held on that CPU
    /// at the same moment.
    pub fn hold(&self, cpu: usize, from_ns: u64) {
        let Some(word) = self.word(cpu) else {
            return;
        };
        let mut seen = word.load(Ordering::Acquire);
        loop {
            let held = stored(held_from(stored(seen), from_ns));
            match word.compare_exchange_weak(seen, held, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// `cpu`'s hold now (NOTHING_HELD when it is not traced).
    pub fn hold_of(&self, cpu: usize) -> u64 {
        self.word(cpu)
            .map_or(NOTHING_HELD, |w| stored(w.load(Ordering::Acquire)))
    }

    /// Releases `cpu`'s hold if it is still `seen` (no spike held since
    /// it was read); whether it was released.
    pub fn release(&self, cpu: usize, seen: u64) -> bool {
        seen != NOTHING_HELD
            && self.word(cpu).is_some_and(|w| {
                w.compare_exchange(
                    stored(seen),
                    stored(NOTHING_HELD),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::recorder::layout::Region;

    #[test]
    fn a_hold_keeps_the_earliest_time_rounded_down_and_counts_itself() {
        let first = held_from(NOTHING_HELD, 1_000_000_123);
        assert_eq!(held_since(first), Some(1_000_000_123 & !0xffff));
        assert_eq!(first & GENERATION, 0);
        // A later window: the time stays, the count moves on.
        let second = held_from(first, 2_000_000_000);
        assert_eq!(held_since(second), held_since(first));
        assert_eq!(second & GENERATION, 1);
        assert_ne!(second, first);
        // An earlier one lowers the time.
        let third = held_from(second, 500_000_000);
        assert_eq!(held_since(third), Some(500_000_000 & !0xffff));
        assert_eq!(third & GENERATION, 2);
        // Never above the window's start.
        assert!(held_since(third).unwrap() <= 500_000_000);
        assert_eq!(held_since(NOTHING_HELD), None);
        // The count wraps within its bits, leaving the time alone.
        let wrapped = held_from(7 << GENERATION_BITS | GENERATION, u64::MAX - 1);
        assert_eq!(wrapped, 7 << GENERATION_BITS);
    }

    #[test]
    fn a_release_fails_when_a_spike_held_after_the_word_was_read() {
        let region = Region::with_slots(64);
        // Anonymous memory stands for the map's mapping: CPUs 0 and 1,
        // only 1 traced.
        let mapped = Arc::new(MappedArray::anonymous(region.size(), 2).unwrap());
        let holds = Holds::new(mapped.clone(), &[1]);
        assert_eq!(holds.hold_of(1), NOTHING_HELD);
        assert!(!holds.release(1, NOTHING_HELD), "nothing to release");
        holds.hold(1, 5_000_000);
        let seen = holds.hold_of(1);
        assert_eq!(held_since(seen), Some(5_000_000 & !0xffff));
        // A later spike holds before the collector releases: its window
        // (later, so the time is the same) stays held.
        holds.hold(1, 9_000_000);
        assert!(!holds.release(1, seen));
        assert_eq!(held_since(holds.hold_of(1)), Some(5_000_000 & !0xffff));
        // The next pass read the word after that spike: released.
        let seen = holds.hold_of(1);
        assert!(holds.release(1, seen));
        assert_eq!(holds.hold_of(1), NOTHING_HELD);
        // A CPU not traced holds nothing.
        holds.hold(0, 1);
        assert_eq!(holds.hold_of(0), NOTHING_HELD);
        assert_eq!(mapped.read_u64(0, header::HOLD), Some(0));
        // What the programs read: the complement, 0 when nothing is held.
        assert_eq!(mapped.read_u64(1, header::HOLD), Some(stored(NOTHING_HELD)));
        assert_eq!(stored(NOTHING_HELD), 0);
    }
}
