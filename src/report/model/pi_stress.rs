//! What a priority-inheritance test (`latscope pi-stress --latscope-json`)
//! reports: its groups and, per group, the inversions done. The Series'
//! latency is the inversion latency: from the high thread calling
//! `pthread_mutex_lock` on the PI mutex that the (boosted) low thread holds
//! to its getting the lock.

use super::{ConfigDetail, Series, SeriesDetail, TestConfig};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PiStressConfig {
    pub groups: u64,
    /// `-i`: inversions per group (each group does one more, as pi_stress's).
    pub inversions_per_group: Option<u64>,
    /// The three threads' policies and priorities, as pi_stress names them
    /// (`SCHED_FIFO`, ...).
    pub low: PiThread,
    pub med: PiThread,
    pub high: PiThread,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PiThread {
    pub policy: String,
    pub priority: i32,
}

/// One inversion group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PiGroup {
    pub group: u64,
    pub cpu: usize,
    /// Inversions done (pi_stress's per-group `total`).
    pub inversions: u64,
}

impl TestConfig {
    pub fn pi_stress(&self) -> Option<&PiStressConfig> {
        match &self.detail {
            ConfigDetail::PiStress(c) => Some(c),
            _ => None,
        }
    }
}

impl Series {
    pub fn pi_group(&self) -> Option<&PiGroup> {
        match &self.detail {
            SeriesDetail::PiGroup(g) => Some(g),
            _ => None,
        }
    }
}
