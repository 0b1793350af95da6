//! Bandwidth and IOPS arithmetic of a log-disk run, kept free of I/O so that
//! every rule is unit-tested exactly.
//!
//! `IntervalRule` is the per-write hook that cuts the run into one-second
//! intervals (mqldt's "Max/Min/Avg bytes/sec over 1 sec interval").
//! `interval_rule()` chooses the rule every writer uses: today
//! `WallSeconds`; mqldt's exact accumulator plugs in there.

use crate::report::classic_mqldt::IntervalMeter;
use crate::report::{DiskSecond, IntervalBandwidth};
use crate::stats::window::{SecondStats, merged};

const SECOND_NS: u64 = 1_000_000_000;

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

/// A last window shorter than this is folded into the window before it: a
/// rate over a few microseconds (the write that completes just after the
/// deadline) says nothing about the disk. mqldt's interval rule drops such
/// a tail for the same reason; here its writes stay counted.
const SHORTEST_TAIL_NS: u64 = SECOND_NS / 2;

/// Folds a last window that covers less than half a second of the run of
/// `elapsed_ns` into the window right before it (when that one is adjacent),
/// so that every window of the per-second series covers at least half a
/// second. The folded window keeps the earlier one's span: the tail is a
/// fraction of a second past it, which `disk_seconds` counts.
pub fn fold_short_tail(windows: &mut Vec<SecondStats>, elapsed_ns: u64) {
    let n = windows.len();
    if n < 2 {
        return;
    }
    let (before, last) = (windows[n - 2], windows[n - 1]);
    let adjacent = before.second + before.span_s == last.second;
    let tail_ns = elapsed_ns.saturating_sub(last.second.saturating_mul(SECOND_NS));
    if adjacent
        && tail_ns < SHORTEST_TAIL_NS
        && let Some(both) = merged(&[before, last])
    {
        windows.truncate(n - 2);
        windows.push(SecondStats {
            span_s: before.span_s,
            ..both
        });
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let w = [SecondStats {
            second: 4,
            span_s: 2,
            samples: 100,
            min_ns: 1,
            avg_ns: 2.0,
            max_ns: 3,
        }];
        // A merged window of 2 s that is not the last: rates over its span.
        let d = disk_seconds(&[w[0], window(9, 1, 7)], 4096, 10 * SECOND_NS);
        assert_eq!(d[0].writes, 100);
        assert_eq!(d[0].covered_s, 2.0);
        assert_eq!(d[0].iops, 50.0);
        assert_eq!(d[0].bytes_per_s, 204_800.0);
    }

    fn window(second: u64, span_s: u64, samples: u64) -> SecondStats {
        SecondStats {
            second,
            span_s,
            samples,
            min_ns: 10,
            avg_ns: 20.0,
            max_ns: 30,
        }
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
        fold_short_tail(&mut w, elapsed);
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
        let mut long_tail = vec![window(0, 1, 10), window(1, 1, 5)];
        fold_short_tail(&mut long_tail, 1_500 * MS);
        assert_eq!(long_tail.len(), 2);
        // Second 1 had no completed write: nothing adjacent to fold into.
        let mut after_gap = vec![window(0, 1, 10), window(2, 1, 1)];
        fold_short_tail(&mut after_gap, 2_001 * MS);
        assert_eq!(after_gap.len(), 2);
        let d = disk_seconds(&after_gap, 512, 2_001 * MS);
        assert_eq!(d[1].covered_s, 0.001);
        let mut single = vec![window(0, 1, 1)];
        fold_short_tail(&mut single, MS);
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
}
