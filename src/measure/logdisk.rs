//! The log-disk test run and turned into report data: test files, one run
//! per block size, the writers' figures merged as mqldt merges its queue
//! managers. Shared by `latscope logdisk` and `latscope suite`.

use crate::logdisk::SyncMode;
use crate::logdisk::bandwidth::{disk_seconds, merge_intervals, rate, write_bandwidth};
use crate::logdisk::files::{AlignedBuf, FilePlan, FileSet, OpenFlags, PrepareError};
use crate::logdisk::private_dir::PrivateDir;
use crate::logdisk::{self, BlockOutcome, BlockPlan, WriterOutcome};
use crate::pipeline::{
    CommandError, FinishedTest, Run, RunFacts, running_skeleton, series_without_samples,
};
use crate::report::SysInfo;
use crate::report::{
    ConfigDetail, DiskSecond, DiskWriter, EndReason, LogdiskConfig, Series, SeriesDetail,
    TestConfig, TestResult,
};
use crate::rt::dma_latency::DmaLatency;
use crate::rt::signals::stop_signalled;
use crate::settings::UsageError;
use crate::settings::logdisk::LogdiskSettings;
use crate::stats::{LatencyRecorder, LatencySummary};
use crate::units::format_bytes;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

// What a command's live display of a log-disk test implements
// (tests/suite/layers.rs: a command reaches its test through here).
pub use crate::logdisk::LogdiskProgress;

