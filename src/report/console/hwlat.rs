//! `latscope hwlat`'s console: one row per CPU with its gaps by class,
//! then what named the hardware time (hypervisor, SMIs, causes).

use super::fitted;
use crate::report::cells::{Table, end_reason_text, interrupted_before_measuring};
use crate::report::{HwlatConfig, Report, TestResult};
use crate::units::format_ns;
use std::io::Write;

/// The per-CPU table.
pub fn cpu_table(test: &TestResult, hypervisor: bool) -> Table {
    let hw = if hypervisor { "Hypervisor" } else { "HW" };
    let mut table = Table::new(&[
        "CPU",
        "Windows",
        "Classified",
        &format!("{hw} gaps"),
        &format!("{hw} time"),
        &format!("{hw} max"),
        "OS gaps",
        "OS max",
        "NMI",
        "SMI",
        "Steal",
    ])
    .dropping(&["Classified", "Windows", "OS gaps", "Steal", "NMI", "SMI"]);
    for s in &test.series {
        let Some(c) = s.hwlat_cpu() else { continue };
        table.row(vec![
            c.cpu.to_string(),
            c.windows.to_string(),
            format!("{:.1}%", c.classified_percent()),
            c.hardware_gaps.to_string(),
            format_ns(c.hardware_ns as i64),
            if s.latency.samples > 0 {
                format_ns(s.latency.max_ns)
            } else {
                "-".into()
            },
            c.os_gaps.to_string(),
            if c.os_gaps > 0 {
                format_ns(c.os_max_ns as i64)
            } else {
                "-".into()
            },
            nmi_cell(c),
            c.smis.map_or("-".into(), |n| n.to_string()),
            format_ns(c.steal_ns as i64),
        ]);
    }
    table
}

/// NMIs: the count, and with the tracefs tier their total and longest time.
fn nmi_cell(c: &crate::report::HwlatCpu) -> String {
    match (c.nmi_ns, c.nmi_max_ns) {
        (Some(total), Some(max)) if c.nmis > 0 => format!(
            "{} ({}, max {})",
            c.nmis,
            format_ns(total as i64),
            format_ns(max as i64)
        ),
        _ => c.nmis.to_string(),
    }
}

fn heading(report: &Report, test: &TestResult, config: &HwlatConfig) -> String {
    format!(
        "hwlat ({}, threshold {}, spinning {} of every {}), {:.1} s, ended: {}",
        test.description,
        format_ns(config.threshold_ns as i64),
        format_ns(config.width_ns as i64),
        format_ns(config.window_ns as i64),
        report.duration_s,
        end_reason_text(test)
    )
}

/// The test's heading, table and the lines that name the hardware time.
pub fn write_test(report: &Report, test: &TestResult, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(config) = test.config.hwlat() else {
        return Ok(());
    };
    fitted(out, &heading(report, test, config))?;
    match &config.tier_fallback {
        Some(why) => fitted(out, &format!("tier: {} ({why})", config.tier))?,
        None => fitted(out, &format!("tier: {}", config.tier))?,
    }
    if interrupted_before_measuring(test) {
        return Ok(());
    }
    write!(
        out,
        "{}",
        cpu_table(test, config.hypervisor.is_some()).render()
    )?;
    if let Some(hv) = &config.hypervisor {
        fitted(
            out,
            &format!(
                "hypervisor: {hv}: gaps with no interference in this guest are time the host took from the vCPU (compare with steal, counted in ticks)"
            ),
        )?;
    }
    fitted(out, &format!("SMIs: {}", config.smi_counting))?;
    for s in &test.series {
        let Some(c) = s.hwlat_cpu() else { continue };
        let causes: Vec<String> = c
            .os_causes
            .iter()
            .take(3)
            .map(|k| format!("{} ({} gaps, {})", k.cause, k.count, format_ns(k.ns as i64)))
            .collect();
        if !causes.is_empty() {
            fitted(
                out,
                &format!("CPU {} OS gaps: {}", c.cpu, causes.join("; ")),
            )?;
        }
        if c.gaps_dropped > 0 {
            fitted(
                out,
                &format!(
                    "CPU {}: {} gaps not kept (too many in one sub-window)",
                    c.cpu, c.gaps_dropped
                ),
            )?;
        }
    }
    Ok(())
}
