//! ptsematest compatibility: `latscope mutex` under the name `ptsematest` (a
//! link, or `latscope ptsematest`) against outputs captured from Debian's
//! rt-tests 2.40 ptsematest (tests/golden/ptsematest/, same options). The
//! layout must be the original's: lines, order, labels, separators, the
//! priorities and intervals the options give, and C's `%4d` for the four
//! latencies; the measured numbers (ids, CPUs of unpinned threads, cycles,
//! latencies) are masked. The golden files were made with:
//!
//! ```text
//! ptsematest -q -l 100 -i 1000                          > q_l100.txt
//! ptsematest -q -t2 -l 100 -i 1000 -d 500               > q_t2.txt
//! ptsematest -q -S -p 80 -l 100 -i 1000                 > q_S_p80.txt
//! ptsematest -q -a -t2 -p 90 -l 50 -i 2000 -d 250       > q_a_t2_p90.txt
//! ptsematest -q -l 50 -i 1000 --json=json_l50.json
//! ptsematest -q -t2 -p 80 -l 50 -i 1000 --json=json_t2_p80.json
//! ```

use crate::common::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// `latscope ptsematest ARGS`, which must end within a minute.
fn run_named(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.arg("ptsematest").args(args);
    run_std_with_timeout(cmd, Duration::from_secs(60))
}

/// The regex a golden line stands for. Kept literally: every character that
/// is not part of a number, and the numbers after `P` (priority) and `I`
/// (interval), which the options decide. The four latencies may be any
/// number printed as `%4d`; every other number (ids, CPUs, cycles) any number.
fn line_pattern(golden_line: &str) -> String {
    let mut pattern = String::from("^");
    let mut rest = golden_line;
    while !rest.is_empty() {
        let latency = ["Min ", "Cur ", "Avg ", "Max "]
            .into_iter()
            .find(|label| rest.starts_with(label));
        if let Some(label) = latency {
            let after = rest[label.len()..].trim_start_matches(' ');
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            assert!(
                digits > 0,
                "golden line {golden_line:?}: no number after {label}"
            );
            pattern.push_str(&format!("{label}{NUM4}"));
            rest = &after[digits..];
            continue;
        }
        let c = rest.chars().next().unwrap();
        if c.is_ascii_digit() {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let literal = pattern.ends_with('P') || pattern.ends_with('I');
            if literal {
                pattern.push_str(&rest[..digits]);
            } else {
                pattern.push_str(r"\d+");
            }
            rest = &rest[digits..];
            continue;
        }
        let escaped = match c {
            '#' | '-' | '<' | '>' | ',' | ':' | ';' | ' ' => c.to_string(),
            c if c.is_ascii_alphabetic() => c.to_string(),
            c => format!("\\{c}"),
        };
        pattern.push_str(&escaped);
        rest = &rest[c.len_utf8()..];
    }
    pattern.push('$');
    pattern
}

/// `ptsematest ARGS` (latscope's) prints what the real one printed into
/// `golden_name`, line for line (see `line_pattern`), and exits 0; returns
/// what it printed.
fn assert_layout(args: &[&str], golden_name: &str) -> String {
    let out = run_named(args);
    assert_code(&out, 0);
    let printed = stdout_of(&out);
    let theirs = golden("ptsematest", golden_name);
    let ours: Vec<&str> = printed.split('\n').collect();
    let theirs: Vec<&str> = theirs.split('\n').collect();
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{args:?}: line count\nours:\n{}\ntheirs:\n{}",
        ours.join("\n"),
        theirs.join("\n")
    );
    for (a, b) in ours.iter().zip(&theirs) {
        // Thread ids (`ID9302`) are the machine's: masked on both sides.
        let pattern = line_pattern(&mask_environment(b));
        assert!(
            matches(&pattern, &mask_environment(a)),
            "{args:?}:\nours:   {a:?}\ntheirs: {b:?}\npattern {pattern}"
        );
    }
    printed
}

