//! How the suite shares `--duration` between its rows: each IPC primitive,
//! the timer, the noise, the hardware and the log-disk rows get one share
//! each, less what each needs besides measuring.

use std::time::Duration;

/// Time the hardware row needs besides sampling: the samplers' start (20
/// ms, hwlat::START_DELAY_NS) and their end.
pub(super) const HWLAT_SETUP_RESERVE: Duration = Duration::from_millis(40);

/// Time the timer test needs besides measuring (threads, report).
pub(super) const TIMER_SETUP_RESERVE: Duration = Duration::from_millis(20);
/// Time the noise test needs besides measuring (its thread, the start).
pub(super) const NOISE_SETUP_RESERVE: Duration = Duration::from_millis(20);
/// The noise row is short: one CPU for at most this long.
pub(super) const NOISE_AT_MOST: Duration = Duration::from_secs(1);
/// Time the log-disk test needs besides measuring (two 1 MiB files written
/// out and removed).
pub(super) const LOGDISK_SETUP_RESERVE: Duration = Duration::from_millis(60);
/// The tests after the IPC rows, one share of the time each: the timer, the
/// noise, the hardware and the log-disk rows.
pub(super) const AFTER_IPC: u32 = 4;
/// What the noise, hardware and log-disk rows need besides measuring.
pub(super) const AFTER_TIMER_RESERVE: Duration = Duration::from_millis(
    NOISE_SETUP_RESERVE.as_millis() as u64
        + HWLAT_SETUP_RESERVE.as_millis() as u64
        + LOGDISK_SETUP_RESERVE.as_millis() as u64,
);
