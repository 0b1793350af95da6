//! The pod faces' real runs (1 to 2 s each), checked as their consumers
//! read them: OpenShift's latency test reads the runner's klog file with
//! `Maximum:\t*([\s\d]*)\(us\)` (oslat) and `# Max Latencies:\t*\s*(.*)\s*\t*`
//! (cyclictest) and gates on the exit status (hwlatdetect: its hardlimit);
//! MicroShift waits for `Test completed.` and `test finished` in the pod's
//! log. The container entrypoints print cmd.sh's lines first.

use crate::common::*;
use crate::pod_faces::{klog_masked, linked, on_cpus, two_cores};
use std::time::Duration;

fn output_of(mut cmd: std::process::Command) -> std::process::Output {
    let child = spawn_std(&mut cmd);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(120));
    std::process::Output {
        status,
        stdout: stdout.into_bytes(),
        stderr: stderr.into_bytes(),
    }
}

/// Two CPUs to run on, or a counted skip (one CPU, SMT siblings, no
/// real-time priority).
fn cpus_for(test: &str) -> Option<[usize; 2]> {
    if skip_without_realtime(test) {
        return None;
    }
    let cpus = two_cores();
    if cpus.is_none() {
        latscope::testing::skip(test, "needs two CPUs that are not SMT siblings");
    }
    cpus
}

/// The numbers of the first match of `pattern`'s group 1 in `text`.
fn numbers_after(pattern: &str, text: &str) -> Vec<u64> {
    let re = regex::Regex::new(pattern).unwrap();
    let caps = re
        .captures(text)
        .unwrap_or_else(|| panic!("no {pattern} in\n{text}"));
    caps[1]
        .split_whitespace()
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("{n:?} in {:?}", &caps[1]))
        })
        .collect()
}

