//! THE writer loop: one synchronous write of the block size at a time, at
//! explicit offsets (`pwrite`), sequentially through each file and on to the
//! next, wrapping after the last (a circular log); one write in flight.
//!
//! `pwrite` rather than `write` + `lseek` (mqldt): the offset is the loop's
//! own state, there is no seek call between writes and nothing depends on
//! the descriptor's file position. The system calls a write makes are the
//! same otherwise (one `pwrite`, plus `fdatasync`/`fsync` when asked).
//!
//! Nothing allocates in the loop: the recorders, the interval rule and the
//! per-second window ring are built before it, errors format their message
//! only when they end the loop.

use super::SyncMode;
use super::bandwidth::IntervalRule;
use super::files::{AlignedBuf, FileSet, pwrite_exact};
use crate::report::IntervalBandwidth;
use crate::rt::clock::monotonic_ns;
use crate::rt::os_error_text;
use crate::stats::LatencyRecorder;
use crate::stats::window::{WindowRing, WindowWriter};
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// What a writer and the monitor share.
#[derive(Default)]
pub struct WriterShared {
    pub tid: AtomicI32,
    /// Writes completed so far (the live IOPS).
    pub writes: AtomicU64,
    /// Writes slower than `--max-latency` so far.
    pub above_limit: AtomicU64,
    pub error: Mutex<Option<String>>,
    pub windows: WindowRing,
    pub finished: AtomicBool,
}

impl WriterShared {
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }

    fn fail(&self, message: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(message);
        }
    }
}

/// One writer's work for one block size.
pub struct WriterJob<'a> {
    pub files: &'a FileSet,
    pub buffer: &'a AlignedBuf,
    pub block_size: u64,
    pub sync: SyncMode,
    pub delay: Duration,
    pub duration_ns: u64,
    /// Writes slower than this are counted (`above_limit`).
    pub limit_ns: Option<i64>,
    /// `--samples`: this writer's sample ring.
    pub samples: Option<std::sync::Arc<crate::stats::samples::SampleRing>>,
}

/// The recorders a writer fills, built before it starts.
pub struct Recorders {
    /// One durable write: the write call, plus the sync call if separate.
    pub latency: LatencyRecorder,
    pub write_call: Option<LatencyRecorder>,
    pub sync_call: Option<LatencyRecorder>,
    pub intervals: Box<dyn IntervalRule>,
}

impl Recorders {
    pub fn new(sync: SyncMode) -> Recorders {
        let separate = sync.separate_sync();
        Recorders {
            latency: LatencyRecorder::new(),
            write_call: separate.then(LatencyRecorder::new),
            sync_call: separate.then(LatencyRecorder::new),
            intervals: super::bandwidth::interval_rule(),
        }
    }
}

/// What a writer hands back.
pub struct WriterEnd {
    pub latency: LatencyRecorder,
    pub write_call: Option<LatencyRecorder>,
    pub sync_call: Option<LatencyRecorder>,
    pub intervals: IntervalBandwidth,
    pub writes: u64,
    /// Writes slower than the job's `limit_ns`.
    pub above_limit: u64,
    /// From the writer's start to the end of its last write (or its stop).
    pub elapsed_ns: u64,
}

fn sync_call(fd: i32, sync: SyncMode) -> std::io::Result<()> {
    // SAFETY: plain syscalls on a valid descriptor.
    let rc = match sync {
        SyncMode::Fdatasync => unsafe { libc::fdatasync(fd) },
        SyncMode::Fsync => unsafe { libc::fsync(fd) },
        SyncMode::Dsync | SyncMode::None => 0,
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Longest single sleep of the think time (`--delay`): a stop is seen
/// within it.
const THINK_SLICE_NS: u64 = 10_000_000;

/// Waits for `go` (all writers start together), then writes until the
/// duration has passed, `stop` is set, or a write fails.
pub fn run(
    job: &WriterJob<'_>,
    shared: &WriterShared,
    go: &AtomicBool,
    stop: &AtomicBool,
    mut rec: Recorders,
) -> WriterEnd {
    shared
        .tid
        .store(crate::rt::sched::current_tid(), Ordering::Relaxed);
    while !go.load(Ordering::Acquire) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = monotonic_ns();
    let deadline = start.saturating_add(job.duration_ns);
    let mut windows = WindowWriter::new(&shared.windows, start).with_samples(job.samples.clone());
    let files = &job.files.files;
    let file_size = job.files.file_size;
    let separate = job.sync.separate_sync();
    let (mut index, mut offset) = (0usize, 0u64);
    let mut writes = 0u64;
    let mut above_limit = 0u64;
    let mut end = start;
    while !stop.load(Ordering::Relaxed) {
        if offset + job.block_size > file_size {
            offset = 0;
            index = (index + 1) % files.len();
        }
        let file = &files[index];
        let t0 = monotonic_ns();
        let written = pwrite_exact(&file.fd, job.buffer, job.block_size, offset);
        let t1 = monotonic_ns();
        let wrote = written.is_ok();
        let synced = match written {
            Ok(()) if separate => sync_call(file.fd.as_raw_fd(), job.sync),
            other => other,
        };
        let t2 = if separate { monotonic_ns() } else { t1 };
        if let Err(e) = synced {
            let what = if wrote { job.sync.as_str() } else { "write" };
            shared.fail(format!(
                "{what} of {} bytes at offset {offset} of {}: {}",
                job.block_size,
                file.path.display(),
                os_error_text(&e)
            ));
            end = t2;
            break;
        }
        let latency = (t2 - t0) as i64;
        rec.latency.record(latency);
        if job.limit_ns.is_some_and(|limit| latency > limit) {
            above_limit += 1;
        }
        if let (Some(w), Some(s)) = (rec.write_call.as_mut(), rec.sync_call.as_mut()) {
            w.record((t1 - t0) as i64);
            s.record((t2 - t1) as i64);
        }
        windows.record(t2, latency);
        rec.intervals.on_write(t2 - start, job.block_size);
        writes += 1;
        shared.writes.store(writes, Ordering::Relaxed);
        shared.above_limit.store(above_limit, Ordering::Relaxed);
        offset += job.block_size;
        end = t2;
        if t2 >= deadline {
            break;
        }
        if !job.delay.is_zero() {
            // The think time (up to a minute) ends at the end of the run
            // and, in slices, on a stop.
            let resume = t2.saturating_add(crate::rt::clock::duration_ns(job.delay));
            let slept =
                crate::rt::clock::sleep_until_or_stop(stop, resume.min(deadline), THINK_SLICE_NS);
            end = monotonic_ns();
            if !slept || end >= deadline {
                break;
            }
        }
    }
    windows.flush();
    let elapsed_ns = end - start;
    WriterEnd {
        intervals: rec.intervals.finish(elapsed_ns),
        latency: rec.latency,
        write_call: rec.write_call,
        sync_call: rec.sync_call,
        writes,
        above_limit,
        elapsed_ns,
    }
}
