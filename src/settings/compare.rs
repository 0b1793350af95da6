//! `latscope compare`'s options, checked: which files are the bases and which
//! is new, the thresholds (every form) and the JSON target.

use super::{OutputTarget, UsageError, check_json_path, check_output_path, parse_thresholds};
use crate::cli::CompareArgs;
use crate::threshold::Threshold;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// One or more base reports; several are compared as their median.
    pub bases: Vec<PathBuf>,
    pub new: PathBuf,
    pub merge: bool,
    pub fail_if: Vec<Threshold>,
    pub json: Option<OutputTarget>,
    /// `--html`: the page of the comparison.
    pub html: Option<OutputTarget>,
}

impl CompareSettings {
    pub fn from_args(args: &CompareArgs) -> Result<CompareSettings, UsageError> {
        let (bases, new) = match (args.base.is_empty(), args.files.as_slice()) {
            (true, [base, new]) => (vec![base.clone()], new.clone()),
            (false, [new]) => (args.base.clone(), new.clone()),
            (true, []) | (false, []) => {
                return Err(UsageError(
                    "compare needs two reports: latscope compare BASE.json NEW.json (or --base A.json --base B.json NEW.json)".into(),
                ));
            }
            (true, [_]) => {
                return Err(UsageError(
                    "compare needs a base as well: latscope compare BASE.json NEW.json (or --base BASE.json NEW.json)".into(),
                ));
            }
            (true, _) => {
                return Err(UsageError(format!(
                    "compare takes two reports, not {}: give further bases with --base A.json --base B.json NEW.json",
                    args.files.len()
                )));
            }
            (false, _) => {
                return Err(UsageError(format!(
                    "with --base, give only the new report ({} files given after the options)",
                    args.files.len()
                )));
            }
        };
        let json = args.json.as_deref().map(check_json_path).transpose()?;
        let html = args
            .html
            .as_deref()
            .map(|p| check_output_path("--html", p))
            .transpose()?;
        // As `report -o`: an output must not replace one of the inputs.
        for (option, target) in [("--json", &json), ("--html", &html)] {
            if let Some(OutputTarget::File(out)) = target
                && let Some(input) = bases
                    .iter()
                    .chain(std::iter::once(&new))
                    .find(|input| crate::rt::outfile::same_file_destination(out, input))
            {
                return Err(UsageError(format!(
                    "{option} {}: that is the input report {}; choose another output file",
                    crate::units::shown(&out.to_string_lossy()),
                    crate::units::shown(&input.to_string_lossy())
                )));
            }
        }
        match (&json, &html) {
            (Some(OutputTarget::Stdout), Some(OutputTarget::Stdout)) => {
                return Err(UsageError(
                    "--json - and --html - both to standard output: give one of them a file name"
                        .into(),
                ));
            }
            (Some(OutputTarget::File(a)), Some(OutputTarget::File(b)))
                if crate::rt::outfile::same_file_destination(a, b) || a == b =>
            {
                return Err(UsageError(format!(
                    "--json and --html both name {}: give each its own file",
                    crate::units::shown(&a.to_string_lossy())
                )));
            }
            _ => {}
        }
        Ok(CompareSettings {
            bases,
            new,
            merge: args.merge,
            fail_if: parse_thresholds(&args.fail_if, true)?,
            json,
            html,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(line: &str) -> Result<CompareSettings, UsageError> {
        let cli = Cli::try_parse_from(
            ["latscope", "compare"]
                .into_iter()
                .chain(line.split_whitespace()),
        )
        .expect("clap accepts");
        match cli.command {
            Command::Compare(a) => CompareSettings::from_args(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn base_and_new_from_either_form() {
        let s = settings("a.json b.json --merge --fail-if p99>+10%").unwrap();
        assert_eq!(s.bases, [PathBuf::from("a.json")]);
        assert_eq!(s.new, PathBuf::from("b.json"));
        assert!(s.merge);
        assert_eq!(s.fail_if[0].expr, "p99>+10%");
        let s = settings("--base a.json --base b.json --base c.json n.json").unwrap();
        assert_eq!(s.bases.len(), 3);
        assert_eq!(s.new, PathBuf::from("n.json"));
    }

    #[test]
    fn wrong_file_counts_and_thresholds_are_one_line() {
        for (line, needle) in [
            ("", "needs two reports"),
            ("a.json", "needs a base"),
            ("a b c", "not 3"),
            ("--base a b c", "give only the new report"),
            ("--base a", "needs two reports"),
            ("a b --fail-if p99", "has no '>'"),
            ("a b --json /nonexistent-dir/x.json", "does not exist"),
            ("a b --html /nonexistent-dir/x.html", "does not exist"),
            ("a b --html a", "that is the input report"),
            ("a b --json - --html -", "both to standard output"),
            ("a b --json x.out --html x.out", "both name x.out"),
        ] {
            let err = settings(line).expect_err(line).0;
            assert!(err.contains(needle), "{line}: {err}");
            assert!(!err.contains('\n'), "{line}: {err}");
        }
    }
}
