//! clap value parsers over `units::values`: each option's text is read once,
//! where clap reads it, into the type settings/ takes; a bad value is a usage
//! error whose message is that parser's one line (naming the option as
//! `-i/--interval`, and what to give), as settings/ wrote it before.

use clap::builder::TypedValueParser;
use std::ffi::OsStr;

/// A clap value parser from a `units::values` parser (`fn(option, text)`).
pub struct Checked<T>(pub fn(&str, &str) -> Result<T, String>);

// By hand: derived, Clone would require `T: Clone` of the function pointer.
impl<T> Clone for Checked<T> {
    fn clone(&self) -> Self {
        Checked(self.0)
    }
}

/// How the messages name `arg`: `-i/--interval`, `--max-latency`, `-c`.
pub fn option_name(arg: &clap::Arg) -> String {
    match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("-{short}/--{long}"),
        (Some(short), None) => format!("-{short}"),
        (None, Some(long)) => format!("--{long}"),
        (None, None) => arg.get_id().to_string(),
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Checked<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        // clap's own refusal of a value that is not UTF-8.
        let text = clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)?;
        let option = arg.map(option_name).unwrap_or_default();
        (self.0)(&option, &text).map_err(|message| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, message).with_cmd(cmd)
        })
    }
}

/// The help of an option whose default clap cannot print (it is optional,
/// or the default differs between the commands that share it): `help`
/// followed by `[default: DEFAULT]` as clap writes it, from the constant
/// the code uses.
pub fn with_default(help: &str, default: impl std::fmt::Display) -> String {
    format!("{help} [default: {default}]")
}
