//! Command-line declarations only (clap derive). Every value is typed as
//! clap reads it (`parsers::Checked` over `units::values`), every printed
//! default comes from the constant the code uses; the checks across options
//! happen in `settings`, measuring in `commands`.

use crate::units::values::{self, BlockSizes, CpuList, NumberOrAll};
use clap::{Args, Parser, Subcommand, ValueEnum};
use parsers::{Checked, with_default};
use std::path::PathBuf;
use std::time::Duration;

#[macro_use]
mod examples;
pub mod hwlat;
pub mod last_wins;
pub mod parsers;

/// `--policy`: cli's own enum (cli/ only declares arguments and imports
/// nothing of rt/); settings/ converts it into `rt::sched::Policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    /// SCHED_DEADLINE: --runtime of CPU time in every period of the test, due by --deadline
    Deadline,
}

/// `--collector`: where the kernel events of `--breakdown` and
/// `--trace-spikes` are gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CollectorArg {
    /// BPF where it can run, else tracefs (the output says which ran and why)
    Auto,
    /// In the kernel with BPF (root, or CAP_BPF and CAP_PERFMON; Linux 5.8+)
    Bpf,
    /// Through a private tracefs instance, read in user space
    Tracefs,
}

#[derive(Debug, Parser)]
#[command(
    name = "latscope",
    version,
    about = "Measure the latencies a real-time Linux system lives by",
    long_about = "Measure the latencies a real-time Linux system lives by: task wake-up \
through every IPC primitive (threads or processes, one way or round trip), periodic timer wake-ups, the OS noise a spinning thread meets (with its causes), and synchronous log-disk writes, with nanosecond clocks, percentiles and HDR histograms.\n\n\
Exit codes: 0 ok, 1 run-time error, 2 bad usage, 3 a --max-latency or --fail-if threshold crossed (doctor: a check is bad), \
4 skipped (this machine lacks what the test needs; the reason is printed).",
    allow_negative_numbers = true,
    // getopt semantics, as in the original tools: a repeated option's last value wins.
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// POSIX message queue wake-up latency (replaces pmqtest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::MQ)]
    Mq(Box<MqArgs>),
    /// POSIX semaphore latency, round trip by default (replaces semtest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::SEM)]
    Sem(Box<SemArgs>),
    /// Signal wake-up latency, sigwait (replaces sigwaittest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::SIGNAL)]
    Signal(Box<PairTestArgs>),
    /// System V semaphore latency, semop (replaces svsematest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::SVSEM)]
    Svsem(Box<PairTestArgs>),
    /// POSIX thread mutex latency, unlock -> lock (replaces ptsematest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::MUTEX)]
    Mutex(Box<PairTestArgs>),
    /// Pipe wake-up latency, write -> read
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::PIPE)]
    Pipe(Box<PairTestArgs>),
    /// eventfd wake-up latency, write -> read
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::EVENTFD)]
    Eventfd(Box<PairTestArgs>),
    /// Futex wake-up latency, FUTEX_WAKE -> FUTEX_WAIT
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::FUTEX)]
    Futex(Box<PairTestArgs>),
    /// Unix-domain socket wake-up latency, send -> recv
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::UNIX)]
    Unix(Box<PairTestArgs>),
    /// System V message queue wake-up latency, msgsnd -> msgrcv
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::SVMQ)]
    Svmq(Box<PairTestArgs>),
    /// Every IPC primitive with the same settings, one comparison table
    #[command(
        allow_negative_numbers = true,
        args_override_self = true,
        // The pair options are shared with the single tests, whose help
        // gives their own defaults: `ipc` states its different ones.
        mut_arg("interval", |a| a.help(with_default(INTERVAL_HELP, values::DEFAULT_INTERVAL_US))),
        mut_arg("priority", |a| a.help(with_default(
            PRIORITY_HELP,
            format_args!("{} when allowed, else {}", values::DEFAULT_RT_PRIORITY, values::DEFAULT_PAIR_PRIORITY)
        ))),
        mut_arg("smp", |a| a.help(IPC_SMP_HELP)),
        after_help = examples::IPC
    )]
    Ipc(Box<IpcArgs>),
    /// Periodic timer wake-up latency (replaces Xenomai's latency; same options but -h, which is
    /// help here and histograms under the name latency or with --format classic)
    #[command(
        allow_negative_numbers = true,
        args_override_self = true,
        disable_help_flag = true,
        after_help = examples::TIMER
    )]
    Timer(Box<TimerArgs>),
    /// Periodic timer latency with rt-tests cyclictest's options and exact output (GNU getopt syntax)
    #[command(disable_help_flag = true, after_help = examples::CYCLICTEST)]
    Cyclictest(CyclictestArgs),
    /// SCHED_DEADLINE wake-up latency as rt-tests cyclicdeadline measures it, with its options and exact output (GNU getopt syntax)
    #[command(disable_help_flag = true, after_help = examples::CYCLICDEADLINE)]
    Cyclicdeadline(CyclicdeadlineArgs),
    /// OS latency as rt-tests oslat measures it, with its options and exact output (GNU getopt syntax)
    #[command(disable_help_flag = true, after_help = examples::OSLAT)]
    Oslat(OslatArgs),
    /// Signal round trip through a ring of threads as rt-tests signaltest measures it, with its
    /// options and exact output (GNU getopt syntax)
    #[command(disable_help_flag = true, after_help = examples::SIGNALTEST)]
    Signaltest(SignaltestArgs),
    /// Priority-inheritance stress as rt-tests pi_stress runs it, with its options and exact
    /// output (GNU getopt syntax), plus the inversion latency (stderr; --latscope-json FILE: the Report)
    #[command(disable_help_flag = true, after_help = examples::PI_STRESS)]
    PiStress(GetoptWords),
    /// Real-time push/pull balancing as rt-tests rt-migrate-test checks it, with its options and
    /// exact output (GNU getopt syntax)
    #[command(disable_help_flag = true, after_help = examples::RT_MIGRATE_TEST)]
    RtMigrateTest(GetoptWords),
    /// OS noise: a thread spinning on each measured CPU records every interruption (like oslat and osnoise)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::NOISE)]
    Noise(Box<NoiseArgs>),
    /// Hardware, firmware and hypervisor latency: a busy sampler on each CPU classifies every gap
    /// as hardware (nothing the kernel counted ran) or OS (with its cause)
    #[command(allow_negative_numbers = true, args_override_self = true, after_help = examples::HWLAT)]
    Hwlat(Box<hwlat::HwlatArgs>),
    /// Hardware latency with rt-tests hwlatdetect's options and exact output (no tracer needed)
    #[command(disable_help_flag = true, after_help = examples::HWLATDETECT)]
    Hwlatdetect(hwlat::HwlatdetectArgs),
    /// A pod's entrypoint as container-perf-tools' images run it (cmd.sh): cyclictest, oslat,
    /// hwlatdetect or rtla timerlat from environment variables, with the pod's CPUs
    #[command(after_help = CONTAINER_HELP)]
    Container(ContainerArgs),
    /// The cnf-tests runners OpenShift's latency test starts (oslat-runner, cyclictest-runner,
    /// hwlatdetect-runner): Go flags, klog's lines and log file, the tool's output logged
    #[command(after_help = RUNNER_HELP)]
    Runner(RunnerArgs),
    /// Log-disk write latency and bandwidth, written as a recovery log is (replaces mqldt; same options)
    #[command(args_override_self = true, after_help = examples::LOGDISK)]
    Logdisk(Box<LogdiskArgs>),
    /// The main job: run every test briefly and print one overview of this machine
    #[command(
        allow_negative_numbers = true,
        args_override_self = true,
        after_help = examples::SUITE,
        mut_arg("max_latency", |a| a.help(SUITE_MAX_LATENCY_HELP))
    )]
    Suite(Box<SuiteArgs>),
    /// Compare two reports (--json files) side by side, or a new one with the median of several bases
    #[command(args_override_self = true, after_help = examples::COMPARE)]
    Compare(CompareArgs),
    /// Make one self-contained HTML page (tables, histograms, latency over time) from JSON reports
    #[command(after_help = examples::REPORT)]
    Report(ReportArgs),
    /// Read a --samples file back: every sample as CSV (series,test,label,cpu,t_ns,latency_ns)
    #[command(after_help = examples::SAMPLES)]
    Samples(SamplesArgs),
    /// Is this machine ready for real time? Each setting that decides latency, its value and the fix
    #[command(args_override_self = true, after_help = examples::DOCTOR)]
    Doctor(DoctorArgs),
    /// Find and remove what a killed latscope left behind: System V semaphores and
    /// message queues, log-disk test files (under --dir), tracefs instances
    #[command(after_help = examples::CLEANUP, after_long_help = CLEANUP_HOW)]
    Cleanup(CleanupArgs),
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish, powershell)
    #[command(after_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Write the man pages (latscope, each subcommand, the compatibility names) into DIR;
    /// run by packaging/build-deb.sh, hence hidden
    #[command(hide = true)]
    Manpages(ManpagesArgs),
}

