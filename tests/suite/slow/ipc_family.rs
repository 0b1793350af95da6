//! Every IPC primitive through the real binary: each mode, threads and
//! processes, same and cross CPU; the `ipc` comparison; leak checks after a
//! normal end, after SIGINT and after kill -9 of a fork-mode child.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const PRIMITIVES: [&str; 9] = [
    "mq", "sem", "svsem", "signal", "pipe", "eventfd", "futex", "unix", "svmq",
];

/// Priority options: real time where allowed (CI runs as root).
fn prio() -> Vec<&'static str> {
    if can_use_realtime() {
        vec!["-p", "80"]
    } else {
        vec![]
    }
}

/// The ids listed in /proc/sysvipc/`what` (`sem` or `msg`), with each
/// line's fields by column name.
fn sysv_table(what: &str) -> Vec<std::collections::HashMap<String, String>> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/sysvipc/{what}")) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split_whitespace().map(String::from))
                .collect()
        })
        .collect()
}

/// When this test process started, in seconds since the epoch (rounded
/// down): from its start in clock ticks after boot and the uptime.
fn this_process_started() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Field 22 (starttime), counted after the command name in parentheses.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after
        .split_whitespace()
        .nth(19)
        .and_then(|t| t.parse().ok())
        .expect("starttime");
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse().ok())
        .expect("/proc/uptime");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    (now - uptime + ticks / per_second).max(0.0) as u64
}

/// Whether the object was made (`ctime`) before this test process began,
/// a second's rounding aside: then no run of this process left it, whatever
/// pids its last users had (pids recycle: `pid_max` is 32768 here, and
/// objects a killed run left hours earlier named pids this suite reused).
fn older_than_this_process(object: &std::collections::HashMap<String, String>) -> bool {
    let ctime: u64 = object
        .get("ctime")
        .and_then(|t| t.parse().ok())
        .unwrap_or(u64::MAX);
    ctime + 1 < this_process_started()
}

/// The System V objects that tasks `pids` used last, of those made since
/// this test process began. Linux records no creator of a semaphore set,
/// only the pid of the last operation on each semaphore (what `ipcs -s -i
/// ID` shows); for a message queue, the last sender and receiver (`ipcs -q
/// -p`). A set or queue of a finished latscope run was last used by
/// latscope or its peer.
fn sysv_objects_used_by(pids: &[u32]) -> Vec<String> {
    let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    let mut found = Vec::new();
    for queue in sysv_table("msg") {
        if older_than_this_process(&queue) {
            continue;
        }
        let used = ["lspid", "lrpid"]
            .iter()
            .any(|c| queue.get(*c).is_some_and(|p| pids.contains(p)));
        if used {
            found.push(format!("message queue {}", queue["msqid"]));
        }
    }
    for set in sysv_table("sem") {
        if older_than_this_process(&set) {
            continue;
        }
        let id = &set["semid"];
        let Ok(out) = std::process::Command::new("ipcs")
            .args(["-s", "-i", id])
            .output()
        else {
            continue;
        };
        // Lines "semnum value ncount zcount pid": the last column is the pid.
        let used = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.split_whitespace().count() == 5)
            .filter_map(|l| l.split_whitespace().last().map(String::from))
            .any(|p| pids.contains(&p));
        if used {
            found.push(format!("semaphore set {id}"));
        }
    }
    found
}

/// The System V objects a report names in its resources, as ("sem"|"msg", id).
fn sysv_ids_in(report: &Value) -> Vec<(&'static str, String)> {
    let mut ids = Vec::new();
    for t in report["tests"].as_array().into_iter().flatten() {
        for s in t["series"].as_array().into_iter().flatten() {
            for r in s["detail"]["resources"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or("");
                let kind = if r.starts_with("sysv-sem ") {
                    "sem"
                } else if r.starts_with("sysv-msq ") {
                    "msg"
                } else {
                    continue;
                };
                let id = r.split_whitespace().nth(1).unwrap_or("").to_string();
                ids.push((kind, id));
            }
        }
    }
    ids
}

