//! The text form of a program, in the syntax the kernel's verifier log and
//! `bpftool prog dump xlated` use (kernel/bpf/disasm.c): an instruction is
//! `r1 = *(u64 *)(r6 +40)`, `if r1 != 0x5 goto pc+3`,
//! `call bpf_get_current_pid_tgid#14`, `lock *(u64 *)(r0 +8) += r1`, ...
//!
//! A listing numbers instructions as the verifier counts them (the 64-bit
//! immediate load takes two slots, so the number after it skips one) and
//! prints each as the verifier's log does, `12: (79) r1 = *(u64 *)(r6 +40)`,
//! so that the instruction a refusal names is found by its number. The
//! generator's comments (`Asm::note`) come as `; text` lines before the
//! instruction they precede. A map is named by the descriptor the program
//! was generated with, `map[fd:5]`: the listing is of the program latscope
//! hands the kernel, before the kernel puts the map's address there.

use super::insn::{
    ATOMIC_FETCH, Alu, CLASS_ALU64, CLASS_JMP, CLASS_LD, CLASS_LDX, CLASS_ST, CLASS_STX, Code,
    Helper, Insn, JMP_CALL, JMP_EXIT, JMP_JA, MODE_ATOMIC, MODE_MEM, PSEUDO_MAP_FD, SRC_X,
};
use std::fmt;

/// The C type of a load or store's size bits.
fn size_name(code: u8) -> &'static str {
    match code & 0x18 {
        0x00 => "u32",
        0x08 => "u16",
        0x10 => "u8",
        _ => "u64",
    }
}

/// The operator of an ALU operation (`bpf_alu_string`).
fn alu_operator(op: u8) -> Option<&'static str> {
    const OPERATORS: [(Alu, &str); 12] = [
        (Alu::Add, "+="),
        (Alu::Sub, "-="),
        (Alu::Mul, "*="),
        (Alu::Div, "/="),
        (Alu::Or, "|="),
        (Alu::And, "&="),
        (Alu::Lsh, "<<="),
        (Alu::Rsh, ">>="),
        (Alu::Mod, "%="),
        (Alu::Xor, "^="),
        (Alu::Mov, "="),
        (Alu::Arsh, "s>>="),
    ];
    OPERATORS
        .iter()
        .find(|(alu, _)| *alu as u8 == op)
        .map(|(_, text)| *text)
}

/// The operator of a conditional jump (`bpf_jmp_string`).
fn jump_operator(op: u8) -> Option<&'static str> {
    Some(match op {
        0x10 => "==",
        0x20 => ">",
        0x30 => ">=",
        0x40 => "&",
        0x50 => "!=",
        0x60 => "s>",
        0x70 => "s>=",
        0xa0 => "<",
        0xb0 => "<=",
        0xc0 => "s<",
        0xd0 => "s<=",
        _ => return None,
    })
}

/// The kernel's name of helper number `id` (`enum bpf_func_id`).
fn helper_name(id: i32) -> Option<&'static str> {
    const HELPERS: [(Helper, &str); 7] = [
        (Helper::MapLookupElem, "bpf_map_lookup_elem"),
        (Helper::MapUpdateElem, "bpf_map_update_elem"),
        (Helper::KtimeGetNs, "bpf_ktime_get_ns"),
        (Helper::GetSmpProcessorId, "bpf_get_smp_processor_id"),
        (Helper::GetCurrentPidTgid, "bpf_get_current_pid_tgid"),
        (Helper::GetCurrentTask, "bpf_get_current_task"),
        (Helper::ProbeReadKernel, "bpf_probe_read_kernel"),
    ];
    HELPERS
        .iter()
        .find(|(helper, _)| *helper as i32 == id)
        .map(|(_, name)| *name)
}

/// `(r6 +40)`: a base register and a signed offset, as disasm.c's `%+d`.
struct Address(u8, i16);

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(r{} {:+})", self.0, self.1)
    }
}

impl Insn {
    /// Whether this slot starts a 64-bit immediate load (two slots).
    pub fn is_wide(&self) -> bool {
        self.code == CLASS_LD | 0x18
    }

    fn fmt_alu(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(op) = alu_operator(self.code & 0xf0) else {
            return self.fmt_unknown(f);
        };
        if self.code & SRC_X != 0 {
            write!(f, "r{} {op} r{}", self.dst, self.src)
        } else {
            write!(f, "r{} {op} {}", self.dst, self.imm)
        }
    }

