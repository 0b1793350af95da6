//! `latscope report`: reads JSON reports, writes one self-contained HTML page
//! (and with `--svg` each plot as a file). Measures nothing.

use crate::cli::ReportArgs;
use crate::pipeline::{CommandError, EXIT_OK, write_with};
use crate::report::html::{self, Run};
use crate::settings::OutputTarget;
use crate::settings::report::ReportSettings;

pub fn run(args: &ReportArgs) -> Result<i32, CommandError> {
    let settings = ReportSettings::from_args(args)?;
    let runs: Vec<Run> = settings
        .runs
        .iter()
        .map(|r| Run {
            source: r.source.clone(),
            report: &r.report,
        })
        .collect();
    let rendered = html::render(&runs).map_err(CommandError::Runtime)?;
    if let Some(dir) = &settings.svg_dir {
        if !dir.is_dir() {
            std::fs::create_dir(dir).map_err(|e| {
                CommandError::Runtime(format!("could not create {}: {e}", dir.display()))
            })?;
        }
        for plot in &rendered.plots {
            let target = OutputTarget::File(dir.join(format!("{}.svg", plot.name)));
            write_with(&target, &mut |out| {
                out.write_all(br#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
                out.write_all(b"\n")?;
                out.write_all(plot.svg.as_bytes())?;
                out.write_all(b"\n")
            })
            .map_err(CommandError::Runtime)?;
        }
    }
    write_with(&settings.output, &mut |out| {
        out.write_all(rendered.html.as_bytes())
    })
    .map_err(CommandError::Runtime)?;
    if let OutputTarget::File(path) = &settings.output {
        // Standard error: standard output stays free for `-o -`.
        let svg = settings
            .svg_dir
            .as_ref()
            .map_or(String::new(), |d| format!(", SVG files in {}", d.display()));
        eprintln!(
            "latscope: wrote {} ({} KiB, {} plots{svg})",
            path.display(),
            rendered.html.len().div_ceil(1024),
            rendered.plots.len()
        );
    }
    Ok(EXIT_OK)
}
