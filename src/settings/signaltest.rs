//! `latscope signaltest` / the `signaltest` compat name: rt-tests 2.40
//! signaltest's command line, read as it reads it (GNU getopt_long with its
//! table `a::b:D:hl:mp:qSt:v` through settings::getopt; numbers by `atoi`,
//! `-D` by `parse_time_string`, CPU lists by libnuma), its help and its
//! refusals answered in its words, and the CPU each thread is pinned to.

use super::actions::{GETOPT_OPTIONS as GETOPT_ACTIONS, is_getopt_option};
use super::getopt::{
    Arg, GetoptOption, GetoptUsage, UsagePart, atoi, getopt_long_into, numa_parse_cpustring,
    parse_duration, render_usage,
};
use std::sync::LazyLock;
use std::time::Duration;

/// rt-tests 2.40's `signaltest --help`, byte for byte: what `--help` and a
/// getopt complaint print on stdout. tests/suite/signaltest_compat.rs compares it
/// with Debian's signaltest where that is installed.
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// More threads than this are refused (exit 2): signaltest has no limit
/// and would try to start any number, each a real-time thread of the ring.
pub const MAX_THREADS: i64 = 4096;

/// Each option (long name, short letter, argument, its lines in the usage
/// text) in getopt's order, which orders an ambiguous abbreviation's
/// possibilities: signaltest 2.40's table. `-S`
/// (`--smp`) is in it though its help does not list it.
const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "affinity",
        Some('a'),
        Arg::Optional,
        "\
-a [NUM] --affinity        run thread #N on processor #N, if possible
                           with NUM pin all threads to the processor NUM
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
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D       --duration=TIME   specify a length for the test run.
                           Append 'm', 'h', or 'd' to specify minutes, hours or
                           days.
",
    ),
    GetoptOption::new(
        "help",
        Some('h'),
        Arg::No,
        "\
-h       --help            display usage information
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
        "loops",
        Some('l'),
        Arg::Required,
        "\
-l LOOPS --loops=LOOPS     number of loops: default=0(endless)
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
        "priority",
        Some('p'),
        Arg::Required,
        "\
-p PRIO  --prio=PRIO       priority of highest prio thread
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
    GetoptOption::new("smp", Some('S'), Arg::No, ""),
    GetoptOption::new(
        "threads",
        Some('t'),
        Arg::Required,
        "\
-t NUM   --threads=NUM     number of threads: default=2
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
];

/// The usage text as the tool prints it: its own words, and each option's
/// lines from `OPTIONS` where the tool lists it.
const LAYOUT: &[UsagePart] = &[
    UsagePart::Text(
        "\
signaltest V 2.40
Usage:
signaltest <options>

",
    ),
    UsagePart::Option("affinity"),
    UsagePart::Option("breaktrace"),
    UsagePart::Option("duration"),
    UsagePart::Option("help"),
    UsagePart::Option("json"),
    UsagePart::Option("loops"),
    UsagePart::Option("mlockall"),
    UsagePart::Option("priority"),
    UsagePart::Option("quiet"),
    UsagePart::Option("threads"),
    UsagePart::Option("verbose"),
];

/// Everything the options set, with signaltest's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalSettings {
    /// Threads in the ring (at least 2).
    pub threads: usize,
    /// SCHED_FIFO priority of every thread; 0 is SCHED_OTHER.
    pub priority: i32,
    /// The CPU each thread is pinned to: signaltest pins every thread,
    /// round robin over the `-a` list or over the CPUs it may use.
    pub cpus: Vec<usize>,
    /// `-a LIST`: the main thread runs on these CPUs, and `-v` names each
    /// thread's CPU at the start.
    pub listed_affinity: Option<Vec<usize>>,
    /// `-l`: laps each thread measures; 0 until stopped (a negative count
    /// too, as signaltest compares it unsigned).
    pub loops: u64,
    /// `-D`: None runs until stopped.
    pub duration: Option<Duration>,
    /// `-b`: the run stops when thread 0 measures a lap longer than this
    /// (us, `atoi`'s value, compared as signaltest compares it).
    pub break_us: Option<i64>,
    pub mlockall: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// `--json FILE` (an empty name writes nothing, as in signaltest).
    pub json: Option<String>,
    /// Lines signaltest prints on stdout while it parses (`-v` before `-a
    /// LIST`: `Using N cpus.`).
    pub early_lines: Vec<String>,
    /// Its `WARN:` lines about the options, on stderr before the run.
    pub warnings: Vec<String>,
    /// The command line as typed, for the JSON's `cmdline:`.
    pub cmdline: String,
    /// `--on-threshold ACTION`, `--on-end ACTION` (latscope's): acting on
    /// the crossing of `-b`'s break value and at the end.
    pub actions: super::actions::Actions,
}

/// What signaltest keeps aside while reading its options.
struct Pending {
    /// -1: one per CPU (`-S`), settled after parsing.
    threads: i64,
    priority: i64,
    duration: i64,
    option_affinity: bool,
    smp: bool,
    /// libnuma answered: `-a` then `-S` is signaltest's FATAL.
    numa: bool,
}

