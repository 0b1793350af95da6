//! One cyclictest measuring thread: its set-up (`CyclicLoop::set_up`: CPU,
//! timer slack, POSIX timer, policy, SMI counter; `start_time`: the common
//! start of `-A`/`--secaligned`; `begin`: the first expiry, `-D`'s end,
//! latscope's figures) and its loop (`CyclicLoop::run`: `wait` for the
//! expiry, then `take_sample`: the clock read after waking less the expiry,
//! cyclictest's figures, `-b`, `--spike`, the skipped periods).

use super::{
    CyclicAlign, CyclicFigures, CyclicLive, CyclicOptions, CyclicShared, CyclicThreadPlan,
    CyclicWake, MIN_START, ThreadReport, VALBUF_SIZE,
};
use crate::rt::clock::{read_clock, timespec};
use crate::rt::sched;
use crate::rt::tracefs::BreakTrace;
use crate::stats::LatencyRecorder;
use crate::stats::window::WindowWriter;
use crate::timer::posix_timer::PosixTimer;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// How much of the period the threads' phases are spread over at most.
/// With the default 1000 us interval: the whole period.
const PHASE_SPREAD_MAX_NS: u64 = 1_000_000;

/// With `-S -m` and without `-A`, the first expiry of thread `index` of `threads`, which
/// started at `now`: the first point of its own timeline that is at least
/// one interval after its start, the timeline being `base` plus
/// `index / threads` of the interval (of 1 ms at most) plus whole intervals.
///
/// Why: with `-S -m`, cyclictest's threads start milliseconds apart (each
/// has its 8 MiB stack made resident first: 18.9 MB peak RSS with two
/// threads), so their wake-ups fall at unrelated phases (traced on the
/// 2-CPU guest: 262 and 406 us apart), while latscope's (MCL_ONFAULT:
/// nothing to populate up front) start a few us apart and would wake in
/// lock step for the whole run, every CPU's timer at the same instant.
/// With `-t2 -a -m` or without `-m`, cyclictest's threads wake 0 to 62 us
/// apart (traced), and so do latscope's: no spread there. Wake-ups that coincide on two CPUs
/// cost each other: on the 2-CPU KVM guest of docs/benchmarks.md part 7,
/// `cyclictest -S -A 0` (all together) against `-S` (cyclictest's threads
/// start milliseconds apart, each after its 8 MiB stack is locked, so
/// their phases fall anywhere), and latscope's lock step against `-A 500`,
/// cost 4 to 15 % more CPU per wake-up (medians of 8 alternating rounds,
/// two series on a lightly loaded machine; nothing visible when it was
/// saturated) and up to 2 us more avg. Spreading the phases on purpose
/// gives every `-S -m` run the case cyclictest gets by chance. The spread is held
/// within 1 ms so that with `-l` the last thread is never more than 1 ms
/// behind the first (the main loop stops the others 10 ms after the first
/// is done, as cyclictest's does). `-r` and `-s` sleep relative to each
/// loop, so their phases are where each thread starts.
fn first_expiry(base: u64, index: usize, threads: usize, interval: u64, now: u64) -> u64 {
    let offset = interval.min(PHASE_SPREAD_MAX_NS) * index as u64 / threads.max(1) as u64;
    let anchor = base + offset;
    let earliest = now + interval;
    if anchor >= earliest || interval == 0 {
        return anchor.max(earliest);
    }
    anchor + (earliest - anchor).div_ceil(interval) * interval
}

// What the loop does for a few samples only, or only with --latscope-json,
// is kept out of line: the loop a plain run executes every period stays a
// few cache lines of code (the hot path of `CyclicLoop::run`, 8 KiB with these
// inlined, spread over three pages), which a wake-up on a CPU whose caches
// another task has just used refetches.

/// The Report's figures of one sample (with `--latscope-json` only).
#[inline(never)]
fn record_report(
    report: &mut Option<ThreadReport>,
    windows: &mut Option<WindowWriter<'_>>,
    now: u64,
    diff_ns: i64,
) {
    if let Some(r) = report {
        r.recorder.record(diff_ns);
    }
    if let Some(w) = windows {
        w.record(now, diff_ns);
    }
}

