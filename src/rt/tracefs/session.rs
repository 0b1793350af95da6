//! Tracing sessions. `TraceRun` is any session: it owns a private instance
//! (events, filters, clock, CPUs) and the reader thread feeding a consumer;
//! stopping or dropping it stops tracing, drains the buffers, joins the
//! reader and removes the instance. `WakeupTrace` is the timer test's
//! kernel-side breakdown on top of it; the spike attribution (`crate::spikes`)
//! is another.

use super::events::{EventDecoder, NEEDED, RETURN};
use super::format::RingLayout;
use super::instance::Instance;
use super::mount;
use super::reader::{Consumer, CpuPipe, Reader, ReaderCounts, WakeupConsumer};
use super::wakeups::{Matcher, TracedThread, WakeupRecord};
use crate::rt::clock::monotonic_ns;
use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

const NOT_ROOT: &str = "kernel tracing needs root (latscope creates a private tracefs instance and enables trace events): run latscope as root";

/// Tunables of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOptions {
    /// Ring buffer per traced CPU, KiB. The default holds seconds of events
    /// at a 10 kHz wake-up rate if the reader is held up.
    pub buffer_kb_per_cpu: u32,
    /// CPUs the reader keeps off besides the traced ones: where measured
    /// tasks run that are not traced (the sender of a cross-CPU pair).
    pub reader_keeps_off: Vec<usize>,
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions {
            buffer_kb_per_cpu: 4096,
            reader_keeps_off: Vec::new(),
        }
    }
}

/// What a session saw, for the report and its warnings: how its trace run
/// ended (the reader's counts, the kernel's losses) and whether the
/// return-to-user events were traced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceStats {
    pub end: RunEnd,
    /// Whether return-to-user events (`rseq_update`) were traced.
    pub return_traced: bool,
}

/// A running trace of some sampling threads' wake-ups.
pub struct WakeupTrace {
    run: TraceRun,
    return_traced: bool,
}

impl WakeupTrace {
    /// Creates the instance, enables the events, starts the reader and turns
    /// tracing on, with default options. The threads must not have armed
    /// their first timer yet: a wake-up is only recorded when its arming is.
    pub fn start(
        threads: &[TracedThread],
        sink: Box<dyn FnMut(WakeupRecord) + Send>,
    ) -> Result<WakeupTrace, String> {
        WakeupTrace::start_with(threads, sink, TraceOptions::default())
    }

    pub fn start_with(
        threads: &[TracedThread],
        sink: Box<dyn FnMut(WakeupRecord) + Send>,
        options: TraceOptions,
    ) -> Result<WakeupTrace, String> {
        check_threads(threads)?;
        let tracefs = tracefs_for(&NEEDED)?;
        let with_return = has_event(&tracefs, RETURN);
        let decoder = EventDecoder::read(&tracefs.join("events"), with_return)?;
        let cpus: Vec<usize> = threads.iter().map(|t| t.cpu).collect();
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        let consumer = Box::new(WakeupConsumer {
            matcher: Matcher::new(threads, with_return),
            sink,
        });
        let run = TraceRun::start(&tracefs, &cpus, options, decoder, consumer, |instance| {
            configure(instance, &tids, with_return)
        })?;
        Ok(WakeupTrace {
            run,
            return_traced: with_return,
        })
    }

    /// The instance directory (for messages and tests).
    pub fn instance_dir(&self) -> Option<&Path> {
        self.run.instance_dir()
    }

    /// Stops tracing, delivers the remaining records, removes the instance.
    pub fn stop(mut self) -> TraceStats {
        TraceStats {
            end: self.run.shutdown().unwrap_or_default(),
            return_traced: self.return_traced,
        }
    }
}

/// Finds (or mounts) tracefs as root and checks that it has `events`, the
/// `mono` clock and instances.
pub fn tracefs_for(events: &[(&str, &str)]) -> Result<PathBuf, String> {
    if !mount::is_root() {
        return Err(NOT_ROOT.to_string());
    }
    let tracefs = mount::find_or_mount()?;
    check_tracefs(&tracefs, events)?;
    Ok(tracefs)
}

/// How a trace run ended: the reader's counts and the kernel's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunEnd {
    pub counts: ReaderCounts,
    /// Events the kernel lost (buffer full): the larger of the counts the
    /// pages carried and the per-CPU `stats` read at the end.
    pub events_lost: u64,
    /// How long tracing was on, ns.
    pub traced_ns: u64,
}

/// One tracing session on a private instance, whatever it traces: the
/// instance (clock, buffer, CPUs) and the reader thread feeding a consumer.
/// Stopping or dropping it stops tracing, drains the buffers, joins the
/// reader and removes the instance.
pub struct TraceRun {
    instance: Option<Instance>,
    cpus: Vec<usize>,
    stop_tx: Option<Sender<u64>>,
    reader: Option<JoinHandle<ReaderCounts>>,
    started_ns: u64,
}

