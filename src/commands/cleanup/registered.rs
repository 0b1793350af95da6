//! The objects the ownership registry records: each kept, left alone or
//! removed, as the module doc of `cleanup` says.

use super::found::{Action, Found, Thing, note_found};
use super::removal::remove;
use crate::rt::registry::{self, Entry, Kind, RegistryFile};
use crate::rt::tracefs::instance;
use crate::settings::cleanup::CleanupSettings;
use std::path::Path;

/// The objects of one registry file: kept while its owner runs, else
/// removed when still the recorded ones; the file is then rewritten with
/// what is left, or removed.
pub(super) fn clean_registry(file: &RegistryFile, settings: &CleanupSettings) -> Vec<Found> {
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
    if matches!(entry.kind, Kind::File | Kind::Dir)
        && !settings
            .dirs
            .iter()
            .any(|d| registry::identity_path(&entry.identity).starts_with(d))
    {
        let path = registry::identity_path(&entry.identity);
        let parent = path.parent().unwrap_or(Path::new("/"));
        return Action::Kept(format!(
            "not under a --dir; pass --dir {} to remove it",
            parent.display()
        ));
    }
    if settings.dry_run {
        return Action::WouldRemove;
    }
    match remove(entry.kind, &entry.identity) {
        Ok(()) => Action::Removed,
        Err(e) if entry.kind == Kind::Dir && e.raw_os_error() == Some(libc::ENOTEMPTY) => {
            Action::Kept("not empty: it holds files latscope did not record".to_string())
        }
        Err(e) => Action::Failed(crate::rt::os_error_text(&e)),
    }
}
