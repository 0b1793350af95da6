//! `latscope cyclicdeadline` / the `cyclicdeadline` compat name: rt-tests
//! 2.40's cyclicdeadline command line through settings/getopt.rs (its
//! table: `-a` with an optional CPU list, `-c` its hidden twin, `-D -i -s
//! -t -b -q`, `--json`, `--tracemark`, `--help`), what each option sets,
//! and its own adjustments: `-a` without `-t` runs one thread per CPU, more
//! threads than CPUs share 80 % of the CPUs, thread n's deadline is the
//! interval plus n steps, its runtime a share of that deadline.

use super::getopt::{
    Arg, GetoptOption, GetoptUsage, UsagePart, atoi, getopt_long_into, parse_duration, render_usage,
};
use crate::rt::sched::Reservation;
use std::sync::LazyLock;
use std::time::Duration;

/// rt-tests 2.40's `cyclicdeadline --help` text, byte for byte: what
/// `--help` prints, and what follows a getopt complaint (stdout, exit 1).
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// The most threads latscope starts (cyclicdeadline takes any count and
/// fails on its allocations or the kernel's admission).
pub const MAX_THREADS: usize = 1024;

/// `-c`'s name in the table: cyclicdeadline has the letter (a required
/// list, `-a`'s twin, not in its help) but no long option, and no word typed
/// on a command line starts with NUL, so `--c...` never reaches it.
const LETTER_C: &str = "\0c";

/// Each option (long name, short letter, argument, its lines in the usage
/// text) in getopt's order, which orders an ambiguous abbreviation's
/// possibilities: rt-tests 2.40's table.
const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "affinity",
        Some('a'),
        Arg::Optional,
        "\
-a [CPUSET] --affinity     Comma/hyphen separated list of CPUs to run deadline
                           tasks on. An empty CPUSET runs on all CPUs a deadline
                           task.
                           on CPU 4, and thread #5 on CPU 5.
",
    ),
    GetoptOption::new(LETTER_C, Some('c'), Arg::Required, ""),
    GetoptOption::new(
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D TIME  --duration        Specify a length for the test run.
                           Append 'm', 'h', or 'd' to specify minutes, hours or
                           days
",
    ),
    GetoptOption::new(
        "help",
        Some('h'),
        Arg::No,
        "\
-h       --help            Show this help menu.
",
    ),
    GetoptOption::new(
        "interval",
        Some('i'),
        Arg::Required,
        "\
-i INTV  --interval        The shortest deadline for the tasks in us
                           (default 1000us).
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
        "step",
        Some('s'),
        Arg::Required,
        "\
-s STEP  --step            The amount to increase the deadline for each task in us
                           (default 500us).
",
    ),
    GetoptOption::new(
        "threads",
        Some('t'),
        Arg::Required,
        "\
-t NUM   --threads         The number of threads to run as deadline (default 1).
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
        "breaktrace",
        Some('b'),
        Arg::Required,
        "\
-b USEC  --breaktrace=USEC send break trace command when latency > USEC
",
    ),
    GetoptOption::new(
        "tracemark",
        None,
        Arg::No,
        "         --tracemark       write a trace mark when -b latency is exceeded
",
    ),
];

/// The usage text as the tool prints it: its own words, and each option's
/// lines from `OPTIONS` where the tool lists it.
const LAYOUT: &[UsagePart] = &[
    UsagePart::Text(
        "\
cyclicdeadline V 2.40
Usage:
cyclicdeadline <options>

",
    ),
    UsagePart::Option("affinity"),
    UsagePart::Option("duration"),
    UsagePart::Option("help"),
    UsagePart::Option("interval"),
    UsagePart::Option("json"),
    UsagePart::Option("step"),
    UsagePart::Option("threads"),
    UsagePart::Option("quiet"),
    UsagePart::Option("breaktrace"),
    UsagePart::Option("tracemark"),
];

/// One measuring thread's reservation, in us as cyclicdeadline prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineThread {
    pub runtime_us: u64,
    /// Also the period (cyclicdeadline leaves the period 0: the deadline).
    pub deadline_us: u64,
}

