//! contrib/ansible/latscope-fleet.yml, run for real on this machine as its
//! only host (`-i localhost, -c local`): a 2 s `mq` test, its report (and
//! its `--prom` file and `--hdr-log` interval log) brought back, one HTML
//! report over the hosts and a comparison with a baseline.
//! Installs nothing: without `ansible-playbook` on PATH the test says so and
//! passes (.ci/run installs Debian's `ansible`). Everything is written under
//! a temporary directory.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

#[test]
fn the_fleet_playbook_measures_fetches_reports_and_compares() {
    if !on_path("ansible-playbook") {
        latscope::testing::skip(
            "slow::fleet_ansible::the_fleet_playbook_measures_fetches_reports_and_compares",
            "ansible-playbook is not installed (Debian: apt-get install ansible)",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let baseline = root.join("baseline");
    std::fs::create_dir(&baseline).unwrap();
    let base_file = baseline.join("base.json");
    let mut argv = vec![
        "mq",
        "-D",
        "1s",
        "-q",
        "--json",
        base_file.to_str().unwrap(),
    ];
    argv.extend_from_slice(mlock_args());
    let out = run(latscope(120).args(&argv));
    assert_code(&out, 0);

    let results = root.join("results");
    let run_args = [&["-D", "2s", "-q"][..], mlock_args()].concat();
    let vars = serde_json::json!({
        "latscope_binary": bin(),
        "latscope_path": root.join("host/bin/latscope"),
        "latscope_remote_dir": root.join("host/work"),
        "latscope_compat_dir": root.join("host/compat"),
        "latscope_test": "mq",
        "latscope_args": run_args,
        "latscope_results_dir": results,
        "latscope_baseline_dir": baseline,
    });
    std::fs::create_dir_all(root.join("host/bin")).unwrap();
    let vars_file = root.join("vars.json");
    std::fs::write(&vars_file, vars.to_string()).unwrap();
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/ansible/latscope-fleet.yml");
    let out = Command::new("ansible-playbook")
        .args(["-i", "localhost,", "-c", "local"])
        .arg("-e")
        .arg(format!("@{}", vars_file.display()))
        .arg(&playbook)
        .current_dir(root)
        // Ansible's own files (facts cache, temporary modules) stay in the
        // temporary directory too.
        .env("ANSIBLE_LOCAL_TEMP", root.join("ansible-tmp"))
        .env("ANSIBLE_REMOTE_TEMP", root.join("ansible-tmp"))
        .env("ANSIBLE_HOME", root.join("ansible-home"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("ansible-playbook runs");
    let all = format!(
        "status {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");

    let host = results.join("localhost");
    let report = read_json(&host.join("report.json"));
    assert_eq!(report["tests"][0]["test"], "mq", "{all}");
    assert_eq!(
        report["tests"][0]["end_reason"], "duration_elapsed",
        "{all}"
    );
    // This latscope has --prom and --hdr-log: the play asks for both and
    // brings them back.
    let prom = std::fs::read_to_string(host.join("report.prom")).expect("report.prom");
    assert!(
        prom.contains(r#"latscope_latency_seconds_count{test="mq""#),
        "{prom}\n{all}"
    );
    let hlog = std::fs::read_to_string(host.join("report.hlog")).expect("report.hlog");
    assert!(hlog.contains("\"StartTimestamp\""), "{hlog}\n{all}");
    assert!(
        hlog.lines().any(|l| l.starts_with("Tag=mq.")),
        "{hlog}\n{all}"
    );
    let html =
        std::fs::read_to_string(results.join("fleet-report.html")).expect("fleet-report.html");
    assert!(html.contains("<html"), "{all}");
    let compare = read_json(&host.join("compare.json"));
    assert!(compare.is_object(), "{all}");
    let text = std::fs::read_to_string(host.join("compare.txt")).expect("compare.txt");
    assert!(text.contains("base: "), "{text}\n{all}");
    // The compatibility names point at the copied binary.
    let link = std::fs::read_link(root.join("host/compat/pmqtest")).expect("compat link");
    assert_eq!(link, root.join("host/bin/latscope"));
}
