//! latscope in a real container engine (issue 42): the image of
//! packaging/container/build.sh, run by podman, and a manifest of
//! contrib/kubernetes through `podman kube play`. Each run is checked
//! against what the consumers of pods read: cyclictest's `# Max Latencies:`
//! and oslat's `Maximum:` against their rt-tests JSON max, the completion
//! marker, latscope's JSON, and the doctor's named cause.
//!
//! The image is built once per run of this test binary, from the binary
//! under test (`CARGO_BIN_EXE_latscope`: the profile the tests were built
//! with, stripped by build.sh), under a unique tag, into a podman store of
//! its own (CONTAINERS_STORAGE_CONF and CONTAINERS_CONF point into a
//! temporary directory), so neither the host's images nor its podman
//! configuration are touched. What podman needs on this kind of host goes
//! in that containers.conf (docs/containers.md): runc (crun refuses hybrid
//! cgroups), `default_ulimits = []` (RLIMIT_NOFILE cannot be raised), the
//! cgroupfs manager (no systemd), events to a file. Containers run with
//! `--network none` (no bridge, no firewall rule) and under a cgroup parent
//! of this run's own. At exit (atexit: libtest has no teardown) the
//! containers, pods and images of that store, the store, the cgroup parent
//! in every hierarchy and podman's `libpod_parent` (when `kube play` made
//! it here) are removed.
//!
//! Skipped, counted, when podman is missing, this is not root, or podman
//! cannot start a container here (the reason is podman's own line).

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The test binary's podman set-up: its store, its tag, its cgroup parent.
struct Engine {
    /// Holds containers.conf, storage.conf, the store and the volumes.
    dir: PathBuf,
    tag: String,
    /// `/latscope-test-PID-NS`: every container's `--cgroup-parent`.
    cgroup_parent: String,
    /// The cgroup hierarchies' mount points (v1 controllers and unified).
    hierarchies: Vec<PathBuf>,
    /// The hierarchies that had no `libpod_parent` before this run.
    libpod_parent_absent: Vec<PathBuf>,
}

static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();

/// The real-time budget of this run's cgroup parent (of the 950000 us per
/// second of the root group) and of each container that asks for rights:
/// a few containers at once fit, and it is far more than a cyclictest
/// thread uses.
const PARENT_RT_RUNTIME_US: &str = "150000";
const CONTAINER_RT_RUNTIME: &str = "--cpu-rt-runtime=50000";

fn engine(test: &str) -> Option<&'static Engine> {
    match ENGINE.get_or_init(set_up) {
        Ok(engine) => Some(engine),
        Err(why) => {
            latscope::testing::skip(test, why);
            None
        }
    }
}

