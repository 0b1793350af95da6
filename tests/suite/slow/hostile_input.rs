//! Hostile input through the real binary. The product rule: bad input gets
//! ONE line on stderr and exit code 2 before anything is measured; a run-time
//! failure gets one line and exit 1; never a panic, never exit 101, never a
//! hang. Exit codes are 0, 1, 2, 3 or 4 and nothing else.
//!
//! Every case puts `-D 0.3 -l 20 -i 100 -q` in front of the hostile option
//! (the last value of a repeated option wins), so that an input accepted by
//! mistake still ends in well under a second instead of running forever.

use crate::common::*;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::Output;

/// How long any single case may take: refusals take milliseconds, accepted
/// short runs under a second.
const TIMEOUT_S: u64 = 8;

/// Bounds every run that is accepted by mistake (later options override these).
const SAFETY: [&str; 7] = ["-D", "0.3", "-l", "20", "-i", "100", "-q"];

fn os(s: &str) -> OsString {
    OsString::from(s)
}

fn bytes(b: &[u8]) -> OsString {
    OsString::from_vec(b.to_vec())
}

/// `latscope mq SAFETY... ARGS` (plus `--no-mlockall` when needed).
fn mq_argv(args: &[OsString]) -> Vec<OsString> {
    let mut argv = vec![os("mq")];
    argv.extend(SAFETY.iter().map(|s| os(s)));
    argv.extend(mlock_args().iter().map(|s| os(s)));
    argv.extend(args.iter().cloned());
    argv
}

fn strs(args: &[&str]) -> Vec<OsString> {
    args.iter().map(|s| os(s)).collect()
}

/// `strs` of an argument list written as one line (see `args`).
fn os_args(line: &str) -> Vec<OsString> {
    strs(&args(line))
}

fn run_latscope<S: AsRef<OsStr>>(argv: &[S]) -> Output {
    run(latscope(TIMEOUT_S).args(argv))
}

/// A printable form of an argument list for messages (long ones shortened).
fn show(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if s.len() > 80 {
                format!(
                    "<{} bytes: {}...>",
                    a.len(),
                    s.chars().take(40).collect::<String>()
                )
            } else {
                format!("{s:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Never a panic, never a signal, never an exit code outside 0..=4.
fn assert_no_panic(out: &Output, what: &str) {
    let stderr = stderr_of(out);
    let stdout = stdout_of(out);
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(
            !stderr.contains(bad) && !stdout.contains(bad),
            "{what}: panic output\n{}",
            describe(out)
        );
    }
    match out.status.code() {
        Some(0..=4) => {}
        _ => panic!(
            "{what}: exit status must be 0, 1, 2, 3 or 4\n{}",
            describe(out)
        ),
    }
}

/// The usage-error contract: exit 2, exactly one line on stderr, starting
/// with `latscope: error:` and containing `needle`; nothing on stdout.
fn assert_usage_error(out: &Output, what: &str, needle: &str) {
    assert_no_panic(out, what);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: expected exit code 2\n{}",
        describe(out)
    );
    let stderr = stderr_of(out);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: a usage error must be exactly one line on stderr\n{}",
        describe(out)
    );
    assert!(
        lines[0].starts_with("latscope: error: "),
        "{what}: stderr line does not start with 'latscope: error: ': {:?}",
        lines[0]
    );
    assert!(
        lines[0].contains(needle),
        "{what}: error line does not mention {needle:?}: {:?}",
        lines[0]
    );
    assert!(
        out.stdout.is_empty(),
        "{what}: a usage error must not print (or measure) anything on stdout\n{}",
        describe(out)
    );
}

/// Runs `latscope ARGV` and checks that it did not panic; returns its output
/// and the command line for messages.
fn run_checked(argv: &[OsString]) -> (Output, String) {
    let out = run_latscope(argv);
    let what = format!("latscope {}", show(argv));
    assert_no_panic(&out, &what);
    (out, what)
}

/// Runs `latscope mq SAFETY... args` and checks the usage-error contract.
fn refused(args: &[OsString], needle: &str) {
    let (out, what) = run_checked(&mq_argv(args));
    assert_usage_error(&out, &what, needle);
}

fn refused_str(args: &[&str], needle: &str) {
    refused(&strs(args), needle);
}

/// `refused_str` for each case: the arguments written as one line (see
/// `args`), and what the error line must mention.
fn refused_lines(cases: &[(&str, &str)]) {
    for (line, needle) in cases {
        refused_str(&args(line), needle);
    }
}

/// Runs an accepted `latscope mq SAFETY... args` and checks it ends with 0.
fn accepted(args: &[OsString]) -> Output {
    let (out, _) = run_checked(&mq_argv(args));
    assert_code(&out, 0);
    out
}

/// A run with `--json FILE` that may write FILE (exit 0: a valid report with
/// its header) or refuse it before measuring (exit 2: the usage-error
/// contract, naming `--json`), and nothing else.
fn json_written_or_refused(out: &Output, what: &str, file: &Path) {
    match out.status.code() {
        Some(0) => check_report_header(&read_json(file)),
        Some(2) => assert_usage_error(out, what, "--json"),
        _ => panic!("{what}: expected 0 or 2\n{}", describe(out)),
    }
}

