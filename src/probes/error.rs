//! Why a program of this home was not generated, loaded or attached: one
//! typed error for every family, whose `Display` is the one line a user
//! sees (`collector: tracefs (bpf: ...)`, `--collector bpf: ...`).

use crate::rt::bpf::{AsmError, LoadError};
use std::io;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A generator's bug (a label never bound, a jump too far).
    #[error(transparent)]
    Asm(#[from] AsmError),
    /// What the kernel describes could not be read: its BTF, a tracefs
    /// `format` file, a tracepoint's id (the reader's own line).
    #[error("{0}")]
    Kernel(String),
    /// A tracepoint whose prototype is not the one the programs assume.
    #[error("the tracepoint {event} has arguments the {family} does not expect")]
    Arguments { event: String, family: &'static str },
    /// A record field or structure member the programs cannot load.
    #[error("field {field} {problem}")]
    Field { field: String, problem: String },
    /// No program of the family for this event.
    #[error("the {family} has no program for {event}")]
    NoProgram { event: String, family: &'static str },
    /// This way of attaching cannot serve the program (e.g. the classic
    /// `hrtimer_expire_entry` record has no soft expiry).
    #[error("{0}")]
    Unsuited(&'static str),
    /// The verifier refused the program: its whole log and the listing are
    /// in one file (`rt::bpf::refusal`), named here.
    #[error("the verifier refused latscope_{program}: {last} ({saved})")]
    Refused {
        program: String,
        /// The log's last line, the verifier's verdict.
        last: String,
        /// `verifier log and listing in PATH`, or why it was not written.
        saved: String,
    },
    /// Loading failed otherwise (not permitted, ...).
    #[error("cannot load latscope_{program}: {source}")]
    Load { program: String, source: LoadError },
    #[error("cannot attach to {event}: {}", crate::rt::os_error_text(.source))]
    Attach { event: String, source: io::Error },
    /// A system call around the programs (a map, its mapping, a thread).
    #[error("{what}: {}", crate::rt::os_error_text(.source))]
    System { what: String, source: io::Error },
    /// tracefs could not serve a trace (not mounted, an event missing, an
    /// instance file refused): the tracefs layer's own line.
    #[error("{0}")]
    Tracefs(String),
    /// A list of threads to trace that no trace can follow (a caller's bug).
    #[error("{0}")]
    Threads(String),
    /// A CPU the map has no entry for.
    #[error("CPU {0} is not a possible CPU")]
    NotPossibleCpu(usize),
}

/// The readers of what the kernel describes (BTF, tracefs `format` files)
/// give their one line as text.
impl From<String> for ProbeError {
    fn from(why: String) -> ProbeError {
        ProbeError::Kernel(why)
    }
}

impl From<crate::rt::bpf::btf::BtfError> for ProbeError {
    fn from(why: crate::rt::bpf::btf::BtfError) -> ProbeError {
        ProbeError::Kernel(why.0)
    }
}

impl ProbeError {
    pub fn kernel(why: impl std::fmt::Display) -> ProbeError {
        ProbeError::Kernel(why.to_string())
    }

    pub fn system(what: impl Into<String>, source: io::Error) -> ProbeError {
        ProbeError::System {
            what: what.into(),
            source,
        }
    }
}
