//! `hook`: one program on one kernel event, attached the cheapest way this
//! kernel takes, for every family of programs.
//!
//! The ways, cheapest first (`AttachWay`): a BTF-typed raw tracepoint
//! (`tp_btf`, Linux 5.5), whose verifier knows the arguments' types so a
//! member is one plain load; a plain raw tracepoint, whose program copies
//! members with `bpf_probe_read_kernel`; a classic tracepoint through
//! perf_event_open, whose program reads the record the kernel builds first
//! (about 70-110 ns more per event, docs/measurement.md). A family says
//! which of them its programs can be written for (its ladder) and how to
//! write one for a way (`generate`, given what it reads: the arguments'
//! BTF or the record's layout); `hook` tries them in order.
//!
//! A refusal by the verifier, on any way, saves the whole log with the
//! listing (`rt::bpf::refusal`) and names the file in the error's line.

use super::error::ProbeError;
use crate::rt::bpf::btf::{Btf, BtfError};
use crate::rt::bpf::{Attachment, Code, LoadError, Program, ProgramKind, tracepoint_id};
use crate::rt::tracefs::format::EventFormat;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

/// How a program runs on its event, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AttachWay {
    /// A BTF-typed raw tracepoint (`tp_btf`): needs the kernel's BTF.
    TypedRawTracepoint,
    /// A plain raw tracepoint, reading members at their BTF offsets with
    /// `bpf_probe_read_kernel`.
    RawTracepoint,
    /// A classic tracepoint: no BTF needed, but the kernel builds the trace
    /// record before each run.
    Tracepoint,
}

impl AttachWay {
    /// Every way, in the order `hook` tries a full ladder.
    pub const ALL: [AttachWay; 3] = [
        AttachWay::TypedRawTracepoint,
        AttachWay::RawTracepoint,
        AttachWay::Tracepoint,
    ];

    /// The name libbpf gives such programs' sections, for messages and
    /// file names: `tp_btf`, `raw_tp`, `tracepoint`.
    pub fn label(self) -> &'static str {
        match self {
            AttachWay::TypedRawTracepoint => "tp_btf",
            AttachWay::RawTracepoint => "raw_tp",
            AttachWay::Tracepoint => "tracepoint",
        }
    }
}

/// What a program reads its event from, for the way it is written for.
#[derive(Clone, Copy)]
pub enum EventView<'a> {
    /// The tracepoint's arguments (u64 each), typed by the kernel's BTF
    /// (None where the kernel has none: only a program that reads no
    /// member can be written then).
    Arguments { btf: Option<&'a Btf> },
    /// The classic tracepoint's record, laid out as its tracefs `format`
    /// file says.
    Record { format: &'a EventFormat },
}

/// What the kernel says about itself, read once per start and shared by
/// every program hooked: tracefs (the records' layouts, the tracepoints'
/// ids) and the kernel's BTF (read at the first need: it is megabytes).
pub struct KernelTypes {
    pub tracefs: PathBuf,
    btf: OnceCell<Result<Btf, BtfError>>,
}

impl KernelTypes {
    pub fn new(tracefs: &Path) -> KernelTypes {
        KernelTypes {
            tracefs: tracefs.to_path_buf(),
            btf: OnceCell::new(),
        }
    }

    /// The kernel's BTF, or why it cannot be read.
    pub fn btf(&self) -> Result<&Btf, ProbeError> {
        self.btf
            .get_or_init(Btf::vmlinux)
            .as_ref()
            .map_err(|e| ProbeError::Kernel(e.0.clone()))
    }

    /// The record layout of `system:name`.
    pub fn format(&self, system: &str, name: &str) -> Result<EventFormat, ProbeError> {
        let path = self
            .tracefs
            .join("events")
            .join(system)
            .join(name)
            .join("format");
        EventFormat::read(&path).map_err(ProbeError::kernel)
    }
}

/// A kernel event and the name of the program that runs on it.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub system: &'a str,
    pub name: &'a str,
    /// The program is loaded as `latscope_<program>`.
    pub program: &'a str,
}

/// One program a family hooks: its event and the way it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookedProgram {
    pub event: String,
    pub way: AttachWay,
}

