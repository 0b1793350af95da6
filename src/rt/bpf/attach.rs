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
use crate::rt::perf::PerfEventAttr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

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
        // A counting event, not a sampling one: the program runs either
        // way, and the kernel refuses sampling events on tracepoints perf
        // itself uses (`irq_vectors:irq_work_exit`: EPERM, by
        // TRACE_EVENT_PERF_PERM in arch/x86's irq_vectors.h).
        let attr = PerfEventAttr::counting(PERF_TYPE_TRACEPOINT, [id, 0, 0]);
        // pid -1 with CPU 0: every task on CPU 0's perf context; the
        // program itself runs on every CPU, see above.
        let fd = crate::rt::perf::open(&attr, -1, 0)?;
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
