//! Memory: transparent huge pages and swap, the two ways memory management
//! reaches into a running real-time task.

use super::{Machine, of};
use crate::report::Check;
use crate::units::format_bytes;

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// The selected word of a sysfs choice line: `always [madvise] never` -> `madvise`.
fn selected(choices: &str) -> Option<String> {
    let start = choices.find('[')?;
    let end = choices[start..].find(']')?;
    Some(choices[start + 1..start + end].to_string())
}

pub fn transparent_hugepages(m: &Machine) -> Check {
    let check = of("memory.thp", "transparent huge pages");
    let enabled = m.read(format!("{THP}/enabled")).and_then(|t| selected(&t));
    let defrag = m.read(format!("{THP}/defrag")).and_then(|t| selected(&t));
    let Some(enabled) = enabled else {
        return check.ok("not built in", "this kernel has no transparent huge pages");
    };
    let defrag = defrag.unwrap_or_else(|| "unknown".to_string());
    let value = format!("enabled {enabled}, defrag {defrag}");
    if enabled == "always" || defrag == "always" {
        check.warn(
            value,
            "with huge pages for every process, page faults may stop to compact memory and khugepaged rewrites page tables under running tasks: millisecond stalls",
            format!("echo never > {THP}/enabled; echo never > {THP}/defrag (or boot with transparent_hugepage=never)"),
        )
    } else {
        check.ok(
            value,
            "only programs that ask for huge pages (madvise) get them",
        )
    }
}

/// (devices, total bytes) of active swap.
fn swap_devices(m: &Machine) -> (usize, u64) {
    let text = m.read("/proc/swaps").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .fold((0, 0), |(n, total), kib| (n + 1, total + kib * 1024))
}

pub fn swap(m: &Machine) -> Check {
    let check = of("memory.swap", "swap");
    let (devices, bytes) = swap_devices(m);
    if devices == 0 {
        return check.ok("none", "no page is ever swapped out");
    }
    let swappiness = m
        .read("/proc/sys/vm/swappiness")
        .unwrap_or_else(|| "unknown".to_string());
    check.warn(
        format!(
            "{} on {devices} device{}, swappiness {swappiness}",
            format_bytes(bytes),
            if devices == 1 { "" } else { "s" }
        ),
        "pages of a process that did not lock its memory can be swapped out; touching one again costs milliseconds",
        "lock the real-time process's memory (mlockall; latscope does), or swapoff -a",
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;
    use crate::report::Verdict;

    #[test]
    fn huge_page_modes() {
        let f = Fixture::empty();
        assert_eq!(transparent_hugepages(&f.machine()).value, "not built in");
        f.file(&format!("{THP}/enabled"), "always [madvise] never\n")
            .file(
                &format!("{THP}/defrag"),
                "always defer defer+madvise [madvise] never\n",
            );
        let c = transparent_hugepages(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Ok, "enabled madvise, defrag madvise")
        );
        f.file(
            &format!("{THP}/defrag"),
            "[always] defer defer+madvise madvise never\n",
        );
        assert_eq!(transparent_hugepages(&f.machine()).verdict, Verdict::Warn);
        f.file(&format!("{THP}/enabled"), "[always] madvise never\n")
            .file(&format!("{THP}/defrag"), "always [never]\n");
        let c = transparent_hugepages(&f.machine());
        assert_eq!(
            (c.verdict, c.value.as_str()),
            (Verdict::Warn, "enabled always, defrag never")
        );
    }

    #[test]
    fn swap_devices_and_size() {
        let f = Fixture::empty();
        f.file("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
        assert_eq!(swap(&f.machine()).verdict, Verdict::Ok);
        f.file(
            "/proc/swaps",
            "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition 1048576 0 -2\n/swapfile file 524288 0 -3\n",
        )
        .file("/proc/sys/vm/swappiness", "60\n");
        let c = swap(&f.machine());
        assert_eq!(c.verdict, Verdict::Warn);
        assert_eq!(c.value, "1.5 GiB on 2 devices, swappiness 60");
    }
}
