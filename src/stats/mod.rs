//! Latency statistics: the recorder a measuring thread owns, and the summary
//! (min/avg/max/stddev/percentiles/histogram) computed from it after the run.
//!
//! The recorder keeps exact min, max, count, sum and sum of squares next to an
//! HDR histogram, so the headline numbers are exact and only percentiles carry
//! the histogram's bounded relative error (see `docs/measurement.md`).

#[cfg(test)]
mod at_scale;
pub mod crossings;
pub mod live;
pub mod microseconds;
pub mod samples;
pub mod window;
pub mod window_histogram;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram resolves: one hour. Longer samples are still
/// counted exactly in min/max/avg and reported as `overflow`.
pub const HISTOGRAM_HIGHEST_NS: u64 = 3_600_000_000_000;
/// Three significant digits: values up to 2048 ns are exact, above that each
/// bucket spans at most 1/1024 (< 0.1 %) of its value.
pub const HISTOGRAM_SIGNIFICANT_DIGITS: u8 = 3;
/// The percentiles every series reports.
pub const REPORTED_PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999];

/// Largest negative latency the negative-side histogram resolves: one second.
/// Only periodic-timer tests produce negative values (a wake-up before its
/// expiry); anything beyond still counts exactly in min/avg and as `overflow`.
pub const NEGATIVE_HIGHEST_NS: u64 = 1_000_000_000;

