//! Attaching programs to kernel events: classic tracepoints through
//! `perf_event_open(PERF_TYPE_TRACEPOINT)` + `PERF_EVENT_IOC_SET_BPF`, raw
//! tracepoints (plain or BTF-typed) through `BPF_RAW_TRACEPOINT_OPEN`. An `Attachment` owns the
//! descriptors: dropping it (or the process dying) detaches the program.
//!
//! One perf event per tracepoint, not one per CPU: the kernel keeps the
//! programs of a tracepoint in one array on the event itself
//! (`trace_event_call.prog_array`) and runs every entry on every CPU, so a
//! program attached through one perf event per CPU would run once per CPU
//! for every event. The perf event's own CPU only says where its (unused)
//! samples would go.
//!
//! No kprobe attachment: it needs CONFIG_KPROBES, which this machine's
//! kernel (and others built for small guests) lacks; the events used here
//! are all tracepoints, which every kernel with CONFIG_BPF_EVENTS has.

use super::sys::Program;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64 bytes):
/// the kernel accepts any published size and zero-fills the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bit fields (disabled, inherit, ...): all clear.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Why a tracepoint's id could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TracepointIdError {
    #[error("cannot read {}: {}", .path.display(), crate::rt::os_error_text(.why))]
    Unreadable { path: PathBuf, why: io::Error },
    #[error("{} holds no number", .0.display())]
    NotANumber(PathBuf),
}

/// The numeric id of tracepoint `system:name` (`events/SYS/NAME/id`).
pub fn tracepoint_id(tracefs: &Path, system: &str, name: &str) -> Result<u64, TracepointIdError> {
    let path = tracefs.join("events").join(system).join(name).join("id");
    let text = std::fs::read_to_string(&path).map_err(|why| TracepointIdError::Unreadable {
        path: path.clone(),
        why,
    })?;
    text.trim()
        .parse()
        .map_err(|_| TracepointIdError::NotANumber(path))
}

/// A program attached to an event; detached when dropped.
#[derive(Debug)]
pub struct Attachment {
    /// The perf event or raw-tracepoint link holding the program.
    _fd: OwnedFd,
    /// What it is attached to, for messages.
    pub event: String,
}

impl Attachment {
    /// Attaches `program` (a `Tracepoint` program) to the tracepoint with id
    /// `id` (see `tracepoint_id`), named `event` for messages.
    pub fn tracepoint(program: &Program, id: u64, event: &str) -> io::Result<Attachment> {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            // A counting event, not a sampling one: the program runs either
            // way, and the kernel refuses sampling events on tracepoints
            // perf itself uses (`irq_vectors:irq_work_exit`: EPERM, by
            // TRACE_EVENT_PERF_PERM in arch/x86's irq_vectors.h).
            sample_period: 0,
            ..PerfEventAttr::default()
        };
        // SAFETY: a valid attr; pid -1 with CPU 0 (every task on CPU 0's
        // perf context; the program itself runs on every CPU, see above).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &raw const attr,
                -1 as libc::pid_t,
                0 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor from the kernel.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        for (request, arg) in [
            (PERF_EVENT_IOC_SET_BPF, program.fd() as libc::c_ulong),
            (PERF_EVENT_IOC_ENABLE, 0),
        ] {
            // SAFETY: ioctls on our perf event with integer arguments.
            if unsafe { libc::ioctl(fd.as_raw_fd(), request, arg) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Attachment {
            _fd: fd,
            event: event.to_string(),
        })
    }

    /// Attaches `program` (a `RawTracepoint` program) to the raw tracepoint
    /// `name` (e.g. `sched_switch`).
    pub fn raw_tracepoint(program: &Program, name: &str) -> io::Result<Attachment> {
        Ok(Attachment {
            _fd: program.attach_raw_tracepoint(name)?,
            event: format!("raw:{name}"),
        })
    }

    /// Attaches `program` (loaded by `Program::load_btf_raw_tracepoint`) to
    /// the tracepoint its BTF type names, `name` (for messages; `tp_btf:`
    /// as libbpf names such programs' sections).
    pub fn btf_raw_tracepoint(program: &Program, name: &str) -> io::Result<Attachment> {
        Ok(Attachment {
            _fd: program.attach_btf_raw_tracepoint()?,
            event: format!("tp_btf:{name}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_attr_is_the_first_published_size() {
        // PERF_ATTR_SIZE_VER0 = 64; config1 (kprobe_func) at byte 56.
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, config1), 56);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, wakeup_events), 48);
    }

    #[test]
    fn ioctl_numbers() {
        // _IOC(dir, type, nr, size) = dir << 30 | size << 16 | type << 8 | nr.
        let ioc =
            |dir: u64, nr: u64, size: u64| (dir << 30) | (size << 16) | (b'$' as u64) << 8 | nr;
        assert_eq!(u64::from(PERF_EVENT_IOC_ENABLE as u32), ioc(0, 0, 0));
        assert_eq!(u64::from(PERF_EVENT_IOC_SET_BPF as u32), ioc(1, 8, 4));
    }

    #[test]
    fn tracepoint_ids_from_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let event = dir.path().join("events/sched/sched_waking");
        std::fs::create_dir_all(&event).unwrap();
        std::fs::write(event.join("id"), "375\n").unwrap();
        assert_eq!(
            tracepoint_id(dir.path(), "sched", "sched_waking").unwrap(),
            375
        );
        std::fs::write(event.join("id"), "x\n").unwrap();
        assert!(
            tracepoint_id(dir.path(), "sched", "sched_waking")
                .unwrap_err()
                .to_string()
                .contains("no number")
        );
        assert!(
            tracepoint_id(dir.path(), "sched", "nope")
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
    }
}
