//! Each CPU's gaps over the run, by class: per duty window, how many, the
//! shortest, the mean and the longest (`SecondStats`, numbered by window
//! until `in_seconds` places them in seconds since the run's start), for
//! the report's plot of gaps over time.
//!
//! Per window rather than a list of the largest gaps: every stretch of the
//! run is there (a quiet one as no entry), the longest gap of each window is
//! exact, and entries merge exactly (counts add, extremes hold). Bounded as
//! the other tests' per-second series: beyond `MAX_WINDOWS` entries per
//! class, neighbours merge in pairs.

use crate::stats::window::{MAX_WINDOWS, SecondStats, compact, merged};

/// A CPU's gaps per window, by class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GapWindows {
    pub hardware: Vec<SecondStats>,
    pub os: Vec<SecondStats>,
}

impl GapWindows {
    /// Counts a gap of `ns` in duty window `window` (in time order).
    pub fn add(&mut self, window: u64, ns: u64, hardware: bool) {
        let list = if hardware {
            &mut self.hardware
        } else {
            &mut self.os
        };
        note(list, window, ns);
    }
}

fn note(list: &mut Vec<SecondStats>, window: u64, ns: u64) {
    let v = ns.min(i64::MAX as u64) as i64;
    match list.last_mut() {
        // The window of the last entry (or inside it, once merged).
        Some(w) if window < w.second + w.span_s => {
            w.avg_ns = (w.avg_ns * w.samples as f64 + ns as f64) / (w.samples + 1) as f64;
            w.samples += 1;
            w.min_ns = w.min_ns.min(v);
            w.max_ns = w.max_ns.max(v);
        }
        _ => {
            list.push(SecondStats::new(window, 1, 1, v, ns as f64, v));
            if list.len() > MAX_WINDOWS {
                compact(list);
            }
        }
    }
}

/// Where a CPU's windows lie in the run: window k spins from
/// `first_ns + k * window_ns` (since the run's start) for `width_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub first_ns: u64,
    pub window_ns: u64,
    pub width_ns: u64,
}

/// `windows` (numbered by duty window) placed in whole seconds since the
/// run's start: an entry covers the seconds from its first window's start to
/// its last window's end of spinning; entries that meet in one second merge.
pub fn in_seconds(windows: &[SecondStats], at: Placement) -> Vec<SecondStats> {
    const S: u64 = 1_000_000_000;
    let mut out: Vec<SecondStats> = Vec::with_capacity(windows.len());
    for w in windows {
        let from = at.first_ns + w.second * at.window_ns;
        let to = at.first_ns + (w.second + w.span_s - 1) * at.window_ns + at.width_ns;
        let second = from / S;
        let placed = SecondStats {
            second,
            span_s: to.div_ceil(S).max(second + 1) - second,
            ..*w
        };
        match out.last_mut() {
            Some(last) if placed.second < last.second + last.span_s => {
                let end = (last.second + last.span_s).max(placed.second + placed.span_s);
                *last = merged(&[*last, placed]).unwrap_or(placed);
                last.span_s = end - last.second;
            }
            _ => out.push(placed),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_gather_per_window_and_class() {
        let mut g = GapWindows::default();
        g.add(0, 12_000, true);
        g.add(0, 30_000, true);
        g.add(0, 50_000, false);
        g.add(3, 20_000, true);
        assert_eq!(
            g.hardware,
            vec![
                SecondStats::new(0, 1, 2, 12_000, 21_000.0, 30_000),
                SecondStats::new(3, 1, 1, 20_000, 20_000.0, 20_000)
            ]
        );
        assert_eq!(
            g.os,
            vec![SecondStats::new(0, 1, 1, 50_000, 50_000.0, 50_000)]
        );
    }

    #[test]
    fn beyond_the_bound_neighbours_merge_and_nothing_is_lost() {
        let mut g = GapWindows::default();
        for window in 0..=MAX_WINDOWS as u64 {
            g.add(window, 10_000 + window, true);
        }
        assert!(g.hardware.len() <= MAX_WINDOWS, "{}", g.hardware.len());
        let samples: u64 = g.hardware.iter().map(|w| w.samples).sum();
        assert_eq!(samples, MAX_WINDOWS as u64 + 1);
        assert_eq!(g.hardware[0].span_s, 2);
        let longest = g.hardware.iter().map(|w| w.max_ns).max();
        assert_eq!(longest, Some(10_000 + MAX_WINDOWS as i64));
        // A later gap of a merged entry's window joins it.
        let before = g.hardware.len();
        g.add(MAX_WINDOWS as u64, 5, true);
        assert_eq!(g.hardware.len(), before);
    }

    /// (second, span, samples) of `windows` placed with windows of
    /// `window_ms` spinning `width_ms`, the first `first_ms` after the start.
    fn placed(
        windows: &[SecondStats],
        (first_ms, window_ms, width_ms): (u64, u64, u64),
    ) -> Vec<(u64, u64, u64)> {
        let at = Placement {
            first_ns: first_ms * 1_000_000,
            window_ns: window_ms * 1_000_000,
            width_ns: width_ms * 1_000_000,
        };
        in_seconds(windows, at)
            .iter()
            .map(|w| (w.second, w.span_s, w.samples))
            .collect()
    }

    #[test]
    fn windows_are_placed_in_seconds_since_the_start() {
        let windows = [
            SecondStats::new(0, 1, 2, 12_000, 21_000.0, 30_000),
            SecondStats::new(3, 1, 1, 20_000, 20_000.0, 20_000),
        ];
        // The second CPU of two: its windows of 1 s start 0.5 s late and
        // spin 0.5 s, so each stays in its second.
        assert_eq!(
            placed(&windows, (500, 1000, 500)),
            vec![(0, 1, 2), (3, 1, 1)]
        );
        // Windows of 300 ms spinning 100 ms: 0 (0.0-0.1 s) and 3 (0.9-1.0 s)
        // fall in one second and merge, their extremes kept...
        assert_eq!(placed(&windows, (0, 300, 100)), vec![(0, 1, 3)]);
        let at = Placement {
            first_ns: 0,
            window_ns: 300_000_000,
            width_ns: 100_000_000,
        };
        let merged = in_seconds(&windows, at);
        assert_eq!((merged[0].min_ns, merged[0].max_ns), (12_000, 30_000));
        // ... and windows of 10 s spinning 5 s span five seconds each.
        assert_eq!(
            placed(&windows, (0, 10_000, 5_000)),
            vec![(0, 5, 2), (30, 5, 1)]
        );
        assert!(placed(&[], (0, 10_000, 5_000)).is_empty());
    }
}