/// signaltest takes the word after a bare `-a` as its CPU list when `atoi`
/// makes a number other than 0 of it or it starts with `0`, `!`, `+` or `a`
/// (`all`); getopt reads that word again afterwards (a skipped non-option).
fn peek(option: &str, next: &str) -> bool {
    option == "affinity" && (atoi(next) != 0 || next.starts_with(['0', '!', '+', 'a']))
}

impl SignalSettings {
    /// Parses signaltest's arguments (without the program name) as it does.
    /// `program` is argv[0] as typed (the JSON's command line), `allowed`
    /// the CPUs this process may run on.
    pub fn parse(
        args: &[String],
        program: &str,
        allowed: &[usize],
    ) -> Result<SignalSettings, GetoptUsage> {
        let mut s = SignalSettings {
            threads: 2,
            priority: 0,
            cpus: Vec::new(),
            listed_affinity: None,
            loops: 0,
            duration: None,
            break_us: None,
            mlockall: false,
            quiet: false,
            verbose: false,
            json: None,
            early_lines: Vec::new(),
            warnings: Vec::new(),
            cmdline: std::iter::once(program.to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
            actions: Default::default(),
        };
        let mut p = Pending {
            threads: 2,
            priority: 0,
            duration: 0,
            option_affinity: false,
            smp: false,
            numa: false,
        };
        // signaltest acts on each option as getopt returns it, so one before
        // a bad word still ends the run its own way (`-a abc -Z`).
        let mut found = Vec::new();
        let getopt_error = getopt_long_into(OPTIONS, &GETOPT_ACTIONS, args, peek, &mut found).err();
        let mut actions = Vec::new();
        for (name, value) in found {
            if is_getopt_option(name) {
                actions.push((name, value));
                continue;
            }
            s.apply(name, value, allowed, &mut p)?;
        }
        if let Some(e) = getopt_error {
            return Err(e);
        }
        s.settle(p, allowed)?;
        s.actions = super::actions::from_getopt(
            actions.iter().map(|(n, v)| (*n, v.as_deref())),
            s.break_us.map(|us| us.max(0) as u64),
            "-b",
        )
        .map_err(|e| GetoptUsage::Bad(e.0))?;
        // A trace action's file is an output too: the JSON must not replace it.
        let json = s
            .json
            .as_deref()
            .map(|p| super::OutputTarget::File(p.into()));
        s.actions
            .check_apart_from(&[("--json", json.as_ref())])
            .map_err(|e| GetoptUsage::Bad(e.0))?;
        Ok(s)
    }

    /// One option as getopt returned it.
    fn apply(
        &mut self,
        name: &str,
        value: Option<String>,
        allowed: &[usize],
        p: &mut Pending,
    ) -> Result<(), GetoptUsage> {
        let v = value.as_deref().unwrap_or("");
        match name {
            "affinity" => self.apply_affinity(value.as_deref(), allowed, p)?,
            "breaktrace" => self.break_us = Some(atoi(v)).filter(|&b| b != 0),
            "duration" => {
                p.duration = atoi(v);
                self.duration = parse_duration(v);
            }
            "help" => return Err(GetoptUsage::Help),
            "json" => self.json = Some(v.to_string()).filter(|j| !j.is_empty()),
            "loops" => self.loops = u64::try_from(atoi(v)).unwrap_or(0),
            "mlockall" => self.mlockall = true,
            "priority" => p.priority = atoi(v),
            "quiet" => self.quiet = true,
            "smp" => {
                if p.numa {
                    return Err(GetoptUsage::Fatal(
                        "numa and smp options are mutually exclusive".into(),
                    ));
                }
                p.smp = true;
                p.threads = -1;
                self.listed_affinity = None;
            }
            "threads" => p.threads = atoi(v),
            "verbose" => self.verbose = true,
            _ => {}
        }
        Ok(())
    }

    /// `-a [LIST]` (ignored after `-S`): a list given but empty or refused
    /// by libnuma ends with libnuma's warning and the usage (exit 1).
    fn apply_affinity(
        &mut self,
        list: Option<&str>,
        allowed: &[usize],
        p: &mut Pending,
    ) -> Result<(), GetoptUsage> {
        p.option_affinity = true;
        if p.smp {
            return Ok(());
        }
        p.numa = true;
        let Some(list) = list else {
            self.listed_affinity = None;
            return Ok(());
        };
        match numa_parse_cpustring(list, allowed) {
            Ok(cpus) if !cpus.is_empty() => {
                if self.verbose {
                    self.early_lines.push(format!("Using {} cpus.", cpus.len()));
                }
                self.listed_affinity = Some(cpus);
                Ok(())
            }
            Ok(_) | Err(None) => Err(GetoptUsage::Invalid(Vec::new())),
            Err(Some(line)) => Err(GetoptUsage::Invalid(vec![line])),
        }
    }

    /// signaltest's checks after parsing, and each thread's CPU.
    fn settle(&mut self, p: Pending, allowed: &[usize]) -> Result<(), GetoptUsage> {
        let threads = if p.threads == -1 {
            allowed.len() as i64
        } else {
            p.threads
        };
        if p.option_affinity && p.smp {
            self.warnings
                .push("WARN: -a ignored due to smp mode".into());
        }
        let refused = p.duration < 0 || !(0..=99).contains(&p.priority) || threads < 2;
        if refused {
            // libnuma's warning lines, if any, were given by now: none here.
            return Err(GetoptUsage::Invalid(std::mem::take(&mut self.warnings)));
        }
        if threads > MAX_THREADS {
            return Err(GetoptUsage::Bad(format!(
                "-t {threads}: at most {MAX_THREADS} threads (each one a thread of the ring)"
            )));
        }
        if allowed.is_empty() {
            return Err(GetoptUsage::Bad("no CPU to run on".into()));
        }
        self.threads = threads as usize;
        self.priority = p.priority as i32;
        // rt-tests' cpu_for_thread_sp / cpu_for_thread_ua: thread i on the
        // (i mod n)-th CPU of the -a list, else of the CPUs allowed.
        let pool = self.listed_affinity.as_deref().unwrap_or(allowed);
        self.cpus = (0..self.threads).map(|i| pool[i % pool.len()]).collect();
        Ok(())
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

    fn parse(words: &[&str]) -> Result<SignalSettings, GetoptUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        SignalSettings::parse(&args, "signaltest", &[0, 1])
    }

    #[test]
    fn defaults_are_signaltests() {
        let s = parse(&[]).unwrap();
        assert_eq!((s.threads, s.priority, s.loops), (2, 0, 0));
        assert_eq!(s.cpus, vec![0, 1], "every thread pinned, round robin");
        assert_eq!((s.duration, s.break_us, s.json), (None, None, None));
        assert!(!s.quiet && !s.verbose && !s.mlockall);
        assert_eq!(s.cmdline, "signaltest");
    }

    #[test]
    fn options_as_getopt_and_atoi_read_them() {
        let s = parse(&[
            "-qmv", "-p90", "-t", "3", "-l", "1000x", "-D", "2m", "--json=f",
        ])
        .unwrap();
        assert_eq!((s.threads, s.priority, s.loops), (3, 90, 1000));
        assert_eq!(s.cpus, vec![0, 1, 0]);
        assert_eq!(s.duration, Some(Duration::from_secs(120)));
        assert_eq!(s.json.as_deref(), Some("f"));
        assert!(s.quiet && s.mlockall && s.verbose);
        let s = parse(&["--prio=5", "--loops", "-3", "-b", "50", "--json="]).unwrap();
        assert_eq!(
            (s.priority, s.loops, s.break_us, s.json),
            (5, 0, Some(50), None)
        );
        assert_eq!(s.cmdline, "signaltest --prio=5 --loops -3 -b 50 --json=");
    }

    #[test]
    fn affinity_lists() {
        let s = parse(&["-a", "1", "-t", "3"]).unwrap();
        assert_eq!(s.listed_affinity, Some(vec![1]));
        assert_eq!(s.cpus, vec![1, 1, 1]);
        let s = parse(&["-a1"]).unwrap();
        assert_eq!(s.cpus, vec![1, 1]);
        // A word that is no list is not taken: getopt skips it.
        let s = parse(&["-a", "foo"]).unwrap();
        assert_eq!((s.listed_affinity, s.cpus), (None, vec![0, 1]));
        let s = parse(&["-v", "-a", "0-1"]).unwrap();
        assert_eq!(s.early_lines, vec!["Using 2 cpus."]);
        assert_eq!(
            parse(&["-a", "7"]),
            Err(GetoptUsage::Invalid(vec![
                "libnuma: Warning: cpu argument 7 is out of range\n".into()
            ]))
        );
    }

    #[test]
    fn refusals_are_signaltests() {
        for words in [
            &["-p", "100"][..],
            &["-p", "-1"],
            &["-t", "1"],
            &["-D", "-5"],
        ] {
            assert_eq!(parse(words), Err(GetoptUsage::Invalid(vec![])), "{words:?}");
        }
        assert_eq!(parse(&["-h"]), Err(GetoptUsage::Help));
        assert_eq!(parse(&["-q", "--he"]), Err(GetoptUsage::Help));
        assert_eq!(
            parse(&["-Z"]),
            Err(GetoptUsage::Getopt("invalid option -- 'Z'".into()))
        );
        assert_eq!(
            parse(&["-a", "-S"]),
            Err(GetoptUsage::Fatal(
                "numa and smp options are mutually exclusive".into()
            ))
        );
        assert!(matches!(parse(&["-t", "5000"]), Err(GetoptUsage::Bad(_))));
    }

    #[test]
    fn smp_is_one_thread_per_cpu() {
        let s = parse(&["-S"]).unwrap();
        assert_eq!((s.threads, s.cpus), (2, vec![0, 1]));
        let s = parse(&["-S", "-a", "1"]).unwrap();
        assert_eq!(s.warnings, vec!["WARN: -a ignored due to smp mode"]);
        assert_eq!(s.listed_affinity, None);
        let s = parse(&["-S", "-t", "4"]).unwrap();
        assert_eq!(s.threads, 4);
    }
}
