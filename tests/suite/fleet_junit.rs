//! `--junit FILE` (issue 21): the verdicts as JUnit XML, valid against the
//! Jenkins/Ant schema shipped in tests/junit/, one case per threshold per
//! series, failures carrying the measured value the JSON report holds.

use crate::common::*;
use std::path::Path;
use std::process::Command as StdCommand;

const XSD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/junit/jenkins-junit.xsd");

/// xmllint's verdict on `file` against the schema; None (with the reason
/// printed) when xmllint is not installed.
fn validate(file: &Path) -> Option<()> {
    let out = match StdCommand::new("xmllint")
        .args(["--noout", "--schema", XSD])
        .arg(file)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!(
                "SKIP schema validation: xmllint not runnable ({e}); apt-get install libxml2-utils"
            );
            return None;
        }
    };
    assert!(
        out.status.success(),
        "xmllint refuses {}: {}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
    Some(())
}

#[test]
fn thresholds_become_cases_and_the_file_is_valid_junit() {
    let (dir, json) = temp_file("r.json");
    let xml = dir.path().join("verdicts.xml");
    let mut cmd = mq(
        &args("-t 2 -D 1 -i 1000 -q --max-latency 1000000 --fail-if max>1ns --fail-if p99>1h"),
        60,
    );
    cmd.arg("--junit").arg(&xml);
    // max>1ns is crossed by every pair: exit 3.
    let (_out, report) = run_with_report(cmd, &json, 3);
    validate(&xml);
    let text = std::fs::read_to_string(&xml).unwrap();
    // Two pairs x (--max-latency, two --fail-if) = 6 cases, 2 failures.
    assert!(
        text.contains(r#"<testsuites name="latscope" tests="6" failures="2" errors="0""#),
        "{text}"
    );
    assert!(text.contains(r#"<testsuite name="mq" tests="6" failures="2" errors="0" skipped="0""#));
    for label in ["pair 0", "pair 1"] {
        for name in [
            "max-latency&lt;=1000000us\"/>",
            "fail-if p99&gt;1h\"/>",
            "fail-if max&gt;1ns\">",
        ] {
            let case = format!(r#"<testcase classname="latscope.mq" name="{label}: {name}"#);
            assert!(text.contains(&case), "{case} missing:\n{text}");
        }
    }
    // Each failure carries the value the report measured.
    for check in array_of(&report["thresholds"], "thresholds") {
        if check["crossed"] == true {
            let max = i64_of(
                &report["tests"][0]["series"][if check["series"] == "pair 0" { 0 } else { 1 }]["max_ns"],
                "max",
            );
            assert_eq!(f64_of(&check["value_ns"], "value_ns"), max as f64);
            let line = format!(
                "mq {}: max&gt;1ns crossed (max = ",
                check["series"].as_str().unwrap()
            );
            assert!(text.contains(&line), "{line} missing:\n{text}");
        }
    }
    // The machine in the suite's properties, the warnings as its output.
    assert!(text.contains(r#"<property name="kernel" value=""#));
    let warnings = array_of(&report["warnings"], "warnings");
    assert_eq!(
        text.contains("<system-out>"),
        !warnings.is_empty(),
        "{text}"
    );
}

#[test]
fn a_run_without_thresholds_has_one_passing_case_per_series_on_stdout() {
    let out = run_mq(&args("-t 2 -l 50 -i 500 -q --junit -"), 60, 0);
    let text = stdout_of(&out);
    let (dir, xml) = temp_file("stdout.xml");
    std::fs::write(&xml, &text).unwrap();
    validate(&xml);
    assert!(
        text.starts_with(r#"<?xml version="1.0" encoding="UTF-8"?>"#),
        "{text}"
    );
    assert!(text.contains(r#"name="pair 0: measured"/>"#), "{text}");
    assert!(text.contains(r#"name="pair 1: measured"/>"#), "{text}");
    assert!(
        text.contains(r#"tests="2" failures="0" errors="0""#),
        "{text}"
    );
    drop(dir);
}

#[test]
fn the_schema_refuses_what_it_should() {
    // The schema is not a rubber stamp: a case without a name, and a count
    // that is not a number, are refused.
    if StdCommand::new("xmllint")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIP: xmllint not installed; apt-get install libxml2-utils");
        return;
    }
    let (dir, bad) = temp_file("bad.xml");
    for text in [
        r#"<testsuites><testsuite name="x" tests="1"><testcase classname="a"/></testsuite></testsuites>"#,
        r#"<testsuites><testsuite name="x" tests="many"/></testsuites>"#,
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = StdCommand::new("xmllint")
            .args(["--noout", "--schema", XSD])
            .arg(&bad)
            .output()
            .unwrap();
        // Refused by the schema, not because the schema failed to load.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("fails to validate"), "{text}: {err}");
    }
    drop(dir);
}
