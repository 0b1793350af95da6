//! A small typed emitter of eBPF instructions.
//!
//! Every instruction is the kernel's 8-byte encoding
//! (Documentation/bpf/standardization/instruction-set.rst): one opcode byte
//! (class in the low 3 bits, then source bit and operation, or size and mode
//! for loads and stores), one byte holding the destination register in its
//! low nibble and the source register in its high nibble (little-endian
//! hosts), a signed 16-bit offset and a signed 32-bit immediate, both little
//! endian. The 64-bit immediate load takes two such slots.
//!
//! `Asm` strings instructions together and resolves jumps to labels, so a
//! program generator never counts instructions by hand.

/// The eleven registers: R0 return value, R1-R5 arguments (clobbered by
/// helper calls), R6-R9 callee-saved, R10 the read-only frame pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reg {
    R0 = 0,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
    R10,
}

/// Operand sizes of loads and stores (the `size` bits of the opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B,
    /// 2 bytes.
    H,
    /// 4 bytes.
    W,
    /// 8 bytes.
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }

    /// The size of an integer field of `bytes` bytes, if it is one.
    pub fn of_bytes(bytes: usize) -> Option<Size> {
        match bytes {
            1 => Some(Size::B),
            2 => Some(Size::H),
            4 => Some(Size::W),
            8 => Some(Size::DW),
            _ => None,
        }
    }
}

/// Arithmetic operations (the `code` bits of an ALU instruction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
    Arsh = 0xc0,
}

/// Jump conditions (unsigned unless marked signed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    /// `dst & src != 0`.
    Set = 0x40,
    Ne = 0x50,
    SGt = 0x60,
    SGe = 0x70,
    Lt = 0xa0,
    Le = 0xb0,
    SLt = 0xc0,
    SLe = 0xd0,
}

// Instruction classes.
pub(super) const CLASS_LD: u8 = 0x00;
pub(super) const CLASS_LDX: u8 = 0x01;
pub(super) const CLASS_ST: u8 = 0x02;
pub(super) const CLASS_STX: u8 = 0x03;
pub(super) const CLASS_JMP: u8 = 0x05;
pub(super) const CLASS_ALU64: u8 = 0x07;
// Source operand: the immediate (K) or the source register (X).
const SRC_K: u8 = 0x00;
pub(super) const SRC_X: u8 = 0x08;
// Modes of loads and stores.
const MODE_IMM: u8 = 0x00;
pub(super) const MODE_MEM: u8 = 0x60;
pub(super) const MODE_ATOMIC: u8 = 0xc0;
/// `BPF_FETCH`: an atomic operation that also returns the old value.
pub(super) const ATOMIC_FETCH: i32 = 0x01;
// Jump operations that are not conditions.
pub(super) const JMP_JA: u8 = 0x00;
pub(super) const JMP_CALL: u8 = 0x80;
pub(super) const JMP_EXIT: u8 = 0x90;
/// `src` of a 64-bit immediate load whose immediate is a map's file
/// descriptor, which the kernel replaces with the map's address.
pub const PSEUDO_MAP_FD: u8 = 1;

/// Kernel helper functions, by their number in `enum bpf_func_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    /// CLOCK_MONOTONIC in ns (the clock of the sampling threads).
    KtimeGetNs = 5,
    GetSmpProcessorId = 8,
    /// `tgid << 32 | pid` of the current task (pid = the thread id).
    GetCurrentPidTgid = 14,
    /// The current `task_struct` address (compared, never dereferenced).
    GetCurrentTask = 35,
    /// `bpf_probe_read_kernel(dst, size, unsafe_ptr)`: copies kernel memory
    /// a program may not load from directly, 0 or a negative error.
    ProbeReadKernel = 113,
}

