//! `--load kcompile`: rteval's kernel-compile load. `make -jJ` of a source
//! tree, restarted (after `make clean`) each time a build ends, for as long
//! as the measurement runs.
//!
//! The build never runs in the user's tree: latscope makes a private
//! directory (`mkdtemp` in `$TMPDIR` or /tmp, mode 0700), copies the tree
//! given with `tree=DIR` into it (or unpacks `tree=FILE.tar.*`, a source
//! tarball with one top directory), or unpacks the kernel source Debian's
//! `linux-source` package installs (`/usr/src/linux-source-*.tar.*`, the
//! newest) and configures it (`make defconfig`), and builds the copy. The
//! directory is removed when the load stops (the end, an error, Ctrl-C,
//! SIGTERM), after the build's process group is killed and reaped; nothing
//! outside it is written or removed.
//!
//! Unlike the other loads, the build runs on the CPUs latscope may use that
//! are not measured, as rteval keeps its loads off the measured CPUs: a
//! run that measures every CPU has none left and cannot take it.
//!
//! One shell runs the rounds (the script below, arguments passed as
//! positional parameters, never spliced into its text), so the whole build
//! is one process group led by a child of latscope, stopped as every load
//! is (`process`). Its output goes to a file in the private directory, so an
//! hour of compiler lines does not fill memory; a build that fails ends the
//! load with the failure's last lines.

use std::path::{Path, PathBuf};

/// Where Debian's `linux-source` package puts the kernel source.
pub const KERNEL_SOURCE_DIR: &str = "/usr/src";

/// The rounds: copy or unpack, configure a kernel tree, then build and
/// clean until stopped. `$1` source (a directory or a tarball), `$2` the
/// private directory, `$3` the jobs. make runs in the background and the
/// shell `wait`s for it, so that a SIGTERM (the parent-death signal when
/// latscope is killed) reaches the trap at once, which takes the whole
/// process group, compilers included, down with the shell; a shell waiting
/// for a foreground command would run its trap only after the build.
const SCRIPT: &str = r#"set -u
src=$1 work=$2 jobs=$3 log=$2/build.log
fail() { tail -n 3 "$log" >&2; echo "kcompile: $1 failed" >&2; exit 1; }
if [ -d "$src" ]; then
  cp -a -- "$src/." "$work/tree" 2>"$log" || fail "copying $src"
else
  mkdir "$work/tree" && tar -xf "$src" -C "$work/tree" --strip-components=1 2>"$log" || fail "unpacking $src"
fi
cd "$work/tree" || exit 1
if [ -f Kconfig ] && [ -d arch ] && [ ! -f .config ]; then
  make defconfig >"$log" 2>&1 || fail "make defconfig"
fi
trap 'trap - TERM; kill -TERM 0' TERM
while :; do
  make -j"$jobs" >"$log" 2>&1 </dev/null & wait $! || fail "make -j$jobs"
  make clean >"$log" 2>&1 </dev/null & wait $! || fail "make clean"
done
"#;

/// A checked `kcompile` item: what it builds and with how many jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kcompile {
    /// `tree=DIR` (or a tarball), or (after checking) the kernel source tarball.
    pub source: Option<PathBuf>,
    /// `jobs=J` or `kcompile:J`; by default twice the load's CPUs.
    pub jobs: Option<u32>,
    /// `source` is the user's `tree=` (not the kernel source found).
    pub tree_given: bool,
}

impl Kcompile {
    /// The jobs for a build on `cpu_count` CPUs.
    pub fn jobs_on(&self, cpu_count: usize) -> u32 {
        self.jobs
            .unwrap_or_else(|| (2 * cpu_count.max(1)).min(super::MAX_COUNT as usize) as u32)
    }

    /// The items as the user could have written them.
    pub fn shown(&self) -> String {
        let mut text = "kcompile".to_string();
        if let Some(jobs) = self.jobs {
            text.push_str(&format!(":{jobs}"));
        }
        if let (true, Some(tree)) = (self.tree_given, &self.source) {
            text.push_str(&format!(",tree={}", tree.display()));
        }
        text
    }

    /// Checks the source (exit 2 on a problem): a given tree must be a
    /// directory with a Makefile; without one, the newest kernel source
    /// tarball in /usr/src is taken, and `tar` must be there to unpack it.
    pub fn checked(mut self) -> Result<Kcompile, String> {
        match &self.source {
            Some(tree) if is_tarball(tree) => need_tar()?,
            Some(tree) => check_tree(tree)?,
            None => {
                let tarball = newest_kernel_source(Path::new(KERNEL_SOURCE_DIR)).ok_or_else(|| {
                    format!(
                        "kcompile: no tree=DIR given and no kernel source in {KERNEL_SOURCE_DIR} (linux-source-*.tar.*): give the source tree to build with tree=DIR, or install linux-source (apt-get install linux-source)"
                    )
                })?;
                need_tar()?;
                self.source = Some(tarball);
            }
        }
        Ok(self)
    }

