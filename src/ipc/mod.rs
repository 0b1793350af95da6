//! Task-to-task wake-up latency: one harness, many small transports.
//!
//! A transport only knows how one task wakes another (`Channel`). Tasks
//! (threads or forked processes), priorities, affinity, periods, loops, the
//! one-way and round-trip loop shapes, statistics and stopping are written
//! once, in `harness`. Adding a primitive means one small file implementing
//! `Transport` and `Channel` (or, for primitives that carry no data, a
//! `slot::Doorbell`).

pub mod eventfd;
pub mod fd;
pub mod futex;
pub mod harness;
mod in_place;
pub mod mq;
pub mod mutex;
pub mod pi_group;
pub mod pipe;
pub mod ring;
pub mod sem;
pub mod signal;
pub mod slot;
pub mod svmq;
pub mod svsem;
pub mod unix;

use std::fmt;
use std::time::Duration;

/// Stamps are CLOCK_MONOTONIC nanoseconds, far below 2^62 (146 years of
/// uptime). A primitive that carries data sends this value to stop a waiter;
/// any value read at or above it means "stop". Two stop messages added up (an
/// eventfd counter adds) still stay below the eventfd maximum.
pub const STOP_STAMP: u64 = 1 << 62;

/// What a blocked waiter woke up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A message; carries the poster's CLOCK_MONOTONIC stamp in ns.
    Message(u64),
    /// The timeout given to `wait` expired first.
    TimedOut,
    /// `interrupt` was called: the run is stopping.
    Interrupted,
}

/// A failed wake-up call: which call and its errno. Plain data, so that a
/// forked child can report it without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelError {
    pub call: &'static str,
    pub errno: i32,
}

impl ChannelError {
    /// The error of `call` from the current `errno`.
    pub fn last(call: &'static str) -> ChannelError {
        ChannelError {
            call,
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        }
    }
}

/// Why a test's wake-up objects or tasks could not be set up. The kind, not
/// the text, decides how the test ends; `Display` is the one-line message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The kernel lacks the primitive (ENOSYS; the message says "built
    /// without ..."): the test is skipped (exit code 4 when nothing else
    /// ran), not failed.
    #[error("{0}")]
    KernelLacksFeature(String),
    /// The options ask for what the primitive cannot do (`--fork` with one
    /// that cannot connect two processes): bad usage.
    #[error("{0}")]
    Usage(String),
    /// Anything else: a failure at run time.
    #[error("{0}")]
    Failed(String),
    /// The kernel refused a task the scheduling the options ask for (a
    /// SCHED_DEADLINE reservation beyond the bandwidth left, a real-time
    /// priority without the right): every test of a sequence asks the same,
    /// so the run stops there with this one line (as `timer` does).
    #[error("{0}")]
    SchedulingRefused(String),
}

impl SetupError {
    /// The error of a failed creation call: `KernelLacksFeature` when its
    /// errno is ENOSYS, else `Failed`; `message` says what failed, and why.
    pub fn of_creation(err: &std::io::Error, message: String) -> SetupError {
        if err.raw_os_error() == Some(libc::ENOSYS) {
            SetupError::KernelLacksFeature(message)
        } else {
            SetupError::Failed(message)
        }
    }

    /// Whether the test is skipped rather than failed.
    pub fn is_skip(&self) -> bool {
        matches!(self, SetupError::KernelLacksFeature(_))
    }
}

/// Setup steps that fail for any other reason (memory, names, limits).
impl From<String> for SetupError {
    fn from(message: String) -> SetupError {
        SetupError::Failed(message)
    }
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {}",
            self.call,
            std::io::Error::from_raw_os_error(self.errno)
        )
    }
}

/// One direction of wake-up between the two tasks of a pair.
///
/// A channel may be used from a forked child (see `Transport::open_pair`):
/// then `post`, `wait`, `interrupt` and `attach_waiter` must not allocate,
/// and everything they share lives in memory mapped before the fork.
pub trait Channel: Send + Sync {
    /// Wakes the waiter, passing `stamp_ns` along (in the message where the
    /// primitive carries data, else through a shared slot).
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError>;
    /// Blocks until woken, or until `timeout` has passed.
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError>;
    /// Makes a current or next `wait` return `Interrupted`. Never blocks (if
    /// the waiter already has a wake-up pending, it may do nothing). The
    /// harness calls it once per channel to stop a run, and once on `sync` to
    /// release the sender after the last sample; real `post`s never meet more
    /// than one pending interrupt, so a transport needs room for one.
    fn interrupt(&self);
    /// Called once by the task that will `wait` on this channel, in that task
    /// (thread or child process), before the run starts. Primitives that
    /// address a task rather than an object (signals) learn here whom `post`
    /// and `interrupt` must wake.
    fn attach_waiter(&self) {}
}

