//! The tracefs pairing (`pairing.rs`), event by event: synthetic sequences
//! of every case the kernel was seen to produce, then the real page of
//! `rt/tracefs/testdata` that the tracefs decoder's own test reads.

use super::pairing::{Matcher, TracedThread, WakeupRecord, diff};
use crate::rt::tracefs::events::{Kind, Switch, TraceEvent};

const A: i32 = 100;
const B: i32 = 200;
const E0: u64 = 1_000_000;
const P: u64 = 1_000;

fn threads() -> Vec<TracedThread> {
    vec![
        TracedThread {
            tid: A,
            cpu: 0,
            first_expiry_ns: E0,
            period_ns: P,
        },
        TracedThread {
            tid: B,
            cpu: 1,
            first_expiry_ns: E0 + 500,
            period_ns: P,
        },
    ]
}

fn start(time: u64, pid: i32, hrtimer: u64, soft: u64) -> TraceEvent {
    TraceEvent {
        time,
        cpu: 0,
        pid,
        kind: Kind::TimerStart {
            hrtimer,
            softexpires: soft as i64,
            expires: soft as i64 + 50_000,
            in_interrupt: false,
        },
    }
}

fn expire(time: u64, hrtimer: u64) -> TraceEvent {
    TraceEvent {
        time,
        cpu: 0,
        pid: 0,
        kind: Kind::TimerExpire {
            hrtimer,
            now: time as i64 - 1,
        },
    }
}

fn switch(time: u64, next: i32) -> TraceEvent {
    TraceEvent {
        time,
        cpu: 0,
        pid: 0,
        kind: Kind::Switch(Switch::to(next)),
    }
}

fn ret(time: u64, pid: i32) -> TraceEvent {
    TraceEvent {
        time,
        cpu: 0,
        pid,
        kind: Kind::UserReturn {
            in_interrupt: false,
        },
    }
}

/// Without return events: the sched-in closes the record.
fn run(events: &[TraceEvent]) -> Vec<WakeupRecord> {
    run_with(false, events)
}

fn run_with(close_on_return: bool, events: &[TraceEvent]) -> Vec<WakeupRecord> {
    let mut m = Matcher::new(&threads(), close_on_return);
    let mut out = Vec::new();
    for e in events {
        m.feed(e, &mut |r| out.push(r));
    }
    out
}

fn rec(tid: i32, expires: u64, irq: Option<i64>, thread: Option<i64>) -> WakeupRecord {
    WakeupRecord {
        tid,
        cpu: if tid == A { 0 } else { 1 },
        expires_ns: expires,
        irq_ns: irq,
        thread_ns: thread,
        return_ns: None,
    }
}

fn rec3(
    tid: i32,
    expires: u64,
    irq: Option<i64>,
    thread: Option<i64>,
    back: Option<i64>,
) -> WakeupRecord {
    WakeupRecord {
        return_ns: back,
        ..rec(tid, expires, irq, thread)
    }
}

#[test]
fn a_clean_wakeup_and_the_next() {
    let out = run(&[
        start(900_000, A, 0xa1, E0),
        expire(E0 + 11, 0xa1), // now = E0 + 10
        switch(E0 + 30, A),
        start(E0 + 40, A, 0xa2, E0 + P),
        expire(E0 + P + 6, 0xa2),
        switch(E0 + P + 20, A),
    ]);
    assert_eq!(
        out,
        vec![
            rec(A, E0, Some(10), Some(30)),
            rec(A, E0 + P, Some(5), Some(20))
        ]
    );
    assert!(out[0].is_complete());
}

#[test]
fn timerfd_rearms_at_the_same_address_after_the_switch() {
    let out = run(&[
        start(900_000, A, 0xf0, E0), // timerfd_settime
        expire(E0 + 3, 0xf0),
        switch(E0 + 9, A),
        start(E0 + 12, A, 0xf0, E0 + P), // read() re-arms
        expire(E0 + P + 4, 0xf0),
        switch(E0 + P + 8, A),
    ]);
    assert_eq!(
        out,
        vec![
            rec(A, E0, Some(2), Some(9)),
            rec(A, E0 + P, Some(3), Some(8))
        ]
    );
}

#[test]
fn timers_off_the_schedule_are_ignored() {
    let out = run(&[
        start(900_000, A, 0xbad, E0 + 1), // e.g. the RT bandwidth timer
        start(900_000, A, 0xbad, E0 - P), // before E0
        start(900_001, A, 0xa1, E0),
        expire(E0 + 1, 0xbad),
        expire(E0 + 5, 0xa1),
        switch(E0 + 9, A),
    ]);
    assert_eq!(out, vec![rec(A, E0, Some(4), Some(9))]);
}

