//! JSON exporters: the versioned latscope report, and the rt-tests layouts
//! (pmqtest, sigwaittest, svsematest; oslat) for parsers written against the
//! originals.

use super::cells::{RT_TESTS_VERSION, RtTestsFlavor};
use super::{Exporter, Report};
use crate::units::ns_to_us_rounded;
use crate::units::rfc2822_local;
use serde::Serialize;
use std::io::Write;

/// The latscope report, pretty-printed (schema in docs/json-schema.md).
pub struct LatscopeJson;

impl Exporter for LatscopeJson {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        out.write_all(b"\n")
    }
}

/// The rt-tests IPC tools' `--json` layout (rt-tests `rt_write_json` plus the
/// tool's `write_stats`), including the two keys with a stray colon that
/// existing parsers expect. Values are microseconds as the tools write them.
/// pmqtest writes `timeoutcount` in "receiver"; sigwaittest and svsematest write
/// the same layout without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtTestsJson {
    pub flavor: RtTestsFlavor,
}

impl RtTestsJson {
    pub const fn new(flavor: RtTestsFlavor) -> RtTestsJson {
        RtTestsJson { flavor }
    }
}

#[derive(Serialize)]
struct RtHeader<'a> {
    file_version: u32,
    #[serde(rename = "cmdline:")]
    cmdline: String,
    #[serde(rename = "rt_test_version:")]
    rt_test_version: String,
    start_time: String,
    end_time: String,
    return_code: i32,
    sysinfo: RtSysinfo<'a>,
    num_threads: usize,
    thread: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
struct RtSysinfo<'a> {
    sysname: &'a str,
    nodename: &'a str,
    release: &'a str,
    version: &'a str,
    machine: &'a str,
    realtime: u8,
}

#[derive(Serialize)]
struct RtSender {
    cpu: usize,
    priority: i32,
    samples: u64,
    interval: u64,
}

#[derive(Serialize)]
struct RtReceiver {
    cpu: usize,
    priority: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeoutcount: Option<u64>,
    min: i64,
    avg: f64,
    max: i64,
}

#[derive(Serialize)]
struct RtPair {
    sender: RtSender,
    receiver: RtReceiver,
}

/// rt-tests prints its version as `%1.2f` (e.g. "2.40"); latscope 0.1.x becomes
/// "0.01" so that parsers reading it as a number keep working.
fn rt_style_version(version: &str) -> String {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    format!("{major}.{minor:02}")
}

fn local_time(rfc3339: &str) -> String {
    humantime::parse_rfc3339(rfc3339)
        .map(rfc2822_local)
        .unwrap_or_else(|_| rfc3339.to_string())
}

impl Exporter for RtTestsJson {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        let series: Vec<_> = report
            .tests
            .iter()
            .flat_map(|t| t.series.iter())
            .filter_map(|s| Some((s, s.ipc_pair()?)))
            .collect();
        let mut thread = serde_json::Map::new();
        for (i, (s, p)) in series.iter().enumerate() {
            let avg_us = if s.latency.samples > 0 {
                (s.latency.avg_ns / 10.0).round() / 100.0
            } else {
                0.0
            };
            let pair = RtPair {
                sender: RtSender {
                    cpu: p.sender_cpu,
                    priority: s.priority,
                    samples: p.sent,
                    interval: p.interval_us,
                },
                receiver: RtReceiver {
                    cpu: p.receiver_cpu,
                    priority: s.priority,
                    timeoutcount: self.flavor.with_timeouts().then_some(p.timeouts),
                    min: ns_to_us_rounded(s.latency.min_ns),
                    avg: avg_us,
                    max: ns_to_us_rounded(s.latency.max_ns),
                },
            };
            thread.insert(i.to_string(), serde_json::to_value(pair)?);
        }
        let version = rt_style_version(&report.tool.version);
        write_rt_tests_layout(report, &version, series.len(), thread, out)
    }
}

/// rt-tests' `rt_write_json` for `report`: its header (with the stray
/// colons), then `num_threads` and the tool's `thread` part. Every rt-tests
/// layout of this file (pmqtest's family, oslat's) goes through it;
/// `rt_test_version` is what its `rt_test_version:` says.
fn write_rt_tests_layout(
    report: &Report,
    rt_test_version: &str,
    num_threads: usize,
    thread: serde_json::Map<String, serde_json::Value>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let sys = &report.sysinfo;
    let header = RtHeader {
        file_version: 1,
        cmdline: report.command_line.join(" "),
        rt_test_version: rt_test_version.to_string(),
        start_time: local_time(&report.start_time),
        end_time: local_time(&report.end_time),
        return_code: report.exit_code,
        sysinfo: RtSysinfo {
            sysname: &sys.sysname,
            nodename: &sys.nodename,
            release: &sys.release,
            version: &sys.version,
            machine: &sys.machine,
            realtime: u8::from(sys.preempt_rt),
        },
        num_threads,
        thread,
    };
    serde_json::to_writer_pretty(&mut *out, &header)?;
    out.write_all(b"\n")
}

