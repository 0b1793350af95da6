//! `latscope cleanup`'s checked settings: the directories whose leftover
//! test files may be removed (each must exist; kept resolved, so that a
//! recorded path is compared with the real place) and `--dry-run`.

use super::{UsageError, usage};
use crate::cli::CleanupArgs;
use crate::units::shown;
use std::path::PathBuf;

pub struct CleanupSettings {
    /// `--dir`s, resolved (`canonicalize`).
    pub dirs: Vec<PathBuf>,
    pub dry_run: bool,
}

impl CleanupSettings {
    pub fn from_args(args: &CleanupArgs) -> Result<CleanupSettings, UsageError> {
        let dirs = args
            .dir
            .iter()
            .map(|d| {
                let shown_dir = shown(&d.to_string_lossy());
                match std::fs::canonicalize(d) {
                    Ok(real) if real.is_dir() => Ok(real),
                    Ok(_) => Err(usage(format!(
                        "--dir {shown_dir}: not a directory; name the directory a log-disk run wrote its files to"
                    ))),
                    Err(e) => Err(usage(format!(
                        "--dir {shown_dir}: {}; name an existing directory",
                        crate::rt::os_error_text(&e)
                    ))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CleanupSettings {
            dirs,
            dry_run: args.dry_run,
        })
    }
}
