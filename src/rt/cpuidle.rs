//! `--deepest-idle-state N`: the cpuidle states deeper than N are disabled
//! on the measured CPUs while a test measures (the exit from a deep state
//! is latency the first wake-up pays), as cyclictest 2.8 and rtla do.
//!
//! Each state is switched through its `disable` file,
//! `/sys/devices/system/cpu/cpuK/cpuidle/stateS/disable` (1: the governor
//! never picks it). Only states that were enabled are disabled, and only
//! those are enabled again: on every way out that runs code (the end of the
//! run, an error, a stop signal: the `IdleLimit` is dropped) and, after a
//! SIGKILL, by `latscope cleanup`, which finds them in the ownership
//! registry (`rt::registry`, kind `cpuidle-state`): each is recorded as soon
//! as it is disabled.
//!
//! The sysfs root is `LATSCOPE_CPU_SYSFS` when set (tests point it at a
//! fixture tree), else `/sys/devices/system/cpu`. A CPU without a cpuidle
//! driver has no `cpuidle` directory: there is nothing to limit, the run
//! says so in one line and goes on.
//!
//! The API is what any measuring command needs: `IdleLimit::apply` with the
//! measured CPUs, `IdleLimit::record` for the report, then drop it. N is -1
//! for cyclictest 2.8's "disable every idle state".

use crate::rt::registry::{self, Kind};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The environment variable that replaces the sysfs CPU directory.
pub const ROOT_ENV: &str = "LATSCOPE_CPU_SYSFS";
/// The kernel's CPU directory.
const ROOT: &str = "/sys/devices/system/cpu";

/// Where the CPU directories are: `LATSCOPE_CPU_SYSFS`, else sysfs.
pub fn sysfs_root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .filter(|r| !r.is_empty())
        .map_or_else(|| PathBuf::from(ROOT), PathBuf::from)
}

/// What `--deepest-idle-state N` did to the measured CPUs (the report's
/// `idle_states`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleStateLimit {
    /// The deepest state left enabled; -1: none.
    pub deepest: i32,
    pub cpus: Vec<usize>,
    /// The states disabled for the run (and enabled again at its end).
    pub disabled: Vec<DisabledIdleState>,
    /// What there was to say besides: no cpuidle driver, no state deeper
    /// than `deepest`, states someone else had disabled (left so).
    pub notes: Vec<String>,
}

/// One cpuidle state disabled for the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisabledIdleState {
    pub cpu: usize,
    /// The state's index (`stateS`).
    pub state: u32,
    /// Its name (`C6`) and exit latency, as the driver gives them.
    pub name: String,
    pub exit_latency_us: Option<u64>,
}

impl IdleStateLimit {
    /// One line for the console.
    pub fn line(&self) -> String {
        let cpus = crate::units::cpu_list(&self.cpus);
        if self.disabled.is_empty() {
            return format!(
                "idle states: --deepest-idle-state {}: nothing disabled on CPU {cpus}",
                self.deepest
            );
        }
        let mut states: Vec<(u32, &str)> = self
            .disabled
            .iter()
            .map(|d| (d.state, d.name.as_str()))
            .collect();
        states.sort();
        states.dedup();
        let names: Vec<&str> = states.iter().map(|(_, name)| *name).collect();
        format!(
            "idle states: {} ({}) disabled on CPU {cpus} while measuring, enabled again at the end",
            names.join(", "),
            self.deeper_than()
        )
    }

    /// Which states were to be disabled, in words.
    fn deeper_than(&self) -> String {
        if self.deepest < 0 {
            "every state".to_string()
        } else {
            format!("deeper than state{}", self.deepest)
        }
    }
}

/// One idle state of a CPU as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IdleState {
    index: u32,
    /// Its `disable` file.
    disable: PathBuf,
    name: String,
    exit_latency_us: Option<u64>,
    disabled: bool,
}

/// The idle states of `cpu` under `root`, by index; `None` when the CPU has
/// no cpuidle directory (no driver).
fn states_of(root: &Path, cpu: usize) -> io::Result<Option<Vec<IdleState>>> {
    let dir = root.join(format!("cpu{cpu}")).join("cpuidle");
    let listing = match fs::read_dir(&dir) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let read = |path: PathBuf| fs::read_to_string(path).map(|t| t.trim().to_string());
    let mut states = Vec::new();
    for item in listing {
        let item = item?;
        let Some(index) = item
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("state"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let path = item.path();
        states.push(IdleState {
            index,
            disable: path.join("disable"),
            name: read(path.join("name")).unwrap_or_else(|_| format!("state{index}")),
            exit_latency_us: read(path.join("latency")).ok().and_then(|t| t.parse().ok()),
            disabled: read(path.join("disable"))? == "1",
        });
    }
    states.sort_by_key(|s| s.index);
    Ok(Some(states))
}

/// Writes `value` ("0" or "1") into a state's `disable` file.
fn write_disable(path: &Path, value: &str) -> io::Result<()> {
    use std::io::Write;
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// Enables again a state a killed run left disabled (`latscope cleanup`):
/// only a cpuidle `disable` file, never another path a registry names.
pub fn enable(path: &Path) -> io::Result<()> {
    let is_state_file = path.file_name().is_some_and(|n| n == "disable")
        && path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("state"))
        && path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "cpuidle");
    if !is_state_file {
        return Err(io::Error::other("not a cpuidle state's disable file"));
    }
    write_disable(path, "0")
}

