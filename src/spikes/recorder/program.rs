//! The recorder's BPF programs, generated at run time: one per event, each
//! appending one record (`layout.rs`) to its CPU's region.
//!
//! Each event is hooked the cheapest way the kernel takes (`run.rs`): a
//! BTF-typed raw tracepoint (`tp_btf`), whose program reads the
//! tracepoint's arguments and the members of the tasks they point to at
//! their BTF offsets, or else a classic tracepoint, whose program reads the
//! record the kernel builds first, its fields where the event's tracefs
//! `format` file says. A classic tracepoint costs about 110 ns more per
//! event here (docs/measurement.md): on a busy CPU, tens of thousands of
//! events a second, several on a measured wake-up's own path. Both write
//! the same record (`Value` says where each value comes from).
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
use crate::rt::bpf::btf::{self, Btf};
use crate::rt::bpf::{Alu, Asm, Cond, Helper, Insn, Label, Map, Reg, Size};
use crate::rt::tracefs::events::{NmiFields, Switch, SwitchFields, WakeupFields, vector_event};
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

/// Where a program reads one value of its event.
#[derive(Debug, Clone)]
pub enum Value {
    /// A field of the trace record a classic tracepoint hands over, where
    /// its tracefs `format` file says.
    Field(Field),
    /// Argument `n` of a raw tracepoint (its low 32 bits are recorded).
    Arg(usize),
    /// A member of the structure argument `arg` points to, at its BTF
    /// offset: a BTF-typed raw tracepoint's verifier knows the pointer's
    /// type and turns the plain load into a fault-safe one.
    Member {
        arg: usize,
        offset: usize,
        size: usize,
    },
}

/// A task's pid, priority and name (16 bytes), as a switch names both.
#[derive(Debug, Clone)]
pub struct TaskValues {
    pub pid: Value,
    pub prio: Value,
    pub comm: Value,
}

/// `sched_switch`'s `prev_state` as tracefs reports it (`Switch::prev_state`).
#[derive(Debug, Clone)]
pub enum SwitchState {
    /// The record's field: the kernel computed it.
    Field(Field),
    /// Computed here as the kernel's `__trace_sched_switch_state` does
    /// (Linux >= 5.18, where the raw tracepoint passes `prev_state`): from
    /// the `preempt` and `prev_state` arguments and `prev->exit_state`.
    Arguments {
        preempt: usize,
        state: usize,
        exit_state: Value,
    },
}

/// What one program records, with where it reads each value: from the
/// record of a classic tracepoint (`Recipe::of`, the same field tables as
/// the tracefs decoder's, `rt::tracefs::events`) or from the arguments of a
/// BTF-typed raw tracepoint (`Recipe::of_arguments`).
#[derive(Debug, Clone)]
pub enum Recipe {
    Switch {
        prev: TaskValues,
        next: TaskValues,
        state: SwitchState,
    },
    /// Only for the listed tasks.
    Wakeup {
        pid: Value,
        prio: Value,
        target_cpu: Value,
        tids: Vec<i32>,
    },
    /// IRQ and softirq entries and exits: one operand (irq, vec) into A.
    Operand { kind: Kind, value: Value },
    /// A system vector's entry or exit: its index into `VECTORS`.
    Vector { kind: Kind, index: u16 },
    /// An NMI handler's end, with its run.
    Nmi { delta_ns: Value, handled: Value },
}

/// The events recorded with one operand (into A): their record kind and
/// the field it comes from (on a raw tracepoint: the first argument).
const OPERANDS: [(&str, Kind, &str); 4] = [
    ("irq_handler_entry", Kind::IrqEntry, "irq"),
    ("irq_handler_exit", Kind::IrqExit, "irq"),
    ("softirq_entry", Kind::SoftirqEntry, "vec"),
    ("softirq_exit", Kind::SoftirqExit, "vec"),
];

