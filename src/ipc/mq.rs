//! POSIX message queues (what pmqtest measures): the sender's stamp travels in
//! the 8-byte message itself.
//!
//! Each queue gets a unique name (`/latscope-<pid>-<random>-<pair>-<role>`), is
//! created with `O_CREAT|O_EXCL` and mode 0600, and is unlinked as soon as it is
//! open: the descriptor keeps working, and no exit path, not even SIGKILL, can
//! leave a queue behind in /dev/mqueue.

use super::{
    Channel, ChannelError, PairChannels, STOP_STAMP, SetupError, Transport, Wake, run_tag,
};
use crate::rt::clock::realtime_deadline;
use std::ffi::CString;
use std::time::Duration;

const MESSAGE_SIZE: usize = 8;
/// One real message plus room for the stop sentinel, so `interrupt` never has
/// to wait and a real `post` never blocks on a sentinel.
const QUEUE_DEPTH: libc::c_long = 2;

pub struct MessageQueues {
    run_tag: String,
}

impl MessageQueues {
    pub fn new() -> Self {
        MessageQueues { run_tag: run_tag() }
    }
}

impl Default for MessageQueues {
    fn default() -> Self {
        Self::new()
    }
}

impl Transport for MessageQueues {
    fn name(&self) -> &'static str {
        "mq"
    }

    fn describe(&self) -> &'static str {
        "POSIX message queue, mq_send -> mq_receive"
    }

    fn open_pair(&self, index: usize, _across_processes: bool) -> Result<PairChannels, SetupError> {
        // Descriptors are inherited by a forked child: nothing else to do.
        let test_name = format!("/latscope-{}-{index}-test", self.run_tag);
        let sync_name = format!("/latscope-{}-{index}-sync", self.run_tag);
        let test = Queue::create(&test_name)?;
        let sync = Queue::create(&sync_name)?;
        Ok(PairChannels {
            test: Box::new(test),
            sync: Box::new(sync),
            resource_names: vec![test_name, sync_name],
        })
    }
}

/// An open, already unlinked queue; closed on drop.
struct Queue {
    mqd: libc::mqd_t,
}

impl Queue {
    fn create(name: &str) -> Result<Queue, SetupError> {
        let c_name = CString::new(name).map_err(|_| format!("bad queue name {name}"))?;
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = QUEUE_DEPTH;
        attr.mq_msgsize = MESSAGE_SIZE as libc::c_long;
        // SAFETY: valid C string and attribute struct; variadic mode and attr as documented.
        let mqd = unsafe {
            libc::mq_open(
                c_name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &mut attr as *mut libc::mq_attr,
            )
        };
        if mqd == -1 {
            let err = std::io::Error::last_os_error();
            let hint = match err.raw_os_error() {
                Some(libc::EMFILE) | Some(libc::ENOSPC) | Some(libc::ENOMEM) => {
                    " (too many queues: use fewer pairs, or raise /proc/sys/fs/mqueue/queues_max and ulimit -q)"
                }
                Some(libc::EINVAL) => " (check /proc/sys/fs/mqueue/msg_max and msgsize_max)",
                Some(libc::ENOSYS) => " (kernel built without POSIX message queues)",
                _ => "",
            };
            return Err(SetupError::of_creation(
                &err,
                format!("could not create message queue {name}: {err}{hint}"),
            ));
        }
        // SAFETY: valid C string. Unlinking now means nothing can leak later.
        unsafe { libc::mq_unlink(c_name.as_ptr()) };
        Ok(Queue { mqd })
    }

    fn send(&self, stamp: u64, deadline: Option<&libc::timespec>) -> std::io::Result<()> {
        let bytes = stamp.to_ne_bytes();
        // SAFETY: `bytes` is MESSAGE_SIZE long; the descriptor is open.
        let rc = unsafe {
            match deadline {
                None => libc::mq_send(self.mqd, bytes.as_ptr().cast(), MESSAGE_SIZE, 0),
                Some(ts) => {
                    libc::mq_timedsend(self.mqd, bytes.as_ptr().cast(), MESSAGE_SIZE, 0, ts)
                }
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptor once.
        unsafe { libc::mq_close(self.mqd) };
    }
}

impl Channel for Queue {
    #[inline]
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
        loop {
            match self.send(stamp_ns, None) {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => {
                    return Err(ChannelError {
                        call: "mq_send",
                        errno: e.raw_os_error().unwrap_or(0),
                    });
                }
            }
        }
    }

    #[inline]
    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
        let mut buf = [0u8; MESSAGE_SIZE];
        let deadline = timeout.map(realtime_deadline);
        loop {
            // SAFETY: `buf` is MESSAGE_SIZE bytes, the queue's message size.
            let n = unsafe {
                match &deadline {
                    None => libc::mq_receive(
                        self.mqd,
                        buf.as_mut_ptr().cast(),
                        MESSAGE_SIZE,
                        std::ptr::null_mut(),
                    ),
                    Some(ts) => libc::mq_timedreceive(
                        self.mqd,
                        buf.as_mut_ptr().cast(),
                        MESSAGE_SIZE,
                        std::ptr::null_mut(),
                        ts,
                    ),
                }
            };
            if n == MESSAGE_SIZE as isize {
                let stamp = u64::from_ne_bytes(buf);
                return Ok(if stamp >= STOP_STAMP {
                    Wake::Interrupted
                } else {
                    Wake::Message(stamp)
                });
            }
            if n >= 0 {
                return Err(ChannelError {
                    call: "mq_receive (short message)",
                    errno: libc::EBADMSG,
                });
            }
            let err = ChannelError::last("mq_receive");
            match err.errno {
                libc::EINTR => continue,
                libc::ETIMEDOUT => return Ok(Wake::TimedOut),
                _ => return Err(err),
            }
        }
    }

    fn interrupt(&self) {
        // A deadline in the past: if the queue is full, give up at once (the
        // waiter has a message to wake up to anyway).
        let now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let _ = self.send(STOP_STAMP, Some(&now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&MessageQueues::new());
    }

    #[test]
    fn stamps_travel_and_interrupt_wakes() {
        let transport = MessageQueues::new();
        let pair = transport.open_pair(0, false).expect("queues");
        pair.test.post(1234).unwrap();
        assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(1234));
        pair.test.interrupt();
        assert_eq!(pair.test.wait(None).unwrap(), Wake::Interrupted);
        assert_eq!(
            pair.sync.wait(Some(Duration::from_millis(10))).unwrap(),
            Wake::TimedOut
        );
        // Names were unlinked on creation: opening one fails with ENOENT.
        for name in &pair.resource_names {
            let c = CString::new(name.as_str()).unwrap();
            let mqd = unsafe { libc::mq_open(c.as_ptr(), libc::O_RDONLY) };
            assert_eq!(mqd, -1, "{name} still exists");
        }
    }
}
