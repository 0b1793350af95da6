//! The `bpf()` system call, raw (libc's `syscall`): maps, programs and the
//! memory-mapped view of an array map.
//!
//! Every object is a file descriptor owned here (`OwnedFd`): nothing is
//! pinned, so programs and maps die with the process, even on `kill -9`.
//! Names start with `latscope_` so that `bpftool prog show` (or
//! `/proc/PID/fdinfo`) tells latscope's objects from others'.

use super::insn::{Insn, to_bytes};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// Commands (enum bpf_cmd).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_ENABLE_STATS: libc::c_long = 32;

/// Arrays whose values user space may `mmap` (Linux 5.5).
pub const BPF_F_MMAPABLE: u32 = 1 << 10;

/// The prefix of every program and map name latscope loads.
pub const NAME_PREFIX: &str = "latscope_";

/// The licence the programs declare: the kernel gives its GPL-only helpers
/// (`bpf_get_current_task`) only to programs whose licence string
/// `license_is_gpl_compatible()` accepts. latscope is MIT or Apache-2.0;
/// "Dual MIT/GPL" is on the kernel's list and keeps the MIT grant.
pub const LICENSE: &str = "Dual MIT/GPL";

/// The map types used here (enum bpf_map_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Array = 2,
    PerCpuArray = 6,
}

/// The program types used here (enum bpf_prog_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramKind {
    /// A classic tracepoint: the context is the event's record, laid out as
    /// its tracefs `format` file says.
    Tracepoint = 5,
    /// A raw tracepoint: the context is the tracepoint's arguments, u64 each.
    RawTracepoint = 17,
    /// A BTF-typed program; loaded here only as a BTF-typed raw tracepoint
    /// (`Program::load_btf_raw_tracepoint`): the same u64 arguments, but the
    /// verifier knows their types, so members are read with plain loads.
    Tracing = 26,
}

/// `expected_attach_type` of a BTF-typed raw tracepoint (enum
/// bpf_attach_type).
const BPF_TRACE_RAW_TP: u32 = 23;

/// The kernel's `union bpf_attr` for BPF_MAP_CREATE (fields up to the name).
#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// BPF_MAP_LOOKUP_ELEM / BPF_MAP_UPDATE_ELEM.
#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// BPF_PROG_LOAD (fields up to the expected attach type).
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    /// The kernel BTF type the program is for (a `btf_trace_*` typedef).
    attach_btf_id: u32,
    /// The BTF object holding `attach_btf_id`: 0 for vmlinux.
    attach_btf_obj_fd: u32,
}

/// BPF_RAW_TRACEPOINT_OPEN.
#[repr(C)]
#[derive(Default)]
struct RawTracepointAttr {
    name: u64,
    prog_fd: u32,
    _pad: u32,
}

/// BPF_OBJ_GET_INFO_BY_FD.
#[repr(C)]
#[derive(Default)]
struct InfoByFdAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// The prefix of `struct bpf_prog_info` up to `recursion_misses` (Linux
/// 5.12; an older kernel fills less, and the rest stays 0). Only the
/// counters are read; the pointers stay 0 so the kernel copies nothing
/// else out.
#[repr(C, align(8))]
struct ProgInfoPrefix {
    words: [u64; PROG_INFO_WORDS],
}
const PROG_INFO_WORDS: usize = 27;
/// Byte offsets in `struct bpf_prog_info` (include/uapi/linux/bpf.h).
const PROG_INFO_ID: usize = 4;
const PROG_INFO_RUN_TIME_NS: usize = 192;
const PROG_INFO_RUN_CNT: usize = 200;
const PROG_INFO_RECURSION_MISSES: usize = 208;

/// A program's run-time counters, as `bpftool prog` shows them: the run
/// time and count only while `kernel.bpf_stats_enabled` is 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramStats {
    pub id: u32,
    pub run_time_ns: u64,
    pub run_cnt: u64,
    /// Runs the kernel skipped because the program (or, for a classic
    /// tracepoint, another program) was already running on that CPU.
    pub recursion_misses: u64,
}

/// Calls `bpf(cmd, attr, sizeof attr)`; the new descriptor (or 0).
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<RawFd> {
    // SAFETY: `attr` is a live, initialised #[repr(C)] prefix of union
    // bpf_attr; the kernel reads (and for lookups writes through pointers
    // inside it) at most size_of::<T>() bytes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as RawFd)
    }
}

/// `latscope_` + `what`, cut to the kernel's 15 characters (plus NUL).
fn object_name(what: &str) -> [u8; 16] {
    let mut name = [0u8; 16];
    let full = format!("{NAME_PREFIX}{what}");
    // Only [A-Za-z0-9_.] is accepted in object names.
    for (slot, byte) in name[..15].iter_mut().zip(
        full.bytes()
            .filter(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.'),
    ) {
        *slot = byte;
    }
    name
}

/// Takes ownership of a fresh descriptor.
fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: the kernel just returned `fd`; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A BPF map (an array with u32 keys here).
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    kind: MapKind,
    value_size: usize,
    entries: u32,
    flags: u32,
}

