//! Pairs trace events into per-wake-up records for periodic sampling threads:
//! pure logic, fed with events in time order (see `merge`).
//!
//! For each traced thread, one wake-up is:
//!
//! 1. `hrtimer_start` written by the thread itself (`common_pid` = tid, task
//!    context) with a soft expiry on the thread's schedule
//!    (`E0 + k * P`, k >= 0): the expiry it asked for;
//! 2. `hrtimer_expire_entry` of that timer (same address): IRQ latency =
//!    `now` - expiry;
//! 3. the first `sched_switch` with `next_pid` = tid at or after the expiry:
//!    thread latency = its time - expiry;
//! 4. when the kernel has `rseq_update` (see `events::RETURN`), the first one
//!    the thread writes (task context) at or after the expiry: return latency
//!    = its time - expiry, the moment it leaves the kernel for user space. It
//!    closes the record; without that event the sched-in does.
//!
//! Why step 4: on this machine a switch out of the idle task on CPU 1 is never
//! traced (see `events::RETURN`), so a thread woken on that idle CPU has no
//! sched-in event (thread latency `None`) although it ran; its return to user
//! space is still seen.
//!
//! Why the soft expiry: `expires` in `hrtimer_start` is the hard expiry, the
//! time asked for plus the task's timer slack (50 us for a SCHED_OTHER task
//! unless it lowered it, 0 for real-time tasks), and the timer may fire
//! anywhere in between. `softexpires` is exactly the time the thread asked
//! for, the same reference its own latency is measured from, and the hrtimer
//! core never runs a handler before it, so IRQ latency is never negative.
//!
//! The schedule test (`(expiry - E0) % P == 0`) keeps out the other hrtimers a
//! thread arms (seen here: `sched_rt_period_timer` armed in the thread's
//! context when it first becomes SCHED_FIFO). Records written from interrupt
//! context carry the interrupted task's pid, so `hrtimer_start` from an
//! interrupt (the tick re-arming itself while the thread runs, whose expiries
//! sit on round multiples of the tick and could match a round schedule) is
//! ignored too.
//!
//! Seen on this machine (Linux 6.18, text trace of a small C program, and the
//! ignored test `tests_live::who_arms_the_timer`):
//! - `clock_nanosleep(TIMER_ABSTIME)`: each call arms an on-stack
//!   `hrtimer_wakeup` timer from the thread (`common_pid` = tid, task
//!   context); its address changes between calls. Order per period: start,
//!   (thread sleeps), expire_entry, sched_switch to the thread (absent when
//!   idle CPU 1), rseq_update, next start.
//! - periodic `timerfd`: `timerfd_settime` arms `timerfd_tmrproc` from the
//!   calling thread; the handler does not restart it: the thread's next
//!   `read()` re-arms it (`hrtimer_forward` + restart, `common_pid` = tid,
//!   after the thread was switched in, before its rseq_update), always at the
//!   same address. So the first expiry is only seen when the timer is armed
//!   after tracing started, and a new arming does not close a wake-up already
//!   seen: it waits for the thread's return (or the next wake-up's first
//!   event, then closes without it).
//! - The tick re-arming itself from its interrupt while the thread runs is
//!   recorded with the thread's pid (flags `h`), on round expiries.
//!
//! Lost events: when the reader learns events were lost (a page flagged by
//! the kernel, or a malformed page) it calls `gap`, which closes the records
//! whose expiry lies before the gap as incomplete rather than pairing events
//! across it. A second expiry of a timer whose first was already seen also
//! means its re-arm was lost: that record is closed. Nothing is ever
//! inferred: a missing event leaves its latency `None`.

#[cfg(test)]
use super::events::Switch;
use super::events::{Kind, TraceEvent};
use std::collections::HashMap;

/// A sampling thread to trace and its wake-up schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedThread {
    pub tid: i32,
    /// The CPU it is pinned to: only the CPUs of the traced threads are
    /// traced, so a thread (or its timer) elsewhere is not seen.
    pub cpu: usize,
    /// Its first absolute CLOCK_MONOTONIC expiry, ns.
    pub first_expiry_ns: u64,
    /// Its period, ns (> 0).
    pub period_ns: u64,
}

impl TracedThread {
    /// Whether `expiry` is on this thread's schedule.
    fn on_schedule(&self, expiry: u64) -> bool {
        let Some(since_first) = expiry.checked_sub(self.first_expiry_ns) else {
            return false;
        };
        match self.period_ns {
            0 => since_first == 0,
            period => since_first % period == 0,
        }
    }
}

/// The kernel's view of one wake-up, all times relative to the expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeupRecord {
    pub tid: i32,
    pub cpu: usize,
    /// The expiry the thread asked for (CLOCK_MONOTONIC ns): the key to match
    /// the thread's own sample.
    pub expires_ns: u64,
    /// Timer handler start - expiry.
    pub irq_ns: Option<i64>,
    /// Thread scheduled in - expiry (`None` also when the kernel did not
    /// trace the switch, as for switches from idle on this machine).
    pub thread_ns: Option<i64>,
    /// Thread returning to user space - expiry (`None` when the kernel or
    /// the thread's libc lacks `rseq`).
    pub return_ns: Option<i64>,
}

