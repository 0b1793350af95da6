//! `--load SPEC`: background load during a measurement, run by the load
//! generators real-time engineers already trust (stress-ng's stressors and
//! rt-tests' hackbench), never by code of our own.
//!
//! This module turns the option's text into checked generator commands
//! (before anything is measured, so that a typo or a missing program is a
//! usage error); `process` starts, watches and stops them.
//!
//! SPEC is a comma list of `NAME[:N]`. NAME is a stress-ng stressor (`cpu`,
//! `vm`, `hdd`, `sock`, ... as `stress-ng --stressors` lists them) with N
//! workers, by default one per measured CPU; or `hackbench` with N groups of
//! 40 threads, by default 1. All stressors of a run share one stress-ng
//! process; each hackbench item is a process of its own. A bare `--load`
//! means `cpu`: one CPU hog on every measured CPU. `kcompile` is rteval's
//! kernel compile (`kcompile`), whose options follow it as `KEY=VALUE`
//! items: `kcompile[:JOBS][,tree=DIR][,jobs=JOBS]`.

pub mod cpu_time;
pub mod kcompile;
pub mod process;

use std::path::{Path, PathBuf};

/// What a bare `--load` runs.
pub const DEFAULT_SPEC: &str = "cpu";
/// The largest worker or group count one item may ask for: a typo such as
/// `cpu:20000` would fork the machine to a standstill.
pub const MAX_COUNT: u32 = 1024;

const STRESS_NG: &str = "stress-ng";
const HACKBENCH: &str = "hackbench";
const KCOMPILE: &str = "kcompile";

/// One `NAME[:N]` item of a SPEC, with the `KEY=VALUE` items after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadItem {
    pub name: String,
    /// Workers (stress-ng), groups (hackbench) or jobs (kcompile); `None`
    /// takes the default.
    pub count: Option<u32>,
    pub options: Vec<(String, String)>,
}

