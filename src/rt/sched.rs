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
}

impl Policy {
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
        }
    }

    /// The kernel's priority range for this policy (1..=99 for FIFO/RR, 0 for OTHER).
    pub fn priority_range(self) -> (i32, i32) {
        // SAFETY: plain queries with a valid policy constant.
        unsafe {
            (
                libc::sched_get_priority_min(self.raw()),
                libc::sched_get_priority_max(self.raw()),
            )
        }
    }

    pub fn is_realtime(self) -> bool {
        self != Policy::Other
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
        })
    }
}

/// The fix for "not allowed to use real-time scheduling".
pub const RT_PRIVILEGE_FIX: &str = "run as root, grant CAP_SYS_NICE, or raise the real-time priority limit (ulimit -r / RLIMIT_RTPRIO)";
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

/// `set_current_thread_policy` without allocating (for forked children):
/// the error is the errno, described later by `policy_error`.
pub fn try_set_current_thread_policy(policy: Policy, priority: i32) -> Result<(), i32> {
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

/// What a failed `try_set_current_thread_policy` means, with the fix.
pub fn policy_error(policy: Policy, priority: i32, errno: i32) -> String {
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

/// The CPUs the process (its main thread) may run on: unlike
/// `allowed_cpus`, not narrowed by a pin of the calling thread.
pub fn allowed_cpus_of_process() -> Vec<usize> {
    affinity_of(nix::unistd::Pid::this()).unwrap_or_else(allowed_cpus)
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
    std::thread::spawn(|| set_current_thread_policy(Policy::Fifo, 1).is_ok())
        .join()
        .unwrap_or(false)
}
