//! `latscope timer` through the real binary: the modern and the classic
//! (Xenomai `latency`) output, the JSON report, histograms, gnuplot, several
//! threads, the kernel-side breakdown, the `latency` symlink, Ctrl-C, and bad
//! input. Runs are short (a 1 ms period, 1-2 s after a 1 s warm-up).

use crate::common::*;
use serde_json::Value;
use std::time::Duration;

fn timer(args: &[&str], timeout_s: u64) -> assert_cmd::Command {
    let mut cmd = latscope(timeout_s);
    cmd.arg("timer").args(args).args(mlock_args());
    cmd
}

/// Runs `latscope timer ARGS --json FILE`; returns output and report.
fn timer_json(args: &[&str], code: i32) -> (std::process::Output, Value) {
    let (_dir, file) = temp_file("timer.json");
    run_with_report(timer(args, 60), &file, code)
}

fn timer_series(report: &Value) -> &Vec<Value> {
    let t = &report["tests"][0];
    assert_eq!(t["test"], "timer");
    assert_eq!(t["config"]["detail"]["kind"], "timer");
    series(report)
}

#[test]
fn two_seconds_give_two_whole_loops_and_a_consistent_report() {
    if skip_without_realtime("two_seconds_give_two_whole_loops_and_a_consistent_report") {
        return;
    }
    let (out, report) = timer_json(&args("-T 2 -p 1000 -q"), 0);
    let stdout = stdout_of(&out);
    assert!(stdout.contains("timer latency"), "{}", describe(&out));
    assert!(stdout.contains("CPU "), "{}", describe(&out));
    let t = &report["tests"][0];
    assert_eq!(t["mode"], "user");
    assert_eq!(t["end_reason"], "duration_elapsed");
    let config = &t["config"]["detail"];
    assert_eq!(config["period_us"], 1000);
    assert_eq!(config["wake"], "clock_nanosleep");
    assert_eq!(config["samples_per_loop"], 1000);
    assert_eq!(config["warmup_loops"], 1);
    let s = &timer_series(&report)[0];
    assert_eq!(s["detail"]["kind"], "timer_thread");
    let samples = check_summary(s, "series", true);
    let overruns = u64_of(&s["overruns"], "overruns");
    // 2 s of 1 ms periods after the warm-up: every period is a sample or an overrun.
    assert_eq!(
        samples + overruns,
        2000,
        "{}",
        evidence("json", &s.to_string())
    );
    let d = &s["detail"];
    let loops = u64_of(&d["loops"], "loops");
    assert!((2..=3).contains(&loops), "loops {loops}");
    let cells_total = |h: &Value| -> u64 {
        array_of(&h["counts"], "counts")
            .iter()
            .map(|c| c[1].as_u64().expect("count"))
            .sum()
    };
    assert_eq!(cells_total(&d["histogram_all"]), samples);
    assert_eq!(cells_total(&d["histogram_loop_min"]), loops);
    assert_eq!(cells_total(&d["histogram_loop_max"]), loops);
    assert_eq!(d["histogram_all"]["cells"], 300);
    assert_eq!(d["histogram_all"]["bucket_ns"], 1000);
    let msw = u64_of(&d["msw"], "msw");
    assert_eq!(
        msw,
        u64_of(&d["involuntary_switches"], "ivcsw")
            + u64_of(&d["major_faults"], "majflt")
            + u64_of(&d["minor_faults"], "minflt")
    );
    assert!(d["breakdown"].is_null());
    // The duration in the report is the measured time after the warm-up.
    let duration = f64_of(&report["duration_s"], "duration_s");
    assert!((1.9..2.6).contains(&duration), "duration_s {duration}");
}

/// The RTD/RTS number columns: `%11.3f`.
const US: &str = r"\s*-?\d+\.\d{3}";