/// `latscope doctor`: reads the machine's settings, changes nothing.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Write the checks to FILE as JSON ('-' for standard output; the table is then not printed)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Under each check that is not ok, say what it means for latency
    #[arg(long)]
    pub explain: bool,
    /// Show only the checks that are not ok, then the summary
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub width: WidthArgs,
    /// Print instead what one BPF program run costs here, the observer effect per wake-up of --breakdown and --trace-spikes and what hwlat's interference programs cost per event (loads programs for about a second; with --json, those figures as JSON), then the listing of every BPF program latscope generates for this kernel (each family, each way of attaching it), as the verifier numbers instructions
    #[arg(long, conflicts_with_all = ["explain", "quiet"])]
    pub bpf: bool,
}

/// How `cleanup` tells latscope's objects from everything else (its man
/// page's second half; docs/cleanup.md says the same at more length).
const CLEANUP_HOW: &str = concat!(
    "What it removes: every run removes its objects on every exit path it can \
run code on (normal end, errors, Ctrl-C, SIGTERM). A SIGKILL of latscope itself can leave System V \
semaphore sets and message queues (IPC_PRIVATE, mode 0600), log-disk test files and the suite's \
.latscope-logdisk-XXXXXX directory, tracefs instances named latscope-<pid>-<n>, \
/dev/shm/cyclictest<pid>, and the cpuidle states --deepest-idle-state disabled (cleanup enables \
them again).

How it knows them: when latscope creates such an object it records it in an ownership registry, \
one file per process (/run/latscope/<pid>.<start time> for root, $XDG_RUNTIME_DIR/latscope/ or \
/tmp/latscope-<uid>/ otherwise; LATSCOPE_RUNTIME_DIR overrides), with a fingerprint read from the \
object (System V: key, creator, mode, change time; files: device, inode, birth time). cleanup \
removes an object only when no process has that pid and start time and the object still has the \
recorded fingerprint; an object of a running latscope is kept, one whose id or name another \
program got since is left alone, and when in doubt (no birth time, another PID namespace) it is \
kept with the reason. Files are removed only under a --dir you name. Only the caller's registry is \
read: run it as the user who ran the tests.

Exit codes: 0 done (also when nothing was found), 1 a removal failed, 2 bad usage.

",
    cleanup_examples!()
);

/// `latscope container TOOL`: settings from the environment only.
#[derive(Debug, Clone, Args)]
pub struct ContainerArgs {
    /// The entrypoint (its image's tool)
    #[arg(value_enum)]
    pub tool: ContainerTool,
}

/// The container-perf-tools entrypoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContainerTool {
    /// cyclictest -q -D $DURATION -p $rt_priority -t N -a CPUS -h 30 -i $INTERVAL --mainaffinity MAIN -m
    Cyclictest,
    /// oslat -D $RUNTIME_SECONDS --rtprio $PRIO --cpu-list CPUS --cpu-main-thread MAIN
    Oslat,
    /// hwlatdetect --duration $RUNTIME_SECONDS [--threshold=$THRESHOLD] --cpu-list CPUS --watch
    Hwlatdetect,
    /// latscope timer --cpus CPUS -p 1000 -D $DURATION -P $PRIO [--max-latency $MAX_LATENCY]
    Timerlat,
}

const CONTAINER_HELP: &str = "\
Environment (empty = unset; a bad value is one line, exit 2):
  cyclictest   DURATION (24h), INTERVAL (1000 us), rt_priority (1), stress (n; y or stress-ng: a
               stress-ng CPU hog on each measured CPU), TRACE_THRESHOLD (us: -b)
  oslat        RUNTIME_SECONDS (10), PRIO (1), USE_DEFAULT_SCHED (n; y: no --rtprio),
               TRACE_THRESHOLD (us: --trace-threshold)
  hwlatdetect  RUNTIME_SECONDS (10), THRESHOLD (us), ALL_CPUS (n; y: every online CPU)
  timerlat     DURATION (24h), PRIO (95), MAX_LATENCY (us; 0 = none)
  all          EXTRA_ARGS (appended to the command), delay (before the test), manual (n; y: print the
               command and sleep instead), PAUSE (y: sleep after the run, as cmd.sh's sleep infinity)

CPUs: the first usable CPU and its SMT siblings are kept for housekeeping (cyclictest, oslat,
timerlat); the rest is measured. Printed first: allowed cpu list:, what was left out and why,
new cpu list:, the command. SIGTERM or Ctrl-C end a sleep, and during the run reach the tool.

Exit codes: the tool's own; 4 when the pod's CPUs cannot host the test (fewer than 2, or fewer
than 4 with SMT); 2 for a bad variable.

Examples:
  latscope container oslat        # with PAUSE=n RUNTIME_SECONDS=30 set: 30 s, then exit
  latscope container cyclictest   # an image's CMD; DURATION=1h in the pod's env
";

/// `latscope runner TOOL FLAGS`.
#[derive(Debug, Clone, Args)]
pub struct RunnerArgs {
    #[command(subcommand)]
    pub tool: RunnerCommand,
}

/// The cnf-tests runners.
#[derive(Debug, Clone, Subcommand)]
pub enum RunnerCommand {
    /// oslat-runner: -runtime, -rt-priority, -oslat-start-delay and klog's flags
    #[command(disable_help_flag = true)]
    Oslat(RunnerWords),
    /// cyclictest-runner: -duration, -rt-priority, -histogram, -interval, -cyclictest-start-delay
    /// and klog's flags
    #[command(disable_help_flag = true)]
    Cyclictest(RunnerWords),
    /// hwlatdetect-runner: -duration, -threshold, -hardlimit, -window, -width,
    /// -hwlatdetect-start-delay and klog's flags
    #[command(disable_help_flag = true)]
    Hwlatdetect(RunnerWords),
}

/// A runner's words, read by settings::runner in Go's flag syntax.
#[derive(Debug, Clone, Args)]
pub struct RunnerWords {
    /// The runner's flags, as Go's flag package takes them (-runtime=10m, --runtime 10m, -x,
    /// -x=false; -h for their list)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

const RUNNER_HELP: &str = "\
The runners' flags, as their Go code defines them (`latscope runner TOOL -h` lists them), and
klog's: -logtostderr (default true: every line on standard error), -alsologtostderr, -log_file
(created or appended to, never truncated), -log_dir, -stderrthreshold, -skip_headers,
-skip_log_headers, -add_dir_header, -v. The tool's output, both streams in one, is logged in
the line that ends the run, as OpenShift's latency test reads it from -log_file.

CPUs (oslat, cyclictest): the first usable CPU runs the main thread; it and its SMT siblings
are left out; 2 CPUs are needed, 4 with SMT.

Exit codes: 0 the tool passed; 255 it failed, or the CPUs cannot host it (klog.Fatalf's F
line); 2 bad flags (Go's message and the usage), or a log file that cannot be opened.

Examples:
  latscope runner oslat -logtostderr=false -alsologtostderr -log_file=/host/oslat.log -runtime=10m
  latscope runner hwlatdetect -duration=1m -hardlimit=20    # as hwlatdetect-runner
";

/// `latscope cleanup`: leftovers of latscope processes that are gone.
#[derive(Debug, Clone, Args)]
pub struct CleanupArgs {
    /// Also remove leftover log-disk test files (and the suite's private directories)
    /// under DIR; repeatable. Without it such files are listed, not removed
    #[arg(long, value_name = "DIR", action = clap::ArgAction::Append)]
    pub dir: Vec<PathBuf>,
    /// List what would be removed and change nothing
    #[arg(long = "dry-run", short = 'n')]
    pub dry_run: bool,
}

/// How a compatibility name's words reach latscope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// clap parses them as `latscope SUBCOMMAND PRESETS... WORDS`, under the
    /// tool's name and in its letters (`compat_command`: its help and usage
    /// errors say `pmqtest`, `--format [default: classic]`).
    Clap {
        presets: &'static [&'static str],
        letters: Letters,
    },
    /// The tool's GNU getopt table reads them first (its help, getopt's
    /// complaints and its refusals in its words; settings/<tool>.rs), then
    /// hands the options found to clap as `Clap`'s words.
    GetoptThenClap { presets: &'static [&'static str] },
    /// The tool's GNU getopt table reads every word: `latscope SUBCOMMAND --
    /// WORDS`, clap takes none of them (not even `--help`).
    Getopt,
}

/// Whose letters a clap dialect's short options are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Letters {
    Latscope,
    /// Xenomai `latency`'s: `-h` is `--histograms`, help is `--help` alone.
    Xenomai,
}

