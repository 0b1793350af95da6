//! `--hdr-log FILE` (issue 21): every window of every series as an
//! HdrHistogram interval log, read back with the hdrhistogram crate's
//! reader and with the Python `hdrhistogram` package (the HdrHistogram
//! family's own tools, as a fleet would merge the logs). The windows of
//! each series must hold the report's samples, window by window, with each
//! window's max equal to the report's to the histogram's precision.
//! The Python part skips (saying why) only when `import hdrh` fails
//! (`pip install hdrhistogram`; .ci/run installs it).

use crate::common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use latscope::pipeline::hdrlog::tag_of;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command as StdCommand;

/// One window as the log has it: its sample count and its max (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
struct LogWindow {
    count: u64,
    max: f64,
}

/// The log's windows per tag, in file order, read with the crate.
fn read_with_crate(path: &Path) -> BTreeMap<String, Vec<LogWindow>> {
    let bytes = std::fs::read(path).expect("the interval log");
    let mut out: BTreeMap<String, Vec<LogWindow>> = BTreeMap::new();
    let (mut start, mut base) = (None, None);
    for entry in IntervalLogIterator::new(&bytes) {
        match entry.expect("a well-formed interval log") {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(w) => {
                let payload = base64::Engine::decode(
                    &base64::engine::general_purpose::STANDARD,
                    w.encoded_histogram(),
                )
                .expect("base64 histogram");
                let h: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut payload.as_slice())
                    .expect("a V2 compressed histogram");
                let tag = w.tag().expect("every line has a tag").as_str().to_string();
                assert!(!tag.contains(' ') && !tag.contains(','), "{tag}");
                assert_eq!(w.max(), h.max() as f64, "the line's max is its histogram's");
                out.entry(tag).or_default().push(LogWindow {
                    count: h.len(),
                    max: w.max(),
                });
            }
        }
    }
    assert!(
        start.is_some() && start == base,
        "StartTime and BaseTime: {start:?} {base:?}"
    );
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains(
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        ),
        "the legend line"
    );
    out
}

const PYTHON_READER: &str = r#"
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600 * 10**9, 2))
out = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    out.setdefault(h.get_tag(), []).append([h.get_total_count(), h.get_max_value()])
print(json.dumps(out))
"#;

/// The log's windows per tag read with the Python package, or None (with
/// the reason printed) when it cannot be imported.
fn read_with_python(path: &Path) -> Option<BTreeMap<String, Vec<LogWindow>>> {
    let importable = StdCommand::new("python3")
        .args(["-c", "import hdrh.log"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !importable {
        println!("SKIP (Python part): python3 cannot import hdrh (pip install hdrhistogram)");
        return None;
    }
    let out = StdCommand::new("python3")
        .args(["-c", PYTHON_READER])
        .arg(path)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: BTreeMap<String, Vec<(u64, f64)>> =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    Some(
        parsed
            .into_iter()
            .map(|(tag, windows)| {
                let windows = windows
                    .into_iter()
                    .map(|(count, max)| LogWindow { count, max })
                    .collect();
                (tag, windows)
            })
            .collect(),
    )
}

/// Every series of `report` against the log's windows of its tag: the
/// windows hold its samples, and window by window (those with their
/// histogram, which every window of a short unstarved run has) the count
/// and the max agree, the log's max being the top of the max's bucket
/// (two significant digits: within 1 %).
fn check_against(report: &Value, log: &BTreeMap<String, Vec<LogWindow>>, reader: &str) {
    let mut tags = 0;
    for test in array_of(&report["tests"], "tests") {
        let (name, mode) = (
            test["test"].as_str().unwrap(),
            test["mode"].as_str().unwrap(),
        );
        for series in array_of(&test["series"], "series") {
            let tag = tag_of(name, mode, series["label"].as_str().unwrap());
            let windows = log
                .get(&tag)
                .unwrap_or_else(|| panic!("{reader}: no windows tagged {tag}: {log:?}"));
            tags += 1;
            let samples = u64_of(&series["samples"], "samples");
            let total: u64 = windows.iter().map(|w| w.count).sum();
            assert_eq!(total, samples, "{reader}: {tag}'s windows hold its samples");
            let json_windows: Vec<&Value> = array_of(&series["per_second"], "per_second")
                .iter()
                .filter(|w| !w["p99_ns"].is_null())
                .collect();
            assert_eq!(
                json_windows.len(),
                windows.len(),
                "{reader}: {tag}'s windows"
            );
            for (w, j) in windows.iter().zip(json_windows) {
                assert_eq!(
                    w.count,
                    u64_of(&j["samples"], "samples"),
                    "{reader}: {tag} {j}"
                );
                let max = i64_of(&j["max_ns"], "max_ns").max(0) as f64;
                assert!(
                    w.max >= max && w.max <= max * 1.01 + 1.0,
                    "{reader}: {tag}: the log's window max {} and the report's {max} ({j})",
                    w.max
                );
            }
        }
    }
    assert!(tags > 0, "no series in the report");
}

/// `latscope ARGV --hdr-log --json`, then both readers against the report.
fn hdr_log_of(argv: &[&str]) {
    let work = tempfile::tempdir().expect("temp dir");
    let (log, json) = (work.path().join("run.hlog"), work.path().join("r.json"));
    let mut cmd = latscope(120);
    cmd.args(argv).arg("--hdr-log").arg(&log).args(mlock_args());
    let (_out, report) = run_with_report(cmd, &json, 0);
    check_against(&report, &read_with_crate(&log), "hdrhistogram crate");
    if let Some(windows) = read_with_python(&log) {
        check_against(&report, &windows, "Python hdrh");
    }
}

#[test]
fn a_timer_run_logs_every_window_of_every_thread() {
    hdr_log_of(&["timer", "-q", "-p", "1000", "-T", "3"]);
}

#[test]
fn an_ipc_run_logs_every_window_of_every_pair() {
    hdr_log_of(&["mq", "-q", "-t", "2", "-D", "3s"]);
}

#[test]
fn an_existing_file_is_replaced_at_the_end_never_truncated_before() {
    let work = tempfile::tempdir().expect("temp dir");
    let log = work.path().join("old.hlog");
    std::fs::write(&log, "not latscope's\n").unwrap();
    let mut cmd = latscope(120);
    cmd.args(["timer", "-q", "-p", "1000", "-T", "2", "--hdr-log"])
        .arg(&log)
        .args(mlock_args());
    let out = run(cmd);
    assert_code(&out, 0);
    let windows = read_with_crate(&log);
    assert!(!windows.is_empty(), "{windows:?}");
    // Only the log is left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 1);
}

#[test]
fn hdr_log_needs_a_file() {
    let mut cmd = latscope(30);
    cmd.args(["timer", "-T", "1", "--hdr-log", "-"]);
    let out = run(cmd);
    assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--hdr-log needs a file name"), "{err}");
}
