//! `latscope cleanup` through the real binary: real runs killed with SIGKILL
//! in the middle (System V semaphores with forked peers, System V message
//! queues with threads and processes, log-disk test files, a tracefs
//! instance of `timer --breakdown` as root) leave their objects; `--dry-run`
//! lists them and changes nothing; `cleanup` removes the kernel objects,
//! `cleanup --dir D` the files too. A running latscope's objects, and a
//! semaphore set of another program (this test) are never touched, not even
//! when a registry of a dead latscope names its id.
//!
//! Each test has its own registry directory (`LATSCOPE_RUNTIME_DIR`), so the
//! tests of other files running at the same time do not meet.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REGISTRY_ENV: &str = "LATSCOPE_RUNTIME_DIR";

/// Every cleanup also looks at the tracefs instances of the whole machine:
/// the tests of this file take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(registry: &Path, args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .env(REGISTRY_ENV, registry)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn latscope")
}

fn cleanup(registry: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("cleanup")
        .args(args)
        .env(REGISTRY_ENV, registry)
        .stdin(Stdio::null())
        .output()
        .expect("run latscope cleanup");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn registered(registry: &Path, pid: u32) -> Vec<(String, String)> {
    registry_entries(registry, Some(pid))
}

/// Waits until process `pid` has registered `want` objects (its setup is
/// done), then a little longer so that it is measuring.
fn wait_registered(registry: &Path, pid: u32, want: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = registered(registry, pid);
        if now.len() >= want {
            std::thread::sleep(Duration::from_millis(300));
            return registered(registry, pid);
        }
        assert!(
            Instant::now() < deadline,
            "pid {pid} registered {now:?}, expected {want} objects"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn exists(kind: &str, identity: &str) -> bool {
    registry_object_exists(kind, identity)
}

fn kill9(child: &mut Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), None, "latscope was killed by the signal");
}

/// A semaphore set of "another program": this test.
struct ForeignSet(i32);

impl ForeignSet {
    fn new() -> ForeignSet {
        // SAFETY: plain syscall; removed on drop.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0, "semget: {}", std::io::Error::last_os_error());
        ForeignSet(id)
    }
}

impl Drop for ForeignSet {
    fn drop(&mut self) {
        // SAFETY: removing the set this test made.
        unsafe { libc::semctl(self.0, 0, libc::IPC_RMID) };
    }
}

#[test]
fn killed_runs_are_listed_by_dry_run_and_removed_by_cleanup_while_others_stay() {
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let data = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
    let data_dir = data.path().to_str().unwrap();
    let mlock = mlock_args();
    let with = |args: &[&'static str]| -> Vec<&str> {
        args.iter().copied().chain(mlock.iter().copied()).collect()
    };

    // The runs to kill, and how many objects each registers.
    let mut victims: Vec<(Child, usize)> = vec![
        (
            start(&reg, &with(&["svsem", "-t", "2", "-f", "-i", "1000", "-q"])),
            2,
        ),
        (start(&reg, &with(&["svmq", "-f", "-i", "1000", "-q"])), 1),
        (
            start(&reg, &with(&["svmq", "-t", "2", "-i", "1000", "-q"])),
            2,
        ),
        (
            start(
                &reg,
                &[
                    "logdisk",
                    "--dir",
                    data_dir,
                    "--numFiles",
                    "3",
                    "--fileSize",
                    "64K",
                    "--no-direct",
                    "--duration",
                    "60",
                    "-q",
                ],
            ),
            3,
        ),
    ];
    let breakdown = euid_is_root() && tracing_on_file().is_some();
    if breakdown {
        victims.push((start(&reg, &["timer", "--breakdown", "-T", "60", "-q"]), 1));
    } else {
        eprintln!("note: not root or no tracefs: the tracefs instance part is not checked");
    }
    // A live run, left running through both cleanups.
    let mut live = start(&reg, &with(&["svsem", "-i", "1000", "-q"]));
    let live_objects = wait_registered(&reg, live.id(), 1);

    let mut left = Vec::new();
    for (child, want) in &mut victims {
        let objects = wait_registered(&reg, child.id(), *want);
        assert_eq!(objects.len(), *want, "{objects:?}");
        left.push((child.id(), objects));
    }
    for (child, _) in &mut victims {
        kill9(child);
    }
    for (pid, objects) in &left {
        for (kind, identity) in objects {
            assert!(
                exists(kind, identity),
                "{kind} {identity} of {pid} is gone already"
            );
        }
    }

    // Another program's set, and a registry of a dead latscope naming its id
    // with another fingerprint (an id reused since): never touched.
    let foreign = ForeignSet::new();
    std::fs::write(
        reg.join("1.1"),
        format!(
            "sysv-sem\t{}\tkey=0 cuid=0 mode=600 n=1 ctime=1\n",
            foreign.0
        ),
    )
    .unwrap();

    // --dry-run: everything listed, nothing changed.
    let (code, out, err) = cleanup(&reg, &["--dry-run", "--dir", data_dir]);
    assert_eq!(code, 0, "{out}{err}");
    for (pid, objects) in &left {
        for (kind, identity) in objects {
            let line = out
                .lines()
                .find(|l| l.contains(&format!(" {identity} ")) && l.contains(kind.as_str()))
                .unwrap_or_else(|| panic!("{kind} {identity} not listed:\n{out}"));
            assert!(
                line.starts_with("would remove") && line.contains(&format!("pid {pid}, ended")),
                "{line}"
            );
            assert!(exists(kind, identity), "dry run removed {kind} {identity}");
        }
    }
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    let (live_kind, live_id) = &live_objects[0];
    assert!(
        out.lines().any(|l| l.starts_with("kept")
            && l.contains(&format!(" {live_id} "))
            && l.contains("running")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("left alone") && l.contains(&format!(" {} ", foreign.0))),
        "{out}"
    );

    // Without --dir: the kernel objects go, the files stay (listed).
    let (code, out, err) = cleanup(&reg, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for (_, objects) in &left {
        for (kind, identity) in objects {
            let gone = !exists(kind, identity);
            assert_eq!(gone, kind != "file", "{kind} {identity}:\n{out}");
        }
    }
    assert!(out.contains("not under a --dir"), "{out}");

    // With --dir: the files go too, and the dead runs' registries.
    let (code, out, err) = cleanup(&reg, &["--dir", data_dir]);
    assert_eq!(code, 0, "{out}{err}");
    for (pid, objects) in &left {
        for (kind, identity) in objects {
            assert!(!exists(kind, identity), "{kind} {identity} left:\n{out}");
        }
        assert!(registered(&reg, *pid).is_empty(), "registry of {pid} left");
    }
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);

    // Untouched: the foreign set, the live run's set (which still works: the
    // run ends normally on SIGINT and removes it, and its registry).
    assert!(exists("sysv-sem", &foreign.0.to_string()));
    assert!(exists(live_kind, live_id));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(live.id() as libc::pid_t, libc::SIGINT) };
    let status = live.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(!exists(live_kind, live_id));
    assert!(registered(&reg, live.id()).is_empty());
    let (code, out, _) = cleanup(&reg, &[]);
    assert_eq!(code, 0);
    assert!(
        out.lines().all(|l| !l.starts_with("removed")),
        "nothing more to remove:\n{out}"
    );
}

