//! `latscope noise`'s options, checked into settings before anything is
//! measured: the CPUs (and the safety rules for real-time spinners), the
//! threshold, the duty cycle, the policy.

use super::{UsageError, VerdictSettings, check_cpu, checked_priority, policy_of, usage};
use crate::cli::{NoiseArgs, PolicyArg};
use crate::noise::DutyCycle;
use crate::rt::sched::{self, Policy};
use crate::units::values::{DEFAULT_NOISE_PERIOD_NS, DEFAULT_THRESHOLD_NS};
use std::time::Duration;

/// The shortest `--runtime`: the spinner looks at the time of its duty
/// cycle every 0.1 ms.
pub const MIN_RUNTIME_NS: u64 = 1_000_000;
/// With `--policy deadline`: how much shorter than the reservation's
/// runtime the spinner spins in every period (below `MIN_RUNTIME_NS`).
pub const DEADLINE_SPIN_GUARD_NS: u64 = 300_000;

/// Where the measured CPUs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpusFrom {
    /// `--cpus`.
    Named,
    /// The kernel's isolated CPUs.
    Isolated,
    /// Every usable CPU but the first and its SMT siblings.
    AllButOne,
}

impl CpusFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            CpusFrom::Named => "named",
            CpusFrom::Isolated => "isolated",
            CpusFrom::AllButOne => "all-but-one",
        }
    }
}

/// Everything `latscope noise` needs, checked.
#[derive(Debug, Clone)]
pub struct NoiseSettings {
    pub cpus: Vec<usize>,
    pub cpus_from: CpusFrom,
    /// The kernel's isolated CPUs (for the report and the warnings).
    pub isolated: Vec<usize>,
    pub policy: Policy,
    pub priority: i32,
    pub threshold_ns: u64,
    pub duration: Option<Duration>,
    pub duty: DutyCycle,
    /// `sched_rt_runtime_us` and `sched_rt_period_us` when read.
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
    /// What the default CPU choice left out and why (rt::pod_cpus's notes).
    pub cpus_left_out: Vec<String>,
    pub force: bool,
    /// Tell hardware interruptions from the OS's with the interference
    /// counter where it can run, unless this says why not
    /// (`--no-hw-counter`, the suite).
    pub hw_counter_off: Option<&'static str>,
    /// `--trace-spikes`: name the causes of interruptions above this (us).
    pub trace_spikes_us: Option<u64>,
    /// `--collector`: how `--trace-spikes` collects kernel events.
    pub collector: crate::rt::bpf::CollectorChoice,
    pub verdict: VerdictSettings,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
}

/// `cpus` without the main thread's core (`main_core`: its CPU and that
/// CPU's SMT siblings, rt::sysinfo::smt_siblings), as the RT tuning flows'
/// runners leave it out: a spinner there would share a core with the main
/// thread's work and count it as noise. `cpus` itself where that leaves
/// nothing (one CPU, or one core). The default CPU lists of `noise` and of
/// the oslat drop-in (settings::oslat).
pub fn apart_from_main_core(cpus: &[usize], main_core: &[usize]) -> Vec<usize> {
    let apart: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !main_core.contains(c))
        .collect();
    if apart.is_empty() {
        cpus.to_vec()
    } else {
        apart
    }
}

/// The CPUs measured without `--cpus`: the isolated ones that may be used,
/// else every usable CPU but the first (where the main thread, the monitor
/// and the trace reader run), or the only one. Either way without the SMT
/// siblings of that first CPU (`main_core`: it and the CPUs sharing its
/// core, rt::sysinfo::smt_siblings), as the RT tuning flows' runners leave
/// them out: a spinner there would share a core with the main thread's work
/// and count it as noise. Where that leaves nothing, the siblings stay.
pub fn default_cpus(
    isolated: &[usize],
    allowed: &[usize],
    main_core: &[usize],
) -> (Vec<usize>, CpusFrom) {
    let off_main_core = |cpus: Vec<usize>| apart_from_main_core(&cpus, main_core);
    let usable_isolated: Vec<usize> = isolated
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    if !usable_isolated.is_empty() {
        return (off_main_core(usable_isolated), CpusFrom::Isolated);
    }
    let rest = if allowed.len() > 1 {
        allowed[1..].to_vec()
    } else {
        allowed.to_vec()
    };
    (off_main_core(rest), CpusFrom::AllButOne)
}

