//! Live tests of the BPF core: they need root (or CAP_BPF + CAP_PERFMON) and
//! a kernel with BPF on trace events; each says why when it skips.

use super::*;
use std::time::Duration;

/// Returns from the test, with a counted skip, where BPF cannot run.
macro_rules! need_bpf {
    ($test:expr) => {
        if super::skip_without_bpf(concat!("rt::bpf::tests_live::", $test)) {
            return;
        }
    };
}

/// A program adding 1 to this CPU's u64 at `offset` in `map`, when the
/// current task's pid is `pid` (any when None).
fn counter(map: &Map, offset: i16, pid: Option<i32>) -> Code {
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
    need_bpf!("a_tracepoint_program_counts_into_a_mapped_array");
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
    need_bpf!("a_written_slot_reads_back_through_the_mapping_and_lookup");
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
    need_bpf!("a_refused_program_comes_with_the_verifier_log");
    // r0 is read before it is written.
    let bad = [Insn::alu64_imm(Alu::Add, Reg::R0, 1), Insn::exit()];
    match Program::load(ProgramKind::Tracepoint, "test_bad", &bad) {
        Err(LoadError::Verifier { log, .. }) => {
            assert!(log.contains("R0 !read_ok"), "log: {log}");
        }
        other => panic!("expected a verifier refusal, got {other:?}"),
    }
}

/// Not a test of latscope: what this kernel does when a CPU leaves idle.
/// `cargo test --release -- --ignored --nocapture switches_out_of_idle`.
#[test]
#[ignore]
fn switches_out_of_idle() {
    need_bpf!("switches_out_of_idle");
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
    need_bpf!("hooks_on_the_way_back");
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

/// Not a test of latscope: what each way onto a tracepoint costs the event
/// itself, with a program that does nothing (so only the path differs):
/// this thread's CPU time per `timerfd_settime` (one `hrtimer_start`), the
/// cheapest chunk of 2,000 calls of 20, median over alternating rounds.
/// `cargo test --release -- --ignored --nocapture path_cost_per_hrtimer_start`.
#[test]
#[ignore]
fn path_cost_per_hrtimer_start() {
    need_bpf!("path_cost_per_hrtimer_start");
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let btf = btf::Btf::vmlinux().unwrap();
    let (typedef, _) = btf.tracepoint("hrtimer_start").unwrap();
    let id = tracepoint_id(&tracefs, "timer", "hrtimer_start").unwrap();
    let nothing = [Insn::mov64_imm(Reg::R0, 0), Insn::exit()];
    let classic = Program::load(ProgramKind::Tracepoint, "test_tp", &nothing).unwrap();
    let raw = Program::load(ProgramKind::RawTracepoint, "test_raw", &nothing).unwrap();
    let typed = Program::load_btf_raw_tracepoint("test_btf", typedef, &nothing).unwrap();
    crate::rt::sched::pin_current_thread(*crate::rt::sched::allowed_cpus().last().unwrap())
        .unwrap();
    // SAFETY: a plain timerfd, closed below; the timer never fires.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    assert!(fd >= 0);
    let far = libc::itimerspec {
        it_interval: crate::rt::clock::timespec(0),
        it_value: crate::rt::clock::timespec(100_000_000_000),
    };
    let cheapest_ns_per_call = || {
        (0..20)
            .map(|_| {
                let before = crate::rt::clock::read_clock(libc::CLOCK_THREAD_CPUTIME_ID);
                for _ in 0..2000 {
                    // SAFETY: a valid timerfd and itimerspec.
                    unsafe { libc::timerfd_settime(fd, 0, &far, std::ptr::null_mut()) };
                }
                crate::rt::clock::read_clock(libc::CLOCK_THREAD_CPUTIME_ID) - before
            })
            .min()
            .unwrap() as f64
            / 2000.0
    };
    let names = ["none", "classic", "raw", "tp_btf"];
    let mut seen: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _round in 0..15 {
        for (variant, costs) in seen.iter_mut().enumerate() {
            let _attached = match variant {
                1 => Some(Attachment::tracepoint(&classic, id, "timer:hrtimer_start").unwrap()),
                2 => Some(Attachment::raw_tracepoint(&raw, "hrtimer_start").unwrap()),
                3 => Some(Attachment::btf_raw_tracepoint(&typed, "hrtimer_start").unwrap()),
                _ => None,
            };
            costs.push(cheapest_ns_per_call());
        }
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut seen[0]);
    for (name, costs) in names.iter().zip(seen.iter_mut()) {
        let m = median(costs);
        eprintln!("{name:8} {m:7.1} ns per hrtimer_start ({:+.1})", m - base);
    }
}

/// The counters read with BPF_OBJ_GET_INFO_BY_FD are the ones the kernel
/// prints in the program's fdinfo (this checks the structure offsets).
#[test]
fn program_stats_agree_with_fdinfo() {
    need_bpf!("program_stats_agree_with_fdinfo");
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let map = Map::create(MapKind::Array, "test", 64, cpus() as u32, BPF_F_MMAPABLE).unwrap();
    let program = Program::load(
        ProgramKind::Tracepoint,
        "test_stats",
        &counter(&map, 8, None),
    )
    .unwrap();
    let id = tracepoint_id(&tracefs, "sched", "sched_switch").unwrap();
    let counting = sys::count_run_time().unwrap();
    let attached = Attachment::tracepoint(&program, id, "sched:sched_switch").unwrap();
    // Switches of our own, at least.
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(attached);
    drop(counting);
    let fdinfo = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", program.fd())).unwrap();
    let value = |key: &str| -> u64 {
        fdinfo
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or_else(|| panic!("no {key} in {fdinfo}"))
    };
    let stats = program.stats().unwrap();
    assert_eq!(u64::from(stats.id), value("prog_id"), "{fdinfo}");
    assert_eq!(stats.run_time_ns, value("run_time_ns"), "{fdinfo}");
    assert_eq!(stats.run_cnt, value("run_cnt"), "{fdinfo}");
    assert_eq!(
        stats.recursion_misses,
        value("recursion_misses"),
        "{fdinfo}"
    );
    assert!(stats.run_cnt >= 20 && stats.run_time_ns > 0, "{stats:?}");
}
