//! `--samples FILE`: every raw sample of every series, written by one
//! normal-priority drain thread, never by a measuring thread.
//!
//! The measuring loops push each sample into their series' ring
//! (`stats::samples`, through the test's plan); the drain thread here empties
//! every ring each `DRAIN_EVERY`, encodes the samples (`format`) and writes
//! them in batches through a bounded buffer. It runs at SCHED_OTHER, pinned
//! off the measured CPUs when another CPU exists (as the spike trace's
//! reader), so its writes never take a measured CPU.
//!
//! The file follows the rules of every output (rt::outfile): a new path or a
//! regular file is written to an exclusive temporary file with an
//! unpredictable name beside it and renamed over the path at the end (on
//! Ctrl-C too: the run stops through its normal end), so the path never holds
//! half a file; a device or FIFO is written in place. Past `--samples-limit`
//! the drain thread writes no more samples, says so in one line on standard
//! error, and counts per series what it did not write; the trailer (counts
//! per series) is always written, so a reader tells a whole file from a cut
//! one.

pub mod format;

use crate::report::{Report, SamplesFile, SamplesSeries};
use crate::rt::clock::{monotonic_ns, read_clock};
use crate::rt::outfile::{self, Destination};
use crate::rt::sched;
use crate::stats::samples::{RING_SAMPLES, Sample, SampleRing, TestSamples};
use format::{Header, SeriesCounts, SeriesInfo};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the drain thread empties the rings.
pub const DRAIN_EVERY: Duration = Duration::from_millis(20);
/// Samples per samples record (64 KiB of samples).
const BATCH_SAMPLES: usize = 4096;
/// The drain thread's buffer is written out once it holds this much.
const FLUSH_BYTES: usize = 256 * 1024;

/// A series' registration: what the series record says, and its ring
/// until the drain thread takes it.
struct Registered {
    info: SeriesInfo,
    ring: Option<Arc<SampleRing>>,
}

/// The open samples file and its drain thread (`Preparation` holds it).
pub struct SampleFile {
    path: PathBuf,
    limit_bytes: u64,
    /// The temporary file renamed over `path` at the end (None: in place).
    staged: Option<PathBuf>,
    series: Arc<Mutex<Vec<Registered>>>,
    tests: AtomicU32,
    stop: Option<mpsc::Sender<()>>,
    drain: Option<JoinHandle<DrainEnd>>,
}

/// What the drain thread leaves: counts per series (in registration order).
struct DrainEnd {
    counts: Vec<SeriesCounts>,
    bytes: u64,
    limit_reached: bool,
    error: Option<String>,
}

impl SampleFile {
    /// Opens `path` (see the module comment), writes the header and starts
    /// the drain thread, kept off `measured_cpus` when another CPU exists.
    pub fn start(path: &Path, limit_bytes: u64, measured_cpus: &[usize]) -> Result<Self, String> {
        let shown = path.display();
        let fail =
            |e: std::io::Error| format!("--samples {shown}: {}", crate::rt::os_error_text(&e));
        let (file, staged) = match outfile::classify(path).map_err(fail)? {
            Destination::Replace(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let (file, tmp) = outfile::create_temp(&dir, 0o600).map_err(fail)?;
                (file, Some((tmp, p)))
            }
            Destination::InPlace(p) => (outfile::open_in_place(&p).map_err(fail)?, None),
            Destination::Stdio(_) | Destination::Socket(_) => {
                return Err(format!(
                    "--samples {shown}: the samples go to a file, a device or a FIFO, not to latscope's own output or a socket"
                ));
            }
        };
        let header = Header {
            start_realtime_ns: read_clock(libc::CLOCK_REALTIME),
            start_monotonic_ns: monotonic_ns(),
        };
        let series: Arc<Mutex<Vec<Registered>>> = Arc::default();
        let (stop, stopped) = mpsc::channel();
        let mut drain = Drain {
            file,
            buf: Vec::with_capacity(FLUSH_BYTES + format::samples_record_bytes(BATCH_SAMPLES)),
            header,
            limit_bytes,
            bytes: 0,
            tracked: Vec::new(),
            registered: series.clone(),
            limit_reached: false,
            error: None,
            scratch: Vec::with_capacity(RING_SAMPLES),
            keep_off: measured_cpus.to_vec(),
            shown: shown.to_string(),
        };
        drain.buf.extend_from_slice(&format::header_bytes(&header));
        drain.bytes = format::HEADER_BYTES as u64;
        let (staged, path) = match staged {
            Some((tmp, p)) => (Some(tmp), p),
            None => (None, path.to_path_buf()),
        };
        let handle = std::thread::Builder::new()
            .name("latscope-samples".into())
            .stack_size(256 * 1024)
            .spawn(move || drain.run(&stopped));
        let handle = match handle {
            Ok(h) => h,
            Err(e) => {
                if let Some(tmp) = &staged {
                    // Only the temporary file this run created.
                    let _ = std::fs::remove_file(tmp);
                }
                return Err(format!("--samples: cannot start the drain thread: {e}"));
            }
        };
        Ok(SampleFile {
            path,
            limit_bytes,
            staged,
            series,
            tests: AtomicU32::new(0),
            stop: Some(stop),
            drain: Some(handle),
        })
    }