/// One 8-byte instruction slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// The slot as the kernel reads it.
    pub fn to_le_bytes(self) -> [u8; 8] {
        let off = self.off.to_le_bytes();
        let imm = self.imm.to_le_bytes();
        [
            self.code,
            (self.src << 4) | (self.dst & 0x0f),
            off[0],
            off[1],
            imm[0],
            imm[1],
            imm[2],
            imm[3],
        ]
    }

    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst: dst as u8,
            src: src as u8,
            off,
            imm,
        }
    }

    /// `dst = dst OP imm` (64-bit).
    pub fn alu64_imm(op: Alu, dst: Reg, imm: i32) -> Insn {
        Insn::new(CLASS_ALU64 | SRC_K | op as u8, dst, Reg::R0, 0, imm)
    }

    /// `dst = dst OP src` (64-bit).
    pub fn alu64_reg(op: Alu, dst: Reg, src: Reg) -> Insn {
        Insn::new(CLASS_ALU64 | SRC_X | op as u8, dst, src, 0, 0)
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov64_imm(dst: Reg, imm: i32) -> Insn {
        Insn::alu64_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub fn mov64_reg(dst: Reg, src: Reg) -> Insn {
        Insn::alu64_reg(Alu::Mov, dst, src)
    }

    /// `dst = *(size *)(src + off)`, zero-extended.
    pub fn ldx(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(CLASS_LDX | MODE_MEM | size.bits(), dst, src, off, 0)
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::new(CLASS_STX | MODE_MEM | size.bits(), dst, src, off, 0)
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn st(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
        Insn::new(CLASS_ST | MODE_MEM | size.bits(), dst, Reg::R0, off, imm)
    }

    /// `*(u64 *)(dst + off) += src`, atomically (`BPF_ATOMIC | BPF_ADD`).
    pub fn atomic_add64(dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::new(
            CLASS_STX | MODE_ATOMIC | Size::DW.bits(),
            dst,
            src,
            off,
            Alu::Add as i32,
        )
    }

    /// `src = *(u64 *)(dst + off); *(u64 *)(dst + off) += src`, atomically
    /// (`BPF_ATOMIC | BPF_ADD | BPF_FETCH`, Linux 5.12): `src` gets the old
    /// value (x86's `lock xadd`).
    pub fn atomic_fetch_add64(dst: Reg, off: i16, src: Reg) -> Insn {
        Insn {
            imm: Alu::Add as i32 | ATOMIC_FETCH,
            ..Insn::atomic_add64(dst, off, src)
        }
    }

    /// `if dst COND imm goto +off`.
    pub fn jmp_imm(cond: Cond, dst: Reg, imm: i32, off: i16) -> Insn {
        Insn::new(CLASS_JMP | SRC_K | cond as u8, dst, Reg::R0, off, imm)
    }

    /// `if dst COND src goto +off`.
    pub fn jmp_reg(cond: Cond, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(CLASS_JMP | SRC_X | cond as u8, dst, src, off, 0)
    }

    /// `goto +off`.
    pub fn ja(off: i16) -> Insn {
        Insn::new(CLASS_JMP | JMP_JA, Reg::R0, Reg::R0, off, 0)
    }

    /// `r0 = helper(r1, ..., r5)`.
    pub fn call(helper: Helper) -> Insn {
        Insn::new(CLASS_JMP | JMP_CALL, Reg::R0, Reg::R0, 0, helper as i32)
    }

    /// `return r0`.
    pub fn exit() -> Insn {
        Insn::new(CLASS_JMP | JMP_EXIT, Reg::R0, Reg::R0, 0, 0)
    }

    /// `dst = imm64`: two slots, the low half first.
    pub fn ld_imm64(dst: Reg, imm: u64) -> [Insn; 2] {
        Insn::ld_imm64_src(dst, 0, imm)
    }

    /// `dst = &map` for the map open as `fd`: two slots.
    pub fn ld_map_fd(dst: Reg, fd: i32) -> [Insn; 2] {
        Insn::ld_imm64_src(dst, PSEUDO_MAP_FD, fd as u32 as u64)
    }

    fn ld_imm64_src(dst: Reg, src: u8, imm: u64) -> [Insn; 2] {
        [
            Insn {
                code: CLASS_LD | MODE_IMM | Size::DW.bits(),
                dst: dst as u8,
                src,
                off: 0,
                imm: imm as u32 as i32,
            },
            Insn {
                code: 0,
                dst: 0,
                src: 0,
                off: 0,
                imm: (imm >> 32) as u32 as i32,
            },
        ]
    }
}

/// A bug in a program's generator, found before anything is loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AsmError {
    #[error("BPF program: label {0} never bound")]
    UnboundLabel(usize),
    #[error("BPF program: jump of {0} instructions is too far")]
    JumpTooFar(i64),
}

/// A place in the program a jump can go to, bound once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// Builds a program; jumps name labels, resolved by `finish`.
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    /// Where each label was bound (instruction index).
    labels: Vec<Option<usize>>,
    /// Jumps to patch: (instruction index, label).
    fixups: Vec<(usize, Label)>,
    /// The generator's comments: (index of the next instruction, text).
    notes: Vec<(usize, String)>,
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    /// Appends one instruction.
    pub fn push(&mut self, insn: Insn) -> &mut Asm {
        self.insns.push(insn);
        self
    }

    /// Appends several (e.g. the two slots of `ld_imm64`).
    pub fn extend(&mut self, insns: impl IntoIterator<Item = Insn>) -> &mut Asm {
        self.insns.extend(insns);
        self
    }

    /// A comment on the instructions that follow, shown in the listing as
    /// `; text` (e.g. `asm.note("r6 = &slots[cpu]")`): the generator says
    /// what a stretch of code does where a reader of a verifier's message
    /// looks for it.
    pub fn note(&mut self, text: impl Into<String>) -> &mut Asm {
        self.notes.push((self.insns.len(), text.into()));
        self
    }

    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// The label points at the next instruction appended.
    pub fn bind(&mut self, label: Label) -> &mut Asm {
        self.labels[label.0] = Some(self.insns.len());
        self
    }

    /// `if dst COND imm goto label`.
    pub fn jump_if(&mut self, cond: Cond, dst: Reg, imm: i32, label: Label) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(Insn::jmp_imm(cond, dst, imm, 0))
    }

    /// `if dst COND src goto label`.
    pub fn jump_if_reg(&mut self, cond: Cond, dst: Reg, src: Reg, label: Label) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(Insn::jmp_reg(cond, dst, src, 0))
    }

    /// `goto label`.
    pub fn jump(&mut self, label: Label) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(Insn::ja(0))
    }

    /// `r0 = &array[this CPU]` in the array map open as `map_fd`, or
    /// `return 0` when the CPU has no entry (the kernel runs a tracepoint's
    /// programs on every CPU). The key, the CPU number, is at `r10 - 4`;
    /// clobbers r1-r5.
    pub fn this_cpu_entry_or_return(&mut self, map_fd: i32) -> &mut Asm {
        let found = self.new_label();
        self.push(Insn::call(Helper::GetSmpProcessorId))
            .push(Insn::stx(Size::W, Reg::R10, -4, Reg::R0))
            .push(Insn::mov64_reg(Reg::R2, Reg::R10))
            .push(Insn::alu64_imm(Alu::Add, Reg::R2, -4))
            .extend(Insn::ld_map_fd(Reg::R1, map_fd))
            .push(Insn::call(Helper::MapLookupElem))
            .jump_if(Cond::Ne, Reg::R0, 0, found)
            .push(Insn::exit())
            .bind(found)
    }

    /// The program, every jump resolved; an error names a label never bound
    /// or a jump too far for its 16-bit offset (a generator's bug).
    pub fn finish(mut self) -> Result<Code, AsmError> {
        for &(at, label) in &self.fixups {
            let target = self.labels[label.0].ok_or(AsmError::UnboundLabel(label.0))?;
            // Offsets count from the instruction after the jump.
            let off = target as i64 - at as i64 - 1;
            self.insns[at].off = i16::try_from(off).map_err(|_| AsmError::JumpTooFar(off))?;
        }
        Ok(Code {
            insns: self.insns,
            notes: self.notes,
        })
    }
}

