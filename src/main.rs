//! Entry point: parse, dispatch, print errors with the documented exit codes
//! (0 ok, 1 run-time error, 2 bad usage, 3 latency limit or threshold
//! crossed or a `doctor` check bad, 4 skipped: nothing this machine can run).

use clap::CommandFactory;
use clap::Parser;
use clap::error::ErrorKind;
use latscope::cli::{COMPAT_NAMES, Cli, CompatName, Dialect, Letters};
use latscope::commands;
use latscope::pipeline::EXIT_USAGE;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

/// The compatibility name latscope was started under (argv[0]), if any.
fn compat_name(args: &[OsString]) -> Option<&'static CompatName> {
    let invoked_as = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())?;
    CompatName::named(&invoked_as)
}

/// The arguments as `latscope SUBCOMMAND PRESETS... ARGS...` (a getopt
/// tool's: `latscope SUBCOMMAND -- ARGS...`, so that clap takes none).
fn effective_args(mut args: Vec<OsString>, compat: Option<&CompatName>) -> Vec<OsString> {
    if let Some(compat) = compat {
        let rest = args.split_off(1);
        args.extend(compat.stands_for().into_iter().map(OsString::from));
        args.extend(rest);
    }
    args
}

/// clap's suggestion for a mistyped subcommand or option, if it has one.
fn suggestion(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    [ContextKind::SuggestedSubcommand, ContextKind::SuggestedArg]
        .into_iter()
        .find_map(|kind| match e.get(kind)? {
            ContextValue::String(s) => Some(s.clone()),
            ContextValue::Strings(v) => v.first().cloned(),
            _ => None,
        })
}

/// Help, version or a usage error from clap: printed (a usage error on one
/// line, with clap's suggestion and where to read more), then exit.
fn exit_on_parse_error(e: clap::Error, help_hint: &str) -> ! {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            std::process::exit(0);
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            let _ = e.print();
            std::process::exit(EXIT_USAGE);
        }
        _ => {
            let did_you_mean = suggestion(&e)
                .map(|s| format!("; did you mean '{}'?", latscope::units::shown(&s)))
                .unwrap_or_default();
            let _ = writeln!(
                std::io::stderr(),
                "latscope: error: {}{did_you_mean} (see '{help_hint}')",
                one_line(&e.to_string())
            );
            std::process::exit(EXIT_USAGE);
        }
    }
}

/// clap's message on one line: its first line, plus the list of possible
/// values when it gives one (the fix for a mistyped choice).
fn one_line(clap_message: &str) -> String {
    let mut lines = clap_message.lines();
    let first = lines.next().unwrap_or("bad usage");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "the following required arguments were not provided:" names them on
    // the indented lines that follow: keep them on the one line.
    let listed: Vec<&str> = if first.ends_with(':') {
        lines.map(str::trim).take_while(|l| !l.is_empty()).collect()
    } else {
        Vec::new()
    };
    let first = if listed.is_empty() {
        first.to_string()
    } else {
        format!("{first} {}", listed.join(", "))
    };
    // clap quotes what was typed ('...'), and that can be huge: shorten the
    // quoted parts, keep the option names around them.
    let mut line = first
        .split('\'')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                latscope::units::shown(part)
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("'");
    if let Some(values) = clap_message
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values:"))
    {
        line.push(' ');
        line.push_str(values);
    }
    line
}

/// The command line parsed with the letters it is written in: Xenomai's on
/// `timer` (`-h` histograms) under the `latency` name or with `--format
/// classic`, latscope's (`-h` help) everywhere else.
fn parse(args: Vec<OsString>, compat: Option<&CompatName>) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let latency_name = compat.is_some_and(|c| c.letters() == Letters::Xenomai);
    let xenomai = || {
        latscope::cli::command_with_xenomai_letters(latency_name)
            .try_get_matches_from(&args)
            .and_then(|m| Cli::from_arg_matches(&m))
    };
    if latency_name {
        return xenomai();
    }
    let classic = |parsed: &Result<Cli, clap::Error>| {
        matches!(parsed, Ok(Cli { command: latscope::cli::Command::Timer(t) })
            if t.format == latscope::cli::OutputFormat::Classic)
    };
    if args.get(1).is_some_and(|a| a == "timer") {
        match xenomai() {
            parsed @ Ok(_) if classic(&parsed) => return parsed,
            // `--help` with `--format classic`: the help in Xenomai's
            // letters (`-h, --histograms`).
            Err(e) if e.kind() == ErrorKind::DisplayHelp => {
                let without_help: Vec<OsString> =
                    args.iter().filter(|a| *a != "--help").cloned().collect();
                let parsed = latscope::cli::command_with_xenomai_letters(false)
                    .try_get_matches_from(&without_help)
                    .and_then(|m| Cli::from_arg_matches(&m));
                if classic(&parsed) {
                    return Err(e);
                }
            }
            _ => {}
        }
    }
    Cli::try_parse_from(args)
}

