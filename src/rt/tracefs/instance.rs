//! A private tracefs instance (`instances/latscope-<pid>-<n>`): its own ring
//! buffer, clock and event switches, so latscope never touches the global
//! trace other tools may be using. Dropping it removes it.
//!
//! The pid in the name makes leftovers of a killed latscope identifiable:
//! `parse_owner` gives it back, and an instance whose process is gone can be
//! removed with `rmdir` (`latscope cleanup` does). The instance is also in
//! the ownership registry (`rt::registry`) while it exists, with its inode:
//! the name alone cannot tell a dead owner from a new process with its pid.

use crate::rt::registry;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Prefix of every instance latscope creates.
pub const PREFIX: &str = "latscope-";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO):
/// pids there are the host's.
const INITIAL_PID_NAMESPACE: u64 = 0xEFFF_FFFC;

/// The name of the `n`th instance of process `pid`.
pub fn instance_name(pid: u32, n: u32) -> String {
    format!("{PREFIX}{pid}-{n}")
}

/// The name of this process's `n`th instance. Tracefs instances are seen
/// from every PID namespace, but a pid means something only in its own: in
/// a container the name carries the namespace (`latscope-ns<ino>-<pid>-<n>`),
/// so that a `cleanup` elsewhere never takes the pid for one of its own.
fn own_instance_name(n: u32) -> String {
    let pid = std::process::id();
    match registry::pid_namespace() {
        Some(ns) if ns != INITIAL_PID_NAMESPACE => format!("{PREFIX}ns{ns}-{pid}-{n}"),
        _ => instance_name(pid, n),
    }
}

/// The pid of the process that created instance `name`, if latscope did.
pub fn parse_owner(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

#[derive(Debug)]
pub struct Instance {
    pub name: String,
    pub dir: PathBuf,
}

impl Instance {
    /// Creates a new instance under `<tracefs>/instances`.
    pub fn create(tracefs: &Path) -> Result<Instance, String> {
        let parent = tracefs.join("instances");
        if !parent.is_dir() {
            return Err(format!(
                "{} does not exist: this kernel cannot make private trace instances",
                parent.display()
            ));
        }
        let name = own_instance_name(NEXT.fetch_add(1, Ordering::Relaxed));
        let dir = parent.join(&name);
        fs::create_dir(&dir).map_err(|e| {
            let fix = if e.kind() == ErrorKind::PermissionDenied {
                ": run as root"
            } else {
                ""
            };
            format!("cannot create tracing instance {}: {e}{fix}", dir.display())
        })?;
        if let Some(identity) = registry::path_identity(&dir) {
            registry::record(registry::Kind::TraceInstance, &identity);
        }
        Ok(Instance { name, dir })
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes a control file (opened for writing only: `O_TRUNC` would
    /// clear the buffer of files like `trace`).
    pub fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.path(file);
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|e| format!("cannot write '{value}' to {}: {e}", path.display()))
    }

    pub fn read(&self, file: &str) -> Result<String, String> {
        let path = self.path(file);
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    /// Takes the instance out of the ownership registry once it is gone.
    fn forget(&self) {
        if let Some(identity) = registry::path_identity(&self.dir) {
            registry::forget(registry::Kind::TraceInstance, &[&identity]);
        }
    }

    /// Stops recording into this instance.
    pub fn tracing_off(&self) {
        let _ = self.write("tracing_on", "0");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.tracing_off();
        // Not needed by current kernels, which disable the events on rmdir,
        // but harmless, and older ones refused to remove an instance in use.
        let _ = self.write("events/enable", "0");
        // rmdir fails with EBUSY while a file inside is still open (a reader
        // closing late): retry for a while rather than leak the instance.
        for _ in 0..100 {
            match fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) if e.kind() != ErrorKind::NotFound => {
                    crate::rt::stdio::note_line(&format!(
                        "latscope: warning: could not remove tracing instance {}: {e}; remove it with 'rmdir {}'",
                        self.dir.display(),
                        self.dir.display()
                    ));
                    return;
                }
                _ => return self.forget(),
            }
        }
        crate::rt::stdio::note_line(&format!(
            "latscope: warning: tracing instance {} stayed busy; remove it with 'rmdir {}'",
            self.dir.display(),
            self.dir.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner() {
        assert_eq!(instance_name(4242, 3), "latscope-4242-3");
        assert_eq!(parse_owner("latscope-4242-3"), Some(4242));
        // An instance of another PID namespace names no pid of this one.
        assert_eq!(parse_owner("latscope-ns4026532001-12-0"), None);
        for other in [
            "latscope-",
            "latscope-12",
            "latscope-x-1",
            "latscope-1-",
            "foo-1-2",
            "latscope-1-2b",
        ] {
            assert_eq!(parse_owner(other), None, "{other}");
        }
    }

    #[test]
    fn create_fails_clearly_without_instances_dir() {
        let dir = std::env::temp_dir().join(format!("latscope-no-tracefs-{}", std::process::id()));
        let err = Instance::create(&dir).unwrap_err();
        assert!(
            err.contains("instances") && err.contains("does not exist"),
            "{err}"
        );
    }
}
