//! Fixture machines for the checks' tests: a `/proc`, `/sys`, `/dev` tree in
//! a temporary directory plus faked probes.

use super::machine::{Limit, Limits, Machine, Probes, Uname};

#[derive(Debug, Clone)]
pub struct FakeProbes {
    pub uname: Uname,
    pub limits: Limits,
    pub signature: Option<String>,
    pub slack_ns: Option<u64>,
    pub bpf: Result<(), String>,
    pub realtime: crate::rt::sched::RealtimeProbe,
    pub intel_family_6: bool,
    pub perf: Result<(), String>,
}

impl Probes for FakeProbes {
    fn uname(&self) -> Uname {
        self.uname.clone()
    }
    fn limits(&self) -> Limits {
        self.limits
    }
    fn hypervisor_signature(&self) -> Option<String> {
        self.signature.clone()
    }
    fn timer_slack_ns(&self) -> Option<u64> {
        self.slack_ns
    }
    fn bpf(&self) -> Result<(), String> {
        self.bpf.clone()
    }
    fn realtime(&self) -> crate::rt::sched::RealtimeProbe {
        self.realtime
    }
    fn intel_family_6_with_msr(&self) -> bool {
        self.intel_family_6
    }
    fn perf(&self, _: &crate::rt::pmu::PmuEvent, _: usize) -> Result<(), String> {
        self.perf.clone()
    }
}

pub struct Fixture {
    dir: tempfile::TempDir,
    pub probes: FakeProbes,
}

pub const MIB: u64 = 1024 * 1024;

