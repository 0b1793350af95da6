//! `latscope cyclictest` against outputs captured from Debian's rt-tests 2.40
//! cyclictest (tests/golden/cyclictest/, same options): the layout must be
//! byte-identical once the measured numbers are masked (widths and order exact).

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_latscope"))
}

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/cyclictest")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every run of digits and spaces that ends in a digit becomes as many `N`:
/// a number printed in a padded field keeps its field's width.
fn mask_padded(line: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in line.chars() {
        if c.is_ascii_digit() || c == ' ' {
            run.push(c);
            continue;
        }
        flush(&mut out, &mut run);
        out.push(c);
    }
    flush(&mut out, &mut run);
    out
}

fn flush(out: &mut String, run: &mut String) {
    let trailing = run.len() - run.trim_end_matches(' ').len();
    let body = &run[..run.len() - trailing];
    if body.chars().any(|c| c.is_ascii_digit()) {
        // Padding and separating spaces are counted in, so a field's width
        // is compared whatever the number (a pid below 10000 included).
        out.push_str(&"N".repeat(body.len()));
    } else {
        out.push_str(body);
    }
    out.push_str(&" ".repeat(trailing));
    run.clear();
}

/// Numbers of any width become one `N` (JSON prints them unpadded).
fn mask_any(line: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(bin())
        .arg("cyclictest")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

/// Compares line by line; `# Thread N:` overflow lists depend on the
/// measurement, so only their prefix is compared.
fn assert_layout(args: &[&str], golden_name: &str) {
    let (ours, err, code) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    let theirs = golden(golden_name);
    let ours: Vec<&str> = ours.split('\n').collect();
    let theirs: Vec<&str> = theirs.split('\n').collect();
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{args:?}: line count\n{}",
        ours.join("\n")
    );
    for (a, b) in ours.iter().zip(&theirs) {
        if b.starts_with("# Thread ") {
            assert_eq!(a.split(':').next(), b.split(':').next());
            continue;
        }
        assert_eq!(
            mask_padded(a),
            mask_padded(b),
            "{args:?}:\nours:   {a}\ntheirs: {b}"
        );
    }
}

#[test]
fn quiet_one_thread() {
    assert_layout(&["-q", "-l", "50", "-i", "1000"], "q_l50.txt");
}

#[test]
fn quiet_two_threads_with_distance() {
    assert_layout(
        &["-q", "-t2", "-l", "50", "-i", "1000", "-d", "500"],
        "q_t2.txt",
    );
}

#[test]
fn quiet_nanoseconds() {
    assert_layout(&["-q", "-t2", "-N", "-l", "50", "-i", "1000"], "q_t2_N.txt");
}

#[test]
fn quiet_smp_clustered_priority() {
    assert_layout(&["-q", "-m", "-Sp90", "-l", "50", "-i", "1000"], "q_S.txt");
}

#[test]
fn priority_is_the_same_for_every_thread() {
    assert_layout(
        &["-q", "-t2", "-p80", "-l", "20", "-i", "1000"],
        "q_t2_p80.txt",
    );
    let (ours, _, _) = run(&["-q", "-t2", "-p80", "-l", "20", "-i", "1000"]);
    assert_eq!(ours.matches(" P:80 ").count(), 2, "{ours}");
}

#[test]
fn histogram_one_and_two_threads() {
    assert_layout(&["-q", "-h", "20", "-l", "50", "-i", "1000"], "h20.txt");
    assert_layout(
        &["-q", "-t2", "-h", "20", "-l", "50", "-i", "1000"],
        "h20_t2.txt",
    );
}

#[test]
fn histogram_rows_add_up() {
    let (ours, _, _) = run(&["-q", "-h", "1000", "-l", "30", "-i", "500"]);
    let rows: u64 = ours
        .lines()
        .filter(|l| l.starts_with('0'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    let total = ours.lines().find(|l| l.starts_with("# Total:")).unwrap();
    let overflows = ours
        .lines()
        .find(|l| l.starts_with("# Histogram Overflows:"))
        .unwrap();
    let n = |l: &str| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
    assert_eq!(rows, n(total));
    assert_eq!(n(total) + n(overflows), 30, "{ours}");
}

fn assert_json(args: &[&str], golden_name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.json");
    let json_arg = format!("--json={}", file.display());
    let mut all: Vec<&str> = args.to_vec();
    all.push(&json_arg);
    let (_, err, code) = run(&all);
    assert_eq!(code, 0, "{err}");
    let ours = std::fs::read_to_string(&file).unwrap();
    let _: serde_json::Value = serde_json::from_str(&ours).unwrap();
    let theirs = golden(golden_name);
    // Histogram cells depend on the measurement: compared apart.
    let keep = |text: &str| -> Vec<String> {
        text.split('\n')
            .filter(|l| !(l.starts_with("        \"") && l.contains("\": ")))
            .filter(|l| !l.contains("\"cmdline:\""))
            .map(mask_any)
            .collect()
    };
    assert_eq!(keep(&ours), keep(&theirs), "{ours}");
}

#[test]
fn json_without_histogram() {
    assert_json(&["-q", "-l", "20", "-i", "1000"], "json_l20.json");
}

#[test]
fn json_with_histogram_two_threads() {
    assert_json(
        &["-q", "-t2", "-h", "100", "-l", "20", "-i", "1000"],
        "json_h100_t2.json",
    );
}

#[test]
fn bad_option_is_getopts_message_then_usage() {
    let (out, err, code) = run(&["-Z"]);
    assert_eq!(err, golden("bad_opt.err"));
    assert_eq!(out, golden("bad_opt.out"));
    assert_eq!(code, 0);
}

#[test]
fn help_is_the_usage_on_stdout() {
    let (out, err, code) = run(&["--help"]);
    assert_eq!(
        (out.as_str(), err.as_str(), code),
        (golden("bad_opt.out").as_str(), "", 0)
    );
}

#[test]
fn json_cpu_of_unpinned_threads_is_cyclictests() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("o.json");
    let arg = format!("--json={}", file.display());
    let (_, err, code) = run(&["-q", "-t2", "-l5", &arg]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["thread"]["0"]["cpu"], 0);
    assert_eq!(v["thread"]["1"]["cpu"], 1);
}

#[test]
fn compat_name_runs_cyclictest() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("cyclictest");
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let out = Command::new(&link)
        .args(["-qm", "-l10", "-i", "1000"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text.lines().any(|l| l.starts_with("T: 0 (")), "{text}");
}

#[test]
fn sigint_mid_run_prints_the_final_block() {
    let child = Command::new(bin())
        .args(["cyclictest", "-q", "-t2", "-i", "1000"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text.lines().filter(|l| l.starts_with("T:")).count(),
        2,
        "{text}"
    );
}

#[test]
fn duration_with_suffix_ends_the_run() {
    let start = std::time::Instant::now();
    let (out, err, code) = run(&["-q", "-D", "1s", "-i", "1000"]);
    assert_eq!(code, 0, "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert!(out.contains("T: 0 ("), "{out}");
}
