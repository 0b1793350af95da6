//! `latscope oslat` / the `oslat` compat name: rt-tests 2.40 oslat's
//! command line, parsed the way it parses it (GNU getopt_long: the parser
//! of settings::getopt with oslat's table), its values read as it reads
//! them (`strtol`, `parse_time_string`, `parse_mem_string`) and refused with
//! its own lines and exit codes; plus `-W/--bucket-width`, the one option
//! rt-tests 2.5 to 2.8 added, read as 2.8 reads it (docs/compat.md).

use super::getopt::{
    Arg, GetoptOption, GetoptUsage, Table, UsagePart, atoi, getopt_long, numa_parse_cpustring,
    parse_duration, render_usage,
};
use crate::report::OslatScale;
use crate::settings::noise::{CpusFrom, apart_from_main_core, check_realtime_safety};
use std::path::PathBuf;
use std::sync::LazyLock;

/// rt-tests 2.40's `oslat --help`, byte for byte (its version line, then
/// the usage). The captured goldens under tests/ are the independent
/// expectation.
pub static HELP: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// oslat's default number of buckets.
pub const BUCKET_SIZE: usize = 32;
/// oslat's default workload memory: 16 KiB per buffer.
pub const WORKLOAD_MEM: u64 = 16 << 10;

/// Each option (long name, short letter, argument, its lines in the usage
/// text) in getopt's order, which orders an ambiguous abbreviation's
/// possibilities: rt-tests 2.40 oslat's table
/// (`b:Bc:C:D:f:hm:qsw:T:vz`).
const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "bucket-size",
        Some('b'),
        Arg::Required,
        "\
-b, --bucket-size      Specify the number of the buckets (4-1024)
",
    ),
    GetoptOption::new(
        "cpu-list",
        Some('c'),
        Arg::Required,
        "\
-c, --cpu-list         Specify CPUs to run on, e.g. '1,3,5,7-15'
",
    ),
    GetoptOption::new(
        "cpu-main-thread",
        Some('C'),
        Arg::Required,
        "\
-C, --cpu-main-thread  Specify which CPU the main thread runs on.  Default is cpu0.
",
    ),
    GetoptOption::new(
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D, --duration         Specify test duration, e.g., 60, 20m, 2H
                       (m/M: minutes, h/H: hours, d/D: days)
",
    ),
    GetoptOption::new(
        "json",
        None,
        Arg::Required,
        "    --json=FILENAME    write final results into FILENAME, JSON formatted
",
    ),
    GetoptOption::new(
        "rtprio",
        Some('f'),
        Arg::Required,
        "\
-f, --rtprio           Using SCHED_FIFO priority (1-99)
",
    ),
    GetoptOption::new("help", Some('h'), Arg::No, ""),
    GetoptOption::new(
        "trace-threshold",
        Some('T'),
        Arg::Required,
        "\
-T, --trace-threshold  Stop the test when threshold triggered (in us),
                       print a marker in ftrace and stop ftrace too.
",
    ),
    GetoptOption::new(
        "workload",
        Some('w'),
        Arg::Required,
        "\
-w, --workload         Specify a kind of workload, default is no workload
                       (options: no, memmove)
",
    ),
    GetoptOption::new(
        "workload-mem",
        Some('m'),
        Arg::Required,
        "\
-m, --workload-mem     Size of the memory to use for the workload (e.g., 4K, 1M).
                       Total memory usage will be this value multiplies 2*N,
                       because there will be src/dst buffers for each thread, and
                       N is the number of processors for testing.
",
    ),
    GetoptOption::new(
        "bias",
        Some('B'),
        Arg::No,
        "\
-B, --bias             Add a bias to all the buckets using the estimated mininum
",
    ),
    GetoptOption::new(
        "quiet",
        Some('q'),
        Arg::No,
        "\
-q  --quiet            print a summary only on exit
",
    ),
    GetoptOption::new(
        "single-preheat",
        Some('s'),
        Arg::No,
        "\
-s, --single-preheat   Use a single thread when measuring latency at preheat stage
                       NOTE: please make sure the CPU frequency on all testing cores
                       are locked before using this parmater.  If you don't know how
                       to lock the freq then please don't use this parameter.
",
    ),
    GetoptOption::new(
        "zero-omit",
        Some('z'),
        Arg::No,
        "\
-z, --zero-omit        Don't display buckets in the output histogram if all zeros.
",
    ),
    GetoptOption::new(
        "version",
        Some('v'),
        Arg::No,
        "\
-v, --version          Display the version of the software.
",
    ),
];

