//! Reading one CPU's region of the flight recorder (see `layout.rs`) while
//! its programs keep writing it, and decoding its records into the
//! `TraceEvent`s that `spikes::attribution` consumes.

use super::layout::{
    INTERRUPTED_NS, Kind as RecordKind, RECORD_SIZE, RINGS, Region, header, name, record, ring,
};
use crate::rt::tracefs::events::{Comm, IrqName, Kind, Switch, TraceEvent};
use std::collections::HashMap;

/// One CPU's region in memory the kernel writes concurrently: every read
/// is a volatile load of an aligned 64-bit word.
pub struct RegionView {
    base: *const u64,
    layout: Region,
}

// SAFETY: the view only reads (volatile loads) memory that stays mapped for
// as long as its owner (the map's mapping, or a test's buffer) lives.
unsafe impl Send for RegionView {}

impl RegionView {
    /// # Safety
    /// `base` must be 8-byte aligned and point to `layout.size()` readable
    /// bytes that stay mapped for the view's lifetime.
    pub unsafe fn new(base: *const u8, layout: Region) -> RegionView {
        debug_assert!((base as usize).is_multiple_of(8));
        RegionView {
            base: base.cast(),
            layout,
        }
    }

    pub fn layout(&self) -> Region {
        self.layout
    }

