//! `latscope report`'s checked settings: where the page goes, where the SVG
//! files go, and the reports read. Every problem is one line and exit 2,
//! found before anything is written: a bad output path, an SVG directory that
//! cannot be made, an input that cannot be read, is not JSON, is not a
//! latscope report or has another schema version.

use super::{OutputTarget, UsageError, check_output_path, usage};
use crate::cli::ReportArgs;
use crate::report::{
    OLDEST_READ_SCHEMA_VERSION, Report, SCHEMA_NAME, SCHEMA_VERSION, schema_version_readable,
};
use crate::units::shown;
use std::path::{Path, PathBuf};

/// Where the page goes when `-o` is not given.
pub const DEFAULT_OUTPUT: &str = "report.html";

/// One report read from the command line.
pub struct LoadedRun {
    /// The path as given.
    pub source: String,
    pub report: Report,
}

pub struct ReportSettings {
    pub output: OutputTarget,
    /// `--svg`: the directory (which may not exist yet: it is created).
    pub svg_dir: Option<PathBuf>,
    pub runs: Vec<LoadedRun>,
}

impl ReportSettings {
    pub fn from_args(args: &ReportArgs) -> Result<ReportSettings, UsageError> {
        let output_path = args
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OUTPUT));
        let output = check_output_path("-o", &output_path)?;
        if let OutputTarget::File(out) = &output {
            for input in &args.inputs {
                if same_file(out, input) {
                    return Err(usage(format!(
                        "-o {}: that is an input report; choose another output file",
                        shown(&out.to_string_lossy())
                    )));
                }
            }
        }
        let svg_dir = args.svg.as_deref().map(check_svg_dir).transpose()?;
        let runs = args
            .inputs
            .iter()
            .map(|p| {
                Ok(LoadedRun {
                    source: p.to_string_lossy().into_owned(),
                    report: load_report(p)?,
                })
            })
            .collect::<Result<Vec<_>, UsageError>>()?;
        Ok(ReportSettings {
            output,
            svg_dir,
            runs,
        })
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `--svg DIR`: an existing writable directory, or one that can be made (its
/// parent exists).
fn check_svg_dir(dir: &Path) -> Result<PathBuf, UsageError> {
    let name = shown(&dir.to_string_lossy());
    if dir.as_os_str().is_empty() {
        return Err(usage("--svg needs a directory name"));
    }
    if dir.exists() {
        if !dir.is_dir() {
            return Err(usage(format!(
                "--svg {name}: is not a directory; give a directory for the SVG files"
            )));
        }
        // A file in it must be creatable: reuse the output check on a name inside.
        check_output_path("--svg", &dir.join("plot.svg"))?;
        return Ok(dir.to_path_buf());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(usage(format!(
            "--svg {name}: {} does not exist; create it or choose another directory",
            shown(&parent.to_string_lossy())
        )));
    }
    check_output_path("--svg", dir)?;
    Ok(dir.to_path_buf())
}

/// Only the fields that say what a JSON document is (the rest is skipped).
#[derive(serde::Deserialize)]
struct Header {
    schema: Option<serde_json::Value>,
    schema_version: Option<serde_json::Value>,
}

/// Reads a latscope JSON report.
pub fn load_report(path: &Path) -> Result<Report, UsageError> {
    let name = shown(&path.to_string_lossy());
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read {name}: {e}; give a report written with --json"
        ))
    })?;
    parse_report(&name, &text)
}

/// A latscope report from JSON `text` (`name` for messages).
pub fn parse_report(name: &str, text: &str) -> Result<Report, UsageError> {
    let header: Header = serde_json::from_str(text).map_err(|e| {
        usage(format!(
            "{name} is not a JSON report ({e}); give a report written with --json"
        ))
    })?;
    if header.schema.as_ref().and_then(|s| s.as_str()) != Some(SCHEMA_NAME) {
        return Err(usage(format!(
            "{name} is not a latscope report (no \"schema\": \"{SCHEMA_NAME}\"); give a report written with --json"
        )));
    }
    match header.schema_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if schema_version_readable(v) => {}
        Some(v) => {
            return Err(usage(format!(
                "{name} has schema_version {v}; this latscope reads versions {OLDEST_READ_SCHEMA_VERSION} to {SCHEMA_VERSION}: make the report with latscope {}",
                env!("CARGO_PKG_VERSION")
            )));
        }
        None => {
            return Err(usage(format!(
                "{name} has no numeric schema_version; give a report written with --json"
            )));
        }
    }
    serde_json::from_str(text)
        .map_err(|e| usage(format!("{name} is not a valid latscope report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    #[test]
    fn reads_back_what_json_writes() {
        let report = sample_report();
        let text = serde_json::to_string(&report).unwrap();
        assert_eq!(parse_report("a.json", &text).unwrap(), report);
    }

    #[test]
    fn a_version_2_report_still_loads_without_window_percentiles() {
        let mut report = sample_report();
        let mut value = serde_json::to_value(&report).unwrap();
        value["schema_version"] = serde_json::json!(2);
        for w in value["tests"][0]["series"][0]["per_second"]
            .as_array_mut()
            .unwrap()
        {
            let w = w.as_object_mut().unwrap();
            for field in ["p50_ns", "p99_ns", "p999_ns"] {
                w.remove(field);
            }
        }
        let loaded = parse_report("old.json", &value.to_string()).unwrap();
        assert_eq!(loaded.schema_version, 2);
        assert!(loaded.tests[0].series[0].per_second[0].p99_ns.is_none());
        report.schema_version = 2;
        assert_eq!(loaded, report);
    }

    #[test]
    fn says_what_is_wrong_in_one_line() {
        let cases = [
            ("not json", "a.json is not a JSON report"),
            ("[1, 2]", "a.json is not a latscope report"),
            ("{\"tests\": []}", "a.json is not a latscope report"),
            (
                "{\"schema\": \"latscope-report\", \"schema_version\": 1}",
                "a.json has schema_version 1; this latscope reads versions 2 to 3",
            ),
            (
                "{\"schema\": \"latscope-report\", \"schema_version\": \"2\"}",
                "no numeric schema_version",
            ),
            (
                "{\"schema\": \"latscope-report\", \"schema_version\": 2}",
                "a.json is not a valid latscope report: missing field",
            ),
        ];
        for (text, want) in cases {
            let e = parse_report("a.json", text).unwrap_err().0;
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