impl TraceRun {
    /// Creates the instance on `cpus` (clock `mono`, the buffer, the CPU
    /// mask), lets `configure` set its filters and enable its events, starts
    /// the reader and turns tracing on.
    pub fn start(
        tracefs: &Path,
        cpus: &[usize],
        options: TraceOptions,
        decoder: EventDecoder,
        consumer: Box<dyn Consumer>,
        configure: impl FnOnce(&Instance) -> Result<(), String>,
    ) -> Result<TraceRun, String> {
        let layout = RingLayout::read(&tracefs.join("events"))?;
        let cpus: Vec<usize> = cpus
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let online = crate::rt::sysinfo::online_cpus();
        if let Some(cpu) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(format!("cannot trace CPU {cpu}: it is not online"));
        }

        // From here on, dropping `instance` (any `?`) removes it.
        let instance = Instance::create(tracefs)?;
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write(
            "buffer_size_kb",
            &options.buffer_kb_per_cpu.max(4).to_string(),
        )?;
        instance.write("tracing_cpumask", &cpumask(&cpus))?;
        // Overwrite mode (the default) is what makes the kernel flag the pages
        // that follow lost events, so the consumer knows where a gap is.
        let _ = instance.write("options/overwrite", "1");
        configure(&instance)?;
        let page_size = instance
            .read("buffer_subbuf_size_kb")
            .ok()
            .and_then(|kb| kb.trim().parse::<usize>().ok())
            .map_or_else(system_page_size, |kb| kb * 1024);
        let mut pipes = Vec::new();
        for &cpu in &cpus {
            let path = instance.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            pipes.push(CpuPipe {
                cpu,
                file,
                failed: false,
                gap_pending: false,
                last_event_ns: 0,
            });
        }
        let mut keep_off = options.reader_keeps_off.clone();
        keep_off.extend(&cpus);
        let reader = Reader {
            keep_off,
            pipes,
            page_size,
            layout,
            decoder,
            consumer,
        };
        let (stop_tx, stop_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("latscope-trace".into())
            .stack_size(256 * 1024)
            .spawn(move || reader.run(stop_rx))
            .map_err(|e| format!("cannot start the trace reader thread: {e}"))?;
        let mut run = TraceRun {
            instance: Some(instance),
            cpus,
            stop_tx: Some(stop_tx),
            reader: Some(handle),
            started_ns: 0,
        };
        // Dropping `run` on error stops the reader before the instance goes.
        if let Some(instance) = &run.instance {
            instance.write("tracing_on", "1")?;
        }
        run.started_ns = monotonic_ns();
        Ok(run)
    }

    pub fn instance_dir(&self) -> Option<&Path> {
        self.instance.as_ref().map(|i| i.dir.as_path())
    }

    /// Stops tracing, lets the reader deliver the rest, removes the instance
    /// (None when already done).
    pub fn shutdown(&mut self) -> Option<RunEnd> {
        let instance = self.instance.as_ref()?;
        instance.tracing_off();
        let end = monotonic_ns();
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(end);
        }
        // The reader closes the pipes when it returns; rmdir needs that.
        let counts = match self.reader.take().map(JoinHandle::join) {
            Some(Ok(counts)) => counts,
            _ => ReaderCounts {
                read_errors: 1,
                ..ReaderCounts::default()
            },
        };
        let kernel_lost: u64 = self
            .cpus
            .iter()
            .filter_map(|cpu| instance.read(&format!("per_cpu/cpu{cpu}/stats")).ok())
            .filter_map(|text| lost_in_stats(&text))
            .sum();
        self.instance = None; // removes it
        Some(RunEnd {
            events_lost: kernel_lost.max(counts.lost_in_pages),
            counts,
            traced_ns: end.saturating_sub(self.started_ns),
        })
    }
}

