//! Where the samples of one latency figure (user, thread or IRQ latency of one
//! sampling thread) go: the exact recorder, Xenomai's three histograms and the
//! one-second loops. Fed by the sampling thread (user latency) or by the trace
//! reader (the kernel-side figures); nothing here allocates once built.

use crate::report::XenomaiHistogram;
use crate::stats::LatencyRecorder;
use crate::stats::window_histogram::{self as wh, HistogramRing};
use hdrhistogram::Histogram;

/// One completed loop of samples (Xenomai's RTD line), after the warm-up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoopStats {
    /// 0 for the first loop after the warm-up.
    pub index: u64,
    pub samples: u64,
    pub min_ns: i64,
    pub sum_ns: i64,
    pub max_ns: i64,
    /// Whether the run stopped before the loop was complete.
    pub partial: bool,
}

impl LoopStats {
    /// The loop's exact mean (Xenomai prints the integer-ns mean).
    pub fn avg_ns(&self) -> f64 {
        self.sum_ns as f64 / self.samples.max(1) as f64
    }
}

/// The samples of one figure.
pub struct FigureSink {
    pub recorder: LatencyRecorder,
    /// Every sample: Xenomai's "avg" histogram.
    pub all: XenomaiHistogram,
    /// Each loop's minimum and maximum.
    pub loop_min: XenomaiHistogram,
    pub loop_max: XenomaiHistogram,
    open: LoopStats,
    loops_done: u64,
    /// The open loop's histogram, for its percentiles: only the run's main
    /// figure has one (`with_window`), the one the per-second series shows.
    window: Option<Histogram<u64>>,
}

impl FigureSink {
    /// Fails only for a histogram layout the settings should have refused.
    pub fn new(cells: usize, bucket_ns: u64) -> Result<FigureSink, String> {
        let histogram = || XenomaiHistogram::new(cells, bucket_ns).map_err(|e| e.to_string());
        Ok(FigureSink {
            recorder: LatencyRecorder::signed(),
            all: histogram()?,
            loop_min: histogram()?,
            loop_max: histogram()?,
            open: LoopStats::default(),
            loops_done: 0,
            window: None,
        })
    }

    /// This figure feeds the per-second series: each loop gets a histogram
    /// (built and touched now, before any sample).
    pub fn with_window(mut self) -> FigureSink {
        self.window = Some(wh::window_histogram());
        self
    }

    /// Hands the loop just closed (`index`) its histogram through `ring`
    /// (before the loop itself is pushed, so that the monitor finds it).
    pub fn publish_window(&mut self, ring: &HistogramRing, index: u64) {
        if let Some(h) = &mut self.window {
            ring.publish(h, index);
        }
    }

    #[inline]
    pub fn add(&mut self, ns: i64) {
        self.recorder.record(ns);
        self.all.add(ns);
        if let Some(h) = &mut self.window {
            wh::record(h, ns);
        }
        let open = &mut self.open;
        if open.samples == 0 {
            open.min_ns = ns;
            open.max_ns = ns;
        } else {
            open.min_ns = open.min_ns.min(ns);
            open.max_ns = open.max_ns.max(ns);
        }
        open.samples += 1;
        open.sum_ns = open.sum_ns.saturating_add(ns);
    }

    /// Closes the open loop; None when it has no samples.
    pub fn close_loop(&mut self, partial: bool) -> Option<LoopStats> {
        if self.open.samples == 0 {
            return None;
        }
        let mut done = std::mem::take(&mut self.open);
        done.index = self.loops_done;
        done.partial = partial;
        self.loops_done += 1;
        self.loop_min.add(done.min_ns);
        self.loop_max.add(done.max_ns);
        Some(done)
    }

    pub fn loops_done(&self) -> u64 {
        self.loops_done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_carry_exact_min_avg_max_and_feed_the_histograms() {
        let mut sink = FigureSink::new(10, 1_000).unwrap();
        for ns in [1_500, -200, 3_999] {
            sink.add(ns);
        }
        let first = sink.close_loop(false).unwrap();
        assert_eq!(
            (first.index, first.samples, first.min_ns, first.max_ns),
            (0, 3, -200, 3_999)
        );
        assert_eq!(first.avg_ns(), 5_299.0 / 3.0);
        assert!(sink.close_loop(false).is_none(), "an empty loop is no loop");
        sink.add(25_000);
        let second = sink.close_loop(true).unwrap();
        assert_eq!((second.index, second.partial), (1, true));
        assert_eq!(sink.loops_done(), 2);
        // all: |1500|/1000 = 1, |-200| = 0, 3999 -> 3, 25000 -> last cell (9).
        assert_eq!(sink.all.total(), 4);
        assert_eq!(
            (
                sink.all.count(0),
                sink.all.count(1),
                sink.all.count(3),
                sink.all.count(9)
            ),
            (1, 1, 1, 1)
        );
        // loop minima: -200 -> 0 and 25000 -> 9; maxima: 3999 -> 3 and 9.
        assert_eq!((sink.loop_min.count(0), sink.loop_min.count(9)), (1, 1));
        assert_eq!((sink.loop_max.count(3), sink.loop_max.count(9)), (1, 1));
        let s = sink.recorder.summary();
        assert_eq!((s.samples, s.min_ns, s.max_ns), (4, -200, 25_000));
    }
}
