//! Per-second min/avg/max series, built by the measuring thread without locks or
//! allocation and collected by the (non real-time) monitor thread.
//!
//! The measuring thread closes a one-second window when a sample falls into a
//! later second and pushes it into a fixed single-producer/single-consumer ring.
//! If the monitor falls so far behind that the ring is full, the window is
//! counted as dropped (reported), never blocked on.
//!
//! So that memory does not grow with run length, the collected series is kept
//! to at most `MAX_WINDOWS` entries: when it would grow beyond, neighbouring
//! windows are merged in pairs (a 3-hour run reports 2-second windows, and so
//! on). Nothing is lost: counts, minima, maxima and means merge exactly.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Windows buffered between two drains of the monitor (it drains every 100 ms).
const RING_SLOTS: usize = 64;
/// Most windows kept per series: two hours at one second each (~300 KiB).
pub const MAX_WINDOWS: usize = 7200;

/// One window of samples: it starts `second` seconds after the start of the
/// run and spans `span_s` seconds (1 unless merged, see `compact`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    pub second: u64,
    pub span_s: u64,
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
}

#[derive(Default)]
struct Slot {
    second: AtomicU64,
    count: AtomicU64,
    sum: AtomicI64,
    min: AtomicI64,
    max: AtomicI64,
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
                span_s: 1,
                samples: count,
                min_ns: slot.min.load(Ordering::Relaxed),
                avg_ns: slot.sum.load(Ordering::Relaxed) as f64 / count.max(1) as f64,
                max_ns: slot.max.load(Ordering::Relaxed),
            });
            tail += 1;
        }
        self.tail.store(tail, Ordering::Release);
        while out.len() > MAX_WINDOWS {
            compact(out);
        }
    }

    /// Windows lost because the consumer was starved (normally 0).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Halves the series by merging neighbours (0+1, 2+3, ...). Windows of one
/// merged pair may not be adjacent (seconds without samples have no window);
/// the merged span covers both.
pub fn compact(series: &mut Vec<SecondStats>) {
    *series = coarsened(series, 2);
}

/// The series with every `n` consecutive windows merged into one (the last
/// group may be shorter): counts add up, minima and maxima are kept, means
/// are weighted by samples.
pub fn coarsened(series: &[SecondStats], n: usize) -> Vec<SecondStats> {
    series.chunks(n.max(1)).filter_map(merged).collect()
}

/// One window spanning `windows` (in time order), or `None` when empty.
pub fn merged(windows: &[SecondStats]) -> Option<SecondStats> {
    let (first, last) = (windows.first()?, windows.last()?);
    let samples: u64 = windows.iter().map(|w| w.samples).sum();
    let sum: f64 = windows.iter().map(|w| w.avg_ns * w.samples as f64).sum();
    Some(SecondStats {
        second: first.second,
        span_s: last.second + last.span_s - first.second,
        samples,
        min_ns: windows.iter().map(|w| w.min_ns).min()?,
        avg_ns: if windows.len() == 1 {
            first.avg_ns
        } else {
            sum / samples.max(1) as f64
        },
        max_ns: windows.iter().map(|w| w.max_ns).max()?,
    })
}

struct OpenWindow {
    second: u64,
    count: u64,
    sum: i64,
    min: i64,
    max: i64,
}

/// Producer side, owned by the measuring thread.
pub struct WindowWriter<'a> {
    ring: &'a WindowRing,
    start_ns: u64,
    /// Monotonic bounds of the open window: a sample inside them needs no
    /// division to find its second.
    open_from_ns: u64,
    open_until_ns: u64,
    open: OpenWindow,
}

impl<'a> WindowWriter<'a> {
    pub fn new(ring: &'a WindowRing, start_ns: u64) -> Self {
        WindowWriter {
            ring,
            start_ns,
            open_from_ns: start_ns,
            open_until_ns: start_ns.saturating_add(1_000_000_000),
            open: OpenWindow {
                second: 0,
                count: 0,
                sum: 0,
                min: i64::MAX,
                max: i64::MIN,
            },
        }
    }

    /// Adds a sample taken at monotonic time `at_ns`.
    #[inline]
    pub fn record(&mut self, at_ns: u64, latency_ns: i64) {
        if at_ns < self.open_from_ns || at_ns >= self.open_until_ns {
            let second = at_ns.saturating_sub(self.start_ns) / 1_000_000_000;
            if second != self.open.second {
                self.flush();
                self.open.second = second;
            }
            self.open_from_ns = self.start_ns + second * 1_000_000_000;
            self.open_until_ns = self.open_from_ns.saturating_add(1_000_000_000);
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
        self.open.min = i64::MAX;
        self.open.max = i64::MIN;
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
                span_s: 1,
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

    #[test]
    fn compaction_merges_neighbours_exactly() {
        let w = |second, samples, min_ns, avg_ns, max_ns| SecondStats {
            second,
            span_s: 1,
            samples,
            min_ns,
            avg_ns,
            max_ns,
        };
        let mut series = vec![w(0, 1, 5, 5.0, 5), w(1, 3, 1, 9.0, 20), w(3, 2, 4, 4.0, 4)];
        compact(&mut series);
        assert_eq!(
            series,
            vec![
                SecondStats {
                    second: 0,
                    span_s: 2,
                    samples: 4,
                    min_ns: 1,
                    avg_ns: 8.0,
                    max_ns: 20
                },
                w(3, 2, 4, 4.0, 4)
            ]
        );
        compact(&mut series);
        assert_eq!(series[0].span_s, 4);
        assert_eq!(series[0].samples, 6);
    }

    #[test]
    fn collected_series_stays_bounded() {
        let ring = WindowRing::default();
        let mut out = Vec::new();
        let mut w = WindowWriter::new(&ring, 0);
        for s in 0..(3 * MAX_WINDOWS as u64) {
            w.record(s * 1_000_000_000, 7);
            if s % 32 == 0 {
                ring.drain_into(&mut out);
            }
        }
        w.flush();
        ring.drain_into(&mut out);
        assert!(out.len() <= MAX_WINDOWS, "{}", out.len());
        assert_eq!(
            out.iter().map(|x| x.samples).sum::<u64>(),
            3 * MAX_WINDOWS as u64
        );
        assert_eq!(
            out.last().map(|x| x.second + x.span_s),
            Some(3 * MAX_WINDOWS as u64)
        );
    }
}
