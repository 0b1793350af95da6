//! The result model every test produces, and the exporters that read it.
//!
//! A `Report` is plain data (serde), defined in `model/` and re-exported here
//! so `crate::report::Report` names it. Exporters only read it: the modern
//! console table, the latscope JSON, and the original tools' classic formats
//! (rt-tests' pmqtest, sigwaittest and svsematest lines and JSON; semtest's
//! summary). An exporter imports only the model, `stats/` and `units`
//! (tests/suite/layers.rs).

pub mod cells;
pub mod classic_cyclicdeadline;
pub mod classic_cyclictest;
pub mod classic_hwlatdetect;
pub mod classic_hwnoise;
pub mod classic_mqldt;
pub mod classic_oslat;
pub mod classic_pi_stress;
pub mod classic_rt_migrate;
pub mod classic_rt_tests;
pub mod classic_semtest;
pub mod classic_signaltest;
pub mod classic_xenomai;
pub mod console;
pub mod csv;
pub mod csv_logdisk;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod model;
pub mod prom;
pub mod rteval_xml;

pub use model::*;

use std::io::Write;

/// A way to write a report for people or programs.
pub trait Exporter {
    fn write(&self, report: &Report, out: &mut dyn Write) -> std::io::Result<()>;
}

/// The console of a run whose results were printed as it went (mqldt's
/// classic lines, one block size at a time): nothing is left to write.
pub struct PrintedLive;

impl Exporter for PrintedLive {
    fn write(&self, _: &Report, _: &mut dyn Write) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod testdata {
    use super::*;
    use crate::report::SysInfo;
    use crate::stats::LatencyRecorder;
    use crate::stats::window::SecondStats;

    /// `sample_report` as an OS-noise test of CPU 1 spinning half the time.
    pub fn noise_report() -> Report {
        let mut report = sample_report();
        let test = &mut report.tests[0];
        test.test = "noise".into();
        test.config.detail = crate::report::ConfigDetail::Noise(crate::report::NoiseConfig {
            cpus_left_out: Vec::new(),
            cpus: vec![1],
            cpus_from: "named".into(),
            threshold_ns: 1_000,
            runtime_ns: 500_000,
            period_ns: 1_000_000,
            clock: "clock_gettime(CLOCK_MONOTONIC)".into(),
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
            forced: false,
            hw_counter: None,
        });
        let series = &mut test.series[0];
        series.label = "CPU 1".into();
        series.per_second = vec![SecondStats::new(0, 1, 3, 2_000, 10_000.0, 30_000)];
        series.detail = crate::report::SeriesDetail::NoiseCpu(Box::new(crate::report::NoiseCpu {
            cpu: 1,
            tid: 42,
            isolated: false,
            measured_ns: 2_000_000_000,
            noise_ns: 30_000,
            noise_percent: 0.0015,
            loops: 80_000_000,
            loops_per_s: 40_000_000.0,
            causes: None,
            oslat: None,
            hardware: None,
        }));
        report
    }

    /// A small, fully known report: one pair, samples 2, 3 and 5 us.
    pub fn sample_report() -> Report {
        let mut recorder = LatencyRecorder::new();
        for ns in [2_000, 3_000, 5_000] {
            recorder.record(ns);
        }
        Report {
            schema: SCHEMA_NAME.to_string(),
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "latscope".to_string(),
                version: "0.1.0".to_string(),
            },
            command_line: ["latscope", "mq", "-l", "3", "--json", "\"x\".json"]
                .map(String::from)
                .to_vec(),
            start_time: "2026-11-21T10:00:00Z".to_string(),
            end_time: "2026-11-21T10:00:01Z".to_string(),
            duration_s: 1.0,
            sysinfo: SysInfo {
                sysname: "Linux".into(),
                nodename: "rig".into(),
                release: "6.18.0".into(),
                version: "#1 SMP PREEMPT_DYNAMIC".into(),
                machine: "x86_64".into(),
                preempt_rt: false,
                clocksource: "tsc".into(),
                cpus_online: 2,
                cpus_allowed: vec![0, 1],
                cpus_isolated: String::new(),
                virtualization: None,
                rt_runtime_us: Some(950_000),
                rt_period_us: Some(1_000_000),
                checks: Vec::new(),
                cpu_topology: Vec::new(),
                clocksources_available: Vec::new(),
                kernel_cmdline: None,
            },
            tests: vec![TestResult {
                test: "mq".into(),
                description: "POSIX message queue, mq_send -> mq_receive".into(),
                mode: "one-way".into(),
                config: TestConfig {
                    policy: "fifo".into(),
                    priority: 99,
                    loops: Some(3),
                    duration_s: None,
                    max_latency_us: None,
                    mlockall: true,
                    cpu_dma_latency: "held at 0 us".into(),
                    detail: ConfigDetail::Ipc(IpcConfig {
                        pairs: 1,
                        tasks: "threads".into(),
                        cross_cpu: false,
                        same_priority: false,
                        interval_us: 100,
                        distance_us: 500,
                        receive_timeout_s: None,
                        forced_send_delay_s: None,
                        breaktrace_us: None,
                    }),
                },
                end_reason: EndReason::LoopsDone,
                error: None,
                overall: recorder.summary(),
                overall_detail: None,
                spikes: None,
                started_s: None,
                series: vec![Series {
                    label: "pair 0".into(),
                    cpus: vec![1],
                    pinned: true,
                    policy: "fifo".into(),
                    priority: 99,
                    overruns: 0,
                    above_limit: 0,
                    latency: recorder.summary(),
                    per_second: vec![SecondStats {
                        second: 0,
                        span_s: 1,
                        samples: 3,
                        min_ns: 2_000,
                        avg_ns: 10_000.0 / 3.0,
                        max_ns: 5_000,
                        ..SecondStats::default()
                    }],
                    per_second_dropped: 0,
                    detail: SeriesDetail::IpcPair(IpcPair {
                        receiver_cpu: 1,
                        sender_cpu: 1,
                        receiver_tid: 6096,
                        sender_tid: 6097,
                        interval_us: 100,
                        sent: 3,
                        timeouts: 2,
                        resources: vec!["/latscope-1-0-test".into()],
                    }),
                }],
            }],
            warnings: vec!["kernel is not PREEMPT_RT".into()],
            thresholds: Vec::new(),
            loads: Vec::new(),
            kernel_log: Default::default(),
            exit_code: 0,
            samples_file: None,
            deadline: Vec::new(),
            idle_states: None,
            actions: None,
        }
    }

