//! Where the doctor reads its facts: a root directory (`/` on a real run, a
//! fixture tree in tests) for everything in `/proc`, `/sys`, `/dev` and
//! `/boot`, and a few `Probes` for the facts that are system calls, not
//! files (uname, resource limits, the CPUID hypervisor signature), so tests
//! can fake those too.

use std::fs;
use std::path::{Path, PathBuf};

/// `uname(2)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

/// One resource limit; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// The caller's limits that decide what a real-time test may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_MEMLOCK, bytes.
    pub memlock: Limit,
    /// RLIMIT_RTPRIO, the highest real-time priority without CAP_SYS_NICE.
    pub rtprio: Limit,
}

/// Facts that come from system calls rather than files.
pub trait Probes {
    fn uname(&self) -> Uname;
    fn limits(&self) -> Limits;
    /// The hypervisor's CPUID signature (leaf 0x40000000: `KVMKVMKVM`,
    /// `Microsoft Hv`, ...), where the CPU has one.
    fn hypervisor_signature(&self) -> Option<String>;
    /// `prctl(PR_GET_TIMERSLACK)`, for kernels without `/proc/self/timerslack_ns`.
    fn timer_slack_ns(&self) -> Option<u64>;
    /// Whether the kernel takes a BPF map and tracepoint program from this
    /// process (`rt::bpf::probe`): Err is why not.
    fn bpf(&self) -> Result<(), String>;
    /// What the kernel answers a thread asking for SCHED_FIFO and
    /// SCHED_DEADLINE (rt::sched::probe_realtime): tried, not inferred.
    fn realtime(&self) -> crate::rt::sched::RealtimeProbe;
    /// CPUID: an Intel family 6 processor with MSRs (where rt-tests 2.7
    /// reads the SMI count MSR).
    fn intel_family_6_with_msr(&self) -> bool;
    /// Whether perf opens `event` on `cpu` for this process (opened and
    /// closed at once): Err is why not.
    fn perf(&self, event: &crate::rt::pmu::PmuEvent, cpu: usize) -> Result<(), String>;
}

/// The probes of the machine latscope runs on.
pub struct LiveProbes;

impl Probes for LiveProbes {
    fn intel_family_6_with_msr(&self) -> bool {
        crate::rt::sysinfo::intel_family_6_with_msr()
    }

    fn perf(&self, event: &crate::rt::pmu::PmuEvent, cpu: usize) -> Result<(), String> {
        crate::rt::smi::try_perf_live(event, cpu)
    }

    fn realtime(&self) -> crate::rt::sched::RealtimeProbe {
        crate::rt::sched::probe_realtime()
    }

    fn bpf(&self) -> Result<(), String> {
        crate::rt::bpf::probe::try_the_system_call().map_err(|why| why.0)
    }

    fn uname(&self) -> Uname {
        match nix::sys::utsname::uname() {
            Ok(u) => Uname {
                sysname: u.sysname().to_string_lossy().into_owned(),
                nodename: u.nodename().to_string_lossy().into_owned(),
                release: u.release().to_string_lossy().into_owned(),
                version: u.version().to_string_lossy().into_owned(),
                machine: u.machine().to_string_lossy().into_owned(),
            },
            Err(_) => Uname::default(),
        }
    }

    fn limits(&self) -> Limits {
        let limit = |resource| {
            let mut value = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `value` is a valid, writable rlimit.
            if unsafe { libc::getrlimit(resource, &mut value) } != 0 {
                return Limit::default();
            }
            let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
            Limit {
                soft: finite(value.rlim_cur),
                hard: finite(value.rlim_max),
            }
        };
        Limits {
            memlock: limit(libc::RLIMIT_MEMLOCK),
            rtprio: limit(libc::RLIMIT_RTPRIO),
        }
    }

    fn hypervisor_signature(&self) -> Option<String> {
        hypervisor_cpuid()
    }

    fn timer_slack_ns(&self) -> Option<u64> {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack.
        let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        u64::try_from(slack).ok()
    }
}

