//! pi_stress's run (`latscope pi-stress`, the `pi_stress` name): the main
//! thread boosted above the groups and pinned to the first CPU it may use,
//! the inversion groups (measure::pi_group) on the CPUs after it, the
//! reporter every 0.75 s (the `Current Inversions:` line, `-D`, Ctrl-C and
//! the watchdog: a group without an inversion for 5 reports in a row is
//! deadlocked), then the final lines and `--json`. Where pi_stress kills
//! its whole process group with SIGTERM (after a watchdog event, an error
//! or Ctrl-C), latscope ends with exit 1 and still writes its lines and
//! JSON (`return_code` 1). `latscope pi-stress` adds the inversion latency
//! (the high thread's wait for the mutex) with percentiles on stderr.

use crate::ipc::pi_group::{Group, PiPolicy, PiSched, Role, Shared, barrier, run_thread};
use crate::pipeline::{CommandError, RunTimes, write_rt_tests_json_returning};
use crate::report::classic_pi_stress as classic;
use crate::rt::stdio::print;
use crate::settings::pi_stress::PiStressSettings;
use crate::stats::LatencyRecorder;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// pi_stress's `report_interval`.
const REPORT_INTERVAL: Duration = Duration::from_millis(750);
/// Reports in a row without an inversion that make a group deadlocked.
const WATCHDOG_LIMIT: u32 = 5;
/// A group thread's stack: it only waits on barriers and the mutex.
const THREAD_STACK: usize = 64 * 1024;

/// How the reporter's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// `-D` passed or every group did its `-i` inversions.
    Done,
    /// A stop signal (Ctrl-C, SIGTERM).
    Interrupted,
    /// The watchdog found a deadlocked group.
    Deadlocked,
}

/// The run; `with_latency`: print the inversion latency at the end
/// (`latscope pi-stress`, not the `pi_stress` name).
pub fn run(s: &PiStressSettings, with_latency: bool) -> Result<i32, CommandError> {
    for line in &s.early_lines {
        eprintln!("{line}");
    }
    if s.mlockall
        && nix::sys::mman::mlockall(
            nix::sys::mman::MlockAllFlags::MCL_CURRENT | nix::sys::mman::MlockAllFlags::MCL_FUTURE,
        )
        .is_err()
    {
        eprintln!("mlockall failed");
        return Ok(1);
    }
    if let Err(errno) =
        crate::rt::sched::try_set_current_thread_policy(policy_of(s.admin.policy), s.admin.priority)
    {
        eprintln!("main: boosting to max priority: 0x{errno:x}");
        return Ok(1);
    }
    let cpus = group_cpus(s)?;
    info(s, &format!("Creating {} test groups", s.groups));
    let shared = Arc::new(Shared {
        shutdown: Default::default(),
        verbose: s.verbose,
        ready: barrier(s.groups * 3 + 1).map_err(CommandError::Runtime)?,
        setup_error: Mutex::new(None),
    });
    let mut groups = Vec::new();
    let mut threads = Vec::new();
    for (id, &cpu) in cpus.iter().enumerate() {
        let group = Arc::new(Group::new(id, cpu, s.inversions).map_err(CommandError::Runtime)?);
        for (role, sched) in [(Role::Low, s.low), (Role::Med, s.med), (Role::High, s.high)] {
            let (g, sh) = (group.clone(), shared.clone());
            let t = std::thread::Builder::new()
                .name(format!("pi-group{id}"))
                .stack_size(THREAD_STACK)
                .spawn(move || run_thread(g, sh, role, sched))
                .map_err(|e| CommandError::Runtime(format!("pi-stress: starting a thread: {e}")))?;
            threads.push(t);
        }
        groups.push(group);
    }
    if s.prompt {
        print("Press return to start test: ");
        let _ = std::io::stdin().read_line(&mut String::new());
    }
    if !s.quiet {
        print(&classic::banner(&classic::Banner {
            groups: s.groups,
            duration_s: s.duration_s,
            inversions: s.inversions,
            admin: &shown(&s.admin),
            high: &shown(&s.high),
            med: &shown(&s.med),
            low: &shown(&s.low),
        }));
    }
    let started = SystemTime::now();
    info(s, "Releasing all threads");
    shared.ready.wait();
    if let Some(e) = shared.setup_error.lock().ok().and_then(|e| e.clone()) {
        // Every group thread has seen the error and returned.
        for t in threads {
            let _ = t.join();
        }
        return Err(CommandError::Runtime(format!("pi-stress: {e}")));
    }
    let ending = report(s, &groups, &shared);
    shared.shut_down();
    finish(s, ending, started, &groups, threads, with_latency)
}

