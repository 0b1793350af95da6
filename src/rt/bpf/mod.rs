//! In-kernel collection with BPF, with no build-time dependency: programs
//! are generated at run time with a small typed emitter (`insn`), loaded
//! with the raw `bpf()` system call (`sys`), attached to tracepoints
//! (`attach`), after `probe` has said whether this machine allows it.
//!
//! Offsets come at run time, never from headers: from the kernel's BTF
//! (`btf`, `/sys/kernel/btf/vmlinux`) where it has one, else from the tracefs
//! `format` files (`rt::tracefs::format`), so nothing about the running
//! kernel is needed at build time. docs/bpf.md says why no crate does this
//! job here.

pub mod attach;
pub mod btf;
pub mod collector;
pub mod insn;
pub mod probe;
pub mod sys;
pub mod wakeups;

pub use attach::{Attachment, tracepoint_id};
pub use collector::{CollectorChoice, CollectorUsed};
pub use insn::{Alu, Asm, Cond, Helper, Insn, Label, Reg, Size};
pub use sys::{BPF_F_MMAPABLE, LoadError, Map, MapKind, MappedArray, Program, ProgramKind};

#[cfg(test)]
mod tests_live;
