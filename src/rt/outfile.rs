//! Every output file latscope writes (`--json`, `--csv`, `--markdown`,
//! timer's `-g`, `report -o`, `compare --json`, `doctor --json`, mqldt's CSV)
//! goes through here, so one rule decides what happens to the path given:
//!
//! - a new path or a regular file is replaced atomically: the data goes to
//!   an exclusive temporary file with an unpredictable name in the same
//!   directory (`O_CREAT|O_EXCL|O_NOFOLLOW`), is synced and renamed over the
//!   path, so readers never see half a file. Only that temporary file is
//!   ever removed: a file of the same pattern planted by someone else is
//!   never touched (a fresh random name is tried instead);
//! - a symbolic link stays a symbolic link: what it points to gets the same
//!   rule (a shell redirection also writes the link's target). A dangling
//!   link is refused rather than followed into creating a file, and so is a
//!   link owned by another user in a sticky world-writable directory (the
//!   kernel's `protected_symlinks` rule, which a machine may have off); by
//!   the same rule (the kernel's `protected_regular`) a regular file of
//!   another user there is refused, not replaced;
//! - a regular file that is not writable (a 0444 file, root's own too, or
//!   one this user may not write) is refused, not replaced: its owner
//!   protected it;
//! - a path that is latscope's own standard output or error (`/dev/stdout`,
//!   `/proc/self/fd/1`, or the very file standard output is redirected to) is
//!   written through that descriptor, after what was printed there;
//! - a character device, terminal or FIFO is opened and written in place,
//!   never replaced or truncated; a FIFO nobody reads is an error at once
//!   (`O_NONBLOCK` open), not a hang; a Unix socket is connected to and
//!   written; a block device or a directory is refused.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where the bytes for one output path go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A new path or a regular file (the link's target for a symbolic
    /// link): replaced atomically through a temporary file in its directory.
    Replace(PathBuf),
    /// latscope's own standard output (1) or standard error (2).
    Stdio(i32),
    /// A character device, terminal or FIFO: opened and written in place.
    InPlace(PathBuf),
    /// A Unix socket: connected to and written.
    Socket(PathBuf),
}

fn error(text: impl Into<String>) -> io::Error {
    io::Error::other(text.into())
}

/// Device and inode of an open descriptor, if it is open.
fn fd_identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: fstat writes only into the zeroed local struct.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino))
    }
}

/// The kernel's `protected_symlinks` and `protected_regular` rules, which a
/// machine may have off: in a sticky, world-writable directory (such as
/// /tmp), a symbolic link is followed, and an existing regular file
/// replaced, only when it belongs to this user or to the directory's owner.
/// Otherwise another user could point a planted link at any file root may
/// write, or have root replace a file of theirs (a sticky directory keeps
/// users from replacing each other's files; root is exempt, so latscope
/// applies the rule itself). One rule for both: `what` is the refused
/// entry's kind, for the message.
fn check_owner(path: &Path, entry: &Metadata, what: &str) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if let Ok(d) = std::fs::metadata(dir)
        && d.mode() & libc::S_ISVTX != 0
        && d.mode() & 0o002 != 0
        && entry.uid() != euid
        && entry.uid() != d.uid()
    {
        return Err(error(format!(
            "is {what} of another user in a sticky directory: latscope does not {}; give a path of your own",
            if what == "a symbolic link" {
                "follow it"
            } else {
                "replace it"
            }
        )));
    }
    Ok(())
}

