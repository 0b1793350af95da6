//! `--rteval-xml FILE`: a timer or cyclictest run in the shape of rteval
//! 3.10's `summary.xml`, so that what reads rteval's reports (`rteval -Z`
//! and its XSLT `rteval_text.xsl`, analysis servers) reads latscope's:
//!
//! - `run_info`: start date and time, run time, and (as rteval's remarks)
//!   the latscope version and command line;
//! - `SystemInfo`, the part the report knows: `uname` (`is_RT`), `Kernel`'s
//!   clocksources, `CPUtopology` (isolated CPUs, and rteval's core-sharing
//!   warnings: an isolated CPU sharing a core between measurement and load),
//!   `cmdlineInfo`;
//! - `loads`, when `--load` ran: one `command_line` per generator;
//! - `Measurements`, one `cyclictest` element per timer test: `system` and
//!   one `core` per sampling thread, each with rteval's `statistics` and the
//!   non-empty buckets of its 1 us `histogram` (stats::microseconds).
//!
//! Nothing of rteval's code is used: the element names are its report's.

use super::cells::{Markup, escape_markup};
use super::{Exporter, Report, SeriesDetail, SysInfo, TestResult};
use crate::stats::LatencySummary;
use crate::stats::microseconds::{UsHistogram, UsStatistics};
use std::io::Write;

/// The rteval version whose report shape this is.
pub const RTEVAL_VERSION: &str = "3.10";

pub struct RtevalXml;

impl Exporter for RtevalXml {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
        writeln!(out, r#"<rteval version="{RTEVAL_VERSION}">"#)?;
        write_run_info(report, out)?;
        write_system_info(report, out)?;
        write_loads(report, out)?;
        write_measurements(report, out)?;
        writeln!(out, "</rteval>")
    }
}

fn xml(text: &str) -> String {
    escape_markup(text, Markup::Xml)
}

/// The timer tests: the ones with rteval's measurement.
fn timer_tests(report: &Report) -> impl Iterator<Item = &TestResult> {
    report.tests.iter().filter(|t| {
        t.series
            .iter()
            .any(|s| matches!(s.detail, SeriesDetail::TimerThread(_)))
    })
}

