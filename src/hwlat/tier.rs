//! Which tier classifies the gaps (`--tier auto|bpf|tracefs|unprivileged`),
//! in the words the `tier:` line, the JSON and hwlatdetect's `detector:`
//! line show: `auto` takes the first that starts (bpf, then the next) and
//! says why each one before it did not, as `--collector` does
//! (`probes::choice`).

/// `--tier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierChoice {
    /// bpf where its programs load, else the next tier (said plainly).
    #[default]
    Auto,
    Bpf,
    Tracefs,
    Unprivileged,
}

/// The tier that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A per-CPU interference counter in the kernel: gap-precise.
    Bpf,
    /// A private tracefs instance with the same events.
    Tracefs,
    /// /proc tables and context switches per sub-window: window-precise.
    Unprivileged,
}

/// The unprivileged tier as the output names it.
pub const UNPRIVILEGED_TIER: &str = "unprivileged (window-precise: /proc/interrupts, /proc/softirqs and context switches per sub-window)";
/// The bpf tier as the output names it.
pub const BPF_TIER: &str = "bpf (gap-precise: an interference counter bumped in the kernel on every IRQ, softirq, NMI and context switch, one load per read)";

impl Tier {
    /// Its `tier:` line's text.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Bpf => BPF_TIER,
            Tier::Tracefs => "tracefs",
            Tier::Unprivileged => UNPRIVILEGED_TIER,
        }
    }

    /// hwlatdetect's `detector:` word.
    pub fn detector(self) -> &'static str {
        match self {
            Tier::Bpf => "latscope-bpf",
            Tier::Tracefs => "latscope-tracefs",
            Tier::Unprivileged => "latscope-unprivileged",
        }
    }
}

/// Why the tier asked for does not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    /// A tier this build does not have yet: bad usage (exit 2).
    #[error("--tier {0} is not available yet in this build: give --tier auto, bpf or unprivileged")]
    NotAvailable(&'static str),
    /// `--tier bpf` where it cannot run: a failure at run time (exit 1).
    #[error("--tier bpf: the bpf tier cannot run here: {0}")]
    Bpf(String),
}

/// Checked before anything is set up: a tier that cannot be asked for
/// here, and `--tier bpf` where BPF cannot run (`bpf_can_run`, the same
/// facts as `--collector bpf`: an ordinary user gets this line, not the
/// real-time set-up's).
pub fn check_before_run(
    choice: TierChoice,
    bpf_can_run: impl FnOnce() -> Result<(), String>,
) -> Result<(), TierError> {
    match choice {
        TierChoice::Tracefs => Err(TierError::NotAvailable("tracefs")),
        TierChoice::Bpf => bpf_can_run().map_err(TierError::Bpf),
        TierChoice::Auto | TierChoice::Unprivileged => Ok(()),
    }
}

/// The tier that runs, what the bpf tier started, and why the tiers before
/// it did not run (`bpf: WHY`).
#[derive(Debug)]
pub struct Decision<T> {
    pub tier: Tier,
    pub bpf: Option<T>,
    pub fallback: Option<String>,
}

/// Decides `choice`: `start_bpf` loads the bpf tier (its error is why not).
pub fn decide<T>(
    choice: TierChoice,
    start_bpf: impl FnOnce() -> Result<T, String>,
) -> Result<Decision<T>, TierError> {
    let unprivileged = |fallback| Decision {
        tier: Tier::Unprivileged,
        bpf: None,
        fallback,
    };
    match choice {
        TierChoice::Unprivileged => Ok(unprivileged(None)),
        TierChoice::Tracefs => Err(TierError::NotAvailable("tracefs")),
        TierChoice::Bpf => start_bpf().map_err(TierError::Bpf).map(|t| Decision {
            tier: Tier::Bpf,
            bpf: Some(t),
            fallback: None,
        }),
        TierChoice::Auto => Ok(match start_bpf() {
            Ok(t) => Decision {
                tier: Tier::Bpf,
                bpf: Some(t),
                fallback: None,
            },
            Err(why) => unprivileged(Some(format!("bpf: {why}"))),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_PERMITTED: &str = "not permitted: needs CAP_BPF and CAP_PERFMON (or root)";

    #[test]
    fn auto_takes_bpf_when_it_loads_and_says_why_when_it_does_not() {
        let d = decide(TierChoice::Auto, || Ok(7)).unwrap();
        assert_eq!((d.tier, d.bpf, d.fallback), (Tier::Bpf, Some(7), None));
        let d = decide::<()>(TierChoice::Auto, || Err(NOT_PERMITTED.into())).unwrap();
        assert_eq!(d.tier, Tier::Unprivileged);
        assert_eq!(d.fallback, Some(format!("bpf: {NOT_PERMITTED}")));
    }

    #[test]
    fn an_explicit_tier_runs_or_fails_with_its_line() {
        let d = decide::<()>(TierChoice::Unprivileged, || panic!("not tried")).unwrap();
        assert_eq!((d.tier, d.fallback), (Tier::Unprivileged, None));
        let e = decide::<()>(TierChoice::Bpf, || Err(NOT_PERMITTED.into())).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--tier bpf: the bpf tier cannot run here: {NOT_PERMITTED}")
        );
        assert_eq!(
            check_before_run(TierChoice::Tracefs, || Ok(())),
            Err(TierError::NotAvailable("tracefs"))
        );
        assert!(check_before_run(TierChoice::Auto, || panic!("not asked")).is_ok());
        assert_eq!(Tier::Bpf.detector(), "latscope-bpf");
    }
}
