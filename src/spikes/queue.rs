//! A measuring thread's queue of spike candidates, and the freeze of the
//! spike's window that comes with each when the flight recorder runs.

use super::Candidate;
use crate::probes::recorder::freeze::RingSwitch;
use crate::stats::live::SpscRing;
use std::sync::{Arc, OnceLock};

/// Candidates one measuring thread can queue between two collector passes;
/// beyond, they are counted as dropped.
pub const QUEUE_SLOTS: usize = 512;

/// A candidate as queued: with the recorder's ring its spike froze, if any
/// (`probes::recorder::freeze`), which the collector releases once it has
/// copied the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Queued {
    pub candidate: Candidate,
    pub frozen: Option<u8>,
}

/// One measuring thread's candidates (one producer: that thread). No
/// allocation, no lock, no system call when it pushes.
pub struct CandidateQueue {
    ring: SpscRing<Queued>,
    /// Set once the flight recorder runs: then a spike freezes its window.
    switch: OnceLock<RingSwitch>,
}

/// A new, empty queue (allocated before the thread measures).
pub fn candidate_queue() -> Arc<CandidateQueue> {
    Arc::new(CandidateQueue {
        ring: SpscRing::with_capacity(QUEUE_SLOTS),
        switch: OnceLock::new(),
    })
}

impl CandidateQueue {
    /// A sample above the threshold: freezes its CPU's window in the flight
    /// recorder first (one compare-and-swap), then queues it. Only spikes
    /// come here: a sample that is not one costs nothing of this.
    pub fn push(&self, candidate: Candidate) {
        let switch = self.switch.get();
        let frozen = switch.and_then(|s| s.freeze(candidate.cpu as usize));
        let queued = self.ring.push(Queued {
            candidate,
            frozen: frozen.map(|r| r as u8),
        });
        if let (false, Some(s), Some(ring)) = (queued, switch, frozen) {
            // Dropped (the collector is starved): nobody would release it.
            s.release(candidate.cpu as usize, ring);
        }
    }

    /// Collector side: every candidate queued so far, in order.
    pub fn drain(&self, each: impl FnMut(Queued)) {
        self.ring.drain(each);
    }

    /// Candidates dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped()
    }

    /// From now on a spike freezes its window through `switch` (the flight
    /// recorder's rings). A queue serves one run: a second call is ignored.
    pub fn freeze_with(&self, switch: RingSwitch) {
        let _ = self.switch.set(switch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::recorder::layout::{RINGS, Region, header};
    use crate::rt::bpf::MappedArray;

    #[test]
    fn a_queued_spike_froze_its_cpu_s_ring_and_a_dropped_one_holds_nothing() {
        let region = Region::with_slots(64);
        let mapped = Arc::new(MappedArray::anonymous(region.size(), 2).unwrap());
        let switch = RingSwitch::new(mapped.clone(), region);
        let queue = candidate_queue();
        let spike = |cpu| Candidate {
            cpu,
            expected_ns: 10,
            actual_ns: 500,
        };
        // Before the recorder runs: queued, nothing frozen.
        queue.push(spike(1));
        queue.freeze_with(switch.clone());
        queue.push(spike(1));
        let mut got = Vec::new();
        queue.drain(|q| got.push(q));
        assert_eq!(got[0].frozen, None);
        assert_eq!(got[1].frozen, Some(0));
        assert_eq!(switch.held(1), 0b1);
        assert_eq!(switch.held(0), 0);
        // A full queue drops the spike and releases what it froze.
        for _ in 0..QUEUE_SLOTS {
            queue.push(spike(0));
            if let Some(ring) = (0..RINGS).find(|&k| switch.held(0) & 1 << k != 0) {
                switch.release(0, ring);
            }
        }
        assert_eq!(queue.dropped(), 0);
        queue.push(spike(0));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(switch.held(0), 0, "the dropped spike's ring released");
        assert_eq!(
            mapped.read_u64(1, header::RING).unwrap() & (RINGS as u64 - 1),
            1
        );
    }
}
