//! `latscope noise`: one spinning thread per measured CPU, every
//! interruption recorded; `--trace-spikes` names their causes.

use crate::cli::NoiseArgs;
use crate::live::noise::ProgressLine;
use crate::measure::noise as noise_run;
use crate::pipeline::{self, CommandError, FinishedTest, Measurement, Plan, Presentation, Run};
use crate::report::console::ModernConsole;
use crate::settings::noise::NoiseSettings;

/// `latscope noise`.
pub fn run(args: &NoiseArgs) -> Result<i32, CommandError> {
    let settings = NoiseSettings::from_args(args)?;
    pipeline::run(&mut NoiseCommand {
        settings,
        deepest_idle_state: args.idle.deepest_idle_state,
    })
}

struct NoiseCommand {
    settings: NoiseSettings,
    deepest_idle_state: Option<u32>,
}

impl Measurement for NoiseCommand {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        let s = &self.settings;
        Plan::measuring(
            &s.verdict,
            s.lock_memory,
            s.hold_dma_latency,
            s.cpus.clone(),
            Presentation::modern(Box::new(ModernConsole)),
        )
    }

    fn check(&self) -> Result<(), CommandError> {
        pipeline::check_spike_tracing(self.settings.trace_spikes_us, self.settings.collector)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let mut progress = ProgressLine::new(self.settings.verdict.quiet)
            .until_stopped(self.settings.duration.is_none());
        let (finished, warnings) = noise_run::measure(&self.settings, run, &mut progress)
            .map_err(CommandError::Runtime)?;
        for warning in warnings {
            run.warn(warning);
        }
        Ok(vec![finished])
    }
}
