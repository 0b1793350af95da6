//! Bandwidth and IOPS arithmetic of a log-disk run, kept free of I/O so that
//! every rule is unit-tested exactly.
//!
//! `IntervalRule` is the per-write hook that cuts the run into one-second
//! intervals (mqldt's "Max/Min/Avg bytes/sec over 1 sec interval").
//! `interval_rule()` chooses the rule every writer uses: `IntervalMeter`,
//! mqldt's exact accumulator, which lives here because it is measurement
//! logic (the classic exporter only prints the `IntervalBandwidth` it fills).

use crate::report::{DiskSecond, IntervalBandwidth};
use crate::stats::window::SecondStats;

const SECOND_NS: u64 = 1_000_000_000;
const HALF_SEC_NS: u64 = SECOND_NS / 2;

/// Cuts a writer's run into one-second intervals, one write at a time.
/// Runs inside the write loop: `on_write` must not allocate.
pub trait IntervalRule: Send {
    /// A write of `bytes` completed `since_start_ns` after the writer's start.
    fn on_write(&mut self, since_start_ns: u64, bytes: u64);
    /// The run ended `elapsed_ns` after the start.
    fn finish(&mut self, elapsed_ns: u64) -> IntervalBandwidth;
}

/// The rule every writer uses: mqldt's (see `IntervalMeter`), so that the
/// "over 1 sec interval" figures compare with mqldt's.
pub fn interval_rule() -> Box<dyn IntervalRule> {
    Box::new(IntervalMeter::new(0))
}

/// mqldt's rule: an interval closes at the first write that completes at
/// least one second after it began (its bytes count unscaled); the last,
/// partial interval counts scaled to a second when it lasted at least half
/// a second and is dropped otherwise. The average is over the intervals.
impl IntervalRule for IntervalMeter {
    #[inline]
    fn on_write(&mut self, since_start_ns: u64, bytes: u64) {
        self.record(since_start_ns, bytes);
    }

    fn finish(&mut self, elapsed_ns: u64) -> IntervalBandwidth {
        IntervalMeter::finish(self, elapsed_ns);
        IntervalBandwidth {
            rule: "mqldt".to_string(),
            intervals: self.intervals(),
            max_bytes_per_s: self.max(),
            min_bytes_per_s: self.min(),
            avg_bytes_per_s: self.avg(),
        }
    }
}

/// `bytes` written in `ns`, as bytes per second (truncated).
pub fn scale_to_second(bytes: u64, ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    (u128::from(bytes) * u128::from(SECOND_NS) / u128::from(ns)).min(u128::from(u64::MAX)) as u64
}

/// The bandwidth one write of `block_size` bytes taking `latency_ns` stands
/// for: mqldt's "slowest/fastest write" bytes/sec (0 when no write).
pub fn write_bandwidth(block_size: u64, latency_ns: i64) -> u64 {
    if latency_ns <= 0 {
        return 0;
    }
    scale_to_second(block_size, latency_ns as u64)
}

/// `count` per second over `ns` (0 for an empty run).
pub fn rate(count: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / ns as f64
    }
}

/// The writer's per-second latency windows as writes and bandwidth. Each
/// rate is over the time the window covers: its span, except the last
/// window, which runs from its start to the run's end at `elapsed_ns` (a
/// last partial second counts for its length, a folded tail adds its own).
pub fn disk_seconds(windows: &[SecondStats], block_size: u64, elapsed_ns: u64) -> Vec<DiskSecond> {
    let last = windows.len().saturating_sub(1);
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let span_ns = w.span_s.max(1).saturating_mul(SECOND_NS);
            let to_end = elapsed_ns.saturating_sub(w.second.saturating_mul(SECOND_NS));
            // A last window whose only write completed exactly at the end
            // covers no time: it counts for its nominal span.
            let covered = if i == last && to_end > 0 {
                to_end
            } else {
                span_ns
            };
            DiskSecond {
                second: w.second,
                span_s: w.span_s,
                covered_s: covered as f64 / 1e9,
                writes: w.samples,
                iops: rate(w.samples, covered),
                bytes_per_s: rate(w.samples * block_size, covered),
            }
        })
        .collect()
}