#[test]
fn golden_patterns_keep_what_the_options_decide() {
    assert_eq!(
        line_pattern("#2: ID9302, P89, CPU1, I2250; #3: ID9303, P89, CPU1, Cycles 50"),
        r"^#\d+: ID\d+, P89, CPU\d+, I2250; #\d+: ID\d+, P89, CPU\d+, Cycles \d+$"
    );
    let stat = line_pattern("#1 -> #0, Min    2, Cur  128, Avg  137, Max 13132");
    for ours in [
        "#1 -> #0, Min    3, Cur    4, Avg    3, Max   45",
        "#1 -> #0, Min 1234, Cur 12345, Avg    3, Max 1234567",
    ] {
        assert!(matches(&stat, ours), "{ours:?} !~ {stat}");
    }
    // Not `%4d`, or another label order: refused.
    for bad in [
        "#1 -> #0, Min 3, Cur    4, Avg    3, Max   45",
        "#1 -> #0, Min    3, Avg    3, Cur    4, Max   45",
        "#1 -> #0, Min    3, Cur    4, Avg    3, Max   45 ",
    ] {
        assert!(!matches(&stat, bad), "{bad:?} =~ {stat}");
    }
}

#[test]
fn quiet_one_pair() {
    assert_layout(&["-q", "-l", "100", "-i", "1000"], "q_l100.txt");
}

#[test]
fn quiet_two_pairs_with_distance() {
    assert_layout(
        &["-q", "-t2", "-l", "100", "-i", "1000", "-d", "500"],
        "q_t2.txt",
    );
}

#[test]
fn quiet_smp_same_priority_for_every_pair() {
    if skip_without_realtime("ptsematest -S -p 80") || allowed_cpus() != [0, 1] {
        // The golden file has one pair per CPU of a 2-CPU machine.
        return;
    }
    assert_layout(
        &["-q", "-S", "-p", "80", "-l", "100", "-i", "1000"],
        "q_S_p80.txt",
    );
}

#[test]
fn quiet_pinned_pairs_step_priority_and_interval() {
    if skip_without_realtime("ptsematest -a -t2 -p 90") || allowed_cpus().len() < 2 {
        return;
    }
    let text = assert_layout(
        &[
            "-q", "-a", "-t2", "-p", "90", "-l", "50", "-i", "2000", "-d", "250",
        ],
        "q_a_t2_p90.txt",
    );
    // Pinned: pair N on the Nth usable CPU, both of its tasks.
    let cpus = allowed_cpus();
    for (i, line) in lines(&text).iter().take(2).enumerate() {
        assert_eq!(
            line.matches(&format!(", CPU{}, ", cpus[i])).count(),
            2,
            "{line}"
        );
    }
}

/// Every line of a JSON text with what the environment decides and the
/// numbers masked (see crate::common::mask_numbers); keys, nesting, order and the
/// other strings stay. The command line is compared by its key: it names
/// the file each run wrote to.
fn json_layout(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|line| match line.split_once("\"cmdline:\": ") {
            Some((indent, _)) => format!("{indent}\"cmdline:\": ..."),
            None => mask_numbers(line),
        })
        .collect()
}

fn assert_json(args: &[&str], golden_name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.json");
    let json_arg = format!("--json={}", file.display());
    let mut all: Vec<&str> = args.to_vec();
    all.push(&json_arg);
    let out = run_named(&all);
    assert_code(&out, 0);
    let ours = std::fs::read_to_string(&file).unwrap();
    let _: serde_json::Value = serde_json::from_str(&ours).unwrap();
    assert_eq!(
        json_layout(&ours),
        json_layout(&golden("ptsematest", golden_name)),
        "{ours}"
    );
}

#[test]
fn json_one_pair() {
    assert_json(&["-q", "-l", "50", "-i", "1000"], "json_l50.json");
}

#[test]
fn json_two_pairs() {
    if skip_without_realtime("ptsematest -t2 -p 80 --json") {
        return;
    }
    assert_json(
        &["-q", "-t2", "-p", "80", "-l", "50", "-i", "1000"],
        "json_t2_p80.json",
    );
}

/// A symlink named ptsematest runs exactly what `latscope ptsematest` runs.
#[test]
fn the_link_and_latscope_ptsematest_are_the_same_tool() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("ptsematest");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let mut cmd = Command::new(&link);
    cmd.args(["-q", "-l", "20", "-i", "500"]);
    let out = run_std_with_timeout(cmd, Duration::from_secs(60));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let l = lines(&text);
    assert_eq!(l.len(), 2, "{text}");
    assert!(
        matches(
            &line_pattern(
                &golden("ptsematest", "q_l100.txt")
                    .lines()
                    .next()
                    .unwrap()
                    .replace("I1000", "I500")
            ),
            l[0]
        ),
        "{text}"
    );
    assert!(l[0].ends_with(", Cycles 20"), "{text}");
    assert!(matches(&classic_stat_regex(0), l[1]), "{text}");
}

