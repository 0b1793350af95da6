//! `--on-threshold` and `--on-end` (rtla's actions): the runner thread.
//!
//! The monitor thread of every test hands the pipeline each series' count of
//! samples above `--max-latency` every tick (`WindowHook::counters`); when a
//! count grows, `ActionRunner::saw` queues a `Crossing` for the runner thread
//! without waiting: the queue holds one crossing, and a crossing that finds
//! it full is counted (`crossings_not_acted`), never waited for. Without
//! `continue` only the first crossing of the run acts; with it, at most one
//! crossing per window (second) of a test.
//!
//! A drop-in whose break value (`-b`, oslat's `-T`) is the trigger counts
//! its crossings per series instead (`stats::crossings::BreakCrossings`),
//! and the runner thread polls those counts every `BREAK_POLL` between
//! actions, with the same rules (the first crossing of the run; with
//! `continue` one per window); it polls once more when the run ends, so
//! that the crossing that ended it acts before the `--on-end` actions.
//!
//! The runner thread is SCHED_OTHER, kept off the measured CPUs while
//! another CPU is allowed, and runs the actions in the order given: a shell
//! command through `/bin/sh -c` as a child at normal priority on the
//! runner's CPUs, spawned without a fork and ended with its process group
//! when it ends or times out (`action_shell`); a signal with kill(2); a trace copied
//! from the run's `spikes::recent::RecentTrace`. At the end of the run
//! (also after Ctrl-C or SIGTERM, before the results are written) the
//! pipeline queues the `--on-end` actions, waits for the runner (each
//! action is bounded) and puts the records in the report.

use crate::report::{ActionLog, ActionOutcome, ActionRun, ActionTrigger, Report};
use crate::settings::actions::{Action, Actions, SignalTarget};
use crate::spikes::recent::RecentTrace;
use crate::stats::crossings::BreakCrossings;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The lines of a shell command's output kept in the report.
pub const OUTPUT_LINES: usize = 10;
/// The longest output line kept, in characters.
const OUTPUT_LINE_CHARS: usize = 200;
/// How often the runner looks at a drop-in's break crossings.
const BREAK_POLL: Duration = Duration::from_millis(10);

/// Where a crossing happened, as the monitor knows it.
#[derive(Debug, Clone, Default)]
pub struct Crossing {
    pub test: Option<String>,
    pub series: Option<String>,
    pub cpu: Option<usize>,
    /// The series' samples above the limit so far.
    pub above_limit: u64,
    /// The second of the test the crossing was seen in.
    pub window: Option<u64>,
}

/// What the runner thread is asked to do.
enum Event {
    Crossing(Crossing),
    /// The run ended; its results so far (the environment of the commands).
    End {
        above_limit: u64,
        max_ns: Option<i64>,
    },
}

/// The monitor's side of the actions, and the runner thread. The pipeline
/// runs one for every test with actions; a drop-in that runs outside the
/// pipeline (cyclictest without `--latscope-json`, signaltest) starts its
/// own and ends it with `finish_with`.
pub struct ActionRunner {
    acts_on_threshold: bool,
    repeat: bool,
    /// Per series of the running test: its count above the limit so far.
    seen: Vec<u64>,
    /// A crossing was queued in this run.
    acted: bool,
    /// The window (second of the running test) of the last crossing queued.
    last_window: Option<u64>,
    test_started: Instant,
    queue: Option<SyncSender<Event>>,
    /// Crossings that found the queue full.
    not_acted: u64,
    thread: Option<JoinHandle<Served>>,
    given: (Vec<String>, Vec<String>),
    /// The drop-in's break crossings, when they are the trigger.
    breaks: Option<Arc<BreakCrossings>>,
}

/// What the runner thread did: its records.
type Served = Vec<ActionRun>;

