//! In-kernel collection with BPF, the mechanism only, with no build-time
//! dependency: programs are generated at run time with a small typed
//! emitter (`insn`), shown in bpftool's words (`text`), loaded with the raw
//! `bpf()` system call (`sys`), attached to tracepoints (`attach`), after
//! `probe` has said whether this machine allows it; a program the verifier
//! refuses is saved with its log (`refusal`). The programs themselves, and
//! the choice of the way each is attached, are in `crate::probes`.
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
pub mod refusal;
pub mod sys;
pub mod text;

pub use attach::{Attachment, tracepoint_id};
pub use collector::{CollectorChoice, CollectorUsed};
pub use insn::{Alu, Asm, AsmError, Code, Cond, Helper, Insn, Label, Reg, Size};
pub use sys::{BPF_F_MMAPABLE, LoadError, Map, MapKind, MappedArray, Program, ProgramKind};

/// For live tests: true (after a counted skip of `test`) where BPF
/// collection cannot run here.
#[cfg(test)]
pub(crate) fn skip_without_bpf(test: &str) -> bool {
    match probe::check() {
        Ok(()) => false,
        Err(why) => {
            crate::testing::skip(test, &format!("BPF collection cannot run here: {why}"));
            true
        }
    }
}

#[cfg(test)]
mod tests_live;
