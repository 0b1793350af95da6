//! rt-tests 2.x pi_stress's exact outputs: its banner, its running
//! `Current Inversions:` line (redrawn in place with cursor-up), its final
//! lines and its `--json` part (`inversion`, which Linaro's test-definitions
//! read with `return_code`).

/// A thread type's scheduling as the banner shows it: rt-tests'
/// `policy_to_string` name and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedShown {
    pub policy: &'static str,
    pub detail: SchedDetail,
}

/// What `print_sched_attr` prints after the policy's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedDetail {
    /// SCHED_FIFO, SCHED_RR.
    Priority(i32),
    /// SCHED_OTHER.
    Nice(i32),
    /// SCHED_DEADLINE: runtime, deadline, period (ns).
    Reservation(u64, u64, u64),
    /// SCHED_BATCH, SCHED_IDLE: nothing, not even the newline (as there).
    Nothing,
}

/// The escape before each redraw of the progress line.
pub const UP_ONE: &str = "\x1b[1A";
/// The escape before `Stopping test`.
pub const DOWN_ONE: &str = "\x1b[1B";

/// One thread type's line of the banner (pi_stress's `print_sched_attr`).
pub fn sched_line(name: &str, sa: &SchedShown) -> String {
    let what = match sa.detail {
        SchedDetail::Priority(p) => format!(" priority {p}\n"),
        SchedDetail::Reservation(runtime, deadline, period) => {
            format!(" runtime {runtime} deadline {deadline} period {period}\n")
        }
        SchedDetail::Nice(n) => format!(" nice {n}\n"),
        SchedDetail::Nothing => String::new(),
    };
    format!("    {name:>6} thread {}{what}", sa.policy)
}

/// What the banner shows of a run.
pub struct Banner<'a> {
    pub groups: usize,
    pub duration_s: Option<u64>,
    pub inversions: Option<u64>,
    pub admin: &'a SchedShown,
    pub high: &'a SchedShown,
    pub med: &'a SchedShown,
    pub low: &'a SchedShown,
}

/// pi_stress's banner (not with `-q`).
pub fn banner(b: &Banner) -> String {
    let duration = b
        .duration_s
        .map_or("infinite".to_string(), |d| format!("{d} seconds"));
    let inversions = b
        .inversions
        .map_or("unlimited".to_string(), |n| n.to_string());
    format!(
        "Starting PI Stress Test\nNumber of thread groups: {}\nDuration of test run: {duration}\n\
         Number of inversions per group: {inversions}\n{}{} groups of 3 threads will be created\n{}{}{}\n",
        b.groups,
        sched_line("Admin", b.admin),
        b.groups,
        sched_line("High", b.high),
        sched_line("Med", b.med),
        sched_line("Low", b.low),
    )
}

/// One redraw of the progress line.
pub fn progress_line(total: u64) -> String {
    format!("{UP_ONE}Current Inversions: {total}\n")
}

/// The lines at the end: the total and the run's length (whole seconds, as
/// `gmtime` of the difference splits it).
pub fn summary(total: u64, seconds: u64) -> String {
    format!(
        "Total inversion performed: {total}\nTest Duration: {} days, {} hours, {} minutes, {} seconds\n",
        seconds / 86_400 % 365,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// pi_stress's part of its `--json` file.
pub fn json_body(total: u64) -> String {
    format!("  \"inversion\": {total}\n}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(policy: &'static str, detail: SchedDetail) -> SchedShown {
        SchedShown { policy, detail }
    }

    #[test]
    fn banner_is_pi_stresss() {
        let (admin, high, med, low) = (
            sa("SCHED_FIFO", SchedDetail::Priority(4)),
            sa("SCHED_DEADLINE", SchedDetail::Reservation(100, 200, 300)),
            sa("SCHED_OTHER", SchedDetail::Nice(0)),
            sa("SCHED_RR", SchedDetail::Priority(1)),
        );
        let b = Banner {
            groups: 1,
            duration_s: Some(2),
            inversions: None,
            admin: &admin,
            high: &high,
            med: &med,
            low: &low,
        };
        assert_eq!(
            banner(&b),
            "Starting PI Stress Test\nNumber of thread groups: 1\nDuration of test run: 2 seconds\n\
             Number of inversions per group: unlimited\n     Admin thread SCHED_FIFO priority 4\n\
             1 groups of 3 threads will be created\n      High thread SCHED_DEADLINE runtime 100 deadline 200 period 300\n\
             \x20      Med thread SCHED_OTHER nice 0\n       Low thread SCHED_RR priority 1\n\n"
        );
    }

    #[test]
    fn lines_and_json() {
        assert_eq!(progress_line(42), "\x1b[1ACurrent Inversions: 42\n");
        assert_eq!(
            summary(81947, 3),
            "Total inversion performed: 81947\nTest Duration: 0 days, 0 hours, 0 minutes, 3 seconds\n"
        );
        assert_eq!(
            summary(1, 90_061).lines().nth(1),
            Some("Test Duration: 1 days, 1 hours, 1 minutes, 1 seconds")
        );
        assert_eq!(json_body(7), "  \"inversion\": 7\n}\n");
    }
}
