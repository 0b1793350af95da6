//! `latscope logdisk`'s options (mqldt's names and meanings, plus latscope's),
//! checked into settings before any file is created or written.

use super::{OutputTarget, Outputs, UsageError, check_output_path, usage};
use crate::cli::{LogdiskArgs, SyncArg};
use crate::units::shown;
use crate::units::values::DEFAULT_ALIGNMENT;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// mqldt's defaults for `--dir` and `--filePrefix` (the numeric ones are in
/// `units::values`, where the command line reads them).
pub const DEFAULT_DIR: &str = ".";
pub const DEFAULT_PREFIX: &str = "mqldt_testfile";
/// Longest file prefix: NAME_MAX less the `.NNNN` suffix.
const MAX_PREFIX_LEN: usize = 255 - 5;

// The write loop's own type lives in logdisk/ (which does not import
// settings/); the settings convert cli's SyncArg into it.
use crate::logdisk::SyncMode;

impl From<SyncArg> for SyncMode {
    fn from(a: SyncArg) -> SyncMode {
        match a {
            SyncArg::Dsync => SyncMode::Dsync,
            SyncArg::Fdatasync => SyncMode::Fdatasync,
            SyncArg::Fsync => SyncMode::Fsync,
            SyncArg::None => SyncMode::None,
        }
    }
}

/// Everything `latscope logdisk` needs, checked.
#[derive(Debug, Clone)]
pub struct LogdiskSettings {
    /// `--dir` as given (the writers' directories derive from it).
    pub dir: PathBuf,
    pub file_prefix: String,
    pub block_sizes: Vec<u64>,
    pub file_size: u64,
    pub num_files: u64,
    pub duration: Duration,
    /// `--qm`: concurrent writers.
    pub writers: u64,
    pub delay_us: u64,
    pub alignment: u64,
    pub sync: SyncMode,
    pub direct: bool,
    pub reuse: bool,
    pub keep: bool,
    /// `--csvFile`: mqldt's CSV (latscope's log-disk CSV in modern format).
    pub csv_file: Option<PathBuf>,
    /// `--json`, `--csv`, `--markdown`.
    pub outputs: Outputs,
    pub quiet: bool,
    /// `--fail-if`: absolute limits held against every writer after the run.
    pub fail_if: Vec<crate::threshold::Threshold>,
    /// `--load`: the background load generators, checked.
    pub loads: Vec<crate::load::LoadSpec>,
    /// `--max-latency` (also the suite's): writes slower than this are
    /// counted as above the limit.
    pub max_latency_us: Option<u64>,
    /// `--on-threshold`, `--on-end`.
    pub actions: super::actions::Actions,
}

/// The directory of each writer: `--dir` itself for one writer; `DIR1` ..
/// `DIRN` (the number appended to the name as given, as mqldt does) for N.
pub fn writer_dirs(dir: &Path, writers: u64) -> Vec<PathBuf> {
    if writers <= 1 {
        return vec![dir.to_path_buf()];
    }
    (1..=writers)
        .map(|i| {
            let mut name = OsString::from(dir.as_os_str());
            name.push(i.to_string());
            PathBuf::from(name)
        })
        .collect()
}

fn check_dir(option: &str, dir: &Path) -> Result<(), UsageError> {
    let shown_dir = shown(&dir.to_string_lossy());
    if dir.as_os_str().as_bytes().contains(&0) {
        return Err(usage(format!("{option} contains a NUL byte")));
    }
    match std::fs::metadata(dir) {
        // The test files are created there: proved now by creating one (an
        // exclusive probe under a random name, removed at once), which
        // catches what access(2) does not (read-only filesystems, /proc and
        // /sys, where even root cannot create a file), before anything runs.
        Ok(m) if m.is_dir() => match crate::rt::outfile::create_temp(dir, 0o600) {
            Ok((file, probe)) => {
                drop(file);
                // Ours: created exclusively under a fresh random name just now.
                let _ = std::fs::remove_file(&probe);
                Ok(())
            }
            Err(e) => Err(usage(format!(
                "{option} {shown_dir}: cannot create the test files there ({}); choose a writable directory",
                crate::rt::os_error_text(&e)
            ))),
        },
        Ok(_) => Err(usage(format!(
            "{option} {shown_dir} is not a directory; give an existing directory"
        ))),
        Err(e) => Err(usage(format!(
            "{option} {shown_dir}: {}; create the directory first{}",
            crate::rt::os_error_text(&e),
            if option == "--dir" {
                ""
            } else {
                " (with --qm N, mqldt's layout: DIR1 .. DIRN must exist)"
            }
        ))),
    }
}

/// `--csvFile` is written in place (mqldt truncates it, or appends with
/// `--qm`), not renamed over: an existing file must open for writing. It is
/// opened for appending and closed again, so nothing in it changes.
fn check_appendable(path: &Path) -> Result<(), UsageError> {
    use std::os::unix::fs::OpenOptionsExt;
    // A link's target is what gets written; a device, FIFO or socket is
    // opened only at the end (opening a FIFO now could block or lose data).
    let path = match crate::rt::outfile::classify(path) {
        Ok(crate::rt::outfile::Destination::Replace(p)) => p,
        _ => return Ok(()),
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map(drop)
        .map_err(|e| {
            usage(format!(
                "--csvFile {}: cannot be written ({}); choose another path",
                shown(&path.to_string_lossy()),
                crate::rt::os_error_text(&e)
            ))
        })
}

/// The filesystem block size of `dir` (`--alignment 0`).
fn fs_block_size(dir: &Path) -> Result<u64, UsageError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir)
        .map_err(|e| usage(format!("--alignment 0: cannot stat {}: {e}", dir.display())))?;
    Ok(m.blksize().max(512))
}

