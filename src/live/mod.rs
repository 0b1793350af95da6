//! What people see while a test runs: status lines on a terminal and the
//! original tools' live lines. Read from atomics and channels the measuring
//! threads fill; nothing here runs on a measuring thread.

pub mod cyclicdeadline;
pub mod cyclictest;
pub mod cyclictest_status;
pub mod ipc;
pub mod logdisk;
pub mod noise;
pub mod status;
pub mod timer;
