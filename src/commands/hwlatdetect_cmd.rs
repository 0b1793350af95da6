//! The `hwlatdetect` name: rt-tests hwlatdetect's options and text, measured
//! by latscope's sampler instead of the kernel's hwlat tracer (which needs
//! root, debugfs and a kernel built with it). Exit 1 when the largest
//! sample is above `--hardlimit`, 0 otherwise, 2 for any error: a crash
//! can no longer pass for a slow machine.

use crate::measure::hwlat::{self as hwlat_run, HwlatOutcome};
use crate::pipeline::CommandError;
use crate::report::HwlatSample;
use crate::report::classic_hwlatdetect as text;
use crate::settings::hwlatdetect::{HELP, HwlatdetectSettings};
use crate::settings::{UsageError, check_cpu};
use std::io::Write;

/// `hwlatdetect ARGS`: its exit code (errors are one line and exit 2).
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    match run_checked(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "hwlatdetect: error: {e}");
            Ok(crate::pipeline::EXIT_USAGE)
        }
    }
}

fn run_checked(args: &[String]) -> Result<i32, UsageError> {
    let s = HwlatdetectSettings::parse(args)?;
    if s.help {
        print!("{HELP}");
        return Ok(0);
    }
    let (runtime, period) = crate::doctor::sched::rt_bandwidth(&crate::doctor::Machine::live());
    crate::settings::hwlat::check_duty(s.width_us * 1000, s.window_us * 1000, runtime, period)?;
    let allowed = crate::rt::sched::allowed_cpus();
    let cpus = s.cpus.clone().unwrap_or_else(|| allowed.clone());
    for &cpu in &cpus {
        check_cpu(cpu, &allowed)?;
    }
    let mut out = text::Output {
        quiet: s.quiet,
        debug: s.debug,
    };
    for line in &s.debug_lines {
        out.print(line);
    }
    // Paging in the samplers' stacks and buffers is no latency to measure.
    let _ = crate::rt::sched::lock_all_memory_if_affordable();
    // The tier starts before the header: `detector:` names the one that runs.
    let (plan, prepared) = hwlat_run::start_hwlatdetect(
        cpus,
        (s.threshold_us, s.width_us, s.window_us),
        s.duration_s,
        &mut |line| out.debug(line),
    );
    let detector = prepared.tier().detector();
    let header = text::Header {
        duration_s: s.duration_s,
        detector: &detector,
        cpu_list: s.cpu_list.as_deref(),
        threshold_us: s.threshold_us,
        window_us: s.window_us,
        width_us: s.width_us,
        report: s.report.as_deref(),
    };
    for line in text::header_lines(&header) {
        out.info(&line);
    }
    let dma = crate::rt::dma_latency::DmaLatency::request_zero();
    out.debug("c-states disabled");
    out.debug(&format!(
        "enabling detector module (threshold: {})",
        s.threshold_us
    ));
    out.debug(&format!(
        "detector module enabled (threshold: {})",
        s.threshold_us
    ));
    let outcome = hwlat_run::run_prepared(&plan, prepared);
    out.debug("disabling detector module");
    drop(dma);
    out.debug("c-states enabled");
    out.debug("detector module disabled");
    if let Some(e) = &outcome.error {
        return Err(UsageError(format!("the sampler failed: {e}")));
    }
    if outcome.end_reason == crate::report::EndReason::Interrupted {
        out.print("interrupted");
    }
    finish(&s, &outcome, &mut out)
}

/// Everything after the test, in hwlatdetect's order; the exit code.
fn finish(
    s: &HwlatdetectSettings,
    outcome: &HwlatOutcome,
    out: &mut text::Output,
) -> Result<i32, UsageError> {
    let mut samples: Vec<HwlatSample> = outcome
        .cpus
        .iter()
        .flat_map(hwlat_run::samples_of)
        .collect();
    samples.sort_by_key(|x| (x.realtime_ns, x.cpu));
    if s.watch {
        for sample in &samples {
            out.print(&text::sample_line(sample));
        }
    }
    for line in text::summary_lines(&samples, hwlat_run::measured_seconds(outcome)) {
        out.info(&line);
    }
    if outcome.smi.is_countable() {
        let per_cpu: Vec<(usize, u64)> = outcome.smis.iter().map(|(&c, &n)| (c, n)).collect();
        let (each, total) = text::smi_lines(&per_cpu);
        for line in each {
            out.print(&line);
        }
        out.info(&total);
    }
    if let Some(path) = &s.report {
        save(path, &samples)?;
        out.print(&text::saved_line(path, samples.len()));
    }
    if !s.watch {
        for sample in &samples {
            out.print(&text::sample_line(sample));
        }
    }
    Ok(i32::from(text::max_latency_us(&samples) > s.hardlimit_us))
}

/// `--report FILE`: the sample lines (replaced atomically when a regular
/// file; a FIFO, device or symlink's target is written through).
fn save(path: &str, samples: &[HwlatSample]) -> Result<(), UsageError> {
    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
        for sample in samples {
            writeln!(w, "{}", text::sample_line(sample))?;
        }
        Ok(())
    })
    .map_err(|e| UsageError(format!("could not write the report {path}: {e}")))
}