/// A generated program: its instructions and the generator's comments,
/// which only the listing shows (`Display`, see `listing`). It reads as its
/// slice of instructions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Code {
    pub insns: Vec<Insn>,
    /// (index of the instruction a comment precedes, text).
    pub notes: Vec<(usize, String)>,
}

impl std::ops::Deref for Code {
    type Target = [Insn];
    fn deref(&self) -> &[Insn] {
        &self.insns
    }
}

impl From<Vec<Insn>> for Code {
    fn from(insns: Vec<Insn>) -> Code {
        Code {
            insns,
            notes: Vec::new(),
        }
    }
}

/// The instructions as the bytes `BPF_PROG_LOAD` reads.
pub fn to_bytes(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes written as in the kernel's documentation: opcode, regs, off, imm.
    fn bytes(insn: Insn) -> [u8; 8] {
        insn.to_le_bytes()
    }

    #[test]
    fn the_entry_of_this_cpu_or_return() {
        let mut asm = Asm::new();
        asm.this_cpu_entry_or_return(7)
            .push(Insn::mov64_reg(Reg::R6, Reg::R0));
        let insns = asm.finish().unwrap();
        let codes: Vec<[u8; 8]> = insns.iter().copied().map(bytes).collect();
        assert_eq!(
            codes,
            vec![
                // call bpf_get_smp_processor_id (8)
                [0x85, 0x00, 0, 0, 8, 0, 0, 0],
                // *(u32 *)(r10 - 4) = r0
                [0x63, 0x0a, 0xfc, 0xff, 0, 0, 0, 0],
                // r2 = r10; r2 += -4
                [0xbf, 0xa2, 0, 0, 0, 0, 0, 0],
                [0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff],
                // r1 = map fd 7 (BPF_PSEUDO_MAP_FD), two slots
                [0x18, 0x11, 0, 0, 7, 0, 0, 0],
                [0, 0, 0, 0, 0, 0, 0, 0],
                // call bpf_map_lookup_elem (1)
                [0x85, 0x00, 0, 0, 1, 0, 0, 0],
                // if r0 != 0 goto +1 (past the exit)
                [0x55, 0x00, 1, 0, 0, 0, 0, 0],
                [0x95, 0x00, 0, 0, 0, 0, 0, 0],
                // r6 = r0
                [0xbf, 0x06, 0, 0, 0, 0, 0, 0],
            ]
        );
    }

    #[test]
    fn alu_and_mov_encodings() {
        // BPF_ALU64 | BPF_MOV | BPF_K = 0xb7; dst r1; imm 42.
        assert_eq!(
            bytes(Insn::mov64_imm(Reg::R1, 42)),
            [0xb7, 0x01, 0, 0, 42, 0, 0, 0]
        );
        // imm -1 is sign-extended by the kernel: all four bytes 0xff.
        assert_eq!(
            bytes(Insn::mov64_imm(Reg::R0, -1)),
            [0xb7, 0x00, 0, 0, 0xff, 0xff, 0xff, 0xff]
        );
        // BPF_ALU64 | BPF_MOV | BPF_X = 0xbf; dst r6 (low nibble), src r1 (high).
        assert_eq!(
            bytes(Insn::mov64_reg(Reg::R6, Reg::R1)),
            [0xbf, 0x16, 0, 0, 0, 0, 0, 0]
        );
        // BPF_ALU64 | BPF_ADD | BPF_K = 0x07.
        assert_eq!(
            bytes(Insn::alu64_imm(Alu::Add, Reg::R10, -8)),
            [0x07, 0x0a, 0, 0, 0xf8, 0xff, 0xff, 0xff]
        );
        // BPF_ALU64 | BPF_SUB | BPF_X = 0x1f.
        assert_eq!(
            bytes(Insn::alu64_reg(Alu::Sub, Reg::R0, Reg::R7)),
            [0x1f, 0x70, 0, 0, 0, 0, 0, 0]
        );
        // BPF_ALU64 | BPF_RSH | BPF_K = 0x77, BPF_AND | BPF_K = 0x57.
        assert_eq!(
            bytes(Insn::alu64_imm(Alu::Rsh, Reg::R2, 32)),
            [0x77, 0x02, 0, 0, 32, 0, 0, 0]
        );
        assert_eq!(
            bytes(Insn::alu64_imm(Alu::And, Reg::R3, 0x08)),
            [0x57, 0x03, 0, 0, 8, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::alu64_reg(Alu::Xor, Reg::R9, Reg::R9))[0], 0xaf);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Lsh, Reg::R1, 3))[0], 0x67);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Mul, Reg::R1, 3))[0], 0x27);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Div, Reg::R1, 3))[0], 0x37);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Or, Reg::R1, 3))[0], 0x47);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Mod, Reg::R1, 3))[0], 0x97);
        assert_eq!(bytes(Insn::alu64_imm(Alu::Arsh, Reg::R1, 3))[0], 0xc7);
    }

    #[test]
    fn load_and_store_encodings() {
        // BPF_LDX | BPF_MEM | size: W 0x61, H 0x69, B 0x71, DW 0x79.
        assert_eq!(
            bytes(Insn::ldx(Size::W, Reg::R2, Reg::R1, 8)),
            [0x61, 0x12, 8, 0, 0, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::ldx(Size::H, Reg::R2, Reg::R1, 0))[0], 0x69);
        assert_eq!(bytes(Insn::ldx(Size::B, Reg::R2, Reg::R1, 2))[0], 0x71);
        assert_eq!(
            bytes(Insn::ldx(Size::DW, Reg::R0, Reg::R6, -16)),
            [0x79, 0x60, 0xf0, 0xff, 0, 0, 0, 0]
        );
        // BPF_STX | BPF_MEM | DW = 0x7b: *(u64 *)(r10 - 8) = r1.
        assert_eq!(
            bytes(Insn::stx(Size::DW, Reg::R10, -8, Reg::R1)),
            [0x7b, 0x1a, 0xf8, 0xff, 0, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::stx(Size::W, Reg::R0, 4, Reg::R1))[0], 0x63);
        assert_eq!(bytes(Insn::stx(Size::H, Reg::R0, 4, Reg::R1))[0], 0x6b);
        assert_eq!(bytes(Insn::stx(Size::B, Reg::R0, 4, Reg::R1))[0], 0x73);
        // BPF_ST | BPF_MEM | W = 0x62: *(u32 *)(r10 - 4) = 7.
        assert_eq!(
            bytes(Insn::st(Size::W, Reg::R10, -4, 7)),
            [0x62, 0x0a, 0xfc, 0xff, 7, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::st(Size::DW, Reg::R0, 0, 0))[0], 0x7a);
        assert_eq!(bytes(Insn::st(Size::B, Reg::R0, 0, 0))[0], 0x72);
        assert_eq!(bytes(Insn::st(Size::H, Reg::R0, 0, 0))[0], 0x6a);
        // BPF_STX | BPF_ATOMIC | DW = 0xdb, imm BPF_ADD = 0.
        assert_eq!(
            bytes(Insn::atomic_add64(Reg::R0, 16, Reg::R1)),
            [0xdb, 0x10, 16, 0, 0, 0, 0, 0]
        );
        // The same with imm BPF_ADD | BPF_FETCH = 1: r2 = fetch_add(r7 + 0, r2).
        assert_eq!(
            bytes(Insn::atomic_fetch_add64(Reg::R7, 0, Reg::R2)),
            [0xdb, 0x27, 0, 0, 1, 0, 0, 0]
        );
    }

    #[test]
    fn jump_call_and_exit_encodings() {
        // BPF_JMP | BPF_JEQ | BPF_K = 0x15: if r0 == 0 goto +3.
        assert_eq!(
            bytes(Insn::jmp_imm(Cond::Eq, Reg::R0, 0, 3)),
            [0x15, 0x00, 3, 0, 0, 0, 0, 0]
        );
        // BPF_JMP | BPF_JNE | BPF_X = 0x5d, offset -2.
        assert_eq!(
            bytes(Insn::jmp_reg(Cond::Ne, Reg::R1, Reg::R2, -2)),
            [0x5d, 0x21, 0xfe, 0xff, 0, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::jmp_imm(Cond::Gt, Reg::R1, 0, 0))[0], 0x25);
        assert_eq!(bytes(Insn::jmp_imm(Cond::Ge, Reg::R1, 0, 0))[0], 0x35);
        assert_eq!(bytes(Insn::jmp_imm(Cond::Set, Reg::R1, 0, 0))[0], 0x45);
        assert_eq!(bytes(Insn::jmp_imm(Cond::SGt, Reg::R1, 0, 0))[0], 0x65);
        assert_eq!(bytes(Insn::jmp_imm(Cond::SGe, Reg::R1, 0, 0))[0], 0x75);
        assert_eq!(bytes(Insn::jmp_imm(Cond::Lt, Reg::R1, 0, 0))[0], 0xa5);
        assert_eq!(bytes(Insn::jmp_imm(Cond::Le, Reg::R1, 0, 0))[0], 0xb5);
        assert_eq!(bytes(Insn::jmp_imm(Cond::SLt, Reg::R1, 0, 0))[0], 0xc5);
        assert_eq!(bytes(Insn::jmp_imm(Cond::SLe, Reg::R1, 0, 0))[0], 0xd5);
        // BPF_JMP | BPF_JA = 0x05.
        assert_eq!(bytes(Insn::ja(1)), [0x05, 0, 1, 0, 0, 0, 0, 0]);
        // BPF_JMP | BPF_CALL = 0x85, imm = helper id (bpf_ktime_get_ns = 5).
        assert_eq!(
            bytes(Insn::call(Helper::KtimeGetNs)),
            [0x85, 0, 0, 0, 5, 0, 0, 0]
        );
        assert_eq!(bytes(Insn::call(Helper::GetCurrentPidTgid))[4], 14);
        assert_eq!(bytes(Insn::call(Helper::GetCurrentTask))[4], 35);
        assert_eq!(bytes(Insn::call(Helper::MapLookupElem))[4], 1);
        assert_eq!(bytes(Insn::call(Helper::ProbeReadKernel))[4], 113);
        // BPF_JMP | BPF_EXIT = 0x95.
        assert_eq!(bytes(Insn::exit()), [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn wide_immediate_takes_two_slots() {
        // BPF_LD | BPF_IMM | BPF_DW = 0x18; the second slot's imm holds the
        // upper half, all else zero.
        let [lo, hi] = Insn::ld_imm64(Reg::R1, 0x1122_3344_5566_7788);
        assert_eq!(bytes(lo), [0x18, 0x01, 0, 0, 0x88, 0x77, 0x66, 0x55]);
        assert_eq!(bytes(hi), [0, 0, 0, 0, 0x44, 0x33, 0x22, 0x11]);
        // A map by fd: src = BPF_PSEUDO_MAP_FD (1), imm = fd.
        let [lo, hi] = Insn::ld_map_fd(Reg::R1, 5);
        assert_eq!(bytes(lo), [0x18, 0x11, 0, 0, 5, 0, 0, 0]);
        assert_eq!(bytes(hi), [0; 8]);
    }

    #[test]
    fn labels_resolve_forward_and_backward() {
        let mut asm = Asm::new();
        let out = asm.new_label();
        let top = asm.new_label();
        asm.bind(top);
        asm.push(Insn::mov64_imm(Reg::R0, 0)); // 0
        asm.jump_if(Cond::Eq, Reg::R1, 0, out); // 1 -> 4: off 2
        asm.extend(Insn::ld_imm64(Reg::R2, 1)); // 2, 3
        asm.bind(out);
        asm.jump(top); // 4 -> 0: off -5
        asm.push(Insn::exit()); // 5
        let insns = asm.finish().unwrap();
        assert_eq!(insns.len(), 6);
        assert_eq!(insns[1].off, 2);
        assert_eq!(insns[4].off, -5);
        assert_eq!(to_bytes(&insns).len(), 48);
    }

    #[test]
    fn an_unbound_label_is_an_error() {
        let mut asm = Asm::new();
        let nowhere = asm.new_label();
        asm.jump_if_reg(Cond::Ne, Reg::R1, Reg::R2, nowhere);
        let err = asm.finish().unwrap_err();
        assert_eq!(err, AsmError::UnboundLabel(0));
        assert_eq!(err.to_string(), "BPF program: label 0 never bound");
    }

    #[test]
    fn field_sizes() {
        assert_eq!(Size::of_bytes(8), Some(Size::DW));
        assert_eq!(Size::of_bytes(4), Some(Size::W));
        assert_eq!(Size::of_bytes(2), Some(Size::H));
        assert_eq!(Size::of_bytes(1), Some(Size::B));
        assert_eq!(Size::of_bytes(16), None);
    }
}
