//! What `latscope hwlat` (and the `hwlatdetect` name) can do here: which
//! tier classifies the gaps (the decision `--tier auto` and hwlatdetect's
//! `detector:` take, `probes::interference::tier`, on this machine's files
//! and probes) and whether SMIs can be counted (`rt::smi`, the decision
//! the run takes). Nothing is loaded beyond the bpf() probe the tracing
//! checks also make.

use super::{Machine, of};
use crate::probes::interference::tier::{Tier, TierFacts};
use crate::report::Check;
use crate::rt::smi::{SmiCounting, SmiFacts};

/// The tier facts of `m`: its files, its process's uid and capabilities,
/// its bpf() probe.
fn tier_facts<'a>(
    m: &'a Machine,
    try_bpf: &'a dyn Fn() -> Result<(), crate::rt::bpf::probe::Unavailable>,
) -> TierFacts<'a> {
    TierFacts {
        root: m.root(),
        is_root: m.effective_uid() == Some(0),
        bpf: crate::rt::bpf::probe::Facts::read_at(
            m.root(),
            &m.probes.uname().release,
            m.effective_capabilities(),
        ),
        try_bpf,
    }
}

pub fn tier(m: &Machine) -> Check {
    let check = of("hwlat.tier", "hwlat tier");
    let try_bpf = || m.probes.bpf().map_err(crate::rt::bpf::probe::Unavailable);
    let decision = tier_facts(m, &try_bpf).available();
    let why = decision.fallback.as_deref().unwrap_or_default();
    match decision.tier {
        Tier::Bpf => check.ok(
            "bpf",
            "latscope hwlat and hwlatdetect classify each gap by itself, with an interference counter in the kernel",
        ),
        Tier::Tracefs => check.ok(
            format!("tracefs ({why})"),
            "latscope hwlat and hwlatdetect classify each gap by itself, from a private trace instance (more costly per event than bpf)",
        ),
        Tier::Unprivileged => check.warn(
            format!("unprivileged ({why})"),
            "latscope hwlat and hwlatdetect can only classify 0.5 ms windows from /proc, not each gap, and lose about a tenth of the time spun to reading it",
            fix_for(why),
        ),
    }
}

pub fn smi(m: &Machine) -> Check {
    let check = of("hwlat.smi", "SMI counting");
    let try_perf = |event: &crate::rt::pmu::PmuEvent, cpu| m.probes.perf(event, cpu);
    let facts = SmiFacts {
        root: m.root(),
        intel_family_6_with_msr: m.probes.intel_family_6_with_msr(),
        try_perf: &try_perf,
    };
    let counted = "SMIs are counted per CPU over a run: hwlat and hwlatdetect say how many came";
    match crate::rt::smi::decide(&m.cpus_online(), &facts) {
        SmiCounting::Perf(event) => check.ok(format!("perf's {} event", event.name), counted),
        SmiCounting::Msr => check.ok("MSR_SMI_COUNT (/dev/cpu/N/msr at 0x34)", counted),
        SmiCounting::NotCountable(why) if facts.could_count() => check.warn(
            format!("no: {why}"),
            "this machine has an SMI count, but it cannot be read: hardware gaps cannot be told to be SMIs",
            "run as root (or grant CAP_PERFMON); for the MSR, modprobe msr",
        ),
        SmiCounting::NotCountable(why) => check.ok(
            format!("no: {why}"),
            "this processor and kernel give no SMI count: hwlat's hardware gaps stay firmware, SMI or hypervisor time, unnamed",
        ),
    }
}

