//! `latscope timer`'s options (Xenomai `latency`'s letters plus latscope's),
//! checked into settings before anything is measured.

use super::{
    OutputTarget, Outputs, ReportFormat, UsageError, check_cpu, check_output_path,
    checked_priority_for, policy_of, usage,
};
use crate::cli::{OutputFormat, TimerArgs};
use crate::rt::sched::{self, Policy};
use crate::timer::{Figure, WakeMethod};
use crate::units::values::{
    DEFAULT_BUCKET_NS, DEFAULT_CELLS, DEFAULT_DATA_LINES, DEFAULT_PERIOD_US, DEFAULT_RT_PRIORITY,
    DEFAULT_TIMER_CPU,
};
use std::time::Duration;

/// The shortest period accepted even with high-resolution timers: below it a
/// sampling thread spends most of its CPU on waking up (a FIFO thread that
/// never sleeps would starve the CPU).
pub const MIN_PERIOD_NS: u64 = 10_000;

/// Everything `latscope timer` needs, checked.
#[derive(Debug, Clone)]
pub struct TimerSettings {
    pub cpus: Vec<usize>,
    pub policy: Policy,
    pub priority: i32,
    pub period_us: u64,
    pub wake: WakeMethod,
    pub warmup_loops: u64,
    pub duration: Option<Duration>,
    pub histogram_cells: usize,
    pub bucket_ns: u64,
    pub data_lines: u64,
    pub figure: Figure,
    pub breakdown: bool,
    /// `--trace-spikes`: attribute every sample above this (us).
    pub trace_spikes_us: Option<u64>,
    /// `--collector`: how `--breakdown` and `--trace-spikes` collect kernel events.
    pub collector: crate::rt::bpf::CollectorChoice,
    pub freeze_trace: bool,
    pub break_on_switch: bool,
    pub format: OutputFormat,
    pub print_histograms: bool,
    pub print_stats: bool,
    pub gnuplot: Option<OutputTarget>,
    pub outputs: Outputs,
    pub max_latency_us: Option<u64>,
    /// `--fail-if`: absolute limits held against every thread after the run.
    pub fail_if: Vec<crate::threshold::Threshold>,
    /// `--on-threshold`, `--on-end`.
    pub actions: super::actions::Actions,
    /// `--load`: the background load generators, checked.
    pub loads: Vec<crate::load::LoadSpec>,
    pub quiet: bool,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
    /// Warnings about options that were taken differently than given.
    pub notices: Vec<String>,
}

/// The shortest period this machine can serve: the clock's resolution (a
/// kernel without high-resolution timers only has jiffies), at least
/// `MIN_PERIOD_NS`.
pub fn minimum_period_ns() -> u64 {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid output pointer; CLOCK_MONOTONIC exists.
    let resolution = if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } == 0 {
        res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64
    } else {
        0
    };
    resolution.max(MIN_PERIOD_NS)
}

impl TimerSettings {
    /// The timer test of `latscope suite`: one thread per usable CPU at the
    /// default period, no warm-up (the suite's time is short), no output of
    /// its own.
    pub fn for_suite(policy: Policy, priority: i32, duration: Duration) -> TimerSettings {
        TimerSettings {
            cpus: sched::allowed_cpus(),
            policy,
            priority,
            period_us: DEFAULT_PERIOD_US,
            wake: WakeMethod::Nanosleep,
            warmup_loops: 0,
            duration: Some(duration),
            histogram_cells: DEFAULT_CELLS,
            bucket_ns: DEFAULT_BUCKET_NS,
            data_lines: DEFAULT_DATA_LINES,
            figure: Figure::User,
            breakdown: false,
            trace_spikes_us: None,
            collector: crate::rt::bpf::CollectorChoice::Auto,
            freeze_trace: false,
            break_on_switch: false,
            format: OutputFormat::Modern,
            print_histograms: false,
            print_stats: false,
            gnuplot: None,
            outputs: Outputs::default(),
            max_latency_us: None,
            fail_if: Vec::new(),
            actions: Default::default(),
            loads: Vec::new(),
            quiet: true,
            lock_memory: true,
            hold_dma_latency: true,
            notices: Vec::new(),
        }
    }