/// Every System V object the report names is gone.
fn assert_sysv_gone(report: &Value) {
    for (kind, id) in sysv_ids_in(report) {
        let column = if kind == "sem" { "semid" } else { "msqid" };
        let left = sysv_table(kind).iter().any(|row| row[column] == id);
        assert!(!left, "System V {kind} {id} of the report is still there");
    }
}

/// Processes whose command line contains `marker`: a leaked fork-mode peer
/// carries latscope's command line, even once orphaned.
fn processes_with_arg(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

/// Children of `pid` right now.
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) {
            // The fields after the command name, which is in parentheses.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            if ppid == Some(pid) {
                found.push(child);
            }
        }
    }
    found
}

/// Nothing of the finished run `pid` (whose command line contained `marker`)
/// is left: no SysV object, no POSIX queue, no /dev/shm object, no process.
fn assert_nothing_left(pid: u32, marker: &str) {
    assert_eq!(
        sysv_objects_used_by(&[pid]),
        Vec::<String>::new(),
        "SysV objects left"
    );
    assert_no_latscope_queues(pid);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = processes_with_arg(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of the run still alive: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `latscope ARGS --json FILE`, expects exit 0 and returns the report.
/// The JSON path doubles as a unique marker of the run's processes.
fn run_ok(argv: &[&str]) -> Value {
    run_ok_with_stdout(argv).0
}

/// `run_ok`, also returning what the run printed on standard output.
fn run_ok_with_stdout(argv: &[&str]) -> (Value, String) {
    let (_dir, file) = temp_file("report.json");
    let mut full: Vec<&str> = argv.to_vec();
    full.extend(["--json", file.to_str().unwrap()]);
    let spawned = spawn(&full);
    let pid = spawned.child.id();
    let (status, out, err) = spawned.wait(Duration::from_secs(60));
    let all = dump(status, &out, &err);
    assert_eq!(status.code(), Some(0), "{argv:?}\n{all}");
    let report = read_json(&file);
    check_report_header(&report);
    assert_sysv_gone(&report);
    assert_nothing_left(pid, file.to_str().unwrap());
    (report, out)
}

#[test]
fn every_primitive_in_every_shape() {
    let cross_possible = allowed_cpus().len() >= 2;
    for primitive in PRIMITIVES {
        for mode in ["oneway", "roundtrip"] {
            for fork in [false, true] {
                for cross in [false, true] {
                    if cross && !cross_possible {
                        continue;
                    }
                    let mut argv = vec![primitive, "-q", "--mode", mode];
                    if primitive == "sem" {
                        // semtest's letters: -i iterations, -I interval, -n pairs.
                        argv.extend(["-i", "150", "-I", "200", "-n", "1"]);
                    } else {
                        argv.extend(["-l", "150", "-i", "200", "-a", "-t", "1"]);
                    }
                    argv.extend(prio());
                    if fork {
                        // mq's -f is pmqtest's --forcetimeout.
                        argv.push("--fork");
                    }
                    if cross {
                        argv.push("--cross-cpu");
                    }
                    argv.extend_from_slice(mlock_args());
                    let report = run_ok(&argv);
                    let what = format!("{argv:?}");
                    let test = &report["tests"][0];
                    assert_eq!(test["test"], primitive, "{what}");
                    assert_eq!(
                        test["mode"],
                        if mode == "oneway" {
                            "one-way"
                        } else {
                            "round-trip"
                        },
                        "{what}"
                    );
                    assert_eq!(
                        test["config"]["detail"]["tasks"],
                        if fork { "processes" } else { "threads" },
                        "{what}"
                    );
                    assert_eq!(test["config"]["detail"]["cross_cpu"], cross, "{what}");
                    assert_eq!(test["end_reason"], "loops_done", "{what}");
                    let s = &test["series"][0];
                    assert_eq!(s["samples"], 150, "{what}");
                    check_summary(s, &what, true);
                    let (rc, sc) = (
                        u64_of(&s["detail"]["receiver_cpu"], "rc"),
                        u64_of(&s["detail"]["sender_cpu"], "sc"),
                    );
                    if cross {
                        assert_ne!(rc, sc, "{what}: cross-CPU pair on one CPU");
                    } else {
                        assert_eq!(rc, sc, "{what}: pair split across CPUs");
                    }
                    assert_ne!(
                        s["detail"]["receiver_tid"], s["detail"]["sender_tid"],
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn sysv_objects_are_named_with_their_creator() {
    for primitive in ["svsem", "svmq"] {
        let mut argv = vec![primitive, "-q", "-l", "10", "-i", "100"];
        argv.extend_from_slice(mlock_args());
        let report = run_ok(&argv);
        let resources = report["tests"][0]["series"][0]["detail"]["resources"]
            .as_array()
            .expect("resources");
        assert_eq!(resources.len(), 1, "{resources:?}");
        let name = resources[0].as_str().unwrap();
        assert!(
            matches(r"^sysv-(sem|msq) \d+ \(creator pid \d+\)$", name),
            "{name}"
        );
    }
}

/// The voluntary context switches of process `pid` so far (0 once gone).
fn voluntary_switches(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Starts an endless fork-mode run, waits until its peer child exists and
/// the pair measures.
fn start_endless_fork_run(primitive: &str, file: &Path) -> (Spawned, u32) {
    let mut argv = vec![primitive, "-q", "-i", "1000", "--fork", "--json"];
    argv.push(file.to_str().unwrap());
    argv.extend(prio());
    argv.extend_from_slice(mlock_args());
    let spawned = spawn(&argv);
    let pid = spawned.child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let child = loop {
        if let Some(&c) = children_of(pid).first() {
            break c;
        }
        assert!(Instant::now() < deadline, "no peer process appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Measuring: the peer has blocked and been woken many times (each
    // sample wakes it once). A fixed 700 ms was too short once, in the
    // 11-29 trial (a report with 0 samples): a loaded machine may take
    // longer to start the pair than to measure it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while voluntary_switches(child) < 20 {
        assert!(
            Instant::now() < deadline,
            "the peer process {child} never measured"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (spawned, child)
}

#[test]
fn a_killed_peer_process_ends_the_run_with_results_and_exit_1() {
    for primitive in ["signal", "svsem", "sem", "futex"] {
        let (_dir, file) = temp_file("report.json");
        let (spawned, child) = start_endless_fork_run(primitive, &file);
        let pid = spawned.child.id();
        let killed_at = Instant::now();
        // SAFETY: signalling a process we just found as latscope's child.
        unsafe { libc::kill(child as libc::pid_t, libc::SIGKILL) };
        let (status, out, err) = spawned.wait(Duration::from_secs(60));
        let all = dump(status, &out, &err);
        assert!(
            killed_at.elapsed() < Duration::from_secs(3),
            "{primitive}: the run did not end promptly\n{all}"
        );
        assert_eq!(status.code(), Some(1), "{primitive}\n{all}");
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("latscope: error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{primitive}: one error line\n{all}");
        assert!(
            errors[0].contains("peer process") && errors[0].contains("signal 9"),
            "{primitive}\n{all}"
        );
        let report = read_json(&file);
        check_report_header(&report);
        assert!(u64_of(&report["tests"][0]["series"][0]["samples"], "samples") > 0);
        assert_eq!(report["exit_code"], 1);
        assert_sysv_gone(&report);
        assert_nothing_left(pid, file.to_str().unwrap());
    }
}

#[test]
fn sigint_in_fork_mode_reports_and_leaves_nothing() {
    for primitive in ["svsem", "svmq", "signal"] {
        let (_dir, file) = temp_file("report.json");
        let (spawned, _child) = start_endless_fork_run(primitive, &file);
        let pid = spawned.child.id();
        spawned.signal(libc::SIGINT);
        let (status, out, err) = spawned.wait(Duration::from_secs(60));
        let all = dump(status, &out, &err);
        assert_eq!(status.code(), Some(0), "{primitive}\n{all}");
        let report = read_json(&file);
        assert_eq!(report["tests"][0]["end_reason"], "interrupted", "{all}");
        assert!(u64_of(&report["tests"][0]["series"][0]["samples"], "samples") > 0);
        assert_sysv_gone(&report);
        assert_nothing_left(pid, file.to_str().unwrap());
    }
}

#[test]
fn back_to_back_runs_block_every_sample_and_count_no_overruns() {
    for primitive in ["futex", "pipe"] {
        let mut argv = vec![primitive, "-q", "-i", "0", "-d", "0", "-l", "20000", "-S"];
        argv.extend(prio());
        argv.extend_from_slice(mlock_args());
        let report = run_ok(&argv);
        for s in series(&report) {
            assert_eq!(s["samples"], 20000);
            assert_eq!(s["overruns"], 0);
            assert_eq!(s["detail"]["interval_us"], 0);
        }
    }
}

#[test]
fn ipc_compares_every_primitive_sorted_by_p99() {
    let (_dir, file) = temp_file("ipc.json");
    let mut argv = vec!["ipc", "-D", "0.2", "-q", "--json", file.to_str().unwrap()];
    argv.extend_from_slice(mlock_args());
    let out = run(latscope(120).args(&argv));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let report = read_json(&file);
    let tests = report["tests"].as_array().unwrap();
    assert_eq!(tests.len(), PRIMITIVES.len() * 2, "{stdout}");
    for primitive in PRIMITIVES {
        for mode in ["one-way", "round-trip"] {
            assert!(
                tests
                    .iter()
                    .any(|t| t["test"] == primitive && t["mode"] == mode),
                "{primitive} {mode} missing"
            );
        }
    }
    assert!(stdout.starts_with("Primitive"), "{stdout}");
    // The rows, in order, name tests whose p99 never decreases.
    let p99_of = |test: &str, mode: &str| -> u64 {
        let t = tests
            .iter()
            .find(|t| t["test"] == test && t["mode"] == mode)
            .unwrap_or_else(|| panic!("row {test} {mode} not in the report"));
        u64_of(&t["overall"]["percentiles"][2]["ns"], "p99")
    };
    let p99s: Vec<u64> = stdout
        .lines()
        .skip(1)
        .take(tests.len())
        .map(|row| {
            let f: Vec<&str> = row.split_whitespace().collect();
            p99_of(f[0], f[1])
        })
        .collect();
    assert!(
        p99s.windows(2).all(|w| w[0] <= w[1]),
        "rows not sorted by p99 {p99s:?}\n{stdout}"
    );
}

#[test]
fn ipc_fork_and_cross_cpu_apply_to_all() {
    let mut argv = vec![
        "ipc",
        "-D",
        "0.2",
        "-q",
        "--only",
        "sem,pipe",
        "--mode",
        "roundtrip",
        "--fork",
    ];
    let cross = allowed_cpus().len() >= 2;
    if cross {
        argv.push("--cross-cpu");
    }
    argv.extend_from_slice(mlock_args());
    let (report, stdout) = run_ok_with_stdout(&argv);
    let tests = report["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2);
    for t in tests {
        assert_eq!(t["mode"], "round-trip");
        assert_eq!(t["config"]["detail"]["tasks"], "processes");
        assert_eq!(t["config"]["detail"]["cross_cpu"], cross);
    }
    // The table says where the two tasks of each pair ran: a cross-CPU
    // run (an IPI per wake-up) must not read like a same-CPU one.
    let header: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let column = header.iter().position(|h| *h == "CPUs");
    let column = column.unwrap_or_else(|| panic!("no CPUs column in\n{stdout}"));
    let expected = if cross { "cross" } else { "same" };
    for row in stdout.lines().skip(1).take(2) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.get(column), Some(&expected), "{stdout}");
    }
}

#[test]
fn sigint_during_ipc_reports_the_tests_so_far() {
    let (_dir, file) = temp_file("ipc.json");
    let mut argv = vec!["ipc", "-D", "2", "-q", "--json", file.to_str().unwrap()];
    argv.extend_from_slice(mlock_args());
    let spawned = spawn(&argv);
    let pid = spawned.child.id();
    // Into the second primitive (each gets 2 s).
    std::thread::sleep(Duration::from_millis(2_600));
    spawned.signal(libc::SIGINT);
    let (status, out, err) = spawned.wait(Duration::from_secs(60));
    let all = dump(status, &out, &err);
    assert_eq!(status.code(), Some(0), "{all}");
    let report = read_json(&file);
    let tests = report["tests"].as_array().unwrap();
    assert!(
        (2..PRIMITIVES.len() * 2).contains(&tests.len()),
        "{} tests\n{all}",
        tests.len()
    );
    assert_eq!(tests.last().unwrap()["end_reason"], "interrupted", "{all}");
    assert!(out.starts_with("Primitive"), "{all}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("mq ")).count(),
        2,
        "{all}"
    );
    assert_nothing_left(pid, file.to_str().unwrap());
}

#[test]
fn stray_sigusr1_neither_kills_nor_desynchronizes_a_run() {
    for primitive in ["signal", "mq"] {
        let (_dir, file) = temp_file("report.json");
        let (spawned, child) = start_endless_fork_run(primitive, &file);
        let pid = spawned.child.id();
        for _ in 0..5 {
            // SAFETY: signalling latscope and its peer process, found above.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGUSR1);
                libc::kill(child as libc::pid_t, libc::SIGUSR1);
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        std::thread::sleep(Duration::from_millis(700));
        spawned.signal(libc::SIGINT);
        let (status, out, err) = spawned.wait(Duration::from_secs(60));
        let all = dump(status, &out, &err);
        assert_eq!(status.code(), Some(0), "{primitive}\n{all}");
        let report = read_json(&file);
        let s = &report["tests"][0]["series"][0];
        // Out of step, every sample after the strays (about half of them)
        // would span most of a 1 ms period.
        let p90 = u64_of(&s["percentiles"][1]["ns"], "p90");
        assert!(p90 < 500_000, "{primitive}: p90 {p90} ns\n{all}");
        assert_nothing_left(pid, file.to_str().unwrap());
    }
}

#[test]
fn sigkill_of_latscope_takes_its_peers_and_leaves_only_findable_sysv_objects() {
    let (_dir, file) = temp_file("report.json");
    let (spawned, child) = start_endless_fork_run("svsem", &file);
    let pid = spawned.child.id();
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let (status, out, err) = spawned.wait(Duration::from_secs(60));
    assert_eq!(status.code(), None, "{}", dump(status, &out, &err));
    // The peer dies with latscope (parent-death signal).
    let deadline = Instant::now() + Duration::from_secs(2);
    while Path::new(&format!("/proc/{child}")).exists() {
        let zombie_or_gone = std::fs::read_to_string(format!("/proc/{child}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if zombie_or_gone {
            break;
        }
        assert!(Instant::now() < deadline, "peer {child} outlived latscope");
        std::thread::sleep(Duration::from_millis(20));
    }
    // What a SIGKILL can leave, as docs/cleanup.md says: the System V set, found
    // by the pids of its last operations. Removed here as a user would, with
    // `latscope cleanup` (which finds it in the killed run's registry).
    let left = sysv_objects_used_by(&[pid, child]);
    assert_eq!(
        left.len(),
        1,
        "expected the one semaphore set of the run: {left:?}"
    );
    let id = left[0].rsplit(' ').next().unwrap().to_string();
    let out = run(latscope(10).arg("cleanup"));
    assert_code(&out, 0);
    let listed = stdout_of(&out);
    assert!(
        listed.lines().any(|l| l.starts_with("removed")
            && l.contains(&format!(" {id} "))
            && l.contains(&format!("pid {pid}, ended"))),
        "{listed}"
    );
    assert_eq!(sysv_objects_used_by(&[pid, child]), Vec::<String>::new());
}
