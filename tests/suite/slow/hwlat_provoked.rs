//! `latscope hwlat`'s classification, provoked: this test drives OS
//! interference onto the measured CPU, with identity, and checks that the
//! gaps it caused are classed OS with the right cause, in every tier that
//! can run here (`TIERS`; a tier that cannot is a counted skip).
//!
//! The provocations, each by a thread of this test whose identity (thread
//! id, name) and times (CLOCK_MONOTONIC, the clock of hwlat's gaps) are
//! known:
//! - **a FIFO task**: `hwlat-burst`, pinned to the measured CPU at FIFO 90,
//!   above the samplers (`-p 80`), sleeps 15 ms (its timer interrupt comes
//!   on that CPU) then spins 1 ms, bounded by the run;
//! - **IPIs**: `hwlat-ipi`, on another CPU at FIFO 90, reads `/dev/cpu/N/cpuid` every
//!   5 ms, half-way between two millisecond boundaries (where the ticks
//!   are): the kernel runs each read on CPU N by a function-call IPI (`CAL`);
//! - **a network softirq flood**: `hwlat-flood`, pinned to the measured CPU
//!   at FIFO 90, sends UDP datagrams over loopback for 1 ms every 15 ms;
//!   each is received in the NET_RX softirq of its CPU, on top of it.
//!
//! A gap is the provocation's when it overlaps one of its intervals (by
//! time, never by being among the longest), and an IPI's gap only when the
//! IPI's handler ran in it: the test's own trace instance records each
//! `call_function_single_entry` on the measured CPU. (An IPI's interval is
//! tens of microseconds in a guest: a hypervisor gap or a device interrupt
//! of the machine's own met it by chance in 1 to 7 % of them on a busy
//! host, which says nothing of the IPI.) At least 99 % of those must be
//! OS, and their cause must name the provocation (its pid, the softirq, the
//! IPI row). The unprivileged tier is window-precise: its causes are every
//! row that moved in the gap's sub-window, so the same check holds for it
//! (`task switch` stands for the task, which it cannot name). A run whose
//! provocation made too few gaps proves nothing: it fails.

use crate::common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The tiers checked: one line each.
const TIERS: &[&str] = &["bpf", "tracefs", "unprivileged"];

/// The samplers' priority, and the provoking tasks' above it.
const SAMPLER_PRIORITY: &str = "80";
const PROVOKER_PRIORITY: i32 = 90;
/// Fewer provoked gaps than this in a run prove nothing.
const MIN_PROVOKED: usize = 20;

/// What a provocation did: who, and when (CLOCK_MONOTONIC ns intervals).
struct Provoked {
    tid: i32,
    intervals: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provoke {
    FifoTask,
    Ipis,
    SoftirqFlood,
}

impl Provoke {
    fn name(self) -> &'static str {
        match self {
            Provoke::FifoTask => "hwlat-burst",
            Provoke::Ipis => "hwlat-ipi",
            Provoke::SoftirqFlood => "hwlat-flood",
        }
    }

    /// What the cause of a provoked gap must name in `tier`.
    fn cause(self, tier: &str, tid: i32) -> String {
        match (self, tier) {
            (Provoke::FifoTask, "unprivileged") => "task switch".into(),
            (Provoke::FifoTask, _) => format!("task {} (pid {tid})", self.name()),
            (Provoke::Ipis, _) => "irq CAL".into(),
            (Provoke::SoftirqFlood, _) => "softirq NET_RX".into(),
        }
    }

    /// A gap that overlaps an IPI but in which a task took the measured CPU
    /// (the gap-precise tiers name it): the IPI provoker runs on another
    /// CPU, so that gap is the task's preemption (another test's threads on
    /// a shared machine), not the IPI's; the bpf tier names only the last 8
    /// events of so long a gap.
    fn preempted_by_another(self, tier: &str, g: &GapRow) -> bool {
        if self != Provoke::Ipis || tier == "unprivileged" {
            return false;
        }
        // A task took the CPU, or a device's interrupt (`irq 36 (virtio..)`,
        // stress-ng's block I/O in trial s7) made the gap and no IPI ran in
        // it: the gap met the provocation's time by chance, and the tier
        // named what did run.
        let device_irq = g.cause.split(" + ").any(|c| {
            c.strip_prefix("irq ")
                .is_some_and(|n| n.starts_with(|d: char| d.is_ascii_digit()))
        });
        g.cause.contains("task ") || (device_irq && !g.cause.contains("irq CAL"))
    }

