//! mqldt's own output (IBM MQ Log Disk Tester), byte for byte, as pure
//! building blocks: each function takes plain values and returns finished
//! text (whole lines ending in `\n`, or the exact bytes of a progress piece),
//! so the `logdisk` exporter only concatenates and writes. An example run
//! (the seed's figures; `--bsize=128K`, 20 s, one writer, en_US.UTF-8):
//!
//! ```text
//!
//! Options (specified or defaulted to)
//! =====================================================================================
//! Write blocksize             (--bsize)              : 128K
//! Directory to write to       (--dir)                : /var/san1/testdir
//! Test file prefix            (--filePrefix)         : mqtestfile
//! Number of files to write to (--numFiles)           : 24
//! Size of test files          (--fileSize)           : 67108864
//! Test duration               (--duration)           : 20
//!
//! Creating files...for thread: 0
//! Executing test for write blocksize 131072 bytes (128KB). Seconds elapsed -> 20/20
//!
//! Total writes to files                                :          46,178
//! IOPS                                                 :           2,308
//! Total bytes written to files                         :   6,052,642,816
//! Max bytes/sec written to files (over 1 sec interval) :     311,689,216
//! Min bytes/sec written to files (over 1 sec interval) :     297,795,584
//! Avg bytes/sec written to files                       :     302,732,356
//!
//! Max latency of write (ns)      :       4,977,438 (#24,649)
//! Min bytes/sec (slowest write)  :      26,333,226
//! Min latency of write (ns)      :         375,889 (#42,421)
//! Max bytes/sec (fastest write)  :     348,698,688
//! Avg latency of write (ns)      :       4,935,648
//!
//! ```
//!
//! # The order of a run
//!
//! [`options_block`] (it starts with the empty line mqldt prints first); with
//! `--qm` > 1, [`qm_simulation_line`]; one [`creating_files_line`] per writer
//! (thread 0 for one writer, 1..=N with `--qm`); then for each block size in
//! turn (`--qm` > 1 allows only one): on stderr [`progress_start`] and one
//! [`progress_tick`] each time an interval of `logdisk::bandwidth::IntervalMeter` closes (first
//! writer only), on stdout [`progress_end`], [`totals_block`], an empty line,
//! [`latency_block`], an empty line. With `--csvFile`, [`csv_start`] is
//! written when the run starts (it says whether to truncate or append) and
//! one [`csv_row`] after each block size (with `--qm` > 1, after the
//! combined results).
//!
//! # Where the strings come from
//!
//! The labels, the column layout of the totals, latency and options blocks,
//! the `for thread` line, the `--qm` wording, the CSV header and rows, the
//! interval rule and the progress counter's backspaces are those of mqldt's
//! source (`src/fileio.c`, `src/util.c`, `src/opts.c`, `src/mqldt.c` of
//! ibm-messaging/mqldt, the newest versions readable here), checked against
//! glibc's `printf` on this machine. Three things are newer upstream than that
//! source and follow the newer upstream output instead: the `IOPS` line (placed
//! second, aligned like its neighbours), the progress line's wording
//! (`... %i bytes (%iKB). ...`; the source read has `... %i (%ik). ...`) and
//! the option lines for `--csvFile` and `--delay`. The layout of those option
//! lines is the other options' (`%-28s(--name)%*s: value`, the colon in
//! column 52), but their labels ([`CSV_FILE_LABEL`], [`DELAY_LABEL`]) and their
//! position (after `--qm`'s line, `--csvFile` first) are latscope's choice:
//! no source with them was available to check.
//!
//! # Thousands separators
//!
//! mqldt prints its figures with `%'15li` after `setlocale(LC_ALL, "")`: under
//! the C/POSIX locale (the default of most services and containers) there are
//! no separators, under en_US.UTF-8 there are commas. [`grouping_from_env`]
//! makes the same choice from the environment, without calling `setlocale`;
//! its rule and limits are on [`grouping_for_locale`].
//!
//! # Numbers latscope computes differently
//!
//! These functions print what they are given; the figures latscope gives them
//! differ from mqldt's where mqldt is wrong:
//! - Write latency: mqldt measures from the end of the previous write's
//!   bookkeeping to the end of this write, so its latency includes its own
//!   loop, the progress printing, the per-second bookkeeping and the
//!   `--delay` sleep. latscope's figures are the write alone; `--delay`
//!   sleeps outside the timed span.
//! - Average latency: mqldt keeps a running integer mean, truncated at every
//!   write (it drifts low); latscope divides the sum by the count. With
//!   `--qm` > 1 mqldt averages the writers' averages; [`combine_writers`]
//!   weights every write the same.
//! - Bytes/sec of the slowest and fastest write: mqldt computes them in single
//!   precision (`348,698,688` for 128 KiB in 375,889 ns); [`write_bandwidth`]
//!   is exact integer arithmetic (`348,698,684`).
//! - The final partial interval: mqldt scales it up in single precision
//!   (150,000,000 bytes in 0.6 s give `249,999,984`); `logdisk::bandwidth::IntervalMeter` is
//!   exact (`250,000,000`). Its average over the intervals is their sum
//!   divided by their count, where mqldt keeps a running integer mean.
//! - Zero writes, a zero latency or a zero duration: mqldt divides by zero
//!   (a float infinity cast to `long`) or prints `LONG_MAX` as a minimum;
//!   latscope's figures are 0 then.
//! - Overflows: mqldt keeps block sizes, file sizes and the write index in
//!   `int` (`--bsize` above 2 GiB and a 2^31st write wrap); latscope's
//!   figures are `u64` and its arithmetic saturates.
//!
//! What latscope keeps as mqldt has it, because users compare the figures:
//! the interval rule (see `logdisk::bandwidth::IntervalMeter`), the average bytes/sec as the
//! mean of the intervals (not total bytes / duration), `IOPS` as writes /
//! requested duration in whole numbers, the 1-based index of the write with
//! the largest and smallest latency, and `Seconds elapsed` counting closed
//! intervals rather than wall-clock seconds.

/// One second and half a second in nanoseconds: the interval rule's bounds.
pub const ONE_SEC_NS: u64 = 1_000_000_000;

// ---- thousands separators

/// Whether figures printed with `%'` carry thousands separators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// The C/POSIX locale: plain digits.
    #[default]
    None,
    /// en_US and the other locales with `,` every three digits.
    Comma,
}

/// The locales (language_territory) whose `LC_NUMERIC` groups by threes
/// with `,`, each checked with glibc 2.36 on this machine. Others are left
/// out on purpose: en_DK and de_DE use `.`, fr_FR a narrow no-break space,
/// en_IN groups `12,34,567`.
const COMMA_LOCALES: [&str; 10] = [
    "en_US", "en_GB", "en_AU", "en_CA", "en_IE", "en_NZ", "en_ZA", "ja_JP", "ko_KR", "zh_CN",
];

/// What glibc's `setlocale(LC_ALL, "")` would give `%'` in this process's
/// environment: [`grouping_for_locale`] of `LC_ALL`, `LC_NUMERIC`, `LANG`.
pub fn grouping_from_env() -> Grouping {
    let var = |name: &str| std::env::var(name).ok();
    grouping_for_locale(
        var("LC_ALL").as_deref(),
        var("LC_NUMERIC").as_deref(),
        var("LANG").as_deref(),
    )
}