#[test]
fn timers_armed_from_interrupts_or_other_tasks_are_ignored() {
    let mut tick = start(900_000, A, 0x71c, E0);
    if let Kind::TimerStart { in_interrupt, .. } = &mut tick.kind {
        *in_interrupt = true;
    }
    let out = run(&[
        start(900_000, A, 0xa1, E0),
        tick,                        // the tick, on a round expiry
        start(900_001, 7, 0x77, E0), // another task
        expire(E0 + 2, 0x71c),
        expire(E0 + 2, 0x77),
        expire(E0 + 5, 0xa1),
        switch(E0 + 9, A),
    ]);
    assert_eq!(out, vec![rec(A, E0, Some(4), Some(9))]);
}

#[test]
fn two_threads_interleaved() {
    let eb = E0 + 500;
    let out = run(&[
        start(1, A, 0xa1, E0),
        start(2, B, 0xb1, eb),
        expire(E0 + 3, 0xa1),
        switch(E0 + 7, A),
        expire(eb + 4, 0xb1),
        switch(eb + 5, B),
    ]);
    assert_eq!(
        out,
        vec![rec(A, E0, Some(2), Some(7)), rec(B, eb, Some(3), Some(5))]
    );
}

#[test]
fn a_switch_before_the_expiry_is_not_the_wakeup() {
    let out = run(&[
        start(1, A, 0xa1, E0),
        switch(2, A), // preempted on its way to sleep, back on the CPU
        expire(E0 + 3, 0xa1),
        switch(E0 + 7, A),
    ]);
    assert_eq!(out, vec![rec(A, E0, Some(2), Some(7))]);
}

#[test]
fn a_new_arming_closes_an_unfinished_wakeup() {
    // The thread was late: the timer fired while it still ran, so it was
    // never switched in for E0; then it armed E0 + 2P (skipping one).
    let out = run(&[
        start(1, A, 0xa1, E0),
        expire(E0 + 3, 0xa1),
        start(E0 + 1500, A, 0xa2, E0 + 2 * P),
        start(E0 + 1600, A, 0xa3, E0 + 3 * P), // nothing seen for 2P
        expire(E0 + 3 * P + 3, 0xa3),
        switch(E0 + 3 * P + 4, A),
    ]);
    assert_eq!(
        out,
        vec![
            rec(A, E0, Some(2), None),
            rec(A, E0 + 2 * P, None, None),
            rec(A, E0 + 3 * P, Some(2), Some(4)),
        ]
    );
}

#[test]
fn rearming_the_same_expiry_is_the_same_wakeup() {
    let out = run(&[
        start(1, A, 0xa1, E0),
        start(2, A, 0xa9, E0), // restarted sleep, new stack address
        expire(E0 + 3, 0xa1),  // the old address no longer counts
        expire(E0 + 4, 0xa9),
        switch(E0 + 7, A),
    ]);
    assert_eq!(out, vec![rec(A, E0, Some(3), Some(7))]);
}

#[test]
fn a_second_expiry_without_rearm_closes_the_record() {
    // timerfd: the switch and the re-arm for E0 + P were lost.
    let out = run(&[
        start(1, A, 0xf0, E0),
        expire(E0 + 3, 0xf0),
        expire(E0 + P + 3, 0xf0),
        switch(E0 + P + 9, A), // must not become thread_ns ~ P
    ]);
    assert_eq!(out, vec![rec(A, E0, Some(2), None)]);
}

#[test]
fn an_expiry_before_the_soft_expiry_is_not_ours() {
    let out = run(&[
        start(1, A, 0xa1, E0),
        expire(E0 - 5, 0xa1),
        switch(E0 + 7, A),
    ]);
    assert_eq!(out, vec![rec(A, E0, None, Some(7))]);
}

#[test]
fn a_reused_address_belongs_to_the_latest_arming() {
    let eb = E0 + 500;
    let out = run(&[
        start(1, A, 0x5, E0),
        start(2, B, 0x5, eb), // A's timer is gone (its events lost)
        expire(eb + 2, 0x5),
        switch(eb + 3, B),
    ]);
    assert_eq!(out, vec![rec(B, eb, Some(1), Some(3))]);
}

