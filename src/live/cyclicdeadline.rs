//! cyclicdeadline's running display, read from the threads' live atomics
//! by the main thread every 10 ms (timer::cyclic::control says when): one
//! `T:` line per thread, then the cursor moved up over them before the next
//! redraw; at the end the cursor moved down below them and an empty line,
//! as cyclicdeadline writes it (`\e[NA` after the last block too, then
//! `\e[N+2B`). With `-q` nothing until the end, then the `T:` lines.

use super::cyclictest::{CyclicDisplay, DisplayForm, ThreadLabel};
use crate::report::CyclicThread;
use crate::report::classic_cyclicdeadline as classic;
use crate::rt::signals::Collected;
use crate::rt::stdio::print;
use crate::timer::cyclic::CyclicShared;
use crate::timer::cyclic::control::CyclicScreen;

/// The display of one cyclicdeadline run.
pub struct DeadlineScreen {
    /// Reads the threads' figures (cyclictest's display, its snapshots only).
    figures: CyclicDisplay,
    quiet: bool,
    threads: usize,
}

impl DeadlineScreen {
    /// The display of threads with these deadlines (us).
    pub fn new(deadlines_us: &[u64], quiet: bool) -> DeadlineScreen {
        let labels = deadlines_us
            .iter()
            .map(|&d| ThreadLabel {
                priority: 0,
                interval_us: d as i64,
            })
            .collect();
        let form = DisplayForm {
            policy: "deadline",
            some_other: false,
            quiet,
            verbose: false,
            nsecs: false,
            smi: false,
            oscope: 1,
        };
        DeadlineScreen {
            figures: CyclicDisplay::new(labels, form),
            quiet,
            threads: deadlines_us.len(),
        }
    }

    /// Every thread's figures as they are now.
    pub fn snapshots(&self, shared: &CyclicShared) -> Vec<CyclicThread> {
        self.figures.snapshots(shared)
    }

    /// What cyclicdeadline prints once its main loop has ended: the cursor
    /// below the last block, or with `-q` the `T:` lines.
    pub fn after_loop(&self, threads: &[CyclicThread]) -> String {
        if self.quiet {
            classic::t_lines(threads)
        } else {
            classic::cursor_up(self.threads) + &classic::cursor_below(self.threads)
        }
    }
}

impl CyclicScreen for DeadlineScreen {
    fn draw(&mut self, shared: &CyclicShared) {
        if !self.quiet {
            print(&classic::t_lines(&self.snapshots(shared)));
        }
    }

    fn rewind(&mut self) {
        if !self.quiet {
            print(&classic::cursor_up(self.threads));
        }
    }

    fn leave(&mut self) {}

    /// cyclicdeadline has no status requests (SIGUSR1 and SIGUSR2 would end
    /// it): latscope goes on measuring.
    fn status(&mut self, _signal: Collected, _shared: &CyclicShared) {}
}
