//! `--on-threshold ACTION` and `--on-end ACTION` (rtla's form): what to do
//! when a sample first crosses `--max-latency`, and when the run ends.
//!
//! ACTION is one of
//! - `trace[,file=F]`: save the recent kernel trace (of the crossing CPU) to
//!   F (default `latscope_trace.txt`);
//! - `signal,num=N,pid=P` or `signal,num=N,pid=parent`: send signal N;
//! - `shell[,timeout=T],command=C`: run C with `/bin/sh -c`, killed after T
//!   (default 10 s); `command=` comes last and takes the rest of the text,
//!   commas included;
//! - `continue` (`--on-threshold` only): keep acting on later crossings, at
//!   most once per window (second) of the test.
//!
//! The actions themselves run in `pipeline::actions`.

use super::getopt::Own;
use super::{OutputTarget, UsageError, check_output_path, usage};
use crate::units::{parse_duration, shown};
use std::path::PathBuf;
use std::time::Duration;

/// Where `trace` saves when no `file=` is given (rtla's is
/// `timerlat_trace.txt`).
pub const DEFAULT_TRACE_FILE: &str = "latscope_trace.txt";
/// How long a `shell` action may run before it is killed, unless `timeout=`.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `timeout=` accepted: a run's end waits for its actions.
pub const MAX_SHELL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Whom a `signal` action signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalTarget {
    Pid(i32),
    /// The process that started latscope (its parent when the action runs).
    Parent,
}

/// One action, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Trace {
        file: PathBuf,
    },
    Signal {
        signal: i32,
        target: SignalTarget,
    },
    Shell {
        command: String,
        timeout: Duration,
    },
    /// Act again on later crossings (`--on-threshold` only).
    Continue,
}

impl Action {
    /// The action's kind as its text starts: `trace`, `signal`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Trace { .. } => "trace",
            Action::Signal { .. } => "signal",
            Action::Shell { .. } => "shell",
            Action::Continue => "continue",
        }
    }
}

/// What a crossing crosses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Trigger {
    /// latscope's `--max-latency`: the pipeline watches the samples above it.
    #[default]
    MaxLatency,
    /// A drop-in's break value (`-b USEC`, oslat's `-T USEC`): the drop-in
    /// counts its crossings (`stats::crossings`); without `continue` the
    /// first one ends the run, as in the original tool.
    Break,
}

/// Every action of a run, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actions {
    /// `--on-threshold`, `continue` included.
    pub on_threshold: Vec<Action>,
    pub on_end: Vec<Action>,
    /// `--max-latency` or the break value (us): what a crossing crosses.
    pub limit_us: Option<u64>,
    /// Which of the two `limit_us` is.
    pub trigger: Trigger,
    /// The texts as given, for the report.
    pub given_on_threshold: Vec<String>,
    pub given_on_end: Vec<String>,
}

impl Actions {
    pub fn is_empty(&self) -> bool {
        self.on_threshold.is_empty() && self.on_end.is_empty()
    }

    /// Some action saves the kernel trace: the run keeps one.
    pub fn need_trace(&self) -> bool {
        self.on_threshold
            .iter()
            .chain(&self.on_end)
            .any(|a| matches!(a, Action::Trace { .. }))
    }

    /// `continue` was given: every window with a crossing acts.
    pub fn repeat(&self) -> bool {
        self.on_threshold.contains(&Action::Continue)
    }

    /// The drop-in's break value is the trigger and `--on-threshold`
    /// acts on it.
    pub fn on_break(&self) -> bool {
        self.trigger == Trigger::Break && !self.on_threshold.is_empty()
    }

    /// `continue` on the break value: a crossing does not end the run.
    pub fn break_keeps_running(&self) -> bool {
        self.on_break() && self.repeat()
    }

