//! `--hdr-log FILE`: every window of every series as an HdrHistogram
//! interval log (the format of HdrHistogram's `HistogramLogWriter`, read by
//! its `HistogramLogProcessor`, the Python `hdrhistogram` package and the
//! Rust crate's `IntervalLogIterator`), written as the run goes so that a
//! fleet can merge the distributions of many hosts exactly, window by
//! window (docs/fleet.md, "HdrHistogram interval log").
//!
//! The file: `#[StartTime: ...]` and `#[BaseTime: ...]` (the run's start,
//! seconds since the epoch), the legend line, then one line per window per
//! series: `Tag=TAG,START,LENGTH,MAX,HISTOGRAM` with START in seconds from
//! the base time, LENGTH in seconds, MAX in nanoseconds (the bucket top of
//! the window's largest sample) and the window's histogram (nanoseconds,
//! two significant digits) compressed (V2 + DEFLATE) in base64. The tag is
//! `TEST.MODE.SERIES` (`tag_of`).
//!
//! Written through `rt::outfile`'s rules: a new path is created exclusively
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`) and appended to and flushed every window;
//! an existing regular file (a link's target) is never truncated: the log
//! grows in an exclusive temporary file beside it that replaces it
//! atomically at the end; a device, FIFO, socket or standard stream gets
//! the whole log at the end (it cannot be replaced, and a reader of a FIFO
//! should not see a log that stops in the middle of a failed run).

use crate::rt::outfile::{self, Destination};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The legend line of the standard format (after the header comments).
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// Where the lines go (see the module comment).
enum Sink {
    /// A file this run created: appended to as the run goes.
    Created(File),
    /// An existing regular file: a temporary file beside it, renamed over
    /// it at the end.
    Replacing {
        file: File,
        tmp: PathBuf,
        target: PathBuf,
    },
    /// Anything else: kept here, written whole at the end.
    AtEnd(Vec<u8>),
}

/// An interval log being written.
pub struct HdrLog {
    path: PathBuf,
    sink: Option<Sink>,
    serializer: V2DeflateSerializer,
    base: SystemTime,
}

/// The tag of a series: `TEST.MODE.SERIES`, lower case, every character
/// other than a letter, digit, '-', '_' or '.' left out (a tag holds no
/// space or comma), e.g. `mq.one-way.pair0`, `timer.user.cpu2`,
/// `noise.interruptions.cpu1`, `logdisk.dsync.writer`.
pub fn tag_of(test: &str, mode: &str, series: &str) -> String {
    let part = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    format!("{}.{}.{}", part(test), part(mode), part(series))
}

impl HdrLog {
    /// Starts the log at `path` (checked before measuring, see
    /// `settings::check_output_path`) with the run's start as base time.
    pub fn create(path: &Path, base: SystemTime) -> io::Result<HdrLog> {
        let sink = match outfile::classify(path)? {
            Destination::Replace(p) if std::fs::symlink_metadata(&p).is_err() => {
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o666)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(&p)?;
                Sink::Created(file)
            }
            Destination::Replace(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let (file, tmp) = outfile::create_temp(&dir, 0o666)?;
                Sink::Replacing {
                    file,
                    tmp,
                    target: p,
                }
            }
            _ => Sink::AtEnd(Vec::new()),
        };
        let mut log = HdrLog {
            path: path.to_path_buf(),
            sink: Some(sink),
            serializer: V2DeflateSerializer::new(),
            base,
        };
        let mut header = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "latscope {} per-window latency histograms (ns); tags TEST.MODE.SERIES (docs/fleet.md)",
                env!("CARGO_PKG_VERSION")
            ))
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(&mut header, &mut serializer)?;
        header.extend_from_slice(LEGEND.as_bytes());
        log.append(&header)?;
        Ok(log)
    }

    /// One window of series `tag`: it started at `start` (wall clock) and
    /// lasted `length`; `histogram` holds its samples in nanoseconds.
    pub fn interval(
        &mut self,
        tag: &str,
        start: SystemTime,
        length: Duration,
        histogram: &Histogram<u64>,
    ) -> io::Result<()> {
        let tag = Tag::new(tag)
            .ok_or_else(|| io::Error::other(format!("invalid interval-log tag {tag:?}")))?;
        let since_base = start.duration_since(self.base).unwrap_or(Duration::ZERO);
        let mut line = Vec::new();
        IntervalLogWriterBuilder::new()
            .begin_log_with(&mut line, &mut self.serializer)?
            .write_histogram(histogram, since_base, length, Some(tag))
            .map_err(|e| io::Error::other(e.to_string()))?;
        self.append(&line)
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.sink.as_mut() {
            Some(Sink::Created(file)) | Some(Sink::Replacing { file, .. }) => {
                // One write per window, flushed by the kernel's page cache:
                // a reader (or a crash) sees every whole window so far.
                file.write_all(bytes)
            }
            Some(Sink::AtEnd(buffer)) => {
                buffer.extend_from_slice(bytes);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Ends the log: synced, renamed over an existing file, or written to
    /// its device, FIFO, socket or stream.
    pub fn finish(mut self) -> io::Result<()> {
        match self.sink.take() {
            Some(Sink::Created(file)) => file.sync_all(),
            Some(Sink::Replacing { file, tmp, target }) => {
                let done = file.sync_all().and_then(|_| std::fs::rename(&tmp, &target));
                if done.is_err() {
                    // Only the temporary file this log created.
                    let _ = std::fs::remove_file(&tmp);
                }
                done
            }
            Some(Sink::AtEnd(buffer)) => {
                outfile::write_output_file(&self.path, &mut |out| out.write_all(&buffer))
            }
            None => Ok(()),
        }
    }

    /// The run failed before it could report (a usage or run-time error):
    /// a file this log created goes (it was not there before the run), as
    /// a temporary file does; a file it would have replaced stays as it was.
    pub fn abandon(mut self) {
        use std::os::unix::fs::MetadataExt;
        let sink = self.sink.take();
        if let Some(Sink::Replacing { tmp, .. }) = &sink {
            let _ = std::fs::remove_file(tmp);
        }
        if let Some(Sink::Created(file)) = sink
            && let Ok(Destination::Replace(p)) = outfile::classify(&self.path)
            && let (Ok(ours), Ok(there)) = (file.metadata(), std::fs::symlink_metadata(&p))
            // Still the file this log created, not one put there since.
            && (ours.dev(), ours.ino()) == (there.dev(), there.ino())
        {
            let _ = std::fs::remove_file(p);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for HdrLog {
    /// A log dropped without `finish` (an error path): its temporary file
    /// goes; a file it created keeps the windows written so far.
    fn drop(&mut self) {
        if let Some(Sink::Replacing { tmp, .. }) = self.sink.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::window_histogram::{record, window_histogram};
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn tags_have_no_spaces_or_commas() {
        assert_eq!(tag_of("mq", "one-way", "pair 0"), "mq.one-way.pair0");
        assert_eq!(tag_of("timer", "user", "CPU 12"), "timer.user.cpu12");
        assert_eq!(tag_of("logdisk", "dsync", "qm 1"), "logdisk.dsync.qm1");
        assert!(Tag::new(&tag_of("a b", "c,d", "e\nf")).is_some());
    }

    #[test]
    fn the_crate_reads_back_every_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.hlog");
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut log = HdrLog::create(&path, base).unwrap();
        let mut h = window_histogram();
        for v in [1_000, 2_000, 50_000] {
            record(&mut h, v);
        }
        log.interval(
            "timer.user.cpu0",
            base + Duration::from_secs(1),
            Duration::from_secs(1),
            &h,
        )
        .unwrap();
        record(&mut h, 7_000_000);
        log.interval(
            "mq.one-way.pair0",
            base + Duration::from_secs(2),
            Duration::from_secs(1),
            &h,
        )
        .unwrap();
        // Readable while the run goes on: written before `finish`.
        let text = std::fs::read(&path).unwrap();
        log.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), text);
        let mut windows = Vec::new();
        let mut start = None;
        for entry in IntervalLogIterator::new(&text) {
            match entry.unwrap() {
                LogEntry::StartTime(t) => start = Some(t),
                LogEntry::BaseTime(_) => {}
                LogEntry::Interval(w) => {
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        w.encoded_histogram(),
                    )
                    .unwrap();
                    let back: Histogram<u64> = Deserializer::new()
                        .deserialize(&mut bytes.as_slice())
                        .unwrap();
                    windows.push((
                        w.tag().map(|t| t.as_str().to_string()),
                        w.start_timestamp(),
                        back.len(),
                        w.max(),
                    ));
                }
            }
        }
        assert_eq!(start, Some(Duration::from_secs(1_700_000_000)));
        assert_eq!(windows.len(), 2);
        assert_eq!(windows[0].0.as_deref(), Some("timer.user.cpu0"));
        assert_eq!(windows[0].1, Duration::from_secs(1));
        assert_eq!(windows[0].2, 3);
        assert_eq!(windows[1].2, 4);
        // The max is the bucket top of the largest sample (two digits).
        assert!(
            (7_000_000.0..7_070_000.0).contains(&windows[1].3),
            "{}",
            windows[1].3
        );
    }

    #[test]
    fn an_abandoned_log_removes_only_the_file_it_created() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.hlog");
        HdrLog::create(&new, SystemTime::now()).unwrap().abandon();
        assert!(!new.exists());
        let old = dir.path().join("old.hlog");
        std::fs::write(&old, "kept\n").unwrap();
        HdrLog::create(&old, SystemTime::now()).unwrap().abandon();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "kept\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_existing_file_is_replaced_only_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.hlog");
        std::fs::write(&path, "someone else's\n").unwrap();
        let log = HdrLog::create(&path, SystemTime::now()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's\n");
        log.finish().unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("StartTimestamp")
        );
        // Nothing else left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
