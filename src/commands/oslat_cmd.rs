//! `latscope oslat` / the `oslat` compat name: rt-tests 2.40 oslat's
//! options (settings::oslat), its help and usage errors answered as oslat
//! answers them, then the run (measure::oslat) through the pipeline's
//! classic presentation: oslat's final block and `--json`
//! (report::classic_oslat), latscope's own warnings on stderr only.

use crate::measure::oslat::{self as measure, OslatFacts};
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation,
};
use crate::report::classic_oslat::ClassicOslat;
use crate::report::json::OslatJson;
use crate::rt::stdio::print;
use crate::settings::oslat::{OslatSettings, OslatUsage};
use crate::settings::{Outputs, UsageError, check_output_path};
use std::io::Write;

/// The version line oslat prints first, whatever the options: latscope
/// stands in for rt-tests 2.40's oslat, and scripts read this line.
const VERSION_LINE: &str = "oslat V 2.40\n";

/// `latscope oslat ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    // clap hands over the words after an explicit `--` too; the compat name
    // always puts one first.
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    print(VERSION_LINE);
    let facts = OslatFacts::read();
    let settings = match OslatSettings::parse(args, &facts.machine()) {
        Ok(s) => s,
        Err(usage) => return answer(usage),
    };
    let json = settings
        .json
        .as_deref()
        .map(|p| check_output_path("--json", p))
        .transpose()?;
    let mut command = OslatCommand {
        outputs: Outputs {
            json,
            ..Outputs::default()
        },
        facts,
        breaks: measure::break_crossings(&settings),
        settings,
        triggered: false,
    };
    let code = pipeline::run(&mut command)?;
    // oslat quits with 1 after `-T` stopped it.
    Ok(if command.triggered { 1 } else { code })
}

/// How oslat answers help, `--version` and its usage errors: the exit
/// code; latscope's own refusals are exit 2.
fn answer(usage: OslatUsage) -> Result<i32, CommandError> {
    let help = || {
        print(
            crate::settings::oslat::HELP
                .split_once('\n')
                .map_or("", |(_, rest)| rest),
        )
    };
    match usage {
        OslatUsage::Getopt(message) => {
            let _ = writeln!(std::io::stderr(), "{}: {message}", program_name());
            help();
            Ok(1)
        }
        OslatUsage::Help => {
            help();
            Ok(0)
        }
        OslatUsage::Version => Ok(0),
        OslatUsage::Invalid(line) => {
            print(&format!("{line}\n"));
            Ok(1)
        }
        OslatUsage::Fatal(text) => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            Ok(1)
        }
        OslatUsage::Bad(message) => Err(UsageError(message).into()),
    }
}

/// The name oslat's messages start with (its argv[0]).
fn program_name() -> String {
    crate::cli::getopt_program_name(crate::cli::OSLAT_COMPAT)
}

struct OslatCommand {
    settings: OslatSettings,
    outputs: Outputs,
    facts: OslatFacts,
    /// `-T` stopped the test.
    triggered: bool,
    /// `-T` as the trigger of `--on-threshold`: its crossings.
    breaks: Option<std::sync::Arc<crate::stats::crossings::BreakCrossings>>,
}

impl Measurement for OslatCommand {
    fn plan(&self) -> Plan {
        Plan {
            prepare: PrepareSpec {
                // oslat locks its memory (and fails without it).
                lock_memory: true,
                require_mlock: true,
                // oslat leaves the CPU idle states alone: so does its drop-in,
                // so that their figures compare.
                hold_dma_latency: false,
                loads: Vec::new(),
                cpus: self.settings.cpus.clone(),
            },
            fail_if: Vec::new(),
            actions: self.settings.actions.clone(),
            breaks: self.breaks.clone(),
            outputs: self.outputs.clone(),
            presentation: Presentation {
                console: Box::new(ClassicOslat {
                    zero_omit: self.settings.zero_omit,
                }),
                classic: true,
                json: Box::new(OslatJson),
            },
        }
    }

    fn measure(&mut self, run: &mut pipeline::Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let app_name = program_name();
        let (test, triggered) = measure::measure(
            &self.settings,
            &self.facts,
            &app_name,
            run,
            self.breaks.clone(),
        )?;
        self.triggered = triggered;
        Ok(vec![test])
    }
}
