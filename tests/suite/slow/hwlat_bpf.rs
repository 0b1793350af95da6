//! `latscope hwlat --tier bpf` through the real binary: interference
//! provoked on the measured CPU with identity (a timer storm, a loopback
//! network flood, a FIFO task, each by a thread of this test of known id)
//! is classed OS with its cause, gap by gap; an ordinary user gets the
//! tier's one line, and `auto` without the capabilities falls back and
//! says why; SIGINT, SIGTERM and kill -9 leave no program or map behind.

use crate::common::*;
use serde_json::Value;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::common::turns::realtime_turn()
}

/// Whether the bpf tier runs here (a short real run); says why a test
/// skips when not.
fn bpf_tier_usable(test: &str) -> bool {
    if skip_without_realtime(test) {
        return false;
    }
    let mut cmd = latscope(60);
    cmd.args(["hwlat", "--tier", "bpf", "-D", "1", "--cpu", "0"])
        .args(["--width", "10ms", "--window", "100ms", "-q"]);
    let out = run(cmd);
    let stderr = stderr_of(&out);
    if out.status.code() == Some(1) && stderr.contains("the bpf tier cannot run here") {
        latscope::testing::skip(test, stderr.trim());
        return false;
    }
    assert_code(&out, 0);
    assert!(
        stdout_of(&out).contains("tier: bpf (gap-precise"),
        "{}",
        describe(&out)
    );
    true
}

/// The sampler thread of `cpu` in latscope process `pid`, once it has run.
fn sampler_of(pid: u32, cpu: usize) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == format!("hwlat/{cpu}")
            && state_of(pid, task.file_name().to_str()?.parse().ok()?).is_some()
        {
            return task.file_name().to_str()?.parse().ok();
        }
    }
    None
}

/// The scheduler state of thread `tid` of `pid` (`R`: running or
/// preempted, `S`: asleep between two widths).
fn state_of(pid: u32, tid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The provokers' priority: above the samplers' 95.
const PROVOKER_PRIORITY: i32 = 97;

/// Every provoker's cycle, and where each one's turn starts in it: the
/// turns never overlap, so each provoked gap has one provoker.
const CYCLE_NS: u64 = 20_000_000;
const MS: u64 = 1_000_000;
/// Timer storm: armed from 0 (done by 3 ms), fires at 4 ms, checked at 6 ms.
const STORM_AT: u64 = 4 * MS;
/// Timers of one storm: their expiries run in one local-timer interrupt
/// (about 220 us here, twice the threshold; a tick takes 10-50 us).
const STORM_TIMERS: usize = 1600;
const NET_TURN: u64 = 8 * MS;
const NET_PACKETS: usize = 20;
const FIFO_TURN: u64 = 13 * MS;

/// The measured CPU's sampler thread, as the provokers see it.
#[derive(Clone)]
struct Sampler {
    pid: u32,
    tid: u32,
    /// When the last provocation (of any provoker) ended, and the sampler's
    /// run time then.
    last: Arc<std::sync::Mutex<(u64, u64)>>,
}

impl Sampler {
    /// Its CPU time so far (ns, `schedstat`): exact while it is preempted.
    fn runtime(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/task/{}/schedstat", self.pid, self.tid))
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// Preempted in a width (`R`; between widths it sleeps: `S`).
    fn preempted(&self) -> bool {
        state_of(self.pid, self.tid) == Some('R')
    }

    /// Whether it ran at least 85 % of the time since `(when, runtime)`:
    /// what happened before is in a gap of its own, not merged into the
    /// next one (another task at its priority on a shared machine may hold
    /// the CPU for a whole width meanwhile).
    fn ran_since(&self, (when, runtime): (u64, u64)) -> bool {
        let ran = self.runtime().saturating_sub(runtime);
        ran * 100 >= monotonic_ns().saturating_sub(when) * 85
    }

    fn mark(&self) -> (u64, u64) {
        (monotonic_ns(), self.runtime())
    }
}

/// What one provoker did: its thread id and the provocations the sampler
/// saw alone (preempted in a width, having run since the last provocation,
/// and the turn kept to its time).
struct Provoked {
    tid: u32,
    seen: u64,
    done: u64,
}

/// The latest a provoker runs: past the run's 7 s and its set-up, it
/// stops by itself even if nobody stops it.
const PROVOKERS_FOR_NS: u64 = 12_000_000_000;

/// Runs `turn` (returns whether it kept to its time and saw the sampler
/// as it needs; each turn is bounded, about 1 ms of work) once per cycle
/// from `start` on `cpu` at FIFO 97, sleeping between turns, until `stop`
/// or `PROVOKERS_FOR_NS` after `start`, in a thread named `name`.
fn provoker(
    name: &str,
    cpu: usize,
    sampler: Sampler,
    start: u64,
    stop: Arc<AtomicBool>,
    mut turn: impl FnMut(u64, &Sampler) -> bool + Send + 'static,
) -> std::thread::JoinHandle<Provoked> {
    let deadline = start + PROVOKERS_FOR_NS;
    let name = name.to_string();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let tid = become_thread(&name, cpu, libc::SCHED_FIFO, PROVOKER_PRIORITY)
                .unwrap_or_else(|why| panic!("{name}: {why}")) as u32;
            let (mut seen, mut done) = (0, 0);
            let mut cycle = start;
            while !stop.load(Ordering::Relaxed) && cycle < deadline {
                sleep_until(cycle);
                if stop.load(Ordering::Relaxed) || monotonic_ns() >= deadline {
                    break;
                }
                let last = *sampler.last.lock().unwrap();
                let alone = sampler.preempted() && sampler.ran_since(last);
                let on_time = turn(cycle, &sampler);
                let after = sampler.preempted();
                *sampler.last.lock().unwrap() = sampler.mark();
                seen += u64::from(alone && on_time && after);
                done += 1;
                // A late turn skips the cycles it ran into: the thread
                // never runs at FIFO 97 for more than its turns.
                let now = monotonic_ns();
                cycle += CYCLE_NS;
                if cycle <= now {
                    cycle += (now - cycle) / CYCLE_NS * CYCLE_NS + CYCLE_NS;
                }
            }
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: back to normal before the thread ends.
            unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param) };
            Provoked { tid, seen, done }
        })
        .expect("a provoker thread")
}