fn set_up() -> Result<Engine, String> {
    if !euid_is_root() {
        return Err("podman needs root here (cgroup v1, rootful)".into());
    }
    let version = StdCommand::new("podman").arg("--version").output();
    if !version.is_ok_and(|o| o.status.success()) {
        return Err("podman is not installed (apt-get install podman runc)".into());
    }
    let dir = tempfile::Builder::new()
        .prefix("latscope-podman-")
        .tempdir()
        .map_err(|e| format!("temporary directory: {e}"))?
        .keep();
    if let Err(why) = write_config(&dir) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(why);
    }
    let unique = format!("{}-{}", std::process::id(), monotonic_ns());
    let hierarchies = cgroup_hierarchies();
    let engine = Engine {
        tag: format!("localhost/latscope-test:{unique}"),
        cgroup_parent: format!("/latscope-test-{unique}"),
        libpod_parent_absent: hierarchies
            .iter()
            .filter(|h| !h.join("libpod_parent").exists())
            .cloned()
            .collect(),
        hierarchies,
        dir,
    };
    match engine.prepare() {
        Ok(()) => {
            // SAFETY: registers a plain function with no arguments.
            unsafe { libc::atexit(remove_at_exit) };
            Ok(engine)
        }
        Err(why) => {
            engine.remove_everything();
            Err(why)
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The first line of a command's error output (podman's "Error: ...").
fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

/// containers.conf and storage.conf for this kind of host, in `dir`.
fn write_config(dir: &Path) -> Result<(), String> {
    let runc = StdCommand::new("runc").arg("--version").output();
    let runtime = if runc.is_ok_and(|o| o.status.success()) {
        "runtime = \"runc\"\n"
    } else {
        ""
    };
    let d = dir.display();
    let containers = format!(
        "[containers]\ndefault_ulimits = []\n[engine]\n{runtime}cgroup_manager = \"cgroupfs\"\n\
         events_logger = \"file\"\nevents_logfile_path = \"{d}/events.log\"\ntmp_dir = \"{d}/tmp\"\n\
         [network]\nnetwork_config_dir = \"{d}/networks\"\n"
    );
    let storage = format!(
        "[storage]\ndriver = \"overlay\"\ngraphroot = \"{d}/storage\"\nrunroot = \"{d}/run\"\n"
    );
    std::fs::write(dir.join("containers.conf"), containers)
        .and_then(|()| std::fs::write(dir.join("storage.conf"), storage))
        .and_then(|()| std::fs::create_dir(dir.join("out")))
        .map_err(|e| format!("writing podman's configuration in {d}: {e}"))
}

/// Every cgroup hierarchy mounted under /sys/fs/cgroup (one directory per
/// v1 controller, `unified` for v2 on a hybrid host, or the v2 root).
fn cgroup_hierarchies() -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mountinfo
        .lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let point = head.split(' ').nth(4)?;
            let fs = tail.split(' ').next()?;
            (fs == "cgroup" || fs == "cgroup2").then(|| PathBuf::from(point))
        })
        .collect()
}

impl Engine {
    /// The cgroup parent, the image, and one container started: what every
    /// test needs. A container that cannot start here (no runtime, cgroups
    /// refused) is a skip, with podman's reason; anything later is a failure.
    fn prepare(&self) -> Result<(), String> {
        self.make_cgroup_parent()?;
        let build = StdCommand::new(repo().join("packaging/container/build.sh"))
            .args(["--engine", "podman", "--binary"])
            .arg(bin())
            .args(["--tag", &self.tag])
            .envs(self.env())
            .output()
            .map_err(|e| format!("build.sh: {e}"))?;
        if !build.status.success() {
            return Err(format!(
                "build.sh could not build the image: {}",
                first_line(&build.stderr)
            ));
        }
        let mut probe = self.podman(&["run", "--rm"]);
        probe.arg(&self.tag).arg("--version");
        let probe = run_std_with_timeout(probe, Duration::from_secs(60));
        if !probe.status.success() {
            return Err(format!(
                "podman cannot run a container here: {}",
                first_line(&probe.stderr)
            ));
        }
        Ok(())
    }

    fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("CONTAINERS_CONF", self.dir.join("containers.conf")),
            ("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf")),
        ]
    }

    /// `podman ARGS`, against this run's store and configuration; `run`
    /// gets the options every container of this test takes.
    fn podman(&self, args: &[&str]) -> StdCommand {
        let mut cmd = StdCommand::new("podman");
        cmd.envs(self.env()).args(args).stdin(Stdio::null());
        if args.first() == Some(&"run") {
            cmd.args(["--network", "none", "--cgroup-parent", &self.cgroup_parent])
                .arg("-v")
                .arg(format!("{}:/out", self.out().display()));
        }
        cmd
    }

    /// `podman run OPTIONS IMAGE WORDS`, its output. conmon kills the
    /// container after 50 s (`--timeout`); should the client still hang,
    /// it is killed at 60 s and the container removed by name (killing
    /// podman's client alone leaves the container running).
    fn run(&self, options: &[&str], words: &[&str]) -> Output {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{}-{n}", self.cgroup_parent.trim_start_matches('/'));
        let _remove = RemoveContainer {
            engine: self,
            name: name.clone(),
        };
        let mut cmd = self.podman(&["run", "--rm", "--timeout", "50", "--name", &name]);
        cmd.args(options).arg(&self.tag).args(words);
        run_std_with_timeout(cmd, Duration::from_secs(60))
    }

    /// The host directory each container sees as /out.
    fn out(&self) -> PathBuf {
        self.dir.join("out")
    }

    /// The cgroup v1 `cpu` directory of the parent, given a real-time
    /// budget, so that a container asking `--cpu-rt-runtime` gets one.
    fn make_cgroup_parent(&self) -> Result<(), String> {
        let Some(cpu) = self.hierarchies.iter().find(|h| h.ends_with("cpu")) else {
            return Ok(());
        };
        let dir = cpu.join(self.cgroup_parent.trim_start_matches('/'));
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let budget = dir.join("cpu.rt_runtime_us");
        if budget.exists() {
            std::fs::write(&budget, PARENT_RT_RUNTIME_US)
                .map_err(|e| format!("{}: {e}", budget.display()))?;
        }
        Ok(())
    }

    /// Whether containers can be given a real-time budget here (cgroup v1
    /// `cpu` with real-time group scheduling).
    fn has_rt_budget(&self) -> bool {
        self.hierarchies.iter().any(|h| {
            h.ends_with("cpu")
                && h.join(self.cgroup_parent.trim_start_matches('/'))
                    .join("cpu.rt_runtime_us")
                    .exists()
        })
    }

    /// Everything this run made: containers, pods and images of its own
    /// store (then the store), its cgroup parent and, where this run's
    /// `kube play` made it, podman's empty `libpod_parent`.
    fn remove_everything(&self) {
        for args in [
            &["pod", "rm", "--all", "--force"][..],
            &["rm", "--all", "--force", "--time", "0"],
            &["rmi", "--all", "--force"],
        ] {
            let _ = self
                .podman(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        unmount_under(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
        for hierarchy in &self.hierarchies {
            remove_cgroup_tree(&hierarchy.join(self.cgroup_parent.trim_start_matches('/')));
        }
        for hierarchy in &self.libpod_parent_absent {
            // `kube down` leaves the pod's cgroup in the name=systemd and
            // unified hierarchies. A cgroup still in use by another podman
            // has tasks, and rmdir refuses it: then it stays.
            remove_cgroup_tree(&hierarchy.join("libpod_parent"));
        }
    }
}

/// Removes a container by name when dropped (after a run, or a panic).
struct RemoveContainer<'a> {
    engine: &'a Engine,
    name: String,
}

impl Drop for RemoveContainer<'_> {
    fn drop(&mut self) {
        let _ = self
            .engine
            .podman(&["rm", "--force", "--ignore", "--time", "0", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

extern "C" fn remove_at_exit() {
    if let Some(Ok(engine)) = ENGINE.get() {
        engine.remove_everything();
    }
}

/// Mounts left under `dir` (an overlay of a container that did not end):
/// unmounted, deepest first, so that removing the store removes only it.
fn unmount_under(dir: &Path) {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<&str> = mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| Path::new(p).starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for point in points {
        let _ = StdCommand::new("umount").args(["-l", point]).status();
    }
}

/// A cgroup directory and its children (conmon's, the containers'),
/// deepest first; a cgroup is removed with rmdir, never its files.
fn remove_cgroup_tree(dir: &Path) {
    if let Ok(children) = std::fs::read_dir(dir) {
        for child in children.flatten() {
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&child.path());
            }
        }
    }
    // rmdir of a cgroup whose last task just exited can race its exit.
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The values of the `# Max Latencies:` line of cyclictest's histogram
/// output, one per thread (the line may follow a runner's klog prefix).
fn max_latencies(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .find_map(|l| l.split_once("# Max Latencies:").map(|(_, rest)| rest))
        .map(|rest| {
            rest.split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// oslat's `Maximum:` values, one per measured CPU, in order.
fn oslat_maxima(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Maximum:"))
        .map(|rest| rest.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// The rt-tests JSON's per-thread (max, cpu), by thread number.
fn rt_tests_maxima(json: &Value) -> Vec<(u64, u64)> {
    let threads = json["thread"]
        .as_object()
        .expect("rt-tests JSON has thread");
    let mut numbered: Vec<(usize, (u64, u64))> = threads
        .iter()
        .map(|(n, t)| {
            (
                n.parse().unwrap(),
                (u64_of(&t["max"], "max"), u64_of(&t["cpu"], "cpu")),
            )
        })
        .collect();
    numbered.sort();
    numbered.into_iter().map(|(_, t)| t).collect()
}

fn checks_by_id<'a>(doctor: &'a Value, id: &str) -> &'a Value {
    doctor["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no {id} check in {doctor:#}"))
}

#[test]
fn cyclictest_in_a_privileged_container_on_one_cpu_with_real_time_rights() {
    const TEST: &str =
        "slow::container::cyclictest_in_a_privileged_container_on_one_cpu_with_real_time_rights";
    let Some(engine) = engine(TEST) else { return };
    if !engine.has_rt_budget() {
        return latscope::testing::skip(TEST, "no cgroup v1 cpu.rt_runtime_us to give a budget");
    }
    // A SCHED_FIFO thread on the measured CPU: not beside the tests that
    // spin there at a real-time priority (it would starve, or disturb them).
    let _turn = turns::realtime_turn();
    let cpu = measured_cpu().to_string();
    let out = engine.run(
        &[
            "--privileged",
            "--cpuset-cpus",
            &cpu,
            CONTAINER_RT_RUNTIME,
            "--entrypoint",
            "cyclictest",
        ],
        &[
            "-q",
            "-D",
            "2",
            "-p",
            "95",
            "-m",
            "-h",
            "30",
            "-i",
            "1000",
            "-t",
            "1",
            "-a",
            &cpu,
            "--json=/out/cyclictest.json",
            "--latscope-json",
            "/out/cyclictest-latscope.json",
        ],
    );
    assert_code(&out, 0);
    let json = read_json(&engine.out().join("cyclictest.json"));
    let maxima = rt_tests_maxima(&json);
    assert_eq!(maxima.len(), 1, "{json:#}");
    // What a runner's consumer greps equals what MicroShift reads.
    assert_eq!(
        max_latencies(&stdout_of(&out)),
        vec![maxima[0].0],
        "{}",
        describe(&out)
    );
    assert_eq!(
        maxima[0].1.to_string(),
        cpu,
        "the thread ran off --cpuset-cpus"
    );
    // The budget given to the container made SCHED_FIFO possible there.
    let report = read_json(&engine.out().join("cyclictest-latscope.json"));
    for s in series(&report) {
        assert_eq!(s["policy"], "fifo", "{s:#}");
        assert_eq!(s["priority"], 95, "{s:#}");
    }
}

/// A cnf-tests runner face in a container, as OpenShift's latency test
/// starts it: its klog lines and cyclictest's `# Max Latencies:` on
/// standard error, exit 0. The runner faces come from another change
/// (issue 42, items 2 and 3): where this build has none, a counted skip.
#[test]
fn cyclictest_runner_in_a_privileged_container() {
    const TEST: &str = "slow::container::cyclictest_runner_in_a_privileged_container";
    if latscope::cli::CompatName::named("cyclictest-runner").is_none() {
        return latscope::testing::skip(TEST, "this build has no cyclictest-runner face");
    }
    let Some(engine) = engine(TEST) else { return };
    let allowed = allowed_cpus();
    if allowed.len() < 2 || !engine.has_rt_budget() {
        return latscope::testing::skip(TEST, "needs 2 CPUs and a cgroup v1 real-time budget");
    }
    let _turn = turns::realtime_turn();
    let cpuset = format!("{},{}", allowed[0], allowed[allowed.len() - 1]);
    let out = engine.run(
        &[
            "--privileged",
            "--cpuset-cpus",
            &cpuset,
            CONTAINER_RT_RUNTIME,
            "--entrypoint",
            "cyclictest-runner",
        ],
        &["-duration=2", "-rt-priority=1", "-interval=500"],
    );
    assert_code(&out, 0);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("] succeeded to run the cyclictest command: "),
        "{}",
        describe(&out)
    );
    assert_eq!(max_latencies(&stderr).len(), 1, "{}", describe(&out));
}

#[test]
fn oslat_in_an_unprivileged_container_with_a_cpuset() {
    const TEST: &str = "slow::container::oslat_in_an_unprivileged_container_with_a_cpuset";
    let Some(engine) = engine(TEST) else { return };
    let allowed = allowed_cpus();
    if allowed.len() < 2 {
        return latscope::testing::skip(TEST, "needs 2 CPUs (housekeeping and a measured one)");
    }
    let cpuset = format!("{},{}", allowed[0], allowed[allowed.len() - 1]);
    let out = engine.run(
        &["--cpuset-cpus", &cpuset, "--entrypoint", "oslat"],
        &["-D", "2", "--json=/out/oslat-cpuset.json"],
    );
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(stdout.contains("\nTest completed.\n"), "{}", describe(&out));
    let json = read_json(&engine.out().join("oslat-cpuset.json"));
    let maxima = rt_tests_maxima(&json);
    assert_eq!(
        oslat_maxima(&stdout),
        maxima.iter().map(|m| m.0).collect::<Vec<_>>(),
        "{}",
        describe(&out)
    );
    // The cgroup's cpuset was read: the first CPU keeps housekeeping, the
    // other is measured.
    assert_eq!(
        maxima.iter().map(|m| m.1 as usize).collect::<Vec<_>>(),
        vec![allowed[allowed.len() - 1]],
        "{json:#}"
    );
}

#[test]
fn suite_in_a_container_says_why_it_ran_at_policy_other() {
    const TEST: &str = "slow::container::suite_in_a_container_says_why_it_ran_at_policy_other";
    let Some(engine) = engine(TEST) else { return };
    let out = engine.run(&[], &["suite", "-D", "2s", "--json", "/out/suite.json"]);
    assert_code(&out, 0);
    let report = read_json(&engine.out().join("suite.json"));
    let tests = array_of(&report["tests"], "tests");
    assert!(tests.iter().any(|t| t["test"] == "timer"), "{report:#}");
    for test in tests {
        for s in array_of(&test["series"], "series") {
            assert_eq!(s["policy"], "other", "{s:#}");
            assert!(u64_of(&s["max_ns"], "max_ns") > 0, "{s:#}");
        }
    }
    let warnings = array_of(&report["warnings"], "warnings");
    let line = warnings
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.starts_with("no real-time priority (policy other)"))
        .unwrap_or_else(|| panic!("no policy-other warning: {warnings:#?}"));
    assert!(line.contains("cpu.rt_runtime_us is 0"), "{line}");
}

#[test]
fn doctor_in_a_container_names_the_cgroups_real_time_budget() {
    const TEST: &str = "slow::container::doctor_in_a_container_names_the_cgroups_real_time_budget";
    let Some(engine) = engine(TEST) else { return };
    if !engine.has_rt_budget() {
        return latscope::testing::skip(TEST, "no cgroup v1 cpu.rt_runtime_us here");
    }
    // Privileged, yet no budget: the cause is the cgroup, not a capability.
    let out = engine.run(&["--privileged"], &["doctor", "--json", "-"]);
    let doctor: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json - is not JSON ({e}):\n{}", describe(&out)));
    let check = checks_by_id(&doctor, "sched.realtime");
    assert_eq!(check["verdict"], "bad", "{check:#}");
    let meaning = check["meaning"].as_str().unwrap_or_default();
    assert!(meaning.contains("cpu.rt_runtime_us is 0"), "{check:#}");
    assert!(!meaning.contains("CAP_SYS_NICE is missing"), "{check:#}");
    // A drop-in asked for a priority there fails, and its one line names
    // the budget, not the priority limit.
    let out = engine.run(
        &["--privileged", "--entrypoint", "oslat"],
        &["-D", "1", "--rtprio", "1"],
    );
    assert_code(&out, 1);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("cpu.rt_runtime_us is 0: this cgroup has no real-time budget"),
        "{}",
        describe(&out)
    );
    // With a budget and CAP_SYS_NICE the same probe is granted.
    let out = engine.run(
        &[CONTAINER_RT_RUNTIME, "--cap-add=SYS_NICE"],
        &["doctor", "--json", "-"],
    );
    let doctor: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json - is not JSON ({e}):\n{}", describe(&out)));
    let check = checks_by_id(&doctor, "sched.realtime");
    assert_eq!(check["verdict"], "ok", "{check:#}");
}

/// contrib/kubernetes/oslat-pod.yaml as written, but for this run: the
/// image under test, this run's results directory as the hostPath, 2 s
/// instead of 10 min, and no real-time priority (a pod of `kube play` gets
/// no real-time budget on this host, and oslat refuses to start without
/// the priority it was asked for, as rt-tests' does).
fn oslat_pod_for(engine: &Engine) -> String {
    let manifest =
        std::fs::read_to_string(repo().join("contrib/kubernetes/oslat-pod.yaml")).unwrap();
    let mut pod = manifest.clone();
    for (from, to) in [
        (
            "image: localhost/latscope:latest",
            format!("image: {}", engine.tag),
        ),
        (
            "path: /var/tmp/latscope-fleet,",
            format!("path: {},", engine.out().display()),
        ),
        (
            r#"args: ["--duration", "10m", "--rtprio", "1","#,
            r#"args: ["--duration", "2","#.to_string(),
        ),
    ] {
        assert_eq!(pod.matches(from).count(), 1, "{from} in oslat-pod.yaml");
        pod = pod.replace(from, &to);
    }
    pod
}

#[test]
fn kube_play_runs_the_oslat_pod_manifest() {
    const TEST: &str = "slow::container::kube_play_runs_the_oslat_pod_manifest";
    let Some(engine) = engine(TEST) else { return };
    let manifest = engine.dir.join("oslat-pod.yaml");
    std::fs::write(&manifest, oslat_pod_for(engine)).unwrap();
    let manifest = manifest.to_str().unwrap();
    let play = engine
        .podman(&["kube", "play", "--network", "none", manifest])
        .output()
        .unwrap();
    assert!(play.status.success(), "kube play: {}", describe(&play));
    let container = "latscope-oslat-oslat";
    let wait = run_std_with_timeout(engine.podman(&["wait", container]), Duration::from_secs(60));
    let logs = engine.podman(&["logs", container]).output().unwrap();
    let down = engine.podman(&["kube", "down", manifest]).output().unwrap();
    // kube down leaves the pod's cgroup (libpod_parent/POD) in the
    // name=systemd and unified hierarchies: removed here, by the pod's id.
    let pod_id = stdout_of(&play)
        .lines()
        .skip_while(|l| *l != "Pod:")
        .nth(1)
        .map(str::to_string)
        .unwrap_or_default();
    if !pod_id.is_empty() {
        for hierarchy in &engine.hierarchies {
            remove_cgroup_tree(&hierarchy.join("libpod_parent").join(&pod_id));
        }
    }
    assert!(down.status.success(), "kube down: {}", describe(&down));
    assert_eq!(
        stdout_of(&wait).trim(),
        "0",
        "{}\n{}",
        describe(&wait),
        describe(&logs)
    );
    let stdout = stdout_of(&logs);
    assert!(
        stdout.contains("\nTest completed.\n"),
        "{}",
        describe(&logs)
    );
    let json = read_json(&engine.out().join("oslat.json"));
    let maxima: Vec<u64> = rt_tests_maxima(&json).iter().map(|m| m.0).collect();
    assert!(!maxima.is_empty(), "{json:#}");
    assert_eq!(oslat_maxima(&stdout), maxima, "{}", describe(&logs));
    // kube down took the pod and its containers, the infra one too (the
    // other tests run no pod; their containers may be running now).
    let pods = engine.podman(&["pod", "ps", "--quiet"]).output().unwrap();
    assert_eq!(stdout_of(&pods), "", "pods left after kube down");
    for name in [container, "-infra"] {
        let left = engine
            .podman(&[
                "ps",
                "--all",
                "--quiet",
                "--filter",
                &format!("name={name}"),
            ])
            .output()
            .unwrap();
        assert_eq!(stdout_of(&left), "", "{name} left after kube down");
    }
}

/// `build.sh --stage-only DIR` with the binary under test.
fn stage(context: &Path) -> Output {
    StdCommand::new(repo().join("packaging/container/build.sh"))
        .arg("--binary")
        .arg(bin())
        .arg("--stage-only")
        .arg(context)
        .output()
        .unwrap()
}

/// build.sh's context, without an engine: the binary, a link on PATH for
/// every compatibility name, the libraries and loader the binary asks for,
/// root and nobody, /tmp for everyone.
#[test]
fn build_sh_assembles_the_image_contents() {
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("context");
    let out = stage(&context);
    assert!(out.status.success(), "{}", describe(&out));
    let root = context.join("rootfs");
    assert!(context.join("Containerfile").is_file());
    let usr_bin = root.join("usr/bin");
    for compat in latscope::cli::COMPAT_NAMES {
        let link = usr_bin.join(compat.name);
        assert_eq!(
            std::fs::read_link(&link).ok(),
            Some(PathBuf::from("latscope")),
            "{} is no link to latscope",
            link.display()
        );
    }
    // Every library ldd names, and the loader, at the path asked for.
    let ldd = StdCommand::new("ldd").arg(bin()).output().unwrap();
    let wanted: Vec<String> = stdout_of(&ldd)
        .lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                [_, "=>", path, ..] if path.starts_with('/') => Some(path.to_string()),
                [path, ..] if path.starts_with('/') => Some(path.to_string()),
                _ => None,
            }
        })
        .collect();
    assert!(
        wanted.iter().any(|l| l.contains("ld-")),
        "no loader in {wanted:?}"
    );
    for lib in &wanted {
        let inside = root.join(lib.trim_start_matches('/'));
        assert!(inside.is_file(), "{lib} missing from the image");
    }
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("nobody:x:65534:65534:")),
        "{passwd}"
    );
    use std::os::unix::fs::PermissionsExt;
    let tmp = std::fs::metadata(root.join("tmp"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(tmp & 0o7777, 0o1777);
    // A non-empty context is refused: nothing of the user's is overwritten.
    let again = stage(&context);
    assert_eq!(again.status.code(), Some(2), "{}", describe(&again));
}

/// Every manifest of contrib/kubernetes: the image built here, Guaranteed
/// QoS (each container's requests equal its limits, whole CPUs),
/// privileged, CRI-O's three annotations set to disable, the real-time
/// RuntimeClass offered, results where the fleet set-up reads them.
#[test]
fn every_kubernetes_manifest_is_guaranteed_privileged_and_annotated() {
    let dir = repo().join("contrib/kubernetes");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with("realtime-runtimeclass.yaml"))
        .collect();
    manifests.sort();
    assert!(manifests.len() >= 6, "{manifests:?}");
    for path in manifests {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for annotation in [
            "cpu-load-balancing.crio.io: \"disable\"",
            "irq-load-balancing.crio.io: \"disable\"",
            "cpu-quota.crio.io: \"disable\"",
            "image: localhost/latscope:latest",
            "privileged: true",
            "# runtimeClassName: ",
            "hostPath: {path: /var/tmp/latscope-fleet, type: DirectoryOrCreate}",
        ] {
            assert!(text.contains(annotation), "{name} lacks {annotation}");
        }
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let requests: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("requests: "))
            .collect();
        assert!(!requests.is_empty(), "{name}: no resources");
        for i in requests {
            let wanted = lines[i].replacen("requests: ", "limits: ", 1);
            assert_eq!(
                lines.get(i + 1),
                Some(&wanted.as_str()),
                "{name}: requests != limits"
            );
            let cpu = wanted
                .split("cpu: \"")
                .nth(1)
                .and_then(|r| r.split('"').next());
            assert!(
                cpu.is_some_and(|c| c.parse::<u32>().is_ok_and(|n| n > 0)),
                "{name}: not a whole number of CPUs: {wanted}"
            );
        }
        if text.contains("--prom") {
            assert!(
                text.contains("path: /var/lib/prometheus/node-exporter,"),
                "{name}"
            );
        }
    }
}
