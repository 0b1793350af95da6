//! Property tests of the input parsers, through the public library API only
//! (no binary): whatever a user types, parsing never panics, valid forms give
//! exactly the expected value, and every refusal is one non-empty line.

use crate::common::proptest_config as config;
use clap::Parser;
use latscope::cli::{Cli, Command};
use latscope::settings::IpcSettings;
use latscope::units::parse_duration;
use latscope::units::values::count as parse_count;
use proptest::prelude::*;
use std::time::Duration;

const SEC: u128 = 1_000_000_000;
const MIN: u128 = 60 * SEC;
const HOUR: u128 = 60 * MIN;
/// The longest duration parse_duration accepts: 100 years of 365 days.
const HUNDRED_YEARS_S: u64 = 100 * 365 * 86_400;

/// Arbitrary text, weighted towards what looks almost like a number or a
/// duration: digits, dots, units, signs, blanks, newlines, non-ASCII digits.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9]{0,25}",
        "[0-9.]{0,12}(ns|us|ms|s|sec|m|min|h|d|x|e|)[0-9.]{0,6}[smhd]?",
        "[-+ \t\n0-9.smhdnuixe\u{661}\u{ff15}\u{0}]{0,16}",
        "[0-9]{1,30}(\\.[0-9]{0,30})?[smhd]{0,2}",
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parse_duration_never_panics(text in hostile_text()) {
        let _ = parse_duration(&text, SEC);
    }

    #[test]
    fn parse_duration_never_panics_with_any_bare_unit(text in hostile_text(), unit in any::<u128>()) {
        let _ = parse_duration(&text, unit);
    }

    #[test]
    fn parse_duration_results_stay_within_100_years(text in hostile_text()) {
        if let Ok(d) = parse_duration(&text, SEC) {
            prop_assert!(d <= Duration::from_secs(HUNDRED_YEARS_S), "{text:?} -> {d:?}");
        }
    }

    #[test]
    fn bare_number_is_seconds(n in 0..=HUNDRED_YEARS_S) {
        prop_assert_eq!(parse_duration(&n.to_string(), SEC), Ok(Duration::from_secs(n)));
    }

    #[test]
    fn bare_number_uses_the_given_unit(n in 0..=1_000_000_000u64, unit in 1..=1_000_000u128) {
        let expected = u128::from(n) * unit;
        prop_assert_eq!(
            parse_duration(&n.to_string(), unit).map(|d| d.as_nanos()),
            Ok(expected)
        );
    }

    #[test]
    fn seconds_suffix(n in 0..=HUNDRED_YEARS_S) {
        prop_assert_eq!(parse_duration(&format!("{n}s"), SEC), Ok(Duration::from_secs(n)));
    }

    #[test]
    fn minutes_suffix(n in 0..=HUNDRED_YEARS_S / 60) {
        prop_assert_eq!(parse_duration(&format!("{n}m"), SEC), Ok(Duration::from_secs(n * 60)));
    }

    #[test]
    fn hours_and_minutes(a in 0..=800_000u64, b in 0..=1_000_000u64) {
        prop_assert_eq!(
            parse_duration(&format!("{a}h{b}m"), SEC),
            Ok(Duration::from_secs(a * 3600 + b * 60))
        );
    }

    /// `{x}.{y}m` with up to nine fraction digits: exactly x.y * 60 s, rounded
    /// down to the nanosecond (computed here with integers only).
    #[test]
    fn fractional_minutes(x in 0..=1_000_000u64, y in "[0-9]{1,9}") {
        let expected = exact_floor_ns(x, &y, MIN);
        prop_assert_eq!(
            parse_duration(&format!("{x}.{y}m"), SEC).map(|d| d.as_nanos()),
            Ok(expected),
            "{}.{}m", x, y
        );
    }

    #[test]
    fn fractional_hours_with_few_digits(x in 0..=100_000u64, y in "[0-9]{1,9}") {
        prop_assert_eq!(
            parse_duration(&format!("{x}.{y}h"), SEC).map(|d| d.as_nanos()),
            Ok(exact_floor_ns(x, &y, HOUR))
        );
    }

    #[test]
    fn parse_count_never_panics(text in hostile_text()) {
        let _ = parse_count("-l/--loops", &text);
    }

    /// Accepted exactly when the (trimmed) text is all ASCII digits and fits a
    /// u64, and then the value is the number. Everything else is refused with
    /// one non-empty line.
    #[test]
    fn parse_count_accepts_exactly_the_u64_digit_strings(text in hostile_text()) {
        let t = text.trim();
        let expected = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            t.parse::<u64>().ok()
        } else {
            None
        };
        match (parse_count("-l/--loops", &text), expected) {
            (Ok(v), Some(e)) => prop_assert_eq!(v, e),
            (Ok(v), None) => prop_assert!(false, "{text:?} accepted as {v}"),
            (Err(e), Some(v)) => prop_assert!(false, "{text:?} ({v}) refused: {e}"),
            (Err(e), None) => prop_assert!(!e.trim().is_empty(), "{text:?}: empty message"),
        }
    }

    #[test]
    fn parse_count_round_trips_every_u64(n in any::<u64>()) {
        prop_assert_eq!(parse_count("-l/--loops", &n.to_string()), Ok(n));
    }

    #[test]
    fn parse_count_refuses_numbers_beyond_u64(extra in 1..=u128::from(u64::MAX)) {
        let n = u128::from(u64::MAX) + extra;
        let err = parse_count("-l/--loops", &n.to_string()).expect_err("beyond u64");
        prop_assert!(err.contains("-l/--loops"), "{}", err);
    }

    #[test]
    fn mq_settings_never_panic(option in option_name(), value in hostile_text()) {
        let _ = mq_settings(option, &value);
    }

    #[test]
    fn mq_settings_errors_are_non_empty(option in option_name(), value in hostile_text()) {
        if let Some(Err(message)) = mq_settings(option, &value) {
            prop_assert!(!message.trim().is_empty(), "{option}={value:?}: empty message");
        }
    }

    /// The product rule: a usage error is ONE line on stderr. A value with a
    /// newline in it must not turn the message into several lines.
    #[test]
    fn mq_settings_errors_are_one_line(option in option_name(), value in hostile_text()) {
        if let Some(Err(message)) = mq_settings(option, &value) {
            prop_assert!(
                !message.contains('\n') && !message.contains('\r'),
                "{option}={value:?}: multi-line message: {message:?}"
            );
        }
    }

    /// Several hostile options at once (the first error found is reported).
    #[test]
    fn mq_settings_with_many_hostile_options(
        values in proptest::collection::vec((option_name(), hostile_text()), 1..6)
    ) {
        let mut argv = vec!["latscope".to_string(), "mq".to_string()];
        for (option, value) in &values {
            argv.push(format!("{option}={value}"));
        }
        match Cli::try_parse_from(&argv) {
            Ok(Cli { command: Command::Mq(args) }) => {
                if let Err(e) = IpcSettings::from_mq_args(&args) {
                    prop_assert!(!e.0.trim().is_empty(), "{argv:?}: empty message");
                }
            }
            Ok(_) => prop_assert!(false, "{argv:?} parsed as another subcommand"),
            Err(e) => {
                if let Some(message) = crate::common::value_refusal(&e) {
                    prop_assert!(!message.trim().is_empty(), "{argv:?}: empty message");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// `-b USEC` in nanoseconds never wraps to a smaller limit (a huge limit
    /// that no sample can reach must not become a tiny one that every sample
    /// crosses). Refusing a value is fine.
    #[test]
    fn breaktrace_limit_never_wraps(us in microseconds()) {
        limit_never_wraps("--breaktrace", "-b", us, |s| s.plan.breaktrace_ns.expect("breaktrace set"))?;
    }

    /// The same for the `--max-latency` verdict limit.
    #[test]
    fn max_latency_limit_never_wraps(us in microseconds()) {
        limit_never_wraps("--max-latency", "--max-latency", us, |s| s.plan.limit_ns.expect("limit set"))?;
    }
}

/// Microsecond values for the limit options, weighted towards those whose
/// nanoseconds overflow a u64.
fn microseconds() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        1..=u64::MAX / 1000,
        u64::MAX / 1000..=u64::MAX
    ]
}

/// When `OPTION=US` is accepted, the limit in nanoseconds that `limit_ns`
/// reads from the settings is at least `US * 1000` (saturated at u64::MAX).
/// `short` names the option in the failure message.
fn limit_never_wraps(
    option: &str,
    short: &str,
    us: u64,
    limit_ns: impl Fn(&IpcSettings) -> u64,
) -> Result<(), TestCaseError> {
    if let Some(Ok(s)) = mq_settings(option, &us.to_string()) {
        let at_least = (u128::from(us) * 1000).min(u128::from(u64::MAX));
        let ns = limit_ns(&s);
        prop_assert!(u128::from(ns) >= at_least, "{short} {us}: limit {ns} ns");
    }
    Ok(())
}

/// `floor((x + 0.y) * unit_ns)`, exactly.
fn exact_floor_ns(x: u64, y: &str, unit_ns: u128) -> u128 {
    let scale = 10u128.pow(y.len() as u32);
    let fraction: u128 = y.parse().unwrap();
    (u128::from(x) * scale + fraction) * unit_ns / scale
}

/// The long name of every mq option that takes a free-form value.
const FREE_FORM_OPTIONS: [&str; 12] = [
    "--interval",
    "--distance",
    "--loops",
    "--prio",
    "--threads",
    "--affinity",
    "--duration",
    "--timeout",
    "--forcetimeout",
    "--breaktrace",
    "--max-latency",
    "--json",
];

/// One of `FREE_FORM_OPTIONS`.
fn option_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(FREE_FORM_OPTIONS.to_vec())
}

