//! The usage each compatibility name whose words are not clap's prints for
//! its help (the getopt drop-ins' `--help`, the cnf-tests runners' `-h`):
//! the text its man page shows.

/// The usage a getopt tool prints for `--help` (a cnf-tests runner: Go's, for `-h`).
pub fn usage_of(name: &str) -> Option<String> {
    let usage: &str = match name {
        crate::cli::CYCLICTEST_COMPAT => &super::cyclictest::USAGE,
        crate::cli::OSLAT_COMPAT => &super::oslat::HELP,
        crate::cli::CYCLICDEADLINE_COMPAT => &super::cyclicdeadline::USAGE,
        crate::cli::SIGNALTEST_COMPAT => &super::signaltest::USAGE,
        "hwlatdetect" => super::hwlatdetect::HELP,
        crate::cli::PI_STRESS_COMPAT => &super::pi_stress::USAGE,
        crate::cli::RT_MIGRATE_TEST_COMPAT => &super::rt_migrate::USAGE,
        _ => return super::runner::usage_named(name),
    };
    Some(usage.to_string())
}
