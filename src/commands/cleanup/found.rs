//! What `latscope cleanup` found and did: one line of its output per object.

use crate::rt::registry::Kind;

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
    pub(super) fn label(&self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Action::Removed, Kind::IdleState) => "restored",
            (Action::WouldRemove, Kind::IdleState) => "would restore",
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

/// One line of the output.
pub(super) struct Found {
    pub(super) kind: Kind,
    pub(super) identity: String,
    pub(super) owner: String,
    pub(super) action: Action,
}

impl Found {
    pub(super) fn line(&self) -> String {
        format!(
            "{:<12} {:<16} {}  ({}){}",
            self.action.label(self.kind),
            self.kind.name(),
            self.identity,
            self.owner,
            self.action.note()
        )
    }
}
