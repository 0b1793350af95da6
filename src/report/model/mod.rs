//! The Report model: every type that is serialized into a report's JSON.
//!
//! Producers (the tests, the doctor, the load generators, the kernel-log
//! follower, `--fail-if`) fill it; exporters (the rest of `report/`) only read
//! it. It is plain data and imports only `rt/`, `stats/` and `units`
//! (tests/suite/layers.rs checks that), so no exporter depends on a producer through
//! it. The pure statistics it embeds (`LatencySummary`, `SecondStats`) stay in
//! `stats/`, which every layer may import.

pub mod actions;
pub mod checks;
pub mod compare;
pub mod cyclictest;
pub mod hwlat;
pub mod kernel_log;
pub mod loads;
pub mod noise;
pub mod pi_stress;
pub mod samples;
pub mod spikes;
pub mod sysinfo;
pub mod thresholds;
pub mod xenomai;

pub use actions::*;
pub use checks::*;
pub use compare::*;
pub use cyclictest::*;
pub use hwlat::*;
pub use kernel_log::*;
pub use loads::*;
pub use noise::*;
pub use pi_stress::*;
pub use samples::*;
pub use spikes::*;
pub use sysinfo::*;
pub use thresholds::*;
pub use xenomai::*;

use crate::stats::LatencySummary;
use crate::stats::window::SecondStats;
use serde::{Deserialize, Serialize};

/// Identifies the JSON document; bump `SCHEMA_VERSION` on any incompatible change.
pub const SCHEMA_NAME: &str = "latscope-report";
pub const SCHEMA_VERSION: u32 = 3;
/// The oldest version this latscope still reads: version 3 only added
/// fields (per-window percentiles), which read as absent in a version-2 report.
pub const OLDEST_READ_SCHEMA_VERSION: u32 = 2;

/// Whether a report of `version` loads (`latscope report`, `compare`).
pub fn schema_version_readable(version: u64) -> bool {
    (u64::from(OLDEST_READ_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&version)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub schema_version: u32,
    pub tool: Tool,
    /// The command line as given (argv).
    pub command_line: Vec<String>,
    /// RFC 3339, UTC.
    pub start_time: String,
    pub end_time: String,
    pub duration_s: f64,
    pub sysinfo: SysInfo,
    pub tests: Vec<TestResult>,
    /// Reasons the numbers may not mean what a real-time user expects.
    pub warnings: Vec<String>,
    /// Every `--fail-if` threshold held against every series (empty without
    /// `--fail-if`); a crossed one makes the exit code 3.
    #[serde(default)]
    pub thresholds: Vec<ThresholdCheck>,
    /// `--load`: the load generators that ran beside the measurement.
    #[serde(default)]
    pub loads: Vec<LoadRecord>,
    /// What the kernel log said while measuring.
    #[serde(default)]
    pub kernel_log: KernelLog,
    /// The process exit code this run ends with (0, 1, 3 or 4).
    pub exit_code: i32,
    /// `--samples FILE`: the file of every raw sample, and what it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_file: Option<SamplesFile>,
    /// `--policy deadline`: each series' reservation and how it held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deadline: Vec<DeadlineSeries>,
    /// `--deepest-idle-state`: the idle states disabled while measuring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_states: Option<crate::rt::cpuidle::IdleStateLimit>,
    /// `--on-threshold`, `--on-end`: the actions asked for and those run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<ActionLog>,
}

/// `--policy deadline`: one series' SCHED_DEADLINE reservation and how it
/// held (the series is `tests[i].series[j]` with this test, mode and label).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineSeries {
    pub test: String,
    pub mode: String,
    pub series: String,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
    /// Periods whose work (the sample) ended after the period's start plus
    /// the deadline.
    pub missed_deadlines: u64,
    /// Periods in which the kernel throttled the measuring task (it used up
    /// its runtime: SIGXCPU, `SCHED_FLAG_DL_OVERRUN`); also counted in the
    /// series' `overruns`.
    pub throttled_periods: u64,
}

