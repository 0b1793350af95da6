//! The `ptsematest` compatibility name: rt-tests 2.40 ptsematest's command
//! line read as it reads it (GNU getopt_long with ptsematest's table, through
//! settings::getopt) before latscope's own parser (clap, `latscope
//! mutex --format classic`) sees it. What ptsematest answers by itself is
//! answered here in its words: `--help`/`-h` and getopt's complaints (the
//! message on stderr, the usage on stdout, exit 0), a priority outside 0..99,
//! a negative duration or a pair count outside 1..255 (the usage, exit 1), a
//! CPU it does not have (its `ERROR:` line, the usage, exit 1). Everything
//! else is handed on as the options getopt found, so that what getopt skips
//! (words that are not options, everything after `--`) is skipped, and
//! numbers are read as ptsematest reads them (`atoi`: `-i abc` is 0).

use super::actions::GETOPT_OPTIONS as GETOPT_ACTIONS;
use super::getopt::{
    Arg, GetoptOption, GetoptUsage, Own, UsagePart, atoi, getopt_long_into, last_of_each,
    parse_duration, render_usage,
};
use std::sync::LazyLock;

/// `ptsematest --help`, byte for byte (Debian's rt-tests 2.40).
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// Each option (long name, short letter, argument, its lines in the usage
/// text) in getopt's order, which orders an ambiguous abbreviation's
/// possibilities: ptsematest 2.40's table.
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
        "distance",
        Some('d'),
        Arg::Required,
        "\
-d DIST  --distance=DIST   distance of thread intervals in us default=500
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
        "loops",
        Some('l'),
        Arg::Required,
        "\
-l LOOPS --loops=LOOPS     number of loops: default=0(endless)
",
    ),
    GetoptOption::new(
        "prio",
        Some('p'),
        Arg::Required,
        "\
-p PRIO  --prio=PRIO       priority
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
        "smp",
        Some('S'),
        Arg::No,
        "\
-S       --smp             SMP testing: options -a -t and same priority
                           of all threads
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
    GetoptOption::new("help", Some('h'), Arg::No, ""),
];

/// The usage text as the tool prints it: its own words, and each option's
/// lines from `OPTIONS` where the tool lists it.
const LAYOUT: &[UsagePart] = &[
    UsagePart::Text(
        "\
ptsematest V 2.40
Usage:
ptsematest <options>

Function: test POSIX threads mutex latency

Available options:
",
    ),
    UsagePart::Option("affinity"),
    UsagePart::Option("breaktrace"),
    UsagePart::Option("distance"),
    UsagePart::Option("duration"),
    UsagePart::Option("interval"),
    UsagePart::Option("json"),
    UsagePart::Option("loops"),
    UsagePart::Option("prio"),
    UsagePart::Option("quiet"),
    UsagePart::Option("smp"),
    UsagePart::Option("threads"),
];

/// latscope's own options taken under the ptsematest name, spelled in full
/// with a value (`--format modern`: latscope's report instead of
/// ptsematest's lines; `--on-threshold`, `--on-end`: the actions, which
/// latscope's parser checks); getopt's abbreviations stay ptsematest's.
const LATSCOPE_OWN: &[Own] = &[
    Own {
        name: "format",
        needs: "a value: --format classic|modern",
    },
    GETOPT_ACTIONS[0],
    GETOPT_ACTIONS[1],
];

/// ptsematest takes the next word as `-a`'s or `-t`'s value when `atoi`
/// makes a number other than 0 of it (and getopt then reads it again).
fn peek(_option: &str, next: &str) -> bool {
    atoi(next) != 0
}

/// How ptsematest ends without measuring: what it prints and its exit code.
pub use super::getopt::Answer;

fn usage(stderr: String, code: i32) -> Answer {
    Answer {
        stdout: USAGE.to_string(),
        stderr,
        code,
    }
}

