//! Scheduling policy, priority, CPU affinity and memory locking, each checked:
//! a failure is an error that names the fix, never silently ignored.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Other,
    /// SCHED_DEADLINE with this reservation (its period is the test's).
    Deadline(Reservation),
}

/// A SCHED_DEADLINE reservation: `runtime_ns` of CPU time in every
/// `period_ns`, used up within `deadline_ns` of the period's start. The
/// kernel admits it only while the bandwidth of every deadline task of the
/// root domain fits under its limit (`RT_RUNTIME_SYSCTL` of every
/// `RT_PERIOD_SYSCTL`, per CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// The limit of real-time and deadline bandwidth, per CPU (-1: none).
pub const RT_RUNTIME_SYSCTL: &str = "/proc/sys/kernel/sched_rt_runtime_us";
/// The period `RT_RUNTIME_SYSCTL` is a share of.
pub const RT_PERIOD_SYSCTL: &str = "/proc/sys/kernel/sched_rt_period_us";
/// The kernel's bounds of a deadline period (Linux 5.4+; 100 us and
/// 2^22 us when the files are absent).
const DL_PERIOD_MIN_SYSCTL: &str = "/proc/sys/kernel/sched_deadline_period_min_us";
const DL_PERIOD_MAX_SYSCTL: &str = "/proc/sys/kernel/sched_deadline_period_max_us";
/// The policy number of SCHED_DEADLINE (not in the libc crate).
const SCHED_DEADLINE: libc::c_int = 6;
/// `sched_attr.sched_flags`: send SIGXCPU when the task overruns its runtime
/// (is throttled), which `throttled_periods` counts.
const SCHED_FLAG_DL_OVERRUN: u64 = 0x04;
/// The kernel refuses runtimes below 2^DL_SCALE ns.
const DL_MIN_RUNTIME_NS: u64 = 1 << 10;

impl Reservation {
    /// The kernel's rules for a reservation, checked before anything runs:
    /// runtime <= deadline <= period, the runtime at least 1024 ns, the
    /// period within the kernel's bounds. The message names the options.
    pub fn check(&self) -> Result<(), String> {
        let us = |ns: u64| ns / 1000;
        let (runtime, deadline, period) = (self.runtime_ns, self.deadline_ns, self.period_ns);
        if runtime < DL_MIN_RUNTIME_NS {
            return Err(format!(
                "--runtime {} ns is below the kernel's minimum of {DL_MIN_RUNTIME_NS} ns",
                runtime
            ));
        }
        if runtime > deadline {
            return Err(format!(
                "--runtime {} us is longer than the deadline ({} us): a reservation needs runtime <= deadline <= period",
                us(runtime),
                us(deadline)
            ));
        }
        if deadline > period {
            return Err(format!(
                "--deadline {} us is longer than the period ({} us): a reservation needs runtime <= deadline <= period",
                us(deadline),
                us(period)
            ));
        }
        let bound = |path: &str, default: u64| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        let (min_us, max_us) = (
            bound(DL_PERIOD_MIN_SYSCTL, 100),
            bound(DL_PERIOD_MAX_SYSCTL, 1 << 22),
        );
        if period < min_us * 1000 || period > max_us * 1000 {
            return Err(format!(
                "a deadline period of {} us is outside the kernel's bounds {min_us}..{max_us} us ({DL_PERIOD_MIN_SYSCTL}, {DL_PERIOD_MAX_SYSCTL})",
                us(period)
            ));
        }
        Ok(())
    }

    /// The reservation over the test's period `period_ns` (an IPC pair's
    /// interval); a deadline of 0 stands for "the period".
    pub fn for_period(self, period_ns: u64) -> Reservation {
        Reservation {
            period_ns,
            deadline_ns: if self.deadline_ns == 0 {
                period_ns
            } else {
                self.deadline_ns
            },
            ..self
        }
    }
}

