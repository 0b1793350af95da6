//! Turns raw command-line values into typed, checked settings. Every rule a
//! user can break is here, and each breaks with one line saying what is wrong
//! and what to do (exit code 2), before anything is measured.

use crate::cli::{MqArgs, OutputFormat, VerdictArgs};
use crate::ipc::harness::{PairPlan, RunPlan};
use crate::rt::sched::{self, Policy};
use crate::rt::sysinfo::online_cpus;
use crate::units::{parse_duration, shown};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A usage error: the message is one line, shown as `latscope: error: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

pub const MAX_PAIRS: u64 = 255;
/// Longest interval accepted: one hour (longer is surely a typo in microseconds).
pub const MAX_INTERVAL_US: u64 = 3_600_000_000;
const SECOND_NS: u128 = 1_000_000_000;

/// A whole non-negative number, with a message naming the option.
pub fn parse_count(option: &str, text: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let text = shown(text);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        let why = if t.starts_with('-') {
            "must not be negative"
        } else {
            "must be a whole number"
        };
        return Err(usage(format!(
            "{option} '{text}' {why} (e.g. {option} 100)"
        )));
    }
    t.parse().map_err(|_| {
        usage(format!(
            "{option} '{text}' is too large (at most {})",
            u64::MAX
        ))
    })
}

/// A JSON destination: standard output, or a file in an existing, writable directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTarget {
    Stdout,
    File(PathBuf),
}

pub fn check_json_path(path: &Path) -> Result<JsonTarget, UsageError> {
    /// Longest file name (NAME_MAX) and path (PATH_MAX) Linux accepts.
    const NAME_MAX: usize = 255;
    const PATH_MAX: usize = 4096;
    if path.as_os_str() == "-" {
        return Ok(JsonTarget::Stdout);
    }
    if path.as_os_str().is_empty() {
        return Err(usage(
            "--json needs a file name (or '-' for standard output)",
        ));
    }
    let shown_path = shown(&path.to_string_lossy());
    if path.as_os_str().len() >= PATH_MAX {
        return Err(usage(format!(
            "--json {shown_path}: path longer than {PATH_MAX} bytes; choose a shorter path"
        )));
    }
    if path.file_name().is_some_and(|n| n.len() > NAME_MAX) {
        return Err(usage(format!(
            "--json {shown_path}: file name longer than {NAME_MAX} bytes; choose a shorter name"
        )));
    }
    if path.is_dir() {
        return Err(usage(format!(
            "--json {shown_path}: is a directory; give a file name inside it"
        )));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let shown_dir = shown(&dir.to_string_lossy());
    if !dir.is_dir() {
        let why = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(usage(format!(
            "--json {shown_path}: {shown_dir} {why}; create the directory or choose another path"
        )));
    }
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| usage("--json path contains a NUL byte"))?;
    // SAFETY: valid C string.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
        return Err(usage(format!(
            "--json {shown_path}: directory {shown_dir} is not writable; choose another path"
        )));
    }
    Ok(JsonTarget::File(path.to_path_buf()))
}

/// Settings shared by every test: JSON target, verdict limit, quiet.
#[derive(Debug, Clone)]
pub struct VerdictSettings {
    pub json: Option<JsonTarget>,
    pub max_latency_us: Option<u64>,
    pub quiet: bool,
}

impl VerdictSettings {
    pub fn from_args(args: &VerdictArgs) -> Result<VerdictSettings, UsageError> {
        let max_latency_us = args
            .max_latency
            .as_deref()
            .map(|t| positive("--max-latency", t))
            .transpose()?;
        Ok(VerdictSettings {
            json: args.json.as_deref().map(check_json_path).transpose()?,
            max_latency_us,
            quiet: args.quiet,
        })
    }
}

fn positive(option: &str, text: &str) -> Result<u64, UsageError> {
    match parse_count(option, text)? {
        0 => Err(usage(format!("{option} must be at least 1"))),
        n => Ok(n),
    }
}

fn seconds(option: &str, text: &str) -> Result<Duration, UsageError> {
    let d = parse_duration(text, SECOND_NS).map_err(|e| usage(format!("{option}: {e}")))?;
    if d.is_zero() {
        return Err(usage(format!("{option} must be longer than 0")));
    }
    Ok(d)
}

/// Everything `latscope mq` needs, checked.
#[derive(Debug, Clone)]
pub struct MqSettings {
    pub plan: RunPlan,
    pub policy: Policy,
    pub priority: i32,
    pub same_priority: bool,
    pub interval_us: u64,
    pub distance_us: u64,
    pub loops: Option<u64>,
    pub breaktrace_us: Option<u64>,
    pub format: OutputFormat,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
    pub verdict: VerdictSettings,
    /// Notes for the user about ignored options (pmqtest prints the same).
    pub notices: Vec<String>,
}

/// How pairs are placed on CPUs.
enum Placement {
    Unpinned,
    AllOn(usize),
    Spread,
}

impl MqSettings {
    pub fn from_args(args: &MqArgs) -> Result<MqSettings, UsageError> {
        let allowed = sched::allowed_cpus();
        let mut notices = Vec::new();

        let interval_us = match &args.interval {
            Some(t) => positive("-i/--interval", t)?,
            None => 1000,
        };
        let distance_us = match &args.distance {
            Some(t) => parse_count("-d/--distance", t)?,
            None => 500,
        };
        let loops = match &args.loops {
            Some(t) => Some(parse_count("-l/--loops", t)?).filter(|&n| n > 0),
            None => None,
        };
        let duration = args
            .duration
            .as_deref()
            .map(|t| seconds("-D/--duration", t))
            .transpose()?;
        let timeout = args
            .timeout
            .as_deref()
            .map(|t| seconds("-T/--timeout", t))
            .transpose()?;
        let force = args
            .force_timeout
            .as_deref()
            .map(|t| seconds("-f/--forcetimeout", t))
            .transpose()?;
        if force.is_some() && timeout.is_none() {
            return Err(usage(
                "-f/--forcetimeout requires -T/--timeout (e.g. -T 1 -f 2)",
            ));
        }
        let breaktrace_us = args
            .breaktrace
            .as_deref()
            .map(|t| positive("-b/--breaktrace", t))
            .transpose()?;

        let priority = match &args.priority {
            Some(t) => parse_count("-p/--prio", t)?,
            None => 0,
        };
        let policy = args.policy.unwrap_or(if priority > 0 {
            Policy::Fifo
        } else {
            Policy::Other
        });
        let (low, high) = policy.priority_range();
        if priority < low as u64 || priority > high as u64 {
            let hint = if policy.is_realtime() {
                format!("use -p {low}..{high}")
            } else {
                "use --policy fifo or rr for a real-time priority".to_string()
            };
            return Err(usage(format!(
                "priority {priority} is outside the {policy} range {low}..{high}: {hint}"
            )));
        }
        let priority = priority as i32;

        let (pair_count, placement) = if args.smp {
            if args.threads.is_some() {
                notices.push("-t ignored due to --smp".to_string());
            }
            if args.affinity.is_some() {
                notices.push("-a ignored due to --smp".to_string());
            }
            (allowed.len() as u64, Placement::Spread)
        } else {
            let count = match args.threads.as_deref() {
                None => 1,
                Some("all") => allowed.len() as u64,
                Some(t) => parse_count("-t/--threads", t)?,
            };
            let placement = match args.affinity.as_deref() {
                None => Placement::Unpinned,
                Some("all") => Placement::Spread,
                Some(t) => {
                    let cpu = parse_count("-a/--affinity", t)? as usize;
                    check_cpu(cpu, &allowed)?;
                    Placement::AllOn(cpu)
                }
            };
            (count, placement)
        };
        if pair_count == 0 || pair_count > MAX_PAIRS {
            return Err(usage(format!(
                "-t/--threads {pair_count} is out of range: use 1..{MAX_PAIRS} pairs"
            )));
        }
        let last_interval = interval_us
            .checked_add(distance_us.saturating_mul(pair_count - 1))
            .filter(|&i| i <= MAX_INTERVAL_US);
        if last_interval.is_none() {
            return Err(usage(format!(
                "interval {interval_us} us plus distance {distance_us} us per pair exceeds one hour: use smaller -i/-d"
            )));
        }

        let same_priority = args.smp && priority > 0;
        let pairs = (0..pair_count as usize)
            .map(|i| PairPlan {
                recorder_cpu: match placement {
                    Placement::Unpinned => None,
                    Placement::AllOn(cpu) => Some(cpu),
                    Placement::Spread => Some(allowed[i % allowed.len()]),
                },
                peer_cpu: match placement {
                    Placement::Unpinned => None,
                    Placement::AllOn(cpu) => Some(cpu),
                    Placement::Spread => Some(allowed[i % allowed.len()]),
                },
                policy,
                priority: if same_priority || priority <= 1 {
                    priority
                } else {
                    (priority - i as i32).max(1)
                },
                interval_ns: (interval_us + distance_us * i as u64) * 1000,
                loops,
            })
            .collect();

        let verdict = VerdictSettings::from_args(&args.verdict)?;
        Ok(MqSettings {
            plan: RunPlan {
                pairs,
                duration,
                receive_timeout: timeout,
                forced_send_delay: force,
                breaktrace_ns: breaktrace_us.map(|us| us.saturating_mul(1000)),
                limit_ns: verdict.max_latency_us.map(|us| us.saturating_mul(1000)),
                lock_memory: !args.no_mlockall,
                ..RunPlan::default()
            },
            policy,
            priority,
            same_priority,
            interval_us,
            distance_us,
            loops,
            breaktrace_us,
            format: args.format,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            verdict,
            notices,
        })
    }
}

fn check_cpu(cpu: usize, allowed: &[usize]) -> Result<(), UsageError> {
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list = allowed
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    if online_cpus().contains(&cpu) {
        Err(usage(format!(
            "CPU {cpu} is online but not allowed for this process (allowed: {list}); check taskset/cpuset"
        )))
    } else {
        Err(usage(format!(
            "CPU {cpu} is not online (usable CPUs: {list})"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<MqSettings, UsageError> {
        let cli = Cli::try_parse_from(["latscope", "mq"].iter().chain(args)).expect("clap accepts");
        match cli.command {
            Command::Mq(a) => MqSettings::from_args(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn pmqtest_defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.plan.pairs.len(), 1);
        assert_eq!(s.plan.pairs[0].interval_ns, 1_000_000);
        assert_eq!(s.plan.pairs[0].recorder_cpu, None);
        assert_eq!(s.policy, Policy::Other);
        assert_eq!(s.loops, None);
    }

    #[test]
    fn priorities_step_down_per_pair_unless_smp() {
        let s = settings(&["-p", "3", "-t", "4", "-i", "100", "-d", "50"]).unwrap();
        let prios: Vec<i32> = s.plan.pairs.iter().map(|p| p.priority).collect();
        assert_eq!(prios, [3, 2, 1, 1]);
        let intervals: Vec<u64> = s.plan.pairs.iter().map(|p| p.interval_ns).collect();
        assert_eq!(intervals, [100_000, 150_000, 200_000, 250_000]);
        assert_eq!(s.policy, Policy::Fifo);
        let s = settings(&["-Sp99"]).unwrap();
        assert!(
            s.plan
                .pairs
                .iter()
                .all(|p| p.priority == 99 && p.recorder_cpu.is_some())
        );
        assert_eq!(s.plan.pairs.len(), sched::allowed_cpus().len());
    }

    #[test]
    fn affinity_forms() {
        let first = sched::allowed_cpus()[0];
        let s = settings(&["-a", &first.to_string(), "-t", "2"]).unwrap();
        assert!(s.plan.pairs.iter().all(|p| p.recorder_cpu == Some(first)));
        let s = settings(&["-a", "-t", "2"]).unwrap();
        assert_eq!(s.plan.pairs[0].recorder_cpu, Some(first));
        assert!(
            settings(&["-a", "4096"])
                .unwrap_err()
                .0
                .contains("not online")
        );
    }

    #[test]
    fn bad_values_are_refused_with_one_line() {
        for (args, needle) in [
            (vec!["-p", "100"], "outside the fifo range 1..99"),
            (
                vec!["--policy", "other", "-p", "5"],
                "outside the other range",
            ),
            (vec!["--policy", "fifo"], "outside the fifo range"),
            (vec!["-t", "0"], "out of range"),
            (vec!["-t", "100000"], "out of range"),
            (vec!["-l", "-5"], "must not be negative"),
            (vec!["-l", "abc"], "must be a whole number"),
            (vec!["-i", "0"], "at least 1"),
            (vec!["-D", "5x"], "unknown unit"),
            (vec!["-D", "0"], "longer than 0"),
            (vec!["-T", "1", "-f", "x"], "not a duration"),
            (vec!["-f", "1"], "requires -T"),
            (vec!["-i", "4000000000"], "exceeds one hour"),
            (vec!["--json", "/nonexistent-dir/x.json"], "does not exist"),
            (vec!["--json", "/"], "is a directory"),
            (vec!["--max-latency", "0"], "at least 1"),
        ] {
            let err = settings(&args).expect_err(&format!("{args:?} must fail")).0;
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains('\n'), "{args:?}: multi-line: {err}");
        }
    }

    #[test]
    fn durations_accept_fractions_and_compounds() {
        assert_eq!(
            settings(&["-D", "0.5m"]).unwrap().plan.duration,
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            settings(&["-D", "1h30m"]).unwrap().plan.duration,
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            settings(&["-D", "2"]).unwrap().plan.duration,
            Some(Duration::from_secs(2))
        );
    }
}
