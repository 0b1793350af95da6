//! Why spike tracing did not start or save: one typed error whose
//! `Display` is the line the user sees.

use crate::probes::ProbeError;
use crate::probes::choice::CannotCollect;

#[derive(Debug, thiserror::Error)]
pub enum SpikeError {
    /// tracefs refused (not root, an event missing, a write failed): the
    /// tracefs layer's own line.
    #[error("{0}")]
    Tracing(String),
    /// `--collector bpf` where BPF collection cannot run.
    #[error(transparent)]
    Collector(#[from] CannotCollect),
    /// The flight recorder's programs did not start.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error("no measuring task to trace")]
    NoTask,
    /// What an option needs, and why it cannot have it here.
    #[error("{need}: {why}")]
    Needs {
        need: &'static str,
        why: Box<SpikeError>,
    },
    #[error("cannot write {path}: {why}")]
    Write { path: String, why: std::io::Error },
}

impl From<String> for SpikeError {
    fn from(why: String) -> SpikeError {
        SpikeError::Tracing(why)
    }
}

/// For callers that still speak in lines.
impl From<SpikeError> for String {
    fn from(e: SpikeError) -> String {
        e.to_string()
    }
}
