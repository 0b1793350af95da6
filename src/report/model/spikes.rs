//! The spikes of `--trace-spikes` in the Report: every sample above the
//! threshold that was kept, with what the kernel trace shows ran on its CPU
//! between the moment it was due and the moment it ran, and the attribution.
//! Built by `crate::spikes`; read by the console, the JSON and the HTML page.

use crate::units::format_ns;
use serde::{Deserialize, Serialize};

/// The spike trace of one test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpikeTrace {
    /// Samples above this are spikes, ns.
    pub threshold_ns: u64,
    /// The trace events recorded.
    pub source: String,
    /// The collector that ran: `bpf` (the in-kernel flight recorder) or
    /// `tracefs` with why not BPF; empty in reports from before it existed.
    #[serde(default)]
    pub collector: crate::rt::bpf::CollectorUsed,
    /// The most spikes kept (the worst ones); the others are only counted.
    pub max_kept: usize,
    /// Samples above the threshold the trace reader received.
    pub spikes_seen: u64,
    /// Spikes above the threshold not kept (beyond `max_kept`, less bad).
    pub spikes_not_kept: u64,
    /// Spikes the measuring threads could not hand over (their queue was
    /// full): neither kept nor counted in `spikes_seen`.
    pub spikes_dropped: u64,
    pub events_read: u64,
    /// Events the kernel dropped because the reader fell behind (tracefs),
    /// or did not hand to a program (BPF: another program ran on its CPU).
    pub events_lost: u64,
    /// BPF: spikes whose window the recorder had overwritten before the
    /// collector read it (each flagged `events_lost`).
    #[serde(default)]
    pub windows_overwritten: u64,
    /// BPF: events the recorder did not write because its ring was full of
    /// windows held for the collector (it came later than the ring lasts);
    /// the spikes whose window they fall in are flagged `events_lost`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events_refused: u64,
    /// CPU time of the trace reader thread.
    pub reader_cpu_ns: u64,
    /// The trace reader had no CPU of its own (every CPU it may use was
    /// measured): it ran beside the measured tasks, which it can delay.
    #[serde(default)]
    pub reader_on_measured_cpus: bool,
    /// The kept spikes, worst first.
    pub spikes: Vec<Spike>,
}

/// One sample above the threshold and why it was late.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    /// The series it belongs to (its label).
    pub series: String,
    /// The CPU the measuring task woke on, whose events are attributed.
    pub cpu: usize,
    pub tid: i32,
    /// CLOCK_MONOTONIC ns: when the wake-up was due (the timer's expiry, or
    /// the sender's stamp / the round trip's start for IPC) and when the
    /// task ran (its clock read).
    pub expected_ns: u64,
    pub actual_ns: u64,
    pub latency_ns: u64,
    /// The trace saw the measured task woken (`sched_wakeup`) this long
    /// after `expected_ns`.
    pub woken_after_ns: Option<u64>,
    /// What ran on the CPU in the window, largest first (each clipped to the
    /// window; IRQs and softirqs are not counted in the task they interrupt).
    pub causes: Vec<Cause>,
    /// The CPU was idle this long in the window.
    pub idle_ns: u64,
    /// Neither a cause, idle nor the measured tasks: time the trace cannot
    /// explain (interrupts off, the hypervisor, an untraced interrupt).
    pub unexplained_ns: u64,
    /// The measuring task and its peer ran this long in the window.
    #[serde(default)]
    pub measured_ns: u64,
    /// A task took the CPU from a measured task while it was runnable.
    pub preempted_by: Option<String>,
    /// A non-real-time task ran while the real-time measured task was woken
    /// and waiting: the kernel's real-time throttling.
    pub rt_throttling: bool,
    /// The trace of this CPU did not reach back to `expected_ns`.
    pub window_truncated: bool,
    /// The kernel lost events during the window: the attribution may miss some.
    pub events_lost: bool,
    /// The attribution in one line (what the console prints for the worst).
    pub summary: String,
    /// The events of the CPU from shortly before `expected_ns` to `actual_ns`.
    pub events: Vec<SpikeEvent>,
    /// Events of the window beyond the cap (the earliest are left out).
    pub events_omitted: u64,
}

/// Something that ran on the CPU during a spike's window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// `irq`, `softirq`, `nmi` (named "NMI": time in NMI handlers, where the
    /// kernel has `nmi:nmi_handler`), `task`, `tracer`: latscope's own trace reader,
    /// which competes with the measured tasks only when no other CPU was
    /// free for it, or `hardware`: time no recorded event explains (a gap
    /// the noise spinner saw while it ran; an idle CPU whose due timer
    /// interrupt came late), named "unexplained: hardware, firmware or
    /// hypervisor (SMI, VM exit)".
    pub kind: String,
    /// `24 virtio0-input`, `NET_RX`, `kworker/1:1 (pid 42)`.
    pub name: String,
    /// Time it ran within the window, ns.
    pub ns: u64,
    /// How many times it started (or was running at the window's start).
    pub count: u32,
}

impl Cause {
    /// `softirq NET_RX 52 us`, `IRQ 24 virtio0-input 11 us`, `task spike-maker (pid 9) 2.1 ms`.
    pub fn describe(&self) -> String {
        let kind = match self.kind.as_str() {
            "irq" => "IRQ",
            "tracer" => "latscope's trace reader",
            // The name says it all ("unexplained: hardware, ...").
            "hardware" | "nmi" => return format!("{} {}", self.name, format_ns(self.ns as i64)),
            other => other,
        };
        format!("{kind} {} {}", self.name, format_ns(self.ns as i64))
    }
}

/// One trace event of a spike's window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpikeEvent {
    /// Relative to `expected_ns` (negative: before it).
    pub at_ns: i64,
    /// The event name (`sched_switch`, `irq_handler_entry`, ...).
    pub event: String,
    /// Its fields, as the kernel's text output prints them.
    pub text: String,
}

impl SpikeTrace {
    /// The console's line about the worst spike, or None without spikes.
    pub fn worst_line(&self) -> Option<String> {
        self.spikes.first().map(|s| s.summary.clone())
    }

    /// How many spikes there were, for people.
    pub fn count_line(&self) -> String {
        let mut line = format!(
            "{} sample{} above {} traced",
            self.spikes_seen,
            if self.spikes_seen == 1 { "" } else { "s" },
            format_ns(self.threshold_ns as i64)
        );
        if self.spikes_not_kept > 0 {
            line.push_str(&format!(
                ", the worst {} kept",
                self.spikes_seen - self.spikes_not_kept
            ));
        }
        if self.spikes_dropped > 0 {
            line.push_str(&format!(
                ", {} more not handed over (queue full)",
                self.spikes_dropped
            ));
        }
        if self.windows_overwritten > 0 {
            line.push_str(&format!(
                ", {} windows overwritten before they were read",
                self.windows_overwritten
            ));
        }
        if self.events_lost > 0 {
            line.push_str(&format!(", {} trace events lost", self.events_lost));
        }
        if self.events_refused > 0 {
            line.push_str(&format!(
                ", {} events not recorded (the recorder was full of windows held for its collector)",
                self.events_refused
            ));
        }
        if !self.collector.name.is_empty() {
            line.push_str(&format!(" ({})", self.collector.line()));
        }
        if self.reader_on_measured_cpus {
            line.push_str(
                ", the trace reader shared the measured CPUs (no free CPU for it: spikes it caused name it)",
            );
        }
        line
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
