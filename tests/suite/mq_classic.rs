//! pmqtest compatibility: `--format classic` lines byte for byte, rt-tests'
//! JSON layout, and the behaviour when invoked through a `pmqtest` symlink.

use crate::common::*;

/// The first line of pmqtest pair `pair` with the given fields as regexes.
fn header_regex(
    pair: usize,
    prio: &str,
    cpu: &str,
    interval: &str,
    to: &str,
    cycles: &str,
) -> String {
    format!(
        r"^#{r}: ID\d+, P{prio}, CPU{cpu}, I{interval}; #{s}: ID\d+, P{prio}, CPU{cpu}, TO {to}, Cycles {cycles}$",
        r = 2 * pair,
        s = 2 * pair + 1
    )
}

/// Checks the whole classic output for `pairs` pairs: the header lines of all
/// pairs, then their stat lines (pmqtest's order), nothing else; returns the
/// stat numbers per pair.
fn check_classic(stdout: &str, headers: &[String]) -> Vec<[u64; 4]> {
    let got = lines(stdout);
    let pairs = headers.len();
    assert_eq!(
        got.len(),
        2 * pairs,
        "expected exactly 2 lines per pair ({pairs} pairs):\n{stdout}"
    );
    for (i, re) in headers.iter().enumerate() {
        assert!(
            matches(re, got[i]),
            "line {} {:?} does not match {re}",
            i + 1,
            got[i]
        );
    }
    let mut numbers = Vec::new();
    for i in 0..pairs {
        let line = got[pairs + i];
        let re = classic_stat_regex(i);
        assert!(matches(&re, line), "stat line {line:?} does not match {re}");
        let [min, cur, avg, max] = classic_stat_numbers(line);
        assert!(
            min <= avg && avg <= max && min <= cur && cur <= max && max > 0,
            "implausible stat line {line:?}"
        );
        numbers.push([min, cur, avg, max]);
    }
    // Receiver and sender thread IDs are distinct threads.
    for line in &got[..pairs] {
        let ids: Vec<&str> = line
            .split(", ")
            .filter_map(|f| f.split("ID").nth(1))
            .collect();
        assert_eq!(ids.len(), 2, "{line}");
        assert_ne!(ids[0], ids[1], "receiver and sender share an ID: {line}");
    }
    numbers
}

/// `latscope mq --format classic -q ARGS` (given as one line, see `args`),
/// which must exit 0 and print the classic output with these `headers`
/// (see `check_classic`).
fn run_classic(line: &str, timeout_s: u64, headers: &[String]) -> std::process::Output {
    let mut argv = args("--format classic -q");
    argv.extend(args(line));
    let out = run_mq(&argv, timeout_s, 0);
    check_classic(&stdout_of(&out), headers);
    out
}

#[test]
fn classic_lines_for_one_pair() {
    if skip_without_realtime("classic_lines_for_one_pair") {
        return;
    }
    let headers = [header_regex(0, "80", r"\d+", "100", "0", "100")];
    run_classic("-l 100 -i 100 -p 80", 30, &headers);
}

#[test]
fn classic_lines_for_two_pairs_step_priority_and_interval() {
    if skip_without_realtime("classic_lines_for_two_pairs_step_priority_and_interval") {
        return;
    }
    let headers = [
        header_regex(0, "80", r"\d+", "100", "0", "100"),
        header_regex(1, "79", r"\d+", "600", "0", "100"),
    ];
    run_classic("-l 100 -i 100 -p 80 -t 2", 30, &headers);
}

#[test]
fn classic_smp_mode_one_pinned_pair_per_cpu_same_priority() {
    if skip_without_realtime("classic_smp_mode_one_pinned_pair_per_cpu_same_priority") {
        return;
    }
    let cpus = allowed_cpus();
    let headers: Vec<String> = cpus
        .iter()
        .enumerate()
        .map(|(i, cpu)| header_regex(i, "90", &cpu.to_string(), r"\d+", "0", "100"))
        .collect();
    run_classic("-l 100 -i 100 -S -p 90", 30, &headers);
}