#[test]
fn classic_output_is_xenomai_latency_lines() {
    if skip_without_realtime("classic_output_is_xenomai_latency_lines") {
        return;
    }
    let out = run(timer(&args("--format classic -T 2 -p 1000"), 60));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let l = lines(&stdout);
    assert_eq!(l[0], "== Sampling period: 1000 us", "{stdout}");
    assert_eq!(l[1], "== Test mode: periodic user-mode task");
    assert_eq!(l[2], "== All results in microseconds");
    assert_eq!(l[3], "warming up...");
    assert_eq!(
        l[4],
        "RTT|  00:00:01  (periodic user-mode task, 1000 us period, priority 99)"
    );
    assert_eq!(
        l[5],
        "RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst"
    );
    let rtd = format!(r"^RTD\|{US}\|{US}\|{US}\|\s*\d+\|\s*\d+\|{US}\|{US}$");
    let rtd_lines: Vec<&&str> = l.iter().filter(|x| x.starts_with("RTD|")).collect();
    assert_eq!(rtd_lines.len(), 2, "{stdout}");
    for line in &rtd_lines {
        assert!(matches(&rtd, line), "{line}");
        assert_eq!(line.len(), 79, "{line}");
    }
    let n = l.len();
    assert_eq!(
        l[n - 2],
        "---|-----------|-----------|-----------|--------|------|-------------------------"
    );
    let rts = format!(r"^RTS\|{US}\|{US}\|{US}\|\s*\d+\|\s*\d+\|    00:00:02/00:00:02$");
    assert!(matches(&rts, l[n - 1]), "{}", l[n - 1]);
    // Classic mode wakes with a timerfd, as Xenomai's Linux build.
    assert!(!stdout.contains("clock_nanosleep"));
}

/// The HSD rows of one histogram (`min`, `avg` or `max`): (cell, count).
fn hsd_rows(stdout: &str, kind: &str) -> Vec<(u64, u64)> {
    let prefix = format!("HSD|    {kind}|");
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let (range, count) = rest.split_once('|').expect("HSD columns");
            let low = range.split('-').next().unwrap().trim().parse().unwrap();
            (low, count.trim().parse().unwrap())
        })
        .collect()
}

/// The HSS line of one histogram: (samples, average, stddev).
fn hss(stdout: &str, kind: &str) -> (u64, f64, f64) {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("HSS|    {kind}|")))
        .unwrap_or_else(|| panic!("no HSS {kind} in\n{stdout}"));
    let f: Vec<&str> = line.split('|').map(str::trim).collect();
    (
        f[0].parse().unwrap(),
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
    )
}