#[test]
fn bare_latscope_prints_usage_and_exits_2() {
    let out = run_latscope::<&str>(&[]);
    assert_no_panic(&out, "latscope");
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("Usage: latscope"),
        "no usage shown\n{}",
        describe(&out)
    );
    for sub in ["mq", "suite"] {
        assert!(
            stderr.lines().any(|l| l.trim_start().starts_with(sub)),
            "usage does not list {sub}\n{}",
            describe(&out)
        );
    }
    assert!(out.stdout.is_empty(), "{}", describe(&out));
}

#[test]
fn unknown_subcommands_options_and_positionals_are_one_line() {
    for (argv, needle) in [
        (
            vec!["mq", "-D", "0.3", "-l", "20", "extra-positional"],
            "extra-positional",
        ),
        (vec!["mq", "-D", "0.3", "-l", "20", "--bogus"], "--bogus"),
        (vec!["mq", "-D", "0.3", "-l", "20", "-Z"], "-Z"),
        (vec!["mq", "-D", "0.3", "-l"], "-l"),
        (
            vec!["suite", "-D", "0.3", "extra-positional"],
            "extra-positional",
        ),
        (vec!["suite", "-D", ""], "duration"),
        (vec!["suite", "-D", "1e3"], "duration"),
        (
            vec!["suite", "-D", "0.3", "--max-latency", "abc"],
            "--max-latency",
        ),
        (vec!["suite", "-D", "0.3", "--json", ""], "--json"),
        (vec!["bogus"], "bogus"),
        (vec![""], "error"),
        (vec!["--bogus"], "--bogus"),
    ] {
        let out = run_latscope(&argv);
        assert_usage_error(&out, &format!("latscope {argv:?}"), needle);
    }
}

#[test]
fn empty_values_are_refused() {
    for (option, needle) in [
        ("-i", "-i/--interval"),
        ("-d", "-d/--distance"),
        ("-l", "-l/--loops"),
        ("-p", "-p/--prio"),
        ("-t", "-t/--threads"),
        ("-a", "-a/--affinity"),
        ("-D", "-D/--duration"),
        ("-T", "-T/--timeout"),
        ("-b", "-b/--breaktrace"),
        ("--max-latency", "--max-latency"),
        ("--json", "--json"),
        ("--policy", "--policy"),
        ("--format", "--format"),
    ] {
        refused_str(&[option, ""], needle);
    }
    refused_str(&["-T", "1", "-f", ""], "-f/--forcetimeout");
}

#[test]
fn whitespace_values_are_refused() {
    for value in [" ", "\t", "   ", " \t "] {
        for (option, needle) in [
            ("-i", "-i/--interval"),
            ("-l", "-l/--loops"),
            ("-p", "-p/--prio"),
            ("-t", "-t/--threads"),
            ("-D", "-D/--duration"),
            ("-T", "-T/--timeout"),
        ] {
            refused_str(&[option, value], needle);
        }
    }
}

#[test]
fn unicode_digits_are_refused() {
    refused_lines(&[
        ("-l ١٢", "-l/--loops"),
        ("-i ١٠٠", "-i/--interval"),
        ("-p ９９", "-p/--prio"),
        ("-t ²", "-t/--threads"),
        ("-D ５s", "-D/--duration"),
        ("-D 1٫5m", "-D/--duration"),
        ("-T ①", "-T/--timeout"),
    ]);
}

#[test]
fn huge_numbers_are_refused() {
    refused_lines(&[
        ("-l 99999999999999999999999", "-l/--loops"),
        ("-l 18446744073709551616", "-l/--loops"),
        ("-p 99999999999", "priority"),
        ("-p 18446744073709551615", "priority"),
        ("-i 18446744073709551615", "interval"),
        ("-d 18446744073709551615 -t 2", "interval"),
        ("-d 9223372036854775808 -t 3", "interval"),
        ("-t 18446744073709551616", "-t/--threads"),
        ("-t 256", "-t/--threads"),
        ("-a 18446744073709551615", "CPU"),
        ("-b 99999999999999999999999", "-b/--breaktrace"),
        ("--max-latency 99999999999999999999999", "--max-latency"),
        (
            "-D 99999999999999999999999999999999999999999",
            "-D/--duration",
        ),
        ("-T 100000d", "-T/--timeout"),
    ]);
}

/// The largest values that are valid must run normally, not overflow.
#[test]
fn largest_valid_limits_run_normally() {
    for line in [
        "--max-latency 18446744073709551615",
        "-D 36500d -l 20",
        "-T 36500d",
    ] {
        let args = args(line);
        let out = accepted(&strs(&args));
        let stdout = stdout_of(&out);
        assert!(
            stdout.lines().any(|l| l.starts_with("pair 0")),
            "{args:?}: no result table\n{}",
            describe(&out)
        );
    }
}

