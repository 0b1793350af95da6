//! Real-time scheduling tried, not inferred: a probe thread asks for
//! SCHED_FIFO and SCHED_DEADLINE (rt::sched::probe_realtime) and, when the
//! kernel refuses, the doctor names why from what this process can see:
//! its cgroup's real-time budget (cgroup v1 `cpu.rt_runtime_us`), its
//! RLIMIT_RTPRIO and CAP_SYS_NICE, and for SCHED_DEADLINE its affinity.
//! A container or pod is where these usually bite (CAP_SYS_NICE held,
//! yet the cgroup has no budget), so each fix is given in podman's,
//! Docker's and Kubernetes' terms.
//!
//! Also the pod's other settings that shape latency without refusing
//! anything: a CPU quota, the QoS class, `kernel.timer_migration`.

use super::sched::{CAP_SYS_NICE, has_capability};
use super::{Machine, of};
use crate::report::Check;
use crate::rt::cgroup;
use crate::units::cpu_list;

/// One reason for a refusal, and its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub what: String,
    pub fix: String,
}

const RT_BUDGET_FIX: &str = "podman: --cpu-rt-runtime=950000; Docker: --cpu-rt-runtime=950000 (and dockerd --cpu-rt-runtime=950000 for the parent cgroup); Kubernetes: no pod field sets it, so on cgroup v1 give the pod's cgroup and its parents a budget on the node (echo 950000 > .../cpu.rt_runtime_us) or run the node on cgroup v2, which has no real-time budget per cgroup";
const RTPRIO_FIX: &str = "podman: --ulimit rtprio=99 (or --cap-add=SYS_NICE); Docker: --ulimit rtprio=99 (or --cap-add=SYS_NICE); Kubernetes: securityContext.capabilities.add: [\"SYS_NICE\"] (or privileged: true)";
const CAP_FIX: &str = "podman: --cap-add=SYS_NICE; Docker: --cap-add=SYS_NICE; Kubernetes: securityContext.capabilities.add: [\"SYS_NICE\"] (or privileged: true)";

/// The errno's name: `EPERM`.
fn errno_name(errno: i32) -> String {
    format!("{:?}", nix::errno::Errno::from_raw(errno))
}

/// This process's cgroup v1 `cpu.rt_runtime_us`, with the file's path.
fn cgroup_rt_runtime(m: &Machine) -> Option<(String, i64)> {
    let dir = cgroup::v1(m.root(), "cpu")?;
    let runtime = dir.read("cpu.rt_runtime_us")?.parse().ok()?;
    Some((dir.shown("cpu.rt_runtime_us"), runtime))
}

