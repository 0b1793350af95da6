//! Parsing and printing of the quantities users type and read: durations and
//! latencies. Kept free of I/O so that every rule here is unit-tested exactly.

use std::time::{Duration, SystemTime};

pub mod values;

/// Longest piece of user input echoed back in an error message.
const MAX_SHOWN_INPUT: usize = 64;

/// User input as an error message shows it: on one line (control characters
/// escaped) and cut to a readable length, so an error stays one line whatever
/// was typed.
pub fn shown(input: &str) -> String {
    match input.char_indices().nth(MAX_SHOWN_INPUT) {
        Some((cut, _)) => escape_line(&input[..cut]) + "...",
        None => escape_line(input),
    }
}

/// Why a duration string was refused; rendered into the one-line usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration (examples: 30, 10s, 5m, 1h30m)")]
    Empty,
    #[error("'{0}' is not a duration (examples: 30, 10s, 5m, 2h, 1d, 1h30m, 0.5m)")]
    Malformed(String),
    #[error("unknown unit '{unit}' in '{text}' (use s, m, h or d)")]
    UnknownUnit { text: String, unit: String },
    #[error("'{0}' is too long (more than 100 years)")]
    TooLong(String),
}

/// Nanoseconds in one `unit` of a duration, for every duration latscope
/// reads (run times here, latency thresholds in `threshold`): one table, so
/// the two parsers cannot drift apart on what a unit means.
pub fn duration_unit_ns(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    })
}

/// Parses a duration as pmqtest's `-D` does, and more: a bare number is seconds,
/// `s`/`m`/`h`/`d` suffixes scale it, parts may be chained (`1h30m`) and each part
/// may have a fraction (`0.5m`). The result is exact to the nanosecond.
/// `bare_unit_ns` is the unit of a number without suffix (seconds for `-D`).
pub fn parse_duration(text: &str, bare_unit_ns: u128) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(DurationError::Empty);
    }
    let malformed = || DurationError::Malformed(shown(text));
    let mut total_ns: u128 = 0;
    let mut rest = trimmed;
    let mut parts = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return Err(malformed());
        }
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "" if parts == 0 && after.is_empty() => bare_unit_ns,
            "" => return Err(malformed()),
            other => duration_unit_ns(other).ok_or_else(|| DurationError::UnknownUnit {
                text: shown(text),
                unit: shown(other),
            })?,
        };
        total_ns = total_ns
            .checked_add(
                scale_to_ns(number, unit_ns, SubNanosecond::Truncate).ok_or_else(malformed)?,
            )
            .ok_or_else(|| DurationError::TooLong(shown(text)))?;
        parts += 1;
        rest = after;
    }
    const HUNDRED_YEARS_NS: u128 = 100 * 365 * 86_400_000_000_000;
    if total_ns > HUNDRED_YEARS_NS {
        return Err(DurationError::TooLong(shown(text)));
    }
    Ok(Duration::from_nanos(total_ns as u64))
}

/// `number` (digits with at most one '.') times `unit_ns`, computed in integers so
/// that `0.1s` is exactly 100 ms and `0.99999999999m` is 59999999999 ns.
/// Fraction digits beyond the 18th (far below a nanosecond) are ignored.
/// How `scale_to_ns` treats what lies below a nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubNanosecond {
    /// Dropped: a run time never exceeds what was typed (`-D 0.0000000019s`
    /// is 1 ns).
    Truncate,
    /// Rounded to the nearest, halves up: a latency limit is compared with
    /// nanosecond samples (`--fail-if max>1.5ns` is 2 ns).
    Round,
}

