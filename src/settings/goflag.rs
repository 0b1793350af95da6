//! Go's `flag` package, as the cnf-tests runners (`oslat-runner`,
//! `cyclictest-runner`, `hwlatdetect-runner`, written in Go) read their
//! command line: `-name=value`, `--name=value`, `-name value` (not for a
//! boolean), a boolean alone (`-x`) or with `=` (`-x=false`); parsing stops
//! at the first word that is not a flag or after `--`; the last of a
//! repeated flag wins. Its answers are Go's: `flag provided but not
//! defined: -x`, `invalid value "v" for flag -x: parse error`, ..., each
//! followed by the usage (`Usage of NAME:` and one entry per flag, sorted),
//! exit 2; `-h`/`-help` print the usage and exit 0.

use std::collections::BTreeMap;

/// How a flag's value is read (Go's flag types).
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Int,
    Uint,
    String,
    Duration,
    /// A `flag.Value` of its own (klog's `-v`, `-stderrthreshold`, ...):
    /// the check returns the error Go's `Set` gives, and `zero` is what its
    /// zero value prints (a default equal to it is not shown).
    Value {
        check: fn(&str) -> Result<(), String>,
        zero: &'static str,
    },
}

/// One flag as `flag.String(name, default, usage)` declares it.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub usage: &'static str,
}

/// How Go's flag package ends without running the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoFlagUsage {
    /// `-h` or `-help`: the usage on standard error, exit 0.
    Help,
    /// The one line Go prints before the usage (exit 2).
    Bad(String),
}

/// The flags as given (each one's last value) and the words after them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub values: BTreeMap<&'static str, String>,
    pub rest: Vec<String>,
}

impl Parsed {
    /// The value of flag `name`: as given, else its default from `flags`.
    pub fn get<'a>(&'a self, flags: &'a [Flag], name: &str) -> &'a str {
        self.values
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| {
                flags
                    .iter()
                    .find(|f| f.name == name)
                    .map_or("", |f| f.default)
            })
    }
}

/// Parses `words` (the arguments after the program name) as
/// `flag.Parse` does with `flags`.
pub fn parse(flags: &[Flag], words: &[String]) -> Result<Parsed, GoFlagUsage> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        if word.len() < 2 || !word.starts_with('-') {
            break;
        }
        let dashes = if word.starts_with("--") { 2 } else { 1 };
        if word == "--" {
            i += 1;
            break;
        }
        let body = &word[dashes..];
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(GoFlagUsage::Bad(format!("bad flag syntax: {word}")));
        }
        i += 1;
        // The first '=' after the name's first character splits it.
        let (name, inline) = match body[1..].find('=') {
            Some(at) => (&body[..at + 1], Some(body[at + 2..].to_string())),
            None => (body, None),
        };
        let Some(flag) = flags.iter().find(|f| f.name == name) else {
            if name == "help" || name == "h" {
                return Err(GoFlagUsage::Help);
            }
            return Err(GoFlagUsage::Bad(format!(
                "flag provided but not defined: -{name}"
            )));
        };
        let value = if matches!(flag.kind, Kind::Bool) {
            let text = inline.unwrap_or_else(|| "true".to_string());
            if parse_bool(&text).is_none() {
                return Err(GoFlagUsage::Bad(format!(
                    "invalid boolean value {} for -{name}: parse error",
                    go_quote(&text)
                )));
            }
            text
        } else {
            let text = match inline {
                Some(v) => v,
                None if i < words.len() => {
                    i += 1;
                    words[i - 1].clone()
                }
                None => {
                    return Err(GoFlagUsage::Bad(format!("flag needs an argument: -{name}")));
                }
            };
            if let Err(why) = check(flag.kind, &text) {
                return Err(GoFlagUsage::Bad(format!(
                    "invalid value {} for flag -{name}: {why}",
                    go_quote(&text)
                )));
            }
            text
        };
        parsed.values.insert(flag.name, value);
    }
    parsed.rest = words[i..].to_vec();
    Ok(parsed)
}