    /// A test begins: one ring per series (`series`: label and CPU, in the
    /// order of the test's series in the report), allocated and written
    /// here, before any measuring loop runs. `test` is the report's test
    /// name (`mq`, `timer`, ...), `kind` its series kind (`ipc_pair`, ...).
    pub fn begin_test(
        &self,
        test: &str,
        kind: &str,
        series: &[(String, Option<usize>)],
    ) -> TestSamples {
        let number = self.tests.fetch_add(1, Ordering::Relaxed);
        let mut rings = Vec::with_capacity(series.len());
        if let Ok(mut registered) = self.series.lock() {
            for (index, (label, cpu)) in series.iter().enumerate() {
                let ring = Arc::new(SampleRing::with_capacity(RING_SAMPLES));
                let id = registered.len() as u32;
                registered.push(Registered {
                    ring: Some(ring.clone()),
                    info: SeriesInfo {
                        id,
                        test: number,
                        index: index as u32,
                        cpu: *cpu,
                        test_name: test.to_string(),
                        kind: kind.to_string(),
                        label: label.clone(),
                    },
                });
                rings.push(ring);
            }
        }
        TestSamples::new(rings)
    }

    /// Stops the drain thread after its last pass (every measuring loop has
    /// ended), completes the file and names it, and records it in `report`
    /// with a warning for lost or unwritten samples. A failed write (a full
    /// disk, /dev/full) is the Err: one line, and the run exits 1 as for
    /// `--prom` and `--hdr-log`; the cut file was not named (`close`).
    pub fn finish_into(mut self, report: &mut Report) -> Result<(), String> {
        let staged = self.staged.is_some();
        let end = self.close(true);
        let registered: Vec<SeriesInfo> = self
            .series
            .lock()
            .map(|s| s.iter().map(|r| r.info.clone()).collect())
            .unwrap_or_default();
        let mut cursor = 0;
        let mut test_of: Vec<(u32, Option<usize>)> = Vec::new();
        let mut series = Vec::with_capacity(registered.len());
        for (info, counts) in registered.iter().zip(&end.counts) {
            // The report's test of each test begun, in order: a test that
            // never began (its files could not be made) is skipped.
            let test = match test_of.iter().find(|(n, _)| *n == info.test) {
                Some((_, t)) => *t,
                None => {
                    let found = report.tests[cursor.min(report.tests.len())..]
                        .iter()
                        .position(|t| t.test == info.test_name)
                        .map(|i| i + cursor);
                    if let Some(i) = found {
                        cursor = i + 1;
                    }
                    test_of.push((info.test, found));
                    found
                }
            };
            series.push(SamplesSeries {
                id: info.id,
                test,
                series: info.index as usize,
                label: info.label.clone(),
                cpu: info.cpu,
                written: counts.written,
                dropped: counts.dropped,
                not_written: counts.not_written,
            });
        }
        let record = SamplesFile {
            path: self.path.display().to_string(),
            limit_bytes: self.limit_bytes,
            bytes: end.bytes,
            limit_reached: end.limit_reached,
            error: end.error.clone(),
            series,
        };
        for warning in warnings_of(&record) {
            if !report.warnings.contains(&warning) {
                report.warnings.push(warning);
            }
        }
        let failed = record.error.as_ref().map(|e| {
            let not_written: u64 = record.series.iter().map(|s| s.not_written).sum();
            format!(
                "--samples {}: {e}; {not_written} samples were not written{}",
                crate::units::shown(&record.path),
                if staged {
                    ", and no file was left under that name"
                } else {
                    ""
                }
            )
        });
        report.samples_file = Some(record);
        failed.map_or(Ok(()), Err)
    }