/// mqldt's merge of its queue managers' interval figures: the largest max,
/// the smallest min, the sum of the averages (the bandwidth of all of them).
pub fn merge_intervals(all: &[&IntervalBandwidth]) -> IntervalBandwidth {
    IntervalBandwidth {
        rule: all.first().map_or_else(String::new, |i| i.rule.clone()),
        intervals: all.iter().map(|i| i.intervals).max().unwrap_or(0),
        max_bytes_per_s: all.iter().map(|i| i.max_bytes_per_s).max().unwrap_or(0),
        min_bytes_per_s: all.iter().map(|i| i.min_bytes_per_s).min().unwrap_or(0),
        avg_bytes_per_s: all.iter().map(|i| i.avg_bytes_per_s).sum(),
    }
}

/// mqldt's per-interval bandwidth, for use inside the measuring loop: no
/// allocation, no float.
///
/// The rule (mqldt's `updateFileStats` and its caller): the first interval
/// starts at `start_ns` (just before the first write). After each write,
/// [`record`] adds its bytes; if the write completed at least 1 s after the
/// interval's start, the interval closes there, its figure is the bytes
/// written in it, *not* scaled down to one second (an interval of 1.3 s
/// counts 1.3 s of bytes), and the next interval starts at that completion
/// time. At the end, [`finish`] closes the partial interval: shorter than
/// 0.5 s, it is dropped; from 0.5 s to under 1 s, its bytes are scaled up to
/// a second (`bytes * 10^9 / length_ns`, truncated); 1 s or more (only when
/// `end_ns` is later than the last write), it counts as is. Pass the last
/// write's completion time as `end_ns` to match mqldt.
///
/// Max and min are over the intervals; the average is their mean (sum /
/// count, truncated), not total bytes / duration. All are 0 without any
/// interval.
///
/// [`record`]: IntervalMeter::record
/// [`finish`]: IntervalMeter::finish
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalMeter {
    interval_start_ns: u64,
    bytes: u64,
    intervals: u64,
    sum: u128,
    max: u64,
    min: u64,
}

impl IntervalMeter {
    /// A meter whose first interval starts at `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        IntervalMeter {
            interval_start_ns: start_ns,
            bytes: 0,
            intervals: 0,
            sum: 0,
            max: 0,
            min: u64::MAX,
        }
    }

    /// A write of `bytes` completed at `now_ns`: returns the interval's figure
    /// (bytes) when this write closed it, which is when mqldt ticks its
    /// progress counter. A time before the interval's start counts as its
    /// start.
    pub fn record(&mut self, now_ns: u64, bytes: u64) -> Option<u64> {
        self.bytes = self.bytes.saturating_add(bytes);
        if now_ns.saturating_sub(self.interval_start_ns) < SECOND_NS {
            return None;
        }
        Some(self.close(self.bytes, now_ns))
    }

    /// The run ended at `end_ns`: closes the partial interval by the rule
    /// above and returns its figure unless it was dropped. A second call
    /// finds an empty interval and returns `None`.
    pub fn finish(&mut self, end_ns: u64) -> Option<u64> {
        let length_ns = end_ns.saturating_sub(self.interval_start_ns);
        if length_ns < HALF_SEC_NS {
            self.bytes = 0;
            self.interval_start_ns = self.interval_start_ns.max(end_ns);
            return None;
        }
        let figure = if length_ns < SECOND_NS {
            let scaled = u128::from(self.bytes) * u128::from(SECOND_NS) / u128::from(length_ns);
            u64::try_from(scaled).unwrap_or(u64::MAX)
        } else {
            self.bytes
        };
        Some(self.close(figure, end_ns))
    }

    fn close(&mut self, figure: u64, at_ns: u64) -> u64 {
        self.intervals += 1;
        self.sum += u128::from(figure);
        self.max = self.max.max(figure);
        self.min = self.min.min(figure);
        self.bytes = 0;
        self.interval_start_ns = at_ns;
        figure
    }

    /// The number of intervals counted so far.
    pub fn intervals(&self) -> u64 {
        self.intervals
    }

    /// The largest interval figure (bytes/sec); 0 without intervals.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The smallest interval figure; 0 without intervals (mqldt would print
    /// `LONG_MAX`).
    pub fn min(&self) -> u64 {
        if self.intervals == 0 { 0 } else { self.min }
    }

    /// The mean of the interval figures, truncated; 0 without intervals.
    pub fn avg(&self) -> u64 {
        match self.sum.checked_div(u128::from(self.intervals)) {
            Some(mean) => u64::try_from(mean).unwrap_or(u64::MAX),
            None => 0,
        }
    }
}