/// Parses `latscope mq --OPTION=VALUE` with clap (the `=` form passes any
/// value verbatim; clap reads the value with its parser) and validates it.
/// A refused value is its one-line error, wherever it was found; `None`
/// when clap refuses the line for another reason. `-f` needs `-T`, so it
/// comes with a valid one.
fn mq_settings(option: &str, value: &str) -> Option<Result<IpcSettings, String>> {
    let mut argv = vec![
        "latscope".to_string(),
        "mq".to_string(),
        format!("{option}={value}"),
    ];
    if option == "--forcetimeout" {
        argv.push("--timeout=1".to_string());
    }
    match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Mq(args),
        }) => Some(IpcSettings::from_mq_args(&args).map_err(|e| e.0)),
        Ok(_) => panic!("{argv:?} parsed as another subcommand"),
        Err(e) => crate::common::value_refusal(&e).map(Err),
    }
}

/// Each option refuses a value that is plainly wrong with one line naming it.
#[test]
fn every_option_names_itself_in_its_error() {
    for (option, value, needle) in [
        ("--interval", "x", "-i/--interval"),
        ("--distance", "x", "-d/--distance"),
        ("--loops", "x", "-l/--loops"),
        ("--prio", "x", "-p/--prio"),
        ("--threads", "x", "-t/--threads"),
        ("--affinity", "x", "-a/--affinity"),
        ("--duration", "x", "-D/--duration"),
        ("--timeout", "x", "-T/--timeout"),
        ("--forcetimeout", "x", "-f/--forcetimeout"),
        ("--breaktrace", "x", "-b/--breaktrace"),
        ("--max-latency", "x", "--max-latency"),
    ] {
        let message = mq_settings(option, value)
            .unwrap_or_else(|| panic!("clap refused {option}={value}"))
            .expect_err(&format!("{option}={value} accepted"));
        assert!(message.contains(needle), "{option}: {message}");
        assert!(!message.contains('\n'), "{option}: {message:?}");
    }
}

