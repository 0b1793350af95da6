//! Can in-kernel (BPF) collection run here, and if not, why: one reason
//! string, shown by the console (`collector: tracefs (bpf: REASON)`), kept
//! in the Report and told by `doctor`.
//!
//! Two layers: `assess` judges facts read from files (capabilities, kernel
//! release, lockdown, the kernel's config when it is on disk), so `doctor`
//! can test it on fixture trees; `check` adds what only trying tells (the
//! system call, an mmapable map, a tracepoint program), on the live machine.

use super::insn::{Insn, Reg};
use super::sys::{BPF_F_MMAPABLE, LoadError, Map, MapKind, Program, ProgramKind};
use std::path::Path;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The oldest kernel the programs are written for: `BPF_F_MMAPABLE` (5.5),
/// `CAP_BPF`/`CAP_PERFMON` (5.8) and a verifier that takes them as written.
pub const MIN_KERNEL: (u32, u32) = (5, 8);

/// What the files of a machine say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// `CapEff` of this process.
    pub capabilities: u64,
    /// `uname -r`.
    pub release: String,
    /// `/sys/kernel/security/lockdown`, e.g. `none [integrity] confidentiality`.
    pub lockdown: Option<String>,
    /// The kernel's build configuration, when found as text
    /// (`/boot/config-RELEASE`).
    pub config: Option<String>,
}

impl Facts {
    /// The facts under `root` (`/` on the live machine) for a kernel
    /// `release` and a process with capabilities `capabilities`.
    pub fn read_at(root: &Path, release: &str, capabilities: u64) -> Facts {
        let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
        Facts {
            capabilities,
            release: release.to_string(),
            lockdown: read("sys/kernel/security/lockdown").map(|t| t.trim().to_string()),
            config: read(&format!("boot/config-{release}")),
        }
    }

    /// The live machine's facts.
    pub fn live() -> Facts {
        let capabilities = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("CapEff:"))
                    .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            })
            .unwrap_or(0);
        let release = nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default();
        Facts::read_at(Path::new("/"), &release, capabilities)
    }
}

/// `major.minor` of a kernel release such as `6.18.44-fc-v782`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn has_capability(capabilities: u64, cap: u32) -> bool {
    capabilities & (1u64 << cap) != 0
}

/// Why the facts alone rule BPF collection out (None: nothing against it).
pub fn assess(facts: &Facts) -> Option<String> {
    let caps = facts.capabilities;
    let bpf_and_perfmon = has_capability(caps, CAP_BPF) && has_capability(caps, CAP_PERFMON);
    if !(has_capability(caps, CAP_SYS_ADMIN) || bpf_and_perfmon) {
        return Some("not permitted: needs CAP_BPF and CAP_PERFMON (or root)".to_string());
    }
    match kernel_version(&facts.release) {
        Some(version) if version < MIN_KERNEL => {
            return Some(format!(
                "kernel {} is older than {}.{}",
                facts.release, MIN_KERNEL.0, MIN_KERNEL.1
            ));
        }
        _ => {}
    }
    if let Some(lockdown) = &facts.lockdown
        && lockdown.contains("[confidentiality]")
    {
        return Some("kernel lockdown (confidentiality) forbids it".to_string());
    }
    if let Some(config) = &facts.config {
        for (option, what) in [
            ("CONFIG_BPF_SYSCALL", "no bpf() system call"),
            ("CONFIG_BPF_EVENTS", "no BPF on trace events"),
        ] {
            if config.contains(&format!("# {option} is not set")) {
                return Some(format!("{what} ({option} unset)"));
            }
        }
    }
    None
}

/// Why BPF collection cannot run here, in the words the collector line
/// and `--collector bpf` show (`not permitted: needs CAP_BPF and
/// CAP_PERFMON (or root)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// Whether BPF collection can run on this machine: the facts, then a real
/// try (an mmapable array and a two-instruction tracepoint program, both
/// closed at once). `Err` is the reason, one line.
pub fn check() -> Result<(), Unavailable> {
    if let Some(reason) = assess(&Facts::live()) {
        return Err(Unavailable(reason));
    }
    try_the_system_call()
}

/// The live half of `check`: what the kernel says when asked (the doctor
/// calls it after `assess`).
pub fn try_the_system_call() -> Result<(), Unavailable> {
    match refusal() {
        Some(reason) => Err(Unavailable(reason)),
        None => Ok(()),
    }
}

