//! The process entry both binaries share: `latscope` (src/main.rs) and the
//! lean cyclictest drop-in `latscope-cyclictest` (src/bin/): the signal mask
//! set before any thread exists, the guard of the standard descriptors, the
//! thread with a known stack that does the work, and the exit: a command's
//! error as one line with its exit code, a failed standard output as exit 1.

use crate::pipeline::{CommandError, EXIT_RUNTIME, EXIT_USAGE};
use crate::units::escape_line;
use std::io::Write;

/// Stack of the thread that does main's work, whatever the limit latscope
/// was started with: parsing the command line alone needs more than 64 KiB,
/// and a main thread's stack is limited by RLIMIT_STACK (`ulimit -s 64`
/// overflowed it); a thread's stack is not. 1 MiB, not a shell's 8 MiB:
/// `mlockall(MCL_CURRENT)` makes the whole of it resident (8 MiB was half of
/// a cyclictest run's RSS and a quarter of ptsematest's start-up CPU), and
/// the deepest paths (hostile input, report parsing) need far less.
pub const MAIN_STACK: usize = 1 << 20;

/// Runs `body` on a `MAIN_STACK` thread and exits with the code it returns
/// (see `exit_code`). Call first thing in `main`.
pub fn start(body: fn() -> i32) -> ! {
    // Before any thread exists, so every thread inherits the mask and Ctrl-C /
    // SIGTERM are collected by the monitor loop instead of killing the process.
    crate::rt::signals::block_stop_signals();
    // `signal,pid=parent` signals this process, never one that adopts us.
    crate::rt::parent::record();
    crate::rt::stdio::guard_standard_descriptors();
    let worker = std::thread::Builder::new()
        .name("latscope".into())
        .stack_size(MAIN_STACK)
        .spawn(move || std::process::exit(body()));
    match worker.map(|w| w.join()) {
        // The worker ends the process itself; a panic was already printed.
        Ok(Ok(())) | Ok(Err(_)) => std::process::exit(EXIT_RUNTIME),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "latscope: error: could not start the main thread ({} KiB of stack): {e}",
                MAIN_STACK / 1024
            );
            std::process::exit(EXIT_RUNTIME);
        }
    }
}

/// A command's outcome as the process's exit code: an error is printed as
/// one line (usage 2, run time 1); then a failure to write standard output
/// (other than a closed pipe) is one line and exit 1, bad usage staying 2.
pub fn exit_code(result: Result<i32, CommandError>) -> i32 {
    // writeln!, not eprintln!: a closed standard error must not panic.
    let code = match result {
        Ok(code) => code,
        // Escaped here, once for every message: what a message quotes from
        // input (a test name or label from a report, a JSON value in
        // serde's words) can neither drive the terminal nor add a line.
        Err(CommandError::Usage(e)) => {
            let e = escape_line(&e.to_string());
            let _ = writeln!(std::io::stderr(), "latscope: error: {e}");
            EXIT_USAGE
        }
        Err(CommandError::Runtime(e)) => {
            let e = escape_line(&e);
            let _ = writeln!(std::io::stderr(), "latscope: error: {e}");
            EXIT_RUNTIME
        }
    };
    match crate::rt::stdio::finish() {
        Some(why) if code != EXIT_USAGE => {
            let _ = writeln!(
                std::io::stderr(),
                "latscope: error: could not write to standard output: {why}"
            );
            EXIT_RUNTIME
        }
        _ => code,
    }
}
