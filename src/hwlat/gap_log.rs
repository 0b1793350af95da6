//! `--gaps FILE`: every gap of the run with its class and cause, one CSV
//! row each (`cpu,window,monotonic_ns,inner_ns,outer_ns,class,cause`), so
//! that a gap can be found by its time: the provoked-classification tests
//! match gaps to what they did, by time and identity, never by rank.
//!
//! Kept in memory (40 bytes a gap, causes by index) up to `MAX_GAPS` per
//! CPU, and written at the end; beyond, gaps are counted, not kept.

use super::classify::GapClass;
use super::protocol::Gap;
use std::collections::HashMap;
use std::path::Path;

/// Gaps kept per CPU (40 MB).
pub const MAX_GAPS: usize = 1_000_000;

/// One gap: its window, where it started (CLOCK_MONOTONIC), its lengths,
/// and its cause (0: hardware, else `causes[cause - 1]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapRecord {
    pub window: u64,
    pub at_ns: u64,
    pub inner_ns: u64,
    pub outer_ns: u64,
    pub cause: u32,
}

#[derive(Debug, Clone, Default)]
pub struct GapLog {
    causes: Vec<String>,
    index: HashMap<String, u32>,
    pub records: Vec<GapRecord>,
    pub not_kept: u64,
}

impl GapLog {
    pub fn note(&mut self, window: u64, gap: &Gap, class: &GapClass) {
        if self.records.len() >= MAX_GAPS {
            self.not_kept += 1;
            return;
        }
        let cause = match class {
            GapClass::Hardware => 0,
            GapClass::Os(name) => match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.causes.push(name.clone());
                    let i = self.causes.len() as u32;
                    self.index.insert(name.clone(), i);
                    i
                }
            },
        };
        self.records.push(GapRecord {
            window,
            at_ns: gap.at_ns,
            inner_ns: gap.inner_ns,
            outer_ns: gap.outer_ns,
            cause,
        });
    }

    /// The class and cause of `record` as the CSV gives them.
    pub fn words(&self, record: &GapRecord) -> (&'static str, &str) {
        match record.cause {
            0 => ("hardware", ""),
            i => ("os", self.causes[i as usize - 1].as_str()),
        }
    }
}

/// The CSV's header.
pub const HEADER: [&str; 7] = [
    "cpu",
    "window",
    "monotonic_ns",
    "inner_ns",
    "outer_ns",
    "class",
    "cause",
];

/// Writes each CPU's logged gaps to `path` (replaced atomically when a
/// regular file), in time order per CPU.
pub fn write_csv(path: &Path, cpus: &[(usize, &GapLog)]) -> std::io::Result<()> {
    crate::rt::outfile::write_output_file(path, &mut |w| {
        let mut csv = csv::Writer::from_writer(w);
        csv.write_record(HEADER)?;
        for &(cpu, log) in cpus {
            for r in &log.records {
                let (class, cause) = log.words(r);
                csv.write_record([
                    cpu.to_string().as_str(),
                    &r.window.to_string(),
                    &r.at_ns.to_string(),
                    &r.inner_ns.to_string(),
                    &r.outer_ns.to_string(),
                    class,
                    cause,
                ])?;
            }
        }
        csv.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hwlat::protocol::Interference;

    #[test]
    fn causes_are_kept_once_and_gaps_beyond_the_bound_are_counted() {
        let mut log = GapLog::default();
        let gap = |at_ns| Gap {
            at_ns,
            inner_ns: 20,
            outer_ns: 5000,
            interference: Interference::Unknown,
        };
        log.note(0, &gap(100), &GapClass::Hardware);
        log.note(0, &gap(200), &GapClass::Os("irq LOC".into()));
        log.note(1, &gap(300), &GapClass::Os("irq LOC".into()));
        assert_eq!(log.causes, vec!["irq LOC".to_string()]);
        let words: Vec<(u64, &str, &str)> = log
            .records
            .iter()
            .map(|r| {
                let (class, cause) = log.words(r);
                (r.at_ns, class, cause)
            })
            .collect();
        assert_eq!(
            words,
            vec![
                (100, "hardware", ""),
                (200, "os", "irq LOC"),
                (300, "os", "irq LOC")
            ]
        );
        log.records.resize(MAX_GAPS, log.records[0]);
        log.note(2, &gap(400), &GapClass::Hardware);
        assert_eq!((log.records.len(), log.not_kept), (MAX_GAPS, 1));
    }
}