fn histogram_up_to(highest: u64) -> Histogram<u64> {
    let mut histogram = Histogram::new_with_bounds(1, highest, HISTOGRAM_SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid");
    histogram.auto(false);
    // reset() writes every counter: the pages are faulted in now, not on the
    // first sample of a bucket in the middle of the measurement.
    histogram.reset();
    histogram
}

/// Per-thread sample sink. Recording never allocates: the histograms are sized
/// and touched when the recorder is built, before the measuring loop.
///
/// Samples are signed nanoseconds. Latencies of a wake-up by another task
/// (IPC) are never negative; a periodic timer can in principle fire early, and
/// those samples are kept, not clamped: recorders built with `signed()` carry
/// a second histogram for the magnitudes of negative samples.
#[derive(Clone)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    negative: Option<Histogram<u64>>,
    /// Samples in no histogram (the part of `overflow` below zero sorts first).
    overflow: u64,
    negative_overflow: u64,
    count: u64,
    sum: i128,
    sum_squares: u128,
    min: i64,
    max: i64,
    min_at: u64,
    max_at: u64,
    last: i64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// A recorder for latencies that cannot be negative. A negative sample is
    /// still counted exactly (min, avg) and reported as overflow.
    pub fn new() -> Self {
        LatencyRecorder {
            histogram: histogram_up_to(HISTOGRAM_HIGHEST_NS),
            negative: None,
            overflow: 0,
            negative_overflow: 0,
            count: 0,
            sum: 0,
            sum_squares: 0,
            min: i64::MAX,
            max: i64::MIN,
            min_at: 0,
            max_at: 0,
            last: 0,
        }
    }

    /// A recorder that also resolves negative samples down to -1 s.
    pub fn signed() -> Self {
        LatencyRecorder {
            negative: Some(histogram_up_to(NEGATIVE_HIGHEST_NS)),
            ..Self::new()
        }
    }

    /// Adds one sample in nanoseconds. Constant time, no allocation, no locks.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        self.count += 1;
        self.sum += i128::from(ns);
        self.sum_squares += u128::from(ns.unsigned_abs()) * u128::from(ns.unsigned_abs());
        self.last = ns;
        if ns < self.min {
            self.min = ns;
            self.min_at = self.count;
        }
        if ns > self.max {
            self.max = ns;
            self.max_at = self.count;
        }
        let binned = if ns >= 0 {
            self.histogram.record(ns as u64).is_ok()
        } else {
            self.negative
                .as_mut()
                .is_some_and(|h| h.record(ns.unsigned_abs()).is_ok())
        };
        if !binned {
            self.overflow += 1;
            self.negative_overflow += u64::from(ns < 0);
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    /// Folds another recorder in (pairs of one test, or repeated runs). Sample
    /// positions of min and max only keep a meaning within one series, so they
    /// are taken from whichever side holds the extreme. Runs after the
    /// measurement, so it may allocate the negative side.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        self.histogram
            .add(&other.histogram)
            .expect("histograms share bounds");
        if let Some(theirs) = &other.negative {
            self.negative
                .get_or_insert_with(|| histogram_up_to(NEGATIVE_HIGHEST_NS))
                .add(theirs)
                .expect("histograms share bounds");
        }
        self.overflow += other.overflow;
        self.negative_overflow += other.negative_overflow;
        if other.min < self.min {
            self.min = other.min;
            self.min_at = other.min_at;
        }
        if other.max > self.max {
            self.max = other.max;
            self.max_at = other.max_at;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
        self.last = other.last;
    }

    /// Makes `self` an exact copy of `other` without allocating when both
    /// were built the same way (`new` or `signed`): the histograms are
    /// cleared and refilled in place. What a measuring thread runs when a
    /// snapshot of its results is asked for (rt::snapshot), so it must not
    /// allocate; a differently built `self` still ends up exact (the negative
    /// side is allocated then, as `merge` does).
    pub fn copy_from(&mut self, other: &LatencyRecorder) {
        self.histogram.reset();
        self.histogram
            .add(&other.histogram)
            .expect("histograms share bounds");
        match (&mut self.negative, &other.negative) {
            (Some(mine), Some(theirs)) => {
                mine.reset();
                mine.add(theirs).expect("histograms share bounds");
            }
            (Some(mine), None) => mine.reset(),
            (None, Some(theirs)) => self.negative = Some(theirs.clone()),
            (None, None) => {}
        }
        self.overflow = other.overflow;
        self.negative_overflow = other.negative_overflow;
        self.count = other.count;
        self.sum = other.sum;
        self.sum_squares = other.sum_squares;
        self.min = other.min;
        self.max = other.max;
        self.min_at = other.min_at;
        self.max_at = other.max_at;
        self.last = other.last;
    }

    /// Everything a report needs, computed once after the run.
    pub fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let n = self.count as f64;
        let avg = self.sum as f64 / n;
        LatencySummary {
            samples: self.count,
            min_ns: self.min,
            max_ns: self.max,
            avg_ns: avg,
            stddev_ns: population_stddev(self.count, self.sum, self.sum_squares),
            min_at_sample: self.min_at,
            max_at_sample: self.max_at,
            last_ns: self.last,
            percentiles: REPORTED_PERCENTILES
                .iter()
                .map(|&p| Percentile {
                    percentile: p,
                    ns: self.value_at_percentile(p),
                })
                .collect(),
            histogram: self.buckets(),
            overflow: self.overflow,
        }
    }

    /// Nearest-rank percentile: the smallest recorded value such that at least
    /// `p` % of the samples are at or below it. The bucket's highest equivalent
    /// value is used (never understates a latency), then clamped into the exact
    /// [min, max]; samples outside the histogram range stand at the exact
    /// extremes (overflowing negatives sort first, like the values they are).
    pub fn value_at_percentile(&self, p: f64) -> i64 {
        if self.count == 0 {
            return 0;
        }
        let rank = nearest_rank(p, self.count);
        if rank <= self.negative_overflow {
            return self.min;
        }
        let mut rank = rank - self.negative_overflow;
        if let Some(negative) = &self.negative {
            // Negative values ascend as their magnitudes descend: the value of
            // rank r is the magnitude of rank (n - r + 1) from the top.
            let n = negative.len();
            if rank <= n {
                let wanted = n - rank + 1;
                let mut cumulative = 0u64;
                for bucket in negative.iter_recorded() {
                    cumulative += bucket.count_since_last_iteration();
                    if cumulative >= wanted {
                        let magnitude = negative.lowest_equivalent(bucket.value_iterated_to());
                        return (-(magnitude as i64)).clamp(self.min, self.max);
                    }
                }
                return self.min;
            }
            rank -= n;
        }
        let mut cumulative = 0u64;
        for bucket in self.histogram.iter_recorded() {
            cumulative += bucket.count_since_last_iteration();
            if cumulative >= rank {
                let value = self
                    .histogram
                    .highest_equivalent(bucket.value_iterated_to());
                return (value.min(i64::MAX as u64) as i64).clamp(self.min, self.max);
            }
        }
        self.max
    }

    fn buckets(&self) -> Vec<Bucket> {
        let mut buckets = Vec::new();
        if let Some(negative) = &self.negative {
            let mut below_zero: Vec<Bucket> = negative
                .iter_recorded()
                .map(|b| {
                    let magnitude = b.value_iterated_to();
                    Bucket {
                        low_ns: (-(negative.highest_equivalent(magnitude) as i64)).max(self.min),
                        high_ns: (-(negative.lowest_equivalent(magnitude) as i64)).min(self.max),
                        count: b.count_since_last_iteration(),
                    }
                })
                .collect();
            below_zero.reverse();
            buckets.extend(below_zero);
        }
        buckets.extend(self.histogram.iter_recorded().map(|b| {
            let value = b.value_iterated_to();
            Bucket {
                low_ns: (self.histogram.lowest_equivalent(value) as i64).max(self.min),
                high_ns: (self
                    .histogram
                    .highest_equivalent(value)
                    .min(i64::MAX as u64) as i64)
                    .min(self.max),
                count: b.count_since_last_iteration(),
            }
        }));
        buckets
    }
}

