//! A running flight recorder: the map and its mapping, the programs and
//! their attachments (all file descriptors: they die with the process,
//! nothing is pinned), and the collector thread that attributes spikes.

use super::decode::{Names, RegionView, decode};
use super::layout::{DEFAULT_SLOTS, Region, header};
use super::program::{ENABLED, Recipe, program};
use crate::rt::bpf::btf::Btf;
use crate::rt::bpf::{Attachment, BPF_F_MMAPABLE, Map, MapKind, MappedArray, Program, ProgramKind};
use crate::rt::tracefs::format::EventFormat;
use crate::spikes::attribution::{self, CpuState, Window};
use crate::spikes::{Book, Candidate, Source};
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
    pub cpu_ns: u64,
    pub on_traced_cpus: bool,
}

/// How the events were hooked: BTF-typed raw tracepoints, or classic
/// tracepoints (each with why the typed one was not taken).
#[derive(Debug, Default, Clone)]
pub struct Hooks {
    pub typed: usize,
    pub classic: Vec<(String, String)>,
}

impl Hooks {
    /// For the report's source line, e.g. "BTF-typed raw tracepoints".
    pub fn describe(&self) -> String {
        match (self.typed, self.classic.first()) {
            (_, None) => "BTF-typed raw tracepoints".to_string(),
            (0, Some((_, why))) => format!("classic tracepoints ({why})"),
            (_, Some((_, why))) => {
                let names: Vec<&str> = self.classic.iter().map(|(e, _)| e.as_str()).collect();
                format!(
                    "BTF-typed raw tracepoints, classic tracepoints for {} ({why})",
                    names.join(", ")
                )
            }
        }
    }
}

/// Loads and attaches `event`'s program as a BTF-typed raw tracepoint.
fn hook_typed(
    btf: &Btf,
    event: &str,
    tids: &[i32],
    map: &Map,
    region: Region,
) -> Result<(Program, Attachment), String> {
    let insns = program(&Recipe::of_arguments(btf, event, tids)?, map, region)?;
    let (typedef, _) = btf.tracepoint(event)?;
    let loaded = Program::load_btf_raw_tracepoint(event, typedef, &insns)
        .map_err(|e| format!("the typed program for {event} did not load: {e}"))?;
    let attachment = Attachment::btf_raw_tracepoint(&loaded, event).map_err(|e| {
        format!(
            "cannot attach to tp_btf:{event}: {}",
            crate::rt::os_error_text(&e)
        )
    })?;
    Ok((loaded, attachment))
}

/// Loads and attaches `system:event`'s program as a classic tracepoint,
/// reading the record tracefs describes; a verifier refusal saves its log.
fn hook_classic(
    tracefs: &Path,
    system: &str,
    event: &str,
    tids: &[i32],
    map: &Map,
    region: Region,
) -> Result<(Program, Attachment), String> {
    let dir = tracefs.join("events").join(system).join(event);
    let format = EventFormat::read(&dir.join("format"))?;
    let insns = program(&Recipe::of(&format, tids)?, map, region)?;
    let loaded = Program::load(ProgramKind::Tracepoint, event, &insns).map_err(|e| {
        let saved = match &e {
            crate::rt::bpf::LoadError::Verifier { log, .. } => {
                format!(
                    "; {}",
                    crate::rt::bpf::collector::save_verifier_log(event, log)
                )
            }
            _ => String::new(),
        };
        format!("cannot load the program for {system}:{event}: {e}{saved}")
    })?;
    let id = crate::rt::bpf::tracepoint_id(tracefs, system, event)?;
    let attachment =
        Attachment::tracepoint(&loaded, id, &format!("{system}:{event}")).map_err(|e| {
            format!(
                "cannot attach to {system}:{event}: {}",
                crate::rt::os_error_text(&e)
            )
        })?;
    Ok((loaded, attachment))
}

