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

use crate::common::*;
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

/// The runs a test started without an end (no -l, no -D): killed if the
/// test fails before it ends them, so that a failure leaves no run behind.
/// Their pids cannot have been reused: the test has not reaped them.
struct EndOnPanic(Vec<u32>);

impl Drop for EndOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for &pid in &self.0 {
                // SAFETY: signalling our own children, not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        }
    }
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
        // The tracefs collector: the BPF one makes no instance, only file
        // descriptors that die with the process (tests/suite/slow/bpf.rs checks that).
        victims.push((
            start(
                &reg,
                &[
                    "timer",
                    "--breakdown",
                    "--collector",
                    "tracefs",
                    "-T",
                    "60",
                    "-q",
                ],
            ),
            1,
        ));
    } else {
        eprintln!("note: not root or no tracefs: the tracefs instance part is not checked");
    }
    // A live run, left running through both cleanups.
    let mut live = start(&reg, &with(&["svsem", "-i", "1000", "-q"]));
    let _end_on_panic = EndOnPanic(
        victims
            .iter()
            .map(|(child, _)| child.id())
            .chain([live.id()])
            .collect(),
    );
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
        latscope::testing::skip(
            "cleanup::unregistered_instances_go_only_when_their_pid_is_gone",
            "no tracefs",
        );
        return;
    };
    if !euid_is_root() {
        latscope::testing::skip(
            "cleanup::unregistered_instances_go_only_when_their_pid_is_gone",
            "needs root",
        );
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

/// A logdisk run of a minute in `dir`: two 64 KiB test files, buffered.
fn logdisk_in(dir: &std::ffi::OsStr) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["logdisk", "--numFiles", "2", "--fileSize", "64K"])
        .args(["--no-direct", "--duration", "60", "-q", "--dir"])
        .arg(dir);
    cmd
}

