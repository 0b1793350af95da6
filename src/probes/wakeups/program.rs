//! The programs of the timer breakdown (see the module above for the slot
//! they write and why each event): generated for the way each is attached
//! (`EventAccess`), with comments for their listings.

use super::{
    ARMED_EXPIRES, ARMED_TIMER, FIRST, IRQ_NOW, PERIOD, SEQ, SWITCH_FOR, SWITCH_IN, TASK, TID,
    WAKE_EXPIRES,
};
use crate::probes::ProbeError;
use crate::probes::ring::this_cpu_area;
use crate::rt::bpf::btf::Btf;
use crate::rt::bpf::{Alu, Asm, Code, Cond, Helper, Insn, Label, Reg, Size};
use crate::rt::tracefs::format::EventFormat;

/// `r6 = &slots[this CPU]`, or return 0 when there is none; clobbers r0-r5.
fn load_slot(asm: &mut Asm, map_fd: i32) {
    this_cpu_area(asm, "r6 = &slots[this CPU], or return", map_fd, Reg::R6);
}

/// `r0 = the current thread id`.
fn current_tid(asm: &mut Asm) {
    asm.push(Insn::call(Helper::GetCurrentPidTgid))
        .push(Insn::alu64_imm(Alu::Lsh, Reg::R0, 32))
        .push(Insn::alu64_imm(Alu::Rsh, Reg::R0, 32));
}

/// `seq += 1` in the slot at r6 (clobbers r1): around every write, so a
/// reader sees an odd value or a change.
fn bump_sequence(asm: &mut Asm) {
    asm.note("slot's sequence += 1")
        .push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, SEQ))
        .push(Insn::alu64_imm(Alu::Add, Reg::R1, 1))
        .push(Insn::stx(Size::DW, Reg::R6, SEQ, Reg::R1));
}

/// How the programs on `hrtimer_start` and `hrtimer_expire_entry` read
/// their event (the context saved in r7), cheapest first: each is the
/// fallback of the one before (`WakeupSlots::start`).
#[derive(Debug, Clone)]
pub enum EventAccess {
    /// A BTF-typed raw tracepoint (`tp_btf`): the context is the
    /// tracepoint's arguments (`struct hrtimer *` first), and the verifier
    /// knows the pointer's type, so a member is one plain load (turned into
    /// a fault-safe one). `soft_expiry` is `hrtimer._softexpires`, from BTF.
    TypedArguments { soft_expiry: BtfMember },
    /// A plain raw tracepoint: the same arguments, untyped; a member is
    /// copied with `bpf_probe_read_kernel` at its BTF offset.
    ProbedArguments { soft_expiry: BtfMember },
    /// A classic tracepoint (perf_event_open): the context is the trace
    /// record the kernel builds first (of the event the program is for),
    /// its fields where tracefs says.
    Record { format: EventFormat },
    /// A program that reads nothing of its event but the context's first
    /// words (the switch-in programs).
    Untyped,
}

/// A member of a structure: its offset and load width, from BTF.
#[derive(Debug, Clone, Copy)]
pub struct BtfMember {
    pub offset: i16,
    pub size: Size,
}

impl BtfMember {
    /// `structure.path` as the kernel's BTF lays it out.
    pub fn of(btf: &Btf, structure: &str, path: &str) -> Result<BtfMember, ProbeError> {
        let member = btf.member(structure, path).map_err(ProbeError::kernel)?;
        let field = || format!("{structure}.{path}");
        Ok(BtfMember {
            offset: i16::try_from(member.offset).map_err(|_| ProbeError::Field {
                field: field(),
                problem: "is too far into its structure".to_string(),
            })?,
            size: Size::of_bytes(member.size as usize).ok_or_else(|| ProbeError::Field {
                field: field(),
                problem: format!("has an unusual size {}", member.size),
            })?,
        })
    }
}

