use super::super::fixture::Fixture;
use super::*;
use crate::doctor::machine::Limit;
use crate::report::Verdict;
use crate::rt::sched::RealtimeProbe;

const ROOT_CAPS: &str = "CapEff:\t000001ffffffffff\n";
const NO_CAPS: &str = "CapEff:\t0000000000000000\n";

/// A container's view on a hybrid host: cgroup v1 cpu at the pod's path.
fn in_a_pod(status: &str, rt_runtime: &str) -> Fixture {
    let f = Fixture::empty();
    f.file("/proc/self/status", status)
        .file(
            "/proc/self/cgroup",
            "3:cpuset:/\n2:cpu,cpuacct:/machine.slice/libpod-1\n0::/\n",
        )
        .file(
            "/proc/self/mountinfo",
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
        )
        .file(
            "/sys/fs/cgroup/cpu,cpuacct/machine.slice/libpod-1/cpu.rt_runtime_us",
            rt_runtime,
        );
    f
}

fn refused(f: &mut Fixture) {
    f.probes.realtime = RealtimeProbe {
        fifo: Err(libc::EPERM),
        deadline: Err(libc::EPERM),
    };
}

#[test]
fn a_cgroup_without_a_real_time_budget_is_named_even_with_cap_sys_nice() {
    let mut f = in_a_pod(ROOT_CAPS, "0\n");
    refused(&mut f);
    let c = realtime(&f.machine());
    assert_eq!(c.verdict, Verdict::Bad);
    assert_eq!(c.value, "SCHED_FIFO refused (EPERM)");
    assert!(
        c.meaning.contains(
            "SCHED_FIFO refused (EPERM): /sys/fs/cgroup/cpu,cpuacct/machine.slice/libpod-1/cpu.rt_runtime_us is 0"
        ),
        "{}",
        c.meaning
    );
    let fix = c.fix.unwrap();
    assert!(fix.starts_with("podman: --cpu-rt-runtime=950000; Docker: --cpu-rt-runtime=950000"));
    assert!(fix.contains("Kubernetes:"));
    // The same words for a test that ran at policy other.
    let line = fifo_refusal(&f.machine()).unwrap();
    assert!(line.starts_with("SCHED_FIFO refused (EPERM): /sys/fs/cgroup/cpu,cpuacct/"));
    // With a budget the cgroup is not blamed: nothing known is left.
    let mut f = in_a_pod(ROOT_CAPS, "950000\n");
    refused(&mut f);
    assert!(refusal_causes(&f.machine(), false).is_empty());
    assert!(
        realtime(&f.machine())
            .meaning
            .contains("refused (EPERM) for a reason latscope does not see")
    );
}

#[test]
fn the_priority_limit_and_the_capability() {
    let mut f = in_a_pod(NO_CAPS, "950000\n");
    refused(&mut f);
    f.probes.limits.rtprio = Limit {
        soft: Some(0),
        hard: Some(0),
    };
    let causes = refusal_causes(&f.machine(), false);
    assert_eq!(causes.len(), 1);
    assert_eq!(
        causes[0].what,
        "RLIMIT_RTPRIO is 0 and CAP_SYS_NICE is missing"
    );
    assert!(causes[0].fix.starts_with("podman: --ulimit rtprio=99"));
    // A limit above 0 lets SCHED_FIFO through; SCHED_DEADLINE still needs the capability.
    let deadline = refusal_causes(&f.machine(), true);
    assert!(deadline[0].what.starts_with("CAP_SYS_NICE is missing"));
    assert!(deadline[0].fix.starts_with("podman: --cap-add=SYS_NICE"));
    f.probes.realtime.fifo = Ok(());
    let c = realtime(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (
            Verdict::Warn,
            "SCHED_FIFO granted; SCHED_DEADLINE refused (EPERM)"
        )
    );
    assert!(c.fix.unwrap().starts_with("podman: --cap-add=SYS_NICE"));
}

#[test]
fn deadline_needs_the_whole_root_domain() {
    let mut f = in_a_pod(&format!("{ROOT_CAPS}Cpus_allowed_list:\t2-3\n"), "950000\n");
    f.file("/sys/devices/system/cpu/online", "0-7\n");
    f.probes.realtime.deadline = Err(libc::EPERM);
    let causes = refusal_causes(&f.machine(), true);
    assert_eq!(causes.len(), 1);
    assert!(
        causes[0]
            .what
            .starts_with("this process may run on CPU 2-3 of 0-7")
    );
    f.file(
        "/proc/self/status",
        &format!("{ROOT_CAPS}Cpus_allowed_list:\t0-7\n"),
    );
    assert!(refusal_causes(&f.machine(), true).is_empty());
}

