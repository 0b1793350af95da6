//! `latscope rt-migrate-test` and the `rt-migrate-test` compat name:
//! rt-tests 2.40 rt-migrate-test's command line (settings::rt_migrate
//! through settings::getopt), its help and getopt's complaints answered as
//! it answers them (usage, exit 0), then the run (measure::rt_migrate). No
//! pipeline: standard output, standard error and the exit codes stay
//! rt-migrate-test's.

use crate::pipeline::CommandError;
use crate::rt::stdio::print;
use crate::settings::UsageError;
use crate::settings::getopt::GetoptUsage;
use crate::settings::rt_migrate::{MigrateSettings, USAGE};
use std::io::Write;

/// `latscope rt-migrate-test ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    let program = crate::cli::getopt_program_name(crate::cli::RT_MIGRATE_TEST_COMPAT);
    match MigrateSettings::parse(args, &program, processors()) {
        Ok(settings) => crate::measure::rt_migrate::run(&settings),
        Err(usage) => answer(usage, &program),
    }
}

/// rt-migrate-test's `count_cpus`: the `processor` lines of /proc/cpuinfo.
fn processors() -> usize {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let n = text
        .lines()
        .filter(|l| {
            l.strip_prefix("processor")
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .count();
    n.max(1)
}

/// Help and getopt's complaints: the usage on stdout, exit 0 (its `'?'`
/// case is `usage(0)`); latscope's own refusals: one line, exit 2.
fn answer(usage: GetoptUsage, program: &str) -> Result<i32, CommandError> {
    let answer = usage.answer(program, &USAGE).map_err(UsageError)?;
    let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
    print(&answer.stdout);
    Ok(answer.code)
}
