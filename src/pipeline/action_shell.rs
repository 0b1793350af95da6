//! A `shell` action's command: started, watched, its output kept, ended.
//!
//! - Started with `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)`),
//!   never a `fork`: a fork of this mlocked process would mark every
//!   private page copy-on-write, and each measuring thread would then take
//!   a page fault at its next write to each of them (Msw 0 -> 105 in 4 s
//!   with `command=true`). `std::process::Command` falls back to fork as
//!   soon as a `pre_exec` closure is set, which the normal-priority set-up
//!   of the load generators needs: here the spawn attributes do that work
//!   (own process group, SCHED_OTHER, every signal at its default and
//!   unblocked) and the runner thread's CPUs and nice are inherited.
//! - Its output (standard output and error) goes into a pipe read while it
//!   runs: the first `OUTPUT_KEPT` bytes are kept, the rest only counted,
//!   so a command such as `yes` costs no memory however much it writes.
//! - It runs in its own process group, which is ended (SIGTERM, SIGKILL
//!   after `GROUP_GRACE`) when the shell ends or times out: nothing it
//!   started in the background outlives the action.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// The bytes of a command's output kept for its first lines.
pub const OUTPUT_KEPT: usize = 64 * 1024;
/// How long the processes left in a command's group have after SIGTERM.
pub const GROUP_GRACE: Duration = Duration::from_millis(500);
/// How often a running command is checked for its end (the longest wait
/// for output in between).
const POLL: Duration = Duration::from_millis(10);

/// How a command ended and what it wrote.
#[derive(Debug, Default)]
pub struct ShellEnd {
    /// `exit code 0`, `signal 15` (None: it could not be reaped).
    pub status: Option<String>,
    pub success: bool,
    pub timed_out: bool,
    pub output: Captured,
    /// What was ended in its process group after the shell ended or timed
    /// out: `1 process ended with SIGTERM`.
    pub group_ended: Option<String>,
}

/// A command's output: the first `OUTPUT_KEPT` bytes, everything counted.
#[derive(Debug, Default)]
pub struct Captured {
    pub head: Vec<u8>,
    pub total_bytes: u64,
    /// Line feeds in the whole output.
    pub line_feeds: u64,
    /// The output's last byte was not a line feed (an unended last line).
    open_line: bool,
}

impl Captured {
    fn take(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let room = OUTPUT_KEPT.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.total_bytes += chunk.len() as u64;
        self.line_feeds += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        self.open_line = chunk.last() != Some(&b'\n');
    }

    /// Lines in the whole output (an unended last one counts).
    pub fn lines(&self) -> u64 {
        self.line_feeds + u64::from(self.open_line)
    }

    /// Bytes and lines beyond the first `kept` lines of the output (None
    /// when nothing was left out).
    pub fn beyond(&self, kept: usize) -> Option<(u64, u64)> {
        let lines = self.lines().saturating_sub(kept as u64);
        // The kept lines end at the `kept`-th line feed of the head (or
        // with the head, when a line outgrew it).
        let kept_bytes = self
            .head
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(kept.saturating_sub(1))
            .map_or(self.head.len(), |(at, _)| at + 1);
        let bytes = self.total_bytes.saturating_sub(kept_bytes as u64);
        (bytes > 0 || lines > 0).then_some((bytes, lines))
    }
}

