//! cyclictest's own figures (`cyclictest --latscope-json FILE`): what its
//! outputs print, in its units (whole us, or ns with `-N`), beside the
//! series' exact ns figures. Its final block is printed from them
//! (report::classic_cyclictest::FinalBlock), as every exporter reads the
//! Report.

use serde::{Deserialize, Serialize};

/// One thread's figures as cyclictest keeps them (us, or ns with `-N`):
/// in `TimerThread::cyclictest`, and what its display, status block and
/// JSON print.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CyclicThread {
    pub tid: i32,
    pub priority: i32,
    pub interval_us: u64,
    pub cycles: u64,
    pub min: i64,
    pub act: i64,
    /// Sum of every latency (for cyclictest's truncating average).
    pub sum: i64,
    pub max: i64,
    /// The CPU cyclictest's JSON names for the thread.
    pub cpu: usize,
    /// `-h` cells (empty without `-h`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hist: Vec<u64>,
    pub overflows: u64,
    /// Cycle numbers of the first overflows (at most one per histogram cell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<u64>,
    /// `--smi`: SMIs counted while measuring.
    pub smi_count: u64,
    /// `--spike`: this thread's samples above the trigger, kept or not.
    #[serde(default)]
    pub spikes_seen: u64,
    /// `--spike`: this thread's spikes among those kept (`--spike-nodes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spikes: Vec<CyclicSpike>,
    /// `-b`: the value that stopped the run, when this thread stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broke_at: Option<i64>,
}

/// One kept `--spike`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CyclicSpike {
    /// Its place among every thread's kept spikes, in the order the run
    /// recorded them (0 first).
    pub order: usize,
    pub diff: i64,
    /// The wake-up time, us of the measuring clock.
    pub ts_us: i64,
}

/// The options that shape cyclictest's final block (in the timer config of
/// a `cyclictest --latscope-json` run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CyclicOutput {
    /// `-q`: the `T:` lines at the end (when there is no histogram).
    pub quiet: bool,
    /// `-h`'s cells (0 = no histogram).
    pub histogram_cells: usize,
    /// `-H`: the histogram's column summing every thread.
    pub histofall: bool,
    /// `--histfile`: the histogram went to that file instead.
    pub histogram_to_file: bool,
    /// `--smi`: the SMI columns.
    pub smi: bool,
    /// `-N`: figures in ns.
    pub nsecs: bool,
    /// `-b` other than 0: the thread ids are listed.
    pub lists_threads: bool,
    /// `--spike`: the spike block.
    pub spikes: bool,
}
