//! Advice that fits the person and the moment, through the real binary: a
//! user who may use real-time priority is told the option, not to be root;
//! the live line counts in the singular and plural and says how to stop a
//! run that has no end of its own; two runs on one CPU warn about each
//! other; a second logdisk on a running one's test files is told they are in
//! use, not to remove them; the machine's own warnings can be quieted.

use crate::common::*;
use serde_json::Value;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const REGISTRY_ENV: &str = "LATSCOPE_RUNTIME_DIR";
const QUIET_ENV: &str = "LATSCOPE_QUIET_MACHINE_WARNINGS";

fn warnings_of(report: &Value) -> Vec<String> {
    array_of(&report["warnings"], "warnings")
        .iter()
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect()
}

/// As root (who may use SCHED_FIFO) a pair test run without `-p` is told to
/// give `-p`, not to run as root.
#[test]
fn a_user_who_may_use_real_time_priority_is_told_the_option() {
    if skip_without_realtime("a_user_who_may_use_real_time_priority_is_told_the_option") {
        return;
    }
    let (_dir, file) = temp_file("mq.json");
    let mut cmd = latscope(60);
    cmd.args(args("mq -l 200 -i 1000 -q --json")).arg(&file);
    let (out, report) = run_with_report(cmd, &file, 0);
    let warnings = warnings_of(&report);
    let advice = warnings
        .iter()
        .find(|w| w.starts_with("no real-time priority"))
        .unwrap_or_else(|| panic!("no priority warning: {warnings:?}\n{}", describe(&out)));
    assert!(
        advice.ends_with("give -p 1..99 (this user may use it)"),
        "{advice}"
    );
    assert!(!advice.contains("root"), "{advice}");
}

/// A pseudo-terminal pair: latscope draws its status line only on a
/// terminal.
struct Terminal {
    controller: std::fs::File,
    device: OwnedFd,
}

fn terminal() -> Terminal {
    // SAFETY: plain libc calls; each result is checked, the descriptors are owned below.
    unsafe {
        let controller = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(
            controller >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(controller), 0);
        assert_eq!(libc::unlockpt(controller), 0);
        let mut name = [0u8; 128];
        assert_eq!(
            libc::ptsname_r(controller, name.as_mut_ptr().cast(), name.len()),
            0
        );
        let device = libc::open(
            name.as_ptr().cast(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(
            device >= 0,
            "open the terminal: {}",
            std::io::Error::last_os_error()
        );
        Terminal {
            controller: std::fs::File::from_raw_fd(controller),
            device: OwnedFd::from_raw_fd(device),
        }
    }
}

/// Runs latscope with its standard error on a terminal until `stop` says
/// the terminal shows enough (then SIGINT) or 20 s pass; returns the exit
/// code and what the terminal showed.
fn on_a_terminal(words: &str, stop: impl Fn(&str) -> bool) -> (Option<i32>, String) {
    let Terminal {
        mut controller,
        device,
    } = terminal();
    let mut cmd = Command::new(bin());
    cmd.args(args(words))
        .args(mlock_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::from(device.try_clone().unwrap()));
    let mut child = cmd.spawn().expect("spawn latscope");
    drop(device);
    drop(cmd);
    // Non-blocking reads, so that the deadline holds.
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe {
        let flags = libc::fcntl(controller.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(
            controller.as_raw_fd(),
            libc::F_SETFL,
            flags | libc::O_NONBLOCK,
        );
    }
    let mut shown = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut signalled = false;
    let status = loop {
        if Instant::now() > deadline + Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "latscope did not end after SIGINT:\n{}",
                String::from_utf8_lossy(&shown)
            );
        }
        let mut buf = [0u8; 4096];
        if let Ok(n) = controller.read(&mut buf) {
            shown.extend_from_slice(&buf[..n]);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !signalled && (stop(&String::from_utf8_lossy(&shown)) || Instant::now() > deadline) {
            signal_when_ready(child.id(), libc::SIGINT);
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = [0u8; 4096];
    while let Ok(n) = controller.read(&mut rest) {
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&rest[..n]);
    }
    (status.code(), String::from_utf8_lossy(&shown).into_owned())
}

/// The live line of a run without an end says how to stop it, and one pair
/// is "1 pair"; a run with a duration says nothing about stopping.
#[test]
fn the_live_line_counts_right_and_says_how_to_stop_an_endless_run() {
    let (code, shown) = on_a_terminal("mq -i 1000", |s| s.contains("Ctrl-C"));
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains(": 1 pair, "), "{shown}");
    assert!(!shown.contains("1 pairs"), "{shown}");
    assert!(shown.contains("| Ctrl-C: stop and report"), "{shown}");
    let (code, shown) = on_a_terminal("mq -i 1000 -t 2 -D 2", |_| false);
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains(": 2 pairs, "), "{shown}");
    assert!(!shown.contains("Ctrl-C"), "{shown}");
}

/// Waits until a CPU note of process `pid` is in the registry directory.
fn wait_for_cpu_note(registry: &Path, pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir(registry).ok().is_some_and(|mut l| {
            l.any(|e| {
                e.ok().is_some_and(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with(&format!("{pid}.")) && name.ends_with(".cpus")
                })
            })
        });
        if found {
            return;
        }
        assert!(Instant::now() < deadline, "no CPU note of pid {pid}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two runs measuring on CPU 0 at once: each report names the other run,
/// the one that started first too (it learns of the second from the note
/// the second left it), and no note is left behind.
#[test]
fn two_runs_on_one_cpu_warn_about_each_other() {
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let dir = tempfile::tempdir().unwrap();
    let (first_json, second_json) = (dir.path().join("1.json"), dir.path().join("2.json"));
    // An mq run on CPU 0 for `seconds`, its report in `json`.
    let on_cpu_0 = |seconds: &str, json: &Path| {
        let mut cmd = Command::new(bin());
        cmd.args(args("mq -a 0 -i 1000 -q -D"))
            .arg(seconds)
            .arg("--json")
            .arg(json)
            .args(mlock_args())
            .env(REGISTRY_ENV, &reg);
        cmd
    };
    let first = spawn_std(&mut on_cpu_0("3", &first_json));
    let first_pid = first.child.id();
    wait_for_cpu_note(&reg, first_pid);
    let second = run_std_with_timeout(on_cpu_0("1", &second_json), Duration::from_secs(60));
    assert_code(&second, 0);
    let (status, out, err) = first.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{out}{err}");
    let second_warnings = warnings_of(&read_json(&second_json));
    assert!(
        second_warnings.iter().any(|w| w.starts_with(&format!(
            "another latscope run (pid {first_pid}) ran on CPU 0 at the same time"
        ))),
        "{second_warnings:?}"
    );
    let first_warnings = warnings_of(&read_json(&first_json));
    assert!(
        first_warnings
            .iter()
            .any(|w| w.starts_with("another latscope run (pid ") && w.contains("ran on CPU 0")),
        "{first_warnings:?}"
    );
    assert!(
        stdout_of(&second).contains("warning: another latscope run"),
        "{}",
        describe(&second)
    );
    let left: Vec<_> = std::fs::read_dir(&reg)
        .map(|l| l.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in the registry: {left:?}");
}

/// A second logdisk whose test files are a running logdisk's is told they
/// are in use (with the pid), not to remove them; the files stay.
#[test]
fn a_second_logdisk_is_told_the_files_are_in_use() {
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let work = disk_dir("advice-logdisk-");
    let logdisk = |duration: &str| {
        let mut cmd = Command::new(bin());
        cmd.args(args(
            "logdisk --numFiles 2 --fileSize 64K --no-direct -q -D",
        ))
        .arg(duration)
        .arg("--dir")
        .arg(work.path())
        .env(REGISTRY_ENV, &reg);
        cmd
    };
    let running = spawn_std(&mut logdisk("30"));
    let pid = running.child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while registry_entries(&reg, Some(pid)).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the first run registered no files"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run_std_with_timeout(logdisk("1"), Duration::from_secs(30));
    running.signal(libc::SIGINT);
    let (status, out, err) = running.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{out}{err}");
    assert_code(&second, 2);
    let err = stderr_of(&second);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "mqldt_testfile.0000 is a test file of another latscope run (pid {pid}), which is using it"
        )),
        "{err}"
    );
    assert!(!err.contains("remove"), "{err}");
}

