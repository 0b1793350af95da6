//! `latscope pi-stress` / the `pi_stress` compat name: rt-tests 2.40
//! pi_stress's command line, read as it reads it (GNU getopt_long with its
//! table `+hD:vqi:g:rs:pdVum` through settings::getopt; numbers by
//! `strtol`, `-D` by `parse_time_string`, `-s` as `id=…,policy=…,…`), its
//! help and refusals in its words, and each thread type's scheduling.

use super::getopt::{
    Arg, GetoptOption, GetoptUsage, Own, UsagePart, atoi, getopt_long_into, parse_duration,
    render_usage,
};
pub use crate::ipc::pi_group::{PiPolicy, PiSched};
use std::sync::LazyLock;

/// rt-tests 2.40's `pi_stress --help`, byte for byte.
pub static USAGE: LazyLock<String> = LazyLock::new(|| render_usage(OPTIONS, LAYOUT));

/// pi_stress 2.40's option table, in its order.
const OPTIONS: &[GetoptOption] = &[
    GetoptOption::new(
        "debug",
        Some('d'),
        Arg::No,
        "-d       --debug           turn on debug prints\n",
    ),
    GetoptOption::new(
        "duration",
        Some('D'),
        Arg::Required,
        "\
-D TIME  --duration=TIME   length of test run in seconds (default is infinite)
                           Append 'm', 'h', or 'd'
                           to specify minutes, hours or days.
",
    ),
    GetoptOption::new(
        "groups",
        Some('g'),
        Arg::Required,
        "-g N     --groups=N        set the number of inversion groups\n",
    ),
    GetoptOption::new(
        "help",
        Some('h'),
        Arg::No,
        "-h       --help            print this message\n",
    ),
    GetoptOption::new(
        "inversions",
        Some('i'),
        Arg::Required,
        "-i INV   --inversions=INV  number of inversions per group (default is infinite)\n",
    ),
    GetoptOption::new(
        "json",
        None,
        Arg::Required,
        "         --json=FILENAME   write final results into FILENAME, JSON formatted\n",
    ),
    GetoptOption::new(
        "mlockall",
        Some('m'),
        Arg::No,
        "-m       --mlockall        lock current and future memory\n",
    ),
    GetoptOption::new(
        "prompt",
        Some('p'),
        Arg::No,
        "-p       --prompt          prompt before starting the test\n",
    ),
    GetoptOption::new(
        "quiet",
        Some('q'),
        Arg::No,
        "-q       --quiet           suppress running output\n",
    ),
    GetoptOption::new(
        "rr",
        Some('r'),
        Arg::No,
        "-r       --rr              use SCHED_RR for test threads [SCHED_FIFO]\n",
    ),
    GetoptOption::new(
        "sched",
        Some('s'),
        Arg::Required,
        "\
-s OPTS  --sched OPTS      scheduling options per thread type:
   id=[high|med|low]      select thread
   ,policy=[fifo,rr]       scheduling class [SCHED_FIFO, SCHED_RR]
     ,priority=N           scheduling priority
   ,policy=[deadline]      scheduling class [DEADLINE]
     ,runtime=N
     ,deadline=N
     ,period=N
",
    ),
    GetoptOption::new(
        "uniprocessor",
        Some('u'),
        Arg::No,
        "-u       --uniprocessor    force all threads to run on one processor\n",
    ),
    GetoptOption::new(
        "verbose",
        Some('v'),
        Arg::No,
        "-v       --verbose         lots of output\n",
    ),
    GetoptOption::new(
        "version",
        Some('V'),
        Arg::No,
        "-V       --version         print version number on output\n",
    ),
];

const LAYOUT: &[UsagePart] = &[
    UsagePart::Text("pi_stress V 2.40\nUsage:\npi_stress <options>\n\n"),
    UsagePart::Option("debug"),
    UsagePart::Option("duration"),
    UsagePart::Option("groups"),
    UsagePart::Option("help"),
    UsagePart::Option("inversions"),
    UsagePart::Option("json"),
    UsagePart::Option("mlockall"),
    UsagePart::Option("prompt"),
    UsagePart::Option("quiet"),
    UsagePart::Option("rr"),
    UsagePart::Option("sched"),
    UsagePart::Option("uniprocessor"),
    UsagePart::Option("verbose"),
    UsagePart::Option("version"),
];

