//! The harness on an in-process transport: deterministic, no privileges.

use super::*;
use crate::ipc::{Channel, ChannelError, PairChannels, SetupError, Wake};
use crate::rt::sched::Policy;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A queue in memory; `delivery_delay` is added before a message is handed
/// out, to make samples slower than the period.
struct LocalChannel {
    queue: Mutex<VecDeque<u64>>,
    ready: Condvar,
    delivery_delay: Duration,
}

const SENTINEL: u64 = u64::MAX;

impl Channel for LocalChannel {
    fn post(&self, stamp_ns: u64) -> Result<(), ChannelError> {
        self.queue.lock().unwrap().push_back(stamp_ns);
        self.ready.notify_one();
        Ok(())
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<Wake, ChannelError> {
        let mut q = self.queue.lock().unwrap();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(stamp) = q.pop_front() {
                drop(q);
                std::thread::sleep(self.delivery_delay);
                return Ok(if stamp == SENTINEL {
                    Wake::Interrupted
                } else {
                    Wake::Message(stamp)
                });
            }
            match deadline {
                None => q = self.ready.wait(q).unwrap(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(Wake::TimedOut);
                    }
                    q = self.ready.wait_timeout(q, d - now).unwrap().0;
                }
            }
        }
    }

    fn interrupt(&self) {
        let _ = self.post(SENTINEL);
    }
}

struct LocalTransport {
    delivery_delay: Duration,
}

impl Transport for LocalTransport {
    fn name(&self) -> &'static str {
        "local"
    }

    fn describe(&self) -> &'static str {
        "in-process queue"
    }

    fn crosses_processes(&self) -> bool {
        false
    }

    fn open_pair(&self, _index: usize, _across: bool) -> Result<PairChannels, SetupError> {
        let channel = |delay| {
            Box::new(LocalChannel {
                queue: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                delivery_delay: delay,
            })
        };
        Ok(PairChannels {
            test: channel(self.delivery_delay),
            sync: channel(Duration::ZERO),
            resource_names: vec![],
        })
    }
}

struct NoProgress;

impl Progress for NoProgress {
    fn tick(&mut self, _: Duration, _: &[PairLive]) {}
    fn finish(&mut self) {}
}

fn pair(interval_us: u64, loops: Option<u64>) -> PairPlan {
    PairPlan {
        receiver_cpu: None,
        sender_cpu: None,
        policy: Policy::Other,
        priority: 0,
        interval_ns: interval_us * 1000,
        loops,
    }
}

fn run_local(delay: Duration, plan: RunPlan) -> RunOutcome {
    let transport = LocalTransport {
        delivery_delay: delay,
    };
    run(&transport, &plan, None, &mut NoProgress).expect("run")
}

#[test]
fn every_pair_runs_all_its_loops() {
    let plan = RunPlan {
        pairs: vec![pair(200, Some(20)), pair(2_000, Some(5))],
        ..RunPlan::default()
    };
    let out = run_local(Duration::ZERO, plan);
    assert_eq!(out.end_reason, EndReason::LoopsDone);
    let samples: Vec<u64> = out.pairs.iter().map(|p| p.recorder.count()).collect();
    assert_eq!(samples, [20, 5]);
    assert_eq!(out.pairs[0].sent, 20);
    assert_eq!(out.pairs[1].sent, 5);
    let windowed: u64 = out.pairs[0].per_second.iter().map(|w| w.samples).sum();
    assert_eq!(windowed, 20);
}

#[test]
fn samples_slower_than_the_period_count_overruns() {
    // 1 ms period, each delivery takes >= 3.5 ms: at least 2 whole periods
    // are missed per sample (3 after the first two).
    let plan = RunPlan {
        pairs: vec![pair(1_000, Some(4))],
        ..RunPlan::default()
    };
    let out = run_local(Duration::from_micros(3_500), plan);
    let p = &out.pairs[0];
    assert_eq!(p.recorder.count(), 4);
    assert!(p.overruns >= 3 * 2, "overruns {}", p.overruns);
    assert!(p.recorder.summary().min_ns >= 3_500_000);
}

#[test]
fn timeouts_are_counted_and_the_sample_still_taken() {
    let plan = RunPlan {
        pairs: vec![pair(1_000, Some(2))],
        receive_timeout: Some(Duration::from_millis(5)),
        forced_send_delay: Some(Duration::from_millis(22)),
        ..RunPlan::default()
    };
    let out = run_local(Duration::ZERO, plan);
    let p = &out.pairs[0];
    assert_eq!(p.recorder.count(), 2);
    // Each sample waits 22 ms with 5 ms timeouts: about 4 each; at least
    // one each even on a loaded machine.
    assert!(p.timeouts >= 2, "timeouts {}", p.timeouts);
}

