//! The classic outputs of semtest, sigwaittest and svsematest, through
//! symlinks named like the originals, checked line by line; rt-tests JSON of
//! sigwaittest and svsematest.

use crate::common::*;
use std::path::PathBuf;
use tempfile::TempDir;

/// A symlink `name` -> the latscope binary, in its own temporary directory.
fn compat_link(name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join(name);
    std::os::unix::fs::symlink(bin(), &link).expect("symlink");
    (dir, link)
}

fn run_link(link: &PathBuf, argv: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(link);
    cmd.args(argv).args(mlock_args());
    run_std_with_timeout(cmd, std::time::Duration::from_secs(60))
}

fn rt_priority() -> Option<&'static str> {
    can_use_realtime().then_some("80")
}

#[test]
fn semtest_symlink_prints_the_seed_format() {
    let (_dir, link) = compat_link("semtest");
    let mut argv = vec!["-i", "300", "-I", "200"];
    if let Some(p) = rt_priority() {
        argv.extend(["-p", p]);
    }
    let out = run_link(&link, &argv);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let l = lines(&text);
    let cpus = allowed_cpus();
    let (prio, policy) = match rt_priority() {
        Some(p) => (p, "SCHED_FIFO"),
        None => ("0", "SCHED_OTHER"),
    };
    let expected_head = [
        "Starting test:".to_string(),
        "Affinity:\tOn".to_string(),
        "Iterations:\t300".to_string(),
        format!("num_cpus:\t{}", cpus.len()),
        format!("Priority:\t{prio}"),
        format!("Policy:\t\t{policy}"),
        "Summary of 300 iterations".to_string(),
    ];
    assert_eq!(&l[..7], &expected_head[..], "{}", describe(&out));
    let mut maxes = Vec::new();
    let mut mins = Vec::new();
    for (i, cpu) in cpus.iter().enumerate() {
        let line = l[7 + i];
        let pattern = format!(
            r"^P: {cpu:>2},{cpu:>2}\tPri: {prio}\tMax:\t {{0,7}}(\d+)\tMin:\t {{0,7}}(\d+)$"
        );
        assert!(matches(&pattern, line), "{line:?} !~ {pattern}");
        let numbers: Vec<u64> = line
            .split('\t')
            .filter_map(|f| f.trim().parse().ok())
            .collect();
        maxes.push(numbers[0]);
        mins.push(numbers[1]);
    }
    let n = cpus.len();
    let global_max = l[7 + n];
    let global_min = l[8 + n];
    let number = r"(\d+)";
    assert!(
        matches(
            &format!(
                r"^\(Max\) Global: +{number} us\x07avg: \d+\.\d{{4}} us\tmiddle: \d+\.\d{{6}}$"
            ),
            global_max
        ),
        "{global_max:?}"
    );
    assert!(
        global_max.contains(&format!(" {} us\x07", maxes.iter().max().unwrap())),
        "{global_max:?} vs {maxes:?}"
    );
    // The true smallest minimum (the original printed the largest).
    assert!(
        global_min.contains(&format!(" {} us\x07", mins.iter().min().unwrap())),
        "{global_min:?} vs {mins:?}"
    );
    let avg_min = mins.iter().sum::<u64>() as f64 / n as f64;
    assert!(
        global_min.contains(&format!("avg: {avg_min:.4} us\t")),
        "{global_min:?} vs {mins:?}"
    );
    assert!(
        matches(
            r"^Test took 0 hours 0 mins \d+\.\d{6} secs to complete$",
            l[9 + n]
        ),
        "{:?}",
        l[9 + n]
    );
    assert_eq!(l.len(), 10 + n, "{text}");
}

#[test]
fn semtest_without_affinity_shows_cpu_minus_one() {
    let (_dir, link) = compat_link("semtest");
    let out = run_link(&link, &["-A", "-n", "1", "-i", "50", "-I", "100"]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(text.contains("Affinity:\tOff\n"), "{text}");
    assert!(
        lines(&text)
            .iter()
            .any(|l| l.starts_with("P: -1,-1\tPri: 0\t")),
        "{text}"
    );
}

/// The rt-tests block: settings line per pair (without `TO`), then stat lines.
fn check_rt_tests_block(text: &str, pairs: &[(u32, usize, u64)], cycles: u64) {
    let l = lines(text);
    assert_eq!(l.len(), pairs.len() * 2, "{text}");
    for (i, (prio, cpu, interval)) in pairs.iter().enumerate() {
        let pattern = format!(
            r"^#{}: ID\d+, P{prio}, CPU{cpu}, I{interval}; #{}: ID\d+, P{prio}, CPU{cpu}, Cycles {cycles}$",
            2 * i,
            2 * i + 1
        );
        assert!(matches(&pattern, l[i]), "{:?} !~ {pattern}", l[i]);
        let stat = l[pairs.len() + i];
        assert!(matches(&classic_stat_regex(i), stat), "{stat:?}");
        let [min, _cur, avg, max] = classic_stat_numbers(stat);
        assert!(min <= avg && avg <= max, "{stat}");
    }
}

#[test]
fn sigwaittest_and_svsematest_symlinks_print_rt_tests_lines() {
    if skip_without_realtime("rt-tests classic lines with -p99") {
        return;
    }
    let cpus = allowed_cpus();
    for tool in ["sigwaittest", "svsematest"] {
        let (_dir, link) = compat_link(tool);
        for fork in [false, true] {
            let mut argv = vec!["-a", "-t", "-p99", "-i100", "-d25", "-l500", "-q"];
            if fork {
                argv.push("-f");
            }
            let out = run_link(&link, &argv);
            assert_code(&out, 0);
            let pairs: Vec<(u32, usize, u64)> = cpus
                .iter()
                .enumerate()
                .map(|(i, &cpu)| ((99 - i as u32).max(1), cpu, 100 + 25 * i as u64))
                .collect();
            check_rt_tests_block(&stdout_of(&out), &pairs, 500);
        }
    }
}

#[test]
fn rt_tests_json_of_sigwaittest_and_svsematest_has_no_timeoutcount() {
    for tool in ["sigwaittest", "svsematest"] {
        let (dir, link) = compat_link(tool);
        let file = dir.path().join("rt.json");
        let out = run_link(
            &link,
            &[
                "-l",
                "100",
                "-i",
                "200",
                "-q",
                "--json",
                file.to_str().unwrap(),
            ],
        );
        assert_code(&out, 0);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            top_level_keys(&text),
            [
                "file_version",
                "cmdline:",
                "rt_test_version:",
                "start_time",
                "end_time",
                "return_code",
                "sysinfo",
                "num_threads",
                "thread"
            ],
            "{tool}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let receiver = &v["thread"]["0"]["receiver"];
        assert!(receiver.get("timeoutcount").is_none(), "{tool}: {receiver}");
        for key in ["cpu", "priority", "min", "avg", "max"] {
            assert!(receiver.get(key).is_some(), "{tool}: {key} missing");
        }
        assert_eq!(v["thread"]["0"]["sender"]["samples"], 100, "{tool}");
    }
}
