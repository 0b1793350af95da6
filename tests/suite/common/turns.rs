//! Turns between test modules: what two tests must not do at the same time,
//! wherever they are declared. libtest runs the crate's tests two at a time
//! in one process, so a lock here orders tests of different files too.

use std::sync::{Mutex, MutexGuard};

fn take(lock: &'static Mutex<()>) -> MutexGuard<'static, ()> {
    // A test that failed while holding its turn must not fail the others.
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// SCHED_DEADLINE bandwidth: a test that fills it on purpose (to see the
/// refusal) must not run beside another that reserves some.
pub fn deadline_bandwidth() -> MutexGuard<'static, ()> {
    static DEADLINE_BANDWIDTH: Mutex<()> = Mutex::new(());
    take(&DEADLINE_BANDWIDTH)
}

/// The measured CPU (the last allowed one): tests that provoke a stall there
/// with a SCHED_FIFO spinner, or that need it idle to see a provoked effect,
/// take turns, so that none measures another's provocation.
pub fn measured_cpu() -> MutexGuard<'static, ()> {
    static MEASURED_CPU: Mutex<()> = Mutex::new(());
    take(&MEASURED_CPU)
}
