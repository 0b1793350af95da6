//! The pod faces through the real binary, the quick part: the cnf-tests
//! runners' Go flags and klog (`oslat-runner`, `cyclictest-runner`,
//! `hwlatdetect-runner`, as links named so), and the container-perf-tools
//! entrypoints' environment (`latscope container TOOL`): refusals, help, the
//! CPU rule on a one-CPU affinity, `manual=y` ended by SIGTERM. The real
//! runs are in slow::pod_runs.

use crate::common::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A link named `name` to the binary under test, in a fresh directory.
pub fn linked(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join(name);
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    (dir, link)
}

/// `program ARGS` with its affinity narrowed to `cpus` before it starts.
pub fn on_cpus(program: &Path, args: &[&str], cpus: &[usize]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    let cpus = cpus.to_vec();
    // SAFETY: only sched_setaffinity on a set built before the fork... the
    // closure builds it in the child from a copied Vec (no allocation).
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in &cpus {
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// A klog line with the time and pid masked: `L<mmdd hh:mm:ss.uuuuuu>
/// <pid> FILE:LINE] MESSAGE` -> `L FILE:LINE] MESSAGE`.
pub fn klog_masked(line: &str) -> Option<String> {
    let re =
        regex::Regex::new(r"^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ (\S+:\d+\] .*)$").unwrap();
    re.captures(line).map(|c| format!("{} {}", &c[1], &c[2]))
}

fn output_of(cmd: &mut std::process::Command) -> std::process::Output {
    let mut cmd =
        assert_cmd::Command::from_std(std::mem::replace(cmd, std::process::Command::new("true")));
    cmd.timeout(Duration::from_secs(60)).output().unwrap()
}

#[test]
fn runner_flags_are_refused_as_go_refuses_them() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "oslat-runner",
            &["-bogus"],
            "flag provided but not defined: -bogus",
        ),
        (
            "oslat-runner",
            &["-runtime"],
            "flag needs an argument: -runtime",
        ),
        (
            "oslat-runner",
            &["-oslat-start-delay=1s"],
            "invalid value \"1s\" for flag -oslat-start-delay: parse error",
        ),
        (
            "oslat-runner",
            &["-logtostderr=maybe"],
            "invalid boolean value \"maybe\" for -logtostderr: parse error",
        ),
        (
            "oslat-runner",
            &["--v", "high"],
            "invalid value \"high\" for flag -v: strconv.Atoi: parsing \"high\": invalid syntax",
        ),
        (
            "cyclictest-runner",
            &["-interval", "1ms"],
            "invalid value \"1ms\" for flag -interval: parse error",
        ),
        (
            "cyclictest-runner",
            &["-runtime=1m"],
            "flag provided but not defined: -runtime",
        ),
        (
            "hwlatdetect-runner",
            &["-window=5"],
            "invalid value \"5\" for flag -window: parse error",
        ),
        (
            "hwlatdetect-runner",
            &["-hardlimit=ten"],
            "invalid value \"ten\" for flag -hardlimit: parse error",
        ),
        (
            "hwlatdetect-runner",
            &["---duration=1s"],
            "bad flag syntax: ---duration=1s",
        ),
    ];
    for (name, args, message) in cases {
        let (_dir, link) = linked(name);
        let out = output_of(std::process::Command::new(&link).args(*args));
        let all = describe(&out);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {all}");
        let stderr = stderr_of(&out);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines[0], *message, "{all}");
        assert_eq!(lines[1], format!("Usage of {}:", link.display()), "{all}");
        assert!(stdout_of(&out).is_empty(), "{all}");
    }
}