impl Fixture {
    /// No files; a plain non-RT Linux in the probes, unlimited limits.
    pub fn empty() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().expect("temporary directory"),
            probes: FakeProbes {
                uname: Uname {
                    sysname: "Linux".into(),
                    nodename: "rig".into(),
                    release: "6.18.0".into(),
                    version: "#1 SMP PREEMPT_DYNAMIC".into(),
                    machine: "x86_64".into(),
                },
                limits: Limits {
                    memlock: Limit {
                        soft: None,
                        hard: None,
                    },
                    rtprio: Limit {
                        soft: Some(99),
                        hard: Some(99),
                    },
                },
                signature: None,
                slack_ns: None,
                bpf: Ok(()),
                realtime: crate::rt::sched::RealtimeProbe {
                    fifo: Ok(()),
                    deadline: Ok(()),
                },
                intel_family_6: false,
                perf: Ok(()),
            },
        }
    }

    /// Writes `text` at the system path `path` (directories created).
    pub fn file(&self, path: &str, text: &str) -> &Fixture {
        let at = self.dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&at, text).expect("write fixture file");
        self
    }

    pub fn bytes(&self, path: &str, bytes: &[u8]) -> &Fixture {
        let at = self.dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&at, bytes).expect("write fixture file");
        self
    }

    pub fn dir(&self, path: &str) -> &Fixture {
        std::fs::create_dir_all(self.dir.path().join(path.trim_start_matches('/'))).expect("mkdir");
        self
    }

    pub fn machine(&self) -> Machine {
        Machine::at(self.dir.path(), Box::new(self.probes.clone()))
    }

    /// A mounted tracefs at /sys/kernel/tracing with these tracers and events.
    pub fn tracefs(&self, tracers: &str, events: &[(&str, &str)]) -> &Fixture {
        self.file(
            "/proc/self/mounts",
            "sysfs /sys sysfs rw 0 0\ntracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n",
        )
        .file("/proc/filesystems", "nodev\tsysfs\nnodev\ttracefs\n")
        .file("/sys/kernel/tracing/tracing_on", "1\n")
        .file("/sys/kernel/tracing/available_tracers", tracers)
        .file(
            "/sys/kernel/tracing/trace_clock",
            "[local] global counter uptime perf mono mono_raw boot\n",
        )
        .dir("/sys/kernel/tracing/instances");
        for (system, event) in events {
            self.file(
                &format!("/sys/kernel/tracing/events/{system}/{event}/format"),
                "name: x\n",
            );
        }
        self
    }

    /// A machine set up for real time: every check is ok.
    pub fn tuned_rt() -> Fixture {
        let mut f = Fixture::empty();
        f.probes.uname.release = "6.6.0-rt15".into();
        f.probes.uname.version = "#1 SMP PREEMPT_RT".into();
        f.file("/sys/kernel/realtime", "1\n")
            .file(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                "tsc\n",
            )
            .file("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
            .file("/sys/devices/system/cpu/smt/active", "0\n")
            .file("/sys/devices/system/cpu/smt/control", "off\n")
            .file("/sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n")
            .bytes("/dev/cpu_dma_latency", &2_000_000_000i32.to_ne_bytes())
            .file(
                "/proc/cmdline",
                "BOOT_IMAGE=/vmlinuz isolcpus=domain,managed_irq,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 -- single\n",
            )
            .file("/sys/devices/system/cpu/isolated", "2-3\n")
            .file("/sys/devices/system/cpu/nohz_full", "2-3\n")
            .file("/proc/irq/0/smp_affinity_list", "0-1\n")
            .file("/proc/irq/24/smp_affinity_list", "0-3\n")
            .file("/proc/irq/24/effective_affinity_list", "1\n")
            .file("/proc/1/comm", "systemd\n")
            .file("/proc/1/cgroup", "0::/init.scope\n")
            .file("/proc/1/sched", "systemd (1, #threads: 1)\n")
            .file("/proc/2/comm", "kthreadd\n")
            .file("/proc/sys/kernel/sched_rt_runtime_us", "-1\n")
            .file("/proc/sys/kernel/sched_rt_period_us", "1000000\n")
            .file("/proc/self/timerslack_ns", "50000\n")
            .file("/proc/self/status", "Name:\tlatscope\nCapEff:\t000000c000000000\n")
            .file(
                "/sys/kernel/mm/transparent_hugepage/enabled",
                "always madvise [never]\n",
            )
            .file(
                "/sys/kernel/mm/transparent_hugepage/defrag",
                "always defer defer+madvise madvise [never]\n",
            )
            .file(
                "/proc/swaps",
                "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
            )
            .file("/proc/sys/vm/swappiness", "10\n")
            .file("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc msr\n")
            .tracefs(
                "timerlat osnoise hwlat function nop\n",
                &super::tracing::wanted_events(),
            );
        for cpu in 0..4 {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}");
            f.file(&format!("{base}/cpufreq/scaling_governor"), "performance\n")
                .file(&format!("{base}/cpuidle/state0/name"), "POLL\n")
                .file(&format!("{base}/cpuidle/state0/latency"), "0\n")
                .file(&format!("{base}/cpuidle/state0/disable"), "0\n")
                .file(&format!("{base}/cpuidle/state1/name"), "C1\n")
                .file(&format!("{base}/cpuidle/state1/latency"), "2\n")
                .file(&format!("{base}/cpuidle/state1/disable"), "0\n")
                .file(&format!("{base}/cpuidle/state2/name"), "C6\n")
                .file(&format!("{base}/cpuidle/state2/latency"), "133\n")
                .file(&format!("{base}/cpuidle/state2/disable"), "1\n");
        }
        f
    }

    /// A stock kernel in a VM with default settings: mostly warnings.
    pub fn stock_vm() -> Fixture {
        let mut f = Fixture::empty();
        f.probes.limits = Limits {
            memlock: Limit {
                soft: Some(8 * MIB),
                hard: Some(8 * MIB),
            },
            rtprio: Limit {
                soft: Some(0),
                hard: Some(0),
            },
        };
        f.probes.signature = Some("KVMKVMKVM".into());
        f.file(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        )
        .file("/sys/devices/system/cpu/cpufreq/boost", "1\n")
        .file("/sys/devices/system/cpu/smt/active", "1\n")
        .bytes("/dev/cpu_dma_latency", &2_000_000_000i32.to_ne_bytes())
        .file("/proc/cmdline", "console=ttyS0 quiet\n")
        .file("/sys/devices/system/cpu/isolated", "\n")
        .file("/sys/devices/system/cpu/nohz_full", "(null)\n")
        .file("/proc/irq/24/smp_affinity_list", "0-1\n")
        .file("/proc/1/comm", "init\n")
        .file("/proc/812/comm", "irqbalance\n")
        .file("/proc/1/cgroup", "0::/\n")
        .file("/proc/1/sched", "init (1, #threads: 1)\n")
        .file("/.dockerenv", "")
        .file("/proc/sys/kernel/sched_rt_runtime_us", "950000\n")
        .file("/proc/sys/kernel/sched_rt_period_us", "1000000\n")
        .file("/proc/self/timerslack_ns", "50000\n")
        .file("/proc/self/status", "CapEff:\t0000000000000000\n")
        .file(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        )
        .file(
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        )
        .file(
            "/proc/swaps",
            "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition\t2097148\t0\t-2\n",
        )
        .file("/proc/sys/vm/swappiness", "60\n")
        .file(
            "/proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu tsc hypervisor\nprocessor\t: 1\nflags\t\t: fpu tsc hypervisor\n",
        )
        .file("/proc/self/mounts", "sysfs /sys sysfs rw 0 0\n")
        .file("/proc/filesystems", "nodev\tsysfs\nnodev\ttracefs\n");
        for cpu in 0..2 {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}");
            f.file(&format!("{base}/cpufreq/scaling_governor"), "schedutil\n")
                .file(&format!("{base}/cpuidle/state0/name"), "POLL\n")
                .file(&format!("{base}/cpuidle/state0/latency"), "0\n")
                .file(&format!("{base}/cpuidle/state1/name"), "C6\n")
                .file(&format!("{base}/cpuidle/state1/latency"), "100\n")
                .file(&format!("{base}/cpuidle/state1/disable"), "0\n");
        }
        f
    }
}
