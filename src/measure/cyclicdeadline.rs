//! cyclicdeadline's run (`latscope cyclicdeadline`, the `cyclicdeadline`
//! name): settings -> one SCHED_DEADLINE thread per reservation
//! (`timer::cyclic` with `CyclicWake::DeadlineYield`) under cyclictest's
//! main loop (`timer::cyclic::control`) -> cyclicdeadline's lines and its
//! `--json` file.
//!
//! Everything cyclicdeadline prints is printed here, in its order: "Using
//! all CPUS", each thread's reservation and its own check, the lines each
//! thread and the main thread print as they start, the running display (or
//! with `-q` the `T:` lines at the end), `-b`'s break lines.

use crate::live::cyclicdeadline::DeadlineScreen;
use crate::pipeline::{CommandError, JsonFailure, RunTimes, write_rt_tests_json};
use crate::report::CyclicThread;
use crate::report::classic_cyclicdeadline as classic;
use crate::rt::stdio::print;
use crate::settings::cyclicdeadline::DeadlineSettings;
use crate::timer::cyclic::control::{self, Control};
use crate::timer::cyclic::{self, CyclicAlign, CyclicOptions, CyclicShared, CyclicThreadPlan};
use crate::timer::cyclic::{CyclicFigures, CyclicWake};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// The clock cyclicdeadline reads (in whole us).
const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_RAW;

/// How a run ended, once its lines are printed.
pub struct DeadlineRan {
    /// Each thread's figures (cyclicdeadline's units: us).
    pub threads: Vec<CyclicThread>,
    /// `--json` could not be written: what cyclicdeadline says then.
    pub json_failure: Option<JsonFailure>,
}

/// The run, as cyclicdeadline does it: its lines printed as it prints
/// them. A thread the kernel refuses (admission control) ends the run with
/// the reason (one line, naming the limit).
pub fn run(s: &DeadlineSettings) -> Result<DeadlineRan, CommandError> {
    let main_thread_cpus = confine_threads(s);
    before_threads(s);
    let plans = plans_of(s);
    let opts = options_of(s);
    let start_time = crate::units::rfc2822_local(SystemTime::now());
    let threads_run = cyclic::start(&plans, &opts).map_err(CommandError::Runtime)?;
    // The threads took the affinity they were created with; the main
    // thread (the display) goes where cyclicdeadline puts every other task.
    if let Some(others) = main_thread_cpus.filter(|o| !o.is_empty()) {
        let _ = crate::rt::sched::pin_current_thread_to(&others);
    }
    let shared = std::sync::Arc::clone(&threads_run.shared);
    announce_threads(s, &shared);
    let deadlines: Vec<u64> = s.threads.iter().map(|t| t.deadline_us).collect();
    let mut screen = DeadlineScreen::new(&deadlines, s.quiet);
    let until = Control {
        loops: 0,
        refresh_on_max: false,
    };
    let controlled = control::control(threads_run, until, &mut screen);
    let end_time = crate::units::rfc2822_local(SystemTime::now());
    let threads = figures_of(s, controlled.results)?;
    print(&screen.after_loop(&threads));
    let broke = shared.break_tid.load(Ordering::Acquire);
    if s.breaktrace != 0 && broke != 0 {
        print(&classic::break_lines(
            broke,
            shared.break_value.load(Ordering::Relaxed),
        ));
    }
    let json_failure = s.json.as_deref().and_then(|path| {
        let times = RunTimes {
            cmdline: &s.cmdline,
            start_time: &start_time,
            end_time: &end_time,
        };
        write_rt_tests_json(path, &times, &classic::json_threads(&threads)).err()
    });
    Ok(DeadlineRan {
        threads,
        json_failure,
    })
}

/// `-a` with some CPUs only. cyclicdeadline runs its threads there by
/// making those CPUs a scheduling partition of their own: it turns off the
/// root cpuset's load balancing and moves every task of the machine into a
/// cpuset of the other CPUs, its threads into an exclusive one of the
/// listed CPUs (and back at the end, not after a SIGKILL). latscope changes
/// no cpuset. Where the listed CPUs already are a partition (isolcpus=, a
/// cpuset partition made by the admin), the kernel takes deadline threads
/// confined to them: the main thread takes the list now, for its threads to
/// inherit. Elsewhere it takes a deadline task only with the affinity of
/// its whole root domain: the threads run there, and one line says so.
/// Returns the CPUs for the main thread once the threads have started (the
/// others of the machine it may use), None without such a list.
fn confine_threads(s: &DeadlineSettings) -> Option<Vec<usize>> {
    use crate::rt::sched;
    let listed = s.some_cpus_only.as_deref()?;
    let allowed = sched::allowed_cpus();
    let others: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !listed.contains(c))
        .collect();
    if sched::deadline_confinable_to(listed) {
        let _ = sched::pin_current_thread_to(listed);
    } else {
        let list = crate::units::cpu_list(listed);
        eprintln!(
            "latscope: warning: cyclicdeadline -a {list}: the deadline threads run on CPUs {} rather than on {list} only: the kernel takes a deadline task only with the affinity of its whole root domain, and latscope does not make {list} a domain of its own by moving every task of the machine into cpusets as cyclicdeadline does; make it a partition first (isolcpus=, a cpuset partition) to confine them",
            crate::units::cpu_list(&allowed)
        );
    }
    Some(others)
}

