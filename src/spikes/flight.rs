//! A running flight recorder (`--trace-spikes` with the BPF collector):
//! its programs in the kernel (`probes::recorder`) and the collector
//! thread that, for each spike, copies that CPU's window out of the map,
//! decodes it and attributes it (`spikes::attribution`). Each spike held
//! its window when it was queued (`probes::recorder::hold`); the collector
//! releases the holds once it has copied every window of its pass.

use crate::probes::ProbeError;
use crate::probes::recorder::decode::{Names, RegionView, Snapshot, decode};
use crate::probes::recorder::hold::Holds;
use crate::probes::recorder::layout::{Region, header};
use crate::probes::recorder::load::{Hooks, LoadedRecorder};
use crate::rt::bpf::MappedArray;
use crate::spikes::attribution::{self, CpuState, Window};
use crate::spikes::{Candidate, Source, SpikeBook};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the collector looks for spikes: far inside the time the
/// buffer holds (`layout::DEFAULT_SLOTS`), so a spike's records are read
/// long before they are overwritten, unless spikes come in a flood.
const POLL: Duration = Duration::from_millis(2);
/// How long to wait before copying a window again when one of its records
/// was still being written: a program runs for well under a microsecond,
/// plus whatever interrupts it.
const UNFINISHED_GRACE: Duration = Duration::from_micros(200);

/// What the recorder's run adds to the spike trace.
#[derive(Debug, Default, Clone, Copy)]
pub struct RecorderEnd {
    /// Records written on the traced CPUs.
    pub records: u64,
    /// Spikes whose window was overwritten before it was read.
    pub overwritten: u64,
    /// Events the kernel did not hand to a program because another
    /// program was running on that CPU (`recursion_misses`).
    pub missed: u64,
    /// Records whose program was interrupted (`layout::INTERRUPTED_NS`):
    /// where such misses happen when the recorder's own programs are
    /// interrupted.
    pub interrupted: u64,
    /// Events not recorded because the ring was full of held windows
    /// (`header::REFUSED`): the collector came later than the ring lasts.
    pub refused: u64,
    pub cpu_ns: u64,
    pub on_traced_cpus: bool,
}

/// The recorder's programs in the kernel and the collector thread that
/// reads their map for each spike.
pub struct Recorder {
    loaded: Option<LoadedRecorder>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<(SpikeBook, RecorderEnd)>>,
}