/// Everything the options set, once cyclicdeadline's adjustments are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineSettings {
    /// Thread n: interval + n * step, its runtime a share of it.
    pub threads: Vec<DeadlineThread>,
    /// The CPUs named by `-a LIST`; None without a list.
    pub cpu_list: Option<Vec<usize>>,
    /// `-a LIST` naming some of the machine's CPUs only: where
    /// cyclicdeadline runs its threads (in an exclusive cpuset of them);
    /// None when they run on every CPU.
    pub some_cpus_only: Option<Vec<usize>>,
    /// cyclicdeadline prints "Using all CPUS" (no `-a`, or a list of them all).
    pub says_all_cpus: bool,
    /// `-D`: stop after this long; None: until stopped.
    pub duration: Option<Duration>,
    pub quiet: bool,
    /// `--json=FILE`.
    pub json: Option<String>,
    /// `-b USEC`: a latency above it stops the run (0 = none).
    pub breaktrace: i64,
    /// `--tracemark` (with `-b`): a trace mark when the limit is crossed.
    pub tracemark: bool,
    /// The command line as typed, for the JSON `cmdline:` key.
    pub cmdline: String,
}

/// The machine facts the options are checked against.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineMachine {
    /// cyclicdeadline's `cpu_count`: sysconf(_SC_NPROCESSORS_CONF).
    pub cpu_count: usize,
}

/// What the options say before cyclicdeadline's adjustments.
struct Given {
    threads: i64,
    interval: i64,
    step: i64,
    /// `-a`/`-c`'s list (None: no list).
    list: Option<String>,
    /// `-a` with nothing after it: every CPU, nothing said.
    all_cpus: bool,
}

