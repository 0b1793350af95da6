//! latscope's integration tests, one crate (as ripgrep's): the shared helpers
//! of `common` are compiled once and the whole suite is linked once, where 48
//! test programs each compiled and linked them before.
//!
//! Two tiers, chosen here by where a module is declared:
//! - the modules at the top run in seconds each: parsers, usage, goldens of
//!   the fast tools, short real runs. `cargo test-quick` runs them with the
//!   library's unit tests, for everyday work (.cargo/config.toml);
//! - `slow::` holds the live runs of many seconds (timers, noise, tracing,
//!   loads, the drop-ins against the real rt-tests, the README's examples).
//!
//! `cargo test` runs everything, as CI does. tests/exclusive/ is a program of
//! its own, run while no other test runs (what it provokes is an absence:
//! an idle CPU). tests/torture.rs stays a program of its own: it makes itself the subreaper of every orphan and kills what
//! outlives a run, which would take the children of tests running beside it.
//!
//! Modules now run beside modules of other files (libtest runs two tests at a
//! time here, from anywhere in the crate). What two files must not do at once
//! takes a turn from `common::turns`.

mod common;

mod advice;
mod cleanup;
mod cli_usage;
mod compare;
mod compare_html;
mod cyclictest_report;
mod doctor;
mod export_formats;
mod fleet_junit;
mod harness_accuracy;
mod hwlatdetect_compat;
mod idle_states;
mod ipc_classic;
mod kernelci_compat;
mod layers;
mod mq_classic;
mod mq_report;
mod packaging;
mod parse_props;
mod parse_props_more;
mod pod_faces;
mod pod_realtime;
mod ptsematest_compat;
mod signals;
mod signaltest_compat;
mod suite_cli;
mod typed_options;
mod widths;

/// Live runs of many seconds each: `cargo test-quick` leaves them out.
mod slow {
    mod bpf;
    mod container;
    mod cyclicdeadline_compat;
    mod cyclictest_golden;
    mod cyclictest_signals;
    mod deadline;
    mod drop_in_actions;
    mod fleet_ansible;
    mod fleet_hdrlog;
    mod fleet_prometheus;
    mod fleet_snapshot;
    mod fleet_windows;
    mod hostile_input;
    mod hwlat;
    mod hwlat_bpf;
    mod hwlat_provoked;
    mod ipc_family;
    mod kcompile_load;
    mod kernelci_dropins;
    mod load;
    mod logdisk;
    mod noise;
    mod noise_hw;
    mod oslat_compat;
    mod pod_runs;
    mod readme_examples;
    mod recorder_freeze;
    mod report_html;
    mod rteval_report;
    mod samples;
    mod spikes;
    mod stress_runs;
    mod surfaces;
    mod threshold_actions;
    mod timer;
    mod widths;
}
