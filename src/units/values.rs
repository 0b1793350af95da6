//! The values latscope's options take, read once: one parser per kind
//! (whole numbers, priorities, intervals, durations, sizes, CPU lists), each
//! refusal one line naming the option and what to give, and the defaults the
//! help prints and the settings use. Pure (no system call): cli/ builds its
//! clap value parsers on these functions and takes its `[default: ...]`
//! from these constants; settings/ receives the typed values and checks only
//! what needs several options together (or the machine).
//!
//! Every parser has the shape `fn(option, text)`: `option` is the option as
//! the messages name it (`-i/--interval`, `--max-latency`).

use super::{parse_duration, shown};
use std::time::Duration;

// ---- defaults and bounds

/// Most pairs an rt-tests style test runs (`-t`).
pub const MAX_PAIRS: u64 = 255;
/// `-t`'s default in the pair tests: one pair.
pub const DEFAULT_PAIRS: u64 = 1;
/// `-i`'s default in the pair tests (pmqtest's), in microseconds.
pub const DEFAULT_PAIR_INTERVAL_US: u64 = 1000;
/// `-d`'s default: what each further pair adds to the interval (us).
pub const DEFAULT_DISTANCE_US: u64 = 500;
/// `-p`'s default in the pair tests: 0, normal priority.
pub const DEFAULT_PAIR_PRIORITY: u64 = 0;
/// `-l`'s default: 0, until stopped.
pub const DEFAULT_LOOPS: u64 = 0;
/// Longest interval accepted: one hour (longer is surely a typo in microseconds).
pub const MAX_INTERVAL_US: u64 = 3_600_000_000;
/// `latscope ipc`'s interval (us; pmqtest's usual `-i100`) when -i is not
/// given, and its priority when -p is not given and real-time scheduling is
/// allowed; the suite's IPC tests use them too.
pub const DEFAULT_INTERVAL_US: u64 = 100;
pub const DEFAULT_RT_PRIORITY: u64 = 99;
/// `latscope ipc`'s time per primitive when neither -D nor -l is given:
/// nine primitives in about a minute.
pub const DEFAULT_TIME_PER_PRIMITIVE: Duration = Duration::from_secs(6);
/// semtest's `-i` (iterations) and `-I` (interval, us) defaults.
pub const DEFAULT_SEM_ITERATIONS: u64 = 10_000;
pub const DEFAULT_SEM_INTERVAL_US: u64 = 1000;
/// Linux's real-time priorities (SCHED_FIFO and SCHED_RR: 1..MAX_RT_PRIO-1).
pub const REALTIME_PRIORITIES: (u64, u64) = (1, 99);

/// `latscope timer`'s period (us) unless `-p` says otherwise.
pub const DEFAULT_PERIOD_US: u64 = 100;
/// `-H`'s default: Xenomai's code uses 300 cells (its help says 200).
pub const DEFAULT_CELLS: usize = 300;
/// The most cells a Xenomai histogram may have (8 MiB of counts each; `-H`,
/// and a JSON document read back). The original has no limit but memory;
/// latscope refuses more, so that neither a typo in `-H` nor a JSON
/// document can ask for gigabytes.
pub const MAX_CELLS: usize = 1 << 20;
/// `-B`'s default cell width, in nanoseconds.
pub const DEFAULT_BUCKET_NS: u64 = 1000;
/// Widest histogram cell: one second.
pub const MAX_BUCKET_NS: u64 = 1_000_000_000;
/// `-l`'s default: RTD lines between two RTT/RTH header pairs.
pub const DEFAULT_DATA_LINES: u64 = 21;
/// Xenomai refuses periods above one second.
pub const MAX_PERIOD_US: u64 = 1_000_000;
/// `-t`'s default: 0, the user-space wake-up (1 thread latency, 2 IRQ latency).
pub const DEFAULT_TEST_MODE: u8 = 0;
/// `-c`'s default where this process may use it (else the first usable CPU).
pub const DEFAULT_TIMER_CPU: usize = 0;
/// A duration of zero: no limit, the run ends on Ctrl-C (the timer's `-T`).
pub const UNTIL_STOPPED: &str = "0";
/// `--warmup`'s default, and its bound (one hour of one-second loops).
pub const DEFAULT_WARMUP_LOOPS: u64 = 1;
pub const MAX_WARMUP_LOOPS: u64 = 3600;
/// Highest CPU number `--cpus` and `-c` accept (the kernel's CPU_SETSIZE).
pub const MAX_CPU: usize = 1023;

