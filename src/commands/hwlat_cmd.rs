//! `latscope hwlat`: a busy sampler per measured CPU classifies every gap
//! as hardware (firmware, SMI, the hypervisor) or OS, with its cause.

use crate::cli::hwlat::{HwlatArgs, HwlatFormat};
use crate::measure::hwlat as hwlat_run;
use crate::pipeline::{self, CommandError, FinishedTest, Measurement, Plan, Presentation, Run};
use crate::report::classic_hwnoise::Hwnoise;
use crate::report::console::ModernConsole;
use crate::settings::hwlat::HwlatSettings;

/// `latscope hwlat`.
pub fn run(args: &HwlatArgs) -> Result<i32, CommandError> {
    let settings = HwlatSettings::from_args(args)?;
    hwlat_run::check_before_run(&settings).map_err(CommandError::Runtime)?;
    pipeline::run(&mut HwlatCommand { settings })
}

struct HwlatCommand {
    settings: HwlatSettings,
}

impl Measurement for HwlatCommand {
    fn plan(&self) -> Plan {
        let s = &self.settings;
        let mut presentation = Presentation::modern(match s.format {
            HwlatFormat::Modern => Box::new(ModernConsole),
            HwlatFormat::Hwnoise => Box::new(Hwnoise),
        });
        // rtla's table stays as its parsers read it: notes go to stderr.
        presentation.classic = s.format == HwlatFormat::Hwnoise;
        Plan::measuring(
            &s.verdict,
            s.lock_memory,
            s.hold_dma_latency,
            s.cpus.clone(),
            presentation,
        )
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        if !self.settings.verdict.quiet {
            eprintln!(
                "hwlat: sampling {} CPU(s) ({} of every {}){}; Ctrl-C stops",
                self.settings.cpus.len(),
                crate::units::format_ns(self.settings.width_ns as i64),
                crate::units::format_ns(self.settings.window_ns as i64),
                match self.settings.duration {
                    Some(d) => format!(" for {:.0} s", d.as_secs_f64()),
                    None => String::new(),
                }
            );
        }
        let (finished, warnings) =
            hwlat_run::measure(&self.settings, run).map_err(CommandError::Runtime)?;
        for warning in warnings {
            run.warn(warning);
        }
        Ok(vec![finished])
    }
}
