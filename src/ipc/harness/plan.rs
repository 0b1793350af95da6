//! What a run is asked to do: the settings of each pair and of the whole run.

use crate::rt::sched::Policy;
use crate::stats::samples::TestSamples;
use std::time::Duration;

/// How a sample is taken (see the module documentation of `harness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    OneWay,
    RoundTrip,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::OneWay => "one-way",
            Mode::RoundTrip => "round-trip",
        }
    }
}

/// What the sender of each pair is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tasks {
    #[default]
    Threads,
    Processes,
}

impl Tasks {
    pub fn as_str(self) -> &'static str {
        match self {
            Tasks::Threads => "threads",
            Tasks::Processes => "processes",
        }
    }
}

/// Settings of one pair.
#[derive(Debug, Clone)]
pub struct PairPlan {
    /// Pin the receiver (round trip: the task that stamps both ends) to this
    /// CPU; `None` lets the scheduler choose.
    pub receiver_cpu: Option<usize>,
    /// Pin the sender (round trip: the echoing peer) to this CPU.
    pub sender_cpu: Option<usize>,
    pub policy: Policy,
    pub priority: i32,
    /// 0 runs samples back to back.
    pub interval_ns: u64,
    /// Samples to take; `None` runs until stopped.
    pub loops: Option<u64>,
}

/// Settings of a whole run.
#[derive(Debug, Clone, Default)]
pub struct RunPlan {
    pub pairs: Vec<PairPlan>,
    pub mode: Mode,
    pub tasks: Tasks,
    pub duration: Option<Duration>,
    /// Receiver waits time out after this long; timeouts are counted and the
    /// wait goes on, so the sample still measures the whole delay.
    pub receive_timeout: Option<Duration>,
    /// Extra delay of the sender before each post (pmqtest `-f`), to provoke timeouts.
    pub forced_send_delay: Option<Duration>,
    /// Stop the run (and the kernel tracer) at the first sample above this.
    pub breaktrace_ns: Option<u64>,
    /// `-b` as the trigger of `--on-threshold`: every sample above
    /// `breaktrace_ns` is counted there; with `continue` it stops nothing.
    pub breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
    /// `--trace-spikes`: hand every sample above this (ns) to the spike trace.
    pub spike_threshold_ns: Option<u64>,
    /// `--collector`: how the spike trace collects kernel events.
    pub spike_collector: crate::rt::bpf::CollectorChoice,
    /// Count samples above this per pair (the `--max-latency` verdict).
    pub limit_ns: Option<u64>,
    /// Sender processes lock their memory too (`mlockall` is not inherited).
    pub lock_memory: bool,
    /// `--samples`: each pair's sample ring (by pair index).
    pub samples: Option<TestSamples>,
}

impl RunPlan {
    /// No duration and no loop count: the run goes on until it is stopped.
    pub fn runs_until_stopped(&self) -> bool {
        self.duration.is_none() && self.pairs.iter().all(|p| p.loops.is_none())
    }
}
