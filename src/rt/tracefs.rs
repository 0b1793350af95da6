//! The kernel tracer's "break trace": when a latency limit is crossed, write a
//! marker into the trace buffer and stop tracing so the events that led to the
//! spike stay in the buffer. Files are opened before measuring starts.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

pub struct BreakTrace {
    tracing_on: File,
    marker: Option<File>,
    pub dir: PathBuf,
}

impl BreakTrace {
    /// Opens tracefs, or explains why it cannot be used.
    pub fn open() -> Result<BreakTrace, String> {
        for dir in MOUNT_POINTS.iter().map(Path::new) {
            let on = dir.join("tracing_on");
            if let Ok(tracing_on) = OpenOptions::new().write(true).open(&on) {
                let marker = OpenOptions::new()
                    .write(true)
                    .open(dir.join("trace_marker"))
                    .ok();
                return Ok(BreakTrace {
                    tracing_on,
                    marker,
                    dir: dir.to_path_buf(),
                });
            }
        }
        Err(format!(
            "tracefs is not mounted (looked in {}); mount it with 'mount -t tracefs nodev /sys/kernel/tracing'",
            MOUNT_POINTS.join(", ")
        ))
    }

    /// Marks the trace and stops the tracer. Called once, from the measuring
    /// thread that saw the sample: two small writes, no allocation.
    pub fn fire(&mut self, message: &[u8]) {
        if let Some(marker) = self.marker.as_mut() {
            let _ = marker.write_all(message);
        }
        let _ = self.tracing_on.write_all(b"0");
    }
}