/// A name under which latscope behaves as the original tool (argv[0]):
/// the subcommand that stands for it and how its words are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompatName {
    pub name: &'static str,
    pub subcommand: &'static str,
    pub dialect: Dialect,
}

const CLASSIC: &[&str] = &["--format", "classic"];

const fn classic(name: &'static str, subcommand: &'static str) -> CompatName {
    CompatName {
        name,
        subcommand,
        dialect: Dialect::Clap {
            presets: CLASSIC,
            letters: Letters::Latscope,
        },
    }
}

/// Every compatibility name, one entry each (also one man page each).
pub const COMPAT_NAMES: [CompatName; 17] = [
    classic("pmqtest", "mq"),
    classic("sigwaittest", "signal"),
    classic("svsematest", "svsem"),
    CompatName {
        name: "ptsematest",
        subcommand: "mutex",
        dialect: Dialect::GetoptThenClap { presets: CLASSIC },
    },
    classic("semtest", "sem"),
    CompatName {
        name: XENOMAI_COMPAT,
        subcommand: "timer",
        dialect: Dialect::Clap {
            presets: CLASSIC,
            letters: Letters::Xenomai,
        },
    },
    classic("mqldt", "logdisk"),
    CompatName {
        name: OSLAT_COMPAT,
        subcommand: "oslat",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: CYCLICTEST_COMPAT,
        subcommand: "cyclictest",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: CYCLICDEADLINE_COMPAT,
        subcommand: "cyclicdeadline",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: SIGNALTEST_COMPAT,
        subcommand: "signaltest",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: "hwlatdetect",
        subcommand: "hwlatdetect",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: PI_STRESS_COMPAT,
        subcommand: "pi-stress",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: RT_MIGRATE_TEST_COMPAT,
        subcommand: "rt-migrate-test",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: OSLAT_RUNNER_COMPAT,
        subcommand: "runner oslat",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: CYCLICTEST_RUNNER_COMPAT,
        subcommand: "runner cyclictest",
        dialect: Dialect::Getopt,
    },
    CompatName {
        name: HWLATDETECT_RUNNER_COMPAT,
        subcommand: "runner hwlatdetect",
        dialect: Dialect::Getopt,
    },
];

/// The names of the cnf-tests runners (`/usr/bin/oslat-runner`, ...).
pub const OSLAT_RUNNER_COMPAT: &str = "oslat-runner";
pub const CYCLICTEST_RUNNER_COMPAT: &str = "cyclictest-runner";
pub const HWLATDETECT_RUNNER_COMPAT: &str = "hwlatdetect-runner";

impl CompatName {
    /// The entry of `name`, if it is a compatibility name.
    pub fn named(name: &str) -> Option<&'static CompatName> {
        COMPAT_NAMES.iter().find(|c| c.name == name)
    }

    /// The words latscope's parser takes before the tool's own:
    /// `SUBCOMMAND PRESETS...`, or `SUBCOMMAND --` for a getopt tool (a
    /// subcommand of two words, `runner oslat`, is two words).
    pub fn stands_for(&self) -> Vec<&'static str> {
        let tail: &[&str] = match self.dialect {
            Dialect::Clap { presets, .. } | Dialect::GetoptThenClap { presets } => presets,
            Dialect::Getopt => &["--"],
        };
        self.subcommand
            .split(' ')
            .chain(tail.iter().copied())
            .collect()
    }

    /// Whether clap reads the words (after the tool's getopt table, for
    /// `GetoptThenClap`), so that it has a command under this name.
    pub fn parsed_by_clap(&self) -> bool {
        !matches!(self.dialect, Dialect::Getopt)
    }

    /// The letters clap reads its words in.
    pub fn letters(&self) -> Letters {
        match self.dialect {
            Dialect::Clap { letters, .. } => letters,
            _ => Letters::Latscope,
        }
    }
}

/// The compatibility name that runs `latscope oslat` (GNU getopt syntax).
pub const OSLAT_COMPAT: &str = "oslat";

/// The name a GNU getopt tool's messages start with (its argv[0]): as typed
/// when latscope was started under that tool's `name` (a link), else `name`
/// (`latscope cyclictest`, `latscope oslat`).
pub fn getopt_program_name(name: &str) -> String {
    std::env::args_os()
        .next()
        .filter(|a| {
            std::path::Path::new(a)
                .file_name()
                .is_some_and(|n| n == name)
        })
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string())
}

