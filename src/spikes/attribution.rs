//! Why one sample was late, from the trace events of its CPU: what held the
//! CPU between the moment the wake-up was due (`expected`) and the moment
//! the measuring task ran (`actual`).
//!
//! The rules (see docs/measurement.md):
//! - Every nanosecond of the window goes to exactly one thing: the innermost
//!   interrupt context running (a hard IRQ, a system vector such as the local
//!   timer, a softirq), else the task on the CPU. IRQ time is therefore not
//!   counted in the softirq or task it interrupted.
//! - Tasks other than the measured ones and the idle task are causes; idle
//!   time and time the trace cannot place (before the first event that tells
//!   which task runs) are reported apart, as is the measured tasks' own time.
//! - Preemption: a measured task switched out while still runnable, or a
//!   task of higher priority than the woken measured task running after its
//!   wake-up. Real-time throttling: a non-real-time task running after a
//!   real-time measured task was woken on this CPU (the scheduler runs such a
//!   task before a runnable real-time one only when the real-time class is
//!   throttled).

use crate::report::spikes::{Cause, Spike, SpikeEvent};
use crate::rt::tracefs::events::{Comm, IrqName, Kind, Switch, TraceEvent, VECTORS, softirq_name};
use crate::rt::tracefs::format::text_of;
use crate::units::format_ns;
use std::collections::VecDeque;

/// Trace kept per CPU: events no older than this before the newest one...
pub const RETAIN_NS: u64 = 250_000_000;
/// ...and no more than this many (about 5 MiB per CPU).
pub const MAX_EVENTS_PER_CPU: usize = 65_536;
/// Events before `expected` shown with a spike (what was running then).
pub const MARGIN_BEFORE_NS: u64 = 200_000;
/// Events kept per spike (the latest of the window; the earlier are counted).
pub const MAX_EVENTS_PER_SPIKE: usize = 200;
/// Causes named in the one-line summary.
const CAUSES_IN_SUMMARY: usize = 3;
/// Causes shorter than this are left out of the summary (not of the JSON).
const SUMMARY_MIN_NS: u64 = 1_000;
/// Nested interrupt contexts followed (deeper ones are not attributed).
const MAX_NESTING: usize = 8;
/// Kernel priorities below this are real-time (`MAX_RT_PRIO`).
const MAX_RT_PRIO: i32 = 100;

/// A task as `sched_switch` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub pid: i32,
    /// Kernel priority: 0..99 real-time (lower is higher), 100..139 normal.
    pub prio: i32,
    pub comm: Comm,
}

/// An interrupt context on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Irq { irq: i32, name: IrqName },
    Softirq { vec: u32 },
    Vector { vector: u8 },
}

/// What a CPU is doing at some moment, as far as the trace tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuState {
    /// None until a `sched_switch` says which task runs.
    task: Option<Task>,
    /// Interrupt contexts, innermost last.
    contexts: Vec<Context>,
}

impl CpuState {
    fn apply(&mut self, event: &TraceEvent) {
        match event.kind {
            Kind::Switch(s) => {
                self.task = Some(Task {
                    pid: s.next_pid,
                    prio: s.next_prio,
                    comm: s.next_comm,
                });
                // A switch happens in task context: whatever was open ended
                // unseen (lost events).
                self.contexts.clear();
            }
            Kind::IrqEntry { irq, name } => self.enter(Context::Irq { irq, name }),
            Kind::SoftirqEntry { vec } => self.enter(Context::Softirq { vec }),
            Kind::VectorEntry { vector } => self.enter(Context::Vector { vector }),
            Kind::IrqExit { irq } => {
                self.leave(|c| matches!(c, Context::Irq { irq: i, .. } if *i == irq))
            }
            Kind::SoftirqExit { vec } => self.leave(|c| *c == Context::Softirq { vec }),
            Kind::VectorExit { vector } => self.leave(|c| *c == Context::Vector { vector }),
            _ => {}
        }
    }

    fn enter(&mut self, context: Context) {
        if self.contexts.len() < MAX_NESTING {
            self.contexts.push(context);
        }
    }

    /// Closes the innermost context `is_it` matches (and any opened inside
    /// it whose exit was lost); an exit without its entry changes nothing.
    fn leave(&mut self, is_it: impl Fn(&Context) -> bool) {
        if let Some(i) = self.contexts.iter().rposition(is_it) {
            self.contexts.truncate(i);
        }
    }
}

/// The recent trace of one CPU: a bounded window of events plus the state
/// of the CPU just before the oldest one kept.
#[derive(Debug, Default)]
pub struct CpuHistory {
    base: CpuState,
    events: VecDeque<TraceEvent>,
    /// The newest event dropped from the front (0: none yet).
    dropped_until: u64,
}

impl CpuHistory {
    pub fn push(&mut self, event: TraceEvent) {
        self.events.push_back(event);
        while let Some(front) = self.events.front() {
            if front.time.saturating_add(RETAIN_NS) >= event.time
                && self.events.len() <= MAX_EVENTS_PER_CPU
            {
                break;
            }
            let old = self.events.pop_front().expect("front exists");
            self.base.apply(&old);
            self.dropped_until = old.time;
        }
    }

