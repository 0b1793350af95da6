//! Kernel tracing: whether tracefs is there, which tracers the kernel has
//! (rtla's timerlat and osnoise), and whether the events latscope's kernel-side
//! figures are built from exist. Nothing is mounted or enabled here: the
//! doctor only looks.

use super::{Machine, first_few, of};
use crate::probes::wakeups::session::NEEDED;
use crate::report::Check;
use crate::rt::tracefs::events::ACTIVITY;
use crate::rt::tracefs::{self, mount};
use std::path::PathBuf;

/// Every event the doctor looks for: the wake-up breakdown's
/// (`probes::wakeups::session::NEEDED`), then those `--trace-spikes` names causes with
/// (`events::ACTIVITY`: switches, wake-ups, interrupts, softirqs).
pub fn wanted_events() -> Vec<(&'static str, &'static str)> {
    let mut events = NEEDED.to_vec();
    for e in ACTIVITY {
        if !events.contains(&e) {
            events.push(e);
        }
    }
    events
}

/// rtla's tracers.
const RTLA_TRACERS: [&str; 2] = ["timerlat", "osnoise"];

/// Where tracefs is mounted (a system path), and the same in the machine's tree.
fn mounted(m: &Machine) -> Option<(PathBuf, PathBuf)> {
    mount::find_at(m.root()).map(|dir| (m.path(&dir), dir))
}

/// Mounted where this process may not look (tracefs is root's only by default).
fn unreadable_mount(m: &Machine) -> Option<PathBuf> {
    mount::mount_points_at(m.root()).into_iter().next()
}

/// The finding when tracefs cannot be looked into (shared by the three checks).
fn not_mounted(check: super::CheckStart, m: &Machine, what: &str) -> Check {
    if let Some(dir) = unreadable_mount(m) {
        check.warn(
            format!("unknown: {} not readable", dir.display()),
            format!("tracefs is readable by root only, so {what} cannot be seen"),
            "run latscope doctor as root",
        )
    } else if mount::kernel_has_tracefs_at(m.root()) {
        check.warn(
            "unknown: tracefs not mounted",
            format!("tracefs is not mounted, so {what} cannot be seen (latscope mounts it when run as root and needs it)"),
            mount::MOUNT_HINT,
        )
    } else {
        check.warn(
            "unknown: no tracefs in this kernel",
            format!("this kernel has no tracefs, so {what} cannot be used"),
            "a kernel built with CONFIG_FTRACE and CONFIG_TRACING",
        )
    }
}

pub fn tracefs(m: &Machine) -> Check {
    let check = of("tracing.tracefs", "tracefs");
    match mounted(m) {
        Some((_, dir)) => check.ok(
            format!("mounted at {}", dir.display()),
            "kernel tracing is available (-b, timer --breakdown)",
        ),
        None if unreadable_mount(m).is_some() => check.ok(
            format!(
                "mounted at {} (not readable: root only)",
                unreadable_mount(m).unwrap_or_default().display()
            ),
            "kernel tracing is available to root (-b, timer --breakdown)",
        ),
        None if mount::kernel_has_tracefs_at(m.root()) => check.warn(
            "not mounted",
            "tracefs is not mounted: latscope mounts it when run as root; other tools (rtla, trace-cmd) may not",
            mount::MOUNT_HINT,
        ),
        None => check.warn(
            "not in this kernel",
            "this kernel has no tracefs: no kernel-side breakdown (-b, timer --breakdown) and no rtla",
            "a kernel built with CONFIG_FTRACE and CONFIG_TRACING",
        ),
    }
}

