//! `latscope cyclicdeadline` and the `cyclicdeadline` compat name: its
//! command line (settings::cyclicdeadline through settings::getopt), help
//! and usage errors answered as cyclicdeadline answers them, then the run
//! (measure::cyclicdeadline), its lines on stdout as it prints them.

use crate::measure::cyclicdeadline as measure;
use crate::pipeline::CommandError;
use crate::rt::stdio::print;
use crate::settings::UsageError;
use crate::settings::cyclicdeadline::{DeadlineMachine, DeadlineSettings, USAGE};
use crate::settings::getopt::GetoptUsage;
use std::io::Write;

/// `latscope cyclicdeadline ARGS`: the exit code as cyclicdeadline's (0
/// after a run, also one ended by Ctrl-C or SIGTERM; 1 after its usage or
/// a FATAL line; the errno when `--json` cannot be written), latscope's
/// own refusals 2 and a refused reservation 1.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    // Every word as typed: the `--` the compat name puts first is clap's.
    let program = crate::cli::getopt_program_name(crate::cli::CYCLICDEADLINE_COMPAT);
    // SAFETY: sysconf has no side effects.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    let machine = DeadlineMachine {
        cpu_count: usize::try_from(configured).unwrap_or(1).max(1),
    };
    let settings = match DeadlineSettings::parse(args, &program, machine) {
        Ok(s) => s,
        Err(usage) => return answer(usage, &program),
    };
    let ran = measure::run(&settings)?;
    Ok(ran.json_failure.map_or(0, |f| f.report()))
}

/// How cyclicdeadline answers help and its usage errors: getopt's
/// complaint on stderr and the usage on stdout (exit 1), the usage alone
/// for `--help` (exit 0), `FATAL: ` lines on stderr (exit 1); latscope's
/// own refusals are one line, exit 2.
fn answer(usage: GetoptUsage, program: &str) -> Result<i32, CommandError> {
    match usage {
        GetoptUsage::Help => {
            print(&USAGE);
            Ok(0)
        }
        GetoptUsage::Getopt(message) => {
            let _ = writeln!(std::io::stderr(), "{program}: {message}");
            print(&USAGE);
            Ok(1)
        }
        GetoptUsage::Invalid(lines) => {
            lines.iter().for_each(|l| eprintln!("{l}"));
            print(&USAGE);
            Ok(1)
        }
        GetoptUsage::Fatal(message) => {
            let _ = writeln!(std::io::stderr(), "FATAL: {message}");
            Ok(1)
        }
        GetoptUsage::Bad(message) => Err(UsageError(message).into()),
    }
}