/// The safety rules of real-time spinners (a spinner never sleeps: at a
/// real-time policy nothing of lower priority runs on its CPU but what RT
/// throttling lets through): only on CPUs the user named or that are
/// isolated, and with throttling off only on isolated CPUs unless `--force`.
pub fn check_realtime_safety(
    policy: Policy,
    cpus: &[usize],
    cpus_from: CpusFrom,
    isolated: &[usize],
    rt_runtime_us: Option<i64>,
    force: bool,
) -> Result<(), UsageError> {
    // A deadline spinner is bounded by its admitted reservation.
    if !policy.takes_priority() {
        return Ok(());
    }
    if cpus_from == CpusFrom::AllButOne {
        return Err(usage(format!(
            "a {policy} spinner never sleeps: it runs only on CPUs named with --cpus or isolated ones (none are isolated here); add --cpus LIST or use --policy other"
        )));
    }
    let exposed: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !isolated.contains(c))
        .collect();
    if rt_runtime_us.is_some_and(|r| r < 0) && !exposed.is_empty() && !force {
        return Err(usage(format!(
            "RT throttling is off (sched_rt_runtime_us = -1) and CPU {} is not isolated: a {policy} spinner would keep every other task off it for the whole run; add --force to run anyway, or use --policy other",
            crate::units::cpu_list(&exposed)
        )));
    }
    Ok(())
}

/// The pod choice's notes that describe the default CPUs of `cpus_from`:
/// none for `--cpus`; with isolated CPUs only what was left out (the
/// measured set is then the isolated CPUs, not the pod's remainder).
fn left_out_notes(notes: &[String], cpus_from: CpusFrom) -> Vec<String> {
    match cpus_from {
        CpusFrom::Named => Vec::new(),
        CpusFrom::Isolated => notes
            .iter()
            .filter(|n| n.starts_with("left out"))
            .cloned()
            .collect(),
        CpusFrom::AllButOne => notes.to_vec(),
    }
}

impl NoiseSettings {
    /// The noise test of `latscope suite`: one CPU (the last usable one),
    /// SCHED_OTHER, the default threshold.
    pub fn for_suite(duration: Duration) -> NoiseSettings {
        let allowed = sched::allowed_cpus();
        NoiseSettings {
            cpus: allowed.last().map(|&c| vec![c]).unwrap_or_default(),
            cpus_from: CpusFrom::AllButOne,
            isolated: crate::doctor::isolation::isolated_cpus(&crate::doctor::Machine::live()),
            policy: Policy::Other,
            priority: 0,
            threshold_ns: DEFAULT_THRESHOLD_NS,
            duration: Some(duration),
            duty: DutyCycle {
                runtime_ns: DEFAULT_NOISE_PERIOD_NS,
                period_ns: DEFAULT_NOISE_PERIOD_NS,
            },
            rt_runtime_us: None,
            rt_period_us: None,
            cpus_left_out: Vec::new(),
            force: false,
            hw_counter_off: Some("off (the suite's hwlat row measures the hardware)"),
            trace_spikes_us: None,
            collector: crate::rt::bpf::CollectorChoice::Auto,
            verdict: VerdictSettings::for_suite_row(),
            lock_memory: true,
            hold_dma_latency: true,
        }
    }

    pub fn from_args(args: &NoiseArgs) -> Result<NoiseSettings, UsageError> {
        let machine = crate::doctor::Machine::live();
        let isolated = crate::doctor::isolation::isolated_cpus(&machine);
        let (rt_runtime_us, rt_period_us) = crate::doctor::sched::rt_bandwidth(&machine);
        // The pod's choice: allowed and in the cgroup's cpuset, the first
        // CPU's whole core kept for housekeeping (rt::pod_cpus).
        let pod = crate::rt::pod_cpus::live();
        let allowed = if pod.usable.is_empty() {
            sched::allowed_cpus()
        } else {
            pod.usable.clone()
        };
        let s = Self::from_args_on(args, &isolated, &allowed, &pod.housekeeping, rt_runtime_us)?;
        let cpus_left_out = left_out_notes(&pod.notes, s.cpus_from);
        Ok(NoiseSettings {
            rt_period_us,
            cpus_left_out,
            ..s
        })
    }

