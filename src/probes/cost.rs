//! What tracing costs on this machine (`latscope doctor --bpf`): one run of
//! an empty program (`r0 = 0; exit`) on a frequent kernel event, on each
//! way a family can attach it (`AttachWay`), timed by the kernel's own
//! run-time statistics (`run_time_ns` / `run_cnt` of
//! `BPF_OBJ_GET_INFO_BY_FD`), while a thread that sleeps 50 us in a loop
//! makes the event fire for 200 ms; then the programs each family puts
//! between a sampling thread's timer expiry and its return to user space,
//! counted from the programs the family really hooks on this kernel
//! (`WAKEUP_PATH` says which events lie there), and the expected observer
//! effect per wake-up: runs x cost.
//!
//! The statistics are turned on with `BPF_ENABLE_STATS` (Linux 5.8), the
//! scoped form of `kernel.bpf_stats_enabled = 1`: on for as long as latscope
//! holds the descriptor, so nothing is left to restore, whatever way the
//! process ends (SIGKILL included). They time the program's body only: for
//! a classic tracepoint, the record the kernel builds before the program
//! runs is not in them (about 70-80 ns more per event here,
//! docs/measurement.md), which is why the classic figure is the floor of
//! that path, and said so.

pub use super::hook::HookedProgram;
use super::hook::{AttachWay, Event, KernelTypes, hook};
use super::{ProbeError, wakeups};
use crate::rt::bpf::{Code, Insn, Reg};
use crate::rt::clock::{monotonic_ns, sleep_until_ns};
use std::path::Path;

/// The event the empty program is timed on: it fires at every expiry of
/// every hrtimer, the provoking thread's sleeps included, and is on the
/// breakdown's path.
pub const TIMED_EVENT: (&str, &str) = ("timer", "hrtimer_expire_entry");
/// How long the events are provoked, per way.
const PROVOKE_NS: u64 = 200_000_000;
/// The provoking thread's sleep: the program runs warm.
pub const SLEEP_NS: u64 = 50_000;
/// A sleep after which the program runs cold, as on a quiet machine's
/// wake-up, where the CPU idled since the last run.
pub const COLD_SLEEP_NS: u64 = 1_000_000;

/// How many times each event runs between the expiry of a periodic
/// sampling thread's timer and the thread's return to user space, woken
/// from an idle CPU (x86: the local timer's system vector): the events
/// whose programs add to the measured latency. Events not listed run
/// elsewhere in the period (the thread's arming, its switch away when it
/// sleeps) or are not on a quiet wake-up's path (device interrupts,
/// softirqs, NMIs: they come when they come).
pub const WAKEUP_PATH: [(&str, u32); 6] = [
    // The timer interrupt: the vector's entry and exit, the expiry in it.
    ("local_timer_entry", 1),
    ("hrtimer_expire_entry", 1),
    ("local_timer_exit", 1),
    // The handler wakes the thread.
    ("sched_wakeup", 1),
    // The switch to the thread (a kernel may not emit it when the CPU
    // leaves its idle task: this one does not), and the end of that
    // `__schedule()`, which every kernel with the hook runs.
    ("sched_switch", 1),
    ("sched_exit_tp", 1),
];

/// The runs per wake-up of a program on `event` (0: not on the path).
pub fn runs_per_wakeup(event: &str) -> u32 {
    WAKEUP_PATH
        .iter()
        .find(|(name, _)| *name == event)
        .map_or(0, |&(_, runs)| runs)
}

/// One way's measured cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WayCost {
    pub way: AttachWay,
    /// Runs counted while the events were provoked.
    pub runs: u64,
    /// Their total time, ns.
    pub run_time_ns: u64,
}

impl WayCost {
    /// ns per run (None when the program never ran).
    pub fn ns_per_run(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.run_time_ns as f64 / self.runs as f64)
    }
}

/// One way and its cost, or why it could not be timed.
pub type WayTimed = (AttachWay, Result<WayCost, ProbeError>);

/// A family's programs on one wake-up and what they are expected to cost.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCost {
    /// The option that loads the family (`--breakdown`, `--trace-spikes`).
    pub option: &'static str,
    /// Every program the family hooks here.
    pub hooked: usize,
    /// Program runs on one wake-up (each program times its runs).
    pub runs: u32,
    /// runs x the measured cost of each one's way, ns (None when a way
    /// used was not measured).
    pub expected_ns: Option<f64>,
}

/// The program runs of `programs` on one wake-up, and their expected
/// cost from `costs`.
pub fn path_cost(option: &'static str, programs: &[HookedProgram], costs: &[WayCost]) -> PathCost {
    let mut runs = 0;
    let mut expected = Some(0.0);
    for p in programs {
        let n = runs_per_wakeup(&p.event);
        if n == 0 {
            continue;
        }
        runs += n;
        let each = costs
            .iter()
            .find(|c| c.way == p.way)
            .and_then(WayCost::ns_per_run);
        expected = expected.zip(each).map(|(sum, ns)| sum + f64::from(n) * ns);
    }
    PathCost {
        option,
        hooked: programs.len(),
        runs,
        expected_ns: expected,
    }
}

