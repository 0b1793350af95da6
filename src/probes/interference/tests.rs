//! The generated programs run in user space (`probes::interpreter`) on
//! fixture inputs, and the slot they wrote is read back as the sampler
//! reads it (`read.rs`).

use super::layout::{Kind, SLOT_SIZE};
use super::program::{Recipe, Source, program};
use super::read::{GapCauses, SlotView};
use crate::probes::fixtures::{
    AREA_AT as SLOT_AT, CTX_AT, MAP_FD, NEXT_AT, PREV_AT, comm, cpu0_area, members, memory,
    store_comm, store_field, store_task,
};
use crate::probes::interpreter::{Memory, run};
use crate::rt::tracefs::format::EventFormat;

/// A CPU's slot and the memory the programs see.
struct Cpu {
    memory: Memory,
}

impl Cpu {
    fn new() -> Cpu {
        Cpu {
            memory: memory(SLOT_SIZE),
        }
    }

    /// One run of `recipe` with the context `args` (u64 each at CTX_AT).
    fn run(&mut self, recipe: &Recipe, args: &[u64]) {
        for (i, arg) in args.iter().enumerate() {
            self.memory.store(CTX_AT + 8 * i as u64, 8, *arg).unwrap();
        }
        let code = program(recipe, MAP_FD).unwrap();
        let r0 = run(&code, CTX_AT, &mut self.memory, &mut |id, r, memory| {
            cpu0_area(id, r, memory).unwrap_or_else(|| panic!("helper {id}"))
        })
        .unwrap();
        assert_eq!(r0, 0);
    }

    fn view(&mut self) -> SlotView {
        let bytes = self.memory.bytes(SLOT_AT);
        // SAFETY: the slot's bytes, alive while the view is used (the
        // memory is not touched meanwhile).
        unsafe { SlotView::new(bytes.as_ptr()) }
    }

    fn task(&mut self, at: u64, pid: u64, name: &str) {
        store_task(&mut self.memory, at, pid, name);
    }
}

fn irq() -> Recipe {
    Recipe::of_arguments(Source::Irq, None).unwrap()
}

#[test]
fn every_event_moves_the_counter_and_the_ring_keeps_the_last_causes() {
    let mut cpu = Cpu::new();
    for n in 0..11 {
        cpu.run(&irq(), &[100 + n]);
    }
    let view = cpu.view();
    assert_eq!(view.count(), 11);
    let mut out = GapCauses::default();
    // Events 3 to 11 (counter 2 -> 11): the ring holds the last 8 of 9.
    view.causes(2, 11, &mut out);
    assert_eq!((out.events, out.kept), (9, 8));
    let numbers: Vec<u32> = out.kept().iter().map(|c| c.number).collect();
    assert_eq!(numbers, (103..111).collect::<Vec<u32>>());
    assert!(out.kept().iter().all(|c| c.kind() == Some(Kind::Irq)));
    // A quiet gap (counter unchanged) has no cause.
    view.causes(11, 11, &mut out);
    assert_eq!((out.events, out.kept), (0, 0));
}

#[test]
fn a_torn_entry_is_left_out() {
    let mut cpu = Cpu::new();
    cpu.run(&irq(), &[7]);
    cpu.run(&irq(), &[8]);
    // Entry 1 being written again: its commit word cleared.
    let at = SLOT_AT + (super::layout::RING + super::layout::entry::SIZE) as u64;
    cpu.memory.store(at, 8, 0).unwrap();
    let mut out = GapCauses::default();
    cpu.view().causes(0, 2, &mut out);
    assert_eq!((out.events, out.kept), (2, 1));
    assert_eq!(out.causes[0].number, 7);
}

#[test]
fn a_typed_switch_names_both_tasks() {
    let mut cpu = Cpu::new();
    cpu.task(PREV_AT, 1234, "sampler");
    cpu.task(NEXT_AT, 4321, "intruder");
    let recipe = Recipe::of_arguments(Source::Switch, Some(&members())).unwrap();
    cpu.run(&recipe, &[1, PREV_AT, NEXT_AT, 0]);
    let mut out = GapCauses::default();
    cpu.view().causes(0, 1, &mut out);
    let c = out.causes[0];
    assert_eq!(c.kind(), Some(Kind::Switch));
    assert_eq!((c.number, c.prev_pid), (4321, 1234));
    assert_eq!((c.comm, c.prev_comm), (comm("intruder"), comm("sampler")));
}

#[test]
fn a_classic_switch_reads_its_record() {
    let format = EventFormat::parse(include_str!(
        "../../rt/tracefs/testdata/sched_switch.format"
    ))
    .unwrap();
    let recipe = Recipe::of_record(Source::Switch, &format).unwrap();
    let mut cpu = Cpu::new();
    store_field(&mut cpu.memory, &format, "prev_pid", 10);
    store_field(&mut cpu.memory, &format, "next_pid", 20);
    for (field, name) in [("prev_comm", "before"), ("next_comm", "after")] {
        let at = format.field(field).unwrap().offset as u64;
        store_comm(&mut cpu.memory, CTX_AT + at, name);
    }
    cpu.run(&recipe, &[]);
    let mut out = GapCauses::default();
    cpu.view().causes(0, 1, &mut out);
    let c = out.causes[0];
    assert_eq!((c.number, c.prev_pid), (20, 10));
    assert_eq!((c.comm, c.prev_comm), (comm("after"), comm("before")));
}

#[test]
fn nmis_count_with_their_time_and_vectors_and_softirqs_name_themselves() {
    let mut cpu = Cpu::new();
    let nmi = Recipe::of_arguments(Source::Nmi, None).unwrap();
    cpu.run(&nmi, &[0xffff_0000, 4_500, 1]);
    cpu.run(&nmi, &[0xffff_0000, 1_500, 1]);
    let vector = Recipe::of_arguments(Source::Vector(0), None).unwrap();
    cpu.run(&vector, &[]);
    let softirq = Recipe::of_arguments(Source::Softirq, None).unwrap();
    cpu.run(&softirq, &[3]);
    let view = cpu.view();
    assert_eq!(view.count(), 4);
    assert_eq!(view.nmis(), (2, 6_000));
    let mut out = GapCauses::default();
    view.causes(0, 4, &mut out);
    let got: Vec<(Option<Kind>, u32)> = out.kept().iter().map(|c| (c.kind(), c.number)).collect();
    assert_eq!(
        got,
        [
            (Some(Kind::Nmi), 4_500),
            (Some(Kind::Nmi), 1_500),
            (Some(Kind::Vector), 0),
            (Some(Kind::Softirq), 3)
        ]
    );
}

#[test]
fn the_switch_needs_its_tasks_members() {
    assert!(Recipe::of_arguments(Source::Switch, None).is_err());
    for source in Source::all() {
        assert!(format!("latscope_{}", source.program_name()).len() <= 15);
    }
}
