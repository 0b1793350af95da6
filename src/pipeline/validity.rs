//! Warnings that say when the numbers cannot mean what a real-time user
//! expects. They end the console output and are part of the JSON report.

use super::prepare::MemoryLock;
use crate::load::cpu_time;
use crate::report::{Series, SpikeTrace, SysInfo};
use crate::rt::sysinfo::{self, CpuTimes};
use crate::units::cpu_list;
use crate::units::parse_cpu_list;
use std::time::Duration;

/// Facts about one finished test that the checks look at.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    pub realtime_policy: bool,
    pub cpus_used: Vec<usize>,
    /// Busy fraction of `cpus_used` during the run (all processes, from /proc/stat).
    pub busy_fraction: Option<f64>,
    /// CPU time latscope itself used during the run.
    pub own_cpu_seconds: f64,
    /// The share of `cpus_used` the `--load` generators took during the run,
    /// over the same interval as `busy_fraction` (the load asked for is not
    /// "other load"); `None` without `--load`.
    pub load_fraction: Option<f64>,
    pub elapsed: Duration,
    pub max_ns: Option<i64>,
    pub windows_dropped: u64,
    pub breaktrace_note: Option<String>,
    /// The test's figures do not depend on real-time scheduling (a disk
    /// write runs at normal priority by design): it takes no part in the
    /// real-time checks.
    pub scheduling_free: bool,
    /// The option that gives the test a real-time priority (`-p`), for the
    /// advice when it ran without one; `None` when the command picks
    /// SCHED_FIFO 99 by itself where it is allowed (timer, ipc, suite).
    pub priority_option: Option<&'static str>,
    /// What the test's spike trace (`--trace-spikes`) says about RT
    /// throttling; empty without one.
    pub throttle: ThrottleEvidence,
    /// This user may use real-time priority (root, CAP_SYS_NICE or
    /// RLIMIT_RTPRIO): a run without it was asked to, and the advice is
    /// the option, not privileges. Set once for the whole report
    /// (`assemble_report`).
    pub realtime_allowed: bool,
    /// Why this process cannot have real-time scheduling, when a probe
    /// thread was refused (doctor::realtime::fifo_refusal): a run at
    /// policy other then says so in its one line. Set with
    /// `realtime_allowed`.
    pub realtime_refusal: Option<String>,
    /// The user set `QUIET_MACHINE_ENV`: the machine's own findings
    /// (`MACHINE_CHECKS`), the same for every run, are left out of the
    /// warnings (the report keeps them in `sysinfo.checks`).
    pub machine_warnings_quieted: bool,
}

/// The environment variable that leaves the machine-level warnings out.
pub const QUIET_MACHINE_ENV: &str = "LATSCOPE_QUIET_MACHINE_WARNINGS";

/// Whether `QUIET_MACHINE_ENV` asks for quiet: set, and neither empty nor 0.
pub fn machine_warnings_quieted() -> bool {
    std::env::var_os(QUIET_MACHINE_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// RT throttling as the kernel trace shows it. The kernel logs "RT throttling
/// activated" once per boot, so its log cannot tell a later run; the trace
/// can, spike by spike: a normal task ran while a woken real-time measured
/// task waited on its CPU (`Spike::rt_throttling`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThrottleEvidence {
    /// Kept spikes whose trace shows throttling.
    pub throttled_spikes: u64,
    /// The worst kept spike, when the trace names a task of higher
    /// priority than the measured one as what held it off (and no
    /// throttling): its latency and that task.
    pub worst_preempted_by: Option<(u64, String)>,
}

impl ThrottleEvidence {
    pub fn of(trace: Option<&SpikeTrace>) -> ThrottleEvidence {
        let Some(trace) = trace else {
            return ThrottleEvidence::default();
        };
        let worst = trace.spikes.iter().max_by_key(|s| s.latency_ns);
        ThrottleEvidence {
            throttled_spikes: trace.spikes.iter().filter(|s| s.rt_throttling).count() as u64,
            worst_preempted_by: worst
                .filter(|s| !s.rt_throttling)
                .and_then(|s| Some((s.latency_ns, s.preempted_by.clone()?))),
        }
    }

    /// Several tests' evidence: the spikes add up, the worst stays the worst.
    fn combine<'a>(all: impl Iterator<Item = &'a ThrottleEvidence>) -> ThrottleEvidence {
        all.fold(ThrottleEvidence::default(), |acc, e| ThrottleEvidence {
            throttled_spikes: acc.throttled_spikes + e.throttled_spikes,
            worst_preempted_by: [acc.worst_preempted_by, e.worst_preempted_by.clone()]
                .into_iter()
                .flatten()
                .max_by_key(|(ns, _)| *ns),
        })
    }
}

