//! Every program of every family, as text (`rt::bpf::text`), for each way
//! it can be attached: what `latscope doctor --bpf` prints for this kernel
//! and what the golden listings (`golden/`, compared by the unit tests
//! without root) hold for fixed inputs.
//!
//! A program depends on the kernel only through a few facts: where BTF
//! puts the members it reads, where the tracefs `format` files put the
//! record fields, the map's descriptor. `Facts` holds them, read from this
//! kernel (`Facts::of_kernel`) or fixed (the goldens), so a golden changes
//! only when a generator does.

use super::AttachWay;
use super::ProbeError;
use super::recorder::layout::{DEFAULT_SLOTS, Region};
use super::recorder::program::{Recipe, TaskMembers, program};
use super::wakeups::{Arming, BtfMember, EventAccess, TimerProgram};
use crate::rt::bpf::Code;
use crate::rt::bpf::btf::Btf;
use crate::rt::tracefs::events::{ACTIVITY, NMI, VECTOR_EVENTS, VECTOR_SYSTEM};
use crate::rt::tracefs::format::EventFormat;
use std::path::Path;

/// What the generators need to know of a kernel.
#[derive(Debug, Clone)]
pub struct Facts {
    /// `hrtimer._softexpires` (None: no BTF, or no such member).
    pub soft_expiry: Option<BtfMember>,
    /// The members of `task_struct` the recorder reads.
    pub task: Option<TaskMembers>,
    /// The records' layouts of the events the programs are on.
    pub formats: Vec<EventFormat>,
    /// The descriptor the programs name their map by.
    pub map_fd: i32,
    /// The task ids whose wake-ups the recorder keeps.
    pub tids: Vec<i32>,
}

/// The events of the recorder's programs: the scheduler, IRQ and softirq
/// events (`ACTIVITY`), the NMI handler's end, and one system vector for
/// all (their programs differ only in the vector's index).
pub fn recorder_events() -> Vec<(&'static str, &'static str)> {
    let mut events = ACTIVITY.to_vec();
    events.push(NMI);
    events.push((VECTOR_SYSTEM, VECTOR_EVENTS[0].0));
    events
}

impl Facts {
    /// This kernel's facts (what cannot be read stays None or absent: the
    /// listings that need it say so).
    pub fn of_kernel(tracefs: &Path, btf: Option<&Btf>, map_fd: i32) -> Facts {
        let timer_events = [TimerProgram::Arm, TimerProgram::Expire].map(|p| p.event());
        let events = timer_events
            .iter()
            .map(|e| (e.system, e.name))
            .chain(recorder_events());
        let formats = events
            .filter_map(|(system, name)| {
                let path = tracefs
                    .join("events")
                    .join(system)
                    .join(name)
                    .join("format");
                EventFormat::read(&path).ok()
            })
            .collect();
        Facts {
            soft_expiry: btf.and_then(|b| BtfMember::of(b, "hrtimer", "_softexpires").ok()),
            task: btf.and_then(|b| TaskMembers::read(b).ok()),
            formats,
            map_fd,
            tids: vec![0],
        }
    }

    fn format(&self, name: &str) -> Result<&EventFormat, ProbeError> {
        self.formats
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| ProbeError::Kernel(format!("no format file for {name}")))
    }
}

/// One program's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// A name for its file: `FAMILY-PROGRAM[-VARIANT].WAY`.
    pub stem: String,
    /// The header line, then the listing or why it cannot be generated.
    pub text: String,
}

fn listing(stem: String, header: String, code: Result<Code, ProbeError>) -> Listing {
    let body = match code {
        Ok(code) => code.to_string(),
        Err(why) => format!("; not generated: {why}\n"),
    };
    Listing {
        stem,
        text: format!("; {header}\n{body}"),
    }
}

/// Every listing of every family.
pub fn all(facts: &Facts) -> Vec<Listing> {
    let mut listings = wakeups(facts);
    listings.extend(recorder(facts));
    listings.extend(interference(facts));
    listings
}