/// `latscope noise`: a gap above this is an interruption unless
/// `--threshold` says otherwise (clap reads the text as it reads the option;
/// the suite uses the number, the same: a unit test holds them together);
/// at most a second: an interruption longer than that is no noise to set a
/// threshold against.
pub const DEFAULT_NOISE_THRESHOLD: &str = "1us";
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;
pub const MAX_THRESHOLD_NS: u64 = 1_000_000_000;
/// The duty cycle's period unless `--period` says otherwise (osnoise's; the
/// text and the number as for the threshold); at most a minute (the off
/// time is slept in slices anyway).
pub const DEFAULT_NOISE_PERIOD: &str = "1s";
pub const DEFAULT_NOISE_PERIOD_NS: u64 = 1_000_000_000;
pub const MAX_NOISE_PERIOD_NS: u64 = 60_000_000_000;
/// `-p`'s default under the default policy (other); a real-time policy
/// without -p runs at 1.
pub const DEFAULT_NOISE_PRIORITY: u64 = 0;

/// mqldt's defaults (`--fileSize`, `--numFiles`, `--alignment`; `--qm` 1
/// and `--delay` 0), which its options block prints as "specified or
/// defaulted to", and its `--duration` (seconds; clap reads the text as it
/// reads the option).
pub const DEFAULT_FILE_SIZE: u64 = 1_638_400;
pub const DEFAULT_NUM_FILES: u64 = 8;
pub const DEFAULT_LOGDISK_DURATION: &str = "10";
pub const DEFAULT_ALIGNMENT: u64 = 4096;
pub const DEFAULT_WRITERS: u64 = 1;
pub const DEFAULT_DELAY_US: u64 = 0;
/// mqldt does nothing without `--bsize`; latscope writes 4 KiB (a small log
/// write, the size MQ's log page has) unless told otherwise: the number,
/// and the text clap reads as it reads the option (a unit test holds them
/// together).
pub const DEFAULT_BLOCK_SIZE: u64 = 4096;
pub const DEFAULT_BLOCK_SIZES: &str = "4K";
/// Bounds, so that hostile input cannot allocate or write without limit.
pub const MAX_BLOCK_SIZE: u64 = 64 << 20;
pub const MAX_FILE_SIZE: u64 = 1 << 40;
pub const MAX_NUM_FILES: u64 = 10_000;
pub const MAX_WRITERS: u64 = 10;
pub const MAX_BLOCK_SIZES: usize = 64;
pub const MAX_ALIGNMENT: u64 = 1 << 20;
/// Longest think time between writes: one minute.
pub const MAX_DELAY_US: u64 = 60_000_000;
/// Shortest and longest run per block size: one second, one week.
pub const MIN_LOGDISK_DURATION: Duration = Duration::from_secs(1);
pub const MAX_LOGDISK_DURATION: Duration = Duration::from_secs(7 * 86_400);

/// `latscope suite`'s total time unless -D says otherwise (clap reads it as
/// it reads -D), and the least it takes.
pub const DEFAULT_SUITE_DURATION: &str = "10s";
pub const MIN_SUITE_DURATION: Duration = Duration::from_millis(100);

