//! `perf_event_open(2)`: the attribute block latscope fills (a classic
//! tracepoint for a BPF program, `rt::bpf::attach`; a counting event of a
//! PMU such as `msr`, `rt::pmu`) and a counting event on one CPU, read
//! before and after a run (`rt::smi`). Every event is a descriptor: closed
//! when dropped, or when the process dies.

use super::pmu::PmuEvent;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// `struct perf_event_attr` up to `config2` (PERF_ATTR_SIZE_VER1, 72
/// bytes): the kernel accepts any published size and zero-fills the rest.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PerfEventAttr {
    pub kind: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bit fields (disabled, inherit, exclude_*, ...): all clear, so
    /// the event counts from the moment it is opened.
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
}

impl PerfEventAttr {
    /// A counting event (no sampling) of type `kind` with these config words.
    pub fn counting(kind: u32, [config, config1, config2]: [u64; 3]) -> PerfEventAttr {
        PerfEventAttr {
            kind,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            config1,
            config2,
            ..PerfEventAttr::default()
        }
    }
}

/// `perf_event_open(attr, pid, cpu, no group, CLOEXEC)`.
pub fn open(attr: &PerfEventAttr, pid: libc::pid_t, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            std::ptr::from_ref(attr),
            pid,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor from the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A counting event of every task on one CPU (pid -1, which needs
/// CAP_PERFMON or root, or `kernel.perf_event_paranoid` at 0 or below).
#[derive(Debug)]
pub struct CpuCounter {
    fd: OwnedFd,
    pub cpu: usize,
}

impl CpuCounter {
    pub fn open(event: &PmuEvent, cpu: usize) -> io::Result<CpuCounter> {
        let cpu_arg = i32::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let fd = open(
            &PerfEventAttr::counting(event.kind, event.config),
            -1,
            cpu_arg,
        )?;
        Ok(CpuCounter { fd, cpu })
    }

    /// The count since the event was opened.
    pub fn read(&self) -> io::Result<u64> {
        let mut value = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `value`.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), value.as_mut_ptr().cast(), 8) };
        match n {
            8 => Ok(u64::from_ne_bytes(value)),
            n if n < 0 => Err(io::Error::last_os_error()),
            _ => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_attr_is_the_second_published_size() {
        // PERF_ATTR_SIZE_VER1 = 72; config1 at byte 56, config2 at 64.
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 72);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, config1), 56);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, config2), 64);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, wakeup_events), 48);
        let attr = PerfEventAttr::counting(9, [4, 5, 6]);
        assert_eq!(
            (
                attr.kind,
                attr.size,
                attr.config,
                attr.config1,
                attr.config2
            ),
            (9, 72, 4, 5, 6)
        );
        assert_eq!((attr.sample_period, attr.flags), (0, 0));
    }

    /// The reader, live, on the msr PMU's `tsc` event (every x86 kernel
    /// with the msr PMU has it; `smi` only some Intel ones): a counting
    /// read grows across a sleep, as the SMI count is read around a run.
    #[test]
    fn a_counting_msr_event_grows_across_a_sleep() {
        const TEST: &str = "rt::perf::tests::a_counting_msr_event_grows_across_a_sleep";
        let event = match super::super::pmu::event_at(std::path::Path::new("/"), "msr", "tsc") {
            Ok(event) => event,
            Err(why) => return crate::testing::skip(TEST, &why.to_string()),
        };
        let counter = match CpuCounter::open(&event, 0) {
            Ok(counter) => counter,
            Err(e) => {
                return crate::testing::skip(
                    TEST,
                    &format!("perf_event_open(msr/tsc/, cpu 0): {e} (needs root or CAP_PERFMON)"),
                );
            }
        };
        let before = counter.read().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let after = counter.read().unwrap();
        // The TSC runs at GHz rates: 20 ms is millions of ticks.
        assert!(after > before + 1_000_000, "{before} -> {after}");
        drop(counter);
    }
}