/// `--spike`: claims the next slot (one atomic operation) and fills it.
#[cold]
#[inline(never)]
fn record_spike(shared: &CyclicShared, index: usize, diff: i64, now: u64) {
    let slot = shared.spikes.fetch_add(1, Ordering::Relaxed);
    if let Some(s) = shared.spike_slots.get(slot) {
        s.thread.store(index, Ordering::Relaxed);
        s.diff.store(diff, Ordering::Relaxed);
        s.ts_us.store((now / 1000) as i64, Ordering::Relaxed);
    }
}

/// `-b`: a sample above the limit stops every thread; the first thread to
/// break records itself and writes the trace mark (`--tracemark`).
#[cold]
#[inline(never)]
pub(super) fn break_run(
    shared: &CyclicShared,
    tid: i32,
    diff: i64,
    limit: i64,
    trace: Option<&Mutex<BreakTrace>>,
) {
    shared.stop.store(true, Ordering::Relaxed);
    if shared
        .break_tid
        .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        if let Some(trace) = trace
            && let Ok(mut t) = trace.try_lock()
        {
            let mut msg = [0u8; 96];
            let n = break_message(&mut msg, diff, limit);
            t.fire(&msg[..n]);
        }
        shared.break_value.store(diff, Ordering::Relaxed);
    }
}

/// `hit latency threshold (%llu > %d)` into a stack buffer (no allocation).
fn break_message(buf: &mut [u8; 96], diff: i64, limit: i64) -> usize {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(cursor, "hit latency threshold ({diff} > {limit})");
    cursor.position() as usize
}

/// The SMI count MSR (0x34) of the CPU behind `fd` (/dev/cpu/N/msr).
fn read_smi(fd: libc::c_int) -> Option<u64> {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into `value` from an open descriptor.
    let n = unsafe { libc::pread(fd, (&mut value as *mut u64).cast(), 8, 0x34) };
    (n == 8).then_some(value & 0xFFFF_FFFF)
}

/// The thread's whole life: set up, wait for the common start, run.
pub(super) fn sample(
    index: usize,
    plan: &CyclicThreadPlan,
    opts: &CyclicOptions,
    shared: &CyclicShared,
    trace: Option<&Mutex<BreakTrace>>,
) -> Result<CyclicFigures, String> {
    let mut thread = CyclicLoop::set_up(index, plan, opts, shared, trace)?;
    let Some(start) = thread.start_time() else {
        // Stopped while waiting for the others.
        return Ok(thread.f);
    };
    thread.begin(start)?;
    thread.run()
}

/// How a wait for the next expiry ended.
enum Woke {
    /// The expiry came: take the sample.
    Expired,
    /// Interrupted (a stop's wake signal): look at the stop flag again.
    Interrupted,
    /// The thread ends here without a sample (the end of `-D`).
    Ended,
}

/// One thread's state from its set-up to its end: what the loop reads and
/// writes every period, all built before the first sample.
struct CyclicLoop<'a> {
    index: usize,
    plan: &'a CyclicThreadPlan,
    opts: &'a CyclicOptions,
    shared: &'a CyclicShared,
    live: &'a CyclicLive,
    trace: Option<&'a Mutex<BreakTrace>>,
    timer: Option<PosixTimer>,
    msr: Option<MsrFd>,
    smi_old: u64,
    f: CyclicFigures,
    interval: u64,
    /// The clock at the last wake-up (at first: the thread's start).
    now: u64,
    /// The expiry waited for.
    next: u64,
    /// `-D`: the end of the run (ns of the clock).
    stop_at: Option<u64>,
    /// No wait lasts past it (`stop_at`, else never).
    deadline: u64,
    interval_ts: libc::timespec,
    report: Option<ThreadReport>,
    windows: Option<WindowWriter<'a>>,
    counters_before: (u64, u64, u64),
    broke: bool,
}