#[test]
fn runner_help_is_gos_usage_with_klogs_flags() {
    for (name, own) in [
        (
            "oslat-runner",
            "  -runtime string\n    \tSpecify test duration, e.g., 60, 20m, 2H (default \"10m\")\n",
        ),
        (
            "cyclictest-runner",
            "  -rt-priority string\n    \tspecify the SCHED_FIFO priority (1-99) (default \"95\")\n",
        ),
        (
            "hwlatdetect-runner",
            "  -width duration\n    \ttime to actually measure: <n>{usmss} (default 950ms)\n",
        ),
    ] {
        for help in ["-h", "-help", "--help"] {
            let out = run(latscope(30).args(["runner", &name[..name.len() - 7], help]));
            assert_code(&out, 0);
            let usage = stderr_of(&out);
            assert!(usage.starts_with(&format!("Usage of {name}:\n")), "{usage}");
            assert!(usage.contains(own), "{usage}");
            assert!(
                usage.contains("  -log_file string\n    \tIf non-empty, use this log file\n"),
                "{usage}"
            );
        }
    }
}

#[test]
fn runner_log_file_that_cannot_be_opened_ends_as_klog_does() {
    let (dir, link) = linked("hwlatdetect-runner");
    let log = dir.path().join("missing/run.log");
    let out = output_of(std::process::Command::new(&link).args([
        "-logtostderr=false",
        &format!("-log_file={}", log.display()),
    ]));
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    let lines: Vec<&str> = stderr.lines().collect();
    // The line that could not be written, then klog's reason.
    assert!(
        klog_masked(lines[0]).is_some_and(
            |l| l.starts_with("I node.go:39] Environment information: /proc/cmdline: ")
        ),
        "{stderr}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "log: exiting because of error: log: unable to create log: open {}: no such file or directory",
            log.display()
        )
    );
    assert!(!log.exists());
}

#[test]
fn runner_on_one_cpu_is_klog_fatal_255_in_the_log_file() {
    let cpu = allowed_cpus()[0];
    for (name, line) in [("oslat-runner", 31), ("cyclictest-runner", 49)] {
        let (dir, link) = linked(name);
        let log = dir.path().join("run.log");
        std::fs::write(&log, "an earlier run\n").unwrap();
        let flag = format!("-log_file={}", log.display());
        let out = output_of(&mut on_cpus(
            &link,
            &["-logtostderr=false", "-alsologtostderr", &flag],
            &[cpu],
        ));
        assert_code(&out, 255);
        let tool = &name[..name.len() - 7];
        let fatal = format!(
            "F main.go:{line}] the amount of requested CPUs less than 2, the {tool} requires at least 2 CPUs to run"
        );
        let stderr = stderr_of(&out);
        assert_eq!(
            stderr.lines().filter_map(klog_masked).collect::<Vec<_>>(),
            std::slice::from_ref(&fatal),
            "{stderr}"
        );
        // klog appends: the earlier content stays, then its header, then the line.
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "an earlier run");
        assert!(lines[1].starts_with("Log file created at: "), "{text}");
        assert_eq!(
            lines[4],
            "Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg"
        );
        assert_eq!(klog_masked(lines[5]), Some(fatal), "{text}");
        assert_eq!(lines.len(), 6, "{text}");
    }
}

#[test]
fn container_on_one_cpu_exits_4_with_the_reason() {
    let cpu = allowed_cpus()[0];
    for tool in ["cyclictest", "oslat", "timerlat"] {
        let mut cmd = on_cpus(&bin(), &["container", tool], &[cpu]);
        cmd.env("PAUSE", "n");
        let out = output_of(&mut cmd);
        assert_code(&out, 4);
        assert_eq!(
            stdout_of(&out),
            format!("allowed cpu list: {cpu}\n"),
            "{}",
            describe(&out)
        );
        let stderr = stderr_of(&out);
        assert!(stderr.contains("fewer than 2"), "{stderr}");
    }
}