    /// The files the `trace` actions write, each checked and named by its
    /// option, for the check that no two outputs of a run name one file
    /// (`settings::check_distinct_outputs`): a report written over a saved
    /// trace loses it. Two trace actions may share a file (each crossing
    /// replaces the trace saved before it anyway): it is listed once.
    pub fn trace_outputs(&self) -> Result<Vec<(&'static str, OutputTarget)>, UsageError> {
        let triggered = [
            ("--on-threshold trace,file=", &self.on_threshold),
            ("--on-end trace,file=", &self.on_end),
        ];
        let mut outputs: Vec<(&'static str, OutputTarget)> = Vec::new();
        for (option, actions) in triggered {
            for action in actions.iter() {
                let Action::Trace { file } = action else {
                    continue;
                };
                let target = check_output_path(option, file)?;
                let listed = outputs.iter().any(|(_, t)| match (t, &target) {
                    (OutputTarget::File(a), OutputTarget::File(b)) => {
                        a == b || crate::rt::outfile::same_file_destination(a, b)
                    }
                    (t, target) => t == target,
                });
                if !listed {
                    outputs.push((option, target));
                }
            }
        }
        Ok(outputs)
    }

    /// `named` (a drop-in's own output files) and the trace actions' files
    /// name different files; else the usage error of any two outputs that
    /// name one file.
    pub fn check_apart_from(
        &self,
        named: &[(&str, Option<&OutputTarget>)],
    ) -> Result<(), UsageError> {
        let traces = self.trace_outputs()?;
        let all: Vec<(&str, Option<&OutputTarget>)> = named
            .iter()
            .copied()
            .chain(
                traces
                    .iter()
                    .map(|(option, target)| (*option, Some(target))),
            )
            .collect();
        super::check_distinct_outputs(&all)
    }
}

/// `--on-threshold` and `--on-end` as given, checked against `--max-latency`
/// (`limit_us`): a threshold action needs a threshold, `continue` belongs to
/// `--on-threshold`, and `trace` needs a kernel this process can trace.
pub fn from_args(
    on_threshold: &[String],
    on_end: &[String],
    limit_us: Option<u64>,
) -> Result<Actions, UsageError> {
    checked(
        on_threshold,
        on_end,
        limit_us.map(|us| (us, Trigger::MaxLatency)),
        "--max-latency USEC",
    )
}

/// `--on-threshold` and `--on-end` of a test with a break value: the
/// crossing of `--max-latency` (`max_latency_us`) when given, else of the
/// break value `break_us` (`break_option`, `-b` or `-T`). `wanted` says
/// what to give when neither is (`-b USEC`, `--max-latency USEC or -b USEC`).
pub fn from_break_args(
    on_threshold: &[String],
    on_end: &[String],
    max_latency_us: Option<u64>,
    break_us: Option<u64>,
    wanted: &str,
) -> Result<Actions, UsageError> {
    let limit = match (max_latency_us, break_us) {
        (Some(us), _) => Some((us, Trigger::MaxLatency)),
        (None, Some(us)) => Some((us, Trigger::Break)),
        (None, None) => None,
    };
    checked(on_threshold, on_end, limit, wanted)
}

/// The actions as given, checked: a threshold action needs `limit` (else
/// `wanted` is named), `continue` belongs to `--on-threshold`, and `trace`
/// needs a kernel this process can trace.
fn checked(
    on_threshold: &[String],
    on_end: &[String],
    limit: Option<(u64, Trigger)>,
    wanted: &str,
) -> Result<Actions, UsageError> {
    if !on_threshold.is_empty() && limit.is_none() {
        let crosses = if wanted.starts_with("--max-latency") {
            "--max-latency".to_string()
        } else {
            format!("the break value ({})", wanted.trim_end_matches(" USEC"))
        };
        return Err(usage(format!(
            "--on-threshold acts when a sample crosses {crosses}: give {wanted}"
        )));
    }
    let (limit_us, trigger) = match limit {
        Some((us, trigger)) => (Some(us), trigger),
        None => (None, Trigger::default()),
    };
    let parse_all = |option: &str, texts: &[String]| -> Result<Vec<Action>, UsageError> {
        texts.iter().map(|t| parse_action(option, t)).collect()
    };
    let actions = Actions {
        on_threshold: parse_all("--on-threshold", on_threshold)?,
        on_end: parse_all("--on-end", on_end)?,
        limit_us,
        given_on_threshold: on_threshold.to_vec(),
        given_on_end: on_end.to_vec(),
        trigger,
    };
    if actions.on_end.contains(&Action::Continue) {
        return Err(usage(
            "--on-end continue: continue means acting again on the next crossing; give it to --on-threshold"
                .to_string(),
        ));
    }
    actions.trace_outputs()?;
    if actions.need_trace() {
        crate::spikes::check_available().map_err(|e| {
            usage(format!(
                "the trace action saves the kernel trace, which this process cannot record: {e}"
            ))
        })?;
    }
    Ok(actions)
}

/// `--on-threshold ACTION` and `--on-end ACTION` as the drop-ins of tools
/// with a break value take them (`settings::getopt`'s own options: spelled
/// in full only, repeatable).
pub const GETOPT_OPTIONS: [Own; 2] = [
    Own {
        name: "on-threshold",
        needs: "an action: --on-threshold ACTION (docs/guide.md)",
    },
    Own {
        name: "on-end",
        needs: "an action: --on-end ACTION (docs/guide.md)",
    },
];

/// Whether `name` (as getopt found it) is one of `GETOPT_OPTIONS`.
pub fn is_getopt_option(name: &str) -> bool {
    GETOPT_OPTIONS.iter().any(|o| o.name == name)
}

/// The actions of a drop-in from the options its getopt found (`found`,
/// in order; the others are ignored): `--on-threshold` acts on the break
/// value `break_us` (`break_option`: `-b`, `-T`).
pub fn from_getopt<'a>(
    found: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    break_us: Option<u64>,
    break_option: &str,
) -> Result<Actions, UsageError> {
    let (mut on_threshold, mut on_end) = (Vec::new(), Vec::new());
    for (name, value) in found {
        let value = value.unwrap_or_default().to_string();
        match name {
            "on-threshold" => on_threshold.push(value),
            "on-end" => on_end.push(value),
            _ => {}
        }
    }
    from_break_args(
        &on_threshold,
        &on_end,
        None,
        break_us,
        &format!("{break_option} USEC"),
    )
}

