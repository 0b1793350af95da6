//! The flight recorder keeps a spike's window whole however late its
//! collector comes (`probes::recorder::hold`): the measuring thread holds
//! the window when it sees the spike.
//!
//! Provoked: on the measured CPU a real-time `spike-maker` of this test
//! spins `SPIN` (the spike), then, at FIFO 10 (below the measuring task:
//! no further spike), floods UDP datagrams over loopback, two records
//! (the NET_RX softirq's entry and exit) each, until more than a ring's
//! 32,768 records have come after the spike; meanwhile real-time spinners
//! on every other CPU, where the collector runs, keep it from running at
//! all. Without the hold the ring goes round before the collector reads it
//! and the window is flagged overwritten; with it, the events that no
//! longer fit are refused, and the provoked spike (told by its window
//! overlapping the spin and naming the maker by its pid) is attributed from
//! a whole window. Bounded: the spin, then at most `FLOOD_FOR` of flood and
//! of spinning.

use super::bpf::bpf_usable;
use super::spikes::traced_by_a_run_with;
use crate::common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const SPIN: Duration = Duration::from_millis(10);
/// At most this long of flood (and of the collector's starvation).
const FLOOD_FOR: Duration = Duration::from_millis(800);
/// Datagrams enough to fill a ring (32,768 records, two a datagram).
const DATAGRAMS: u64 = 20_000;

/// What the provocation did: the spin (CLOCK_MONOTONIC ns), the maker's
/// thread id and how many datagrams followed it.
struct Provoked {
    spin: (u64, u64),
    tid: i32,
    sent: u64,
}

/// Spins on every CPU but `measured` at FIFO 90 until `stop` (bounded by
/// `SPIN + FLOOD_FOR`), from `go`.
fn starve_the_collector(
    measured: usize,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..cpus)
        .filter(|&c| c != measured)
        .map(|cpu| {
            let (go, stop) = (go.clone(), stop.clone());
            std::thread::spawn(move || {
                if become_thread("starver", cpu, libc::SCHED_FIFO, 90).is_err() {
                    return;
                }
                while !go.load(Ordering::Acquire) && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let until = Instant::now() + SPIN + FLOOD_FOR;
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    std::hint::spin_loop();
                }
            })
        })
        .collect()
}

/// The maker on `cpu`: once the run measures, the spin at FIFO 80, then
/// the flood at normal priority.
fn provoke(cpu: usize, marker: String, go: Arc<AtomicBool>) -> Result<Provoked, String> {
    let tid = become_thread("spike-maker", cpu, libc::SCHED_FIFO, 80)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !traced_by_a_run_with(&marker) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    go.store(true, Ordering::Release);
    let started = monotonic_ns();
    let until = Instant::now() + SPIN;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    let spin = (started, monotonic_ns());
    // Below the measuring task (50): it preempts the flood, no new spike;
    // above the machine's normal work, which would slow the flood down.
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: sets this thread's own policy.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    let socket = || std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string());
    let (unread, sender) = (socket()?, socket()?);
    let to = unread.local_addr().map_err(|e| e.to_string())?;
    let until = Instant::now() + FLOOD_FOR;
    let mut sent = 0;
    while sent < DATAGRAMS && Instant::now() < until {
        // A full receive buffer drops it, after the softirq ran.
        let _ = sender.send_to(&[0u8; 64], to);
        sent += 1;
    }
    Ok(Provoked { spin, tid, sent })
}

#[test]
fn a_spike_s_window_stays_whole_while_its_collector_is_starved_and_the_ring_fills() {
    let test = "a_spike_s_window_stays_whole_while_its_collector_is_starved_and_the_ring_fills";
    if skip_without_realtime(test) || !bpf_usable(test) {
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return latscope::testing::skip(test, "needs a second CPU, where the collector runs");
    }
    let _turn = crate::common::turns::realtime_turn();
    let cpu = measured_cpu();
    let (_dir, json) = temp_file("hold.json");
    let (go, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let starvers = starve_the_collector(cpu, go.clone(), stop.clone());
    let marker = json.to_string_lossy().into_owned();
    let maker = std::thread::spawn(move || provoke(cpu, marker, go));
    let cpu_arg = cpu.to_string();
    let mut cmd = latscope(60);
    cmd.args([
        "timer", "--cpu", &cpu_arg, "-P", "50", "-p", "500", "--warmup", "0",
    ])
    .args([
        "-T",
        "3",
        "--trace-spikes",
        "1000",
        "--collector",
        "bpf",
        "-q",
        "--json",
    ])
    .arg(&json);
    let out = run(cmd);
    stop.store(true, Ordering::Relaxed);
    let provoked = maker.join().unwrap().unwrap();
    starvers.into_iter().for_each(|s| s.join().unwrap());
    assert_code(&out, 0);
    if provoked.sent < DATAGRAMS {
        return latscope::testing::skip_part(
            test,
            "the ring filling",
            &format!("only {} datagrams in {FLOOD_FOR:?}", provoked.sent),
        );
    }
    let report = read_json(&json);
    let spikes = &report["tests"][0]["spikes"];
    assert_eq!(spikes["collector"]["name"], "bpf", "{}", describe(&out));
    let maker = format!("spike-maker (pid {})", provoked.tid);
    let (a, b) = provoked.spin;
    let made: Vec<_> = array_of(&spikes["spikes"], "spikes")
        .iter()
        .filter(|s| {
            let (from, to) = (
                u64_of(&s["expected_ns"], "expected_ns"),
                u64_of(&s["actual_ns"], "actual_ns"),
            );
            from <= b && a <= to
        })
        .collect();
    assert!(
        !made.is_empty(),
        "no spike over the spin {a}..{b}: {}",
        describe(&out)
    );
    // Judged by the provoked spike only: other spikes of a busy machine
    // may come while the collector is starved, their windows among the
    // events refused once the ring was full.
    if u64_of(&spikes["events_lost"], "events_lost") > 0 {
        // A skipped event flags every window of its pass, whole or not.
        return latscope::testing::skip_part(
            test,
            "the provoked window whole",
            "the kernel skipped recorder programs in this run",
        );
    }
    for spike in made {
        // Named by its identity among the causes: on a shared machine
        // another task may be the worst of the window and lead the summary.
        let causes = array_of(&spike["causes"], "causes");
        assert!(
            causes.iter().any(|c| c["name"] == maker.as_str()),
            "{maker} not named: {spike}"
        );
        // Whole: a window whose records were overwritten is flagged.
        assert_eq!(spike["events_lost"], false, "{spike}");
    }
    // The ring was full while the window was held: the events after it
    // were refused, not written over it. Without that, the collector came
    // in time and the run proved nothing of the hold.
    if spikes["events_refused"].as_u64().unwrap_or(0) == 0 {
        latscope::testing::skip_part(
            test,
            "the ring full while held",
            "the collector came before the ring was full (nothing refused)",
        );
    }
}