    pub fn from_args(args: &TimerArgs) -> Result<TimerSettings, UsageError> {
        let mut notices = Vec::new();
        let period_us = period_of(args)?;
        let figure = match args.mode {
            1 => Figure::Thread,
            2 => Figure::Irq,
            _ => Figure::User,
        };
        // Xenomai's default is FIFO 99; a user who may not use real-time
        // priorities and asked for none measures at normal priority (the
        // report says so) instead of failing. An explicit -P or --policy
        // that cannot be granted stays an error naming the limit.
        let asked = policy_of(
            args.policy,
            args.reservation.runtime,
            args.reservation.deadline,
            Some(period_us * 1000),
        )?;
        let policy = match asked {
            Some(p) => p,
            None if args.priority.is_none() && !sched::can_use_realtime() => Policy::Other,
            None => Policy::Fifo,
        };
        let priority = match args.priority {
            Some(p) => checked_priority_for("-P", p, policy)?,
            None if policy.takes_priority() => DEFAULT_RT_PRIORITY as i32,
            None => 0,
        };
        let cpus = cpus_of(args)?;
        let (histogram_cells, bucket_ns, data_lines) = (args.cells, args.bucket, args.lines);
        // 0: until Ctrl-C.
        let duration = Some(args.duration).filter(|d| !d.is_zero());
        let mut quiet = args.quiet;
        if quiet && duration.is_none() {
            notices.push("-q requires -T, ignoring -q".to_string());
            quiet = false;
        }
        let warmup_loops = args.warmup;
        let format = args.format;
        if format == OutputFormat::Classic && cpus.len() > 1 {
            return Err(usage(
                "--format classic shows one sampling thread, as Xenomai's latency does: drop --cpus/--smp or the classic format",
            ));
        }
        let wake = if args.timerfd {
            WakeMethod::Timerfd
        } else if args.posix_timer {
            WakeMethod::PosixTimer
        } else if args.nanosleep {
            WakeMethod::Nanosleep
        } else if format == OutputFormat::Classic {
            WakeMethod::Timerfd
        } else {
            WakeMethod::Nanosleep
        };
        let gnuplot = args
            .gnuplot
            .as_deref()
            .map(|p| check_output_path("-g", p))
            .transpose()?;
        let max_latency_us = args.max_latency;
        let actions = super::actions::from_args(
            &args.actions.on_threshold,
            &args.actions.on_end,
            max_latency_us,
        )?;
        let rteval_xml = args
            .rteval_xml
            .as_deref()
            .map(|p| check_output_path(ReportFormat::RtevalXml.option(), p))
            .transpose()?;
        let mut outputs = Outputs::with_actions(
            &args.outputs,
            &[
                ("-g", gnuplot.as_ref()),
                (ReportFormat::RtevalXml.option(), rteval_xml.as_ref()),
            ],
            &actions,
        )?;
        outputs.rteval_xml = rteval_xml;
        Ok(TimerSettings {
            cpus,
            policy,
            priority,
            period_us,
            wake,
            warmup_loops,
            duration,
            histogram_cells,
            bucket_ns,
            data_lines,
            figure,
            breakdown: args.breakdown || figure != Figure::User,
            trace_spikes_us: args.spikes.trace_spikes,
            collector: super::collector(
                &args.spikes,
                Some(args.breakdown || figure != Figure::User),
            )?,
            freeze_trace: args.freeze,
            break_on_switch: args.break_on_switch,
            format,
            print_histograms: args.histograms,
            print_stats: args.stats,
            gnuplot,
            outputs,
            max_latency_us,
            fail_if: super::test_thresholds(&args.thresholds)?,
            actions,
            loads: crate::load::from_args(&args.load.load)?,
            quiet,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            notices,
        })
    }
}