/// Why SCHED_FIFO (`deadline` false) or SCHED_DEADLINE is refused, as far
/// as this process can see; empty when none of the known causes holds.
pub fn refusal_causes(m: &Machine, deadline: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let capable = has_capability(m, CAP_SYS_NICE);
    if !deadline && let Some((file, 0)) = cgroup_rt_runtime(m) {
        causes.push(Cause {
            what: format!(
                "{file} is 0: this cgroup has no real-time budget, and the kernel refuses SCHED_FIFO to its tasks whatever their privileges"
            ),
            fix: RT_BUDGET_FIX.to_string(),
        });
    }
    if !deadline && !capable && m.probes.limits().rtprio.soft == Some(0) {
        causes.push(Cause {
            what: "RLIMIT_RTPRIO is 0 and CAP_SYS_NICE is missing".to_string(),
            fix: RTPRIO_FIX.to_string(),
        });
    }
    if deadline && !capable {
        causes.push(Cause {
            what: "CAP_SYS_NICE is missing (the kernel admits SCHED_DEADLINE only with it)".into(),
            fix: CAP_FIX.to_string(),
        });
    }
    let allowed = m
        .read("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(crate::units::parse_cpu_list);
    let online = m.cpus_online();
    if deadline && let Some(allowed) = allowed.filter(|a| online.iter().any(|c| !a.contains(c))) {
        causes.push(Cause {
            what: format!(
                "this process may run on CPU {} of {}: the kernel admits SCHED_DEADLINE only for a task allowed on every CPU of its root domain",
                cpu_list(&allowed),
                cpu_list(&online)
            ),
            fix: "leave the CPU set whole (no --cpuset-cpus or taskset) or make the CPUs an isolated cpuset partition (cgroup v2 cpuset.cpus.partition=isolated); the tests' SCHED_FIFO does not need it".into(),
        });
    }
    causes
}

/// What a refusal of `errno` comes from, in one sentence with the fixes.
fn explain(m: &Machine, errno: i32, deadline: bool) -> String {
    let causes = refusal_causes(m, deadline);
    if causes.is_empty() {
        return format!(
            "refused ({}) for a reason latscope does not see (a seccomp profile or a security module may deny it)",
            errno_name(errno)
        );
    }
    let parts: Vec<String> = causes
        .iter()
        .map(|c| format!("{} (fix: {})", c.what, c.fix))
        .collect();
    format!("refused ({}): {}", errno_name(errno), parts.join("; and "))
}

/// The one line a test run at policy other gives for it, when a real-time
/// policy is refused here (None when SCHED_FIFO is granted).
pub fn fifo_refusal(m: &Machine) -> Option<String> {
    let errno = m.probes.realtime().fifo.err()?;
    Some(format!("SCHED_FIFO {}", explain(m, errno, false)))
}

pub fn realtime(m: &Machine) -> Check {
    let check = of("sched.realtime", "real-time scheduling (tried)");
    let probe = m.probes.realtime();
    match (probe.fifo, probe.deadline) {
        (Ok(()), Ok(())) => check.ok(
            "SCHED_FIFO and SCHED_DEADLINE granted",
            "a thread of this process was given real-time scheduling: the tests run at a real-time policy",
        ),
        (Ok(()), Err(errno)) => check.warn(
            format!("SCHED_FIFO granted; SCHED_DEADLINE refused ({})", errno_name(errno)),
            format!(
                "the tests run at SCHED_FIFO; those asked for --policy deadline cannot: SCHED_DEADLINE {}",
                explain(m, errno, true)
            ),
            refusal_causes(m, true).first().map_or_else(
                || "use SCHED_FIFO (the default)".to_string(),
                |c| c.fix.clone(),
            ),
        ),
        (Err(errno), _) => check.bad(
            format!("SCHED_FIFO refused ({})", errno_name(errno)),
            format!(
                "the tests run at policy other, where any task can delay them: SCHED_FIFO {}",
                explain(m, errno, false)
            ),
            refusal_causes(m, false).first().map_or_else(
                || crate::rt::sched::RT_PRIVILEGE_FIX.to_string(),
                |c| c.fix.clone(),
            ),
        ),
    }
}

pub fn timer_migration(m: &Machine) -> Check {
    let check = of("sched.timer_migration", "timer migration");
    let rt = super::kernel::preempt_model(m).rt;
    match m.read("/proc/sys/kernel/timer_migration").as_deref() {
        Some("1") if !rt => check.warn(
            "on (kernel.timer_migration = 1)",
            "this kernel may move the timers of an idle CPU to a busy one: their expiry then interrupts the measured CPUs",
            "sysctl kernel.timer_migration=0 (set on the host: containers share the host's value)",
        ),
        Some(value) => check.ok(
            format!("kernel.timer_migration = {value}"),
            if rt {
                "a PREEMPT_RT kernel runs timer expiry in threads: migration does not add latency to real-time tasks"
            } else {
                "timers stay on the CPU that armed them"
            },
        ),
        None => check.ok("not present", "this kernel has no timer migration"),
    }
}

/// The pod's QoS class as its cgroup path shows it (kubepods only).
fn qos_class(m: &Machine) -> Option<&'static str> {
    let cgroups = m.read("/proc/self/cgroup")?;
    if !cgroups.contains("kubepods") {
        return None;
    }
    Some(if cgroups.contains("besteffort") {
        "BestEffort"
    } else if cgroups.contains("burstable") {
        "Burstable"
    } else {
        "Guaranteed"
    })
}

/// The CPU quota of this process's cgroup: v2 `cpu.max` (nearest set),
/// else v1 `cpu.cfs_quota_us`; None when there is none.
fn cpu_quota(m: &Machine) -> Option<String> {
    if let Some((file, max)) = cgroup::v2(m.root()).and_then(|d| cgroup::nearest(&d, &["cpu.max"]))
        && !max.starts_with("max")
    {
        return Some(format!("{file} = {max}"));
    }
    let dir = cgroup::v1(m.root(), "cpu")?;
    let quota = dir.read("cpu.cfs_quota_us")?;
    (quota != "-1").then(|| format!("{} = {quota}", dir.shown("cpu.cfs_quota_us")))
}