/// `number` (digits with at most one `.`) times `unit_ns`, in nanoseconds,
/// in integers: a value printed in nanoseconds reads back as the same number
/// (through f64, anything above 2^53 ns drifted). The one scaler of every
/// duration latscope reads (run times here, latency thresholds in
/// `threshold`). `None` when `number` is malformed or the result does not fit.
pub fn scale_to_ns(number: &str, unit_ns: u128, below_ns: SubNanosecond) -> Option<u128> {
    // 24 fraction digits are far below a nanosecond for every unit; the rest
    // cannot change the rounding but at an exact half, which rounds up anyway.
    const MAX_FRACTION_DIGITS: usize = 24;
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty()) || !digits(int_part) || !digits(frac_part) {
        return None;
    }
    // Leading zeros carry nothing (and must not make a long number unreadable).
    let int_part = int_part.trim_start_matches('0');
    let int_value: u128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().ok()?
    };
    let frac_digits = &frac_part[..frac_part.len().min(MAX_FRACTION_DIGITS)];
    let fraction_ns = if frac_digits.is_empty() {
        0
    } else {
        // numerator * unit * 2 < 10^24 * 8.64e13 * 2, inside u128.
        let numerator: u128 = frac_digits.parse().ok()?;
        let scale = 10u128.pow(frac_digits.len() as u32);
        match below_ns {
            SubNanosecond::Truncate => numerator * unit_ns / scale,
            SubNanosecond::Round => (numerator * unit_ns * 2 + scale) / (2 * scale),
        }
    };
    int_value.checked_mul(unit_ns)?.checked_add(fraction_ns)
}

/// `n` and its noun, singular for one: `1 pair`, `2 pairs`, `0 samples`.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The width every warning and note of latscope's own output fits: a
/// 100-column terminal.
pub const TERMINAL_COLUMNS: usize = 100;

/// `text` with each of its lines broken at blanks into lines of at most
/// `TERMINAL_COLUMNS` columns (characters); continuation lines are indented
/// by two blanks, so a wrapped warning still reads as one. A word longer
/// than a line (a path) stays whole on a line of its own. No trailing
/// line feed is added.
pub fn wrap_line(text: &str) -> String {
    wrap_to(
        text,
        fit_columns().map_or(TERMINAL_COLUMNS, |w| w.min(TERMINAL_COLUMNS)),
    )
}

/// `text` wrapped as `wrap_line` does when the output is being fitted to a
/// width (`fit_columns`), else unchanged: for the lines (a test's title)
/// that scripts reading a pipe have always had on one line.
pub fn fit_line(text: &str) -> String {
    match fit_columns() {
        Some(width) => wrap_to(text, width),
        None => text.to_string(),
    }
}

/// The width the console's tables and notes are fitted to; 0 means "do not
/// fit" (standard output is no terminal, or `--wide`). Set once, before
/// anything is printed, by the command (`set_fit_columns`): the exporters
/// read it rather than each taking a width through every layer.
static FIT_COLUMNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Fit the console output to `columns` from now on (None: print it full width).
pub fn set_fit_columns(columns: Option<usize>) {
    FIT_COLUMNS.store(columns.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
}

/// The width to fit tables and notes to, None when they print full width.
pub fn fit_columns() -> Option<usize> {
    match FIT_COLUMNS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// `text` broken at blanks into lines of at most `width` columns, continuation
/// lines indented by two blanks (see `wrap_line`).
pub fn wrap_to(text: &str, width: usize) -> String {
    const INDENT: &str = "  ";
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let mut column = 0;
        let mut words_on_line = 0;
        for word in line.split(' ').filter(|w| !w.is_empty()) {
            let len = word.chars().count();
            if words_on_line > 0 && column + 1 + len > width {
                out.push('\n');
                out.push_str(INDENT);
                column = INDENT.len();
                words_on_line = 0;
            } else if words_on_line > 0 {
                out.push(' ');
                column += 1;
            }
            out.push_str(word);
            column += len;
            words_on_line += 1;
        }
    }
    out
}

/// Formats nanoseconds with an automatic unit and three significant digits where
/// that helps: `850 ns`, `12.3 us`, `1.23 ms`, `2.50 s`.
pub fn format_ns(signed_ns: i64) -> String {
    if signed_ns < 0 {
        return format!("-{}", format_ns_magnitude(signed_ns.unsigned_abs()));
    }
    format_ns_magnitude(signed_ns as u64)
}

fn format_ns_magnitude(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "us"), (1e6, "ms"), (1e9, "s")];
    let mut unit = if ns < 1_000_000 {
        0
    } else if ns < 1_000_000_000 {
        1
    } else {
        2
    };
    loop {
        let (scale, name) = UNITS[unit];
        let shown = three_significant(ns as f64 / scale);
        // 999,932 ns rounds to 1000 us: that is 1.00 ms.
        if unit + 1 < UNITS.len() && shown.parse::<f64>().is_ok_and(|v| v >= 1000.0) {
            unit += 1;
            continue;
        }
        return format!("{shown} {name}");
    }
}

