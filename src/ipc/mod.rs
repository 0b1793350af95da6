//! Thread-to-thread wake-up latency: one harness, many small transports.
//!
//! A transport only knows how one thread wakes another (`Channel`). Threads,
//! priorities, affinity, periods, loops, statistics and stopping are written
//! once, in `oneway`. Adding a primitive (semaphores, signals, futexes, pipes)
//! means one small file implementing `Transport` and `Channel`.

pub mod mq;
pub mod oneway;

use std::time::Duration;

/// What a blocked waiter woke up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A message; carries the sender's CLOCK_MONOTONIC stamp in ns.
    Message(u64),
    /// The timeout given to `wait` expired first.
    TimedOut,
    /// `interrupt` was called: the run is stopping.
    Interrupted,
}

/// One direction of wake-up between two threads of a pair.
pub trait Channel: Send + Sync {
    /// Wakes the waiter, passing `stamp_ns` along (in the message where the
    /// primitive carries data, else through a shared slot).
    fn post(&self, stamp_ns: u64) -> Result<(), String>;
    /// Blocks until woken, or until `timeout` has passed.
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, String>;
    /// Makes a current or next `wait` return `Interrupted`. Never blocks (if
    /// the waiter already has a wake-up pending, it may do nothing). The
    /// harness calls it once per channel to stop a run, and once on `sync` to
    /// release the sender after the last sample; real `post`s never meet more
    /// than one pending interrupt, so a transport needs room for one.
    fn interrupt(&self);
}

/// The two channels of a pair: `test` carries the measured wake-up from sender
/// to receiver, `sync` hands the turn back so one message is in flight at a time.
pub struct PairChannels {
    pub test: Box<dyn Channel>,
    pub sync: Box<dyn Channel>,
    /// Names of kernel objects created (for the report and leak checks).
    pub resource_names: Vec<String>,
}

/// A wake-up primitive.
pub trait Transport: Send + Sync {
    /// Short name used in reports (`mq`).
    fn name(&self) -> &'static str;
    /// The calls the sample spans, for people (`mq_send -> mq_receive`).
    fn describe(&self) -> &'static str;
    /// Creates the channels of pair `index`.
    fn open_pair(&self, index: usize) -> Result<PairChannels, String>;
}
