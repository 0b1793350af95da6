//! Log-disk write latency and bandwidth (IBM's mqldt): synchronous,
//! sequential, one-at-a-time writes through a circular set of preallocated
//! files, the way a recovery log is written.
//!
//! `files` creates (or reuses) each writer's files and removes them again;
//! `writer` is the write loop; this controller runs one block size: it
//! starts one thread per writer (`--qm`), releases them together, and
//! monitors every 100 ms (live progress, per-second windows, Ctrl-C/SIGTERM,
//! a failed write) until every writer has stopped.

pub mod bandwidth;
pub mod files;
pub mod private_dir;
pub mod writer;

use crate::report::EndReason;
use crate::rt::signals::take_snapshot_request;
use crate::stats::window::{LiveCounters, SecondStats, WindowHook, WindowSeries};
use files::{AlignedBuf, FileSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use writer::{Recorders, WriterEnd, WriterJob, WriterShared};

/// How each write is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// `O_DSYNC`: the write call returns once the data is durable.
    Dsync,
    /// A plain write, then `fdatasync`.
    Fdatasync,
    /// A plain write, then `fsync`.
    Fsync,
    /// Neither.
    None,
}

impl SyncMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncMode::Dsync => "dsync",
            SyncMode::Fdatasync => "fdatasync",
            SyncMode::Fsync => "fsync",
            SyncMode::None => "none",
        }
    }

    /// Whether a separate sync call follows each write (timed on its own).
    pub fn separate_sync(self) -> bool {
        matches!(self, SyncMode::Fdatasync | SyncMode::Fsync)
    }
}

/// Stack of a writer thread: it only loops over system calls.
const WRITER_STACK: usize = 256 * 1024;
/// How often the monitor looks at the writers.
const MONITOR_PERIOD: Duration = Duration::from_millis(100);

/// One block size of a run, for every writer.
pub struct BlockPlan<'a> {
    /// One file set per writer.
    pub sets: &'a [FileSet],
    /// One buffer per writer, at least `block_size` long.
    pub buffers: &'a [AlignedBuf],
    pub block_size: u64,
    pub sync: SyncMode,
    pub delay: Duration,
    pub duration: Duration,
    /// Writes slower than this are counted as above the limit.
    pub limit_ns: Option<i64>,
    /// `--samples`: each writer's sample ring (by writer index).
    pub samples: Option<crate::stats::samples::TestSamples>,
}

/// What the live output sees while a block size runs.
pub trait LogdiskProgress {
    /// Writer `writer`'s files in `dir` are about to be created and written
    /// out (mqldt prints "Creating files...").
    fn preparing(&mut self, _writer: usize, _dir: &std::path::Path, _files: u64, _size: u64) {}
    /// About every 100 ms: the writes completed so far by all writers.
    fn tick(&mut self, block_size: u64, elapsed: Duration, duration: Duration, writes: u64);
    /// The block size is done (clear a progress line).
    fn finish(&mut self);
    /// The block size's results (mqldt prints them before the next one).
    fn block_done(&mut self, _result: &crate::report::TestResult) {}
}

/// No live output.
pub struct Silent;

impl LogdiskProgress for Silent {
    fn tick(&mut self, _: u64, _: Duration, _: Duration, _: u64) {}
    fn finish(&mut self) {}
}

/// The results of one writer for one block size.
pub struct WriterOutcome {
    pub tid: i32,
    pub end: WriterEnd,
    pub per_second: Vec<SecondStats>,
    pub per_second_dropped: u64,
}

/// The results of one block size.
pub struct BlockOutcome {
    pub writers: Vec<WriterOutcome>,
    pub end_reason: EndReason,
    pub error: Option<String>,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
}

/// Runs one block size on every writer; `wait_for_stop` waits up to its
/// timeout for Ctrl-C/SIGTERM and says whether one came; `hook` learns of
/// every window drained and serves the snapshots (SIGUSR1).
pub fn run_block(
    plan: &BlockPlan<'_>,
    progress: &mut dyn LogdiskProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> Result<BlockOutcome, String> {
    let shared: Vec<Arc<WriterShared>> = plan
        .sets
        .iter()
        .map(|_| Arc::new(WriterShared::default()))
        .collect();
    let go = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let duration_ns = crate::rt::clock::duration_ns(plan.duration);
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(plan.sets.len());
        for (i, set) in plan.sets.iter().enumerate() {
            // Built here, before the writer starts: nothing allocates in its loop.
            let recorders = Recorders::new(plan.sync);
            let job = WriterJob {
                files: set,
                buffer: &plan.buffers[i],
                block_size: plan.block_size,
                sync: plan.sync,
                delay: plan.delay,
                duration_ns,
                limit_ns: plan.limit_ns,
                samples: crate::stats::samples::ring_of(&plan.samples, i),
            };
            let s = shared[i].clone();
            let (go, stop) = (&go, &stop);
            let handle = std::thread::Builder::new()
                .name(format!("logdisk-{i}"))
                .stack_size(WRITER_STACK)
                .spawn_scoped(scope, move || {
                    let end = writer::run(&job, &s, go, stop, recorders);
                    s.finished.store(true, Ordering::Release);
                    end
                });
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(format!("could not start a writer thread: {e}"));
                }
            }
        }
        let started = SystemTime::now();
        let clock = Instant::now();
        go.store(true, Ordering::Release);
        let (per_second, mut end_reason) =
            monitor(plan, &shared, clock, progress, wait_for_stop, hook);
        stop.store(true, Ordering::Relaxed);
        let mut ends = Vec::with_capacity(handles.len());
        for h in handles {
            ends.push(
                h.join()
                    .map_err(|_| "a writer thread panicked".to_string())?,
            );
        }
        progress.finish();
        let error = shared.iter().find_map(|s| s.error());
        if error.is_some() {
            end_reason = EndReason::Error;
        }
        let writers = ends
            .into_iter()
            .zip(shared.iter().zip(per_second))
            .enumerate()
            .map(|(i, (end, (s, mut windows)))| {
                s.windows
                    .drain_into_with(&mut windows, &mut |w, h| hook.window(i, w, h));
                // A last window shorter than half a second is folded into the
                // one before it: a rate over a few microseconds (the write that
                // completes just after the deadline) says nothing about the
                // disk. mqldt's interval rule drops such a tail for the same
                // reason; here its writes stay counted.
                crate::stats::window::fold_short_tail(&mut windows, end.elapsed_ns);
                WriterOutcome {
                    tid: s.tid.load(Ordering::Relaxed),
                    end,
                    per_second: windows.into_windows(),
                    per_second_dropped: s.windows.dropped(),
                }
            })
            .collect();
        Ok(BlockOutcome {
            writers,
            end_reason,
            error,
            started,
            ended: SystemTime::now(),
            elapsed: clock.elapsed(),
        })
    })
}

