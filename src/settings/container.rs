//! The container-perf-tools entrypoints (redhat-nfvpe/container-perf-tools,
//! one image per tool, each running a `cmd.sh`): their environment
//! variables, lower-case ones included, with cmd.sh's defaults, checked
//! (a bad value is one line, exit 2, where cmd.sh silently falls back or
//! hands the tool a broken command line), and the command line each gives
//! its tool.

use super::UsageError;
use std::time::Duration;

/// Which entrypoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerTool {
    Cyclictest,
    Oslat,
    Hwlatdetect,
    /// rtla's `timerlat` (container-perf-tools' rtla image): `latscope
    /// timer` on the measured CPUs.
    Timerlat,
}

impl ContainerTool {
    /// The name the tool runs under (a latscope compatibility name, or
    /// `latscope` for timerlat, which runs `latscope timer`).
    pub fn program(self) -> &'static str {
        match self {
            ContainerTool::Cyclictest => "cyclictest",
            ContainerTool::Oslat => "oslat",
            ContainerTool::Hwlatdetect => "hwlatdetect",
            ContainerTool::Timerlat => "latscope",
        }
    }

    /// Whether it keeps a housekeeping CPU (and so needs the CPUs of the
    /// runners' rule): hwlatdetect measures the whole allowed list.
    pub fn keeps_housekeeping(self) -> bool {
        self != ContainerTool::Hwlatdetect
    }

    /// How cmd.sh introduces the command it runs.
    pub fn command_label(self) -> &'static str {
        match self {
            ContainerTool::Cyclictest => "running cmd: ",
            ContainerTool::Timerlat => "RUNNING COMMAND: ",
            _ => "cmd to run: ",
        }
    }
}

/// An entrypoint's settings, from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSettings {
    pub tool: ContainerTool,
    /// `DURATION` (cyclictest, timerlat) or `RUNTIME_SECONDS` (oslat,
    /// hwlatdetect), as the tool reads it.
    pub duration: String,
    /// cyclictest's `INTERVAL`, in us.
    pub interval_us: u64,
    /// `rt_priority` (cyclictest), `PRIO` (oslat, timerlat); None where
    /// oslat's `USE_DEFAULT_SCHED=y` leaves the scheduling policy alone.
    pub priority: Option<u64>,
    /// cyclictest's `stress`: one CPU hog (stress-ng) per measured CPU.
    pub stress: bool,
    /// `TRACE_THRESHOLD` in us: cyclictest `-b`, oslat `--trace-threshold`.
    pub trace_threshold_us: Option<u64>,
    /// hwlatdetect's `THRESHOLD` in us.
    pub threshold_us: Option<u64>,
    /// timerlat's `MAX_LATENCY` in us (0: none).
    pub max_latency_us: Option<u64>,
    /// hwlatdetect's `ALL_CPUS=y`: every online CPU, not the allowed list.
    pub all_cpus: bool,
    /// `EXTRA_ARGS`, split on white space, after the rest.
    pub extra_args: Vec<String>,
    /// `delay`: the wait before the test.
    pub delay: Duration,
    /// `manual=y`: print the command, do not run it, sleep until stopped.
    pub manual: bool,
    /// `PAUSE` (default y, as cmd.sh's closing `sleep infinity`): after the
    /// run, sleep until stopped, for the log to be read.
    pub pause: bool,
}

/// Every variable an entrypoint reads, for its help and docs.
pub fn variables(tool: ContainerTool) -> &'static [&'static str] {
    const COMMON: [&str; 4] = ["EXTRA_ARGS", "delay", "manual", "PAUSE"];
    match tool {
        ContainerTool::Cyclictest => &[
            "DURATION",
            "INTERVAL",
            "stress",
            "rt_priority",
            "TRACE_THRESHOLD",
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
        ],
        ContainerTool::Oslat => &[
            "RUNTIME_SECONDS",
            "PRIO",
            "USE_DEFAULT_SCHED",
            "TRACE_THRESHOLD",
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
        ],
        ContainerTool::Hwlatdetect => &[
            "RUNTIME_SECONDS",
            "THRESHOLD",
            "ALL_CPUS",
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
        ],
        ContainerTool::Timerlat => &[
            "DURATION",
            "PRIO",
            "MAX_LATENCY",
            COMMON[0],
            COMMON[1],
            COMMON[2],
            COMMON[3],
        ],
    }
}

