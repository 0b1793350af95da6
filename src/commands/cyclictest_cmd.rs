//! `latscope cyclictest` and the `cyclictest` compat name: rt-tests 2.x's
//! options (GNU getopt, settings::cyclictest), its semantics
//! (timer::cyclic), its running display (live::cyclictest) and its exact
//! outputs (report::classic_cyclictest): the `T:` lines, `-v` values, the
//! `-h`/`-H` histogram, `--spike`, `-b`'s break lines and `--json`, and its
//! stderr lines and exit codes.
//!
//! This slice does not go through `pipeline::run`: cyclictest's per-thread
//! intervals, priorities and loop counts do not fit the timer plan yet, and
//! its output is only cyclictest's own (no latscope Report beside it yet).

use crate::live::cyclictest::{CyclicDisplay, DisplayForm, ThreadLabel};
use crate::pipeline::CommandError;
use crate::report::classic_cyclictest::{self as classic, CyclicThread, JsonHeader};
use crate::settings::cyclictest::{CyclicPolicy, CyclicSettings, CyclicUsage};
use crate::timer::cyclic::{self, CyclicAlign, CyclicOptions, CyclicThreadPlan, CyclicWake};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::Ordering;
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
    let usage = || {
        let mut out = crate::rt::stdio::out();
        let _ = out.write_all(USAGE.as_bytes());
        let _ = out.flush();
    };
    let settings = match CyclicSettings::parse(args, &online, cyclic::has_smi_counter()) {
        Ok(s) => s,
        Err(CyclicUsage::Getopt(message)) => {
            let _ = writeln!(std::io::stderr(), "{}: {message}", program_name());
            usage();
            return Ok(0);
        }
        Err(CyclicUsage::Help) => {
            usage();
            return Ok(0);
        }
        Err(CyclicUsage::Invalid(lines)) => {
            for line in lines {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            usage();
            return Ok(1);
        }
        Err(CyclicUsage::Fatal(message)) => {
            let _ = writeln!(std::io::stderr(), "FATAL: {message}");
            return Ok(1);
        }
        Err(CyclicUsage::Bad(message)) => {
            return Err(CommandError::Usage(crate::settings::UsageError(message)));
        }
    };
    for line in &settings.warnings {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    measure(&settings, &online)
}

/// The name getopt's messages start with: argv[0] as typed when started
/// under the `cyclictest` name (as GNU getopt prints it), else `cyclictest`.
fn program_name() -> String {
    crate::cli::getopt_program_name(crate::cli::CYCLICTEST_COMPAT)
}

/// Writes `text` to standard output at once.
fn print(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = crate::rt::stdio::out();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn warn(line: &str) {
    let _ = writeln!(std::io::stderr(), "WARN: {line}");
}

/// Pins the calling (main) thread to `cpus`, as cyclictest does with its
/// affinity mask and `--mainaffinity`.
fn pin_main_thread(cpus: &[usize]) {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        let _ = set.set(c);
    }
    if let Err(e) = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set) {
        warn(&format!(
            "Couldn't setaffinity in main thread: {}",
            e.desc()
        ));
    }
}

/// `/dev/cpu_dma_latency` as cyclictest's `set_latency_target`: held (with
/// its line on stdout) unless --laptop or --default-system say otherwise.
fn latency_target(s: &CyclicSettings) -> Option<std::fs::File> {
    if s.laptop {
        warn("not setting cpu_dma_latency to save battery power");
        return None;
    }
    if s.default_system {
        warn("not setting cpu_dma_latency from cyclictest");
        return None;
    }
    let path = crate::rt::dma_latency::PATH;
    if let Err(e) = std::fs::metadata(path) {
        eprintln!("WARN: stat {path} failed: {}", os_text(&e));
        return None;
    }
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("WARN: open {path}: {}", os_text(&e));
            return None;
        }
    };
    if let Err(e) = file.write_all(&s.latency_target.to_ne_bytes()) {
        eprintln!(
            "# error setting cpu_dma_latency to {}!: {}",
            s.latency_target,
            os_text(&e)
        );
        return None;
    }
    print(&format!(
        "# /dev/cpu_dma_latency set to {}us\n",
        s.latency_target
    ));
    Some(file)
}

/// An I/O error as strerror words it (without Rust's "(os error N)").
fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn clock_id(s: &CyclicSettings) -> libc::clockid_t {
    if s.clock == 1 {
        libc::CLOCK_REALTIME
    } else {
        libc::CLOCK_MONOTONIC
    }
}