pub fn quota(m: &Machine) -> Check {
    let check = of("platform.cpu_quota", "CPU quota and QoS");
    let qos = qos_class(m);
    let fix = "podman/Docker: leave out --cpus and --cpu-quota; Kubernetes: a Guaranteed pod (requests = limits, whole CPUs) with the annotation cpu-quota.crio.io: \"disable\" and the real-time RuntimeClass";
    match (cpu_quota(m), qos) {
        (Some(quota), _) => check.warn(
            format!("{quota}{}", qos.map(|q| format!(" ({q} pod)")).unwrap_or_default()),
            "the cgroup's CPU quota stops its threads once their share of a period is used up: a stall of the rest of the period that the tests measure as latency",
            fix,
        ),
        (None, Some(q)) if q != "Guaranteed" => check.warn(
            format!("no quota ({q} pod)"),
            "only Guaranteed pods with whole CPUs get exclusive CPUs from the static CPU manager: this pod shares its CPUs",
            fix,
        ),
        (None, qos) => check.ok(
            format!("no quota{}", qos.map(|q| format!(" ({q} pod)")).unwrap_or_default()),
            "the cgroup does not stop its threads for a CPU quota",
        ),
    }
}

/// Interrupts delivered to the CPUs a pod measures (rt::pod_cpus): what
/// CRI-O's `irq-load-balancing.crio.io: "disable"` should have prevented.
/// Only where this process has a part of the machine's CPUs: on the whole
/// machine `isolation.irq_affinity` says it. Also whether the cgroup's
/// cpuset is exclusive, which decides nothing here but tells whether the
/// kernel or only the scheduler's bookkeeping keeps other work off.
pub fn pod_irqs(m: &Machine) -> Check {
    let check = of("platform.pod_irqs", "IRQs on the pod's CPUs");
    let pod = crate::rt::pod_cpus::choose(&crate::rt::pod_cpus::read(m.root()));
    let online = m.cpus_online();
    if pod.usable.is_empty() || online.iter().all(|c| pod.usable.contains(c)) {
        return check.ok(
            "this process may use every CPU",
            "no CPU subset of a pod to keep interrupts off (isolation.irq_affinity looks at the isolated CPUs)",
        );
    }
    let (cpuset, cpuset_meaning) = cpuset_sharing(m);
    let on_measured = super::isolation::irqs_delivered_to(m, &pod.measured);
    if on_measured.is_empty() {
        return check.ok(
            format!("none on measured CPU {}{cpuset}", cpu_list(&pod.measured)),
            format!("no interrupt is delivered to the CPUs this process measures{cpuset_meaning}"),
        );
    }
    check.warn(
        format!(
            "IRQ {} on measured CPU {}{cpuset}",
            super::first_few(&on_measured, 6),
            cpu_list(&pod.measured)
        ),
        format!("interrupts are delivered to the CPUs this pod measures and preempt its threads: irq-load-balancing was not disabled for them{cpuset_meaning}"),
        "Kubernetes (CRI-O): the annotation irq-load-balancing.crio.io: \"disable\" on a Guaranteed pod with the performance profile's runtimeClassName; podman/Docker: on the host, move the interrupts to the other CPUs (/proc/irq/N/smp_affinity_list)",
    )
}

/// The cgroup's cpuset exclusivity as a suffix of the pod check's value
/// and a sentence of its meaning (both empty where it cannot be read).
fn cpuset_sharing(m: &Machine) -> (String, String) {
    let Some(found) = cgroup::cpuset_exclusivity(m.root()) else {
        return (String::new(), String::new());
    };
    let place = format!("{} = {}", found.file, found.value);
    if found.exclusive {
        (
            "; cpuset exclusive".into(),
            format!("; the cpuset is exclusive ({place}): no other cgroup may be given these CPUs"),
        )
    } else {
        (
            "; cpuset shared".into(),
            format!(
                "; the cpuset is not exclusive ({place}): the kernel lets other cgroups' tasks run on these CPUs, only the CPU manager's bookkeeping (Kubernetes' static policy) or the host's own cpusets keep them off"
            ),
        )
    }
}

#[cfg(test)]
#[path = "realtime_tests.rs"]
mod tests;