/// What one sample spans, for the report and the suite's overview.
pub fn description(block_size: u64, sync: SyncMode, direct: bool) -> String {
    let call = match sync {
        SyncMode::Dsync | SyncMode::None => "pwrite",
        SyncMode::Fdatasync => "pwrite + fdatasync",
        SyncMode::Fsync => "pwrite + fsync",
    };
    let flags: Vec<&str> = [
        (sync == SyncMode::Dsync).then_some("O_DSYNC"),
        direct.then_some("O_DIRECT"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let flags = if flags.is_empty() {
        "buffered".to_string()
    } else {
        flags.join("|")
    };
    format!(
        "{} sequential log write, {call} ({flags})",
        format_bytes(block_size)
    )
}

pub fn config_of(settings: &LogdiskSettings, block_size: u64) -> TestConfig {
    TestConfig {
        policy: "other".to_string(),
        priority: 0,
        loops: None,
        duration_s: Some(settings.duration.as_secs_f64()),
        max_latency_us: settings.max_latency_us,
        mlockall: false,
        cpu_dma_latency: DmaLatency::NotRequested.describe(),
        detail: ConfigDetail::Logdisk(LogdiskConfig {
            dir: settings.dir.display().to_string(),
            dirs: settings
                .writer_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            file_prefix: settings.file_prefix.clone(),
            block_size,
            block_sizes: settings.block_sizes.clone(),
            file_size: settings.file_size,
            num_files: settings.num_files,
            writers: settings.writers,
            delay_us: settings.delay_us,
            alignment: settings.alignment,
            sync: settings.sync.as_str().to_string(),
            direct: settings.direct,
            reuse: settings.reuse,
            keep: settings.keep,
        }),
    }
}

/// A block size that did not run (the files could not be prepared, or an
/// interrupt came first): reported with no samples.
fn not_run(
    settings: &LogdiskSettings,
    block_size: u64,
    end_reason: EndReason,
    error: Option<String>,
) -> FinishedTest {
    FinishedTest::not_started(
        TestResult::new(
            "logdisk",
            description(block_size, settings.sync, settings.direct),
            settings.sync.as_str(),
            config_of(settings, block_size),
            end_reason,
            error,
        ),
        false,
    )
}

/// Creates the files, runs every block size in turn and removes the files
/// (unless `--keep`). Existing test files (without `--reuse`) and a
/// filesystem refusing O_DIRECT are usage errors, found before any write;
/// a failure while writing ends the run with the results so far. `run`
/// learns of every window as it closes (the live outputs, SIGUSR1
/// snapshots from the windows so far).
pub fn measure(
    settings: &LogdiskSettings,
    run: &Run<'_>,
    progress: &mut dyn LogdiskProgress,
) -> Result<Vec<FinishedTest>, CommandError> {
    let dirs = settings.writer_dirs();
    let file_plan = FilePlan {
        dirs: &dirs,
        prefix: &settings.file_prefix,
        num_files: settings.num_files,
        file_size: settings.file_size,
        reuse: settings.reuse,
    };
    file_plan.check_names().map_err(UsageError)?;
    let flags = OpenFlags {
        direct: settings.direct,
        dsync: settings.sync == SyncMode::Dsync,
    };
    let first = settings.block_sizes[0];
    let mut sets = Vec::with_capacity(dirs.len());
    for (i, dir) in dirs.iter().enumerate() {
        progress.preparing(i, dir, settings.num_files, settings.file_size);
        let prepared = FileSet::prepare(&file_plan, dir, flags, settings.keep, &mut || {
            stop_signalled(Duration::ZERO)
        });
        match prepared {
            Ok(set) => sets.push(set),
            Err(PrepareError::DirectRefused(why)) => return Err(UsageError(why).into()),
            Err(PrepareError::Interrupted) => {
                return Ok(vec![not_run(settings, first, EndReason::Interrupted, None)]);
            }
            Err(PrepareError::Failed(why)) => {
                return Ok(vec![not_run(settings, first, EndReason::Error, Some(why))]);
            }
        }
    }
    let largest = settings.block_sizes.iter().copied().max().unwrap_or(first);
    let buffers = match (0..sets.len())
        .map(|_| AlignedBuf::new(largest, settings.alignment.max(4096)))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(b) => b,
        Err(e) => return Ok(vec![not_run(settings, first, EndReason::Error, Some(e))]),
    };
    let mut finished = Vec::new();
    for &block_size in &settings.block_sizes {
        let plan = BlockPlan {
            sets: &sets,
            buffers: &buffers,
            block_size,
            sync: settings.sync,
            delay: Duration::from_micros(settings.delay_us),
            duration: settings.duration,
            limit_ns: settings
                .max_latency_us
                .map(|us| us.saturating_mul(1000).min(i64::MAX as u64) as i64),
            samples: run
                .prep
                .samples_for("logdisk", "disk_writer", &writer_labels(sets.len())),
        };
        let outcome = run.measuring(Some(skeleton(settings, block_size, &sets)), |hook| {
            logdisk::run_block(&plan, progress, &mut stop_signalled, hook)
        });
        let done = match outcome {
            Ok(outcome) => finished_test(settings, block_size, &sets, outcome),
            Err(e) => not_run(settings, block_size, EndReason::Error, Some(e)),
        };
        progress.block_done(&done.result);
        run.note_finished(&done);
        let ended_early = matches!(
            done.result.end_reason,
            EndReason::Interrupted | EndReason::Error
        );
        finished.push(done);
        if ended_early {
            break;
        }
    }
    // The files are removed here (FileSet's Drop), before anything is printed.
    drop(sets);
    Ok(finished)
}

/// One block size before its first write: a series per writer with no
/// samples, filled from the windows as they close.
fn skeleton(settings: &LogdiskSettings, block_size: u64, sets: &[FileSet]) -> FinishedTest {
    let several = sets.len() > 1;
    let series = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let number = writer_number(several, i);
            let mut detail = merged_writer(&[], &[], &LatencySummary::default(), block_size);
            detail.writer = number;
            detail.dir = set.dir.display().to_string();
            detail.files = set.paths();
            series_without_samples(
                writer_label(several, number),
                Vec::new(),
                (false, "other".to_string(), 0),
                SeriesDetail::DiskWriter(Box::new(detail)),
            )
        })
        .collect();
    running_skeleton(
        not_run(settings, block_size, EndReason::Running, None),
        series,
    )
}

/// A writer's number: 0 alone (as mqldt numbers its thread), 1..N with --qm.
fn writer_number(several: bool, index: usize) -> u64 {
    if several { index as u64 + 1 } else { 0 }
}

/// A writer's series label: `writer` alone, `qm N` with --qm.
fn writer_label(several: bool, number: u64) -> String {
    if several {
        format!("qm {number}")
    } else {
        "writer".to_string()
    }
}

/// The series labels of `writers` writers, as `finished_test` names them
/// (the `--samples` file's series).
fn writer_labels(writers: usize) -> Vec<(String, Option<usize>)> {
    let several = writers > 1;
    (0..writers)
        .map(|i| (writer_label(several, writer_number(several, i)), None))
        .collect()
}

