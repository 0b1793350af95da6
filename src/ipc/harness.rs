//! The pair harness, written once for every primitive and both loop shapes.
//!
//! Each pair has two tasks. The *recorder* is always a thread of this process:
//! it paces the pair, takes every sample and owns the statistics. The *peer*
//! only answers: a thread, or with `Tasks::Processes` a child forked before any
//! thread starts. The two loop shapes differ only in which channel carries
//! what (see `Mode`):
//!
//! - one way (pmqtest, sigwaittest): the recorder sleeps until its next period,
//!   hands the turn to the peer (`sync`) and blocks on `test`; the peer, woken
//!   by the hand-over, stamps and posts at once. Sample = receive stamp - the
//!   peer's stamp carried by the channel.
//! - round trip (semtest): the recorder stamps, posts on `test`, blocks on
//!   `sync`; the peer echoes each wake-up back. Sample = second stamp - first.
//!
//! Periods are absolute (`next += interval`, `clock_nanosleep(TIMER_ABSTIME)`);
//! a period that has entirely passed before the recorder could start it is
//! counted as an overrun and skipped, never silently absorbed. Interval 0 runs
//! samples back to back (no sleep, no overruns; each task still blocks on its
//! primitive every sample). Each pair runs its own loop count; the run ends
//! when every pair is done, the duration expires, the break-trace limit is
//! crossed, an error occurs, a peer process dies, or the user interrupts. In
//! every case the results so far are returned.

use super::{Channel, ChannelError, PairChannels, Transport, Wake};
use crate::rt::clock::{Deadline, monotonic_ns, sleep_until_ns};
use crate::rt::sched::{self, Policy};
use crate::rt::shm::SharedBox;
use crate::rt::signals::wait_for_stop_signal;
use crate::rt::tracefs::BreakTrace;
use crate::stats::LatencyRecorder;
use crate::stats::window::{SecondStats, WindowRing, WindowWriter};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Stack of every measuring thread: small, because `mlockall(MCL_FUTURE)` locks
/// all of it; the histogram lives on the heap and is built before the loop.
const MEASURING_THREAD_STACK: usize = 256 * 1024;
/// Longest single sleep of a task, so that a stop request with a long
/// interval is seen within this time.
const MAX_SLEEP_SLICE_NS: u64 = 50_000_000;
/// How often the monitor wakes to check for signals, dead peers and
/// per-second data.
const MONITOR_TICK: Duration = Duration::from_millis(100);
/// Longest wait for the tasks to report their setup.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a peer process gets to leave by itself after the stop.
const PEER_EXIT_GRACE: Duration = Duration::from_secs(2);

/// How a sample is taken (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    OneWay,
    RoundTrip,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::OneWay => "one-way",
            Mode::RoundTrip => "round-trip",
        }
    }
}

/// What the peer of each pair is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tasks {
    #[default]
    Threads,
    Processes,
}

impl Tasks {
    pub fn as_str(self) -> &'static str {
        match self {
            Tasks::Threads => "threads",
            Tasks::Processes => "processes",
        }
    }
}

/// Settings of one pair.
#[derive(Debug, Clone)]
pub struct PairPlan {
    /// Pin the recorder (one way: the receiver) to this CPU; `None` lets the
    /// scheduler choose.
    pub recorder_cpu: Option<usize>,
    /// Pin the peer (one way: the sender) to this CPU.
    pub peer_cpu: Option<usize>,
    pub policy: Policy,
    pub priority: i32,
    /// 0 runs samples back to back.
    pub interval_ns: u64,
    /// Samples to take; `None` runs until stopped.
    pub loops: Option<u64>,
}

/// Settings of a whole run.
#[derive(Debug, Clone, Default)]
pub struct RunPlan {
    pub pairs: Vec<PairPlan>,
    pub mode: Mode,
    pub tasks: Tasks,
    pub duration: Option<Duration>,
    /// Recorder waits time out after this long; timeouts are counted and the
    /// wait goes on, so the sample still measures the whole delay.
    pub receive_timeout: Option<Duration>,
    /// Extra delay of the peer before each post (pmqtest `-f`), to provoke timeouts.
    pub forced_send_delay: Option<Duration>,
    /// Stop the run (and the kernel tracer) at the first sample above this.
    pub breaktrace_ns: Option<u64>,
    /// `--trace-spikes`: hand every sample above this (ns) to the spike trace.
    pub spike_threshold_ns: Option<u64>,
    /// Count samples above this per pair (the `--max-latency` verdict).
    pub limit_ns: Option<u64>,
    /// Peer processes lock their memory too (`mlockall` is not inherited).
    pub lock_memory: bool,
}

pub use crate::report::EndReason;

/// How far a task got with its setup; written by the task, read by the monitor.
/// In shared memory, so that a forked peer reports the same way as a thread.
#[derive(Default)]
struct TaskSetup {
    /// 0 pending, 1 ready, 2 failed.
    state: AtomicU32,
    step: AtomicU32,
    errno: AtomicI32,
}

const SETUP_PENDING: u32 = 0;
const SETUP_READY: u32 = 1;
const SETUP_FAILED: u32 = 2;

/// The setup steps a task can fail at (allocation-free error codes).
#[derive(Clone, Copy)]
#[repr(u32)]
enum SetupStep {
    Pin = 1,
    Policy = 2,
    LockMemory = 3,
}

