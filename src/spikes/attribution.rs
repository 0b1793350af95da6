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
//!   throttled): one switched in after the wake-up, or one that was running
//!   at the wake-up and kept the CPU longer than `THROTTLE_GRACE_NS` (one
//!   that leaves at once was merely preempted, by the woken task or by
//!   another real-time one woken at the same moment).

use crate::report::{Cause, Spike, SpikeEvent};
use crate::rt::tracefs::events::{Comm, IrqName, Kind, Switch, TraceEvent, VECTORS, softirq_name};
use crate::rt::tracefs::format::text_of;
use crate::units::format_ns;
use std::collections::{BTreeMap, VecDeque};

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
/// The `Cause::kind` of latscope's own trace reader.
pub const TRACER_KIND: &str = "tracer";
/// Kernel priorities below this are real-time (`MAX_RT_PRIO`).
const MAX_RT_PRIO: i32 = 100;
/// How long a normal task running when a real-time task is woken may keep
/// the CPU before that counts as throttling: far above the few microseconds
/// a preemption takes, far below the tens of ms throttling lends the CPU.
const THROTTLE_GRACE_NS: u64 = 1_000_000;

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
    /// Names and priorities of the tasks seen switching, for a task known
    /// only by the `common_pid` of its events (bounded: cleared when full).
    names: BTreeMap<i32, (Comm, i32)>,
}

/// Tasks remembered by name per CPU.
const MAX_NAMES: usize = 1024;
/// The priority of a task the trace has not told yet.
const UNKNOWN_PRIO: i32 = i32::MAX;

impl CpuState {
    /// A CPU known to run task `pid` (the flight recorder's "task X since t").
    pub fn running(pid: i32, prio: i32, comm: Comm) -> CpuState {
        let mut names = BTreeMap::new();
        names.insert(pid, (comm, prio));
        CpuState {
            task: Some(Task { pid, prio, comm }),
            contexts: Vec::new(),
            names,
        }
    }

    fn apply(&mut self, event: &TraceEvent) {
        // Every record names the task current when it was written: that
        // reveals switches the kernel did not trace (on this machine, a CPU
        // leaving its idle task emits no `sched_switch`). Negative pids are
        // no task (events of unknown origin).
        if event.pid >= 0
            && !matches!(event.kind, Kind::Switch(_))
            && self.task.is_none_or(|t| t.pid != event.pid)
        {
            let (comm, prio) = self
                .names
                .get(&event.pid)
                .copied()
                .unwrap_or((*b"<unknown>\0\0\0\0\0\0\0", UNKNOWN_PRIO));
            self.task = Some(Task {
                pid: event.pid,
                prio,
                comm,
            });
        }
        match event.kind {
            Kind::Switch(s) => {
                if self.names.len() >= MAX_NAMES {
                    self.names.clear();
                }
                self.names.insert(s.prev_pid, (s.prev_comm, s.prev_prio));
                self.names.insert(s.next_pid, (s.next_comm, s.next_prio));
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

    /// Folds the events before `time` into the state before the oldest
    /// kept: a consumer that attributes windows in time order (hwlat's
    /// gaps) then steps over each event once, not once per window.
    pub fn forget_before(&mut self, time: u64) {
        while self.events.front().is_some_and(|e| e.time < time) {
            let old = self.events.pop_front().expect("front exists");
            self.base.apply(&old);
            self.dropped_until = old.time;
        }
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
    /// latscope's own trace reader (0: not known): a cause like any task,
    /// but named as latscope's, so that nobody hunts for it elsewhere.
    pub tracer: i32,
    /// What the measured task waited for: it says which time of the window
    /// no recorded event can explain.
    pub wait: Wait,
}

/// What a window is, as far as time no event explains goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// A wake-up by another CPU (IPC): the waker's side is not traced here,
    /// so nothing is concluded from quiet time.
    #[default]
    Remote,
    /// A wake-up by a timer of this very CPU (`timer`): from the due time
    /// until the first recorded event, an idle CPU waited for an interrupt
    /// that was due and came late.
    Timer,
    /// A gap the measured task saw while it ran (`noise`): its own time in
    /// the window is time taken from it that no event shows.
    Gap,
}

/// The `Cause::kind` of time no recorded event explains (see `Wait`): taken
/// below the kernel.
pub const HARDWARE_KIND: &str = "hardware";
/// Its `Cause::name`.
pub const HARDWARE_NAME: &str = "unexplained: hardware, firmware or hypervisor (SMI, VM exit)";
/// The `Cause::kind` and `Cause::name` of time in NMI handlers.
pub const NMI_KIND: &str = "nmi";
pub const NMI_NAME: &str = "NMI";

/// Who gets a stretch of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Context(Context),
    Task(Task),
    Measured,
    Idle,
    Unknown,
    /// Nothing recorded explains it (see `Wait`).
    Hardware,
    /// A non-maskable interrupt (`nmi_handler`).
    Nmi,
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
    let mut attribution = Attribution::new(base, window);
    for event in events {
        if attribution.step(event) == Step::PastTheWindow {
            break;
        }
    }
    attribution.finish(truncated)
}

/// What `Attribution::step` made of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Taken into the window's account.
    Taken,
    /// After the window's end: it and every later event change nothing.
    PastTheWindow,
}

/// The attribution of one window, fed its CPU's events one at a time in
/// time order (`step`) and closed at the window's end (`finish`). It keeps
/// the CPU's state as the events change it, the time charged to each owner
/// up to the last event (`at`), and who held off the measured task.
pub struct Attribution<'w> {
    window: Window<'w>,
    /// The window: from the due time to the moment the measured task ran.
    start: u64,
    end: u64,
    state: CpuState,
    times: TimePerOwner,
    /// The events shown with the spike (the latest `MAX_EVENTS_PER_SPIKE`),
    /// and how many earlier ones were left out.
    shown: VecDeque<SpikeEvent>,
    omitted: u64,
    /// Time is charged up to here.
    at: u64,
    /// The measured task's wake-up onto the window's CPU: when, and the
    /// priority it was woken with.
    woken: Option<(u64, i32)>,
    verdict: Verdict,
    /// When the task on the CPU got it (None: before the events looked at).
    current_since: Option<u64>,
    /// Whether an event came after the due time (see `Wait::Timer`).
    seen_in_window: bool,
    /// An event after the window's end came: the account is closed.
    past_end: bool,
}

