//! `latscope hwlat` in the HTML report: instead of the latency over time,
//! its gaps over time by class (each second's longest hardware gap, the
//! hypervisor's in a guest, and longest OS gap, per CPU), then the hardware
//! time each second took, with each CPU's steal time over the run beside it.

use super::{Marks, Page, plots};
use crate::report::{Series, TestResult};
use crate::units::format_ns;
use plots::PlotSeries;
use plots::gaps::GapSeries;

/// The hardware share plot's words.
const HARDWARE_SHARE: plots::ShareText = plots::ShareText {
    caption: "hardware time per window over time",
    y_desc: "hardware gaps (% of the time spun)",
};

/// In a guest: the hypervisor's time.
const HYPERVISOR_SHARE: plots::ShareText = plots::ShareText {
    caption: "hypervisor time per window over time",
    y_desc: "hypervisor gaps (% of the time spun)",
};

impl Page {
    /// hwlat's plots over time for the group's `series` (as `plotted`),
    /// the kernel messages of `marks` on the gaps' plot.
    pub(super) fn hwlat_figures(
        &mut self,
        (title, stem): (&str, &str),
        (series, plotted): (&[(usize, &TestResult, &Series)], &[PlotSeries]),
        marks: &Marks,
    ) -> Result<(), String> {
        if series.iter().any(|(_, _, s)| without_windows(s)) {
            self.html.push_str(
                "<p class=\"note\">No gaps over time: this report was written before \
                 latscope kept each second's gaps (per_second, os_per_second).</p>\n",
            );
            return Ok(());
        }
        let guest = series
            .iter()
            .any(|(_, t, _)| t.config.hwlat().is_some_and(|c| c.hypervisor.is_some()));
        let name = if guest { "hypervisor" } else { "hardware" };
        let gaps: Vec<GapSeries> = series
            .iter()
            .zip(plotted)
            .filter_map(|(&(_, _, s), p)| {
                Some(GapSeries {
                    label: p.label.clone(),
                    hardware: &s.per_second,
                    os: &s.hwlat_cpu()?.os_per_second,
                })
            })
            .collect();
        let end_s = series
            .iter()
            .map(|(_, t, _)| t.config.duration_s.unwrap_or(0.0))
            .fold(0.0, f64::max);
        let svg = plots::gaps::gaps_over_time_svg(title, &gaps, (name, end_s), &marks.marks)?;
        let caption = format!(
            "Gaps over time: per CPU (its colour), the longest {name} gap (filled circle: \
             nothing the kernel counts ran across it) and the longest OS gap (cross: an \
             interrupt, softirq, NMI or task took the CPU) of each second, on a log axis. A \
             second without a mark of a class had no gap of it above the threshold; the \
             sampler spins only its share of each window (--width of --window), so gaps \
             outside it are not seen. Beyond {} seconds, seconds are merged per mark, \
             keeping the longest.{}",
            plots::MAX_TIME_POINTS,
            marks.caption()
        );
        self.figure(svg, format!("{stem}-over-time"), &caption);
        let (text, words) = if guest {
            (&HYPERVISOR_SHARE, "the hypervisor took")
        } else {
            (&HARDWARE_SHARE, "hardware gaps took")
        };
        let caption = format!(
            "{} time over time: the share of each second's spinning time {words} (the sum of \
             its {name} gaps over the time spun in it), one line per CPU, on a linear axis. \
             Over the whole run: {}.",
            if guest { "Hypervisor" } else { "Hardware" },
            totals(series, plotted, name)
        );
        self.share_figure(
            (title, stem),
            (series, plotted),
            (text, "hardware-share", &caption),
        )
    }
}

/// Whether `s` had gaps but its report keeps none over time (it was
/// written before they were kept).
fn without_windows(s: &Series) -> bool {
    s.hwlat_cpu().is_some_and(|c| {
        (c.hardware_gaps > 0 && s.per_second.is_empty())
            || (c.os_gaps > 0 && c.os_per_second.is_empty())
    })
}

