//! The bpf tier: the CPU's interference counter (`probes::interference`),
//! bumped in the kernel on every IRQ, system vector, softirq, NMI and
//! context switch of the CPU, read with one load around each pair of clock
//! reads. Each gap is decided by itself: an unchanged counter is hardware
//! (the hypervisor in a guest); a moved one is the OS, named from the
//! causes the kernel noted for exactly the events counted across the gap
//! (copied at the gap, named after the sub-window, off the clock).

use super::classify::{Classifier, GAPS_PER_SUB_WINDOW, GapClass, SubWindow};
use super::protocol::{Gap, Interference, InterferenceCounter};
use crate::probes::interference::layout::{Kind, vector_label};
use crate::probes::interference::load::LoadedInterference;
use crate::probes::interference::read::{GapCauses, RawCause, SlotView};
use crate::probes::interference::verdict::SlotCounter;
use crate::rt::tracefs::events::softirq_name;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// This CPU's counter: one volatile load per read (the sampler is pinned,
/// so its CPU's slot is the one its interferences bump).
pub struct BpfCounter {
    count: SlotCounter,
    view: SlotView,
    /// The causes of gap number `i` of the current sub-window, in `i`.
    captures: Vec<GapCauses>,
}

impl BpfCounter {
    /// The counter of `view`'s slot, with room for the causes of
    /// `GAPS_PER_SUB_WINDOW` gaps (allocated and touched now, not in the loop).
    pub fn new(view: SlotView) -> BpfCounter {
        BpfCounter {
            count: SlotCounter::new(&view),
            view,
            captures: vec![GapCauses::default(); GAPS_PER_SUB_WINDOW],
        }
    }
}

impl InterferenceCounter for BpfCounter {
    #[inline(always)]
    fn read(&mut self) -> Option<u64> {
        // The slot stays mapped while the classifier holds the programs.
        self.count.read()
    }

    fn capture(&mut self, index: usize, from: u64, to: u64) {
        if let Some(slot) = self.captures.get_mut(index) {
            self.view.causes(from, to, slot);
        }
    }
}

/// The bpf tier's classifier of one CPU's gaps.
pub struct BpfClassifier {
    counter: BpfCounter,
    /// The sampler's own thread: its switches back in name nothing.
    own_tid: u32,
    /// IRQ numbers' names as /proc/interrupts gives them (`36 (virtio1-req.0)`).
    irq_names: BTreeMap<u32, String>,
    nmis_at_start: (u64, u64),
    /// The counter when the current sub-window began.
    mark: u64,
    /// Keeps the map mapped while `counter` reads it.
    _loaded: Arc<LoadedInterference>,
}

impl BpfClassifier {
    pub fn new(
        loaded: &Arc<LoadedInterference>,
        cpu: usize,
        own_tid: i32,
    ) -> Result<BpfClassifier, String> {
        let view = loaded
            .slot(cpu)
            .ok_or_else(|| format!("CPU {cpu} has no slot in the interference counter's map"))?;
        let irq_names = std::fs::read_to_string("/proc/interrupts")
            .map(|text| irq_names(&text, cpu))
            .unwrap_or_default();
        Ok(BpfClassifier {
            nmis_at_start: view.nmis(),
            mark: view.count(),
            counter: BpfCounter::new(view),
            own_tid: own_tid as u32,
            irq_names,
            _loaded: Arc::clone(loaded),
        })
    }
}

impl Classifier for BpfClassifier {
    type Counter = BpfCounter;

    fn counter(&mut self) -> &mut BpfCounter {
        &mut self.counter
    }

    fn open_window(&mut self) {
        self.mark = self.counter.view.count();
    }

    fn close_sub_window(&mut self, gaps: &[Gap], classes: &mut Vec<GapClass>) -> SubWindow {
        for (i, gap) in gaps.iter().enumerate() {
            classes.push(match gap.interference {
                Interference::None => GapClass::Hardware,
                Interference::Some => match self.counter.captures.get(i) {
                    Some(causes) => {
                        GapClass::Os(name_causes(causes, self.own_tid, &self.irq_names))
                    }
                    None => GapClass::Os("interference".into()),
                },
                Interference::Unknown => GapClass::Os("unclassified".into()),
            });
        }
        let now = self.counter.view.count();
        let quiet = now == self.mark;
        self.mark = now;
        SubWindow {
            classified: true,
            quiet,
        }
    }

