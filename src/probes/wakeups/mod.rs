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
//! The events and why each, as the tracefs breakdown (`pairing`)
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
//! The arming and expiry programs run on the cheapest of three ways the
//! kernel takes (`probes::AttachWay`, tried by `probes::hook`): BTF-typed
//! raw tracepoints, plain raw tracepoints, classic tracepoints; the classic ones cost about 70-80 ns
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

pub mod pairing;
pub mod program;
pub mod session;

pub use pairing::{TracedThread, WakeupRecord};
pub use program::{Arming, BtfMember, EventAccess};
pub use session::{TraceStats, WakeupTrace};

use super::ProbeError;
use super::choice::{CheckError, check_before_run as check_collection};
use super::hook::{AttachWay, Event, EventView, Hooked, KernelTypes, hook};
use super::ring::per_cpu_map;
use crate::rt::bpf::{Code, Map, MappedArray};
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

/// The running programs and their slots; detached and closed on drop.
pub struct WakeupSlots {
    slots: Arc<MappedArray>,
    /// Kept so the programs stay attached (dropped before the map).
    _hooked: Vec<Hooked>,
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

/// The programs of the family, each on its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerProgram {
    /// `hrtimer_start`: the thread arms its timer (`Arming::Watched`).
    Arm,
    /// `hrtimer_expire_entry`: its timer expires, a new wake-up record.
    Expire,
    /// `sched_exit_tp`: the thread has its CPU again (by its pid).
    OnCpu,
    /// `sched_switch`: the same where the kernel has no `sched_exit_tp`
    /// (by the thread's task, which the arming program learns).
    Switch,
}

impl TimerProgram {
    /// The program's name (`latscope_<name>`) and its event.
    pub fn event(self) -> Event<'static> {
        let (system, name, program) = match self {
            TimerProgram::Arm => ("timer", "hrtimer_start", "arm"),
            TimerProgram::Expire => ("timer", "hrtimer_expire_entry", "expire"),
            TimerProgram::OnCpu => ("sched", "sched_exit_tp", "on_cpu"),
            TimerProgram::Switch => ("sched", "sched_switch", "switch"),
        };
        Event {
            system,
            name,
            program,
        }
    }

    /// The program, reading its event as `access` says.
    pub fn generate(
        self,
        map_fd: i32,
        access: &EventAccess,
        arming: Arming,
    ) -> Result<Code, ProbeError> {
        match self {
            TimerProgram::Arm => program::arm_program(map_fd, access),
            TimerProgram::Expire => program::expire_program(map_fd, access, arming),
            TimerProgram::OnCpu => program::switch_in_by_pid(map_fd),
            TimerProgram::Switch => program::switch_in_by_task(map_fd),
        }
    }
}

/// How a timer program reads its event on `way`, given what the kernel
/// says (`view`): on the argument ways, the tracepoints' prototypes are
/// checked against what the programs assume (a `struct hrtimer *` first,
/// and a pointer to the 8-byte `now` second on the expiry).
pub fn access_for(
    event: &str,
    way: AttachWay,
    view: EventView<'_>,
) -> Result<EventAccess, ProbeError> {
    let btf = match view {
        EventView::Record { format } => {
            return Ok(EventAccess::Record {
                format: format.clone(),
            });
        }
        EventView::Arguments { btf: Some(btf) } => btf,
        EventView::Arguments { btf: None } => {
            return Err(ProbeError::Unsuited(
                "the kernel has no BTF: no offsets for the raw tracepoints",
            ));
        }
    };
    let hrtimer = btf
        .find("hrtimer", crate::rt::bpf::btf::Kind::Struct)
        .map_err(ProbeError::kernel)?;
    let (_, args) = btf.tracepoint(event).map_err(ProbeError::kernel)?;
    let pointee = |i: usize| args.get(i).and_then(|&a| btf.pointee(a).ok());
    let now_is_8_bytes = || pointee(1).and_then(|t| btf.size_of(t).ok()) == Some(8);
    let reads_now = event == "hrtimer_expire_entry";
    if pointee(0) != Some(hrtimer) || (reads_now && !now_is_8_bytes()) {
        return Err(ProbeError::Arguments {
            event: event.to_string(),
            family: "programs",
        });
    }
    let soft_expiry = BtfMember::of(btf, "hrtimer", "_softexpires")?;
    Ok(match way {
        AttachWay::TypedRawTracepoint => EventAccess::TypedArguments { soft_expiry },
        _ => EventAccess::ProbedArguments { soft_expiry },
    })
}

/// Hooks `program` on its event on the ways of `ladder`.
fn hook_program(
    kernel: &KernelTypes,
    program: TimerProgram,
    map_fd: i32,
    ladder: &[AttachWay],
    arming: Arming,
) -> Result<Hooked, ProbeError> {
    let event = program.event();
    hook(kernel, event, ladder, &mut |way, view| {
        let access = match program {
            TimerProgram::Arm | TimerProgram::Expire => access_for(event.name, way, view)?,
            // The switch-in programs read no member: any view will do.
            TimerProgram::OnCpu | TimerProgram::Switch => EventAccess::Untyped,
        };
        program.generate(map_fd, &access, arming)
    })
}

