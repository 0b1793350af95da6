//! The command line itself: help, version, and refusing bad input with exit
//! code 2, one line on stderr and nothing measured.

use crate::common::*;
use std::time::Duration;

#[test]
fn help_lists_the_subcommands() {
    let out = run(latscope(10).arg("--help"));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    for sub in ["mq", "suite"] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{sub} "))),
            "--help does not list the {sub} subcommand:\n{text}"
        );
    }
}

/// Every subcommand's help ends with examples, as git's and hyperfine's do
/// (cyclictest, cyclicdeadline, oslat and signaltest print the original
/// tool's usage instead).
#[test]
fn every_subcommand_s_help_ends_with_examples() {
    let top = stdout_of(&run(latscope(10).arg("--help")));
    let subcommands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A subcommand's line; a wrapped description is indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|s| {
            ![
                "help",
                "cyclictest",
                "cyclicdeadline",
                "oslat",
                "signaltest",
                "hwlatdetect",
                "pi-stress",
                "rt-migrate-test",
            ]
            .contains(&s.as_str())
        })
        .collect();
    assert!(subcommands.len() > 15, "{top}");
    for sub in subcommands {
        let out = run(latscope(10).args([sub.as_str(), "--help"]));
        assert_code(&out, 0);
        let help = stdout_of(&out);
        let examples = help
            .rsplit_once("Examples:\n")
            .map(|(_, e)| e)
            .unwrap_or_else(|| panic!("{sub}: no examples:\n{help}"));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.is_empty()).collect();
        assert!((2..=3).contains(&lines.len()), "{sub}: {examples}");
        for line in lines {
            assert!(
                line.starts_with(&format!("  latscope {sub} ")),
                "{sub}: {line}"
            );
        }
    }
}

#[test]
fn version_prints_name_and_version() {
    let out = run(latscope(10).arg("--version"));
    assert_code(&out, 0);
    assert_eq!(
        stdout_of(&out).trim(),
        format!("latscope {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn mq_help_shows_the_pmqtest_options() {
    let out = run(latscope(10).args(["mq", "--help"]));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    for option in [
        "-a, --affinity",
        "-b, --breaktrace",
        "-d, --distance",
        "-D, --duration",
        "-f, --forcetimeout",
        "-i, --interval",
        "-l, --loops",
        "-p, --prio",
        "-S, --smp",
        "-t, --threads",
        "-T, --timeout",
        "-q, --quiet",
        "--json",
    ] {
        assert!(text.contains(option), "mq --help lacks {option}:\n{text}");
    }
}

/// Runs `args` and checks the usage-error contract: exit 2, exactly one line
/// on stderr, nothing on stdout, no measurement (so it is quick).
fn assert_usage_error(args: &[&str]) {
    let out = run(latscope(15)
        .args(args)
        .args(if args[0] == "mq" { mlock_args() } else { &[] }));
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} must be refused with exit code 2\n{}",
        describe(&out)
    );
    let err = stderr_of(&out);
    assert_eq!(
        err.lines().count(),
        1,
        "{args:?}: expected exactly one line on stderr\n{}",
        describe(&out)
    );
    assert!(
        err.trim_end().len() > "latscope: error: ".len(),
        "{args:?}: the error line says nothing: {err:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "{args:?}: nothing may be printed (or measured) on stdout\n{}",
        describe(&out)
    );
}

#[test]
fn bad_input_is_refused_with_one_line_and_exit_2() {
    // Each case carries extra options that end a wrongly accepted run on its
    // own after about a second: it then fails on its exit code and report.
    let cases = [
        "mq -p 100 -D 1",
        "mq -p -1 -D 1",
        "mq --policy other -p 5 -D 1",
        "mq --policy fifo -D 1",
        "mq -t 0 -D 1",
        "mq -t 100000 -D 1",
        "mq -l -5 -D 1",
        "mq -l abc -D 1",
        "mq -i 3600000001 -D 1",
        "mq --mode sideways -D 1",
        "mq --mode roundtrip -T 1 -f 2 -D 1",
        "mq --cross-cpu -a 0 -D 1",
        "sem -n 9999 -D 1",
        "sem -n 0 -D 1",
        "sem -r -D 1",
        "sem -p 100 -D 1",
        "sem -A --cross-cpu -D 1",
        "signal -p 100 -D 1",
        "signal -t 0 -D 1",
        "svsem --mode x -D 1",
        "pipe -i -1 -D 1",
        "futex -l abc -D 1",
        "ipc --only nope -D 1",
        "ipc --mode x -D 1",
        "ipc -p 100 -D 1",
        "mq -i abc -D 1",
        "mq -D 5x -l 10000 -i 100",
        "mq -D 0 -l 10000 -i 100",
        "mq -D -3 -l 10000 -i 100",
        "mq -f 1 -D 1",
        "mq -a 9999 -D 1",
        "mq --json /nonexistent/dir/x.json -D 1",
        "mq --json / -D 1",
        "mq --max-latency 0 -D 1",
        "mq --bogus -D 1",
        "suite --duration 5x",
    ];
    for case in cases {
        assert_usage_error(&args(case));
    }
}

