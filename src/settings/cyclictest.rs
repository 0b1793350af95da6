//! `latscope cyclictest` / the `cyclictest` compat name: rt-tests 2.x's
//! command line, parsed the way GNU getopt_long parses it (clustered short
//! options `-qm`, attached values `-p90`, optional values `-t`/`-t4`/`-t 4`,
//! `--opt=val`/`--opt val`, unique long-option prefixes, `--` ends options).
//! clap cannot express cyclictest's optional arguments, so this is its own
//! small parser; scripts depend on exactly these spellings.

use std::time::Duration;

/// Everything the supported options set, with cyclictest's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclicSettings {
    /// Number of measuring threads.
    pub threads: usize,
    /// `-a`: the CPUs threads are pinned to (round robin); None = not pinned.
    pub affinity: Option<Vec<usize>>,
    /// `-S`: one thread per CPU, each pinned to its own.
    pub smp: bool,
    pub priority: i32,
    pub interval_us: u64,
    pub distance_us: u64,
    /// `-l`: loops per thread; 0 = endless.
    pub loops: u64,
    /// `-D`: stop after this long.
    pub duration: Option<Duration>,
    pub mlockall: bool,
    pub quiet: bool,
    pub nsecs: bool,
    /// `-h`/`--histogram`: histogram cells (us), 0 = none.
    pub histogram: usize,
    /// `--json=FILE`.
    pub json: Option<String>,
    /// `--laptop`: leave `/dev/cpu_dma_latency` alone.
    pub laptop: bool,
    /// The command line as typed, for the JSON `cmdline:` key.
    pub cmdline: String,
}

/// How parsing ended when it did not give settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CyclicUsage {
    /// getopt's own complaint (`invalid option -- 'Z'`): cyclictest prints
    /// it on stderr, then its usage on stdout.
    Getopt(String),
    /// A value cyclictest would refuse, or an option latscope does not run yet.
    Bad(String),
    /// `--help`: the usage on stdout, exit 0, as cyclictest.
    Help,
}

/// Whether an option takes a value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arg {
    No,
    Required,
    /// Attached (`-t4`, `--threads=4`) or, as cyclictest does by hand, the
    /// next word when it looks like a value.
    Optional,
}

/// (long name, short letter, argument).
const OPTIONS: &[(&str, Option<char>, Arg)] = &[
    ("affinity", Some('a'), Arg::Optional),
    ("distance", Some('d'), Arg::Required),
    ("duration", Some('D'), Arg::Required),
    ("help", None, Arg::No),
    ("histogram", Some('h'), Arg::Required),
    ("interval", Some('i'), Arg::Required),
    ("json", None, Arg::Required),
    ("laptop", None, Arg::No),
    ("loops", Some('l'), Arg::Required),
    ("mlockall", Some('m'), Arg::No),
    ("nsecs", Some('N'), Arg::No),
    ("priority", Some('p'), Arg::Required),
    ("quiet", Some('q'), Arg::No),
    ("smp", Some('S'), Arg::No),
    ("threads", Some('t'), Arg::Optional),
    ("unbuffered", Some('u'), Arg::No),
];

/// Options of rt-tests' cyclictest that this slice does not run yet: refused
/// with one clear line rather than silently ignored.
const NOT_YET: &[(&str, Option<char>)] = &[
    ("", Some('A')),
    ("breaktrace", Some('b')),
    ("clock", Some('c')),
    ("fifo", Some('F')),
    ("histofall", Some('H')),
    ("histfile", None),
    ("latency", None),
    ("refresh_on_max", Some('M')),
    ("mainaffinity", None),
    ("oscope", Some('o')),
    ("policy", None),
    ("priospread", None),
    ("relative", Some('r')),
    ("resolution", Some('R')),
    ("system", Some('s')),
    ("smi", None),
    ("spike", None),
    ("spike-nodes", None),
    ("tracemark", None),
    ("verbose", Some('v')),
    ("posix_timers", Some('x')),
    ("default-system", None),
    ("dbg_cyclictest", None),
];

fn not_yet(option: &str) -> CyclicUsage {
    CyclicUsage::Bad(format!(
        "option {option} is not supported by latscope's cyclictest yet"
    ))
}

