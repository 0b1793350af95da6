//! `latscope logdisk` (and the log-disk part of `suite`): settings to test
//! files, one run per block size, the finished runs as report data, the
//! live progress line and the CSV file.

use super::ipc_test::{FinishedTest, Preparation, build_report};
use super::validity::RunFacts;
use super::{CommandError, deliver};
use crate::cli::{LogdiskArgs, OutputFormat};
use crate::logdisk::bandwidth::{disk_seconds, merge_intervals, rate, write_bandwidth};
use crate::logdisk::files::{AlignedBuf, FilePlan, FileSet, OpenFlags, PrepareError};
use crate::logdisk::{self, BlockOutcome, BlockPlan, LogdiskProgress, WriterOutcome};
use crate::report::Exporter;
use crate::report::classic_mqldt;
use crate::report::console::ModernConsole;
use crate::report::csv_logdisk::LogdiskCsv;
use crate::report::json::LatscopeJson;
use crate::report::{
    ConfigDetail, DiskSecond, DiskWriter, EndReason, LogdiskConfig, Report, Series, SeriesDetail,
    TestConfig, TestResult,
};
use crate::rt::dma_latency::DmaLatency;
use crate::rt::signals::wait_for_stop_signal;
use crate::rt::sysinfo::SysInfo;
use crate::settings::logdisk::{LogdiskSettings, SyncMode, format_size};
use crate::settings::{JsonTarget, UsageError};
use crate::stats::{LatencyRecorder, LatencySummary};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

/// `latscope logdisk`.
pub fn run(args: &LogdiskArgs) -> Result<i32, CommandError> {
    let settings = LogdiskSettings::from_args(args)?;
    let classic = args.format == OutputFormat::Classic;
    let sysinfo = SysInfo::collect();
    // No memory locking or idle-state hold for disk writes; the loads and
    // the kernel-log follower as for every test.
    let mut prep = Preparation::apply(
        false,
        false,
        false,
        &settings.loads,
        &crate::rt::sched::allowed_cpus(),
    )
    .map_err(CommandError::Runtime)?;
    let mut progress: Box<dyn LogdiskProgress> = if classic {
        let _ = write!(
            crate::rt::stdio::out(),
            "{}",
            classic_options(args, &settings)
        );
        Box::new(ClassicProgress::new(&settings))
    } else {
        Box::new(ProgressLine::new(settings.quiet))
    };
    let tests = measure(&settings, progress.as_mut(), &mut |timeout| {
        wait_for_stop_signal(timeout).is_some()
    })?;
    let warnings = warnings_of(&settings, &sysinfo);
    let mut report = build_report(tests, sysinfo, warnings);
    prep.finish(&mut report);
    super::judge(&mut report, &settings.fail_if);
    let csv_result = settings.csv_file.as_deref().map(|path| {
        if classic {
            write_classic_csv(path, &report)
        } else {
            write_csv(path, &report, settings.writers > 1)
        }
    });
    // In classic format each block size's results were printed as it ended.
    let console: &dyn Exporter = if classic { &Nothing } else { &ModernConsole };
    deliver(&report, console, classic, &LatscopeJson, &settings.outputs)
        .map_err(CommandError::Runtime)?;
    if let Some(Err(e)) = csv_result {
        return Err(CommandError::Runtime(e));
    }
    Ok(report.exit_code)
}

/// mqldt's options block for these settings (`--bsize` as typed).
fn classic_options(args: &LogdiskArgs, settings: &LogdiskSettings) -> String {
    let bsize = args.bsize.as_deref().unwrap_or("4K");
    let dir = settings.dir.display().to_string();
    let csv = settings.csv_file.as_ref().map(|p| p.display().to_string());
    let mut text = classic_mqldt::options_block(&classic_mqldt::OptionsBlock {
        bsize,
        dir: &dir,
        file_prefix: &settings.file_prefix,
        num_files: settings.num_files,
        file_size: settings.file_size,
        duration_s: settings.duration.as_secs(),
        alignment: args.alignment.is_some().then_some(settings.alignment),
        background_threads: 0,
        csv_file: csv.as_deref(),
        qm: settings.writers as u32,
        delay_us: settings.delay_us,
    });
    if settings.writers > 1 {
        text.push_str(&classic_mqldt::qm_simulation_line(settings.writers as u32));
    }
    text
}

/// An exporter that writes nothing (the output was printed live).
struct Nothing;

impl Exporter for Nothing {
    fn write(&self, _: &Report, _: &mut dyn Write) -> std::io::Result<()> {
        Ok(())
    }
}