/// The two channels of a pair: `test` carries the measured wake-up, `sync`
/// carries the way back (the hand-over in one-way mode, the reply in round
/// trip), so exactly one wake-up is in flight per pair.
pub struct PairChannels {
    pub test: Box<dyn Channel>,
    pub sync: Box<dyn Channel>,
    /// Kernel objects created, for the report and leak checks (e.g.
    /// `/latscope-123-...-test`, `sysv-sem 32769 (creator pid 123)`).
    pub resource_names: Vec<String>,
}

/// A wake-up primitive.
pub trait Transport: Send + Sync {
    /// Short name used in reports and on the command line (`mq`, `sem`).
    fn name(&self) -> &'static str;
    /// The calls a one-way sample spans, for people (`mq_send -> mq_receive`).
    fn describe(&self) -> &'static str;
    /// Whether the channels can connect two processes (`--fork`).
    fn crosses_processes(&self) -> bool {
        true
    }
    /// Creates the channels of pair `index`. With `across_processes`, one of
    /// the two tasks will be a child forked after this call: everything the
    /// channels share must be inherited across `fork()` (descriptors, System V
    /// ids, `MAP_SHARED` memory, process-shared semaphores and futexes).
    fn open_pair(&self, index: usize, across_processes: bool) -> Result<PairChannels, SetupError>;
}

/// A transport whose two channels are made the same way and have no name:
/// nothing to list in the report, nothing that could leak.
pub struct AnonymousPairs {
    pub name: &'static str,
    pub describe: &'static str,
    /// Makes one channel (`across_processes`: see `Transport::open_pair`).
    pub channel: fn(bool) -> Result<Box<dyn Channel>, SetupError>,
}

impl Transport for AnonymousPairs {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        self.describe
    }

    fn open_pair(&self, _index: usize, across_processes: bool) -> Result<PairChannels, SetupError> {
        Ok(PairChannels {
            test: (self.channel)(across_processes)?,
            sync: (self.channel)(across_processes)?,
            resource_names: Vec::new(),
        })
    }
}

/// A short random tag that makes this run's object names unique.
pub fn run_tag() -> String {
    let mut random = [0u8; 4];
    // SAFETY: writes at most 4 bytes into `random`.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != random.len() as isize {
        random = (crate::rt::clock::monotonic_ns() as u32).to_ne_bytes();
    }
    format!("{}-{:08x}", std::process::id(), u32::from_ne_bytes(random))
}

/// Every primitive latscope measures, in the order `latscope ipc` runs them.
pub const PRIMITIVES: [&str; 9] = [
    "mq", "sem", "svsem", "signal", "pipe", "eventfd", "futex", "unix", "svmq",
];

/// The transport of a primitive named in `PRIMITIVES`, or of `mutex` (a
/// single test, `latscope mutex` and ptsematest: not in `PRIMITIVES`, so
/// that `ipc` and `suite` keep their list and their time shares).
pub fn transport_named(name: &str) -> Option<Box<dyn Transport>> {
    Some(match name {
        "mq" => Box::new(mq::MessageQueues::new()),
        "mutex" => Box::new(mutex::transport()),
        "sem" => Box::new(sem::transport()),
        "svsem" => Box::new(svsem::SysVSemaphores::new()),
        "signal" => Box::new(signal::transport()),
        "futex" => Box::new(futex::transport()),
        "pipe" => Box::new(pipe::transport()),
        "eventfd" => Box::new(eventfd::transport()),
        "unix" => Box::new(unix::transport()),
        "svmq" => Box::new(svmq::SysVMessageQueues::new()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::SetupError;

    #[test]
    fn only_enosys_means_the_kernel_lacks_the_primitive() {
        let message = "could not create a pipe: Function not implemented (os error 38) \
                       (the kernel is built without it)";
        let enosys = std::io::Error::from_raw_os_error(libc::ENOSYS);
        let lacking = SetupError::of_creation(&enosys, message.to_string());
        assert!(lacking.is_skip());
        // The message users see is the one the transport wrote.
        assert_eq!(lacking.to_string(), message);
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let failed = SetupError::of_creation(&emfile, "could not create a pipe".to_string());
        assert_eq!(
            failed,
            SetupError::Failed("could not create a pipe".to_string())
        );
        assert!(!failed.is_skip());
        assert!(!SetupError::Usage("x".into()).is_skip());
    }
}
