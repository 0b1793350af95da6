//! The command lines of the cnf-tests runners (`oslat-runner`,
//! `cyclictest-runner`, `hwlatdetect-runner`: openshift-kni/cnf-tests
//! `cmd/*-runner/main.go`, which OpenShift's node-tuning latency test
//! starts): each runner's own flags and klog's, in Go's `flag` syntax
//! (settings::goflag), into typed settings; and the command line each runner
//! gives its tool.

use super::goflag::{self, Flag, GoFlagUsage, Kind, Parsed};
use crate::rt::klog::{KlogConfig, Severity};
use std::path::PathBuf;

/// Which runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerTool {
    Oslat,
    Cyclictest,
    Hwlatdetect,
}

impl RunnerTool {
    /// The tool it runs (a latscope compatibility name).
    pub fn tool(self) -> &'static str {
        match self {
            RunnerTool::Oslat => "oslat",
            RunnerTool::Cyclictest => "cyclictest",
            RunnerTool::Hwlatdetect => "hwlatdetect",
        }
    }

    /// The runner's own name (`/usr/bin/oslat-runner` in cnf-tests).
    pub fn name(self) -> &'static str {
        match self {
            RunnerTool::Oslat => OSLAT_RUNNER,
            RunnerTool::Cyclictest => CYCLICTEST_RUNNER,
            RunnerTool::Hwlatdetect => HWLATDETECT_RUNNER,
        }
    }

    /// Whether the runner keeps a housekeeping CPU (the CPU rule of
    /// rt::pod_cpus): the hwlatdetect runner leaves the CPUs to its tool.
    pub fn keeps_housekeeping(self) -> bool {
        self != RunnerTool::Hwlatdetect
    }

    /// The runner's flags, then klog's.
    pub fn flags(self) -> Vec<Flag> {
        let own: &[Flag] = match self {
            RunnerTool::Oslat => OSLAT_FLAGS,
            RunnerTool::Cyclictest => CYCLICTEST_FLAGS,
            RunnerTool::Hwlatdetect => HWLATDETECT_FLAGS,
        };
        own.iter().chain(KLOG_FLAGS).copied().collect()
    }
}

pub const OSLAT_RUNNER: &str = "oslat-runner";
pub const CYCLICTEST_RUNNER: &str = "cyclictest-runner";
pub const HWLATDETECT_RUNNER: &str = "hwlatdetect-runner";

const fn flag(name: &'static str, kind: Kind, default: &'static str, usage: &'static str) -> Flag {
    Flag {
        name,
        kind,
        default,
        usage,
    }
}

const OSLAT_FLAGS: &[Flag] = &[
    flag(
        "oslat-start-delay",
        Kind::Int,
        "0",
        "Delay in second before running the oslat binary, can be useful to be sure that the CPU manager excluded the pinned CPUs from the default CPU pool",
    ),
    flag(
        "rt-priority",
        Kind::String,
        "1",
        "Specify the SCHED_FIFO priority (1-99)",
    ),
    flag(
        "runtime",
        Kind::String,
        "10m",
        "Specify test duration, e.g., 60, 20m, 2H",
    ),
];

const CYCLICTEST_FLAGS: &[Flag] = &[
    flag(
        "rt-priority",
        Kind::String,
        "95",
        "specify the SCHED_FIFO priority (1-99)",
    ),
    flag(
        "duration",
        Kind::String,
        "15s",
        "specify a length for the test run. Append 'm', 'h', or 'd' to specify minutes, hours or days.",
    ),
    flag(
        "histogram",
        Kind::String,
        "30",
        "dump a latency histogram to stdout after the run US is the max latency time to be be tracked in microseconds",
    ),
    flag(
        "interval",
        Kind::Int,
        "1000",
        "base interval of thread in us default=1000",
    ),
    flag(
        "cyclictest-start-delay",
        Kind::Int,
        "0",
        "delay in second before running the cyclictest binary",
    ),
];

