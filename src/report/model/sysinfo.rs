//! The machine a report was measured on: kernel, clocksource, CPUs,
//! virtualisation, RT throttling and the doctor's checks at the start.
//! `doctor::sysinfo` collects it.

use super::checks::{Check, Verdict};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SysInfo {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
    /// Kernel built with PREEMPT_RT (`/sys/kernel/realtime`, the version string, /boot's config).
    pub preempt_rt: bool,
    pub clocksource: String,
    pub cpus_online: usize,
    /// CPUs this process may run on (affinity / cpuset).
    pub cpus_allowed: Vec<usize>,
    /// CPUs isolated from the scheduler (`isolcpus=`), kernel list syntax, empty if none.
    pub cpus_isolated: String,
    /// Hypervisor seen (CPUID signature, `hypervisor` CPU flag, DMI), if any.
    pub virtualization: Option<String>,
    /// `/proc/sys/kernel/sched_rt_runtime_us`: -1 means RT throttling is off.
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
    /// Every check of `latscope doctor` on this machine when the run started
    /// (empty in reports written before they were recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// Each CPU's place in the machine (`/sys/devices/system/cpu/cpuN`):
    /// what rteval's report calls the CPU topology (absent in reports
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_topology: Vec<CpuPlace>,
    /// Every clocksource the kernel offers (`available_clocksource`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocksources_available: Vec<String>,
    /// The kernel command line (`/proc/cmdline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cmdline: Option<String>,
}

/// One CPU of `SysInfo::cpu_topology`; an offline CPU has only its number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    pub cpu: usize,
    pub online: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_id: Option<u64>,
    /// The CPUs that share its core (itself included: `thread_siblings_list`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_siblings: Vec<usize>,
}

impl SysInfo {
    /// The doctor's check `id` (`kernel.preemption`), when it was recorded.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The check `id` when its verdict is not ok.
    pub fn problem(&self, id: &str) -> Option<&Check> {
        self.check(id).filter(|c| c.verdict != Verdict::Ok)
    }
}
