//! GNU `getopt_long` as the rt-tests programs latscope stands in for
//! (cyclictest, oslat, ptsematest, signaltest) read their command lines, and the
//! parsers of the values they share: C's `atoi`, rt-tests'
//! `parse_time_string` and libnuma's `numa_parse_cpustring_all` (the CPU
//! lists of `-a`, `--mainaffinity` and oslat's `-c`). clap cannot express
//! these tools' optional arguments and abbreviations; scripts depend on
//! exactly these spellings, so each tool gives its option table to this one
//! engine.

use std::time::Duration;

/// How parsing ended when it did not give settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetoptUsage {
    /// getopt's own complaint (`invalid option -- 'Z'`): cyclictest prints
    /// it on stderr, then its usage on stdout, and exits 0.
    Getopt(String),
    /// A value cyclictest refuses (`display_help(1)`): the `WARN:` lines
    /// given on stderr, the usage on stdout, exit 1.
    Invalid(Vec<String>),
    /// cyclictest's `fatal()`: `FATAL: ` and the line on stderr, exit 1.
    Fatal(String),
    /// A value latscope refuses where cyclictest would misbehave (an
    /// interval of 0 spins forever): one line, exit 2.
    Bad(String),
    /// `--help`: the usage on stdout, exit 0, as cyclictest.
    Help,
}

/// How a getopt tool ends without measuring: what it prints and its exit
/// code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl GetoptUsage {
    /// How cyclictest and signaltest answer help and their usage errors:
    /// getopt's complaint (after `program: `), refused values' lines or
    /// `FATAL: ` on stderr, `usage` on stdout (not after FATAL), the exit
    /// code; `Err`: latscope's own refusal (one line, exit 2).
    pub fn answer(self, program: &str, usage: &str) -> Result<Answer, String> {
        let (lines, with_usage, code) = match self {
            GetoptUsage::Getopt(message) => (vec![format!("{program}: {message}")], true, 0),
            GetoptUsage::Help => (Vec::new(), true, 0),
            GetoptUsage::Invalid(lines) => (lines, true, 1),
            GetoptUsage::Fatal(message) => (vec![format!("FATAL: {message}")], false, 1),
            GetoptUsage::Bad(message) => return Err(message),
        };
        Ok(Answer {
            stdout: if with_usage {
                usage.to_string()
            } else {
                String::new()
            },
            stderr: lines.iter().map(|l| format!("{l}\n")).collect(),
            code,
        })
    }
}

/// Whether an option takes a value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    No,
    Required,
    /// Attached (`-t4`, `--threads=4`) or, as cyclictest does by hand, the
    /// next word when it looks like a value (see `cyclictest_peek`).
    Optional,
}

/// One option of a getopt tool: how getopt reads it, and its lines in the
/// tool's usage text (as ripgrep's flag table drives parsing and help, so
/// that an option and its documentation are written once, side by side).
pub struct GetoptOption {
    pub long: &'static str,
    pub short: Option<char>,
    pub arg: Arg,
    /// Its lines in the usage, byte for byte as the tool prints them
    /// (padding, tabs and typos included); empty when the usage does not
    /// list it.
    pub usage: &'static str,
}

impl GetoptOption {
    pub const fn new(
        long: &'static str,
        short: Option<char>,
        arg: Arg,
        usage: &'static str,
    ) -> GetoptOption {
        GetoptOption {
            long,
            short,
            arg,
            usage,
        }
    }
}

