//! Per-window histograms: the distribution of one window's samples, so that
//! every window of a series can report its own p50/p99/p99.9 (a days-long run
//! needs "how did p99 move", not only "how did max move").
//!
//! The measuring thread records into an open histogram it owns (built and
//! touched before its loop: recording is one counter increment, no
//! allocation, lock or system call). When its window closes it swaps that
//! histogram with an empty one from a small single-producer/single-consumer
//! ring of pre-allocated histograms (`HistogramRing::publish`); the monitor
//! reads and empties the full ones (`drain`). A starved monitor costs the
//! window its percentiles (counted), never a block or an allocation.
//!
//! The monitor keeps each window's histogram packed (`PackedHistogram`, a
//! few bytes per non-empty bucket) so that merging windows of long runs
//! merges their histograms: merged percentiles are exact percentiles of the
//! merged samples, never averages of percentiles.

use hdrhistogram::Histogram;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Two significant digits: every bucket spans at most 1/128 (< 1 %) of its
/// value, which is finer than any window-to-window change worth plotting,
/// and keeps one histogram at ~36 KiB (three digits would be ~270 KiB, locked
/// in memory once per slot and series).
pub const WINDOW_SIGNIFICANT_DIGITS: u8 = 2;
/// Highest value resolved: one hour, as the run's histogram; longer samples
/// count in the top bucket (the window's exact max is kept beside it).
pub const WINDOW_HIGHEST_NS: u64 = super::HISTOGRAM_HIGHEST_NS;
/// Full histograms waiting for the monitor (it drains every 100 ms; windows
/// close once a second): a monitor starved for 8 s loses percentiles, not
/// windows (the window ring holds 64). 8 x 36 KiB per series.
const RING_SLOTS: usize = 8;

/// An empty window histogram, every counter written once so that its pages
/// are faulted in now rather than on a measuring thread.
pub fn window_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, WINDOW_HIGHEST_NS, WINDOW_SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid");
    h.auto(false);
    h.reset();
    h
}

/// Records one sample: no allocation. A negative sample (a timer firing
/// early) counts as 0; the window's exact min keeps its value.
#[inline]
pub fn record(h: &mut Histogram<u64>, ns: i64) {
    h.saturating_record(ns.max(0) as u64);
}

/// The nearest-rank `p` percentile of `h` as its bucket's highest
/// equivalent value (never understates); None when `h` is empty. Clamp it
/// into the window's exact [min, max] with `clamped`.
pub fn percentile(h: &Histogram<u64>, p: f64) -> Option<i64> {
    let rank = super::nearest_rank(p, h.len());
    let mut cumulative = 0u64;
    for bucket in h.iter_recorded() {
        cumulative += bucket.count_since_last_iteration();
        if cumulative >= rank {
            let top = h.highest_equivalent(bucket.value_iterated_to());
            return Some(top.min(i64::MAX as u64) as i64);
        }
    }
    None
}

/// A bucket top inside the window's exact [min, max]: a wide bucket's top
/// may lie above the real max, a negative sample counted as 0 below it.
pub fn clamped(value: i64, min_ns: i64, max_ns: i64) -> i64 {
    value.clamp(min_ns.min(max_ns), max_ns)
}

struct Slot {
    /// The window the histogram belongs to (its `second`, or its loop number).
    key: u64,
    histogram: Histogram<u64>,
}

/// Pre-allocated histograms handed from one producer to one consumer.
pub struct HistogramRing {
    slots: Box<[UnsafeCell<Slot>]>,
    /// Histograms published so far (written by the producer only).
    head: AtomicU64,
    /// Histograms read so far (written by the consumer only).
    tail: AtomicU64,
    dropped: AtomicU64,
}

// SAFETY: as SpscRing: a slot is written by the producer only while it lies
// outside [tail, head) and read or emptied by the consumer only inside it;
// head and tail hand the slots over with release/acquire ordering.
unsafe impl Sync for HistogramRing {}
unsafe impl Send for HistogramRing {}

impl Default for HistogramRing {
    fn default() -> Self {
        HistogramRing {
            slots: (0..RING_SLOTS)
                .map(|_| {
                    UnsafeCell::new(Slot {
                        key: 0,
                        histogram: window_histogram(),
                    })
                })
                .collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }
}

impl HistogramRing {
    /// Producer side (one thread only): hands `open`, the histogram of window
    /// `key`, to the consumer and leaves an empty histogram in its place (a
    /// swap: no allocation, no copy). With the ring full, the window's
    /// histogram is counted as dropped and `open` is emptied for the next.
    pub fn publish(&self, open: &mut Histogram<u64>, key: u64) {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head - tail >= self.slots.len() as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            open.reset();
            return;
        }
        // SAFETY: the slot is outside [tail, head): the consumer does not
        // touch it, and it was emptied before its tail advanced.
        let slot = unsafe { &mut *self.slots[(head % self.slots.len() as u64) as usize].get() };
        slot.key = key;
        std::mem::swap(&mut slot.histogram, open);
        self.head.store(head + 1, Ordering::Release);
    }

