//! The recorder's BPF programs, generated at run time: one per event, each
//! appending one record (`layout.rs`) to its CPU's region. The field
//! offsets come from the events' tracefs `format` files.
//!
//! Every program: looks up this CPU's region (exit when the CPU is not
//! traced: the kernel runs a tracepoint's programs on every CPU), reserves
//! record `i` with an atomic fetch-and-add on `head`, clears its `SEQ`,
//! reads its fields from the record the tracepoint hands over (the
//! context) into slot `i % slots`, writes how long it ran, and commits with
//! `SEQ = i + 1` (see `layout.rs` for why this is safe under nesting). The
//! switch program also writes the names of both tasks into the name table
//! and the CPU's current task into the header.

use super::layout::{INTERRUPTED_NS, Kind, NAME_SHIFT, RECORD_SIZE, Region, header, name, record};
use crate::rt::bpf::{Alu, Asm, Cond, Helper, Insn, Map, Reg, Size};
use crate::rt::tracefs::events::{NmiFields, SwitchFields, WakeupFields, vector_event};
use crate::rt::tracefs::format::{EventFormat, Field};

/// Offset in the header of the flag user space sets for each traced CPU
/// (a u64, 0: not traced). After `header::TASK_PRIO`.
pub const ENABLED: usize = 24;
const _: () = assert!(ENABLED >= header::TASK_PRIO + 4 && ENABLED + 8 <= header::SIZE);

// Registers kept across helper calls.
const CTX: Reg = Reg::R6;
const REGION: Reg = Reg::R7;
const SLOT: Reg = Reg::R8;
const TIME: Reg = Reg::R9;
/// Stack slot of the record's commit word (`SEQ`, the record number + 1):
/// below the CPU number the map lookup reads at -4.
const COMMIT_ON_STACK: i16 = -16;

/// What one program records, with the context fields it reads (the same
/// field tables as the tracefs decoder's, `rt::tracefs::events`).
#[derive(Debug, Clone)]
pub enum Recipe {
    Switch(SwitchFields),
    /// Only for the listed tasks.
    Wakeup {
        fields: WakeupFields,
        tids: Vec<i32>,
    },
    /// IRQ and softirq entries and exits: one operand (irq, vec) into A.
    Operand {
        kind: Kind,
        field: Field,
    },
    /// A system vector's entry or exit: its index into `VECTORS`.
    Vector {
        kind: Kind,
        index: u16,
    },
    /// An NMI handler's end, with its run.
    Nmi(NmiFields),
}

/// The events recorded with one operand (into A): their record kind and
/// the field it comes from.
const OPERANDS: [(&str, Kind, &str); 4] = [
    ("irq_handler_entry", Kind::IrqEntry, "irq"),
    ("irq_handler_exit", Kind::IrqExit, "irq"),
    ("softirq_entry", Kind::SoftirqEntry, "vec"),
    ("softirq_exit", Kind::SoftirqExit, "vec"),
];

impl Recipe {
    /// The recipe for the event `format` describes (see `events::ACTIVITY`,
    /// `VECTOR_EVENTS` and `NMI`), recording wake-ups of `tids` only.
    pub fn of(format: &EventFormat, tids: &[i32]) -> Result<Recipe, String> {
        let name = format.name.as_str();
        if let Some((_, kind, field)) = OPERANDS.iter().find(|(event, ..)| *event == name) {
            return Ok(Recipe::Operand {
                kind: *kind,
                field: format.field(field)?.clone(),
            });
        }
        Ok(match name {
            "sched_switch" => Recipe::Switch(SwitchFields::of(format)?),
            "sched_wakeup" => Recipe::Wakeup {
                fields: WakeupFields::of(format)?,
                tids: tids.to_vec(),
            },
            "nmi_handler" => Recipe::Nmi(NmiFields::of(format)?),
            other => match vector_event(other) {
                Some((index, entry)) => Recipe::Vector {
                    kind: if entry {
                        Kind::VectorEntry
                    } else {
                        Kind::VectorExit
                    },
                    index: u16::from(index),
                },
                None => return Err(format!("the recorder has no program for {other}")),
            },
        })
    }
}

/// A context load of `field`'s low 32 bits (little-endian: the first 4 of
/// a wider field) into `dst`: the kernel allows only aligned context loads.
fn load32(asm: &mut Asm, dst: Reg, field: &Field) -> Result<(), String> {
    let size = match field.size {
        1 => Size::B,
        2 => Size::H,
        _ if field.size >= 4 => Size::W,
        n => return Err(format!("field {} has size {n}", field.name)),
    };
    let bytes = field.size.min(4);
    if !field.offset.is_multiple_of(bytes) || field.offset > i16::MAX as usize {
        return Err(format!("field {} is not aligned", field.name));
    }
    asm.push(Insn::ldx(size, dst, CTX, field.offset as i16));
    Ok(())
}