/// The grouping of the numeric locale named by these variables, as glibc
/// picks it: the first non-empty of `LC_ALL`, `LC_NUMERIC`, `LANG` names it
/// (none: `C`). `C`, `POSIX` and `C.<codeset>` print plain digits; a name
/// whose `language_territory` (before any `.codeset` or `@modifier`) is one of
/// the verified comma locales (en_US, en_GB, en_AU, en_CA, en_IE, en_NZ,
/// en_ZA, ja_JP, ko_KR, zh_CN) prints commas; any other name prints plain
/// digits, since latscope only knows how to print commas.
///
/// Limits: whether the locale is installed is not checked. glibc falls back
/// to C (no separators) when it is not, and `setlocale(LC_ALL, "")` fails as
/// a whole, so without separators, when any category's locale (say
/// `LC_CTYPE`) is missing; this rule says [`Grouping::Comma`] in both cases.
/// Locales grouping with another character or in other groups (de_DE, fr_FR,
/// en_DK, en_IN, ...) print plain digits here rather than their own
/// separators.
pub fn grouping_for_locale(
    lc_all: Option<&str>,
    lc_numeric: Option<&str>,
    lang: Option<&str>,
) -> Grouping {
    let name = [lc_all, lc_numeric, lang]
        .into_iter()
        .flatten()
        .find(|value| !value.is_empty())
        .unwrap_or("C");
    let base = name.split(['.', '@']).next().unwrap_or(name);
    if COMMA_LOCALES.contains(&base) {
        Grouping::Comma
    } else {
        Grouping::None
    }
}

/// `n` as glibc's `%'li` prints it: with [`Grouping::Comma`], a `,` every
/// three digits from the right (`-1,234,567`); with [`Grouping::None`], plain.
pub fn group_thousands(n: i64, g: Grouping) -> String {
    let digits = group_digits(n.unsigned_abs(), g);
    if n < 0 { format!("-{digits}") } else { digits }
}

