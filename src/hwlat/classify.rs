//! What took the time of each gap: the hardware (firmware, SMI, the
//! hypervisor in a guest) when nothing the kernel counts ran across it,
//! else the OS, with the cause when it is known.
//!
//! With a per-read counter every gap is decided by itself. Without one (the
//! unprivileged tier) a sub-window decides for all its gaps: when neither
//! the CPU's `/proc/interrupts` nor its `/proc/softirqs` column nor the
//! sampler's context switches moved across it, its gaps are hardware. The
//! sub-windows are short (0.5 ms) so that most fall between two ticks.

use super::over_time::GapWindows;
use super::protocol::{Gap, Interference, InterferenceCounter};
use crate::stats::LatencyRecorder;
use std::collections::BTreeMap;

/// What moved on the CPU across one sub-window (the unprivileged tier).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    /// Names of the IRQ rows that counted events (`LOC`, `24 (virtio0)`).
    pub irqs: Vec<String>,
    /// Names of the softirqs that ran (`TIMER`, `NET_RX`).
    pub softirqs: Vec<String>,
    /// Context switches of the sampler thread.
    pub switches: u64,
}

impl Moved {
    pub fn is_quiet(&self) -> bool {
        self.irqs.is_empty() && self.softirqs.is_empty() && self.switches == 0
    }

    /// The cause named in the report: every line that moved, `irq LOC +
    /// softirq TIMER + task switch`.
    pub fn cause(&self) -> String {
        let mut parts: Vec<String> = self.irqs.iter().map(|n| format!("irq {n}")).collect();
        parts.extend(self.softirqs.iter().map(|n| format!("softirq {n}")));
        if self.switches > 0 {
            parts.push("task switch".to_string());
        }
        if parts.is_empty() {
            "interference".to_string()
        } else {
            parts.join(" + ")
        }
    }
}

/// The class of one gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GapClass {
    Hardware,
    /// The OS, with the cause when known.
    Os(String),
}

/// The class of `gap`: its own counter reading when it has one, else its
/// sub-window's evidence (`moved`; None: no evidence, counted as OS).
pub fn classify(gap: &Gap, moved: Option<&Moved>) -> GapClass {
    match (gap.interference, moved) {
        (Interference::None, _) => GapClass::Hardware,
        (Interference::Some, Some(m)) => GapClass::Os(m.cause()),
        (Interference::Some, None) => GapClass::Os("interference".to_string()),
        (Interference::Unknown, Some(m)) if m.is_quiet() => GapClass::Hardware,
        (Interference::Unknown, Some(m)) => GapClass::Os(m.cause()),
        (Interference::Unknown, None) => GapClass::Os("unclassified".to_string()),
    }
}

/// One duty window's hardware gaps, as hwlatdetect reports a sample: the
/// longest inner and outer gap, and how many gaps were above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSample {
    /// CLOCK_REALTIME of the window's first hardware gap, ns.
    pub realtime_ns: u64,
    pub inner_ns: u64,
    pub outer_ns: u64,
    pub count: u64,
    /// The hardware gaps of the window summed (rtla's "Max Noise").
    pub sum_ns: u64,
}

/// Adds a hardware gap to its window's sample.
pub fn note_sample(sample: &mut Option<WindowSample>, gap: &Gap, realtime_offset_ns: i64) {
    let s = sample.get_or_insert(WindowSample {
        realtime_ns: (gap.at_ns as i64).saturating_add(realtime_offset_ns).max(0) as u64,
        inner_ns: 0,
        outer_ns: 0,
        count: 0,
        sum_ns: 0,
    });
    s.inner_ns = s.inner_ns.max(gap.inner_ns);
    s.outer_ns = s.outer_ns.max(gap.outer_ns);
    s.count += 1;
    s.sum_ns += gap.ns();
}

/// A CPU's gaps by class, over the run.
#[derive(Clone, Default)]
pub struct Tally {
    /// Every hardware gap (its longer of inner/outer), ns.
    pub hardware: LatencyRecorder,
    pub hardware_ns: u64,
    pub os_count: u64,
    pub os_ns: u64,
    pub os_max_ns: u64,
    /// OS gaps by cause: (count, ns).
    pub causes: BTreeMap<String, (u64, u64)>,
    /// Both classes per duty window, for the report's plot over time.
    pub over_time: GapWindows,
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally")
            .field("hardware", &self.hardware_count())
            .field("os", &self.os_count)
            .finish()
    }
}