    /// Consumer side: hands every published histogram to `each` with its
    /// window's key, in order, then empties it for the producer's reuse.
    pub fn drain(&self, mut each: impl FnMut(u64, &Histogram<u64>)) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        while tail < head {
            // SAFETY: the slot is inside [tail, head): the producer does not touch it.
            let slot = unsafe { &mut *self.slots[(tail % self.slots.len() as u64) as usize].get() };
            each(slot.key, &slot.histogram);
            slot.histogram.reset();
            tail += 1;
            self.tail.store(tail, Ordering::Release);
        }
    }

    /// Window histograms lost because the consumer was starved (normally 0).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A window histogram as the monitor keeps it: the non-empty buckets as
/// LEB128 pairs (distance to the previous bucket's value, count), typically
/// a few hundred bytes where the histogram itself is ~36 KiB.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PackedHistogram {
    bytes: Box<[u8]>,
    count: u64,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

impl PackedHistogram {
    pub fn of(h: &Histogram<u64>) -> PackedHistogram {
        let mut bytes = Vec::new();
        let mut previous = 0u64;
        for bucket in h.iter_recorded() {
            let value = bucket.value_iterated_to();
            put_varint(&mut bytes, value - previous);
            put_varint(&mut bytes, bucket.count_since_last_iteration());
            previous = value;
        }
        PackedHistogram {
            bytes: bytes.into_boxed_slice(),
            count: h.len(),
        }
    }

    /// Samples in the histogram.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds the packed buckets into `into` (a `window_histogram()`).
    pub fn add_to(&self, into: &mut Histogram<u64>) {
        let (mut at, mut value) = (0usize, 0u64);
        while at < self.bytes.len() {
            let (Some(delta), Some(count)) = (
                get_varint(&self.bytes, &mut at),
                get_varint(&self.bytes, &mut at),
            ) else {
                // Only `of` writes these bytes: a truncated pair cannot occur.
                return;
            };
            value += delta;
            into.saturating_record_n(value, count);
        }
    }

    /// The histogram itself.
    pub fn unpacked(&self) -> Histogram<u64> {
        let mut h = window_histogram();
        self.add_to(&mut h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_swaps_and_drain_empties() {
        let ring = HistogramRing::default();
        let mut open = window_histogram();
        for v in [10, 20, 30, -4] {
            record(&mut open, v);
        }
        ring.publish(&mut open, 7);
        assert_eq!(open.len(), 0, "the producer gets an empty histogram back");
        let mut seen = Vec::new();
        ring.drain(|key, h| seen.push((key, h.len(), h.max())));
        assert_eq!(seen, vec![(7, 4, 30)]);
        // The slot came back empty: publish it again and it holds only the new one.
        record(&mut open, 5);
        ring.publish(&mut open, 8);
        seen.clear();
        ring.drain(|key, h| seen.push((key, h.len(), h.max())));
        assert_eq!(seen, vec![(8, 1, 5)]);
    }

    #[test]
    fn a_full_ring_drops_and_empties_the_open_histogram() {
        let ring = HistogramRing::default();
        let mut open = window_histogram();
        for key in 0..(RING_SLOTS as u64 + 3) {
            record(&mut open, key as i64 + 1);
            ring.publish(&mut open, key);
            assert_eq!(open.len(), 0);
        }
        assert_eq!(ring.dropped(), 3);
        let mut keys = Vec::new();
        ring.drain(|key, _| keys.push(key));
        assert_eq!(keys, (0..RING_SLOTS as u64).collect::<Vec<_>>());
    }

    #[test]
    fn percentiles_are_nearest_rank_within_the_window_range() {
        let mut h = window_histogram();
        for v in 1..=100 {
            record(&mut h, v);
        }
        // Values up to 255 are exact at two digits.
        assert_eq!(percentile(&h, 50.0), Some(50));
        assert_eq!(percentile(&h, 99.0), Some(99));
        assert_eq!(percentile(&h, 99.9), Some(100));
        assert_eq!(percentile(&window_histogram(), 99.0), None);
        // A wide bucket's top is clamped to the exact max.
        let mut h = window_histogram();
        record(&mut h, 1_000_001);
        let top = percentile(&h, 99.0).unwrap();
        assert!(top > 1_000_001 && top < 1_010_000, "{top}");
        assert_eq!(clamped(top, 1_000_001, 1_000_001), 1_000_001);
        // Above the range, the top bucket: the exact max stands for it.
        let mut h = window_histogram();
        let max = WINDOW_HIGHEST_NS as i64 * 2;
        record(&mut h, max);
        assert_eq!(clamped(percentile(&h, 50.0).unwrap(), max, max), max);
        // Negative samples count as 0, and 0 stays inside [min, max].
        assert_eq!(clamped(0, -50, -10), -10);
        assert_eq!(clamped(0, -50, 10), 0);
    }

    #[test]
    fn packing_round_trips_every_bucket() {
        let mut h = window_histogram();
        for v in [0, 1, 1, 255, 1_000, 77_777, 123_456_789, 3_000_000_000_000] {
            record(&mut h, v);
        }
        let packed = PackedHistogram::of(&h);
        assert_eq!(packed.count(), 8);
        assert!(packed.bytes.len() < 64, "{} bytes", packed.bytes.len());
        let back = packed.unpacked();
        assert_eq!(back, h);
        assert_eq!(PackedHistogram::of(&window_histogram()).unpacked().len(), 0);
    }
}