/// mqldt's exact CSV: truncated for one writer, appended with `--qm`.
fn write_classic_csv(path: &Path, report: &Report) -> Result<(), String> {
    let (mode, text) = classic_mqldt::csv_of(report);
    let append = mode == classic_mqldt::CsvMode::Append;
    // In place (through a symlink, onto a device) by rt::outfile's rule.
    crate::rt::outfile::write_in_place(path, append, 0o600, &mut |out, _| {
        out.write_all(text.as_bytes())
    })
    .map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// Classic live output, as mqldt: `Creating files...` per writer, the
/// seconds counter on stderr, then each block size's results.
struct ClassicProgress {
    writers: u64,
    duration_s: u64,
    grouping: classic_mqldt::Grouping,
    shown_seconds: Option<u64>,
}

impl ClassicProgress {
    fn new(settings: &LogdiskSettings) -> ClassicProgress {
        ClassicProgress {
            writers: settings.writers,
            duration_s: settings.duration.as_secs(),
            grouping: classic_mqldt::grouping_from_env(),
            shown_seconds: None,
        }
    }
}

impl LogdiskProgress for ClassicProgress {
    fn preparing(&mut self, writer: usize, _dir: &Path, _files: u64, _size: u64) {
        let thread = if self.writers > 1 {
            writer as u32 + 1
        } else {
            0
        };
        let _ = write!(
            crate::rt::stdio::out(),
            "{}",
            classic_mqldt::creating_files_line(thread)
        );
        let _ = crate::rt::stdio::out().flush();
    }

    fn tick(&mut self, block_size: u64, elapsed: Duration, _duration: Duration, _writes: u64) {
        let mut err = std::io::stderr().lock();
        if self.shown_seconds.is_none() {
            let _ = err.write_all(classic_mqldt::progress_start(block_size).as_bytes());
            self.shown_seconds = Some(0);
        }
        // The last count, duration/duration, goes to stdout at the end.
        let seconds = elapsed.as_secs();
        if seconds < self.duration_s && self.shown_seconds.is_some_and(|shown| seconds > shown) {
            let _ =
                err.write_all(classic_mqldt::progress_tick(seconds, self.duration_s).as_bytes());
            self.shown_seconds = Some(seconds);
        }
        let _ = err.flush();
    }

    fn finish(&mut self) {
        self.shown_seconds = None;
    }

    fn block_done(&mut self, result: &TestResult) {
        let mut out = crate::rt::stdio::out();
        let _ = out.write_all(classic_mqldt::progress_end(self.duration_s).as_bytes());
        let _ = out.write_all(classic_mqldt::block_results(result, self.grouping).as_bytes());
        let _ = out.flush();
    }
}

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
        format_size(block_size)
    )
}

fn config_of(settings: &LogdiskSettings, block_size: u64) -> TestConfig {
    TestConfig {
        policy: "other".to_string(),
        priority: 0,
        loops: None,
        duration_s: Some(settings.duration.as_secs_f64()),
        max_latency_us: None,
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
        TestResult {
            test: "logdisk".to_string(),
            description: description(block_size, settings.sync, settings.direct),
            mode: settings.sync.as_str().to_string(),
            config: config_of(settings, block_size),
            end_reason,
            error,
            overall: LatencySummary::default(),
            series: Vec::new(),
            overall_detail: None,
            spikes: None,
        },
        false,
    )
}

