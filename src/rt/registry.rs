//! The ownership registry: what this process created that outlives it when
//! it is killed with SIGKILL (System V semaphore sets and message queues,
//! log-disk test files, the suite's private directory, tracefs instances),
//! written down so that `latscope cleanup` can later tell latscope's
//! leftovers from everything else, and whose they were.
//!
//! Why a registry: System V objects made with `IPC_PRIVATE` carry no name,
//! and a semaphore set does not even record its creator's pid; a test file
//! is only a name in a directory. So each process keeps one small file,
//! `<dir>/<pid>.<start time>`, one line per object it holds: the kind, the
//! identity (id or absolute path) and a fingerprint read from the object
//! itself (`IPC_STAT`'s key, creator, mode and change time for System V;
//! device and inode for files). The start time (field 22 of
//! `/proc/PID/stat`) tells a dead owner from a new process that got the same
//! pid; the fingerprint tells the recorded object from a new one that got
//! the same id or name. An object leaves the registry when its owner removes
//! it; the file goes with its last line, so a run that ends normally leaves
//! nothing here either.
//!
//! Recording happens at setup, never in a measuring loop, and never makes a
//! run fail: when the directory cannot be written latscope warns once and
//! goes on. A forked peer records nothing (every call checks it is the
//! process that opened the registry).
//!
//! Where: `$LATSCOPE_RUNTIME_DIR` when set (tests use it), else
//! `/run/latscope` for root, else `$XDG_RUNTIME_DIR/latscope` when that
//! directory is the caller's, else `/tmp/latscope-<uid>`. The directory is
//! created 0700 and used only if it is a real directory owned by the caller
//! that nobody else may write.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The environment variable that overrides the registry directory.
pub const DIR_ENV: &str = "LATSCOPE_RUNTIME_DIR";

/// What a registry line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A System V semaphore set (identity: its id).
    SysvSem,
    /// A System V message queue (identity: its id).
    SysvMsq,
    /// A POSIX shared-memory object (identity: its path under /dev/shm):
    /// the cyclictest drop-in's `/cyclictest<pid>` status object. Removed
    /// by `cleanup` without a `--dir`, as the kernel objects are.
    Shm,
    /// A log-disk test file (identity: its absolute path).
    File,
    /// A directory latscope made for its files (the suite's private one).
    Dir,
    /// A tracefs instance (identity: its directory).
    TraceInstance,
    /// A cpuidle state disabled by `--deepest-idle-state` (identity: its
    /// `disable` file): `cleanup` enables it again.
    IdleState,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::SysvSem,
        Kind::SysvMsq,
        Kind::Shm,
        Kind::File,
        Kind::Dir,
        Kind::TraceInstance,
        Kind::IdleState,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::SysvSem => "sysv-sem",
            Kind::SysvMsq => "sysv-msq",
            Kind::Shm => "posix-shm",
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::TraceInstance => "tracefs-instance",
            Kind::IdleState => "cpuidle-state",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One object of the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// The System V id, or the absolute path.
    pub identity: String,
    /// What `fingerprint` read when the object was recorded.
    pub fingerprint: String,
}

impl Entry {
    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\n",
            self.kind.name(),
            escape(self.identity.as_bytes()),
            self.fingerprint
        )
    }

    fn parse(line: &str) -> Option<Entry> {
        let mut fields = line.split('\t');
        let kind = Kind::from_name(fields.next()?)?;
        let identity = String::from_utf8(unescape(fields.next()?)?).ok()?;
        let fingerprint = fields.next()?.to_string();
        if fields.next().is_some() || fingerprint.is_empty() {
            return None;
        }
        Some(Entry {
            kind,
            identity,
            fingerprint,
        })
    }
}

/// A path as registry identity: its bytes, with those that are not
/// printable ASCII (and `%`) as `%XX`, so that any path, UTF-8 or not, is
/// recorded and prints safely. `identity_path` reads it back.
pub fn path_identity(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    Some(escape(path.as_os_str().as_bytes()))
}

