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
        match request(0) {
            Ok(f) => DmaLatency::Held(f),
            Err(RequestFailed::Stat(e) | RequestFailed::Open(e) | RequestFailed::Write(e)) => {
                DmaLatency::Unavailable(format!("{PATH}: {e}"))
            }
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

/// Which step of a `request` failed, with the system's error: cyclictest
/// names each in its own words.
#[derive(Debug)]
pub enum RequestFailed {
    /// The device is not there (or cannot be looked at).
    Stat(std::io::Error),
    Open(std::io::Error),
    Write(std::io::Error),
}

/// Asks for at most `us` microseconds of idle-state exit latency, as
/// cyclictest's `set_latency_target` does (stat, open read-write, write the
/// 32-bit value): the limit holds while the returned file is open.
pub fn request(us: i32) -> Result<File, RequestFailed> {
    std::fs::metadata(PATH).map_err(RequestFailed::Stat)?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(PATH)
        .map_err(RequestFailed::Open)?;
    file.write_all(&us.to_ne_bytes())
        .map_err(RequestFailed::Write)?;
    Ok(file)
}
