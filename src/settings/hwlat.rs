//! `latscope hwlat`'s arguments into checked settings, and the duty-cycle
//! rule `hwlatdetect` shares: a sampler may not outspin RT throttling.

use super::{UsageError, VerdictSettings, check_cpu, checked_priority};
use crate::cli::hwlat::{HwlatArgs, HwlatFormat, TierArg};
use crate::hwlat::tier::{TierChoice, TierError};
use crate::rt::sched::{self, Policy};
use crate::units::format_ns;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct HwlatSettings {
    pub cpus: Vec<usize>,
    pub priority: i32,
    pub threshold_ns: u64,
    pub width_ns: u64,
    pub window_ns: u64,
    pub sub_window_ns: u64,
    pub duration: Option<Duration>,
    pub format: HwlatFormat,
    pub tier: TierChoice,
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
    pub lock_memory: bool,
    pub hold_dma_latency: bool,
    pub verdict: VerdictSettings,
}

/// The duty cycle's rules: the width fits in the window (and a sub-window
/// in the width), and the samplers' share of each CPU stays under the RT
/// throttling budget (`sched_rt_runtime_us` of every `sched_rt_period_us`),
/// which would otherwise stop them mid-width and be measured as a gap.
pub fn check_duty(
    width_ns: u64,
    window_ns: u64,
    rt_runtime_us: Option<i64>,
    rt_period_us: Option<i64>,
) -> Result<(), UsageError> {
    if width_ns >= window_ns {
        return Err(UsageError(format!(
            "the width {} is not shorter than the window {}: give a width below the window (the sampler sleeps the rest)",
            format_ns(width_ns as i64),
            format_ns(window_ns as i64)
        )));
    }
    let (Some(runtime), Some(period)) = (rt_runtime_us, rt_period_us) else {
        return Ok(());
    };
    // -1: RT throttling is off, nothing stops the sampler.
    if runtime < 0 || period <= 0 {
        return Ok(());
    }
    let (runtime_ns, period_ns) = (runtime as u64 * 1000, period as u64 * 1000);
    let over_share = u128::from(width_ns) * u128::from(period_ns)
        > u128::from(runtime_ns) * u128::from(window_ns);
    if width_ns > runtime_ns || over_share {
        return Err(UsageError(format!(
            "sampling {} of every {} exceeds the RT throttling budget ({} us of every {} us, kernel.sched_rt_runtime_us): the kernel would stop the samplers mid-width; give a smaller width or a larger window",
            format_ns(width_ns as i64),
            format_ns(window_ns as i64),
            runtime,
            period
        )));
    }
    Ok(())
}

/// `--tier`: a tier this build has not yet is bad usage.
fn tier_of(arg: TierArg) -> Result<TierChoice, UsageError> {
    match arg {
        TierArg::Auto => Ok(TierChoice::Auto),
        TierArg::Bpf => Ok(TierChoice::Bpf),
        TierArg::Unprivileged => Ok(TierChoice::Unprivileged),
        TierArg::Tracefs => Err(UsageError(TierError::NotAvailable("tracefs").to_string())),
    }
}

impl HwlatSettings {
    pub fn from_args(args: &HwlatArgs) -> Result<HwlatSettings, UsageError> {
        let machine = crate::doctor::Machine::live();
        let (rt_runtime_us, rt_period_us) = crate::doctor::sched::rt_bandwidth(&machine);
        let allowed = sched::allowed_cpus();
        let cpus = match &args.cpu {
            Some(list) => {
                for &cpu in &list.0 {
                    check_cpu(cpu, &allowed)?;
                }
                list.0.clone()
            }
            None => allowed,
        };
        if cpus.is_empty() {
            return Err(UsageError("no CPU is usable".into()));
        }
        check_duty(args.width, args.window, rt_runtime_us, rt_period_us)?;
        if args.sub_window > args.width {
            return Err(UsageError(format!(
                "--sub-window {} is longer than --width {}: give a sub-window within the width",
                format_ns(args.sub_window as i64),
                format_ns(args.width as i64)
            )));
        }
        Ok(HwlatSettings {
            cpus,
            priority: checked_priority(args.priority, Policy::Fifo)?,
            threshold_ns: args.threshold,
            width_ns: args.width,
            window_ns: args.window,
            sub_window_ns: args.sub_window,
            duration: args.duration,
            format: args.format,
            tier: tier_of(args.tier)?,
            rt_runtime_us,
            rt_period_us,
            lock_memory: !args.no_mlockall,
            hold_dma_latency: !args.no_dma_latency,
            verdict: VerdictSettings::from_args(&args.verdict)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duty_cycle_must_fit_the_window_and_the_rt_budget() {
        let ms = 1_000_000;
        // hwlatdetect's defaults under the usual 950 ms of 1 s.
        assert!(check_duty(500 * ms, 1000 * ms, Some(950_000), Some(1_000_000)).is_ok());
        // OpenShift's: 950 ms of 10 s.
        assert!(check_duty(950 * ms, 10_000 * ms, Some(950_000), Some(1_000_000)).is_ok());
        // 960 ms of every 1 s: over the share.
        let e = check_duty(960 * ms, 1000 * ms, Some(950_000), Some(1_000_000)).unwrap_err();
        assert!(e.0.contains("RT throttling budget"), "{}", e.0);
        // 2 s of every 10 s: a share of 20 %, but one stretch longer than the budget.
        assert!(check_duty(2000 * ms, 10_000 * ms, Some(950_000), Some(1_000_000)).is_err());
        // Throttling off: anything below the window.
        assert!(check_duty(990 * ms, 1000 * ms, Some(-1), Some(1_000_000)).is_ok());
        assert!(check_duty(1000 * ms, 1000 * ms, Some(-1), Some(1_000_000)).is_err());
    }
}