/// `value` with three significant digits (at least 1): the decimals are
/// chosen for the value as it rounds, so 9.996 is `10.0`, not `10.00`.
fn three_significant(value: f64) -> String {
    let two = format!("{value:.2}");
    if two.parse::<f64>().is_ok_and(|v| v < 10.0) {
        return two;
    }
    let one = format!("{value:.1}");
    if one.parse::<f64>().is_ok_and(|v| v < 100.0) {
        return one;
    }
    format!("{value:.0}")
}

/// Nanoseconds to whole microseconds, rounded to nearest (halves away from
/// zero), as the classic tools print them.
pub fn ns_to_us_rounded(ns: i64) -> i64 {
    if ns < 0 {
        -(((ns.unsigned_abs() + 500) / 1000) as i64)
    } else {
        (ns + 500) / 1000
    }
}

/// A compact human form of a duration for tables and headers: `1h30m`, `250ms`.
pub fn format_duration(duration: Duration) -> String {
    let ns = duration.as_nanos();
    if ns == 0 {
        return "0s".to_string();
    }
    if !ns.is_multiple_of(1_000_000_000) || ns < 1_000_000_000 {
        return format_ns(ns.min(i64::MAX as u128) as i64).replace(' ', "");
    }
    let mut secs = duration.as_secs();
    let mut out = String::new();
    for (unit, size) in [("d", 86_400u64), ("h", 3_600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

/// A run time for people, in the style the console headers use (`12.0 s`):
/// seconds with one decimal (`0.9 s`, `6.0 s`); below 0.1 s in whole
/// milliseconds (`10 ms`), which one decimal of a second would show as
/// `0.0 s`. `format_duration` is the exact form that reads back as an
/// option value (`869ms`, `1h30m`).
pub fn format_run_time(duration: Duration) -> String {
    if duration < Duration::from_millis(95) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// A size in binary units for people: `512 B`, `64 KiB`, `8 MiB`, `1.5 GiB`
/// (whole numbers without decimals).
pub fn format_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut scale = 0;
    while scale + 1 < units.len() && bytes >= 1u64 << (10 * (scale + 1)) {
        scale += 1;
    }
    let divisor = 1u64 << (10 * scale);
    if bytes.is_multiple_of(divisor) {
        format!("{} {}", bytes / divisor, units[scale])
    } else {
        format!("{:.1} {}", bytes as f64 / divisor as f64, units[scale])
    }
}

// ---- CPU lists (the kernel's syntax, `0-3,8`), both directions

/// The highest CPU number Linux can have (`CONFIG_NR_CPUS` is at most 8192).
pub const HIGHEST_KERNEL_CPU: usize = 8191;

/// Parses a kernel CPU list like `0-3,8,10-11`, with the kernel's stride
/// form too (`0-15:2/4`: of every group of 4 from 0 to 15, the first 2, as
/// `bitmap_parselist` reads a cpuset written that way). A CPU beyond
/// `HIGHEST_KERNEL_CPU` makes it invalid: no range can make it allocate
/// without bound (`0-18446744073709551615` once tried to).
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    let cpu = |t: &str| t.trim().parse().ok().filter(|&n| n <= HIGHEST_KERNEL_CPU);
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (range, stride) = match part.split_once(':') {
            Some((range, stride)) => {
                let (used, group) = stride.split_once('/')?;
                let (used, group): (usize, usize) = (cpu(used)?, cpu(group)?);
                if used == 0 || group == 0 || used > group {
                    return None;
                }
                (range, Some((used, group)))
            }
            None => (part, None),
        };
        match range.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (cpu(a)?, cpu(b)?);
                if a > b {
                    return None;
                }
                let (used, group) = stride.unwrap_or((1, 1));
                cpus.extend((a..=b).filter(|c| (c - a) % group < used));
            }
            None if stride.is_none() => cpus.push(cpu(range)?),
            None => return None,
        }
    }
    Some(cpus)
}