/// What cyclicdeadline does before its threads start: "Using all CPUS",
/// mlockall, and for each thread its reservation and how long one sample's
/// bookkeeping took (its check that a period's work fits the runtime).
fn before_threads(s: &DeadlineSettings) {
    if s.says_all_cpus {
        print("Using all CPUS\n");
    }
    // cyclicdeadline only warns when it cannot lock its memory.
    let _ = crate::rt::sched::lock_all_memory_if_affordable();
    let now_us = || crate::rt::clock::read_clock(CLOCK) / 1000;
    for t in &s.threads {
        // A sample's work is a clock read and a few additions.
        let start = std::hint::black_box(now_us());
        let tested = now_us().saturating_sub(start);
        print(&classic::reservation_lines(
            t.runtime_us,
            t.deadline_us,
            tested,
        ));
    }
}

/// The lines each thread and the main thread print as they start (their
/// tids), once every thread has one (or the run has already stopped).
fn announce_threads(s: &DeadlineSettings, shared: &CyclicShared) {
    let started = Instant::now();
    let tid_of = |i: usize| shared.threads[i].tid.load(Ordering::Relaxed);
    while (0..s.threads.len()).any(|i| tid_of(i) == 0)
        && !shared.stop.load(Ordering::Relaxed)
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_micros(100));
    }
    let lines: Vec<(String, String)> = s
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| classic::thread_lines(tid_of(i), t.runtime_us, t.deadline_us))
        .collect();
    let mut text: String = lines.iter().map(|(first, _)| first.as_str()).collect();
    text.extend(lines.iter().map(|(_, second)| second.as_str()));
    text.push_str(&format!(
        "main thread {}\n",
        crate::rt::sched::current_tid()
    ));
    print(&text);
}

/// Each thread's plan: its reservation (the deadline is the period).
fn plans_of(s: &DeadlineSettings) -> Vec<CyclicThreadPlan> {
    s.threads
        .iter()
        .map(|t| CyclicThreadPlan {
            interval_ns: t.deadline_us * 1000,
            priority: 0,
            policy: libc::SCHED_OTHER,
            cpu: None,
            loops: 0,
            hist_cells: 0,
            nsecs: false,
            report: false,
            reservation: Some(crate::rt::sched::Reservation {
                runtime_ns: t.runtime_us * 1000,
                deadline_ns: t.deadline_us * 1000,
                period_ns: t.deadline_us * 1000,
            }),
        })
        .collect()
}

/// What every thread shares: cyclicdeadline's clock, `-D`, `-b`.
fn options_of(s: &DeadlineSettings) -> CyclicOptions {
    CyclicOptions {
        // cyclicdeadline's drop-in has no actions.
        breaks: None,
        clock: CLOCK,
        wake: CyclicWake::DeadlineYield,
        relative: false,
        duration_ns: s.duration.map(|d| d.as_nanos() as u64),
        // Any -b but 0, as cyclicdeadline's `if (tracelimit && max > tracelimit)`:
        // a negative one stops the run at its first sample.
        break_limit: (s.breaktrace != 0).then_some(s.breaktrace),
        tracemark: s.tracemark,
        spike_trigger: None,
        spike_nodes: 0,
        verbose: false,
        align: CyclicAlign::None,
        smi: false,
    }
}

/// The threads' figures in cyclicdeadline's terms, or the first thread's
/// failure (a refused reservation: its one line).
fn figures_of(
    s: &DeadlineSettings,
    results: Vec<Result<CyclicFigures, String>>,
) -> Result<Vec<CyclicThread>, CommandError> {
    results
        .into_iter()
        .zip(&s.threads)
        .map(|(result, t)| {
            let f = result.map_err(CommandError::Runtime)?;
            Ok(CyclicThread {
                tid: f.tid,
                interval_us: t.deadline_us,
                cycles: f.cycles,
                min: f.min,
                act: f.act,
                sum: f.sum,
                max: f.max,
                ..CyclicThread::default()
            })
        })
        .collect()
}