/// The nearest rank of percentile `p` among `count` samples: the smallest
/// rank r with r >= p/100 * count, at least 1, in exact integer arithmetic.
/// (In f64, 99.9 / 100 * 1000 is 999.0000000000001, whose ceiling 1000 would
/// report the maximum as p99.9 of 1000 samples.) `p` is taken to a millionth
/// of a percent, finer than any percentile latscope reports.
pub fn nearest_rank(p: f64, count: u64) -> u64 {
    const SCALE: u128 = 100_000_000; // 100 % in millionths of a percent
    let micro = (p.clamp(0.0, 100.0) * 1e6).round() as u128;
    let rank = (micro * u128::from(count)).div_ceil(SCALE);
    (rank as u64).max(1)
}

/// Population standard deviation from exact integer sums. Uses the integer form
/// `(n*Σx² - (Σx)²) / n²` so that large, tightly clustered values keep their
/// precision; falls back to floating point if the products would overflow.
fn population_stddev(n: u64, sum: i128, sum_squares: u128) -> f64 {
    let n128 = u128::from(n);
    let sum_abs = sum.unsigned_abs();
    match (n128.checked_mul(sum_squares), sum_abs.checked_mul(sum_abs)) {
        (Some(a), Some(b)) if a >= b => ((a - b) as f64).sqrt() / n as f64,
        _ => {
            let mean = sum as f64 / n as f64;
            (sum_squares as f64 / n as f64 - mean * mean)
                .max(0.0)
                .sqrt()
        }
    }
}

/// One non-empty histogram bucket: `count` samples between `low_ns` and
/// `high_ns` inclusive (bounds clamped to the exact min and max).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub low_ns: i64,
    pub high_ns: i64,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    pub percentile: f64,
    pub ns: i64,
}

/// The statistics of one series, as reported.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    pub stddev_ns: f64,
    /// 1-based number of the sample that was the minimum (0 when no samples).
    pub min_at_sample: u64,
    /// 1-based number of the sample that was the maximum (0 when no samples).
    pub max_at_sample: u64,
    /// The most recent sample (pmqtest's "Cur").
    pub last_ns: i64,
    pub percentiles: Vec<Percentile>,
    pub histogram: Vec<Bucket>,
    /// Samples outside the histogram range (above one hour, or negative below
    /// -1 s or in a recorder built for non-negative values): in min/avg/max,
    /// not in buckets.
    pub overflow: u64,
}

impl LatencySummary {
    pub fn percentile(&self, p: f64) -> Option<i64> {
        self.percentiles
            .iter()
            .find(|x| (x.percentile - p).abs() < 1e-9)
            .map(|x| x.ns)
    }
}