impl ActionRunner {
    /// Starts the runner thread for `actions` (None without any), off
    /// `measured` where another CPU is allowed; with a `trace` action, the
    /// recent trace of `measured` too. `breaks`: the drop-in's break
    /// crossings, which the thread polls when the break value is the
    /// trigger (`Actions::on_break`).
    pub fn start(
        actions: &Actions,
        measured: &[usize],
        breaks: Option<Arc<BreakCrossings>>,
    ) -> Result<Option<ActionRunner>, String> {
        if actions.is_empty() {
            return Ok(None);
        }
        let breaks = breaks.filter(|_| actions.on_break());
        let trace = if actions.need_trace() {
            Some(RecentTrace::start(measured).map_err(|e| format!("the trace action: {e}"))?)
        } else {
            None
        };
        let free = crate::rt::sched::allowed_cpus_except(measured);
        let cpus = if free.is_empty() {
            crate::rt::sched::allowed_cpus()
        } else {
            free
        };
        let (queue, events) = sync_channel(1);
        let runner = Runner {
            actions: actions.clone(),
            trace,
            run_started: Instant::now(),
            cpus,
            breaks: breaks.clone().map(BreakWatch::new),
        };
        let thread = std::thread::Builder::new()
            .name("latscope-actions".into())
            .spawn(move || runner.serve(events))
            .map_err(|e| format!("cannot start the thread of the actions: {e}"))?;
        Ok(Some(ActionRunner {
            acts_on_threshold: !actions.on_threshold.is_empty(),
            repeat: actions.repeat(),
            seen: Vec::new(),
            acted: false,
            last_window: None,
            test_started: Instant::now(),
            queue: Some(queue),
            not_acted: 0,
            thread: Some(thread),
            given: (
                actions.given_on_threshold.clone(),
                actions.given_on_end.clone(),
            ),
            breaks,
        }))
    }

    /// A test begins: its series' counts start from 0, its windows anew.
    pub fn begin_test(&mut self) {
        self.seen.clear();
        self.last_window = None;
        self.test_started = Instant::now();
    }