/// `-R`: the clock's reported resolution against the smallest step seen in
/// a burst of reads; the two `WARN:` lines when the step is coarser (or -v).
fn check_resolution(s: &CyclicSettings) {
    let clock = clock_id(s);
    let read = || crate::rt::clock::read_clock(clock);
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid, writable timespec.
    let reported = if unsafe { libc::clock_getres(clock, &mut res) } != 0 {
        warn("clock_getres failed");
        u64::MAX
    } else {
        res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64
    };
    // About 1 ms of reads, as cyclictest sizes them.
    let prev = read();
    let mut last = prev;
    for _ in 0..1000 {
        last = read();
    }
    let per_call = (last - prev) / 1000;
    let times = 1_000_000u64
        .checked_div(per_call)
        .map_or(100_000, |t| t.clamp(1000, 100_000));
    let stamps: Vec<u64> = (0..times).map(|_| read()).collect();
    let min_step = stamps
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0)
        .min()
        .unwrap_or(u64::MAX);
    if s.verbose || (min_step != u64::MAX && min_step > reported) {
        warn(&format!("reported clock resolution: {reported} nsec"));
        warn(&format!(
            "measured clock resolution approximately: {min_step} nsec"
        ));
    }
}

fn measure(s: &CyclicSettings, online: &[usize]) -> Result<i32, CommandError> {
    for line in &s.early_lines {
        print(&format!("{line}\n"));
    }
    if s.verbose {
        // SAFETY: sysconf has no preconditions.
        let (conf, onln) = unsafe {
            (
                libc::sysconf(libc::_SC_NPROCESSORS_CONF),
                libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
            )
        };
        print(&format!("Max CPUs = {conf}\nOnline CPUs = {onln}\n"));
    }
    if let Some(cpus) = s.listed_affinity() {
        pin_main_thread(cpus);
        if s.verbose {
            print(&format!("Using {} cpus.\n", cpus.len()));
        }
    }
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
    let dma = latency_target(s);
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid, writable timespec.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } != 0
        || res.tv_sec != 0
        || res.tv_nsec != 1
    {
        warn("High resolution timers not available");
    }
    if s.resolution {
        check_resolution(s);
    }
    let plans: Vec<CyclicThreadPlan> = (0..s.threads)
        .map(|i| CyclicThreadPlan {
            interval_ns: s.interval_of(i) as u64 * 1000,
            priority: s.priority_of(i),
            policy: s.policy_of(i).raw(),
            cpu: s.cpu_of(i),
            loops: s.loops,
            hist_cells: s.histogram,
            nsecs: s.nsecs,
        })
        .collect();
    if s.verbose {
        let mut text = String::new();
        for i in 0..s.threads {
            if s.listed_affinity().is_some()
                && let Some(cpu) = s.cpu_of(i)
            {
                text.push_str(&format!("Thread {i} using cpu {cpu}.\n"));
            }
            // cyclictest prints its interval after adding the distance: the
            // next thread's.
            text.push_str(&format!("Thread {i} Interval: {}\n", s.interval_of(i + 1)));
        }
        print(&text);
    }
    let opts = CyclicOptions {
        clock: clock_id(s),
        wake: if s.posix_timers {
            CyclicWake::PosixTimer
        } else if s.system {
            CyclicWake::Nanosleep
        } else {
            CyclicWake::ClockNanosleep
        },
        relative: s.relative,
        duration_ns: s.duration.map(|d| d.as_nanos() as u64),
        break_limit: (s.breaktrace > 0).then_some(s.breaktrace),
        tracemark: s.tracemark,
        spike_trigger: (s.spike > 0).then_some(s.spike),
        spike_nodes: s.spike_nodes,
        verbose: s.verbose,
        align: match (s.aligned, s.secaligned) {
            (Some(us), _) => CyclicAlign::Aligned {
                offset_ns: us * 1000,
            },
            (None, Some(us)) => CyclicAlign::SecAligned {
                offset_ns: us * 1000,
            },
            (None, None) => CyclicAlign::None,
        },
        smi: s.smi,
    };
    let labels = (0..s.threads)
        .map(|i| ThreadLabel {
            priority: s.priority_of(i),
            interval_us: s.interval_of(i),
        })
        .collect();
    let some_other = (0..s.threads).any(|i| s.policy_of(i) == CyclicPolicy::Other);
    let mut display = CyclicDisplay::new(
        labels,
        DisplayForm {
            policy: s.policy.name(),
            some_other,
            quiet: s.quiet,
            verbose: s.verbose,
            nsecs: s.nsecs,
            smi: s.smi,
            oscope: s.oscope,
        },
    );
    if opts.tracemark && opts.break_limit.is_some() {
        // rt-tests names the debugfs tracing directory it uses.
        let _ = writeln!(
            std::io::stderr(),
            "INFO: debugfs mountpoint: {}",
            debugfs_tracing_dir()
        );
    }
    // Created before the threads start, as cyclictest's fifo thread does
    // first thing; removed when the run ends (only the pipe made here).
    let fifo = match &s.fifo {
        Some(path) => Some(StatsFifo::create(path)?),
        None => None,
    };
    let start_time = local_time();
    let run = cyclic::start(&plans, &opts).map_err(CommandError::Runtime)?;
    let fifo_thread = fifo.map(|f| f.serve(std::sync::Arc::clone(&run.shared), display.labels()));
    if let Some(cpus) = &s.main_affinity {
        pin_main_thread(cpus);
    }
    let shared = std::sync::Arc::clone(&run.shared);
    let stopped = |shared: &cyclic::CyclicShared| shared.stop.load(Ordering::Relaxed);
    // cyclictest's main loop: draw, sleep 10 ms, stop on a signal, on any
    // thread's -l loops done or on the threads' own stop (-D, -b); else
    // move the cursor up and (with -M) wait for a new maximum.
    loop {
        print(&display.block(&shared));
        let all_stopped = s.loops > 0
            && shared
                .threads
                .iter()
                .any(|t| t.cycles.load(Ordering::Acquire) >= s.loops);
        if crate::rt::signals::wait_for_stop_signal(Duration::from_millis(10)).is_some() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        if stopped(&shared) || all_stopped {
            break;
        }
        print(&display.cursor_up());
        if s.refresh_on_max {
            // Wait for a new maximum; a thread that ends its loops ends the
            // run here, as cyclictest's threads do with -M.
            let epoch = shared.max_epoch.load(Ordering::Relaxed);
            while shared.max_epoch.load(Ordering::Relaxed) == epoch && !stopped(&shared) {
                if crate::rt::signals::wait_for_stop_signal(Duration::from_millis(10)).is_some()
                    || shared
                        .threads
                        .iter()
                        .any(|t| t.finished.load(Ordering::Acquire))
                {
                    shared.stop.store(true, Ordering::Relaxed);
                }
            }
            if stopped(&shared) {
                break;
            }
        }
    }
    if s.refresh_on_max {
        print(&display.cursor_down());
    }
    let results = run.stop_and_join();
    if let Some(t) = fifo_thread {
        let _ = t.join();
    }
    let end_time = local_time();
    let mut threads = Vec::with_capacity(results.len());
    let mut failure = None;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(f) => threads.push(CyclicThread {
                tid: f.tid,
                priority: s.priority_of(i),
                interval_us: s.interval_of(i) as u64,
                cycles: f.cycles,
                min: f.min,
                act: f.act,
                sum: f.sum,
                max: f.max,
                cpu: s.json_cpu_of(i, online),
                hist: f.hist,
                overflows: f.overflows,
                outliers: f.outliers,
                smi_count: f.smi_count,
            }),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    drop(dma);
    if let Some(e) = failure {
        return Err(CommandError::Runtime(e));
    }
    if let Some(path) = &s.json {
        write_json(s, path, &start_time, &end_time, &threads)?;
    }
    let mut text = String::new();
    if s.quiet && s.histogram == 0 {
        for (i, t) in threads.iter().enumerate() {
            text.push_str(&classic::t_line(i, t, s.nsecs, s.smi));
        }
    }
    if opts.spike_trigger.is_some() {
        let count = shared.spikes.load(Ordering::Relaxed);
        let kept: Vec<classic::Spike> = shared
            .spike_slots
            .iter()
            .take(count)
            .map(|slot| classic::Spike {
                thread: slot.thread.load(Ordering::Relaxed),
                diff: slot.diff.load(Ordering::Relaxed),
                ts_us: slot.ts_us.load(Ordering::Relaxed),
            })
            .collect();
        text.push_str(&classic::spikes(&kept, count));
    }
    print(&text);
    text.clear();
    if s.histogram > 0 {
        let block = classic::histogram(&threads, s.histogram, s.histofall, s.smi);
        match &s.histfile {
            Some(path) => {
                let written =
                    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
                        w.write_all(block.as_bytes())
                    });
                if let Err(e) = written {
                    // cyclictest's perror, and the run still ends with 0.
                    eprintln!("opening histogram file:: {}", os_text(&e));
                }
            }
            None => text.push_str(&block),
        }
    }
    if opts.break_limit.is_some() {
        let tids: Vec<i32> = threads.iter().map(|t| t.tid).collect();
        let tid = shared.break_tid.load(Ordering::Acquire);
        let broke = (tid != 0).then(|| (tid, shared.break_value.load(Ordering::Relaxed)));
        text.push_str(&classic::break_block(&tids, broke));
    }
    print(&text);
    Ok(0)
}

