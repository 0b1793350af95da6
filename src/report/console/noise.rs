//! The modern table of an OS-noise test: one row per measured CPU (and
//! their merge), then with `--trace-spikes` the main causes per CPU.

use super::fitted;
use crate::report::cells::{Table, latency_cells};
use crate::report::{Report, TestResult};
use crate::units::format_ns;
use std::io::Write;

/// Causes named per CPU in the console line (the JSON has them all).
const CAUSES_SHOWN: usize = 3;
/// The doctor's checks whose findings explain OS noise on a CPU: not
/// isolated, the tick not stopped, RCU callbacks not offloaded, interrupts
/// allowed on it.
const NOISE_CHECKS: [&str; 5] = [
    "isolation.isolcpus",
    "isolation.nohz_full",
    "isolation.rcu_nocbs",
    "isolation.irq_affinity",
    "isolation.irqbalance",
];

/// `doctor: ID VERDICT: MEANING` for every finding of the doctor (in the
/// report's sysinfo) that explains noise on the measured CPUs, and for a
/// real-time spinner RT throttling's; see docs/doctor.md by the id.
pub fn doctor_lines(report: &Report, test: &TestResult) -> Vec<String> {
    let realtime = test.config.policy != "other";
    let mut ids: Vec<&str> = NOISE_CHECKS.to_vec();
    if realtime {
        ids.push("sched.rt_throttling");
    }
    ids.iter()
        .filter_map(|id| report.sysinfo.problem(id))
        .map(|c| format!("doctor: {} {}: {}", c.id, c.verdict.as_str(), c.meaning))
        .collect()
}

/// `45.1 M`, `812 k`, `950`: a rate for a narrow column.
fn rate(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.1} M", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.0} k", per_s / 1e3)
    } else {
        format!("{per_s:.0}")
    }
}

/// The HW column: the hardware interruptions, `-` where the counter did
/// not run.
fn hw_cell(count: Option<u64>) -> String {
    count.map_or("-".into(), |n| n.to_string())
}

/// The line under the table that says what the HW column is: each CPU's
/// hardware time (the hypervisor's in a guest), or why the counter did not
/// run. None when it was not asked (the oslat drop-in).
pub fn hardware_line(test: &TestResult) -> Option<String> {
    let counter = test.config.noise()?.hw_counter.as_ref()?;
    if !counter.ran {
        return Some(format!(
            "HW: - (the interference counter did not run: {})",
            counter.detail
        ));
    }
    let cpus: Vec<String> = test
        .series
        .iter()
        .filter_map(|s| s.noise_cpu())
        .filter_map(|n| {
            let h = n.hardware.as_ref()?;
            Some(format!(
                "CPU {} {} in {} (max {})",
                n.cpu,
                format_ns(h.noise_ns as i64),
                h.interruptions,
                format_ns(h.max_ns as i64)
            ))
        })
        .collect();
    let whose = match &counter.hypervisor {
        Some(hv) => format!("hypervisor time: in this {hv} guest, the host took the vCPU"),
        None => "hardware time (firmware, SMIs)".into(),
    };
    Some(format!(
        "HW: interruptions with no IRQ, softirq, NMI or task switch counted in them are {whose}: {}",
        cpus.join("; ")
    ))
}

/// How the causes line names the time no traced event explains: as the HW
/// line names its time where the interference counter ran (the hypervisor's
/// in a guest, else the hardware's), else `unexplained (hardware or
/// hypervisor)`.
fn unexplained_word(test: &TestResult) -> String {
    match test.config.noise().and_then(|c| c.hw_counter.as_ref()) {
        Some(c) if c.ran && c.hypervisor.is_some() => "unexplained (hypervisor)".into(),
        Some(c) if c.ran => "unexplained (hardware)".into(),
        _ => crate::report::UNEXPLAINED.into(),
    }
}