#[test]
fn gaps_close_only_what_was_due() {
    let mut m = Matcher::new(&threads(), false);
    let mut out = Vec::new();
    let mut emit = |r| out.push(r);
    m.feed(&start(1, A, 0xa1, E0), &mut emit);
    m.feed(&start(2, B, 0xb1, E0 + 500), &mut emit);
    m.gap(E0 + 100, &mut emit); // lost events before E0 + 100
    m.feed(&expire(E0 + 200, 0xa1), &mut emit); // not paired across the gap
    m.feed(&switch(E0 + 300, A), &mut emit);
    m.feed(&expire(E0 + 504, 0xb1), &mut emit);
    m.feed(&switch(E0 + 509, B), &mut emit);
    assert_eq!(
        out,
        vec![rec(A, E0, None, None), rec(B, E0 + 500, Some(3), Some(9))]
    );
}

#[test]
fn finish_emits_only_wakeups_partly_seen() {
    let mut m = Matcher::new(&threads(), false);
    let mut out = Vec::new();
    let mut emit = |r| out.push(r);
    m.feed(&start(1, A, 0xa1, E0), &mut emit);
    m.feed(&expire(E0 + 3, 0xa1), &mut emit);
    m.feed(&start(2, B, 0xb1, E0 + 500), &mut emit); // re-armed, then closed
    m.finish(E0 + 600, &mut emit);
    m.finish(E0 + 700, &mut emit); // idempotent
    assert_eq!(out, vec![rec(A, E0, Some(2), None)]);
}

#[test]
fn odd_values_do_not_panic() {
    let mut t = threads();
    t[0].period_ns = 0; // only E0 itself is on the schedule
    let mut m = Matcher::new(&t, false);
    let mut out = Vec::new();
    let mut emit = |r| out.push(r);
    let mut neg = start(1, A, 0xa1, 0);
    if let Kind::TimerStart { softexpires, .. } = &mut neg.kind {
        *softexpires = -5;
    }
    m.feed(&neg, &mut emit);
    m.feed(&start(1, A, 0xa1, E0 + 1), &mut emit);
    m.feed(&start(1, A, 0xa1, E0), &mut emit);
    m.feed(
        &TraceEvent {
            kind: Kind::TimerExpire {
                hrtimer: 0xa1,
                now: i64::MIN,
            },
            ..expire(0, 0xa1)
        },
        &mut emit,
    );
    m.feed(&switch(u64::MAX, A), &mut emit);
    assert_eq!(out, vec![rec(A, E0, None, Some(i64::MAX))]);
    assert_eq!(diff(0, u64::MAX), i64::MIN);
    assert_eq!(diff(3, 5), -2);
}

#[test]
fn return_to_user_closes_the_record() {
    let out = run_with(
        true,
        &[
            start(1, A, 0xa1, E0),
            expire(E0 + 3, 0xa1),
            switch(E0 + 7, A),
            switch(E0 + 8, A), // preempted and back: still the first sched-in
            ret(E0 + 12, A),
            ret(E0 + 20, A), // a later return: nothing pending
        ],
    );
    assert_eq!(out, vec![rec3(A, E0, Some(2), Some(7), Some(12))]);
    assert!(out[0].is_complete());
}

#[test]
fn woken_on_an_idle_cpu_no_sched_in_is_traced() {
    // This kernel does not trace switches from the idle task.
    let out = run_with(
        true,
        &[
            start(1, A, 0xa1, E0),
            expire(E0 + 3, 0xa1),
            ret(E0 + 9, A),
            start(E0 + 10, A, 0xa2, E0 + P),
        ],
    );
    assert_eq!(out, vec![rec3(A, E0, Some(2), None, Some(9))]);
    assert!(out[0].is_complete());
}

#[test]
fn returns_that_are_not_the_wakeup() {
    let mut irq_return = ret(E0 + 5, A);
    irq_return.kind = Kind::UserReturn { in_interrupt: true };
    let out = run_with(
        true,
        &[
            start(1, A, 0xa1, E0),
            ret(2, A),      // a signal cut the sleep short
            ret(E0 + 1, B), // another thread
            expire(E0 + 3, 0xa1),
            irq_return,
            switch(E0 + 7, A),
            // No return seen (thread without rseq): the next arming
            // keeps it waiting, the next expiry closes it.
            start(E0 + 15, A, 0xa2, E0 + P),
            expire(E0 + P + 3, 0xa2),
        ],
    );
    assert_eq!(out, vec![rec3(A, E0, Some(2), Some(7), None)]);
}

