//! A measuring thread's queue of spike candidates, and the hold of the
//! spike's window that comes with each when the flight recorder runs.

use super::Candidate;
use crate::probes::recorder::hold::Holds;
use crate::stats::live::SpscRing;
use std::sync::{Arc, OnceLock};

/// Candidates one measuring thread can queue between two collector passes
/// (about 10 ms apart); beyond, they are counted as dropped.
pub const QUEUE_SLOTS: usize = 512;

/// One measuring thread's candidates (one producer: that thread). No
/// allocation, no lock, no system call when it pushes.
pub struct CandidateQueue {
    ring: SpscRing<Candidate>,
    /// Set once the flight recorder runs: then a spike holds its window.
    holds: OnceLock<Holds>,
}

/// A new, empty queue (allocated before the thread measures).
pub fn candidate_queue() -> Arc<CandidateQueue> {
    Arc::new(CandidateQueue {
        ring: SpscRing::with_capacity(QUEUE_SLOTS),
        holds: OnceLock::new(),
    })
}

impl CandidateQueue {
    /// A sample above the threshold: queues it, then holds its CPU's
    /// window in the flight recorder from the window's start (the margin
    /// before its due time) on. Queued first: a collector that released
    /// the hold had drained the spike (`probes::recorder::hold`). Only
    /// spikes come here: a sample that is not one costs nothing of this.
    pub fn push(&self, candidate: Candidate) {
        let queued = self.ring.push(candidate);
        if let (true, Some(holds)) = (queued, self.holds.get()) {
            let from = candidate
                .expected_ns
                .saturating_sub(super::attribution::MARGIN_BEFORE_NS);
            holds.hold(candidate.cpu as usize, from);
        }
    }

    /// Collector side: every candidate queued so far, in order.
    pub fn drain(&self, each: impl FnMut(Candidate)) {
        self.ring.drain(each);
    }

    /// Candidates dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped()
    }

    /// From now on a spike holds its window through `holds` (the flight
    /// recorder's). A queue serves one run: a second call is ignored.
    pub fn hold_with(&self, holds: Holds) {
        let _ = self.holds.set(holds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::recorder::hold::{NOTHING_HELD, held_since};
    use crate::probes::recorder::layout::Region;
    use crate::rt::bpf::MappedArray;

    #[test]
    fn a_queued_spike_holds_its_cpu_s_window_and_a_dropped_one_holds_nothing() {
        let region = Region::with_slots(64);
        let mapped = Arc::new(MappedArray::anonymous(region.size(), 2).unwrap());
        let holds = Holds::new(mapped, &[0, 1]);
        let queue = candidate_queue();
        let spike = |cpu, due| Candidate {
            cpu,
            expected_ns: due,
            actual_ns: due + 500_000,
        };
        // Before the recorder runs: queued, nothing held.
        queue.push(spike(1, 10_000_000));
        assert_eq!(holds.hold_of(1), NOTHING_HELD);
        queue.hold_with(holds.clone());
        queue.push(spike(1, 10_000_000));
        // From the window's start: the margin before the due time.
        let from = 10_000_000 - crate::spikes::attribution::MARGIN_BEFORE_NS;
        let held = held_since(holds.hold_of(1)).unwrap();
        assert!(held <= from && from - held < 1 << 16, "{held}");
        assert_eq!(holds.hold_of(0), NOTHING_HELD);
        let mut got = Vec::new();
        queue.drain(|c| got.push(c));
        assert_eq!(got.len(), 2);
        // A full queue drops the spike, which holds nothing.
        for _ in 0..QUEUE_SLOTS {
            queue.push(spike(0, 50_000_000));
        }
        let seen = holds.hold_of(0);
        queue.push(spike(0, 50_000_000));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(holds.hold_of(0), seen, "the dropped spike held nothing");
    }
}