/// `--samples-limit`: the default (1 GiB, about 67 million samples) and the
/// least (the header and a few records).
pub const DEFAULT_SAMPLES_LIMIT_BYTES: u64 = 1 << 30;
pub const MIN_SAMPLES_LIMIT_BYTES: u64 = 4096;

const SECOND_NS: u128 = 1_000_000_000;
const MICROSECOND_NS: u128 = 1_000;

// ---- parsers

/// A whole non-negative number.
pub fn count(option: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    let text = shown(text);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        let why = if t.starts_with('-') {
            "must not be negative"
        } else {
            "must be a whole number"
        };
        return Err(format!("{option} '{text}' {why} (e.g. {option} 100)"));
    }
    t.parse()
        .map_err(|_| format!("{option} '{text}' is too large (at most {})", u64::MAX))
}

/// A whole number of at least 1.
pub fn positive(option: &str, text: &str) -> Result<u64, String> {
    match count(option, text)? {
        0 => Err(format!("{option} must be at least 1")),
        n => Ok(n),
    }
}

/// `count` within `..=max`; `why` says what the bound is for.
fn at_most(option: &str, n: u64, max: u64, why: &str) -> Result<u64, String> {
    if n > max {
        return Err(format!("{option} {n}: {why}"));
    }
    Ok(n)
}

/// A whole number of microseconds for an interval (0 = back to back), at
/// most one hour.
pub fn interval_us(option: &str, text: &str) -> Result<u64, String> {
    let us = count(option, text)?;
    if us > MAX_INTERVAL_US {
        return Err(format!(
            "{option} {us} us exceeds one hour: use a smaller interval"
        ));
    }
    Ok(us)
}

/// A priority: a whole number. One too large to read is not "too large (at
/// most 18446744073709551615)": it is outside the priority range of every
/// policy, and the error says the real-time range. (The range of the policy
/// chosen is checked with the policy, in settings.)
pub fn priority(option: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    match count(option, text) {
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            let (low, high) = REALTIME_PRIORITIES;
            let short = option.split('/').next().unwrap_or(option);
            Err(format!(
                "priority {} is outside the real-time range {low}..{high}: use {short} {low}..{high}",
                shown(t)
            ))
        }
        other => other,
    }
}

/// `-t N` or bare `-t` (one pair per usable CPU), `-a PROC` or bare `-a`
/// (pair N on CPU N): a number, or all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberOrAll {
    Number(u64),
    All,
}

/// The word a bare `-t` or `-a` stands for.
pub const ALL: &str = "all";

pub fn number_or_all(option: &str, text: &str) -> Result<NumberOrAll, String> {
    if text == ALL {
        return Ok(NumberOrAll::All);
    }
    count(option, text).map(NumberOrAll::Number)
}

/// A duration whose bare number is seconds (`-D 10`, `-D 1h30m`), zero
/// included (where zero means "no limit").
pub fn duration(option: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text, SECOND_NS).map_err(|e| format!("{option}: {e}"))
}

/// A duration whose bare number is seconds, longer than zero.
pub fn seconds(option: &str, text: &str) -> Result<Duration, String> {
    let d = duration(option, text)?;
    if d.is_zero() {
        return Err(format!("{option} must be longer than 0"));
    }
    Ok(d)
}

/// The suite's total time: a duration of at least `MIN_SUITE_DURATION`.
pub fn suite_duration(option: &str, text: &str) -> Result<Duration, String> {
    let d = duration(option, text)?;
    if d < MIN_SUITE_DURATION {
        return Err(format!("{option} must be at least 100ms"));
    }
    Ok(d)
}

