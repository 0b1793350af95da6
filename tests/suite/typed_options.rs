//! The numeric options through the real binary, now that clap reads every
//! value with its parser (units::values): a bad value is one line naming the
//! option and what to give, exit 2, nothing measured, under latscope's
//! names and the compatibility names; the classic spellings (`-i100`,
//! `--interval=100`, bare `-t`) still mean the same; and every default the
//! help prints is the one the code uses.

use crate::common::*;
use std::time::Duration;

/// `latscope ARGV` is refused with exactly `expected` as its one line (then
/// clap's pointer to the help).
fn refused_with(argv: &[&str], expected: &str) {
    let out = run(latscope(10).args(argv));
    assert_code(&out, 2);
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{argv:?}: {err}");
    let help = format!("latscope {} --help", argv[0]);
    assert_eq!(
        err.trim_end(),
        format!("latscope: error: {expected} (see '{help}')"),
        "{argv:?}"
    );
    assert!(out.stdout.is_empty(), "{argv:?}: {}", stdout_of(&out));
}

#[test]
fn bad_numbers_are_one_line_naming_the_option_and_the_fix() {
    for (argv, expected) in [
        (
            &["mq", "-i", "99999999999999999999"][..],
            "-i/--interval '99999999999999999999' is too large (at most 18446744073709551615)",
        ),
        (
            &["mq", "-i", "3600000001"],
            "-i/--interval 3600000001 us exceeds one hour: use a smaller interval",
        ),
        (
            &["mq", "-l", "-5"],
            "-l/--loops '-5' must not be negative (e.g. -l/--loops 100)",
        ),
        (
            &["mq", "-l", ""],
            "-l/--loops '' must be a whole number (e.g. -l/--loops 100)",
        ),
        (
            &["mq", "-p", "99999999999999999999"],
            "priority 99999999999999999999 is outside the real-time range 1..99: use -p 1..99",
        ),
        (&["mq", "-D", "0"], "-D/--duration must be longer than 0"),
        (
            &["mq", "-D", "5x"],
            "-D/--duration: unknown unit 'x' in '5x' (use s, m, h or d)",
        ),
        (&["mq", "-b", "0"], "-b/--breaktrace must be at least 1"),
        (
            &["sem", "-I", "1.5"],
            "-I/--interval '1.5' must be a whole number (e.g. -I/--interval 100)",
        ),
        (&["timer", "-p", "0"], "-p/--period must be at least 1"),
        (
            &["timer", "-p", "1000001"],
            "-p/--period 1000001: the period cannot be longer than 1 s (1000000 us)",
        ),
        (
            &["timer", "-t", "3"],
            "-t/--mode '3' is not a test mode: use 0 (user-space wake-up), 1 (thread latency) or 2 (IRQ latency)",
        ),
        (
            &["timer", "--cpus", "0-"],
            "--cpus '0-' is not a CPU list (e.g. --cpus 0,2-3)",
        ),
        (
            &["timer", "--warmup", "3601"],
            "--warmup 3601: at most 3600 loops (one hour)",
        ),
        (
            &["noise", "--threshold", "2s"],
            "--threshold: at most 1 s, not 2.00 s",
        ),
        (
            &["noise", "--runtime", "0ms"],
            "--runtime '0ms' must be longer than 0",
        ),
        (
            &["logdisk", "--bsize", "4X"],
            "--bsize '4X': unknown size suffix 'X' (use bytes, or K or M: 4096, 64K or 1M)",
        ),
        (&["logdisk", "--qm", "11"], "--qm 11: must be 1..10"),
        (
            &["logdisk", "-D", "0.5"],
            "-D/--duration '0.5': at least 1 second",
        ),
        (
            &["suite", "-D", "50ms"],
            "-D/--duration must be at least 100ms",
        ),
        (
            &["ipc", "--max-latency", "-1"],
            "--max-latency '-1' must not be negative (e.g. --max-latency 100)",
        ),
    ] {
        refused_with(argv, expected);
    }
}