const HWLATDETECT_FLAGS: &[Flag] = &[
    flag(
        "threshold",
        Kind::Int,
        "20",
        " value above which is considered an hardware latency",
    ),
    flag(
        "hardlimit",
        Kind::Int,
        "20",
        " value above which the test is considered to fail",
    ),
    flag(
        "duration",
        Kind::String,
        "15s",
        "total time to test for hardware latency: <n>{smdw}",
    ),
    flag(
        "window",
        Kind::Duration,
        "1s",
        "time between samples: <n>{usmss}",
    ),
    flag(
        "width",
        Kind::Duration,
        "950ms",
        "time to actually measure: <n>{usmss}",
    ),
    flag(
        "hwlatdetect-start-delay",
        Kind::Int,
        "0",
        "delay in second before running the hwlatdetect binary",
    ),
];

/// strconv.Atoi's refusal, as klog's `Set` methods return it.
fn atoi(text: &str) -> Result<i64, String> {
    text.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            goflag::go_quote(text)
        )
    })
}

fn check_level(text: &str) -> Result<(), String> {
    atoi(text).map(|_| ())
}

fn check_threshold(text: &str) -> Result<(), String> {
    match Severity::from_flag(text) {
        Some(_) => Ok(()),
        None => atoi(text).map(|_| ()),
    }
}

fn check_vmodule(text: &str) -> Result<(), String> {
    let syntax = || "syntax error: expect comma-separated list of filename=N".to_string();
    for pattern in text.split(',').filter(|p| !p.is_empty()) {
        match pattern.split('=').collect::<Vec<_>>()[..] {
            [file, level] if !file.is_empty() && !level.is_empty() => {
                level.parse::<i32>().map_err(|_| syntax())?;
            }
            _ => return Err(syntax()),
        }
    }
    Ok(())
}

fn check_backtrace_at(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    let syntax = || "syntax error: expect file.go:234".to_string();
    let (file, line) = text.split_once(':').ok_or_else(syntax)?;
    if line.contains(':') || !file.contains('.') {
        return Err(syntax());
    }
    match line.parse::<i64>() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err("negative or zero value for level".into()),
        Err(_) => Err(syntax()),
    }
}

/// klog v1's flags (`klog.InitFlags(nil)`).
const KLOG_FLAGS: &[Flag] = &[
    flag(
        "add_dir_header",
        Kind::Bool,
        "false",
        "If true, adds the file directory to the header",
    ),
    flag(
        "alsologtostderr",
        Kind::Bool,
        "false",
        "log to standard error as well as files",
    ),
    flag(
        "log_backtrace_at",
        Kind::Value {
            check: check_backtrace_at,
            zero: ":0",
        },
        ":0",
        "when logging hits line file:N, emit a stack trace",
    ),
    flag(
        "log_dir",
        Kind::String,
        "",
        "If non-empty, write log files in this directory",
    ),
    flag(
        "log_file",
        Kind::String,
        "",
        "If non-empty, use this log file",
    ),
    flag(
        "log_file_max_size",
        Kind::Uint,
        "1800",
        "Defines the maximum size a log file can grow to. Unit is megabytes. If the value is 0, the maximum file size is unlimited.",
    ),
    flag(
        "logtostderr",
        Kind::Bool,
        "true",
        "log to standard error instead of files",
    ),
    flag(
        "skip_headers",
        Kind::Bool,
        "false",
        "If true, avoid header prefixes in the log messages",
    ),
    flag(
        "skip_log_headers",
        Kind::Bool,
        "false",
        "If true, avoid headers when opening log files",
    ),
    flag(
        "stderrthreshold",
        Kind::Value {
            check: check_threshold,
            zero: "0",
        },
        "2",
        "logs at or above this threshold go to stderr",
    ),
    flag(
        "v",
        Kind::Value {
            check: check_level,
            zero: "0",
        },
        "0",
        "number for the log level verbosity",
    ),
    flag(
        "vmodule",
        Kind::Value {
            check: check_vmodule,
            zero: "",
        },
        "",
        "comma-separated list of pattern=N settings for file-filtered logging",
    ),
];