    /// `from_args` on a machine described by its isolated CPUs, the CPUs
    /// this process may use, the first one's core (it and its SMT
    /// siblings) and `sched_rt_runtime_us`.
    pub fn from_args_on(
        args: &NoiseArgs,
        isolated: &[usize],
        allowed: &[usize],
        main_core: &[usize],
        rt_runtime_us: Option<i64>,
    ) -> Result<NoiseSettings, UsageError> {
        let (period_ns, priority) = (args.period, args.priority);
        // --runtime is the spinning time; with --policy deadline also the
        // reservation's runtime (the spinner then stops short of it).
        let deadline_asked = args.policy == Some(PolicyArg::Deadline);
        let asked = policy_of(
            args.policy,
            args.runtime.filter(|_| deadline_asked),
            args.deadline,
            Some(period_ns),
        )?;
        let policy = match asked {
            Some(p) => p,
            None if priority.is_some_and(|p| p > 0) => Policy::Fifo,
            None => Policy::Other,
        };
        let priority = match priority {
            Some(p) => checked_priority(p, policy)?,
            None if policy.takes_priority() => 1,
            None => 0,
        };
        let (cpus, cpus_from) = match &args.cpus {
            Some(list) => {
                for &cpu in &list.0 {
                    check_cpu(cpu, allowed)?;
                }
                (list.0.clone(), CpusFrom::Named)
            }
            None => default_cpus(isolated, allowed, main_core),
        };
        if cpus.is_empty() {
            return Err(usage("no CPU is usable"));
        }
        check_realtime_safety(
            policy,
            &cpus,
            cpus_from,
            isolated,
            rt_runtime_us,
            args.force,
        )?;
        let threshold_ns = args.threshold;
        let runtime_ns = args.runtime.unwrap_or(period_ns);
        if runtime_ns > period_ns {
            return Err(usage(format!(
                "--runtime {} is longer than --period {}: the spinner runs at most the whole period",
                crate::units::format_ns(runtime_ns as i64),
                crate::units::format_ns(period_ns as i64)
            )));
        }
        if runtime_ns < MIN_RUNTIME_NS {
            return Err(usage("--runtime: at least 1 ms"));
        }
        let duration = args.duration;
        Ok(NoiseSettings {
            cpus,
            cpus_from,
            isolated: isolated.to_vec(),
            policy,
            priority,
            threshold_ns,
            duration,
            duty: DutyCycle {
                // A deadline spinner stops short of its reservation's
                // runtime: the duty cycle's end is looked at only every
                // 0.1 ms, and running past the runtime gets it throttled.
                runtime_ns: if policy.reservation().is_some() {
                    runtime_ns - DEADLINE_SPIN_GUARD_NS
                } else {
                    runtime_ns
                },
                period_ns,
            },
            rt_runtime_us,
            rt_period_us: None,
            cpus_left_out: Vec::new(),
            force: args.force,
            hw_counter_off: args.no_hw_counter.then_some("off (--no-hw-counter)"),
            trace_spikes_us: args.spikes.trace_spikes,
            collector: super::collector(&args.spikes, None)?,
            verdict: VerdictSettings::from_args(&args.verdict)?,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_left_out_notes_fit_how_the_cpus_were_chosen() {
        let notes = [
            "left out CPU 0,4 (housekeeping)".to_string(),
            "measuring CPU 1 although".to_string(),
        ];
        assert!(left_out_notes(&notes, CpusFrom::Named).is_empty());
        assert_eq!(left_out_notes(&notes, CpusFrom::Isolated), notes[..1]);
        assert_eq!(left_out_notes(&notes, CpusFrom::AllButOne), notes);
    }
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn on(
        args: &[&str],
        isolated: &[usize],
        rt_runtime: Option<i64>,
    ) -> Result<NoiseSettings, UsageError> {
        let cli = Cli::try_parse_from(["latscope", "noise"].iter().chain(args))
            .map_err(crate::settings::refusal)?;
        match cli.command {
            Command::Noise(a) => {
                NoiseSettings::from_args_on(&a, isolated, &[0, 1, 2, 3], &[0], rt_runtime)
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults() {
        let s = on(&[], &[], Some(950_000)).unwrap();
        assert_eq!(
            (s.cpus.clone(), s.cpus_from),
            (vec![1, 2, 3], CpusFrom::AllButOne)
        );
        assert_eq!((s.policy, s.priority), (Policy::Other, 0));
        assert_eq!(s.threshold_ns, 1_000);
        assert_eq!(s.duty.runtime_ns, s.duty.period_ns);
        assert!(!s.duty.sleeps() && s.duration.is_none());
        let s = on(&[], &[2, 3], Some(950_000)).unwrap();
        assert_eq!((s.cpus, s.cpus_from), (vec![2, 3], CpusFrom::Isolated));
        assert_eq!(
            default_cpus(&[], &[5], &[5]),
            (vec![5], CpusFrom::AllButOne)
        );
    }

    #[test]
    fn the_default_leaves_out_the_main_threads_core() {
        // Two threads per core, siblings N and N+4 (as Intel numbers them):
        // CPU 0's core is 0 and 4.
        let allowed = [0, 1, 2, 3, 4, 5, 6, 7];
        assert_eq!(
            default_cpus(&[], &allowed, &[0, 4]),
            (vec![1, 2, 3, 5, 6, 7], CpusFrom::AllButOne)
        );
        // Siblings next to each other (0-1): the second core on.
        assert_eq!(
            default_cpus(&[], &[0, 1, 2, 3], &[0, 1]),
            (vec![2, 3], CpusFrom::AllButOne)
        );
        // An isolated sibling of the main CPU is left out too.
        assert_eq!(
            default_cpus(&[2, 3, 4, 6], &allowed, &[0, 4]),
            (vec![2, 3, 6], CpusFrom::Isolated)
        );
        // Where the core is all there is, its other thread is measured.
        assert_eq!(
            default_cpus(&[], &[0, 1], &[0, 1]),
            (vec![1], CpusFrom::AllButOne)
        );
        assert_eq!(
            default_cpus(&[4], &allowed, &[0, 4]),
            (vec![4], CpusFrom::Isolated)
        );
        // No SMT: every CPU but the first, as before.
        assert_eq!(
            default_cpus(&[], &[0, 1], &[0]),
            (vec![1], CpusFrom::AllButOne)
        );
    }

    #[test]
    fn options() {
        let s = on(
            &[
                "--cpus",
                "1",
                "--threshold",
                "5",
                "-D",
                "2",
                "-p",
                "10",
                "--runtime",
                "500ms",
                "--period",
                "1s",
            ],
            &[],
            Some(950_000),
        )
        .unwrap();
        assert_eq!(s.cpus, vec![1]);
        assert_eq!((s.policy, s.priority), (Policy::Fifo, 10));
        assert_eq!(s.threshold_ns, 5_000);
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!(
            (s.duty.runtime_ns, s.duty.period_ns),
            (500_000_000, 1_000_000_000)
        );
        assert_eq!(
            on(&["--threshold", "300ns"], &[], None)
                .unwrap()
                .threshold_ns,
            300
        );
    }

    #[test]
    fn realtime_spinners_only_where_safe() {
        let e = on(&["--policy", "fifo"], &[], Some(950_000)).unwrap_err().0;
        assert!(
            e.contains("only on CPUs named with --cpus or isolated"),
            "{e}"
        );
        assert!(on(&["--policy", "fifo"], &[3], Some(-1)).is_ok());
        assert!(on(&["-p", "5", "--cpus", "1"], &[], Some(950_000)).is_ok());
        let e = on(&["-p", "5", "--cpus", "1"], &[], Some(-1))
            .unwrap_err()
            .0;
        assert!(
            e.contains("RT throttling is off") && e.contains("--force"),
            "{e}"
        );
        assert!(on(&["-p", "5", "--cpus", "1", "--force"], &[], Some(-1)).is_ok());
        assert!(on(&["-p", "5", "--cpus", "1"], &[1], Some(-1)).is_ok());
        // SCHED_OTHER is always safe.
        assert!(on(&["--cpus", "1"], &[], Some(-1)).is_ok());
    }

    #[test]
    fn bad_values_are_one_line() {
        for (args, expected) in [
            (vec!["--threshold", "0"], "must be longer than 0"),
            (vec!["--threshold", "2s"], "at most 1 s"),
            (vec!["--threshold", "x"], "--threshold"),
            (vec!["--runtime", "2s"], "longer than --period"),
            (vec!["--runtime", "10us"], "at least 1 ms"),
            (vec!["--period", "2m"], "at most 60 s"),
            (vec!["--cpus", "1000"], "not online"),
            (vec!["-D", "0"], "longer than 0"),
            (vec!["-p", "100"], "outside the fifo range"),
            (
                vec!["--policy", "other", "-p", "5"],
                "outside the other range",
            ),
        ] {
            let e = on(&args, &[], Some(950_000)).expect_err("refused").0;
            assert!(e.contains(expected), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
