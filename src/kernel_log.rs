//! Following the kernel log (`/dev/kmsg`) while a test runs, to report the
//! kernel trouble that happened while measuring: warnings and errors,
//! oopses, RCU stalls, hung tasks, lockups and RT throttling.
//!
//! The follower opens `/dev/kmsg`, skips the records written before the run
//! (`SEEK_END`) and reads new ones in a normal-priority thread that polls
//! with a short timeout, so that it ends promptly when asked. Memory is
//! bounded: at most `MAX_KEPT` messages are kept, the rest only counted.

use crate::report::{KernelLog, KernelMessage, MAX_KEPT, MessageKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const PATH: &str = "/dev/kmsg";
/// Longest wait of the reader between two looks at the stop flag.
const POLL_MS: i32 = 50;
/// Longest message text kept (a record holds at most about 1 KiB).
const MAX_TEXT: usize = 1024;
/// Syslog level of warnings: this and the more severe levels below are kept.
const WARNING_LEVEL: u8 = 4;

/// A record of `/dev/kmsg`: `prio,seq,ts_usec,flags[,...];text` followed by
/// optional ` KEY=value` continuation lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub level: u8,
    pub facility: u32,
    pub sequence: u64,
    pub timestamp_us: u64,
    pub text: String,
}

/// Parses one record as read from `/dev/kmsg`; None if it is malformed.
pub fn parse_record(raw: &str) -> Option<Record> {
    let (header, rest) = raw.split_once(';')?;
    let mut fields = header.split(',');
    let prio: u32 = fields.next()?.parse().ok()?;
    let sequence = fields.next()?.parse().ok()?;
    let timestamp_us = fields.next()?.parse().ok()?;
    let text = rest.split('\n').next().unwrap_or("");
    let mut text = text.to_string();
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Some(Record {
        level: (prio & 7) as u8,
        facility: prio >> 3,
        sequence,
        timestamp_us,
        text,
    })
}

/// Why a message matters, or None for the ones the report skips.
pub fn classify(level: u8, text: &str) -> Option<MessageKind> {
    let has = |needle: &str| text.contains(needle);
    let kind = if has("RT throttling activated") {
        MessageKind::RtThrottling
    } else if has("detected stall")
        || has("detected stalls")
        || has("rcu_preempt kthread starved")
        || has("rcu_sched kthread starved")
    {
        MessageKind::RcuStall
    } else if has("blocked for more than") {
        MessageKind::HungTask
    } else if has("soft lockup") || has("hard LOCKUP") || has("Watchdog detected hard LOCKUP") {
        MessageKind::Lockup
    } else if has("Oops") || has("BUG:") || has("kernel BUG at") || has("general protection fault")
    {
        MessageKind::Oops
    } else if has("WARNING:") {
        MessageKind::KernelWarning
    } else if level < WARNING_LEVEL {
        MessageKind::Error
    } else if level == WARNING_LEVEL {
        MessageKind::Warning
    } else {
        return None;
    };
    Some(kind)
}

/// What the reader thread has gathered.
#[derive(Default)]
struct Gathered {
    messages: Vec<KernelMessage>,
    not_kept: u64,
    lost_records: u64,
    read_error: Option<String>,
}

impl Gathered {
    fn take(&mut self, record: &Record, start_us: u64) {
        let Some(kind) = classify(record.level, &record.text) else {
            return;
        };
        if self.messages.len() >= MAX_KEPT {
            self.not_kept += 1;
            return;
        }
        self.messages.push(KernelMessage {
            time_s: (record.timestamp_us as f64 - start_us as f64) / 1e6,
            level: record.level,
            kind,
            text: record.text.clone(),
        });
    }
}

/// Reads `/dev/kmsg` in the background from the moment it starts.
pub struct Follower {
    stop: Arc<AtomicBool>,
    gathered: Arc<Mutex<Gathered>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Why the log is not followed.
    unavailable: Option<String>,
    /// The wall-clock moment the messages' `time_s` count from.
    origin: std::time::SystemTime,
}