impl Policy {
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
            Policy::Deadline(_) => SCHED_DEADLINE,
        }
    }

    /// The kernel's priority range for this policy (1..=99 for FIFO/RR, 0 for OTHER
    /// and DEADLINE).
    pub fn priority_range(self) -> (i32, i32) {
        if self.reservation().is_some() {
            return (0, 0);
        }
        // SAFETY: plain queries with a valid policy constant.
        unsafe {
            (
                libc::sched_get_priority_min(self.raw()),
                libc::sched_get_priority_max(self.raw()),
            )
        }
    }

    /// Scheduled ahead of every normal task (FIFO, RR, DEADLINE).
    pub fn is_realtime(self) -> bool {
        self != Policy::Other
    }

    /// Whether the policy takes a real-time priority (FIFO and RR).
    pub fn takes_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The SCHED_DEADLINE reservation, for that policy.
    pub fn reservation(self) -> Option<Reservation> {
        match self {
            Policy::Deadline(r) => Some(r),
            _ => None,
        }
    }

    /// Whether a task of this policy may be pinned to one CPU: not a
    /// deadline task, which the kernel admits only with the affinity of
    /// its whole root domain (while deadline bandwidth is limited, the
    /// default), and which it never lets narrow that affinity later.
    pub fn may_pin(self) -> bool {
        self.reservation().is_none()
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
            Policy::Deadline(_) => "deadline",
        })
    }
}

/// The fix for "not allowed to use real-time scheduling".
pub const RT_PRIVILEGE_FIX: &str = "run as root, grant CAP_SYS_NICE, or raise the real-time priority limit (ulimit -r / RLIMIT_RTPRIO)";
/// The fix for "not allowed to use SCHED_DEADLINE": the kernel admits a
/// deadline task only with CAP_SYS_NICE (sched_setattr's check); the
/// real-time priority limit (RLIMIT_RTPRIO) does not apply to it, so the
/// `ulimit -r` of RT_PRIVILEGE_FIX would not help.
pub const DEADLINE_PRIVILEGE_FIX: &str = "run as root or grant CAP_SYS_NICE (the kernel admits SCHED_DEADLINE only with CAP_SYS_NICE; ulimit -r does not apply to it)";
/// The fix for "not allowed to lock memory".
pub const MLOCK_FIX: &str = "run as root, grant CAP_IPC_LOCK, raise the locked-memory limit (ulimit -l), or pass --no-mlockall";

/// Sets policy and priority of the calling thread.
pub fn set_current_thread_policy(policy: Policy, priority: i32) -> Result<(), String> {
    try_set_current_thread_policy(policy, priority)
        .map_err(|errno| policy_error(policy, priority, errno))
}

/// Sets the nice value of the calling thread alone (Linux keeps one per
/// thread: `setpriority(PRIO_PROCESS, tid)`). Lowering it below 0 needs
/// CAP_SYS_NICE.
pub fn set_current_thread_nice(nice: i32) -> std::io::Result<()> {
    let tid = current_tid() as libc::id_t;
    // SAFETY: plain system call on this thread's id.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The real-time priority of task `tid` (SCHED_FIFO or SCHED_RR), or None
/// when it is not real-time or cannot be read.
pub fn realtime_priority_of(tid: i32) -> Option<i32> {
    // SAFETY: plain queries of a task by id; `param` is a valid output.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    if policy != libc::SCHED_FIFO && policy != libc::SCHED_RR {
        return None;
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above.
    (unsafe { libc::sched_getparam(tid, &mut param) } == 0).then_some(param.sched_priority)
}

/// `set_current_thread_policy` without allocating (for forked children):
/// the error is the errno, described later by `policy_error`.
pub fn try_set_current_thread_policy(policy: Policy, priority: i32) -> Result<(), i32> {
    if let Policy::Deadline(reservation) = policy {
        count_throttles();
        return try_set_current_thread_deadline(reservation, SCHED_FLAG_DL_OVERRUN);
    }
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self() is the calling thread; `param` is valid. pthread
    // functions return the error number instead of setting errno.
    match unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy.raw(), &param) } {
        0 => Ok(()),
        err => Err(err),
    }
}

