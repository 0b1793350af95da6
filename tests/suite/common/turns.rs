//! Turns between test modules: what two tests must not do at the same time,
//! wherever they are declared. libtest runs the crate's tests two at a time
//! in one process, so a lock here orders tests of different files too.

use std::sync::{Mutex, MutexGuard};

/// The real-time side of the machine, for one test at a time among those
/// that change it or need it undisturbed:
/// - the deadline tests reserve SCHED_DEADLINE bandwidth, and one fills it
///   on purpose to see the refusal (another reservation would then fail);
/// - the spike tests provoke stalls with a SCHED_FIFO spike-maker on the
///   measured CPU and attribute them, and one needs that CPU idle; a
///   deadline task or a noise spinner beside them is seen as throttling or
///   taken for the provocation (a helper's full run saw the first);
/// - the noise tests run a SCHED_FIFO spinner on the measured CPU.
pub fn realtime_turn() -> MutexGuard<'static, ()> {
    static REALTIME: Mutex<()> = Mutex::new(());
    // A test that failed while holding its turn must not fail the others.
    REALTIME.lock().unwrap_or_else(|e| e.into_inner())
}
