//! The cyclictest drop-in and cyclictest's two signals (rt-tests 2.x):
//! SIGUSR1 prints the status block on stderr and the run goes on; SIGUSR2
//! writes it into the shared-memory object `/cyclictest<pid>`, which exists
//! from the start of the run to its end, and which rt-tests' own client,
//! `get_cyclictest_snapshot`, reads. The blocks are compared with ones
//! captured from Debian's cyclictest 2.40 (tests/golden/cyclictest/status_*,
//! same options) with the numbers masked; every `T:` line is also checked
//! against cyclictest's printf widths.
//!
//! Processes are told apart by pid only (other sessions may run cyclictest
//! on this machine, and stale /dev/shm/cyclictest* objects of others may
//! exist: never touched). No test needs privileges: the threads run
//! SCHED_OTHER, as cyclictest's do without -p. Waits are for what the run
//! shows (the object, a line), with generous limits, never fixed sleeps.

use crate::common::golden_bytes;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Long enough for any machine, however busy: a test waits this long only
/// when something is wrong.
const PATIENCE: Duration = Duration::from_secs(60);

const TITLE: &str = "# cyclictest current status:";

/// The rule above and below the block, with its newline.
const RULE: &str = "#---------------------------\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn shm_path(pid: u32) -> PathBuf {
    PathBuf::from(format!("/dev/shm/cyclictest{pid}"))
}

/// Polls `done` until it holds; fails the test after PATIENCE.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A drop-in run with its stdout and stderr in files, so that a test can
/// read them while it runs.
struct Run {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pid: u32,
}

impl Run {
    /// `latscope cyclictest ARGS`.
    fn start(args: &[&str]) -> Run {
        let mut cmd = Command::new(crate::common::bin());
        cmd.arg("cyclictest").args(args);
        Run::spawn(cmd)
    }

    /// The run's ownership registry is private (in `dir`): when a failed
    /// test has to end a run with SIGKILL (`Run::kill`), it removes the
    /// object itself, and the registry file naming it goes with `dir`
    /// instead of staying in /run/latscope with its process gone.
    fn spawn(mut cmd: Command) -> Run {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = |name: &str| std::fs::File::create(dir.path().join(name)).expect("output file");
        // Each run keeps its registry in its own directory, unless the test
        // names one to look into.
        if !cmd.get_envs().any(|(key, _)| key == "LATSCOPE_RUNTIME_DIR") {
            cmd.env("LATSCOPE_RUNTIME_DIR", dir.path().join("registry"));
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file("out"))
            .stderr(file("err"))
            .spawn()
            .expect("start latscope");
        let pid = child.id();
        Run {
            child: Some(child),
            dir,
            pid,
        }
    }

    fn shm(&self) -> PathBuf {
        shm_path(self.pid)
    }

    fn stderr(&self) -> String {
        text(&std::fs::read(self.dir.path().join("err")).unwrap_or_default())
    }

