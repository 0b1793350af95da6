//! `latscope hwlat` through the real binary: the JSON report per CPU, the
//! machine staying responsive while every CPU is sampled at the default
//! duty cycle, and a stop by SIGINT or SIGTERM that still reports (and by
//! kill -9 that leaves no process behind, and no trace instance after
//! `latscope cleanup`), in each tier.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::common::turns::realtime_turn()
}

#[test]
fn the_json_report_has_each_cpus_gaps_by_class() {
    if skip_without_realtime("the_json_report_has_each_cpus_gaps_by_class") {
        return;
    }
    let _turn = serial();
    let (_dir, file) = temp_file("hwlat.json");
    let mut cmd = latscope(60);
    cmd.args([
        "hwlat",
        "-D",
        "1",
        "--cpu",
        "0",
        "--width",
        "100ms",
        "--window",
        "200ms",
        "--tier",
        "unprivileged",
        "-q",
        "--json",
    ])
    .arg(&file);
    let out = run(cmd);
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("tier: unprivileged"),
        "{}",
        describe(&out)
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let t = &report["tests"][0];
    assert_eq!(t["test"], "hwlat");
    assert_eq!(t["config"]["detail"]["kind"], "hwlat");
    assert_eq!(t["config"]["detail"]["width_ns"], 100_000_000);
    let s = &t["series"][0];
    let d = &s["detail"];
    assert_eq!(d["kind"], "hwlat_cpu");
    assert_eq!(d["cpu"], 0);
    // 1 s of 200 ms windows: about 5 (never 0, never more than 6).
    let windows = d["windows"].as_u64().unwrap();
    assert!((3..=6).contains(&windows), "{windows} windows");
    // Each window spins 100 ms; the sub-windows cover most of it.
    let spun = d["spun_ns"].as_u64().unwrap();
    let classified = d["classified_ns"].as_u64().unwrap();
    assert!(spun >= windows * 90_000_000 && classified <= spun, "{d}");
    assert!(classified * 4 > spun, "classified {classified} of {spun}");
    // The series' samples are the hardware gaps.
    assert_eq!(s["samples"], d["hardware_gaps"]);
    let sampled: u64 = d["samples"]
        .as_array()
        .map_or(0, |a| a.iter().map(|x| x["count"].as_u64().unwrap()).sum());
    assert_eq!(sampled, d["hardware_gaps"].as_u64().unwrap());
}

/// Every CPU sampled at hwlatdetect's duty cycle (500 ms of every 1 s): a
/// thread of this test still wakes up in time, since the CPUs' widths are
/// staggered and a CPU is always free of samplers. The probe is SCHED_FIFO 94,
/// just below the samplers (95, `hwlat -p`'s default): what it measures is
/// the samplers leaving a CPU free, not the rest of the machine's load.
/// Beside `stress-ng --cpu 2` a normal probe waited 138 ms for its share of
/// a CPU that no sampler held; at FIFO 1 it waited 144 and 165 ms while
/// another test's message-queue pairs ran back to back at FIFO 80.
#[test]
fn the_machine_stays_responsive_while_every_cpu_is_sampled() {
    if skip_without_realtime("the_machine_stays_responsive_while_every_cpu_is_sampled") {
        return;
    }
    let _turn = serial();
    let mut child = std::process::Command::new(bin())
        .args(["hwlat", "-D", "3", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A thread of its own: a libtest worker keeps the policy it is given.
    let worst = std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 94 };
        // SAFETY: this thread's own handle and a valid parameter.
        let rc =
            unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
        assert_eq!(rc, 0, "SCHED_FIFO 94 for the probe");
        let started = Instant::now();
        let mut worst = Duration::ZERO;
        while started.elapsed() < Duration::from_millis(2800) {
            let before = Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            worst = worst.max(before.elapsed().saturating_sub(Duration::from_millis(1)));
        }
        worst
    })
    .join()
    .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(worst < Duration::from_millis(100), "woke up {worst:?} late");
}