/// `-p`: the period in microseconds (at most 1 s, clap checked), no
/// shorter than this machine's timers serve.
fn period_of(args: &TimerArgs) -> Result<u64, UsageError> {
    let minimum_ns = minimum_period_ns();
    let period_us = args.period;
    if period_us * 1000 < minimum_ns {
        return Err(usage(format!(
            "-p {period_us}: shorter than this machine can serve; the minimum is {} us",
            minimum_ns.div_ceil(1000)
        )));
    }
    Ok(period_us)
}

/// `--cpus`, `--smp` or `-c`: the CPUs of the sampling threads (CPU 0, or
/// the first one allowed, by default).
fn cpus_of(args: &TimerArgs) -> Result<Vec<usize>, UsageError> {
    let allowed = sched::allowed_cpus();
    Ok(if let Some(list) = &args.cpus {
        for &cpu in &list.0 {
            check_cpu(cpu, &allowed)?;
        }
        list.0.clone()
    } else if args.smp {
        allowed.clone()
    } else if let Some(cpu) = args.cpu {
        check_cpu(cpu, &allowed)?;
        vec![cpu]
    } else if allowed.contains(&DEFAULT_TIMER_CPU) {
        vec![DEFAULT_TIMER_CPU]
    } else {
        vec![*allowed.first().ok_or_else(|| usage("no CPU is usable"))?]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<TimerSettings, UsageError> {
        let cli = Cli::try_parse_from(["latscope", "timer"].iter().chain(args))
            .map_err(super::super::refusal)?;
        match cli.command {
            Command::Timer(a) => TimerSettings::from_args(&a),
            _ => unreachable!(),
        }
    }

    fn error(args: &[&str]) -> String {
        settings(args).expect_err("must be refused").0
    }

    #[test]
    fn xenomai_defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.period_us, 100);
        assert_eq!(
            (s.histogram_cells, s.bucket_ns, s.data_lines),
            (300, 1000, 21)
        );
        assert_eq!((s.policy, s.priority), (Policy::Fifo, 99));
        assert_eq!(s.figure, Figure::User);
        assert_eq!(s.wake, WakeMethod::Nanosleep);
        assert_eq!(s.warmup_loops, 1);
        assert!(s.duration.is_none() && !s.breakdown);
        let classic = settings(&["--format", "classic"]).unwrap();
        assert_eq!(classic.wake, WakeMethod::Timerfd);
        let asked = settings(&["--format", "classic", "--nanosleep"]).unwrap();
        assert_eq!(asked.wake, WakeMethod::Nanosleep);
    }

    #[test]
    fn options_are_taken_as_xenomai_means_them() {
        let s = settings(&[
            "-p", "1000", "-H", "50", "-B", "500", "-l", "0", "-T", "2", "-P", "80", "-t", "2",
        ])
        .unwrap();
        assert_eq!(
            (s.period_us, s.histogram_cells, s.bucket_ns),
            (1000, 50, 500)
        );
        assert_eq!((s.data_lines, s.priority), (0, 80));
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!(s.figure, Figure::Irq);
        assert!(s.breakdown, "-t 2 traces the kernel");
        assert_eq!(
            settings(&["-T", "1m"]).unwrap().duration,
            Some(Duration::from_secs(60))
        );
        assert_eq!(settings(&["-T", "0"]).unwrap().duration, None);
        assert_eq!(settings(&["-p", "1000000"]).unwrap().period_us, 1_000_000);
    }

    /// `timer` parsed as under the `latency` name (Xenomai's letters whole).
    fn settings_as_latency(args: &[&str]) -> TimerSettings {
        use clap::FromArgMatches;
        let matches = crate::cli::command_with_xenomai_letters(true)
            .try_get_matches_from(["latscope", "timer"].iter().chain(args))
            .expect("parsed");
        match Cli::from_arg_matches(&matches).expect("parsed").command {
            Command::Timer(a) => TimerSettings::from_args(&a).expect("valid"),
            _ => unreachable!(),
        }
    }

    #[test]
    fn dash_d_is_the_duration_but_under_the_name_latency() {
        // As everywhere in latscope (issue 40, item 14); -T, Xenomai's
        // letter, too.
        assert_eq!(
            settings(&["-D", "3"]).unwrap().duration,
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            settings(&["-T", "3"]).unwrap().duration,
            Some(Duration::from_secs(3))
        );
        assert!(settings(&["--device", "0"]).unwrap().duration.is_none());
        // Xenomai's: -D the device number (ignored), -T the duration.
        let s = settings_as_latency(&["-D", "3", "-T", "2"]);
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert!(settings_as_latency(&["-D", "3"]).duration.is_none());
        // `--format classic` keeps Xenomai's -h but -D stays the duration.
        let matches = crate::cli::command_with_xenomai_letters(false)
            .try_get_matches_from(["latscope", "timer", "--format", "classic", "-D", "3", "-h"])
            .expect("parsed");
        let Ok(Cli {
            command: Command::Timer(a),
        }) = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
        else {
            unreachable!()
        };
        assert!(a.histograms);
        assert_eq!(
            TimerSettings::from_args(&a).unwrap().duration,
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn quiet_without_duration_is_a_warning() {
        let s = settings(&["-q"]).unwrap();
        assert!(!s.quiet);
        assert_eq!(s.notices, vec!["-q requires -T, ignoring -q".to_string()]);
        assert!(settings(&["-q", "-T", "1"]).unwrap().quiet);
    }

    #[test]
    fn bad_values_are_refused_with_the_fix() {
        for (args, expected) in [
            (vec!["-p", "0"], "-p/--period must be at least 1"),
            (vec!["-p", "-5"], "must not be negative"),
            (vec!["-p", "1000001"], "cannot be longer than 1 s"),
            (vec!["-p", "1"], "the minimum is"),
            (vec!["-p", "abc"], "must be a whole number"),
            (vec!["-p", ""], "-p/--period '' must be a whole number"),
            (vec!["-H", "0"], "-H/--cells must be at least 1"),
            (vec!["-B", "0"], "-B/--bucket must be at least 1"),
            (vec!["-H", "99999999"], "at most"),
            (vec!["-t", "3"], "is not a test mode"),
            (vec!["-l", "-1"], "-l/--lines '-1' must not be negative"),
            (vec!["-P", "100"], "outside the fifo range 1..99"),
            (vec!["-P", "0"], "outside the fifo range"),
            (vec!["-c", "4096"], "no such CPU"),
            (vec!["-c", "999"], "not online"),
            (vec!["--cpus", "0-"], "is not a CPU list"),
            (vec!["--cpus", "1-0"], "is not a CPU list"),
            (vec!["--cpus", "0-99999999999"], "beyond the highest CPU"),
            (vec!["-T", "x"], "-D/--duration:"),
            (vec!["-D", "x"], "-D/--duration:"),
            (vec!["-g", "/nonexistent-dir/g.txt"], "does not exist"),
            (vec!["-g", "-", "--json", "-"], "both want standard output"),
            (vec!["--warmup", "99999"], "at most 3600"),
            (vec!["--max-latency", "0"], "at least 1"),
        ] {
            let e = error(&args);
            assert!(e.contains(expected), "{args:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn classic_format_is_one_thread() {
        let cpus = sched::allowed_cpus();
        if cpus.len() > 1 {
            assert!(error(&["--format", "classic", "--smp"]).contains("one sampling thread"));
        }
        assert_eq!(settings(&["--smp"]).unwrap().cpus, cpus);
    }
}