    fn nmis(&self) -> (u64, Option<u64>) {
        let (count, ns) = self.counter.view.nmis();
        let (count0, ns0) = self.nmis_at_start;
        (count.saturating_sub(count0), Some(ns.saturating_sub(ns0)))
    }
}

/// IRQ number -> its /proc/interrupts row name, for `cpu`'s column.
pub fn irq_names(text: &str, cpu: usize) -> BTreeMap<u32, String> {
    let Some(column) = super::proc_counts::Column::parse(text, cpu) else {
        return BTreeMap::new();
    };
    column
        .names
        .into_iter()
        .filter_map(|name| {
            let number = name.split(' ').next()?.parse::<u32>().ok()?;
            Some((number, name))
        })
        .collect()
}

fn comm_text(comm: &[u8; 16]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// The names one cause gives: a switch names the tasks on either side that
/// are neither the sampler nor the idle task (pid 0).
fn names_of(cause: &RawCause, own_tid: u32, irqs: &BTreeMap<u32, String>) -> Vec<(u8, String)> {
    let n = cause.number;
    match cause.kind() {
        Some(Kind::Switch) => [(n, &cause.comm), (cause.prev_pid, &cause.prev_comm)]
            .into_iter()
            .filter(|&(pid, _)| pid != own_tid && pid != 0)
            .map(|(pid, comm)| (0, format!("task {} (pid {pid})", comm_text(comm))))
            .collect(),
        Some(Kind::Irq) => vec![(
            1,
            format!("irq {}", irqs.get(&n).cloned().unwrap_or(n.to_string())),
        )],
        Some(Kind::Vector) => vec![(1, format!("irq {}", vector_label(n)))],
        Some(Kind::Softirq) => vec![(2, format!("softirq {}", softirq_name(n)))],
        Some(Kind::Nmi) => vec![(3, "NMI".to_string())],
        None => Vec::new(),
    }
}

/// The cause of one gap, as the unprivileged tier names its causes: every
/// distinct one the kernel noted across the gap, tasks first, then IRQs
/// (device lines and system vectors), softirqs and NMIs, each in a fixed
/// order so that a cause reads the same wherever it comes from
/// (`task stress-ng (pid 1234) + irq LOC + softirq TIMER`).
pub fn name_causes(causes: &GapCauses, own_tid: u32, irqs: &BTreeMap<u32, String>) -> String {
    let names: BTreeSet<(u8, String)> = causes
        .kept()
        .iter()
        .flat_map(|c| names_of(c, own_tid, irqs))
        .collect();
    if names.is_empty() {
        let switched = causes.kept().iter().any(|c| c.kind() == Some(Kind::Switch));
        return if switched {
            "task switch"
        } else {
            "interference"
        }
        .to_string();
    }
    names
        .into_iter()
        .map(|(_, name)| name)
        .collect::<Vec<_>>()
        .join(" + ")
}

#[cfg(test)]
mod tests {
    use super::super::protocol::fake::ScriptClock;
    use super::super::protocol::{gap_of, read_pair};
    use super::*;
    use crate::rt::ticks::Timebase;

    const ID: Timebase = Timebase::IDENTITY;
    use crate::probes::interference::layout::{RING, SLOT_SIZE, entry, header};

    /// A slot in ordinary memory, written as the programs write it.
    struct FakeSlot(Vec<u64>);

    impl FakeSlot {
        fn new() -> FakeSlot {
            FakeSlot(vec![0; SLOT_SIZE / 8])
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: the u64s seen as their bytes.
            unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), SLOT_SIZE) }
        }

        /// One event: COUNT += 1 and its entry.
        fn event(&mut self, kind: Kind, number: u32, tasks: Option<(u32, &str, &str)>) {
            let i = self.0[header::COUNT / 8];
            self.0[header::COUNT / 8] = i + 1;
            let at = RING + (i as usize % 8) * entry::SIZE;
            let b = self.bytes();
            b[at + entry::KIND..][..4].copy_from_slice(&(kind as u32).to_le_bytes());
            b[at + entry::NUMBER..][..4].copy_from_slice(&number.to_le_bytes());
            if let Some((prev, next_comm, prev_comm)) = tasks {
                b[at + entry::PREV_PID..][..4].copy_from_slice(&prev.to_le_bytes());
                b[at + entry::COMM..][..next_comm.len()].copy_from_slice(next_comm.as_bytes());
                b[at + entry::PREV_COMM..][..prev_comm.len()].copy_from_slice(prev_comm.as_bytes());
            }
            b[at + entry::SEQ..][..8].copy_from_slice(&(i + 1).to_le_bytes());
        }

        fn view(&mut self) -> SlotView {
            // SAFETY: the fixture outlives the views of each test.
            unsafe { SlotView::new(self.bytes().as_ptr()) }
        }
    }

    fn causes_of(slot: &mut FakeSlot, from: u64, to: u64) -> GapCauses {
        let mut out = GapCauses::default();
        slot.view().causes(from, to, &mut out);
        out
    }

    #[test]
    fn the_counter_is_one_load_of_the_slot_and_a_moved_one_keeps_its_causes() {
        let mut slot = FakeSlot::new();
        slot.event(Kind::Vector, 0, None);
        let mut counter = BpfCounter::new(slot.view());
        let mut clock = ScriptClock(vec![0, 10, 5000, 5010], 0);
        let first = read_pair(&mut counter, &mut clock);
        assert_eq!((first.before, first.after), (Some(1), Some(1)));
        // A device IRQ and its softirq between the pairs.
        slot.event(Kind::Irq, 36, None);
        slot.event(Kind::Softirq, 3, None);
        let second = read_pair(&mut counter, &mut clock);
        let gap = gap_of(Some(&first), &second, 1000, &ID).unwrap();
        assert_eq!(gap.interference, Interference::Some);
        counter.capture(0, first.after.unwrap(), second.before.unwrap());
        let names = BTreeMap::from([(36, "36 (virtio1-req.0)".to_string())]);
        assert_eq!(
            name_causes(&counter.captures[0], 77, &names),
            "irq 36 (virtio1-req.0) + softirq NET_RX"
        );
    }

    #[test]
    fn a_task_is_named_by_either_switch_but_never_the_sampler_or_idle() {
        let mut slot = FakeSlot::new();
        // The sampler (77) leaves for stress-ng (1234), which gives the CPU
        // back: both switches name stress-ng once.
        slot.event(Kind::Vector, 0, None);
        slot.event(Kind::Switch, 1234, Some((77, "stress-ng", "hwlat/1")));
        slot.event(Kind::Switch, 77, Some((1234, "hwlat/1", "stress-ng")));
        let causes = causes_of(&mut slot, 0, 3);
        assert_eq!(
            name_causes(&causes, 77, &BTreeMap::new()),
            "task stress-ng (pid 1234) + irq LOC"
        );
        // The sampler's own way back in from idle names nothing else.
        slot.event(Kind::Switch, 77, Some((0, "hwlat/1", "swapper/1")));
        let causes = causes_of(&mut slot, 3, 4);
        assert_eq!(name_causes(&causes, 77, &BTreeMap::new()), "task switch");
        // An NMI, and an unknown IRQ line by its number.
        slot.event(Kind::Nmi, 4000, None);
        slot.event(Kind::Irq, 99, None);
        let causes = causes_of(&mut slot, 4, 6);
        assert_eq!(name_causes(&causes, 77, &BTreeMap::new()), "irq 99 + NMI");
    }

    #[test]
    fn a_gap_longer_than_the_ring_names_its_last_causes() {
        let mut slot = FakeSlot::new();
        slot.event(Kind::Switch, 500, Some((77, "net", "hwlat/1")));
        for _ in 0..20 {
            slot.event(Kind::Softirq, 3, None);
        }
        slot.event(Kind::Switch, 77, Some((500, "hwlat/1", "net")));
        let causes = causes_of(&mut slot, 0, 22);
        assert_eq!((causes.events, causes.kept), (22, 8));
        // The first switch was overwritten; the last one names the task.
        assert_eq!(
            name_causes(&causes, 77, &BTreeMap::new()),
            "task net (pid 500) + softirq NET_RX"
        );
    }

    #[test]
    fn irq_lines_are_named_from_the_cpus_proc_interrupts_rows() {
        let text = "           CPU0       CPU1       \n\
  0:         44          0   IO-APIC   2-edge      timer\n\
 36:          0        812   PCI-MSIX-0000:00:03.0   0-edge      virtio1-req.0\n\
LOC:     123456     654321   Local timer interrupts\n";
        let names = irq_names(text, 1);
        assert_eq!(names[&36], "36 (virtio1-req.0)");
        assert_eq!(names[&0], "0 (timer)");
        assert_eq!(names.len(), 2);
    }
}