/// The kernel's `struct sched_attr` (the fields of its first version).
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Makes the calling thread SCHED_DEADLINE with `reservation` and
/// `sched_flags` (SCHED_FLAG_DL_OVERRUN: SIGXCPU at every overrun, counted
/// by `throttled_periods`). Allocation-free, for forked children; the error
/// is the errno.
fn try_set_current_thread_deadline(reservation: Reservation, sched_flags: u64) -> Result<(), i32> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE as u32,
        sched_flags,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: reservation.runtime_ns,
        sched_deadline: reservation.deadline_ns,
        sched_period: reservation.period_ns,
    };
    // SAFETY: pid 0 is the calling thread; `attr` is a valid sched_attr of
    // the size it declares; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::c_long,
            &attr as *const SchedAttr,
            0 as libc::c_long,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL))
    }
}

/// Makes the calling thread SCHED_DEADLINE with `reservation` for a task
/// that gives up its runtime every period with `sched_yield` (rt-tests'
/// cyclicdeadline): without SCHED_FLAG_DL_OVERRUN, since the kernel counts a
/// yield as the runtime used up, so every period would bring a SIGXCPU. The
/// error names the limit, as `set_current_thread_policy`'s.
pub fn set_current_thread_yielding_deadline(reservation: Reservation) -> Result<(), String> {
    try_set_current_thread_deadline(reservation, 0)
        .map_err(|errno| deadline_error(reservation, errno, YIELDING_FIX))
}

/// Whether the kernel takes a SCHED_DEADLINE task whose affinity is `cpus`
/// only. With admission control on (`sched_rt_runtime_us` not -1) it takes
/// one only when its affinity covers its whole root domain: `cpus` must be a
/// scheduling partition of their own already (isolcpus=, a cpuset partition).
/// A short-lived thread tries it with a reservation of 0.01 % (its bandwidth
/// is given back when it ends); a refusal for lack of bandwidth (EBUSY)
/// still says yes, the kernel checks the affinity first.
pub fn deadline_confinable_to(cpus: &[usize]) -> bool {
    let probe = Reservation {
        runtime_ns: 100_000,
        deadline_ns: 1_000_000_000,
        period_ns: 1_000_000_000,
    };
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                try_pin_current_thread_to(cpus).is_ok()
                    && matches!(
                        try_set_current_thread_deadline(probe, 0),
                        Ok(()) | Err(libc::EBUSY)
                    )
            })
            .join()
            .unwrap_or(false)
    })
}

std::thread_local! {
    /// SIGXCPUs this thread received as a deadline task: its throttled
    /// periods. Const-initialised and without a destructor, so the signal
    /// handler touches plain thread-local memory.
    static THROTTLED: std::sync::atomic::AtomicU64 = const { std::sync::atomic::AtomicU64::new(0) };
}

extern "C" fn on_overrun(_signal: libc::c_int) {
    THROTTLED.with(|t| t.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
}

/// Installs the SIGXCPU handler that counts throttled periods (once; a
/// deadline task with SCHED_FLAG_DL_OVERRUN gets one SIGXCPU, thread
/// directed, each time it exhausts its runtime). SA_RESTART: a blocking
/// wait it interrupts goes on (every wait of latscope retries EINTR).
fn count_throttles() {
    static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if INSTALLED.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    // SAFETY: a zeroed sigaction with a plain handler and an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_overrun as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGXCPU, &action, std::ptr::null_mut());
    }
}

/// The periods in which the calling (deadline) thread exhausted its runtime
/// and was throttled, so far.
pub fn throttled_periods() -> u64 {
    THROTTLED.with(|t| t.load(std::sync::atomic::Ordering::Relaxed))
}

/// A sysctl's value as text, for a message ("unreadable" when it is not).
fn sysctl_text(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|_| "unreadable".to_string())
}

/// What frees bandwidth for a `--policy deadline` test.
const POLICY_FIX: &str = "use a smaller --runtime, fewer tasks, or end the other deadline tasks";
/// What frees bandwidth for cyclicdeadline's threads (whose runtime is a
/// share of their deadline).
const YIELDING_FIX: &str = "use fewer threads (-t), or end the other deadline tasks";