/// What to do when only the unprivileged tier runs, for why the others
/// cannot (`bpf: ...; tracefs: ...`).
fn fix_for(why: &str) -> &'static str {
    if why.contains("not permitted") || why.contains("needs root") {
        "run as root, or grant CAP_BPF and CAP_PERFMON"
    } else {
        super::tracing::bpf_fix(why)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    const ROOT: &str = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n";
    const USER: &str = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n";
    /// Root without CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON (setpriv's).
    const ROOT_WITHOUT_BPF: &str = "Uid:\t0\t0\t0\t0\nCapEff:\t0000000000000000\n";

    /// tracefs with the tracefs tier's events, in the kernel's format text.
    fn with_tracefs(f: &Fixture) {
        let events = crate::probes::interference::tier::base_events();
        f.tracefs("nop\n", &events);
        for (system, event, text) in [
            (
                "sched",
                "sched_switch",
                include_str!("../rt/tracefs/testdata/sched_switch.format"),
            ),
            (
                "irq",
                "irq_handler_entry",
                include_str!("../rt/tracefs/testdata/irq_handler_entry.format"),
            ),
            (
                "irq",
                "irq_handler_exit",
                include_str!("../rt/tracefs/testdata/irq_handler_exit.format"),
            ),
            (
                "irq",
                "softirq_entry",
                include_str!("../rt/tracefs/testdata/softirq_entry.format"),
            ),
            (
                "irq",
                "softirq_exit",
                include_str!("../rt/tracefs/testdata/softirq_exit.format"),
            ),
        ] {
            f.file(
                &format!("/sys/kernel/tracing/events/{system}/{event}/format"),
                text,
            );
        }
    }

    #[test]
    fn the_tier_auto_takes_here_and_why_not_a_better_one() {
        let mut f = Fixture::empty();
        with_tracefs(&f);
        f.file("/proc/self/status", ROOT);
        let c = tier(&f.machine());
        assert_eq!((c.verdict, c.value.as_str()), (Verdict::Ok, "bpf"));
        // Root without the BPF capabilities: the trace instance.
        f.file("/proc/self/status", ROOT_WITHOUT_BPF);
        let c = tier(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(
            c.value,
            "tracefs (bpf: not permitted: needs CAP_BPF and CAP_PERFMON (or root))"
        );
        // A format the decoder cannot use is the tracefs tier's refusal too.
        f.file(
            "/sys/kernel/tracing/events/irq/softirq_entry/format",
            "name: softirq_entry\n",
        );
        let c = tier(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert!(
            c.value.starts_with("unprivileged (bpf: not permitted"),
            "{c:?}"
        );
        assert!(c.value.contains("; tracefs: "), "{c:?}");
        // An ordinary user.
        with_tracefs(&f);
        f.file("/proc/self/status", USER);
        let c = tier(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert!(
            c.value.starts_with(
                "unprivileged (bpf: not permitted: needs CAP_BPF and CAP_PERFMON (or root); tracefs: kernel tracing needs root"
            ),
            "{c:?}"
        );
        assert_eq!(
            c.fix.as_deref(),
            Some("run as root, or grant CAP_BPF and CAP_PERFMON")
        );
        // The counter's own kernel floor (BPF_FETCH), then what only the
        // system call tells: the run's checks, on this machine's facts.
        f.file("/proc/self/status", ROOT);
        f.probes.uname.release = "5.10.0".into();
        let c = tier(&f.machine());
        assert!(
            c.value
                .starts_with("tracefs (bpf: kernel 5.10.0 is older than 5.12"),
            "{c:?}"
        );
        f.probes.uname.release = "6.18.0".into();
        f.probes.bpf = Err("no bpf() system call (CONFIG_BPF_SYSCALL unset)".into());
        let c = tier(&f.machine());
        assert_eq!(
            c.value,
            "tracefs (bpf: no bpf() system call (CONFIG_BPF_SYSCALL unset))"
        );
    }

    /// The msr PMU (with or without `smi`) and MSR devices of CPUs 0-1.
    fn smi_machine(smi_event: bool, msr: bool) -> Fixture {
        let f = Fixture::empty();
        f.file("/sys/devices/system/cpu/online", "0-1\n")
            .file("/sys/bus/event_source/devices/msr/type", "9\n")
            .file(
                "/sys/bus/event_source/devices/msr/format/event",
                "config:0-63\n",
            )
            .file(
                "/sys/bus/event_source/devices/msr/events/tsc",
                "event=0x00\n",
            );
        if smi_event {
            f.file(
                "/sys/bus/event_source/devices/msr/events/smi",
                "event=0x04\n",
            );
        }
        if msr {
            for cpu in 0..2 {
                f.bytes(&format!("/dev/cpu/{cpu}/msr"), &[0u8; 0x40]);
            }
        }
        f
    }

    #[test]
    fn smis_by_perf_by_the_msr_or_why_not() {
        let mut f = smi_machine(true, true);
        let c = smi(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "perf's msr/smi/ event")
        );
        // perf refused, an Intel family 6 processor with the MSR readable.
        f.probes.perf = Err("perf's msr/smi/ event cannot be opened on CPU 0: Permission denied (needs root or CAP_PERFMON)".into());
        f.probes.intel_family_6 = true;
        let c = smi(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "MSR_SMI_COUNT (/dev/cpu/N/msr at 0x34)")
        );
        // ... without the msr devices: countable here, once fixed.
        let mut f = smi_machine(true, false);
        f.probes.perf = Err("perf's msr/smi/ event cannot be opened on CPU 0: Permission denied (needs root or CAP_PERFMON)".into());
        f.probes.intel_family_6 = true;
        let c = smi(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(
            c.value,
            "no: perf's msr/smi/ event cannot be opened on CPU 0: Permission denied (needs root or CAP_PERFMON), \
             and /dev/cpu/0/msr cannot be read (modprobe msr; root)"
        );
        assert_eq!(
            c.fix.as_deref(),
            Some("run as root (or grant CAP_PERFMON); for the MSR, modprobe msr")
        );
        // This machine's kind: an msr PMU without smi, not Intel family 6.
        let f = smi_machine(false, false);
        let c = smi(&f.machine());
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(
            c.value,
            "no: perf's msr PMU has no smi event, and the processor is not an Intel family 6 one, \
             which alone has the SMI count MSR"
        );
        assert!(c.meaning.contains("no SMI count"), "{c:?}");
    }
}