/// Stack bytes `bpf_probe_read_kernel` copies into (below the CPU number
/// `load_slot` keeps at r10 - 4).
const PROBE_BUFFER: i16 = -16;

/// A generator's bug: a value read through `EventAccess::Untyped`.
const UNTYPED: ProbeError = ProbeError::Unsuited("the program reads its event untyped");

impl EventAccess {
    /// `dst = the timer of the event` (the first argument, or the record's
    /// `hrtimer`): compared, never read through.
    fn timer(&self, asm: &mut Asm, dst: Reg) -> Result<(), ProbeError> {
        match self {
            EventAccess::Record { format } => load_field(asm, dst, format, "hrtimer"),
            EventAccess::Untyped => Err(UNTYPED),
            _ => {
                asm.push(Insn::ldx(Size::DW, dst, Reg::R7, 0));
                Ok(())
            }
        }
    }

    /// `dst = the timer's soft expiry` (the argument's member; the record's
    /// field only on `hrtimer_start`); clobbers
    /// r0-r5 and leaves for `out` when the kernel's memory cannot be read.
    fn soft_expiry(&self, asm: &mut Asm, dst: Reg, out: Label) -> Result<(), ProbeError> {
        match self {
            EventAccess::TypedArguments { soft_expiry } => {
                asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R7, 0))
                    .push(Insn::ldx(
                        soft_expiry.size,
                        dst,
                        Reg::R1,
                        soft_expiry.offset,
                    ));
                Ok(())
            }
            EventAccess::ProbedArguments { soft_expiry } => {
                asm.push(Insn::ldx(Size::DW, Reg::R3, Reg::R7, 0))
                    .push(Insn::alu64_imm(
                        Alu::Add,
                        Reg::R3,
                        soft_expiry.offset.into(),
                    ));
                probe_read_u64(asm, dst, out);
                Ok(())
            }
            EventAccess::Record { format } => load_field(asm, dst, format, "softexpires"),
            EventAccess::Untyped => Err(UNTYPED),
        }
    }

    /// `dst = the handler's now` on `hrtimer_expire_entry` (the second
    /// argument is a `ktime_t *`, which no program may load through even
    /// where typed: it is copied); clobbers r0-r5, leaves for `out` when it
    /// cannot be read.
    fn expiry_now(&self, asm: &mut Asm, dst: Reg, out: Label) -> Result<(), ProbeError> {
        match self {
            EventAccess::TypedArguments { .. } | EventAccess::ProbedArguments { .. } => {
                asm.push(Insn::ldx(Size::DW, Reg::R3, Reg::R7, 8));
                probe_read_u64(asm, dst, out);
                Ok(())
            }
            EventAccess::Record { format } => load_field(asm, dst, format, "now"),
            EventAccess::Untyped => Err(UNTYPED),
        }
    }
}

/// `dst = *(u64 *)r3` by `bpf_probe_read_kernel`, or leave for `out` when
/// the copy fails; clobbers r0-r5.
fn probe_read_u64(asm: &mut Asm, dst: Reg, out: Label) {
    asm.note(format!("r{} = *(u64 *)r3, copied", dst as u8))
        .push(Insn::mov64_reg(Reg::R1, Reg::R10))
        .push(Insn::alu64_imm(Alu::Add, Reg::R1, PROBE_BUFFER.into()))
        .push(Insn::mov64_imm(Reg::R2, 8))
        .push(Insn::call(Helper::ProbeReadKernel))
        .jump_if(Cond::Ne, Reg::R0, 0, out)
        .push(Insn::ldx(Size::DW, dst, Reg::R10, PROBE_BUFFER));
}

