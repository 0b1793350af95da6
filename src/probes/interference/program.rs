//! The interference counter's programs, generated at run time: one per
//! event (IRQ, each system vector, softirq, NMI, switch), each adding 1 to
//! its CPU's `COUNT` and writing what it was into the ring (`layout.rs`).
//!
//! The values are read as the flight recorder reads them (its `Value`,
//! `load` and `copy_comm`): a raw tracepoint's arguments, the members of
//! the tasks a BTF-typed one points to, or a classic tracepoint's record.
//! The IRQ, softirq, vector and NMI programs read only integer arguments,
//! so they can run on a plain raw tracepoint too; the switch reads the
//! tasks' pids and names, which a plain raw tracepoint cannot load.

use super::layout::{Kind, RING, RING_LAYOUT, entry, header};
use crate::probes::ProbeError;
use crate::probes::hook::{AttachWay, EventView};
use crate::probes::recorder::program::{TaskMembers, Value, check_prototype, copy_comm, load};
use crate::probes::ring::{commit, reserve, this_cpu_area};
use crate::rt::bpf::{Asm, Code, Insn, Reg, Size};
use crate::rt::tracefs::events::{NmiFields, SwitchFields};
use crate::rt::tracefs::format::EventFormat;

// Registers kept across helper calls (`load` reads the context from R6).
const CTX: Reg = Reg::R6;
const SLOT: Reg = Reg::R7;
const ENTRY: Reg = Reg::R8;
/// Stack slot of the entry's commit word, below the map key at -4.
const COMMIT_ON_STACK: i16 = -16;

/// What one program records, with where it reads each value.
#[derive(Debug, Clone)]
pub enum Recipe {
    /// `irq_handler_entry` (the IRQ) or `softirq_entry` (its number).
    Operand { kind: Kind, value: Value },
    /// A system vector: its index into `layout::VECTORS`.
    Vector { index: u32 },
    /// An NMI handler's end, with its run.
    Nmi { delta_ns: Value },
    /// A switch: both tasks' pids and names.
    Switch {
        next_pid: Value,
        next_comm: Value,
        prev_pid: Value,
        prev_comm: Value,
    },
}

/// The event a program of the family runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Irq,
    Softirq,
    Nmi,
    Switch,
    /// `irq_vectors:<VECTORS[index].0>_entry`.
    Vector(u32),
}

impl Source {
    /// The tracefs system and event name.
    pub fn event(self) -> (&'static str, String) {
        match self {
            Source::Irq => ("irq", "irq_handler_entry".into()),
            Source::Softirq => ("irq", "softirq_entry".into()),
            Source::Nmi => ("nmi", "nmi_handler".into()),
            Source::Switch => ("sched", "sched_switch".into()),
            Source::Vector(i) => (
                "irq_vectors",
                format!("{}_entry", super::layout::VECTORS[i as usize].0),
            ),
        }
    }

    /// The program's name (`latscope_hw_...`, within the kernel's 15 bytes).
    pub fn program_name(self) -> String {
        match self {
            Source::Irq => "hw_irq".into(),
            Source::Softirq => "hw_sft".into(),
            Source::Nmi => "hw_nmi".into(),
            Source::Switch => "hw_sw".into(),
            Source::Vector(i) => format!("hw_v{i}"),
        }
    }

    /// Every source: the four events every kernel has, then the vectors.
    pub fn all() -> Vec<Source> {
        let mut out = vec![Source::Irq, Source::Softirq, Source::Nmi, Source::Switch];
        out.extend((0..super::layout::VECTORS.len() as u32).map(Source::Vector));
        out
    }

    /// Whether a run cannot do without it (the vectors and the NMI event
    /// exist only on some kernels and architectures).
    pub fn required(self) -> bool {
        matches!(self, Source::Irq | Source::Softirq | Source::Switch)
    }
}

/// The ways the programs are written for, cheapest first.
pub const LADDER: [AttachWay; 3] = AttachWay::ALL;

impl Recipe {
    /// The recipe of `source` on `way`, reading what `view` offers.
    pub fn of(source: Source, way: AttachWay, view: EventView<'_>) -> Result<Recipe, ProbeError> {
        if let Source::Vector(index) = source {
            return Ok(Recipe::Vector { index });
        }
        match view {
            EventView::Record { format } => Recipe::of_record(source, format),
            EventView::Arguments { btf } => {
                let (_, name) = source.event();
                if let Some(btf) = btf {
                    check_prototype(btf, &name)?;
                }
                let members = match (source, way, btf) {
                    (Source::Switch, AttachWay::TypedRawTracepoint, Some(btf)) => {
                        Some(TaskMembers::read(btf)?)
                    }
                    (Source::Switch, _, _) => {
                        return Err(ProbeError::Unsuited(
                            "the switch's program reads the tasks' members: it needs a BTF-typed raw tracepoint or the classic tracepoint",
                        ));
                    }
                    _ => None,
                };
                Recipe::of_arguments(source, members.as_ref())
            }
        }
    }