#[test]
fn histograms_and_statistics_agree_with_the_samples() {
    if skip_without_realtime("histograms_and_statistics_agree_with_the_samples") {
        return;
    }
    let (_dir, file) = temp_file("t.json");
    let mut cmd = timer(
        &args("--format classic -h -s -T 2 -p 1000 -B 2000 -H 40"),
        60,
    );
    cmd.arg("--json").arg(&file);
    let out = run(cmd);
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let report = read_json(&file);
    let s = &series(&report)[0];
    let samples = u64_of(&s["samples"], "samples");
    let loops = u64_of(&s["detail"]["loops"], "loops");
    assert_eq!(
        stdout.matches("---|--param|----range-|--samples").count(),
        3,
        "{stdout}"
    );
    for (kind, expected) in [("min", loops), ("avg", samples), ("max", loops)] {
        let rows = hsd_rows(&stdout, kind);
        assert!(rows.iter().all(|&(cell, _)| cell < 40), "{kind}: {rows:?}");
        assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), expected, "{kind}");
        let (n, avg, _) = hss(&stdout, kind);
        assert_eq!(n, expected, "HSS {kind}");
        let mean = rows.iter().map(|&(c, k)| (c * k) as f64).sum::<f64>() / n as f64;
        assert!(
            (avg - mean).abs() < 0.0015,
            "HSS {kind} average {avg} vs {mean}"
        );
    }
    let order: Vec<usize> = [
        "HSD|    min",
        "HSD|    avg",
        "HSD|    max",
        "HSH|",
        "HSS|    min",
        "RTS|",
    ]
    .iter()
    .map(|k| stdout.find(k).unwrap_or_else(|| panic!("{k} missing")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{stdout}");
}

#[test]
fn gnuplot_dump_to_stdout_parses() {
    if skip_without_realtime("gnuplot_dump_to_stdout_parses") {
        return;
    }
    let (_dir, json) = temp_file("gnuplot.json");
    let mut a = args("-g - -T 1 -p 1000 -q --json");
    a.push(json.to_str().unwrap());
    let out = run(timer(&a, 60));
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    let start = stdout
        .find("# 00:00:01 (periodic user-mode task, 1000 us period, priority 99)")
        .unwrap_or_else(|| panic!("no gnuplot header in\n{stdout}"));
    let dump: Vec<&str> = stdout[start..].lines().collect();
    assert_eq!(
        dump[1],
        "# ----lat min|----lat avg|----lat max|-overrun|---msw|"
    );
    assert!(dump[2].starts_with("# "));
    let rows: Vec<(f64, u64)> = dump[3..]
        .iter()
        .take_while(|l| !l.is_empty() && !l.starts_with("warning"))
        .map(|l| {
            let (x, y) = l.split_once(' ').unwrap_or_else(|| panic!("row {l:?}"));
            (x.parse().expect("x"), y.parse().expect("y"))
        })
        .collect();
    assert!(rows.len() >= 3, "{rows:?}");
    assert_eq!(rows[0].1, 1);
    assert_eq!(rows[rows.len() - 1].1, 1);
    assert!(
        rows.windows(2).all(|w| w[0].0 < w[1].0),
        "x ascending: {rows:?}"
    );
    // Every sample of the run is in the dump: as many as the run took
    // (overruns on a busy machine make fewer than the 1,000 periods).
    let hits: u64 = rows[1..rows.len() - 1].iter().map(|r| r.1 - 1).sum();
    let report = read_json(&json);
    let samples = u64_of(&report["tests"][0]["overall"]["samples"], "samples");
    assert!(samples > 0, "{}", describe(&out));
    assert_eq!(hits, samples, "samples in the dump against the run's");
}

#[test]
fn gnuplot_dump_to_a_file_in_classic_mode() {
    if skip_without_realtime("gnuplot_dump_to_a_file_in_classic_mode") {
        return;
    }
    let (_dir, file) = temp_file("hist.dat");
    let mut cmd = timer(&args("--format classic -q -T 1 -p 1000 -g"), 60);
    cmd.arg(&file);
    let out = run(cmd);
    assert_code(&out, 0);
    let text = std::fs::read_to_string(&file).expect("gnuplot file written");
    assert!(
        text.starts_with("# 00:00:01 (periodic user-mode task"),
        "{text}"
    );
    // -g alone prints the statistics (as the original does), not the HSD rows.
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("HSS|    avg|") && !stdout.contains("HSD|"),
        "{stdout}"
    );
    assert!(stderr_of(&out).contains("running quietly for 1 seconds"));
}

#[test]
fn smp_runs_one_pinned_thread_per_cpu() {
    if skip_without_realtime("smp_runs_one_pinned_thread_per_cpu") {
        return;
    }
    let (out, report) = timer_json(&args("--smp -T 1 -p 1000 -q"), 0);
    let cpus = allowed_cpus();
    let s = timer_series(&report);
    assert_eq!(s.len(), cpus.len(), "{}", describe(&out));
    for (x, cpu) in s.iter().zip(&cpus) {
        assert_eq!(x["detail"]["cpu"], *cpu as u64);
        assert_eq!(x["cpus"], serde_json::json!([cpu]));
        check_summary(x, "series", true);
    }
    let overall = &report["tests"][0]["overall"];
    assert_eq!(
        u64_of(&overall["samples"], "overall"),
        s.iter().map(|x| u64_of(&x["samples"], "s")).sum::<u64>()
    );
    if cpus.len() > 1 {
        assert!(stdout_of(&out).contains("\nall "), "{}", describe(&out));
    }
}