/// (new - base) / base in percent; `None` when base is 0.
pub fn relative_change(base: f64, new: f64) -> Option<f64> {
    (base != 0.0).then(|| (new - base) / base.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder_of(values: &[i64]) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        for &v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn exact_moments_of_a_known_set() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population stddev 2.
        let s = recorder_of(&[2, 4, 4, 4, 5, 5, 7, 9]).summary();
        assert_eq!(s.samples, 8);
        assert_eq!(s.min_ns, 2);
        assert_eq!(s.max_ns, 9);
        assert_eq!(s.avg_ns, 5.0);
        assert_eq!(s.stddev_ns, 2.0);
        assert_eq!(s.min_at_sample, 1);
        assert_eq!(s.max_at_sample, 8);
        assert_eq!(s.last_ns, 9);
    }

    #[test]
    fn copy_from_is_exact_and_replaces_what_was_there() {
        let source = recorder_of(&[7, 3, 1_000_000, 42]);
        let mut copy = recorder_of(&[1, 2, 3, 4, 5, 6]);
        copy.copy_from(&source);
        assert_eq!(copy.summary(), source.summary());
        let mut signed = LatencyRecorder::signed();
        signed.record(-5);
        signed.record(9);
        let mut into = LatencyRecorder::signed();
        into.record(-100);
        into.copy_from(&signed);
        assert_eq!(into.summary(), signed.summary());
        let mut unsigned_into = LatencyRecorder::new();
        unsigned_into.copy_from(&signed);
        assert_eq!(unsigned_into.summary(), signed.summary());
    }

    #[test]
    fn stddev_keeps_precision_for_large_clustered_values() {
        let base = 3_000_000_000_000i64;
        let s = recorder_of(&[base + 1, base + 3]).summary();
        assert_eq!(s.stddev_ns, 1.0);
        assert_eq!(s.avg_ns, (base + 2) as f64);
    }

    #[test]
    fn nearest_rank_percentiles_on_exact_values() {
        // 1..=100 ns are all exact in the histogram.
        let values: Vec<i64> = (1..=100).collect();
        let r = recorder_of(&values);
        assert_eq!(r.value_at_percentile(50.0), 50);
        assert_eq!(r.value_at_percentile(90.0), 90);
        assert_eq!(r.value_at_percentile(99.0), 99);
        assert_eq!(r.value_at_percentile(99.9), 100);
        assert_eq!(r.value_at_percentile(0.0), 1);
        assert_eq!(r.value_at_percentile(100.0), 100);
    }

    #[test]
    fn percentiles_never_leave_the_exact_range() {
        // 1_000_001 ns sits in a bucket ~1 us wide: its highest equivalent is
        // above the real max and must be clamped to it.
        let r = recorder_of(&[1_000_001; 10]);
        let s = r.summary();
        for p in &s.percentiles {
            assert_eq!(p.ns, 1_000_001, "p{}", p.percentile);
        }
        assert_eq!(s.histogram.len(), 1);
        assert_eq!(s.histogram[0].low_ns, 1_000_001);
        assert_eq!(s.histogram[0].high_ns, 1_000_001);
    }

    #[test]
    fn overflow_is_counted_not_dropped() {
        let huge = HISTOGRAM_HIGHEST_NS as i64 * 3;
        let r = recorder_of(&[10, 20, huge]);
        let s = r.summary();
        assert_eq!(s.samples, 3);
        assert_eq!(s.overflow, 1);
        assert_eq!(s.max_ns, huge);
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 2);
        assert_eq!(r.value_at_percentile(99.0), huge);
        assert_eq!(r.value_at_percentile(50.0), 20);
    }

    #[test]
    fn latencies_over_a_second_are_exact() {
        let s = recorder_of(&[1_500_000_123]).summary();
        assert_eq!(s.max_ns, 1_500_000_123);
        assert_eq!(s.min_ns, 1_500_000_123);
        assert_eq!(s.avg_ns, 1_500_000_123.0);
    }

    #[test]
    fn relative_error_of_percentiles_is_bounded() {
        let r = recorder_of(&[123_456_789, 1]);
        let p = r.value_at_percentile(100.0);
        assert_eq!(p, 123_456_789);
        let r = recorder_of(&[123_456_789, 200_000_000]);
        let p50 = r.value_at_percentile(50.0) as f64;
        assert!(p50 >= 123_456_789.0 && (p50 - 123_456_789.0) / 123_456_789.0 < 1.0 / 1024.0);
    }

    #[test]
    fn merging_combines_everything() {
        let mut a = recorder_of(&[5, 6]);
        let b = recorder_of(&[1, 9, 7]);
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.samples, 5);
        assert_eq!(s.min_ns, 1);
        assert_eq!(s.max_ns, 9);
        assert_eq!(s.avg_ns, 28.0 / 5.0);
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 5);
    }

    fn signed_of(values: &[i64]) -> LatencyRecorder {
        let mut r = LatencyRecorder::signed();
        for &v in values {
            r.record(v);
        }
        r
    }

    #[test]
    fn negative_samples_are_kept_and_ordered() {
        // -30, -20, -10, 0, 10, 20, 30, 40: mean 5, population stddev sqrt(525).
        let r = signed_of(&[10, -10, 20, -20, 30, -30, 0, 40]);
        let s = r.summary();
        assert_eq!(s.samples, 8);
        assert_eq!(s.min_ns, -30);
        assert_eq!(s.max_ns, 40);
        assert_eq!(s.avg_ns, 5.0);
        assert_eq!(s.stddev_ns, 525f64.sqrt());
        assert_eq!(s.min_at_sample, 6);
        assert_eq!(s.overflow, 0);
        assert_eq!(r.value_at_percentile(0.0), -30);
        assert_eq!(r.value_at_percentile(12.5), -30);
        assert_eq!(r.value_at_percentile(25.0), -20);
        assert_eq!(r.value_at_percentile(37.5), -10);
        assert_eq!(r.value_at_percentile(50.0), 0);
        assert_eq!(r.value_at_percentile(62.5), 10);
        assert_eq!(r.value_at_percentile(100.0), 40);
        let lows: Vec<i64> = s.histogram.iter().map(|b| b.low_ns).collect();
        assert_eq!(lows, vec![-30, -20, -10, 0, 10, 20, 30, 40]);
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 8);
    }

    #[test]
    fn negative_percentiles_never_understate() {
        // -1_000_001 lies in a bucket 512 ns wide: the reported value is at or
        // above the exact sample (never earlier than it was), within 0.1 %.
        let r = signed_of(&[-1_000_001, -1_000_001, 5]);
        let p50 = r.value_at_percentile(50.0);
        assert!((-1_000_001..=-1_000_001 + 1_000).contains(&p50), "{p50}");
        let s = r.summary();
        assert_eq!(s.histogram[0].low_ns, -1_000_001);
        assert!(s.histogram[0].high_ns >= -1_000_001 && s.histogram[0].high_ns < 0);
    }

    #[test]
    fn negatives_without_a_negative_histogram_are_overflow_sorted_first() {
        let r = recorder_of(&[-5, 10, 20]);
        let s = r.summary();
        assert_eq!(s.min_ns, -5);
        assert_eq!(s.overflow, 1);
        assert_eq!(r.value_at_percentile(10.0), -5);
        assert_eq!(r.value_at_percentile(50.0), 10);
        // Beyond -1 s even a signed recorder counts the sample as overflow.
        let r = signed_of(&[-2_000_000_000, 7]);
        assert_eq!(r.summary().overflow, 1);
        assert_eq!(r.value_at_percentile(50.0), -2_000_000_000);
        assert_eq!(r.value_at_percentile(100.0), 7);
    }

    #[test]
    fn merging_a_signed_recorder_into_an_unsigned_one_keeps_negatives() {
        let mut all = recorder_of(&[3]);
        all.merge(&signed_of(&[-4, 8]));
        let s = all.summary();
        assert_eq!((s.samples, s.min_ns, s.max_ns, s.overflow), (3, -4, 8, 0));
        assert_eq!(all.value_at_percentile(1.0), -4);
        assert_eq!(all.value_at_percentile(50.0), 3);
    }

    #[test]
    fn percentile_ranks_are_exact_at_their_boundaries() {
        // 999 samples of 10 and one of 20: p99.9 is the 999th sample, 10.
        let mut values = vec![10; 999];
        values.push(20);
        let r = recorder_of(&values);
        assert_eq!(r.value_at_percentile(99.9), 10);
        assert_eq!(r.value_at_percentile(99.91), 20);
        assert_eq!(nearest_rank(99.9, 1000), 999);
        assert_eq!(nearest_rank(99.999, 100_000), 99_999);
        assert_eq!(nearest_rank(50.0, 3), 2);
        assert_eq!(nearest_rank(0.0, 10), 1);
        assert_eq!(nearest_rank(100.0, u64::MAX), u64::MAX);
        assert_eq!(nearest_rank(f64::NAN, 10), 1);
    }

    #[test]
    fn empty_recorder_reports_zeros() {
        let s = LatencyRecorder::new().summary();
        assert_eq!(s.samples, 0);
        assert!(s.histogram.is_empty());
        assert_eq!(LatencyRecorder::new().value_at_percentile(99.0), 0);
    }
}
