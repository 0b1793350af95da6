//! The golden listings: one file per generated program and per way of
//! attaching it (`golden/*.txt`), generated from fixed facts (BTF offsets
//! of Linux 6.18 on x86-64, this machine's tracefs `format` files kept in
//! `rt/tracefs/testdata`, map descriptor 3, task id 1234), so that they
//! depend on the generators alone, checked without root. A changed
//! instruction fails the test with the first line that differs;
//! `LATSCOPE_BLESS=1 cargo test --lib probes::golden` rewrites them after a
//! deliberate change (review the diff).

use super::listings::{Facts, Listing, all};
use super::wakeups::BtfMember;
use crate::rt::bpf::Size;
use crate::rt::tracefs::format::EventFormat;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/probes/golden")
}

/// The facts the goldens are generated from.
fn fixed_facts() -> Facts {
    let formats = [
        include_str!("../rt/tracefs/testdata/hrtimer_start.format"),
        include_str!("../rt/tracefs/testdata/hrtimer_expire_entry.format"),
        include_str!("../rt/tracefs/testdata/sched_switch.format"),
        include_str!("../rt/tracefs/testdata/sched_wakeup.format"),
        include_str!("../rt/tracefs/testdata/irq_handler_entry.format"),
        include_str!("../rt/tracefs/testdata/irq_handler_exit.format"),
        include_str!("../rt/tracefs/testdata/softirq_entry.format"),
        include_str!("../rt/tracefs/testdata/softirq_exit.format"),
        include_str!("../rt/tracefs/testdata/nmi_handler.format"),
        include_str!("../rt/tracefs/testdata/local_timer_entry.format"),
    ]
    .map(|text| EventFormat::parse(text).expect("a fixture format"));
    Facts {
        soft_expiry: Some(BtfMember {
            offset: 32,
            size: Size::DW,
        }),
        // task_struct of Linux 6.18 (x86-64, this machine's config).
        task: Some(super::fixtures::members()),
        formats: formats.to_vec(),
        map_fd: super::fixtures::MAP_FD,
        tids: vec![1234],
    }
}

fn bless() -> bool {
    std::env::var_os("LATSCOPE_BLESS").is_some_and(|v| v == "1")
}

/// The first line where `want` and `got` differ, for the failure message.
fn first_difference(want: &str, got: &str) -> String {
    let (mut w, mut g) = (want.lines(), got.lines());
    for line in 1.. {
        match (w.next(), g.next()) {
            (None, None) => return "no difference".to_string(),
            (a, b) if a != b => {
                return format!(
                    "line {line}: golden {:?}, generated {:?}",
                    a.unwrap_or("<end>"),
                    b.unwrap_or("<end>")
                );
            }
            _ => {}
        }
    }
    unreachable!()
}

#[test]
fn every_program_matches_its_golden_listing() {
    let listings = all(&fixed_facts());
    if bless() {
        std::fs::create_dir_all(dir()).unwrap();
        for old in std::fs::read_dir(dir()).unwrap() {
            std::fs::remove_file(old.unwrap().path()).unwrap();
        }
        for Listing { stem, text } in &listings {
            std::fs::write(dir().join(format!("{stem}.txt")), text).unwrap();
        }
    }
    let mut wrong = Vec::new();
    for Listing { stem, text } in &listings {
        assert!(!text.contains("not generated"), "{stem}: {text}");
        let path = dir().join(format!("{stem}.txt"));
        match std::fs::read_to_string(&path) {
            Ok(golden) if golden == *text => {}
            Ok(golden) => wrong.push(format!("{stem}: {}", first_difference(&golden, text))),
            Err(e) => wrong.push(format!("{stem}: no golden listing ({e})")),
        }
    }
    // A golden of a program no longer generated is stale.
    let stems: Vec<String> = listings.iter().map(|l| format!("{}.txt", l.stem)).collect();
    for file in std::fs::read_dir(dir()).unwrap() {
        let name = file.unwrap().file_name().to_string_lossy().into_owned();
        if !stems.contains(&name) {
            wrong.push(format!("{name}: golden of no generated program"));
        }
    }
    assert!(
        wrong.is_empty(),
        "listings differ from src/probes/golden (LATSCOPE_BLESS=1 rewrites them after a deliberate change):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn one_changed_instruction_is_caught() {
    // What the comparison above sees when a generator changes one load's
    // offset: the listing differs on that instruction's line.
    let facts = fixed_facts();
    let mut moved = facts.clone();
    moved.soft_expiry = Some(BtfMember {
        offset: 40,
        size: Size::DW,
    });
    let (a, b) = (all(&facts), all(&moved));
    let differing: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).collect();
    assert!(!differing.is_empty());
    let (x, y) = differing[0];
    let why = first_difference(&x.text, &y.text);
    assert!(why.contains("+32)") && why.contains("+40)"), "{why}");
}

#[test]
fn there_is_a_golden_per_program_and_way() {
    let stems: Vec<String> = all(&fixed_facts()).into_iter().map(|l| l.stem).collect();
    // Timer: arm on 3 ways, expire watched on 3 and inferred on 2, the two
    // switch-in programs; recorder: 8 events on 2 ways; interference
    // counter: IRQ, softirq, NMI and one vector on 3 ways, the switch on 2.
    assert_eq!(stems.len(), 3 + 5 + 2 + 16 + 14, "{stems:?}");
    for stem in [
        "wakeups-expire-inferred.tp_btf",
        "wakeups-arm.tracepoint",
        "recorder-sched_switch.tp_btf",
        "interference-sched_switch.tracepoint",
        "interference-local_timer_entry.raw_tp",
    ] {
        assert!(stems.iter().any(|s| s == stem), "{stem}: {stems:?}");
    }
}
