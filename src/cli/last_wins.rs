//! A repeated option of a drop-in counts with its last value only, as in the
//! rt-tests tools: they keep one variable per option, which a later
//! occurrence overwrites, and check it once the whole command line is read.
//! clap checks every occurrence's value as it reads it, so `pmqtest -l -1
//! -q -l 5` would be refused for a `-1` that never counts. The earlier
//! occurrences of each single-value option are dropped before clap reads
//! the words (settings::getopt::last_of_each is the same rule for the
//! getopt tables).

use clap::{ArgAction, Command};
use std::ffi::OsString;

/// How an option occurrence is spelled at one word.
enum Occurrence {
    /// An option of `cmd` that takes exactly one value: its id, and how many
    /// words it spans (1 with the value attached, 2 with it in the next word).
    Single(String, usize),
    /// Anything else (a flag, a cluster of flags, an option with an optional
    /// value or several values, an operand): kept as it is.
    Other,
}

/// The single-value `Set` option of `cmd` spelled `--long`, or `-c`.
fn single_value_arg<'a>(
    cmd: &'a Command,
    long: Option<&str>,
    short: Option<char>,
) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| {
        let named = match (long, short) {
            (Some(l), _) => {
                a.get_long() == Some(l) || a.get_all_aliases().is_some_and(|v| v.contains(&l))
            }
            (None, Some(c)) => {
                a.get_short() == Some(c)
                    || a.get_all_short_aliases().is_some_and(|v| v.contains(&c))
            }
            (None, None) => false,
        };
        let one_value = a
            .get_num_args()
            .is_none_or(|r| r.min_values() == 1 && r.max_values() == 1);
        named && matches!(a.get_action(), ArgAction::Set) && one_value
    })
}

/// What the word at `words[i]` is.
fn occurrence(cmd: &Command, word: &str) -> Occurrence {
    if let Some(long) = word.strip_prefix("--") {
        let (name, attached) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        return match single_value_arg(cmd, Some(name), None) {
            Some(a) => Occurrence::Single(a.get_id().to_string(), if attached { 1 } else { 2 }),
            None => Occurrence::Other,
        };
    }
    let mut chars = word.chars();
    match (chars.next(), chars.next()) {
        (Some('-'), Some(c)) => match single_value_arg(cmd, None, Some(c)) {
            Some(a) => Occurrence::Single(
                a.get_id().to_string(),
                if chars.as_str().is_empty() { 2 } else { 1 },
            ),
            None => Occurrence::Other,
        },
        _ => Occurrence::Other,
    }
}

/// `args` (argv[0] first) with only the last occurrence of each
/// single-value option of `cmd` kept; everything after `--` as it is.
pub fn keep_last_values(cmd: &Command, args: Vec<OsString>) -> Vec<OsString> {
    // (option id, first word, word count) of every single-value occurrence.
    let mut spans: Vec<(String, usize, usize)> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let Some(word) = args[i].to_str() else {
            i += 1;
            continue;
        };
        if word == "--" {
            break;
        }
        match occurrence(cmd, word) {
            Occurrence::Single(id, len) => {
                let len = len.min(args.len() - i);
                spans.push((id, i, len));
                i += len;
            }
            Occurrence::Other => i += 1,
        }
    }
    let mut dropped = vec![false; args.len()];
    for (n, (id, start, len)) in spans.iter().enumerate() {
        if spans[n + 1..].iter().any(|(later, _, _)| later == id) {
            dropped[*start..start + len]
                .iter_mut()
                .for_each(|d| *d = true);
        }
    }
    args.into_iter()
        .zip(dropped)
        .filter_map(|(word, drop)| (!drop).then_some(word))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(cmd: &Command, words: &[&str]) -> Vec<String> {
        let args = std::iter::once("pmqtest")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        keep_last_values(cmd, args)
            .into_iter()
            .skip(1)
            .map(|w| w.into_string().unwrap())
            .collect()
    }

    fn table() -> Command {
        Command::new("pmqtest")
            .arg(
                clap::Arg::new("loops")
                    .short('l')
                    .long("loops")
                    .action(ArgAction::Set),
            )
            .arg(
                clap::Arg::new("quiet")
                    .short('q')
                    .action(ArgAction::SetTrue),
            )
            .arg(
                clap::Arg::new("affinity")
                    .short('a')
                    .num_args(0..=1)
                    .action(ArgAction::Set),
            )
            .arg(
                clap::Arg::new("on-end")
                    .long("on-end")
                    .action(ArgAction::Append),
            )
    }

    #[test]
    fn only_the_last_value_of_a_single_value_option_stays() {
        let cmd = table();
        assert_eq!(
            kept(&cmd, &["-l", "-1", "-q", "-l", "5"]),
            ["-q", "-l", "5"]
        );
        assert_eq!(
            kept(&cmd, &["-l-1", "--loops=7", "-q"]),
            ["--loops=7", "-q"]
        );
        assert_eq!(kept(&cmd, &["--loops", "x", "-l9"]), ["-l9"]);
        // Appended options, optional values, flags and what follows `--`
        // stay as typed.
        assert_eq!(
            kept(
                &cmd,
                &["--on-end", "a", "--on-end=b", "-a", "-a", "1", "-q", "-q"]
            ),
            ["--on-end", "a", "--on-end=b", "-a", "-a", "1", "-q", "-q"]
        );
        assert_eq!(
            kept(&cmd, &["-l", "1", "--", "-l", "2"]),
            ["-l", "1", "--", "-l", "2"]
        );
        // A value missing at the end is left to clap's complaint.
        assert_eq!(kept(&cmd, &["-l", "1", "-l"]), ["-l"]);
    }
}