/// Runs `command` with `/bin/sh -c` in `env` (added to latscope's own) for
/// at most `timeout`; returns when it and its process group have ended.
pub fn run(
    command: &str,
    env: &[(&'static str, String)],
    timeout: Duration,
) -> Result<ShellEnd, String> {
    let (reader, writer) = pipe()?;
    let pid = spawn(command, env, &writer)?;
    // Only the child writes now: the end of its output is seen as EOF.
    drop(writer);
    let mut end = ShellEnd::default();
    let deadline = Instant::now() + timeout;
    let mut shell = None;
    while shell.is_none() {
        wait_readable(&reader, POLL);
        drain(&reader, &mut end.output);
        shell = reap(pid, false);
        if shell.is_none() && Instant::now() >= deadline {
            end.timed_out = true;
            break;
        }
    }
    let (status, ended) = end_group(pid, shell, &reader, &mut end.output);
    end.group_ended = ended;
    // Whatever the group wrote before it ended, up to a writer outside it
    // (a process that left the group) holding the pipe: not waited for.
    let until = Instant::now() + POLL * 5;
    while drain(&reader, &mut end.output) && Instant::now() < until {
        wait_readable(&reader, POLL);
    }
    if let Some(status) = status {
        end.success = status.success();
        end.status = Some(crate::load::process::describe_status(status));
    }
    Ok(end)
}

/// Ends what is left of process group `pid` (the shell's own, the shell
/// `shell` when it has ended and been reaped): SIGTERM, SIGKILL after
/// `GROUP_GRACE`; the output read meanwhile. Returns the shell's status
/// and what was ended.
fn end_group(
    pid: libc::pid_t,
    mut shell: Option<std::process::ExitStatus>,
    reader: &OwnedFd,
    output: &mut Captured,
) -> (Option<std::process::ExitStatus>, Option<String>) {
    // A reaped leader's group lives on while a member does, and its number
    // is not given to another process before the group is empty.
    let members = || group_members(pid);
    if shell.is_some() && members() == 0 {
        return (shell, None);
    }
    // After a timeout the shell is one of them.
    let timed_out = shell.is_none();
    let count = members();
    crate::load::process::signal_group(pid, libc::SIGTERM);
    let mut used = "SIGTERM";
    let deadline = Instant::now() + GROUP_GRACE;
    loop {
        drain(reader, output);
        if shell.is_none() {
            shell = reap(pid, false);
        }
        if shell.is_some() && members() == 0 {
            break;
        }
        if Instant::now() >= deadline {
            crate::load::process::signal_group(pid, libc::SIGKILL);
            used = "SIGKILL";
            if shell.is_none() {
                shell = reap(pid, true);
            }
            break;
        }
        std::thread::sleep(POLL);
    }
    let processes = match count {
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    let ended = (count > 0).then(|| {
        if timed_out {
            format!("its process group ({processes}) ended with {used}")
        } else {
            format!("{processes} it left running ended with {used}")
        }
    });
    (shell, ended)
}

/// The processes of group `pgid` still running (zombies waiting for their
/// parent do not count), found in /proc.
fn group_members(pgid: libc::pid_t) -> usize {
    // SAFETY: kill with signal 0 only checks; a negative pid names a group.
    if unsafe { libc::kill(-pgid, 0) } != 0 {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 1;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            use crate::rt::procstat::{field, number};
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                field(&stat, 3) != Some("Z") && number(&stat, 5) == Some(i64::from(pgid))
            })
        })
        .count()
}

/// The shell's status once it has ended (`block`: wait for it).
fn reap(pid: libc::pid_t, block: bool) -> Option<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: waits for our own child; status is a valid pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, flags) };
        if rc == pid {
            return Some(std::process::ExitStatus::from_raw(status));
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// A pipe whose ends are closed on exec (the child's copy is its dup2).
fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(format!(
            "could not make a pipe for a command's output: {}",
            crate::rt::os_error_text(&std::io::Error::last_os_error())
        ));
    }
    // SAFETY: two fresh descriptors, owned by nobody else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The writer is the child's: blocking, as a fresh standard output is.
    // SAFETY: fcntl on a valid descriptor.
    unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, 0) };
    Ok((reader, writer))
}