/// What a refused SCHED_DEADLINE reservation means, naming the limit;
/// `fix`: what frees bandwidth, in the options of the test asking.
fn deadline_error(r: Reservation, errno: i32, fix: &str) -> String {
    // SAFETY: geteuid cannot fail.
    deadline_error_as(r, errno, fix, unsafe { libc::geteuid() } == 0)
}

/// `deadline_error` for a process that is root or not.
fn deadline_error_as(r: Reservation, errno: i32, fix: &str, root: bool) -> String {
    let what = format!(
        "SCHED_DEADLINE runtime {} us, deadline {} us, period {} us",
        r.runtime_ns / 1000,
        r.deadline_ns / 1000,
        r.period_ns / 1000
    );
    let limit = format!(
        "{RT_RUNTIME_SYSCTL} = {} of every {RT_PERIOD_SYSCTL} = {} us per CPU",
        sysctl_text(RT_RUNTIME_SYSCTL),
        sysctl_text(RT_PERIOD_SYSCTL)
    );
    match errno {
        libc::EBUSY => format!(
            "{what} refused: the root domain's deadline bandwidth is full (the reservations already admitted leave no room under {limit}); {fix}"
        ),
        libc::EPERM if !root => {
            format!("not permitted to use {what}: {DEADLINE_PRIVILEGE_FIX}")
        }
        libc::EPERM => format!(
            "{what} refused: the kernel admits a deadline task only when its CPU affinity covers its whole root domain and the domain has deadline bandwidth ({limit}); run latscope without a narrower taskset/cpuset, or give deadline tasks bandwidth"
        ),
        _ => format!(
            "could not set {what}: {}",
            std::io::Error::from_raw_os_error(errno)
        ),
    }
}

/// What a failed `try_set_current_thread_policy` means, with the fix.
pub fn policy_error(policy: Policy, priority: i32, errno: i32) -> String {
    if let Policy::Deadline(reservation) = policy {
        return deadline_error(reservation, errno, POLICY_FIX);
    }
    if errno == libc::EPERM
        && let Some(file) = cgroup_without_rt_budget(std::path::Path::new("/"))
    {
        // In a container on cgroup v1 the privileges are usually there: the
        // budget is what is missing (RLIMIT_RTPRIO would mislead).
        return format!(
            "not permitted to set scheduling policy {policy} priority {priority}: {file} is 0: this cgroup has no real-time budget, and the kernel refuses real-time policies to its tasks whatever their privileges (fix: podman/Docker: --cpu-rt-runtime=950000; `latscope doctor` gives the fix for Kubernetes)"
        );
    }
    if errno == libc::EPERM {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes only into `limit`.
        let shown = if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut limit) } != 0 {
            String::new()
        } else if limit.rlim_cur == libc::RLIM_INFINITY {
            " (the real-time priority limit is unlimited)".to_string()
        } else {
            format!(" (the real-time priority limit is {})", limit.rlim_cur)
        };
        format!(
            "not permitted to set scheduling policy {policy} priority {priority}{shown}: {RT_PRIVILEGE_FIX}"
        )
    } else {
        format!(
            "could not set scheduling policy {policy} priority {priority}: {}",
            std::io::Error::from_raw_os_error(errno)
        )
    }
}

/// This process's cgroup v1 `cpu.rt_runtime_us`, as the system shows its
/// path, when it is 0 (under `root`: `/` on a real run).
fn cgroup_without_rt_budget(root: &std::path::Path) -> Option<String> {
    let dir = super::cgroup::v1(root, "cpu")?;
    (dir.read("cpu.rt_runtime_us")? == "0").then(|| dir.shown("cpu.rt_runtime_us"))
}

/// Makes timed sleeps of the calling thread expire on time: SCHED_OTHER threads
/// otherwise get 50 us of timer slack, which would blur the periods.
pub fn minimal_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer; it cannot fail for 1 ns.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    try_pin_current_thread(cpu).map_err(|errno| pin_error(cpu, errno))
}

/// `pin_current_thread` without allocating (for forked children).
pub fn try_pin_current_thread(cpu: usize) -> Result<(), i32> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(|_| libc::EINVAL)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|e| e as i32)
}

