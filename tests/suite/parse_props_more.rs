//! Property tests of the parsers `parse_props.rs` does not cover: sizes,
//! CPU lists (the kernel's and `timer --cpus`), `--fail-if` thresholds,
//! duration formatting read back, and the classic option styles of every
//! original tool (`-i100`, `-i 100`, `--interval=100`, `--interval 100`,
//! mqldt's `--bsize=4K,64K`). For each: no panic whatever is typed, a refusal
//! is one clear line (no Rust Debug text), and a value latscope prints reads
//! back as the same value. The binary's own clap errors are checked at the
//! end through the real binary.

use crate::common::proptest_config as config;
use clap::Parser;
use latscope::cli::{Cli, Command};
use latscope::settings::IpcSettings;
use latscope::settings::logdisk::LogdiskSettings;
use latscope::settings::timer::TimerSettings;
use latscope::threshold::{self, Limit, METRICS};
use latscope::units::format_bytes;
use latscope::units::values::{cpu_list, size};
use latscope::units::{HIGHEST_KERNEL_CPU, parse_cpu_list};
use latscope::units::{format_duration, parse_duration};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::time::Duration;

/// Text weighted towards what nearly parses: digits, size and time units,
/// separators, signs, blanks, newlines, non-ASCII digits, NUL.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9]{0,25}",
        "[0-9.]{0,12}(k|K|KiB|m|M|MiB|g|G|GiB|B|x| |)[0-9]{0,3}",
        "[-+ ,\t\n0-9.kmgKMGiBsuµn%><p\u{661}\u{ff15}\u{0}]{0,16}",
        "[0-9]{1,6}(-[0-9]{1,25})?(,[0-9]{1,25}(-[0-9]{1,25})?){0,3}",
    ]
}

/// A refusal as latscope shows it: one non-empty line, no Rust Debug text.
fn assert_clear(message: &str, input: &str) {
    assert!(!message.trim().is_empty(), "empty error for {input:?}");
    assert!(
        !message.contains('\n'),
        "multi-line error for {input:?}: {message:?}"
    );
    for noise in [
        "Error {",
        "kind:",
        "ParseIntError",
        "ParseFloatError",
        "Some(",
        "None",
    ] {
        assert!(
            !message.contains(noise),
            "Debug text '{noise}' in the error for {input:?}: {message}"
        );
    }
}