/// rt-tests' tracing directory: `<debugfs>/tracing/` where debugfs is
/// mounted, else the standard tracefs place.
fn debugfs_tracing_dir() -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "debugfs").then(|| format!("{dir}/tracing/"))
        })
        .unwrap_or_else(|| "/sys/kernel/tracing/".to_string())
}

/// `-F PATH`: a named pipe latscope creates (never an existing file: where
/// cyclictest unlinks whatever is there, latscope refuses) and removes at
/// the end. Each reader that opens it gets the `T:` lines of that moment.
struct StatsFifo {
    path: std::path::PathBuf,
}

impl StatsFifo {
    fn create(path: &str) -> Result<StatsFifo, CommandError> {
        let c_path = std::ffi::CString::new(path)
            .map_err(|_| CommandError::Runtime(format!("invalid fifo path {path:?}")))?;
        // SAFETY: NUL-terminated path. mkfifo fails with EEXIST on any
        // existing name, so nothing is replaced.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o666) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(CommandError::Runtime(format!(
                "Error creating fifo {path}: {}",
                os_text(&e)
            )));
        }
        Ok(StatsFifo {
            path: std::path::PathBuf::from(path),
        })
    }

    /// The thread that writes the `T:` lines to every reader until the run
    /// stops, then removes the pipe.
    fn serve(
        self,
        shared: std::sync::Arc<cyclic::CyclicShared>,
        labels: (Vec<ThreadLabel>, DisplayForm),
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let (labels, form) = labels;
            let (nsecs, smi) = (form.nsecs, form.smi);
            let display = CyclicDisplay::new(labels, form);
            while !shared.stop.load(Ordering::Relaxed) {
                let opened = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&self.path);
                match opened {
                    Ok(mut f) => {
                        let mut text = String::new();
                        for i in 0..shared.threads.len() {
                            text.push_str(&classic::t_line(
                                i,
                                &display.snapshot(&shared, i),
                                nsecs,
                                smi,
                            ));
                        }
                        let _ = f.write_all(text.as_bytes());
                        std::thread::sleep(Duration::from_micros(250));
                    }
                    // No reader yet: cyclictest retries every 0.5 s; latscope
                    // looks for the stop flag in between.
                    Err(_) => {
                        for _ in 0..10 {
                            if shared.stop.load(Ordering::Relaxed) {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            }
            drop(self);
        })
    }
}

impl Drop for StatsFifo {
    fn drop(&mut self) {
        // Only the pipe this run created (mkfifo succeeded).
        let _ = std::fs::remove_file(&self.path);
    }
}

fn write_json(
    s: &CyclicSettings,
    path: &str,
    start_time: &str,
    end_time: &str,
    threads: &[CyclicThread],
) -> Result<(), CommandError> {
    let uts = nix::sys::utsname::uname()
        .map_err(|e| CommandError::Runtime(format!("uname failed: {e}")))?;
    let text_of = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    let header = JsonHeader {
        cmdline: &s.cmdline,
        start_time,
        end_time,
        return_code: 0,
        sysname: &text_of(uts.sysname()),
        nodename: &text_of(uts.nodename()),
        release: &text_of(uts.release()),
        version: &text_of(uts.version()),
        machine: &text_of(uts.machine()),
        realtime: std::path::Path::new("/sys/kernel/realtime").exists(),
    };
    let body = classic::json(&header, threads, s.nsecs);
    crate::rt::outfile::write_output_file(std::path::Path::new(path), &mut |w| {
        w.write_all(body.as_bytes())
    })
    .map_err(|e| CommandError::Runtime(format!("could not write {path}: {e}")))
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
