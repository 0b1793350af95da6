//! latscope runs itself under a compatibility name (`oslat`, `cyclictest`,
//! `hwlatdetect`) as a child, as a pod's entrypoint or runner runs its tool:
//! the tool's exact output, either straight on this process's standard
//! output and error (the container entrypoints) or collected, both streams
//! in one, for the caller to log (the cnf-tests runners, which log what Go's
//! `CombinedOutput` gives them).
//!
//! The child has its own process group and a parent-death signal (SIGTERM):
//! a stop signal this process collects (Ctrl-C, SIGTERM, ...) is passed on
//! to it once it collects that signal itself (its mask says so), so that it
//! ends as it would on its own, its results printed; a latscope killed
//! outright takes its child with it. SIGUSR1 (a snapshot, or cyclictest's
//! status) is passed on as well.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Where the child's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// This process's standard output and error.
    Inherit,
    /// Collected (standard output and error in one, in their order).
    Collect,
}

/// How the child ended.
#[derive(Debug)]
pub struct Ended {
    pub status: ExitStatus,
    /// What it wrote (`Output::Collect` only).
    pub output: Vec<u8>,
    /// The stop signal passed on to it, if one was.
    pub stopped_by: Option<i32>,
}

impl Ended {
    /// The status as a shell gives it: the exit code, or 128 + the signal.
    pub fn code(&self) -> i32 {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            _ => 1,
        }
    }
}

impl Ended {
    /// The status as Go's `exec.ExitError` prints it (`exit status 1`,
    /// `signal: terminated`), as the runners' failure line quotes it.
    pub fn go_error(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(libc::SIGTERM)) => "signal: terminated".to_string(),
            (None, Some(libc::SIGKILL)) => "signal: killed".to_string(),
            (None, Some(libc::SIGINT)) => "signal: interrupt".to_string(),
            (None, Some(sig)) => format!("signal: {sig}"),
            _ => self.status.to_string(),
        }
    }
}

/// An anonymous file in memory (`memfd`) for a child's output: it never
/// fills up as a pipe does, and nothing is left on any file system.
pub fn memory_file(name: &std::ffi::CStr) -> Result<File, String> {
    // SAFETY: a valid C string; the returned descriptor is ours.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "could not create a memory file for a child's output: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Runs latscope as `name` with `args`, waits for it while passing stop
/// signals on, and returns how it ended.
pub fn run_as(name: &str, args: &[String], output: Output) -> Result<Ended, String> {
    let mut command = Command::new("/proc/self/exe");
    command.arg0(name).args(args).process_group(0);
    let collected = match output {
        Output::Inherit => None,
        Output::Collect => {
            let file = memory_file(c"latscope-tool-output")?;
            let share = || {
                file.try_clone()
                    .map(Stdio::from)
                    .map_err(|e| format!("could not share the tool's output file: {e}"))
            };
            command
                .stdin(Stdio::null())
                .stdout(share()?)
                .stderr(share()?);
            Some(file)
        }
    };
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure makes only async-signal-safe system calls.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // This process may have ended between the fork and prctl.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
    let mut child = command
        .spawn()
        .map_err(|e| format!("could not start {name} (latscope under that name): {e}"))?;
    let pid = child.id() as libc::pid_t;
    let mut stopped_by = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("could not wait for {name}: {e}"));
            }
        }
        match super::signals::wait_for_stop_signal(Duration::from_millis(50)) {
            Some(libc::SIGTERM) if super::stdio::take_own_sigterm() => {}
            Some(sig) => {
                pass_on(pid, sig);
                stopped_by = Some(sig);
            }
            None if super::signals::take_snapshot_request() => {
                pass_on(pid, super::signals::SNAPSHOT_SIGNAL)
            }
            None => {}
        }
    };
    let mut text = Vec::new();
    if let Some(mut file) = collected {
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut text))
            .map_err(|e| format!("could not read what {name} wrote: {e}"))?;
    }
    Ok(Ended {
        status,
        output: text,
        stopped_by,
    })
}

/// Sends `sig` to the child `pid` once it collects that signal (its blocked
/// mask has it: latscope blocks its signals first thing), so that a signal
/// sent right after the start does not kill it before it can report; after
/// 2 s, or when it has ended, it is sent anyway.
fn pass_on(pid: libc::pid_t, sig: libc::c_int) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !blocks(pid, sig) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: our own child, not reaped yet, so the pid is still its.
    unsafe { libc::kill(pid, sig) };
}

/// Whether process `pid` blocks `sig` (`SigBlk:` of its status); false when
/// it cannot be read (it ended).
fn blocks(pid: libc::pid_t, sig: libc::c_int) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("SigBlk:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1u64 << (sig - 1)) != 0)
}

/// Sleeps until a stop signal comes (`manual=y`, the pause after a run),
/// or for `limit` if given; returns the signal, if one came. SIGUSR1 is
/// collected and ignored.
pub fn sleep_until_stopped(limit: Option<Duration>) -> Option<i32> {
    let end = limit.map(|l| Instant::now() + l);
    loop {
        let left = match end {
            Some(end) => match end.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(Duration::from_secs(3600)),
                _ => return None,
            },
            None => Duration::from_secs(3600),
        };
        match super::signals::wait_for_stop_signal(left) {
            Some(libc::SIGTERM) if super::stdio::take_own_sigterm() => {}
            Some(sig) => return Some(sig),
            None => {
                super::signals::take_snapshot_request();
            }
        }
    }
}
