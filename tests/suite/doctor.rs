//! `latscope doctor` on this machine: its findings must be the facts the
//! test reads from the same files (not fixed strings), the table and the
//! JSON must agree, the exit code must follow the verdicts, and every test's
//! report must carry the same checks.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn mounted_tracefs() -> Option<String> {
    read("/proc/self/mounts").lines().find_map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        (fields.get(2) == Some(&"tracefs")).then(|| fields[1].to_string())
    })
}

/// As root, mount tracefs if it is not (the doctor itself only looks and
/// says how to mount it); never unmounted, as other tools may use it.
fn mount_tracefs_as_root() {
    if mounted_tracefs().is_some() || !euid_is_root() {
        return;
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .status();
    eprintln!("mounted tracefs for the doctor's tracer check: {status:?}");
}

fn doctor_json() -> (Output, Value) {
    let out = run(latscope(30).args(["doctor", "--json", "-"]));
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json - is not JSON ({e}):\n{}", describe(&out)));
    (out, json)
}

use std::process::Output;

fn check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    array_of(&doc["checks"], "checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {doc:#}"))
}

#[test]
fn doctor_reports_the_facts_of_this_machine() {
    mount_tracefs_as_root();
    let (out, doc) = doctor_json();
    assert_eq!(doc["schema"], "latscope-doctor");
    assert_eq!(doc["schema_version"], 1);

    // Preemption model: PREEMPT_RT only if the kernel says so.
    let realtime = read("/sys/kernel/realtime").trim() == "1"
        || read("/proc/sys/kernel/version")
            .split_whitespace()
            .any(|w| w == "PREEMPT_RT");
    let preemption = check(&doc, "kernel.preemption");
    assert_eq!(preemption["verdict"], if realtime { "ok" } else { "bad" });
    assert_eq!(doc["sysinfo"]["preempt_rt"], realtime);
    if !realtime {
        assert!(
            preemption["value"]
                .as_str()
                .unwrap()
                .ends_with("(not PREEMPT_RT)"),
            "{preemption}"
        );
    }

    // Virtualization: the CPU's hypervisor flag; kvm-clock exists only under KVM.
    let hypervisor_flag = read("/proc/cpuinfo")
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let vm = check(&doc, "platform.virtualization");
    if hypervisor_flag {
        assert_eq!(vm["verdict"], "warn", "{vm}");
        assert_eq!(doc["sysinfo"]["virtualization"], vm["value"]);
        if read("/sys/devices/system/clocksource/clocksource0/available_clocksource")
            .split_whitespace()
            .any(|c| c == "kvm-clock")
        {
            assert!(vm["value"].as_str().unwrap().contains("KVM"), "{vm}");
        }
    } else {
        eprintln!("no hypervisor flag: not a VM here, the check says {vm}");
    }

    // RT throttling: the two sysctls.
    let number = |p: &str| read(p).trim().parse::<i64>().ok();
    let throttling = check(&doc, "sched.rt_throttling");
    match (
        number("/proc/sys/kernel/sched_rt_runtime_us"),
        number("/proc/sys/kernel/sched_rt_period_us"),
    ) {
        (Some(runtime), Some(period)) if (0..period).contains(&runtime) => {
            assert_eq!(throttling["verdict"], "warn", "{throttling}");
            assert_eq!(throttling["value"], format!("{runtime} of {period} us"));
            assert!(
                throttling["fix"]
                    .as_str()
                    .unwrap()
                    .starts_with("sysctl kernel.sched_rt_runtime_us=-1"),
                "{throttling}"
            );
        }
        _ => assert_eq!(throttling["verdict"], "ok", "{throttling}"),
    }

    // The tracers, when tracefs is mounted and readable (as root).
    let tracers = check(&doc, "tracing.tracers");
    match mounted_tracefs() {
        Some(dir) if euid_is_root() => {
            let available = read(&format!("{dir}/available_tracers"));
            let has_timerlat = available.split_whitespace().any(|t| t == "timerlat");
            let has_osnoise = available.split_whitespace().any(|t| t == "osnoise");
            if has_timerlat && has_osnoise {
                assert_eq!(tracers["verdict"], "ok", "{tracers}");
            } else {
                assert_eq!(tracers["verdict"], "warn", "{tracers}");
                assert_eq!(
                    tracers["value"].as_str().unwrap().contains("no timerlat"),
                    !has_timerlat,
                    "{tracers}"
                );
            }
            assert_eq!(
                check(&doc, "tracing.tracefs")["value"],
                format!("mounted at {dir}")
            );
        }
        _ => eprintln!("tracefs not mounted or not root: the tracer check says {tracers}"),
    }

    // hwlat: the tier `--tier auto` takes (bpf wherever BPF collection is
    // possible on a kernel with BPF_FETCH, 5.12), and how SMIs are counted,
    // from the files the decision reads.
    let tier = check(&doc, "hwlat.tier");
    let release = read("/proc/sys/kernel/osrelease");
    let mut version = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let fetch = (version.next().unwrap_or(0), version.next().unwrap_or(0)) >= (5, 12);
    if check(&doc, "tracing.bpf")["value"] == "possible" && fetch {
        assert_eq!(
            (&tier["verdict"], &tier["value"]),
            (&"ok".into(), &"bpf".into()),
            "{tier}"
        );
    } else {
        assert!(tier["value"].as_str().unwrap().contains("(bpf: "), "{tier}");
    }
    let smi = check(&doc, "hwlat.smi");
    let smi_event = Path::new("/sys/bus/event_source/devices/msr/events/smi").exists();
    let cpuinfo = read("/proc/cpuinfo");
    let intel_family_6 = cpuinfo
        .lines()
        .any(|l| l.starts_with("vendor_id") && l.ends_with("GenuineIntel"))
        && cpuinfo
            .lines()
            .any(|l| l.starts_with("cpu family") && l.ends_with(": 6"));
    if smi_event && euid_is_root() {
        assert_eq!(smi["value"], "perf's msr/smi/ event", "{smi}");
    } else if !smi_event && !intel_family_6 {
        assert_eq!(smi["verdict"], "ok", "{smi}");
        assert!(smi["value"].as_str().unwrap().starts_with("no: "), "{smi}");
    }

    // Counts, exit code, and a fix for every finding that is not ok.
    let checks = array_of(&doc["checks"], "checks");
    let count = |v: &str| checks.iter().filter(|c| c["verdict"] == v).count() as u64;
    for verdict in ["ok", "warn", "bad"] {
        assert_eq!(u64_of(&doc["summary"][verdict], verdict), count(verdict));
    }
    assert_eq!(
        count("ok") + count("warn") + count("bad"),
        checks.len() as u64
    );
    for c in checks {
        assert_eq!(c["fix"].is_null(), c["verdict"] == "ok", "{c}");
        assert!(!c["meaning"].as_str().unwrap().is_empty(), "{c}");
    }
    let code = if count("bad") > 0 { 3 } else { 0 };
    assert_code(&out, code);
    assert_eq!(doc["exit_code"], code);
    // With --json -, the summary goes to standard error.
    assert!(
        stderr_of(&out).starts_with(&format!(
            "summary: {} ok, {} warn, {} bad",
            count("ok"),
            count("warn"),
            count("bad")
        )),
        "{}",
        describe(&out)
    );
}

