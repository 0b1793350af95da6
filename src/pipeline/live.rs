//! The outputs written while a test runs, from the windows its monitor
//! drains (`stats::window::WindowHook`): `--prom` rewritten every window,
//! `--hdr-log` appended every window, and the SIGUSR1 snapshots of the
//! tests that take theirs from the windows (timer, noise, log-disk).
//!
//! Per series of the running test the monitor thread keeps the sum of its
//! window histograms so far (no work on a measuring thread) beside the
//! exact count, sum, min and max of its windows: the running test's
//! "results so far" are those, in the shape of the test's own report (a
//! skeleton the measure step gives at the start). Percentiles and buckets
//! are the window histograms' (two significant digits, < 1 %), which the
//! prom ladder (1-2-5 steps) does not resolve anyway; counts, min, max and
//! mean are exact. Counters the windows do not carry (overruns, samples
//! above the limit, an IPC pair's timeouts, a noise CPU's noise and time
//! spun) are the measuring threads' published values, read by the monitor
//! every tick (`WindowHook::counters`); the few figures nobody publishes
//! while running (a timer's msw, loops per second) stay at the skeleton's
//! zero until the test ends.

use super::FinishedTest;
use super::hdrlog::{HdrLog, tag_of};
use crate::report::{EndReason, Series, SeriesDetail};
use crate::stats::window::{LiveCounters, MAX_WINDOWS, SecondStats, WindowHook, compact};
use crate::stats::window_histogram::{self as wh, PackedHistogram};
use crate::stats::{Bucket, LatencySummary, Percentile, REPORTED_PERCENTILES};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant, SystemTime};

/// A series of a test about to start: no samples yet, its windows fill it.
pub fn series_without_samples(
    label: String,
    cpus: Vec<usize>,
    (pinned, policy, priority): (bool, String, i32),
    detail: SeriesDetail,
) -> Series {
    Series {
        label,
        cpus,
        pinned,
        policy,
        priority,
        overruns: 0,
        above_limit: 0,
        latency: LatencySummary::default(),
        per_second: Vec::new(),
        per_second_dropped: 0,
        detail,
    }
}

/// The skeleton `Run::begin_test` takes: `test` (a test's report with no
/// samples, such as its not-started form) running, with `series`.
pub fn running_skeleton(mut test: FinishedTest, series: Vec<Series>) -> FinishedTest {
    test.result.error = None;
    test.result.end_reason = EndReason::Running;
    test.result.series = series;
    test
}

/// `running_skeleton` of a test with one pinned thread per CPU of `cpus`
/// (the timer's and the noise test's), each series labelled `CPU n`, its
/// detail `detail(cpu)`.
pub fn per_cpu_skeleton(
    test: FinishedTest,
    cpus: &[usize],
    (policy, priority): (String, i32),
    detail: impl Fn(usize) -> SeriesDetail,
) -> FinishedTest {
    let series = cpus
        .iter()
        .map(|&cpu| {
            series_without_samples(
                format!("CPU {cpu}"),
                vec![cpu],
                (true, policy.clone(), priority),
                detail(cpu),
            )
        })
        .collect();
    let mut test = running_skeleton(test, series);
    test.facts.cpus_used = cpus.to_vec();
    test
}

/// One series of the running test, as its windows tell it.
struct LiveSeries {
    /// Every window histogram so far, summed.
    histogram: Histogram<u64>,
    windows: Vec<SecondStats>,
    samples: u64,
    sum: f64,
    min: i64,
    max: i64,
    tag: String,
    /// What the measuring thread counted so far beside its windows.
    counters: LiveCounters,
}

impl LiveSeries {
    fn summary(&self) -> LatencySummary {
        summary_of(&self.histogram, self.samples, self.sum, self.min, self.max)
    }
}

