//! The test files of one writer and the aligned buffers written to them.
//!
//! Safety rules (latscope runs as root, in directories users name):
//! - a test file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, so
//!   latscope never opens, follows or truncates anything it did not create;
//! - with `--reuse`, an existing file is used only if it is a regular file
//!   (no symlink is followed) of exactly `--fileSize` bytes owned by the
//!   caller; it is written over but never removed;
//! - every file latscope created is removed when the `FileSet` is dropped
//!   (normal end, error, Ctrl-C, panic), unless `--keep`; a file is removed
//!   only if the name still points at the inode latscope created;
//! - a created file is in the ownership registry (`rt::registry`) until
//!   then, so `latscope cleanup --dir` removes what a SIGKILL left.

use crate::rt::os_error_text;
use crate::rt::registry;
use std::alloc::Layout;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// Largest piece written at a time when a file is first written out.
const FILL_CHUNK: u64 = 1 << 20;

/// A heap buffer whose address is aligned as O_DIRECT needs (a `Vec<u8>` is
/// only byte-aligned), filled with a non-zero pattern so that no layer can
/// skip zero blocks.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by this value; writers only read it.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access is read-only.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: u64, align: u64) -> Result<AlignedBuf, String> {
        let layout = usize::try_from(len)
            .ok()
            .zip(usize::try_from(align).ok())
            .and_then(|(l, a)| Layout::from_size_align(l.max(1), a).ok())
            .ok_or_else(|| format!("no buffer of {len} bytes aligned to {align} is possible"))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| format!("could not allocate a {len}-byte write buffer"))?;
        // SAFETY: `raw` points at `layout.size()` writable bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(raw, layout.size()) };
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i % 251) as u8 ^ 0x5a;
        }
        Ok(AlignedBuf { ptr, layout })
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> u64 {
        self.layout.size() as u64
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// Name of test file `index` in `dir`: `<dir>/<prefix>.NNNN`.
pub fn test_file_path(dir: &Path, prefix: &str, index: u64) -> PathBuf {
    dir.join(format!("{prefix}.{index:04}"))
}

/// How the test files are opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFlags {
    pub direct: bool,
    /// O_DSYNC (`--sync dsync`).
    pub dsync: bool,
}

/// One open test file.
pub struct TestFile {
    pub path: PathBuf,
    pub fd: OwnedFd,
    /// Created by this run (and so removed at the end unless `--keep`).
    pub created: bool,
    dev: u64,
    ino: u64,
    /// Its name in the ownership registry (created files only).
    registered: Option<String>,
}

/// The test files of one writer; removes what it created when dropped.
pub struct FileSet {
    pub dir: PathBuf,
    pub files: Vec<TestFile>,
    pub file_size: u64,
    keep: bool,
}

/// Why the files could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepareError {
    /// The filesystem refuses O_DIRECT (EINVAL): `--no-direct` is the fix.
    DirectRefused(String),
    /// Ctrl-C / SIGTERM while the files were being written out.
    Interrupted,
    Failed(String),
}

/// What the files of the run will be: checked before anything is created.
pub struct FilePlan<'a> {
    pub dirs: &'a [PathBuf],
    pub prefix: &'a str,
    pub num_files: u64,
    pub file_size: u64,
    pub reuse: bool,
}