impl<'a> CyclicLoop<'a> {
    /// Pins the thread, sets its policy, opens its POSIX timer and SMI
    /// counter; the figures start as cyclictest's do.
    fn set_up(
        index: usize,
        plan: &'a CyclicThreadPlan,
        opts: &'a CyclicOptions,
        shared: &'a CyclicShared,
        trace: Option<&'a Mutex<BreakTrace>>,
    ) -> Result<CyclicLoop<'a>, String> {
        let live = &shared.threads[index];
        if let Some(cpu) = plan.cpu {
            sched::pin_current_thread(cpu)?;
        }
        sched::minimal_timer_slack();
        let tid = sched::current_tid();
        live.tid.store(tid, Ordering::Relaxed);
        let timer = if opts.wake == CyclicWake::PosixTimer {
            Some(PosixTimer::for_this_thread(opts.clock)?)
        } else {
            None
        };
        let param = libc::sched_param {
            sched_priority: plan.priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is valid.
        if unsafe { libc::sched_setscheduler(0, plan.policy, &param) } != 0 {
            let errno = std::io::Error::last_os_error();
            return Err(format!(
                "timerthread{}: failed to set priority to {}: {errno}",
                plan.cpu.map_or(-1, |c| c as i64),
                plan.priority
            ));
        }
        let msr = if opts.smi {
            Some(MsrFd::open(plan.cpu.unwrap_or(0))?)
        } else {
            None
        };
        let smi_old = match &msr {
            Some(m) => read_smi(m.0).ok_or("Could not read SMI counter")?,
            None => 0,
        };
        let f = CyclicFigures {
            tid,
            min: MIN_START,
            hist: vec![0; plan.hist_cells],
            // cyclictest keeps one overflow cycle number per histogram cell.
            outliers: Vec::with_capacity(plan.hist_cells),
            ..CyclicFigures::default()
        };
        Ok(CyclicLoop {
            index,
            plan,
            opts,
            shared,
            live,
            trace,
            timer,
            msr,
            smi_old,
            f,
            interval: plan.interval_ns,
            now: 0,
            next: 0,
            stop_at: None,
            deadline: u64::MAX,
            interval_ts: timespec(plan.interval_ns),
            report: None,
            windows: None,
            counters_before: (0, 0, 0),
            broke: false,
        })
    }

