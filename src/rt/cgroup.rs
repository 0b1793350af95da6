//! Where this process's cgroups are: the directory of a cgroup v1
//! controller's hierarchy (`cpu`, `cpuset`) or of the v2 unified one, found
//! from `/proc/self/cgroup` and the mounts in `/proc/self/mountinfo`.
//!
//! Everything is read under a root directory (`/` on a real run, a fixture
//! tree in tests), so the pod's CPU choice (rt::pod_cpus) and the doctor's
//! real-time causes are tested against fake `/proc` and `/sys/fs/cgroup`
//! trees.

use std::fs;
use std::path::{Path, PathBuf};

/// A cgroup hierarchy this process is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupDir {
    /// The directory under the root (mount point joined with the path of
    /// this process's cgroup inside the mount).
    pub dir: PathBuf,
    /// The path as the system shows it (`/sys/fs/cgroup/cpu/user.slice`),
    /// for messages.
    pub shown: String,
    /// The hierarchy's mount point under the root: `nearest` goes no higher.
    pub mount: PathBuf,
}

impl CgroupDir {
    /// The trimmed text of a file of this cgroup (`cpu.rt_runtime_us`).
    pub fn read(&self, file: &str) -> Option<String> {
        fs::read_to_string(self.dir.join(file))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// `file` shown as the system path, for messages.
    pub fn shown(&self, file: &str) -> String {
        format!("{}/{file}", self.shown.trim_end_matches('/'))
    }
}

fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// One mount of `/proc/self/mountinfo`: (root inside the filesystem, mount
/// point, filesystem type, super options).
struct Mount<'a> {
    fs_root: &'a str,
    point: &'a str,
    fs_type: &'a str,
    options: &'a str,
}

fn mounts(mountinfo: &str) -> Vec<Mount<'_>> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let head: Vec<&str> = head.split(' ').collect();
            let tail: Vec<&str> = tail.split(' ').collect();
            Some(Mount {
                fs_root: head.get(3)?,
                point: head.get(4)?,
                fs_type: tail.first()?,
                options: tail.get(2).copied().unwrap_or(""),
            })
        })
        .collect()
}

/// This process's cgroup in the hierarchy of v1 `controller` (`cpu`,
/// `cpuset`), where that controller is mounted as cgroup v1.
pub fn v1(root: &Path, controller: &str) -> Option<CgroupDir> {
    let cgroups = fs::read_to_string(under(root, "/proc/self/cgroup")).ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    let mountinfo = fs::read_to_string(under(root, "/proc/self/mountinfo")).ok()?;
    let mounts = mounts(&mountinfo);
    let mount = mounts
        .iter()
        .find(|m| m.fs_type == "cgroup" && m.options.split(',').any(|o| o == controller))?;
    Some(dir_of(root, mount, &path))
}

/// This process's cgroup in the cgroup v2 (unified) hierarchy, where one is
/// mounted.
pub fn v2(root: &Path) -> Option<CgroupDir> {
    let cgroups = fs::read_to_string(under(root, "/proc/self/cgroup")).ok()?;
    let path = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .to_string();
    let mountinfo = fs::read_to_string(under(root, "/proc/self/mountinfo")).ok()?;
    let mounts = mounts(&mountinfo);
    let mount = mounts.iter().find(|m| m.fs_type == "cgroup2")?;
    Some(dir_of(root, mount, &path))
}

/// The mount point joined with the cgroup's path relative to the mount's
/// own root: without a cgroup namespace a container sees its cgroup's full
/// path in /proc/self/cgroup and only its own subtree mounted.
fn dir_of(root: &Path, mount: &Mount<'_>, path: &str) -> CgroupDir {
    let inside = path
        .strip_prefix(mount.fs_root.trim_end_matches('/'))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        .unwrap_or(path);
    let shown = format!(
        "{}/{}",
        mount.point.trim_end_matches('/'),
        inside.trim_start_matches('/')
    );
    let shown = shown.trim_end_matches('/').to_string();
    CgroupDir {
        dir: under(root, &shown),
        shown,
        mount: under(root, mount.point),
    }
}

/// The first of `files` readable in `start` or, going up, in its nearest
/// ancestor that has it, down to `stop` (a v2 controller's files are only
/// in cgroups where it is enabled; the nearest one decides).
pub fn nearest(start: &CgroupDir, files: &[&str]) -> Option<(String, String)> {
    let stop = &start.mount;
    let mut dir = start.dir.clone();
    let mut shown = start.shown.clone();
    loop {
        for file in files {
            if let Ok(text) = fs::read_to_string(dir.join(file)) {
                return Some((format!("{shown}/{file}"), text.trim().to_string()));
            }
        }
        if dir == *stop || !dir.pop() || !dir.starts_with(stop) {
            return None;
        }
        shown = match shown.rsplit_once('/') {
            Some((up, _)) => up.to_string(),
            None => return None,
        };
    }
}