impl TaskSetup {
    fn report(&self, result: Result<(), (SetupStep, i32)>) {
        if let Err((step, errno)) = result {
            self.step.store(step as u32, Ordering::Relaxed);
            self.errno.store(errno, Ordering::Relaxed);
            self.state.store(SETUP_FAILED, Ordering::Release);
        } else {
            self.state.store(SETUP_READY, Ordering::Release);
        }
    }

    fn error_message(&self, who: &str, cpu: Option<usize>, pair: &PairPlan) -> String {
        let errno = self.errno.load(Ordering::Relaxed);
        let why = match self.step.load(Ordering::Relaxed) {
            s if s == SetupStep::Pin as u32 => sched::pin_error(cpu.unwrap_or(0), errno),
            s if s == SetupStep::Policy as u32 => {
                sched::policy_error(pair.policy, pair.priority, errno)
            }
            _ => format!(
                "mlockall failed ({}): {}",
                std::io::Error::from_raw_os_error(errno),
                sched::MLOCK_FIX
            ),
        };
        format!("{who}: {why}")
    }
}

/// A `ChannelError` kept in shared memory. The call name is a `&'static str`
/// of this binary: a forked child has the same image at the same addresses, so
/// its pointer is valid in the parent.
#[derive(Default)]
struct SharedError {
    set: AtomicBool,
    call_ptr: AtomicUsize,
    call_len: AtomicUsize,
    errno: AtomicI32,
}

impl SharedError {
    fn store(&self, e: ChannelError) {
        if self.set.load(Ordering::Acquire) {
            return;
        }
        self.call_ptr
            .store(e.call.as_ptr() as usize, Ordering::Relaxed);
        self.call_len.store(e.call.len(), Ordering::Relaxed);
        self.errno.store(e.errno, Ordering::Relaxed);
        self.set.store(true, Ordering::Release);
    }

    fn load(&self) -> Option<ChannelError> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: pointer and length of a &'static str of this binary image
        // (see the type's documentation).
        let call = unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                self.call_ptr.load(Ordering::Relaxed) as *const u8,
                self.call_len.load(Ordering::Relaxed),
            ))
        };
        Some(ChannelError {
            call,
            errno: self.errno.load(Ordering::Relaxed),
        })
    }
}

/// What the peer of a pair publishes (in shared memory: it may be a child).
#[derive(Default)]
pub struct PeerLive {
    /// Wake-ups the peer posted (one way: samples sent; round trip: replies).
    pub sent: AtomicU64,
    pub tid: AtomicI32,
    /// The pinned CPU, or where the peer last ran (set at start and end).
    pub cpu: AtomicUsize,
    done: AtomicBool,
    setup: TaskSetup,
    error: SharedError,
}

/// Live values of one pair, read by the monitor and the progress display.
pub struct PairLive {
    pub samples: AtomicU64,
    pub last_ns: AtomicU64,
    /// Valid once `samples` > 0.
    pub min_ns: AtomicU64,
    pub max_ns: AtomicU64,
    /// Sum of the samples so far (saturating), for a live mean.
    pub sum_ns: AtomicU64,
    pub timeouts: AtomicU64,
    pub overruns: AtomicU64,
    pub recorder_tid: AtomicI32,
    /// The pinned CPU, or where the recorder last ran (set at start and end).
    pub recorder_cpu: AtomicUsize,
    recorder_done: AtomicBool,
    recorder_setup: TaskSetup,
    windows: WindowRing,
    /// Samples above `--trace-spikes`, for the spike trace.
    spikes: Arc<crate::spikes::CandidateQueue>,
    pub peer: SharedBox<PeerLive>,
}

impl PairLive {
    fn new() -> Result<PairLive, String> {
        Ok(PairLive {
            samples: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            min_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            recorder_tid: AtomicI32::new(0),
            recorder_cpu: AtomicUsize::new(0),
            recorder_done: AtomicBool::new(false),
            recorder_setup: TaskSetup::default(),
            windows: WindowRing::default(),
            spikes: crate::spikes::candidate_queue(),
            peer: SharedBox::new(PeerLive::default())?,
        })
    }
}

/// Results of one pair.
#[derive(Clone)]
pub struct PairOutcome {
    pub plan: PairPlan,
    pub recorder: LatencyRecorder,
    pub sent: u64,
    pub timeouts: u64,
    pub overruns: u64,
    pub above_limit: u64,
    pub recorder_tid: i32,
    /// Thread id of the peer; its process id with `Tasks::Processes`.
    pub peer_tid: i32,
    pub recorder_cpu: usize,
    pub peer_cpu: usize,
    pub per_second: Vec<SecondStats>,
    pub per_second_dropped: u64,
    pub resource_names: Vec<String>,
}

pub struct RunOutcome {
    pub pairs: Vec<PairOutcome>,
    pub end_reason: EndReason,
    pub error: Option<String>,
    pub breaktrace_note: Option<String>,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    /// With `--trace-spikes`.
    pub spikes: Option<crate::report::SpikeTrace>,
}

/// The run-wide values a peer must see, in shared memory.
#[derive(Default)]
struct RunFlags {
    stop: AtomicBool,
}

/// State shared by all tasks of a run.
struct Shared {
    flags: SharedBox<RunFlags>,
    end_reason: OnceLock<EndReason>,
    error: OnceLock<String>,
    start_ns: AtomicU64,
    /// CLOCK_MONOTONIC time at which the duration ends (u64::MAX: none).
    end_ns: AtomicU64,
    channels: Vec<PairChannels>,
    live: Vec<PairLive>,
    breaktrace: Mutex<Option<BreakTrace>>,
}

