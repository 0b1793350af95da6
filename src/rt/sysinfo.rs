//! Facts about the machine that decide whether a latency figure can be trusted:
//! kernel flavour, clocksource, CPUs, virtualisation, RT throttling, load.

use crate::doctor::{self, Check, Machine, Verdict};
use serde::{Deserialize, Serialize};
use std::fs;
use std::time::SystemTime;

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
}

/// The highest CPU number Linux can have (`CONFIG_NR_CPUS` is at most 8192).
pub const HIGHEST_KERNEL_CPU: usize = 8191;

/// Parses a kernel CPU list like `0-3,8,10-11`. A CPU beyond
/// `HIGHEST_KERNEL_CPU` makes it invalid: no range can make it allocate
/// without bound (`0-18446744073709551615` once tried to).
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    let cpu = |t: &str| t.trim().parse().ok().filter(|&n| n <= HIGHEST_KERNEL_CPU);
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (cpu(a)?, cpu(b)?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(cpu(part)?),
        }
    }
    Some(cpus)
}

/// CPUs that are online now.
pub fn online_cpus() -> Vec<usize> {
    Machine::live().cpus_online()
}

impl SysInfo {
    /// The facts of the machine latscope runs on.
    pub fn collect() -> SysInfo {
        SysInfo::of(&Machine::live())
    }

    /// The facts of `machine`, read by the doctor's checks (one reader for
    /// both: what a report says of the machine is what `latscope doctor` says).
    pub fn of(machine: &Machine) -> SysInfo {
        let uname = machine.probes.uname();
        let (rt_runtime_us, rt_period_us) = doctor::sched::rt_bandwidth(machine);
        SysInfo {
            preempt_rt: doctor::kernel::preempt_model(machine).rt,
            clocksource: doctor::kernel::current_clocksource(machine),
            cpus_online: machine.cpus_online().len(),
            cpus_allowed: super::sched::allowed_cpus(),
            cpus_isolated: doctor::cpu_list(&doctor::isolation::isolated_cpus(machine)),
            virtualization: doctor::platform::hypervisor(machine),
            rt_runtime_us,
            rt_period_us,
            checks: doctor::run(machine),
            sysname: uname.sysname,
            nodename: uname.nodename,
            release: uname.release,
            version: uname.version,
            machine: uname.machine,
        }
    }

    /// The doctor's check `id` (`kernel.preemption`), when it was recorded.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The check `id` when its verdict is not ok.
    pub fn problem(&self, id: &str) -> Option<&Check> {
        self.check(id).filter(|c| c.verdict != Verdict::Ok)
    }
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

/// RFC 3339 timestamp (UTC, second resolution) for the latscope report.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// rt-tests' timestamp, `%a, %d %b %Y %T %z` in local time (RFC 2822).
pub fn rfc2822_local(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let mut buf = [0u8; 64];
    // SAFETY: valid pointers; strftime writes at most buf.len() bytes including NUL.
    let len = unsafe {
        libc::localtime_r(&secs, &mut tm);
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a, %d %b %Y %T %z".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("0-18446744073709551615"), None);
        assert_eq!(parse_cpu_list("8191").map(|c| c.len()), Some(1));
        assert_eq!(parse_cpu_list("8192"), None);
    }

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

    #[test]
    fn rfc2822_has_the_rt_tests_shape() {
        let s =
            rfc2822_local(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 365));
        // e.g. "Fri, 01 Jan 1971 00:00:00 +0000"
        let parts: Vec<&str> = s.split(' ').collect();
        assert_eq!(parts.len(), 6, "{s}");
        assert!(parts[0].ends_with(','));
        assert!(parts[5].starts_with('+') || parts[5].starts_with('-'));
    }
}
