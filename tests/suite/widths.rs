//! `latscope doctor` fitted to a terminal (issue 40 item 16): 266 columns
//! wide on an 80-column terminal before; now its long texts wrap under
//! their column, and its fix names options that exist.

use crate::common::*;

fn doctor(columns: &str, extra: &[&str]) -> String {
    let out = run(latscope(30)
        .env("LATSCOPE_COLUMNS", columns)
        .arg("doctor")
        .args(extra));
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        describe(&out)
    );
    stdout_of(&out)
}

#[test]
fn doctor_fits_80_columns_and_wide_prints_one_line_a_check() {
    for extra in [&[][..], &["--explain"][..]] {
        let text = doctor("80", extra);
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{line:?} in:\n{text}");
        }
    }
    let fitted = doctor("80", &[]);
    assert!(fitted.contains("--wide: one line a row"), "{fitted}");
    let wide = doctor("80", &["--wide"]);
    let piped = run(latscope(30).env_remove("LATSCOPE_COLUMNS").arg("doctor"));
    assert_eq!(
        wide.lines().count(),
        stdout_of(&piped).lines().count(),
        "--wide is the full table:\n{wide}"
    );
    assert!(fitted.lines().count() > wide.lines().count());
}

#[test]
fn a_bad_width_is_a_usage_error() {
    let out = run(latscope(30).env("LATSCOPE_COLUMNS", "wide").arg("doctor"));
    assert_code(&out, 2);
    assert_eq!(
        stderr_of(&out).trim_end(),
        "latscope: error: LATSCOPE_COLUMNS=\"wide\" is not a width: give a number of columns from 40 to 10000, or unset it"
    );
}

/// Every `latscope ...` command a fix names parses: run it (with a short
/// duration) and it must not be refused as bad usage.
#[test]
fn the_commands_doctor_advises_exist() {
    let out = run(latscope(30).args(["doctor", "--json", "-"]));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    let fixes: Vec<String> = json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["fix"].as_str().map(str::to_string))
        .collect();
    let mut tried = 0;
    for fix in &fixes {
        let Some(at) = fix.find("latscope ") else {
            continue;
        };
        let command: String = fix[at..].chars().take_while(|&c| c != ')').collect();
        let words: Vec<String> = command
            .split_whitespace()
            .skip(1)
            .map(|w| w.replace("CPUS", "0").replace("CPU", "0"))
            .collect();
        let ran = run(latscope(60)
            .args(&words)
            .args(["-D", "0.2", "-q"])
            .args(mlock_args()));
        assert_ne!(
            ran.status.code(),
            Some(2),
            "{command:?}: {}",
            describe(&ran)
        );
        tried += 1;
    }
    if tried == 0 {
        latscope::testing::skip(
            "the_commands_doctor_advises_exist",
            "no fix names a latscope command on this machine (isolated CPUs?)",
        );
    }
}