fn main() {
    latscope::entry::start(run_main)
}

/// A `GetoptThenClap` tool's words (ptsematest's) read by its getopt table
/// -> the words latscope's parser takes for them, or the tool's own answer
/// printed and the process ended with its code. Words that are not UTF-8
/// are left to latscope's parser (one line, exit 2).
fn getopt_then_clap_words(compat: &CompatName, raw: Vec<OsString>) -> Vec<OsString> {
    let Some(words) = raw[1..]
        .iter()
        .map(|w| w.to_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
    else {
        return raw;
    };
    let program = latscope::cli::getopt_program_name(compat.name);
    let cpus = latscope::rt::sched::allowed_cpus().len();
    match latscope::settings::ptsematest::rewrite(&words, &program, cpus) {
        Ok(words) => std::iter::once(raw[0].clone())
            .chain(words.into_iter().map(OsString::from))
            .collect(),
        Err(answer) => {
            let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
            let mut out = std::io::stdout();
            let _ = out.write_all(answer.stdout.as_bytes());
            let _ = out.flush();
            std::process::exit(answer.code);
        }
    }
}

/// Parse and dispatch, on the `entry::MAIN_STACK` thread: the exit code.
fn run_main() -> i32 {
    let mut raw: Vec<OsString> = std::env::args_os().collect();
    // `latscope ptsematest ARGS` is `ptsematest ARGS` (every compatibility
    // name whose words clap reads; a getopt tool's subcommand takes every
    // word as it is): the name moves to argv[0].
    let moved = |a: &OsString| {
        COMPAT_NAMES
            .iter()
            .any(|c| a == c.name && c.parsed_by_clap())
    };
    if compat_name(&raw).is_none() && raw.get(1).is_some_and(moved) {
        raw.remove(0);
    }
    let compat = compat_name(&raw);
    // A getopt table first where the tool has one before clap: its help,
    // getopt's complaints and its refusals in its words.
    if let Some(c) = compat
        && matches!(c.dialect, Dialect::GetoptThenClap { .. })
    {
        raw = getopt_then_clap_words(c, raw);
    }
    // A repeated option counts with its last value, as in rt-tests: only
    // that one is checked (`pmqtest -l -1 -q -l 5` runs 5 loops).
    if let Some(c) = compat
        && let Some(cmd) = latscope::cli::compat_command(c.name)
    {
        raw = latscope::cli::last_wins::keep_last_values(&cmd, raw);
    }
    // Under a compatibility name the arguments are parsed as that tool's
    // first, so that its help and its usage errors speak as that tool
    // (`Usage: pmqtest [OPTIONS]`, `--format [default: classic]`, `see
    // 'pmqtest --help'`).
    if let Some(c) = compat
        && let Some(cmd) = latscope::cli::compat_command(c.name)
        && let Err(e) = cmd.try_get_matches_from(&raw)
    {
        exit_on_parse_error(e, &format!("{} --help", c.name));
    }
    let args = effective_args(raw, compat);
    let help_hint = match (compat, args.get(1).and_then(|a| a.to_str())) {
        (Some(c), _) => format!("{} --help", c.name),
        (None, Some(sub)) if Cli::command().find_subcommand(sub).is_some() => {
            format!("latscope {sub} --help")
        }
        _ => "latscope --help".to_string(),
    };
    let cli = match parse(args, compat) {
        Ok(cli) => cli,
        Err(e) => exit_on_parse_error(e, &help_hint),
    };
    // Commands without a monitor loop still stop within a moment on Ctrl-C,
    // SIGTERM or a hang-up (a large input, a FIFO nobody writes).
    match &cli.command {
        latscope::cli::Command::Report(_) => latscope::rt::signals::exit_on_stop_signal("report"),
        latscope::cli::Command::Compare(_) => latscope::rt::signals::exit_on_stop_signal("compare"),
        latscope::cli::Command::Samples(_) => latscope::rt::signals::exit_on_stop_signal("samples"),
        _ => {}
    }
    latscope::entry::exit_code(commands::dispatch(&cli.command))
}
