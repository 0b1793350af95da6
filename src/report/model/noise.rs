//! What only an OS-noise test (`latscope noise`) holds in the Report: its
//! configuration and, per measured CPU, the noise figures beside the
//! Series' core (whose samples are the interruptions: every gap between two
//! consecutive clock reads of the spinning thread above the threshold).

use serde::{Deserialize, Serialize};

/// How an OS-noise test was configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseConfig {
    /// One spinning thread per CPU listed.
    pub cpus: Vec<usize>,
    /// How the CPUs were chosen: `named` (--cpus), `isolated` (the kernel's
    /// isolated CPUs), or `all-but-one` (every usable CPU but the first,
    /// which the rest of the process keeps, and its SMT siblings).
    pub cpus_from: String,
    /// A gap between two clock reads above this is an interruption, ns.
    pub threshold_ns: u64,
    /// `--runtime`/`--period`: the spinner runs `runtime_ns` of every
    /// `period_ns` and sleeps the rest (as osnoise); both equal = always.
    pub runtime_ns: u64,
    pub period_ns: u64,
    /// What the spinner reads: `rdtsc (2597 MHz, calibrated against
    /// CLOCK_MONOTONIC)` where the TSC is constant, else
    /// `clock_gettime(CLOCK_MONOTONIC)` (the vDSO).
    pub clock: String,
    /// `/proc/sys/kernel/sched_rt_runtime_us` and `sched_rt_period_us` at the
    /// start (None when unreadable): a real-time spinner on a CPU that is not
    /// isolated is stopped by RT throttling for the difference every period,
    /// which shows as one long interruption.
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<i64>,
    /// `--force`: a real-time spinner allowed on a CPU that is not isolated
    /// with RT throttling off.
    pub forced: bool,
    /// The CPUs the default choice left out and why, one line each
    /// (rt::pod_cpus: outside the cgroup's cpuset, housekeeping); empty
    /// with `--cpus`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus_left_out: Vec<String>,
    /// The interference counter that tells the hardware's interruptions
    /// from the OS's: whether it ran, and what it is or why it did not
    /// (absent: not asked, as in the oslat drop-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_counter: Option<HwCounter>,
}

/// Whether the interference counter ran on a noise test, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwCounter {
    pub ran: bool,
    /// What ran (`bpf interference counter ...`), or why it did not.
    pub detail: String,
    /// The hypervisor this guest runs under (doctor's name), when the
    /// counter ran: its hardware interruptions are the host's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
}

/// One spinning thread of an OS-noise test: the noise of its CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCpu {
    pub cpu: usize,
    pub tid: i32,
    /// Whether the kernel lists the CPU as isolated (`isolcpus`).
    pub isolated: bool,
    /// Time the thread spun (measured): the run less the duty cycle's off
    /// time, ns.
    pub measured_ns: u64,
    /// Sum of the interruptions, ns.
    pub noise_ns: u64,
    /// noise_ns / measured_ns, in percent.
    pub noise_percent: f64,
    /// Clock reads (loop iterations): how often the loop looked.
    pub loops: u64,
    /// The clock reads per second of spinning (iterations / measured time).
    pub loops_per_s: f64,
    /// With `--trace-spikes`: what took the CPU in the interruptions traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causes: Option<NoiseCauses>,
    /// The `oslat` drop-in: oslat's own figures of this CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oslat: Option<OslatCpu>,
    /// With the interference counter: the interruptions across which it
    /// did not move (hardware, or the hypervisor in a guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<NoiseHardware>,
}

/// One CPU's hardware interruptions: no IRQ, softirq, NMI or context
/// switch ran in them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseHardware {
    pub interruptions: u64,
    /// Their sum and the longest, ns.
    pub noise_ns: u64,
    pub max_ns: u64,
    /// The last of them (at most 256), oldest first.
    pub last: Vec<HwInterruption>,
}

/// One hardware interruption: when it began (CLOCK_MONOTONIC ns, the
/// clock of `--samples`) and how long it was (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HwInterruption {
    pub at_ns: u64,
    pub ns: u64,
}

impl super::Report {
    /// The `oslat` drop-in's figures, per CPU in the order measured.
    pub fn oslat_cpus(&self) -> Vec<(usize, &OslatCpu)> {
        self.tests
            .iter()
            .flat_map(|t| t.series.iter())
            .filter_map(|s| {
                let n = s.noise_cpu()?;
                Some((n.cpu, n.oslat.as_ref()?))
            })
            .collect()
    }
}