impl LoadItem {
    fn shown(&self) -> String {
        match self.count {
            Some(n) => format!("{}:{n}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Which program generates a load and what it is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Generator {
    /// One stress-ng process running all these stressors.
    StressNg(Vec<LoadItem>),
    /// One hackbench process with this many groups (`None`: 1).
    Hackbench(Option<u32>),
    /// Rounds of `make -jJ` of a source tree (`kcompile`).
    Kcompile(kcompile::Kcompile),
}

/// A checked load: the generator, the program found for it and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSpec {
    pub generator: Generator,
    pub program: PathBuf,
    pub version: String,
}

impl LoadSpec {
    /// The items as the user could have written them (`cpu:2,vm`).
    pub fn spec(&self) -> String {
        match &self.generator {
            Generator::StressNg(items) => items
                .iter()
                .map(LoadItem::shown)
                .collect::<Vec<_>>()
                .join(","),
            Generator::Hackbench(groups) => LoadItem {
                name: HACKBENCH.to_string(),
                count: *groups,
                options: Vec::new(),
            }
            .shown(),
            // The tree as given; not the kernel source found by default.
            Generator::Kcompile(k) => k.shown(),
        }
    }

    /// The command line (program first) that loads `cpu_count` measured CPUs.
    pub fn command_line(&self, cpu_count: usize) -> Vec<String> {
        let mut argv = vec![self.program.display().to_string()];
        match &self.generator {
            Generator::StressNg(items) => {
                for item in items {
                    argv.push(format!("--{}", item.name));
                    argv.push(item.count.unwrap_or(cpu_count.max(1) as u32).to_string());
                }
                // 0: run until stopped (stress-ng's own default ends after a day).
                argv.extend(["--timeout".to_string(), "0".to_string()]);
            }
            Generator::Hackbench(groups) => {
                // Threads (-T), not processes: a hackbench process killed by
                // its parent-death signal takes its threads with it, while
                // forked hackbench children would live on (checked).
                argv.extend(["-T".to_string(), "-g".to_string()]);
                argv.push(groups.unwrap_or(1).to_string());
                // Messages per sender: far more than any run lasts (about
                // 1000 a second here); latscope stops it.
                argv.extend(["-l".to_string(), "2000000000".to_string()]);
            }
            // What each round runs (process::spawn adds the directory).
            Generator::Kcompile(k) => argv.push(format!("-j{}", k.jobs_on(cpu_count))),
        }
        argv
    }
}

/// Parses one `--load` value into its items (syntax only).
pub fn parse_spec(text: &str) -> Result<Vec<LoadItem>, String> {
    let text = text.trim();
    let text = if text.is_empty() { DEFAULT_SPEC } else { text };
    let mut items: Vec<LoadItem> = Vec::new();
    for part in text.split(',') {
        match part.split_once('=') {
            Some((key, value)) => {
                let Some(item) = items.last_mut() else {
                    return Err(format!(
                        "'{}' must follow the load it sets (kcompile,tree=DIR)",
                        crate::units::shown(part)
                    ));
                };
                item.options
                    .push((key.trim().to_string(), value.trim().to_string()));
            }
            None => items.push(parse_item(part)?),
        }
    }
    Ok(items)
}

/// One `NAME[:N]`.
fn parse_item(part: &str) -> Result<LoadItem, String> {
    let part = part.trim();
    let (name, count) = match part.split_once(':') {
        Some((name, count)) => (name.trim(), Some(count.trim())),
        None => (part, None),
    };
    let valid_name = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return Err(format!(
            "'{}' is not a load name (a stress-ng stressor such as cpu, vm, hdd, or hackbench)",
            crate::units::shown(part)
        ));
    }
    let count = count
        .map(|c| match c.parse::<u32>() {
            Ok(n) if (1..=MAX_COUNT).contains(&n) => Ok(n),
            _ => Err(format!(
                "the count in '{}' must be a whole number from 1 to {MAX_COUNT}",
                crate::units::shown(part)
            )),
        })
        .transpose()?;
    Ok(LoadItem {
        name: name.to_string(),
        count,
        options: Vec::new(),
    })
}

/// The generators the items call for: every stressor in one stress-ng
/// process, each hackbench item in its own. A stressor named twice is an
/// error (which count would hold?).
pub fn group_items(items: Vec<LoadItem>) -> Result<Vec<Generator>, String> {
    let mut stressors: Vec<LoadItem> = Vec::new();
    let mut generators = Vec::new();
    for item in items {
        if item.name == KCOMPILE {
            generators.push(Generator::Kcompile(kcompile_of(&item)?));
            continue;
        }
        if let Some((key, _)) = item.options.first() {
            return Err(format!(
                "{} takes no {key}=: only kcompile takes options (tree=DIR, jobs=N)",
                item.name
            ));
        }
        if item.name == HACKBENCH {
            generators.push(Generator::Hackbench(item.count));
        } else if stressors.iter().any(|s| s.name == item.name) {
            return Err(format!(
                "stressor {} is given twice: give it once with the worker count wanted",
                item.name
            ));
        } else {
            stressors.push(item);
        }
    }
    if !stressors.is_empty() {
        generators.insert(0, Generator::StressNg(stressors));
    }
    Ok(generators)
}

/// A `kcompile` item's options: `tree=DIR`, `jobs=N` (or `kcompile:N`).
fn kcompile_of(item: &LoadItem) -> Result<kcompile::Kcompile, String> {
    let mut k = kcompile::Kcompile {
        source: None,
        jobs: item.count,
        tree_given: false,
    };
    for (key, value) in &item.options {
        match key.as_str() {
            "tree" if value.is_empty() => {
                return Err("kcompile: tree= needs a directory".to_string());
            }
            "tree" => {
                k.source = Some(PathBuf::from(value));
                k.tree_given = true;
            }
            "jobs" => match value.parse::<u32>() {
                Ok(n) if (1..=MAX_COUNT).contains(&n) && item.count.is_none() => k.jobs = Some(n),
                Ok(_) if item.count.is_some() => {
                    return Err("kcompile: give the jobs once (kcompile:N or jobs=N)".to_string());
                }
                _ => {
                    return Err(format!(
                        "kcompile: jobs={} must be a whole number from 1 to {MAX_COUNT}",
                        crate::units::shown(value)
                    ));
                }
            },
            other => {
                return Err(format!(
                    "kcompile has no option {}= (it takes tree=DIR and jobs=N)",
                    crate::units::shown(other)
                ));
            }
        }
    }
    Ok(k)
}

/// Why a `--load` value cannot be used: one line that names the fix. The
/// settings report it as a usage error (exit 2); load/ does not import
/// settings/, which sits above it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadSpecError(pub String);

/// The checked loads of every `--load` option: the programs are found, the
/// stressor names are ones stress-ng knows. Each failure is a usage error
/// that names the fix.
pub fn from_args(values: &[String]) -> Result<Vec<LoadSpec>, LoadSpecError> {
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let fail = |why: String| LoadSpecError(format!("--load: {why}"));
    let mut items = Vec::new();
    for value in values {
        items.extend(parse_spec(value).map_err(fail)?);
    }
    let generators = group_items(items).map_err(fail)?;
    generators
        .into_iter()
        .map(|generator| check(generator).map_err(fail))
        .collect()
}

/// Finds the generator's program and its version; checks stressor names.
fn check(generator: Generator) -> Result<LoadSpec, String> {
    let generator = match generator {
        Generator::Kcompile(k) => Generator::Kcompile(k.checked()?),
        other => other,
    };
    let (name, package) = match generator {
        Generator::StressNg(_) => (STRESS_NG, "stress-ng"),
        Generator::Hackbench(_) => (HACKBENCH, "rt-tests"),
        Generator::Kcompile(_) => ("make", "make"),
    };
    let program = find_in_path(name).ok_or_else(|| {
        format!(
            "{name} is not installed (not found in PATH): install the {package} package (e.g. apt-get install {package})"
        )
    })?;
    let version = match &generator {
        Generator::StressNg(items) => {
            let known = output_of(&program, &["--stressors"])?;
            if let Some(unknown) = unknown_stressor(items, &known) {
                return Err(format!(
                    "stress-ng has no stressor '{}' (stress-ng --stressors lists them; hackbench is the other load)",
                    crate::units::shown(&unknown.name)
                ));
            }
            first_line(&output_of(&program, &["--version"])?)
        }
        // hackbench has no --version; its usage text starts with it.
        Generator::Hackbench(_) => format!(
            "rt-tests {}",
            first_line(&output_of(&program, &["--help"])?)
        ),
        Generator::Kcompile(_) => first_line(&output_of(&program, &["--version"])?),
    };
    Ok(LoadSpec {
        generator,
        program,
        version,
    })
}

/// The first item whose name is not in stress-ng's list of stressors.
fn unknown_stressor<'a>(items: &'a [LoadItem], stressors_output: &str) -> Option<&'a LoadItem> {
    let known: Vec<&str> = stressors_output.split_whitespace().collect();
    items.iter().find(|i| !known.contains(&i.name.as_str()))
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("version unknown")
        .to_string()
}