/// latscope's own option (spelled out in full only): the Report, with the
/// inversion latency per group, in a file.
const OWN: &[Own] = &[Own {
    name: super::LATSCOPE_JSON,
    needs: "a file name: --latscope-json FILE",
}];

/// What `-V` prints (no newline, as pi_stress).
pub const VERSION_TEXT: &str = "pi_stress v2.40 ";

/// Everything the options set, with pi_stress's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiStressSettings {
    /// Inversion groups (online CPUs − 1, at least 1).
    pub groups: usize,
    /// `-i`: inversions per group; None: until stopped.
    pub inversions: Option<u64>,
    /// `-D` in seconds as `parse_time_string` gives it; None: infinite.
    pub duration_s: Option<u64>,
    pub quiet: bool,
    pub verbose: bool,
    pub debug: bool,
    pub prompt: bool,
    pub uniprocessor: bool,
    pub mlockall: bool,
    pub json: Option<String>,
    /// `--latscope-json FILE` (latscope's): the Report of the run.
    pub latscope_json: Option<std::path::PathBuf>,
    pub admin: PiSched,
    pub high: PiSched,
    pub med: PiSched,
    pub low: PiSched,
    /// pi_stress's `INFO:` (-v) and error lines while it parsed, in order,
    /// for stderr.
    pub early_lines: Vec<String>,
    /// An error line was given (`-s` it could not read): pi_stress then
    /// ends its run as failed.
    pub had_errors: bool,
    pub cmdline: String,
}

/// How a `-V` ends parsing: not an error, not settings.
pub const VERSION_ASKED: &str = "\u{0}version";

