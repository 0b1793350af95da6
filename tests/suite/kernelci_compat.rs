//! pi_stress and rt-migrate-test compatibility, the answers given without
//! a run: `latscope pi-stress` / `pi_stress` and `latscope rt-migrate-test`
//! / `rt-migrate-test` against Debian's rt-tests 2.40 (byte for byte where
//! it is installed) and the goldens captured from it (tests/golden/pi_stress/,
//! tests/golden/rt-migrate-test/):
//!
//! ```text
//! pi_stress --help > help.out;  pi_stress -V > version.out
//! pi_stress -Z 2> bad_opt.err;  pi_stress -g 5 2> g5.err
//! rt-migrate-test -h > help.out;  rt-migrate-test -Z 2> bad_opt.err
//! ```
//!
//! The runs are in slow::kernelci_dropins.

use crate::common::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Runs `program` as `name ARGS` (argv[0] as a script types it).
fn run_as(program: &Path, name: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(program);
    cmd.arg0(name).args(args);
    seen(&run_std_with_timeout(cmd, Duration::from_secs(30)))
}

fn seen(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A link named `name` to the binary under test.
fn link(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::os::unix::fs::symlink(bin(), &path).unwrap();
    (dir, path)
}

/// Debian's tool, when installed (else said, and the goldens only are used).
fn real(test: &str, name: &str) -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin").join(name);
    if path.exists() {
        return Some(path);
    }
    latscope::testing::skip_part(
        test,
        "against the real tool",
        &format!("/usr/bin/{name} is not installed (apt-get install rt-tests): goldens only"),
    );
    None
}

/// pi_stress's answers that end before a run, and rt-migrate-test's.
const PI_ANSWERED: &[&[&str]] = &[
    &["--help"],
    &["-h"],
    &["--he"],
    &["-V"],
    &["-Z"],
    &["--bogus"],
    &["-g"],
    &["--json"],
    &["-g", "5"],
    &["-q", "-Z"],
];
const MIGRATE_ANSWERED: &[&[&str]] = &[
    &["--help"],
    &["-h"],
    &["--he"],
    &["-Z"],
    &["--bogus"],
    &["-l"],
    &["--json"],
    &["-q", "-Z", "3"],
];

#[test]
fn pi_stress_help_and_refusals_are_pi_stresss() {
    let (_dir, ours) = link("pi_stress");
    let usage = golden("pi_stress", "help.out");
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    assert_eq!(
        run_as(&ours, "pi_stress", &["--help"]),
        (0, usage.clone(), String::new())
    );
    assert_eq!(
        run_as(&ours, "pi_stress", &["-V"]),
        (0, golden("pi_stress", "version.out"), String::new())
    );
    assert_eq!(
        run_as(&ours, "pi_stress", &["-Z"]),
        (1, usage.clone(), golden("pi_stress", "bad_opt.err"))
    );
    let too_many = (online + 3).to_string();
    assert_eq!(
        run_as(&ours, "pi_stress", &["-g", &too_many]),
        (
            255,
            String::new(),
            format!(
                "the number of groups cannot exceed the number of online processors ({online})\n"
            )
        )
    );
    // latscope's own refusal where pi_stress would run no group forever.
    let (code, out, err) = run_as(&ours, "pi_stress", &["-g", "0"]);
    assert_eq!(
        (code, out.as_str(), err.lines().count()),
        (2, "", 1),
        "{err}"
    );
    if let Some(theirs) = real("pi_stress_help_and_refusals", "pi_stress") {
        for args in PI_ANSWERED {
            assert_eq!(
                run_as(&ours, "pi_stress", args),
                run_as(&theirs, "pi_stress", args),
                "pi_stress {args:?}"
            );
        }
    }
}

#[test]
fn rt_migrate_test_help_and_refusals_are_rt_migrate_tests() {
    let (_dir, ours) = link("rt-migrate-test");
    let usage = golden("rt-migrate-test", "help.out");
    assert_eq!(
        run_as(&ours, "rt-migrate-test", &["-h"]),
        (0, usage.clone(), String::new())
    );
    // getopt's complaint is its `usage(0)`: exit 0.
    assert_eq!(
        run_as(&ours, "rt-migrate-test", &["-Z"]),
        (0, usage, golden("rt-migrate-test", "bad_opt.err"))
    );
    // Where rt-migrate-test divides by zero (-l 0) or hangs (0 tasks):
    // one line, exit 2.
    for args in [&["-l", "0"][..], &["0"], &["-l", "-3"], &["--run-ms", "0"]] {
        let (code, out, err) = run_as(&ours, "rt-migrate-test", args);
        assert_eq!(
            (code, out.as_str(), err.lines().count()),
            (2, "", 1),
            "{args:?}: {err}"
        );
    }
    if let Some(theirs) = real("rt_migrate_test_help_and_refusals", "rt-migrate-test") {
        for args in MIGRATE_ANSWERED {
            assert_eq!(
                run_as(&ours, "rt-migrate-test", args),
                run_as(&theirs, "rt-migrate-test", args),
                "rt-migrate-test {args:?}"
            );
        }
    }
}

#[test]
fn the_subcommands_are_the_compat_names() {
    let out = |args: &[&str]| {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        seen(&run_std_with_timeout(cmd, Duration::from_secs(30)))
    };
    assert_eq!(
        out(&["pi-stress", "--help"]),
        (0, golden("pi_stress", "help.out"), String::new())
    );
    assert_eq!(
        out(&["rt-migrate-test", "--help"]),
        (0, golden("rt-migrate-test", "help.out"), String::new())
    );
}
