//! One pi_stress inversion group: three threads pinned to one CPU around a
//! priority-inheritance mutex, walked through pi_stress's state machine
//! every lap (start barrier of three; the low thread locks; the low and
//! high threads meet; the high thread blocks on the mutex; the low and
//! medium threads meet; the low thread unlocks; finish barrier of three).
//! The high thread counts the laps (the inversions) and times each of its
//! waits on the mutex: the inversion latency.

use crate::rt::barrier::PthreadBarrier;
use crate::stats::LatencyRecorder;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A scheduling class as pi_stress names and sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiPolicy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
}

impl PiPolicy {
    /// rt-tests' `string_to_policy` (an unknown name is SCHED_OTHER's 0).
    pub fn named(name: &str) -> PiPolicy {
        match name {
            "fifo" => PiPolicy::Fifo,
            "rr" => PiPolicy::Rr,
            "batch" => PiPolicy::Batch,
            "idle" => PiPolicy::Idle,
            "deadline" => PiPolicy::Deadline,
            _ => PiPolicy::Other,
        }
    }

    /// rt-tests' `policy_to_string`.
    pub fn name(self) -> &'static str {
        match self {
            PiPolicy::Other => "SCHED_OTHER",
            PiPolicy::Fifo => "SCHED_FIFO",
            PiPolicy::Rr => "SCHED_RR",
            PiPolicy::Batch => "SCHED_BATCH",
            PiPolicy::Idle => "SCHED_IDLE",
            PiPolicy::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// One thread type's `struct sched_attr` as pi_stress fills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PiSched {
    pub policy: PiPolicy,
    pub priority: i32,
    pub nice: i32,
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
}

impl PiSched {
    pub fn of(policy: PiPolicy, priority: i32) -> PiSched {
        PiSched {
            policy,
            priority,
            nice: 0,
            runtime: 0,
            deadline: 0,
            period: 0,
        }
    }
}

/// glibc's `PTHREAD_PRIO_INHERIT` (not in the libc crate for glibc).
const PTHREAD_PRIO_INHERIT: libc::c_int = 1;

/// A priority-inheritance `pthread_mutex_t` at a fixed address.
pub struct PiMutex(Box<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: a pthread mutex is made to be shared between threads; it is only
// used through the pthread_mutex_* calls.
unsafe impl Sync for PiMutex {}
unsafe impl Send for PiMutex {}

impl PiMutex {
    /// A PI mutex, or the pthread call that failed and its error.
    pub fn new() -> Result<PiMutex, String> {
        // SAFETY: zeroed storage initialised by pthread_mutex_init in its
        // final (boxed) place; the attribute is initialised before use.
        unsafe {
            let m = PiMutex(Box::new(UnsafeCell::new(std::mem::zeroed())));
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            let calls = [
                (
                    "pthread_mutexattr_init",
                    libc::pthread_mutexattr_init(&mut attr),
                ),
                (
                    "pthread_mutexattr_setprotocol",
                    libc::pthread_mutexattr_setprotocol(&mut attr, PTHREAD_PRIO_INHERIT),
                ),
                (
                    "pthread_mutex_init",
                    libc::pthread_mutex_init(m.0.get(), &attr),
                ),
            ];
            libc::pthread_mutexattr_destroy(&mut attr);
            for (call, rc) in calls {
                if rc != 0 {
                    return Err(format!("{call}: {}", std::io::Error::from_raw_os_error(rc)));
                }
            }
            Ok(m)
        }
    }

    fn lock(&self) {
        // SAFETY: an initialised mutex; a PI mutex locked by its owner only.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }

    fn unlock(&self) {
        // SAFETY: called by the thread that locked it.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

/// What the three threads of a group share.
pub struct Group {
    pub id: usize,
    pub cpu: usize,
    mutex: PiMutex,
    start: PthreadBarrier,
    locked: PthreadBarrier,
    elevate: PthreadBarrier,
    finish: PthreadBarrier,
    laps: PthreadBarrier,
    /// Whether this lap runs (decided by the lap barrier's leader, so that
    /// the three threads all run it or all leave).
    go: AtomicBool,
    /// The shutdown seen at the previous lap: pi_stress's threads notice a
    /// shutdown one lap late, so a group of `-i N` does N + 1 inversions.
    stop_next: AtomicBool,
    /// Inversions done (pi_stress's `total`), read by the watchdog.
    pub total: AtomicU64,
    /// `-i`: the group stops the run once it has done this many.
    pub inversions: Option<u64>,
    /// The high thread's waits on the mutex.
    pub latency: Mutex<LatencyRecorder>,
}

/// What the whole run shares with every group thread.
pub struct Shared {
    pub shutdown: AtomicBool,
    /// `-v`: say `INFO: setting shutdown flag` when the run is ended.
    pub verbose: bool,
    /// Every thread and the main thread: released together.
    pub ready: PthreadBarrier,
    /// The first thread that could not set itself up.
    pub setup_error: Mutex<Option<String>>,
}

impl Shared {
    /// pi_stress's `set_shutdown_flag`: the end of the run, said once with `-v`.
    pub fn shut_down(&self) {
        if !self.shutdown.swap(true, Ordering::AcqRel) && self.verbose {
            eprintln!("INFO: setting shutdown flag");
        }
    }
}

/// A barrier of `count` threads, or the refusal as a message.
pub fn barrier(count: usize) -> Result<PthreadBarrier, String> {
    PthreadBarrier::new(count).map_err(|e| e.to_string())
}

impl Group {
    pub fn new(id: usize, cpu: usize, inversions: Option<u64>) -> Result<Group, String> {
        Ok(Group {
            id,
            cpu,
            mutex: PiMutex::new()?,
            start: barrier(3)?,
            locked: barrier(2)?,
            elevate: barrier(2)?,
            finish: barrier(3)?,
            laps: barrier(3)?,
            go: AtomicBool::new(true),
            stop_next: AtomicBool::new(false),
            total: AtomicU64::new(0),
            inversions,
            latency: Mutex::new(LatencyRecorder::new()),
        })
    }

    /// The lap's start: whether this lap runs, the same answer for all three.
    fn lap_runs(&self, shared: &Shared) -> bool {
        if self
            .inversions
            .is_some_and(|n| self.total.load(Ordering::Acquire) >= n)
        {
            shared.shut_down();
        }
        if self.laps.wait() {
            let go = !self.stop_next.load(Ordering::Relaxed);
            self.go.store(go, Ordering::Release);
            self.stop_next
                .store(shared.shutdown.load(Ordering::Acquire), Ordering::Relaxed);
        }
        self.start.wait();
        self.go.load(Ordering::Acquire)
    }
}

/// Which of the three threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Low,
    Med,
    High,
}

/// A group thread's body: set itself up (`sched`, pinned to the group's
/// CPU), wait for the common start, then run laps until the group stops.
pub fn run_thread(group: Arc<Group>, shared: Arc<Shared>, role: Role, sched: PiSched) {
    if let Err(e) = set_up(&group, role, sched) {
        let mut first = shared.setup_error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e);
    }
    shared.ready.wait();
    if shared.setup_error.lock().map_or(true, |e| e.is_some()) {
        return;
    }
    let mut latency = LatencyRecorder::new();
    while group.lap_runs(&shared) {
        match role {
            Role::Low => {
                group.mutex.lock();
                group.locked.wait();
                group.elevate.wait();
                group.mutex.unlock();
            }
            Role::Med => {
                group.elevate.wait();
            }
            Role::High => {
                group.locked.wait();
                let blocked = crate::rt::clock::monotonic_ns();
                group.mutex.lock();
                let got = crate::rt::clock::monotonic_ns();
                group.mutex.unlock();
                latency.record(got.saturating_sub(blocked) as i64);
            }
        }
        group.finish.wait();
        if role == Role::High {
            group.total.fetch_add(1, Ordering::AcqRel);
        }
    }
    if role == Role::High
        && let Ok(mut kept) = group.latency.lock()
    {
        *kept = latency;
    }
}

/// The thread's CPU and scheduling, as pi_stress sets them (a deadline high
/// thread may run on every CPU; deadline low and medium threads keep the
/// main thread's class, as pi_stress's do).
fn set_up(group: &Group, role: Role, sched: PiSched) -> Result<(), String> {
    use crate::rt::sched::{Policy, Reservation, set_current_thread_policy};
    let deadline = sched.policy == PiPolicy::Deadline;
    if deadline && role == Role::High {
        // The kernel admits a deadline task only on its whole root domain.
        crate::rt::sched::pin_current_thread_to(&crate::rt::sched::allowed_cpus_of_process())?;
    } else {
        crate::rt::sched::pin_current_thread(group.cpu)?;
    }
    let policy = match sched.policy {
        PiPolicy::Fifo => Policy::Fifo,
        PiPolicy::Rr => Policy::Rr,
        PiPolicy::Deadline if role == Role::High => Policy::Deadline(Reservation {
            runtime_ns: sched.runtime,
            deadline_ns: sched.deadline,
            period_ns: sched.period,
        }),
        // Inherited from the main thread: nothing to change.
        PiPolicy::Deadline => return Ok(()),
        PiPolicy::Other | PiPolicy::Batch | PiPolicy::Idle => {
            set_current_thread_policy(Policy::Other, 0)?;
            return crate::rt::sched::set_current_thread_nice(sched.nice)
                .map_err(|e| format!("setting nice {}: {e}", sched.nice));
        }
    };
    set_current_thread_policy(policy, sched.priority)
}
