//! The suite's hardware row: `latscope hwlat` on every usable CPU for its
//! share of the time (at most hwlatdetect's one window of 1 s), so the
//! overview says whether the machine itself (firmware, SMIs, a hypervisor)
//! stopped the CPUs while the other rows measured.

use super::Suite;
use crate::measure::hwlat as hwlat_run;
use crate::pipeline::{FinishedTest, Run};
use crate::report::EndReason;
use crate::rt::sched::Policy;
use crate::settings::hwlat::{HwlatSettings, SUITE_WINDOW};
use crate::units::format_run_time;
use std::time::Duration;

impl Suite {
    pub(super) fn measure_hwlat(&self, run: &mut Run<'_>, share: Duration) -> FinishedTest {
        let left = share.clamp(Duration::from_millis(10), SUITE_WINDOW);
        let settings = HwlatSettings::for_suite(left, self.priority);
        // The samplers are SCHED_FIFO by design: at normal priority every
        // other task would preempt them and no gap would be the hardware's.
        if self.policy != Policy::Fifo {
            return hwlat_run::not_run(
                &settings,
                run,
                EndReason::Skipped,
                // The suite's note has said once why and what to do.
                "not run: its samplers are SCHED_FIFO only, and this user may not use real-time scheduling (see the note above)".into(),
            );
        }
        if !self.verdict.quiet {
            crate::rt::stdio::note_line(&format!(
                "latscope: running hwlat (a sampler on CPU {}, {} of every {}) for {} ...",
                crate::units::cpu_list(&settings.cpus),
                format_run_time(Duration::from_nanos(settings.width_ns)),
                format_run_time(Duration::from_nanos(settings.window_ns)),
                format_run_time(left)
            ));
        }
        match hwlat_run::measure(&settings, run) {
            Ok((done, own_warnings)) => {
                for warning in own_warnings {
                    run.warn(warning);
                }
                done
            }
            Err(e) => hwlat_run::not_run(&settings, run, EndReason::Error, e),
        }
    }
}
