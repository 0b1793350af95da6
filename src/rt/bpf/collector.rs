//! Which collector gathers the kernel events of `--breakdown` and
//! `--trace-spikes`: in the kernel with BPF, or through tracefs, and why,
//! in words the console and the Report show:
//! `collector: tracefs (bpf: not permitted: needs CAP_BPF and CAP_PERFMON (or root))`.

use serde::{Deserialize, Serialize};

/// `--collector`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CollectorChoice {
    /// BPF where it can run, else tracefs (said plainly).
    #[default]
    Auto,
    /// BPF or a clear error.
    Bpf,
    /// tracefs, as before BPF collection existed.
    Tracefs,
}

/// The collector that ran, and why BPF did not when it did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectorUsed {
    /// `bpf` or `tracefs`.
    pub name: String,
    /// Why BPF did not run (with `auto`), or `--collector tracefs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_unavailable: Option<String>,
}

impl CollectorUsed {
    pub fn bpf() -> CollectorUsed {
        CollectorUsed {
            name: "bpf".to_string(),
            bpf_unavailable: None,
        }
    }

    pub fn tracefs(why_not_bpf: impl Into<String>) -> CollectorUsed {
        CollectorUsed {
            name: "tracefs".to_string(),
            bpf_unavailable: Some(why_not_bpf.into()),
        }
    }

    /// The console's line: `collector: bpf`, `collector: tracefs (bpf: WHY)`.
    pub fn line(&self) -> String {
        match &self.bpf_unavailable {
            Some(why) => format!("collector: {} (bpf: {why})", self.name),
            None => format!("collector: {}", self.name),
        }
    }
}

/// What to try, before anything is loaded: `Ok(true)` try BPF,
/// `Ok(false)` use tracefs (the reason in `CollectorUsed`), `Err` the
/// one-line error of `--collector bpf` where BPF cannot run.
pub fn decide(choice: CollectorChoice) -> Result<Result<(), CollectorUsed>, String> {
    match choice {
        CollectorChoice::Tracefs => Ok(Err(CollectorUsed::tracefs("--collector tracefs"))),
        CollectorChoice::Bpf => match super::probe::check() {
            Ok(()) => Ok(Ok(())),
            Err(why) => Err(format!(
                "--collector bpf: BPF collection cannot run here: {why}"
            )),
        },
        CollectorChoice::Auto => Ok(super::probe::check().map_err(CollectorUsed::tracefs)),
    }
}

/// Writes a verifier's log where the user can read it (a new file in the
/// temporary directory, by `rt::outfile`'s rules) and returns the one line
/// that names it.
pub fn save_verifier_log(program: &str, log: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "latscope-verifier-{}-{program}.log",
        std::process::id()
    ));
    let written = crate::rt::outfile::write_output_file(&path, &mut |out| {
        writeln!(out, "The kernel's verifier refused latscope_{program}:")?;
        out.write_all(log.as_bytes())
    });
    match written {
        Ok(()) => format!("verifier log in {}", path.display()),
        Err(e) => format!(
            "the verifier log could not be written to {}: {}",
            path.display(),
            crate::rt::os_error_text(&e)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_for_people() {
        assert_eq!(CollectorUsed::bpf().line(), "collector: bpf");
        assert_eq!(
            CollectorUsed::tracefs("not permitted: needs CAP_BPF and CAP_PERFMON (or root)").line(),
            "collector: tracefs (bpf: not permitted: needs CAP_BPF and CAP_PERFMON (or root))"
        );
    }

    #[test]
    fn tracefs_is_chosen_without_trying() {
        assert_eq!(
            decide(CollectorChoice::Tracefs),
            Ok(Err(CollectorUsed::tracefs("--collector tracefs")))
        );
    }

    #[test]
    fn a_verifier_log_is_saved_and_named() {
        let line = save_verifier_log("unit_test", "0: (07) r0 += 1\nR0 !read_ok\n");
        let path = line.strip_prefix("verifier log in ").expect(&line);
        let text = std::fs::read_to_string(path).unwrap();
        std::fs::remove_file(path).unwrap();
        assert!(text.starts_with("The kernel's verifier refused latscope_unit_test:"));
        assert!(text.ends_with("R0 !read_ok\n"));
    }
}