/// Each CPU's hardware time and steal time over its run, in words (steal is
/// counted by the kernel in whole ticks, so it resolves only long runs).
fn totals(series: &[(usize, &TestResult, &Series)], plotted: &[PlotSeries], name: &str) -> String {
    series
        .iter()
        .zip(plotted)
        .filter_map(|((_, _, s), p)| {
            let c = s.hwlat_cpu()?;
            Some(format!(
                "{}: {} {name} gaps, {}; steal {}",
                p.label,
                c.hardware_gaps,
                format_ns(c.hardware_ns as i64),
                format_ns(c.steal_ns as i64)
            ))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::{Run, render};
    use crate::report::testdata::sample_report;
    use crate::report::{ConfigDetail, HwlatConfig, HwlatCpu, Report, SeriesDetail};
    use crate::stats::window::SecondStats;

    /// A report of `hwlat` on CPU 0 and 1 for 3 s in a KVM guest (or on
    /// bare metal) with these windows of hardware and OS gaps per CPU.
    fn hwlat_report(guest: bool, windows: [(Vec<SecondStats>, Vec<SecondStats>); 2]) -> Report {
        let mut report = sample_report();
        let test = &mut report.tests[0];
        test.test = "hwlat".into();
        test.mode = "gaps".into();
        test.config.duration_s = Some(3.0);
        test.config.detail = ConfigDetail::Hwlat(HwlatConfig {
            cpus: vec![0, 1],
            threshold_ns: 10_000,
            width_ns: 500_000_000,
            window_ns: 1_000_000_000,
            sub_window_ns: 500_000,
            tier: "bpf".into(),
            tier_fallback: None,
            hypervisor: guest.then(|| "KVM".to_string()),
            smi_counting: "not countable here".into(),
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
        });
        let template = test.series[0].clone();
        test.series = windows
            .into_iter()
            .enumerate()
            .map(|(cpu, (hardware, os))| {
                let mut s = template.clone();
                s.label = format!("CPU {cpu}");
                let hardware_ns = hardware
                    .iter()
                    .map(|w| w.avg_ns * w.samples as f64)
                    .sum::<f64>();
                s.detail = SeriesDetail::HwlatCpu(Box::new(HwlatCpu {
                    cpu,
                    tid: 0,
                    windows: 3,
                    sub_windows: 30,
                    quiet_sub_windows: 0,
                    spun_ns: 1_500_000_000,
                    classified_ns: 1_500_000_000,
                    loops: 0,
                    loops_per_s: 0.0,
                    hardware_gaps: hardware.iter().map(|w| w.samples).sum(),
                    hardware_ns: hardware_ns as u64,
                    os_gaps: os.iter().map(|w| w.samples).sum(),
                    os_ns: 0,
                    os_max_ns: 0,
                    os_causes: vec![],
                    gaps_dropped: 0,
                    nmis: 0,
                    nmi_ns: None,
                    nmi_max_ns: None,
                    smis: None,
                    steal_ns: 10_000_000,
                    os_per_second: os,
                    samples: vec![],
                }));
                s.per_second = hardware;
                s
            })
            .collect();
        report
    }

    fn w(second: u64, samples: u64, max_ns: i64) -> SecondStats {
        SecondStats::new(second, 1, samples, 10_000, max_ns as f64, max_ns)
    }

    fn names(report: &Report) -> (String, Vec<(String, String)>) {
        let r = render(&[Run {
            source: "hw.json".into(),
            report,
        }])
        .unwrap();
        (
            r.html,
            r.plots.into_iter().map(|p| (p.name, p.svg)).collect(),
        )
    }

    #[test]
    fn a_guests_page_plots_both_classes_over_time_and_the_hypervisor_time() {
        let report = hwlat_report(
            true,
            [
                (
                    vec![w(0, 4, 40_000), w(2, 1, 3_000_000)],
                    vec![w(1, 2, 15_000)],
                ),
                (vec![w(1, 2, 25_000)], vec![w(0, 3, 12_000)]),
            ],
        );
        let (html, plots) = names(&report);
        let find = |name: &str| {
            plots
                .iter()
                .find(|p| p.0 == name)
                .unwrap_or_else(|| {
                    panic!(
                        "{name} in {:?}",
                        plots.iter().map(|p| &p.0).collect::<Vec<_>>()
                    )
                })
                .1
                .clone()
        };
        // The gaps over time replace the latency over time.
        assert!(!plots.iter().any(|p| p.0.ends_with("-per-second")));
        let gaps = find("1-hwlat-gaps-over-time");
        for label in [
            "CPU 0 hypervisor gaps",
            "CPU 0 OS gaps",
            "CPU 1 hypervisor gaps",
            "CPU 1 OS gaps",
        ] {
            assert!(gaps.contains(label), "{label} in {gaps}");
        }
        // One circle per hardware second and per legend entry.
        assert_eq!(gaps.matches("<circle").count(), 3 + 2, "{gaps}");
        let share = find("1-hwlat-gaps-hardware-share");
        assert!(
            share.contains("hypervisor time per window over time"),
            "{share}"
        );
        assert!(
            html.contains("the longest hypervisor gap (filled circle"),
            "{html}"
        );
        assert!(
            html.contains("CPU 0: 5 hypervisor gaps, 3.16 ms; steal 10.0 ms"),
            "{html}"
        );
    }

    #[test]
    fn os_gaps_only_are_plotted_alone_and_an_older_report_or_a_quiet_run_says_why_not() {
        let report = hwlat_report(false, [(vec![], vec![w(0, 2, 15_000)]), (vec![], vec![])]);
        let (html, plots) = names(&report);
        let gaps = &plots
            .iter()
            .find(|p| p.0 == "1-hwlat-gaps-over-time")
            .unwrap()
            .1;
        assert!(
            gaps.contains("CPU 0 OS gaps") && !gaps.contains("hardware gaps"),
            "{gaps}"
        );
        assert!(!gaps.contains("<circle"), "{gaps}");
        let share = &plots
            .iter()
            .find(|p| p.0 == "1-hwlat-gaps-hardware-share")
            .unwrap()
            .1;
        assert!(
            share.contains("hardware time per window over time"),
            "{share}"
        );
        assert!(
            html.contains("CPU 1: 0 hardware gaps, 0 ns; steal 10.0 ms"),
            "{html}"
        );
        // A report from before the windows: its gaps, none over time.
        let mut old = report.clone();
        if let SeriesDetail::HwlatCpu(c) = &mut old.tests[0].series[0].detail {
            c.os_per_second.clear();
        }
        let (html, plots) = names(&old);
        assert!(
            !plots
                .iter()
                .any(|p| p.0.contains("-over-time") || p.0.contains("-share"))
        );
        assert!(
            html.contains("No gaps over time: this report was written before"),
            "{html}"
        );
        let quiet = hwlat_report(false, [(vec![], vec![]), (vec![], vec![])]);
        let (html, plots) = names(&quiet);
        assert!(!plots.iter().any(|p| p.0.ends_with("-over-time")));
        assert!(html.contains("No samples to plot (over time)"), "{html}");
    }
}