impl Drop for TraceRun {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether the kernel offers what `WakeupTrace::start` needs, creating
/// nothing (tracefs is not mounted by this check: when it is missing but the
/// kernel has it, `start` will mount it, and the events are checked then).
pub fn check_available() -> Result<(), String> {
    if !mount::is_root() {
        return Err(NOT_ROOT.to_string());
    }
    match mount::find() {
        Some(tracefs) => {
            check_tracefs(&tracefs, &NEEDED)?;
            let events = tracefs.join("events");
            RingLayout::read(&events)?;
            EventDecoder::read(&events, has_event(&tracefs, RETURN))?;
            Ok(())
        }
        None if mount::kernel_has_tracefs() => Ok(()),
        None => Err(
            "this kernel has no tracefs (built without CONFIG_TRACING?): no kernel-side breakdown"
                .into(),
        ),
    }
}

fn check_threads(threads: &[TracedThread]) -> Result<(), String> {
    if threads.is_empty() {
        return Err("no thread to trace".into());
    }
    let mut tids = BTreeSet::new();
    for t in threads {
        if t.tid <= 0 || !tids.insert(t.tid) {
            return Err(format!("bad or repeated thread id {} to trace", t.tid));
        }
        if t.period_ns == 0 {
            return Err(format!("thread {} has a period of 0", t.tid));
        }
    }
    Ok(())
}

pub fn has_event(tracefs: &Path, (system, event): (&str, &str)) -> bool {
    tracefs
        .join("events")
        .join(system)
        .join(event)
        .join("format")
        .exists()
}

/// The events, the `mono` clock and instances are there.
pub fn check_tracefs(tracefs: &Path, events: &[(&str, &str)]) -> Result<(), String> {
    for &(system, event) in events {
        let dir = tracefs.join("events").join(system).join(event);
        if !dir.join("format").exists() {
            return Err(format!(
                "kernel trace event {system}:{event} is not available ({} is missing): this kernel was built without it",
                dir.display()
            ));
        }
    }
    // A read that fails (EMFILE under `ulimit -n 5`, EACCES) is that error,
    // not "no mono clock".
    let clock_file = tracefs.join("trace_clock");
    let clocks = std::fs::read_to_string(&clock_file).map_err(|e| {
        format!(
            "cannot read {}: {}",
            clock_file.display(),
            crate::rt::os_error_text(&e)
        )
    })?;
    if !clocks
        .split_whitespace()
        .any(|c| c.trim_matches(['[', ']']) == "mono")
    {
        return Err(format!(
            "the kernel offers no 'mono' trace clock (trace_clock: {}), so trace times cannot be compared with the samples",
            clocks.trim()
        ));
    }
    if !tracefs.join("instances").is_dir() {
        return Err(format!(
            "{} has no instances/ directory: this kernel cannot make private trace instances",
            tracefs.display()
        ));
    }
    Ok(())
}

/// The breakdown's filters and events (tracing stays off until the reader
/// runs).
fn configure(instance: &Instance, tids: &[i32], with_return: bool) -> Result<(), String> {
    instance.write(
        "events/timer/hrtimer_start/filter",
        &pid_filter("common_pid", tids),
    )?;
    instance.write(
        "events/sched/sched_switch/filter",
        &pid_filter("next_pid", tids),
    )?;
    // hrtimer_expire_entry cannot be filtered by thread (it runs in the
    // interrupt, on whatever task was current); the CPU mask bounds it.
    let mut events = NEEDED.to_vec();
    if with_return {
        let (system, event) = RETURN;
        instance.write(
            &format!("events/{system}/{event}/filter"),
            &pid_filter("common_pid", tids),
        )?;
        events.push(RETURN);
    }
    enable(instance, &events)
}

/// Enables each `(system, event)` of the instance.
pub fn enable(instance: &Instance, events: &[(&str, &str)]) -> Result<(), String> {
    for (system, event) in events {
        instance.write(&format!("events/{system}/{event}/enable"), "1")?;
    }
    Ok(())
}

/// `field == a || field == b ...`
pub fn pid_filter(field: &str, tids: &[i32]) -> String {
    tids.iter()
        .map(|t| format!("{field} == {t}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

/// A CPU set in the kernel's bitmap syntax: 32-bit hex groups, most
/// significant first, separated by commas (`3`, `1,00000000`).
pub fn cpumask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |&m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &cpu in cpus {
        words[cpu / 32] |= 1 << (cpu % 32);
    }
    let mut text = format!("{:x}", words[groups - 1]);
    for word in words[..groups - 1].iter().rev() {
        text.push_str(&format!(",{word:08x}"));
    }
    text
}

/// Events lost according to a per-CPU `stats` file.
fn lost_in_stats(text: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut found = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if matches!(key.trim(), "overrun" | "commit overrun" | "dropped events") {
            total = total.saturating_add(value.trim().parse().ok()?);
            found = true;
        }
    }
    found.then_some(total)
}

fn system_page_size() -> usize {
    // SAFETY: sysconf has no memory arguments.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_in_kernel_syntax() {
        assert_eq!(cpumask(&[0, 1]), "3");
        assert_eq!(cpumask(&[1]), "2");
        assert_eq!(cpumask(&[31]), "80000000");
        assert_eq!(cpumask(&[32]), "1,00000000");
        assert_eq!(cpumask(&[0, 65]), "2,00000000,00000001");
    }

    #[test]
    fn pid_filters() {
        assert_eq!(pid_filter("common_pid", &[12]), "common_pid == 12");
        assert_eq!(
            pid_filter("next_pid", &[1, 2]),
            "next_pid == 1 || next_pid == 2"
        );
    }

    #[test]
    fn lost_counts_from_stats() {
        let text = "entries: 220\noverrun: 962\ncommit overrun: 1\nbytes: 10640\n\
                    oldest event ts:  5754.077225\nnow ts:  5754.576951\ndropped events: 2\nread events: 0\n";
        assert_eq!(lost_in_stats(text), Some(965));
        assert_eq!(lost_in_stats("entries: 1\n"), None);
        assert_eq!(lost_in_stats("overrun: x\n"), None);
    }

    #[test]
    fn thread_lists_are_checked() {
        let t = TracedThread {
            tid: 5,
            cpu: 0,
            first_expiry_ns: 1,
            period_ns: 1,
        };
        assert!(check_threads(&[t]).is_ok());
        assert!(check_threads(&[]).is_err());
        assert!(check_threads(&[t, t]).is_err());
        assert!(check_threads(&[TracedThread { period_ns: 0, ..t }]).is_err());
        assert!(check_threads(&[TracedThread { tid: 0, ..t }]).is_err());
    }
}
