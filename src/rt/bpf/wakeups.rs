//! The timer breakdown in the kernel: small programs, generated here at run
//! time, write each wake-up of a sampling thread into its CPU's slot of an
//! mmapable array; the thread reads its slot after waking, with plain loads.
//! Nothing leaves the kernel per event and no system call is made per sample.
//!
//! A slot (128 bytes, two cache lines, one slot per CPU so two sampling
//! threads never share a line):
//!
//! | offset | written by | value |
//! |---|---|---|
//! | 0 | user space | the sampling thread's tid |
//! | 8 | user space | the first expiry of its schedule (ns) |
//! | 16 | user space | its period (ns) |
//! | 24 | `hrtimer_start` (`Arming::Watched` only) | the timer the thread armed last (address) |
//! | 32 | `hrtimer_start` (`Arming::Watched` only) | that arming's soft expiry |
//! | 40 | every writer | sequence: odd while a writer is inside |
//! | 48 | `hrtimer_expire_entry` | the expiry of the wake-up recorded below |
//! | 56 | `hrtimer_expire_entry` | its `now`: the timer interrupt handler runs |
//! | 64 | switch-in hook | the expiry of the wake-up the stamp below is for |
//! | 72 | switch-in hook | the thread is back on its CPU (ktime) |
//! | 80 | `hrtimer_start` (`Arming::Watched` only) | the thread's task (address, compared only) |
//!
//! Every writer of a slot runs on the slot's CPU, so the sampling thread,
//! pinned there, sees a program's writes whole or not at all, unless a
//! program in an interrupt writes between two of its loads: the sequence
//! word, moved by every writer, tells. A program can itself be interrupted
//! by another (a raw tracepoint runs with interrupts on): that is why the
//! switch-in stamp carries the expiry it was taken for, instead of trusting
//! that the record did not change under it.
//!
//! No `sched_waking` program: the switch-in is seen directly, and the
//! figures (IRQ, thread, user) do not need the wake-up itself, while a
//! program on it would run for every wake-up of every task on the machine.
//!
//! The events and why each, as the tracefs breakdown (`tracefs::wakeups`)
//! pairs them: the expiry of the thread's timer (on its schedule, not
//! before the soft expiry), then its return to the CPU. Where the kernel
//! has the scheduler's exit hook and the timer's soft expiry can be read
//! from the expiry's arguments, that is all (`Arming::Inferred`): no
//! program runs when a timer is armed, which the idle loop does on the
//! measured CPU too. Otherwise a program on the thread's own arming (its
//! pid, on its schedule: the RT bandwidth timer it arms when it becomes
//! SCHED_FIFO is not a wake-up) remembers the timer, and the expiry must be
//! that very timer's (same address) (`Arming::Watched`).
//!
//! The arming and expiry programs run on the cheapest of three paths the
//! kernel takes (`EventPath`): BTF-typed raw tracepoints, plain raw
//! tracepoints, classic tracepoints; the classic ones cost about 70-80 ns
//! more per event (the kernel builds the trace record first;
//! docs/measurement.md). All three keep the same filters, records and
//! sequence protocol: only how a value is read differs (`EventAccess`).
//!
//! Unlike the tracefs reader, a program cannot tell an arming from an
//! interrupt that ran over the thread (the tick re-arming itself): a
//! classic tracepoint program may not read the record's common fields, flags
//! included (the verifier refuses any access below byte 8), and a raw one
//! has no record. It does not need to: such a timer is taken only if its expiry falls on the thread's
//! schedule to the nanosecond, and then it fires in the same interrupt as
//! the thread's own timer, with the same `now`, so the IRQ figure is the
//! same.
//!
//! The switch-in hook: this kernel emits no `sched_switch` (tracefs, perf or
//! BPF, raw or not) when a CPU leaves its idle task, so on an idle CPU, the
//! normal case of an isolated real-time CPU, the switch was never seen. The
//! raw tracepoint `sched_exit_tp` (Linux 6.17, the scheduler's own hook at
//! the end of `__schedule()`) runs in the context of the task that has just
//! got the CPU, idle or not: the first one in the thread's context after the
//! expiry is its switch-in. It needs no structure offset (the current pid
//! comes from `bpf_get_current_pid_tgid`). Where the kernel has no
//! `sched_exit_tp`, a raw `sched_switch` program compares its `next` task
//! pointer with the thread's own, learnt by the arming program
//! (`bpf_get_current_task`, compared, never dereferenced).