impl PiStressSettings {
    /// Parses pi_stress's arguments (without the program name); `online`
    /// is the number of online CPUs.
    pub fn parse(
        args: &[String],
        program: &str,
        online: usize,
    ) -> Result<PiStressSettings, GetoptUsage> {
        let mut found = Vec::new();
        // pi_stress's `default: usage(1)`: getopt's complaint, the usage, exit 1.
        if let Err(e) = getopt_long_into(OPTIONS, OWN, args, |_, _| false, &mut found) {
            let e = match e {
                GetoptUsage::Getopt(m) => GetoptUsage::Invalid(vec![format!("{program}: {m}")]),
                other => other,
            };
            // The options before the bad word were acted on: only -h/-V/-g
            // end the run before, and those come first here too.
            if let Some(answer) = early_end(&found, online) {
                return Err(answer);
            }
            return Err(e);
        }
        let mut s = PiStressSettings {
            groups: if online <= 1 { 1 } else { online - 1 },
            inversions: None,
            duration_s: None,
            quiet: false,
            verbose: false,
            debug: false,
            prompt: false,
            uniprocessor: false,
            mlockall: false,
            json: None,
            latscope_json: None,
            admin: PiSched::of(PiPolicy::Fifo, 4),
            high: PiSched::of(PiPolicy::Fifo, 3),
            med: PiSched::of(PiPolicy::Fifo, 2),
            low: PiSched::of(PiPolicy::Fifo, 1),
            early_lines: Vec::new(),
            had_errors: false,
            cmdline: std::iter::once(program.to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut rr = false;
        let mut given: [Option<PiSched>; 3] = [None; 3];
        let mut report = None;
        for (name, value) in found {
            if name == super::LATSCOPE_JSON {
                report = value;
                continue;
            }
            s.apply(
                name,
                value.as_deref().unwrap_or(""),
                online,
                &mut rr,
                &mut given,
            )?;
        }
        // setup_sched_config: the defaults for the types -s did not set.
        let policy = if rr { PiPolicy::Rr } else { PiPolicy::Fifo };
        s.admin = PiSched::of(policy, 4);
        s.high = given[0].unwrap_or(PiSched::of(policy, 3));
        s.med = given[1].unwrap_or(PiSched::of(policy, 2));
        s.low = given[2].unwrap_or(PiSched::of(policy, 1));
        s.check_latscope_json(report)?;
        Ok(s)
    }

    fn apply(
        &mut self,
        name: &str,
        v: &str,
        online: usize,
        rr: &mut bool,
        given: &mut [Option<PiSched>; 3],
    ) -> Result<(), GetoptUsage> {
        match name {
            "debug" => self.debug = true,
            "duration" => self.duration_s = parse_duration(v).map(|d| d.as_secs()),
            "groups" => {
                let n = atoi(v);
                if n > online as i64 {
                    return Err(GetoptUsage::Fatal(groups_refusal(online)));
                }
                if n < 1 {
                    // pi_stress starts no group (0) or fails to allocate
                    // (< 0) and then runs forever: latscope refuses it.
                    return Err(GetoptUsage::Bad(format!(
                        "-g {v}: the number of groups must be at least 1 (and at most {online}, the online CPUs)"
                    )));
                }
                self.groups = n as usize;
                self.info(format!("number of groups set to {n}"));
            }
            "help" => return Err(GetoptUsage::Help),
            "inversions" => {
                let n = atoi(v);
                self.inversions = u64::try_from(n).ok();
                self.info(format!("doing {n} inversion per group"));
            }
            "json" => self.json = Some(v.to_string()).filter(|j| !j.is_empty()),
            "mlockall" => self.mlockall = true,
            "prompt" => self.prompt = true,
            "quiet" => {
                self.verbose = false;
                self.quiet = true;
            }
            "rr" => *rr = true,
            "sched" => match sched_line(v) {
                Some((slot, sa)) => given[slot] = Some(sa),
                None => {
                    self.early_lines
                        .push(format!("ignoring invalid options '{v}'"));
                    self.had_errors = true;
                }
            },
            "uniprocessor" => self.uniprocessor = true,
            "verbose" => {
                self.verbose = true;
                self.quiet = false;
            }
            "version" => return Err(GetoptUsage::Bad(VERSION_ASKED.into())),
            _ => {}
        }
        Ok(())
    }

    /// `--latscope-json`'s file, checked last (pi_stress's own refusals
    /// come first) and apart from `--json`'s.
    fn check_latscope_json(&mut self, path: Option<String>) -> Result<(), GetoptUsage> {
        let Some(path) = path else {
            return Ok(());
        };
        let checked = super::check_latscope_output(super::LATSCOPE_JSON, &path, "pi_stress")?;
        let json = self
            .json
            .as_ref()
            .map(|p| super::OutputTarget::File(p.into()));
        let report = super::OutputTarget::File(checked.clone());
        super::check_distinct_outputs(&[
            ("--json", json.as_ref()),
            ("--latscope-json", Some(&report)),
        ])
        .map_err(|e| GetoptUsage::Bad(e.0))?;
        self.latscope_json = Some(checked);
        Ok(())
    }

    fn info(&mut self, line: String) {
        if self.verbose {
            self.early_lines.push(format!("INFO: {line}"));
        }
    }
}

/// What pi_stress says of `-g` above the online CPUs (then exit 255).
fn groups_refusal(online: usize) -> String {
    format!("the number of groups cannot exceed the number of online processors ({online})")
}

/// Options before a bad word that end pi_stress first (it acts on each
/// option as getopt returns it).
fn early_end(found: &[(&str, Option<String>)], online: usize) -> Option<GetoptUsage> {
    found.iter().find_map(|(name, value)| match *name {
        "help" => Some(GetoptUsage::Help),
        "version" => Some(GetoptUsage::Bad(VERSION_ASKED.into())),
        "groups" if atoi(value.as_deref().unwrap_or("")) > online as i64 => {
            Some(GetoptUsage::Fatal(groups_refusal(online)))
        }
        _ => None,
    })
}

/// pi_stress's `process_sched_line`: `key=value` pairs split on `,` and `=`;
/// which thread type (0 high, 1 med, 2 low) and its attributes, or None
/// without a known `id`.
fn sched_line(line: &str) -> Option<(usize, PiSched)> {
    let words: Vec<&str> = line.split([',', '=']).collect();
    let mut sa = PiSched::of(PiPolicy::Other, 0);
    let mut id = None;
    for pair in words.chunks(2) {
        let [k, v] = pair else { break };
        let unsigned = || u64::try_from(atoi(v)).unwrap_or(0);
        match *k {
            "id" => id = Some(*v),
            "policy" => sa.policy = PiPolicy::named(v),
            "nice" => sa.nice = atoi(v) as i32,
            "priority" => sa.priority = atoi(v) as i32,
            "runtime" => sa.runtime = unsigned(),
            "deadline" => sa.deadline = unsigned(),
            "period" => sa.period = unsigned(),
            _ => {}
        }
    }
    let slot = match id? {
        "high" => 0,
        "med" => 1,
        "low" => 2,
        _ => return None,
    };
    Some((slot, sa))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<PiStressSettings, GetoptUsage> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        PiStressSettings::parse(&args, "pi_stress", 2)
    }

    #[test]
    fn the_usage_layout_prints_every_listed_option_once() {
        assert_eq!(
            super::super::getopt::check_usage_layout(OPTIONS, LAYOUT),
            Vec::<String>::new()
        );
    }

    #[test]
    fn defaults_are_pi_stresss() {
        let s = parse(&[]).unwrap();
        assert_eq!((s.groups, s.inversions, s.duration_s), (1, None, None));
        assert_eq!(
            (
                s.admin.priority,
                s.high.priority,
                s.med.priority,
                s.low.priority
            ),
            (4, 3, 2, 1)
        );
        assert_eq!(s.high.policy, PiPolicy::Fifo);
        let s = PiStressSettings::parse(&[], "pi_stress", 8).unwrap();
        assert_eq!(s.groups, 7, "online CPUs - 1");
        let s = PiStressSettings::parse(&[], "pi_stress", 1).unwrap();
        assert_eq!(s.groups, 1);
    }

    #[test]
    fn options_and_sched_lines() {
        let s = parse(&[
            "-q",
            "--duration",
            "2m",
            "-i",
            "100",
            "-r",
            "--json=f",
            "-g",
            "2",
        ])
        .unwrap();
        assert_eq!(
            (s.duration_s, s.inversions, s.groups),
            (Some(120), Some(100), 2)
        );
        assert_eq!(
            (s.high.policy, s.admin.policy),
            (PiPolicy::Rr, PiPolicy::Rr)
        );
        assert_eq!(s.json.as_deref(), Some("f"));
        let s = parse(&[
            "-s",
            "id=high,policy=deadline,runtime=100000,deadline=200000,period=300000",
            "-s",
            "id=low,policy=rr,priority=7",
        ])
        .unwrap();
        assert_eq!(s.high.policy, PiPolicy::Deadline);
        assert_eq!(
            (s.high.runtime, s.high.deadline, s.high.period),
            (100000, 200000, 300000)
        );
        assert_eq!((s.low.policy, s.low.priority), (PiPolicy::Rr, 7));
        assert_eq!((s.med.policy, s.med.priority), (PiPolicy::Fifo, 2));
        let s = parse(&["-s", "garbage"]).unwrap();
        assert!(s.had_errors);
        assert_eq!(s.early_lines, vec!["ignoring invalid options 'garbage'"]);
    }

    #[test]
    fn refusals_are_pi_stresss() {
        assert_eq!(
            parse(&["-Z"]),
            Err(GetoptUsage::Invalid(vec![
                "pi_stress: invalid option -- 'Z'".into()
            ]))
        );
        assert_eq!(
            parse(&["-g", "5"]),
            Err(GetoptUsage::Fatal(
                "the number of groups cannot exceed the number of online processors (2)".into()
            ))
        );
        assert!(matches!(parse(&["-g", "0"]), Err(GetoptUsage::Bad(_))));
        assert_eq!(parse(&["--he"]), Err(GetoptUsage::Help));
        assert_eq!(parse(&["-V"]), Err(GetoptUsage::Bad(VERSION_ASKED.into())));
    }

    #[test]
    fn latscope_json_is_latscopes_own_option_spelled_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        let word = format!("--latscope-json={}", file.display());
        let s = parse(&["-q", &word]).unwrap();
        assert_eq!(s.latscope_json.as_deref(), Some(file.as_path()));
        assert_eq!(parse(&[]).unwrap().latscope_json, None);
        // Standard output carries pi_stress's lines: refused, one line.
        assert_eq!(
            parse(&["--latscope-json", "-"]),
            Err(GetoptUsage::Bad(
                "--latscope-json -: standard output carries pi_stress's own output; give a file name"
                    .into()
            ))
        );
        // Not on pi_stress's own --json file.
        let json = format!("--json={}", file.display());
        assert!(matches!(parse(&[&json, &word]), Err(GetoptUsage::Bad(_))));
        // No abbreviation of it: pi_stress's table decides those.
        assert!(parse(&["--latscope=x"]).is_err());
    }
}
