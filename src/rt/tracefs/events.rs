//! The trace events latscope uses (the wake-up breakdown's and the spike
//! attribution's), decoded from raw record payloads by the field offsets of
//! their `format` files: one decoder, keyed by event name.

use super::format::{EventFormat, Field};
use std::path::Path;

/// `common_flags` bits of a record written in interrupt context (hard irq,
/// softirq, NMI): `TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ | TRACE_FLAG_NMI` of
/// the kernel's `trace_flag_type`, stable since 2.6 and printed as `h`/`s`/`H`
/// by the text output.
const IN_INTERRUPT: u64 = 0x08 | 0x10 | 0x40;

/// The events of the spike attribution (`--trace-spikes`): everything that
/// can hold a CPU between a wake-up's due time and the moment the woken task
/// runs. `sched_wakeup` is filtered to the measured tasks by the session.
pub const ACTIVITY: [(&str, &str); 6] = [
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
];

/// Non-maskable interrupts, traced for the attribution where the kernel has
/// the event: written when each NMI handler returns, with how long it ran
/// (`delta_ns`), so an NMI's time is named instead of falling into the
/// time no event explains.
pub const NMI: (&str, &str) = ("nmi", "nmi_handler");

/// Interrupts that do not go through `irq_handler_entry` (x86 system
/// vectors: the local timer, IPIs), traced for the attribution where the
/// kernel has them; each is a `<name>_entry` / `<name>_exit` pair.
pub const VECTORS: [&str; 5] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
];
/// The tracefs system of `VECTORS`.
pub const VECTOR_SYSTEM: &str = "irq_vectors";
/// The entry and exit events of each of `VECTORS`, in the same order.
pub const VECTOR_EVENTS: [(&str, &str); 5] = [
    ("local_timer_entry", "local_timer_exit"),
    ("reschedule_entry", "reschedule_exit"),
    ("call_function_entry", "call_function_exit"),
    ("call_function_single_entry", "call_function_single_exit"),
    ("irq_work_entry", "irq_work_exit"),
];

/// `comm` of a task, NUL-padded (`TASK_COMM_LEN`).
pub type Comm = [u8; 16];
/// An IRQ's name (`irq_handler_entry`'s `name`), NUL-padded, cut to 32 bytes.
pub type IrqName = [u8; 32];

/// `sched_switch`: `prev` leaves the CPU, `next` gets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switch {
    pub prev_pid: i32,
    pub prev_prio: i32,
    /// The kernel's task state bits as the tracepoint reports them: 0 or
    /// `PREEMPTED` = still runnable (preempted), else why it sleeps.
    pub prev_state: u64,
    pub prev_comm: Comm,
    pub next_pid: i32,
    pub next_prio: i32,
    pub next_comm: Comm,
}

impl Switch {
    /// `TASK_REPORT_MAX` of `sched_switch`'s `prev_state`: the task was
    /// preempted (printed as `R+`); the bits below it are sleep states.
    pub const PREEMPTED: u64 = 0x100;

    /// A switch to `next_pid` with nothing else known (tests, fixtures).
    pub fn to(next_pid: i32) -> Switch {
        Switch {
            next_pid,
            ..Switch::default()
        }
    }

    /// The task that left was still runnable: something took the CPU from it.
    pub fn prev_runnable(&self) -> bool {
        self.prev_state & (Switch::PREEMPTED - 1) == 0
    }
}

