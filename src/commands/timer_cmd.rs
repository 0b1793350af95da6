//! `latscope timer`: Xenomai's `latency` options and latscope's, its live
//! output (RTD lines or a status line), `-b`, `-f` and `-g`.

use crate::cli::{OutputFormat, TimerArgs};
use crate::live::timer::{ProgressLine, RtdLines};
use crate::measure::timer as timer_run;
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::classic_xenomai::{self, ClassicXenomai, XenomaiGnuplot};
use crate::report::console::{ModernConsole, ModernConsoleWithHistograms};
use crate::report::json::LatscopeJson;
use crate::report::{Exporter, Report};
use crate::rt::tracefs::BreakTrace;
use crate::settings::OutputTarget;
use crate::settings::timer::TimerSettings;
use crate::timer::{Figure, TimerProgress};
use std::io::Write;

/// `latscope timer`.
pub fn run(args: &TimerArgs) -> Result<i32, CommandError> {
    let settings = TimerSettings::from_args(args)?;
    for notice in &settings.notices {
        crate::rt::stdio::note_line(&format!("latscope: warning: {notice}"));
    }
    pipeline::run(&mut TimerCommand {
        settings,
        deepest_idle_state: args.idle.deepest_idle_state,
    })
}

struct TimerCommand {
    settings: TimerSettings,
    deepest_idle_state: Option<u32>,
}

impl TimerCommand {
    fn classic(&self) -> bool {
        self.settings.format == OutputFormat::Classic
    }

    /// The live output: Xenomai's header and RTD lines, or a status line.
    fn live_output(&self) -> Box<dyn TimerProgress> {
        let settings = &self.settings;
        if !self.classic() {
            return Box::new(
                ProgressLine::new(settings.quiet).until_stopped(settings.duration.is_none()),
            );
        }
        // With `--json -` (or `--csv -`, `--markdown -`) that output owns
        // standard output: Xenomai's live lines go to standard error then.
        let live_to_stderr = settings.outputs.to_stdout();
        let header =
            classic_xenomai::startup_header(settings.period_us, settings.figure.test_mode());
        if live_to_stderr {
            eprint!("{header}");
        } else {
            let _ = write!(crate::rt::stdio::out(), "{header}");
        }
        if settings.quiet {
            eprint!(
                "{}",
                classic_xenomai::quiet_notice(settings.duration.map_or(0, |d| d.as_secs()))
            );
        }
        let _ = crate::rt::stdio::out().flush();
        Box::new(RtdLines::new(settings, live_to_stderr))
    }
}

impl Measurement for TimerCommand {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        let settings = &self.settings;
        let presentation = if self.classic() {
            Presentation {
                console: Box::new(ClassicXenomai {
                    histograms: settings.print_histograms,
                    stats: settings.print_stats,
                    gnuplot: settings.gnuplot.is_some(),
                    gnuplot_to_stdout: settings.gnuplot == Some(OutputTarget::Stdout),
                }),
                classic: true,
                json: Box::new(LatscopeJson),
            }
        } else if settings.print_histograms {
            Presentation::modern(Box::new(ModernConsoleWithHistograms))
        } else {
            Presentation::modern(Box::new(ModernConsole))
        };
        Plan {
            prepare: PrepareSpec {
                lock_memory: settings.lock_memory,
                require_mlock: true,
                hold_dma_latency: settings.hold_dma_latency,
                loads: settings.loads.clone(),
                cpus: settings.cpus.clone(),
            },
            fail_if: settings.fail_if.clone(),
            actions: settings.actions.clone(),
            breaks: None,
            outputs: settings.outputs.clone(),
            presentation,
        }
    }

    fn check(&self) -> Result<(), CommandError> {
        let settings = &self.settings;
        if settings.breakdown {
            crate::probes::wakeups::check_before_run(settings.collector).map_err(|e| {
                CommandError::Runtime(e.with_need(&format!(
                    "{} needs kernel tracing",
                    if settings.figure == Figure::User {
                        "--breakdown".to_string()
                    } else {
                        format!("-t {}", settings.figure.test_mode())
                    }
                )))
            })?;
        }
        pipeline::check_spike_tracing(settings.trace_spikes_us, settings.collector)
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        if self.settings.freeze_trace
            && let Err(why) = BreakTrace::open()
        {
            run.warn(format!("-f: {why}; running without freezing the trace"));
            self.settings.freeze_trace = false;
        }
        let settings = &self.settings;
        let mut progress = self.live_output();
        let (finished, own_warnings, outcome) =
            timer_run::measure(settings, run, progress.as_mut()).map_err(CommandError::Runtime)?;
        for warning in own_warnings {
            run.warn(warning);
        }
        if let Some((cpu, moved)) = outcome.break_on_switch {
            crate::rt::stdio::note_line(&format!(
                "latscope: -b: the sampling thread on CPU {cpu} had {} involuntary context switch(es), {} major and {} minor page fault(s): run stopped",
                moved.involuntary_switches, moved.major_faults, moved.minor_faults
            ));
        }
        if settings.freeze_trace
            && let Ok(mut trace) = BreakTrace::open()
        {
            trace.stop();
            crate::rt::stdio::note_line(&format!(
                "latscope: -f: tracing stopped; each new maximum is marked in {}/trace",
                trace.dir.display()
            ));
        }
        Ok(vec![finished])
    }

    /// `-g`: Xenomai's gnuplot dump (in classic format on standard output it
    /// is part of the console output).
    fn write_extras(&self, report: &Report) -> Result<(), String> {
        match &self.settings.gnuplot {
            Some(OutputTarget::Stdout) if !self.classic() => {
                pipeline::print(&XenomaiGnuplot, report);
                Ok(())
            }
            Some(target @ OutputTarget::File(_)) => {
                pipeline::write_output(target, &XenomaiGnuplot as &dyn Exporter, report)
            }
            _ => Ok(()),
        }
    }
}
