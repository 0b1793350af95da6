//! What an output comparison (a golden file, two runs side by side) must not
//! see, masked by what it is, in one place:
//!
//! - what comes from the environment (`mask_environment`): dates and times
//!   (RFC 2822 as rt-tests writes them, ISO 8601, ctime), weekday and month
//!   names, the host name, the kernel release and version, the machine, the
//!   user, process and thread ids, the CPU model, paths of this checkout,
//!   its build and the temporary directory, the clock source, timestamps of
//!   the monotonic clock (the machine's uptime). Each becomes
//!   a placeholder naming what it was (`<date>`, `<host>`, ...), so that a
//!   golden captured on a Tuesday on host `vm` compares equal to a run on a
//!   Sunday on host `rig-17`, and nothing else is hidden;
//! - then the measured numbers, three ways (`mask_numbers`, `mask_padded`,
//!   `mask_unpadded`), each masking the environment first.
//!
//! The placeholders hold no digit, so the number masks leave them alone.

use regex::{Captures, Regex};
use std::path::Path;
use std::sync::OnceLock;

const WEEKDAY: &str = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const MONTH: &str = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";

/// One masking rule: every match of `pattern` replaced by `with` (`$1` ...
/// refer to the pattern's groups).
struct Rule {
    pattern: Regex,
    with: String,
}

fn rule(pattern: &str, with: &str) -> Rule {
    Rule {
        pattern: Regex::new(pattern).unwrap_or_else(|e| panic!("mask rule {pattern}: {e}")),
        with: with.to_string(),
    }
}

/// A JSON string field `"key": "value"` (any of `keys`), its value masked.
fn json_field(keys: &str, with: &str) -> Rule {
    rule(
        &format!(r#"("(?:{keys})"\s*:\s*)"[^"]*""#),
        &format!(r#"${{1}}"{with}""#),
    )
}

/// A value this machine or this run has (`value`), as a whole word, masked.
fn literal(value: &str, with: &str) -> Option<Rule> {
    let value = value.trim();
    // Too short to be told from a word of the text (and nothing to mask).
    (value.len() >= 2).then(|| {
        rule(
            &format!(r"(^|[^\w.-]){}($|[^\w-])", regex::escape(value)),
            &format!("${{1}}{with}${{2}}"),
        )
    })
}

/// The calling process's `uname` fields: (nodename, release, version, machine).
fn uname() -> [String; 4] {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    assert_eq!(unsafe { libc::uname(&mut u) }, 0, "uname");
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    [
        field(&u.nodename),
        field(&u.release),
        field(&u.version),
        field(&u.machine),
    ]
}

/// The effective user's name, from the password database.
fn user_name() -> Option<String> {
    // SAFETY: getpwuid returns a pointer into static storage or null; the
    // name is copied out at once (the tests call it once, under OnceLock).
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*pw).pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

fn cpu_model() -> Option<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

fn clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The directory cargo builds into (the binary under test is in
/// `TARGET/release/`), wherever `CARGO_TARGET_DIR` put it.
fn target_dir() -> Option<String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_latscope"));
    Some(bin.parent()?.parent()?.to_string_lossy().into_owned())
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let [nodename, release, version, machine] = uname();
        let mut rules = vec![
            // Dates: RFC 2822 (rt-tests' start_time), ctime (`date`),
            // ISO 8601 / RFC 3339 (latscope's reports), then any weekday or
            // month name left with a day number beside it.
            rule(
                &format!(r"{WEEKDAY}, [ \d]?\d {MONTH} \d{{4}} \d\d:\d\d:\d\d [+-]\d{{4}}"),
                "<date>",
            ),
            rule(
                &format!(r"{WEEKDAY} {MONTH} [ \d]?\d \d\d:\d\d:\d\d(?: [A-Z]{{2,5}})? \d{{4}}"),
                "<date>",
            ),
            rule(
                r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?",
                "<date>",
            ),
            rule(
                &format!(r"\b{WEEKDAY}(?:day|sday|nesday|rsday|urday)?\b"),
                "<weekday>",
            ),
            rule(
                &format!(r"\b\d{{1,2}} {MONTH}\b|\b{MONTH} [ \d]?\d\b"),
                "<day> <month>",
            ),
            // The machine, by the fields that name it (rt-tests' and
            // latscope's JSON sysinfo).
            json_field("nodename|hostname|host", "<host>"),
            json_field("release|kernel_release", "<kernel-release>"),
            rule(
                r##"("version"\s*:\s*)"#[^"]*""##,
                r#"${1}"<kernel-version>""#,
            ),
            json_field("kernel_version", "<kernel-version>"),
            json_field("machine", "<machine>"),
            json_field("clocksource|clock_source", "<clocksource>"),
            json_field("cpu_model|model_name|model name", "<cpu-model>"),
            json_field("user|username", "<user>"),
            // Process and thread ids in rt-tests' lines: cyclictest's
            // `T: 0 (  592)` (`%5d`: a narrower field stays visible),
            // `# Thread Ids: 29624 29625`, `# Break thread: 29625`,
            // ptsematest's `ID9302`, the status object `/cyclictest<pid>`.
            rule(r"(T: *\d+ \()[ \d]{4,}\d\)", "${1}<pid>)"),
            rule(r"(# Thread Ids:)(?: \d+)+", "${1} <pids>"),
            rule(r"(# Break thread: )\d+", "${1}<pid>"),
            rule(r"\bID\d+\b", "ID<pid>"),
            rule(r"(/cyclictest)\d+\b", "${1}<pid>"),
            // A CLOCK_MONOTONIC timestamp: how long the machine has been up
            // (or what a faked clock says). cyclictest's spike lines print
            // it as `TS: %12ld`: a narrower field stays visible.
            rule(r"(TS: )[ \d]{11,}\d\b", "${1}<timestamp>"),
        ];
        // The same things by their values on this machine, wherever they
        // are printed. Longest first: a path holds shorter values.
        let mut values: Vec<(String, &str)> = vec![
            (env!("CARGO_MANIFEST_DIR").to_string(), "<checkout>"),
            (env!("CARGO_TARGET_TMPDIR").to_string(), "<target-tmp>"),
        ];
        values.extend(target_dir().map(|d| (d, "<target>")));
        values.extend(std::env::var("HOME").ok().map(|h| (h, "<home>")));
        let tmp = std::env::temp_dir().to_string_lossy().into_owned();
        // tempfile's directories and files: `/tmp/.tmpAbC123`.
        rules.push(rule(
            &format!(
                r"{}/\.tmp[A-Za-z0-9]{{6}}",
                regex::escape(tmp.trim_end_matches('/'))
            ),
            "<tmp>",
        ));
        values.extend([
            (version, "<kernel-version>"),
            (release, "<kernel-release>"),
            (nodename, "<host>"),
            (machine, "<machine>"),
        ]);
        values.extend(cpu_model().map(|m| (m, "<cpu-model>")));
        values.extend(clocksource().map(|c| (c, "<clocksource>")));
        values.extend(user_name().map(|u| (u, "<user>")));
        values.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        rules.extend(values.iter().filter_map(|(v, with)| literal(v, with)));
        rules
    })
}

