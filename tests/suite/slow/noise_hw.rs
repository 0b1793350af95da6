//! `latscope noise`'s HW column: the interruptions across which the
//! interference counter (the bpf programs of `hwlat --tier bpf`) did not
//! move. As root the counter runs; its figures must be consistent with the
//! interruptions, `--no-hw-counter` turns it off (the column shows `-` and
//! one line says why), and an interruption provoked by a FIFO task of
//! known identity on the measured CPU is never hardware. A machine where
//! the counter cannot load is a counted skip.

use crate::common::*;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The spinner's priority, and the provoking task's above it.
const SPINNER_PRIORITY: &str = "90";
const PROVOKER_PRIORITY: i32 = 95;
/// Fewer provoked bursts than this prove nothing.
const MIN_PROVOKED: usize = 20;

/// `noise --cpus C -p 90 ARGS --json F` on the measured CPU: the output,
/// the report, and the counter's state (None: a counted skip was noted).
fn noise_run(test: &str, args: &[&str]) -> Option<(std::process::Output, Value)> {
    let (_dir, file) = temp_file("noise.json");
    let mut cmd = latscope(60);
    cmd.args(["noise", "--cpus", &measured_cpu().to_string()])
        .args(["-p", SPINNER_PRIORITY, "-q"])
        .args(args)
        .args(mlock_args())
        .arg("--json")
        .arg(&file);
    let out = run(cmd);
    assert_code(&out, 0);
    let report = read_json(&file);
    let counter = &report["tests"][0]["config"]["detail"]["hw_counter"];
    if counter["ran"] != true {
        latscope::testing::skip(
            test,
            &format!(
                "the interference counter did not run: {}",
                counter["detail"]
            ),
        );
        return None;
    }
    Some((out, report))
}

/// The measured CPU's hardware figures, checked against its interruptions.
fn consistent_hardware(report: &Value) -> &Value {
    let s = &series(report)[0];
    let d = &s["detail"];
    let hw = &d["hardware"];
    let count = u64_of(&hw["interruptions"], "hw interruptions");
    let all = u64_of(&s["samples"], "samples");
    let hw_ns = u64_of(&hw["noise_ns"], "hw noise_ns");
    assert!(count <= all, "{count} hardware of {all}: {hw}");
    assert!(hw_ns <= u64_of(&d["noise_ns"], "noise_ns"), "{d}");
    let last = array_of(&hw["last"], "last");
    assert_eq!(last.len() as u64, count.min(256), "{hw}");
    if count > 0 {
        let max = u64_of(&hw["max_ns"], "hw max_ns");
        assert!(max as i64 <= i64_of(&s["max_ns"], "max_ns"), "{s}");
        assert!(max > 1000 && hw_ns >= max, "{hw}");
        for g in last {
            let ns = u64_of(&g["ns"], "ns");
            assert!(ns > 1000 && ns <= max, "{g} of {hw}");
        }
    } else {
        assert_eq!(hw_ns, 0);
    }
    hw
}

