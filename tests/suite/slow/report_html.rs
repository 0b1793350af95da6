//! `latscope report` through the real binary: HTML pages made from real short
//! runs, shown by headless Chromium (no console errors, one SVG per plot),
//! the SVG files, and every bad input refused with one line and exit 2.

use crate::common::*;
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
            latscope::testing::skip_part(
                "slow::report_html::real_runs_make_one_page_that_chromium_shows_with_one_svg_per_plot",
                "Chromium",
                &why.to_string(),
            );
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

/// The page's first figures are the tests' latencies ("At a glance"), not
/// some 1,100 px down below the facts of the machine and the run.
#[test]
fn the_page_starts_with_the_latencies() {
    let runs = real_runs(false);
    let out = report(
        runs.dir.path(),
        &[runs.files[0].as_os_str(), os("-o"), os("-")],
    );
    assert_code(&out, 0);
    let html = stdout_of(&out);
    let glance = html.find("<h2>At a glance</h2>").expect("the glance");
    let facts = html.find("Command line").expect("the run's facts");
    assert!(glance < facts, "the glance after the facts");
    let top = &html[glance..facts];
    assert!(top.contains("<td class=\"l\">futex</td>"), "{top}");
    assert!(
        [" ns</td>", " us</td>", " ms</td>"]
            .iter()
            .any(|u| top.contains(u)),
        "no latency at the top: {top}"
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

/// Appended to a copy of a page (never to the page latscope writes, which
/// runs no script): for every plot, its box as laid out in the page, and how
/// many of its pixels are coloured when Chromium rasterizes the plot at that
/// size. Only the series (and marks) are coloured: axes, grid, text and
/// background are black, grey or white, so a plot whose data was not drawn
/// counts 0 whatever else it shows. The result goes into the DOM, which
/// `--dump-dom` prints once the virtual time budget has let the images decode.
const PROBE: &str = r#"<script>
(async () => {
  const out = [];
  for (const svg of document.querySelectorAll('figure svg')) {
    const box = svg.getBoundingClientRect();
    const w = Math.round(box.width), h = Math.round(box.height);
    const img = new Image();
    img.src = 'data:image/svg+xml;charset=utf-8,' +
      encodeURIComponent(new XMLSerializer().serializeToString(svg));
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = w; canvas.height = h;
    const g = canvas.getContext('2d');
    g.drawImage(img, 0, 0, w, h);
    const d = g.getImageData(0, 0, w, h).data;
    let coloured = 0;
    for (let k = 0; k < d.length; k += 4) {
      if (Math.max(d[k], d[k + 1], d[k + 2]) - Math.min(d[k], d[k + 1], d[k + 2]) > 60) coloured++;
    }
    const title = svg.querySelector('text') ? svg.querySelector('text').textContent.trim() : '';
    out.push([Math.round(box.left), Math.round(box.right), w, h, coloured, title].join('\t'));
  }
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = 'PROBE\n' + out.join('\n') + '\nEND';
  document.body.appendChild(pre);
})();
</script>"#;

/// Every plot of `page` as Chromium lays it out in a 1280 px wide window:
/// (left px, right px, width, height, coloured pixels, caption).
fn probe_plots(browser: &Path, page: &Path) -> Vec<(i64, i64, i64, i64, u64, String)> {
    let probed = page.with_extension("probe.html");
    let html = std::fs::read_to_string(page).expect("page");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{PROBE}\n</body>")),
    )
    .unwrap();
    let (dom, _) = chromium_on(
        browser,
        &probed,
        &[
            "--window-size=1280,4000",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ],
    );
    let block = dom
        .split("PROBE\n")
        .nth(1)
        .and_then(|rest| rest.split("\nEND").next())
        .unwrap_or_else(|| panic!("the probe ran: {dom}"));
    block
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let n = |i: usize| f[i].parse::<i64>().unwrap_or_else(|_| panic!("{line}"));
            (n(0), n(1), n(2), n(3), n(4) as u64, f[5].to_string())
        })
        .collect()
}