/// The path a path identity names (identities written before paths were
/// escaped are taken as they are when they do not decode).
pub fn identity_path(identity: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    match unescape(identity) {
        Some(bytes) => PathBuf::from(std::ffi::OsString::from_vec(bytes)),
        None => PathBuf::from(identity),
    }
}

/// Bytes that could break a line (tab, newline, anything not printable
/// ASCII, and `%` itself) as `%XX`.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'%' || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unescape(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A cpuidle state's `disable` file (`rt::cpuidle` records them): `disabled`
/// while it is (the state latscope disabled), None once enabled or gone
/// (nothing left to restore).
fn idle_state_fingerprint(path: &Path) -> io::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) if t.trim() == "1" => Ok(Some("disabled".to_string())),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The object as it is now: `Ok(None)` when it no longer exists, else its
/// fingerprint (the same text `record` stored when it is the same object).
pub fn fingerprint(kind: Kind, identity: &str) -> io::Result<Option<String>> {
    match kind {
        Kind::SysvSem | Kind::SysvMsq => {
            let id: libc::c_int = identity
                .parse()
                .map_err(|_| io::Error::other(format!("bad System V id '{identity}'")))?;
            sysv_fingerprint(kind, id)
        }
        Kind::IdleState => idle_state_fingerprint(&identity_path(identity)),
        Kind::File | Kind::Shm | Kind::Dir | Kind::TraceInstance => {
            let path = identity_path(identity);
            let m = match fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let type_ok = match kind {
                Kind::File | Kind::Shm => m.file_type().is_file(),
                _ => m.file_type().is_dir(),
            };
            Ok(Some(if !type_ok {
                // Something else now has the name: never ours.
                "other-type".to_string()
            } else if kind == Kind::TraceInstance {
                // Told apart by its name, which holds its owner's pid (see
                // `cleanup`): tracefs keeps no birth time.
                format!("dev={} ino={} uid={}", m.dev(), m.ino(), m.uid())
            } else {
                // ext4 and tmpfs give a freed inode number to the next file
                // at once: the birth time (ns) tells the recorded file from
                // a newer one with the same inode.
                format!(
                    "dev={} ino={} uid={} btime={}",
                    m.dev(),
                    m.ino(),
                    m.uid(),
                    birth_time(&path).unwrap_or_else(|| NO_BIRTH_TIME.to_string())
                )
            }))
        }
    }
}

/// What a file fingerprint says when the filesystem keeps no birth time.
const NO_BIRTH_TIME: &str = "none";

/// Whether `fingerprint` cannot tell the recorded object from a newer one
/// that got its identifier (a file on a filesystem without birth times):
/// `cleanup` leaves such an object and says so.
pub fn fingerprint_uncertain(kind: Kind, fingerprint: &str) -> bool {
    matches!(kind, Kind::File | Kind::Dir)
        && !fingerprint
            .split(' ')
            .any(|f| f.strip_prefix("btime=").is_some_and(|t| t != NO_BIRTH_TIME))
}

/// The birth time of `path` (not followed) as `seconds.nanoseconds`, where
/// the filesystem records one.
fn birth_time(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statx fills the zeroed struct; the path is NUL-terminated.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BTIME,
            &mut st,
        )
    };
    (rc == 0 && st.stx_mask & libc::STATX_BTIME != 0)
        .then(|| format!("{}.{:09}", st.stx_btime.tv_sec, st.stx_btime.tv_nsec))
}

fn sysv_fingerprint(kind: Kind, id: libc::c_int) -> io::Result<Option<String>> {
    // SAFETY: IPC_STAT writes one semid_ds / msqid_ds into the zeroed value.
    let (rc, perm, ctime, extra) = unsafe {
        if kind == Kind::SysvSem {
            let mut ds: libc::semid_ds = std::mem::zeroed();
            let rc = libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds);
            (rc, ds.sem_perm, ds.sem_ctime, ds.sem_nsems as u64)
        } else {
            let mut ds: libc::msqid_ds = std::mem::zeroed();
            let rc = libc::msgctl(id, libc::IPC_STAT, &mut ds);
            (rc, ds.msg_perm, ds.msg_ctime, 0)
        }
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            // EINVAL: no such id; EIDRM: removed meanwhile.
            Some(libc::EINVAL) | Some(libc::EIDRM) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(format!(
        "key={} cuid={} mode={:o} n={extra} ctime={ctime}",
        perm.__key,
        perm.cuid,
        perm.mode & 0o777
    )))
}

