//! `latscope timer`'s options (Xenomai `latency`'s letters plus latscope's),
//! checked into settings before anything is measured.

use super::{
    OutputTarget, Outputs, UsageError, check_cpu, check_output_path, checked_priority_for,
    parse_count, parse_priority, policy_of, positive, usage,
};
use crate::cli::{OutputFormat, TimerArgs};
use crate::report::MAX_CELLS;
use crate::rt::sched::{self, Policy};
use crate::timer::{Figure, WakeMethod};
use crate::units::{parse_duration, shown};
use std::time::Duration;

pub const DEFAULT_PERIOD_US: u64 = 100;
/// `-H`'s default: Xenomai's code uses 300 cells (its help says 200).
pub const DEFAULT_CELLS: usize = 300;
/// `-B`'s default cell width, in nanoseconds.
pub const DEFAULT_BUCKET_NS: u64 = 1000;
/// `-l`'s default: RTD lines between two RTT/RTH header pairs.
pub const DEFAULT_DATA_LINES: u64 = 21;
/// Xenomai refuses periods above one second.
pub const MAX_PERIOD_US: u64 = 1_000_000;
/// The shortest period accepted even with high-resolution timers: below it a
/// sampling thread spends most of its CPU on waking up (a FIFO thread that
/// never sleeps would starve the CPU).
pub const MIN_PERIOD_NS: u64 = 10_000;
/// Widest histogram cell: one second.
pub const MAX_BUCKET_NS: u64 = 1_000_000_000;
/// At most this many warm-up loops (one hour).
pub const MAX_WARMUP_LOOPS: u64 = 3600;
/// Highest CPU number `--cpus` accepts (the kernel's CPU_SETSIZE).
const MAX_CPU: usize = 1023;

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

/// A CPU list (`0,2-3`), bounded so that a hostile range cannot allocate.
pub fn parse_cpus(text: &str) -> Result<Vec<usize>, UsageError> {
    let bad = || {
        usage(format!(
            "--cpus '{}' is not a CPU list (e.g. --cpus 0,2-3)",
            shown(text)
        ))
    };
    let number = |t: &str| -> Result<usize, UsageError> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match t.parse::<usize>() {
            Ok(n) if n <= MAX_CPU => Ok(n),
            _ => Err(usage(format!(
                "--cpus: CPU {} is beyond the highest CPU number {MAX_CPU}",
                shown(t)
            ))),
        }
    };
    let mut cpus = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    // A CPU named twice (1,1 or 0-2,1) is a slip: refused rather than
    // measured once without a word.
    if let Some(w) = cpus.windows(2).find(|w| w[0] == w[1]) {
        return Err(usage(format!(
            "--cpus '{}' names CPU {} twice: name each CPU once",
            shown(text),
            w[0]
        )));
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    Ok(cpus)
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
        let figure = figure_of(args)?;
        // Xenomai's default is FIFO 99; a user who may not use real-time
        // priorities and asked for none measures at normal priority (the
        // report says so) instead of failing. An explicit -P or --policy
        // that cannot be granted stays an error naming the limit.
        let asked = policy_of(
            args.policy,
            args.reservation.runtime.as_deref(),
            args.reservation.deadline.as_deref(),
            Some(period_us * 1000),
        )?;
        let policy = match asked {
            Some(p) => p,
            None if args.priority.is_none() && !sched::can_use_realtime() => Policy::Other,
            None => Policy::Fifo,
        };
        let priority = match args.priority.as_deref() {
            Some(t) => checked_priority_for("-P", parse_priority("-P", t)?, policy)?,
            None if policy.takes_priority() => 99,
            None => 0,
        };
        let cpus = cpus_of(args)?;
        let (histogram_cells, bucket_ns) = histogram_of(args)?;
        let data_lines = match args.lines.as_deref() {
            None => DEFAULT_DATA_LINES,
            Some(t) => parse_count("-l", t)?,
        };
        let duration = match args.duration.as_deref() {
            None => None,
            Some(t) => {
                let d = parse_duration(t, 1_000_000_000).map_err(|e| usage(format!("-T: {e}")))?;
                (!d.is_zero()).then_some(d)
            }
        };
        let mut quiet = args.quiet;
        if quiet && duration.is_none() {
            notices.push("-q requires -T, ignoring -q".to_string());
            quiet = false;
        }
        let warmup_loops = warmup_of(args)?;
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
        let outputs = Outputs::from_args(&args.outputs, &[("-g", gnuplot.as_ref())])?;
        let max_latency_us = args
            .max_latency
            .as_deref()
            .map(|t| positive("--max-latency", t))
            .transpose()?;
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
            trace_spikes_us: super::spike_threshold(&args.spikes)?,
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
            actions: super::actions::from_args(
                &args.actions.on_threshold,
                &args.actions.on_end,
                max_latency_us,
            )?,
            loads: crate::load::from_args(&args.load.load)?,
            quiet,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            notices,
        })
    }
}

