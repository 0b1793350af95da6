//! The counter a spinning loop reads (`latscope noise`'s spinner, the
//! oslat drop-in's, `latscope hwlat`'s sampler): the CPU's time-stamp
//! counter where it ticks at a constant rate in every state (x86_64 with
//! `constant_tsc` and `nonstop_tsc`, or the kernel itself keeping time with
//! it), else CLOCK_MONOTONIC.
//!
//! Why: a spinning loop's whole cost per iteration is its reads. `rdtsc` is
//! a single instruction; CLOCK_MONOTONIC through the vDSO reads the TSC too,
//! then scales it and checks the kernel's sequence counter, which made the
//! loop look 14 % less often than oslat's (docs/benchmarks.md part 8).
//! Gaps are compared in ticks; only the interruptions are converted to
//! nanoseconds, with a factor calibrated against CLOCK_MONOTONIC and
//! applied in integer arithmetic (`ns = ticks * mult >> shift`), and their
//! times to CLOCK_MONOTONIC through a `Timebase`: a tick count read with
//! the clock (the anchor), renewed often enough that the calibrated
//! scale's drift from the clock stays far below a microsecond.

use crate::rt::clock::monotonic_ns;

/// A source of ticks the loop reads; monomorphised so that the loop holds
/// one inlined read and no branch on the kind.
pub trait Ticks {
    fn read() -> u64;
}

/// The time-stamp counter (`rdtsc`). No `lfence` before it (oslat puts one):
/// the loop stores nothing that must be ordered with the read, and a read
/// executed a few dozen cycles early cannot change a gap of a microsecond.
#[cfg(target_arch = "x86_64")]
pub struct Tsc;

#[cfg(target_arch = "x86_64")]
impl Ticks for Tsc {
    #[inline(always)]
    fn read() -> u64 {
        // SAFETY: rdtsc has no memory effects; `Counter::detect` chose it
        // only where the processor has a constant, non-stop TSC.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (one tick = 1 ns).
pub struct Monotonic;

impl Ticks for Monotonic {
    #[inline(always)]
    fn read() -> u64 {
        monotonic_ns()
    }
}

/// Ticks to nanoseconds: `ns = ticks * mult >> SHIFT` (the kernel's
/// clocksource arithmetic), and back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    mult: u64,
}

const SHIFT: u32 = 32;

impl Scale {
    /// One tick = one nanosecond.
    pub const IDENTITY: Scale = Scale { mult: 1 << SHIFT };

    /// The scale of a counter that advanced `ticks` while CLOCK_MONOTONIC
    /// advanced `ns` (both above 0).
    pub fn from_interval(ticks: u64, ns: u64) -> Scale {
        let mult = ((u128::from(ns) << SHIFT) / u128::from(ticks.max(1))).max(1);
        Scale {
            mult: u64::try_from(mult).unwrap_or(u64::MAX),
        }
    }

    #[inline]
    pub fn ns(self, ticks: u64) -> u64 {
        let ns = (u128::from(ticks) * u128::from(self.mult)) >> SHIFT;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// The ticks of `ns` nanoseconds, rounded down.
    pub fn ticks(self, ns: u64) -> u64 {
        let ticks = (u128::from(ns) << SHIFT) / u128::from(self.mult);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// Ticks per microsecond, to the nearest (oslat's "Counter Freq" in MHz).
    pub fn mhz(self) -> u64 {
        (self.ticks(1_000_000_000) + 500_000) / 1_000_000
    }
}

/// Which counter a spinner reads, with its scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// The TSC, at `Scale`.
    Tsc(Scale),
    Monotonic,
}

/// How long the calibration measures: long enough that the two
/// CLOCK_MONOTONIC reads' own cost (tens of ns) is below one part in a
/// million, short enough not to be noticed at start.
const CALIBRATION_NS: u64 = 30_000_000;

impl Counter {
    /// The TSC when it can be trusted here, else CLOCK_MONOTONIC. The
    /// first call calibrates (about 30 ms); the process keeps that result,
    /// so that every test and the report describe the same counter.
    pub fn detect() -> Counter {
        static DETECTED: std::sync::OnceLock<Counter> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            if tsc_is_reliable() {
                calibrate()
            } else {
                Counter::Monotonic
            }
        })
    }

    pub fn scale(self) -> Scale {
        match self {
            Counter::Tsc(scale) => scale,
            Counter::Monotonic => Scale::IDENTITY,
        }
    }