/// The start time of process `pid` (clock ticks since boot, field 22 of
/// `/proc/PID/stat`), or `None` when there is no such process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::rt::procstat::field(&stat, 22)?.parse().ok()
}

/// Whether the process that wrote a registry is still running: its pid
/// exists with the same start time.
pub fn owner_alive(owner: Owner) -> bool {
    start_time(owner.pid) == Some(owner.start_time)
}

/// The PID namespace of this process (the inode of `/proc/self/ns/pid`):
/// a pid means something only in the namespace it was recorded in.
pub fn pid_namespace() -> Option<u64> {
    fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

/// The first line of a registry file: the writer's PID namespace.
const NAMESPACE_FIELD: &str = "pidns";

/// Who wrote a registry file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    pub pid: u32,
    pub start_time: u64,
}

impl Owner {
    fn file_name(self) -> String {
        format!("{}.{}", self.pid, self.start_time)
    }

    fn from_file_name(name: &OsStr) -> Option<Owner> {
        let (pid, start) = name.to_str()?.split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(start) {
            return None;
        }
        Some(Owner {
            pid: pid.parse().ok()?,
            start_time: start.parse().ok()?,
        })
    }
}

/// The registry directory this user's processes use (see the module text).
pub fn registry_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        return PathBuf::from("/run/latscope");
    }
    if let Some(xdg) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && xdg.is_absolute()
        && fs::metadata(&xdg).is_ok_and(|m| m.is_dir() && m.uid() == euid)
    {
        return xdg.join("latscope");
    }
    PathBuf::from(format!("/tmp/latscope-{euid}"))
}

/// Creates the registry directory if needed and checks it is safe to use:
/// a real directory (no symlink), owned by the caller, writable by nobody
/// else.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_dir(dir)
}