/// The digits of `n`, grouped as `g` says.
fn group_digits(n: u64, g: Grouping) -> String {
    let plain = n.to_string();
    if g == Grouping::None {
        return plain;
    }
    let mut grouped = String::with_capacity(plain.len() + plain.len() / 3);
    for (i, digit) in plain.chars().enumerate() {
        if i > 0 && (plain.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// `%'15li`: the grouped figure right-aligned in 15 columns (wider figures
/// widen the line).
fn field15(n: u64, g: Grouping) -> String {
    format!("{:>15}", group_digits(n, g))
}

// ---- options block

/// The labels of the option lines mqldt's source does not show (see the
/// module documentation): latscope's wording, in the other labels' style.
pub const CSV_FILE_LABEL: &str = "CSV output file";
pub const DELAY_LABEL: &str = "Delay per write (microsec)";

/// The values the options block shows, as mqldt holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionsBlock<'a> {
    /// `--bsize` as the user wrote it (`5K,9K,17K`): mqldt prints that text.
    pub bsize: &'a str,
    pub dir: &'a str,
    pub file_prefix: &'a str,
    pub num_files: u64,
    pub file_size: u64,
    pub duration_s: u64,
    /// `--alignment`, shown only when given (hidden option).
    pub alignment: Option<u64>,
    /// `--backgroundThreads`, shown when above 0 (hidden option).
    pub background_threads: u64,
    /// `--csvFile`, shown when given.
    pub csv_file: Option<&'a str>,
    /// `--qm`, shown when above 1.
    pub qm: u32,
    /// `--delay` in microseconds, shown when above 0.
    pub delay_us: u64,
}

/// One option line: the label left-aligned in 28 columns, `(--name)`, then
/// spaces up to the colon in column 52 (at least none), `: value`.
fn option_line(label: &str, name: &str, value: &dyn std::fmt::Display) -> String {
    format!("{label:<28}{:<23}: {value}\n", format!("(--{name})"))
}

/// The options block: the empty line mqldt prints first, the title, 85 `=`,
/// one line per option, an empty line. `--bsize`, `--dir`, `--filePrefix`,
/// `--numFiles`, `--fileSize` and `--duration` always; `--alignment` when
/// given, `--backgroundThreads` above 0, `--qm` above 1, `--csvFile` when
/// given and `--delay` above 0.
pub fn options_block(o: &OptionsBlock) -> String {
    let mut text = format!(
        "\nOptions (specified or defaulted to)\n{}\n",
        "=".repeat(85)
    );
    text.push_str(&option_line("Write blocksize", "bsize", &o.bsize));
    text.push_str(&option_line("Directory to write to", "dir", &o.dir));
    text.push_str(&option_line(
        "Test file prefix",
        "filePrefix",
        &o.file_prefix,
    ));
    text.push_str(&option_line(
        "Number of files to write to",
        "numFiles",
        &o.num_files,
    ));
    text.push_str(&option_line("Size of test files", "fileSize", &o.file_size));
    text.push_str(&option_line("Test duration", "duration", &o.duration_s));
    if let Some(alignment) = o.alignment {
        text.push_str(&option_line("Record alignment", "alignment", &alignment));
    }
    if o.background_threads > 0 {
        text.push_str(&option_line(
            "Background Threads",
            "backgroundThreads",
            &o.background_threads,
        ));
    }
    if o.qm > 1 {
        text.push_str(&option_line("Queue Managers", "qm", &o.qm));
    }
    if let Some(csv_file) = o.csv_file {
        text.push_str(&option_line(CSV_FILE_LABEL, "csvFile", &csv_file));
    }
    if o.delay_us > 0 {
        text.push_str(&option_line(DELAY_LABEL, "delay", &o.delay_us));
    }
    text.push('\n');
    text
}

// ---- start of the run and progress

/// With `--qm` > 1, printed after the options block, before the files are
/// created.
pub fn qm_simulation_line(qm: u32) -> String {
    format!("Running simulation of {qm} Queue Managers\n")
}

/// Printed (stdout) before a writer's files are prepared: thread 0 for a
/// single writer, 1..=N with `--qm`.
pub fn creating_files_line(thread: u32) -> String {
    format!("Creating files...for thread: {thread}\n")
}

/// The start of the progress line (stderr, no newline) for a block size in
/// bytes; KB is `bsize / 1024`, truncated.
pub fn progress_start(bsize: u64) -> String {
    format!(
        "Executing test for write blocksize {bsize} bytes ({}KB). Seconds elapsed -> ",
        bsize / 1024
    )
}

/// The backspaces mqldt's format takes them from: it prints at most 11.
const BACKSPACES: &str = "\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}";

/// One tick of the progress counter (stderr), printed each time an interval
/// closes: `elapsed/duration`, then as many backspaces as that text has
/// characters (at most 11, as mqldt's literal has), so the next tick
/// overwrites it. mqldt counts the closed intervals, not wall-clock seconds.
pub fn progress_tick(elapsed: u64, duration: u64) -> String {
    let counter = format!("{elapsed}/{duration}");
    let back = counter.len().min(BACKSPACES.len());
    format!("{counter}{}", &BACKSPACES[..back])
}

/// The end of the progress line, written to **stdout** (nothing more goes to
/// stderr): `duration/duration`, the newline that ends the line started on
/// stderr, and one empty line.
pub fn progress_end(duration: u64) -> String {
    format!("{duration}/{duration}\n\n")
}

/// mqldt's end of a block size's run: it stops after the first write that
/// completes more than `duration_s` seconds after the start (`elapsed_ns`
/// since the start, strictly greater).
pub fn run_is_over(elapsed_ns: u64, duration_s: u64) -> bool {
    u128::from(elapsed_ns) > u128::from(duration_s) * u128::from(ONE_SEC_NS)
}

// ---- per-second bandwidth

// ---- derived figures

/// The bandwidth of one write of `bsize` bytes taking `latency_ns`:
/// `bsize * 10^9 / latency_ns`, truncated, exact (mqldt uses single
/// precision); 0 for a zero latency. "Min bytes/sec (slowest write)" is this
/// of the max latency, "Max bytes/sec (fastest write)" of the min latency.
pub fn write_bandwidth(bsize: u64, latency_ns: u64) -> u64 {
    match (u128::from(bsize) * u128::from(ONE_SEC_NS)).checked_div(u128::from(latency_ns)) {
        Some(bps) => u64::try_from(bps).unwrap_or(u64::MAX),
        None => 0,
    }
}

/// mqldt's IOPS: writes / requested duration in whole seconds, truncated;
/// 0 for a zero duration.
pub fn iops(writes: u64, duration_s: u64) -> u64 {
    writes.checked_div(duration_s).unwrap_or(0)
}

/// What one writer (one queue manager) measured for one block size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterFigures {
    pub writes: u64,
    pub bytes: u64,
    /// `logdisk::bandwidth::IntervalMeter`'s count, max, min and avg.
    pub intervals: u64,
    pub interval_max_bps: u64,
    pub interval_min_bps: u64,
    pub interval_avg_bps: u64,
    /// The largest and smallest write latency and the 1-based index of that
    /// write (the first one on ties).
    pub max_ns: u64,
    pub max_index: u64,
    pub min_ns: u64,
    pub min_index: u64,
    /// The sum of all write latencies.
    pub latency_sum_ns: u128,
}

/// The writers of a `--qm` run as one, by mqldt's rules: writes and bytes
/// summed; the max interval is the largest of the writers' (`by a single
/// qm`), the min the smallest of those that have intervals; the average
/// bytes/sec is the sum of the writers' averages (`by all queue managers`);
/// the max and min latency are the extremes over all writers, with the index
/// that writer gave them (the first writer on ties). The latency sum is
/// summed, so the average latency weights every write the same (mqldt
/// averages the writers' averages). Counts saturate.
pub fn combine_writers(writers: &[WriterFigures]) -> WriterFigures {
    let mut all = WriterFigures::default();
    let mut min_interval = None::<u64>;
    let mut min_latency = None::<(u64, u64)>;
    for w in writers {
        all.writes = all.writes.saturating_add(w.writes);
        all.bytes = all.bytes.saturating_add(w.bytes);
        all.intervals = all.intervals.saturating_add(w.intervals);
        all.interval_max_bps = all.interval_max_bps.max(w.interval_max_bps);
        if w.intervals > 0 && min_interval.is_none_or(|m| w.interval_min_bps < m) {
            min_interval = Some(w.interval_min_bps);
        }
        all.interval_avg_bps = all.interval_avg_bps.saturating_add(w.interval_avg_bps);
        if w.max_ns > all.max_ns {
            all.max_ns = w.max_ns;
            all.max_index = w.max_index;
        }
        if w.writes > 0 && min_latency.is_none_or(|(m, _)| w.min_ns < m) {
            min_latency = Some((w.min_ns, w.min_index));
        }
        all.latency_sum_ns = all.latency_sum_ns.saturating_add(w.latency_sum_ns);
    }
    all.interval_min_bps = min_interval.unwrap_or(0);
    (all.min_ns, all.min_index) = min_latency.unwrap_or((0, 0));
    all
}

impl WriterFigures {
    /// The figures of [`totals_block`], with `IOPS` over `duration_s`.
    pub fn totals(&self, duration_s: u64) -> Totals {
        Totals {
            writes: self.writes,
            iops: iops(self.writes, duration_s),
            bytes: self.bytes,
            interval_max_bps: self.interval_max_bps,
            interval_min_bps: self.interval_min_bps,
            avg_bps: self.interval_avg_bps,
        }
    }

    /// The figures of [`latency_block`] for writes of `bsize` bytes; the
    /// average is sum / count, truncated (0 without writes).
    pub fn latency_lines(&self, bsize: u64) -> LatencyLines {
        let avg = self
            .latency_sum_ns
            .checked_div(u128::from(self.writes))
            .unwrap_or(0);
        LatencyLines {
            max_ns: self.max_ns,
            max_index: self.max_index,
            slowest_write_bps: write_bandwidth(bsize, self.max_ns),
            min_ns: self.min_ns,
            min_index: self.min_index,
            fastest_write_bps: write_bandwidth(bsize, self.min_ns),
            avg_ns: u64::try_from(avg).unwrap_or(u64::MAX),
        }
    }
}

// ---- totals and latency blocks

const TOTAL_WRITES: &str = "Total writes to files";
const IOPS: &str = "IOPS";
const TOTAL_BYTES: &str = "Total bytes written to files";
const INTERVAL_MAX: &str = "Max bytes/sec written to files (over 1 sec interval)";
const INTERVAL_MIN: &str = "Min bytes/sec written to files (over 1 sec interval)";
const AVG_BPS: &str = "Avg bytes/sec written to files";
const INTERVAL_MAX_QM: &str = "Max bytes/sec written to files by a single qm (over 1 sec interval)";
const INTERVAL_MIN_QM: &str = "Min bytes/sec written to files by a single qm (over 1 sec interval)";
const AVG_BPS_QM: &str = "Avg bytes/sec written to files by all queue managers";
const MAX_LATENCY: &str = "Max latency of write (ns)";
const MIN_LATENCY: &str = "Min latency of write (ns)";
const AVG_LATENCY: &str = "Avg latency of write (ns)";
const SLOWEST_BPS: &str = "Min bytes/sec (slowest write)";
const FASTEST_BPS: &str = "Max bytes/sec (fastest write)";

/// The figures of the totals block (with `--qm` > 1, of all writers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub writes: u64,
    /// [`iops`] of the writes.
    pub iops: u64,
    pub bytes: u64,
    /// The largest and smallest interval figure and their mean (with `--qm`
    /// > 1: largest and smallest of one writer, sum of the writers' means).
    pub interval_max_bps: u64,
    pub interval_min_bps: u64,
    pub avg_bps: u64,
}

/// The interval labels: one writer's, or `--qm` > 1's.
fn interval_labels(qm: u32) -> [&'static str; 3] {
    if qm > 1 {
        [INTERVAL_MAX_QM, INTERVAL_MIN_QM, AVG_BPS_QM]
    } else {
        [INTERVAL_MAX, INTERVAL_MIN, AVG_BPS]
    }
}

