//! Which tier classifies the gaps (`--tier auto|bpf|tracefs|unprivileged`),
//! and why another one ran when the first choice could not.
//!
//! `auto` takes the most precise tier this machine allows: bpf (a per-CPU
//! interference counter in the kernel), then tracefs (a private trace
//! instance: root), then unprivileged (/proc counts per sub-window). A tier
//! asked for by name that cannot run is an error; under `auto` the next
//! tier runs and one line says why.

/// A way of telling the OS's gaps from the hardware's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Bpf,
    Tracefs,
    Unprivileged,
}

/// `--tier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierChoice {
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

    /// The `tier:` line and the JSON's `tier`.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Bpf => "bpf (gap-precise: a per-CPU interference counter in the kernel)",
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

/// The tier that will run, and why it is not the first `auto` tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub tier: Tier,
    /// Under `auto`: why the more precise tiers cannot run here.
    pub fallback: Option<String>,
}

/// Decides the tier for `choice`; `tracefs_ok` says whether the tracefs
/// tier can run here (creating nothing). The error is the user's line.
pub fn decide(
    choice: TierChoice,
    tracefs_ok: impl FnOnce() -> Result<(), String>,
) -> Result<Decision, String> {
    let only = |tier| Decision {
        tier,
        fallback: None,
    };
    match choice {
        TierChoice::Unprivileged => Ok(only(Tier::Unprivileged)),
        TierChoice::Tracefs => tracefs_ok()
            .map(|()| only(Tier::Tracefs))
            .map_err(|why| format!("--tier tracefs cannot run here: {why}")),
        TierChoice::Bpf => Err(BPF_ABSENT.to_string()),
        // The bpf tier is not in this build: tracefs is the first to try.
        TierChoice::Auto => Ok(match tracefs_ok() {
            Ok(()) => only(Tier::Tracefs),
            Err(why) => Decision {
                tier: Tier::Unprivileged,
                fallback: Some(format!("tracefs: {why}")),
            },
        }),
    }
}

const BPF_ABSENT: &str =
    "--tier bpf: the bpf tier is not part of this build: use --tier tracefs or --tier unprivileged";

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

    fn no_root() -> Result<(), String> {
        Err("kernel tracing needs root".into())
    }

    #[test]
    fn auto_takes_tracefs_where_it_runs_and_says_why_it_did_not() {
        assert_eq!(
            decide(TierChoice::Auto, || Ok(())),
            Ok(Decision {
                tier: Tier::Tracefs,
                fallback: None
            })
        );
        let d = decide(TierChoice::Auto, no_root).unwrap();
        assert_eq!(d.tier, Tier::Unprivileged);
        assert_eq!(
            fallback_line(d.tier, d.fallback.as_deref()).unwrap(),
            "the unprivileged tier measures: the more precise tiers cannot run here (tracefs: kernel tracing needs root)"
        );
    }

    #[test]
    fn a_tier_asked_by_name_runs_or_is_an_error() {
        assert_eq!(
            decide(TierChoice::Tracefs, no_root).unwrap_err(),
            "--tier tracefs cannot run here: kernel tracing needs root"
        );
        assert_eq!(
            decide(TierChoice::Unprivileged, || panic!("not asked"))
                .unwrap()
                .tier,
            Tier::Unprivileged
        );
        assert!(
            decide(TierChoice::Bpf, || Ok(()))
                .unwrap_err()
                .contains("--tier tracefs")
        );
        assert_eq!(Tier::Tracefs.name(), "tracefs");
        assert!(
            Tier::Unprivileged
                .describe()
                .starts_with("unprivileged (window-precise")
        );
    }
}
