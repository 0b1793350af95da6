//! Every raw sample of a series on its way to the `--samples` file: a fixed
//! single-producer/single-consumer ring per series. The producer is the
//! measuring thread (a push is a few plain stores and one release store, no
//! system call, no allocation, never a wait); the consumer is the one
//! normal-priority drain thread of `crate::samples`, which writes the file.
//! A full ring drops the sample and counts it: the report says so.
//!
//! The rings of one test are handed to its measuring loops in a
//! `TestSamples` (through the test's plan), built before the loops start:
//! the memory is allocated and written once there (so `mlockall` has it
//! resident), never in a loop.

use super::live::SpscRing;
use std::sync::Arc;

/// Samples one ring holds between two drains. The drain thread empties
/// every ring each `crate::samples::DRAIN_EVERY` (20 ms): a series would
/// need more than 3 million samples a second to fill it. 16 bytes each:
/// 1 MiB per series.
pub const RING_SAMPLES: usize = 1 << 16;

/// One sample: when it was taken (CLOCK_MONOTONIC, ns) and its latency (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    pub at_ns: u64,
    pub latency_ns: i64,
}

/// The ring of one series (see the module comment).
pub struct SampleRing {
    ring: SpscRing<Sample>,
}

impl SampleRing {
    /// A ring of `capacity` samples, allocated and written now.
    pub fn with_capacity(capacity: usize) -> SampleRing {
        SampleRing {
            ring: SpscRing::with_capacity(capacity),
        }
    }

    /// Producer side (the measuring thread only): appends the sample, or
    /// counts it as dropped when the drain thread fell behind.
    #[inline]
    pub fn push(&self, at_ns: u64, latency_ns: i64) {
        self.ring.push(Sample { at_ns, latency_ns });
    }

    /// Consumer side (the drain thread only): every sample pushed so far,
    /// in order.
    pub fn drain(&self, each: impl FnMut(Sample)) {
        self.ring.drain(each);
    }

    /// Samples lost because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped()
    }
}

/// The sample rings of one test's series, in the order of the test's
/// series in the report (pair, thread, writer or CPU index); cheap to clone.
#[derive(Clone, Default)]
pub struct TestSamples {
    rings: Vec<Arc<SampleRing>>,
}

impl std::fmt::Debug for TestSamples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TestSamples({} series)", self.rings.len())
    }
}

impl TestSamples {
    pub fn new(rings: Vec<Arc<SampleRing>>) -> TestSamples {
        TestSamples { rings }
    }

    /// The ring of series `index`, for its measuring loop (taken at set-up).
    pub fn ring(&self, index: usize) -> Option<Arc<SampleRing>> {
        self.rings.get(index).cloned()
    }
}

/// `plan.samples.ring(index)` for an optional plan field.
pub fn ring_of(samples: &Option<TestSamples>, index: usize) -> Option<Arc<SampleRing>> {
    samples.as_ref().and_then(|s| s.ring(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drained(ring: &SampleRing) -> Vec<Sample> {
        let mut out = Vec::new();
        ring.drain(|s| out.push(s));
        out
    }

    #[test]
    fn samples_come_out_in_order_across_the_wrap_around() {
        let ring = SampleRing::with_capacity(4);
        let mut expected = Vec::new();
        // 10 rounds of 3 pushes then a drain: the slots wrap many times.
        for round in 0..10u64 {
            for k in 0..3u64 {
                let s = Sample {
                    at_ns: round * 10 + k,
                    latency_ns: -(k as i64),
                };
                ring.push(s.at_ns, s.latency_ns);
                expected.push(s);
            }
            assert_eq!(drained(&ring), expected[expected.len() - 3..]);
        }
        assert_eq!(ring.dropped(), 0);
    }

    #[test]
    fn a_full_ring_counts_drops_and_keeps_the_oldest() {
        let ring = SampleRing::with_capacity(4);
        for i in 0..7 {
            ring.push(i, i as i64);
        }
        assert_eq!(ring.dropped(), 3);
        let out: Vec<u64> = drained(&ring).iter().map(|s| s.at_ns).collect();
        assert_eq!(out, [0, 1, 2, 3]);
        // Room again after the drain.
        ring.push(9, 9);
        assert_eq!(
            drained(&ring),
            [Sample {
                at_ns: 9,
                latency_ns: 9
            }]
        );
        assert_eq!(ring.dropped(), 3);
    }

    #[test]
    fn a_concurrent_producer_and_consumer_lose_nothing_or_count_it() {
        let ring = Arc::new(SampleRing::with_capacity(64));
        const N: u64 = 200_000;
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for i in 0..N {
                    ring.push(i, i as i64 * 3);
                }
            })
        };
        let mut seen = Vec::new();
        let mut done = false;
        while !done {
            done = producer.is_finished();
            ring.drain(|s| seen.push(s));
        }
        producer.join().unwrap();
        ring.drain(|s| seen.push(s));
        // Whatever the interleaving: every sample arrived intact, in order,
        // or was counted as dropped.
        assert_eq!(seen.len() as u64 + ring.dropped(), N);
        assert!(seen.iter().all(|s| s.latency_ns == s.at_ns as i64 * 3));
        assert!(seen.windows(2).all(|w| w[0].at_ns < w[1].at_ns));
    }
}
