//! Command-line declarations only (clap derive). Validation into typed
//! settings happens in `settings`; measuring happens in `commands`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "latscope",
    version,
    about = "Measure the latencies a real-time Linux system lives by",
    long_about = "Measure the latencies a real-time Linux system lives by: thread wake-up \
through IPC primitives, with nanosecond clocks, percentiles and HDR histograms.\n\n\
Exit codes: 0 ok, 1 run-time error, 2 bad usage, 3 --max-latency crossed.",
    allow_negative_numbers = true,
    // getopt semantics, as in the original tools: a repeated option's last value wins.
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// POSIX message queue wake-up latency (replaces pmqtest; same options)
    #[command(allow_negative_numbers = true, args_override_self = true)]
    Mq(Box<MqArgs>),
    /// The main job: run every test briefly and print one overview of this machine
    #[command(allow_negative_numbers = true, args_override_self = true)]
    Suite(SuiteArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A readable table with percentiles and automatic units
    Modern,
    /// The original tool's exact lines (and rt-tests JSON with --json)
    Classic,
}

/// Options shared by every test that reports and judges latencies.
#[derive(Debug, Clone, Args)]
pub struct VerdictArgs {
    /// Exit with code 3 after the report if any sample exceeds USEC microseconds
    #[arg(long = "max-latency", value_name = "USEC")]
    pub max_latency: Option<String>,
    /// Write the results to FILE as JSON ('-' for standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print only the final summary (no live progress line)
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct MqArgs {
    /// Pin pair N to CPU N (bare -a), or all pairs to CPU PROC (-a PROC)
    #[arg(short = 'a', long, value_name = "PROC", num_args = 0..=1, default_missing_value = "all")]
    pub affinity: Option<String>,
    /// Stop the run and the kernel tracer when a sample exceeds USEC microseconds
    #[arg(short = 'b', long, value_name = "USEC")]
    pub breaktrace: Option<String>,
    /// Added to the interval of each further pair, in microseconds [default: 500]
    #[arg(short = 'd', long, value_name = "DIST")]
    pub distance: Option<String>,
    /// Run for TIME: a number of seconds, or with s/m/h/d suffixes (10s, 5m, 1h30m, 0.5m)
    #[arg(short = 'D', long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Delay each send by TO seconds to force receive timeouts (requires -T)
    #[arg(short = 'f', long = "forcetimeout", value_name = "TO")]
    pub force_timeout: Option<String>,
    /// Base interval between samples in microseconds [default: 1000]
    #[arg(short = 'i', long, value_name = "INTV")]
    pub interval: Option<String>,
    /// Samples per pair (0 = until stopped) [default: 0]
    #[arg(short = 'l', long, value_name = "LOOPS")]
    pub loops: Option<String>,
    /// Real-time priority of pair 0; pair N gets PRIO-N (at least 1) unless -S
    #[arg(
        short = 'p',
        long = "prio",
        visible_alias = "priority",
        value_name = "PRIO"
    )]
    pub priority: Option<String>,
    /// Scheduling policy [default: fifo with -p above 0, else other]
    #[arg(long, value_enum)]
    pub policy: Option<crate::rt::sched::Policy>,
    /// SMP mode: one pair per usable CPU, pinned, all at the same priority
    #[arg(short = 'S', long)]
    pub smp: bool,
    /// Number of pairs; bare -t: one per usable CPU [default: 1]
    #[arg(short = 't', long, value_name = "NUM", num_args = 0..=1, default_missing_value = "all")]
    pub threads: Option<String>,
    /// Use mq_timedreceive with a timeout of TO seconds; timeouts are counted
    #[arg(short = 'T', long, value_name = "TO")]
    pub timeout: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "modern")]
    pub format: OutputFormat,
    /// Do not lock memory with mlockall (page faults may then show up as latency)
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,
    /// Do not hold /dev/cpu_dma_latency at 0 (deep CPU idle states stay allowed)
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Total time for all tests (s/m/h/d suffixes; bare number = seconds)
    #[arg(short = 'D', long, value_name = "TIME", default_value = "10s")]
    pub duration: String,
    #[command(flatten)]
    pub verdict: VerdictArgs,
}