impl DeadlineSettings {
    /// Parses cyclicdeadline's arguments (without the program name).
    /// `program` is its name as typed, for the JSON's command line.
    pub fn parse(
        args: &[String],
        program: &str,
        machine: DeadlineMachine,
    ) -> Result<DeadlineSettings, GetoptUsage> {
        let mut s = DeadlineSettings {
            threads: Vec::new(),
            cpu_list: None,
            some_cpus_only: None,
            says_all_cpus: false,
            duration: None,
            quiet: false,
            json: None,
            breaktrace: 0,
            tracemark: false,
            cmdline: std::iter::once(program.to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut given = Given {
            threads: 0,
            interval: 1000,
            step: 500,
            list: None,
            all_cpus: false,
        };
        let mut tokens = Vec::new();
        // cyclicdeadline's `-a` takes the next word as its list whatever it
        // is, and getopt reads that word all the same.
        let error = getopt_long_into(OPTIONS, &[], args, |_, _| true, &mut tokens).err();
        for (name, value) in tokens {
            s.apply(name, value, machine, &mut given)?;
        }
        if let Some(e) = error {
            return Err(e);
        }
        s.settle(given, machine)?;
        Ok(s)
    }

    /// One option as getopt returned it, as cyclicdeadline acts on it.
    fn apply(
        &mut self,
        name: &str,
        value: Option<String>,
        machine: DeadlineMachine,
        given: &mut Given,
    ) -> Result<(), GetoptUsage> {
        let number = || value.as_deref().map_or(0, atoi);
        match name {
            "affinity" | LETTER_C => {
                if given.threads == 0 {
                    given.threads = machine.cpu_count as i64;
                }
                match value {
                    Some(list) => given.list = Some(list),
                    None => given.all_cpus = true,
                }
            }
            "duration" => self.duration = value.as_deref().and_then(parse_duration),
            "help" => return Err(GetoptUsage::Help),
            "interval" => given.interval = number(),
            "json" => self.json = value,
            "step" => given.step = number(),
            "threads" => given.threads = number(),
            "quiet" => self.quiet = true,
            "breaktrace" => self.breaktrace = number(),
            "tracemark" => self.tracemark = true,
            _ => {}
        }
        Ok(())
    }

    /// cyclicdeadline's adjustments after its options: the CPU list, the
    /// thread count, each thread's reservation; latscope's refusals where
    /// cyclicdeadline would misbehave.
    fn settle(&mut self, given: Given, machine: DeadlineMachine) -> Result<(), GetoptUsage> {
        let threads = if given.threads == 0 { 1 } else { given.threads };
        let nr_cpus = match &given.list {
            Some(list) => {
                let cpus = cpu_list(list, machine.cpu_count)
                    .ok_or_else(|| GetoptUsage::Fatal(format!("Invalid cpu input '{list}'")))?;
                let count = cpus.len();
                self.cpu_list = Some(cpus);
                count
            }
            None => machine.cpu_count,
        };
        // Some CPUs only: cyclicdeadline's threads run there (how latscope
        // keeps them there without cpusets: measure::cyclicdeadline).
        if nr_cpus < machine.cpu_count {
            self.some_cpus_only = self.cpu_list.clone();
        }
        self.says_all_cpus = !given.all_cpus && nr_cpus == machine.cpu_count;
        if threads < 1 || threads as usize > MAX_THREADS {
            return Err(GetoptUsage::Bad(format!(
                "cyclicdeadline -t {threads}: the thread count must be 1 to {MAX_THREADS}"
            )));
        }
        // More threads than CPUs share 80 % of the CPUs, else 60 % each.
        let percent = if threads as usize > nr_cpus {
            (nr_cpus * 80 / threads as usize) as i64
        } else {
            60
        };
        // cyclicdeadline's unsigned interval and step.
        let as_unsigned = |v: i64| v as u32 as u64;
        let (mut interval, step) = (as_unsigned(given.interval), as_unsigned(given.step));
        for n in 0..threads {
            let runtime = (interval as u32).wrapping_mul(percent as u32) as u64 / 100;
            let reservation = Reservation {
                runtime_ns: runtime * 1000,
                deadline_ns: interval * 1000,
                period_ns: interval * 1000,
            };
            if let Err(why) = reservation.check() {
                return Err(GetoptUsage::Bad(format!(
                    "cyclicdeadline: thread {n}'s deadline of {interval} us (-i plus {n} times -s), with its runtime of {runtime} us, is not one the kernel takes: {why}"
                )));
            }
            self.threads.push(DeadlineThread {
                runtime_us: runtime,
                deadline_us: interval,
            });
            interval = (interval as u32).wrapping_add(step as u32) as u64;
        }
        Ok(())
    }
}

/// cyclicdeadline's CPU list: `N`, `N-M` (M >= N), separated by commas; the
/// CPUs named, once each; None when it is not such a list or names a CPU
/// beyond `cpu_count`. (An empty list names none.)
pub fn cpu_list(text: &str, cpu_count: usize) -> Option<Vec<usize>> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut cpus = Vec::new();
    // atoi, and whether a number was there (atoi's 0 with a '0' first).
    let number = |at: usize| -> Option<(usize, usize)> {
        let rest = &text[at..];
        let n = atoi(rest);
        if n < 0 || (n == 0 && !rest.starts_with('0')) {
            return None;
        }
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        // atoi skips blanks and a sign, which cyclicdeadline then never
        // steps over (it loops for ever on `-a ' 1'`): not a list here.
        if digits == 0 {
            return None;
        }
        Some((n as usize, at + digits))
    };
    while at < bytes.len() {
        let (first, next) = number(at)?;
        at = next;
        let mut last = first;
        if bytes.get(at) == Some(&b'-') {
            let (end, next) = number(at + 1)?;
            if end < first {
                return None;
            }
            last = end;
            at = next;
        }
        cpus.extend(first..=last);
        if bytes.get(at) == Some(&b',') {
            at += 1;
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.iter().any(|&c| c >= cpu_count) {
        return None;
    }
    Some(cpus)
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

    const TWO: DeadlineMachine = DeadlineMachine { cpu_count: 2 };

    fn parse(words: &[&str]) -> Result<DeadlineSettings, GetoptUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        DeadlineSettings::parse(&args, "cyclicdeadline", TWO)
    }

    fn reservations(s: &DeadlineSettings) -> Vec<(u64, u64)> {
        s.threads
            .iter()
            .map(|t| (t.runtime_us, t.deadline_us))
            .collect()
    }

    #[test]
    fn defaults_are_cyclicdeadlines() {
        let s = parse(&[]).unwrap();
        assert_eq!(reservations(&s), vec![(600, 1000)]);
        assert!(s.says_all_cpus);
        assert_eq!(s.duration, None);
        assert!(!s.quiet);
        assert_eq!(s.cmdline, "cyclicdeadline");
    }

    /// Thread n's deadline is -i plus n steps; more threads than CPUs
    /// share 80 % of the CPUs (3 on 2: 53 % each).
    #[test]
    fn thread_layout() {
        let s = parse(&["-t", "2", "-i", "4000", "-s", "1000"]).unwrap();
        assert_eq!(reservations(&s), vec![(2400, 4000), (3000, 5000)]);
        let s = parse(&["-t3", "-i4000"]).unwrap();
        assert_eq!(
            reservations(&s),
            vec![(2120, 4000), (2385, 4500), (2650, 5000)]
        );
        // -a alone: one thread per CPU, on all of them, nothing said.
        let s = parse(&["-a", "-q"]).unwrap_err();
        assert_eq!(s, GetoptUsage::Fatal("Invalid cpu input '-q'".into()));
        let s = parse(&["-q", "-a"]).unwrap();
        assert_eq!(s.threads.len(), 2);
        assert!(!s.says_all_cpus);
        // -t before -a keeps its count; a list of every CPU says so.
        let s = parse(&["-t", "3", "-a", "0-1"]).unwrap();
        assert_eq!(s.threads.len(), 3);
        assert!(s.says_all_cpus);
    }

    #[test]
    fn options_and_spellings() {
        let s = parse(&[
            "--duration=1m",
            "--quiet",
            "--json=/tmp/x",
            "-b",
            "50",
            "--tracemark",
        ])
        .unwrap();
        assert_eq!(s.duration, Some(Duration::from_secs(60)));
        assert!(s.quiet && s.tracemark);
        assert_eq!(s.json.as_deref(), Some("/tmp/x"));
        assert_eq!(s.breaktrace, 50);
        assert_eq!(parse(&["--he"]).unwrap_err(), GetoptUsage::Help);
        assert_eq!(parse(&["-h", "-Z"]).unwrap_err(), GetoptUsage::Help);
        let getopt = |w: &[&str]| match parse(w).unwrap_err() {
            GetoptUsage::Getopt(m) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(getopt(&["-Z", "-h"]), "invalid option -- 'Z'");
        assert_eq!(getopt(&["-i"]), "option requires an argument -- 'i'");
        assert_eq!(getopt(&["-c"]), "option requires an argument -- 'c'");
        assert_eq!(getopt(&["--json"]), "option '--json' requires an argument");
        assert_eq!(
            getopt(&["--t", "2"]),
            "option '--t' is ambiguous; possibilities: '--threads' '--tracemark'"
        );
        assert_eq!(getopt(&["--c=1"]), "unrecognized option '--c=1'");
        // A getopt complaint after a bad list wins: the list is read after.
        assert_eq!(getopt(&["-a", "5", "-Z"]), "invalid option -- 'Z'");
    }

    #[test]
    fn cpu_lists_as_cyclicdeadline_reads_them() {
        assert_eq!(cpu_list("0-1", 2), Some(vec![0, 1]));
        assert_eq!(cpu_list("1,0", 2), Some(vec![0, 1]));
        assert_eq!(cpu_list("1", 2), Some(vec![1]));
        assert_eq!(cpu_list("", 2), Some(vec![]));
        for bad in ["5", "abc", "1-0", "0,5", "1x", "-1", " 1", "+1", "0- 1"] {
            assert_eq!(cpu_list(bad, 2), None, "{bad}");
        }
        let fatal = |w: &[&str]| parse(w).unwrap_err();
        assert_eq!(
            fatal(&["-a5"]),
            GetoptUsage::Fatal("Invalid cpu input '5'".into())
        );
        assert_eq!(
            fatal(&["--affinity=9"]),
            GetoptUsage::Fatal("Invalid cpu input '9'".into())
        );
        assert_eq!(
            fatal(&["-c", "7"]),
            GetoptUsage::Fatal("Invalid cpu input '7'".into())
        );
    }

    /// Some CPUs only: the threads' count and share as cyclicdeadline
    /// reckons them from the list (`-a` without `-t`: one per CPU of the
    /// machine, here 2 on 1 CPU: 80 % / 2 each).
    #[test]
    fn some_cpus_only() {
        let s = parse(&["-a", "1", "-i", "10000"]).unwrap();
        assert_eq!(s.some_cpus_only, Some(vec![1]));
        assert!(!s.says_all_cpus);
        assert_eq!(reservations(&s), vec![(4000, 10000), (4200, 10500)]);
        let s = parse(&["-a", "1", "-t", "3", "-i", "10000"]).unwrap();
        assert_eq!(
            reservations(&s),
            vec![(2600, 10000), (2730, 10500), (2860, 11000)]
        );
        let s = parse(&["-t", "1", "-a", "0", "-i", "10000"]).unwrap();
        assert_eq!(s.some_cpus_only, Some(vec![0]));
        assert_eq!(reservations(&s), vec![(6000, 10000)]);
        // Every CPU, or -a alone: not confined.
        for words in [&["-a", "0-1"][..], &["-a", "1,0"], &["-a"], &[]] {
            assert_eq!(parse(words).unwrap().some_cpus_only, None, "{words:?}");
        }
        // An empty list names no CPU: no runtime is left for the threads.
        assert!(matches!(parse(&["-a", ""]), Err(GetoptUsage::Bad(m)) if m.contains("runtime")));
    }

    #[test]
    fn refusals_where_cyclicdeadline_misbehaves() {
        for words in [
            &["-i", "0"][..],
            &["-i", "-5"],
            &["-i", "abc"],
            &["-i", "1"],
            &["-t", "-1"],
            &["-t", "5000"],
            &["-i", "5000000"],
            &["-t", "2", "-s", "-1000"],
        ] {
            assert!(
                matches!(parse(words), Err(GetoptUsage::Bad(_))),
                "{words:?}"
            );
        }
        // -t 0 is one thread, as cyclicdeadline's.
        assert_eq!(parse(&["-t", "0"]).unwrap().threads.len(), 1);
    }
}