use super::attach::{Attachment, tracepoint_id};
use super::btf::Btf;
use super::insn::{Alu, Asm, Cond, Helper, Insn, Label, Reg, Size};
use super::sys::{BPF_F_MMAPABLE, LoadError, Map, MapKind, MappedArray, Program, ProgramKind};
use crate::rt::tracefs::format::{EventFormat, Field};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per slot.
pub const SLOT_BYTES: usize = 128;
const TID: i16 = 0;
const FIRST: i16 = 8;
const PERIOD: i16 = 16;
const ARMED_TIMER: i16 = 24;
const ARMED_EXPIRES: i16 = 32;
const SEQ: i16 = 40;
const WAKE_EXPIRES: i16 = 48;
const IRQ_NOW: i16 = 56;
const SWITCH_FOR: i16 = 64;
const SWITCH_IN: i16 = 72;
const TASK: i16 = 80;

/// The tracepoints the programs read records of.
const EVENTS: [(&str, &str); 2] = [
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
];

/// Why the in-kernel breakdown did not start.
#[derive(Debug)]
pub enum StartError {
    /// The verifier refused a program: its log.
    Verifier { program: String, log: String },
    /// Anything else, one line.
    Failed(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Verifier { program, log } => {
                let last = log
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                write!(f, "the verifier refused latscope_{program}: {last}")
            }
            StartError::Failed(why) => f.write_str(why),
        }
    }
}

/// A sampling thread as the programs know it.
#[derive(Debug, Clone, Copy)]
pub struct SlotThread {
    pub tid: i32,
    pub cpu: usize,
    pub first_expiry_ns: u64,
    pub period_ns: u64,
}

/// The running programs and their slots; detached and closed on drop.
pub struct WakeupSlots {
    slots: Arc<MappedArray>,
    /// Kept open so the programs stay attached (dropped before the map).
    _attachments: Vec<Attachment>,
    _programs: Vec<Program>,
    _map: Map,
    /// The events used, for the Report.
    pub source: String,
}

/// What a sampling thread read from its slot for one wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRead {
    /// Timer handler start and switch-in, CLOCK_MONOTONIC ns.
    Complete { irq_ns: u64, switch_ns: u64 },
    /// The expiry was recorded, but the thread never got the CPU back
    /// through the scheduler after it: the timer fired while the thread was
    /// still on its way to sleep, so `schedule()` was never called (the
    /// period was nearly over when it asked to sleep). No thread figure
    /// exists for such a wake-up.
    Unscheduled { irq_ns: u64 },
    /// A program wrote the slot while it was read.
    Torn,
    /// The slot holds another wake-up, or this one only in part.
    Missing,
}

/// One sampling thread's view of its slot: plain loads, no system call.
#[derive(Clone)]
pub struct SlotReader {
    /// Keeps the mapping alive as long as a thread reads it.
    _slots: Arc<MappedArray>,
    base: *const AtomicU64,
}

// SAFETY: `base` points into `slots`' mapping, which the reader keeps alive;
// all access is atomic.
unsafe impl Send for SlotReader {}
// SAFETY: as above; reading through a shared reader is atomic loads only.
unsafe impl Sync for SlotReader {}

impl SlotReader {
    /// The record of the wake-up for `expiry`, if the slot holds it whole.
    #[inline]
    pub fn read(&self, expiry: u64) -> SlotRead {
        read_slot(self.base, expiry)
    }
}

/// Reads the slot at `base` (see `SlotReader::read`): the sequence, the
/// record, the sequence again.
#[inline]
fn read_slot(base: *const AtomicU64, expiry: u64) -> SlotRead {
    // SAFETY: the callers give the start of a live 128-byte slot, and the
    // offsets are constants inside it, 8-aligned.
    let word = |offset: i16| unsafe { &*base.add(offset as usize / 8) };
    let before = word(SEQ).load(Ordering::Acquire);
    let expires = word(WAKE_EXPIRES).load(Ordering::Relaxed);
    let irq_ns = word(IRQ_NOW).load(Ordering::Relaxed);
    let switch_for = word(SWITCH_FOR).load(Ordering::Relaxed);
    let switch_ns = word(SWITCH_IN).load(Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Acquire);
    let after = word(SEQ).load(Ordering::Relaxed);
    if before != after || before % 2 == 1 {
        return SlotRead::Torn;
    }
    if expires != expiry {
        return SlotRead::Missing;
    }
    if switch_for != expiry {
        return SlotRead::Unscheduled { irq_ns };
    }
    SlotRead::Complete { irq_ns, switch_ns }
}