#[test]
fn the_table_shows_what_the_json_says() {
    let (_, doc) = doctor_json();
    let out = run(latscope(30).arg("doctor"));
    let text = stdout_of(&out);
    assert_code(&out, u64_of(&doc["exit_code"], "exit_code") as i32);
    assert!(
        text.lines().nth(2).unwrap_or("").starts_with("group"),
        "{text}"
    );
    for c in array_of(&doc["checks"], "checks") {
        let title = c["title"].as_str().unwrap();
        let verdict = c["verdict"].as_str().unwrap();
        let row = text
            .lines()
            .find(|l| l.contains(&format!(" {verdict} ")) && l.contains(&format!(" {title} ")))
            .unwrap_or_else(|| panic!("no row for {title} ({verdict}):\n{text}"));
        if let Some(fix) = c["fix"].as_str() {
            assert!(row.ends_with(fix), "{row}");
        }
    }
    // -q shows only what is not ok.
    let quiet = stdout_of(&run(latscope(30).args(["doctor", "-q", "--explain"])));
    assert!(!quiet.contains("  ok  "), "{quiet}");
    let problems = array_of(&doc["checks"], "checks")
        .iter()
        .filter(|c| c["verdict"] != "ok")
        .count();
    if problems > 0 {
        assert!(quiet.contains("what the findings mean:"), "{quiet}");
    }
}

#[test]
fn every_report_carries_the_doctors_checks() {
    let (_, doc) = doctor_json();
    let (_dir, file) = temp_file("pipe.json");
    let (_, report) = run_with_report(
        {
            let mut cmd = latscope(30);
            cmd.args(["pipe", "-l", "5", "-i", "100"])
                .args(mlock_args());
            cmd
        },
        &file,
        0,
    );
    let ids = |v: &Value| -> Vec<String> {
        array_of(v, "checks")
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&report["sysinfo"]["checks"]), ids(&doc["checks"]));
    // The machine-level warnings are the doctor's findings, word for word
    // (the last of them then says how to quiet them).
    let warnings = array_of(&report["warnings"], "warnings");
    for id in ["kernel.preemption", "platform.virtualization"] {
        let c = check(&doc, id);
        let meaning = c["meaning"].as_str().unwrap();
        assert_eq!(
            warnings
                .iter()
                .any(|w| w.as_str().is_some_and(|w| w.starts_with(meaning))),
            c["verdict"] != "ok",
            "{id}: {c} vs {warnings:?}"
        );
    }
}

