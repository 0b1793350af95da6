//! `latscope doctor`: the doctor's checks of this machine as a table (and
//! JSON); exit 3 when a check is bad. Reads only: it changes nothing.

use crate::cli::DoctorArgs;
use crate::doctor::bpf_cost::BpfCost;
use crate::doctor::table::{render, summary_line};
use crate::pipeline::{CommandError, EXIT_LIMIT, EXIT_OK, write_with};
use crate::report::SysInfo;
use crate::report::Tool;
use crate::report::{Check, Summary};
use crate::settings::{OutputTarget, check_json_path};
use crate::units::rfc3339;
use serde::Serialize;
use std::io::Write;

/// Identifies the JSON document; bump the version on any incompatible change.
pub const SCHEMA_NAME: &str = "latscope-doctor";
pub const SCHEMA_VERSION: u32 = 1;
/// `doctor --bpf --json` (version `SCHEMA_VERSION` too).
pub const BPF_SCHEMA_NAME: &str = "latscope-doctor-bpf";

/// `latscope doctor --json`: the machine, every check, the counts, the exit code.
#[derive(Debug, Serialize)]
pub struct DoctorDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub tool: Tool,
    /// RFC 3339, UTC.
    pub time: String,
    /// The machine's facts (a report's `sysinfo`, without its `checks`).
    pub sysinfo: SysInfo,
    pub checks: &'a [Check],
    pub summary: Summary,
    pub exit_code: i32,
}

pub fn exit_code_of(summary: Summary) -> i32 {
    if summary.bad > 0 { EXIT_LIMIT } else { EXIT_OK }
}

/// `latscope doctor --bpf --json`: what one program run costs here.
#[derive(Debug, Serialize)]
pub struct BpfCostDocument {
    pub schema: &'static str,
    pub schema_version: u32,
    pub tool: Tool,
    pub time: String,
    pub cost: BpfCost,
}

pub fn run(args: &DoctorArgs) -> Result<i32, CommandError> {
    let json = args.json.as_deref().map(check_json_path).transpose()?;
    if args.bpf {
        return run_bpf(json.as_ref());
    }
    let mut sysinfo = SysInfo::collect();
    let checks = std::mem::take(&mut sysinfo.checks);
    let summary = Summary::of(&checks);
    let exit_code = exit_code_of(summary);
    let table = render(&sysinfo, &checks, args.explain, args.quiet);
    match &json {
        // Standard output is the JSON's: the people's part goes to standard error.
        Some(OutputTarget::Stdout) => eprint!("{}", summary_line(summary)),
        _ => {
            let mut out = crate::rt::stdio::out();
            let _ = out.write_all(table.as_bytes()).and_then(|_| out.flush());
        }
    }
    if let Some(target) = &json {
        let document = DoctorDocument {
            schema: SCHEMA_NAME,
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            time: rfc3339(std::time::SystemTime::now()),
            sysinfo,
            checks: &checks,
            summary,
            exit_code,
        };
        write_with(target, &mut |out| {
            serde_json::to_writer_pretty(&mut *out, &document)?;
            out.write_all(b"\n")
        })
        .map_err(CommandError::Runtime)?;
    }
    Ok(exit_code)
}

/// `doctor --bpf`: the measured cost, then every program's listing (to
/// standard error when standard output is the JSON's).
fn run_bpf(json: Option<&OutputTarget>) -> Result<i32, CommandError> {
    let cost = crate::doctor::bpf_cost::measure();
    let text = format!(
        "{}\n{}",
        crate::doctor::bpf_cost::text(&cost),
        crate::doctor::programs::listings_text()
    );
    match json {
        Some(OutputTarget::Stdout) => eprint!("{text}"),
        _ => write_with(&OutputTarget::Stdout, &mut |out| {
            out.write_all(text.as_bytes())
        })
        .map_err(CommandError::Runtime)?,
    }
    if let Some(target) = json {
        let document = BpfCostDocument {
            schema: BPF_SCHEMA_NAME,
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            time: rfc3339(std::time::SystemTime::now()),
            cost,
        };
        write_with(target, &mut |out| {
            serde_json::to_writer_pretty(&mut *out, &document)?;
            out.write_all(b"\n")
        })
        .map_err(CommandError::Runtime)?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_check_is_exit_3() {
        let summary = |bad| Summary {
            ok: 3,
            warn: 1,
            bad,
        };
        assert_eq!(exit_code_of(summary(1)), EXIT_LIMIT);
        assert_eq!(exit_code_of(summary(0)), EXIT_OK);
    }
}
