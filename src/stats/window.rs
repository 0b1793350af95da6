//! Per-second min/avg/max series, built by the measuring thread without locks or
//! allocation and collected by the (non real-time) monitor thread.
//!
//! The measuring thread closes a one-second window when a sample falls into a
//! later second and pushes it into a fixed single-producer/single-consumer ring.
//! If the monitor falls so far behind that the ring is full, the window is
//! counted as dropped (reported), never blocked on.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Windows buffered between two drains of the monitor (it drains every 100 ms).
const RING_SLOTS: usize = 64;

/// One second of samples: `second` counts from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    pub second: u64,
    pub samples: u64,
    pub min_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
}

#[derive(Default)]
struct Slot {
    second: AtomicU64,
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

/// The ring shared by one producer (the measuring thread) and one consumer.
pub struct WindowRing {
    slots: Vec<Slot>,
    /// Windows written so far (producer only).
    head: AtomicU64,
    /// Windows read so far (consumer only).
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl Default for WindowRing {
    fn default() -> Self {
        WindowRing {
            slots: (0..RING_SLOTS).map(|_| Slot::default()).collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }
}

impl WindowRing {
    fn push(&self, w: &OpenWindow) {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head - tail >= RING_SLOTS as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = &self.slots[(head % RING_SLOTS as u64) as usize];
        slot.second.store(w.second, Ordering::Relaxed);
        slot.count.store(w.count, Ordering::Relaxed);
        slot.sum.store(w.sum, Ordering::Relaxed);
        slot.min.store(w.min, Ordering::Relaxed);
        slot.max.store(w.max, Ordering::Relaxed);
        self.head.store(head + 1, Ordering::Release);
    }

    /// Moves every completed window into `out` (consumer side).
    pub fn drain_into(&self, out: &mut Vec<SecondStats>) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        while tail < head {
            let slot = &self.slots[(tail % RING_SLOTS as u64) as usize];
            let count = slot.count.load(Ordering::Relaxed);
            out.push(SecondStats {
                second: slot.second.load(Ordering::Relaxed),
                samples: count,
                min_ns: slot.min.load(Ordering::Relaxed),
                avg_ns: slot.sum.load(Ordering::Relaxed) as f64 / count.max(1) as f64,
                max_ns: slot.max.load(Ordering::Relaxed),
            });
            tail += 1;
        }
        self.tail.store(tail, Ordering::Release);
    }

    /// Windows lost because the consumer was starved (normally 0).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

struct OpenWindow {
    second: u64,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

/// Producer side, owned by the measuring thread.
pub struct WindowWriter<'a> {
    ring: &'a WindowRing,
    start_ns: u64,
    open: OpenWindow,
}

impl<'a> WindowWriter<'a> {
    pub fn new(ring: &'a WindowRing, start_ns: u64) -> Self {
        WindowWriter {
            ring,
            start_ns,
            open: OpenWindow {
                second: 0,
                count: 0,
                sum: 0,
                min: u64::MAX,
                max: 0,
            },
        }
    }

    /// Adds a sample taken at monotonic time `at_ns`.
    #[inline]
    pub fn record(&mut self, at_ns: u64, latency_ns: u64) {
        let second = at_ns.saturating_sub(self.start_ns) / 1_000_000_000;
        if second != self.open.second {
            self.flush();
            self.open.second = second;
        }
        let w = &mut self.open;
        w.count += 1;
        w.sum = w.sum.saturating_add(latency_ns);
        w.min = w.min.min(latency_ns);
        w.max = w.max.max(latency_ns);
    }

    /// Publishes the open window if it holds samples (also called at the end).
    pub fn flush(&mut self) {
        if self.open.count > 0 {
            self.ring.push(&self.open);
        }
        self.open.count = 0;
        self.open.sum = 0;
        self.open.min = u64::MAX;
        self.open.max = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_split_on_second_boundaries() {
        let ring = WindowRing::default();
        let mut w = WindowWriter::new(&ring, 1_000);
        w.record(1_000, 10);
        w.record(500_000_000, 30);
        w.record(1_000_001_000, 7); // second 1
        w.record(3_500_000_000, 9); // second 3 (second 2 had no samples)
        w.flush();
        let mut out = Vec::new();
        ring.drain_into(&mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[0],
            SecondStats {
                second: 0,
                samples: 2,
                min_ns: 10,
                avg_ns: 20.0,
                max_ns: 30
            }
        );
        assert_eq!(out[1].second, 1);
        assert_eq!(out[1].samples, 1);
        assert_eq!(out[2].second, 3);
        assert_eq!(out[2].max_ns, 9);
        assert_eq!(ring.dropped(), 0);
    }

    #[test]
    fn a_full_ring_counts_drops_instead_of_blocking() {
        let ring = WindowRing::default();
        let mut w = WindowWriter::new(&ring, 0);
        for s in 0..(RING_SLOTS as u64 + 5) {
            w.record(s * 1_000_000_000, 1);
        }
        w.flush();
        // 69 one-second windows into 64 slots.
        assert_eq!(ring.dropped(), 5);
        let mut out = Vec::new();
        ring.drain_into(&mut out);
        assert_eq!(out.len(), RING_SLOTS);
        // After draining, there is room again.
        w.record(1_000 * 1_000_000_000, 2);
        w.flush();
        out.clear();
        ring.drain_into(&mut out);
        assert_eq!(out.len(), 1);
    }
}