/// The idle states disabled for a run: enabled again when dropped.
pub struct IdleLimit {
    /// The `disable` files written, in order.
    written: Vec<PathBuf>,
    record: IdleStateLimit,
}

impl IdleLimit {
    /// Disables the states deeper than `deepest` on `cpus` (sysfs, or
    /// `LATSCOPE_CPU_SYSFS`). Err: one line (a state could not be disabled;
    /// what was done is undone).
    pub fn apply(cpus: &[usize], deepest: i32) -> Result<IdleLimit, String> {
        Self::apply_under(&sysfs_root(), cpus, deepest)
    }

    /// `apply` under the CPU directory `root`.
    pub fn apply_under(root: &Path, cpus: &[usize], deepest: i32) -> Result<IdleLimit, String> {
        let mut limit = IdleLimit {
            written: Vec::new(),
            record: IdleStateLimit {
                deepest,
                cpus: cpus.to_vec(),
                disabled: Vec::new(),
                notes: Vec::new(),
            },
        };
        let mut without_driver = Vec::new();
        let mut nothing_deeper = Vec::new();
        for &cpu in cpus {
            let states = states_of(root, cpu).map_err(|e| {
                format!(
                    "--deepest-idle-state: cannot read the idle states of CPU {cpu} under {}: {}",
                    root.display(),
                    crate::rt::os_error_text(&e)
                )
            })?;
            let Some(states) = states else {
                without_driver.push(cpu);
                continue;
            };
            let deeper: Vec<IdleState> = states
                .into_iter()
                .filter(|s| i64::from(s.index) > i64::from(deepest))
                .collect();
            if deeper.is_empty() {
                nothing_deeper.push(cpu);
            }
            for state in deeper {
                if state.disabled {
                    limit.record.notes.push(format!(
                        "CPU {cpu} state{} ({}) was already disabled: left so",
                        state.index, state.name
                    ));
                    continue;
                }
                // Dropping `limit` on an error enables again what was done.
                write_disable(&state.disable, "1").map_err(|e| {
                    format!(
                        "--deepest-idle-state: cannot disable {}: {} (run as root)",
                        state.disable.display(),
                        crate::rt::os_error_text(&e)
                    )
                })?;
                limit.written.push(state.disable.clone());
                if let Some(identity) = registry::path_identity(&state.disable) {
                    registry::record(Kind::IdleState, &identity);
                }
                limit.record.disabled.push(DisabledIdleState {
                    cpu,
                    state: state.index,
                    name: state.name,
                    exit_latency_us: state.exit_latency_us,
                });
            }
        }
        if !without_driver.is_empty() {
            limit.record.notes.push(format!(
                "CPU {} has no cpuidle driver (no {}/cpuN/cpuidle): there are no idle states to limit",
                crate::units::cpu_list(&without_driver),
                root.display()
            ));
        }
        if !nothing_deeper.is_empty() {
            let cpus = crate::units::cpu_list(&nothing_deeper);
            limit.record.notes.push(if deepest < 0 {
                format!("CPU {cpus} has no idle state: nothing to limit")
            } else {
                format!("CPU {cpus} has no idle state deeper than state{deepest}: nothing to limit")
            });
        }
        Ok(limit)
    }

    /// What was done, for the report.
    pub fn record(&self) -> &IdleStateLimit {
        &self.record
    }
}