/// The summary of `samples` samples whose sum, min and max are exact and
/// whose distribution is `h` (window histograms, negative samples at 0).
fn summary_of(h: &Histogram<u64>, samples: u64, sum: f64, min: i64, max: i64) -> LatencySummary {
    if samples == 0 {
        return LatencySummary::default();
    }
    LatencySummary {
        samples,
        min_ns: min,
        avg_ns: sum / samples as f64,
        max_ns: max,
        stddev_ns: if h.is_empty() { 0.0 } else { h.stdev() },
        percentiles: REPORTED_PERCENTILES
            .iter()
            .map(|&p| Percentile {
                percentile: p,
                ns: wh::percentile(h, p).map_or(max, |v| wh::clamped(v, min, max)),
            })
            .collect(),
        histogram: h
            .iter_recorded()
            .map(|b| {
                let value = b.value_iterated_to();
                Bucket {
                    low_ns: (h.lowest_equivalent(value) as i64).max(min),
                    high_ns: (h.highest_equivalent(value).min(i64::MAX as u64) as i64).min(max),
                    count: b.count_since_last_iteration(),
                }
            })
            .collect(),
        ..LatencySummary::default()
    }
}

/// The test going on.
struct Running {
    skeleton: FinishedTest,
    started: Instant,
    started_at: SystemTime,
    series: Vec<LiveSeries>,
    /// A window came since the prom file was last written.
    fresh: bool,
}

/// What the pipeline keeps for the live outputs (inside `Run`).
#[derive(Default)]
pub(super) struct LiveState {
    /// The tests finished before the running one (the last checkpoint's).
    pub done: Vec<FinishedTest>,
    running: Option<Running>,
    pub hdr_log: Option<HdrLog>,
    /// The first error of the interval log (reported once, at the end).
    pub hdr_log_error: Option<String>,
    /// The monitor's CPUs before `begin` moved it off the measured ones.
    moved_from: Option<Vec<usize>>,
    /// A snapshot asked for before the running test's first window closed:
    /// served with that window (a snapshot of nothing would say nothing).
    pub snapshot_pending: bool,
}

impl LiveState {
    /// A test starts: `skeleton` is its report with no samples yet (labels,
    /// CPUs, settings). With `keep_off`, the calling (monitor) thread moves
    /// off the measured CPUs while another CPU is allowed: the rewrites run
    /// there, never beside a measuring thread.
    pub fn begin(&mut self, skeleton: FinishedTest, keep_off: bool) {
        let series = skeleton
            .result
            .series
            .iter()
            .map(|s| LiveSeries {
                histogram: wh::window_histogram(),
                windows: Vec::new(),
                samples: 0,
                sum: 0.0,
                min: i64::MAX,
                max: i64::MIN,
                tag: tag_of(&skeleton.result.test, &skeleton.result.mode, &s.label),
                counters: LiveCounters::default(),
            })
            .collect();
        if keep_off && self.moved_from.is_none() {
            let measured: Vec<usize> = skeleton
                .result
                .series
                .iter()
                .flat_map(|s| s.cpus.iter().copied())
                .chain(skeleton.facts.cpus_used.iter().copied())
                .collect();
            let allowed = crate::rt::sched::allowed_cpus();
            let free = crate::rt::sched::allowed_cpus_except(&measured);
            if !free.is_empty() && crate::rt::sched::pin_current_thread_to(&free).is_ok() {
                self.moved_from = Some(allowed);
            }
        }
        self.running = Some(Running {
            skeleton,
            started: Instant::now(),
            started_at: SystemTime::now(),
            series,
            fresh: false,
        });
    }

    /// The test ended (its final result is the measure step's): the monitor
    /// gets its CPUs back.
    pub fn end(&mut self) {
        self.running = None;
        if let Some(cpus) = self.moved_from.take() {
            let _ = crate::rt::sched::pin_current_thread_to(&cpus);
        }
    }