    fn stdout(&self) -> String {
        text(&std::fs::read(self.dir.path().join("out")).unwrap_or_default())
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: signalling our own child by pid; it has not been reaped
        // (`child` is still held), so the pid is still its.
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits until the run has created its object: from then on its
    /// signals are blocked and collected (a SIGUSR1 before latscope blocks
    /// it would end the process, as it ends any process).
    fn wait_for_object(&self) {
        let path = self.shm();
        let stderr = || self.stderr();
        wait_until(&format!("{} to appear", path.display()), || {
            path.exists() || {
                let err = stderr();
                assert!(!err.contains("ERROR"), "{err}");
                false
            }
        });
    }

    /// Waits for the end (the test fails after PATIENCE).
    fn finish(mut self) -> (ExitStatus, String, String) {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let (out, err) = (self.stdout(), self.stderr());
                Run::kill(&mut child, self.pid);
                panic!("no end within {PATIENCE:?}\n--- stdout ---\n{out}--- stderr ---\n{err}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (status, self.stdout(), self.stderr())
    }

    /// Ends a run a failed test left behind: SIGINT first, so that latscope
    /// removes its object and its registry file itself; SIGKILL and the
    /// object removed here (this test's child created it: nobody else's)
    /// only when it does not end.
    fn kill(child: &mut Child, pid: u32) {
        // SAFETY: our own child, not reaped yet.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(shm_path(pid));
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            Run::kill(&mut child, self.pid);
        }
    }
}

/// The numbers of a line, in order (a `-` before digits makes it negative).
fn numbers(line: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut current: Option<i64> = None;
    let mut negative = false;
    let mut prev = ' ';
    for c in line.chars() {
        match (c.to_digit(10), current) {
            (Some(d), Some(n)) => current = Some(n * 10 + i64::from(d)),
            (Some(d), None) => {
                negative = prev == '-';
                current = Some(i64::from(d));
            }
            (None, Some(n)) => {
                out.push(if negative { -n } else { n });
                current = None;
            }
            (None, None) => {}
        }
        prev = c;
    }
    if let Some(n) = current {
        out.push(if negative { -n } else { n });
    }
    out
}

/// A `T:` line is exactly cyclictest's printf of its own numbers
/// (`print_stat`: `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld
/// Avg:%5ld Max:%8ld`, Act and Avg `%8ld` with -N).
fn assert_t_line(line: &str, nsecs: bool) {
    let n = numbers(line);
    assert_eq!(n.len(), 9, "{line:?}");
    let w = if nsecs { 8 } else { 5 };
    let expected = format!(
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:w$} Avg:{:w$} Max:{:8}",
        n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8]
    );
    assert_eq!(line, expected);
}

/// The status blocks in `text` (each from its first rule to its last).
fn blocks(text: &str) -> Vec<Vec<&str>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let rule = RULE.trim_end();
        if lines[i] == rule && lines[i + 1] == TITLE {
            let end = (i + 2..lines.len())
                .find(|&j| lines[j] == rule)
                .map_or(lines.len(), |j| j + 1);
            out.push(lines[i..end].to_vec());
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// A line with its numbers' padding dropped and every number masked: its
/// shape whatever the numbers' widths (those are `assert_t_line`'s).
fn shape(line: &str) -> String {
    crate::common::mask_unpadded(line)
}

/// One block has cyclictest's layout: the golden's lines, numbers masked,
/// and every `T:` line (the golden's too) cyclictest's printf widths.
fn assert_block_like_golden(block: &[&str], golden_name: &str, nsecs: bool) {
    let theirs = text(&golden_bytes("cyclictest", golden_name));
    let theirs: Vec<&str> = theirs.lines().collect();
    let shapes = |lines: &[&str]| lines.iter().map(|l| shape(l)).collect::<Vec<_>>();
    assert_eq!(
        shapes(block),
        shapes(&theirs),
        "block:\n{}",
        block.join("\n")
    );
    for line in block.iter().chain(&theirs).filter(|l| l.starts_with("T:")) {
        assert_t_line(line, nsecs);
    }
}

/// The file when it holds a whole block after `skip` bytes (a reader may
/// look between the truncation and the write).
fn complete_block_after(path: &Path, skip: usize) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let tail = bytes.get(skip..)?;
    let text = std::str::from_utf8(tail).ok()?;
    let found = blocks(text);
    let whole = found.len() == 1 && found[0].len() > 3 && text.ends_with(RULE);
    whole.then_some(bytes)
}