#[test]
fn interrupts_on_the_pods_measured_cpus() {
    let f = Fixture::empty();
    f.file("/proc/self/status", "Cpus_allowed_list:\t0-7\n")
        .file("/sys/devices/system/cpu/online", "0-7\n")
        .file("/proc/irq/24/smp_affinity_list", "0-7\n");
    assert_eq!(
        pod_irqs(&f.machine()).value,
        "this process may use every CPU"
    );
    // A pod on CPU 2-5: 2 keeps housekeeping, 3-5 are measured.
    f.file("/proc/self/status", "Cpus_allowed_list:\t2-5\n");
    let c = pod_irqs(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Warn, "IRQ 24 on measured CPU 3-5")
    );
    assert!(
        c.fix
            .unwrap()
            .contains("irq-load-balancing.crio.io: \"disable\"")
    );
    f.file("/proc/irq/24/smp_affinity_list", "0-2\n")
        .file("/proc/irq/25/effective_affinity_list", "6\n");
    let c = pod_irqs(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Ok, "none on measured CPU 3-5")
    );
}

#[test]
fn the_pod_check_says_whether_its_cpuset_is_exclusive() {
    let f = Fixture::empty();
    f.file("/proc/self/status", "Cpus_allowed_list:\t2-5\n")
        .file("/sys/devices/system/cpu/online", "0-7\n")
        .file("/proc/self/cgroup", "3:cpuset:/machine.slice/libpod-1\n")
        .file(
            "/proc/self/mountinfo",
            "34 31 0:31 /machine.slice/libpod-1 /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
        )
        .file("/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive", "0\n");
    let c = pod_irqs(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Ok, "none on measured CPU 3-5; cpuset shared")
    );
    assert!(
        c.meaning.contains(
            "the cpuset is not exclusive (/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive = 0)"
        ),
        "{}",
        c.meaning
    );
    f.file("/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive", "1\n")
        .file("/proc/irq/24/smp_affinity_list", "0-7\n");
    let c = pod_irqs(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (
            Verdict::Warn,
            "IRQ 24 on measured CPU 3-5; cpuset exclusive"
        )
    );
    assert!(c.meaning.ends_with("the cpuset is exclusive (/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive = 1): no other cgroup may be given these CPUs"), "{}", c.meaning);
}

#[test]
fn granted_is_ok() {
    let f = in_a_pod(ROOT_CAPS, "0\n");
    let c = realtime(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Ok, "SCHED_FIFO and SCHED_DEADLINE granted")
    );
    assert_eq!(fifo_refusal(&f.machine()), None);
}

#[test]
fn timer_migration_matters_on_non_rt_kernels() {
    let mut f = Fixture::empty();
    assert_eq!(timer_migration(&f.machine()).value, "not present");
    f.file("/proc/sys/kernel/timer_migration", "1\n");
    let c = timer_migration(&f.machine());
    assert_eq!(c.verdict, Verdict::Warn);
    assert_eq!(
        c.fix.unwrap(),
        "sysctl kernel.timer_migration=0 (set on the host: containers share the host's value)"
    );
    f.probes.uname.version = "#1 SMP PREEMPT_RT".into();
    assert_eq!(timer_migration(&f.machine()).verdict, Verdict::Ok);
    f.probes.uname.version = "#1 SMP".into();
    f.file("/proc/sys/kernel/timer_migration", "0\n");
    assert_eq!(timer_migration(&f.machine()).verdict, Verdict::Ok);
}

#[test]
fn quota_and_qos_as_seen_from_inside() {
    let f = Fixture::empty();
    assert_eq!(quota(&f.machine()).verdict, Verdict::Ok);
    f.file(
        "/proc/self/cgroup",
        "0::/kubepods.slice/kubepods-burstable.slice/pod1\n",
    )
    .file(
        "/proc/self/mountinfo",
        "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
    )
    .file(
        "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/pod1/cpu.max",
        "max 100000\n",
    );
    let c = quota(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Warn, "no quota (Burstable pod)")
    );
    f.file("/proc/self/cgroup", "0::/kubepods.slice/pod2\n")
        .file(
            "/sys/fs/cgroup/kubepods.slice/pod2/cpu.max",
            "200000 100000\n",
        );
    let c = quota(&f.machine());
    assert_eq!(c.verdict, Verdict::Warn);
    assert_eq!(
        c.value,
        "/sys/fs/cgroup/kubepods.slice/pod2/cpu.max = 200000 100000 (Guaranteed pod)"
    );
    assert!(c.fix.unwrap().contains("cpu-quota.crio.io: \"disable\""));
    f.file("/sys/fs/cgroup/kubepods.slice/pod2/cpu.max", "max 100000\n");
    let c = quota(&f.machine());
    assert_eq!(
        (c.verdict, c.value.as_str()),
        (Verdict::Ok, "no quota (Guaranteed pod)")
    );
    // cgroup v1: cpu.cfs_quota_us.
    let f = in_a_pod(ROOT_CAPS, "0\n");
    f.file(
        "/sys/fs/cgroup/cpu,cpuacct/machine.slice/libpod-1/cpu.cfs_quota_us",
        "50000\n",
    );
    assert_eq!(
        quota(&f.machine()).value,
        "/sys/fs/cgroup/cpu,cpuacct/machine.slice/libpod-1/cpu.cfs_quota_us = 50000"
    );
}
