//! System V semaphores (what rt-tests svsematest measures): one sample spans
//! `semop(+1)` in the poster to the return of `semop(-1)` in the waiter. The
//! stamp travels through the `SlotChannel` slot.
//!
//! A pair uses one set of two semaphores (0 = test, 1 = sync) instead of two
//! sets: half the kernel objects, and the per-set limit SEMMNI is usually the
//! one a many-pair run meets first. Operations carry no SEM_UNDO: the posts
//! are hand-overs between tasks, not a lock a dying task must give back, and
//! undo bookkeeping would add work to every sample.
//!
//! A System V set outlives every process unless removed, so it is removed
//! (`IPC_RMID`) when the last channel of the pair is dropped, and only in the
//! process that created it: a forked child holds copies of the same handles
//! and must never remove the set under its parent. (It never drops them
//! anyway, it leaves with `_exit`; the pid check makes that a guarantee.) A
//! SIGKILLed run can still leave a set behind: the set is in this process's
//! ownership registry (`rt::registry`) from creation to removal, so
//! `latscope cleanup` finds and removes it; `resource_names` names it too
//! (`ipcs -s`, `ipcrm -s <id>`).

use super::slot::{Doorbell, SlotChannel};
use super::{ChannelError, PairChannels, SetupError, Transport};
use crate::rt::clock::Deadline;
use crate::rt::registry;
use std::sync::Arc;
use std::time::Duration;

const TEST_SEM: u16 = 0;
const SYNC_SEM: u16 = 1;
const SEMS_PER_SET: usize = 2;

pub struct SysVSemaphores;

impl SysVSemaphores {
    pub fn new() -> Self {
        SysVSemaphores
    }
}

impl Default for SysVSemaphores {
    fn default() -> Self {
        Self::new()
    }
}

impl Transport for SysVSemaphores {
    fn name(&self) -> &'static str {
        "svsem"
    }

    fn describe(&self) -> &'static str {
        "System V semaphore, semop(+1) -> semop(-1)"
    }

    fn open_pair(
        &self,
        _index: usize,
        _across_processes: bool,
    ) -> Result<PairChannels, SetupError> {
        // The id is inherited across fork(): nothing else to do for processes.
        let set = Arc::new(SemSet::create()?);
        let resource_names = vec![format!("sysv-sem {} (creator pid {})", set.id, set.creator)];
        let test = SlotChannel::new(SemBell {
            set: Arc::clone(&set),
            num: TEST_SEM,
        })?;
        let sync = SlotChannel::new(SemBell { set, num: SYNC_SEM })?;
        Ok(PairChannels {
            test: Box::new(test),
            sync: Box::new(sync),
            resource_names,
        })
    }
}

/// A semaphore set, removed on drop in the process that created it.
struct SemSet {
    id: libc::c_int,
    creator: libc::pid_t,
}

impl SemSet {
    fn create() -> Result<SemSet, SetupError> {
        // SAFETY: plain syscall. IPC_PRIVATE always makes a new set; IPC_EXCL
        // states it; 0600 keeps other users out.
        let id = unsafe {
            libc::semget(
                libc::IPC_PRIVATE,
                SEMS_PER_SET as libc::c_int,
                libc::IPC_CREAT | libc::IPC_EXCL | 0o600,
            )
        };
        if id < 0 {
            let err = std::io::Error::last_os_error();
            let hint = match err.raw_os_error() {
                Some(libc::ENOSPC) => {
                    " (too many semaphore sets or semaphores: use fewer pairs, remove \
                     leftovers listed by `ipcs -s`, or raise the limits in /proc/sys/kernel/sem)"
                }
                Some(libc::ENOMEM) => " (out of kernel memory)",
                Some(libc::ENOSYS) => " (kernel built without System V IPC)",
                _ => "",
            };
            return Err(SetupError::of_creation(
                &err,
                format!("could not create a System V semaphore set: {err}{hint}"),
            ));
        }
        let set = SemSet {
            id,
            // SAFETY: getpid cannot fail.
            creator: unsafe { libc::getpid() },
        };
        // Linux zeroes new semaphores, but POSIX leaves the values undefined:
        // say what the channels rely on. On failure `set` is dropped: removed.
        let mut zeros = [0 as libc::c_ushort; SEMS_PER_SET];
        // SAFETY: SETALL reads one unsigned short per semaphore of the set.
        if unsafe { libc::semctl(id, 0, libc::SETALL, zeros.as_mut_ptr()) } != 0 {
            return Err(SetupError::Failed(format!(
                "could not initialise System V semaphore set {id}: {}",
                std::io::Error::last_os_error()
            )));
        }
        // After SETALL, which sets the change time the fingerprint holds.
        registry::record(registry::Kind::SysvSem, &id.to_string());
        Ok(set)
    }
}

