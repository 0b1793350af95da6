//! CPU isolation: which CPUs are kept free of other tasks, of the scheduler
//! tick, of RCU callbacks and of interrupts.

use super::{Machine, first_few, of};
use crate::report::Check;
use crate::units::cpu_list;
use crate::units::parse_cpu_list;

const ISOLATED: &str = "/sys/devices/system/cpu/isolated";
const NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";
const ISOLATION_FIX: &str = "boot with isolcpus=domain,managed_irq,CPUS nohz_full=CPUS rcu_nocbs=CPUS and run the real-time work there (e.g. latscope timer --cpus CPUS)";

/// A CPU list that may start with flags (`isolcpus=domain,managed_irq,2-3`,
/// `nohz_full=(null)`): the CPUs, empty when none.
fn cpus_of(text: &str) -> Vec<usize> {
    let list: Vec<&str> = text
        .split(',')
        .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    parse_cpu_list(&list.join(",")).unwrap_or_default()
}

/// CPUs isolated from the scheduler (`/sys/devices/system/cpu/isolated`, or
/// `isolcpus=` when the file is missing).
pub fn isolated_cpus(m: &Machine) -> Vec<usize> {
    m.read(ISOLATED)
        .or_else(|| m.cmdline_value("isolcpus"))
        .map(|t| cpus_of(&t))
        .unwrap_or_default()
}

/// CPUs without the periodic tick when busy: the nohz_full file, else the boot parameter.
fn nohz_full_cpus(m: &Machine) -> Vec<usize> {
    m.read(NOHZ_FULL)
        .or_else(|| m.cmdline_value("nohz_full"))
        .map(|t| cpus_of(&t))
        .unwrap_or_default()
}

pub fn isolcpus(m: &Machine) -> Check {
    let check = of("isolation.isolcpus", "isolated CPUs");
    let isolated = isolated_cpus(m);
    if isolated.is_empty() {
        check.warn(
            "none",
            "no CPU is isolated: real-time threads share their CPU with every other task and kernel thread",
            ISOLATION_FIX,
        )
    } else {
        let list = cpu_list(&isolated);
        check.ok(
            format!("CPU {list}"),
            format!("CPU {list} run only the tasks placed there on purpose"),
        )
    }
}

/// Which isolated CPUs a per-CPU feature misses, as a check: ok when it covers them all.
fn covers_isolated(
    check: super::CheckStart,
    m: &Machine,
    covered: &[usize],
    feature: &str,
    missing_means: &str,
    fix: &str,
) -> Check {
    let isolated = isolated_cpus(m);
    let value = if covered.is_empty() {
        "none".to_string()
    } else {
        format!("CPU {}", cpu_list(covered))
    };
    let missing: Vec<usize> = isolated
        .iter()
        .copied()
        .filter(|c| !covered.contains(c))
        .collect();
    if isolated.is_empty() && covered.is_empty() {
        check.warn(value, format!("no CPU has {feature}: {missing_means}"), fix)
    } else if missing.is_empty() {
        check.ok(value, format!("every isolated CPU has {feature}"))
    } else {
        check.warn(
            format!("{value} (isolated CPU {} without)", cpu_list(&missing)),
            format!(
                "isolated CPU {} without {feature}: {missing_means}",
                cpu_list(&missing)
            ),
            fix,
        )
    }
}

pub fn nohz_full(m: &Machine) -> Check {
    covers_isolated(
        of("isolation.nohz_full", "tickless CPUs (nohz_full)"),
        m,
        &nohz_full_cpus(m),
        "nohz_full",
        "the scheduler tick interrupts a busy real-time thread every few milliseconds",
        "boot with nohz_full=CPUS (the isolated ones; needs CONFIG_NO_HZ_FULL)",
    )
}

pub fn rcu_nocbs(m: &Machine) -> Check {
    // nohz_full CPUs offload their RCU callbacks too.
    let mut covered = m
        .cmdline_value("rcu_nocbs")
        .map(|t| cpus_of(&t))
        .unwrap_or_default();
    covered.extend(nohz_full_cpus(m));
    covered.sort_unstable();
    covered.dedup();
    covers_isolated(
        of("isolation.rcu_nocbs", "RCU callback offload (rcu_nocbs)"),
        m,
        &covered,
        "its RCU callbacks offloaded",
        "RCU callbacks run in softirq on the CPU itself and delay its threads",
        "boot with rcu_nocbs=CPUS (the isolated ones; nohz_full implies it)",
    )
}

/// The CPUs an interrupt is delivered to: the effective affinity where the
/// kernel shows it, else the requested one.
fn irq_cpus(m: &Machine, irq: &str) -> Vec<usize> {
    m.read(format!("/proc/irq/{irq}/effective_affinity_list"))
        .or_else(|| m.read(format!("/proc/irq/{irq}/smp_affinity_list")))
        .map(|t| cpus_of(&t))
        .unwrap_or_default()
}

/// The machine's interrupt numbers (the directories of /proc/irq).
fn irq_numbers(m: &Machine) -> Vec<String> {
    m.list("/proc/irq")
        .into_iter()
        .filter(|n| n.parse::<u32>().is_ok())
        .collect()
}

/// Of `irqs`, those delivered to any of `cpus`.
fn delivered_to(m: &Machine, irqs: &[String], cpus: &[usize]) -> Vec<String> {
    irqs.iter()
        .filter(|irq| irq_cpus(m, irq).iter().any(|c| cpus.contains(c)))
        .cloned()
        .collect()
}

