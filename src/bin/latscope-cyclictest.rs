//! `latscope-cyclictest`: the lean cyclictest drop-in, which the package's
//! `cyclictest` compatibility link runs. It links only what a cyclictest run
//! needs (rt-tests' options, the measuring threads, cyclictest's outputs),
//! so that its memory stands where cyclictest's does: the full `latscope`
//! binary makes about 2.5 MiB of its own code resident just starting up
//! (docs/benchmarks.md part 7). The output is the same code's, byte for
//! byte, as `latscope cyclictest`'s.
//!
//! What needs the rest of latscope (`--latscope-json FILE`, `--on-threshold`,
//! `--on-end`: the pipeline,
//! the machine facts, the Report) and arguments that are not UTF-8 (whose
//! answer is the full binary's) are handed to the full binary by `exec`,
//! with the same arguments: the `latscope` next to this one, or the one in
//! the `bin` directory of the same prefix (`/usr/lib/latscope/` ->
//! `/usr/bin/latscope`).

use latscope::commands::cyclictest_cmd::{self, Start};
use latscope::entry::exit_code;
use latscope::pipeline::EXIT_RUNTIME;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

fn main() {
    latscope::entry::start(run)
}

/// The one libm function this binary calls (hdrhistogram sizes its buckets
/// with it), from the `libm` crate (musl's log2, correctly rounded to within
/// 1 ulp) instead of glibc's libm.so.6: defined here, it is resolved in the
/// binary and libm.so.6 is not loaded at all. Loading it would cost more
/// than all of this binary's own code: its IFUNC resolvers, run at start-up,
/// make about 340 KiB of it resident (docs/benchmarks.md part 7).
#[unsafe(no_mangle)]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

fn run() -> i32 {
    let raw: Vec<OsString> = std::env::args_os().collect();
    let Some(args) = raw
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
    else {
        return run_full_binary(&raw);
    };
    match cyclictest_cmd::start(&args) {
        Ok(Start::Answered(code)) => exit_code(Ok(code)),
        Ok(Start::Run { settings, .. }) if settings.needs_pipeline() => run_full_binary(&raw),
        Ok(Start::Run { settings, online }) => {
            exit_code(cyclictest_cmd::run_classic(&settings, &online))
        }
        Err(e) => exit_code(Err(e)),
    }
}

/// The full `latscope` binary of the same installation.
fn full_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("latscope"), dir.join("../../bin/latscope")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Replaces this process with the full binary started as `cyclictest` with
/// the same arguments (argv[0] as typed when that is a `cyclictest` name, so
/// its messages name the program as cyclictest's do); returns only if it
/// could not be started.
fn run_full_binary(raw: &[OsString]) -> i32 {
    let Some(full) = full_binary() else {
        let _ = writeln!(
            std::io::stderr(),
            "latscope: error: this needs the full latscope binary, which is not installed next to this one (nor in ../../bin): reinstall latscope, or run `latscope cyclictest ARGS`"
        );
        return EXIT_RUNTIME;
    };
    let typed = raw.first().cloned().unwrap_or_default();
    let arg0 = if Path::new(&typed)
        .file_name()
        .is_some_and(|n| n == latscope::cli::CYCLICTEST_COMPAT)
    {
        typed
    } else {
        OsString::from(latscope::cli::CYCLICTEST_COMPAT)
    };
    let e = std::process::Command::new(&full)
        .arg0(arg0)
        .args(raw.iter().skip(1))
        .exec();
    let _ = writeln!(
        std::io::stderr(),
        "latscope: error: could not run {}: {e}",
        full.display()
    );
    EXIT_RUNTIME
}

#[cfg(test)]
mod tests {
    use super::log2;

    #[test]
    fn log2_is_exact_where_hdrhistogram_needs_it() {
        // Powers of two exactly (floor/ceil of these size the buckets).
        for k in -60..=60 {
            assert_eq!(log2(2f64.powi(k)), f64::from(k), "2^{k}");
        }
        // hdrhistogram's sub-bucket magnitude for 1..=5 significant figures:
        // ceil(log2(2 * 10^d)).
        let magnitudes: Vec<f64> = (1..=5).map(|d| log2(2.0 * 10f64.powi(d)).ceil()).collect();
        assert_eq!(magnitudes, [5.0, 8.0, 11.0, 15.0, 18.0]);
        assert_eq!(log2(2000.0), 10.965_784_284_662_087);
        assert_eq!(log2(3.0), 1.584_962_500_721_156);
        assert!(log2(-1.0).is_nan());
        assert_eq!(log2(0.0), f64::NEG_INFINITY);
        assert_eq!(log2(f64::INFINITY), f64::INFINITY);
    }
}
