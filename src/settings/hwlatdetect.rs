//! The `hwlatdetect` name's words, as rt-tests 2.10's hwlatdetect.py reads
//! them (Python argparse: `--opt VALUE`, `--opt=VALUE`, unique prefixes),
//! with its units (`N[s|m|h|d|w]` seconds, `N|Nus|Nms|Ns` microseconds) and
//! its adjustments (a window below the width halves it into the width, a
//! width above the window doubles it into the window). A bad word is one
//! line and exit 2, never a traceback.

use super::UsageError;

/// What `hwlatdetect --help` prints (argparse's text for its options).
pub const HELP: &str = "usage: hwlatdetect [-h] [--duration DURATION] [--threshold THRESHOLD]
                   [--hardlimit HARDLIMIT] [--window WINDOW] [--width WIDTH]
                   [--report REPORT] [--cpu-list CPULIST] [--debug] [--quiet]
                   [--watch]

options:
  -h, --help            show this help message and exit
  --duration DURATION   total time to test for hardware latency: <n>{smdw}
  --threshold THRESHOLD
                        value above which is considered an hardware latency
  --hardlimit HARDLIMIT
                        value above which the test is considered to fail
  --window WINDOW       time between samples
  --width WIDTH         time to actually measure
  --report REPORT       filename for sample data
  --cpu-list CPULIST    the CPUs for hwlat thread to move across
  --debug               turn on debugging prints
  --quiet               turn off all screen output
  --watch               print sample data to stdout as it arrives
";

/// The kernel hwlat tracer's defaults (us), which hwlatdetect reads back.
pub const DEFAULT_THRESHOLD_US: u64 = 10;
pub const DEFAULT_WINDOW_US: u64 = 1_000_000;
pub const DEFAULT_WIDTH_US: u64 = 500_000;
/// hwlatdetect's own default duration (s).
pub const DEFAULT_DURATION_S: u64 = 120;

/// The options that take a value, and the flags, by their argparse names.
const VALUED: [&str; 7] = [
    "--duration",
    "--threshold",
    "--hardlimit",
    "--window",
    "--width",
    "--report",
    "--cpu-list",
];
const FLAGS: [&str; 4] = ["--debug", "--quiet", "--watch", "--help"];

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HwlatdetectSettings {
    pub duration_s: u64,
    pub threshold_us: u64,
    pub hardlimit_us: u64,
    pub window_us: u64,
    pub width_us: u64,
    pub report: Option<String>,
    /// `--cpu-list` as given (printed as `None` when absent) and its CPUs.
    pub cpu_list: Option<String>,
    pub cpus: Option<Vec<usize>>,
    pub debug: bool,
    pub quiet: bool,
    pub watch: bool,
    pub help: bool,
    /// hwlatdetect's debug lines from reading the options, in its order.
    pub debug_lines: Vec<String>,
}

fn error(message: String) -> UsageError {
    UsageError(message)
}

/// Python's `str.isdigit()` for ASCII text: non-empty, digits only.
fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn int(s: &str, what: &str, whole: &str) -> Result<u64, UsageError> {
    s.parse::<u64>()
        .map_err(|_| UsageError(format!("invalid input for {what}: '{whole}'")))
}

/// hwlatdetect's `seconds()`: N, Ns, Nm, Nh, Nd, Nw.
pub fn seconds(text: &str) -> Result<u64, UsageError> {
    if is_digits(text) {
        return int(text, "seconds", text);
    }
    let chars: Vec<char> = text.chars().collect();
    if chars.len() >= 2 && chars[chars.len() - 2].is_alphabetic() {
        return Err(UsageError(format!(
            "illegal suffix for seconds: '{}'",
            chars[chars.len() - 2]
        )));
    }
    let unit = match chars.last() {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3600,
        Some('d') => 86_400,
        Some('w') => 86_400 * 7,
        _ => return Err(UsageError(format!("invalid input for seconds: '{text}'"))),
    };
    let n = int(&text[..text.len() - 1], "seconds", text)?;
    n.checked_mul(unit)
        .ok_or_else(|| UsageError(format!("invalid input for seconds: '{text}'")))
}

/// hwlatdetect's `microseconds()`: N, Nus, Nms, Ns.
pub fn microseconds(text: &str) -> Result<u64, UsageError> {
    let (number, unit) = if is_digits(text) {
        (text, 1)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1000)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1_000_000)
    } else {
        return Err(UsageError(format!(
            "invalid input for microseconds: '{text}'"
        )));
    };
    // Python's int() would take '+5' or ' 5'; digits only here.
    if !is_digits(number) {
        return Err(UsageError(format!(
            "invalid input for microseconds: '{text}'"
        )));
    }
    int(number, "microseconds", text)?
        .checked_mul(unit)
        .ok_or_else(|| UsageError(format!("invalid input for microseconds: '{text}'")))
}

