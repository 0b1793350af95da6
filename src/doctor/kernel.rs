//! The kernel: its preemption model and the clocksource every time stamp
//! comes from.

use super::{Machine, of};
use crate::report::Check;

/// How preemptible the kernel is, from `/sys/kernel/realtime`, the uname
/// version string and the kernel's config in /boot when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreemptModel {
    pub rt: bool,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, `PREEMPT`, `PREEMPT_VOLUNTARY`, `PREEMPT_NONE`.
    pub name: String,
}

/// `CONFIG_NAME=value` of /boot/config-RELEASE, if that file is there.
fn boot_config(m: &Machine, release: &str, name: &str) -> Option<String> {
    let text = m.read(format!("/boot/config-{release}"))?;
    let prefix = format!("{name}=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
}

pub fn preempt_model(m: &Machine) -> PreemptModel {
    let uname = m.probes.uname();
    let words: Vec<&str> = uname.version.split_whitespace().collect();
    let config_on = |name| boot_config(m, &uname.release, name).as_deref() == Some("y");
    let rt = m.read("/sys/kernel/realtime").as_deref() == Some("1")
        || words.contains(&"PREEMPT_RT")
        || config_on("CONFIG_PREEMPT_RT");
    let name = if rt {
        "PREEMPT_RT".to_string()
    } else if words.contains(&"PREEMPT_DYNAMIC") || config_on("CONFIG_PREEMPT_DYNAMIC") {
        match dynamic_mode(m) {
            Some(mode) => format!("PREEMPT_DYNAMIC ({mode})"),
            None => "PREEMPT_DYNAMIC".to_string(),
        }
    } else if words.contains(&"PREEMPT") || config_on("CONFIG_PREEMPT") {
        "PREEMPT".to_string()
    } else if config_on("CONFIG_PREEMPT_VOLUNTARY") {
        "PREEMPT_VOLUNTARY".to_string()
    } else if config_on("CONFIG_PREEMPT_NONE") {
        "PREEMPT_NONE".to_string()
    } else {
        "no preemption named in the version".to_string()
    };
    PreemptModel { rt, name }
}

/// The mode a PREEMPT_DYNAMIC kernel runs in: debugfs shows it as
/// `none voluntary (full) lazy`; else the `preempt=` boot parameter.
fn dynamic_mode(m: &Machine) -> Option<String> {
    let shown = m.read("/sys/kernel/debug/sched/preempt").and_then(|text| {
        let start = text.find('(')?;
        let end = text[start..].find(')')?;
        Some(text[start + 1..start + end].to_string())
    });
    shown.or_else(|| m.cmdline_value("preempt"))
}

pub fn preemption(m: &Machine) -> Check {
    let model = preempt_model(m);
    let check = of("kernel.preemption", "preemption model");
    if model.rt {
        check.ok(
            "PREEMPT_RT",
            "the kernel is PREEMPT_RT: interrupt handlers run as threads and almost all of it can be preempted",
        )
    } else {
        check.bad(
            format!("{} (not PREEMPT_RT)", model.name),
            format!(
                "kernel {} is not PREEMPT_RT: worst-case latencies are not bounded",
                m.probes.uname().release
            ),
            "boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; e.g. Debian's linux-image-rt-amd64, Ubuntu Pro's realtime kernel)",
        )
    }
}

pub const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
const AVAILABLE_CLOCKSOURCES: &str =
    "/sys/devices/system/clocksource/clocksource0/available_clocksource";

/// The clocksource every clock read goes through (`unknown` when not readable).
pub fn current_clocksource(m: &Machine) -> String {
    m.read(CLOCKSOURCE)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Every clocksource the kernel offers, in its order (empty when not readable).
pub fn available_clocksources(m: &Machine) -> Vec<String> {
    m.read(AVAILABLE_CLOCKSOURCES)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Clocksources read in user space through the vDSO, without a system call.
const FAST_CLOCKSOURCES: [&str; 6] = [
    "tsc",
    "kvm-clock",
    "arch_sys_counter",
    "hyperv_clocksource_tsc_page",
    "timebase",
    "riscv_clocksource",
];

pub fn clocksource(m: &Machine) -> Check {
    let current = current_clocksource(m);
    let check = of("kernel.clocksource", "clocksource");
    let available = m.read(AVAILABLE_CLOCKSOURCES).unwrap_or_default();
    let better = FAST_CLOCKSOURCES
        .iter()
        .find(|c| available.split_whitespace().any(|a| a == **c));
    let fix = match better {
        Some(c) => format!(
            "echo {c} > {CLOCKSOURCE} (or boot with clocksource={c}); if the kernel marked it unstable, see dmesg"
        ),
        None => {
            "use hardware with a stable TSC or arch counter (no fast clocksource is offered here)"
                .to_string()
        }
    };
    if FAST_CLOCKSOURCES.contains(&current.as_str()) {
        check.ok(
            current.clone(),
            format!("clocksource {current} is read through the vDSO without a system call"),
        )
    } else if current == "jiffies" || current == "refined-jiffies" {
        check.bad(
            current.clone(),
            format!("clocksource {current} only advances once per scheduler tick: time stamps are milliseconds coarse"),
            fix,
        )
    } else {
        check.warn(
            current.clone(),
            format!(
                "clocksource {current} cannot be read through the vDSO: every clock read is a system call of a microsecond or more, which inflates every figure"
            ),
            fix,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn preemption_models() {
        let mut f = Fixture::empty();
        f.probes.uname.version = "#1 SMP PREEMPT_DYNAMIC Thu".into();
        let c = preemption(&f.machine());
        assert_eq!(c.verdict, Verdict::Bad);
        assert_eq!(c.value, "PREEMPT_DYNAMIC (not PREEMPT_RT)");
        assert_eq!(
            c.meaning,
            "kernel 6.18.0 is not PREEMPT_RT: worst-case latencies are not bounded"
        );
        // The dynamic mode from debugfs, else from the boot parameter.
        f.file("/proc/cmdline", "quiet preempt=voluntary -- preempt=full");
        assert_eq!(
            preemption(&f.machine()).value,
            "PREEMPT_DYNAMIC (voluntary) (not PREEMPT_RT)"
        );
        f.file(
            "/sys/kernel/debug/sched/preempt",
            "none voluntary (full) lazy\n",
        );
        assert_eq!(preempt_model(&f.machine()).name, "PREEMPT_DYNAMIC (full)");

        // The config in /boot names what the version string does not.
        let mut f = Fixture::empty();
        f.probes.uname.version = "#1 SMP".into();
        assert_eq!(
            preempt_model(&f.machine()).name,
            "no preemption named in the version"
        );
        f.file(
            "/boot/config-6.18.0",
            "# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n",
        );
        assert_eq!(preempt_model(&f.machine()).name, "PREEMPT_VOLUNTARY");
        f.file("/boot/config-6.18.0", "CONFIG_PREEMPT_RT=y\n");
        let c = preemption(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "PREEMPT_RT"));
        assert_eq!(c.fix, None);

        let f = Fixture::empty();
        f.file("/sys/kernel/realtime", "1\n");
        assert!(preempt_model(&f.machine()).rt);
        let mut f = Fixture::empty();
        f.probes.uname.version = "#1 SMP PREEMPT_RT Fri".into();
        assert_eq!(preemption(&f.machine()).verdict, Verdict::Ok);
    }

    #[test]
    fn clocksources() {
        let f = Fixture::empty();
        let c = clocksource(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "unknown"));
        f.file(CLOCKSOURCE, "tsc\n");
        assert_eq!(clocksource(&f.machine()).verdict, Verdict::Ok);
        f.file(CLOCKSOURCE, "hpet\n")
            .file(AVAILABLE_CLOCKSOURCES, "tsc hpet acpi_pm \n");
        let c = clocksource(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "hpet"));
        assert!(c.fix.unwrap().starts_with(
            "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
        ));
        f.file(CLOCKSOURCE, "jiffies\n")
            .file(AVAILABLE_CLOCKSOURCES, "jiffies\n");
        let c = clocksource(&f.machine());
        assert_eq!(c.verdict, Verdict::Bad);
        assert!(c.fix.unwrap().contains("no fast clocksource"));
    }
}