    /// Stops and joins the drain thread, renames the staged file; without
    /// `keep_empty`, a staged file of no series (the run ended before its
    /// first test, e.g. on bad usage) is removed instead: nothing is left
    /// under the path for a run that measured nothing.
    fn close(&mut self, keep_empty: bool) -> DrainEnd {
        drop(self.stop.take());
        let mut end = match self.drain.take().map(JoinHandle::join) {
            Some(Ok(end)) => end,
            _ => DrainEnd {
                counts: Vec::new(),
                bytes: 0,
                limit_reached: false,
                error: Some("the drain thread ended abnormally".into()),
            },
        };
        let empty = self.series.lock().map_or(true, |s| s.is_empty());
        // A file whose writing failed is cut (no trailer): never named as
        // if it were the run's samples.
        let failed = end.error.is_some();
        if let Some(tmp) = self.staged.take_if(|_| failed || (!keep_empty && empty)) {
            // Only the temporary file this run created.
            let _ = std::fs::remove_file(&tmp);
        }
        if let Some(tmp) = self.staged.take()
            && let Err(e) = std::fs::rename(&tmp, &self.path)
        {
            // Only the temporary file this run created.
            let _ = std::fs::remove_file(&tmp);
            end.error.get_or_insert(format!(
                "cannot name the file: {}",
                crate::rt::os_error_text(&e)
            ));
        }
        end
    }
}

impl Drop for SampleFile {
    /// An early end of the run (an error before the report): the file is
    /// still completed and named (removed if it holds no series), never left
    /// under its temporary name.
    fn drop(&mut self) {
        if self.drain.is_some() {
            let _ = self.close(false);
        }
    }
}

/// The report warnings of a samples file: lost samples, the limit (an
/// error is the run's error line instead: `finish_into`).
pub fn warnings_of(f: &SamplesFile) -> Vec<String> {
    let mut out = Vec::new();
    let dropped: u64 = f.series.iter().map(|s| s.dropped).sum();
    if dropped > 0 {
        out.push(format!(
            "--samples: {dropped} samples were lost before reaching {} (the drain thread fell behind; per series in samples_file.series)",
            f.path
        ));
    }
    let not_written: u64 = f.series.iter().map(|s| s.not_written).sum();
    if f.error.is_none() && f.limit_reached {
        out.push(format!(
            "--samples {} stopped at --samples-limit {}: {not_written} later samples were counted, not written",
            f.path,
            crate::units::format_bytes(f.limit_bytes)
        ));
    }
    out
}

/// One series as the drain thread follows it.
struct Tracked {
    id: u32,
    /// None once its test ended and the ring was emptied a last time: the
    /// 1 MiB goes back (a `suite` of many tests holds only the running
    /// test's rings).
    ring: Option<Arc<SampleRing>>,
    /// The ring's drop count, kept when the ring goes.
    dropped: u64,
    written: u64,
    not_written: u64,
}

/// The drain thread's state.
struct Drain {
    file: File,
    buf: Vec<u8>,
    header: Header,
    limit_bytes: u64,
    /// Bytes written or buffered so far.
    bytes: u64,
    tracked: Vec<Tracked>,
    registered: Arc<Mutex<Vec<Registered>>>,
    limit_reached: bool,
    error: Option<String>,
    scratch: Vec<Sample>,
    keep_off: Vec<usize>,
    shown: String,
}

impl Drain {
    fn run(mut self, stop: &mpsc::Receiver<()>) -> DrainEnd {
        // Normal priority (inherited from the main thread), off the
        // measured CPUs when another one is allowed.
        let free: Vec<usize> = sched::allowed_cpus_of_process()
            .into_iter()
            .filter(|c| !self.keep_off.contains(c))
            .collect();
        if !free.is_empty() {
            let _ = sched::pin_current_thread_to(&free);
        }
        // SCHED_OTHER whatever the thread that started it runs at.
        let _ = sched::set_current_thread_policy(sched::Policy::Other, 0);
        loop {
            // A message or the sender dropped: the last pass, then the end.
            let last = !matches!(
                stop.recv_timeout(DRAIN_EVERY),
                Err(RecvTimeoutError::Timeout)
            );
            self.pass();
            if last {
                break;
            }
        }
        let counts: Vec<SeriesCounts> = self
            .tracked
            .iter()
            .map(|t| SeriesCounts {
                id: t.id,
                written: t.written,
                dropped: t.ring.as_ref().map_or(t.dropped, |r| r.dropped()),
                not_written: t.not_written,
            })
            .collect();
        if self.error.is_none() {
            format::push_trailer(&mut self.buf, &counts);
            self.bytes += format::trailer_bytes(counts.len()) as u64;
            self.write_out();
            if let Err(e) = self.file.sync_all()
                && e.raw_os_error() != Some(libc::EINVAL)
            {
                self.error = Some(crate::rt::os_error_text(&e));
            }
        }
        DrainEnd {
            counts,
            bytes: self.bytes,
            limit_reached: self.limit_reached,
            error: self.error,
        }
    }