impl DeadlineSeries {
    /// The record of the series `label` of `test`, run under
    /// `reservation`, with its missed deadlines and throttled periods.
    pub fn of(
        test: &TestResult,
        label: &str,
        reservation: crate::rt::sched::Reservation,
        (missed_deadlines, throttled_periods): (u64, u64),
    ) -> DeadlineSeries {
        DeadlineSeries {
            test: test.test.clone(),
            mode: test.mode.clone(),
            series: label.to_string(),
            runtime_ns: reservation.runtime_ns,
            deadline_ns: reservation.deadline_ns,
            period_ns: reservation.period_ns,
            missed_deadlines,
            throttled_periods,
        }
    }

    /// The console's line: the reservation, then what missed it.
    pub fn line(&self) -> String {
        let us = |ns: u64| crate::units::format_ns(ns as i64);
        format!(
            "deadline: {} {}: runtime {} every {} due in {}: {} missed deadline{}, {} throttled period{} (in Overruns)",
            self.test,
            self.series,
            us(self.runtime_ns),
            us(self.period_ns),
            us(self.deadline_ns),
            self.missed_deadlines,
            if self.missed_deadlines == 1 { "" } else { "s" },
            self.throttled_periods,
            if self.throttled_periods == 1 { "" } else { "s" },
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: "latscope".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// Why a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Every series finished its loops.
    LoopsDone,
    DurationElapsed,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// A sample crossed the break-trace limit.
    BreakTrace,
    /// The timer's `-b`: an event that explains a late wake-up (a "mode
    /// switch" in Xenomai's words) happened to a sampling thread.
    BreakOnSwitch,
    /// A task failed or a peer process died; see the error.
    Error,
    /// Not run: this machine lacks what the test needs (the reason is in
    /// the report's warnings). A run whose every test was skipped exits 4.
    Skipped,
    /// Not ended: a snapshot of the results so far, taken while the test went
    /// on (SIGUSR1, docs/fleet.md). Only snapshots carry it.
    Running,
}

/// One test (one transport or one kind of measurement) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Test name (`mq`, `timer`).
    pub test: String,
    /// What one sample spans, for people.
    pub description: String,
    /// `one-way` (sender stamp to receiver stamp), `round-trip`, or for the
    /// timer the wake-up figure reported (`user`, `thread`, `irq`).
    pub mode: String,
    pub config: TestConfig,
    pub end_reason: EndReason,
    /// A run-time error that ended the test early, if any.
    pub error: Option<String>,
    /// All series of the test merged (what the suite overview shows).
    pub overall: LatencySummary,
    pub series: Vec<Series>,
    /// The kind-specific figures of all series merged, where the kind has
    /// them (`logdisk`: the writers' totals, as mqldt sums its queue managers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall_detail: Option<SeriesDetail>,
    /// With `--trace-spikes`: the samples above the threshold and their causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spikes: Option<spikes::SpikeTrace>,
    /// Seconds from the run's start (when latscope began following the
    /// kernel log, before the first test) to this test's start: where the
    /// test's time axis (its series' `per_second` windows) sits on the
    /// clock of `kernel_log`'s messages. Absent in reports of earlier
    /// versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
}

/// The resolved configuration of a test: what every kind of test shares, then
/// the part only its kind has (`detail`, tagged by `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestConfig {
    pub policy: String,
    pub priority: i32,
    pub loops: Option<u64>,
    pub duration_s: Option<f64>,
    pub max_latency_us: Option<u64>,
    pub mlockall: bool,
    pub cpu_dma_latency: String,
    pub detail: ConfigDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConfigDetail {
    Ipc(IpcConfig),
    Timer(TimerConfig),
    Logdisk(LogdiskConfig),
    Noise(NoiseConfig),
    Hwlat(HwlatConfig),
    PiStress(PiStressConfig),
}

/// What only a log-disk test (mqldt's synchronous sequential writes) is
/// configured with. One TestResult per block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogdiskConfig {
    /// `--dir` as given.
    pub dir: String,
    /// The directory of each writer (`--dir`, or DIR1..DIRN with `--qm`).
    pub dirs: Vec<String>,
    pub file_prefix: String,
    /// This test's write size in bytes.
    pub block_size: u64,
    /// Every block size of the run, in the order run.
    pub block_sizes: Vec<u64>,
    pub file_size: u64,
    /// Files per writer.
    pub num_files: u64,
    /// `--qm`: concurrent writers, one per directory.
    pub writers: u64,
    /// Think time between two writes (not in the write latency).
    pub delay_us: u64,
    pub alignment: u64,
    /// `dsync` (files opened O_DSYNC), `fdatasync`, `fsync` or `none`.
    pub sync: String,
    /// Files opened O_DIRECT.
    pub direct: bool,
    pub reuse: bool,
    pub keep: bool,
}