/// Under a compatibility name the refusal is the same line, pointing to
/// that tool's help.
#[test]
fn compatibility_names_refuse_bad_numbers_in_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    for (name, argv, expected) in [
        (
            "pmqtest",
            ["-i", "abc"],
            "-i/--interval 'abc' must be a whole number (e.g. -i/--interval 100)",
        ),
        ("latency", ["-p", "0"], "-p/--period must be at least 1"),
        (
            "mqldt",
            ["--numFiles", "0"],
            "--numFiles 0: must be 1..10000",
        ),
    ] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(bin(), &link).unwrap();
        let mut c = std::process::Command::new(&link);
        c.args(argv);
        let out = run_std_with_timeout(c, Duration::from_secs(10));
        assert_code(&out, 2);
        assert_eq!(
            stderr_of(&out).trim_end(),
            format!("latscope: error: {expected} (see '{name} --help')")
        );
    }
}

/// The classic spellings of a value mean the same: a run of three loops
/// with each takes the interval asked (its JSON says so).
#[test]
fn classic_spellings_still_read() {
    for spelling in [
        &["-i100", "-l3", "-t", "-a"][..],
        &["--interval=100", "--loops=3", "-t", "1"],
        &["-i", "100", "-l", "3"],
    ] {
        let (_out, json, _dir) = run_mq_json(spelling, 30, 0);
        let text = json.to_string();
        assert!(
            text.contains("\"interval_us\":100"),
            "{spelling:?}: {}",
            &text[..text.len().min(2000)]
        );
    }
}

/// Every `[default: N]` printed is the value the code uses when the option
/// is left out: the help of each command says the constant's value.
#[test]
fn the_help_prints_the_defaults_the_code_uses() {
    // The short help (-h), where clap prints a default after the text, not
    // as a paragraph of its own.
    let help = |sub: &str| stdout_of(&run(latscope(10).args([sub, "-h"])));
    // The help of `option`: its line and the lines its text wraps onto,
    // joined.
    let line_of = |text: &str, option: &str| {
        let mut lines = text.lines().skip_while(|l| {
            // The option's own line: its name among the first two words
            // (`-p, --period`), not in another option's text.
            !(l.trim_start().starts_with('-')
                && l.split_whitespace()
                    .take(2)
                    .any(|w| w.trim_end_matches(',') == option))
        });
        let first = lines.next().unwrap_or_else(|| panic!("{option}: {text}"));
        let wrapped =
            lines.take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('-'));
        std::iter::once(first)
            .chain(wrapped)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let timer = help("timer");
    for (option, default) in [
        ("--period", "100"),
        ("--cells", "300"),
        ("--bucket", "1000"),
        ("--lines", "21"),
        ("--duration", "0"),
        ("--warmup", "1"),
        ("--priority", "99"),
    ] {
        let line = line_of(&timer, option);
        assert!(line.ends_with(&format!("[default: {default}]")), "{line}");
    }
    let ipc = help("ipc");
    assert!(
        line_of(&ipc, "--duration").ends_with("[default: 6s]"),
        "{ipc}"
    );
    let noise = help("noise");
    assert!(
        line_of(&noise, "--threshold").ends_with("[default: 1us]"),
        "{noise}"
    );
    assert!(
        line_of(&noise, "--period").ends_with("[default: 1s]"),
        "{noise}"
    );
    let suite = help("suite");
    assert!(
        line_of(&suite, "--duration").ends_with("[default: 10s]"),
        "{suite}"
    );
    let logdisk = help("logdisk");
    assert!(
        line_of(&logdisk, "--bsize").ends_with("[default: 4K]"),
        "{logdisk}"
    );
    assert!(
        line_of(&logdisk, "--fileSize").ends_with("[default: 1638400]"),
        "{logdisk}"
    );
    let sem = help("sem");
    assert!(
        line_of(&sem, "--iterations").ends_with("[default: 10000]"),
        "{sem}"
    );
}
