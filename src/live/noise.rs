//! The noise test's live output: once a second on a terminal, one status
//! line on stderr with every CPU's noise so far (share of the time spun,
//! interruptions, the largest).

use super::status::StatusLine;
use crate::noise::{CpuShared, NoiseProgress};
use crate::units::format_ns;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub struct ProgressLine {
    line: StatusLine,
    last_second: u64,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            line: StatusLine::new(quiet),
            last_second: 0,
        }
    }

    /// The run has no end of its own (no duration, no loop count): the
    /// line says how to stop it.
    pub fn until_stopped(mut self, until_stopped: bool) -> Self {
        self.line.set_until_stopped(until_stopped);
        self
    }
}

/// One CPU's part of the line: `CPU 1 0.412 % 37 int max 12.3 us`.
pub fn cpu_part(cpu: usize, shared: &CpuShared) -> String {
    let measured = shared.measured_ns.load(Ordering::Relaxed);
    let noise = shared.noise_ns.load(Ordering::Relaxed);
    let share = if measured > 0 {
        noise as f64 * 100.0 / measured as f64
    } else {
        0.0
    };
    format!(
        "CPU {cpu} {share:.3} % {} int max {}",
        shared.interruptions.load(Ordering::Relaxed),
        format_ns(shared.max_ns.load(Ordering::Relaxed) as i64)
    )
}

impl NoiseProgress for ProgressLine {
    fn tick(&mut self, elapsed: Duration, cpus: &[usize], shared: &[Arc<CpuShared>]) {
        let second = elapsed.as_secs();
        if !self.line.enabled() || second == self.last_second {
            return;
        }
        self.last_second = second;
        let parts: Vec<String> = cpus
            .iter()
            .zip(shared)
            .map(|(&cpu, s)| cpu_part(cpu, s))
            .collect();
        self.line
            .show(&format!("[{second:>4}s] noise: {}", parts.join(" | ")));
    }

    fn finish(&mut self) {
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_of_one_cpu() {
        let shared = CpuShared::default();
        shared.measured_ns.store(1_000_000_000, Ordering::Relaxed);
        shared.noise_ns.store(4_120_000, Ordering::Relaxed);
        shared.interruptions.store(37, Ordering::Relaxed);
        shared.max_ns.store(12_300, Ordering::Relaxed);
        assert_eq!(cpu_part(1, &shared), "CPU 1 0.412 % 37 int max 12.3 us");
    }
}
