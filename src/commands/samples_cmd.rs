//! `latscope samples FILE [--csv OUT|-]`: a `--samples` file back as CSV,
//! one row per sample (`series,test,label,cpu,t_ns,latency_ns`; docs/samples.md).
//! Measures nothing. A file that is not a samples file is bad input (exit 2);
//! a cut or damaged one is written as far as it reads, then said (exit 1).

use crate::cli::SamplesArgs;
use crate::pipeline::{CommandError, EXIT_OK, write_with};
use crate::samples::format::{Item, ReadError, Reader, SeriesCounts, SeriesInfo};
use crate::settings::{UsageError, check_output_path};
use crate::units::shown;
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::path::Path;

/// How far the reading got.
#[derive(Default)]
struct Read {
    rows: u64,
    per_series: HashMap<u32, u64>,
    trailer: Option<Vec<SeriesCounts>>,
    truncated: bool,
    damaged: Option<String>,
}

pub fn run(args: &SamplesArgs) -> Result<i32, CommandError> {
    let out = args.csv.as_deref().unwrap_or(Path::new("-"));
    let target = check_output_path("--csv", out)?;
    let shown_input = shown(&args.input.to_string_lossy());
    if crate::rt::outfile::same_file_destination(&args.input, out) {
        return Err(UsageError(format!(
            "--csv {shown_input} is the samples file itself: the CSV would replace it; give another file"
        ))
        .into());
    }
    let file = std::fs::File::open(&args.input).map_err(|e| {
        UsageError(format!(
            "{shown_input}: {}; give a file written with --samples",
            crate::rt::os_error_text(&e)
        ))
    })?;
    let mut reader = match Reader::open(BufReader::with_capacity(1 << 20, file)) {
        Ok(r) => r,
        Err(e @ (ReadError::NotSamples | ReadError::Version(_))) => {
            return Err(UsageError(format!("{shown_input} {e}")).into());
        }
        // Its first bytes cannot be read (a directory): bad input as a file
        // that cannot be opened, and as `report DIR` and `compare DIR`.
        Err(ReadError::Io(e)) => {
            return Err(UsageError(format!(
                "{shown_input}: {}; give a file written with --samples",
                crate::rt::os_error_text(&e)
            ))
            .into());
        }
        Err(e) => return Err(CommandError::Runtime(format!("{shown_input}: {e}"))),
    };
    let mut read = Read::default();
    write_with(&target, &mut |out| {
        read = Read::default();
        write_csv(&mut reader, out, &mut read)
    })
    .map_err(CommandError::Runtime)?;
    if let Some(why) = read.damaged {
        return Err(CommandError::Runtime(format!(
            "{shown_input} {why}; the {} samples before it were written",
            read.rows
        )));
    }
    if read.truncated {
        return Err(CommandError::Runtime(format!(
            "{shown_input} is truncated (no trailer: the run was killed, or the copy is short); the {} samples it holds were written",
            read.rows
        )));
    }
    if let Some(trailer) = &read.trailer
        && let Some(c) = trailer
            .iter()
            .find(|c| read.per_series.get(&c.id).copied().unwrap_or(0) != c.written)
    {
        return Err(CommandError::Runtime(format!(
            "{shown_input} is damaged: series {} should hold {} samples, it holds {}",
            c.id,
            c.written,
            read.per_series.get(&c.id).copied().unwrap_or(0)
        )));
    }
    Ok(EXIT_OK)
}

/// Every sample of `reader` as a CSV row into `out`; a damaged record ends
/// the rows (said in `read`), not the output.
fn write_csv(
    reader: &mut Reader<impl std::io::Read>,
    out: &mut dyn Write,
    read: &mut Read,
) -> std::io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(["series", "test", "label", "cpu", "t_ns", "latency_ns"])?;
    let mut series: HashMap<u32, SeriesInfo> = HashMap::new();
    loop {
        match reader.next_item() {
            Ok(Some(Item::Series(s))) => {
                series.insert(s.id, s);
            }
            Ok(Some(Item::Samples { id, samples })) => {
                let (test, label, cpu) = series.get(&id).map_or_else(
                    || (String::new(), String::new(), String::new()),
                    |s| {
                        // Control characters escaped, on a terminal and
                        // in a file alike (docs/samples.md): latscope's own
                        // names have none, a crafted file's would drive the
                        // terminal of whoever reads the CSV.
                        (
                            crate::units::escape_line(&s.test_name),
                            crate::units::escape_line(&s.label),
                            s.cpu.map_or(String::new(), |c| c.to_string()),
                        )
                    },
                );
                let id_text = id.to_string();
                for (t, latency) in &samples {
                    csv.write_record([
                        id_text.as_str(),
                        &test,
                        &label,
                        &cpu,
                        &t.to_string(),
                        &latency.to_string(),
                    ])?;
                }
                read.rows += samples.len() as u64;
                *read.per_series.entry(id).or_default() += samples.len() as u64;
            }
            Ok(Some(Item::Trailer(counts))) => read.trailer = Some(counts),
            Ok(None) => {
                read.truncated = reader.truncated();
                break;
            }
            Err(ReadError::Io(e)) => return Err(e),
            Err(e) => {
                read.damaged = Some(e.to_string());
                break;
            }
        }
    }
    csv.flush()
}