/// Standard output and error of a short informational run of `program`.
fn output_of(program: &Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("could not run {}: {e}", program.display()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(text)
}

/// The first executable file called `name` in the directories of PATH.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, count: Option<u32>) -> LoadItem {
        LoadItem {
            name: name.to_string(),
            count,
            options: Vec::new(),
        }
    }

    #[test]
    fn kcompile_takes_its_options_after_it() {
        let items = parse_spec("cpu,kcompile:3,tree=/src/linux").unwrap();
        assert_eq!(
            items[1].options,
            [("tree".to_string(), "/src/linux".to_string())]
        );
        let generators = group_items(items).unwrap();
        assert_eq!(
            generators[1],
            Generator::Kcompile(kcompile::Kcompile {
                source: Some(PathBuf::from("/src/linux")),
                jobs: Some(3),
                tree_given: true,
            })
        );
        let jobs = group_items(parse_spec("kcompile,jobs=4").unwrap()).unwrap();
        assert!(
            matches!(&jobs[0], Generator::Kcompile(k) if k.jobs == Some(4) && k.source.is_none())
        );
        for (spec, want) in [
            ("tree=/x", "must follow the load it sets"),
            ("cpu,tree=/x", "cpu takes no tree="),
            ("kcompile,tree=", "tree= needs a directory"),
            ("kcompile,jobs=0", "from 1 to 1024"),
            ("kcompile:2,jobs=3", "give the jobs once"),
            ("kcompile,dir=/x", "kcompile has no option dir="),
        ] {
            let e = parse_spec(spec).and_then(group_items).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }

    #[test]
    fn specs_parse_into_items() {
        assert_eq!(parse_spec("cpu:2").unwrap(), vec![item("cpu", Some(2))]);
        assert_eq!(
            parse_spec("vm:1, hdd:1,hackbench").unwrap(),
            vec![
                item("vm", Some(1)),
                item("hdd", Some(1)),
                item("hackbench", None)
            ]
        );
        assert_eq!(parse_spec("").unwrap(), vec![item("cpu", None)]);
        assert_eq!(
            parse_spec("af-alg:3").unwrap(),
            vec![item("af-alg", Some(3))]
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert!(parse_spec("cpu:0").unwrap_err().contains("from 1 to 1024"));
        assert!(parse_spec("cpu:x").unwrap_err().contains("whole number"));
        assert!(parse_spec("cpu:2000").is_err());
        assert!(
            parse_spec("cpu,,vm")
                .unwrap_err()
                .contains("not a load name")
        );
        assert!(parse_spec("--cpu").unwrap_err().contains("'--cpu'"));
        assert!(parse_spec("cpu;rm").unwrap_err().contains("'cpu;rm'"));
    }

    #[test]
    fn stressors_share_one_stress_ng_and_hackbench_runs_alone() {
        let generators = group_items(vec![
            item("hackbench", Some(2)),
            item("cpu", None),
            item("vm", Some(1)),
        ])
        .unwrap();
        assert_eq!(
            generators,
            vec![
                Generator::StressNg(vec![item("cpu", None), item("vm", Some(1))]),
                Generator::Hackbench(Some(2)),
            ]
        );
        let twice = group_items(vec![item("cpu", Some(1)), item("cpu", Some(2))]);
        assert!(twice.unwrap_err().contains("cpu is given twice"));
    }

    #[test]
    fn command_lines_default_the_count_to_the_measured_cpus() {
        let stress = LoadSpec {
            generator: Generator::StressNg(vec![item("cpu", None), item("vm", Some(1))]),
            program: PathBuf::from("/usr/bin/stress-ng"),
            version: String::new(),
        };
        assert_eq!(
            stress.command_line(2),
            [
                "/usr/bin/stress-ng",
                "--cpu",
                "2",
                "--vm",
                "1",
                "--timeout",
                "0"
            ]
        );
        assert_eq!(stress.spec(), "cpu,vm:1");
        let hackbench = LoadSpec {
            generator: Generator::Hackbench(None),
            program: PathBuf::from("/usr/bin/hackbench"),
            version: String::new(),
        };
        assert_eq!(
            hackbench.command_line(4),
            ["/usr/bin/hackbench", "-T", "-g", "1", "-l", "2000000000"]
        );
        assert_eq!(hackbench.spec(), "hackbench");
    }

    #[test]
    fn unknown_stressors_are_found_in_the_list() {
        let list = "access af-alg cpu cpu-online vm\n";
        assert_eq!(unknown_stressor(&[item("cpu", None)], list), None);
        assert_eq!(
            unknown_stressor(&[item("cpu", None), item("cpux", None)], list),
            Some(&item("cpux", None))
        );
    }
}