/// A stop by SIGINT or SIGTERM still reports, and kill -9 leaves no
/// process behind, in each tier. The tracefs tier's private instance and
/// the /dev/cpu_dma_latency request live as long as the run: SIGINT and
/// SIGTERM remove the instance; after kill -9 the kernel keeps it, and
/// `latscope cleanup` (the registry's entry) removes it.
#[test]
fn a_stop_signal_still_reports_and_kill_leaves_nothing() {
    let test = "slow::hwlat::a_stop_signal_still_reports_and_kill_leaves_nothing";
    if skip_without_realtime(test) {
        return;
    }
    let _turn = serial();
    let registry = tempfile::tempdir().unwrap();
    for tier in ["tracefs", "unprivileged"] {
        let traced = tier == "tracefs";
        if traced && !(euid_is_root() && Path::new("/sys/kernel/tracing/instances").is_dir()) {
            latscope::testing::skip_part(test, tier, "needs root and tracefs");
            continue;
        }
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
            stop_and_check(tier, signal, registry.path());
        }
    }
}

/// Runs `hwlat --tier TIER` on CPU 0, stops it with `signal` and checks
/// what it left.
fn stop_and_check(tier: &str, signal: libc::c_int, registry: &Path) {
    let child = std::process::Command::new(bin())
        .args(["hwlat", "--tier", tier, "--cpu", "0", "-q"])
        .env("LATSCOPE_RUNTIME_DIR", registry)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(1500));
    let during = instances_of(pid);
    let held = holds_dma_latency(pid);
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(pid as i32, signal) };
    let stopped = Instant::now();
    let out = child.wait_with_output().unwrap();
    let what = format!("{tier}, signal {signal}: {}", describe(&out));
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "slow stop: {what}"
    );
    assert_eq!(during.len(), usize::from(tier == "tracefs"), "{what}");
    assert!(
        held || !Path::new("/dev/cpu_dma_latency").exists(),
        "{what}"
    );
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{what}");
    if signal == libc::SIGKILL {
        assert_eq!(instances_of(pid), during, "the kernel keeps it: {what}");
        let cleanup = std::process::Command::new(bin())
            .arg("cleanup")
            .env("LATSCOPE_RUNTIME_DIR", registry)
            .output()
            .unwrap();
        assert_code(&cleanup, 0);
        assert_eq!(
            instances_of(pid),
            Vec::<String>::new(),
            "{}",
            describe(&cleanup)
        );
        return;
    }
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(stdout.contains("ended: interrupted"), "{what}");
    assert!(stdout.contains(&format!("tier: {tier}")), "{what}");
    assert_eq!(instances_of(pid), Vec::<String>::new(), "{what}");
}

/// latscope's trace instances of process `pid`.
fn instances_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("latscope-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` holds /dev/cpu_dma_latency open.
fn holds_dma_latency(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
        d.filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .any(|l| l == Path::new("/dev/cpu_dma_latency"))
    })
}

