//! `latscope cleanup`: finds what latscope processes that are gone left
//! behind (a SIGKILL runs no destructor) and removes it.
//!
//! What is latscope's, and whose, comes from the ownership registry
//! (`rt::registry`): an object is removed only when the process that
//! recorded it is gone (pid and start time) and the object still has the
//! fingerprint recorded at its creation, so an id or a name that another
//! program got since is never touched. Test files and directories are
//! removed only under a `--dir` the user names. Tracefs instances are also
//! found by name (`latscope-<pid>-<n>`), for runs whose registry could not be
//! written: such an instance is removed only when no process has that pid.
//!
//! When in doubt an object is left, with the reason: a file on a filesystem
//! that keeps no birth time (a newer file may have its inode), a tracefs
//! instance whose pid a running process now has, and everything a registry
//! of another PID namespace (a container sharing the directory) records.

use crate::cli::CleanupArgs;
use crate::pipeline::CommandError;
use crate::rt::registry::{self, Entry, Kind, RegistryFile};
use crate::rt::tracefs::{instance, mount};
use crate::settings::cleanup::CleanupSettings;
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What happened to one object found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Removed,
    WouldRemove,
    /// Left in place, and why.
    Kept(String),
    /// Another program's object now has the recorded id or name.
    NotOurs,
    Failed(String),
}

impl Action {
    /// What the action is called for an object of `kind` (an idle state is
    /// enabled again, not removed).
    fn label(&self, kind: Thing) -> &'static str {
        const IDLE: Thing = Thing::Object(Kind::IdleState);
        match (self, kind) {
            (Action::Removed, IDLE) => "restored",
            (Action::WouldRemove, IDLE) => "would restore",
            _ => self.plain_label(),
        }
    }

    fn plain_label(&self) -> &'static str {
        match self {
            Action::Removed => "removed",
            Action::WouldRemove => "would remove",
            Action::Kept(_) => "kept",
            Action::NotOurs => "left alone",
            Action::Failed(_) => "FAILED",
        }
    }

    fn note(&self) -> String {
        match self {
            Action::Kept(why) | Action::Failed(why) => format!(": {why}"),
            Action::NotOurs => {
                ": the id or name now belongs to another object (not latscope's)".to_string()
            }
            _ => String::new(),
        }
    }
}

/// What a line is about: a recorded object, or a note of the registry itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thing {
    Object(Kind),
    Note(registry::NoteKind),
}

/// One line of the output.
struct Found {
    kind: Thing,
    identity: String,
    owner: String,
    action: Action,
}

impl Found {
    fn line(&self) -> String {
        format!(
            "{:<12} {:<16} {}  ({}){}",
            self.action.label(self.kind),
            match self.kind {
                Thing::Object(kind) => kind.name(),
                Thing::Note(kind) => kind.name(),
            },
            crate::units::escape_line(&self.identity),
            self.owner,
            self.action.note()
        )
    }
}

