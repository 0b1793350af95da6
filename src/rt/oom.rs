//! Running out of memory is one line and exit 1, like any run-time failure.
//!
//! Rust's default answer to a failed allocation is "memory allocation of N
//! bytes failed" and an abort (SIGABRT, exit 134, a core where enabled):
//! `ulimit -v 500000; latscope report big.json` ended so. The hook that
//! changes it (`set_alloc_error_hook`) is not stable, so the process's
//! allocator is the system's with one addition: an allocation the system
//! refuses ends the process here, before the abort, with latscope's one
//! line and exit 1. Nothing in latscope allocates fallibly (`try_reserve`):
//! std's own fallible reads (`fs::read`) end here too, which is what they
//! would tell the user anyway.
//!
//! What runs here must not allocate: the line is built in a stack buffer and
//! written with write(2); the temporary files of outputs being written are
//! removed (rt::outfile, without waiting for its lock), so no half file is
//! left; then `_exit`, since destructors and atexit handlers may allocate.
//! Objects a measuring run holds (queues, semaphores) stay in its registry
//! for `latscope cleanup`, as after a SIGKILL.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, ending the process cleanly when it fails.
pub struct ExitOnOom;

// SAFETY: every call is the system allocator's; on failure the process ends
// instead of returning null.
unsafe impl GlobalAlloc for ExitOnOom {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

/// The one line, the temporary files removed, exit 1. A second failure
/// (another thread, or this path itself) only exits.
#[cold]
fn out_of_memory(size: usize) -> ! {
    static ENDING: AtomicBool = AtomicBool::new(false);
    if !ENDING.swap(true, Ordering::SeqCst) {
        crate::rt::outfile::remove_pending_temporaries_now();
        let mut line = [0u8; 160];
        let n = oom_line(&mut line, size);
        // SAFETY: writes `n` bytes of the stack buffer to standard error.
        unsafe { libc::write(2, line.as_ptr().cast(), n) };
    }
    // 1: the run-time failure exit code (pipeline::EXIT_RUNTIME; rt/ may not
    // import the pipeline, which is built on it).
    // SAFETY: ends the process without running anything that may allocate.
    unsafe { libc::_exit(1) }
}

/// "latscope: error: out of memory (...)" into `buf`, without allocating.
fn oom_line(buf: &mut [u8; 160], size: usize) -> usize {
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        let n = bytes.len().min(buf.len() - at);
        buf[at..at + n].copy_from_slice(&bytes[..n]);
        at += n;
    };
    put(b"latscope: error: out of memory: an allocation of ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" bytes failed; free memory or raise the limit (ulimit -v)\n");
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_size() {
        let mut buf = [0u8; 160];
        let n = oom_line(&mut buf, 104_862_045);
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            "latscope: error: out of memory: an allocation of 104862045 bytes failed; free memory or raise the limit (ulimit -v)\n"
        );
        let n = oom_line(&mut buf, 0);
        assert!(
            std::str::from_utf8(&buf[..n])
                .unwrap()
                .contains(" of 0 bytes")
        );
    }
}