/// A break-trace limit of ~584 000 years in microseconds can never be
/// crossed. Computing it in nanoseconds must not overflow: not into a panic
/// (debug build: "attempt to multiply with overflow"), and not into a wrapped
/// tiny limit that stops the run at the first sample (release build: the
/// limit 18446744073709552 us wraps to 384 ns). Refusing it is fine too.
#[test]
fn huge_breaktrace_limit_does_not_overflow() {
    for value in ["18446744073709552", "18446744073709551615"] {
        let mut args = os_args("-D 5 -l 200 -b");
        args.push(os(value));
        let (out, what) = run_checked(&mq_argv(&args));
        if out.status.code() == Some(2) {
            assert_usage_error(&out, &what, "-b/--breaktrace");
            continue;
        }
        assert_code(&out, 0);
        let stdout = stdout_of(&out);
        assert!(
            stdout.contains("ended: all loops done"),
            "{what}: a limit no sample can reach stopped the run\n{}",
            describe(&out)
        );
    }
}

#[test]
fn malformed_durations_are_refused() {
    for value in [
        "1e3", "1h30", "1.5.5m", "100000d", "-5", "0", "0s", "0.0", ".", "5 m", "1h-30m", "1hh",
        "m", "inf", "NaN", "0x10", "1_000", "+5",
    ] {
        refused_str(&["-D", value], "-D/--duration");
    }
    refused_lines(&[
        ("-T 0.0000000001", "-T/--timeout"),
        ("-T 0", "-T/--timeout"),
        ("-T 1 -f 0.0000000001", "-f/--forcetimeout"),
        ("-f 1", "-T"),
    ]);
}

#[test]
fn negative_and_wordy_values_are_refused() {
    refused_lines(&[
        ("-a -1", "-a/--affinity"),
        ("-a abc", "-a/--affinity"),
        ("-t -3", "-t/--threads"),
        ("-t 0", "-t/--threads"),
        ("-t two", "-t/--threads"),
        ("-l -5", "-l/--loops"),
        ("-l 1.5", "-l/--loops"),
        ("-l 1e3", "-l/--loops"),
        ("-i -100", "-i/--interval"),
        ("-i 3600000001", "-i/--interval"),
        ("-i 0x64", "-i/--interval"),
        ("-p -1", "-p/--prio"),
        ("-p 100", "priority"),
        ("-b 0", "-b/--breaktrace"),
        ("-d -500", "-d/--distance"),
        ("--max-latency -1", "--max-latency"),
        ("--policy bogus", "--policy"),
        ("--policy FIFO2", "--policy"),
        ("--format bogus", "--format"),
        ("--mode sideways", "--mode"),
        ("--policy other -p 5", "priority"),
    ]);
}

#[test]
fn non_utf8_arguments_are_refused_with_one_line() {
    for (args, needle) in [
        (vec![os("-l"), bytes(b"\xff\xfe")], "UTF-8"),
        (vec![os("-D"), bytes(b"5\xffm")], "UTF-8"),
        (vec![os("-i"), bytes(b"\x80")], "UTF-8"),
        (vec![os("--policy"), bytes(b"fi\xffo")], "error"),
        (vec![bytes(b"extra\xff")], "error"),
        (vec![bytes(b"--bog\xffus")], "error"),
    ] {
        refused(&args, needle);
    }
    let out = run_latscope(&[bytes(b"m\xffq")]);
    assert_usage_error(&out, "latscope m\\xffq", "error");
}

/// A file name that is not UTF-8 is a valid Linux file name: the JSON is
/// written there (exit 0), or the name is refused before measuring (exit 2).
/// It must never panic after the run (the report's command line must not be
/// collected with `std::env::args()`, which panics on such an argument).
#[test]
fn non_utf8_json_path_is_written_or_refused_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["mq", "suite"] {
        let mut name = dir.path().as_os_str().as_bytes().to_vec();
        name.extend_from_slice(format!("/{command}-").as_bytes());
        name.extend_from_slice(b"r\xff\xfesult.json");
        let file = OsString::from_vec(name);
        let argv = if command == "mq" {
            mq_argv(&[os("--json"), file.clone()])
        } else {
            vec![
                os("suite"),
                os("-D"),
                os("0.3"),
                os("-q"),
                os("--json"),
                file.clone(),
            ]
        };
        let (out, what) = run_checked(&argv);
        json_written_or_refused(&out, &what, Path::new(&file));
    }
}

/// Started through a link whose name is not UTF-8 (argv[0]), a run still
/// ends normally, with its JSON report.
#[test]
fn non_utf8_program_name_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut link = dir.path().as_os_str().as_bytes().to_vec();
    link.extend_from_slice(b"/lat\xffscope");
    let link = std::path::PathBuf::from(OsString::from_vec(link));
    std::os::unix::fs::symlink(bin(), &link).expect("symlink to the binary");
    let json = dir.path().join("r.json");
    let mut cmd = std::process::Command::new(&link);
    cmd.args(mq_argv(&[os("--json"), json.clone().into_os_string()]));
    let out = run_std_with_timeout(cmd, std::time::Duration::from_secs(TIMEOUT_S));
    assert_no_panic(&out, "lat\\xffscope mq ... --json");
    assert_code(&out, 0);
    check_report_header(&read_json(&json));
}