    /// Runs on the calling thread (already placed) until `stop`, at most 20 s.
    fn run(self, measured: usize, stop: &AtomicBool) -> Result<Vec<(u64, u64)>, String> {
        let until = Instant::now() + Duration::from_secs(20);
        let mut intervals = Vec::new();
        let cpuid = format!("/dev/cpu/{measured}/cpuid");
        let ipi_source = match self {
            Provoke::Ipis => {
                Some(std::fs::File::open(&cpuid).map_err(|e| format!("{cpuid}: {e}"))?)
            }
            _ => None,
        };
        let sockets = match self {
            Provoke::SoftirqFlood => Some(loopback_pair()?),
            _ => None,
        };
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            if self == Provoke::Ipis {
                between_ticks(5);
            } else {
                std::thread::sleep(Duration::from_millis(15));
            }
            let t0 = monotonic_ns();
            match (self, &ipi_source, &sockets) {
                (Provoke::Ipis, Some(file), _) => {
                    let mut leaf = [0u8; 16];
                    std::os::unix::fs::FileExt::read_at(file, &mut leaf, 0)
                        .map_err(|e| format!("{cpuid}: {e}"))?;
                }
                (Provoke::SoftirqFlood, _, Some((unread, sender))) => {
                    let to = unread.local_addr().map_err(|e| e.to_string())?;
                    let end = Instant::now() + Duration::from_millis(1);
                    while Instant::now() < end {
                        // A full receive buffer drops it, after the softirq ran.
                        let _ = sender.send_to(&[0u8; 64], to);
                    }
                }
                _ => {
                    let end = Instant::now() + Duration::from_millis(1);
                    while Instant::now() < end {
                        std::hint::spin_loop();
                    }
                }
            }
            intervals.push((t0, monotonic_ns()));
        }
        Ok(intervals)
    }
}

/// Sleeps until the next 5 ms step's middle of a millisecond: the ticks of
/// a kernel whose HZ divides 1000 come on millisecond boundaries (so do
/// this VM's periodic hypervisor stops), and an IPI sent with one would
/// share the gap: the IPI's interval would then hold a gap the tick alone
/// made, which says nothing of the IPI. No timer slack, so the wake-up is
/// not moved onto a tick.
fn between_ticks(step_ms: u64) {
    const MS: u64 = 1_000_000;
    // SAFETY: sets this thread's own timer slack (1 ns: none).
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    sleep_until((monotonic_ns() / (step_ms * MS) + 1) * step_ms * MS + MS / 2);
}

fn loopback_pair() -> Result<(std::net::UdpSocket, std::net::UdpSocket), String> {
    let socket = || std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string());
    Ok((socket()?, socket()?))
}

