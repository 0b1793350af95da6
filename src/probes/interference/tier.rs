//! Which tier classifies the gaps (`--tier auto|bpf|tracefs|unprivileged`),
//! and why another one ran when the first choice could not.
//!
//! `auto` takes the most precise tier this machine allows: bpf (a per-CPU
//! interference counter in the kernel: root, or CAP_BPF and CAP_PERFMON),
//! then tracefs (a private trace instance: root), then unprivileged (/proc
//! counts per sub-window), and says why each one before it did not run,
//! as `--collector` does (`probes::choice`). A tier asked for by name that
//! cannot run is an error (exit 1).
//!
//! Here, beside the counter, rather than in hwlat/: `latscope doctor`
//! (hwlat.tier) decides through the same checks (`TierFacts`) on its
//! machine's files, and a service may not import a test (tests/suite/layers.rs).

use crate::rt::bpf::probe::{self, Unavailable};
use crate::rt::tracefs::events::{ACTIVITY, EventDecoder};
use std::path::Path;

/// A way of telling the OS's gaps from the hardware's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A per-CPU interference counter in the kernel: gap-precise.
    Bpf,
    /// A private tracefs instance with the same events: gap-precise.
    Tracefs,
    /// /proc tables and context switches per sub-window: window-precise.
    Unprivileged,
}

/// `--tier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierChoice {
    /// bpf, else tracefs, else unprivileged (said plainly).
    #[default]
    Auto,
    Bpf,
    Tracefs,
    Unprivileged,
}

impl Tier {
    /// The tier's name (`--tier`, hwlatdetect's `detector: latscope-NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Bpf => "bpf",
            Tier::Tracefs => "tracefs",
            Tier::Unprivileged => "unprivileged",
        }
    }

    /// hwlatdetect's `detector:` word.
    pub fn detector(self) -> String {
        format!("latscope-{}", self.name())
    }

    /// The `tier:` line and the JSON's `tier`.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Bpf => BPF_TIER,
            Tier::Tracefs => TRACEFS_TIER,
            Tier::Unprivileged => UNPRIVILEGED_TIER,
        }
    }
}

/// The unprivileged tier, as the output names it.
pub const UNPRIVILEGED_TIER: &str = "unprivileged (window-precise: /proc/interrupts, /proc/softirqs and context switches per sub-window)";
/// The tracefs tier, as the output names it.
pub const TRACEFS_TIER: &str =
    "tracefs (gap-precise: IRQ, softirq, NMI and switch events of a private trace instance)";
/// The bpf tier, as the output names it.
pub const BPF_TIER: &str = "bpf (gap-precise: an interference counter bumped in the kernel on every IRQ, softirq, NMI and context switch, one load per read)";

/// The tier that will run, and why it is not the first `auto` tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub tier: Tier,
    /// Under `auto`: why the more precise tiers cannot run here.
    pub fallback: Option<String>,
}

/// A tier asked for by name that cannot run here; `Display` is the user's
/// line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    #[error("--tier tracefs cannot run here: {0}")]
    Tracefs(Unavailable),
    #[error("--tier bpf: the bpf tier cannot run here: {0}")]
    Bpf(Unavailable),
}

/// Decides the tier for `choice`; `bpf_ok` and `tracefs_ok` say whether
/// those tiers can run here (creating nothing).
pub fn decide(
    choice: TierChoice,
    bpf_ok: impl FnOnce() -> Result<(), Unavailable>,
    tracefs_ok: impl FnOnce() -> Result<(), Unavailable>,
) -> Result<Decision, TierError> {
    let only = |tier| Decision {
        tier,
        fallback: None,
    };
    match choice {
        TierChoice::Unprivileged => Ok(only(Tier::Unprivileged)),
        TierChoice::Tracefs => tracefs_ok()
            .map(|()| only(Tier::Tracefs))
            .map_err(TierError::Tracefs),
        TierChoice::Bpf => bpf_ok().map(|()| only(Tier::Bpf)).map_err(TierError::Bpf),
        TierChoice::Auto => Ok(match bpf_ok() {
            Ok(()) => only(Tier::Bpf),
            Err(bpf) => match tracefs_ok() {
                Ok(()) => Decision {
                    tier: Tier::Tracefs,
                    fallback: Some(format!("bpf: {bpf}")),
                },
                Err(tracefs) => Decision {
                    tier: Tier::Unprivileged,
                    fallback: Some(format!("bpf: {bpf}; tracefs: {tracefs}")),
                },
            },
        }),
    }
}

/// The events of the tracefs tier (and of `spikes`' tracefs collector,
/// less `sched_wakeup`: whom a switch woke does not matter here).
pub fn base_events() -> Vec<(&'static str, &'static str)> {
    ACTIVITY
        .iter()
        .copied()
        .filter(|&(_, e)| e != "sched_wakeup")
        .collect()
}

/// What decides which tiers can run, creating nothing: the files under
/// `root` (`/` live, a fixture tree in the doctor's tests), whether the
/// process is root, its BPF facts, and what only the bpf() system call
/// tells. `--tier`, the `hwlatdetect` name's `detector:` and `latscope
/// doctor`'s hwlat.tier all decide through it.
pub struct TierFacts<'a> {
    pub root: &'a Path,
    pub is_root: bool,
    pub bpf: probe::Facts,
    pub try_bpf: &'a dyn Fn() -> Result<(), Unavailable>,
}