pub fn run(args: &CleanupArgs) -> Result<i32, CommandError> {
    let settings = CleanupSettings::from_args(args)?;
    let dir = registry::registry_dir();
    if dir.exists() {
        registry::check_dir(&dir).map_err(|e| {
            CommandError::Runtime(format!(
                "the registry directory {} is not safe to read ({e}); remove it",
                dir.display()
            ))
        })?;
    }
    let registries = registry::read_all(&dir).map_err(|e| {
        CommandError::Runtime(format!(
            "cannot read the registry directory {}: {}",
            dir.display(),
            crate::rt::os_error_text(&e)
        ))
    })?;
    let mut found = Vec::new();
    for file in &registries {
        found.extend(clean_registry(file, &settings));
    }
    let registered: HashSet<&str> = registries
        .iter()
        .flat_map(|f| &f.entries)
        .filter(|e| e.kind == Kind::TraceInstance)
        .map(|e| e.identity.as_str())
        .collect();
    if let Some(tracefs) = mount::find() {
        found.extend(unregistered_instances(
            &tracefs.join("instances"),
            &registered,
            settings.dry_run,
        ));
    }
    found.extend(
        registry::stale_notes(&dir)
            .into_iter()
            .map(|note| note_found(&note.path, note.owner, note.kind, settings.dry_run)),
    );
    for f in &found {
        let _ = writeln!(crate::rt::stdio::out(), "{}", f.line());
    }
    let count = |pred: fn(&Found) -> bool| found.iter().filter(|f| pred(f)).count();
    fn done(f: &Found) -> bool {
        matches!(f.action, Action::Removed | Action::WouldRemove)
    }
    const IDLE: Thing = Thing::Object(Kind::IdleState);
    let removed = count(|f| done(f) && f.kind != IDLE);
    // An idle state is enabled again, not removed: counted apart.
    let restored = match count(|f| done(f) && f.kind == IDLE) {
        0 => String::new(),
        n if settings.dry_run => format!(", {n} would be restored"),
        n => format!(", {n} restored"),
    };
    let kept = count(|f| matches!(f.action, Action::Kept(_) | Action::NotOurs));
    let failed = count(|f| matches!(f.action, Action::Failed(_)));
    if found.is_empty() {
        let _ = writeln!(
            crate::rt::stdio::out(),
            "Nothing left behind by latscope (registry {}).",
            dir.display()
        );
    } else if settings.dry_run {
        let _ = writeln!(
            crate::rt::stdio::out(),
            "{removed} would be removed{restored}, {kept} kept; dry run: nothing was changed."
        );
    } else {
        let _ = writeln!(
            crate::rt::stdio::out(),
            "{removed} removed{restored}, {kept} kept, {failed} failed."
        );
    }
    if failed > 0 {
        return Err(CommandError::Runtime(format!(
            "{failed} object(s) could not be removed (see the FAILED lines); run as their owner or root"
        )));
    }
    Ok(crate::pipeline::EXIT_OK)
}

/// The objects of one registry file: kept while its owner runs, else
/// removed when still the recorded ones; the file is then rewritten with
/// what is left, or removed.
fn clean_registry(file: &RegistryFile, settings: &CleanupSettings) -> Vec<Found> {
    if file.foreign() {
        return left_to_its_namespace(file);
    }
    let alive = registry::owner_alive(file.owner);
    let owner = format!(
        "latscope pid {}, {}",
        file.owner.pid,
        if alive { "running" } else { "ended" }
    );
    // Files before the directories that hold them.
    let mut entries: Vec<&Entry> = file.entries.iter().collect();
    entries.sort_by_key(|e| e.kind);
    let mut found = Vec::new();
    let mut remaining: Vec<Entry> = Vec::new();
    for entry in entries {
        let action = match registry::fingerprint(entry.kind, &entry.identity) {
            // Already gone: nothing to say, nothing to keep.
            Ok(None) => continue,
            Err(e) => Action::Failed(format!(
                "cannot inspect it: {}",
                crate::rt::os_error_text(&e)
            )),
            Ok(Some(now)) if now != entry.fingerprint => Action::NotOurs,
            Ok(Some(_)) if alive => Action::Kept("its latscope is still running".to_string()),
            Ok(Some(now)) if registry::fingerprint_uncertain(entry.kind, &now) => Action::Kept(
                "this filesystem keeps no birth time, so a newer file may have its inode: remove it yourself if it is latscope's".to_string(),
            ),
            Ok(Some(_)) if pid_in_name_in_use(entry) => Action::Kept(
                "a running process now has the pid in its name: it may be that process's".to_string(),
            ),
            Ok(Some(_)) => decide(entry, settings),
        };
        if matches!(
            action,
            Action::Kept(_) | Action::Failed(_) | Action::WouldRemove
        ) {
            remaining.push(entry.clone());
        }
        found.push(Found {
            kind: Thing::Object(entry.kind),
            identity: entry.identity.clone(),
            owner: owner.clone(),
            action,
        });
    }
    if !alive && remaining.is_empty() && found.is_empty() {
        // All the run left is its registry file: listed, as any note.
        found.push(note_found(
            &file.path,
            file.owner,
            registry::NoteKind::Registry,
            settings.dry_run,
        ));
    } else if !alive && !settings.dry_run {
        let result = if remaining.is_empty() {
            std::fs::remove_file(&file.path)
        } else {
            registry::write_entries(&file.path, file.pid_ns, &remaining)
        };
        if let Err(e) = result {
            eprintln!(
                "latscope: warning: could not update the registry file {}: {}",
                crate::units::escape_line(&file.path.to_string_lossy()),
                crate::rt::os_error_text(&e)
            );
        }
    }
    found
}

