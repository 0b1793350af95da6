//! `latscope cyclictest` / the `cyclictest` compat name: rt-tests 2.x's
//! command line, parsed the way GNU getopt_long parses it (clustered short
//! options `-qm`, attached values `-p90`, optional values `-t`/`-t4`/`-t 4`,
//! `--opt=val`/`--opt val`, unique long-option prefixes, `--` ends options).
//! clap cannot express cyclictest's optional arguments, so this is its own
//! small parser; scripts depend on exactly these spellings.

use super::getopt::{
    Arg, GetoptOption, GetoptUsage, Own, Table, UsagePart, atoi, getopt_table_into,
    numa_parse_cpustring, parse_duration, render_usage,
};
use std::sync::LazyLock;
use std::time::Duration;

/// rt-tests 2.40's `cyclictest --help` text, byte for byte: what `--help`
/// prints, and what follows a getopt complaint (on stdout, exit 0). The
/// captured goldens under tests/ are the independent expectation.
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// Everything the options set, with cyclictest's defaults and its own
/// adjustments made after parsing (priority defaults, -S, -h and -d).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclicSettings {
    /// Number of measuring threads.
    pub threads: usize,
    /// `-a`: the CPUs threads are pinned to (round robin); None = not pinned.
    pub affinity: Option<Vec<usize>>,
    /// The affinity came from a CPU list (`-a LIST`), not from `-a`/`-S`
    /// alone: cyclictest then pins its main thread too and, with -v, says so.
    pub affinity_listed: bool,
    /// `-S`: one thread per CPU, each pinned to its own.
    pub smp: bool,
    /// The first thread's priority (`--priospread` steps it down per thread).
    pub priority: i32,
    /// The policy asked for (`-p` makes it fifo), as cyclictest names it.
    pub policy: CyclicPolicy,
    pub priospread: bool,
    pub interval_us: u64,
    /// Added to the interval per thread (0 with -h, as cyclictest).
    pub distance_us: i64,
    /// `-l`: loops per thread; 0 = endless.
    pub loops: u64,
    /// `-D`: stop after this long.
    pub duration: Option<Duration>,
    pub mlockall: bool,
    pub quiet: bool,
    pub nsecs: bool,
    /// `-h`/`-H`: histogram cells (us), 0 = none.
    pub histogram: usize,
    /// `-H`: the histogram gets a summary column.
    pub histofall: bool,
    /// `--histfile`: the histogram goes there instead of stdout.
    pub histfile: Option<String>,
    /// `--json=FILE`.
    pub json: Option<String>,
    /// `-F PATH`: a named pipe handing out the `T:` lines to each reader.
    pub fifo: Option<String>,
    /// `--laptop`: leave `/dev/cpu_dma_latency` alone.
    pub laptop: bool,
    /// `--default-system`: leave `/dev/cpu_dma_latency` alone.
    pub default_system: bool,
    /// `--latency`: the value written to `/dev/cpu_dma_latency`.
    pub latency_target: i32,
    /// `--deepest-idle-state N` (rt-tests 2.8): the idle states deeper
    /// than N (every one for -1) disabled on the CPUs of `-a` (every CPU
    /// without it) while measuring, instead of `/dev/cpu_dma_latency`.
    /// None: not given, or below -1 (cyclictest 2.8 then ignores it).
    pub deepest_idle_state: Option<i32>,
    /// `-b`: stop when a latency exceeds this (figure units), 0 = off.
    pub breaktrace: i64,
    pub tracemark: bool,
    /// `--spike`: record latencies above this, 0 = off.
    pub spike: i64,
    pub spike_nodes: usize,
    pub verbose: bool,
    /// `-o`: oscilloscope reduction (1 = every value).
    pub oscope: u64,
    /// `-M`: redraw only on a new maximum.
    pub refresh_on_max: bool,
    /// `-c`: 0 = CLOCK_MONOTONIC, 1 = CLOCK_REALTIME.
    pub clock: usize,
    /// `-r`: relative timer.
    pub relative: bool,
    /// `-s`: nanosleep.
    pub system: bool,
    /// `-x`: POSIX interval timers.
    pub posix_timers: bool,
    /// `-R`: check the clock resolution before measuring.
    pub resolution: bool,
    pub dbg: bool,
    /// `-A USEC`: aligned wake-ups, thread n offset by n*USEC.
    pub aligned: Option<u64>,
    /// `--secaligned [USEC]`: wake-ups from the next full second (+USEC).
    pub secaligned: Option<u64>,
    /// `--mainaffinity`: the CPUs of the main thread.
    pub main_affinity: Option<Vec<usize>>,
    pub smi: bool,
    /// Lines cyclictest writes on stderr while parsing, in its words.
    pub warnings: Vec<String>,
    /// Lines cyclictest writes on stdout while parsing (-v before -a LIST).
    pub early_lines: Vec<String>,
    /// The command line as typed, for the JSON `cmdline:` key.
    pub cmdline: String,
    /// `--latscope-json FILE` (latscope's, not cyclictest's): the full
    /// latscope Report of the run, checked like every latscope output.
    pub latscope_json: Option<std::path::PathBuf>,
    /// `--latscope-rteval-xml FILE` (latscope's): the run as rteval's
    /// summary.xml (report::rteval_xml), checked like `--latscope-json`.
    pub latscope_rteval_xml: Option<std::path::PathBuf>,
    /// `--on-threshold ACTION`, `--on-end ACTION` (latscope's): acting on
    /// the crossing of `-b`'s break value and at the end.
    pub actions: super::actions::Actions,
}

/// latscope's own option among cyclictest's. Matched only when spelled out
/// in full: getopt's abbreviations stay those of cyclictest's table
/// (`--lat` is still `--latency`).
pub use super::LATSCOPE_JSON;
pub const LATSCOPE_RTEVAL_XML: &str = "latscope-rteval-xml";

/// latscope's own options, each spelled out in full only.
const LATSCOPE_OWN: [Own; 4] = [
    Own {
        name: LATSCOPE_JSON,
        needs: "a file name: --latscope-json FILE",
    },
    Own {
        name: LATSCOPE_RTEVAL_XML,
        needs: "a file name: --latscope-rteval-xml FILE",
    },
    super::actions::GETOPT_OPTIONS[0],
    super::actions::GETOPT_OPTIONS[1],
];

