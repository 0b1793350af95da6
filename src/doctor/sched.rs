//! Scheduling: RT throttling, timer slack, and the caller's limits on
//! real-time priority and locked memory.

use super::machine::Limit;
use super::{Machine, of};
use crate::report::Check;

pub const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
pub const RT_PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";

/// (`sched_rt_runtime_us`, `sched_rt_period_us`); runtime -1 is no throttling.
pub fn rt_bandwidth(m: &Machine) -> (Option<i64>, Option<i64>) {
    let number = |path| m.read(path).and_then(|s| s.parse().ok());
    (number(RT_RUNTIME), number(RT_PERIOD))
}

pub fn rt_throttling(m: &Machine) -> Check {
    let check = of("sched.rt_throttling", "RT throttling");
    match rt_bandwidth(m) {
        (Some(runtime), Some(period)) if runtime >= 0 && runtime < period => check.warn(
            format!("{runtime} of {period} us"),
            format!(
                "real-time threads that do not sleep are stopped for {} ms of every {} ms, a stall a busy real-time task sees as latency (tasks that block between samples, as latscope's do, are not throttled)",
                (period - runtime) / 1000,
                period / 1000
            ),
            "sysctl kernel.sched_rt_runtime_us=-1, once no real-time task can spin forever: throttling is the safety net that keeps a runaway one from freezing the machine",
        ),
        (Some(runtime), Some(period)) if runtime < 0 => check.ok(
            format!("off (sched_rt_runtime_us {runtime}, period {period} us)"),
            "real-time threads are never paused by the kernel",
        ),
        (Some(runtime), Some(period)) => check.ok(
            format!("{runtime} of {period} us"),
            "the runtime covers the whole period: real-time threads are never paused",
        ),
        _ => check.ok("not present", "this kernel has no RT bandwidth control"),
    }
}

/// The kernel's default slack of a normal task, ns.
const DEFAULT_SLACK_NS: u64 = 50_000;

pub fn timer_slack(m: &Machine) -> Check {
    let check = of("sched.timer_slack", "timer slack");
    let slack = m
        .read("/proc/self/timerslack_ns")
        .and_then(|s| s.parse::<u64>().ok())
        .or_else(|| m.probes.timer_slack_ns());
    match slack {
        Some(ns) if ns <= DEFAULT_SLACK_NS => check.ok(
            format!("{} us", ns as f64 / 1000.0),
            "normal-priority sleeps may end this much late so the kernel can batch wake-ups; real-time threads have no slack",
        ),
        Some(ns) => check.warn(
            format!("{} us", ns as f64 / 1000.0),
            format!(
                "this session's timer slack is above the kernel's default of 50 us: normal-priority sleeps end up to {} us late (real-time threads have none)",
                ns / 1000
            ),
            "lower it where it was raised (systemd TimerSlackNSec=, a cgroup or prctl(PR_SET_TIMERSLACK)), or run the timed work with a real-time policy",
        ),
        None => check.ok("not readable", "the kernel does not show the timer slack"),
    }
}

/// Capability bits (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;
pub(super) const CAP_SYS_NICE: u32 = 23;

pub(super) fn has_capability(m: &Machine, cap: u32) -> bool {
    m.effective_capabilities() & (1 << cap) != 0
}

fn show_limit(limit: Limit, unit: impl Fn(u64) -> String) -> String {
    let one = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), &unit);
    if limit.soft == limit.hard {
        one(limit.soft)
    } else {
        format!("{} (hard {})", one(limit.soft), one(limit.hard))
    }
}

/// The highest SCHED_FIFO priority.
const MAX_RT_PRIORITY: u64 = 99;

pub fn rtprio(m: &Machine) -> Check {
    let check = of("limits.rtprio", "real-time priority limit");
    let limit = m.probes.limits().rtprio;
    let shown = format!("rtprio {}", show_limit(limit, |v| v.to_string()));
    let fix = "run as root or with CAP_SYS_NICE, or allow it: '@realtime - rtprio 99' in /etc/security/limits.conf (ulimit -r 99)";
    if has_capability(m, CAP_SYS_NICE) {
        return check.ok(
            format!("CAP_SYS_NICE ({shown})"),
            "this user may use every real-time priority",
        );
    }
    match limit.soft {
        None => check.ok(shown, "this user may use every real-time priority"),
        Some(p) if p >= MAX_RT_PRIORITY => check.ok(shown, "this user may use every real-time priority"),
        Some(0) => check.bad(
            shown,
            "this user cannot use real-time priority at all: tests run at normal priority, where any task can delay them",
            fix,
        ),
        Some(p) => check.warn(
            shown,
            format!("this user may use real-time priorities up to {p} only"),
            fix,
        ),
    }
}