    fn word(&self, offset: usize) -> u64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.layout.size());
        // SAFETY: in bounds and aligned (the layout's offsets are multiples
        // of 8), and mapped for the view's lifetime (`new`'s contract).
        unsafe { std::ptr::read_volatile(self.base.add(offset / 8)) }
    }

    fn bytes<const N: usize>(&self, offset: usize) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let word = self.word(offset + 8 * i).to_ne_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        out
    }

    /// Records reserved so far in ring `ring`. The fence keeps the record
    /// loads that follow after it.
    pub fn head(&self, ring: usize) -> u64 {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let head = self.word(self.layout.ring_field(ring, ring::HEAD));
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        head
    }

    /// Records reserved so far in all rings.
    pub fn records(&self) -> u64 {
        (0..RINGS).map(|k| self.head(k)).sum()
    }

    /// When ring `ring` was written (`ring::SINCE`, `UNTIL`, `EARLIER`).
    fn stretches(&self, ring: usize) -> Stretches {
        let field = |f| self.word(self.layout.ring_field(ring, f));
        Stretches {
            since_ns: field(ring::SINCE),
            until_ns: match field(ring::UNTIL) {
                0 => u64::MAX,
                until => until,
            },
            earlier_end_ns: field(ring::EARLIER),
        }
    }

    /// Records whose program was interrupted so far (`header::INTERRUPTED`).
    pub fn interrupted(&self) -> u64 {
        self.word(header::INTERRUPTED)
    }

    /// Record `index` of `ring`, copied between two loads of its commit
    /// word (see `layout.rs`): whole, newer (overwritten), or still being
    /// written.
    fn slot(&self, ring: usize, index: u64) -> Slot {
        let offset = self.layout.record_offset(ring, index);
        let committed = index + 1;
        let before = self.word(offset + record::SEQ);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let copy = RawRecord(self.bytes(offset));
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let after = self.word(offset + record::SEQ);
        if before == committed && after == committed {
            Slot::Whole(copy)
        } else if before > committed || after > committed {
            Slot::Newer
        } else {
            Slot::Unfinished
        }
    }

    /// The task on the CPU now and since when, as the last switch told.
    pub fn current_task(&self) -> CurrentTask {
        let h: [u8; header::SIZE] = self.bytes(0);
        CurrentTask {
            since_ns: u64_at(&h, header::TASK_SINCE),
            pid: i32_at(&h, header::TASK_PID),
            prio: i32_at(&h, header::TASK_PRIO),
        }
    }

    /// The name and priority of `pid` from the name table, when its entry
    /// is that task's (another task with the same low pid bits may have
    /// taken it since).
    pub fn name_of(&self, pid: i32) -> Option<(Comm, i32)> {
        let entry: [u8; name::SIZE] = self.bytes(Region::name_offset(pid));
        let comm: Comm = entry[name::COMM..name::COMM + 16].try_into().ok()?;
        // An entry is valid once a switch wrote it: a name, the pid matching.
        (i32_at(&entry, name::PID) == pid && comm[0] != 0)
            .then(|| (comm, i32_at(&entry, name::PRIO)))
    }

    /// The records of the CPU from the last one before `from_ns` to the
    /// newest, each checked by its commit word (see `layout.rs`), with the
    /// stretches in which events may be missing.
    pub fn snapshot(&self, from_ns: u64) -> Snapshot {
        self.snapshot_between(from_ns, u64::MAX)
    }

    /// `snapshot`, but without the records newer than `to_ns`: a collector
    /// that comes late to a window steps over what came after it reading
    /// only each record's time, instead of copying and checking thousands
    /// of records (a ring holds 32 ms at 256,000 events/s) while the oldest
    /// ones, the window's, are being overwritten. A time read torn there
    /// merely starts the careful walk earlier or later by one record: it
    /// is checked like every record kept.
    ///
    /// Every ring is read and their records merged: a window that spans a
    /// switch of rings (`layout.rs`) has records in several. Each ring must
    /// hold its part of the window (`RingPart::holds`).
    pub fn snapshot_between(&self, from_ns: u64, to_ns: u64) -> Snapshot {
        let mut merged = Snapshot {
            complete: true,
            ..Snapshot::default()
        };
        for k in 0..RINGS {
            let part = self.ring_part(k, from_ns, to_ns);
            merged.complete &= part.holds(from_ns, to_ns, self.stretches(k));
            merged.head += part.head;
            merged.records.extend(part.records);
            merged.doubts.extend(part.doubts);
        }
        // Nested programs may commit out of time order.
        merged.records.sort_by_key(RawRecord::time);
        // Each ring gave the last record it holds before the window; only
        // the newest of those is the window's predecessor (the others may
        // be from rings not written for seconds, their stretches' ends long
        // gone: an IRQ entry there would seem open ever since).
        let before = merged.records.iter().filter(|r| r.time() < from_ns).count();
        merged.records.drain(..before.saturating_sub(1));
        merged.overwritten = !merged.complete;
        merged
    }

    /// What ring `ring` holds of [from_ns, to_ns]: walked back from its
    /// newest record, as `snapshot_between` says.
    fn ring_part(&self, ring: usize, from_ns: u64, to_ns: u64) -> RingPart {
        let slots = self.layout.slots as u64;
        let head = self.head(ring);
        let oldest_kept = head.saturating_sub(slots);
        let mut start = head;
        // The time of the oldest record stepped over (newer than the window).
        let mut stepped_over: Option<u64> = None;
        while start > oldest_kept {
            let time = self.word(self.layout.record_offset(ring, start - 1) + record::TIME);
            if time <= to_ns {
                break;
            }
            stepped_over = Some(time);
            start -= 1;
        }
        let mut records: Vec<RawRecord> = Vec::new();
        let mut doubts = Vec::new();
        // The time of the newest whole record after a run of unfinished
        // ones (u64::MAX: they are the newest), while such a run is open.
        let mut unfinished_before: Option<u64> = None;
        let mut reached_back = false;
        // The time of the oldest record looked at (stepped over or whole).
        let mut oldest_seen = stepped_over.unwrap_or(u64::MAX);
        let mut newer_seen = false;
        for index in (oldest_kept..start).rev() {
            match self.slot(ring, index) {
                Slot::Whole(r) => {
                    oldest_seen = oldest_seen.min(r.time());
                    if let Some(newer) = unfinished_before.take() {
                        doubts.push(Doubt::between(r.time(), newer));
                    }
                    if r.elapsed() > INTERRUPTED_NS {
                        doubts.push(Doubt::interrupted(&r));
                    }
                    if r.time() > to_ns {
                        // After the window (a record whose time read torn
                        // above stopped the stepping over early).
                        stepped_over = Some(r.time());
                        continue;
                    }
                    records.push(r);
                    if r.time() < from_ns {
                        reached_back = true;
                        break;
                    }
                }
                Slot::Unfinished => {
                    let newer = records
                        .last()
                        .map(RawRecord::time)
                        .or(stepped_over)
                        .unwrap_or(u64::MAX);
                    unfinished_before.get_or_insert(newer);
                }
                // The buffer went round since `head` was read: this record
                // and all older ones are gone.
                Slot::Newer => {
                    newer_seen = true;
                    break;
                }
            }
        }
        if let Some(newer) = unfinished_before {
            // The oldest record looked at is unfinished: from the start.
            doubts.push(Doubt::between(0, newer));
        }
        // Everything since recording began is there when nothing was ever
        // overwritten: then the window merely started before the recorder.
        let from_the_start = oldest_kept == 0 && !newer_seen;
        RingPart {
            records,
            doubts,
            head,
            whole_back: reached_back || from_the_start,
            oldest_seen_ns: oldest_seen,
        }
    }
}

/// What one ring holds of a window.
struct RingPart {
    /// Whole records, newest first.
    records: Vec<RawRecord>,
    doubts: Vec<Doubt>,
    head: u64,
    /// It reaches back before the window's start, or to the start of
    /// recording: nothing it ever held of the window is gone.
    whole_back: bool,
    /// The time of its oldest record looked at: what it held before is gone.
    oldest_seen_ns: u64,
}

/// When a ring was written, as the freezes wrote it (`freeze.rs`): its
/// latest stretch from `since_ns` to `until_ns` (u64::MAX: written now),
/// its earlier stretches all ended by `earlier_end_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stretches {
    since_ns: u64,
    until_ns: u64,
    earlier_end_ns: u64,
}