/// What only an IPC test (pairs of tasks waking each other) is configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpcConfig {
    pub pairs: usize,
    /// `threads`, or `processes` (`--fork`: the peer of each pair is a child process).
    pub tasks: String,
    /// The two tasks of each pair on different CPUs (`--cross-cpu`).
    pub cross_cpu: bool,
    pub same_priority: bool,
    pub interval_us: u64,
    pub distance_us: u64,
    pub receive_timeout_s: Option<f64>,
    pub forced_send_delay_s: Option<f64>,
    pub breaktrace_us: Option<u64>,
}

/// What only a timer test (periodic wake-ups of sampling threads) is
/// configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerConfig {
    /// One sampling thread per CPU listed.
    pub cpus: Vec<usize>,
    pub period_us: u64,
    /// `clock_nanosleep` (absolute, as cyclictest) or `timerfd` (periodic, as
    /// Xenomai's Linux build).
    pub wake: String,
    /// The run's main figure: `user`, `thread` or `irq` (Xenomai `-t` 0, 1, 2).
    pub figure: String,
    pub test_mode: u8,
    /// One-second loops discarded at the start.
    pub warmup_loops: u64,
    /// Samples per loop (`1 s / period`).
    pub samples_per_loop: u64,
    /// Xenomai's histograms: cells and cell width.
    pub histogram_cells: usize,
    pub bucket_ns: u64,
    /// Kernel-side breakdown of every wake-up.
    pub breakdown: bool,
    /// `-f`: new maxima marked in the kernel trace, tracing stopped at the end.
    pub freeze_trace: bool,
    /// `-b`: stop at the first context switch or page fault.
    pub break_on_switch: bool,
    /// `cyclictest --latscope-json`: what shapes cyclictest's final block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclictest: Option<CyclicOutput>,
}

/// One sampling thread of a timer test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerThread {
    pub cpu: usize,
    pub tid: i32,
    pub period_us: u64,
    /// One-second loops measured (the last may be partial).
    pub loops: u64,
    /// Xenomai's "msw" on plain Linux: the sum of the three counters below,
    /// read from the thread's own `getrusage(RUSAGE_THREAD)` once per loop.
    pub msw: u64,
    pub involuntary_switches: u64,
    pub major_faults: u64,
    pub minor_faults: u64,
    /// Xenomai's three histograms of the main figure: every sample, each
    /// loop's minimum, each loop's maximum (cells of |latency| / bucket; the
    /// last cell also holds everything beyond). The timer test's only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_all: Option<XenomaiHistogram>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_loop_min: Option<XenomaiHistogram>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_loop_max: Option<XenomaiHistogram>,
    /// With `--breakdown`: every wake-up split into its kernel-side parts.
    pub breakdown: Option<Breakdown>,
    /// `cyclictest --latscope-json`: cyclictest's own figures of the thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cyclictest: Option<CyclicThread>,
}

