//! Which tier classifies the gaps (`--tier auto|bpf|tracefs|unprivileged`):
//! decided in `probes::interference::tier`, where `latscope doctor` decides
//! through the same checks (a service may not import a test).

pub use crate::probes::interference::tier::*;