/// Offset of a record field from `SLOT` (which points at the record's slot
/// minus `Region::RECORDS`, see `program`).
fn at_record(field: usize) -> i16 {
    (Region::RECORDS + field) as i16
}

/// Copies the 16-byte comm `field` of the context to `offset` from `dst`,
/// in the widest loads its alignment allows.
fn copy_comm(asm: &mut Asm, dst: Reg, offset: usize, field: &Field) -> Result<(), String> {
    let width = [8usize, 4, 2, 1]
        .into_iter()
        .find(|w| field.offset.is_multiple_of(*w) && offset.is_multiple_of(*w))
        .expect("1 divides everything");
    let size = Size::of_bytes(width).expect("a load width");
    for at in (0..16).step_by(width) {
        asm.push(Insn::ldx(size, Reg::R1, CTX, (field.offset + at) as i16))
            .push(Insn::stx(size, dst, (offset + at) as i16, Reg::R1));
    }
    Ok(())
}

/// `R3 = REGION + the name entry of the pid in R2` (clobbers R2, R3).
fn name_entry(asm: &mut Asm) {
    asm.push(Insn::alu64_imm(
        Alu::And,
        Reg::R2,
        super::layout::NAME_SLOTS as i32 - 1,
    ))
    .push(Insn::alu64_imm(Alu::Lsh, Reg::R2, NAME_SHIFT as i32))
    .push(Insn::mov64_reg(Reg::R3, REGION))
    .push(Insn::alu64_reg(Alu::Add, Reg::R3, Reg::R2));
}

/// A switch's record: both pids, both priorities (16 bits each), the
/// previous task's state; both tasks' names in the name table, and the
/// CPU's new current task in the region's header.
fn record_switch(asm: &mut Asm, fields: &SwitchFields) -> Result<(), String> {
    let SwitchFields {
        prev_comm,
        prev_pid,
        prev_prio,
        prev_state,
        next_comm,
        next_pid,
        next_prio,
    } = fields;
    for (field, at) in [(prev_pid, record::A), (next_pid, record::B)] {
        load32(asm, Reg::R1, field)?;
        asm.push(Insn::stx(Size::W, SLOT, at_record(at), Reg::R1));
    }
    load32(asm, Reg::R1, prev_prio)?;
    load32(asm, Reg::R2, next_prio)?;
    asm.push(Insn::alu64_imm(Alu::And, Reg::R1, 0xffff))
        .push(Insn::alu64_imm(Alu::And, Reg::R2, 0xffff))
        .push(Insn::alu64_imm(Alu::Lsh, Reg::R2, 16))
        .push(Insn::alu64_reg(Alu::Or, Reg::R1, Reg::R2))
        .push(Insn::stx(Size::W, SLOT, at_record(record::C), Reg::R1));
    load32(asm, Reg::R1, prev_state)?;
    asm.push(Insn::stx(Size::W, SLOT, at_record(record::D), Reg::R1));
    // Both tasks' names, and the CPU's new current task.
    for (pid, prio, comm) in [
        (prev_pid, prev_prio, prev_comm),
        (next_pid, next_prio, next_comm),
    ] {
        load32(asm, Reg::R2, pid)?;
        name_entry(asm);
        load32(asm, Reg::R2, pid)?;
        asm.push(Insn::stx(
            Size::W,
            Reg::R3,
            (Region::NAMES + name::PID) as i16,
            Reg::R2,
        ));
        load32(asm, Reg::R2, prio)?;
        asm.push(Insn::stx(
            Size::W,
            Reg::R3,
            (Region::NAMES + name::PRIO) as i16,
            Reg::R2,
        ));
        asm.push(Insn::mov64_reg(Reg::R4, Reg::R3));
        // copy_comm uses R1 only: R4 holds the entry.
        copy_comm(asm, Reg::R4, Region::NAMES + name::COMM, comm)?;
    }
    asm.push(Insn::stx(Size::DW, REGION, header::TASK_SINCE as i16, TIME));
    load32(asm, Reg::R1, next_pid)?;
    asm.push(Insn::stx(Size::W, REGION, header::TASK_PID as i16, Reg::R1));
    load32(asm, Reg::R1, next_prio)?;
    asm.push(Insn::stx(
        Size::W,
        REGION,
        header::TASK_PRIO as i16,
        Reg::R1,
    ));
    Ok(())
}

/// The operands of `recipe`'s record (A to D), read from the context.
fn record_operands(asm: &mut Asm, recipe: &Recipe) -> Result<(), String> {
    let operands = [record::A, record::B, record::C, record::D];
    match recipe {
        Recipe::Switch(fields) => record_switch(asm, fields)?,
        Recipe::Wakeup {
            fields:
                WakeupFields {
                    pid,
                    prio,
                    target_cpu,
                },
            ..
        } => {
            for (field, at) in [pid, prio, target_cpu].into_iter().zip(operands) {
                load32(asm, Reg::R1, field)?;
                asm.push(Insn::stx(Size::W, SLOT, at_record(at), Reg::R1));
            }
        }
        Recipe::Operand { field, .. } => {
            load32(asm, Reg::R1, field)?;
            asm.push(Insn::stx(Size::W, SLOT, at_record(record::A), Reg::R1));
        }
        Recipe::Nmi(NmiFields { delta_ns, handled }) => {
            for (field, at) in [(delta_ns, record::A), (handled, record::B)] {
                load32(asm, Reg::R1, field)?;
                asm.push(Insn::stx(Size::W, SLOT, at_record(at), Reg::R1));
            }
        }
        Recipe::Vector { .. } => {}
    }
    Ok(())
}