/// One ACTION text of `option` (`--on-threshold`, `--on-end`).
pub fn parse_action(option: &str, text: &str) -> Result<Action, UsageError> {
    let bad = |why: String| usage(format!("{option} '{}': {why}", shown(text)));
    let (kind, rest) = match text.split_once(',') {
        Some((kind, rest)) => (kind, Some(rest)),
        None => (text, None),
    };
    // `command=` takes the rest of the text, commas and all.
    let (keys, command) = match rest {
        Some(rest) if rest.starts_with("command=") => (None, Some(&rest["command=".len()..])),
        Some(rest) => match rest.split_once(",command=") {
            Some((keys, command)) => (Some(keys), Some(command)),
            None => (Some(rest), None),
        },
        None => (None, None),
    };
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for item in keys.into_iter().flat_map(|k| k.split(',')) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(bad(format!("'{}' is not KEY=VALUE", shown(item))));
        };
        if pairs.iter().any(|(k, _)| *k == key) {
            return Err(bad(format!("{} given twice", shown(key))));
        }
        pairs.push((key, value));
    }
    let allowed: &[&str] = match kind {
        "trace" => &["file"],
        "signal" => &["num", "pid"],
        "shell" => &["timeout"],
        "continue" => &[],
        _ => {
            return Err(bad(format!(
                "unknown action '{}' (trace, signal, shell or continue)",
                shown(kind)
            )));
        }
    };
    if let Some((key, _)) = pairs.iter().find(|(k, _)| !allowed.contains(k)) {
        let takes = if allowed.is_empty() {
            "nothing".to_string()
        } else {
            allowed.join(", ")
        };
        return Err(bad(format!(
            "{kind} takes no '{}' (it takes {takes})",
            shown(key)
        )));
    }
    if command.is_some() && kind != "shell" {
        return Err(bad(format!("{kind} takes no command")));
    }
    let value = |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    match kind {
        "trace" => match value("file") {
            Some("") => Err(bad("file= needs a file name".into())),
            Some("-") => Err(bad(
                "file=- : the trace goes to a file, not to standard output".into(),
            )),
            file => Ok(Action::Trace {
                file: PathBuf::from(file.unwrap_or(DEFAULT_TRACE_FILE)),
            }),
        },
        "signal" => Ok(Action::Signal {
            signal: signal_number(value("num")).map_err(bad)?,
            target: signal_target(value("pid")).map_err(bad)?,
        }),
        "shell" => Ok(Action::Shell {
            command: match command {
                Some(c) if !c.trim().is_empty() => c.to_string(),
                _ => return Err(bad("shell needs command=COMMAND".into())),
            },
            timeout: shell_timeout(value("timeout")).map_err(bad)?,
        }),
        _ => Ok(Action::Continue),
    }
}