pub fn tracers(m: &Machine) -> Check {
    let check = of("tracing.tracers", "latency tracers");
    let Some((dir, _)) = mounted(m) else {
        return not_mounted(check, m, "the kernel's latency tracers");
    };
    let Ok(text) = std::fs::read_to_string(dir.join("available_tracers")) else {
        return check.warn(
            "unknown: available_tracers not readable",
            "the list of tracers is readable by root only",
            "run latscope doctor as root",
        );
    };
    let available: Vec<&str> = text.split_whitespace().collect();
    let missing: Vec<&str> = RTLA_TRACERS
        .iter()
        .copied()
        .filter(|t| !available.contains(t))
        .collect();
    let value = available.join(" ");
    if missing.is_empty() {
        check.ok(
            value,
            "timerlat and osnoise are there: rtla timerlat and rtla osnoise can run",
        )
    } else {
        check.warn(
            format!("{value} (no {})", missing.join(", no ")),
            format!(
                "no {} tracer: rtla cannot run here; latscope timer --breakdown works from trace events instead",
                missing.join(" or ")
            ),
            "for rtla, a kernel with CONFIG_TIMERLAT_TRACER=y and CONFIG_OSNOISE_TRACER=y",
        )
    }
}

pub fn events(m: &Machine) -> Check {
    let check = of("tracing.events", "trace events");
    let Some((dir, _)) = mounted(m) else {
        return not_mounted(check, m, "which trace events exist");
    };
    let wanted = wanted_events();
    let missing: Vec<String> = wanted
        .iter()
        .filter(|e| !tracefs::has_event(&dir, **e))
        .map(|(system, event)| format!("{system}:{event}"))
        .collect();
    if !missing.is_empty() {
        return check.warn(
            format!("{} of {} missing: {}", missing.len(), wanted.len(), first_few(&missing, 3)),
            "without these events the kernel-side figures cannot be built (or events/ is readable by root only)",
            "run as root; else a kernel with CONFIG_TRACEPOINTS and the scheduler, IRQ and timer events",
        );
    }
    match tracefs::check_tracefs(&dir, &wanted) {
        Ok(()) => check.ok(
            format!(
                "all {} (sched, irq, timer), mono clock, instances",
                wanted.len()
            ),
            "latscope can trace its own threads in a private instance on CLOCK_MONOTONIC",
        ),
        Err(why) => check.warn(
            format!("all {} events; {why}", wanted.len()),
            why,
            "a kernel with trace instances and the mono trace clock (4.x or later)",
        ),
    }
}

/// Whether `--breakdown` (and `--trace-spikes`) can collect in the kernel
/// with BPF, and why not: the same reason the console and the Report give.
pub fn bpf(m: &Machine) -> Check {
    use crate::rt::bpf::probe;
    let check = of("tracing.bpf", "BPF collection");
    let facts = probe::Facts::read_at(
        m.root(),
        &m.probes.uname().release,
        m.effective_capabilities(),
    );
    match probe::assess(&facts).map_or_else(|| m.probes.bpf(), Err) {
        Ok(()) => check.ok(
            "possible",
            "--breakdown and --trace-spikes collect in the kernel (BPF), at a fraction of tracefs' cost",
        ),
        Err(why) => check.warn(
            format!("no: {why}"),
            "kernel events are collected through tracefs instead (--collector auto), which costs more per event",
            bpf_fix(&why),
        ),
    }
}