/// A runner's settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerSettings {
    pub tool: RunnerTool,
    pub klog: KlogConfig,
    /// `-add_dir_header`: the runner's source directory in each line.
    pub add_dir_header: bool,
    /// Seconds to wait before the tool runs (the `-*-start-delay` flag;
    /// 0 or less: none, as the runners' `> 0`).
    pub start_delay_s: i64,
    /// Every flag as given or defaulted (Go's strings).
    parsed: Parsed,
}

impl RunnerSettings {
    /// Parses the runner's words as its Go `flag.Parse` does; `program` is
    /// its argv[0], whose base name klog's file names take.
    pub fn parse(
        tool: RunnerTool,
        words: &[String],
        program: &str,
    ) -> Result<RunnerSettings, GoFlagUsage> {
        let program = std::path::Path::new(program)
            .file_name()
            .map_or(program.to_string(), |n| n.to_string_lossy().into_owned());
        let flags = tool.flags();
        let parsed = goflag::parse(&flags, words)?;
        let get = |name: &str| parsed.get(&flags, name).to_string();
        let yes = |name: &str| goflag::parse_bool(&get(name)) == Some(true);
        let path =
            |name: &str| Some(PathBuf::from(get(name))).filter(|p| !p.as_os_str().is_empty());
        let klog = KlogConfig {
            to_stderr: yes("logtostderr"),
            also_to_stderr: yes("alsologtostderr"),
            stderr_threshold: Severity::from_flag(&get("stderrthreshold"))
                .unwrap_or(Severity::Error),
            log_file: path("log_file"),
            log_dir: path("log_dir"),
            skip_headers: yes("skip_headers"),
            skip_log_headers: yes("skip_log_headers"),
            program,
        };
        let delay_flag = format!("{}-start-delay", tool.tool());
        let start_delay_s = goflag::parse_int(&get(&delay_flag)).unwrap_or(0);
        Ok(RunnerSettings {
            tool,
            klog,
            add_dir_header: yes("add_dir_header"),
            start_delay_s,
            parsed: Parsed {
                values: flags.iter().map(|f| (f.name, get(f.name))).collect(),
                rest: parsed.rest.clone(),
            },
        })
    }

    fn value(&self, name: &str) -> &str {
        self.parsed.values.get(name).map_or("", String::as_str)
    }

    /// An Int flag's value as Go's `strconv.Itoa` writes it.
    fn int(&self, name: &str) -> String {
        goflag::parse_int(self.value(name)).unwrap_or(0).to_string()
    }

    /// A Duration flag in whole microseconds, as `fmt.Sprintf("%dus",
    /// d.Microseconds())` (truncated toward zero).
    fn micros(&self, name: &str) -> String {
        let ns = goflag::parse_duration_ns(self.value(name)).unwrap_or(0);
        format!("{}us", ns / 1000)
    }

    /// The words the runner gives its tool after the tool's name; `main`
    /// is the main thread's CPU and `measured` the CPUs measured (the CPU
    /// lists as Go's cpuset prints them), unused by hwlatdetect.
    pub fn tool_args(&self, main: usize, measured: &[usize]) -> Vec<String> {
        let list = crate::units::cpu_list(measured);
        let words: Vec<String> = match self.tool {
            RunnerTool::Oslat => vec![
                "--duration".into(),
                self.value("runtime").into(),
                "--rtprio".into(),
                self.value("rt-priority").into(),
                "--cpu-list".into(),
                list,
                "--cpu-main-thread".into(),
                main.to_string(),
            ],
            RunnerTool::Cyclictest => vec![
                "--duration".into(),
                self.value("duration").into(),
                "--priority".into(),
                self.value("rt-priority").into(),
                "--threads".into(),
                measured.len().to_string(),
                "--affinity".into(),
                list,
                "--histogram".into(),
                self.value("histogram").into(),
                "--interval".into(),
                self.int("interval"),
                "--mlockall".into(),
                "--mainaffinity".into(),
                main.to_string(),
                "--quiet".into(),
            ],
            RunnerTool::Hwlatdetect => vec![
                "--threshold".into(),
                self.int("threshold"),
                "--hardlimit".into(),
                self.int("hardlimit"),
                "--duration".into(),
                self.value("duration").into(),
                "--window".into(),
                self.micros("window"),
                "--width".into(),
                self.micros("width"),
            ],
        };
        words
    }
}