/// The interval figures of a whole timeline: `writes` are `(completion_ns,
/// bytes)` in completion order, the run started at `start_ns` and ended at
/// `end_ns` (mqldt: the last write's completion). [`IntervalMeter`]'s rule.
pub fn interval_figures(start_ns: u64, writes: &[(u64, u64)], end_ns: u64) -> Vec<u64> {
    let mut meter = IntervalMeter::new(start_ns);
    let mut figures: Vec<u64> = writes
        .iter()
        .filter_map(|&(at_ns, bytes)| meter.record(at_ns, bytes))
        .collect();
    figures.extend(meter.finish(end_ns));
    figures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::window::{WindowSeries, fold_short_tail};

    const MS: u64 = 1_000_000;

    fn run(writes: &[(u64, u64)], elapsed_ns: u64) -> IntervalBandwidth {
        let mut r = interval_rule();
        for &(at, bytes) in writes {
            r.on_write(at, bytes);
        }
        r.finish(elapsed_ns)
    }

    #[test]
    fn intervals_follow_mqldt() {
        // The first interval closes at the write 1.5 s in (3000 + 1000 bytes,
        // unscaled); the next one runs from 1.5 s to the end at 2.01 s: 0.51 s
        // with 4096 bytes, scaled to 8031 bytes/s.
        let i = run(
            &[
                (100 * MS, 1000),
                (500 * MS, 2000),
                (1500 * MS, 1000),
                (2005 * MS, 4096),
            ],
            2010 * MS,
        );
        assert_eq!(i.rule, "mqldt");
        assert_eq!(i.intervals, 2);
        assert_eq!(i.max_bytes_per_s, 8031);
        assert_eq!(i.min_bytes_per_s, 4000);
        assert_eq!(i.avg_bytes_per_s, (8031 + 4000) / 2);
        // A tail shorter than half a second is dropped.
        let i = run(&[(1000 * MS, 500), (1200 * MS, 700)], 1400 * MS);
        assert_eq!((i.intervals, i.max_bytes_per_s), (1, 500));
        assert_eq!(run(&[], 0).intervals, 0);
    }

    #[test]
    fn write_bandwidth_and_rates() {
        // mqldt's seed: 131072 bytes, max 4,977,438 ns -> 26,333,226 B/s.
        assert_eq!(write_bandwidth(131_072, 4_977_438), 26_333_226);
        // The seed prints 348,698,688 here: mqldt divides in single-precision
        // float. latscope's integer arithmetic is exact (348,698,684.98).
        assert_eq!(write_bandwidth(131_072, 375_889), 348_698_684);
        assert_eq!(write_bandwidth(4096, 0), 0);
        assert_eq!(rate(7931 * 3, 3 * SECOND_NS), 7931.0);
        assert_eq!(rate(5, 0), 0.0);
        assert_eq!(scale_to_second(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn per_second_windows_become_iops_and_bandwidth() {
        let w = [SecondStats::new(4, 2, 100, 1, 2.0, 3)];
        // A merged window of 2 s that is not the last: rates over its span.
        let d = disk_seconds(&[w[0], window(9, 1, 7)], 4096, 10 * SECOND_NS);
        assert_eq!(d[0].writes, 100);
        assert_eq!(d[0].covered_s, 2.0);
        assert_eq!(d[0].iops, 50.0);
        assert_eq!(d[0].bytes_per_s, 204_800.0);
    }

    fn window(second: u64, span_s: u64, samples: u64) -> SecondStats {
        SecondStats::new(second, span_s, samples, 10, 20.0, 30)
    }

    #[test]
    fn a_last_partial_second_counts_for_its_length() {
        // Interrupted 2.25 s in: the last second holds 250 ms of the run.
        let w = [window(0, 1, 1000), window(1, 1, 1000), window(2, 1, 250)];
        let d = disk_seconds(&w, 4096, 2_250 * MS);
        assert_eq!(d[2].covered_s, 0.25);
        assert_eq!(d[2].iops, 1000.0);
        assert_eq!(d[2].bytes_per_s, 4_096_000.0);
        assert_eq!((d[0].covered_s, d[0].iops), (1.0, 1000.0));
    }

    #[test]
    fn the_write_that_ends_after_the_deadline_joins_the_last_second() {
        // A 10 s run: the write in flight at the deadline completed 80 us
        // later, alone in a window of second 10.
        let mut w: Vec<SecondStats> = (0..10).map(|s| window(s, 1, 1000)).collect();
        w.push(SecondStats {
            max_ns: 90,
            ..window(10, 1, 1)
        });
        let elapsed = 10 * SECOND_NS + 80_000;
        let mut series = WindowSeries::from_windows(w);
        fold_short_tail(&mut series, elapsed);
        let w = series.into_windows();
        assert_eq!(w.len(), 10);
        let last = w[9];
        assert_eq!((last.second, last.span_s, last.samples), (9, 1, 1001));
        assert_eq!((last.min_ns, last.max_ns), (10, 90));
        let d = disk_seconds(&w, 4096, elapsed);
        assert_eq!(d[9].writes, 1001);
        assert_eq!(d[9].covered_s, 1.00008);
        assert_eq!(d[9].iops, 1001.0 * 1e9 / 1_000_080_000.0);
        // Every write is still counted once.
        assert_eq!(d.iter().map(|s| s.writes).sum::<u64>(), 10_001);
    }

    #[test]
    fn a_tail_of_half_a_second_or_after_a_gap_stays_apart() {
        let folded = |windows: Vec<SecondStats>, elapsed_ns| {
            let mut series = WindowSeries::from_windows(windows);
            fold_short_tail(&mut series, elapsed_ns);
            series.into_windows()
        };
        let long_tail = folded(vec![window(0, 1, 10), window(1, 1, 5)], 1_500 * MS);
        assert_eq!(long_tail.len(), 2);
        // Second 1 had no completed write: nothing adjacent to fold into.
        let after_gap = folded(vec![window(0, 1, 10), window(2, 1, 1)], 2_001 * MS);
        assert_eq!(after_gap.len(), 2);
        let d = disk_seconds(&after_gap, 512, 2_001 * MS);
        assert_eq!(d[1].covered_s, 0.001);
        let single = folded(vec![window(0, 1, 1)], MS);
        assert_eq!(single.len(), 1);
        assert_eq!(disk_seconds(&single, 512, MS)[0].iops, 1000.0);
    }

    #[test]
    fn merging_writers_follows_mqldt() {
        let a = IntervalBandwidth {
            rule: "wall-seconds".into(),
            intervals: 3,
            max_bytes_per_s: 10,
            min_bytes_per_s: 4,
            avg_bytes_per_s: 7,
        };
        let b = IntervalBandwidth {
            max_bytes_per_s: 12,
            min_bytes_per_s: 2,
            avg_bytes_per_s: 5,
            ..a.clone()
        };
        let m = merge_intervals(&[&a, &b]);
        assert_eq!(
            (m.max_bytes_per_s, m.min_bytes_per_s, m.avg_bytes_per_s),
            (12, 2, 12)
        );
    }

    // ---- mqldt's interval rule (IntervalMeter)

    const S: u64 = SECOND_NS;

    #[test]
    fn an_interval_closes_at_the_first_write_at_or_after_one_second() {
        let t0 = 5 * S; // any start
        let mut m = IntervalMeter::new(t0);
        assert_eq!(m.record(t0 + 400 * MS, 100), None);
        assert_eq!(m.record(t0 + S - 1, 100), None);
        assert_eq!(m.record(t0 + S, 100), Some(300)); // exactly 1 s closes
        // The next interval starts at that write's completion.
        assert_eq!(m.record(t0 + 2 * S - 1, 7), None);
        assert_eq!(m.record(t0 + 2 * S, 7), Some(14));
        assert_eq!(
            (m.intervals(), m.max(), m.min(), m.avg()),
            (2, 300, 14, 157)
        );
    }

    #[test]
    fn a_long_interval_is_not_scaled_down() {
        // A slow write closes an interval of 1.7 s: its bytes count as they
        // are, and the next interval starts at its completion.
        let figures = interval_figures(
            0,
            &[(300 * MS, 1000), (1700 * MS, 1000), (2700 * MS, 500)],
            2700 * MS,
        );
        assert_eq!(figures, [2000, 500]);
    }

    #[test]
    fn a_final_partial_interval_of_half_a_second_is_scaled_up() {
        // 1 s closes with 1000 bytes; then 600 bytes in 0.6 s -> 1000/s.
        let writes = [(S, 1000), (S + 600 * MS, 600)];
        assert_eq!(interval_figures(0, &writes, S + 600 * MS), [1000, 1000]);
        // Exactly 0.5 s is scaled: 300 bytes -> 600/s.
        let writes = [(S, 1000), (S + 500 * MS, 300)];
        assert_eq!(interval_figures(0, &writes, S + 500 * MS), [1000, 600]);
        // Scaling truncates: 1000 bytes in 0.75 s = 1333.33 -> 1333.
        let writes = [(S, 1000), (S + 750 * MS, 1000)];
        assert_eq!(interval_figures(0, &writes, S + 750 * MS), [1000, 1333]);
        // Exact where mqldt's single precision gives 249,999,984.
        let writes = [(S, 1), (S + 600 * MS, 150_000_000)];
        assert_eq!(interval_figures(0, &writes, S + 600 * MS), [1, 250_000_000]);
    }

    #[test]
    fn a_final_partial_interval_under_half_a_second_is_dropped() {
        let writes = [(S, 1000), (S + 499 * MS, 5000)];
        assert_eq!(interval_figures(0, &writes, S + 499 * MS), [1000]);
        let writes = [(S, 1000), (S + HALF_SEC_NS - 1, 5000)];
        assert_eq!(interval_figures(0, &writes, S + HALF_SEC_NS - 1), [1000]);
        // Nothing after the last closed interval: nothing to drop or add.
        assert_eq!(interval_figures(0, &[(S, 1000)], S), [1000]);
    }

    #[test]
    fn a_run_shorter_than_one_second() {
        // 0.8 s of writes: one scaled interval, the average is the same.
        let mut m = IntervalMeter::new(0);
        for i in 1..=8 {
            assert_eq!(m.record(i * 100 * MS, 4096), None);
        }
        assert_eq!(m.finish(800 * MS), Some(40_960));
        assert_eq!(
            (m.intervals(), m.max(), m.min(), m.avg()),
            (1, 40_960, 40_960, 40_960)
        );
        // 0.3 s: no interval at all, everything 0 (mqldt: min LONG_MAX).
        let mut m = IntervalMeter::new(0);
        m.record(300 * MS, 4096);
        assert_eq!(m.finish(300 * MS), None);
        assert_eq!((m.intervals(), m.max(), m.min(), m.avg()), (0, 0, 0, 0));
    }

    #[test]
    fn finish_after_the_last_write_measures_to_the_end() {
        // Idle time until end_ns counts: 500 bytes in 0.5 s -> 1000/s.
        assert_eq!(interval_figures(0, &[(100 * MS, 500)], 500 * MS), [1000]);
        // 1 s or more at finish counts as is (mqldt's third branch).
        assert_eq!(interval_figures(0, &[(100 * MS, 500)], 1500 * MS), [500]);
        // Finishing twice adds nothing.
        let mut m = IntervalMeter::new(0);
        m.record(700 * MS, 10);
        assert_eq!(m.finish(700 * MS), Some(14));
        assert_eq!(m.finish(700 * MS), None);
        assert_eq!(m.finish(900 * MS), None);
        assert_eq!(m.intervals(), 1);
    }

    #[test]
    fn a_seed_like_run_of_twenty_intervals() {
        // 20 intervals closing at 1.0001 s steps; the 21st write ends the run
        // 0.2 s later and its partial interval is dropped.
        let mut m = IntervalMeter::new(0);
        let mut at = 0;
        let mut ticks = 0;
        for second in 0..20u64 {
            at += SECOND_NS + 100_000;
            if m.record(at, 300_000_000 + second).is_some() {
                ticks += 1;
            }
        }
        m.record(at + 200 * MS, 1);
        assert_eq!(m.finish(at + 200 * MS), None);
        assert_eq!(ticks, 20);
        assert_eq!(m.max(), 300_000_019);
        assert_eq!(m.min(), 300_000_000);
        assert_eq!(m.avg(), 300_000_009); // (sum of 0..=19) / 20 = 9.5, truncated
    }

    #[test]
    fn times_going_backwards_do_not_panic() {
        let mut m = IntervalMeter::new(10 * S);
        assert_eq!(m.record(0, 1), None);
        assert_eq!(m.finish(0), None);
        assert_eq!(m.record(11 * S, 2), Some(2));
        assert_eq!(m.intervals(), 1);
    }

    #[test]
    fn interval_sums_saturate() {
        let mut m = IntervalMeter::new(0);
        m.record(1, u64::MAX);
        assert_eq!(m.record(S, u64::MAX), Some(u64::MAX));
        assert_eq!(m.record(2 * S, u64::MAX), Some(u64::MAX));
        assert_eq!(m.avg(), u64::MAX);
        m.record(2 * S + 1, u64::MAX);
        assert_eq!(m.finish(2 * S + HALF_SEC_NS), Some(u64::MAX));
    }

    proptest::proptest! {
        #[test]
        fn interval_meter_never_panics_and_stays_ordered(
            start in proptest::num::u64::ANY,
            steps in proptest::collection::vec((0u64..3_000_000_000, proptest::num::u64::ANY), 0..60),
            tail in proptest::num::u64::ANY,
        ) {
            let mut m = IntervalMeter::new(start);
            let mut at = start;
            for &(step, bytes) in &steps {
                at = at.saturating_add(step);
                m.record(at, bytes);
            }
            m.finish(at.saturating_add(tail % (2 * SECOND_NS)));
            if m.intervals() > 0 {
                proptest::prop_assert!(m.min() <= m.avg() && m.avg() <= m.max());
            } else {
                proptest::prop_assert_eq!((m.min(), m.avg(), m.max()), (0, 0, 0));
            }
            // Intervals are at least 0.5 s long, each of their own.
            let span = at.saturating_add(tail % (2 * SECOND_NS)) - start;
            proptest::prop_assert!(m.intervals() <= span / HALF_SEC_NS + 1);
        }

    }
}
