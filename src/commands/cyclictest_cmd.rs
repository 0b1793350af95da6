//! `latscope cyclictest` and the `cyclictest` compat name: rt-tests 2.x's
//! options (GNU getopt, settings::cyclictest), its semantics
//! (timer::cyclic) and its exact final output (report::classic_cyclictest):
//! the `-q` block of `T:` lines, the `-h` histogram and `--json`.
//!
//! This slice does not go through `pipeline::run`: cyclictest's per-thread
//! intervals, priorities and loop counts do not fit the timer plan yet, and
//! its output is only cyclictest's own (no latscope Report beside it yet).

use crate::pipeline::CommandError;
use crate::report::classic_cyclictest::{self as classic, CyclicThread, JsonHeader};
use crate::rt::dma_latency::DmaLatency;
use crate::settings::cyclictest::{CyclicSettings, CyclicUsage};
use crate::timer::cyclic::{self, CyclicThreadPlan};
use std::io::Write;
use std::time::Duration;

/// rt-tests 2.40's `cyclictest --help` text, printed after a getopt error
/// exactly as cyclictest does (on stdout, exit 0).
const USAGE: &str = include_str!("../../tests/golden/cyclictest/bad_opt.out");

/// `latscope cyclictest ARGS`.
pub fn run(args: &[String]) -> Result<i32, CommandError> {
    // clap hands over the words after an explicit `--` too; the compat name
    // always puts one first.
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let online = crate::rt::sched::allowed_cpus();
    let settings = match CyclicSettings::parse(args, &online) {
        Ok(s) => s,
        Err(CyclicUsage::Getopt(message)) => {
            let _ = writeln!(std::io::stderr(), "cyclictest: {message}");
            let mut out = crate::rt::stdio::out();
            let _ = out.write_all(USAGE.as_bytes());
            let _ = out.flush();
            return Ok(0);
        }
        Err(CyclicUsage::Help) => {
            let mut out = crate::rt::stdio::out();
            let _ = out.write_all(USAGE.as_bytes());
            let _ = out.flush();
            return Ok(0);
        }
        Err(CyclicUsage::Bad(message)) => {
            return Err(CommandError::Usage(crate::settings::UsageError(message)));
        }
    };
    measure(&settings, &online)
}

fn measure(s: &CyclicSettings, online: &[usize]) -> Result<i32, CommandError> {
    if s.mlockall {
        use crate::rt::sched::MlockSkipped;
        match crate::rt::sched::lock_all_memory_if_affordable() {
            Ok(()) => {}
            Err(MlockSkipped::Unaffordable(why) | MlockSkipped::Failed(why)) => {
                eprintln!("latscope: warning: memory not locked: {why}");
            }
        }
    }
    // Held for the whole run; dropped (closed) at the end, as cyclictest does.
    let dma = if s.laptop {
        DmaLatency::NotRequested
    } else {
        DmaLatency::request_zero()
    };
    let mut out = crate::rt::stdio::out();
    if matches!(dma, DmaLatency::Held(_)) {
        let _ = out.write_all(classic::dma_latency_line().as_bytes());
        let _ = out.flush();
    }
    let plans: Vec<CyclicThreadPlan> = (0..s.threads)
        .map(|i| CyclicThreadPlan {
            interval_ns: s.interval_of(i) * 1000,
            priority: s.priority,
            cpu: s.cpu_of(i),
            loops: s.loops,
            hist_cells: s.histogram,
            nsecs: s.nsecs,
        })
        .collect();
    let start_time = local_time();
    let deadline = s
        .duration
        .map(|d| crate::rt::clock::monotonic_ns() + d.as_nanos() as u64);
    let mut interrupted = false;
    // Polled every 10 ms, as cyclictest's main loop sleeps between checks.
    let results = cyclic::run_all(&plans, deadline, || {
        let got = crate::rt::signals::wait_for_stop_signal(Duration::from_millis(10)).is_some();
        interrupted |= got;
        got
    });
    let end_time = local_time();
    let mut threads = Vec::with_capacity(results.len());
    let mut failure = None;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(f) => threads.push(CyclicThread {
                tid: f.tid,
                priority: s.priority,
                interval_us: s.interval_of(i),
                cycles: f.cycles,
                min: f.min,
                act: f.act,
                sum: f.sum,
                max: f.max,
                cpu: s.json_cpu_of(i, online),
                hist: f.hist,
                overflows: f.overflows,
                outliers: f.outliers,
            }),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    drop(dma);
    if let Some(e) = failure {
        return Err(CommandError::Runtime(e));
    }
    let mut text = String::new();
    if s.histogram > 0 {
        text.push_str(&classic::histogram(&threads, s.histogram));
    } else {
        for (i, t) in threads.iter().enumerate() {
            text.push_str(&classic::t_line(i, t, s.nsecs));
        }
    }
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if let Some(path) = &s.json {
        let uts = nix::sys::utsname::uname()
            .map_err(|e| CommandError::Runtime(format!("uname failed: {e}")))?;
        let text_of = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
        let header = JsonHeader {
            cmdline: &s.cmdline,
            start_time: &start_time,
            end_time: &end_time,
            return_code: 0,
            sysname: &text_of(uts.sysname()),
            nodename: &text_of(uts.nodename()),
            release: &text_of(uts.release()),
            version: &text_of(uts.version()),
            machine: &text_of(uts.machine()),
            realtime: std::path::Path::new("/sys/kernel/realtime").exists(),
        };
        std::fs::write(path, classic::json(&header, &threads, s.nsecs))
            .map_err(|e| CommandError::Runtime(format!("could not write {path}: {e}")))?;
    }
    Ok(0)
}

/// Now as rt-tests writes it: `strftime("%a, %d %b %Y %T %z")`, local time.
fn local_time() -> String {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    unsafe { libc::localtime_r(&now, &mut tm) };
    let mut buf = [0u8; 64];
    // SAFETY: the buffer and the NUL-terminated format are valid.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a, %d %b %Y %T %z".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
