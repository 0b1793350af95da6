//! cyclictest's two status requests, as rt-tests 2.x answers them:
//!
//! - SIGUSR1: the status block (`#----`, `# cyclictest current status:`,
//!   every thread's `T:` line, `#----`) on stderr; the run goes on and
//!   stdout is untouched.
//! - SIGUSR2: the same block written into the POSIX shared-memory object
//!   `/cyclictest<pid>` (`/dev/shm/cyclictest<pid>`), which cyclictest
//!   creates at start and removes at exit. rt-tests' own client,
//!   `get_cyclictest_snapshot`, finds running instances by globbing
//!   `/dev/shm/cyclictest*`, sends them SIGUSR2 and prints the files.
//!
//! cyclictest does both in a signal handler; latscope collects the signals
//! with `sigtimedwait` on the main (monitor) thread
//! (rt::signals::wait_for_stop_or_user_signal) and serves them there, from
//! the measuring threads' live atomics, never on a measuring thread.

use crate::live::cyclictest::CyclicDisplay;
use crate::rt::os_error_text;
use crate::rt::registry;
use crate::rt::signals::Collected;
use crate::timer::cyclic::CyclicShared;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::FromRawFd;

/// The size cyclictest gives the object at creation: its `rstat_setup`
/// truncates it to `_SC_PAGE_SIZE`, which is sysconf's option number (30),
/// not the page size, so a fresh object holds 30 NUL bytes until the first
/// SIGUSR2. Clients see that size: kept.
const INITIAL_SIZE: u64 = libc::_SC_PAGE_SIZE as u64;

/// Serves cyclictest's SIGUSR1 and SIGUSR2 for one run; owns the
/// `/cyclictest<pid>` object, removed when this is dropped (on every way
/// out of the run: its end, -l, -D, -b, a stop signal, an error).
pub struct CyclicStatus {
    object: Option<StatusObject>,
}

impl CyclicStatus {
    /// Creates `/cyclictest<pid>` as cyclictest does before it starts its
    /// threads. When that fails, cyclictest's `ERROR: ...` line on stderr
    /// and the run goes on without it (SIGUSR2 then says so).
    pub fn open() -> CyclicStatus {
        let mut object = StatusObject::create(std::process::id());
        if let Some(object) = &mut object {
            object.register();
        }
        CyclicStatus { object }
    }

    /// Serves a collected SIGUSR1 or SIGUSR2 (a stop signal is the caller's).
    pub fn serve(&mut self, signal: Collected, display: &CyclicDisplay, shared: &CyclicShared) {
        match signal {
            Collected::User1 => {
                // One write of the whole block: stderr is unbuffered.
                let _ = std::io::stderr().write_all(display.status_block(shared).as_bytes());
            }
            Collected::User2 => match &mut self.object {
                Some(object) => object.write(&display.status_block(shared)),
                None => eprintln!("ERROR: rstat_fd not valid"),
            },
            Collected::Stop(_) => {}
        }
    }
}

/// The name of cyclictest's status object before its pid.
const SHM_PREFIX: &str = "cyclictest";

