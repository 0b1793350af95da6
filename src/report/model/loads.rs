//! What ran as a `--load` generator, as a report records it; `load/` starts
//! the generators and fills these records.

use serde::{Deserialize, Serialize};

/// What ran as a load, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    /// The `--load` items this generator ran (`cpu:2,vm:1`, `hackbench`).
    pub spec: String,
    pub command_line: Vec<String>,
    /// The generator's own version line.
    pub version: String,
    pub pid: i32,
    /// The CPUs it was confined to (the measured CPUs; for `kcompile`, the
    /// others).
    pub cpus: Vec<usize>,
    /// How it ended (`exit code 0`, `signal 15`); None while it runs.
    pub exit_status: Option<String>,
    /// The signal latscope stopped it with (`SIGTERM`, `SIGKILL` when it did
    /// not stop in time); None when it ended by itself.
    pub stopped_with: Option<String>,
    /// It ended before the measurement did: part of the run had no load.
    pub ended_early: bool,
}

impl LoadRecord {
    /// One line for the console.
    pub fn describe(&self) -> String {
        let cpus: Vec<String> = self.cpus.iter().map(usize::to_string).collect();
        format!(
            "{} ({}) on CPU {} at normal priority",
            self.command_line.join(" "),
            self.version,
            cpus.join(",")
        )
    }

    /// The warning a load that ended during the run calls for.
    pub fn early_end_warning(&self, last_output: &str) -> Option<String> {
        if !self.ended_early {
            return None;
        }
        let output = if last_output.is_empty() {
            String::new()
        } else {
            format!("; its last output: {last_output}")
        };
        Some(format!(
            "load {} ended during the run ({}): part of the run was measured without it{output}",
            self.spec,
            self.exit_status.as_deref().unwrap_or("ended")
        ))
    }
}