/// The whole program of `recipe`, writing into `map` (regions of `region`).
pub fn program(recipe: &Recipe, map: &Map, region: Region) -> Result<Vec<Insn>, String> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    asm.push(Insn::mov64_reg(CTX, Reg::R1));
    // A wake-up of another task: nothing to do (before any lookup).
    if let Recipe::Wakeup { fields, tids } = recipe {
        let keep = asm.new_label();
        load32(&mut asm, Reg::R2, &fields.pid)?;
        for tid in tids {
            asm.jump_if(Cond::Eq, Reg::R2, *tid, keep);
        }
        asm.jump(out);
        asm.bind(keep);
    }
    // This CPU's region, if it is traced.
    asm.this_cpu_entry_or_return(map.fd())
        .push(Insn::mov64_reg(REGION, Reg::R0))
        .push(Insn::ldx(Size::DW, Reg::R1, REGION, ENABLED as i16))
        .jump_if(Cond::Eq, Reg::R1, 0, out);
    asm.push(Insn::call(Helper::KtimeGetNs))
        .push(Insn::mov64_reg(TIME, Reg::R0));
    // Reserve record i: R1 = i, head = i + 1, atomically (a program that
    // interrupts this one reserves i + 1). Its commit word is kept on the
    // stack for the end.
    asm.push(Insn::mov64_imm(Reg::R1, 1))
        .push(Insn::atomic_fetch_add64(
            REGION,
            header::HEAD as i16,
            Reg::R1,
        ))
        .push(Insn::mov64_reg(Reg::R2, Reg::R1))
        .push(Insn::alu64_imm(Alu::Add, Reg::R2, 1))
        .push(Insn::stx(Size::DW, Reg::R10, COMMIT_ON_STACK, Reg::R2));
    // SLOT = REGION + (i % slots) * RECORD_SIZE: the record's fields are
    // at `at_record` from it. The mask bounds the offset for the verifier.
    asm.push(Insn::alu64_imm(Alu::And, Reg::R1, region.slots as i32 - 1))
        .push(Insn::alu64_imm(Alu::Mul, Reg::R1, RECORD_SIZE as i32))
        .push(Insn::mov64_reg(SLOT, REGION))
        .push(Insn::alu64_reg(Alu::Add, SLOT, Reg::R1));
    // Being written: a reader that copies the slot from now on sees it.
    asm.push(Insn::st(Size::DW, SLOT, at_record(record::SEQ), 0));
    asm.push(Insn::stx(Size::DW, SLOT, at_record(record::TIME), TIME))
        .push(Insn::call(Helper::GetCurrentPidTgid))
        .push(Insn::stx(Size::W, SLOT, at_record(record::PID), Reg::R0));
    let kind = match recipe {
        Recipe::Switch(_) => Kind::Switch,
        Recipe::Wakeup { .. } => Kind::Wakeup,
        Recipe::Operand { kind, .. } | Recipe::Vector { kind, .. } => *kind,
        Recipe::Nmi(_) => Kind::Nmi,
    };
    asm.push(Insn::st(
        Size::H,
        SLOT,
        at_record(record::KIND),
        kind as i32,
    ));
    let small = match recipe {
        Recipe::Vector { index, .. } => i32::from(*index),
        _ => 0,
    };
    asm.push(Insn::st(Size::H, SLOT, at_record(record::SMALL), small));
    record_operands(&mut asm, recipe)?;
    // How long this program ran; a long run was interrupted (counted).
    let quick = asm.new_label();
    asm.push(Insn::call(Helper::KtimeGetNs))
        .push(Insn::alu64_reg(Alu::Sub, Reg::R0, TIME))
        .push(Insn::stx(
            Size::W,
            SLOT,
            at_record(record::ELAPSED),
            Reg::R0,
        ))
        .jump_if(Cond::Le, Reg::R0, INTERRUPTED_NS as i32, quick)
        .push(Insn::mov64_imm(Reg::R1, 1))
        .push(Insn::atomic_add64(
            REGION,
            header::INTERRUPTED as i16,
            Reg::R1,
        ));
    asm.bind(quick);
    // The record is whole: commit it, last.
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R10, COMMIT_ON_STACK))
        .push(Insn::stx(Size::DW, SLOT, at_record(record::SEQ), Reg::R1));
    asm.bind(out);
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    asm.finish()
}
