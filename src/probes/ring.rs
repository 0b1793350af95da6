//! What the flight recorder (`recorder`) and the interference counter
//! (`interference`) share: each CPU owns one area of one `BPF_F_MMAPABLE`
//! array map (key = CPU number), written by that CPU's programs only, read
//! by user space with plain loads; the area holds a ring of fixed-size
//! entries, entry number `i` in slot `i % slots`, each written under a
//! commit word (`SEQ`: 0 while being written, `i + 1` once whole).
//!
//! One description of where the ring lies (`RingLayout`) serves the
//! programs that write it and the readers that copy it; the emitters below
//! are the steps every such program takes (find this CPU's area, reserve
//! entry `i`, point at its slot, commit), so both families emit them alike.

use crate::probes::ProbeError;
use crate::rt::bpf::probe::Unavailable;
use crate::rt::bpf::{Alu, Asm, BPF_F_MMAPABLE, Insn, Map, MapKind, MappedArray, Reg, Size};

/// Where a ring of entries lies in a CPU's area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    /// Offset of slot 0 in the area.
    pub start: usize,
    /// Bytes of one entry.
    pub entry_size: usize,
    /// Entries kept (a power of two: the programs bound the index by a mask).
    pub slots: usize,
}

impl RingLayout {
    /// Where the ring ends: the area's size when the ring comes last.
    pub const fn end(&self) -> usize {
        self.start + self.slots * self.entry_size
    }

    /// Where entry number `number` is in the area.
    pub fn entry_offset(&self, number: u64) -> usize {
        self.start + (number as usize & (self.slots - 1)) * self.entry_size
    }

    /// Offset of `field` of an entry from a register that points at the
    /// entry's slot less `start` (what `point_at_entry` sets).
    pub fn field(&self, field: usize) -> i16 {
        (self.start + field) as i16
    }

    /// `reg = (reg % slots) * entry_size`: the masked index (bounded for
    /// the verifier) scaled to its slot, by a shift when the size allows.
    pub fn scale(&self, asm: &mut Asm, reg: Reg) {
        asm.push(Insn::alu64_imm(Alu::And, reg, self.slots as i32 - 1));
        if self.entry_size.is_power_of_two() {
            let shift = self.entry_size.trailing_zeros() as i32;
            asm.push(Insn::alu64_imm(Alu::Lsh, reg, shift));
        } else {
            asm.push(Insn::alu64_imm(Alu::Mul, reg, self.entry_size as i32));
        }
    }

    /// `entry = area + (r1 % slots) * entry_size`: the slot of entry r1,
    /// less `start` (its fields are at `field` from it; clobbers r1).
    pub fn point_at_entry(&self, asm: &mut Asm, entry: Reg, area: Reg) {
        self.scale(asm, Reg::R1);
        asm.push(Insn::mov64_reg(entry, area))
            .push(Insn::alu64_reg(Alu::Add, entry, Reg::R1));
    }
}

/// One CPU's area of the mapped map, read while its programs keep writing
/// it: every read is a volatile load (of a word, or word by word), so that
/// each happens, in program order, where the reader says.
#[derive(Debug, Clone, Copy)]
pub struct AreaView {
    base: *const u8,
    size: usize,
}

// SAFETY: the view only reads (volatile loads) memory that stays mapped for
// as long as its owner (the map's mapping, or a test's buffer) lives.
unsafe impl Send for AreaView {}

impl AreaView {
    /// The area of `size` bytes at `base`.
    ///
    /// # Safety
    /// `base` is 8-byte aligned and points to `size` readable bytes that
    /// stay mapped while the view is used.
    pub unsafe fn new(base: *const u8, size: usize) -> AreaView {
        debug_assert!((base as usize).is_multiple_of(8));
        AreaView { base, size }
    }

    pub fn base(&self) -> *const u8 {
        self.base
    }

    /// The u64 at `offset` (a multiple of 8).
    pub fn u64_at(&self, offset: usize) -> u64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.size);
        // SAFETY: in bounds and aligned, mapped while the view is used
        // (`new`'s contract).
        unsafe { std::ptr::read_volatile(self.base.add(offset).cast::<u64>()) }
    }

    /// The u32 at `offset` (a multiple of 4).
    pub fn u32_at(&self, offset: usize) -> u32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= self.size);
        // SAFETY: as above.
        unsafe { std::ptr::read_volatile(self.base.add(offset).cast::<u32>()) }
    }

    /// `N` bytes from `offset` (a multiple of 8), copied word by word.
    pub fn bytes<const N: usize>(&self, offset: usize) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let word = self.u64_at(offset + 8 * i).to_ne_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        out
    }
}

/// `area = &map[this CPU]`, or return 0 when the CPU has no entry (the
/// kernel runs a tracepoint's programs on every CPU); clobbers r0-r5.
pub fn this_cpu_area(asm: &mut Asm, note: &str, map_fd: i32, area: Reg) {
    asm.note(note)
        .this_cpu_entry_or_return(map_fd)
        .push(Insn::mov64_reg(area, Reg::R0));
}

