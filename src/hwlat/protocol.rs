//! The sampler's read protocol, as the kernel's osnoise/hwnoise read it:
//! the interference counter, the clock, the clock again, then the counter.
//! When the counter moved between its two reads, something (an IRQ, a
//! softirq, an NMI, a context switch) ran inside the pair: the pair is read
//! again, so that `inner` is never an interference the counter saw.
//!
//! `inner` is t2 - t1 (a gap inside one pair), `outer` is t1 - the previous
//! t2 (a gap between two pairs), both in ns. A gap is *hardware* when the
//! counter did not move across it; a tier without a per-read counter (the
//! unprivileged one) leaves the gap undecided and its window decides.

/// The CPU's interference counter: bumped by every IRQ, softirq, NMI and
/// context switch of the CPU. The bpf tier's is a per-CPU slot of an
/// mmapped map, read with one load (`bpf_counter.rs`); the unprivileged
/// tier has none (`None`).
pub trait InterferenceCounter {
    fn read(&mut self) -> Option<u64>;

    /// Notes, for the gap numbered `index` of the current sub-window, what
    /// moved the counter from `from` to `to` (called at the gap, before
    /// newer events overwrite it; a counter that keeps no causes ignores it).
    #[inline(always)]
    fn capture(&mut self, _index: usize, _from: u64, _to: u64) {}
}

/// No per-read counter: the unprivileged tier classifies whole windows.
pub struct NoCounter;

impl InterferenceCounter for NoCounter {
    #[inline(always)]
    fn read(&mut self) -> Option<u64> {
        None
    }
}

/// The clock the sampler reads (CLOCK_MONOTONIC; a fake one in tests).
pub trait Clock {
    fn now(&mut self) -> u64;
}

/// CLOCK_MONOTONIC through the vDSO.
pub struct Monotonic;

impl Clock for Monotonic {
    #[inline(always)]
    fn now(&mut self) -> u64 {
        crate::rt::clock::monotonic_ns()
    }
}

/// Reads of a pair retried at most this often before the last one is
/// taken as it is (its inner gap then counts as interfered): a CPU under an
/// interrupt storm must not keep the sampler in one pair for ever.
pub const MAX_RETRIES: u32 = 4;

/// One pair of clock reads and the counter around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub t1: u64,
    pub t2: u64,
    /// The counter before t1 and after t2 (None: no per-read counter).
    pub before: Option<u64>,
    pub after: Option<u64>,
    /// How often the pair was read again because the counter moved.
    pub retries: u32,
}

/// Reads one pair: counter, clock, clock, counter; again while the counter
/// moved mid-read (at most `MAX_RETRIES` times).
#[inline(always)]
pub fn read_pair<C: InterferenceCounter, K: Clock>(counter: &mut C, clock: &mut K) -> Reading {
    let mut retries = 0;
    loop {
        let before = counter.read();
        let t1 = clock.now();
        let t2 = clock.now();
        let after = counter.read();
        if before == after || retries >= MAX_RETRIES {
            return Reading {
                t1,
                t2,
                before,
                after,
                retries,
            };
        }
        retries += 1;
    }
}

/// What the counter says of a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interference {
    /// The counter did not move across the gap: hardware time.
    None,
    /// The counter moved: the OS took the time.
    Some,
    /// No per-read counter: the gap's window decides.
    Unknown,
}

impl Interference {
    fn between(from: Option<u64>, to: Option<u64>) -> Interference {
        match (from, to) {
            (Some(a), Some(b)) if a == b => Interference::None,
            (Some(_), Some(_)) => Interference::Some,
            _ => Interference::Unknown,
        }
    }
}

/// A gap above the threshold: where, how long, and what the counter saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// Monotonic time the gap started (the previous t2, or t1 for inner).
    pub at_ns: u64,
    pub inner_ns: u64,
    pub outer_ns: u64,
    pub interference: Interference,
}

impl Gap {
    /// The longer of inner and outer, as hwlatdetect reports a sample.
    pub fn ns(&self) -> u64 {
        self.inner_ns.max(self.outer_ns)
    }
}