impl Follower {
    /// Starts following the kernel log. Never fails: where the log cannot be
    /// read (not root, `kernel.dmesg_restrict`, a container), the record says
    /// so in its note.
    pub fn start() -> Follower {
        let stop = Arc::new(AtomicBool::new(false));
        let gathered = Arc::new(Mutex::new(Gathered::default()));
        let mut follower = Follower {
            stop: stop.clone(),
            gathered: gathered.clone(),
            thread: None,
            unavailable: None,
            origin: std::time::SystemTime::now(),
        };
        let fd = match open_at_end() {
            Ok(fd) => fd,
            Err(why) => {
                follower.unavailable = Some(why);
                return follower;
            }
        };
        // Taken together: a message's `time_s` counts from this instant, which
        // `origin` names on the wall clock (the tests' start times).
        let start_us = crate::rt::clock::monotonic_ns() / 1000;
        follower.origin = std::time::SystemTime::now();
        let spawned = std::thread::Builder::new()
            .name("latscope-kmsg".to_string())
            // Small: with mlockall every thread stack is locked in RAM.
            .stack_size(64 * 1024)
            .spawn(move || read_until_stopped(fd, start_us, &stop, &gathered));
        match spawned {
            Ok(handle) => follower.thread = Some(handle),
            Err(e) => {
                follower.unavailable = Some(format!("could not start its reader thread: {e}"))
            }
        }
        follower
    }

    /// When the run's clock started (wall clock): the instant the messages'
    /// `time_s` count from, and the tests' `started_s`.
    pub fn origin(&self) -> std::time::SystemTime {
        self.origin
    }

    /// What was gathered so far (the reader goes on).
    pub fn snapshot(&self) -> KernelLog {
        if let Some(why) = &self.unavailable {
            return KernelLog {
                followed: false,
                note: Some(format!("the kernel log was not followed: {why}")),
                ..KernelLog::default()
            };
        }
        let gathered = self.gathered.lock().unwrap_or_else(|e| e.into_inner());
        let note = match (&gathered.read_error, gathered.lost_records) {
            (Some(e), _) => Some(format!("reading {PATH} stopped early: {e}")),
            (None, 0) => None,
            (None, n) => Some(format!(
                "{n} kernel log record(s) were overwritten before they could be read"
            )),
        };
        KernelLog {
            followed: gathered.read_error.is_none(),
            note,
            messages: gathered.messages.clone(),
            messages_not_kept: gathered.not_kept,
        }
    }

    /// Stops the reader (after it has read what is there) and returns the log.
    pub fn stop(&mut self) -> KernelLog {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.snapshot()
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop();
    }
}

