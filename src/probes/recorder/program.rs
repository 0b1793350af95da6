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
//! record `i` with an atomic fetch-and-add on `head`, leaves it unwritten
//! (counted) when its slot is held for a spike's window (`hold.rs`), clears its `SEQ`,
//! reads its fields from the record the tracepoint hands over (the
//! context) into slot `i % slots`, writes how long it ran, and commits with
//! `SEQ = i + 1` (see `layout.rs` for why this is safe under nesting). The
//! switch program also writes the names of both tasks into the name table
//! and the CPU's current task into the header.

use super::layout::{INTERRUPTED_NS, Kind, NAME_SHIFT, Region, header, name, record};
use crate::probes::ProbeError;
use crate::probes::ring::{commit, reserve, this_cpu_area};
use crate::rt::bpf::btf::{self, Btf};
use crate::rt::bpf::{Alu, Asm, Code, Cond, Helper, Insn, Label, Reg, Size};
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

/// The name the recorder's errors give the family.
const FAMILY: &str = "recorder";

fn no_program(event: &str) -> ProbeError {
    ProbeError::NoProgram {
        event: event.to_string(),
        family: FAMILY,
    }
}

impl Recipe {
    /// The recipe for the classic tracepoint whose record `format`
    /// describes (see `events::ACTIVITY`, `VECTOR_EVENTS` and `NMI`),
    /// recording wake-ups of `tids` only.
    pub fn of(format: &EventFormat, tids: &[i32]) -> Result<Recipe, ProbeError> {
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
    pub fn of_arguments(btf: &Btf, event: &str, tids: &[i32]) -> Result<Recipe, ProbeError> {
        check_prototype(btf, event)?;
        Recipe::typed(event, &TaskMembers::read(btf)?, tids)
    }

    /// The recipe of a BTF-typed program on `event` whose prototype is the
    /// one assumed (`check_prototype`), its tasks' members at `members`.
    pub fn typed(event: &str, members: &TaskMembers, tids: &[i32]) -> Result<Recipe, ProbeError> {
        if let Some((_, kind, _)) = OPERANDS.iter().find(|(e, ..)| *e == event) {
            return Ok(Recipe::Operand {
                kind: *kind,
                value: Value::Arg(0),
            });
        }
        Ok(match event {
            // (bool preempt, prev, next, unsigned int prev_state): Linux
            // 5.18 added the state; before it the kernel read it itself.
            "sched_switch" => Recipe::Switch {
                prev: members.task(1),
                next: members.task(2),
                state: SwitchState::Arguments {
                    preempt: 0,
                    state: 3,
                    exit_state: TaskMembers::at(1, members.exit_state, "exit_state")?,
                },
            },
            "sched_wakeup" => Recipe::Wakeup {
                pid: TaskMembers::at(0, Some(members.pid), "pid")?,
                prio: TaskMembers::at(0, Some(members.prio), "prio")?,
                target_cpu: TaskMembers::at(0, members.cpu, "cpu")?,
                tids: tids.to_vec(),
            },
            // (void *handler, s64 delta_ns, int handled)
            "nmi_handler" => Recipe::Nmi {
                delta_ns: Value::Arg(1),
                handled: Value::Arg(2),
            },
            other => vector_recipe(other).ok_or_else(|| no_program(other))?,
        })
    }
}

/// A member of `task_struct`: (offset, size) in bytes, from BTF.
pub type TaskMember = (usize, usize);

/// The members of `task_struct` the typed programs read.
#[derive(Debug, Clone, Copy)]
pub struct TaskMembers {
    pub pid: TaskMember,
    pub prio: TaskMember,
    pub comm: TaskMember,
    /// Only the switch's program reads it.
    pub exit_state: Option<TaskMember>,
    /// `task_cpu()`: only the wake-up's program reads it.
    pub cpu: Option<TaskMember>,
}

impl TaskMembers {
    /// Where this kernel's BTF puts them.
    pub fn read(btf: &Btf) -> Result<TaskMembers, ProbeError> {
        let member = |paths: &[&str]| -> Result<TaskMember, ProbeError> {
            let mut last = ProbeError::Kernel(String::new());
            for path in paths {
                match btf.member("task_struct", path) {
                    Ok(m) => return Ok((m.offset as usize, m.size as usize)),
                    Err(why) => last = ProbeError::kernel(why),
                }
            }
            Err(last)
        };
        Ok(TaskMembers {
            pid: member(&["pid"])?,
            prio: member(&["prio"])?,
            comm: member(&["comm"])?,
            exit_state: member(&["exit_state"]).ok(),
            // In thread_info since Linux 5.16, in the task itself from 5.3
            // to 5.15.
            cpu: member(&["thread_info.cpu", "cpu"]).ok(),
        })
    }