/// What a failed `try_pin_current_thread` means.
pub fn pin_error(cpu: usize, errno: i32) -> String {
    format!(
        "could not pin a task to CPU {cpu}: {}",
        std::io::Error::from_raw_os_error(errno)
    )
}

/// Lets the calling thread run on any of `cpus` (and only there).
pub fn pin_current_thread_to(cpus: &[usize]) -> Result<(), String> {
    let mut set = nix::sched::CpuSet::new();
    for &cpu in cpus {
        set.set(cpu)
            .map_err(|_| format!("CPU {cpu} is beyond this system's CPU set"))?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| format!("could not move a task to CPUs {cpus:?}: {e}"))
}

/// Lets the calling thread run on `cpus` (CPUs beyond the system's set are
/// left out, as cyclictest's mask leaves them); the error number on failure.
pub fn try_pin_current_thread_to(cpus: &[usize]) -> Result<(), nix::errno::Errno> {
    let mut set = nix::sched::CpuSet::new();
    for &cpu in cpus {
        let _ = set.set(cpu);
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
}

/// The CPUs the process (its main thread) may run on: unlike
/// `allowed_cpus`, not narrowed by a pin of the calling thread.
pub fn allowed_cpus_of_process() -> Vec<usize> {
    affinity_of(nix::unistd::Pid::this()).unwrap_or_else(allowed_cpus)
}

/// The CPUs the calling thread may run on that are not in `measured`
/// (empty when every allowed CPU is measured): where work beside the
/// measurement goes.
pub fn allowed_cpus_except(measured: &[usize]) -> Vec<usize> {
    allowed_cpus()
        .into_iter()
        .filter(|c| !measured.contains(c))
        .collect()
}

/// The CPUs this process may run on (its affinity mask, which reflects cpusets
/// and taskset), in ascending order.
pub fn allowed_cpus() -> Vec<usize> {
    affinity_of(nix::unistd::Pid::from_raw(0)).unwrap_or_else(|| {
        (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
    })
}

/// The affinity mask of a task (0: the calling thread), in ascending order.
fn affinity_of(task: nix::unistd::Pid) -> Option<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(task).ok()?;
    Some(
        (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
    )
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> usize {
    // SAFETY: no arguments; returns -1 only on ancient kernels.
    let cpu = unsafe { libc::sched_getcpu() };
    cpu.max(0) as usize
}

/// The kernel thread id of the calling thread (what pmqtest prints as ID).
pub fn current_tid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

/// Why memory was not locked by `lock_all_memory_if_affordable`, which
/// locks all current and future memory of the process into RAM so that no
/// page fault lands inside a measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MlockSkipped {
    /// This user's locked-memory limit is too small for a whole run (or
    /// mlockall said so): the run goes on unlocked, the reason is recorded.
    Unaffordable(String),
    /// mlockall failed for another reason.
    Failed(String),
}

/// Locked memory a run may need besides what is mapped when it starts:
/// every thread stack, the sample buffers, the kernel-log follower's and
/// the allocator's arenas. Only a limit this far above the current size is
/// trusted; under less, `mlockall(MCL_FUTURE)` would make a later
/// allocation, thread stack or signal stack fail, which aborts the process.
pub const MLOCK_HEADROOM: u64 = 1 << 30;

/// `CAP_IPC_LOCK` in the effective set (/proc/self/status), or root.
fn may_lock_unlimited() -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The process's mapped size now (VmSize), in bytes.
fn mapped_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// The decision before `mlockall`: lock when this process may lock without
/// limit (root, `CAP_IPC_LOCK`, `ulimit -l unlimited`) or when its limit
/// leaves `MLOCK_HEADROOM` above what is mapped now; otherwise do not lock
/// and say why (with the limit and the fixes). Locking under a small limit
/// is what turned Debian's default 8 MiB into aborts (exit 134) and hangs.
pub fn lock_all_memory_if_affordable() -> Result<(), MlockSkipped> {
    lock_memory_if_affordable(false)
}

/// As `lock_all_memory_if_affordable`, with `on_fault`: `MCL_ONFAULT`
/// (Linux 4.4), so that pages become resident and locked when first
/// touched rather than all at once: what a run never touches (most of the
/// code, the unused part of every stack) costs no memory. Honest only where
/// the timed part of the first sample runs nothing that set-up did not run
/// before it (the cyclictest path: the wake-up's return and the clock read
/// are both executed before the first sleep); a first touch elsewhere costs
/// one minor fault, outside the timed part.
pub fn lock_memory_if_affordable(on_fault: bool) -> Result<(), MlockSkipped> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `limit`.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } == 0;
    let unlimited = known && limit.rlim_cur == libc::RLIM_INFINITY;
    if !unlimited && !may_lock_unlimited() {
        let need = mapped_bytes() + MLOCK_HEADROOM;
        if !known || limit.rlim_cur < need {
            let shown = if known {
                // In ulimit -l's unit.
                format!("{} KiB", limit.rlim_cur / 1024)
            } else {
                "unknown".to_string()
            };
            return Err(MlockSkipped::Unaffordable(format!(
                "the locked-memory limit is {shown}, too small to lock a whole run: {MLOCK_FIX}"
            )));
        }
    }
    use nix::sys::mman::{MlockAllFlags, mlockall};
    let mut flags = MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE;
    if on_fault {
        flags |= MlockAllFlags::from_bits_retain(libc::MCL_ONFAULT);
    }
    mlockall(flags).map_err(|e| match e {
        nix::errno::Errno::EPERM | nix::errno::Errno::ENOMEM | nix::errno::Errno::EAGAIN => {
            MlockSkipped::Unaffordable(format!("mlockall failed ({e}): {MLOCK_FIX}"))
        }
        other => MlockSkipped::Failed(format!("mlockall failed: {other}")),
    })
}

