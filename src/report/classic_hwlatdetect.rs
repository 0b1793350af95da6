//! rt-tests hwlatdetect's text (2.10's hwlatdetect.py format strings): the
//! header, `test finished`, the summary, the SMI lines and one line per
//! sample, `ts: <s.ns>, inner:<us>, outer:<us>, cpu:<n>, count:<n>`. Also
//! the hwlat tracer's trace line read by key (the tracer path hwlatdetect
//! drives; positional splitting is what broke its parser in 2026).

use super::HwlatSample;
use std::io::Write;

/// What the header says.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub duration_s: u64,
    /// The `detector:` word: the tracer's `tracer`, latscope's tier here.
    pub detector: &'a str,
    pub cpu_list: Option<&'a str>,
    pub threshold_us: u64,
    pub window_us: u64,
    pub width_us: u64,
    pub report: Option<&'a str>,
}

/// Python's `str(None)` for an option not given.
fn or_none(v: Option<&str>) -> &str {
    v.unwrap_or("None")
}

/// The header lines up to `Starting test` (hwlatdetect's `info` lines).
pub fn header_lines(h: &Header) -> Vec<String> {
    vec![
        format!("hwlatdetect:  test duration {} seconds", h.duration_s),
        format!("   detector: {}", h.detector),
        "   parameters:".to_string(),
        format!("        CPU list:          {}", or_none(h.cpu_list)),
        format!("        Latency threshold: {}us", h.threshold_us),
        format!("        Sample window:      {}us", h.window_us),
        format!("        Sample width:      {}us", h.width_us),
        format!(
            "     Non-sampling period:  {}us",
            h.window_us as i64 - h.width_us as i64
        ),
        format!("        Output File:       {}", or_none(h.report)),
        String::new(),
        "Starting test".to_string(),
    ]
}

/// One sample as hwlatdetect prints and saves it (inner/outer in us).
pub fn sample_line(s: &HwlatSample) -> String {
    format!(
        "ts: {}.{:09}, inner:{}, outer:{}, cpu:{}, count:{}",
        s.realtime_ns / 1_000_000_000,
        s.realtime_ns % 1_000_000_000,
        s.inner_ns / 1000,
        s.outer_ns / 1000,
        s.cpu,
        s.count
    )
}

/// The largest inner or outer of all samples, us (0: none).
pub fn max_latency_us(samples: &[HwlatSample]) -> u64 {
    samples
        .iter()
        .map(|s| s.inner_ns.max(s.outer_ns) / 1000)
        .max()
        .unwrap_or(0)
}

/// The summary's `info` lines after `test finished`: max, samples,
/// exceeding, and the MTBF (run seconds per gap above the threshold).
pub fn summary_lines(samples: &[HwlatSample], measured_s: f64) -> Vec<String> {
    let max = max_latency_us(samples);
    let exceeding: u64 = samples.iter().map(|s| s.count).sum();
    let mut lines = vec![
        "test finished".to_string(),
        if max == 0 {
            "Max Latency: Below threshold".to_string()
        } else {
            format!("Max Latency: {max}us")
        },
        format!("Samples recorded: {}", samples.len()),
        format!("Samples exceeding threshold: {exceeding}"),
    ];
    if exceeding > 0 {
        lines.push(format!(
            "MTBF: {:.3} seconds",
            measured_s / exceeding as f64
        ));
    }
    lines
}

/// The SMI lines: one `print` per CPU that had SMIs, then the `info` total.
pub fn smi_lines(per_cpu: &[(usize, u64)]) -> (Vec<String>, String) {
    let each = per_cpu
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(cpu, n)| format!("{n} SMIs occured on cpu {cpu}"))
        .collect();
    let total: u64 = per_cpu.iter().map(|(_, n)| n).sum();
    (each, format!("SMIs during run: {total}"))
}

/// `report saved to FILE (N samples)`.
pub fn saved_line(path: &str, samples: usize) -> String {
    format!("report saved to {path} ({samples} samples)")
}

/// hwlatdetect's three ways to print a line to standard output: `print`
/// (always), `info` (unless --quiet) and `debug` (with --debug, unless --quiet).
pub struct Output {
    pub quiet: bool,
    pub debug: bool,
}

impl Output {
    pub fn print(&mut self, line: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }

    pub fn info(&mut self, line: &str) {
        if !self.quiet {
            self.print(line);
        }
    }