impl Shared {
    /// Idempotent: the first caller records why and wakes every blocked task.
    fn request_stop(&self, reason: EndReason) {
        let _ = self.end_reason.set(reason);
        if !self.flags.stop.swap(true, Ordering::SeqCst) {
            for pair in &self.channels {
                pair.test.interrupt();
                pair.sync.interrupt();
            }
        }
    }

    fn fail(&self, message: String) {
        let _ = self.error.set(message);
        self.request_stop(EndReason::Error);
    }

    fn stopping(&self) -> bool {
        self.flags.stop.load(Ordering::Relaxed)
    }
}

/// Opened once by the monitor when every task is set up (or to cancel).
#[derive(Default)]
struct StartGate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl StartGate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Something that wants a look at the run once a second (live progress).
pub trait Progress {
    fn tick(&mut self, elapsed: Duration, live: &[PairLive]);
    fn finish(&mut self);
}

/// A peer that runs in a child process.
struct PeerProcess {
    pid: libc::pid_t,
    reaped: bool,
    /// How it ended, once seen (reported once).
    ended: Option<String>,
}

impl PeerProcess {
    fn new(pid: libc::pid_t) -> PeerProcess {
        PeerProcess {
            pid,
            reaped: false,
            ended: None,
        }
    }

    /// How the child ended, the first time it is seen to have ended. The
    /// child is left a zombie (`WNOWAIT`): its pid stays ours until `reap`,
    /// so a stop that still signals it (signal channels) can never reach an
    /// unrelated process that got the pid.
    fn newly_ended(&mut self) -> Option<String> {
        if self.reaped || self.ended.is_some() {
            return None;
        }
        // SAFETY: zeroed siginfo is a valid out value; our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` (si_pid 0 means: still running).
        if rc != 0 || unsafe { info.si_pid() } == 0 {
            return None;
        }
        let status = unsafe { info.si_status() };
        let how = match info.si_code {
            libc::CLD_EXITED => format!("exited with status {status}"),
            _ => format!("was killed by signal {status}"),
        };
        self.ended = Some(how.clone());
        Some(how)
    }

    /// Waits for the child to leave after a stop, killing it if it does not,
    /// and reaps it.
    fn reap(&mut self) {
        if self.reaped {
            return;
        }
        let deadline = Instant::now() + PEER_EXIT_GRACE;
        loop {
            // SAFETY: our own, not yet reaped child (the pid cannot be reused).
            let rc = unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), libc::WNOHANG) };
            if rc == self.pid || rc < 0 {
                break;
            }
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, std::ptr::null_mut(), 0);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.reaped = true;
    }
}

/// The tasks started so far, so that every exit path stops and joins them all.
#[derive(Default)]
struct Started {
    recorders: Vec<std::thread::JoinHandle<RecorderResult>>,
    peer_threads: Vec<std::thread::JoinHandle<()>>,
    peer_processes: Vec<(usize, PeerProcess)>,
}

impl Started {
    fn join(&mut self) -> Vec<RecorderResult> {
        for t in self.peer_threads.drain(..) {
            let _ = t.join();
        }
        for (_, p) in &mut self.peer_processes {
            p.reap();
        }
        self.recorders
            .drain(..)
            .map(|r| r.join().unwrap_or_else(|_| (LatencyRecorder::new(), 0)))
            .collect()
    }
}