/// Fractions longer than nanosecond resolution: the documented promise is a
/// result "exact to the nanosecond" (truncated below it), for every unit.
#[test]
fn long_fractions_are_exact_to_the_nanosecond() {
    for (text, x, y, unit) in [
        ("0.99999999999m", 0, "99999999999", MIN),
        ("0.000000000009h", 0, "000000000009", HOUR),
        ("0.00000000000009d", 0, "00000000000009", 24 * HOUR),
    ] {
        assert_eq!(
            parse_duration(text, SEC).map(|d| d.as_nanos()),
            Ok(exact_floor_ns(x, y, unit)),
            "{text}"
        );
    }
}

/// The same rule as `mq_settings_errors_are_one_line`, for every option at
/// once, so that a failure lists all the options that echo a newline.
#[test]
fn a_newline_in_any_value_never_makes_a_multi_line_error() {
    let mut multi_line = Vec::new();
    for option in FREE_FORM_OPTIONS {
        for value in ["1\nx", "\n", "5\r\nm", "/nonexistent-dir\n/x.json"] {
            if let Some(Err(message)) = mq_settings(option, value)
                && (message.contains('\n') || message.contains('\r'))
            {
                multi_line.push(format!("{option}={value:?}: {message:?}"));
            }
        }
    }
    assert!(
        multi_line.is_empty(),
        "usage errors spanning several lines:\n{}",
        multi_line.join("\n")
    );
}