#[test]
fn hundred_kilobyte_arguments_are_refused_with_one_line() {
    let digits = "7".repeat(100 * 1024);
    let letters = "x".repeat(100 * 1024);
    for (args, needle) in [
        (vec!["-l", digits.as_str()], "-l/--loops"),
        (vec!["-i", letters.as_str()], "-i/--interval"),
        (vec!["-D", digits.as_str()], "-D/--duration"),
        (vec!["-D", letters.as_str()], "-D/--duration"),
        (vec!["--policy", letters.as_str()], "--policy"),
        (vec![letters.as_str()], "error"),
    ] {
        refused_str(&args, needle);
    }
    // 100 KB of path: directories that do not exist.
    let deep = format!("/{}x.json", "no-such-dir/".repeat(100 * 1024 / 12));
    refused_str(&["--json", &deep], "--json");
}

/// A `--json` file name longer than NAME_MAX (255 bytes) can never be
/// created: like any bad destination it must be refused before measuring
/// (exit 2, one line), not after the run (exit 1).
#[test]
fn json_file_name_longer_than_name_max_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for len in [256, 100 * 1024] {
        let file = dir.path().join("a".repeat(len));
        refused(&[os("--json"), file.into_os_string()], "--json");
    }
}

/// A 255-byte file name is valid (NAME_MAX): the report must be written
/// there. The temporary file next to it must not need a longer name.
#[test]
fn json_file_name_of_255_bytes_is_written() {
    let (_dir, file) = temp_file(&"a".repeat(255));
    std::fs::write(&file, b"probe").expect("a 255-byte name is valid here");
    std::fs::remove_file(&file).unwrap();
    let out = accepted(&[os("--json"), file.clone().into_os_string()]);
    assert!(out.stderr.is_empty(), "{}", describe(&out));
    check_report_header(&read_json(&file));
}

#[test]
fn json_path_under_a_regular_file_is_refused() {
    let (_dir, regular) = temp_file("plain-file");
    std::fs::write(&regular, b"not a directory").unwrap();
    let target = regular.join("x.json");
    refused(&[os("--json"), target.into_os_string()], "--json");
    assert_eq!(
        std::fs::read(&regular).unwrap(),
        b"not a directory",
        "the regular file was changed"
    );
}

#[test]
fn json_path_under_a_dangling_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("does-not-exist"), &link).unwrap();
    refused(
        &[os("--json"), link.join("x.json").into_os_string()],
        "--json",
    );
    assert!(
        !dir.path().join("does-not-exist").exists(),
        "the symlink's target was created"
    );
}

/// `--json` naming a dangling symlink itself: written (the link is replaced,
/// never followed) or refused; never a panic, never through the link.
#[test]
fn json_path_that_is_a_dangling_symlink_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("planted-target");
    let link = dir.path().join("r.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (out, what) = run_checked(&mq_argv(&[os("--json"), link.clone().into_os_string()]));
    json_written_or_refused(&out, &what, &link);
    assert!(!target.exists(), "the JSON was written through the symlink");
}