/// What used the measured CPUs during one measurement: all work (the
/// CPUs' busy time), latscope's own and the `--load` generators', each read
/// at the same two moments so that they compare.
pub struct CpuWindow {
    cpus: CpuTimes,
    own_seconds: f64,
    load_seconds: Option<f64>,
}

/// A closed `CpuWindow`: the `RunFacts` fields it gives, for the CPUs the
/// test turned out to use.
pub struct CpuUse {
    before: CpuTimes,
    after: CpuTimes,
    own_cpu_seconds: f64,
    load_cpu_seconds: Option<f64>,
}

impl CpuWindow {
    /// Right before the measurement.
    pub fn open() -> CpuWindow {
        CpuWindow {
            cpus: CpuTimes::sample(),
            own_seconds: sysinfo::process_cpu_seconds(),
            load_seconds: cpu_time::load_cpu_seconds(),
        }
    }

    /// Right after it.
    pub fn close(self) -> CpuUse {
        self.so_far()
    }

    /// The use so far, the window left open (a snapshot while it runs).
    pub fn so_far(&self) -> CpuUse {
        let after = CpuTimes::sample();
        CpuUse {
            own_cpu_seconds: sysinfo::process_cpu_seconds() - self.own_seconds,
            load_cpu_seconds: cpu_time::used_between(
                self.load_seconds,
                cpu_time::load_cpu_seconds(),
            ),
            before: self.cpus.clone(),
            after,
        }
    }
}

/// What used some CPUs during a `CpuWindow` (`CpuUse::of`): the
/// `RunFacts` fields of the same names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuShare {
    /// The CPUs' busy time over their capacity in the window (None when
    /// /proc/stat could not be read).
    pub busy_fraction: Option<f64>,
    /// latscope's own CPU time in the window.
    pub own_cpu_seconds: f64,
    /// The `--load` generators' CPU time over the CPUs' capacity.
    pub load_fraction: Option<f64>,
}

impl CpuUse {
    /// What used `cpus` in the window.
    pub fn of(&self, cpus: &[usize]) -> CpuShare {
        CpuShare {
            busy_fraction: self.before.busy_fraction(&self.after, cpus),
            own_cpu_seconds: self.own_cpu_seconds,
            load_fraction: self
                .load_cpu_seconds
                .and_then(|s| self.before.share_of(&self.after, s, cpus.len())),
        }
    }
}

impl RunFacts {
    /// The facts every measured test has: its policy, the CPUs it measured
    /// and what ran on them in its window (`usage`, from `CpuUse::of`), its
    /// largest sample and lost windows (from its `series`), and what its
    /// spike trace says of RT throttling. The caller adds the rest (its
    /// length, the name of its priority option, a -b note).
    pub fn measured(
        realtime_policy: bool,
        cpus: &[usize],
        usage: CpuShare,
        series: &[Series],
        spikes: Option<&SpikeTrace>,
    ) -> RunFacts {
        RunFacts {
            realtime_policy,
            cpus_used: cpus.to_vec(),
            busy_fraction: usage.busy_fraction,
            own_cpu_seconds: usage.own_cpu_seconds,
            load_fraction: usage.load_fraction,
            max_ns: series
                .iter()
                .filter(|s| s.latency.samples > 0)
                .map(|s| s.latency.max_ns)
                .max(),
            windows_dropped: series.iter().map(|s| s.per_second_dropped).sum(),
            throttle: ThrottleEvidence::of(spikes),
            ..RunFacts::default()
        }
    }

