//! Reading one CPU's region of the flight recorder (see `layout.rs`) while
//! its programs keep writing it, and decoding its records into the
//! `TraceEvent`s that `spikes::attribution` consumes.

use super::layout::{
    INTERRUPTED_NS, Kind as RecordKind, RECORD_SIZE, Region, header, name, record,
};
use crate::probes::ring::AreaView;
use crate::rt::tracefs::events::{Comm, IrqName, Kind, Switch, TraceEvent};
use std::collections::HashMap;

/// One CPU's region in memory the kernel writes concurrently: every read
/// is a volatile load of an aligned 64-bit word (`ring::AreaView`).
pub struct RegionView {
    area: AreaView,
    layout: Region,
}

impl RegionView {
    /// # Safety
    /// `base` must be 8-byte aligned and point to `layout.size()` readable
    /// bytes that stay mapped for the view's lifetime.
    pub unsafe fn new(base: *const u8, layout: Region) -> RegionView {
        RegionView {
            // SAFETY: the caller's promise.
            area: unsafe { AreaView::new(base, layout.size()) },
            layout,
        }
    }

    pub fn layout(&self) -> Region {
        self.layout
    }

    /// The word at `offset` (the layout's offsets are multiples of 8).
    fn word(&self, offset: usize) -> u64 {
        self.area.u64_at(offset)
    }

    fn bytes<const N: usize>(&self, offset: usize) -> [u8; N] {
        self.area.bytes(offset)
    }

    /// Records reserved so far. The fence keeps the record loads that
    /// follow after it.
    pub fn head(&self) -> u64 {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let head = self.word(header::HEAD);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        head
    }

    /// Records whose program was interrupted so far (`header::INTERRUPTED`).
    pub fn interrupted(&self) -> u64 {
        self.word(header::INTERRUPTED)
    }

    /// Record `index`, copied between two loads of its commit word (see
    /// `layout.rs`): whole, newer (overwritten), or still being written.
    fn slot(&self, index: u64) -> Slot {
        let offset = self.layout.record_offset(index);
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
            // The record of an earlier lap the slot still holds, whole.
            let holds = (before == after && before != 0).then(|| before - 1);
            Slot::Unfinished { holds }
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
    /// only each record's time and commit word, instead of copying and
    /// checking thousands of records while the oldest ones, the window's,
    /// may be overwritten. A time read torn there merely starts the
    /// careful walk earlier or later by one record: it is checked like
    /// every record kept.
    ///
    /// The walk goes back until it reaches a record before `from_ns` or
    /// finds one overwritten, not merely `slots` records: while a window is
    /// held (`hold.rs`) the programs refuse to write over it, so a slot may
    /// still hold a record of an earlier lap, read at its own number. A
    /// record number left unwritten (refused, or being written) is a gap,
    /// placed between its neighbours (`Doubt`); a run of gaps as long as
    /// the ring is stepped over to the newest record a slot still holds.
    pub fn snapshot_between(&self, from_ns: u64, to_ns: u64) -> Snapshot {
        let head = self.head();
        let (start, mut stepped_over) = self.newest_within(head, to_ns);
        let mut records: Vec<RawRecord> = Vec::new();
        let mut doubts = Vec::new();
        // The time of the newest whole record after a run of unfinished
        // ones (u64::MAX: they are the newest), while such a run is open.
        let mut unfinished_before: Option<u64> = None;
        let mut gaps = GapRun::default();
        let mut end = WalkEnd::FromTheStart;
        let mut index = start;
        while index > 0 {
            index -= 1;
            match self.slot(index) {
                Slot::Whole(r) => {
                    gaps = GapRun::default();
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
                        end = WalkEnd::ReachedBack;
                        break;
                    }
                }
                Slot::Unfinished { holds } => {
                    let newer = records
                        .last()
                        .map(RawRecord::time)
                        .or(stepped_over)
                        .unwrap_or(u64::MAX);
                    unfinished_before.get_or_insert(newer);
                    match gaps.one_more(holds, self.layout.slots as u64) {
                        GapStep::Go => {}
                        // Past every slot: on at the newest record one holds.
                        GapStep::SkipTo(newest) => index = newest + 1,
                        GapStep::Nothing => {
                            end = WalkEnd::Overwritten;
                            break;
                        }
                    }
                }
                // A newer record took the slot: this record and all older
                // ones are gone (the buffer went round, or, below the
                // newest `slots` records, it simply ends there).
                Slot::Newer => {
                    end = WalkEnd::Overwritten;
                    break;
                }
            }
        }
        if let Some(newer) = unfinished_before {
            // The oldest record looked at is unfinished: from the start.
            doubts.push(Doubt::between(0, newer));
        }
        // Nested programs may commit out of time order.
        records.reverse();
        records.sort_by_key(RawRecord::time);
        // Everything since recording began is there when the walk reached
        // record 0: then the window merely started before the recorder.
        let complete = end != WalkEnd::Overwritten;
        Snapshot {
            records,
            complete,
            overwritten: !complete,
            head,
            doubts,
        }
    }

    /// Where the careful walk starts: past the records newer than `to_ns`
    /// among the newest `slots`, each whole by its commit word; and the
    /// time of the oldest one stepped over.
    fn newest_within(&self, head: u64, to_ns: u64) -> (u64, Option<u64>) {
        let oldest_kept = head.saturating_sub(self.layout.slots as u64);
        let mut start = head;
        let mut stepped_over = None;
        while start > oldest_kept {
            let at = self.layout.record_offset(start - 1);
            let time = self.word(at + record::TIME);
            // A slot that holds another record (an earlier lap kept by a
            // hold, or one being written) ends the stepping over.
            if time <= to_ns || self.word(at + record::SEQ) != start {
                break;
            }
            stepped_over = Some(time);
            start -= 1;
        }
        (start, stepped_over)
    }
}