    /// The command that runs the rounds, for the shell at `shell`.
    pub fn argv(&self, shell: &Path, work: &Path, cpu_count: usize) -> Vec<String> {
        vec![
            shell.display().to_string(),
            "-c".to_string(),
            SCRIPT.to_string(),
            "latscope-kcompile".to_string(),
            self.source
                .as_deref()
                .map(|s| s.display().to_string())
                .unwrap_or_default(),
            work.display().to_string(),
            self.jobs_on(cpu_count).to_string(),
        ]
    }
}

/// A regular file named like a tarball (`linux-6.1.tar.xz`).
fn is_tarball(path: &Path) -> bool {
    path.is_file()
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains(".tar"))
}

fn need_tar() -> Result<(), String> {
    match super::find_in_path("tar") {
        Some(_) => Ok(()),
        None => Err("kcompile: tar is not installed (not found in PATH): install the tar package to unpack the source".to_string()),
    }
}

fn check_tree(tree: &Path) -> Result<(), String> {
    let name = crate::units::shown(&tree.to_string_lossy());
    if !tree.is_dir() {
        return Err(format!(
            "kcompile: tree={name} is not a directory: give the source tree to build (a directory with a Makefile, or a .tar.* of one)"
        ));
    }
    if !["Makefile", "makefile", "GNUmakefile"]
        .iter()
        .any(|m| tree.join(m).is_file())
    {
        return Err(format!(
            "kcompile: tree={name} has no Makefile: give the top of a source tree that make builds"
        ));
    }
    Ok(())
}

/// The newest `linux-source-*.tar.*` file in `dir` (by version order).
pub fn newest_kernel_source(dir: &Path) -> Option<PathBuf> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("linux-source-") && n.contains(".tar"))
        .filter(|n| dir.join(n).is_file())
        .collect();
    names.sort_by(|a, b| version_order(a, b));
    names.pop().map(|n| dir.join(n))
}

/// Names compared with their digit runs as numbers (6.12 after 6.9).
fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let (n, tail) = rest.split_at(digits);
            let text_len =
                tail.len() - tail.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
            let (text, tail) = tail.split_at(text_len);
            out.push((n.parse().unwrap_or(0), text.to_string()));
            rest = tail;
        }
        out
    }
    parts(a).cmp(&parts(b))
}

/// The private directory a build runs in, removed (with everything in it)
/// when dropped.
#[derive(Debug)]
pub struct WorkDir {
    pub path: PathBuf,
}

impl WorkDir {
    pub fn create() -> Result<WorkDir, String> {
        let template = std::env::temp_dir().join("latscope-kcompile-XXXXXX");
        let path = crate::rt::private_dir::make(&template).map_err(|e| {
            format!(
                "--load kcompile: cannot create a private directory in {}: {} (set TMPDIR to a writable directory)",
                std::env::temp_dir().display(),
                crate::rt::os_error_text(&e)
            )
        })?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // remove_dir_all does not follow symbolic links out of the tree.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_kernel_source_is_taken_in_version_order() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(newest_kernel_source(dir.path()), None);
        for name in [
            "linux-source-6.9.tar.xz",
            "linux-source-6.12.tar.xz",
            "linux-source-6.1.tar.bz2",
            "linux-headers-7.0.tar.xz",
            "linux-source-7.0",
        ] {
            if name.ends_with("7.0") {
                std::fs::create_dir(dir.path().join(name)).unwrap();
            } else {
                std::fs::write(dir.path().join(name), "").unwrap();
            }
        }
        assert_eq!(
            newest_kernel_source(dir.path()),
            Some(dir.path().join("linux-source-6.12.tar.xz"))
        );
    }

    #[test]
    fn a_tree_must_be_a_directory_with_a_makefile() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none");
        let e = check_tree(&missing).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
        let e = check_tree(dir.path()).unwrap_err();
        assert!(e.contains("has no Makefile"), "{e}");
        std::fs::write(dir.path().join("Makefile"), "all:\n").unwrap();
        assert_eq!(check_tree(dir.path()), Ok(()));
    }

    #[test]
    fn jobs_default_to_twice_the_load_s_cpus() {
        let k = Kcompile {
            source: Some("/src".into()),
            jobs: None,
            tree_given: true,
        };
        assert_eq!(k.jobs_on(3), 6);
        assert_eq!(k.jobs_on(0), 2);
        assert_eq!(k.shown(), "kcompile,tree=/src");
        let argv =
            Kcompile { jobs: Some(5), ..k }.argv(Path::new("/bin/sh"), Path::new("/tmp/w"), 1);
        assert_eq!(argv[0], "/bin/sh");
        assert_eq!(argv[3..], ["latscope-kcompile", "/src", "/tmp/w", "5"]);
    }

    #[test]
    fn the_work_directory_goes_with_what_is_in_it() {
        let work = WorkDir::create().unwrap();
        let path = work.path.clone();
        std::fs::create_dir_all(path.join("tree/sub")).unwrap();
        std::fs::write(path.join("tree/sub/a.o"), "x").unwrap();
        drop(work);
        assert!(!path.exists());
    }
}