/// cyclictest's `--policy` names (unknown names mean other, as there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CyclicPolicy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl CyclicPolicy {
    pub fn name(self) -> &'static str {
        match self {
            CyclicPolicy::Other => "other",
            CyclicPolicy::Batch => "batch",
            CyclicPolicy::Idle => "idle",
            CyclicPolicy::Fifo => "fifo",
            CyclicPolicy::Rr => "rr",
        }
    }

    pub fn raw(self) -> libc::c_int {
        match self {
            CyclicPolicy::Other => libc::SCHED_OTHER,
            CyclicPolicy::Batch => libc::SCHED_BATCH,
            CyclicPolicy::Idle => libc::SCHED_IDLE,
            CyclicPolicy::Fifo => libc::SCHED_FIFO,
            CyclicPolicy::Rr => libc::SCHED_RR,
        }
    }

    pub fn is_realtime(self) -> bool {
        matches!(self, CyclicPolicy::Fifo | CyclicPolicy::Rr)
    }

    /// cyclictest's `handlepolicy`: case-insensitive prefixes.
    fn parse(name: &str) -> CyclicPolicy {
        let lower = name.to_ascii_lowercase();
        let starts = |p: &str| lower.starts_with(p);
        if starts("other") {
            CyclicPolicy::Other
        } else if starts("batch") {
            CyclicPolicy::Batch
        } else if starts("idle") {
            CyclicPolicy::Idle
        } else if starts("fifo") {
            CyclicPolicy::Fifo
        } else if starts("rr") {
            CyclicPolicy::Rr
        } else {
            CyclicPolicy::Other
        }
    }
}

/// Each option (long name, short letter, argument, its lines in the usage
/// text) in getopt's order, which orders an ambiguous abbreviation's
/// possibilities: rt-tests 2.40's table.
const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "affinity",
        Some('a'),
        Arg::Optional,
        "\
-a [CPUSET] --affinity     Run thread #N on processor #N, if possible, or if CPUSET
                           given, pin threads to that set of processors in round-
                           robin order.  E.g. -a 2 pins all threads to CPU 2,
                           but -a 3-5,0 -t 5 will run the first and fifth
                           threads on CPU (0),thread #2 on CPU 3, thread #3
                           on CPU 4, and thread #5 on CPU 5.
",
    ),
    GetoptOption::new(
        "aligned",
        Some('A'),
        Arg::Optional,
        "\
-A USEC  --aligned=USEC    align thread wakeups to a specific offset
",
    ),
    GetoptOption::new(
        "breaktrace",
        Some('b'),
        Arg::Required,
        "\
-b USEC  --breaktrace=USEC send break trace command when latency > USEC
",
    ),
    GetoptOption::new(
        "clock",
        Some('c'),
        Arg::Required,
        "\
-c CLOCK --clock=CLOCK     select clock
                           0 = CLOCK_MONOTONIC (default)
                           1 = CLOCK_REALTIME
",
    ),
    GetoptOption::new(
        "default-system",
        None,
        Arg::No,
        "         --default-system  Don't attempt to tune the system from cyclictest.
                           Power management is not suppressed.
                           This might give poorer results, but will allow you
                           to discover if you need to tune the system
",
    ),
    GetoptOption::new(
        "distance",
        Some('d'),
        Arg::Required,
        "\
-d DIST  --distance=DIST   distance of thread intervals in us, default=500
",
    ),
    GetoptOption::new(
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D       --duration=TIME   specify a length for the test run.
                           Append 'm', 'h', or 'd' to specify minutes, hours or days.
",
    ),
    GetoptOption::new(
        "latency",
        None,
        Arg::Required,
        "         --latency=PM_QOS  power management latency target value
                           This value is written to /dev/cpu_dma_latency
                           and affects c-states. The default is 0
",
    ),
    GetoptOption::new(
        "fifo",
        Some('F'),
        Arg::Required,
        "\
-F       --fifo=<path>     create a named pipe at path and write stats to it
",
    ),
    GetoptOption::new(
        "histogram",
        Some('h'),
        Arg::Required,
        "\
-h       --histogram=US    dump a latency histogram to stdout after the run
                           US is the max latency time to be tracked in microseconds
\t\t\t   This option runs all threads at the same priority.
",
    ),
    GetoptOption::new(
        "histofall",
        Some('H'),
        Arg::Required,
        "\
-H       --histofall=US    same as -h except with an additional summary column
",
    ),
    GetoptOption::new(
        "histfile",
        None,
        Arg::Required,
        "\
\t --histfile=<path> dump the latency histogram to <path> instead of stdout
",
    ),
    GetoptOption::new(
        "interval",
        Some('i'),
        Arg::Required,
        "\
-i INTV  --interval=INTV   base interval of thread in us default=1000
",
    ),
    GetoptOption::new(
        "json",
        None,
        Arg::Required,
        "         --json=FILENAME   write final results into FILENAME, JSON formatted
",
    ),
    GetoptOption::new(
        "laptop",
        None,
        Arg::No,
        "\
\t --laptop\t   Save battery when running cyclictest
\t\t\t   This will give you poorer realtime results
\t\t\t   but will not drain your battery so quickly
",
    ),
    GetoptOption::new(
        "loops",
        Some('l'),
        Arg::Required,
        "\
-l LOOPS --loops=LOOPS     number of loops: default=0(endless)
",
    ),
    GetoptOption::new(
        "mainaffinity",
        None,
        Arg::Required,
        "         --mainaffinity=CPUSET
\t\t\t   Run the main thread on CPU #N. This only affects
                           the main thread and not the measurement threads
",
    ),
    GetoptOption::new(
        "mlockall",
        Some('m'),
        Arg::No,
        "\
-m       --mlockall        lock current and future memory allocations
",
    ),
    GetoptOption::new(
        "refresh_on_max",
        Some('M'),
        Arg::No,
        "\
-M       --refresh_on_max  delay updating the screen until a new max
\t\t\t   latency is hit. Useful for low bandwidth.
",
    ),
    GetoptOption::new(
        "nsecs",
        Some('N'),
        Arg::No,
        "\
-N       --nsecs           print results in ns instead of us (default us)
",
    ),
    GetoptOption::new(
        "oscope",
        Some('o'),
        Arg::Required,
        "\
-o RED   --oscope=RED      oscilloscope mode, reduce verbose output by RED
",
    ),
    GetoptOption::new(
        "priority",
        Some('p'),
        Arg::Required,
        "\
-p PRIO  --priority=PRIO   priority of highest prio thread
",
    ),
    GetoptOption::new(
        "quiet",
        Some('q'),
        Arg::No,
        "\
-q       --quiet           print a summary only on exit
",
    ),
    GetoptOption::new(
        "priospread",
        None,
        Arg::No,
        "\
\t --priospread      spread priority levels starting at specified value
",
    ),
    GetoptOption::new(
        "relative",
        Some('r'),
        Arg::No,
        "\
-r       --relative        use relative timer instead of absolute
",
    ),
    GetoptOption::new(
        "resolution",
        Some('R'),
        Arg::No,
        "\
-R       --resolution      check clock resolution, calling clock_gettime() many
                           times.  List of clock_gettime() values will be
                           reported with -X
",
    ),
    GetoptOption::new(
        "secaligned",
        None,
        Arg::Optional,
        "         --secaligned [USEC] align thread wakeups to the next full second
                           and apply the optional offset
",
    ),
    GetoptOption::new(
        "system",
        Some('s'),
        Arg::No,
        "\
-s       --system          use sys_nanosleep and sys_setitimer
",
    ),
    GetoptOption::new(
        "smi",
        None,
        Arg::No,
        "         --smi             Enable SMI counting
",
    ),
    GetoptOption::new(
        "smp",
        Some('S'),
        Arg::No,
        "\
-S       --smp             Standard SMP testing: options -a -t and same priority
                           of all threads
",
    ),
    GetoptOption::new(
        "spike",
        None,
        Arg::Required,
        "\
\t--spike=<trigger>  record all spikes > trigger
",
    ),
    GetoptOption::new(
        "spike-nodes",
        None,
        Arg::Required,
        "\
\t--spike-nodes=[num of nodes]
\t\t\t   These are the maximum number of spikes we can record.
\t\t\t   The default is 1024 if not specified
",
    ),
    GetoptOption::new(
        "threads",
        Some('t'),
        Arg::Optional,
        "\
-t       --threads         one thread per available processor
-t [NUM] --threads=NUM     number of threads:
                           without NUM, threads = max_cpus
                           without -t default = 1
",
    ),
    GetoptOption::new(
        "tracemark",
        None,
        Arg::No,
        "         --tracemark       write a trace mark when -b latency is exceeded
",
    ),
    GetoptOption::new(
        "unbuffered",
        Some('u'),
        Arg::No,
        "\
-u       --unbuffered      force unbuffered output for live processing
",
    ),
    GetoptOption::new(
        "verbose",
        Some('v'),
        Arg::No,
        "\
-v       --verbose         output values on stdout for statistics
                           format: n:c:v n=tasknum c=count v=value in us
",
    ),
    GetoptOption::new(
        "dbg_cyclictest",
        None,
        Arg::No,
        "\
\t --dbg_cyclictest  print info useful for debugging cyclictest
",
    ),
    GetoptOption::new(
        "policy",
        None,
        Arg::Required,
        "\
\t --policy=NAME     policy of measurement thread, where NAME may be one
                           of: other, normal, batch, idle, fifo or rr.
",
    ),
    GetoptOption::new("help", None, Arg::No, ""),
    GetoptOption::new(
        "posix_timers",
        Some('x'),
        Arg::No,
        "\
-x\t --posix_timers    use POSIX timers instead of clock_nanosleep.
",
    ),
];