/// The usage text as the tool prints it: its own words, and each option's
/// lines from `OPTIONS` where the tool lists it.
const LAYOUT: &[UsagePart] = &[
    UsagePart::Text(
        "\
oslat V 2.40
Usage:
oslat <options>

This is an OS latency detector by running busy loops on specified cores.
Please run this tool using root.

Available options:

",
    ),
    UsagePart::Option("bucket-size"),
    UsagePart::Option("bias"),
    UsagePart::Option("cpu-list"),
    UsagePart::Option("cpu-main-thread"),
    UsagePart::Option("duration"),
    UsagePart::Option("json"),
    UsagePart::Option("rtprio"),
    UsagePart::Option("workload-mem"),
    UsagePart::Option("quiet"),
    UsagePart::Option("single-preheat"),
    UsagePart::Option("trace-threshold"),
    UsagePart::Option("version"),
    UsagePart::Option("workload"),
    UsagePart::Option("zero-omit"),
];

/// What rt-tests 2.5 to 2.8 added to the table (`W:`): abbreviations
/// 2.40 took keep their meaning (`--bucket` is still `--bucket-size`).
const LATER: &[GetoptOption] = &[GetoptOption::new(
    "bucket-width",
    Some('W'),
    Arg::Required,
    "",
)];

const TABLE: Table<'static> = Table {
    options: OPTIONS,
    later: LATER,
};

/// Everything the options set, with oslat's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct OslatSettings {
    pub bucket_size: usize,
    /// rt-tests 2.40's whole microseconds, or `-W`'s width and unit (then
    /// the output is 2.8's: docs/compat.md).
    pub scale: OslatScale,
    pub bias: bool,
    /// `-c` as given (the header prints it); None: the default list.
    pub cpu_list: Option<String>,
    /// The CPUs measured: those of the list this process may run on;
    /// without `-c`, those but the main thread's core (`cpus_of`).
    pub cpus: Vec<usize>,
    pub cpu_main_thread: usize,
    /// `-D`, seconds (default 1).
    pub runtime_s: u64,
    pub json: Option<PathBuf>,
    /// `-f`: SCHED_FIFO priority.
    pub rtprio: Option<i32>,
    /// `-w memmove`.
    pub memmove: bool,
    /// `-m`, bytes.
    pub workload_mem: u64,
    pub quiet: bool,
    pub single_preheat: bool,
    pub trace_threshold_us: Option<u64>,
    pub zero_omit: bool,
    /// `--on-threshold ACTION`, `--on-end ACTION` (latscope's): acting on
    /// the crossing of `-T`'s threshold and at the end.
    pub actions: super::actions::Actions,
}

/// How parsing ended when it did not give settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OslatUsage {
    /// getopt's complaint: stderr, then the usage on stdout, exit 1.
    Getopt(String),
    /// `-h`: the usage on stdout, exit 0.
    Help,
    /// `-v`: nothing more (the version line is already out), exit 0.
    Version,
    /// A value oslat refuses: its line on stdout, exit 1.
    Invalid(String),
    /// A `-c` list libnuma refuses: what oslat prints on stderr (libnuma's
    /// warning when it gives one, then oslat's `FATAL:` line), exit 1.
    Fatal(String),
    /// A value latscope refuses where oslat would run nothing or misbehave
    /// (no usable CPU, a FIFO spinner that would lock a CPU): one line,
    /// exit 2.
    Bad(String),
}