    /// New series' records, then every ring emptied into the file.
    fn pass(&mut self) {
        let new: Vec<(SeriesInfo, Option<Arc<SampleRing>>)> = match self.registered.lock() {
            Ok(mut r) => {
                let from = self.tracked.len().min(r.len());
                r[from..]
                    .iter_mut()
                    .map(|r| (r.info.clone(), r.ring.take()))
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        for (info, ring) in new {
            // Written past the limit too: the trailer names every series.
            let before = self.buf.len();
            format::push_series(&mut self.buf, &info);
            self.bytes += (self.buf.len() - before) as u64;
            self.tracked.push(Tracked {
                id: info.id,
                ring,
                dropped: 0,
                written: 0,
                not_written: 0,
            });
        }
        for i in 0..self.tracked.len() {
            let Some(ring) = self.tracked[i].ring.clone() else {
                continue;
            };
            // Only this pass's clone and the drain's own: the measuring
            // side let go, nothing more will come after this last drain.
            let last = Arc::strong_count(&ring) == 2;
            if last {
                // Pairs with the release of the producer's last Arc drop.
                std::sync::atomic::fence(Ordering::Acquire);
            }
            self.scratch.clear();
            let scratch = &mut self.scratch;
            ring.drain(|s| scratch.push(s));
            self.emit(i);
            if last {
                self.tracked[i].dropped = ring.dropped();
                self.tracked[i].ring = None;
            }
        }
        self.write_out();
    }

    /// The scratch samples of series `i` into the buffer, as far as the
    /// limit allows.
    fn emit(&mut self, i: usize) {
        let scratch = std::mem::take(&mut self.scratch);
        for chunk in scratch.chunks(BATCH_SAMPLES) {
            let room = self.limit_bytes.saturating_sub(self.bytes) as usize;
            let fit = if self.error.is_some() {
                0
            } else {
                (room.saturating_sub(format::samples_record_bytes(0)) / format::SAMPLE_BYTES)
                    .min(chunk.len())
            };
            let t = &mut self.tracked[i];
            if fit > 0 {
                format::push_samples(
                    &mut self.buf,
                    t.id,
                    self.header.start_monotonic_ns,
                    chunk[..fit].iter().map(|s| (s.at_ns, s.latency_ns)),
                );
                self.bytes += format::samples_record_bytes(fit) as u64;
                t.written += fit as u64;
            }
            if fit < chunk.len() {
                t.not_written += (chunk.len() - fit) as u64;
                if !self.limit_reached && self.error.is_none() {
                    self.limit_reached = true;
                    crate::rt::stdio::note_line(&format!(
                        "latscope: --samples-limit {} reached: {} holds the samples so far, later ones are counted in the report, not written",
                        crate::units::format_bytes(self.limit_bytes),
                        self.shown
                    ));
                }
            }
            if self.buf.len() >= FLUSH_BYTES {
                self.write_out();
            }
        }
        self.scratch = scratch;
    }

    /// The buffer into the file; after a failed write nothing more is
    /// written (the samples are counted as not written).
    fn write_out(&mut self) {
        if self.error.is_none()
            && !self.buf.is_empty()
            && let Err(e) = self.file.write_all(&self.buf)
        {
            self.error = Some(format!("writing failed: {}", crate::rt::os_error_text(&e)));
        }
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::values::{DEFAULT_SAMPLES_LIMIT_BYTES, MIN_SAMPLES_LIMIT_BYTES};
    use format::{Item, Reader};

    fn read(path: &Path) -> (Vec<Item>, bool) {
        let mut r = Reader::open(std::io::BufReader::new(File::open(path).unwrap())).unwrap();
        let mut items = Vec::new();
        while let Some(i) = r.next_item().unwrap() {
            items.push(i);
        }
        (items, r.truncated())
    }

    fn count(items: &[Item], id: u32) -> usize {
        items
            .iter()
            .map(|i| match i {
                Item::Samples { id: x, samples } if *x == id => samples.len(),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn samples_of_every_series_reach_the_file_with_a_trailer() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = d.path().join("s.bin");
        let file = SampleFile::start(&path, DEFAULT_SAMPLES_LIMIT_BYTES, &[]).unwrap();
        let t = file.begin_test(
            "mq",
            "ipc_pair",
            &[("a".into(), Some(0)), ("b".into(), None)],
        );
        let (a, b) = (t.ring(0).unwrap(), t.ring(1).unwrap());
        for i in 0..10_000u64 {
            a.push(monotonic_ns(), i as i64);
            if i % 2 == 0 {
                b.push(monotonic_ns(), -(i as i64));
            }
        }
        // The path appears only once the file is complete.
        assert!(!path.exists());
        let mut report = crate::report::testdata::sample_report();
        file.finish_into(&mut report).unwrap();
        let (items, truncated) = read(&path);
        assert!(!truncated);
        assert_eq!((count(&items, 0), count(&items, 1)), (10_000, 5_000));
        let rec = report.samples_file.unwrap();
        assert_eq!(rec.series[0].written, 10_000);
        assert_eq!(rec.series[1].written, 5_000);
        assert_eq!(rec.bytes, std::fs::metadata(&path).unwrap().len());
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn every_sample_is_written_or_counted_as_dropped() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = d.path().join("s.bin");
        let file = SampleFile::start(&path, DEFAULT_SAMPLES_LIMIT_BYTES, &[]).unwrap();
        let t = file.begin_test("mq", "ipc_pair", &[("pair 0".into(), None)]);
        let ring = t.ring(0).unwrap();
        // Three rings' worth as fast as possible: whether the drain thread
        // keeps up or not, each sample is in the file or counted.
        let n = 3 * RING_SAMPLES as u64;
        for i in 0..n {
            ring.push(i, 1);
        }
        drop((ring, t));
        let mut report = crate::report::testdata::sample_report();
        file.finish_into(&mut report).unwrap();
        let rec = report.samples_file.unwrap();
        let s = &rec.series[0];
        assert_eq!(s.written + s.dropped, n);
        assert_eq!(s.not_written, 0);
        let (items, truncated) = read(&path);
        assert!(!truncated);
        assert_eq!(count(&items, 0) as u64, s.written);
        let warned = report.warnings.iter().any(|w| w.contains("were lost"));
        assert_eq!(warned, s.dropped > 0);
    }

    #[test]
    fn an_early_end_names_a_file_with_series_and_leaves_none_without() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = d.path().join("s.bin");
        drop(SampleFile::start(&path, DEFAULT_SAMPLES_LIMIT_BYTES, &[]).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        let file = SampleFile::start(&path, DEFAULT_SAMPLES_LIMIT_BYTES, &[]).unwrap();
        let t = file.begin_test("noise", "noise_cpu", &[("CPU 1".into(), Some(1))]);
        t.ring(0).unwrap().push(monotonic_ns(), 5);
        drop(t);
        drop(file);
        let (items, truncated) = read(&path);
        assert!(!truncated);
        assert_eq!(count(&items, 0), 1);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_limit_stops_the_samples_and_counts_the_rest() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = d.path().join("s.bin");
        let file = SampleFile::start(&path, MIN_SAMPLES_LIMIT_BYTES, &[]).unwrap();
        let t = file.begin_test("timer", "timer_thread", &[("CPU 0".into(), Some(0))]);
        let ring = t.ring(0).unwrap();
        for i in 0..1000 {
            ring.push(i, i as i64);
        }
        let mut report = crate::report::testdata::sample_report();
        file.finish_into(&mut report).unwrap();
        let rec = report.samples_file.unwrap();
        let s = &rec.series[0];
        assert!(rec.limit_reached);
        assert_eq!(s.written + s.not_written, 1000);
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(
            len <= MIN_SAMPLES_LIMIT_BYTES + format::trailer_bytes(1) as u64,
            "{len}"
        );
        let (items, truncated) = read(&path);
        assert!(!truncated);
        assert_eq!(count(&items, 0) as u64, s.written);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("--samples-limit 4 KiB"))
        );
    }
}