/// A piece of a tool's usage text, in the order the tool prints them: its
/// own words, or the lines of the option of that long name.
pub enum UsagePart {
    Text(&'static str),
    Option(&'static str),
}

/// The usage text of `layout`, each option's part taken from `options`.
/// A layout naming an option the table lacks is a programming error, which
/// each tool's unit tests catch (`check_usage_layout`).
pub fn render_usage(options: &[GetoptOption], layout: &[UsagePart]) -> String {
    layout
        .iter()
        .map(|part| match part {
            UsagePart::Text(text) => *text,
            UsagePart::Option(name) => options
                .iter()
                .find(|o| o.long == *name)
                .map_or("", |o| o.usage),
        })
        .collect()
}

/// What is wrong with a tool's usage layout: an option the layout names
/// that the table lacks, one listed twice, or a table row with usage lines
/// that the layout never prints. Empty when the two agree.
pub fn check_usage_layout(options: &[GetoptOption], layout: &[UsagePart]) -> Vec<String> {
    let named: Vec<&str> = layout
        .iter()
        .filter_map(|p| match p {
            UsagePart::Option(name) => Some(*name),
            UsagePart::Text(_) => None,
        })
        .collect();
    let mut faults = Vec::new();
    for (i, name) in named.iter().enumerate() {
        match options.iter().find(|o| o.long == *name) {
            None => faults.push(format!("the layout names --{name}, which the table lacks")),
            Some(o) if o.usage.is_empty() => faults.push(format!(
                "the layout names --{name}, which has no usage lines"
            )),
            Some(_) if named[..i].contains(name) => {
                faults.push(format!("the layout names --{name} twice"))
            }
            Some(_) => {}
        }
    }
    for o in options {
        if !o.usage.is_empty() && !named.contains(&o.long) {
            faults.push(format!("--{}'s usage lines are never printed", o.long));
        }
    }
    faults
}

/// The options found, each at its last place with its last value: the
/// rt-tests tools keep one variable per option, which a repeated option
/// overwrites, and check it once the whole command line is read, so only
/// the value that counts may be refused (`-l -1 -l 5` runs 5 loops).
/// `repeatable` options (latscope's actions) keep every occurrence.
pub fn last_of_each(
    found: Vec<(&'static str, Option<String>)>,
    repeatable: &[&str],
) -> Vec<(&'static str, Option<String>)> {
    let mut kept: Vec<(&'static str, Option<String>)> = Vec::with_capacity(found.len());
    for (name, value) in found {
        if !repeatable.contains(&name) {
            kept.retain(|(n, _)| *n != name);
        }
        kept.push((name, value));
    }
    kept
}

/// C's `atoi`, as cyclictest reads every number: leading blanks, a sign,
/// digits up to the first other character; 0 when there are none.
pub fn atoi(text: &str) -> i64 {
    strtol(text).clamp(i64::from(i32::MIN), i64::from(i32::MAX))
}

/// C's `strtol(text, NULL, 10)` on a 64-bit `long`: as `atoi`, saturating
/// at the bounds of `long` instead of `int` (glibc's ERANGE values).
pub fn strtol(text: &str) -> i64 {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    // Negative while reading, so that i64::MIN is reached exactly.
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_sub(i64::from(b - b'0'));
    }
    if neg {
        n
    } else {
        n.checked_neg().unwrap_or(i64::MAX)
    }
}

/// One of latscope's own long options taken by a getopt tool: matched
/// only when spelled in full (every abbreviation keeps the tool's own
/// meaning), always with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Own {
    pub name: &'static str,
    /// What a missing value is said to be: `a file name: --latscope-json FILE`.
    pub needs: &'static str,
}

/// A tool's option table: the options of the version spoken, and those a
/// later version added. A later option is found by its letter, its full
/// name, or an abbreviation the version spoken does not know, so that every
/// word the version spoken took keeps its meaning (oslat 2.40's `--bucket`
/// stays `--bucket-size` beside 2.8's `--bucket-width`, where 2.8 calls it
/// ambiguous).
#[derive(Clone, Copy)]
pub struct Table<'a> {
    pub options: &'a [GetoptOption],
    pub later: &'a [GetoptOption],
}

impl<'a> Table<'a> {
    /// A table without later options.
    pub fn of(options: &'a [GetoptOption]) -> Table<'a> {
        Table {
            options,
            later: &[],
        }
    }

    fn short(&self, letter: char) -> Option<&'a GetoptOption> {
        self.options
            .iter()
            .chain(self.later)
            .find(|o| o.short == Some(letter))
    }

    /// The option `--name` names (`word` as typed, for the complaint).
    fn long(&self, name: &str, word: &str) -> Result<&'a GetoptOption, GetoptUsage> {
        let exact = |table: &'a [GetoptOption]| table.iter().find(|o| o.long == name);
        if let Some(found) = exact(self.options).or_else(|| exact(self.later)) {
            return Ok(found);
        }
        for table in [self.options, self.later] {
            let candidates: Vec<&GetoptOption> =
                table.iter().filter(|o| o.long.starts_with(name)).collect();
            match candidates.as_slice() {
                [] => continue,
                [found] => return Ok(*found),
                many => {
                    let names: Vec<String> =
                        many.iter().map(|o| format!("'--{}'", o.long)).collect();
                    return Err(GetoptUsage::Getopt(format!(
                        "option '--{name}' is ambiguous; possibilities: {}",
                        names.join(" ")
                    )));
                }
            }
        }
        Err(GetoptUsage::Getopt(format!("unrecognized option '{word}'")))
    }
}