/// What happened, with the fields the breakdown and the spike attribution use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `hrtimer_start`: a timer was armed. `softexpires` is the time asked for;
    /// `expires` adds the timer slack of the arming task (50 us for SCHED_OTHER
    /// by default, 0 for real-time tasks).
    TimerStart {
        hrtimer: u64,
        softexpires: i64,
        expires: i64,
        /// Armed from an interrupt handler rather than by the task itself.
        in_interrupt: bool,
    },
    /// `hrtimer_expire_entry`: the timer's handler runs; `now` is the time the
    /// timer interrupt read when it started expiring timers.
    TimerExpire {
        hrtimer: u64,
        now: i64,
    },
    /// `sched_switch`.
    Switch(Switch),
    /// `rseq_update`: the writing task is about to return to user space.
    UserReturn {
        in_interrupt: bool,
    },
    /// `sched_wakeup`: task `pid` became runnable (on `target_cpu`).
    Wakeup {
        pid: i32,
        prio: i32,
        target_cpu: i32,
    },
    /// `irq_handler_entry` / `irq_handler_exit`.
    IrqEntry {
        irq: i32,
        name: IrqName,
    },
    IrqExit {
        irq: i32,
    },
    /// `softirq_entry` / `softirq_exit`; `vec` indexes `SOFTIRQ_NAMES`.
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// `<vector>_entry` / `<vector>_exit` of `VECTORS`; the index into it.
    VectorEntry {
        vector: u8,
    },
    VectorExit {
        vector: u8,
    },
    /// `nmi_handler`: an NMI handler returned after running `delta_ns`
    /// (the event comes at its end: the NMI began `delta_ns` before it).
    Nmi {
        delta_ns: u64,
        handled: i32,
    },
}

/// The kernel's softirq names by vector number (`softirq_to_name`, stable
/// since 3.x).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq `vec` (its number when unknown).
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("softirq {vec}"), |n| (*n).to_string())
}

/// One decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    /// Trace clock (CLOCK_MONOTONIC with `trace_clock` = `mono`), ns.
    pub time: u64,
    pub cpu: usize,
    /// `common_pid`: the task that was current when the record was written.
    pub pid: i32,
    pub kind: Kind,
}

/// The outcome of decoding one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    Event(TraceEvent),
    /// A record of another event type (not ours: skipped, not an error).
    Other,
    /// Ours by type, but too short for its fields.
    Malformed,
}

/// Where one event's fields are, by the event's name.
#[derive(Debug, Clone)]
enum Layout {
    TimerStart {
        hrtimer: Field,
        expires: Field,
        softexpires: Field,
    },
    TimerExpire {
        hrtimer: Field,
        now: Field,
    },
    Switch(SwitchFields),
    UserReturn,
    Wakeup(WakeupFields),
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        vec: Field,
        entry: bool,
    },
    Vector {
        index: u8,
        entry: bool,
    },
    Nmi(NmiFields),
}

/// The fields of `sched_switch` latscope reads (both collectors: the
/// tracefs decoder and the flight recorder's program).
#[derive(Debug, Clone)]
pub struct SwitchFields {
    pub prev_comm: Field,
    pub prev_pid: Field,
    pub prev_prio: Field,
    pub prev_state: Field,
    pub next_comm: Field,
    pub next_pid: Field,
    pub next_prio: Field,
}

impl SwitchFields {
    pub fn of(format: &EventFormat) -> Result<SwitchFields, String> {
        let f = |name: &str| integer(format, name);
        let text = |name: &str| format.field(name).cloned();
        Ok(SwitchFields {
            prev_comm: text("prev_comm")?,
            prev_pid: f("prev_pid")?,
            prev_prio: f("prev_prio")?,
            prev_state: f("prev_state")?,
            next_comm: text("next_comm")?,
            next_pid: f("next_pid")?,
            next_prio: f("next_prio")?,
        })
    }
}

/// The fields of `sched_wakeup` (and `sched_waking`) latscope reads (both
/// collectors).
#[derive(Debug, Clone)]
pub struct WakeupFields {
    pub pid: Field,
    pub prio: Field,
    pub target_cpu: Field,
}

impl WakeupFields {
    pub fn of(format: &EventFormat) -> Result<WakeupFields, String> {
        Ok(WakeupFields {
            pid: integer(format, "pid")?,
            prio: integer(format, "prio")?,
            target_cpu: integer(format, "target_cpu")?,
        })
    }
}

/// Which of `VECTORS` the event `name` (`<vector>_entry` or `_exit`) is,
/// and whether it is the entry.
pub fn vector_event(name: &str) -> Option<(u8, bool)> {
    let index = |suffix: &str| {
        let base = name.strip_suffix(suffix)?;
        VECTORS.iter().position(|v| *v == base).map(|i| i as u8)
    };
    index("_entry")
        .map(|i| (i, true))
        .or_else(|| index("_exit").map(|i| (i, false)))
}

