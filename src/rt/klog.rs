//! klog (k8s.io/klog v1), as the cnf-tests runners log: each line is
//! `Lmmdd hh:mm:ss.uuuuuu PID FILE:LINE] MESSAGE` (L the severity: I, W, E,
//! F; the time local; the pid right-aligned in 7 columns), and where it goes
//! follows klog's flags:
//! - `-logtostderr` (klog's default): standard error only;
//! - else into `-log_file` (opened at the first line, created or appended
//!   to, never truncated: klog opens it `O_APPEND|O_CREAT`, mode 0666 less
//!   the umask, and writes its 4-line header first unless
//!   `-skip_log_headers`), or without one into klog's per-severity files in
//!   `-log_dir` (default the temporary directory); and also on standard
//!   error with `-alsologtostderr`, or for a severity at or above
//!   `-stderrthreshold` (ERROR by default).
//!
//! A log file that cannot be opened ends the process as klog does: the line
//! on standard error, then `log: exiting because of error: ...`, exit 2.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// klog's severities, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info = 0,
    Warning = 1,
    Error = 2,
    Fatal = 3,
}

impl Severity {
    const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Error,
        Severity::Fatal,
    ];

    fn letter(self) -> char {
        ['I', 'W', 'E', 'F'][self as usize]
    }

    fn name(self) -> &'static str {
        ["INFO", "WARNING", "ERROR", "FATAL"][self as usize]
    }

    /// klog's `-stderrthreshold` value: a name (any case) or a number.
    pub fn from_flag(text: &str) -> Option<Severity> {
        Severity::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(text))
            .or_else(|| match text.parse::<i64>().ok()? {
                n if n <= 0 => Some(Severity::Info),
                1 => Some(Severity::Warning),
                2 => Some(Severity::Error),
                _ => Some(Severity::Fatal),
            })
    }
}

/// The local time of a line, as klog prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micros: u32,
}