/// The pid in the name of a status object (`/dev/shm/cyclictest<pid>`),
/// for `cleanup`: while a process has that pid, the object may be its own
/// (rt-tests' cyclictest makes the same name).
pub fn status_object_pid(path: &std::path::Path) -> Option<u32> {
    let digits = path.file_name()?.to_str()?.strip_prefix(SHM_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The shared-memory object `/cyclictest<pid>` this process created.
struct StatusObject {
    name: CString,
    /// `/dev/shm/...`, for the ownership registry.
    path: String,
    file: std::fs::File,
    /// The registry identity, when recorded.
    registered: Option<String>,
}

impl StatusObject {
    fn create(pid: u32) -> Option<StatusObject> {
        let name = format!("/{SHM_PREFIX}{pid}");
        let c_name = CString::new(name.clone()).ok()?;
        // O_EXCL: only an object created now is ever written or removed.
        // Mode 0644 (cyclictest asks 0666, which the usual umask makes
        // 0644): clients of any user may read it, only this process writes.
        // SAFETY: NUL-terminated name; the descriptor is owned below.
        let fd = unsafe {
            libc::shm_open(
                c_name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EEXIST) {
                // An object with this process's pid in its name that latscope
                // did not create: a leftover of a dead process that had the
                // pid (killed with SIGKILL), or a live one of another pid
                // namespace sharing /dev/shm. cyclictest removes it and
                // makes its own; latscope never removes what it did not
                // create, so it is left as it is, this run serves no SIGUSR2
                // status, and one line says why.
                eprintln!(
                    "WARN: /dev/shm{name} exists and was not created by this run: left as it is; SIGUSR2 writes no status in this run"
                );
            } else {
                eprintln!("ERROR: shm_open {}", os_error_text(&e));
            }
            return None;
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        let object = StatusObject {
            name: c_name,
            path: format!("/dev/shm{name}"),
            file,
            registered: None,
        };
        if let Err(e) = object.file.set_len(INITIAL_SIZE) {
            // cyclictest's line; it then removes the object and goes on
            // without one (the drop does the same here).
            eprintln!("ftruncate error {}", os_error_text(&e));
            return None;
        }
        Some(object)
    }

    /// Records the object so that `latscope cleanup` finds it after a
    /// SIGKILL (the drop forgets it).
    fn register(&mut self) {
        self.registered = registry::path_identity(std::path::Path::new(&self.path));
        if let Some(identity) = &self.registered {
            registry::record(registry::Kind::Shm, identity);
        }
    }

    /// cyclictest's SIGUSR2: the object truncated to nothing, then the block
    /// written at the descriptor's offset. That offset is never rewound
    /// (cyclictest's `dprintf` after `ftruncate(fd, 0)`), so from the second
    /// request on the block follows as many NUL bytes as were written
    /// before: clients read exactly that from rt-tests 2.x, and from this.
    fn write(&mut self, block: &str) {
        if let Err(e) = self.file.set_len(0) {
            eprintln!("ftruncate error {}", os_error_text(&e));
        }
        if let Err(e) = self.file.write_all(block.as_bytes()) {
            // cyclictest's dprintf fails silently; one line says why here.
            eprintln!(
                "latscope: warning: cannot write {}: {}",
                self.path,
                os_error_text(&e)
            );
        }
    }
}

impl Drop for StatusObject {
    fn drop(&mut self) {
        // The object created by `create` (O_EXCL), and only it.
        // SAFETY: NUL-terminated name.
        unsafe { libc::shm_unlink(self.name.as_ptr()) };
        if let Some(identity) = &self.registered {
            registry::forget(registry::Kind::Shm, &[identity]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::CyclicThread;
    use crate::report::classic_cyclictest::status_block;

    #[test]
    fn the_block_is_cyclictests_print_stat_between_two_rules() {
        let t = CyclicThread {
            tid: 8154,
            priority: 80,
            interval_us: 1000,
            cycles: 990,
            min: 12,
            act: 26,
            sum: 990 * 29,
            max: 1534,
            ..CyclicThread::default()
        };
        assert_eq!(
            status_block(std::slice::from_ref(&t), false, false),
            "#---------------------------\n# cyclictest current status:\n\
             T: 0 ( 8154) P:80 I:1000 C:    990 Min:     12 Act:   26 Avg:   29 Max:    1534\n\
             #---------------------------\n"
        );
        let block = status_block(&[t.clone(), t], true, true);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(
            lines[3],
            "T: 1 ( 8154) P:80 I:1000 C:    990 Min:     12 Act:      26 Avg:      29 Max:    1534 SMI:       0"
        );
    }

    #[test]
    fn the_object_follows_rt_tests_size_and_offset_rules_and_goes_with_the_drop() {
        // A pid above any pid_max (4194304): no process can own this name.
        let pid = 4_000_000_000 + std::process::id() % 1_000_000;
        let path = std::path::PathBuf::from(format!("/dev/shm/cyclictest{pid}"));
        let mut object = StatusObject::create(pid).expect("/dev/shm is writable");
        assert_eq!(std::fs::read(&path).unwrap(), vec![0u8; 30]);
        object.write("first\n");
        assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
        object.write("second\n");
        assert_eq!(std::fs::read(&path).unwrap(), b"\0\0\0\0\0\0second\n");
        drop(object);
        assert!(!path.exists());
    }
}
