//! Live tests of the BPF core: they need root (or CAP_BPF + CAP_PERFMON) and
//! a kernel with BPF on trace events; each says why when it skips.

use super::*;
use std::time::Duration;

/// None when BPF can run here; else the reason, printed by the skipping test.
fn skip_reason() -> Option<String> {
    probe::check().err()
}

macro_rules! need_bpf {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipped: BPF collection cannot run here: {why}");
            return;
        }
    };
}

/// A program adding 1 to this CPU's u64 at `offset` in `map`, when the
/// current task's pid is `pid` (any when None).
fn counter(map: &Map, offset: i16, pid: Option<i32>) -> Vec<Insn> {
    let mut asm = Asm::new();
    let out = asm.new_label();
    if let Some(pid) = pid {
        asm.push(Insn::call(Helper::GetCurrentPidTgid))
            .push(Insn::alu64_imm(Alu::Lsh, Reg::R0, 32))
            .push(Insn::alu64_imm(Alu::Rsh, Reg::R0, 32))
            .jump_if(Cond::Ne, Reg::R0, pid, out);
    }
    asm.this_cpu_entry_or_return(map.fd());
    asm.push(Insn::mov64_imm(Reg::R1, 1))
        .push(Insn::atomic_add64(Reg::R0, offset, Reg::R1));
    asm.bind(out);
    asm.push(Insn::mov64_imm(Reg::R0, 0)).push(Insn::exit());
    asm.finish().unwrap()
}

fn cpus() -> usize {
    sys::possible_cpus().unwrap()
}

fn total(mapped: &MappedArray, offset: usize) -> u64 {
    (0..cpus())
        .map(|c| mapped.read_u64(c, offset).unwrap())
        .sum()
}

#[test]
fn a_tracepoint_program_counts_into_a_mapped_array() {
    need_bpf!();
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let map = Map::create(MapKind::Array, "test", 64, cpus() as u32, BPF_F_MMAPABLE).unwrap();
    let mapped = map.map_memory(false).unwrap();
    let program = Program::load(
        ProgramKind::Tracepoint,
        "test_wake",
        &counter(&map, 8, None),
    )
    .expect("the counter loads");
    let id = tracepoint_id(&tracefs, "sched", "sched_waking").unwrap();
    let attachment = Attachment::tracepoint(&program, id, "sched:sched_waking").unwrap();
    // Every sleep of this thread is ended by a wake-up: at least 20 here.
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let counted = total(&mapped, 8);
    assert!(counted >= 20, "counted {counted} wake-ups");
    drop(attachment);
    let after = total(&mapped, 8);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(total(&mapped, 8), after, "still counting after detaching");
    // A lookup through the system call sees what the mapping sees.
    let mut value = vec![0u8; map.buffer_len().unwrap()];
    let mut sum = 0;
    for cpu in 0..cpus() {
        map.lookup(cpu as u32, &mut value).unwrap();
        sum += u64::from_ne_bytes(value[8..16].try_into().unwrap());
    }
    assert_eq!(sum, after);
}

#[test]
fn a_written_slot_reads_back_through_the_mapping_and_lookup() {
    need_bpf!();
    let map = Map::create(MapKind::Array, "test_rw", 16, 4, BPF_F_MMAPABLE).unwrap();
    let mapped = map.map_memory(true).unwrap();
    mapped.write_u64(2, 8, 0xdead_beef).unwrap();
    let mut value = [0u8; 16];
    map.lookup(2, &mut value).unwrap();
    assert_eq!(
        u64::from_ne_bytes(value[8..].try_into().unwrap()),
        0xdead_beef
    );
    value[..8].copy_from_slice(&7u64.to_ne_bytes());
    map.update(3, &value).unwrap();
    assert_eq!(mapped.read_u64(3, 0), Some(7));
    assert_eq!(mapped.read_u64(4, 0), None, "past the end");
    assert!(map.lookup(9, &mut value).is_err());
    // A per-CPU array reads one value per possible CPU.
    let per_cpu = Map::create(MapKind::PerCpuArray, "test_pc", 12, 1, 0).unwrap();
    assert_eq!(per_cpu.buffer_len().unwrap(), 16 * cpus());
    let mut values = vec![0u8; per_cpu.buffer_len().unwrap()];
    per_cpu.lookup(0, &mut values).unwrap();
    assert!(per_cpu.map_memory(false).is_err(), "not mmapable");
}