impl Drop for SemSet {
    fn drop(&mut self) {
        // SAFETY: getpid cannot fail; IPC_RMID takes no fourth argument.
        unsafe {
            if libc::getpid() == self.creator {
                libc::semctl(self.id, 0, libc::IPC_RMID);
                registry::forget(registry::Kind::SysvSem, &[&self.id.to_string()]);
            }
        }
    }
}

/// One semaphore of a pair's set.
struct SemBell {
    set: Arc<SemSet>,
    num: u16,
}

impl SemBell {
    #[inline]
    fn op(&self, delta: libc::c_short) -> libc::sembuf {
        libc::sembuf {
            sem_num: self.num,
            sem_op: delta,
            // No SEM_UNDO (see the module documentation), blocking.
            sem_flg: 0,
        }
    }
}

impl Doorbell for SemBell {
    #[inline]
    fn ring(&self) -> Result<(), ChannelError> {
        let mut up = self.op(1);
        loop {
            // SAFETY: one valid sembuf.
            if unsafe { libc::semop(self.set.id, &mut up, 1) } == 0 {
                return Ok(());
            }
            let err = ChannelError::last("semop(+1)");
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
    }

    #[inline]
    fn block(&self, timeout: Option<Duration>) -> Result<bool, ChannelError> {
        let mut down = self.op(-1);
        // semtimedop takes a relative timeout: recomputed from this absolute
        // deadline after EINTR, so a retry does not stretch the wait.
        let deadline = timeout.map(Deadline::after);
        loop {
            // SAFETY: one valid sembuf, and a valid timespec for semtimedop
            // (there is no glibc wrapper in the libc crate: raw syscall).
            let rc = unsafe {
                match deadline {
                    None => libc::semop(self.set.id, &mut down, 1) as libc::c_long,
                    Some(deadline) => {
                        let ts = deadline.left();
                        libc::syscall(
                            libc::SYS_semtimedop,
                            self.set.id,
                            &mut down as *mut libc::sembuf,
                            1 as libc::size_t,
                            &ts as *const libc::timespec,
                        )
                    }
                }
            };
            if rc == 0 {
                return Ok(true);
            }
            let err = ChannelError::last(if deadline.is_some() {
                "semtimedop(-1)"
            } else {
                "semop(-1)"
            });
            match err.errno {
                libc::EINTR => continue,
                // semtimedop reports an expired timeout as EAGAIN.
                libc::EAGAIN if deadline.is_some() => return Ok(false),
                _ => return Err(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::Wake;

    #[test]
    fn channel_contract_threads_and_fork() {
        crate::ipc::slot::tests::check_transport(&SysVSemaphores::new());
    }

    /// The id in `sysv-sem <id> (creator pid <pid>)`.
    fn set_id(name: &str) -> libc::c_int {
        name.strip_prefix("sysv-sem ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("bad resource name {name}"))
    }

    /// `semctl(IPC_STAT)` on `id`: Ok, or the errno.
    fn stat(id: libc::c_int) -> Result<(), i32> {
        let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT writes one semid_ds.
        let rc = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    }

    #[test]
    fn the_set_is_removed_when_the_pair_is_dropped() {
        let pair = SysVSemaphores::new().open_pair(0, true).expect("open");
        assert_eq!(pair.resource_names.len(), 1);
        let name = &pair.resource_names[0];
        let pid = std::process::id();
        assert!(name.ends_with(&format!("(creator pid {pid})")), "{name}");
        let id = set_id(name);
        assert_eq!(stat(id), Ok(()));
        pair.test.post(9).unwrap();
        assert_eq!(pair.test.wait(None).unwrap(), Wake::Message(9));
        // Still there while one channel holds the set.
        let PairChannels { test, sync, .. } = pair;
        drop(test);
        assert_eq!(stat(id), Ok(()));
        drop(sync);
        let errno = stat(id).expect_err("set still exists after drop");
        assert!(
            errno == libc::EINVAL || errno == libc::EIDRM,
            "errno {errno}"
        );
    }

    #[test]
    fn only_the_creator_removes_the_set() {
        let mut set = SemSet::create().expect("create");
        let id = set.id;
        // As if dropped in a forked child.
        set.creator += 1;
        drop(set);
        assert_eq!(stat(id), Ok(()));
        // SAFETY: removing the set this test made.
        assert_eq!(unsafe { libc::semctl(id, 0, libc::IPC_RMID) }, 0);
        assert!(stat(id).is_err());
        registry::forget(registry::Kind::SysvSem, &[&id.to_string()]);
    }
}
