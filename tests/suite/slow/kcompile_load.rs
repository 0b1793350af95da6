//! `--load kcompile` (rteval's kernel-compile load) through the real binary,
//! on a fixture tree whose build takes about 0.3 s instead of a kernel's
//! hour: the build restarts when it ends, runs off the measured CPU in a
//! private copy of the tree, and nothing of it is left after a normal end,
//! SIGINT or SIGTERM. Each round of the fixture writes a line to a probe
//! file outside the copy (its directory and its CPUs), which is how the
//! test sees the rounds.

use super::load::{eventually, generators_of, have, live_members, loads_of};
use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A tree whose `make` takes 0.3 s (`$KCOMPILE_SLEEP` seconds when set),
/// leaves `out.o` and notes the round in `$KCOMPILE_PROBE`; `make clean`
/// removes `out.o`.
fn fixture_tree() -> tempfile::TempDir {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("Makefile"),
        "KCOMPILE_SLEEP ?= 0.3\nall:\n\t@echo \"round $(CURDIR) $$(grep Cpus_allowed_list /proc/self/status | cut -f2)\" >> $(KCOMPILE_PROBE)\n\t@sleep $(KCOMPILE_SLEEP)\n\t@touch out.o\n\nclean:\n\t@rm -f out.o\n",
    )
    .unwrap();
    tree
}

/// The rounds the probe file saw: (the directory built, its CPU list).
fn rounds(probe: &Path) -> Vec<(PathBuf, String)> {
    std::fs::read_to_string(probe)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("round ")?.split(' ');
            Some((PathBuf::from(words.next()?), words.next()?.to_string()))
        })
        .collect()
}

/// Whether this machine can run the test: make, real-time, a CPU to spare.
fn runnable(test: &str) -> bool {
    if !have("make", test) || skip_without_realtime(test) {
        return false;
    }
    if available_cpus() < 2 {
        latscope::testing::skip(test, "one CPU: the build needs one off the measured CPU");
        return false;
    }
    true
}

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A timer run on CPU 1 for `duration` with the fixture's kcompile load.
fn timer_with_kcompile(tree: &Path, report: &Path, duration: &str) -> Vec<String> {
    let mut argv: Vec<String> = ["timer", "--cpus", "1", "-q", "-D", duration, "--load"]
        .map(String::from)
        .to_vec();
    argv.push(format!("kcompile,tree={}", tree.display()));
    argv.extend(["--json".to_string(), report.display().to_string()]);
    argv
}

/// A latscope timer run with the fixture's (or `source`'s) kcompile load,
/// started: its process, the probe file and the report's path.
struct KcompileRun {
    child: Spawned,
    owner: u32,
    probe: PathBuf,
    report: PathBuf,
    _dir: tempfile::TempDir,
}

/// `round_s`: how long a round of the fixture takes (its default: None).
fn start_kcompile(source: &Path, duration: &str, round_s: Option<&str>) -> KcompileRun {
    let (dir, report) = temp_file("report.json");
    let probe = dir.path().join("probe.log");
    let mut cmd = std::process::Command::new(bin());
    cmd.args(timer_with_kcompile(source, &report, duration))
        .env("KCOMPILE_PROBE", &probe);
    if let Some(seconds) = round_s {
        cmd.env("KCOMPILE_SLEEP", seconds);
    }
    let child = spawn_std(&mut cmd);
    let owner = child.child.id();
    KcompileRun {
        child,
        owner,
        probe,
        report,
        _dir: dir,
    }
}

/// What a finished run must leave: the report's load, every round off CPU
/// 1 in a private copy that is gone, the user's tree as it was, and no
/// process of the build.
fn check_cleaned_up(tree: &Path, probe: &Path, report: &Value, owner: u32, after: &str) {
    let loads = loads_of(report);
    assert_eq!(
        loads.len(),
        1,
        "{after}: {}",
        evidence("json", &report.to_string())
    );
    assert_eq!(
        loads[0]["spec"],
        format!("kcompile,tree={}", tree.display())
    );
    let seen = rounds(probe);
    assert!(!seen.is_empty(), "{after}: no round ran");
    for (dir, cpus) in &seen {
        let private = dir.to_string_lossy().contains("latscope-kcompile-");
        assert!(
            private && dir != tree,
            "{after}: built {dir:?}, not a private copy"
        );
        assert!(!dir.exists(), "{after}: {dir:?} is left");
        let list: Vec<&str> = cpus.split([',', '-']).collect();
        assert!(
            !cpus.is_empty() && !list.contains(&"1"),
            "{after}: ran on CPUs {cpus}"
        );
    }
    assert!(
        !tree.join("out.o").exists(),
        "{after}: the user's tree was built in"
    );
    let pid = loads[0]["pid"].as_i64().unwrap() as i32;
    let mut left = Vec::new();
    let gone = eventually(Duration::from_secs(5), || {
        left = live_members(&[pid]);
        left.extend(generators_of(owner).iter().map(|p| p.to_string()));
        left.is_empty()
    });
    assert!(gone, "{after}: build processes left: {left:?}");
}