/// A logdisk run in `dir` (two 64 KiB files, a minute), killed with SIGKILL
/// once its files are registered: returns the registered paths.
fn killed_logdisk_run(reg: &Path, dir: &std::ffi::OsStr) -> Vec<String> {
    let mut child = logdisk_in(dir)
        .env(REGISTRY_ENV, reg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn latscope");
    let objects = wait_registered(reg, child.id(), 2);
    kill9(&mut child);
    objects.into_iter().map(|(_, identity)| identity).collect()
}

/// ext4 and tmpfs give a freed inode to the next file at once: a user's
/// file made under a killed run's test-file name (often with its inode) is
/// not the run's and stays.
#[test]
fn a_users_file_under_a_killed_runs_name_and_inode_is_left_alone() {
    use std::os::unix::fs::MetadataExt;
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let data = tempfile::tempdir().unwrap();
    let files = killed_logdisk_run(&reg, data.path().as_os_str());
    // The user's file takes the test file's inode: made among probes until
    // one gets it (the filesystem hands out a freed inode again once its
    // removal is on disk), then renamed to the test file's name.
    let mut reused = 0;
    for (i, path) in files.iter().enumerate() {
        let before = std::fs::metadata(path).unwrap().ino();
        std::fs::remove_file(path).unwrap();
        // SAFETY: plain syscall.
        unsafe { libc::sync() };
        for n in 0..64 {
            let probe = data.path().join(format!("probe-{i}-{n}"));
            std::fs::write(&probe, b"the user's own data").unwrap();
            if std::fs::metadata(&probe).unwrap().ino() == before {
                reused += 1;
                std::fs::rename(&probe, path).unwrap();
                break;
            }
        }
        if !Path::new(path).exists() {
            std::fs::write(path, b"the user's own data").unwrap();
        }
    }
    eprintln!("{reused} of {} inodes were reused", files.len());
    // SAFETY: statfs fills the zeroed struct; the path is NUL-terminated.
    let ext4 = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        let c = std::ffi::CString::new(data.path().to_str().unwrap()).unwrap();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == 0xEF53
    };
    if ext4 {
        assert!(
            reused > 0,
            "ext4 gave no freed inode back: the case was not provoked"
        );
    }
    let (code, out, err) = cleanup(&reg, &["--dir", data.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    for path in &files {
        assert_eq!(
            std::fs::read(path).unwrap(),
            b"the user's own data",
            "{path} was touched:\n{out}"
        );
        assert!(
            out.lines()
                .any(|l| l.starts_with("left alone") && l.contains(path.as_str())),
            "{path} not listed as left alone:\n{out}"
        );
    }
}

/// A registry written in another PID namespace (a container sharing the
/// directory) names pids that mean nothing here: its objects are listed and
/// left, its file kept; the same registry from this namespace is cleaned.
#[test]
fn registries_of_another_pid_namespace_are_left_alone() {
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let data = tempfile::tempdir().unwrap();
    let files = killed_logdisk_run(&reg, data.path().as_os_str());
    let registry_file = std::fs::read_dir(&reg)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        // Not a half-written file, nor the run's CPU note.
        .find(|p| {
            let name = p.to_string_lossy();
            !name.ends_with(".tmp") && !name.ends_with(".cpus")
        })
        .expect("the killed run's registry file");
    let text = std::fs::read_to_string(&registry_file).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    assert!(first.starts_with("pidns\t"), "no namespace line: {text}");
    // Another namespace: 1 is no namespace's inode here.
    std::fs::write(&registry_file, format!("pidns\t1\n{rest}")).unwrap();
    let dir = data.path().to_str().unwrap();
    let (code, out, err) = cleanup(&reg, &["--dir", dir]);
    assert_eq!(code, 0, "{out}{err}");
    for path in &files {
        assert!(Path::new(path).exists(), "{path} removed:\n{out}");
        assert!(
            out.lines().any(|l| l.starts_with("kept")
                && l.contains(path.as_str())
                && l.contains("another PID namespace")),
            "{path}:\n{out}"
        );
    }
    assert!(
        registry_file.exists(),
        "the other namespace's registry went"
    );
    // From this namespace again: the files were the run's, and go.
    std::fs::write(&registry_file, format!("{first}\n{rest}")).unwrap();
    let (code, out, err) = cleanup(&reg, &["--dir", dir]);
    assert_eq!(code, 0, "{out}{err}");
    for path in &files {
        assert!(!Path::new(path).exists(), "{path} left:\n{out}");
    }
}

/// A --dir whose name is not UTF-8 is registered all the same (by its
/// bytes), and cleanup finds and removes the files of a killed run there.
#[test]
fn test_files_in_a_non_utf8_directory_are_registered_and_cleaned() {
    use std::os::unix::ffi::OsStrExt;
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let data = tempfile::tempdir().unwrap();
    let odd = data
        .path()
        .join(std::ffi::OsStr::from_bytes(b"log\xff\x1b[31m dir"));
    std::fs::create_dir(&odd).unwrap();
    let files = killed_logdisk_run(&reg, odd.as_os_str());
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(std::fs::read_dir(&odd).unwrap().count(), 2);
    let out = Command::new(bin())
        .args(["cleanup", "--dir"])
        .arg(&odd)
        .env(REGISTRY_ENV, &reg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "a control character of the name reached the terminal:\n{stdout}"
    );
    assert_eq!(
        std::fs::read_dir(&odd).unwrap().count(),
        0,
        "files left:\n{stdout}"
    );
}

/// The directory of a running logdisk renamed under it: at the end the run
/// removes its files where they are now, and says so.
#[test]
fn a_test_directory_renamed_during_the_run_is_still_cleaned() {
    let data = tempfile::tempdir().unwrap();
    let before = data.path().join("before");
    let after = data.path().join("after");
    std::fs::create_dir(&before).unwrap();
    let registry = tempfile::tempdir().unwrap();
    let child = logdisk_in(before.as_os_str())
        .env(REGISTRY_ENV, registry.path().join("reg"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Renamed once its files exist, then the run is ended with Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&before).map_or(0, |d| d.count()) < 2 {
        assert!(Instant::now() < deadline, "no test files appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::rename(&before, &after).unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(std::fs::read_dir(&after).unwrap().count(), 0, "{stderr}");
    assert!(stderr.contains("was moved during the run"), "{stderr}");
}

/// The cyclictest drop-in's status object `/dev/shm/cyclictest<pid>` of a
/// killed run is a shared-memory object, not a test file: `cleanup` knows
/// its kind from the registry and removes it without a `--dir`.
#[test]
fn a_killed_cyclictest_s_shared_memory_object_is_removed_without_dir() {
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let mut child = start(&reg, &["cyclictest", "-q", "-t1", "-i", "1000"]);
    let guard = EndOnPanic(vec![child.id()]);
    let shm = format!("/dev/shm/cyclictest{}", child.id());
    let objects = wait_registered(&reg, child.id(), 1);
    assert_eq!(objects, vec![("posix-shm".to_string(), shm.clone())]);
    kill9(&mut child);
    drop(guard);
    assert!(
        exists("posix-shm", &shm),
        "the kill left no object to clean"
    );
    let (code, out, err) = cleanup(&reg, &["--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "would remove posix-shm        {shm}  (latscope pid "
        )),
        "{out}"
    );
    assert!(!out.contains("--dir"), "{out}");
    let (code, out, err) = cleanup(&reg, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "removed      posix-shm        {shm}  (latscope pid "
        )),
        "{out}"
    );
    assert!(!exists("posix-shm", &shm), "{out}");
    assert!(registry_entries(&reg, None).is_empty(), "registry left");
}

/// The files of a run's own killed by SIGKILL: its CPU note (`.cpus`), a
/// half-written registry file (`.tmp`) and a registry file whose objects are
/// all gone. `cleanup -n` lists and counts each (it said "Nothing left
/// behind" before), `cleanup` removes each and says so (it removed the CPU
/// note silently).
#[test]
fn a_killed_runs_notes_are_listed_counted_and_removed() {
    let _turn = turn();
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path().join("reg");
    let mut run = start(&reg, &["timer", "-p", "1000", "-T", "60", "-q"]);
    let _end_on_panic = EndOnPanic(vec![run.id()]);
    let pid = run.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let note = loop {
        let found = std::fs::read_dir(&reg).ok().and_then(|l| {
            l.filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".cpus"))
        });
        if let Some(note) = found {
            break note;
        }
        assert!(
            Instant::now() < deadline,
            "no CPU note of pid {pid} in {}",
            reg.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    kill9(&mut run);
    let owner = note
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches(".cpus")
        .to_string();
    assert!(owner.starts_with(&format!("{pid}.")), "{owner}");
    // Beside it: what a kill in the middle of a rewrite leaves, and a
    // registry whose objects went already (a sysv id no set has).
    std::fs::write(reg.join(format!("{owner}.tmp")), "half").unwrap();
    std::fs::write(
        reg.join(&owner),
        "sysv-sem\t2147483646\tkey=0 cuid=0 mode=600 n=1 ctime=1\n",
    )
    .unwrap();
    let notes = [
        ("cpu-note", note.clone()),
        ("registry-tmp", reg.join(format!("{owner}.tmp"))),
        ("registry-file", reg.join(&owner)),
    ];
    let (code, out, err) = cleanup(&reg, &["-n"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("Nothing left behind"), "{out}");
    for (kind, path) in &notes {
        let line = format!(
            "would remove {kind:<16} {}  (latscope pid {pid}, ended)",
            path.display()
        );
        assert!(out.lines().any(|l| l == line), "{line:?} not in:\n{out}");
        assert!(path.exists(), "the dry run removed {}", path.display());
    }
    assert!(out.contains("3 would be removed, 0 kept; dry run"), "{out}");
    let (code, out, err) = cleanup(&reg, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for (kind, path) in &notes {
        let line = format!(
            "removed      {kind:<16} {}  (latscope pid {pid}, ended)",
            path.display()
        );
        assert!(out.lines().any(|l| l == line), "{line:?} not in:\n{out}");
        assert!(!path.exists(), "{} left", path.display());
    }
    assert!(out.contains("3 removed, 0 kept, 0 failed."), "{out}");
    let (_, out, _) = cleanup(&reg, &["-n"]);
    assert!(out.contains("Nothing left behind"), "{out}");
}