/// `latscope oslat [oslat options]`: the words are parsed by
/// settings::oslat (GNU getopt), not by clap.
#[derive(Debug, Clone, Args)]
pub struct OslatArgs {
    /// oslat's options, as rt-tests 2.x takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// The compatibility name that runs `latscope cyclictest` (GNU getopt
/// syntax; the lean drop-in binary answers to it too).
pub const CYCLICTEST_COMPAT: &str = "cyclictest";

/// `latscope cyclictest [cyclictest options]`: the words are parsed by
/// settings::cyclictest (GNU getopt), not by clap.
#[derive(Debug, Clone, Args)]
pub struct CyclictestArgs {
    /// cyclictest's options, as rt-tests 2.x takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// The compatibility name that runs `latscope cyclicdeadline` (GNU getopt
/// syntax).
pub const CYCLICDEADLINE_COMPAT: &str = "cyclicdeadline";

/// `latscope cyclicdeadline [cyclicdeadline options]`: the words are parsed
/// by settings::cyclicdeadline (GNU getopt), not by clap.
#[derive(Debug, Clone, Args)]
pub struct CyclicdeadlineArgs {
    /// cyclicdeadline's options, as rt-tests 2.x takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// The compatibility name that runs `latscope signaltest` (GNU getopt
/// syntax).
pub const SIGNALTEST_COMPAT: &str = "signaltest";

/// `latscope signaltest [signaltest options]`: the words are parsed by
/// settings::signaltest (GNU getopt), not by clap.
#[derive(Debug, Clone, Args)]
pub struct SignaltestArgs {
    /// signaltest's options, as rt-tests 2.x takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// The compatibility name that runs `latscope pi-stress` (GNU getopt
/// syntax).
pub const PI_STRESS_COMPAT: &str = "pi_stress";

/// The compatibility name that runs `latscope rt-migrate-test` (GNU getopt
/// syntax).
pub const RT_MIGRATE_TEST_COMPAT: &str = "rt-migrate-test";

/// The words of a getopt tool's subcommand (`pi-stress`,
/// `rt-migrate-test`): parsed by its settings module, not by clap.
#[derive(Debug, Clone, Args)]
pub struct GetoptWords {
    /// the tool's options, as rt-tests 2.x takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// `latscope completions SHELL`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for; install the output where that shell looks
    /// (bash: /usr/share/bash-completion/completions/latscope)
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `latscope manpages --out DIR`.
#[derive(Debug, Clone, Args)]
pub struct ManpagesArgs {
    /// Directory to write into (created if missing): man1/ for latscope's pages,
    /// compat/man1/ for the pages of the compatibility names
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `--fail-if`, on every test (absolute limits) and on `compare` (all forms).
#[derive(Debug, Clone, Args)]
pub struct ThresholdArgs {
    /// Exit with code 3 if any series' METRIC is above LIMIT: p99>50us, max>1ms, avg>5us
    /// (metrics min, avg, p50, p90, p99, p99.9, p99.99, max; units ns, us, ms, s, m, h);
    /// repeatable
    #[arg(long = "fail-if", value_name = "EXPR", action = clap::ArgAction::Append)]
    pub fail_if: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// BASE.json NEW.json, or only NEW.json with --base
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A base report; repeat it to compare with the median of several (per metric;
    /// for an even count the mean of the two middle values)
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub base: Vec<PathBuf>,
    /// Merge all series of each test first (compare the tests' overall figures)
    #[arg(long)]
    pub merge: bool,
    /// Exit with code 3 if a threshold is crossed: absolute (max>200us), absolute
    /// delta from the base (p99.9>+5us) or relative (p99>+10%); repeatable
    #[arg(long = "fail-if", value_name = "EXPR", action = clap::ArgAction::Append)]
    pub fail_if: Vec<String>,
    /// Write the comparison to FILE as JSON ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the comparison to FILE as a self-contained HTML page: the verdict, and per
    /// series the table and the percentile plot of base and new overlaid ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `latscope report`: JSON reports in, one HTML page out.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Reports written with --json; several make one page with the runs side by side
    #[arg(value_name = "RUN.json", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write, replaced if it exists ('-' for standard output) [default: report.html]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write each plot as a standalone SVG file into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
}

/// `latscope samples`: a `--samples` file in, CSV out.
#[derive(Debug, Clone, Args)]
pub struct SamplesArgs {
    /// A file written with --samples
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Write the CSV to OUT instead of standard output ('-': standard output)
    #[arg(long, value_name = "OUT")]
    pub csv: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A readable table with percentiles and automatic units
    Modern,
    /// The original tool's exact lines (and rt-tests JSON with --json)
    Classic,
}

/// How one sample is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// The sender stamps before its wake call, the receiver when its wait returns
    #[value(alias = "one-way")]
    Oneway,
    /// One task stamps, wakes its peer, is woken back, stamps again
    #[value(alias = "round-trip")]
    Roundtrip,
}

/// `latscope ipc` modes: one of them, or both one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IpcModeArg {
    #[value(alias = "one-way")]
    Oneway,
    #[value(alias = "round-trip")]
    Roundtrip,
    Both,
}

/// `--load`, on every test and on `suite` (SPEC in src/load/mod.rs).
#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// Background load while measuring, run at normal priority on the measured CPUs
    /// by stress-ng or rt-tests' hackbench: stress-ng stressors with worker counts
    /// (cpu:2, vm:1,hdd:1; default one worker per measured CPU) or hackbench[:GROUPS]
    /// (40 threads a group; default 1); or kcompile[:JOBS][,tree=DIR] (rteval's kernel
    /// compile, restarted, off the measured CPUs; default: /usr/src/linux-source-*);
    /// bare --load = cpu; repeatable
    #[arg(
        long = "load",
        value_name = "SPEC",
        num_args = 0..=1,
        default_missing_value = "cpu",
        action = clap::ArgAction::Append
    )]
    pub load: Vec<String>,
}

/// Options shared by every test that reports and judges latencies.
#[derive(Debug, Clone, Args)]
pub struct VerdictArgs {
    /// Exit with code 3 after the report if any sample exceeds USEC microseconds
    #[arg(long = "max-latency", value_name = "USEC", value_parser = Checked(values::positive))]
    pub max_latency: Option<u64>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Print only the final summary (no live progress line)
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `--on-threshold` and `--on-end` (rtla's actions; src/settings/actions.rs).
#[derive(Debug, Clone, Default, Args)]
pub struct ActionArgs {
    /// When a sample first crosses --max-latency, run ACTION (repeatable, run in order):
    /// trace[,file=F], signal,num=N,pid=PID|parent, shell[,timeout=T],command=CMD, or
    /// continue (act again on later crossings, at most once a second) (docs/guide.md)
    #[arg(long = "on-threshold", value_name = "ACTION", action = clap::ArgAction::Append)]
    pub on_threshold: Vec<String>,
    /// When the run ends (also by Ctrl-C or SIGTERM, before the results are written), run
    /// ACTION: trace[,file=F], signal,num=N,pid=PID|parent or shell[,timeout=T],command=CMD
    #[arg(long = "on-end", value_name = "ACTION", action = clap::ArgAction::Append)]
    pub on_end: Vec<String>,
}

/// The result files every test and `suite` can write besides the console
/// output. Each is checked (created as a temporary file next to it) before
/// anything is measured; `-` is standard output, for one of them at most.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    #[command(flatten)]
    pub width: WidthArgs,
    /// Write the results to FILE as JSON ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per series to FILE ('-' for standard output; columns in docs/json-schema.md)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a GitHub-flavoured Markdown table to FILE ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the verdicts to FILE as JUnit XML: one test case per --max-latency/--fail-if
    /// threshold per series ('-' for standard output; docs/fleet.md)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write Prometheus text exposition to FILE for node_exporter's textfile collector: a
    /// histogram per series on one fixed bucket ladder, counters, gauges (docs/fleet.md)
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// Write every window of every series to FILE as an HdrHistogram interval log, as the run
    /// goes (tags TEST.MODE.SERIES; merge hosts with HdrHistogram's tools; docs/fleet.md)
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// Write every raw sample of every series to FILE (binary, docs/samples.md; read it with
    /// `latscope samples FILE`)
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    // Optional (it needs --samples): the help says the default.
    #[arg(
        long = "samples-limit",
        value_name = "SIZE",
        value_parser = Checked(values::samples_limit),
        help = with_default(
            "Stop writing --samples at SIZE (4K, 64M, 1G; at least 4K) and count the samples left out",
            crate::units::format_bytes(values::DEFAULT_SAMPLES_LIMIT_BYTES)
        )
    )]
    pub samples_limit: Option<u64>,
}

/// `--wide`: the console's tables, which are fitted to a terminal's width
/// (src/rt/terminal.rs), printed full width.
#[derive(Debug, Clone, Default, Args)]
pub struct WidthArgs {
    /// Print every table full width (on a terminal they are fitted to its width, leaving out
    /// low-priority columns and wrapping long texts; suite: also what each test's sample spans,
    /// its policy, p99.99 and how it ended). LATSCOPE_COLUMNS=N fits them to N columns anywhere
    #[arg(long)]
    pub wide: bool,
}

/// `--trace-spikes`, on the timer, every single IPC test and `ipc`.
#[derive(Debug, Clone, Default, Args)]
pub struct SpikeArgs {
    /// Trace the kernel (root) and name the cause of every sample above USEC microseconds
    #[arg(long = "trace-spikes", value_name = "USEC", value_parser = Checked(values::positive))]
    pub trace_spikes: Option<u64>,
    /// How kernel events are collected for --breakdown and --trace-spikes: bpf (in the
    /// kernel), tracefs, or auto (bpf where it can run, else tracefs) [default: auto]
    #[arg(long, value_enum, value_name = "HOW")]
    pub collector: Option<CollectorArg>,
}

/// Options of every IPC test whose letters do not differ between the tools.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Stop the run and the kernel tracer when a sample exceeds USEC microseconds
    #[arg(short = 'b', long, value_name = "USEC", value_parser = Checked(values::positive))]
    pub breaktrace: Option<u64>,
    /// Run for TIME: a number of seconds, or with s/m/h/d suffixes (10s, 5m, 1h30m, 0.5m)
    #[arg(short = 'D', long, value_name = "TIME", value_parser = Checked(values::seconds))]
    pub duration: Option<Duration>,
    /// Put the two tasks of each pair on different CPUs (the receiver on the pair's
    /// CPU, the sender on the next usable one): measures the cross-CPU wake-up
    #[arg(long = "cross-cpu")]
    pub cross_cpu: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "modern")]
    pub format: OutputFormat,
    /// Do not lock memory with mlockall (page faults may then show up as latency)
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0 (deep CPU idle states stay allowed)
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub idle: IdleArgs,
    #[command(flatten)]
    pub spikes: SpikeArgs,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// The help of the pair options whose defaults differ between the pair
/// tests and `latscope ipc` (each adds its own `[default: ...]`).
const INTERVAL_HELP: &str = "Base interval between samples in microseconds; 0 = back to back";
const PRIORITY_HELP: &str =
    "Real-time priority of pair 0; pair N gets PRIO-N (at least 1) unless -S";
/// `suite --max-latency`: a bound on wake-ups, so only the wake-up tests
/// take it (a disk write, a noise interruption or a hardware gap is another
/// quantity).
const SUITE_MAX_LATENCY_HELP: &str = "Exit with code 3 after the report if a wake-up (the IPC rows, the timer) \
exceeds USEC microseconds; the noise, hardware and log-disk rows are not held to it";

/// `latscope ipc`'s help for -S, which is its default.
const IPC_SMP_HELP: &str =
    "SMP mode: one pair per usable CPU, pinned, all at the same priority (the default)";

/// The rt-tests pair options (pmqtest, sigwaittest, svsematest, ptsematest),
/// also used by `latscope ipc` (whose defaults differ: its help says them).
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// Pin pair N to CPU N (bare -a), or all pairs to CPU PROC (-a PROC)
    #[arg(
        short = 'a',
        long,
        value_name = "PROC",
        num_args = 0..=1,
        default_missing_value = values::ALL,
        value_parser = Checked(values::number_or_all)
    )]
    pub affinity: Option<NumberOrAll>,
    /// Added to the interval of each further pair, in microseconds
    #[arg(
        short = 'd',
        long,
        value_name = "DIST",
        default_value_t = values::DEFAULT_DISTANCE_US,
        value_parser = Checked(values::count)
    )]
    pub distance: u64,
    // The pair tests' default here, `latscope ipc`'s by mut_arg.
    #[arg(
        short = 'i',
        long,
        value_name = "INTV",
        value_parser = Checked(values::interval_us),
        help = with_default(INTERVAL_HELP, values::DEFAULT_PAIR_INTERVAL_US)
    )]
    pub interval: Option<u64>,
    /// Samples per pair (0 = until stopped)
    #[arg(
        short = 'l',
        long,
        value_name = "LOOPS",
        default_value_t = values::DEFAULT_LOOPS,
        value_parser = Checked(values::count)
    )]
    pub loops: u64,
    // The pair tests' default here, `latscope ipc`'s by mut_arg.
    #[arg(
        short = 'p',
        long = "prio",
        visible_alias = "priority",
        value_name = "PRIO",
        value_parser = Checked(values::priority),
        help = with_default(PRIORITY_HELP, values::DEFAULT_PAIR_PRIORITY)
    )]
    pub priority: Option<u64>,
    /// Scheduling policy [default: fifo with -p above 0, else other]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    #[command(flatten)]
    pub reservation: DeadlineArgs,
    /// SMP mode: one pair per usable CPU, pinned, all at the same priority
    #[arg(short = 'S', long)]
    pub smp: bool,
    // Optional: without -a/-S/-t, `latscope ipc` runs one pair per CPU.
    #[arg(
        short = 't',
        long,
        value_name = "NUM",
        num_args = 0..=1,
        default_missing_value = values::ALL,
        value_parser = Checked(values::number_or_all),
        help = with_default("Number of pairs; bare -t: one per usable CPU", values::DEFAULT_PAIRS)
    )]
    pub threads: Option<NumberOrAll>,
}