/// A CPU set in the kernel's list syntax: `0-3,8` (parse_cpu_list's inverse).
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut ranges: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        ranges.push(if sorted[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", sorted[i])
        });
        i += 1;
    }
    ranges.join(",")
}

// ---- timestamps

/// RFC 3339 timestamp (UTC, second resolution) for the latscope report.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// rt-tests' timestamp, `%a, %d %b %Y %T %z` in local time (RFC 2822).
/// The one call into libc in this module: the local time zone is a
/// formatting input here, as strftime takes it.
pub fn rfc2822_local(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let mut buf = [0u8; 64];
    // SAFETY: valid pointers; strftime writes at most buf.len() bytes including NUL.
    let len = unsafe {
        libc::localtime_r(&secs, &mut tm);
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a, %d %b %Y %T %z".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// Console text with every control character but the line feed escaped
/// (`\u{1b}` for ESC, C1 controls included), for output that carries input
/// data (names and labels read from a report), so that a terminal escape in
/// a file cannot drive the user's terminal.
pub fn escape_controls(text: &str) -> String {
    escape(text, true)
}

/// `escape_controls` for one line: the line feed escaped too (`\n`), so
/// that input data in a message can neither drive the terminal nor start a
/// line of its own. THE escaping of every error line (entry::exit_code:
/// whatever a message quotes, a test name, a label, a JSON value in serde's
/// words, a path), of input echoed in a usage error (units::shown) and of
/// the names and labels `latscope samples` writes.
pub fn escape_line(text: &str) -> String {
    escape(text, false)
}

/// Whether `c` is escaped in a message: a control character (C0, DEL, C1),
/// or one that reorders or breaks what the terminal shows without being a
/// control: the bidirectional marks, embeddings, overrides and isolates
/// (U+202E turns `gpj.exe` into what reads as `exe.jpg`) and the Unicode
/// line and paragraph separators (a line break in some terminals).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}'
        )
}