/// GNU getopt_long over `table` (long name, short letter, argument), for
/// a table without optional arguments (oslat's): the
/// options in order as (long name, value); getopt's complaints as
/// `GetoptUsage::Getopt`. Words that are not options are skipped.
/// `full_only`: latscope's own long options (`--latscope-json FILE`), each
/// with a required value and matched only when spelled in full, so that
/// every abbreviation keeps the tool's own meaning.
pub fn getopt_long(
    table: &Table<'_>,
    full_only: &[Own],
    args: &[String],
) -> Result<Vec<(&'static str, Option<String>)>, GetoptUsage> {
    debug_assert!(
        table
            .options
            .iter()
            .chain(table.later)
            .all(|o| o.arg != Arg::Optional),
        "a table with optional arguments needs its tool's peek: getopt_long_into"
    );
    let mut out = Vec::new();
    getopt_table_into(table, full_only, args, |_, _| false, &mut out)?;
    Ok(out)
}

/// `getopt_long` over a table without later options, the options found so
/// far pushed to `out` (also when it fails).
/// `peek(option, next_word)`: whether an optional value not attached to its
/// option is the next word (each tool decides by hand, as cyclictest's `cyclictest_peek` does);
/// that word is read by getopt afterwards all the same.
pub fn getopt_long_into(
    options: &[GetoptOption],
    full_only: &[Own],
    args: &[String],
    peek: fn(&str, &str) -> bool,
    out: &mut Vec<(&'static str, Option<String>)>,
) -> Result<(), GetoptUsage> {
    getopt_table_into(&Table::of(options), full_only, args, peek, out)
}

/// `getopt_long_into` over a table with later options.
pub fn getopt_table_into(
    table: &Table<'_>,
    full_only: &[Own],
    args: &[String],
    peek: fn(&str, &str) -> bool,
    out: &mut Vec<(&'static str, Option<String>)>,
) -> Result<(), GetoptUsage> {
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if let Some(own) = full_only.iter().find(|o| o.name == name) {
                let value = match attached {
                    Some(v) => v,
                    None => {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            GetoptUsage::Bad(format!("--{} needs {}", own.name, own.needs))
                        })?;
                        i += 1;
                        v
                    }
                };
                out.push((own.name, Some(value)));
                continue;
            }
            let found = table.long(name, word)?;
            let value = match (found.arg, attached) {
                (Arg::No, Some(_)) => {
                    return Err(GetoptUsage::Getopt(format!(
                        "option '--{}' doesn't allow an argument",
                        found.long
                    )));
                }
                (Arg::No, None) => None,
                (Arg::Required, Some(v)) => Some(v),
                (Arg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return Err(GetoptUsage::Getopt(format!(
                            "option '--{}' requires an argument",
                            found.long
                        )));
                    }
                },
                (Arg::Optional, Some(v)) => Some(v),
                (Arg::Optional, None) => args.get(i).filter(|next| peek(found.long, next)).cloned(),
            };
            out.push((found.long, value));
            continue;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|c| !c.is_empty()) else {
            // cyclictest ignores words that are not options.
            continue;
        };
        let chars: Vec<char> = cluster.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let letter = chars[k];
            k += 1;
            let Some(found) = table.short(letter) else {
                return Err(GetoptUsage::Getopt(format!("invalid option -- '{letter}'")));
            };
            let rest: String = chars[k..].iter().collect();
            let value = match found.arg {
                Arg::No => None,
                Arg::Required if !rest.is_empty() => {
                    k = chars.len();
                    Some(rest)
                }
                Arg::Required => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return Err(GetoptUsage::Getopt(format!(
                            "option requires an argument -- '{letter}'"
                        )));
                    }
                },
                Arg::Optional if !rest.is_empty() => {
                    k = chars.len();
                    Some(rest)
                }
                Arg::Optional => args.get(i).filter(|next| peek(found.long, next)).cloned(),
            };
            out.push((found.long, value));
        }
    }
    Ok(())
}

