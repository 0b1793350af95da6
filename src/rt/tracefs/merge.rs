//! Merges the per-CPU event streams into one stream in time order.
//!
//! Why merge rather than make the matcher order-tolerant: one wake-up's
//! events can come from two CPUs (a timer may expire on another CPU than the
//! thread runs on), and each CPU's buffer is read in page-sized steps, so the
//! reader sees, say, CPU 1's switch before CPU 0's expiry. Each CPU's stream
//! is in time order; a bounded look-behind restores the global order:
//!
//! An item is released once no CPU can still deliver an earlier one. A CPU
//! cannot, once the reader has seen an event of it at a later time (its own
//! order), or once the read pass that found nothing earlier started more than
//! `margin` after the item: a record is stamped when it is reserved and
//! becomes readable when committed, a few microseconds later unless the
//! writer is interrupted (or its vCPU descheduled), which `margin` covers.
//!
//! Memory stays bounded: items are held for about `margin` plus one poll, and
//! past `MAX_HELD` the oldest are released anyway (counted as possibly out of
//! order through `late`, like any item that arrives behind one already
//! released).

use super::events::TraceEvent;
use std::collections::VecDeque;

/// Hard cap on held items (about 40 MiB), far above what a normal margin
/// holds (tens of thousands at most).
const MAX_HELD: usize = 1 << 20;

/// What flows to the matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Event(TraceEvent),
    /// The kernel lost events of this CPU before this time (or a page could
    /// not be decoded), after `since` (the last event read before the loss;
    /// 0 when none was).
    Gap {
        cpu: usize,
        since: u64,
    },
}

#[derive(Debug)]
pub struct Merger {
    /// One queue per traced CPU (index = slot, not CPU number), each in
    /// arrival order, which is time order.
    queues: Vec<VecDeque<(u64, Item)>>,
    /// Latest time seen per slot.
    seen: Vec<u64>,
    held: usize,
    /// Latest time released.
    released: u64,
    late: u64,
    max_held: usize,
}

impl Merger {
    pub fn new(slots: usize) -> Merger {
        Merger {
            queues: (0..slots).map(|_| VecDeque::new()).collect(),
            seen: vec![0; slots],
            held: 0,
            released: 0,
            late: 0,
            max_held: MAX_HELD,
        }
    }

    /// Adds an item read from `slot`'s buffer.
    pub fn push(&mut self, slot: usize, time: u64, item: Item) {
        let Some(queue) = self.queues.get_mut(slot) else {
            return;
        };
        if time < self.released {
            self.late += 1;
        }
        self.seen[slot] = self.seen[slot].max(time);
        queue.push_back((time, item));
        self.held += 1;
    }

    /// Releases in time order what no CPU can precede any more, given that
    /// the read pass that just ended started at `pass_start` (same clock as
    /// the trace).
    pub fn release(&mut self, pass_start: u64, margin: u64, out: &mut dyn FnMut(u64, Item)) {
        let quiet = pass_start.saturating_sub(margin);
        let horizon = self
            .seen
            .iter()
            .map(|&s| s.max(quiet))
            .min()
            .unwrap_or(quiet);
        self.release_until(horizon, out);
    }

    /// Releases everything (after the last read).
    pub fn release_all(&mut self, out: &mut dyn FnMut(u64, Item)) {
        self.release_until(u64::MAX, out);
    }

    /// Items that arrived behind a later one already released.
    pub fn late(&self) -> u64 {
        self.late
    }

    fn release_until(&mut self, horizon: u64, out: &mut dyn FnMut(u64, Item)) {
        loop {
            // Few CPUs are traced: a scan for the earliest head is cheapest.
            let earliest = self
                .queues
                .iter()
                .enumerate()
                .filter_map(|(slot, q)| q.front().map(|&(t, _)| (t, slot)))
                .min();
            let Some((time, slot)) = earliest else {
                return;
            };
            if time > horizon && self.held <= self.max_held {
                return;
            }
            if let Some((time, item)) = self.queues[slot].pop_front() {
                self.held -= 1;
                self.released = self.released.max(time);
                out(time, item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::tracefs::events::Kind;

    fn ev(time: u64, cpu: usize) -> Item {
        Item::Event(TraceEvent {
            time,
            cpu,
            pid: 1,
            kind: Kind::Switch(crate::rt::tracefs::events::Switch::to(1)),
        })
    }

    fn drain(m: &mut Merger, pass_start: u64, margin: u64) -> Vec<u64> {
        let mut out = Vec::new();
        m.release(pass_start, margin, &mut |t, _| out.push(t));
        out
    }

    #[test]
    fn interleaves_cpus_in_time_order() {
        let mut m = Merger::new(2);
        for t in [10, 30, 50] {
            m.push(0, t, ev(t, 0));
        }
        for t in [20, 40, 60] {
            m.push(1, t, ev(t, 1));
        }
        // Both CPUs have been seen up to 50/60: everything up to 50 is safe.
        assert_eq!(drain(&mut m, 0, 0), vec![10, 20, 30, 40, 50]);
        let mut rest = Vec::new();
        m.release_all(&mut |t, _| rest.push(t));
        assert_eq!(rest, vec![60]);
        assert_eq!(m.late(), 0);
    }

    #[test]
    fn a_quiet_cpu_holds_items_only_for_the_margin() {
        let mut m = Merger::new(2);
        m.push(0, 1_000, ev(1_000, 0));
        m.push(0, 2_000, ev(2_000, 0));
        // CPU 1 has said nothing: wait until the pass is margin past the item.
        assert_eq!(drain(&mut m, 1_500, 1_000), Vec::<u64>::new());
        assert_eq!(drain(&mut m, 2_500, 1_000), vec![1_000]);
        assert_eq!(drain(&mut m, 3_000, 1_000), vec![2_000]);
    }

    #[test]
    fn a_late_item_is_counted_and_still_delivered() {
        let mut m = Merger::new(2);
        m.push(0, 100, ev(100, 0));
        assert_eq!(drain(&mut m, 1_000, 10), vec![100]);
        m.push(1, 50, ev(50, 1)); // committed very late
        assert_eq!(m.late(), 1);
        assert_eq!(drain(&mut m, 2_000, 10), vec![50]);
    }

    #[test]
    fn memory_is_bounded() {
        let mut m = Merger::new(2);
        m.max_held = 3;
        for t in 1..=5 {
            m.push(0, t, ev(t, 0));
        }
        // CPU 1 silent and no time passed, but the cap forces release.
        assert_eq!(drain(&mut m, 0, 100), vec![1, 2]);
        assert_eq!(m.held, 3);
    }

    #[test]
    fn gaps_keep_their_place() {
        let mut m = Merger::new(2);
        let gap = Item::Gap { cpu: 1, since: 5 };
        m.push(1, 15, gap);
        m.push(0, 10, ev(10, 0));
        m.push(0, 20, ev(20, 0));
        let mut out = Vec::new();
        m.release_all(&mut |t, i| out.push((t, i == gap)));
        assert_eq!(out, vec![(10, false), (15, true), (20, false)]);
        m.push(7, 1, gap); // unknown slot: ignored
    }
}
