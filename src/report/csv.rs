//! `--csv`: one row per series of every test, the same columns for every
//! kind of test (documented in docs/json-schema.md, "CSV"), so that a
//! spreadsheet or a script can gate on any run. Latencies are integer
//! nanoseconds; a cell that does not apply to a kind of series is empty.
//! (mqldt's CSV and latscope's log-disk CSV for `--csvFile` are elsewhere.)

use super::{Exporter, Report, Series, SeriesDetail, TestResult};
use crate::stats::LatencySummary;
use std::io::Write;

/// The columns, in order. Add new ones at the end only.
pub const COLUMNS: [&str; 26] = [
    "test",
    "label",
    "kind",
    "cpus",
    "policy",
    "priority",
    "samples",
    "min_ns",
    "avg_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99.9_ns",
    "p99.99_ns",
    "max_ns",
    "stddev_ns",
    "overruns",
    "mode",
    "above_limit",
    "timeouts",
    "interval_us",
    "block_size",
    "writes",
    "iops",
    "bytes_per_s",
    "end_reason",
];

/// The percentiles in the columns `p50_ns` .. `p99.99_ns`.
const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

pub struct SeriesCsv;

/// The kind of a series, as the JSON's `detail.kind` names it.
fn kind(s: &Series) -> &'static str {
    match s.detail {
        SeriesDetail::IpcPair(_) => "ipc_pair",
        SeriesDetail::TimerThread(_) => "timer_thread",
        SeriesDetail::DiskWriter(_) => "disk_writer",
        SeriesDetail::NoiseCpu(_) => "noise_cpu",
        SeriesDetail::HwlatCpu(_) => "hwlat_cpu",
        SeriesDetail::PiGroup(_) => "pi_group",
    }
}

/// The latency columns `samples` .. `stddev_ns`: empty without samples.
fn latency_cells(l: &LatencySummary) -> Vec<String> {
    let mut cells = vec![l.samples.to_string()];
    if l.samples == 0 {
        cells.extend(std::iter::repeat_n(String::new(), 9));
        return cells;
    }
    cells.push(l.min_ns.to_string());
    cells.push(format!("{:.1}", l.avg_ns));
    for q in PERCENTILES {
        cells.push(l.percentile(q).map_or_else(String::new, |v| v.to_string()));
    }
    cells.push(l.max_ns.to_string());
    cells.push(format!("{:.1}", l.stddev_ns));
    cells
}

fn end_reason(t: &TestResult) -> String {
    serde_json::to_value(t.end_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn series_row(t: &TestResult, s: &Series) -> Vec<String> {
    let none = String::new;
    let cpus: Vec<String> = s.cpus.iter().map(usize::to_string).collect();
    let mut row = vec![
        t.test.clone(),
        s.label.clone(),
        kind(s).to_string(),
        cpus.join(" "),
        s.policy.clone(),
        s.priority.to_string(),
    ];
    row.extend(latency_cells(&s.latency));
    row.push(s.overruns.to_string());
    row.push(t.mode.clone());
    row.push(s.above_limit.to_string());
    let (timeouts, interval) = match &s.detail {
        SeriesDetail::IpcPair(p) => (p.timeouts.to_string(), p.interval_us.to_string()),
        SeriesDetail::TimerThread(th) => (none(), th.period_us.to_string()),
        SeriesDetail::DiskWriter(_)
        | SeriesDetail::NoiseCpu(_)
        | SeriesDetail::HwlatCpu(_)
        | SeriesDetail::PiGroup(_) => (none(), none()),
    };
    row.push(timeouts);
    row.push(interval);
    match s.disk_writer() {
        Some(d) => {
            row.push(d.block_size.to_string());
            row.push(d.writes.to_string());
            row.push(format!("{:.0}", d.iops));
            row.push(format!("{:.0}", d.bytes_per_s));
        }
        None => row.extend(std::iter::repeat_n(none(), 4)),
    }
    row.push(end_reason(t));
    row
}

/// A test without series (it could not start): one row that says so.
fn empty_test_row(t: &TestResult) -> Vec<String> {
    let mut row = vec![
        t.test.clone(),
        String::new(),
        String::new(),
        String::new(),
        t.config.policy.clone(),
        t.config.priority.to_string(),
    ];
    row.extend(latency_cells(&t.overall));
    row.push("0".to_string());
    row.push(t.mode.clone());
    row.extend(std::iter::repeat_n(String::new(), 7));
    row.push(end_reason(t));
    row
}

impl Exporter for SeriesCsv {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(COLUMNS)?;
        for t in &report.tests {
            if t.series.is_empty() {
                w.write_record(empty_test_row(t))?;
            }
            for s in &t.series {
                w.write_record(series_row(t, s))?;
            }
        }
        w.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{
        logdisk_report, sample_report, timer_report, with_a_test_that_did_not_start, written,
    };

    fn csv_of(report: &Report) -> String {
        written(&SeriesCsv, report)
    }

    const HEADER: &str = "test,label,kind,cpus,policy,priority,samples,min_ns,avg_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,stddev_ns,overruns,mode,above_limit,timeouts,interval_us,block_size,writes,iops,bytes_per_s,end_reason\n";

    #[test]
    fn ipc_report() {
        assert_eq!(
            csv_of(&sample_report()),
            format!(
                "{HEADER}mq,pair 0,ipc_pair,1,fifo,99,3,2000,3333.3,3001,5000,5000,5000,5000,5000,1247.2,0,one-way,0,2,100,,,,,loops_done\n"
            )
        );
    }

    #[test]
    fn timer_report_and_quoting() {
        let mut report = timer_report();
        // A label with a comma and a quote is quoted as RFC 4180 says.
        report.tests[0].series[1].label = "CPU 1, \"hot\"".into();
        assert_eq!(
            csv_of(&report),
            format!(
                "{HEADER}timer,CPU 0,timer_thread,0,fifo,99,4,-1000,1750.0,1000,4000,4000,4000,4000,4000,1920.3,0,user,0,,100,,,,,duration_elapsed\n\
                 timer,\"CPU 1, \"\"hot\"\"\",timer_thread,1,fifo,99,4,-1000,1750.0,1000,4000,4000,4000,4000,4000,1920.3,3,user,1,,100,,,,,duration_elapsed\n"
            )
        );
    }

    #[test]
    fn logdisk_report_and_a_test_that_did_not_start() {
        let report = with_a_test_that_did_not_start(logdisk_report());
        assert_eq!(
            csv_of(&report),
            format!(
                "{HEADER}logdisk,writer,disk_writer,,other,0,3,1000000,2000000.0,2000895,3000000,3000000,3000000,3000000,3000000,816496.6,0,dsync,0,,,4096,3,2,8192,loops_done\n\
                 svmq,,,,other,0,0,,,,,,,,,,0,one-way,,,,,,,,error\n"
            )
        );
    }

    #[test]
    fn every_row_has_every_column() {
        for report in [sample_report(), timer_report(), logdisk_report()] {
            let text = csv_of(&report);
            let mut r = csv::Reader::from_reader(text.as_bytes());
            assert_eq!(r.headers().unwrap().len(), COLUMNS.len());
            for row in r.records() {
                assert_eq!(row.unwrap().len(), COLUMNS.len());
            }
        }
    }
}
