//! Surfaces the hostile corpus of issue 40 found, through the real binary:
//! a `--json` write that fails after its open (item 8), oslat's bucket
//! width beyond an `int` (11), a repeated option whose earlier value is bad
//! (13), `-D` as the timer's duration (14), `ipc -D`'s total said before it
//! starts (17), the SCHED_DEADLINE hint an ordinary user gets (9) and the
//! suite's log-disk row where the current directory refuses it (21). The
//! runs are short (-l 5..100, -D 1).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// latscope under a drop-in's name (a link named like the tool).
struct DropIn {
    dir: TempDir,
}

impl DropIn {
    fn new() -> DropIn {
        DropIn {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// `tool ARGS` (latscope through a link named `tool`), within a minute.
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let link: PathBuf = self.dir.path().join(tool);
        if !link.exists() {
            std::os::unix::fs::symlink(bin(), &link).expect("symlink");
        }
        let mut cmd = assert_cmd::Command::new(&link);
        cmd.args(args).timeout(Duration::from_secs(60));
        run(cmd)
    }
}

/// The command that runs a program as `nobody`; None (the skip said)
/// where this cannot be done here.
fn nobody_or_skip(test: &str) -> Option<std::process::Command> {
    nobody_runner()
        .map_err(|why| latscope::testing::skip(test, &why))
        .ok()
}

/// The first `Failed to open`/`Failed to write`/`could not write` line.
fn failure_line(out: &Output) -> String {
    stderr_of(out)
        .lines()
        .find(|l| l.contains("Failed to") || l.contains("could not write"))
        .unwrap_or_default()
        .to_string()
}

/// `/dev/full` opens and refuses every write: the drop-ins print their
/// results, then say that the write failed (not the open) and exit 1
/// (the originals exit 0 in silence: docs/compat.md).
#[test]
fn a_json_write_that_fails_after_its_open_is_said_as_a_write_failure() {
    let test = "a_json_write_that_fails_after_its_open_is_said_as_a_write_failure";
    if !Path::new("/dev/full").exists() {
        latscope::testing::skip(test, "no /dev/full here");
        return;
    }
    let tools = DropIn::new();
    // (tool, arguments, a line its usual output must still have)
    let cases: [(&str, &[&str], &str); 4] = [
        ("cyclictest", &["-l", "50", "-q"], "T: 0 "),
        ("signaltest", &["-l", "50", "-q"], "T: 0 "),
        ("oslat", &["-D", "1", "-q"], "Maximum:"),
        ("ptsematest", &["-l", "50", "-q"], "#1 -> #0"),
    ];
    for (tool, args, shown) in cases {
        let mut argv = args.to_vec();
        argv.push("--json=/dev/full");
        let out = tools.run(tool, &argv);
        let what = format!("{tool} {}\n{}", argv.join(" "), describe(&out));
        assert_code(&out, 1);
        let line = failure_line(&out);
        assert!(
            line.contains("/dev/full") && line.contains("No space left on device"),
            "{what}"
        );
        assert!(
            !line.contains("Failed to open"),
            "the open succeeded: {what}"
        );
        assert!(
            stdout_of(&out).contains(shown),
            "its results are shown: {what}"
        );
    }
    // cyclicdeadline needs SCHED_DEADLINE (root or CAP_SYS_NICE).
    if !can_use_realtime() {
        latscope::testing::skip_part(
            test,
            "cyclicdeadline",
            "SCHED_DEADLINE needs root or CAP_SYS_NICE",
        );
        return;
    }
    let _turn = crate::common::turns::realtime_turn();
    let out = tools.run(
        "cyclicdeadline",
        &["-i", "4000", "-t", "1", "-D", "1", "-q", "--json=/dev/full"],
    );
    assert_code(&out, 1);
    assert_eq!(
        failure_line(&out),
        "Failed to write '/dev/full': No space left on device",
        "{}",
        describe(&out)
    );
}

/// rt-tests 2.8 keeps `-W` in an `int`: 2147483648 and 999999999999 wrap
/// to negative widths there and are refused; the drop-in refuses every
/// width beyond 2147483647 ns, with 2.8's line and exit code.
#[test]
fn oslat_refuses_a_bucket_width_beyond_an_int() {
    let tools = DropIn::new();
    for width in ["2147483648", "999999999999", "4294967297"] {
        let out = tools.run("oslat", &["-W", width, "-D", "1"]);
        assert_code(&out, 1);
        let said = format!("{}{}", stdout_of(&out), stderr_of(&out));
        assert!(
            said.contains(&format!("Illegal bucket width: {width}\n")),
            "-W {width}: {}",
            describe(&out)
        );
        assert!(
            !said.contains("Maximum:"),
            "-W {width} must not run: {}",
            describe(&out)
        );
    }
}

/// A repeated option counts with its last value and only that value is
/// checked, as in rt-tests: the getopt tools (ptsematest, cyclictest) and
/// the ones latscope reads with clap (pmqtest, svsematest) alike.
#[test]
fn a_repeated_option_counts_with_its_last_value() {
    let tools = DropIn::new();
    let cases: [(&str, &[&str], &str); 5] = [
        ("ptsematest", &["-l", "-1", "-q", "-l", "5"], "Cycles 5"),
        ("pmqtest", &["-l", "-1", "-q", "-l", "5"], "Cycles 5"),
        (
            "svsematest",
            &["-D", "-1", "-D", "1", "-l", "5", "-q"],
            "Cycles 5",
        ),
        (
            "sigwaittest",
            &["-t", "1000", "-t", "1", "-l", "5", "-q"],
            "Cycles 5",
        ),
        (
            "cyclictest",
            &["-i", "0", "-i", "1000", "-l", "5", "-q"],
            "I:1000 C:      5",
        ),
    ];
    for (tool, args, shown) in cases {
        let out = tools.run(tool, args);
        let what = format!("{tool} {}\n{}", args.join(" "), describe(&out));
        assert_code(&out, 0);
        assert!(stdout_of(&out).contains(shown), "{what}");
    }
    // The last value is checked: a bad one last is still refused.
    let out = tools.run("pmqtest", &["-l", "5", "-q", "-l", "-1"]);
    assert_code(&out, 2);
}

/// `latscope timer -D 1` ends after a second, as `-D` is the duration
/// everywhere in latscope; under the `latency` name `-D` stays Xenomai's
/// device number (ignored) and `-T` the duration.
#[test]
fn timer_dash_d_is_the_duration_and_latency_keeps_the_device() {
    let started = Instant::now();
    let (_dir, file) = temp_file("timer-d.json");
    let out = run(latscope(30)
        .args(["timer", "-D", "1", "--warmup", "0", "-q", "--json"])
        .arg(&file));
    assert_code(&out, 0);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{}",
        describe(&out)
    );
    let measured = read_json(&file)["duration_s"].as_f64().unwrap();
    assert!(
        (0.9..3.0).contains(&measured),
        "timer -D 1 measured {measured} s"
    );
    let tools = DropIn::new();
    let started = Instant::now();
    let out = tools.run("latency", &["-D", "3", "-T", "1", "-q"]);
    assert_code(&out, 0);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{}",
        describe(&out)
    );
    let help = stdout_of(&tools.run("latency", &["--help"]));
    assert!(
        help.contains("-D, --device <DEV>") && help.contains("-T, --duration <TIME>"),
        "{help}"
    );
    let help = stdout_of(&run(latscope(10).args(["timer", "--help"])));
    assert!(
        help.contains("-D, --duration <TIME>") && help.contains("--device <DEV>"),
        "{help}"
    );
}

