//! What a hardware-latency test (`latscope hwlat`) reports: its
//! configuration and, per CPU, its windows, its gaps by class, the SMIs,
//! NMIs and steal time. The Series' latency is the hardware gaps.

use super::{ConfigDetail, Series, SeriesDetail, TestConfig};
use crate::stats::window::SecondStats;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwlatConfig {
    pub cpus: Vec<usize>,
    /// A gap above this is counted (ns).
    pub threshold_ns: u64,
    /// Spin `width_ns` of every `window_ns`.
    pub width_ns: u64,
    pub window_ns: u64,
    /// The unprivileged tier's classification window (ns).
    pub sub_window_ns: u64,
    /// Which tier classified the gaps.
    pub tier: String,
    /// Why the tier that ran is not the most precise one (`--tier auto`
    /// fell back: `bpf: WHY; tracefs: WHY`), in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_fallback: Option<String>,
    /// The hypervisor latscope ran under: hardware gaps are its time.
    pub hypervisor: Option<String>,
    /// How SMIs were counted, or why they could not be.
    pub smi_counting: String,
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
}

/// One OS cause and what it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsCause {
    pub cause: String,
    pub count: u64,
    pub ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwlatCpu {
    pub cpu: usize,
    pub tid: i32,
    /// Duty windows sampled.
    pub windows: u64,
    pub sub_windows: u64,
    /// Sub-windows in which no interference was counted.
    pub quiet_sub_windows: u64,
    /// Time spun, and the part whose gaps could be classified.
    pub spun_ns: u64,
    pub classified_ns: u64,
    pub loops: u64,
    /// Pairs read per second of spinning (loops / spun_ns).
    #[serde(default)]
    pub loops_per_s: f64,
    /// Gaps above the threshold with no interference (also the Series' samples).
    pub hardware_gaps: u64,
    pub hardware_ns: u64,
    pub os_gaps: u64,
    pub os_ns: u64,
    pub os_max_ns: u64,
    /// OS gaps by cause, the costliest first.
    pub os_causes: Vec<OsCause>,
    /// Gaps not kept (more in one sub-window than the buffer holds).
    pub gaps_dropped: u64,
    pub nmis: u64,
    /// The NMI handlers' total time, ns (the bpf tier's count, the tracefs
    /// tier's `nmi:nmi_handler` `delta_ns`; absent in the unprivileged
    /// tier), and the longest (the tracefs tier only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_max_ns: Option<u64>,
    /// SMIs counted over the run; None when not countable here.
    pub smis: Option<u64>,
    /// This CPU's steal time over the run (/proc/stat), ns.
    pub steal_ns: u64,
    /// The OS gaps per second of the run (`{second, span_s, samples,
    /// min_ns, avg_ns, max_ns}`, as the series' `per_second` holds the
    /// hardware gaps): the report's plot of gaps over time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub os_per_second: Vec<SecondStats>,
    /// The hwlatdetect samples: one per window with hardware gaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<HwlatSample>,
}

impl HwlatCpu {
    /// The most hardware time of one window (rtla hwnoise's Max Noise).
    pub fn max_window_ns(&self) -> u64 {
        self.samples.iter().map(|s| s.sum_ns).max().unwrap_or(0)
    }

    /// The share of the time spun whose gaps were classified, percent.
    pub fn classified_percent(&self) -> f64 {
        if self.spun_ns == 0 {
            0.0
        } else {
            self.classified_ns as f64 * 100.0 / self.spun_ns as f64
        }
    }
}

/// One window's hardware gaps as hwlatdetect prints a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwlatSample {
    /// CLOCK_REALTIME, ns.
    pub realtime_ns: u64,
    pub inner_ns: u64,
    pub outer_ns: u64,
    pub count: u64,
    /// The window's hardware gaps summed.
    pub sum_ns: u64,
    pub cpu: usize,
}

impl TestConfig {
    pub fn hwlat(&self) -> Option<&HwlatConfig> {
        match &self.detail {
            ConfigDetail::Hwlat(c) => Some(c),
            _ => None,
        }
    }
}

impl Series {
    pub fn hwlat_cpu(&self) -> Option<&HwlatCpu> {
        match &self.detail {
            SeriesDetail::HwlatCpu(c) => Some(c),
            _ => None,
        }
    }
}