pub fn memlock(m: &Machine) -> Check {
    let check = of("limits.memlock", "locked memory limit");
    let limit = m.probes.limits().memlock;
    let shown = format!("memlock {}", show_limit(limit, crate::units::format_bytes));
    if has_capability(m, CAP_IPC_LOCK) {
        return check.ok(
            format!("CAP_IPC_LOCK ({shown} does not apply)"),
            "this user may lock all its memory (mlockall)",
        );
    }
    match limit.soft {
        None => check.ok(shown, "this user may lock all its memory (mlockall)"),
        Some(_) => check.warn(
            shown,
            "mlockall fails once a process maps more than this: its pages can then be paged out and fault back in as latency",
            "run as root, or '@realtime - memlock unlimited' in /etc/security/limits.conf (ulimit -l unlimited)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, MIB};
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn throttling_settings() {
        let f = Fixture::empty();
        assert_eq!(rt_throttling(&f.machine()).value, "not present");
        f.file(RT_RUNTIME, "950000\n").file(RT_PERIOD, "1000000\n");
        let c = rt_throttling(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "950000 of 1000000 us")
        );
        assert!(c.meaning.starts_with(
            "real-time threads that do not sleep are stopped for 50 ms of every 1000 ms"
        ));
        assert!(
            c.fix
                .unwrap()
                .starts_with("sysctl kernel.sched_rt_runtime_us=-1")
        );
        f.file(RT_RUNTIME, "-1\n");
        let c = rt_throttling(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value, "off (sched_rt_runtime_us -1, period 1000000 us)");
        f.file(RT_RUNTIME, "1000000\n");
        assert_eq!(rt_throttling(&f.machine()).verdict, Verdict::Ok);
        assert_eq!(
            rt_bandwidth(&f.machine()),
            (Some(1_000_000), Some(1_000_000))
        );
    }

    #[test]
    fn timer_slack_from_proc_or_prctl() {
        let mut f = Fixture::empty();
        assert_eq!(timer_slack(&f.machine()).value, "not readable");
        f.probes.slack_ns = Some(50_000);
        let c = timer_slack(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "50 us"));
        f.file("/proc/self/timerslack_ns", "1000000\n");
        let c = timer_slack(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "1000 us"));
    }

    #[test]
    fn priority_limits() {
        let mut f = Fixture::empty();
        f.file("/proc/self/status", "CapEff:\t0000000000000000\n");
        assert_eq!(rtprio(&f.machine()).value, "rtprio 99");
        assert_eq!(rtprio(&f.machine()).verdict, Verdict::Ok);
        f.probes.limits.rtprio = Limit {
            soft: Some(0),
            hard: Some(50),
        };
        let c = rtprio(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Bad, "rtprio 0 (hard 50)")
        );
        f.probes.limits.rtprio.soft = Some(50);
        let c = rtprio(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Warn, "rtprio 50"));
        // root's capabilities: CAP_SYS_NICE is bit 23.
        f.file("/proc/self/status", "CapEff:\t000001ffffffffff\n");
        let c = rtprio(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "CAP_SYS_NICE (rtprio 50)")
        );
    }

    #[test]
    fn memory_lock_limits() {
        let mut f = Fixture::empty();
        assert_eq!(memlock(&f.machine()).value, "memlock unlimited");
        f.probes.limits.memlock = Limit {
            soft: Some(8 * MIB),
            hard: Some(8 * MIB),
        };
        let c = memlock(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "memlock 8 MiB")
        );
        f.file("/proc/self/status", "CapEff:\t0000000000004000\n");
        let c = memlock(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value, "CAP_IPC_LOCK (memlock 8 MiB does not apply)");
    }
}