/// Everything a single rt-tests style pair test takes.
impl Command {
    /// `--wide` of a command whose console prints latscope's own tables,
    /// None for the others (the drop-ins' exact outputs are never fitted).
    pub fn wide(&self) -> Option<bool> {
        let outputs = match self {
            Command::Mq(a) => &a.pairs.common.verdict.outputs,
            Command::Sem(a) => &a.common.verdict.outputs,
            Command::Signal(a)
            | Command::Svsem(a)
            | Command::Mutex(a)
            | Command::Pipe(a)
            | Command::Eventfd(a)
            | Command::Futex(a)
            | Command::Unix(a)
            | Command::Svmq(a) => &a.pairs.common.verdict.outputs,
            Command::Ipc(a) => &a.verdict.outputs,
            Command::Timer(a) => &a.outputs,
            Command::Noise(a) => &a.verdict.outputs,
            Command::Hwlat(a) => &a.verdict.outputs,
            Command::Logdisk(a) => &a.verdict.outputs,
            Command::Suite(a) => &a.verdict.outputs,
            Command::Doctor(a) => return Some(a.width.wide),
            _ => return None,
        };
        Some(outputs.width.wide)
    }
}

#[derive(Debug, Clone, Args)]
pub struct PairArgs {
    #[command(flatten)]
    pub layout: LayoutArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MqArgs {
    #[command(flatten)]
    pub pairs: PairArgs,
    /// Delay each send by TO seconds to force receive timeouts (requires -T)
    #[arg(short = 'f', long = "forcetimeout", value_name = "TO", value_parser = Checked(values::seconds))]
    pub force_timeout: Option<Duration>,
    /// Use mq_timedreceive with a timeout of TO seconds; timeouts are counted
    #[arg(short = 'T', long, value_name = "TO", value_parser = Checked(values::seconds))]
    pub timeout: Option<Duration>,
    /// Run the sender of each pair in a child process instead of a thread
    #[arg(long)]
    pub fork: bool,
    /// How a sample is taken
    #[arg(long, value_enum, default_value = "oneway")]
    pub mode: ModeArg,
}

/// signal, svsem, pipe, eventfd, futex, unix, svmq.
#[derive(Debug, Clone, Args)]
pub struct PairTestArgs {
    #[command(flatten)]
    pub pairs: PairArgs,
    /// Run the sender of each pair in a child process instead of a thread
    #[arg(short = 'f', long)]
    pub fork: bool,
    /// How a sample is taken
    #[arg(long, value_enum, default_value = "oneway")]
    pub mode: ModeArg,
}

/// semtest's options (its own letters: -i is iterations, -I the interval).
#[derive(Debug, Clone, Args)]
pub struct SemArgs {
    /// Pin both tasks of pair N to CPU N (the default)
    #[arg(short = 'a', long)]
    pub affinity: bool,
    /// Do not pin: let the scheduler move the tasks
    #[arg(short = 'A', long = "no_affinity", visible_alias = "no-affinity")]
    pub no_affinity: bool,
    /// Samples per pair (0 = until stopped)
    #[arg(
        short = 'i',
        long,
        value_name = "N",
        default_value_t = values::DEFAULT_SEM_ITERATIONS,
        value_parser = Checked(values::count)
    )]
    pub iterations: u64,
    /// Interval between samples in microseconds, absolute periods; 0 = back to back
    #[arg(
        short = 'I',
        long,
        value_name = "US",
        default_value_t = values::DEFAULT_SEM_INTERVAL_US,
        value_parser = Checked(values::interval_us)
    )]
    pub interval: u64,
    /// Number of pairs, one per CPU [default: every usable CPU]
    #[arg(
        short = 'n',
        long = "num_cpus",
        visible_alias = "num-cpus",
        value_name = "N",
        value_parser = Checked(values::count)
    )]
    pub num_cpus: Option<u64>,
    /// Real-time priority of every task (switches to SCHED_FIFO)
    #[arg(short = 'p', long, value_name = "PRIO", value_parser = Checked(values::priority))]
    pub priority: Option<u64>,
    /// SCHED_RR instead of SCHED_FIFO (with -p)
    #[arg(short = 'r', long = "policy_rr", visible_alias = "policy-rr")]
    pub policy_rr: bool,
    /// Run the peer of each pair in a child process instead of a thread
    #[arg(short = 'f', long)]
    pub fork: bool,
    /// How a sample is taken
    #[arg(long, value_enum, default_value = "roundtrip")]
    pub mode: ModeArg,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Args)]
pub struct IpcArgs {
    #[command(flatten)]
    pub layout: LayoutArgs,
    // Optional: with -l alone the loops end each primitive.
    #[arg(
        short = 'D',
        long,
        value_name = "TIME",
        value_parser = Checked(values::seconds),
        help = with_default(
            "Time per primitive, shared by its modes (s/m/h/d suffixes); not the whole run as in suite: 9 primitives take 9 times -D (said before starting)",
            crate::units::format_duration(values::DEFAULT_TIME_PER_PRIMITIVE)
        )
    )]
    pub duration: Option<Duration>,
    /// Modes to run for every primitive
    #[arg(long, value_enum, default_value = "both")]
    pub mode: IpcModeArg,
    /// Peers in child processes, for every primitive
    #[arg(short = 'f', long)]
    pub fork: bool,
    /// The two tasks of each pair on different CPUs, for every primitive
    #[arg(long = "cross-cpu")]
    pub cross_cpu: bool,
    /// Only these primitives (comma list) [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Do not lock memory with mlockall
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub idle: IdleArgs,
    #[command(flatten)]
    pub spikes: SpikeArgs,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// Xenomai `latency`'s options, plus what latscope adds. Its `-h` is
