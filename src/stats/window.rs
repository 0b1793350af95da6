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
//! on). Nothing is lost: counts, minima, maxima and means merge exactly, and
//! so do the per-window percentiles, which are taken from the merged
//! windows' histograms (`WindowSeries`, `super::window_histogram`).

use super::samples::SampleRing;
use super::window_histogram::{self as wh, HistogramRing, PackedHistogram};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Windows buffered between two drains of the monitor (it drains every 100 ms).
const RING_SLOTS: usize = 64;
/// Most windows kept per series: two hours at one second each (~300 KiB).
pub const MAX_WINDOWS: usize = 7200;

/// The percentiles every window reports, from its own histogram.
pub const WINDOW_PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

/// One window of samples: it starts `second` seconds after the start of the
/// run and spans `span_s` seconds (1 unless merged, see `compact`).
///
/// `p50_ns`, `p99_ns` and `p999_ns` are the window's own percentiles (nearest
/// rank, bucket top within 1 %, clamped into [min_ns, max_ns]); None in
/// reports written before they existed, and for a window whose histogram was
/// lost to a starved monitor. `max_ns` is exact.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SecondStats {
    pub second: u64,
    pub span_s: u64,
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ns: Option<i64>,
}

impl SecondStats {
    /// A window without percentiles (they are set from its histogram).
    pub fn new(
        second: u64,
        span_s: u64,
        samples: u64,
        min_ns: i64,
        avg_ns: f64,
        max_ns: i64,
    ) -> Self {
        SecondStats {
            second,
            span_s,
            samples,
            min_ns,
            avg_ns,
            max_ns,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
        }
    }

    /// The window's percentiles from `tops` (`WINDOW_PERCENTILES`' bucket
    /// tops, unclamped), or None.
    fn set_percentiles(&mut self, tops: Option<[i64; 3]>) {
        let [p50, p99, p999] = tops.map_or([None; 3], |t| {
            t.map(|v| Some(wh::clamped(v, self.min_ns, self.max_ns)))
        });
        (self.p50_ns, self.p99_ns, self.p999_ns) = (p50, p99, p999);
    }
}

/// The bucket tops of `WINDOW_PERCENTILES` in `h`, None when it is empty.
fn percentile_tops(h: &Histogram<u64>) -> Option<[i64; 3]> {
    let [a, b, c] = WINDOW_PERCENTILES.map(|p| wh::percentile(h, p));
    Some([a?, b?, c?])
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
    /// The windows' histograms, published before their windows.
    histograms: HistogramRing,
    /// The producer's open histogram, built (and touched) with the ring on
    /// the thread that sets up, taken once by `WindowWriter::new`.
    open_histogram: Mutex<Option<Histogram<u64>>>,
}