/// Splits raw arguments into (option name, value) pairs, GNU style.
fn tokenize(args: &[String]) -> Result<Vec<(&'static str, Option<String>)>, CyclicUsage> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = OPTIONS.iter().find(|o| o.0 == name);
            let candidates: Vec<_> = OPTIONS.iter().filter(|o| o.0.starts_with(name)).collect();
            let found = match (exact, candidates.as_slice()) {
                (Some(o), _) => o,
                (None, [o]) => o,
                (None, []) => {
                    if NOT_YET
                        .iter()
                        .any(|o| !o.0.is_empty() && o.0.starts_with(name))
                    {
                        return Err(not_yet(&format!("--{name}")));
                    }
                    return Err(CyclicUsage::Getopt(format!("unrecognized option '{word}'")));
                }
                (None, _) => {
                    return Err(CyclicUsage::Getopt(format!(
                        "option '--{name}' is ambiguous"
                    )));
                }
            };
            let value = match (found.2, attached) {
                (Arg::No, Some(_)) => {
                    return Err(CyclicUsage::Getopt(format!(
                        "option '--{}' doesn't allow an argument",
                        found.0
                    )));
                }
                (Arg::No, None) => None,
                (Arg::Required, Some(v)) => Some(v),
                (Arg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return Err(CyclicUsage::Getopt(format!(
                            "option '--{}' requires an argument",
                            found.0
                        )));
                    }
                },
                (Arg::Optional, Some(v)) => Some(v),
                (Arg::Optional, None) => take_optional(args, &mut i),
            };
            out.push((found.0, value));
            continue;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|c| !c.is_empty()) else {
            // cyclictest ignores words that are not options.
            continue;
        };
        let chars: Vec<char> = cluster.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let letter = chars[k];
            k += 1;
            let Some(found) = OPTIONS.iter().find(|o| o.1 == Some(letter)) else {
                if NOT_YET.iter().any(|o| o.1 == Some(letter)) {
                    return Err(not_yet(&format!("-{letter}")));
                }
                return Err(CyclicUsage::Getopt(format!("invalid option -- '{letter}'")));
            };
            let rest: String = chars[k..].iter().collect();
            let value = match found.2 {
                Arg::No => None,
                Arg::Required if !rest.is_empty() => {
                    k = chars.len();
                    Some(rest)
                }
                Arg::Required => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return Err(CyclicUsage::Getopt(format!(
                            "option requires an argument -- '{letter}'"
                        )));
                    }
                },
                Arg::Optional if !rest.is_empty() => {
                    k = chars.len();
                    Some(rest)
                }
                Arg::Optional => take_optional(args, &mut i),
            };
            out.push((found.0, value));
        }
    }
    Ok(out)
}

/// cyclictest's hand-made optional argument: the next word is taken when it
/// starts with a digit (or `!` for an inverted CPU list).
fn take_optional(args: &[String], i: &mut usize) -> Option<String> {
    let next = args.get(*i)?;
    if next.starts_with(|c: char| c.is_ascii_digit() || c == '!') {
        *i += 1;
        Some(next.clone())
    } else {
        None
    }
}

fn number<T: std::str::FromStr>(option: &str, value: &str) -> Result<T, CyclicUsage> {
    value
        .trim()
        .parse()
        .map_err(|_| CyclicUsage::Bad(format!("invalid value for {option}: '{value}'")))
}

/// `-D`'s value: seconds, or with an s/m/h/d suffix (either case).
pub fn parse_duration(value: &str) -> Option<Duration> {
    let value = value.trim();
    let (digits, unit) = match value.char_indices().last()? {
        (at, c) if c.is_ascii_alphabetic() => (&value[..at], c.to_ascii_lowercase()),
        _ => (value, 's'),
    };
    let n: u64 = digits.parse().ok()?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// A CPU list as cyclictest takes it: `2`, `0-3`, `0,2-3`, `!0` (all but).
pub fn parse_cpu_list(value: &str, online: &[usize]) -> Option<Vec<usize>> {
    let (invert, list) = match value.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse().ok()?),
            None => {
                let n = part.trim().parse::<usize>().ok()?;
                (n, n)
            }
        };
        if lo > hi || hi >= 4096 {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    if invert {
        cpus = online
            .iter()
            .copied()
            .filter(|c| !cpus.contains(c))
            .collect();
    }
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then_some(cpus)
}

