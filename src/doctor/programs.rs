//! `latscope doctor --bpf`: the listing of every program latscope would
//! load on this kernel (`probes::listings`), each family on each way of
//! attaching it, in the verifier's numbering, so that a message of this
//! kernel's verifier can be read against the program it is about. Reads
//! only: nothing is loaded, no tracefs is mounted.

use crate::probes::listings::{Facts, all};
use crate::rt::bpf::btf::Btf;

/// The descriptor the listings name the map by (no map is created).
const MAP_FD: i32 = 3;

/// The whole text `doctor --bpf` prints.
pub fn listings_text() -> String {
    let release = crate::rt::bpf::probe::Facts::live().release;
    let btf = Btf::vmlinux();
    let tracefs = crate::rt::tracefs::mount::find();
    let facts = Facts::of_kernel(
        tracefs
            .as_deref()
            .unwrap_or(std::path::Path::new("/sys/kernel/tracing")),
        btf.as_ref().ok(),
        MAP_FD,
    );
    let btf_line = match &btf {
        Ok(_) => "the kernel's BTF: read".to_string(),
        Err(why) => format!("the kernel's BTF: none ({why}): only classic tracepoints"),
    };
    let tracefs_line = match &tracefs {
        Some(path) if !facts.formats.is_empty() => format!("tracefs: {}", path.display()),
        _ => "tracefs: its format files cannot be read here (root mounts and reads it): no classic listings"
            .to_string(),
    };
    let mut text = format!(
        "latscope doctor --bpf: the programs latscope generates for Linux {release}\n\
         Each is tried on the cheapest way first (tp_btf, then raw_tp, then tracepoint);\n\
         instructions are numbered as the verifier numbers them; map[fd:{MAP_FD}] stands for the map.\n\
         {btf_line}\n{tracefs_line}\n\
         The kernel's verdict on each: `latscope doctor` (tracing.bpf, hwlat.tier) and the collector or tier line of a run.\n"
    );
    for listing in all(&facts) {
        text.push('\n');
        text.push_str(&listing.text);
    }
    text
}