/// oslat's figures of one CPU, in its units (`scale`): every loop's gap,
/// counted in `buckets` (bucket j is labelled with its upper edge,
/// `scale.label_us(j, bias)`; the last takes everything above).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OslatCpu {
    /// The counter's ticks per microsecond ("Counter Freq").
    pub counter_mhz: u64,
    /// How a gap became a figure: rt-tests 2.40's whole microseconds, or
    /// `-W`'s bucket width (rt-tests 2.5 and later). Older reports: 2.40's.
    #[serde(default)]
    pub scale: OslatScale,
    /// `-B`: the smallest gap of the pre-heat, taken off every bucket, in
    /// `scale`'s unit.
    #[serde(alias = "bias_us")]
    pub bias: u64,
    pub buckets: Vec<u64>,
    /// The smallest and largest gap, in `scale`'s unit.
    #[serde(alias = "min_us")]
    pub min: u64,
    #[serde(alias = "max_us")]
    pub max: u64,
    /// oslat's average: each bucket's count times its label, plus what the
    /// last bucket's gaps exceed it by, over the loops; us.
    pub average_us: f64,
    /// From the first read to the last, by the counter, seconds.
    pub duration_s: f64,
}

/// How oslat turns a gap of counter ticks into its figures.
///
/// rt-tests 2.40 (`classic`): `floor(ticks / MHz) + 1` whole microseconds,
/// 1 us buckets. rt-tests 2.5 added `-W/--bucket-width NS` and 2.7 made the
/// conversion a plain floor: a gap is `floor(ticks * unit_per_us / MHz)`
/// units, where the unit is the microsecond, or the nanosecond when the
/// width is not a multiple of 1000 (then every figure is printed in us
/// with 3 decimals, and the JSON's `min`/`max` are integers of ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OslatScale {
    /// Units per microsecond: 1 (us) or 1000 (ns).
    pub unit_per_us: u64,
    /// One bucket's width, in units.
    pub bucket_width: u64,
    /// rt-tests 2.40's conversion (no `-W`).
    pub classic: bool,
}

impl Default for OslatScale {
    fn default() -> OslatScale {
        OslatScale::CLASSIC
    }
}

impl OslatScale {
    /// rt-tests 2.40 oslat's.
    pub const CLASSIC: OslatScale = OslatScale {
        unit_per_us: 1,
        bucket_width: 1,
        classic: true,
    };

    /// A gap of `ticks` of a `mhz` counter, in units.
    #[inline]
    pub fn gap(&self, ticks: u64, mhz: u64) -> u64 {
        let mhz = mhz.max(1);
        if self.classic {
            ticks / mhz + 1
        } else {
            let units = u128::from(ticks) * u128::from(self.unit_per_us) / u128::from(mhz);
            u64::try_from(units).unwrap_or(u64::MAX)
        }
    }

    /// The bucket of a gap of `units`, `bias` (units) taken off first. Both
    /// versions put a gap below the bias in the smallest bucket: 2.40
    /// clamps the index at 0; 2.8 makes the gap 1 unit before dividing by
    /// the width (where its unsigned subtraction wraps for a gap below the
    /// bias, this stays at 1 unit, as its comment intends).
    #[inline]
    pub fn bucket(&self, units: u64, bias: u64) -> u64 {
        if self.classic {
            (units - 1).saturating_sub(bias)
        } else {
            let units = match bias {
                0 => units,
                _ if units > bias => units - bias,
                _ => 1,
            };
            units / self.bucket_width.max(1)
        }
    }

    /// Digits after the point of every figure printed in us.
    pub fn decimals(&self) -> usize {
        if self.unit_per_us == 1 { 0 } else { 3 }
    }

    /// The upper edge of bucket `j` (its label), us.
    pub fn label_us(&self, j: usize, bias: u64) -> f64 {
        (bias as f64 + (j as f64 + 1.0) * self.bucket_width as f64) / self.unit_per_us as f64
    }

    /// Bucket `j`'s label as oslat writes it in its JSON (`%.*f`; 2.40's
    /// `%lu`).
    pub fn label(&self, j: usize, bias: u64) -> String {
        format!("{:.*}", self.decimals(), self.label_us(j, bias))
    }

    /// `units` in us as oslat prints its minimum, maximum and bias (`%.*f`
    /// of units / unit_per_us; 2.40's `%lu`).
    pub fn us_text(&self, units: u64) -> String {
        if self.unit_per_us == 1 {
            units.to_string()
        } else {
            format!("{:.3}", units as f64 / self.unit_per_us as f64)
        }
    }

    /// `units` in ns.
    pub fn ns(&self, units: u64) -> u64 {
        units.saturating_mul(1000) / self.unit_per_us.max(1)
    }
}

/// The causes of one CPU's traced interruptions (those above `--trace-spikes`
/// that the spike trace kept), summed over them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseCauses {
    /// Interruptions attributed.
    pub interruptions: u64,
    /// Their total length, ns.
    pub interrupted_ns: u64,
    /// What ran in them (IRQs, softirqs, system vectors such as the local
    /// timer, tasks), largest first; `ns` summed, `count` summed.
    pub causes: Vec<super::Cause>,
    /// Time no traced event explains: with the spinner's own time taken
    /// out, what the hardware (SMIs) or the hypervisor (VM exits) took, as
    /// hwnoise counts it.
    pub unexplained_ns: u64,
}