/// oslat's `--json` layout (rt-tests 2.40 `rt_write_json` plus oslat's
/// `write_summary_json`), from the `OslatCpu` figures of the report. With
/// `-W` as rt-tests 2.8 writes it: `min` and `max` are integers in the
/// scale's unit (ns when the width is not a multiple of 1000), the
/// histogram's keys the rows' labels in us (`%.*f`), `avg` stays in us.
pub struct OslatJson;

impl Exporter for OslatJson {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        use serde_json::{Map, Value, json};
        let threads = report.oslat_cpus();
        let mut thread = Map::new();
        for (i, (cpu, t)) in threads.iter().enumerate() {
            let mut histogram = Map::new();
            for (j, &n) in t.buckets.iter().enumerate() {
                if n > 0 {
                    histogram.insert(t.scale.label(j, t.bias), json!(n));
                }
            }
            // oslat prints `%3lf` (6 decimals) and `%.3f`.
            let rounded = |x: f64, scale: f64| (x * scale).round() / scale;
            let mut one = Map::new();
            one.insert("cpu".into(), json!(cpu));
            one.insert("freq".into(), json!(t.counter_mhz));
            one.insert("min".into(), json!(t.min));
            one.insert("avg".into(), json!(rounded(t.average_us, 1e6)));
            one.insert("max".into(), json!(t.max));
            one.insert("duration".into(), json!(rounded(t.duration_s, 1e3)));
            one.insert("histogram".into(), Value::Object(histogram));
            thread.insert(i.to_string(), Value::Object(one));
        }
        // The drop-in is oslat 2.40 (its version line says so): a script
        // that checks the JSON's version sees the same.
        write_rt_tests_layout(report, RT_TESTS_VERSION, threads.len(), thread, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::sample_report;

    #[test]
    fn loads_and_kernel_log_round_trip_and_older_reports_still_read() {
        let report = crate::report::testdata::with_load_and_kernel_message(sample_report());
        let mut buf = Vec::new();
        LatscopeJson.write(&report, &mut buf).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(value["loads"][0]["stopped_with"], "SIGTERM");
        assert_eq!(value["kernel_log"]["messages"][0]["kind"], "rt_throttling");
        let back: crate::report::Report = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, report);
        let mut older = value;
        let fields = older.as_object_mut().unwrap();
        fields.remove("loads");
        fields.remove("kernel_log");
        let back: crate::report::Report = serde_json::from_value(older).unwrap();
        assert!(back.loads.is_empty() && !back.kernel_log.followed);
    }

