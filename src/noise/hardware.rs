//! `latscope noise`'s hardware interruptions: those across which the CPU's
//! interference counter did not move (no IRQ, softirq, NMI or context
//! switch ran in them: firmware, an SMI, or the hypervisor in a guest). The
//! counter is the bpf programs' (`probes::interference`), read once per
//! iteration of the spinner (`verdict::Watch`), as `latscope hwlat`'s bpf
//! tier reads it around its pairs; the verdict is the same code.

use crate::probes::interference::verdict::Interference;

/// Hardware interruptions kept with their time, per CPU: the last ones.
pub const HW_KEPT: usize = 256;

/// One CPU's hardware interruptions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HwTally {
    pub count: u64,
    pub ns: u64,
    pub max_ns: u64,
    /// The last `HW_KEPT` (start, CLOCK_MONOTONIC ns; length, ns): a ring
    /// allocated before the loop, `next` its oldest once full.
    kept: Vec<(u64, u64)>,
    next: usize,
}

impl HwTally {
    /// An empty tally, its ring allocated (not in the loop).
    pub fn new() -> HwTally {
        HwTally {
            kept: Vec::with_capacity(HW_KEPT),
            ..HwTally::default()
        }
    }

    /// Counts the interruption of `ns` that ended at `end_ns` when the
    /// counter's `verdict` is hardware; says whether it was.
    pub fn note(&mut self, verdict: Interference, end_ns: u64, ns: u64) -> bool {
        if verdict != Interference::None {
            return false;
        }
        self.count += 1;
        self.ns += ns;
        self.max_ns = self.max_ns.max(ns);
        let gap = (end_ns.saturating_sub(ns), ns);
        if self.kept.len() < HW_KEPT {
            self.kept.push(gap);
        } else {
            self.kept[self.next] = gap;
            self.next = (self.next + 1) % HW_KEPT;
        }
        true
    }

    /// The interruptions kept, oldest first.
    pub fn kept(&self) -> Vec<(u64, u64)> {
        let mut out = self.kept[self.next..].to_vec();
        out.extend_from_slice(&self.kept[..self.next]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gaps_the_counter_did_not_see_are_hardware() {
        let mut hw = HwTally::new();
        assert!(hw.note(Interference::None, 10_000, 4_000));
        assert!(!hw.note(Interference::Some, 20_000, 9_000));
        assert!(!hw.note(Interference::Unknown, 30_000, 9_000));
        assert!(hw.note(Interference::None, 40_000, 2_500));
        assert_eq!((hw.count, hw.ns, hw.max_ns), (2, 6_500, 4_000));
        assert_eq!(hw.kept(), vec![(6_000, 4_000), (37_500, 2_500)]);
    }

    #[test]
    fn the_last_ones_are_kept_in_order() {
        let mut hw = HwTally::new();
        for i in 0..(HW_KEPT as u64 + 3) {
            hw.note(Interference::None, 1_000 * (i + 1), 100);
        }
        let kept = hw.kept();
        assert_eq!(kept.len(), HW_KEPT);
        assert_eq!(kept[0], (3_900, 100));
        assert_eq!(kept[HW_KEPT - 1].0, 1_000 * (HW_KEPT as u64 + 3) - 100);
        assert_eq!(hw.count, HW_KEPT as u64 + 3);
    }
}