/// histograms, where everywhere else in latscope `-h` is help: declared here
/// as help, `xenomai_letters` gives the letter back to the histograms where
/// Xenomai's meaning is asked for (the `latency` name, `--format classic`).
#[derive(Debug, Clone, Args)]
pub struct TimerArgs {
    /// Print help (under the name latency and with --format classic: --help only)
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Sampling period in microseconds (up to 1 s)
    #[arg(
        short = 'p',
        long,
        value_name = "US",
        default_value_t = values::DEFAULT_PERIOD_US,
        value_parser = Checked(values::period_us)
    )]
    pub period: u64,
    /// Print the histograms of loop minima, all samples and loop maxima (classic: HSD lines;
    /// -h under the name latency and with --format classic, as in Xenomai)
    #[arg(long = "histograms")]
    pub histograms: bool,
    /// Dump the all-samples histogram to FILE in gnuplot format ('-' = standard output)
    #[arg(short = 'g', long = "gnuplot", value_name = "FILE")]
    pub gnuplot: Option<PathBuf>,
    /// Write the results to FILE in the shape of rteval's summary.xml, which rteval -Z and
    /// its XSLT read ('-' for standard output; docs/fleet.md)
    #[arg(long = "rteval-xml", value_name = "FILE")]
    pub rteval_xml: Option<PathBuf>,
    /// Print statistics of the three histograms (classic: HSS lines)
    #[arg(short = 's', long = "stats")]
    pub stats: bool,
    /// Number of histogram cells; everything beyond lands in the last one
    #[arg(
        short = 'H',
        long = "cells",
        value_name = "N",
        default_value_t = values::DEFAULT_CELLS,
        value_parser = Checked(values::histogram_cells)
    )]
    pub cells: usize,
    /// Histogram cell width in nanoseconds
    #[arg(
        short = 'B',
        long = "bucket",
        value_name = "NS",
        default_value_t = values::DEFAULT_BUCKET_NS,
        value_parser = Checked(values::bucket_ns)
    )]
    pub bucket: u64,
    /// Loop lines between two headers in classic output, 0 = no headers
    #[arg(
        short = 'l',
        long = "lines",
        value_name = "N",
        default_value_t = values::DEFAULT_DATA_LINES,
        value_parser = Checked(values::count)
    )]
    pub lines: u64,
    /// Measuring time after the warm-up: seconds, or with s/m/h/d suffixes; 0 = until Ctrl-C
    ///
    /// Xenomai's letter, -T, is taken too; under the name latency only -T is, and -D is
    /// Xenomai's device number there.
    #[arg(
        short = 'D',
        short_alias = 'T',
        long = "duration",
        value_name = "TIME",
        default_value = values::UNTIL_STOPPED,
        value_parser = Checked(values::duration)
    )]
    pub duration: Duration,
    /// Only the final summary (needs -T, as in Xenomai; ignored with a warning otherwise)
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Testing device number (Xenomai RTDM); accepted and ignored (-D under the name latency)
    // -D is the duration here, as everywhere else in latscope; only the
    // `latency` name gives it back to the device (latency_letters).
    #[arg(long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// Test mode: 0 user-space wake-up, 1 thread latency (scheduled in), 2 IRQ latency; 1 and 2 trace the kernel
    #[arg(
        short = 't',
        long = "mode",
        value_name = "MODE",
        default_value_t = values::DEFAULT_TEST_MODE,
        value_parser = Checked(values::test_mode)
    )]
    pub mode: u8,
    /// Freeze the kernel trace: mark each new maximum in it, stop tracing at the end
    #[arg(short = 'f', long = "freeze")]
    pub freeze: bool,
    // Optional: --cpus and --smp conflict with it.
    #[arg(
        short = 'c',
        long = "cpu",
        value_name = "CPU",
        value_parser = Checked(values::cpu),
        help = with_default(
            "CPU of the sampling thread",
            format_args!("{}, or the first usable CPU", values::DEFAULT_TIMER_CPU)
        )
    )]
    pub cpu: Option<usize>,
    // Optional: none asked and no right to real-time priorities, the test
    // runs at normal priority.
    #[arg(
        short = 'P',
        long = "priority",
        value_name = "PRIO",
        value_parser = Checked(values::priority),
        help = with_default("Real-time priority of the sampling threads", values::DEFAULT_RT_PRIORITY)
    )]
    pub priority: Option<u64>,
    /// Stop at the first involuntary context switch or page fault of a sampling thread
    #[arg(short = 'b', long = "break-on-switch")]
    pub break_on_switch: bool,
    /// One pinned sampling thread per CPU in LIST (e.g. 0,2-3)
    #[arg(
        long,
        value_name = "LIST",
        conflicts_with_all = ["cpu", "smp"],
        value_parser = Checked(values::cpus)
    )]
    pub cpus: Option<CpuList>,
    /// One pinned sampling thread per usable CPU (like cyclictest -S)
    #[arg(long, conflicts_with = "cpu")]
    pub smp: bool,
    /// Scheduling policy of the sampling threads [default: fifo]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    #[command(flatten)]
    pub reservation: DeadlineArgs,
    /// Wake with a periodic timerfd (Xenomai's Linux build) [default in classic format]
    #[arg(long, conflicts_with_all = ["nanosleep", "posix_timer"])]
    pub timerfd: bool,
    /// Wake with clock_nanosleep(TIMER_ABSTIME) (cyclictest) [default in modern format]
    #[arg(long, conflicts_with = "posix_timer")]
    pub nanosleep: bool,
    /// Wake with a POSIX interval timer signalling the thread, taken by sigwait (cyclictest -x)
    #[arg(long)]
    pub posix_timer: bool,
    /// Loops (of one second) discarded at the start
    #[arg(
        long,
        value_name = "N",
        default_value_t = values::DEFAULT_WARMUP_LOOPS,
        value_parser = Checked(values::warmup_loops)
    )]
    pub warmup: u64,
    /// Split every wake-up into IRQ, thread and user latency with kernel tracing (root)
    #[arg(long)]
    pub breakdown: bool,
    #[command(flatten)]
    pub spikes: SpikeArgs,
    /// Output format
    #[arg(long, value_enum, default_value = "modern")]
    pub format: OutputFormat,
    /// Exit with code 3 after the report if any sample exceeds USEC microseconds
    #[arg(long = "max-latency", value_name = "USEC", value_parser = Checked(values::positive))]
    pub max_latency: Option<u64>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    /// Do not lock memory with mlockall (page faults may then show up as latency)
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0 (deep CPU idle states stay allowed)
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub idle: IdleArgs,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `latscope noise`: one spinning thread per measured CPU.
#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// The CPUs to measure, one spinning thread each (e.g. 1,3-5) [default: the isolated
    /// CPUs, else every usable CPU but the first, which the rest of latscope keeps; either way
    /// without the first CPU's SMT siblings]
    #[arg(long, value_name = "LIST", value_parser = Checked(values::cpus))]
    pub cpus: Option<CpuList>,
    /// A gap between two clock reads longer than TIME is an interruption (ns/us/ms;
    /// a bare number is microseconds)
    #[arg(
        long,
        value_name = "TIME",
        default_value = values::DEFAULT_NOISE_THRESHOLD,
        value_parser = Checked(values::noise_threshold_ns)
    )]
    pub threshold: u64,
    /// Run for TIME: a number of seconds, or with s/m/h/d suffixes (10s, 5m, 1h30m) [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "TIME", value_parser = Checked(values::seconds))]
    pub duration: Option<Duration>,
    // Optional: -p alone (above 0) chooses --policy fifo.
    #[arg(
        short = 'p',
        long = "prio",
        visible_alias = "priority",
        value_name = "PRIO",
        value_parser = Checked(values::priority),
        help = with_default(
            "Real-time priority of the spinning threads (alone, -p above 0 means --policy fifo)",
            values::DEFAULT_NOISE_PRIORITY
        )
    )]
    pub priority: Option<u64>,
    /// Scheduling policy of the spinning threads; fifo and rr only on CPUs named with
    /// --cpus or isolated [default: other; fifo with -p above 0]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Spin for TIME of every --period and sleep the rest, as osnoise's runtime
    /// (a bare number is microseconds) [default: the whole period]
    #[arg(long, value_name = "TIME", value_parser = Checked(values::micros_or_unit))]
    pub runtime: Option<u64>,
    /// The period of the --runtime duty cycle (a bare number is microseconds)
    #[arg(
        long,
        value_name = "TIME",
        default_value = values::DEFAULT_NOISE_PERIOD,
        value_parser = Checked(values::noise_period_ns)
    )]
    pub period: u64,
    /// With --policy deadline: each period's --runtime is due TIME after the period's start
    /// (a bare number is microseconds) [default: the period]
    #[arg(long, value_name = "TIME", value_parser = Checked(values::micros_or_unit))]
    pub deadline: Option<u64>,
    /// Run a real-time spinner on a CPU that is not isolated even with RT throttling off
    /// (sched_rt_runtime_us = -1): nothing else runs on that CPU while it spins
    #[arg(long)]
    pub force: bool,
    /// Do not load the interference counter (programs on every IRQ, softirq, NMI and context
    /// switch, as root) that tells hardware interruptions from the OS's: the HW column shows -
    #[arg(long = "no-hw-counter")]
    pub no_hw_counter: bool,
    /// Do not lock memory with mlockall
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub idle: IdleArgs,
    #[command(flatten)]
    pub spikes: SpikeArgs,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Total time for all tests (s/m/h/d suffixes; bare number = seconds)
    #[arg(
        short = 'D',
        long,
        value_name = "TIME",
        default_value = values::DEFAULT_SUITE_DURATION,
        value_parser = Checked(values::suite_duration)
    )]
    pub duration: Duration,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// How each log write is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SyncArg {
    /// Files opened O_DSYNC: every write returns once its data is on stable storage (mqldt, MQ)
    Dsync,
    /// A plain write, then fdatasync; both timed separately
    Fdatasync,
    /// A plain write, then fsync; both timed separately
    Fsync,
    /// No synchronisation (what a write costs without durability)
    None,
}