/// What the kernel says when asked to create a map and load a program
/// (None: it did both).
fn refusal() -> Option<String> {
    if let Err(e) = Map::create(MapKind::Array, "probe", 8, 1, BPF_F_MMAPABLE) {
        return Some(match e.raw_os_error() {
            Some(libc::ENOSYS) => "no bpf() system call (CONFIG_BPF_SYSCALL unset)".to_string(),
            Some(libc::EPERM | libc::EACCES) => format!(
                "not permitted: the bpf() system call was refused ({})",
                crate::rt::os_error_text(&e)
            ),
            Some(libc::EINVAL) => "this kernel has no mmapable BPF arrays (Linux 5.5)".to_string(),
            _ => format!(
                "the bpf() system call failed: {}",
                crate::rt::os_error_text(&e)
            ),
        });
    }
    let trivial = [Insn::mov64_imm(Reg::R0, 0), Insn::exit()];
    match Program::load(ProgramKind::Tracepoint, "probe", &trivial) {
        Ok(_) => None,
        Err(LoadError::NotPermitted(e)) => Some(format!(
            "not permitted: loading a program was refused ({})",
            crate::rt::os_error_text(&e)
        )),
        Err(LoadError::Other(e)) if e.raw_os_error() == Some(libc::EINVAL) => {
            Some("no BPF on trace events (CONFIG_BPF_EVENTS unset)".to_string())
        }
        Err(e) => Some(format!("a test program did not load: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_CAPS: u64 = 0x1ff_ffff_ffff;
    const BPF_AND_PERFMON: u64 = (1 << CAP_BPF) | (1 << CAP_PERFMON);

    fn facts() -> Facts {
        Facts {
            capabilities: ROOT_CAPS,
            release: "6.18.44-fc-v782".into(),
            lockdown: Some("[none] integrity confidentiality".into()),
            config: None,
        }
    }

    #[test]
    fn versions_of_releases() {
        assert_eq!(kernel_version("6.18.44-fc-v782"), Some((6, 18)));
        assert_eq!(kernel_version("5.8.0"), Some((5, 8)));
        assert_eq!(kernel_version("4.19-rt"), Some((4, 19)));
        assert_eq!(kernel_version("weird"), None);
    }

    #[test]
    fn root_on_a_recent_kernel_may() {
        assert_eq!(assess(&facts()), None);
        // CAP_BPF + CAP_PERFMON without root is enough.
        let f = Facts {
            capabilities: BPF_AND_PERFMON,
            ..facts()
        };
        assert_eq!(assess(&f), None);
    }

    #[test]
    fn each_reason() {
        let only_bpf = Facts {
            capabilities: 1 << CAP_BPF,
            ..facts()
        };
        assert_eq!(
            assess(&only_bpf).as_deref(),
            Some("not permitted: needs CAP_BPF and CAP_PERFMON (or root)")
        );
        let old = Facts {
            release: "5.4.0-150-generic".into(),
            ..facts()
        };
        assert_eq!(
            assess(&old).as_deref(),
            Some("kernel 5.4.0-150-generic is older than 5.8")
        );
        let locked = Facts {
            lockdown: Some("none integrity [confidentiality]".into()),
            ..facts()
        };
        assert_eq!(
            assess(&locked).as_deref(),
            Some("kernel lockdown (confidentiality) forbids it")
        );
        // Integrity lockdown leaves BPF tracing alone.
        let integrity = Facts {
            lockdown: Some("none [integrity] confidentiality".into()),
            ..facts()
        };
        assert_eq!(assess(&integrity), None);
        let no_events = Facts {
            config: Some("CONFIG_BPF_SYSCALL=y\n# CONFIG_BPF_EVENTS is not set\n".into()),
            ..facts()
        };
        assert_eq!(
            assess(&no_events).as_deref(),
            Some("no BPF on trace events (CONFIG_BPF_EVENTS unset)")
        );
    }

    #[test]
    fn facts_from_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/kernel/security")).unwrap();
        std::fs::write(
            dir.path().join("sys/kernel/security/lockdown"),
            "none integrity [confidentiality]\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("boot")).unwrap();
        std::fs::write(
            dir.path().join("boot/config-6.1.0"),
            "CONFIG_BPF_EVENTS=y\n",
        )
        .unwrap();
        let f = Facts::read_at(dir.path(), "6.1.0", 7);
        assert_eq!(
            f,
            Facts {
                capabilities: 7,
                release: "6.1.0".into(),
                lockdown: Some("none integrity [confidentiality]".into()),
                config: Some("CONFIG_BPF_EVENTS=y\n".into()),
            }
        );
    }
}