/// A regular file that nobody may write (no write bit, as 0444) or that
/// this user may not write is not replaced: its owner protected it. The
/// rename would replace it anyway (it needs only the directory), and root,
/// whom the kernel lets write any file, would do so without a word; `rm`
/// and `mv` ask first, latscope refuses and says how to go on.
fn check_writable(path: &Path, entry: &Metadata) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let writable_by_mode = entry.mode() & 0o222 != 0;
    let writable_by_us = std::ffi::CString::new(path.as_os_str().as_bytes()).is_ok_and(|c| {
        // SAFETY: a NUL-terminated path; faccessat only reads it.
        unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
    });
    if writable_by_mode && writable_by_us {
        return Ok(());
    }
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if writable_by_mode && entry.uid() != euid {
        // Writable by its owner, not by us: saying "read-only" would send
        // the user to chmod a file that is not theirs.
        return Err(error(format!(
            "belongs to another user (uid {}) and this user may not write it: latscope does not replace it; give a path of your own",
            entry.uid()
        )));
    }
    Err(error(format!(
        "is read-only (mode {:04o}): latscope does not replace a file that is not writable; \
         make it writable (chmod u+w) or give another path",
        entry.mode() & 0o7777
    )))
}

/// Decides what writing `path` means (see the module comment). Errors are
/// short reasons to put after the path.
pub fn classify(path: &Path) -> io::Result<Destination> {
    let link = std::fs::symlink_metadata(path).ok();
    let is_link = link.as_ref().is_some_and(|m| m.file_type().is_symlink());
    if let Some(l) = link.as_ref().filter(|_| is_link) {
        check_owner(path, l, "a symbolic link")?;
    }
    let target = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            if is_link {
                return Err(error(
                    "is a symbolic link to a file that does not exist: latscope does not create files through a link",
                ));
            }
            return Ok(Destination::Replace(path.to_path_buf()));
        }
        Err(e) => return Err(e),
    };
    let identity = (target.dev(), target.ino());
    for fd in [1, 2] {
        if fd_identity(fd) == Some(identity) {
            return Ok(Destination::Stdio(fd));
        }
    }
    let kind = target.file_type();
    if kind.is_file() {
        let file = if is_link {
            std::fs::canonicalize(path)?
        } else {
            path.to_path_buf()
        };
        check_owner(&file, &target, "a file")?;
        check_writable(&file, &target)?;
        Ok(Destination::Replace(file))
    } else if kind.is_char_device() || kind.is_fifo() {
        Ok(Destination::InPlace(path.to_path_buf()))
    } else if kind.is_socket() {
        Ok(Destination::Socket(path.to_path_buf()))
    } else if kind.is_dir() {
        Err(error("is a directory"))
    } else {
        Err(error(
            "is a block device: latscope writes only files, character devices, FIFOs and sockets",
        ))
    }
}