    fn fmt_jump(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code & 0xf0 {
            JMP_JA => write!(f, "goto pc{:+}", self.off),
            JMP_EXIT => f.write_str("exit"),
            JMP_CALL => match helper_name(self.imm) {
                Some(name) => write!(f, "call {name}#{}", self.imm),
                None => write!(f, "call #{}", self.imm),
            },
            op => {
                let Some(cond) = jump_operator(op) else {
                    return self.fmt_unknown(f);
                };
                write!(f, "if r{} {cond} ", self.dst)?;
                if self.code & SRC_X != 0 {
                    write!(f, "r{}", self.src)?;
                } else {
                    write!(f, "{:#x}", self.imm as u32)?;
                }
                write!(f, " goto pc{:+}", self.off)
            }
        }
    }

    fn fmt_store(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = size_name(self.code);
        let at = Address(self.dst, self.off);
        match (self.code & 0x07, self.code & 0xe0) {
            (CLASS_ST, MODE_MEM) => write!(f, "*({size} *){at} = {}", self.imm),
            (CLASS_STX, MODE_MEM) => write!(f, "*({size} *){at} = r{}", self.src),
            (CLASS_STX, MODE_ATOMIC) if self.imm == Alu::Add as i32 => {
                write!(f, "lock *({size} *){at} += r{}", self.src)
            }
            (CLASS_STX, MODE_ATOMIC) if self.imm == Alu::Add as i32 | ATOMIC_FETCH => {
                let bits = if size == "u64" { "64" } else { "" };
                write!(
                    f,
                    "r{} = atomic{bits}_fetch_add(({size} *){at}, r{})",
                    self.src, self.src
                )
            }
            _ => self.fmt_unknown(f),
        }
    }

    fn fmt_unknown(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown instruction {:#04x}", self.code)
    }

    /// The text of this slot, `next` being the slot after it (the upper
    /// half of a 64-bit immediate load).
    pub fn text(&self, next: Option<&Insn>) -> String {
        if self.is_wide() {
            let high = next.map_or(0, |n| n.imm as u32 as u64);
            let value = high << 32 | self.imm as u32 as u64;
            return if self.src == PSEUDO_MAP_FD {
                format!("r{} = map[fd:{}]", self.dst, self.imm)
            } else {
                format!("r{} = {value:#x}", self.dst)
            };
        }
        self.to_string()
    }
}

/// One slot in bpftool's syntax. The first slot of a 64-bit immediate load
/// knows only its low half here: `Insn::text` with the next slot, or a
/// listing, gives the whole value.
impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code & 0x07 {
            CLASS_ALU64 => self.fmt_alu(f),
            CLASS_JMP => self.fmt_jump(f),
            CLASS_LDX if self.code & 0xe0 == MODE_MEM => write!(
                f,
                "r{} = *({} *){}",
                self.dst,
                size_name(self.code),
                Address(self.src, self.off)
            ),
            CLASS_ST | CLASS_STX => self.fmt_store(f),
            CLASS_LD if self.is_wide() => f.write_str(&self.text(None)),
            _ => self.fmt_unknown(f),
        }
    }
}