    /// The thread's start (ns of the clock): now, or with `-A` and
    /// `--secaligned` the common start once every thread is ready (None
    /// when the run stops before that).
    fn start_time(&self) -> Option<u64> {
        let (opts, shared) = (self.opts, self.shared);
        let offset_ns = match opts.align {
            CyclicAlign::None | CyclicAlign::Spread => return Some(read_clock(opts.clock)),
            CyclicAlign::Aligned { offset_ns } | CyclicAlign::SecAligned { offset_ns } => offset_ns,
        };
        // Every thread waits for all, thread 0 reads the common start.
        shared.ready.fetch_add(1, Ordering::AcqRel);
        while shared.ready.load(Ordering::Acquire) < shared.threads.len() {
            if shared.stop.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        if self.index == 0 {
            let mut t = read_clock(opts.clock);
            if matches!(opts.align, CyclicAlign::SecAligned { .. }) {
                // Never a start in the past: the next full second, or the
                // one after when less than 0.1 s is left.
                let sec = t / 1_000_000_000;
                let nsec = t % 1_000_000_000;
                t = (sec + if nsec > 900_000_000 { 2 } else { 1 }) * 1_000_000_000;
            }
            shared.start_ns.store(t, Ordering::Release);
        }
        let mut t = shared.start_ns.load(Ordering::Acquire);
        while t == 0 {
            std::thread::sleep(std::time::Duration::from_micros(100));
            t = shared.start_ns.load(Ordering::Acquire);
        }
        Some(match opts.align {
            CyclicAlign::Aligned { .. } => t + offset_ns * self.index as u64,
            _ => t + offset_ns,
        })
    }

    /// From the thread's start: the first expiry, `-D`'s end, latscope's
    /// figures (built, histograms touched, before the first sample), the
    /// POSIX timer armed.
    fn begin(&mut self, start: u64) -> Result<(), String> {
        let (opts, shared, interval) = (self.opts, self.shared, self.interval);
        let n_threads = shared.threads.len();
        self.now = start;
        self.next = start + interval;
        if opts.align == CyclicAlign::Spread && n_threads > 1 {
            self.next = first_expiry(shared.phase_base, self.index, n_threads, interval, start);
            // The thread's own start, as -D and the windows count it, is one
            // interval before its first expiry: -D gives it as many periods.
            self.now = self.next - interval;
        }
        self.stop_at = opts.duration_ns.map(|d| self.now + d);
        // No wait lasts past the end of -D (cyclictest sleeps to the first
        // expiry after it: -i 5000000 -D 1 took 5 s, and -i 1000000000000
        // -D 1 11.6 days): an expiry beyond it is not waited for, the thread
        // sleeps to the end and stops there without a sample. Expiries at or
        // before it are taken as cyclictest takes them (with an interval
        // that divides -D, the same count). A stop signal wakes a sleeping
        // thread (`stop_and_join`: the wake signal, EINTR here).
        self.deadline = self.stop_at.unwrap_or(u64::MAX);
        self.report = self.plan.report.then(|| ThreadReport {
            recorder: LatencyRecorder::signed(),
            overruns: 0,
            cpu: 0,
            involuntary_switches: 0,
            major_faults: 0,
            minor_faults: 0,
        });
        let now = self.now;
        self.windows = shared
            .windows
            .get(self.index)
            .filter(|_| self.plan.report)
            .map(|ring| WindowWriter::new(ring, now));
        self.counters_before = thread_counters();
        if let Some(t) = &self.timer {
            if opts.relative {
                t.arm(interval, interval, false)?;
            } else {
                t.arm(self.next, interval, true)?;
            }
        }
        Ok(())
    }

    /// THE cyclictest loop: wait for the expiry, take the sample, until the
    /// stop flag, the end of `-D` or the thread's own `-l` loops.
    fn run(mut self) -> Result<CyclicFigures, String> {
        while !self.shared.stop.load(Ordering::Relaxed) {
            match self.wait()? {
                Woke::Expired => {}
                Woke::Interrupted => continue,
                Woke::Ended => break,
            }
            if !self.take_sample()? {
                break;
            }
        }
        Ok(self.finish())
    }

    /// Waits for the next expiry the way `-x`, `-r` and `-s` choose, never
    /// past `deadline` (reaching it stops the run).
    #[inline(always)]
    fn wait(&mut self) -> Result<Woke, String> {
        let (opts, shared) = (self.opts, self.shared);
        let stop_here = || {
            shared.stop.store(true, Ordering::Relaxed);
            Ok(Woke::Ended)
        };
        match opts.wake {
            CyclicWake::PosixTimer => {
                let Some(t) = &self.timer else {
                    return Ok(Woke::Ended);
                };
                let fired = if self.next > self.deadline {
                    // From the last wake-up: late by the time since it, a
                    // few microseconds.
                    t.wait_at_most(Some(&timespec(self.deadline.saturating_sub(self.now))))
                } else {
                    t.wait().map(|()| true)
                };
                match fired {
                    Ok(true) => Ok(Woke::Expired),
                    Ok(false) => stop_here(),
                    Err(libc::EINTR) => Ok(Woke::Interrupted),
                    Err(_) => Ok(Woke::Ended),
                }
            }
            CyclicWake::ClockNanosleep if !opts.relative => {
                let until = self.next.min(self.deadline);
                let ts = timespec(until);
                // SAFETY: valid timespec; null remainder with TIMER_ABSTIME.
                let rc = unsafe {
                    libc::clock_nanosleep(
                        opts.clock,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
                match rc {
                    0 if until < self.next => stop_here(),
                    0 => Ok(Woke::Expired),
                    libc::EINTR => Ok(Woke::Interrupted),
                    e => Err(sleep_failed(e)),
                }
            }
            CyclicWake::ClockNanosleep | CyclicWake::Nanosleep => self.wait_relative(),
            // Its own loop (timer::cyclic::deadline) runs instead of this one.
            CyclicWake::DeadlineYield => Ok(Woke::Ended),
        }
    }

    /// `-r` and `-s`: one interval from the clock read before the sleep.
    #[inline(always)]
    fn wait_relative(&mut self) -> Result<Woke, String> {
        let opts = self.opts;
        let before = read_clock(opts.clock);
        self.next = before + self.interval;
        let cut = self.next > self.deadline;
        let left;
        let ts = if cut {
            left = timespec(self.deadline.saturating_sub(before));
            &left
        } else {
            &self.interval_ts
        };
        let rc = if opts.wake == CyclicWake::Nanosleep {
            // SAFETY: valid timespec; the remainder is not wanted.
            let failed = unsafe { libc::nanosleep(ts, std::ptr::null_mut()) } != 0;
            // cyclictest ignores nanosleep's result; only a wake-up (a stop)
            // counts here.
            if failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                libc::EINTR
            } else {
                0
            }
        } else {
            // SAFETY: valid timespec; relative sleep.
            unsafe { libc::clock_nanosleep(opts.clock, 0, ts, std::ptr::null_mut()) }
        };
        match rc {
            libc::EINTR => Ok(Woke::Interrupted),
            0 if cut => {
                self.shared.stop.store(true, Ordering::Relaxed);
                Ok(Woke::Ended)
            }
            0 => Ok(Woke::Expired),
            e => Err(sleep_failed(e)),
        }
    }

    /// THE cyclictest sample: the clock read after waking less the expiry,
    /// truncated to us unless `--nsecs`, into cyclictest's figures (and
    /// latscope's); then the next expiry past the periods missed. False once
    /// the thread's own `-l` loops are done.
    #[inline(always)]
    fn take_sample(&mut self) -> Result<bool, String> {
        let (plan, opts, shared, live) = (self.plan, self.opts, self.shared, self.live);
        let now = read_clock(opts.clock);
        self.now = now;
        let mut diff_smi = 0;
        if let Some(m) = &self.msr {
            let Some(smi_now) = read_smi(m.0) else {
                return Err("Could not read SMI counter".to_string());
            };
            diff_smi = smi_now.wrapping_sub(self.smi_old) & 0xFFFF_FFFF;
            self.f.smi_count += diff_smi;
            self.smi_old = smi_now;
            live.smi_count.store(self.f.smi_count, Ordering::Relaxed);
        }
        let diff_ns = now as i64 - self.next as i64;
        // cyclictest's calcdiff truncates toward zero.
        let diff = if plan.nsecs { diff_ns } else { diff_ns / 1000 };
        let f = &mut self.f;
        if diff < f.min {
            f.min = diff;
            live.min.store(diff, Ordering::Relaxed);
        }
        if diff > f.max {
            f.max = diff;
            live.max.store(diff, Ordering::Relaxed);
            shared.max_epoch.fetch_add(1, Ordering::Relaxed);
        }
        f.sum += diff;
        live.sum.store(f.sum, Ordering::Relaxed);
        if self.report.is_some() {
            record_report(&mut self.report, &mut self.windows, now, diff_ns);
        }
        if let Some(trigger) = opts.spike_trigger
            && diff > trigger
        {
            self.f.spikes_seen += 1;
            record_spike(shared, self.index, diff, now);
        }
        if self.stop_at.is_some_and(|s| now >= s) {
            shared.stop.store(true, Ordering::Relaxed);
        }
        if let Some(limit) = opts.break_limit
            && diff > limit
            && crate::stats::crossings::break_stops_run(opts.breaks.as_deref(), self.index)
            && !self.broke
        {
            self.broke = true;
            break_run(shared, self.f.tid, diff, limit, self.trace);
        }
        let f = &mut self.f;
        f.act = diff;
        live.act.store(diff, Ordering::Relaxed);
        if !live.values.is_empty() {
            let at = (f.cycles as usize) & (VALBUF_SIZE - 1);
            live.values[at].store(diff, Ordering::Relaxed);
            if let Some(s) = live.smis.get(at) {
                s.store(diff_smi, Ordering::Relaxed);
            }
        }
        if plan.hist_cells > 0 {
            if diff >= plan.hist_cells as i64 || diff < 0 {
                f.overflows += 1;
                if f.outliers.len() < plan.hist_cells {
                    f.outliers.push(f.cycles);
                }
            } else {
                f.hist[diff as usize] += 1;
            }
        }
        f.cycles += 1;
        // Release: the main thread reads the values of this cycle after it.
        live.cycles.store(f.cycles, Ordering::Release);
        self.skip_to_next_expiry(now);
        // Each thread ends after its own -l loops; the main thread ends the
        // run once it sees any thread done (cyclictest's main loop), which
        // stops the others where they are.
        Ok(!(plan.loops > 0 && self.f.cycles >= plan.loops))
    }

    /// The next expiry: one interval on, and past every period the wake-up
    /// came too late for (counted as overruns in latscope's figures).
    #[inline(always)]
    fn skip_to_next_expiry(&mut self, now: u64) {
        let interval = self.interval;
        self.next += interval;
        let mut skipped = 0;
        if let Some(t) = &self.timer {
            skipped = t.overruns();
            self.next += skipped * interval;
        }
        while now > self.next {
            self.next += interval;
            skipped += 1;
        }
        if let Some(r) = &mut self.report {
            r.overruns += skipped;
        }
    }

    /// The thread's figures once it has left its loop.
    fn finish(mut self) -> CyclicFigures {
        if let Some(w) = &mut self.windows {
            w.flush();
        }
        if let Some(mut r) = self.report.take() {
            let (ivcsw, majflt, minflt) = thread_counters();
            let before = self.counters_before;
            r.involuntary_switches = ivcsw.saturating_sub(before.0);
            r.major_faults = majflt.saturating_sub(before.1);
            r.minor_faults = minflt.saturating_sub(before.2);
            r.cpu = sched::current_cpu();
            self.f.report = Some(r);
        }
        self.f
    }
}

fn sleep_failed(errno: i32) -> String {
    format!(
        "clock_nanosleep failed: {}",
        std::io::Error::from_raw_os_error(errno)
    )
}

/// The calling thread's (involuntary switches, major faults, minor faults).
fn thread_counters() -> (u64, u64, u64) {
    // SAFETY: a zeroed rusage is a valid output buffer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD reports the calling thread into `usage`.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    (
        usage.ru_nivcsw as u64,
        usage.ru_majflt as u64,
        usage.ru_minflt as u64,
    )
}

/// An open /dev/cpu/N/msr, closed on drop.
struct MsrFd(libc::c_int);

impl MsrFd {
    /// `--smi`: the MSR device of `cpu`, read-only.
    fn open(cpu: usize) -> Result<MsrFd, String> {
        let path = format!("/dev/cpu/{cpu}/msr\0");
        // SAFETY: NUL-terminated path.
        let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "/dev/cpu/{cpu}/msr open failed, try chown or chmod +r /dev/cpu/*/msr, or run as root: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(MsrFd(fd))
    }
}

impl Drop for MsrFd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned and closed once.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_expiries_spread_the_threads_over_the_period() {
        let base = 5_000_000_000;
        let ms = 1_000_000;
        // Two threads started 3 us and 40 us after the base: half a period apart.
        let t0 = first_expiry(base, 0, 2, ms, base + 3_000);
        let t1 = first_expiry(base, 1, 2, ms, base + 40_000);
        assert_eq!(t0, base + 2 * ms);
        assert_eq!(t1, base + ms + ms / 2);
        assert_eq!((t1 - base) % ms, ms / 2);
        // Thread 0 started at the base itself: exactly one interval later.
        assert_eq!(first_expiry(base, 0, 2, ms, base), base + ms);
        // Always at least one interval after the thread's start, less than two.
        for (index, start) in [(0, 0), (1, 999_999), (3, 123_456), (7, 2_500_000)] {
            let now = base + start;
            let first = first_expiry(base, index, 8, ms, now);
            assert!(first >= now + ms && first < now + 2 * ms, "{index} {start}");
            assert_eq!((first - base) % ms, index as u64 * ms / 8);
        }
    }

    #[test]
    fn the_spread_stays_within_one_millisecond_for_long_intervals() {
        let base = 1_000_000_000;
        let interval = 100_000_000;
        let first = first_expiry(base, 1, 2, interval, base + 10_000);
        assert_eq!(first, base + interval + 500_000);
    }
}
