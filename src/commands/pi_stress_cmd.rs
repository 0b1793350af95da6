//! `latscope pi-stress` and the `pi_stress` compat name: rt-tests 2.40
//! pi_stress's command line (settings::pi_stress through settings::getopt),
//! its help, `-V` and refusals answered as pi_stress answers them, then the
//! run (measure::pi_stress). No pipeline: standard output, standard error
//! and the exit codes stay pi_stress's.

use crate::pipeline::CommandError;
use crate::rt::stdio::print;
use crate::settings::UsageError;
use crate::settings::getopt::GetoptUsage;
use crate::settings::pi_stress::{PiStressSettings, USAGE, VERSION_ASKED, VERSION_TEXT};
use std::io::Write;

/// `latscope pi-stress ARGS` (`as_compat`: started under the name
/// `pi_stress`, which prints pi_stress's lines only).
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    let program = crate::cli::getopt_program_name(crate::cli::PI_STRESS_COMPAT);
    let as_compat = std::env::args_os().next().is_some_and(|a| {
        std::path::Path::new(&a).file_name() == Some(crate::cli::PI_STRESS_COMPAT.as_ref())
    });
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    match PiStressSettings::parse(args, &program, online) {
        Ok(settings) => crate::measure::pi_stress::run(&settings, !as_compat),
        Err(usage) => answer(usage, &program),
    }
}

/// How pi_stress answers help, `-V` and its refusals: getopt's complaint
/// and the usage (exit 1), `-g` above the CPUs (one line, exit 255).
fn answer(usage: GetoptUsage, program: &str) -> Result<i32, CommandError> {
    match usage {
        GetoptUsage::Bad(m) if m == VERSION_ASKED => {
            print(VERSION_TEXT);
            Ok(0)
        }
        GetoptUsage::Fatal(line) => {
            let _ = writeln!(std::io::stderr(), "{line}");
            Ok(255)
        }
        other => {
            let answer = other.answer(program, &USAGE).map_err(UsageError)?;
            let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
            print(&answer.stdout);
            Ok(answer.code)
        }
    }
}