fn measured_cpus(report: &Report) -> Vec<usize> {
    let mut cpus: Vec<usize> = timer_tests(report)
        .flat_map(|t| t.series.iter().flat_map(|s| s.cpus.iter().copied()))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

fn load_cpus(report: &Report) -> Vec<usize> {
    let mut cpus: Vec<usize> = report.loads.iter().flat_map(|l| l.cpus.clone()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// `2026-11-21T10:00:01Z` as rteval's date and time (UTC).
fn date_and_time(rfc3339: &str) -> (&str, &str) {
    let (date, time) = rfc3339.split_once('T').unwrap_or((rfc3339, ""));
    (date, time.get(..8).unwrap_or(time))
}

fn write_run_info(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let total = report.duration_s.max(0.0) as u64;
    let (days, hours, minutes, seconds) = (
        total / 86_400,
        total % 86_400 / 3_600,
        total % 3_600 / 60,
        total % 60,
    );
    writeln!(
        out,
        r#"  <run_info days="{days}" hours="{hours}" minutes="{minutes}" seconds="{seconds}">"#
    )?;
    let (date, time) = date_and_time(&report.start_time);
    writeln!(out, "    <date>{}</date>", xml(date))?;
    writeln!(out, "    <time>{}</time>", xml(time))?;
    writeln!(
        out,
        "    <annotate>{} {}: {}</annotate>",
        xml(&report.tool.name),
        xml(&report.tool.version),
        xml(&report.command_line.join(" "))
    )?;
    writeln!(out, "  </run_info>")
}

fn write_system_info(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let sys = &report.sysinfo;
    writeln!(out, r#"  <SystemInfo version="1.0">"#)?;
    writeln!(out, "    <uname>")?;
    writeln!(out, "      <node>{}</node>", xml(&sys.nodename))?;
    writeln!(out, "      <arch>{}</arch>", xml(&sys.machine))?;
    writeln!(
        out,
        r#"      <kernel is_RT="{}">{}</kernel>"#,
        u8::from(sys.preempt_rt),
        xml(&sys.release)
    )?;
    writeln!(out, "    </uname>")?;
    writeln!(out, "    <Kernel>")?;
    writeln!(out, "      <ClockSource>")?;
    let mut sources = sys.clocksources_available.clone();
    if !sources.contains(&sys.clocksource) {
        sources.insert(0, sys.clocksource.clone());
    }
    for source in &sources {
        let current = if *source == sys.clocksource {
            r#" current="1""#
        } else {
            ""
        };
        writeln!(out, "        <source{current}>{}</source>", xml(source))?;
    }
    writeln!(out, "      </ClockSource>")?;
    writeln!(out, "    </Kernel>")?;
    write_topology(report, out)?;
    if let Some(cmdline) = &sys.kernel_cmdline {
        writeln!(out, "    <cmdlineInfo>")?;
        writeln!(out, "      <cmdline>{}</cmdline>", xml(cmdline))?;
        writeln!(out, "    </cmdlineInfo>")?;
    }
    writeln!(out, "  </SystemInfo>")
}

fn isolated(sys: &SysInfo) -> Vec<usize> {
    crate::units::parse_cpu_list(&sys.cpus_isolated).unwrap_or_default()
}

fn write_topology(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let sys = &report.sysinfo;
    let isolated = isolated(sys);
    let online = sys.cpu_topology.iter().filter(|c| c.online).count();
    let mut packages: Vec<u64> = sys
        .cpu_topology
        .iter()
        .filter_map(|c| c.package_id)
        .collect();
    packages.sort_unstable();
    packages.dedup();
    let (cores, online) = if sys.cpu_topology.is_empty() {
        (sys.cpus_online, sys.cpus_online)
    } else {
        (sys.cpu_topology.len(), online)
    };
    writeln!(
        out,
        r#"    <CPUtopology num_cpu_cores="{cores}" num_cpu_cores_online="{online}" num_cpu_cores_isolated="{}" num_cpu_sockets="{}">"#,
        isolated.len(),
        packages.len()
    )?;
    for cpu in &sys.cpu_topology {
        let place = match (cpu.core_id, cpu.package_id) {
            (Some(core), Some(package)) => {
                format!(r#" core_id="{core}" physical_package_id="{package}""#)
            }
            _ => String::new(),
        };
        let isolated = if cpu.online {
            format!(r#" isolated="{}""#, u8::from(isolated.contains(&cpu.cpu)))
        } else {
            String::new()
        };
        writeln!(
            out,
            r#"      <cpu name="cpu{}" online="{}"{place}{isolated}/>"#,
            cpu.cpu,
            u8::from(cpu.online)
        )?;
    }
    let warnings = core_sharing_warnings(sys, &measured_cpus(report), &load_cpus(report));
    if !warnings.is_empty() {
        writeln!(out, "      <CoreSharingWarnings>")?;
        for warning in warnings {
            writeln!(out, "        <warning>{}</warning>", xml(&warning))?;
        }
        writeln!(out, "      </CoreSharingWarnings>")?;
    }
    writeln!(out, "    </CPUtopology>")
}

/// rteval's rule: a measured CPU and a loaded CPU on one core, when at
/// least one of them is isolated (an isolated CPU is meant to be alone).
pub fn core_sharing_warnings(sys: &SysInfo, measured: &[usize], loaded: &[usize]) -> Vec<String> {
    let isolated = isolated(sys);
    let siblings = |cpu: usize| {
        sys.cpu_topology
            .iter()
            .find(|c| c.cpu == cpu)
            .map(|c| c.thread_siblings.clone())
            .unwrap_or_default()
    };
    let shown = |kind: &str, cpu: usize| {
        let mark = if isolated.contains(&cpu) {
            " (isol)"
        } else {
            ""
        };
        format!("{kind} CPU {cpu}{mark}")
    };
    let mut warnings = Vec::new();
    for &m in measured {
        for &l in loaded {
            let shared = siblings(m).contains(&l);
            if shared && (isolated.contains(&m) || isolated.contains(&l)) {
                warnings.push(format!(
                    "Warning: {} shares core with {}",
                    shown("Measurement", m),
                    shown("load", l)
                ));
            }
        }
    }
    warnings
}

fn write_loads(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if report.loads.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        r#"  <loads loads="{}" loadcpus="{}">"#,
        report.loads.len(),
        crate::units::cpu_list(&load_cpus(report))
    )?;
    for load in &report.loads {
        writeln!(
            out,
            r#"    <command_line name="{}" job_instances="1">{}</command_line>"#,
            xml(&load.spec),
            xml(&load.command_line.join(" "))
        )?;
    }
    writeln!(out, "  </loads>")
}

fn write_measurements(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        r#"  <Measurements measurecpus="{}">"#,
        crate::units::cpu_list(&measured_cpus(report))
    )?;
    let (start, _) = date_and_time(&report.start_time);
    let (stop, _) = date_and_time(&report.end_time);
    let stamp = |rfc3339: &str, date: &str| {
        let (_, time) = date_and_time(rfc3339);
        format!("{date} {time}")
    };
    for test in timer_tests(report) {
        writeln!(
            out,
            r#"    <cyclictest command_line="{}">"#,
            xml(&report.command_line.join(" "))
        )?;
        writeln!(out, "      <timestamps>")?;
        writeln!(
            out,
            "        <runloop_start>{}</runloop_start>",
            xml(&stamp(&report.start_time, start))
        )?;
        writeln!(
            out,
            "        <runloop_stop>{}</runloop_stop>",
            xml(&stamp(&report.end_time, stop))
        )?;
        writeln!(out, "      </timestamps>")?;
        let threads = test.series.len();
        let description = format!("({threads} cores) {}", test.description);
        writeln!(out, r#"      <system description="{}">"#, xml(&description))?;
        write_series(&test.overall, "        ", out)?;
        writeln!(out, "      </system>")?;
        for series in &test.series {
            let cpu = match &series.detail {
                SeriesDetail::TimerThread(t) => t.cpu,
                _ => series.cpus.first().copied().unwrap_or_default(),
            };
            writeln!(
                out,
                r#"      <core id="{cpu}" priority="{}">"#,
                series.priority
            )?;
            write_series(&series.latency, "        ", out)?;
            writeln!(out, "      </core>")?;
        }
        writeln!(out, "    </cyclictest>")?;
    }
    writeln!(out, "  </Measurements>")
}

/// One `statistics` element and its `histogram`.
fn write_series(
    summary: &LatencySummary,
    indent: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let histogram = UsHistogram::of(summary);
    writeln!(out, "{indent}<statistics>")?;
    writeln!(out, "{indent}  <samples>{}</samples>", summary.samples)?;
    let Some(stats) = histogram.statistics() else {
        return writeln!(out, "{indent}</statistics>");
    };
    for (name, value) in statistics_fields(&stats) {
        writeln!(out, r#"{indent}  <{name} unit="us">{value}</{name}>"#)?;
    }
    writeln!(out, "{indent}</statistics>")?;
    let buckets: Vec<(i64, u64)> = histogram.buckets().collect();
    writeln!(out, r#"{indent}<histogram nbuckets="{}">"#, buckets.len())?;
    for (index, value) in buckets {
        writeln!(
            out,
            r#"{indent}  <bucket index="{index}" value="{value}"/>"#
        )?;
    }
    writeln!(out, "{indent}</histogram>")
}

/// rteval's statistics in its order, its numbers written as Python's
/// `str()` writes them (whole counts as integers, the rest as floats).
fn statistics_fields(s: &UsStatistics) -> [(&'static str, String); 8] {
    [
        ("minimum", s.minimum.to_string()),
        ("maximum", s.maximum.to_string()),
        ("median", whole_or_float(s.median)),
        ("mode", s.mode.to_string()),
        ("range", s.range.to_string()),
        ("mean", python_float(s.mean)),
        (
            "mean_absolute_deviation",
            python_float(s.mean_absolute_deviation),
        ),
        ("standard_deviation", python_float(s.standard_deviation)),
    ]
}

/// A float as Python's `str()` writes it: the shortest text that reads
/// back the same number, with `.0` on a whole number.
pub fn python_float(x: f64) -> String {
    let text = x.to_string();
    if x.is_finite() && !text.contains('.') {
        format!("{text}.0")
    } else {
        text
    }
}

/// rteval's median: an integer when it is one bucket, else a float.
fn whole_or_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        python_float(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{timer_report, with_load_and_kernel_message, written};
    use crate::report::{CpuPlace, SeriesDetail};

    fn placed(cpu: usize, siblings: &[usize]) -> CpuPlace {
        CpuPlace {
            cpu,
            online: true,
            core_id: Some(cpu as u64 % 2),
            package_id: Some(0),
            thread_siblings: siblings.to_vec(),
        }
    }

    #[test]
    fn a_timer_run_has_rteval_s_sections_and_statistics() {
        let mut report = timer_report();
        report.sysinfo.clocksources_available = vec!["tsc".into(), "hpet".into()];
        report.sysinfo.kernel_cmdline = Some("ro quiet isolcpus=1".into());
        report.sysinfo.cpus_isolated = "1".into();
        report.sysinfo.cpu_topology = vec![placed(0, &[0]), placed(1, &[1])];
        let text = written(&RtevalXml, &report);
        for want in [
            r#"<rteval version="3.10">"#,
            r#"<run_info days="0" hours="0" minutes="0" seconds="1">"#,
            "<date>2026-11-21</date>",
            "<time>10:00:00</time>",
            "<annotate>latscope 0.1.0: latscope timer --smp -T 1</annotate>",
            r#"<kernel is_RT="0">6.18.0</kernel>"#,
            r#"<source current="1">tsc</source>"#,
            "<source>hpet</source>",
            r#"<CPUtopology num_cpu_cores="2" num_cpu_cores_online="2" num_cpu_cores_isolated="1" num_cpu_sockets="1">"#,
            r#"<cpu name="cpu1" online="1" core_id="1" physical_package_id="0" isolated="1"/>"#,
            "<cmdline>ro quiet isolcpus=1</cmdline>",
            r#"<Measurements measurecpus="0-1">"#,
            r#"<cyclictest command_line="latscope timer --smp -T 1">"#,
            "<runloop_start>2026-11-21 10:00:00</runloop_start>",
            r#"<core id="1" priority="99">"#,
            // Samples -1, 1, 3, 4 us: mean 7/4, median 2, MAD 1.75.
            "<samples>4</samples>",
            r#"<minimum unit="us">-1</minimum>"#,
            r#"<maximum unit="us">4</maximum>"#,
            r#"<median unit="us">2</median>"#,
            r#"<mode unit="us">-1</mode>"#,
            r#"<range unit="us">5</range>"#,
            r#"<mean unit="us">1.75</mean>"#,
            r#"<mean_absolute_deviation unit="us">1.75</mean_absolute_deviation>"#,
            r#"<histogram nbuckets="4">"#,
            r#"<bucket index="3" value="1"/>"#,
        ] {
            assert!(text.contains(want), "{want} not in:\n{text}");
        }
        // The system merges both threads: 8 samples.
        assert!(text.contains("<samples>8</samples>"));
        assert!(!text.contains("<loads"), "no --load, no loads");
        assert!(!text.contains("CoreSharingWarnings"));
    }

    #[test]
    fn loads_and_an_isolated_core_shared_with_a_load_are_reported() {
        let mut report = with_load_and_kernel_message(timer_report());
        report.sysinfo.cpus_isolated = "1".into();
        report.sysinfo.cpu_topology = vec![placed(0, &[0, 1]), placed(1, &[0, 1])];
        let text = written(&RtevalXml, &report);
        assert!(
            text.contains(r#"<loads loads="1" loadcpus="0-1">"#),
            "{text}"
        );
        assert!(text.contains(
            r#"<command_line name="cpu:1" job_instances="1">/usr/bin/stress-ng --cpu 1 --timeout 0</command_line>"#
        ));
        assert!(text.contains(
            "<warning>Warning: Measurement CPU 0 shares core with load CPU 1 (isol)</warning>"
        ));
    }

    #[test]
    fn only_timer_tests_are_measurements() {
        let text = written(&RtevalXml, &crate::report::testdata::sample_report());
        assert!(text.contains(r#"<Measurements measurecpus="">"#));
        assert!(!text.contains("<cyclictest"));
        let report = timer_report();
        assert!(matches!(
            report.tests[0].series[0].detail,
            SeriesDetail::TimerThread(_)
        ));
    }

    #[test]
    fn numbers_are_written_as_python_writes_them() {
        assert_eq!(python_float(2.0), "2.0");
        assert_eq!(python_float(1.75), "1.75");
        assert_eq!(python_float(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(whole_or_float(12.0), "12");
        assert_eq!(whole_or_float(12.5), "12.5");
    }
}