/// A CPU set as the kernel prints it: ascending, ranges joined (`0-3,8`).
fn cpu_list_text(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

fn cpu_set(max: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..=max, 1..40).prop_map(|s| s.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    // Sizes (--bsize, --fileSize).

    #[test]
    fn sizes_never_panic_and_refuse_in_one_line(text in hostile_text(), allow_g in any::<bool>()) {
        if let Err(e) = size("--bsize", &text, allow_g) {
            assert_clear(&e, &text);
        }
    }

    #[test]
    fn sizes_with_suffixes_are_exact(n in 1..=(1u64 << 33), unit in 0usize..7) {
        let (suffix, bytes) = [("", 1u64), ("K", 1 << 10), ("k", 1 << 10), ("M", 1 << 20),
            ("KiB", 1 << 10), (" MiB", 1 << 20), ("G", 1 << 30)][unit];
        let text = format!("{n}{suffix}");
        prop_assert_eq!(
            size("--fileSize", &text, true).ok(),
            n.checked_mul(bytes),
            "{}", text
        );
    }

    #[test]
    fn printed_sizes_read_back(n in 1..=(1u64 << 20), shift in prop::sample::select(vec![0u32, 10, 20, 30])) {
        let bytes = n << shift;
        let printed = format_bytes(bytes);
        // Sizes that print with a fraction (1.5 MiB) are rounded for people.
        if !printed.contains('.') {
            prop_assert_eq!(size("--fileSize", &printed, true), Ok(bytes), "{}", printed);
        }
    }

    // CPU lists: the kernel's (/sys/devices/system/cpu/online) and --cpus.

    #[test]
    fn kernel_cpu_lists_never_panic_or_run_away(text in hostile_text()) {
        if let Some(cpus) = parse_cpu_list(&text) {
            prop_assert!(cpus.iter().all(|&c| c <= HIGHEST_KERNEL_CPU), "{text:?}");
        }
    }

    #[test]
    fn kernel_cpu_lists_read_back(cpus in cpu_set(HIGHEST_KERNEL_CPU)) {
        let text = cpu_list_text(&cpus);
        prop_assert_eq!(parse_cpu_list(&text), Some(cpus), "{}", text);
    }

    #[test]
    fn timer_cpus_never_panic_and_refuse_in_one_line(text in hostile_text()) {
        match cpu_list("--cpus", &text) {
            Err(e) => assert_clear(&e, &text),
            Ok(cpus) => prop_assert!(!cpus.is_empty() && cpus.windows(2).all(|w| w[0] < w[1])),
        }
    }

    #[test]
    fn timer_cpus_read_back(cpus in cpu_set(1023)) {
        let text = cpu_list_text(&cpus);
        prop_assert_eq!(cpu_list("--cpus", &text).ok(), Some(cpus), "{}", text);
    }

    // --fail-if thresholds.

    #[test]
    fn thresholds_never_panic_and_refuse_in_one_line(metric in "(p99|max|avg|p99.9|x|)", op in "(>|<|)", limit in hostile_text()) {
        let text = format!("{metric}{op}{limit}");
        if let Err(e) = threshold::parse(&text) {
            assert_clear(&e, &text);
        }
    }

    #[test]
    fn thresholds_in_nanoseconds_read_back_exactly(
        m in 0..METRICS.len(),
        ns in 0..=100 * 365 * 86_400 * 1_000_000_000u64,
        delta in any::<bool>(),
    ) {
        let (name, metric) = METRICS[m];
        let text = format!("{name}>{}{ns}ns", if delta { "+" } else { "" });
        let t = threshold::parse(&text).map_err(TestCaseError::fail)?;
        prop_assert_eq!(t.metric, metric);
        prop_assert_eq!(t.limit, if delta { Limit::Delta(ns) } else { Limit::Absolute(ns) });
        // And the expression it prints parses to the same threshold.
        prop_assert_eq!(threshold::parse(&t.to_string()), Ok(t));
    }

    #[test]
    fn threshold_fractions_round_to_the_nearest_nanosecond(
        whole in 0..1_000_000u64,
        fraction in "[0-9]{1,12}",
        unit in prop::sample::select(vec![("us", 1_000u128), ("ms", 1_000_000), ("s", 1_000_000_000), ("h", 3_600_000_000_000)]),
    ) {
        let text = format!("p99>{whole}.{fraction}{}", unit.0);
        let scale = 10u128.pow(fraction.len() as u32);
        let exact_twice = (u128::from(whole) * scale + fraction.parse::<u128>().unwrap()) * unit.1 * 2;
        let expected = (exact_twice / scale).div_ceil(2) as u64;
        match threshold::parse(&text) {
            Ok(t) => prop_assert_eq!(t.limit, Limit::Absolute(expected), "{}", text),
            Err(e) => {
                // Only beyond the 100-year cap.
                prop_assert!(expected > 100 * 365 * 86_400 * 1_000_000_000, "{}: {}", text, e);
                assert_clear(&e, &text);
            }
        }
    }

    #[test]
    fn relative_thresholds_read_back(pct in 0u32..1_000_000, hundredths in 0u32..100) {
        let text = format!("p99>+{pct}.{hundredths:02}%");
        let t = threshold::parse(&text).map_err(TestCaseError::fail)?;
        let expected: f64 = format!("{pct}.{hundredths:02}").parse().unwrap();
        prop_assert_eq!(t.limit, Limit::Relative(expected));
    }

    // Durations as latscope prints them (tables, headers) read back.

    #[test]
    fn printed_durations_read_back(secs in 0..=100 * 365 * 86_400u64, ms in 0..1000u64, whole in any::<bool>()) {
        let d = if whole { Duration::from_secs(secs) } else { Duration::from_millis(ms) };
        let printed = format_duration(d);
        prop_assert_eq!(parse_duration(&printed, 1_000_000_000), Ok(d), "{}", printed);
    }
}

/// The options of each original tool that take a value: (subcommand, short
/// letter if any, long name).
const VALUED: [(&str, Option<char>, &str); 24] = [
    ("mq", Some('i'), "interval"),
    ("mq", Some('l'), "loops"),
    ("mq", Some('d'), "distance"),
    ("mq", Some('p'), "prio"),
    ("mq", Some('t'), "threads"),
    ("mq", Some('D'), "duration"),
    ("mq", Some('a'), "affinity"),
    ("mq", Some('T'), "timeout"),
    ("signal", Some('i'), "interval"),
    ("svsem", Some('l'), "loops"),
    ("svmq", Some('b'), "breaktrace"),
    ("sem", Some('i'), "iterations"),
    ("sem", Some('I'), "interval"),
    ("sem", Some('n'), "num_cpus"),
    ("sem", Some('p'), "priority"),
    ("timer", Some('p'), "period"),
    ("timer", Some('T'), "duration"),
    ("timer", Some('H'), "cells"),
    ("timer", Some('B'), "bucket"),
    ("timer", Some('c'), "cpu"),
    ("logdisk", None, "bsize"),
    ("logdisk", None, "fileSize"),
    ("logdisk", None, "numFiles"),
    ("logdisk", None, "delay"),
];

/// What the settings of `argv` are (their Debug text), or the usage error
/// (a value's, which clap reports in the value parser's words, or the
/// settings'); `None` when clap refused the line otherwise.
fn settings_of(argv: &[String]) -> Option<Result<String, String>> {
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => return crate::common::value_refusal(&e).map(Err),
    };
    let debug = |r: Result<String, latscope::settings::UsageError>| r.map_err(|e| e.0);
    Some(debug(match &cli.command {
        Command::Mq(a) => IpcSettings::from_mq_args(a).map(|s| format!("{s:?}")),
        Command::Sem(a) => IpcSettings::from_sem_args(a).map(|s| format!("{s:?}")),
        Command::Signal(a) | Command::Svsem(a) | Command::Svmq(a) => {
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork).map(|s| format!("{s:?}"))
        }
        Command::Timer(a) => TimerSettings::from_args(a).map(|s| format!("{s:?}")),
        Command::Logdisk(a) => LogdiskSettings::from_args(a).map(|s| format!("{s:?}")),
        other => panic!("not a classic tool: {other:?}"),
    }))
}