/// How the programs on the timer events are loaded and attached, cheapest
/// first (`EventAccess` says how each reads its event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventPath {
    /// BTF-typed raw tracepoints (`tp_btf`, Linux 5.5): need the kernel's BTF.
    TypedRawTracepoint,
    /// Plain raw tracepoints reading members at BTF offsets with
    /// `bpf_probe_read_kernel`: where the kernel refuses the typed ones.
    RawTracepoint,
    /// Classic tracepoints through perf_event_open: no BTF needed, but the
    /// kernel builds the trace record before each run (about 110 ns more per
    /// event here, docs/measurement.md).
    Tracepoint,
}

impl EventPath {
    /// Every path, in the order `WakeupSlots::start` tries them.
    pub const ALL: [EventPath; 3] = [
        EventPath::TypedRawTracepoint,
        EventPath::RawTracepoint,
        EventPath::Tracepoint,
    ];
}

/// Failures of `bpf()` and friends, one line.
fn failed(what: &str, e: std::io::Error) -> StartError {
    StartError::Failed(format!("{what}: {}", crate::rt::os_error_text(&e)))
}

/// Loads `insns` (or their generator's error) as `latscope_<name>` with
/// `load`, a refusal keeping the verifier's log.
fn load_program(
    name: &str,
    insns: Result<Vec<Insn>, String>,
    load: impl FnOnce(&str, &[Insn]) -> Result<Program, LoadError>,
) -> Result<Program, StartError> {
    let insns = insns.map_err(StartError::Failed)?;
    load(name, &insns).map_err(|e| match e {
        LoadError::Verifier { log, .. } => StartError::Verifier {
            program: name.to_string(),
            log,
        },
        other => StartError::Failed(format!("loading latscope_{name}: {other}")),
    })
}

/// The timer events' programs and their attachments.
type Attached = (Vec<Program>, Vec<Attachment>);

