//! The log-disk test's live output: mqldt's lines (classic format) or a
//! status line (modern format).

use super::status::StatusLine;
use crate::logdisk::LogdiskProgress;
use crate::report::TestResult;
use crate::report::classic_mqldt;
use crate::settings::logdisk::LogdiskSettings;
use crate::units::format_bytes;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Classic live output, as mqldt: `Creating files...` per writer, the
/// seconds counter on stderr, then each block size's results.
pub struct ClassicProgress {
    writers: u64,
    duration_s: u64,
    grouping: classic_mqldt::Grouping,
    shown_seconds: Option<u64>,
}

impl ClassicProgress {
    pub fn new(settings: &LogdiskSettings) -> ClassicProgress {
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

/// Modern live output: on a terminal, once a second, one status line on
/// stderr with the block size, the seconds elapsed and the live IOPS.
pub struct ProgressLine {
    line: StatusLine,
    last: Duration,
    last_writes: u64,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            line: StatusLine::new(quiet),
            last: Duration::ZERO,
            last_writes: 0,
        }
    }
}

impl LogdiskProgress for ProgressLine {
    fn tick(&mut self, block_size: u64, elapsed: Duration, duration: Duration, writes: u64) {
        if !self.line.enabled() || elapsed < self.last + Duration::from_secs(1) {
            return;
        }
        let span = elapsed - self.last;
        let iops = (writes - self.last_writes) as f64 / span.as_secs_f64();
        self.last = elapsed;
        self.last_writes = writes;
        self.line.show(&format!(
            "[{:>4}s/{}s] logdisk {}: {iops:.0} IOPS, {:.1} MB/s",
            elapsed.as_secs(),
            duration.as_secs(),
            format_bytes(block_size),
            iops * block_size as f64 / 1e6
        ));
    }

    fn finish(&mut self) {
        self.line.clear();
        self.last = Duration::ZERO;
        self.last_writes = 0;
    }
}
