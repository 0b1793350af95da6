//! Facts about the machine read at run time: online CPUs, CPU busy time,
//! this process's CPU time. The report's `SysInfo` is in the model
//! (report/model/sysinfo.rs) and the doctor collects it (doctor/sysinfo.rs).

use std::fs;

use crate::units::parse_cpu_list;

/// sysconf's configured and online processor counts (`Max CPUs`, `Online
/// CPUs` as cyclictest -v prints them; -1 where sysconf cannot say).
pub fn configured_and_online_cpus() -> (libc::c_long, libc::c_long) {
    // SAFETY: sysconf has no preconditions.
    unsafe {
        (
            libc::sysconf(libc::_SC_NPROCESSORS_CONF),
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
        )
    }
}

/// `cpu` and its SMT siblings (the CPUs that share its core), as the kernel
/// lists them in `cpuN/topology/thread_siblings_list` under the sysfs CPU
/// directory (`LATSCOPE_CPU_SYSFS` when set: tests point it at a fixture
/// tree); just `cpu` where the file is missing or unreadable.
pub fn smt_siblings(cpu: usize) -> Vec<usize> {
    let path = crate::rt::cpuidle::sysfs_root()
        .join(format!("cpu{cpu}"))
        .join("topology/thread_siblings_list");
    let mut cpus = fs::read_to_string(path)
        .ok()
        .and_then(|t| parse_cpu_list(&t))
        .unwrap_or_default();
    if !cpus.contains(&cpu) {
        cpus.push(cpu);
        cpus.sort_unstable();
    }
    cpus
}

/// Whether this processor is an Intel family 6 one with MSRs: where
/// rt-tests 2.7 looks for the SMI count MSR (every model, not a list).
pub fn intel_family_6_with_msr() -> bool {
    intel_family_6_model().is_some()
}

/// The model of an Intel family 6 processor with MSRs, else None.
fn intel_family_6_model() -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // CPUID is always available on x86_64.
        let v = __cpuid(0);
        if !(v.ebx == 0x756e_6547 && v.edx == 0x4965_6e69 && v.ecx == 0x6c65_746e) {
            return None;
        }
        // Leaf 1 exists on every x86_64 processor.
        let l1 = __cpuid(1);
        let fms = l1.eax;
        if (fms >> 8) & 0xf != 6 || l1.edx & (1 << 5) == 0 {
            return None;
        }
        Some((((fms >> 16) & 0xf) << 4) + ((fms >> 4) & 0xf))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// CPUs that are online now: the kernel's list, else those this process may
/// use.
pub fn online_cpus() -> Vec<usize> {
    online_cpus_from(
        fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .as_deref(),
    )
}

/// The online CPUs given the kernel's list (`/sys/devices/system/cpu/online`
/// under some root, as the doctor's Machine reads it), else those this
/// process may use.
pub fn online_cpus_from(kernel_list: Option<&str>) -> Vec<usize> {
    kernel_list
        .and_then(parse_cpu_list)
        .unwrap_or_else(super::sched::allowed_cpus)
}

/// Idle time per CPU from `/proc/stat`, to tell after a run whether something
/// else was using the CPUs we measured on.
///
/// Busy time is the wall-clock time minus the idle time, not the sum of the
/// user/system fields: those are sampled at the scheduler tick, and work that
/// runs in short bursts between ticks (exactly what a latency test does) is
/// mostly not seen there, while idle time is measured precisely by the
/// tickless idle code. On this VM a run that used 0.47 s of CPU showed 0.03 s
/// in the user/system fields and 0.52 s as wall minus idle.
#[derive(Debug, Clone)]
pub struct CpuTimes {
    /// (cpu, idle + iowait) in clock ticks (USER_HZ).
    per_cpu: Vec<(usize, u64)>,
    at: std::time::Instant,
}

impl CpuTimes {
    pub fn sample() -> CpuTimes {
        let text = fs::read_to_string("/proc/stat").unwrap_or_default();
        CpuTimes {
            per_cpu: parse_proc_stat(&text),
            at: std::time::Instant::now(),
        }
    }