/// `--cpu-list`: `a,b-c` as hwlatdetect splits it.
pub fn cpu_list(text: &str) -> Result<Vec<usize>, UsageError> {
    let bad = || UsageError(format!("invalid --cpu-list '{text}': give CPUs as 0,2-3"));
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let (l, r) = match part.split_once('-') {
            Some((l, r)) => (l, r),
            None => (part, part),
        };
        let (l, r): (usize, usize) = (l.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?);
        if l > r || r >= 4096 {
            return Err(bad());
        }
        cpus.extend(l..=r);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The option `word` names: exact, else the one it is a unique prefix of.
fn option_named(word: &str) -> Result<&'static str, UsageError> {
    let all = VALUED.iter().chain(FLAGS.iter());
    if let Some(exact) = all.clone().find(|o| **o == word) {
        return Ok(exact);
    }
    let matches: Vec<&str> = all.copied().filter(|o| o.starts_with(word)).collect();
    match matches.as_slice() {
        [one] if word.len() > 2 => Ok(one),
        [] | [_] => Err(error(format!("unrecognized arguments: {word}"))),
        many => Err(error(format!(
            "ambiguous option: {word} could match {}",
            many.join(", ")
        ))),
    }
}

/// The words as argparse reads them: (option, value) pairs in order.
fn words(args: &[String]) -> Result<Vec<(&'static str, Option<String>)>, UsageError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if word == "-h" {
            out.push(("--help", None));
            continue;
        }
        if !word.starts_with("--") {
            return Err(error(format!("unrecognized arguments: {word}")));
        }
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let option = option_named(name)?;
        if FLAGS.contains(&option) {
            if inline.is_some() {
                return Err(error(format!(
                    "argument {option}: ignored explicit argument '{}'",
                    inline.unwrap_or_default()
                )));
            }
            out.push((option, None));
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => match args.get(i) {
                Some(v) if !v.starts_with("--") => {
                    i += 1;
                    v.clone()
                }
                _ => return Err(error(format!("argument {option}: expected one argument"))),
            },
        };
        out.push((option, Some(value)));
    }
    Ok(out)
}