impl Drop for IdleLimit {
    /// Enables again every state this run disabled and forgets it in the
    /// registry (a failure is one warning line: `cleanup` will retry).
    fn drop(&mut self) {
        let mut restored = Vec::new();
        for path in &self.written {
            match write_disable(path, "0") {
                Ok(()) => restored.push(path),
                Err(e) => crate::rt::stdio::note_line(&format!(
                    "latscope: warning: could not enable the idle state {} again: {} (latscope cleanup retries)",
                    path.display(),
                    crate::rt::os_error_text(&e)
                )),
            }
        }
        let identities: Vec<String> = restored
            .iter()
            .filter_map(|p| registry::path_identity(p))
            .collect();
        let identities: Vec<&str> = identities.iter().map(String::as_str).collect();
        registry::forget(Kind::IdleState, &identities);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU directory with `states` idle states on each of `cpus`
    /// (state S named C<S>, exit latency 10^S us, all enabled).
    fn tree(cpus: &[usize], states: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temporary directory");
        for &cpu in cpus {
            for s in 0..states {
                let state = dir.path().join(format!("cpu{cpu}/cpuidle/state{s}"));
                fs::create_dir_all(&state).unwrap();
                fs::write(state.join("name"), format!("C{s}\n")).unwrap();
                fs::write(state.join("latency"), format!("{}\n", 10u64.pow(s))).unwrap();
                fs::write(state.join("disable"), "0\n").unwrap();
            }
        }
        dir
    }

    fn disabled(root: &Path, cpu: usize, state: u32) -> bool {
        fs::read_to_string(root.join(format!("cpu{cpu}/cpuidle/state{state}/disable")))
            .unwrap()
            .trim()
            == "1"
    }

    #[test]
    fn disables_only_deeper_states_of_the_measured_cpus_and_enables_them_at_drop() {
        let dir = tree(&[0, 1, 2], 4);
        let root = dir.path();
        let limit = IdleLimit::apply_under(root, &[1, 2], 1).unwrap();
        for cpu in [1, 2] {
            assert_eq!(
                (0..4).map(|s| disabled(root, cpu, s)).collect::<Vec<_>>(),
                [false, false, true, true]
            );
        }
        assert!(
            (0..4).all(|s| !disabled(root, 0, s)),
            "CPU 0 is not measured"
        );
        let record = limit.record().clone();
        assert_eq!(record.disabled.len(), 4);
        assert_eq!(
            record.disabled[0],
            DisabledIdleState {
                cpu: 1,
                state: 2,
                name: "C2".into(),
                exit_latency_us: Some(100)
            }
        );
        assert!(record.notes.is_empty(), "{:?}", record.notes);
        assert_eq!(
            record.line(),
            "idle states: C2, C3 (deeper than state1) disabled on CPU 1-2 while measuring, enabled again at the end"
        );
        drop(limit);
        assert!((0..4).all(|s| !disabled(root, 1, s) && !disabled(root, 2, s)));
    }

    #[test]
    fn a_state_disabled_before_stays_disabled_and_is_said() {
        let dir = tree(&[0], 3);
        let root = dir.path();
        fs::write(root.join("cpu0/cpuidle/state2/disable"), "1\n").unwrap();
        let limit = IdleLimit::apply_under(root, &[0], 0).unwrap();
        assert_eq!(limit.record().disabled.len(), 1);
        assert_eq!(
            limit.record().notes,
            ["CPU 0 state2 (C2) was already disabled: left so"]
        );
        drop(limit);
        assert!(!disabled(root, 0, 1) && disabled(root, 0, 2));
    }

    #[test]
    fn minus_one_disables_every_state_as_cyclictest_2_8s() {
        let dir = tree(&[0], 3);
        let root = dir.path();
        let limit = IdleLimit::apply_under(root, &[0], -1).unwrap();
        assert!((0..3).all(|s| disabled(root, 0, s)));
        assert_eq!(
            limit.record().line(),
            "idle states: C0, C1, C2 (every state) disabled on CPU 0 while measuring, enabled again at the end"
        );
        drop(limit);
        assert!((0..3).all(|s| !disabled(root, 0, s)));
        let empty = tree(&[], 0);
        fs::create_dir_all(empty.path().join("cpu0/cpuidle")).unwrap();
        let limit = IdleLimit::apply_under(empty.path(), &[0], -1).unwrap();
        assert_eq!(
            limit.record().notes,
            ["CPU 0 has no idle state: nothing to limit"]
        );
    }

    #[test]
    fn no_driver_and_no_deeper_state_are_notes_not_errors() {
        let dir = tree(&[1], 2);
        let root = dir.path();
        let limit = IdleLimit::apply_under(root, &[0, 1], 5).unwrap();
        assert!(limit.record().disabled.is_empty());
        assert_eq!(
            limit.record().notes,
            [
                format!(
                    "CPU 0 has no cpuidle driver (no {}/cpuN/cpuidle): there are no idle states to limit",
                    root.display()
                ),
                "CPU 1 has no idle state deeper than state5: nothing to limit".to_string()
            ]
        );
    }

    #[test]
    fn enable_touches_only_cpuidle_disable_files() {
        let dir = tree(&[0], 2);
        let state = dir.path().join("cpu0/cpuidle/state1/disable");
        fs::write(&state, "1").unwrap();
        enable(&state).unwrap();
        assert_eq!(fs::read_to_string(&state).unwrap(), "0");
        let other = dir.path().join("cpu0/cpuidle/state1/name");
        assert!(enable(&other).is_err());
        assert_eq!(fs::read_to_string(&other).unwrap(), "C1\n");
        // The registry's fingerprint: nothing to restore once enabled.
        let identity = registry::path_identity(&state).unwrap();
        let fingerprint = || registry::fingerprint(Kind::IdleState, &identity).unwrap();
        assert_eq!(fingerprint(), None);
        fs::write(&state, "1\n").unwrap();
        assert_eq!(fingerprint().as_deref(), Some("disabled"));
    }
}