/// How a walk back through the records ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WalkEnd {
    /// At a record before the window.
    ReachedBack,
    /// At record 0: nothing was ever lost.
    FromTheStart,
    /// At a slot a newer record took: the older records are gone.
    Overwritten,
}

/// A run of record numbers with no record (`Slot::Unfinished`), walked
/// back: once it is as long as the ring, every slot holds an older record
/// than the numbers walked, and the walk goes on at the newest of them.
#[derive(Debug, Default)]
struct GapRun {
    length: u64,
    /// The newest record number a slot of the run holds.
    newest_held: Option<u64>,
}

enum GapStep {
    Go,
    SkipTo(u64),
    /// No slot holds a record.
    Nothing,
}

impl GapRun {
    /// One more gap, whose slot holds record `holds` (None: being written).
    fn one_more(&mut self, holds: Option<u64>, slots: u64) -> GapStep {
        self.length += 1;
        self.newest_held = self.newest_held.max(holds);
        if self.length < slots {
            return GapStep::Go;
        }
        let step = self.newest_held.map_or(GapStep::Nothing, GapStep::SkipTo);
        *self = GapRun::default();
        step
    }
}

/// A record as copied while its writer may be at work.
enum Slot {
    Whole(RawRecord),
    /// A newer record (the buffer went round).
    Newer,
    /// Reserved, not yet committed (or torn by the copy), or left
    /// unwritten (refused while held: `hold.rs`); `holds`: the earlier
    /// record the slot still holds, whole.
    Unfinished {
        holds: Option<u64>,
    },
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
    }

    impl FakeRegion {
        pub fn new(slots: usize) -> FakeRegion {
            let layout = Region::with_slots(slots);
            FakeRegion {
                words: vec![0; layout.size() / 8],
                layout,
            }
        }

        fn put(&mut self, offset: usize, bytes: &[u8]) {
            let mut raw: Vec<u8> = self.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            raw[offset..offset + bytes.len()].copy_from_slice(bytes);
            for (w, chunk) in self.words.iter_mut().zip(raw.chunks(8)) {
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
            let index = self.words[header::HEAD / 8];
            self.words[header::HEAD / 8] = index + 1;
            self.set_seq(index, 0);
            index
        }

        /// What a program refused while held does: the record number is
        /// taken, its slot left as it was.
        pub fn refuse(&mut self) {
            self.words[header::HEAD / 8] += 1;
        }

        /// Writes record `index` and commits it.
        pub fn commit(&mut self, index: u64, r: RawRecord) {
            self.put(self.layout.record_offset(index), &r.0);
            self.set_seq(index, index + 1);
        }

        /// Sets the commit word of the slot of record `index`.
        pub fn set_seq(&mut self, index: u64, seq: u64) {
            self.words[(self.layout.record_offset(index) + record::SEQ) / 8] = seq;
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
        // Record 0 is whole until its writer clears the commit word.
        assert_eq!(snap.records.len(), 64);
        assert_eq!(snap.doubts.len(), 1);
        assert_eq!(snap.doubts[0].from_ns, 6_400);
    }

    #[test]
    fn records_a_hold_kept_are_read_beyond_the_newest_slots_record_numbers() {
        // 100 records (36..99 in the 64 slots), then 30 refused while a
        // window was held: their slots (36..63, 0, 1) still hold records
        // 36..65, older than the newest 64 record numbers (66..129).
        let mut region = FakeRegion::new(64);
        for t in 0..100u64 {
            region.push(softirq(1_000 + t * 100));
        }
        for _ in 0..30 {
            region.refuse();
        }
        let snap = region.view().snapshot_between(1_000 + 40 * 100, u64::MAX);
        assert!(snap.complete && !snap.overwritten);
        assert_eq!(snap.records.len(), 61);
        assert_eq!(snap.records[0].time(), 1_000 + 39 * 100);
        // The refused numbers: events missing after the newest record.
        assert_eq!(
            snap.doubts,
            vec![Doubt {
                from_ns: 1_000 + 99 * 100,
                to_ns: u64::MAX,
                interrupted: false,
            }]
        );
        // Further back than the slots hold: overwritten.
        let snap = region.view().snapshot_between(1_000, u64::MAX);
        assert!(snap.overwritten);
        assert_eq!(snap.records.first().unwrap().time(), 1_000 + 36 * 100);
    }

    #[test]
    fn a_run_of_refused_records_longer_than_the_ring_is_stepped_over() {
        let mut region = FakeRegion::new(64);
        for t in 0..100u64 {
            region.push(softirq(1_000 + t * 100));
        }
        for _ in 0..1_000 {
            region.refuse();
        }
        let snap = region
            .view()
            .snapshot_between(1_000 + 50 * 100, 1_000 + 60 * 100);
        assert!(snap.complete && !snap.overwritten);
        assert_eq!(
            times(&snap),
            (49..=60).map(|t| 1_000 + t * 100).collect::<Vec<_>>()
        );
        assert!(!snap.doubtful(1_000 + 49 * 100, 1_000 + 99 * 100 - 1));
        assert!(snap.doubtful(1_000 + 99 * 100 + 1, u64::MAX));
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