/// mqldt's options (its camelCase names, `--name=value` or `--name value`;
/// kebab-case aliases), plus what latscope adds.
#[derive(Debug, Clone, Args)]
pub struct LogdiskArgs {
    /// Directory for the test files; with --qm N the directories DIR1..DIRN [default: .]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Prefix of the test files: PREFIX.0000, PREFIX.0001, ... [default: mqldt_testfile]
    #[arg(long = "filePrefix", alias = "file-prefix", value_name = "PREFIX")]
    pub file_prefix: Option<String>,
    /// Write size(s): one size or a comma list, bytes or with K/M suffixes (4K,64K,1M); each runs for the full duration
    #[arg(
        long,
        value_name = "SIZES",
        default_value = values::DEFAULT_BLOCK_SIZES,
        value_parser = Checked(values::block_sizes)
    )]
    pub bsize: BlockSizes,
    /// Size of each test file, a multiple of the alignment (K/M/G suffixes)
    #[arg(
        long = "fileSize",
        alias = "file-size",
        value_name = "BYTES",
        default_value_t = values::DEFAULT_FILE_SIZE,
        value_parser = Checked(values::file_size)
    )]
    pub file_size: u64,
    /// Number of test files per writer, 1..10000
    #[arg(
        long = "numFiles",
        alias = "num-files",
        value_name = "N",
        default_value_t = values::DEFAULT_NUM_FILES,
        value_parser = Checked(values::num_files)
    )]
    pub num_files: u64,
    /// Time per block size: seconds, or with s/m/h/d suffixes; at least 1 s
    // -D as every other test's duration; mqldt has no -D (its short letters,
    // -t for the duration among them, are not taken: its long names are).
    #[arg(
        short = 'D',
        long,
        value_name = "TIME",
        default_value = values::DEFAULT_LOGDISK_DURATION,
        value_parser = Checked(values::logdisk_duration)
    )]
    pub duration: Duration,
    /// Write the results as CSV to FILE (one writer: the file is replaced; --qm: rows are appended)
    #[arg(long = "csvFile", alias = "csv-file", value_name = "FILE")]
    pub csv_file: Option<PathBuf>,
    /// Concurrent writers (queue managers), 1..10, each with its own directory DIR1..DIRN
    #[arg(
        long,
        value_name = "N",
        default_value_t = values::DEFAULT_WRITERS,
        value_parser = Checked(values::writers)
    )]
    pub qm: u64,
    /// Think time between two writes in microseconds (not counted in the write latency)
    #[arg(
        long,
        value_name = "US",
        default_value_t = values::DEFAULT_DELAY_US,
        value_parser = Checked(values::delay_us)
    )]
    pub delay: u64,
    // Optional: mqldt's options block shows it only when given.
    #[arg(
        long,
        value_name = "BYTES",
        value_parser = Checked(values::alignment),
        help = with_default(
            "Alignment of buffers, sizes and offsets: a power of two, 0 = the filesystem's block size",
            values::DEFAULT_ALIGNMENT
        )
    )]
    pub alignment: Option<u64>,
    /// How each write is made durable
    #[arg(long, value_enum, default_value = "dsync")]
    pub sync: SyncArg,
    /// Do not open the files with O_DIRECT (through the page cache; for filesystems without direct I/O)
    #[arg(long = "no-direct")]
    pub no_direct: bool,
    /// Reuse existing test files (regular files of exactly --fileSize owned by you) instead of refusing them
    #[arg(long)]
    pub reuse: bool,
    /// Keep the test files latscope created (by default they are removed at the end)
    #[arg(long)]
    pub keep: bool,
    /// Output format (classic: mqldt's exact lines and CSV; also: a symlink named mqldt)
    #[arg(long, value_enum, default_value = "modern")]
    pub format: OutputFormat,
    #[command(flatten)]
    pub idle: IdleArgs,
    /// --max-latency (each write's latency), the outputs, -q, --fail-if,
    /// --on-threshold/--on-end and --load, as every test has them.
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// `--policy deadline`'s reservation, on the timer and the IPC tests (noise
/// has its own --runtime, the spinning time, and takes --deadline alone);
/// the reservation's period is the test's period (each pair's interval).
#[derive(Debug, Clone, Default, Args)]
pub struct DeadlineArgs {
    /// With --policy deadline: CPU time reserved in every period (a bare number is microseconds)
    #[arg(long, value_name = "TIME", value_parser = Checked(values::micros_or_unit))]
    pub runtime: Option<u64>,
    /// With --policy deadline: the runtime is due TIME after each period's start (a bare
    /// number is microseconds) [default: the period]
    #[arg(long, value_name = "TIME", value_parser = Checked(values::micros_or_unit))]
    pub deadline: Option<u64>,
}

/// `--deepest-idle-state`, on every measuring test.
#[derive(Debug, Clone, Default, Args)]
pub struct IdleArgs {
    /// Disable the cpuidle states deeper than N on the measured CPUs while measuring (0: only
    /// the shallowest; restored at the end, and by `latscope cleanup` after a kill)
    #[arg(long = "deepest-idle-state", value_name = "N", value_parser = clap::value_parser!(u32))]
    pub deepest_idle_state: Option<u32>,
}

/// The command line of a compatibility name (`pmqtest`, `latency`, ...):
/// the subcommand it stands for, under that name (its usage line says
/// `pmqtest [OPTIONS]`, not `latscope mq`), with the defaults its preset
/// arguments give (`--format [default: classic]`). None for other names.
/// Used to parse, and so to print help and usage errors, as that tool.
pub fn compat_command(name: &str) -> Option<clap::Command> {
    use clap::CommandFactory;
    let compat = CompatName::named(name)?;
    let presets = match compat.dialect {
        Dialect::Clap { presets, .. } | Dialect::GetoptThenClap { presets } => presets,
        Dialect::Getopt => return None,
    };
    let mut cmd = Cli::command().find_subcommand(compat.subcommand)?.clone();
    for preset in presets.chunks(2) {
        let [option, value] = preset else {
            return None;
        };
        let long = option.trim_start_matches("--");
        let id = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long))?
            .get_id()
            .clone();
        cmd = cmd.mut_arg(id, |a| a.default_value(*value));
    }
    let cmd = in_letters(compat.letters(), cmd);
    let name = compat.name;
    Some(cmd.name(name).bin_name(name).display_name(name))
}

/// `timer` with Xenomai `latency`'s letter for the histograms: `-h` is
/// `--histograms`, help is `--help` alone (the `latency` name and
/// `latscope timer --format classic`).
pub fn xenomai_letters(timer: clap::Command) -> clap::Command {
    timer
        .mut_arg("help", |a| a.short(None))
        .mut_arg("histograms", |a| a.short('h'))
}

/// `timer` under the `latency` name: Xenomai's letters whole, `-D` its
/// device number and `-T` alone the duration. Only there: everywhere else
/// in latscope `-D` is the duration, and a newcomer's `latscope timer -D 3`
/// must end after 3 s (issue 40, item 14).
pub fn latency_letters(timer: clap::Command) -> clap::Command {
    xenomai_letters(timer)
        .mut_arg("duration", |a| a.short('T').short_alias(None))
        .mut_arg("device", |a| a.short('D'))
}

/// A subcommand's command in `letters` (only Xenomai's differ: `-h`, `-D`).
pub fn in_letters(letters: Letters, cmd: clap::Command) -> clap::Command {
    match letters {
        Letters::Latscope => cmd,
        Letters::Xenomai => latency_letters(cmd),
    }
}

/// The compatibility name of Xenomai's `latency` (`latscope timer`).
pub const XENOMAI_COMPAT: &str = "latency";