/// Temporary files being written right now, for `remove_pending_temporaries`.
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes the temporary files of outputs being written at this moment (all
/// created by this process, exclusively): for a process that is about to
/// exit on a stop signal.
pub fn remove_pending_temporaries() {
    if let Ok(pending) = PENDING.lock() {
        for tmp in pending.iter() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// `remove_pending_temporaries` for a process that is out of memory
/// (rt::oom): the list is taken only when free (the allocating thread may
/// hold it), and a short path is removed without allocating.
pub fn remove_pending_temporaries_now() {
    if let Ok(pending) = PENDING.try_lock() {
        for tmp in pending.iter() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

fn set_pending(tmp: &Path, pending: bool) {
    if let Ok(mut list) = PENDING.lock() {
        if pending {
            list.push(tmp.to_path_buf());
        } else {
            list.retain(|p| p != tmp);
        }
    }
}

/// 16 random hexadecimal digits (getrandom; the clock and pid if that fails).
fn random_suffix() -> String {
    let mut bytes = [0u8; 8];
    // SAFETY: writes at most bytes.len() bytes into the local buffer.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let value = if got == bytes.len() as isize {
        u64::from_ne_bytes(bytes)
    } else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        now ^ (u64::from(std::process::id()) << 32)
    };
    format!("{value:016x}")
}

/// Creates a new file with an unpredictable name in `dir`, exclusively
/// (`O_EXCL|O_NOFOLLOW`: an existing file or a link planted at that name is
/// never opened; another name is tried). `mode` is filtered by the umask.
/// The caller owns the file and is the only one who may remove it.
pub fn create_temp(dir: &Path, mode: u32) -> io::Result<(File, PathBuf)> {
    // Short, so that it fits wherever a valid name does (NAME_MAX).
    create_unpredictable(dir, ".latscope-", ".tmp", mode)
}

/// `create_temp` with the name `PREFIX<16 random hex digits>SUFFIX`: a new
/// file a user is meant to find (a verifier's log), created as exclusively.
pub fn create_unpredictable(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    mode: u32,
) -> io::Result<(File, PathBuf)> {
    let mut last = error("no free temporary name");
    for _ in 0..16 {
        let tmp = dir.join(format!("{prefix}{}{suffix}", random_suffix()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes to standard output or error through the process's own stream
/// (after whatever was printed there), flushed.
fn write_stdio(fd: i32, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    if fd == 2 {
        let mut lock = io::stderr().lock();
        write(&mut lock).and_then(|_| lock.flush())
    } else {
        let mut out = crate::rt::stdio::out();
        write(&mut out).and_then(|_| out.flush())
    }
}

/// Opens a character device, terminal or FIFO for writing in place: no
/// truncation, no creation, never becomes the controlling terminal, and a
/// FIFO without a reader fails at once (ENXIO) instead of blocking.
pub fn open_in_place(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ENXIO) {
                error("no process is reading this FIFO (start the reader first)")
            } else {
                e
            }
        })?;
    // Back to blocking writes: a reader slower than latscope is not an error.
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                libc::F_SETFL,
                flags & !libc::O_NONBLOCK,
            );
        }
    }
    Ok(file)
}

/// Writes what `write` produces to `path` by the rule of the module comment.
/// New files get mode 0666 less the umask. Errors are the OS's or the
/// refusal's reason; the caller names the path.
pub fn write_output_file(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    match classify(path)? {
        Destination::Stdio(fd) => write_stdio(fd, write),
        Destination::InPlace(p) => {
            let mut file = open_in_place(&p)?;
            let mut buffered = io::BufWriter::new(&mut file);
            write(&mut buffered)?;
            buffered.flush()
        }
        Destination::Socket(p) => {
            let mut stream = std::os::unix::net::UnixStream::connect(&p)?;
            let mut buffered = io::BufWriter::new(&mut stream);
            write(&mut buffered)?;
            buffered.flush()?;
            drop(buffered);
            stream.shutdown(std::net::Shutdown::Write)
        }
        Destination::Replace(p) => {
            let (mut file, tmp) = create_temp(parent_of(&p), 0o666)?;
            set_pending(&tmp, true);
            let result = (|| {
                let mut buffered = io::BufWriter::new(&mut file);
                write(&mut buffered)?;
                buffered.flush()?;
                drop(buffered);
                file.sync_all()?;
                std::fs::rename(&tmp, &p)
            })();
            if result.is_err() {
                // Only the temporary file this call created.
                let _ = std::fs::remove_file(&tmp);
            }
            set_pending(&tmp, false);
            result
        }
    }
}

/// Writes in place instead of replacing (mqldt's CSV: truncated for one
/// writer, appended with `--qm`): a regular file (or a link's target) is
/// opened with `O_NOFOLLOW` on its resolved path, created with `mode` when
/// new; other destinations as `write_output_file`. `write` learns whether
/// the file was empty before (for a header line); a device, FIFO, socket or
/// standard stream counts as empty.
pub fn write_in_place(
    path: &Path,
    append: bool,
    mode: u32,
    write: &mut dyn FnMut(&mut dyn Write, bool) -> io::Result<()>,
) -> io::Result<()> {
    match classify(path)? {
        Destination::Replace(p) => {
            let mut options = OpenOptions::new();
            if append {
                options.append(true);
            } else {
                options.write(true).truncate(true);
            }
            let mut file = options
                .create(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&p)?;
            let empty = file.metadata()?.len() == 0;
            let mut text = Vec::new();
            write(&mut text, empty)?;
            file.write_all(&text)?;
            file.sync_all()
        }
        _ => write_output_file(path, &mut |out| write(out, true)),
    }
}

/// Whether two output paths end up in the same file (both existing and
/// the same inode, or the same resolved location for a new path). Standard
/// streams, devices, FIFOs and sockets never count: writing them twice loses
/// nothing.
pub fn same_file_destination(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| -> Option<PathBuf> {
        match classify(p).ok()? {
            Destination::Replace(r) => {
                let dir = std::fs::canonicalize(parent_of(&r)).ok()?;
                Some(dir.join(r.file_name()?))
            }
            _ => None,
        }
    };
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => {
            x == y
                || matches!(
                    (std::fs::metadata(&x), std::fs::metadata(&y)),
                    (Ok(m), Ok(n)) if m.dev() == n.dev() && m.ino() == n.ino()
                )
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_text(path: &Path, text: &str) -> io::Result<()> {
        write_output_file(path, &mut |out| out.write_all(text.as_bytes()))
    }

    #[test]
    fn a_new_path_and_a_regular_file_are_replaced_whole() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.json");
        write_text(&f, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one");
        write_text(&f, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two");
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temp left"
        );
    }

    #[test]
    fn a_read_only_file_is_refused_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.json");
        std::fs::write(&f, "kept").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e = write_text(&f, "new").unwrap_err().to_string();
        assert!(e.contains("is read-only (mode 0444)"), "{e}");
        assert!(e.contains("chmod u+w"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_text(&f, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
    }

    #[test]
    fn a_symlink_stays_and_its_target_is_written() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target.json");
        std::fs::write(&target, "old").unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_text(&link, "new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn a_dangling_symlink_is_refused_and_nothing_is_created() {
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(d.path().join("missing"), &link).unwrap();
        let e = write_text(&link, "x").unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(!d.path().join("missing").exists());
    }

    #[test]
    fn a_character_device_is_written_in_place() {
        // Standard output itself when the tests run with it on /dev/null.
        assert!(matches!(
            classify(Path::new("/dev/null")).unwrap(),
            Destination::InPlace(_) | Destination::Stdio(_)
        ));
        write_text(Path::new("/dev/null"), "x").unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn a_fifo_without_reader_fails_at_once_and_with_one_is_written() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = write_text(&fifo, "x").unwrap_err();
        assert!(e.to_string().contains("no process is reading"), "{e}");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        // The reader's open blocks until a writer comes: retry until it is there.
        let mut result = write_text(&fifo, "data");
        for _ in 0..200 {
            if result.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            result = write_text(&fifo, "data");
        }
        result.unwrap();
        assert_eq!(reader.join().unwrap(), "data");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    #[test]
    fn a_planted_temporary_name_is_never_touched() {
        let d = tempfile::tempdir().unwrap();
        let planted = d
            .path()
            .join(format!(".latscope-{}.tmp", std::process::id()));
        std::fs::write(&planted, "theirs").unwrap();
        write_text(&d.path().join("r.json"), "mine").unwrap();
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "theirs");
        let (_f, a) = create_temp(d.path(), 0o600).unwrap();
        let (_g, b) = create_temp(d.path(), 0o600).unwrap();
        assert_ne!(a, b, "names are unpredictable and distinct");
    }

    #[test]
    fn in_place_appends_and_reports_emptiness() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c.csv");
        let mut seen = Vec::new();
        for _ in 0..2 {
            write_in_place(&f, true, 0o600, &mut |out, empty| {
                seen.push(empty);
                out.write_all(b"row\n")
            })
            .unwrap();
        }
        assert_eq!(seen, [true, false]);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "row\nrow\n");
    }

    #[test]
    fn same_destination_sees_through_links_and_spellings() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.json");
        assert!(same_file_destination(
            &f,
            &d.path().join(".").join("a.json")
        ));
        std::fs::write(&f, "x").unwrap();
        let link = d.path().join("l.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(same_file_destination(&f, &link));
        assert!(!same_file_destination(&f, &d.path().join("b.json")));
        assert!(!same_file_destination(
            Path::new("/dev/null"),
            Path::new("/dev/null")
        ));
    }
}