impl Map {
    /// Creates an array of `entries` values of `value_size` bytes, named
    /// `latscope_<name>`; `flags` e.g. `BPF_F_MMAPABLE`.
    pub fn create(
        kind: MapKind,
        name: &str,
        value_size: usize,
        entries: u32,
        flags: u32,
    ) -> io::Result<Map> {
        let mut attr = MapCreateAttr {
            map_type: kind as u32,
            key_size: 4,
            value_size: u32::try_from(value_size)
                .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
            max_entries: entries,
            map_flags: flags,
            map_name: object_name(name),
            ..MapCreateAttr::default()
        };
        let fd = bpf(BPF_MAP_CREATE, &mut attr)?;
        Ok(Map {
            fd: owned(fd),
            kind,
            value_size,
            entries,
            flags,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn entries(&self) -> u32 {
        self.entries
    }

    pub fn value_size(&self) -> usize {
        self.value_size
    }

    /// Bytes one lookup reads or one update writes: for a per-CPU array one
    /// value per possible CPU, each rounded up to 8 bytes.
    pub fn buffer_len(&self) -> io::Result<usize> {
        Ok(match self.kind {
            MapKind::Array => self.value_size,
            MapKind::PerCpuArray => self.value_size.next_multiple_of(8) * possible_cpus()?,
        })
    }

    /// Reads entry `key` into `out` (`buffer_len()` bytes).
    pub fn lookup(&self, key: u32, out: &mut [u8]) -> io::Result<()> {
        self.check_len(out.len())?;
        let mut attr = MapElemAttr {
            map_fd: self.fd() as u32,
            key: (&raw const key) as u64,
            value: out.as_mut_ptr() as u64,
            ..MapElemAttr::default()
        };
        bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).map(drop)
    }

    /// Writes entry `key` from `value` (`buffer_len()` bytes).
    pub fn update(&self, key: u32, value: &[u8]) -> io::Result<()> {
        self.check_len(value.len())?;
        let mut attr = MapElemAttr {
            map_fd: self.fd() as u32,
            key: (&raw const key) as u64,
            value: value.as_ptr() as u64,
            flags: 0, // BPF_ANY
            ..MapElemAttr::default()
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }

    fn check_len(&self, len: usize) -> io::Result<()> {
        if len == self.buffer_len()? {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        }
    }

    /// Maps the array's values into memory (the map must be an `Array`
    /// created with `BPF_F_MMAPABLE`).
    pub fn map_memory(&self, writable: bool) -> io::Result<MappedArray> {
        if self.kind != MapKind::Array || self.flags & BPF_F_MMAPABLE == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let len = (self.value_size * self.entries as usize).next_multiple_of(page_size());
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of the map's descriptor; the kernel
        // checks the length and the protection against the map.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                self.fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(MappedArray {
            base: at.cast(),
            len,
            value_size: self.value_size,
            entries: self.entries as usize,
        })
    }
}

/// The values of an mmapable array, in this process's memory: the programs
/// write them, user space reads them with plain loads (no system call).
/// Unmapped on drop.
#[derive(Debug)]
pub struct MappedArray {
    base: *mut u8,
    len: usize,
    value_size: usize,
    entries: usize,
}

// SAFETY: the mapping is plain shared memory; every access goes through
// volatile or atomic operations, so sharing it between threads is sound.
unsafe impl Send for MappedArray {}
// SAFETY: as above.
unsafe impl Sync for MappedArray {}

impl MappedArray {
    /// `entries` zeroed values of `value_size` bytes in anonymous memory,
    /// shaped as a map's mapping: for tests of what reads and writes one
    /// without a kernel map.
    #[cfg(test)]
    pub fn anonymous(value_size: usize, entries: usize) -> io::Result<MappedArray> {
        let len = (value_size * entries).next_multiple_of(page_size());
        // SAFETY: a fresh private anonymous mapping, unmapped on drop.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(MappedArray {
            base: at.cast(),
            len,
            value_size,
            entries,
        })
    }

    /// Address of entry `index` (None past the end).
    pub fn entry_ptr(&self, index: usize) -> Option<*mut u8> {
        (index < self.entries).then(|| {
            // SAFETY: inside the mapping, since index < entries.
            unsafe { self.base.add(index * self.value_size) }
        })
    }

    /// The u64 at byte `offset` of entry `index`, as the programs last
    /// wrote it (a volatile load: the kernel changes it behind the compiler).
    pub fn read_u64(&self, index: usize, offset: usize) -> Option<u64> {
        if !offset.is_multiple_of(8) || offset + 8 > self.value_size {
            return None;
        }
        let at = self.entry_ptr(index)?;
        // SAFETY: aligned (values are 8-aligned in the page-aligned mapping)
        // and inside entry `index`.
        Some(unsafe { std::ptr::read_volatile(at.add(offset).cast::<u64>()) })
    }

    /// Writes the u64 at byte `offset` of entry `index` (the mapping must be
    /// writable, or this faults: only `map_memory(true)` mappings call it).
    pub fn write_u64(&self, index: usize, offset: usize, value: u64) -> Option<()> {
        if !offset.is_multiple_of(8) || offset + 8 > self.value_size {
            return None;
        }
        let at = self.entry_ptr(index)?;
        // SAFETY: as in read_u64.
        unsafe { std::ptr::write_volatile(at.add(offset).cast::<u64>(), value) };
        Some(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for MappedArray {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `map_memory` (or `anonymous`).
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Why a program did not load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The verifier refused it: its log says why (the whole log is kept;
    /// the line shows its last line, the verdict).
    #[error("the verifier refused a program ({}): {}", crate::rt::os_error_text(&io::Error::from_raw_os_error(*.errno)), last_line(.log))]
    Verifier { errno: i32, log: String },
    /// The process may not load programs (EPERM/EACCES without a log).
    #[error("not permitted ({})", crate::rt::os_error_text(.0))]
    NotPermitted(io::Error),
    /// Any other failure.
    #[error("{}", crate::rt::os_error_text(.0))]
    Other(io::Error),
}

/// The last line of a verifier's log that says something: its verdict.
pub fn last_line(log: &str) -> &str {
    log.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// The verifier's log buffer when a load failed (its text ends well before).
const VERIFIER_LOG_BYTES: usize = 1 << 20;

/// A loaded program.
#[derive(Debug)]
pub struct Program {
    fd: OwnedFd,
    name: String,
}

impl Program {
    /// The program's counters, read with one `bpf()` call (no file is
    /// opened: the collector reads them on every pass with a spike).
    pub fn stats(&self) -> io::Result<ProgramStats> {
        program_stats(self.fd())
    }

    /// Loads `insns` as a program named `latscope_<name>`. A first attempt
    /// runs without a log (cheaper); when it fails the load is repeated with
    /// the verifier's log, so a refusal comes with its reason.
    pub fn load(kind: ProgramKind, name: &str, insns: &[Insn]) -> Result<Program, LoadError> {
        Program::load_typed(kind, 0, 0, name, insns)
    }

    /// Loads `insns` as a BTF-typed raw tracepoint program for the
    /// tracepoint whose typedef `btf_trace_<event>` has id `btf_trace_id`
    /// in the kernel's BTF (`btf::Btf::tracepoint`); attach it with
    /// `attach_btf_raw_tracepoint`.
    pub fn load_btf_raw_tracepoint(
        name: &str,
        btf_trace_id: u32,
        insns: &[Insn],
    ) -> Result<Program, LoadError> {
        Program::load_typed(
            ProgramKind::Tracing,
            BPF_TRACE_RAW_TP,
            btf_trace_id,
            name,
            insns,
        )
    }

    fn load_typed(
        kind: ProgramKind,
        expected_attach_type: u32,
        attach_btf_id: u32,
        name: &str,
        insns: &[Insn],
    ) -> Result<Program, LoadError> {
        let code = to_bytes(insns);
        let license = std::ffi::CString::new(LICENSE).expect("no NUL in the licence");
        let attempt = |log: Option<&mut Vec<u8>>| {
            let mut attr = ProgLoadAttr {
                prog_type: kind as u32,
                insn_cnt: insns.len() as u32,
                insns: code.as_ptr() as u64,
                license: license.as_ptr() as u64,
                prog_name: object_name(name),
                expected_attach_type,
                attach_btf_id,
                ..ProgLoadAttr::default()
            };
            if let Some(buf) = log {
                attr.log_level = 1;
                attr.log_size = buf.len() as u32;
                attr.log_buf = buf.as_mut_ptr() as u64;
            }
            bpf(BPF_PROG_LOAD, &mut attr)
        };
        let first = match attempt(None) {
            Ok(fd) => {
                return Ok(Program {
                    fd: owned(fd),
                    name: name.to_string(),
                });
            }
            Err(e) => e,
        };
        let errno = first.raw_os_error().unwrap_or(0);
        if errno == libc::EPERM {
            return Err(LoadError::NotPermitted(first));
        }
        let mut log = vec![0u8; VERIFIER_LOG_BYTES];
        let second = attempt(Some(&mut log));
        let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)])
            .into_owned();
        match second {
            // Loaded with a log after all (should not happen): keep it.
            Ok(fd) => Ok(Program {
                fd: owned(fd),
                name: name.to_string(),
            }),
            Err(_) if !text.trim().is_empty() => Err(LoadError::Verifier { errno, log: text }),
            Err(_) if errno == libc::EACCES => Err(LoadError::NotPermitted(first)),
            Err(_) => Err(LoadError::Other(first)),
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Attaches a raw-tracepoint program to the tracepoint `tracepoint`
    /// (e.g. `sched_switch`): the link lives as long as the returned
    /// descriptor (Linux 4.17).
    pub fn attach_raw_tracepoint(&self, tracepoint: &str) -> io::Result<OwnedFd> {
        let name = std::ffi::CString::new(tracepoint)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        self.raw_tracepoint_open(name.as_ptr() as u64)
    }

    /// Attaches a program of `load_btf_raw_tracepoint` to its tracepoint:
    /// the kernel takes the tracepoint from the program's BTF type, and
    /// refuses a name (Linux 5.5).
    pub fn attach_btf_raw_tracepoint(&self) -> io::Result<OwnedFd> {
        self.raw_tracepoint_open(0)
    }

    /// BPF_RAW_TRACEPOINT_OPEN with `name` (a C string's address, or 0).
    fn raw_tracepoint_open(&self, name: u64) -> io::Result<OwnedFd> {
        let mut attr = RawTracepointAttr {
            name,
            prog_fd: self.fd() as u32,
            _pad: 0,
        };
        bpf(BPF_RAW_TRACEPOINT_OPEN, &mut attr).map(owned)
    }
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`, e.g.
/// `0-7`): per-CPU maps hold one value for each.
pub fn possible_cpus() -> io::Result<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let cpus = crate::units::parse_cpu_list(text.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad list of possible CPUs"))?;
    Ok(cpus.iter().max().map_or(1, |&last| last + 1))
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
}

/// Turns on the counting of every program's run time and runs (Linux 5.8)
/// until the returned descriptor is closed, without touching the global
/// `kernel.bpf_stats_enabled`.
pub fn count_run_time() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // BPF_STATS_RUN_TIME is 0.
    let mut attr: u32 = 0;
    let fd = bpf(BPF_ENABLE_STATS, &mut attr)?;
    // SAFETY: a fresh descriptor from the kernel, owned from here on.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// `Program::stats` of the program behind descriptor `fd`.
pub fn program_stats(fd: RawFd) -> io::Result<ProgramStats> {
    let mut info = ProgInfoPrefix {
        words: [0; PROG_INFO_WORDS],
    };
    let mut attr = InfoByFdAttr {
        bpf_fd: fd as u32,
        info_len: std::mem::size_of::<ProgInfoPrefix>() as u32,
        info: info.words.as_mut_ptr() as u64,
    };
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)?;
    let word = |offset: usize| info.words[offset / 8];
    Ok(ProgramStats {
        id: (word(PROG_INFO_ID & !7) >> 32) as u32,
        run_time_ns: word(PROG_INFO_RUN_TIME_NS),
        run_cnt: word(PROG_INFO_RUN_CNT),
        recursion_misses: word(PROG_INFO_RECURSION_MISSES),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_cut_to_fifteen_bytes() {
        assert_eq!(&object_name("slots")[..15], b"latscope_slots\0");
        let long = object_name("switch_in_with-dash");
        assert_eq!(&long[..15], b"latscope_switch");
        assert_eq!(long[15], 0);
    }

    #[test]
    fn attr_layouts_match_the_kernel() {
        // union bpf_attr: map_name at byte 28, prog_name at 48,
        // expected_attach_type at 68 (include/uapi/linux/bpf.h).
        assert_eq!(std::mem::offset_of!(MapCreateAttr, map_name), 28);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type), 68);
        // func_info and line_info are __aligned_u64; attach_btf_id at 108,
        // attach_btf_obj_fd (a union with attach_prog_fd) at 112.
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, func_info), 80);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, line_info), 96);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, attach_btf_id), 108);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, attach_btf_obj_fd), 112);
        assert_eq!(std::mem::size_of::<ProgLoadAttr>(), 120);
        assert_eq!(std::mem::offset_of!(MapElemAttr, key), 8);
        assert_eq!(std::mem::size_of::<RawTracepointAttr>(), 16);
    }

    #[test]
    fn the_licence_is_one_the_kernel_calls_gpl_compatible() {
        // kernel/module/main.c license_is_gpl_compatible().
        let accepted = [
            "GPL",
            "GPL v2",
            "GPL and additional rights",
            "Dual BSD/GPL",
            "Dual MIT/GPL",
            "Dual MPL/GPL",
        ];
        assert!(accepted.contains(&LICENSE));
    }
}