/// The end: `Stopping test`, the threads joined when they can end (not
/// after a deadlock: a frozen thread would never be joined), the final
/// lines, the JSON; the exit code.
fn finish(
    s: &PiStressSettings,
    ending: Ending,
    started: SystemTime,
    groups: &[Arc<Group>],
    threads: Vec<std::thread::JoinHandle<()>>,
    with_latency: bool,
) -> Result<i32, CommandError> {
    if !s.quiet {
        print(&format!("{}Stopping test\n", classic::DOWN_ONE));
    }
    let code = if ending == Ending::Done && !s.had_errors {
        0
    } else {
        1
    };
    if ending != Ending::Deadlocked {
        info(s, "waiting for all threads to complete");
        for t in threads {
            let _ = t.join();
        }
        info(s, "All threads terminated!");
    }
    let total: u64 = groups.iter().map(|g| g.total.load(Ordering::Acquire)).sum();
    let seconds = epoch_s(SystemTime::now()).saturating_sub(epoch_s(started));
    print(&classic::summary(total, seconds));
    if with_latency && ending != Ending::Deadlocked {
        eprint!("{}", latency_lines(groups));
    }
    if let Some(path) = &s.json {
        let start_time = crate::units::rfc2822_local(started);
        let end_time = crate::units::rfc2822_local(SystemTime::now());
        let run = RunTimes {
            cmdline: &s.cmdline,
            start_time: &start_time,
            end_time: &end_time,
        };
        if let Err(f) = write_rt_tests_json_returning(path, &run, code, &classic::json_body(total))
        {
            eprint!("{}", f.message);
            return Ok(f.code);
        }
    }
    if let Some(path) = &s.latscope_json {
        let report = report_of(s, groups, started, ending, code);
        let target = crate::settings::OutputTarget::File(path.clone());
        if let Err(e) =
            crate::pipeline::write_output(&target, &crate::report::json::LatscopeJson, &report)
        {
            eprintln!("latscope: --latscope-json: {e}");
            return Ok(1);
        }
    }
    Ok(code)
}

/// `--latscope-json`'s Report: one test, a series per group whose latency
/// is the inversion latency (empty for a deadlocked run, whose frozen
/// threads never hand their figures over).
fn report_of(
    s: &PiStressSettings,
    groups: &[Arc<Group>],
    started: SystemTime,
    ending: Ending,
    code: i32,
) -> crate::report::Report {
    use crate::report::{
        ConfigDetail, EndReason, PiStressConfig, PiThread, TestConfig, TestResult,
    };
    let thread = |sa: &PiSched| PiThread {
        policy: sa.policy.name().to_string(),
        priority: sa.priority,
    };
    let policy = shown_policy(s.high.policy);
    let mut all = LatencyRecorder::new();
    let series = groups
        .iter()
        .map(|g| {
            let latency = match g.latency.lock() {
                Ok(l) => {
                    all.merge(&l);
                    l.summary()
                }
                Err(_) => LatencyRecorder::new().summary(),
            };
            group_series(s, g, policy, latency)
        })
        .collect();
    let result = TestResult {
        test: "pi-stress".into(),
        description: "priority inheritance: the high thread's wait for the PI mutex \
                      a low thread holds (the inversion latency)"
            .into(),
        mode: "inversion".into(),
        config: TestConfig {
            policy: policy.to_string(),
            priority: s.high.priority,
            loops: s.inversions,
            duration_s: s.duration_s.map(|d| d as f64),
            max_latency_us: None,
            mlockall: s.mlockall,
            cpu_dma_latency: "not held".into(),
            detail: ConfigDetail::PiStress(PiStressConfig {
                groups: groups.len() as u64,
                inversions_per_group: s.inversions,
                low: thread(&s.low),
                med: thread(&s.med),
                high: thread(&s.high),
            }),
        },
        end_reason: match ending {
            Ending::Done if s.inversions.is_some() => EndReason::LoopsDone,
            Ending::Done => EndReason::DurationElapsed,
            Ending::Interrupted => EndReason::Interrupted,
            Ending::Deadlocked => EndReason::Error,
        },
        error: (ending == Ending::Deadlocked)
            .then(|| "WATCHDOG triggered: a group made no inversion for 5 reports".into()),
        overall: all.summary(),
        series,
        overall_detail: None,
        spikes: None,
        started_s: None,
    };
    let ended = SystemTime::now();
    let test = crate::pipeline::FinishedTest {
        result,
        started,
        ended,
        elapsed: ended.duration_since(started).unwrap_or_default(),
        facts: crate::pipeline::RunFacts {
            realtime_policy: true,
            ..Default::default()
        },
        deadline: Vec::new(),
    };
    let sysinfo = crate::report::SysInfo::collect();
    let mut report = crate::pipeline::build_report(vec![test], sysinfo, Vec::new());
    report.exit_code = code;
    report
}