/// The recipe of the events with no value to read (the system vectors),
/// or `None`.
fn vector_recipe(name: &str) -> Option<Recipe> {
    let (index, entry) = vector_event(name)?;
    Some(Recipe::Vector {
        kind: if entry {
            Kind::VectorEntry
        } else {
            Kind::VectorExit
        },
        index: u16::from(index),
    })
}

fn no_program(event: &str) -> String {
    format!("the recorder has no program for {event}")
}

impl Recipe {
    /// The recipe for the classic tracepoint whose record `format`
    /// describes (see `events::ACTIVITY`, `VECTOR_EVENTS` and `NMI`),
    /// recording wake-ups of `tids` only.
    pub fn of(format: &EventFormat, tids: &[i32]) -> Result<Recipe, String> {
        let name = format.name.as_str();
        if let Some((_, kind, field)) = OPERANDS.iter().find(|(event, ..)| *event == name) {
            return Ok(Recipe::Operand {
                kind: *kind,
                value: Value::Field(format.field(field)?.clone()),
            });
        }
        Ok(match name {
            "sched_switch" => {
                let f = SwitchFields::of(format)?;
                let task = |pid: Field, prio: Field, comm: Field| TaskValues {
                    pid: Value::Field(pid),
                    prio: Value::Field(prio),
                    comm: Value::Field(comm),
                };
                Recipe::Switch {
                    prev: task(f.prev_pid, f.prev_prio, f.prev_comm),
                    next: task(f.next_pid, f.next_prio, f.next_comm),
                    state: SwitchState::Field(f.prev_state),
                }
            }
            "sched_wakeup" => {
                let f = WakeupFields::of(format)?;
                Recipe::Wakeup {
                    pid: Value::Field(f.pid),
                    prio: Value::Field(f.prio),
                    target_cpu: Value::Field(f.target_cpu),
                    tids: tids.to_vec(),
                }
            }
            "nmi_handler" => {
                let f = NmiFields::of(format)?;
                Recipe::Nmi {
                    delta_ns: Value::Field(f.delta_ns),
                    handled: Value::Field(f.handled),
                }
            }
            other => vector_recipe(other).ok_or_else(|| no_program(other))?,
        })
    }

    /// The recipe for the raw tracepoint `event` as a BTF-typed program
    /// sees it: its arguments, in the kernel's prototype, and the members
    /// of the tasks they point to, at their BTF offsets. An error where the
    /// prototype is not the one the recipe assumes (the caller then uses
    /// the classic tracepoint).
    pub fn of_arguments(btf: &Btf, event: &str, tids: &[i32]) -> Result<Recipe, String> {
        let (_, args) = btf.tracepoint(event)?;
        let unexpected =
            || format!("the tracepoint {event} has arguments the recorder does not expect");
        // Argument `i`, checked to be an integer of at most 8 bytes.
        let int_arg = |i: usize| -> Result<usize, String> {
            match args.get(i).and_then(|&t| btf.size_of(t).ok()) {
                Some(1..=8) => Ok(i),
                _ => Err(unexpected()),
            }
        };
        let task = btf.find("task_struct", btf::Kind::Struct)?;
        let task_at = |i: usize| -> Result<usize, String> {
            match args.get(i).map(|&a| btf.pointee(a)) {
                Some(Ok(t)) if btf.resolve(t).ok() == Some(task) => Ok(i),
                _ => Err(unexpected()),
            }
        };
        let member = |arg: usize, paths: &[&str]| -> Result<Value, String> {
            let mut last = String::new();
            for path in paths {
                match btf.member("task_struct", path) {
                    Ok(m) => {
                        return Ok(Value::Member {
                            arg,
                            offset: m.offset as usize,
                            size: m.size as usize,
                        });
                    }
                    Err(why) => last = why,
                }
            }
            Err(last)
        };
        let task_values = |arg: usize| -> Result<TaskValues, String> {
            Ok(TaskValues {
                pid: member(arg, &["pid"])?,
                prio: member(arg, &["prio"])?,
                comm: member(arg, &["comm"])?,
            })
        };
        if let Some((_, kind, _)) = OPERANDS.iter().find(|(e, ..)| *e == event) {
            return Ok(Recipe::Operand {
                kind: *kind,
                value: Value::Arg(int_arg(0)?),
            });
        }
        Ok(match event {
            // (bool preempt, prev, next, unsigned int prev_state): Linux
            // 5.18 added the state; before it the kernel read it itself.
            "sched_switch" if args.len() == 4 => Recipe::Switch {
                prev: task_values(task_at(1)?)?,
                next: task_values(task_at(2)?)?,
                state: SwitchState::Arguments {
                    preempt: int_arg(0)?,
                    state: int_arg(3)?,
                    exit_state: member(1, &["exit_state"])?,
                },
            },
            "sched_switch" => return Err(unexpected()),
            "sched_wakeup" => {
                let p = task_at(0)?;
                Recipe::Wakeup {
                    pid: member(p, &["pid"])?,
                    prio: member(p, &["prio"])?,
                    // task_cpu(): in thread_info since Linux 5.16, in the
                    // task itself from 5.3 to 5.15.
                    target_cpu: member(p, &["thread_info.cpu", "cpu"])?,
                    tids: tids.to_vec(),
                }
            }
            // (void *handler, s64 delta_ns, int handled)
            "nmi_handler" if args.len() == 3 => Recipe::Nmi {
                delta_ns: Value::Arg(int_arg(1)?),
                handled: Value::Arg(int_arg(2)?),
            },
            other => vector_recipe(other).ok_or_else(|| no_program(other))?,
        })
    }
}

