//! What differs in configuration between the reports `compare` reads: a
//! FIFO 99 run for 60 s against an unprivileged 10 s one, or a run under
//! `--load` against one without, differ for that alone, and a table of
//! deltas would read as a regression. Each difference is named from the
//! reports themselves (their `tool`, `sysinfo`, `loads` and each common
//! test's `config`), never guessed.

use crate::report::{ConfigDifference, DifferentValue, ReportView, TestView};
use crate::units::cpu_list;
use serde_json::Value;

/// One report's configuration as (what, value) pairs, in a fixed order:
/// the run's, then each of its tests' (named by `test_key`).
fn settings(report: &ReportView) -> Vec<(String, String)> {
    let machine = &report.sysinfo;
    let kernel = if machine.preempt_rt {
        format!("{} (PREEMPT_RT)", machine.release)
    } else {
        machine.release.clone()
    };
    let loads: Vec<&str> = report.loads.iter().map(|l| l.spec.as_str()).collect();
    let mut found = vec![
        ("latscope version".to_string(), report.tool.version.clone()),
        ("host".to_string(), machine.nodename.clone()),
        ("kernel".to_string(), kernel),
        ("clocksource".to_string(), machine.clocksource.clone()),
        ("usable CPUs".to_string(), cpu_list(&machine.cpus_allowed)),
        ("isolated CPUs".to_string(), or_none(&machine.cpus_isolated)),
        (
            "virtualization".to_string(),
            or_none(machine.virtualization.as_deref().unwrap_or("")),
        ),
        ("load".to_string(), or_none(&loads.join(" + "))),
    ];
    for test in &report.tests {
        let key = report.key_of(test);
        found.extend(
            test_settings(test)
                .into_iter()
                .map(|(what, value)| (format!("{key}: {what}"), value)),
        );
    }
    found
}

/// A test's configuration: what every test has, then its kind's `detail`.
fn test_settings(test: &TestView) -> Vec<(String, String)> {
    let config = &test.config;
    let policy = match (config["policy"].as_str(), config["priority"].as_i64()) {
        (Some(p), Some(prio)) if prio != 0 => format!("{p} {prio}"),
        (Some(p), _) => p.to_string(),
        (None, _) => String::new(),
    };
    let mut found = vec![
        ("policy".to_string(), policy),
        ("duration".to_string(), duration(&config["duration_s"])),
        ("loops".to_string(), text(&config["loops"])),
        ("mlockall".to_string(), text(&config["mlockall"])),
        (
            "cpu_dma_latency".to_string(),
            text(&config["cpu_dma_latency"]),
        ),
        (
            "collector".to_string(),
            or_none(test.collector().unwrap_or("")),
        ),
    ];
    if let Some(detail) = config["detail"].as_object() {
        found.extend(
            detail
                .iter()
                .filter(|(name, _)| name.as_str() != "kind")
                .map(|(name, value)| (name.clone(), text(value))),
        );
    }
    found
}

/// A JSON value as a person reads it: text unquoted, lists joined, null
/// as "none".
fn text(value: &Value) -> String {
    match value {
        Value::Null => "none".to_string(),
        Value::String(s) => or_none(s),
        Value::Array(items) => or_none(&items.iter().map(text).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

fn duration(value: &Value) -> String {
    match value.as_f64() {
        Some(s) => format!("{s} s"),
        None => "none".to_string(),
    }
}

fn or_none(text: &str) -> String {
    if text.is_empty() {
        "none".to_string()
    } else {
        text.to_string()
    }
}

/// Every setting whose value is not the same in all `reports` (named by
/// `names`, in the same order), with which report holds which value. A
/// setting only some reports have (a test the other did not run) is not a
/// difference of configuration: compare lists such series apart.
pub fn differences(reports: &[(&str, &ReportView)]) -> Vec<ConfigDifference> {
    let all: Vec<(&str, Vec<(String, String)>)> = reports
        .iter()
        .map(|(name, report)| (*name, settings(report)))
        .collect();
    let Some((_, first)) = all.first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter_map(|(what, _)| {
            let mut values: Vec<DifferentValue> = Vec::new();
            for (name, found) in &all {
                let value = found.iter().find(|(w, _)| w == what)?.1.clone();
                match values.iter_mut().find(|v| v.value == value) {
                    Some(v) => v.reports.push(name.to_string()),
                    None => values.push(DifferentValue {
                        value,
                        reports: vec![name.to_string()],
                    }),
                }
            }
            (values.len() > 1).then(|| ConfigDifference {
                what: what.clone(),
                values,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(
        policy: &str,
        priority: i64,
        duration_s: f64,
        host: &str,
        load: &[&str],
    ) -> ReportView {
        let summary = json!({"samples": 0, "min_ns": 0, "avg_ns": 0.0, "max_ns": 0,
            "stddev_ns": 0.0, "min_at_sample": 0, "max_at_sample": 0, "last_ns": 0,
            "percentiles": [], "histogram": [], "overflow": 0});
        serde_json::from_value(json!({
            "tool": {"name": "latscope", "version": "0.1.0"},
            "sysinfo": {"nodename": host, "release": "6.18.0", "preempt_rt": false,
                "clocksource": "tsc", "cpus_allowed": [0, 1], "cpus_isolated": ""},
            "loads": load.iter().map(|s| json!({"spec": s})).collect::<Vec<_>>(),
            "tests": [{"test": "timer", "mode": "user",
                "config": {"policy": policy, "priority": priority, "loops": null,
                    "duration_s": duration_s, "max_latency_us": null, "mlockall": true,
                    "cpu_dma_latency": "held at 0",
                    "detail": {"kind": "timer", "cpus": [0, 1], "period_us": 1000}},
                "overall": summary, "series": []}]
        }))
        .unwrap()
    }

    fn lines(found: &[ConfigDifference]) -> Vec<String> {
        found.iter().map(ConfigDifference::line).collect()
    }

    #[test]
    fn like_runs_have_no_difference() {
        let a = report("fifo", 99, 60.0, "rig-17", &[]);
        assert!(differences(&[("a.json", &a), ("b.json", &a)]).is_empty());
    }

    #[test]
    fn each_difference_is_named_with_who_holds_which_value() {
        let base = report("fifo", 99, 60.0, "rig-17", &["cpu:2"]);
        let new = report("other", 0, 10.0, "vm", &[]);
        assert_eq!(
            lines(&differences(&[("base.json", &base), ("new.json", &new)])),
            [
                "host: rig-17 (base.json); vm (new.json)",
                "load: cpu:2 (base.json); none (new.json)",
                "timer: policy: fifo 99 (base.json); other (new.json)",
                "timer: duration: 60 s (base.json); 10 s (new.json)",
            ]
        );
    }

    #[test]
    fn several_bases_are_grouped_by_value() {
        let fifo = report("fifo", 99, 10.0, "vm", &[]);
        let rr = report("rr", 50, 10.0, "vm", &[]);
        assert_eq!(
            lines(&differences(&[
                ("a.json", &fifo),
                ("b.json", &rr),
                ("c.json", &fifo)
            ])),
            ["timer: policy: fifo 99 (a.json, c.json); rr 50 (b.json)"]
        );
    }
}
