//! What the kernel log said while a test ran (`Report.kernel_log`); the
//! follower that fills it is `crate::kernel_log`.

use serde::{Deserialize, Serialize};

/// Messages kept per run; more are counted in `messages_not_kept`.
pub const MAX_KEPT: usize = 100;

/// Why a kernel message matters, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// `sched: RT throttling activated`: real-time tasks were stopped.
    RtThrottling,
    /// An RCU stall (`rcu: INFO: rcu_sched self-detected stall on CPU`).
    RcuStall,
    /// `task ... blocked for more than N seconds`.
    HungTask,
    /// A soft or hard lockup.
    Lockup,
    /// An oops or BUG.
    Oops,
    /// A kernel `WARNING:` (WARN_ON) with its backtrace.
    KernelWarning,
    /// Any other message at level error or worse (0..3).
    Error,
    /// Any other message at level warning (4).
    Warning,
}

impl MessageKind {
    fn describe(self) -> &'static str {
        match self {
            MessageKind::RtThrottling => "RT throttling",
            MessageKind::RcuStall => "RCU stall",
            MessageKind::HungTask => "hung task",
            MessageKind::Lockup => "lockup",
            MessageKind::Oops => "oops/BUG",
            MessageKind::KernelWarning => "kernel WARNING",
            MessageKind::Error => "error",
            MessageKind::Warning => "warning",
        }
    }
}

/// One kernel message kept from the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelMessage {
    /// Seconds from the start of the run (kernel timestamps; about
    /// CLOCK_MONOTONIC).
    pub time_s: f64,
    /// Syslog level: 0 emergency .. 4 warning .. 7 debug.
    pub level: u8,
    pub kind: MessageKind,
    pub text: String,
}

/// What the kernel log said during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelLog {
    /// The log was read for the whole run.
    pub followed: bool,
    /// Why it was not followed (or records were lost); not an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub messages: Vec<KernelMessage>,
    /// Messages that mattered beyond the first `MAX_KEPT`.
    #[serde(default)]
    pub messages_not_kept: u64,
}

impl KernelLog {
    /// One console line per kind of message: count and the first one.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut kinds: Vec<MessageKind> = self.messages.iter().map(|m| m.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let mut lines: Vec<String> = kinds
            .into_iter()
            .filter_map(|kind| {
                let mut of_kind = self.messages.iter().filter(|m| m.kind == kind);
                let first = of_kind.next()?;
                Some(format!(
                    "kernel log: {} {} message(s) while measuring, the first at {:.1} s: {}",
                    1 + of_kind.count(),
                    kind.describe(),
                    first.time_s,
                    first.text
                ))
            })
            .collect();
        if self.messages_not_kept > 0 {
            lines.push(format!(
                "kernel log: {} more message(s) not kept (the report keeps {MAX_KEPT})",
                self.messages_not_kept
            ));
        }
        lines
    }
}