/// The machine's own findings (kernel, clocksource, virtualization) say
/// once how to quiet them, and LATSCOPE_QUIET_MACHINE_WARNINGS=1 does; the
/// run's own warnings stay either way.
#[test]
fn machine_warnings_say_how_to_quiet_them_and_can_be_quieted() {
    let (_dir, file) = temp_file("mq.json");
    let run_mq = |quiet: bool| {
        let mut cmd = latscope(60);
        cmd.args(args("mq -l 200 -i 1000 -q --no-mlockall --json"))
            .arg(&file);
        if quiet {
            cmd.env(QUIET_ENV, "1");
        } else {
            cmd.env_remove(QUIET_ENV);
        }
        run_with_report(cmd, &file, 0)
    };
    let (out, report) = run_mq(false);
    let machine_problems = array_of(&report["sysinfo"]["checks"], "checks")
        .iter()
        .filter(|c| {
            [
                "kernel.preemption",
                "kernel.clocksource",
                "platform.virtualization",
            ]
            .contains(&c["id"].as_str().unwrap_or_default())
                && c["verdict"] != "ok"
        })
        .count();
    let hint = format!("({QUIET_ENV}=1 leaves out these machine warnings)");
    let stdout = unwrapped(&stdout_of(&out));
    assert_eq!(
        stdout.matches(&hint).count(),
        usize::from(machine_problems > 0),
        "{stdout}"
    );
    let (out, report) = run_mq(true);
    let warnings = warnings_of(&report);
    assert!(!stdout_of(&out).contains(QUIET_ENV), "{}", describe(&out));
    assert!(
        warnings
            .iter()
            .all(|w| !w.contains("PREEMPT_RT") && !w.contains("virtual machine")),
        "{warnings:?}"
    );
    // --no-mlockall is the run's own: it is still said.
    assert!(
        warnings.iter().any(|w| w.starts_with("memory not locked")),
        "{warnings:?}"
    );
}
