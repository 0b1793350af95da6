//! oslat compatibility: `latscope oslat` (and latscope under the name
//! `oslat`) against outputs captured from Debian's rt-tests 2.40 oslat
//! (tests/golden/oslat/, its README gives the commands). Lines, labels,
//! tabs and order must be oslat's; the measured numbers are masked. The
//! runs are short (-D 1 or 2, plus oslat's one-second pre-heat) and at
//! SCHED_OTHER but one bounded `-f` run.

use crate::common::*;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

/// `latscope oslat ARGS`, which must end within a minute.
fn oslat(args: &[&str]) -> std::process::Output {
    let mut cmd = latscope(60);
    cmd.arg("oslat").args(args);
    run(cmd)
}

/// The measured part of a line masked: after a `:\t` label every number
/// becomes `N` (oslat prints them unpadded: ` %d`, ` %.3f`); the bias
/// line's number too. Labels (`    001 (us)`) and the header block, which
/// the options decide, stay literal but for what the environment decides
/// (crate::common::mask_environment).
fn mask(line: &str) -> String {
    if line.starts_with("Global bias set to ") {
        return mask_numbers(line);
    }
    match line.split_once(":\t ") {
        Some((label, values)) => format!("{label}:\t {}", mask_numbers(values)),
        None => mask_environment(line),
    }
}

fn assert_same_layout(what: &str, ours: &str, theirs: &str) {
    let a: Vec<String> = ours.split('\n').map(mask).collect();
    let b: Vec<String> = theirs.split('\n').map(mask).collect();
    assert_eq!(a, b, "{what}:\n--- ours ---\n{ours}--- oslat ---\n{theirs}");
}

/// Every key of the JSON file, with the thread part's keys under
/// `thread.N` and the histogram's keys (measured buckets) left out.
fn json_keys(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    if let Some(map) = v.as_object() {
        for (k, child) in map {
            let path = format!("{prefix}{k}");
            out.push(path.clone());
            if k != "histogram" {
                json_keys(child, &format!("{path}."), out);
            }
        }
    }
}