/// getopt semantics: a repeated option is accepted and its last value wins.
#[test]
fn repeated_options_last_one_wins() {
    let (_dir, file) = temp_file("r.json");
    let mut args = os_args("-l 5 -l 3 -D 30 --json");
    args.push(file.clone().into_os_string());
    let out = accepted(&args);
    let report = read_json(&file);
    check_report_header(&report);
    let series = series(&report);
    assert_eq!(series.len(), 1, "{report}");
    assert_eq!(
        check_summary(&series[0], "series[0]", true),
        3,
        "-l 5 -l 3: the last value must win\n{}",
        describe(&out)
    );
    assert!(
        stdout_of(&out).contains("ended: all loops done"),
        "{}",
        describe(&out)
    );

    // A long interval overridden by a short one: finishes at once.
    let started = std::time::Instant::now();
    let out = accepted(&os_args("-i 3000000 -i 100 -l 20 -D 30"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "-i 3000000 -i 100 took {:?}\n{}",
        started.elapsed(),
        describe(&out)
    );
    // Flags repeated are harmless.
    accepted(&os_args("-q -q --no-dma-latency --no-dma-latency"));
}

/// A value with a newline must not turn the usage error into several lines.
#[test]
fn newline_in_a_value_keeps_the_error_on_one_line() {
    for (args, needle) in [
        (vec!["-l", "3\nx"], "-l/--loops"),
        (vec!["-i", "\n"], "-i/--interval"),
        (vec!["-D", "5\nm"], "-D/--duration"),
        (vec!["--json", "/no-such-dir\n/x.json"], "--json"),
    ] {
        refused_str(&args, needle);
    }
}

#[test]
fn hostile_thresholds_are_one_line() {
    refused_lines(&[
        ("--fail-if p99>", "no limit"),
        ("--fail-if >>>", "names no metric"),
        ("--fail-if p99>+5us", "needs latscope compare"),
        ("--fail-if max>1e9us", "unknown unit"),
        ("--fail-if p99>18446744073709551616h", "too large"),
    ]);
    let long = format!("p99>{}us", "9".repeat(100_000));
    refused(&[os("--fail-if"), os(&long)], "--fail-if");
    refused(&[os("--fail-if"), os("p99>5\u{0660}us")], "--fail-if");
    refused(&[os("--fail-if"), bytes(b"p99>5\xffus")], "");
    // compare with files that are not reports: one line, exit 2.
    let (_dir, file) = temp_file("garbage.json");
    std::fs::write(&file, [0xff, 0x00, b'{', b'[']).unwrap();
    let argv = [
        os("compare"),
        file.clone().into_os_string(),
        file.into_os_string(),
    ];
    let (out, what) = run_checked(&argv);
    assert_usage_error(&out, &what, "is not JSON");
    let argv = [os("compare"), os("/"), os("/")];
    let (out, what) = run_checked(&argv);
    assert_usage_error(&out, &what, "cannot read /");
}

// ---- Issue 18: what latscope did not create is never harmed ----------------
//
// The cases that touch system paths run in a private mount and IPC
// namespace (`unshare`) with a fresh tmpfs on /dev, so that even a
// regression could only replace a throw-away /dev/stdout.

/// Runs `script` with `sh -c` in a private mount and IPC namespace whose
/// /dev is a fresh tmpfs with stdout, fd, null, full and shm; `$0` is the
/// binary. None (with a note) when this machine cannot do that (not root,
/// no unshare).
fn in_private_dev(script: &str) -> Option<Output> {
    if !euid_is_root() || !Path::new("/usr/bin/unshare").exists() {
        eprintln!("note: not root or no unshare: private-namespace case skipped");
        return None;
    }
    let setup = "mount -t tmpfs tmpfs /dev && ln -s /proc/self/fd /dev/fd \
        && ln -s /proc/self/fd/1 /dev/stdout && ln -s /proc/self/fd/2 /dev/stderr \
        && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/full c 1 7 \
        && mkdir /dev/shm && mount -t tmpfs tmpfs /dev/shm || exit 99\n";
    let mut cmd = std::process::Command::new("/usr/bin/unshare");
    cmd.args(["--mount", "--ipc", "--propagation", "private", "sh", "-c"])
        .arg(format!("{setup}{script}"))
        .arg(bin())
        .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("run unshare");
    if out.status.code() == Some(99) {
        eprintln!("note: cannot set up a private /dev here: case skipped");
        return None;
    }
    Some(out)
}

#[test]
fn json_to_dev_stdout_writes_stdout_and_keeps_the_symlink() {
    for option in ["--json", "--csv", "--markdown"] {
        let script = format!(
            "\"$0\" futex -l 100 -i 100 -q {option} /dev/stdout; rc=$?; \
             test -L /dev/stdout && echo STILL-A-SYMLINK; exit $rc"
        );
        let Some(out) = in_private_dev(&script) else {
            return;
        };
        assert_code(&out, 0);
        let stdout = stdout_of(&out);
        assert!(
            stdout.contains("STILL-A-SYMLINK"),
            "{option}: {}",
            describe(&out)
        );
        let data = match option {
            "--json" => "\"schema_version\"",
            "--csv" => "p99",
            _ => "| ",
        };
        assert!(
            stdout.contains(data),
            "{option}: no data on stdout: {}",
            describe(&out)
        );
    }
}

#[test]
fn a_character_device_is_written_in_place_never_replaced() {
    let Some(out) = in_private_dev(
        "\"$0\" futex -l 100 -i 100 -q --json /dev/null --csv /dev/null; rc=$?; \
         test -c /dev/null && echo STILL-A-DEVICE; exit $rc",
    ) else {
        return;
    };
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("STILL-A-DEVICE"),
        "{}",
        describe(&out)
    );
    // A device that refuses the data: one line, exit 1, still a device.
    let Some(out) = in_private_dev(
        "\"$0\" futex -l 100 -i 100 -q --json /dev/full; rc=$?; \
         test -c /dev/full && echo STILL-A-DEVICE; exit $rc",
    ) else {
        return;
    };
    assert_no_panic(&out, "--json /dev/full");
    assert_code(&out, 1);
    assert!(
        stdout_of(&out).contains("STILL-A-DEVICE"),
        "{}",
        describe(&out)
    );
    let stderr = stderr_of(&out);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("latscope: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", describe(&out));
    assert!(errors[0].contains("/dev/full"), "{}", errors[0]);
}

#[test]
fn a_fifo_gets_the_data_in_place_and_one_without_reader_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let (out, what) = run_checked(&mq_argv(&[os("--json"), fifo.clone().into_os_string()]));
    assert_code(&out, 1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{what} hung"
    );
    assert!(
        stderr_of(&out).contains("no process is reading"),
        "{}",
        describe(&out)
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let (out, _) = run_checked(&mq_argv(&[os("--json"), fifo.clone().into_os_string()]));
    assert_code(&out, 0);
    assert!(reader.join().unwrap().contains("\"schema_version\""));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&kind),
        "the FIFO was replaced"
    );
}

