//! Counting SMIs (System Management Interrupts: the firmware takes the CPU
//! and the kernel never knows): perf's `msr/smi/` event where the kernel
//! offers it (the msr PMU's MSR_SMI_COUNT, on the Intel models the kernel
//! lists), else `/dev/cpu/N/msr` at 0x34 as cyclictest's `--smi` reads it,
//! on an Intel family 6 processor with MSRs (rt-tests 2.7's rule: every
//! model, not 2.4's list). One decision for `latscope hwlat`, the
//! `hwlatdetect` name and `latscope doctor`, on the facts `SmiFacts` holds
//! (the live machine's, or a doctor's fixture).

use super::perf::CpuCounter;
use super::pmu::{PmuEvent, event_at};
use std::collections::BTreeMap;
use std::path::Path;

/// MSR_SMI_COUNT.
const MSR_SMI_COUNT: u64 = 0x34;

/// How SMIs are counted on this machine, or why they cannot be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiCounting {
    /// perf's `msr/smi/` event, one counting event per measured CPU.
    Perf(PmuEvent),
    /// `/dev/cpu/N/msr` at 0x34 (MSR_SMI_COUNT) for every measured CPU.
    Msr,
    NotCountable(String),
}

impl SmiCounting {
    pub fn is_countable(&self) -> bool {
        !matches!(self, SmiCounting::NotCountable(_))
    }
}

/// What decides whether SMIs can be counted: files under `root` (the msr
/// PMU in sysfs, `/dev/cpu/N/msr`) and what only the processor and the
/// kernel tell.
pub struct SmiFacts<'a> {
    pub root: &'a Path,
    /// CPUID: an Intel family 6 processor with MSRs.
    pub intel_family_6_with_msr: bool,
    /// Opens (and closes) `event` on `cpu`: Err is why it cannot be.
    pub try_perf: &'a dyn Fn(&PmuEvent, usize) -> Result<(), String>,
}

impl SmiFacts<'static> {
    /// The machine latscope runs on.
    pub fn live() -> SmiFacts<'static> {
        SmiFacts {
            root: Path::new("/"),
            intel_family_6_with_msr: super::sysinfo::intel_family_6_with_msr(),
            try_perf: &try_perf_live,
        }
    }
}

/// Opens `event` on `cpu` of this machine and closes it: Err is why not.
pub fn try_perf_live(event: &PmuEvent, cpu: usize) -> Result<(), String> {
    CpuCounter::open(event, cpu)
        .map(drop)
        .map_err(|e| perf_refusal(event, cpu, &e))
}

fn perf_refusal(event: &PmuEvent, cpu: usize, e: &std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => " (needs root or CAP_PERFMON)",
        _ => "",
    };
    format!(
        "perf's {} event cannot be opened on CPU {cpu}: {}{hint}",
        event.name,
        super::os_error_text(e)
    )
}

impl SmiFacts<'_> {
    /// Whether something on this machine could count SMIs (the msr PMU's
    /// smi event, or the MSR of an Intel family 6 processor), counted or
    /// not: when it could, what stops it can be fixed.
    pub fn could_count(&self) -> bool {
        self.intel_family_6_with_msr || event_at(self.root, "msr", "smi").is_ok()
    }
}

/// How SMIs can be counted on `cpus`.
pub fn decide(cpus: &[usize], facts: &SmiFacts) -> SmiCounting {
    let perf_why = match event_at(facts.root, "msr", "smi") {
        Ok(event) => match cpus
            .iter()
            .find_map(|&cpu| (facts.try_perf)(&event, cpu).err())
        {
            None => return SmiCounting::Perf(event),
            Some(why) => why,
        },
        Err(why) => why.to_string(),
    };
    if !facts.intel_family_6_with_msr {
        return SmiCounting::NotCountable(format!(
            "{perf_why}, and the processor is not an Intel family 6 one, which alone has the SMI count MSR"
        ));
    }
    match cpus
        .iter()
        .find(|&&cpu| read_msr_count(facts.root, cpu).is_none())
    {
        None => SmiCounting::Msr,
        Some(cpu) => SmiCounting::NotCountable(format!(
            "{perf_why}, and /dev/cpu/{cpu}/msr cannot be read (modprobe msr; root)"
        )),
    }
}