/// Values that cannot be mistaken for an option (no leading '-').
fn option_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,7}",
        "[0-9]{1,4}(us|ms|s|m|K|M)",
        "[0-9]{1,3}(,[0-9]{1,3}[KM]?){1,3}",
        "[0-9a-zA-Z.,:%]{1,8}",
    ]
}

proptest! {
    #![proptest_config(Config { cases: 256, ..config() })]

    #[test]
    fn classic_option_styles_mean_the_same(which in 0..VALUED.len(), value in option_value()) {
        let (sub, short, long) = VALUED[which];
        let argv = |rest: &[String]| -> Vec<String> {
            let mut v = vec!["latscope".to_string(), sub.to_string()];
            if sub == "logdisk" {
                v.extend(["--dir".to_string(), std::env::temp_dir().display().to_string()]);
            }
            v.extend(rest.iter().cloned());
            v
        };
        let mut forms = vec![
            argv(&[format!("--{long}={value}")]),
            argv(&[format!("--{long}"), value.clone()]),
        ];
        if let Some(c) = short {
            forms.push(argv(&[format!("-{c}{value}")]));
            forms.push(argv(&[format!("-{c}"), value.clone()]));
        }
        let results: Vec<_> = forms.iter().map(|f| settings_of(f)).collect();
        for (form, result) in forms.iter().zip(&results) {
            if let Some(Err(e)) = result {
                assert_clear(e, &form.join(" "));
            }
            prop_assert_eq!(result, &results[0], "{:?} differs from {:?}", form, forms[0]);
        }
    }
}

#[test]
fn mqldt_block_size_lists_in_both_styles() {
    let dir = std::env::temp_dir().display().to_string();
    let argv = |rest: &[&str]| -> Vec<String> {
        ["latscope", "logdisk", "--dir", dir.as_str()]
            .iter()
            .chain(rest)
            .map(|s| s.to_string())
            .collect()
    };
    let joined = settings_of(&argv(&["--bsize=4K,64K"])).unwrap().unwrap();
    let split = settings_of(&argv(&["--bsize", "4K,64K"])).unwrap().unwrap();
    let kib = settings_of(&argv(&["--bsize", "4KiB,64 KiB"]))
        .unwrap()
        .unwrap();
    assert_eq!(joined, split);
    assert_eq!(joined, kib);
    assert!(joined.contains("block_sizes: [4096, 65536]"), "{joined}");
}

/// clap's own refusals through the real binary: exit 2, one line on stderr.
#[test]
fn garbage_command_lines_get_one_line_and_exit_2() {
    let lines: [&[&str]; 12] = [
        &["mq", "-i"],
        &["mq", "--interval"],
        &["mq", "--nonsense"],
        &["mq", "-Z"],
        &["mq", "--mode", "sideways"],
        &["timer", "-p"],
        &["timer", "--period=\n5"],
        &["logdisk", "--bsize"],
        &["logdisk", "--sync", "maybe"],
        &["sem", "-i", "1", "extra"],
        &["cleanup", "--dir"],
        &["nosuchtest"],
    ];
    for args in lines {
        let out = crate::common::run(crate::common::latscope(10).args(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert_clear(err.trim_end(), &format!("{args:?}"));
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