    /// Fraction of time CPUs in `cpus` were busy between two samples.
    pub fn busy_fraction(&self, later: &CpuTimes, cpus: &[usize]) -> Option<f64> {
        // SAFETY: sysconf has no preconditions.
        let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let wall = later.at.duration_since(self.at).as_secs_f64() * ticks_per_s;
        Self::busy_over(&self.per_cpu, &later.per_cpu, wall, cpus)
    }

    /// The share of `cpus` CPUs between two samples that `cpu_seconds` of
    /// work fills (the same interval as `busy_fraction`'s, so the two compare).
    pub fn share_of(&self, later: &CpuTimes, cpu_seconds: f64, cpus: usize) -> Option<f64> {
        let capacity = later.at.duration_since(self.at).as_secs_f64() * cpus.max(1) as f64;
        (capacity > 0.0).then(|| cpu_seconds / capacity)
    }

    /// Busy fraction given `wall` clock ticks between the two idle counts.
    fn busy_over(
        before: &[(usize, u64)],
        after: &[(usize, u64)],
        wall: f64,
        cpus: &[usize],
    ) -> Option<f64> {
        let (mut busy, mut total) = (0.0, 0.0);
        for &(cpu, idle_after) in after {
            if !cpus.contains(&cpu) {
                continue;
            }
            if let Some(&(_, idle_before)) = before.iter().find(|(c, _)| *c == cpu) {
                let idle = idle_after.saturating_sub(idle_before) as f64;
                busy += (wall - idle).clamp(0.0, wall);
                total += wall;
            }
        }
        (total > 0.0).then(|| busy / total)
    }
}

/// `cpuN user nice system idle iowait ...` -> (N, idle + iowait).
fn parse_proc_stat(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu: usize = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            let values: Vec<u64> = fields.take(5).filter_map(|v| v.parse().ok()).collect();
            if values.len() < 4 {
                return None;
            }
            Some((cpu, values[3] + values.get(4).copied().unwrap_or(0)))
        })
        .collect()
}

/// CPU time (user + system) this process and its reaped children have used so far, in seconds.
pub fn process_cpu_seconds() -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    // Reaped children too: with --fork the peers are child processes, and
    // their CPU time is latscope's own work, not other load.
    [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN]
        .into_iter()
        .map(|who| {
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: `usage` is a valid, writable rusage.
            unsafe { libc::getrusage(who, &mut usage) };
            tv(usage.ru_utime) + tv(usage.ru_stime)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines() {
        let text = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 10 0 0 0 0 0\ncpu1 1 1 1 1 0 0 0 0\nintr 1 2\n";
        // (cpu, idle + iowait)
        assert_eq!(parse_proc_stat(text), vec![(0, 50), (1, 1)]);
    }

    #[test]
    fn busy_fraction_over_selected_cpus() {
        // 100 ticks of wall time: CPU 0 idle 50 of them, CPU 1 all of them.
        let before = [(0, 10), (1, 0)];
        let after = [(0, 60), (1, 100)];
        assert_eq!(CpuTimes::busy_over(&before, &after, 100.0, &[0]), Some(0.5));
        assert_eq!(CpuTimes::busy_over(&before, &after, 100.0, &[1]), Some(0.0));
        assert_eq!(
            CpuTimes::busy_over(&before, &after, 100.0, &[0, 1]),
            Some(0.25)
        );
        assert_eq!(CpuTimes::busy_over(&before, &after, 100.0, &[7]), None);
        // Idle counted a little beyond the wall time (tick rounding): not negative.
        assert_eq!(
            CpuTimes::busy_over(&[(0, 0)], &[(0, 101)], 100.0, &[0]),
            Some(0.0)
        );
        assert_eq!(
            parse_proc_stat("cpu  1 2 3 4 5\ncpu0 1 0 2 40 2 0 0 0 0 0\ncpu1 0 0 0 7\n"),
            [(0, 42), (1, 7)]
        );
    }
}
