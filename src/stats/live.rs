//! What a measuring thread shares with the (non real-time) monitor while a run
//! goes on: a single-producer/single-consumer ring of fixed records, and a
//! coarse histogram for a live percentile. The producer never blocks, locks or
//! allocates; a full ring drops the record and counts it.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A bounded SPSC queue of `Copy` records (one writer thread, one reader).
pub struct SpscRing<T: Copy + Default> {
    slots: Box<[UnsafeCell<T>]>,
    /// Records written so far (written by the producer only).
    head: AtomicU64,
    /// Records read so far (written by the consumer only).
    tail: AtomicU64,
    dropped: AtomicU64,
}

// SAFETY: a slot is written by the producer only while it lies outside
// [tail, head) and read by the consumer only while inside it; head and tail
// hand the slots over with release/acquire ordering.
unsafe impl<T: Copy + Default + Send> Sync for SpscRing<T> {}

impl<T: Copy + Default> SpscRing<T> {
    pub fn with_capacity(capacity: usize) -> Self {
        SpscRing {
            slots: (0..capacity.max(1))
                .map(|_| UnsafeCell::new(T::default()))
                .collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Producer side: appends `record`, or counts it as dropped when full
    /// (false).
    pub fn push(&self, record: T) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        let capacity = self.slots.len() as u64;
        if head - tail >= capacity {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // SAFETY: the slot is outside [tail, head): the consumer does not read it.
        unsafe { *self.slots[(head % capacity) as usize].get() = record };
        self.head.store(head + 1, Ordering::Release);
        true
    }

    /// Consumer side: hands every record written so far to `each`, in order.
    pub fn drain(&self, mut each: impl FnMut(T)) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let capacity = self.slots.len() as u64;
        while tail < head {
            // SAFETY: the slot is inside [tail, head): the producer does not write it.
            each(unsafe { *self.slots[(tail % capacity) as usize].get() });
            tail += 1;
        }
        self.tail.store(tail, Ordering::Release);
    }

    /// Records lost because the consumer was starved (normally 0).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Exact buckets below this value; above it, 16 buckets per power of two.
const LINEAR_BELOW: u64 = 32;
const SUB_BUCKETS: u64 = 16;
const BUCKETS: usize = (LINEAR_BELOW + (64 - 5) * SUB_BUCKETS) as usize;

/// A histogram one thread writes and another reads while the run goes on, for
/// the live percentile of a progress line. Resolution 1/16 (6 %) of the value;
/// the final report uses the exact recorder, never this.
pub struct LiveHistogram {
    buckets: Box<[AtomicU64]>,
    below_zero: AtomicU64,
    count: AtomicU64,
}

impl Default for LiveHistogram {
    fn default() -> Self {
        LiveHistogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            below_zero: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

fn bucket_of(value: u64) -> usize {
    if value < LINEAR_BELOW {
        return value as usize;
    }
    let exponent = 63 - u64::from(value.leading_zeros());
    let sub = (value >> (exponent - 4)) - SUB_BUCKETS;
    (LINEAR_BELOW + (exponent - 5) * SUB_BUCKETS + sub) as usize
}

/// The largest value of bucket `index` (a live percentile never understates).
fn bucket_top(index: usize) -> u64 {
    let index = index as u64;
    if index < LINEAR_BELOW {
        return index;
    }
    let exponent = (index - LINEAR_BELOW) / SUB_BUCKETS + 5;
    let sub = (index - LINEAR_BELOW) % SUB_BUCKETS;
    ((SUB_BUCKETS + sub + 1) << (exponent - 4)).wrapping_sub(1)
}

impl LiveHistogram {
    /// Writer side (one thread only): two plain stores, no read-modify-write.
    #[inline]
    pub fn record(&self, ns: i64) {
        let counter = if ns < 0 {
            &self.below_zero
        } else {
            &self.buckets[bucket_of(ns as u64)]
        };
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.count
            .store(self.count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Reader side: the `p` percentile so far (nearest rank, bucket top), or
    /// None before the first sample. Negative samples rank first, shown as 0.
    pub fn percentile(&self, p: f64) -> Option<i64> {
        let count = self.count.load(Ordering::Relaxed);
        if count == 0 {
            return None;
        }
        let rank = super::nearest_rank(p, count);
        let mut cumulative = self.below_zero.load(Ordering::Relaxed);
        if cumulative >= rank {
            return Some(0);
        }
        for (i, b) in self.buckets.iter().enumerate() {
            cumulative += b.load(Ordering::Relaxed);
            if cumulative >= rank {
                return Some(bucket_top(i).min(i64::MAX as u64) as i64);
            }
        }
        // The writer raced ahead of this reading: the last non-empty bucket.
        self.buckets
            .iter()
            .rposition(|b| b.load(Ordering::Relaxed) > 0)
            .map(|i| bucket_top(i).min(i64::MAX as u64) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_hands_over_in_order_and_counts_drops() {
        let ring: SpscRing<u64> = SpscRing::with_capacity(4);
        for v in 0..6 {
            ring.push(v);
        }
        assert_eq!(ring.dropped(), 2);
        let mut got = Vec::new();
        ring.drain(|v| got.push(v));
        assert_eq!(got, vec![0, 1, 2, 3]);
        ring.push(9);
        got.clear();
        ring.drain(|v| got.push(v));
        assert_eq!(got, vec![9]);
    }

    #[test]
    fn ring_works_across_threads() {
        let ring = std::sync::Arc::new(SpscRing::<u64>::with_capacity(64));
        let writer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for v in 1..=10_000u64 {
                    ring.push(v);
                    if v % 32 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                }
            })
        };
        // Every record arrives once, in order; a starved reader may lose
        // some, and then they are counted.
        let mut received = 0u64;
        let mut last = 0;
        while !writer.is_finished() || received + ring.dropped() < 10_000 {
            ring.drain(|v| {
                assert!(v > last, "{v} after {last}");
                last = v;
                received += 1;
            });
            std::thread::yield_now();
        }
        writer.join().unwrap();
        assert_eq!(received + ring.dropped(), 10_000);
    }

    #[test]
    fn buckets_are_exact_then_within_one_sixteenth() {
        for v in 0..LINEAR_BELOW {
            assert_eq!(bucket_top(bucket_of(v)), v);
        }
        for v in [32u64, 33, 47, 48, 1_000, 1_234_567, u64::MAX / 3, u64::MAX] {
            let top = bucket_top(bucket_of(v));
            assert!(top >= v, "{v} -> {top}");
            assert!((top - v) as f64 <= v as f64 / 16.0, "{v} -> {top}");
        }
        // Bucket indexes are monotone in the value.
        let mut last = 0;
        for v in (0..100_000u64).step_by(7) {
            let b = bucket_of(v);
            assert!(b >= last);
            last = b;
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn live_percentiles() {
        let h = LiveHistogram::default();
        assert_eq!(h.percentile(99.0), None);
        for v in 1..=100 {
            h.record(v);
        }
        h.record(-5);
        assert_eq!(h.percentile(0.5), Some(0));
        // 50 shares a 2-wide bucket with 51: the top is reported.
        assert_eq!(h.percentile(50.0), Some(51));
        let p99 = h.percentile(99.0).unwrap();
        assert!((99..=103).contains(&p99), "{p99}");
    }
}
