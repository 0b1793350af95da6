//! The subcommands. The measuring ones (the pair tests, `ipc`, `timer`,
//! `logdisk`, `suite`) are thin: settings, a `pipeline::Measurement` and the
//! pipeline's one run sequence; the others (`report`, `compare`, `doctor`,
//! `cleanup`, ...) measure nothing. No command module imports another.

pub mod cleanup;
pub mod compare;
pub mod container_cmd;
pub mod cyclicdeadline_cmd;
pub mod cyclictest_cmd;
pub mod doctor_cmd;
pub mod hwlat_cmd;
pub mod hwlatdetect_cmd;
pub mod install_files;
pub mod ipc_cmd;
pub mod logdisk_cmd;
pub mod noise_cmd;
pub mod oslat_cmd;
pub mod pi_stress_cmd;
pub mod primitive_cmd;
pub mod report_cmd;
pub mod rt_migrate_cmd;
pub mod runner_cmd;
pub mod samples_cmd;
pub mod signaltest_cmd;
pub mod suite;
pub mod timer_cmd;

use crate::pipeline::CommandError;

use crate::cli::Command;
use crate::settings::{IpcSettings, UsageError};

/// Runs the subcommand the user asked for.
pub fn dispatch(command: &Command) -> Result<i32, CommandError> {
    use crate::report::cells::RtTestsFlavor;
    use primitive_cmd::ClassicTool;
    let single = |name: &str, settings: IpcSettings, classic: ClassicTool| {
        let transport = crate::measure::ipc::transport_named(name)
            .ok_or_else(|| CommandError::Runtime(format!("primitive {name} is not built in")))?;
        crate::measure::ipc::check_fork(transport.as_ref(), settings.plan.tasks)?;
        primitive_cmd::run(transport.as_ref(), settings, classic)
    };
    if let Some(wide) = command.wide() {
        let columns =
            crate::rt::terminal::columns_to_fit(wide).map_err(|e| UsageError(e.to_string()))?;
        crate::units::set_fit_columns(columns);
    }
    match command {
        Command::Mq(a) => single(
            "mq",
            IpcSettings::from_mq_args(a)?,
            ClassicTool::RtTests(RtTestsFlavor::Pmqtest),
        ),
        Command::Sem(a) => single("sem", IpcSettings::from_sem_args(a)?, ClassicTool::Semtest),
        Command::Signal(a) => single(
            "signal",
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
            ClassicTool::RtTests(RtTestsFlavor::Sigwaittest),
        ),
        Command::Svsem(a) => single(
            "svsem",
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
            ClassicTool::RtTests(RtTestsFlavor::Svsematest),
        ),
        Command::Mutex(a) => single(
            "mutex",
            IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
            ClassicTool::RtTests(RtTestsFlavor::Ptsematest),
        ),
        Command::Pipe(a)
        | Command::Eventfd(a)
        | Command::Futex(a)
        | Command::Unix(a)
        | Command::Svmq(a) => {
            let name = match command {
                Command::Pipe(_) => "pipe",
                Command::Eventfd(_) => "eventfd",
                Command::Futex(_) => "futex",
                Command::Unix(_) => "unix",
                _ => "svmq",
            };
            // Their classic lines are rt-tests' (as svsematest prints them).
            single(
                name,
                IpcSettings::from_pair_args(&a.pairs, a.mode, a.fork)?,
                ClassicTool::RtTests(RtTestsFlavor::Svsematest),
            )
        }
        Command::Ipc(a) => ipc_cmd::run(a),
        Command::Timer(a) => timer_cmd::run(a),
        Command::Cyclictest(a) => cyclictest_cmd::run(&a.args),
        Command::Noise(a) => noise_cmd::run(a),
        Command::Hwlat(a) => hwlat_cmd::run(a),
        Command::Hwlatdetect(a) => hwlatdetect_cmd::run(&a.args),
        Command::Cyclicdeadline(a) => cyclicdeadline_cmd::run(&a.args),
        Command::Oslat(a) => oslat_cmd::run(&a.args),
        Command::Signaltest(a) => signaltest_cmd::run(&a.args),
        Command::PiStress(a) => pi_stress_cmd::run(&a.args),
        Command::RtMigrateTest(a) => rt_migrate_cmd::run(&a.args),
        Command::Container(a) => container_cmd::run(a),
        Command::Runner(a) => {
            use crate::cli::RunnerCommand;
            use crate::settings::runner::RunnerTool;
            let (tool, words) = match &a.tool {
                RunnerCommand::Oslat(w) => (RunnerTool::Oslat, &w.args),
                RunnerCommand::Cyclictest(w) => (RunnerTool::Cyclictest, &w.args),
                RunnerCommand::Hwlatdetect(w) => (RunnerTool::Hwlatdetect, &w.args),
            };
            runner_cmd::run(tool, words)
        }
        Command::Logdisk(a) => logdisk_cmd::run(a),
        Command::Suite(a) => suite::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Samples(a) => samples_cmd::run(a),
        Command::Doctor(a) => doctor_cmd::run(a),
        Command::Cleanup(a) => cleanup::run(a),
        Command::Completions(a) => install_files::completions(a),
        Command::Manpages(a) => install_files::manpages(a),
    }
}