#[test]
fn sigusr1_prints_the_status_block_on_stderr_and_the_run_reaches_its_loops() {
    // Thread 0 ends the run after 400 cycles of 10 ms: 4 s, far longer than
    // the signal needs to arrive after the object appeared.
    let run = Run::start(&["-t2", "-q", "-i", "10000", "-l", "400"]);
    run.wait_for_object();
    run.signal(libc::SIGUSR1);
    wait_until("the status block on stderr", || {
        !blocks(&run.stderr()).is_empty()
    });
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    let found = blocks(&err);
    assert_eq!(found.len(), 1, "{err}");
    assert_block_like_golden(&found[0], "status_t2.err", false);
    // Taken mid-run: thread 0 had not done its loops yet.
    let cycles = numbers(found[0][2])[4];
    assert!(cycles < 400, "{err}");
    // The run went on to its -l count, and stdout is cyclictest's alone.
    // A thread that fell behind is stopped where it is when the first
    // reaches its loops, as cyclictest does (docs/benchmarks.md part 7:
    // beside stress-ng thread 0 came out at 399 of 400).
    assert!(!out.contains(TITLE) && !out.contains("#---"), "{out}");
    let threads: Vec<&str> = out.lines().filter(|l| l.starts_with("T: ")).collect();
    assert_eq!(threads.len(), 2, "{out}");
    let most = threads.iter().map(|t| numbers(t)[4]).max();
    assert_eq!(most, Some(400), "{out}");
    for t in &threads {
        assert_t_line(t, false);
    }
}

#[test]
fn sigusr1_with_nsecs_and_the_running_display() {
    // -N widens Act and Avg; without -q the display redraws on stdout while
    // the block goes to stderr. Ended by SIGTERM once the block is seen.
    let run = Run::start(&["-t2", "-N", "-i", "10000"]);
    run.wait_for_object();
    run.signal(libc::SIGUSR1);
    wait_until("the status block on stderr", || {
        !blocks(&run.stderr()).is_empty()
    });
    run.signal(libc::SIGTERM);
    let pid = run.pid;
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    let found = blocks(&err);
    assert_eq!(found.len(), 1, "{err}");
    assert_block_like_golden(&found[0], "status_N_t2.err", true);
    assert!(!out.contains(TITLE), "{out}");
    assert!(!shm_path(pid).exists(), "left after SIGTERM");
}

#[test]
fn sigusr2_writes_the_status_into_dev_shm_as_cyclictest_does() {
    let run = Run::start(&["-t2", "-q", "-i", "10000"]);
    run.wait_for_object();
    let path = run.shm();
    // The object is created, then sized (shm_open, then ftruncate, as
    // cyclictest does): beside stress-ng the test once looked in between.
    wait_until("the object sized", || {
        std::fs::metadata(&path).is_ok_and(|m| m.len() > 0)
    });
    // Before any request: cyclictest's 30 NUL bytes, readable by anyone,
    // writable by nobody else.
    let meta = std::fs::metadata(&path).expect("object");
    assert_eq!(meta.len(), 30);
    assert_eq!(std::fs::read(&path).unwrap(), vec![0u8; 30]);
    let mode = meta.permissions().mode() & 0o777;
    assert_eq!(mode & 0o600, 0o600, "mode {mode:o}");
    assert_eq!(mode & 0o022, 0, "mode {mode:o}");

    run.signal(libc::SIGUSR2);
    let mut first = None;
    wait_until("the first status in the object", || {
        first = complete_block_after(&path, 0);
        first.is_some()
    });
    let first = first.unwrap();
    let first_text = text(&first);
    assert_block_like_golden(&blocks(&first_text)[0], "status_t2.err", false);

    // The second request truncates and writes at the descriptor's offset,
    // which cyclictest never rewinds: the block follows as many NUL bytes
    // as the first one had.
    run.signal(libc::SIGUSR2);
    let mut second = None;
    wait_until("the second status in the object", || {
        second = complete_block_after(&path, first.len());
        second.is_some()
    });
    let second = second.unwrap();
    assert!(second[..first.len()].iter().all(|&b| b == 0), "{second:?}");
    let second_text = text(&second[first.len()..]);
    assert_block_like_golden(&blocks(&second_text)[0], "status_t2.err", false);
    // cyclictest's own file after two requests, numbers masked.
    let theirs = golden_bytes("cyclictest", "status_shm_t2.bin");
    let nuls = theirs.iter().take_while(|&&b| b == 0).count();
    let shapes = |bytes: &[u8]| text(bytes).lines().map(shape).collect::<Vec<_>>();
    assert_eq!(shapes(&second[first.len()..]), shapes(&theirs[nuls..]));
    assert_eq!(nuls, first.len(), "the NUL run is the first block's length");

    // Nothing on stderr or stdout about it; SIGINT ends the run cleanly and
    // removes the object.
    run.signal(libc::SIGINT);
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains(TITLE) && !out.contains(TITLE), "{out}{err}");
    assert!(!path.exists(), "left after SIGINT");
}

