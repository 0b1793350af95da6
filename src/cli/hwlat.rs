//! `latscope hwlat` and the `hwlatdetect` name's words.

use super::VerdictArgs;
use super::parsers::Checked;
use crate::units::values::{self, CpuList};
use clap::{Args, ValueEnum};
use std::time::Duration;

/// How `latscope hwlat` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HwlatFormat {
    /// latscope's per-CPU table with the gaps by class
    Modern,
    /// rtla hwnoise's summary table (CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI)
    Hwnoise,
}

/// `--tier`: what classifies the gaps (docs/hwlat.md, "Tiers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierArg {
    /// bpf where its programs load, else the next tier, saying why
    Auto,
    /// a per-CPU interference counter in the kernel: each gap by itself (root, or CAP_BPF and CAP_PERFMON)
    Bpf,
    /// a private tracefs instance with the same events
    Tracefs,
    /// /proc tables per sub-window, no privilege needed: window-precise
    Unprivileged,
}

/// `latscope hwlat`: a busy sampler per measured CPU.
#[derive(Debug, Clone, Args)]
pub struct HwlatArgs {
    /// The CPUs to measure, one sampler each, all at once (e.g. 1,3-5) [default: every usable CPU]
    #[arg(long, visible_alias = "cpus", value_name = "LIST", value_parser = Checked(values::cpus))]
    pub cpu: Option<CpuList>,
    /// A gap between two clock reads longer than TIME is counted (ns/us/ms; a bare number is
    /// microseconds)
    #[arg(long, value_name = "TIME", default_value = "10us", value_parser = Checked(values::noise_threshold_ns))]
    pub threshold: u64,
    /// Sample for TIME of every --window, sleep the rest (a bare number is microseconds)
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = Checked(values::micros_or_unit))]
    pub width: u64,
    /// The period of the --width duty cycle (a bare number is microseconds)
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = Checked(values::micros_or_unit))]
    pub window: u64,
    /// Classify gaps per sub-window of TIME: short enough to fall between two ticks (a bare
    /// number is microseconds)
    #[arg(long = "sub-window", value_name = "TIME", default_value = "500us", value_parser = Checked(values::micros_or_unit))]
    pub sub_window: u64,
    /// Run for TIME: a number of seconds, or with s/m/h/d suffixes (10s, 5m, 1h30m) [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "TIME", value_parser = Checked(values::seconds))]
    pub duration: Option<Duration>,
    /// SCHED_FIFO priority of the samplers
    #[arg(short = 'p', long = "priority", value_name = "PRIO", default_value = "95", value_parser = Checked(values::priority))]
    pub priority: u64,
    /// Output format
    #[arg(long, value_enum, default_value = "modern")]
    pub format: HwlatFormat,
    /// What classifies the gaps: the bpf tier's counter, tracefs, or the unprivileged /proc tables
    #[arg(long, value_enum, default_value = "auto")]
    pub tier: TierArg,
    /// Do not lock memory with mlockall
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// The `hwlatdetect` name: its argparse words, read by settings/hwlatdetect.rs.
#[derive(Debug, Clone, Args)]
pub struct HwlatdetectArgs {
    /// hwlatdetect's options, as rt-tests 2.10 takes them
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}
