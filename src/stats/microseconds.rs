//! A series in whole microseconds, as rteval reports it (`summary.xml`): a
//! histogram of 1 us buckets (cyclictest's `-h`, whose latencies are
//! truncated to microseconds) and the statistics rteval computes from it.
//!
//! The buckets come from the series' own histogram (`LatencySummary`), which
//! is exact below 16.384 us; above, an HDR bucket (at most 1/1024 of its
//! value wide) may straddle a microsecond boundary and is counted in the
//! microsecond of its highest value. Minimum and maximum come from the exact
//! extremes.
//!
//! The definitions are rteval 3.10's, but for the median: rteval takes the
//! upper of the two middle samples when the count is even (and in one case
//! of an odd count averages two buckets); here it is the textbook median
//! (docs/compat.md).

use super::LatencySummary;
use std::collections::BTreeMap;

/// Microseconds of a latency in nanoseconds, truncated toward zero as
/// cyclictest's integer division does.
pub fn us_of(ns: i64) -> i64 {
    ns / 1_000
}

/// rteval's `statistics` of one series, in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct UsStatistics {
    pub samples: u64,
    pub minimum: i64,
    pub maximum: i64,
    pub median: f64,
    /// The fullest bucket (the lowest of equally full ones).
    pub mode: i64,
    pub range: i64,
    pub mean: f64,
    pub mean_absolute_deviation: f64,
    /// The sample standard deviation (n - 1), 0 for fewer than 2 samples.
    pub standard_deviation: f64,
}

/// Samples per whole microsecond.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsHistogram {
    buckets: BTreeMap<i64, u64>,
    minimum: Option<i64>,
    maximum: Option<i64>,
}

impl UsHistogram {
    /// The series' histogram in microseconds; samples outside its range
    /// (`overflow`, above one hour) count at the maximum.
    pub fn of(summary: &LatencySummary) -> UsHistogram {
        let mut histogram = UsHistogram::default();
        if summary.samples == 0 {
            return histogram;
        }
        for bucket in &summary.histogram {
            *histogram.buckets.entry(us_of(bucket.high_ns)).or_default() += bucket.count;
        }
        if summary.overflow > 0 {
            *histogram.buckets.entry(us_of(summary.max_ns)).or_default() += summary.overflow;
        }
        histogram.minimum = Some(us_of(summary.min_ns));
        histogram.maximum = Some(us_of(summary.max_ns));
        histogram
    }

    /// A histogram of these (microsecond, count) pairs (for tests and for
    /// series already in microseconds).
    pub fn from_counts(counts: impl IntoIterator<Item = (i64, u64)>) -> UsHistogram {
        let mut histogram = UsHistogram::default();
        for (us, count) in counts.into_iter().filter(|&(_, c)| c > 0) {
            *histogram.buckets.entry(us).or_default() += count;
        }
        histogram.minimum = histogram.buckets.keys().next().copied();
        histogram.maximum = histogram.buckets.keys().next_back().copied();
        histogram
    }

    /// The non-empty buckets, lowest first.
    pub fn buckets(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.buckets.iter().map(|(&us, &count)| (us, count))
    }

    pub fn samples(&self) -> u64 {
        self.buckets.values().sum()
    }

    /// The statistics; `None` without samples.
    pub fn statistics(&self) -> Option<UsStatistics> {
        let n = self.samples();
        let (minimum, maximum) = (self.minimum?, self.maximum?);
        if n == 0 {
            return None;
        }
        let total: f64 = self.buckets().map(|(us, c)| us as f64 * c as f64).sum();
        let mean = total / n as f64;
        let spread = |f: fn(f64) -> f64| -> f64 {
            self.buckets()
                .map(|(us, c)| f(us as f64 - mean) * c as f64)
                .sum()
        };
        let (mad, stddev) = if n > 1 {
            (
                spread(f64::abs) / n as f64,
                (spread(|d| d * d) / (n - 1) as f64).sqrt(),
            )
        } else {
            (0.0, 0.0)
        };
        let mode = self
            .buckets()
            .fold(
                (minimum, 0),
                |best, (us, c)| if c > best.1 { (us, c) } else { best },
            )
            .0;
        Some(UsStatistics {
            samples: n,
            minimum,
            maximum,
            median: self.median(n),
            mode,
            range: maximum - minimum,
            mean,
            mean_absolute_deviation: mad,
            standard_deviation: stddev,
        })
    }