#[test]
fn nothing_found_is_said_and_bad_dirs_are_usage_errors() {
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg: PathBuf = registry.path().join("none");
    let (code, out, _) = cleanup(&reg, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("Nothing left behind by latscope"), "{out}");
    let (code, out, err) = cleanup(&reg, &["--dir", "/nonexistent/latscope"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--dir") && err.contains("existing directory"),
        "{err}"
    );
    let (code, _, err) = cleanup(&reg, &["--dir", "/etc/hostname"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn a_registry_directory_others_can_write_is_refused() {
    let _turn = turn();
    let registry = temp_dir_with_mode(0o777);
    let (code, _, err) = cleanup(registry.path(), &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not safe"), "{err}");
    // A run with such a directory warns once and still measures.
    let out = Command::new(bin())
        .args(["svsem", "-l", "20", "-i", "1000", "-q"])
        .args(mlock_args())
        .env(REGISTRY_ENV, registry.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("cannot record").count(),
        1,
        "one warning:\n{err}"
    );
}

#[test]
fn unregistered_instances_go_only_when_their_pid_is_gone() {
    let _turn = turn();
    let Some(tracefs) = tracing_on_file().and_then(|f| f.parent().map(Path::to_path_buf)) else {
        eprintln!("SKIPPED unregistered_instances_go_only_when_their_pid_is_gone: no tracefs");
        return;
    };
    if !euid_is_root() {
        eprintln!("SKIPPED unregistered_instances_go_only_when_their_pid_is_gone: needs root");
        return;
    }
    // A pid nobody has (pid_max is at most 2^22), and this test's own pid.
    let dead = (1..4_194_304u32)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let instances = tracefs.join("instances");
    let orphan = instances.join(format!("latscope-{dead}-0"));
    let alive = instances.join(format!("latscope-{}-77", std::process::id()));
    std::fs::create_dir(&orphan).expect("mkdir an instance");
    std::fs::create_dir(&alive).expect("mkdir an instance");
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let (code, out, err) = cleanup(&reg, &["--dry-run"]);
    let _ = std::fs::remove_dir(&alive);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "would remove tracefs-instance {} ",
            orphan.display()
        )),
        "{out}"
    );
    assert!(!out.contains(&alive.display().to_string()), "{out}");
    assert!(orphan.exists());
    let (code, out, err) = cleanup(&reg, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "removed      tracefs-instance {} ",
            orphan.display()
        )),
        "{out}"
    );
    assert!(!orphan.exists());
}