/// The arming and expiry programs on the first of `paths` that loads and
/// attaches; when none does, the last one's error (the classic
/// tracepoints' when they are tried, as before the other paths existed).
fn attach_timer_programs(
    tracefs: &Path,
    map_fd: i32,
    paths: &[EventPath],
    arming: Arming,
) -> Result<Attached, StartError> {
    let mut btf = None;
    let mut last = StartError::Failed("no way to attach the timer programs".to_string());
    for &path in paths {
        let attempt = match path {
            EventPath::Tracepoint => attach_to_records(tracefs, map_fd),
            _ => match btf.get_or_insert_with(Btf::vmlinux) {
                Ok(btf) => attach_to_arguments(btf, path, map_fd, arming),
                Err(why) => Err(StartError::Failed(why.clone())),
            },
        };
        match attempt {
            Ok(attached) => return Ok(attached),
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// The raw tracepoint paths: the tracepoints' prototypes are checked
/// against what the programs assume (a `struct hrtimer *` first, and a
/// pointer to the 8-byte `now` second on the expiry). Without an arming
/// program (`Arming::Inferred`) only the expiry's.
fn attach_to_arguments(
    btf: &Btf,
    path: EventPath,
    map_fd: i32,
    arming: Arming,
) -> Result<Attached, StartError> {
    let soft_expiry = BtfMember::of(btf, "hrtimer", "_softexpires").map_err(StartError::Failed)?;
    let access = match path {
        EventPath::TypedRawTracepoint => EventAccess::TypedArguments { soft_expiry },
        _ => EventAccess::ProbedArguments { soft_expiry },
    };
    let hrtimer = btf
        .find("hrtimer", super::btf::Kind::Struct)
        .map_err(StartError::Failed)?;
    let [(_, start), (_, expire)] = EVENTS;
    let mut programs = Vec::new();
    if arming == Arming::Watched {
        programs.push(("arm", start, arm_program(map_fd, &access)));
    }
    programs.push(("expire", expire, expire_program(map_fd, &access, arming)));
    let mut attached: Attached = (Vec::new(), Vec::new());
    for (program_name, event, insns) in programs {
        let (typedef, args) = btf.tracepoint(event).map_err(StartError::Failed)?;
        let pointee = |i: usize| args.get(i).and_then(|&a| btf.pointee(a).ok());
        let now_is_8_bytes = || pointee(1).and_then(|t| btf.size_of(t).ok()) == Some(8);
        let reads_now = event == "hrtimer_expire_entry";
        if pointee(0) != Some(hrtimer) || (reads_now && !now_is_8_bytes()) {
            return Err(StartError::Failed(format!(
                "the tracepoint {event} has arguments the programs do not expect"
            )));
        }
        let typed = path == EventPath::TypedRawTracepoint;
        let program = load_program(program_name, insns, |name, insns| {
            if typed {
                Program::load_btf_raw_tracepoint(name, typedef, insns)
            } else {
                Program::load(ProgramKind::RawTracepoint, name, insns)
            }
        })?;
        let attachment = if typed {
            Attachment::btf_raw_tracepoint(&program, event)
        } else {
            Attachment::raw_tracepoint(&program, event)
        }
        .map_err(|e| failed(&format!("attaching to {event}"), e))?;
        attached.0.push(program);
        attached.1.push(attachment);
    }
    Ok(attached)
}

/// The classic tracepoints, the records' layouts from tracefs.
fn attach_to_records(tracefs: &Path, map_fd: i32) -> Result<Attached, StartError> {
    let format = |(system, name): (&str, &str)| {
        EventFormat::read(
            &tracefs
                .join("events")
                .join(system)
                .join(name)
                .join("format"),
        )
        .map_err(StartError::Failed)
    };
    let [start, expire] = EVENTS.map(format);
    let access = EventAccess::Record {
        start: start?,
        expire: expire?,
    };
    let load = |name: &str, insns| {
        load_program(name, insns, |name, insns| {
            Program::load(ProgramKind::Tracepoint, name, insns)
        })
    };
    let programs = vec![
        load("arm", arm_program(map_fd, &access))?,
        load("expire", expire_program(map_fd, &access, Arming::Watched))?,
    ];
    let mut attachments = Vec::new();
    for (program, (system, name)) in programs.iter().zip(EVENTS) {
        let id = tracepoint_id(tracefs, system, name).map_err(StartError::Failed)?;
        let event = format!("{system}:{name}");
        attachments.push(
            Attachment::tracepoint(program, id, &event)
                .map_err(|e| failed(&format!("attaching to {event}"), e))?,
        );
    }
    Ok((programs, attachments))
}

impl WakeupSlots {
    /// Loads and attaches the programs for `threads` (one per CPU), on the
    /// cheapest `EventPath` this kernel takes; the kernel's BTF gives the
    /// arguments' types and offsets, or the tracefs `format` files under
    /// `tracefs` the records' layouts.
    pub fn start(tracefs: &Path, threads: &[SlotThread]) -> Result<WakeupSlots, StartError> {
        WakeupSlots::start_on(tracefs, threads, &EventPath::ALL, Arming::Inferred)
    }

    /// `start`, trying only `paths` (in order) for the timer events, and
    /// without an arming program only if `arming` is `Inferred` and the
    /// kernel has the scheduler's exit hook.
    pub fn start_on(
        tracefs: &Path,
        threads: &[SlotThread],
        paths: &[EventPath],
        arming: Arming,
    ) -> Result<WakeupSlots, StartError> {
        let cpus = super::sys::possible_cpus().map_err(|e| failed("possible CPUs", e))?;
        let map = Map::create(
            MapKind::Array,
            "slots",
            SLOT_BYTES,
            cpus as u32,
            BPF_F_MMAPABLE,
        )
        .map_err(|e| failed("creating the slot map", e))?;
        let slots = Arc::new(
            map.map_memory(true)
                .map_err(|e| failed("mapping the slot map", e))?,
        );
        for t in threads {
            let set = |offset: i16, value: u64| slots.write_u64(t.cpu, offset as usize, value);
            set(TID, t.tid as u64)
                .and(set(FIRST, t.first_expiry_ns))
                .and(set(PERIOD, t.period_ns.max(1)))
                .ok_or_else(|| {
                    StartError::Failed(format!("CPU {} is not a possible CPU", t.cpu))
                })?;
        }
        let fd = map.fd();
        let raw = |name: &str, insns| {
            load_program(name, insns, |name, insns| {
                Program::load(ProgramKind::RawTracepoint, name, insns)
            })
        };
        // The switch-in: the scheduler's exit hook where it exists, else
        // sched_switch, which needs the thread's task from the arming
        // program (see the module's notes).
        let exit_hook = raw("on_cpu", switch_in_by_pid(fd))?;
        let (switch_in, arming) = match Attachment::raw_tracepoint(&exit_hook, "sched_exit_tp") {
            Ok(a) => ((exit_hook, a), arming),
            Err(_) => {
                let switch = raw("switch", switch_in_by_task(fd))?;
                let a = Attachment::raw_tracepoint(&switch, "sched_switch")
                    .map_err(|e| failed("attaching to sched_switch", e))?;
                ((switch, a), Arming::Watched)
            }
        };
        let (mut programs, mut attachments) = attach_timer_programs(tracefs, fd, paths, arming)?;
        programs.push(switch_in.0);
        attachments.push(switch_in.1);
        let source = format!(
            "bpf on {}",
            attachments
                .iter()
                .map(|a| a.event.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(WakeupSlots {
            slots,
            _attachments: attachments,
            _programs: programs,
            _map: map,
            source,
        })
    }

    /// The reader of CPU `cpu`'s slot, for the thread sampling there.
    pub fn reader(&self, cpu: usize) -> Option<SlotReader> {
        let base = self.slots.entry_ptr(cpu)?;
        Some(SlotReader {
            _slots: self.slots.clone(),
            base: base.cast_const().cast(),
        })
    }
}

/// `r6 = &slots[this CPU]`, or return 0 when there is none; clobbers r0-r5.
fn load_slot(asm: &mut Asm, map_fd: i32) {
    asm.this_cpu_entry_or_return(map_fd)
        .push(Insn::mov64_reg(Reg::R6, Reg::R0));
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
    asm.push(Insn::ldx(Size::DW, Reg::R1, Reg::R6, SEQ))
        .push(Insn::alu64_imm(Alu::Add, Reg::R1, 1))
        .push(Insn::stx(Size::DW, Reg::R6, SEQ, Reg::R1));
}

/// How the programs on `hrtimer_start` and `hrtimer_expire_entry` read
/// their event (the context saved in r7), cheapest first: each is the
/// fallback of the one before (`WakeupSlots::start`).
#[derive(Debug, Clone)]
pub(super) enum EventAccess {
    /// A BTF-typed raw tracepoint (`tp_btf`): the context is the
    /// tracepoint's arguments (`struct hrtimer *` first), and the verifier
    /// knows the pointer's type, so a member is one plain load (turned into
    /// a fault-safe one). `soft_expiry` is `hrtimer._softexpires`, from BTF.
    TypedArguments { soft_expiry: BtfMember },
    /// A plain raw tracepoint: the same arguments, untyped; a member is
    /// copied with `bpf_probe_read_kernel` at its BTF offset.
    ProbedArguments { soft_expiry: BtfMember },
    /// A classic tracepoint (perf_event_open): the context is the trace
    /// record the kernel builds first, its fields where tracefs says.
    Record {
        start: EventFormat,
        expire: EventFormat,
    },
}

/// A member of a structure: its offset and load width, from BTF.
#[derive(Debug, Clone, Copy)]
pub(super) struct BtfMember {
    offset: i16,
    size: Size,
}

impl BtfMember {
    /// `structure.path` as the kernel's BTF lays it out.
    pub(super) fn of(btf: &Btf, structure: &str, path: &str) -> Result<BtfMember, String> {
        let member = btf.member(structure, path)?;
        Ok(BtfMember {
            offset: i16::try_from(member.offset)
                .map_err(|_| format!("{structure}.{path} is too far into its structure"))?,
            size: Size::of_bytes(member.size as usize)
                .ok_or_else(|| format!("{structure}.{path} has an unusual size {}", member.size))?,
        })
    }
}

/// Stack bytes `bpf_probe_read_kernel` copies into (below the CPU number
/// `load_slot` keeps at r10 - 4).
const PROBE_BUFFER: i16 = -16;

impl EventAccess {
    /// `dst = the timer of the event` (the first argument, or the record's
    /// `hrtimer`): compared, never read through.
    fn timer(&self, asm: &mut Asm, dst: Reg, event: TimerEvent) -> Result<(), String> {
        match self {
            EventAccess::Record { start, expire } => {
                let format = match event {
                    TimerEvent::Start => start,
                    TimerEvent::ExpireEntry => expire,
                };
                load_field(asm, dst, format.field("hrtimer")?)
            }
            _ => {
                asm.push(Insn::ldx(Size::DW, dst, Reg::R7, 0));
                Ok(())
            }
        }
    }

    /// `dst = the timer's soft expiry` (the argument's member; the record's
    /// field only on `hrtimer_start`); clobbers
    /// r0-r5 and leaves for `out` when the kernel's memory cannot be read.
    fn soft_expiry(&self, asm: &mut Asm, dst: Reg, out: Label) -> Result<(), String> {
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
            EventAccess::Record { start, .. } => load_field(asm, dst, start.field("softexpires")?),
        }
    }

    /// `dst = the handler's now` on `hrtimer_expire_entry` (the second
    /// argument is a `ktime_t *`, which no program may load through even
    /// where typed: it is copied); clobbers r0-r5, leaves for `out` when it
    /// cannot be read.
    fn expiry_now(&self, asm: &mut Asm, dst: Reg, out: Label) -> Result<(), String> {
        match self {
            EventAccess::TypedArguments { .. } | EventAccess::ProbedArguments { .. } => {
                asm.push(Insn::ldx(Size::DW, Reg::R3, Reg::R7, 8));
                probe_read_u64(asm, dst, out);
                Ok(())
            }
            EventAccess::Record { expire, .. } => load_field(asm, dst, expire.field("now")?),
        }
    }
}

/// The two events whose programs `EventAccess` reads for.
#[derive(Debug, Clone, Copy)]
enum TimerEvent {
    Start,
    ExpireEntry,
}

/// `dst = *(u64 *)r3` by `bpf_probe_read_kernel`, or leave for `out` when
/// the copy fails; clobbers r0-r5.
fn probe_read_u64(asm: &mut Asm, dst: Reg, out: Label) {
    asm.push(Insn::mov64_reg(Reg::R1, Reg::R10))
        .push(Insn::alu64_imm(Alu::Add, Reg::R1, PROBE_BUFFER.into()))
        .push(Insn::mov64_imm(Reg::R2, 8))
        .push(Insn::call(Helper::ProbeReadKernel))
        .jump_if(Cond::Ne, Reg::R0, 0, out)
        .push(Insn::ldx(Size::DW, dst, Reg::R10, PROBE_BUFFER));
}

/// `dst = record field` (from the context saved in r7), zero-extended.
fn load_field(asm: &mut Asm, dst: Reg, field: &Field) -> Result<(), String> {
    let size = Size::of_bytes(field.size)
        .ok_or_else(|| format!("field {} has an unusual size {}", field.name, field.size))?;
    let offset = i16::try_from(field.offset)
        .map_err(|_| format!("field {} is too far into its record", field.name))?;
    asm.push(Insn::ldx(size, dst, Reg::R7, offset));
    Ok(())
}

/// The end every program shares: return 0.
fn finish(mut asm: Asm, out: Label) -> Result<Vec<Insn>, String> {
    asm.bind(out);
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    asm.finish()
}

/// `hrtimer_start`: the thread arms a timer on its schedule, from its own
/// task context: remember the timer, its expiry and the thread's task.
pub(super) fn arm_program(map_fd: i32, access: &EventAccess) -> Result<Vec<Insn>, String> {
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
    access.timer(&mut asm, Reg::R1, TimerEvent::Start)?;
    asm.push(Insn::stx(Size::DW, Reg::R6, ARMED_TIMER, Reg::R1))
        .push(Insn::call(Helper::GetCurrentTask))
        .push(Insn::stx(Size::DW, Reg::R6, TASK, Reg::R0));
    finish(asm, out)
}

/// Leaves for `out` unless `soft` (a soft expiry) is on the thread's
/// schedule: `soft >= first` and `(soft - first) % period == 0`, from the
/// slot at r6 (clobbers r3-r5).
fn leave_unless_on_schedule(asm: &mut Asm, soft: Reg, out: Label) {
    asm.push(Insn::ldx(Size::DW, Reg::R3, Reg::R6, FIRST))
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
pub(super) fn expire_program(
    map_fd: i32,
    access: &EventAccess,
    arming: Arming,
) -> Result<Vec<Insn>, String> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    asm.push(Insn::mov64_reg(Reg::R7, Reg::R1));
    load_slot(&mut asm, map_fd);
    match (arming, access) {
        (Arming::Watched, _) => {
            access.timer(&mut asm, Reg::R1, TimerEvent::ExpireEntry)?;
            asm.push(Insn::ldx(Size::DW, Reg::R2, Reg::R6, ARMED_TIMER))
                .jump_if_reg(Cond::Ne, Reg::R1, Reg::R2, out);
            access.expiry_now(&mut asm, Reg::R8, out)?;
            asm.push(Insn::ldx(Size::DW, Reg::R9, Reg::R6, ARMED_EXPIRES))
                .jump_if(Cond::Eq, Reg::R9, 0, out);
        }
        (Arming::Inferred, EventAccess::Record { .. }) => {
            return Err(
                "the classic hrtimer_expire_entry record has no soft expiry: it needs the arming program"
                    .to_string(),
            );
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
    asm.push(Insn::ldx(Size::DW, Reg::R9, Reg::R6, WAKE_EXPIRES))
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
pub(super) fn switch_in_by_pid(map_fd: i32) -> Result<Vec<Insn>, String> {
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
pub(super) fn switch_in_by_task(map_fd: i32) -> Result<Vec<Insn>, String> {
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

    /// The classic path with these records' layouts.
    fn records(start: &str) -> EventAccess {
        EventAccess::Record {
            start: format(start),
            expire: format(HRTIMER_EXPIRE_ENTRY),
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
        let err = expire_program(3, &records(HRTIMER_START), Arming::Inferred).unwrap_err();
        assert!(err.contains("needs the arming program"), "{err}");
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
        assert!(err.contains("unusual size 16"), "{err}");
        let missing = HRTIMER_START.replace("softexpires", "soft");
        assert!(
            arm_program(3, &records(&missing))
                .unwrap_err()
                .contains("no field 'softexpires'")
        );
    }

    #[test]
    fn every_program_ends_in_exit_and_every_jump_lands_inside() {
        for insns in [
            arm_program(3, &records(HRTIMER_START)).unwrap(),
            expire_program(3, &records(HRTIMER_START), Arming::Watched).unwrap(),
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

    #[test]
    fn the_reader_takes_only_a_whole_record_of_its_own_expiry() {
        let slot: Vec<AtomicU64> = (0..SLOT_BYTES / 8).map(|_| AtomicU64::new(0)).collect();
        let set =
            |offset: i16, value: u64| slot[offset as usize / 8].store(value, Ordering::Relaxed);
        let read = |expiry| read_slot(slot.as_ptr(), expiry);
        assert_eq!(read(1000), SlotRead::Missing);
        set(WAKE_EXPIRES, 1000);
        set(IRQ_NOW, 1003);
        assert_eq!(
            read(1000),
            SlotRead::Unscheduled { irq_ns: 1003 },
            "no switch-in yet"
        );
        set(SWITCH_FOR, 1000);
        set(SWITCH_IN, 1009);
        assert_eq!(
            read(1000),
            SlotRead::Complete {
                irq_ns: 1003,
                switch_ns: 1009
            }
        );
        assert_eq!(read(2000), SlotRead::Missing, "another wake-up");
        // A switch-in stamped for the previous record does not count.
        set(WAKE_EXPIRES, 2000);
        assert_eq!(read(2000), SlotRead::Unscheduled { irq_ns: 1003 });
        // A writer inside (odd sequence) makes the read torn.
        set(SEQ, 5);
        assert_eq!(read(2000), SlotRead::Torn);
    }
}
