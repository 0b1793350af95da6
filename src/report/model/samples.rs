//! `--samples FILE`: where every raw sample went, and what did not get there.

use serde::{Deserialize, Serialize};

/// The samples file of a run (docs/samples.md): its path and size, and per
/// series how many samples it holds, lost in a full ring (`dropped`) or left
/// out past `--samples-limit` or after a write error (`not_written`). The
/// series' samples in the report = written + dropped + not_written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplesFile {
    pub path: String,
    pub limit_bytes: u64,
    /// The file's size (header, records, trailer).
    pub bytes: u64,
    pub limit_reached: bool,
    /// A write error that ended the file early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub series: Vec<SamplesSeries>,
}

/// One series of the samples file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplesSeries {
    /// The series id in the file (the CSV's `series` column).
    pub id: u32,
    /// Index into the report's `tests` (None: a test that is not in it).
    pub test: Option<usize>,
    /// Index into that test's `series`.
    pub series: usize,
    pub label: String,
    pub cpu: Option<usize>,
    pub written: u64,
    pub dropped: u64,
    pub not_written: u64,
}