/// The arming and expiry programs on the first of `ways` on which both
/// load and attach; when none does, the last one's error (the classic
/// tracepoints' when they are tried, as before the other ways existed).
/// The classic way always arms: its expiry record has no soft expiry.
fn hook_timer_programs(
    kernel: &KernelTypes,
    map_fd: i32,
    ways: &[AttachWay],
    arming: Arming,
) -> Result<Vec<Hooked>, ProbeError> {
    let mut last = ProbeError::Unsuited("no way to attach the timer programs");
    for &way in ways {
        let arming = if way == AttachWay::Tracepoint {
            Arming::Watched
        } else {
            arming
        };
        let programs: &[TimerProgram] = match arming {
            Arming::Watched => &[TimerProgram::Arm, TimerProgram::Expire],
            Arming::Inferred => &[TimerProgram::Expire],
        };
        let hooked: Result<Vec<Hooked>, ProbeError> = programs
            .iter()
            .map(|&p| hook_program(kernel, p, map_fd, &[way], arming))
            .collect();
        match hooked {
            Ok(hooked) => return Ok(hooked),
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// Whether `--breakdown` can run here with `collector`, creating
/// nothing: tracefs (root, the events), or BPF itself with
/// `--collector bpf` (an ordinary user gets the `--collector bpf` line).
pub fn check_before_run(collector: crate::rt::bpf::CollectorChoice) -> Result<(), CheckError> {
    check_collection(
        collector,
        crate::rt::bpf::probe::check,
        session::check_available,
    )
}

impl WakeupSlots {
    /// Loads and attaches the programs for `threads` (one per CPU), on the
    /// cheapest `AttachWay` this kernel takes; the kernel's BTF gives the
    /// arguments' types and offsets, or the tracefs `format` files under
    /// `tracefs` the records' layouts.
    pub fn start(tracefs: &Path, threads: &[TracedThread]) -> Result<WakeupSlots, ProbeError> {
        WakeupSlots::start_on(tracefs, threads, &AttachWay::ALL, Arming::Inferred)
    }

    /// `start`, trying only `ways` (in order) for the timer events, and
    /// without an arming program only if `arming` is `Inferred` and the
    /// kernel has the scheduler's exit hook.
    pub fn start_on(
        tracefs: &Path,
        threads: &[TracedThread],
        ways: &[AttachWay],
        arming: Arming,
    ) -> Result<WakeupSlots, ProbeError> {
        let (map, slots) = per_cpu_map("slots", "timer breakdown", SLOT_BYTES, true, None)?;
        let slots = Arc::new(slots);
        for t in threads {
            let set = |offset: i16, value: u64| slots.write_u64(t.cpu, offset as usize, value);
            set(TID, t.tid as u64)
                .and(set(FIRST, t.first_expiry_ns))
                .and(set(PERIOD, t.period_ns.max(1)))
                .ok_or(ProbeError::NotPossibleCpu(t.cpu))?;
        }
        let kernel = KernelTypes::new(tracefs);
        let fd = map.fd();
        let raw = [AttachWay::RawTracepoint];
        // The switch-in: the scheduler's exit hook where it exists, else
        // sched_switch, which needs the thread's task from the arming
        // program (see the module's notes).
        let (switch_in, arming) = match hook_program(&kernel, TimerProgram::OnCpu, fd, &raw, arming)
        {
            Ok(hooked) => (hooked, arming),
            Err(_) => (
                hook_program(&kernel, TimerProgram::Switch, fd, &raw, arming)?,
                Arming::Watched,
            ),
        };
        let mut hooked = hook_timer_programs(&kernel, fd, ways, arming)?;
        hooked.push(switch_in);
        let source = format!(
            "bpf on {}",
            hooked
                .iter()
                .map(|h| h.attachment.event.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(WakeupSlots {
            slots,
            _hooked: hooked,
            _map: map,
            source,
        })
    }

    /// Every program hooked: its event and the way it took.
    pub fn programs(&self) -> Vec<super::hook::HookedProgram> {
        self._hooked
            .iter()
            .map(|h| super::hook::HookedProgram {
                // `tp_btf:NAME`, `raw:NAME`, `SYSTEM:NAME`.
                event: h
                    .attachment
                    .event
                    .rsplit(':')
                    .next()
                    .unwrap_or("")
                    .to_string(),
                way: h.way,
            })
            .collect()
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

#[cfg(test)]
mod tests_pairing;
#[cfg(test)]
mod tests_tracefs;

#[cfg(test)]
mod tests {
    use super::*;

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