/// Starts `provoke` on its thread at FIFO above the samplers: on the
/// measured CPU, or (IPIs) on another one.
fn start(
    provoke: Provoke,
    measured: usize,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Result<Provoked, String>> {
    std::thread::spawn(move || {
        let tid = match provoke {
            Provoke::Ipis => {
                let other = allowed_cpus()
                    .into_iter()
                    .find(|&c| c != measured)
                    .ok_or("one CPU only: no other CPU to send IPIs from")?;
                // Real-time too: a normal task preempted mid-read by the
                // machine's other work would stretch its interval over
                // ticks it did not cause.
                become_thread(provoke.name(), other, libc::SCHED_FIFO, PROVOKER_PRIORITY)?
            }
            _ => become_thread(
                provoke.name(),
                measured,
                libc::SCHED_FIFO,
                PROVOKER_PRIORITY,
            )?,
        };
        let intervals = provoke.run(measured, &stop)?;
        Ok(Provoked { tid, intervals })
    })
}

/// The test's own trace of the function-call IPIs a CPU handled: a private
/// instance (removed when dropped) with `call_function_single_entry` on
/// that CPU, on the gaps' clock (`mono`).
struct CallWatch {
    instance: latscope::rt::tracefs::instance::Instance,
}

impl CallWatch {
    fn start(cpu: usize) -> Result<CallWatch, String> {
        let tracefs = latscope::rt::tracefs::mount::find_or_mount()?;
        let instance = latscope::rt::tracefs::instance::Instance::create(&tracefs)?;
        let mask = latscope::rt::tracefs::cpumask(&[cpu]);
        instance.write("trace_clock", "mono")?;
        instance.write("tracing_cpumask", &mask)?;
        instance.write("buffer_size_kb", "1024")?;
        instance.write("events/irq_vectors/call_function_single_entry/enable", "1")?;
        instance.write("tracing_on", "1")?;
        Ok(CallWatch { instance })
    }

    /// The handler's entries, ns (microseconds as the text trace gives).
    fn entries(&self) -> Vec<u64> {
        self.instance.tracing_off();
        let text = self.instance.read("trace").unwrap_or_default();
        call_entries(&text)
    }
}

/// The times of `call_function_single_entry` lines of a text trace
/// (`  <idle>-0  [001] d.h1. 26248.595506: call_function_single_entry: ...`).
fn call_entries(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.contains(" call_function_single_entry:"))
        .filter_map(|l| {
            let stamp = l.split(": call_function_single_entry:").next()?;
            let (secs, micros) = stamp.split_whitespace().last()?.split_once('.')?;
            Some(secs.parse::<u64>().ok()? * 1_000_000_000 + micros.parse::<u64>().ok()? * 1_000)
        })
        .collect()
}

#[test]
fn the_calls_are_read_from_a_text_trace() {
    let text = "# tracer: nop\n\
                hwlat-ipi-42 [001] d.h1. 26248.595506: call_function_single_entry: vector=251\n\
                <idle>-0 [001] d.h1. 26248.600509: call_function_single_exit: vector=251\n\
                latscope-7 [001] d.h.. 3.000001: call_function_single_entry: vector=251\n";
    assert_eq!(call_entries(text), [26_248_595_506_000, 3_000_001_000]);
}

/// One gap of the `--gaps` file.
#[derive(Debug)]
struct GapRow {
    from: u64,
    to: u64,
    class: String,
    cause: String,
}

fn gap_rows(csv: &str, cpu: usize) -> Vec<GapRow> {
    csv.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(7, ',').collect();
            if f.len() < 7 || f[0] != cpu.to_string() {
                return None;
            }
            let n = |i: usize| f[i].parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
            let from = n(2);
            Some(GapRow {
                from,
                to: from + n(3) + n(4),
                class: f[5].to_string(),
                cause: f[6].trim_matches('"').to_string(),
            })
        })
        .collect()
}

