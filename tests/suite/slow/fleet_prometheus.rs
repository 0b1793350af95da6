//! `--prom FILE` against the real thing (issue 21): node_exporter's textfile
//! collector reads latscope's file, Prometheus scrapes node_exporter, and
//! Prometheus' HTTP API must show the documented series and agree with the
//! JSON report. Everything listens on loopback ports picked free; both
//! daemons are killed by a guard's Drop, also when an assertion fails.
//! The run rewrites its file every window: `_count` must grow between two
//! scrapes while it goes on, and end at the report's count.
//! Skips (with the reason printed) only when the Debian packages'
//! binaries are absent (`apt-get install prometheus prometheus-node-exporter`).

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

const NODE_EXPORTER: &str = "prometheus-node-exporter";
const PROMETHEUS: &str = "prometheus";

/// The daemons started by this test, killed and reaped on drop.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn installed(program: &str) -> bool {
    StdCommand::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A loopback port nobody listens on now (bound to :0, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` from 127.0.0.1:`port`: the body of a 200 answer, or None
/// while nothing answers or the answer is another status (Prometheus says
/// 503 Service Unavailable to every request while it starts).
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split_whitespace().nth(1)?;
    (status == "200").then(|| body.to_string())
}

/// The result vector of an instant query.
fn query(port: u16, expr: &str) -> Vec<Value> {
    let body = http_get(
        port,
        &format!("/api/v1/query?query={}", percent_encoded(expr)),
    )
    .unwrap_or_else(|| panic!("Prometheus gave no 200 answer to the query {expr}"));
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["status"], "success", "{expr}: {body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// Where the daemons' logs go (shown when Prometheus has no data).
static LOG_DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Polls `expr` until it has a result (Prometheus scrapes every second;
/// the limit only bounds a broken setup, it is no timing assertion).
fn wait_for(port: u16, expr: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let result = query(port, expr);
        if !result.is_empty() {
            return result;
        }
        if Instant::now() >= deadline {
            let logs: Vec<String> = ["node_exporter.log", "prometheus.log"]
                .iter()
                .filter_map(|name| {
                    let dir = LOG_DIR.get()?;
                    let text = std::fs::read_to_string(dir.join(name)).ok()?;
                    Some(evidence(name, &text))
                })
                .collect();
            panic!("no data for {expr} after 120 s; {}", logs.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn value_of(sample: &Value) -> f64 {
    sample["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value: {sample}"))
}

fn start(program: &str, args: &[String], log: &Path) -> Child {
    let log = std::fs::File::create(log).expect("daemon log");
    StdCommand::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program}: {e}"))
}

#[test]
fn node_exporter_and_prometheus_read_what_prom_writes() {
    for program in [NODE_EXPORTER, PROMETHEUS] {
        if !installed(program) {
            println!(
                "SKIP: {program} is not installed (apt-get install prometheus prometheus-node-exporter)"
            );
            return;
        }
    }
    let work = tempfile::tempdir().expect("temp dir");
    let textfiles = work.path().join("textfile");
    let tsdb = work.path().join("tsdb");
    std::fs::create_dir(&textfiles).unwrap();
    let (exporter_port, prometheus_port) = (free_port(), free_port());
    let config = work.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .unwrap();
    let _ = LOG_DIR.set(work.path().to_path_buf());
    let mut daemons = Daemons(Vec::new());
    daemons.0.push(start(
        NODE_EXPORTER,
        &[
            format!("--web.listen-address=127.0.0.1:{exporter_port}"),
            "--collector.disable-defaults".into(),
            "--collector.textfile".into(),
            format!("--collector.textfile.directory={}", textfiles.display()),
        ],
        &work.path().join("node_exporter.log"),
    ));
    daemons.0.push(start(
        PROMETHEUS,
        &[
            format!("--config.file={}", config.display()),
            format!("--storage.tsdb.path={}", tsdb.display()),
            format!("--web.listen-address=127.0.0.1:{prometheus_port}"),
        ],
        &work.path().join("prometheus.log"),
    ));

    // Prometheus scrapes node_exporter before latscope starts, so that the
    // run's live file is scraped while it goes on.
    let deadline = Instant::now() + Duration::from_secs(120);
    while http_get(prometheus_port, "/-/ready").is_none() {
        assert!(Instant::now() < deadline, "Prometheus never answered");
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_for(prometheus_port, r#"up{job="node"} == 1"#);
    let prom = textfiles.join("latscope.prom");
    let json = work.path().join("r.json");
    let (prom_arg, json_arg) = (prom.to_str().unwrap(), json.to_str().unwrap());
    let mut argv = vec![
        "timer", "-T", "20", "-q", "--prom", prom_arg, "--json", json_arg,
    ];
    argv.extend_from_slice(mlock_args());
    let mut spawned = spawn(&argv);

    // The file is rewritten every window: `_count` grows between two
    // scrapes (issue 21). Polled until two increasing values were seen, the
    // first of them while the run went on; the bound (the run, then 120 s)
    // only ends a broken setup. Nothing here panics while latscope runs.
    let growing = r#"sum(latscope_latency_seconds_count{test="timer"})"#;
    let count_now = || -> Option<u64> {
        let body = http_get(
            prometheus_port,
            &format!("/api/v1/query?query={}", percent_encoded(growing)),
        )?;
        let v: Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1]
            .as_str()?
            .parse::<f64>()
            .ok()
            .map(|v| v as u64)
    };
    let mut seen: Vec<u64> = Vec::new();
    let mut seen_running = 0;
    let mut deadline = None;
    while seen.len() < 2 {
        let running = spawned.child.try_wait().ok().flatten().is_none();
        if let Some(v) = count_now()
            && seen.last() != Some(&v)
        {
            seen.push(v);
            if running {
                seen_running += 1;
            }
        }
        if !running {
            let at = *deadline.get_or_insert(Instant::now() + Duration::from_secs(120));
            if Instant::now() >= at {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, out, err) = spawned.wait(Duration::from_secs(120));
    let all = dump(status, &out, &err);
    assert_eq!(status.code(), Some(0), "{all}");
    let report = read_json(&json);
    check_report_header(&report);
    let final_samples: u64 = array_of(&report["tests"][0]["series"], "series")
        .iter()
        .map(|s| u64_of(&s["samples"], "samples"))
        .sum();
    assert!(
        seen_running >= 1 && seen.len() >= 2 && seen[0] < seen[1],
        "_count did not grow between two scrapes while the run went on: {seen:?} ({seen_running} seen while running)\n{all}"
    );
    assert!(
        seen.iter().all(|&v| v > 0 && v <= final_samples),
        "live counts {seen:?} beyond the final {final_samples}\n{all}"
    );
    // The final file scraped: every query below sees the final results.
    let deadline = Instant::now() + Duration::from_secs(120);
    while query(prometheus_port, growing)
        .first()
        .map(value_of)
        .is_none_or(|v| v as u64 != final_samples)
    {
        assert!(
            Instant::now() < deadline,
            "Prometheus never scraped the final count {final_samples}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let series = &report["tests"][0]["series"][0];
    let label = series["label"].as_str().expect("label").to_string();
    let cpu = series["cpus"][0].as_u64().expect("cpu").to_string();
    let host = report["sysinfo"]["nodename"].as_str().unwrap().to_string();

    // The histogram's series, with every documented label.
    let selector = format!(r#"test="timer",series="{label}""#);
    let buckets = wait_for(
        prometheus_port,
        &format!("latscope_latency_seconds_bucket{{{selector}}}"),
    );
    assert_eq!(buckets.len(), 23, "22 rungs and +Inf: {buckets:?}");
    let metric = &buckets[0]["metric"];
    assert_eq!(metric["mode"], "user", "{metric}");
    assert_eq!(metric["cpu"], cpu.as_str(), "{metric}");
    assert_eq!(metric["host"], host.as_str(), "{metric}");
    // node_exporter's own labels do not replace latscope's.
    assert_eq!(metric["job"], "node", "{metric}");

    // _count is the report's sample count.
    let count = wait_for(
        prometheus_port,
        &format!("latscope_latency_seconds_count{{{selector}}}"),
    );
    let samples = u64_of(&series["samples"], "samples");
    assert_eq!(value_of(&count[0]) as u64, samples);

    // histogram_quantile agrees with the JSON's p99 to the ladder's
    // resolution: both lie in the same rung.
    let estimate = value_of(
        &wait_for(
            prometheus_port,
            &format!("histogram_quantile(0.99, latscope_latency_seconds_bucket{{{selector}}})"),
        )[0],
    );
    let p99 = series["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentile"] == 99.0)
        .map(|p| i64_of(&p["ns"], "p99"))
        .expect("p99") as f64
        / 1e9;
    let ladder: Vec<f64> = buckets
        .iter()
        .filter_map(|b| b["metric"]["le"].as_str().and_then(|le| le.parse().ok()))
        .filter(|le: &f64| le.is_finite())
        .collect();
    let rung = |v: f64| ladder.iter().position(|&le| v <= le);
    assert_eq!(
        rung(estimate),
        rung(p99),
        "histogram_quantile {estimate} s and the report's p99 {p99} s lie in different rungs of {ladder:?}"
    );

    // The run's max, the last window's gauges, the info metric, the doctor.
    let max = wait_for(
        prometheus_port,
        &format!("latscope_max_seconds{{{selector}}}"),
    );
    assert_eq!(
        (value_of(&max[0]) * 1e9).round() as i64,
        i64_of(&series["max_ns"], "max_ns")
    );
    for gauge in ["latscope_window_max_seconds", "latscope_window_p99_seconds"] {
        wait_for(prometheus_port, &format!("{gauge}{{{selector}}}"));
    }
    let info = wait_for(prometheus_port, "latscope_info");
    assert_eq!(info[0]["metric"]["kernel"], report["sysinfo"]["release"]);
    let checks = array_of(&report["sysinfo"]["checks"], "checks");
    let gauges = wait_for(prometheus_port, "latscope_doctor_check");
    assert_eq!(gauges.len(), checks.len(), "one gauge per doctor check");

    // Every panel of the Grafana dashboard has data, its variables as
    // "All" would set them.
    for expr in dashboard_queries() {
        let expr = expr.replace("$host", ".*");
        let result = wait_for(prometheus_port, &expr);
        assert!(
            result
                .iter()
                .any(|r| r["metric"]["host"] == host.as_str() || r["metric"].get("host").is_none()),
            "{expr}: {result:?}"
        );
    }
    drop(daemons);
}

/// The query of every target of every panel of contrib/grafana/latscope.json.
fn dashboard_queries() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/grafana/latscope.json");
    let text = std::fs::read_to_string(path).expect("the dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            t["expr"]
                .as_str()
                .expect("every target has an expr")
                .to_string()
        })
        .collect();
    assert!(exprs.len() >= 6, "{exprs:?}");
    exprs
}
