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

pub use crate::probes::interference::verdict::{Interference, InterferenceCounter, NoCounter};
use crate::rt::ticks::{Ticks, Timebase};
use std::marker::PhantomData;

/// The clock the sampler reads, in ticks, with what turns them into
/// CLOCK_MONOTONIC ns (a fake one in tests).
pub trait Clock {
    fn now(&mut self) -> u64;
    fn timebase(&self) -> Timebase;
}

/// The ticks `noise`'s spinner reads (`rt::ticks`: the TSC where it is
/// constant, else CLOCK_MONOTONIC through the vDSO), anchored when made.
pub struct TickClock<T> {
    timebase: Timebase,
    ticks: PhantomData<T>,
}

impl<T: Ticks> TickClock<T> {
    pub fn new(timebase: Timebase) -> TickClock<T> {
        TickClock {
            timebase,
            ticks: PhantomData,
        }
    }
}

impl<T: Ticks> Clock for TickClock<T> {
    #[inline(always)]
    fn now(&mut self) -> u64 {
        T::read()
    }

    fn timebase(&self) -> Timebase {
        self.timebase
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
/// stretch, whose outer gap is not measured), when above `threshold`
/// (ticks), in ns by `timebase`.
#[inline(always)]
pub fn gap_of(
    previous: Option<&Reading>,
    reading: &Reading,
    threshold: u64,
    timebase: &Timebase,
) -> Option<Gap> {
    let inner = reading.t2.saturating_sub(reading.t1);
    let outer = previous.map_or(0, |p| reading.t1.saturating_sub(p.t2));
    if inner.max(outer) <= threshold {
        return None;
    }
    Some(classified(
        previous,
        reading,
        (inner, outer),
        threshold,
        timebase,
    ))
}

/// Out of line: the loop's common path stays two subtractions and a
/// comparison.
#[inline(never)]
fn classified(
    previous: Option<&Reading>,
    reading: &Reading,
    (inner_ticks, outer_ticks): (u64, u64),
    threshold: u64,
    timebase: &Timebase,
) -> Gap {
    let inner = if inner_ticks > threshold {
        Interference::between(reading.before, reading.after)
    } else {
        Interference::None
    };
    let outer = if outer_ticks > threshold {
        Interference::between(previous.and_then(|p| p.after), reading.before)
    } else {
        Interference::None
    };
    let interference = match (inner, outer) {
        (Interference::Some, _) | (_, Interference::Some) => Interference::Some,
        (Interference::Unknown, _) | (_, Interference::Unknown) => Interference::Unknown,
        _ => Interference::None,
    };
    Gap {
        at_ns: timebase.ns_at(previous.map_or(reading.t1, |p| p.t2)),
        inner_ns: timebase.scale.ns(inner_ticks),
        outer_ns: timebase.scale.ns(outer_ticks),
        interference,
    }
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

        fn timebase(&self) -> Timebase {
            Timebase::IDENTITY
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
    use crate::rt::ticks::Scale;

    /// Ticks that are nanoseconds.
    const ID: Timebase = Timebase::IDENTITY;

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
        let gap = gap_of(None, &r, 50, &ID).expect("100 ns inner is above 50");
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
        let g = gap_of(Some(&prev), &quiet, 1000, &ID).unwrap();
        assert_eq!((g.at_ns, g.inner_ns, g.outer_ns), (20, 20, 5000));
        assert_eq!(g.interference, Interference::None);
        // Same gap with the counter moved between the pairs: the OS.
        let noisy = Reading {
            before: Some(8),
            after: Some(8),
            ..quiet
        };
        assert_eq!(
            gap_of(Some(&prev), &noisy, 1000, &ID).unwrap().interference,
            Interference::Some
        );
        // Below the threshold: no gap; without a counter: undecided.
        assert_eq!(gap_of(Some(&prev), &quiet, 5000, &ID), None);
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
            gap_of(Some(&prev_bare), &bare, 1000, &ID)
                .unwrap()
                .interference,
            Interference::Unknown
        );
        // The first pair of a stretch has no outer gap.
        assert_eq!(
            gap_of(None, &quiet, 10, &ID),
            Some(Gap {
                at_ns: 5020,
                inner_ns: 20,
                outer_ns: 0,
                interference: Interference::None
            })
        );
    }

    #[test]
    fn a_gap_in_ticks_is_converted_to_the_clocks_time() {
        // A 2 GHz counter anchored at tick 1,000,000 = monotonic 7 s: a
        // 10,000-tick outer gap (5 us) above a 6,000-tick threshold (3 us).
        let tb = Timebase {
            ticks: 1_000_000,
            ns: 7_000_000_000,
            scale: Scale::from_interval(2_000_000_000, 1_000_000_000),
        };
        let reading = |t1, counter| Reading {
            t1,
            t2: t1 + 40,
            before: Some(counter),
            after: Some(counter),
            retries: 0,
        };
        let prev = reading(1_002_000, 3);
        let g = gap_of(Some(&prev), &reading(1_012_040, 3), 6_000, &tb).unwrap();
        assert_eq!(
            g,
            Gap {
                at_ns: 7_000_001_020,
                inner_ns: 20,
                outer_ns: 5_000,
                interference: Interference::None
            }
        );
        assert_eq!(
            gap_of(Some(&prev), &reading(1_008_040, 3), 6_000, &tb),
            None
        );
    }
}
