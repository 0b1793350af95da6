//! Which CPUs to measure, as a pod's runners choose them, but right: the
//! CPUs this process may use are those of its affinity (`Cpus_allowed_list`)
//! that its cgroup's effective cpuset also holds; housekeeping (the main
//! thread, the monitor, the trace reader) keeps the first of them **and
//! every SMT sibling of it**; the rest are measured.
//!
//! container-perf-tools' `cmd.sh` drops the sibling with a shell string
//! edit, `${cpus/,$sibling/}` style, that removes text rather than a CPU:
//! sibling `1` of CPU 0 in `2,3,10,11` removes the `,1` of `,10` and `,11`
//! and leaves `2,301`. Here the lists are sets of numbers.
//!
//! `choose` is the pure core (a `PodTopology` in, a `PodCpus` out), `read`
//! the thin reader of `/proc` and `/sys` under a root.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::cgroup;
use crate::units::{cpu_list, parse_cpu_list};

/// What the choice is made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodTopology {
    /// `Cpus_allowed_list` of /proc/self/status (the affinity mask).
    pub allowed: Vec<usize>,
    /// The cgroup's effective cpuset (v1 `cpuset.effective_cpus`, v2
    /// `cpuset.cpus.effective`) and the file it came from; None where
    /// neither could be read.
    pub cgroup: Option<(String, Vec<usize>)>,
    /// `thread_siblings_list` of each CPU that has one (the CPU itself
    /// included, as the kernel lists it).
    pub siblings: BTreeMap<usize, Vec<usize>>,
}

/// The choice: every usable CPU is either housekeeping or measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodCpus {
    /// Allowed and in the cgroup's cpuset, ascending.
    pub usable: Vec<usize>,
    /// The first usable CPU and its SMT siblings (those usable).
    pub housekeeping: Vec<usize>,
    /// The usable CPUs but housekeeping; all of them where that is nothing.
    pub measured: Vec<usize>,
    /// One line per CPU set left out (or kept against the rule), and why.
    pub notes: Vec<String>,
    /// The first usable CPU's core as the kernel lists it
    /// (`thread_siblings_list`, every CPU of it, usable or not): more than
    /// one CPU means SMT is on.
    pub first_core: Vec<usize>,
}

/// Why a pod's CPUs cannot host a test that keeps a housekeeping CPU
/// apart (the cnf-tests runners' rule, which the container entrypoints
/// follow too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// Fewer than 2 usable CPUs: one for housekeeping, one to measure.
    TooFew,
    /// SMT on and fewer than 4: the housekeeping core's threads, and a
    /// whole core to measure (a Guaranteed pod gets whole cores).
    SmtNeedsFour,
    /// Every usable CPU shares the housekeeping CPU's core.
    OneCore,
}

impl PodCpus {
    /// Whether these CPUs can host such a test, and why not.
    pub fn shortfall(&self) -> Option<Shortfall> {
        let n = self.usable.len();
        if n < 2 {
            Some(Shortfall::TooFew)
        } else if self.first_core.len() > 1 && n < 4 {
            Some(Shortfall::SmtNeedsFour)
        } else if self.measured.iter().all(|c| self.housekeeping.contains(c)) {
            Some(Shortfall::OneCore)
        } else {
            None
        }
    }
}

impl Shortfall {
    /// One line for people: what the pod has and what it needs.
    pub fn describe(&self, cpus: &PodCpus) -> String {
        let has = format!(
            "this process may use CPU {}",
            if cpus.usable.is_empty() {
                "none".to_string()
            } else {
                cpu_list(&cpus.usable)
            }
        );
        match self {
            Shortfall::TooFew => format!(
                "{has}, fewer than 2: the test keeps the first CPU for housekeeping and measures the others; give the pod at least 2 CPUs (4 with SMT)"
            ),
            Shortfall::SmtNeedsFour => format!(
                "{has}, fewer than 4 with SMT on (CPU {} share a core): the housekeeping CPU's core is left out whole and a whole core is measured; give the pod at least 4 CPUs",
                cpu_list(&cpus.first_core)
            ),
            Shortfall::OneCore => format!(
                "{has}, all on the housekeeping CPU's core (CPU {}): nothing is left to measure; give the pod CPUs of another core",
                cpu_list(&cpus.first_core)
            ),
        }
    }
}

