//! What the machine tells around the sampler: each CPU's steal time and busy
//! time (`/proc/stat`), and whether SMIs can be counted here.

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

/// How SMIs are counted on this machine, or why they cannot be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiCounting {
    /// `/dev/cpu/N/msr` at 0x34 (MSR_SMI_COUNT) for every measured CPU.
    Msr,
    NotCountable(String),
}

/// MSR_SMI_COUNT.
const MSR_SMI_COUNT: u64 = 0x34;
const PERF_SMI_EVENT: &str = "/sys/bus/event_source/devices/msr/events/smi";

/// Where SMIs can be counted: the MSR, readable, on an Intel family 6
/// processor (rt-tests 2.7's rule: every model of family 6, not a list).
pub fn smi_counting(cpus: &[usize]) -> SmiCounting {
    if !crate::rt::sysinfo::intel_family_6_with_msr() {
        return SmiCounting::NotCountable(
            "the processor is not an Intel family 6 one, which alone has the SMI count MSR".into(),
        );
    }
    match cpus.iter().find(|&&cpu| read_smi_count(cpu).is_none()) {
        None => SmiCounting::Msr,
        Some(cpu) => {
            let perf = if std::path::Path::new(PERF_SMI_EVENT).exists() {
                "perf's msr/smi event is offered but not read by this tier yet"
            } else {
                "and perf's msr PMU has no smi event"
            };
            SmiCounting::NotCountable(format!(
                "/dev/cpu/{cpu}/msr cannot be read (modprobe msr; root), {perf}"
            ))
        }
    }
}

/// MSR_SMI_COUNT of `cpu`, when its msr device can be read.
pub fn read_smi_count(cpu: usize) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(format!("/dev/cpu/{cpu}/msr")).ok()?;
    let mut bytes = [0u8; 8];
    file.read_exact_at(&mut bytes, MSR_SMI_COUNT).ok()?;
    // The count is the low 32 bits.
    Some(u64::from_le_bytes(bytes) & 0xffff_ffff)
}

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