impl Stamp {
    /// The date and time to the second: `2026/11/29 09:05:07` as klog's
    /// header writes it, `20261129-090507` as its file names.
    fn date_time(&self, date: &str, between: &str, time: &str) -> String {
        format!(
            "{:04}{date}{:02}{date}{:02}{between}{:02}{time}{:02}{time}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// Now, in the local time zone.
    pub fn now() -> Stamp {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid pointers; localtime_r writes only into `tm`.
        let tm = unsafe {
            libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
            let mut tm: libc::tm = std::mem::zeroed();
            libc::localtime_r(&ts.tv_sec, &mut tm);
            tm
        };
        Stamp {
            year: tm.tm_year + 1900,
            month: (tm.tm_mon + 1) as u32,
            day: tm.tm_mday as u32,
            hour: tm.tm_hour as u32,
            minute: tm.tm_min as u32,
            second: tm.tm_sec as u32,
            micros: (ts.tv_nsec / 1000) as u32,
        }
    }
}

/// One klog line: header, message, and a newline unless it ends with one.
pub fn line(
    severity: Severity,
    at: Stamp,
    pid: u32,
    place: (&str, u32),
    message: &str,
    skip_headers: bool,
) -> String {
    let mut out = if skip_headers {
        String::new()
    } else {
        format!(
            "{}{:02}{:02} {:02}:{:02}:{:02}.{:06} {:>7} {}:{}] ",
            severity.letter(),
            at.month,
            at.day,
            at.hour,
            at.minute,
            at.second,
            at.micros,
            pid,
            place.0,
            place.1
        )
    };
    out.push_str(message);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The header klog writes at the top of a log file it opens.
pub fn file_header(at: Stamp, host: &str) -> String {
    format!(
        "Log file created at: {}\n\
         Running on machine: {host}\n\
         Binary: latscope {} for {}/{}\n\
         Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n",
        at.date_time("/", " ", ":"),
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Where klog's flags send the lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KlogConfig {
    pub to_stderr: bool,
    pub also_to_stderr: bool,
    pub stderr_threshold: Severity,
    pub log_file: Option<PathBuf>,
    pub log_dir: Option<PathBuf>,
    pub skip_headers: bool,
    pub skip_log_headers: bool,
    /// The program name klog's per-severity file names start with.
    pub program: String,
}

/// A log file klog could not open: the process ends with exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFileError(pub String);

/// The logger: files opened at their first line, as klog opens them.
pub struct Klog {
    config: KlogConfig,
    pid: u32,
    /// The open file of each severity (one shared file with `-log_file`).
    files: [Option<File>; 4],
}

impl Klog {
    pub fn new(config: KlogConfig) -> Klog {
        Klog {
            config,
            pid: std::process::id(),
            files: Default::default(),
        }
    }

    /// Logs `message` at `severity` from `place` (the Go source file and
    /// line of the runner's call).
    pub fn log(
        &mut self,
        severity: Severity,
        place: (&str, u32),
        message: &str,
    ) -> Result<(), LogFileError> {
        let text = line(
            severity,
            Stamp::now(),
            self.pid,
            place,
            message,
            self.config.skip_headers,
        );
        if self.config.to_stderr {
            let _ = std::io::stderr().write_all(text.as_bytes());
            return Ok(());
        }
        if self.config.also_to_stderr || severity >= self.config.stderr_threshold {
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
        if self.config.log_file.is_some() {
            // One file for every severity: written once.
            return self.write_to(Severity::Info, &text);
        }
        // Per-severity files: a line goes to its own and every lower one.
        for s in Severity::ALL.into_iter().rev().filter(|&s| s <= severity) {
            self.write_to(s, &text)?;
        }
        Ok(())
    }

    fn write_to(&mut self, severity: Severity, text: &str) -> Result<(), LogFileError> {
        if self.files[severity as usize].is_none() {
            match self.open(severity) {
                Ok(file) => self.files[severity as usize] = Some(file),
                Err(e) => {
                    let _ = std::io::stderr().write_all(text.as_bytes());
                    return Err(LogFileError(e));
                }
            }
        }
        if let Some(file) = &mut self.files[severity as usize] {
            let _ = file.write_all(text.as_bytes());
        }
        Ok(())
    }

    /// Opens the file of `severity` as klog's `create` does.
    fn open(&self, severity: Severity) -> Result<File, String> {
        let at = Stamp::now();
        let host = host_name();
        let path = match &self.config.log_file {
            Some(path) => path.clone(),
            None => self
                .config
                .log_dir
                .clone()
                .unwrap_or_else(std::env::temp_dir)
                .join(format!(
                    "{}.{host}.{}.log.{}.{}.{}",
                    self.config.program,
                    user_name(),
                    severity.name(),
                    at.date_time("", "-", ""),
                    self.pid
                )),
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o666)
            .open(&path)
            .map_err(|e| {
                let what = if self.config.log_file.is_some() {
                    "unable to create log"
                } else {
                    "cannot create log"
                };
                format!("log: {what}: open {}: {}", path.display(), go_errno(&e))
            })?;
        if self.config.log_file.is_none()
            && let (Some(dir), Some(name)) = (path.parent(), path.file_name())
        {
            // klog's `PROGRAM.SEVERITY` link to the newest file.
            let link = dir.join(format!("{}.{}", self.config.program, severity.name()));
            let _ = std::fs::remove_file(&link);
            let _ = std::os::unix::fs::symlink(name, &link);
        }
        if !self.config.skip_log_headers {
            let _ = file.write_all(file_header(at, &host).as_bytes());
        }
        Ok(file)
    }
}

/// An OS error as Go prints it (`no such file or directory`).
fn go_errno(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
}

/// The host name up to its first dot, as klog shortens it.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    match name.split('.').next() {
        Some(short) if !short.is_empty() => short.to_string(),
        _ => "unknownhost".to_string(),
    }
}

/// The user's name for klog's file names (`unknownuser` when not known).
fn user_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "unknownuser".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Stamp = Stamp {
        year: 2026,
        month: 11,
        day: 29,
        hour: 9,
        minute: 5,
        second: 7,
        micros: 42,
    };

    #[test]
    fn a_line_is_klogs() {
        assert_eq!(
            line(
                Severity::Info,
                AT,
                1,
                ("main.go", 35),
                "oslat main thread cpu: 4",
                false
            ),
            "I1129 09:05:07.000042       1 main.go:35] oslat main thread cpu: 4\n"
        );
        assert_eq!(
            line(Severity::Fatal, AT, 1234567, ("node.go", 9), "x\n", false),
            "F1129 09:05:07.000042 1234567 node.go:9] x\n"
        );
        assert_eq!(
            line(Severity::Warning, AT, 7, ("main.go", 1), "bare", true),
            "bare\n"
        );
    }

    #[test]
    fn the_file_header() {
        let header = file_header(AT, "node1");
        let lines: Vec<&str> = header.lines().collect();
        assert_eq!(lines[0], "Log file created at: 2026/11/29 09:05:07");
        assert_eq!(lines[1], "Running on machine: node1");
        assert!(lines[2].starts_with("Binary: latscope "));
        assert_eq!(
            lines[3],
            "Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg"
        );
    }

    #[test]
    fn stderr_threshold_values() {
        assert_eq!(Severity::from_flag("error"), Some(Severity::Error));
        assert_eq!(Severity::from_flag("FATAL"), Some(Severity::Fatal));
        assert_eq!(Severity::from_flag("0"), Some(Severity::Info));
        assert_eq!(Severity::from_flag("1"), Some(Severity::Warning));
        assert_eq!(Severity::from_flag("7"), Some(Severity::Fatal));
        assert_eq!(Severity::from_flag("-3"), Some(Severity::Info));
        assert_eq!(Severity::from_flag("loud"), None);
    }

    #[test]
    fn a_log_file_is_appended_to_with_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.log");
        std::fs::write(&path, "kept\n").unwrap();
        let config = KlogConfig {
            to_stderr: false,
            also_to_stderr: false,
            stderr_threshold: Severity::Fatal,
            log_file: Some(path.clone()),
            log_dir: None,
            skip_headers: false,
            skip_log_headers: false,
            program: "oslat-runner".into(),
        };
        let mut klog = Klog::new(config.clone());
        klog.log(Severity::Info, ("main.go", 1), "one").unwrap();
        klog.log(Severity::Info, ("main.go", 2), "two").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kept");
        assert!(lines[1].starts_with("Log file created at: "));
        assert!(lines[5].ends_with(" main.go:1] one"), "{text}");
        assert!(lines[6].ends_with(" main.go:2] two"), "{text}");
        assert_eq!(lines.len(), 7);
        // A directory that does not exist: klog's error.
        let mut klog = Klog::new(KlogConfig {
            log_file: Some(dir.path().join("no/such.log")),
            ..config
        });
        let e = klog.log(Severity::Info, ("main.go", 1), "x").unwrap_err();
        assert!(
            e.0.starts_with("log: unable to create log: open ")
                && e.0.ends_with("no/such.log: no such file or directory"),
            "{e:?}"
        );
    }

    #[test]
    fn per_severity_files_in_the_log_dir() {
        let dir = tempfile::tempdir().unwrap();
        let mut klog = Klog::new(KlogConfig {
            to_stderr: false,
            also_to_stderr: false,
            stderr_threshold: Severity::Fatal,
            log_file: None,
            log_dir: Some(dir.path().to_path_buf()),
            skip_headers: false,
            skip_log_headers: true,
            program: "oslat-runner".into(),
        });
        klog.log(Severity::Info, ("main.go", 1), "info").unwrap();
        klog.log(Severity::Error, ("main.go", 2), "error").unwrap();
        let read = |s: &str| std::fs::read_to_string(dir.path().join(format!("oslat-runner.{s}")));
        assert_eq!(read("INFO").unwrap().lines().count(), 2);
        assert_eq!(read("WARNING").unwrap().lines().count(), 1);
        assert_eq!(read("ERROR").unwrap().lines().count(), 1);
        assert!(read("FATAL").is_err());
    }
}