#[cfg(target_arch = "x86_64")]
fn hypervisor_cpuid() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // Leaf 1, ECX bit 31: "running under a hypervisor". Only then is leaf
    // 0x40000000 the hypervisor's (on bare metal it returns other data).
    let leaf1 = __cpuid(1);
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    let leaf = __cpuid(0x4000_0000);
    let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    let text = String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    (!text.is_empty()).then_some(text)
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_cpuid() -> Option<String> {
    None
}

/// The machine the checks look at.
pub struct Machine {
    root: PathBuf,
    pub probes: Box<dyn Probes>,
}

impl Machine {
    /// The machine latscope runs on.
    pub fn live() -> Machine {
        Machine::at("/", Box::new(LiveProbes))
    }

    /// A machine whose files are under `root` (a fixture tree in tests).
    pub fn at(root: impl Into<PathBuf>, probes: Box<dyn Probes>) -> Machine {
        Machine {
            root: root.into(),
            probes,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the system path `path` (absolute, like `/proc/cmdline`) is.
    pub fn path(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        self.root.join(path.strip_prefix("/").unwrap_or(path))
    }

    /// The file's text, trimmed; `None` when it cannot be read.
    pub fn read(&self, path: impl AsRef<Path>) -> Option<String> {
        fs::read_to_string(self.path(path))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// At most `limit` bytes of the file (binary files such as
    /// `/dev/cpu_dma_latency`; a character device may never end).
    pub fn read_bytes(&self, path: impl AsRef<Path>, limit: u64) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut bytes = Vec::new();
        fs::File::open(self.path(path))?
            .take(limit)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.path(path).exists()
    }

    /// Names in a directory, sorted (empty when it cannot be read).
    pub fn list(&self, dir: impl AsRef<Path>) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path(dir))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort_by(|a, b| natural_order(a, b));
        names
    }

    /// `cpuN` directories under /sys/devices/system/cpu, as numbers, in order.
    pub fn cpu_dirs(&self) -> Vec<usize> {
        self.list("/sys/devices/system/cpu")
            .iter()
            .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
            .collect()
    }

    /// CPUs online now (the kernel's list, else those this process may use).
    pub fn cpus_online(&self) -> Vec<usize> {
        crate::rt::sysinfo::online_cpus_from(self.read("/sys/devices/system/cpu/online").as_deref())
    }

    /// The kernel command line's parameters: `name=value` (or bare `name`,
    /// value empty), up to the `--` that starts init's arguments.
    pub fn cmdline(&self) -> Vec<(String, String)> {
        let text = self.read("/proc/cmdline").unwrap_or_default();
        text.split_whitespace()
            .take_while(|w| *w != "--")
            .map(|w| match w.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (w.to_string(), String::new()),
            })
            .collect()
    }

    /// The last value of kernel parameter `name` (the kernel lets the last one win).
    pub fn cmdline_value(&self, name: &str) -> Option<String> {
        self.cmdline()
            .into_iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// The effective user id of this process (the second `Uid:` field of
    /// /proc/self/status; None when it cannot be read).
    pub fn effective_uid(&self) -> Option<u32> {
        self.read("/proc/self/status")?
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// The effective capabilities of this process (`CapEff` in /proc/self/status).
    pub fn effective_capabilities(&self) -> u64 {
        self.read("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or(0)
    }
}

/// `cpu2` before `cpu10`, `24` before `100`.
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, tail) = s.split_at(s.len() - digits);
        (head.to_string(), tail.parse::<u64>().ok())
    };
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_numbers() {
        let mut names = vec!["cpu10", "cpu2", "cpufreq", "cpu1", "100", "24"];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(names, ["24", "100", "cpu1", "cpu2", "cpu10", "cpufreq"]);
    }

    #[test]
    fn live_probes_answer_here() {
        let uname = LiveProbes.uname();
        assert_eq!(uname.sysname, "Linux");
        assert!(!uname.release.is_empty());
        // The default slack of a normal task is 50 us unless someone changed it.
        assert!(LiveProbes.timer_slack_ns().is_some());
    }
}
