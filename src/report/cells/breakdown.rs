//! `--breakdown`'s table as the console and the HTML report both show it:
//! per sampling thread, where the wake-up's latency was spent. A part no
//! wake-up has a figure for (the return to user space with the bpf
//! collector, whose programs do not attach to `rseq_update`) is left out,
//! and a line says which and why, from what the Report holds: an empty
//! column said nothing.

use super::{latency_cell, percentile_cell};
use crate::report::{Breakdown, TestResult};
use crate::stats::LatencySummary;

/// One kernel-side part of a wake-up: its column name, what it measures,
/// and its figure in a breakdown.
struct Part {
    name: &'static str,
    what: &'static str,
    figure: fn(&Breakdown) -> &LatencySummary,
}

const PARTS: [Part; 3] = [
    Part {
        name: "IRQ",
        what: "the timer interrupt handler's start",
        figure: |b| &b.irq,
    },
    Part {
        name: "Sched",
        what: "the switch to the thread (sched_switch)",
        figure: |b| &b.thread,
    },
    Part {
        name: "Return",
        what: "the thread's return to user space (rseq_update)",
        figure: |b| &b.return_to_user,
    },
];

/// The breakdown of a timer test, ready to print.
pub struct BreakdownTable {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Why a part is not in the table, one line each.
    pub left_out: Vec<String>,
}

/// The breakdown table of `test`; None without `--breakdown`.
pub fn breakdown_table(test: &TestResult) -> Option<BreakdownTable> {
    let rows: Vec<_> = test
        .series
        .iter()
        .filter_map(|s| Some((s, s.timer_thread()?.breakdown.as_ref()?)))
        .collect();
    let (_, first) = rows.first()?;
    let collector = first.collector.name.as_str();
    let (shown, absent): (Vec<&Part>, Vec<&Part>) = PARTS
        .iter()
        .partition(|p| rows.iter().any(|(_, b)| (p.figure)(b).samples > 0));
    let mut head = vec!["Thread".to_string(), "Traced".to_string()];
    for part in &shown {
        for stat in ["p50", "p99", "max"] {
            head.push(format!("{} {stat}", part.name));
        }
    }
    let rows = rows
        .iter()
        .map(|(s, b)| {
            let mut row = vec![s.label.clone(), b.traced_wakeups.to_string()];
            for part in &shown {
                let l = (part.figure)(b);
                row.push(percentile_cell(l, 50.0));
                row.push(percentile_cell(l, 99.0));
                row.push(latency_cell(l, l.max_ns));
            }
            row
        })
        .collect();
    let left_out = absent
        .iter()
        .map(|p| left_out_line(p, collector, first.traced_wakeups))
        .collect();
    Some(BreakdownTable {
        head,
        rows,
        left_out,
    })
}

/// Why `part` has no column: the bpf collector does not record the return
/// to user space; otherwise no traced wake-up had the part's event.
fn left_out_line(part: &Part, collector: &str, traced: u64) -> String {
    match (part.name, collector) {
        ("Return", "bpf") => format!(
            "Return left out: the bpf collector does not record {} (its programs end at the \
             switch to the thread); --collector tracefs measures it",
            part.what
        ),
        _ if traced == 0 => format!(
            "{} left out: no wake-up was traced whole, so there is no figure for {}",
            part.name, part.what
        ),
        _ => format!(
            "{} left out: the {} trace had no event for {} in any wake-up",
            part.name,
            if collector.is_empty() {
                "kernel"
            } else {
                collector
            },
            part.what
        ),
    }
}

