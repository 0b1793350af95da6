//! How wide the terminal is that standard output goes to, so that the
//! console's tables can be fitted to it (src/report/cells: `Table`).

use std::io::IsTerminal;

/// The environment variable that asks for fitting to N columns even when
/// standard output is no terminal (tests, `less -S`, a pipe to a pager).
pub const COLUMNS_VARIABLE: &str = "LATSCOPE_COLUMNS";

/// `LATSCOPE_COLUMNS` that is no width latscope can fit to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{COLUMNS_VARIABLE}={0:?} is not a width: give a number of columns from 40 to 10000, or unset it"
)]
pub struct ColumnsError(pub String);

/// The narrowest width asked for that tables are still fitted to: below it
/// a row of four figures no longer fits, whatever is left out.
const NARROWEST: usize = 40;

/// The width to fit the console's tables to, None to print them full width:
/// None with `wide`; `LATSCOPE_COLUMNS` when set; otherwise, only when
/// standard output is a terminal (scripts read our tables from pipes, and
/// those bytes stay what they always were), the terminal's width
/// (TIOCGWINSZ), else `COLUMNS`, else 80.
pub fn columns_to_fit(wide: bool) -> Result<Option<usize>, ColumnsError> {
    if wide {
        return Ok(None);
    }
    if let Some(value) = std::env::var_os(COLUMNS_VARIABLE) {
        let text = value.to_string_lossy().into_owned();
        return match text.trim().parse::<usize>() {
            Ok(n) if (NARROWEST..=10_000).contains(&n) => Ok(Some(n)),
            _ => Err(ColumnsError(text)),
        };
    }
    if !std::io::stdout().is_terminal() {
        return Ok(None);
    }
    let from_environment = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
    };
    let width = window_columns().or_else(from_environment).unwrap_or(80);
    Ok(Some(width.max(NARROWEST)))
}

/// The terminal's width as the kernel knows it (TIOCGWINSZ on standard
/// output); None when it does not say (0 columns: a serial console).
fn window_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we own.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (rc == 0 && size.ws_col > 0).then_some(size.ws_col as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_never_fits() {
        assert_eq!(columns_to_fit(true), Ok(None));
    }

    #[test]
    fn the_refusal_says_what_to_give() {
        assert_eq!(
            ColumnsError("abc".into()).to_string(),
            "LATSCOPE_COLUMNS=\"abc\" is not a width: give a number of columns from 40 to 10000, or unset it"
        );
    }
}
