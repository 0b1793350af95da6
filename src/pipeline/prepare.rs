//! Preparing the process for measuring and undoing it: memory locked,
//! `/dev/cpu_dma_latency` held, and what runs beside the test (the `--load`
//! generators, the kernel-log follower).

use super::background::Background;
use crate::load::LoadSpec;
use crate::report::Report;
use crate::rt::cpuidle::IdleLimit;
use crate::rt::dma_latency::DmaLatency;
use crate::rt::registry::{CpuNote, SharingRun};
use crate::rt::sched;
use crate::samples::SampleFile;
use crate::stats::samples::TestSamples;

/// What a command asks of the process before its first sample.
#[derive(Debug, Clone, Default)]
pub struct PrepareSpec {
    /// `mlockall` (off with `--no-mlockall`; off for disk writes).
    pub lock_memory: bool,
    /// A failing `mlockall` ends the run (exit 1) instead of being reported.
    pub require_mlock: bool,
    /// Hold `/dev/cpu_dma_latency` at 0 (off with `--no-dma-latency`).
    pub hold_dma_latency: bool,
    /// `--load`: started on `cpus`.
    pub loads: Vec<LoadSpec>,
    /// The CPUs the test measures on.
    pub cpus: Vec<usize>,
}

/// Whether `mlockall` is in force, for the report and the validity checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryLock {
    Locked,
    NotRequested,
    Failed(String),
}

impl MemoryLock {
    pub fn is_locked(&self) -> bool {
        *self == MemoryLock::Locked
    }
}

/// Process-wide preparation for measuring, with what it achieved; every
/// command goes through it.
pub struct Preparation {
    pub memory: MemoryLock,
    pub dma_latency: DmaLatency,
    pub warnings: Vec<String>,
    /// The `--load` generators and the kernel-log follower.
    pub background: Background,
    /// `--samples FILE`: the file and its drain thread (`pipeline::run`).
    pub samples: Option<SampleFile>,
    /// This run's CPUs, for other runs on them (removed when dropped).
    cpu_note: CpuNote,
    /// The CPUs the test measures on, and the other runs found on them at
    /// the start.
    measured_cpus: Vec<usize>,
    sharing_at_start: Vec<SharingRun>,
    /// `--deepest-idle-state`: the idle states disabled (enabled again
    /// when this is dropped).
    idle_limit: Option<IdleLimit>,
}

impl Preparation {
    /// Locks memory, holds `/dev/cpu_dma_latency`, follows the kernel log
    /// and starts the loads on the measured CPUs, as `spec` asks. With
    /// `require_mlock`, a failing mlockall is an error (exit 1); otherwise the
    /// run goes on and the report says so. Call it from the main thread: the
    /// loads' parent-death signal is tied to the thread that starts them.
    pub fn apply(spec: &PrepareSpec) -> Result<Preparation, String> {
        let PrepareSpec {
            lock_memory,
            require_mlock,
            hold_dma_latency: hold_dma,
            loads,
            cpus: measured_cpus,
        } = spec;
        let (lock_memory, require_mlock, hold_dma) = (*lock_memory, *require_mlock, *hold_dma);
        let mut warnings = Vec::new();
        let memory = if lock_memory {
            // A limit too small for a whole run is not an error: the run
            // goes on unlocked and says why (rt::sched).
            match sched::lock_all_memory_if_affordable() {
                Ok(()) => MemoryLock::Locked,
                Err(sched::MlockSkipped::Unaffordable(why)) => MemoryLock::Failed(why),
                Err(sched::MlockSkipped::Failed(e)) if require_mlock => return Err(e),
                Err(sched::MlockSkipped::Failed(e)) => MemoryLock::Failed(e),
            }
        } else {
            MemoryLock::NotRequested
        };
        let dma_latency = if hold_dma {
            DmaLatency::request_zero()
        } else {
            DmaLatency::NotRequested
        };
        if let DmaLatency::Unavailable(why) = &dma_latency {
            warnings.push(format!(
                "could not hold {} at 0 ({why}): CPU idle-state exits may add latency",
                crate::rt::dma_latency::PATH
            ));
        }
        let background = Background::start(loads, measured_cpus)?;
        let (cpu_note, sharing_at_start) = CpuNote::announce(measured_cpus);
        Ok(Preparation {
            memory,
            dma_latency,
            warnings,
            background,
            samples: None,
            cpu_note,
            measured_cpus: measured_cpus.clone(),
            sharing_at_start,
            idle_limit: None,
        })
    }

    /// `--deepest-idle-state N`: disables the idle states deeper than N on
    /// the measured CPUs until this preparation is dropped; what there was
    /// to say (no cpuidle driver, nothing deeper) becomes a warning line.
    pub fn limit_idle_states(&mut self, deepest: u32) -> Result<(), String> {
        // A state index beyond i32 names no state: as good as the deepest.
        let limit = IdleLimit::apply(
            &self.measured_cpus,
            i32::try_from(deepest).unwrap_or(i32::MAX),
        )?;
        self.warnings.extend(
            limit
                .record()
                .notes
                .iter()
                .map(|note| format!("--deepest-idle-state {deepest}: {note}")),
        );
        self.idle_limit = Some(limit);
        Ok(())
    }

    /// What the preparation did that the report records beside the tests.
    pub fn record_into(&self, report: &mut Report) {
        report.idle_states = self.idle_limit.as_ref().map(|l| l.record().clone());
    }

    /// One warning per other latscope run of this user that measured on
    /// some of the same CPUs during this one (found at the start, running
    /// at the end, or having found this run): each one's figures include
    /// the other's work.
    pub fn shared_cpu_warnings(&self) -> Vec<String> {
        let mut runs = self.cpu_note.sharing_runs(&self.measured_cpus);
        for run in &self.sharing_at_start {
            if !runs.iter().any(|r| r.pid == run.pid) {
                runs.push(run.clone());
            }
        }
        runs.sort_by_key(|r| r.pid);
        runs.iter()
            .map(|r| {
                format!(
                    "another latscope run (pid {}) ran on CPU {} at the same time: each run's \
                     figures include the other's work; run them one after the other",
                    r.pid,
                    crate::units::cpu_list(&r.cpus)
                )
            })
            .collect()
    }

    /// After the last sample, before the results are shown: stops the loads
    /// and the kernel-log follower and records them in `report`; completes
    /// the `--samples` file (Err: its writing failed, the run's error line
    /// once the results are delivered).
    pub fn finish(&mut self, report: &mut Report) -> Result<(), String> {
        self.background.finish_into(report);
        self.record_into(report);
        match self.samples.take() {
            Some(samples) => samples.finish_into(report),
            None => Ok(()),
        }
    }

    /// With `--samples`: the sample rings of a test about to begin (see
    /// `SampleFile::begin_test`); None without.
    pub fn samples_for(
        &self,
        test: &str,
        kind: &str,
        series: &[(String, Option<usize>)],
    ) -> Option<TestSamples> {
        self.samples
            .as_ref()
            .map(|s| s.begin_test(test, kind, series))
    }

    /// `samples_for` a test of one series per CPU, labelled `CPU n` as the
    /// timer and noise reports label them.
    pub fn samples_per_cpu(&self, test: &str, kind: &str, cpus: &[usize]) -> Option<TestSamples> {
        let series: Vec<(String, Option<usize>)> = cpus
            .iter()
            .map(|&cpu| (format!("CPU {cpu}"), Some(cpu)))
            .collect();
        self.samples_for(test, kind, &series)
    }
}