#[test]
fn duration_ends_an_endless_run_with_results() {
    let plan = RunPlan {
        pairs: vec![pair(1_000, None)],
        duration: Some(Duration::from_millis(300)),
        ..RunPlan::default()
    };
    let out = run_local(Duration::ZERO, plan);
    assert_eq!(out.end_reason, EndReason::DurationElapsed);
    assert!(out.pairs[0].recorder.count() > 10);
    assert!(out.elapsed < Duration::from_secs(5));
}

#[test]
fn break_trace_limit_stops_the_run_without_tracefs() {
    let plan = RunPlan {
        pairs: vec![pair(1_000, None)],
        breaktrace_ns: Some(1_000_000),
        ..RunPlan::default()
    };
    let out = run_local(Duration::from_millis(2), plan);
    assert_eq!(out.end_reason, EndReason::BreakTrace);
    assert_eq!(out.pairs[0].recorder.count(), 1);
}

#[test]
fn samples_above_the_limit_are_counted() {
    let plan = RunPlan {
        pairs: vec![pair(500, Some(3))],
        limit_ns: Some(1_000_000),
        ..RunPlan::default()
    };
    let out = run_local(Duration::from_millis(2), plan);
    assert_eq!(out.pairs[0].above_limit, 3);
}

#[test]
fn peers_in_child_processes_and_a_dead_child_ends_the_run() {
    let transport = crate::ipc::mq::MessageQueues::new();
    for mode in [Mode::OneWay, Mode::RoundTrip] {
        let plan = RunPlan {
            pairs: vec![pair(500, Some(50)), pair(700, Some(30))],
            mode,
            tasks: Tasks::Processes,
            ..RunPlan::default()
        };
        let out = run(&transport, &plan, None, &mut NoProgress).expect("run");
        assert_eq!(out.end_reason, EndReason::LoopsDone, "{:?}", out.error);
        let samples: Vec<u64> = out.pairs.iter().map(|p| p.recorder.count()).collect();
        assert_eq!(samples, [50, 30]);
        // The sender is another process: its id is not one of our threads.
        assert!(out.pairs.iter().all(|p| p.sender_tid != p.receiver_tid));
    }
}

#[test]
fn back_to_back_samples_count_no_overruns() {
    let plan = RunPlan {
        pairs: vec![pair(0, Some(2_000))],
        ..RunPlan::default()
    };
    let out = run_local(Duration::ZERO, plan);
    assert_eq!(out.pairs[0].recorder.count(), 2_000);
    assert_eq!(out.pairs[0].overruns, 0);
}

#[test]
fn a_transport_that_cannot_cross_processes_refuses_fork() {
    let plan = RunPlan {
        pairs: vec![pair(1_000, Some(1))],
        tasks: Tasks::Processes,
        ..RunPlan::default()
    };
    let transport = LocalTransport {
        delivery_delay: Duration::ZERO,
    };
    let err = run(&transport, &plan, None, &mut NoProgress)
        .err()
        .expect("refused");
    // Bad usage (exit code 2), not a failure at run time.
    assert!(matches!(err, SetupError::Usage(_)), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("without --fork"), "{err}");
}

/// Stops the sender process of pair 0 with SIGSTOP at the first progress tick.
struct StopTheSender {
    stopped: Option<i32>,
}

impl Progress for StopTheSender {
    fn tick(&mut self, _: Duration, live: &[PairLive]) {
        if self.stopped.is_none() {
            let pid = live[0]
                .sender
                .tid
                .load(std::sync::atomic::Ordering::Relaxed);
            // SAFETY: the forked sender of this run, a child not yet reaped.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            self.stopped = Some(pid);
        }
    }
    fn finish(&mut self) {}
}

#[test]
fn a_stopped_sender_process_ends_the_run_with_an_error_and_counts_the_missed_periods() {
    let transport = crate::ipc::mq::MessageQueues::new();
    let plan = RunPlan {
        pairs: vec![pair(1_000, None)],
        tasks: Tasks::Processes,
        duration: Some(Duration::from_secs(6)),
        ..RunPlan::default()
    };
    let mut progress = StopTheSender { stopped: None };
    let out = run(&transport, &plan, None, &mut progress).expect("run");
    assert!(progress.stopped.is_some());
    assert_eq!(out.end_reason, EndReason::Error);
    let error = out.error.expect("error");
    assert!(error.contains("was stopped by signal"), "{error}");
    // Seen at the next monitor tick, not at the end of the duration, and the
    // stopped child is killed at once rather than given a grace period.
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    // The sample in flight from the stop to its detection (at least two
    // monitor ticks, 200 ms) held up about 200 periods of 1 ms.
    let p = &out.pairs[0];
    assert!(p.overruns >= 50, "overruns {}", p.overruns);
}
