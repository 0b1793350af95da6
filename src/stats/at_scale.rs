//! Statistics exact at scale: ten billion samples (more than 2^32) of values
//! from -500 ns to two hours, built without ten billion iterations (each
//! value recorded once, then its recorder merged with itself: doubling, and
//! merged into the total along the binary digits of its count), checked
//! against exact integer arithmetic.

use super::*;

/// A recorder holding `count` samples of `ns`, in about 2 log2(count) merges.
fn repeated(ns: i64, count: u64) -> LatencyRecorder {
    let mut total = LatencyRecorder::signed();
    let mut power = LatencyRecorder::signed();
    power.record(ns);
    let mut left = count;
    while left > 0 {
        if left & 1 == 1 {
            total.merge(&power);
        }
        left >>= 1;
        if left > 0 {
            let copy = power.clone();
            power.merge(&copy);
        }
    }
    total
}

const HOUR: i64 = 3_600_000_000_000;

/// (value, count), ascending: the cumulative shares are exactly 1 %, 50 %,
/// 90 %, 99 %, 99.9 %, 99.99 % and 100 %, so the reported percentiles sit on
/// the boundaries where an inexact rank would pick the next value.
const DISTRIBUTION: [(i64, u64); 7] = [
    (-500, 100_000_000),
    (1, 4_900_000_000),
    (1_000, 4_000_000_000),
    (1_000_001, 900_000_000),
    (2_000_000_000, 90_000_000),
    (HOUR, 9_000_000),
    // Beyond the histogram's hour: counted exactly, as overflow.
    (2 * HOUR, 1_000_000),
];

#[test]
fn ten_billion_samples_up_to_two_hours_are_counted_exactly() {
    let mut all = LatencyRecorder::signed();
    for &(ns, count) in &DISTRIBUTION {
        let part = repeated(ns, count);
        assert_eq!(part.count(), count);
        all.merge(&part);
    }
    let n: u64 = DISTRIBUTION.iter().map(|&(_, c)| c).sum();
    assert_eq!(n, 10_000_000_000);
    assert!(n > 1 << 32);
    let s = all.summary();
    assert_eq!(s.samples, n);
    assert_eq!(s.min_ns, -500);
    assert_eq!(s.max_ns, 2 * HOUR);
    assert_eq!(s.overflow, 1_000_000);
    assert_eq!(
        s.histogram.iter().map(|b| b.count).sum::<u64>(),
        n - s.overflow
    );

    // Mean: the exact sum (i128) over n; the f64 in the report is within
    // one part in 10^15 of it.
    let sum: i128 = DISTRIBUTION
        .iter()
        .map(|&(v, c)| i128::from(v) * i128::from(c))
        .sum();
    let exact_mean = sum as f64 / n as f64;
    assert!(
        (s.avg_ns - exact_mean).abs() <= exact_mean.abs() * 1e-15,
        "{} vs {exact_mean}",
        s.avg_ns
    );
    // The sum exceeds what an i64 holds: a 64-bit accumulator would wrap.
    assert!(sum > i128::from(i64::MAX));

    // Standard deviation against the two-pass formula.
    let var = DISTRIBUTION
        .iter()
        .map(|&(v, c)| c as f64 * (v as f64 - exact_mean).powi(2))
        .sum::<f64>()
        / n as f64;
    let rel = (s.stddev_ns - var.sqrt()).abs() / var.sqrt();
    assert!(rel < 1e-9, "stddev {} vs {}", s.stddev_ns, var.sqrt());

    // Percentiles: the nearest-rank value of the distribution, reported as
    // its bucket's top (never lower), within the histogram's precision
    // (1/1024 of the value, see HISTOGRAM_SIGNIFICANT_DIGITS), clamped to max.
    let expected_at = |p: f64| {
        let rank = (p / 100.0 * n as f64).round() as u64; // exact for these p
        let mut cumulative = 0;
        DISTRIBUTION
            .iter()
            .find(|&&(_, c)| {
                cumulative += c;
                cumulative >= rank
            })
            .map(|&(v, _)| v)
            .expect("rank within n")
    };
    let checks = [
        (1.0, -500),
        (50.0, 1),
        (90.0, 1_000),
        (99.0, 1_000_001),
        (99.9, 2_000_000_000),
        (99.99, HOUR),
        (99.999, 2 * HOUR),
        (100.0, 2 * HOUR),
    ];
    for (p, want) in checks {
        assert_eq!(expected_at(p), want, "distribution at p{p}");
        let got = all.value_at_percentile(p);
        let slack = want.unsigned_abs() / 1024;
        assert!(
            got >= want && got.abs_diff(want) <= slack,
            "p{p}: {got}, want {want} (+{slack})"
        );
        if let Some(reported) = s.percentile(p) {
            assert_eq!(reported, got, "p{p} in the summary");
        }
    }
    // Just past a boundary the next value is reported.
    assert_eq!(all.value_at_percentile(50.000001), 1_000);
}