/// A time whose bare number is microseconds (`--threshold 5`, `--runtime
/// 500ms`), longer than zero, in nanoseconds.
pub fn micros_or_unit(option: &str, text: &str) -> Result<u64, String> {
    let d = parse_duration(text, MICROSECOND_NS).map_err(|e| format!("{option}: {e}"))?;
    if d.is_zero() {
        return Err(format!("{option} '{}' must be longer than 0", shown(text)));
    }
    Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The noise threshold: a time (bare number: us) of at most one second, in ns.
pub fn noise_threshold_ns(option: &str, text: &str) -> Result<u64, String> {
    let ns = micros_or_unit(option, text)?;
    if ns > MAX_THRESHOLD_NS {
        return Err(format!(
            "{option}: at most 1 s, not {}",
            super::format_ns(ns.min(i64::MAX as u64) as i64)
        ));
    }
    Ok(ns)
}

/// The noise duty cycle's period: a time (bare number: us) of at most a minute, in ns.
pub fn noise_period_ns(option: &str, text: &str) -> Result<u64, String> {
    let ns = micros_or_unit(option, text)?;
    if ns > MAX_NOISE_PERIOD_NS {
        return Err(format!("{option}: at most 60 s"));
    }
    Ok(ns)
}

/// A size as mqldt's options take it: plain bytes or a number with a `K`
/// (KiB) or `M` (MiB) suffix, and `G` (GiB) and `T` (TiB) where `allow_g`;
/// either case; `B`, `KiB`, `MiB`, `GiB` too, with or without one blank
/// before them. Zero, signs, other suffixes and overflow are refused.
pub fn size(option: &str, text: &str, allow_g: bool) -> Result<u64, String> {
    let t = text.trim();
    let example = if allow_g {
        "4096, 64K, 1M or 2G"
    } else {
        "4096, 64K or 1M"
    };
    let bad = |why: &str| {
        format!(
            "{option} '{}' {why} (e.g. {option} {})",
            shown(text),
            example.split(',').next().unwrap_or("4096")
        )
    };
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits_end);
    if number.is_empty() {
        return Err(bad(if t.starts_with('-') {
            "must not be negative"
        } else {
            "is not a size"
        }));
    }
    // `4K` as mqldt writes it, and `4 KiB` as latscope prints sizes
    // (`units::format_bytes`), so a size copied from a table reads back.
    let unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" | " b" => 1,
        "k" | "kib" | " kib" => 1 << 10,
        "m" | "mib" | " mib" => 1 << 20,
        "g" | "gib" | " gib" if allow_g => 1 << 30,
        // latscope prints 1 TiB (the largest --fileSize) as `1 TiB`.
        "t" | "tib" | " tib" if allow_g => 1 << 40,
        _ => {
            return Err(format!(
                "{option} '{}': unknown size suffix '{}' (use bytes, or K or M{}: {example})",
                shown(text),
                shown(suffix),
                if allow_g { " or G" } else { "" }
            ));
        }
    };
    let value = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| bad("is too large"))?;
    if value == 0 {
        return Err(bad("must be at least 1 byte"));
    }
    Ok(value)
}

/// A count within `low..=high`.
fn within(option: &str, text: &str, low: u64, high: u64) -> Result<u64, String> {
    let n = count(option, text)?;
    if !(low..=high).contains(&n) {
        return Err(format!("{option} {n}: must be {low}..{high}"));
    }
    Ok(n)
}

/// `--numFiles`: test files per writer.
pub fn num_files(option: &str, text: &str) -> Result<u64, String> {
    within(option, text, 1, MAX_NUM_FILES)
}

/// `--qm`: concurrent writers.
pub fn writers(option: &str, text: &str) -> Result<u64, String> {
    within(option, text, 1, MAX_WRITERS)
}

/// `--delay`: think time between two writes, in microseconds.
pub fn delay_us(option: &str, text: &str) -> Result<u64, String> {
    within(option, text, 0, MAX_DELAY_US)
}

/// `--alignment`: a power of two up to `MAX_ALIGNMENT`, or 0 (the
/// filesystem's block size, which settings looks up).
pub fn alignment(option: &str, text: &str) -> Result<u64, String> {
    match count(option, text)? {
        n if n == 0 || (n.is_power_of_two() && n <= MAX_ALIGNMENT) => Ok(n),
        n => Err(format!(
            "{option} {n}: a power of two up to {MAX_ALIGNMENT} (or 0 for the filesystem's block size)"
        )),
    }
}