/// Scratch register of `load`: the structure pointer of a `Value::Member`.
const POINTER: Reg = Reg::R5;

/// `dst = value`'s low 32 bits (or the whole of a narrower one; clobbers
/// `POINTER`). A record's field or a member is loaded where it starts
/// (little-endian: the low bytes of a wider one), aligned as the kernel
/// requires.
fn load(asm: &mut Asm, dst: Reg, value: &Value) -> Result<(), String> {
    let (base, offset, size, name) = match value {
        Value::Field(field) => (CTX, field.offset, field.size, field.name.as_str()),
        Value::Arg(n) => {
            asm.push(Insn::ldx(Size::DW, dst, CTX, (8 * n) as i16));
            return Ok(());
        }
        Value::Member { arg, offset, size } => {
            asm.push(Insn::ldx(Size::DW, POINTER, CTX, (8 * arg) as i16));
            (POINTER, *offset, *size, "a task member")
        }
    };
    let width = match size {
        1 => Size::B,
        2 => Size::H,
        _ if size >= 4 => Size::W,
        n => return Err(format!("field {name} has size {n}")),
    };
    let bytes = size.min(4);
    if !offset.is_multiple_of(bytes) || offset > i16::MAX as usize {
        return Err(format!("field {name} is not aligned"));
    }
    asm.push(Insn::ldx(width, dst, base, offset as i16));
    Ok(())
}

/// Offset of a record field from `SLOT` (which points at the record's slot
/// minus `Region::RECORDS`, see `program`).
fn at_record(field: usize) -> i16 {
    (Region::RECORDS + field) as i16
}

/// Copies the 16-byte name `comm` (a record's field or a task's member) to
/// `offset` from `dst`, in the widest loads its alignment allows (clobbers
/// R1 and `POINTER`).
fn copy_comm(asm: &mut Asm, dst: Reg, offset: usize, comm: &Value) -> Result<(), String> {
    let (base, from) = match comm {
        Value::Field(field) => (CTX, field.offset),
        Value::Member { arg, offset, .. } => {
            asm.push(Insn::ldx(Size::DW, POINTER, CTX, (8 * arg) as i16));
            (POINTER, *offset)
        }
        Value::Arg(_) => return Err("a task name is not an argument".to_string()),
    };
    let width = [8usize, 4, 2, 1]
        .into_iter()
        .find(|w| from.is_multiple_of(*w) && offset.is_multiple_of(*w))
        .expect("1 divides everything");
    let size = Size::of_bytes(width).expect("a load width");
    for at in (0..16).step_by(width) {
        asm.push(Insn::ldx(size, Reg::R1, base, (from + at) as i16))
            .push(Insn::stx(size, dst, (offset + at) as i16, Reg::R1));
    }
    Ok(())
}

