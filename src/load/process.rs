//! Running the load generators: started before the first sample at normal
//! priority on the measured CPUs, each in its own process group with a
//! parent-death signal, and stopped and reaped on every exit path.
//!
//! - Normal end, an error, Ctrl-C or SIGTERM: `Loads::stop` (also run by
//!   `Drop`, so an early return or a panic that unwinds stops them too) sends
//!   SIGTERM to each generator's process group, waits up to `STOP_GRACE`,
//!   then sends SIGKILL, and reaps the generator.
//! - latscope killed (kill -9, a crash): the kernel sends each generator
//!   SIGTERM (`PR_SET_PDEATHSIG`; stress-ng then stops its workers, which
//!   also have a parent-death signal of their own; hackbench runs as threads
//!   of one process, so its threads end with it).
//!
//! The parent-death signal fires when the *thread* that forked ends: loads
//! are started from the main thread, which lives as long as the process.

use super::LoadSpec;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in every generator's environment (and so in its workers'): the pid
/// of the latscope that started it, to find its processes from outside.
pub const OWNER_ENV: &str = "LATSCOPE_LOAD_OWNER";
/// Time given to the generators to fork their workers before measuring.
pub const SETTLE: Duration = Duration::from_millis(300);
/// Time a generator has to stop after SIGTERM before it gets SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// The tail of a generator's output kept to explain its failure.
const OUTPUT_TAIL: u64 = 4096;

// The record is part of the Report model (report/model/loads.rs); the
// generators fill it.
use crate::report::LoadRecord;

struct RunningLoad {
    child: Child,
    record: LoadRecord,
    /// Standard output and error of the generator (an anonymous memory file).
    output: File,
    /// `kcompile`'s private directory, removed once the build is reaped.
    workdir: Option<super::kcompile::WorkDir>,
}

/// The generators of one run.
#[derive(Default)]
pub struct Loads {
    running: Vec<RunningLoad>,
    /// Records of the generators already stopped, with what they said when
    /// they ended early.
    stopped: Vec<(LoadRecord, String)>,
}