/// `--fileSize`: a size (K/M/G/T) of at most 1 TiB.
pub fn file_size(option: &str, text: &str) -> Result<u64, String> {
    let bytes = size(option, text, true)?;
    if bytes > MAX_FILE_SIZE {
        return Err(format!("{option} {bytes}: at most {MAX_FILE_SIZE} (1 TiB)"));
    }
    Ok(bytes)
}

/// `--bsize`'s sizes as one option value (clap takes a `Vec` field for an
/// option given many times), with the text as given: mqldt's options block
/// prints that (`5K,9K,17K`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSizes {
    pub sizes: Vec<u64>,
    pub text: String,
}

/// `--bsize`: one size or a comma list (K/M), each at most `MAX_BLOCK_SIZE`,
/// at most `MAX_BLOCK_SIZES` of them.
pub fn block_sizes(option: &str, text: &str) -> Result<BlockSizes, String> {
    let sizes = text
        .split(',')
        .map(|t| size(option, t, false))
        .collect::<Result<Vec<u64>, _>>()?;
    if sizes.len() > MAX_BLOCK_SIZES {
        return Err(format!(
            "{option}: at most {MAX_BLOCK_SIZES} block sizes in one run"
        ));
    }
    if let Some(b) = sizes.iter().find(|&&b| b > MAX_BLOCK_SIZE) {
        return Err(format!(
            "{option} {b}: at most {} per write",
            super::format_bytes(MAX_BLOCK_SIZE)
        ));
    }
    Ok(BlockSizes {
        sizes,
        text: text.to_string(),
    })
}

/// The log-disk test's time per block size: 1 s to 7 days.
pub fn logdisk_duration(option: &str, text: &str) -> Result<Duration, String> {
    let d = duration(option, text)?;
    if d < MIN_LOGDISK_DURATION {
        return Err(format!("{option} '{}': at least 1 second", shown(text)));
    }
    if d > MAX_LOGDISK_DURATION {
        return Err(format!(
            "{option} '{}': at most 7 days per block size",
            shown(text)
        ));
    }
    Ok(d)
}

/// `--samples-limit`: a size (up to T suffixes) of at least 4 KiB.
pub fn samples_limit(option: &str, text: &str) -> Result<u64, String> {
    let bytes = size(option, text, true)?;
    if bytes < MIN_SAMPLES_LIMIT_BYTES {
        return Err(format!(
            "{option} '{}' is below 4K: the file needs room for its header and records (e.g. {option} 64M)",
            shown(text)
        ));
    }
    Ok(bytes)
}

/// A CPU list (`0,2-3`), each CPU named once, bounded by `MAX_CPU` so that a
/// hostile range cannot allocate.
pub fn cpu_list(option: &str, text: &str) -> Result<Vec<usize>, String> {
    let bad = || {
        format!(
            "{option} '{}' is not a CPU list (e.g. {option} 0,2-3)",
            shown(text)
        )
    };
    let number = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match t.parse::<usize>() {
            Ok(n) if n <= MAX_CPU => Ok(n),
            _ => Err(format!(
                "{option}: CPU {} is beyond the highest CPU number {MAX_CPU}",
                shown(t)
            )),
        }
    };
    let mut cpus = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    // A CPU named twice (1,1 or 0-2,1) is a slip: refused rather than
    // measured once without a word.
    if let Some(w) = cpus.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "{option} '{}' names CPU {} twice: name each CPU once",
            shown(text),
            w[0]
        ));
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    Ok(cpus)
}

/// A CPU list as one option value (clap takes a `Vec` field for an option
/// given many times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// `cpu_list` as one value.
pub fn cpus(option: &str, text: &str) -> Result<CpuList, String> {
    cpu_list(option, text).map(CpuList)
}

