//! What the interference counter says of a gap between two clock reads,
//! for every loop that reads it (`latscope hwlat`'s pairs, `latscope
//! noise`'s spinner): a gap across which the counter did not move is
//! *hardware* time (firmware, an SMI, or the hypervisor in a guest: nothing
//! the kernel counts ran); a moved one is the OS's.
//!
//! A counter read must bracket the gap: one load before its first clock
//! read and one after its last. hwlat reads the counter around each pair
//! (its `protocol.rs`); noise's loop reads the clock once per iteration and
//! the counter once, right after it (`Watch`), so the load before a gap is
//! the one of the iteration before the gap's first read.

/// The CPU's interference counter: bumped by every IRQ, softirq, NMI and
/// context switch of the CPU. The bpf programs' is a per-CPU slot of an
/// mmapped map, read with one load (`SlotCounter`); a loop without it reads
/// `NoCounter` (`None`).
pub trait InterferenceCounter {
    fn read(&mut self) -> Option<u64>;

    /// Notes, for the gap numbered `index` of the current sub-window, what
    /// moved the counter from `from` to `to` (called at the gap, before
    /// newer events overwrite it; a counter that keeps no causes ignores it).
    #[inline(always)]
    fn capture(&mut self, _index: usize, _from: u64, _to: u64) {}
}

/// No per-read counter: every gap is `Interference::Unknown`.
pub struct NoCounter;

impl InterferenceCounter for NoCounter {
    #[inline(always)]
    fn read(&mut self) -> Option<u64> {
        None
    }
}

/// One CPU's counter word in the loaded map, read with one volatile load.
pub struct SlotCounter {
    count: *const u64,
}

// SAFETY: a pointer into the map's shared mapping, read with volatile
// loads only; whoever builds it keeps the mapping alive (`new`).
unsafe impl Send for SlotCounter {}

impl SlotCounter {
    /// The counter of `view`'s slot. The caller keeps the loaded programs
    /// (and so the mapping) while it reads.
    pub fn new(view: &super::read::SlotView) -> SlotCounter {
        SlotCounter {
            count: view.count_ptr(),
        }
    }
}

impl InterferenceCounter for SlotCounter {
    #[inline(always)]
    fn read(&mut self) -> Option<u64> {
        // SAFETY: the slot's counter word (see `new`); the kernel changes
        // it behind the compiler, hence volatile.
        Some(unsafe { std::ptr::read_volatile(self.count) })
    }
}

/// What the counter says of a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interference {
    /// The counter did not move across the gap: hardware time.
    None,
    /// The counter moved: the OS took the time.
    Some,
    /// No per-read counter: something else decides (hwlat's windows).
    Unknown,
}

impl Interference {
    /// The verdict of a gap bracketed by the counter read `from` (before
    /// it) and `to` (after it).
    #[inline]
    pub fn between(from: Option<u64>, to: Option<u64>) -> Interference {
        match (from, to) {
            (Some(a), Some(b)) if a == b => Interference::None,
            (Some(_), Some(_)) => Interference::Some,
            _ => Interference::Unknown,
        }
    }
}

/// The counter of a loop that reads the clock once per iteration and the
/// counter once, right after it: iteration k reads t_k then c_k. The gap
/// (t_{k-1}, t_k] is bracketed by c_{k-2} (read before t_{k-1}) and c_k
/// (after t_k): c_{k-1} would not do, an interrupt taken between t_{k-1}
/// and its load would already be in it. One load and two register moves
/// per iteration; an interrupt in the few instructions between c_{k-2}
/// and t_{k-1} makes the gap before this one long too and is counted for
/// both, so an error only ever names the OS, never the hardware.
pub struct Watch<C> {
    counter: C,
    older: Option<u64>,
    old: Option<u64>,
}

impl<C: InterferenceCounter> Watch<C> {
    /// Reads the counter now: call it before the loop's first clock read.
    pub fn new(mut counter: C) -> Watch<C> {
        let now = counter.read();
        Watch {
            counter,
            older: now,
            old: now,
        }
    }

    /// After the clock read that ended a gap: reads the counter and
    /// returns the reads that bracket that gap (`Interference::between`).
    #[inline(always)]
    pub fn after_read(&mut self) -> (Option<u64>, Option<u64>) {
        let now = self.counter.read();
        let from = self.older;
        self.older = self.old;
        self.old = now;
        (from, now)
    }

    /// Before a fresh first clock read (after the loop slept): the next
    /// gap starts there.
    pub fn restart(&mut self) {
        let now = self.counter.read();
        self.older = now;
        self.old = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that returns a script of values, then keeps the last.
    struct Script(Vec<u64>, usize);

    impl InterferenceCounter for Script {
        fn read(&mut self) -> Option<u64> {
            let v = self.0[self.1.min(self.0.len() - 1)];
            self.1 += 1;
            Some(v)
        }
    }

    fn verdict(bracket: (Option<u64>, Option<u64>)) -> Interference {
        Interference::between(bracket.0, bracket.1)
    }

    #[test]
    fn the_verdict_of_a_bracketed_gap() {
        assert_eq!(Interference::between(Some(4), Some(4)), Interference::None);
        assert_eq!(Interference::between(Some(4), Some(5)), Interference::Some);
        assert_eq!(Interference::between(None, None), Interference::Unknown);
        assert_eq!(Interference::between(Some(4), None), Interference::Unknown);
    }

    #[test]
    fn each_gap_is_bracketed_by_the_load_before_its_first_read() {
        // Loads: c_init = 7 (before t0), then c1..c5 after t1..t5. An IRQ
        // taken between t1 and the load c1 (c1 = 8 already) is in the gap
        // (t0, t1] and must not be missed: c1 vs c_init says OS. The gap
        // (t1, t2] is judged by c_init (before t1) and c2: the same IRQ is
        // counted again (an error towards the OS, never the hardware).
        // (t2, t3] and (t3, t4]: nothing moved, hardware. (t4, t5]: moved.
        let mut watch = Watch::new(Script(vec![7, 8, 8, 8, 8, 9], 0));
        let verdicts: Vec<Interference> = (0..5).map(|_| verdict(watch.after_read())).collect();
        assert_eq!(
            verdicts,
            vec![
                Interference::Some,
                Interference::Some,
                Interference::None,
                Interference::None,
                Interference::Some
            ]
        );
    }

    #[test]
    fn a_restart_brackets_the_next_gap_from_the_fresh_load() {
        let mut watch = Watch::new(Script(vec![1, 1, 5, 5, 5], 0));
        assert_eq!(verdict(watch.after_read()), Interference::None);
        // Slept: the counter moved meanwhile (5), read again before the
        // fresh clock read: the next gap starts there.
        watch.restart();
        assert_eq!(verdict(watch.after_read()), Interference::None);
        assert_eq!(verdict(watch.after_read()), Interference::None);
    }

    #[test]
    fn without_a_counter_nothing_is_decided() {
        let mut watch = Watch::new(NoCounter);
        assert_eq!(verdict(watch.after_read()), Interference::Unknown);
    }
}