/// `dst = the record's field `name`` (from the context saved in r7),
/// zero-extended.
fn load_field(asm: &mut Asm, dst: Reg, format: &EventFormat, name: &str) -> Result<(), ProbeError> {
    let field = format.field(name).map_err(ProbeError::kernel)?;
    let problem = |problem: String| ProbeError::Field {
        field: field.name.clone(),
        problem,
    };
    let size = Size::of_bytes(field.size)
        .ok_or_else(|| problem(format!("has an unusual size {}", field.size)))?;
    let offset = i16::try_from(field.offset)
        .map_err(|_| problem("is too far into its record".to_string()))?;
    asm.push(Insn::ldx(size, dst, Reg::R7, offset));
    Ok(())
}

/// The end every program shares: return 0.
fn finish(mut asm: Asm, out: Label) -> Result<Code, ProbeError> {
    asm.bind(out);
    asm.note("out: return 0");
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    Ok(asm.finish()?)
}

/// `hrtimer_start`: the thread arms a timer on its schedule, from its own
/// task context: remember the timer, its expiry and the thread's task.
pub fn arm_program(map_fd: i32, access: &EventAccess) -> Result<Code, ProbeError> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    asm.push(Insn::mov64_reg(Reg::R7, Reg::R1));
    current_tid(&mut asm);
    asm.push(Insn::mov64_reg(Reg::R8, Reg::R0));
    load_slot(&mut asm, map_fd);
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, TID))
        .jump_if_reg(Cond::Ne, Reg::R8, Reg::R1, out);
    access.soft_expiry(&mut asm, Reg::R2, out)?;
    leave_unless_on_schedule(&mut asm, Reg::R2, out);
    asm.push(Insn::stx(Size::DW, Reg::R6, ARMED_EXPIRES, Reg::R2));
    access.timer(&mut asm, Reg::R1)?;
    asm.push(Insn::stx(Size::DW, Reg::R6, ARMED_TIMER, Reg::R1))
        .push(Insn::call(Helper::GetCurrentTask))
        .push(Insn::stx(Size::DW, Reg::R6, TASK, Reg::R0));
    finish(asm, out)
}

/// Leaves for `out` unless `soft` (a soft expiry) is on the thread's
/// schedule: `soft >= first` and `(soft - first) % period == 0`, from the
/// slot at r6 (clobbers r3-r5).
fn leave_unless_on_schedule(asm: &mut Asm, soft: Reg, out: Label) {
    asm.note(format!(
        "out unless r{} is on the thread's schedule",
        soft as u8
    ))
    .push(Insn::ldx(Size::DW, Reg::R3, Reg::R6, FIRST))
    .jump_if_reg(Cond::Lt, soft, Reg::R3, out)
    .push(Insn::mov64_reg(Reg::R4, soft))
    .push(Insn::alu64_reg(Alu::Sub, Reg::R4, Reg::R3))
    .push(Insn::ldx(Size::DW, Reg::R5, Reg::R6, PERIOD))
    .push(Insn::alu64_reg(Alu::Mod, Reg::R4, Reg::R5))
    .jump_if(Cond::Ne, Reg::R4, 0, out);
}

/// How the expiry program knows the thread's timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arming {
    /// The arming program on `hrtimer_start` remembers the timer the
    /// thread armed and its soft expiry: the classic path, whose
    /// `hrtimer_expire_entry` record has no soft expiry, and kernels whose
    /// switch-in program needs the thread's task, which only the arming
    /// (in the thread's context) can learn.
    Watched,
    /// No program on `hrtimer_start`: the expiring timer's own soft expiry
    /// (an argument's member) must fall on the thread's schedule. That
    /// takes one program run off every hrtimer armed on the CPU, the idle
    /// loop's tick included, some of them on the measured wake-up's path
    /// (docs/measurement.md). Another timer of that CPU due on the schedule
    /// to the nanosecond expires in the same interrupt, with the same
    /// `now`: the IRQ figure is the same.
    Inferred,
}