impl NoiseCauses {
    /// `local_timer 62 %, RCU softirq 20 %, kworker/1:1 11 %, unexplained 7 %`:
    /// the first `keep` causes and the unexplained share, of the time traced.
    pub fn shares_line(&self, keep: usize) -> String {
        self.shares_line_naming(keep, UNEXPLAINED)
    }

    /// `shares_line` with the time no traced event explains named `word`
    /// (`unexplained (hypervisor)` where the interference counter ran in a
    /// guest, as the HW line names its time).
    pub fn shares_line_naming(&self, keep: usize, word: &str) -> String {
        let total: u64 = self.causes.iter().map(|c| c.ns).sum::<u64>() + self.unexplained_ns;
        if total == 0 {
            return "nothing traced".to_string();
        }
        // A share that rounds to 0 % is still there: `<1 %`.
        let pct = |ns: u64| {
            let share = ns as f64 * 100.0 / total as f64;
            if share < 0.5 {
                "<1 %".to_string()
            } else {
                format!("{share:.0} %")
            }
        };
        // Tasks of one name (several rustc processes) are one cause here.
        let mut named: Vec<(String, u64)> = Vec::new();
        for c in &self.causes {
            let name = cause_name(c);
            match named.iter_mut().find(|(n, _)| *n == name) {
                Some((_, ns)) => *ns += c.ns,
                None => named.push((name, c.ns)),
            }
        }
        named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut parts: Vec<String> = named
            .iter()
            .take(keep)
            .map(|(name, ns)| format!("{name} {}", pct(*ns)))
            .collect();
        let rest: u64 = named.iter().skip(keep).map(|(_, ns)| ns).sum();
        if rest > 0 {
            parts.push(format!("other {}", pct(rest)));
        }
        if self.unexplained_ns > 0 {
            parts.push(format!("{word} {}", pct(self.unexplained_ns)));
        }
        parts.join(", ")
    }
}

/// The time no traced event explains, as the causes line names it when
/// nothing says whose it is.
pub const UNEXPLAINED: &str = "unexplained (hardware or hypervisor)";

/// A cause as people name it: `local_timer`, `IRQ 24 virtio0-input`,
/// `RCU softirq`, `kworker/1:1`.
pub fn cause_name(c: &super::Cause) -> String {
    match c.kind.as_str() {
        "softirq" => format!("{} softirq", c.name),
        "irq" if c.name.starts_with(|ch: char| ch.is_ascii_digit()) => format!("IRQ {}", c.name),
        "task" => c.name.split(" (pid ").next().unwrap_or(&c.name).to_string(),
        _ => c.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Cause;

    fn cause(kind: &str, name: &str, ns: u64) -> Cause {
        Cause {
            kind: kind.into(),
            name: name.into(),
            ns,
            count: 1,
        }
    }

    #[test]
    fn the_shares_of_the_causes() {
        let causes = NoiseCauses {
            interruptions: 3,
            interrupted_ns: 100,
            causes: vec![
                cause("irq", "local_timer", 62),
                cause("softirq", "RCU", 20),
                cause("task", "kworker/1:1 (pid 42)", 11),
            ],
            unexplained_ns: 7,
        };
        assert_eq!(
            causes.shares_line(3),
            "local_timer 62 %, RCU softirq 20 %, kworker/1:1 11 %, unexplained (hardware or hypervisor) 7 %"
        );
        assert_eq!(
            causes.shares_line(1),
            "local_timer 62 %, other 31 %, unexplained (hardware or hypervisor) 7 %"
        );
        assert_eq!(
            cause_name(&cause("irq", "24 virtio0-input", 1)),
            "IRQ 24 virtio0-input"
        );
        assert_eq!(NoiseCauses::default().shares_line(3), "nothing traced");
        // Tasks of one name are one cause; a share under 0.5 % is `<1 %`.
        let same_name = NoiseCauses {
            causes: vec![
                cause("task", "rustc (pid 1)", 30),
                cause("irq", "local_timer", 40),
                cause("task", "rustc (pid 2)", 30),
            ],
            ..NoiseCauses::default()
        };
        assert_eq!(same_name.shares_line(3), "rustc 60 %, local_timer 40 %");
        let tiny = NoiseCauses {
            causes: vec![cause("irq", "local_timer", 999)],
            unexplained_ns: 1,
            ..NoiseCauses::default()
        };
        assert_eq!(
            tiny.shares_line(3),
            "local_timer 100 %, unexplained (hardware or hypervisor) <1 %"
        );
    }
}