/// A directory latscope may trust for registries: not a symlink, owned by
/// the caller, writable by no one else.
pub fn check_dir(dir: &Path) -> io::Result<()> {
    let m = fs::symlink_metadata(dir)?;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() {
        return Err(io::Error::other("not a directory"));
    }
    if m.uid() != euid {
        return Err(io::Error::other(format!(
            "owned by uid {}, not by you",
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(io::Error::other("writable by others"));
    }
    Ok(())
}

/// This process's registry.
struct Registry {
    pid: u32,
    /// `None` once recording failed (after the one warning).
    file: Option<PathBuf>,
    entries: Vec<Entry>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn this_pid() -> u32 {
    std::process::id()
}

/// Runs `f` on this process's registry (opened on first use); nothing in a
/// forked child, whose copy belongs to its parent.
fn with_registry(f: impl FnOnce(&mut Registry)) {
    let Ok(mut guard) = REGISTRY.lock() else {
        return;
    };
    let pid = this_pid();
    if let Some(r) = guard.as_ref()
        && r.pid != pid
    {
        return;
    }
    let registry = guard.get_or_insert_with(|| Registry {
        pid,
        file: open_file(pid),
        entries: Vec::new(),
    });
    f(registry)
}

/// The path of this process's registry file, after checking the directory;
/// on failure the one warning, and `None`.
fn open_file(pid: u32) -> Option<PathBuf> {
    let dir = registry_dir();
    let result = ensure_dir(&dir).and_then(|()| {
        let start = start_time(pid).ok_or_else(|| io::Error::other("no /proc/self/stat"))?;
        Ok(dir.join(
            Owner {
                pid,
                start_time: start,
            }
            .file_name(),
        ))
    });
    match result {
        Ok(path) => Some(path),
        Err(e) => {
            warn(&dir, &e);
            None
        }
    }
}

fn warn(dir: &Path, e: &io::Error) {
    crate::rt::stdio::note_line(&format!(
        "latscope: warning: cannot record this run's System V objects, test files and trace \
         instances in {} ({}); if latscope is killed, 'latscope cleanup' will not find what it \
         leaves (set {DIR_ENV} to a writable directory)",
        dir.display(),
        crate::rt::os_error_text(e)
    ));
}

impl Registry {
    /// Writes the whole registry (a new file renamed over the old one, so a
    /// kill in the middle leaves one or the other), or removes it when empty.
    fn store(&mut self) {
        let Some(path) = self.file.clone() else {
            return;
        };
        let result = if self.entries.is_empty() {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        } else {
            write_entries(&path, pid_namespace(), &self.entries)
        };
        if let Err(e) = result {
            self.file = None;
            warn(path.parent().unwrap_or(Path::new("/")), &e);
        }
    }
}

/// Writes `entries` as the registry file `path` (through `path.tmp`), after
/// a first line naming the PID namespace of their owner (`pid_ns`).
pub fn write_entries(path: &Path, pid_ns: Option<u64>, entries: &[Entry]) -> io::Result<()> {
    let mut text: String = pid_ns
        .map(|ns| format!("{NAMESPACE_FIELD}\t{ns}\n"))
        .unwrap_or_default();
    text.extend(entries.iter().map(Entry::line));
    write_new(path, &text)
}

/// Records an object this process just created (fully set up, so that its
/// fingerprint stays as it is now). Silent when it cannot be read: the
/// registry is a help for `cleanup`, never a reason for a run to fail.
pub fn record(kind: Kind, identity: &str) {
    let Ok(Some(fingerprint)) = fingerprint(kind, identity) else {
        return;
    };
    with_registry(|r| {
        r.entries.push(Entry {
            kind,
            identity: identity.to_string(),
            fingerprint,
        });
        r.store();
    });
}

/// Forgets objects this process removed (or keeps on purpose, as
/// `--keep`'s test files): one rewrite for all of them.
pub fn forget(kind: Kind, identities: &[&str]) {
    if identities.is_empty() {
        return;
    }
    with_registry(|r| {
        let before = r.entries.len();
        r.entries
            .retain(|e| !(e.kind == kind && identities.contains(&e.identity.as_str())));
        if r.entries.len() != before {
            r.store();
        }
    });
}

/// One registry file as `cleanup` reads it.
#[derive(Debug)]
pub struct RegistryFile {
    pub path: PathBuf,
    pub owner: Owner,
    /// The owner's PID namespace (`None`: a file of a latscope that did not
    /// record it, taken as this namespace's).
    pub pid_ns: Option<u64>,
    pub entries: Vec<Entry>,
}

impl RegistryFile {
    /// Written in another PID namespace (a container): its pid says nothing
    /// here, so neither its owner's state nor its objects can be judged.
    pub fn foreign(&self) -> bool {
        self.pid_ns.is_some() && self.pid_ns != pid_namespace()
    }
}

/// The PID namespace a registry file's text names on its first line.
fn namespace_of(text: &str) -> Option<u64> {
    let (field, value) = text.lines().next()?.split_once('\t')?;
    (field == NAMESPACE_FIELD).then(|| value.parse().ok())?
}

/// Every registry file in `dir` (none when the directory does not exist),
/// ordered by owner. Lines that do not parse are skipped: they describe
/// nothing `cleanup` could check.
pub fn read_all(dir: &Path) -> io::Result<Vec<RegistryFile>> {
    let listing = match fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for item in listing {
        let item = item?;
        let Some(owner) = Owner::from_file_name(&item.file_name()) else {
            continue;
        };
        let path = item.path();
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
            continue;
        }
        let text = fs::read(&path)?;
        let text = String::from_utf8_lossy(&text);
        files.push(RegistryFile {
            path,
            owner,
            pid_ns: namespace_of(&text),
            entries: text.lines().filter_map(Entry::parse).collect(),
        });
    }
    files.sort_by_key(|f| f.owner);
    Ok(files)
}

/// A file of the registry itself that a run which is gone left: `cleanup`
/// lists it and removes it like the objects it recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// A run's CPU note (`<pid>.<start time>.cpus`).
    CpuNote,
    /// A half-written registry file or CPU note (`....tmp`: a kill in the
    /// middle of a rewrite).
    HalfWritten,
    /// A registry file whose objects are all gone already.
    Registry,
}

impl NoteKind {
    /// As `cleanup` lists it.
    pub fn name(self) -> &'static str {
        match self {
            NoteKind::CpuNote => "cpu-note",
            NoteKind::HalfWritten => "registry-tmp",
            NoteKind::Registry => "registry-file",
        }
    }
}

/// A note a gone run left in the registry directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleNote {
    pub path: PathBuf,
    pub owner: Owner,
    pub kind: NoteKind,
}