fn assert_json_like(path: &Path, golden_name: &str) {
    let ours: serde_json::Value = read_json(path);
    let theirs: serde_json::Value = serde_json::from_str(&golden("oslat", golden_name)).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    json_keys(&ours, "", &mut a);
    json_keys(&theirs, "", &mut b);
    assert_eq!(a, b, "{golden_name}: keys and their order");
    let (t, g) = (&ours["thread"]["0"], &theirs["thread"]["0"]);
    assert_eq!(t["cpu"], g["cpu"]);
    // The histogram's keys are the bucket labels that counted something.
    let labels: Vec<u64> = t["histogram"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    assert!(labels.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
    let buckets = if golden_name.starts_with("q_b8") {
        8
    } else {
        32
    };
    assert!(
        labels.iter().all(|&l| (1..=buckets).contains(&l)),
        "{labels:?}"
    );
}

#[test]
fn two_seconds_on_cpu_1_with_json() {
    let (_dir, file) = temp_file("o.json");
    let out = oslat(&["-c", "1", "-D", "2", "--json", file.to_str().unwrap()]);
    assert_code(&out, 0);
    assert_same_layout("-c 1 -D 2", &stdout_of(&out), &golden("oslat", "c1_D2.txt"));
    assert_json_like(&file, "c1_D2.json");
    // latscope's own warnings may be on stderr, nothing of oslat's.
    assert!(
        stderr_of(&out).lines().all(|l| l.starts_with("warning: ")),
        "{}",
        describe(&out)
    );
}

/// Without `-c`, latscope leaves out the main thread's CPU (0) and its
/// SMT siblings (oslat measures every CPU): on 2 CPUs without SMT it
/// measures CPU 1 alone, one column, and its output is that of
/// `oslat -c 1 -D 2` (the golden capture), the header's `CPU list:` too.
#[test]
fn without_a_cpu_list_the_main_threads_core_is_left_out() {
    let test = "without_a_cpu_list_the_main_threads_core_is_left_out";
    let siblings =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
            .unwrap_or_else(|_| "0".into());
    let allowed = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        })
        .unwrap();
    if allowed != "0-1" || siblings.trim() != "0" {
        latscope::testing::skip(
            test,
            &format!(
                "it expects CPUs 0-1 without SMT (allowed {allowed}, CPU 0's core {})",
                siblings.trim()
            ),
        );
        return;
    }
    let (_dir, file) = temp_file("default.json");
    let out = oslat(&["-D", "2", "--json", file.to_str().unwrap()]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(text.contains("\nCPU list: \t\t1\n"), "{text}");
    assert!(
        matches(r"(?m)^        Core:\t 1$", &text),
        "one column, CPU 1's: {text}"
    );
    assert_same_layout("-D 2 (no -c)", &text, &golden("oslat", "c1_D2.txt"));
    let v = read_json(&file);
    assert_eq!(v["thread"].as_object().map(|t| t.len()), Some(1), "{v}");
    assert_eq!(v["thread"]["0"]["cpu"], 1, "{v}");
}

#[test]
fn quiet_eight_buckets_prints_only_the_version_and_the_block() {
    let (_dir, file) = temp_file("q.json");
    let out = oslat(&[
        "-c",
        "1",
        "-D",
        "1",
        "-q",
        "-b",
        "8",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_code(&out, 0);
    assert_same_layout("-q -b 8", &stdout_of(&out), &golden("oslat", "q_b8.txt"));
    assert_json_like(&file, "q_b8.json");
}

#[test]
fn bias_and_memmove_workload() {
    let out = oslat(&["-c", "1", "-D", "1", "-B", "-w", "memmove", "-m", "4K"]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let theirs = golden("oslat", "c1_B_memmove.txt");
    // The bucket labels start above the bias measured here: mask them to
    // compare the layout, then check them against the bias line.
    let labels = |t: &str| -> Vec<String> {
        t.split('\n')
            .map(|l| {
                let masked = mask(l);
                match masked.strip_prefix("    ").and_then(|r| r.get(3..)) {
                    Some(rest) if rest.starts_with(" (us):\t ") => format!("    NNN{rest}"),
                    _ => masked,
                }
            })
            .collect()
    };
    assert_eq!(labels(&text), labels(&theirs), "{text}");
    let bias: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Global bias set to "))
        .and_then(|l| l.strip_suffix(" (us)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no bias line\n{text}"));
    let first = format!("    {:03} (us):\t ", bias + 1);
    assert!(text.contains(&first), "{first:?} in\n{text}");
    assert!(text.contains("Workload: \t\tmemmove\nWorkload mem: \t\t4 (KiB)\n"));
}

#[test]
fn zero_omit_puts_dots_for_runs_of_empty_buckets() {
    let out = oslat(&["-c", "1", "-D", "1", "-z"]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    // Up to the first bucket row, and from `Minimum` on, oslat's lines.
    let theirs = golden("oslat", "c1_D1_z.txt");
    let head = |t: &str| -> Vec<String> {
        t.lines()
            .take_while(|l| !l.ends_with("(us):\t 1") && !l.starts_with("    0"))
            .map(mask)
            .collect()
    };
    assert_eq!(head(&text), head(&theirs), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Counter Freq"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("Minimum"))
        .collect();
    // Rows are `    NNN (us):\t count` with a count above 0 (but the last,
    // which always shows), or one `    ...` between them.
    let mut last_label = 0;
    for (i, row) in rows.iter().enumerate() {
        if *row == "    ..." {
            assert_ne!(rows.get(i + 1), Some(&"    ..."), "{text}");
            continue;
        }
        let (label, count) = row
            .strip_prefix("    ")
            .and_then(|r| r.split_once(" (us):\t "))
            .unwrap_or_else(|| panic!("row {row:?}\n{text}"));
        let label: u64 = label.parse().unwrap();
        assert!(label > last_label, "{text}");
        last_label = label;
        if i + 1 < rows.len() {
            assert_ne!(count, "0", "{text}");
        }
    }
    assert_eq!(last_label, 32, "{text}");
    assert!(rows.last().unwrap().ends_with(" (including overflows)"));
}

#[test]
fn bad_option_is_getopts_complaint_then_the_usage() {
    let out = oslat(&["-Z"]);
    assert_code(&out, 1);
    assert_eq!(stdout_of(&out), golden("oslat", "bad_opt.out"));
    assert_eq!(stderr_of(&out), golden("oslat", "bad_opt.err"));
    assert_eq!(golden("oslat", "bad_opt.rc"), "rc=1\n");
}

#[test]
fn help_and_version() {
    let out = oslat(&["--help"]);
    assert_code(&out, 0);
    assert_eq!(stdout_of(&out), golden("oslat", "help.out"));
    let out = oslat(&["-v"]);
    assert_code(&out, 0);
    assert_eq!(stdout_of(&out), "oslat V 2.40\n");
}

#[test]
fn refused_values_are_oslats_lines() {
    for (args, line) in [
        (
            &["-b", "4"][..],
            "Illegal bucket size: 4 (should be: 4-1024)\n",
        ),
        (&["-D", "0"][..], "Illegal runtime: 0\n"),
        (
            &["-f", "100"][..],
            "Illegal RT priority: 100 (should be: 1-99)\n",
        ),
        (
            &["-w", "foo"][..],
            "Unknown workload 'foo'.  Please choose from: 'no', 'memmove'\n\n",
        ),
    ] {
        let out = oslat(args);
        assert_code(&out, 1);
        assert_eq!(stdout_of(&out), format!("oslat V 2.40\n{line}"), "{args:?}");
    }
    // A -c list libnuma refuses ends as oslat ends (as cyclictest's -a):
    // libnuma's warning when it gives one, oslat's FATAL line, exit 1.
    let fatal = "FATAL: oslat: numa_parse_cpustring_all failed.\n";
    for (list, stderr) in [
        (
            "4095",
            format!("libnuma: Warning: cpu argument 4095 is out of range\n\n{fatal}"),
        ),
        (
            "abc",
            format!("libnuma: Warning: unparseable cpu description `abc'\n\n{fatal}"),
        ),
        ("0x", fatal.to_string()),
    ] {
        let out = oslat(&["-c", list, "-D", "1"]);
        assert_code(&out, 1);
        assert_eq!(stdout_of(&out), "oslat V 2.40\n", "-c {list}");
        assert_eq!(stderr_of(&out), stderr, "-c {list}");
    }
}

#[test]
fn sigint_mid_run_prints_the_final_block() {
    let mut child = Command::new(bin())
        .args(["oslat", "-c", "1", "-D", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    // The test phase has started once oslat says so.
    while !seen.ends_with("Test starts...\n") {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    assert!(seen.ends_with("Test starts...\n"), "{seen}");
    // Into the test: not a limit, a later signal is as good (and one that
    // comes before the threads spin still gets the block, with zeros).
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    stdout.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(
        seen.contains("Test completed.\n\n        Core:\t 1\n"),
        "{seen}"
    );
    assert!(seen.ends_with(" (sec)\n\n"), "{seen}");
}

/// oslat ARGS, which `-T` must stop (exit 1), with the system tracer put
/// back as found (-T stops it as oslat does): the output, its stderr and
/// the `Trace threshold` line.
fn stopped_by_trace_threshold(args: &[&str]) -> (std::process::Output, String, String) {
    let tracing_on = tracing_on_file();
    let before = tracing_on
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let out = oslat(args);
    if let (Some(path), Some(before)) = (&tracing_on, &before) {
        let _ = std::fs::write(path, before.trim());
    }
    assert_code(&out, 1);
    let err = stderr_of(&out);
    let line = err
        .lines()
        .find(|l| l.contains("Trace threshold"))
        .unwrap_or_else(|| panic!("{}", describe(&out)))
        .to_string();
    (out, err, line)
}

#[test]
fn trace_threshold_stops_the_test_with_oslats_message() {
    // Every gap is at least 1 us in oslat's units: -T 1 fires at once.
    let (out, err, line) = stopped_by_trace_threshold(&["-c", "1", "-D", "30", "-T", "1"]);
    assert!(
        matches(
            r"^oslat: Trace threshold \(1 us\) triggered on cpu 1 with \d+ us!$",
            &line
        ),
        "{line}"
    );
    assert!(
        err.contains(&format!("{line}\nStopping the test.\n")),
        "{err}"
    );
    // First, as oslat opens its trace marker: rt-tests' info line.
    assert!(err.starts_with("INFO: debugfs mountpoint: "), "{err}");
    // oslat quits there: no "Test completed.", no block.
    assert!(
        stdout_of(&out).ends_with("Test starts...\n"),
        "{}",
        describe(&out)
    );
}

#[test]
fn compat_name_is_oslat() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("oslat");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = Command::new(&link)
        .args(["-c", "1", "-D", "1", "-q"])
        .output()
        .unwrap();
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(
        text.starts_with("oslat V 2.40\n        Core:\t 1\n"),
        "{text}"
    );
    // getopt's complaint names the program as typed.
    let out = Command::new(&link).arg("-Z").output().unwrap();
    assert_code(&out, 1);
    assert_eq!(
        stderr_of(&out),
        format!("{}: invalid option -- 'Z'\n", link.display())
    );
    assert_eq!(stdout_of(&out), golden("oslat", "bad_opt.out"));
}

#[test]
fn fifo_priority_run_on_cpu_1() {
    if skip_without_realtime("fifo_priority_run_on_cpu_1") {
        return;
    }
    let throttling_off = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .is_ok_and(|v| v.trim() == "-1");
    let out = oslat(&["-c", "1", "-D", "1", "-f", "1"]);
    if throttling_off {
        // A FIFO spinner would hold CPU 1 alone: refused unless isolated.
        assert!(
            out.status.code() == Some(2) || stdout_of(&out).contains("SCHED_FIFO:1"),
            "{}",
            describe(&out)
        );
        return;
    }
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(text.contains("Thread priority: \tSCHED_FIFO:1\n"), "{text}");
    assert!(text.contains("        Core:\t 1\n"), "{text}");
    assert!(
        !text.contains("WARNING: Running SCHED_FIFO workload on CPU 0"),
        "{text}"
    );
}

/// The bucket rows of oslat's final block: (label, counts, the rest).
fn bucket_rows(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Counter Freq"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("Minimum"))
        .filter(|l| *l != "    ...")
        .map(|l| {
            let (label, rest) = l
                .split_once(" (us):\t ")
                .unwrap_or_else(|| panic!("row {l:?}\n{text}"));
            (label.to_string(), rest.to_string())
        })
        .collect()
}

/// The value of a `Minimum:`/`Maximum:` row of one thread.
fn figure_row<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{name}:\t ")))
        .and_then(|l| l.strip_suffix(" (us)"))
        .unwrap_or_else(|| panic!("no {name} row\n{text}"))
}

#[test]
fn bucket_width_of_500_ns_as_microshifts_ci_runs_it() {
    // MicroShift's line but --rtprio (fifo_priority_run_on_cpu_1 has it)
    // and -D 1800.
    let (_dir, file) = temp_file("w500.json");
    let json = format!("--json={}", file.display());
    let out = oslat(&[
        "-D",
        "1",
        "--cpu-list",
        "1",
        "--cpu-main-thread",
        "0",
        &json,
        "--bucket-width",
        "500",
        "--zero-omit",
    ]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    // The header and the lines before the block are 2.40's.
    let theirs = golden("oslat", "c1_D1_z.txt");
    let head = |t: &str| -> Vec<String> {
        t.lines()
            .take_while(|l| !l.starts_with("        Core"))
            .map(mask)
            .collect()
    };
    assert_eq!(head(&text), head(&theirs), "{text}");
    assert!(
        matches(r"(?m)^Counter Freq:\t \d+ \(MHz\)$", &text),
        "{text}"
    );
    // 64 rows of 0.5 us, labelled in us with 3 decimals, the last 32.000.
    let rows = bucket_rows(&text);
    let mut last = 0.0;
    for (label, _) in &rows {
        assert!(matches(r"^ *\d+\.\d{3}$", label), "{label:?}\n{text}");
        // `%12s` of "N.NNN (us)".
        assert_eq!(label.len() + " (us)".len(), 12, "{label:?}");
        let us: f64 = label.trim().parse().unwrap();
        assert!(us > last && (us * 2.0).fract() == 0.0, "{text}");
        last = us;
    }
    assert_eq!(rows.last().unwrap().0, " 32.000", "{text}");
    // Minimum and maximum in us with ns precision; the JSON's in ns.
    let (min, max) = (figure_row(&text, "Minimum"), figure_row(&text, "Maximum"));
    for v in [min, max] {
        assert!(matches(r"^\d+\.\d{3}$", v), "{v:?}\n{text}");
    }
    let ns = |us: &str| {
        us.replace('.', "")
            .trim_start_matches('0')
            .parse::<u64>()
            .unwrap_or(0)
    };
    let v = read_json(&file);
    let t = &v["thread"]["0"];
    assert_eq!(t["cpu"], 1);
    assert_eq!(u64_of(&t["min"], "min"), ns(min), "{text}");
    assert_eq!(u64_of(&t["max"], "max"), ns(max), "{text}");
    // avg stays in us: between the smallest label and the largest gap.
    let avg = f64_of(&t["avg"], "avg");
    assert!(
        avg >= 0.5 && avg <= max.parse::<f64>().unwrap() + 0.5,
        "{avg}"
    );
    let keys: Vec<&String> = t["histogram"].as_object().unwrap().keys().collect();
    assert!(!keys.is_empty());
    for k in keys {
        assert!(matches(r"^\d+\.\d{3}$", k), "{k}");
    }
}

#[test]
fn bucket_width_of_2000_ns_counts_two_microseconds_a_row() {
    let (_dir, file) = temp_file("w2000.json");
    let out = oslat(&[
        "-c",
        "1",
        "-D",
        "1",
        "-W",
        "2000",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let rows = bucket_rows(&text);
    let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    let expected: Vec<String> = (1..=32).map(|n| format!("    {:03}", 2 * n)).collect();
    assert_eq!(labels, expected, "{text}");
    // Whole us: 2.8 rounds a gap down, so the minimum may be 0.
    for name in ["Minimum", "Maximum", "Max-Min"] {
        assert!(matches(r"^\d+$", figure_row(&text, name)), "{text}");
    }
    let v = read_json(&file);
    let t = &v["thread"]["0"];
    assert_eq!(
        u64_of(&t["max"], "max").to_string(),
        figure_row(&text, "Maximum")
    );
    for k in t["histogram"].as_object().unwrap().keys() {
        let n: u64 = k.parse().unwrap_or_else(|_| panic!("{k}"));
        assert!(n.is_multiple_of(2) && (2..=64).contains(&n), "{k}");
    }
}

#[test]
fn bad_bucket_widths_are_oslats_lines() {
    for bad in ["0", "-500", "abc"] {
        let out = oslat(&["-c", "1", "-W", bad]);
        assert_code(&out, 1);
        assert_eq!(
            stdout_of(&out),
            format!("oslat V 2.40\nIllegal bucket width: {bad}\n")
        );
        assert_eq!(stderr_of(&out), "");
    }
    // No value: getopt's complaint, then the usage (2.40's, as by default).
    let out = oslat(&["-W"]);
    assert_code(&out, 1);
    assert_eq!(
        stderr_of(&out),
        "oslat: option requires an argument -- 'W'\n"
    );
    assert_eq!(stdout_of(&out), golden("oslat", "bad_opt.out"));
}

#[test]
fn trace_threshold_with_a_bucket_width_is_rt_tests_2_8s_message() {
    // A gap of 1 us comes within the first timer tick.
    let (_, err, line) =
        stopped_by_trace_threshold(&["-c", "1", "-D", "30", "-T", "1", "-W", "500"]);
    assert!(
        matches(
            r"^oslat: Trace threshold \(1 us\) triggered on cpu 1 with \d+\.\d{3} us!$",
            &line
        ),
        "{line}"
    );
    assert!(!err.contains("Stopping the test."), "{err}");
}
