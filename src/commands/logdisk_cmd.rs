//! `latscope logdisk`: mqldt's options and latscope's, its live output
//! (mqldt's lines or a status line) and its CSV file.

use crate::cli::{LogdiskArgs, OutputFormat};
use crate::live::logdisk::{ClassicProgress, ProgressLine};
use crate::measure::logdisk::{self as logdisk_run, LogdiskProgress};
use crate::pipeline::{
    self, CommandError, FinishedTest, Measurement, Plan, PrepareSpec, Presentation, Run,
};
use crate::report::classic_mqldt;
use crate::report::console::ModernConsole;
use crate::report::csv_logdisk::LogdiskCsv;
use crate::report::json::LatscopeJson;
use crate::report::{Exporter, PrintedLive, Report};
use crate::settings::OutputTarget;
use crate::settings::logdisk::LogdiskSettings;
use std::io::Write;
use std::path::Path;

/// `latscope logdisk`.
pub fn run(args: &LogdiskArgs) -> Result<i32, CommandError> {
    let settings = LogdiskSettings::from_args(args)?;
    pipeline::run(&mut LogdiskCommand {
        classic: args.format == OutputFormat::Classic,
        args,
        settings,
    })
}

struct LogdiskCommand<'a> {
    args: &'a LogdiskArgs,
    settings: LogdiskSettings,
    classic: bool,
}

impl Measurement for LogdiskCommand<'_> {
    fn deepest_idle_state(&self) -> Option<u32> {
        self.args.idle.deepest_idle_state
    }

    fn plan(&self) -> Plan {
        let settings = &self.settings;
        Plan {
            // No memory locking or idle-state hold for disk writes; the loads
            // and the kernel-log follower as for every test.
            prepare: PrepareSpec {
                loads: settings.loads.clone(),
                cpus: crate::rt::sched::allowed_cpus(),
                ..PrepareSpec::default()
            },
            fail_if: settings.fail_if.clone(),
            actions: settings.actions.clone(),
            breaks: None,
            outputs: settings.outputs.clone(),
            presentation: Presentation {
                // In classic format each block size's results are printed as
                // it ends.
                console: if self.classic {
                    Box::new(PrintedLive)
                } else {
                    Box::new(ModernConsole)
                },
                classic: self.classic,
                json: Box::new(LatscopeJson),
            },
        }
    }

    fn measure(&mut self, run: &mut Run<'_>) -> Result<Vec<FinishedTest>, CommandError> {
        let settings = &self.settings;
        let mut progress: Box<dyn LogdiskProgress> = if self.classic {
            let _ = write!(
                crate::rt::stdio::out(),
                "{}",
                classic_options(self.args, settings)
            );
            Box::new(ClassicProgress::new(settings))
        } else {
            Box::new(ProgressLine::new(settings.quiet))
        };
        let tests = logdisk_run::measure(settings, run, progress.as_mut())?;
        for warning in logdisk_run::warnings_of(settings, run.sysinfo) {
            run.warn(warning);
        }
        Ok(tests)
    }

    /// `--csv`: mqldt's exact CSV in classic format, latscope's otherwise.
    fn write_extras(&self, report: &Report) -> Result<(), String> {
        match self.settings.csv_file.as_deref() {
            None => Ok(()),
            Some(path) if self.classic => write_classic_csv(path, report),
            Some(path) => write_csv(path, report, self.settings.writers > 1),
        }
    }
}

/// mqldt's options block for these settings (`--bsize` as typed).
fn classic_options(args: &LogdiskArgs, settings: &LogdiskSettings) -> String {
    let bsize = args.bsize.text.as_str();
    let dir = settings.dir.display().to_string();
    let csv = settings.csv_file.as_ref().map(|p| p.display().to_string());
    let mut text = classic_mqldt::options_block(&classic_mqldt::OptionsBlock {
        bsize,
        dir: &dir,
        file_prefix: &settings.file_prefix,
        num_files: settings.num_files,
        file_size: settings.file_size,
        duration_s: settings.duration.as_secs(),
        alignment: args.alignment.is_some().then_some(settings.alignment),
        background_threads: 0,
        csv_file: csv.as_deref(),
        qm: settings.writers as u32,
        delay_us: settings.delay_us,
    });
    if settings.writers > 1 {
        text.push_str(&classic_mqldt::qm_simulation_line(settings.writers as u32));
    }
    text
}

/// mqldt's exact CSV: truncated for one writer, appended with `--qm`.
fn write_classic_csv(path: &Path, report: &Report) -> Result<(), String> {
    let (mode, text) = classic_mqldt::csv_of(report);
    let append = mode == classic_mqldt::CsvMode::Append;
    // In place (through a symlink, onto a device) by rt::outfile's rule.
    crate::rt::outfile::write_in_place(path, append, 0o600, &mut |out, _| {
        out.write_all(text.as_bytes())
    })
    .map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// Writes the CSV: one writer replaces the file (as mqldt truncates it);
/// several append to it (as mqldt does with --qm), the header only when the
/// file is new or empty.
pub fn write_csv(path: &Path, report: &Report, append: bool) -> Result<(), String> {
    if !append {
        return pipeline::write_output(
            &OutputTarget::File(path.to_path_buf()),
            &LogdiskCsv { header: true },
            report,
        );
    }
    crate::rt::outfile::write_in_place(path, true, 0o600, &mut |out, empty| {
        LogdiskCsv { header: empty }.write(report, out)
    })
    .map_err(|e| format!("could not write {}: {e}", path.display()))
}
