//! The interference counter in the kernel: its map, the mapping the
//! samplers read, and one program per event this kernel has, each hooked
//! the cheapest way it takes (`probes::hook`). All are file descriptors:
//! they die with the process (SIGKILL included), nothing is pinned.

use super::layout::SLOT_SIZE;
use super::program::{LADDER, Source, generate};
use super::read::SlotView;
use crate::probes::hook::{Event, Hooked, KernelTypes, hook};
use crate::probes::ring::per_cpu_map;
use crate::probes::{AttachWay, ProbeError};
use crate::rt::bpf::{Map, MappedArray};
use std::path::Path;

/// The map, its mapping and the programs, attached.
pub struct LoadedInterference {
    /// Declared first: detached before the map is closed.
    hooked: Vec<Hooked>,
    /// `system:name` of each hooked program, in the same order.
    events: Vec<String>,
    mapped: MappedArray,
    _map: Map,
}

impl std::fmt::Debug for LoadedInterference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedInterference")
            .field("programs", &self.hooked.len())
            .finish()
    }
}

/// Whether `system:name` exists on this kernel (its BTF typedef or its
/// tracefs directory).
fn event_exists(kernel: &KernelTypes, system: &str, name: &str) -> bool {
    kernel.btf().is_ok_and(|btf| btf.tracepoint(name).is_ok())
        || kernel
            .tracefs
            .join("events")
            .join(system)
            .join(name)
            .is_dir()
}

impl LoadedInterference {
    /// Creates the map (one slot per possible CPU) and hooks the programs:
    /// the IRQ, softirq and switch events (an error when one cannot be),
    /// the NMI event and the system vectors where this kernel has them.
    pub fn load(tracefs: &Path) -> Result<LoadedInterference, ProbeError> {
        let (map, mapped) =
            per_cpu_map("hw_counter", "interference counter", SLOT_SIZE, false, None)?;
        let kernel = KernelTypes::new(tracefs);
        let mut hooked = Vec::new();
        let mut events = Vec::new();
        for source in Source::all() {
            let (system, name) = source.event();
            if !source.required() && !event_exists(&kernel, system, &name) {
                continue;
            }
            let program = source.program_name();
            let event = Event {
                system,
                name: &name,
                program: &program,
            };
            let one = hook(&kernel, event, &LADDER, &mut |way, view| {
                generate(source, way, view, map.fd())
            })?;
            hooked.push(one);
            events.push(format!("{system}:{name}"));
        }
        Ok(LoadedInterference {
            hooked,
            events,
            mapped,
            _map: map,
        })
    }

    /// Each program's event (`system:name`), the way it took and its
    /// descriptor (`doctor --bpf` times them).
    pub fn programs(&self) -> impl Iterator<Item = (&str, AttachWay, i32)> + '_ {
        self.events
            .iter()
            .zip(&self.hooked)
            .map(|(event, h)| (event.as_str(), h.way, h.program.fd()))
    }

    /// The slot of `cpu` (None: not a possible CPU).
    pub fn slot(&self, cpu: usize) -> Option<SlotView> {
        let at = self.mapped.entry_ptr(cpu)?;
        // SAFETY: a whole slot of the mapping, which `self` keeps mapped;
        // the caller holds `self` (an Arc) while it reads.
        Some(unsafe { SlotView::new(at.cast_const()) })
    }
}
