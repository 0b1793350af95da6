//! The reader thread: drains every traced CPU's `trace_pipe_raw`, decodes the
//! pages, merges the CPUs in time order and feeds a `Consumer`: the wake-up
//! pairing of the timer breakdown (`probes::wakeups::session`) or the spike
//! attribution (`crate::spikes`). Nothing accumulates beyond the merge
//! window but what the consumer keeps.
//!
//! It polls with short sleeps instead of `poll()`: a `trace_pipe_raw` poll
//! only wakes when the buffer is `buffer_percent` full, and a 10 ms nap costs
//! nothing while bounding how long events wait. It runs SCHED_OTHER whatever
//! its creator runs at, so it never competes with the measuring threads. It
//! keeps its creator's CPU affinity: start the session from a thread that is
//! not pinned to one measured CPU, so the scheduler can put the reader where
//! there is idle time.

use super::events::{Decoded, EventDecoder, TraceEvent};
use super::format::RingLayout;
use super::merge::{Item, Merger};
use super::ring::{self, Missed};
use crate::rt::clock::monotonic_ns;
use crate::rt::sched::{
    Policy, allowed_cpus_of_process, current_tid, pin_current_thread_to, set_current_thread_policy,
};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// Pause between read passes when the buffers were drained.
const POLL: Duration = Duration::from_millis(10);
/// How long an event waits for possibly earlier ones of other CPUs.
const MERGE_MARGIN_NS: u64 = 20_000_000;
/// Pages read from one CPU per pass before turning to the next, so one busy
/// CPU cannot starve the others.
const PAGES_PER_PASS: usize = 256;

/// One traced CPU's raw pipe (opened `O_NONBLOCK`).
pub struct CpuPipe {
    pub cpu: usize,
    pub file: File,
    /// Set after a read error other than "no data": not read again.
    pub failed: bool,
    /// The last page could not be decoded completely.
    pub gap_pending: bool,
    /// The time of the last event read from this CPU (0: none yet): where
    /// a loss that the next page reports began at the earliest.
    pub last_event_ns: u64,
}

/// Everything the thread owns.
pub struct Reader {
    /// CPUs the reader must not run on: the traced ones and any other a
    /// measured task runs on.
    pub keep_off: Vec<usize>,
    pub pipes: Vec<CpuPipe>,
    /// Sub-buffer (page) size: one `read()` returns at most one page.
    pub page_size: usize,
    pub layout: RingLayout,
    pub decoder: EventDecoder,
    pub consumer: Box<dyn Consumer>,
}

/// What the reader hands the merged, time-ordered events to.
pub trait Consumer: Send {
    /// Called at the start of every read pass, before any event of that
    /// pass is released: a consumer that also takes input from elsewhere
    /// (the spike candidates of the measuring threads) collects it here, so
    /// that it is there before the events of its time arrive.
    fn poll(&mut self) {}
    /// Called once, from the reader thread, before anything else: the
    /// reader's own task id, so that a consumer can tell the reader's own
    /// CPU time apart from the activity it traces.
    fn started(&mut self, _reader_tid: i32) {}
    fn event(&mut self, event: &TraceEvent, counts: &mut ReaderCounts);
    /// The kernel lost events of one traced CPU (see `LostSpan`).
    fn gap(&mut self, lost: LostSpan, counts: &mut ReaderCounts);
    /// Tracing ended at `end` and every event was delivered.
    fn finish(&mut self, end: u64, counts: &mut ReaderCounts);
}

/// Events of `cpu` the kernel lost (its buffer was full, or a page could not
/// be decoded): somewhere after `since_ns` (the last event read from that
/// CPU before the loss, 0 when none was) and before `until_ns` (the first
/// page after it). The whole span is suspect, not only its end: with the
/// buffer in overwrite mode the flagged page can come long after the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostSpan {
    pub cpu: usize,
    pub since_ns: u64,
    pub until_ns: u64,
}

impl LostSpan {
    /// Whether the loss may have touched `[from, to]`.
    pub fn overlaps(&self, from: u64, to: u64) -> bool {
        self.since_ns <= to && self.until_ns >= from
    }
}

/// What the reader counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderCounts {
    /// Data records decoded (of any event type).
    pub events_read: u64,
    /// Events the pages said were lost (stored counts).
    pub lost_in_pages: u64,
    /// Pages flagged "events lost" without a count.
    pub lost_unknown_pages: u64,
    /// Pages or records that could not be decoded (the rest of such a page
    /// is skipped).
    pub malformed: u64,
    /// Events that arrived behind a later one already matched.
    pub late: u64,
    /// Failed reads of a CPU's buffer (that CPU was not read any more).
    pub read_errors: u64,
    /// CPU time the reader thread used, ns.
    pub cpu_ns: u64,
    /// The reader could not be kept off the traced CPUs (no other CPU it
    /// may run on): it competed with what it traced there.
    pub on_traced_cpus: bool,
}

