//! The flight recorder in the kernel: its map and the mapping user space
//! reads, and one program per event, each hooked the cheapest way the
//! kernel takes (`probes::hook`: a BTF-typed raw tracepoint, else the
//! classic tracepoint). All are file descriptors: they die with the
//! process, nothing is pinned. The collector thread that reads the map for
//! a spike is `spikes::flight`.

use super::layout::{DEFAULT_SLOTS, Region};
use super::program::{ENABLED, Recipe, program};
use crate::probes::ProbeError;
use crate::probes::hook::{AttachWay, Event, EventView, Hooked, KernelTypes, hook};
use crate::probes::ring::per_cpu_map;
use crate::rt::bpf::{Code, Map, MappedArray, Program};
use std::path::Path;
use std::sync::Arc;

/// The ways the recorder's programs are written for, cheapest first (no
/// plain raw tracepoint: a task's members would each need a copy).
pub const LADDER: [AttachWay; 2] = [AttachWay::TypedRawTracepoint, AttachWay::Tracepoint];

/// How the events were hooked: BTF-typed raw tracepoints, or classic
/// tracepoints (each with why the typed one was not taken).
#[derive(Debug, Default, Clone)]
pub struct Hooks {
    pub typed: usize,
    pub classic: Vec<(String, String)>,
}

impl Hooks {
    /// For the report's source line, e.g. "BTF-typed raw tracepoints".
    pub fn describe(&self) -> String {
        match (self.typed, self.classic.first()) {
            (_, None) => "BTF-typed raw tracepoints".to_string(),
            (0, Some((_, why))) => format!("classic tracepoints ({why})"),
            (_, Some((_, why))) => {
                let names: Vec<&str> = self.classic.iter().map(|(e, _)| e.as_str()).collect();
                format!(
                    "BTF-typed raw tracepoints, classic tracepoints for {} ({why})",
                    names.join(", ")
                )
            }
        }
    }
}

/// The recipe of `event`'s program for what it reads (`view`).
pub fn recipe_for(event: &str, view: EventView<'_>, tids: &[i32]) -> Result<Recipe, ProbeError> {
    match view {
        EventView::Arguments { btf: Some(btf) } => Recipe::of_arguments(btf, event, tids),
        EventView::Arguments { btf: None } => Err(ProbeError::Unsuited(
            "the kernel has no BTF: the recorder's programs need the classic tracepoints",
        )),
        EventView::Record { format } => Recipe::of(format, tids),
    }
}

/// The recorder's program for `event`, as `hook` asks for it.
pub fn generate(
    event: &str,
    view: EventView<'_>,
    tids: &[i32],
    map_fd: i32,
    region: Region,
) -> Result<Code, ProbeError> {
    program(&recipe_for(event, view, tids)?, map_fd, region)
}

/// The map, its mapping and the programs, attached.
pub struct LoadedRecorder {
    /// Declared first: detached before the map is closed.
    hooked: Vec<Hooked>,
    pub hooks: Hooks,
    pub mapped: Arc<MappedArray>,
    pub region: Region,
    _map: Map,
}

impl LoadedRecorder {
    /// Creates the map (one region per CPU up to the highest of `cpus`,
    /// those enabled) and
    /// hooks one program per event of `events` (system, name), recording
    /// the wake-ups of `tids` only.
    pub fn load(
        tracefs: &Path,
        events: &[(&str, &str)],
        tids: &[i32],
        cpus: &[usize],
    ) -> Result<LoadedRecorder, ProbeError> {
        let region = Region::with_slots(DEFAULT_SLOTS);
        let (map, mapped) = per_cpu_map("flight", "recorder", region.size(), true, Some(cpus))?;
        for &cpu in cpus {
            mapped
                .write_u64(cpu, ENABLED, 1)
                .ok_or(ProbeError::NotPossibleCpu(cpu))?;
        }
        let kernel = KernelTypes::new(tracefs);
        let mut hooks = Hooks::default();
        let mut hooked = Vec::new();
        for &(system, name) in events {
            let event = Event {
                system,
                name,
                program: name,
            };
            let one = hook(&kernel, event, &LADDER, &mut |_, view| {
                generate(name, view, tids, map.fd(), region)
            })?;
            match one.passed_over.first() {
                Some((_, why)) => hooks
                    .classic
                    .push((format!("{system}:{name}"), why.to_string())),
                None => hooks.typed += 1,
            }
            hooked.push(one);
        }
        Ok(LoadedRecorder {
            hooked,
            hooks,
            mapped: Arc::new(mapped),
            region,
            _map: map,
        })
    }

    /// The loaded programs' descriptors (for their run-time statistics).
    pub fn program_fds(&self) -> Vec<i32> {
        self.hooked
            .iter()
            .map(|h| Program::fd(&h.program))
            .collect()
    }
}