#[test]
fn a_refused_program_comes_with_the_verifier_log() {
    need_bpf!();
    // r0 is read before it is written.
    let bad = [Insn::alu64_imm(Alu::Add, Reg::R0, 1), Insn::exit()];
    match Program::load(ProgramKind::Tracepoint, "test_bad", &bad) {
        Err(LoadError::Verifier { log, .. }) => {
            assert!(log.contains("R0 !read_ok"), "log: {log}");
        }
        other => panic!("expected a verifier refusal, got {other:?}"),
    }
}

#[test]
fn every_generated_program_passes_this_kernels_verifier() {
    need_bpf!();
    use super::wakeups::{arm_program, expire_program, switch_in_by_pid, switch_in_by_task};
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let format = |system: &str, name: &str| {
        crate::rt::tracefs::format::EventFormat::read(
            &tracefs
                .join("events")
                .join(system)
                .join(name)
                .join("format"),
        )
        .unwrap()
    };
    let map = Map::create(MapKind::Array, "test_v", 128, cpus() as u32, BPF_F_MMAPABLE).unwrap();
    let fd = map.fd();
    let programs = [
        (
            ProgramKind::Tracepoint,
            "t_arm",
            arm_program(fd, &format("timer", "hrtimer_start")),
        ),
        (
            ProgramKind::Tracepoint,
            "t_expire",
            expire_program(fd, &format("timer", "hrtimer_expire_entry")),
        ),
        (ProgramKind::RawTracepoint, "t_on_cpu", switch_in_by_pid(fd)),
        // The fallback for kernels without sched_exit_tp, loaded and
        // attached here too so that it is not first tried on such a kernel.
        (
            ProgramKind::RawTracepoint,
            "t_switch",
            switch_in_by_task(fd),
        ),
    ];
    for (kind, name, insns) in programs {
        let program =
            Program::load(kind, name, &insns.unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        if name == "t_switch" {
            Attachment::raw_tracepoint(&program, "sched_switch").unwrap();
        }
    }
}

/// Not a test of latscope: what this kernel does when a CPU leaves idle.
/// `cargo test --release -- --ignored --nocapture switches_out_of_idle`.
#[test]
#[ignore]
fn switches_out_of_idle() {
    need_bpf!();
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let map = Map::create(
        MapKind::Array,
        "test_idle",
        64,
        cpus() as u32,
        BPF_F_MMAPABLE,
    )
    .unwrap();
    let mapped = map.map_memory(false).unwrap();
    let raw = Program::load(
        ProgramKind::RawTracepoint,
        "test_raw",
        &counter(&map, 0, Some(0)),
    )
    .unwrap();
    let classic = Program::load(
        ProgramKind::Tracepoint,
        "test_tp",
        &counter(&map, 8, Some(0)),
    )
    .unwrap();
    let all = Program::load(
        ProgramKind::RawTracepoint,
        "test_all",
        &counter(&map, 16, None),
    )
    .unwrap();
    let _a = Attachment::raw_tracepoint(&raw, "sched_switch").unwrap();
    let id = tracepoint_id(&tracefs, "sched", "sched_switch").unwrap();
    let _b = Attachment::tracepoint(&classic, id, "sched:sched_switch").unwrap();
    let _c = Attachment::raw_tracepoint(&all, "sched_switch").unwrap();
    std::thread::sleep(Duration::from_secs(1));
    eprintln!(
        "out of idle: raw {} classic {}; all switches {}",
        total(&mapped, 0),
        total(&mapped, 8),
        total(&mapped, 16)
    );
}

/// Not a test of latscope: which context-switch hooks see this thread come
/// back from a sleep. `cargo test --release -- --ignored --nocapture hooks_on_the_way_back`.
#[test]
#[ignore]
fn hooks_on_the_way_back() {
    need_bpf!();
    let tid = crate::rt::sched::current_tid();
    let map = Map::create(
        MapKind::Array,
        "test_back",
        64,
        cpus() as u32,
        BPF_F_MMAPABLE,
    )
    .unwrap();
    let mapped = map.map_memory(false).unwrap();
    let exit_tp = Program::load(
        ProgramKind::RawTracepoint,
        "test_exit",
        &counter(&map, 0, Some(tid)),
    )
    .unwrap();
    let entry_tp = Program::load(
        ProgramKind::RawTracepoint,
        "test_entry",
        &counter(&map, 8, Some(tid)),
    )
    .unwrap();
    let _a = Attachment::raw_tracepoint(&exit_tp, "sched_exit_tp").unwrap();
    let _b = Attachment::raw_tracepoint(&entry_tp, "sched_entry_tp").unwrap();
    for _ in 0..200 {
        std::thread::sleep(Duration::from_micros(500));
    }
    eprintln!(
        "200 sleeps: sched_exit_tp in the thread {}, sched_entry_tp {}",
        total(&mapped, 0),
        total(&mapped, 8)
    );
}