    pub fn debug(&mut self, line: &str) {
        if self.debug && !self.quiet {
            self.print(line);
        }
    }
}

/// A hwlat tracer line (`... [001] d... 123.4: #1 inner/outer(us): 12/0
/// ts:1700000000.123456789 count:3`) as a sample, read by its keys.
pub fn parse_trace_line(line: &str) -> Option<HwlatSample> {
    let cpu = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    let after = line.split_once("inner/outer(us):")?.1;
    let mut words = after.split_whitespace();
    let (inner, outer) = words.next()?.split_once('/')?;
    let mut rest: Vec<&str> = words.collect();
    // "12/ 0": the kernel pads outer to 5 columns after the slash.
    let outer: u64 = if outer.is_empty() {
        (!rest.is_empty()).then(|| rest.remove(0))?.parse().ok()?
    } else {
        outer.parse().ok()?
    };
    let key = |k: &str| rest.iter().find_map(|w| w.strip_prefix(k));
    let (secs, frac) = key("ts:")?.split_once('.')?;
    let ns = secs.parse::<u64>().ok()? * 1_000_000_000
        + format!("{frac:0<9}")[..9].parse::<u64>().ok()?;
    Some(HwlatSample {
        realtime_ns: ns,
        inner_ns: inner.parse::<u64>().ok()? * 1000,
        outer_ns: outer * 1000,
        count: key("count:").and_then(|c| c.parse().ok()).unwrap_or(1),
        sum_ns: 0,
        cpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        realtime_ns: u64,
        inner_us: u64,
        outer_us: u64,
        cpu: usize,
        count: u64,
    ) -> HwlatSample {
        HwlatSample {
            realtime_ns,
            inner_ns: inner_us * 1000 + 999,
            outer_ns: outer_us * 1000,
            count,
            sum_ns: 0,
            cpu,
        }
    }

    /// The whole text of a run with two samples, against the golden made
    /// from hwlatdetect.py's format strings.
    #[test]
    fn a_run_with_samples_matches_the_golden() {
        let samples = [
            sample(1_764_374_400_000_001_234, 12, 0, 1, 1),
            sample(1_764_374_401_500_000_000, 3, 25, 0, 2),
        ];
        let header = Header {
            duration_s: 15,
            detector: "latscope-unprivileged",
            cpu_list: Some("0-1"),
            threshold_us: 10,
            window_us: 10_000_000,
            width_us: 950_000,
            report: Some("/tmp/r.txt"),
        };
        let mut text = header_lines(&header);
        text.extend(summary_lines(&samples, 15.0));
        let (each, total) = smi_lines(&[(0, 0), (1, 2)]);
        text.extend(each);
        text.push(total);
        text.push(saved_line("/tmp/r.txt", samples.len()));
        text.extend(samples.iter().map(sample_line));
        let text = text.join("\n") + "\n";
        assert_eq!(
            text,
            include_str!("../../tests/golden/hwlatdetect/samples.out")
        );
    }

    #[test]
    fn a_quiet_machine_is_below_threshold_and_has_no_mtbf() {
        let header = Header {
            duration_s: 120,
            detector: "latscope-unprivileged",
            cpu_list: None,
            threshold_us: 10,
            window_us: 1_000_000,
            width_us: 500_000,
            report: None,
        };
        let mut text = header_lines(&header);
        text.extend(summary_lines(&[], 120.0));
        assert_eq!(
            text.join("\n") + "\n",
            include_str!("../../tests/golden/hwlatdetect/below_threshold.out")
        );
    }

    /// The tracer path: lines as the kernel's hwlat tracer writes them
    /// (with and without count:, with the nmi fields) become samples.
    #[test]
    fn trace_lines_are_read_by_key() {
        let fixture = include_str!("../../tests/golden/hwlatdetect/trace_pipe.txt");
        let samples: Vec<HwlatSample> = fixture.lines().filter_map(parse_trace_line).collect();
        assert_eq!(samples.len(), 3);
        assert_eq!(
            sample_line(&samples[0]),
            "ts: 1764374400.123456789, inner:12, outer:0, cpu:1, count:1"
        );
        assert_eq!(
            sample_line(&samples[1]),
            "ts: 1764374401.000000002, inner:7, outer:31, cpu:0, count:4"
        );
        assert_eq!(
            (samples[2].inner_ns, samples[2].outer_ns, samples[2].count),
            (15_000, 2_000, 1)
        );
        assert_eq!(parse_trace_line("# tracer: hwlat"), None);
    }
}
