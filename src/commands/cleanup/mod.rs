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

mod found;
mod registered;
mod removal;

use crate::cli::CleanupArgs;
use crate::pipeline::CommandError;
use crate::rt::registry::{self, Kind};
use crate::rt::tracefs::mount;
use crate::settings::cleanup::CleanupSettings;
use found::{Action, Found, IDLE_STATE};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

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
        found.extend(registered::clean_registry(file, &settings));
    }
    let registered: HashSet<&str> = registries
        .iter()
        .flat_map(|f| &f.entries)
        .filter(|e| e.kind == Kind::TraceInstance)
        .map(|e| e.identity.as_str())
        .collect();
    if let Some(tracefs) = mount::find() {
        found.extend(removal::unregistered_instances(
            &tracefs.join("instances"),
            &registered,
            settings.dry_run,
        ));
    }
    found.extend(
        registry::stale_notes(&dir)
            .into_iter()
            .map(|note| found::note_found(&note.path, note.owner, note.kind, settings.dry_run)),
    );
    tell(&found, settings.dry_run, &dir)
}

/// Prints a line per object found and the counts; fails when one could not
/// be removed.
fn tell(found: &[Found], dry_run: bool, dir: &Path) -> Result<i32, CommandError> {
    for f in found {
        let _ = writeln!(crate::rt::stdio::out(), "{}", f.line());
    }
    let count = |pred: fn(&Found) -> bool| found.iter().filter(|f| pred(f)).count();
    fn done(f: &Found) -> bool {
        matches!(f.action, Action::Removed | Action::WouldRemove)
    }
    let removed = count(|f| done(f) && f.kind != IDLE_STATE);
    // An idle state is enabled again, not removed: counted apart.
    let restored = match count(|f| done(f) && f.kind == IDLE_STATE) {
        0 => String::new(),
        n if dry_run => format!(", {n} would be restored"),
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
    } else if dry_run {
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