    /// The facts of several tests run one after another (`ipc`, `suite`), so
    /// that the report warns once: busy time weighted by each test's length,
    /// the worst sample, every CPU used, real time only if every test had it.
    pub fn combine(all: &[RunFacts]) -> RunFacts {
        let mut cpus_used: Vec<usize> = all.iter().flat_map(|f| f.cpus_used.clone()).collect();
        cpus_used.sort_unstable();
        cpus_used.dedup();
        let capacity = |f: &RunFacts| f.elapsed.as_secs_f64() * f.cpus_used.len().max(1) as f64;
        let measured: Vec<&RunFacts> = all.iter().filter(|f| f.busy_fraction.is_some()).collect();
        let total_capacity: f64 = measured.iter().map(|f| capacity(f)).sum();
        let busy_fraction = (total_capacity > 0.0).then(|| {
            measured
                .iter()
                .map(|f| f.busy_fraction.unwrap_or(0.0) * capacity(f))
                .sum::<f64>()
                / total_capacity
        });
        RunFacts {
            priority_option: all.iter().find_map(|f| f.priority_option),
            realtime_policy: all.iter().all(|f| f.realtime_policy),
            busy_fraction,
            own_cpu_seconds: all.iter().map(|f| f.own_cpu_seconds).sum(),
            load_fraction: (total_capacity > 0.0 && all.iter().any(|f| f.load_fraction.is_some()))
                .then(|| {
                    measured
                        .iter()
                        .map(|f| f.load_fraction.unwrap_or(0.0) * capacity(f))
                        .sum::<f64>()
                        / total_capacity
                }),
            // The capacity the busy fraction refers to, over the union of CPUs.
            elapsed: Duration::from_secs_f64(total_capacity / cpus_used.len().max(1) as f64),
            cpus_used,
            max_ns: all.iter().filter_map(|f| f.max_ns).max(),
            windows_dropped: all.iter().map(|f| f.windows_dropped).sum(),
            breaktrace_note: all.iter().find_map(|f| f.breaktrace_note.clone()),
            scheduling_free: all.iter().all(|f| f.scheduling_free),
            throttle: ThrottleEvidence::combine(all.iter().map(|f| &f.throttle)),
            realtime_allowed: all.iter().all(|f| f.realtime_allowed),
            realtime_refusal: all.iter().find_map(|f| f.realtime_refusal.clone()),
            machine_warnings_quieted: all.iter().any(|f| f.machine_warnings_quieted),
        }
    }
}

/// Other load above this share of the measured CPUs' time is reported.
const OTHER_LOAD_LIMIT: f64 = 0.10;
/// Samples this long under RT throttling are most likely the throttle itself.
const THROTTLE_SUSPECT_NS: i64 = 10_000_000;

/// The doctor's checks (`latscope doctor`) whose findings bear on every
/// figure measured on this machine; a finding that is not ok becomes a
/// warning of the test's report. The others (THP, swap, SMT, ...) are in the
/// report's `sysinfo.checks`.
const MACHINE_CHECKS: [&str; 3] = [
    "kernel.preemption",
    "kernel.clocksource",
    "platform.virtualization",
];

/// When the machine has isolated CPUs but the test ran elsewhere too.
fn outside_isolated(sys: &SysInfo, cpus_used: &[usize]) -> Option<String> {
    let isolated = parse_cpu_list(&sys.cpus_isolated).unwrap_or_default();
    let outside: Vec<usize> = cpus_used
        .iter()
        .copied()
        .filter(|c| !isolated.contains(c))
        .collect();
    (!isolated.is_empty() && !outside.is_empty()).then(|| {
        format!(
            "measured on CPU {}, which is not isolated (isolated: {}): other tasks may run there; pin the test to the isolated CPUs (-a)",
            cpu_list(&outside),
            sys.cpus_isolated
        )
    })
}