#[test]
fn with_latscope_json_the_signals_keep_cyclictests_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let run = Run::start(&[
        "-t1",
        "-q",
        "-i",
        "10000",
        "-l",
        "400",
        "--latscope-json",
        report.to_str().unwrap(),
    ]);
    run.wait_for_object();
    let path = run.shm();
    run.signal(libc::SIGUSR1);
    run.signal(libc::SIGUSR2);
    wait_until("the status on stderr and in the object", || {
        !blocks(&run.stderr()).is_empty() && complete_block_after(&path, 0).is_some()
    });
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    // Not latscope's SIGUSR1 snapshot: cyclictest's block, and the run
    // reached its loops.
    assert!(!err.contains("latscope: snapshot"), "{err}");
    assert_eq!(blocks(&err).len(), 1, "{err}");
    let t0 = out.lines().find(|l| l.starts_with("T: 0 ")).expect("T: 0");
    assert_eq!(numbers(t0)[4], 400, "{out}");
    assert!(report.exists());
    assert!(!path.exists(), "left after the run");
}

#[test]
fn get_cyclictest_snapshot_reads_the_drop_in() {
    let client = Path::new("/usr/sbin/get_cyclictest_snapshot");
    if !client.exists() || Command::new("python3").arg("-V").output().is_err() {
        latscope::testing::skip(
            "slow::cyclictest_signals::get_cyclictest_snapshot_reads_the_drop_in",
            "rt-tests' get_cyclictest_snapshot (and python3) not installed",
        );
        return;
    }
    // Started under the compat name, as real clients start it.
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("cyclictest");
    std::os::unix::fs::symlink(crate::common::bin(), &link).unwrap();
    let mut cmd = Command::new(&link);
    cmd.args(["-t2", "-q", "-i", "10000"]);
    let run = Run::spawn(cmd);
    run.wait_for_object();
    let pid_n = run.pid;
    let pid = pid_n.to_string();
    // Only ever with our pid: without one, the client signals every
    // /dev/shm/cyclictest* it finds, other people's included.
    let client_run = |args: &[&str]| {
        let out = Command::new(client).args(args).output().expect("client");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(
        client_run(&["-l"]).lines().any(|l| l == pid),
        "the client does not list {pid}"
    );
    client_run(&["-s", &pid]);
    let mut printed = String::new();
    wait_until("the client to print the status", || {
        printed = client_run(&["-p", &pid]);
        blocks(&printed)
            .first()
            .is_some_and(|b| b.len() == 5 && b[4] == RULE.trim_end())
    });
    assert_block_like_golden(&blocks(&printed)[0], "status_t2.err", false);
    let tid_line = blocks(&printed)[0][2].to_string();
    run.signal(libc::SIGINT);
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    // The same threads as the run's final lines.
    let tid = numbers(&tid_line)[1];
    let t0 = out.lines().find(|l| l.starts_with("T: 0 ")).expect("T: 0");
    assert_eq!(numbers(t0)[1], tid, "{out}");
    assert!(!shm_path(pid_n).exists(), "left after SIGINT");
}

#[test]
fn no_object_is_left_by_any_way_out() {
    // The ends: -l, -D, SIGHUP (SIGINT and SIGTERM: above).
    for args in [
        &["-t1", "-q", "-i", "10000", "-l", "20"][..],
        &["-t1", "-q", "-i", "10000", "-D", "1"][..],
    ] {
        let run = Run::start(args);
        let pid = run.pid;
        let (status, _, err) = run.finish();
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(!shm_path(pid).exists(), "{args:?} left it");
    }
    let run = Run::start(&["-t1", "-q", "-i", "10000"]);
    run.wait_for_object();
    run.signal(libc::SIGHUP);
    let pid = run.pid;
    let (status, _, err) = run.finish();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!shm_path(pid).exists(), "left after SIGHUP");

    // Errors after the object was made: the -F pipe cannot be created
    // (latscope ends the run there), the --json file cannot be written at
    // the end (cyclictest itself leaves its object behind then). Whatever
    // the exit code, nothing is left.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let fifo = format!("{}/fifo", missing.display());
    let json = format!("--json={}/r.json", missing.display());
    for args in [
        &["-t1", "-q", "-i", "10000", "-l", "20", "-F", &fifo][..],
        &["-t1", "-q", "-i", "10000", "-l", "20", &json][..],
    ] {
        let run = Run::start(args);
        let pid = run.pid;
        let (status, _, err) = run.finish();
        assert!(
            !shm_path(pid).exists(),
            "{args:?} left it ({status}): {err}"
        );
    }

    // Usage: nothing measured, nothing made (as cyclictest: --help and its
    // getopt errors exit before its rstat_setup).
    for args in [&["--help"][..], &["-Z"][..], &["-t1", "--smi", "-l1"][..]] {
        let run = Run::start(args);
        let pid = run.pid;
        let (_, _, err) = run.finish();
        assert!(!err.contains("shm"), "{args:?}: {err}");
        assert!(!shm_path(pid).exists(), "{args:?} left it");
    }
}