/// Whether `text` is a value of `kind` (Go's `Set`), and Go's reason if not.
fn check(kind: Kind, text: &str) -> Result<(), String> {
    match kind {
        Kind::Bool => parse_bool(text).map(|_| ()).ok_or("parse error".into()),
        Kind::Int => parse_int(text).map(|_| ()).map_err(String::from),
        Kind::Uint => match parse_int(text) {
            Ok(n) if n >= 0 => Ok(()),
            Ok(_) => Err("parse error".into()),
            Err(e) => Err(e.into()),
        },
        Kind::String => Ok(()),
        Kind::Duration => parse_duration_ns(text)
            .map(|_| ())
            .ok_or("parse error".into()),
        Kind::Value { check, .. } => check(text),
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.ParseInt(text, 0, 64)` as `flag.Int` reads it: a sign,
/// then decimal, `0x`/`0o`/`0b`/leading-`0` octal, `_` between digits; the
/// error is the flag package's ("parse error", "value out of range").
pub fn parse_int(text: &str) -> Result<i64, &'static str> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    // Go's underscoreOK: an '_' only between two digits (a base prefix
    // counts as a digit).
    let mut after_digit = prefixed && digits.len() < lower.len();
    let mut after_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if !after_digit {
                return Err("parse error");
            }
            after_digit = false;
            after_underscore = true;
        } else {
            after_digit = true;
            after_underscore = false;
        }
    }
    if after_underscore {
        return Err("parse error");
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || !clean.chars().all(|c| c.is_digit(radix)) {
        return Err("parse error");
    }
    let magnitude = u128::from_str_radix(&clean, radix).map_err(|_| "value out of range")?;
    let limit = if negative {
        1u128 << 63
    } else {
        (1u128 << 63) - 1
    };
    if magnitude > limit {
        return Err("value out of range");
    }
    let magnitude = magnitude as i128;
    Ok(if negative { -magnitude } else { magnitude } as i64)
}

/// Go's `time.ParseDuration` in nanoseconds: `[-+]` then one or more
/// `NUMBER UNIT` (units ns, us, µs, μs, ms, s, m, h; a number may have a
/// fraction), or `0` alone. None where Go refuses (a bare number but 0, an
/// unknown unit, an overflow).
pub fn parse_duration_ns(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let frac_part = match rest.strip_prefix('.') {
            Some(after) => {
                let n = after.bytes().take_while(u8::is_ascii_digit).count();
                rest = &after[n..];
                Some(&after[..n])
            }
            None => None,
        };
        if int_part.is_empty() && frac_part.is_none_or(str::is_empty) {
            return None;
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(at, _)| at);
        let unit_ns: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        let mut ns = whole.checked_mul(unit_ns)?;
        if let Some(frac) = frac_part.filter(|f| !f.is_empty()) {
            // Go keeps the fraction's digits while they fit, then scales.
            let digits: String = frac.chars().take(18).collect();
            let scale = 10u128.pow(digits.len() as u32);
            let f: u128 = digits.parse().ok()?;
            ns = ns.checked_add(f * unit_ns / scale)?;
        }
        total = total.checked_add(ns)?;
        if total > (1u128 << 63) {
            return None;
        }
    }
    if !negative && total == 1u128 << 63 {
        return None;
    }
    let total = total as i128;
    Some(if negative { -total } else { total } as i64)
}

/// Go's `%q` of a string as the flag package's messages quote values: with
/// `"`, `\` and control characters escaped.
pub fn go_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The usage Go's `flag.Usage` prints: `Usage of PROGRAM:`, then each flag
/// (sorted by name) as `PrintDefaults` shows it.
pub fn usage(program: &str, flags: &[Flag]) -> String {
    let mut sorted: Vec<&Flag> = flags.iter().collect();
    sorted.sort_by_key(|f| f.name);
    let mut out = format!("Usage of {program}:\n");
    for flag in sorted {
        let mut entry = format!("  -{}", flag.name);
        let type_name = match flag.kind {
            Kind::Bool => "",
            Kind::Int => "int",
            Kind::Uint => "uint",
            Kind::String => "string",
            Kind::Duration => "duration",
            Kind::Value { .. } => "value",
        };
        if !type_name.is_empty() {
            entry.push(' ');
            entry.push_str(type_name);
        }
        // A one-letter boolean keeps its usage on the same line.
        entry.push_str(if entry.len() <= 4 { "\t" } else { "\n    \t" });
        entry.push_str(&flag.usage.replace('\n', "\n    \t"));
        let zero = match flag.kind {
            Kind::Bool => "false",
            Kind::Int | Kind::Uint => "0",
            Kind::String => "",
            Kind::Duration => "0s",
            Kind::Value { zero, .. } => zero,
        };
        if flag.default != zero {
            if matches!(flag.kind, Kind::String) {
                entry.push_str(&format!(" (default {})", go_quote(flag.default)));
            } else {
                entry.push_str(&format!(" (default {})", flag.default));
            }
        }
        out.push_str(&entry);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(text: &str) -> Result<(), String> {
        text.parse::<i32>()
            .map(|_| ())
            .map_err(|_| "bad level".into())
    }

    const FLAGS: &[Flag] = &[
        Flag {
            name: "runtime",
            kind: Kind::String,
            default: "10m",
            usage: "Specify test duration",
        },
        Flag {
            name: "delay",
            kind: Kind::Int,
            default: "0",
            usage: "delay in second",
        },
        Flag {
            name: "x",
            kind: Kind::Bool,
            default: "false",
            usage: "a boolean",
        },
        Flag {
            name: "logtostderr",
            kind: Kind::Bool,
            default: "true",
            usage: "log to standard error",
        },
        Flag {
            name: "window",
            kind: Kind::Duration,
            default: "1s",
            usage: "time between samples",
        },
        Flag {
            name: "v",
            kind: Kind::Value {
                check: level,
                zero: "0",
            },
            default: "0",
            usage: "number for the log level verbosity",
        },
    ];

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn p(line: &str) -> Result<Parsed, GoFlagUsage> {
        parse(FLAGS, &words(line))
    }

    fn bad(line: &str) -> String {
        match p(line) {
            Err(GoFlagUsage::Bad(m)) => m,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn every_spelling_go_accepts() {
        for line in [
            "-runtime=5m",
            "--runtime=5m",
            "-runtime 5m",
            "--runtime 5m",
            "-runtime=1m -runtime=5m",
        ] {
            let parsed = p(line).unwrap();
            assert_eq!(parsed.get(FLAGS, "runtime"), "5m", "{line}");
            assert!(parsed.rest.is_empty(), "{line}");
        }
        let parsed = p("-x -logtostderr=false -delay=0x10 -window 1h2m3s").unwrap();
        assert_eq!(parsed.get(FLAGS, "x"), "true");
        assert_eq!(parsed.get(FLAGS, "logtostderr"), "false");
        assert_eq!(parsed.get(FLAGS, "delay"), "0x10");
        assert_eq!(parsed.get(FLAGS, "window"), "1h2m3s");
        // Defaults where nothing is given.
        let parsed = p("").unwrap();
        assert_eq!(parsed.get(FLAGS, "runtime"), "10m");
        assert_eq!(parsed.get(FLAGS, "logtostderr"), "true");
        // A boolean takes no separate word: `false` ends the flags.
        let parsed = p("-x false -runtime=1s").unwrap();
        assert_eq!(parsed.get(FLAGS, "x"), "true");
        assert_eq!(parsed.rest, ["false", "-runtime=1s"]);
        // `--` and the first non-flag word end the flags; `-` is a word.
        assert_eq!(p("-- -x").unwrap().rest, ["-x"]);
        assert_eq!(p("stray -x").unwrap().rest, ["stray", "-x"]);
        assert_eq!(p("- -x").unwrap().rest, ["-", "-x"]);
        // An '=' right after the dash is bad syntax, a later one splits.
        assert_eq!(p("-runtime==5").unwrap().get(FLAGS, "runtime"), "=5");
    }

    #[test]
    fn every_refusal_is_gos_line() {
        assert_eq!(bad("-bogus"), "flag provided but not defined: -bogus");
        assert_eq!(bad("--bogus=1"), "flag provided but not defined: -bogus");
        assert_eq!(bad("-runtime"), "flag needs an argument: -runtime");
        assert_eq!(bad("---x"), "bad flag syntax: ---x");
        assert_eq!(bad("-=x"), "bad flag syntax: -=x");
        assert_eq!(
            bad("-delay=ten"),
            "invalid value \"ten\" for flag -delay: parse error"
        );
        assert_eq!(
            bad("-delay 99999999999999999999"),
            "invalid value \"99999999999999999999\" for flag -delay: value out of range"
        );
        assert_eq!(
            bad("-x=maybe"),
            "invalid boolean value \"maybe\" for -x: parse error"
        );
        assert_eq!(
            bad("-window=5"),
            "invalid value \"5\" for flag -window: parse error"
        );
        assert_eq!(bad("-v=x"), "invalid value \"x\" for flag -v: bad level");
        assert_eq!(p("-h"), Err(GoFlagUsage::Help));
        assert_eq!(p("--help"), Err(GoFlagUsage::Help));
    }

    #[test]
    fn go_integers() {
        assert_eq!(parse_int("42"), Ok(42));
        assert_eq!(parse_int("-42"), Ok(-42));
        assert_eq!(parse_int("+7"), Ok(7));
        assert_eq!(parse_int("0x1F"), Ok(31));
        assert_eq!(parse_int("010"), Ok(8));
        assert_eq!(parse_int("0o17"), Ok(15));
        assert_eq!(parse_int("0b101"), Ok(5));
        assert_eq!(parse_int("0x_1f"), Ok(31));
        assert_eq!(parse_int("0"), Ok(0));
        assert_eq!(parse_int("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_int("9223372036854775808"), Err("value out of range"));
        assert_eq!(parse_int("1_000"), Ok(1000));
        for bad in [
            "", "-", "_1", "1_", "1__0", "08", "0x", "1.5", " 1", "ten", "0x__1",
        ] {
            assert_eq!(parse_int(bad), Err("parse error"), "{bad:?}");
        }
    }

    #[test]
    fn go_durations() {
        let ms = 1_000_000;
        assert_eq!(parse_duration_ns("1h2m3s"), Some(3_723_000 * ms));
        assert_eq!(parse_duration_ns("500ms"), Some(500 * ms));
        assert_eq!(parse_duration_ns("1.5h"), Some(5_400_000 * ms));
        assert_eq!(parse_duration_ns("-1.5s"), Some(-1500 * ms));
        assert_eq!(parse_duration_ns(".5s"), Some(500 * ms));
        assert_eq!(parse_duration_ns("10us"), Some(10_000));
        assert_eq!(parse_duration_ns("10µs"), Some(10_000));
        assert_eq!(parse_duration_ns("3ns"), Some(3));
        assert_eq!(parse_duration_ns("0"), Some(0));
        assert_eq!(parse_duration_ns("-0"), Some(0));
        for bad in ["", "5", "1d", "s", "1.s.", ".s", "1h-2m", "3000000h"] {
            assert_eq!(parse_duration_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_usage_is_print_defaults() {
        assert_eq!(
            usage("oslat-runner", FLAGS),
            "Usage of oslat-runner:\n\
             \x20 -delay int\n\
             \x20   \tdelay in second\n\
             \x20 -logtostderr\n\
             \x20   \tlog to standard error (default true)\n\
             \x20 -runtime string\n\
             \x20   \tSpecify test duration (default \"10m\")\n\
             \x20 -v value\n\
             \x20   \tnumber for the log level verbosity\n\
             \x20 -window duration\n\
             \x20   \ttime between samples (default 1s)\n\
             \x20 -x\ta boolean\n"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(ws in proptest::collection::vec("[-=a-z0-9_.x]{0,8}", 0..6)) {
            let _ = parse(FLAGS, &ws);
            for w in &ws {
                let _ = parse_int(w);
                let _ = parse_duration_ns(w);
            }
        }
    }
}