impl PodTopology {
    /// The CPUs sharing `cpu`'s core, `cpu` itself included.
    fn core_of(&self, cpu: usize) -> Vec<usize> {
        let mut core = self.siblings.get(&cpu).cloned().unwrap_or_default();
        if !core.contains(&cpu) {
            core.push(cpu);
        }
        core.sort_unstable();
        core.dedup();
        core
    }
}

/// The pure core: see the module's comment.
pub fn choose(t: &PodTopology) -> PodCpus {
    let mut allowed = t.allowed.clone();
    allowed.sort_unstable();
    allowed.dedup();
    let mut notes = Vec::new();
    let usable: Vec<usize> = match &t.cgroup {
        Some((file, cpuset)) => {
            let outside: Vec<usize> = allowed
                .iter()
                .copied()
                .filter(|c| !cpuset.contains(c))
                .collect();
            if !outside.is_empty() {
                notes.push(format!(
                    "left out CPU {}: in Cpus_allowed_list but not in the cgroup's effective cpuset ({file}: {})",
                    cpu_list(&outside),
                    cpu_list(cpuset)
                ));
            }
            allowed.into_iter().filter(|c| cpuset.contains(c)).collect()
        }
        None => allowed,
    };
    let Some(&first) = usable.first() else {
        notes.push("no CPU is both allowed and in the cgroup's cpuset".to_string());
        return PodCpus {
            notes,
            ..PodCpus::default()
        };
    };
    let core = t.core_of(first);
    let first_core = core.clone();
    let housekeeping: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| core.contains(c))
        .collect();
    let measured: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| !housekeeping.contains(c))
        .collect();
    let siblings: Vec<usize> = housekeeping
        .iter()
        .copied()
        .filter(|&c| c != first)
        .collect();
    let why = if siblings.is_empty() {
        format!("housekeeping: CPU {first} is the first usable one, where the main thread runs")
    } else {
        format!(
            "housekeeping: CPU {first} is the first usable one, where the main thread runs, and CPU {} shares its core (SMT)",
            cpu_list(&siblings)
        )
    };
    if measured.is_empty() {
        notes.push(format!(
            "measuring CPU {} although {why}: it is the only core this process may use",
            cpu_list(&housekeeping)
        ));
        return PodCpus {
            measured: usable.clone(),
            usable,
            housekeeping,
            notes,
            first_core,
        };
    }
    notes.push(format!("left out CPU {} ({why})", cpu_list(&housekeeping)));
    PodCpus {
        usable,
        housekeeping,
        measured,
        notes,
        first_core,
    }
}

/// The cgroup's effective cpuset of this process: v1's
/// `cpuset.effective_cpus` (`cpuset.cpus` on kernels before it), else the
/// nearest v2 `cpuset.cpus.effective`.
fn cgroup_cpuset(root: &Path) -> Option<(String, Vec<usize>)> {
    let found = match cgroup::v1(root, "cpuset") {
        Some(dir) => cgroup::nearest(&dir, &["cpuset.effective_cpus", "cpuset.cpus"]),
        None => cgroup::v2(root).and_then(|dir| cgroup::nearest(&dir, &["cpuset.cpus.effective"])),
    }?;
    let cpus = parse_cpu_list(&found.1).filter(|c| !c.is_empty())?;
    Some((found.0, cpus))
}

/// The thin reader: this process's topology under `root` (`/` on a real
/// run); no allowed CPUs where `Cpus_allowed_list` cannot be read (`live`
/// then takes the affinity mask).
pub fn read(root: &Path) -> PodTopology {
    let allowed = fs::read_to_string(root.join("proc/self/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(parse_cpu_list)
        })
        .unwrap_or_default();
    let sysfs = root.join("sys/devices/system/cpu");
    let siblings = allowed
        .iter()
        .filter_map(|&cpu| {
            let path = sysfs.join(format!("cpu{cpu}/topology/thread_siblings_list"));
            let list = parse_cpu_list(&fs::read_to_string(path).ok()?)?;
            Some((cpu, list))
        })
        .collect();
    PodTopology {
        cgroup: cgroup_cpuset(root),
        allowed,
        siblings,
    }
}