/// Every kind of plot, from real runs (a futex test; a log-disk test; an
/// OS-noise test; as
/// root a timer test with every sample a traced spike, so the over-time plot
/// carries marks), and compare's page: each plot fits a 1280 px window and
/// has its data drawn (not blank).
#[test]
fn every_plot_kind_has_drawn_content_at_1280_px() {
    let browser = match chromium() {
        Ok(b) => b,
        Err(why) => {
            latscope::testing::skip(
                "slow::report_html::every_plot_kind_has_drawn_content_at_1280_px",
                &why.to_string(),
            );
            return;
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let json_run = |cmd: &mut assert_cmd::Command, name: &str| {
        let file = d.join(name);
        let out = run(cmd.arg("--json").arg(&file));
        assert_code(&out, 0);
        file
    };
    let mut files = vec![json_run(
        latscope(30)
            .args(args("futex -l 300 -i 100 -q"))
            .args(mlock_args()),
        "futex.json",
    )];
    let disk_dir = d.join("disk");
    std::fs::create_dir(&disk_dir).unwrap();
    files.push(json_run(
        latscope(60)
            .arg("logdisk")
            .arg(format!("--dir={}", disk_dir.display()))
            .args(args("--fileSize 64K --numFiles 2 --duration 1 -q")),
        "disk.json",
    ));
    // OS noise (SCHED_OTHER, one CPU): its own share-over-time plot.
    files.push(json_run(
        latscope(30).args(args("noise -D 1 --cpus 1 -q")),
        "noise.json",
    ));
    let traced = !skip_without_realtime("the timer part of every_plot_kind")
        && Path::new("/sys/kernel/tracing/instances").exists();
    if traced {
        files.push(json_run(
            latscope(60).args(args("timer -T 1 -p 1000 --trace-spikes 1 -q")),
            "timer.json",
        ));
    }
    let page = d.join("report.html");
    let mut argv: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    argv.extend([os("-o"), page.as_os_str()]);
    assert_code(&report(d, &argv), 0);
    let html = std::fs::read_to_string(&page).unwrap();
    if traced {
        assert!(
            html.contains("class=\"mark\""),
            "the timer's spikes are marked"
        );
    }
    // The machine is shown once; the log-disk table has neither a CPU
    // column (its writers are not placed: every cell would be `~`) nor
    // overruns (nothing periodic).
    assert!(html.contains("<h2>Machine (the same in all"), "one machine");
    let disk = html
        .split("<section class=\"test\">")
        .find(|s| s.starts_with("\n<h2>logdisk"))
        .expect("the log-disk section");
    let disk_head = &disk[disk.find("<table class=\"summary\">").unwrap()..];
    let disk_head = &disk_head[..disk_head.find("</tr>").unwrap()];
    assert!(
        !disk_head.contains(">CPU<") && !disk_head.contains(">Overruns<"),
        "{disk_head}"
    );
    assert!(disk_head.contains(">IOPS<"), "{disk_head}");

    let compare_page = d.join("compare.html");
    let out = run(latscope(30)
        .arg("compare")
        .arg(&files[0])
        .arg(&files[0])
        .arg("--html")
        .arg(&compare_page));
    assert_code(&out, 0);

    for (page, kinds) in [
        (
            &page,
            vec![
                "latency by percentile",
                "latency histogram",
                "over time",
                "noise share",
            ],
        ),
        (&compare_page, vec!["base against new"]),
    ] {
        let plots = probe_plots(&browser, page);
        let html = std::fs::read_to_string(page).unwrap();
        assert_eq!(
            plots.len(),
            html.matches("<svg").count(),
            "every plot probed"
        );
        for kind in kinds {
            assert!(
                plots.iter().any(|p| p.5.contains(kind)),
                "a {kind} plot in {plots:?}"
            );
        }
        for (left, right, w, h, coloured, title) in &plots {
            assert!(
                *left >= 0 && *right <= 1280 && *w > 600 && *h > 200,
                "{title}: laid out at {left}..{right} px, {w}x{h}"
            );
            // A series line alone is hundreds of pixels; a blank plot has none.
            assert!(*coloured > 300, "{title}: {coloured} coloured pixels");
        }
    }
}

/// A failed timer run with `--breakdown`, by each collector (issue 40
/// items 15 and 19): the page says FAIL first (before "At a glance"), with
/// the crossed gates as the console words them, and holds the breakdown's
/// split per thread; with the bpf collector, which records no return to
/// user space, the Return columns are left out and a line says why, while
/// tracefs fills them. Chromium shows the verdict and the breakdown.
#[test]
fn a_failed_run_s_page_says_fail_first_and_holds_the_breakdown() {
    const TEST: &str = "a_failed_run_s_page_says_fail_first_and_holds_the_breakdown";
    if !euid_is_root() {
        latscope::testing::skip(TEST, "kernel tracing (--breakdown) needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ran = 0;
    for collector in ["tracefs", "bpf"] {
        let file = dir.path().join(format!("{collector}.json"));
        // A 1 us limit is crossed by every timer wake-up on any machine.
        let out = run(latscope(60)
            .args(args(
                "timer -T 1 -p 1000 --breakdown --max-latency 1 --collector",
            ))
            .arg(collector)
            .arg("--json")
            .arg(&file));
        if collector == "bpf" && out.status.code() != Some(3) {
            latscope::testing::skip_part(TEST, "bpf", &stderr_of(&out));
            continue;
        }
        assert_code(&out, 3);
        ran += 1;
        let console = stdout_of(&out);
        let fail = console
            .lines()
            .find(|l| l.starts_with("FAIL: latency limit crossed by"))
            .unwrap_or_else(|| panic!("the console says no FAIL\n{}", describe(&out)))
            .to_string();
        let page = dir.path().join(format!("{collector}.html"));
        assert_code(
            &report(dir.path(), &[file.as_os_str(), os("-o"), page.as_os_str()]),
            0,
        );
        let html = std::fs::read_to_string(&page).unwrap();
        let verdict = html
            .find("Verdict: FAIL (exit code 3)")
            .unwrap_or_else(|| panic!("{collector}: the page never says FAIL"));
        let glance = html.find("<h2>At a glance</h2>").expect("the glance");
        assert!(verdict < glance, "{collector}: the verdict comes first");
        let fail_html = fail.replace('<', "&lt;").replace('>', "&gt;");
        assert!(
            html[..glance].contains(&fail_html),
            "{collector}: the page lacks the console's {fail:?}"
        );
        assert!(
            html.contains("Where the latency was spent (--breakdown)"),
            "{collector}: no breakdown"
        );
        for column in ["IRQ p50", "IRQ max", "Sched p99"] {
            assert!(
                html.contains(&format!("<th>{column}</th>")),
                "{collector}: {column}"
            );
        }
        let json = read_json(&file);
        let breakdown = &json["tests"][0]["series"][0]["detail"]["breakdown"];
        assert_eq!(breakdown["collector"]["name"], collector);
        let returns = u64_of(&breakdown["return_to_user"]["samples"], "return samples");
        let return_columns = html.contains("<th>Return p50</th>");
        assert_eq!(
            return_columns,
            returns > 0,
            "{collector}: Return columns shown: {return_columns}, return samples {returns}"
        );
        // The console says the same.
        assert_eq!(console.contains("Return p50"), returns > 0, "{console}");
        if collector == "bpf" {
            assert_eq!(
                returns, 0,
                "the bpf collector fills Return now: update this test"
            );
            let why = "Return left out: the bpf collector does not record the thread's return to user space";
            assert!(
                html.contains(&why.replace('\'', "&#39;")),
                "no reason for the missing Return columns"
            );
            assert!(unwrapped(&console).contains(why), "{console}");
        } else {
            assert!(
                returns > 0,
                "tracefs filled no Return figure\n{}",
                describe(&out)
            );
        }
        let Ok(browser) = chromium() else {
            latscope::testing::skip_part(TEST, "chromium", "Chromium is not installed");
            continue;
        };
        let (dom, log) = chromium_on(&browser, &page, &["--dump-dom"]);
        assert!(page_errors(&log).is_empty(), "{:?}", page_errors(&log));
        assert!(dom.contains("Verdict: FAIL"), "Chromium shows no verdict");
        assert!(
            dom.contains("Where the latency was spent"),
            "no breakdown in the DOM"
        );
    }
    assert!(ran > 0);
}