/// A note a gone run left in the registry: listed, removed unless a dry run.
fn note_found(
    path: &Path,
    owner: registry::Owner,
    kind: registry::NoteKind,
    dry_run: bool,
) -> Found {
    let action = if dry_run {
        Action::WouldRemove
    } else {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Action::Failed(crate::rt::os_error_text(&e))
            }
            _ => Action::Removed,
        }
    };
    Found {
        kind: Thing::Note(kind),
        identity: path.to_string_lossy().into_owned(),
        owner: format!("latscope pid {}, ended", owner.pid),
        action,
    }
}

/// The objects of a registry written in another PID namespace: listed, left
/// alone (its pids mean nothing here), and the file kept for a cleanup run
/// there.
fn left_to_its_namespace(file: &RegistryFile) -> Vec<Found> {
    file.entries
        .iter()
        .map(|entry| Found {
            kind: Thing::Object(entry.kind),
            identity: entry.identity.clone(),
            owner: format!("latscope pid {} of another PID namespace", file.owner.pid),
            action: Action::Kept(
                "recorded in another PID namespace (a container?): run latscope cleanup there"
                    .to_string(),
            ),
        })
        .collect()
}

/// A tracefs instance and the cyclictest drop-in's shared-memory object are
/// named after their creator's pid: when a process with that pid runs now
/// (a later latscope, or rt-tests' cyclictest, may have made one of the
/// same name), the object is not judged a leftover.
fn pid_in_name_in_use(entry: &Entry) -> bool {
    let path = registry::identity_path(&entry.identity);
    let pid = match entry.kind {
        Kind::TraceInstance => path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(instance::parse_owner),
        Kind::Shm => crate::live::cyclictest_status::status_object_pid(&path),
        _ => None,
    };
    pid.is_some_and(|pid| registry::start_time(pid).is_some())
}

/// A recorded object of an ended run, still the one recorded: removed (or
/// would be), unless it is a file outside every `--dir`.
fn decide(entry: &Entry, settings: &CleanupSettings) -> Action {
    let path = registry::identity_path(&entry.identity);
    if matches!(entry.kind, Kind::File | Kind::Dir)
        && !settings.dirs.iter().any(|d| path.starts_with(d))
    {
        let parent = path.parent().unwrap_or(Path::new("/"));
        return Action::Kept(format!(
            "not under a --dir; pass --dir {} to remove it",
            parent.display()
        ));
    }
    if settings.dry_run {
        return Action::WouldRemove;
    }
    let done = match entry.kind {
        Kind::IdleState => crate::rt::cpuidle::enable(&path),
        kind => registry::remove_object(kind, &entry.identity),
    };
    match done {
        Ok(()) => Action::Removed,
        Err(e) if entry.kind == Kind::Dir && e.raw_os_error() == Some(libc::ENOTEMPTY) => {
            Action::Kept("not empty: it holds files latscope did not record".to_string())
        }
        Err(e) => Action::Failed(crate::rt::os_error_text(&e)),
    }
}

/// Instances named `latscope-<pid>-<n>` that no registry holds (their run
/// could not write one): removed when no process has that pid.
fn unregistered_instances(
    instances: &Path,
    registered: &HashSet<&str>,
    dry_run: bool,
) -> Vec<Found> {
    let Ok(listing) = std::fs::read_dir(instances) else {
        return Vec::new();
    };
    let mut names: Vec<(String, u32)> = listing
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let pid = instance::parse_owner(&name)?;
            Some((name, pid))
        })
        .collect();
    names.sort();
    let mut found = Vec::new();
    for (name, pid) in names {
        let path: PathBuf = instances.join(&name);
        let identity = path.display().to_string();
        if registered.contains(identity.as_str()) {
            continue;
        }
        // Its process runs (latscope or not, the name cannot say): in use,
        // not a leftover; nothing to list.
        if registry::start_time(pid).is_some() {
            continue;
        }
        let action = if dry_run {
            Action::WouldRemove
        } else {
            match registry::remove_object(Kind::TraceInstance, &identity) {
                Ok(()) => Action::Removed,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => Action::Failed(crate::rt::os_error_text(&e)),
            }
        };
        found.push(Found {
            kind: Thing::Object(Kind::TraceInstance),
            identity,
            owner: format!("latscope pid {pid}, ended"),
            action,
        });
    }
    found
}
