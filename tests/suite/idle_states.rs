//! `--deepest-idle-state N` through the real binary. This machine has no
//! cpuidle driver, so every test points latscope at a fixture CPU tree
//! (`LATSCOPE_CPU_SYSFS`, the layout of /sys/devices/system/cpu: cpuK/
//! cpuidle/stateS/{name,latency,disable}) and its own registry directory
//! (`LATSCOPE_RUNTIME_DIR`). The states deeper than N of the measured CPUs
//! are disabled while measuring (seen in the fixture files by a poll while
//! the run goes on), enabled again at the end, on SIGTERM and on an error,
//! recorded in the registry, and enabled by `latscope cleanup` after a
//! SIGKILL. A CPU without cpuidle is one line, and the run goes on.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const ROOT_ENV: &str = "LATSCOPE_CPU_SYSFS";
const REGISTRY_ENV: &str = "LATSCOPE_RUNTIME_DIR";
/// States per fixture CPU: state0..state3, named C0..C3.
const STATES: u32 = 4;

/// A fixture CPU tree and a registry directory of its own.
struct Fixture {
    root: TempDir,
    registry: TempDir,
}

impl Fixture {
    /// CPUs `cpus`, each with `STATES` enabled states (exit latency 10^S us).
    fn new(cpus: &[usize]) -> Fixture {
        let root = tempfile::tempdir().expect("fixture root");
        for &cpu in cpus {
            for s in 0..STATES {
                let state = root.path().join(format!("cpu{cpu}/cpuidle/state{s}"));
                std::fs::create_dir_all(&state).expect("mkdir");
                std::fs::write(state.join("name"), format!("C{s}\n")).expect("name");
                std::fs::write(state.join("latency"), format!("{}\n", 10u64.pow(s)))
                    .expect("latency");
                std::fs::write(state.join("disable"), "0\n").expect("disable");
            }
        }
        Fixture {
            root,
            registry: tempfile::tempdir().expect("registry directory"),
        }
    }

    fn disable_file(&self, cpu: usize, state: u32) -> PathBuf {
        self.root
            .path()
            .join(format!("cpu{cpu}/cpuidle/state{state}/disable"))
    }

    /// The `disable` values of `cpu`'s states, state0 first.
    fn disabled(&self, cpu: usize) -> Vec<bool> {
        (0..STATES)
            .map(|s| {
                std::fs::read_to_string(self.disable_file(cpu, s))
                    .expect("read disable")
                    .trim()
                    == "1"
            })
            .collect()
    }

    /// latscope ARGS with the fixture and the registry (a run to wait for).
    fn latscope(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = latscope(60);
        cmd.args(args)
            .env(ROOT_ENV, self.root.path())
            .env(REGISTRY_ENV, self.registry.path());
        cmd
    }

