//! Finding tracefs, and mounting it where it belongs when it is missing.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// Where tracefs lives on current kernels.
pub const TRACEFS_DIR: &str = "/sys/kernel/tracing";
/// Where older systems reach it (debugfs mounts tracefs there on access).
const DEBUGFS_DIR: &str = "/sys/kernel/debug/tracing";

/// rt-tests' tracing directory (cyclictest's `INFO: debugfs mountpoint:`):
/// `<debugfs>/tracing/` where the mount table has debugfs, else the
/// standard tracefs place.
pub fn debugfs_tracing_dir() -> String {
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "debugfs").then(|| format!("{dir}/tracing/"))
        })
        .unwrap_or_else(|| format!("{TRACEFS_DIR}/"))
}

/// The line rt-tests prints on stderr as it opens its trace marker
/// (cyclictest's `-b --tracemark`, oslat's `-T`): its `info()` of the
/// debugfs tracing directory.
pub fn print_debugfs_mountpoint_info() {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "INFO: debugfs mountpoint: {}",
        debugfs_tracing_dir()
    );
}

pub const MOUNT_HINT: &str = "mount -t tracefs nodev /sys/kernel/tracing";

pub fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn is_tracefs(dir: &Path) -> bool {
    dir.join("tracing_on").exists()
}

/// The tracefs directory if it is mounted: the mount table first (tracefs may
/// be mounted elsewhere), then the two usual places.
pub fn find() -> Option<PathBuf> {
    find_at(Path::new("/"))
}

/// `path` (a system path, `/proc/...`) in the tree whose root is `root`.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// `find` on the system whose root directory is `root` (a fixture tree in
/// the doctor's tests); the answer is a system path (`/sys/kernel/tracing`).
pub fn find_at(root: &Path) -> Option<PathBuf> {
    let usual = [TRACEFS_DIR, DEBUGFS_DIR].into_iter().map(PathBuf::from);
    mount_points_at(root)
        .into_iter()
        .chain(usual)
        .find(|dir| is_tracefs(&under(root, dir)))
}

/// Where the mount table of the system under `root` says tracefs is mounted
/// (system paths, the standard place first), whether or not this process
/// may look inside.
pub fn mount_points_at(root: &Path) -> Vec<PathBuf> {
    let mounts =
        fs::read_to_string(under(root, Path::new("/proc/self/mounts"))).unwrap_or_default();
    let mut points: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, dir, kind) = (fields.next()?, fields.next()?, fields.next()?);
            (kind == "tracefs").then(|| PathBuf::from(unescape_mount_path(dir)))
        })
        .collect();
    // Prefer the standard place when the table lists several.
    points.sort_by_key(|dir| dir != Path::new(TRACEFS_DIR));
    points
}

/// `/proc/self/mounts` writes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_path(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The tracefs directory, mounting tracefs on `/sys/kernel/tracing` first
/// when it is not mounted and we are root.
pub fn find_or_mount() -> Result<PathBuf, String> {
    if let Some(dir) = find() {
        return Ok(dir);
    }
    if !is_root() {
        return Err(format!(
            "tracefs is not mounted (looked in {TRACEFS_DIR} and {DEBUGFS_DIR}); as root: '{MOUNT_HINT}'"
        ));
    }
    mount_tracefs()?;
    let dir = PathBuf::from(TRACEFS_DIR);
    if is_tracefs(&dir) {
        Ok(dir)
    } else {
        Err(format!(
            "mounted tracefs on {TRACEFS_DIR} but it has no tracing_on: is the kernel built with CONFIG_TRACING?"
        ))
    }
}

fn mount_tracefs() -> Result<(), String> {
    let source = CString::new("nodev").unwrap_or_default();
    let target = CString::new(TRACEFS_DIR).unwrap_or_default();
    let kind = CString::new("tracefs").unwrap_or_default();
    // SAFETY: three valid NUL-terminated strings and no mount data.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    let why = match err.raw_os_error() {
        Some(libc::ENODEV) => "the kernel has no tracefs (CONFIG_TRACING unset?)".to_string(),
        Some(libc::ENOENT) => format!("{TRACEFS_DIR} does not exist (is /sys mounted?)"),
        _ => err.to_string(),
    };
    Err(format!(
        "tracefs is not mounted and '{MOUNT_HINT}' failed: {why}"
    ))
}

/// Whether the kernel knows tracefs at all (for checks that must not mount).
pub fn kernel_has_tracefs() -> bool {
    kernel_has_tracefs_at(Path::new("/"))
}

/// `kernel_has_tracefs` on the system whose root directory is `root`.
pub fn kernel_has_tracefs_at(root: &Path) -> bool {
    fs::read_to_string(under(root, Path::new("/proc/filesystems")))
        .map(|t| {
            t.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_mount_table_paths() {
        assert_eq!(
            unescape_mount_path("/sys/kernel/tracing"),
            "/sys/kernel/tracing"
        );
        assert_eq!(unescape_mount_path("/mnt/a\\040b\\134c"), "/mnt/a b\\c");
        assert_eq!(unescape_mount_path("/x\\04"), "/x\\04");
        assert_eq!(unescape_mount_path("\\999"), "\\999");
    }

    #[test]
    fn finds_the_mounted_tracefs_here() {
        // Informational on machines without tracefs; on this one it is there.
        match find() {
            Some(dir) => assert!(dir.join("tracing_on").exists()),
            None => eprintln!("tracefs not mounted here: nothing to check"),
        }
    }
}