/// Whether this process's cpuset is its own: v1 `cpuset.cpu_exclusive`
/// (1: no sibling cgroup may hold these CPUs), v2 `cpuset.cpus.partition`
/// of the nearest cgroup that has it (`root` or `isolated`: a partition of
/// its own; `member`, or a partition the kernel found invalid, shares).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpusetExclusivity {
    /// The file read, as the system shows it, and its text.
    pub file: String,
    pub value: String,
    pub exclusive: bool,
}

/// This process's cpuset exclusivity; None where neither file is found.
pub fn cpuset_exclusivity(root: &Path) -> Option<CpusetExclusivity> {
    if let Some(dir) = v1(root, "cpuset") {
        let value = dir.read("cpuset.cpu_exclusive")?;
        return Some(CpusetExclusivity {
            file: dir.shown("cpuset.cpu_exclusive"),
            exclusive: value == "1",
            value,
        });
    }
    let (file, value) = nearest(&v2(root)?, &["cpuset.cpus.partition"])?;
    let exclusive =
        (value.starts_with("root") || value.starts_with("isolated")) && !value.contains("invalid");
    Some(CpusetExclusivity {
        file,
        value,
        exclusive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let at = under(root, path);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        fs::write(at, text).unwrap();
    }

    const HYBRID: &str = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 /machine.slice/libpod-1 /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_controllers_and_the_unified_hierarchy() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert_eq!(v1(r, "cpu"), None);
        write(
            r,
            "/proc/self/cgroup",
            "3:cpuset:/machine.slice/libpod-1\n2:cpu,cpuacct:/pod\n0::/user.slice\n",
        );
        write(r, "/proc/self/mountinfo", HYBRID);
        let cpu = v1(r, "cpu").unwrap();
        assert_eq!(cpu.shown, "/sys/fs/cgroup/cpu/pod");
        assert_eq!(cpu.dir, r.join("sys/fs/cgroup/cpu/pod"));
        // The container's own subtree is the mount's root: its path is "/".
        let cpuset = v1(r, "cpuset").unwrap();
        assert_eq!(cpuset.shown, "/sys/fs/cgroup/cpuset");
        assert_eq!(
            cpuset.shown("cpuset.effective_cpus"),
            "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"
        );
        assert_eq!(v1(r, "memory"), None);
        let unified = v2(r).unwrap();
        assert_eq!(unified.shown, "/sys/fs/cgroup/unified/user.slice");
        // A controller file is looked for upwards, down to the mount.
        write(r, "/sys/fs/cgroup/unified/cpuset.cpus.effective", "0-3\n");
        assert_eq!(
            nearest(&unified, &["cpuset.cpus.effective"]),
            Some((
                "/sys/fs/cgroup/unified/cpuset.cpus.effective".to_string(),
                "0-3".to_string()
            ))
        );
        write(
            r,
            "/sys/fs/cgroup/unified/user.slice/cpuset.cpus.effective",
            "2\n",
        );
        assert_eq!(
            nearest(&unified, &["cpuset.cpus.effective"]).unwrap().1,
            "2"
        );
        assert_eq!(nearest(&unified, &["cpu.max"]), None);
    }

    #[test]
    fn cpuset_exclusivity_v1_and_v2() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert_eq!(cpuset_exclusivity(r), None);
        write(
            r,
            "/proc/self/cgroup",
            "3:cpuset:/machine.slice/libpod-1\n0::/kubepods/pod1\n",
        );
        write(r, "/proc/self/mountinfo", HYBRID);
        // v1: the container's own cgroup is the mount's root.
        write(r, "/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive", "0\n");
        assert_eq!(
            cpuset_exclusivity(r),
            Some(CpusetExclusivity {
                file: "/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive".into(),
                value: "0".into(),
                exclusive: false,
            })
        );
        write(r, "/sys/fs/cgroup/cpuset/cpuset.cpu_exclusive", "1\n");
        assert!(cpuset_exclusivity(r).unwrap().exclusive);
        // v2 only: the nearest partition file decides.
        write(r, "/proc/self/cgroup", "0::/kubepods/pod1\n");
        write(
            r,
            "/proc/self/mountinfo",
            "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        );
        assert_eq!(cpuset_exclusivity(r), None);
        write(
            r,
            "/sys/fs/cgroup/kubepods/cpuset.cpus.partition",
            "member\n",
        );
        let found = cpuset_exclusivity(r).unwrap();
        assert_eq!(
            (found.file.as_str(), found.exclusive),
            ("/sys/fs/cgroup/kubepods/cpuset.cpus.partition", false)
        );
        for (value, exclusive) in [
            ("root", true),
            ("isolated", true),
            ("root invalid (Parent is not a partition root)", false),
            (
                "isolated invalid (Cpu list in cpuset.cpus not exclusive)",
                false,
            ),
        ] {
            write(
                r,
                "/sys/fs/cgroup/kubepods/pod1/cpuset.cpus.partition",
                value,
            );
            let found = cpuset_exclusivity(r).unwrap();
            assert_eq!((found.value.as_str(), found.exclusive), (value, exclusive));
        }
    }
}