    /// The member `name` of the task argument `arg` points to.
    fn at(arg: usize, member: Option<TaskMember>, name: &str) -> Result<Value, ProbeError> {
        let (offset, size) = member.ok_or_else(|| {
            ProbeError::Kernel(format!("struct task_struct has no member '{name}'"))
        })?;
        Ok(Value::Member { arg, offset, size })
    }

    /// The pid, priority and name of the task argument `arg` points to.
    fn task(&self, arg: usize) -> TaskValues {
        let value = |(offset, size): TaskMember| Value::Member { arg, offset, size };
        TaskValues {
            pid: value(self.pid),
            prio: value(self.prio),
            comm: value(self.comm),
        }
    }
}

/// Checks that `event`'s prototype is the one `Recipe::typed` assumes: an
/// integer of at most 8 bytes or a `task_struct` pointer where it reads
/// one.
pub(crate) fn check_prototype(btf: &Btf, event: &str) -> Result<(), ProbeError> {
    let (_, args) = btf.tracepoint(event)?;
    let unexpected = || ProbeError::Arguments {
        event: event.to_string(),
        family: FAMILY,
    };
    let task = btf.find("task_struct", btf::Kind::Struct)?;
    let is_int = |i: usize| matches!(args.get(i).and_then(|&t| btf.size_of(t).ok()), Some(1..=8));
    let is_task = |i: usize| matches!(args.get(i).map(|&a| btf.pointee(a)), Some(Ok(t)) if btf.resolve(t).ok() == Some(task));
    let fits = if OPERANDS.iter().any(|(e, ..)| *e == event) {
        is_int(0)
    } else {
        match event {
            "sched_switch" => args.len() == 4 && is_int(0) && is_task(1) && is_task(2) && is_int(3),
            "sched_wakeup" => is_task(0),
            "nmi_handler" => args.len() == 3 && is_int(1) && is_int(2),
            other => {
                return vector_recipe(other)
                    .map(|_| ())
                    .ok_or_else(|| no_program(other));
            }
        }
    };
    if fits { Ok(()) } else { Err(unexpected()) }
}

/// Scratch register of `load`: the structure pointer of a `Value::Member`.
const POINTER: Reg = Reg::R5;

/// `dst = value`'s low 32 bits (or the whole of a narrower one; clobbers
/// `POINTER`). A record's field or a member is loaded where it starts
/// (little-endian: the low bytes of a wider one), aligned as the kernel
/// requires.
pub(crate) fn load(asm: &mut Asm, dst: Reg, value: &Value) -> Result<(), ProbeError> {
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
        n => {
            return Err(ProbeError::Field {
                field: name.to_string(),
                problem: format!("has size {n}"),
            });
        }
    };
    let bytes = size.min(4);
    if !offset.is_multiple_of(bytes) || offset > i16::MAX as usize {
        return Err(ProbeError::Field {
            field: name.to_string(),
            problem: "is not aligned".to_string(),
        });
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
pub(crate) fn copy_comm(
    asm: &mut Asm,
    dst: Reg,
    offset: usize,
    comm: &Value,
) -> Result<(), ProbeError> {
    let (base, from) = match comm {
        Value::Field(field) => (CTX, field.offset),
        Value::Member { arg, offset, .. } => {
            asm.push(Insn::ldx(Size::DW, POINTER, CTX, (8 * arg) as i16));
            (POINTER, *offset)
        }
        Value::Arg(_) => return Err(ProbeError::Unsuited("a task name is not an argument")),
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
fn switch_state(asm: &mut Asm, state: &SwitchState) -> Result<(), ProbeError> {
    let (preempt, raw, exit_state) = match state {
        SwitchState::Field(field) => return load(asm, Reg::R1, &Value::Field(field.clone())),
        SwitchState::Arguments {
            preempt,
            state,
            exit_state,
        } => (*preempt, *state, exit_state),
    };
    let done = asm.new_label();
    asm.note("r1 = prev_state as __trace_sched_switch_state reports it");
    asm.push(Insn::ldx(Size::DW, Reg::R2, CTX, (8 * preempt) as i16))
        .push(Insn::alu64_imm(Alu::And, Reg::R2, 0xff))
        .push(Insn::mov64_imm(Reg::R1, Switch::PREEMPTED as i32))
        .jump_if(Cond::Ne, Reg::R2, 0, done);
    // RT-lock waits and frozen tasks first: the kernel reports them as
    // TASK_UNINTERRUPTIBLE even when the idle bits are set too (its
    // override comes after the idle one).
    asm.push(Insn::ldx(Size::DW, Reg::R2, CTX, (8 * raw) as i16))
        .push(Insn::mov64_imm(Reg::R1, TASK_UNINTERRUPTIBLE))
        .jump_if(Cond::Set, Reg::R2, REPORTED_UNINTERRUPTIBLE, done)
        .push(Insn::mov64_reg(Reg::R1, Reg::R2))
        .push(Insn::alu64_imm(Alu::And, Reg::R1, TASK_IDLE));
    let not_idle = asm.new_label();
    asm.jump_if(Cond::Ne, Reg::R1, TASK_IDLE, not_idle)
        .push(Insn::mov64_imm(Reg::R1, TASK_REPORT_IDLE))
        .jump(done);
    asm.bind(not_idle);
    load(asm, Reg::R1, exit_state)?;
    asm.push(Insn::alu64_reg(Alu::Or, Reg::R1, Reg::R2))
        .push(Insn::alu64_imm(Alu::And, Reg::R1, TASK_REPORT));
    asm.note("r1 = its highest reported bit");
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
) -> Result<(), ProbeError> {
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
fn record_operands(asm: &mut Asm, recipe: &Recipe) -> Result<(), ProbeError> {
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
pub fn program(recipe: &Recipe, map_fd: i32, region: Region) -> Result<Code, ProbeError> {
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
    this_cpu_area(
        &mut asm,
        "r7 = this CPU's region, or return",
        map_fd,
        REGION,
    );
    asm.push(Insn::ldx(Size::DW, Reg::R1, REGION, ENABLED as i16))
        .jump_if(Cond::Eq, Reg::R1, 0, out);
    asm.push(Insn::call(Helper::KtimeGetNs))
        .push(Insn::mov64_reg(TIME, Reg::R0));
    asm.note("reserve record i: r1 = i, head = i + 1, commit word i + 1 on the stack");
    // Reserve record i: R1 = i, head = i + 1, atomically (a program that
    // interrupts this one reserves i + 1). Its commit word is kept on the
    // stack for the end.
    reserve(&mut asm, REGION, header::HEAD, COMMIT_ON_STACK);
    asm.note("r8 = &region.records[i % slots] - RECORDS");
    // SLOT = REGION + (i % slots) * RECORD_SIZE: the record's fields are
    // at `at_record` from it.
    region.records().point_at_entry(&mut asm, SLOT, REGION);
    refuse_if_held(&mut asm, region, out);
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
    asm.note("ELAPSED = now - TIME; a long run counts as interrupted");
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
    commit(&mut asm, SLOT, at_record(record::SEQ), COMMIT_ON_STACK);
    asm.bind(out);
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    Ok(asm.finish()?)
}

/// Keeps held windows whole (`layout.rs`, "Holding a window"): record `i`
/// is not written when the record its slot holds, or the one in the next
/// slot (the oldest left once it is written: the one before it is the
/// window's predecessor), is from the hold's time on. The event is counted
/// in `header::REFUSED` instead, its record number left unwritten (a
/// reader sees a gap). Nothing held (a stored 0) is a hold no record's
/// time reaches: two loads, an exclusive or and two comparisons. Expects
/// SLOT set and r2 = i + 1.
fn refuse_if_held(asm: &mut Asm, region: Region, out: Label) {
    let refuse = asm.new_label();
    let write = asm.new_label();
    asm.note("r3 = HOLD (stored complemented); refused if slot i or slot i + 1 holds a record from it on");
    asm.push(Insn::ldx(Size::DW, Reg::R3, REGION, header::HOLD as i16))
        .push(Insn::alu64_imm(Alu::Xor, Reg::R3, -1))
        .push(Insn::ldx(Size::DW, Reg::R1, SLOT, at_record(record::TIME)))
        .jump_if_reg(Cond::Ge, Reg::R1, Reg::R3, refuse);
    region.records().scale(asm, Reg::R2);
    asm.push(Insn::alu64_reg(Alu::Add, Reg::R2, REGION))
        .push(Insn::ldx(
            Size::DW,
            Reg::R1,
            Reg::R2,
            at_record(record::TIME),
        ))
        .jump_if_reg(Cond::Lt, Reg::R1, Reg::R3, write);
    asm.bind(refuse);
    asm.note("refused: counted, nothing written");
    asm.push(Insn::mov64_imm(Reg::R1, 1))
        .push(Insn::atomic_add64(REGION, header::REFUSED as i16, Reg::R1))
        .jump(out);
    asm.bind(write);
}

#[cfg(test)]
mod tests {
    //! The generated programs run in user space (`probes::interpreter`) on
    //! fixture inputs: the switch's state against the kernel's own
    //! computation, and whole programs whose records are decoded back.
    use super::*;
    use crate::probes::fixtures::{
        self, AREA_AT as REGION_AT, CTX_AT, MAP_FD, NEXT_AT, PREV_AT, TASK_BYTES, comm, cpu0_area,
        members, store_comm, store_field, store_task,
    };
    use crate::probes::interpreter::{Memory, run};
    use crate::probes::recorder::decode::{Names, RawRecord, RegionView, Snapshot, decode};
    use crate::probes::recorder::hold;
    use crate::probes::recorder::layout::RECORD_SIZE;
    use crate::rt::tracefs::events::{Kind as Event, TraceEvent};

    /// The kernel's `__trace_sched_switch_state` (include/trace/events/
    /// sched.h, Linux >= 5.18) with `__task_state_index`
    /// (include/linux/sched.h), written from their text: preempted is
    /// TASK_REPORT_MAX; else `(state | exit_state) & TASK_REPORT`, TASK_IDLE
    /// reported as TASK_REPORT_IDLE, then RT-lock waits and frozen tasks as
    /// TASK_UNINTERRUPTIBLE; the result `1 << (fls(state) - 1)`, or 0.
    fn kernel_switch_state(preempt: bool, prev_state: u32, exit_state: u32) -> u64 {
        const TASK_REPORT: u32 = 0x7f;
        const TASK_IDLE: u32 = 0x402;
        const TASK_REPORT_IDLE: u32 = TASK_REPORT + 1;
        const TASK_REPORT_MAX: u64 = (TASK_REPORT_IDLE as u64) << 1;
        const TASK_RTLOCK_WAIT: u32 = 0x1000;
        const TASK_FROZEN: u32 = 0x8000;
        if preempt {
            return TASK_REPORT_MAX;
        }
        let mut state = (prev_state | exit_state) & TASK_REPORT;
        if prev_state & TASK_IDLE == TASK_IDLE {
            state = TASK_REPORT_IDLE;
        }
        if prev_state & TASK_RTLOCK_WAIT != 0 || prev_state & TASK_FROZEN != 0 {
            state = 2;
        }
        let fls = 32 - state.leading_zeros();
        if fls == 0 { 0 } else { 1 << (fls - 1) }
    }

    /// The program part that computes the state, alone: r0 = its result.
    fn switch_state_code() -> Code {
        let mut asm = Asm::new();
        asm.push(Insn::mov64_reg(CTX, Reg::R1));
        let exit_state = TaskMembers::at(1, members().exit_state, "exit_state").unwrap();
        let state = SwitchState::Arguments {
            preempt: 0,
            state: 3,
            exit_state,
        };
        switch_state(&mut asm, &state).unwrap();
        asm.push(Insn::mov64_reg(Reg::R0, Reg::R1))
            .push(Insn::exit());
        asm.finish().unwrap()
    }

    /// Runs it on the raw tracepoint's arguments (preempt, prev, next,
    /// prev_state) with `prev->exit_state`.
    fn program_switch_state(code: &Code, preempt: bool, prev_state: u32, exit_state: u32) -> u64 {
        let mut memory = Memory::new();
        memory.add(CTX_AT, 32);
        memory.add(PREV_AT, TASK_BYTES);
        let args = [u64::from(preempt), PREV_AT, NEXT_AT, u64::from(prev_state)];
        for (i, arg) in args.into_iter().enumerate() {
            memory.store(CTX_AT + 8 * i as u64, 8, arg).unwrap();
        }
        let at = PREV_AT + members().exit_state.unwrap().0 as u64;
        memory.store(at, 4, u64::from(exit_state)).unwrap();
        run(code, CTX_AT, &mut memory, &mut |id, _, _| {
            panic!("call {id}")
        })
        .unwrap()
    }

    #[test]
    fn the_switch_state_of_each_kernel_state_bit() {
        let code = switch_state_code();
        // (prev_state, exit_state, what tracefs prints): Linux 6.x values.
        let cases = [
            (0x0000, 0, 0x00),    // TASK_RUNNING (R)
            (0x0001, 0, 0x01),    // TASK_INTERRUPTIBLE (S)
            (0x0002, 0, 0x02),    // TASK_UNINTERRUPTIBLE (D)
            (0x0004, 0, 0x04),    // __TASK_STOPPED (T)
            (0x0008, 0, 0x08),    // __TASK_TRACED (t)
            (0x0000, 0x10, 0x10), // EXIT_DEAD (X), in exit_state
            (0x0000, 0x20, 0x20), // EXIT_ZOMBIE (Z), in exit_state
            (0x0040, 0, 0x40),    // TASK_PARKED (P)
            (0x0080, 0, 0x00),    // TASK_DEAD: not a reported state
            (0x0080, 0x20, 0x20), // TASK_DEAD of a zombie
            (0x0102, 0, 0x02),    // TASK_KILLABLE (WAKEKILL | UNINTERRUPTIBLE)
            (0x0402, 0, 0x80),    // TASK_IDLE (I)
            (0x1000, 0, 0x02),    // TASK_RTLOCK_WAIT: as D
            (0x8000, 0, 0x02),    // TASK_FROZEN: as D
            (0x000c, 0, 0x08),    // two bits: the highest
            (0x8402, 0, 0x02),    // idle but frozen: frozen wins, as in the kernel
        ];
        for (state, exit, want) in cases {
            assert_eq!(kernel_switch_state(false, state, exit), want, "{state:#x}");
            assert_eq!(
                program_switch_state(&code, false, state, exit),
                want,
                "prev_state {state:#x}, exit_state {exit:#x}"
            );
        }
        // Preempted: TASK_REPORT_MAX whatever the state.
        for state in [0, 1, 0x402] {
            assert_eq!(
                program_switch_state(&code, true, state, 0),
                Switch::PREEMPTED
            );
        }
    }

    #[test]
    fn the_switch_state_agrees_with_the_kernel_on_every_16_bit_state() {
        let code = switch_state_code();
        for exit in [0, 0x10, 0x20, 0x30] {
            for state in 0..=0xffff_u32 {
                let want = kernel_switch_state(false, state, exit);
                let got = program_switch_state(&code, false, state, exit);
                assert_eq!(got, want, "prev_state {state:#x}, exit_state {exit:#x}");
            }
        }
    }

    /// What one run of `recipe`'s whole program wrote, decoded: the
    /// context at CTX_AT is laid out by `set_context`; this CPU is 0, the
    /// current task 77, the clock 1050 then 1100.
    fn run_program(recipe: &Recipe, set_context: &dyn Fn(&mut Memory)) -> Vec<TraceEvent> {
        let region = Region::with_slots(64);
        let code = program(recipe, MAP_FD, region).unwrap();
        let mut memory = fixtures::memory(region.size());
        memory.store(REGION_AT + ENABLED as u64, 8, 1).unwrap();
        set_context(&mut memory);
        let mut clock = 1000;
        let r0 = run(&code, CTX_AT, &mut memory, &mut |id, r, memory| {
            cpu0_area(id, r, memory).unwrap_or_else(|| match id {
                5 => {
                    clock += 50;
                    clock
                }
                14 => 77 << 32 | 77,
                other => panic!("helper {other}"),
            })
        })
        .unwrap();
        assert_eq!(r0, 0);
        let bytes = memory.bytes(REGION_AT);
        // SAFETY: the region's bytes, alive while `view` is used.
        let view = unsafe { RegionView::new(bytes.as_ptr(), region) };
        let mut names = Names::known(&[], &[(11, "eth0")]);
        let snapshot = view.snapshot(0);
        snapshot
            .records
            .iter()
            .filter_map(|r| decode(r, 0, &mut names, Some(&view)))
            .collect()
    }

    fn event(kind: Event) -> Vec<TraceEvent> {
        vec![TraceEvent {
            time: 1050,
            cpu: 0,
            pid: 77,
            kind,
        }]
    }

    fn format(text: &str) -> EventFormat {
        EventFormat::parse(text).unwrap()
    }

    const SWITCH: &str = include_str!("../../rt/tracefs/testdata/sched_switch.format");
    const WAKEUP: &str = include_str!("../../rt/tracefs/testdata/sched_wakeup.format");

    /// prev 1234 "sampler" prio 19, asleep; next 0 "swapper/0" prio 120.
    fn expected_switch() -> Vec<TraceEvent> {
        event(Event::Switch(Switch {
            prev_pid: 1234,
            prev_prio: 19,
            prev_state: 1,
            prev_comm: comm("sampler"),
            next_pid: 0,
            next_prio: 120,
            next_comm: comm("swapper/0"),
        }))
    }

    #[test]
    fn a_typed_switch_is_recorded_and_decoded_whole() {
        let m = members();
        let recipe = Recipe::typed("sched_switch", &m, &[1234]).unwrap();
        let events = run_program(&recipe, &|memory| {
            for (i, arg) in [0, PREV_AT, NEXT_AT, 1].into_iter().enumerate() {
                memory.store(CTX_AT + 8 * i as u64, 8, arg).unwrap();
            }
            for (task, pid, prio, name) in [
                (PREV_AT, 1234, 19, "sampler"),
                (NEXT_AT, 0, 120, "swapper/0"),
            ] {
                store_task(memory, task, pid, name);
                memory.store(task + m.prio.0 as u64, 4, prio).unwrap();
            }
        });
        assert_eq!(events, expected_switch());
    }

    #[test]
    fn a_classic_switch_is_recorded_and_decoded_whole() {
        let f = format(SWITCH);
        let recipe = Recipe::of(&f, &[1234]).unwrap();
        let set =
            |memory: &mut Memory, name: &str, value: u64| store_field(memory, &f, name, value);
        let events = run_program(&recipe, &|memory| {
            set(memory, "prev_pid", 1234);
            set(memory, "prev_prio", 19);
            set(memory, "prev_state", 1);
            set(memory, "next_pid", 0);
            set(memory, "next_prio", 120);
            for (field, name) in [("prev_comm", "sampler"), ("next_comm", "swapper/0")] {
                let at = f.field(field).unwrap().offset as u64;
                store_comm(memory, CTX_AT + at, name);
            }
        });
        assert_eq!(events, expected_switch());
    }

    #[test]
    fn a_wake_up_is_recorded_only_for_the_measured_tasks() {
        let f = format(WAKEUP);
        let recipe = Recipe::of(&f, &[1234, 1300]).unwrap();
        let woken = |pid: u64| {
            run_program(&recipe, &|memory| {
                for (name, value) in [("pid", pid), ("prio", 19), ("target_cpu", 1)] {
                    store_field(memory, &f, name, value);
                }
            })
        };
        assert_eq!(
            woken(1300),
            event(Event::Wakeup {
                pid: 1300,
                prio: 19,
                target_cpu: 1
            })
        );
        assert_eq!(woken(999), vec![], "another task's wake-up");
    }

    #[test]
    fn irq_vector_and_nmi_records_decode_to_their_events() {
        let irq = Recipe::Operand {
            kind: Kind::IrqEntry,
            value: Value::Arg(0),
        };
        let set_args = |args: [u64; 3]| {
            move |memory: &mut Memory| {
                for (i, arg) in args.into_iter().enumerate() {
                    memory.store(CTX_AT + 8 * i as u64, 8, arg).unwrap();
                }
            }
        };
        let events = run_program(&irq, &set_args([11, 0, 0]));
        let Event::IrqEntry { irq, .. } = events[0].kind else {
            panic!("{events:?}")
        };
        assert_eq!(irq, 11);
        let vector = Recipe::typed("local_timer_entry", &members(), &[]).unwrap();
        let (index, _) = vector_event("local_timer_entry").unwrap();
        assert_eq!(
            run_program(&vector, &set_args([0, 0, 0])),
            event(Event::VectorEntry { vector: index })
        );
        let nmi = Recipe::typed("nmi_handler", &members(), &[]).unwrap();
        assert_eq!(
            run_program(&nmi, &set_args([0xffff_0000, 4_500, 1])),
            event(Event::Nmi {
                delta_ns: 4_500,
                handled: 1
            })
        );
    }

    /// A CPU's region in the interpreter's memory and the timer-entry
    /// program that writes it: run `n` (its record number) reads the clock
    /// at `time_of(n)`, then 50 ns later at its end.
    struct Ring {
        region: Region,
        code: Code,
        memory: Memory,
        runs: u64,
    }

    impl Ring {
        fn new(slots: usize) -> Ring {
            let region = Region::with_slots(slots);
            let recipe = Recipe::typed("local_timer_entry", &members(), &[]).unwrap();
            let mut memory = Memory::new();
            memory.add(CTX_AT, 64);
            memory.add(REGION_AT, region.size());
            memory.store(REGION_AT + ENABLED as u64, 8, 1).unwrap();
            Ring {
                code: program(&recipe, MAP_FD, region).unwrap(),
                region,
                memory,
                runs: 0,
            }
        }

        /// `n` events.
        fn fire(&mut self, n: usize) {
            for _ in 0..n {
                let mut clock = Ring::time_of(self.runs) - 50;
                self.runs += 1;
                run(
                    &self.code,
                    CTX_AT,
                    &mut self.memory,
                    &mut |id, r, memory| {
                        cpu0_area(id, r, memory).unwrap_or_else(|| match id {
                            5 => {
                                clock += 50;
                                clock
                            }
                            14 => 77,
                            other => panic!("helper {other}"),
                        })
                    },
                )
                .unwrap();
            }
        }

        /// The time of record `index`.
        fn time_of(index: u64) -> u64 {
            (1 << 30) + 100_000 * index
        }

        fn header(&mut self, field: usize) -> u64 {
            self.memory.load(REGION_AT + field as u64, 8).unwrap()
        }

        /// What a spike does (`hold::Holds::hold`), on the region's word.
        fn hold(&mut self, from_ns: u64) {
            let word = self.header(header::HOLD);
            let held = hold::stored(hold::held_from(hold::stored(word), from_ns));
            self.memory
                .store(REGION_AT + header::HOLD as u64, 8, held)
                .unwrap();
        }

        fn release(&mut self) {
            self.memory
                .store(REGION_AT + header::HOLD as u64, 8, 0)
                .unwrap();
        }

        fn records(&mut self) -> Vec<u8> {
            let at = Region::RECORDS;
            self.memory.bytes(REGION_AT)[at..at + self.region.slots * RECORD_SIZE].to_vec()
        }

        fn snapshot(&mut self, from_ns: u64, to_ns: u64) -> Snapshot {
            let region = self.region;
            let bytes = self.memory.bytes(REGION_AT);
            // SAFETY: the region's bytes, alive while the view is used.
            unsafe { RegionView::new(bytes.as_ptr(), region) }.snapshot_between(from_ns, to_ns)
        }
    }

    #[test]
    fn a_held_window_is_not_overwritten_and_later_events_are_refused() {
        let mut ring = Ring::new(64);
        ring.fire(100);
        // Records 36..99 are in the ring. A spike holds from record 80's time.
        ring.hold(Ring::time_of(80));
        // Events after the hold still go into the ring, over the records
        // older than the window's predecessor (79): records 100..142 over
        // 36..78; then every slot holds the window or its predecessor, and
        // the rest are refused.
        ring.fire(200);
        assert_eq!(ring.header(header::HEAD), 300);
        assert_eq!(ring.header(header::REFUSED), 157);
        let window = ring.snapshot(Ring::time_of(80), Ring::time_of(99));
        assert!(window.complete && !window.overwritten);
        let times: Vec<u64> = window.records.iter().map(RawRecord::time).collect();
        assert_eq!(times, (79..=99).map(Ring::time_of).collect::<Vec<_>>());
        assert!(!window.doubtful(Ring::time_of(79), Ring::time_of(99)));
        // The newest records and the refused stretch after them.
        let all = ring.snapshot(0, u64::MAX);
        assert_eq!(all.records.len(), 64);
        assert_eq!(all.records.last().unwrap().time(), Ring::time_of(142));
        assert!(all.doubtful(Ring::time_of(142) + 1, u64::MAX));
        // More events change nothing while the hold stands.
        let before = ring.records();
        ring.fire(500);
        assert_eq!(ring.records(), before, "a held ring was written");
        assert_eq!(ring.header(header::REFUSED), 657);
    }

    #[test]
    fn a_released_hold_lets_the_ring_go_round_again_leaving_the_refused_stretch_in_doubt() {
        let mut ring = Ring::new(64);
        ring.fire(100);
        ring.hold(Ring::time_of(80));
        ring.fire(60);
        // 43 written (100..142), 17 refused (143..159).
        assert_eq!(ring.header(header::REFUSED), 17);
        ring.release();
        ring.fire(10);
        assert_eq!(
            ring.header(header::REFUSED),
            17,
            "nothing refused once released"
        );
        assert_eq!(ring.header(header::HEAD), 170);
        let all = ring.snapshot(0, u64::MAX);
        let newest: Vec<u64> = all
            .records
            .iter()
            .rev()
            .take(10)
            .map(RawRecord::time)
            .collect();
        assert_eq!(
            newest,
            (160..170).rev().map(Ring::time_of).collect::<Vec<_>>()
        );
        // Events 143..159 were not recorded: their stretch is in doubt,
        // nothing outside it.
        assert!(all.doubtful(Ring::time_of(150), Ring::time_of(150)));
        assert!(!all.doubtful(Ring::time_of(161), Ring::time_of(169)));
    }

    #[test]
    fn a_window_held_over_most_of_the_ring_stays_whole() {
        // A long window (RT throttling lends the CPU for 50 ms): from
        // record 40 of the 64 kept, while 1,000 events follow.
        let mut ring = Ring::new(64);
        ring.fire(100);
        ring.hold(Ring::time_of(40));
        ring.fire(1_000);
        let window = ring.snapshot(Ring::time_of(40), Ring::time_of(99));
        assert!(window.complete && !window.overwritten);
        assert_eq!(window.records.len(), 61);
        assert_eq!(window.records[0].time(), Ring::time_of(39));
        // Three records written (over 36 to 38), the rest refused.
        assert_eq!(ring.header(header::REFUSED), 997);
    }
}