impl TimerThread {
    /// Xenomai's three histograms (every sample, loop minima, loop maxima)
    /// when the thread has them (the timer test's threads).
    pub fn xenomai_histograms(
        &self,
    ) -> Option<(&XenomaiHistogram, &XenomaiHistogram, &XenomaiHistogram)> {
        Some((
            self.histogram_all.as_ref()?,
            self.histogram_loop_min.as_ref()?,
            self.histogram_loop_max.as_ref()?,
        ))
    }
}

/// The kernel side of one sampling thread's wake-ups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Where the figures come from (the trace events used).
    pub source: String,
    /// Timer interrupt handler start - expiry.
    pub irq: LatencySummary,
    /// Sampling thread scheduled in (`sched_switch` to it) - expiry: only the
    /// wake-ups whose switch the kernel traced (see `without_sched_in`).
    pub thread: LatencySummary,
    /// Sampling thread returning to user space (`rseq_update`) - expiry.
    pub return_to_user: LatencySummary,
    /// The thread's own clock read after waking - expiry.
    pub user: LatencySummary,
    /// Wake-ups after the warm-up with the IRQ latency and the thread or
    /// return latency traced.
    pub traced_wakeups: u64,
    /// Of those, wake-ups without a traced switch to the thread (the kernel
    /// emits none for a switch out of the idle task on some CPUs).
    pub without_sched_in: u64,
    /// Wake-ups the trace saw only in part (lost events, a timer already
    /// expired when armed): in no kernel-side figure.
    pub incomplete_wakeups: u64,
    /// Events the kernel dropped because the reader fell behind (whole run).
    pub events_lost: u64,
    /// The collector that filled it (`bpf` or `tracefs`), and why not BPF.
    #[serde(default)]
    pub collector: crate::rt::bpf::CollectorUsed,
    /// In-kernel collection: wake-ups whose slot a program was writing while
    /// the thread read it (counted, in no kernel-side figure, never guessed).
    #[serde(default)]
    pub torn_wakeups: u64,
    /// In-kernel collection: complete wake-ups whose figures were not in
    /// order (IRQ <= thread <= user); 0 unless the clocks or the events
    /// disagree. Not checked by the tracefs collector.
    #[serde(default)]
    pub unordered_wakeups: u64,
    /// In-kernel collection: of `incomplete_wakeups`, those whose timer
    /// fired before the thread went to sleep (its period was nearly over
    /// when it asked to sleep): the scheduler never ran, so there is no
    /// thread figure, only the IRQ's.
    #[serde(default)]
    pub unscheduled_wakeups: u64,
}

/// One measured stream of samples (an IPC pair, a timer thread): the common
/// core every exporter can read, then the part only its kind has (`detail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub label: String,
    /// The CPUs the series' tasks ran on, the measuring task's first.
    pub cpus: Vec<usize>,
    /// Whether the tasks were pinned to their CPUs.
    pub pinned: bool,
    pub policy: String,
    pub priority: i32,
    /// Periods missed because a wake-up came later than the next one was due.
    pub overruns: u64,
    /// Samples above `--max-latency`.
    pub above_limit: u64,
    #[serde(flatten)]
    pub latency: LatencySummary,
    pub per_second: Vec<SecondStats>,
    /// Per-second windows lost because the monitor thread was starved.
    pub per_second_dropped: u64,
    pub detail: SeriesDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeriesDetail {
    IpcPair(IpcPair),
    TimerThread(Box<TimerThread>),
    DiskWriter(Box<DiskWriter>),
    NoiseCpu(Box<NoiseCpu>),
    HwlatCpu(Box<HwlatCpu>),
    PiGroup(PiGroup),
}