/// How SMIs can be counted on `cpus` of the live machine.
pub fn smi_counting(cpus: &[usize]) -> SmiCounting {
    decide(cpus, &SmiFacts::live())
}

/// MSR_SMI_COUNT of `cpu` (its low 32 bits), when `/dev/cpu/N/msr` under
/// `root` can be read.
pub fn read_msr_count(root: &Path, cpu: usize) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(root.join(format!("dev/cpu/{cpu}/msr"))).ok()?;
    let mut bytes = [0u8; 8];
    file.read_exact_at(&mut bytes, MSR_SMI_COUNT).ok()?;
    Some(u64::from_le_bytes(bytes) & 0xffff_ffff)
}

/// SMIs counted over a run: the way decided, its counters opened and read
/// when the run starts; `finish` gives each CPU's SMIs since (and closes
/// the counters; dropping does too, on every way out).
#[derive(Debug)]
pub struct SmiCounter {
    pub counting: SmiCounting,
    counters: Vec<CpuCounter>,
    before: Vec<(usize, u64)>,
}

impl SmiCounter {
    /// Decides how SMIs are counted on `cpus` here and starts counting.
    pub fn start(cpus: &[usize]) -> SmiCounter {
        let mut counting = smi_counting(cpus);
        let mut counters = Vec::new();
        if let SmiCounting::Perf(event) = &counting {
            for &cpu in cpus {
                match CpuCounter::open(event, cpu) {
                    Ok(c) => counters.push(c),
                    Err(e) => {
                        counting = SmiCounting::NotCountable(perf_refusal(event, cpu, &e));
                        counters.clear();
                        break;
                    }
                }
            }
        }
        let mut counter = SmiCounter {
            counting,
            counters,
            before: Vec::new(),
        };
        counter.before = counter.read(cpus);
        counter
    }

    /// Each CPU's count now (a CPU whose count cannot be read: none).
    fn read(&self, cpus: &[usize]) -> Vec<(usize, u64)> {
        match &self.counting {
            SmiCounting::Perf(_) => self
                .counters
                .iter()
                .filter_map(|c| Some((c.cpu, c.read().ok()?)))
                .collect(),
            SmiCounting::Msr => cpus
                .iter()
                .filter_map(|&c| Some((c, read_msr_count(Path::new("/"), c)?)))
                .collect(),
            SmiCounting::NotCountable(_) => Vec::new(),
        }
    }

    /// SMIs per CPU since `start` (none when not countable).
    pub fn finish(self) -> BTreeMap<usize, u64> {
        let cpus: Vec<usize> = self.before.iter().map(|&(c, _)| c).collect();
        let after: BTreeMap<usize, u64> = self.read(&cpus).into_iter().collect();
        self.before
            .iter()
            .filter_map(|&(cpu, before)| {
                let now = *after.get(&cpu)?;
                Some((cpu, since(&self.counting, before, now)))
            })
            .collect()
    }
}