/// Half-written registry files (`<pid>.<start time>.tmp`, a kill in the
/// middle of a rewrite) and CPU notes (`<pid>.<start time>.cpus`, and their
/// half-written `.cpus.tmp`) of processes of this PID namespace that are
/// gone, for `cleanup` to list and remove.
pub fn stale_notes(dir: &Path) -> Vec<StaleNote> {
    let Ok(listing) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut notes: Vec<StaleNote> = listing
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            let (rest, kind) = match name.strip_suffix(".tmp") {
                Some(rest) => (rest, NoteKind::HalfWritten),
                None => (name.strip_suffix(CPU_NOTE_SUFFIX)?, NoteKind::CpuNote),
            };
            let rest = rest.strip_suffix(CPU_NOTE_SUFFIX).unwrap_or(rest);
            let owner = Owner::from_file_name(OsStr::new(rest))?;
            let here = || {
                let text = fs::read(e.path()).unwrap_or_default();
                namespace_of(&String::from_utf8_lossy(&text))
                    .is_none_or(|ns| Some(ns) == pid_namespace())
            };
            (!owner_alive(owner) && here()).then(|| StaleNote {
                path: e.path(),
                owner,
                kind,
            })
        })
        .collect();
    notes.sort_by(|a, b| (a.owner, &a.path).cmp(&(b.owner, &b.path)));
    notes
}