/// Which collector gathered the breakdown, and why not BPF when it did not
/// (`collector: tracefs (bpf: not permitted: ...)`); torn reads are said too.
pub fn collector_line(test: &TestResult) -> Option<String> {
    let breakdowns: Vec<_> = test
        .series
        .iter()
        .filter_map(|s| s.timer_thread()?.breakdown.as_ref())
        .collect();
    let first = breakdowns.first()?;
    if first.collector.name.is_empty() {
        return None;
    }
    let mut line = first.collector.line();
    let torn: u64 = breakdowns.iter().map(|b| b.torn_wakeups).sum();
    let missing: u64 = breakdowns.iter().map(|b| b.incomplete_wakeups).sum();
    let unordered: u64 = breakdowns.iter().map(|b| b.unordered_wakeups).sum();
    let unscheduled: u64 = breakdowns.iter().map(|b| b.unscheduled_wakeups).sum();
    if first.collector.name == "bpf" {
        line.push_str(&format!(
            "; wake-ups read torn: {torn}, not recorded whole: {missing}"
        ));
        if unscheduled > 0 {
            line.push_str(&format!(
                " ({unscheduled} woken before they slept: no scheduling)"
            ));
        }
        if unordered > 0 {
            line.push_str(&format!(", figures out of order: {unordered}"));
        }
    }
    Some(line)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::testdata::timer_report;
    use crate::stats::LatencyRecorder;

    fn summary(values: &[i64]) -> LatencySummary {
        let mut r = LatencyRecorder::signed();
        values.iter().for_each(|&v| r.record(v));
        r.summary()
    }

    /// The timer report with a breakdown on each thread by `collector`:
    /// IRQ 1-3 us, Sched 4-6 us, and Return 7-9 us unless bpf.
    pub fn with_breakdown(collector: &str) -> crate::report::Report {
        let mut report = timer_report();
        let bpf = collector == "bpf";
        for s in &mut report.tests[0].series {
            let crate::report::SeriesDetail::TimerThread(t) = &mut s.detail else {
                unreachable!()
            };
            t.breakdown = Some(Breakdown {
                source: format!("{collector} events"),
                irq: summary(&[1_000, 2_000, 3_000]),
                thread: summary(&[4_000, 5_000, 6_000]),
                return_to_user: summary(if bpf { &[] } else { &[7_000, 8_000, 9_000] }),
                user: summary(&[10_000]),
                traced_wakeups: 3,
                without_sched_in: 0,
                incomplete_wakeups: 1,
                events_lost: 0,
                collector: Default::default(),
                torn_wakeups: 0,
                unordered_wakeups: 0,
                unscheduled_wakeups: 0,
            });
            let b = t.breakdown.as_mut().unwrap();
            b.collector.name = collector.to_string();
            if !bpf {
                b.collector.bpf_unavailable = Some("--collector tracefs".to_string());
            }
        }
        report
    }

    #[test]
    fn tracefs_fills_every_part() {
        let report = with_breakdown("tracefs");
        let table = breakdown_table(&report.tests[0]).unwrap();
        assert_eq!(table.head.len(), 2 + 9);
        assert_eq!(table.head[8..], ["Return p50", "Return p99", "Return max"]);
        assert_eq!(
            table.rows[0][..5],
            ["CPU 0", "3", "2.00 us", "3.00 us", "3.00 us"]
        );
        assert!(table.left_out.is_empty());
    }

    #[test]
    fn bpf_leaves_out_the_return_columns_and_says_why() {
        let report = with_breakdown("bpf");
        let table = breakdown_table(&report.tests[0]).unwrap();
        assert_eq!(
            table.head,
            [
                "Thread",
                "Traced",
                "IRQ p50",
                "IRQ p99",
                "IRQ max",
                "Sched p50",
                "Sched p99",
                "Sched max"
            ]
        );
        assert!(table.rows.iter().all(|r| r.len() == table.head.len()));
        assert_eq!(
            table.left_out,
            [
                "Return left out: the bpf collector does not record the thread's return to user \
              space (rseq_update) (its programs end at the switch to the thread); --collector \
              tracefs measures it"
            ]
        );
    }

    #[test]
    fn no_breakdown_no_table() {
        assert!(breakdown_table(&timer_report().tests[0]).is_none());
    }
}