/// `num=N`: a signal Linux has, 1 to SIGRTMAX.
fn signal_number(num: Option<&str>) -> Result<i32, String> {
    let num = num.ok_or("signal needs num=N (a signal number, such as 10 for SIGUSR1)")?;
    let max = libc::SIGRTMAX();
    match num.parse::<i32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "num={}: a signal number from 1 to {max}",
            shown(num)
        )),
    }
}

/// `pid=P` (above 0: 0 and negative numbers name process groups) or
/// `pid=parent`.
fn signal_target(pid: Option<&str>) -> Result<SignalTarget, String> {
    match pid {
        None => Err("signal needs pid=PID or pid=parent".into()),
        Some("parent") => Ok(SignalTarget::Parent),
        Some(p) => match p.parse::<i32>() {
            Ok(n) if n > 0 => Ok(SignalTarget::Pid(n)),
            _ => Err(format!("pid={}: a process id above 0, or parent", shown(p))),
        },
    }
}

/// `timeout=T` (a bare number is seconds), above 0 and at most an hour.
fn shell_timeout(timeout: Option<&str>) -> Result<Duration, String> {
    let Some(text) = timeout else {
        return Ok(DEFAULT_SHELL_TIMEOUT);
    };
    let d = parse_duration(text, 1_000_000_000).map_err(|e| format!("timeout=: {e}"))?;
    if d.is_zero() || d > MAX_SHELL_TIMEOUT {
        return Err(format!("timeout={}: from above 0 to 1h", shown(text)));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Action {
        parse_action("--on-threshold", text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn refused(text: &str) -> String {
        match parse_action("--on-threshold", text) {
            Ok(a) => panic!("{text} was accepted as {a:?}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn each_kind_parses_to_its_exact_values() {
        assert_eq!(
            parsed("trace"),
            Action::Trace {
                file: PathBuf::from("latscope_trace.txt")
            }
        );
        assert_eq!(
            parsed("trace,file=/tmp/t.txt"),
            Action::Trace {
                file: PathBuf::from("/tmp/t.txt")
            }
        );
        assert_eq!(
            parsed("signal,num=10,pid=1234"),
            Action::Signal {
                signal: 10,
                target: SignalTarget::Pid(1234)
            }
        );
        assert_eq!(
            parsed("signal,pid=parent,num=2"),
            Action::Signal {
                signal: 2,
                target: SignalTarget::Parent
            }
        );
        assert_eq!(
            parsed("shell,command=echo a,b >> /tmp/x"),
            Action::Shell {
                command: "echo a,b >> /tmp/x".into(),
                timeout: Duration::from_secs(10)
            }
        );
        assert_eq!(
            parsed("shell,timeout=1.5,command=sleep 9"),
            Action::Shell {
                command: "sleep 9".into(),
                timeout: Duration::from_millis(1500)
            }
        );
        assert_eq!(
            parsed("shell,timeout=250ms,command=x=1,y=2"),
            Action::Shell {
                command: "x=1,y=2".into(),
                timeout: Duration::from_millis(250)
            }
        );
        assert_eq!(parsed("continue"), Action::Continue);
    }

    #[test]
    fn bad_actions_say_what_is_wrong() {
        let cases = [
            ("", "unknown action ''"),
            ("tracer", "unknown action 'tracer'"),
            ("signal", "signal needs num=N"),
            ("signal,num=10", "signal needs pid=PID or pid=parent"),
            ("signal,pid=1", "signal needs num=N"),
            ("signal,num=x,pid=1", "num=x: a signal number from 1 to"),
            ("signal,num=0,pid=1", "num=0: a signal number"),
            ("signal,num=99,pid=1", "num=99: a signal number"),
            (
                "signal,num=10,pid=0",
                "pid=0: a process id above 0, or parent",
            ),
            ("signal,num=10,pid=-5", "pid=-5: a process id above 0"),
            ("signal,num=10,num=11,pid=1", "num given twice"),
            (
                "signal,num=10,pid=1,who=me",
                "signal takes no 'who' (it takes num, pid)",
            ),
            ("signal,num=10,pid", "'pid' is not KEY=VALUE"),
            ("shell", "shell needs command=COMMAND"),
            ("shell,command=", "shell needs command=COMMAND"),
            ("shell,command=  ", "shell needs command=COMMAND"),
            (
                "shell,timeout=0,command=true",
                "timeout=0: from above 0 to 1h",
            ),
            (
                "shell,timeout=2h,command=true",
                "timeout=2h: from above 0 to 1h",
            ),
            ("shell,timeout=soon,command=true", "timeout=:"),
            ("trace,file=", "file= needs a file name"),
            ("trace,file=-", "the trace goes to a file"),
            ("trace,command=ls", "trace takes no command"),
            ("continue,x=1", "continue takes no 'x' (it takes nothing)"),
        ];
        for (text, expected) in cases {
            let error = refused(text);
            assert!(
                error.starts_with(&format!("--on-threshold '{text}': ")),
                "{text}: {error}"
            );
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn an_error_quoting_a_newline_stays_one_line() {
        for text in [
            "tra\nce",
            "signal,num=1\n,pid=1",
            "signal,num=1,pid=1\r\n",
            "x\n=1",
        ] {
            let error = refused(text);
            assert!(!error.contains('\n') && !error.contains('\r'), "{error:?}");
        }
        // A shell command may span lines: it is the shell's text.
        assert_eq!(
            parsed("shell,command=true\necho two"),
            Action::Shell {
                command: "true\necho two".into(),
                timeout: DEFAULT_SHELL_TIMEOUT
            }
        );
    }

    #[test]
    fn the_run_level_rules() {
        let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let err = from_args(&texts(&["continue"]), &[], None).unwrap_err();
        assert!(err.0.contains("give --max-latency USEC"), "{}", err.0);
        let err = from_args(&[], &texts(&["continue"]), None).unwrap_err();
        assert!(err.0.starts_with("--on-end continue:"), "{}", err.0);
        let actions = from_args(
            &texts(&["shell,command=true", "continue"]),
            &texts(&["signal,num=10,pid=parent"]),
            Some(5),
        )
        .unwrap();
        assert!(actions.repeat() && !actions.need_trace() && !actions.is_empty());
        assert_eq!(actions.on_end[0].kind(), "signal");
        assert_eq!(
            actions.given_on_threshold,
            texts(&["shell,command=true", "continue"])
        );
        assert!(from_args(&[], &[], None).unwrap().is_empty());
    }

    /// A test with a break value: `--max-latency` first, else the break.
    #[test]
    fn the_break_value_triggers_without_max_latency() {
        let on = vec!["shell,command=true".to_string(), "continue".to_string()];
        let wanted = "--max-latency USEC or -b USEC";
        let by_limit = from_break_args(&on, &[], Some(7), Some(3), wanted).unwrap();
        assert_eq!(
            (by_limit.trigger, by_limit.limit_us, by_limit.on_break()),
            (Trigger::MaxLatency, Some(7), false)
        );
        let by_break = from_break_args(&on, &[], None, Some(3), wanted).unwrap();
        assert_eq!(
            (by_break.trigger, by_break.limit_us),
            (Trigger::Break, Some(3))
        );
        assert!(by_break.on_break() && by_break.break_keeps_running());
        let err = from_break_args(&on, &[], None, None, wanted).unwrap_err();
        assert_eq!(
            err.0,
            "--on-threshold acts when a sample crosses --max-latency: give --max-latency USEC or -b USEC"
        );
        // Only --on-end: the break value is not acted on, the run not kept.
        let end_only = from_break_args(&[], &on[..1], None, Some(3), wanted).unwrap();
        assert!(!end_only.on_break() && !end_only.break_keeps_running());
    }

    /// The drop-ins' options as their getopt found them, in order.
    #[test]
    fn from_getopt_keeps_the_order_and_names_the_break_option() {
        let found = [
            ("on-end", Some("shell,command=a")),
            ("quiet", None),
            ("on-threshold", Some("shell,command=b")),
            ("on-threshold", Some("continue")),
        ];
        let actions = from_getopt(found, Some(5), "-T").unwrap();
        assert_eq!(
            actions.given_on_threshold,
            ["shell,command=b", "continue"].map(String::from)
        );
        assert_eq!(actions.given_on_end, ["shell,command=a"].map(String::from));
        assert!(actions.break_keeps_running());
        let err = from_getopt([("on-threshold", Some("continue"))], None, "-T").unwrap_err();
        assert_eq!(
            err.0,
            "--on-threshold acts when a sample crosses the break value (-T): give -T USEC"
        );
        assert!(is_getopt_option("on-end") && !is_getopt_option("on-thr"));
    }
}
