//! `latscope rt-migrate-test` / the `rt-migrate-test` compat name: rt-tests
//! 2.40 rt-migrate-test's command line, read as it reads it (GNU
//! getopt_long with its table `cD:ehl:m:p:qr:s:` through settings::getopt,
//! numbers by `atoi`, `-D` by `parse_time_string`, the task count as the
//! first word that is not an option), its help in its words.
//!
//! Its quirks are kept (docs/compat.md): `-r` and `-s` are read and not
//! used (every task busy-loops 20 ms, the main thread sleeps 100 ms), and
//! the run ends after `-l` loops whatever `-D` says (`-D` only cuts it
//! short, then the exit code is 1). latscope's own `--run-ms MS` and
//! `--sleep-ms MS` do what `-r` and `-s` say.

use super::getopt::{
    Arg, GetoptOption, GetoptUsage, Own, UsagePart, atoi, getopt_long_into, parse_duration,
    render_usage,
};
use std::sync::LazyLock;
use std::time::Duration;

/// rt-tests 2.40's `rt-migrate-test --help`, byte for byte.
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// More tasks than this are refused (exit 2): each one is a real-time
/// thread that busy-loops.
pub const MAX_TASKS: i64 = 1024;

const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "check",
        Some('c'),
        Arg::No,
        "-c       --check           Stop if lower prio task is quicker than higher (off)\n",
    ),
    GetoptOption::new(
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D TIME  --duration=TIME   Specify a length for the test run.
                           Append 'm', 'h', or 'd' to specify minutes, hours or
                           days.
",
    ),
    GetoptOption::new(
        "equal",
        Some('e'),
        Arg::No,
        "-e       --equal           Use equal prio for #CPU-1 tasks (requires > 2 CPUS)\n",
    ),
    GetoptOption::new(
        "help",
        Some('h'),
        Arg::No,
        "-h       --help            Print this help message\n",
    ),
    GetoptOption::new(
        "json",
        None,
        Arg::Required,
        "         --json=FILENAME   write final results into FILENAME, JSON formatted\n",
    ),
    GetoptOption::new(
        "loops",
        Some('l'),
        Arg::Required,
        "-l LOOPS --loops=LOOPS     Number of iterations to run (50)\n",
    ),
    GetoptOption::new(
        "maxerr",
        Some('m'),
        Arg::Required,
        "-m TIME  --maxerr=TIME     Max allowed error (microsecs)\n",
    ),
    GetoptOption::new(
        "prio",
        Some('p'),
        Arg::Required,
        "-p PRIO  --prio=PRIO       base priority to start RT tasks with (2)\n",
    ),
    GetoptOption::new(
        "quiet",
        Some('q'),
        Arg::No,
        "-q       --quiet           print a summary only on exit\n",
    ),
    GetoptOption::new(
        "run-time",
        Some('r'),
        Arg::Required,
        "-r TIME  --run-time=TIME   Run time (ms) to busy loop the threads (20)\n",
    ),
    GetoptOption::new(
        "sleep-time",
        Some('s'),
        Arg::Required,
        "-s TIME  --sleep-time=TIME Sleep time (ms) between intervals (100)\n",
    ),
];

const LAYOUT: &[UsagePart] = &[
    UsagePart::Text("rt-migrate-test 2.40\nUsage:\nrt-migrate-test <options> [NR_TASKS]\n\n"),
    UsagePart::Option("check"),
    UsagePart::Option("duration"),
    UsagePart::Option("equal"),
    UsagePart::Option("help"),
    UsagePart::Option("json"),
    UsagePart::Option("loops"),
    UsagePart::Option("maxerr"),
    UsagePart::Option("prio"),
    UsagePart::Option("quiet"),
    UsagePart::Option("run-time"),
    UsagePart::Option("sleep-time"),
    UsagePart::Text("\n  () above are defaults \n"),
];

/// latscope's own spellings of what `-r` and `-s` promise (full names only).
const OWN: &[Own] = &[
    Own {
        name: "run-ms",
        needs: "milliseconds: --run-ms MS",
    },
    Own {
        name: "sleep-ms",
        needs: "milliseconds: --sleep-ms MS",
    },
];

/// Everything the options set, with rt-migrate-test's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateSettings {
    /// Tasks (default: CPUs + 1); task i runs at `prio` + i.
    pub tasks: usize,
    pub prio: i32,
    /// `-e`: every task but the first and the last at `prio` + 1.
    pub equal: bool,
    pub check: bool,
    /// `-m` in ns (default 1 ms).
    pub max_err_ns: u64,
    pub loops: usize,
    /// `-D`: the run stops early (exit 1) when it passes first.
    pub duration: Option<Duration>,
    pub quiet: bool,
    pub json: Option<String>,
    /// Each task's busy loop per round (20 ms; `--run-ms`).
    pub run: Duration,
    /// The main thread's sleeps per round (100 ms; `--sleep-ms`).
    pub sleep: Duration,
    pub cmdline: String,
}

impl MigrateSettings {
    /// rt-migrate-test's `calc_prio`.
    pub fn prio_of(&self, id: usize) -> i32 {
        let p = if self.equal && id != 0 && id + 1 < self.tasks {
            1
        } else {
            id as i32
        };
        p + self.prio
    }

