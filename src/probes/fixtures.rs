//! What the families' unit tests share when they run a generated program
//! in user space (`probes::interpreter`): where the context, the two tasks
//! of a switch and the CPU's area are in the interpreter's memory, the
//! `task_struct` the goldens fix, and the helper calls every program makes
//! to find its CPU's area.

use super::interpreter::Memory;
use super::recorder::program::TaskMembers;
use crate::rt::tracefs::format::EventFormat;

/// The program's context (a raw tracepoint's arguments, a classic one's record).
pub const CTX_AT: u64 = 0x1000_0000;
/// The previous and the next task of a switch.
pub const PREV_AT: u64 = 0x2000_0000;
pub const NEXT_AT: u64 = 0x3000_0000;
/// CPU 0's area of the map (a recorder's region, a counter's slot).
pub const AREA_AT: u64 = 0x4000_0000;
/// Room for a task's members.
pub const TASK_BYTES: usize = 4096;
/// The descriptor the programs name their map by.
pub const MAP_FD: i32 = 3;

/// The interpreter's memory for a program on a switch: a 256-byte context,
/// both tasks, and CPU 0's area of `area_size` bytes.
pub fn memory(area_size: usize) -> Memory {
    let mut memory = Memory::new();
    memory.add(CTX_AT, 256);
    memory.add(PREV_AT, TASK_BYTES);
    memory.add(NEXT_AT, TASK_BYTES);
    memory.add(AREA_AT, area_size);
    memory
}

/// `task_struct` as the goldens fix it (`probes::golden`: Linux 6.18 on
/// x86-64).
pub fn members() -> TaskMembers {
    TaskMembers {
        pid: (2504, 4),
        prio: (124, 4),
        comm: (3024, 16),
        exit_state: Some((2460, 4)),
        cpu: Some((24, 4)),
    }
}

/// A task name as the kernel keeps it: 16 bytes, NUL-padded.
pub fn comm(text: &str) -> [u8; 16] {
    let mut comm = [0u8; 16];
    comm[..text.len()].copy_from_slice(text.as_bytes());
    comm
}

/// Writes the name `text` at `at`.
pub fn store_comm(memory: &mut Memory, at: u64, text: &str) {
    for (k, b) in comm(text).into_iter().enumerate() {
        memory.store(at + k as u64, 1, u64::from(b)).unwrap();
    }
}

/// A task at `at` with its pid and name where `members()` puts them.
pub fn store_task(memory: &mut Memory, at: u64, pid: u64, text: &str) {
    let m = members();
    memory.store(at + m.pid.0 as u64, 4, pid).unwrap();
    store_comm(memory, at + m.comm.0 as u64, text);
}

/// Writes `value` into the field `name` of the classic tracepoint's record
/// (at `CTX_AT`) that `format` describes.
pub fn store_field(memory: &mut Memory, format: &EventFormat, name: &str, value: u64) {
    let field = format.field(name).unwrap();
    memory
        .store(CTX_AT + field.offset as u64, field.size.min(8), value)
        .unwrap();
}

/// The helpers every family's program calls first: this CPU's number
/// (`bpf_get_smp_processor_id`: CPU 0) and the lookup of its key in the
/// map `MAP_FD` (`bpf_map_lookup_elem`: the area at `AREA_AT`). None for
/// any other helper.
pub fn cpu0_area(id: i32, r: &[u64; 11], memory: &mut Memory) -> Option<u64> {
    match id {
        8 => Some(0),
        1 => {
            assert_eq!(r[1], MAP_FD as u64, "the map's descriptor");
            assert_eq!(memory.load(r[2], 4), Ok(0), "CPU 0's key");
            Some(AREA_AT)
        }
        _ => None,
    }
}