    #[test]
    fn rt_tests_layout_and_values() {
        let mut buf = Vec::new();
        RtTestsJson::new(RtTestsFlavor::Pmqtest)
            .write(&sample_report(), &mut buf)
            .unwrap();
        let text = String::from_utf8(buf).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "file_version",
                "cmdline:",
                "rt_test_version:",
                "start_time",
                "end_time",
                "return_code",
                "sysinfo",
                "num_threads",
                "thread"
            ]
        );
        assert_eq!(v["cmdline:"], "latscope mq -l 3 --json \"x\".json");
        assert_eq!(v["rt_test_version:"], "0.01");
        assert_eq!(v["num_threads"], 1);
        let t = &v["thread"]["0"];
        assert_eq!(t["sender"]["cpu"], 1);
        assert_eq!(t["sender"]["priority"], 99);
        assert_eq!(t["sender"]["samples"], 3);
        assert_eq!(t["sender"]["interval"], 100);
        assert_eq!(t["receiver"]["timeoutcount"], 2);
        assert_eq!(t["receiver"]["min"], 2);
        assert_eq!(t["receiver"]["avg"], 3.33);
        assert_eq!(t["receiver"]["max"], 5);
        assert_eq!(v["sysinfo"]["realtime"], 0);
        // Strings are escaped, not pasted: the quotes in the command line survive.
        assert!(text.contains(r#""cmdline:": "latscope mq -l 3 --json \"x\".json""#));
    }

    #[test]
    fn sigwaittest_and_svsematest_layout_has_no_timeoutcount() {
        for flavor in [RtTestsFlavor::Sigwaittest, RtTestsFlavor::Svsematest] {
            let mut buf = Vec::new();
            RtTestsJson::new(flavor)
                .write(&sample_report(), &mut buf)
                .unwrap();
            let text = String::from_utf8(buf).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let t = &v["thread"]["0"];
            let sender: Vec<&str> = t["sender"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(sender, ["cpu", "priority", "samples", "interval"]);
            let receiver: Vec<&str> = t["receiver"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(receiver, ["cpu", "priority", "min", "avg", "max"]);
            assert!(!text.contains("timeoutcount"), "{flavor:?}: {text}");
            assert_eq!(t["receiver"]["avg"], 3.33);
            assert_eq!(v["num_threads"], 1);
        }
    }

    #[test]
    fn pmqtest_receiver_key_order() {
        let mut buf = Vec::new();
        RtTestsJson::new(RtTestsFlavor::Pmqtest)
            .write(&sample_report(), &mut buf)
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let receiver: Vec<&str> = v["thread"]["0"]["receiver"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            receiver,
            ["cpu", "priority", "timeoutcount", "min", "avg", "max"]
        );
    }

    #[test]
    fn version_in_rt_tests_style() {
        assert_eq!(rt_style_version("0.1.0"), "0.01");
        assert_eq!(rt_style_version("2.40.1"), "2.40");
        assert_eq!(rt_style_version("1.12.0"), "1.12");
    }

    #[test]
    fn latscope_json_round_trips() {
        let report = sample_report();
        let mut buf = Vec::new();
        LatscopeJson.write(&report, &mut buf).unwrap();
        let back: Report = serde_json::from_slice(&buf).unwrap();
        assert_eq!(back, report);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["schema"], "latscope-report");
        assert_eq!(v["schema_version"], 3);
        assert_eq!(v["tests"][0]["series"][0]["detail"]["kind"], "ipc_pair");
        assert_eq!(v["tests"][0]["config"]["detail"]["kind"], "ipc");
        assert_eq!(v["tests"][0]["series"][0]["max_ns"], 5_000);
    }

    /// `sample_report` as the oslat drop-in's run of CPU 1 with `figures`.
    fn oslat_report(figures: crate::report::OslatCpu) -> Report {
        let mut report = sample_report();
        report.tests[0].series[0].detail =
            crate::report::SeriesDetail::NoiseCpu(Box::new(crate::report::NoiseCpu {
                cpu: 1,
                tid: 0,
                isolated: false,
                measured_ns: 1_000_000_000,
                noise_ns: 0,
                noise_percent: 0.0,
                loops: 10,
                loops_per_s: 10.0,
                causes: None,
                oslat: Some(figures),
                hardware: None,
            }));
        report
    }

    #[test]
    fn oslats_thread_part_in_2_40s_units_and_with_a_bucket_width() {
        let classic = crate::report::OslatCpu {
            counter_mhz: 2000,
            scale: crate::report::OslatScale::CLASSIC,
            bias: 0,
            buckets: vec![7, 0, 3],
            min: 1,
            max: 12,
            average_us: 2.5,
            duration_s: 1.0,
        };
        let thread = |figures: &crate::report::OslatCpu| {
            let mut buf = Vec::new();
            OslatJson
                .write(&oslat_report(figures.clone()), &mut buf)
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
            assert_eq!(v["num_threads"], 1);
            // oslat 2.40's, as the drop-in's version line.
            assert_eq!(v["rt_test_version:"], "2.40");
            v["thread"]["0"].clone()
        };
        let t = thread(&classic);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"cpu":1,"freq":2000,"min":1,"avg":2.5,"max":12,"duration":1.0,"histogram":{"1":7,"3":3}}"#
        );
        // -W 500: min and max in ns, the histogram's keys in us with 3
        // decimals, avg in us, as rt-tests 2.8 writes them.
        let ns = crate::report::OslatCpu {
            scale: crate::report::OslatScale {
                unit_per_us: 1000,
                bucket_width: 500,
                classic: false,
            },
            min: 412,
            max: 15_873,
            ..classic
        };
        let t = thread(&ns);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"cpu":1,"freq":2000,"min":412,"avg":2.5,"max":15873,"duration":1.0,"histogram":{"0.500":7,"1.500":3}}"#
        );
    }
}
