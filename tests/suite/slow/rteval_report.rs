//! `timer --rteval-xml FILE`: rteval's summary.xml read through an XSLT
//! with xsltproc, as `rteval -Z` reads it. Every core's `Max:` is the run's
//! maximum for that CPU in the JSON report (truncated to whole microseconds,
//! as cyclictest's histogram counts them), and its `Samples:` the samples.
//!
//! The stylesheet is tests/rteval/summary_text.xsl (latscope's own, reading
//! rteval_text.xsl's element paths); rteval's rteval_text.xsl itself is also
//! run when it is installed (RTEVAL_TEXT_XSL, or where rteval puts it).

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Per core (`CPU core N`): the value after `label` in the text, unit cut.
fn per_core(text: &str, label: &str) -> BTreeMap<i64, String> {
    let mut core = None;
    let mut values = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("CPU core ") {
            core = rest.split_whitespace().next().and_then(|n| n.parse().ok());
        } else if let (Some(id), Some(value)) = (core, line.strip_prefix(label)) {
            values.insert(id, value.trim().trim_end_matches("us").to_string());
        }
    }
    values
}

/// The JSON report's per-CPU figures: (max in whole us, samples).
fn json_per_cpu(report: &Value) -> BTreeMap<i64, (i64, u64)> {
    array_of(&report["tests"][0]["series"], "series")
        .iter()
        .map(|s| {
            let cpu = s["cpus"][0].as_i64().expect("a pinned thread");
            let max_ns = i64_of(&s["max_ns"], "max_ns");
            (cpu, (max_ns / 1000, u64_of(&s["samples"], "samples")))
        })
        .collect()
}

fn transform(stylesheet: &Path, xml: &Path) -> String {
    let out = std::process::Command::new("xsltproc")
        .arg(stylesheet)
        .arg(xml)
        .output()
        .expect("run xsltproc");
    assert!(
        out.status.success(),
        "xsltproc {}: {}",
        stylesheet.display(),
        describe(&out)
    );
    stdout_of(&out)
}

/// rteval's own stylesheet, where this machine has one.
fn rteval_s_stylesheet() -> Option<PathBuf> {
    let given = std::env::var_os("RTEVAL_TEXT_XSL").map(PathBuf::from);
    given
        .into_iter()
        .chain(["/usr/share/rteval/rteval_text.xsl".into()])
        .find(|p| p.is_file())
}

fn check_against_json(text: &str, expected: &BTreeMap<i64, (i64, u64)>, which: &str) {
    let max = per_core(text, "Max:");
    let samples = per_core(text, "Samples:");
    let want_max: BTreeMap<i64, String> = expected
        .iter()
        .map(|(c, (m, _))| (*c, m.to_string()))
        .collect();
    let want_samples: BTreeMap<i64, String> = expected
        .iter()
        .map(|(c, (_, n))| (*c, n.to_string()))
        .collect();
    assert_eq!(max, want_max, "{which}: Max per core\n{text}");
    assert_eq!(samples, want_samples, "{which}: Samples per core\n{text}");
}

/// Whether this machine can run a test here: real-time and xsltproc.
fn runnable(test: &str) -> bool {
    if skip_without_realtime(test) {
        return false;
    }
    let xsltproc = std::process::Command::new("xsltproc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !xsltproc {
        latscope::testing::skip(test, "xsltproc is not installed (.ci/run installs it)");
    }
    xsltproc
}

#[test]
fn rteval_s_stylesheet_reads_each_core_s_max_as_the_run_s() {
    let test = "rteval_s_stylesheet_reads_each_core_s_max";
    if !runnable(test) {
        return;
    }
    let (dir, json) = temp_file("report.json");
    let xml = dir.path().join("summary.xml");
    let mut argv = args("timer --smp -D 1 -q");
    argv.extend(["--json", json.to_str().unwrap()]);
    argv.extend(["--rteval-xml", xml.to_str().unwrap()]);
    argv.extend_from_slice(mlock_args());
    let out = run(latscope(60).args(&argv));
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        describe(&out)
    );
    let expected = json_per_cpu(&read_json(&json));
    assert!(!expected.is_empty());
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rteval/summary_text.xsl");
    let text = transform(&ours, &xml);
    check_against_json(&text, &expected, "summary_text.xsl");
    assert!(text.starts_with("rteval (v3.10) report"), "{text}");
    assert!(text.contains("Loads: none"), "{text}");
    match rteval_s_stylesheet() {
        Some(theirs) => check_against_json(&transform(&theirs, &xml), &expected, "rteval_text.xsl"),
        None => latscope::testing::skip_part(
            test,
            "rteval_text.xsl",
            "rteval's stylesheet is not installed (set RTEVAL_TEXT_XSL to one)",
        ),
    }
}

#[test]
fn the_cyclictest_drop_in_writes_it_with_latscope_rteval_xml() {
    let test = "the_cyclictest_drop_in_writes_it";
    if !runnable(test) {
        return;
    }
    let (dir, json) = temp_file("report.json");
    let xml = dir.path().join("summary.xml");
    let argv = [
        "cyclictest",
        "-q",
        "-m",
        "-D",
        "1",
        "-t",
        "1",
        "-a",
        "0",
        "--latscope-json",
        json.to_str().unwrap(),
        "--latscope-rteval-xml",
        xml.to_str().unwrap(),
    ];
    let out = run(latscope(60).args(argv));
    assert_code(&out, 0);
    let expected = json_per_cpu(&read_json(&json));
    assert_eq!(expected.keys().copied().collect::<Vec<_>>(), [0]);
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rteval/summary_text.xsl");
    check_against_json(&transform(&ours, &xml), &expected, "summary_text.xsl");
    let text = std::fs::read_to_string(&xml).unwrap();
    let command = text
        .split("<cyclictest command_line=\"")
        .nth(1)
        .unwrap_or_default();
    assert!(command.contains("--latscope-rteval-xml"), "{text}");
    drop(dir);
}

#[test]
fn rteval_xml_is_a_timer_option_with_checked_paths() {
    let out =
        run(latscope(20).args(["timer", "-D", "1", "--rteval-xml", "/nonexistent-dir/x.xml"]));
    assert_code(&out, 2);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("--rteval-xml /nonexistent-dir/x.xml"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = run(latscope(20).args(["timer", "-D", "1", "--rteval-xml", "-", "--json", "-"]));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("both want standard output"),
        "{}",
        describe(&out)
    );
}
