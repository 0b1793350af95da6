//! `/dev/cpu_dma_latency`: while the file is held open with 0 written to it, the
//! kernel keeps CPUs out of deep idle states whose exit latency would be
//! measured as wake-up latency. Closing it (drop) restores the default.

use std::fs::{File, OpenOptions};
use std::io::Write;

pub const PATH: &str = "/dev/cpu_dma_latency";

/// What happened when we asked for zero exit latency, for the report.
pub enum DmaLatency {
    Held(#[allow(dead_code)] File),
    Unavailable(String),
    NotRequested,
}

impl DmaLatency {
    pub fn request_zero() -> DmaLatency {
        let attempt = OpenOptions::new().write(true).open(PATH).and_then(|mut f| {
            f.write_all(&0i32.to_ne_bytes())?;
            Ok(f)
        });
        match attempt {
            Ok(f) => DmaLatency::Held(f),
            Err(e) => DmaLatency::Unavailable(format!("{PATH}: {e}")),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            DmaLatency::Held(_) => "held at 0 us".to_string(),
            DmaLatency::Unavailable(why) => format!("not set ({why})"),
            DmaLatency::NotRequested => "not requested".to_string(),
        }
    }
}
