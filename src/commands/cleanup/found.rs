//! What `latscope cleanup` found and did: one line of its output per object.

use crate::rt::registry::{Kind, NoteKind};

/// What happened to one object found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
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
    pub(super) fn label(&self, kind: Thing) -> &'static str {
        match (self, kind) {
            (Action::Removed, IDLE_STATE) => "restored",
            (Action::WouldRemove, IDLE_STATE) => "would restore",
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
pub(super) enum Thing {
    Object(Kind),
    Note(NoteKind),
}

/// An idle state is enabled again, not removed: labelled and counted apart.
pub(super) const IDLE_STATE: Thing = Thing::Object(Kind::IdleState);

/// One line of the output.
pub(super) struct Found {
    pub(super) kind: Thing,
    pub(super) identity: String,
    pub(super) owner: String,
    pub(super) action: Action,
}

impl Found {
    pub(super) fn line(&self) -> String {
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

/// A note a gone run left in the registry: listed, removed unless a dry run.
pub(super) fn note_found(
    path: &std::path::Path,
    owner: crate::rt::registry::Owner,
    kind: NoteKind,
    dry_run: bool,
) -> Found {
    let action = if dry_run {
        Action::WouldRemove
    } else {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
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
