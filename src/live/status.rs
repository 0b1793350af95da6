//! The one status line every modern live display draws: on a terminal's
//! standard error, redrawn in place, erased before the results are printed.

use std::io::{IsTerminal, Write};

pub struct StatusLine {
    enabled: bool,
    printed: bool,
    until_stopped: bool,
}

/// What a status line of a run with no end of its own (no duration, no
/// loop count) ends with: how to end it, and that the results are kept.
pub const HOW_TO_STOP: &str = " | Ctrl-C: stop and report";

impl StatusLine {
    /// Drawn only when not `quiet` and standard error is a terminal, so that
    /// captured or redirected output never holds it.
    pub fn new(quiet: bool) -> StatusLine {
        StatusLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            printed: false,
            until_stopped: false,
        }
    }

    /// The run has no end of its own: every line says how to stop it.
    pub fn set_until_stopped(&mut self, until_stopped: bool) {
        self.until_stopped = until_stopped;
    }

    /// Whether `show` draws anything (callers skip building the text when not).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Replaces the line with `text` (no newline: the next `show` overwrites it).
    pub fn show(&mut self, text: &str) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let hint = if self.until_stopped { HOW_TO_STOP } else { "" };
        let _ = write!(err, "\r\x1b[2K{text}{hint}");
        let _ = err.flush();
        self.printed = true;
    }

    /// Erases the line if one was drawn (the cursor is left at its start).
    pub fn clear(&mut self) {
        if self.printed {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.printed = false;
        }
    }
}