/// The fields of `nmi_handler` latscope reads (both collectors: the tracefs
/// decoder and the flight recorder's program).
#[derive(Debug, Clone)]
pub struct NmiFields {
    pub delta_ns: Field,
    pub handled: Field,
}

impl NmiFields {
    pub fn of(format: &EventFormat) -> Result<NmiFields, String> {
        Ok(NmiFields {
            delta_ns: integer(format, "delta_ns")?,
            handled: integer(format, "handled")?,
        })
    }
}

impl Layout {
    /// The layout of the event `format` describes, by its name.
    fn of(format: &EventFormat) -> Result<Layout, String> {
        let f = |name: &str| integer(format, name);
        let text = |name: &str| format.field(name).cloned();
        Ok(match format.name.as_str() {
            "hrtimer_start" => Layout::TimerStart {
                hrtimer: f("hrtimer")?,
                expires: f("expires")?,
                softexpires: f("softexpires")?,
            },
            "hrtimer_expire_entry" => Layout::TimerExpire {
                hrtimer: f("hrtimer")?,
                now: f("now")?,
            },
            "sched_switch" => Layout::Switch(SwitchFields::of(format)?),
            "rseq_update" => Layout::UserReturn,
            "sched_wakeup" | "sched_waking" => Layout::Wakeup(WakeupFields::of(format)?),
            "irq_handler_entry" => Layout::IrqEntry {
                irq: f("irq")?,
                name: text("name")?,
            },
            "irq_handler_exit" => Layout::IrqExit { irq: f("irq")? },
            "softirq_entry" | "softirq_exit" => Layout::Softirq {
                vec: f("vec")?,
                entry: format.name == "softirq_entry",
            },
            "nmi_handler" => Layout::Nmi(NmiFields::of(format)?),
            other => match vector_event(other) {
                Some((index, entry)) => Layout::Vector { index, entry },
                None => return Err(format!("latscope does not decode trace event {other}")),
            },
        })
    }

    fn decode(&self, payload: &[u8], flags: Option<u64>) -> Option<Kind> {
        let int = |f: &Field| f.read_i64(payload);
        Some(match self {
            Layout::TimerStart {
                hrtimer,
                expires,
                softexpires,
            } => Kind::TimerStart {
                hrtimer: hrtimer.read_u64(payload)?,
                softexpires: int(softexpires)?,
                expires: int(expires)?,
                in_interrupt: flags? & IN_INTERRUPT != 0,
            },
            Layout::TimerExpire { hrtimer, now } => Kind::TimerExpire {
                hrtimer: hrtimer.read_u64(payload)?,
                now: int(now)?,
            },
            Layout::Switch(SwitchFields {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            }) => Kind::Switch(Switch {
                prev_pid: int(prev_pid)? as i32,
                prev_prio: int(prev_prio)? as i32,
                prev_state: prev_state.read_u64(payload)?,
                prev_comm: prev_comm.read_text(payload)?,
                next_pid: int(next_pid)? as i32,
                next_prio: int(next_prio)? as i32,
                next_comm: next_comm.read_text(payload)?,
            }),
            Layout::UserReturn => Kind::UserReturn {
                in_interrupt: flags? & IN_INTERRUPT != 0,
            },
            Layout::Wakeup(WakeupFields {
                pid,
                prio,
                target_cpu,
            }) => Kind::Wakeup {
                pid: int(pid)? as i32,
                prio: int(prio)? as i32,
                target_cpu: int(target_cpu)? as i32,
            },
            Layout::IrqEntry { irq, name } => Kind::IrqEntry {
                irq: int(irq)? as i32,
                name: name.read_text(payload)?,
            },
            Layout::IrqExit { irq } => Kind::IrqExit {
                irq: int(irq)? as i32,
            },
            Layout::Softirq { vec, entry } => {
                let vec = vec.read_u64(payload)? as u32;
                match entry {
                    true => Kind::SoftirqEntry { vec },
                    false => Kind::SoftirqExit { vec },
                }
            }
            Layout::Vector { index, entry } => match entry {
                true => Kind::VectorEntry { vector: *index },
                false => Kind::VectorExit { vector: *index },
            },
            Layout::Nmi(NmiFields { delta_ns, handled }) => Kind::Nmi {
                delta_ns: int(delta_ns)?.max(0) as u64,
                handled: int(handled)? as i32,
            },
        })
    }
}

