//! The kernel tracer's "break trace": when a latency limit is crossed (or a
//! new maximum is seen, the timer's `-f`), write a marker into the trace
//! buffer and stop tracing so the events that led to the spike stay in the
//! buffer. Files are opened before measuring starts.

use super::mount;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

pub struct BreakTrace {
    tracing_on: File,
    marker: Option<File>,
    pub dir: PathBuf,
}

impl BreakTrace {
    /// Opens tracefs (mounting it when missing and we are root), or explains
    /// why it cannot be used.
    pub fn open() -> Result<BreakTrace, String> {
        let dir = mount::find_or_mount()?;
        let on = dir.join("tracing_on");
        let tracing_on = OpenOptions::new()
            .write(true)
            .open(&on)
            .map_err(|e| format!("cannot open {}: {e}; run as root", on.display()))?;
        let marker = OpenOptions::new()
            .write(true)
            .open(dir.join("trace_marker"))
            .ok();
        Ok(BreakTrace {
            tracing_on,
            marker,
            dir,
        })
    }

    /// Writes `message` into the trace (`trace_marker`): one write, no
    /// allocation, so a measuring thread may call it.
    pub fn mark(&mut self, message: &[u8]) {
        if let Some(marker) = self.marker.as_mut() {
            let _ = marker.write_all(message);
        }
    }

    /// Stops the tracer (`tracing_on` = 0): one write, no allocation.
    pub fn stop(&mut self) {
        let _ = self.tracing_on.write_all(b"0");
    }

    /// Marks the trace and stops the tracer. Called once, from the measuring
    /// thread that saw the sample.
    pub fn fire(&mut self, message: &[u8]) {
        self.mark(message);
        self.stop();
    }
}