/// Creates the files, runs every block size in turn and removes the files
/// (unless `--keep`). Existing test files (without `--reuse`) and a
/// filesystem refusing O_DIRECT are usage errors, found before any write;
/// a failure while writing ends the run with the results so far.
pub fn measure(
    settings: &LogdiskSettings,
    progress: &mut dyn LogdiskProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
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
            wait_for_stop(Duration::ZERO)
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
        };
        let done = match logdisk::run_block(&plan, progress, wait_for_stop) {
            Ok(outcome) => finished_test(settings, block_size, &sets, outcome),
            Err(e) => not_run(settings, block_size, EndReason::Error, Some(e)),
        };
        progress.block_done(&done.result);
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
        let number = if several { i as u64 + 1 } else { 0 };
        let detail = disk_writer(
            number,
            w,
            set,
            block_size,
            disk_seconds(&w.per_second, block_size, w.end.elapsed_ns),
        );
        details.push(detail.clone());
        series.push(Series {
            label: if several {
                format!("qm {number}")
            } else {
                "writer".to_string()
            },
            cpus: Vec::new(),
            pinned: false,
            policy: "other".to_string(),
            priority: 0,
            overruns: 0,
            above_limit: 0,
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
            test: "logdisk".to_string(),
            description: description(block_size, settings.sync, settings.direct),
            mode: settings.sync.as_str().to_string(),
            config: config_of(settings, block_size),
            end_reason: outcome.end_reason,
            error: outcome.error,
            overall: overall_summary,
            series,
            overall_detail: Some(SeriesDetail::DiskWriter(Box::new(merged))),
            spikes: None,
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

/// Writes the CSV: one writer replaces the file (as mqldt truncates it);
/// several append to it (as mqldt does with --qm), the header only when the
/// file is new or empty.
pub fn write_csv(path: &Path, report: &Report, append: bool) -> Result<(), String> {
    if !append {
        return super::write_output(
            &JsonTarget::File(path.to_path_buf()),
            &LogdiskCsv { header: true },
            report,
        );
    }
    use crate::report::Exporter;
    crate::rt::outfile::write_in_place(path, true, 0o600, &mut |out, empty| {
        LogdiskCsv { header: empty }.write(report, out)
    })
    .map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// Modern live output: on a terminal, once a second, one status line on
/// stderr with the block size, the seconds elapsed and the live IOPS.
pub struct ProgressLine {
    enabled: bool,
    last: Duration,
    last_writes: u64,
    printed: bool,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            last: Duration::ZERO,
            last_writes: 0,
            printed: false,
        }
    }
}

impl LogdiskProgress for ProgressLine {
    fn tick(&mut self, block_size: u64, elapsed: Duration, duration: Duration, writes: u64) {
        if !self.enabled || elapsed < self.last + Duration::from_secs(1) {
            return;
        }
        let span = elapsed - self.last;
        let iops = (writes - self.last_writes) as f64 / span.as_secs_f64();
        self.last = elapsed;
        self.last_writes = writes;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{:>4}s/{}s] logdisk {}: {iops:.0} IOPS, {:.1} MB/s",
            elapsed.as_secs(),
            duration.as_secs(),
            format_size(block_size),
            iops * block_size as f64 / 1e6
        );
        let _ = err.flush();
        self.printed = true;
    }

    fn finish(&mut self) {
        if self.printed {
            super::progress::clear_status_line();
        }
        self.last = Duration::ZERO;
        self.last_writes = 0;
        self.printed = false;
    }
}

/// A private directory for the suite's files on the filesystem of the
/// current directory (`mkdtemp`: a new name, mode 0700), removed on drop.
pub struct PrivateDir {
    pub path: std::path::PathBuf,
    /// Its name in the ownership registry, which holds it while it exists.
    registered: Option<String>,
}

impl PrivateDir {
    pub fn create() -> Result<PrivateDir, String> {
        let mut template = b"./.latscope-logdisk-XXXXXX\0".to_vec();
        // SAFETY: a NUL-terminated, writable template.
        let p = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if p.is_null() {
            return Err(format!(
                "cannot create a private directory in the current directory: {}",
                crate::logdisk::files::os_error_text(&std::io::Error::last_os_error())
            ));
        }
        template.pop();
        let path = std::path::PathBuf::from(String::from_utf8_lossy(&template).into_owned());
        let registered = crate::rt::registry::absolute(&path)
            .and_then(|p| crate::rt::registry::path_identity(&p));
        if let Some(identity) = &registered {
            crate::rt::registry::record(crate::rt::registry::Kind::Dir, identity);
        }
        Ok(PrivateDir { path, registered })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
        if let Some(identity) = &self.registered {
            crate::rt::registry::forget(crate::rt::registry::Kind::Dir, &[identity]);
        }
    }
}

/// The suite's log-disk settings: 4 KiB O_DSYNC|O_DIRECT writes through two
/// 1 MiB files in `dir`, for `duration`.
pub fn suite_settings(dir: &Path, duration: Duration, direct: bool) -> LogdiskSettings {
    LogdiskSettings {
        dir: dir.to_path_buf(),
        file_prefix: "log".to_string(),
        block_sizes: vec![crate::settings::logdisk::DEFAULT_BLOCK_SIZE],
        file_size: 1 << 20,
        num_files: 2,
        duration,
        writers: 1,
        delay_us: 0,
        alignment: crate::settings::logdisk::DEFAULT_ALIGNMENT,
        sync: SyncMode::Dsync,
        direct,
        reuse: false,
        keep: false,
        csv_file: None,
        outputs: crate::settings::Outputs::default(),
        quiet: true,
        fail_if: Vec::new(),
        loads: Vec::new(),
    }
}

/// The suite's log-disk test in a private directory: direct I/O first,
/// buffered when the filesystem refuses it. `Err` says why it was skipped.
pub fn measure_for_suite(
    duration: Duration,
    progress: &mut dyn LogdiskProgress,
) -> Result<Vec<FinishedTest>, String> {
    let dir = PrivateDir::create()?;
    let mut wait = |timeout| wait_for_stop_signal(timeout).is_some();
    let first = measure(
        &suite_settings(&dir.path, duration, true),
        progress,
        &mut wait,
    );
    let result = match first {
        Err(CommandError::Usage(_)) => measure(
            &suite_settings(&dir.path, duration, false),
            progress,
            &mut wait,
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