/// A yes/no variable: cmd.sh's `y`/`n`, and the usual spellings.
fn yes_no(name: &str, value: Option<&str>, default: bool) -> Result<bool, UsageError> {
    match value.map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) => match v.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(true),
            "n" | "no" | "false" | "0" => Ok(false),
            _ => Err(UsageError(format!(
                "{name}={v}: give y or n (or yes, no, true, false)"
            ))),
        },
    }
}

/// A whole number in `range`, or the default when unset or empty.
fn number(
    name: &str,
    value: Option<&str>,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<Option<u64>, UsageError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(UsageError(format!(
            "{name}={v}: give {what} ({} to {})",
            range.start(),
            range.end()
        ))),
    }
}

/// A duration as rt-tests reads `-D` (a number of seconds, or with s, m,
/// h, d), or the default.
fn tool_duration(name: &str, value: Option<&str>, default: &str) -> Result<String, UsageError> {
    let v = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or(default);
    // rt-tests' parse_time_string: a number and at most one unit letter.
    let number = v.trim_end_matches(|c| "smhdSMHD".contains(c));
    let ok = v.len() - number.len() <= 1
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && number.parse::<u64>().is_ok_and(|n| n > 0);
    if !ok {
        return Err(UsageError(format!(
            "{name}={v}: give a duration as the tool takes it: seconds, or with s, m, h or d (e.g. 30, 10m, 24h)"
        )));
    }
    Ok(v.to_string())
}