fn escape(text: &str, keep_newlines: bool) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) && !(keep_newlines && c == '\n') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(counted(1, "pair"), "1 pair");
        assert_eq!(counted(2, "pair"), "2 pairs");
        assert_eq!(counted(0, "sample"), "0 samples");
    }

    #[test]
    fn lines_wrap_at_blanks_within_the_width_with_indented_continuations() {
        assert_eq!(wrap_to("short line", 10), "short line");
        assert_eq!(wrap_to("aaa bbb ccc ddd", 9), "aaa bbb\n  ccc ddd");
        assert_eq!(
            wrap_to("aaaa bbbb cccc dddd eeee", 10),
            "aaaa bbbb\n  cccc\n  dddd\n  eeee"
        );
        // A word longer than the width stays whole, alone on its line.
        assert_eq!(
            wrap_to("a /very/long/path b", 6),
            "a\n  /very/long/path\n  b"
        );
        // Each line of a text is wrapped on its own; short ones unchanged.
        assert_eq!(wrap_to("ab\naaa bbb ccc", 7), "ab\naaa bbb\n  ccc");
        assert_eq!(wrap_to("ab cd efgh", 6), "ab cd\n  efgh");
        let long = format!("warning: {}", "word ".repeat(40));
        for line in wrap_line(long.trim_end()).lines() {
            assert!(line.chars().count() <= TERMINAL_COLUMNS, "{line}");
        }
        assert_eq!(wrap_line(&"x".repeat(100)), "x".repeat(100));
    }

    #[test]
    fn one_line_escapes_the_line_feed_too() {
        assert_eq!(
            escape_line("a\u{1b}]0;x\u{7}b\nc\u{85}"),
            "a\\u{1b}]0;x\\u{7}b\\nc\\u{85}"
        );
        assert_eq!(escape_line("plain é"), "plain é");
    }

    /// The bidi controls reorder what a terminal shows (U+202E makes
    /// `gpj.exe` read as `exe.jpg`): escaped like any control, in both forms.
    #[test]
    fn bidi_controls_and_separators_are_escaped() {
        assert_eq!(escape_line("a\u{202e}gpj.exe"), "a\\u{202e}gpj.exe");
        for c in [
            '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{2028}', '\u{2029}',
        ] {
            let text = format!("x{c}y");
            let want = format!("x\\u{{{:x}}}y", c as u32);
            assert_eq!(escape_line(&text), want);
            assert_eq!(escape_controls(&text), want);
        }
        // Letters of right-to-left scripts are text, not controls.
        assert_eq!(escape_line("שלום عربي"), "שלום عربي");
    }

    #[test]
    fn controls_are_escaped_lines_kept() {
        assert_eq!(
            escape_controls("a\u{1b}[2Jb\n\u{9b}c\td\r"),
            "a\\u{1b}[2Jb\n\\u{9b}c\\td\\r"
        );
    }

    const SEC: u128 = 1_000_000_000;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(64 * 1024), "64 KiB");
        assert_eq!(format_bytes(8 << 20), "8 MiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(2_097_148 * 1024), "2.0 GiB");
    }

    fn secs(text: &str) -> Result<Duration, DurationError> {
        parse_duration(text, SEC)
    }

    #[test]
    fn bare_numbers_use_the_given_unit() {
        assert_eq!(secs("30").unwrap(), Duration::from_secs(30));
        assert_eq!(
            parse_duration("250", 1_000).unwrap(),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn suffixes_and_compounds() {
        assert_eq!(secs("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(secs("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(secs("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(secs("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(secs("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(secs("1d2h3m4s").unwrap(), Duration::from_secs(93_784));
        assert_eq!(secs("250ms").unwrap(), Duration::from_millis(250));
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(secs("0.5m").unwrap(), Duration::from_secs(30));
        assert_eq!(secs("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(secs("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(secs(".25h").unwrap(), Duration::from_secs(900));
        assert_eq!(secs("0.000000001s").unwrap(), Duration::from_nanos(1));
    }

    #[test]
    fn long_fractions_are_exact() {
        assert_eq!(
            secs("0.99999999999m").unwrap(),
            Duration::from_nanos(59_999_999_999)
        );
        assert_eq!(secs("0.000000000009h").unwrap(), Duration::from_nanos(32));
        assert_eq!(
            secs("0.1234567890123456789999s").unwrap(),
            Duration::from_nanos(123_456_789)
        );
    }

    #[test]
    fn input_is_shown_on_one_short_line() {
        assert_eq!(shown("5x"), "5x");
        assert_eq!(shown("3\nx"), "3\\nx");
        assert_eq!(shown("a\tb"), "a\\tb");
        let long = "9".repeat(1000);
        assert_eq!(shown(&long).len(), 64 + 3);
        assert!(!format!("{}", secs("1\n2").unwrap_err()).contains('\n'));
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(secs(""), Err(DurationError::Empty));
        assert!(matches!(secs("-5"), Err(DurationError::Malformed(_))));
        assert!(matches!(secs("abc"), Err(DurationError::Malformed(_))));
        assert!(matches!(secs("1.2.3s"), Err(DurationError::Malformed(_))));
        assert!(matches!(secs("."), Err(DurationError::Malformed(_))));
        assert!(matches!(secs("5m30"), Err(DurationError::Malformed(_))));
        assert!(matches!(
            secs("10x"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            secs("10 s"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            secs("99999999999999999999999999999999999999d"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(secs("40000d"), Err(DurationError::TooLong(_))));
    }

    #[test]
    fn latency_formatting_picks_units() {
        assert_eq!(format_ns(0), "0 ns");
        assert_eq!(format_ns(999), "999 ns");
        assert_eq!(format_ns(1_000), "1.00 us");
        assert_eq!(format_ns(12_345), "12.3 us");
        assert_eq!(format_ns(123_456), "123 us");
        assert_eq!(format_ns(1_234_567), "1.23 ms");
        assert_eq!(format_ns(2_500_000_000), "2.50 s");
        assert_eq!(format_ns(-850), "-850 ns");
        assert_eq!(format_ns(-12_345), "-12.3 us");
        // At a unit's end a value that rounds up takes the next unit, and
        // one that rounds up a decade keeps three significant digits.
        assert_eq!(format_ns(999_932), "1.00 ms");
        assert_eq!(format_ns(999_499), "999 us");
        assert_eq!(format_ns(999_600), "1.00 ms");
        assert_eq!(format_ns(999_999_999), "1.00 s");
        assert_eq!(format_ns(999_400_000), "999 ms");
        assert_eq!(format_ns(9_994), "9.99 us");
        assert_eq!(format_ns(9_996), "10.0 us");
        assert_eq!(format_ns(99_949), "99.9 us");
        assert_eq!(format_ns(99_960), "100 us");
        assert_eq!(format_ns(-999_932), "-1.00 ms");
        assert_eq!(format_ns(i64::MAX), "9223372037 s");
    }

    #[test]
    fn microsecond_rounding_is_half_up() {
        assert_eq!(ns_to_us_rounded(0), 0);
        assert_eq!(ns_to_us_rounded(499), 0);
        assert_eq!(ns_to_us_rounded(500), 1);
        assert_eq!(ns_to_us_rounded(1_499), 1);
        assert_eq!(ns_to_us_rounded(2_500), 3);
        assert_eq!(ns_to_us_rounded(-499), 0);
        assert_eq!(ns_to_us_rounded(-2_500), -3);
    }

    #[test]
    fn durations_print_compactly() {
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::from_secs(10)), "10s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_micros(100)), "100us");
        assert_eq!(format_run_time(Duration::from_millis(869)), "0.9 s");
        assert_eq!(format_run_time(Duration::from_secs(10)), "10.0 s");
        assert_eq!(format_run_time(Duration::from_millis(95)), "0.1 s");
        assert_eq!(format_run_time(Duration::from_millis(94)), "94 ms");
        assert_eq!(format_run_time(Duration::from_millis(10)), "10 ms");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("0-18446744073709551615"), None);
        assert_eq!(parse_cpu_list("8191").map(|c| c.len()), Some(1));
        assert_eq!(parse_cpu_list("8192"), None);
        // The kernel's stride form (bitmap_parselist): 2 of every 4.
        assert_eq!(parse_cpu_list("0-11:2/4"), Some(vec![0, 1, 4, 5, 8, 9]));
        assert_eq!(parse_cpu_list("2-9:1/2,12"), Some(vec![2, 4, 6, 8, 12]));
        assert_eq!(parse_cpu_list("0-7:0/4"), None);
        assert_eq!(parse_cpu_list("0-7:5/4"), None);
        assert_eq!(parse_cpu_list("3:1/2"), None);
        assert_eq!(parse_cpu_list("0-7:2"), None);
    }

    #[test]
    fn rfc2822_has_the_rt_tests_shape() {
        let s =
            rfc2822_local(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 365));
        // e.g. "Fri, 01 Jan 1971 00:00:00 +0000"
        let parts: Vec<&str> = s.split(' ').collect();
        assert_eq!(parts.len(), 6, "{s}");
        assert!(parts[0].ends_with(','));
        assert!(parts[5].starts_with('+') || parts[5].starts_with('-'));
    }
}