/// True when this process may use real-time priorities (checked by trying on a
/// short-lived thread, which is what actually matters, rather than guessing
/// from uid, capabilities and rlimits).
pub fn can_use_realtime() -> bool {
    probe_realtime().fifo.is_ok()
}

/// What the kernel answered a thread that asked for real-time scheduling:
/// Ok, or the errno of the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealtimeProbe {
    /// SCHED_FIFO priority 1.
    pub fifo: Result<(), i32>,
    /// SCHED_DEADLINE with `PROBE_RESERVATION`.
    pub deadline: Result<(), i32>,
}

/// A small reservation: 100 us of every 10 ms (1 % of a CPU), which any
/// admission control with room for a deadline task accepts.
const PROBE_RESERVATION: Reservation = Reservation {
    runtime_ns: 100_000,
    deadline_ns: 10_000_000,
    period_ns: 10_000_000,
};

/// Tries SCHED_FIFO 1 and SCHED_DEADLINE on a short-lived thread that goes
/// back to SCHED_OTHER after each and ends: a few system calls, never a
/// loop, so nothing runs at real-time priority beyond them.
pub fn probe_realtime() -> RealtimeProbe {
    let refused = RealtimeProbe {
        fifo: Err(libc::EAGAIN),
        deadline: Err(libc::EAGAIN),
    };
    std::thread::Builder::new()
        .name("rt-probe".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            let back = || try_set_current_thread_policy(Policy::Other, 0);
            let fifo = try_set_current_thread_policy(Policy::Fifo, 1);
            let _ = back();
            let deadline = try_set_current_thread_deadline(PROBE_RESERVATION, 0);
            let _ = back();
            RealtimeProbe { fifo, deadline }
        })
        .ok()
        .and_then(|thread| thread.join().ok())
        .unwrap_or(refused)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cgroup_without_a_real_time_budget_is_found() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert_eq!(super::cgroup_without_rt_budget(r), None);
        let write = |path: &str, text: &str| {
            let at = r.join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        write("proc/self/cgroup", "2:cpu,cpuacct:/libpod-1\n");
        write(
            "proc/self/mountinfo",
            "32 31 0:29 /libpod-1 /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
        );
        write("sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us", "950000\n");
        assert_eq!(super::cgroup_without_rt_budget(r), None);
        write("sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us", "0\n");
        assert_eq!(
            super::cgroup_without_rt_budget(r).as_deref(),
            Some("/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us")
        );
    }

    use super::*;

    const US: u64 = 1_000;

    fn reservation(runtime_us: u64, deadline_us: u64, period_us: u64) -> Reservation {
        Reservation {
            runtime_ns: runtime_us * US,
            deadline_ns: deadline_us * US,
            period_ns: period_us * US,
        }
    }

    #[test]
    fn a_reservation_follows_the_kernel_s_rules() {
        assert_eq!(reservation(100, 800, 1000).check(), Ok(()));
        assert_eq!(reservation(1000, 1000, 1000).check(), Ok(()));
        assert_eq!(
            reservation(900, 800, 1000).check(),
            Err("--runtime 900 us is longer than the deadline (800 us): a reservation needs runtime <= deadline <= period".to_string())
        );
        assert_eq!(
            reservation(100, 2000, 1000).check(),
            Err("--deadline 2000 us is longer than the period (1000 us): a reservation needs runtime <= deadline <= period".to_string())
        );
        let tiny = Reservation {
            runtime_ns: 1023,
            deadline_ns: 1_000_000,
            period_ns: 1_000_000,
        };
        assert_eq!(
            tiny.check(),
            Err("--runtime 1023 ns is below the kernel's minimum of 1024 ns".to_string())
        );
        let short = reservation(10, 50, 50).check().unwrap_err();
        assert!(
            short.starts_with("a deadline period of 50 us is outside the kernel's bounds"),
            "{short}"
        );
    }

    #[test]
    fn the_period_completes_a_reservation_and_a_missing_deadline_is_the_period() {
        let asked = Reservation {
            runtime_ns: 50 * US,
            deadline_ns: 0,
            period_ns: 0,
        };
        assert_eq!(asked.for_period(2000 * US), reservation(50, 2000, 2000));
        let with_deadline = Reservation {
            deadline_ns: 300 * US,
            ..asked
        };
        assert_eq!(
            with_deadline.for_period(2000 * US),
            reservation(50, 300, 2000)
        );
        let deadline = Policy::Deadline(reservation(50, 300, 2000));
        assert_eq!(deadline.to_string(), "deadline");
        assert_eq!(deadline.priority_range(), (0, 0));
        assert!(deadline.is_realtime() && !deadline.takes_priority() && !deadline.may_pin());
        assert!(Policy::Fifo.may_pin() && Policy::Fifo.takes_priority());
    }

    #[test]
    fn a_refusal_names_the_limit() {
        let r = reservation(300, 1000, 1000);
        let busy = deadline_error(r, libc::EBUSY, POLICY_FIX);
        assert!(busy.ends_with(POLICY_FIX), "{busy}");
        assert!(
            busy.starts_with("SCHED_DEADLINE runtime 300 us, deadline 1000 us, period 1000 us refused: the root domain's deadline bandwidth is full"),
            "{busy}"
        );
        assert!(busy.contains(&format!("{RT_RUNTIME_SYSCTL} = ")), "{busy}");
        assert!(busy.contains(&format!("{RT_PERIOD_SYSCTL} = ")), "{busy}");
        let perm = deadline_error_as(r, libc::EPERM, POLICY_FIX, true);
        assert!(perm.contains("whole root domain"), "{perm}");
        assert!(perm.contains(RT_RUNTIME_SYSCTL), "{perm}");
        // An ordinary user: CAP_SYS_NICE is the only way in; the real-time
        // priority limit does not apply to SCHED_DEADLINE (issue 40, item 9).
        let user = deadline_error_as(r, libc::EPERM, POLICY_FIX, false);
        assert_eq!(
            user,
            format!(
                "not permitted to use SCHED_DEADLINE runtime 300 us, deadline 1000 us, period 1000 us: {DEADLINE_PRIVILEGE_FIX}"
            )
        );
        assert!(
            !user.contains("raise the real-time priority limit"),
            "{user}"
        );
        assert_eq!(
            policy_error(Policy::Deadline(r), 0, libc::EBUSY),
            busy,
            "policy_error describes a deadline refusal"
        );
    }
}
