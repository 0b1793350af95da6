//! The Report's `SysInfo` collected through the doctor's readers: what a
//! report says of the machine is what `latscope doctor` says. The type is in
//! the model; collecting it is the doctor's (rt/ does not import the doctor).

use super::Machine;
use crate::report::SysInfo;

// An inherent impl of the model's type, here with the readers it needs, so
// that `SysInfo::collect()` reads as before.
impl SysInfo {
    /// The facts of the machine latscope runs on.
    pub fn collect() -> SysInfo {
        SysInfo::of(&Machine::live())
    }

    /// The facts of `machine`, read by the doctor's checks (one reader for
    /// both: what a report says of the machine is what `latscope doctor` says).
    pub fn of(machine: &Machine) -> SysInfo {
        let uname = machine.probes.uname();
        let (rt_runtime_us, rt_period_us) = super::sched::rt_bandwidth(machine);
        SysInfo {
            preempt_rt: super::kernel::preempt_model(machine).rt,
            clocksource: super::kernel::current_clocksource(machine),
            cpus_online: machine.cpus_online().len(),
            cpus_allowed: crate::rt::sched::allowed_cpus(),
            cpus_isolated: crate::units::cpu_list(&super::isolation::isolated_cpus(machine)),
            virtualization: super::platform::hypervisor(machine),
            rt_runtime_us,
            rt_period_us,
            checks: super::run(machine),
            sysname: uname.sysname,
            nodename: uname.nodename,
            release: uname.release,
            version: uname.version,
            machine: uname.machine,
            cpu_topology: cpu_topology(machine),
            clocksources_available: super::kernel::available_clocksources(machine),
            kernel_cmdline: machine.read("/proc/cmdline"),
        }
    }
}

/// Every `cpuN` of sysfs: online or not (cpu0 often has no `online` file:
/// it cannot go offline), and for an online CPU its core, package and the
/// CPUs that share its core.
fn cpu_topology(machine: &Machine) -> Vec<crate::report::CpuPlace> {
    const CPU_DIR: &str = "/sys/devices/system/cpu";
    machine
        .cpu_dirs()
        .into_iter()
        .map(|cpu| {
            let read = |name: &str| machine.read(format!("{CPU_DIR}/cpu{cpu}/{name}"));
            let online = read("online").is_none_or(|v| v == "1");
            let number = |name: &str| read(name).and_then(|v| v.parse().ok()).filter(|_| online);
            crate::report::CpuPlace {
                cpu,
                online,
                core_id: number("topology/core_id"),
                package_id: number("topology/physical_package_id"),
                thread_siblings: read("topology/thread_siblings_list")
                    .filter(|_| online)
                    .and_then(|list| crate::units::parse_cpu_list(&list))
                    .unwrap_or_default(),
            }
        })
        .collect()
}