    /// Series `series` counts `above_limit` samples above the limit so far
    /// (called on the monitor thread every tick): a new crossing is queued
    /// when the rules let it act. `crossing` says where it is.
    pub fn saw(&mut self, series: usize, above_limit: u64, crossing: impl FnOnce() -> Crossing) {
        // With the break value as the trigger the runner polls the
        // crossings itself (above_limit stays 0 then anyway).
        if !self.acts_on_threshold || self.breaks.is_some() {
            return;
        }
        if self.seen.len() <= series {
            self.seen.resize(series + 1, 0);
        }
        if above_limit <= self.seen[series] {
            return;
        }
        self.seen[series] = above_limit;
        let window = self.test_started.elapsed().as_secs();
        if self.acted && (!self.repeat || self.last_window == Some(window)) {
            return;
        }
        let Some(queue) = &self.queue else {
            return;
        };
        match queue.try_send(Event::Crossing(Crossing {
            above_limit,
            window: Some(window),
            ..crossing()
        })) {
            Ok(()) => {
                self.acted = true;
                self.last_window = Some(window);
            }
            Err(TrySendError::Full(_)) => {
                self.not_acted += 1;
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The run ended with `report` (assembled, not yet judged or written):
    /// the `--on-end` actions run, the runner is waited for, and its records
    /// are the report's `actions`.
    pub fn finish(self, report: &Report) -> ActionLog {
        let series = report.tests.iter().flat_map(|t| &t.series);
        let above_limit = series.clone().map(|s| s.above_limit).sum();
        let max_ns = series
            .filter(|s| s.latency.samples > 0)
            .map(|s| s.latency.max_ns)
            .max();
        self.finish_with(above_limit, max_ns)
    }

    /// The run ended without a report (a drop-in outside the pipeline):
    /// `max_ns` its largest sample, if known. As `finish`.
    pub fn finish_with(mut self, above_limit: u64, max_ns: Option<i64>) -> ActionLog {
        // With the break value as the trigger, its crossings are the count.
        let above_limit = self.breaks.as_ref().map_or(above_limit, |b| b.total());
        if let Some(queue) = self.queue.take() {
            // Blocking: the runner takes it once the crossing before is done.
            let _ = queue.send(Event::End {
                above_limit,
                max_ns,
            });
        }
        let runs = self.join();
        ActionLog {
            on_threshold: std::mem::take(&mut self.given.0),
            on_end: std::mem::take(&mut self.given.1),
            runs,
            crossings_not_acted: self.not_acted,
        }
    }

    /// Closes the queue and waits for the runner (its actions are bounded).
    fn join(&mut self) -> Served {
        self.queue = None;
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for ActionRunner {
    /// A run that failed: no end actions, but no thread (nor trace
    /// instance) left behind.
    fn drop(&mut self) {
        self.join();
    }
}

/// The runner's view of a drop-in's break crossings: what it acted on.
struct BreakWatch {
    crossings: Arc<BreakCrossings>,
    /// Per series: its count when last looked at.
    seen: Vec<u64>,
    /// A crossing was acted on in this run.
    acted: bool,
    /// The window of the last crossing acted on.
    last_window: Option<u64>,
}

impl BreakWatch {
    fn new(crossings: Arc<BreakCrossings>) -> BreakWatch {
        BreakWatch {
            seen: vec![0; crossings.series().len()],
            crossings,
            acted: false,
            last_window: None,
        }
    }

    /// The crossing to act on now, if any (`repeat`: `continue`; `window`:
    /// the second of the run now). A crossing seen while the actions of
    /// an earlier one ran acts late, in its own window; others of a window
    /// already acted in are passed over, as the monitors' are.
    fn next(&mut self, repeat: bool, window: u64) -> Option<Crossing> {
        let mut found = None;
        for (i, seen) in self.seen.iter_mut().enumerate() {
            let count = self.crossings.count(i);
            if count <= *seen {
                continue;
            }
            *seen = count;
            let may_act = !self.acted || (repeat && self.last_window != Some(window));
            if found.is_none() && may_act {
                let series = &self.crossings.series()[i];
                found = Some(Crossing {
                    test: Some(self.crossings.test.clone()),
                    series: Some(series.label.clone()),
                    cpu: series.cpu,
                    above_limit: count,
                    window: Some(window),
                });
                self.acted = true;
                self.last_window = Some(window);
            }
        }
        found
    }
}

/// The runner thread's state.
struct Runner {
    actions: Actions,
    trace: Option<RecentTrace>,
    run_started: Instant,
    /// The CPUs it and its commands run on.
    cpus: Vec<usize>,
    /// The drop-in's break crossings, polled (the break value is the trigger).
    breaks: Option<BreakWatch>,
}

impl Runner {
    fn serve(mut self, events: Receiver<Event>) -> Served {
        // Never beside a measuring thread, never at real-time priority,
        // whatever the thread that started it had.
        let _ = crate::rt::sched::pin_current_thread_to(&self.cpus);
        let _ = crate::rt::sched::set_current_thread_policy(crate::rt::sched::Policy::Other, 0);
        // Nice 0 too (raising a negative nice is always allowed): the shell
        // commands, spawned from this thread, inherit its CPUs and nice.
        // SAFETY: gettid and setpriority on this thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 0) };
        let mut runs = Vec::new();
        loop {
            let event = if self.breaks.is_some() {
                match events.recv_timeout(BREAK_POLL) {
                    Ok(event) => event,
                    Err(RecvTimeoutError::Timeout) => {
                        self.act_on_breaks(&mut runs);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match events.recv() {
                    Ok(event) => event,
                    Err(_) => break,
                }
            };
            if matches!(event, Event::End { .. }) {
                // The crossing that ended the run acts before the end.
                self.act_on_breaks(&mut runs);
            }
            self.serve_event(event, &mut runs);
        }
        runs
    }

    /// A new break crossing, if the rules let it act: the `--on-threshold`
    /// actions run for it.
    fn act_on_breaks(&mut self, runs: &mut Vec<ActionRun>) {
        let repeat = self.actions.repeat();
        let window = self.run_started.elapsed().as_secs();
        let Some(crossing) = self.breaks.as_mut().and_then(|b| b.next(repeat, window)) else {
            return;
        };
        self.serve_event(Event::Crossing(crossing), runs);
    }

    /// Runs the actions of `event` in order, each recorded in `runs`.
    fn serve_event(&self, event: Event, runs: &mut Vec<ActionRun>) {
        let (trigger, actions, crossing, env) = match event {
            Event::Crossing(c) => (
                ActionTrigger::Threshold,
                &self.actions.on_threshold,
                c.clone(),
                self.crossing_env(&c),
            ),
            Event::End {
                above_limit,
                max_ns,
            } => (
                ActionTrigger::End,
                &self.actions.on_end,
                Crossing::default(),
                self.end_env(above_limit, max_ns),
            ),
        };
        for action in actions.iter().filter(|a| **a != Action::Continue) {
            let run = self.act(action, trigger, &crossing, &env);
            note_failure(&run);
            runs.push(run);
        }
    }

    /// The environment of a shell command run on a crossing.
    fn crossing_env(&self, c: &Crossing) -> Vec<(&'static str, String)> {
        let mut env = self.common_env("threshold");
        env.push(("LATSCOPE_TEST", c.test.clone().unwrap_or_default()));
        env.push(("LATSCOPE_SERIES", c.series.clone().unwrap_or_default()));
        env.push((
            "LATSCOPE_CPU",
            c.cpu.map(|c| c.to_string()).unwrap_or_default(),
        ));
        env.push(("LATSCOPE_ABOVE_LIMIT", c.above_limit.to_string()));
        env
    }

    /// The environment of a shell command run at the end.
    fn end_env(&self, above_limit: u64, max_ns: Option<i64>) -> Vec<(&'static str, String)> {
        let mut env = self.common_env("end");
        env.push(("LATSCOPE_ABOVE_LIMIT", above_limit.to_string()));
        env.push((
            "LATSCOPE_MAX_NS",
            max_ns.map(|m| m.to_string()).unwrap_or_default(),
        ));
        env
    }

    fn common_env(&self, event: &str) -> Vec<(&'static str, String)> {
        vec![
            ("LATSCOPE_EVENT", event.to_string()),
            ("LATSCOPE_PID", std::process::id().to_string()),
            (
                "LATSCOPE_LIMIT_US",
                self.actions
                    .limit_us
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
            ),
        ]
    }

    /// Runs one action and records it.
    fn act(
        &self,
        action: &Action,
        trigger: ActionTrigger,
        crossing: &Crossing,
        env: &[(&'static str, String)],
    ) -> ActionRun {
        let started = Instant::now();
        let mut run = ActionRun {
            trigger,
            action: action.kind().to_string(),
            at_s: started.duration_since(self.run_started).as_secs_f64(),
            test: crossing.test.clone(),
            series: crossing.series.clone(),
            cpu: crossing.cpu,
            window: crossing.window,
            outcome: ActionOutcome::Ok,
            detail: String::new(),
            exit_status: None,
            output: Vec::new(),
            output_bytes_dropped: 0,
            output_lines_dropped: 0,
            group_ended: None,
            duration_s: 0.0,
        };
        let done = match action {
            Action::Trace { file } => match &self.trace {
                Some(trace) => trace.save(crossing.cpu, file).map_err(String::from),
                None => Err("no trace is recorded".to_string()),
            },
            Action::Signal { signal, target } => send_signal(*signal, *target),
            Action::Shell { command, timeout } => run_shell(command, *timeout, env, &mut run),
            Action::Continue => Ok(String::new()),
        };
        match done {
            Ok(detail) => run.detail = detail,
            Err(why) => {
                if run.outcome == ActionOutcome::Ok {
                    run.outcome = ActionOutcome::Failed;
                }
                run.detail = why;
            }
        }
        run.duration_s = started.elapsed().as_secs_f64();
        run
    }
}

/// A failed action is said at once, on standard error (the run goes on).
fn note_failure(run: &ActionRun) {
    if run.outcome != ActionOutcome::Ok {
        let option = match run.trigger {
            ActionTrigger::Threshold => "--on-threshold",
            ActionTrigger::End => "--on-end",
        };
        crate::rt::stdio::note_line(&format!(
            "latscope: warning: {option} {}: {}",
            run.action, run.detail
        ));
    }
}

/// kill(2) of `signal` to `target`; the parent is the process latscope
/// was started under (`rt::parent`), never one that adopted it since.
fn send_signal(signal: i32, target: SignalTarget) -> Result<String, String> {
    let pid = match target {
        SignalTarget::Pid(pid) => pid,
        SignalTarget::Parent => {
            return crate::rt::parent::signal(signal)
                .map(|pid| format!("signal {signal} to the parent, pid {pid}"))
                .map_err(|e| format!("signal {signal} to the parent: {e}"));
        }
    };
    let what = format!("signal {signal} to pid {pid}");
    // SAFETY: kill has no memory preconditions; pid is above 0.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(what)
    } else {
        Err(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}

/// Runs `command` with `/bin/sh -c` (`action_shell`: spawned without a
/// fork, in its own process group, ended with it) for at most `timeout`;
/// its exit status, first lines and what it left out or left running go
/// into `run` (`TimedOut` when it was ended at its timeout).
fn run_shell(
    command: &str,
    timeout: Duration,
    env: &[(&'static str, String)],
    run: &mut ActionRun,
) -> Result<String, String> {
    let end = super::action_shell::run(command, env, timeout)?;
    run.exit_status = end.status.clone();
    run.output = lines_of(&end.output.head);
    let mut notes = Vec::new();
    if let Some((bytes, lines)) = end.output.beyond(run.output.len()) {
        run.output_bytes_dropped = bytes;
        run.output_lines_dropped = lines;
        notes.push(format!(
            "{} ({}) of output beyond its first {} not kept",
            crate::units::format_bytes(bytes),
            crate::units::counted(lines, "line"),
            crate::units::counted(run.output.len() as u64, "line"),
        ));
    }
    run.group_ended = end.group_ended.clone();
    notes.extend(end.group_ended);
    let notes: String = notes.iter().map(|n| format!("; {n}")).collect();
    let command = crate::units::escape_line(command);
    let status = end
        .status
        .as_deref()
        .unwrap_or("an end that could not be read");
    if end.timed_out {
        run.outcome = ActionOutcome::TimedOut;
        return Err(format!(
            "'{command}' still ran after {}: ended ({status}){notes}",
            crate::units::format_duration(timeout)
        ));
    }
    let ended = format!("'{command}' ended with {status}{notes}");
    if end.success { Ok(ended) } else { Err(ended) }
}

/// The first `OUTPUT_LINES` lines of `bytes`, each cut at
/// `OUTPUT_LINE_CHARS` characters, control characters escaped.
fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .take(OUTPUT_LINES)
        .map(|l| crate::units::escape_line(&l.chars().take(OUTPUT_LINE_CHARS).collect::<String>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::crossings::CrossingSeries;

    fn two_threads() -> Arc<BreakCrossings> {
        let series = |i: usize| CrossingSeries {
            label: format!("thread {i}"),
            cpu: Some(i),
        };
        Arc::new(BreakCrossings::new(
            "cyclictest",
            vec![series(0), series(1)],
            true,
        ))
    }

    /// Without `continue` the run's first crossing acts, and no other.
    #[test]
    fn a_break_acts_once_without_continue() {
        let crossings = two_threads();
        let mut watch = BreakWatch::new(Arc::clone(&crossings));
        assert!(watch.next(false, 0).is_none(), "nothing crossed yet");
        crossings.crossed(1);
        crossings.crossed(1);
        let first = watch.next(false, 0).expect("the first crossing acts");
        assert_eq!(first.series.as_deref(), Some("thread 1"));
        assert_eq!((first.cpu, first.above_limit), (Some(1), 2));
        assert_eq!(first.test.as_deref(), Some("cyclictest"));
        crossings.crossed(0);
        assert!(watch.next(false, 5).is_none(), "only the first acts");
    }

    /// With `continue`: at most one crossing per window, a new window acts.
    #[test]
    fn continue_acts_once_per_window() {
        let crossings = two_threads();
        let mut watch = BreakWatch::new(Arc::clone(&crossings));
        crossings.crossed(0);
        assert!(watch.next(true, 0).is_some());
        crossings.crossed(1);
        assert!(watch.next(true, 0).is_none(), "window 0 acted already");
        assert!(watch.next(true, 1).is_none(), "nothing new since");
        crossings.crossed(0);
        let again = watch.next(true, 1).expect("a new window acts");
        assert_eq!((again.window, again.above_limit), (Some(1), 2));
    }

    #[test]
    fn the_output_kept_is_the_first_lines_cut_and_escaped() {
        let mut text = String::new();
        for i in 0..15 {
            text.push_str(&format!("line {i}\n"));
        }
        let lines = lines_of(text.as_bytes());
        assert_eq!(lines.len(), OUTPUT_LINES);
        assert_eq!((lines[0].as_str(), lines[9].as_str()), ("line 0", "line 9"));
        let long = "x".repeat(500);
        assert_eq!(lines_of(long.as_bytes())[0].len(), OUTPUT_LINE_CHARS);
        let escaped = lines_of(b"a\x1bb\n");
        assert_eq!(escaped, vec![crate::units::escape_line("a\x1bb")]);
        assert!(!escaped[0].contains('\x1b'));
        assert!(lines_of(b"").is_empty());
    }
}
