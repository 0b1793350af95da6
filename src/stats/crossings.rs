//! The crossings of a drop-in's break value (`-b USEC`, oslat's `-T USEC`)
//! as `--on-threshold` sees them: one counter per series, bumped by the
//! measuring thread that crossed (a cold path: at most once per run
//! without `continue`), read by the actions' runner thread
//! (`pipeline::actions`), which polls it. Defined here, low, so that every
//! drop-in's measuring loop can bump it without knowing the pipeline.

use std::sync::atomic::{AtomicU64, Ordering};

/// One series a crossing can happen in, as an action names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossingSeries {
    /// The series' label in the report (`thread 0`, `pair 1`, `CPU 3`).
    pub label: String,
    /// Its CPU, when it is pinned to one.
    pub cpu: Option<usize>,
}

/// The break-value crossings of one run, per series.
#[derive(Debug)]
pub struct BreakCrossings {
    /// The test the series belong to (`cyclictest`, `oslat`, ...).
    pub test: String,
    series: Vec<CrossingSeries>,
    counts: Vec<AtomicU64>,
    /// `--on-threshold continue`: a crossing neither stops the run nor
    /// the kernel tracer; it is only counted (and acted on).
    pub keep_running: bool,
}

impl BreakCrossings {
    pub fn new(test: &str, series: Vec<CrossingSeries>, keep_running: bool) -> BreakCrossings {
        BreakCrossings {
            test: test.to_string(),
            counts: series.iter().map(|_| AtomicU64::new(0)).collect(),
            series,
            keep_running,
        }
    }

    /// A sample of series `series` crossed the break value (a series out
    /// of range is ignored: the run must not stop for a count).
    #[cold]
    pub fn crossed(&self, series: usize) {
        self.add(series, 1);
    }

    /// `n` samples of series `series` crossed it since the last call.
    pub fn add(&self, series: usize, n: u64) {
        if let Some(count) = self.counts.get(series) {
            count.fetch_add(n, Ordering::Release);
        }
    }

    /// The crossings of series `series` so far.
    pub fn count(&self, series: usize) -> u64 {
        self.counts
            .get(series)
            .map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// Every series' crossings so far, summed.
    pub fn total(&self) -> u64 {
        (0..self.counts.len()).map(|i| self.count(i)).sum()
    }

    pub fn series(&self) -> &[CrossingSeries] {
        &self.series
    }
}

/// A sample of `series` crossed a drop-in's break value: counted where
/// `--on-threshold` watches it (`breaks`, when the break is its trigger);
/// whether the crossing stops the run, as the original tool's break does
/// (always, but with `--on-threshold continue`). A cold path: the
/// measuring loops call it only for a sample above the value.
#[cold]
#[inline(never)]
pub fn break_stops_run(breaks: Option<&BreakCrossings>, series: usize) -> bool {
    match breaks {
        Some(breaks) => {
            breaks.crossed(series);
            !breaks.keep_running
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_series_counts_its_own_crossings() {
        let series = |label: &str, cpu| CrossingSeries {
            label: label.into(),
            cpu,
        };
        let b = BreakCrossings::new(
            "cyclictest",
            vec![series("thread 0", Some(0)), series("thread 1", None)],
            false,
        );
        b.crossed(1);
        b.crossed(1);
        b.crossed(7);
        assert_eq!(
            (b.count(0), b.count(1), b.count(7), b.total()),
            (0, 2, 0, 2)
        );
        assert_eq!(b.series()[1].label, "thread 1");
    }

    #[test]
    fn a_break_stops_the_run_unless_continue() {
        assert!(break_stops_run(None, 0));
        let stopping = BreakCrossings::new("signaltest", vec![], false);
        let going_on = BreakCrossings::new("signaltest", vec![], true);
        assert!(break_stops_run(Some(&stopping), 0));
        assert!(!break_stops_run(Some(&going_on), 0));
    }
}