/// An object named after the run's pid that the run did not create (a dead
/// process's leftover, or a live one of another pid namespace sharing
/// /dev/shm) is never removed or written: the run goes on without the
/// SIGUSR2 status and says so in one line. The pid is made predictable by a
/// new pid namespace (the drop-in is its pid 1), /dev/shm staying shared.
#[test]
fn an_object_it_did_not_create_is_left_alone() {
    if !crate::common::euid_is_root() {
        latscope::testing::skip(
            "slow::cyclictest_signals::an_object_it_did_not_create_is_left_alone",
            "a new pid namespace (unshare) needs root",
        );
        return;
    }
    let theirs = shm_path(1);
    let content = format!("not latscope's: test {}\n", std::process::id());
    let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&theirs)
    else {
        latscope::testing::skip(
            "slow::cyclictest_signals::an_object_it_did_not_create_is_left_alone",
            &format!("{} exists already (not this test's)", theirs.display()),
        );
        return;
    };
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(theirs.clone());
    std::io::Write::write_all(&mut file, content.as_bytes()).unwrap();
    drop(file);
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--"])
        .arg(env!("CARGO_BIN_EXE_latscope-cyclictest"))
        .args(["-q", "-l", "20"]);
    let out = crate::common::run_std_with_timeout(cmd, PATIENCE);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), content);
    assert!(
        stderr.contains("WARN: /dev/shm/cyclictest1 exists and was not created by this run"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("T: 0 ("),
        "{}",
        text(&out.stdout)
    );
}

/// The `T:` lines of a run's output.
fn t_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("T:")).collect()
}