    /// The middle sample (odd count) or the mean of the two middle ones.
    fn median(&self, n: u64) -> f64 {
        let at_rank = |rank: u64| {
            let mut seen = 0;
            for (us, c) in self.buckets() {
                seen += c;
                if seen >= rank {
                    return us as f64;
                }
            }
            self.maximum.unwrap_or_default() as f64
        };
        if n % 2 == 1 {
            at_rank(n.div_ceil(2))
        } else {
            (at_rank(n / 2) + at_rank(n / 2 + 1)) / 2.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencyRecorder;

    fn stats(counts: &[(i64, u64)]) -> UsStatistics {
        UsHistogram::from_counts(counts.iter().copied())
            .statistics()
            .unwrap()
    }

    #[test]
    fn statistics_of_a_small_odd_series_are_exact() {
        // 2, 3, 3, 4, 8 us.
        let s = stats(&[(2, 1), (3, 2), (4, 1), (8, 1)]);
        assert_eq!(s.samples, 5);
        assert_eq!((s.minimum, s.maximum, s.range), (2, 8, 6));
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mode, 3);
        assert_eq!(s.mean, 4.0);
        // |2-4| + 2|3-4| + |4-4| + |8-4| = 8, over 5.
        assert_eq!(s.mean_absolute_deviation, 1.6);
        // 4 + 2 + 0 + 16 = 22, over 4: sqrt(5.5).
        assert_eq!(s.standard_deviation, 5.5f64.sqrt());
    }

    #[test]
    fn an_even_count_takes_the_mean_of_the_two_middle_samples() {
        // 1, 2, 5, 9 us: median (2 + 5) / 2 (rteval would say 5).
        let s = stats(&[(1, 1), (2, 1), (5, 1), (9, 1)]);
        assert_eq!(s.median, 3.5);
        assert_eq!(s.mean, 4.25);
        assert_eq!(s.mean_absolute_deviation, (3.25 + 2.25 + 0.75 + 4.75) / 4.0);
        let squares: f64 = [3.25f64, 2.25, 0.75, 4.75].iter().map(|d| d * d).sum();
        assert_eq!(s.standard_deviation, (squares / 3.0).sqrt());
        // Both middle samples in one bucket.
        assert_eq!(stats(&[(4, 2), (7, 2)]).median, 5.5);
        assert_eq!(stats(&[(4, 3), (7, 1)]).median, 4.0);
    }

    #[test]
    fn the_mode_is_the_lowest_of_equally_full_buckets() {
        assert_eq!(stats(&[(5, 3), (6, 1), (9, 3)]).mode, 5);
        assert_eq!(stats(&[(5, 1), (6, 4), (9, 3)]).mode, 6);
    }

    #[test]
    fn one_sample_has_no_spread_and_none_has_no_statistics() {
        let s = stats(&[(12, 1)]);
        assert_eq!((s.median, s.mean, s.range), (12.0, 12.0, 0));
        assert_eq!(
            (s.mean_absolute_deviation, s.standard_deviation),
            (0.0, 0.0)
        );
        assert!(UsHistogram::from_counts([]).statistics().is_none());
    }

    #[test]
    fn nanoseconds_are_truncated_into_microseconds_as_cyclictest_does() {
        let mut recorder = LatencyRecorder::signed();
        for ns in [-1_500, 999, 1_000, 1_999, 2_500, 14_999] {
            recorder.record(ns);
        }
        let h = UsHistogram::of(&recorder.summary());
        assert_eq!(
            h.buckets().collect::<Vec<_>>(),
            [(-1, 1), (0, 1), (1, 2), (2, 1), (14, 1)]
        );
        let s = h.statistics().unwrap();
        assert_eq!((s.minimum, s.maximum, s.samples), (-1, 14, 6));
        assert_eq!(s.median, 1.0);
        assert_eq!(s.mean, 17.0 / 6.0);
    }

    #[test]
    fn the_maximum_is_the_exact_one_above_the_exact_range() {
        let mut recorder = LatencyRecorder::new();
        for ns in [20_000, 1_234_567] {
            recorder.record(ns);
        }
        let s = UsHistogram::of(&recorder.summary()).statistics().unwrap();
        assert_eq!((s.minimum, s.maximum), (20, 1_234));
    }
}