/// C's `strtol(text, NULL, 10)` as oslat reads its numbers.
fn strtol(text: &str) -> i64 {
    atoi(text)
}

/// rt-tests' `parse_mem_string`: a number with an optional k/m/g (either
/// case) suffix; None for anything else.
pub fn parse_mem(text: &str) -> Option<u64> {
    let t = text.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = t[..digits].parse().ok()?;
    let shift = match &t[digits..] {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// `-W NS` as rt-tests 2.8 reads it onto the scale so far: a width that is
/// not a multiple of 1000 switches to ns for good (a later `-W 2000` is then
/// 2 ns wide, as in 2.8); a multiple of 1000 is whole microseconds.
/// 2.8 keeps the width in an `int`: what does not fit is refused, as 2.8
/// refuses 2147483648 and 999999999999 (they wrap to negative widths
/// there; a value that wraps to a positive one 2.8 takes, docs/compat.md).
fn bucket_width(scale: OslatScale, text: &str) -> Result<OslatScale, OslatUsage> {
    let ns = super::getopt::strtol(text);
    if ns <= 0 || ns > i64::from(i32::MAX) {
        return Err(OslatUsage::Invalid(format!("Illegal bucket width: {text}")));
    }
    let ns = ns as u64;
    Ok(if !ns.is_multiple_of(1000) {
        OslatScale {
            unit_per_us: 1000,
            bucket_width: ns,
            classic: false,
        }
    } else {
        OslatScale {
            bucket_width: ns / 1000,
            classic: false,
            ..scale
        }
    })
}

/// The machine facts parsing needs (fixed in tests).
pub struct Machine<'a> {
    /// CPUs this process may run on.
    pub allowed: &'a [usize],
    /// `sysconf(_SC_NPROCESSORS_CONF)`.
    pub configured: usize,
    pub isolated: &'a [usize],
    /// `sched_rt_runtime_us`.
    pub rt_runtime_us: Option<i64>,
    /// A CPU's core: it and its SMT siblings (rt::sysinfo::smt_siblings).
    pub smt_siblings: fn(usize) -> Vec<usize>,
}

/// The options getopt finds in `args`, in order, and its complaint: on a
/// complaint, the options before the bad word (oslat acts on each as
/// getopt hands it over). latscope's own options (`--on-threshold`,
/// `--on-end`) are matched only when spelled in full.
type Found = (Vec<(&'static str, Option<String>)>, Option<String>);

fn options_of(args: &[String]) -> Result<Found, OslatUsage> {
    let own = &super::actions::GETOPT_OPTIONS;
    match getopt_long(&TABLE, own, args) {
        Ok(options) => Ok((options, None)),
        Err(GetoptUsage::Getopt(message)) => {
            let before = (0..args.len())
                .rev()
                .find_map(|n| getopt_long(&TABLE, own, &args[..n]).ok())
                .unwrap_or_default();
            Ok((before, Some(message)))
        }
        // latscope's own option without its value.
        Err(GetoptUsage::Bad(message)) => Err(OslatUsage::Bad(message)),
        Err(other) => Err(OslatUsage::Bad(format!("{other:?}"))),
    }
}

impl OslatSettings {
    /// Parses oslat's arguments (without the program name).
    pub fn parse(args: &[String], machine: &Machine<'_>) -> Result<OslatSettings, OslatUsage> {
        let mut s = OslatSettings {
            bucket_size: BUCKET_SIZE,
            scale: OslatScale::CLASSIC,
            bias: false,
            cpu_list: None,
            cpus: Vec::new(),
            cpu_main_thread: 0,
            runtime_s: 1,
            json: None,
            rtprio: None,
            memmove: false,
            workload_mem: WORKLOAD_MEM,
            quiet: false,
            single_preheat: false,
            trace_threshold_us: None,
            zero_omit: false,
            actions: Default::default(),
        };
        // getopt hands options over one at a time and oslat acts on each
        // (`-v` exits there): on a complaint, the options before it still
        // count first, so `-v -Z` exits 0 and `-Z -v` complains.
        let (options, complaint) = options_of(args)?;
        let mut actions = Vec::new();
        let invalid = |line: String| Err(OslatUsage::Invalid(line));
        let mut bucket_size_given = false;
        for (name, value) in options {
            let v = value.unwrap_or_default();
            match name {
                "bucket-size" => {
                    let n = strtol(&v);
                    // oslat refuses 4 too, whatever its help says.
                    if !(5..=1024).contains(&n) {
                        return invalid(format!("Illegal bucket size: {v} (should be: 4-1024)"));
                    }
                    s.bucket_size = n as usize;
                    bucket_size_given = true;
                }
                "bucket-width" => s.scale = bucket_width(s.scale, &v)?,
                "bias" => s.bias = true,
                "cpu-list" => s.cpu_list = Some(v),
                "cpu-main-thread" => {
                    let n = strtol(&v);
                    if n < 0 || n > machine.configured as i64 {
                        return invalid(format!(
                            "Illegal core for main thread: {v} (should be: 0-{})",
                            machine.configured
                        ));
                    }
                    s.cpu_main_thread = n as usize;
                }
                "duration" => match parse_duration(&v) {
                    Some(d) => s.runtime_s = d.as_secs(),
                    None => return invalid(format!("Illegal runtime: {v}")),
                },
                "rtprio" => {
                    let n = strtol(&v);
                    if !(1..=99).contains(&n) {
                        return invalid(format!("Illegal RT priority: {v} (should be: 1-99)"));
                    }
                    s.rtprio = Some(n as i32);
                }
                "json" => s.json = Some(PathBuf::from(v)),
                "trace-threshold" => {
                    let n = strtol(&v);
                    if n <= 0 {
                        return invalid(
                            "Parameter --trace-threshold needs to be positive".to_string(),
                        );
                    }
                    s.trace_threshold_us = Some(n as u64);
                }
                "workload" => match v.as_str() {
                    "no" => s.memmove = false,
                    "memmove" => s.memmove = true,
                    _ => {
                        return invalid(format!(
                            "Unknown workload '{v}'.  Please choose from: 'no', 'memmove'\n"
                        ));
                    }
                },
                "workload-mem" => match parse_mem(&v) {
                    Some(n) => s.workload_mem = n,
                    None => return invalid(format!("Unknown workload memory size '{v}'.\n")),
                },
                "quiet" => s.quiet = true,
                "single-preheat" => s.single_preheat = true,
                "zero-omit" => s.zero_omit = true,
                own if super::actions::is_getopt_option(own) => actions.push((own, v)),
                // oslat exits at once: its version line is out already.
                "version" => return Err(OslatUsage::Version),
                _ => return Err(OslatUsage::Help),
            }
        }
        if let Some(message) = complaint {
            return Err(OslatUsage::Getopt(message));
        }
        // rt-tests 2.8: sub-microsecond buckets without -b cover the same
        // 32 us as the default's (-W 500: 64 buckets).
        if !bucket_size_given && s.scale.unit_per_us == 1000 && s.scale.bucket_width < 1000 {
            s.bucket_size = BUCKET_SIZE * 1000 / s.scale.bucket_width as usize;
        }
        s.settle(machine)?;
        s.actions = super::actions::from_getopt(
            actions.iter().map(|(n, v)| (*n, Some(v.as_str()))),
            s.trace_threshold_us,
            "-T",
        )
        .map_err(|e| OslatUsage::Bad(e.0))?;
        // A trace action's file is an output too: the JSON must not replace it.
        let json = s.json.clone().map(super::OutputTarget::File);
        s.actions
            .check_apart_from(&[("--json", json.as_ref())])
            .map_err(|e| OslatUsage::Bad(e.0))?;
        Ok(s)
    }

    /// What oslat decides once its options are read: the CPUs, and the
    /// refusals of latscope's rules (a FIFO spinner, a memmove of nothing).
    fn settle(&mut self, machine: &Machine<'_>) -> Result<(), OslatUsage> {
        self.cpus = self.cpus_of(machine)?;
        if self.rtprio.is_some() {
            // A FIFO spinner never sleeps: the rules of `latscope noise`
            // (the CPUs count as named: oslat has no "all but one" default).
            // oslat has no --force or --policy: its way out is to leave out -f.
            check_realtime_safety(
                crate::rt::sched::Policy::Fifo,
                &self.cpus,
                CpusFrom::Named,
                machine.isolated,
                machine.rt_runtime_us,
                false,
            )
            .map_err(|e| {
                OslatUsage::Bad(format!(
                    "-f: {} (oslat has no --force: leave out -f to spin at SCHED_OTHER)",
                    e.0
                ))
            })?;
        }
        if self.workload_mem == 0 && self.memmove {
            return Err(OslatUsage::Bad(
                "-m: a memmove workload needs a size above 0 (e.g. 4K)".to_string(),
            ));
        }
        Ok(())
    }

    /// The CPUs of `-c` this process may run on, as oslat keeps those it can
    /// move to. Without `-c`, oslat measures every CPU, the main thread's
    /// (`-C`, 0 by default) too, where its spinner shares a CPU or a core
    /// with the main thread's work: latscope leaves out that CPU and its SMT
    /// siblings, as `noise` does and the RT tuning flows' runners do (all of
    /// them where that leaves none). `-c all` and any other `-c` are exact.
    fn cpus_of(&self, machine: &Machine<'_>) -> Result<Vec<usize>, OslatUsage> {
        let allowed = machine.allowed;
        let listed = match self.cpu_list.as_deref() {
            None => apart_from_main_core(allowed, &(machine.smt_siblings)(self.cpu_main_thread)),
            Some("all") => allowed.to_vec(),
            // oslat reads -c with libnuma's numa_parse_cpustring_all and
            // ends on its failure as cyclictest's -a does: libnuma's
            // warning, then its own fatal line, exit 1.
            Some(list) => numa_parse_cpustring(list, allowed).map_err(|warning| {
                OslatUsage::Fatal(format!(
                    "{}FATAL: oslat: numa_parse_cpustring_all failed.\n",
                    warning.map_or(String::new(), |w| w + "\n")
                ))
            })?,
        };
        let cpus: Vec<usize> = listed.into_iter().filter(|c| allowed.contains(c)).collect();
        if cpus.is_empty() {
            return Err(OslatUsage::Bad(format!(
                "-c: none of the CPUs listed is one this process may run on ({})",
                crate::units::cpu_list(allowed)
            )));
        }
        Ok(cpus)
    }

    /// The bytes copied per loop with `-w memmove`.
    pub fn memmove_bytes(&self) -> Option<usize> {
        self.memmove
            .then(|| usize::try_from(self.workload_mem).unwrap_or(usize::MAX))
    }

    /// oslat's header block (`dump_globals`), each line with its newline.
    pub fn header(&self) -> String {
        let priority = match self.rtprio {
            Some(p) => format!("SCHED_FIFO:{p}"),
            None => "default".to_string(),
        };
        // oslat prints `-c` as given, "all" without it; latscope's default
        // leaves out the main thread's core, so a run without `-c` prints
        // the list it measures, in `-c`'s form (`1`, `1-3,5-7`): the
        // header stays true and reads as a `-c` that would measure the same.
        let cpu_list = match self.cpu_list.as_deref() {
            Some(list) => list.to_string(),
            None => crate::units::cpu_list(&self.cpus),
        };
        format!(
            "Total runtime: \t\t{} seconds\nThread priority: \t{priority}\nCPU list: \t\t{cpu_list}\nCPU for main thread: \t{}\nWorkload: \t\t{}\nWorkload mem: \t\t{} (KiB)\nPreheat cores: \t\t{}\n\n",
            self.runtime_s,
            self.cpu_main_thread,
            if self.memmove { "memmove" } else { "no" },
            if self.memmove {
                self.workload_mem / 1024
            } else {
                0
            },
            if self.single_preheat {
                1
            } else {
                self.cpus.len()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usage_layout_prints_every_listed_option_once() {
        assert_eq!(
            super::super::getopt::check_usage_layout(OPTIONS, LAYOUT),
            Vec::<String>::new()
        );
    }

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    const MACHINE: Machine<'static> = Machine {
        allowed: &[0, 1],
        configured: 2,
        isolated: &[],
        rt_runtime_us: Some(950_000),
        smt_siblings: no_smt,
    };

    /// A machine without SMT: each CPU a core of its own.
    fn no_smt(cpu: usize) -> Vec<usize> {
        vec![cpu]
    }

    fn parse(words: &[&str]) -> Result<OslatSettings, OslatUsage> {
        OslatSettings::parse(&args(words), &MACHINE)
    }

    #[test]
    fn defaults_and_every_option() {
        let s = parse(&[]).unwrap();
        assert_eq!(
            (s.bucket_size, s.runtime_s, s.cpus.clone()),
            (32, 1, vec![1])
        );
        assert_eq!(s.workload_mem, 16384);
        let s = parse(&[
            "-c",
            "1",
            "-D2m",
            "-b",
            "8",
            "-B",
            "-w",
            "memmove",
            "-m",
            "4K",
            "-qsz",
            "-T",
            "50",
            "-f",
            "5",
            "--json=/tmp/x.json",
            "-C",
            "1",
        ])
        .unwrap();
        assert_eq!(s.cpus, vec![1]);
        assert_eq!(s.runtime_s, 120);
        assert_eq!(
            (s.bucket_size, s.bias, s.memmove, s.workload_mem),
            (8, true, true, 4096)
        );
        assert!(s.quiet && s.single_preheat && s.zero_omit);
        assert_eq!((s.trace_threshold_us, s.rtprio), (Some(50), Some(5)));
        assert_eq!(s.json, Some(PathBuf::from("/tmp/x.json")));
        assert_eq!(s.cpu_main_thread, 1);
        assert_eq!(s.memmove_bytes(), Some(4096));
        let s = parse(&["--cpu-list", "0-1", "--duration", "1h", "--bucket-s", "16"]).unwrap();
        assert_eq!((s.cpus, s.runtime_s, s.bucket_size), (vec![0, 1], 3600, 16));
    }

    #[test]
    fn oslats_refusals() {
        let invalid = |w: &[&str]| match parse(w) {
            Err(OslatUsage::Invalid(line)) => line,
            other => panic!("{w:?}: {other:?}"),
        };
        assert_eq!(
            invalid(&["-b", "4"]),
            "Illegal bucket size: 4 (should be: 4-1024)"
        );
        assert_eq!(
            invalid(&["-b", "1025"]),
            "Illegal bucket size: 1025 (should be: 4-1024)"
        );
        assert_eq!(invalid(&["-D", "0"]), "Illegal runtime: 0");
        assert_eq!(
            invalid(&["-f", "0"]),
            "Illegal RT priority: 0 (should be: 1-99)"
        );
        assert_eq!(
            invalid(&["-C", "3"]),
            "Illegal core for main thread: 3 (should be: 0-2)"
        );
        assert_eq!(
            invalid(&["-T", "0"]),
            "Parameter --trace-threshold needs to be positive"
        );
        assert_eq!(
            invalid(&["-w", "foo"]),
            "Unknown workload 'foo'.  Please choose from: 'no', 'memmove'\n"
        );
        assert_eq!(
            invalid(&["-m", "4X"]),
            "Unknown workload memory size '4X'.\n"
        );
        assert_eq!(
            parse(&["-Z"]),
            Err(OslatUsage::Getopt("invalid option -- 'Z'".into()))
        );
        assert_eq!(
            parse(&["-c"]),
            Err(OslatUsage::Getopt(
                "option requires an argument -- 'c'".into()
            ))
        );
        assert_eq!(parse(&["-h"]), Err(OslatUsage::Help));
        assert_eq!(parse(&["-v", "-Z"]), Err(OslatUsage::Version));
        assert_eq!(
            parse(&["-b", "8", "-Z", "-v"]),
            Err(OslatUsage::Getopt("invalid option -- 'Z'".into()))
        );
        assert_eq!(
            parse(&["-b", "4", "-Z"]),
            Err(OslatUsage::Invalid(
                "Illegal bucket size: 4 (should be: 4-1024)".into()
            ))
        );
        let fatal = "FATAL: oslat: numa_parse_cpustring_all failed.\n";
        assert_eq!(
            parse(&["-c", "7"]),
            Err(OslatUsage::Fatal(format!(
                "libnuma: Warning: cpu argument 7 is out of range\n\n{fatal}"
            )))
        );
        assert_eq!(
            parse(&["-c", "x"]),
            Err(OslatUsage::Fatal(format!(
                "libnuma: Warning: unparseable cpu description `x'\n\n{fatal}"
            )))
        );
        assert_eq!(
            parse(&["-c", "1a"]),
            Err(OslatUsage::Fatal(fatal.to_string()))
        );
    }

    #[test]
    fn bucket_width_as_rt_tests_2_8_reads_it() {
        let scale = |w: &[&str]| {
            let s = parse(w).unwrap();
            (
                s.scale.unit_per_us,
                s.scale.bucket_width,
                s.scale.classic,
                s.bucket_size,
            )
        };
        assert_eq!(scale(&[]), (1, 1, true, 32), "2.40's by default");
        // Not a multiple of 1000: ns, and 32 us worth of buckets without -b.
        assert_eq!(scale(&["-W", "500"]), (1000, 500, false, 64));
        assert_eq!(scale(&["--bucket-width=250"]), (1000, 250, false, 128));
        assert_eq!(scale(&["-W", "1500"]), (1000, 1500, false, 32));
        assert_eq!(scale(&["-W500", "-b", "16"]), (1000, 500, false, 16));
        // A multiple of 1000: whole us.
        assert_eq!(scale(&["-W", "2000"]), (1, 2, false, 32));
        assert_eq!(scale(&["--bucket-w", "1000"]), (1, 1, false, 32));
        // 2.40's abbreviation keeps its meaning (2.8 finds it ambiguous).
        assert_eq!(scale(&["--bucket", "8"]), (1, 1, true, 8));
        // 2.8 keeps ns once switched to it: the later 2000 is 2 ns.
        assert_eq!(scale(&["-W", "500", "-W", "2000"]), (1000, 2, false, 16000));
        let invalid = |w: &[&str]| parse(w).unwrap_err();
        // 2.8's int: 2147483648 and 999999999999 wrap to negative widths there.
        for bad in ["0", "-5", "x", "2147483648", "999999999999", "4294967297"] {
            assert_eq!(
                invalid(&["-W", bad]),
                OslatUsage::Invalid(format!("Illegal bucket width: {bad}"))
            );
        }
        assert_eq!(
            invalid(&["-W"]),
            OslatUsage::Getopt("option requires an argument -- 'W'".into())
        );
    }

    #[test]
    fn a_fifo_spinner_with_throttling_off_needs_an_isolated_cpu() {
        let off = Machine {
            rt_runtime_us: Some(-1),
            ..MACHINE
        };
        let r = OslatSettings::parse(&args(&["-c", "1", "-f", "1"]), &off);
        assert!(matches!(r, Err(OslatUsage::Bad(m)) if m.contains("RT throttling is off")));
        let isolated = Machine {
            isolated: &[1],
            ..off
        };
        assert!(OslatSettings::parse(&args(&["-c", "1", "-f", "1"]), &isolated).is_ok());
        assert!(parse(&["-c", "1", "-f", "1"]).is_ok(), "throttling on");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_mem("4K"), Some(4096));
        assert_eq!(parse_mem("1m"), Some(1 << 20));
        assert_eq!(parse_mem("2G"), Some(2 << 30));
        assert_eq!(parse_mem("100"), Some(100));
        assert_eq!(parse_mem("K"), None);
        assert_eq!(parse_mem("4KB"), None);
    }

    /// 8 CPUs, CPU N and N+4 on one core.
    fn siblings_n_and_n_plus_4(cpu: usize) -> Vec<usize> {
        vec![cpu % 4, cpu % 4 + 4]
    }

    /// The CPUs measured and the header's `CPU list:` value.
    fn cpus_and_header_list(words: &[&str], machine: &Machine<'_>) -> (Vec<usize>, String) {
        let s = OslatSettings::parse(&args(words), machine).unwrap();
        let header = s.header();
        let list = header
            .lines()
            .find_map(|l| l.strip_prefix("CPU list: \t\t"))
            .unwrap()
            .to_string();
        (s.cpus, list)
    }

    /// Without `-c`: every allowed CPU but the main thread's (`-C`, 0 by
    /// default) and its SMT siblings, or all of them where that leaves
    /// none; the header names the CPUs measured. `-c` is exact.
    #[test]
    fn the_default_cpu_list_leaves_out_the_main_threads_core() {
        let two = |w: &[&str]| cpus_and_header_list(w, &MACHINE);
        assert_eq!(two(&[]), (vec![1], "1".to_string()));
        assert_eq!(two(&["-C", "1"]), (vec![0], "0".to_string()));
        assert_eq!(two(&["-c", "all"]), (vec![0, 1], "all".to_string()));
        assert_eq!(two(&["-c", "0-1"]), (vec![0, 1], "0-1".to_string()));
        assert_eq!(two(&["-c", "0"]), (vec![0], "0".to_string()));
        let eight_cpus: Vec<usize> = (0..8).collect();
        let eight = Machine {
            allowed: &eight_cpus,
            configured: 8,
            smt_siblings: siblings_n_and_n_plus_4,
            ..MACHINE
        };
        let on_eight = |w: &[&str]| cpus_and_header_list(w, &eight);
        assert_eq!(
            on_eight(&[]),
            (vec![1, 2, 3, 5, 6, 7], "1-3,5-7".to_string())
        );
        assert_eq!(
            on_eight(&["-C", "3"]),
            (vec![0, 1, 2, 4, 5, 6], "0-2,4-6".to_string())
        );
        assert_eq!(on_eight(&["-c", "all"]).0, eight_cpus);
        assert_eq!(on_eight(&["-c", "0,4"]).0, vec![0, 4]);
        // One CPU, or one core: all of them, as oslat measures them.
        let one = Machine {
            allowed: &[0],
            configured: 1,
            ..MACHINE
        };
        assert_eq!(cpus_and_header_list(&[], &one), (vec![0], "0".to_string()));
        let one_core = Machine {
            smt_siblings: |_| vec![0, 1],
            ..MACHINE
        };
        assert_eq!(
            cpus_and_header_list(&[], &one_core),
            (vec![0, 1], "0-1".to_string())
        );
    }

    #[test]
    fn the_header_block() {
        let s = parse(&["-c", "1", "-D", "2"]).unwrap();
        assert_eq!(
            s.header(),
            "Total runtime: \t\t2 seconds\nThread priority: \tdefault\nCPU list: \t\t1\nCPU for main thread: \t0\nWorkload: \t\tno\nWorkload mem: \t\t0 (KiB)\nPreheat cores: \t\t1\n\n"
        );
    }
}