impl WakeupRecord {
    /// The IRQ latency and the thread's own part are both known: the thread
    /// was seen scheduled in or returning to user space.
    pub fn is_complete(&self) -> bool {
        self.irq_ns.is_some() && (self.thread_ns.is_some() || self.return_ns.is_some())
    }
}

/// A wake-up armed and not yet closed.
#[derive(Debug, Clone, Copy)]
struct Pending {
    hrtimer: u64,
    expires: u64,
    irq_ns: Option<i64>,
    thread_ns: Option<i64>,
}

impl Pending {
    fn new(hrtimer: u64, expires: u64) -> Pending {
        Pending {
            hrtimer,
            expires,
            irq_ns: None,
            thread_ns: None,
        }
    }

    /// Something of the wake-up itself was seen.
    fn seen(&self) -> bool {
        self.irq_ns.is_some() || self.thread_ns.is_some()
    }
}

#[derive(Debug)]
struct ThreadState {
    thread: TracedThread,
    /// The wake-up whose timer is armed (or fired) and not yet closed.
    pending: Option<Pending>,
    /// A wake-up already followed by the next arming but still waiting for
    /// its return to user space: a timerfd is re-armed inside the `read()`
    /// that wakes the thread, before the thread leaves the kernel.
    returning: Option<Pending>,
}

/// The state machine of every traced thread.
#[derive(Debug)]
pub struct Matcher {
    threads: Vec<ThreadState>,
    by_tid: HashMap<i32, usize>,
    /// Address of each pending timer -> its thread.
    by_timer: HashMap<u64, usize>,
    /// Return-to-user events are traced: they close records, not sched-ins.
    close_on_return: bool,
}

impl Matcher {
    /// `close_on_return`: whether `UserReturn` events will be fed.
    pub fn new(threads: &[TracedThread], close_on_return: bool) -> Matcher {
        Matcher {
            threads: threads
                .iter()
                .map(|&thread| ThreadState {
                    thread,
                    pending: None,
                    returning: None,
                })
                .collect(),
            by_tid: threads
                .iter()
                .enumerate()
                .map(|(i, t)| (t.tid, i))
                .collect(),
            by_timer: HashMap::new(),
            close_on_return,
        }
    }

    /// Takes the next event (in time order) and emits the records it closes.
    pub fn feed(&mut self, event: &TraceEvent, emit: &mut dyn FnMut(WakeupRecord)) {
        match event.kind {
            Kind::TimerStart {
                hrtimer,
                softexpires,
                in_interrupt: false,
                ..
            } => self.start(event.pid, hrtimer, softexpires, emit),
            Kind::TimerStart { .. } => {}
            Kind::TimerExpire { hrtimer, now } => self.expire(hrtimer, now, emit),
            Kind::Switch(switch) => self.switch_in(switch.next_pid, event.time, emit),
            Kind::UserReturn {
                in_interrupt: false,
            } => self.user_return(event.pid, event.time, emit),
            // Events of the spike attribution: not the breakdown's.
            _ => {}
        }
    }

    fn start(
        &mut self,
        pid: i32,
        hrtimer: u64,
        softexpires: i64,
        emit: &mut dyn FnMut(WakeupRecord),
    ) {
        let Some(&i) = self.by_tid.get(&pid) else {
            return;
        };
        let Ok(expires) = u64::try_from(softexpires) else {
            return;
        };
        if !self.threads[i].thread.on_schedule(expires) {
            return;
        }
        match self.threads[i].pending {
            // Re-armed for the same expiry (a sleep restarted after a signal,
            // timerfd_settime again): the same wake-up, maybe a new address.
            Some(p) if p.expires == expires => {
                self.forget_timer(i);
                self.threads[i].pending = Some(Pending { hrtimer, ..p });
            }
            Some(p) => {
                self.flush_returning(i, emit);
                if self.close_on_return && p.seen() {
                    // It woke; its return to user space may still come.
                    self.forget_timer(i);
                    self.threads[i].returning = self.threads[i].pending.take();
                } else {
                    self.close(i, None, emit);
                }
                self.threads[i].pending = Some(Pending::new(hrtimer, expires));
            }
            None => {
                self.flush_returning(i, emit);
                self.threads[i].pending = Some(Pending::new(hrtimer, expires));
            }
        }
        // A timer address belongs to one armed timer at a time: a stale entry
        // of another thread is overwritten.
        self.by_timer.insert(hrtimer, i);
    }