#[test]
fn a_symlink_to_a_file_stays_and_its_target_gets_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    accepted(&[os("--json"), link.clone().into_os_string()]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    check_report_header(&read_json(&target));
    // Nothing else appeared next to them (no temporary file left).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn a_planted_temporary_name_survives_and_the_run_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    // `exec` keeps the shell's pid: the name the old code used for latscope.
    let out = std::process::Command::new("sh")
        .current_dir(dir.path())
        .args([
            "-c",
            "echo theirs > .latscope-$$.tmp; exec \"$0\" futex -l 100 -i 100 -q --json r.json",
        ])
        .arg(bin())
        .output()
        .unwrap();
    assert_no_panic(&out, "planted temporary name");
    assert_code(&out, 0);
    check_report_header(&read_json(&dir.path().join("r.json")));
    let planted: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert_eq!(
        planted.len(),
        1,
        "the planted file is gone or a temp was left"
    );
    assert_eq!(
        std::fs::read_to_string(planted[0].path()).unwrap(),
        "theirs\n"
    );
}

#[test]
fn two_outputs_naming_one_file_and_compare_over_its_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let same = dir.path().join(".").join("r.json");
    refused(
        &[
            os("--json"),
            file.clone().into_os_string(),
            os("--csv"),
            same.into_os_string(),
        ],
        "name the same file",
    );
    assert!(!file.exists(), "a refused run wrote a file");
    accepted(&[os("--json"), file.clone().into_os_string()]);
    let before = std::fs::read(&file).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let f = file.to_str().unwrap();
    for json in [f, link.to_str().unwrap()] {
        let out = run_latscope(&["compare", f, f, "--json", json]);
        assert_usage_error(&out, "compare over its input", "input report");
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the input was changed"
    );
}

#[test]
fn a_closed_pipe_on_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = format!("--dir={}", dir.path().display());
    for argv in [
        vec!["futex", "-l", "100", "-i", "100"],
        vec!["futex", "-l", "100", "-i", "100", "--json", "-"],
        vec![
            "logdisk",
            "--format",
            "classic",
            &d,
            "--duration",
            "1",
            "--fileSize",
            "1048576",
            "--bsize",
            "4096",
        ],
    ] {
        let mut child = std::process::Command::new(bin())
            .args(&argv)
            .args(if argv[0] == "futex" {
                mlock_args()
            } else {
                &[]
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let what = format!("{argv:?} into a closed pipe");
        assert_no_panic(&out, &what);
        assert!(
            !stderr_of(&out).contains("failed printing"),
            "{what}: {}",
            describe(&out)
        );
        assert!(
            matches!(out.status.code(), Some(0) | Some(4)),
            "{what}: {}",
            describe(&out)
        );
    }
}

#[test]
fn stdout_on_a_full_device_or_closed_is_one_line_and_exit_1() {
    for redirect in [">/dev/full", ">&-"] {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("exec \"$0\" futex -l 100 -i 100 -q {redirect}"),
            ])
            .arg(bin())
            .output()
            .unwrap();
        assert_no_panic(&out, redirect);
        assert_code(&out, 1);
        let errors: Vec<String> = stderr_of(&out)
            .lines()
            .filter(|l| l.starts_with("latscope: error:"))
            .map(str::to_string)
            .collect();
        assert_eq!(errors.len(), 1, "{redirect}: {}", describe(&out));
        assert!(errors[0].contains("standard output"), "{}", errors[0]);
    }
}

/// Item 11: each of these signals ends the run as Ctrl-C does: the JSON is
/// written and no System V set, queue or shared memory is left (checked in
/// a private IPC namespace, where anything present is latscope's).
#[test]
fn hup_quit_usr2_alrm_write_the_json_and_leave_nothing() {
    for sig in ["HUP", "QUIT", "USR2", "ALRM"] {
        for test in ["svsem", "mq"] {
            let script = format!(
                "mkdir -p /dev/mqueue && mount -t mqueue mqueue /dev/mqueue || exit 99\n\
                 d=$(mktemp -d); \"$0\" {test} -D 10 -q --no-mlockall --json $d/r.json >/dev/null & p=$!; \
                 sleep 1; kill -{sig} $p; wait $p; rc=$?; \
                 grep -c schema_version $d/r.json; grep -o '\"end_reason\": \"interrupted\"' $d/r.json | head -1; \
                 echo sem=$(tail -n +2 /proc/sysvipc/sem | wc -l) msg=$(tail -n +2 /proc/sysvipc/msg | wc -l) \
                 shm=$(tail -n +2 /proc/sysvipc/shm | wc -l) mq=$(ls /dev/mqueue | wc -l) devshm=$(ls /dev/shm | wc -l); \
                 rm -rf $d; exit $rc"
            );
            let Some(out) = in_private_dev(&script) else {
                return;
            };
            let what = format!("{test} stopped by SIG{sig}");
            assert_no_panic(&out, &what);
            assert_code(&out, 0);
            let stdout = stdout_of(&out);
            assert!(
                stdout.starts_with("1\n"),
                "{what}: no JSON: {}",
                describe(&out)
            );
            assert!(stdout.contains("interrupted"), "{what}: {}", describe(&out));
            assert!(
                stdout.contains("sem=0 msg=0 shm=0 mq=0 devshm=0"),
                "{what}: objects left: {}",
                describe(&out)
            );
        }
    }
}

