//! `--breakdown` in the HTML report: per sampling thread, where each
//! wake-up's latency was spent (the console's table, from
//! `cells::breakdown`), the parts left out and why, the collector and the
//! counts of wake-ups traced in part.

use super::escape;
use crate::report::TestResult;
use crate::report::cells::breakdown::{breakdown_table, collector_line};
use std::fmt::Write;

/// The breakdown section of `test`, prefixed by `who` (the run, when
/// several); empty without `--breakdown`.
pub fn section(who: &str, test: &TestResult) -> String {
    let Some(table) = breakdown_table(test) else {
        return String::new();
    };
    let mut out = format!(
        "<h3>{}Where the latency was spent (--breakdown)</h3>\n<p class=\"note\">From the \
         timer's expiry: IRQ = the timer interrupt handler starts, Sched = the thread is \
         scheduled in, Return = the thread is back in user space (then it reads the clock: \
         the table above).</p>\n<table class=\"summary breakdown\">\n<tr>",
        escape(who)
    );
    for (i, name) in table.head.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", escape(name));
    }
    out.push_str("</tr>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i == 0 { " class=\"l\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let counts = test
        .series
        .iter()
        .filter_map(|s| Some((s, s.timer_thread()?.breakdown.as_ref()?)))
        .map(|(s, b)| {
            format!(
                "{}: {} traced, {} without a traced switch-in, {} traced in part, {} events lost",
                s.label, b.traced_wakeups, b.without_sched_in, b.incomplete_wakeups, b.events_lost
            )
        });
    let notes: Vec<String> = table
        .left_out
        .into_iter()
        .chain(collector_line(test))
        .chain(counts)
        .collect();
    for note in notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::cells::breakdown::tests::with_breakdown;

    #[test]
    fn the_split_per_thread_with_the_parts_left_out_and_why() {
        let report = with_breakdown("bpf");
        let html = section("", &report.tests[0]);
        assert!(html.contains("<th>IRQ p50</th>") && html.contains("<th>Sched max</th>"));
        assert!(!html.contains("Return p50"), "{html}");
        assert!(
            html.contains("<td class=\"l\">CPU 1</td><td>3</td><td>2.00 us</td>"),
            "{html}"
        );
        assert!(
            html.contains("Return left out: the bpf collector"),
            "{html}"
        );
        assert!(html.contains("collector: bpf"), "{html}");
        assert!(html.contains("CPU 0: 3 traced, 0 without a traced switch-in, 1 traced in part"));
        let tracefs = section("run 2: ", &with_breakdown("tracefs").tests[0]);
        assert!(tracefs.contains("<th>Return max</th><"), "{tracefs}");
        assert!(
            tracefs.contains("<h3>run 2: Where the latency"),
            "{tracefs}"
        );
    }
}
