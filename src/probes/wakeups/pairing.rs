//! The tracefs collector's pairing: trace events into per-wake-up records
//! for periodic sampling threads, the same figures the BPF slots give
//! (`super`). Pure logic, fed with events in time order
//! (`rt::tracefs::merge`) by the session (`super::session`).
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
//! 4. when the kernel has `rseq_update` (see `super::session::RETURN`), the first one
//!    the thread writes (task context) at or after the expiry: return latency
//!    = its time - expiry, the moment it leaves the kernel for user space. It
//!    closes the record; without that event the sched-in does.
//!
//! Why step 4: on this machine a switch out of the idle task on CPU 1 is never
//! traced (see `super::session::RETURN`), so a thread woken on that idle CPU has no
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
//! ignored test `tests_tracefs::who_arms_the_timer`):
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

use crate::rt::tracefs::events::{Kind, TraceEvent};
use std::collections::HashMap;

/// A sampling thread and its wake-up schedule, as both collectors know it:
/// the tracefs pairing here, and the slot the programs write (`WakeupSlots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedThread {
    pub tid: i32,
    /// The CPU it is pinned to: only the CPUs of the traced threads are
    /// traced, so a thread (or its timer) elsewhere is not seen; its slot.
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
pub(super) fn diff(later: u64, earlier: u64) -> i64 {
    if later >= earlier {
        i64::try_from(later - earlier).unwrap_or(i64::MAX)
    } else {
        i64::try_from(earlier - later).map_or(i64::MIN, |d| -d)
    }
}