impl Recorder {
    /// Loads and attaches the programs for `events` (system, name) on
    /// `cpus`, recording the wake-ups of `sources`' tasks, and starts the
    /// collector, which keeps off `keep_off`.
    pub fn start(
        tracefs: &Path,
        events: &[(&str, &str)],
        sources: Vec<Source>,
        cpus: &[usize],
        keep_off: Vec<usize>,
    ) -> Result<Recorder, ProbeError> {
        let tids: Vec<i32> = sources
            .iter()
            .flat_map(|s| s.tids.iter().copied())
            .filter(|&t| t > 0)
            .collect();
        let loaded = LoadedRecorder::load(tracefs, events, &tids, cpus)?;
        let holds = Holds::new(loaded.mapped.clone(), cpus);
        for source in &sources {
            // From now on each spike holds its window.
            source.queue.hold_with(holds.clone());
        }
        let collector = FlightCollector {
            holds,
            sources,
            mapped: loaded.mapped.clone(),
            region: loaded.region,
            cpus: cpus.to_vec(),
            keep_off,
            program_fds: loaded.program_fds(),
            names: Names::default(),
            book: SpikeBook::default(),
            end: RecorderEnd::default(),
            misses_seen: 0,
            interrupted_seen: 0,
            miss_spans: MissSpans::since(crate::rt::clock::monotonic_ns()),
        };
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("latscope-rec".into())
            .stack_size(256 * 1024)
            .spawn(move || collector.run(stopped))
            .map_err(|e| ProbeError::system("cannot start the recorder's collector thread", e))?;
        Ok(Recorder {
            loaded: Some(loaded),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Detaches the programs, lets the collector attribute what is still
    /// queued, and frees everything; the book and the counts.
    pub fn stop(&mut self) -> (SpikeBook, RecorderEnd) {
        // The collector reads the mapping until it returns: join first.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => (SpikeBook::default(), RecorderEnd::default()),
        };
        self.loaded = None;
        result
    }

    /// How the events were hooked.
    pub fn hooks(&self) -> Hooks {
        self.loaded
            .as_ref()
            .map(|l| l.hooks.clone())
            .unwrap_or_default()
    }

    /// The loaded programs' descriptors (for their run-time statistics).
    pub fn program_fds(&self) -> Vec<i32> {
        self.loaded
            .as_ref()
            .map(LoadedRecorder::program_fds)
            .unwrap_or_default()
    }

    /// Records written so far on CPU `cpu`.
    pub fn head(&self, cpu: usize) -> Option<u64> {
        self.loaded.as_ref()?.mapped.read_u64(cpu, 0)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `recursion_misses` of the program with descriptor `fd` (0 when the
/// kernel does not count them): one `bpf()` call, where reading
/// `/proc/self/fdinfo` cost about 20 us a program on every pass.
pub fn recursion_misses(fd: i32) -> u64 {
    crate::rt::bpf::sys::program_stats(fd).map_or(0, |s| s.recursion_misses)
}

/// The collector's nice value: the highest SCHED_OTHER weight.
const COLLECTOR_NICE: i32 = -20;

/// The state of the recorder's collector thread.
struct FlightCollector {
    /// Releases the windows the spikes held.
    holds: Holds,
    sources: Vec<Source>,
    mapped: Arc<MappedArray>,
    region: Region,
    cpus: Vec<usize>,
    keep_off: Vec<usize>,
    program_fds: Vec<i32>,
    names: Names,
    book: SpikeBook,
    end: RecorderEnd,
    /// The programs' recursion misses when last looked at.
    misses_seen: u64,
    /// The traced CPUs' interrupted records when last looked at.
    interrupted_seen: u64,
    /// When the misses grew: an interrupted record is a doubt only there.
    miss_spans: MissSpans,
}

/// The stretches of time in which the kernel skipped a program (its
/// `recursion_misses` grew between two reads), the latest MAX_SPANS of
/// them: a recorder program that ran long was interrupted, but lost
/// nothing unless a skip falls in its time. Interruptions by an IRQ whose
/// program ran nested (each program has its own recursion guard) or by
/// the hypervisor leave the misses as they were.
#[derive(Debug)]
struct MissSpans {
    /// (after, up to]: the reads that saw the misses grow.
    spans: std::collections::VecDeque<(u64, u64)>,
    /// When the misses were last read (or the programs attached).
    last_read_ns: u64,
}

impl MissSpans {
    /// More than the passes between a spike and its collection.
    const MAX_SPANS: usize = 1024;

    fn since(attached_ns: u64) -> MissSpans {
        MissSpans {
            spans: Default::default(),
            last_read_ns: attached_ns,
        }
    }

    /// The misses were read at `read_ns`; `grew`: more than at the last read.
    fn read(&mut self, read_ns: u64, grew: bool) {
        if grew {
            if self.spans.len() == Self::MAX_SPANS {
                self.spans.pop_front();
            }
            self.spans.push_back((self.last_read_ns, read_ns));
        }
        self.last_read_ns = read_ns;
    }

    /// A skip may lie within [from_ns, to_ns]. Before the oldest span kept
    /// nothing is known: a doubt there stands.
    fn may_have_skipped(&self, from_ns: u64, to_ns: u64) -> bool {
        let known_from = if self.spans.len() == Self::MAX_SPANS {
            self.spans.front().map_or(0, |s| s.0)
        } else {
            0
        };
        from_ns < known_from
            || self
                .spans
                .iter()
                .any(|&(after, up_to)| from_ns <= up_to && to_ns > after)
    }
}

impl FlightCollector {
    fn run(mut self, stop: Receiver<()>) -> (SpikeBook, RecorderEnd) {
        self.take_priority();
        let free: Vec<usize> = crate::rt::sched::allowed_cpus_of_process()
            .into_iter()
            .filter(|c| !self.keep_off.contains(c))
            .collect();
        self.end.on_traced_cpus =
            free.is_empty() || crate::rt::sched::pin_current_thread_to(&free).is_err();
        let tracer = crate::rt::sched::current_tid();
        loop {
            let stopping = match stop.recv_timeout(POLL) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
                Err(RecvTimeoutError::Timeout) => false,
            };
            self.collect(tracer);
            if stopping {
                break;
            }
        }
        self.end.records = self
            .cpus
            .iter()
            .filter_map(|&c| self.mapped.read_u64(c, 0))
            .sum();
        self.end.missed = self.misses();
        self.end.interrupted = self.interrupted();
        self.end.refused = self.header_sum(header::REFUSED);
        self.end.cpu_ns = crate::rt::clock::read_clock(libc::CLOCK_THREAD_CPUTIME_ID);
        (self.book, self.end)
    }

    /// The collector must not wait behind the load: a held window stays
    /// whole only until the ring is full (32,768 records: 128 ms at the
    /// 256,000 events/s per CPU of a 20 us timer beside hackbench), and at
    /// nice -20 beside hackbench and other builds it came up to 1.3 s late
    /// (bench/recorder_zero_loss.sh, docs/benchmarks.md part 6). So it
    /// takes real-time priority 1, below every measured task (they preempt
    /// it at once) and above all normal work, when every measured task is
    /// real-time above 1; it blocks between passes (`POLL`) and a pass is
    /// bounded by the queues. Else (a measured task at 1 or normal), or
    /// where it may not, it is normal at nice -20 (threads inherit their
    /// creator's policy: it must not stay real-time by chance).
    fn take_priority(&self) {
        use crate::rt::sched::{self, Policy};
        let tids = self.sources.iter().flat_map(|s| s.tids.iter().copied());
        let lowest = tids
            .filter(|&t| t > 0)
            .map(sched::realtime_priority_of)
            .try_fold(i32::MAX, |low, p| Some(low.min(p?)));
        if lowest.is_some_and(|p| p > 1 && p < i32::MAX)
            && sched::set_current_thread_policy(Policy::Fifo, 1).is_ok()
        {
            return;
        }
        let _ = sched::set_current_thread_policy(Policy::Other, 0);
        let _ = sched::set_current_thread_nice(COLLECTOR_NICE);
    }

    fn misses(&self) -> u64 {
        self.program_fds
            .iter()
            .map(|&fd| recursion_misses(fd))
            .sum()
    }

    /// Records of the traced CPUs whose program was interrupted.
    fn interrupted(&self) -> u64 {
        self.header_sum(header::INTERRUPTED)
    }

    /// The header counter at `field` summed over the traced CPUs.
    fn header_sum(&self, field: usize) -> u64 {
        self.cpus
            .iter()
            .filter_map(|&c| self.mapped.read_u64(c, field))
            .sum()
    }

    /// Attributes every candidate queued since the last pass.
    fn collect(&mut self, tracer: i32) {
        // The holds before the queues are drained: a spike queued later
        // holds again, and its CPU's release below fails (`hold.rs`).
        let holds: Vec<(usize, u64)> = self
            .cpus
            .iter()
            .map(|&c| (c, self.holds.hold_of(c)))
            .collect();
        let mut queued: Vec<(usize, Candidate)> = Vec::new();
        for (index, source) in self.sources.iter().enumerate() {
            source.queue.drain(|c| queued.push((index, c)));
        }
        // Copied first, while held (a copy is plain loads), those the book
        // may keep; released; then decoded and attributed.
        let mut copies: Vec<(usize, Candidate, Option<Snapshot>)> = Vec::new();
        for (index, c) in queued {
            if self.book.would_admit(c.latency_ns()) {
                copies.push((index, c, self.copy_window(&c)));
            } else {
                // Counted (seen, not kept), as every spike is.
                let kept = self.book.admit(c.latency_ns());
                debug_assert!(!kept);
            }
        }
        for (cpu, seen) in holds {
            self.holds.release(cpu, seen);
        }
        if copies.is_empty() {
            return;
        }
        // Events the kernel skipped since the last pass. When one of the
        // recorder's programs was interrupted meanwhile, the skipped events
        // are those of what interrupted it, and its record says where and
        // when (`Snapshot::doubts`). Otherwise another BPF program held
        // the CPU (another tool's): which CPU and when is not known, and
        // every window of this pass is flagged.
        let misses = self.misses();
        let interrupted = self.interrupted();
        // After the read: every skip counted happened before this time.
        self.miss_spans
            .read(crate::rt::clock::monotonic_ns(), misses > self.misses_seen);
        let missed = misses > self.misses_seen && interrupted == self.interrupted_seen;
        self.misses_seen = misses;
        self.interrupted_seen = interrupted;
        for (index, c, copy) in copies {
            if !self.book.admit(c.latency_ns()) {
                continue;
            }
            let mut spike = self.attribute(index, c, tracer, copy);
            spike.events_lost |= missed;
            if spike.events_lost {
                spike.summary = attribution::summary(&spike);
            }
            self.book.keep(spike);
        }
    }

    /// The view of traced CPU `cpu`'s region.
    fn view(&self, cpu: usize) -> Option<RegionView> {
        let at = self
            .mapped
            .entry_ptr(cpu)
            .filter(|_| self.cpus.contains(&cpu))?;
        // SAFETY: entry `cpu` of the mapping: `region.size()` bytes,
        // 8-aligned, mapped while `self.mapped` lives (longer than the view).
        Some(unsafe { RegionView::new(at, self.region) })
    }

    /// The records of `c`'s window (with the margin before it), or None
    /// when its CPU is not traced.
    fn copy_window(&self, c: &Candidate) -> Option<Snapshot> {
        let view = self.view(c.cpu as usize)?;
        let (from, end) = window_span(c);
        let spans = &self.miss_spans;
        let snapshot_now = || {
            let mut snapshot = view.snapshot_between(from, end);
            snapshot
                .doubts
                .retain(|d| !d.interrupted || spans.may_have_skipped(d.from_ns, d.to_ns));
            snapshot
        };
        let snapshot = snapshot_now();
        if snapshot.doubtful(from, end) {
            // A record of the window may merely be under way: look again
            // once its program has surely finished.
            std::thread::sleep(UNFINISHED_GRACE);
            return Some(snapshot_now());
        }
        Some(snapshot)
    }

    fn attribute(
        &mut self,
        source: usize,
        c: Candidate,
        tracer: i32,
        copy: Option<Snapshot>,
    ) -> crate::report::Spike {
        let src = &self.sources[source];
        let cpu = c.cpu as usize;
        let window = Window {
            cpu,
            expected_ns: c.expected_ns,
            actual_ns: c.actual_ns,
            measured: &src.tids,
            tracer,
            wait: src.wait,
        };
        let (Some(view), Some(snapshot)) = (self.view(cpu), copy) else {
            // A CPU not traced (an IPC receiver that moved): nothing known.
            let mut spike = attribution::attribute_events(
                &CpuState::default(),
                std::iter::empty(),
                &window,
                true,
            );
            spike.series = src.label.clone();
            spike.tid = src.tids.first().copied().unwrap_or(0);
            return spike;
        };
        let (from, end) = window_span(&c);
        let mut events: Vec<_> = snapshot
            .records
            .iter()
            .filter_map(|r| decode(r, cpu, &mut self.names, Some(&view)))
            .collect();
        // The CPU's task since before the oldest record, when no switch came
        // since: it ran from then on.
        let oldest = events.first().map_or(from, |e| e.time);
        let base = base_state(&view, oldest, &mut self.names, cpu);
        events.retain(|e| e.time <= end);
        let mut spike = attribution::attribute_events(&base, events.iter(), &window, false);
        if snapshot.overwritten {
            self.end.overwritten += 1;
        }
        if snapshot.overwritten || snapshot.doubtful(from, end) {
            spike.events_lost = true;
            spike.summary = attribution::summary(&spike);
        }
        spike.series = src.label.clone();
        spike.tid = src.tids.first().copied().unwrap_or(0);
        spike
    }
}

/// A spike's window: from the margin before its due time to its run.
fn window_span(c: &Candidate) -> (u64, u64) {
    (
        c.expected_ns.saturating_sub(attribution::MARGIN_BEFORE_NS),
        c.actual_ns.max(c.expected_ns),
    )
}

/// The state to start a window's records from: the task the CPU has run
/// since before the oldest record (the header's "task X since t": no switch
/// came since), when it got the CPU before `oldest`; else nothing known.
fn base_state(view: &RegionView, oldest: u64, names: &mut Names, cpu: usize) -> CpuState {
    let current = view.current_task();
    if current.since_ns > 0 && current.since_ns <= oldest {
        let comm = names.task(current.pid, cpu, Some(view));
        CpuState::running(current.pid, current.prio, comm)
    } else {
        CpuState::default()
    }
}

#[cfg(test)]
mod tests {
    use super::MissSpans;

    #[test]
    fn an_interruption_lost_events_only_where_the_misses_grew() {
        let mut spans = MissSpans::since(1_000);
        spans.read(2_000, false);
        spans.read(3_000, true);
        spans.read(4_000, false);
        // Before, across and after the read span (2000, 3000].
        assert!(!spans.may_have_skipped(1_500, 1_900));
        assert!(!spans.may_have_skipped(1_500, 2_000));
        assert!(spans.may_have_skipped(1_500, 2_001));
        assert!(spans.may_have_skipped(2_500, 2_600));
        assert!(spans.may_have_skipped(3_000, 3_500));
        assert!(!spans.may_have_skipped(3_001, 3_900));
    }

    #[test]
    fn beyond_the_spans_kept_a_doubt_stands() {
        let mut spans = MissSpans::since(0);
        // Every other read grew: more spans than are kept.
        for k in 1..=(2 * MissSpans::MAX_SPANS as u64 + 20) {
            spans.read(k * 10, k % 2 == 0);
        }
        assert_eq!(spans.spans.len(), MissSpans::MAX_SPANS);
        // Before the oldest span kept, whether a program was skipped is no
        // longer known...
        let oldest = spans.spans.front().unwrap().0;
        assert!(spans.may_have_skipped(oldest - 5, oldest - 4));
        // ...and between two kept spans nothing was skipped.
        let (a, b) = (spans.spans[5], spans.spans[6]);
        assert!(!spans.may_have_skipped(a.1 + 1, b.0));
    }
}