#[test]
fn help_and_errors_speak_as_ptsematest() {
    let dir = tempfile::tempdir().unwrap();
    let link: PathBuf = dir.path().join("ptsematest");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let through_link = |args: &[&str]| {
        let mut cmd = Command::new(&link);
        cmd.args(args);
        run_std_with_timeout(cmd, Duration::from_secs(30))
    };
    // Byte for byte what Debian's rt-tests 2.40 ptsematest prints
    // (tests/golden/ptsematest/), found by bench/dropin_diff.sh.
    let usage = golden("ptsematest", "usage.out");
    for help in [
        through_link(&["--help"]),
        run_named(&["--help"]),
        run_named(&["-h"]),
        run_named(&["-q", "--he"]),
    ] {
        assert_code(&help, 0);
        assert_eq!(stdout_of(&help), usage, "{}", describe(&help));
        assert_eq!(stderr_of(&help), "", "{}", describe(&help));
    }
    // getopt's complaint (argv[0] as typed), the usage, exit 0.
    let bad = run_named(&["-Z"]);
    assert_code(&bad, 0);
    assert_eq!(
        (stderr_of(&bad), stdout_of(&bad)),
        (golden("ptsematest", "bad_opt.err"), usage.clone())
    );
    let bad = through_link(&["-q", "-Z"]);
    assert_code(&bad, 0);
    assert_eq!(
        stderr_of(&bad),
        format!("{}: invalid option -- 'Z'\n", link.display())
    );
    // ptsematest's own refusals: the usage, exit 1.
    let bad = run_named(&["-p", "120", "-l", "1"]);
    assert_code(&bad, 1);
    assert_eq!(
        (stderr_of(&bad), stdout_of(&bad)),
        (String::new(), usage.clone())
    );
    let bad = run_named(&["-a", "99", "-q", "-l", "5"]);
    assert_code(&bad, 1);
    // (the CPU count is this machine's)
    assert_eq!(
        mask_numbers(&stderr_of(&bad)),
        mask_numbers(&golden("ptsematest", "a_99.err"))
    );
    assert_eq!(stdout_of(&bad), usage);
}

/// Words getopt skips (not options, everything after `--`) are skipped.
#[test]
fn skipped_words_are_skipped() {
    let out = run_named(&["-q", "foo", "-l", "20", "", "--", "-Z"]);
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(text.contains("Cycles 20"), "{}", describe(&out));
}

/// Ctrl-C in an endless run: the final lines, as at a normal end, exit 0.
#[test]
fn sigint_mid_run_prints_the_final_lines() {
    let mut cmd = Command::new(bin());
    cmd.args(["ptsematest", "-q", "-t2", "-i", "1000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    // Signalled only once the pairs run (main, its worker and four pair
    // threads exist): a signal during start-up would test start-up instead.
    let task_dir = format!("/proc/{pid}/task");
    let start = std::time::Instant::now();
    while std::fs::read_dir(&task_dir).map(|d| d.count()).unwrap_or(0) < 6 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the pairs never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signals our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_code(&out, 0);
    let text = stdout_of(&out);
    let l = lines(&text);
    assert_eq!(l.len(), 4, "{}", describe(&out));
    for (i, stat) in l[2..].iter().enumerate() {
        assert!(matches(&classic_stat_regex(i), stat), "{}", describe(&out));
    }
}

/// The sender in a child process: a process-shared mutex (ptsematest has
/// threads only; latscope's -f works for every primitive).
#[test]
fn mutex_across_processes() {
    let out = run(latscope(60).args([
        "mutex", "-f", "-l", "100", "-i", "500", "-q", "--format", "classic",
    ]));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(lines(&text)[0].ends_with(", Cycles 100"), "{text}");
}

/// `-D` and `-b` are read as ptsematest reads them (parse_time_string and
/// atoi), so what it runs with, the drop-in runs with: `-D abc` and
/// `-b abc` are 0, no limit (they were refused); `-D 1x` is one second.
/// Each run is bounded by its loops.
#[test]
fn duration_and_breaktrace_words_are_read_as_ptsematest_reads_them() {
    for args in [&["-D", "abc"][..], &["-b", "abc"][..], &["-D", "1x"][..]] {
        let mut all = vec!["-q", "-l", "50", "-i", "1000"];
        all.extend_from_slice(args);
        let out = run_named(&all);
        assert_code(&out, 0);
        assert!(
            stdout_of(&out).contains("Cycles 50"),
            "{args:?}: {}",
            describe(&out)
        );
    }
}