#[test]
fn the_build_restarts_off_the_measured_cpu_and_leaves_nothing() {
    let test = "the_build_restarts_off_the_measured_cpu";
    if !runnable(test) {
        return;
    }
    let tree = fixture_tree();
    let run = start_kcompile(tree.path(), "3", None);
    let (status, stdout, stderr) = run.child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    // About 0.35 s a round over 3 s: at least two restarts even when busy.
    let seen = rounds(&run.probe);
    assert!(seen.len() >= 3, "{} rounds: {seen:?}", seen.len());
    // Every round builds the same private copy.
    assert!(seen.iter().all(|(d, _)| *d == seen[0].0), "{seen:?}");
    let report = read_json(&run.report);
    check_cleaned_up(tree.path(), &run.probe, &report, run.owner, "after the end");
}

#[test]
fn sigint_and_sigterm_stop_the_build_and_remove_its_copy() {
    let test = "sigint_and_sigterm_stop_the_build";
    if !runnable(test) {
        return;
    }
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let tree = fixture_tree();
        let run = start_kcompile(tree.path(), "60", None);
        let building = eventually(Duration::from_secs(30), || rounds(&run.probe).len() >= 2);
        assert!(building, "{name}: the build did not run twice");
        run.child.signal(signal);
        let (status, stdout, stderr) = run.child.wait(Duration::from_secs(30));
        assert!(
            matches!(status.code(), Some(0 | 1)),
            "{name}: {}",
            dump(status, &stdout, &stderr)
        );
        let report = read_json(&run.report);
        check_cleaned_up(tree.path(), &run.probe, &report, run.owner, name);
    }
}

#[test]
fn kill_9_of_latscope_takes_the_build_with_it() {
    let test = "kill_9_of_latscope_takes_the_build_with_it";
    if !runnable(test) {
        return;
    }
    let tree = fixture_tree();
    // Rounds of a minute: only the trap can end this one within seconds.
    let run = start_kcompile(tree.path(), "60", Some("60"));
    assert!(
        eventually(Duration::from_secs(30), || !rounds(&run.probe).is_empty()),
        "the build did not start"
    );
    run.child.signal(libc::SIGKILL);
    let _ = run.child.wait(Duration::from_secs(30));
    // The parent-death signal reaches the shell, whose trap takes make and
    // what it runs (the private copy stays: nobody is left to remove it).
    let mut left = Vec::new();
    let gone = eventually(Duration::from_secs(5), || {
        left = generators_of(run.owner);
        left.is_empty()
    });
    for (copy, _) in rounds(&run.probe) {
        if let Some(work) = copy.parent().filter(|w| w.exists()) {
            let _ = std::fs::remove_dir_all(work);
        }
    }
    assert!(gone, "build processes left after kill -9: {left:?}");
}

#[test]
fn a_tarball_of_a_tree_is_unpacked_into_the_private_copy() {
    let test = "a_tarball_of_a_tree_is_unpacked";
    if !runnable(test) || !have("tar", test) {
        return;
    }
    let tree = fixture_tree();
    let dir = tempfile::tempdir().unwrap();
    // One top directory, as a kernel tarball has (linux-source-6.1/...).
    let tarball = dir.path().join("fixture.tar.gz");
    let packed = std::process::Command::new("tar")
        .args(["-czf", tarball.to_str().unwrap(), "-C"])
        .arg(tree.path().parent().unwrap())
        .arg(tree.path().file_name().unwrap())
        .status()
        .unwrap();
    assert!(packed.success());
    let run = start_kcompile(&tarball, "2", None);
    let (status, stdout, stderr) = run.child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    let report = read_json(&run.report);
    check_cleaned_up(&tarball, &run.probe, &report, run.owner, "a tarball");
}

#[test]
fn without_a_tree_the_kernel_source_is_needed() {
    let test = "without_a_tree_the_kernel_source_is_needed";
    let found = latscope::load::kcompile::newest_kernel_source(Path::new("/usr/src"));
    if let Some(tarball) = found {
        let why = format!("{} is installed: the error cannot show", tarball.display());
        latscope::testing::skip(test, &why);
        return;
    }
    let out = run(latscope(20).args(["timer", "--cpus", "0", "-D", "5", "--load", "kcompile"]));
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no kernel source in /usr/src")
            && stderr.contains("apt-get install linux-source"),
        "{stderr}"
    );
}

#[test]
fn a_missing_or_bad_tree_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let no_makefile = dir.path().display().to_string();
    let missing = dir.path().join("none").display().to_string();
    for (spec, why) in [
        (format!("kcompile,tree={missing}"), "is not a directory"),
        (format!("kcompile,tree={no_makefile}"), "has no Makefile"),
        ("kcompile,jobs=0".to_string(), "from 1 to 1024"),
        (
            "kcompile,src=/usr/src".to_string(),
            "kcompile has no option src=",
        ),
    ] {
        let out = run(latscope(20).args(["timer", "--cpus", "0", "-D", "5", "--load", &spec]));
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{spec}: {stderr}");
        assert!(stderr.contains(why), "{spec}: {stderr}");
        assert!(stdout_of(&out).is_empty(), "{spec}: nothing measured");
    }
}