/// The interrupts delivered to any of `cpus`.
pub(super) fn irqs_delivered_to(m: &Machine, cpus: &[usize]) -> Vec<String> {
    delivered_to(m, &irq_numbers(m), cpus)
}

pub fn irq_affinity(m: &Machine) -> Check {
    let check = of("isolation.irq_affinity", "IRQ affinity");
    let isolated = isolated_cpus(m);
    if isolated.is_empty() {
        return check.ok(
            "no isolated CPUs to keep interrupts off",
            "interrupts may run on every CPU; with no CPU isolated there is none to protect",
        );
    }
    let irqs = irq_numbers(m);
    let on_isolated = delivered_to(m, &irqs, &isolated);
    let housekeeping: Vec<usize> = m
        .cpu_dirs()
        .into_iter()
        .filter(|c| !isolated.contains(c))
        .collect();
    if on_isolated.is_empty() {
        check.ok(
            format!(
                "{} IRQs, none on isolated CPU {}",
                irqs.len(),
                cpu_list(&isolated)
            ),
            "no interrupt is delivered to an isolated CPU",
        )
    } else {
        check.warn(
            format!(
                "IRQ {} on isolated CPU {}",
                first_few(&on_isolated, 6),
                cpu_list(&isolated)
            ),
            "interrupts delivered to an isolated CPU preempt its real-time threads",
            format!(
                "echo {} > /proc/irq/N/smp_affinity_list for each (or boot with irqaffinity={0})",
                cpu_list(&housekeeping)
            ),
        )
    }
}

/// Pids of processes whose command name is `comm`.
fn pids_named(m: &Machine, comm: &str) -> Vec<String> {
    m.list("/proc")
        .into_iter()
        .filter(|p| p.parse::<u32>().is_ok())
        .filter(|p| m.read(format!("/proc/{p}/comm")).as_deref() == Some(comm))
        .collect()
}

pub fn irqbalance(m: &Machine) -> Check {
    let check = of("isolation.irqbalance", "irqbalance");
    let pids = pids_named(m, "irqbalance");
    if pids.is_empty() {
        check.ok("not running", "interrupts stay where they were put")
    } else {
        check.warn(
            format!("running (pid {})", first_few(&pids, 3)),
            "irqbalance moves interrupts between CPUs at run time, onto the real-time CPUs too unless told not to",
            "systemctl disable --now irqbalance, or IRQBALANCE_BANNED_CPULIST=<real-time CPUs> in its config",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn cpu_lists_with_flags() {
        assert_eq!(cpus_of("domain,managed_irq,2-3,5"), [2, 3, 5]);
        assert_eq!(cpus_of("(null)"), Vec::<usize>::new());
        assert_eq!(cpus_of(""), Vec::<usize>::new());
    }

    #[test]
    fn isolation_from_sysfs_or_the_command_line() {
        let f = Fixture::empty();
        let c = isolcpus(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "none"));
        assert_eq!(c.fix.as_deref(), Some(ISOLATION_FIX));
        f.file("/proc/cmdline", "ro isolcpus=managed_irq,1-2 -- isolcpus=3");
        let c = isolcpus(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "CPU 1-2"));
        f.file(ISOLATED, "3\n");
        assert_eq!(isolcpus(&f.machine()).value, "CPU 3");
    }

    #[test]
    fn tick_and_rcu_cover_the_isolated_cpus() {
        let f = Fixture::empty();
        f.file(NOHZ_FULL, "(null)\n");
        let c = nohz_full(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "none"));
        f.file(ISOLATED, "2-3\n").file(NOHZ_FULL, "3\n");
        let c = nohz_full(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "CPU 3 (isolated CPU 2 without)");
        let c = rcu_nocbs(&f.machine());
        assert_eq!(c.value, "CPU 3 (isolated CPU 2 without)");
        f.file("/proc/cmdline", "rcu_nocbs=2");
        let c = rcu_nocbs(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "CPU 2-3"));
        f.file(NOHZ_FULL, "2-3\n");
        assert_eq!(nohz_full(&f.machine()).verdict, Verdict::Ok);
    }

    #[test]
    fn interrupts_on_isolated_cpus() {
        let f = Fixture::empty();
        f.file("/proc/irq/24/smp_affinity_list", "0-3\n");
        assert_eq!(irq_affinity(&f.machine()).verdict, Verdict::Ok);
        for cpu in 0..4 {
            f.dir(&format!("/sys/devices/system/cpu/cpu{cpu}"));
        }
        f.file(ISOLATED, "2-3\n")
            .file("/proc/irq/default_smp_affinity", "f\n")
            .file("/proc/irq/0/smp_affinity_list", "0\n")
            .file("/proc/irq/24/effective_affinity_list", "1\n");
        let c = irq_affinity(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok, "effective affinity 1 only: {c:?}");
        assert_eq!(c.value, "2 IRQs, none on isolated CPU 2-3");
        f.file("/proc/irq/25/smp_affinity_list", "0-3\n");
        let c = irq_affinity(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "IRQ 25 on isolated CPU 2-3");
        assert!(
            c.fix
                .unwrap()
                .starts_with("echo 0-1 > /proc/irq/N/smp_affinity_list")
        );
    }

    #[test]
    fn irqbalance_running_or_not() {
        let f = Fixture::empty();
        f.file("/proc/1/comm", "init\n")
            .file("/proc/self/comm", "irqbalance\n");
        assert_eq!(irqbalance(&f.machine()).verdict, Verdict::Ok);
        f.file("/proc/433/comm", "irqbalance\n");
        let c = irqbalance(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "running (pid 433)")
        );
    }
}