/// The SMIs between two reads: perf counts in 64 bits (the kernel
/// accounts the MSR's 32-bit wrap), the MSR itself wraps at 2^32.
fn since(counting: &SmiCounting, before: u64, after: u64) -> u64 {
    match counting {
        SmiCounting::Msr => after.wrapping_sub(before) & 0xffff_ffff,
        _ => after.saturating_sub(before),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with the msr PMU (`smi` offered or not) and MSR devices of `cpus`
    /// holding `count` at 0x34.
    fn tree(smi_event: bool, msr_cpus: &[usize], count: u64) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let pmu = root.path().join("sys/bus/event_source/devices/msr");
        std::fs::create_dir_all(pmu.join("events")).unwrap();
        std::fs::create_dir_all(pmu.join("format")).unwrap();
        std::fs::write(pmu.join("type"), "9\n").unwrap();
        std::fs::write(pmu.join("format/event"), "config:0-63\n").unwrap();
        std::fs::write(pmu.join("events/tsc"), "event=0x00\n").unwrap();
        if smi_event {
            std::fs::write(pmu.join("events/smi"), "event=0x04\n").unwrap();
        }
        for cpu in msr_cpus {
            let dir = root.path().join(format!("dev/cpu/{cpu}"));
            std::fs::create_dir_all(&dir).unwrap();
            let mut bytes = vec![0u8; 0x40];
            bytes[0x34..0x3c].copy_from_slice(&count.to_le_bytes());
            std::fs::write(dir.join("msr"), bytes).unwrap();
        }
        root
    }

    type TryPerf = fn(&PmuEvent, usize) -> Result<(), String>;

    fn facts<'a>(root: &'a tempfile::TempDir, intel: bool, try_perf: &'a TryPerf) -> SmiFacts<'a> {
        SmiFacts {
            root: root.path(),
            intel_family_6_with_msr: intel,
            try_perf,
        }
    }

    const OPENS: TryPerf = opens;
    const REFUSED: TryPerf = refused;

    fn opens(_: &PmuEvent, _: usize) -> Result<(), String> {
        Ok(())
    }

    fn refused(event: &PmuEvent, cpu: usize) -> Result<(), String> {
        Err(perf_refusal(
            event,
            cpu,
            &std::io::Error::from_raw_os_error(libc::EACCES),
        ))
    }

    #[test]
    fn perf_first_then_the_msr_then_why_not() {
        // The kernel offers msr/smi/: perf counts, whatever the processor.
        let intel = tree(true, &[0, 1], 7);
        match decide(&[0, 1], &facts(&intel, false, &OPENS)) {
            SmiCounting::Perf(event) => {
                assert_eq!((event.name.as_str(), event.config), ("msr/smi/", [4, 0, 0]))
            }
            other => panic!("{other:?}"),
        }
        // perf refused (not root), an Intel family 6 processor: the MSR.
        assert_eq!(
            decide(&[0, 1], &facts(&intel, true, &REFUSED)),
            SmiCounting::Msr
        );
        assert_eq!(read_msr_count(intel.path(), 1), Some(7));
        // ... and neither: both reasons, in one line.
        assert_eq!(
            decide(&[0, 1, 2], &facts(&intel, true, &REFUSED)),
            SmiCounting::NotCountable(
                "perf's msr/smi/ event cannot be opened on CPU 0: Permission denied (needs root or CAP_PERFMON), \
                 and /dev/cpu/2/msr cannot be read (modprobe msr; root)"
                    .into()
            )
        );
        // This machine's kind: no smi event, not an Intel family 6 processor.
        let amd = tree(false, &[], 0);
        let f = facts(&amd, false, &OPENS);
        assert_eq!(
            decide(&[0], &f),
            SmiCounting::NotCountable(
                "perf's msr PMU has no smi event, and the processor is not an Intel family 6 one, \
                 which alone has the SMI count MSR"
                    .into()
            )
        );
        assert!(!f.could_count());
        assert!(facts(&amd, true, &OPENS).could_count());
        assert!(facts(&intel, false, &REFUSED).could_count());
        let bare = tempfile::tempdir().unwrap();
        assert!(matches!(
            decide(&[0], &facts(&bare, false, &OPENS)),
            SmiCounting::NotCountable(why) if why.starts_with("this kernel has no msr perf PMU")
        ));
    }

    #[test]
    fn the_msr_wraps_at_32_bits_and_perf_does_not() {
        assert_eq!(since(&SmiCounting::Msr, 0xffff_fffe, 3), 5);
        assert_eq!(since(&SmiCounting::Msr, 10, 12), 2);
        let perf = SmiCounting::Perf(PmuEvent {
            name: "msr/smi/".into(),
            kind: 9,
            config: [4, 0, 0],
        });
        assert_eq!(since(&perf, 0x1_0000_0000, 0x1_0000_0002), 2);
        assert_eq!(since(&perf, 5, 3), 0);
        // The MSR's high half is not the count.
        let t = tree(false, &[0], 0xdead_0000_0009);
        assert_eq!(read_msr_count(t.path(), 0), Some(9));
    }

    /// Live: whatever this machine offers, a run's counter and its counts
    /// agree (counted: one count per CPU; not: none, and why in one line).
    #[test]
    fn a_live_run_counts_on_every_cpu_or_says_why_not() {
        let counter = SmiCounter::start(&[0]);
        let counting = counter.counting.clone();
        let counts = counter.finish();
        match counting {
            SmiCounting::NotCountable(why) => {
                assert!(counts.is_empty());
                assert!(!why.is_empty() && !why.contains('\n'), "{why}");
            }
            _ => assert_eq!(counts.keys().copied().collect::<Vec<_>>(), [0]),
        }
    }
}