    fn expire(&mut self, hrtimer: u64, now: i64, emit: &mut dyn FnMut(WakeupRecord)) {
        let Some(&i) = self.by_timer.get(&hrtimer) else {
            return;
        };
        let Some(p) = self.threads[i].pending else {
            return;
        };
        let Ok(now) = u64::try_from(now) else {
            return;
        };
        // The hrtimer core never runs a handler before the soft expiry: an
        // earlier one is not this arming's.
        if p.hrtimer != hrtimer || now < p.expires {
            return;
        }
        // The next wake-up has begun: the previous one returned unseen.
        self.flush_returning(i, emit);
        if p.irq_ns.is_some() {
            // Fired twice with no re-arm in between: the re-arm was lost.
            self.close(i, None, emit);
            return;
        }
        if let Some(p) = self.threads[i].pending.as_mut() {
            p.irq_ns = Some(diff(now, p.expires));
        }
    }

    fn switch_in(&mut self, tid: i32, time: u64, emit: &mut dyn FnMut(WakeupRecord)) {
        let Some(&i) = self.by_tid.get(&tid) else {
            return;
        };
        let Some(p) = self.threads[i].pending.as_mut() else {
            return;
        };
        // Scheduled in before its expiry (preempted on the way to sleep), or
        // again after a preemption: not the wake-up.
        if time < p.expires || p.thread_ns.is_some() {
            return;
        }
        p.thread_ns = Some(diff(time, p.expires));
        // The next wake-up has begun: the previous one returned unseen.
        self.flush_returning(i, emit);
        if !self.close_on_return {
            self.close(i, None, emit);
        }
    }

    fn user_return(&mut self, pid: i32, time: u64, emit: &mut dyn FnMut(WakeupRecord)) {
        let Some(&i) = self.by_tid.get(&pid) else {
            return;
        };
        let state = &mut self.threads[i];
        let next_due = state.pending.is_some_and(|p| time >= p.expires);
        if let Some(r) = state.returning.take() {
            if !next_due {
                // The thread leaves the `read()` that re-armed its timerfd.
                emit(record_of(&state.thread, &r, Some(diff(time, r.expires))));
                return;
            }
            // The next expiry has passed too (its events were lost): this
            // return is the next wake-up's, the earlier one returned unseen.
            emit(record_of(&state.thread, &r, None));
        }
        // Back to user space before the expiry (a sleep cut short by a
        // signal) is not the wake-up.
        match state.pending {
            Some(p) if time >= p.expires => {
                let return_ns = diff(time, p.expires);
                self.close(i, Some(return_ns), emit);
            }
            _ => {}
        }
    }

    /// Events were lost just before `time`: wake-ups due by then are closed
    /// as they are (incomplete); later ones are unaffected.
    pub fn gap(&mut self, time: u64, emit: &mut dyn FnMut(WakeupRecord)) {
        for i in 0..self.threads.len() {
            self.flush_returning(i, emit);
            if self.threads[i].pending.is_some_and(|p| p.expires <= time) {
                self.close(i, None, emit);
            }
        }
    }

    /// Tracing stopped at `end`: wake-ups already partly seen are emitted
    /// (maybe incomplete); armed timers with nothing seen are dropped, since
    /// they may never have fired (a timerfd re-armed by the last read, then
    /// closed).
    pub fn finish(&mut self, end: u64, emit: &mut dyn FnMut(WakeupRecord)) {
        for i in 0..self.threads.len() {
            self.flush_returning(i, emit);
            match self.threads[i].pending {
                Some(p) if p.seen() && p.expires <= end => self.close(i, None, emit),
                _ => {
                    self.forget_timer(i);
                    self.threads[i].pending = None;
                }
            }
        }
    }

    /// Emits thread `i`'s pending wake-up as it stands and forgets it.
    fn close(&mut self, i: usize, return_ns: Option<i64>, emit: &mut dyn FnMut(WakeupRecord)) {
        self.forget_timer(i);
        let state = &mut self.threads[i];
        if let Some(p) = state.pending.take() {
            emit(record_of(&state.thread, &p, return_ns));
        }
    }

    /// Emits thread `i`'s wake-up that waited for its return, without it.
    fn flush_returning(&mut self, i: usize, emit: &mut dyn FnMut(WakeupRecord)) {
        let state = &mut self.threads[i];
        if let Some(r) = state.returning.take() {
            emit(record_of(&state.thread, &r, None));
        }
    }

    fn forget_timer(&mut self, i: usize) {
        if let Some(p) = self.threads[i].pending
            && self.by_timer.get(&p.hrtimer) == Some(&i)
        {
            self.by_timer.remove(&p.hrtimer);
        }
    }
}

fn record_of(t: &TracedThread, p: &Pending, return_ns: Option<i64>) -> WakeupRecord {
    WakeupRecord {
        tid: t.tid,
        cpu: t.cpu,
        expires_ns: p.expires,
        irq_ns: p.irq_ns,
        thread_ns: p.thread_ns,
        return_ns,
    }
}

/// `later - earlier` as a signed count of ns (saturating, never panics).
fn diff(later: u64, earlier: u64) -> i64 {
    if later >= earlier {
        i64::try_from(later - earlier).unwrap_or(i64::MAX)
    } else {
        i64::try_from(earlier - later).map_or(i64::MIN, |d| -d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