    /// The recipe on a raw tracepoint's arguments (`members`: where a
    /// BTF-typed switch finds the tasks' pid and name).
    pub fn of_arguments(
        source: Source,
        members: Option<&TaskMembers>,
    ) -> Result<Recipe, ProbeError> {
        Ok(match source {
            Source::Irq => Recipe::Operand {
                kind: Kind::Irq,
                value: Value::Arg(0),
            },
            Source::Softirq => Recipe::Operand {
                kind: Kind::Softirq,
                value: Value::Arg(0),
            },
            // (void *handler, s64 delta_ns, int handled)
            Source::Nmi => Recipe::Nmi {
                delta_ns: Value::Arg(1),
            },
            // (bool preempt, prev, next, unsigned int prev_state)
            Source::Switch => {
                let m = members.ok_or(ProbeError::Unsuited("no BTF offsets of task_struct"))?;
                let member = |arg: usize, (offset, size): (usize, usize)| Value::Member {
                    arg,
                    offset,
                    size,
                };
                Recipe::Switch {
                    next_pid: member(2, m.pid),
                    next_comm: member(2, m.comm),
                    prev_pid: member(1, m.pid),
                    prev_comm: member(1, m.comm),
                }
            }
            Source::Vector(index) => Recipe::Vector { index },
        })
    }

    /// The recipe on the classic tracepoint whose record `format` describes.
    pub fn of_record(source: Source, format: &EventFormat) -> Result<Recipe, ProbeError> {
        Ok(match source {
            Source::Irq => Recipe::Operand {
                kind: Kind::Irq,
                value: Value::Field(format.field("irq")?.clone()),
            },
            Source::Softirq => Recipe::Operand {
                kind: Kind::Softirq,
                value: Value::Field(format.field("vec")?.clone()),
            },
            Source::Nmi => Recipe::Nmi {
                delta_ns: Value::Field(NmiFields::of(format)?.delta_ns),
            },
            Source::Switch => {
                let f = SwitchFields::of(format)?;
                Recipe::Switch {
                    next_pid: Value::Field(f.next_pid),
                    next_comm: Value::Field(f.next_comm),
                    prev_pid: Value::Field(f.prev_pid),
                    prev_comm: Value::Field(f.prev_comm),
                }
            }
            Source::Vector(index) => Recipe::Vector { index },
        })
    }

    fn kind(&self) -> Kind {
        match self {
            Recipe::Operand { kind, .. } => *kind,
            Recipe::Vector { .. } => Kind::Vector,
            Recipe::Nmi { .. } => Kind::Nmi,
            Recipe::Switch { .. } => Kind::Switch,
        }
    }
}

/// `ENTRY + RING + field`: where `field` of the reserved entry is.
fn at(field: usize) -> i16 {
    RING_LAYOUT.field(field)
}

/// The entry's operands, read where the recipe says.
fn write_operands(asm: &mut Asm, recipe: &Recipe) -> Result<(), ProbeError> {
    match recipe {
        Recipe::Operand { value, .. } | Recipe::Nmi { delta_ns: value } => {
            load(asm, Reg::R1, value)?;
            asm.push(Insn::stx(Size::W, ENTRY, at(entry::NUMBER), Reg::R1));
        }
        Recipe::Vector { index } => {
            asm.push(Insn::st(Size::W, ENTRY, at(entry::NUMBER), *index as i32));
        }
        Recipe::Switch {
            next_pid,
            next_comm,
            prev_pid,
            prev_comm,
        } => {
            for (value, field) in [(next_pid, entry::NUMBER), (prev_pid, entry::PREV_PID)] {
                load(asm, Reg::R1, value)?;
                asm.push(Insn::stx(Size::W, ENTRY, at(field), Reg::R1));
            }
            copy_comm(asm, ENTRY, RING + entry::COMM, next_comm)?;
            copy_comm(asm, ENTRY, RING + entry::PREV_COMM, prev_comm)?;
        }
    }
    Ok(())
}

/// The whole program of `recipe`, writing into the map open as `map_fd`.
pub fn program(recipe: &Recipe, map_fd: i32) -> Result<Code, ProbeError> {
    let mut asm = Asm::new();
    asm.push(Insn::mov64_reg(CTX, Reg::R1));
    this_cpu_area(&mut asm, "r7 = this CPU's slot, or return", map_fd, SLOT);
    if let Recipe::Nmi { delta_ns } = recipe {
        asm.note("NMIS += 1, NMI_NS += the handler's run");
        asm.push(Insn::mov64_imm(Reg::R1, 1))
            .push(Insn::atomic_add64(SLOT, header::NMIS as i16, Reg::R1));
        load(&mut asm, Reg::R1, delta_ns)?;
        asm.push(Insn::atomic_add64(SLOT, header::NMI_NS as i16, Reg::R1));
    }
    asm.note("event i: COUNT += 1 (r1 = i); commit word i + 1 on the stack");
    // The sampler's one load reads COUNT: it moves before anything else.
    reserve(&mut asm, SLOT, header::COUNT, COMMIT_ON_STACK);
    asm.note("r8 = &ring[i % RING_SLOTS] - RING; being written: SEQ = 0");
    RING_LAYOUT.point_at_entry(&mut asm, ENTRY, SLOT);
    asm.push(Insn::st(Size::DW, ENTRY, at(entry::SEQ), 0))
        .push(Insn::st(
            Size::W,
            ENTRY,
            at(entry::KIND),
            recipe.kind() as i32,
        ));
    write_operands(&mut asm, recipe)?;
    commit(&mut asm, ENTRY, at(entry::SEQ), COMMIT_ON_STACK);
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    Ok(asm.finish()?)
}

/// The program `hook` asks for: `source` on `way`, reading `view`.
pub fn generate(
    source: Source,
    way: AttachWay,
    view: EventView<'_>,
    map_fd: i32,
) -> Result<Code, ProbeError> {
    program(&Recipe::of(source, way, view)?, map_fd)
}