fn disk_writer(
    writer: u64,
    w: &WriterOutcome,
    set: &FileSet,
    block_size: u64,
    per_second: Vec<DiskSecond>,
) -> DiskWriter {
    let e = &w.end;
    let latency = &e.latency;
    DiskWriter {
        writer,
        tid: w.tid,
        dir: set.dir.display().to_string(),
        block_size,
        writes: e.writes,
        bytes: e.writes * block_size,
        duration_s: e.elapsed_ns as f64 / 1e9,
        iops: rate(e.writes, e.elapsed_ns),
        bytes_per_s: rate(e.writes * block_size, e.elapsed_ns),
        interval_bandwidth: e.intervals.clone(),
        slowest_write_bytes_per_s: latency
            .max()
            .map_or(0, |ns| write_bandwidth(block_size, ns)),
        fastest_write_bytes_per_s: write_bandwidth(block_size, latency.summary().min_ns),
        write_call: e.write_call.as_ref().map(LatencyRecorder::summary),
        sync_call: e.sync_call.as_ref().map(LatencyRecorder::summary),
        per_second,
        files: set.paths(),
        files_reused: set.reused(),
    }
}

/// The writers' figures merged as mqldt merges its queue managers: totals
/// and bandwidths summed, extremes over all writers.
fn merged_writer(
    writers: &[DiskWriter],
    outcomes: &[WriterOutcome],
    overall: &LatencySummary,
    block_size: u64,
) -> DiskWriter {
    let merge = |pick: fn(&WriterOutcome) -> Option<&LatencyRecorder>| {
        let mut all: Option<LatencyRecorder> = None;
        for r in outcomes.iter().filter_map(pick) {
            all.get_or_insert_with(LatencyRecorder::new).merge(r);
        }
        all.map(|r| r.summary())
    };
    let mut seconds: BTreeMap<u64, DiskSecond> = BTreeMap::new();
    for s in writers.iter().flat_map(|w| &w.per_second) {
        let e = seconds.entry(s.second).or_insert(DiskSecond {
            second: s.second,
            span_s: s.span_s,
            covered_s: 0.0,
            writes: 0,
            iops: 0.0,
            bytes_per_s: 0.0,
        });
        e.covered_s = e.covered_s.max(s.covered_s);
        e.writes += s.writes;
        e.iops += s.iops;
        e.bytes_per_s += s.bytes_per_s;
    }
    let intervals: Vec<_> = writers.iter().map(|w| &w.interval_bandwidth).collect();
    DiskWriter {
        writer: 0,
        tid: 0,
        dir: String::new(),
        block_size,
        writes: writers.iter().map(|w| w.writes).sum(),
        bytes: writers.iter().map(|w| w.bytes).sum(),
        duration_s: writers.iter().map(|w| w.duration_s).fold(0.0, f64::max),
        iops: writers.iter().map(|w| w.iops).sum(),
        bytes_per_s: writers.iter().map(|w| w.bytes_per_s).sum(),
        interval_bandwidth: merge_intervals(&intervals),
        slowest_write_bytes_per_s: write_bandwidth(block_size, overall.max_ns),
        fastest_write_bytes_per_s: write_bandwidth(block_size, overall.min_ns),
        write_call: merge(|w| w.end.write_call.as_ref()),
        sync_call: merge(|w| w.end.sync_call.as_ref()),
        per_second: seconds.into_values().collect(),
        files: writers.iter().flat_map(|w| w.files.clone()).collect(),
        files_reused: writers.iter().map(|w| w.files_reused).sum(),
    }
}

fn finished_test(
    settings: &LogdiskSettings,
    block_size: u64,
    sets: &[FileSet],
    outcome: BlockOutcome,
) -> FinishedTest {
    let mut overall = LatencyRecorder::new();
    let several = outcome.writers.len() > 1;
    let mut details = Vec::with_capacity(outcome.writers.len());
    let mut series = Vec::with_capacity(outcome.writers.len());
    for (i, (w, set)) in outcome.writers.iter().zip(sets).enumerate() {
        overall.merge(&w.end.latency);
        let number = writer_number(several, i);
        let detail = disk_writer(
            number,
            w,
            set,
            block_size,
            disk_seconds(&w.per_second, block_size, w.end.elapsed_ns),
        );
        details.push(detail.clone());
        series.push(Series {
            label: writer_label(several, number),
            cpus: Vec::new(),
            pinned: false,
            policy: "other".to_string(),
            priority: 0,
            overruns: 0,
            above_limit: w.end.above_limit,
            latency: w.end.latency.summary(),
            per_second: w.per_second.clone(),
            per_second_dropped: w.per_second_dropped,
            detail: SeriesDetail::DiskWriter(Box::new(detail)),
        });
    }
    let overall_summary = overall.summary();
    let merged = if several {
        merged_writer(&details, &outcome.writers, &overall_summary, block_size)
    } else {
        details
            .pop()
            .unwrap_or_else(|| merged_writer(&[], &[], &overall_summary, block_size))
    };
    let elapsed = Duration::from_secs_f64(merged.duration_s);
    FinishedTest {
        result: TestResult {
            overall: overall_summary,
            series,
            overall_detail: Some(SeriesDetail::DiskWriter(Box::new(merged))),
            ..TestResult::new(
                "logdisk",
                description(block_size, settings.sync, settings.direct),
                settings.sync.as_str(),
                config_of(settings, block_size),
                outcome.end_reason,
                outcome.error,
            )
        },
        started: outcome.started,
        ended: outcome.ended,
        elapsed,
        facts: RunFacts {
            elapsed,
            max_ns: overall.max(),
            scheduling_free: true,
            ..RunFacts::default()
        },
        deadline: Vec::new(),
    }
}