/// Runs `hwlat --tier TIER` on the measured CPU while `provoke` runs; the
/// provoked gaps must be OS with the right cause.
fn check(test: &str, provoke: Provoke, tier: &str) {
    let measured = measured_cpu();
    let (dir, json) = temp_file("hwlat.json");
    let gaps = dir.path().join("gaps.csv");
    let stop = Arc::new(AtomicBool::new(false));
    // Stopped and joined however this check ends (the provoker also stops
    // by itself after 20 s).
    let mut provokers = Provokers::new(stop.clone());
    let calls = match provoke {
        Provoke::Ipis => match CallWatch::start(measured) {
            Ok(watch) => Some(watch),
            Err(why) => {
                latscope::testing::skip_part(test, tier, &format!("cannot trace the IPIs: {why}"));
                return;
            }
        },
        _ => None,
    };
    provokers.add(start(provoke, measured, stop.clone()));
    let mut cmd = latscope(60);
    cmd.args(["hwlat", "--tier", tier, "--cpu", &measured.to_string()])
        .args(["-D", "3", "--width", "200ms", "--window", "250ms"])
        .args(["--threshold", "5us", "-p", SAMPLER_PRIORITY, "-q", "--json"])
        .arg(&json)
        .arg("--gaps")
        .arg(&gaps);
    let out = run(cmd);
    let provoked = match provokers.finish().pop().unwrap() {
        Ok(p) => p,
        Err(why) => {
            latscope::testing::skip_part(test, tier, &format!("cannot provoke here: {why}"));
            return;
        }
    };
    if tier != "unprivileged" && out.status.code() == Some(1) {
        // The tier cannot run here (not root, no tracefs): its one line.
        latscope::testing::skip_part(test, tier, stderr_of(&out).trim());
        return;
    }
    assert_code(&out, 0);
    let report = read_json(&json);
    let ran = report["tests"][0]["config"]["detail"]["tier"]
        .as_str()
        .unwrap_or("");
    assert!(ran.starts_with(tier), "{tier}: ran {ran}");
    // NMIs with their time in the tracefs tier (the trace's nmi_handler)
    // and the bpf tier (the handlers' runs), a count alone in the
    // unprivileged one.
    let cpu = &report["tests"][0]["series"][0]["detail"];
    assert!(cpu["nmis"].is_u64(), "{cpu}");
    assert_eq!(cpu["nmi_ns"].is_u64(), tier != "unprivileged", "{cpu}");
    let rows = gap_rows(&std::fs::read_to_string(&gaps).unwrap(), measured);
    let handled = calls.map(|watch| watch.entries());
    let overlaps = |g: &GapRow| match &handled {
        // The trace's times are whole microseconds, cut: an entry read
        // up to 1 us early is still in its gap (gaps are 5 us or more).
        Some(entries) => entries.iter().any(|&t| g.from <= t + 1_000 && t <= g.to),
        None => provoked
            .intervals
            .iter()
            .any(|&(t0, t1)| g.from <= t1 && g.to >= t0),
    };
    let want = provoke.cause(tier, provoked.tid);
    let ours: Vec<&GapRow> = rows
        .iter()
        .filter(|g| overlaps(g) && !provoke.preempted_by_another(tier, g))
        .collect();
    let wrong: Vec<&&GapRow> = ours
        .iter()
        .filter(|g| g.class != "os" || !g.cause.contains(&want))
        .collect();
    let evidence = format!(
        "{tier}: {} provocations, {} gaps in all, {} provoked, {} not OS with '{want}': {:?}",
        provoked.intervals.len(),
        rows.len(),
        ours.len(),
        wrong.len(),
        wrong.iter().take(10).collect::<Vec<_>>()
    );
    eprintln!("{test}: {evidence}");
    assert!(
        ours.len() >= MIN_PROVOKED,
        "too few provoked gaps: {evidence}"
    );
    assert!(wrong.len() * 100 <= ours.len(), "{evidence}");
}

fn check_every_tier(test: &str, provoke: Provoke) {
    if skip_without_realtime(test) {
        return;
    }
    let _turn = crate::common::turns::realtime_turn();
    for tier in TIERS {
        check(test, provoke, tier);
    }
}

#[test]
fn a_fifo_task_is_named_by_its_pid() {
    check_every_tier(
        "slow::hwlat_provoked::a_fifo_task_is_named_by_its_pid",
        Provoke::FifoTask,
    );
}

#[test]
fn ipis_from_a_helper_are_named_by_their_row() {
    check_every_tier(
        "slow::hwlat_provoked::ipis_from_a_helper_are_named_by_their_row",
        Provoke::Ipis,
    );
}

#[test]
fn a_loopback_softirq_flood_is_named_net_rx() {
    check_every_tier(
        "slow::hwlat_provoked::a_loopback_softirq_flood_is_named_net_rx",
        Provoke::SoftirqFlood,
    );
}
