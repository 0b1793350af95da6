//! Tracing sessions. `TraceRun` is any session: it owns a private instance
//! (events, filters, clock, CPUs) and the reader thread feeding a consumer;
//! stopping or dropping it stops tracing, drains the buffers, joins the
//! reader and removes the instance. What is traced and what becomes of the
//! events is the consumer's: the timer breakdown's pairing
//! (`probes::wakeups::session`) and the spike attribution (`crate::spikes`).

use super::events::EventDecoder;
use super::format::RingLayout;
use super::instance::Instance;
use super::mount;
use super::reader::{Consumer, CpuPipe, Reader, ReaderCounts};
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

/// Whether tracefs can be used as root for `events`, creating nothing:
/// `Some(tracefs)` when it is mounted (the events, the `mono` clock and
/// instances checked), `None` when it is not mounted yet but the kernel has
/// it (a session mounts it when it starts, and checks then).
pub fn check_usable(events: &[(&str, &str)]) -> Result<Option<PathBuf>, String> {
    check_usable_at(Path::new("/"), mount::is_root(), events)
}

/// `check_usable` on the system whose root directory is `root` (a fixture
/// tree in the doctor's tests), for a process that is root or not; the
/// tracefs found is its directory in that tree.
pub fn check_usable_at(
    root: &Path,
    is_root: bool,
    events: &[(&str, &str)],
) -> Result<Option<PathBuf>, String> {
    if !is_root {
        return Err(NOT_ROOT.to_string());
    }
    match mount::find_at(root) {
        Some(system) => {
            let tracefs = root.join(system.strip_prefix("/").unwrap_or(&system));
            check_tracefs(&tracefs, events)?;
            Ok(Some(tracefs))
        }
        None if mount::kernel_has_tracefs_at(root) => Ok(None),
        None => Err(
            "this kernel has no tracefs (built without CONFIG_TRACING?): no kernel-side breakdown"
                .into(),
        ),
    }
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
}
