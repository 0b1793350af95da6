//! The live line on a terminal: once a second, samples so far and the worst
//! latency per pair, read from atomics (the measuring threads never print).

use crate::ipc::oneway::{PairLive, Progress};
use crate::units::format_ns;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

pub struct LiveLine {
    label: String,
    enabled: bool,
    printed: bool,
}

impl LiveLine {
    /// Shown only on a terminal (stderr) and when not quiet.
    pub fn new(label: &str, quiet: bool) -> LiveLine {
        LiveLine {
            label: label.to_string(),
            enabled: !quiet && std::io::stderr().is_terminal(),
            printed: false,
        }
    }
}

impl Progress for LiveLine {
    fn tick(&mut self, elapsed: Duration, live: &[PairLive]) {
        if !self.enabled {
            return;
        }
        let samples: u64 = live.iter().map(|l| l.samples.load(Ordering::Relaxed)).sum();
        let worst = live
            .iter()
            .map(|l| l.max_ns.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        let last = live
            .first()
            .map_or(0, |l| l.last_ns.load(Ordering::Relaxed));
        let timeouts: u64 = live
            .iter()
            .map(|l| l.timeouts.load(Ordering::Relaxed))
            .sum();
        let overruns: u64 = live
            .iter()
            .map(|l| l.overruns.load(Ordering::Relaxed))
            .sum();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{:>4}s] {}: {} pairs, {samples} samples, cur {}, max {}, timeouts {timeouts}, overruns {overruns}",
            elapsed.as_secs(),
            self.label,
            live.len(),
            format_ns(last),
            format_ns(worst),
        );
        let _ = err.flush();
        self.printed = true;
    }

    fn finish(&mut self) {
        if self.printed {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.printed = false;
        }
    }
}