#[test]
fn doctor_refuses_bad_usage() {
    let out = run(latscope(10).args(["doctor", "--json", "/nonexistent-dir/x.json"]));
    assert_code(&out, 2);
    assert!(out.stdout.is_empty(), "nothing checked: {}", describe(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--json"), "{err}");
    let out = run(latscope(10).args(["doctor", "--frobnicate"]));
    assert_code(&out, 2);
    assert!(
        stderr_of(&out).contains("latscope doctor --help"),
        "{}",
        describe(&out)
    );
}

#[test]
fn doctor_help_documents_the_exit_codes() {
    let out = run(latscope(10).args(["doctor", "--help"]));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    assert!(text.contains("3 at least one check is bad"), "{text}");
    assert!(
        text.contains("--json <FILE>") && text.contains("--explain"),
        "{text}"
    );
}

#[test]
fn doctor_writes_a_json_file_and_the_table() {
    let (_dir, file) = temp_file("doctor.json");
    let out = run(latscope(30).args(["doctor", "--json"]).arg(&file));
    let doc = read_json(Path::new(&file));
    assert_code(&out, u64_of(&doc["exit_code"], "exit_code") as i32);
    assert!(stdout_of(&out).contains("summary: "), "{}", describe(&out));
    assert_eq!(array_of(&doc["checks"], "checks").len(), 29);
    assert!(
        doc["sysinfo"]["checks"].is_null(),
        "checks only once: {doc:#}"
    );
}

#[test]
fn doctor_bpf_lists_every_program_of_every_family_for_this_kernel() {
    let out = run(latscope(60).args(["doctor", "--bpf"]));
    assert_code(&out, 0);
    let text = stdout_of(&out);
    // The measured cost of a program run comes first (slow::bpf tests it).
    assert!(
        text.starts_with("What one program run costs here: "),
        "{text}"
    );
    assert!(
        text.contains("\nlatscope doctor --bpf: the programs latscope generates for Linux "),
        "{text}"
    );
    // Each family, its programs by name and event; the classic ones only
    // where tracefs's format files can be read (root).
    for header in [
        "; latscope_expire on timer:hrtimer_expire_entry (tp_btf), arming Inferred",
        "; latscope_on_cpu on sched:sched_exit_tp (raw_tp)",
        "; latscope_sched_switch on sched:sched_switch (tp_btf)",
        // hwlat's interference counter, beside the wake-ups and the recorder.
        "; latscope_hw_irq on irq:irq_handler_entry (tp_btf)",
        "; latscope_hw_sw on sched:sched_switch (tp_btf)",
    ] {
        if Path::new("/sys/kernel/btf/vmlinux").exists() {
            assert!(text.contains(header), "{header}: {text}");
        }
    }
    // In the verifier's words and numbering: the map load takes two slots.
    assert!(
        text.contains("   5: (18) r1 = map[fd:3]\n   7: (85) call bpf_map_lookup_elem#1\n"),
        "{text}"
    );
    assert!(
        text.contains("\n; r6 = &slots[this CPU], or return\n"),
        "{text}"
    );
    // As root every program is generated; nothing is loaded either way.
    if euid_is_root() && mounted_tracefs().is_some() {
        assert!(!text.contains("not generated"), "{text}");
        assert!(
            text.contains("; latscope_arm on timer:hrtimer_start (tracepoint)"),
            "{text}"
        );
    }
    // The interference counter's programs, timed per event (hwlat's bpf tier).
    assert!(
        text.contains("\nCost per interference event of hwlat --tier bpf "),
        "{text}"
    );
    if euid_is_root()
        && text.contains("\n  tp_btf ")
        && !text.contains("  tp_btf      not measured")
    {
        let switch = regex::Regex::new(
            r"\n  sched:sched_switch +(tp_btf|raw_tp|tracepoint) +\d+ ns per run \(\d+ runs\)\n",
        )
        .unwrap();
        assert!(switch.is_match(&text), "{text}");
    }
    // It does not mix with the table's options.
    let out = run(latscope(30).args(["doctor", "--bpf", "--explain"]));
    assert_code(&out, 2);
}

/// As an ordinary user the doctor says what hwlat can do for that user:
/// the unprivileged tier, and why not the others (the run's own reasons).
#[test]
fn doctor_names_the_hwlat_tier_an_ordinary_user_gets() {
    const TEST: &str = "doctor::doctor_names_the_hwlat_tier_an_ordinary_user_gets";
    let mut cmd = match nobody_runner() {
        Ok(cmd) => cmd,
        Err(why) => return latscope::testing::skip(TEST, &why),
    };
    cmd.arg(bin()).args(["doctor", "--json", "-"]);
    let out = run_std_with_timeout(cmd, std::time::Duration::from_secs(60));
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", describe(&out)));
    let tier = check(&doc, "hwlat.tier");
    assert_eq!(tier["verdict"], "warn", "{tier}");
    let value = tier["value"].as_str().unwrap();
    assert!(
        value.starts_with("unprivileged (bpf: not permitted"),
        "{tier}"
    );
    assert!(
        value.contains("; tracefs: kernel tracing needs root"),
        "{tier}"
    );
    assert_eq!(tier["fix"], "run as root, or grant CAP_BPF and CAP_PERFMON");
}