/// A group's series: its high thread's waits for the mutex.
fn group_series(
    s: &PiStressSettings,
    g: &Group,
    policy: &str,
    latency: crate::stats::LatencySummary,
) -> crate::report::Series {
    crate::report::Series {
        label: format!("group {}", g.id),
        cpus: vec![g.cpu],
        pinned: true,
        policy: policy.to_string(),
        priority: s.high.priority,
        overruns: 0,
        above_limit: 0,
        latency,
        per_second: Vec::new(),
        per_second_dropped: 0,
        detail: crate::report::SeriesDetail::PiGroup(crate::report::PiGroup {
            group: g.id as u64,
            cpu: g.cpu,
            inversions: g.total.load(Ordering::Acquire),
        }),
    }
}

/// The Report's name of the groups' policy.
fn shown_policy(p: PiPolicy) -> &'static str {
    match p {
        PiPolicy::Fifo => "fifo",
        PiPolicy::Rr => "rr",
        PiPolicy::Deadline => "deadline",
        PiPolicy::Other | PiPolicy::Batch | PiPolicy::Idle => "other",
    }
}

/// pi_stress's reporter: every 0.75 s the progress line, `-D`, a stop
/// signal, the watchdog.
fn report(s: &PiStressSettings, groups: &[Arc<Group>], shared: &Shared) -> Ending {
    let end = s.duration_s.map(|d| epoch_s(SystemTime::now()) + d);
    if crate::rt::signals::wait_for_stop_signal(REPORT_INTERVAL).is_some() {
        return Ending::Interrupted;
    }
    info(s, "Press Control-C to stop test\nCurrent Inversions: ");
    let mut seen: Vec<u64> = vec![0; groups.len()];
    let mut hits: Vec<u32> = vec![0; groups.len()];
    loop {
        if shared.shutdown.load(Ordering::Acquire) {
            return Ending::Done;
        }
        if crate::rt::signals::wait_for_stop_signal(REPORT_INTERVAL).is_some() {
            info(s, "Keyboard Interrupt!");
            return Ending::Interrupted;
        }
        let totals: Vec<u64> = groups
            .iter()
            .map(|g| g.total.load(Ordering::Acquire))
            .collect();
        if !s.quiet && !shared.shutdown.load(Ordering::Acquire) {
            print(&classic::progress_line(totals.iter().sum()));
        }
        if end.is_some_and(|end| epoch_s(SystemTime::now()) > end) {
            info(
                s,
                &format!("duration reached ({} seconds)", s.duration_s.unwrap_or(0)),
            );
            shared.shut_down();
            continue;
        }
        if watchdog(groups, &totals, &mut seen, &mut hits) {
            eprintln!("reporter stopping due to watchdog event");
            shared.shut_down();
            return Ending::Deadlocked;
        }
    }
}