/// latscope's trace instances whose creating process is gone: leaked.
/// (Instances of runs still going, e.g. other tests, are fine.)
fn leaked_instances() -> Vec<String> {
    latscope_instances()
        .into_iter()
        .filter(|name| {
            let pid = name.split('-').nth(1).unwrap_or("");
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
        })
        .collect()
}

fn latscope_instances() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("latscope-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn breakdown_splits_every_wake_up() {
    if skip_without_realtime("breakdown_splits_every_wake_up") || !tracefs_usable("breakdown") {
        return;
    }
    // The tracefs collector (the BPF one has tests/suite/slow/bpf.rs).
    for wake in ["--nanosleep", "--timerfd"] {
        let (out, report) = timer_json(
            &[
                "--breakdown",
                "--collector",
                "tracefs",
                wake,
                "-T",
                "1",
                "-p",
                "1000",
                "-q",
            ],
            0,
        );
        let s = &timer_series(&report)[0];
        let samples = u64_of(&s["samples"], "samples");
        let b = &s["detail"]["breakdown"];
        assert!(b.is_object(), "{wake}: no breakdown: {}", describe(&out));
        let traced = u64_of(&b["traced_wakeups"], "traced");
        assert!(
            traced * 10 >= samples * 9,
            "{wake}: traced {traced} of {samples}"
        );
        let irq = &b["irq"];
        let thread = &b["thread"];
        let user = &b["user"];
        check_summary(irq, "irq", false);
        check_summary(thread, "thread", false);
        assert_eq!(user["samples"], s["samples"], "user is the main figure");
        let p50 = |x: &Value| i64_of(&x["percentiles"][0]["ns"], "p50");
        assert!(i64_of(&irq["min_ns"], "irq min") >= 0, "{irq}");
        assert!(
            p50(irq) <= p50(thread) && p50(thread) <= p50(user),
            "{wake}: {b}"
        );
        assert!(stdout_of(&out).contains("IRQ p50"), "{}", describe(&out));
    }
    assert_eq!(
        leaked_instances(),
        Vec::<String>::new(),
        "trace instances left behind"
    );
}

#[test]
fn test_modes_1_and_2_report_kernel_side_figures() {
    if skip_without_realtime("test_modes_1_and_2_report_kernel_side_figures")
        || !tracefs_usable("breakdown")
    {
        return;
    }
    for (mode, name, figure) in [
        ("1", "in-kernel periodic task", "thread"),
        ("2", "in-kernel timer handler", "irq"),
    ] {
        let (_dir, file) = temp_file("t.json");
        let mut cmd = timer(
            &["--format", "classic", "-t", mode, "-T", "1", "-p", "1000"],
            60,
        );
        cmd.arg("--json").arg(&file);
        let out = run(cmd);
        assert_code(&out, 0);
        let stdout = stdout_of(&out);
        assert!(
            stdout.contains(&format!("== Test mode: {name}")),
            "{stdout}"
        );
        assert!(stdout.contains("RTD|"), "{stdout}");
        let report = read_json(&file);
        let t = &report["tests"][0];
        assert_eq!(t["mode"], figure);
        let s = &t["series"][0];
        let main = u64_of(&s["samples"], "samples");
        let traced = &s["detail"]["breakdown"][figure];
        assert_eq!(
            s["samples"], traced["samples"],
            "the main figure is the {figure} latency"
        );
        assert!(main > 0);
    }
}

