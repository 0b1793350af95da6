//! `latscope doctor --bpf`, first part: what one program run costs on this
//! machine and the observer effect that makes per wake-up of `--breakdown`
//! and `--trace-spikes` (`probes::cost`), the figure to read before
//! trusting a breakdown. It loads programs for about a second and removes
//! them; unprivileged or without BPF, one line says why it cannot be
//! measured.

use crate::probes::cost::{self, HookedProgram, PathCost, TIMED_EVENT, WayCost};
use crate::probes::{AttachWay, ProbeError};
use crate::rt::tracefs::events::ACTIVITY;
use serde::Serialize;
use std::path::PathBuf;

/// One way's figure (or why it has none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WayFigure {
    /// `tp_btf`, `raw_tp`, `tracepoint`.
    pub way: &'static str,
    pub runs: u64,
    pub run_time_ns: u64,
    pub ns_per_run: Option<f64>,
    /// The same with the CPU idle between runs (`cost::COLD_SLEEP_NS`).
    pub cold_runs: u64,
    pub cold_ns_per_run: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One option's expected observer effect per wake-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathFigure {
    pub option: &'static str,
    pub programs_hooked: usize,
    pub runs_per_wakeup: u32,
    pub expected_ns_per_wakeup: Option<f64>,
    /// The same at the cold cost (what a quiet machine's wake-up sees).
    pub expected_cold_ns_per_wakeup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One interference program's measured cost per event it ran on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventFigure {
    /// `system:name`.
    pub event: String,
    pub way: &'static str,
    pub runs: u64,
    pub run_time_ns: u64,
    pub ns_per_run: Option<f64>,
}

/// The whole measurement, as `doctor --bpf --json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BpfCost {
    /// `system:name` of the event the empty program ran on.
    pub event: String,
    pub provoked_ms: u64,
    pub ways: Vec<WayFigure>,
    pub paths: Vec<PathFigure>,
    /// `hwlat --tier bpf`'s programs, each timed on the events that came
    /// (they run per interference event, not per wake-up).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interference: Vec<EventFigure>,
    /// Why they could not be timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interference_error: Option<String>,
    /// Why nothing could be measured (then `ways` and `paths` are empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl BpfCost {
    fn unavailable(why: String) -> BpfCost {
        BpfCost {
            event: format!("{}:{}", TIMED_EVENT.0, TIMED_EVENT.1),
            provoked_ms: 200,
            ways: Vec::new(),
            paths: Vec::new(),
            interference: Vec::new(),
            interference_error: None,
            unavailable: Some(why),
        }
    }
}

/// Measures on this machine.
pub fn measure() -> BpfCost {
    if let Err(why) = crate::rt::bpf::probe::check() {
        return BpfCost::unavailable(why.0);
    }
    let tracefs =
        crate::rt::tracefs::mount::find().unwrap_or_else(|| PathBuf::from("/sys/kernel/tracing"));
    let measured = match cost::measure(&tracefs, &AttachWay::ALL) {
        Ok(measured) => measured,
        Err(why) => return BpfCost::unavailable(why.to_string()),
    };
    let cold =
        cost::measure_sleeping(&tracefs, &AttachWay::ALL, cost::COLD_SLEEP_NS).unwrap_or_default();
    let costs = timed(&measured);
    let cold_costs = timed(&cold);
    let mut spike_events = ACTIVITY.to_vec();
    spike_events.extend(crate::spikes::optional_events(&tracefs));
    let paths = vec![
        path_figure(
            "--breakdown",
            cost::breakdown_programs(&tracefs),
            [&costs, &cold_costs],
        ),
        path_figure(
            "--trace-spikes",
            cost::recorder_programs(&tracefs, &spike_events),
            [&costs, &cold_costs],
        ),
    ];
    let (interference, interference_error) = match cost::measure_interference(&tracefs) {
        Ok(timed) => (timed.into_iter().map(event_figure).collect(), None),
        Err(why) => (Vec::new(), Some(why.to_string())),
    };
    BpfCost {
        interference,
        interference_error,
        ways: measured
            .into_iter()
            .map(|timed| {
                let cold = cold_costs.iter().find(|c| c.way == timed.0).copied();
                way_figure(timed, cold)
            })
            .collect(),
        paths,
        unavailable: None,
        ..BpfCost::unavailable(String::new())
    }
}

/// The ways that were timed.
fn timed(measured: &[cost::WayTimed]) -> Vec<WayCost> {
    measured
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().copied())
        .collect()
}

fn event_figure(t: cost::ProgramTimed) -> EventFigure {
    EventFigure {
        ns_per_run: (t.runs > 0).then(|| t.run_time_ns as f64 / t.runs as f64),
        event: t.event,
        way: t.way.label(),
        runs: t.runs,
        run_time_ns: t.run_time_ns,
    }
}