/// What to do when BPF cannot run, for its reason (`why`).
pub fn bpf_fix(why: &str) -> &'static str {
    if why.contains("not permitted") {
        "run as root, or grant CAP_BPF and CAP_PERFMON"
    } else if why.contains("kernel lockdown") {
        "boot without lockdown=confidentiality"
    } else {
        "a Linux 5.8 or later kernel with CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS"
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn tracefs_where_and_whether() {
        let f = Fixture::empty();
        let all = |f: &Fixture| [tracefs, tracers, events].map(|check| check(&f.machine()));
        for c in all(&f) {
            assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
            assert!(
                c.value.contains("no tracefs") || c.value == "not in this kernel",
                "{c:?}"
            );
        }
        f.file("/proc/filesystems", "nodev\tsysfs\nnodev\ttracefs\n");
        for c in all(&f) {
            assert_eq!(c.verdict, Verdict::Warn);
            assert_eq!(c.fix.as_deref(), Some(mount::MOUNT_HINT));
        }
        // Mounted in an unusual place: the mount table finds it.
        f.file(
            "/proc/self/mounts",
            "none /mnt/my\\040trace tracefs rw 0 0\n",
        )
        .file("/mnt/my trace/tracing_on", "1");
        let c = tracefs(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "mounted at /mnt/my trace")
        );
        // Listed in the mount table but not visible to this user.
        f.file(
            "/proc/self/mounts",
            "tracefs /sys/kernel/tracing tracefs rw 0 0\n",
        );
        let c = tracefs(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(
            c.value,
            "mounted at /sys/kernel/tracing (not readable: root only)"
        );
        let c = tracers(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "unknown: /sys/kernel/tracing not readable");
        assert_eq!(c.fix.as_deref(), Some("run latscope doctor as root"));
    }

    #[test]
    fn bpf_collection() {
        let mut f = Fixture::empty();
        // Root (CapEff with CAP_SYS_ADMIN), a recent kernel, the call works.
        f.file(
            "/proc/self/status",
            "Name:\tlatscope\nCapEff:\t000001ffffffffff\n",
        );
        let c = bpf(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "possible"));
        // Lockdown in confidentiality mode.
        f.file(
            "/sys/kernel/security/lockdown",
            "none integrity [confidentiality]\n",
        );
        let c = bpf(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "no: kernel lockdown (confidentiality) forbids it");
        assert_eq!(
            c.fix.as_deref(),
            Some("boot without lockdown=confidentiality")
        );
        f.file(
            "/sys/kernel/security/lockdown",
            "[none] integrity confidentiality\n",
        );
        // A user without the capabilities.
        f.file("/proc/self/status", "CapEff:\t0000000000000000\n");
        let c = bpf(&f.machine());
        assert_eq!(
            c.value,
            "no: not permitted: needs CAP_BPF and CAP_PERFMON (or root)"
        );
        assert_eq!(
            c.fix.as_deref(),
            Some("run as root, or grant CAP_BPF and CAP_PERFMON")
        );
        // CAP_BPF (39) and CAP_PERFMON (38) without root, on a kernel built
        // without BPF on trace events.
        f.file("/proc/self/status", "CapEff:\t000000c000000000\n");
        f.file("/boot/config-6.18.0", "# CONFIG_BPF_EVENTS is not set\n");
        let c = bpf(&f.machine());
        assert_eq!(
            c.value,
            "no: no BPF on trace events (CONFIG_BPF_EVENTS unset)"
        );
        std::fs::remove_file(f.machine().path("/boot/config-6.18.0")).unwrap();
        // An old kernel.
        f.probes.uname.release = "5.4.0".into();
        let c = bpf(&f.machine());
        assert_eq!(c.value, "no: kernel 5.4.0 is older than 5.8");
        // What only the system call tells.
        f.probes.uname.release = "6.18.0".into();
        f.probes.bpf = Err("no bpf() system call (CONFIG_BPF_SYSCALL unset)".into());
        let c = bpf(&f.machine());
        assert_eq!(
            c.value,
            "no: no bpf() system call (CONFIG_BPF_SYSCALL unset)"
        );
    }

    #[test]
    fn latency_tracers() {
        let f = Fixture::empty();
        f.tracefs("blk function nop\n", &wanted_events());
        let c = tracers(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "blk function nop (no timerlat, no osnoise)");
        assert!(c.meaning.starts_with("no timerlat or osnoise tracer"));
        f.file(
            "/sys/kernel/tracing/available_tracers",
            "timerlat osnoise nop\n",
        );
        let c = tracers(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "timerlat osnoise nop")
        );
    }

    #[test]
    fn trace_events() {
        let f = Fixture::empty();
        f.tracefs("nop\n", &wanted_events()[1..]);
        let c = events(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "1 of 8 missing: timer:hrtimer_start");
        f.tracefs("nop\n", &wanted_events());
        let c = events(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value, "all 8 (sched, irq, timer), mono clock, instances");
        f.file("/sys/kernel/tracing/trace_clock", "[local] global\n");
        let c = events(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert!(c.value.contains("no 'mono' trace clock"), "{c:?}");
    }
}