/// Waits up to `wait` for output (or its end).
fn wait_readable(reader: &OwnedFd, wait: Duration) {
    let mut poll = libc::pollfd {
        fd: reader.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd. A refused or interrupted poll only makes
    // the next look come sooner.
    let rc = unsafe { libc::poll(&mut poll, 1, wait.as_millis() as libc::c_int) };
    if rc > 0 && poll.revents & libc::POLLIN == 0 {
        // Hang-up without data: every writer is gone; do not spin on it.
        std::thread::sleep(wait);
    }
}

/// Reads what the pipe holds now into `output`; false at its end (every
/// writer gone) or on an error.
fn drain(reader: &OwnedFd, output: &mut Captured) -> bool {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        // SAFETY: reads into a buffer of the given length.
        let n = unsafe { libc::read(reader.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        match n {
            0 => return false,
            n if n > 0 => output.take(&buffer[..n as usize]),
            _ => {
                let e = std::io::Error::last_os_error().raw_os_error();
                return matches!(e, Some(libc::EAGAIN) | Some(libc::EINTR));
            }
        }
    }
}

/// posix_spawn of `/bin/sh -c command`: standard input /dev/null, output
/// and errors to `writer`, its own process group, SCHED_OTHER, every
/// signal at its default and unblocked (latscope blocks and ignores some,
/// which exec would otherwise hand on). Affinity and nice are the calling
/// (runner) thread's.
fn spawn(
    command: &str,
    env: &[(&'static str, String)],
    writer: &OwnedFd,
) -> Result<libc::pid_t, String> {
    let c = |text: &str| {
        CString::new(text).map_err(|_| format!("'{}' holds a NUL byte", crate::units::shown(text)))
    };
    let argv_owned = [c("/bin/sh")?, c("-c")?, c(command)?];
    let envp_owned = environment(env)?;
    let mut argv: Vec<*mut libc::c_char> =
        argv_owned.iter().map(|a| a.as_ptr() as *mut _).collect();
    argv.push(std::ptr::null_mut());
    let mut envp: Vec<*mut libc::c_char> =
        envp_owned.iter().map(|a| a.as_ptr() as *mut _).collect();
    envp.push(std::ptr::null_mut());
    let mut spawn = Spawn::new()?;
    spawn.set_up(writer)?;
    let mut pid: libc::pid_t = 0;
    // SAFETY: the attributes and file actions are initialised; argv and
    // envp are NULL-terminated arrays of C strings that outlive the call.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            argv_owned[0].as_ptr(),
            &spawn.actions,
            &spawn.attributes,
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "cannot run /bin/sh: {}",
            crate::rt::os_error_text(&std::io::Error::from_raw_os_error(rc))
        ));
    }
    Ok(pid)
}

/// latscope's environment with `env` set over it.
fn environment(env: &[(&'static str, String)]) -> Result<Vec<CString>, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut all: Vec<CString> = Vec::new();
    for (key, value) in std::env::vars_os() {
        if env.iter().any(|(k, _)| key.as_bytes() == k.as_bytes()) {
            continue;
        }
        let mut line = key.as_bytes().to_vec();
        line.push(b'=');
        line.extend_from_slice(value.as_bytes());
        // The environment cannot hold a NUL byte: nothing to skip, in fact.
        if let Ok(line) = CString::new(line) {
            all.push(line);
        }
    }
    for (key, value) in env {
        all.push(
            CString::new(format!("{key}={value}"))
                .map_err(|_| format!("{key} holds a NUL byte"))?,
        );
    }
    Ok(all)
}

/// posix_spawn's attributes and file actions, destroyed on drop.
struct Spawn {
    attributes: libc::posix_spawnattr_t,
    actions: libc::posix_spawn_file_actions_t,
}

impl Spawn {
    fn new() -> Result<Spawn, String> {
        // SAFETY: zeroed storage initialised by the two init calls.
        let mut spawn: Spawn = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to storage of the right types.
        let failed = unsafe {
            libc::posix_spawnattr_init(&mut spawn.attributes) != 0
                || libc::posix_spawn_file_actions_init(&mut spawn.actions) != 0
        };
        if failed {
            return Err("cannot prepare the start of /bin/sh".to_string());
        }
        Ok(spawn)
    }

    fn set_up(&mut self, writer: &OwnedFd) -> Result<(), String> {
        let fd = writer.as_raw_fd();
        // SAFETY (whole block): initialised attributes and file actions,
        // valid sets and strings.
        let rc = unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigfillset(&mut all);
            let param = libc::sched_param { sched_priority: 0 };
            let flags = libc::POSIX_SPAWN_SETPGROUP
                | libc::POSIX_SPAWN_SETSIGMASK
                | libc::POSIX_SPAWN_SETSIGDEF
                | libc::POSIX_SPAWN_SETSCHEDULER;
            [
                libc::posix_spawnattr_setflags(&mut self.attributes, flags as libc::c_short),
                libc::posix_spawnattr_setpgroup(&mut self.attributes, 0),
                libc::posix_spawnattr_setsigmask(&mut self.attributes, &none),
                libc::posix_spawnattr_setsigdefault(&mut self.attributes, &all),
                libc::posix_spawnattr_setschedpolicy(&mut self.attributes, libc::SCHED_OTHER),
                libc::posix_spawnattr_setschedparam(&mut self.attributes, &param),
                libc::posix_spawn_file_actions_addopen(
                    &mut self.actions,
                    0,
                    c"/dev/null".as_ptr(),
                    libc::O_RDONLY,
                    0,
                ),
                libc::posix_spawn_file_actions_adddup2(&mut self.actions, fd, 1),
                libc::posix_spawn_file_actions_adddup2(&mut self.actions, fd, 2),
            ]
            .into_iter()
            .find(|rc| *rc != 0)
        };
        match rc {
            None => Ok(()),
            Some(rc) => Err(format!(
                "cannot prepare the start of /bin/sh: {}",
                crate::rt::os_error_text(&std::io::Error::from_raw_os_error(rc))
            )),
        }
    }
}

impl Drop for Spawn {
    fn drop(&mut self) {
        // SAFETY: both were initialised in `new`.
        unsafe {
            libc::posix_spawnattr_destroy(&mut self.attributes);
            libc::posix_spawn_file_actions_destroy(&mut self.actions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_kept_and_the_rest_counted() {
        let mut out = Captured::default();
        let line = b"y\n".repeat(OUTPUT_KEPT);
        out.take(&line);
        out.take(b"tail");
        assert_eq!(out.head.len(), OUTPUT_KEPT);
        assert_eq!(out.total_bytes, 2 * OUTPUT_KEPT as u64 + 4);
        assert_eq!(out.lines(), OUTPUT_KEPT as u64 + 1);
        // 10 lines kept (20 bytes): the rest is beyond them.
        assert_eq!(
            out.beyond(10),
            Some((2 * OUTPUT_KEPT as u64 + 4 - 20, OUTPUT_KEPT as u64 + 1 - 10))
        );
    }

    #[test]
    fn a_short_output_leaves_nothing_out() {
        let mut out = Captured::default();
        out.take(b"one\ntwo\n");
        assert_eq!((out.lines(), out.beyond(2)), (2, None));
        out.take(b"three");
        assert_eq!(out.beyond(2), Some((5, 1)));
        assert_eq!(Captured::default().beyond(0), None);
    }

    #[test]
    fn a_command_runs_its_group_ends_and_its_output_is_bounded() {
        let end = run(
            "echo one; echo two >&2; exit 3",
            &[("X", "x".into())],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(end.status.as_deref(), Some("exit code 3"));
        assert!(!end.success && !end.timed_out);
        assert_eq!(end.output.head, b"one\ntwo\n");
        assert_eq!(end.group_ended, None);
        let env = run("echo $X", &[("X", "given".into())], Duration::from_secs(10)).unwrap();
        assert_eq!(env.output.head, b"given\n");
        let left = run("sleep 100 & echo started", &[], Duration::from_secs(10)).unwrap();
        assert_eq!(left.status.as_deref(), Some("exit code 0"));
        assert_eq!(
            left.group_ended.as_deref(),
            Some("1 process it left running ended with SIGTERM")
        );
        let hung = run("exec sleep 100", &[], Duration::from_millis(200)).unwrap();
        assert!(hung.timed_out);
        assert_eq!(hung.status.as_deref(), Some("signal 15"));
        assert_eq!(
            hung.group_ended.as_deref(),
            Some("its process group (1 process) ended with SIGTERM")
        );
        // A shell that will not end on SIGTERM gets SIGKILL after the grace.
        let stubborn = run("trap '' TERM; sleep 100", &[], Duration::from_millis(200)).unwrap();
        assert_eq!(stubborn.status.as_deref(), Some("signal 9"));
        assert_eq!(
            stubborn.group_ended.as_deref(),
            Some("its process group (2 processes) ended with SIGKILL")
        );
    }
}