/// The monitor of a running block size, every `MONITOR_PERIOD`: the
/// writers' windows drained (and handed to `hook`), the progress, a
/// snapshot when asked; until the writers finish, one fails or a stop
/// signal comes. Returns each writer's windows so far and why it ended.
fn monitor(
    plan: &BlockPlan<'_>,
    shared: &[Arc<WriterShared>],
    clock: Instant,
    progress: &mut dyn LogdiskProgress,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
    hook: &mut dyn WindowHook,
) -> (Vec<WindowSeries>, EndReason) {
    let mut per_second: Vec<WindowSeries> =
        shared.iter().map(|_| WindowSeries::default()).collect();
    let mut end_reason = EndReason::DurationElapsed;
    loop {
        let signalled = wait_for_stop(MONITOR_PERIOD);
        for (i, (s, out)) in shared.iter().zip(per_second.iter_mut()).enumerate() {
            s.windows
                .drain_into_with(out, &mut |w, h| hook.window(i, w, h));
            hook.counters(
                i,
                LiveCounters {
                    above_limit: s.above_limit.load(Ordering::Relaxed),
                    ..LiveCounters::default()
                },
            );
        }
        hook.drained();
        if !signalled && take_snapshot_request() {
            hook.snapshot();
        }
        let writes = shared
            .iter()
            .map(|s| s.writes.load(Ordering::Relaxed))
            .sum();
        progress.tick(plan.block_size, clock.elapsed(), plan.duration, writes);
        if signalled {
            end_reason = EndReason::Interrupted;
            break;
        }
        if shared.iter().any(|s| s.error().is_some()) {
            end_reason = EndReason::Error;
            break;
        }
        if shared.iter().all(|s| s.finished.load(Ordering::Acquire)) {
            break;
        }
    }
    (per_second, end_reason)
}

#[cfg(test)]
mod tests {
    use super::files::{FilePlan, OpenFlags};
    use super::*;
    use std::path::PathBuf;

    fn set_in(dir: &std::path::Path, num_files: u64, file_size: u64) -> FileSet {
        let dirs = [dir.to_path_buf()];
        let plan = FilePlan {
            dirs: &dirs,
            prefix: "w",
            num_files,
            file_size,
            reuse: false,
        };
        let flags = OpenFlags {
            direct: false,
            dsync: false,
        };
        FileSet::prepare(&plan, dir, flags, false, &mut || false).unwrap()
    }

    /// 4 KiB writes on one writer's `set`, for `duration`.
    fn run_one(set: FileSet, sync: SyncMode, duration: Duration) -> BlockOutcome {
        let sets = [set];
        let buffers = [AlignedBuf::new(4096, 4096).unwrap()];
        let plan = BlockPlan {
            sets: &sets,
            buffers: &buffers,
            block_size: 4096,
            sync,
            delay: Duration::ZERO,
            duration,
            limit_ns: None,
            samples: None,
        };
        run_block(
            &plan,
            &mut Silent,
            &mut |t| {
                std::thread::sleep(t);
                false
            },
            &mut crate::stats::window::NoWindowHook,
        )
        .unwrap()
    }

    #[test]
    fn writes_go_round_the_files_and_the_windows_add_up() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let set = set_in(d.path(), 2, 16384);
        let out = run_one(set, SyncMode::Fdatasync, Duration::from_millis(300));
        assert_eq!(out.end_reason, EndReason::DurationElapsed);
        let w = &out.writers[0];
        assert!(w.end.writes > 8, "{} writes", w.end.writes);
        assert_eq!(w.end.latency.count(), w.end.writes);
        assert_eq!(w.end.sync_call.as_ref().unwrap().count(), w.end.writes);
        let in_windows: u64 = w.per_second.iter().map(|s| s.samples).sum();
        assert_eq!(in_windows, w.end.writes);
        assert!(w.end.elapsed_ns >= 300_000_000);
    }

    #[test]
    fn a_failing_write_ends_the_run_with_the_file_named() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let mut set = set_in(d.path(), 2, 8192);
        // The second file's descriptor becomes read-only: writes to it fail.
        let path: PathBuf = set.files[1].path.clone();
        set.files[1].fd = std::fs::File::open(&path).unwrap().into();
        let out = run_one(set, SyncMode::None, Duration::from_secs(5));
        assert_eq!(out.end_reason, EndReason::Error);
        let e = out.error.unwrap();
        assert!(e.contains("w.0001") && e.contains("offset 0"), "{e}");
        // The two writes to the first file are results so far.
        assert_eq!(out.writers[0].end.writes, 2);
    }
}