fn way_figure(
    (way, result): (AttachWay, Result<WayCost, ProbeError>),
    cold: Option<WayCost>,
) -> WayFigure {
    let (c, error) = match result {
        Ok(c) => (c, None),
        Err(why) => (
            WayCost {
                way,
                runs: 0,
                run_time_ns: 0,
            },
            Some(why.to_string()),
        ),
    };
    WayFigure {
        way: way.label(),
        runs: c.runs,
        run_time_ns: c.run_time_ns,
        ns_per_run: c.ns_per_run(),
        cold_runs: cold.map_or(0, |c| c.runs),
        cold_ns_per_run: cold.and_then(|c| c.ns_per_run()),
        error,
    }
}

fn path_figure(
    option: &'static str,
    programs: Result<Vec<HookedProgram>, ProbeError>,
    [costs, cold]: [&[WayCost]; 2],
) -> PathFigure {
    match programs {
        Ok(programs) => {
            let PathCost {
                hooked,
                runs,
                expected_ns,
                ..
            } = cost::path_cost(option, &programs, costs);
            PathFigure {
                option,
                programs_hooked: hooked,
                runs_per_wakeup: runs,
                expected_ns_per_wakeup: expected_ns,
                expected_cold_ns_per_wakeup: cost::path_cost(option, &programs, cold).expected_ns,
                error: None,
            }
        }
        Err(why) => PathFigure {
            option,
            programs_hooked: 0,
            runs_per_wakeup: 0,
            expected_ns_per_wakeup: None,
            expected_cold_ns_per_wakeup: None,
            error: Some(why.to_string()),
        },
    }
}

/// The text `doctor --bpf` prints before the listings.
pub fn text(cost: &BpfCost) -> String {
    let mut text = format!(
        "What one program run costs here: an empty program on {}, {} ms of a thread \
         sleeping 50 us (warm), then 1 ms (cold: the CPU idles between runs, as before a \
         quiet wake-up), timed by the kernel's BPF run-time statistics\n",
        cost.event, cost.provoked_ms
    );
    if let Some(why) = &cost.unavailable {
        text.push_str(&format!("  cannot be measured here: {why}\n"));
        return text;
    }
    for w in &cost.ways {
        let figure = match (w.ns_per_run, &w.error) {
            (Some(ns), _) => format!(
                "{ns:.0} ns per run warm ({} runs), {} cold ({} runs)",
                w.runs,
                ns_text(w.cold_ns_per_run),
                w.cold_runs
            ),
            (None, Some(why)) => format!("not measured: {why}"),
            (None, None) => "not measured: the program never ran".to_string(),
        };
        let note = if w.way == AttachWay::Tracepoint.label() && w.ns_per_run.is_some() {
            " (the program only: the record the kernel builds first is not timed)"
        } else {
            ""
        };
        text.push_str(&format!("  {:<11} {figure}{note}\n", w.way));
    }
    text.push_str(
        "Expected observer effect per wake-up (the program runs on one wake-up x the cost of their way):\n",
    );
    for p in &cost.paths {
        let figure = match (&p.error, p.expected_ns_per_wakeup) {
            (Some(why), _) => format!("not known: {why}"),
            (None, Some(ns)) => format!(
                "{} programs hooked, {} runs per wake-up: {ns:.0} ns warm, {} cold",
                p.programs_hooked,
                p.runs_per_wakeup,
                ns_text(p.expected_cold_ns_per_wakeup)
            ),
            (None, None) => format!(
                "{} programs hooked, {} runs per wake-up: a way they use was not measured",
                p.programs_hooked, p.runs_per_wakeup
            ),
        };
        text.push_str(&format!("  {:<15} {figure}\n", p.option));
    }
    text.push_str(&interference_text(cost));
    text
}

/// The interference programs' part of the text.
fn interference_text(cost: &BpfCost) -> String {
    let mut text = format!(
        "Cost per interference event of hwlat --tier bpf (its programs run on every IRQ, softirq, NMI, \
         system vector and context switch of every CPU, not on a wake-up's path), the real programs \
         timed over another {} ms of the same sleeps:\n",
        cost.provoked_ms
    );
    if let Some(why) = &cost.interference_error {
        text.push_str(&format!("  not measured: {why}\n"));
    }
    for e in &cost.interference {
        let figure = match e.ns_per_run {
            Some(ns) => format!("{ns:.0} ns per run ({} runs)", e.runs),
            None => "no such event came".to_string(),
        };
        text.push_str(&format!("  {:<42} {:<11} {figure}\n", e.event, e.way));
    }
    text
}