pub fn warnings(sys: &SysInfo, facts: &RunFacts, memory: &MemoryLock) -> Vec<String> {
    let mut w = Vec::new();
    if !facts.realtime_policy {
        // Advice that fits the command given (only some tests take -p) and
        // the user: one who may use real-time priority is told the option.
        let how = match (facts.priority_option, facts.realtime_allowed) {
            // Refused whatever the privileges: the cause and its fix.
            (_, false) if facts.realtime_refusal.is_some() => {
                facts.realtime_refusal.clone().unwrap_or_default()
            }
            (Some(option), true) => format!("give {option} 1..99 (this user may use it)"),
            (None, true) => "leave out --policy other (this user may use real-time priority): \
                 it then takes SCHED_FIFO 99"
                .to_string(),
            (Some(option), false) => format!("run as root with {option} 1..99 (or CAP_SYS_NICE)"),
            (None, false) => {
                "run as root (or with CAP_SYS_NICE): it then takes SCHED_FIFO 99".to_string()
            }
        };
        w.push(format!(
            "no real-time priority (policy other): latencies include ordinary scheduling delays; {how}"
        ));
    }
    match memory {
        MemoryLock::Locked => {}
        MemoryLock::NotRequested => w.push(
            "memory not locked (--no-mlockall): page faults can show up as latency".to_string(),
        ),
        MemoryLock::Failed(why) => w.push(format!(
            "memory not locked, page faults can show up as latency: {why}"
        )),
    }
    // What the machine itself does to every figure: the doctor's findings,
    // in its words; the last says once how to quiet them.
    if !facts.machine_warnings_quieted {
        let machine: Vec<String> = MACHINE_CHECKS
            .iter()
            .filter_map(|id| sys.problem(id))
            .map(|check| check.meaning.clone())
            .collect();
        let count = machine.len();
        for (i, meaning) in machine.into_iter().enumerate() {
            if i + 1 == count {
                w.push(format!(
                    "{meaning} ({QUIET_MACHINE_ENV}=1 leaves out these machine warnings)"
                ));
            } else {
                w.push(meaning);
            }
        }
    }
    if let Some(outside) = outside_isolated(sys, &facts.cpus_used) {
        w.push(outside);
    }
    if let Some(busy) = facts.busy_fraction {
        let capacity = facts.elapsed.as_secs_f64() * facts.cpus_used.len().max(1) as f64;
        if capacity > 0.0 {
            let asked = facts.load_fraction.unwrap_or(0.0);
            let other = busy - facts.own_cpu_seconds / capacity - asked;
            if other > OTHER_LOAD_LIMIT {
                let cpus = facts
                    .cpus_used
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                let beside = match facts.load_fraction {
                    Some(_) => "busy with other work than latscope's and its --load's",
                    None => "busy with other work",
                };
                w.push(format!(
                    "CPU {cpus} shared with other load ({:.0}% {beside} during the run): isolate the CPUs (isolcpus, cpusets) for trustworthy numbers",
                    other * 100.0
                ));
            }
        }
    }
    if let Some(line) = throttling_warning(sys, facts) {
        w.push(line);
    }
    if facts.windows_dropped > 0 {
        w.push(format!(
            "{} per-second windows were lost because the monitor thread was starved",
            facts.windows_dropped
        ));
    }
    w
}

