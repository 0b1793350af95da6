//! Standard output that never panics and never loses an error silently.
//!
//! Everything latscope prints for people or scripts goes through `out()`:
//! - a closed pipe (`latscope ... | head -1`, EPIPE) ends latscope quietly,
//!   as coreutils do, but cleanly: the first EPIPE sends the process a
//!   SIGTERM, which the monitor loop collects like Ctrl-C, so the run stops,
//!   its files are written and its objects removed; further output is
//!   dropped and the exit code is the run's;
//! - any other failure (`> /dev/full`, a standard output that was closed
//!   when latscope started) is kept, and `finish` prints it as one line and
//!   makes the exit code 1.
//!
//! `print!` would panic in both cases (exit 101), and Rust's own `stdout()`
//! drops EBADF silently, which would report success for lost output.

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output is gone (EPIPE) or failed: later output is dropped.
static DEAD: AtomicBool = AtomicBool::new(false);
/// Standard output was closed when latscope started (/dev/null stands in).
static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);
/// A SIGTERM was sent by `note` (a closed pipe), not by someone else.
static OWN_SIGTERM: AtomicBool = AtomicBool::new(false);

/// Whether a SIGTERM collected now is the one a closed pipe sent (once).
pub fn take_own_sigterm() -> bool {
    OWN_SIGTERM.swap(false, Ordering::Relaxed)
}

/// The first failure other than a closed pipe, for `finish`.
static FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Notes whether standard output was closed when latscope started. Rust's
/// runtime has already put /dev/null, opened read-write, on a closed
/// descriptor 0, 1 or 2 (so no file opened later becomes standard output);
/// that is how it is recognised (a shell's `> /dev/null` opens it
/// write-only). Call first thing in `main`.
pub fn guard_standard_descriptors() {
    // SAFETY: fcntl and fstat only query descriptor 1; `st` is a zeroed local.
    let closed = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fcntl(1, libc::F_GETFL) & libc::O_ACCMODE == libc::O_RDWR
            && libc::fstat(1, &mut st) == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFCHR
            && st.st_rdev == libc::makedev(1, 3)
    };
    if closed {
        CLOSED_AT_START.store(true, Ordering::Relaxed);
    }
}

fn note(e: &io::Error) {
    if DEAD.swap(true, Ordering::Relaxed) {
        return;
    }
    if e.kind() == io::ErrorKind::BrokenPipe {
        OWN_SIGTERM.store(true, Ordering::Relaxed);
        // Process-directed, so whichever thread monitors the run (every
        // thread blocks SIGTERM) collects it and stops the run cleanly.
        // SAFETY: kill to this process with a signal every thread blocks.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    } else if let Ok(mut failure) = FAILURE.lock() {
        failure.get_or_insert_with(|| crate::rt::os_error_text(e));
    }
}

fn check_open() -> bool {
    if CLOSED_AT_START.load(Ordering::Relaxed) {
        if let Ok(mut failure) = FAILURE.lock() {
            failure.get_or_insert_with(|| "it is closed".to_string());
        }
        DEAD.store(true, Ordering::Relaxed);
    }
    !DEAD.load(Ordering::Relaxed)
}

/// Standard output: writes never fail to the caller; failures are noted (see
/// the module comment).
pub struct Out;

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if check_open()
            && let Err(e) = io::stdout().lock().write_all(buf)
        {
            note(&e);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if check_open()
            && let Err(e) = io::stdout().lock().flush()
        {
            note(&e);
        }
        Ok(())
    }
}

/// One warning or note of latscope's own on standard error, wrapped to fit
/// a 100-column terminal (`units::wrap_line`). Error lines are not notes:
/// they stay one line (entry::exit_code). A closed standard error is no
/// reason to panic.
pub fn note_line(text: &str) {
    let _ = writeln!(io::stderr(), "{}", crate::units::wrap_line(text));
}

/// Standard output for printing (see `Out`).
pub fn out() -> Out {
    Out
}

/// Once the run is done: flushes standard output and returns why writing
/// to it failed, if it did (a closed pipe is not a failure). The caller
/// prints it as one line and exits 1 (`main`).
pub fn finish() -> Option<String> {
    let _ = out().flush();
    FAILURE.lock().ok().and_then(|f| f.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_report_the_whole_buffer_written() {
        // Whatever standard output is in the test, the caller sees success.
        assert_eq!(out().write(b"").unwrap(), 0);
        out().flush().unwrap();
    }
}
