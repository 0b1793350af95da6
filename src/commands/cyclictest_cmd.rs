//! `latscope cyclictest` and the `cyclictest` compat name: its command
//! line (settings::cyclictest through settings::getopt), help and usage
//! errors answered as cyclictest answers them, then the run
//! (measure::cyclictest). With `--latscope-json FILE` or latscope's
//! `--on-threshold`/`--on-end` through `pipeline::run`
//! (`CyclicMeasurement`: the full Report in FILE, the actions run by the
//! pipeline, latscope's warnings on stderr); without them not, so that
//! stderr, the memory and the start-up time stay cyclictest's.

use crate::measure::cyclictest::{self as measure, measured_cpus};
use crate::pipeline::{
    CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::classic_cyclictest as classic;
use crate::report::json::LatscopeJson;
use crate::rt::stdio::print;
use crate::settings::cyclictest::CyclicSettings;
use crate::settings::getopt::GetoptUsage;
use crate::settings::{OutputTarget, Outputs, UsageError};
use std::io::Write;

/// What the command line asks for once parsed.
pub enum Start {
    /// Already answered (help, a getopt error, a FATAL line): the exit code.
    Answered(i32),
    /// A run with these settings, on these CPUs (the process's allowed ones).
    Run {
        settings: Box<CyclicSettings>,
        online: Vec<usize>,
    },
}

/// Parses cyclictest's arguments; help and cyclictest's usage errors are
/// answered here, as cyclictest answers them.
pub fn start(args: &[String]) -> Result<Start, CommandError> {
    // Every word as typed: the `--` the compat name puts before them is
    // clap's, consumed there; one the user typed ends getopt's options, as
    // in cyclictest (`cyclictest -- -l 5` runs until stopped).
    let online = crate::rt::sched::allowed_cpus();
    // rt-tests 2.7's rule: every Intel family 6 model has the SMI count
    // MSR (2.4 kept a list of 32 models).
    let has_smi = crate::rt::sysinfo::intel_family_6_with_msr();
    match CyclicSettings::parse(args, &online, has_smi) {
        Ok(settings) => Ok(Start::Run {
            settings: Box::new(settings),
            online,
        }),
        Err(usage) => answer(usage).map(Start::Answered),
    }
}

/// How cyclictest answers help and its usage errors (settings::getopt's
/// `GetoptUsage::answer`, with argv[0] as typed under the `cyclictest`
/// name, as GNU getopt says it); latscope's own refusals are exit 2.
fn answer(usage: GetoptUsage) -> Result<i32, CommandError> {
    let program = crate::cli::getopt_program_name(crate::cli::CYCLICTEST_COMPAT);
    let answer = usage
        .answer(&program, &crate::settings::cyclictest::USAGE)
        .map_err(UsageError)?;
    let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
    print(&answer.stdout);
    Ok(answer.code)
}

/// `latscope cyclictest ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    let (settings, online) = match start(args)? {
        Start::Answered(code) => return Ok(code),
        Start::Run { settings, online } => (settings, online),
    };
    if !settings.needs_pipeline() {
        return run_classic(&settings, &online);
    }
    print_warnings(&settings);
    crate::pipeline::run(&mut CyclicMeasurement {
        settings: &settings,
        online: &online,
        breaks: measure::break_crossings(&settings),
    })
}

/// A run without `--latscope-json`: cyclictest's outputs only, no pipeline.
/// This is all the lean drop-in binary (src/bin/latscope-cyclictest.rs)
/// links of latscope, which is what keeps its memory at cyclictest's.
pub fn run_classic(settings: &CyclicSettings, online: &[usize]) -> Result<i32, CommandError> {
    print_warnings(settings);
    let ran = measure::run(settings, online, true, None)?;
    // cyclictest writes the JSON before its final block and ends there when
    // it cannot open it: no final block then. A failed write it never sees.
    match ran.json_failure {
        Some(f) if !f.after_open => Ok(f.report()),
        failure => {
            print(&ran.final_block);
            Ok(failure.map_or(0, |f| f.report()))
        }
    }
}

/// cyclictest's warnings about the options, on stderr before the run.
fn print_warnings(settings: &CyclicSettings) {
    settings.warnings.iter().for_each(|l| eprintln!("{l}"));
}

/// `--latscope-json`, the actions: the run as a pipeline `Measurement`.
struct CyclicMeasurement<'a> {
    settings: &'a CyclicSettings,
    online: &'a [usize],
    /// `-b` as the trigger of `--on-threshold`: its crossings.
    breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

impl Measurement for CyclicMeasurement<'_> {
    fn plan(&self) -> Plan {
        let s = self.settings;
        Plan {
            prepare: PrepareSpec {
                lock_memory: s.mlockall,
                require_mlock: false,
                // cyclictest's own handling (its stdout line, --latency,
                // --laptop) is kept: measure::cyclictest's latency_target.
                hold_dma_latency: false,
                loads: Vec::new(),
                cpus: measured_cpus(s, self.online),
            },
            fail_if: Vec::new(),
            actions: s.actions.clone(),
            breaks: self.breaks.clone(),
            outputs: Outputs {
                json: s.latscope_json.clone().map(OutputTarget::File),
                rteval_xml: s.latscope_rteval_xml.clone().map(OutputTarget::File),
                ..Outputs::default()
            },
            presentation: Presentation {
                console: Box::new(classic::FinalBlock),
                classic: true,
                json: Box::new(LatscopeJson),
            },
        }
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        Ok(vec![measure::measure(
            self.settings,
            self.online,
            run,
            self.breaks.clone(),
        )?])
    }
}