/// `hrtimer_expire_entry` of the thread's timer, not before its soft
/// expiry, and once per expiry: a new wake-up record.
pub fn expire_program(
    map_fd: i32,
    access: &EventAccess,
    arming: Arming,
) -> Result<Code, ProbeError> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    asm.push(Insn::mov64_reg(Reg::R7, Reg::R1));
    load_slot(&mut asm, map_fd);
    match (arming, access) {
        (Arming::Watched, _) => {
            access.timer(&mut asm, Reg::R1)?;
            asm.push(Insn::ldx(Size::DW, Reg::R2, Reg::R6, ARMED_TIMER))
                .jump_if_reg(Cond::Ne, Reg::R1, Reg::R2, out);
            access.expiry_now(&mut asm, Reg::R8, out)?;
            asm.push(Insn::ldx(Size::DW, Reg::R9, Reg::R6, ARMED_EXPIRES))
                .jump_if(Cond::Eq, Reg::R9, 0, out);
        }
        (Arming::Inferred, EventAccess::Record { .. }) => {
            return Err(ProbeError::Unsuited(
                "the classic hrtimer_expire_entry record has no soft expiry: it needs the arming program",
            ));
        }
        (Arming::Inferred, _) => {
            // The cheap test first: most expiries on the CPU are other
            // timers', and leave before `now` is copied.
            access.soft_expiry(&mut asm, Reg::R9, out)?;
            leave_unless_on_schedule(&mut asm, Reg::R9, out);
            access.expiry_now(&mut asm, Reg::R8, out)?;
        }
    }
    asm.jump_if_reg(Cond::SLt, Reg::R8, Reg::R9, out)
        .push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, WAKE_EXPIRES))
        .jump_if_reg(Cond::Eq, Reg::R1, Reg::R9, out);
    bump_sequence(&mut asm);
    asm.push(Insn::stx(Size::DW, Reg::R6, WAKE_EXPIRES, Reg::R9))
        .push(Insn::stx(Size::DW, Reg::R6, IRQ_NOW, Reg::R8));
    bump_sequence(&mut asm);
    finish(asm, out)
}

/// The switch-in stamp, once per wake-up record: ktime and the expiry it
/// is for (clobbers r0-r5, r8, r9).
fn stamp_switch_in(asm: &mut Asm, out: Label) {
    asm.note("stamp the switch-in, once per wake-up record")
        .push(Insn::ldx(Size::DW, Reg::R9, Reg::R6, WAKE_EXPIRES))
        .jump_if(Cond::Eq, Reg::R9, 0, out)
        .push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, SWITCH_FOR))
        .jump_if_reg(Cond::Eq, Reg::R1, Reg::R9, out)
        .push(Insn::call(Helper::KtimeGetNs))
        .push(Insn::mov64_reg(Reg::R8, Reg::R0));
    bump_sequence(asm);
    asm.push(Insn::stx(Size::DW, Reg::R6, SWITCH_IN, Reg::R8))
        .push(Insn::stx(Size::DW, Reg::R6, SWITCH_FOR, Reg::R9));
    bump_sequence(asm);
}

/// `sched_exit_tp` in the thread's own context: it has the CPU again.
pub fn switch_in_by_pid(map_fd: i32) -> Result<Code, ProbeError> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    current_tid(&mut asm);
    asm.push(Insn::mov64_reg(Reg::R7, Reg::R0));
    load_slot(&mut asm, map_fd);
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, TID))
        .jump_if_reg(Cond::Ne, Reg::R7, Reg::R1, out);
    stamp_switch_in(&mut asm, out);
    finish(asm, out)
}