/// The usage of the runner named `name` (`oslat-runner`, ...), as its `-h`
/// prints it; None for another name.
pub fn usage_named(name: &str) -> Option<String> {
    let tool = [
        RunnerTool::Oslat,
        RunnerTool::Cyclictest,
        RunnerTool::Hwlatdetect,
    ]
    .into_iter()
    .find(|t| t.name() == name)?;
    Some(goflag::usage(name, &tool.flags()))
}

/// Where each line comes from in the runner's Go source (cnf-tests
/// `cmd/<tool>-runner/main.go` and `internal/node/node.go`), by message;
/// with its directory for klog's `-add_dir_header`.
pub fn source_place(tool: RunnerTool, what: Line, with_dir: bool) -> (String, u32) {
    let (file, line) = source_line(tool, what);
    let file = match (with_dir, file) {
        (false, f) => f.to_string(),
        (true, "node.go") => "node/node.go".to_string(),
        (true, f) => format!("{}/{f}", tool.name()),
    };
    (file, line)
}

fn source_line(tool: RunnerTool, what: Line) -> (&'static str, u32) {
    use Line::*;
    let line = match (tool, what) {
        (_, Cmdline) => return ("node.go", 39),
        (_, Kernel) => return ("node.go", 46),
        (RunnerTool::Oslat, MainCpu) => 35,
        (RunnerTool::Oslat, Siblings) => 41,
        (RunnerTool::Oslat, TooFew) => 31,
        (RunnerTool::Oslat, Smt) => 50,
        (RunnerTool::Oslat, Running) => 73,
        (RunnerTool::Oslat, Ran) => 76,
        (RunnerTool::Cyclictest, MainCpu) => 34,
        (RunnerTool::Cyclictest, Siblings) => 40,
        (RunnerTool::Cyclictest, TooFew | Smt) => 49,
        (RunnerTool::Cyclictest, Running) => 77,
        (RunnerTool::Cyclictest, Ran) => 80,
        (RunnerTool::Hwlatdetect, Running) => 50,
        (RunnerTool::Hwlatdetect, _) => 53,
    };
    ("main.go", line)
}

/// The lines a runner logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    MainCpu,
    Siblings,
    TooFew,
    Smt,
    Cmdline,
    Kernel,
    Running,
    Ran,
}