impl Reader {
    /// Runs until `stop` delivers the time tracing was switched off (or its
    /// sender goes away), then drains what is left and returns the counts.
    pub fn run(mut self, stop: Receiver<u64>) -> ReaderCounts {
        // Threads inherit their creator's policy; the reader must not be RT.
        let _ = set_current_thread_policy(Policy::Other, 0);
        let mut counts = ReaderCounts {
            on_traced_cpus: !self.move_off_traced_cpus(),
            ..ReaderCounts::default()
        };
        self.consumer.started(current_tid());
        let mut merger = Merger::new(self.pipes.len());
        let mut buf = vec![0u8; self.page_size];
        let end = loop {
            self.consumer.poll();
            let pass_start = monotonic_ns();
            let more = self.read_pass(&mut buf, &mut merger, &mut counts);
            self.release(&mut merger, &mut counts, |m, out| {
                m.release(pass_start, MERGE_MARGIN_NS, out)
            });
            let wait = if more { Duration::ZERO } else { POLL };
            match stop.recv_timeout(wait) {
                Ok(end) => break end,
                Err(RecvTimeoutError::Disconnected) => break monotonic_ns(),
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        // Tracing is off: read until every buffer is empty.
        while self.read_pass(&mut buf, &mut merger, &mut counts) {}
        self.consumer.poll();
        self.release(&mut merger, &mut counts, |m, out| m.release_all(out));
        self.consumer.finish(end, &mut counts);
        counts.late = merger.late();
        counts.cpu_ns = thread_cpu_ns();
        counts
    }

    /// Moves the reader onto CPUs no measured task uses, so that its reading
    /// (long copies in the kernel, which a kernel without PREEMPT_RT does
    /// not preempt) never delays a measured task, nor shows up as the cause
    /// of a spike. False when there is no such CPU this process may use: it
    /// then shares the measured CPUs, at normal priority, which the report
    /// says.
    fn move_off_traced_cpus(&self) -> bool {
        // The process's CPUs, not this thread's: the reader inherits the
        // affinity of its creator, which may be pinned to a measured CPU.
        let free: Vec<usize> = allowed_cpus_of_process()
            .into_iter()
            .filter(|c| !self.keep_off.contains(c))
            .collect();
        !free.is_empty() && pin_current_thread_to(&free).is_ok()
    }

    /// Reads every CPU until it has no data (or its share of pages for this
    /// pass). True when some CPU may have more right now.
    fn read_pass(
        &mut self,
        buf: &mut [u8],
        merger: &mut Merger,
        counts: &mut ReaderCounts,
    ) -> bool {
        let mut more = false;
        for slot in 0..self.pipes.len() {
            let mut pages = 0;
            while !self.pipes[slot].failed {
                if pages == PAGES_PER_PASS {
                    more = true;
                    break;
                }
                let n = match self.pipes[slot].file.read(buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => {
                        counts.read_errors += 1;
                        self.pipes[slot].failed = true;
                        break;
                    }
                };
                pages += 1;
                let gap_before = self.pipes[slot].gap_pending;
                let whole = self.decode_page(slot, &buf[..n], gap_before, merger, counts);
                self.pipes[slot].gap_pending = !whole;
            }
        }
        more
    }

    /// Decodes one page into the merger. Returns false when (part of) the
    /// page could not be decoded: its events are lost, which the next page of
    /// that CPU reports as a gap (only then is it known by when).
    fn decode_page(
        &mut self,
        slot: usize,
        bytes: &[u8],
        gap_before: bool,
        merger: &mut Merger,
        counts: &mut ReaderCounts,
    ) -> bool {
        let cpu = self.pipes[slot].cpu;
        let Ok(page) = ring::parse_page(bytes, &self.layout) else {
            counts.malformed += 1;
            return false;
        };
        match page.missed {
            Missed::None => {}
            Missed::Count(n) => counts.lost_in_pages += n,
            Missed::Unknown => counts.lost_unknown_pages += 1,
        }
        if gap_before || page.missed != Missed::None {
            let since = self.pipes[slot].last_event_ns;
            merger.push(slot, page.timestamp, Item::Gap { cpu, since });
        }
        let mut last = None;
        let walked = page.records(|time, payload| {
            counts.events_read += 1;
            last = Some(time);
            match self.decoder.decode(time, cpu, payload) {
                Decoded::Event(event) => merger.push(slot, time, Item::Event(event)),
                Decoded::Other => {}
                Decoded::Malformed => counts.malformed += 1,
            }
        });
        if walked.is_err() {
            counts.malformed += 1;
        }
        if let Some(time) = last {
            self.pipes[slot].last_event_ns = time;
        }
        walked.is_ok()
    }

    fn release(
        &mut self,
        merger: &mut Merger,
        counts: &mut ReaderCounts,
        how: impl FnOnce(&mut Merger, &mut dyn FnMut(u64, Item)),
    ) {
        let consumer = &mut self.consumer;
        how(merger, &mut |time, item| match item {
            Item::Event(event) => consumer.event(&event, counts),
            Item::Gap { cpu, since } => consumer.gap(
                LostSpan {
                    cpu,
                    since_ns: since,
                    until_ns: time,
                },
                counts,
            ),
        });
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
