//! The platform: a hypervisor under the kernel, a container around latscope.

use super::{Machine, of};
use crate::report::Check;

/// CPUID hypervisor signatures and the names people know them by.
const SIGNATURES: [(&str, &str); 9] = [
    ("KVMKVMKVM", "KVM"),
    ("Microsoft Hv", "Hyper-V"),
    ("VMwareVMware", "VMware"),
    ("XenVMMXenVMM", "Xen"),
    ("TCGTCGTCGTCG", "QEMU (TCG emulation)"),
    ("VBoxVBoxVBox", "VirtualBox"),
    ("ACRNACRNACRN", "ACRN"),
    ("bhyve bhyve", "bhyve"),
    ("QNXQVMBSQG", "QNX hypervisor"),
];

/// DMI vendors or products that only virtual machines have.
const VM_DMI: [&str; 9] = [
    "QEMU",
    "KVM",
    "VMware",
    "VirtualBox",
    "innotek",
    "Xen",
    "Bochs",
    "Parallels",
    "Amazon EC2",
];

/// The hypervisor latscope runs under, if any: from the CPUID signature, the
/// `hypervisor` CPU flag, `/sys/hypervisor/type` (Xen) or DMI, named as
/// precisely as these allow (`KVM`, `KVM (QEMU Standard PC)`, `hypervisor`).
pub fn hypervisor(m: &Machine) -> Option<String> {
    let flagged = m
        .read("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let signature = m.probes.hypervisor_signature().map(|sig| {
        SIGNATURES
            .iter()
            .find(|(s, _)| sig.starts_with(s))
            .map_or(sig.clone(), |(_, name)| name.to_string())
    });
    let xen = m.read("/sys/hypervisor/type").filter(|t| !t.is_empty());
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| m.read(format!("/sys/class/dmi/id/{f}")))
        .filter(|v| !v.is_empty())
        .collect();
    let dmi = dmi.join(" ");
    let dmi_says_vm = VM_DMI.iter().any(|v| dmi.contains(v))
        || (dmi.contains("Microsoft") && dmi.contains("Virtual Machine"));
    let name = signature.or(xen);
    match (name, flagged || dmi_says_vm) {
        (Some(name), _) if dmi.is_empty() => Some(name),
        (Some(name), _) => Some(format!("{name} ({dmi})")),
        (None, true) if dmi.is_empty() => Some("hypervisor".to_string()),
        (None, true) => Some(dmi),
        (None, false) => None,
    }
}

pub fn virtualization(m: &Machine) -> Check {
    let check = of("platform.virtualization", "virtualization");
    match hypervisor(m) {
        None => check.ok("bare metal", "no hypervisor seen: the kernel owns the CPUs"),
        Some(hv) => check.warn(
            hv.clone(),
            format!(
                "running in a virtual machine ({hv}): the hypervisor adds latency the guest cannot see or control"
            ),
            "measure on bare metal; in a VM, pin the vCPUs to isolated host CPUs and run the host with PREEMPT_RT",
        ),
    }
}

/// The container latscope runs in, as `kind (evidence)`: the first marker found.
fn container_kind(m: &Machine) -> Option<(String, String)> {
    let found = |kind: &str, evidence: &str| Some((kind.to_string(), evidence.to_string()));
    if m.exists("/.dockerenv") {
        return found("docker", "/.dockerenv");
    }
    if m.exists("/run/.containerenv") {
        return found("podman", "/run/.containerenv");
    }
    // systemd-nspawn, lxc and podman set container= for their init.
    let environ = m.read_bytes("/proc/1/environ", 1 << 16).unwrap_or_default();
    if let Some(kind) = environ
        .split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(b"container="))
        .filter(|v| !v.is_empty())
    {
        return found(&String::from_utf8_lossy(kind), "container= of pid 1");
    }
    let cgroup = m.read("/proc/1/cgroup").unwrap_or_default();
    for marker in ["docker", "kubepods", "libpod", "lxc", "containerd"] {
        if cgroup.contains(marker) {
            return found(marker, "cgroup of pid 1");
        }
    }
    // In a PID namespace, /proc/1/sched names init by its pid outside.
    let outer_pid = m.read("/proc/1/sched").and_then(|l| {
        l.split_once('(')?
            .1
            .split(',')
            .next()?
            .trim()
            .parse::<u32>()
            .ok()
    });
    if outer_pid.is_some_and(|pid| pid != 1) {
        return found("PID namespace", "/proc/1/sched");
    }
    None
}