/// `STORM_TIMERS` timerfds armed (on the CPU this thread runs on) to expire
/// together at `STORM_AT` of each cycle; the thread sleeps across it.
fn timer_storm(cycle: u64, timers: &[OwnedFd], sampler: &Sampler) -> bool {
    let at = cycle + STORM_AT;
    let spec = libc::itimerspec {
        it_interval: timespec_of(0),
        it_value: timespec_of(at),
    };
    for t in timers {
        // SAFETY: our own timerfd and a valid absolute time.
        unsafe {
            libc::timerfd_settime(
                t.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }
    let armed_in_time = monotonic_ns() + MS <= at;
    let armed = sampler.mark();
    sleep_until(cycle + STORM_AT + 2 * MS);
    // The sampler ran across the storm: it is a gap of its own.
    armed_in_time && sampler.ran_since(armed) && monotonic_ns() < cycle + NET_TURN
}

/// The storm's timerfds (the soft limit on descriptors raised to the hard
/// one when it is lower); None when the hard limit is too low.
fn timerfds() -> Option<Vec<OwnedFd>> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid output buffer, then the same limit raised.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        if limit.rlim_max < STORM_TIMERS as libc::rlim_t + 256 {
            return None;
        }
        limit.rlim_cur = limit.rlim_cur.max(STORM_TIMERS as libc::rlim_t + 256);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    let fds = (0..STORM_TIMERS)
        .map(|_| {
            // SAFETY: creates a descriptor this vector then owns.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
            assert!(
                fd >= 0,
                "timerfd_create: {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: a fresh descriptor of ours.
            unsafe { OwnedFd::from_raw_fd(fd) }
        })
        .collect();
    Some(fds)
}

/// `NET_PACKETS` datagrams over loopback (or as many as 1 ms allows): the
/// NET_RX softirq runs on this CPU, on the sender's way out of the send.
fn net_flood(cycle: u64, socket: &std::net::UdpSocket) -> bool {
    let payload = [0x5au8; 1024];
    let from = monotonic_ns();
    for _ in 0..NET_PACKETS {
        let _ = socket.send(&payload);
        if monotonic_ns() - from > MS {
            break;
        }
    }
    monotonic_ns() < cycle + NET_TURN + 4 * MS
}

/// 1 ms of busy FIFO time.
fn fifo_burst(cycle: u64) -> bool {
    let from = monotonic_ns();
    while monotonic_ns() - from < MS {}
    monotonic_ns() < cycle + FIFO_TURN + 3 * MS
}

/// Gaps of CPU `cpu`'s causes that `matches` picks.
fn gaps_where(cpu: &Value, matches: impl Fn(&str) -> bool) -> u64 {
    array_of(&cpu["os_causes"], "os_causes")
        .iter()
        .filter(|c| matches(c["cause"].as_str().unwrap_or("")))
        .map(|c| u64_of(&c["count"], "count"))
        .sum()
}

/// At least 99 % of the `seen` provocations (and at least 20 of them).
fn assert_99(what: &str, found: u64, p: &Provoked, detail: &Value) {
    eprintln!(
        "{what}: {found} gaps with the right cause, {} provocations seen, {} done",
        p.seen, p.done
    );
    assert!(
        p.seen >= 20,
        "{what}: only {} of {} provocations seen by the sampler",
        p.seen,
        p.done
    );
    assert!(
        found * 100 >= p.seen * 99,
        "{what}: {found} gaps with the right cause for {} provocations seen ({} done): {}",
        p.seen,
        p.done,
        evidence("os_causes", &detail["os_causes"].to_string())
    );
}

#[test]
fn provoked_interference_is_os_with_its_cause_gap_by_gap() {
    let test = "slow::hwlat_bpf::provoked_interference_is_os_with_its_cause_gap_by_gap";
    let _turn = serial();
    if !bpf_tier_usable(test) {
        return;
    }
    let Some(timers) = timerfds() else {
        let why = format!("{STORM_TIMERS} timerfds exceed the hard limit on open files");
        return latscope::testing::skip(test, &why);
    };
    let cpu = measured_cpu();
    let (_dir, file) = temp_file("hwlat.json");
    let mut cmd = std::process::Command::new(bin());
    cmd.args([
        "hwlat",
        "--tier",
        "bpf",
        "--cpu",
        &cpu.to_string(),
        "-D",
        "7",
    ])
    .args(["--threshold", "100us", "-q", "--json"])
    .arg(&file);
    let spawned = spawn_std(&mut cmd);
    let pid = spawned.child.id();
    let mut waited = 0;
    let sampler = loop {
        if let Some(tid) = sampler_of(pid, cpu) {
            break tid;
        }
        assert!(waited < 3000, "the sampler never started");
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    };
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.connect(receiver.local_addr().unwrap()).unwrap();
    sender.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Stopped and joined however this test ends (they also stop by
    // themselves at their deadline).
    let mut provokers = Provokers::new(stop.clone());
    let start = monotonic_ns() + 50 * MS;
    let who = Sampler {
        pid,
        tid: sampler,
        last: Arc::new(std::sync::Mutex::new((monotonic_ns(), 0))),
    };
    provokers.add(provoker(
        "hwprov-timer",
        cpu,
        who.clone(),
        start,
        stop.clone(),
        move |c, s| timer_storm(c, &timers, s),
    ));
    provokers.add(provoker(
        "hwprov-net",
        cpu,
        who.clone(),
        start + NET_TURN,
        stop.clone(),
        move |c, _| net_flood(c - NET_TURN, &sender),
    ));
    provokers.add(provoker(
        "hwprov-fifo",
        cpu,
        who,
        start + FIFO_TURN,
        stop.clone(),
        |c, _| fifo_burst(c - FIFO_TURN),
    ));
    let (status, stdout, stderr) = spawned.wait(Duration::from_secs(60));
    let mut done = provokers.finish().into_iter();
    let (storm, net, fifo) = (
        done.next().unwrap(),
        done.next().unwrap(),
        done.next().unwrap(),
    );
    drop(receiver);
    assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
    let report = read_json(&file);
    let detail = &series(&report)[0]["detail"];
    assert_eq!(detail["cpu"], cpu);
    let task = |p: &Provoked, name: &str| format!("task {name} (pid {})", p.tid);
    // The FIFO task, by its name and thread id.
    let fifo_task = task(&fifo, "hwprov-fifo");
    assert_99(
        "FIFO task",
        gaps_where(detail, |c| c.contains(&fifo_task)),
        &fifo,
        detail,
    );
    // The loopback flood: its sender and the NET_RX softirq in its gap.
    let net_task = task(&net, "hwprov-net");
    let net_gaps = gaps_where(detail, |c| {
        c.contains(&net_task) && c.contains("softirq NET_RX")
    });
    assert_99("loopback flood", net_gaps, &net, detail);
    // The timer storm: an interrupt gap of its own, no task in it (the
    // storm's timers wake nobody).
    let storm_gaps = gaps_where(detail, |c| c.contains("irq LOC") && !c.contains("task "));
    assert_99("timer storm", storm_gaps, &storm, detail);
}

/// `hwlat --tier bpf` as an ordinary user: the tier's one line, exit 1,
/// before the real-time set-up; `auto` without the capabilities (root's
/// others kept) runs the unprivileged tier and says why on the tier line.
#[test]
fn without_bpf_the_tier_line_says_why_and_bpf_alone_is_a_clear_error() {
    let test = "slow::hwlat_bpf::without_bpf_the_tier_line_says_why_and_bpf_alone_is_a_clear_error";
    let why = "not permitted: needs CAP_BPF and CAP_PERFMON (or root)";
    match nobody_runner() {
        Err(reason) => latscope::testing::skip_part(test, "as nobody", &reason),
        Ok(mut cmd) => {
            cmd.arg(bin()).args(args("hwlat --tier bpf -D 1 -q"));
            let out = run_std_with_timeout(cmd, Duration::from_secs(30));
            assert_code(&out, 1);
            assert_eq!(
                stderr_of(&out).trim(),
                format!("latscope: error: --tier bpf: the bpf tier cannot run here: {why}"),
                "{}",
                describe(&out)
            );
        }
    }
    if skip_without_realtime(test) || !setpriv_usable(test) {
        return;
    }
    let _turn = serial();
    let out = without_bpf_capabilities(&args("hwlat -D 1 --cpu 0 --width 100ms --window 200ms -q"));
    assert_code(&out, 0);
    // The next tier: tracefs where root's file access makes a trace
    // instance, else unprivileged; the line says why bpf did not run.
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains(&format!("(bpf: {why}"))
            && (stdout.contains("tier: tracefs") || stdout.contains("tier: unprivileged")),
        "{}",
        describe(&out)
    );
    // The tracefs tier asked for by name runs (as root here), or says in
    // one line why it cannot.
    let out = run(latscope(30).args(args(
        "hwlat --tier tracefs -D 1 --cpu 0 --width 100ms --window 200ms -q",
    )));
    if out.status.code() == Some(1) {
        assert!(
            stderr_of(&out).contains("--tier tracefs cannot run here: "),
            "{}",
            describe(&out)
        );
    } else {
        assert_code(&out, 0);
        assert!(
            stdout_of(&out).contains("tier: tracefs (gap-precise"),
            "{}",
            describe(&out)
        );
    }
}

#[test]
fn stopping_or_killing_a_bpf_tier_run_leaves_no_program_or_map() {
    let test = "slow::hwlat_bpf::stopping_or_killing_a_bpf_tier_run_leaves_no_program_or_map";
    let _turn = serial();
    if !bpf_tier_usable(test) || !bpftool_usable(test) {
        return;
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
        let child = spawn(&args("hwlat --tier bpf --cpu 0 -q"));
        let pid = child.child.id();
        // IRQ, softirq and switch at least, and the map.
        let held = bpf_ids_once_loaded(pid, 3);
        assert!(
            held.iter().any(|id| id.starts_with("map_id")),
            "no map: {held:?}"
        );
        assert!(held.iter().all(|id| still_loaded(id)), "{held:?}");
        child.signal(signal);
        let (status, stdout, stderr) = child.wait(Duration::from_secs(30));
        if signal == libc::SIGKILL {
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(9)
            );
        } else {
            assert_eq!(status.code(), Some(0), "{}", dump(status, &stdout, &stderr));
            assert!(
                stdout.contains("ended: interrupted"),
                "{}",
                dump(status, &stdout, &stderr)
            );
        }
        let left = bpf_ids_left(&held);
        assert!(left.is_empty(), "signal {signal}: left behind: {left:?}");
    }
}