/// `123 ns`, or `not measured`.
fn ns_text(ns: Option<f64>) -> String {
    ns.map_or_else(|| "not measured".to_string(), |ns| format!("{ns:.0} ns"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_as_people_read_them() {
        let cost = BpfCost {
            event: "timer:hrtimer_expire_entry".into(),
            provoked_ms: 200,
            ways: vec![
                WayFigure {
                    way: "tp_btf",
                    runs: 4000,
                    run_time_ns: 100_000,
                    ns_per_run: Some(25.0),
                    cold_runs: 100,
                    cold_ns_per_run: Some(61.0),
                    error: None,
                },
                WayFigure {
                    way: "tracepoint",
                    runs: 4000,
                    run_time_ns: 121_600,
                    ns_per_run: Some(30.4),
                    cold_runs: 0,
                    cold_ns_per_run: None,
                    error: None,
                },
                WayFigure {
                    way: "raw_tp",
                    runs: 0,
                    run_time_ns: 0,
                    ns_per_run: None,
                    cold_runs: 0,
                    cold_ns_per_run: None,
                    error: Some("cannot attach to raw:x: No such file".into()),
                },
            ],
            paths: vec![
                PathFigure {
                    option: "--breakdown",
                    programs_hooked: 2,
                    runs_per_wakeup: 3,
                    expected_ns_per_wakeup: Some(75.0),
                    expected_cold_ns_per_wakeup: Some(150.2),
                    error: None,
                },
                PathFigure {
                    option: "--trace-spikes",
                    programs_hooked: 0,
                    runs_per_wakeup: 0,
                    expected_ns_per_wakeup: None,
                    expected_cold_ns_per_wakeup: None,
                    error: Some("no BTF".into()),
                },
            ],
            interference: vec![
                EventFigure {
                    event: "sched:sched_switch".into(),
                    way: "tp_btf",
                    runs: 1260,
                    run_time_ns: 282_492,
                    ns_per_run: Some(224.2),
                },
                EventFigure {
                    event: "irq:irq_handler_entry".into(),
                    way: "tracepoint",
                    runs: 0,
                    run_time_ns: 0,
                    ns_per_run: None,
                },
            ],
            interference_error: None,
            unavailable: None,
        };
        assert_eq!(
            text(&cost),
            "What one program run costs here: an empty program on timer:hrtimer_expire_entry, \
             200 ms of a thread sleeping 50 us (warm), then 1 ms (cold: the CPU idles between \
             runs, as before a quiet wake-up), timed by the kernel's BPF run-time statistics\n\
             \x20 tp_btf      25 ns per run warm (4000 runs), 61 ns cold (100 runs)\n\
             \x20 tracepoint  30 ns per run warm (4000 runs), not measured cold (0 runs) (the program only: the record the kernel builds first is not timed)\n\
             \x20 raw_tp      not measured: cannot attach to raw:x: No such file\n\
             Expected observer effect per wake-up (the program runs on one wake-up x the cost of their way):\n\
             \x20 --breakdown     2 programs hooked, 3 runs per wake-up: 75 ns warm, 150 ns cold\n\
             \x20 --trace-spikes  not known: no BTF\n\
             Cost per interference event of hwlat --tier bpf (its programs run on every IRQ, softirq, NMI, \
             system vector and context switch of every CPU, not on a wake-up's path), the real programs \
             timed over another 200 ms of the same sleeps:\n\
             \x20 sched:sched_switch                         tp_btf      224 ns per run (1260 runs)\n\
             \x20 irq:irq_handler_entry                      tracepoint  no such event came\n"
        );
        let not_timed = BpfCost {
            interference: Vec::new(),
            interference_error: Some("cannot create the interference counter's map".into()),
            ..cost.clone()
        };
        assert!(text(&not_timed).ends_with(
            "over another 200 ms of the same sleeps:\n  not measured: cannot create the interference counter's map\n"
        ));
        assert_eq!(
            serde_json::to_value(&not_timed).unwrap()["interference_error"],
            "cannot create the interference counter's map"
        );
        let json = serde_json::to_value(&cost).unwrap();
        assert_eq!(json["ways"][0]["ns_per_run"], 25.0);
        assert_eq!(json["paths"][0]["expected_ns_per_wakeup"], 75.0);
        assert_eq!(json["paths"][0]["expected_cold_ns_per_wakeup"], 150.2);
        assert_eq!(json["ways"][0]["cold_ns_per_run"], 61.0);
        assert!(json.get("unavailable").is_none());
        assert_eq!(json["interference"][0]["event"], "sched:sched_switch");
        assert_eq!(json["interference"][0]["ns_per_run"], 224.2);
        assert!(json["interference"][1]["ns_per_run"].is_null());
    }

    #[test]
    fn unmeasurable_is_one_line_why() {
        let cost =
            BpfCost::unavailable("not permitted: needs CAP_BPF and CAP_PERFMON (or root)".into());
        let text = text(&cost);
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with(
            "  cannot be measured here: not permitted: needs CAP_BPF and CAP_PERFMON (or root)\n"
        ));
        assert_eq!(
            serde_json::to_value(&cost).unwrap()["unavailable"],
            "not permitted: needs CAP_BPF and CAP_PERFMON (or root)"
        );
    }
}