/// Removes the recorded object `identity` of `kind` (not an idle state);
/// `cleanup` calls it once the object is known to be the one recorded by a
/// run that is gone.
pub fn remove_object(kind: Kind, identity: &str) -> io::Result<()> {
    let rc = match kind {
        Kind::SysvSem | Kind::SysvMsq => {
            let id: libc::c_int = identity.parse().map_err(|_| io::Error::other("bad id"))?;
            // SAFETY: IPC_RMID takes no buffer.
            unsafe {
                if kind == Kind::SysvSem {
                    libc::semctl(id, 0, libc::IPC_RMID)
                } else {
                    libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut())
                }
            }
        }
        Kind::File | Kind::Shm => return fs::remove_file(identity_path(identity)),
        Kind::Dir | Kind::TraceInstance => {
            return fs::remove_dir(identity_path(identity));
        }
        // Enabled again, not removed: rt::cpuidle::enable (which records
        // in this registry, so it is called from above both).
        Kind::IdleState => return Err(io::Error::other("an idle state is not removed")),
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The pid of a running latscope of this user that recorded `path` (an
/// object of `kind` it created and still holds), if any: a file another run
/// is using is not a leftover to remove.
pub fn running_owner_of(kind: Kind, path: &Path) -> Option<u32> {
    let identity = path_identity(&absolute(path)?)?;
    let now = fingerprint(kind, &identity).ok()??;
    read_all(&registry_dir())
        .ok()?
        .into_iter()
        .filter(|f| !f.foreign() && owner_alive(f.owner))
        .find(|f| {
            f.entries
                .iter()
                .any(|e| e.kind == kind && e.identity == identity && e.fingerprint == now)
        })
        .map(|f| f.owner.pid)
}

/// The suffix of a run's CPU note, beside its registry file.
const CPU_NOTE_SUFFIX: &str = ".cpus";

/// A run's CPU note, `<dir>/<pid>.<start time>.cpus`: the CPUs it measures
/// on, so that two runs of one user on the same CPU can tell each other
/// (each one's figures include the other's work). First line the PID
/// namespace, then `cpus<TAB>LIST`; a later run that finds it appends
/// `seen<TAB>PID<TAB>LIST` (the CPUs they share), so that this run learns of
/// a run that started and ended within it. Removed when the run ends (the
/// drop); `cleanup` lists and removes a killed run's (`stale_notes`).
pub struct CpuNote {
    path: Option<PathBuf>,
    pid: u32,
}

/// Another running latscope of this user on some of the same CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharingRun {
    pub pid: u32,
    /// The CPUs both measure on.
    pub cpus: Vec<usize>,
}

impl CpuNote {
    /// Writes this run's note and tells the runs already on these CPUs
    /// (nothing when `cpus` is empty or the registry directory is not safe
    /// to use: a help, never a reason to fail).
    pub fn announce(cpus: &[usize]) -> (CpuNote, Vec<SharingRun>) {
        let pid = this_pid();
        let mut note = CpuNote { path: None, pid };
        if cpus.is_empty() {
            return (note, Vec::new());
        }
        let dir = registry_dir();
        let Some(start) = start_time(pid) else {
            return (note, Vec::new());
        };
        let path = dir.join(format!(
            "{}{CPU_NOTE_SUFFIX}",
            Owner {
                pid,
                start_time: start
            }
            .file_name()
        ));
        let text = format!(
            "{}cpus\t{}\n",
            pid_namespace()
                .map(|ns| format!("{NAMESPACE_FIELD}\t{ns}\n"))
                .unwrap_or_default(),
            crate::units::cpu_list(cpus)
        );
        if ensure_dir(&dir).is_err() {
            return (note, Vec::new());
        }
        if write_new(&path, &text).is_ok() {
            note.path = Some(path);
        }
        let others = running_notes(&dir, pid, cpus);
        for (other_note, run) in &others {
            let seen = format!("seen\t{pid}\t{}\n", crate::units::cpu_list(&run.cpus));
            // O_APPEND: one small write, whole, beside the owner's reads.
            let _ = fs::OpenOptions::new()
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(other_note)
                .and_then(|mut f| f.write_all(seen.as_bytes()));
        }
        (note, others.into_iter().map(|(_, run)| run).collect())
    }

    /// The runs that shared a CPU with this one: those on `cpus` now, and
    /// those that found this run's note (they may have ended since).
    pub fn sharing_runs(&self, cpus: &[usize]) -> Vec<SharingRun> {
        let mut runs: Vec<SharingRun> = running_notes(&registry_dir(), self.pid, cpus)
            .into_iter()
            .map(|(_, run)| run)
            .collect();
        if let Some(path) = &self.path {
            let text = fs::read_to_string(path).unwrap_or_default();
            for line in text.lines() {
                let mut fields = line.split('\t');
                if fields.next() != Some("seen") {
                    continue;
                }
                let pid = fields.next().and_then(|p| p.parse().ok());
                let shared = fields.next().and_then(crate::units::parse_cpu_list);
                if let (Some(pid), Some(cpus)) = (pid, shared)
                    && !runs.iter().any(|r| r.pid == pid)
                {
                    runs.push(SharingRun { pid, cpus });
                }
            }
        }
        runs.sort_by_key(|r| r.pid);
        runs
    }
}

impl Drop for CpuNote {
    fn drop(&mut self) {
        if let Some(path) = &self.path
            && this_pid() == self.pid
        {
            let _ = fs::remove_file(path);
        }
    }
}

/// `path` holding `text`, written whole before its name appears (through
/// `path.tmp` and a rename: a kill in the middle leaves the old file or the
/// new one).
fn write_new(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    // Our own half-written file of an earlier write (the name is ours:
    // `<pid>.<start time>[.cpus].tmp` in a directory only we may write).
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    drop(f);
    fs::rename(&tmp, path)
}

/// The CPU notes in `dir` of running latscope processes of this PID
/// namespace other than `own_pid` that measure on any of `cpus`: each
/// note's path, and the run with the CPUs it shares.
fn running_notes(dir: &Path, own_pid: u32, cpus: &[usize]) -> Vec<(PathBuf, SharingRun)> {
    let Ok(listing) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for item in listing.filter_map(|e| e.ok()) {
        let name = item.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_suffix(CPU_NOTE_SUFFIX))
            .and_then(|n| Owner::from_file_name(OsStr::new(n)))
        else {
            continue;
        };
        if owner.pid == own_pid {
            continue;
        }
        let text = fs::read_to_string(item.path()).unwrap_or_default();
        if namespace_of(&text).is_some_and(|ns| Some(ns) != pid_namespace()) {
            continue;
        }
        if !owner_alive(owner) {
            // A killed run's note (kill -9 runs no drop): this user's
            // latscope wrote it, in this PID namespace, and its run is
            // gone, so it says nothing any more; removed here rather than
            // left for `cleanup`.
            let _ = fs::remove_file(item.path());
            continue;
        }
        let theirs = text
            .lines()
            .find_map(|l| l.strip_prefix("cpus\t"))
            .and_then(crate::units::parse_cpu_list)
            .unwrap_or_default();
        let shared: Vec<usize> = cpus
            .iter()
            .copied()
            .filter(|c| theirs.contains(c))
            .collect();
        if !shared.is_empty() {
            found.push((
                item.path(),
                SharingRun {
                    pid: owner.pid,
                    cpus: shared,
                },
            ));
        }
    }
    found.sort_by_key(|(_, run)| run.pid);
    found
}

