//! Removing one leftover object, and the tracefs instances no registry
//! holds (found by name).

use super::found::{Action, Found, Thing};
use crate::rt::registry::{self, Kind};
use crate::rt::tracefs::instance;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

/// Removes the object `identity` of `kind` (an idle state is enabled again:
/// rt::cpuidle records in the registry, so it is called from above both).
pub(super) fn remove(kind: Kind, identity: &str) -> io::Result<()> {
    match kind {
        Kind::IdleState => crate::rt::cpuidle::enable(&registry::identity_path(identity)),
        kind => registry::remove_object(kind, identity),
    }
}

/// Instances named `latscope-<pid>-<n>` that no registry holds (their run
/// could not write one): removed when no process has that pid.
pub(super) fn unregistered_instances(
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
            match remove(Kind::TraceInstance, &identity) {
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