/// The choice on the machine latscope runs on.
pub fn live() -> PodCpus {
    let mut topology = read(Path::new("/"));
    if topology.allowed.is_empty() {
        topology.allowed = super::sched::allowed_cpus();
    }
    choose(&topology)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads per core, sibling of CPU n is n + `half`.
    fn smt(cpus: usize, half: usize) -> BTreeMap<usize, Vec<usize>> {
        (0..cpus)
            .map(|c| (c, vec![c % half, c % half + half]))
            .collect()
    }

    fn topology(allowed: &str, siblings: BTreeMap<usize, Vec<usize>>) -> PodTopology {
        PodTopology {
            allowed: parse_cpu_list(allowed).unwrap(),
            cgroup: None,
            siblings,
        }
    }

    #[test]
    fn the_list_cmd_sh_mangles_stays_a_set_of_cpus() {
        // cmd.sh's edit of `0,1,2,3,10,11` with sibling 1 makes `0,2,301`;
        // here CPU 0's sibling is CPU 1 (a 2-thread core numbered 0-1).
        let siblings: BTreeMap<usize, Vec<usize>> =
            (0..12).map(|c| (c, vec![c & !1, c | 1])).collect();
        let c = choose(&topology("0-3,10,11", siblings));
        assert_eq!(c.housekeeping, [0, 1]);
        assert_eq!(c.measured, [2, 3, 10, 11]);
        assert_eq!(cpu_list(&c.measured), "2-3,10-11");
        assert_eq!(
            c.notes,
            [
                "left out CPU 0-1 (housekeeping: CPU 0 is the first usable one, where the main thread runs, and CPU 1 shares its core (SMT))"
            ]
        );
        // The case: sibling 1 is not in the pod at all; cmd.sh's
        // `,1` edit of `2,3,10,11` would still leave `2,301`.
        let siblings: BTreeMap<usize, Vec<usize>> =
            (0..12).map(|c| (c, vec![c & !1, c | 1])).collect();
        let c = choose(&topology("0,2,3,10,11", siblings));
        assert_eq!((c.housekeeping, c.measured), (vec![0], vec![2, 3, 10, 11]));
    }

    #[test]
    fn smt_siblings_numbered_far_apart() {
        // 16 threads, sibling of n is n + 8: the pod has 2-5 and 10-13.
        let c = choose(&topology("2-5,10-13", smt(16, 8)));
        assert_eq!(c.housekeeping, [2, 10]);
        assert_eq!(c.measured, [3, 4, 5, 11, 12, 13]);
    }

    #[test]
    fn smt_off_single_cpu_and_a_single_core() {
        // SMT off: each CPU is its own core.
        let solo: BTreeMap<usize, Vec<usize>> = (0..8).map(|c| (c, vec![c])).collect();
        let c = choose(&topology("4-7", solo.clone()));
        assert_eq!((c.housekeeping, c.measured), (vec![4], vec![5, 6, 7]));
        assert_eq!(
            c.notes,
            [
                "left out CPU 4 (housekeeping: CPU 4 is the first usable one, where the main thread runs)"
            ]
        );
        // No topology files at all (a container without /sys): the same.
        let c = choose(&topology("4-7", BTreeMap::new()));
        assert_eq!(c.measured, [5, 6, 7]);
        // One CPU: it is measured, and the note says so.
        let c = choose(&topology("3", solo));
        assert_eq!((c.housekeeping, c.measured), (vec![3], vec![3]));
        assert!(c.notes[0].starts_with("measuring CPU 3 although housekeeping"));
        // One core of two threads.
        let c = choose(&topology("0,8", smt(16, 8)));
        assert_eq!(c.measured, [0, 8]);
        assert!(c.notes[0].contains("the only core"), "{:?}", c.notes);
    }

    #[test]
    fn the_cgroup_cpuset_narrows_the_affinity() {
        let mut t = topology("0-7", smt(8, 4));
        t.cgroup = Some((
            "/sys/fs/cgroup/cpuset/cpuset.effective_cpus".into(),
            parse_cpu_list("1-3,5-7").unwrap(),
        ));
        let c = choose(&t);
        assert_eq!(c.usable, [1, 2, 3, 5, 6, 7]);
        assert_eq!(c.housekeeping, [1, 5]);
        assert_eq!(c.measured, [2, 3, 6, 7]);
        assert_eq!(
            c.notes[0],
            "left out CPU 0,4: in Cpus_allowed_list but not in the cgroup's effective cpuset (/sys/fs/cgroup/cpuset/cpuset.effective_cpus: 1-3,5-7)"
        );
        assert!(c.notes[1].starts_with("left out CPU 1,5 (housekeeping: CPU 1"));
        t.cgroup = Some(("x".into(), vec![9]));
        let c = choose(&t);
        assert!(c.measured.is_empty());
        assert_eq!(
            c.notes.last().unwrap(),
            "no CPU is both allowed and in the cgroup's cpuset"
        );
    }

    #[test]
    fn the_runners_rule_on_fixture_topologies() {
        let solo: BTreeMap<usize, Vec<usize>> = (0..8).map(|c| (c, vec![c])).collect();
        let short = |allowed: &str, siblings: &BTreeMap<usize, Vec<usize>>| {
            choose(&topology(allowed, siblings.clone())).shortfall()
        };
        // SMT off: 2 CPUs are enough, 1 is not.
        assert_eq!(short("4-5", &solo), None);
        assert_eq!(short("3", &solo), Some(Shortfall::TooFew));
        // SMT on (sibling of n is n + 8): 2 or 3 CPUs are not enough, even
        // when the first one's sibling is not in the pod.
        let smt16 = smt(16, 8);
        assert_eq!(short("0,8", &smt16), Some(Shortfall::SmtNeedsFour));
        assert_eq!(short("0-1", &smt16), Some(Shortfall::SmtNeedsFour));
        assert_eq!(short("0-1,8", &smt16), Some(Shortfall::SmtNeedsFour));
        let c = choose(&topology("0-1,8-9", smt16.clone()));
        assert_eq!((c.shortfall(), c.first_core.clone()), (None, vec![0, 8]));
        assert_eq!(c.measured, [1, 9]);
        // The list cmd.sh mangles (`2,301`): the rule and the choice hold.
        let pairs: BTreeMap<usize, Vec<usize>> =
            (0..12).map(|c| (c, vec![c & !1, c | 1])).collect();
        let c = choose(&topology("0-3,10,11", pairs));
        assert_eq!(
            (c.shortfall(), c.measured.clone()),
            (None, vec![2, 3, 10, 11])
        );
        // Four threads of one core (SMT4): nothing left to measure.
        let smt4: BTreeMap<usize, Vec<usize>> = (0..4).map(|c| (c, vec![0, 1, 2, 3])).collect();
        let c = choose(&topology("0-3", smt4));
        assert_eq!(c.shortfall(), Some(Shortfall::OneCore));
        assert_eq!(
            Shortfall::OneCore.describe(&c),
            "this process may use CPU 0-3, all on the housekeeping CPU's core (CPU 0-3): nothing is left to measure; give the pod CPUs of another core"
        );
        let c = choose(&topology("5", solo));
        assert_eq!(
            Shortfall::TooFew.describe(&c),
            "this process may use CPU 5, fewer than 2: the test keeps the first CPU for housekeeping and measures the others; give the pod at least 2 CPUs (4 with SMT)"
        );
    }

    #[test]
    fn the_reader_on_a_fixture_tree() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let write = |path: &str, text: &str| {
            let at = r.join(path);
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            fs::write(at, text).unwrap();
        };
        write(
            "proc/self/status",
            "Name:\tx\nCpus_allowed_list:\t0-15:2/4\n",
        );
        write("proc/self/cgroup", "0::/kubepods/pod1\n");
        write(
            "proc/self/mountinfo",
            "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        );
        write("sys/fs/cgroup/kubepods/cpuset.cpus.effective", "1-13\n");
        for cpu in 0..16 {
            write(
                &format!("sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"),
                &format!("{},{}\n", cpu % 8, cpu % 8 + 8),
            );
        }
        let t = read(r);
        assert_eq!(t.allowed, [0, 1, 4, 5, 8, 9, 12, 13]);
        assert_eq!(
            t.cgroup,
            Some((
                "/sys/fs/cgroup/kubepods/cpuset.cpus.effective".to_string(),
                (1..=13).collect()
            ))
        );
        let c = choose(&t);
        assert_eq!(c.usable, [1, 4, 5, 8, 9, 12, 13]);
        assert_eq!(c.housekeeping, [1, 9]);
        assert_eq!(c.measured, [4, 5, 8, 12, 13]);
    }
}