impl Loads {
    /// Starts every load on `cpus` and waits `SETTLE` for their workers. A
    /// generator that cannot start or ends at once is an error (the others
    /// are stopped again).
    pub fn start(specs: &[LoadSpec], cpus: &[usize]) -> Result<Loads, String> {
        let mut loads = Loads::default();
        for spec in specs {
            loads.running.push(spawn(spec, cpus)?);
        }
        if loads.running.is_empty() {
            return Ok(loads);
        }
        std::thread::sleep(SETTLE);
        if let Some(index) = loads.running.iter().position(|l| has_exited(l.record.pid)) {
            // Stopped the usual way (the others too), so the group is
            // signalled before the generator is reaped.
            loads.stop();
            let (record, said) = &loads.stopped[index];
            return Err(format!(
                "--load {}: {} ended at once ({}){}",
                record.spec,
                record.command_line.join(" "),
                record.exit_status.as_deref().unwrap_or("ended"),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                }
            ));
        }
        Ok(loads)
    }

    /// What runs (or ran), for a report written while the run goes on.
    pub fn records(&self) -> Vec<LoadRecord> {
        self.stopped
            .iter()
            .map(|(r, _)| r.clone())
            .chain(self.running.iter().map(|l| l.record.clone()))
            .collect()
    }

    /// Stops and reaps every generator (at once, then waits for all); returns
    /// the final records and a warning for each load that ended early.
    pub fn stop(&mut self) -> (Vec<LoadRecord>, Vec<String>) {
        let mut running = std::mem::take(&mut self.running);
        for load in &mut running {
            load.record.ended_early = has_exited(load.record.pid);
            if !load.record.ended_early {
                signal_group(load.record.pid, libc::SIGTERM);
                load.record.stopped_with = Some("SIGTERM".to_string());
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for mut load in running {
            while !has_exited(load.record.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if !has_exited(load.record.pid) {
                signal_group(load.record.pid, libc::SIGKILL);
                load.record.stopped_with = Some("SIGKILL".to_string());
            }
            // Until reaped, the generator's pid still names its group, so
            // this reaches only its own workers that outlived it.
            let status = load.child.wait();
            signal_group(load.record.pid, libc::SIGKILL);
            load.record.exit_status = Some(match status {
                Ok(s) => describe_status(s),
                Err(e) => format!("not reaped: {e}"),
            });
            let said = if load.record.ended_early {
                last_line(&load.output)
            } else {
                String::new()
            };
            // The build's processes are gone: its directory can go.
            drop(load.workdir.take());
            self.stopped.push((load.record, said));
        }
        let warnings = self
            .stopped
            .iter()
            .filter_map(|(r, said)| r.early_end_warning(said))
            .collect();
        (self.records(), warnings)
    }
}

impl Drop for Loads {
    fn drop(&mut self) {
        if !self.running.is_empty() {
            self.stop();
        }
    }
}

pub fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

/// Sends `signal` to the process group led by `leader`; a group already
/// gone is fine.
pub fn signal_group(leader: i32, signal: i32) {
    // SAFETY: kill has no memory preconditions; a negative pid names a group.
    unsafe { libc::kill(-leader, signal) };
}

/// True once the child `pid` has ended, without reaping it (WNOWAIT), so
/// that its pid and process group stay reserved until `wait`.
fn has_exited(pid: i32) -> bool {
    // SAFETY: an all-zero siginfo_t is valid; waitid writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer; WNOHANG returns at once.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is valid to read for a SIGCHLD siginfo (zero when
    // nothing changed).
    rc != 0 || unsafe { info.si_pid() } != 0
}

/// The last non-empty line a generator wrote.
fn last_line(output: &File) -> String {
    let len = output.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(OUTPUT_TAIL);
    let mut tail = vec![0u8; (len - start) as usize];
    let read = output.read_at(&mut tail, start).unwrap_or(0);
    String::from_utf8_lossy(&tail[..read])
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// A child's standard output or error into `output` (a `memory_file`).
pub fn output_to(output: &File) -> Result<Stdio, String> {
    output
        .try_clone()
        .map(Stdio::from)
        .map_err(|e| format!("could not share a child's output file: {e}"))
}

pub fn memory_file() -> Result<File, String> {
    crate::rt::self_exec::memory_file(c"latscope-load")
}

fn spawn(spec: &LoadSpec, measured: &[usize]) -> Result<RunningLoad, String> {
    let (cpus, argv, command_line, workdir) = match &spec.generator {
        super::Generator::Kcompile(k) => {
            let cpus = off_the_measured(spec, measured)?;
            let workdir = super::kcompile::WorkDir::create()?;
            let mut shown = spec.command_line(cpus.len());
            shown.extend([
                "-C".to_string(),
                workdir.path.join("tree").display().to_string(),
            ]);
            let argv = k.argv(std::path::Path::new("/bin/sh"), &workdir.path, cpus.len());
            (cpus, argv, shown, Some(workdir))
        }
        _ => {
            let command_line = spec.command_line(measured.len());
            (measured.to_vec(), command_line.clone(), command_line, None)
        }
    };
    let cpus = &cpus[..];
    let output = memory_file()?;
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env(OWNER_ENV, std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(output_to(&output)?)
        .stderr(output_to(&output)?);
    at_normal_priority(&mut command, cpus);
    let child = command.spawn().map_err(|e| {
        format!(
            "--load {}: could not start {}: {e}",
            spec.spec(),
            command_line[0]
        )
    })?;
    let record = LoadRecord {
        spec: spec.spec(),
        command_line: command_line.clone(),
        version: spec.version.clone(),
        pid: child.id() as i32,
        cpus: cpus.to_vec(),
        exit_status: None,
        stopped_with: None,
        ended_early: false,
    };
    Ok(RunningLoad {
        child,
        record,
        output,
        workdir,
    })
}

/// The CPUs latscope may use that are not measured: where `kcompile` runs.
fn off_the_measured(spec: &LoadSpec, measured: &[usize]) -> Result<Vec<usize>, String> {
    let cpus: Vec<usize> = crate::rt::sched::allowed_cpus_of_process()
        .into_iter()
        .filter(|c| !measured.contains(c))
        .collect();
    if cpus.is_empty() {
        return Err(format!(
            "--load {}: every CPU latscope may use is measured (CPU {}), and the build runs off the measured CPUs: measure fewer CPUs (timer --cpus)",
            spec.spec(),
            crate::units::cpu_list(measured)
        ));
    }
    Ok(cpus)
}

/// Makes `command` start as a child of its own (its own process group, a
/// parent-death signal) at normal priority on `cpus`, with the signal state
/// of a fresh process, whatever the thread that spawns it has: the load
/// generators, and the shell of `--on-threshold shell`.
pub fn at_normal_priority(command: &mut Command, cpus: &[usize]) {
    // SAFETY: an all-zero cpu_set_t is an empty set; CPU_SET writes in it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: CPU_SET ignores CPUs beyond the set's size.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    command.process_group(0);
    // SAFETY: the closure makes only async-signal-safe system calls on data
    // prepared before the fork.
    unsafe { command.pre_exec(move || prepare_child(parent, &set)) };
}

/// Runs in the generator between fork and exec: parent-death signal, normal
/// scheduling, the measured CPUs, and the signal state of a fresh process.
fn prepare_child(parent: libc::pid_t, cpus: &libc::cpu_set_t) -> std::io::Result<()> {
    let check = |rc: libc::c_int| {
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY (whole block): plain system calls on valid arguments.
    unsafe {
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
        ))?;
        // latscope may have died between fork and prctl: then no signal comes.
        if libc::getppid() != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        // Normal priority, whatever the forking thread had: SCHED_OTHER
        // (which also clears SCHED_RESET_ON_FORK), then nice 0. Raising a
        // negative nice to 0 is always allowed; lowering a positive one needs
        // privilege, and then the nice latscope was started with stays.
        let param = libc::sched_param { sched_priority: 0 };
        check(libc::sched_setscheduler(0, libc::SCHED_OTHER, &param))?;
        libc::setpriority(libc::PRIO_PROCESS, 0, 0);
        check(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            cpus,
        ))?;
        // latscope blocks SIGINT/SIGTERM and SIGUSR1 (a disposition of
        // SIG_IGN, inherited, survives exec too); a blocked mask survives
        // exec and would keep the generator from stopping or signalling.
        libc::signal(libc::SIGUSR1, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        check(libc::sigprocmask(
            libc::SIG_SETMASK,
            &none,
            std::ptr::null_mut(),
        ))?;
    }
    Ok(())
}
