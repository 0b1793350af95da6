//! What the machine tells around the sampler: each CPU's steal time and busy
//! time (`/proc/stat`), and how SMIs are counted here (`rt::smi`).

use std::collections::BTreeMap;

/// One CPU's `/proc/stat` times, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Everything but idle and iowait.
    pub busy: u64,
    /// The 8th field: time the hypervisor ran something else on this vCPU.
    pub steal: u64,
}

/// Parses `/proc/stat`: every `cpuN` line (not the `cpu` sum).
pub fn parse_stat(text: &str) -> BTreeMap<usize, CpuTimes> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(cpu) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let f: Vec<u64> = words.map(|w| w.parse().unwrap_or(0)).collect();
        let field = |i: usize| f.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal (guest is in user).
        let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
        out.insert(
            cpu,
            CpuTimes {
                busy,
                steal: field(7),
            },
        );
    }
    out
}

/// `/proc/stat` now (empty when unreadable).
pub fn read_stat() -> BTreeMap<usize, CpuTimes> {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_stat(&t))
        .unwrap_or_default()
}

/// USER_HZ: the unit of `/proc/stat`.
pub fn user_hz() -> u64 {
    // SAFETY: sysconf takes no pointer.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
}

/// How SMIs are counted (perf's msr/smi/ event, else the MSR, else why
/// not): rt::smi decides, for the run, the report and the doctor alike.
pub use crate::rt::smi::{SmiCounter, SmiCounting, smi_counting};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_field_and_busy_leaves_out_idle_and_iowait() {
        let text = "cpu  278730 0 18230 18862 250 0 58 226 0 0\n\
                    cpu0 140089 0 7303 10607 61 0 8 106 0 0\n\
                    cpu1 138641 1 10926 8254 188 2 49 120 0 0\nintr 1 2\n";
        let s = parse_stat(text);
        assert_eq!(s.len(), 2);
        assert_eq!(s[&0].steal, 106);
        assert_eq!(s[&1].steal, 120);
        assert_eq!(s[&1].busy, 138641 + 1 + 10926 + 2 + 49 + 120);
    }
}