#[test]
fn the_latency_symlink_behaves_as_xenomai_latency() {
    if skip_without_realtime("the_latency_symlink_behaves_as_xenomai_latency") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("latency");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(args("-T 1 -p 1000 -l 0"))
        .args(mlock_args())
        .output()
        .unwrap();
    assert_code(&out, 0);
    let stdout = stdout_of(&out);
    assert!(
        stdout.starts_with("== Sampling period: 1000 us\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("RTT|"), "-l 0: no headers: {stdout}");
    assert!(stdout.contains("\nRTS|"), "{stdout}");
    let help = std::process::Command::new(&link)
        .arg("--help")
        .output()
        .unwrap();
    assert_code(&help, 0);
    assert!(stdout_of(&help).contains("-h, --histograms"));
}

/// Under the latscope name `timer -h` is help, as everywhere else in
/// latscope (it was Xenomai's histograms letter and started an endless run);
/// Xenomai's meaning stays with `--format classic` and the `latency` name.
#[test]
fn h_is_help_under_latscope_and_histograms_in_xenomai_terms() {
    for words in ["timer -h", "timer -h -T 1", "timer --format modern -h"] {
        let out = run(latscope(10).args(args(words)));
        assert_code(&out, 0);
        let help = stdout_of(&out);
        assert!(help.starts_with("Periodic timer"), "{words}: {help}");
        assert!(help.contains("-h, --help"), "{words}: {help}");
        assert!(help.contains("    --histograms"), "{words}: {help}");
    }
    let classic = run(latscope(10).args(args("timer --format classic --help")));
    assert_code(&classic, 0);
    assert!(
        stdout_of(&classic).contains("-h, --histograms"),
        "{}",
        describe(&classic)
    );
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("latency");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    // `-h` is not help there: with an unknown option after it the refusal
    // is about that option.
    let mut latency = std::process::Command::new(&link);
    latency.args(["-h", "--no-such-option"]);
    let out = run_std_with_timeout(latency, Duration::from_secs(10));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("--no-such-option"),
        "{}",
        describe(&out)
    );
}

#[test]
fn sigint_mid_run_prints_the_summary_and_writes_json() {
    if skip_without_realtime("sigint_mid_run_prints_the_summary_and_writes_json") {
        return;
    }
    let (_dir, file) = temp_file("t.json");
    let file_arg = file.to_str().unwrap().to_string();
    let mut a = vec![
        "timer", "--format", "classic", "-p", "1000", "--json", &file_arg,
    ];
    a.extend(mlock_args());
    let child = spawn(&a);
    std::thread::sleep(Duration::from_millis(2600));
    child.signal(libc::SIGINT);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("\nRTS|"), "{stdout}");
    let report = read_json(&file);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    assert!(u64_of(&series(&report)[0]["samples"], "samples") > 0);
}

#[test]
fn a_latency_limit_gives_exit_code_3() {
    if skip_without_realtime("a_latency_limit_gives_exit_code_3") {
        return;
    }
    let (_dir, file) = temp_file("t.json");
    let mut cmd = timer(&args("-T 1 -p 1000 -q --max-latency 1"), 60);
    cmd.arg("--json").arg(&file);
    let out = run(cmd);
    let report = read_json(&file);
    let above = u64_of(&series(&report)[0]["above_limit"], "above_limit");
    // A wake-up within 1 us of its expiry is possible only on a fast bare-metal
    // box: then the run passes, and says nothing.
    if above > 0 {
        assert_code(&out, 3);
        assert!(stdout_of(&out).contains("FAIL: latency limit crossed"));
        assert_eq!(report["exit_code"], 3);
    } else {
        assert_code(&out, 0);
    }
}

