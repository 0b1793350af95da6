//! The CPU time the `--load` generators use, so that a test's validity check
//! can tell the load the user asked for from other work on the measured CPUs.
//!
//! Each generator runs in a process group of its own, led by a direct child of
//! latscope (`process`): the groups led by a child of ours are the loads (the
//! forked IPC peers stay in latscope's group). A group's CPU time is the sum,
//! over its live members, of their own time and that of the children they have
//! reaped (`/proc/PID/stat` utime, stime, cutime, cstime): a stress-ng worker
//! that ends moves its time into its parent's cutime, so the sum stays whole.
//! The generators themselves are reaped by latscope only after the
//! measurement, so the difference of two readings around a test is the load's
//! work during it.

use crate::rt::procstat;
use std::fs;

/// The fields of `/proc/PID/stat` this needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
}

/// Reads one `/proc/PID/stat` line: fields 1 (pid), 4 (ppid), 5 (pgrp) and
/// 14 to 17 (utime, stime, cutime, cstime).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let id = |n: usize| i32::try_from(procstat::number(text, n)?).ok();
    let ticks = (14..=17)
        .map(|n| procstat::number(text, n).map(|t| t.max(0) as u64))
        .sum::<Option<u64>>()?;
    Some(ProcStat {
        pid: id(1)?,
        ppid: id(4)?,
        pgrp: id(5)?,
        ticks,
    })
}

/// Clock ticks of the process groups led by a child of `parent` (other than
/// `parent`'s own group), over `processes`; `None` when there is no such group.
pub fn child_groups_ticks(processes: &[ProcStat], parent: i32, own_group: i32) -> Option<u64> {
    let leaders: Vec<i32> = processes
        .iter()
        .filter(|p| p.ppid == parent && p.pgrp == p.pid && p.pgrp != own_group)
        .map(|p| p.pid)
        .collect();
    if leaders.is_empty() {
        return None;
    }
    Some(
        processes
            .iter()
            .filter(|p| leaders.contains(&p.pgrp))
            .map(|p| p.ticks)
            .sum(),
    )
}

/// CPU seconds the `--load` generators of this process have used so far
/// (`None` when none runs). Reads every `/proc/PID/stat`: a few
/// milliseconds, taken before and after a measurement, never during it.
pub fn load_cpu_seconds() -> Option<f64> {
    let dir = fs::read_dir("/proc").ok()?;
    let processes: Vec<ProcStat> = dir
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_stat(&text))
        .collect();
    // SAFETY: plain queries of this process's ids.
    let (me, group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    child_groups_ticks(&processes, me, group).map(|t| t as f64 / ticks_per_s)
}

/// The load's CPU seconds between two readings of `load_cpu_seconds`.
pub fn used_between(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    after.map(|a| (a - before.unwrap_or(0.0)).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_blanks_and_parentheses() {
        let line = "4242 (stress-ng (cpu) x) R 4200 4242 4100 0 -1 4194560 120 0 0 0 \
                    731 12 40 3 20 0 1 0 5000 0 0 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 4242,
                ppid: 4200,
                pgrp: 4242,
                ticks: 731 + 12 + 40 + 3,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("12 (short) S 1 12"), None);
    }

    #[test]
    fn only_the_groups_led_by_our_children_count() {
        let p = |pid, ppid, pgrp, ticks| ProcStat {
            pid,
            ppid,
            pgrp,
            ticks,
        };
        let me = 100;
        let processes = [
            p(100, 1, 100, 1_000), // latscope itself
            p(101, 100, 100, 500), // a forked IPC peer: latscope's group
            p(200, 100, 200, 30),  // stress-ng, its own group
            p(201, 200, 200, 400), // its workers
            p(202, 200, 200, 410),
            p(300, 100, 300, 900), // hackbench, its own group
            p(400, 1, 400, 7_000), // another program's group
            p(401, 400, 400, 7_000),
            p(500, 401, 200, 5), // joined a load's group: still the load
        ];
        assert_eq!(
            child_groups_ticks(&processes, me, 100),
            Some(30 + 400 + 410 + 900 + 5)
        );
        assert_eq!(child_groups_ticks(&processes[..2], me, 100), None);
        assert_eq!(used_between(Some(1.5), Some(4.0)), Some(2.5));
        assert_eq!(used_between(None, None), None);
    }
}