    /// For the report: what the loop reads.
    pub fn describe(self) -> String {
        match self {
            Counter::Tsc(scale) => format!(
                "rdtsc ({} MHz, calibrated against CLOCK_MONOTONIC)",
                scale.mhz()
            ),
            Counter::Monotonic => "clock_gettime(CLOCK_MONOTONIC)".to_string(),
        }
    }

    /// The current count, read once (not in a loop: loops are generic over
    /// `Ticks`).
    pub fn now(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            Counter::Tsc(_) => Tsc::read(),
            _ => Monotonic::read(),
        }
    }
}

/// Ticks to CLOCK_MONOTONIC time: a tick count and the monotonic time read
/// together (the anchor), and the scale. Only the time since the anchor is
/// converted with the calibrated scale, which drifts from the clock by parts
/// per million (the calibration's own error, NTP's slewing of the clock):
/// a loop anchors again often (noise at each check, every 100 us; hwlat at
/// each sub-window), so a time is off by nanoseconds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timebase {
    /// The anchor: `ticks` were read at monotonic `ns`.
    pub ticks: u64,
    pub ns: u64,
    pub scale: Scale,
}

impl Timebase {
    /// Ticks that are CLOCK_MONOTONIC nanoseconds.
    pub const IDENTITY: Timebase = Timebase {
        ticks: 0,
        ns: 0,
        scale: Scale::IDENTITY,
    };

    /// Monotonic ns of tick count `t`, before or after the anchor.
    #[inline]
    pub fn ns_at(&self, t: u64) -> u64 {
        if t >= self.ticks {
            self.ns.saturating_add(self.scale.ns(t - self.ticks))
        } else {
            self.ns.saturating_sub(self.scale.ns(self.ticks - t))
        }
    }

    /// The tick count at monotonic `ns` (rounded down after the anchor).
    pub fn ticks_at(&self, ns: u64) -> u64 {
        if ns >= self.ns {
            self.ticks.saturating_add(self.scale.ticks(ns - self.ns))
        } else {
            self.ticks.saturating_sub(self.scale.ticks(self.ns - ns))
        }
    }
}

impl Counter {
    /// A fresh anchor: the counter read just before and just after
    /// CLOCK_MONOTONIC, their mean taken as read with it (off by half the
    /// clock read at most, some 10 ns). CLOCK_MONOTONIC is its own.
    pub fn anchor(self) -> Timebase {
        match self {
            #[cfg(target_arch = "x86_64")]
            Counter::Tsc(scale) => {
                let (ticks, ns) = read_with_clock();
                Timebase { ticks, ns, scale }
            }
            _ => Timebase::IDENTITY,
        }
    }
}

/// The TSC read closest to a CLOCK_MONOTONIC read: the mean of the TSC
/// just before and just after it.
#[cfg(target_arch = "x86_64")]
fn read_with_clock() -> (u64, u64) {
    let before = Tsc::read();
    let ns = monotonic_ns();
    let after = Tsc::read();
    (before / 2 + after / 2 + (before % 2 + after % 2) / 2, ns)
}

/// Whether the TSC ticks at one rate in every CPU state and on every CPU:
/// the processor says so (`constant_tsc` and `nonstop_tsc`), or the kernel
/// keeps time with it (it checks the TSC's synchronisation across CPUs and
/// drops it as clocksource when it is not).
fn tsc_is_reliable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if clocksource.trim() == "tsc" {
        return true;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo_has_stable_tsc(&cpuinfo)
}

/// The `flags` line of the first processor lists both `constant_tsc` and
/// `nonstop_tsc`.
fn cpuinfo_has_stable_tsc(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| {
            let flags: Vec<&str> = l.split_whitespace().collect();
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        })
}