#[test]
fn finish_keeps_a_wakeup_seen_only_scheduled_in() {
    let mut m = Matcher::new(&threads(), true);
    let mut out = Vec::new();
    let mut emit = |r| out.push(r);
    m.feed(&start(1, A, 0xa1, E0), &mut emit);
    m.feed(&switch(E0 + 7, A), &mut emit);
    m.finish(E0 + 100, &mut emit);
    assert_eq!(out, vec![rec(A, E0, None, Some(7))]);
    assert!(!out[0].is_complete());
}

#[test]
fn timerfd_returns_after_rearming() {
    // read() re-arms the timer before the thread leaves the kernel.
    let out = run_with(
        true,
        &[
            start(1, A, 0xf0, E0),
            expire(E0 + 3, 0xf0),
            start(E0 + 8, A, 0xf0, E0 + P),
            ret(E0 + 10, A),
            expire(E0 + P + 4, 0xf0),
            switch(E0 + P + 6, A), // this time the CPU was busy: traced
            start(E0 + P + 8, A, 0xf0, E0 + 2 * P),
            // return lost: flushed by the next expiry
            expire(E0 + 2 * P + 5, 0xf0),
            start(E0 + 2 * P + 9, A, 0xf0, E0 + 3 * P),
            ret(E0 + 2 * P + 11, A),
        ],
    );
    assert_eq!(
        out,
        vec![
            rec3(A, E0, Some(2), None, Some(10)),
            rec3(A, E0 + P, Some(3), Some(6), None),
            rec3(A, E0 + 2 * P, Some(4), None, Some(11)),
        ]
    );
}

#[test]
fn a_waiting_return_is_flushed_by_gaps_and_the_end() {
    let mut m = Matcher::new(&threads(), true);
    let mut out = Vec::new();
    let mut emit = |r| out.push(r);
    m.feed(&start(1, A, 0xf0, E0), &mut emit);
    m.feed(&expire(E0 + 3, 0xf0), &mut emit);
    m.feed(&start(E0 + 8, A, 0xf0, E0 + P), &mut emit);
    m.gap(E0 + 9, &mut emit);
    m.feed(&expire(E0 + P + 3, 0xf0), &mut emit);
    m.feed(&start(E0 + P + 8, A, 0xf0, E0 + 2 * P), &mut emit);
    m.finish(E0 + P + 9, &mut emit);
    assert_eq!(
        out,
        vec![rec(A, E0, Some(2), None), rec(A, E0 + P, Some(2), None)]
    );
}

#[test]
fn a_waiting_return_never_takes_the_next_wakeups_events() {
    // timerfd: E0 woke (irq), was re-armed for E0 + P; its return and
    // the expiry of E0 + P were lost without a flagged gap.
    let out = run_with(
        true,
        &[
            start(1, A, 0xf0, E0),
            expire(E0 + 3, 0xf0),
            start(E0 + 8, A, 0xf0, E0 + P),
            ret(E0 + P + 20, A), // E0 + P's return, not E0's
            start(E0 + P + 30, A, 0xf0, E0 + 2 * P),
            expire(E0 + 2 * P + 3, 0xf0),
            start(E0 + 2 * P + 8, A, 0xf0, E0 + 3 * P),
            switch(E0 + 3 * P + 9, A), // E0 + 3P's sched-in: E0 + 2P returned unseen
        ],
    );
    assert_eq!(
        out,
        vec![
            rec3(A, E0, Some(2), None, None),
            rec3(A, E0 + P, None, None, Some(20)),
            rec3(A, E0 + 2 * P, Some(2), None, None),
        ]
    );
}

#[test]
fn the_real_page_gives_five_wakeups() {
    let (_, _, events) = crate::rt::tracefs::tests_fixture::decode();
    let tid = 3962;
    let e0 = 6_826_119_868_505;
    let thread = TracedThread {
        tid,
        cpu: 0,
        first_expiry_ns: e0,
        period_ns: 1_000_000,
    };
    let mut matcher = Matcher::new(&[thread], true);
    let mut records = Vec::new();
    for e in &events {
        matcher.feed(e, &mut |r| records.push(r));
    }
    matcher.finish(u64::MAX, &mut |r| records.push(r));
    let rec = |ms: u64, irq, thread, back| WakeupRecord {
        tid,
        cpu: 0,
        expires_ns: e0 + ms * 1_000_000,
        irq_ns: Some(irq),
        thread_ns: Some(thread),
        return_ns: Some(back),
    };
    assert_eq!(
        records,
        vec![
            rec(0, 24_185, 45_506, 49_031),
            rec(1, 20_421, 35_924, 37_306),
            rec(2, 12_372, 24_990, 26_112),
            rec(200, 39_812, 79_651, 88_574),
            rec(201, 30_150, 54_887, 57_150),
        ]
    );
}