#[test]
fn classic_json_has_the_rt_tests_layout() {
    let realtime = can_use_realtime();
    let prio = if realtime { "80" } else { "0" };
    if !realtime {
        eprintln!("note: no real-time priority here; checking the layout at priority 0");
    }
    let mut argv = args("--format classic -q -l 100 -i 100");
    if realtime {
        argv.extend(["-p", "80"]);
    }
    let job = mq_json(&argv, 30);
    let (out, file) = (&job.out, &job.file);
    assert_code(out, 0);
    let stats = check_classic(
        &stdout_of(out),
        &[header_regex(0, prio, r"\d+", "100", "0", "100")],
    );

    let text = std::fs::read_to_string(file).expect("JSON written");
    let keys = "file_version cmdline: rt_test_version: start_time end_time return_code sysinfo num_threads thread";
    assert_eq!(
        top_level_keys(&text),
        args(keys),
        "top-level keys (in order) of rt-tests' JSON:\n{text}"
    );
    let v = read_json(file);
    assert_eq!(v["file_version"], 1);
    assert!(
        v["cmdline:"].as_str().is_some_and(|c| c.contains("mq")),
        "cmdline: {}",
        v["cmdline:"]
    );
    assert!(v["rt_test_version:"].is_string());
    let rfc2822 = r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$";
    for key in ["start_time", "end_time"] {
        let t = v[key].as_str().unwrap_or_default();
        assert!(matches(rfc2822, t), "{key} {t:?} is not RFC 2822");
    }
    assert_eq!(v["return_code"], 0);
    for key in ["sysname", "nodename", "release", "version", "machine"] {
        assert!(
            v["sysinfo"][key].is_string(),
            "sysinfo.{key}: {}",
            v["sysinfo"]
        );
    }
    assert!(matches!(v["sysinfo"]["realtime"].as_u64(), Some(0 | 1)));
    assert_eq!(v["num_threads"], 1);
    let threads = v["thread"].as_object().expect("thread object");
    assert_eq!(threads.keys().collect::<Vec<_>>(), ["0"]);

    let sender = &v["thread"]["0"]["sender"];
    let receiver = &v["thread"]["0"]["receiver"];
    for key in ["cpu", "priority", "samples", "interval"] {
        assert!(sender[key].is_u64(), "sender.{key}: {sender}");
    }
    for key in ["cpu", "priority", "timeoutcount", "min", "max"] {
        assert!(receiver[key].is_u64(), "receiver.{key}: {receiver}");
    }
    assert!(receiver["avg"].is_number(), "receiver.avg: {receiver}");
    assert_eq!(sender["samples"], 100);
    assert_eq!(sender["interval"], 100);
    assert_eq!(sender["priority"].to_string(), prio);
    assert_eq!(receiver["priority"].to_string(), prio);
    assert_eq!(receiver["timeoutcount"], 0);
    // The JSON and the lines printed by the same run agree.
    let [min, _cur, avg, max] = stats[0];
    assert_eq!(receiver["min"], min);
    assert_eq!(receiver["max"], max);
    let javg = f64_of(&receiver["avg"], "receiver.avg");
    assert!(
        (javg - avg as f64).abs() <= 0.51,
        "JSON avg {javg} vs printed Avg {avg}"
    );
}

#[test]
fn pmqtest_symlink_behaves_as_pmqtest() {
    let (_dir, link) = temp_file("pmqtest");
    std::os::unix::fs::symlink(bin(), &link).expect("symlink");
    let out = run(assert_cmd::Command::new(&link)
        .args(args("-l 50 -i 100 -q"))
        .args(mlock_args())
        .timeout(std::time::Duration::from_secs(30)));
    assert_code(&out, 0);
    check_classic(
        &stdout_of(&out),
        &[header_regex(0, r"\d+", r"\d+", "100", "0", "50")],
    );
}

#[test]
fn classic_forced_timeouts_show_in_to_field() {
    let headers = [header_regex(0, r"\d+", r"\d+", "1000", r"\d+", "2")];
    let stdout = stdout_of(&run_classic("-T 1 -f 2 -l 2 -i 1000", 15, &headers));
    let to: u64 = stdout
        .split("TO ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no TO field:\n{stdout}"));
    assert!(
        to >= 2,
        "expected at least one timeout per sample, got TO {to}\n{stdout}"
    );
}

#[test]
fn classic_breaktrace_keeps_stdout_exact_and_warns_on_stderr() {
    let test = "mq_classic::classic_breaktrace_keeps_stdout_exact_and_warns_on_stderr";
    let headers = [header_regex(0, r"\d+", r"\d+", "100", "0", r"\d+")];
    // Where this user may write tracing_on, -b would stop the system's
    // tracer: as root (CI) the run is the ordinary user nobody's, for whom
    // tracefs is out of reach, as it is for the users this warning serves.
    let out = if tracing_on_file().is_none() {
        run_classic("-b 1 -i 100", 20, &headers)
    } else {
        let mut cmd = match nobody_runner() {
            Ok(cmd) => cmd,
            Err(why) => {
                return latscope::testing::skip(
                    test,
                    &format!(
                        "tracefs is usable here, so -b would stop the system tracer, and {why}"
                    ),
                );
            }
        };
        cmd.arg(bin())
            .args(args("mq --format classic -q --no-mlockall -b 1 -i 100"));
        let out = run_std_with_timeout(cmd, std::time::Duration::from_secs(20));
        assert_code(&out, 0);
        check_classic(&stdout_of(&out), &headers);
        out
    };
    let stderr = stderr_of(&out);
    assert_eq!(
        stderr.lines().filter(|l| l.contains("tracefs")).count(),
        1,
        "expected one warning about tracefs on stderr\n{}",
        describe(&out)
    );
}
