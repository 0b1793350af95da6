//! Turns the typed command-line values into checked settings. A value on
//! its own is read once, where clap reads it (`units::values`: a number, a
//! duration, a size, a CPU list, with its bounds); the rules here are those
//! that need several options together or the machine (CPUs online, a
//! policy's priority range, outputs that can be written). Each breaks with
//! one line saying what is wrong and what to do (exit code 2), before
//! anything is measured.

use crate::cli::{
    CommonArgs, LayoutArgs, ModeArg, MqArgs, OutputArgs, OutputFormat, PairArgs, PolicyArg,
    SemArgs, ThresholdArgs, VerdictArgs,
};
use crate::ipc::harness::{Mode, PairPlan, RunPlan, Tasks};
use crate::rt::sched::{self, Policy};
use crate::rt::sysinfo::online_cpus;
use crate::threshold::Threshold;
use crate::units::shown;
use crate::units::values::{self, MAX_INTERVAL_US, MAX_PAIRS, NumberOrAll};

pub mod actions;
pub mod cleanup;
pub mod compare;
pub mod container;
pub mod cyclicdeadline;
pub mod cyclictest;
pub mod getopt;
pub mod goflag;
pub mod hwlat;
pub mod hwlatdetect;
pub mod ipc_sequence;
pub mod logdisk;
pub mod noise;
pub mod oslat;
pub mod pi_stress;
pub mod ptsematest;
pub mod report;
pub mod rt_migrate;
pub mod runner;
pub mod signaltest;
pub mod timer;
pub mod usages;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A usage error: the message is one line, shown as `latscope: error: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `--policy` as rt/ takes it, with the reservation of `--policy deadline`
/// (`--runtime`, `--deadline`, in ns; the test's period `period_ns` completes it,
/// checked against the kernel's rules). `period_ns` None (the IPC pairs,
/// each with its own interval) leaves the period to
/// `Reservation::for_period`, and an absent `--deadline` as 0, "the period".
pub fn policy_of(
    policy: Option<PolicyArg>,
    runtime_ns: Option<u64>,
    deadline_ns: Option<u64>,
    period_ns: Option<u64>,
) -> Result<Option<Policy>, UsageError> {
    if policy != Some(PolicyArg::Deadline) && (runtime_ns.is_some() || deadline_ns.is_some()) {
        let option = if runtime_ns.is_some() {
            "--runtime"
        } else {
            "--deadline"
        };
        return Err(usage(format!(
            "{option} belongs to a SCHED_DEADLINE reservation: add --policy deadline"
        )));
    }
    policy
        .map(|p| match p {
        PolicyArg::Fifo => Ok(Policy::Fifo),
        PolicyArg::Rr => Ok(Policy::Rr),
        PolicyArg::Other => Ok(Policy::Other),
        PolicyArg::Deadline => {
            let runtime_ns = runtime_ns.ok_or_else(|| {
                usage("--policy deadline needs --runtime TIME: the CPU time reserved in every period (e.g. --runtime 100us)")
            })?;
            let reservation = sched::Reservation {
                runtime_ns,
                deadline_ns: deadline_ns.unwrap_or(0),
                period_ns: 0,
            };
            match period_ns {
                Some(period) => checked_reservation(reservation, period).map(Policy::Deadline),
                None => Ok(Policy::Deadline(reservation)),
            }
        }
    })
    .transpose()
}

/// `reservation` over the period `period_ns`, checked against the kernel's
/// rules (bad input: exit 2).
pub fn checked_reservation(
    reservation: sched::Reservation,
    period_ns: u64,
) -> Result<sched::Reservation, UsageError> {
    let reservation = reservation.for_period(period_ns);
    reservation.check().map_err(usage)?;
    Ok(reservation)
}

/// A `--load` value that cannot be used is bad usage.
impl From<crate::load::LoadSpecError> for UsageError {
    fn from(e: crate::load::LoadSpecError) -> Self {
        UsageError(e.0)
    }
}

fn usage(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

/// Where one output goes (`--json`, `--csv`, `--markdown`, `--junit`,
/// `--prom`, `--hdr-log`, a command's own files): standard output, or a
/// file in an existing, writable directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    Stdout,
    File(PathBuf),
}

pub fn check_json_path(path: &Path) -> Result<OutputTarget, UsageError> {
    check_output_path("--json", path)
}

/// latscope's own option among a drop-in's (cyclictest, pi_stress): the
/// full latscope Report of the run in a file.
pub const LATSCOPE_JSON: &str = "latscope-json";

/// The file of one of latscope's own options among a drop-in's (`name`:
/// `latscope-json`, `latscope-rteval-xml`), checked as every latscope output
/// is before measuring (a usage error, exit 2). Not standard output: that
/// carries `tool`'s own lines, which a parser must find unchanged.
pub fn check_latscope_output(
    name: &str,
    path: &str,
    tool: &str,
) -> Result<std::path::PathBuf, getopt::GetoptUsage> {
    let option = format!("--{name}");
    match check_output_path(&option, Path::new(path)) {
        Ok(OutputTarget::File(p)) => Ok(p),
        Ok(OutputTarget::Stdout) => Err(getopt::GetoptUsage::Bad(format!(
            "{option} -: standard output carries {tool}'s own output; give a file name"
        ))),
        Err(e) => Err(getopt::GetoptUsage::Bad(e.0)),
    }
}

/// An output destination given to `option`: standard output (`-`), or a file
/// latscope will be able to write at the end of the run (its directory exists
/// and is writable, a file can actually be created there, and an existing
/// file there may be replaced: see `check_replaceable`). Checked before
/// anything is measured, without touching an existing file.
pub fn check_output_path(option: &str, path: &Path) -> Result<OutputTarget, UsageError> {
    /// Longest file name (NAME_MAX) and path (PATH_MAX) Linux accepts.
    const NAME_MAX: usize = 255;
    const PATH_MAX: usize = 4096;
    if path.as_os_str() == "-" {
        return Ok(OutputTarget::Stdout);
    }
    if path.as_os_str().is_empty() {
        return Err(usage(format!(
            "{option} needs a file name (or '-' for standard output)"
        )));
    }
    let shown_path = shown(&path.to_string_lossy());
    if path.as_os_str().len() >= PATH_MAX {
        return Err(usage(format!(
            "{option} {shown_path}: path longer than {PATH_MAX} bytes; choose a shorter path"
        )));
    }
    if path.file_name().is_some_and(|n| n.len() > NAME_MAX) {
        return Err(usage(format!(
            "{option} {shown_path}: file name longer than {NAME_MAX} bytes; choose a shorter name"
        )));
    }
    if path.is_dir() {
        return Err(usage(format!(
            "{option} {shown_path}: is a directory; give a file name inside it"
        )));
    }
    // What writing the path will mean (rt::outfile): a device, FIFO, socket
    // or standard stream is written in place at the end and needs nothing
    // more; a new or regular file (a link's target) is replaced from its
    // directory, which is checked below.
    let path_checked = match crate::rt::outfile::classify(path) {
        Ok(crate::rt::outfile::Destination::Replace(p)) => p,
        Ok(_) => return Ok(OutputTarget::File(path.to_path_buf())),
        Err(e) => {
            return Err(usage(format!(
                "{option} {shown_path}: {}; choose another path",
                crate::rt::os_error_text(&e)
            )));
        }
    };
    let dir = match path_checked.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let shown_dir = shown(&dir.to_string_lossy());
    if !dir.is_dir() {
        let why = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(usage(format!(
            "{option} {shown_path}: {shown_dir} {why}; create the directory or choose another path"
        )));
    }
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| usage(format!("{option} path contains a NUL byte")))?;
    // SAFETY: valid C string.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK) } != 0 {
        return Err(usage(format!(
            "{option} {shown_path}: directory {shown_dir} is not writable; choose another path"
        )));
    }
    check_replaceable(&path_checked, &dir)
        .map_err(|why| usage(format!("{option} {shown_path}: {why}; choose another path")))?;
    Ok(OutputTarget::File(path.to_path_buf()))
}

/// Whether latscope will be able to put its file at `path` (a new path or
/// a regular file, a link already resolved) at the end of the run, the way
/// it writes it: a temporary file in `dir` (the same directory), renamed
/// over `path`. Checked by doing the first half: an exclusive temporary file
/// is created there (rt::outfile::create_temp, mode 0600) and removed again,
/// so an existing file at `path` is neither truncated nor touched. This
/// catches what `access(2)` does not: `/proc` and `/sys` (root may "write"
/// there, but no file can be created), read-only filesystems, full inode
/// tables. The rename must be allowed to replace an existing file (a sticky
/// directory such as `/tmp` refuses to replace another user's file).
fn check_replaceable(path: &Path, dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(existing) = std::fs::symlink_metadata(path) {
        // SAFETY: geteuid cannot fail.
        let euid = unsafe { libc::geteuid() };
        if let Ok(d) = std::fs::metadata(dir)
            && d.mode() & libc::S_ISVTX != 0
            && euid != 0
            && existing.uid() != euid
            && d.uid() != euid
        {
            return Err(format!(
                "belongs to another user in a sticky directory ({}): it cannot be replaced",
                shown(&dir.to_string_lossy())
            ));
        }
    }
    match crate::rt::outfile::create_temp(dir, 0o600) {
        Ok((file, probe)) => {
            drop(file);
            // Ours: created exclusively under a fresh random name just now.
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "cannot create a file in {} ({})",
            shown(&dir.to_string_lossy()),
            crate::rt::os_error_text(&e)
        )),
    }
}

/// Two outputs that would end up in one file (the same path, spelled
/// differently, through a link, or a hard link) are bad usage: the second
/// would silently replace the first. Devices, FIFOs and standard streams
/// may be named twice: both are written there.
pub fn check_distinct_outputs(named: &[(&str, Option<&OutputTarget>)]) -> Result<(), UsageError> {
    let files: Vec<(&str, &Path)> = named
        .iter()
        .filter_map(|(option, target)| match target {
            Some(OutputTarget::File(p)) => Some((*option, p.as_path())),
            _ => None,
        })
        .collect();
    for (i, (first, a)) in files.iter().enumerate() {
        for (second, b) in &files[i + 1..] {
            if crate::rt::outfile::same_file_destination(a, b) {
                return Err(usage(format!(
                    "{first} and {second} name the same file ({}): one would replace the other; give each output its own file",
                    shown(&b.to_string_lossy())
                )));
            }
        }
    }
    Ok(())
}

/// The formats a finished report is written in besides the console, each
/// given by its option. `pipeline::deliver` gives each its exporter (one
/// exhaustive match), and `Outputs::target` its destination, so a format is
/// declared once and neither list can fall out of step with the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Json,
    Csv,
    Markdown,
    Junit,
    Prom,
    /// rteval's summary.xml (timer and cyclictest runs only).
    RtevalXml,
}

impl ReportFormat {
    /// Every format, in the order the files are written.
    pub const ALL: [ReportFormat; 6] = [
        ReportFormat::Json,
        ReportFormat::Csv,
        ReportFormat::Markdown,
        ReportFormat::Junit,
        ReportFormat::Prom,
        ReportFormat::RtevalXml,
    ];

    /// The option that asks for it.
    pub fn option(self) -> &'static str {
        match self {
            ReportFormat::Json => "--json",
            ReportFormat::Csv => "--csv",
            ReportFormat::Markdown => "--markdown",
            ReportFormat::Junit => "--junit",
            ReportFormat::Prom => "--prom",
            ReportFormat::RtevalXml => "--rteval-xml",
        }
    }
}

/// Where the results go besides the console: a destination per
/// `ReportFormat`, `--hdr-log` and `--samples`, each checked (see
/// `check_output_path`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    pub json: Option<OutputTarget>,
    pub csv: Option<OutputTarget>,
    pub markdown: Option<OutputTarget>,
    pub junit: Option<OutputTarget>,
    pub prom: Option<OutputTarget>,
    /// `--rteval-xml` (the timer's option; cyclictest's `--latscope-rteval-xml`).
    pub rteval_xml: Option<OutputTarget>,
    /// `--hdr-log`: streamed as the run goes (pipeline::hdrlog), a file only.
    pub hdr_log: Option<OutputTarget>,
    /// `--samples FILE` and `--samples-limit SIZE` (see `samples_output`).
    pub samples: Option<SamplesOutput>,
}

impl Outputs {
    /// Checks the three options. `others` are further outputs of the command
    /// (timer's `-g`) that may also claim standard output: at most one may.
    pub fn from_args(
        args: &OutputArgs,
        others: &[(&str, Option<&OutputTarget>)],
    ) -> Result<Outputs, UsageError> {
        let check = |format: Option<ReportFormat>, path: &Option<PathBuf>| {
            let option = format.map_or("--hdr-log", ReportFormat::option);
            path.as_deref()
                .map(|p| check_output_path(option, p))
                .transpose()
        };
        let outputs = Outputs {
            json: check(Some(ReportFormat::Json), &args.json)?,
            csv: check(Some(ReportFormat::Csv), &args.csv)?,
            markdown: check(Some(ReportFormat::Markdown), &args.markdown)?,
            junit: check(Some(ReportFormat::Junit), &args.junit)?,
            prom: check(Some(ReportFormat::Prom), &args.prom)?,
            rteval_xml: None,
            hdr_log: check(None, &args.hdr_log)?,
            samples: samples_output(args)?,
        };
        if outputs.hdr_log == Some(OutputTarget::Stdout) {
            return Err(usage(
                "--hdr-log needs a file name: the interval log is written as the run goes, beside the console output".to_string(),
            ));
        }
        let mut to_stdout: Vec<&str> = others
            .iter()
            .filter(|(_, t)| *t == Some(&OutputTarget::Stdout))
            .map(|(name, _)| *name)
            .collect();
        for (format, target) in outputs.files() {
            if *target == OutputTarget::Stdout {
                to_stdout.push(format.option());
            }
        }
        if to_stdout.len() > 1 {
            let last = to_stdout.pop().unwrap_or_default();
            return Err(usage(format!(
                "{} - and {last} - both want standard output: only one output can be '-', send the others to files",
                to_stdout.join(" -, ")
            )));
        }
        let mut all: Vec<(&str, Option<&OutputTarget>)> = outputs
            .files()
            .map(|(format, target)| (format.option(), Some(target)))
            .collect();
        all.push(("--hdr-log", outputs.hdr_log.as_ref()));
        all.extend_from_slice(others);
        let samples = outputs
            .samples
            .as_ref()
            .map(|s| OutputTarget::File(s.path.clone()));
        all.push(("--samples", samples.as_ref()));
        check_distinct_outputs(&all)?;
        Ok(outputs)
    }

    /// `from_args`, the files of the `trace` actions being outputs of the
    /// run too: a report written over a saved trace would lose it.
    pub fn with_actions(
        args: &OutputArgs,
        others: &[(&str, Option<&OutputTarget>)],
        actions: &actions::Actions,
    ) -> Result<Outputs, UsageError> {
        let traces = actions.trace_outputs()?;
        let mut all = others.to_vec();
        all.extend(
            traces
                .iter()
                .map(|(option, target)| (*option, Some(target))),
        );
        Outputs::from_args(args, &all)
    }

    /// Where `format` goes, if it was asked for.
    pub fn target(&self, format: ReportFormat) -> Option<&OutputTarget> {
        match format {
            ReportFormat::Json => self.json.as_ref(),
            ReportFormat::Csv => self.csv.as_ref(),
            ReportFormat::Markdown => self.markdown.as_ref(),
            ReportFormat::Junit => self.junit.as_ref(),
            ReportFormat::Prom => self.prom.as_ref(),
            ReportFormat::RtevalXml => self.rteval_xml.as_ref(),
        }
    }

    /// The report files asked for, each with its destination, in the order
    /// they are written.
    pub fn files(&self) -> impl Iterator<Item = (ReportFormat, &OutputTarget)> {
        ReportFormat::ALL
            .into_iter()
            .filter_map(|format| Some((format, self.target(format)?)))
    }

    /// Whether one of them writes to standard output (which the console
    /// output then leaves to it).
    pub fn to_stdout(&self) -> bool {
        self.files()
            .any(|(_, target)| *target == OutputTarget::Stdout)
    }
}

/// `--samples FILE`: every raw sample to FILE (docs/samples.md), at most
/// `limit_bytes` of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplesOutput {
    pub path: PathBuf,
    pub limit_bytes: u64,
}

/// `--samples` and `--samples-limit`, checked: a file latscope can write
/// (as every output; not standard output, which holds the console report,
/// nor a socket), a limit of at least 4 KiB (sizes as logdisk's: 64K, 1G).
fn samples_output(args: &OutputArgs) -> Result<Option<SamplesOutput>, UsageError> {
    let Some(path) = &args.samples else {
        return match &args.samples_limit {
            Some(_) => Err(usage(
                "--samples-limit needs --samples FILE (the file whose size it limits)",
            )),
            None => Ok(None),
        };
    };
    let to_own_output = || {
        usage(format!(
            "--samples {}: the samples are binary and go to a file, a device or a FIFO, not to standard output or a socket; give a file name",
            shown(&path.to_string_lossy())
        ))
    };
    if check_output_path("--samples", path)? == OutputTarget::Stdout {
        return Err(to_own_output());
    }
    if matches!(
        crate::rt::outfile::classify(path),
        Ok(crate::rt::outfile::Destination::Stdio(_) | crate::rt::outfile::Destination::Socket(_))
    ) {
        return Err(to_own_output());
    }
    Ok(Some(SamplesOutput {
        path: path.clone(),
        limit_bytes: args
            .samples_limit
            .unwrap_or(values::DEFAULT_SAMPLES_LIMIT_BYTES),
    }))
}

/// `--fail-if` expressions, parsed; `relative_allowed` only where there is a
/// base to compare with (`compare`).
pub fn parse_thresholds(
    texts: &[String],
    relative_allowed: bool,
) -> Result<Vec<Threshold>, UsageError> {
    texts
        .iter()
        .map(|text| {
            let threshold =
                crate::threshold::parse(text).map_err(|e| usage(format!("--fail-if {e}")))?;
            if threshold.is_relative() && !relative_allowed {
                return Err(usage(format!(
                    "--fail-if '{}': a change from a base (+...) needs latscope compare; a test takes an absolute limit such as {}>50us",
                    threshold.expr,
                    threshold.metric
                )));
            }
            Ok(threshold)
        })
        .collect()
}

/// The absolute `--fail-if` limits a test takes.
pub fn test_thresholds(args: &ThresholdArgs) -> Result<Vec<Threshold>, UsageError> {
    parse_thresholds(&args.fail_if, false)
}

/// Settings shared by every test: output files, verdict limit, quiet.
#[derive(Debug, Clone)]
pub struct VerdictSettings {
    pub outputs: Outputs,
    pub max_latency_us: Option<u64>,
    pub quiet: bool,
    /// `--fail-if`: absolute limits held against every series after the run.
    pub fail_if: Vec<Threshold>,
    /// `--load`: the background load generators, checked.
    pub loads: Vec<crate::load::LoadSpec>,
    /// `--on-threshold`, `--on-end`.
    pub actions: actions::Actions,
}

impl VerdictSettings {
    /// A suite row's own verdict: no outputs, bounds, gates, loads or
    /// actions of its own (the suite applies its own to the whole run), and
    /// no progress line.
    pub fn for_suite_row() -> VerdictSettings {
        VerdictSettings {
            outputs: Outputs::default(),
            max_latency_us: None,
            quiet: true,
            fail_if: Vec::new(),
            loads: Vec::new(),
            actions: Default::default(),
        }
    }

    pub fn from_args(args: &VerdictArgs) -> Result<VerdictSettings, UsageError> {
        VerdictSettings::from_args_beside(args, &[])
    }

    /// As `from_args`, for a test with its own output files `others`
    /// (`logdisk --csvFile`): at most one of all of them is `-`.
    pub fn from_args_beside(
        args: &VerdictArgs,
        others: &[(&str, Option<&OutputTarget>)],
    ) -> Result<VerdictSettings, UsageError> {
        let actions = actions::from_args(
            &args.actions.on_threshold,
            &args.actions.on_end,
            args.max_latency,
        )?;
        VerdictSettings::with_actions(args, others, actions)
    }

    /// As `from_args`, for a test whose `-b` (`break_us`) stops it:
    /// `--on-threshold` acts on the crossing of `--max-latency`, or without
    /// it of `-b` (as in the pair tests' drop-ins, which have only `-b`).
    pub fn from_args_with_break(
        args: &VerdictArgs,
        break_us: Option<u64>,
    ) -> Result<VerdictSettings, UsageError> {
        let actions = actions::from_break_args(
            &args.actions.on_threshold,
            &args.actions.on_end,
            args.max_latency,
            break_us,
            "--max-latency USEC or -b USEC",
        )?;
        VerdictSettings::with_actions(args, &[], actions)
    }

    fn with_actions(
        args: &VerdictArgs,
        others: &[(&str, Option<&OutputTarget>)],
        actions: actions::Actions,
    ) -> Result<VerdictSettings, UsageError> {
        Ok(VerdictSettings {
            outputs: Outputs::with_actions(&args.outputs, others, &actions)?,
            max_latency_us: args.max_latency,
            quiet: args.quiet,
            fail_if: test_thresholds(&args.thresholds)?,
            loads: crate::load::from_args(&args.load.load)?,
            actions,
        })
    }
}

/// `--trace-spikes USEC`: a threshold of at least 1 us.
/// `--collector`, which only means something with an option that collects
/// kernel events: `--trace-spikes`, or `breakdown`, Some(whether it is on)
/// in a test that has `--breakdown` (the timer), None in the others.
pub fn collector(
    args: &crate::cli::SpikeArgs,
    breakdown: Option<bool>,
) -> Result<crate::rt::bpf::CollectorChoice, UsageError> {
    use crate::cli::CollectorArg;
    use crate::rt::bpf::CollectorChoice;
    let Some(choice) = args.collector else {
        return Ok(CollectorChoice::Auto);
    };
    if args.trace_spikes.is_none() && breakdown != Some(true) {
        let with = if breakdown.is_some() {
            "--breakdown or --trace-spikes"
        } else {
            "--trace-spikes"
        };
        return Err(usage(format!(
            "--collector chooses how kernel events are collected: it needs {with}"
        )));
    }
    Ok(match choice {
        CollectorArg::Auto => CollectorChoice::Auto,
        CollectorArg::Bpf => CollectorChoice::Bpf,
        CollectorArg::Tracefs => CollectorChoice::Tracefs,
    })
}

/// Everything one IPC test needs, checked.
#[derive(Debug, Clone)]
pub struct IpcSettings {
    pub plan: RunPlan,
    pub policy: Policy,
    pub priority: i32,
    pub same_priority: bool,
    pub interval_us: u64,
    pub distance_us: u64,
    pub loops: Option<u64>,
    pub breaktrace_us: Option<u64>,
    /// `--trace-spikes`: attribute every sample above this (us).
    pub trace_spikes_us: Option<u64>,
    /// `--collector`: how `--trace-spikes` collects kernel events.
    pub collector: crate::rt::bpf::CollectorChoice,
    pub cross_cpu: bool,
    pub format: OutputFormat,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
    /// `--deepest-idle-state`.
    pub deepest_idle_state: Option<u32>,
    pub verdict: VerdictSettings,
    /// Notes for the user about ignored options (pmqtest prints the same).
    pub notices: Vec<String>,
}

/// How pairs are placed on CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Unpinned,
    AllOn(usize),
    /// Pair i on the i-th usable CPU (wrapping).
    Spread,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Oneway => Mode::OneWay,
            ModeArg::Roundtrip => Mode::RoundTrip,
        }
    }
}

/// Options that mean the same in every IPC test, checked.
struct Common {
    breaktrace_us: Option<u64>,
    trace_spikes_us: Option<u64>,
    collector: crate::rt::bpf::CollectorChoice,
    duration: Option<Duration>,
    verdict: VerdictSettings,
}

impl Common {
    fn from_args(args: &CommonArgs) -> Result<Common, UsageError> {
        Ok(Common {
            breaktrace_us: args.breaktrace,
            trace_spikes_us: args.spikes.trace_spikes,
            collector: collector(&args.spikes, None)?,
            duration: args.duration,
            verdict: VerdictSettings::from_args_with_break(&args.verdict, args.breaktrace)?,
        })
    }
}

/// The priority asked, checked against the policy's range.
pub fn checked_priority(priority: u64, policy: Policy) -> Result<i32, UsageError> {
    checked_priority_for("-p", priority, policy)
}

/// `checked_priority` for the option that sets the priority (`-p` for the
/// IPC tests, `-P` for the timer, whose `-p` is its period), so the hint
/// names the right option.
pub fn checked_priority_for(
    option: &str,
    priority: u64,
    policy: Policy,
) -> Result<i32, UsageError> {
    if policy.reservation().is_some() && priority != 0 {
        return Err(usage(format!(
            "--policy deadline takes no priority (its reservation, --runtime and --deadline, decides): drop {option}"
        )));
    }
    let (low, high) = policy.priority_range();
    if priority < low as u64 || priority > high as u64 {
        let hint = if policy.is_realtime() {
            format!("use {option} {low}..{high}")
        } else {
            "use --policy fifo or rr for a real-time priority".to_string()
        };
        return Err(usage(format!(
            "priority {priority} is outside the {policy} range {low}..{high}: {hint}"
        )));
    }
    Ok(priority as i32)
}

/// Why deadline tasks are never pinned (see `Policy::may_pin`).
pub const DEADLINE_UNPINNED: &str = "--policy deadline: the tasks are not pinned (the kernel admits a deadline task only with the affinity of its whole root domain)";

/// Pairs, placement and priority from the rt-tests options (-a, -S, -t, -p,
/// --policy), shared by every pair test and `latscope ipc`.
pub struct PairLayout {
    pub count: u64,
    pub placement: Placement,
    pub policy: Policy,
    pub priority: i32,
    pub same_priority: bool,
}

/// Interval, distance and loop count of the rt-tests options, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Microseconds between pair 0's samples (0: back to back).
    pub interval_us: u64,
    /// Microseconds each further pair adds to the interval.
    pub distance_us: u64,
    /// Samples per pair; None: until the duration or a signal ends the run.
    pub loops: Option<u64>,
}

impl Timing {
    pub fn from_args(args: &LayoutArgs, default_interval_us: u64) -> Timing {
        Timing {
            interval_us: args.interval.unwrap_or(default_interval_us),
            distance_us: args.distance,
            loops: loops(args.loops),
        }
    }
}

impl PairLayout {
    /// `default_smp`: without -a/-S/-t, act as -S (what `latscope ipc` does).
    pub fn from_args(
        args: &LayoutArgs,
        default_priority: u64,
        default_smp: bool,
        notices: &mut Vec<String>,
    ) -> Result<PairLayout, UsageError> {
        let (affinity, smp, threads) = (args.affinity, args.smp, args.threads);
        let policy = policy_of(
            args.policy,
            args.reservation.runtime,
            args.reservation.deadline,
            None,
        )?;
        let allowed = sched::allowed_cpus();
        let priority = match args.priority {
            Some(p) => p,
            // A deadline task has no priority (its reservation decides).
            None if policy.is_some_and(|p| p.reservation().is_some()) => 0,
            None => default_priority,
        };
        let policy = policy.unwrap_or(if priority > 0 {
            Policy::Fifo
        } else {
            Policy::Other
        });
        let priority = checked_priority(priority, policy)?;
        let smp = smp || (default_smp && affinity.is_none() && threads.is_none());
        let (count, placement) = if smp {
            if threads.is_some() {
                notices.push("-t ignored due to --smp".to_string());
            }
            if affinity.is_some() {
                notices.push("-a ignored due to --smp".to_string());
            }
            (allowed.len() as u64, Placement::Spread)
        } else {
            let count = match threads {
                None => values::DEFAULT_PAIRS,
                Some(NumberOrAll::All) => allowed.len() as u64,
                Some(NumberOrAll::Number(n)) => n,
            };
            let placement = match affinity {
                None => Placement::Unpinned,
                Some(NumberOrAll::All) => Placement::Spread,
                Some(NumberOrAll::Number(cpu)) => {
                    let cpu = usize::try_from(cpu).unwrap_or(usize::MAX);
                    check_cpu(cpu, &allowed)?;
                    Placement::AllOn(cpu)
                }
            };
            (count, placement)
        };
        if count == 0 || count > MAX_PAIRS {
            return Err(usage(format!(
                "-t/--threads {count} is out of range: use 1..{MAX_PAIRS} pairs"
            )));
        }
        let placement = if policy.may_pin() {
            placement
        } else {
            if !matches!(placement, Placement::Unpinned) {
                notices.push(DEADLINE_UNPINNED.to_string());
            }
            Placement::Unpinned
        };
        Ok(PairLayout {
            count,
            placement,
            policy,
            priority,
            same_priority: smp && priority > 0,
        })
    }

    /// The pairs: pair i waits `interval + i * distance` between samples and,
    /// unless all share one priority, runs at `priority - i` (at least 1).
    pub fn pairs(&self, timing: Timing, cross_cpu: bool) -> Result<Vec<PairPlan>, UsageError> {
        let Timing {
            interval_us,
            distance_us,
            loops,
        } = timing;
        let allowed = sched::allowed_cpus();
        let last_interval = interval_us
            .checked_add(distance_us.saturating_mul(self.count - 1))
            .filter(|&i| i <= MAX_INTERVAL_US);
        if last_interval.is_none() {
            return Err(usage(format!(
                "interval {interval_us} us plus distance {distance_us} us per pair exceeds one hour: use smaller -i/-d"
            )));
        }
        if cross_cpu {
            if allowed.len() < 2 {
                return Err(usage(
                    "--cross-cpu needs two usable CPUs, this process has one (check taskset/cpuset)",
                ));
            }
            if let Placement::AllOn(cpu) = self.placement {
                return Err(usage(format!(
                    "--cross-cpu puts the two tasks of a pair on different CPUs: it cannot be combined with -a {cpu}"
                )));
            }
        }
        if let Some(reservation) = self.policy.reservation() {
            if interval_us == 0 {
                return Err(usage(
                    "--policy deadline reserves CPU time in every period: give an interval (-i) above 0",
                ));
            }
            if cross_cpu {
                return Err(usage(format!(
                    "--cross-cpu pins the tasks of a pair: {DEADLINE_UNPINNED}"
                )));
            }
            for i in 0..self.count {
                checked_reservation(reservation, (interval_us + distance_us * i) * 1000)?;
            }
        }
        let cpu_of = |i: usize| allowed[i % allowed.len()];
        Ok((0..self.count as usize)
            .map(|i| {
                let interval_ns = (interval_us + distance_us * i as u64) * 1000;
                let (receiver_cpu, sender_cpu) = match (self.placement, cross_cpu) {
                    (_, true) => (Some(cpu_of(i)), Some(cpu_of(i + 1))),
                    (Placement::Unpinned, false) => (None, None),
                    (Placement::AllOn(cpu), false) => (Some(cpu), Some(cpu)),
                    (Placement::Spread, false) => (Some(cpu_of(i)), Some(cpu_of(i))),
                };
                PairPlan {
                    receiver_cpu,
                    sender_cpu,
                    policy: match self.policy {
                        Policy::Deadline(r) => Policy::Deadline(r.for_period(interval_ns)),
                        other => other,
                    },
                    priority: if self.same_priority || self.priority <= 1 {
                        self.priority
                    } else {
                        (self.priority - i as i32).max(1)
                    },
                    interval_ns,
                    loops,
                }
            })
            .collect())
    }
}

/// A loop count as the options take it (0: until stopped) -> None for
/// "until stopped".
pub fn loops(count: u64) -> Option<u64> {
    Some(count).filter(|&n| n > 0)
}

impl IpcSettings {
    /// pmqtest's and the other rt-tests tools' options (`mq` adds -T and -f).
    pub fn from_pair_args(
        args: &PairArgs,
        mode: ModeArg,
        fork: bool,
    ) -> Result<IpcSettings, UsageError> {
        let mut notices = Vec::new();
        let timing = Timing::from_args(&args.layout, values::DEFAULT_PAIR_INTERVAL_US);
        let common = Common::from_args(&args.common)?;
        let layout = PairLayout::from_args(
            &args.layout,
            values::DEFAULT_PAIR_PRIORITY,
            false,
            &mut notices,
        )?;
        let pairs = layout.pairs(timing, args.common.cross_cpu)?;
        Ok(IpcSettings::assemble(
            &args.common,
            common,
            layout,
            pairs,
            timing,
            mode,
            fork,
            notices,
        ))
    }

    /// `latscope mq`: the pair options plus pmqtest's -T and -f.
    pub fn from_mq_args(args: &MqArgs) -> Result<IpcSettings, UsageError> {
        let mut settings = IpcSettings::from_pair_args(&args.pairs, args.mode, args.fork)?;
        let (timeout, force) = (args.timeout, args.force_timeout);
        if force.is_some() && timeout.is_none() {
            return Err(usage(
                "-f/--forcetimeout requires -T/--timeout (e.g. -T 1 -f 2)",
            ));
        }
        if force.is_some() && args.mode == ModeArg::Roundtrip {
            return Err(usage(
                "-f/--forcetimeout delays the sender of a one-way sample: it needs --mode oneway",
            ));
        }
        settings.plan.receive_timeout = timeout;
        settings.plan.forced_send_delay = force;
        Ok(settings)
    }

    /// semtest's options: one pair per CPU (-n), both tasks of pair c on CPU c
    /// unless -A, every task at the same priority (-p switches to SCHED_FIFO,
    /// -r to SCHED_RR), -i iterations, -I interval.
    pub fn from_sem_args(args: &SemArgs) -> Result<IpcSettings, UsageError> {
        let allowed = sched::allowed_cpus();
        let count = match args.num_cpus {
            Some(n) => {
                if n == 0 || n > allowed.len() as u64 {
                    return Err(usage(format!(
                        "-n/--num_cpus {n} is out of range: this process can use {} CPUs (use 1..{})",
                        allowed.len(),
                        allowed.len()
                    )));
                }
                n
            }
            None => allowed.len() as u64,
        };
        let priority = args.priority.unwrap_or(0);
        if args.policy_rr && args.priority.is_none() {
            return Err(usage(
                "-r/--policy_rr applies to real-time priorities: give one with -p (e.g. -r -p 80)",
            ));
        }
        let policy = match (args.policy_rr, priority > 0) {
            (true, _) => Policy::Rr,
            (false, true) => Policy::Fifo,
            (false, false) => Policy::Other,
        };
        let priority = checked_priority(priority, policy)?;
        let (interval_us, loops) = (args.interval, loops(args.iterations));
        let common = Common::from_args(&args.common)?;
        let layout = PairLayout {
            count,
            placement: if args.no_affinity {
                Placement::Unpinned
            } else {
                Placement::Spread
            },
            policy,
            priority,
            same_priority: true,
        };
        if args.no_affinity && args.common.cross_cpu {
            return Err(usage(
                "--cross-cpu pins the two tasks of a pair to different CPUs: it cannot be combined with -A",
            ));
        }
        let timing = Timing {
            interval_us,
            distance_us: 0,
            loops,
        };
        let pairs = layout.pairs(timing, args.common.cross_cpu)?;
        let mut notices = Vec::new();
        if args.affinity && args.no_affinity {
            notices.push("-a ignored due to -A".to_string());
        }
        Ok(IpcSettings::assemble(
            &args.common,
            common,
            layout,
            pairs,
            timing,
            args.mode,
            args.fork,
            notices,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        args: &CommonArgs,
        common: Common,
        layout: PairLayout,
        pairs: Vec<PairPlan>,
        timing: Timing,
        mode: ModeArg,
        fork: bool,
        notices: Vec<String>,
    ) -> IpcSettings {
        IpcSettings {
            plan: RunPlan {
                pairs,
                mode: mode.into(),
                tasks: if fork {
                    Tasks::Processes
                } else {
                    Tasks::Threads
                },
                duration: common.duration,
                breaktrace_ns: common.breaktrace_us.map(|us| us.saturating_mul(1000)),
                spike_threshold_ns: common.trace_spikes_us.map(|us| us.saturating_mul(1000)),
                spike_collector: common.collector,
                limit_ns: common
                    .verdict
                    .max_latency_us
                    .map(|us| us.saturating_mul(1000)),
                ..RunPlan::default()
            },
            policy: layout.policy,
            priority: layout.priority,
            same_priority: layout.same_priority,
            interval_us: timing.interval_us,
            distance_us: timing.distance_us,
            loops: timing.loops,
            breaktrace_us: common.breaktrace_us,
            trace_spikes_us: common.trace_spikes_us,
            collector: common.collector,
            cross_cpu: args.cross_cpu,
            format: args.format,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            deepest_idle_state: args.idle.deepest_idle_state,
            verdict: common.verdict,
            notices,
        }
    }
}

pub fn check_cpu(cpu: usize, allowed: &[usize]) -> Result<(), UsageError> {
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let list = allowed
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    if online_cpus().contains(&cpu) {
        Err(usage(format!(
            "CPU {cpu} is online but not allowed for this process (allowed: {list}); check taskset/cpuset"
        )))
    } else {
        Err(usage(format!(
            "CPU {cpu} is not online (usable CPUs: {list})"
        )))
    }
}

/// A value clap refused (the options' values are read there), as the
/// usage error the user sees: clap's first line without its `error: `.
#[cfg(test)]
pub fn refusal(e: clap::Error) -> UsageError {
    let message = e.to_string();
    let first = message.lines().next().unwrap_or_default();
    UsageError(first.trim_start_matches("error: ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<IpcSettings, UsageError> {
        let cli = Cli::try_parse_from(["latscope", "mq"].iter().chain(args)).map_err(refusal)?;
        match cli.command {
            Command::Mq(a) => IpcSettings::from_mq_args(&a),
            _ => unreachable!(),
        }
    }

    fn sem_settings(args: &[&str]) -> Result<IpcSettings, UsageError> {
        let cli = Cli::try_parse_from(["latscope", "sem"].iter().chain(args)).map_err(refusal)?;
        match cli.command {
            Command::Sem(a) => IpcSettings::from_sem_args(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn deadline_pairs_reserve_over_their_own_interval_unpinned() {
        let s = settings(&[
            "--policy",
            "deadline",
            "--runtime",
            "50us",
            "-t",
            "2",
            "-a",
            "-i",
            "1000",
            "-d",
            "500",
        ])
        .unwrap();
        let reservation = |i: usize| s.plan.pairs[i].policy.reservation().unwrap();
        assert_eq!(
            (
                reservation(0).runtime_ns,
                reservation(0).deadline_ns,
                reservation(0).period_ns
            ),
            (50_000, 1_000_000, 1_000_000)
        );
        assert_eq!(
            (reservation(1).deadline_ns, reservation(1).period_ns),
            (1_500_000, 1_500_000)
        );
        assert!(
            s.plan
                .pairs
                .iter()
                .all(|p| p.receiver_cpu.is_none() && p.sender_cpu.is_none())
        );
        assert_eq!(
            (s.priority, s.notices.clone()),
            (0, vec![DEADLINE_UNPINNED.to_string()])
        );
        // A --deadline beyond the first pair's interval is refused there.
        let err = settings(&[
            "--policy",
            "deadline",
            "--runtime",
            "50",
            "--deadline",
            "1200",
            "-t",
            "2",
        ]);
        assert_eq!(
            err.err().map(|e| e.0),
            Some("--deadline 1200 us is longer than the period (1000 us): a reservation needs runtime <= deadline <= period".to_string())
        );
    }

    #[test]
    fn pmqtest_defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.plan.pairs.len(), 1);
        assert_eq!(s.plan.pairs[0].interval_ns, 1_000_000);
        assert_eq!(s.plan.pairs[0].receiver_cpu, None);
        assert_eq!(s.policy, Policy::Other);
        assert_eq!(s.loops, None);
    }

    #[test]
    fn priorities_step_down_per_pair_unless_smp() {
        let s = settings(&["-p", "3", "-t", "4", "-i", "100", "-d", "50"]).unwrap();
        let prios: Vec<i32> = s.plan.pairs.iter().map(|p| p.priority).collect();
        assert_eq!(prios, [3, 2, 1, 1]);
        let intervals: Vec<u64> = s.plan.pairs.iter().map(|p| p.interval_ns).collect();
        assert_eq!(intervals, [100_000, 150_000, 200_000, 250_000]);
        assert_eq!(s.policy, Policy::Fifo);
        let s = settings(&["-Sp99"]).unwrap();
        assert!(
            s.plan
                .pairs
                .iter()
                .all(|p| p.priority == 99 && p.receiver_cpu.is_some())
        );
        assert_eq!(s.plan.pairs.len(), sched::allowed_cpus().len());
    }

    #[test]
    fn affinity_forms() {
        let first = sched::allowed_cpus()[0];
        let s = settings(&["-a", &first.to_string(), "-t", "2"]).unwrap();
        assert!(s.plan.pairs.iter().all(|p| p.receiver_cpu == Some(first)));
        let s = settings(&["-a", "-t", "2"]).unwrap();
        assert_eq!(s.plan.pairs[0].receiver_cpu, Some(first));
        assert!(
            settings(&["-a", "4096"])
                .unwrap_err()
                .0
                .contains("not online")
        );
    }

    #[test]
    fn bad_values_are_refused_with_one_line() {
        for (args, needle) in [
            (vec!["-p", "100"], "outside the fifo range 1..99"),
            (
                vec!["--policy", "other", "-p", "5"],
                "outside the other range",
            ),
            (vec!["--policy", "fifo"], "outside the fifo range"),
            (vec!["-t", "0"], "out of range"),
            (vec!["-t", "100000"], "out of range"),
            (vec!["-l", "-5"], "must not be negative"),
            (vec!["-l", "abc"], "must be a whole number"),
            (vec!["-D", "5x"], "unknown unit"),
            (vec!["-D", "0"], "longer than 0"),
            (vec!["-T", "1", "-f", "x"], "not a duration"),
            (vec!["-f", "1"], "requires -T"),
            (vec!["-i", "4000000000"], "exceeds one hour"),
            (vec!["-i", "3599999999", "-t", "3"], "exceeds one hour"),
            (
                vec!["--mode", "roundtrip", "-T", "1", "-f", "2"],
                "needs --mode oneway",
            ),
            (vec!["--json", "/nonexistent-dir/x.json"], "does not exist"),
            (vec!["--json", "/"], "is a directory"),
            (
                vec!["--json", "/proc/latscope.json"],
                "--json /proc/latscope.json: cannot create a file in /proc",
            ),
            (
                vec!["--csv", "/proc/x.csv"],
                "--csv /proc/x.csv: cannot create a file in /proc",
            ),
            (
                vec!["--markdown", "/nonexistent-dir/x.md"],
                "does not exist",
            ),
            (
                // A read-only file (0444) is not replaced.
                vec!["--json", "/proc/version"],
                "--json /proc/version: is read-only (mode 0444)",
            ),
            (
                vec!["--json", "-", "--csv", "-", "--markdown", "-"],
                "--json -, --csv - and --markdown - both want standard output",
            ),
            (vec!["--max-latency", "0"], "at least 1"),
            (vec!["--fail-if", "p99>+10%"], "needs latscope compare"),
            (vec!["--fail-if", "p99.9>+5us"], "needs latscope compare"),
            (vec!["--fail-if", "p99>5"], "needs a unit"),
            (vec!["--fail-if", "p98>5us"], "unknown metric"),
        ] {
            let err = settings(&args).expect_err(&format!("{args:?} must fail")).0;
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains('\n'), "{args:?}: multi-line: {err}");
        }
    }

    #[test]
    fn an_output_probe_leaves_the_directory_and_an_existing_file_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.csv");
        std::fs::write(&file, "old").unwrap();
        let s = settings(&["--csv", file.to_str().unwrap(), "--markdown", "-"]).unwrap();
        assert_eq!(
            s.verdict.outputs.csv,
            Some(OutputTarget::File(file.clone()))
        );
        assert!(s.verdict.outputs.to_stdout());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let s = settings(&["--json", file.to_str().unwrap()]).unwrap();
        assert!(!s.verdict.outputs.to_stdout());
    }

    #[test]
    fn fail_if_is_repeatable() {
        let s = settings(&["--fail-if", "p99>50us", "--fail-if", "max > 1ms"]).unwrap();
        let exprs: Vec<&str> = s.verdict.fail_if.iter().map(|t| t.expr.as_str()).collect();
        assert_eq!(exprs, ["p99>50us", "max>1ms"]);
    }

    #[test]
    fn semtest_defaults_and_options() {
        let cpus = sched::allowed_cpus();
        let s = sem_settings(&[]).unwrap();
        assert_eq!(s.plan.mode, Mode::RoundTrip);
        assert_eq!(s.plan.pairs.len(), cpus.len());
        assert_eq!(s.loops, Some(10_000));
        assert_eq!(s.interval_us, 1000);
        assert_eq!(s.policy, Policy::Other);
        for (i, p) in s.plan.pairs.iter().enumerate() {
            assert_eq!(
                (p.receiver_cpu, p.sender_cpu),
                (Some(cpus[i]), Some(cpus[i]))
            );
            assert_eq!(p.interval_ns, 1_000_000);
        }
        let s = sem_settings(&args_of("-p 90 -r -i 500 -I 250 -n 1 -A")).unwrap();
        assert_eq!((s.policy, s.priority), (Policy::Rr, 90));
        assert_eq!(s.loops, Some(500));
        assert_eq!(s.plan.pairs.len(), 1);
        assert_eq!(s.plan.pairs[0].interval_ns, 250_000);
        assert_eq!(s.plan.pairs[0].receiver_cpu, None);
        let s = sem_settings(&args_of("-p 80 --mode oneway -f -I 0")).unwrap();
        assert_eq!((s.policy, s.plan.mode), (Policy::Fifo, Mode::OneWay));
        assert_eq!(s.plan.tasks, Tasks::Processes);
        assert_eq!(s.plan.pairs[0].interval_ns, 0);
        for (args, needle) in [
            ("-n 0", "out of range"),
            ("-n 4096", "out of range"),
            ("-r", "give one with -p"),
            ("-p 100", "outside the fifo range"),
            ("-A --cross-cpu", "cannot be combined with -A"),
            ("-i x", "must be a whole number"),
        ] {
            let err = sem_settings(&args_of(args)).expect_err(args).0;
            assert!(err.contains(needle), "{args}: {err}");
        }
    }

    fn args_of(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    #[test]
    fn cross_cpu_puts_the_peer_on_the_next_cpu() {
        let cpus = sched::allowed_cpus();
        if cpus.len() < 2 {
            let err = settings(&["-S", "--cross-cpu"]).unwrap_err().0;
            assert!(err.contains("needs two usable CPUs"), "{err}");
            return;
        }
        let s = settings(&["-S", "--cross-cpu"]).unwrap();
        for (i, p) in s.plan.pairs.iter().enumerate() {
            assert_eq!(p.receiver_cpu, Some(cpus[i]));
            assert_eq!(p.sender_cpu, Some(cpus[(i + 1) % cpus.len()]));
        }
        // Unpinned pairs get pinned apart too.
        let s = settings(&["--cross-cpu", "-t", "1"]).unwrap();
        assert_eq!(s.plan.pairs[0].sender_cpu, Some(cpus[1]));
        let err = settings(&["--cross-cpu", "-a", &cpus[0].to_string()])
            .unwrap_err()
            .0;
        assert!(err.contains("cannot be combined with -a"), "{err}");
    }

    #[test]
    fn interval_zero_runs_back_to_back() {
        let s = settings(&["-i", "0", "-t", "2", "-d", "0"]).unwrap();
        assert!(s.plan.pairs.iter().all(|p| p.interval_ns == 0));
        let s = settings(&["-i", "0", "--fork", "--mode", "roundtrip"]).unwrap();
        assert_eq!(s.plan.tasks, Tasks::Processes);
        assert_eq!(s.plan.mode, Mode::RoundTrip);
    }

    #[test]
    fn durations_accept_fractions_and_compounds() {
        assert_eq!(
            settings(&["-D", "0.5m"]).unwrap().plan.duration,
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            settings(&["-D", "1h30m"]).unwrap().plan.duration,
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            settings(&["-D", "2"]).unwrap().plan.duration,
            Some(Duration::from_secs(2))
        );
    }
}
