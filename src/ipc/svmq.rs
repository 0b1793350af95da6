//! System V message queues (the older sibling of `mq`): the stamp travels in
//! the message.
//!
//! One sample spans the poster's `msgsnd()` to the return of the waiter's
//! blocked `msgrcv()`. A pair has one queue, `msgget(IPC_PRIVATE)` with
//! `IPC_CREAT|IPC_EXCL` and mode 0600; its two channels are message types on
//! it (`msgrcv` selects by type): the test channel is type 1, the sync channel
//! type 2. A message is `{ mtype, 8 stamp bytes }`. A forked child inherits
//! the queue id with nothing to do.
//!
//! A System V queue outlives its processes, so it must be removed: the queue
//! is shared by both channels of the pair and removed (`IPC_RMID`) when the
//! last of them is dropped, in the process that created it only (a forked
//! child never drops it: it leaves with `_exit`). Only SIGKILL of latscope
//! can leave one behind; it is in the ownership registry (`rt::registry`)
//! from creation to removal, so `latscope cleanup` removes it, and its
//! resource name `sysv-msq <id> (creator pid <pid>)` tells `ipcrm -q <id>`.
//!
//! `msgrcv` has no timeout: a `wait` with one polls with `IPC_NOWAIT` and
//! sleeps 50 us between polls until its CLOCK_MONOTONIC deadline. Only
//! `latscope mq -T` uses receive timeouts today; measured waits have none and
//! are one blocking `msgrcv`. `interrupt` sends with `IPC_NOWAIT`, so a full
//! queue makes it give up rather than wait (the waiter has messages pending
//! then anyway); at most one stamp and two stops per channel, 48 bytes for
//! the pair, are ever queued, far below the default queue size (16 KiB).

use super::{Channel, ChannelError, PairChannels, STOP_STAMP, SetupError, Transport, Wake};
use crate::rt::clock::{Deadline, monotonic_ns, sleep_until_ns};
use crate::rt::registry;
use std::sync::Arc;
use std::time::Duration;

const STAMP_SIZE: usize = 8;
const TEST_TYPE: libc::c_long = 1;
const SYNC_TYPE: libc::c_long = 2;
/// The sleep between two polls of a timed `wait`.
const POLL_SLICE_NS: u64 = 50_000;

/// A message as `msgsnd`/`msgrcv` see it: the type, then the text.
#[repr(C)]
struct Message {
    mtype: libc::c_long,
    stamp: [u8; STAMP_SIZE],
}

pub struct SysVMessageQueues;

impl SysVMessageQueues {
    pub fn new() -> Self {
        SysVMessageQueues
    }
}

impl Default for SysVMessageQueues {
    fn default() -> Self {
        Self::new()
    }
}

impl Transport for SysVMessageQueues {
    fn name(&self) -> &'static str {
        "svmq"
    }

    fn describe(&self) -> &'static str {
        "System V message queue, msgsnd -> msgrcv"
    }

    fn open_pair(
        &self,
        _index: usize,
        _across_processes: bool,
    ) -> Result<PairChannels, SetupError> {
        // The queue id is valid in a forked child too: nothing else to do.
        let queue = Arc::new(Queue::create()?);
        let name = queue.resource_name();
        Ok(PairChannels {
            test: Box::new(TypedChannel {
                queue: Arc::clone(&queue),
                mtype: TEST_TYPE,
            }),
            sync: Box::new(TypedChannel {
                queue,
                mtype: SYNC_TYPE,
            }),
            resource_names: vec![name],
        })
    }
}

/// A private queue, removed on drop in the process that created it.
struct Queue {
    id: libc::c_int,
    creator: libc::pid_t,
}

impl Queue {
    fn create() -> Result<Queue, SetupError> {
        // SAFETY: plain syscall; the result is checked.
        let id =
            unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        if id < 0 {
            let err = std::io::Error::last_os_error();
            let hint = match err.raw_os_error() {
                Some(libc::ENOSPC) => {
                    " (too many System V message queues: use fewer pairs, remove stale ones \
                     (ipcs -q, ipcrm -q), or raise /proc/sys/kernel/msgmni)"
                }
                Some(libc::ENOMEM) => " (out of memory for a new queue)",
                Some(libc::ENOSYS) => " (kernel built without System V IPC)",
                _ => "",
            };
            return Err(SetupError::of_creation(
                &err,
                format!("could not create a System V message queue: {err}{hint}"),
            ));
        }
        registry::record(registry::Kind::SysvMsq, &id.to_string());
        Ok(Queue {
            id,
            // SAFETY: getpid cannot fail.
            creator: unsafe { libc::getpid() },
        })
    }

    fn resource_name(&self) -> String {
        format!("sysv-msq {} (creator pid {})", self.id, self.creator)
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: getpid cannot fail; IPC_RMID takes no buffer.
        unsafe {
            if libc::getpid() == self.creator {
                libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut());
                registry::forget(registry::Kind::SysvMsq, &[&self.id.to_string()]);
            }
        }
    }
}

/// One direction of a pair: the messages of one type on the pair's queue.
struct TypedChannel {
    queue: Arc<Queue>,
    mtype: libc::c_long,
}

impl TypedChannel {
    /// One `msgsnd` of `stamp`; 0 or -1 with errno set.
    #[inline]
    fn send(&self, stamp: u64, flags: libc::c_int) -> libc::c_int {
        let message = Message {
            mtype: self.mtype,
            stamp: stamp.to_ne_bytes(),
        };
        // SAFETY: `message` is a valid message whose text is STAMP_SIZE bytes.
        unsafe {
            libc::msgsnd(
                self.queue.id,
                (&message as *const Message).cast(),
                STAMP_SIZE,
                flags,
            )
        }
    }