#[test]
fn quiet_without_a_duration_is_a_warning_not_an_error() {
    if skip_without_realtime("quiet_without_a_duration_is_a_warning_not_an_error") {
        return;
    }
    let mut a = vec!["timer", "-q", "-p", "1000", "--warmup", "0"];
    a.extend(mlock_args());
    let child = spawn(&a);
    std::thread::sleep(Duration::from_millis(1500));
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("latscope: warning: -q requires -T, ignoring -q"),
        "{stderr}"
    );
    assert!(stdout.contains("timer latency"), "{stdout}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for a in [
        "timer -p 0",
        "timer -p -100",
        "timer -p 2000000",
        "timer -p 1",
        "timer -H 0",
        "timer -B 0",
        "timer -t 7",
        "timer -P 0",
        "timer -P 150",
        "timer -c 4000",
        "timer --cpus 0-100000000000",
        "timer -g /nonexistent/dir/file",
        "timer -T forever",
        "timer --bogus",
        "timer --format classic --cpus 0,1",
    ] {
        let out = run(latscope(10).args(args(a)));
        if a.ends_with("--cpus 0,1") && allowed_cpus().len() < 2 {
            continue;
        }
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{a}: {err}");
        assert!(err.starts_with("latscope: error: "), "{a}: {err}");
        assert!(stdout_of(&out).is_empty(), "{a}: nothing measured");
    }
}

/// A SCHED_FIFO 2 thread on `cpu` that wakes every millisecond and spins
/// 200 us, for `seconds`: a sampling thread at priority 1 that is running
/// when it wakes is preempted (an involuntary context switch).
fn bounded_preempter(cpu: usize, seconds: u64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: plain calls on the current thread with valid arguments.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let param = libc::sched_param { sched_priority: 2 };
            libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
        }
        let end = std::time::Instant::now() + Duration::from_secs(seconds);
        while std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
            let spin = std::time::Instant::now();
            while spin.elapsed() < Duration::from_micros(200) {}
        }
    })
}

#[test]
fn break_on_switch_stops_at_the_first_preemption_or_never_sees_one() {
    if skip_without_realtime("break_on_switch_stops_at_the_first_preemption_or_never_sees_one") {
        return;
    }
    let cpu = allowed_cpus()[0];
    let preempter = bounded_preempter(cpu, 4);
    let (out, report) = timer_json(
        &[
            "-b",
            "-P",
            "1",
            "-c",
            &cpu.to_string(),
            "-p",
            "200",
            "-T",
            "3",
            "--warmup",
            "0",
        ],
        0,
    );
    preempter.join().unwrap();
    let t = &report["tests"][0];
    let d = &t["series"][0]["detail"];
    let msw = u64_of(&d["msw"], "msw");
    if t["end_reason"] == "break_on_switch" {
        assert!(msw > 0, "{}", evidence("json", &d.to_string()));
        assert!(
            stderr_of(&out).contains(&format!("-b: the sampling thread on CPU {cpu} had")),
            "{}",
            describe(&out)
        );
        assert!(f64_of(&report["duration_s"], "duration_s") < 2.9);
    } else {
        // -b did not fire: then nothing happened that it watches.
        assert_eq!(t["end_reason"], "duration_elapsed");
        assert_eq!(msw, 0, "{}", evidence("json", &d.to_string()));
    }
}

#[test]
fn freeze_marks_new_maxima_and_stops_tracing() {
    if skip_without_realtime("freeze_marks_new_maxima_and_stops_tracing")
        || !tracefs_usable("breakdown")
    {
        return;
    }
    let on = std::path::Path::new("/sys/kernel/tracing/tracing_on");
    let before = std::fs::read_to_string(on).unwrap_or_default();
    std::fs::write(on, "1").unwrap();
    let out = run(timer(&args("-f -T 1 -p 1000 -q --warmup 0"), 60));
    let stopped = std::fs::read_to_string(on).unwrap_or_default();
    let trace = std::fs::read_to_string("/sys/kernel/tracing/trace").unwrap_or_default();
    // Leave the global tracer as it was.
    let _ = std::fs::write(on, before.trim());
    assert_code(&out, 0);
    assert_eq!(stopped.trim(), "0", "tracing was not stopped");
    assert!(
        trace.contains("latscope: new max latency"),
        "no marker in the trace"
    );
    assert!(stderr_of(&out).contains("-f: tracing stopped"));
}