/// Raw `sched_switch(preempt, prev, next, ...)` into the thread's task.
pub fn switch_in_by_task(map_fd: i32) -> Result<Code, ProbeError> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    // The third argument, `next`.
    asm.push(Insn::ldx(Size::DW, Reg::R7, Reg::R1, 16));
    load_slot(&mut asm, map_fd);
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, TASK))
        .jump_if(Cond::Eq, Reg::R1, 0, out)
        .jump_if_reg(Cond::Ne, Reg::R7, Reg::R1, out);
    stamp_switch_in(&mut asm, out);
    finish(asm, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(text: &str) -> EventFormat {
        EventFormat::parse(text).unwrap()
    }

    const HRTIMER_EXPIRE_ENTRY: &str = "name: hrtimer_expire_entry\nID: 459\nformat:\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n";

    /// The classic path with this record's layout.
    fn records(text: &str) -> EventAccess {
        EventAccess::Record {
            format: format(text),
        }
    }

    const HRTIMER_START: &str = "name: hrtimer_start\nID: 460\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n";

    /// (opcode, offset) of every load from the record (base r7).
    fn record_loads(insns: &[Insn]) -> Vec<(u8, i16)> {
        insns
            .iter()
            .filter(|i| i.src == Reg::R7 as u8 && i.code & 0x07 == 0x01)
            .map(|i| (i.code, i.off))
            .collect()
    }

    #[test]
    fn the_arming_program_reads_the_fields_where_the_format_says() {
        let insns = arm_program(3, &records(HRTIMER_START)).unwrap();
        // softexpires and hrtimer as double words (0x79) at 32 and 8.
        assert_eq!(record_loads(&insns), vec![(0x79, 32), (0x79, 8)]);
        // The map is named by its descriptor: ld_imm64 with src 1, imm 3.
        assert!(
            insns
                .iter()
                .any(|i| i.code == 0x18 && i.src == 1 && i.imm == 3)
        );
        // Another layout moves the loads with it.
        let moved = HRTIMER_START.replace("offset:32;", "offset:40;");
        let insns = arm_program(3, &records(&moved)).unwrap();
        assert_eq!(record_loads(&insns), vec![(0x79, 40), (0x79, 8)]);
    }

    /// `hrtimer._softexpires` where this kernel's BTF has it.
    const SOFT_EXPIRY: BtfMember = BtfMember {
        offset: 32,
        size: Size::DW,
    };

    fn typed() -> EventAccess {
        EventAccess::TypedArguments {
            soft_expiry: SOFT_EXPIRY,
        }
    }

    fn probed() -> EventAccess {
        EventAccess::ProbedArguments {
            soft_expiry: SOFT_EXPIRY,
        }
    }

    fn calls(insns: &[Insn], helper: Helper) -> usize {
        insns.iter().filter(|i| **i == Insn::call(helper)).count()
    }

    #[test]
    fn typed_arguments_are_read_with_plain_loads() {
        // The timer is the first argument (ctx + 0); its soft expiry one
        // load through it, at the BTF offset; no copy helper.
        let arm = arm_program(3, &typed()).unwrap();
        assert_eq!(record_loads(&arm), vec![(0x79, 0), (0x79, 0)]);
        let through = arm
            .windows(2)
            .find(|w| w[0] == Insn::ldx(Size::DW, Reg::R1, Reg::R7, 0))
            .map(|w| w[1]);
        assert_eq!(through, Some(Insn::ldx(Size::DW, Reg::R2, Reg::R1, 32)));
        assert_eq!(calls(&arm, Helper::ProbeReadKernel), 0);
        // `now` is behind a `ktime_t *`, which no program loads through:
        // one copy, from the second argument (ctx + 8).
        for arming in [Arming::Watched, Arming::Inferred] {
            let expire = expire_program(3, &typed(), arming).unwrap();
            assert_eq!(record_loads(&expire), vec![(0x79, 0), (0x79, 8)]);
            assert_eq!(calls(&expire, Helper::ProbeReadKernel), 1);
        }
    }

    #[test]
    fn without_arming_the_expiring_timer_must_be_on_the_schedule_before_now_is_copied() {
        let expire = expire_program(3, &typed(), Arming::Inferred).unwrap();
        // No use of what an arming program would have written.
        for armed in [ARMED_TIMER, ARMED_EXPIRES, TASK] {
            assert!(
                !expire
                    .iter()
                    .any(|i| i.src == Reg::R6 as u8 && i.off == armed),
                "reads slot offset {armed}"
            );
        }
        // r9 = timer->_softexpires; then the schedule (first, period, mod)
        // and only then the copy of `now`.
        let soft = expire
            .iter()
            .position(|i| *i == Insn::ldx(Size::DW, Reg::R9, Reg::R1, 32))
            .expect("the soft expiry through the timer");
        let at = |want: Insn| expire.iter().position(|i| *i == want).unwrap();
        let first = at(Insn::ldx(Size::DW, Reg::R3, Reg::R6, FIRST));
        let modulo = at(Insn::alu64_reg(Alu::Mod, Reg::R4, Reg::R5));
        let copy = at(Insn::call(Helper::ProbeReadKernel));
        assert!(soft < first && first < modulo && modulo < copy);
        // The classic record has no soft expiry: that path keeps its arming.
        let err = expire_program(3, &records(HRTIMER_EXPIRE_ENTRY), Arming::Inferred).unwrap_err();
        assert!(
            err.to_string().contains("needs the arming program"),
            "{err}"
        );
    }

    #[test]
    fn probed_arguments_are_copied_from_the_btf_offset() {
        let arm = arm_program(3, &probed()).unwrap();
        let copy = arm
            .iter()
            .position(|i| *i == Insn::call(Helper::ProbeReadKernel))
            .expect("a copy");
        // r3 = timer + 32; r1 = r10 - 16; r2 = 8; call; then the result.
        assert!(arm[..copy].contains(&Insn::alu64_imm(Alu::Add, Reg::R3, 32)));
        assert_eq!(arm[copy - 1], Insn::mov64_imm(Reg::R2, 8));
        assert_eq!(
            arm[copy + 1],
            Insn::jmp_imm(Cond::Ne, Reg::R0, 0, arm[copy + 1].off)
        );
        assert_eq!(
            arm[copy + 2],
            Insn::ldx(Size::DW, Reg::R2, Reg::R10, PROBE_BUFFER)
        );
        assert_eq!(
            calls(
                &expire_program(3, &probed(), Arming::Watched).unwrap(),
                Helper::ProbeReadKernel
            ),
            1
        );
    }

    #[test]
    fn an_unusual_field_size_is_an_error_not_a_guess() {
        let odd = HRTIMER_START.replace("offset:32;\tsize:8", "offset:32;\tsize:16");
        let err = arm_program(3, &records(&odd)).unwrap_err();
        assert_eq!(err.to_string(), "field softexpires has an unusual size 16");
        let missing = HRTIMER_START.replace("softexpires", "soft");
        assert!(
            arm_program(3, &records(&missing))
                .unwrap_err()
                .to_string()
                .contains("no field 'softexpires'")
        );
    }

    #[test]
    fn every_program_ends_in_exit_and_every_jump_lands_inside() {
        for insns in [
            arm_program(3, &records(HRTIMER_START)).unwrap(),
            expire_program(3, &records(HRTIMER_EXPIRE_ENTRY), Arming::Watched).unwrap(),
            arm_program(3, &typed()).unwrap(),
            expire_program(3, &typed(), Arming::Watched).unwrap(),
            expire_program(3, &typed(), Arming::Inferred).unwrap(),
            arm_program(3, &probed()).unwrap(),
            expire_program(3, &probed(), Arming::Watched).unwrap(),
            expire_program(3, &probed(), Arming::Inferred).unwrap(),
            switch_in_by_pid(3).unwrap(),
            switch_in_by_task(3).unwrap(),
        ] {
            assert_eq!(insns.last(), Some(&Insn::exit()));
            for (at, insn) in insns.iter().enumerate() {
                // Jumps other than call (0x85) and exit (0x95).
                if insn.code & 0x07 == 0x05 && insn.code != 0x85 && insn.code != 0x95 {
                    let target = at as i64 + 1 + i64::from(insn.off);
                    assert!((0..insns.len() as i64).contains(&target), "jump at {at}");
                }
            }
        }
    }
}