/// The timer breakdown's programs: arming and expiry on each way (the
/// expiry with and without an arming program where it can do without),
/// and both switch-in programs on their raw tracepoints.
fn wakeups(facts: &Facts) -> Vec<Listing> {
    let mut out = Vec::new();
    let access = |program: TimerProgram, way: AttachWay| -> Result<EventAccess, ProbeError> {
        let soft = || {
            facts.soft_expiry.ok_or(ProbeError::Unsuited(
                "no BTF offset of hrtimer._softexpires",
            ))
        };
        Ok(match (program, way) {
            (TimerProgram::OnCpu | TimerProgram::Switch, _) => EventAccess::Untyped,
            (_, AttachWay::TypedRawTracepoint) => EventAccess::TypedArguments {
                soft_expiry: soft()?,
            },
            (_, AttachWay::RawTracepoint) => EventAccess::ProbedArguments {
                soft_expiry: soft()?,
            },
            (_, AttachWay::Tracepoint) => EventAccess::Record {
                format: facts.format(program.event().name)?.clone(),
            },
        })
    };
    let cases: [(TimerProgram, &[AttachWay], &[Arming]); 4] = [
        (TimerProgram::Arm, &AttachWay::ALL, &[Arming::Watched]),
        (
            TimerProgram::Expire,
            &AttachWay::ALL,
            &[Arming::Watched, Arming::Inferred],
        ),
        (
            TimerProgram::OnCpu,
            &[AttachWay::RawTracepoint],
            &[Arming::Inferred],
        ),
        (
            TimerProgram::Switch,
            &[AttachWay::RawTracepoint],
            &[Arming::Watched],
        ),
    ];
    for (program, ways, armings) in cases {
        let event = program.event();
        for &way in ways {
            for &arming in armings {
                if program == TimerProgram::Expire
                    && way == AttachWay::Tracepoint
                    && arming == Arming::Inferred
                {
                    continue; // the classic record has no soft expiry
                }
                let variant = match (program, arming) {
                    (TimerProgram::Expire, Arming::Watched) => "-watched",
                    (TimerProgram::Expire, Arming::Inferred) => "-inferred",
                    _ => "",
                };
                let code =
                    access(program, way).and_then(|a| program.generate(facts.map_fd, &a, arming));
                out.push(listing(
                    format!("wakeups-{}{variant}.{}", event.program, way.label()),
                    format!(
                        "latscope_{} on {}:{} ({}), arming {arming:?}",
                        event.program,
                        event.system,
                        event.name,
                        way.label()
                    ),
                    code,
                ));
            }
        }
    }
    out
}

/// The flight recorder's programs, on each of its ways.
fn recorder(facts: &Facts) -> Vec<Listing> {
    let region = Region::with_slots(DEFAULT_SLOTS);
    let mut out = Vec::new();
    for (system, name) in recorder_events() {
        for way in super::recorder::load::LADDER {
            let recipe = match way {
                AttachWay::Tracepoint => facts
                    .format(name)
                    .and_then(|format| Recipe::of(format, &facts.tids)),
                _ => facts
                    .task
                    .ok_or(ProbeError::Unsuited("no BTF offsets of task_struct"))
                    .and_then(|members| Recipe::typed(name, &members, &facts.tids)),
            };
            let code = recipe.and_then(|r| program(&r, facts.map_fd, region));
            out.push(listing(
                format!("recorder-{name}.{}", way.label()),
                format!("latscope_{name} on {system}:{name} ({})", way.label()),
                code,
            ));
        }
    }
    out
}

/// The interference counter's programs (`latscope hwlat --tier bpf`): the
/// IRQ, softirq, NMI and switch programs and one system vector for all
/// (theirs differ only in the vector's index), on each way each takes.
fn interference(facts: &Facts) -> Vec<Listing> {
    use super::interference::program::{Recipe, Source, program};
    let mut out = Vec::new();
    for source in [
        Source::Irq,
        Source::Softirq,
        Source::Nmi,
        Source::Switch,
        Source::Vector(0),
    ] {
        let (system, name) = source.event();
        for way in super::interference::program::LADDER {
            let recipe = match way {
                AttachWay::Tracepoint => match source {
                    Source::Vector(_) => Recipe::of_arguments(source, None),
                    _ => facts
                        .format(&name)
                        .and_then(|format| Recipe::of_record(source, format)),
                },
                AttachWay::TypedRawTracepoint => Recipe::of_arguments(source, facts.task.as_ref()),
                // A plain raw tracepoint cannot load the tasks' members.
                AttachWay::RawTracepoint if source == Source::Switch => continue,
                AttachWay::RawTracepoint => Recipe::of_arguments(source, None),
            };
            let code = recipe.and_then(|r| program(&r, facts.map_fd));
            out.push(listing(
                format!("interference-{name}.{}", way.label()),
                format!(
                    "latscope_{} on {system}:{name} ({})",
                    source.program_name(),
                    way.label()
                ),
                code,
            ));
        }
    }
    out
}