impl Default for WindowRing {
    fn default() -> Self {
        WindowRing {
            slots: (0..RING_SLOTS).map(|_| Slot::default()).collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            histograms: HistogramRing::default(),
            open_histogram: Mutex::new(Some(wh::window_histogram())),
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

    /// Moves every completed window, with its histogram, into `out`
    /// (consumer side).
    pub fn drain_into(&self, out: &mut WindowSeries) {
        self.drain_into_with(out, &mut |_, _| {});
    }

    /// `drain_into`, telling `seen` of each window as it is appended (see
    /// `WindowHook`).
    pub fn drain_into_with(&self, out: &mut WindowSeries, seen: &mut WindowSeen<'_>) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let mut windows = Vec::new();
        while tail < head {
            let slot = &self.slots[(tail % RING_SLOTS as u64) as usize];
            let count = slot.count.load(Ordering::Relaxed);
            windows.push(SecondStats::new(
                slot.second.load(Ordering::Relaxed),
                1,
                count,
                slot.min.load(Ordering::Relaxed),
                slot.sum.load(Ordering::Relaxed) as f64 / count.max(1) as f64,
                slot.max.load(Ordering::Relaxed),
            ));
            tail += 1;
        }
        self.tail.store(tail, Ordering::Release);
        // After the windows: every histogram of a window seen above was
        // published before it (see `WindowWriter::flush`).
        out.extend_with(windows, &self.histograms, seen);
    }

    /// Windows lost because the consumer was starved (normally 0).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A series' counters that its windows do not carry, as the measuring
/// thread published them so far (each test kind fills what it counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveCounters {
    /// Periods missed (periodic tests).
    pub overruns: u64,
    /// Samples above `--max-latency`.
    pub above_limit: u64,
    /// IPC: waits that ended without a wake-up.
    pub timeouts: u64,
    /// OS noise: the interruptions' sum and the time spun so far, ns.
    pub noise: Option<(u64, u64)>,
}

/// What a monitor tells of each window it drains: the window and its
/// histogram (None when it was lost to a starved monitor).
pub type WindowSeen<'a> = dyn FnMut(&SecondStats, Option<&PackedHistogram>) + 'a;

/// Learns of the windows as the monitors drain them, on the monitor thread
/// (never a measuring one): the live outputs (`--prom` rewritten every
/// window, `--hdr-log` appended) and the SIGUSR1 snapshots of the tests
/// that take theirs from the windows. Implemented by the pipeline; defined
/// here, low, so that every kind of test's monitor can call it.
pub trait WindowHook {
    /// Window `window` of series `series` (the test's series index) closed,
    /// with its histogram when it has one.
    fn window(&mut self, series: usize, window: &SecondStats, histogram: Option<&PackedHistogram>);

    /// The counters of series `series` so far that its windows do not carry,
    /// as its measuring thread last published them (called every monitor
    /// tick, before `drained`): a snapshot or a live `--prom` must not say
    /// "no overrun" while there were some.
    fn counters(&mut self, _series: usize, _counters: LiveCounters) {}

    /// The monitor drained every series once (called every monitor tick):
    /// the moment to rewrite what changed.
    fn drained(&mut self) {}

    /// A snapshot (SIGUSR1) was asked for, served from the windows so far.
    fn snapshot(&mut self) {}
}

/// No live outputs (unit tests, callers without a pipeline).
pub struct NoWindowHook;

impl WindowHook for NoWindowHook {
    fn window(&mut self, _: usize, _: &SecondStats, _: Option<&PackedHistogram>) {}
}

/// A series of windows as the monitor collects it, with each window's
/// histogram packed beside it so that merging windows (beyond
/// `MAX_WINDOWS`) merges their histograms: the merged windows' percentiles
/// are those of all their samples.
#[derive(Default)]
pub struct WindowSeries {
    windows: Vec<SecondStats>,
    histograms: Vec<Option<PackedHistogram>>,
    /// Histograms drained before their window (keyed by window), with the
    /// bucket tops of their percentiles.
    pending: VecDeque<(u64, PackedHistogram, Option<[i64; 3]>)>,
}

impl WindowSeries {
    /// Appends `windows` (closed, in time order, keyed by `second`) and
    /// gives each the histogram `ring` holds for it. A window whose
    /// histogram was dropped keeps its exact min/avg/max and no percentiles.
    pub fn extend(&mut self, windows: impl IntoIterator<Item = SecondStats>, ring: &HistogramRing) {
        self.extend_with(windows, ring, &mut |_, _| {});
    }

    /// `extend`, telling `seen` of each window (its percentiles set) and
    /// its histogram as it is appended, before any merging.
    pub fn extend_with(
        &mut self,
        windows: impl IntoIterator<Item = SecondStats>,
        ring: &HistogramRing,
        seen: &mut WindowSeen<'_>,
    ) {
        ring.drain(|key, h| {
            self.pending
                .push_back((key, PackedHistogram::of(h), percentile_tops(h)));
        });
        for mut window in windows {
            while self.pending.front().is_some_and(|p| p.0 < window.second) {
                self.pending.pop_front();
            }
            let histogram = match self.pending.front() {
                Some(p) if p.0 == window.second => self.pending.pop_front(),
                _ => None,
            };
            window.set_percentiles(histogram.as_ref().and_then(|p| p.2));
            seen(&window, histogram.as_ref().map(|p| &p.1));
            self.windows.push(window);
            self.histograms.push(histogram.map(|p| p.1));
        }
        while self.windows.len() > MAX_WINDOWS {
            self.compact();
        }
    }

    /// Windows without histograms (a report's, or a test's).
    pub fn from_windows(windows: Vec<SecondStats>) -> WindowSeries {
        WindowSeries {
            histograms: vec![None; windows.len()],
            windows,
            pending: VecDeque::new(),
        }
    }

    pub fn windows(&self) -> &[SecondStats] {
        &self.windows
    }

    /// Window `i`'s histogram, when it has one.
    pub fn histogram(&self, i: usize) -> Option<Histogram<u64>> {
        self.histograms
            .get(i)?
            .as_ref()
            .map(PackedHistogram::unpacked)
    }

    pub fn into_windows(self) -> Vec<SecondStats> {
        self.windows
    }

    /// Merges windows 0+1, 2+3, ... as `compact` does, histograms included.
    fn compact(&mut self) {
        let windows = std::mem::take(&mut self.windows);
        let histograms = std::mem::take(&mut self.histograms);
        let mut scratch = wh::window_histogram();
        for (w, h) in windows.chunks(2).zip(histograms.chunks(2)) {
            let Some(mut window) = merged(w) else {
                continue;
            };
            // Exact only when every part has its histogram; otherwise no
            // percentiles rather than a guess.
            let histogram = if h.iter().all(Option::is_some) {
                scratch.reset();
                h.iter().flatten().for_each(|p| p.add_to(&mut scratch));
                window.set_percentiles(percentile_tops(&scratch));
                Some(PackedHistogram::of(&scratch))
            } else {
                window.set_percentiles(None);
                None
            };
            self.windows.push(window);
            self.histograms.push(histogram);
        }
    }

    /// Merges the last window into the one before it (a short tail, see
    /// `fold_short_tail`), histograms included; the merged window
    /// keeps the earlier one's `second` and span.
    pub fn fold_last(&mut self) {
        let n = self.windows.len();
        if n < 2 {
            return;
        }
        let before = self.windows[n - 2];
        let mut folded = merged(&self.windows[n - 2..]).expect("two windows");
        folded.span_s = before.span_s;
        let last = self.histograms.pop().flatten();
        let histogram = match (self.histograms.pop().flatten(), last) {
            (Some(a), Some(b)) => {
                let mut h = a.unpacked();
                b.add_to(&mut h);
                folded.set_percentiles(percentile_tops(&h));
                Some(PackedHistogram::of(&h))
            }
            _ => {
                folded.set_percentiles(None);
                None
            }
        };
        self.windows.truncate(n - 2);
        self.windows.push(folded);
        self.histograms.push(histogram);
    }
}

/// A last window that covers less than this of the run is folded into the
/// window before it (`fold_short_tail`).
const SHORTEST_TAIL_NS: u64 = 500_000_000;

/// Folds a last window that covers less than half a second of the run of
/// `elapsed_ns` into the window right before it (when that one is adjacent),
/// so that every window of the per-second series covers at least half a
/// second: the few samples of the moment a run ends past a whole second
/// (a log write completing after the deadline, a spinner's last
/// interruptions) are no window of their own, which a plot would draw as a
/// whole second. The folded window keeps the earlier one's span (the tail
/// is a fraction of a second past it); the histograms merge too
/// (`WindowSeries::fold_last`).
pub fn fold_short_tail(series: &mut WindowSeries, elapsed_ns: u64) {
    let [.., before, last] = series.windows() else {
        return;
    };
    let adjacent = before.second + before.span_s == last.second;
    let tail_ns = elapsed_ns.saturating_sub(last.second.saturating_mul(1_000_000_000));
    if adjacent && tail_ns < SHORTEST_TAIL_NS {
        series.fold_last();
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
/// are weighted by samples. Without the histograms (see `merged`), each
/// percentile is the highest of the group's: an upper bound, for drawing;
/// `WindowSeries` merges exactly.
pub fn coarsened(series: &[SecondStats], n: usize) -> Vec<SecondStats> {
    series.chunks(n.max(1)).filter_map(merged).collect()
}

/// One window spanning `windows` (in time order), or `None` when empty.
/// Percentiles cannot be merged without the samples: each is the highest of
/// the windows' (an upper bound; `WindowSeries` replaces it with the merged
/// histogram's), None when no window has it.
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
        p50_ns: windows.iter().filter_map(|w| w.p50_ns).max(),
        p99_ns: windows.iter().filter_map(|w| w.p99_ns).max(),
        p999_ns: windows.iter().filter_map(|w| w.p999_ns).max(),
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
    /// The open window's histogram (swapped into the ring when it closes).
    histogram: Histogram<u64>,
    /// `--samples`: every sample also goes to this series' sample ring.
    samples: Option<Arc<SampleRing>>,
}

impl<'a> WindowWriter<'a> {
    /// Set-up, before the measuring loop: takes the ring's pre-built
    /// histogram (building one only if a writer took it already).
    pub fn new(ring: &'a WindowRing, start_ns: u64) -> Self {
        let histogram = ring
            .open_histogram
            .lock()
            .ok()
            .and_then(|mut h| h.take())
            .unwrap_or_else(wh::window_histogram);
        WindowWriter {
            histogram,
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
            samples: None,
        }
    }

    /// With `--samples`: every recorded sample is also pushed into `ring`
    /// (`stats::samples`; set-up only, the ring is built already).
    pub fn with_samples(mut self, ring: Option<Arc<SampleRing>>) -> Self {
        self.samples = ring;
        self
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
        wh::record(&mut self.histogram, latency_ns);
        if let Some(ring) = &self.samples {
            ring.push(at_ns, latency_ns);
        }
    }

    /// Publishes the open window if it holds samples (also called at the
    /// end): its histogram first, so that a consumer that sees the window
    /// finds its histogram.
    pub fn flush(&mut self) {
        if self.open.count > 0 {
            self.ring
                .histograms
                .publish(&mut self.histogram, self.open.second);
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
        let mut series = WindowSeries::default();
        ring.drain_into(&mut series);
        let out = series.windows();
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[0],
            SecondStats {
                p50_ns: Some(10),
                p99_ns: Some(30),
                p999_ns: Some(30),
                ..SecondStats::new(0, 1, 2, 10, 20.0, 30)
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
        let mut out = WindowSeries::default();
        ring.drain_into(&mut out);
        assert_eq!(out.windows().len(), RING_SLOTS);
        // The histogram ring is smaller: the first windows kept theirs, the
        // rest have exact min/avg/max and no percentiles.
        assert_eq!(out.windows()[0].p99_ns, Some(1));
        assert_eq!(out.windows()[RING_SLOTS - 1].p99_ns, None);
        assert!(out.histogram(0).is_some());
        // After draining, there is room again.
        w.record(1_000 * 1_000_000_000, 2);
        w.flush();
        let mut out = WindowSeries::default();
        ring.drain_into(&mut out);
        assert_eq!(out.windows().len(), 1);
        assert_eq!(out.windows()[0].p99_ns, Some(2));
    }

    #[test]
    fn compaction_merges_neighbours_exactly() {
        let w = |second, samples, min_ns, avg_ns, max_ns| {
            SecondStats::new(second, 1, samples, min_ns, avg_ns, max_ns)
        };
        let mut series = vec![w(0, 1, 5, 5.0, 5), w(1, 3, 1, 9.0, 20), w(3, 2, 4, 4.0, 4)];
        compact(&mut series);
        assert_eq!(
            series,
            vec![SecondStats::new(0, 2, 4, 1, 8.0, 20), w(3, 2, 4, 4.0, 4)]
        );
        compact(&mut series);
        assert_eq!(series[0].span_s, 4);
        assert_eq!(series[0].samples, 6);
    }

    #[test]
    fn collected_series_stays_bounded() {
        let ring = WindowRing::default();
        let mut out = WindowSeries::default();
        let mut w = WindowWriter::new(&ring, 0);
        for s in 0..(3 * MAX_WINDOWS as u64) {
            w.record(s * 1_000_000_000, 7);
            if s % 32 == 0 {
                ring.drain_into(&mut out);
            }
        }
        w.flush();
        ring.drain_into(&mut out);
        let out = out.windows();
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

    /// Feeds `per_window[i]` as window i's samples (one writer, drained
    /// after every window so no histogram is dropped).
    fn series_of(per_window: &[Vec<i64>]) -> WindowSeries {
        let ring = WindowRing::default();
        let mut out = WindowSeries::default();
        let mut w = WindowWriter::new(&ring, 0);
        for (s, samples) in per_window.iter().enumerate() {
            for &v in samples {
                w.record(s as u64 * 1_000_000_000, v);
            }
            w.flush();
            ring.drain_into(&mut out);
        }
        out
    }

    #[test]
    fn every_window_has_its_own_percentiles() {
        // Window 0: 1..=100; window 1: 1000 samples of 7 and one of 500.
        let mut second = vec![7; 1000];
        second.push(500);
        let out = series_of(&[(1..=100).collect(), second]);
        let w = out.windows();
        assert_eq!(
            (w[0].p50_ns, w[0].p99_ns, w[0].p999_ns),
            (Some(50), Some(99), Some(100))
        );
        assert_eq!(
            (w[1].p50_ns, w[1].p99_ns, w[1].p999_ns),
            (Some(7), Some(7), Some(7))
        );
        assert_eq!(w[1].max_ns, 500);
        assert_eq!(out.histogram(1).map(|h| h.len()), Some(1001));
    }

    #[test]
    fn merging_windows_merges_their_histograms_not_their_percentiles() {
        // Window 0: 100 samples of 10; window 1: 100 samples of 1000. The
        // merged p50 is 10 (the 100th of 200 samples) and p99 is 1000; an
        // average of the two p50s would say 505.
        let out = series_of(&[vec![10; 100], vec![1000; 100]]);
        let mut series = out;
        series.compact();
        let w = series.windows();
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].second, w[0].span_s, w[0].samples), (0, 2, 200));
        assert_eq!(w[0].p50_ns, Some(10));
        let p99 = w[0].p99_ns.unwrap();
        assert!((1000..=1008).contains(&p99), "{p99}");
        assert_eq!(series.histogram(0).map(|h| h.len()), Some(200));
    }

    #[test]
    fn compaction_beyond_max_windows_keeps_exact_percentiles() {
        let ring = WindowRing::default();
        let mut out = WindowSeries::default();
        let mut w = WindowWriter::new(&ring, 0);
        // Even windows: one sample of 10; odd windows: one of 2000.
        for s in 0..(MAX_WINDOWS as u64 + 2) {
            w.record(s * 1_000_000_000, if s % 2 == 0 { 10 } else { 2000 });
            w.flush();
            ring.drain_into(&mut out);
        }
        // The 7201st window halved the series to 3601 windows (the last
        // one alone); the 7202nd came after.
        let windows = out.windows();
        assert_eq!(windows.len(), MAX_WINDOWS / 2 + 2);
        let windows = &windows[..MAX_WINDOWS / 2];
        assert!(windows.iter().all(|x| x.span_s == 2 && x.samples == 2));
        // Two samples: p50 is the lower one (rank 1), p99 the higher.
        assert!(windows.iter().all(|x| x.p50_ns == Some(10)));
        assert!(windows.iter().all(|x| x.p99_ns == Some(2000)));
    }

    #[test]
    fn folding_the_last_window_merges_its_histogram() {
        let mut out = series_of(&[vec![5; 10], vec![900]]);
        out.fold_last();
        let w = out.windows();
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].span_s, w[0].samples, w[0].max_ns), (1, 11, 900));
        assert_eq!(w[0].p50_ns, Some(5));
        assert_eq!(w[0].p999_ns, Some(900));
    }

    #[test]
    fn old_windows_without_percentiles_still_load_and_stay_without() {
        let old = r#"{"second":3,"span_s":1,"samples":2,"min_ns":1,"avg_ns":1.5,"max_ns":2}"#;
        let w: SecondStats = serde_json::from_str(old).unwrap();
        assert_eq!(w, SecondStats::new(3, 1, 2, 1, 1.5, 2));
        assert_eq!(serde_json::to_string(&w).unwrap(), old);
        let new = SecondStats {
            p99_ns: Some(2),
            ..w
        };
        assert!(
            serde_json::to_string(&new)
                .unwrap()
                .contains(r#""p99_ns":2"#)
        );
    }
}