/// The usage text as the tool prints it: its own words, and each option's
/// lines from `OPTIONS` where the tool lists it.
const LAYOUT: &[UsagePart] = &[
    UsagePart::Text(
        "\
cyclictest V 2.40
Usage:
cyclictest <options>

",
    ),
    UsagePart::Option("affinity"),
    UsagePart::Option("aligned"),
    UsagePart::Option("breaktrace"),
    UsagePart::Option("clock"),
    UsagePart::Option("default-system"),
    UsagePart::Option("distance"),
    UsagePart::Option("duration"),
    UsagePart::Option("fifo"),
    UsagePart::Option("histogram"),
    UsagePart::Option("histofall"),
    UsagePart::Option("histfile"),
    UsagePart::Option("interval"),
    UsagePart::Option("json"),
    UsagePart::Option("laptop"),
    UsagePart::Option("latency"),
    UsagePart::Option("loops"),
    UsagePart::Option("mainaffinity"),
    UsagePart::Option("mlockall"),
    UsagePart::Option("refresh_on_max"),
    UsagePart::Option("nsecs"),
    UsagePart::Option("oscope"),
    UsagePart::Option("priority"),
    UsagePart::Option("policy"),
    UsagePart::Option("priospread"),
    UsagePart::Option("quiet"),
    UsagePart::Option("relative"),
    UsagePart::Option("resolution"),
    UsagePart::Option("secaligned"),
    UsagePart::Option("system"),
    UsagePart::Option("smp"),
    UsagePart::Option("spike"),
    UsagePart::Option("spike-nodes"),
    UsagePart::Option("smi"),
    UsagePart::Option("threads"),
    UsagePart::Option("tracemark"),
    UsagePart::Option("unbuffered"),
    UsagePart::Option("verbose"),
    UsagePart::Option("dbg_cyclictest"),
    UsagePart::Option("posix_timers"),
];

/// What rt-tests 2.8 added to the table: found by abbreviations 2.40 did
/// not know (`--de` is still `--default-system`, ambiguous in 2.8).
const LATER: &[GetoptOption] = &[GetoptOption::new(
    "deepest-idle-state",
    None,
    Arg::Required,
    "",
)];

const TABLE: Table<'static> = Table {
    options: OPTIONS,
    later: LATER,
};

