//! The flight recorder's memory layout, shared by the BPF programs that
//! write it (`program.rs`) and the decoder that reads it (`decode.rs`).
//!
//! One `BPF_F_MMAPABLE` array map holds one *region* per CPU (key = CPU
//! number). A program only ever writes the region of the CPU it runs on.
//!
//! A region is, in order (every offset a multiple of 8):
//! - a header: the count of records ever reserved (`head`), the CPU's
//!   current task with the time it got the CPU ("task X since t"), the
//!   count of records whose program was interrupted (`INTERRUPTED`), the
//!   hold (`HOLD`) and the count of events refused for it (`REFUSED`);
//! - a table of task names by pid (`NAME_SLOTS` entries, indexed by the
//!   pid's low bits), filled at each switch: a record carries pids only;
//! - `slots` records of `RECORD_SIZE` bytes, a circular buffer: record
//!   number `i` lives in slot `i % slots` (`slots` a power of two), so the
//!   last `slots` records are kept, but for those a hold keeps.
//!
//! **Holding a window.** A measuring thread that sees a spike lowers its
//! CPU's `HOLD` to the spike's window's start (`hold.rs`; only user space
//! writes it, the programs only read it). A program does not write a record
//! over one from that time on, nor over the newest one before it: it counts
//! the event in `REFUSED` and leaves its record number unwritten. The
//! window is then whole however late the collector comes, which releases
//! the hold once it has copied it. A sample that is not a spike does
//! nothing of this.
//!
//! **Writing, safe under nesting.** Programs attached through perf events
//! do not nest on a CPU today (the kernel's `bpf_prog_active` guard skips
//! an event whose program would interrupt another one, and counts it in
//! `recursion_misses`), but raw tracepoint programs do, and an NMI can come
//! at any instruction. So a program never assumes it is alone:
//! 1. it *reserves* record `i` with an atomic fetch-and-add on `head` (a
//!    program that interrupts it gets `i + 1`, and so on);
//! 2. it clears the record's `SEQ` word (0: being written), then writes the
//!    fields;
//! 3. it writes how long it ran (`ELAPSED`, from its time to now), then
//!    commits: `SEQ = i + 1`, last.
//!
//! A reader copies a record between two loads of its `SEQ`: the copy is
//! record `i`, whole, when both say `i + 1`. Anything else is either a
//! newer record (`SEQ` above `i + 1`: the buffer wrapped, the window was
//! overwritten) or a record still being written (0, or the stale `SEQ` of
//! record `i - slots`): a torn record, placed in time between its
//! neighbours. A record whose program ran longer than `INTERRUPTED_NS` was
//! interrupted: the events of what interrupted it may have been skipped
//! (`recursion_misses`) and are missing from `[time, time + elapsed]`.
//! The reader flags exactly the windows those spans touch. x86 keeps
//! stores in program order and loads in program order, which this needs:
//! other architectures are refused by the availability check.

use crate::probes::ring::RingLayout;

/// Bytes of one record.
pub const RECORD_SIZE: usize = 48;
/// Records kept per CPU by default. A window is held from its spike until
/// the collector has copied it, so the ring must hold the window and what
/// comes until then: at the busiest rate seen here (256,000 events/s on
/// one CPU, a 20 us timer beside hackbench) 128 ms, more than the longest
/// window worth attributing (RT throttling lends the CPU for 50 ms) plus
/// the collector's passes (every 2 ms, delayed up to tens of ms beside
/// other builds); 1.5 MiB per CPU.
pub const DEFAULT_SLOTS: usize = 32768;
/// A program that ran longer than this between its time and its commit was
/// interrupted (a run takes well under 1 us here, an interrupt on a virtual
/// machine several): what interrupted it may be missing from the records.
pub const INTERRUPTED_NS: u64 = 2_000;

/// Offsets in a record.
pub mod record {
    /// u64: `bpf_ktime_get_ns()`, CLOCK_MONOTONIC ns.
    pub const TIME: usize = 0;
    /// i32: the task current when the event happened (`common_pid`).
    pub const PID: usize = 8;
    /// u16: `super::Kind` code.
    pub const KIND: usize = 12;
    /// u16: small operand (the vector's index into `VECTORS`).
    pub const SMALL: usize = 14;
    /// i32 operands, by kind (see `super::Kind`).
    pub const A: usize = 16;
    pub const B: usize = 20;
    pub const C: usize = 24;
    pub const D: usize = 28;
    /// u64: the record's number + 1 once whole, 0 while being written.
    pub const SEQ: usize = 32;
    /// u32: ns from `TIME` to the commit (the program's own run).
    pub const ELAPSED: usize = 40;
}