/// An integer field (1, 2, 4 or 8 bytes) of `format`.
fn integer(format: &EventFormat, name: &str) -> Result<Field, String> {
    let field = format.field(name)?.clone();
    match field.size {
        1 | 2 | 4 | 8 => Ok(field),
        n => Err(format!("field {name} of {} has size {n}", format.name)),
    }
}

/// Decodes the records of a set of events, each by the field offsets its
/// `format` file gives, keyed by the event's name.
#[derive(Debug, Clone)]
pub struct EventDecoder {
    common_type: Field,
    common_flags: Field,
    common_pid: Field,
    events: Vec<(u16, Layout)>,
}

impl EventDecoder {
    /// A decoder of the listed `(system, event)`s.
    pub fn read_events(events_dir: &Path, events: &[(&str, &str)]) -> Result<EventDecoder, String> {
        let formats = events
            .iter()
            .map(|(system, event)| {
                EventFormat::read(&events_dir.join(system).join(event).join("format"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        EventDecoder::of(&formats)
    }

    /// A decoder of the timer, switch and (optional) return-to-user events
    /// from their formats (tests).
    pub fn new(
        start: &EventFormat,
        expire: &EventFormat,
        switch: &EventFormat,
        ret: Option<&EventFormat>,
    ) -> Result<EventDecoder, String> {
        let mut formats = vec![start.clone(), expire.clone(), switch.clone()];
        formats.extend(ret.cloned());
        EventDecoder::of(&formats)
    }

    /// A decoder of the events `formats` describe (each known by name).
    pub fn of(formats: &[EventFormat]) -> Result<EventDecoder, String> {
        let first = formats.first().ok_or("no trace event to decode")?;
        let mut ids: Vec<u16> = formats.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != formats.len() {
            let all: Vec<u16> = formats.iter().map(|f| f.id).collect();
            return Err(format!("trace events share an ID: {all:?}"));
        }
        Ok(EventDecoder {
            common_type: integer(first, "common_type")?,
            common_flags: integer(first, "common_flags")?,
            common_pid: integer(first, "common_pid")?,
            events: formats
                .iter()
                .map(|f| Ok((f.id, Layout::of(f)?)))
                .collect::<Result<_, String>>()?,
        })
    }

    /// Decodes one record payload written at `time` on `cpu`.
    pub fn decode(&self, time: u64, cpu: usize, payload: &[u8]) -> Decoded {
        let Some(id) = self.common_type.read_u64(payload) else {
            return Decoded::Malformed;
        };
        let Some((_, layout)) = self.events.iter().find(|(e, _)| u64::from(*e) == id) else {
            return Decoded::Other;
        };
        let flags = self.common_flags.read_u64(payload);
        match (
            layout.decode(payload, flags),
            self.common_pid.read_i64(payload),
        ) {
            (Some(kind), Some(pid)) => Decoded::Event(TraceEvent {
                time,
                cpu,
                pid: pid as i32,
                kind,
            }),
            _ => Decoded::Malformed,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn formats() -> [EventFormat; 4] {
        [
            include_str!("testdata/hrtimer_start.format"),
            include_str!("testdata/hrtimer_expire_entry.format"),
            include_str!("testdata/sched_switch.format"),
            include_str!("testdata/rseq_update.format"),
        ]
        .map(|text| EventFormat::parse(text).unwrap())
    }

    pub fn decoder() -> EventDecoder {
        let [s, e, w, r] = formats();
        EventDecoder::new(&s, &e, &w, Some(&r)).unwrap()
    }

    /// Writes `value` at the position of field `name` of `format` into `rec`.
    pub fn put(rec: &mut [u8], format: &EventFormat, name: &str, value: u64) {
        let f = format.field(name).unwrap();
        rec[f.offset..f.offset + f.size].copy_from_slice(&value.to_ne_bytes()[..f.size]);
    }

    /// A record of `format` with the given fields (the rest zero), sized like
    /// the kernel's (payload rounded to 4 bytes).
    pub fn record(format: &EventFormat, pid: i32, fields: &[(&str, u64)]) -> Vec<u8> {
        let end = format
            .fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap();
        let mut rec = vec![0u8; end.div_ceil(4) * 4];
        put(&mut rec, format, "common_type", u64::from(format.id));
        put(&mut rec, format, "common_pid", pid as u32 as u64);
        for (name, value) in fields {
            put(&mut rec, format, name, *value);
        }
        rec
    }

    #[test]
    fn decodes_each_event() {
        let [s, e, w, r] = formats();
        let d = decoder();
        let rec = record(
            &s,
            42,
            &[
                ("hrtimer", 0xffff_8880_0000_1000),
                ("softexpires", 5_000),
                ("expires", 5_050),
            ],
        );
        assert_eq!(
            d.decode(7, 1, &rec),
            Decoded::Event(TraceEvent {
                time: 7,
                cpu: 1,
                pid: 42,
                kind: Kind::TimerStart {
                    hrtimer: 0xffff_8880_0000_1000,
                    softexpires: 5_000,
                    expires: 5_050,
                    in_interrupt: false
                }
            })
        );
        let rec = record(&s, 42, &[("common_flags", 0x08 | 0x01)]);
        assert!(matches!(
            d.decode(0, 0, &rec),
            Decoded::Event(TraceEvent {
                kind: Kind::TimerStart {
                    in_interrupt: true,
                    ..
                },
                ..
            })
        ));
        let rec = record(&e, 0, &[("hrtimer", 9), ("now", 6_000)]);
        assert!(matches!(
            d.decode(0, 0, &rec),
            Decoded::Event(TraceEvent {
                kind: Kind::TimerExpire {
                    hrtimer: 9,
                    now: 6_000
                },
                ..
            })
        ));
        let rec = record(&w, 3, &[("next_pid", 42), ("prev_pid", 3)]);
        assert!(matches!(
            d.decode(0, 0, &rec),
            Decoded::Event(TraceEvent {
                pid: 3,
                kind: Kind::Switch(Switch {
                    prev_pid: 3,
                    next_pid: 42,
                    ..
                }),
                ..
            })
        ));
        let rec = record(&r, 42, &[("cpu_id", 1)]);
        assert!(matches!(
            d.decode(0, 0, &rec),
            Decoded::Event(TraceEvent {
                pid: 42,
                kind: Kind::UserReturn {
                    in_interrupt: false
                },
                ..
            })
        ));
        // Without the optional event its records are someone else's.
        let without = EventDecoder::new(&s, &e, &w, None).unwrap();
        assert_eq!(without.decode(0, 0, &rec), Decoded::Other);
    }

    fn activity_formats() -> Vec<EventFormat> {
        [
            include_str!("testdata/sched_switch.format"),
            include_str!("testdata/sched_wakeup.format"),
            include_str!("testdata/irq_handler_entry.format"),
            include_str!("testdata/irq_handler_exit.format"),
            include_str!("testdata/softirq_entry.format"),
            include_str!("testdata/softirq_exit.format"),
            include_str!("testdata/local_timer_entry.format"),
            include_str!("testdata/nmi_handler.format"),
        ]
        .map(|text| EventFormat::parse(text).unwrap())
        .to_vec()
    }

    #[test]
    fn decodes_the_spike_attribution_events() {
        let f = activity_formats();
        let d = EventDecoder::of(&f).unwrap();
        let kind = |rec: &[u8]| match d.decode(5, 1, rec) {
            Decoded::Event(e) => e.kind,
            other => panic!("{other:?}"),
        };
        let mut rec = record(
            &f[0],
            7,
            &[
                ("prev_pid", 7),
                ("prev_prio", 120),
                ("prev_state", Switch::PREEMPTED),
                ("next_pid", 9),
                ("next_prio", 19),
            ],
        );
        let comm = f[0].field("next_comm").unwrap().offset;
        rec[comm..comm + 11].copy_from_slice(b"spike-maker");
        let Kind::Switch(s) = kind(&rec) else {
            panic!()
        };
        assert_eq!(
            (s.prev_pid, s.prev_prio, s.next_pid, s.next_prio),
            (7, 120, 9, 19)
        );
        assert!(s.prev_runnable());
        assert_eq!(super::super::format::text_of(&s.next_comm), "spike-maker");
        assert_eq!(super::super::format::text_of(&s.prev_comm), "");
        let rec = record(&f[1], 0, &[("pid", 42), ("prio", 49), ("target_cpu", 1)]);
        assert_eq!(
            kind(&rec),
            Kind::Wakeup {
                pid: 42,
                prio: 49,
                target_cpu: 1
            }
        );
        // irq_handler_entry's name is a __data_loc string after the fields.
        let mut rec = record(&f[2], 0, &[("irq", 24)]);
        let at = rec.len() as u64;
        rec.extend_from_slice(b"virtio0-input\0\0\0");
        put(&mut rec, &f[2], "name", at | (14 << 16));
        let Kind::IrqEntry { irq: 24, name } = kind(&rec) else {
            panic!("{:?}", kind(&rec))
        };
        assert_eq!(super::super::format::text_of(&name), "virtio0-input");
        let rec = record(&f[3], 0, &[("irq", 24), ("ret", 1)]);
        assert_eq!(kind(&rec), Kind::IrqExit { irq: 24 });
        let rec = record(&f[4], 0, &[("vec", 3)]);
        assert_eq!(kind(&rec), Kind::SoftirqEntry { vec: 3 });
        assert_eq!(softirq_name(3), "NET_RX");
        assert_eq!(softirq_name(12), "softirq 12");
        let rec = record(&f[5], 0, &[("vec", 3)]);
        assert_eq!(kind(&rec), Kind::SoftirqExit { vec: 3 });
        let rec = record(&f[6], 0, &[("vector", 236)]);
        assert_eq!(kind(&rec), Kind::VectorEntry { vector: 0 });
        assert_eq!(VECTORS[0], "local_timer");
        let rec = record(
            &f[7],
            0,
            &[
                ("handler", 0xffff_ffff_8100_0000),
                ("delta_ns", 41_500),
                ("handled", 1),
            ],
        );
        assert_eq!(
            kind(&rec),
            Kind::Nmi {
                delta_ns: 41_500,
                handled: 1
            }
        );
        // A switch away from a sleeping task.
        let rec = record(&f[0], 7, &[("prev_state", 1)]);
        let Kind::Switch(s) = kind(&rec) else {
            panic!()
        };
        assert!(!s.prev_runnable());
        // A name past the record's end is malformed, not a panic.
        let mut rec = record(&f[2], 0, &[("irq", 24)]);
        put(&mut rec, &f[2], "name", 200 | (14 << 16));
        assert_eq!(d.decode(0, 0, &rec), Decoded::Malformed);
    }

    #[test]
    fn unknown_events_are_refused_by_name() {
        let mut f = activity_formats().remove(0);
        f.name = "sched_stat_runtime".into();
        assert!(
            EventDecoder::of(&[f])
                .unwrap_err()
                .contains("sched_stat_runtime")
        );
        assert!(EventDecoder::of(&[]).is_err());
    }

    #[test]
    fn other_and_short_records() {
        let [s, ..] = formats();
        let d = decoder();
        let mut rec = record(&s, 1, &[]);
        put(&mut rec, &s, "common_type", 9999);
        assert_eq!(d.decode(0, 0, &rec), Decoded::Other);
        let rec = record(&s, 1, &[]);
        assert_eq!(d.decode(0, 0, &rec[..20]), Decoded::Malformed);
        assert_eq!(d.decode(0, 0, &[1]), Decoded::Malformed);
    }

    #[test]
    fn refuses_unusable_formats() {
        let [s, e, w, r] = formats();
        let same = EventFormat {
            id: s.id,
            ..e.clone()
        };
        assert!(EventDecoder::new(&s, &same, &w, None).is_err());
        let same = EventFormat {
            id: w.id,
            ..r.clone()
        };
        assert!(EventDecoder::new(&s, &e, &w, Some(&same)).is_err());
        let mut odd = w.clone();
        odd.fields.retain(|f| f.name != "next_pid");
        assert!(
            EventDecoder::new(&s, &e, &odd, None)
                .unwrap_err()
                .contains("next_pid")
        );
    }
}