/// ptsematest's words (without the program name) -> the words for latscope's
/// parser, or ptsematest's own answer. `program` names the tool in getopt's
/// messages (argv[0] as typed); `cpus` is how many CPUs ptsematest would see.
pub fn rewrite(args: &[String], program: &str, cpus: usize) -> Result<Vec<String>, Answer> {
    let mut found = Vec::new();
    if let Err(e) = getopt_long_into(OPTIONS, LATSCOPE_OWN, args, peek, &mut found) {
        let message = match e {
            GetoptUsage::Getopt(m) => m,
            // Only latscope's own options can fail otherwise: a value
            // is missing (one line, exit 2, as latscope's usage errors).
            other => {
                let m = match other {
                    GetoptUsage::Bad(m) => m,
                    _ => "a latscope option lacks its value".to_string(),
                };
                return Err(Answer {
                    stdout: String::new(),
                    stderr: format!("latscope: error: {m}\n"),
                    code: 2,
                });
            }
        };
        // ptsematest acts on --help as getopt returns it, before the bad word.
        if found.iter().any(|(name, _)| *name == "help") {
            return Err(usage(String::new(), 0));
        }
        return Err(usage(format!("{program}: {message}\n"), 0));
    }
    // ptsematest answers -h at once, before checking any value.
    if found.iter().any(|(name, _)| *name == "help") {
        return Err(usage(String::new(), 0));
    }
    let own: Vec<&str> = GETOPT_ACTIONS.iter().map(|o| o.name).collect();
    let mut words = Vec::new();
    for (name, value) in last_of_each(found, &own) {
        let number = value.as_deref().map(atoi);
        match (name, number) {
            ("prio", Some(p)) if !(0..=99).contains(&p) => return Err(usage(String::new(), 1)),
            ("threads", Some(t)) if !(1..=255).contains(&t) => {
                return Err(usage(String::new(), 1));
            }
            ("affinity", Some(cpu)) if cpu < 0 || cpu >= cpus as i64 => {
                return Err(usage(
                    format!("ERROR: CPU #{cpu} not found, only {cpus} CPUs available\n"),
                    1,
                ));
            }
            ("duration", _) if value.as_deref().is_some_and(|d| atoi(d) < 0) => {
                return Err(usage(String::new(), 1));
            }
            // Read as ptsematest reads them, so whatever it runs with, this
            // runs with: -D by rt-tests' parse_time_string (`abc` is 0, `2x`
            // is 2 s), -b by atoi; 0 is no limit for both, the option left
            // out.
            ("duration", _) => {
                if let Some(d) = value.as_deref().and_then(parse_duration) {
                    words.push(format!("--duration={}", d.as_secs()));
                }
            }
            ("breaktrace", Some(0)) => {}
            ("quiet", _) => words.push("-q".to_string()),
            ("smp", _) => words.push("-S".to_string()),
            (_, None) => words.push(format!("--{name}")),
            // Kept as typed: the JSON file name, latscope's own values.
            ("json" | "format" | "on-threshold" | "on-end", _) => {
                words.push(format!("--{name}={}", value.unwrap_or_default()))
            }
            (_, Some(n)) => words.push(format!("--{name}={n}")),
        }
    }
    Ok(words)
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

    fn rw(words: &[&str]) -> Result<Vec<String>, Answer> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        rewrite(&args, "ptsematest", 2)
    }

    #[test]
    fn getopt_complaints_are_ptsematests() {
        let a = rw(&["-q", "-Z"]).unwrap_err();
        assert_eq!(
            (a.stderr.as_str(), a.code),
            ("ptsematest: invalid option -- 'Z'\n", 0)
        );
        assert_eq!(a.stdout, *USAGE);
        assert_eq!(
            rw(&["--bogus"]).unwrap_err().stderr,
            "ptsematest: unrecognized option '--bogus'\n"
        );
        assert_eq!(
            rw(&["-l"]).unwrap_err().stderr,
            "ptsematest: option requires an argument -- 'l'\n"
        );
        assert_eq!(
            rw(&["--json"]).unwrap_err().stderr,
            "ptsematest: option '--json' requires an argument\n"
        );
        assert_eq!(
            rw(&["--d", "5"]).unwrap_err().stderr,
            "ptsematest: option '--d' is ambiguous; possibilities: '--distance' '--duration'\n"
        );
        assert_eq!(
            rw(&["-t", "-1"]).unwrap_err().stderr,
            "ptsematest: invalid option -- '1'\n"
        );
    }

    #[test]
    fn help_and_refused_values() {
        for words in [&["--help"][..], &["-h"], &["-q", "--he"]] {
            assert_eq!(rw(words), Err(usage(String::new(), 0)), "{words:?}");
        }
        assert_eq!(rw(&["-p", "200"]), Err(usage(String::new(), 1)));
        // -h wins over any value, as ptsematest answers it in its getopt loop.
        assert_eq!(rw(&["-p", "200", "-h"]), Err(usage(String::new(), 0)));
        assert_eq!(rw(&["-p", "-1"]), Err(usage(String::new(), 1)));
        assert_eq!(rw(&["-D", "-1"]), Err(usage(String::new(), 1)));
        assert_eq!(rw(&["-t", "1000"]), Err(usage(String::new(), 1)));
        assert_eq!(
            rw(&["-a", "99"]).unwrap_err().stderr,
            "ERROR: CPU #99 not found, only 2 CPUs available\n"
        );
    }

    #[test]
    fn only_the_value_that_counts_is_checked() {
        // ptsematest keeps the last value of a repeated option and checks
        // it once every option is read (issue 40, item 13).
        assert_eq!(
            rw(&["-l", "-1", "-q", "-l", "5"]).unwrap(),
            vec!["-q", "--loops=5"]
        );
        assert_eq!(rw(&["-p", "200", "-p", "50"]).unwrap(), vec!["--prio=50"]);
        assert_eq!(rw(&["-t", "1000", "-t", "1"]).unwrap(), vec!["--threads=1"]);
        assert_eq!(rw(&["-a", "99", "-a", "1"]).unwrap(), vec!["--affinity=1"]);
        assert_eq!(rw(&["-a", "99", "-a"]).unwrap(), vec!["--affinity"]);
        assert_eq!(rw(&["-D", "-1", "-D", "1"]).unwrap(), vec!["--duration=1"]);
        // The last one counts the other way too.
        assert_eq!(rw(&["-p", "50", "-p", "200"]), Err(usage(String::new(), 1)));
        // latscope's actions are all kept, in order.
        assert_eq!(
            rw(&[
                "--on-end=continue",
                "-l",
                "1",
                "--on-end=continue",
                "-l",
                "2"
            ])
            .unwrap(),
            vec!["--on-end=continue", "--on-end=continue", "--loops=2"]
        );
    }

    #[test]
    fn words_handed_on() {
        assert_eq!(
            rw(&["-qSp90", "-l", "50", "foo", "--", "-Z"]).unwrap(),
            vec!["-q", "-S", "--prio=90", "--loops=50"]
        );
        // atoi: a number's tail and words without one.
        assert_eq!(
            rw(&["-i", "abc", "-l20x"]).unwrap(),
            vec!["--interval=0", "--loops=20"]
        );
        // -t/-a take the next word only when atoi makes a number of it.
        assert_eq!(rw(&["-t", "2"]).unwrap(), vec!["--threads=2"]);
        assert_eq!(rw(&["-t", "0"]).unwrap(), vec!["--threads"]);
        assert_eq!(rw(&["-a", "abc"]).unwrap(), vec!["--affinity"]);
        assert_eq!(rw(&["--affinity=1"]).unwrap(), vec!["--affinity=1"]);
        assert_eq!(
            rw(&["--format", "modern", "-q"]).unwrap(),
            vec!["--format=modern", "-q"]
        );
        assert_eq!(
            rw(&["--json=f.json", "-D", "1m"]).unwrap(),
            vec!["--json=f.json", "--duration=60"]
        );
        // latscope's actions, spelled in full, handed on as typed (commas,
        // blanks and all); latscope's parser checks them.
        assert_eq!(
            rw(&[
                "-b",
                "9",
                "--on-threshold",
                "shell,command=a b,c",
                "--on-end=continue"
            ])
            .unwrap(),
            vec![
                "--breaktrace=9",
                "--on-threshold=shell,command=a b,c",
                "--on-end=continue"
            ]
        );
        // Abbreviated, they are unknown options to ptsematest.
        let a = rw(&["--on-thr", "x"]).unwrap_err();
        assert_eq!(
            (a.stderr.as_str(), a.code),
            ("ptsematest: unrecognized option '--on-thr'\n", 0)
        );
        let a = rw(&["--on-end"]).unwrap_err();
        assert_eq!(
            (a.stderr.as_str(), a.code),
            (
                "latscope: error: --on-end needs an action: --on-end ACTION (docs/guide.md)\n",
                2
            )
        );
    }

    #[test]
    fn duration_and_breaktrace_are_read_as_ptsematest_reads_them() {
        // parse_time_string: the leading number, a unit letter, the rest
        // ignored; atoi for -b; 0 (or no number) is no limit.
        assert_eq!(rw(&["-D", "2x"]).unwrap(), vec!["--duration=2"]);
        assert_eq!(rw(&["-D", "2h"]).unwrap(), vec!["--duration=7200"]);
        assert!(rw(&["-D", "abc", "-q"]).unwrap() == vec!["-q"]);
        assert!(rw(&["-D", "0"]).unwrap().is_empty());
        assert!(rw(&["-b", "abc"]).unwrap().is_empty());
        assert_eq!(rw(&["-b", "50x"]).unwrap(), vec!["--breaktrace=50"]);
    }
}