/// The listing: one line per instruction, numbered as the verifier counts,
/// with the generator's comments.
impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut notes = self.notes.iter().peekable();
        let mut at = 0;
        while at < self.insns.len() {
            while let Some((_, note)) = notes.next_if(|(before, _)| *before <= at) {
                writeln!(f, "; {note}")?;
            }
            let insn = &self.insns[at];
            let text = insn.text(self.insns.get(at + 1));
            writeln!(f, "{at:4}: ({:02x}) {text}", insn.code)?;
            at += if insn.is_wide() { 2 } else { 1 };
        }
        for (_, note) in notes {
            writeln!(f, "; {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::insn::{Asm, Cond, Reg, Size};
    use super::*;

    #[test]
    fn each_instruction_in_bpftools_words() {
        let cases: [(Insn, &str); 20] = [
            (
                Insn::ldx(Size::DW, Reg::R1, Reg::R6, 40),
                "r1 = *(u64 *)(r6 +40)",
            ),
            (
                Insn::ldx(Size::W, Reg::R2, Reg::R10, -16),
                "r2 = *(u32 *)(r10 -16)",
            ),
            (
                Insn::ldx(Size::B, Reg::R2, Reg::R1, 0),
                "r2 = *(u8 *)(r1 +0)",
            ),
            (
                Insn::jmp_imm(Cond::Ne, Reg::R1, 5, 3),
                "if r1 != 0x5 goto pc+3",
            ),
            (
                Insn::jmp_imm(Cond::Set, Reg::R1, 0x9000, -2),
                "if r1 & 0x9000 goto pc-2",
            ),
            (
                Insn::jmp_imm(Cond::Eq, Reg::R2, -1, 0),
                "if r2 == 0xffffffff goto pc+0",
            ),
            (
                Insn::jmp_reg(Cond::SLt, Reg::R8, Reg::R9, 7),
                "if r8 s< r9 goto pc+7",
            ),
            (Insn::ja(-5), "goto pc-5"),
            (
                Insn::call(Helper::GetCurrentPidTgid),
                "call bpf_get_current_pid_tgid#14",
            ),
            (
                Insn::call(Helper::ProbeReadKernel),
                "call bpf_probe_read_kernel#113",
            ),
            (Insn::mov64_imm(Reg::R0, 0), "r0 = 0"),
            (Insn::mov64_reg(Reg::R6, Reg::R1), "r6 = r1"),
            (Insn::alu64_imm(Alu::Add, Reg::R2, -4), "r2 += -4"),
            (Insn::alu64_reg(Alu::Mod, Reg::R4, Reg::R5), "r4 %= r5"),
            (Insn::alu64_imm(Alu::Lsh, Reg::R0, 32), "r0 <<= 32"),
            (Insn::exit(), "exit"),
            (
                Insn::atomic_add64(Reg::R0, 8, Reg::R1),
                "lock *(u64 *)(r0 +8) += r1",
            ),
            (
                Insn::atomic_fetch_add64(Reg::R7, 0, Reg::R1),
                "r1 = atomic64_fetch_add((u64 *)(r7 +0), r1)",
            ),
            (
                Insn::stx(Size::DW, Reg::R10, -8, Reg::R1),
                "*(u64 *)(r10 -8) = r1",
            ),
            (Insn::st(Size::H, Reg::R8, 4, 7), "*(u16 *)(r8 +4) = 7"),
        ];
        for (insn, text) in cases {
            assert_eq!(insn.to_string(), text, "{insn:?}");
        }
        let unknown = Insn {
            code: 0xff,
            dst: 0,
            src: 0,
            off: 0,
            imm: 0,
        };
        assert_eq!(unknown.to_string(), "unknown instruction 0xff");
    }

    #[test]
    fn a_wide_load_shows_its_whole_value_or_its_map() {
        let [lo, hi] = Insn::ld_imm64(Reg::R1, 0x1122_3344_5566_7788);
        assert_eq!(lo.text(Some(&hi)), "r1 = 0x1122334455667788");
        let [map, _] = Insn::ld_map_fd(Reg::R1, 5);
        assert_eq!(map.to_string(), "r1 = map[fd:5]");
    }

    #[test]
    fn a_listing_counts_slots_as_the_verifier_and_shows_the_notes() {
        let mut asm = Asm::new();
        asm.note("r6 = &slots[cpu]");
        asm.this_cpu_entry_or_return(3)
            .push(Insn::mov64_reg(Reg::R6, Reg::R0))
            .note("the end")
            .push(Insn::exit());
        let listing = asm.finish().unwrap().to_string();
        assert_eq!(
            listing,
            "; r6 = &slots[cpu]\n\
             \x20  0: (85) call bpf_get_smp_processor_id#8\n\
             \x20  1: (63) *(u32 *)(r10 -4) = r0\n\
             \x20  2: (bf) r2 = r10\n\
             \x20  3: (07) r2 += -4\n\
             \x20  4: (18) r1 = map[fd:3]\n\
             \x20  6: (85) call bpf_map_lookup_elem#1\n\
             \x20  7: (55) if r0 != 0x0 goto pc+1\n\
             \x20  8: (95) exit\n\
             \x20  9: (bf) r6 = r0\n\
             ; the end\n\
             \x20 10: (95) exit\n"
        );
    }
}