/// One writer of a log-disk test (one mqldt queue manager), or all writers
/// merged (`TestResult::overall_detail`). The Series' latency is the time of
/// one durable write: the write call, plus the sync call with
/// `--sync fdatasync|fsync`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskWriter {
    /// 0 with one writer (as mqldt numbers its thread), 1..N with `--qm`;
    /// the merge of several writers says 0 too.
    pub writer: u64,
    pub tid: i32,
    /// The writer's directory (empty for the merge of several).
    pub dir: String,
    pub block_size: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes written (writes x block size).
    pub bytes: u64,
    /// From the first write's start to the last write's end, seconds
    /// (for the merge: the longest writer's).
    pub duration_s: f64,
    /// writes / duration_s (the merge: the writers' sum).
    pub iops: f64,
    /// bytes / duration_s (the merge: the writers' sum).
    pub bytes_per_s: f64,
    /// Bandwidth over one-second intervals, mqldt's Max/Min/Avg bytes/sec.
    pub interval_bandwidth: IntervalBandwidth,
    /// block size / slowest write: mqldt's "Min bytes/sec (slowest write)".
    pub slowest_write_bytes_per_s: u64,
    /// block size / fastest write: mqldt's "Max bytes/sec (fastest write)".
    pub fastest_write_bytes_per_s: u64,
    /// With `--sync fdatasync|fsync`: the write call alone.
    pub write_call: Option<LatencySummary>,
    /// With `--sync fdatasync|fsync`: the sync call alone.
    pub sync_call: Option<LatencySummary>,
    /// Writes completed in each second of the run (by completion time),
    /// with their bandwidth; seconds without a completed write are absent.
    pub per_second: Vec<DiskSecond>,
    /// The test files written, in order.
    pub files: Vec<String>,
    /// Of those, files that existed before the run (`--reuse`), kept.
    pub files_reused: u64,
}

/// Bandwidth over one-second intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalBandwidth {
    /// How the intervals were cut (`wall-seconds`: each second of the run by
    /// write completion time, a last part of at least 0.5 s scaled to a second).
    pub rule: String,
    pub intervals: u64,
    pub max_bytes_per_s: u64,
    pub min_bytes_per_s: u64,
    pub avg_bytes_per_s: u64,
}

/// One second (or merged span) of a writer's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskSecond {
    pub second: u64,
    pub span_s: u64,
    /// The time of the run this entry covers, seconds: `span_s`, less for
    /// a last partial second (its rates are over this time), more when a
    /// tail under half a second was folded into the last entry.
    #[serde(default)]
    pub covered_s: f64,
    pub writes: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
}

/// A sender/receiver pair of an IPC test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpcPair {
    pub receiver_cpu: usize,
    pub sender_cpu: usize,
    pub receiver_tid: i32,
    pub sender_tid: i32,
    pub interval_us: u64,
    /// Wake-ups sent (samples plus one possibly in flight at the stop).
    pub sent: u64,
    pub timeouts: u64,
    /// Kernel objects the test used (already removed).
    pub resources: Vec<String>,
}

impl TestResult {
    /// A test's result with no samples yet: what ran (`test`, `description`,
    /// `mode`, `config`) and how it ended. The measure functions set the
    /// series, the overall summary and whatever else they have.
    pub fn new(
        test: impl Into<String>,
        description: impl Into<String>,
        mode: impl Into<String>,
        config: TestConfig,
        end_reason: EndReason,
        error: Option<String>,
    ) -> TestResult {
        TestResult {
            test: test.into(),
            description: description.into(),
            mode: mode.into(),
            config,
            end_reason,
            error,
            overall: LatencySummary::default(),
            series: Vec::new(),
            overall_detail: None,
            spikes: None,
            started_s: None,
        }
    }
}

impl TestConfig {
    pub fn ipc(&self) -> Option<&IpcConfig> {
        match &self.detail {
            ConfigDetail::Ipc(c) => Some(c),
            _ => None,
        }
    }

    pub fn ipc_mut(&mut self) -> Option<&mut IpcConfig> {
        match &mut self.detail {
            ConfigDetail::Ipc(c) => Some(c),
            _ => None,
        }
    }