    /// A window of series `series` of the running test.
    pub fn window(&mut self, series: usize, w: &SecondStats, h: Option<&PackedHistogram>) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        let Some(s) = running.series.get_mut(series) else {
            return;
        };
        if let Some(h) = h {
            h.add_to(&mut s.histogram);
        }
        s.samples += w.samples;
        s.sum += w.avg_ns * w.samples as f64;
        s.min = s.min.min(w.min_ns);
        s.max = s.max.max(w.max_ns);
        s.windows.push(*w);
        // Bounded as the monitor's own series is (a run of days): merged
        // windows keep exact counts and extremes; the final report's are
        // the monitor's, merged with their histograms.
        if s.windows.len() > MAX_WINDOWS {
            compact(&mut s.windows);
        }
        running.fresh = true;
        if let (Some(log), Some(h)) = (self.hdr_log.as_mut(), h) {
            let start = running.started_at + Duration::from_secs(w.second);
            let written = log.interval(
                &s.tag,
                start,
                Duration::from_secs(w.span_s.max(1)),
                &h.unpacked(),
            );
            if let Err(e) = written
                && self.hdr_log_error.is_none()
            {
                self.hdr_log_error = Some(format!("could not write {}: {e}", log.path().display()));
            }
        }
    }

    /// The counters series `series` of the running test published so far.
    pub fn counters(&mut self, series: usize, counters: LiveCounters) {
        if let Some(s) = self.running.as_mut().and_then(|r| r.series.get_mut(series)) {
            s.counters = counters;
        }
    }

    /// Where series `series` of the running test is, for an action on its
    /// crossing: the test, the series' label and CPU (when pinned to one).
    pub fn crossing_in(&self, series: usize) -> super::actions::Crossing {
        let Some(running) = self.running.as_ref() else {
            return super::actions::Crossing::default();
        };
        let result = &running.skeleton.result;
        let s = result.series.get(series);
        super::actions::Crossing {
            test: Some(result.test.clone()),
            series: s.map(|s| s.label.clone()),
            cpu: s.filter(|s| s.pinned).and_then(|s| s.cpus.first().copied()),
            ..Default::default()
        }
    }

    /// Whether the running test has a window yet.
    pub fn has_samples(&self) -> bool {
        self.running
            .as_ref()
            .is_some_and(|r| r.series.iter().any(|s| s.samples > 0))
    }

    /// Whether a window came since the last call.
    pub fn take_fresh(&mut self) -> bool {
        self.running
            .as_mut()
            .is_some_and(|r| std::mem::take(&mut r.fresh))
    }

    /// The running test's results so far (`EndReason::Running`), or None
    /// between tests.
    pub fn so_far(&self) -> Option<FinishedTest> {
        let running = self.running.as_ref()?;
        let mut test = running.skeleton.clone();
        let mut overall = wh::window_histogram();
        let (mut samples, mut sum, mut min, mut max) = (0u64, 0.0, i64::MAX, i64::MIN);
        for (series, live) in test.result.series.iter_mut().zip(&running.series) {
            let _ = overall.add(&live.histogram);
            samples += live.samples;
            sum += live.sum;
            min = min.min(live.min);
            max = max.max(live.max);
            *series = Series {
                latency: live.summary(),
                per_second: live.windows.clone(),
                ..series.clone()
            };
            with_counters(series, &live.counters);
        }
        test.result.overall = summary_of(&overall, samples, sum, min, max);
        test.result.end_reason = EndReason::Running;
        test.elapsed = running.started.elapsed();
        test.ended = SystemTime::now();
        test.facts.elapsed = test.elapsed;
        test.facts.max_ns = (samples > 0).then_some(max);
        Some(test)
    }
}

/// `counters` into `series`: the core's overruns and samples above the
/// limit, and the figures of its kind that the measuring thread counts (an
/// IPC pair's timeouts, a noise CPU's noise and time spun).
fn with_counters(series: &mut Series, counters: &LiveCounters) {
    series.overruns = counters.overruns;
    series.above_limit = counters.above_limit;
    match &mut series.detail {
        SeriesDetail::IpcPair(pair) => pair.timeouts = counters.timeouts,
        SeriesDetail::NoiseCpu(cpu) => {
            if let Some((noise_ns, measured_ns)) = counters.noise {
                cpu.noise_ns = noise_ns;
                cpu.measured_ns = measured_ns;
                cpu.noise_percent = if measured_ns > 0 {
                    noise_ns as f64 * 100.0 / measured_ns as f64
                } else {
                    0.0
                };
            }
        }
        _ => {}
    }
}

