//! `--on-threshold` and `--on-end`: the actions a run took, as a report
//! records them; `pipeline::actions` runs them and fills these records.

use serde::{Deserialize, Serialize};

/// The actions of a run: what was asked and what each run of one did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionLog {
    /// `--on-threshold` as given, in order.
    pub on_threshold: Vec<String>,
    /// `--on-end` as given, in order.
    pub on_end: Vec<String>,
    /// Every action run, in the order it ran.
    pub runs: Vec<ActionRun>,
    /// Crossings not acted on because the actions of an earlier crossing
    /// were still running (with `continue`).
    pub crossings_not_acted: u64,
}

/// What ran an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionTrigger {
    /// A sample crossed `--max-latency`.
    Threshold,
    /// The run ended.
    End,
}

/// How an action went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionOutcome {
    /// Done: the trace saved, the signal sent, the command exited 0.
    Ok,
    /// Not done, or the command exited otherwise.
    Failed,
    /// The command ran past its timeout and was killed.
    TimedOut,
}

/// One action run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRun {
    pub trigger: ActionTrigger,
    /// `trace`, `signal` or `shell`.
    pub action: String,
    /// Seconds from the start of the run to the action's start.
    pub at_s: f64,
    /// The test and series whose sample crossed (threshold only).
    pub test: Option<String>,
    pub series: Option<String>,
    /// The crossing series' CPU (threshold only, when it is pinned).
    pub cpu: Option<usize>,
    /// The window (second of its test, from 0) of the crossing (threshold
    /// only): with `continue`, each crossing acted on in a test has its own.
    pub window: Option<u64>,
    pub outcome: ActionOutcome,
    /// What was done, or why it failed: `signal 10 to pid 4242`,
    /// `CPU 1's trace (5 120 lines) saved to t.txt`, `No such process`.
    pub detail: String,
    /// A shell command's end: `exit code 0`, `signal 9`.
    pub exit_status: Option<String>,
    /// The first lines a shell command wrote (standard output and error).
    pub output: Vec<String>,
    /// What the command wrote beyond those lines: counted, not kept (its
    /// output is read as it runs, so that it costs no memory).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_bytes_dropped: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_lines_dropped: u64,
    /// What was ended in the command's process group after its shell ended
    /// or timed out (`1 process it left running ended with SIGTERM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_ended: Option<String>,
    /// How long the action took, seconds.
    pub duration_s: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The runs the console lists; the others are counted (the JSON has all).
pub const RUNS_SHOWN: usize = 5;

impl ActionLog {
    /// The console's lines: the first `RUNS_SHOWN` runs, the rest counted,
    /// the crossings not acted on.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .runs
            .iter()
            .take(RUNS_SHOWN)
            .map(ActionRun::line)
            .collect();
        if self.runs.len() > RUNS_SHOWN {
            lines.push(format!(
                "action: {} more runs (in the JSON report)",
                self.runs.len() - RUNS_SHOWN
            ));
        }
        if self.crossings_not_acted > 0 {
            lines.push(format!(
                "action: {} crossings not acted on: the actions of an earlier one still ran",
                self.crossings_not_acted
            ));
        }
        lines
    }
}

impl ActionRun {
    /// `action: on threshold (timer CPU 1): shell: ok: 'x' ended with exit code 0`
    pub fn line(&self) -> String {
        let when = match self.trigger {
            ActionTrigger::Threshold => {
                let place: Vec<&str> = [self.test.as_deref(), self.series.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect();
                if place.is_empty() {
                    "on threshold".to_string()
                } else {
                    format!("on threshold ({})", place.join(" "))
                }
            }
            ActionTrigger::End => "on end".to_string(),
        };
        let outcome = match self.outcome {
            ActionOutcome::Ok => "ok",
            ActionOutcome::Failed => "failed",
            ActionOutcome::TimedOut => "timed out",
        };
        format!(
            "action: {when}: {}: {outcome}: {}",
            self.action, self.detail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trigger: ActionTrigger, outcome: ActionOutcome) -> ActionRun {
        ActionRun {
            trigger,
            action: "shell".into(),
            at_s: 1.5,
            test: Some("timer".into()),
            series: Some("CPU 1".into()),
            cpu: Some(1),
            window: Some(0),
            outcome,
            detail: "'true' ended with exit code 0".into(),
            exit_status: Some("exit code 0".into()),
            output: Vec::new(),
            output_bytes_dropped: 0,
            output_lines_dropped: 0,
            group_ended: None,
            duration_s: 0.01,
        }
    }

    #[test]
    fn the_console_lines_name_the_crossing_and_count_the_rest() {
        let mut log = ActionLog {
            runs: vec![run(ActionTrigger::Threshold, ActionOutcome::Ok)],
            ..ActionLog::default()
        };
        assert_eq!(
            log.lines(),
            ["action: on threshold (timer CPU 1): shell: ok: 'true' ended with exit code 0"]
        );
        log.runs = (0..7)
            .map(|_| run(ActionTrigger::End, ActionOutcome::TimedOut))
            .collect();
        log.crossings_not_acted = 2;
        let lines = log.lines();
        assert_eq!(lines.len(), RUNS_SHOWN + 2);
        assert_eq!(
            lines[0],
            "action: on end: shell: timed out: 'true' ended with exit code 0"
        );
        assert_eq!(
            lines[RUNS_SHOWN],
            "action: 2 more runs (in the JSON report)"
        );
        assert_eq!(
            lines[RUNS_SHOWN + 1],
            "action: 2 crossings not acted on: the actions of an earlier one still ran"
        );
    }
}