    pub fn timer(&self) -> Option<&TimerConfig> {
        match &self.detail {
            ConfigDetail::Timer(c) => Some(c),
            _ => None,
        }
    }

    pub fn logdisk(&self) -> Option<&LogdiskConfig> {
        match &self.detail {
            ConfigDetail::Logdisk(c) => Some(c),
            _ => None,
        }
    }

    pub fn noise(&self) -> Option<&NoiseConfig> {
        match &self.detail {
            ConfigDetail::Noise(c) => Some(c),
            _ => None,
        }
    }
}

impl Series {
    pub fn ipc_pair(&self) -> Option<&IpcPair> {
        match &self.detail {
            SeriesDetail::IpcPair(p) => Some(p),
            _ => None,
        }
    }

    pub fn ipc_pair_mut(&mut self) -> Option<&mut IpcPair> {
        match &mut self.detail {
            SeriesDetail::IpcPair(p) => Some(p),
            _ => None,
        }
    }

    pub fn timer_thread(&self) -> Option<&TimerThread> {
        match &self.detail {
            SeriesDetail::TimerThread(t) => Some(t),
            _ => None,
        }
    }

    pub fn disk_writer(&self) -> Option<&DiskWriter> {
        match &self.detail {
            SeriesDetail::DiskWriter(w) => Some(w),
            _ => None,
        }
    }

    pub fn noise_cpu(&self) -> Option<&NoiseCpu> {
        match &self.detail {
            SeriesDetail::NoiseCpu(n) => Some(n),
            _ => None,
        }
    }

    /// Timeouts, for the kinds of series that wait with one.
    pub fn timeouts(&self) -> u64 {
        self.ipc_pair().map_or(0, |p| p.timeouts)
    }
}

impl Report {
    /// Pairs whose samples crossed `--max-latency`, as "test label" strings.
    pub fn series_over_limit(&self) -> Vec<String> {
        self.tests
            .iter()
            .flat_map(|t| {
                t.series
                    .iter()
                    .filter(|s| s.above_limit > 0)
                    .map(move |s| format!("{} {}", t.test, s.label))
            })
            .collect()
    }

    /// How verdicts name test `index` (`test_key`: its name, with its block
    /// size or mode where the name repeats in this report).
    pub fn test_key_of(&self, index: usize) -> String {
        let t = &self.tests[index];
        let repeated = self.tests.iter().filter(|o| o.test == t.test).count() > 1;
        let block = t.config.logdisk().map(|c| c.block_size);
        test_key(&t.test, &t.mode, block, repeated)
    }

    /// The `--fail-if` checks that were crossed.
    pub fn thresholds_crossed(&self) -> impl Iterator<Item = &ThresholdCheck> {
        self.thresholds.iter().filter(|c| c.crossed)
    }
}

/// How verdicts and `compare` name a test: its name, or where the name
/// repeats in one report (`ipc --mode both`, logdisk's block sizes) the name
/// with its block size (`logdisk 4 KiB`) or its mode (`mq one-way`).
pub fn test_key(test: &str, mode: &str, block_size: Option<u64>, repeated: bool) -> String {
    match (repeated, block_size) {
        (false, _) => test.to_string(),
        (true, Some(bytes)) => format!("{test} {}", crate::units::format_bytes(bytes)),
        (true, None) => format!("{test} {mode}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_series_line_says_the_reservation_and_what_missed_it() {
        let d = DeadlineSeries {
            test: "timer".into(),
            mode: "user".into(),
            series: "CPU 1".into(),
            runtime_ns: 200_000,
            deadline_ns: 800_000,
            period_ns: 1_000_000,
            missed_deadlines: 1,
            throttled_periods: 3,
        };
        assert_eq!(
            d.line(),
            "deadline: timer CPU 1: runtime 200 us every 1.00 ms due in 800 us: 1 missed deadline, 3 throttled periods (in Overruns)"
        );
    }
}