impl RingPart {
    /// Whether this ring holds every record of [from_ns, to_ns] that was
    /// written into it (`stretches` says when it was written). When it
    /// does not reach back to the window, what it lost is older than
    /// `oldest_seen_ns`; that matters only where it was written during the
    /// window: its latest stretch, lost from its start when the oldest
    /// record seen is after `max(from_ns, since_ns)`, or an earlier one,
    /// when the window starts before they ended.
    fn holds(&self, from_ns: u64, to_ns: u64, stretches: Stretches) -> bool {
        if self.whole_back {
            return true;
        }
        let Stretches {
            since_ns,
            until_ns,
            earlier_end_ns,
        } = stretches;
        let latest_in_window = to_ns >= since_ns && from_ns < until_ns;
        let latest_kept = !latest_in_window || self.oldest_seen_ns <= from_ns.max(since_ns);
        latest_kept && from_ns >= earlier_end_ns
    }
}

/// A record as copied while its writer may be at work.
enum Slot {
    Whole(RawRecord),
    /// A newer record (the buffer went round).
    Newer,
    /// Reserved, not yet committed (or torn by the copy).
    Unfinished,
}

/// A stretch of a CPU's time in which events may be missing from its
/// records: around a record still being written (torn), or while a program
/// was interrupted (what interrupted it may have been skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doubt {
    pub from_ns: u64,
    pub to_ns: u64,
    /// A recorder program ran longer than INTERRUPTED_NS here: something
    /// interrupted it (an NMI or IRQ, or the hypervisor). Events were lost
    /// only if the kernel skipped a program meanwhile (its recursion
    /// misses grew); an unfinished record is a doubt whatever the misses.
    pub interrupted: bool,
}

impl Doubt {
    fn between(a: u64, b: u64) -> Doubt {
        Doubt {
            from_ns: a.min(b),
            to_ns: a.max(b),
            interrupted: false,
        }
    }

    fn interrupted(record: &RawRecord) -> Doubt {
        Doubt {
            interrupted: true,
            ..Doubt::between(record.time(), record.time() + record.elapsed())
        }
    }
}

/// What the last switch on a CPU told about its current task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CurrentTask {
    /// 0: no switch recorded yet.
    pub since_ns: u64,
    pub pid: i32,
    pub prio: i32,
}

/// A CPU's records, oldest first, as copied for one window.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Whole records only, in time order.
    pub records: Vec<RawRecord>,
    /// They reach back to before the time asked for (or to the start of
    /// recording).
    pub complete: bool,
    /// Records the window needed were overwritten before they were read:
    /// the spikes came too close together for the buffer.
    pub overwritten: bool,
    /// Records reserved on the CPU when the copy began.
    pub head: u64,
    /// Where events may be missing (`Doubt`), by time on this CPU.
    pub doubts: Vec<Doubt>,
}

impl Snapshot {
    /// Whether events may be missing somewhere from `from_ns` to `to_ns`.
    pub fn doubtful(&self, from_ns: u64, to_ns: u64) -> bool {
        self.doubts
            .iter()
            .any(|d| d.from_ns <= to_ns && d.to_ns >= from_ns)
    }
}

/// One record as written by a program (`layout::record`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord(pub [u8; RECORD_SIZE]);

impl RawRecord {
    pub fn time(&self) -> u64 {
        u64_at(&self.0, record::TIME)
    }

    /// How long its program ran (`record::ELAPSED`), ns.
    pub fn elapsed(&self) -> u64 {
        u64::from(u32::from_ne_bytes(
            self.0[record::ELAPSED..record::ELAPSED + 4]
                .try_into()
                .expect("4 bytes"),
        ))
    }

    fn int(&self, offset: usize) -> i32 {
        i32_at(&self.0, offset)
    }

    fn small(&self, offset: usize) -> u16 {
        u16::from_ne_bytes([self.0[offset], self.0[offset + 1]])
    }

    /// A record with these fields (the tests' writer, and the layout's
    /// definition in one place with the decoder).
    pub fn new(time: u64, pid: i32, kind: RecordKind, small: u16, operands: [i32; 4]) -> Self {
        let mut b = [0u8; RECORD_SIZE];
        b[record::TIME..record::TIME + 8].copy_from_slice(&time.to_ne_bytes());
        b[record::PID..record::PID + 4].copy_from_slice(&pid.to_ne_bytes());
        b[record::KIND..record::KIND + 2].copy_from_slice(&(kind as u16).to_ne_bytes());
        b[record::SMALL..record::SMALL + 2].copy_from_slice(&small.to_ne_bytes());
        for (at, value) in [record::A, record::B, record::C, record::D]
            .into_iter()
            .zip(operands)
        {
            b[at..at + 4].copy_from_slice(&value.to_ne_bytes());
        }
        RawRecord(b)
    }

