//! cyclictest's main loop, the controller of a cyclictest run (as
//! `timer/mod.rs` is the timer test's): every 10 ms it draws the running
//! display, serves SIGUSR1/SIGUSR2, drains the per-second windows and
//! decides the end: a stop signal, the threads' own stop (`-D`, `-b`, a
//! failure) or any thread done with its `-l` loops (rt-tests 2.40 counts
//! `allstopped` up per finished thread but breaks as soon as it is not 0;
//! then `shutdown` stops the others where they are: with -t2 -d100 -l500
//! cyclictest's thread 1 ends near 466). With `-M` it waits for a new
//! maximum between two draws.
//!
//! What is drawn and how a status request is answered is the caller's
//! (`CyclicScreen`, live/'s display): this module says only when.

use super::{CyclicFigures, CyclicRun, CyclicShared};
use crate::rt::signals::{Collected, wait_for_stop_or_user_signal};
use crate::stats::window::WindowSeries;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the main loop draws and looks at the threads.
const DRAW_EVERY: Duration = Duration::from_millis(10);

/// What the main loop shows and serves while the threads run.
pub trait CyclicScreen {
    /// The running display, now.
    fn draw(&mut self, shared: &CyclicShared);
    /// Before the next draw (the cursor moved back over the block).
    fn rewind(&mut self);
    /// After the last draw with `-M` (the cursor moved below the block).
    fn leave(&mut self);
    /// A SIGUSR1 or SIGUSR2: cyclictest's status requests.
    fn status(&mut self, signal: Collected, shared: &CyclicShared);
}

/// What ends the run besides the threads themselves.
#[derive(Debug, Clone, Copy)]
pub struct Control {
    /// `-l`: the loops after which the first thread done ends the run (0 = none).
    pub loops: u64,
    /// `-M`: redraw only on a new maximum.
    pub refresh_on_max: bool,
}

/// A run once its threads are joined.
pub struct Controlled {
    /// Each thread's figures, or why it failed.
    pub results: Vec<Result<CyclicFigures, String>>,
    /// A stop signal ended the run.
    pub signalled: bool,
    /// A thread's `-l` loops ended the run.
    pub loops_done: bool,
    /// Per thread (with `--latscope-json`): its per-second windows and the
    /// windows lost.
    pub windows: Vec<(WindowSeries, u64)>,
}

/// Runs cyclictest's main loop until the run ends, then stops and joins
/// the threads.
pub fn control(run: CyclicRun, control: Control, screen: &mut dyn CyclicScreen) -> Controlled {
    let shared = std::sync::Arc::clone(&run.shared);
    let mut windows: Vec<WindowSeries> = shared
        .windows
        .iter()
        .map(|_| WindowSeries::default())
        .collect();
    let mut signalled = false;
    let mut loops_done = false;
    loop {
        screen.draw(&shared);
        let one_done = control.loops > 0
            && shared
                .threads
                .iter()
                .any(|t| t.cycles.load(Ordering::Acquire) >= control.loops);
        // SIGUSR1/SIGUSR2 mean what they mean to cyclictest: served here,
        // and the run goes on.
        match wait_for_stop_or_user_signal(DRAW_EVERY) {
            Some(Collected::Stop(_)) => {
                signalled = true;
                shared.stop.store(true, Ordering::Relaxed);
            }
            Some(user) => screen.status(user, &shared),
            None => {}
        }
        drain(&shared, &mut windows);
        if stopped(&shared) || one_done {
            loops_done = one_done;
            break;
        }
        screen.rewind();
        if control.refresh_on_max {
            wait_for_new_maximum(&shared, &mut windows, screen);
            if stopped(&shared) {
                break;
            }
        }
    }
    if control.refresh_on_max {
        screen.leave();
    }
    let results = run.stop_and_join();
    drain(&shared, &mut windows);
    let windows = windows
        .into_iter()
        .zip(shared.windows.iter())
        .map(|(w, ring)| (w, ring.dropped()))
        .collect();
    Controlled {
        results,
        signalled,
        loops_done,
        windows,
    }
}

/// `-M`: waits for a new maximum; a thread that ends its loops, or a stop
/// signal, ends the run here, as cyclictest's threads do with -M.
fn wait_for_new_maximum(
    shared: &CyclicShared,
    windows: &mut [WindowSeries],
    screen: &mut dyn CyclicScreen,
) {
    let epoch = shared.max_epoch.load(Ordering::Relaxed);
    while shared.max_epoch.load(Ordering::Relaxed) == epoch && !stopped(shared) {
        drain(shared, windows);
        let collected = wait_for_stop_or_user_signal(DRAW_EVERY);
        if let Some(user @ (Collected::User1 | Collected::User2)) = collected {
            screen.status(user, shared);
        }
        if matches!(collected, Some(Collected::Stop(_)))
            || shared
                .threads
                .iter()
                .any(|t| t.finished.load(Ordering::Acquire))
        {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
}

fn stopped(shared: &CyclicShared) -> bool {
    shared.stop.load(Ordering::Relaxed)
}

/// The windows the threads completed, into each thread's series.
fn drain(shared: &CyclicShared, windows: &mut [WindowSeries]) {
    for (ring, series) in shared.windows.iter().zip(windows.iter_mut()) {
        ring.drain_into(series);
    }
}