    /// Whether the kept events reach back to `time`: no event after it was
    /// dropped.
    pub fn covers(&self, time: u64) -> bool {
        self.dropped_until < time
    }
}

/// What the attribution needs to know about a sample above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window<'a> {
    pub cpu: usize,
    pub expected_ns: u64,
    pub actual_ns: u64,
    /// The measuring task and its peer (their own time is no cause).
    pub measured: &'a [i32],
}

/// Who gets a stretch of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Context(Context),
    Task(Task),
    Measured,
    Idle,
    Unknown,
}

/// Attributes the window of one sample from its CPU's history.
pub fn attribute(history: &CpuHistory, window: &Window<'_>) -> Spike {
    let events = history.events.iter();
    attribute_events(
        &history.base,
        events,
        window,
        !history.covers(window.expected_ns),
    )
}

/// The attribution proper: `events` are the CPU's in time order, `base` the
/// CPU's state before the first of them.
pub fn attribute_events<'e>(
    base: &CpuState,
    events: impl Iterator<Item = &'e TraceEvent>,
    window: &Window<'_>,
    truncated: bool,
) -> Spike {
    let (start, end) = (window.expected_ns, window.actual_ns.max(window.expected_ns));
    let mut state = base.clone();
    let mut book = Book::default();
    let mut shown: VecDeque<SpikeEvent> = VecDeque::new();
    let mut omitted = 0u64;
    let mut at = start;
    let mut woken: Option<(u64, i32)> = None;
    let mut preempted_by = None;
    let mut rt_throttling = false;
    for event in events {
        if event.time > end {
            break;
        }
        if event.time >= start.saturating_sub(MARGIN_BEFORE_NS) {
            if shown.len() == MAX_EVENTS_PER_SPIKE {
                shown.pop_front();
                omitted += 1;
            }
            shown.push_back(describe(event, start));
        }
        if event.time > start {
            book.charge(owner(&state, window.measured), event.time - at);
            at = event.time;
        }
        if event.time >= start {
            match event.kind {
                Kind::Wakeup {
                    pid,
                    prio,
                    target_cpu,
                } if window.measured.contains(&pid) && target_cpu as usize == window.cpu => {
                    woken.get_or_insert((event.time, prio));
                }
                Kind::Switch(s) if window.measured.contains(&s.prev_pid) => {
                    if s.prev_runnable() && !window.measured.contains(&s.next_pid) {
                        preempted_by.get_or_insert_with(|| {
                            task_name(s.next_pid, s.next_prio, &s.next_comm)
                        });
                    }
                }
                _ => {}
            }
        }
        state.apply(event);
        // From the measured task's wake-up on, who runs instead of it (the
        // task current at the wake-up, then each one switched in)?
        if let (Some((_, prio)), Some(task)) = (woken, state.task)
            && event.time >= start
            && matches!(event.kind, Kind::Switch(_) | Kind::Wakeup { .. })
            && task.pid != 0
            && !window.measured.contains(&task.pid)
        {
            if task.prio < prio {
                preempted_by.get_or_insert_with(|| task_name(task.pid, task.prio, &task.comm));
            } else if prio < MAX_RT_PRIO && task.prio >= MAX_RT_PRIO {
                rt_throttling = true;
            }
        }
    }
    if end > at {
        book.charge(owner(&state, window.measured), end - at);
    }
    let mut causes = book.causes;
    causes.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    let mut spike = Spike {
        cpu: window.cpu,
        expected_ns: window.expected_ns,
        actual_ns: window.actual_ns,
        latency_ns: end - start,
        woken_after_ns: woken.map(|(t, _)| t - start),
        causes,
        idle_ns: book.idle_ns,
        unexplained_ns: book.unknown_ns,
        preempted_by,
        rt_throttling,
        window_truncated: truncated,
        events_omitted: omitted,
        events: shown.into(),
        ..Spike::default()
    };
    spike.summary = summary(&spike);
    spike
}

fn owner(state: &CpuState, measured: &[i32]) -> Owner {
    if let Some(context) = state.contexts.last() {
        return Owner::Context(*context);
    }
    match state.task {
        None => Owner::Unknown,
        Some(t) if t.pid == 0 => Owner::Idle,
        Some(t) if measured.contains(&t.pid) => Owner::Measured,
        Some(t) => Owner::Task(t),
    }
}

/// Time per owner within the window.
#[derive(Default)]
struct Book {
    causes: Vec<Cause>,
    idle_ns: u64,
    unknown_ns: u64,
    last: Option<(String, String)>,
}

