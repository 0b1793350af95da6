//! cyclictest's running display, read from the threads' live atomics
//! (timer::cyclic::CyclicLive) by the main thread every 10 ms: the
//! `policy:` line, an empty line and one `T:` line per thread, then (before
//! the next redraw) the cursor moved up over them, exactly as cyclictest
//! writes it; a CI parser finds the last block by those escape sequences.
//! With `-v` the values of every cycle instead (`-o` keeps the largest of
//! each group), with `-q` nothing until the end.

use crate::report::CyclicThread;
use crate::report::classic_cyclictest as classic;
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

/// How the display looks: what cyclictest's options choose.
#[derive(Debug, Clone)]
pub struct DisplayForm {
    /// The policy asked for, as cyclictest names it.
    pub policy: &'static str,
    /// Some thread runs as SCHED_OTHER (cyclictest then writes `policy/other`).
    pub some_other: bool,
    pub quiet: bool,
    pub verbose: bool,
    pub nsecs: bool,
    pub smi: bool,
    /// `-o`: one `-v` line per this many cycles.
    pub oscope: u64,
}

/// The running display of one run.
pub struct CyclicDisplay {
    labels: Vec<ThreadLabel>,
    form: DisplayForm,
    readers: Vec<Reader>,
}

impl CyclicDisplay {
    pub fn new(labels: Vec<ThreadLabel>, mut form: DisplayForm) -> CyclicDisplay {
        form.oscope = form.oscope.max(1);
        let readers = vec![Reader::default(); labels.len()];
        CyclicDisplay {
            labels,
            form,
            readers,
        }
    }

    /// The labels and the form (for another display of the same threads,
    /// the `-F` pipe's, which shows only `T:` lines).
    pub fn labels(&self) -> (Vec<ThreadLabel>, DisplayForm) {
        let form = DisplayForm {
            quiet: false,
            verbose: false,
            ..self.form.clone()
        };
        (self.labels.clone(), form)
    }

    /// Whether the display redraws in place (neither -q nor -v).
    pub fn redraws(&self) -> bool {
        !self.form.quiet && !self.form.verbose
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

    /// Every thread's figures as they are now.
    pub fn snapshots(&self, shared: &CyclicShared) -> Vec<CyclicThread> {
        (0..self.labels.len())
            .map(|i| self.snapshot(shared, i))
            .collect()
    }

    /// Every thread's `T:` line as it is now (the running display's, the
    /// `-F` pipe's).
    pub fn t_lines(&self, shared: &CyclicShared) -> String {
        let mut out = String::new();
        for (i, t) in self.snapshots(shared).iter().enumerate() {
            out.push_str(&classic::t_line(i, t, self.form.nsecs, self.form.smi));
        }
        out
    }

    /// cyclictest's status block of this moment (SIGUSR1, SIGUSR2: see
    /// live::cyclictest_status).
    pub fn status_block(&self, shared: &CyclicShared) -> String {
        classic::status_block(&self.snapshots(shared), self.form.nsecs, self.form.smi)
    }

    /// One pass of cyclictest's main loop: the block to print now.
    pub fn block(&mut self, shared: &CyclicShared) -> String {
        let mut out = String::new();
        if self.redraws() {
            let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            out.push_str(&classic::policy_line(
                self.form.policy,
                self.form.some_other,
                loadavg.strip_suffix('\n').unwrap_or(&loadavg),
            ));
            out.push_str(&self.t_lines(shared));
        } else if self.form.verbose {
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
        let oscope = self.form.oscope;
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
