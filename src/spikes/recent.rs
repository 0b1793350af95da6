//! The recent kernel trace of the measured CPUs, kept for the `trace`
//! action of `--on-threshold` / `--on-end` (rtla's "save the trace"): a
//! private tracefs instance recording the events `--trace-spikes` records
//! (`ACTIVITY` and the optional ones this kernel has) into a ring buffer in
//! overwrite mode, with no reader: the buffer always holds the latest
//! events, and an action copies a CPU's part of it (its `trace` text) to a
//! file. Nothing runs on a measuring thread; dropping it removes the
//! instance (it is in the ownership registry until then).

use super::error::SpikeError;
use super::optional_events;
use crate::rt::tracefs::events::ACTIVITY;
use crate::rt::tracefs::{self, instance::Instance};
use std::path::Path;

/// The ring buffer per CPU, in KiB: some seconds of scheduler and
/// interrupt events on a busy CPU.
const BUFFER_KB_PER_CPU: u32 = 2048;

/// A running recent-trace instance.
pub struct RecentTrace {
    instance: Instance,
    cpus: Vec<usize>,
}

impl RecentTrace {
    /// Starts recording on `cpus` (every online CPU when empty).
    pub fn start(cpus: &[usize]) -> Result<RecentTrace, SpikeError> {
        let tracefs = tracefs::tracefs_for(&ACTIVITY)?;
        let mut events = ACTIVITY.to_vec();
        events.extend(optional_events(&tracefs));
        let cpus = if cpus.is_empty() {
            crate::rt::sysinfo::online_cpus()
        } else {
            let mut cpus = cpus.to_vec();
            cpus.sort_unstable();
            cpus.dedup();
            cpus
        };
        // From here on, dropping `instance` (any `?`) removes it.
        let instance = Instance::create(&tracefs)?;
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write("buffer_size_kb", &BUFFER_KB_PER_CPU.to_string())?;
        instance.write("tracing_cpumask", &tracefs::cpumask(&cpus))?;
        let _ = instance.write("options/overwrite", "1");
        tracefs::enable(&instance, &events)?;
        instance.write("tracing_on", "1")?;
        Ok(RecentTrace { instance, cpus })
    }

    /// Copies the recent trace of `cpu` (of every traced CPU when None or
    /// not traced) to `path`; says what was saved.
    pub fn save(&self, cpu: Option<usize>, path: &Path) -> Result<String, SpikeError> {
        let (file, whose) = match cpu {
            Some(cpu) if self.cpus.contains(&cpu) => {
                (format!("per_cpu/cpu{cpu}/trace"), format!("CPU {cpu}'s"))
            }
            _ => (
                "trace".to_string(),
                format!("CPU {}'s", crate::units::cpu_list(&self.cpus)),
            ),
        };
        let text = self.instance.read(&file)?;
        let events = text.lines().filter(|l| !l.starts_with('#')).count();
        // The name is input data: escaped as in every other message.
        let name = crate::units::escape_line(&path.to_string_lossy());
        crate::rt::outfile::write_output_file(path, &mut |w| w.write_all(text.as_bytes()))
            .map_err(|why| SpikeError::Write {
                path: name.clone(),
                why,
            })?;
        Ok(format!(
            "{whose} recent trace ({events} events) saved to {name}"
        ))
    }
}