    /// What `exporter` writes for `report`, as text.
    pub fn written(exporter: &dyn Exporter, report: &Report) -> String {
        let mut buf = Vec::new();
        exporter.write(report, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// `report` with a stress-ng load and one kernel message from its run.
    pub fn with_load_and_kernel_message(mut report: Report) -> Report {
        report.loads.push(crate::report::LoadRecord {
            spec: "cpu:1".into(),
            command_line: vec![
                "/usr/bin/stress-ng".into(),
                "--cpu".into(),
                "1".into(),
                "--timeout".into(),
                "0".into(),
            ],
            version: "stress-ng, version 0.15.06".into(),
            pid: 4242,
            cpus: vec![0, 1],
            exit_status: Some("exit code 0".into()),
            stopped_with: Some("SIGTERM".into()),
            ended_early: false,
        });
        report.kernel_log = crate::report::KernelLog {
            followed: true,
            note: None,
            messages: vec![crate::report::KernelMessage {
                time_s: 2.5,
                level: 4,
                kind: crate::report::MessageKind::RtThrottling,
                text: "sched: RT throttling activated".into(),
            }],
            messages_not_kept: 0,
        };
        report
    }

    /// `report` with one more test, `svmq`, that could not start: no
    /// series, no samples, its error.
    pub fn with_a_test_that_did_not_start(mut report: Report) -> Report {
        let mut failed = report.tests[0].clone();
        failed.test = "svmq".into();
        failed.mode = "one-way".into();
        failed.series.clear();
        failed.overall = crate::stats::LatencySummary::default();
        failed.overall_detail = None;
        failed.end_reason = EndReason::Error;
        failed.error = Some("msgget: No space left on device".into());
        report.tests.push(failed);
        report
    }

    /// A timer report: two sampling threads (CPU 0 and 1), samples -1, 1,
    /// 3 and 4 us each; the second missed 3 periods, 1 sample over the limit.
    pub fn timer_report() -> Report {
        use crate::report::XenomaiHistogram;
        let mut recorder = LatencyRecorder::signed();
        for ns in [-1_000, 1_000, 3_000, 4_000] {
            recorder.record(ns);
        }
        let histogram = XenomaiHistogram::new(10, 1_000).unwrap();
        let thread = |cpu: usize, overruns: u64, above_limit: u64| Series {
            label: format!("CPU {cpu}"),
            cpus: vec![cpu],
            pinned: true,
            policy: "fifo".into(),
            priority: 99,
            overruns,
            above_limit,
            latency: recorder.summary(),
            per_second: Vec::new(),
            per_second_dropped: 0,
            detail: SeriesDetail::TimerThread(Box::new(TimerThread {
                cpu,
                tid: 700 + cpu as i32,
                period_us: 100,
                loops: 1,
                msw: 0,
                involuntary_switches: 0,
                major_faults: 0,
                minor_faults: 0,
                histogram_all: Some(histogram.clone()),
                histogram_loop_min: Some(histogram.clone()),
                histogram_loop_max: Some(histogram.clone()),
                breakdown: None,
                cyclictest: None,
            })),
        };
        let mut all = LatencyRecorder::signed();
        all.merge(&recorder);
        all.merge(&recorder);
        let mut report = sample_report();
        report.command_line = ["latscope", "timer", "--smp", "-T", "1"]
            .map(String::from)
            .to_vec();
        report.tests = vec![TestResult {
            test: "timer".into(),
            description: "periodic wake-up, nanosleep: clock read after waking - expiry".into(),
            mode: "user".into(),
            config: TestConfig {
                policy: "fifo".into(),
                priority: 99,
                loops: None,
                duration_s: Some(1.0),
                max_latency_us: Some(3),
                mlockall: true,
                cpu_dma_latency: "held at 0 us".into(),
                detail: ConfigDetail::Timer(TimerConfig {
                    cpus: vec![0, 1],
                    period_us: 100,
                    wake: "nanosleep".into(),
                    figure: "user".into(),
                    test_mode: 0,
                    warmup_loops: 0,
                    samples_per_loop: 10_000,
                    histogram_cells: 10,
                    bucket_ns: 1_000,
                    breakdown: false,
                    freeze_trace: false,
                    break_on_switch: false,
                    cyclictest: None,
                }),
            },
            end_reason: EndReason::DurationElapsed,
            error: None,
            overall: all.summary(),
            series: vec![thread(0, 0, 0), thread(1, 3, 1)],
            overall_detail: None,
            spikes: None,
            started_s: None,
        }];
        report.exit_code = 3;
        report
    }

    /// A log-disk report: one writer, three 4 KiB writes of 1, 2 and 3 ms.
    pub fn logdisk_report() -> Report {
        let mut recorder = LatencyRecorder::new();
        for ns in [1_000_000, 2_000_000, 3_000_000] {
            recorder.record(ns);
        }
        let writer = DiskWriter {
            writer: 0,
            tid: 800,
            dir: ".".into(),
            block_size: 4096,
            writes: 3,
            bytes: 12_288,
            duration_s: 1.5,
            iops: 2.0,
            bytes_per_s: 8_192.0,
            interval_bandwidth: IntervalBandwidth {
                rule: "wall-seconds".into(),
                intervals: 1,
                max_bytes_per_s: 8_192,
                min_bytes_per_s: 8_192,
                avg_bytes_per_s: 8_192,
            },
            slowest_write_bytes_per_s: 1_365_333,
            fastest_write_bytes_per_s: 4_096_000,
            write_call: None,
            sync_call: None,
            per_second: Vec::new(),
            files: vec!["./mqldt_testfile.0000".into()],
            files_reused: 0,
        };
        let mut report = sample_report();
        report.command_line = ["latscope", "logdisk", "--duration", "1"]
            .map(String::from)
            .to_vec();
        report.warnings = vec!["running in a virtual machine (kvm): the host decides".into()];
        report.tests = vec![TestResult {
            test: "logdisk".into(),
            description: "4 KiB sequential log write, pwrite (O_DSYNC|O_DIRECT)".into(),
            mode: "dsync".into(),
            config: TestConfig {
                policy: "other".into(),
                priority: 0,
                loops: None,
                duration_s: Some(1.0),
                max_latency_us: None,
                mlockall: false,
                cpu_dma_latency: "not requested".into(),
                detail: ConfigDetail::Logdisk(LogdiskConfig {
                    dir: ".".into(),
                    dirs: vec![".".into()],
                    file_prefix: "mqldt_testfile".into(),
                    block_size: 4096,
                    block_sizes: vec![4096],
                    file_size: 1_638_400,
                    num_files: 8,
                    writers: 1,
                    delay_us: 0,
                    alignment: 4096,
                    sync: "dsync".into(),
                    direct: true,
                    reuse: false,
                    keep: false,
                }),
            },
            end_reason: EndReason::LoopsDone,
            error: None,
            overall: recorder.summary(),
            series: vec![Series {
                label: "writer".into(),
                cpus: Vec::new(),
                pinned: false,
                policy: "other".into(),
                priority: 0,
                overruns: 0,
                above_limit: 0,
                latency: recorder.summary(),
                per_second: Vec::new(),
                per_second_dropped: 0,
                detail: SeriesDetail::DiskWriter(Box::new(writer.clone())),
            }],
            overall_detail: Some(SeriesDetail::DiskWriter(Box::new(writer))),
            spikes: None,
            started_s: None,
        }];
        report
    }
}