#[test]
fn oslat_runner_logs_what_the_latency_test_reads() {
    const TEST: &str = "slow::pod_runs::oslat_runner_logs_what_the_latency_test_reads";
    let Some([a, b]) = cpus_for(TEST) else { return };
    let (dir, link) = linked("oslat-runner");
    let log = dir.path().join("20261129120000.log");
    let out = output_of(on_cpus(
        &link,
        &[
            "-logtostderr=false",
            "-alsologtostderr=true",
            &format!("-log_file={}", log.display()),
            "-runtime=2",
        ],
        &[a, b],
    ));
    assert_code(&out, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let masked: Vec<String> = text.lines().filter_map(klog_masked).collect();
    assert_eq!(
        masked[0],
        format!("I main.go:35] oslat main thread cpu: {a}"),
        "{text}"
    );
    assert_eq!(
        masked[1],
        format!("I main.go:41] oslat main thread's cpu siblings: [{a}]")
    );
    assert!(masked[2].starts_with("I node.go:39] Environment information: /proc/cmdline: "));
    assert!(masked[3].starts_with("I node.go:46] Environment information: kernel version "));
    assert_eq!(
        masked[4],
        format!(
            "I main.go:73] running oslat command with arguments [--duration 2 --rtprio 1 --cpu-list {b} --cpu-main-thread {a}]"
        )
    );
    assert_eq!(
        masked[5],
        "I main.go:76] succeeded to run the oslat command: oslat V 2.40"
    );
    assert!(text.contains("Test completed.\n"), "{text}");
    // The latency test's regex, one maximum per measured CPU.
    assert_eq!(
        numbers_after(r"Maximum:\t*([\s\d]*)\(us\)", &text).len(),
        1,
        "{text}"
    );
    // -alsologtostderr: the same lines on standard error, no header.
    let stderr = stderr_of(&out);
    let body: String = text.lines().skip(4).map(|l| format!("{l}\n")).collect();
    assert_eq!(stderr, body);
    assert!(stdout_of(&out).is_empty());
}

#[test]
fn cyclictest_runner_logs_max_latencies() {
    const TEST: &str = "slow::pod_runs::cyclictest_runner_logs_max_latencies";
    let Some([a, b]) = cpus_for(TEST) else { return };
    let (_dir, link) = linked("cyclictest-runner");
    // klog's default: standard error only.
    let out = output_of(on_cpus(
        &link,
        &["-duration=2", "-rt-priority=1", "-interval=500"],
        &[a, b],
    ));
    assert_code(&out, 0);
    let stderr = stderr_of(&out);
    let masked: Vec<String> = stderr.lines().filter_map(klog_masked).collect();
    assert!(
        masked.contains(&format!(
            "I main.go:77] running cyclictest command with arguments [--duration 2 --priority 1 --threads 1 --affinity {b} --histogram 30 --interval 500 --mlockall --mainaffinity {a} --quiet]"
        )),
        "{stderr}"
    );
    assert!(
        masked
            .last()
            .unwrap()
            .starts_with("I main.go:80] succeeded to run the cyclictest command: ")
    );
    assert_eq!(
        numbers_after(r"# Max Latencies:\t*\s*(.*)\s*\t*", &stderr).len(),
        1,
        "{stderr}"
    );
    assert!(stdout_of(&out).is_empty());
}

#[test]
fn hwlatdetect_runner_fails_above_its_hardlimit() {
    const TEST: &str = "slow::pod_runs::hwlatdetect_runner_fails_above_its_hardlimit";
    if skip_without_realtime(TEST) {
        return;
    }
    let (_dir, link) = linked("hwlatdetect-runner");
    let args = [
        "-duration=2s",
        "-window=200ms",
        "-width=100ms",
        "-threshold=1",
    ];
    // A limit of 1 us: every gap a user-space sampler meets (a timer tick
    // takes more) is above it.
    let mut low = std::process::Command::new(&link);
    low.args(args).arg("-hardlimit=1");
    let out = output_of(low);
    let stderr = stderr_of(&out);
    if out.status.code() == Some(0) && stderr.contains("Max Latency: Below threshold") {
        latscope::testing::skip_part(TEST, "hardlimit 1 us", "no gap above 1 us in 2 s here");
    } else {
        assert_code(&out, 255);
        let last = stderr.lines().filter_map(klog_masked).next_back().unwrap();
        assert!(
            last.starts_with("F main.go:53] failed to run hwlatdetect command; out: "),
            "{stderr}"
        );
        assert!(stderr.contains("test finished\n"), "{stderr}");
        assert!(
            stderr.trim_end().ends_with("; err: exit status 1"),
            "{stderr}"
        );
    }
    // A limit of 1 s: it passes.
    let mut high = std::process::Command::new(&link);
    high.args(args).arg("-hardlimit=1000000");
    let out = output_of(high);
    assert_code(&out, 0);
    let stderr = stderr_of(&out);
    assert!(stderr.contains("running hwlatdetect command with arguments [--threshold 1 --hardlimit 1000000 --duration 2s --window 200000us --width 100000us]"), "{stderr}");
    assert!(
        stderr.contains(
            "] succeeded to run the hwlatdetect command: hwlatdetect:  test duration 2 seconds"
        ),
        "{stderr}"
    );
}

/// `latscope container TOOL` on CPUs `cpus` with the variables `vars`.
fn container(tool: &str, cpus: [usize; 2], vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = on_cpus(&bin(), &["container", tool], &cpus);
    cmd.env("PAUSE", "n");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    output_of(cmd)
}

#[test]
fn container_oslat_prints_cmd_shs_lines_then_oslats() {
    const TEST: &str = "slow::pod_runs::container_oslat_prints_cmd_shs_lines_then_oslats";
    let Some([a, b]) = cpus_for(TEST) else { return };
    let out = container("oslat", [a, b], &[("RUNTIME_SECONDS", "1")]);
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("allowed cpu list: {}", latscope::units::cpu_list(&[a, b]))
    );
    assert_eq!(
        lines[1],
        format!(
            "cpus: left out CPU {a} (housekeeping: CPU {a} is the first usable one, where the main thread runs)"
        )
    );
    assert_eq!(lines[2], format!("new cpu list: {b}"));
    assert_eq!(
        lines[3],
        format!("cmd to run: oslat -D 1 --rtprio 1 --cpu-list {b} --cpu-main-thread {a}")
    );
    assert_eq!(lines[4], "oslat V 2.40");
    assert!(lines.contains(&"Test completed."), "{stdout}");
    assert_eq!(
        numbers_after(r"Maximum:\t*([\s\d]*)\(us\)", &stdout).len(),
        1
    );
}

#[test]
fn container_cyclictest_runs_cmd_shs_command() {
    const TEST: &str = "slow::pod_runs::container_cyclictest_runs_cmd_shs_command";
    let Some([a, b]) = cpus_for(TEST) else { return };
    let out = container(
        "cyclictest",
        [a, b],
        &[("DURATION", "1"), ("INTERVAL", "500")],
    );
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(stdout.contains(&format!(
        "\nrunning cmd: cyclictest -q -D 1 -p 1 -t 1 -a {b} -h 30 -i 500 --mainaffinity {a} -m\n"
    )), "{stdout}");
    assert_eq!(
        numbers_after(r"# Max Latencies:\t*\s*(.*)\s*\t*", &stdout).len(),
        1
    );
}

