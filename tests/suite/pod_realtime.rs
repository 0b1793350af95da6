//! What a container on this host meets, reproduced without a container: a
//! cgroup v1 `cpu` child whose `cpu.rt_runtime_us` is 0 (what podman gives
//! a container without `--cpu-rt-runtime`). `latscope doctor`, moved into
//! it by a shell wrapper before exec, must find SCHED_FIFO refused and name
//! that file; with a budget it must find it granted; and a test run there
//! must say in its policy-other line why.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TEST: &str = "pod_realtime::doctor_names_a_cgroup_without_real_time_budget";

/// A child cgroup made for this test, removed when dropped (the processes
/// moved into it have ended by then).
struct ChildCgroup {
    dir: PathBuf,
}

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        // rmdir of a cgroup whose last task just exited can race its exit.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("could not remove the test cgroup {}", self.dir.display());
    }
}

fn make_child() -> Result<ChildCgroup, String> {
    if !euid_is_root() {
        return Err("needs root to create a cgroup".into());
    }
    // Where latscope's reader says this process's cpu cgroup is (the one the
    // doctor will read from inside the child).
    let own =
        latscope::rt::cgroup::v1(Path::new("/"), "cpu").ok_or("no cgroup v1 cpu hierarchy")?;
    let dir = own.dir.join(format!(
        "latscope-test-{}-{}",
        std::process::id(),
        monotonic_ns()
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let child = ChildCgroup { dir };
    if !child.dir.join("cpu.rt_runtime_us").exists() {
        return Err("the kernel has no real-time group scheduling (no cpu.rt_runtime_us)".into());
    }
    Ok(child)
}

/// Runs `latscope ARGS` inside `cgroup`: a shell writes its pid to
/// cgroup.procs, then execs latscope.
fn run_in(cgroup: &ChildCgroup, args: &[&str]) -> std::process::Output {
    let mut cmd = assert_cmd::Command::new("sh");
    cmd.arg("-c")
        .arg("echo $$ > \"$1/cgroup.procs\" && shift 2 && exec \"$0\" \"$@\"")
        .arg(bin())
        .arg(&cgroup.dir)
        .arg("--")
        .args(args)
        .timeout(Duration::from_secs(30));
    cmd.output().expect("sh runs")
}

fn realtime_check(out: &std::process::Output) -> Value {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json - is not JSON ({e}):\n{}", describe(out)));
    doc["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == "sched.realtime"))
        .cloned()
        .unwrap_or_else(|| panic!("no sched.realtime check:\n{}", describe(out)))
}

#[test]
fn doctor_names_a_cgroup_without_real_time_budget() {
    let cgroup = match make_child() {
        Ok(c) => c,
        Err(why) => return latscope::testing::skip(TEST, &why),
    };
    let runtime_file = cgroup.dir.join("cpu.rt_runtime_us");
    std::fs::write(&runtime_file, "0").expect("set cpu.rt_runtime_us");
    let out = run_in(&cgroup, &["doctor", "--json", "-"]);
    let check = realtime_check(&out);
    assert_eq!(check["verdict"], "bad", "{check:#}");
    assert_eq!(check["value"], "SCHED_FIFO refused (EPERM)", "{check:#}");
    let named = format!("{} is 0", runtime_file.display());
    let meaning = check["meaning"].as_str().unwrap_or_default();
    assert!(meaning.contains(&named), "{named} not in {check:#}");
    assert!(
        check["fix"]
            .as_str()
            .is_some_and(|f| f.starts_with("podman: --cpu-rt-runtime=950000")),
        "{check:#}"
    );
    // A test run there says in its one line that it ran at policy other, and why.
    let out = run_in(&cgroup, &["timer", "--duration", "300ms", "--json", "-"]);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("timer --json - is not JSON ({e}):\n{}", describe(&out)));
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let line = warnings
        .iter()
        .find(|w| w.starts_with("no real-time priority (policy other)"))
        .unwrap_or_else(|| panic!("no policy-other warning: {warnings:#?}"));
    assert!(line.contains(&named), "{line}");
    // With a budget, the same probe is granted: the check follows the cgroup.
    std::fs::write(&runtime_file, "10000").expect("give the cgroup a budget");
    let check = realtime_check(&run_in(&cgroup, &["doctor", "--json", "-"]));
    assert_eq!(check["verdict"], "ok", "{check:#}");
}