/// A program running on its event; detached when dropped.
#[derive(Debug)]
pub struct Hooked {
    /// Declared first: dropped (detached) before the program is closed.
    pub attachment: Attachment,
    pub program: Program,
    pub way: AttachWay,
    /// The cheaper ways tried first, with why each was not taken.
    pub passed_over: Vec<(AttachWay, ProbeError)>,
}

/// The program `generate` writes for `event`, on the first way of `ladder`
/// that generates, loads and attaches; else the last way's error.
pub fn hook(
    kernel: &KernelTypes,
    event: Event<'_>,
    ladder: &[AttachWay],
    generate: &mut dyn FnMut(AttachWay, EventView<'_>) -> Result<Code, ProbeError>,
) -> Result<Hooked, ProbeError> {
    let mut passed_over = Vec::new();
    for &way in ladder {
        match hook_one(kernel, event, way, generate) {
            Ok((program, attachment)) => {
                return Ok(Hooked {
                    attachment,
                    program,
                    way,
                    passed_over,
                });
            }
            Err(why) => passed_over.push((way, why)),
        }
    }
    Err(passed_over.pop().map_or_else(
        || ProbeError::Unsuited("no way to attach the program was given"),
        |(_, why)| why,
    ))
}

/// Generates, loads and attaches on one way.
fn hook_one(
    kernel: &KernelTypes,
    event: Event<'_>,
    way: AttachWay,
    generate: &mut dyn FnMut(AttachWay, EventView<'_>) -> Result<Code, ProbeError>,
) -> Result<(Program, Attachment), ProbeError> {
    let Event {
        system,
        name,
        program,
    } = event;
    let attach_error = |event: String| move |source| ProbeError::Attach { event, source };
    match way {
        AttachWay::TypedRawTracepoint => {
            let btf = kernel.btf()?;
            let (typedef, _) = btf.tracepoint(name).map_err(ProbeError::kernel)?;
            let code = generate(way, EventView::Arguments { btf: Some(btf) })?;
            let loaded = Program::load_btf_raw_tracepoint(program, typedef, &code);
            let loaded = refused_or(loaded, program, way, &code)?;
            let attached = Attachment::btf_raw_tracepoint(&loaded, name)
                .map_err(attach_error(format!("tp_btf:{name}")))?;
            Ok((loaded, attached))
        }
        AttachWay::RawTracepoint => {
            let btf = kernel.btf().ok();
            let code = generate(way, EventView::Arguments { btf })?;
            let loaded = Program::load(ProgramKind::RawTracepoint, program, &code);
            let loaded = refused_or(loaded, program, way, &code)?;
            let attached = Attachment::raw_tracepoint(&loaded, name)
                .map_err(attach_error(format!("raw:{name}")))?;
            Ok((loaded, attached))
        }
        AttachWay::Tracepoint => {
            let format = kernel.format(system, name)?;
            let code = generate(way, EventView::Record { format: &format })?;
            let loaded = Program::load(ProgramKind::Tracepoint, program, &code);
            let loaded = refused_or(loaded, program, way, &code)?;
            let id = tracepoint_id(&kernel.tracefs, system, name).map_err(ProbeError::kernel)?;
            let event = format!("{system}:{name}");
            let attached =
                Attachment::tracepoint(&loaded, id, &event).map_err(attach_error(event.clone()))?;
            Ok((loaded, attached))
        }
    }
}

/// The loaded program, or the load's error; a verifier's refusal saved
/// with the listing of `code`.
fn refused_or(
    loaded: Result<Program, LoadError>,
    program: &str,
    way: AttachWay,
    code: &Code,
) -> Result<Program, ProbeError> {
    loaded.map_err(|e| match e {
        LoadError::Verifier { log, .. } => refusal(program, way, &log, code),
        source => ProbeError::Load {
            program: program.to_string(),
            source,
        },
    })
}

/// Saves a refusal's log and listing; the error names the file.
pub fn refusal(program: &str, way: AttachWay, log: &str, code: &Code) -> ProbeError {
    let saved = crate::rt::bpf::refusal::save(program, way.label(), log, code);
    ProbeError::Refused {
        program: program.to_string(),
        last: crate::rt::bpf::sys::last_line(log).to_string(),
        saved: crate::rt::bpf::refusal::saved_line(&saved),
    }
}