    /// One `msgrcv` of this channel's type: the stamp, or `None` when
    /// `IPC_NOWAIT` found no message or a signal interrupted the call.
    #[inline]
    fn receive(&self, flags: libc::c_int) -> Result<Option<u64>, ChannelError> {
        let mut message = Message {
            mtype: 0,
            stamp: [0; STAMP_SIZE],
        };
        // SAFETY: `message` has room for a type and STAMP_SIZE bytes of text.
        let n = unsafe {
            libc::msgrcv(
                self.queue.id,
                (&mut message as *mut Message).cast(),
                STAMP_SIZE,
                self.mtype,
                flags,
            )
        };
        if n == STAMP_SIZE as isize {
            return Ok(Some(u64::from_ne_bytes(message.stamp)));
        }
        if n >= 0 {
            return Err(ChannelError {
                call: "msgrcv (short message)",
                errno: libc::EBADMSG,
            });
        }
        let err = ChannelError::last("msgrcv");
        match err.errno {
            libc::EINTR | libc::ENOMSG => Ok(None),
            _ => Err(err),
        }
    }
}

fn decode(stamp: u64) -> Wake {
    if stamp >= STOP_STAMP {
        Wake::Interrupted
    } else {
        Wake::Message(stamp)
    }
}

impl Channel for TypedChannel {
    #[inline]
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
        loop {
            if self.send(stamp_ns, 0) == 0 {
                return Ok(());
            }
            let err = ChannelError::last("msgsnd");
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
    }

    #[inline]
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
        let Some(timeout) = timeout else {
            // The measured path: one blocking msgrcv (again after a signal).
            loop {
                if let Some(stamp) = self.receive(0)? {
                    return Ok(decode(stamp));
                }
            }
        };
        let deadline = Deadline::after(timeout);
        loop {
            if let Some(stamp) = self.receive(libc::IPC_NOWAIT)? {
                return Ok(decode(stamp));
            }
            let now = monotonic_ns();
            if now >= deadline.ns() {
                return Ok(Wake::TimedOut);
            }
            sleep_until_ns(deadline.ns().min(now + POLL_SLICE_NS));
        }
    }

    fn interrupt(&self) {
        // IPC_NOWAIT: on a full queue give up at once, never block.
        while self.send(STOP_STAMP, libc::IPC_NOWAIT) != 0
            && ChannelError::last("msgsnd").errno == libc::EINTR
        {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&SysVMessageQueues::new());
    }

    /// The queue id in a resource name.
    fn queue_id(name: &str) -> libc::c_int {
        let rest = name.strip_prefix("sysv-msq ").expect(name);
        rest.split(' ').next().unwrap().parse().expect(name)
    }

    fn queue_exists(id: libc::c_int) -> bool {
        // SAFETY: `ds` is a valid, writable msqid_ds.
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) == 0 }
    }

    #[test]
    fn queue_is_removed_on_drop() {
        let pair = SysVMessageQueues::new().open_pair(0, false).expect("queue");
        assert_eq!(pair.resource_names.len(), 1);
        let name = &pair.resource_names[0];
        assert!(
            name.ends_with(&format!("(creator pid {})", std::process::id())),
            "{name}"
        );
        let id = queue_id(name);
        assert!(queue_exists(id), "{name} missing while open");
        let PairChannels { test, sync, .. } = pair;
        drop(test);
        assert!(queue_exists(id), "{name} removed while sync still uses it");
        drop(sync);
        assert!(!queue_exists(id), "{name} left behind");
    }

    #[test]
    fn a_forked_child_dropping_the_pair_leaves_the_queue() {
        let pair = SysVMessageQueues::new().open_pair(0, true).expect("queue");
        let id = queue_id(&pair.resource_names[0]);
        // SAFETY: the child drops the pair (glibc keeps malloc usable in a
        // forked child) and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            drop(pair);
            // SAFETY: leave without running anything of the test process.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(queue_exists(id), "a child removed its parent's queue");
        pair.test.post(9).unwrap();
        assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(9));
        drop(pair);
        assert!(!queue_exists(id));
    }

    #[test]
    fn types_keep_the_directions_apart() {
        let pair = SysVMessageQueues::new().open_pair(0, false).expect("queue");
        pair.test.post(0).unwrap();
        assert_eq!(
            pair.sync.wait(Some(Duration::from_millis(5))).unwrap(),
            Wake::TimedOut
        );
        pair.sync.interrupt();
        assert_eq!(
            pair.test.wait(Some(Duration::from_secs(5))).unwrap(),
            Wake::Message(0)
        );
        assert_eq!(pair.sync.wait(None).unwrap(), Wake::Interrupted);
    }

    #[test]
    fn interrupt_never_blocks_on_a_full_queue() {
        let queue = Arc::new(Queue::create().expect("queue"));
        // Shrink the queue to one message (lowering needs no privilege).
        // SAFETY: `ds` is a valid msqid_ds, read then written back.
        unsafe {
            let mut ds: libc::msqid_ds = std::mem::zeroed();
            assert_eq!(libc::msgctl(queue.id, libc::IPC_STAT, &mut ds), 0);
            ds.msg_qbytes = STAMP_SIZE as _;
            assert_eq!(libc::msgctl(queue.id, libc::IPC_SET, &mut ds), 0);
        }
        let channel = Arc::new(TypedChannel {
            queue,
            mtype: TEST_TYPE,
        });
        channel.post(5).unwrap();
        crate::ipc::slot::tests::check_interrupt_returns(&channel, "a full queue");
        assert_eq!(channel.wait(None).unwrap(), Wake::Message(5));
        assert_eq!(channel.wait(Some(Duration::ZERO)).unwrap(), Wake::TimedOut);
    }
}
