//! The tests that need the machine to themselves: one binary of its own, so
//! that `cargo test` runs it while no other test binary runs (cargo runs the
//! binaries one after the other), and one test at a time inside it
//! (`idle_cpu` takes the real-time turn, the only lock it needs here).
//!
//! A test belongs here when what it provokes is an *absence*: an idle CPU
//! cannot be made idle by a test that shares the machine with the suite's
//! two concurrent tests (the 11-29 whole-suite run saw this test fail beside
//! them while it passed alone). What the machine's own load still takes
//! (`stress-ng` beside the run) is a counted skip, never a silent pass.

#[path = "../suite/common/mod.rs"]
mod common;

mod idle_cpu;
