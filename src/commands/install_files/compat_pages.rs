//! The man pages of the compatibility names (`pmqtest`, `cyclictest`,
//! ...): each the page of the subcommand it runs, under its own name.

use super::write_page;
use crate::cli::{CompatName, Dialect};
use crate::pipeline::CommandError;
use std::path::Path;

/// Writes the page of compatibility name `compat` into `dir`.
pub(super) fn write(
    dir: &Path,
    cli: &clap::Command,
    compat: &CompatName,
) -> Result<(), CommandError> {
    if compat.dialect == Dialect::Getopt {
        return write_getopt_page(dir, cli, compat.name, compat.subcommand);
    }
    let (page, see_also) = compat_page(cli, compat)?;
    let see_also: Vec<&str> = see_also.iter().map(String::as_str).collect();
    write_page(dir, page, &see_also)
}

/// The page of a name whose options are not clap arguments (`cyclictest`,
/// `oslat`: GNU getopt syntax, parsed by settings::cyclictest and
/// settings::oslat), so the page shows the usage that name prints, as it
/// prints it.
fn write_getopt_page(
    dir: &Path,
    cli: &clap::Command,
    name: &'static str,
    subcommand: &'static str,
) -> Result<(), CommandError> {
    let usage = crate::settings::usages::usage_of(name)
        .ok_or_else(|| CommandError::Runtime(format!("man page of {name}: no usage text")))?;
    // `runner oslat`: a subcommand of a subcommand.
    let sub = subcommand
        .split(' ')
        .try_fold(cli, |c, word| c.find_subcommand(word));
    let sub = sub.ok_or_else(|| {
        CommandError::Runtime(format!("man page of {name}: no subcommand {subcommand}"))
    })?;
    let top = subcommand.split(' ').next().unwrap_or(subcommand);
    let origin = if top == "runner" {
        "cnf-tests"
    } else {
        "rt-tests"
    };
    let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
    let page = clap::Command::new(name)
        .bin_name(name)
        .display_name(name)
        .disable_help_flag(true)
        .arg(
            clap::Arg::new("options")
                .value_name("OPTIONS")
                .num_args(0..)
                .help(format!("{name}'s options, as below")),
        )
        .about(compat_about(name, &about))
        .long_about(compat_long_about(
            name,
            name,
            &about,
            &format!(
                "{origin} {name}'s options and its exact output. Its usage, as \
                 `{name} --help` prints it:\n\n{}\n",
                // Indented lines keep their layout in the page (roff no-fill).
                usage
                    .lines()
                    .map(|l| format!("    {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        ));
    write_page(dir, page, &["latscope", &format!("latscope-{top}")])
}

/// The page of a compatibility name: the subcommand it runs, under that name,
/// with the defaults its preset arguments give (`--format classic`).
fn compat_page(
    cli: &clap::Command,
    compat: &CompatName,
) -> Result<(clap::Command, Vec<String>), CommandError> {
    let name = compat.name;
    let stands_for = compat.stands_for();
    let internal = |what: String| CommandError::Runtime(format!("man page of {name}: {what}"));
    let (sub_name, presets) = stands_for
        .split_first()
        .ok_or_else(|| internal("no subcommand".into()))?;
    let sub = cli
        .find_subcommand(sub_name)
        .ok_or_else(|| internal(format!("no subcommand {sub_name}")))?;
    let mut page = sub.clone();
    for preset in presets.chunks(2) {
        let [option, value] = preset else {
            return Err(internal(format!(
                "{preset:?} is not an option and its value"
            )));
        };
        let long = option.trim_start_matches("--");
        let id = sub
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .map(|a| a.get_id().clone())
            .ok_or_else(|| internal(format!("latscope {sub_name} has no {option}")))?;
        page = page.mut_arg(id, |a| a.default_value(*value));
    }
    let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
    let runs = stands_for.join(" ");
    // Its letters where latscope's differ (`latency`'s -h is histograms).
    page = crate::cli::in_letters(compat.letters(), page)
        .name(name)
        .display_name(name)
        .bin_name(name)
        .about(compat_about(sub_name, &about))
        .long_about(compat_long_about(
            name,
            &runs,
            &about,
            "the options below, and the original tool's output lines by default.\n",
        ));
    let see_also = vec!["latscope".to_string(), format!("latscope-{sub_name}")];
    Ok((page, see_also))
}

/// The one-line description of a compatibility name's page (it runs `latscope SUB_NAME`).
fn compat_about(sub_name: &str, about: &str) -> String {
    format!("latscope {sub_name} under the original tool's name: {about}")
}

/// The description of compatibility name `name`'s page: what the name is,
/// that it runs `latscope RUNS` with the arguments given, and `takes` (what
/// those arguments and the output are, a paragraph).
fn compat_long_about(name: &str, runs: &str, about: &str, takes: &str) -> String {
    format!(
        "{about}.\n\n\
         This {name} is latscope: a link named {name} to the latscope binary (the Debian \
         package installs it in /usr/lib/latscope/compat/, which takes effect when that \
         directory comes first in PATH). Started under this name, latscope runs \
         `latscope {runs}` with the arguments given: {takes}\n\
         The original tool's own manual page, where it is installed, stays reachable \
         with `man -a {name}`."
    )
}