#[test]
fn container_bad_variables_are_one_line_exit_2() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "cyclictest",
            "DURATION",
            "soon",
            "DURATION=soon: give a duration",
        ),
        (
            "cyclictest",
            "INTERVAL",
            "0",
            "INTERVAL=0: give microseconds",
        ),
        (
            "cyclictest",
            "rt_priority",
            "100",
            "rt_priority=100: give a real-time priority",
        ),
        ("cyclictest", "stress", "maybe", "stress=maybe: give y or n"),
        (
            "cyclictest",
            "TRACE_THRESHOLD",
            "-1",
            "TRACE_THRESHOLD=-1: give microseconds",
        ),
        (
            "oslat",
            "RUNTIME_SECONDS",
            "1x5",
            "RUNTIME_SECONDS=1x5: give a duration",
        ),
        ("oslat", "PRIO", "0", "PRIO=0: give a real-time priority"),
        (
            "oslat",
            "USE_DEFAULT_SCHED",
            "perhaps",
            "USE_DEFAULT_SCHED=perhaps: give y or n",
        ),
        (
            "hwlatdetect",
            "THRESHOLD",
            "x",
            "THRESHOLD=x: give microseconds",
        ),
        (
            "hwlatdetect",
            "ALL_CPUS",
            "all",
            "ALL_CPUS=all: give y or n",
        ),
        (
            "timerlat",
            "MAX_LATENCY",
            "-3",
            "MAX_LATENCY=-3: give microseconds",
        ),
        ("oslat", "delay", "later", "delay=later: "),
        ("oslat", "manual", "perhaps", "manual=perhaps: give y or n"),
        (
            "hwlatdetect",
            "PAUSE",
            "sometimes",
            "PAUSE=sometimes: give y or n",
        ),
    ];
    for (tool, name, value, message) in cases {
        let out = run(latscope(30).args(["container", tool]).env(name, value));
        assert_code(&out, 2);
        let stderr = stderr_of(&out);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("latscope: error: {message}")),
            "{stderr}"
        );
        assert!(stdout_of(&out).is_empty());
    }
}

#[test]
fn container_stress_needs_stress_ng_on_path() {
    let empty = tempfile::tempdir().unwrap();
    let out = run(latscope(30)
        .args(["container", "cyclictest"])
        .env("stress", "true")
        .env("PATH", empty.path()));
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert!(
        stderr.starts_with("latscope: error: stress=true: ") && stderr.contains("stress-ng"),
        "{stderr}"
    );
}

/// The first two CPUs this process may use, if they are two cores (no SMT
/// between them): what the CPU rule lets a test run on.
pub fn two_cores() -> Option<[usize; 2]> {
    let cpus = allowed_cpus();
    let (a, b) = (*cpus.first()?, *cpus.get(1)?);
    let siblings = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{a}/topology/thread_siblings_list"
    ))
    .unwrap_or_default();
    let shares = siblings
        .trim()
        .split(',')
        .any(|part| match part.split_once('-') {
            Some((lo, hi)) => {
                (lo.parse().unwrap_or(usize::MAX)..=hi.parse().unwrap_or(0)).contains(&b)
            }
            None => part.parse() == Ok(b),
        });
    (!shares).then_some([a, b])
}

#[test]
fn container_manual_sleeps_until_sigterm() {
    const TEST: &str = "pod_faces::container_manual_sleeps_until_sigterm";
    let Some(cpus) = two_cores() else {
        latscope::testing::skip(TEST, "needs two CPUs that are not SMT siblings");
        return;
    };
    let mut cmd = on_cpus(&bin(), &["container", "oslat"], &cpus);
    cmd.env("manual", "y").env("RUNTIME_SECONDS", "600");
    let mut child = spawn_std(&mut cmd);
    // It sleeps: still there a second later.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.child.try_wait().unwrap().is_none(),
        "manual=y did not sleep"
    );
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    let [a, b] = cpus;
    assert!(
        stdout.contains(&format!(
            "cmd to run: oslat -D 600 --rtprio 1 --cpu-list {b} --cpu-main-thread {a}\n"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("manual=y: the test is not run"), "{stdout}");
    assert!(!stdout.contains("oslat V"), "{stdout}");
}