    /// Parses rt-migrate-test's arguments; `cpus` is what its `count_cpus`
    /// finds (the processors of /proc/cpuinfo).
    pub fn parse(
        args: &[String],
        program: &str,
        cpus: usize,
    ) -> Result<MigrateSettings, GetoptUsage> {
        let mut found = Vec::new();
        getopt_long_into(OPTIONS, OWN, args, |_, _| false, &mut found)?;
        let mut s = MigrateSettings {
            tasks: cpus + 1,
            prio: 2,
            equal: false,
            check: false,
            max_err_ns: 1_000_000,
            loops: 50,
            duration: None,
            quiet: false,
            json: None,
            run: Duration::from_millis(20),
            sleep: Duration::from_millis(100),
            cmdline: std::iter::once(program.to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        };
        for (name, value) in found {
            let v = value.as_deref().unwrap_or("");
            let ms = || Duration::from_millis(u64::try_from(atoi(v)).unwrap_or(0));
            match name {
                "check" => s.check = true,
                "duration" => s.duration = parse_duration(v),
                "equal" => s.equal = true,
                "help" => return Err(GetoptUsage::Help),
                "json" => s.json = Some(v.to_string()).filter(|j| !j.is_empty()),
                "loops" => s.loops = bounded("-l", atoi(v), 1, 1_000_000)? as usize,
                "maxerr" => s.max_err_ns = u64::try_from(atoi(v)).unwrap_or(0) * 1000,
                "prio" => s.prio = atoi(v) as i32,
                "quiet" => s.quiet = true,
                "run-ms" => s.run = ms(),
                "sleep-ms" => s.sleep = ms(),
                // Read and not used, as in rt-migrate-test.
                _ => {}
            }
        }
        if let Some(word) = first_operand(args) {
            s.tasks = bounded("NR_TASKS", atoi(&word), 1, MAX_TASKS)? as usize;
        }
        if s.run.is_zero() || s.sleep.is_zero() {
            return Err(GetoptUsage::Bad(
                "--run-ms and --sleep-ms must be at least 1".into(),
            ));
        }
        Ok(s)
    }
}

/// A count rt-migrate-test would take and then misbehave on (no loop, a
/// negative allocation): refused with one line (exit 2).
fn bounded(what: &str, n: i64, low: i64, high: i64) -> Result<i64, GetoptUsage> {
    if (low..=high).contains(&n) {
        Ok(n)
    } else {
        Err(GetoptUsage::Bad(format!(
            "{what} {n}: must be between {low} and {high}"
        )))
    }
}

/// The first word getopt leaves (its `argv[optind]` after permuting): not
/// an option, not an option's value; every word after `--`.
fn first_operand(args: &[String]) -> Option<String> {
    let takes_value = |long: &str| {
        OPTIONS
            .iter()
            .any(|o| o.arg == Arg::Required && o.long.starts_with(long))
            && !OPTIONS.iter().any(|o| o.arg == Arg::No && o.long == long)
            || OWN.iter().any(|o| o.name == long)
    };
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if w == "--" {
            return words.next().cloned();
        }
        if let Some(long) = w.strip_prefix("--") {
            if !long.contains('=') && takes_value(long) {
                words.next();
            }
            continue;
        }
        let Some(cluster) = w.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Some(w.clone());
        };
        for (k, letter) in cluster.char_indices() {
            let needs = OPTIONS
                .iter()
                .any(|o| o.short == Some(letter) && o.arg == Arg::Required);
            if needs {
                if k + letter.len_utf8() == cluster.len() {
                    words.next();
                }
                break;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<MigrateSettings, GetoptUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        MigrateSettings::parse(&args, "rt-migrate-test", 2)
    }

    #[test]
    fn the_usage_layout_prints_every_listed_option_once() {
        assert_eq!(
            super::super::getopt::check_usage_layout(OPTIONS, LAYOUT),
            Vec::<String>::new()
        );
    }

    #[test]
    fn defaults_are_rt_migrate_tests() {
        let s = parse(&[]).unwrap();
        assert_eq!(
            (s.tasks, s.prio, s.loops, s.max_err_ns),
            (3, 2, 50, 1_000_000)
        );
        assert_eq!(
            (s.run, s.sleep),
            (Duration::from_millis(20), Duration::from_millis(100))
        );
        assert_eq!((s.prio_of(0), s.prio_of(2)), (2, 4));
    }

    #[test]
    fn options_tasks_and_quirks() {
        let s = parse(&["-q", "-p", "50", "-D", "1m", "-c", "--json=f", "-l5", "4"]).unwrap();
        assert_eq!((s.tasks, s.prio, s.loops), (4, 50, 5));
        assert_eq!(s.duration, Some(Duration::from_secs(60)));
        assert!(s.check && s.quiet);
        // -r and -s are read and ignored; --run-ms and --sleep-ms are not.
        let s = parse(&["-r", "5", "-s", "7", "2"]).unwrap();
        assert_eq!(
            (s.run, s.sleep, s.tasks),
            (Duration::from_millis(20), Duration::from_millis(100), 2)
        );
        let s = parse(&["--run-ms", "5", "--sleep-ms=7", "-m", "3"]).unwrap();
        assert_eq!(
            (s.run, s.sleep),
            (Duration::from_millis(5), Duration::from_millis(7))
        );
        assert_eq!(s.max_err_ns, 3000);
        assert_eq!(parse(&["--loops", "3", "--", "5"]).unwrap().tasks, 5);
        assert_eq!(parse(&["-e", "5"]).unwrap().prio_of(3), 3);
    }

    #[test]
    fn refusals() {
        assert_eq!(parse(&["-h"]), Err(GetoptUsage::Help));
        assert_eq!(
            parse(&["-Z"]),
            Err(GetoptUsage::Getopt("invalid option -- 'Z'".into()))
        );
        for words in [&["0"][..], &["-l", "0"], &["--run-ms", "0"]] {
            assert!(
                matches!(parse(words), Err(GetoptUsage::Bad(_))),
                "{words:?}"
            );
        }
    }
}