/// Reserves entry `i`: `r1 = i` by an atomic fetch-and-add of 1 on the u64
/// at `area + counter` (a program that interrupts this one gets `i + 1`),
/// and keeps the commit word `i + 1` at `r10 + commit_on_stack` for the end
/// (clobbers r2, which holds `i + 1` after).
pub fn reserve(asm: &mut Asm, area: Reg, counter: usize, commit_on_stack: i16) {
    asm.push(Insn::mov64_imm(Reg::R1, 1))
        .push(Insn::atomic_fetch_add64(area, counter as i16, Reg::R1))
        .push(Insn::mov64_reg(Reg::R2, Reg::R1))
        .push(Insn::alu64_imm(Alu::Add, Reg::R2, 1))
        .push(Insn::stx(Size::DW, Reg::R10, commit_on_stack, Reg::R2));
}

/// The entry is whole: its `SEQ` (at `seq` from `entry`) = the commit word
/// kept on the stack, last (clobbers r1).
pub fn commit(asm: &mut Asm, entry: Reg, seq: i16, commit_on_stack: i16) {
    asm.note("commit: SEQ = i + 1");
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R10, commit_on_stack))
        .push(Insn::stx(Size::DW, entry, seq, Reg::R1));
}

/// The oldest kernel whose verifier takes the atomic fetch-and-add that
/// reserves an entry (`BPF_FETCH`, Linux 5.12).
pub const MIN_KERNEL: (u32, u32) = (5, 12);

/// Whether a family that reserves entries can run here: BPF itself
/// (`rt::bpf::probe`) and a kernel with `BPF_FETCH`; `uses_fetch` ends the
/// line that says the kernel is too old ("the flight recorder reserves
/// records with BPF_FETCH").
pub fn check_kernel(uses_fetch: &str) -> Result<(), Unavailable> {
    check_kernel_with(
        &crate::rt::bpf::probe::Facts::live(),
        &crate::rt::bpf::probe::try_the_system_call,
        uses_fetch,
    )
}

/// `check_kernel` on `facts` (a machine's files: the doctor's fixtures
/// too), with `try_call` for what only the bpf() system call tells.
pub fn check_kernel_with(
    facts: &crate::rt::bpf::probe::Facts,
    try_call: &dyn Fn() -> Result<(), Unavailable>,
    uses_fetch: &str,
) -> Result<(), Unavailable> {
    let release = &facts.release;
    if let Some(version) = crate::rt::bpf::probe::kernel_version(release)
        && version < MIN_KERNEL
    {
        return Err(Unavailable(format!(
            "kernel {release} is older than {}.{} ({uses_fetch})",
            MIN_KERNEL.0, MIN_KERNEL.1
        )));
    }
    match crate::rt::bpf::probe::assess(facts) {
        Some(reason) => Err(Unavailable(reason)),
        None => try_call(),
    }
}

/// The array map of one `area_size` area per possible CPU, or, with
/// `only`, per CPU up to the highest of those (the kernel allocates every
/// entry when the map is created: the recorder's 1.5 MiB areas, one per
/// possible CPU, would be 384 MiB on a machine of 256 for the few CPUs
/// traced; a program on a CPU past the map's end finds no entry and
/// returns). Named `name`, with its mapping (`writable`: user space writes
/// into it too); `family` names it in errors ("cannot create the
/// recorder's map"). Every family's map (the breakdown's wake-up slots
/// too) is made here.
pub fn per_cpu_map(
    name: &str,
    family: &str,
    area_size: usize,
    writable: bool,
    only: Option<&[usize]>,
) -> Result<(Map, MappedArray), ProbeError> {
    let possible = crate::rt::bpf::sys::possible_cpus()
        .map_err(|e| ProbeError::system("cannot count the possible CPUs", e))?;
    let cpus = only.unwrap_or(&[]);
    if let Some(&cpu) = cpus.iter().find(|&&cpu| cpu >= possible) {
        return Err(ProbeError::NotPossibleCpu(cpu));
    }
    let entries = match only {
        Some(cpus) => cpus.iter().max().map_or(1, |&highest| highest + 1),
        None => possible,
    };
    let map = Map::create(
        MapKind::Array,
        name,
        area_size,
        entries as u32,
        BPF_F_MMAPABLE,
    )
    .map_err(|e| ProbeError::system(format!("cannot create the {family}'s map"), e))?;
    let mapped = map
        .map_memory(writable)
        .map_err(|e| ProbeError::system(format!("cannot map the {family}'s map"), e))?;
    Ok((map, mapped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_found_by_its_number_modulo_the_slots() {
        let ring = RingLayout {
            start: 64,
            entry_size: 48,
            slots: 8,
        };
        assert_eq!(ring.end(), 64 + 8 * 48);
        assert_eq!(ring.entry_offset(0), 64);
        assert_eq!(ring.entry_offset(9), 64 + 48);
        assert_eq!(ring.field(8), 72);
    }

    #[test]
    fn a_power_of_two_entry_is_scaled_by_a_shift_another_by_a_multiply() {
        let text = |entry_size: usize| {
            let mut asm = Asm::new();
            let ring = RingLayout {
                start: 0,
                entry_size,
                slots: 8,
            };
            ring.scale(&mut asm, Reg::R1);
            asm.push(Insn::exit());
            asm.finish().unwrap().to_string()
        };
        assert!(text(64).contains("r1 <<= 6"), "{}", text(64));
        assert!(text(48).contains("r1 *= 48"), "{}", text(48));
        assert!(text(48).contains("r1 &= 7"), "{}", text(48));
    }
}
