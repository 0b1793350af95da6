//! A test-only interpreter of the BPF instructions the generators emit
//! (64-bit ALU, loads and stores, atomic adds, jumps, helper calls, the
//! 64-bit immediate load), so that a generated program runs in user space
//! on fixture inputs: a switch's state bits, a record's bytes. It checks
//! every access against the memory it was given, as the verifier would
//! have: an access outside it is an error, not a read of zeros.

use crate::rt::bpf::Insn;

/// What stopped a program: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Fault(String);

/// Memory a program may touch: regions at made-up addresses, backed by
/// `u64`s (8-aligned, as a BPF map value is).
#[derive(Debug, Default)]
pub struct Memory {
    regions: Vec<(u64, Vec<u64>)>,
}

/// Where the stack is: r10 points at its end.
pub const STACK: u64 = 0x7f00_0000;
const STACK_BYTES: usize = 512;

impl Memory {
    pub fn new() -> Memory {
        let mut memory = Memory::default();
        memory.add(STACK - STACK_BYTES as u64, STACK_BYTES);
        memory
    }

    /// A zeroed region of `bytes` at `base`.
    pub fn add(&mut self, base: u64, bytes: usize) {
        self.regions.push((base, vec![0; bytes.div_ceil(8)]));
    }

    /// The bytes of the region at `base`.
    pub fn bytes(&mut self, base: u64) -> &mut [u8] {
        let (_, words) = self
            .regions
            .iter_mut()
            .find(|(b, _)| *b == base)
            .expect("a region at that base");
        // SAFETY: a u64 slice seen as its bytes, same length in bytes.
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
    }

    fn slot(&mut self, address: u64, size: usize) -> Result<&mut [u8], Fault> {
        for (base, words) in &mut self.regions {
            let len = words.len() as u64 * 8;
            if address >= *base && address + size as u64 <= *base + len {
                let at = (address - *base) as usize;
                // SAFETY: as in `bytes`.
                let bytes: &mut [u8] = unsafe {
                    std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8)
                };
                return Ok(&mut bytes[at..at + size]);
            }
        }
        Err(Fault(format!(
            "access of {size} bytes at {address:#x} outside memory"
        )))
    }

    pub fn load(&mut self, address: u64, size: usize) -> Result<u64, Fault> {
        let mut word = [0u8; 8];
        word[..size].copy_from_slice(self.slot(address, size)?);
        Ok(u64::from_le_bytes(word))
    }

    pub fn store(&mut self, address: u64, size: usize, value: u64) -> Result<(), Fault> {
        self.slot(address, size)?
            .copy_from_slice(&value.to_le_bytes()[..size]);
        Ok(())
    }
}

fn size_of(code: u8) -> usize {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

fn alu(op: u8, dst: u64, src: u64) -> Result<u64, Fault> {
    Ok(match op {
        0x00 => dst.wrapping_add(src),
        0x10 => dst.wrapping_sub(src),
        0x20 => dst.wrapping_mul(src),
        // The kernel's division by zero gives 0, its modulo the dividend.
        0x30 => dst.checked_div(src).unwrap_or(0),
        0x90 => dst.checked_rem(src).unwrap_or(dst),
        0x40 => dst | src,
        0x50 => dst & src,
        0x60 => dst.wrapping_shl(src as u32 & 63),
        0x70 => dst.wrapping_shr(src as u32 & 63),
        0xa0 => dst ^ src,
        0xb0 => src,
        0xc0 => ((dst as i64) >> (src & 63)) as u64,
        other => return Err(Fault(format!("ALU operation {other:#x} not interpreted"))),
    })
}

fn condition(op: u8, a: u64, b: u64) -> Result<bool, Fault> {
    let (sa, sb) = (a as i64, b as i64);
    Ok(match op {
        0x10 => a == b,
        0x20 => a > b,
        0x30 => a >= b,
        0x40 => a & b != 0,
        0x50 => a != b,
        0x60 => sa > sb,
        0x70 => sa >= sb,
        0xa0 => a < b,
        0xb0 => a <= b,
        0xc0 => sa < sb,
        0xd0 => sa <= sb,
        other => return Err(Fault(format!("jump {other:#x} not interpreted"))),
    })
}

/// Runs `code` with r1 = `context`; `helper(id, registers, memory)` gives
/// each call's r0 (the map of a 64-bit immediate load is its descriptor).
/// Returns r0 at `exit`, or what went wrong and where.
pub fn run(
    code: &[Insn],
    context: u64,
    memory: &mut Memory,
    helper: &mut dyn FnMut(i32, &[u64; 11], &mut Memory) -> u64,
) -> Result<u64, Fault> {
    let mut r = [0u64; 11];
    r[1] = context;
    r[10] = STACK;
    let mut pc = 0usize;
    for _ in 0..100_000 {
        let insn = *code.get(pc).ok_or(Fault(format!("pc {pc} past the end")))?;
        let here = pc;
        let at = |e: Fault| Fault(format!("{here}: {insn}: {e}"));
        let (dst, src) = (insn.dst as usize, insn.src as usize);
        let imm = insn.imm as i64 as u64;
        pc += 1;
        match insn.code & 0x07 {
            0x07 => {
                let operand = if insn.code & 0x08 != 0 { r[src] } else { imm };
                r[dst] = alu(insn.code & 0xf0, r[dst], operand).map_err(at)?;
            }
            0x01 => {
                let address = r[src].wrapping_add(insn.off as i64 as u64);
                r[dst] = memory.load(address, size_of(insn.code)).map_err(at)?;
            }
            0x02 | 0x03 => {
                let address = r[dst].wrapping_add(insn.off as i64 as u64);
                let size = size_of(insn.code);
                if insn.code & 0xe0 == 0xc0 {
                    let old = memory.load(address, size).map_err(at)?;
                    memory
                        .store(address, size, old.wrapping_add(r[src]))
                        .map_err(at)?;
                    if insn.imm & 0x01 != 0 {
                        r[src] = old;
                    }
                } else {
                    let value = if insn.code & 0x07 == 0x03 {
                        r[src]
                    } else {
                        imm
                    };
                    memory.store(address, size, value).map_err(at)?;
                }
            }
            0x00 if insn.is_wide() => {
                let high = code.get(pc).map_or(0, |n| n.imm as u32 as u64);
                r[dst] = high << 32 | insn.imm as u32 as u64;
                pc += 1;
            }
            0x05 => match insn.code & 0xf0 {
                0x00 => pc = (pc as i64 + insn.off as i64) as usize,
                0x80 => {
                    r[0] = helper(insn.imm, &r, memory);
                    // r1-r5 are clobbered by a call: poison them.
                    r[1..=5].fill(0xdead_dead_dead_dead);
                }
                0x90 => return Ok(r[0]),
                op => {
                    let operand = if insn.code & 0x08 != 0 { r[src] } else { imm };
                    if condition(op, r[dst], operand).map_err(at)? {
                        pc = (pc as i64 + insn.off as i64) as usize;
                    }
                }
            },
            _ => return Err(at(Fault("class not interpreted".to_string()))),
        }
    }
    Err(Fault("more than 100,000 instructions: a loop".to_string()))
}