/// The empty program: `r0 = 0; exit`.
fn empty_program() -> Code {
    let mut code = Code::from(vec![Insn::mov64_imm(Reg::R0, 0), Insn::exit()]);
    code.notes
        .push((0, "the cost of a run: nothing but the call".into()));
    code
}

/// Times the empty program on `TIMED_EVENT` on every way of `ways` this
/// kernel takes (a way it does not take: its error), run-time statistics
/// on meanwhile.
pub fn measure(tracefs: &Path, ways: &[AttachWay]) -> Result<Vec<WayTimed>, ProbeError> {
    measure_sleeping(tracefs, ways, SLEEP_NS)
}

/// `measure` with the provoking thread sleeping `sleep_ns` at a time (the
/// longer, the colder the CPU and the program between two runs).
pub fn measure_sleeping(
    tracefs: &Path,
    ways: &[AttachWay],
    sleep_ns: u64,
) -> Result<Vec<WayTimed>, ProbeError> {
    let _counting = count_run_time()?;
    let kernel = KernelTypes::new(tracefs);
    let (system, name) = TIMED_EVENT;
    let event = Event {
        system,
        name,
        program: "cost",
    };
    let mut out = Vec::new();
    for &way in ways {
        let timed =
            hook(&kernel, event, &[way], &mut |_, _| Ok(empty_program())).and_then(|hooked| {
                let fd = hooked.program.fd();
                let before = stats_of(fd)?;
                provoke(PROVOKE_NS, sleep_ns);
                let after = stats_of(fd)?;
                Ok(WayCost {
                    way,
                    runs: after.run_cnt - before.run_cnt,
                    run_time_ns: after.run_time_ns - before.run_time_ns,
                })
            });
        out.push((way, timed));
    }
    Ok(out)
}

/// The kernel's run-time statistics, on while the guard lives.
fn count_run_time() -> Result<std::os::fd::OwnedFd, ProbeError> {
    crate::rt::bpf::sys::count_run_time().map_err(|e| {
        ProbeError::system(
            "cannot turn on BPF run-time statistics (BPF_ENABLE_STATS, Linux 5.8)",
            e,
        )
    })
}

/// One real program, timed on the events that came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramTimed {
    /// `system:name`.
    pub event: String,
    pub way: AttachWay,
    pub runs: u64,
    pub run_time_ns: u64,
}

/// The interference counter's programs (`hwlat --tier bpf`) as this
/// kernel hooks them, each timed by the kernel's run-time statistics over
/// the events that came while the provoking thread slept `SLEEP_NS` at a
/// time for `PROVOKE_NS` (its timer interrupts and switches, and whatever
/// else the machine did). They run on every IRQ, softirq, NMI, system
/// vector and switch of every CPU, not on a wake-up's path: their cost is
/// per event, not per wake-up.
pub fn measure_interference(tracefs: &Path) -> Result<Vec<ProgramTimed>, ProbeError> {
    let _counting = count_run_time()?;
    let loaded = super::interference::load::LoadedInterference::load(tracefs)?;
    let programs: Vec<(&str, AttachWay, i32)> = loaded.programs().collect();
    let before = programs
        .iter()
        .map(|&(_, _, fd)| stats_of(fd))
        .collect::<Result<Vec<_>, _>>()?;
    provoke(PROVOKE_NS, SLEEP_NS);
    programs
        .iter()
        .zip(before)
        .map(|(&(event, way, fd), before)| {
            let after = stats_of(fd)?;
            Ok(ProgramTimed {
                event: event.to_string(),
                way,
                runs: after.run_cnt - before.run_cnt,
                run_time_ns: after.run_time_ns - before.run_time_ns,
            })
        })
        .collect()
}

fn stats_of(fd: i32) -> Result<crate::rt::bpf::sys::ProgramStats, ProbeError> {
    crate::rt::bpf::sys::program_stats(fd)
        .map_err(|e| ProbeError::system("cannot read the program's statistics", e))
}

/// Makes hrtimers expire for `for_ns`: a thread (normal policy, never
/// spinning) sleeping `sleep_ns` at a time.
fn provoke(for_ns: u64, sleep_ns: u64) {
    let end = monotonic_ns() + for_ns;
    let sleeper = std::thread::Builder::new()
        .name("latscope-provoke".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            while monotonic_ns() < end {
                sleep_until_ns(monotonic_ns() + sleep_ns);
            }
        });
    match sleeper {
        Ok(handle) => {
            let _ = handle.join();
        }
        // No thread: this one sleeps instead (the events still fire).
        Err(_) => {
            while monotonic_ns() < end {
                sleep_until_ns(monotonic_ns() + sleep_ns);
            }
        }
    }
}