#[test]
fn the_hw_column_counts_the_interruptions_the_counter_did_not_see() {
    let test = "slow::noise_hw::the_hw_column_counts_the_interruptions_the_counter_did_not_see";
    if skip_without_realtime(test) {
        return;
    }
    let _turn = crate::common::turns::realtime_turn();
    let Some((out, report)) = noise_run(test, &["-D", "2"]) else {
        return;
    };
    let hw = consistent_hardware(&report);
    let stdout = stdout_of(&out);
    let header = lines(&stdout)
        .into_iter()
        .find(|l| l.starts_with("CPU "))
        .unwrap_or_default();
    assert!(header.split_whitespace().any(|w| w == "HW"), "{stdout}");
    let row = lines(&stdout)
        .into_iter()
        .find(|l| l.starts_with(&format!("{} ", measured_cpu())))
        .unwrap_or_default()
        .to_string();
    let count = hw["interruptions"].to_string();
    assert!(
        row.split_whitespace().any(|w| w == count),
        "{count} in {row}"
    );
    assert!(stdout.contains("HW: interruptions with no IRQ"), "{stdout}");
    // Off: no figures, `-`, and why.
    let (_dir, file) = temp_file("off.json");
    let mut cmd = latscope(60);
    cmd.args(["noise", "--cpus", &measured_cpu().to_string(), "-D", "1"])
        .args(["--no-hw-counter", "--json"])
        .arg(&file)
        .args(mlock_args());
    let out = run(cmd);
    assert_code(&out, 0);
    let off = read_json(&file);
    assert!(series(&off)[0]["detail"].get("hardware").is_none());
    let counter = &off["tests"][0]["config"]["detail"]["hw_counter"];
    assert_eq!(counter["ran"], false, "{counter}");
    assert!(
        stdout_of(&out)
            .contains("HW: - (the interference counter did not run: off (--no-hw-counter))"),
        "{}",
        describe(&out)
    );
}

/// A FIFO task on `cpu` above the spinner: sleeps 15 ms, spins 1 ms,
/// until `stop` or 20 s; its burst intervals (CLOCK_MONOTONIC).
fn burst(cpu: usize, stop: &AtomicBool) -> Result<Vec<(u64, u64)>, String> {
    become_thread("noise-burst", cpu, libc::SCHED_FIFO, PROVOKER_PRIORITY)?;
    let until = Instant::now() + Duration::from_secs(20);
    let mut intervals = Vec::new();
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(15));
        let t0 = monotonic_ns();
        let end = Instant::now() + Duration::from_millis(1);
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        intervals.push((t0, monotonic_ns()));
    }
    Ok(intervals)
}

#[test]
fn a_fifo_tasks_bursts_are_never_hardware() {
    let test = "slow::noise_hw::a_fifo_tasks_bursts_are_never_hardware";
    if skip_without_realtime(test) {
        return;
    }
    let _turn = crate::common::turns::realtime_turn();
    let cpu = measured_cpu();
    let stop = Arc::new(AtomicBool::new(false));
    let mut provokers = Provokers::new(stop.clone());
    let stop_one = stop.clone();
    provokers.add(std::thread::spawn(move || burst(cpu, &stop_one)));
    let ran = noise_run(test, &["-D", "3", "--threshold", "100us"]);
    let intervals = match provokers.finish().pop().unwrap() {
        Ok(i) => i,
        Err(why) => {
            latscope::testing::skip(test, &format!("cannot provoke here: {why}"));
            return;
        }
    };
    let Some((_, report)) = ran else {
        return;
    };
    let hw = consistent_hardware(&report);
    let count = u64_of(&hw["interruptions"], "hw interruptions");
    assert!(count <= 256, "every hardware interruption listed: {hw}");
    let all = u64_of(&series(&report)[0]["samples"], "samples");
    // Each burst preempts the spinner for about 1 ms (those before the
    // spinners started and after they stopped, and the few RT throttling
    // merges, aside: half of them at least are interruptions).
    assert!(
        intervals.len() >= MIN_PROVOKED && all as usize >= intervals.len() / 2,
        "{} bursts, {all} interruptions above 100 us",
        intervals.len()
    );
    // By identity: no hardware interruption overlaps a burst of the task.
    let overlapping: Vec<&Value> = array_of(&hw["last"], "last")
        .iter()
        .filter(|g| {
            let from = u64_of(&g["at_ns"], "at_ns");
            let to = from + u64_of(&g["ns"], "ns");
            intervals.iter().any(|&(t0, t1)| from <= t1 && to >= t0)
        })
        .collect();
    eprintln!(
        "{test}: {} bursts, {all} interruptions, {count} hardware, {} of them over a burst",
        intervals.len(),
        overlapping.len()
    );
    assert!(overlapping.is_empty(), "{overlapping:?}");
}