/// Go's `%v` of a string slice: `[a b c]`.
pub fn go_list<T: ToString>(items: &[T]) -> String {
    let words: Vec<String> = items.iter().map(T::to_string).collect();
    format!("[{}]", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn parse(tool: RunnerTool, line: &str) -> Result<RunnerSettings, GoFlagUsage> {
        RunnerSettings::parse(tool, &words(line), tool.name())
    }

    fn bad(tool: RunnerTool, line: &str) -> String {
        match parse(tool, line) {
            Err(GoFlagUsage::Bad(m)) => m,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_runners() {
        let s = parse(RunnerTool::Oslat, "").unwrap();
        assert_eq!(
            s.tool_args(0, &[2, 3, 4]),
            words("--duration 10m --rtprio 1 --cpu-list 2-4 --cpu-main-thread 0")
        );
        assert_eq!(s.start_delay_s, 0);
        assert!(s.klog.to_stderr && !s.klog.also_to_stderr);
        assert_eq!(s.klog.stderr_threshold, Severity::Error);
        assert_eq!(
            (s.klog.log_file.clone(), s.klog.log_dir.clone()),
            (None, None)
        );
        let s = parse(RunnerTool::Cyclictest, "").unwrap();
        assert_eq!(
            s.tool_args(4, &[5, 7]),
            words(
                "--duration 15s --priority 95 --threads 2 --affinity 5,7 --histogram 30 \
                 --interval 1000 --mlockall --mainaffinity 4 --quiet"
            )
        );
        let s = parse(RunnerTool::Hwlatdetect, "").unwrap();
        assert_eq!(
            s.tool_args(0, &[]),
            words(
                "--threshold 20 --hardlimit 20 --duration 15s --window 1000000us --width 950000us"
            )
        );
    }

    #[test]
    fn every_flag_reaches_the_tool() {
        let s = parse(
            RunnerTool::Oslat,
            "-runtime=300 -rt-priority 7 -oslat-start-delay=0x3 -logtostderr=false \
             -alsologtostderr -log_file=/host/x.log -v=2 -skip_headers",
        )
        .unwrap();
        assert_eq!(
            s.tool_args(1, &[2]),
            words("--duration 300 --rtprio 7 --cpu-list 2 --cpu-main-thread 1")
        );
        assert_eq!(s.start_delay_s, 3);
        assert!(!s.klog.to_stderr && s.klog.also_to_stderr && s.klog.skip_headers);
        assert_eq!(s.klog.log_file, Some(PathBuf::from("/host/x.log")));
        let s = parse(
            RunnerTool::Cyclictest,
            "--duration 1m -rt-priority=1 -histogram=50 -interval=0x64 -cyclictest-start-delay -2",
        )
        .unwrap();
        assert_eq!(
            s.tool_args(0, &[1]),
            words(
                "--duration 1m --priority 1 --threads 1 --affinity 1 --histogram 50 \
                 --interval 100 --mlockall --mainaffinity 0 --quiet"
            )
        );
        assert_eq!(s.start_delay_s, -2);
        let s = parse(
            RunnerTool::Hwlatdetect,
            "-threshold=5 -hardlimit=010 -duration=1m -window=10s -width 1.5ms -stderrthreshold=INFO",
        )
        .unwrap();
        assert_eq!(
            s.tool_args(0, &[]),
            words("--threshold 5 --hardlimit 8 --duration 1m --window 10000000us --width 1500us")
        );
        assert_eq!(s.klog.stderr_threshold, Severity::Info);
        // Truncated toward zero, as Go's Microseconds().
        let s = parse(RunnerTool::Hwlatdetect, "-window=-1500ns -width=999ns").unwrap();
        assert_eq!(s.micros("window"), "-1us");
        assert_eq!(s.micros("width"), "0us");
    }

    #[test]
    fn every_bad_value_is_gos_refusal() {
        use RunnerTool::*;
        let cases: &[(RunnerTool, &str, &str)] = &[
            (
                Oslat,
                "-oslat-start-delay=soon",
                "invalid value \"soon\" for flag -oslat-start-delay: parse error",
            ),
            (Oslat, "-runtime", "flag needs an argument: -runtime"),
            (
                Oslat,
                "-rt-priority",
                "flag needs an argument: -rt-priority",
            ),
            (
                Oslat,
                "-duration=1m",
                "flag provided but not defined: -duration",
            ),
            (
                Cyclictest,
                "-interval=1.5",
                "invalid value \"1.5\" for flag -interval: parse error",
            ),
            (
                Cyclictest,
                "-cyclictest-start-delay=1s",
                "invalid value \"1s\" for flag -cyclictest-start-delay: parse error",
            ),
            (
                Cyclictest,
                "-runtime=1m",
                "flag provided but not defined: -runtime",
            ),
            (
                Cyclictest,
                "-threads=2",
                "flag provided but not defined: -threads",
            ),
            (
                Hwlatdetect,
                "-threshold=x",
                "invalid value \"x\" for flag -threshold: parse error",
            ),
            (
                Hwlatdetect,
                "-hardlimit=99999999999999999999",
                "invalid value \"99999999999999999999\" for flag -hardlimit: value out of range",
            ),
            (
                Hwlatdetect,
                "-window=10",
                "invalid value \"10\" for flag -window: parse error",
            ),
            (
                Hwlatdetect,
                "-width=5x",
                "invalid value \"5x\" for flag -width: parse error",
            ),
            (
                Hwlatdetect,
                "-hwlatdetect-start-delay=",
                "invalid value \"\" for flag -hwlatdetect-start-delay: parse error",
            ),
            (
                Oslat,
                "-logtostderr=nope",
                "invalid boolean value \"nope\" for -logtostderr: parse error",
            ),
            (
                Oslat,
                "-alsologtostderr=2",
                "invalid boolean value \"2\" for -alsologtostderr: parse error",
            ),
            (Oslat, "-log_file", "flag needs an argument: -log_file"),
            (
                Oslat,
                "-log_file_max_size=-1",
                "invalid value \"-1\" for flag -log_file_max_size: parse error",
            ),
            (
                Oslat,
                "-v=high",
                "invalid value \"high\" for flag -v: strconv.Atoi: parsing \"high\": invalid syntax",
            ),
            (
                Oslat,
                "-stderrthreshold=loud",
                "invalid value \"loud\" for flag -stderrthreshold: strconv.Atoi: parsing \"loud\": invalid syntax",
            ),
            (
                Oslat,
                "-vmodule=main",
                "invalid value \"main\" for flag -vmodule: syntax error: expect comma-separated list of filename=N",
            ),
            (
                Oslat,
                "-log_backtrace_at=main:3",
                "invalid value \"main:3\" for flag -log_backtrace_at: syntax error: expect file.go:234",
            ),
            (
                Oslat,
                "-log_backtrace_at=main.go:0",
                "invalid value \"main.go:0\" for flag -log_backtrace_at: negative or zero value for level",
            ),
        ];
        for (tool, line, message) in cases {
            assert_eq!(bad(*tool, line), *message, "{line}");
        }
        // Every klog flag is there, with a good value.
        let ok = "-add_dir_header -log_dir=/tmp -log_file_max_size=0 -skip_log_headers=true \
                  -vmodule=main=2,node=1 -log_backtrace_at=main.go:12 -stderrthreshold=1";
        for tool in [Oslat, Cyclictest, Hwlatdetect] {
            assert!(parse(tool, ok).is_ok());
            assert_eq!(parse(tool, "-help"), Err(GoFlagUsage::Help));
        }
    }

    #[test]
    fn the_usage_lists_the_runner_and_klog() {
        let usage = goflag::usage("oslat-runner", &RunnerTool::Oslat.flags());
        assert!(usage.starts_with("Usage of oslat-runner:\n  -add_dir_header\n"));
        assert!(usage.contains(
            "  -runtime string\n    \tSpecify test duration, e.g., 60, 20m, 2H (default \"10m\")\n"
        ));
        assert!(usage.contains(
            "  -logtostderr\n    \tlog to standard error instead of files (default true)\n"
        ));
        assert!(usage.contains("  -stderrthreshold value\n    \tlogs at or above this threshold go to stderr (default 2)\n"));
        assert!(usage.contains("  -v value\n    \tnumber for the log level verbosity\n"));
        assert_eq!(usage.lines().filter(|l| l.starts_with("  -")).count(), 15);
    }

    #[test]
    fn go_lists() {
        assert_eq!(go_list(&["--duration", "1m"]), "[--duration 1m]");
        assert_eq!(go_list(&[0usize, 8]), "[0 8]");
        assert_eq!(go_list::<usize>(&[]), "[]");
    }
}