fn open_at_end() -> Result<std::os::fd::OwnedFd, String> {
    use std::os::fd::FromRawFd;
    let path = c"/dev/kmsg";
    // SAFETY: valid C string; the descriptor returned is ours.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(format!(
            "cannot open {PATH}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: valid descriptor. SEEK_END on /dev/kmsg moves past every
    // record already in the buffer.
    if unsafe { libc::lseek(std::os::fd::AsRawFd::as_raw_fd(&fd), 0, libc::SEEK_END) } < 0 {
        return Err(format!(
            "cannot skip to the end of {PATH}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(fd)
}

fn read_until_stopped(
    fd: std::os::fd::OwnedFd,
    start_us: u64,
    stop: &AtomicBool,
    gathered: &Mutex<Gathered>,
) {
    use std::os::fd::AsRawFd;
    // The kernel log is read at normal priority even when latscope's main
    // thread runs at a real-time one.
    let _ = crate::rt::sched::try_set_current_thread_policy(crate::rt::sched::Policy::Other, 0);
    let raw = fd.as_raw_fd();
    let mut buf = vec![0u8; 8192];
    loop {
        // Read everything there, then check the stop flag: the last pass
        // after a stop request still reads what came before it.
        let stopping = stop.load(Ordering::Relaxed);
        loop {
            // SAFETY: valid descriptor and buffer; one read returns one record.
            let n = unsafe { libc::read(raw, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                let text = String::from_utf8_lossy(&buf[..n as usize]);
                if let Some(record) = parse_record(&text) {
                    let mut g = gathered.lock().unwrap_or_else(|e| e.into_inner());
                    g.take(&record, start_us);
                }
                continue;
            }
            let errno = std::io::Error::last_os_error();
            match errno.raw_os_error() {
                // Records were overwritten before we read them: count, go on.
                Some(libc::EPIPE) => {
                    gathered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .lost_records += 1;
                    continue;
                }
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => break,
                _ => {
                    gathered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .read_error = Some(errno.to_string());
                    return;
                }
            }
        }
        if stopping {
            return;
        }
        let mut pfd = libc::pollfd {
            fd: raw,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, POLL_MS) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_into_level_facility_and_text() {
        let r = parse_record("4,1234,5678901,-;rcu: INFO: rcu_sched self-detected stall on CPU\n SUBSYSTEM=cpu\n DEVICE=+cpu:1\n").unwrap();
        assert_eq!(
            r,
            Record {
                level: 4,
                facility: 0,
                sequence: 1234,
                timestamp_us: 5678901,
                text: "rcu: INFO: rcu_sched self-detected stall on CPU".to_string(),
            }
        );
        // Written from user space: facility user (1), level 4.
        let user = parse_record("12,99,1000,-,caller=T42;latscope-test: hello\n").unwrap();
        assert_eq!((user.level, user.facility), (4, 1));
        assert_eq!(user.text, "latscope-test: hello");
        assert_eq!(parse_record("no header here"), None);
        assert_eq!(parse_record("x,1,2,-;text"), None);
    }

    #[test]
    fn messages_are_classified_by_what_they_say_then_by_level() {
        let cases = [
            (
                4,
                "sched: RT throttling activated",
                Some(MessageKind::RtThrottling),
            ),
            (
                3,
                "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
                Some(MessageKind::RcuStall),
            ),
            (
                3,
                "INFO: task kworker/0:1:42 blocked for more than 120 seconds.",
                Some(MessageKind::HungTask),
            ),
            (
                0,
                "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [stress-ng:99]",
                Some(MessageKind::Lockup),
            ),
            (
                1,
                "BUG: kernel NULL pointer dereference, address: 0000000000000008",
                Some(MessageKind::Oops),
            ),
            (
                4,
                "Oops: 0002 [#1] PREEMPT SMP NOPTI",
                Some(MessageKind::Oops),
            ),
            (
                4,
                "WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 foo+0x1/0x2",
                Some(MessageKind::KernelWarning),
            ),
            (
                3,
                "EXT4-fs error (device sda1): bad block",
                Some(MessageKind::Error),
            ),
            (
                4,
                "perf: interrupt took too long (2503 > 2500)",
                Some(MessageKind::Warning),
            ),
            (6, "eth0: link up", None),
            (7, "debug chatter", None),
        ];
        for (level, text, kind) in cases {
            assert_eq!(classify(level, text), kind, "{text}");
        }
    }

    #[test]
    fn memory_is_bounded_and_summaries_count_per_kind() {
        let mut g = Gathered::default();
        for i in 0..(MAX_KEPT as u64 + 5) {
            let record = Record {
                level: 4,
                facility: 0,
                sequence: i,
                timestamp_us: 2_000_000 + i,
                text: format!("perf: message {i}"),
            };
            g.take(&record, 1_500_000);
        }
        g.take(
            &Record {
                level: 6,
                facility: 0,
                sequence: 0,
                timestamp_us: 0,
                text: "info only".into(),
            },
            0,
        );
        assert_eq!(g.messages.len(), MAX_KEPT);
        assert_eq!(g.not_kept, 5);
        assert_eq!(g.messages[0].time_s, 0.5);
        let log = KernelLog {
            followed: true,
            note: None,
            messages: g.messages,
            messages_not_kept: g.not_kept,
        };
        assert_eq!(
            log.summary_lines(),
            [
                "kernel log: 100 warning message(s) while measuring, the first at 0.5 s: perf: message 0",
                "kernel log: 5 more message(s) not kept (the report keeps 100)"
            ]
        );
    }
}