/// Splits raw arguments into (option name, value) pairs, GNU style: the
/// options before getopt's first complaint, and that complaint. cyclictest
/// acts on each option as getopt returns it, so an option before the bad
/// word can still end the run its own way (`-a -1`: libnuma's warning).
type Tokens = (Vec<(&'static str, Option<String>)>, Option<GetoptUsage>);

fn tokenize(args: &[String]) -> Tokens {
    let mut seen = Vec::new();
    let error = getopt_table_into(&TABLE, &LATSCOPE_OWN, args, cyclictest_peek, &mut seen).err();
    (seen, error)
}

/// cyclictest's hand-made optional argument: it peeks at the next word and
/// uses it when `atoi` gives a number other than 0 (for `-a` also a word
/// starting with `0`, `!` or `a`, as in `all`). It does not move getopt on:
/// the word is then parsed as any other, so a value (`4`) is a skipped
/// non-option word and `-1` is an option again (`invalid option -- '1'`).
fn cyclictest_peek(option: &str, next: &str) -> bool {
    let cpu_list = option == "affinity" && next.starts_with(['0', '!', 'a']);
    atoi(next) != 0 || cpu_list
}

/// rt-tests' HIST_MAX: larger `-h` values are cut to it.
const HIST_MAX: usize = 1_000_000;

/// What cyclictest keeps aside while it reads its options, settled after
/// them all (its num_threads, distance, oscope, histogram, clock, priority).
struct Pending {
    /// -1 = one per CPU, decided after parsing.
    num_threads: i64,
    /// -1 = not given.
    distance: i64,
    oscope: i64,
    histogram: i64,
    clock: i64,
    priority: i64,
    /// `-a` was given (ignored with -S, which warns then).
    option_affinity: bool,
    latscope_json: Option<String>,
    latscope_rteval_xml: Option<String>,
    /// `--on-threshold`, `--on-end` as given, in order.
    actions: Vec<(&'static str, Option<String>)>,
    /// The last `-i` (its value and the word): only the value that counts
    /// is checked, as cyclictest lets the last `-i` win.
    interval: Option<(i64, String)>,
}

impl CyclicSettings {
    /// Parses cyclictest's arguments (without the program name). `online` is
    /// the CPUs this process may run on: `-t` without a number, `-a` without a
    /// list and `-S` use it. `smi_supported` is the processor check `--smi`
    /// needs (rt::sysinfo::has_smi_counter).
    pub fn parse(
        args: &[String],
        online: &[usize],
        smi_supported: bool,
    ) -> Result<CyclicSettings, GetoptUsage> {
        let mut s = CyclicSettings::defaults(args);
        let mut p = Pending {
            num_threads: 1,
            distance: -1,
            oscope: 1,
            histogram: 0,
            clock: 0,
            priority: 0,
            option_affinity: false,
            latscope_json: None,
            latscope_rteval_xml: None,
            actions: Vec::new(),
            interval: None,
        };
        let (tokens, getopt_error) = tokenize(args);
        for (name, value) in tokens {
            s.apply(name, value, online, &mut p)?;
        }
        if let Some(e) = getopt_error {
            return Err(e);
        }
        let latscope_json = p.latscope_json.take();
        let latscope_rteval_xml = p.latscope_rteval_xml.take();
        let actions = std::mem::take(&mut p.actions);
        s.settle(p, online, smi_supported)?;
        s.actions = super::actions::from_getopt(
            actions.iter().map(|(n, v)| (*n, v.as_deref())),
            u64::try_from(s.breaktrace).ok().filter(|&us| us > 0),
            "-b",
        )
        .map_err(|e| GetoptUsage::Bad(e.0))?;
        // Last: cyclictest's own errors come first, and the probe file of
        // the check is only made for a command line that will run.
        for (name, path) in [
            (LATSCOPE_JSON, latscope_json),
            (LATSCOPE_RTEVAL_XML, latscope_rteval_xml),
        ] {
            let Some(path) = path else { continue };
            let checked = super::check_latscope_output(name, &path, "cyclictest")?;
            // cyclictest's own files are written before the report: one of
            // them under the same name would be replaced by it.
            let file = |p: &Option<String>| {
                p.as_ref()
                    .map(|p| super::OutputTarget::File(std::path::PathBuf::from(p)))
            };
            let report = super::OutputTarget::File(checked.clone());
            // Pair by pair: --json and --histfile on one file is
            // cyclictest's business.
            let option = format!("--{name}");
            let earlier = s.latscope_json.clone().map(super::OutputTarget::File);
            for (other, target) in [
                ("--json", file(&s.json)),
                ("--histfile", file(&s.histfile)),
                ("--latscope-json", earlier),
            ] {
                super::check_distinct_outputs(&[
                    (other, target.as_ref()),
                    (&option, Some(&report)),
                ])
                .map_err(|e| GetoptUsage::Bad(e.0))?;
            }
            match name {
                LATSCOPE_JSON => s.latscope_json = Some(checked),
                _ => s.latscope_rteval_xml = Some(checked),
            }
        }
        // A trace action's file is an output too: no file of cyclictest's
        // (nor the report) may replace the trace it saved.
        let file = |p: Option<&str>| p.map(|p| super::OutputTarget::File(p.into()));
        let (json, histfile) = (file(s.json.as_deref()), file(s.histfile.as_deref()));
        let report = s.latscope_json.clone().map(super::OutputTarget::File);
        let rteval = s.latscope_rteval_xml.clone().map(super::OutputTarget::File);
        s.actions
            .check_apart_from(&[
                ("--json", json.as_ref()),
                ("--histfile", histfile.as_ref()),
                ("--latscope-json", report.as_ref()),
                ("--latscope-rteval-xml", rteval.as_ref()),
            ])
            .map_err(|e| GetoptUsage::Bad(e.0))?;
        Ok(s)
    }

    /// latscope's own options ask for latscope's pipeline (the Report, the
    /// actions' runner): the full binary runs them.
    pub fn needs_pipeline(&self) -> bool {
        self.latscope_json.is_some()
            || self.latscope_rteval_xml.is_some()
            || !self.actions.is_empty()
    }

    /// cyclictest's defaults, before any option.
    fn defaults(args: &[String]) -> CyclicSettings {
        CyclicSettings {
            threads: 1,
            affinity: None,
            affinity_listed: false,
            smp: false,
            priority: 0,
            policy: CyclicPolicy::Other,
            priospread: false,
            interval_us: 1000,
            distance_us: 500,
            loops: 0,
            duration: None,
            mlockall: false,
            quiet: false,
            nsecs: false,
            histogram: 0,
            histofall: false,
            histfile: None,
            json: None,
            fifo: None,
            laptop: false,
            default_system: false,
            latency_target: 0,
            deepest_idle_state: None,
            breaktrace: 0,
            tracemark: false,
            spike: 0,
            spike_nodes: 1024,
            verbose: false,
            oscope: 1,
            refresh_on_max: false,
            clock: 0,
            relative: false,
            system: false,
            posix_timers: false,
            resolution: false,
            dbg: false,
            aligned: None,
            secaligned: None,
            main_affinity: None,
            smi: false,
            warnings: Vec::new(),
            early_lines: Vec::new(),
            cmdline: std::iter::once("cyclictest".to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
            latscope_json: None,
            latscope_rteval_xml: None,
            actions: Default::default(),
        }
    }

    /// One option as getopt returned it, as cyclictest acts on it then.
    fn apply(
        &mut self,
        name: &str,
        value: Option<String>,
        online: &[usize],
        p: &mut Pending,
    ) -> Result<(), GetoptUsage> {
        let v = value.as_deref().unwrap_or_default();
        let n = atoi(v);
        match name {
            "affinity" => self.apply_affinity(value, online, p)?,
            "aligned" => self.aligned = Some(n.max(0) as u64),
            "breaktrace" => self.breaktrace = n,
            "clock" => p.clock = n,
            "default-system" => self.default_system = true,
            "distance" => p.distance = n,
            "duration" => self.duration = parse_duration(v),
            "latency" => self.latency_target = n.clamp(0, i64::from(i32::MAX)) as i32,
            // 2.8 keeps the last value and acts on it when it is -1 or more.
            "deepest-idle-state" => {
                self.deepest_idle_state = (n >= -1).then_some(n as i32);
            }
            "fifo" => self.fifo = value,
            "histogram" | "histofall" => {
                self.histofall |= name == "histofall";
                p.histogram = n;
                if p.histogram == 0 {
                    return Err(GetoptUsage::Invalid(Vec::new()));
                }
            }
            "histfile" => self.histfile = value,
            "interval" => p.interval = Some((n, v.to_string())),
            // rt-tests writes no JSON for an empty name (`--json=`).
            "json" => self.json = value.filter(|f| !f.is_empty()),
            "laptop" => self.laptop = true,
            "loops" => self.loops = n.max(0) as u64,
            // cyclictest warns (libnuma's line) and leaves the main
            // thread where it is when the list does not parse.
            "mainaffinity" => match numa_parse_cpustring(v, online) {
                Ok(cpus) if !cpus.is_empty() => self.main_affinity = Some(cpus),
                Ok(_) | Err(None) => self.main_affinity = None,
                Err(Some(line)) => {
                    self.main_affinity = None;
                    self.warnings.push(line);
                }
            },
            "mlockall" => self.mlockall = true,
            "refresh_on_max" => self.refresh_on_max = true,
            "nsecs" => self.nsecs = true,
            "oscope" => p.oscope = n,
            "priority" => {
                p.priority = n;
                if !self.policy.is_realtime() {
                    self.policy = CyclicPolicy::Fifo;
                }
            }
            "quiet" => self.quiet = true,
            "priospread" => self.priospread = true,
            "relative" => self.relative = true,
            "resolution" => self.resolution = true,
            "secaligned" => self.secaligned = Some(n.max(0) as u64),
            "system" => self.system = true,
            "smi" => self.smi = true,
            "smp" => {
                self.smp = true;
                p.num_threads = -1;
            }
            "spike" => self.spike = n,
            "spike-nodes" => {
                if self.spike != 0 {
                    self.spike_nodes = n.max(0) as usize;
                }
            }
            "threads" => {
                if self.smp {
                    self.warnings
                        .push("WARN: -t ignored due to smp mode".into());
                    return Ok(());
                }
                p.num_threads = match &value {
                    Some(_) if n != 0 => n,
                    _ => -1,
                };
            }
            "tracemark" => self.tracemark = true,
            // Output is written whole lines at a time already.
            "unbuffered" => {}
            "verbose" => self.verbose = true,
            "dbg_cyclictest" => self.dbg = true,
            "policy" => self.policy = CyclicPolicy::parse(v),
            "help" => return Err(GetoptUsage::Help),
            "posix_timers" => self.posix_timers = true,
            LATSCOPE_JSON => p.latscope_json = value,
            LATSCOPE_RTEVAL_XML => p.latscope_rteval_xml = value,
            own if super::actions::is_getopt_option(own) => {
                if let Some(own) = LATSCOPE_OWN.iter().find(|o| o.name == own) {
                    p.actions.push((own.name, value));
                }
            }
            _ => unreachable!("every option of OPTIONS is handled"),
        }
        Ok(())
    }

    /// `-a [LIST]`: the CPUs the threads are pinned to (ignored with -S).
    fn apply_affinity(
        &mut self,
        value: Option<String>,
        online: &[usize],
        p: &mut Pending,
    ) -> Result<(), GetoptUsage> {
        p.option_affinity = true;
        if self.smp {
            return Ok(());
        }
        self.affinity_listed = value.is_some();
        self.affinity = Some(match &value {
            Some(list) => match numa_parse_cpustring(list, online) {
                Ok(cpus) if !cpus.is_empty() => {
                    if self.verbose {
                        // cyclictest says it while parsing, and
                        // again when it starts.
                        self.early_lines.push(format!("Using {} cpus.", cpus.len()));
                    }
                    cpus
                }
                // cyclictest: a CPU set given but empty or
                // unparseable -> libnuma's warning, then usage.
                Ok(_) | Err(None) => return Err(GetoptUsage::Invalid(Vec::new())),
                Err(Some(line)) => return Err(GetoptUsage::Invalid(vec![line])),
            },
            None => online.to_vec(),
        });
        Ok(())
    }

    /// The timer and CPU modes' own rules: -s over -x, -S over -a, what
    /// --smi needs.
    fn settle_modes(
        &mut self,
        option_affinity: bool,
        online: &[usize],
        smi_supported: bool,
    ) -> Result<(), GetoptUsage> {
        if self.system && self.posix_timers {
            self.warnings.extend([
                "WARN: The system option requires clock_nanosleep".to_string(),
                "WARN: and is not compatible with posix_timers".to_string(),
                "WARN: Using clock_nanosleep".to_string(),
            ]);
            self.posix_timers = false;
        }
        if option_affinity && self.smp {
            self.warnings
                .push("WARN: -a ignored due to smp mode".into());
        }
        if self.smp {
            // -S: -a -t (one thread per CPU, each on its own), same priority.
            self.affinity = Some(online.to_vec());
        }
        if self.smi {
            if !smi_supported {
                return Err(GetoptUsage::Fatal(
                    "SMI counter is not supported on this processor".into(),
                ));
            }
            if self.affinity.is_none() {
                return Err(GetoptUsage::Fatal(
                    "SMI counter relies on thread affinity".into(),
                ));
            }
        }
        Ok(())
    }

    /// cyclictest's adjustments and checks once every option is read.
    fn settle(
        &mut self,
        mut p: Pending,
        online: &[usize],
        smi_supported: bool,
    ) -> Result<(), GetoptUsage> {
        let all = online.len().max(1);
        if let Some((n, v)) = p.interval.take() {
            if n <= 0 {
                return Err(GetoptUsage::Bad(format!(
                    "invalid interval for -i: '{v}' (cyclictest would spin without sleeping)"
                )));
            }
            self.interval_us = n as u64;
        }
        let mut error = false;
        self.settle_modes(p.option_affinity, online, smi_supported)?;
        // cyclictest accepts -c 2 (its bound check is off by one) and then
        // reads past its clock table; latscope refuses it with the rest.
        if !(0..=1).contains(&p.clock) {
            error = true;
        }
        self.clock = p.clock as usize;
        let mut warnings_before_usage = Vec::new();
        if p.oscope < 1 {
            error = true;
        }
        if p.oscope > 1 && !self.verbose {
            warnings_before_usage.push("WARN: -o option only meaningful, if verbose".to_string());
            error = true;
        }
        self.oscope = p.oscope.max(1) as u64;
        if p.histogram < 0 {
            error = true;
        }
        self.histogram = (p.histogram.max(0) as usize).min(HIST_MAX);
        if self.histogram > 0 && p.distance != -1 {
            self.warnings
                .push("WARN: distance is ignored and set to 0, if histogram enabled".into());
        }
        if p.distance == -1 {
            p.distance = 500;
        }
        // With a histogram every thread has the same interval.
        self.distance_us = if self.histogram > 0 { 0 } else { p.distance };
        if !(0..=99).contains(&p.priority) {
            error = true;
        }
        if p.num_threads == -1 {
            p.num_threads = match &self.affinity {
                Some(cpus) if !self.smp => cpus.len() as i64,
                _ => all as i64,
            };
        }
        if self.priospread && p.priority == 0 {
            self.warnings.push(format!(
                "defaulting realtime priority to {}",
                p.num_threads + 1
            ));
            p.priority = p.num_threads + 1;
        }
        if p.priority != 0 && !self.policy.is_realtime() {
            self.warnings
                .push("policy and priority don't match: setting policy to SCHED_FIFO".to_string());
            self.policy = CyclicPolicy::Fifo;
        }
        if self.policy.is_realtime() && p.priority == 0 {
            self.warnings.push(format!(
                "defaulting realtime priority to {}",
                p.num_threads + 1
            ));
            p.priority = p.num_threads + 1;
        }
        if p.num_threads < 1 {
            error = true;
        }
        if self.aligned.is_some() && self.secaligned.is_some() {
            error = true;
        }
        if error {
            let mut lines = self.warnings.clone();
            lines.extend(warnings_before_usage);
            return Err(GetoptUsage::Invalid(lines));
        }
        if p.num_threads > 4096 {
            return Err(GetoptUsage::Bad(format!(
                "invalid number of threads: {} (at most 4096)",
                p.num_threads
            )));
        }
        self.threads = p.num_threads as usize;
        self.priority = p.priority.clamp(0, 99) as i32;
        for i in 0..self.threads {
            if self.interval_of(i) <= 0 {
                return Err(GetoptUsage::Bad(format!(
                    "thread {i} would have an interval of {} us (-i {} -d {})",
                    self.interval_of(i),
                    self.interval_us,
                    self.distance_us
                )));
            }
        }
        Ok(())
    }

    /// Thread `i`'s interval: `-i + i * -d`, in us (the same for every
    /// thread with -h).
    pub fn interval_of(&self, i: usize) -> i64 {
        self.interval_us as i64 + i as i64 * self.distance_us
    }

    /// Thread `i`'s priority: `--priospread` steps it down per thread.
    pub fn priority_of(&self, i: usize) -> i32 {
        if self.priospread {
            self.priority - i as i32
        } else {
            self.priority
        }
    }

    /// Thread `i`'s policy: cyclictest runs a thread at priority 0 (or
    /// without a real-time policy) as SCHED_OTHER.
    pub fn policy_of(&self, i: usize) -> CyclicPolicy {
        if self.priority_of(i) > 0 && self.policy.is_realtime() {
            self.policy
        } else {
            CyclicPolicy::Other
        }
    }

    /// Thread `i`'s CPU in the JSON: its own when pinned, otherwise
    /// cyclictest's default assignment (thread i on CPU i modulo the CPUs).
    pub fn json_cpu_of(&self, i: usize, online: &[usize]) -> usize {
        self.cpu_of(i)
            .unwrap_or_else(|| online.get(i % online.len().max(1)).copied().unwrap_or(0))
    }

    /// The CPUs of `-a LIST` (not of `-a` alone or `-S`).
    pub fn listed_affinity(&self) -> Option<&[usize]> {
        self.affinity
            .as_deref()
            .filter(|_| self.affinity_listed && !self.smp)
    }

    /// Thread `i`'s CPU, when pinned.
    pub fn cpu_of(&self, i: usize) -> Option<usize> {
        let cpus = self.affinity.as_ref()?;
        Some(cpus[i % cpus.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_usage_layout_prints_every_listed_option_once() {
        assert_eq!(
            super::super::getopt::check_usage_layout(OPTIONS, LAYOUT),
            Vec::<String>::new()
        );
    }

    fn parse(words: &[&str]) -> Result<CyclicSettings, GetoptUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        CyclicSettings::parse(&args, &[0, 1], false)
    }

    #[test]
    fn defaults_are_cyclictests() {
        let s = parse(&[]).unwrap();
        assert_eq!(
            (s.threads, s.interval_us, s.distance_us, s.priority),
            (1, 1000, 500, 0)
        );
        assert_eq!((s.loops, s.histogram, s.quiet), (0, 0, false));
        assert_eq!(s.cmdline, "cyclictest");
    }

    #[test]
    fn deepest_idle_state_as_cyclictest_2_8_reads_it() {
        let deepest = |w: &[&str]| parse(w).unwrap().deepest_idle_state;
        assert_eq!(deepest(&[]), None);
        assert_eq!(deepest(&["--deepest-idle-state", "1"]), Some(1));
        assert_eq!(deepest(&["--deepest-idle-state=-1"]), Some(-1));
        // atoi: junk is 0; below -1 is no limit; the last one counts.
        assert_eq!(deepest(&["--deepest-idle-state", "x"]), Some(0));
        assert_eq!(deepest(&["--deepest-idle-state", "-2"]), None);
        assert_eq!(
            deepest(&["--deepest-idle-state", "2", "--deepest-idle-state", "-5"]),
            None
        );
        // An abbreviation 2.40 did not know.
        assert_eq!(deepest(&["--deep", "3"]), Some(3));
        // 2.40's abbreviation keeps its meaning.
        let s = parse(&["--de"]).unwrap();
        assert!(s.default_system && s.deepest_idle_state.is_none());
        assert!(matches!(
            parse(&["--deepest-idle-state"]),
            Err(GetoptUsage::Getopt(m)) if m == "option '--deepest-idle-state' requires an argument"
        ));
    }

    #[test]
    fn clusters_and_attached_values() {
        let s = parse(&["-qmSp90", "-l50"]).unwrap();
        assert!(s.quiet && s.mlockall && s.smp);
        assert_eq!((s.priority, s.loops, s.threads), (90, 50, 2));
        assert_eq!(s.affinity, Some(vec![0, 1]));
    }

    #[test]
    fn optional_thread_count() {
        assert_eq!(parse(&["-t"]).unwrap().threads, 2);
        assert_eq!(parse(&["-t4"]).unwrap().threads, 4);
        assert_eq!(parse(&["-t", "3"]).unwrap().threads, 3);
        assert_eq!(parse(&["-t", "-q"]).unwrap().threads, 2);
        assert_eq!(parse(&["--threads=5"]).unwrap().threads, 5);
    }

    #[test]
    fn affinity_lists() {
        assert_eq!(parse(&["-a"]).unwrap().affinity, Some(vec![0, 1]));
        assert_eq!(parse(&["-a", "1"]).unwrap().affinity, Some(vec![1]));
        assert_eq!(parse(&["-a", "!0"]).unwrap().affinity, Some(vec![1]));
        assert_eq!(parse(&["-a0-1"]).unwrap().affinity, Some(vec![0, 1]));
    }

    /// latscope's option in both GNU forms, only when spelled in full, its
    /// path checked after cyclictest's own errors.
    #[test]
    fn latscope_json_option() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        let path = file.to_str().unwrap();
        let joined = format!("--latscope-json={path}");
        for words in [
            vec!["--latscope-json", path, "-q"],
            vec![joined.as_str(), "-q"],
        ] {
            let s = parse(&words).unwrap();
            assert_eq!(s.latscope_json.as_deref(), Some(file.as_path()));
            assert!(s.quiet, "the word after the value is an option again");
        }
        assert_eq!(parse(&["--lat", "5"]).unwrap().latency_target, 5);
        assert!(matches!(
            parse(&["--latscope-js", path]),
            Err(GetoptUsage::Getopt(m)) if m.contains("unrecognized option")
        ));
        assert!(matches!(
            parse(&["--latscope-json", "-"]),
            Err(GetoptUsage::Bad(_))
        ));
        assert!(matches!(
            parse(&["--latscope-json"]),
            Err(GetoptUsage::Bad(_))
        ));
        // cyclictest's own refusal comes first.
        assert!(matches!(
            parse(&["-c", "7", "--latscope-json", "-"]),
            Err(GetoptUsage::Invalid(_))
        ));
        let same = format!("--json={path}");
        assert!(matches!(
            parse(&[same.as_str(), "--latscope-json", path]),
            Err(GetoptUsage::Bad(m)) if m.contains("same file")
        ));
        assert!(!file.exists(), "checking the path leaves nothing behind");
    }

    #[test]
    fn long_options_and_prefixes() {
        let s = parse(&[
            "--interval",
            "200",
            "--dist=10",
            "--json=/tmp/x",
            "--histog",
            "30",
        ])
        .unwrap();
        // -h makes every interval the same (the distance is set to 0).
        assert_eq!((s.interval_us, s.distance_us, s.histogram), (200, 0, 30));
        assert_eq!(s.json.as_deref(), Some("/tmp/x"));
        assert_eq!(s.interval_of(2), 200);
        assert_eq!(
            s.warnings,
            vec!["WARN: distance is ignored and set to 0, if histogram enabled"]
        );
        let s = parse(&["--interval", "200", "--dist=10"]).unwrap();
        assert_eq!(s.interval_of(2), 220);
        assert_eq!(
            parse(&["--hist", "30"]),
            Err(GetoptUsage::Getopt(
                "option '--hist' is ambiguous; possibilities: '--histogram' '--histofall' '--histfile'"
                    .into()
            ))
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86400)));
        // parse_time_string: an unknown suffix is ignored, no number = none.
        assert_eq!(parse_duration("1x"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("0"), None);
    }

    #[test]
    fn cyclictests_own_adjustments() {
        // -t 0: atoi gives 0, so one thread per CPU (the word is skipped).
        assert_eq!(parse(&["-t", "0"]).unwrap().threads, 2);
        let s = parse(&["--policy=fifo"]).unwrap();
        assert_eq!((s.priority, s.policy), (2, CyclicPolicy::Fifo));
        assert_eq!(s.warnings, vec!["defaulting realtime priority to 2"]);
        let s = parse(&["-t3", "--priospread", "-p", "5"]).unwrap();
        assert_eq!(
            (0..3).map(|i| s.priority_of(i)).collect::<Vec<_>>(),
            vec![5, 4, 3]
        );
        let s = parse(&["-S", "-t", "2"]).unwrap();
        assert_eq!(s.warnings, vec!["WARN: -t ignored due to smp mode"]);
        assert_eq!(s.policy_of(0), CyclicPolicy::Other);
        assert_eq!(parse(&["-p", "100"]), Err(GetoptUsage::Invalid(vec![])));
        assert_eq!(parse(&["-h", "0"]), Err(GetoptUsage::Invalid(vec![])));
        assert_eq!(parse(&["-c", "5"]), Err(GetoptUsage::Invalid(vec![])));
        assert_eq!(
            parse(&["-o", "2"]),
            Err(GetoptUsage::Invalid(vec![
                "WARN: -o option only meaningful, if verbose".into()
            ]))
        );
        assert_eq!(
            parse(&["-A", "--secaligned"]),
            Err(GetoptUsage::Invalid(vec![]))
        );
        assert_eq!(
            parse(&["--smi"]),
            Err(GetoptUsage::Fatal(
                "SMI counter is not supported on this processor".into()
            ))
        );
        assert_eq!(parse(&["-l", "-5"]).unwrap().loops, 0);
        // -p 0 asks for SCHED_FIFO, whose default is threads + 1.
        let s = parse(&["-p", "0"]).unwrap();
        assert_eq!((s.priority, s.policy), (2, CyclicPolicy::Fifo));
    }

    #[test]
    fn bad_input() {
        assert_eq!(
            parse(&["-Z"]),
            Err(GetoptUsage::Getopt("invalid option -- 'Z'".into()))
        );
        assert_eq!(
            parse(&["-p"]),
            Err(GetoptUsage::Getopt(
                "option requires an argument -- 'p'".into()
            ))
        );
        assert_eq!(parse(&["-b", "100"]).unwrap().breaktrace, 100);
        assert!(matches!(parse(&["-i", "x"]), Err(GetoptUsage::Bad(_))));
        assert!(matches!(parse(&["--bogus"]), Err(GetoptUsage::Getopt(_))));
        assert_eq!(parse(&["-q", "--help"]), Err(GetoptUsage::Help));
    }

    /// `-a LIST` that libnuma refuses: its warning, then the usage (exit 1);
    /// `--mainaffinity LIST`: the warning, and the run goes on unpinned.
    #[test]
    fn affinity_refusals_are_libnumas() {
        let warning = |m: &str| format!("libnuma: Warning: {m}\n");
        assert_eq!(
            parse(&["-a", "abc"]),
            Err(GetoptUsage::Invalid(vec![warning(
                "unparseable cpu description `abc'"
            )]))
        );
        assert_eq!(
            parse(&["-a99"]),
            Err(GetoptUsage::Invalid(vec![warning(
                "cpu argument 99 is out of range"
            )]))
        );
        assert_eq!(
            parse(&["-a", "-1"]),
            Err(GetoptUsage::Invalid(vec![warning(
                "cpu argument -1 is out of range"
            )]))
        );
        assert_eq!(parse(&["-a", "1a"]), Err(GetoptUsage::Invalid(vec![])));
        // A word after -a is its list only when it looks like one.
        assert_eq!(parse(&["-a", "x1"]).unwrap().affinity, Some(vec![0, 1]));
        assert_eq!(parse(&["-a", "all"]).unwrap().affinity, Some(vec![0, 1]));
        let s = parse(&["--mainaffinity=99"]).unwrap();
        assert_eq!(s.main_affinity, None);
        assert_eq!(s.warnings, vec![warning("cpu argument 99 is out of range")]);
        let s = parse(&["--mainaffinity=abc"]).unwrap();
        assert_eq!(
            s.warnings,
            vec![warning("unparseable cpu description `abc'")]
        );
        assert_eq!(
            parse(&["--mainaffinity=1"]).unwrap().main_affinity,
            Some(vec![1])
        );
    }

    /// An optional value is peeked at, not consumed: getopt then reads the
    /// word itself, so `-t -1` is `invalid option -- '1'` as in cyclictest.
    #[test]
    fn optional_values_do_not_move_getopt_on() {
        assert_eq!(
            parse(&["-q", "-t", "-1"]),
            Err(GetoptUsage::Getopt("invalid option -- '1'".into()))
        );
        assert_eq!(
            parse(&["--secaligned", "-1"]),
            Err(GetoptUsage::Getopt("invalid option -- '1'".into()))
        );
        let s = parse(&["-t", "3", "-q"]).unwrap();
        assert_eq!((s.threads, s.quiet), (3, true));
    }

    /// `--json=` (an empty name): rt-tests writes no JSON at all.
    #[test]
    fn empty_json_name_writes_none() {
        assert_eq!(parse(&["--json="]).unwrap().json, None);
        assert_eq!(parse(&["--json=f"]).unwrap().json.as_deref(), Some("f"));
    }

    proptest! {
        /// Clustering is the same as separate letters, and attached values
        /// are the same as the next word. (`-p 0` is cyclictest's "default
        /// real-time priority", checked in `cyclictests_own_adjustments`.)
        #[test]
        fn clustering_is_equivalent(q in any::<bool>(), m in any::<bool>(), n in any::<bool>(),
                                    p in 1i32..100, l in 1u64..1_000_000) {
            let mut letters = String::new();
            let mut separate: Vec<String> = Vec::new();
            for (on, c) in [(q, 'q'), (m, 'm'), (n, 'N')] {
                if on { letters.push(c); separate.push(format!("-{c}")); }
            }
            let clustered = vec![format!("-{letters}p{p}"), "-l".into(), l.to_string()];
            separate.extend(["-p".to_string(), p.to_string(), format!("-l{l}")]);
            let a = CyclicSettings::parse(&clustered, &[0, 1], false).unwrap();
            let b = CyclicSettings::parse(&separate, &[0, 1], false).unwrap();
            prop_assert_eq!((a.quiet, a.mlockall, a.nsecs, a.priority, a.loops),
                            (b.quiet, b.mlockall, b.nsecs, b.priority, b.loops));
            prop_assert_eq!((a.quiet, a.mlockall, a.nsecs, a.priority, a.loops), (q, m, n, p, l));
        }

        /// Any word list parses or fails cleanly, never panics.
        #[test]
        fn never_panics(words in proptest::collection::vec("[-a-zA-Z0-9=!]{0,6}", 0..6)) {
            let _ = CyclicSettings::parse(&words, &[0, 1], false);
        }
    }
}