/// `-p`: the period in microseconds, at most 1 s and no shorter than
/// this machine's timers serve.
fn period_of(args: &TimerArgs) -> Result<u64, UsageError> {
    let minimum_ns = minimum_period_ns();
    let period_us = match args.period.as_deref() {
        None => DEFAULT_PERIOD_US,
        Some(t) => {
            let us = positive("-p", t)?;
            if us > MAX_PERIOD_US {
                return Err(usage(format!(
                    "-p {us}: the period cannot be longer than 1 s (-p {MAX_PERIOD_US})"
                )));
            }
            us
        }
    };
    if period_us * 1000 < minimum_ns {
        return Err(usage(format!(
            "-p {period_us}: shorter than this machine can serve; the minimum is {} us",
            minimum_ns.div_ceil(1000)
        )));
    }
    Ok(period_us)
}

/// `-t`: which wake-up figure the test reports.
fn figure_of(args: &TimerArgs) -> Result<Figure, UsageError> {
    Ok(match args.mode.as_deref().map(str::trim) {
        None | Some("0") => Figure::User,
        Some("1") => Figure::Thread,
        Some("2") => Figure::Irq,
        Some(other) => {
            return Err(usage(format!(
                "-t '{}' is not a test mode: use 0 (user-space wake-up), 1 (thread latency) or 2 (IRQ latency)",
                shown(other)
            )));
        }
    })
}

/// `--cpus`, `--smp` or `-c`: the CPUs of the sampling threads (CPU 0, or
/// the first one allowed, by default).
fn cpus_of(args: &TimerArgs) -> Result<Vec<usize>, UsageError> {
    let allowed = sched::allowed_cpus();
    Ok(if let Some(list) = args.cpus.as_deref() {
        let cpus = parse_cpus(list)?;
        for &cpu in &cpus {
            check_cpu(cpu, &allowed)?;
        }
        cpus
    } else if args.smp {
        allowed.clone()
    } else if let Some(t) = args.cpu.as_deref() {
        let cpu = parse_count("-c", t)?;
        let cpu = usize::try_from(cpu)
            .ok()
            .filter(|&c| c <= MAX_CPU)
            .ok_or_else(|| usage(format!("-c {cpu}: no such CPU")))?;
        check_cpu(cpu, &allowed)?;
        vec![cpu]
    } else if allowed.contains(&0) {
        vec![0]
    } else {
        vec![*allowed.first().ok_or_else(|| usage("no CPU is usable"))?]
    })
}

/// `-H` and `-B`: Xenomai's histogram cells and their width in ns.
fn histogram_of(args: &TimerArgs) -> Result<(usize, u64), UsageError> {
    let histogram_cells = match args.cells.as_deref() {
        None => DEFAULT_CELLS,
        Some(t) => {
            let n = positive("-H", t)?;
            if n > MAX_CELLS as u64 {
                return Err(usage(format!(
                    "-H {n}: at most {MAX_CELLS} histogram cells; use a wider -B instead"
                )));
            }
            n as usize
        }
    };
    let bucket_ns = match args.bucket.as_deref() {
        None => DEFAULT_BUCKET_NS,
        Some(t) => {
            let n = positive("-B", t)?;
            if n > MAX_BUCKET_NS {
                return Err(usage(format!(
                    "-B {n}: a histogram cell can be at most 1 s ({MAX_BUCKET_NS} ns) wide"
                )));
            }
            n
        }
    };
    Ok((histogram_cells, bucket_ns))
}

/// `--warmup`: loops measured but not reported (at most one hour's).
fn warmup_of(args: &TimerArgs) -> Result<u64, UsageError> {
    Ok(match args.warmup.as_deref() {
        None => 1,
        Some(t) => {
            let n = parse_count("--warmup", t)?;
            if n > MAX_WARMUP_LOOPS {
                return Err(usage(format!(
                    "--warmup {n}: at most {MAX_WARMUP_LOOPS} loops (one hour)"
                )));
            }
            n
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<TimerSettings, UsageError> {
        let cli =
            Cli::try_parse_from(["latscope", "timer"].iter().chain(args)).expect("clap accepts");
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
            "-D", "3",
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
            (vec!["-p", "0"], "-p must be at least 1"),
            (vec!["-p", "-5"], "must not be negative"),
            (vec!["-p", "1000001"], "cannot be longer than 1 s"),
            (vec!["-p", "1"], "the minimum is"),
            (vec!["-p", "abc"], "must be a whole number"),
            (vec!["-H", "0"], "-H must be at least 1"),
            (vec!["-B", "0"], "-B must be at least 1"),
            (vec!["-H", "99999999"], "at most"),
            (vec!["-t", "3"], "is not a test mode"),
            (vec!["-P", "100"], "outside the fifo range 1..99"),
            (vec!["-P", "0"], "outside the fifo range"),
            (vec!["-c", "4096"], "no such CPU"),
            (vec!["-c", "999"], "not online"),
            (vec!["--cpus", "0-"], "is not a CPU list"),
            (vec!["--cpus", "1-0"], "is not a CPU list"),
            (vec!["--cpus", "0-99999999999"], "beyond the highest CPU"),
            (vec!["-T", "x"], "-T:"),
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

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0,2-3").unwrap(), vec![0, 2, 3]);
        assert!(parse_cpus("0,2-3,2").is_err_and(|e| e.0.contains("names CPU 2 twice")));
        assert!(parse_cpus("1,1").is_err());
        assert_eq!(parse_cpus(" 1 ").unwrap(), vec![1]);
        assert!(parse_cpus("").is_err());
        assert!(parse_cpus(",").is_err());
        assert!(parse_cpus("a").is_err());
    }
}
