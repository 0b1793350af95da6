//! `latscope report` through the real binary: HTML pages made from real short
//! runs, shown by headless Chromium (no console errors, one SVG per plot),
//! the SVG files, and every bad input refused with one line and exit 2.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Real runs to make pages of: a futex test always, a timer test as root
/// (the timer needs SCHED_FIFO).
struct Runs {
    dir: tempfile::TempDir,
    files: Vec<PathBuf>,
}

fn real_runs(with_timer: bool) -> Runs {
    let dir = tempfile::tempdir().expect("temp dir");
    // `latscope LINE --json DIR/NAME`, which must succeed.
    let json_run = |line: &str, name: &str| {
        let file = dir.path().join(name);
        let out = run(latscope(30)
            .args(args(line))
            .arg("--json")
            .arg(&file)
            .args(mlock_args()));
        assert_code(&out, 0);
        file
    };
    let mut files = vec![json_run("futex -l 300 -i 100 -q", "A.json")];
    if with_timer && !skip_without_realtime("the timer run of report_html") {
        files.push(json_run("timer -T 1 -p 1000", "B.json"));
    }
    Runs { dir, files }
}

/// `latscope report ARGS` in `cwd`.
fn report(cwd: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    run(latscope(30).current_dir(cwd).arg("report").args(args))
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

/// Headless Chromium, or why there is none.
fn chromium() -> Result<PathBuf, String> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in ["/usr/bin", "/usr/local/bin", "/snap/bin"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return Ok(p);
            }
        }
    }
    Err("Chromium is not installed (apt-get install chromium; .ci/run does)".into())
}

/// Runs headless Chromium on `page` with `extra` arguments; returns its
/// standard output and standard error.
fn chromium_on(browser: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut cmd = std::process::Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()));
    let out = run_std_with_timeout(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "chromium failed: {}", describe(&out));
    (stdout_of(&out), stderr_of(&out))
}

/// Lines of Chromium's log that are the page's own console messages or
/// failed loads (the browser's D-Bus and GPU noise is not about the page).
fn page_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("net::ERR_"))
        .collect()
}

#[test]
fn real_runs_make_one_page_that_chromium_shows_with_one_svg_per_plot() {
    let runs = real_runs(true);
    let page = runs.dir.path().join("report.html");
    let svg_dir = runs.dir.path().join("plots");
    let mut argv: Vec<&std::ffi::OsStr> = runs.files.iter().map(|f| f.as_os_str()).collect();
    argv.extend([os("-o"), page.as_os_str(), os("--svg"), svg_dir.as_os_str()]);
    let out = report(runs.dir.path(), &argv);
    assert_code(&out, 0);
    assert!(
        stderr_of(&out).contains("latscope: wrote"),
        "{}",
        describe(&out)
    );
    let html = std::fs::read_to_string(&page).expect("report.html written");
    let plots = 3 * runs.files.len();
    assert_eq!(html.matches("<svg").count(), plots, "three plots per test");
    for text in [
        "futex (one-way)",
        "latency by percentile",
        "latency histogram",
        "per second over time",
        "P99.99",
        "Validity warnings",
        "futex -l 300 -i 100",
    ] {
        assert!(html.contains(text), "page lacks {text}");
    }
    assert!(!html.contains("<script"), "the page runs no script");

    let mut files: Vec<String> = std::fs::read_dir(&svg_dir)
        .expect("svg dir made")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), plots, "{files:?}");
    assert!(files.contains(&"1-futex-one-way-histogram.svg".to_string()));
    assert!(files.contains(&"1-futex-one-way-percentiles.svg".to_string()));
    for f in &files {
        let svg = std::fs::read_to_string(svg_dir.join(f)).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("<svg") && svg.contains("<text"));
    }

    let browser = match chromium() {
        Ok(b) => b,
        Err(why) => {
            eprintln!("SKIPPED the Chromium part: {why}");
            return;
        }
    };
    let (dom, log) = chromium_on(&browser, &page, &["--dump-dom"]);
    assert_eq!(
        dom.matches("<svg").count(),
        plots,
        "the DOM Chromium built has one <svg> per plot"
    );
    assert!(dom.contains("futex (one-way)"));
    assert!(page_errors(&log).is_empty(), "{:?}", page_errors(&log));

    let shot = runs.dir.path().join("shot.png");
    let (_, log) = chromium_on(
        &browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
    );
    assert!(page_errors(&log).is_empty(), "{:?}", page_errors(&log));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}

#[test]
fn default_output_is_report_html_and_dash_is_standard_output() {
    let runs = real_runs(false);
    let a = runs.files[0].as_os_str();
    let out = report(runs.dir.path(), &[a]);
    assert_code(&out, 0);
    assert!(runs.dir.path().join("report.html").is_file());
    // Run again: the page is replaced.
    assert_code(&report(runs.dir.path(), &[a]), 0);

    let out = report(runs.dir.path(), &[a, a, os("-o"), os("-")]);
    assert_code(&out, 0);
    let html = stdout_of(&out);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("run 2 pair 0"));
    assert_eq!(stderr_of(&out), "", "nothing else with -o -");
}

#[test]
fn bad_inputs_and_paths_are_one_line_and_exit_2() {
    let runs = real_runs(false);
    let d = runs.dir.path();
    let good = runs.files[0].clone();
    std::fs::write(d.join("text.json"), "hello").unwrap();
    std::fs::write(d.join("other.json"), r#"{"name": "x"}"#).unwrap();
    let old = std::fs::read_to_string(&good).unwrap().replacen(
        "\"schema_version\": 3",
        "\"schema_version\": 1",
        1,
    );
    std::fs::write(d.join("old.json"), old).unwrap();
    std::fs::write(d.join("a file"), "").unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["missing.json"], "cannot read missing.json"),
        (&["text.json"], "text.json is not a JSON report"),
        (&["other.json"], "other.json is not a latscope report"),
        (
            &["old.json"],
            "old.json has schema_version 1; this latscope reads versions 2 to 3",
        ),
        (&["A.json", "-o", "nodir/r.html"], "nodir does not exist"),
        (&["A.json", "-o", "A.json"], "that is an input report"),
        (&["A.json", "--svg", "a file"], "is not a directory"),
        (
            &["A.json", "--svg", "no/such/dir"],
            "no/such does not exist",
        ),
    ];
    for (argv, want) in cases {
        let argv: Vec<&std::ffi::OsStr> = argv.iter().map(os).collect();
        let out = report(d, &argv);
        assert_code(&out, 2);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{argv:?}: {err}");
        assert!(err.contains(want), "{argv:?}: {err}");
        assert!(!d.join("report.html").exists(), "{argv:?} wrote a page");
    }
    assert_code(&report(d, &[]), 2);
}
