//! The IPC tests' live progress on a terminal, once a second, read from
//! atomics (the measuring threads never print): a status line on stderr, or in
//! classic mode the rt-tests tool's own block, redrawn in place on stdout as
//! the tool does.

use super::status::StatusLine;
use crate::ipc::harness::{PairLive, PairPlan, Progress};
use crate::report::cells::RtTestsFlavor;
use crate::report::classic_rt_tests::{ClassicPair, pair_lines};
use crate::units::{counted, format_ns};
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The modern live display of an IPC test: one status line a second.
pub struct LiveLine {
    label: String,
    line: StatusLine,
}

impl LiveLine {
    /// Shown only on a terminal (stderr) and when not quiet.
    pub fn new(label: &str, quiet: bool) -> LiveLine {
        LiveLine {
            label: label.to_string(),
            line: StatusLine::new(quiet),
        }
    }

    /// The run has no end of its own (no duration, no loop count): the
    /// line says how to stop it.
    pub fn until_stopped(mut self, until_stopped: bool) -> Self {
        self.line.set_until_stopped(until_stopped);
        self
    }
}

impl Progress for LiveLine {
    fn tick(&mut self, elapsed: Duration, live: &[PairLive]) {
        if !self.line.enabled() {
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
        self.line.show(&format!(
            "[{:>4}s] {}: {}, {}, cur {}, max {}, timeouts {timeouts}, overruns {overruns}",
            elapsed.as_secs(),
            self.label,
            counted(live.len() as u64, "pair"),
            counted(samples, "sample"),
            format_ns(last as i64),
            format_ns(worst as i64),
        ));
    }

    fn finish(&mut self) {
        self.line.clear();
    }
}

/// The rt-tests tool's live display (pmqtest, sigwaittest, svsematest): its
/// block of lines, redrawn in place. The final block (printed by the classic
/// exporter) lands on the same lines.
pub struct ClassicLive {
    pairs: Vec<PairPlan>,
    flavor: RtTestsFlavor,
    enabled: bool,
    lines_on_screen: usize,
}

impl ClassicLive {
    /// Shown only when standard output is a terminal and not quiet, so that
    /// captured output holds nothing but the final block.
    pub fn new(pairs: &[PairPlan], flavor: RtTestsFlavor, quiet: bool) -> ClassicLive {
        ClassicLive {
            pairs: pairs.to_vec(),
            flavor,
            enabled: !quiet && std::io::stdout().is_terminal(),
            lines_on_screen: 0,
        }
    }
}

impl Progress for ClassicLive {
    fn tick(&mut self, _elapsed: Duration, live: &[PairLive]) {
        if !self.enabled {
            return;
        }
        let pairs: Vec<ClassicPair> = self
            .pairs
            .iter()
            .zip(live)
            .map(|(plan, l)| {
                let samples = l.samples.load(Ordering::Relaxed);
                ClassicPair {
                    receiver_tid: l.receiver_tid.load(Ordering::Relaxed),
                    sender_tid: l.sender.tid.load(Ordering::Relaxed),
                    priority: plan.priority,
                    receiver_cpu: l.receiver_cpu.load(Ordering::Relaxed),
                    sender_cpu: l.sender.cpu.load(Ordering::Relaxed),
                    interval_us: plan.interval_ns / 1000,
                    timeouts: l.timeouts.load(Ordering::Relaxed),
                    cycles: l.sender.sent.load(Ordering::Relaxed),
                    samples,
                    min_ns: if samples > 0 {
                        l.min_ns.load(Ordering::Relaxed) as i64
                    } else {
                        0
                    },
                    last_ns: l.last_ns.load(Ordering::Relaxed) as i64,
                    avg_ns: l.sum_ns.load(Ordering::Relaxed) as f64 / samples.max(1) as f64,
                    max_ns: l.max_ns.load(Ordering::Relaxed) as i64,
                }
            })
            .collect();
        let mut out = crate::rt::stdio::out();
        if self.lines_on_screen > 0 {
            let _ = write!(out, "\x1b[{}A", self.lines_on_screen);
        }
        let lines = pair_lines(&pairs, self.flavor);
        for line in &lines {
            let _ = writeln!(out, "{line}\x1b[K");
        }
        let _ = out.flush();
        self.lines_on_screen = lines.len();
    }

    fn finish(&mut self) {
        if self.lines_on_screen > 0 {
            let _ = write!(crate::rt::stdio::out(), "\x1b[{}A", self.lines_on_screen);
            self.lines_on_screen = 0;
        }
    }
}