/// The gap `reading` closes after `previous` (None: the first pair of a
/// stretch, whose outer gap is not measured), when above `threshold_ns`.
pub fn gap_of(previous: Option<&Reading>, reading: &Reading, threshold_ns: u64) -> Option<Gap> {
    let inner_ns = reading.t2.saturating_sub(reading.t1);
    let outer_ns = previous.map_or(0, |p| reading.t1.saturating_sub(p.t2));
    if inner_ns.max(outer_ns) <= threshold_ns {
        return None;
    }
    let inner = if inner_ns > threshold_ns {
        Interference::between(reading.before, reading.after)
    } else {
        Interference::None
    };
    let outer = if outer_ns > threshold_ns {
        Interference::between(previous.and_then(|p| p.after), reading.before)
    } else {
        Interference::None
    };
    let interference = match (inner, outer) {
        (Interference::Some, _) | (_, Interference::Some) => Interference::Some,
        (Interference::Unknown, _) | (_, Interference::Unknown) => Interference::Unknown,
        _ => Interference::None,
    };
    Some(Gap {
        at_ns: previous.map_or(reading.t1, |p| p.t2),
        inner_ns,
        outer_ns,
        interference,
    })
}

#[cfg(test)]
pub(crate) mod fake {
    use super::*;

    /// A clock that returns a script of times, then keeps the last.
    pub struct ScriptClock(pub Vec<u64>, pub usize);

    impl Clock for ScriptClock {
        fn now(&mut self) -> u64 {
            let t = self.0[self.1.min(self.0.len() - 1)];
            self.1 += 1;
            t
        }
    }

    /// A counter that returns a script of values.
    pub struct ScriptCounter(pub Vec<u64>, pub usize);

    impl InterferenceCounter for ScriptCounter {
        fn read(&mut self) -> Option<u64> {
            let v = self.0[self.1.min(self.0.len() - 1)];
            self.1 += 1;
            Some(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::*;
    use super::*;

    #[test]
    fn a_pair_is_read_again_when_the_counter_moved_mid_read() {
        // First try: counter 5 -> 6 (an IRQ inside the pair, 900 ns inner);
        // second try: 6 -> 6, a clean pair.
        let mut clock = ScriptClock(vec![100, 1000, 1010, 1030], 0);
        let mut counter = ScriptCounter(vec![5, 6, 6, 6], 0);
        let r = read_pair(&mut counter, &mut clock);
        assert_eq!(
            r,
            Reading {
                t1: 1010,
                t2: 1030,
                before: Some(6),
                after: Some(6),
                retries: 1
            }
        );
    }

    #[test]
    fn retries_are_bounded_and_the_last_pair_counts_as_interfered() {
        let mut clock = ScriptClock((0..20).map(|i| i * 100).collect(), 0);
        let mut counter = ScriptCounter((0..20).collect(), 0);
        let r = read_pair(&mut counter, &mut clock);
        assert_eq!(r.retries, MAX_RETRIES);
        let gap = gap_of(None, &r, 50).expect("100 ns inner is above 50");
        assert_eq!(gap.interference, Interference::Some);
    }

    #[test]
    fn inner_and_outer_are_measured_and_classified_by_the_counter() {
        let prev = Reading {
            t1: 0,
            t2: 20,
            before: Some(7),
            after: Some(7),
            retries: 0,
        };
        // Outer gap of 5000 ns, counter unchanged across it: hardware.
        let quiet = Reading {
            t1: 5020,
            t2: 5040,
            before: Some(7),
            after: Some(7),
            retries: 0,
        };
        let g = gap_of(Some(&prev), &quiet, 1000).unwrap();
        assert_eq!((g.at_ns, g.inner_ns, g.outer_ns), (20, 20, 5000));
        assert_eq!(g.interference, Interference::None);
        // Same gap with the counter moved between the pairs: the OS.
        let noisy = Reading {
            before: Some(8),
            after: Some(8),
            ..quiet
        };
        assert_eq!(
            gap_of(Some(&prev), &noisy, 1000).unwrap().interference,
            Interference::Some
        );
        // Below the threshold: no gap; without a counter: undecided.
        assert_eq!(gap_of(Some(&prev), &quiet, 5000), None);
        let bare = Reading {
            before: None,
            after: None,
            ..quiet
        };
        let prev_bare = Reading {
            before: None,
            after: None,
            ..prev
        };
        assert_eq!(
            gap_of(Some(&prev_bare), &bare, 1000).unwrap().interference,
            Interference::Unknown
        );
        // The first pair of a stretch has no outer gap.
        assert_eq!(
            gap_of(None, &quiet, 10),
            Some(Gap {
                at_ns: 5020,
                inner_ns: 20,
                outer_ns: 0,
                interference: Interference::None
            })
        );
    }
}