impl<'w> Attribution<'w> {
    /// The attribution of `window`, on a CPU in state `base` before the
    /// first event to come.
    pub fn new(base: &CpuState, window: &Window<'w>) -> Attribution<'w> {
        let start = window.expected_ns;
        Attribution {
            window: *window,
            start,
            end: window.actual_ns.max(start),
            state: base.clone(),
            times: TimePerOwner {
                tracer: window.tracer,
                ..TimePerOwner::default()
            },
            shown: VecDeque::new(),
            omitted: 0,
            at: start,
            woken: None,
            verdict: Verdict::default(),
            current_since: None,
            seen_in_window: false,
            past_end: false,
        }
    }

    /// Takes the next event of the CPU into the account.
    pub fn step(&mut self, event: &TraceEvent) -> Step {
        if self.past_end || event.time > self.end {
            self.past_end = true;
            return Step::PastTheWindow;
        }
        if event.time >= self.start.saturating_sub(MARGIN_BEFORE_NS) {
            self.show(event);
        }
        if event.time > self.start {
            self.charge_until(event);
        }
        if event.time >= self.start {
            note_wakeup_or_preemption(event, &self.window, &mut self.woken, &mut self.verdict);
        }
        self.judge_a_task_leaving(event);
        let before = self.state.task.map(|t| t.pid);
        self.state.apply(event);
        if self.state.task.map(|t| t.pid) != before || matches!(event.kind, Kind::Switch(_)) {
            self.current_since = Some(event.time);
        }
        Step::Taken
    }

    /// Closes the account at the window's end: the spike, with its causes
    /// largest first. `truncated`: the history did not reach back to the
    /// due time.
    pub fn finish(mut self, truncated: bool) -> Spike {
        let end = self.end;
        if end > self.at {
            let owner = self.owner_of_quiet_time(!self.seen_in_window);
            self.times.charge(owner, end - self.at);
        }
        // The task still on the CPU at the end of the window ran after the
        // wake-up too: judged by the priority it was switched in with.
        if let (Some((woken_at, prio)), Some(task)) = (self.woken, self.state.task) {
            let ran_after_wake = ran_after_wake(self.current_since, woken_at, end);
            self.verdict.judge(
                &self.window,
                prio,
                (task.pid, task.prio, &task.comm),
                ran_after_wake,
            );
        }
        let mut causes = name_unknown_tasks(self.times.causes, &self.state.names);
        causes.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
        let mut spike = Spike {
            cpu: self.window.cpu,
            expected_ns: self.window.expected_ns,
            actual_ns: self.window.actual_ns,
            latency_ns: end - self.start,
            woken_after_ns: self.woken.map(|(t, _)| t - self.start),
            causes,
            idle_ns: self.times.idle_ns,
            unexplained_ns: self.times.unknown_ns,
            measured_ns: self.times.measured_ns,
            preempted_by: self.verdict.preempted_by,
            rt_throttling: self.verdict.rt_throttling,
            window_truncated: truncated,
            events_omitted: self.omitted,
            events: self.shown.into(),
            ..Spike::default()
        };
        spike.summary = summary(&spike);
        spike
    }

    /// Keeps `event` among those shown with the spike (the latest
    /// `MAX_EVENTS_PER_SPIKE`; the earlier are counted).
    fn show(&mut self, event: &TraceEvent) {
        if self.shown.len() == MAX_EVENTS_PER_SPIKE {
            self.shown.pop_front();
            self.omitted += 1;
        }
        self.shown.push_back(describe(event, self.start));
    }

    /// Charges the time from `at` to `event` (inside the window) to whoever
    /// held the CPU in it.
    fn charge_until(&mut self, event: &TraceEvent) {
        // An NMI handler's event comes at its end: back to its start the
        // CPU was in the NMI (nothing else is traced inside one).
        let nmi_from = match event.kind {
            Kind::Nmi { delta_ns, .. } => event.time.saturating_sub(delta_ns).max(self.at),
            _ => event.time,
        };
        let owner = self.owner_of_quiet_time(!self.seen_in_window);
        self.times.charge(owner, nmi_from - self.at);
        self.times.charge(Owner::Nmi, event.time - nmi_from);
        self.at = event.time;
        self.seen_in_window = true;
    }

    /// Who gets the time since the last event (see `unexplained`).
    fn owner_of_quiet_time(&self, quiet_since_due: bool) -> Owner {
        unexplained(
            owner(&self.state, self.window.measured),
            self.window.wait,
            quiet_since_due,
        )
    }

    /// A task that ran after the measured task was woken is judged when it
    /// leaves the CPU, by the priority it leaves with: its priority at its
    /// switch-in may be stale (a task that changed its own policy while
    /// running keeps the old one in the trace until it leaves).
    fn judge_a_task_leaving(&mut self, event: &TraceEvent) {
        if let (Some((woken_at, prio)), Kind::Switch(s)) = (self.woken, event.kind)
            && event.time > woken_at
        {
            let ran_after_wake = ran_after_wake(self.current_since, woken_at, event.time);
            self.verdict.judge(
                &self.window,
                prio,
                (s.prev_pid, s.prev_prio, &s.prev_comm),
                ran_after_wake,
            );
        }
    }
}

/// Whether the task on the CPU at `time`, there since `since`, counts as
/// running after the wake-up at `woken_at` (see the module doc on
/// throttling).
fn ran_after_wake(since: Option<u64>, woken_at: u64, time: u64) -> bool {
    since.is_some_and(|t| t > woken_at) || time.saturating_sub(woken_at) > THROTTLE_GRACE_NS
}

/// At or after the due time: the measured task's wake-up onto the window's
/// CPU (the first one counts), or a measuring task losing the CPU while
/// still runnable (the first task that took it).
fn note_wakeup_or_preemption(
    event: &TraceEvent,
    window: &Window<'_>,
    woken: &mut Option<(u64, i32)>,
    verdict: &mut Verdict,
) {
    match event.kind {
        Kind::Wakeup {
            pid,
            prio,
            target_cpu,
        } if window.measured.contains(&pid) && target_cpu as usize == window.cpu => {
            woken.get_or_insert((event.time, prio));
        }
        // A measuring task lost the CPU while still runnable.
        Kind::Switch(s)
            if window.measured.contains(&s.prev_pid)
                && s.prev_runnable()
                && !window.measured.contains(&s.next_pid) =>
        {
            verdict.preempted_by.get_or_insert_with(|| {
                task_name(s.next_pid, s.next_prio, &s.next_comm, window.tracer)
            });
        }
        _ => {}
    }
}

/// Who held off the measured task after its wake-up.
#[derive(Default)]
struct Verdict {
    preempted_by: Option<String>,
    rt_throttling: bool,
}

impl Verdict {
    /// Task `pid` held the CPU after a measured task of priority
    /// `measured_prio` was woken: a higher-priority one preempted it; a
    /// normal one ahead of a real-time one means throttling, when it ran
    /// after the wake-up (`ran_after_wake`, see the module doc).
    fn judge(
        &mut self,
        window: &Window<'_>,
        measured_prio: i32,
        (pid, prio, comm): (i32, i32, &Comm),
        ran_after_wake: bool,
    ) {
        if pid == 0 || prio == UNKNOWN_PRIO || window.measured.contains(&pid) {
            return;
        }
        if prio < measured_prio {
            self.preempted_by
                .get_or_insert_with(|| task_name(pid, prio, comm, window.tracer));
        } else if ran_after_wake && measured_prio < MAX_RT_PRIO && prio >= MAX_RT_PRIO {
            self.rt_throttling = true;
        }
    }
}

/// The owner of a stretch, or `Hardware` when the kind of wait says that
/// nothing recorded can have taken it: the measured task's own time in a
/// gap it saw while running, or an idle CPU from a timer's due time until
/// the first event (`quiet_since_due`).
fn unexplained(owner: Owner, wait: Wait, quiet_since_due: bool) -> Owner {
    match (owner, wait) {
        (Owner::Measured, Wait::Gap) => Owner::Hardware,
        (Owner::Idle, Wait::Timer) if quiet_since_due => Owner::Hardware,
        _ => owner,
    }
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
struct TimePerOwner {
    causes: Vec<Cause>,
    idle_ns: u64,
    unknown_ns: u64,
    measured_ns: u64,
    last: Option<(String, String)>,
    /// latscope's trace reader (`Window::tracer`).
    tracer: i32,
}

impl TimePerOwner {
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
                self.measured_ns += ns;
                self.last = None;
                return;
            }
            Owner::Hardware => (HARDWARE_KIND, HARDWARE_NAME.to_string()),
            Owner::Nmi => (NMI_KIND, NMI_NAME.to_string()),
            // No priority in the name: the one the trace gave at the switch-in
            // can be stale (see `Verdict`), and one task must stay one cause.
            Owner::Task(t) if t.pid == self.tracer && t.pid > 0 => {
                (TRACER_KIND, format!("{} (pid {})", text_of(&t.comm), t.pid))
            }
            Owner::Task(t) => ("task", format!("{} (pid {})", text_of(&t.comm), t.pid)),
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

/// A task already running when the window opened is known only by the
/// pid of its events until a switch names it, perhaps at the window's end
/// (`spike-maker/11090 ==> sampling-1`): its cause, `<unknown> (pid N)`,
/// takes the name the window learned, and joins the cause of that name.
fn name_unknown_tasks(causes: Vec<Cause>, names: &BTreeMap<i32, (Comm, i32)>) -> Vec<Cause> {
    let mut named: Vec<Cause> = Vec::with_capacity(causes.len());
    for mut cause in causes {
        let pid = cause
            .name
            .strip_prefix("<unknown> (pid ")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|pid| pid.parse::<i32>().ok());
        if let Some(pid) = pid
            && let Some((comm, _)) = names.get(&pid)
        {
            cause.name = format!("{} (pid {pid})", text_of(comm));
        }
        match named
            .iter_mut()
            .find(|c| c.kind == cause.kind && c.name == cause.name)
        {
            Some(same) => {
                same.ns += cause.ns;
                same.count += cause.count;
            }
            None => named.push(cause),
        }
    }
    named
}

fn task_name(pid: i32, prio: i32, comm: &Comm, tracer: i32) -> String {
    let owner = if pid == tracer && pid > 0 {
        "latscope's own trace reader "
    } else {
        ""
    };
    format!("{owner}{} (pid {pid}, prio {prio})", text_of(comm))
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
        // What the named causes leave of the window, when it is most of it.
        let caused: u64 = spike.causes.iter().map(|c| c.ns).sum();
        if caused < spike.latency_ns / 2 {
            let mut rest = Vec::new();
            if spike.idle_ns > 0 {
                rest.push(format!("idle {}", format_ns(spike.idle_ns as i64)));
            }
            if spike.unexplained_ns > 0 {
                rest.push(format!(
                    "not seen by the trace {}",
                    format_ns(spike.unexplained_ns as i64)
                ));
            }
            if spike.measured_ns > 0 {
                rest.push(format!(
                    "the measured tasks themselves {}",
                    format_ns(spike.measured_ns as i64)
                ));
            }
            if !rest.is_empty() {
                line.push_str(&format!("; the rest: {}", rest.join(", ")));
            }
        }
    }
    // Woken late (the interrupt that wakes it came late): the delay is
    // before the wake-up, not in waiting for the CPU.
    if let Some(woken) = spike.woken_after_ns
        && woken >= spike.latency_ns / 2
        && woken >= SUMMARY_MIN_NS
    {
        line.push_str(&format!(
            "; woken only {} after it was due",
            format_ns(woken as i64)
        ));
    }
    if let Some(task) = &spike.preempted_by {
        line.push_str(&format!("; preempted by {task}"));
    }
    if spike.rt_throttling {
        line.push_str(
            "; real-time throttling (a normal task ran while the real-time task was runnable)",
        );
    }
    if spike
        .causes
        .iter()
        .any(|c| c.kind == TRACER_KIND && c.ns >= SUMMARY_MIN_NS)
    {
        line.push_str("; latscope's trace reader ran on this CPU (no other CPU was free for it)");
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
        Kind::Nmi { delta_ns, handled } => (
            "nmi_handler",
            format!("delta_ns={delta_ns} handled={handled}"),
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

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: usize = 1;
    const ME: i32 = 42;

    fn comm(name: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    /// An event whose writer is not known (no task).
    fn ev(time: u64, kind: Kind) -> TraceEvent {
        ev_by(time, -1, kind)
    }

    fn ev_by(time: u64, pid: i32, kind: Kind) -> TraceEvent {
        TraceEvent {
            time,
            cpu: CPU,
            pid,
            kind,
        }
    }

    fn switch(time: u64, prev: (i32, i32, &str, u64), next: (i32, i32, &str)) -> TraceEvent {
        ev(
            time,
            Kind::Switch(Switch {
                prev_pid: prev.0,
                prev_prio: prev.1,
                prev_comm: comm(prev.2),
                prev_state: prev.3,
                next_pid: next.0,
                next_prio: next.1,
                next_comm: comm(next.2),
            }),
        )
    }

    fn wakeup(time: u64, prio: i32) -> TraceEvent {
        ev(
            time,
            Kind::Wakeup {
                pid: ME,
                prio,
                target_cpu: CPU as i32,
            },
        )
    }

    fn irq_name(name: &str) -> IrqName {
        let mut n = [0u8; 32];
        n[..name.len()].copy_from_slice(name.as_bytes());
        n
    }

    fn window(expected_ns: u64, actual_ns: u64) -> Window<'static> {
        Window {
            cpu: CPU,
            expected_ns,
            actual_ns,
            measured: &[ME, 43],
            tracer: 0,
            wait: Wait::Remote,
        }
    }

    fn run(events: &[TraceEvent], expected: u64, actual: u64) -> Spike {
        attribute_events(
            &CpuState::default(),
            events.iter(),
            &window(expected, actual),
            false,
        )
    }

    fn cause(kind: &str, name: &str, ns: u64, count: u32) -> Cause {
        Cause {
            kind: kind.into(),
            name: name.into(),
            ns,
            count,
        }
    }

    const US: u64 = 1_000;

    /// A higher-priority task holds the CPU; an IRQ and a softirq cut into it.
    fn provoked() -> Vec<TraceEvent> {
        vec![
            switch(900 * US, (0, 120, "swapper/1", 0), (9, 19, "spike-maker")),
            ev(1_000 * US, Kind::VectorEntry { vector: 0 }),
            wakeup(1_002 * US, 49),
            ev(1_005 * US, Kind::VectorExit { vector: 0 }),
            ev(
                2_000 * US,
                Kind::IrqEntry {
                    irq: 24,
                    name: irq_name("virtio0-input"),
                },
            ),
            ev(2_300 * US, Kind::IrqExit { irq: 24 }),
            ev(2_300 * US, Kind::SoftirqEntry { vec: 3 }),
            ev(2_800 * US, Kind::SoftirqExit { vec: 3 }),
            switch(
                4_000 * US,
                (9, 19, "spike-maker", 1),
                (ME, 49, "sampling-1"),
            ),
            // After the window: not counted.
            switch(4_200 * US, (ME, 49, "sampling-1", 1), (0, 120, "swapper/1")),
        ]
    }

    #[test]
    fn every_nanosecond_goes_to_the_innermost_activity() {
        let spike = run(&provoked(), 1_000 * US, 4_100 * US);
        assert_eq!(spike.latency_ns, 3_100 * US);
        assert_eq!(
            spike.causes,
            vec![
                // 995 us before the IRQ, 1200 us after the softirq: two stints.
                cause("task", "spike-maker (pid 9)", 2_195 * US, 2),
                cause("softirq", "NET_RX", 500 * US, 1),
                cause("irq", "24 virtio0-input", 300 * US, 1),
                cause("irq", "local_timer", 5 * US, 1),
            ]
        );
        assert_eq!(spike.woken_after_ns, Some(2 * US));
        assert_eq!(
            spike.preempted_by.as_deref(),
            Some("spike-maker (pid 9, prio 19)")
        );
        assert!(!spike.rt_throttling);
        assert_eq!((spike.idle_ns, spike.unexplained_ns), (0, 0));
        assert_eq!(
            spike.summary,
            "worst 3.10 ms on CPU 1: task spike-maker (pid 9) 2.19 ms, softirq NET_RX 500 us, IRQ 24 virtio0-input 300 us; preempted by spike-maker (pid 9, prio 19)"
        );
        // Events from MARGIN_BEFORE_NS before the expiry to the wake-up.
        assert_eq!(spike.events.len(), 9);
        assert_eq!(spike.events[0].at_ns, -100_000);
        assert_eq!(spike.events[0].event, "sched_switch");
        assert_eq!(
            spike.events[0].text,
            "[pid -1] swapper/1/0 prio 120 R ==> spike-maker/9 prio 19"
        );
        assert_eq!(spike.events[4].text, "[pid -1] irq=24 name=virtio0-input");
        assert_eq!(spike.events[6].text, "[pid -1] vec=3 [NET_RX]");
        assert_eq!(spike.events_omitted, 0);
    }

    #[test]
    fn an_idle_window_points_outside_the_kernel() {
        let events = [switch(
            500 * US,
            (ME, 49, "sampling-1", 1),
            (0, 120, "swapper/1"),
        )];
        let spike = run(&events, 1_000 * US, 1_080 * US);
        assert!(spike.causes.is_empty());
        assert_eq!(spike.idle_ns, 80 * US);
        assert_eq!(
            spike.summary,
            "worst 80.0 us on CPU 1: no kernel activity found in the window: the delay is outside this kernel (hypervisor?); the CPU was idle 80.0 us of it (idle-state exit or vCPU wake-up)"
        );
        // Nothing known at all: unexplained, and the same verdict.
        let spike = run(&[], 1_000 * US, 1_080 * US);
        assert_eq!((spike.idle_ns, spike.unexplained_ns), (0, 80 * US));
        assert!(spike.summary.contains("no kernel activity found"));
    }

    fn run_waiting(events: &[TraceEvent], expected: u64, actual: u64, wait: Wait) -> Spike {
        let w = Window {
            wait,
            ..window(expected, actual)
        };
        attribute_events(&CpuState::default(), events.iter(), &w, false)
    }

    #[test]
    fn a_gap_the_spinner_saw_while_it_ran_is_hardware() {
        // The noise spinner (ME) runs; its clock jumps 300 us with only a
        // 10 us local timer interrupt recorded in between.
        let events = [
            switch(100 * US, (0, 120, "swapper/1", 0), (ME, 0, "spinner-1")),
            ev(1_100 * US, Kind::VectorEntry { vector: 0 }),
            ev(1_110 * US, Kind::VectorExit { vector: 0 }),
        ];
        let spike = run_waiting(&events, 1_000 * US, 1_300 * US, Wait::Gap);
        assert_eq!(
            spike.causes,
            vec![
                cause(HARDWARE_KIND, HARDWARE_NAME, 290 * US, 2),
                cause("irq", "local_timer", 10 * US, 1),
            ]
        );
        assert_eq!(spike.measured_ns, 0);
        assert_eq!(
            spike.summary,
            "worst 300 us on CPU 1: unexplained: hardware, firmware or hypervisor (SMI, VM exit) 290 us, IRQ local_timer 10.0 us"
        );
        // An NMI recorded in the gap is named, back to where it began.
        let mut with_nmi = events.to_vec();
        with_nmi.push(ev(
            1_250 * US,
            Kind::Nmi {
                delta_ns: 40 * US,
                handled: 1,
            },
        ));
        let spike = run_waiting(&with_nmi, 1_000 * US, 1_300 * US, Wait::Gap);
        assert_eq!(
            spike.causes,
            vec![
                cause(HARDWARE_KIND, HARDWARE_NAME, 250 * US, 3),
                cause(NMI_KIND, NMI_NAME, 40 * US, 1),
                cause("irq", "local_timer", 10 * US, 1),
            ]
        );
        assert_eq!(
            spike.summary,
            "worst 300 us on CPU 1: unexplained: hardware, firmware or hypervisor (SMI, VM exit) 250 us, NMI 40.0 us, IRQ local_timer 10.0 us"
        );
        // An NMI that began before the window counts from its start.
        let early = [ev(
            1_010 * US,
            Kind::Nmi {
                delta_ns: 30 * US,
                handled: 1,
            },
        )];
        let spike = run_waiting(&early, 1_000 * US, 1_100 * US, Wait::Gap);
        assert_eq!(spike.causes[0], cause(NMI_KIND, NMI_NAME, 10 * US, 1));
        // The same stretch of a woken IPC receiver is its own time.
        let spike = run(&events, 1_000 * US, 1_300 * US);
        assert_eq!(spike.measured_ns, 290 * US);
        assert!(spike.causes.iter().all(|c| c.kind != HARDWARE_KIND));
    }

    #[test]
    fn an_idle_cpu_whose_timer_interrupt_came_late_names_the_hardware() {
        let events = [
            switch(500 * US, (ME, 0, "sampling-1", 1), (0, 120, "swapper/1")),
            ev(19_000 * US, Kind::VectorEntry { vector: 0 }),
            wakeup(19_004 * US, 0),
            ev(19_010 * US, Kind::VectorExit { vector: 0 }),
            // Idle again after the interrupt: idle, not hardware.
            ev_by(19_030 * US, ME, Kind::SoftirqEntry { vec: 1 }),
        ];
        let spike = run_waiting(&events, 1_000 * US, 19_020 * US, Wait::Timer);
        assert_eq!(
            spike.causes,
            vec![
                cause(HARDWARE_KIND, HARDWARE_NAME, 18_000 * US, 1),
                cause("irq", "local_timer", 10 * US, 1),
            ]
        );
        assert_eq!(spike.idle_ns, 10 * US);
        assert!(
            spike.summary.starts_with(
                "worst 18.0 ms on CPU 1: unexplained: hardware, firmware or hypervisor (SMI, VM exit) 18.0 ms"
            ),
            "{}",
            spike.summary
        );
        // A CPU busy with a task at the due time is that task's.
        let events = [
            switch(500 * US, (0, 120, "swapper/1", 0), (77, 120, "cc1")),
            ev(1_200 * US, Kind::VectorEntry { vector: 0 }),
        ];
        let spike = run_waiting(&events, 1_000 * US, 1_300 * US, Wait::Timer);
        assert_eq!(spike.causes[0], cause("task", "cc1 (pid 77)", 200 * US, 1));
        assert!(spike.causes.iter().all(|c| c.kind != HARDWARE_KIND));
    }

    #[test]
    fn a_late_timer_interrupt_on_an_idle_cpu_says_woken_late() {
        let events = [
            switch(500 * US, (ME, 0, "sampling-1", 1), (0, 120, "swapper/1")),
            ev(19_000 * US, Kind::VectorEntry { vector: 0 }),
            wakeup(19_004 * US, 0),
            ev(19_010 * US, Kind::VectorExit { vector: 0 }),
        ];
        let spike = run(&events, 1_000 * US, 19_020 * US);
        assert_eq!(spike.causes, vec![cause("irq", "local_timer", 10 * US, 1)]);
        assert_eq!(spike.idle_ns, 18_010 * US);
        assert_eq!(spike.woken_after_ns, Some(18_004 * US));
        assert_eq!(
            spike.summary,
            "worst 18.0 ms on CPU 1: IRQ local_timer 10.0 us; the rest: idle 18.0 ms; woken only 18.0 ms after it was due"
        );
    }

    #[test]
    fn the_writer_of_an_event_reveals_an_untraced_switch() {
        // Leaving idle untraced: the IRQ written by the maker says it runs.
        let events = [
            switch(100 * US, (9, 19, "spike-maker", 1), (0, 120, "swapper/1")),
            ev_by(1_000 * US, 9, Kind::VectorEntry { vector: 0 }),
            ev_by(1_004 * US, 9, Kind::VectorExit { vector: 0 }),
            wakeup(1_004 * US, 49),
            switch(
                4_000 * US,
                (9, 19, "spike-maker", 1),
                (ME, 49, "sampling-1"),
            ),
        ];
        let spike = run(&events, 500 * US, 4_010 * US);
        assert_eq!(spike.idle_ns, 500 * US);
        assert_eq!(
            spike.causes,
            vec![
                cause("task", "spike-maker (pid 9)", 2_996 * US, 1),
                cause("irq", "local_timer", 4 * US, 1),
            ]
        );
        assert_eq!(
            spike.preempted_by.as_deref(),
            Some("spike-maker (pid 9, prio 19)")
        );
        // A writer never seen switching has no name yet, and no priority to judge.
        let events = [ev_by(1_000 * US, 77, Kind::SoftirqEntry { vec: 1 })];
        let spike = run(&events, 900 * US, 1_100 * US);
        assert_eq!(spike.causes[0].name, "TIMER");
        assert_eq!(spike.unexplained_ns, 100 * US);
        let events = [
            ev_by(1_000 * US, 77, Kind::SoftirqEntry { vec: 1 }),
            ev_by(1_010 * US, 77, Kind::SoftirqExit { vec: 1 }),
        ];
        let spike = run(&events, 900 * US, 1_100 * US);
        assert_eq!(
            spike.causes[0],
            cause("task", "<unknown> (pid 77)", 90 * US, 1)
        );
    }

    #[test]
    fn a_task_running_since_before_the_window_is_named_by_its_switch_out() {
        // pid 77 ran from before the window (its events name it by pid
        // alone) and the switch that ends the window names it.
        let events = [
            ev_by(1_000 * US, 77, Kind::SoftirqEntry { vec: 1 }),
            ev_by(1_010 * US, 77, Kind::SoftirqExit { vec: 1 }),
            switch(
                1_090 * US,
                (77, 10, "spike-maker", 0),
                (5, 49, "sampling-1"),
            ),
        ];
        let spike = run(&events, 900 * US, 1_100 * US);
        let task = spike.causes.iter().find(|c| c.kind == "task").unwrap();
        assert_eq!(task.name, "spike-maker (pid 77)");
        assert!(
            spike
                .causes
                .iter()
                .all(|c| !c.name.starts_with("<unknown>")),
            "{:?}",
            spike.causes
        );
    }

    #[test]
    fn a_task_is_judged_by_the_priority_it_leaves_with() {
        // Switched in as a normal task, it made itself real-time while
        // running: the trace only says so when it leaves.
        let events = [
            switch(500 * US, (0, 120, "swapper/1", 0), (9, 130, "spike-maker")),
            wakeup(1_000 * US, 49),
            switch(
                4_000 * US,
                (9, 19, "spike-maker", 1),
                (ME, 49, "sampling-1"),
            ),
        ];
        let spike = run(&events, 1_000 * US, 4_010 * US);
        assert_eq!(
            spike.preempted_by.as_deref(),
            Some("spike-maker (pid 9, prio 19)")
        );
        assert!(!spike.rt_throttling);
        assert_eq!(
            spike.causes,
            vec![cause("task", "spike-maker (pid 9)", 3_000 * US, 1)]
        );
    }

    #[test]
    fn latscope_s_own_trace_reader_is_named_as_such() {
        // The reader (pid 77) held the CPU for 3 ms of a 3.01 ms spike.
        let events = [
            switch(
                500 * US,
                (0, 120, "swapper/1", 0),
                (77, 120, "latscope-trace"),
            ),
            wakeup(1_000 * US, 49),
            switch(
                4_000 * US,
                (77, 120, "latscope-trace", Switch::PREEMPTED),
                (ME, 49, "sampling-1"),
            ),
        ];
        let mut w = window(1_000 * US, 4_010 * US);
        w.tracer = 77;
        let spike = attribute_events(&CpuState::default(), events.iter(), &w, false);
        assert_eq!(
            spike.causes,
            vec![cause(TRACER_KIND, "latscope-trace (pid 77)", 3_000 * US, 1)]
        );
        assert_eq!(
            spike.causes[0].describe(),
            "latscope's trace reader latscope-trace (pid 77) 3.00 ms"
        );
        assert!(
            spike.summary.contains(
                "; latscope's trace reader ran on this CPU (no other CPU was free for it)"
            ),
            "{}",
            spike.summary
        );
        // The same window with the reader unknown: an ordinary task.
        let spike = run(&events, 1_000 * US, 4_010 * US);
        assert_eq!(spike.causes[0].kind, "task");
        assert!(!spike.summary.contains("trace reader"));
    }

    #[test]
    fn a_normal_task_before_a_woken_rt_task_is_throttling() {
        let events = [
            switch(500 * US, (0, 120, "swapper/1", 0), (77, 120, "cc1")),
            wakeup(1_000 * US, 49),
            switch(
                41_000 * US,
                (77, 120, "cc1", Switch::PREEMPTED),
                (ME, 49, "sampling-1"),
            ),
        ];
        let spike = run(&events, 1_000 * US, 41_010 * US);
        assert!(spike.rt_throttling);
        assert_eq!(spike.preempted_by, None);
        assert_eq!(
            spike.causes,
            vec![cause("task", "cc1 (pid 77)", 40_000 * US, 1)]
        );
        assert!(spike.summary.ends_with(
            "; real-time throttling (a normal task ran while the real-time task was runnable)"
        ));
    }

    #[test]
    fn a_normal_task_preempted_at_the_wake_up_is_not_throttling() {
        // The compiler ran when the sampling task and a higher real-time
        // task were woken together; it left at once for the latter, which
        // held the CPU: preemption, and no throttling.
        let events = [
            switch(500 * US, (0, 120, "swapper/1", 0), (77, 120, "lto")),
            wakeup(1_000 * US, 49),
            switch(
                1_005 * US,
                (77, 120, "lto", Switch::PREEMPTED),
                (9, 19, "spike-maker"),
            ),
            switch(
                5_000 * US,
                (9, 19, "spike-maker", 1),
                (ME, 49, "sampling-1"),
            ),
        ];
        let spike = run(&events, 1_000 * US, 5_010 * US);
        assert!(!spike.rt_throttling);
        assert_eq!(
            spike.preempted_by.as_deref(),
            Some("spike-maker (pid 9, prio 19)")
        );
    }

    #[test]
    fn a_measured_task_switched_out_runnable_was_preempted() {
        let events = [
            switch(500 * US, (0, 120, "swapper/1", 0), (43, 49, "lat-peer0")),
            switch(
                1_010 * US,
                (43, 49, "lat-peer0", Switch::PREEMPTED),
                (5, 0, "migration/1"),
            ),
            switch(1_030 * US, (5, 0, "migration/1", 1), (ME, 49, "lat-rec0")),
        ];
        let spike = run(&events, 1_000 * US, 1_040 * US);
        assert_eq!(
            spike.preempted_by.as_deref(),
            Some("migration/1 (pid 5, prio 0)")
        );
        // The peer's own time is no cause.
        assert_eq!(
            spike.causes,
            vec![cause("task", "migration/1 (pid 5)", 20 * US, 1)]
        );
    }

    #[test]
    fn the_history_is_bounded_and_keeps_the_state_it_drops() {
        let mut h = CpuHistory::default();
        h.push(switch(0, (0, 120, "swapper/1", 0), (9, 19, "spike-maker")));
        for i in 1..=10u64 {
            h.push(ev(i * RETAIN_NS / 4, Kind::SoftirqEntry { vec: 1 }));
            h.push(ev(i * RETAIN_NS / 4 + 1, Kind::SoftirqExit { vec: 1 }));
        }
        assert!(h.events.len() < 12, "{}", h.events.len());
        let newest = 10 * RETAIN_NS / 4;
        assert!(!h.covers(RETAIN_NS));
        assert!(h.covers(newest - RETAIN_NS / 8));
        // The task switched in before everything kept still owns the window.
        let spike = attribute(&h, &window(newest + 10, newest + 1_010));
        assert_eq!(
            spike.causes,
            vec![cause("task", "spike-maker (pid 9)", 1_000, 1)]
        );
        assert!(!spike.window_truncated);
        let old = attribute(&h, &window(RETAIN_NS, RETAIN_NS + 10));
        assert!(old.window_truncated && old.summary.contains("did not reach back"));
    }

    #[test]
    fn exits_without_entries_and_deep_nesting_are_harmless() {
        let mut state = CpuState::default();
        state.apply(&ev(0, Kind::IrqExit { irq: 3 }));
        assert!(state.contexts.is_empty());
        for _ in 0..20 {
            state.apply(&ev(0, Kind::SoftirqEntry { vec: 1 }));
        }
        assert_eq!(state.contexts.len(), MAX_NESTING);
        // A switch closes whatever was left open (its exits were lost).
        state.apply(&switch(1, (0, 120, "swapper/1", 0), (9, 19, "x")));
        assert!(state.contexts.is_empty());
    }

    // ---- The stepper, event by event: each transition of the account.

    fn stepper(expected: u64, actual: u64) -> Attribution<'static> {
        Attribution::new(&CpuState::default(), &window(expected, actual))
    }

    /// The causes charged so far, by name, in the order first charged.
    fn charged(a: &Attribution<'_>) -> Vec<(String, u64)> {
        a.times
            .causes
            .iter()
            .map(|c| (c.name.clone(), c.ns))
            .collect()
    }

    fn hog_runs(a: &mut Attribution<'_>, time: u64) {
        a.step(&switch(time, (0, 120, "swapper/1", 0), (9, 120, "hog")));
    }

    const HOG: &str = "hog (pid 9)";

    fn virtio_entry(time: u64) -> TraceEvent {
        ev(
            time,
            Kind::IrqEntry {
                irq: 24,
                name: irq_name("virtio0-input"),
            },
        )
    }

    #[test]
    fn a_switch_before_the_window_only_says_who_runs() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 100 * US);
        assert_eq!(a.state.task.map(|t| t.pid), Some(9));
        assert_eq!(a.current_since, Some(100 * US));
        // Further than MARGIN_BEFORE_NS before the due time: not shown.
        assert!(a.shown.is_empty());
        assert_eq!((a.at, charged(&a)), (1_000 * US, vec![]));
        hog_runs(&mut a, 900 * US);
        assert_eq!(a.shown.len(), 1);
        assert_eq!(a.shown[0].at_ns, -100_000);
    }

    #[test]
    fn an_irq_entry_charges_the_task_and_its_exit_charges_the_irq() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        assert_eq!(a.step(&virtio_entry(1_100 * US)), Step::Taken);
        assert_eq!(charged(&a), [(HOG.into(), 100 * US)]);
        assert_eq!(a.state.contexts.len(), 1);
        a.step(&ev(1_400 * US, Kind::IrqExit { irq: 24 }));
        assert_eq!(
            charged(&a),
            [
                (HOG.into(), 100 * US),
                ("24 virtio0-input".into(), 300 * US)
            ]
        );
        assert!(a.state.contexts.is_empty());
        // Back to the task: a second stint of the same cause.
        assert_eq!(
            a.finish(false).causes,
            [
                cause("task", HOG, 700 * US, 2),
                cause("irq", "24 virtio0-input", 300 * US, 1)
            ]
        );
    }

    #[test]
    fn a_softirq_nested_in_an_irq_takes_the_time_from_it() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        a.step(&virtio_entry(1_100 * US));
        a.step(&ev(1_200 * US, Kind::SoftirqEntry { vec: 3 }));
        assert_eq!(a.state.contexts.len(), 2);
        a.step(&ev(1_500 * US, Kind::SoftirqExit { vec: 3 }));
        assert_eq!(
            charged(&a)[2],
            (softirq_name(3), 300 * US),
            "the innermost context gets its time"
        );
        a.step(&ev(1_600 * US, Kind::IrqExit { irq: 24 }));
        let spike = a.finish(false);
        assert_eq!(
            spike.causes,
            [
                cause("task", HOG, 500 * US, 2),
                cause("softirq", &softirq_name(3), 300 * US, 1),
                cause("irq", "24 virtio0-input", 200 * US, 2)
            ]
        );
    }

    #[test]
    fn a_task_switch_moves_the_charge_to_the_next_task() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        a.step(&switch(1_500 * US, (9, 120, "hog", 1), (10, 120, "other")));
        assert_eq!(a.state.task.map(|t| t.pid), Some(10));
        assert_eq!(a.current_since, Some(1_500 * US));
        assert_eq!(charged(&a), [(HOG.into(), 500 * US)]);
        let spike = a.finish(false);
        assert_eq!(
            spike.causes[1],
            cause("task", "other (pid 10)", 500 * US, 1)
        );
    }

    #[test]
    fn a_wakeup_then_a_higher_priority_task_leaving_is_preemption() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        a.step(&switch(900 * US, (0, 120, "swapper/1", 0), (9, 19, "hog")));
        a.step(&wakeup(1_200 * US, 49));
        assert_eq!(a.woken, Some((1_200 * US, 49)));
        assert_eq!(a.verdict.preempted_by, None);
        a.step(&switch(
            1_900 * US,
            (9, 19, "hog", 1),
            (ME, 49, "sampling-1"),
        ));
        assert_eq!(
            a.verdict.preempted_by.as_deref(),
            Some("hog (pid 9, prio 19)")
        );
        let spike = a.finish(false);
        assert_eq!(spike.woken_after_ns, Some(200 * US));
        assert_eq!(spike.measured_ns, 100 * US);
    }

    #[test]
    fn the_window_edges_bound_the_account() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        // At the due time: shown, its wake-up noted, no time to charge yet.
        a.step(&wakeup(1_000 * US, 49));
        assert_eq!((a.at, charged(&a)), (1_000 * US, vec![]));
        assert_eq!(a.woken, Some((1_000 * US, 49)));
        // At the end: still taken.
        assert_eq!(a.step(&virtio_entry(2_000 * US)), Step::Taken);
        assert_eq!(charged(&a), [(HOG.into(), 1_000 * US)]);
        // After it: neither this event nor any later one counts.
        assert_eq!(
            a.step(&ev(2_001 * US, Kind::IrqExit { irq: 24 })),
            Step::PastTheWindow
        );
        assert_eq!(a.step(&virtio_entry(2_002 * US)), Step::PastTheWindow);
        assert_eq!(a.shown.len(), 3);
        let spike = a.finish(false);
        assert_eq!(spike.latency_ns, 1_000 * US);
        assert_eq!(spike.causes, [cause("task", HOG, 1_000 * US, 1)]);
    }

    #[test]
    fn an_irq_still_open_at_the_end_gets_the_rest_of_the_window() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        a.step(&virtio_entry(1_800 * US));
        let spike = a.finish(true);
        assert_eq!(
            spike.causes,
            [
                cause("task", HOG, 800 * US, 1),
                cause("irq", "24 virtio0-input", 200 * US, 1)
            ]
        );
        assert!(spike.window_truncated);
    }

    #[test]
    fn an_nmi_event_charges_back_to_the_start_of_its_handler() {
        let mut a = stepper(1_000 * US, 2_000 * US);
        hog_runs(&mut a, 900 * US);
        a.step(&ev(
            1_300 * US,
            Kind::Nmi {
                delta_ns: 50 * US,
                handled: 1,
            },
        ));
        assert_eq!(
            charged(&a),
            [(HOG.into(), 250 * US), (NMI_NAME.into(), 50 * US)]
        );
    }

    #[test]
    fn a_window_without_events_is_time_the_trace_cannot_place() {
        let spike = stepper(1_000 * US, 1_300 * US).finish(false);
        assert_eq!(spike.unexplained_ns, 300 * US);
        assert!(spike.causes.is_empty());
        assert_eq!(spike.woken_after_ns, None);
    }

    #[test]
    fn stepping_gives_what_attributing_the_whole_history_gives() {
        let events = provoked();
        let mut a = stepper(1_000 * US, 4_000 * US);
        for event in &events {
            a.step(event);
        }
        assert_eq!(a.finish(false), run(&events, 1_000 * US, 4_000 * US));
    }
}