/// Runs `plan` over `transport`. Errors before measuring (task setup, object
/// creation) are returned as `Err`; errors during the run end it and are
/// reported in the outcome next to the samples taken so far.
pub fn run(
    transport: &dyn Transport,
    plan: &RunPlan,
    breaktrace: Option<BreakTrace>,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, String> {
    let across_processes = plan.tasks == Tasks::Processes;
    if across_processes && !transport.crosses_processes() {
        return Err(format!(
            "{} cannot connect two processes: run it without --fork",
            transport.name()
        ));
    }
    let channels = (0..plan.pairs.len())
        .map(|i| transport.open_pair(i, across_processes))
        .collect::<Result<Vec<_>, _>>()?;
    let shared = Arc::new(Shared {
        flags: SharedBox::new(RunFlags::default())?,
        end_reason: OnceLock::new(),
        error: OnceLock::new(),
        start_ns: AtomicU64::new(0),
        end_ns: AtomicU64::new(u64::MAX),
        live: plan
            .pairs
            .iter()
            .map(|_| PairLive::new())
            .collect::<Result<_, _>>()?,
        channels,
        breaktrace: Mutex::new(breaktrace),
    });
    let gate = Arc::new(StartGate::default());
    let mut tasks = Started::default();

    let setup = start_tasks(plan, &shared, &gate, &mut tasks)
        .and_then(|()| wait_for_setup(plan, &shared, &mut tasks));
    // Every task is set up (its id known) and none measures yet: the time
    // to start the spike trace.
    let setup = setup.and_then(|()| start_spike_trace(plan, &shared));
    let spike_tracer = match setup {
        Ok(tracer) => tracer,
        Err(e) => {
            shared.request_stop(EndReason::Error);
            gate.open();
            tasks.join();
            return Err(e);
        }
    };

    let started = SystemTime::now();
    let started_instant = Instant::now();
    let start_ns = monotonic_ns();
    shared.start_ns.store(start_ns, Ordering::SeqCst);
    if let Some(d) = plan.duration {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        shared
            .end_ns
            .store(start_ns.saturating_add(d), Ordering::SeqCst);
    }
    gate.open();

    let mut per_second: Vec<Vec<SecondStats>> = plan.pairs.iter().map(|_| Vec::new()).collect();
    let mut next_progress = Duration::from_secs(1);
    loop {
        // Wake at the end of the duration, not up to a tick later.
        let tick = plan.duration.map_or(MONITOR_TICK, |d| {
            d.saturating_sub(started_instant.elapsed())
                .clamp(Duration::from_millis(1), MONITOR_TICK)
        });
        if wait_for_stop_signal(tick).is_some() {
            shared.request_stop(EndReason::Interrupted);
        }
        for (live, out) in shared.live.iter().zip(per_second.iter_mut()) {
            live.windows.drain_into(out);
        }
        check_peers(&shared, &mut tasks);
        let elapsed = started_instant.elapsed();
        if shared
            .live
            .iter()
            .all(|l| l.recorder_done.load(Ordering::Acquire) && l.peer.done.load(Ordering::Acquire))
        {
            shared.request_stop(EndReason::LoopsDone);
        }
        if plan.duration.is_some_and(|d| elapsed >= d) {
            shared.request_stop(EndReason::DurationElapsed);
        }
        if shared.stopping() {
            break;
        }
        if elapsed >= next_progress {
            progress.tick(elapsed, &shared.live);
            next_progress += Duration::from_secs(1);
        }
    }
    progress.finish();

    let recorders = tasks.join();
    let spikes = spike_tracer.map(crate::spikes::SpikeTracer::stop);
    // A peer error that came in while stopping still belongs to the report.
    check_peers(&shared, &mut tasks);
    let ended = SystemTime::now();
    let elapsed = started_instant.elapsed();
    let shared =
        Arc::try_unwrap(shared).map_err(|_| "internal error: threads still hold the run state")?;
    let breaktrace_note = shared.breaktrace.lock().ok().and_then(|b| {
        b.as_ref()
            .map(|b| format!("tracer stopped in {}", b.dir.display()))
    });
    let Shared {
        end_reason,
        error,
        channels,
        live,
        ..
    } = shared;
    let pairs = plan
        .pairs
        .iter()
        .zip(recorders)
        .zip(live)
        .zip(per_second)
        .zip(channels)
        .map(
            |((((pair, (recorder, above_limit)), live), mut per_second), channels)| {
                live.windows.drain_into(&mut per_second);
                PairOutcome {
                    plan: pair.clone(),
                    recorder,
                    above_limit,
                    sent: live.peer.sent.load(Ordering::Relaxed),
                    timeouts: live.timeouts.load(Ordering::Relaxed),
                    overruns: live.overruns.load(Ordering::Relaxed),
                    recorder_tid: live.recorder_tid.load(Ordering::Relaxed),
                    peer_tid: live.peer.tid.load(Ordering::Relaxed),
                    recorder_cpu: live.recorder_cpu.load(Ordering::Relaxed),
                    peer_cpu: live.peer.cpu.load(Ordering::Relaxed),
                    per_second_dropped: live.windows.dropped(),
                    per_second,
                    resource_names: channels.resource_names.clone(),
                }
            },
        )
        .collect();
    let end_reason = end_reason.get().copied().unwrap_or(EndReason::LoopsDone);
    Ok(RunOutcome {
        pairs,
        breaktrace_note: (end_reason == EndReason::BreakTrace)
            .then_some(breaktrace_note)
            .flatten(),
        end_reason,
        error: error.get().cloned(),
        started,
        ended,
        elapsed,
        spikes,
    })
}

/// With `--trace-spikes`: the trace of the recorders' CPUs (every online
/// CPU when a recorder is not pinned), each pair's queue a source.
fn start_spike_trace(
    plan: &RunPlan,
    shared: &Shared,
) -> Result<Option<crate::spikes::SpikeTracer>, String> {
    let Some(threshold) = plan.spike_threshold_ns else {
        return Ok(None);
    };
    let cpus: Vec<usize> = match plan
        .pairs
        .iter()
        .map(|p| p.recorder_cpu)
        .collect::<Option<Vec<_>>>()
    {
        Some(pinned) => pinned,
        None => crate::rt::sysinfo::online_cpus(),
    };
    let sources = shared
        .live
        .iter()
        .enumerate()
        .map(|(i, live)| crate::spikes::Source {
            label: format!("pair {i}"),
            queue: live.spikes.clone(),
            tids: vec![
                live.recorder_tid.load(Ordering::Relaxed),
                live.peer.tid.load(Ordering::Relaxed),
            ],
        })
        .collect();
    crate::spikes::SpikeTracer::start(sources, &cpus, threshold)
        .map(Some)
        .map_err(|e| format!("--trace-spikes needs kernel tracing: {e}"))
}

/// Starts the peers (processes first, while this process has no other thread,
/// so a child never inherits a lock held by a thread it does not have), then
/// the recorder threads.
fn start_tasks(
    plan: &RunPlan,
    shared: &Arc<Shared>,
    gate: &Arc<StartGate>,
    tasks: &mut Started,
) -> Result<(), String> {
    for index in 0..plan.pairs.len() {
        let ctx = TaskContext {
            index,
            plan: plan.clone(),
            shared: Arc::clone(shared),
        };
        match plan.tasks {
            Tasks::Processes => {
                let pid = fork_peer(&ctx)?;
                tasks.peer_processes.push((index, PeerProcess::new(pid)));
            }
            Tasks::Threads => tasks.peer_threads.push(spawn_measuring_thread(
                format!("lat-peer{index}"),
                move || peer_task(&ctx),
            )?),
        }
    }
    for index in 0..plan.pairs.len() {
        // Built here, before the thread starts: allocation and page faults
        // happen now, not during the measurement.
        let recorder = LatencyRecorder::new();
        let ctx = TaskContext {
            index,
            plan: plan.clone(),
            shared: Arc::clone(shared),
        };
        let gate = Arc::clone(gate);
        tasks.recorders.push(spawn_measuring_thread(
            format!("lat-rec{index}"),
            move || recorder_task(&ctx, &gate, recorder),
        )?);
    }
    Ok(())
}

/// Waits until every task has reported its setup; the first failure, a dead
/// peer or a task that takes too long cancels the run.
fn wait_for_setup(plan: &RunPlan, shared: &Shared, tasks: &mut Started) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    loop {
        let mut pending = false;
        for (i, (live, pair)) in shared.live.iter().zip(&plan.pairs).enumerate() {
            for (setup, who, cpu) in [
                (&live.recorder_setup, "recorder", pair.recorder_cpu),
                (&live.peer.setup, "peer", pair.peer_cpu),
            ] {
                match setup.state.load(Ordering::Acquire) {
                    SETUP_PENDING => pending = true,
                    SETUP_FAILED => {
                        return Err(setup.error_message(&format!("pair {i} {who}"), cpu, pair));
                    }
                    _ => {}
                }
            }
        }
        for (i, p) in &mut tasks.peer_processes {
            if let Some(how) = p.newly_ended() {
                return Err(format!(
                    "pair {i}: peer process {} {how} during setup",
                    p.pid
                ));
            }
        }
        if !pending {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "measuring tasks did not start within {} s",
                SETUP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Turns a peer's error, or the death of a peer process, into the run's error.
fn check_peers(shared: &Shared, tasks: &mut Started) {
    for (i, live) in shared.live.iter().enumerate() {
        if let Some(e) = live.peer.error.load()
            && shared.error.get().is_none()
        {
            shared.fail(format!("pair {i}: {e}"));
        }
    }
    for (i, p) in &mut tasks.peer_processes {
        if let Some(how) = p.newly_ended() {
            let finished = shared.live[*i].peer.done.load(Ordering::Acquire);
            if !finished && shared.error.get().is_none() {
                shared.fail(format!(
                    "pair {i}: peer process {} {how}; results so far are reported",
                    p.pid
                ));
            }
        }
    }
}

/// What a task needs to know; cheap to clone per task.
struct TaskContext {
    index: usize,
    plan: RunPlan,
    shared: Arc<Shared>,
}

impl TaskContext {
    fn pair(&self) -> &PairPlan {
        &self.plan.pairs[self.index]
    }

    fn live(&self) -> &PairLive {
        &self.shared.live[self.index]
    }

    fn channels(&self) -> &PairChannels {
        &self.shared.channels[self.index]
    }

    /// The channel the recorder blocks on for each sample's answer.
    fn recorder_in(&self) -> &dyn Channel {
        match self.plan.mode {
            Mode::OneWay => self.channels().test.as_ref(),
            Mode::RoundTrip => self.channels().sync.as_ref(),
        }
    }

    /// The channel the peer blocks on between samples.
    fn peer_in(&self) -> &dyn Channel {
        match self.plan.mode {
            Mode::OneWay => self.channels().sync.as_ref(),
            Mode::RoundTrip => self.channels().test.as_ref(),
        }
    }
}

/// Affinity, timer slack, scheduling: the part of the setup every task does.
/// Allocation-free, for forked children.
fn set_up_current_task(cpu: Option<usize>, pair: &PairPlan) -> Result<(), (SetupStep, i32)> {
    sched::minimal_timer_slack();
    if let Some(cpu) = cpu {
        sched::try_pin_current_thread(cpu).map_err(|e| (SetupStep::Pin, e))?;
    }
    sched::try_set_current_thread_policy(pair.policy, pair.priority)
        .map_err(|e| (SetupStep::Policy, e))
}

type RecorderResult = (LatencyRecorder, u64);

fn spawn_measuring_thread<T: Send + 'static>(
    name: String,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, String> {
    std::thread::Builder::new()
        .name(name)
        .stack_size(MEASURING_THREAD_STACK)
        .spawn(body)
        .map_err(|e| format!("could not start a measuring thread: {e}"))
}

/// Forks the peer of one pair. The child sets itself up and runs `peer_task`
/// on the inherited channels and shared memory, then leaves with `_exit` (no
/// destructor, no atexit handler, no flush of the parent's buffers). It dies
/// with this thread (`PR_SET_PDEATHSIG`), so a killed latscope leaves no child.
fn fork_peer(ctx: &TaskContext) -> Result<libc::pid_t, String> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: this process has no other thread now (see `start_tasks`), and
    // the child runs only allocation-free code before `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "could not fork a peer process: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid > 0 {
        return Ok(pid);
    }
    // The child.
    // SAFETY: plain prctl/getppid calls.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            // The parent is already gone.
            libc::_exit(0);
        }
    }
    if ctx.plan.lock_memory {
        // SAFETY: plain syscall.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            ctx.live()
                .peer
                .setup
                .report(Err((SetupStep::LockMemory, errno)));
            // SAFETY: leave without running anything of the parent's.
            unsafe { libc::_exit(1) };
        }
    }
    peer_task(ctx);
    // SAFETY: as above.
    unsafe { libc::_exit(0) }
}