impl CyclicSettings {
    /// Parses cyclictest's arguments (without the program name). `online` is
    /// the CPUs this process may run on: `-t` without a number, `-a` without a
    /// list and `-S` use it.
    pub fn parse(args: &[String], online: &[usize]) -> Result<CyclicSettings, CyclicUsage> {
        let mut s = CyclicSettings {
            threads: 1,
            affinity: None,
            smp: false,
            priority: 0,
            interval_us: 1000,
            distance_us: 500,
            loops: 0,
            duration: None,
            mlockall: false,
            quiet: false,
            nsecs: false,
            histogram: 0,
            json: None,
            laptop: false,
            cmdline: std::iter::once("cyclictest".to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let all = online.len().max(1);
        let mut threads_given = false;
        for (name, value) in tokenize(args)? {
            let v = value.as_deref();
            match name {
                "affinity" => {
                    s.affinity = Some(match v {
                        Some(list) => parse_cpu_list(list, online).ok_or_else(|| {
                            CyclicUsage::Bad(format!("invalid CPU list for -a: '{list}'"))
                        })?,
                        None => online.to_vec(),
                    });
                }
                "distance" => s.distance_us = number("-d", v.unwrap_or_default())?,
                "duration" => {
                    let text = v.unwrap_or_default();
                    s.duration = Some(parse_duration(text).ok_or_else(|| {
                        CyclicUsage::Bad(format!("invalid value for -D: '{text}'"))
                    })?);
                }
                "help" => return Err(CyclicUsage::Help),
                "histogram" => s.histogram = number("-h", v.unwrap_or_default())?,
                "interval" => s.interval_us = number("-i", v.unwrap_or_default())?,
                "json" => s.json = value,
                "laptop" => s.laptop = true,
                "loops" => s.loops = number("-l", v.unwrap_or_default())?,
                "mlockall" => s.mlockall = true,
                "nsecs" => s.nsecs = true,
                "priority" => s.priority = number("-p", v.unwrap_or_default())?,
                "quiet" => s.quiet = true,
                "smp" => s.smp = true,
                "threads" => {
                    threads_given = true;
                    s.threads = match v {
                        Some(n) => number("-t", n)?,
                        None => all,
                    };
                }
                // Output is written whole lines at a time already.
                "unbuffered" => {}
                _ => unreachable!("every option of OPTIONS is handled"),
            }
        }
        if s.smp {
            // -S: -a -t (one thread per CPU, each on its own), same priority.
            s.threads = all;
            s.affinity = Some(online.to_vec());
        } else if !threads_given {
            s.threads = 1;
        }
        if s.threads == 0 || s.threads > 4096 {
            return Err(CyclicUsage::Bad(format!(
                "invalid number of threads: {}",
                s.threads
            )));
        }
        if s.interval_us == 0 {
            return Err(CyclicUsage::Bad("invalid interval: 0".to_string()));
        }
        if !(0..=99).contains(&s.priority) {
            return Err(CyclicUsage::Bad(format!(
                "invalid priority: {} (0 to 99)",
                s.priority
            )));
        }
        if s.histogram > 10_000_000 {
            return Err(CyclicUsage::Bad(format!(
                "invalid histogram size: {}",
                s.histogram
            )));
        }
        Ok(s)
    }

    /// Thread `i`'s interval: `-i + i * -d`, in us.
    pub fn interval_of(&self, i: usize) -> u64 {
        self.interval_us + i as u64 * self.distance_us
    }

    /// Thread `i`'s CPU in the JSON: its own when pinned, otherwise
    /// cyclictest's default assignment (thread i on CPU i modulo the CPUs).
    pub fn json_cpu_of(&self, i: usize, online: &[usize]) -> usize {
        self.cpu_of(i)
            .unwrap_or_else(|| online.get(i % online.len().max(1)).copied().unwrap_or(0))
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

    fn parse(words: &[&str]) -> Result<CyclicSettings, CyclicUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        CyclicSettings::parse(&args, &[0, 1])
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

    #[test]
    fn long_options_and_prefixes() {
        let s = parse(&[
            "--interval",
            "200",
            "--dist=10",
            "--json=/tmp/x",
            "--hist",
            "30",
        ])
        .unwrap();
        assert_eq!((s.interval_us, s.distance_us, s.histogram), (200, 10, 30));
        assert_eq!(s.json.as_deref(), Some("/tmp/x"));
        assert_eq!(s.interval_of(2), 220);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86400)));
        assert_eq!(parse_duration("1x"), None);
    }

    #[test]
    fn bad_input() {
        assert_eq!(
            parse(&["-Z"]),
            Err(CyclicUsage::Getopt("invalid option -- 'Z'".into()))
        );
        assert_eq!(
            parse(&["-p"]),
            Err(CyclicUsage::Getopt(
                "option requires an argument -- 'p'".into()
            ))
        );
        assert!(matches!(parse(&["-b", "100"]), Err(CyclicUsage::Bad(_))));
        assert!(matches!(parse(&["-i", "x"]), Err(CyclicUsage::Bad(_))));
        assert!(matches!(parse(&["--bogus"]), Err(CyclicUsage::Getopt(_))));
        assert_eq!(parse(&["-q", "--help"]), Err(CyclicUsage::Help));
    }

    proptest! {
        /// Clustering is the same as separate letters, and attached values
        /// are the same as the next word.
        #[test]
        fn clustering_is_equivalent(q in any::<bool>(), m in any::<bool>(), n in any::<bool>(),
                                    p in 0i32..100, l in 1u64..1_000_000) {
            let mut letters = String::new();
            let mut separate: Vec<String> = Vec::new();
            for (on, c) in [(q, 'q'), (m, 'm'), (n, 'N')] {
                if on { letters.push(c); separate.push(format!("-{c}")); }
            }
            let clustered = vec![format!("-{letters}p{p}"), "-l".into(), l.to_string()];
            separate.extend(["-p".to_string(), p.to_string(), format!("-l{l}")]);
            let a = CyclicSettings::parse(&clustered, &[0, 1]).unwrap();
            let b = CyclicSettings::parse(&separate, &[0, 1]).unwrap();
            prop_assert_eq!((a.quiet, a.mlockall, a.nsecs, a.priority, a.loops),
                            (b.quiet, b.mlockall, b.nsecs, b.priority, b.loops));
            prop_assert_eq!((a.quiet, a.mlockall, a.nsecs, a.priority, a.loops), (q, m, n, p, l));
        }

        /// Any word list parses or fails cleanly, never panics.
        #[test]
        fn never_panics(words in proptest::collection::vec("[-a-zA-Z0-9=!]{0,6}", 0..6)) {
            let _ = CyclicSettings::parse(&words, &[0, 1]);
        }
    }
}