/// The breakdown's programs as `--breakdown` hooks them on this kernel:
/// loaded for a thread that never sleeps on that schedule, then detached.
pub fn breakdown_programs(tracefs: &Path) -> Result<Vec<HookedProgram>, ProbeError> {
    let thread = wakeups::TracedThread {
        tid: crate::rt::sched::current_tid(),
        cpu: crate::rt::sched::current_cpu(),
        first_expiry_ns: u64::MAX / 2,
        period_ns: 1,
    };
    Ok(wakeups::WakeupSlots::start(tracefs, &[thread])?.programs())
}

/// The flight recorder's programs as `--trace-spikes` hooks them on
/// `events` on this kernel (recording nothing: no CPU enabled).
pub fn recorder_programs(
    tracefs: &Path,
    events: &[(&str, &str)],
) -> Result<Vec<HookedProgram>, ProbeError> {
    let tid = crate::rt::sched::current_tid();
    let loaded = super::recorder::load::LoadedRecorder::load(tracefs, events, &[tid], &[])?;
    Ok(events
        .iter()
        .map(|&(system, name)| {
            let classic = loaded
                .hooks
                .classic
                .iter()
                .any(|(e, _)| *e == format!("{system}:{name}"));
            HookedProgram {
                event: name.to_string(),
                way: if classic {
                    AttachWay::Tracepoint
                } else {
                    AttachWay::TypedRawTracepoint
                },
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(event: &str, way: AttachWay) -> HookedProgram {
        HookedProgram {
            event: event.to_string(),
            way,
        }
    }

    #[test]
    fn the_expected_effect_is_runs_times_the_cost_of_each_way() {
        let costs = [
            WayCost {
                way: AttachWay::TypedRawTracepoint,
                runs: 1000,
                run_time_ns: 20_000,
            },
            WayCost {
                way: AttachWay::RawTracepoint,
                runs: 4,
                run_time_ns: 100,
            },
        ];
        // The breakdown on a kernel with sched_exit_tp: the expiry (tp_btf)
        // and the switch-in hook (raw), once each.
        let breakdown = [
            program("hrtimer_expire_entry", AttachWay::TypedRawTracepoint),
            program("sched_exit_tp", AttachWay::RawTracepoint),
        ];
        let cost = path_cost("--breakdown", &breakdown, &costs);
        assert_eq!(cost.hooked, 2);
        assert_eq!(cost.runs, 2);
        assert_eq!(cost.expected_ns, Some(20.0 + 25.0));
        // Programs off the path count as hooked, not as runs.
        let recorder = [
            program("sched_switch", AttachWay::TypedRawTracepoint),
            program("irq_handler_entry", AttachWay::TypedRawTracepoint),
            program("local_timer_entry", AttachWay::TypedRawTracepoint),
            program("hrtimer_start", AttachWay::TypedRawTracepoint),
        ];
        let cost = path_cost("--trace-spikes", &recorder, &costs);
        assert_eq!((cost.hooked, cost.runs), (4, 2));
        assert_eq!(cost.expected_ns, Some(40.0));
        // A way not measured leaves the expectation unknown, not low.
        let classic = [program("sched_wakeup", AttachWay::Tracepoint)];
        assert_eq!(path_cost("x", &classic, &costs).expected_ns, None);
        assert_eq!(
            WayCost {
                runs: 0,
                ..costs[0]
            }
            .ns_per_run(),
            None
        );
    }

    #[test]
    fn the_path_table_names_each_event_once() {
        for (i, (name, runs)) in WAKEUP_PATH.iter().enumerate() {
            assert!(*runs > 0);
            assert_eq!(runs_per_wakeup(name), *runs);
            assert!(WAKEUP_PATH[i + 1..].iter().all(|(n, _)| n != name));
        }
        assert_eq!(runs_per_wakeup("irq_handler_entry"), 0);
    }

    /// The experiment of docs/benchmarks.md part 6: the same empty program,
    /// its event provoked by sleeps of growing length (the CPU idles longer
    /// between two runs, as on a quiet machine's wake-up path).
    #[test]
    #[ignore = "experiment: prints ns per run by sleep; run with --ignored --nocapture"]
    fn cost_per_run_by_how_long_the_cpu_idles() {
        if crate::rt::bpf::skip_without_bpf(
            "probes::cost::tests::cost_per_run_by_how_long_the_cpu_idles",
        ) {
            return;
        }
        let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
        for round in 0..3 {
            for sleep_us in [50u64, 200, 1000, 5000] {
                let measured =
                    measure_sleeping(&tracefs, &AttachWay::ALL, sleep_us * 1000).unwrap();
                let line: Vec<String> = measured
                    .iter()
                    .map(|(way, r)| match r {
                        Ok(c) => format!(
                            "{} {:.0} ns x {}",
                            way.label(),
                            c.ns_per_run().unwrap_or(-1.0),
                            c.runs
                        ),
                        Err(e) => format!("{} {e}", way.label()),
                    })
                    .collect();
                eprintln!("round {round} sleep {sleep_us:>4} us: {}", line.join(", "));
            }
        }
    }

    #[test]
    fn the_empty_program_returns_zero() {
        let code = empty_program();
        assert_eq!(code.insns, [Insn::mov64_imm(Reg::R0, 0), Insn::exit()]);
    }
}