/// Item 5: a terminal escape in a report's test name or series label is shown
/// escaped by compare, never sent to the terminal.
#[test]
fn compare_escapes_control_characters_from_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    accepted(&[os("--json"), file.clone().into_os_string()]);
    let mut report: serde_json::Value = read_json(&file);
    report["tests"][0]["test"] = serde_json::json!("mq\u{1b}]0;owned\u{7}\u{1b}[2J");
    report["tests"][0]["series"][0]["label"] = serde_json::json!("pair\u{9b}31m 0");
    std::fs::write(&file, serde_json::to_vec(&report).unwrap()).unwrap();
    let f = file.to_str().unwrap();
    let out = run_latscope(&["compare", f, f]);
    assert_no_panic(&out, "compare with escapes");
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{7}'),
        "a control character reached the terminal: {text:?}"
    );
    assert!(text.contains("\\u{1b}[2J"), "{text}");
}

/// Item 16: messages that name the wrong option or the wrong limit.
#[test]
fn priority_and_schema_messages_name_the_right_thing() {
    for (argv, needle, not) in [
        (
            vec!["timer", "-P", "100", "-T", "1"],
            "use -P 1..99",
            "use -p",
        ),
        (
            vec!["mq", "-p", "18446744073709551616"],
            "outside the real-time range 1..99",
            "at most",
        ),
        (
            vec!["timer", "-P", "99999999999999999999", "-T", "1"],
            "use -P 1..99",
            "at most",
        ),
    ] {
        let out = run_latscope(&argv);
        assert_usage_error(&out, &argv.join(" "), needle);
        assert!(
            !stderr_of(&out).contains(not),
            "{argv:?}: {}",
            describe(&out)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        r#"{"schema": "latscope-report", "schema_version": "2"}"#,
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = run_latscope(&["compare", f, f]);
    assert_usage_error(&out, "schema_version as text", "(a number)");
}

/// Item 9: report and compare stop within a second on a stop signal, even
/// blocked on a FIFO nobody writes, and leave no temporary file.
#[test]
fn report_and_compare_stop_within_a_second_on_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.json");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    let out_html = dir.path().join("o.html");
    let out_json = dir.path().join("o.json");
    for (argv, sig) in [
        (
            vec!["report", f, "-o", out_html.to_str().unwrap()],
            libc::SIGINT,
        ),
        (
            vec!["compare", f, f, "--json", out_json.to_str().unwrap()],
            libc::SIGTERM,
        ),
        (
            vec!["report", f, "-o", out_html.to_str().unwrap()],
            libc::SIGHUP,
        ),
    ] {
        let child = spawn(&argv);
        std::thread::sleep(std::time::Duration::from_millis(300));
        child.signal(sig);
        let started = std::time::Instant::now();
        let (status, _, err) = child.wait(std::time::Duration::from_secs(5));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{argv:?}: took {:?}",
            started.elapsed()
        );
        assert_eq!(status.code(), Some(1), "{argv:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{argv:?}: {err}");
        assert!(err.contains("interrupted"), "{argv:?}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("in.json")],
        "files left: {left:?}"
    );
}

/// Item 10: a small stack limit (`ulimit -s 64`) does not overflow main.
#[test]
fn a_small_stack_limit_does_not_overflow() {
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -s 64 && exec \"$0\" futex -l 50 -i 100 -q"])
        .arg(bin())
        .output()
        .unwrap();
    assert_no_panic(&out, "ulimit -s 64");
    assert_code(&out, 0);
}

