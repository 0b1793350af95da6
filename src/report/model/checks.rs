//! The doctor's findings as a report records them (`sysinfo.checks`): the
//! doctor (doctor/) makes them, `latscope doctor` and the exporters print them.

use serde::{Deserialize, Serialize};

/// How a fact bears on real-time latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// As a real-time system wants it.
    Ok,
    /// Costs latency or trust in the figures; fine for soft real time.
    Warn,
    /// Real-time latency cannot be bounded (or the caller cannot run real-time work) until fixed.
    Bad,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Bad => "bad",
        }
    }
}

/// One check's finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, `group.name`: `kernel.preemption`.
    pub id: String,
    /// What is checked, for people: `preemption model`.
    pub title: String,
    pub verdict: Verdict,
    /// The value found: `PREEMPT_DYNAMIC (not PREEMPT_RT)`.
    pub value: String,
    /// What the finding means for latency, as one sentence (a report's
    /// warning quotes it).
    pub meaning: String,
    /// What to do about it, one line; `None` when the verdict is ok.
    pub fix: Option<String>,
}

impl Check {
    /// The group, the part of the id before the dot.
    pub fn group(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }
}

/// How many checks have each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub bad: usize,
}

impl Summary {
    pub fn of(checks: &[Check]) -> Summary {
        let count = |v| checks.iter().filter(|c| c.verdict == v).count();
        Summary {
            ok: count(Verdict::Ok),
            warn: count(Verdict::Warn),
            bad: count(Verdict::Bad),
        }
    }
}