/// One CPU number (`-c`), at most `MAX_CPU`.
pub fn cpu(option: &str, text: &str) -> Result<usize, String> {
    let n = count(option, text)?;
    usize::try_from(n)
        .ok()
        .filter(|&c| c <= MAX_CPU)
        .ok_or_else(|| format!("{option} {n}: no such CPU"))
}

/// The timer's period in microseconds: 1 us to 1 s (how short this machine
/// can serve is checked in settings).
pub fn period_us(option: &str, text: &str) -> Result<u64, String> {
    let us = positive(option, text)?;
    at_most(
        option,
        us,
        MAX_PERIOD_US,
        &format!("the period cannot be longer than 1 s ({MAX_PERIOD_US} us)"),
    )
}

/// `-H`: histogram cells, 1 to `MAX_CELLS`.
pub fn histogram_cells(option: &str, text: &str) -> Result<usize, String> {
    let n = positive(option, text)?;
    let n = at_most(
        option,
        n,
        MAX_CELLS as u64,
        &format!("at most {MAX_CELLS} histogram cells; use a wider -B instead"),
    )?;
    Ok(n as usize)
}

/// `-B`: a histogram cell's width in ns, 1 ns to 1 s.
pub fn bucket_ns(option: &str, text: &str) -> Result<u64, String> {
    let n = positive(option, text)?;
    at_most(
        option,
        n,
        MAX_BUCKET_NS,
        &format!("a histogram cell can be at most 1 s ({MAX_BUCKET_NS} ns) wide"),
    )
}

/// The timer's `-t`: 0 user-space wake-up, 1 thread latency, 2 IRQ latency.
pub fn test_mode(option: &str, text: &str) -> Result<u8, String> {
    match text.trim() {
        "0" => Ok(0),
        "1" => Ok(1),
        "2" => Ok(2),
        other => Err(format!(
            "{option} '{}' is not a test mode: use 0 (user-space wake-up), 1 (thread latency) or 2 (IRQ latency)",
            shown(other)
        )),
    }
}