impl TierFacts<'static> {
    /// The machine latscope runs on.
    pub fn live() -> TierFacts<'static> {
        TierFacts {
            root: Path::new("/"),
            is_root: crate::rt::tracefs::mount::is_root(),
            bpf: probe::Facts::live(),
            try_bpf: &probe::try_the_system_call,
        }
    }
}

impl TierFacts<'_> {
    /// Whether the bpf tier can run: BPF itself and a kernel whose verifier
    /// takes the counter's fetch-and-add.
    pub fn bpf_ok(&self) -> Result<(), Unavailable> {
        super::check_with(&self.bpf, self.try_bpf)
    }

    /// Whether the tracefs tier can run: root, tracefs with its events,
    /// the `mono` clock and instances, and formats it can decode.
    pub fn tracefs_ok(&self) -> Result<(), Unavailable> {
        let events = base_events();
        if let Some(tracefs) = crate::rt::tracefs::check_usable_at(self.root, self.is_root, &events)
            .map_err(Unavailable)?
        {
            EventDecoder::read_events(&tracefs.join("events"), &events).map_err(Unavailable)?;
        }
        Ok(())
    }

    /// The tier `choice` gives here (the error is the user's line).
    pub fn decide(&self, choice: TierChoice) -> Result<Decision, TierError> {
        decide(choice, || self.bpf_ok(), || self.tracefs_ok())
    }

    /// The tier `--tier auto` takes here, and why not a better one.
    pub fn available(&self) -> Decision {
        self.decide(TierChoice::Auto).unwrap_or(Decision {
            tier: Tier::Unprivileged,
            fallback: None,
        })
    }
}

/// Joins the reasons of two fallbacks (the decision's, then the run's).
pub fn join_fallbacks(first: Option<String>, then: Option<String>) -> Option<String> {
    match (first, then) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// The line a fallback to `tier` prints (`why`: None, no fallback).
pub fn fallback_line(tier: Tier, why: Option<&str>) -> Option<String> {
    why.map(|why| {
        format!(
            "the {} tier measures: the more precise tiers cannot run here ({why})",
            tier.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_PERMITTED: &str = "not permitted: needs CAP_BPF and CAP_PERFMON (or root)";

    fn no_root() -> Result<(), Unavailable> {
        Err(Unavailable("kernel tracing needs root".into()))
    }

    fn no_bpf() -> Result<(), Unavailable> {
        Err(Unavailable(NOT_PERMITTED.into()))
    }

    #[test]
    fn auto_tries_bpf_then_tracefs_then_unprivileged_and_says_why() {
        assert_eq!(
            decide(TierChoice::Auto, || Ok(()), || panic!("not asked")),
            Ok(Decision {
                tier: Tier::Bpf,
                fallback: None
            })
        );
        assert_eq!(
            decide(TierChoice::Auto, no_bpf, || Ok(())),
            Ok(Decision {
                tier: Tier::Tracefs,
                fallback: Some(format!("bpf: {NOT_PERMITTED}"))
            })
        );
        let d = decide(TierChoice::Auto, no_bpf, no_root).unwrap();
        assert_eq!(d.tier, Tier::Unprivileged);
        assert_eq!(
            fallback_line(d.tier, d.fallback.as_deref()).unwrap(),
            format!(
                "the unprivileged tier measures: the more precise tiers cannot run here (bpf: {NOT_PERMITTED}; tracefs: kernel tracing needs root)"
            )
        );
    }

    #[test]
    fn a_tier_asked_by_name_runs_or_is_an_error() {
        assert_eq!(
            decide(TierChoice::Tracefs, || panic!("not asked"), no_root)
                .unwrap_err()
                .to_string(),
            "--tier tracefs cannot run here: kernel tracing needs root"
        );
        assert_eq!(
            decide(TierChoice::Bpf, no_bpf, || panic!("not asked"))
                .unwrap_err()
                .to_string(),
            format!("--tier bpf: the bpf tier cannot run here: {NOT_PERMITTED}")
        );
        assert_eq!(
            decide(TierChoice::Bpf, || Ok(()), no_root).unwrap().tier,
            Tier::Bpf
        );
        assert_eq!(
            decide(
                TierChoice::Unprivileged,
                || panic!("not asked"),
                || panic!("not asked")
            )
            .unwrap()
            .tier,
            Tier::Unprivileged
        );
        assert_eq!(Tier::Tracefs.name(), "tracefs");
        assert_eq!(Tier::Bpf.detector(), "latscope-bpf");
        assert!(
            Tier::Unprivileged
                .describe()
                .starts_with("unprivileged (window-precise")
        );
    }

    #[test]
    fn fallbacks_join_in_order() {
        assert_eq!(join_fallbacks(None, None), None);
        assert_eq!(
            join_fallbacks(Some("bpf: a".into()), Some("tracefs: b".into())).as_deref(),
            Some("bpf: a; tracefs: b")
        );
        assert_eq!(join_fallbacks(None, Some("x".into())).as_deref(), Some("x"));
    }
}