/// The totals block: `Total writes to files`, `IOPS`, `Total bytes written
/// to files`, the max, min and avg bytes/sec lines, each `label<pad> :
/// %'15li` with the colons one column after the longest label. With `qm` >
/// 1 the interval lines say `by a single qm` and the average `by all queue
/// managers` (the colons move right with the longer labels).
pub fn totals_block(t: &Totals, qm: u32, g: Grouping) -> String {
    let [max_label, min_label, avg_label] = interval_labels(qm);
    let width = max_label.len();
    [
        (TOTAL_WRITES, t.writes),
        (IOPS, t.iops),
        (TOTAL_BYTES, t.bytes),
        (max_label, t.interval_max_bps),
        (min_label, t.interval_min_bps),
        (avg_label, t.avg_bps),
    ]
    .iter()
    .map(|(label, value)| format!("{label:<width$} : {}\n", field15(*value, g)))
    .collect()
}

/// The figures of the latency block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyLines {
    pub max_ns: u64,
    /// 1-based index of the write with the max latency.
    pub max_index: u64,
    /// [`write_bandwidth`] of the max latency.
    pub slowest_write_bps: u64,
    pub min_ns: u64,
    pub min_index: u64,
    /// [`write_bandwidth`] of the min latency.
    pub fastest_write_bps: u64,
    pub avg_ns: u64,
}

/// The latency block: max latency `(#index)`, slowest-write bytes/sec, min
/// latency `(#index)`, fastest-write bytes/sec, avg latency; colons in
/// column 32, figures `%'15li`, indexes `%'i`.
pub fn latency_block(l: &LatencyLines, g: Grouping) -> String {
    let line = |label: &str, value: u64| format!("{label:<30} : {}", field15(value, g));
    format!(
        "{} (#{})\n{}\n{} (#{})\n{}\n{}\n",
        line(MAX_LATENCY, l.max_ns),
        group_digits(l.max_index, g),
        line(SLOWEST_BPS, l.slowest_write_bps),
        line(MIN_LATENCY, l.min_ns),
        group_digits(l.min_index, g),
        line(FASTEST_BPS, l.fastest_write_bps),
        line(AVG_LATENCY, l.avg_ns),
    )
}

// ---- CSV

/// mqldt's CSV header for one writer (no newline).
pub const CSV_HEADER: &str = "Blocksize,Total writes to files,Total bytes written to files,\
Max bytes/sec written to files (over 1 sec interval),\
Min bytes/sec written to files (over 1 sec interval),Avg bytes/sec written to files,\
Max latency of write (ns),Min latency of write (ns),Avg latency of write (ns),\
Min bytes/sec (slowest write),Max bytes/sec (fastest write)";

/// The CSV header line: [`CSV_HEADER`] for one writer; with `qm` > 1 the
/// interval columns have the `by a single qm` / `by all queue managers`
/// titles of the console block.
pub fn csv_header(qm: u32) -> String {
    let [max_label, min_label, avg_label] = interval_labels(qm);
    format!(
        "Blocksize,{TOTAL_WRITES},{TOTAL_BYTES},{max_label},{min_label},{avg_label},\
         {MAX_LATENCY},{MIN_LATENCY},{AVG_LATENCY},{SLOWEST_BPS},{FASTEST_BPS}\n"
    )
}

/// The CSV row of one block size: the header's 11 columns, plain numbers.
pub fn csv_row(bsize: u64, t: &Totals, l: &LatencyLines) -> String {
    format!("{}\n", csv_fields(bsize, t, l))
}

fn csv_fields(bsize: u64, t: &Totals, l: &LatencyLines) -> String {
    format!(
        "{bsize},{},{},{},{},{},{},{},{},{},{}",
        t.writes,
        t.bytes,
        t.interval_max_bps,
        t.interval_min_bps,
        t.avg_bps,
        l.max_ns,
        l.min_ns,
        l.avg_ns,
        l.slowest_write_bps,
        l.fastest_write_bps
    )
}

/// How the CSV file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvMode {
    /// One writer: an existing file is emptied (`fopen "w"`).
    Truncate,
    /// `--qm` > 1: the text is added at the end (`fopen "a"`), so runs over
    /// different numbers of queue managers collect in one file.
    Append,
}

/// What is written to the CSV file when the run starts: one writer
/// ([`CsvMode::Truncate`]): the header; `qm` > 1 ([`CsvMode::Append`]):
/// `Running MQLDT over N Queue Managers` and the header. `qm` 0 counts as 1.
pub fn csv_start(qm: u32) -> (CsvMode, String) {
    if qm > 1 {
        (
            CsvMode::Append,
            format!("Running MQLDT over {qm} Queue Managers\n{}", csv_header(qm)),
        )
    } else {
        (CsvMode::Truncate, csv_header(qm))
    }
}

/// The whole CSV text of a run: [`csv_start`] followed by the rows (from
/// [`csv_row`]), and the mode to open the file with.
pub fn csv_text(qm: u32, rows: &[String]) -> (CsvMode, String) {
    let (mode, mut text) = csv_start(qm);
    for row in rows {
        text.push_str(row);
    }
    (mode, text)
}

/// latscope's percentiles of the write latency, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub p99_99_ns: u64,
}

/// latscope's modern CSV header: mqldt's 11 columns (as [`csv_header`]),
/// then `IOPS` and the percentile columns.
pub fn modern_csv_header(qm: u32) -> String {
    let header = csv_header(qm);
    format!(
        "{},IOPS,p50 (ns),p90 (ns),p99 (ns),p99.9 (ns),p99.99 (ns)\n",
        header.trim_end_matches('\n')
    )
}

/// A row of the modern CSV: [`csv_row`]'s 11 columns, IOPS, percentiles.
pub fn modern_csv_row(bsize: u64, t: &Totals, l: &LatencyLines, p: &Percentiles) -> String {
    format!(
        "{},{},{},{},{},{},{}\n",
        csv_fields(bsize, t, l),
        t.iops,
        p.p50_ns,
        p.p90_ns,
        p.p99_ns,
        p.p99_9_ns,
        p.p99_99_ns
    )
}

/// One writer's figures from its series in a report (None for series of
/// other kinds).
pub fn writer_figures(s: &crate::report::Series) -> Option<WriterFigures> {
    let d = s.disk_writer()?;
    let l = &s.latency;
    let bandwidth = &d.interval_bandwidth;
    Some(WriterFigures {
        writes: d.writes,
        bytes: d.bytes,
        intervals: bandwidth.intervals,
        interval_max_bps: bandwidth.max_bytes_per_s,
        interval_min_bps: bandwidth.min_bytes_per_s,
        interval_avg_bps: bandwidth.avg_bytes_per_s,
        max_ns: l.max_ns.max(0) as u64,
        max_index: l.max_at_sample,
        min_ns: l.min_ns.max(0) as u64,
        min_index: l.min_at_sample,
        latency_sum_ns: (l.avg_ns.max(0.0) * l.samples as f64).round() as u128,
    })
}