#[test]
fn container_hwlatdetect_exit_is_the_tools() {
    const TEST: &str = "slow::pod_runs::container_hwlatdetect_exit_is_the_tools";
    let Some(cpus) = cpus_for(TEST) else { return };
    let vars = [
        ("RUNTIME_SECONDS", "2"),
        ("THRESHOLD", "1"),
        ("EXTRA_ARGS", "--window 200ms --width 100ms --hardlimit 1"),
    ];
    let out = container("hwlatdetect", cpus, &vars);
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("\ncmd to run: hwlatdetect --duration 2 --threshold=1 --cpu-list "),
        "{stdout}"
    );
    assert!(stdout.contains("\ntest finished\n"), "{stdout}");
    if stdout.contains("Max Latency: Below threshold") {
        latscope::testing::skip_part(TEST, "exit 1", "no gap above 1 us in 2 s here");
        assert_code(&out, 0);
    } else {
        assert_code(&out, 1);
    }
}

#[test]
fn container_pause_ends_on_sigterm_with_the_tools_status() {
    const TEST: &str = "slow::pod_runs::container_pause_ends_on_sigterm_with_the_tools_status";
    let Some(cpus) = cpus_for(TEST) else { return };
    let mut cmd = on_cpus(&bin(), &["container", "oslat"], &cpus);
    cmd.env("RUNTIME_SECONDS", "1");
    let mut child = spawn_std(&mut cmd);
    // The run takes about 2 s (1 s of preheat); then its tool has ended
    // and it pauses.
    let pid = child.child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut tool_seen = false;
    loop {
        assert!(
            child.child.try_wait().unwrap().is_none(),
            "ended instead of pausing"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no pause within a minute"
        );
        let running = !children(pid).is_empty();
        tool_seen |= running;
        if tool_seen && !running {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.child.try_wait().unwrap().is_none(),
        "ended instead of pausing"
    );
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    assert!(stdout.contains("Test completed.\n"), "{stdout}");
    assert!(
        stderr.contains("pausing for the log to be read"),
        "{stderr}"
    );
}

#[test]
fn container_sigterm_during_the_run_reaches_the_tool_and_leaves_nothing() {
    const TEST: &str =
        "slow::pod_runs::container_sigterm_during_the_run_reaches_the_tool_and_leaves_nothing";
    let Some(cpus) = cpus_for(TEST) else { return };
    let mut cmd = on_cpus(&bin(), &["container", "cyclictest"], &cpus);
    // PAUSE stays y: a stopped run must not pause.
    cmd.env("DURATION", "600");
    let mut child = spawn_std(&mut cmd);
    let pid = child.child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let tool = loop {
        assert!(child.child.try_wait().unwrap().is_none(), "ended early");
        assert!(
            std::time::Instant::now() < deadline,
            "no tool within a minute"
        );
        if let Some(tool) = children(pid).first().copied() {
            break tool;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Once cyclictest collects its signals, it measures a moment.
    while !signal_blocked(tool, libc::SIGTERM) {
        assert!(
            std::time::Instant::now() < deadline,
            "the tool never blocked SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
    let all = dump(status, &stdout, &stderr);
    assert_eq!(status.code(), Some(0), "{all}");
    assert_eq!(
        numbers_after(r"# Max Latencies:\t*\s*(.*)\s*\t*", &stdout).len(),
        1,
        "{all}"
    );
    assert!(!stderr.contains("pausing"), "{all}");
    // The tool was reaped: no process of that pid is left.
    assert!(
        !std::path::Path::new(&format!("/proc/{tool}")).exists(),
        "the tool {tool} outlived the entrypoint\n{all}"
    );
}

/// The children of process `pid` (of any of its threads).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[test]
fn container_timerlat_runs_latscope_timer_on_the_measured_cpus() {
    const TEST: &str =
        "slow::pod_runs::container_timerlat_runs_latscope_timer_on_the_measured_cpus";
    let Some([a, b]) = cpus_for(TEST) else { return };
    let out = container("timerlat", [a, b], &[("DURATION", "2"), ("PRIO", "90")]);
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains(&format!(
            "\nnew cpu list: {b}\nRUNNING COMMAND: latscope timer --cpus {b} -p 1000 -D 2 -P 90\n"
        )),
        "{stdout}"
    );
    // One sampling thread, on the measured CPU, at the priority asked.
    let row = stdout
        .lines()
        .find(|l| l.starts_with(&format!("CPU {b} ")))
        .unwrap_or_else(|| panic!("no row for CPU {b}\n{stdout}"));
    assert!(row.contains("fifo 90") && row.contains("1.00 ms"), "{row}");
}