/// `--filePrefix`: a file name, so that the test files stay in their directory.
fn file_prefix_of(args: &LogdiskArgs) -> Result<String, UsageError> {
    let file_prefix = args
        .file_prefix
        .clone()
        .unwrap_or_else(|| DEFAULT_PREFIX.to_string());
    if file_prefix.is_empty()
        || file_prefix.contains(['/', '\0'])
        || file_prefix == "."
        || file_prefix == ".."
        || file_prefix.len() > MAX_PREFIX_LEN
    {
        return Err(usage(format!(
            "--filePrefix '{}': a file name of 1..{MAX_PREFIX_LEN} bytes without '/' is needed",
            shown(&file_prefix)
        )));
    }
    Ok(file_prefix)
}

/// `--alignment`: as given (clap checked it), or for 0 the block size of
/// `dir` (the first writer's directory).
fn alignment_of(args: &LogdiskArgs, dir: &Path) -> Result<u64, UsageError> {
    match args.alignment {
        None => Ok(DEFAULT_ALIGNMENT),
        Some(0) => fs_block_size(dir),
        Some(n) => Ok(n),
    }
}

/// The file size and every block size against the alignment (O_DIRECT's
/// rule) and each other.
fn check_layout(
    file_size: u64,
    alignment: u64,
    block_sizes: &[u64],
    direct: bool,
) -> Result<(), UsageError> {
    if !file_size.is_multiple_of(alignment) {
        return Err(usage(format!(
            "--fileSize {file_size} is not a multiple of the alignment {alignment}"
        )));
    }
    for &b in block_sizes {
        if b > file_size {
            return Err(usage(format!(
                "--bsize {b} is larger than --fileSize {file_size}"
            )));
        }
        if direct && !b.is_multiple_of(alignment) {
            return Err(usage(format!(
                "--bsize {b} is not a multiple of the alignment {alignment}, which O_DIRECT needs: use a multiple, or --no-direct"
            )));
        }
    }
    Ok(())
}

/// `--csvFile`: a file (written in place, appended with `--qm`).
fn csv_file_of(args: &LogdiskArgs) -> Result<Option<PathBuf>, UsageError> {
    Ok(match args.csv_file.as_deref() {
        None => None,
        Some(p) => match check_output_path("--csvFile", p)? {
            OutputTarget::File(p) => {
                check_appendable(&p)?;
                Some(p)
            }
            OutputTarget::Stdout => {
                return Err(usage("--csvFile needs a file name"));
            }
        },
    })
}

impl LogdiskSettings {
    pub fn from_args(args: &LogdiskArgs) -> Result<LogdiskSettings, UsageError> {
        let dir = args
            .dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        if dir.as_os_str().is_empty() {
            return Err(usage("--dir needs a directory name"));
        }
        let file_prefix = file_prefix_of(args)?;
        let block_sizes = args.bsize.sizes.clone();
        let (file_size, num_files, duration) = (args.file_size, args.num_files, args.duration);
        let writers = args.qm;
        if writers > 1 && block_sizes.len() > 1 {
            return Err(usage(
                "--qm above 1 runs one block size only (as mqldt): give --bsize a single size",
            ));
        }
        let delay_us = args.delay;
        let dirs = writer_dirs(&dir, writers);
        for d in &dirs {
            check_dir(
                if writers > 1 {
                    "--qm directory"
                } else {
                    "--dir"
                },
                d,
            )?;
        }
        let alignment = alignment_of(args, &dirs[0])?;
        let direct = !args.no_direct;
        check_layout(file_size, alignment, &block_sizes, direct)?;
        let csv_file = csv_file_of(args)?;
        let csv_target = csv_file.clone().map(OutputTarget::File);
        let verdict = super::VerdictSettings::from_args_beside(
            &args.verdict,
            &[("--csvFile", csv_target.as_ref())],
        )?;
        let outputs = verdict.outputs;
        if args.format == crate::cli::OutputFormat::Classic && outputs.to_stdout() {
            return Err(usage(
                "--format classic prints mqldt's lines on standard output as the run goes: send --json/--csv/--markdown to a file",
            ));
        }
        Ok(LogdiskSettings {
            dir,
            file_prefix,
            block_sizes,
            file_size,
            num_files,
            duration,
            writers,
            delay_us,
            alignment,
            sync: args.sync.into(),
            direct,
            reuse: args.reuse,
            keep: args.keep,
            csv_file,
            outputs,
            quiet: verdict.quiet,
            fail_if: verdict.fail_if,
            loads: verdict.loads,
            max_latency_us: verdict.max_latency_us,
            actions: verdict.actions,
        })
    }

    pub fn writer_dirs(&self) -> Vec<PathBuf> {
        writer_dirs(&self.dir, self.writers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::format_bytes;

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(65536), "64 KiB");
        assert_eq!(format_bytes(1 << 20), "1 MiB");
        assert_eq!(format_bytes(1_638_400), "1.6 MiB");
        assert_eq!(format_bytes(1000), "1000 B");
    }

    #[test]
    fn writer_directories_append_the_number_as_mqldt() {
        assert_eq!(
            writer_dirs(Path::new("/d/x"), 1),
            vec![PathBuf::from("/d/x")]
        );
        assert_eq!(
            writer_dirs(Path::new("/d/x"), 3),
            ["/d/x1", "/d/x2", "/d/x3"].map(PathBuf::from).to_vec()
        );
    }
}