    /// The same record, its program having run `ns` (tests).
    pub fn ran_for(mut self, ns: u32) -> Self {
        self.0[record::ELAPSED..record::ELAPSED + 4].copy_from_slice(&ns.to_ne_bytes());
        self
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// The names a record leaves out: task names (from the CPU's name table,
/// else /proc) and IRQ names (from /proc/irq), looked up once each.
#[derive(Default)]
pub struct Names {
    tasks: HashMap<i32, Comm>,
    irqs: HashMap<i32, IrqName>,
}

/// A task's name when nothing tells it.
pub const UNKNOWN_COMM: Comm = *b"<unknown>\0\0\0\0\0\0\0";

impl Names {
    /// The name of task `pid`, as its CPU's table or the system knows it.
    pub fn task(&mut self, pid: i32, cpu: usize, region: Option<&RegionView>) -> Comm {
        if let Some((comm, _)) = region.and_then(|r| r.name_of(pid)) {
            self.tasks.insert(pid, comm);
            return comm;
        }
        *self.tasks.entry(pid).or_insert_with(|| {
            if pid == 0 {
                return comm_of(&format!("swapper/{cpu}"));
            }
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map_or(UNKNOWN_COMM, |text| comm_of(text.trim_end_matches('\n')))
        })
    }

    /// An IRQ's name as `irq_handler_entry` gives it: its handler's name,
    /// the directory /proc/irq/N/ holds for each handler.
    pub fn irq(&mut self, irq: i32) -> IrqName {
        *self.irqs.entry(irq).or_insert_with(|| {
            let mut handlers: Vec<String> = std::fs::read_dir(format!("/proc/irq/{irq}"))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            handlers.sort();
            // A shared line has several handlers: name them all.
            name_of(&handlers.join(","))
        })
    }

    /// Fixed names (tests).
    #[cfg(test)]
    pub fn known(tasks: &[(i32, &str)], irqs: &[(i32, &str)]) -> Names {
        Names {
            tasks: tasks.iter().map(|(p, n)| (*p, comm_of(n))).collect(),
            irqs: irqs.iter().map(|(i, n)| (*i, name_of(n))).collect(),
        }
    }
}

fn comm_of(text: &str) -> Comm {
    let mut comm = [0u8; 16];
    let n = text.len().min(15);
    comm[..n].copy_from_slice(&text.as_bytes()[..n]);
    comm
}

fn name_of(text: &str) -> IrqName {
    let mut out = [0u8; 32];
    let n = text.len().min(31);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    out
}

/// The event a record of `cpu` stands for (None: not a record, e.g. a slot
/// never written).
pub fn decode(
    r: &RawRecord,
    cpu: usize,
    names: &mut Names,
    region: Option<&RegionView>,
) -> Option<TraceEvent> {
    let (a, b, c, d) = (
        r.int(record::A),
        r.int(record::B),
        r.int(record::C),
        r.int(record::D),
    );
    let kind = match RecordKind::from_code(r.small(record::KIND))? {
        RecordKind::Switch => Kind::Switch(Switch {
            prev_pid: a,
            prev_prio: c & 0xffff,
            prev_state: u64::from(d as u32),
            prev_comm: names.task(a, cpu, region),
            next_pid: b,
            next_prio: (c >> 16) & 0xffff,
            next_comm: names.task(b, cpu, region),
        }),
        RecordKind::Wakeup => Kind::Wakeup {
            pid: a,
            prio: b,
            target_cpu: c,
        },
        RecordKind::IrqEntry => Kind::IrqEntry {
            irq: a,
            name: names.irq(a),
        },
        RecordKind::IrqExit => Kind::IrqExit { irq: a },
        RecordKind::SoftirqEntry => Kind::SoftirqEntry { vec: a as u32 },
        RecordKind::SoftirqExit => Kind::SoftirqExit { vec: a as u32 },
        RecordKind::VectorEntry => Kind::VectorEntry {
            vector: r.small(record::SMALL) as u8,
        },
        RecordKind::VectorExit => Kind::VectorExit {
            vector: r.small(record::SMALL) as u8,
        },
        RecordKind::Nmi => Kind::Nmi {
            delta_ns: u64::from(a as u32),
            handled: b,
        },
    };
    Some(TraceEvent {
        time: r.time(),
        cpu,
        pid: r.int(record::PID),
        kind,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A region in ordinary memory, written the way the programs write it.
    pub struct FakeRegion {
        pub words: Vec<u64>,
        pub layout: Region,
        /// The ring written.
        pub ring: usize,
    }

    impl FakeRegion {
        /// Ring 0 written since time 1 (as `load` starts it).
        pub fn new(slots: usize) -> FakeRegion {
            let layout = Region::with_slots(slots);
            let mut region = FakeRegion {
                words: vec![0; layout.size() / 8],
                layout,
                ring: 0,
            };
            region.words[layout.ring_field(0, ring::SINCE) / 8] = 1;
            region
        }

        /// Switches the writing to ring `ring` at `since`, as a freeze does.
        pub fn switch_to(&mut self, ring: usize, since: u64) {
            let field = |k: usize, f: usize| self.layout.ring_field(k, f) / 8;
            let left = self.words[field(ring, super::ring::UNTIL)];
            self.words[field(ring, super::ring::EARLIER)] = left;
            self.words[field(ring, super::ring::UNTIL)] = 0;
            self.words[field(ring, super::ring::SINCE)] = since;
            self.words[field(self.ring, super::ring::UNTIL)] = since;
            self.ring = ring;
            self.words[header::RING / 8] = ring as u64;
        }

        fn put(&mut self, offset: usize, bytes: &[u8]) {
            // Only the words the bytes touch.
            let (first, last) = (offset / 8, (offset + bytes.len()).div_ceil(8));
            let mut raw: Vec<u8> = self.words[first..last]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect();
            let at = offset - first * 8;
            raw[at..at + bytes.len()].copy_from_slice(bytes);
            for (w, chunk) in self.words[first..last].iter_mut().zip(raw.chunks(8)) {
                *w = u64::from_ne_bytes(chunk.try_into().unwrap());
            }
        }

        /// Appends a record as a program does: reserve, write, commit.
        pub fn push(&mut self, r: RawRecord) {
            let index = self.reserve();
            self.commit(index, r);
        }

        /// Reserves the next record as a program does (the head, then the
        /// record's commit word cleared): its number.
        pub fn reserve(&mut self) -> u64 {
            let head = self.layout.ring_field(self.ring, ring::HEAD) / 8;
            let index = self.words[head];
            self.words[head] = index + 1;
            self.set_seq(index, 0);
            index
        }

        /// Writes record `index` and commits it.
        pub fn commit(&mut self, index: u64, r: RawRecord) {
            self.put(self.layout.record_offset(self.ring, index), &r.0);
            self.set_seq(index, index + 1);
        }

        /// Sets the commit word of the slot of record `index`.
        pub fn set_seq(&mut self, index: u64, seq: u64) {
            self.words[(self.layout.record_offset(self.ring, index) + record::SEQ) / 8] = seq;
        }

        pub fn name(&mut self, pid: i32, prio: i32, comm: &str) {
            let at = Region::name_offset(pid);
            self.put(at + name::PID, &pid.to_ne_bytes());
            self.put(at + name::PRIO, &prio.to_ne_bytes());
            self.put(at + name::COMM, &comm_of(comm));
        }

        pub fn view(&self) -> RegionView {
            // SAFETY: the words are aligned and outlive the view in the tests.
            unsafe { RegionView::new(self.words.as_ptr().cast(), self.layout) }
        }
    }

    const CPU: usize = 1;

    fn switch(time: u64, prev: (i32, i32, i32), next: (i32, i32)) -> RawRecord {
        RawRecord::new(
            time,
            prev.0,
            RecordKind::Switch,
            0,
            [prev.0, next.0, prev.1 | next.1 << 16, prev.2],
        )
    }

    fn events(region: &FakeRegion, from: u64, names: &mut Names) -> (Vec<TraceEvent>, Snapshot) {
        let view = region.view();
        let snap = view.snapshot(from);
        let events = snap
            .records
            .iter()
            .filter_map(|r| decode(r, CPU, names, Some(&view)))
            .collect();
        (events, snap)
    }

    #[test]
    fn decodes_every_kind_exactly() {
        let mut region = FakeRegion::new(64);
        region.name(9, 19, "spike-maker");
        region.name(0, 120, "swapper/1");
        region.push(switch(1_000, (0, 120, 0), (9, 19)));
        region.push(RawRecord::new(
            1_100,
            9,
            RecordKind::Wakeup,
            0,
            [42, 49, 1, 0],
        ));
        region.push(RawRecord::new(
            1_200,
            9,
            RecordKind::IrqEntry,
            0,
            [24, 0, 0, 0],
        ));
        region.push(RawRecord::new(
            1_300,
            9,
            RecordKind::IrqExit,
            0,
            [24, 0, 0, 0],
        ));
        region.push(RawRecord::new(
            1_400,
            9,
            RecordKind::SoftirqEntry,
            0,
            [3, 0, 0, 0],
        ));
        region.push(RawRecord::new(
            1_500,
            9,
            RecordKind::SoftirqExit,
            0,
            [3, 0, 0, 0],
        ));
        region.push(RawRecord::new(
            1_600,
            -1,
            RecordKind::VectorEntry,
            2,
            [0; 4],
        ));
        region.push(RawRecord::new(1_700, -1, RecordKind::VectorExit, 2, [0; 4]));
        region.push(switch(1_800, (9, 19, 0x100), (42, 49)));
        region.push(RawRecord::new(
            1_900,
            42,
            RecordKind::Nmi,
            0,
            [41_500, 1, 0, 0],
        ));
        let mut names = Names::known(&[(42, "sampling-1")], &[(24, "virtio0-input.0")]);
        let (events, snap) = events(&region, 0, &mut names);
        assert!(snap.complete && !snap.overwritten);
        assert_eq!(snap.head, 10);
        let kinds: Vec<Kind> = events.iter().map(|e| e.kind).collect();
        let comm = |s: &str| comm_of(s);
        assert_eq!(
            kinds,
            vec![
                Kind::Switch(Switch {
                    prev_pid: 0,
                    prev_prio: 120,
                    prev_state: 0,
                    prev_comm: comm("swapper/1"),
                    next_pid: 9,
                    next_prio: 19,
                    next_comm: comm("spike-maker"),
                }),
                Kind::Wakeup {
                    pid: 42,
                    prio: 49,
                    target_cpu: 1
                },
                Kind::IrqEntry {
                    irq: 24,
                    name: name_of("virtio0-input.0")
                },
                Kind::IrqExit { irq: 24 },
                Kind::SoftirqEntry { vec: 3 },
                Kind::SoftirqExit { vec: 3 },
                Kind::VectorEntry { vector: 2 },
                Kind::VectorExit { vector: 2 },
                Kind::Switch(Switch {
                    prev_pid: 9,
                    prev_prio: 19,
                    prev_state: 0x100,
                    prev_comm: comm("spike-maker"),
                    next_pid: 42,
                    next_prio: 49,
                    next_comm: comm("sampling-1"),
                }),
                Kind::Nmi {
                    delta_ns: 41_500,
                    handled: 1
                },
            ]
        );
        let times: Vec<u64> = events.iter().map(|e| e.time).collect();
        assert_eq!(times, (1..=10).map(|i| 900 + i * 100).collect::<Vec<_>>());
        assert!(events.iter().all(|e| e.cpu == CPU));
        assert_eq!(events[1].pid, 9);
        assert_eq!(events[6].pid, -1);
    }

    #[test]
    fn a_slot_never_written_is_no_event() {
        let mut names = Names::default();
        let empty = RawRecord([0; RECORD_SIZE]);
        assert_eq!(decode(&empty, CPU, &mut names, None), None);
    }

    #[test]
    fn a_snapshot_reaches_back_to_the_last_record_before_its_start() {
        let mut region = FakeRegion::new(64);
        for t in 1..=10u64 {
            region.push(RawRecord::new(
                t * 100,
                5,
                RecordKind::SoftirqEntry,
                0,
                [1, 0, 0, 0],
            ));
        }
        let snap = region.view().snapshot(550);
        let times: Vec<u64> = snap.records.iter().map(RawRecord::time).collect();
        assert_eq!(times, vec![500, 600, 700, 800, 900, 1000]);
        assert!(snap.complete && !snap.overwritten);
        // Asked for before the first record: all of them, complete (nothing
        // was ever overwritten).
        let snap = region.view().snapshot(50);
        assert_eq!(snap.records.len(), 10);
        assert!(snap.complete && !snap.overwritten);
    }

    #[test]
    fn a_snapshot_between_keeps_nothing_newer_than_the_window() {
        let mut region = FakeRegion::new(64);
        for t in 1..=10u64 {
            region.push(softirq(t * 100));
        }
        // An unfinished record after the window is no doubt about it.
        let late = region.reserve();
        region.push(softirq(1_200));
        let snap = region.view().snapshot_between(350, 620);
        assert_eq!(times(&snap), vec![300, 400, 500, 600]);
        assert!(snap.complete && !snap.overwritten);
        assert!(!snap.doubtful(350, 620), "{:?}", snap.doubts);
        // One inside the window is, between its neighbours.
        let mut region = FakeRegion::new(64);
        region.push(softirq(100));
        let _inside = region.reserve();
        region.push(softirq(300));
        region.push(softirq(400));
        let snap = region.view().snapshot_between(0, 350);
        assert_eq!(times(&snap), vec![100, 300]);
        assert_eq!(
            snap.doubts,
            vec![Doubt {
                from_ns: 100,
                to_ns: 300,
                interrupted: false,
            }]
        );
        // The window's end before every record: only the one before it.
        let snap = region.view().snapshot_between(0, 50);
        assert!(snap.records.is_empty());
        let _ = late;
    }

    #[test]
    fn a_wrapped_buffer_that_no_longer_reaches_the_window_says_overwritten() {
        let mut region = FakeRegion::new(64);
        for t in 1..=200u64 {
            region.push(RawRecord::new(
                t * 100,
                5,
                RecordKind::SoftirqEntry,
                0,
                [1, 0, 0, 0],
            ));
        }
        // The last 64 records: 13,700 ns to 20,000 ns.
        let snap = region.view().snapshot(15_000);
        assert!(snap.complete && !snap.overwritten);
        assert_eq!(snap.records.first().unwrap().time(), 14_900);
        let snap = region.view().snapshot(10_000);
        assert!(!snap.complete && snap.overwritten);
        assert_eq!(snap.records.len(), 64);
        assert_eq!(snap.records.first().unwrap().time(), 13_700);
        assert_eq!(snap.records.last().unwrap().time(), 20_000);
        assert!(snap.doubts.is_empty());
    }

    /// Records every 100 ns from `from` to `to` (inclusive).
    fn fill(region: &mut FakeRegion, from: u64, to: u64) {
        for t in (from..=to).step_by(100) {
            region.push(softirq(t));
        }
    }

    #[test]
    fn a_frozen_window_stays_whole_while_the_ring_written_wraps() {
        // A spike's window is 4,000..5,000 ns; 1,000 records come after.
        let late_collector = |freeze: bool| {
            let mut region = FakeRegion::new(64);
            fill(&mut region, 100, 5_000);
            if freeze {
                region.switch_to(1, 5_050);
            }
            fill(&mut region, 5_100, 105_000);
            region.view().snapshot_between(4_000, 5_000)
        };
        let snap = late_collector(true);
        assert!(snap.complete && !snap.overwritten);
        assert_eq!(times(&snap), (39..=50).map(|t| t * 100).collect::<Vec<_>>());
        // Without the freeze the same window was overwritten long ago.
        let snap = late_collector(false);
        assert!(!snap.complete && snap.overwritten);
        assert!(times(&snap).iter().all(|&t| t > 5_000) || snap.records.is_empty());
    }

    #[test]
    fn a_window_across_a_switch_is_merged_from_both_rings() {
        let mut region = FakeRegion::new(64);
        fill(&mut region, 100, 3_000);
        region.switch_to(1, 3_050);
        fill(&mut region, 3_100, 4_000);
        let snap = region.view().snapshot_between(2_500, 3_500);
        assert!(snap.complete);
        assert_eq!(times(&snap), (24..=35).map(|t| t * 100).collect::<Vec<_>>());
        assert_eq!(snap.head, 30 + 10);
        // A window after the switch: ring 0's last record (3,000) is older
        // than ring 1's last before the window (3,400): only that one.
        let snap = region.view().snapshot_between(3_450, 3_600);
        assert_eq!(times(&snap), [3_400, 3_500, 3_600]);
    }

    #[test]
    fn a_window_in_the_lost_start_of_the_ring_written_says_overwritten() {
        // Ring 1 written from 5,050 ns and wrapped: its first records,
        // 5,100 to 11,400 ns, are gone; a window there was not frozen.
        let mut region = FakeRegion::new(64);
        fill(&mut region, 100, 5_000);
        region.switch_to(1, 5_050);
        fill(&mut region, 5_100, 17_800);
        let snap = region.view().snapshot_between(6_000, 7_000);
        assert!(snap.overwritten);
        // A window of ring 0's stretch is whole, ring 1's loss after it.
        let snap = region.view().snapshot_between(4_500, 5_000);
        assert!(snap.complete, "{:?}", times(&snap));
        // A window across the switch lost ring 1's part.
        assert!(region.view().snapshot_between(4_900, 5_500).overwritten);
    }

    #[test]
    fn a_ring_that_went_round_between_two_later_spikes_does_not_flag_an_older_window() {
        // Spike 1's window 4,000..5,000 in ring 0; ring 1 written from
        // 5,050 and went round before spike 2 froze it at 20,050; ring 2
        // written since. Ring 1 holds nothing of spike 1's window.
        let mut region = FakeRegion::new(64);
        fill(&mut region, 100, 5_000);
        region.switch_to(1, 5_050);
        fill(&mut region, 5_100, 20_000);
        region.switch_to(2, 20_050);
        fill(&mut region, 20_100, 21_000);
        let snap = region.view().snapshot_between(4_000, 5_000);
        assert!(snap.complete, "{:?}", times(&snap));
        // Ring 0 written again from 30,050: what it held from before is
        // older than 5,050, when it was left.
        region.switch_to(0, 30_050);
        fill(&mut region, 30_100, 40_000);
        assert!(region.view().snapshot_between(20_500, 21_000).complete);
        // A window in its lost stretch is not.
        assert!(region.view().snapshot_between(3_000, 4_000).overwritten);
    }

    fn softirq(time: u64) -> RawRecord {
        RawRecord::new(time, 5, RecordKind::SoftirqEntry, 0, [1, 0, 0, 0])
    }

    fn times(snap: &Snapshot) -> Vec<u64> {
        snap.records.iter().map(RawRecord::time).collect()
    }

    #[test]
    fn a_record_whose_writer_was_interrupted_is_placed_between_its_neighbours() {
        // A program reserves record 2 and is interrupted; the interrupting
        // programs write records 3 and 4; another event follows (5).
        let mut region = FakeRegion::new(64);
        region.push(softirq(100));
        region.push(softirq(200));
        let outer = region.reserve();
        region.push(softirq(310));
        region.push(softirq(320));
        region.push(softirq(400));
        let snap = region.view().snapshot(0);
        assert_eq!(times(&snap), vec![100, 200, 310, 320, 400]);
        assert!(snap.complete && !snap.overwritten);
        // Exactly the stretch between the torn record's neighbours.
        assert_eq!(
            snap.doubts,
            vec![Doubt {
                from_ns: 200,
                to_ns: 310,
                interrupted: false,
            }]
        );
        assert!(snap.doubtful(250, 260) && snap.doubtful(0, 200) && snap.doubtful(310, 900));
        assert!(!snap.doubtful(0, 199) && !snap.doubtful(311, 900));
        // Once it commits, nothing is in doubt and the records are in time
        // order although it committed last.
        region.commit(outer, softirq(300));
        let snap = region.view().snapshot(0);
        assert_eq!(times(&snap), vec![100, 200, 300, 310, 320, 400]);
        assert!(snap.doubts.is_empty());
    }

    #[test]
    fn the_newest_record_still_being_written_leaves_the_present_in_doubt() {
        let mut region = FakeRegion::new(64);
        region.push(softirq(100));
        region.reserve();
        let snap = region.view().snapshot(0);
        assert_eq!(times(&snap), vec![100]);
        assert_eq!(
            snap.doubts,
            vec![Doubt {
                from_ns: 100,
                to_ns: u64::MAX,
                interrupted: false,
            }]
        );
        // A record reserved whose slot still holds the commit word of the
        // record before it in that slot (record i - slots) is unfinished too.
        let mut region = FakeRegion::new(64);
        for t in 1..=64u64 {
            region.push(softirq(t * 100));
        }
        let index = region.reserve();
        region.set_seq(index, index + 1 - 64);
        let snap = region.view().snapshot(0);
        assert_eq!(snap.records.len(), 63, "record 0 is being overwritten");
        assert_eq!(snap.doubts.len(), 1);
        assert_eq!(snap.doubts[0].from_ns, 6_400);
    }

    #[test]
    fn an_interrupted_program_leaves_its_own_run_in_doubt() {
        let mut region = FakeRegion::new(64);
        region.push(softirq(1_000));
        region.push(softirq(2_000).ran_for(5_000));
        region.push(softirq(9_000).ran_for(INTERRUPTED_NS as u32));
        let snap = region.view().snapshot(0);
        assert_eq!(times(&snap), vec![1_000, 2_000, 9_000]);
        assert_eq!(
            snap.doubts,
            vec![Doubt {
                from_ns: 2_000,
                to_ns: 7_000,
                interrupted: true,
            }]
        );
        assert!(snap.doubtful(6_000, 8_000) && !snap.doubtful(7_001, 9_000));
    }

    #[test]
    fn a_record_overwritten_during_the_copy_ends_the_window() {
        // 64 slots, 80 records: 16..79 kept. The writer of record 80 has
        // committed into record 16's slot after the head was read.
        let mut region = FakeRegion::new(64);
        for t in 1..=80u64 {
            region.push(softirq(t * 100));
        }
        region.set_seq(16, 16 + 64 + 1);
        let snap = region.view().snapshot(0);
        assert!(snap.overwritten && !snap.complete);
        assert_eq!(snap.records.len(), 63);
        assert_eq!(snap.records.first().unwrap().time(), 1_800);
        assert!(snap.doubts.is_empty());
    }

    #[test]
    fn names_come_from_the_table_only_when_it_is_that_task_s_entry() {
        let mut region = FakeRegion::new(64);
        region.name(9, 19, "spike-maker");
        let view = region.view();
        assert_eq!(view.name_of(9), Some((comm_of("spike-maker"), 19)));
        // pid 265 shares pid 9's entry: not its name.
        assert_eq!(view.name_of(9 + 256), None);
        assert_eq!(view.name_of(10), None);
        let mut names = Names::default();
        // Not in the table: the system's name (this process's own).
        let me = std::process::id() as i32;
        let own = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert_eq!(
            crate::rt::tracefs::format::text_of(&names.task(me, CPU, Some(&view))),
            own.trim_end()
        );
        assert_eq!(names.task(0, 3, None), comm_of("swapper/3"));
        assert_eq!(names.task(-7, 3, None), UNKNOWN_COMM);
    }

    #[test]
    fn the_current_task_is_read_from_the_header() {
        let mut region = FakeRegion::new(64);
        assert_eq!(region.view().current_task(), CurrentTask::default());
        region.put(header::TASK_SINCE, &5_000u64.to_ne_bytes());
        region.put(header::TASK_PID, &9i32.to_ne_bytes());
        region.put(header::TASK_PRIO, &19i32.to_ne_bytes());
        assert_eq!(
            region.view().current_task(),
            CurrentTask {
                since_ns: 5_000,
                pid: 9,
                prio: 19
            }
        );
    }
}
