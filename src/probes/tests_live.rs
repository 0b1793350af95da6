//! Live tests of the programs of every family: they need root (or
//! CAP_BPF + CAP_PERFMON) and a kernel with BPF on trace events; where they
//! cannot run they say so with a counted skip (`crate::testing::skip`).

use super::hook::{AttachWay, Event, KernelTypes, hook};
use super::listings::{Facts, recorder_events};
use super::wakeups::{Arming, TimerProgram};
use crate::rt::bpf::btf;
use crate::rt::bpf::{Alu, Asm, BPF_F_MMAPABLE, Insn, Map, MapKind, Reg};

/// Returns from the test, with a counted skip, where BPF cannot run.
macro_rules! need_bpf {
    ($test:expr) => {
        if crate::rt::bpf::skip_without_bpf(concat!("probes::tests_live::", $test)) {
            return;
        }
    };
}

fn cpus() -> usize {
    crate::rt::bpf::sys::possible_cpus().unwrap()
}

/// Every program of every family, on every way this kernel offers it,
/// passes this kernel's verifier and attaches (a way the kernel lacks, as
/// `sched_exit_tp` before Linux 6.17, is a counted part skipped).
#[test]
fn every_generated_program_passes_this_kernels_verifier() {
    const TEST: &str = "probes::tests_live::every_generated_program_passes_this_kernels_verifier";
    need_bpf!("every_generated_program_passes_this_kernels_verifier");
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let kernel = KernelTypes::new(&tracefs);
    let map = Map::create(
        MapKind::Array,
        "test_v",
        4096,
        cpus() as u32,
        BPF_F_MMAPABLE,
    )
    .unwrap();
    let facts = Facts::of_kernel(&tracefs, kernel.btf().ok(), map.fd());
    let timer = [
        (TimerProgram::Arm, Arming::Watched),
        (TimerProgram::Expire, Arming::Watched),
        (TimerProgram::Expire, Arming::Inferred),
        (TimerProgram::OnCpu, Arming::Inferred),
        (TimerProgram::Switch, Arming::Watched),
    ];
    let mut hooked = 0;
    for (program, arming) in timer {
        let event = program.event();
        for way in AttachWay::ALL {
            let switch_in = matches!(program, TimerProgram::OnCpu | TimerProgram::Switch);
            if (switch_in && way != AttachWay::RawTracepoint)
                || (way == AttachWay::Tracepoint && arming == Arming::Inferred)
            {
                continue;
            }
            let result = hook(&kernel, event, &[way], &mut |way, view| {
                let access = if switch_in {
                    super::wakeups::EventAccess::Untyped
                } else {
                    super::wakeups::access_for(event.name, way, view)?
                };
                program.generate(map.fd(), &access, arming)
            });
            match result {
                Ok(_) => hooked += 1,
                Err(e)
                    if program == TimerProgram::OnCpu
                        && e.to_string().contains("cannot attach") =>
                {
                    crate::testing::skip_part(TEST, "sched_exit_tp", &e.to_string());
                }
                Err(e) => panic!("{} on {}: {e}", event.program, way.label()),
            }
        }
    }
    let region = super::recorder::layout::Region::with_slots(8);
    let big = Map::create(
        MapKind::Array,
        "test_r",
        region.size(),
        cpus() as u32,
        BPF_F_MMAPABLE,
    )
    .unwrap();
    for (system, name) in recorder_events() {
        if !tracefs.join("events").join(system).join(name).exists() {
            crate::testing::skip_part(TEST, name, "this kernel has no such event");
            continue;
        }
        for way in super::recorder::load::LADDER {
            let event = Event {
                system,
                name,
                program: name,
            };
            hook(&kernel, event, &[way], &mut |_, view| {
                super::recorder::load::generate(name, view, &facts.tids, big.fd(), region)
            })
            .unwrap_or_else(|e| panic!("{name} on {}: {e}", way.label()));
            hooked += 1;
        }
    }
    assert!(hooked >= 9 + 14, "{hooked} programs hooked");
}