/// `-D`'s value as rt-tests' `parse_time_string`: the leading number
/// (strtol), times 60/3600/86400 when the next character is m/h/d (either
/// case); anything else after the number is ignored. 0 means no limit.
pub fn parse_duration(value: &str) -> Option<Duration> {
    let t = value.trim_start();
    let sign_len = usize::from(t.starts_with(['-', '+']));
    let digits = t[sign_len..].bytes().take_while(u8::is_ascii_digit).count();
    let n = atoi(&t[..sign_len + digits]);
    let unit = t[sign_len + digits..].chars().next();
    let factor = match unit {
        Some('m' | 'M') => 60,
        Some('h' | 'H') => 3600,
        Some('d' | 'D') => 86_400,
        _ => 1,
    };
    let secs = n.saturating_mul(factor);
    (secs > 0).then(|| Duration::from_secs(secs as u64))
}

/// The CPUs a list named, sorted and once each; with `!` every CPU of `all`
/// it did not name.
fn cpu_set(mut cpus: Vec<usize>, invert: bool, all: &[usize]) -> Vec<usize> {
    if invert {
        cpus = all.iter().copied().filter(|c| !cpus.contains(c)).collect();
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// C's `strtoul(s, &end, 0)`: leading blanks, a sign, `0x` hex or `0`
/// octal; the value (negative numbers wrap, as there) and the bytes used,
/// 0 when there is no number.
fn strtoul0(s: &str) -> (u64, usize) {
    let b = s.as_bytes();
    let mut k = 0;
    while k < b.len() && matches!(b[k], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        k += 1;
    }
    let neg = b.get(k) == Some(&b'-');
    if matches!(b.get(k), Some(b'-' | b'+')) {
        k += 1;
    }
    let (radix, start) = if b.get(k) == Some(&b'0')
        && matches!(b.get(k + 1), Some(b'x' | b'X'))
        && b.get(k + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        (16, k + 2)
    } else if b.get(k) == Some(&b'0') {
        (8, k)
    } else {
        (10, k)
    };
    let digits = b[start..]
        .iter()
        .take_while(|c| (**c as char).is_digit(radix))
        .count();
    if digits == 0 {
        return (0, 0);
    }
    let value = b[start..start + digits].iter().fold(0u64, |n, c| {
        n.saturating_mul(u64::from(radix))
            .saturating_add(u64::from((*c as char).to_digit(radix).unwrap_or(0)))
    });
    (
        if neg { value.wrapping_neg() } else { value },
        start + digits,
    )
}

/// libnuma's `numa_parse_cpustring_all`, which cyclictest's `-a LIST` and
/// `--mainaffinity LIST` go through: `all`, `!` (all but), `+` (the Nth
/// allowed CPU), `N`, `N-M`, commas, numbers as `strtoul` reads them. On
/// failure, libnuma's warning (`Err(Some(line))`, printed as it prints it:
/// `libnuma: Warning: ` and an empty line after) or nothing (`Err(None)`:
/// libnuma says nothing when the list ends in something else).
pub fn numa_parse_cpustring(text: &str, allowed: &[usize]) -> Result<Vec<usize>, Option<String>> {
    let warn = |m: String| Err(Some(format!("libnuma: Warning: {m}\n")));
    let mut s = text;
    let mut cpus = Vec::new();
    if s.is_empty() {
        return Ok(cpus);
    }
    let invert = s.starts_with('!');
    if invert {
        s = &s[1..];
    }
    let relative = s.starts_with('+');
    if relative {
        s = &s[1..];
    }
    // get_nr: a number, or with `+` the position among the allowed CPUs.
    let nr = |s: &str| -> (Option<usize>, usize) {
        let (n, used) = strtoul0(s);
        if used == 0 {
            return (None, 0);
        }
        let n = if relative {
            allowed
                .get(usize::try_from(n).unwrap_or(usize::MAX))
                .copied()
                .unwrap_or(usize::MAX)
        } else {
            usize::try_from(n).unwrap_or(usize::MAX)
        };
        (Some(n), used)
    };
    loop {
        if s == "all" {
            cpus.extend_from_slice(allowed);
            s = "";
            break;
        }
        let (Some(first), used) = nr(s) else {
            return warn(format!("unparseable cpu description `{s}'"));
        };
        if !allowed.contains(&first) {
            return warn(format!("cpu argument {s} is out of range"));
        }
        cpus.push(first);
        s = &s[used..];
        if let Some(rest) = s.strip_prefix('-') {
            s = rest;
            let (Some(last), used) = nr(s) else {
                return warn(format!("missing cpu argument {s}"));
            };
            if !allowed.contains(&last) {
                return warn(format!("cpu argument {s} out of range"));
            }
            cpus.extend((first..=last).filter(|c| allowed.contains(c)));
            s = &s[used..];
        }
        match s.strip_prefix(',') {
            Some(rest) => s = rest,
            None => break,
        }
    }
    if !s.is_empty() {
        return Err(None);
    }
    Ok(cpu_set(cpus, invert, allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[GetoptOption] = &[
        GetoptOption::new("beta", Some('b'), Arg::No, "-b  --beta   B\n"),
        GetoptOption::new(
            "alpha",
            Some('a'),
            Arg::Required,
            "-a  --alpha  A\n     more\n",
        ),
        GetoptOption::new("hidden", None, Arg::No, ""),
    ];

    #[test]
    fn usage_is_the_layout_with_each_options_lines() {
        let layout = &[
            UsagePart::Text("tool V 1\n\n"),
            UsagePart::Option("alpha"),
            UsagePart::Option("beta"),
            UsagePart::Text("end\n"),
        ];
        assert_eq!(
            render_usage(TABLE, layout),
            "tool V 1\n\n-a  --alpha  A\n     more\n-b  --beta   B\nend\n"
        );
        assert!(check_usage_layout(TABLE, layout).is_empty());
    }

    #[test]
    fn a_layout_that_disagrees_with_its_table_is_named() {
        let layout = &[
            UsagePart::Option("alpha"),
            UsagePart::Option("alpha"),
            UsagePart::Option("gamma"),
            UsagePart::Option("hidden"),
        ];
        assert_eq!(
            check_usage_layout(TABLE, layout),
            [
                "the layout names --alpha twice",
                "the layout names --gamma, which the table lacks",
                "the layout names --hidden, which has no usage lines",
                "--beta's usage lines are never printed",
            ]
        );
    }

    #[test]
    fn last_of_each_keeps_the_value_that_counts() {
        let found = |w: &[(&'static str, Option<&str>)]| -> Vec<(&'static str, Option<String>)> {
            w.iter().map(|(n, v)| (*n, v.map(str::to_string))).collect()
        };
        assert_eq!(
            last_of_each(
                found(&[
                    ("loops", Some("-1")),
                    ("on-end", Some("a")),
                    ("quiet", None),
                    ("loops", Some("5")),
                    ("on-end", Some("b")),
                    ("affinity", Some("99")),
                    ("affinity", None),
                ]),
                &["on-end"]
            ),
            found(&[
                ("on-end", Some("a")),
                ("quiet", None),
                ("loops", Some("5")),
                ("on-end", Some("b")),
                ("affinity", None),
            ])
        );
    }

    #[test]
    fn strtol_saturates_at_long_and_atoi_at_int() {
        assert_eq!(strtol("2147483648"), 2_147_483_648);
        assert_eq!(strtol("999999999999x"), 999_999_999_999);
        assert_eq!(strtol("99999999999999999999"), i64::MAX);
        assert_eq!(strtol("-99999999999999999999"), i64::MIN);
        assert_eq!(strtol("-9223372036854775808"), i64::MIN);
        assert_eq!(atoi("2147483648"), i64::from(i32::MAX));
        assert_eq!(atoi("-2147483649"), i64::from(i32::MIN));
    }

    #[test]
    fn atoi_is_cs() {
        assert_eq!(atoi("12abc"), 12);
        assert_eq!(atoi("  -7"), -7);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("+3"), 3);
    }

    #[test]
    fn answers_are_the_tools() {
        let usage = "USAGE\n";
        let got = GetoptUsage::Getopt("invalid option -- 'Z'".into())
            .answer("signaltest", usage)
            .unwrap();
        assert_eq!(
            (got.stdout.as_str(), got.stderr.as_str(), got.code),
            (usage, "signaltest: invalid option -- 'Z'\n", 0)
        );
        let got = GetoptUsage::Invalid(vec!["libnuma: Warning: x\n".into()])
            .answer("p", usage)
            .unwrap();
        assert_eq!(
            (got.stderr.as_str(), got.code),
            ("libnuma: Warning: x\n\n", 1)
        );
        let got = GetoptUsage::Fatal("no".into()).answer("p", usage).unwrap();
        assert_eq!(
            (got.stdout.as_str(), got.stderr.as_str(), got.code),
            ("", "FATAL: no\n", 1)
        );
        assert_eq!(GetoptUsage::Help.answer("p", usage).unwrap().code, 0);
        assert_eq!(
            GetoptUsage::Bad("one line".into()).answer("p", usage),
            Err("one line".to_string())
        );
    }

    /// libnuma's parser as rt-tests 2.40 cyclictest shows it (outputs of
    /// Debian's cyclictest with `-a LIST` on a 2-CPU machine).
    #[test]
    fn numa_cpu_strings() {
        let all = [0, 1];
        let ok = |t: &str| numa_parse_cpustring(t, &all).unwrap();
        assert_eq!(ok("1"), vec![1]);
        assert_eq!(ok("0-1"), vec![0, 1]);
        assert_eq!(ok("all"), vec![0, 1]);
        assert_eq!(ok("!0"), vec![1]);
        assert_eq!(ok("+1"), vec![1]);
        assert_eq!(ok("0x1"), vec![1]);
        assert_eq!(ok(" 1"), vec![1]);
        assert_eq!(ok("1-0"), vec![1], "a reversed range keeps its first CPU");
        assert_eq!(ok(""), Vec::<usize>::new());
        let warn = |t: &str| numa_parse_cpustring(t, &all).unwrap_err();
        let line = |m: &str| Some(format!("libnuma: Warning: {m}\n"));
        assert_eq!(warn("abc"), line("unparseable cpu description `abc'"));
        assert_eq!(warn("1,"), line("unparseable cpu description `'"));
        assert_eq!(warn("0,,1"), line("unparseable cpu description `,1'"));
        assert_eq!(warn("!"), line("unparseable cpu description `'"));
        assert_eq!(warn("99"), line("cpu argument 99 is out of range"));
        assert_eq!(warn("5,0"), line("cpu argument 5,0 is out of range"));
        assert_eq!(warn("0,5"), line("cpu argument 5 is out of range"));
        assert_eq!(warn("-1"), line("cpu argument -1 is out of range"));
        assert_eq!(warn("0-5"), line("cpu argument 5 out of range"));
        assert_eq!(warn("0-"), line("missing cpu argument "));
        assert_eq!(warn("1-x"), line("missing cpu argument x"));
        assert_eq!(warn("1a"), None, "libnuma fails without a word");
        assert_eq!(warn("1 "), None);
    }

    #[test]
    fn later_options_never_change_what_the_version_spoken_took() {
        const OPTIONS: &[GetoptOption] = &[
            GetoptOption::new("default-system", None, Arg::No, ""),
            GetoptOption::new("distance", Some('d'), Arg::Required, ""),
        ];
        const LATER: &[GetoptOption] = &[GetoptOption::new(
            "deepest-idle-state",
            Some('E'),
            Arg::Required,
            "",
        )];
        let table = Table {
            options: OPTIONS,
            later: LATER,
        };
        let parse = |words: &[&str]| {
            let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            getopt_long(&table, &[], &args)
        };
        type Found = Result<Vec<(&'static str, Option<String>)>, GetoptUsage>;
        let one = |name: &'static str, value: Option<&str>| -> Found {
            Ok(vec![(name, value.map(String::from))])
        };
        // The version spoken's abbreviation, ambiguous in the later table.
        assert_eq!(parse(&["--de"]), one("default-system", None));
        assert_eq!(
            parse(&["--d"]),
            Err(GetoptUsage::Getopt(
                "option '--d' is ambiguous; possibilities: '--default-system' '--distance'".into()
            ))
        );
        // What it did not know: the later option, in full or abbreviated.
        assert_eq!(parse(&["--dee", "2"]), one("deepest-idle-state", Some("2")));
        assert_eq!(
            parse(&["--deepest-idle-state=-1"]),
            one("deepest-idle-state", Some("-1"))
        );
        assert_eq!(parse(&["-E1"]), one("deepest-idle-state", Some("1")));
        assert_eq!(
            parse(&["--dx"]),
            Err(GetoptUsage::Getopt("unrecognized option '--dx'".into()))
        );
    }
}