/// The peer: blocks on its channel and answers each wake-up, until stopped.
/// It needs no loop count: after its last sample the recorder releases it
/// with an interrupt instead of another wake-up. Allocation-free.
fn peer_task(ctx: &TaskContext) {
    let peer = &*ctx.live().peer;
    peer.tid.store(sched::current_tid(), Ordering::Relaxed);
    let pair = ctx.pair();
    let setup = set_up_current_task(pair.peer_cpu, pair);
    peer.cpu.store(
        pair.peer_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    let input = ctx.peer_in();
    // Before reporting ready: the recorder may post as soon as the run starts.
    input.attach_waiter();
    let failed = setup.is_err();
    peer.setup.report(setup);
    if failed {
        peer.done.store(true, Ordering::Release);
        return;
    }
    let channels = ctx.channels();
    let flags = &*ctx.shared.flags;
    let mut sent = 0u64;
    loop {
        let stamp = match input.wait(None) {
            Ok(Wake::Message(stamp)) => stamp,
            Ok(Wake::TimedOut) => continue,
            Ok(Wake::Interrupted) => break,
            Err(e) => {
                peer.error.store(e);
                break;
            }
        };
        let posted = match ctx.plan.mode {
            // Woken by the hand-over: stamp and send at once.
            Mode::OneWay => {
                if let Some(delay) = ctx.plan.forced_send_delay {
                    sleep_until_or_stop(Deadline::after(delay).ns(), flags);
                }
                if flags.stop.load(Ordering::Relaxed) {
                    break;
                }
                channels.test.post(monotonic_ns())
            }
            Mode::RoundTrip => channels.sync.post(stamp),
        };
        if let Err(e) = posted {
            peer.error.store(e);
            break;
        }
        sent += 1;
        peer.sent.store(sent, Ordering::Relaxed);
    }
    peer.cpu.store(
        pair.peer_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    peer.done.store(true, Ordering::Release);
}

fn recorder_task(
    ctx: &TaskContext,
    gate: &StartGate,
    mut recorder: LatencyRecorder,
) -> RecorderResult {
    let live = ctx.live();
    let pair = ctx.pair();
    live.recorder_tid
        .store(sched::current_tid(), Ordering::Relaxed);
    let setup = set_up_current_task(pair.recorder_cpu, pair);
    live.recorder_cpu.store(
        pair.recorder_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    let input = ctx.recorder_in();
    input.attach_waiter();
    live.recorder_setup.report(setup);
    gate.wait();
    let mut above_limit = 0u64;
    if !ctx.shared.stopping() {
        above_limit = sample_loop(ctx, &mut recorder);
    }
    // The peer is released after the last sample too: it waits for this
    // instead of running on (thread exit) while the last sample is still in
    // flight on a shared CPU. `interrupt` never blocks, even if the peer is gone.
    ctx.peer_in().interrupt();
    live.recorder_cpu.store(
        pair.recorder_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    live.recorder_done.store(true, Ordering::Release);
    (recorder, above_limit)
}

/// Takes the samples of one pair; returns how many were above the limit.
fn sample_loop(ctx: &TaskContext, recorder: &mut LatencyRecorder) -> u64 {
    let live = ctx.live();
    let channels = ctx.channels();
    let shared = &*ctx.shared;
    let start_ns = shared.start_ns.load(Ordering::SeqCst);
    let end_ns = shared.end_ns.load(Ordering::SeqCst);
    let mut windows = WindowWriter::new(&live.windows, start_ns);
    let loops = ctx.pair().loops.unwrap_or(u64::MAX);
    let limit_ns = ctx.plan.limit_ns.unwrap_or(u64::MAX);
    let breaktrace_ns = ctx.plan.breaktrace_ns.unwrap_or(u64::MAX);
    let spike_ns = ctx.plan.spike_threshold_ns.unwrap_or(u64::MAX);
    let timeout = ctx.plan.receive_timeout;
    let interval = ctx.pair().interval_ns;
    // Pairs start out of phase, spread over the period: pairs that woke in
    // lockstep would contend for the same kernel locks (all threads of one
    // process share one signal lock, for one) and measure each other instead
    // of the primitive. The originals' relative sleeps drift apart the same way.
    let mut next = start_ns + interval * ctx.index as u64 / ctx.plan.pairs.len().max(1) as u64;
    let mut max_seen = 0u64;
    let mut min_seen = u64::MAX;
    let mut sum_seen = 0u64;
    let mut above_limit = 0u64;

    while recorder.count() < loops && !shared.stopping() {
        if interval > 0 {
            sleep_until_or_stop(next, &shared.flags);
            if shared.stopping() {
                break;
            }
        }
        let (posted, begin_ns) = match ctx.plan.mode {
            // Your turn: the peer stamps and posts as soon as it wakes.
            Mode::OneWay => (channels.sync.post(0), 0),
            Mode::RoundTrip => {
                let t0 = monotonic_ns();
                (channels.test.post(t0), t0)
            }
        };
        if let Err(e) = posted {
            shared.fail(format!("pair {}: {e}", ctx.index));
            break;
        }
        let Some(stamp) = wait_for_answer(ctx, timeout) else {
            break;
        };
        let now = monotonic_ns();
        let latency = match ctx.plan.mode {
            Mode::OneWay => now.saturating_sub(stamp),
            Mode::RoundTrip => now.saturating_sub(begin_ns),
        };
        // A one-way latency is at most the run's length: it fits an i64.
        let signed_latency = latency as i64;
        recorder.record(signed_latency);
        windows.record(now, signed_latency);
        live.samples.store(recorder.count(), Ordering::Relaxed);
        live.last_ns.store(latency, Ordering::Relaxed);
        if latency > max_seen {
            max_seen = latency;
            live.max_ns.store(latency, Ordering::Relaxed);
        }
        if latency < min_seen {
            min_seen = latency;
            live.min_ns.store(latency, Ordering::Relaxed);
        }
        sum_seen = sum_seen.saturating_add(latency);
        live.sum_ns.store(sum_seen, Ordering::Relaxed);
        if latency > limit_ns {
            above_limit += 1;
        }
        if latency > spike_ns {
            // Lock-free and allocation-free: the trace reader attributes it
            // on the CPU this task woke on.
            live.spikes.push(crate::spikes::Candidate {
                cpu: sched::current_cpu() as u32,
                expected_ns: match ctx.plan.mode {
                    Mode::OneWay => stamp,
                    Mode::RoundTrip => begin_ns,
                },
                actual_ns: now,
            });
        }
        if latency > breaktrace_ns {
            fire_breaktrace(ctx, latency);
            break;
        }
        // Checked here too: back-to-back pairs can keep the monitor off the CPU.
        if now >= end_ns {
            shared.request_stop(EndReason::DurationElapsed);
            break;
        }
        if interval > 0 {
            next += interval;
            // `now` is the end of the sample: it is done at that moment.
            if now >= next + interval {
                // Whole periods went by while this sample was in flight.
                let missed = (now - next) / interval;
                next += missed * interval;
                live.overruns.fetch_add(missed, Ordering::Relaxed);
            }
        }
    }
    windows.flush();
    above_limit
}

/// Blocks for the answer of the current sample; `None` when the run stops.
/// Timeouts are counted and the wait goes on for the same answer, so the
/// sample still measures the whole delay.
fn wait_for_answer(ctx: &TaskContext, timeout: Option<Duration>) -> Option<u64> {
    loop {
        match ctx.recorder_in().wait(timeout) {
            Ok(Wake::Message(stamp)) => return Some(stamp),
            Ok(Wake::TimedOut) => {
                ctx.live().timeouts.fetch_add(1, Ordering::Relaxed);
                if ctx.shared.stopping() {
                    return None;
                }
            }
            Ok(Wake::Interrupted) => return None,
            Err(e) => {
                ctx.shared.fail(format!("pair {}: {e}", ctx.index));
                return None;
            }
        }
    }
}

fn fire_breaktrace(ctx: &TaskContext, latency_ns: u64) {
    if let Ok(mut guard) = ctx.shared.breaktrace.lock()
        && let Some(trace) = guard.as_mut()
    {
        let mut message = [0u8; 96];
        let text = format!(
            "latscope: pair {} latency {latency_ns} ns > break trace limit\n",
            ctx.index
        );
        let n = text.len().min(message.len());
        message[..n].copy_from_slice(&text.as_bytes()[..n]);
        trace.fire(&message[..n]);
    }
    ctx.shared.request_stop(EndReason::BreakTrace);
}

/// Sleeps until `deadline_ns` in slices, so a stop request is seen promptly.
fn sleep_until_or_stop(deadline_ns: u64, flags: &RunFlags) {
    loop {
        let now = monotonic_ns();
        if now >= deadline_ns || flags.stop.load(Ordering::Relaxed) {
            return;
        }
        sleep_until_ns(deadline_ns.min(now + MAX_SLEEP_SLICE_NS));
    }
}

#[cfg(test)]
mod tests {
    //! The harness on an in-process transport: deterministic, no privileges.
    use super::*;
    use crate::ipc::{Channel, ChannelError};
    use std::collections::VecDeque;

    /// A queue in memory; `delivery_delay` is added before a message is handed
    /// out, to make samples slower than the period.
    struct LocalChannel {
        queue: Mutex<VecDeque<u64>>,
        ready: Condvar,
        delivery_delay: Duration,
    }

    const SENTINEL: u64 = u64::MAX;

    impl Channel for LocalChannel {
        fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
            self.queue.lock().unwrap().push_back(stamp_ns);
            self.ready.notify_one();
            Ok(())
        }

        fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
            let mut q = self.queue.lock().unwrap();
            let deadline = timeout.map(|t| Instant::now() + t);
            loop {
                if let Some(stamp) = q.pop_front() {
                    drop(q);
                    std::thread::sleep(self.delivery_delay);
                    return Ok(if stamp == SENTINEL {
                        Wake::Interrupted
                    } else {
                        Wake::Message(stamp)
                    });
                }
                match deadline {
                    None => q = self.ready.wait(q).unwrap(),
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            return Ok(Wake::TimedOut);
                        }
                        q = self.ready.wait_timeout(q, d - now).unwrap().0;
                    }
                }
            }
        }

        fn interrupt(&self) {
            let _ = self.post(SENTINEL);
        }
    }

    struct LocalTransport {
        delivery_delay: Duration,
    }

    impl Transport for LocalTransport {
        fn name(&self) -> &'static str {
            "local"
        }

        fn describe(&self) -> &'static str {
            "in-process queue"
        }

        fn crosses_processes(&self) -> bool {
            false
        }

        fn open_pair(&self, _index: usize, _across: bool) -> Result<PairChannels, String> {
            let channel = |delay| {
                Box::new(LocalChannel {
                    queue: Mutex::new(VecDeque::new()),
                    ready: Condvar::new(),
                    delivery_delay: delay,
                })
            };
            Ok(PairChannels {
                test: channel(self.delivery_delay),
                sync: channel(Duration::ZERO),
                resource_names: vec![],
            })
        }
    }

    struct NoProgress;

    impl Progress for NoProgress {
        fn tick(&mut self, _: Duration, _: &[PairLive]) {}
        fn finish(&mut self) {}
    }

    fn pair(interval_us: u64, loops: Option<u64>) -> PairPlan {
        PairPlan {
            recorder_cpu: None,
            peer_cpu: None,
            policy: Policy::Other,
            priority: 0,
            interval_ns: interval_us * 1000,
            loops,
        }
    }

    fn run_local(delay: Duration, plan: RunPlan) -> RunOutcome {
        let transport = LocalTransport {
            delivery_delay: delay,
        };
        run(&transport, &plan, None, &mut NoProgress).expect("run")
    }

    #[test]
    fn every_pair_runs_all_its_loops() {
        let plan = RunPlan {
            pairs: vec![pair(200, Some(20)), pair(2_000, Some(5))],
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        assert_eq!(out.end_reason, EndReason::LoopsDone);
        let samples: Vec<u64> = out.pairs.iter().map(|p| p.recorder.count()).collect();
        assert_eq!(samples, [20, 5]);
        assert_eq!(out.pairs[0].sent, 20);
        assert_eq!(out.pairs[1].sent, 5);
        let windowed: u64 = out.pairs[0].per_second.iter().map(|w| w.samples).sum();
        assert_eq!(windowed, 20);
    }

    #[test]
    fn samples_slower_than_the_period_count_overruns() {
        // 1 ms period, each delivery takes >= 3.5 ms: at least 2 whole periods
        // are missed per sample (3 after the first two).
        let plan = RunPlan {
            pairs: vec![pair(1_000, Some(4))],
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_micros(3_500), plan);
        let p = &out.pairs[0];
        assert_eq!(p.recorder.count(), 4);
        assert!(p.overruns >= 3 * 2, "overruns {}", p.overruns);
        assert!(p.recorder.summary().min_ns >= 3_500_000);
    }

    #[test]
    fn timeouts_are_counted_and_the_sample_still_taken() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, Some(2))],
            receive_timeout: Some(Duration::from_millis(5)),
            forced_send_delay: Some(Duration::from_millis(22)),
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        let p = &out.pairs[0];
        assert_eq!(p.recorder.count(), 2);
        // Each sample waits 22 ms with 5 ms timeouts: about 4 each; at least
        // one each even on a loaded machine.
        assert!(p.timeouts >= 2, "timeouts {}", p.timeouts);
    }

    #[test]
    fn duration_ends_an_endless_run_with_results() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, None)],
            duration: Some(Duration::from_millis(300)),
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        assert_eq!(out.end_reason, EndReason::DurationElapsed);
        assert!(out.pairs[0].recorder.count() > 10);
        assert!(out.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn break_trace_limit_stops_the_run_without_tracefs() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, None)],
            breaktrace_ns: Some(1_000_000),
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_millis(2), plan);
        assert_eq!(out.end_reason, EndReason::BreakTrace);
        assert_eq!(out.pairs[0].recorder.count(), 1);
    }

    #[test]
    fn samples_above_the_limit_are_counted() {
        let plan = RunPlan {
            pairs: vec![pair(500, Some(3))],
            limit_ns: Some(1_000_000),
            ..RunPlan::default()
        };
        let out = run_local(Duration::from_millis(2), plan);
        assert_eq!(out.pairs[0].above_limit, 3);
    }

    #[test]
    fn peers_in_child_processes_and_a_dead_child_ends_the_run() {
        let transport = crate::ipc::mq::MessageQueues::new();
        for mode in [Mode::OneWay, Mode::RoundTrip] {
            let plan = RunPlan {
                pairs: vec![pair(500, Some(50)), pair(700, Some(30))],
                mode,
                tasks: Tasks::Processes,
                ..RunPlan::default()
            };
            let out = run(&transport, &plan, None, &mut NoProgress).expect("run");
            assert_eq!(out.end_reason, EndReason::LoopsDone, "{:?}", out.error);
            let samples: Vec<u64> = out.pairs.iter().map(|p| p.recorder.count()).collect();
            assert_eq!(samples, [50, 30]);
            // The peer is another process: its id is not one of our threads.
            assert!(out.pairs.iter().all(|p| p.peer_tid != p.recorder_tid));
        }
    }

    #[test]
    fn back_to_back_samples_count_no_overruns() {
        let plan = RunPlan {
            pairs: vec![pair(0, Some(2_000))],
            ..RunPlan::default()
        };
        let out = run_local(Duration::ZERO, plan);
        assert_eq!(out.pairs[0].recorder.count(), 2_000);
        assert_eq!(out.pairs[0].overruns, 0);
    }

    #[test]
    fn a_transport_that_cannot_cross_processes_refuses_fork() {
        let plan = RunPlan {
            pairs: vec![pair(1_000, Some(1))],
            tasks: Tasks::Processes,
            ..RunPlan::default()
        };
        let transport = LocalTransport {
            delivery_delay: Duration::ZERO,
        };
        let err = run(&transport, &plan, None, &mut NoProgress)
            .err()
            .expect("refused");
        assert!(err.contains("without --fork"), "{err}");
    }
}