pub fn container(m: &Machine) -> Check {
    let check = of("platform.container", "container");
    match container_kind(m) {
        None => check.ok("none seen", "latscope runs on the host's view of the CPUs"),
        Some((kind, evidence)) => check.warn(
            format!("{kind} ({evidence})"),
            format!(
                "running in a container ({kind}): its cgroup's CPU and real-time bandwidth limits decide when its threads run"
            ),
            "give the container dedicated CPUs and real-time rights (--cpuset-cpus, --cpu-rt-runtime, --ulimit rtprio=99), or measure on the host",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn hypervisors_by_name() {
        let mut f = Fixture::empty();
        f.file("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc\n");
        let c = virtualization(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "bare metal"));
        f.file("/proc/cpuinfo", "flags\t\t: fpu tsc hypervisor\n");
        assert_eq!(hypervisor(&f.machine()).as_deref(), Some("hypervisor"));
        f.file("/sys/class/dmi/id/sys_vendor", "QEMU\n").file(
            "/sys/class/dmi/id/product_name",
            "Standard PC (Q35 + ICH9, 2009)\n",
        );
        assert_eq!(
            hypervisor(&f.machine()).as_deref(),
            Some("QEMU Standard PC (Q35 + ICH9, 2009)")
        );
        f.probes.signature = Some("KVMKVMKVM".into());
        let c = virtualization(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "KVM (QEMU Standard PC (Q35 + ICH9, 2009))");
        assert!(c.meaning.starts_with("running in a virtual machine (KVM"));
        // A signature alone (no DMI, as in Firecracker).
        let mut f = Fixture::empty();
        f.probes.signature = Some("Microsoft Hv".into());
        assert_eq!(hypervisor(&f.machine()).as_deref(), Some("Hyper-V"));
        // DMI alone (a CPU that does not show the flag).
        let f = Fixture::empty();
        f.file("/sys/class/dmi/id/sys_vendor", "Dell Inc.\n");
        assert_eq!(hypervisor(&f.machine()), None);
        f.file("/sys/class/dmi/id/sys_vendor", "VMware, Inc.\n");
        assert_eq!(hypervisor(&f.machine()).as_deref(), Some("VMware, Inc."));
    }

    #[test]
    fn container_markers() {
        let f = Fixture::empty();
        f.file("/proc/1/cgroup", "0::/init.scope\n")
            .file("/proc/1/sched", "systemd (1, #threads: 1)\n");
        let c = container(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "none seen"));
        f.file("/proc/1/sched", "bash (4711, #threads: 1)\n");
        assert_eq!(
            container(&f.machine()).value,
            "PID namespace (/proc/1/sched)"
        );
        f.file("/proc/1/cgroup", "0::/kubepods/besteffort/pod1\n");
        assert_eq!(container(&f.machine()).value, "kubepods (cgroup of pid 1)");
        f.bytes("/proc/1/environ", b"PATH=/bin\0container=lxc\0");
        assert_eq!(container(&f.machine()).value, "lxc (container= of pid 1)");
        f.file("/run/.containerenv", "");
        assert_eq!(container(&f.machine()).value, "podman (/run/.containerenv)");
        f.file("/.dockerenv", "");
        let c = container(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "docker (/.dockerenv)")
        );
    }
}
