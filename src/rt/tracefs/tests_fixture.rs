//! The decoder on a real page: `testdata/page_cpu0.bin` is one sub-buffer
//! read from `per_cpu/cpu0/trace_pipe_raw` on this machine (Linux 6.18,
//! x86-64) with the format files next to it, and `trace_cpu0.txt` is the
//! kernel's own text rendering of the same buffer, read just before (it does
//! not consume). Rewrite them with the ignored test
//! `tests_live::capture_fixture`.
//!
//! The workload: one SCHED_FIFO thread on CPU 0 sleeping with
//! `clock_nanosleep(TIMER_ABSTIME)` until E0, E0 + 1 ms, E0 + 2 ms, then
//! E0 + 200 ms (a pause longer than 2^27 ns, so the page holds a time-extend
//! record) and E0 + 201 ms.

use super::events::{Decoded, EventDecoder, Kind, TraceEvent};
use super::format::{EventFormat, RingLayout};
use super::ring::{self, Missed};
use std::collections::HashMap;

const PAGE: &[u8] = include_bytes!("testdata/page_cpu0.bin");
const TEXT: &str = include_str!("testdata/trace_cpu0.txt");

fn decoder() -> EventDecoder {
    let f = |text| EventFormat::parse(text).unwrap();
    EventDecoder::new(
        &f(include_str!("testdata/hrtimer_start.format")),
        &f(include_str!("testdata/hrtimer_expire_entry.format")),
        &f(include_str!("testdata/sched_switch.format")),
        Some(&f(include_str!("testdata/rseq_update.format"))),
    )
    .unwrap()
}

/// The page's time stamp, its loss flag and its events (also the input of
/// the wake-up pairing's test, `probes::wakeups::tests_pairing`).
pub(crate) fn decode() -> (u64, Missed, Vec<TraceEvent>) {
    let layout = RingLayout::parse(
        include_str!("testdata/header_page"),
        include_str!("testdata/header_event"),
    )
    .unwrap();
    let page = ring::parse_page(PAGE, &layout).unwrap();
    let d = decoder();
    let mut events = Vec::new();
    let count = page
        .records(|t, payload| match d.decode(t, 0, payload) {
            Decoded::Event(e) => events.push(e),
            other => panic!("unexpected record {other:?}"),
        })
        .unwrap();
    assert_eq!(count, events.len());
    (page.timestamp, page.missed, events)
}

/// One line of the text trace, the parts the decoder must agree with.
#[derive(Debug)]
struct TextLine {
    pid: i32,
    usecs: u64,
    hardirq: bool,
    event: String,
    fields: HashMap<String, String>,
}

fn parse_text() -> Vec<TextLine> {
    TEXT.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (head, rest) = line.split_once("] ").expect("cpu column");
            let task = head.rsplit_once(" [").expect("task").0.trim();
            let pid = task.rsplit_once('-').unwrap().1.parse().unwrap();
            let (flags, rest) = rest.split_once(' ').unwrap();
            let (stamp, rest) = rest.trim_start().split_once(": ").unwrap();
            let (secs, usecs) = stamp.split_once('.').unwrap();
            let (event, fields) = rest.split_once(": ").unwrap();
            TextLine {
                pid,
                usecs: secs.parse::<u64>().unwrap() * 1_000_000 + usecs.parse::<u64>().unwrap(),
                hardirq: flags.as_bytes()[2] == b'h',
                event: event.to_string(),
                fields: fields
                    .split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn the_real_page_decodes_as_the_kernel_prints_it() {
    let (page_time, missed, events) = decode();
    assert_eq!(page_time, 6_826_101_079_672);
    assert_eq!(missed, Missed::None);
    let text = parse_text();
    assert_eq!(events.len(), 22);
    assert_eq!(events.len(), text.len(), "one decoded record per text line");
    // Hashed pointers (%p) in the text must map one-to-one to raw ones.
    let mut hashed_of: HashMap<u64, String> = HashMap::new();
    for (e, t) in events.iter().zip(&text) {
        // The text rounds to the nearest microsecond (ns2usecs adds 500).
        assert_eq!((e.time + 500) / 1000, t.usecs, "{e:?} vs {t:?}");
        assert_eq!(e.pid, t.pid, "{t:?}");
        let field = |k: &str| t.fields[k].parse::<i64>().unwrap();
        let mut same_pointer = |raw: u64| {
            let hashed = &t.fields["hrtimer"];
            assert_eq!(
                hashed_of.entry(raw).or_insert_with(|| hashed.clone()),
                hashed
            );
        };
        match e.kind {
            Kind::TimerStart {
                hrtimer,
                softexpires,
                expires,
                in_interrupt,
            } => {
                assert_eq!(t.event, "hrtimer_start");
                assert_eq!(softexpires, field("softexpires"));
                assert_eq!(expires, field("expires"));
                assert_eq!(in_interrupt, t.hardirq);
                same_pointer(hrtimer);
            }
            Kind::TimerExpire { hrtimer, now } => {
                assert_eq!(t.event, "hrtimer_expire_entry");
                assert_eq!(now, field("now"));
                assert!(t.hardirq);
                same_pointer(hrtimer);
            }
            Kind::Switch(switch) => {
                assert_eq!(t.event, "sched_switch");
                assert_eq!(i64::from(switch.next_pid), field("next_pid"));
                assert_eq!(i64::from(switch.prev_pid), field("prev_pid"));
                assert_eq!(
                    crate::rt::tracefs::format::text_of(&switch.next_comm),
                    t.fields["next_comm"]
                );
            }
            Kind::UserReturn { in_interrupt } => {
                assert_eq!(t.event, "rseq_update");
                assert!(!in_interrupt);
            }
            other => panic!("the breakdown decoder made {other:?}"),
        }
    }
    // Values pinned from this page (exact ns, which the text cannot show).
    assert_eq!(events[0].time, 6_826_101_079_672); // first record: delta 0
    assert_eq!(
        events[2].kind,
        Kind::TimerStart {
            hrtimer: match events[2].kind {
                Kind::TimerStart { hrtimer, .. } => hrtimer,
                _ => unreachable!(),
            },
            softexpires: 6_826_119_868_505,
            expires: 6_826_119_868_505,
            in_interrupt: false,
        }
    );
    // Across the time extend: the first record after the 198 ms pause.
    assert_eq!(events[15].time, 6_826_319_911_792);
    assert_eq!(
        events[15].kind,
        Kind::TimerExpire {
            hrtimer: match events[14].kind {
                Kind::TimerStart { hrtimer, .. } => hrtimer,
                _ => unreachable!(),
            },
            now: 6_826_319_908_317
        }
    );
}
