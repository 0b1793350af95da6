//! Tests against this machine's kernel. They need root and tracefs. The
//! `#[ignore]`d `capture_fixture` is a tool: it rewrites `testdata/` (the
//! real page `tests_fixture` decodes). The live tests of the wake-up
//! pairing, which drive the session and reader end to end, are with the
//! pairing (`probes::wakeups::tests_tracefs`) and share `serialize` and
//! `trace_raw` from here.

use super::instance::Instance;
use super::{check_usable, mount};
use crate::rt::clock::{monotonic_ns, sleep_until_ns};
use crate::rt::sched::{self, Policy};
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};

/// Live tests run one at a time: they pin SCHED_FIFO threads and count
/// instances of this process.
static LIVE: Mutex<()> = Mutex::new(());

pub(crate) fn serialize() -> std::sync::MutexGuard<'static, ()> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The events `trace_raw` enables.
const RAW_EVENTS: [(&str, &str); 4] = [
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
    ("sched", "sched_switch"),
    ("rseq", "rseq_update"),
];

/// The raw pages read from one CPU.
pub(crate) type CpuPages = (usize, Vec<Vec<u8>>);

/// Traces the three events on `cpus` in a fresh instance while `work` runs,
/// then returns the text `trace` (read first: it does not consume) and the
/// raw pages of each CPU.
pub(crate) fn trace_raw(
    cpus: &[usize],
    filters: &[(&str, String)],
    work: impl FnOnce(),
) -> (String, Vec<CpuPages>) {
    let tracefs = mount::find_or_mount().unwrap();
    let inst = Instance::create(&tracefs).unwrap();
    inst.write("tracing_on", "0").unwrap();
    inst.write("trace_clock", "mono").unwrap();
    let mask: u64 = cpus.iter().map(|c| 1u64 << c).sum();
    inst.write("tracing_cpumask", &format!("{mask:x}")).unwrap();
    for (file, filter) in filters {
        inst.write(file, filter).unwrap();
    }
    for (system, event) in RAW_EVENTS {
        inst.write(&format!("events/{system}/{event}/enable"), "1")
            .unwrap();
    }
    inst.write("tracing_on", "1").unwrap();
    work();
    inst.write("tracing_on", "0").unwrap();
    let text = inst.read("trace").unwrap();
    let page_kb: usize = inst
        .read("buffer_subbuf_size_kb")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut all = Vec::new();
    for &cpu in cpus {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(inst.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw")))
            .unwrap();
        let mut pages = Vec::new();
        let mut buf = vec![0u8; page_kb * 1024];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            pages.push(buf[..n].to_vec());
        }
        all.push((cpu, pages));
    }
    (text, all)
}

#[test]
#[ignore = "tool: rewrites src/rt/tracefs/testdata from this machine"]
fn capture_fixture() {
    let _serial = serialize();
    if let Err(why) = check_usable(&RAW_EVENTS) {
        panic!("cannot capture: {why}");
    }
    // One thread pinned to CPU 0 sleeping until E0, +1, +2 ms, then +200
    // and +201 ms: the pause is longer than 2^27 ns, so the page needs a
    // time-extend record.
    let e0 = monotonic_ns() + 50_000_000;
    let offsets_ms = [0u64, 1, 2, 200, 201];
    let (tid_tx, tid_rx) = mpsc::channel();
    let go = Arc::new(Barrier::new(2));
    let go_thread = go.clone();
    let sleeper = std::thread::spawn(move || {
        let _ = sched::pin_current_thread(0);
        let _ = sched::set_current_thread_policy(Policy::Fifo, 80);
        let _ = tid_tx.send(sched::current_tid());
        go_thread.wait();
        for ms in offsets_ms {
            sleep_until_ns(e0 + ms * 1_000_000);
        }
    });
    let tid = tid_rx.recv().unwrap();
    // Only this thread's events, and only sleep timers' expiries outside the
    // pause, so that it stays empty (other sleepers' timers fire in it).
    let filters = [
        (
            "events/timer/hrtimer_start/filter",
            format!("common_pid == {tid}"),
        ),
        (
            "events/sched/sched_switch/filter",
            format!("next_pid == {tid}"),
        ),
        (
            "events/rseq/rseq_update/filter",
            format!("common_pid == {tid}"),
        ),
        (
            "events/timer/hrtimer_expire_entry/filter",
            format!(
                "function.function == hrtimer_wakeup && (now < {} || now > {})",
                e0 + 5_000_000,
                e0 + 199_000_000
            ),
        ),
    ];
    let (text, pages) = trace_raw(&[0], &filters, || {
        go.wait();
        sleeper.join().unwrap();
    });
    let pages = &pages[0].1;
    assert_eq!(pages.len(), 1, "the fixture should fit one page");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rt/tracefs/testdata");
    std::fs::write(dir.join("page_cpu0.bin"), &pages[0]).unwrap();
    std::fs::write(dir.join("trace_cpu0.txt"), &text).unwrap();
    let tracefs = mount::find().unwrap();
    for (from, to) in [
        ("events/header_page", "header_page"),
        ("events/header_event", "header_event"),
        ("events/timer/hrtimer_start/format", "hrtimer_start.format"),
        (
            "events/timer/hrtimer_expire_entry/format",
            "hrtimer_expire_entry.format",
        ),
        ("events/sched/sched_switch/format", "sched_switch.format"),
        ("events/rseq/rseq_update/format", "rseq_update.format"),
    ] {
        let text = super::format::read_description(&tracefs.join(from)).unwrap();
        std::fs::write(dir.join(to), text).unwrap();
    }
    eprintln!("E0 {e0} tid {tid}\n{text}");
}