/// `--warmup`: loops discarded, at most one hour's.
pub fn warmup_loops(option: &str, text: &str) -> Result<u64, String> {
    let n = count(option, text)?;
    at_most(
        option,
        n,
        MAX_WARMUP_LOOPS,
        &format!("at most {MAX_WARMUP_LOOPS} loops (one hour)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_their_refusals() {
        assert_eq!(count("-l", " 42 "), Ok(42));
        assert_eq!(count("-l", "18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            count("-l", "-5"),
            Err("-l '-5' must not be negative (e.g. -l 100)".into())
        );
        assert_eq!(
            count("-l", ""),
            Err("-l '' must be a whole number (e.g. -l 100)".into())
        );
        assert_eq!(
            count("-l", "1e3"),
            Err("-l '1e3' must be a whole number (e.g. -l 100)".into())
        );
        assert_eq!(
            count("-l", "18446744073709551616"),
            Err("-l '18446744073709551616' is too large (at most 18446744073709551615)".into())
        );
        assert_eq!(positive("-b", "0"), Err("-b must be at least 1".into()));
        assert_eq!(positive("-b", "7"), Ok(7));
    }

    #[test]
    fn intervals_priorities_and_all() {
        assert_eq!(interval_us("-i", "3600000000"), Ok(MAX_INTERVAL_US));
        assert_eq!(
            interval_us("-i", "3600000001"),
            Err("-i 3600000001 us exceeds one hour: use a smaller interval".into())
        );
        assert_eq!(priority("-p/--prio", "80"), Ok(80));
        assert_eq!(
            priority("-p/--prio", "99999999999999999999"),
            Err(
                "priority 99999999999999999999 is outside the real-time range 1..99: use -p 1..99"
                    .into()
            )
        );
        assert_eq!(
            priority("-p/--prio", "-1"),
            Err("-p/--prio '-1' must not be negative (e.g. -p/--prio 100)".into())
        );
        assert_eq!(number_or_all("-t", "all"), Ok(NumberOrAll::All));
        assert_eq!(number_or_all("-t", "3"), Ok(NumberOrAll::Number(3)));
        assert!(number_or_all("-t", "ALL").is_err());
    }

    #[test]
    fn durations_in_seconds_and_micros() {
        assert_eq!(seconds("-D", "1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(seconds("-D", "0.5m"), Ok(Duration::from_secs(30)));
        assert_eq!(seconds("-D", "0"), Err("-D must be longer than 0".into()));
        assert_eq!(duration("-T", "0"), Ok(Duration::ZERO));
        assert!(seconds("-D", "5x").is_err_and(|e| e.starts_with("-D: unknown unit")));
        assert_eq!(micros_or_unit("--threshold", "5"), Ok(5_000));
        assert_eq!(micros_or_unit("--threshold", "2ms"), Ok(2_000_000));
        assert_eq!(
            micros_or_unit("--threshold", "0ns"),
            Err("--threshold '0ns' must be longer than 0".into())
        );
    }

    #[test]
    fn the_noise_defaults_read_as_their_numbers() {
        assert_eq!(
            noise_threshold_ns("--threshold", DEFAULT_NOISE_THRESHOLD),
            Ok(DEFAULT_THRESHOLD_NS)
        );
        assert_eq!(
            noise_period_ns("--period", DEFAULT_NOISE_PERIOD),
            Ok(DEFAULT_NOISE_PERIOD_NS)
        );
        assert_eq!(
            noise_threshold_ns("--threshold", "2s"),
            Err("--threshold: at most 1 s, not 2.00 s".into())
        );
        assert_eq!(
            noise_period_ns("--period", "2m"),
            Err("--period: at most 60 s".into())
        );
        assert_eq!(
            suite_duration("-D", DEFAULT_SUITE_DURATION),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            suite_duration("-D", "99ms"),
            Err("-D must be at least 100ms".into())
        );
    }

    #[test]
    fn sizes_parse_exactly() {
        let size = |t: &str| size("--bsize", t, false);
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("4K"), Ok(4096));
        assert_eq!(size("64k"), Ok(65536));
        assert_eq!(size("1M"), Ok(1_048_576));
        assert_eq!(size("1m"), Ok(1_048_576));
        assert_eq!(size(" 5K "), Ok(5120));
        assert_eq!(size("1"), Ok(1));
        for bad in [
            "4X",
            "-1",
            "0",
            "0K",
            "",
            "K",
            "4KB",
            "4 K",
            "4  KiB",
            "1.5K",
            "2G",
            "+4",
            "4K4",
            "99999999999999999999",
            "18014398509481984K",
        ] {
            let e = size(bad).expect_err(bad);
            assert!(e.starts_with("--bsize '"), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
        assert!(size("99999999999999999999").is_err_and(|e| e.contains("too large")));
    }

    #[test]
    fn sizes() {
        assert_eq!(size("--bsize", "4K", false), Ok(4096));
        assert_eq!(size("--bsize", "1 MiB", false), Ok(1 << 20));
        assert_eq!(size("--fileSize", "2g", true), Ok(2 << 30));
        assert_eq!(
            size("--bsize", "2G", false),
            Err(
                "--bsize '2G': unknown size suffix 'G' (use bytes, or K or M: 4096, 64K or 1M)"
                    .into()
            )
        );
        assert_eq!(
            size("--bsize", "0", false),
            Err("--bsize '0' must be at least 1 byte (e.g. --bsize 4096)".into())
        );
        assert_eq!(
            size("--bsize", "-4K", false),
            Err("--bsize '-4K' must not be negative (e.g. --bsize 4096)".into())
        );
        assert!(size("--fileSize", "99999999999T", true).is_err_and(|e| e.contains("too large")));
        assert_eq!(samples_limit("--samples-limit", "64M"), Ok(64 << 20));
        assert!(samples_limit("--samples-limit", "4095").is_err_and(|e| e.contains("below 4K")));
    }

    #[test]
    fn log_disk_values() {
        assert_eq!(
            block_sizes("--bsize", DEFAULT_BLOCK_SIZES).map(|b| b.sizes),
            Ok(vec![DEFAULT_BLOCK_SIZE])
        );
        assert_eq!(
            logdisk_duration("-D", DEFAULT_LOGDISK_DURATION),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            block_sizes("--bsize", "4K,64K,1M"),
            Ok(BlockSizes {
                sizes: vec![4096, 65536, 1 << 20],
                text: "4K,64K,1M".into()
            })
        );
        assert_eq!(
            block_sizes("--bsize", "128M"),
            Err("--bsize 134217728: at most 64 MiB per write".into())
        );
        assert!(
            block_sizes("--bsize", &["4K"; 65].join(","))
                .is_err_and(|e| e.contains("at most 64 block sizes"))
        );
        assert_eq!(
            num_files("--numFiles", "0"),
            Err("--numFiles 0: must be 1..10000".into())
        );
        assert_eq!(writers("--qm", "10"), Ok(10));
        assert_eq!(
            delay_us("--delay", "60000001"),
            Err("--delay 60000001: must be 0..60000000".into())
        );
        assert_eq!(alignment("--alignment", "0"), Ok(0));
        assert_eq!(alignment("--alignment", "512"), Ok(512));
        assert!(alignment("--alignment", "3000").is_err_and(|e| e.contains("a power of two")));
        assert_eq!(file_size("--fileSize", "1T"), Ok(1 << 40));
        assert!(file_size("--fileSize", "2T").is_err_and(|e| e.contains("at most")));
        assert_eq!(
            logdisk_duration("-D", "0.5"),
            Err("-D '0.5': at least 1 second".into())
        );
        assert!(logdisk_duration("-D", "8d").is_err_and(|e| e.contains("at most 7 days")));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("--cpus", "0,2-3"), Ok(vec![0, 2, 3]));
        assert_eq!(
            cpu_list("--cpus", "0,2-3,2"),
            Err("--cpus '0,2-3,2' names CPU 2 twice: name each CPU once".into())
        );
        assert!(cpu_list("--cpus", "1,1").is_err());
        assert_eq!(cpu_list("--cpus", " 1 "), Ok(vec![1]));
        for bad in ["", ",", "a", "0-", "1-0"] {
            assert_eq!(
                cpu_list("--cpus", bad),
                Err(format!(
                    "--cpus '{bad}' is not a CPU list (e.g. --cpus 0,2-3)"
                ))
            );
        }
        assert_eq!(
            cpu_list("--cpus", "0-99999999999"),
            Err("--cpus: CPU 99999999999 is beyond the highest CPU number 1023".into())
        );
        assert_eq!(cpu("-c", "1023"), Ok(1023));
        assert_eq!(cpu("-c", "4096"), Err("-c 4096: no such CPU".into()));
    }

    #[test]
    fn timer_bounds() {
        assert_eq!(period_us("-p", "1000000"), Ok(1_000_000));
        assert_eq!(
            period_us("-p", "1000001"),
            Err("-p 1000001: the period cannot be longer than 1 s (1000000 us)".into())
        );
        assert_eq!(period_us("-p", "0"), Err("-p must be at least 1".into()));
        assert!(histogram_cells("-H", "99999999").is_err_and(|e| e.contains("at most")));
        assert!(bucket_ns("-B", "1000000001").is_err_and(|e| e.contains("at most 1 s")));
        assert_eq!(
            warmup_loops("--warmup", "99999"),
            Err("--warmup 99999: at most 3600 loops (one hour)".into())
        );
    }
}