/// A deliberately broken program (r0 read before it is written) from a
/// test-only generator: the refusal names one file that holds the whole
/// verifier log and the listing, on every way of attaching.
#[test]
fn a_refused_program_leaves_its_log_and_listing_in_one_named_file() {
    need_bpf!("a_refused_program_leaves_its_log_and_listing_in_one_named_file");
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let kernel = KernelTypes::new(&tracefs);
    let ways: Vec<AttachWay> = AttachWay::ALL
        .into_iter()
        .filter(|w| *w == AttachWay::Tracepoint || kernel.btf().is_ok())
        .collect();
    for way in ways {
        let event = Event {
            system: "sched",
            name: "sched_switch",
            program: "t_broken",
        };
        let err = hook(&kernel, event, &[way], &mut |_, _| {
            let mut asm = Asm::new();
            asm.note("a deliberate bug: r0 is read before it is written")
                .push(Insn::alu64_imm(Alu::Add, Reg::R0, 1))
                .push(Insn::exit());
            Ok(asm.finish()?)
        })
        .expect_err("the verifier refuses it");
        let line = err.to_string();
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(
            line.starts_with("the verifier refused latscope_t_broken: "),
            "{line}"
        );
        let path = line
            .split("verifier log and listing in ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no file named: {line}"));
        let text = std::fs::read_to_string(path).unwrap();
        std::fs::remove_file(path).unwrap();
        assert!(text.contains(&format!("({})", way.label())), "{text}");
        assert!(
            text.contains("; a deliberate bug: r0 is read before it is written\n   0: (07) r0 += 1\n   1: (95) exit\n"),
            "{text}"
        );
        let log = text.split("== verifier log ==\n").nth(1).unwrap();
        assert!(log.contains("R0 !read_ok"), "the whole log: {log}");
        assert!(log.lines().count() >= 2, "more than the last line: {log}");
    }
}

/// The wake-ups of this thread, pinned and SCHED_FIFO, on a 1 ms schedule,
/// with the timer programs on `path`: (complete, torn, missing) of
/// `wakeups`, and the events the programs ran on. An expiry already close
/// when the thread would sleep for it is skipped, not counted: no timer is
/// armed for it, so no record could be.
fn wakeups_seen(path: AttachWay, arming: Arming, wakeups: u64) -> ((u64, u64, u64), String) {
    use super::wakeups::{SlotRead, TracedThread, WakeupSlots};
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let cpu = *crate::rt::sched::allowed_cpus().last().unwrap();
    crate::rt::sched::pin_current_thread(cpu).unwrap();
    use crate::rt::sched::{Policy, set_current_thread_policy};
    set_current_thread_policy(Policy::Fifo, 50).unwrap();
    let period = 1_000_000;
    let first = crate::rt::clock::monotonic_ns() + 20 * period;
    let thread = TracedThread {
        tid: crate::rt::sched::current_tid(),
        cpu,
        first_expiry_ns: first,
        period_ns: period,
    };
    let slots = WakeupSlots::start_on(&tracefs, &[thread], &[path], arming)
        .unwrap_or_else(|e| panic!("{path:?}, {arming:?}: {e}"));
    let reader = slots.reader(cpu).unwrap();
    let mut seen = (0, 0, 0);
    let mut expiry = first;
    while seen.0 + seen.1 + seen.2 < wakeups {
        expiry += period;
        if expiry < crate::rt::clock::monotonic_ns() + period / 4 {
            continue;
        }
        crate::rt::clock::sleep_until_ns(expiry);
        match reader.read(expiry) {
            SlotRead::Complete { irq_ns, switch_ns } => {
                assert!(
                    expiry <= irq_ns && irq_ns <= switch_ns,
                    "{path:?}: {expiry} {irq_ns} {switch_ns}"
                );
                seen.0 += 1;
            }
            // Counted, never a missing record: a torn read, or a thread held
            // off its CPU (by another test's real-time thread) until its
            // timer had fired before it slept.
            SlotRead::Torn | SlotRead::Unscheduled { .. } => seen.1 += 1,
            SlotRead::Missing => seen.2 += 1,
        }
    }
    set_current_thread_policy(Policy::Other, 0).unwrap();
    (seen, slots.source.clone())
}

