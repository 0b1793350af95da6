//! The tracefs tier's classification on fixtures: gaps of CPU 1's sampler
//! against the events of its trace, through the reader's consumer.

use super::*;
use crate::rt::tracefs::events::{Comm, IrqName, Switch};

const CPU: usize = 1;
const SAMPLER: i32 = 500;
const US: u64 = 1_000;

fn comm(name: &str) -> Comm {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

fn irq_name(name: &str) -> IrqName {
    let mut n = [0u8; 32];
    n[..name.len()].copy_from_slice(name.as_bytes());
    n
}

/// An event at `time` us.
fn on(cpu: usize, time: u64, kind: Kind) -> TraceEvent {
    TraceEvent {
        time: time * US,
        cpu,
        pid: SAMPLER,
        kind,
    }
}

fn ev(time: u64, kind: Kind) -> TraceEvent {
    on(CPU, time, kind)
}

fn irq(time: u64, entry: bool) -> TraceEvent {
    match entry {
        true => ev(
            time,
            Kind::IrqEntry {
                irq: 24,
                name: irq_name("virtio0-input"),
            },
        ),
        false => ev(time, Kind::IrqExit { irq: 24 }),
    }
}

fn switch(time: u64, prev: (i32, &str), next: (i32, &str)) -> TraceEvent {
    ev(
        time,
        Kind::Switch(Switch {
            prev_pid: prev.0,
            prev_prio: 4,
            prev_state: Switch::PREEMPTED,
            prev_comm: comm(prev.1),
            next_pid: next.0,
            next_prio: 3,
            next_comm: comm(next.1),
        }),
    )
}

/// A gap from `from` to `to` (us): an outer gap closed by a 20 ns pair.
fn gap(from: u64, to: u64) -> Gap {
    Gap {
        at_ns: from * US,
        inner_ns: 20,
        outer_ns: to * US - from * US - 20,
        interference: Interference::Unknown,
    }
}

/// Runs the classifier on CPU 1: `gaps` sampled in window 0 over
/// `[0, 10 ms]`, then `events`; what it found.
fn found(gaps: &[Gap], events: &[TraceEvent], lost: Option<LostSpan>) -> TracedCpu {
    let feed = Feed {
        queue: Arc::new(SpscRing::with_capacity(64)),
        sampler: Arc::new(AtomicI32::new(0)),
    };
    let out = Arc::new(Mutex::new(None));
    let mut c = GapClassifier::new(&[(CPU, feed.clone())], 1_000, true, out.clone());
    let counts = &mut ReaderCounts::default();
    c.started(900);
    feed.started(SAMPLER);
    feed.sampled(gaps, 0, 10_000 * US, 0);
    c.poll();
    if let Some(lost) = lost {
        c.gap(lost, counts);
    }
    for e in events {
        c.event(e, counts);
    }
    c.finish(20_000 * US, counts);
    let mut all = out.lock().unwrap().take().unwrap();
    all.remove(&CPU).unwrap()
}

/// Each gap's class in the gap log, by its start (us).
fn classes(t: &TracedCpu) -> Vec<(u64, String)> {
    let log = t.log.as_ref().unwrap();
    log.records
        .iter()
        .map(|r| {
            let (class, cause) = log.words(r);
            let word = if cause.is_empty() { class } else { cause };
            (r.at_ns / US, word.to_string())
        })
        .collect()
}

fn pairs(list: &[(u64, &str)]) -> Vec<(u64, String)> {
    list.iter().map(|(t, c)| (*t, c.to_string())).collect()
}

#[test]
fn a_gap_no_event_covers_is_hardware_and_one_an_event_overlaps_is_the_os() {
    let events = [
        // Inside the second gap: an IRQ of 5 us.
        irq(2_010, true),
        irq(2_015, false),
        // Inside the third: the local timer (an x86 system vector).
        ev(3_010, Kind::VectorEntry { vector: 0 }),
        ev(3_012, Kind::VectorExit { vector: 0 }),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(
        &[gap(1_000, 1_050), gap(2_000, 2_050), gap(3_000, 3_050)],
        &events,
        None,
    );
    assert_eq!(
        classes(&t),
        pairs(&[
            (1_000, "hardware"),
            (2_000, "irq 24 (virtio0-input)"),
            (3_000, "irq LOC")
        ])
    );
    assert_eq!(t.tally.hardware_count(), 1);
    assert_eq!(t.tally.os_count, 2);
    assert_eq!(t.classified_ns, 10_000 * US);
    // One hwlatdetect sample for window 0: the hardware gap.
    assert_eq!(t.samples.len(), 1);
    assert_eq!(t.samples[0].count, 1);
    assert_eq!(t.samples[0].realtime_ns, 1_000 * US + 1_000);
}

#[test]
fn an_event_straddling_a_boundary_counts_and_one_touching_it_does_not() {
    let events = [
        // Entered before the first gap, left inside it.
        irq(990, true),
        irq(1_010, false),
        // Left exactly when the second gap began, entered exactly at its end.
        irq(1_990, true),
        irq(2_000, false),
        irq(2_050, true),
        irq(2_060, false),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(&[gap(1_000, 1_050), gap(2_000, 2_050)], &events, None);
    assert_eq!(
        classes(&t),
        pairs(&[(1_000, "irq 24 (virtio0-input)"), (2_000, "hardware")])
    );
}

#[test]
fn the_innermost_context_that_took_most_of_the_gap_names_it() {
    let events = [
        // A softirq open across the gap, with a 5 us IRQ nested in it.
        ev(990, Kind::SoftirqEntry { vec: 3 }),
        irq(1_020, true),
        irq(1_025, false),
        ev(1_060, Kind::SoftirqExit { vec: 3 }),
        // A softirq of 5 us inside which an IRQ runs 30 us.
        ev(2_005, Kind::SoftirqEntry { vec: 3 }),
        irq(2_006, true),
        irq(2_036, false),
        ev(2_040, Kind::SoftirqExit { vec: 3 }),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(&[gap(1_000, 1_050), gap(2_000, 2_050)], &events, None);
    assert_eq!(
        classes(&t),
        pairs(&[
            (1_000, "softirq NET_RX + irq 24 (virtio0-input)"),
            (2_000, "irq 24 (virtio0-input) + softirq NET_RX")
        ])
    );
}

#[test]
fn an_nmi_inside_a_gap_names_it_and_every_nmi_is_counted_with_its_time() {
    let events = [
        // 30 us in an NMI handler ending inside the gap.
        ev(
            1_040,
            Kind::Nmi {
                delta_ns: 30 * US,
                handled: 1,
            },
        ),
        // Another outside any gap.
        ev(
            5_000,
            Kind::Nmi {
                delta_ns: 2 * US,
                handled: 1,
            },
        ),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(&[gap(1_000, 1_050)], &events, None);
    assert_eq!(classes(&t), pairs(&[(1_000, "NMI")]));
    assert_eq!(
        t.nmis,
        NmiTally {
            count: 2,
            total_ns: 32 * US,
            max_ns: 30 * US
        }
    );
}

#[test]
fn events_of_another_cpu_are_ignored() {
    let events = [
        on(0, 1_010, Kind::SoftirqEntry { vec: 3 }),
        on(0, 1_040, Kind::SoftirqExit { vec: 3 }),
        on(
            0,
            1_045,
            Kind::Nmi {
                delta_ns: 10 * US,
                handled: 1,
            },
        ),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(&[gap(1_000, 1_050)], &events, None);
    assert_eq!(classes(&t), pairs(&[(1_000, "hardware")]));
    assert_eq!(t.nmis.count, 0);
}

#[test]
fn a_task_switched_in_names_itself_by_pid() {
    let events = [
        ev(1_001, Kind::VectorEntry { vector: 0 }),
        ev(1_003, Kind::VectorExit { vector: 0 }),
        switch(1_004, (SAMPLER, "hwlat/1"), (77, "burst")),
        switch(2_004, (77, "burst"), (SAMPLER, "hwlat/1")),
        ev(9_000, Kind::VectorEntry { vector: 0 }),
    ];
    let t = found(&[gap(1_000, 2_005)], &events, None);
    assert_eq!(
        classes(&t),
        pairs(&[(1_000, "task burst (pid 77) + irq LOC")])
    );
}

#[test]
fn a_gap_the_trace_lost_events_of_is_unclassified() {
    let lost = LostSpan {
        cpu: CPU,
        since_ns: 1_500 * US,
        until_ns: 2_500 * US,
    };
    let events = [ev(9_000, Kind::VectorEntry { vector: 0 })];
    let t = found(&[gap(1_000, 1_050), gap(2_000, 2_050)], &events, Some(lost));
    assert_eq!(
        classes(&t),
        pairs(&[(1_000, "hardware"), (2_000, UNCLASSIFIED)])
    );
    assert_eq!(t.unclassified, 1);
    // The stretch holding the lost span is not classified.
    assert_eq!(t.classified_ns, 0);
}

#[test]
fn items_wait_for_the_trace_to_pass_them() {
    let feed = Feed {
        queue: Arc::new(SpscRing::with_capacity(64)),
        sampler: Arc::new(AtomicI32::new(SAMPLER)),
    };
    let out = Arc::new(Mutex::new(None));
    let mut c = GapClassifier::new(&[(CPU, feed.clone())], 0, false, out);
    let counts = &mut ReaderCounts::default();
    feed.sampled(&[gap(1_000, 1_050)], 0, 2_000 * US, 0);
    c.poll();
    // The IRQ inside the gap comes after an event before the gap's end.
    c.event(&irq(1_010, true), counts);
    assert_eq!(c.cpus[0].pending.len(), 2);
    c.event(&irq(1_020, false), counts);
    c.event(&ev(1_060, Kind::VectorEntry { vector: 0 }), counts);
    assert_eq!(c.cpus[0].pending.len(), 1, "the gap is settled");
    assert_eq!(c.cpus[0].found.tally.os_count, 1);
    c.event(&ev(2_001, Kind::VectorExit { vector: 0 }), counts);
    assert!(c.cpus[0].pending.is_empty());
}

#[test]
fn causes_are_named_as_the_other_tiers_name_them() {
    let cause = |kind: &str, name: &str| Cause {
        kind: kind.into(),
        name: name.into(),
        ns: 1,
        count: 1,
    };
    assert_eq!(
        cause_name(&cause("irq", "24 virtio0-input")),
        "irq 24 (virtio0-input)"
    );
    assert_eq!(cause_name(&cause("irq", "call_function_single")), "irq CAL");
    assert_eq!(cause_name(&cause("irq", "reschedule")), "irq RES");
    assert_eq!(cause_name(&cause("softirq", "NET_RX")), "softirq NET_RX");
    assert_eq!(cause_name(&cause("nmi", "NMI")), "NMI");
    assert_eq!(
        cause_name(&cause("task", "burst (pid 7)")),
        "task burst (pid 7)"
    );
    assert_eq!(
        class_of_causes(&[
            cause(HARDWARE_KIND, "x"),
            cause("softirq", "RCU"),
            cause("irq", "local_timer")
        ]),
        GapClass::Os("softirq RCU + irq LOC".into())
    );
    assert_eq!(
        class_of_causes(&[cause(HARDWARE_KIND, "x")]),
        GapClass::Hardware
    );
}