impl Tally {
    /// Counts `gap` of duty window `window` in its class; true when it is
    /// hardware.
    pub fn add(&mut self, window: u64, gap: &Gap, class: GapClass) -> bool {
        let ns = gap.ns();
        self.over_time.add(window, ns, class == GapClass::Hardware);
        match class {
            GapClass::Hardware => {
                self.hardware.record(ns as i64);
                self.hardware_ns += ns;
                true
            }
            GapClass::Os(cause) => {
                self.os_count += 1;
                self.os_ns += ns;
                self.os_max_ns = self.os_max_ns.max(ns);
                let entry = self.causes.entry(cause).or_default();
                entry.0 += 1;
                entry.1 += ns;
                false
            }
        }
    }

    pub fn hardware_count(&self) -> u64 {
        self.hardware.count()
    }
}

/// Gaps kept per sub-window; more are counted as dropped (a sub-window of
/// 0.5 ms holds at most 50 gaps of 10 us).
pub const GAPS_PER_SUB_WINDOW: usize = 1024;

/// What one sub-window was, for its CPU's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubWindow {
    /// Its gaps could be classified.
    pub classified: bool,
    /// Nothing moved across it.
    pub quiet: bool,
}

/// How a tier classifies a sampler's gaps: the counter its read protocol
/// reads, and the classes of a sub-window's gaps once it is over.
pub trait Classifier {
    type Counter: InterferenceCounter;
    fn counter(&mut self) -> &mut Self::Counter;
    /// Before a window's first sub-window.
    fn open_window(&mut self);
    /// After a sub-window that found `gaps`: each one's class, in order,
    /// into `classes`, and what the sub-window was.
    fn close_sub_window(&mut self, gaps: &[Gap], classes: &mut Vec<GapClass>) -> SubWindow;
    /// NMIs since the start: how many, and their time where known (ns).
    fn nmis(&self) -> (u64, Option<u64>);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(ns: u64, interference: Interference) -> Gap {
        Gap {
            at_ns: 0,
            inner_ns: 0,
            outer_ns: ns,
            interference,
        }
    }

    #[test]
    fn a_quiet_sub_window_makes_its_gaps_hardware_and_a_noisy_one_names_the_cause() {
        let quiet = Moved::default();
        let noisy = Moved {
            irqs: vec!["LOC".into()],
            softirqs: vec!["TIMER".into()],
            switches: 1,
        };
        let g = gap(5000, Interference::Unknown);
        assert_eq!(classify(&g, Some(&quiet)), GapClass::Hardware);
        assert_eq!(
            classify(&g, Some(&noisy)),
            GapClass::Os("irq LOC + softirq TIMER + task switch".into())
        );
        assert_eq!(classify(&g, None), GapClass::Os("unclassified".into()));
    }

    #[test]
    fn a_per_read_counter_decides_over_the_window() {
        let noisy = Moved {
            irqs: vec!["LOC".into()],
            ..Moved::default()
        };
        // The counter did not move across this gap: hardware, even though
        // the tick came elsewhere in the same window.
        assert_eq!(
            classify(&gap(5000, Interference::None), Some(&noisy)),
            GapClass::Hardware
        );
        assert_eq!(
            classify(&gap(5000, Interference::Some), Some(&Moved::default())),
            GapClass::Os("interference".into())
        );
    }

    #[test]
    fn the_tally_keeps_hardware_in_a_histogram_and_the_os_by_cause() {
        let mut t = Tally::default();
        assert!(t.add(0, &gap(4000, Interference::None), GapClass::Hardware));
        assert!(t.add(1, &gap(6000, Interference::None), GapClass::Hardware));
        assert!(!t.add(
            1,
            &gap(9000, Interference::Some),
            GapClass::Os("irq LOC".into())
        ));
        assert!(!t.add(
            1,
            &gap(1000, Interference::Some),
            GapClass::Os("irq LOC".into())
        ));
        assert_eq!((t.hardware_count(), t.hardware_ns), (2, 10_000));
        assert_eq!(t.hardware.max(), Some(6000));
        assert_eq!((t.os_count, t.os_ns, t.os_max_ns), (2, 10_000, 9000));
        assert_eq!(t.causes["irq LOC"], (2, 10_000));
        let per_window = |w: &[crate::stats::window::SecondStats]| {
            w.iter()
                .map(|w| (w.second, w.samples, w.max_ns))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            per_window(&t.over_time.hardware),
            vec![(0, 1, 4000), (1, 1, 6000)]
        );
        assert_eq!(per_window(&t.over_time.os), vec![(1, 2, 9000)]);
    }
}
