//! `latscope completions` and `latscope manpages`: the files a package
//! installs besides the binary. Both are generated from the clap definitions
//! the binary parses its arguments with, so they cannot drift from it.

use crate::cli::{COMPAT_NAMES, Cli, CompletionsArgs, ManpagesArgs};
use crate::pipeline::{CommandError, EXIT_OK, write_with};
use crate::settings::{OutputTarget, UsageError};
use clap::CommandFactory;
use std::path::Path;

mod compat_pages;

pub fn completions(args: &CompletionsArgs) -> Result<i32, CommandError> {
    let mut cli = without_hidden_subcommands(Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "latscope", &mut script);
    write_with(&OutputTarget::Stdout, &mut |out| out.write_all(&script))
        .map_err(CommandError::Runtime)?;
    Ok(EXIT_OK)
}

/// The command line with its visible subcommands only: clap_complete would
/// offer hidden ones (`manpages`) too, and clap cannot remove a subcommand,
/// so the top level is made again around the visible ones (it has no options
/// of its own but --help and --version).
fn without_hidden_subcommands(cli: clap::Command) -> clap::Command {
    let visible: Vec<clap::Command> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("latscope")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible)
}

/// Writes `latscope.1` and `latscope-SUBCOMMAND.1` for every visible
/// subcommand into `DIR/man1/`, and one page per compatibility name into
/// `DIR/compat/man1/` (kept apart: installed in /usr/share/man, `pmqtest.1`
/// would come before rt-tests' `pmqtest.8` for `man pmqtest`).
pub fn manpages(args: &ManpagesArgs) -> Result<i32, CommandError> {
    let latscope_dir = args.out.join("man1");
    let compat_dir = args.out.join("compat").join("man1");
    for dir in [&latscope_dir, &compat_dir] {
        std::fs::create_dir_all(dir).map_err(|e| {
            UsageError(format!(
                "--out: could not create {}: {e}; give a directory you can write to",
                dir.display()
            ))
        })?;
    }
    let mut cli = Cli::command().disable_help_subcommand(true);
    // Gives every subcommand its full name (display name "latscope-mq",
    // usage "latscope mq"), as the pages show them.
    cli.build();
    write_page(&latscope_dir, cli.clone(), &[])?;
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_page(&latscope_dir, sub.clone(), &["latscope"])?;
    }
    for compat in &COMPAT_NAMES {
        compat_pages::write(&compat_dir, &cli, compat)?;
    }
    Ok(EXIT_OK)
}

/// Renders one page to `dir/NAME.1`, with a SEE ALSO section naming the
/// section-1 pages in `see_also`.
fn write_page(dir: &Path, page: clap::Command, see_also: &[&str]) -> Result<(), CommandError> {
    let title = page
        .get_display_name()
        .unwrap_or_else(|| page.get_name())
        .to_uppercase();
    let man = clap_mangen::Man::new(page)
        .title(title)
        .source(format!("latscope {}", env!("CARGO_PKG_VERSION")))
        .manual("latscope manual");
    let path = dir.join(man.get_filename());
    write_with(&OutputTarget::File(path), &mut |out| {
        man.render(out)?;
        if !see_also.is_empty() {
            let names: Vec<String> = see_also
                .iter()
                .map(|n| format!("\\fB{}\\fR(1)", n.replace('-', "\\-")))
                .collect();
            writeln!(out, ".SH \"SEE ALSO\"\n{}", names.join(", "))?;
        }
        Ok(())
    })
    .map_err(CommandError::Runtime)
}