/// The absolute path of `path` with its directories resolved, for the
/// registry (the name itself is not followed: it is ours).
pub fn absolute(path: &Path) -> Option<PathBuf> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let dir = fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
    Some(dir.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A note whose run is gone (pid 1 never had this start time) is
    /// removed by the next run that looks, and does not count as sharing.
    #[test]
    fn a_dead_runs_cpu_note_is_removed_by_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("1.1{CPU_NOTE_SUFFIX}"));
        fs::write(&dead, "cpus\t0-1\n").unwrap();
        let other = dir.path().join("notes.txt");
        fs::write(&other, "not a note\n").unwrap();
        assert!(running_notes(dir.path(), this_pid(), &[0]).is_empty());
        assert!(!dead.exists());
        assert!(other.exists());
    }

    #[test]
    fn lines_round_trip_with_odd_paths() {
        for identity in ["123", "/tmp/a b/log.0000", "/x/\ttab\nnew%line", "/ü"] {
            let e = Entry {
                kind: Kind::File,
                identity: identity.to_string(),
                fingerprint: "dev=1 ino=2 uid=0".to_string(),
            };
            let line = e.line();
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert_eq!(Entry::parse(line.trim_end_matches('\n')), Some(e));
        }
        for bad in [
            "",
            "file",
            "nothing\t1\tx",
            "file\t%G0\tx",
            "file\t/a\t",
            "sysv-sem\t1\tx\ty",
        ] {
            assert_eq!(Entry::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn owner_file_names() {
        let o = Owner {
            pid: 42,
            start_time: 12345,
        };
        assert_eq!(o.file_name(), "42.12345");
        assert_eq!(Owner::from_file_name(OsStr::new("42.12345")), Some(o));
        for bad in ["42", "42.", ".1", "42.1.tmp", "a.1", "42.12345.tmp"] {
            assert_eq!(Owner::from_file_name(OsStr::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let pid = this_pid();
        let start = start_time(pid).expect("own start time");
        assert!(owner_alive(Owner {
            pid,
            start_time: start
        }));
        assert!(!owner_alive(Owner {
            pid,
            start_time: start + 1
        }));
        // pid_max is at most 2^22: this pid cannot exist.
        assert_eq!(start_time(u32::MAX - 1), None);
    }

    #[test]
    fn fingerprints_tell_objects_apart_and_see_them_go() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        fs::write(&path, b"x").unwrap();
        let id = path.to_str().unwrap();
        let first = fingerprint(Kind::File, id).unwrap().unwrap();
        assert_eq!(fingerprint(Kind::File, id).unwrap().unwrap(), first);
        // A directory is not a file, and a new file with the name is another.
        assert_eq!(fingerprint(Kind::Dir, id).unwrap().unwrap(), "other-type");
        let keep = d.path().join("keep");
        fs::rename(&path, &keep).unwrap();
        fs::write(&path, b"x").unwrap();
        assert_ne!(fingerprint(Kind::File, id).unwrap().unwrap(), first);
        fs::remove_file(&path).unwrap();
        assert_eq!(fingerprint(Kind::File, id).unwrap(), None);
        // System V: a fresh set, then gone.
        // SAFETY: a private set this test removes.
        let sem = unsafe { libc::semget(libc::IPC_PRIVATE, 2, libc::IPC_CREAT | 0o600) };
        assert!(sem >= 0);
        let fp = fingerprint(Kind::SysvSem, &sem.to_string())
            .unwrap()
            .unwrap();
        assert!(fp.contains("mode=600 n=2"), "{fp}");
        // SAFETY: removing the set made above.
        unsafe { libc::semctl(sem, 0, libc::IPC_RMID) };
        assert_eq!(fingerprint(Kind::SysvSem, &sem.to_string()).unwrap(), None);
        assert!(fingerprint(Kind::SysvMsq, "x").is_err());
    }

    #[test]
    fn unsafe_directories_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let reg = d.path().join("reg");
        ensure_dir(&reg).unwrap();
        assert_eq!(fs::metadata(&reg).unwrap().mode() & 0o777, 0o700);
        let open = d.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(ensure_dir(&open).is_err());
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&reg, &link).unwrap();
        assert!(ensure_dir(&link).is_err());
    }

    #[test]
    fn written_files_read_back() {
        let d = tempfile::tempdir().unwrap();
        let owner = Owner {
            pid: 7,
            start_time: 99,
        };
        let entries = vec![
            Entry {
                kind: Kind::SysvMsq,
                identity: "5".into(),
                fingerprint: "key=0".into(),
            },
            Entry {
                kind: Kind::Dir,
                identity: "/a/b".into(),
                fingerprint: "dev=1 ino=2 uid=3".into(),
            },
        ];
        write_entries(&d.path().join(owner.file_name()), pid_namespace(), &entries).unwrap();
        fs::write(d.path().join("junk"), "x").unwrap();
        // A half-written file of a process that is gone is stale; one of this
        // process is not.
        fs::write(d.path().join("7.99.tmp"), "x").unwrap();
        let mine = format!("{}.{}.tmp", this_pid(), start_time(this_pid()).unwrap());
        fs::write(d.path().join(&mine), "x").unwrap();
        fs::write(d.path().join("7.99.cpus"), "cpus\t0\n").unwrap();
        fs::write(d.path().join("7.99.cpus.tmp"), "x").unwrap();
        let mine_cpus = format!("{}.{}.cpus", this_pid(), start_time(this_pid()).unwrap());
        fs::write(d.path().join(&mine_cpus), "cpus\t0\n").unwrap();
        let stale: Vec<(PathBuf, NoteKind)> = stale_notes(d.path())
            .into_iter()
            .map(|n| (n.path, n.kind))
            .collect();
        assert_eq!(
            stale,
            vec![
                (d.path().join("7.99.cpus"), NoteKind::CpuNote),
                (d.path().join("7.99.cpus.tmp"), NoteKind::HalfWritten),
                (d.path().join("7.99.tmp"), NoteKind::HalfWritten),
            ]
        );
        let all = read_all(d.path()).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].owner, owner);
        assert_eq!(all[0].entries, entries);
        assert_eq!(all[0].pid_ns, pid_namespace());
        assert!(!all[0].foreign());
        assert!(read_all(&d.path().join("missing")).unwrap().is_empty());
    }
}