/// The window hook the monitors call: the live state of a `Run`.
pub struct LiveHook<'r, 'a> {
    pub(super) run: &'r super::Run<'a>,
}

impl WindowHook for LiveHook<'_, '_> {
    fn window(&mut self, series: usize, window: &SecondStats, histogram: Option<&PackedHistogram>) {
        self.run.live_state().window(series, window, histogram);
    }

    fn counters(&mut self, series: usize, counters: LiveCounters) {
        self.run.live_state().counters(series, counters);
        self.run.watch_crossings(series, counters.above_limit);
    }

    fn drained(&mut self) {
        self.run.rewrite_live();
        let due = {
            let live = self.run.live_state();
            live.snapshot_pending && live.has_samples()
        };
        if due {
            self.run.snapshot_from_windows();
        }
    }

    fn snapshot(&mut self) {
        self.run.snapshot_from_windows();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_from_windows_keeps_the_exact_extremes_and_mean() {
        let mut h = wh::window_histogram();
        for v in [1_000, 1_000, 2_000, 9_999] {
            wh::record(&mut h, v);
        }
        let s = summary_of(&h, 4, 13_999.0, 1_000, 9_999);
        assert_eq!((s.samples, s.min_ns, s.max_ns), (4, 1_000, 9_999));
        assert!((s.avg_ns - 3_499.75).abs() < 1e-9);
        // A bucket's top, within 1 % (two significant digits), never below.
        let p50 = s.percentile(50.0).unwrap();
        assert!((1_000..=1_010).contains(&p50), "{p50}");
        // The top bucket's top is clamped to the exact max.
        assert_eq!(s.percentile(99.9), Some(9_999));
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<u64>(), 4);
        assert_eq!(summary_of(&h, 0, 0.0, 0, 0), LatencySummary::default());
    }

    #[test]
    fn the_results_so_far_carry_the_published_counters() {
        let report = crate::report::testdata::sample_report();
        let mut live = LiveState::default();
        live.begin(
            FinishedTest::not_started(report.tests[0].clone(), true),
            false,
        );
        live.window(0, &SecondStats::new(0, 1, 3, 2_000, 3_000.0, 5_000), None);
        live.counters(
            0,
            LiveCounters {
                overruns: 4,
                above_limit: 2,
                timeouts: 1,
                noise: None,
            },
        );
        // Out of range (a series the skeleton does not have): ignored.
        live.counters(7, LiveCounters::default());
        let so_far = live.so_far().expect("a running test");
        let series = &so_far.result.series[0];
        assert_eq!((series.overruns, series.above_limit), (4, 2));
        assert_eq!(series.timeouts(), 1);
        assert_eq!(series.latency.samples, 3);
        assert_eq!(so_far.result.end_reason, EndReason::Running);
    }

    #[test]
    fn a_noise_cpu_so_far_has_its_share() {
        let mut series = series_without_samples(
            "CPU 1".into(),
            vec![1],
            (true, "other".into(), 0),
            SeriesDetail::NoiseCpu(Box::new(crate::report::NoiseCpu {
                cpu: 1,
                tid: 0,
                isolated: false,
                measured_ns: 0,
                noise_ns: 0,
                noise_percent: 0.0,
                loops: 0,
                loops_per_s: 0.0,
                causes: None,
                oslat: None,
                hardware: None,
            })),
        );
        with_counters(
            &mut series,
            &LiveCounters {
                above_limit: 9,
                noise: Some((5_000_000, 2_000_000_000)),
                ..LiveCounters::default()
            },
        );
        let cpu = series.noise_cpu().unwrap();
        assert_eq!((cpu.noise_ns, cpu.measured_ns), (5_000_000, 2_000_000_000));
        assert!((cpu.noise_percent - 0.25).abs() < 1e-12);
        assert_eq!(series.above_limit, 9);
    }
}