#[test]
fn sigterm_during_a_breakdown_run_removes_the_trace_instance() {
    if skip_without_realtime("sigterm_during_a_breakdown_run_removes_the_trace_instance")
        || !tracefs_usable("breakdown")
    {
        return;
    }
    let (_dir, file) = temp_file("t.json");
    let file_arg = file.to_str().unwrap().to_string();
    let mut a = vec![
        "timer",
        "--breakdown",
        "--collector",
        "tracefs",
        "-p",
        "500",
        "--json",
        &file_arg,
    ];
    a.extend(mlock_args());
    let child = spawn(&a);
    let pid = child.child.id();
    std::thread::sleep(Duration::from_millis(1800));
    let during: Vec<String> = latscope_instances()
        .into_iter()
        .filter(|n| n.starts_with(&format!("latscope-{pid}-")))
        .collect();
    child.signal(libc::SIGTERM);
    let (status, stdout, stderr) = child.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(during.len(), 1, "the run traces in its own instance");
    assert!(
        !latscope_instances().contains(&during[0]),
        "{} left behind",
        during[0]
    );
    let report = read_json(&file);
    assert_eq!(report["tests"][0]["end_reason"], "interrupted");
    assert!(series(&report)[0]["detail"]["breakdown"].is_object());
}

#[test]
fn json_to_standard_output_is_only_json_in_both_formats() {
    if skip_without_realtime("json_to_standard_output_is_only_json_in_both_formats") {
        return;
    }
    for format in ["modern", "classic"] {
        let out = run(timer(
            &["--format", format, "-T", "1", "-p", "1000", "--json", "-"],
            60,
        ));
        assert_code(&out, 0);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{format}: stdout is not JSON ({e}): {}", describe(&out)));
        check_report_header(&report);
        if format == "classic" {
            // Xenomai's lines moved to stderr.
            assert!(stderr_of(&out).contains("RTD|"), "{}", describe(&out));
        }
    }
}

#[test]
fn kernel_side_figures_without_privileges_are_a_clear_run_time_error() {
    let mut cmd = match nobody_runner() {
        Ok(c) => c,
        Err(why) => {
            latscope::testing::skip(
                "slow::timer::kernel_side_figures_without_privileges_are_a_clear_run_time_error",
                &why.to_string(),
            );
            return;
        }
    };
    cmd.arg(bin())
        .args(args("timer -t 1 -T 1 --no-mlockall --policy other"));
    let out = run_std_with_timeout(cmd, Duration::from_secs(30));
    assert_code(&out, 1);
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("-t 1 needs kernel tracing") && err.contains("root"),
        "{err}"
    );
}

/// `--histograms` (Xenomai's `-h`) in the modern format: the histograms, as a
/// table per thread whose Samples column adds up to the thread's samples.
#[test]
fn histograms_in_the_modern_format_are_printed_as_tables() {
    let (out, report) = timer_json(&["--histograms", "-T", "1", "-q"], 0);
    let stdout = stdout_of(&out);
    let samples = u64_of(&timer_series(&report)[0]["samples"], "samples");
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Histograms of CPU"));
    assert!(lines.next().is_some(), "no histograms:\n{}", describe(&out));
    let header = lines.next().unwrap_or_default();
    assert!(
        header.starts_with("From") && header.contains("Loop maxima"),
        "{header}"
    );
    let counted: u64 = lines
        .take_while(|l| !l.starts_with("warning:") && !l.starts_with("context:"))
        .map(|l| {
            // From, To (each a number and a unit, or "beyond"), then Samples.
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = if words[2] == "beyond" { 3 } else { 4 };
            words[at].parse::<u64>().unwrap_or_else(|_| panic!("{l}"))
        })
        .sum();
    assert_eq!(counted, samples, "{}", describe(&out));
}
