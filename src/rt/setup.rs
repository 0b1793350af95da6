//! The moment between starting measuring threads and measuring: every
//! thread has set itself up (pinned, policy, memory touched) or one failed,
//! or the user stopped the run first. Shared by the tests whose controller
//! starts one thread per CPU (timer, noise).

use std::time::Duration;

/// How the wait for the threads' set-up ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetUp {
    /// Every thread is ready.
    Ready,
    /// A stop signal came first.
    Stopped,
}

/// Waits, in steps of 5 ms of `wait_for_stop` (true: a stop signal came),
/// until `all_ready` or a thread reports `first_error` (Err, the error).
pub fn wait_until_set_up(
    first_error: impl Fn() -> Option<String>,
    all_ready: impl Fn() -> bool,
    wait_for_stop: &mut dyn FnMut(Duration) -> bool,
) -> Result<SetUp, String> {
    loop {
        if let Some(e) = first_error() {
            return Err(e);
        }
        if all_ready() {
            return Ok(SetUp::Ready);
        }
        if wait_for_stop(Duration::from_millis(5)) {
            return Ok(SetUp::Stopped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn an_error_wins_over_readiness_and_a_stop_ends_the_wait() {
        let never = &mut |_| false;
        assert_eq!(
            wait_until_set_up(|| Some("no CPU 9".into()), || true, never),
            Err("no CPU 9".to_string())
        );
        let polls = Cell::new(0);
        let ready = || {
            polls.set(polls.get() + 1);
            polls.get() == 3
        };
        assert_eq!(wait_until_set_up(|| None, ready, never), Ok(SetUp::Ready));
        assert_eq!(polls.get(), 3);
        assert_eq!(
            wait_until_set_up(|| None, || false, &mut |_| true),
            Ok(SetUp::Stopped)
        );
    }
}