#[test]
fn a_missing_required_argument_is_named_on_the_one_line() {
    for (case, named) in [
        ("completions", "<SHELL>"),
        ("report", "<RUN.json>"),
        ("cleanup --dir", "--dir <DIR>"),
    ] {
        assert_usage_error(&args(case));
        let out = run(latscope(15).args(args(case)));
        let err = stderr_of(&out);
        assert!(err.contains(named), "{case}: {err}");
    }
}

#[test]
fn json_path_in_a_read_only_directory_is_a_usage_error() {
    // r-x for everyone: nobody but root may create a file in it.
    let dir = temp_dir_with_mode(0o555);
    let target = dir.path().join("x.json");
    let target = target.to_str().expect("utf-8 temp path");
    if !euid_is_root() {
        assert_usage_error(&["mq", "--json", target, "-D", "1"]);
        return;
    }
    // Root may write anywhere, so the directory is not read-only for root;
    // test it as the unprivileged user nobody instead, if possible.
    let mut cmd = match nobody_runner() {
        Ok(c) => c,
        Err(why) => {
            latscope::testing::skip(
                "cli_usage::json_path_in_a_read_only_directory_is_a_usage_error",
                &format!("running as root, which may write anywhere, and {why}"),
            );
            return;
        }
    };
    cmd.arg(bin())
        .args(["mq", "--no-mlockall", "--json", target, "-D", "1"]);
    let out = run_std_with_timeout(cmd, Duration::from_secs(15));
    assert_code(&out, 2);
    assert_eq!(
        stderr_of(&out).lines().count(),
        1,
        "expected one error line\n{}",
        describe(&out)
    );
    assert!(out.stdout.is_empty(), "{}", describe(&out));
    assert!(!dir.path().join("x.json").exists());
}

/// A mistyped subcommand or option gets clap's suggestion, on the one line.
#[test]
fn a_mistyped_name_gets_a_suggestion() {
    for (argv, suggested) in [
        (vec!["tmer"], "did you mean 'timer'?"),
        (vec!["mq", "--loop", "3"], "did you mean '--loops'?"),
    ] {
        let out = run(latscope(10).args(&argv));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(suggested), "{argv:?}: {err}");
    }
}

/// Each test's help gives its own defaults only: `mq` is not told `ipc`'s.
#[test]
fn per_command_help_shows_that_commands_defaults() {
    let help = |sub: &str| stdout_of(&run(latscope(10).args([sub, "--help"])));
    let mq = help("mq");
    assert!(!mq.contains("ipc:"), "{mq}");
    assert!(mq.contains("[default: 1000]"), "{mq}");
    let ipc = help("ipc");
    assert!(ipc.contains("[default: 100]"), "{ipc}");
    assert!(!ipc.contains("[default: 1000]"), "{ipc}");
}

/// Under each compatibility name, help and usage errors speak as that tool:
/// its usage line, classic as the default format, and its own help named.
#[test]
fn compat_names_speak_as_their_tool() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "pmqtest",
        "sigwaittest",
        "svsematest",
        "semtest",
        "latency",
        "mqldt",
    ] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(bin(), &link).unwrap();
        let help = run_std_with_timeout(
            {
                let mut c = std::process::Command::new(&link);
                c.arg("--help");
                c
            },
            Duration::from_secs(10),
        );
        assert_code(&help, 0);
        let text = stdout_of(&help);
        assert!(
            text.contains(&format!("Usage: {name} [OPTIONS]")),
            "{name}: {text}"
        );
        assert!(
            text.contains("[default: classic]") && !text.contains("[default: modern]"),
            "{name}: {text}"
        );
        // `pmqtest mq`, as the old usage line suggested, is refused; the
        // error names the tool's own help.
        let mut c = std::process::Command::new(&link);
        c.arg("mq");
        let out = run_std_with_timeout(c, Duration::from_secs(10));
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("(see '{name} --help')")), "{err}");
    }
}