#[test]
fn every_event_path_records_every_wake_up() {
    need_bpf!("every_event_path_records_every_wake_up");
    // Where the scheduler's exit hook is, the raw paths run without an
    // arming program; each path is also tried with one (what a kernel
    // without the hook runs), and the classic path always has one.
    let has_exit_hook = std::path::Path::new("/sys/kernel/btf/vmlinux").exists()
        && btf::Btf::vmlinux().is_ok_and(|b| b.tracepoint("sched_exit_tp").is_ok());
    for path in AttachWay::ALL {
        if path != AttachWay::Tracepoint && !std::path::Path::new(btf::VMLINUX).exists() {
            crate::testing::skip_part(
                "probes::tests_live::every_event_path_records_every_wake_up",
                path.label(),
                &format!("no {} (a kernel without BTF)", btf::VMLINUX),
            );
            continue;
        }
        for arming in [Arming::Inferred, Arming::Watched] {
            // Up to 3 rounds of 50, the best kept: a loaded machine's other
            // real-time threads can spoil one round (8 of 50 not whole in
            // one CI run at load average 17, the other tests' threads on the
            // CPU), while a path that cannot record fails all three.
            let mut best = wakeups_seen(path, arming, 50);
            for _ in 1..3 {
                if best.0.0 >= 45 {
                    break;
                }
                let next = wakeups_seen(path, arming, 50);
                if next.0.0 > best.0.0 {
                    best = next;
                }
            }
            let ((complete, torn, missing), source) = best;
            let what = format!("{path:?}, {arming:?} ({source})");
            // A torn read needs an interrupt's program between two loads of
            // one cache line: rare, and counted; so is a wake-up whose timer
            // fired before the thread slept. A record not whole for another
            // reason is counted too (the product says "not recorded whole"):
            // 2 of 50 in two loaded suite runs, none quiet. Each path must
            // record nearly every wake-up whole: 45 of 50 in one round.
            let counts =
                format!("{complete} complete, {torn} torn or unscheduled, {missing} not whole");
            assert!(complete >= 45, "{what}: {counts}");
            let (prefix, watched) = match path {
                AttachWay::TypedRawTracepoint => ("tp_btf", arming == Arming::Watched),
                AttachWay::RawTracepoint => ("raw", arming == Arming::Watched),
                AttachWay::Tracepoint => ("timer", true),
            };
            let watched = watched || !has_exit_hook;
            let expected = if watched {
                format!("bpf on {prefix}:hrtimer_start, {prefix}:hrtimer_expire_entry, ")
            } else {
                format!("bpf on {prefix}:hrtimer_expire_entry, raw:sched_exit_tp")
            };
            assert!(source.starts_with(&expected), "{what}: {expected}");
        }
    }
}

#[test]
fn with_btf_the_cheapest_path_runs() {
    need_bpf!("with_btf_the_cheapest_path_runs");
    if !std::path::Path::new(btf::VMLINUX).exists() {
        crate::testing::skip(
            "probes::tests_live::with_btf_the_cheapest_path_runs",
            &format!("no {} (a kernel without BTF)", btf::VMLINUX),
        );
        return;
    }
    let tracefs = crate::rt::tracefs::mount::find_or_mount().unwrap();
    let slots = super::wakeups::WakeupSlots::start(&tracefs, &[]).unwrap();
    // With the scheduler's exit hook no arming program runs at all.
    let has_exit_hook = btf::Btf::vmlinux().is_ok_and(|b| b.tracepoint("sched_exit_tp").is_ok());
    let expected = if has_exit_hook {
        "bpf on tp_btf:hrtimer_expire_entry, raw:sched_exit_tp"
    } else {
        "bpf on tp_btf:hrtimer_start, "
    };
    assert!(
        slots.source.starts_with(expected),
        "{}: {expected}",
        slots.source
    );
}