impl Book {
    fn charge(&mut self, owner: Owner, ns: u64) {
        if ns == 0 {
            return;
        }
        let (kind, name) = match owner {
            Owner::Idle => {
                self.idle_ns += ns;
                self.last = None;
                return;
            }
            Owner::Unknown => {
                self.unknown_ns += ns;
                self.last = None;
                return;
            }
            Owner::Measured => {
                self.last = None;
                return;
            }
            Owner::Task(t) => ("task", task_name(t.pid, t.prio, &t.comm)),
            Owner::Context(Context::Irq { irq, name }) => {
                ("irq", format!("{irq} {}", text_of(&name)))
            }
            Owner::Context(Context::Softirq { vec }) => ("softirq", softirq_name(vec)),
            Owner::Context(Context::Vector { vector }) => (
                "irq",
                VECTORS
                    .get(vector as usize)
                    .map_or_else(|| format!("vector {vector}"), |v| (*v).to_string()),
            ),
        };
        let new_stint = self.last.as_ref() != Some(&(kind.to_string(), name.clone()));
        match self
            .causes
            .iter_mut()
            .find(|c| c.kind == kind && c.name == name)
        {
            Some(c) => {
                c.ns += ns;
                c.count += u32::from(new_stint);
            }
            None => self.causes.push(Cause {
                kind: kind.to_string(),
                name: name.clone(),
                ns,
                count: 1,
            }),
        }
        self.last = Some((kind.to_string(), name));
    }
}

fn task_name(pid: i32, prio: i32, comm: &Comm) -> String {
    format!("{} (pid {pid}, prio {prio})", text_of(comm))
}

/// The one line that says why: the largest causes, then what else the
/// trace showed.
pub fn summary(spike: &Spike) -> String {
    let mut line = format!(
        "worst {} on CPU {}: ",
        format_ns(spike.latency_ns as i64),
        spike.cpu
    );
    let named: Vec<String> = spike
        .causes
        .iter()
        .filter(|c| c.ns >= SUMMARY_MIN_NS)
        .take(CAUSES_IN_SUMMARY)
        .map(Cause::describe)
        .collect();
    if named.is_empty() {
        line.push_str("no kernel activity found in the window: the delay is outside this kernel (hypervisor?)");
        if spike.idle_ns >= SUMMARY_MIN_NS {
            line.push_str(&format!(
                "; the CPU was idle {} of it (idle-state exit or vCPU wake-up)",
                format_ns(spike.idle_ns as i64)
            ));
        }
    } else {
        line.push_str(&named.join(", "));
    }
    if let Some(task) = &spike.preempted_by {
        line.push_str(&format!("; preempted by {task}"));
    }
    if spike.rt_throttling {
        line.push_str(
            "; real-time throttling (a normal task ran while the real-time task was runnable)",
        );
    }
    if spike.window_truncated {
        line.push_str("; the trace did not reach back to the start of the window");
    }
    if spike.events_lost {
        line.push_str("; the kernel lost trace events meanwhile");
    }
    line
}

/// An event as a line of the kernel's text output, timed from `origin`.
fn describe(event: &TraceEvent, origin: u64) -> SpikeEvent {
    let (name, text) = match event.kind {
        Kind::Switch(s) => ("sched_switch", switch_text(&s)),
        Kind::Wakeup {
            pid,
            prio,
            target_cpu,
        } => (
            "sched_wakeup",
            format!("pid={pid} prio={prio} target_cpu={target_cpu}"),
        ),
        Kind::IrqEntry { irq, name } => (
            "irq_handler_entry",
            format!("irq={irq} name={}", text_of(&name)),
        ),
        Kind::IrqExit { irq } => ("irq_handler_exit", format!("irq={irq}")),
        Kind::SoftirqEntry { vec } => (
            "softirq_entry",
            format!("vec={vec} [{}]", softirq_name(vec)),
        ),
        Kind::SoftirqExit { vec } => ("softirq_exit", format!("vec={vec} [{}]", softirq_name(vec))),
        Kind::VectorEntry { vector } => (
            "vector_entry",
            VECTORS
                .get(vector as usize)
                .copied()
                .unwrap_or("?")
                .to_string(),
        ),
        Kind::VectorExit { vector } => (
            "vector_exit",
            VECTORS
                .get(vector as usize)
                .copied()
                .unwrap_or("?")
                .to_string(),
        ),
        Kind::TimerStart { .. } => ("hrtimer_start", String::new()),
        Kind::TimerExpire { .. } => ("hrtimer_expire_entry", String::new()),
        Kind::UserReturn { .. } => ("rseq_update", String::new()),
    };
    SpikeEvent {
        at_ns: event.time as i64 - origin as i64,
        event: name.to_string(),
        text: format!("[pid {}] {text}", event.pid),
    }
}

fn switch_text(s: &Switch) -> String {
    let state = if s.prev_runnable() {
        if s.prev_state & Switch::PREEMPTED != 0 {
            "R+".to_string()
        } else {
            "R".to_string()
        }
    } else {
        format!("{:#x}", s.prev_state)
    };
    format!(
        "{}/{} prio {} {state} ==> {}/{} prio {}",
        text_of(&s.prev_comm),
        s.prev_pid,
        s.prev_prio,
        text_of(&s.next_comm),
        s.next_pid,
        s.next_prio
    )
}