    /// latscope ARGS started in the background.
    fn start(&self, args: &[&str]) -> Child {
        Command::new(bin())
            .args(args)
            .env(ROOT_ENV, self.root.path())
            .env(REGISTRY_ENV, self.registry.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn latscope")
    }

    /// The cpuidle states `pid`'s registry records.
    fn registered(&self, pid: u32) -> Vec<String> {
        registry_entries(self.registry.path(), Some(pid))
            .into_iter()
            .filter(|(kind, _)| kind == "cpuidle-state")
            .map(|(_, identity)| identity)
            .collect()
    }

    /// Waits until `pid` disabled and recorded the states deeper than 1 of
    /// CPU `cpu` (two of them): its run is measuring.
    fn wait_limited(&self, pid: u32, cpu: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.disabled(cpu) != [false, false, true, true] || self.registered(pid).len() < 2 {
            assert!(
                Instant::now() < deadline,
                "pid {pid} did not limit CPU {cpu}: {:?}, registered {:?}",
                self.disabled(cpu),
                self.registered(pid)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn path_text(&self, cpu: usize, state: u32) -> String {
        self.disable_file(cpu, state).display().to_string()
    }
}

/// A timer run at normal priority (no real-time needed) on CPU 0.
fn timer_args<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "timer",
        "--policy",
        "other",
        "-p",
        "1000",
        "--cpus",
        "0",
        "--warmup",
        "0",
        "--deepest-idle-state",
        "1",
    ];
    a.extend_from_slice(mlock_args());
    a.extend_from_slice(more);
    a
}

fn json_of(path: &Path) -> Value {
    read_json(path)
}

#[test]
fn a_run_disables_the_deeper_states_of_its_cpus_only_while_it_measures() {
    let f = Fixture::new(&[0, 1]);
    let (_dir, json) = temp_file("timer.json");
    let json_arg = json.display().to_string();
    let mut child = f.start(&timer_args(&["-T", "3", "--json", &json_arg]));
    f.wait_limited(child.id(), 0);
    // Only the measured CPU, only the states deeper than 1.
    assert_eq!(f.disabled(1), [false; 4], "CPU 1 is not measured");
    let mut registered = f.registered(child.id());
    registered.sort();
    assert_eq!(registered, [f.path_text(0, 2), f.path_text(0, 3)]);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert_eq!(f.disabled(0), [false; 4], "enabled again at the end");
    assert!(
        registry_entries(f.registry.path(), None).is_empty(),
        "the registry forgets them"
    );
    let report = json_of(&json);
    let idle = &report["idle_states"];
    assert_eq!(idle["deepest"], 1);
    assert_eq!(idle["cpus"], serde_json::json!([0]));
    assert_eq!(
        idle["disabled"],
        serde_json::json!([
            {"cpu": 0, "state": 2, "name": "C2", "exit_latency_us": 100},
            {"cpu": 0, "state": 3, "name": "C3", "exit_latency_us": 1000}
        ])
    );
    assert_eq!(idle["notes"], serde_json::json!([]));
}

#[test]
fn the_console_says_what_was_limited_and_every_measuring_test_takes_the_option() {
    let f = Fixture::new(&[0, 1]);
    let out = run(f.latscope(&timer_args(&["-T", "1"])));
    assert_code(&out, 0);
    assert!(
        unwrapped(&stdout_of(&out)).contains(
            "idle states: C2, C3 (deeper than state1) disabled on CPU 0 while measuring, enabled again at the end"
        ),
        "{}",
        describe(&out)
    );
    // noise, a single IPC test, ipc and logdisk: each limits the CPUs it
    // measures on (the fixture's CPU 0 is among them) and restores them.
    let data = tempfile::tempdir().expect("data dir");
    let data_dir = data.path().display().to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["noise", "--cpus", "0", "-D", "1"],
        vec!["pipe", "-a", "0", "-i", "1000", "-l", "100"],
        vec![
            "ipc", "--only", "pipe", "-a", "0", "-i", "1000", "-l", "100", "--mode", "oneway",
        ],
        vec![
            "logdisk",
            "--dir",
            &data_dir,
            "-D",
            "1",
            "--fileSize",
            "64K",
            "--numFiles",
            "2",
            "--no-direct",
        ],
    ];
    for base in runs {
        let (_dir, json) = temp_file("report.json");
        let json_arg = json.display().to_string();
        let mut run_args = base.clone();
        run_args.extend_from_slice(&["--deepest-idle-state", "2"]);
        if run_args[0] != "logdisk" {
            run_args.extend_from_slice(mlock_args());
        }
        run_args.extend_from_slice(&["--json", &json_arg]);
        let out = run(f.latscope(&run_args));
        assert_code(&out, 0);
        let report = json_of(&json);
        let idle = &report["idle_states"];
        let cpus = idle["cpus"].as_array().expect("cpus");
        assert!(cpus.contains(&serde_json::json!(0)), "{run_args:?}: {idle}");
        let disabled = idle["disabled"].as_array().expect("disabled");
        assert_eq!(
            disabled
                .iter()
                .filter(|d| d["cpu"] == 0)
                .map(|d| d["state"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [3],
            "{run_args:?}: {idle}"
        );
        assert_eq!(f.disabled(0), [false; 4], "{run_args:?}: restored");
    }
}

#[test]
fn sigterm_enables_them_again() {
    let f = Fixture::new(&[0]);
    let mut child = f.start(&timer_args(&[]));
    f.wait_limited(child.id(), 0);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert!(status.code().is_some(), "ended by itself: {status:?}");
    assert_eq!(f.disabled(0), [false; 4]);
    assert!(registry_entries(f.registry.path(), None).is_empty());
}

#[test]
fn after_a_kill_9_cleanup_enables_them_again() {
    let f = Fixture::new(&[0]);
    let mut child = f.start(&timer_args(&[]));
    let pid = child.id();
    f.wait_limited(pid, 0);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    child.wait().expect("wait");
    assert_eq!(f.disabled(0), [false, false, true, true], "left disabled");
    // A dry run says what it would do and changes nothing.
    let out = run(f.latscope(&["cleanup", "--dry-run"]));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    for state in [2, 3] {
        let line = format!(
            "would restore cpuidle-state    {}  (latscope pid {pid}, ended)",
            f.path_text(0, state)
        );
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    // The killed run's CPU note is listed and counted too (issue 40 item
    // 12: it used to go in silence).
    assert!(
        stdout.contains("would remove cpu-note ") && stdout.contains(&format!("/{pid}.")),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 would be removed, 2 would be restored, 0 kept; dry run"),
        "{stdout}"
    );
    assert_eq!(f.disabled(0), [false, false, true, true]);
    let out = run(f.latscope(&["cleanup"]));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    for state in [2, 3] {
        let line = format!(
            "restored     cpuidle-state    {}  (latscope pid {pid}, ended)",
            f.path_text(0, state)
        );
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    assert!(
        stdout.contains("1 removed, 2 restored, 0 kept, 0 failed."),
        "{stdout}"
    );
    assert_eq!(f.disabled(0), [false; 4]);
    assert!(registry_entries(f.registry.path(), None).is_empty());
    // A second cleanup finds nothing.
    let out = run(f.latscope(&["cleanup"]));
    assert!(
        stdout_of(&out).contains("Nothing left behind"),
        "{}",
        describe(&out)
    );
}

#[test]
fn without_a_cpuidle_driver_there_is_nothing_to_limit_and_the_run_goes_on() {
    let f = Fixture::new(&[]);
    let out = run(f.latscope(&timer_args(&["-T", "1"])));
    assert_code(&out, 0);
    let text = unwrapped(&stdout_of(&out));
    let line = format!(
        "warning: --deepest-idle-state 1: CPU 0 has no cpuidle driver (no {}/cpuN/cpuidle): there are no idle states to limit",
        f.root.path().display()
    );
    assert_eq!(text.matches(&line).count(), 1, "{line}\n{text}");
}

#[test]
fn a_state_that_cannot_be_read_ends_the_run_and_undoes_the_others() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        latscope::testing::skip(
            "idle_states::a_state_that_cannot_be_read_ends_the_run_and_undoes_the_others",
            "needs two CPUs (the fixture's CPU 1 is measured)",
        );
        return;
    }
    let f = Fixture::new(&[0, 1]);
    // CPU 1's state3 has a directory where its disable file belongs.
    let broken = f.disable_file(1, 3);
    std::fs::remove_file(&broken).expect("rm");
    std::fs::create_dir(&broken).expect("mkdir");
    let mut a = timer_args(&["-T", "1"]);
    let cpus = a.iter().position(|w| *w == "0").expect("the CPU list");
    a[cpus] = "0,1";
    let out = run(f.latscope(&a));
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{}", describe(&out));
    assert!(
        stderr.contains("--deepest-idle-state: cannot read the idle states of CPU 1 under"),
        "{}",
        describe(&out)
    );
    assert_eq!(f.disabled(0), [false; 4], "CPU 0's states enabled again");
    assert!(registry_entries(f.registry.path(), None).is_empty());
}

#[test]
fn a_bad_state_number_is_a_usage_error() {
    let f = Fixture::new(&[0]);
    for bad in ["-1", "x", "4294967296"] {
        let out = run(f.latscope(&["timer", "-T", "1", "--deepest-idle-state", bad]));
        assert_code(&out, 2);
        assert!(
            stderr_of(&out).contains("--deepest-idle-state"),
            "{}",
            describe(&out)
        );
    }
}

/// The cyclictest drop-in's `--deepest-idle-state N` (rt-tests 2.8's): at
/// SCHED_OTHER on CPU 0, a short interval.
fn cyclictest_args<'a>(deepest: &'a str, duration: &'a str) -> Vec<&'a str> {
    vec![
        "cyclictest",
        "-q",
        "-a",
        "0",
        "-i",
        "10000",
        "-D",
        duration,
        "--deepest-idle-state",
        deepest,
    ]
}

#[test]
fn the_cyclictest_drop_in_limits_the_cpus_of_a_instead_of_cpu_dma_latency() {
    let f = Fixture::new(&[0, 1]);
    let mut child = f.start(&cyclictest_args("1", "3"));
    f.wait_limited(child.id(), 0);
    assert_eq!(f.disabled(1), [false; 4], "CPU 1 is not in -a");
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(f.disabled(0), [false; 4], "enabled again at the end");
    assert!(registry_entries(f.registry.path(), None).is_empty());
    // As cyclictest 2.8: the option replaces the cpu_dma_latency request.
    assert_eq!(
        stderr,
        "WARN: not setting cpu_dma_latency, --deepest-idle-state is set instead\n"
    );
}

#[test]
fn the_cyclictest_drop_in_with_minus_one_disables_every_state() {
    let f = Fixture::new(&[0]);
    let mut child = f.start(&cyclictest_args("-1", "30"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.disabled(0) != [true; 4] {
        assert!(Instant::now() < deadline, "{:?}", f.disabled(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert_eq!(f.disabled(0), [false; 4], "enabled again after SIGTERM");
    assert!(registry_entries(f.registry.path(), None).is_empty());
}

#[test]
fn the_cyclictest_drop_in_says_when_there_is_nothing_to_limit() {
    let f = Fixture::new(&[]);
    let out = run(f.latscope(&cyclictest_args("1", "1")));
    assert_code(&out, 0);
    let line = format!(
        "latscope: warning: --deepest-idle-state 1: CPU 0 has no cpuidle driver (no {}/cpuN/cpuidle): there are no idle states to limit",
        f.root.path().display()
    );
    let stderr = stderr_of(&out);
    assert_eq!(stderr.matches(&line).count(), 1, "{line}\n{stderr}");
    assert!(
        !stdout_of(&out).contains("cpu_dma_latency"),
        "{}",
        describe(&out)
    );
    // Below -1, cyclictest 2.8 does nothing: cpu_dma_latency as usual.
    let out = run(f.latscope(&cyclictest_args("-2", "1")));
    assert_code(&out, 0);
    assert!(!stderr_of(&out).contains("deepest"), "{}", describe(&out));
}