/// `latscope report` of a real run draws its gaps over time: the run's
/// windows of each class add up to its gap counts, and the plot (inline and
/// with `--svg`) has a series for each class the run had, on the CPU
/// measured, or says there was nothing to plot.
#[test]
fn the_report_of_a_run_plots_its_gaps_over_time() {
    let test = "slow::hwlat::the_report_of_a_run_plots_its_gaps_over_time";
    if skip_without_realtime(test) {
        return;
    }
    let _turn = serial();
    let cpu = *allowed_cpus().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (json, html, svg) = (
        dir.path().join("hw.json"),
        dir.path().join("out.html"),
        dir.path().join("plots"),
    );
    let mut cmd = latscope(60);
    // 2 us: the tick and other interrupts make OS gaps on most machines.
    cmd.args(["hwlat", "--cpu", &cpu.to_string(), "-D", "2"])
        .args(["--threshold", "2us", "-q", "--json"])
        .arg(&json);
    assert_code(&run(cmd), 0);
    let mut cmd = latscope(60);
    cmd.arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .arg("--svg")
        .arg(&svg);
    assert_code(&run(cmd), 0);

    let report = read_json(&json);
    let t = &report["tests"][0];
    let s = &t["series"][0];
    let d = &s["detail"];
    let windows = |v: &Value| -> Vec<(u64, u64)> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|w| {
                (
                    u64_of(&w["second"], "second"),
                    u64_of(&w["samples"], "samples"),
                )
            })
            .collect()
    };
    let (hw, os) = (windows(&s["per_second"]), windows(&d["os_per_second"]));
    let count = |w: &[(u64, u64)]| w.iter().map(|x| x.1).sum::<u64>();
    assert_eq!(
        count(&hw),
        u64_of(&d["hardware_gaps"], "hardware_gaps"),
        "{d}"
    );
    assert_eq!(count(&os), u64_of(&d["os_gaps"], "os_gaps"), "{d}");
    // Seconds since the start of a 2 s run.
    assert!(hw.iter().chain(&os).all(|w| w.0 <= 2), "{hw:?} {os:?}");

    let page = std::fs::read_to_string(&html).unwrap();
    let name = if t["config"]["detail"]["hypervisor"].is_string() {
        "hypervisor"
    } else {
        "hardware"
    };
    let file = svg.join("1-hwlat-gaps-over-time.svg");
    if hw.is_empty() && os.is_empty() {
        assert!(page.contains("No samples to plot (over time)"), "{page}");
        assert!(!file.exists());
        return;
    }
    let plot = std::fs::read_to_string(&file).unwrap();
    assert!(
        page.contains(plot.lines().nth(1).unwrap()),
        "the plot is inline"
    );
    for (label, windows) in [(name, &hw), ("OS", &os)] {
        let legend = format!("CPU {cpu} {label} gaps");
        assert_eq!(
            plot.contains(&legend),
            !windows.is_empty(),
            "{legend}: {plot}"
        );
    }
    // A filled circle per second with hardware gaps, and its legend's.
    let circles = if hw.is_empty() { 0 } else { hw.len() + 1 };
    assert_eq!(plot.matches("<circle").count(), circles, "{plot}");
    assert!(
        page.contains(&format!("{name} time per window over time")),
        "{page}"
    );
}

/// `tier:` (and the JSON's `tier`) names the tier that ran: with 12 file
/// descriptors the bpf tier passes its check (a map and a program at once)
/// but cannot load its programs, and `--tier auto` runs the next one.
#[test]
fn the_tier_line_names_the_tier_that_started() {
    const TEST: &str = "slow::hwlat::the_tier_line_names_the_tier_that_started";
    if skip_without_realtime(TEST) {
        return;
    }
    if !euid_is_root() {
        return latscope::testing::skip(TEST, "needs root: the bpf tier must pass its check");
    }
    let _turn = serial();
    let (_dir, file) = temp_file("hwlat.json");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 12 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args([
            "hwlat", "-D", "1", "--cpu", "0", "--width", "50ms", "--window", "100ms",
        ])
        .arg("--json")
        .arg(&file)
        .output()
        .unwrap();
    assert_code(&out, 0);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let config = &report["tests"][0]["config"]["detail"];
    let fallback = config["tier_fallback"].as_str().unwrap_or_default();
    if !fallback.contains("Too many open files") {
        return latscope::testing::skip(
            TEST,
            &format!("the bpf tier did not pass its check here: {config}"),
        );
    }
    let tier = config["tier"].as_str().unwrap();
    assert!(!tier.starts_with("bpf"), "{config}");
    assert!(fallback.starts_with("bpf: "), "{config}");
    assert!(
        stdout_of(&out).contains(&format!("tier: {tier} ({fallback})")),
        "{}",
        describe(&out)
    );
}
