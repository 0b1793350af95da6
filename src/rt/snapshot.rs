//! The hand-off of a measuring thread's statistics to a snapshot (SIGUSR1,
//! rt::signals) while the run goes on.
//!
//! The measuring thread owns its `LatencyRecorder` and nobody else may read
//! it while it records. So the monitor *asks*: it sets a request, and the
//! measuring thread, right after its next sample is recorded (before it
//! sleeps or blocks for the next one: no sample spans the copy), copies its
//! recorder into a buffer the monitor allocated and publishes it. The copy
//! refills pre-sized histograms in place (`LatencyRecorder::copy_from`):
//! no allocation, no lock, no system call on the measuring thread, and the
//! per-sample cost when nobody asks is one atomic load. The buffer is only
//! allocated (by the monitor, at normal priority) when a snapshot is first
//! asked for, so runs without snapshots carry no extra memory.
//!
//! A thread that has finished its loop publishes its final recorder for
//! good (`finish`), so a snapshot asked for after one pair ended but before
//! the others did still holds every pair.
//!
//! Every change of state is one compare-and-swap, so the buffer has one
//! owner at a time: the measuring thread while WRITING, the monitor while
//! READING, nobody otherwise (REQUESTED: waiting for the measuring thread;
//! READY: waiting for the monitor; FINAL: read-only from then on).

use crate::stats::LatencyRecorder;
use std::cell::UnsafeCell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const REQUESTED: u8 = 1;
const WRITING: u8 = 2;
const READY: u8 = 3;
const READING: u8 = 4;
const FINAL: u8 = 5;

/// One measuring thread's side of the snapshot hand-off (see the module).
#[derive(Default)]
pub struct SnapshotCell {
    state: AtomicU8,
    buffer: OnceLock<Box<UnsafeCell<LatencyRecorder>>>,
}

// SAFETY: the buffer is written only by the measuring thread while the state
// is WRITING and read only by the monitor while it is READING or FINAL; every
// change of state is a compare-and-swap (acquire) followed by a release store,
// so the two never touch it at the same time and each sees the other's writes.
unsafe impl Sync for SnapshotCell {}

impl SnapshotCell {
    /// Monitor side: asks for a copy. `shape` builds an empty recorder like
    /// the measuring thread's (so the copy does not allocate); it runs once,
    /// at the first request. Nothing happens while a copy is pending or
    /// ready, or after the final one.
    pub fn request(&self, shape: impl FnOnce() -> LatencyRecorder) {
        self.buffer
            .get_or_init(|| Box::new(UnsafeCell::new(shape())));
        let _ = self
            .state
            .compare_exchange(IDLE, REQUESTED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Measuring thread, after every recorded sample: one load unless a copy
    /// was asked for, then the copy (no allocation, no lock).
    #[inline]
    pub fn offer(&self, recorder: &LatencyRecorder) {
        if self.state.load(Ordering::Relaxed) == REQUESTED {
            self.write(REQUESTED, READY, recorder);
        }
    }

    /// Measuring thread, once its loop is over (no longer measuring, so it
    /// may wait and allocate): publishes `recorder` for good. Skipped when
    /// no snapshot was ever asked for (no buffer): the monitor then takes
    /// the final results from the joined thread as usual.
    pub fn finish(&self, recorder: &LatencyRecorder) {
        if self.buffer.get().is_none() {
            return;
        }
        loop {
            match self.state.load(Ordering::Acquire) {
                // The monitor is copying the previous snapshot out: a clone,
                // no blocking; let it finish (a sleep, so a monitor on this
                // CPU at a lower priority can run).
                READING => std::thread::sleep(std::time::Duration::from_millis(1)),
                FINAL => return,
                from => {
                    if self.write(from, FINAL, recorder) {
                        return;
                    }
                }
            }
        }
    }

    fn write(&self, from: u8, to: u8, recorder: &LatencyRecorder) -> bool {
        if self
            .state
            .compare_exchange(from, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        if let Some(buffer) = self.buffer.get() {
            // SAFETY: WRITING makes this thread the buffer's only user.
            unsafe { (*buffer.get()).copy_from(recorder) };
        }
        self.state.store(to, Ordering::Release);
        true
    }

    /// Monitor side: the copy, once the measuring thread has made it (or its
    /// final one); None while it is still pending.
    pub fn take(&self) -> Option<LatencyRecorder> {
        let buffer = self.buffer.get()?;
        match self.state.load(Ordering::Acquire) {
            // SAFETY: FINAL: nobody writes the buffer any more.
            FINAL => Some(unsafe { (*buffer.get()).clone() }),
            READY => {
                self.state
                    .compare_exchange(READY, READING, Ordering::Acquire, Ordering::Relaxed)
                    .ok()?;
                // SAFETY: READING makes the monitor the buffer's only user.
                let copy = unsafe { (*buffer.get()).clone() };
                self.state.store(IDLE, Ordering::Release);
                Some(copy)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder_of(values: &[i64]) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        values.iter().for_each(|&v| r.record(v));
        r
    }

    #[test]
    fn nothing_is_copied_until_asked_and_an_answer_is_taken_once() {
        let cell = SnapshotCell::default();
        let live = recorder_of(&[5, 7]);
        cell.offer(&live);
        assert!(cell.take().is_none());
        cell.request(LatencyRecorder::new);
        assert!(cell.take().is_none(), "asked, not yet answered");
        cell.offer(&live);
        assert_eq!(cell.take().unwrap().summary(), live.summary());
        assert!(cell.take().is_none(), "one answer per request");
        // A second request gets the recorder as it is then.
        let later = recorder_of(&[5, 7, 1000]);
        cell.request(LatencyRecorder::new);
        cell.offer(&later);
        assert_eq!(cell.take().unwrap().summary(), later.summary());
    }

    #[test]
    fn the_final_copy_answers_every_later_request() {
        let cell = SnapshotCell::default();
        let done = recorder_of(&[1, 2, 3]);
        // Never asked: finishing keeps nothing (no buffer).
        cell.finish(&done);
        assert!(cell.take().is_none());
        cell.request(LatencyRecorder::new);
        cell.finish(&done);
        for _ in 0..2 {
            cell.request(LatencyRecorder::new);
            assert_eq!(cell.take().unwrap().summary(), done.summary());
        }
    }

    #[test]
    fn copies_cross_threads_while_the_producer_records() {
        let cell = std::sync::Arc::new(SnapshotCell::default());
        // Asked before the producer starts, so its `finish` keeps the end.
        cell.request(LatencyRecorder::new);
        let producer = {
            let cell = cell.clone();
            std::thread::spawn(move || {
                let mut r = LatencyRecorder::new();
                for i in 1..=200_000i64 {
                    r.record(i);
                    cell.offer(&r);
                }
                cell.finish(&r);
            })
        };
        let mut last = 0;
        loop {
            cell.request(LatencyRecorder::new);
            if let Some(copy) = cell.take() {
                let s = copy.summary();
                // A consistent copy: exactly the first n samples 1..=n.
                assert_eq!(s.max_ns as u64, s.samples);
                assert_eq!(s.min_ns, 1);
                assert!(s.samples >= last);
                last = s.samples;
                if s.samples == 200_000 {
                    break;
                }
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
    }
}
