//! cyclictest's running display, read from the threads' live atomics
//! (timer::cyclic::CyclicLive) by the main thread every 10 ms: the
//! `policy:` line, an empty line and one `T:` line per thread, then (before
//! the next redraw) the cursor moved up over them, exactly as cyclictest
//! writes it; a CI parser finds the last block by those escape sequences.
//! With `-v` the values of every cycle instead (`-o` keeps the largest of
//! each group), with `-q` nothing until the end.

use crate::report::classic_cyclictest::{self as classic, CyclicThread};
use crate::timer::cyclic::{CyclicShared, VALBUF_SIZE};
use std::sync::atomic::Ordering;

/// What the display shows of one thread besides its live figures.
#[derive(Debug, Clone)]
pub struct ThreadLabel {
    pub priority: i32,
    pub interval_us: i64,
}

/// `-v`'s reading position in one thread's ring, and `-o`'s reduction.
#[derive(Debug, Clone, Default)]
struct Reader {
    cycles_read: u64,
    reduce: u64,
    red_max: i64,
    cycle_of_max: u64,
}

/// The running display of one run.
pub struct CyclicDisplay {
    labels: Vec<ThreadLabel>,
    policy: &'static str,
    some_other: bool,
    quiet: bool,
    verbose: bool,
    nsecs: bool,
    smi: bool,
    oscope: u64,
    readers: Vec<Reader>,
}

impl CyclicDisplay {
    /// `policy` is the policy asked for, `some_other` whether some thread
    /// runs as SCHED_OTHER (cyclictest then writes `policy/other`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        labels: Vec<ThreadLabel>,
        policy: &'static str,
        some_other: bool,
        quiet: bool,
        verbose: bool,
        nsecs: bool,
        smi: bool,
        oscope: u64,
    ) -> CyclicDisplay {
        let readers = vec![Reader::default(); labels.len()];
        CyclicDisplay {
            labels,
            policy,
            some_other,
            quiet,
            verbose,
            nsecs,
            smi,
            oscope: oscope.max(1),
            readers,
        }
    }

    /// The labels and the `T:` line's -N and --smi forms (for another
    /// display of the same threads, the `-F` pipe's).
    pub fn labels(&self) -> (Vec<ThreadLabel>, bool, bool) {
        (self.labels.clone(), self.nsecs, self.smi)
    }

    /// Whether the display redraws in place (neither -q nor -v).
    pub fn redraws(&self) -> bool {
        !self.quiet && !self.verbose
    }

    /// Thread `i`'s figures as they are now.
    pub fn snapshot(&self, shared: &CyclicShared, i: usize) -> CyclicThread {
        let live = &shared.threads[i];
        // Acquire on cycles: the other figures of that cycle are stored.
        let cycles = live.cycles.load(Ordering::Acquire);
        CyclicThread {
            tid: live.tid.load(Ordering::Relaxed),
            priority: self.labels[i].priority,
            interval_us: self.labels[i].interval_us.max(0) as u64,
            cycles,
            min: live.min.load(Ordering::Relaxed),
            act: live.act.load(Ordering::Relaxed),
            sum: live.sum.load(Ordering::Relaxed),
            max: live.max.load(Ordering::Relaxed),
            smi_count: live.smi_count.load(Ordering::Relaxed),
            ..CyclicThread::default()
        }
    }

    /// One pass of cyclictest's main loop: the block to print now.
    pub fn block(&mut self, shared: &CyclicShared) -> String {
        let mut out = String::new();
        if self.redraws() {
            let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            out.push_str(&classic::policy_line(
                self.policy,
                self.some_other,
                loadavg.strip_suffix('\n').unwrap_or(&loadavg),
            ));
            for i in 0..self.labels.len() {
                out.push_str(&classic::t_line(
                    i,
                    &self.snapshot(shared, i),
                    self.nsecs,
                    self.smi,
                ));
            }
        } else if self.verbose {
            for i in 0..self.labels.len() {
                self.values(shared, i, &mut out);
            }
        }
        out
    }

    /// `-v`: every value not shown yet, reduced by `-o`.
    fn values(&mut self, shared: &CyclicShared, i: usize, out: &mut String) {
        let live = &shared.threads[i];
        let cycles = live.cycles.load(Ordering::Acquire);
        let oscope = self.oscope;
        let r = &mut self.readers[i];
        while r.cycles_read < cycles {
            let at = (r.cycles_read as usize) & (VALBUF_SIZE - 1);
            let diff = live.values.get(at).map_or(0, |v| v.load(Ordering::Relaxed));
            let smi = live.smis.get(at).map(|v| v.load(Ordering::Relaxed));
            if diff > r.red_max {
                r.red_max = diff;
                r.cycle_of_max = r.cycles_read;
            }
            r.reduce += 1;
            if r.reduce == oscope {
                out.push_str(&classic::verbose_line(i, r.cycle_of_max, r.red_max, smi));
                r.reduce = 0;
                r.red_max = 0;
            }
            r.cycles_read += 1;
        }
    }

    /// The cursor moved up over the last block, before the next one.
    pub fn cursor_up(&self) -> String {
        if self.redraws() {
            classic::cursor_up(self.labels.len())
        } else {
            String::new()
        }
    }

    /// `-M`'s cursor back below the display at the end.
    pub fn cursor_down(&self) -> String {
        if self.redraws() {
            classic::cursor_down(self.labels.len())
        } else {
            String::new()
        }
    }
}