impl ContainerSettings {
    /// Reads the entrypoint's variables through `env` (`std::env::var`
    /// on a real run).
    pub fn from_env(
        tool: ContainerTool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ContainerSettings, UsageError> {
        let get = |name: &str| env(name);
        let text = |name: &str| get(name);
        // A number of microseconds, from `min` up.
        let micros = |name: &str, min: u64| {
            number(
                name,
                text(name).as_deref(),
                min..=u32::MAX as u64,
                "microseconds",
            )
        };
        let duration = match tool {
            ContainerTool::Cyclictest | ContainerTool::Timerlat => {
                tool_duration("DURATION", text("DURATION").as_deref(), "24h")?
            }
            _ => tool_duration("RUNTIME_SECONDS", text("RUNTIME_SECONDS").as_deref(), "10")?,
        };
        let priority_name = if tool == ContainerTool::Cyclictest {
            "rt_priority"
        } else {
            "PRIO"
        };
        let default_priority = if tool == ContainerTool::Timerlat {
            95
        } else {
            1
        };
        let mut priority = Some(
            number(
                priority_name,
                text(priority_name).as_deref(),
                1..=99,
                "a real-time priority",
            )?
            .unwrap_or(default_priority),
        );
        if tool == ContainerTool::Oslat
            && yes_no(
                "USE_DEFAULT_SCHED",
                text("USE_DEFAULT_SCHED").as_deref(),
                false,
            )?
        {
            priority = None;
        }
        let stress = match text("stress").as_deref().map(str::trim) {
            Some("stress-ng") => true,
            other => yes_no("stress", other, false)?,
        };
        let delay = match text("delay").as_deref().map(str::trim) {
            None | Some("") => Duration::ZERO,
            Some(v) => crate::units::values::duration("delay", v)
                .map_err(|e| UsageError(format!("delay={v}: {e}")))?,
        };
        Ok(ContainerSettings {
            tool,
            duration,
            interval_us: number(
                "INTERVAL",
                text("INTERVAL").as_deref(),
                1..=10_000_000,
                "microseconds",
            )?
            .unwrap_or(1000),
            priority,
            stress: tool == ContainerTool::Cyclictest && stress,
            trace_threshold_us: micros("TRACE_THRESHOLD", 1)?,
            threshold_us: micros("THRESHOLD", 1)?,
            max_latency_us: micros("MAX_LATENCY", 0)?.filter(|&us| us > 0),
            all_cpus: yes_no("ALL_CPUS", text("ALL_CPUS").as_deref(), false)?,
            extra_args: text("EXTRA_ARGS")
                .map(|a| a.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            delay,
            manual: yes_no("manual", text("manual").as_deref(), false)?,
            pause: yes_no("PAUSE", text("PAUSE").as_deref(), true)?,
        })
    }

    /// The command line the entrypoint runs, its program first. `main` is
    /// the housekeeping CPU the main thread keeps, `measured` the CPUs
    /// measured (for hwlatdetect: the allowed list, unless `ALL_CPUS=y`).
    pub fn command(&self, main: usize, measured: &[usize]) -> Vec<String> {
        let list = crate::units::cpu_list(measured);
        let mut words: Vec<String> = vec![self.tool.program().to_string()];
        let mut push = |ws: &[&str]| words.extend(ws.iter().map(|w| w.to_string()));
        let main = main.to_string();
        let priority = self.priority.unwrap_or(0).to_string();
        match self.tool {
            ContainerTool::Cyclictest => {
                let threads = measured.len().to_string();
                let interval = self.interval_us.to_string();
                push(&["-q", "-D", &self.duration, "-p", &priority, "-t", &threads]);
                push(&[
                    "-a",
                    &list,
                    "-h",
                    "30",
                    "-i",
                    &interval,
                    "--mainaffinity",
                    &main,
                    "-m",
                ]);
                if let Some(us) = self.trace_threshold_us {
                    push(&["-b", &us.to_string()]);
                }
            }
            ContainerTool::Oslat => {
                push(&["-D", &self.duration]);
                if self.priority.is_some() {
                    push(&["--rtprio", &priority]);
                }
                push(&["--cpu-list", &list, "--cpu-main-thread", &main]);
                if let Some(us) = self.trace_threshold_us {
                    push(&[&format!("--trace-threshold={us}")]);
                }
            }
            ContainerTool::Hwlatdetect => {
                push(&["--duration", &self.duration]);
                if let Some(us) = self.threshold_us {
                    push(&[&format!("--threshold={us}")]);
                }
                if !self.all_cpus {
                    push(&["--cpu-list", &list]);
                }
                push(&["--watch"]);
            }
            ContainerTool::Timerlat => {
                push(&[
                    "timer",
                    "--cpus",
                    &list,
                    "-p",
                    "1000",
                    "-D",
                    &self.duration,
                    "-P",
                    &priority,
                ]);
                if let Some(us) = self.max_latency_us {
                    push(&["--max-latency", &us.to_string()]);
                }
            }
        }
        words.extend(self.extra_args.iter().cloned());
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn settings(
        tool: ContainerTool,
        vars: &[(&str, &str)],
    ) -> Result<ContainerSettings, UsageError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ContainerSettings::from_env(tool, &|name| map.get(name).cloned())
    }

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_are_cmd_shs() {
        let s = settings(ContainerTool::Cyclictest, &[]).unwrap();
        assert_eq!(
            s.command(4, &[5, 6, 7]),
            words("cyclictest -q -D 24h -p 1 -t 3 -a 5-7 -h 30 -i 1000 --mainaffinity 4 -m")
        );
        assert!(s.pause && !s.manual && !s.stress);
        assert_eq!(s.delay, Duration::ZERO);
        let s = settings(ContainerTool::Oslat, &[]).unwrap();
        assert_eq!(
            s.command(0, &[2, 3, 10, 11]),
            words("oslat -D 10 --rtprio 1 --cpu-list 2-3,10-11 --cpu-main-thread 0")
        );
        let s = settings(ContainerTool::Hwlatdetect, &[]).unwrap();
        assert_eq!(
            s.command(0, &[0, 1, 2]),
            words("hwlatdetect --duration 10 --cpu-list 0-2 --watch")
        );
        let s = settings(ContainerTool::Timerlat, &[]).unwrap();
        assert_eq!(
            s.command(0, &[1]),
            words("latscope timer --cpus 1 -p 1000 -D 24h -P 95")
        );
    }

    #[test]
    fn every_variable_reaches_the_command() {
        let s = settings(
            ContainerTool::Cyclictest,
            &[
                ("DURATION", "2m"),
                ("INTERVAL", "200"),
                ("rt_priority", "90"),
                ("TRACE_THRESHOLD", "50"),
                ("EXTRA_ARGS", " --smi  -v "),
                ("stress", "stress-ng"),
                ("delay", "3"),
                ("manual", "y"),
                ("PAUSE", "n"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.command(0, &[1]),
            words(
                "cyclictest -q -D 2m -p 90 -t 1 -a 1 -h 30 -i 200 --mainaffinity 0 -m -b 50 --smi -v"
            )
        );
        assert!(s.stress && s.manual && !s.pause);
        assert_eq!(s.delay, Duration::from_secs(3));
        let s = settings(
            ContainerTool::Oslat,
            &[
                ("RUNTIME_SECONDS", "1m"),
                ("PRIO", "5"),
                ("TRACE_THRESHOLD", "20"),
                ("EXTRA_ARGS", "-w memmove"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.command(0, &[1]),
            words(
                "oslat -D 1m --rtprio 5 --cpu-list 1 --cpu-main-thread 0 --trace-threshold=20 -w memmove"
            )
        );
        let s = settings(ContainerTool::Oslat, &[("USE_DEFAULT_SCHED", "y")]).unwrap();
        assert_eq!(s.priority, None);
        assert_eq!(
            s.command(0, &[1]),
            words("oslat -D 10 --cpu-list 1 --cpu-main-thread 0")
        );
        let s = settings(
            ContainerTool::Hwlatdetect,
            &[
                ("THRESHOLD", "5"),
                ("ALL_CPUS", "y"),
                ("EXTRA_ARGS", "--hardlimit 9"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.command(0, &[0, 1]),
            words("hwlatdetect --duration 10 --threshold=5 --watch --hardlimit 9")
        );
        let s = settings(
            ContainerTool::Timerlat,
            &[("MAX_LATENCY", "40"), ("PRIO", "80")],
        )
        .unwrap();
        assert_eq!(
            s.command(0, &[1, 2]),
            words("latscope timer --cpus 1-2 -p 1000 -D 24h -P 80 --max-latency 40")
        );
        // stress only means something to cyclictest.
        assert!(
            !settings(ContainerTool::Oslat, &[("stress", "true")])
                .unwrap()
                .stress
        );
    }

    #[test]
    fn every_bad_value_is_one_line() {
        use ContainerTool::*;
        let cases: &[(ContainerTool, &str, &str, &str)] = &[
            (
                Cyclictest,
                "DURATION",
                "soon",
                "DURATION=soon: give a duration",
            ),
            (
                Cyclictest,
                "DURATION",
                "1h30m",
                "DURATION=1h30m: give a duration",
            ),
            (
                Oslat,
                "RUNTIME_SECONDS",
                "-5",
                "RUNTIME_SECONDS=-5: give a duration",
            ),
            (
                Cyclictest,
                "INTERVAL",
                "0",
                "INTERVAL=0: give microseconds (1 to 10000000)",
            ),
            (
                Cyclictest,
                "rt_priority",
                "100",
                "rt_priority=100: give a real-time priority (1 to 99)",
            ),
            (
                Oslat,
                "PRIO",
                "high",
                "PRIO=high: give a real-time priority (1 to 99)",
            ),
            (Cyclictest, "stress", "maybe", "stress=maybe: give y or n"),
            (
                Oslat,
                "USE_DEFAULT_SCHED",
                "sure",
                "USE_DEFAULT_SCHED=sure: give y or n",
            ),
            (
                Oslat,
                "TRACE_THRESHOLD",
                "0",
                "TRACE_THRESHOLD=0: give microseconds",
            ),
            (
                Hwlatdetect,
                "THRESHOLD",
                "1.5",
                "THRESHOLD=1.5: give microseconds",
            ),
            (Hwlatdetect, "ALL_CPUS", "all", "ALL_CPUS=all: give y or n"),
            (
                Timerlat,
                "MAX_LATENCY",
                "x",
                "MAX_LATENCY=x: give microseconds",
            ),
            (Oslat, "delay", "later", "delay=later: "),
            (Oslat, "manual", "maybe", "manual=maybe: give y or n"),
            (Oslat, "PAUSE", "2", "PAUSE=2: give y or n"),
        ];
        for (tool, name, value, message) in cases {
            let e = settings(*tool, &[(name, value)]).unwrap_err().0;
            assert!(e.starts_with(message), "{name}={value}: {e}");
            assert!(!e.contains('\n'));
        }
        // Empty is unset, as in cmd.sh's ${VAR:-default}.
        assert_eq!(
            settings(Cyclictest, &[("DURATION", ""), ("rt_priority", " ")]).unwrap(),
            settings(Cyclictest, &[]).unwrap()
        );
    }
}