/// The map, its mapping, the programs and where they are attached.
struct Loaded {
    _attachments: Vec<Attachment>,
    programs: Vec<Program>,
    mapped: Arc<MappedArray>,
    _map: Map,
}

pub struct Recorder {
    hooks: Hooks,
    loaded: Option<Loaded>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<(Book, RecorderEnd)>>,
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
    ) -> Result<Recorder, String> {
        let region = Region::with_slots(DEFAULT_SLOTS);
        let possible = crate::rt::bpf::sys::possible_cpus()
            .map_err(|e| format!("cannot count the possible CPUs: {e}"))?;
        let map = Map::create(
            MapKind::Array,
            "flight",
            region.size(),
            possible as u32,
            BPF_F_MMAPABLE,
        )
        .map_err(|e| {
            format!(
                "cannot create the recorder's map: {}",
                crate::rt::os_error_text(&e)
            )
        })?;
        let mapped = map.map_memory(true).map_err(|e| {
            format!(
                "cannot map the recorder's map: {}",
                crate::rt::os_error_text(&e)
            )
        })?;
        for &cpu in cpus {
            mapped
                .write_u64(cpu, ENABLED, 1)
                .ok_or_else(|| format!("CPU {cpu} is not a possible CPU"))?;
        }
        let tids: Vec<i32> = sources
            .iter()
            .flat_map(|s| s.tids.iter().copied())
            .filter(|&t| t > 0)
            .collect();
        // Without the kernel's BTF every event takes the classic path.
        let btf = Btf::vmlinux();
        let mut hooks = Hooks::default();
        let mut programs = Vec::new();
        let mut attachments = Vec::new();
        for &(system, event) in events {
            let typed = match &btf {
                Ok(btf) => hook_typed(btf, event, &tids, &map, region),
                Err(why) => Err(why.clone()),
            };
            let (program, attachment) = match typed {
                Ok(hooked) => {
                    hooks.typed += 1;
                    hooked
                }
                Err(why) => {
                    hooks.classic.push((format!("{system}:{event}"), why));
                    hook_classic(tracefs, system, event, &tids, &map, region)?
                }
            };
            programs.push(program);
            attachments.push(attachment);
        }
        let mapped = Arc::new(mapped);
        let fds: Vec<i32> = programs.iter().map(Program::fd).collect();
        let collector = Collector {
            sources,
            mapped: mapped.clone(),
            region,
            cpus: cpus.to_vec(),
            keep_off,
            program_fds: fds,
            names: Names::default(),
            book: Book::default(),
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
            .map_err(|e| format!("cannot start the recorder's collector thread: {e}"))?;
        Ok(Recorder {
            hooks,
            loaded: Some(Loaded {
                _attachments: attachments,
                programs,
                mapped,
                _map: map,
            }),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Detaches the programs, lets the collector attribute what is still
    /// queued, and frees everything; the book and the counts.
    pub fn stop(&mut self) -> (Book, RecorderEnd) {
        // The collector reads the mapping until it returns: join first.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => (Book::default(), RecorderEnd::default()),
        };
        self.loaded = None;
        result
    }

    /// How the events were hooked.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The loaded programs' descriptors (for their run-time statistics).
    pub fn program_fds(&self) -> Vec<i32> {
        self.loaded
            .as_ref()
            .map(|l| l.programs.iter().map(Program::fd).collect())
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

/// The collector thread's state.
struct Collector {
    sources: Vec<Source>,
    mapped: Arc<MappedArray>,
    region: Region,
    cpus: Vec<usize>,
    keep_off: Vec<usize>,
    program_fds: Vec<i32>,
    names: Names,
    book: Book,
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

impl Collector {
    fn run(mut self, stop: Receiver<()>) -> (Book, RecorderEnd) {
        // Threads inherit their creator's policy; the collector must not be RT.
        let _ = crate::rt::sched::set_current_thread_policy(crate::rt::sched::Policy::Other, 0);
        // But it must not wait behind the load either: a window is readable
        // only until the CPU's ring wraps (8,192 records: 32 ms at the 256,000
        // events/s per CPU of a 20 us timer beside hackbench, where at nice 0
        // it waited long enough that 189 of 233 windows were overwritten,
        // bench/recorder_zero_loss.sh). At nice -20 the scheduler runs it
        // soon after it wakes, still below every real-time task (the measured
        // ones preempt it at once); where it may not (no CAP_SYS_NICE),
        // nice 0, and late windows are flagged as before.
        let _ = crate::rt::sched::set_current_thread_nice(COLLECTOR_NICE);
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
        self.end.cpu_ns = crate::rt::clock::read_clock(libc::CLOCK_THREAD_CPUTIME_ID);
        (self.book, self.end)
    }

    fn misses(&self) -> u64 {
        self.program_fds
            .iter()
            .map(|&fd| recursion_misses(fd))
            .sum()
    }

    /// Records of the traced CPUs whose program was interrupted.
    fn interrupted(&self) -> u64 {
        self.cpus
            .iter()
            .filter_map(|&c| self.mapped.read_u64(c, header::INTERRUPTED))
            .sum()
    }

    /// Attributes every candidate queued since the last pass.
    fn collect(&mut self, tracer: i32) {
        let mut queued: Vec<(usize, Candidate)> = Vec::new();
        for (index, source) in self.sources.iter().enumerate() {
            source.queue.drain(|c| queued.push((index, c)));
        }
        if queued.is_empty() {
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
        for (index, c) in queued {
            let latency = c.actual_ns.saturating_sub(c.expected_ns);
            if !self.book.admit(latency) {
                continue;
            }
            let mut spike = self.attribute(index, c, tracer);
            spike.events_lost |= missed;
            if spike.events_lost {
                spike.summary = attribution::summary(&spike);
            }
            self.book.keep(spike);
        }
    }

    fn attribute(&mut self, source: usize, c: Candidate, tracer: i32) -> crate::report::Spike {
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
        let from = c.expected_ns.saturating_sub(attribution::MARGIN_BEFORE_NS);
        let view = self
            .mapped
            .entry_ptr(cpu)
            .filter(|_| self.cpus.contains(&cpu))
            .map(|at| {
                // SAFETY: entry `cpu` of the mapping: `region.size()` bytes,
                // 8-aligned, mapped while `self.mapped` lives (longer than the view).
                unsafe { RegionView::new(at, self.region) }
            });
        let Some(view) = view else {
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
        let end = c.actual_ns.max(c.expected_ns);
        let spans = &self.miss_spans;
        let snapshot_now = || {
            let mut snapshot = view.snapshot_between(from, end);
            snapshot
                .doubts
                .retain(|d| !d.interrupted || spans.may_have_skipped(d.from_ns, d.to_ns));
            snapshot
        };
        let mut snapshot = snapshot_now();
        if snapshot.doubtful(from, end) {
            // A record of the window may merely be under way: look again
            // once its program has surely finished.
            std::thread::sleep(UNFINISHED_GRACE);
            snapshot = snapshot_now();
        }
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

#[cfg(test)]
mod tests_live {
    //! The two ways of hooking an event must write the same records: both
    //! are attached at once, each into its own map, while a thread of ours
    //! sleeps and wakes; its switches and wake-ups are then compared record
    //! for record (they need root and BPF; each test says why it skips).
    use super::*;
    use crate::spikes::recorder::layout::{Kind, record};

    /// A map of every possible CPU's region, `cpu`'s recording.
    fn recording_map(region: Region, cpu: usize) -> (Map, MappedArray) {
        let cpus = crate::rt::bpf::sys::possible_cpus().unwrap();
        let map = Map::create(
            MapKind::Array,
            "test",
            region.size(),
            cpus as u32,
            BPF_F_MMAPABLE,
        )
        .unwrap();
        let mapped = map.map_memory(true).unwrap();
        mapped.write_u64(cpu, ENABLED, 1).unwrap();
        (map, mapped)
    }

    /// (kind, A, B, C, D) of every record of `tid`'s switches and wake-ups
    /// on `cpu` in `mapped` within `window` (CLOCK_MONOTONIC ns), in time
    /// order; None when the region went round (the oldest records were
    /// overwritten).
    fn records_of(
        mapped: &MappedArray,
        region: Region,
        cpu: usize,
        tid: i32,
        window: (u64, u64),
    ) -> Option<Vec<(u16, [i32; 4])>> {
        // SAFETY: the region of a possible CPU, mapped while `mapped` lives.
        let view = unsafe { RegionView::new(mapped.entry_ptr(cpu).unwrap(), region) };
        let snapshot = view.snapshot_between(window.0, window.1);
        if !snapshot.complete {
            return None;
        }
        // The snapshot starts with the last record before the window.
        let within = snapshot.records.iter().filter(|r| r.time() >= window.0);
        let mine = within.filter_map(|r| {
            let int = |at: usize| i32::from_ne_bytes(r.0[at..at + 4].try_into().unwrap());
            let kind = u16::from_ne_bytes([r.0[record::KIND], r.0[record::KIND + 1]]);
            let ops = [
                int(record::A),
                int(record::B),
                int(record::C),
                int(record::D),
            ];
            let mine = (kind == Kind::Switch as u16 && (ops[0] == tid || ops[1] == tid))
                || (kind == Kind::Wakeup as u16 && ops[0] == tid);
            mine.then_some((kind, ops))
        });
        Some(mine.collect())
    }

    fn name_of(mapped: &MappedArray, region: Region, cpu: usize, tid: i32) -> Option<String> {
        // SAFETY: as in `records_of`.
        let view = unsafe { RegionView::new(mapped.entry_ptr(cpu).unwrap(), region) };
        view.name_of(tid)
            .map(|(comm, prio)| format!("{comm:?}/{prio}"))
    }

    /// What both ways recorded of one worker's sleeps on `cpu`.
    struct Recorded {
        tid: i32,
        typed: Vec<(u16, [i32; 4])>,
        classic: Vec<(u16, [i32; 4])>,
        typed_name: Option<String>,
        classic_name: Option<String>,
    }

    /// Sleeps SLEEPS times on `cpu` while both ways record; None when a
    /// region went round before it was read (a busy CPU's other switches)
    /// or the kernel counted an event no program was given.
    fn record_both(btf: &Btf, tracefs: &Path, cpu: usize) -> Option<Recorded> {
        const SLEEPS: usize = 100;
        // 3 MiB a CPU: seconds of a busy CPU's switches.
        let region = Region::with_slots(65536);
        let (typed_map, typed) = recording_map(region, cpu);
        let (classic_map, classic) = recording_map(region, cpu);
        // The worker's tid is known only once it runs: it waits for the
        // programs, which filter wake-ups by tid.
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            crate::rt::sched::pin_current_thread_to(&[cpu]).unwrap();
            tid_tx.send(crate::rt::sched::current_tid()).unwrap();
            go_rx.recv().unwrap();
            for _ in 0..SLEEPS {
                std::thread::sleep(Duration::from_micros(100));
            }
            done_tx.send(()).unwrap();
            let _ = release_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        let mut hooked = Vec::new();
        for (system, event) in [("sched", "sched_switch"), ("sched", "sched_wakeup")] {
            hooked.push(hook_typed(btf, event, &[tid], &typed_map, region).unwrap());
            hooked
                .push(hook_classic(tracefs, system, event, &[tid], &classic_map, region).unwrap());
        }
        // The hooks are attached one after the other, and the worker may be
        // switched out (preempted on a busy CPU, or blocking on `go`) while
        // only some are: compare only what came after the last was attached
        // and before the first is detached.
        let from = crate::rt::clock::monotonic_ns();
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        // The worker blocks on `release` right after: let that switch be
        // traced by both before detaching.
        std::thread::sleep(Duration::from_millis(50));
        let to = crate::rt::clock::monotonic_ns();
        // An event the kernel handed to no program because another BPF
        // program ran on that CPU (another test's, say) is counted there:
        // such a recording is no comparison.
        let missed: u64 = hooked.iter().map(|(p, _)| recursion_misses(p.fd())).sum();
        drop(hooked);
        if missed > 0 {
            eprintln!("{missed} events were missed by recursion: recording again");
            release_tx.send(()).unwrap();
            worker.join().unwrap();
            return None;
        }
        release_tx.send(()).unwrap();
        worker.join().unwrap();
        Some(Recorded {
            tid,
            typed: records_of(&typed, region, cpu, tid, (from, to))?,
            classic: records_of(&classic, region, cpu, tid, (from, to))?,
            typed_name: name_of(&typed, region, cpu, tid),
            classic_name: name_of(&classic, region, cpu, tid),
        })
    }

    #[test]
    fn typed_and_classic_programs_write_the_same_records() {
        if let Err(why) = crate::spikes::recorder::check() {
            eprintln!("skipped: BPF collection cannot run here: {why}");
            return;
        }
        let btf = match Btf::vmlinux() {
            Ok(btf) => btf,
            Err(why) => {
                eprintln!("skipped: no kernel BTF, so no typed programs to compare: {why}");
                return;
            }
        };
        let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
        let cpu = *crate::rt::sched::allowed_cpus_of_process().last().unwrap();
        // Recorded again (at most three times, said on stderr) when a busy
        // CPU's switches filled a region before it was read, or an event
        // was missed.
        let recorded = (1..=3)
            .find_map(|attempt| {
                let r = record_both(&btf, &tracefs, cpu);
                if r.is_none() {
                    eprintln!("run {attempt} of 3 was no comparison: recording again");
                }
                r
            })
            .expect("each of 3 runs missed events or went round its regions");
        let Recorded {
            tid,
            typed: from_typed,
            classic: from_classic,
            typed_name,
            classic_name,
        } = recorded;
        let switches = |rs: &[(u16, [i32; 4])]| {
            rs.iter()
                .filter(|r| r.0 == Kind::Switch as u16)
                .cloned()
                .collect::<Vec<_>>()
        };
        let wakeups = |rs: &[(u16, [i32; 4])]| {
            let mut w: Vec<[i32; 4]> = rs
                .iter()
                .filter(|r| r.0 == Kind::Wakeup as u16)
                .map(|r| r.1)
                .collect();
            w.sort();
            w.dedup();
            w
        };
        // Switches run with interrupts off: neither program can miss one.
        let (typed_switches, classic_switches) = (switches(&from_typed), switches(&from_classic));
        assert!(
            typed_switches.len() >= 100,
            "{} switches of 100 sleeps",
            typed_switches.len()
        );
        assert_eq!(typed_switches, classic_switches);
        // Asleep in nanosleep: TASK_INTERRUPTIBLE, computed from the
        // arguments by the typed program, read from the record by the other.
        assert!(
            typed_switches.iter().any(|s| s.1[0] == tid && s.1[3] == 1),
            "{typed_switches:?}"
        );
        // A wake-up in an interrupt may be missed by a classic program
        // (one program at a time per CPU): compare what they said.
        let typed_wakeups = wakeups(&from_typed);
        assert!(!typed_wakeups.is_empty());
        assert_eq!(typed_wakeups, wakeups(&from_classic));
        assert_eq!(typed_wakeups[0][2], cpu as i32, "{typed_wakeups:?}");
        assert_eq!(typed_name, classic_name);
        assert!(typed_name.is_some());
    }
}