/// One row per CPU; an `all` row when there are several.
pub fn cpu_table(test: &TestResult) -> Table {
    let mut table = Table::new(&[
        "CPU",
        "Isolated",
        "Prio",
        "Spun",
        "Noise",
        "Share",
        "Interruptions",
        "HW",
        "Reads/s",
        "Min",
        "Avg",
        "P50",
        "P99",
        "P99.9",
        "Max",
    ])
    .dropping(&[
        "P50",
        "P99.9",
        "Reads/s",
        "Isolated",
        "Avg",
        "Prio",
        "Spun",
        "Min",
        "Interruptions",
        "HW",
    ]);
    let (mut spun, mut noise) = (0u64, 0u64);
    let mut hw: Option<u64> = None;
    for s in &test.series {
        let Some(n) = s.noise_cpu() else { continue };
        spun += n.measured_ns;
        noise += n.noise_ns;
        let mut row = vec![
            n.cpu.to_string(),
            if n.isolated { "yes" } else { "no" }.to_string(),
            format!("{} {}", s.policy, s.priority),
            format_ns(n.measured_ns as i64),
            format_ns(n.noise_ns as i64),
            format!("{:.3} %", n.noise_percent),
            s.latency.samples.to_string(),
            hw_cell(n.hardware.as_ref().map(|h| h.interruptions)),
            rate(n.loops_per_s),
        ];
        if let Some(h) = &n.hardware {
            *hw.get_or_insert(0) += h.interruptions;
        }
        row.extend(latency_cells(&s.latency));
        table.row(row);
    }
    if test.series.len() > 1 {
        let share = if spun > 0 {
            noise as f64 * 100.0 / spun as f64
        } else {
            0.0
        };
        let mut row = vec![
            "all".to_string(),
            String::new(),
            String::new(),
            format_ns(spun as i64),
            format_ns(noise as i64),
            format!("{share:.3} %"),
            test.overall.samples.to_string(),
            hw_cell(hw),
            String::new(),
        ];
        row.extend(latency_cells(&test.overall));
        table.row(row);
    }
    table
}