/// latscope's command line with Xenomai's letters on `timer`: what
/// `latscope timer --format classic` parses with (`-h`), and the `latency`
/// name (`-h`, `-D` the device, `-T` the duration) when `latency_name`.
pub fn command_with_xenomai_letters(latency_name: bool) -> clap::Command {
    use clap::CommandFactory;
    let letters = if latency_name {
        latency_letters
    } else {
        xenomai_letters
    };
    Cli::command().mut_subcommand("timer", letters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compat_name_has_its_command_with_classic_by_default() {
        for compat in COMPAT_NAMES {
            let name = compat.name;
            if !compat.parsed_by_clap() {
                assert!(compat_command(name).is_none(), "{name}: getopt, not clap");
                continue;
            }
            let mut cmd = compat_command(name).expect("a compat command");
            let help = cmd.render_help().to_string();
            assert!(help.contains(&format!("Usage: {name} [OPTIONS]")), "{help}");
            assert!(help.contains("[default: classic]"), "{name}: {help}");
            assert!(!help.contains("[default: modern]"), "{name}: {help}");
        }
        assert!(compat_command("latscope").is_none());
    }

    /// The words of one example line: up to a comment (` #`) or a
    /// redirection (` > `), single quotes removed.
    fn example_words(line: &str) -> Vec<String> {
        let command = line.split(" #").next().unwrap_or_default();
        let command = command.split(" > ").next().unwrap_or_default();
        command
            .split_whitespace()
            .map(|w| w.trim_matches('\'').to_string())
            .collect()
    }

    #[test]
    fn every_subcommand_s_help_ends_with_examples_that_parse() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        for sub in cli.get_subcommands_mut().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name().to_string();
            let help = sub.render_long_help().to_string();
            let (_, examples) = help
                .rsplit_once("Examples:\n")
                .unwrap_or_else(|| panic!("{name}: no examples:\n{help}"));
            let lines: Vec<&str> = examples.lines().filter(|l| !l.trim().is_empty()).collect();
            assert!((2..=3).contains(&lines.len()), "{name}: {lines:?}");
            for line in lines {
                let words = example_words(line);
                assert_eq!(words[..2], ["latscope", name.as_str()], "{line}");
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{name}: the example '{line}' does not parse: {e}");
                }
            }
        }
    }

    /// The `[default: ...]` an optional argument's help states, built from
    /// the constant the code uses (`with_default`); None where the help may
    /// state none, or only a default in words (`[default: fifo]`).
    fn stated_default(subcommand: &str, long: &str) -> Option<String> {
        use crate::units::{format_bytes, format_duration};
        Some(match (subcommand, long) {
            ("ipc", "interval") => values::DEFAULT_INTERVAL_US.to_string(),
            (_, "interval") => values::DEFAULT_PAIR_INTERVAL_US.to_string(),
            ("ipc", "prio") => format!(
                "{} when allowed, else {}",
                values::DEFAULT_RT_PRIORITY,
                values::DEFAULT_PAIR_PRIORITY
            ),
            ("noise", "prio") => values::DEFAULT_NOISE_PRIORITY.to_string(),
            (_, "prio") => values::DEFAULT_PAIR_PRIORITY.to_string(),
            (_, "threads") => values::DEFAULT_PAIRS.to_string(),
            ("ipc", "duration") => format_duration(values::DEFAULT_TIME_PER_PRIMITIVE),
            ("timer", "cpu") => format!("{}, or the first usable CPU", values::DEFAULT_TIMER_CPU),
            ("timer", "priority") => values::DEFAULT_RT_PRIORITY.to_string(),
            (_, "samples-limit") => format_bytes(values::DEFAULT_SAMPLES_LIMIT_BYTES),
            ("logdisk", "alignment") => values::DEFAULT_ALIGNMENT.to_string(),
            _ => return None,
        })
    }

    /// Every `[default: ...]` the help prints is the default the code uses:
    /// clap prints an argument's default value (read by the same parser as
    /// a typed one), or the help of an optional argument states it from the
    /// constant (`stated_default`). A number typed by hand into a help text
    /// could drift from the constant: a default that is a number, not
    /// printed by clap and not in `stated_default`, fails; so does a help
    /// that states a default besides clap's.
    #[test]
    fn every_printed_default_is_the_one_the_code_uses() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let mut checked = 0;
        for sub in cli.get_subcommands() {
            let name = sub.get_name();
            for arg in sub.get_arguments() {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                let long = arg.get_long().unwrap_or_default();
                let Some((_, after)) = help.split_once("[default: ") else {
                    assert!(
                        stated_default(name, long).is_none()
                            || !arg.get_default_values().is_empty(),
                        "{name} --{long}: its help lost its default: {help}"
                    );
                    continue;
                };
                let stated = after.split_once(']').map_or(after, |(d, _)| d);
                assert!(
                    arg.get_default_values().is_empty(),
                    "{name} --{long}: clap prints the default, the help states another: {help}"
                );
                match stated_default(name, long) {
                    Some(expected) => {
                        assert_eq!(stated, expected, "{name} --{long}: {help}");
                        checked += 1;
                    }
                    None => assert!(
                        !stated.starts_with(|c: char| c.is_ascii_digit()),
                        "{name} --{long}: a number typed into the help ({help}): \
                         give the argument a default_value_t, or state it with with_default"
                    ),
                }
            }
        }
        // The pair options of ten tests, ipc's, the timer's, noise's,
        // --samples-limit everywhere: the walk saw them.
        assert!(checked > 40, "{checked}");
    }

    #[test]
    fn the_defaults_clap_prints_are_the_constants() {
        use clap::CommandFactory;
        let cli = Cli::command();
        for (sub, long, default) in [
            ("timer", "period", values::DEFAULT_PERIOD_US.to_string()),
            ("timer", "cells", values::DEFAULT_CELLS.to_string()),
            ("timer", "bucket", values::DEFAULT_BUCKET_NS.to_string()),
            ("timer", "lines", values::DEFAULT_DATA_LINES.to_string()),
            ("timer", "warmup", values::DEFAULT_WARMUP_LOOPS.to_string()),
            ("timer", "mode", values::DEFAULT_TEST_MODE.to_string()),
            ("timer", "duration", values::UNTIL_STOPPED.to_string()),
            ("logdisk", "fileSize", values::DEFAULT_FILE_SIZE.to_string()),
            ("logdisk", "numFiles", values::DEFAULT_NUM_FILES.to_string()),
            ("logdisk", "bsize", values::DEFAULT_BLOCK_SIZES.to_string()),
            ("logdisk", "qm", values::DEFAULT_WRITERS.to_string()),
            ("logdisk", "delay", values::DEFAULT_DELAY_US.to_string()),
            (
                "logdisk",
                "duration",
                values::DEFAULT_LOGDISK_DURATION.to_string(),
            ),
            ("mq", "distance", values::DEFAULT_DISTANCE_US.to_string()),
            ("mq", "loops", values::DEFAULT_LOOPS.to_string()),
            (
                "sem",
                "iterations",
                values::DEFAULT_SEM_ITERATIONS.to_string(),
            ),
            (
                "sem",
                "interval",
                values::DEFAULT_SEM_INTERVAL_US.to_string(),
            ),
            (
                "noise",
                "threshold",
                values::DEFAULT_NOISE_THRESHOLD.to_string(),
            ),
            ("noise", "period", values::DEFAULT_NOISE_PERIOD.to_string()),
            (
                "suite",
                "duration",
                values::DEFAULT_SUITE_DURATION.to_string(),
            ),
        ] {
            let arg = cli
                .find_subcommand(sub)
                .and_then(|s| s.get_arguments().find(|a| a.get_long() == Some(long)))
                .unwrap_or_else(|| panic!("{sub} --{long}"));
            assert_eq!(
                arg.get_default_values(),
                [default.as_str()],
                "{sub} --{long}"
            );
            // ... and the help shows it.
            let mut cmd = cli.find_subcommand(sub).expect(sub).clone();
            let help = cmd.render_help().to_string();
            assert!(
                help.contains(&format!("[default: {default}]")),
                "{sub} --{long}: {help}"
            );
        }
    }

    #[test]
    fn a_bad_value_is_refused_by_clap_in_the_parser_s_words() {
        for (words, expected) in [
            (
                "latscope mq -i 99999999999999999999",
                "-i/--interval '99999999999999999999' is too large (at most 18446744073709551615)",
            ),
            (
                "latscope mq -l -5",
                "-l/--loops '-5' must not be negative (e.g. -l/--loops 100)",
            ),
            (
                "latscope mq -D 5x",
                "-D/--duration: unknown unit 'x' in '5x' (use s, m, h or d)",
            ),
            ("latscope timer -p 0", "-p/--period must be at least 1"),
            (
                "latscope logdisk --bsize 4X",
                "--bsize '4X': unknown size suffix 'X' (use bytes, or K or M: 4096, 64K or 1M)",
            ),
            (
                "latscope noise --cpus 1,1",
                "--cpus '1,1' names CPU 1 twice: name each CPU once",
            ),
        ] {
            let err = Cli::try_parse_from(words.split(' ')).expect_err(words);
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{words}"
            );
            let message = err.to_string();
            assert_eq!(
                message.lines().next(),
                Some(format!("error: {expected}").as_str()),
                "{words}"
            );
        }
        // The classic forms still read: -i100, --interval=100, bare -t and -a.
        for words in [
            "latscope mq -i100 -l5 -t -a",
            "latscope mq --interval=100 --loops=5 -t 2 -a 0",
            "latscope sem -i 5 -I 100 -n 1",
            "latscope timer -p1000 -T1 -H50 -B500",
        ] {
            Cli::try_parse_from(words.split(' ')).unwrap_or_else(|e| panic!("{words}: {e}"));
        }
    }

    #[test]
    fn timer_h_is_help_under_latscope_and_histograms_under_latency() {
        use clap::CommandFactory;
        let mut latscope = Cli::command();
        let timer = latscope.find_subcommand_mut("timer").expect("timer");
        let xenomai = compat_command("latency").expect("latency");
        // (the help, whether -h is its letter) for latscope's and Xenomai's.
        for (mut cmd, h_is_help) in [(timer.clone(), true), (xenomai, false)] {
            let help = cmd.render_help().to_string();
            assert_eq!(help.contains("-h, --help"), h_is_help, "{help}");
            assert_eq!(help.contains("-h, --histograms"), !h_is_help, "{help}");
            assert!(
                help.contains("--histograms") && help.contains("--help"),
                "{help}"
            );
        }
    }
}
