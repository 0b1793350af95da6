//! Tables that fit the terminal (issue 40 item 16). `LATSCOPE_COLUMNS=80`
//! fits the console as an 80-column terminal would: no line of timer, mq,
//! noise or logdisk is wider, a line names `--wide`, and `--wide` prints the
//! full table, the same columns a pipe gets without the variable.

use crate::common::*;

/// The widest line of `text`, with its width.
fn widest(text: &str) -> (usize, &str) {
    text.lines()
        .map(|l| (l.chars().count(), l))
        .max_by_key(|(w, _)| *w)
        .unwrap_or((0, ""))
}

/// The header words of the first table line that starts with `first`.
fn header(text: &str, first: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no table header starting {first:?} in:\n{text}"));
    line.split_whitespace().map(str::to_string).collect()
}

/// Runs `latscope ARGS` three ways: fitted to 80 columns, fitted with
/// `--wide`, and to a pipe; checks each and returns nothing (asserts).
fn fits_in_80_and_wide_is_full(command: &[&str], first: &str) {
    let with = |columns: Option<&str>, wide: bool| {
        let mut cmd = latscope(120);
        cmd.args(command).args(mlock_args());
        if wide {
            cmd.arg("--wide");
        }
        match columns {
            Some(c) => cmd.env("LATSCOPE_COLUMNS", c),
            None => cmd.env_remove("LATSCOPE_COLUMNS"),
        };
        let out = run(cmd);
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(3),
            "{}",
            describe(&out)
        );
        stdout_of(&out)
    };
    let fitted = with(Some("80"), false);
    let (width, line) = widest(&fitted);
    assert!(
        width <= 80,
        "{command:?}: {width} columns: {line:?}\n{fitted}"
    );
    assert!(fitted.contains("--wide shows all"), "{fitted}");
    let wide = with(Some("80"), true);
    let piped = with(None, false);
    assert!(widest(&wide).0 > 80, "--wide is full width:\n{wide}");
    assert_eq!(header(&wide, first), header(&piped, first));
    assert!(header(&fitted, first).len() < header(&piped, first).len());
    assert!(!piped.contains("--wide shows all"), "{piped}");
}

#[test]
fn timer_fits_80_columns() {
    fits_in_80_and_wide_is_full(&["timer", "-D", "1", "-q"], "Thread ");
}

#[test]
fn mq_fits_80_columns() {
    fits_in_80_and_wide_is_full(&["mq", "-D", "1", "-q"], "Pair ");
}

#[test]
fn noise_fits_80_columns() {
    fits_in_80_and_wide_is_full(&["noise", "-D", "1", "-q"], "CPU ");
}

#[test]
fn logdisk_fits_80_columns() {
    let dir = disk_dir("widths-");
    let dir_arg = format!("--dir={}", dir.path().display());
    fits_in_80_and_wide_is_full(
        &[
            "logdisk",
            &dir_arg,
            "--fileSize",
            "64K",
            "--numFiles",
            "2",
            "-D",
            "1",
            "-q",
        ],
        "Writer ",
    );
}

#[test]
fn suite_fits_80_columns_with_its_table_on_the_first_screen() {
    let dir = disk_dir("widths-suite-");
    let out = run(latscope(180)
        .current_dir(dir.path())
        .env("LATSCOPE_COLUMNS", "80")
        .args(["suite", "-D", "10"]));
    let text = stdout_of(&out);
    let (width, line) = widest(&text);
    assert!(width <= 80, "{width} columns: {line:?}\n{}", describe(&out));
    let last_row = text.lines().position(|l| l.starts_with("logdisk "));
    assert!(
        last_row.is_some_and(|row| row < 24),
        "the table ends on the first 24 lines:\n{text}"
    );
}
