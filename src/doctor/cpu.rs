//! The CPUs: frequency scaling, turbo, idle states and SMT, the hardware
//! behaviours that make the same code take a different time.

use super::{Machine, of};
use crate::report::Check;
use crate::units::cpu_list;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Governor -> CPUs that use it.
fn governors(m: &Machine) -> Vec<(String, Vec<usize>)> {
    let mut by_governor: Vec<(String, Vec<usize>)> = Vec::new();
    for cpu in m.cpu_dirs() {
        let Some(governor) = m.read(format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")) else {
            continue;
        };
        match by_governor.iter_mut().find(|(g, _)| *g == governor) {
            Some((_, cpus)) => cpus.push(cpu),
            None => by_governor.push((governor, vec![cpu])),
        }
    }
    by_governor
}

pub fn governor(m: &Machine) -> Check {
    let check = of("cpu.governor", "frequency governor");
    let found = governors(m);
    if found.is_empty() {
        return check.ok(
            "no cpufreq",
            "the kernel does not scale the CPU frequency here (fixed, or set by firmware or the host)",
        );
    }
    let value = found
        .iter()
        .map(|(g, cpus)| format!("{g} (CPU {})", cpu_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ");
    if found.iter().all(|(g, _)| g == "performance") {
        check.ok(
            value,
            "every CPU runs the performance governor: no frequency ramp-up after idle",
        )
    } else {
        check.warn(
            value,
            "CPUs that scale their frequency down when idle run the first microseconds after a wake-up slowly",
            "cpupower frequency-set -g performance (or write performance to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        )
    }
}

const NO_TURBO: &str = "/sys/devices/system/cpu/intel_pstate/no_turbo";
const BOOST: &str = "/sys/devices/system/cpu/cpufreq/boost";

pub fn turbo(m: &Machine) -> Check {
    let check = of("cpu.turbo", "turbo / boost");
    let meaning = "turbo clocks change with temperature and with how many cores are busy, so the same work takes a varying time";
    if let Some(no_turbo) = m.read(NO_TURBO) {
        return if no_turbo == "1" {
            check.ok(
                "off (intel_pstate no_turbo 1)",
                "turbo is off: the clock rate does not depend on temperature or load",
            )
        } else {
            check.warn(
                "on (intel_pstate no_turbo 0)",
                meaning,
                format!("echo 1 > {NO_TURBO}"),
            )
        };
    }
    match m.read(BOOST).as_deref() {
        Some("1") => check.warn("on (cpufreq boost 1)", meaning, format!("echo 0 > {BOOST}")),
        Some("0") => check.ok(
            "off (cpufreq boost 0)",
            "boost is off: the clock rate does not depend on temperature or load",
        ),
        _ => check.ok(
            "no turbo control",
            "the kernel exposes no turbo or boost switch here",
        ),
    }
}

/// Deeper idle states than this wake up too slowly for real time.
pub const IDLE_EXIT_LIMIT_US: u64 = 10;
const DMA_LATENCY: &str = crate::rt::dma_latency::PATH;
/// What /dev/cpu_dma_latency reads when nobody holds a limit (PM_QOS default).
const DMA_NO_LIMIT: i32 = 2_000_000_000;

/// The deepest enabled idle state over all CPUs: (name, exit latency us).
fn deepest_idle_state(m: &Machine) -> Option<(String, u64)> {
    let mut deepest: Option<(String, u64)> = None;
    for cpu in m.cpu_dirs() {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle");
        for state in m.list(&dir).iter().filter(|s| s.starts_with("state")) {
            let read = |file: &str| m.read(format!("{dir}/{state}/{file}"));
            if read("disable").as_deref() == Some("1") {
                continue;
            }
            let Some(latency) = read("latency").and_then(|l| l.parse::<u64>().ok()) else {
                continue;
            };
            if deepest.as_ref().is_none_or(|(_, l)| latency > *l) {
                deepest = Some((read("name").unwrap_or_else(|| state.clone()), latency));
            }
        }
    }
    deepest
}

/// The limit every process's /dev/cpu_dma_latency requests add up to (us):
/// reading the file gives it. `Err` says why it could not be read.
fn dma_latency_limit(m: &Machine) -> Result<Option<i32>, String> {
    match m.read_bytes(DMA_LATENCY, 4) {
        Ok(bytes) => match <[u8; 4]>::try_from(bytes.get(..4).unwrap_or(&[])) {
            Ok(raw) => {
                let us = i32::from_ne_bytes(raw);
                Ok((us < DMA_NO_LIMIT).then_some(us))
            }
            Err(_) => Err("unreadable".to_string()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("missing".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err("not readable (root only)".to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

pub fn idle(m: &Machine) -> Check {
    let check = of("cpu.idle", "idle states");
    let limit = dma_latency_limit(m);
    let held_low = matches!(limit, Ok(Some(us)) if us as u64 <= IDLE_EXIT_LIMIT_US);
    let dma = match limit {
        Ok(Some(us)) => format!("cpu_dma_latency held at {us} us"),
        Ok(None) => "cpu_dma_latency not held".to_string(),
        Err(why) => format!("cpu_dma_latency {why}"),
    };
    let driver = m
        .read(format!("{CPU_DIR}/cpuidle/current_driver"))
        .unwrap_or_else(|| "none".to_string());
    match deepest_idle_state(m) {
        None => check.ok(
            format!("no idle states (driver {driver}); {dma}"),
            "the CPUs idle without deep sleep states (halt), which wake up at once",
        ),
        Some((name, us)) if us <= IDLE_EXIT_LIMIT_US || held_low => check.ok(
            format!("deepest {name} {us} us; {dma}"),
            "no enabled idle state takes long to leave (or cpu_dma_latency keeps the CPUs out of them)",
        ),
        Some((name, us)) => {
            let fix = if dma.ends_with("missing") {
                "boot with intel_idle.max_cstate=1 processor.max_cstate=1 (or cpupower idle-set -D 10)".to_string()
            } else {
                format!(
                    "hold {DMA_LATENCY} at 0 while real-time work runs (latscope's tests do), or cpupower idle-set -D {IDLE_EXIT_LIMIT_US}"
                )
            };
            check.warn(
                format!("deepest {name} {us} us; {dma}"),
                format!("a CPU woken from idle state {name} needs up to {us} us before it runs anything"),
                fix,
            )
        }
    }
}

/// The isolated CPUs (where real-time runs measure) whose SMT siblings are
/// not isolated: `CPU 2 with CPU 6`, one per such CPU.
fn exposed_siblings(m: &Machine) -> Vec<String> {
    let isolated = super::isolation::isolated_cpus(m);
    isolated
        .iter()
        .filter_map(|&cpu| {
            let siblings = m
                .read(format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"))
                .and_then(|t| crate::units::parse_cpu_list(&t))?;
            let shared: Vec<usize> = siblings
                .into_iter()
                .filter(|s| *s != cpu && !isolated.contains(s))
                .collect();
            (!shared.is_empty()).then(|| format!("CPU {cpu} with CPU {}", cpu_list(&shared)))
        })
        .collect()
}

/// The first online CPU (where latscope's main thread stays when the
/// measured CPUs are chosen for it) and the other CPUs of its core.
fn main_core(m: &Machine) -> Option<(usize, Vec<usize>)> {
    let first = *m.cpus_online().first()?;
    let siblings: Vec<usize> = m
        .read(format!(
            "{CPU_DIR}/cpu{first}/topology/thread_siblings_list"
        ))
        .and_then(|t| crate::units::parse_cpu_list(&t))?
        .into_iter()
        .filter(|&s| s != first)
        .collect();
    (!siblings.is_empty()).then_some((first, siblings))
}

pub fn smt(m: &Machine) -> Check {
    let check = of("cpu.smt", "SMT (hyper-threading)");
    let control = m.read(format!("{CPU_DIR}/smt/control")).unwrap_or_default();
    let exposed = exposed_siblings(m);
    let main = match main_core(m) {
        Some((first, siblings)) => format!(
            "; CPU {first}, where latscope's main thread stays, shares its core with CPU {}: without --cpus `latscope noise` measures neither (give oslat's -c the other CPUs to do the same)",
            cpu_list(&siblings)
        ),
        None => String::new(),
    };
    let shared_with = if exposed.is_empty() {
        main
    } else {
        format!(
            "{main}; isolated CPUs share their core with CPUs that are not isolated ({}): measure there and their load is in the figures",
            exposed.join(", ")
        )
    };
    match m.read(format!("{CPU_DIR}/smt/active")).as_deref() {
        Some("1") => check.warn(
            format!("active (control {control})"),
            format!("sibling hardware threads share one core's execution units: work on one slows the other{shared_with}"),
            format!("echo off > {CPU_DIR}/smt/control (or boot with nosmt)"),
        ),
        Some("0") if control == "on" => check.ok(
            "inactive (no sibling threads online)",
            "no two online CPUs share a core",
        ),
        Some("0") => check.ok(
            format!("off (control {control})"),
            "no two online CPUs share a core",
        ),
        _ => check.ok("not reported", "the kernel has no SMT control here"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn governors_by_cpu() {
        let f = Fixture::empty();
        let c = governor(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "no cpufreq"));
        for cpu in 0..3 {
            f.file(
                &format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor"),
                "performance\n",
            );
        }
        let c = governor(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "performance (CPU 0-2)")
        );
        f.file(
            &format!("{CPU_DIR}/cpu1/cpufreq/scaling_governor"),
            "powersave\n",
        );
        let c = governor(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "performance (CPU 0,2), powersave (CPU 1)");
        assert!(
            c.fix
                .unwrap()
                .starts_with("cpupower frequency-set -g performance")
        );
    }

    #[test]
    fn turbo_switches() {
        let f = Fixture::empty();
        assert_eq!(turbo(&f.machine()).value, "no turbo control");
        f.file(BOOST, "1\n");
        let c = turbo(&f.machine());
        assert_eq!(
            (c.verdict, c.fix.as_deref()),
            (
                Verdict::Warn,
                Some("echo 0 > /sys/devices/system/cpu/cpufreq/boost")
            )
        );
        f.file(BOOST, "0\n");
        assert_eq!(turbo(&f.machine()).verdict, Verdict::Ok);
        // intel_pstate's switch wins when present.
        f.file(NO_TURBO, "0\n");
        let c = turbo(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "on (intel_pstate no_turbo 0)")
        );
        f.file(NO_TURBO, "1\n");
        assert_eq!(turbo(&f.machine()).verdict, Verdict::Ok);
    }

    #[test]
    fn idle_states_and_dma_latency() {
        let f = Fixture::empty();
        let c = idle(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(
            c.value,
            "no idle states (driver none); cpu_dma_latency missing"
        );
        let state = |cpu: usize, n: usize, name: &str, latency: u64, disabled: bool| {
            let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle/state{n}");
            f.file(&format!("{dir}/name"), name)
                .file(&format!("{dir}/latency"), &latency.to_string())
                .file(&format!("{dir}/disable"), if disabled { "1" } else { "0" });
        };
        state(0, 0, "POLL", 0, false);
        state(0, 1, "C1", 2, false);
        state(1, 0, "POLL", 0, false);
        f.bytes(DMA_LATENCY, &DMA_NO_LIMIT.to_ne_bytes());
        let c = idle(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value, "deepest C1 2 us; cpu_dma_latency not held");
        state(1, 2, "C6", 133, false);
        let c = idle(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "deepest C6 133 us; cpu_dma_latency not held");
        assert!(c.fix.unwrap().starts_with("hold /dev/cpu_dma_latency at 0"));
        // Held at 0 by some process: the deep state is not entered.
        f.bytes(DMA_LATENCY, &0i32.to_ne_bytes());
        let c = idle(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(c.value, "deepest C6 133 us; cpu_dma_latency held at 0 us");
        // Disabled states do not count.
        state(1, 2, "C6", 133, true);
        f.bytes(DMA_LATENCY, &DMA_NO_LIMIT.to_ne_bytes());
        assert_eq!(idle(&f.machine()).verdict, Verdict::Ok);
    }

    #[test]
    fn smt_states() {
        let f = Fixture::empty();
        assert_eq!(smt(&f.machine()).value, "not reported");
        f.file(&format!("{CPU_DIR}/smt/active"), "1\n")
            .file(&format!("{CPU_DIR}/smt/control"), "on\n");
        let c = smt(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "active (control on)")
        );
        assert!(!c.meaning.contains("isolated"), "{}", c.meaning);
        // Isolated CPU 2's sibling 6 is not isolated; 3's sibling 7 is.
        f.file(&format!("{CPU_DIR}/isolated"), "2-3,7\n");
        for (cpu, siblings) in [(2, "2,6"), (3, "3,7"), (7, "3,7")] {
            f.file(
                &format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"),
                &format!("{siblings}\n"),
            );
        }
        let c = smt(&f.machine());
        assert!(
            c.meaning.ends_with(
                "; isolated CPUs share their core with CPUs that are not isolated (CPU 2 with CPU 6): measure there and their load is in the figures"
            ),
            "{}",
            c.meaning
        );
        // The first online CPU's core: CPU 0 with CPU 4.
        f.file(&format!("{CPU_DIR}/online"), "0-7\n").file(
            &format!("{CPU_DIR}/cpu0/topology/thread_siblings_list"),
            "0,4\n",
        );
        let c = smt(&f.machine());
        assert!(
            c.meaning.contains(
                "; CPU 0, where latscope's main thread stays, shares its core with CPU 4: without --cpus `latscope noise` measures neither (give oslat's -c the other CPUs to do the same); isolated CPUs share"
            ),
            "{}",
            c.meaning
        );
        f.file(&format!("{CPU_DIR}/smt/active"), "0\n")
            .file(&format!("{CPU_DIR}/smt/control"), "notsupported\n");
        let c = smt(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "off (control notsupported)")
        );
    }
}