/// The test's heading, table and cause lines.
pub fn write_test(report: &Report, test: &TestResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(config) = test.config.noise() else {
        return Ok(());
    };
    fitted(
        out,
        &format!(
            "noise ({}, threshold {}{}), {:.1} s, ended: {}",
            test.description,
            format_ns(config.threshold_ns as i64),
            if config.runtime_ns < config.period_ns {
                format!(
                    ", spinning {} of every {}",
                    format_ns(config.runtime_ns as i64),
                    format_ns(config.period_ns as i64)
                )
            } else {
                String::new()
            },
            report.duration_s,
            crate::report::cells::end_reason_text(test)
        ),
    )?;
    if crate::report::cells::interrupted_before_measuring(test) {
        return Ok(());
    }
    write!(out, "{}", cpu_table(test).render())?;
    if let Some(line) = hardware_line(test) {
        fitted(out, &line)?;
    }
    for s in &test.series {
        let Some(n) = s.noise_cpu() else { continue };
        if let Some(causes) = &n.causes {
            let above = test
                .spikes
                .as_ref()
                .map(|t| format!(" above {}", format_ns(t.threshold_ns as i64)))
                .unwrap_or_default();
            fitted(
                out,
                &format!(
                    "causes: CPU {}: {:.3} % noise; {} (of the {} worst interruption{}{above}, traced)",
                    n.cpu,
                    n.noise_percent,
                    causes.shares_line_naming(CAUSES_SHOWN, &unexplained_word(test)),
                    causes.interruptions,
                    if causes.interruptions == 1 { "" } else { "s" }
                ),
            )?;
        }
    }
    if let crate::report::ConfigDetail::Noise(config) = &test.config.detail {
        for line in &config.cpus_left_out {
            fitted(out, &format!("cpus: {line}"))?;
        }
    }
    for line in doctor_lines(report, test) {
        fitted(out, &line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doctors_findings_on_noise_are_linked() {
        use crate::report::{Check, Verdict};
        let check = |id: &str, verdict| Check {
            id: id.into(),
            title: String::new(),
            verdict,
            value: String::new(),
            meaning: format!("{id} means"),
            fix: None,
        };
        let mut report = crate::report::testdata::sample_report();
        report.sysinfo.checks = vec![
            check("isolation.nohz_full", Verdict::Warn),
            check("isolation.irq_affinity", Verdict::Ok),
            check("sched.rt_throttling", Verdict::Warn),
            check("kernel.preemption", Verdict::Bad),
        ];
        let mut test = report.tests[0].clone();
        test.config.policy = "other".into();
        assert_eq!(
            doctor_lines(&report, &test),
            vec!["doctor: isolation.nohz_full warn: isolation.nohz_full means"]
        );
        test.config.policy = "fifo".into();
        assert_eq!(doctor_lines(&report, &test).len(), 2);
    }

    /// testdata's noise test of CPU 1 with the counter as `counter` says,
    /// and on the CPU `hardware`.
    fn noise_test(
        counter: Option<crate::report::HwCounter>,
        hardware: Option<crate::report::NoiseHardware>,
    ) -> TestResult {
        let mut test = crate::report::testdata::noise_report().tests[0].clone();
        test.series.truncate(1);
        if let crate::report::ConfigDetail::Noise(c) = &mut test.config.detail {
            c.hw_counter = counter;
        }
        if let crate::report::SeriesDetail::NoiseCpu(n) = &mut test.series[0].detail {
            n.hardware = hardware;
        }
        test
    }

    /// The cells of `table`'s row for CPU 1 under `column`.
    fn cell(table: &str, column: &str) -> String {
        let mut lines = table.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let at = header.iter().position(|h| *h == column).unwrap();
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        // "other 0" and sizes with units are two words each before HW.
        let words_before: usize = header[..at]
            .iter()
            .map(|h| match *h {
                "Prio" | "Spun" | "Noise" | "Share" => 2,
                _ => 1,
            })
            .sum();
        row[words_before].to_string()
    }

    #[test]
    fn the_hw_column_and_its_line() {
        use crate::report::{HwCounter, NoiseHardware};
        let ran = |hypervisor: Option<&str>| HwCounter {
            ran: true,
            detail: "bpf interference counter".into(),
            hypervisor: hypervisor.map(str::to_string),
        };
        let hw = NoiseHardware {
            interruptions: 3,
            noise_ns: 45_000,
            max_ns: 20_000,
            last: Vec::new(),
        };
        let test = noise_test(Some(ran(Some("KVM"))), Some(hw.clone()));
        assert_eq!(cell(&cpu_table(&test).render(), "HW"), "3");
        assert_eq!(
            hardware_line(&test).unwrap(),
            "HW: interruptions with no IRQ, softirq, NMI or task switch counted in them are hypervisor time: in this KVM guest, the host took the vCPU: CPU 1 45.0 us in 3 (max 20.0 us)"
        );
        assert_eq!(unexplained_word(&test), "unexplained (hypervisor)");
        let bare = noise_test(Some(ran(None)), Some(hw));
        assert!(
            hardware_line(&bare)
                .unwrap()
                .contains("are hardware time (firmware, SMIs): CPU 1")
        );
        assert_eq!(unexplained_word(&bare), "unexplained (hardware)");
        // Not run: `-` and why; not asked (oslat): no line.
        let off = noise_test(
            Some(HwCounter {
                ran: false,
                detail: "off (--no-hw-counter)".into(),
                hypervisor: None,
            }),
            None,
        );
        assert_eq!(cell(&cpu_table(&off).render(), "HW"), "-");
        assert_eq!(
            hardware_line(&off).unwrap(),
            "HW: - (the interference counter did not run: off (--no-hw-counter))"
        );
        assert_eq!(
            unexplained_word(&off),
            "unexplained (hardware or hypervisor)"
        );
        assert_eq!(hardware_line(&noise_test(None, None)), None);
    }

    #[test]
    fn rates() {
        assert_eq!(rate(45_123_456.0), "45.1 M");
        assert_eq!(rate(812_300.0), "812 k");
        assert_eq!(rate(950.0), "950");
    }
}
