//! `latscope doctor`: is this machine ready for real time? Each check reads
//! one fact of the machine (kernel, CPUs, isolation, scheduling limits,
//! memory, platform, tracing), gives a verdict (ok / warn / bad), the value
//! found, what it means for latency and the fix in one line.
//!
//! The same checks are recorded in every Report's `sysinfo` and the
//! machine-level validity warnings of every test are drawn from them
//! (`commands::validity`): one place decides what a fact means.
//!
//! Every fact is read through a `Machine` (a root directory and a few
//! probes), so each check is tested against fixture `/proc` and `/sys` trees.

pub mod bpf_cost;
pub mod cpu;
pub mod hwlat;
pub mod isolation;
pub mod kernel;
pub mod machine;
pub mod memory;
pub mod platform;
pub mod programs;
pub mod realtime;
pub mod sched;
pub mod tracing;

#[cfg(test)]
pub(crate) mod fixture;

pub use machine::Machine;
// The findings are part of the Report model (every report's sysinfo.checks):
// their types live there and the doctor fills them.
use crate::report::{Check, Verdict};

pub mod sysinfo;
pub mod table;

/// Starts a check: `of("kernel.preemption", "preemption model").bad(...)`.
pub fn of(id: &str, title: &str) -> CheckStart {
    CheckStart {
        id: id.to_string(),
        title: title.to_string(),
    }
}

pub struct CheckStart {
    id: String,
    title: String,
}

impl CheckStart {
    fn with(
        self,
        verdict: Verdict,
        value: impl Into<String>,
        meaning: impl Into<String>,
        fix: Option<String>,
    ) -> Check {
        Check {
            id: self.id,
            title: self.title,
            verdict,
            value: value.into(),
            meaning: meaning.into(),
            fix,
        }
    }

    pub fn ok(self, value: impl Into<String>, meaning: impl Into<String>) -> Check {
        self.with(Verdict::Ok, value, meaning, None)
    }

    pub fn warn(
        self,
        value: impl Into<String>,
        meaning: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        self.with(Verdict::Warn, value, meaning, Some(fix.into()))
    }

    pub fn bad(
        self,
        value: impl Into<String>,
        meaning: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        self.with(Verdict::Bad, value, meaning, Some(fix.into()))
    }
}

/// Every check, in the order the table shows them (grouped).
pub fn run(machine: &Machine) -> Vec<Check> {
    let checks: [fn(&Machine) -> Check; 29] = [
        kernel::preemption,
        kernel::clocksource,
        cpu::governor,
        cpu::turbo,
        cpu::idle,
        cpu::smt,
        isolation::isolcpus,
        isolation::nohz_full,
        isolation::rcu_nocbs,
        isolation::irq_affinity,
        isolation::irqbalance,
        sched::rt_throttling,
        sched::timer_slack,
        realtime::realtime,
        realtime::timer_migration,
        sched::rtprio,
        sched::memlock,
        memory::transparent_hugepages,
        memory::swap,
        platform::virtualization,
        platform::container,
        realtime::quota,
        realtime::pod_irqs,
        tracing::tracefs,
        tracing::tracers,
        tracing::events,
        tracing::bpf,
        hwlat::tier,
        hwlat::smi,
    ];
    checks.iter().map(|check| check(machine)).collect()
}

/// Shortens a list for a table cell: `24, 25, 26 and 9 more`.
pub fn first_few(items: &[String], keep: usize) -> String {
    if items.len() <= keep {
        items.join(", ")
    } else {
        format!(
            "{} and {} more",
            items[..keep].join(", "),
            items.len() - keep
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::Fixture;
    use super::*;
    use crate::report::Summary;
    use crate::units::cpu_list;

    #[test]
    fn lists_for_people() {
        assert_eq!(cpu_list(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(cpu_list(&[5]), "5");
        let items: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(first_few(&items, 3), "a, b, c");
        assert_eq!(first_few(&items, 2), "a, b and 1 more");
    }

    /// The three whole machines: each check's verdict on each.
    #[test]
    fn every_check_on_the_three_fixture_machines() {
        let tuned = run(&Fixture::tuned_rt().machine());
        assert!(
            tuned
                .iter()
                .all(|c| c.verdict == Verdict::Ok && c.fix.is_none()),
            "{tuned:#?}"
        );
        let stock = run(&Fixture::stock_vm().machine());
        let verdict_of = |checks: &[Check], id: &str| {
            checks
                .iter()
                .find(|c| c.id == id)
                .unwrap_or_else(|| panic!("no check {id}"))
                .verdict
        };
        for (id, verdict) in [
            ("kernel.preemption", Verdict::Bad),
            ("kernel.clocksource", Verdict::Ok),
            ("cpu.governor", Verdict::Warn),
            ("cpu.turbo", Verdict::Warn),
            ("cpu.idle", Verdict::Warn),
            ("cpu.smt", Verdict::Warn),
            ("isolation.isolcpus", Verdict::Warn),
            ("isolation.nohz_full", Verdict::Warn),
            ("isolation.rcu_nocbs", Verdict::Warn),
            ("isolation.irq_affinity", Verdict::Ok),
            ("isolation.irqbalance", Verdict::Warn),
            ("sched.rt_throttling", Verdict::Warn),
            ("sched.timer_slack", Verdict::Ok),
            ("sched.realtime", Verdict::Ok),
            ("sched.timer_migration", Verdict::Ok),
            ("limits.rtprio", Verdict::Bad),
            ("limits.memlock", Verdict::Warn),
            ("memory.thp", Verdict::Warn),
            ("memory.swap", Verdict::Warn),
            ("platform.virtualization", Verdict::Warn),
            ("platform.container", Verdict::Warn),
            ("platform.cpu_quota", Verdict::Ok),
            ("platform.pod_irqs", Verdict::Ok),
            ("tracing.tracefs", Verdict::Warn),
            ("tracing.tracers", Verdict::Warn),
            ("tracing.events", Verdict::Warn),
            ("tracing.bpf", Verdict::Warn),
            ("hwlat.tier", Verdict::Warn),
            ("hwlat.smi", Verdict::Ok),
        ] {
            assert_eq!(verdict_of(&stock, id), verdict, "{id}: {stock:#?}");
        }
        assert_eq!(stock.len(), 29);
        assert_eq!(
            Summary::of(&stock),
            Summary {
                ok: 8,
                warn: 19,
                bad: 2
            }
        );
        // Every finding that is not ok says what to do.
        assert!(
            stock
                .iter()
                .all(|c| (c.verdict == Verdict::Ok) == c.fix.is_none())
        );
        let ids: Vec<&str> = stock.iter().map(|c| c.id.as_str()).collect();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(ids, unique, "ids are unique and grouped");
    }
}