impl FilePlan<'_> {
    /// Every test file name of the run is free, or (with `--reuse`) names a
    /// file latscope may reuse. The message says what to do.
    pub fn check_names(&self) -> Result<(), String> {
        for dir in self.dirs {
            for i in 0..self.num_files {
                let path = test_file_path(dir, self.prefix, i);
                let found = std::fs::symlink_metadata(&path);
                if found.is_ok()
                    && let Some(pid) = running_owner(&path)
                {
                    return Err(in_use(&path, pid));
                }
                match found {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(format!("{}: {}", path.display(), os_error_text(&e)));
                    }
                    Ok(m) if self.reuse => check_reusable(&path, &m, self.file_size)?,
                    Ok(_) => {
                        return Err(format!(
                            "{} already exists; latscope writes only files it creates: remove it, choose another --dir or --filePrefix, or pass --reuse to write over test files of exactly --fileSize bytes",
                            path.display()
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The pid of the running latscope whose test file `path` is.
fn running_owner(path: &Path) -> Option<u32> {
    registry::running_owner_of(registry::Kind::File, path)
}

/// Why `path`, a test file another run is using, cannot be this run's:
/// it is not a leftover to remove.
fn in_use(path: &Path, pid: u32) -> String {
    format!(
        "{} is a test file of another latscope run (pid {pid}), which is using it: choose \
         another --dir or --filePrefix, or wait for that run to end",
        path.display()
    )
}

/// A file `--reuse` may write over: regular, exactly `file_size` bytes,
/// owned by the caller.
fn check_reusable(path: &Path, m: &std::fs::Metadata, file_size: u64) -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let why = if !m.file_type().is_file() {
        "is not a regular file"
    } else if m.len() != file_size {
        "is not of exactly --fileSize bytes"
    } else if m.uid() != euid {
        "is not owned by you"
    } else {
        return Ok(());
    };
    Err(format!(
        "{} {why}: --reuse writes only over regular test files of exactly --fileSize bytes owned by the caller",
        path.display()
    ))
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{}: path contains a NUL byte", path.display()))
}

fn open_raw(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = c_path(path).map_err(io::Error::other)?;
    // SAFETY: valid C string; the mode argument is read only with O_CREAT.
    let fd = unsafe { libc::open(c.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Turns O_DIRECT on (or off) for an open file. Done after opening (not at
/// `open`) so that a filesystem that refuses it leaves latscope holding the
/// file it created, to remove it.
fn set_direct(fd: &OwnedFd, on: bool) -> io::Result<()> {
    // SAFETY: valid descriptor.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: valid descriptor and flags.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The same open file again with `flags` (O_DSYNC cannot be turned on by
/// `fcntl`). Through `/proc/self/fd`, which names the open file itself: no
/// path lookup another program could redirect.
fn reopen(fd: &OwnedFd, flags: libc::c_int) -> io::Result<OwnedFd> {
    let link = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    // The link is followed on purpose: it is the file, not a name of it.
    open_raw(&link, flags & !libc::O_NOFOLLOW)
}

/// Writes a created file out to its full size before the measurement (as
/// mqldt does), the way fio lays out its files: through the page cache in
/// `fill`-sized pieces, then `fdatasync`, then the cached pages dropped, so
/// that the measured writes find the file on the device and nothing of it
/// in memory. Written with synchronous direct writes instead, the same file
/// measured up to 11 % fewer 64 KiB IOPS afterwards on this VM's virtio disk
/// (docs/benchmarks.md, part 4): the layout decides the device's state, and
/// a tool that lays its files out differently than fio measures a different
/// disk.
fn write_out(
    file: &TestFile,
    fill: &AlignedBuf,
    size: u64,
    stop: &mut dyn FnMut() -> bool,
) -> Result<(), PrepareError> {
    let failed = |at: String, e: &io::Error| {
        PrepareError::Failed(format!(
            "writing out {} to its full size ({size} bytes) failed{at}: {}",
            file.path.display(),
            os_error_text(e)
        ))
    };
    let mut offset = 0;
    while offset < size {
        if stop() {
            return Err(PrepareError::Interrupted);
        }
        let len = fill.len().min(size - offset);
        pwrite_exact(&file.fd, fill, len, offset)
            .map_err(|e| failed(format!(" at offset {offset}"), &e))?;
        offset += len;
    }
    // SAFETY: plain syscalls on a valid descriptor.
    if unsafe { libc::fdatasync(file.fd.as_raw_fd()) } < 0 {
        return Err(failed(" (fdatasync)".into(), &io::Error::last_os_error()));
    }
    // SAFETY: as above; a hint, whose failure changes no result.
    unsafe { libc::posix_fadvise(file.fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// `pwrite` of the whole `len` bytes at `offset`, retried on EINTR; a short
/// write is an error (with O_DIRECT it means the device is full or failing).
pub fn pwrite_exact(fd: &OwnedFd, buf: &AlignedBuf, len: u64, offset: u64) -> io::Result<()> {
    debug_assert!(len <= buf.len());
    loop {
        // SAFETY: `buf` holds at least `len` readable bytes.
        let n = unsafe {
            libc::pwrite(
                fd.as_raw_fd(),
                buf.as_ptr().cast(),
                len as usize,
                offset as libc::off_t,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n as u64 != len {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write ({n} of {len} bytes; device full?)"),
            ));
        }
        return Ok(());
    }
}

impl FileSet {
    /// Creates (or with `reuse`, reuses) the `num_files` test files of `dir`
    /// and writes every created file out to its full size, as mqldt does
    /// before measuring. `stop` is asked between two pieces written.
    pub fn prepare(
        plan: &FilePlan<'_>,
        dir: &Path,
        flags: OpenFlags,
        keep: bool,
        stop: &mut dyn FnMut() -> bool,
    ) -> Result<FileSet, PrepareError> {
        let mut set = FileSet {
            dir: dir.to_path_buf(),
            files: Vec::with_capacity(plan.num_files as usize),
            file_size: plan.file_size,
            keep,
        };
        let chunk = plan.file_size.min(FILL_CHUNK);
        let fill = AlignedBuf::new(chunk, 4096).map_err(PrepareError::Failed)?;
        let plain = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let sync_flag = if flags.dsync { libc::O_DSYNC } else { 0 };
        let base = plain | sync_flag;
        for i in 0..plan.num_files {
            let path = test_file_path(dir, plan.prefix, i);
            let failed = |what: &str, e: &io::Error| {
                PrepareError::Failed(format!("{what} {}: {}", path.display(), os_error_text(e)))
            };
            // A file latscope creates is opened without O_DSYNC at first: it
            // is written out through the page cache (see `write_out`).
            let (fd, created) = match open_raw(&path, plain | libc::O_CREAT | libc::O_EXCL) {
                Ok(fd) => (fd, true),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && plan.reuse => {
                    let fd = open_raw(&path, base).map_err(|e| failed("opening", &e))?;
                    let m = std::fs::File::from(fd.try_clone().map_err(|e| failed("opening", &e))?)
                        .metadata()
                        .map_err(|e| failed("checking", &e))?;
                    check_reusable(&path, &m, plan.file_size).map_err(PrepareError::Failed)?;
                    (fd, false)
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    return Err(PrepareError::Failed(format!(
                        "{} appeared while the test files were being created; nothing of it was touched",
                        path.display()
                    )));
                }
                Err(e) => return Err(failed("creating", &e)),
            };
            let m = std::fs::File::from(fd.try_clone().map_err(|e| failed("opening", &e))?)
                .metadata()
                .map_err(|e| failed("checking", &e))?;
            // A created file goes into the ownership registry at once, before
            // it is written out: a kill from here on leaves it findable.
            let registered = created
                .then(|| registry::absolute(&path).and_then(|p| registry::path_identity(&p)))
                .flatten();
            if let Some(identity) = &registered {
                registry::record(registry::Kind::File, identity);
            }
            set.files.push(TestFile {
                path: path.clone(),
                fd,
                created,
                dev: m.dev(),
                ino: m.ino(),
                registered,
            });
            let file = set.files.last_mut().expect("just pushed");
            let refused = |e: io::Error| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    PrepareError::DirectRefused(format!(
                        "the filesystem of {} refuses direct I/O (O_DIRECT: {}): run with --no-direct",
                        dir.display(),
                        os_error_text(&e)
                    ))
                } else {
                    failed("setting O_DIRECT on", &e)
                }
            };
            // Asked before anything is written: a filesystem that refuses
            // direct I/O costs no write-out.
            if flags.direct {
                set_direct(&file.fd, true).map_err(refused)?;
            }
            if created {
                if flags.direct {
                    set_direct(&file.fd, false).map_err(|e| failed("setting O_DIRECT on", &e))?;
                }
                write_out(file, &fill, plan.file_size, stop)?;
                if flags.dsync {
                    file.fd = reopen(&file.fd, base).map_err(|e| failed("reopening", &e))?;
                }
                if flags.direct {
                    set_direct(&file.fd, true).map_err(refused)?;
                }
            }
        }
        Ok(set)
    }

    pub fn paths(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect()
    }

    pub fn reused(&self) -> u64 {
        self.files.iter().filter(|f| !f.created).count() as u64
    }
}

/// The name the open file `fd` has now (the kernel follows renames of it
/// and of its directories), unless it was deleted.
fn current_path(fd: &OwnedFd) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let deleted = link.as_os_str().as_bytes().ends_with(b" (deleted)");
    (link.is_absolute() && !deleted).then_some(link)
}

impl Drop for FileSet {
    fn drop(&mut self) {
        // Removed now, or kept on purpose (--keep): no longer a leftover.
        let registered: Vec<&str> = self
            .files
            .iter()
            .filter_map(|f| f.registered.as_deref())
            .collect();
        if self.keep {
            registry::forget(registry::Kind::File, &registered);
            return;
        }
        for f in self.files.iter().filter(|f| f.created) {
            // Only a name that still points at the inode created by this run:
            // the one it was created under, or, when its directory was
            // renamed meanwhile, the one its descriptor now has.
            let is_ours = |path: &Path| {
                std::fs::symlink_metadata(path).is_ok_and(|m| m.dev() == f.dev && m.ino() == f.ino)
            };
            let path = if is_ours(&f.path) {
                f.path.clone()
            } else {
                match current_path(&f.fd).filter(|p| is_ours(p)) {
                    Some(moved) => {
                        crate::rt::stdio::note_line(&format!(
                            "latscope: warning: test file {} was moved during the run (its directory renamed?); removing it as {}",
                            f.path.display(),
                            moved.display()
                        ));
                        moved
                    }
                    // Removed by someone else, or its name now is another
                    // file's: nothing of ours to remove.
                    None => continue,
                }
            };
            if let Err(e) = std::fs::remove_file(&path) {
                crate::rt::stdio::note_line(&format!(
                    "latscope: warning: could not remove test file {}: {}",
                    path.display(),
                    os_error_text(&e)
                ));
            }
        }
        registry::forget(registry::Kind::File, &registered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan<'a>(dirs: &'a [PathBuf], reuse: bool) -> FilePlan<'a> {
        FilePlan {
            dirs,
            prefix: "t",
            num_files: 2,
            file_size: 8192,
            reuse,
        }
    }

    fn never() -> impl FnMut() -> bool {
        || false
    }

    const BUFFERED: OpenFlags = OpenFlags {
        direct: false,
        dsync: false,
    };

    #[test]
    fn buffers_are_aligned_and_patterned() {
        let b = AlignedBuf::new(65536, 4096).unwrap();
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert_eq!(b.len(), 65536);
        // SAFETY: 16 bytes of the buffer.
        let head = unsafe { std::slice::from_raw_parts(b.as_ptr(), 16) };
        assert_eq!(head[0], 0x5a);
        assert_eq!(head[1], 1 ^ 0x5a);
        assert!(AlignedBuf::new(4096, 3000).is_err());
    }

    #[test]
    fn created_files_are_full_size_private_and_removed() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let set =
            FileSet::prepare(&plan(&dirs, false), d.path(), BUFFERED, false, &mut never()).unwrap();
        let paths = set.paths();
        assert_eq!(paths.len(), 2);
        for p in &paths {
            let m = std::fs::metadata(p).unwrap();
            assert_eq!(m.len(), 8192);
            assert_eq!(m.mode() & 0o077, 0, "{p}: only the owner may access it");
        }
        assert!(paths[1].ends_with("/t.0001"));
        drop(set);
        assert!(paths.iter().all(|p| !Path::new(p).exists()));
    }

    #[test]
    fn existing_files_are_refused_untouched_or_reused_and_kept() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let mine = d.path().join("t.0001");
        std::fs::write(&mine, vec![7u8; 8192]).unwrap();
        let e = plan(&dirs, false).check_names().unwrap_err();
        assert!(e.contains("already exists") && e.contains("--reuse"), "{e}");
        // Reuse: the right size is taken, the file stays after the run.
        plan(&dirs, true).check_names().unwrap();
        let set =
            FileSet::prepare(&plan(&dirs, true), d.path(), BUFFERED, false, &mut never()).unwrap();
        assert_eq!(set.reused(), 1);
        drop(set);
        assert!(mine.exists());
        assert!(!d.path().join("t.0000").exists());
        // Wrong size or a symlink: refused even with --reuse.
        std::fs::write(&mine, b"short").unwrap();
        assert!(
            plan(&dirs, true)
                .check_names()
                .unwrap_err()
                .contains("exactly")
        );
        std::fs::remove_file(&mine).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &mine).unwrap();
        assert!(
            plan(&dirs, true)
                .check_names()
                .unwrap_err()
                .contains("regular")
        );
        let r = FileSet::prepare(&plan(&dirs, true), d.path(), BUFFERED, false, &mut never());
        assert!(matches!(r, Err(PrepareError::Failed(_))));
        // The file created before the refusal is gone again.
        assert!(!d.path().join("t.0000").exists());
    }

    #[test]
    fn a_created_file_is_laid_out_on_the_device_then_opened_for_durable_direct_writes() {
        // The repository's filesystem (a disk): tmpfs keeps every page in memory.
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let mut files = plan(&dirs, false);
        files.file_size = 3 * FILL_CHUNK;
        let flags = OpenFlags {
            direct: true,
            dsync: true,
        };
        let set = match FileSet::prepare(&files, d.path(), flags, false, &mut never()) {
            Err(PrepareError::DirectRefused(why)) => {
                eprintln!("SKIPPED: this filesystem refuses O_DIRECT: {why}");
                return;
            }
            other => other.unwrap(),
        };
        for file in &set.files {
            // SAFETY: valid descriptor.
            let mode = unsafe { libc::fcntl(file.fd.as_raw_fd(), libc::F_GETFL) };
            assert_eq!(
                mode & libc::O_DSYNC,
                libc::O_DSYNC,
                "{}",
                file.path.display()
            );
            assert_eq!(
                mode & libc::O_DIRECT,
                libc::O_DIRECT,
                "{}",
                file.path.display()
            );
            // Still the file latscope created (what is removed at the end).
            let m = std::fs::metadata(&file.path).unwrap();
            assert_eq!(
                (m.dev(), m.ino(), m.len()),
                (file.dev, file.ino, 3 * FILL_CHUNK)
            );
            // Written out in full (the pattern, not a hole), and none of it
            // left in the page cache for the measured writes to meet.
            let data = std::fs::read(&file.path).unwrap();
            assert_eq!(data.len() as u64, 3 * FILL_CHUNK);
            // The fill buffer's pattern, piece after piece.
            for (at, byte) in data.iter().enumerate() {
                let expected = ((at as u64 % FILL_CHUNK) % 251) as u8 ^ 0x5a;
                assert_eq!(*byte, expected, "offset {at} was not written");
            }
            drop(data);
            // SAFETY: valid descriptor, again.
            unsafe { libc::posix_fadvise(file.fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        // One more check on a file nobody has read: its pages are not cached.
        let fresh = {
            let mut one = plan(&dirs, false);
            one.prefix = "fresh";
            one.num_files = 1;
            one.file_size = 3 * FILL_CHUNK;
            FileSet::prepare(&one, d.path(), flags, false, &mut never()).unwrap()
        };
        assert_eq!(cached_pages(&fresh.files[0].fd, 3 * FILL_CHUNK), 0);
    }

    /// How many pages of the first `len` bytes of a file are in the page cache.
    fn cached_pages(fd: &OwnedFd, len: u64) -> usize {
        let pages = len.div_ceil(4096) as usize;
        // SAFETY: a read-only shared mapping of a file that is `len` bytes
        // long, and a vector of one byte per page for mincore.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let mut vec = vec![0u8; pages];
            assert_eq!(libc::mincore(map, len as usize, vec.as_mut_ptr()), 0);
            libc::munmap(map, len as usize);
            vec.iter().filter(|&&b| b & 1 == 1).count()
        }
    }

    #[test]
    fn a_file_replaced_during_the_run_is_not_removed() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let set =
            FileSet::prepare(&plan(&dirs, false), d.path(), BUFFERED, false, &mut never()).unwrap();
        let first = d.path().join("t.0000");
        std::fs::remove_file(&first).unwrap();
        std::fs::write(&first, b"someone else's").unwrap();
        drop(set);
        assert_eq!(std::fs::read(&first).unwrap(), b"someone else's");
    }

    #[test]
    fn an_interrupt_while_writing_out_removes_what_was_created() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let dirs = vec![d.path().to_path_buf()];
        let mut calls = 0;
        let mut stop = || {
            calls += 1;
            calls > 1
        };
        let r = FileSet::prepare(&plan(&dirs, false), d.path(), BUFFERED, false, &mut stop);
        assert_eq!(r.err(), Some(PrepareError::Interrupted));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn test_files_are_numbered_with_four_digits() {
        assert_eq!(
            test_file_path(Path::new("/d"), "p", 12),
            PathBuf::from("/d/p.0012")
        );
    }
}