/// One block size of a report as mqldt sums it up: its block size, the
/// writers combined (`--qm`), the totals and the latency lines, and the
/// number of writers.
fn block_figures(test: &crate::report::TestResult) -> Option<(u64, Totals, LatencyLines, u32)> {
    let block_size = test.config.logdisk()?.block_size;
    let writers: Vec<WriterFigures> = test.series.iter().filter_map(writer_figures).collect();
    let all = match writers.as_slice() {
        [one] => *one,
        several => combine_writers(several),
    };
    // IOPS is over the duration asked for, in whole seconds, as mqldt.
    let duration_s = test.config.duration_s.unwrap_or(0.0).max(0.0) as u64;
    Some((
        block_size,
        all.totals(duration_s),
        all.latency_lines(block_size),
        writers.len().max(1) as u32,
    ))
}

/// What mqldt prints after a block size's progress line: the totals block
/// and the latency block, each followed by an empty line.
pub fn block_results(test: &crate::report::TestResult, g: Grouping) -> String {
    let Some((_, totals, lines, qm)) = block_figures(test) else {
        return String::new();
    };
    format!(
        "{}\n{}\n",
        totals_block(&totals, qm, g),
        latency_block(&lines, g)
    )
}

/// mqldt's CSV for a whole report: how to open the file, and its text.
pub fn csv_of(report: &crate::report::Report) -> (CsvMode, String) {
    let blocks: Vec<_> = report.tests.iter().filter_map(block_figures).collect();
    let qm = blocks.first().map_or(1, |b| b.3);
    let rows: Vec<String> = blocks
        .iter()
        .map(|(bsize, totals, lines, _)| csv_row(*bsize, totals, lines))
        .collect();
    csv_text(qm, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's figures (`--bsize=128K`, 20 s).
    fn seed_totals() -> Totals {
        Totals {
            writes: 46_178,
            iops: iops(46_178, 20),
            bytes: 6_052_642_816,
            interval_max_bps: 311_689_216,
            interval_min_bps: 297_795_584,
            avg_bps: 302_732_356,
        }
    }

    /// The seed's latency figures; its two bytes/sec are mqldt's single
    /// precision ones (see `mqldt_f32_bandwidth`).
    fn seed_latency() -> LatencyLines {
        LatencyLines {
            max_ns: 4_977_438,
            max_index: 24_649,
            slowest_write_bps: 26_333_226,
            min_ns: 375_889,
            min_index: 42_421,
            fastest_write_bps: 348_698_688,
            avg_ns: 4_935_648,
        }
    }

    /// The seed's totals block (which predates the IOPS line).
    const SEED_TOTALS: &str = "\
Total writes to files                                :          46,178
Total bytes written to files                         :   6,052,642,816
Max bytes/sec written to files (over 1 sec interval) :     311,689,216
Min bytes/sec written to files (over 1 sec interval) :     297,795,584
Avg bytes/sec written to files                       :     302,732,356
";

    const SEED_LATENCY: &str = "\
Max latency of write (ns)      :       4,977,438 (#24,649)
Min bytes/sec (slowest write)  :      26,333,226
Min latency of write (ns)      :         375,889 (#42,421)
Max bytes/sec (fastest write)  :     348,698,688
Avg latency of write (ns)      :       4,935,648
";

    // ---- grouping

    #[test]
    fn group_thousands_matches_glibc_en_us() {
        // glibc 2.36 printf("%'li") under en_US.UTF-8 on this machine.
        let cases: [(i64, &str); 12] = [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (-999, "-999"),
            (-1000, "-1,000"),
            (-1_234_567, "-1,234,567"),
            (46_178, "46,178"),
            (6_052_642_816, "6,052,642,816"),
            (1_234_567_890_123_456, "1,234,567,890,123,456"),
            (12_345_678_901_234_567, "12,345,678,901,234,567"),
            (i64::MAX, "9,223,372,036,854,775,807"),
            (i64::MIN, "-9,223,372,036,854,775,808"),
        ];
        for (n, expected) in cases {
            assert_eq!(group_thousands(n, Grouping::Comma), expected, "{n}");
        }
    }

    #[test]
    fn group_thousands_in_the_c_locale_is_plain() {
        for n in [0, 999, 1000, -1_234_567, i64::MAX, i64::MIN] {
            assert_eq!(group_thousands(n, Grouping::None), n.to_string());
        }
    }

    #[test]
    fn field15_matches_glibc() {
        // printf("[%'15li]") under en_US.UTF-8 and C.
        assert_eq!(field15(0, Grouping::Comma), "              0");
        assert_eq!(field15(1000, Grouping::Comma), "          1,000");
        assert_eq!(field15(6_052_642_816, Grouping::Comma), "  6,052,642,816");
        assert_eq!(field15(6_052_642_816, Grouping::None), "     6052642816");
        assert_eq!(
            field15(i64::MAX as u64, Grouping::Comma),
            "9,223,372,036,854,775,807"
        );
        assert_eq!(
            field15(12_345_678_901_234_567, Grouping::None),
            "12345678901234567"
        );
        assert_eq!(
            field15(u64::MAX, Grouping::Comma),
            "18,446,744,073,709,551,615"
        );
    }

    #[test]
    fn grouping_follows_glibc_precedence() {
        use Grouping::{Comma, None as Plain};
        let g = grouping_for_locale;
        assert_eq!(g(None, None, None), Plain);
        assert_eq!(g(Some("C"), None, None), Plain);
        assert_eq!(g(Some("POSIX"), None, None), Plain);
        assert_eq!(g(None, None, Some("C.UTF-8")), Plain);
        assert_eq!(g(None, None, Some("en_US.UTF-8")), Comma);
        assert_eq!(g(None, None, Some("en_US.utf8")), Comma);
        assert_eq!(g(None, None, Some("en_US")), Comma);
        assert_eq!(g(None, None, Some("en_GB.UTF-8@euro")), Comma);
        // LC_ALL over LC_NUMERIC over LANG; empty values do not count.
        assert_eq!(g(Some("C"), None, Some("en_US.UTF-8")), Plain);
        assert_eq!(g(Some("en_US.UTF-8"), Some("C"), None), Comma);
        assert_eq!(g(None, Some("C"), Some("en_US.UTF-8")), Plain);
        assert_eq!(g(Some(""), Some("en_US.UTF-8"), Some("C")), Comma);
        assert_eq!(g(Some(""), Some(""), Some("")), Plain);
        // Other separators or groups: plain digits rather than commas.
        assert_eq!(g(None, None, Some("de_DE.UTF-8")), Plain);
        assert_eq!(g(None, None, Some("en_DK.UTF-8")), Plain);
        assert_eq!(g(None, None, Some("en_IN")), Plain);
        assert_eq!(g(None, None, Some("fr_FR.UTF-8")), Plain);
        for name in COMMA_LOCALES {
            assert_eq!(g(None, None, Some(&format!("{name}.UTF-8"))), Comma);
        }
        // A name that only starts like a comma locale.
        assert_eq!(g(None, None, Some("en_USX.UTF-8")), Plain);
        assert_eq!(g(None, None, Some("en")), Plain);
    }

    #[test]
    fn grouping_from_env_does_not_panic() {
        let g = grouping_from_env();
        assert!(matches!(g, Grouping::None | Grouping::Comma));
    }

    // ---- options

    impl<'a> OptionsBlock<'a> {
        /// mqldt's defaults (settings/logdisk.rs) with this `--bsize` text.
        fn with_defaults(bsize: &'a str) -> Self {
            OptionsBlock {
                bsize,
                dir: ".",
                file_prefix: "mqldt_testfile",
                num_files: 8,
                file_size: 1_638_400,
                duration_s: 10,
                alignment: None,
                background_threads: 0,
                csv_file: None,
                qm: 1,
                delay_us: 0,
            }
        }
    }

    fn seed_options() -> OptionsBlock<'static> {
        OptionsBlock {
            dir: "/var/san1/testdir",
            file_prefix: "mqtestfile",
            num_files: 24,
            file_size: 67_108_864,
            duration_s: 20,
            ..OptionsBlock::with_defaults("128K")
        }
    }

    #[test]
    fn options_block_of_the_seed() {
        assert_eq!(
            options_block(&seed_options()),
            "\n\
Options (specified or defaulted to)
=====================================================================================
Write blocksize             (--bsize)              : 128K
Directory to write to       (--dir)                : /var/san1/testdir
Test file prefix            (--filePrefix)         : mqtestfile
Number of files to write to (--numFiles)           : 24
Size of test files          (--fileSize)           : 67108864
Test duration               (--duration)           : 20

"
        );
    }

    #[test]
    fn options_block_of_the_defaults_with_a_list() {
        assert_eq!(
            options_block(&OptionsBlock::with_defaults("5K,9K,17K")),
            "\n\
Options (specified or defaulted to)
=====================================================================================
Write blocksize             (--bsize)              : 5K,9K,17K
Directory to write to       (--dir)                : .
Test file prefix            (--filePrefix)         : mqldt_testfile
Number of files to write to (--numFiles)           : 8
Size of test files          (--fileSize)           : 1638400
Test duration               (--duration)           : 10

"
        );
    }

    #[test]
    fn options_block_with_every_optional_line() {
        let o = OptionsBlock {
            alignment: Some(512),
            background_threads: 3,
            csv_file: Some("./san_log.csv"),
            qm: 3,
            delay_us: 250,
            ..seed_options()
        };
        let text = options_block(&o);
        let lines: Vec<&str> = text.lines().collect();
        // The first three are the source's own lines, byte for byte.
        assert_eq!(
            lines[9..],
            [
                "Record alignment            (--alignment)          : 512",
                "Background Threads          (--backgroundThreads)  : 3",
                "Queue Managers              (--qm)                 : 3",
                "CSV output file             (--csvFile)            : ./san_log.csv",
                "Delay per write (microsec)  (--delay)              : 250",
                "",
            ]
        );
        assert!(text.ends_with("250\n\n"));
        for line in &lines[3..lines.len() - 1] {
            assert_eq!(line.find(':'), Some(51), "{line}");
        }
    }

    #[test]
    fn options_block_hides_unset_optional_lines() {
        let o = OptionsBlock {
            alignment: None,
            background_threads: 0,
            csv_file: None,
            qm: 1,
            delay_us: 0,
            ..seed_options()
        };
        assert_eq!(options_block(&o), options_block(&seed_options()));
        assert_eq!(options_block(&o).lines().count(), 10);
        let zero_alignment = OptionsBlock {
            alignment: Some(0),
            ..o
        };
        assert!(
            options_block(&zero_alignment)
                .contains("Record alignment            (--alignment)          : 0\n")
        );
    }

    #[test]
    fn option_lines_widen_rather_than_cut() {
        assert_eq!(
            option_line("A label longer than twenty-eight", "name", &1),
            format!(
                "A label longer than twenty-eight(--name){}: 1\n",
                " ".repeat(15)
            )
        );
        assert_eq!(
            option_line("Short", "aVeryLongOptionNameHere", &"x"),
            "Short                       (--aVeryLongOptionNameHere): x\n"
        );
    }

    // ---- start and progress

    #[test]
    fn start_lines_are_exact() {
        assert_eq!(creating_files_line(0), "Creating files...for thread: 0\n");
        assert_eq!(creating_files_line(10), "Creating files...for thread: 10\n");
        assert_eq!(
            qm_simulation_line(3),
            "Running simulation of 3 Queue Managers\n"
        );
    }

    #[test]
    fn progress_start_is_exact() {
        assert_eq!(
            progress_start(131_072),
            "Executing test for write blocksize 131072 bytes (128KB). Seconds elapsed -> "
        );
        assert_eq!(
            progress_start(5 * 1024 + 512),
            "Executing test for write blocksize 5632 bytes (5KB). Seconds elapsed -> "
        );
        assert_eq!(
            progress_start(0),
            "Executing test for write blocksize 0 bytes (0KB). Seconds elapsed -> "
        );
    }

    #[test]
    fn progress_ticks_erase_themselves() {
        assert_eq!(progress_tick(1, 20), "1/20\u{8}\u{8}\u{8}\u{8}");
        assert_eq!(progress_tick(9, 10), "9/10\u{8}\u{8}\u{8}\u{8}");
        assert_eq!(progress_tick(10, 10), "10/10\u{8}\u{8}\u{8}\u{8}\u{8}");
        assert_eq!(progress_tick(7, 3), "7/3\u{8}\u{8}\u{8}");
        // At most the 11 backspaces of mqldt's literal.
        assert_eq!(
            progress_tick(123_456, 1_000_000),
            format!("123456/1000000{}", "\u{8}".repeat(11))
        );
        assert_eq!(
            progress_tick(u64::MAX, u64::MAX),
            format!("{0}/{0}{1}", u64::MAX, "\u{8}".repeat(11))
        );
        assert_eq!(progress_tick(0, 0), "0/0\u{8}\u{8}\u{8}");
    }

    #[test]
    fn progress_end_goes_to_stdout_with_one_empty_line() {
        assert_eq!(progress_end(20), "20/20\n\n");
        assert_eq!(progress_end(1), "1/1\n\n");
    }

    #[test]
    fn a_whole_progress_line_as_a_terminal_shows_it() {
        // Apply the backspaces as a terminal would: the last tick, then the
        // end, remain.
        let mut bytes = progress_start(4096);
        for elapsed in 1..=3 {
            bytes.push_str(&progress_tick(elapsed, 3));
        }
        bytes.push_str(&progress_end(3));
        let mut screen: Vec<char> = Vec::new();
        let mut cursor = 0;
        for c in bytes.chars() {
            if c == '\u{8}' {
                cursor -= 1;
            } else {
                screen.truncate(cursor);
                screen.push(c);
                cursor += 1;
            }
        }
        assert_eq!(
            screen.into_iter().collect::<String>(),
            "Executing test for write blocksize 4096 bytes (4KB). Seconds elapsed -> 3/3\n\n"
        );
    }

    #[test]
    fn run_ends_strictly_after_the_duration() {
        assert!(!run_is_over(0, 1));
        assert!(!run_is_over(ONE_SEC_NS, 1));
        assert!(run_is_over(ONE_SEC_NS + 1, 1));
        assert!(!run_is_over(20 * ONE_SEC_NS, 20));
        assert!(run_is_over(20 * ONE_SEC_NS + 1, 20));
        assert!(run_is_over(1, 0));
        assert!(!run_is_over(u64::MAX, u64::MAX));
    }

    // ---- derived figures

    /// mqldt's `(long)(blockSize / ((float)latency / 1000000000))`, for
    /// showing where the seed's bytes/sec come from.
    fn mqldt_f32_bandwidth(bsize: i32, latency_ns: i64) -> i64 {
        (bsize as f32 / (latency_ns as f32 / 1_000_000_000f32)) as i64
    }

    #[test]
    fn write_bandwidth_is_exact_where_mqldt_rounds() {
        // The seed's numbers are single precision: C prints 26,333,226 and
        // 348,698,688 (checked with gcc on this machine).
        assert_eq!(mqldt_f32_bandwidth(131_072, 4_977_438), 26_333_226);
        assert_eq!(mqldt_f32_bandwidth(131_072, 375_889), 348_698_688);
        // Exact: 131072e9 / 375889 = 348,698,684.98...
        assert_eq!(write_bandwidth(131_072, 4_977_438), 26_333_226);
        assert_eq!(write_bandwidth(131_072, 375_889), 348_698_684);
        assert_eq!(write_bandwidth(4096, 1_000_000), 4_096_000);
        assert_eq!(write_bandwidth(4096, 0), 0);
        assert_eq!(write_bandwidth(0, 5), 0);
        assert_eq!(write_bandwidth(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn iops_is_writes_over_the_requested_duration() {
        assert_eq!(iops(46_178, 20), 2308);
        assert_eq!(iops(19, 20), 0);
        assert_eq!(iops(100, 0), 0);
        assert_eq!(iops(0, 10), 0);
    }

    // ---- totals and latency blocks

    #[test]
    fn totals_block_of_the_seed_with_the_iops_line() {
        let text = totals_block(&seed_totals(), 1, Grouping::Comma);
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.remove(1),
            "IOPS                                                 :           2,308"
        );
        assert_eq!(format!("{}\n", lines.join("\n")), SEED_TOTALS);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn totals_block_in_the_c_locale() {
        assert_eq!(
            totals_block(&seed_totals(), 1, Grouping::None),
            "\
Total writes to files                                :           46178
IOPS                                                 :            2308
Total bytes written to files                         :      6052642816
Max bytes/sec written to files (over 1 sec interval) :       311689216
Min bytes/sec written to files (over 1 sec interval) :       297795584
Avg bytes/sec written to files                       :       302732356
"
        );
    }

    #[test]
    fn totals_block_with_several_queue_managers() {
        // printQMFileStats's layout, as glibc prints it under en_US.UTF-8.
        assert_eq!(
            totals_block(&seed_totals(), 3, Grouping::Comma),
            "\
Total writes to files                                               :          46,178
IOPS                                                                :           2,308
Total bytes written to files                                        :   6,052,642,816
Max bytes/sec written to files by a single qm (over 1 sec interval) :     311,689,216
Min bytes/sec written to files by a single qm (over 1 sec interval) :     297,795,584
Avg bytes/sec written to files by all queue managers                :     302,732,356
"
        );
        assert_eq!(
            totals_block(&seed_totals(), 0, Grouping::Comma),
            totals_block(&seed_totals(), 1, Grouping::Comma)
        );
    }

    #[test]
    fn totals_block_of_zero_writes_prints_zeros() {
        let text = totals_block(&Totals::default(), 1, Grouping::Comma);
        assert_eq!(text.lines().count(), 6);
        for line in text.lines() {
            assert!(line.ends_with(" :               0"), "{line}");
        }
    }

    #[test]
    fn totals_block_widens_for_huge_figures() {
        let t = Totals {
            writes: u64::MAX,
            ..Totals::default()
        };
        assert!(totals_block(&t, 1, Grouping::Comma).starts_with(
            "Total writes to files                                : 18,446,744,073,709,551,615\n"
        ));
    }

    #[test]
    fn latency_block_of_the_seed() {
        assert_eq!(
            latency_block(&seed_latency(), Grouping::Comma),
            SEED_LATENCY
        );
    }

    #[test]
    fn latency_block_in_the_c_locale_and_of_zero_writes() {
        assert_eq!(
            latency_block(&seed_latency(), Grouping::None),
            "\
Max latency of write (ns)      :         4977438 (#24649)
Min bytes/sec (slowest write)  :        26333226
Min latency of write (ns)      :          375889 (#42421)
Max bytes/sec (fastest write)  :       348698688
Avg latency of write (ns)      :         4935648
"
        );
        assert_eq!(
            latency_block(&LatencyLines::default(), Grouping::Comma),
            "\
Max latency of write (ns)      :               0 (#0)
Min bytes/sec (slowest write)  :               0
Min latency of write (ns)      :               0 (#0)
Max bytes/sec (fastest write)  :               0
Avg latency of write (ns)      :               0
"
        );
    }

    #[test]
    fn writer_figures_to_blocks() {
        let w = WriterFigures {
            writes: 46_178,
            bytes: 46_178 * 131_072,
            intervals: 20,
            interval_max_bps: 311_689_216,
            interval_min_bps: 297_795_584,
            interval_avg_bps: 302_732_356,
            max_ns: 4_977_438,
            max_index: 24_649,
            min_ns: 375_889,
            min_index: 42_421,
            latency_sum_ns: 46_178 * 4_935_648 + 17,
        };
        assert_eq!(w.totals(20), seed_totals());
        assert_eq!(
            w.latency_lines(131_072),
            LatencyLines {
                fastest_write_bps: 348_698_684, // exact, not mqldt's ...688
                ..seed_latency()
            }
        );
        let zero = WriterFigures::default();
        assert_eq!(zero.totals(0), Totals::default());
        assert_eq!(zero.latency_lines(4096), LatencyLines::default());
    }

    #[test]
    fn combine_writers_by_mqldt_rules() {
        let a = WriterFigures {
            writes: 100,
            bytes: 100 * 4096,
            intervals: 2,
            interval_max_bps: 300,
            interval_min_bps: 100,
            interval_avg_bps: 200,
            max_ns: 9000,
            max_index: 7,
            min_ns: 500,
            min_index: 3,
            latency_sum_ns: 100 * 1000,
        };
        let b = WriterFigures {
            writes: 300,
            bytes: 300 * 4096,
            intervals: 2,
            interval_max_bps: 400,
            interval_min_bps: 50,
            interval_avg_bps: 250,
            max_ns: 9000, // a tie: the first writer's index stays
            max_index: 99,
            min_ns: 400,
            min_index: 12,
            latency_sum_ns: 300 * 3000,
        };
        let all = combine_writers(&[a, b]);
        assert_eq!(
            all,
            WriterFigures {
                writes: 400,
                bytes: 400 * 4096,
                intervals: 4,
                interval_max_bps: 400,
                interval_min_bps: 50,
                interval_avg_bps: 450,
                max_ns: 9000,
                max_index: 7,
                min_ns: 400,
                min_index: 12,
                latency_sum_ns: 1_000_000,
            }
        );
        // Weighted over all writes: 2500 ns (mqldt: (1000 + 3000) / 2 = 2000).
        assert_eq!(all.latency_lines(4096).avg_ns, 2500);
    }

    #[test]
    fn combine_writers_skips_empty_writers_for_minimums() {
        let idle = WriterFigures::default();
        let busy = WriterFigures {
            writes: 1,
            intervals: 1,
            interval_max_bps: 10,
            interval_min_bps: 10,
            interval_avg_bps: 10,
            max_ns: 5,
            max_index: 1,
            min_ns: 5,
            min_index: 1,
            latency_sum_ns: 5,
            bytes: 4096,
        };
        let all = combine_writers(&[idle, busy, idle]);
        assert_eq!(
            (all.interval_min_bps, all.min_ns, all.min_index),
            (10, 5, 1)
        );
        assert_eq!(combine_writers(&[]), WriterFigures::default());
        assert_eq!(combine_writers(&[idle, idle]), WriterFigures::default());
    }

    // ---- CSV

    const SEED_CSV_ROW: &str = "131072,46178,6052642816,311689216,297795584,302732356,4977438,375889,4935648,26333226,348698688\n";

    #[test]
    fn csv_header_is_exact() {
        assert_eq!(
            CSV_HEADER,
            "Blocksize,Total writes to files,Total bytes written to files,Max bytes/sec written to files (over 1 sec interval),Min bytes/sec written to files (over 1 sec interval),Avg bytes/sec written to files,Max latency of write (ns),Min latency of write (ns),Avg latency of write (ns),Min bytes/sec (slowest write),Max bytes/sec (fastest write)"
        );
        assert_eq!(csv_header(1), format!("{CSV_HEADER}\n"));
        assert_eq!(CSV_HEADER.split(',').count(), 11);
        assert_eq!(
            csv_header(2),
            "Blocksize,Total writes to files,Total bytes written to files,Max bytes/sec written to files by a single qm (over 1 sec interval),Min bytes/sec written to files by a single qm (over 1 sec interval),Avg bytes/sec written to files by all queue managers,Max latency of write (ns),Min latency of write (ns),Avg latency of write (ns),Min bytes/sec (slowest write),Max bytes/sec (fastest write)\n"
        );
    }

    #[test]
    fn csv_row_of_the_seed_has_no_separators() {
        assert_eq!(
            csv_row(131_072, &seed_totals(), &seed_latency()),
            SEED_CSV_ROW
        );
        assert_eq!(
            csv_row(0, &Totals::default(), &LatencyLines::default()),
            "0,0,0,0,0,0,0,0,0,0,0\n"
        );
    }

    #[test]
    fn csv_truncates_for_one_writer() {
        let rows = [
            csv_row(131_072, &seed_totals(), &seed_latency()),
            csv_row(4096, &Totals::default(), &LatencyLines::default()),
        ];
        assert_eq!(
            csv_text(1, &rows),
            (
                CsvMode::Truncate,
                format!("{CSV_HEADER}\n{SEED_CSV_ROW}4096,0,0,0,0,0,0,0,0,0,0\n")
            )
        );
        assert_eq!(csv_start(0), (CsvMode::Truncate, csv_header(1)));
        assert_eq!(csv_text(1, &[]), csv_start(1));
    }

    #[test]
    fn csv_appends_for_several_queue_managers() {
        let rows = [csv_row(131_072, &seed_totals(), &seed_latency())];
        let (mode, text) = csv_text(4, &rows);
        assert_eq!(mode, CsvMode::Append);
        assert_eq!(
            text,
            format!(
                "Running MQLDT over 4 Queue Managers\n{}{SEED_CSV_ROW}",
                csv_header(4)
            )
        );
        assert_eq!(
            csv_start(10).1.lines().next(),
            Some("Running MQLDT over 10 Queue Managers")
        );
    }

    #[test]
    fn modern_csv_extends_the_classic_columns() {
        assert_eq!(
            modern_csv_header(1),
            format!("{CSV_HEADER},IOPS,p50 (ns),p90 (ns),p99 (ns),p99.9 (ns),p99.99 (ns)\n")
        );
        assert!(modern_csv_header(2).contains("by a single qm"));
        let p = Percentiles {
            p50_ns: 410_000,
            p90_ns: 450_000,
            p99_ns: 900_000,
            p99_9_ns: 2_000_000,
            p99_99_ns: 4_900_000,
        };
        assert_eq!(
            modern_csv_row(131_072, &seed_totals(), &seed_latency(), &p),
            format!(
                "{},2308,410000,450000,900000,2000000,4900000\n",
                SEED_CSV_ROW.trim_end()
            )
        );
        assert_eq!(
            modern_csv_header(1).split(',').count(),
            modern_csv_row(0, &Totals::default(), &LatencyLines::default(), &p)
                .split(',')
                .count()
        );
    }

    // ---- properties

    proptest::proptest! {
        #[test]
        fn grouping_only_inserts_commas(n in proptest::num::i64::ANY) {
            let grouped = group_thousands(n, Grouping::Comma);
            proptest::prop_assert_eq!(grouped.replace(',', ""), n.to_string());
            let digits = grouped.trim_start_matches('-');
            for (i, group) in digits.split(',').enumerate() {
                proptest::prop_assert!(group.len() == 3 || (i == 0 && !group.is_empty() && group.len() < 3));
            }
            proptest::prop_assert_eq!(group_thousands(n, Grouping::None), n.to_string());
        }

        #[test]
        fn blocks_never_panic(
            values in proptest::collection::vec(proptest::num::u64::ANY, 13),
            qm in proptest::num::u32::ANY,
            comma in proptest::bool::ANY,
        ) {
            let g = if comma { Grouping::Comma } else { Grouping::None };
            let t = Totals {
                writes: values[0], iops: values[1], bytes: values[2],
                interval_max_bps: values[3], interval_min_bps: values[4], avg_bps: values[5],
            };
            let l = LatencyLines {
                max_ns: values[6], max_index: values[7], slowest_write_bps: values[8],
                min_ns: values[9], min_index: values[10], fastest_write_bps: values[11],
                avg_ns: values[12],
            };
            let totals = totals_block(&t, qm, g);
            proptest::prop_assert_eq!(totals.lines().count(), 6);
            let colon = if qm > 1 { 68 } else { 53 };
            for line in totals.lines() {
                proptest::prop_assert_eq!(line.find(" : ").map(|i| i + 1), Some(colon));
            }
            proptest::prop_assert_eq!(latency_block(&l, g).lines().count(), 5);
            let row = csv_row(values[0], &t, &l);
            proptest::prop_assert_eq!(row.trim_end().split(',').count(), 11);
            proptest::prop_assert!(!row.contains(' '));
            let _ = progress_tick(values[0], values[1]);
            let _ = write_bandwidth(values[0], values[1]);
            let _ = iops(values[0], values[1]);
            let _ = run_is_over(values[0], values[1]);
            let _ = csv_start(qm);
        }
    }
}