/// No wait lasts past -D, whatever the interval: cyclictest's threads sleep
/// to their next expiry (`-i 5000000 -D 1` took 5 s, `-i 1000000000000
/// -D 1` 11.6 days). Every wake method of the drop-in and the lean binary
/// end at -D with no sample taken: the first expiry lies beyond the end, so
/// every thread shows cyclictest's figures of a thread that never woke
/// (C: 0, Min: 1000000), which a run that waited for it could not show.
#[test]
fn a_period_longer_than_the_run_ends_at_the_run_s_end() {
    for (lean, interval, wake) in [
        (false, "5000000", &[][..]),
        (false, "1000000000000", &[][..]),
        (false, "1000000000000", &["-r"][..]),
        (false, "1000000000000", &["-s"][..]),
        (false, "1000000000000", &["-x"][..]),
        (true, "1000000000000", &[][..]),
    ] {
        let mut cmd = if lean {
            Command::new(env!("CARGO_BIN_EXE_latscope-cyclictest"))
        } else {
            let mut c = Command::new(crate::common::bin());
            c.arg("cyclictest");
            c
        };
        cmd.args(["-t2", "-q", "-i", interval, "-D", "1"])
            .args(wake);
        let run = Run::spawn(cmd);
        let (status, out, err) = run.finish();
        let what = format!("lean {lean} -i {interval} {wake:?}");
        assert_eq!(status.code(), Some(0), "{what}: {err}");
        let lines = t_lines(&out);
        assert_eq!(lines.len(), 2, "{what}: {out}");
        for line in lines {
            assert_t_line(line, false);
            let n = numbers(line);
            // T: i (tid) P: p I: i C: c Min: min
            assert_eq!((n[4], n[5]), (0, 1_000_000), "{what}: {line}");
        }
    }
}

/// A stop signal ends a run whose threads sleep in a period of 11.6 days,
/// at once (cyclictest wakes its threads with a signal; so does latscope),
/// with the results printed and exit 0, and nothing left: neither
/// `/dev/shm/cyclictest<pid>` nor the run's registry file. Run under the
/// `latscope cyclictest` name, the lean binary and with --latscope-json.
#[test]
fn a_stop_signal_wakes_a_thread_in_a_long_period() {
    let registry = tempfile::tempdir().unwrap();
    let json_dir = tempfile::tempdir().unwrap();
    let json = json_dir.path().join("r.json");
    let json = json.to_str().unwrap();
    for (lean, sig, extra) in [
        (false, libc::SIGTERM, &[][..]),
        (false, libc::SIGINT, &["-x"][..]),
        (true, libc::SIGTERM, &[][..]),
        (true, libc::SIGINT, &["-r"][..]),
        (false, libc::SIGTERM, &["--latscope-json", json][..]),
    ] {
        let mut cmd = if lean {
            Command::new(env!("CARGO_BIN_EXE_latscope-cyclictest"))
        } else {
            let mut c = Command::new(crate::common::bin());
            c.arg("cyclictest");
            c
        };
        cmd.env("LATSCOPE_RUNTIME_DIR", registry.path())
            .args(["-t2", "-q", "-i", "1000000000000"])
            .args(extra);
        let run = Run::spawn(cmd);
        let what = format!("lean {lean} signal {sig} {extra:?}");
        run.wait_for_object();
        let pid = run.pid;
        let registered = || {
            std::fs::read_dir(registry.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .any(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.split('.').next() == Some(&pid.to_string())
                })
        };
        wait_until("the registry file", registered);
        run.signal(sig);
        let (status, out, err) = run.finish();
        assert_eq!(status.code(), Some(0), "{what}: {err}");
        if extra.first() == Some(&"--latscope-json") {
            let report = crate::common::read_json(Path::new(json));
            assert_eq!(report["tests"][0]["end_reason"], "interrupted", "{what}");
        } else {
            let lines = t_lines(&out);
            assert_eq!(lines.len(), 2, "{what}: {out}");
            for line in lines {
                assert_t_line(line, false);
                assert_eq!(numbers(line)[4], 0, "{what}: {line}");
            }
        }
        assert!(!shm_path(pid).exists(), "{what}: object left");
        assert!(!registered(), "{what}: registry file left");
    }
}