/// pi_stress's `watchdog_check`: a group that did no inversion since the
/// last report (and has not finished its `-i`) gets a hit; the fifth in a
/// row says it is deadlocked. True when one is.
fn watchdog(groups: &[Arc<Group>], totals: &[u64], seen: &mut [u64], hits: &mut [u32]) -> bool {
    let mut failures = false;
    for (i, g) in groups.iter().enumerate() {
        if totals[i] != seen[i] {
            seen[i] = totals[i];
            hits[i] = 0;
            continue;
        }
        if g.inversions == Some(totals[i]) {
            continue;
        }
        hits[i] += 1;
        if hits[i] >= WATCHDOG_LIMIT {
            eprintln!("WATCHDOG triggered: group {i} is deadlocked!");
            failures = true;
        }
    }
    failures
}

/// Each group's CPU, the main thread pinned: pi_stress's `set_cpu_affinity`
/// (the main thread on the first CPU it may use, the groups round robin on
/// the CPUs after it; everything on CPU 0 with `-u` or one CPU).
fn group_cpus(s: &PiStressSettings) -> Result<Vec<usize>, CommandError> {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    if online == 1 || s.uniprocessor {
        crate::rt::sched::pin_current_thread(0).map_err(CommandError::Runtime)?;
        info(s, "admin and test threads running on one processor");
        return Ok(vec![0; s.groups]);
    }
    let allowed = crate::rt::sched::allowed_cpus();
    let Some(&admin) = allowed.first() else {
        return Err(CommandError::Runtime(
            "No schedulable CPU found for main!".into(),
        ));
    };
    crate::rt::sched::pin_current_thread(admin).map_err(CommandError::Runtime)?;
    info(s, &format!("Admin thread running on processor: {admin}"));
    if admin + 1 == online - 1 {
        info(
            s,
            &format!("Test threads running on processor: {}", online - 1),
        );
    } else {
        info(
            s,
            &format!(
                "Test threads running on processors:  {}-{}",
                admin + 1,
                online - 1
            ),
        );
    }
    let mut core = admin + 1;
    Ok((0..s.groups)
        .map(|_| {
            let cpu = core % online;
            core = cpu + 1;
            cpu
        })
        .collect())
}

/// The inversion latency of every group together: `latscope pi-stress`'s
/// own lines (us, 3 decimals), on stderr so stdout stays pi_stress's.
fn latency_lines(groups: &[Arc<Group>]) -> String {
    let mut all = LatencyRecorder::new();
    for g in groups {
        if let Ok(l) = g.latency.lock() {
            all.merge(&l);
        }
    }
    let s = all.summary();
    let us = |ns: i64| ns as f64 / 1000.0;
    let p = |q: f64| us(s.percentile(q).unwrap_or(0));
    format!(
        "Inversion latency (us): samples {} min {:.3} avg {:.3} p50 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}\n",
        s.samples,
        us(s.min_ns),
        s.avg_ns / 1000.0,
        p(50.0),
        p(99.0),
        p(99.9),
        us(s.max_ns)
    )
}

/// `-v`'s `INFO:` lines, on stderr as pi_stress prints them.
fn info(s: &PiStressSettings, line: &str) {
    if s.verbose {
        eprintln!("INFO: {line}");
    }
}

fn epoch_s(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A thread type's scheduling as the banner shows it.
fn shown(sa: &PiSched) -> classic::SchedShown {
    use classic::SchedDetail;
    let detail = match sa.policy {
        PiPolicy::Fifo | PiPolicy::Rr => SchedDetail::Priority(sa.priority),
        PiPolicy::Deadline => SchedDetail::Reservation(sa.runtime, sa.deadline, sa.period),
        PiPolicy::Other => SchedDetail::Nice(sa.nice),
        PiPolicy::Batch | PiPolicy::Idle => SchedDetail::Nothing,
    };
    classic::SchedShown {
        policy: sa.policy.name(),
        detail,
    }
}

fn policy_of(p: PiPolicy) -> crate::rt::sched::Policy {
    match p {
        PiPolicy::Rr => crate::rt::sched::Policy::Rr,
        _ => crate::rt::sched::Policy::Fifo,
    }
}