/// `text` with everything the environment decides masked by what it is
/// (see the module comment); the rest untouched.
pub fn mask_environment(text: &str) -> String {
    rules().iter().fold(text.to_string(), |text, r| {
        r.pattern
            .replace_all(&text, |c: &Captures| {
                let mut out = String::new();
                c.expand(&r.with, &mut out);
                out
            })
            .into_owned()
    })
}

/// Every number of `line` becomes one `N`, whatever its width (the original
/// tools print measured numbers unpadded: ` %d`, ` %.3f` gives `N.N`); the
/// environment masked first.
pub fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in mask_environment(line).chars() {
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

/// Every run of digits and spaces that ends in a digit becomes as many `N`:
/// a number printed in a padded field keeps its field's width (the
/// environment masked first).
pub fn mask_padded(line: &str) -> String {
    fn flush(out: &mut String, run: &mut String) {
        let trailing = run.len() - run.trim_end_matches(' ').len();
        let body = &run[..run.len() - trailing];
        if body.chars().any(|c| c.is_ascii_digit()) {
            // Padding and separating spaces are counted in, so a field's
            // width is compared whatever the number.
            out.push_str(&"N".repeat(body.len()));
        } else {
            out.push_str(body);
        }
        out.push_str(&" ".repeat(trailing));
        run.clear();
    }
    let mut out = String::new();
    let mut run = String::new();
    for c in mask_environment(line).chars() {
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

/// Every number with the padding before it becomes one `N`: what a parser
/// of the line relies on (every character but the numbers), whatever the
/// numbers' widths (the environment masked first).
pub fn mask_unpadded(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in mask_environment(line).chars() {
        if c.is_ascii_digit() {
            if !in_number {
                // The padding of a right-aligned number is part of it.
                while out.ends_with(' ') {
                    out.pop();
                }
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}
