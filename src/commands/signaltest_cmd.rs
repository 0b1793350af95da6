//! `latscope signaltest` and the `signaltest` compat name: rt-tests 2.40
//! signaltest's command line (settings::signaltest through settings::getopt),
//! its help and usage errors answered as signaltest answers them, then the
//! run (measure::signaltest: the ring of threads on the signal transport,
//! signaltest's lines and `--json`). No pipeline: standard output, standard
//! error and the exit codes stay signaltest's.

use crate::pipeline::CommandError;
use crate::rt::stdio::print;
use crate::settings::UsageError;
use crate::settings::getopt::GetoptUsage;
use crate::settings::signaltest::{SignalSettings, USAGE};
use std::io::Write;

/// `latscope signaltest ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    // The `--` the compat name puts first is clap's, consumed there; one the
    // user typed ends getopt's options, as in signaltest.
    let program = crate::cli::getopt_program_name(crate::cli::SIGNALTEST_COMPAT);
    let allowed = crate::rt::sched::allowed_cpus();
    match SignalSettings::parse(args, &program, &allowed) {
        Ok(settings) => crate::measure::signaltest::run(&settings),
        Err(usage) => answer(usage, &program),
    }
}

/// How signaltest answers help and its usage errors (settings::getopt's
/// `GetoptUsage::answer`); latscope's own refusals are exit 2.
fn answer(usage: GetoptUsage, program: &str) -> Result<i32, CommandError> {
    let answer = usage.answer(program, &USAGE).map_err(UsageError)?;
    let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
    print(&answer.stdout);
    Ok(answer.code)
}