/// A report or samples file from another host may carry terminal escapes in
/// its test names, labels and values: every message that quotes them
/// (compare's "different tests" and "no series in common", serde's "unknown
/// variant" from `report`) and `latscope samples`' CSV show them escaped, on
/// one line: no ESC, BEL or line feed of the file reaches the terminal.
#[test]
fn input_data_in_messages_and_the_samples_csv_is_escaped() {
    const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\n";
    let no_raw_controls = |text: &str, what: &str| {
        assert!(
            !text.contains(['\u{1b}', '\u{7}']),
            "{what}: a raw control reached the output: {text:?}"
        );
        assert!(
            text.contains("\\u{1b}"),
            "{what}: not shown escaped: {text:?}"
        );
    };
    let (dir, samples) = temp_file("s.samples");
    let (_, report, _d) = run_mq_json(
        &[
            "-l",
            "50",
            "-i",
            "200",
            "--samples",
            samples.to_str().unwrap(),
        ],
        60,
        0,
    );
    let base = dir.path().join("base.json");
    std::fs::write(&base, report.to_string()).unwrap();

    // compare: another test's name.
    let mut other = report.clone();
    other["tests"][0]["test"] = HOSTILE.into();
    let new = dir.path().join("new.json");
    std::fs::write(&new, other.to_string()).unwrap();
    let out = run(latscope(30).arg("compare").arg(&base).arg(&new));
    assert_no_panic(&out, "compare, another test");
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{}", describe(&out));
    assert!(err.contains("different tests"), "{}", describe(&out));
    no_raw_controls(&err, "compare, another test");

    // compare: the same test, a series label in common with none.
    let mut other = report.clone();
    other["tests"][0]["series"][0]["label"] = HOSTILE.into();
    std::fs::write(&new, other.to_string()).unwrap();
    let out = run(latscope(30).arg("compare").arg(&base).arg(&new));
    assert_no_panic(&out, "compare, another label");
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{}", describe(&out));
    assert!(err.contains("no series in common"), "{}", describe(&out));
    no_raw_controls(&err, "compare, another label");

    // report: a value serde does not know, quoted in its message.
    let mut other = report.clone();
    other["tests"][0]["end_reason"] = HOSTILE.into();
    std::fs::write(&new, other.to_string()).unwrap();
    let html = dir.path().join("r.html");
    let out = run(latscope(30).arg("report").arg(&new).arg("-o").arg(&html));
    assert_usage_error(&out, "report, unknown variant", "unknown variant");
    no_raw_controls(&stderr_of(&out), "report, unknown variant");

    // samples: the test name ("mq") and label ("pair 0") of the file,
    // overwritten in place by controls of the same lengths.
    let mut bytes = std::fs::read(&samples).unwrap();
    let patch = |bytes: &mut Vec<u8>, from: &[u8], to: &[u8]| {
        assert_eq!(from.len(), to.len());
        let mut field = (from.len() as u16).to_le_bytes().to_vec();
        field.extend_from_slice(from);
        let at = bytes
            .windows(field.len())
            .position(|w| w == field.as_slice())
            .expect("the field in the samples file");
        bytes[at + 2..at + 2 + to.len()].copy_from_slice(to);
    };
    patch(&mut bytes, b"mq", b"\x1b]");
    patch(&mut bytes, b"pair 0", b"\x1b[2J\n\x07");
    let crafted = dir.path().join("crafted.samples");
    std::fs::write(&crafted, &bytes).unwrap();
    let out = run(latscope(30).arg("samples").arg(&crafted));
    assert_code(&out, 0);
    let csv = stdout_of(&out);
    no_raw_controls(&csv, "samples");
    // One header and one row per sample: the line feed added no row.
    assert_eq!(csv.lines().count(), 51, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("0,\\u{1b}],\\u{1b}[2J\\n\\u{7},")),
        "{csv}"
    );
}

/// Running out of memory is one line and exit 1, never Rust's "memory
/// allocation of N bytes failed" and an abort (exit 134): a report whose
/// label is 48 MB, read under an address-space limit of 64 MiB (`ulimit
/// -v`; a small report needs under 20 MiB). No output file and no
/// temporary file is left.
#[test]
fn running_out_of_memory_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut report, _d) = run_mq_json(&["-l", "20", "-i", "200"], 60, 0);
    report["tests"][0]["series"][0]["label"] = "x".repeat(48 << 20).into();
    let big = dir.path().join("big.json");
    std::fs::write(&big, report.to_string()).unwrap();
    drop(report);
    let html = dir.path().join("r.html");
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("report").arg(&big).arg("-o").arg(&html);
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 << 20,
                rlim_max: 64 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run(assert_cmd::Command::from_std(cmd).timeout(std::time::Duration::from_secs(60)));
    assert_no_panic(&out, "report under ulimit -v");
    assert_code(&out, 1);
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{}", describe(&out));
    assert!(
        err.starts_with("latscope: error: out of memory: an allocation of "),
        "{}",
        describe(&out)
    );
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["big.json"]);
}

/// A read-only file (0444) at an output path, the caller's own (root's
/// too, whom the kernel would let replace it), is refused before measuring
/// with one line that says so and how to go on; the file is kept.
#[test]
fn a_read_only_output_file_is_refused_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.json");
    std::fs::write(&file, "old\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    for option in ["--json", "--csv", "--markdown"] {
        let out = run(mq(&["-l", "10", "-q", option, file.to_str().unwrap()], 30));
        assert_usage_error(&out, option, "is read-only (mode 0444)");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n", "{option}");
    }
}

/// One rule for links and files in a sticky world-writable directory (the
/// kernel's protected_symlinks and protected_regular, applied by latscope to
/// root too): another user's regular file there, writable or 0444, is
/// refused before measuring (exit 2, one line), never replaced; one's own
/// file there is replaced. Needs root (to own a file as another user).
#[test]
fn another_user_s_file_in_a_sticky_directory_is_refused_not_replaced() {
    if !euid_is_root() {
        latscope::testing::skip(
            "slow::hostile_input::another_user_s_file_in_a_sticky_directory_is_refused_not_replaced",
            "needs root to give a file to another user",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let public = dir.path().join("pub");
    std::fs::create_dir(&public).unwrap();
    std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o1777)).unwrap();
    for (name, mode) in [("theirs", 0o644), ("theirs_ro", 0o444)] {
        let file = public.join(name);
        std::fs::write(&file, "theirs\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let out = run(mq(
            &["-l", "10", "-q", "--json", file.to_str().unwrap()],
            30,
        ));
        assert_usage_error(&out, name, "of another user in a sticky directory");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "theirs\n",
            "{name}"
        );
    }
    let mine = public.join("mine");
    std::fs::write(&mine, "old\n").unwrap();
    let out = run(mq(
        &["-l", "10", "-q", "--json", mine.to_str().unwrap()],
        30,
    ));
    assert_code(&out, 0);
    assert!(
        std::fs::read_to_string(&mine)
            .unwrap()
            .contains("\"schema\"")
    );
}
