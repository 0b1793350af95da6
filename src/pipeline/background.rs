//! What runs beside every test: the `--load` generators and the kernel-log
//! follower. `Preparation::apply` starts both before the first sample;
//! `Preparation::finish` stops them after the last one, before the results
//! are shown, and records them in the report. Dropped on an early return or
//! a panic, they stop too.

use crate::kernel_log::Follower;
use crate::load::LoadSpec;
use crate::load::process::Loads;
use crate::report::Report;

pub struct Background {
    loads: Loads,
    kernel_log: Follower,
}

impl Background {
    /// Follows the kernel log from now on, then starts the loads on `cpus`
    /// and lets them settle. A load that cannot start is a run-time error.
    pub fn start(loads: &[LoadSpec], cpus: &[usize]) -> Result<Background, String> {
        let kernel_log = Follower::start();
        let loads = Loads::start(loads, cpus)?;
        Ok(Background { loads, kernel_log })
    }

    /// When the run's clock started: kernel messages' `time_s` and the tests'
    /// `started_s` count from here.
    pub fn origin(&self) -> std::time::SystemTime {
        self.kernel_log.origin()
    }

    /// Records what runs and what the kernel said so far (the run goes on).
    pub fn record_into(&self, report: &mut Report) {
        report.loads = self.loads.records();
        let kernel_log = self.kernel_log.snapshot();
        add_warnings(report, kernel_log.summary_lines());
        report.kernel_log = kernel_log;
    }

    /// Stops the loads and the follower and records both, with a warning per
    /// load that ended early and per kind of kernel message.
    pub fn finish_into(&mut self, report: &mut Report) {
        let (loads, load_warnings) = self.loads.stop();
        let kernel_log = self.kernel_log.stop();
        add_warnings(report, load_warnings);
        add_warnings(report, kernel_log.summary_lines());
        report.loads = loads;
        report.kernel_log = kernel_log;
    }
}

fn add_warnings(report: &mut Report, lines: Vec<String>) {
    for line in lines {
        if !report.warnings.contains(&line) {
            report.warnings.push(line);
        }
    }
}