/// What a record is, with what its operands hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// `sched_switch`: A prev_pid, B next_pid, C prev_prio | next_prio << 16,
    /// D prev_state (its low 32 bits: the sleep states and `PREEMPTED`).
    Switch = 1,
    /// `sched_wakeup` of a measured task: A pid, B prio, C target_cpu.
    Wakeup = 2,
    /// `irq_handler_entry` / `_exit`: A irq (the name is read from /proc).
    IrqEntry = 3,
    IrqExit = 4,
    /// `softirq_entry` / `_exit`: A vec.
    SoftirqEntry = 5,
    SoftirqExit = 6,
    /// `irq_vectors:<vector>_entry` / `_exit`: SMALL the vector's index.
    VectorEntry = 7,
    VectorExit = 8,
    /// `nmi:nmi_handler`, written when an NMI handler returns: A its run
    /// (`delta_ns`, ns, the low 32 bits: up to 4.2 s), B `handled`.
    Nmi = 9,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Switch,
        Kind::Wakeup,
        Kind::IrqEntry,
        Kind::IrqExit,
        Kind::SoftirqEntry,
        Kind::SoftirqExit,
        Kind::VectorEntry,
        Kind::VectorExit,
        Kind::Nmi,
    ];

    pub fn from_code(code: u16) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u16 == code)
    }
}

/// Offsets in a region's header.
pub mod header {
    /// u64: records reserved so far (the next record's number).
    pub const HEAD: usize = 0;
    /// u64: when the current task got the CPU (its switch-in), 0: unknown.
    pub const TASK_SINCE: usize = 8;
    /// i32 pid and i32 priority of the current task, as its switch-in told.
    pub const TASK_PID: usize = 16;
    pub const TASK_PRIO: usize = 20;
    /// u64: records whose program ran longer than `INTERRUPTED_NS`.
    pub const INTERRUPTED: usize = 32;
    /// u64, written by user space only (`hold.rs`), stored complemented
    /// (0: nothing held): records from this time on, and the newest one
    /// before it, are not overwritten.
    pub const HOLD: usize = 40;
    /// u64: events not recorded because their slot was held.
    pub const REFUSED: usize = 48;
    /// The header's size.
    pub const SIZE: usize = 64;
}

/// Entries of the name table (a power of two).
pub const NAME_SLOTS: usize = 256;
/// Offsets in one name entry.
pub mod name {
    /// i32 pid (the entry is that task's when it matches), i32 priority.
    pub const PID: usize = 0;
    pub const PRIO: usize = 4;
    /// `comm`, 16 bytes.
    pub const COMM: usize = 8;
    /// One entry (a power of two: the program indexes by a shift).
    pub const SIZE: usize = 32;
}
/// log2 of `name::SIZE`.
pub const NAME_SHIFT: u32 = 5;
const _: () = assert!(1 << NAME_SHIFT == name::SIZE && RECORD_SIZE.is_multiple_of(8));
const _: () = assert!(NAME_SLOTS.is_power_of_two());
// Every record field fits its record, every header field its header.
const _: () = assert!(
    record::ELAPSED + 4 <= RECORD_SIZE
        && header::REFUSED + 8 <= header::SIZE
        && name::COMM + 16 <= name::SIZE
);

/// Where the parts of a region are, for `slots` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub slots: usize,
}

impl Region {
    /// `slots` rounded up to a power of two, at least 64.
    pub fn with_slots(slots: usize) -> Region {
        Region {
            slots: slots.max(64).next_power_of_two(),
        }
    }

    pub const NAMES: usize = header::SIZE;
    pub const RECORDS: usize = header::SIZE + NAME_SLOTS * name::SIZE;

    /// The circular buffer of records, as the programs write it and the
    /// decoder reads it.
    pub fn records(&self) -> RingLayout {
        RingLayout {
            start: Region::RECORDS,
            entry_size: RECORD_SIZE,
            slots: self.slots,
        }
    }

    /// The region's size: the map's value size.
    pub fn size(&self) -> usize {
        self.records().end()
    }

    /// Where record number `index` is in the region.
    pub fn record_offset(&self, index: u64) -> usize {
        self.records().entry_offset(index)
    }

    /// Where the name entry of `pid` is in the region.
    pub fn name_offset(pid: i32) -> usize {
        Region::NAMES + (pid as u32 as usize & (NAME_SLOTS - 1)) * name::SIZE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_region_do_not_overlap() {
        let r = Region::with_slots(100);
        assert_eq!(r.slots, 128);
        assert_eq!(Region::NAMES, 64);
        assert_eq!(Region::RECORDS, 64 + 256 * 32);
        assert_eq!(r.size(), 64 + 8192 + 128 * 48);
        assert_eq!(r.record_offset(0), Region::RECORDS);
        assert_eq!(r.record_offset(129), Region::RECORDS + 48);
        assert_eq!(Region::name_offset(0), 64);
        assert_eq!(Region::name_offset(257), 64 + 32);
        assert_eq!(Region::name_offset(-1), 64 + 255 * 32);
        assert!(Region::with_slots(8).slots >= 64);
    }

    #[test]
    fn kinds_round_trip_through_their_codes() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_code(kind as u16), Some(kind));
        }
        assert_eq!(Kind::from_code(0), None);
        assert_eq!(Kind::from_code(10), None);
    }
}
