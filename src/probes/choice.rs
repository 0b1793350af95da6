//! Which collector gathers the kernel events of `--breakdown`,
//! `--trace-spikes` and `noise --trace-spikes`: one decision for all of
//! them, in the words the console and the Report show
//! (`collector: tracefs (bpf: not permitted: needs CAP_BPF and CAP_PERFMON (or root))`).

use crate::rt::bpf::probe::Unavailable;
use crate::rt::bpf::{CollectorChoice, CollectorUsed};

/// `--collector bpf` where BPF collection cannot run: the documented line
/// (docs/bpf.md), exit 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--collector bpf: BPF collection cannot run here: {0}")]
pub struct CannotCollect(pub String);

/// What to do before anything is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Load the programs (and, with `auto`, fall back if they do not:
    /// `fall_back`).
    Bpf,
    /// The tracefs collector, for the reason the collector line shows.
    Tracefs(CollectorUsed),
}

/// The plan for `choice`, `can_run` saying whether this family's programs
/// can run here (`rt::bpf::probe::check`, or the flight recorder's own
/// `recorder::check`).
pub fn plan(
    choice: CollectorChoice,
    can_run: impl FnOnce() -> Result<(), Unavailable>,
) -> Result<Plan, CannotCollect> {
    match choice {
        CollectorChoice::Tracefs => {
            Ok(Plan::Tracefs(CollectorUsed::tracefs("--collector tracefs")))
        }
        CollectorChoice::Bpf => can_run()
            .map(|()| Plan::Bpf)
            .map_err(|why| CannotCollect(why.0)),
        CollectorChoice::Auto => Ok(match can_run() {
            Ok(()) => Plan::Bpf,
            Err(why) => Plan::Tracefs(CollectorUsed::tracefs(why.0)),
        }),
    }
}

/// The programs did not start (`why`): with `auto` the tracefs collector
/// takes over and says why; `--collector bpf` is the documented error.
pub fn fall_back(choice: CollectorChoice, why: String) -> Result<CollectorUsed, CannotCollect> {
    match choice {
        CollectorChoice::Bpf => Err(CannotCollect(why)),
        _ => Ok(CollectorUsed::tracefs(why)),
    }
}

/// Whether the run can collect at all, checked before anything is set up:
/// `tracefs_ok` (root, tracefs, the events) decides, except with
/// `--collector bpf`, which needs BPF, not tracefs: its own line where BPF
/// cannot run (an ordinary user gets that line, not the tracefs one).
pub fn check_before_run<E: std::fmt::Display>(
    choice: CollectorChoice,
    can_run: impl FnOnce() -> Result<(), Unavailable>,
    tracefs_ok: impl FnOnce() -> Result<(), E>,
) -> Result<(), CheckError> {
    match choice {
        CollectorChoice::Bpf => can_run().map_err(|why| CheckError::Bpf(CannotCollect(why.0))),
        _ => tracefs_ok().map_err(|why| CheckError::Tracefs(why.to_string())),
    }
}

impl CheckError {
    /// The user's line: the `--collector bpf` line whole, or `need: why`
    /// (`--breakdown needs kernel tracing: kernel tracing needs root ...`).
    pub fn with_need(&self, need: &str) -> String {
        match self {
            CheckError::Bpf(line) => line.to_string(),
            CheckError::Tracefs(why) => format!("{need}: {why}"),
        }
    }
}

/// Why `check_before_run` says no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The `--collector bpf` line, whole.
    #[error(transparent)]
    Bpf(CannotCollect),
    /// Why tracefs cannot be used: the caller says which option needs it.
    #[error("{0}")]
    Tracefs(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cannot() -> Result<(), Unavailable> {
        Err(Unavailable(
            "not permitted: needs CAP_BPF and CAP_PERFMON (or root)".to_string(),
        ))
    }

    #[test]
    fn one_decision_for_every_choice() {
        assert_eq!(
            plan(CollectorChoice::Tracefs, || panic!("not asked")),
            Ok(Plan::Tracefs(CollectorUsed::tracefs("--collector tracefs")))
        );
        assert_eq!(plan(CollectorChoice::Auto, || Ok(())), Ok(Plan::Bpf));
        assert_eq!(
            plan(CollectorChoice::Auto, cannot),
            Ok(Plan::Tracefs(CollectorUsed::tracefs(
                "not permitted: needs CAP_BPF and CAP_PERFMON (or root)"
            )))
        );
        assert_eq!(
            plan(CollectorChoice::Bpf, cannot).unwrap_err().to_string(),
            "--collector bpf: BPF collection cannot run here: not permitted: needs CAP_BPF and CAP_PERFMON (or root)"
        );
    }

    #[test]
    fn a_failed_start_falls_back_only_with_auto() {
        assert_eq!(
            fall_back(CollectorChoice::Auto, "why".into()),
            Ok(CollectorUsed::tracefs("why"))
        );
        assert_eq!(
            fall_back(CollectorChoice::Bpf, "why".into())
                .unwrap_err()
                .to_string(),
            "--collector bpf: BPF collection cannot run here: why"
        );
    }

    #[test]
    fn collector_bpf_is_checked_for_bpf_not_for_tracefs() {
        let no_root = || Err::<(), _>("kernel tracing needs root");
        let err = check_before_run(CollectorChoice::Bpf, cannot, no_root).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--collector bpf: BPF collection cannot run here: not permitted: needs CAP_BPF and CAP_PERFMON (or root)"
        );
        assert_eq!(
            check_before_run(CollectorChoice::Auto, cannot, no_root),
            Err(CheckError::Tracefs("kernel tracing needs root".into()))
        );
        assert_eq!(
            check_before_run(CollectorChoice::Bpf, || Ok(()), no_root),
            Ok(())
        );
    }
}
