//! The three trace events the wake-up breakdown needs, decoded from raw record
//! payloads by the field offsets of their `format` files.

use super::format::{EventFormat, Field};
use std::path::Path;

/// `(system, event)` of the events the breakdown cannot do without.
pub const NEEDED: [(&str, &str); 3] = [
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
    ("sched", "sched_switch"),
];

/// The event that marks a thread's return to user space, used when the
/// kernel has it (CONFIG_RSEQ): written on the way out of the kernel by every
/// task registered for restartable sequences (glibc 2.35+ registers every
/// thread) after it was switched out. It is needed because a kernel may not
/// trace every switch: on this machine (6.18, KVM guest) a switch *from the
/// idle task* on CPU 1 never emits `sched_switch` (CPU 0 does; `perf stat`
/// counts more context switches than `sched:sched_switch` events, so the
/// tracepoint itself is skipped), and a thread woken on idle CPU 1 has no
/// sched-in event.
pub const RETURN: (&str, &str) = ("rseq", "rseq_update");

/// `common_flags` bits of a record written in interrupt context (hard irq,
/// softirq, NMI): `TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ | TRACE_FLAG_NMI` of
/// the kernel's `trace_flag_type`, stable since 2.6 and printed as `h`/`s`/`H`
/// by the text output.
const IN_INTERRUPT: u64 = 0x08 | 0x10 | 0x40;

/// What happened, with the fields the breakdown uses.
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
    TimerExpire { hrtimer: u64, now: i64 },
    /// `sched_switch`: `next_pid` gets the CPU.
    Switch { next_pid: i32 },
    /// `rseq_update`: the writing task is about to return to user space.
    UserReturn { in_interrupt: bool },
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

/// Field positions of the needed events, from their `format` files.
#[derive(Debug, Clone)]
pub struct EventDecoder {
    common_type: Field,
    common_flags: Field,
    common_pid: Field,
    start_id: u16,
    start_hrtimer: Field,
    start_expires: Field,
    start_softexpires: Field,
    expire_id: u16,
    expire_hrtimer: Field,
    expire_now: Field,
    switch_id: u16,
    switch_next_pid: Field,
    return_id: Option<u16>,
}

impl EventDecoder {
    /// Reads the format files under `events_dir` (`<tracefs>/events`); the
    /// return event only when `with_return` (it is optional).
    pub fn read(events_dir: &Path, with_return: bool) -> Result<EventDecoder, String> {
        let path =
            |(system, event): (&str, &str)| events_dir.join(system).join(event).join("format");
        let [start, expire, switch] = NEEDED.map(|e| EventFormat::read(&path(e)));
        let ret = match with_return {
            true => Some(EventFormat::read(&path(RETURN))?),
            false => None,
        };
        EventDecoder::new(&start?, &expire?, &switch?, ret.as_ref())
    }

    pub fn new(
        start: &EventFormat,
        expire: &EventFormat,
        switch: &EventFormat,
        ret: Option<&EventFormat>,
    ) -> Result<EventDecoder, String> {
        let mut ids = vec![start.id, expire.id, switch.id];
        ids.extend(ret.map(|r| r.id));
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        if unique.len() != ids.len() {
            return Err(format!("trace events share an ID: {ids:?}"));
        }
        let integer = |format: &EventFormat, name: &str| -> Result<Field, String> {
            let field = format.field(name)?.clone();
            match field.size {
                1 | 2 | 4 | 8 => Ok(field),
                n => Err(format!("field {name} of {} has size {n}", format.name)),
            }
        };
        Ok(EventDecoder {
            common_type: integer(start, "common_type")?,
            common_flags: integer(start, "common_flags")?,
            common_pid: integer(start, "common_pid")?,
            start_id: start.id,
            start_hrtimer: integer(start, "hrtimer")?,
            start_expires: integer(start, "expires")?,
            start_softexpires: integer(start, "softexpires")?,
            expire_id: expire.id,
            expire_hrtimer: integer(expire, "hrtimer")?,
            expire_now: integer(expire, "now")?,
            switch_id: switch.id,
            switch_next_pid: integer(switch, "next_pid")?,
            return_id: ret.map(|r| r.id),
        })
    }

    /// Decodes one record payload written at `time` on `cpu`.
    pub fn decode(&self, time: u64, cpu: usize, payload: &[u8]) -> Decoded {
        let Some(id) = self.common_type.read_u64(payload) else {
            return Decoded::Malformed;
        };
        let kind = if id == u64::from(self.start_id) {
            self.start(payload)
        } else if id == u64::from(self.expire_id) {
            self.expire_hrtimer
                .read_u64(payload)
                .zip(self.expire_now.read_i64(payload))
                .map(|(hrtimer, now)| Kind::TimerExpire { hrtimer, now })
        } else if id == u64::from(self.switch_id) {
            self.switch_next_pid
                .read_i64(payload)
                .map(|pid| Kind::Switch {
                    next_pid: pid as i32,
                })
        } else if Some(id) == self.return_id.map(u64::from) {
            self.in_interrupt(payload)
                .map(|in_interrupt| Kind::UserReturn { in_interrupt })
        } else {
            return Decoded::Other;
        };
        match (kind, self.common_pid.read_i64(payload)) {
            (Some(kind), Some(pid)) => Decoded::Event(TraceEvent {
                time,
                cpu,
                pid: pid as i32,
                kind,
            }),
            _ => Decoded::Malformed,
        }
    }

    fn start(&self, payload: &[u8]) -> Option<Kind> {
        Some(Kind::TimerStart {
            hrtimer: self.start_hrtimer.read_u64(payload)?,
            softexpires: self.start_softexpires.read_i64(payload)?,
            expires: self.start_expires.read_i64(payload)?,
            in_interrupt: self.in_interrupt(payload)?,
        })
    }

    fn in_interrupt(&self, payload: &[u8]) -> Option<bool> {
        Some(self.common_flags.read_u64(payload)? & IN_INTERRUPT != 0)
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
                kind: Kind::Switch { next_pid: 42 },
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
