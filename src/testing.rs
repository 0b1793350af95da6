//! Test support shared by the library's unit tests and the integration suite:
//! a skip that is seen and counted.
//!
//! libtest has no "skipped" outcome: a test that returns early because the
//! machine cannot run it reports `ok`, and a skip looks like a pass. Every test
//! that cannot run here calls [`skip`] instead of returning silently:
//! - the line `SKIPPED <test>: <reason>` goes to the process's real standard
//!   error, past libtest's capture (which only takes `print!`/`eprint!`), so it
//!   shows in the run's output whatever the test's outcome;
//! - when `LATSCOPE_SKIP_LOG` names a file, the same line is appended to it, so
//!   that `.ci/run` counts the skips and lists them at the end of the run
//!   (`N passed, N failed, N skipped`), where a reader looks.
//!
//! Not part of latscope's interface: hidden from the docs, used by tests only.

use std::io::Write;

/// The environment variable naming the ledger file of skips (one line each).
pub const SKIP_LOG_ENV: &str = "LATSCOPE_SKIP_LOG";

/// Records that `test` did not run its assertions here, and why. The caller
/// returns right after. `test` is the test's path as libtest names it
/// (`slow::spikes::both_collectors_...`).
pub fn skip(test: &str, reason: &str) {
    record(&skip_line(test, reason));
}

/// Records that one independent part of `test` (one collector of two, one
/// event path of several) could not run here while the others did: the test
/// still passes or fails on what ran, and the ledger says what did not.
pub fn skip_part(test: &str, part: &str, reason: &str) {
    record(&skip_line(&format!("{test} [{part}]"), reason).replacen(
        "SKIPPED ",
        "SKIPPED PART ",
        1,
    ));
}

fn record(line: &str) {
    // Straight to file descriptor 2: `eprintln!` would be captured by libtest
    // and shown only when the test fails, which a skip never does.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        append_to_ledger(std::path::Path::new(&path), line);
    }
}

/// O_APPEND: tests of several threads and processes append whole lines.
fn append_to_ledger(path: &std::path::Path, line: &str) {
    if let Ok(mut ledger) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = ledger.write_all(line.as_bytes());
    }
}

/// The ledger's line: one line whatever the reason holds (a newline in a
/// kernel's message would otherwise count as a second skip).
fn skip_line(test: &str, reason: &str) -> String {
    let reason: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("SKIPPED {test}: {}\n", reason.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_one_line_whatever_the_reason_holds() {
        assert_eq!(
            skip_line("slow::a::b", "no BPF\nhere\t(EPERM) "),
            "SKIPPED slow::a::b: no BPF here (EPERM)\n"
        );
    }

    #[test]
    fn a_skipped_part_names_its_test_and_part() {
        let line = skip_line("slow::x::y [bpf]", "no BPF").replacen("SKIPPED ", "SKIPPED PART ", 1);
        assert_eq!(line, "SKIPPED PART slow::x::y [bpf]: no BPF\n");
    }

    #[test]
    fn skips_are_appended_to_the_ledger_as_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("skips");
        append_to_ledger(&ledger, &skip_line("unit::first", "one"));
        append_to_ledger(&ledger, &skip_line("unit::second", "two"));
        assert_eq!(
            std::fs::read_to_string(&ledger).unwrap(),
            "SKIPPED unit::first: one\nSKIPPED unit::second: two\n"
        );
    }
}