/// `ipc -D` is per primitive (`suite -D` is the whole run): the expected
/// total is said before the first test starts, and `--help` names it.
#[test]
fn ipc_says_its_expected_total_before_it_starts() {
    let out = run(latscope(60).args(args("ipc --only pipe,eventfd --mode oneway -D 0.2 -t 1")));
    assert_code(&out, 0);
    let stderr = unwrapped(&stderr_of(&out));
    let total = stderr
        .find("latscope: 2 primitives for 200ms each (-D is per primitive): about 400ms in all")
        .unwrap_or_else(|| panic!("no total line\n{}", describe(&out)));
    let first = stderr.find("latscope: running pipe").unwrap_or(usize::MAX);
    assert!(
        total < first,
        "the total comes before the first test\n{}",
        describe(&out)
    );
    let help = unwrapped(&stdout_of(&run(latscope(10).args(["ipc", "--help"]))));
    assert!(help.contains("not the whole run as in suite"), "{help}");
}

/// An ordinary user asking for SCHED_DEADLINE is told what the kernel
/// needs: CAP_SYS_NICE; never to raise `ulimit -r`, which does not apply.
#[test]
fn an_ordinary_user_is_told_deadline_needs_cap_sys_nice() {
    let test = "an_ordinary_user_is_told_deadline_needs_cap_sys_nice";
    let Some(mut cmd) = nobody_or_skip(test) else {
        return;
    };
    cmd.arg(bin())
        .args(args(
            "timer --policy deadline --runtime 100 -p 1000 -D 1 --no-mlockall",
        ))
        .current_dir("/");
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 1);
    let stderr = unwrapped(&stderr_of(&out));
    assert!(
        stderr.contains("not permitted to use SCHED_DEADLINE")
            && stderr.contains("CAP_SYS_NICE")
            && stderr.contains("ulimit -r does not apply"),
        "{}",
        describe(&out)
    );
    assert!(
        !stderr.contains("raise the real-time priority limit"),
        "{}",
        describe(&out)
    );
}

/// An ordinary user's suite in a directory it cannot write keeps the
/// log-disk row: `skipped` in the table and in the JSON, with the reason
/// and what to do.
#[test]
fn a_suite_where_the_directory_refuses_the_disk_test_shows_it_skipped() {
    let test = "a_suite_where_the_directory_refuses_the_disk_test_shows_it_skipped";
    let Some(mut cmd) = nobody_or_skip(test) else {
        return;
    };
    // Owned by root, 0755: nobody may enter it but not write it.
    let here = temp_dir_with_mode(0o755);
    let out_dir = temp_dir_with_mode(0o1777);
    let file = out_dir.path().join("suite.json");
    cmd.arg(bin())
        .args(args("suite --duration 2s --json"))
        .arg(&file)
        .current_dir(here.path());
    let out = run_std_with_timeout(cmd, Duration::from_secs(60));
    assert_code(&out, 0);
    let row = stdout_of(&out)
        .lines()
        .find(|l| l.starts_with("logdisk"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no logdisk row\n{}", describe(&out)));
    assert!(row.contains("skipped"), "{row}\n{}", describe(&out));
    assert!(
        unwrapped(&stdout_of(&out)).contains("skipped: logdisk: cannot create a private directory"),
        "the reason under the table\n{}",
        describe(&out)
    );
    let stderr = unwrapped(&stderr_of(&out));
    assert!(
        stderr.contains("latscope: logdisk skipped: cannot create a private directory")
            && stderr.contains("--dir DIR"),
        "{}",
        describe(&out)
    );
    let report = read_json(&file);
    let disk = report["tests"]
        .as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap_or_default();
    assert_eq!(disk["test"], "logdisk", "{report}");
    assert_eq!(disk["end_reason"], "skipped", "{disk}");
    let why = disk["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("Permission denied") && why.contains("--dir"),
        "{why}"
    );
}
