//! The modern tables of a timer test: one row per sampling thread (and their
//! merge), and with `--breakdown` where each wake-up's latency was spent.

use super::fitted;
use crate::report::TestResult;
use crate::report::cells::latency_cells;
use crate::report::cells::{Table, cpus_cell};
use crate::units::format_ns;

/// One row per thread; an `all` row when there are several.
pub fn thread_table(test: &TestResult) -> Table {
    let mut table = Table::new(&[
        "Thread", "CPU", "Prio", "Period", "Samples", "Overruns", "Msw", "Min", "Avg", "P50",
        "P99", "P99.9", "Max",
    ])
    .dropping(&["P50", "P99.9", "Period", "Prio", "Avg", "Samples", "Msw"]);
    let mut overruns = 0;
    let mut msw = 0;
    for s in &test.series {
        let Some(t) = s.timer_thread() else { continue };
        overruns += s.overruns;
        msw += t.msw;
        let mut row = vec![
            s.label.clone(),
            cpus_cell(s),
            format!("{} {}", s.policy, s.priority),
            format_ns(t.period_us.saturating_mul(1000) as i64),
            s.latency.samples.to_string(),
            s.overruns.to_string(),
            t.msw.to_string(),
        ];
        row.extend(latency_cells(&s.latency));
        table.row(row);
    }
    if test.series.len() > 1 {
        let mut row = vec![
            "all".to_string(),
            String::new(),
            String::new(),
            String::new(),
            test.overall.samples.to_string(),
            overruns.to_string(),
            msw.to_string(),
        ];
        row.extend(latency_cells(&test.overall));
        table.row(row);
    }
    table
}

/// With `--breakdown`: per thread, the IRQ, sched-in and return-to-user
/// latency side by side (p50 / p99 / max of each; the user latency is the
/// thread table's), and a line for each part left out, saying why.
pub fn breakdown_table(test: &TestResult) -> Option<(Table, Vec<String>)> {
    let b = crate::report::cells::breakdown::breakdown_table(test)?;
    let head: Vec<&str> = b.head.iter().map(String::as_str).collect();
    // The medians go first, then the p99s: the worst cases stay.
    let mut table = Table::new(&head).dropping(&[
        "IRQ p50",
        "Sched p50",
        "Return p50",
        "Traced",
        "IRQ p99",
        "Sched p99",
        "Return p99",
    ]);
    for row in b.rows {
        table.row(row);
    }
    Some((table, b.left_out))
}

/// `-h` in the modern format: per sampling thread, the non-empty cells of
/// Xenomai's three histograms of the main figure (every sample, each
/// one-second loop's minimum, each loop's maximum) side by side, each cell
/// as the latency range it counts; the last cell also counts everything
/// beyond it.
pub fn write_histograms(test: &TestResult, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for s in &test.series {
        let Some((all, loop_min, loop_max)) = s.timer_thread().and_then(|t| t.xenomai_histograms())
        else {
            continue;
        };
        let bucket = all.bucket_ns();
        let last = all.cells().saturating_sub(1);
        fitted(
            out,
            &format!(
                "Histograms of {} ({} cells of {}; |latency|):",
                s.label,
                all.cells(),
                format_ns(bucket as i64)
            ),
        )?;
        let mut table = Table::new(&["From", "To", "Samples", "Loop minima", "Loop maxima"]);
        let mut cells: Vec<usize> = [all, loop_min, loop_max]
            .iter()
            .flat_map(|h| h.non_empty().map(|(cell, _)| cell))
            .collect();
        cells.sort_unstable();
        cells.dedup();
        for cell in cells {
            let from = bucket.saturating_mul(cell as u64);
            let to = if cell == last {
                "beyond".to_string()
            } else {
                format_ns(bucket.saturating_mul(cell as u64 + 1) as i64)
            };
            table.row(vec![
                format_ns(from as i64),
                to,
                all.count(cell).to_string(),
                loop_min.count(cell).to_string(),
                loop_max.count(cell).to_string(),
            ]);
        }
        write!(out, "{}", table.render())?;
    }
    Ok(())
}
