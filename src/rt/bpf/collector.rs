//! The collector of the kernel events of `--breakdown` and `--trace-spikes`
//! as the command line asks for it and as the Report records it: in the
//! kernel with BPF, or through tracefs, and why, in words the console and
//! the Report show (the decision itself is `probes::choice`):
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
}