// Task states of Linux >= 5.18 (include/linux/sched.h), for `SwitchState::
// Arguments`: what `__trace_sched_switch_state` reports.
const TASK_REPORT: i32 = 0x7f;
const TASK_IDLE: i32 = 0x402;
const TASK_REPORT_IDLE: i32 = 0x80;
/// `TASK_RTLOCK_WAIT | TASK_FROZEN`: reported as `TASK_UNINTERRUPTIBLE`.
const REPORTED_UNINTERRUPTIBLE: i32 = 0x1000 | 0x8000;
const TASK_UNINTERRUPTIBLE: i32 = 0x2;

/// `R1 = prev_state` as the switch's record would hold it (clobbers R2 and
/// `POINTER`): preempted is `PREEMPTED`; else the highest reported state
/// bit (`1 << (fls(state) - 1)`), idle and RT-lock waits mapped as the
/// kernel maps them.
fn switch_state(asm: &mut Asm, state: &SwitchState) -> Result<(), String> {
    let (preempt, raw, exit_state) = match state {
        SwitchState::Field(field) => return load(asm, Reg::R1, &Value::Field(field.clone())),
        SwitchState::Arguments {
            preempt,
            state,
            exit_state,
        } => (*preempt, *state, exit_state),
    };
    let done = asm.new_label();
    asm.push(Insn::ldx(Size::DW, Reg::R2, CTX, (8 * preempt) as i16))
        .push(Insn::alu64_imm(Alu::And, Reg::R2, 0xff))
        .push(Insn::mov64_imm(Reg::R1, Switch::PREEMPTED as i32))
        .jump_if(Cond::Ne, Reg::R2, 0, done);
    asm.push(Insn::ldx(Size::DW, Reg::R2, CTX, (8 * raw) as i16))
        .push(Insn::mov64_reg(Reg::R1, Reg::R2))
        .push(Insn::alu64_imm(Alu::And, Reg::R1, TASK_IDLE));
    let not_idle = asm.new_label();
    asm.jump_if(Cond::Ne, Reg::R1, TASK_IDLE, not_idle)
        .push(Insn::mov64_imm(Reg::R1, TASK_REPORT_IDLE))
        .jump(done);
    asm.bind(not_idle);
    asm.push(Insn::mov64_imm(Reg::R1, TASK_UNINTERRUPTIBLE))
        .jump_if(Cond::Set, Reg::R2, REPORTED_UNINTERRUPTIBLE, done);
    load(asm, Reg::R1, exit_state)?;
    asm.push(Insn::alu64_reg(Alu::Or, Reg::R1, Reg::R2))
        .push(Insn::alu64_imm(Alu::And, Reg::R1, TASK_REPORT));
    // Keep the highest bit: tested from the top, the first set one wins
    // (none set: the task was running, 0 stays).
    let bits: Vec<(i32, Label)> = (0..7).rev().map(|b| (1i32 << b, asm.new_label())).collect();
    for &(bit, found) in &bits {
        asm.jump_if(Cond::Set, Reg::R1, bit, found);
    }
    asm.jump(done);
    for &(bit, found) in &bits {
        asm.bind(found)
            .push(Insn::mov64_imm(Reg::R1, bit))
            .jump(done);
    }
    asm.bind(done);
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
fn record_switch(
    asm: &mut Asm,
    prev: &TaskValues,
    next: &TaskValues,
    state: &SwitchState,
) -> Result<(), String> {
    for (task, at) in [(prev, record::A), (next, record::B)] {
        load(asm, Reg::R1, &task.pid)?;
        asm.push(Insn::stx(Size::W, SLOT, at_record(at), Reg::R1));
    }
    load(asm, Reg::R1, &prev.prio)?;
    load(asm, Reg::R2, &next.prio)?;
    asm.push(Insn::alu64_imm(Alu::And, Reg::R1, 0xffff))
        .push(Insn::alu64_imm(Alu::And, Reg::R2, 0xffff))
        .push(Insn::alu64_imm(Alu::Lsh, Reg::R2, 16))
        .push(Insn::alu64_reg(Alu::Or, Reg::R1, Reg::R2))
        .push(Insn::stx(Size::W, SLOT, at_record(record::C), Reg::R1));
    switch_state(asm, state)?;
    asm.push(Insn::stx(Size::W, SLOT, at_record(record::D), Reg::R1));
    // Both tasks' names, and the CPU's new current task.
    for task in [prev, next] {
        load(asm, Reg::R2, &task.pid)?;
        name_entry(asm);
        load(asm, Reg::R2, &task.pid)?;
        asm.push(Insn::stx(
            Size::W,
            Reg::R3,
            (Region::NAMES + name::PID) as i16,
            Reg::R2,
        ));
        load(asm, Reg::R2, &task.prio)?;
        asm.push(Insn::stx(
            Size::W,
            Reg::R3,
            (Region::NAMES + name::PRIO) as i16,
            Reg::R2,
        ));
        asm.push(Insn::mov64_reg(Reg::R4, Reg::R3));
        // copy_comm uses R1 and POINTER only: R4 holds the entry.
        copy_comm(asm, Reg::R4, Region::NAMES + name::COMM, &task.comm)?;
    }
    asm.push(Insn::stx(Size::DW, REGION, header::TASK_SINCE as i16, TIME));
    load(asm, Reg::R1, &next.pid)?;
    asm.push(Insn::stx(Size::W, REGION, header::TASK_PID as i16, Reg::R1));
    load(asm, Reg::R1, &next.prio)?;
    asm.push(Insn::stx(
        Size::W,
        REGION,
        header::TASK_PRIO as i16,
        Reg::R1,
    ));
    Ok(())
}

/// The operands of `recipe`'s record (A to D), read where its values are.
fn record_operands(asm: &mut Asm, recipe: &Recipe) -> Result<(), String> {
    let operands = [record::A, record::B, record::C, record::D];
    match recipe {
        Recipe::Switch { prev, next, state } => record_switch(asm, prev, next, state)?,
        Recipe::Wakeup {
            pid,
            prio,
            target_cpu,
            ..
        } => {
            for (value, at) in [pid, prio, target_cpu].into_iter().zip(operands) {
                load(asm, Reg::R1, value)?;
                asm.push(Insn::stx(Size::W, SLOT, at_record(at), Reg::R1));
            }
        }
        Recipe::Operand { value, .. } => {
            load(asm, Reg::R1, value)?;
            asm.push(Insn::stx(Size::W, SLOT, at_record(record::A), Reg::R1));
        }
        Recipe::Nmi { delta_ns, handled } => {
            for (value, at) in [(delta_ns, record::A), (handled, record::B)] {
                load(asm, Reg::R1, value)?;
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
    if let Recipe::Wakeup { pid, tids, .. } = recipe {
        let keep = asm.new_label();
        load(&mut asm, Reg::R2, pid)?;
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
        Recipe::Switch { .. } => Kind::Switch,
        Recipe::Wakeup { .. } => Kind::Wakeup,
        Recipe::Operand { kind, .. } | Recipe::Vector { kind, .. } => *kind,
        Recipe::Nmi { .. } => Kind::Nmi,
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