#[cfg(target_arch = "x86_64")]
fn calibrate() -> Counter {
    // Each end pairs a CLOCK_MONOTONIC read with the TSC read closest to it.
    let (t0, n0) = read_with_clock();
    crate::rt::clock::sleep_until_ns(n0 + CALIBRATION_NS);
    let (t1, n1) = read_with_clock();
    match (t1.checked_sub(t0), n1.checked_sub(n0)) {
        (Some(ticks), Some(ns)) if ticks > 0 && ns > 0 => {
            Counter::Tsc(Scale::from_interval(ticks, ns))
        }
        _ => Counter::Monotonic,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate() -> Counter {
    Counter::Monotonic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_arithmetic_is_exact_enough() {
        // 2597 MHz measured over 30 ms.
        let s = Scale::from_interval(77_910_000, 30_000_000);
        assert_eq!(s.mhz(), 2597);
        assert_eq!(s.ns(2597), 999); // 2^32 steps: one ns of 1000 lost at most
        assert_eq!(s.ns(2_597_000_000), 1_000_000_000 - 1);
        assert_eq!(s.ticks(1000), 2597);
        assert_eq!(s.ticks(1_000_000_000), 2_597_000_001);
        assert_eq!(Scale::IDENTITY.ns(12_345), 12_345);
        assert_eq!(Scale::IDENTITY.ticks(12_345), 12_345);
        assert_eq!(Scale::IDENTITY.mhz(), 1000);
        // No overflow at the extremes.
        assert_eq!(Scale::IDENTITY.ns(u64::MAX), u64::MAX);
        assert_eq!(Scale::from_interval(0, 5).ns(1), 5);
    }

    #[test]
    fn a_timebase_converts_both_ways_around_its_anchor() {
        // 2597 MHz; the anchor: tick 10,000,000 read at 5 s.
        let scale = Scale::from_interval(77_910_000, 30_000_000);
        let tb = Timebase {
            ticks: 10_000_000,
            ns: 5_000_000_000,
            scale,
        };
        assert_eq!(tb.ns_at(10_000_000), 5_000_000_000);
        assert_eq!(tb.ns_at(10_000_000 + 2_597_000), 5_001_000_000 - 1);
        assert_eq!(tb.ns_at(10_000_000 - 2_597_000 * 2), 4_998_000_000 + 1);
        assert_eq!(tb.ticks_at(5_001_000_000), 10_000_000 + 2_597_000);
        assert_eq!(tb.ticks_at(4_999_000_000), 10_000_000 - 2_597_000);
        // Round trips within the ticks of a nanosecond.
        for t in [0, 9_999_999, 10_000_001, 77_000_000_000] {
            assert!(tb.ticks_at(tb.ns_at(t)).abs_diff(t) <= 3, "{t}");
        }
        // Far before the anchor: no underflow.
        let early = Timebase { ns: 10, ..tb };
        assert_eq!(early.ns_at(0), 0);
        assert_eq!(Timebase::IDENTITY.ns_at(12_345), 12_345);
        assert_eq!(Timebase::IDENTITY.ticks_at(12_345), 12_345);
    }

    #[test]
    fn a_live_anchor_tells_the_clocks_time() {
        // Converted right after the anchor, then 20 ms later: within a few
        // microseconds of CLOCK_MONOTONIC read beside it (a wrong anchor
        // or scale is off by milliseconds; a preempted read by the time
        // the preemption took, hence the retries).
        let c = Counter::detect();
        let close = |tb: Timebase| {
            (0..5).any(|_| {
                let t = c.now();
                let ns = monotonic_ns();
                tb.ns_at(t).abs_diff(ns) < 5_000
            })
        };
        let tb = c.anchor();
        assert!(close(tb), "{c:?} {tb:?}");
        crate::rt::clock::sleep_until_ns(monotonic_ns() + 20_000_000);
        assert!(close(tb), "{c:?} {tb:?} after 20 ms");
    }

    #[test]
    fn cpuinfo_flags_decide() {
        assert!(cpuinfo_has_stable_tsc(
            "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rep_good\n"
        ));
        assert!(!cpuinfo_has_stable_tsc(
            "flags\t\t: fpu tsc constant_tsc rep_good\n"
        ));
        assert!(!cpuinfo_has_stable_tsc("processor\t: 0\n"));
    }

    #[test]
    fn the_counter_advances_at_the_clocks_rate() {
        let c = Counter::detect();
        let (t0, n0) = (c.now(), monotonic_ns());
        crate::rt::clock::sleep_until_ns(n0 + 20_000_000);
        let (t1, n1) = (c.now(), monotonic_ns());
        let measured = c.scale().ns(t1 - t0);
        // Within 5 %: the sleep and the reads are not paired tightly here;
        // a wrong scale would be off by a factor.
        assert!(
            measured.abs_diff(n1 - n0) < (n1 - n0) / 20,
            "{measured} vs {}",
            n1 - n0
        );
    }
}