impl HwlatdetectSettings {
    /// Reads hwlatdetect's words, applying its defaults and adjustments.
    pub fn parse(args: &[String]) -> Result<HwlatdetectSettings, UsageError> {
        let mut s = HwlatdetectSettings {
            threshold_us: DEFAULT_THRESHOLD_US,
            window_us: DEFAULT_WINDOW_US,
            width_us: DEFAULT_WIDTH_US,
            duration_s: DEFAULT_DURATION_S,
            ..Default::default()
        };
        // argparse keeps the last value of a repeated option.
        let mut given: std::collections::BTreeMap<&str, String> = Default::default();
        for (option, value) in words(args)? {
            match (option, value) {
                ("--debug", _) => s.debug = true,
                ("--quiet", _) => s.quiet = true,
                ("--watch", _) => s.watch = true,
                ("--help", _) => s.help = true,
                (o, Some(v)) => {
                    given.insert(o, v);
                }
                _ => {}
            }
        }
        if s.help {
            return Ok(s);
        }
        // --quiet wins over --debug, as in hwlatdetect.
        let debugging = s.debug && !s.quiet;
        let mut debug = |line: String| {
            if debugging {
                s.debug_lines.push(line);
            }
        };
        debug("debugging prints turned on".into());
        // An empty value is Python-false: the default stays.
        let value = |o: &str| given.get(o).filter(|v| !v.is_empty()).cloned();
        if let Some(t) = value("--threshold") {
            s.threshold_us = microseconds(&t)?;
            debug(format!("threshold set to {}us", s.threshold_us));
        }
        s.hardlimit_us = match value("--hardlimit") {
            Some(h) => microseconds(&h)?,
            None => s.threshold_us,
        };
        debug(format!("hardlimit set to {}us", s.hardlimit_us));
        if let Some(w) = value("--window") {
            let w = microseconds(&w)?;
            if w < s.width_us {
                debug(format!(
                    "shrinking width to {} for new window of {w}",
                    w / 2
                ));
                s.width_us = w / 2;
            }
            debug(format!("window parameter = {w}"));
            s.window_us = w;
            debug(format!("window for sampling set to {w}us"));
        }
        if let Some(w) = value("--width") {
            let w = microseconds(&w)?;
            if w > s.window_us {
                debug(format!("widening window to {} for new width of {w}", w * 2));
                s.window_us = w * 2;
            }
            debug(format!("width parameter = {w}"));
            s.width_us = w;
            debug(format!("sample width set to {w}us"));
        }
        if let Some(d) = value("--duration") {
            s.duration_s = seconds(&d)?;
        }
        debug(format!("test duration is {}s", s.duration_s));
        s.report = value("--report");
        s.cpu_list = value("--cpu-list");
        if let Some(list) = &s.cpu_list {
            let cpus = cpu_list(list)?;
            let mask = cpus.iter().fold(0u128, |m, &c| m | (1u128 << (c % 128)));
            debug(format!("set tracing_cpumask to {mask:x}"));
            s.cpus = Some(cpus);
        }
        if s.width_us == 0 {
            return Err(UsageError("the width must be above 0 us".into()));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<HwlatdetectSettings, UsageError> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        HwlatdetectSettings::parse(&words)
    }

    #[test]
    fn units_are_read_as_hwlatdetect_reads_them() {
        assert_eq!(seconds("90").unwrap(), 90);
        assert_eq!(seconds("15s").unwrap(), 15);
        assert_eq!(seconds("2m").unwrap(), 120);
        assert_eq!(seconds("1h").unwrap(), 3600);
        assert_eq!(seconds("1d").unwrap(), 86_400);
        assert_eq!(seconds("1w").unwrap(), 604_800);
        assert_eq!(
            seconds("5ms").unwrap_err().0,
            "illegal suffix for seconds: 'm'"
        );
        assert_eq!(
            seconds("10x").unwrap_err().0,
            "invalid input for seconds: '10x'"
        );
        assert_eq!(
            seconds("s").unwrap_err().0,
            "invalid input for seconds: 's'"
        );
        assert_eq!(microseconds("20").unwrap(), 20);
        assert_eq!(microseconds("20us").unwrap(), 20);
        assert_eq!(microseconds("10ms").unwrap(), 10_000);
        assert_eq!(microseconds("2s").unwrap(), 2_000_000);
        assert_eq!(
            microseconds("1.5ms").unwrap_err().0,
            "invalid input for microseconds: '1.5ms'"
        );
        assert_eq!(
            microseconds("ten").unwrap_err().0,
            "invalid input for microseconds: 'ten'"
        );
        assert_eq!(cpu_list("0,2-3").unwrap(), [0, 2, 3]);
        assert!(cpu_list("3-1").is_err() && cpu_list("a").is_err() && cpu_list("").is_err());
    }

    #[test]
    fn defaults_are_the_tracers_and_hardlimit_follows_the_threshold() {
        let s = parse(&[]).unwrap();
        assert_eq!(
            (
                s.duration_s,
                s.threshold_us,
                s.hardlimit_us,
                s.window_us,
                s.width_us
            ),
            (120, 10, 10, 1_000_000, 500_000)
        );
        let s = parse(&["--threshold=20", "--duration", "15s"]).unwrap();
        assert_eq!((s.threshold_us, s.hardlimit_us, s.duration_s), (20, 20, 15));
        assert_eq!(parse(&["--hardlimit", "50us"]).unwrap().hardlimit_us, 50);
    }

    #[test]
    fn a_small_window_halves_into_the_width_and_a_large_width_doubles_the_window() {
        let s = parse(&["--window", "100000"]).unwrap();
        assert_eq!((s.window_us, s.width_us), (100_000, 50_000));
        let s = parse(&["--width", "2s"]).unwrap();
        assert_eq!((s.window_us, s.width_us), (4_000_000, 2_000_000));
        // OpenShift's: window 10 s, width 950 ms.
        let s = parse(&["--window", "10000000us", "--width", "950000us"]).unwrap();
        assert_eq!((s.window_us, s.width_us), (10_000_000, 950_000));
    }

    #[test]
    fn debug_lines_follow_hwlatdetects_order_and_quiet_silences_them() {
        let s = parse(&["--debug", "--window", "100000", "--cpu-list", "0-1"]).unwrap();
        assert_eq!(
            s.debug_lines,
            [
                "debugging prints turned on",
                "hardlimit set to 10us",
                "shrinking width to 50000 for new window of 100000",
                "window parameter = 100000",
                "window for sampling set to 100000us",
                "test duration is 120s",
                "set tracing_cpumask to 3",
            ]
        );
        assert!(
            parse(&["--debug", "--quiet"])
                .unwrap()
                .debug_lines
                .is_empty()
        );
    }

    #[test]
    fn bad_words_are_argparses_one_line() {
        let e = |w: &[&str]| parse(w).unwrap_err().0;
        assert_eq!(e(&["--bogus"]), "unrecognized arguments: --bogus");
        assert_eq!(e(&["x"]), "unrecognized arguments: x");
        assert_eq!(
            e(&["--duration"]),
            "argument --duration: expected one argument"
        );
        assert_eq!(
            e(&["--d", "5"]),
            "ambiguous option: --d could match --duration, --debug"
        );
        assert_eq!(parse(&["--dur", "5"]).unwrap().duration_s, 5);
        assert_eq!(
            e(&["--threshold", "abc"]),
            "invalid input for microseconds: 'abc'"
        );
        assert_eq!(
            e(&["--hardlimit", "1x"]),
            "invalid input for microseconds: '1x'"
        );
        assert_eq!(
            e(&["--window", "-5"]),
            "invalid input for microseconds: '-5'"
        );
        assert_eq!(
            e(&["--width", "5min"]),
            "invalid input for microseconds: '5min'"
        );
        assert_eq!(e(&["--duration", "1ms"]), "illegal suffix for seconds: 'm'");
        assert!(e(&["--cpu-list", "1-"]).contains("--cpu-list"));
        assert!(parse(&["-h"]).unwrap().help);
    }
}