/// What the run says about RT throttling: what the trace saw, else (without
/// a trace that explains the worst samples otherwise) the suspicion that
/// samples of 10 ms or more under throttling raise.
fn throttling_warning(sys: &SysInfo, facts: &RunFacts) -> Option<String> {
    let setting = || {
        format!(
            "sched_rt_runtime_us={} of {}",
            sys.rt_runtime_us.unwrap_or(0),
            sys.rt_period_us.unwrap_or(0)
        )
    };
    let evidence = &facts.throttle;
    if evidence.throttled_spikes > 0 {
        let n = evidence.throttled_spikes;
        return Some(format!(
            "RT throttling seen in the trace: in {n} spike{} a normal task ran while the woken real-time task waited ({}): the kernel throttled real-time threads",
            if n == 1 { "" } else { "s" },
            setting()
        ));
    }
    let suspect = facts.realtime_policy
        && sys.problem("sched.rt_throttling").is_some()
        && facts.max_ns.is_some_and(|m| m >= THROTTLE_SUSPECT_NS);
    // The trace named a higher-priority task as what held off the worst
    // sample: that, not throttling, is the cause; the spike says so.
    let explained = evidence
        .worst_preempted_by
        .as_ref()
        .is_some_and(|(ns, _)| *ns as i64 >= THROTTLE_SUSPECT_NS);
    (suspect && !explained).then(|| {
        format!(
            "samples of 10 ms or more with RT throttling on ({}): likely the kernel throttling real-time threads, not the primitive (--trace-spikes tells)",
            setting()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::doctor::fixture::Fixture;

    /// A tuned PREEMPT_RT machine (isolated CPUs 2-3), read as a report reads it.
    fn rt_sys() -> SysInfo {
        SysInfo::of(&Fixture::tuned_rt().machine())
    }

    fn good_facts() -> RunFacts {
        RunFacts {
            realtime_policy: true,
            cpus_used: vec![2, 3],
            busy_fraction: Some(0.05),
            own_cpu_seconds: 0.5,
            load_fraction: None,
            elapsed: Duration::from_secs(10),
            max_ns: Some(20_000),
            windows_dropped: 0,
            breaktrace_note: None,
            scheduling_free: false,
            priority_option: Some("-p"),
            throttle: ThrottleEvidence::default(),
            realtime_allowed: false,
            realtime_refusal: None,
            machine_warnings_quieted: false,
        }
    }

    fn spike(
        latency_ns: u64,
        preempted_by: Option<&str>,
        rt_throttling: bool,
    ) -> crate::report::Spike {
        crate::report::Spike {
            latency_ns,
            preempted_by: preempted_by.map(str::to_string),
            rt_throttling,
            ..crate::report::Spike::default()
        }
    }

    #[test]
    fn the_trace_decides_what_rt_throttling_explains() {
        // A stock VM with throttling on and a 50 ms worst sample.
        let sys = SysInfo::of(&Fixture::stock_vm().machine());
        let mut facts = good_facts();
        facts.max_ns = Some(50_000_000);
        let about_throttling = |facts: &RunFacts| {
            warnings(&sys, facts, &MemoryLock::Locked)
                .into_iter()
                .filter(|w| w.contains("throttl"))
                .collect::<Vec<_>>()
        };
        // No trace: the suspicion, with how to settle it.
        assert_eq!(
            about_throttling(&facts),
            [
                "samples of 10 ms or more with RT throttling on (sched_rt_runtime_us=950000 of 1000000): likely the kernel throttling real-time threads, not the primitive (--trace-spikes tells)"
            ]
        );
        // The trace names a higher-priority task for the worst: no suspicion.
        let trace = |spikes| SpikeTrace {
            spikes,
            ..SpikeTrace::default()
        };
        let named = trace(vec![
            spike(50_000_000, Some("spike-maker (pid 9, prio 19)"), false),
            spike(2_000_000, None, false),
        ]);
        facts.throttle = ThrottleEvidence::of(Some(&named));
        assert_eq!(
            facts.throttle.worst_preempted_by,
            Some((50_000_000, "spike-maker (pid 9, prio 19)".to_string()))
        );
        assert!(about_throttling(&facts).is_empty());
        // Named only for a small spike, not the worst: still suspect.
        let small = trace(vec![
            spike(50_000_000, None, false),
            spike(2_000_000, Some("spike-maker (pid 9, prio 19)"), false),
        ]);
        facts.throttle = ThrottleEvidence::of(Some(&small));
        assert_eq!(about_throttling(&facts).len(), 1);
        // The trace saw throttling: said as a fact, whatever the kernel log
        // (which tells once per boot) holds, even with throttling settings
        // the doctor finds fine.
        let throttled = trace(vec![
            spike(40_000_000, None, true),
            spike(30_000_000, None, true),
        ]);
        facts.throttle = ThrottleEvidence::of(Some(&throttled));
        facts.max_ns = Some(40_000_000);
        assert_eq!(
            about_throttling(&facts),
            [
                "RT throttling seen in the trace: in 2 spikes a normal task ran while the woken real-time task waited (sched_rt_runtime_us=950000 of 1000000): the kernel throttled real-time threads"
            ]
        );
        // Combined over tests: counts add up, the worst named stays.
        let all = RunFacts::combine(&[
            RunFacts {
                throttle: ThrottleEvidence::of(Some(&throttled)),
                ..good_facts()
            },
            RunFacts {
                throttle: ThrottleEvidence::of(Some(&named)),
                ..good_facts()
            },
        ]);
        assert_eq!(all.throttle.throttled_spikes, 2);
        assert_eq!(
            all.throttle.worst_preempted_by.map(|(ns, _)| ns),
            Some(50_000_000)
        );
    }

    #[test]
    fn the_priority_advice_fits_the_command() {
        let advice_to = |option, realtime_allowed| {
            let facts = RunFacts {
                realtime_policy: false,
                priority_option: option,
                realtime_allowed,
                ..good_facts()
            };
            warnings(&rt_sys(), &facts, &MemoryLock::Locked)
                .into_iter()
                .find(|w| w.starts_with("no real-time priority"))
                .unwrap()
        };
        let advice = |option| advice_to(option, false);
        assert!(advice(Some("-p")).ends_with("run as root with -p 1..99 (or CAP_SYS_NICE)"));
        let chooses = advice(None);
        assert!(!chooses.contains("-p"), "{chooses}");
        assert!(chooses.ends_with("SCHED_FIFO 99"), "{chooses}");
        // A user who may use real-time priority (root) is not told to be
        // root: the option, or what kept the command from taking it.
        let allowed = |option| advice_to(option, true);
        assert_eq!(
            allowed(Some("-p")),
            "no real-time priority (policy other): latencies include ordinary scheduling \
             delays; give -p 1..99 (this user may use it)"
        );
        let asked_other = allowed(None);
        assert!(!asked_other.contains("root"), "{asked_other}");
        assert!(
            asked_other.ends_with("leave out --policy other (this user may use real-time priority): it then takes SCHED_FIFO 99"),
            "{asked_other}"
        );
        // Refused here (a cgroup without a real-time budget): why, in the same line.
        let facts = RunFacts {
            realtime_policy: false,
            priority_option: None,
            realtime_allowed: false,
            realtime_refusal: Some(
                "SCHED_FIFO refused (EPERM): /sys/fs/cgroup/cpu/x/cpu.rt_runtime_us is 0".into(),
            ),
            ..good_facts()
        };
        let refused: Vec<String> = warnings(&rt_sys(), &facts, &MemoryLock::Locked)
            .into_iter()
            .filter(|w| w.starts_with("no real-time priority"))
            .collect();
        assert_eq!(
            refused,
            [
                "no real-time priority (policy other): latencies include ordinary scheduling delays; SCHED_FIFO refused (EPERM): /sys/fs/cgroup/cpu/x/cpu.rt_runtime_us is 0"
            ]
        );
    }

    #[test]
    fn the_load_asked_for_is_not_other_load() {
        let shared = |w: &[String]| {
            w.iter()
                .find(|w| w.contains("shared with other load"))
                .cloned()
        };
        // 10 s on 2 CPUs: latscope 0.5 s (2.5 %), busy 90 %.
        let mut facts = good_facts();
        facts.busy_fraction = Some(0.9);
        let w = warnings(&rt_sys(), &facts, &MemoryLock::Locked);
        assert!(
            shared(&w)
                .unwrap()
                .contains("(88% busy with other work during"),
            "{w:?}"
        );
        // --load took 80 %: 7.5 % is left to others, under the 10 % limit.
        facts.load_fraction = Some(0.8);
        let w = warnings(&rt_sys(), &facts, &MemoryLock::Locked);
        assert_eq!(shared(&w), None, "{w:?}");
        // --load took 50 %: 37.5 % is someone else's, said as such.
        facts.load_fraction = Some(0.5);
        let w = warnings(&rt_sys(), &facts, &MemoryLock::Locked);
        assert!(
            shared(&w)
                .unwrap()
                .contains("(38% busy with other work than latscope's and its --load's during"),
            "{w:?}"
        );
        // Over several tests, weighted by their length; absent when no test had a load.
        let mut short = good_facts();
        short.load_fraction = Some(0.9);
        let mut long = good_facts();
        long.elapsed = Duration::from_secs(30);
        long.load_fraction = Some(0.1);
        let all = RunFacts::combine(&[short, long]);
        // (0.9 * 10 + 0.1 * 30) / 40 = 0.3
        assert!((all.load_fraction.unwrap() - 0.3).abs() < 1e-9);
        assert_eq!(RunFacts::combine(&[good_facts()]).load_fraction, None);
    }

    #[test]
    fn facts_of_several_tests_combine_into_one_warning() {
        let mut busy = good_facts();
        busy.busy_fraction = Some(0.5);
        busy.own_cpu_seconds = 0.0;
        busy.max_ns = Some(90_000);
        let mut quiet = good_facts();
        quiet.busy_fraction = Some(0.1);
        quiet.own_cpu_seconds = 0.0;
        quiet.elapsed = Duration::from_secs(30);
        let all = RunFacts::combine(&[busy, quiet]);
        // (0.5 * 10 + 0.1 * 30) / 40 = 0.2
        assert!((all.busy_fraction.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(all.elapsed, Duration::from_secs(40));
        assert_eq!(all.max_ns, Some(90_000));
        let w = warnings(&rt_sys(), &all, &MemoryLock::Locked);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("(20% busy"), "{w:?}");
    }

    #[test]
    fn a_well_set_up_rt_machine_has_no_warnings() {
        assert!(warnings(&rt_sys(), &good_facts(), &MemoryLock::Locked).is_empty());
    }

    #[test]
    fn each_problem_is_named() {
        // A stock kernel in a KVM guest with RT throttling on (the doctor's
        // fixture): the machine's problems are the doctor's findings.
        let sys = SysInfo::of(&Fixture::stock_vm().machine());
        assert_eq!(sys.rt_runtime_us, Some(950_000));
        assert_eq!(sys.virtualization.as_deref(), Some("KVM"));
        let mut facts = good_facts();
        facts.cpus_used = vec![0, 1];
        facts.busy_fraction = Some(0.9);
        facts.max_ns = Some(50_000_000);
        let w = warnings(&sys, &facts, &MemoryLock::NotRequested);
        assert_eq!(
            w[1..3],
            [
                "kernel 6.18.0 is not PREEMPT_RT: worst-case latencies are not bounded",
                "running in a virtual machine (KVM): the hypervisor adds latency the guest cannot see or control (LATSCOPE_QUIET_MACHINE_WARNINGS=1 leaves out these machine warnings)",
            ],
            "{w:#?}"
        );
        // Quieted, the machine's findings are left out, the run's stay.
        let quieted = RunFacts {
            machine_warnings_quieted: true,
            ..facts.clone()
        };
        let q = warnings(&sys, &quieted, &MemoryLock::NotRequested);
        assert_eq!(q.len() + 2, w.len(), "{q:#?}");
        assert!(
            q.iter()
                .all(|w| !w.contains("PREEMPT_RT") && !w.contains("virtual machine")),
            "{q:#?}"
        );
        let w = w.join("\n");
        assert!(w.contains("memory not locked"), "{w}");
        assert!(w.contains("shared with other load (88%"), "{w}");
        assert!(
            w.contains("RT throttling on (sched_rt_runtime_us=950000 of 1000000)"),
            "{w}"
        );
        facts.realtime_policy = false;
        assert!(
            warnings(&sys, &facts, &MemoryLock::Locked)
                .join("\n")
                .contains("no real-time priority")
        );
    }

    #[test]
    fn a_test_outside_the_isolated_cpus_is_named() {
        let mut facts = good_facts();
        facts.cpus_used = vec![1, 2];
        assert_eq!(
            warnings(&rt_sys(), &facts, &MemoryLock::Locked),
            [
                "measured on CPU 1, which is not isolated (isolated: 2-3): other tasks may run there; pin the test to the isolated CPUs (-a)"
            ]
        );
    }
}