/// What the figures of this run cannot mean.
pub fn warnings_of(settings: &LogdiskSettings, sysinfo: &SysInfo) -> Vec<String> {
    let mut w = Vec::new();
    if !settings.direct {
        w.push("files opened without O_DIRECT (--no-direct): data passes through the page cache, unlike an MQ log".to_string());
    }
    if settings.sync == SyncMode::None {
        w.push(
            "--sync none: writes are not made durable; these are not a log's figures".to_string(),
        );
    }
    if let Some(vm) = sysinfo.problem("platform.virtualization") {
        w.push(format!(
            "running in a virtual machine ({}): the host's handling of the virtual disk decides what a durable write costs",
            vm.value
        ));
    }
    w
}

/// The suite's log-disk settings: 4 KiB O_DSYNC|O_DIRECT writes through two
/// 1 MiB files in `dir`, for `duration`.
pub fn suite_settings(
    dir: &Path,
    duration: Duration,
    direct: bool,
    max_latency_us: Option<u64>,
) -> LogdiskSettings {
    LogdiskSettings {
        dir: dir.to_path_buf(),
        file_prefix: "log".to_string(),
        block_sizes: vec![crate::units::values::DEFAULT_BLOCK_SIZE],
        file_size: 1 << 20,
        num_files: 2,
        duration,
        writers: 1,
        delay_us: 0,
        alignment: crate::units::values::DEFAULT_ALIGNMENT,
        sync: SyncMode::Dsync,
        direct,
        reuse: false,
        keep: false,
        csv_file: None,
        outputs: crate::settings::Outputs::default(),
        quiet: true,
        fail_if: Vec::new(),
        loads: Vec::new(),
        max_latency_us,
        // The suite's actions are the suite's run's (its Plan).
        actions: Default::default(),
    }
}

/// The suite's log-disk test in a private directory: direct I/O first,
/// buffered when the filesystem refuses it. `Err` says why it was skipped.
pub fn measure_for_suite(
    duration: Duration,
    max_latency_us: Option<u64>,
    run: &Run<'_>,
    progress: &mut dyn LogdiskProgress,
) -> Result<Vec<FinishedTest>, String> {
    let dir = PrivateDir::create()?;
    let first = measure(
        &suite_settings(&dir.path, duration, true, max_latency_us),
        run,
        progress,
    );
    let result = match first {
        Err(CommandError::Usage(_)) => measure(
            &suite_settings(&dir.path, duration, false, max_latency_us),
            run,
            progress,
        ),
        other => other,
    };
    let tests = result.map_err(|e| e.to_string())?;
    if let [only] = tests.as_slice()
        && only.result.series.is_empty()
        && let Some(e) = &only.result.error
    {
        return Err(e.clone());
    }
    Ok(tests)
}

/// The suite's log-disk row when it cannot run here (the current
/// directory refuses the private directory: an ordinary user in `/`, a
/// read-only filesystem): a `skipped` row with the reason and what to do,
/// so that the table, the JSON and every other output keep the row.
pub fn skipped_in_suite(
    duration: Duration,
    max_latency_us: Option<u64>,
    why: &str,
) -> FinishedTest {
    let settings = suite_settings(Path::new("."), duration, true, max_latency_us);
    not_run(
        &settings,
        settings.block_sizes[0],
        EndReason::Skipped,
        Some(format!(
            "{why} (run the suite from a directory you can write, e.g. cd /tmp; or measure a disk with latscope logdisk --dir DIR)"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_the_calls_and_flags() {
        assert_eq!(
            description(4096, SyncMode::Dsync, true),
            "4 KiB sequential log write, pwrite (O_DSYNC|O_DIRECT)"
        );
        assert_eq!(
            description(65536, SyncMode::Fdatasync, false),
            "64 KiB sequential log write, pwrite + fdatasync (buffered)"
        );
        assert_eq!(
            description(4096, SyncMode::None, true),
            "4 KiB sequential log write, pwrite (O_DIRECT)"
        );
    }
}
