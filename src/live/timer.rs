//! The timer test's live output: Xenomai's RTD lines (classic format) or a
//! status line (modern format).

use super::status::StatusLine;
use crate::report::classic_xenomai::{self, HeaderCadence, LoopLine};
use crate::settings::timer::TimerSettings;
use crate::timer::figure::LoopStats;
use crate::timer::{ThreadShared, TimerProgress};
use crate::units::format_ns;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Classic live output: one RTD line per loop of the (single) sampling
/// thread, with the RTT/RTH header pair every `-l` lines, as Xenomai prints.
pub struct RtdLines {
    enabled: bool,
    to_stderr: bool,
    cadence: HeaderCadence,
    mode: usize,
    period_us: u64,
    priority: i32,
    loop_ns: u64,
    best: i64,
    worst: i64,
}

impl RtdLines {
    /// Xenomai's start: its header (and `-q`'s notice) printed, then the
    /// RTD lines as the loops come. With `--json -` (or `--csv -`,
    /// `--markdown -`) that output owns standard output: the live lines go
    /// to standard error then.
    pub fn start(settings: &TimerSettings) -> RtdLines {
        let live_to_stderr = settings.outputs.to_stdout();
        let header =
            classic_xenomai::startup_header(settings.period_us, settings.figure.test_mode());
        if live_to_stderr {
            eprint!("{header}");
        } else {
            let _ = write!(crate::rt::stdio::out(), "{header}");
        }
        if settings.quiet {
            eprint!(
                "{}",
                classic_xenomai::quiet_notice(settings.duration.map_or(0, |d| d.as_secs()))
            );
        }
        let _ = crate::rt::stdio::out().flush();
        RtdLines::new(settings, live_to_stderr)
    }

    pub fn new(settings: &TimerSettings, to_stderr: bool) -> RtdLines {
        let period_ns = settings.period_us * 1000;
        RtdLines {
            enabled: !settings.quiet,
            to_stderr,
            cadence: HeaderCadence::new(settings.data_lines),
            mode: settings.figure.test_mode(),
            period_us: settings.period_us,
            priority: settings.priority,
            loop_ns: (1_000_000_000 / period_ns).max(1) * period_ns,
            best: i64::MAX,
            worst: i64::MIN,
        }
    }
}

impl TimerProgress for RtdLines {
    fn loops(&mut self, _thread: usize, loops: &[LoopStats], shared: &ThreadShared) {
        let mut text = String::new();
        for l in loops.iter().filter(|l| !l.partial) {
            self.best = self.best.min(l.min_ns);
            self.worst = self.worst.max(l.max_ns);
            if !self.enabled {
                continue;
            }
            if self.cadence.due() {
                let elapsed_s = (l.index + 1) * self.loop_ns / 1_000_000_000;
                text.push_str(&classic_xenomai::rtt_line(
                    elapsed_s,
                    self.mode,
                    self.period_us,
                    self.priority,
                ));
                text.push_str(classic_xenomai::RTH_LINE);
            }
            text.push_str(&classic_xenomai::rtd_line(&LoopLine {
                min_ns: l.min_ns,
                avg_ns: l.avg_ns(),
                max_ns: l.max_ns,
                overruns: shared.overruns.load(Ordering::Relaxed),
                msw: shared.msw.load(Ordering::Relaxed),
                best_ns: self.best,
                worst_ns: self.worst,
            }));
        }
        if !text.is_empty() {
            let mut out: Box<dyn Write> = if self.to_stderr {
                Box::new(std::io::stderr().lock())
            } else {
                Box::new(crate::rt::stdio::out())
            };
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    fn tick(&mut self, _elapsed: Duration, _threads: &[Arc<ThreadShared>]) {}

    fn finish(&mut self) {}
}

/// What the progress line keeps per thread.
#[derive(Clone, Copy)]
struct ThreadSoFar {
    samples: u64,
    sum_ns: i128,
    min_ns: i64,
    max_ns: i64,
}

/// Modern live output: once a second on a terminal, one status line on
/// stderr with min/avg/p99/max/overruns of every thread.
pub struct ProgressLine {
    line: StatusLine,
    threads: Vec<ThreadSoFar>,
    last_second: u64,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            line: StatusLine::new(quiet),
            threads: Vec::new(),
            last_second: 0,
        }
    }

    /// The run has no end of its own (no duration, no loop count): the
    /// line says how to stop it.
    pub fn until_stopped(mut self, until_stopped: bool) -> Self {
        self.line.set_until_stopped(until_stopped);
        self
    }
}

impl TimerProgress for ProgressLine {
    fn loops(&mut self, thread: usize, loops: &[LoopStats], _shared: &ThreadShared) {
        if self.threads.len() <= thread {
            self.threads.resize(
                thread + 1,
                ThreadSoFar {
                    samples: 0,
                    sum_ns: 0,
                    min_ns: i64::MAX,
                    max_ns: i64::MIN,
                },
            );
        }
        let t = &mut self.threads[thread];
        for l in loops {
            t.samples += l.samples;
            t.sum_ns += i128::from(l.sum_ns);
            t.min_ns = t.min_ns.min(l.min_ns);
            t.max_ns = t.max_ns.max(l.max_ns);
        }
    }

    fn tick(&mut self, elapsed: Duration, threads: &[Arc<ThreadShared>]) {
        let second = elapsed.as_secs();
        if !self.line.enabled() || second == self.last_second {
            return;
        }
        self.last_second = second;
        let mut parts = Vec::new();
        for (i, shared) in threads.iter().enumerate() {
            let Some(t) = self.threads.get(i).filter(|t| t.samples > 0) else {
                parts.push(format!("#{i} warming up"));
                continue;
            };
            parts.push(format!(
                "#{i} min {} avg {} p99 {} max {} ovr {}",
                format_ns(t.min_ns),
                format_ns((t.sum_ns / i128::from(t.samples)) as i64),
                format_ns(shared.live.percentile(99.0).unwrap_or(0)),
                format_ns(t.max_ns),
                shared.overruns.load(Ordering::Relaxed)
            ));
        }
        self.line
            .show(&format!("[{second:>4}s] timer: {}", parts.join(" | ")));
    }

    fn finish(&mut self) {
        self.line.clear();
    }
}
