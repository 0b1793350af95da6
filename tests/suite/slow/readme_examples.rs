//! Every example command of the README and of the documents its sections
//! moved to (`DOCUMENTS`) runs as written: the commands of their
//! ```sh blocks that start with `latscope` (or a compat name such as
//! `pmqtest`) are extracted and run in order, in one scratch directory (so a
//! later example finds the files an earlier one wrote), each shortened:
//! durations, loop counts and file sizes are cut, directories such as
//! `/var/san1/testdir` become directories of the scratch directory, and an
//! output redirection is checked as standard output instead. Everything else
//! (subcommand, options, option spellings, values that decide validity) is
//! passed as the README writes it, so an example that is bad usage fails here.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Names under which latscope behaves as another tool.
const COMPAT: [&str; 7] = [
    "pmqtest",
    "sigwaittest",
    "semtest",
    "svsematest",
    "latency",
    "mqldt",
    "ptsematest",
];

/// The documents whose examples run, in this order, in one scratch
/// directory: the README, then the pages its sections moved to (a later
/// example may read a file an earlier one wrote).
const DOCUMENTS: [&str; 8] = [
    "README.md",
    "docs/guide.md",
    "docs/spikes.md",
    "docs/compat.md",
    "docs/interpreting.md",
    "docs/fleet.md",
    "docs/samples.md",
    "docs/cleanup.md",
];

/// One example: its line in its document and its words (after the shell's
/// quoting).
#[derive(Debug)]
struct Example {
    line: usize,
    text: String,
    words: Vec<String>,
    /// `> FILE`: the README sends standard output to a file.
    redirected: bool,
    /// The rows of the output block shown right after the example's block,
    /// when that output is a table of tests (a header starting `Test `): the
    /// first word of each row.
    shown_rows: Option<Vec<String>>,
}

/// Splits a command line like sh for what the README uses: blanks, single
/// and double quotes. Stops at an unquoted `#` (a comment) and at `>`.
fn shell_words(line: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut redirected = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') if word.is_none() => break,
            (None, '>') if word.is_none() => {
                redirected = true;
                break;
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    (words, redirected)
}

/// The example commands of a document's ```sh blocks, continuation lines
/// (`\` at the end) joined; the first example of a block takes the table
/// rows of the output block that follows the block (blank lines between).
fn examples(readme: &str) -> Vec<Example> {
    let mut found: Vec<Example> = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    // The first example of the block just closed, while only blank lines
    // follow it.
    let mut closed_block: Option<usize> = None;
    // The output block being read, for that example.
    let mut output: Option<(usize, String)> = None;
    let mut block_first: Option<usize> = None;
    for (i, raw) in readme.lines().enumerate() {
        let line = raw.trim_end();
        if line.starts_with("```") {
            if let Some((example, text)) = output.take() {
                found[example].shown_rows = table_rows(&text);
                continue;
            }
            if in_sh {
                in_sh = false;
                closed_block = block_first.take();
                continue;
            }
            in_sh = matches!(line, "```sh" | "```bash" | "```shell");
            match closed_block.take() {
                Some(first) if line == "```" => output = Some((first, String::new())),
                _ => {}
            }
            continue;
        }
        if let Some((_, text)) = output.as_mut() {
            text.push_str(line);
            text.push('\n');
            continue;
        }
        if !in_sh {
            if !line.is_empty() {
                closed_block = None;
            }
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((i + 1, String::new()));
        text.push_str(line.trim_start());
        if let Some(stripped) = text.strip_suffix('\\') {
            pending = Some((start, format!("{stripped} ")));
            continue;
        }
        let (words, redirected) = shell_words(&text);
        let tool = words.first().map(String::as_str).unwrap_or("");
        if tool == "latscope" || COMPAT.contains(&tool) {
            block_first.get_or_insert(found.len());
            found.push(Example {
                line: start,
                text,
                words,
                redirected,
                shown_rows: None,
            });
        }
    }
    found
}

/// The first word of each row of a table of tests (the lines after a header
/// starting `Test `, up to the first line that is not a row: empty, or a
/// `warning:`-like line); None when the text has no such table.
fn table_rows(text: &str) -> Option<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Test "));
    lines.next()?;
    let rows = lines
        .take_while(|l| {
            let first = l.split_whitespace().next().unwrap_or("");
            !first.is_empty() && !first.ends_with(':')
        })
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    Some(rows)
}

/// Options whose value is a duration (`-T` is the timer's), and how long
/// the shortened run takes instead. `suite` and `ipc` share their time
/// among their tests, so they get more.
fn short_duration(tool_and_sub: &[String], option: &str) -> Option<&'static str> {
    let sub = tool_and_sub.get(1).map(String::as_str).unwrap_or("");
    let is_timer = sub == "timer" || tool_and_sub[0] == "latency";
    match option {
        "-D" | "--duration" if sub == "suite" => Some("4s"),
        "-D" | "--duration" if sub == "ipc" => Some("1s"),
        "-D" | "--duration" => Some("1"),
        "-T" if is_timer => Some("1"),
        _ => None,
    }
}

/// The shortened value of `option`'s `value`, if it is cut; the scratch
/// directory `scratch` replaces directories outside it.
fn shortened(words: &[String], option: &str, value: &str, scratch: &Path) -> Option<String> {
    if let Some(d) = short_duration(words, option) {
        return Some(d.to_string());
    }
    let sub = words.get(1).map(String::as_str).unwrap_or("");
    let number = value.parse::<u64>().ok();
    match option {
        // Loop counts (`-i` is semtest's iterations under `sem`).
        "-l" | "--loops" => number.map(|n| n.min(1000).to_string()),
        "-i" if sub == "sem" => number.map(|n| n.min(1000).to_string()),
        "--fileSize" => Some("1M".to_string()),
        "--numFiles" => number.map(|n| n.min(2).to_string()),
        "--dir" if value.starts_with('/') => {
            let dir = scratch.join(value.trim_start_matches('/').replace('/', "-"));
            Some(dir.to_string_lossy().into_owned())
        }
        _ => None,
    }
}

/// The argv the test runs: the README's words with the cuts applied. Short
/// options with a glued value (`-l20000`) are left as written.
fn shortened_argv(words: &[String], scratch: &Path) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let word = &words[i];
        if let Some((option, value)) = word.split_once('=').filter(|(o, _)| o.starts_with("--")) {
            match shortened(words, option, value, scratch) {
                Some(v) => argv.push(format!("{option}={v}")),
                None => argv.push(word.clone()),
            }
            i += 1;
            continue;
        }
        argv.push(word.clone());
        if word.starts_with('-')
            && let Some(value) = words.get(i + 1)
            && let Some(v) = shortened(words, word, value, scratch)
        {
            argv.push(v);
            i += 2;
            continue;
        }
        i += 1;
    }
    argv
}

/// A bound for an example that runs until stopped or for long by default:
/// the options to add when none of `given` is there.
fn bound(sub: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    const IPC: [&str; 8] = [
        "mq", "signal", "svsem", "pipe", "eventfd", "futex", "unix", "svmq",
    ];
    match sub {
        "suite" => Some((&["-D", "--duration"], &["-D", "4s"])),
        "ipc" => Some((&["-D", "--duration"], &["-D", "1s"])),
        "sem" => Some((&["-i", "--iterations", "-D", "--duration"], &["-i", "1000"])),
        "timer" => Some((&["-T", "--duration", "-D"], &["-T", "1"])),
        s if IPC.contains(&s) => Some((&["-l", "--loops", "-D", "--duration"], &["-D", "1"])),
        _ => None,
    }
}

/// `argv` with the bound of its subcommand added when it has none.
fn bounded(mut argv: Vec<String>) -> Vec<String> {
    let Some((given, add)) = argv.first().and_then(|s| bound(s)) else {
        return argv;
    };
    let has = argv.iter().any(|w| {
        given
            .iter()
            .any(|g| w == g || w.starts_with(&format!("{g}=")))
    });
    if !has {
        argv.extend(add.iter().map(|s| s.to_string()));
    }
    argv
}

/// Directories the example needs: those it names with `--dir`, and with
/// `--qm N` the N numbered ones.
fn make_dirs(argv: &[String]) {
    let mut dir = None;
    let mut qm = None;
    for (i, w) in argv.iter().enumerate() {
        let value = |name: &str| {
            w.strip_prefix(&format!("{name}="))
                .map(str::to_string)
                .or_else(|| (w == name).then(|| argv.get(i + 1).cloned()).flatten())
        };
        dir = dir.or(value("--dir"));
        qm = qm.or(value("--qm").and_then(|v| v.parse::<u32>().ok()));
    }
    if let Some(dir) = dir {
        match qm {
            Some(n) => (1..=n).for_each(|k| std::fs::create_dir_all(format!("{dir}{k}")).unwrap()),
            None => std::fs::create_dir_all(&dir).unwrap(),
        }
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Why an example cannot run on this machine (then it is skipped, said so).
fn unavailable(argv: &[String]) -> Option<String> {
    let loads_hackbench = argv
        .windows(2)
        .any(|w| w[0] == "--load" && w[1].starts_with("hackbench"));
    if loads_hackbench && !on_path("hackbench") {
        return Some("hackbench (rt-tests) is not installed".to_string());
    }
    let needs_root = argv
        .iter()
        .any(|w| w == "--breakdown" || w == "--trace-spikes");
    if needs_root && !euid_is_root() {
        return Some("kernel tracing needs root".to_string());
    }
    None
}

/// Exit codes an example may end with: 0, or 3 when it asks for a verdict
/// (`--fail-if`, `--max-latency`, `doctor`) and it went that way (255 for
/// rt-migrate-test's `-c`): a bound
/// is the machine's verdict, which its load may cross (the 11-29 quiet
/// trial: the timer's worst wake-up at 1.31 ms in a VM). What the README's
/// bounded examples judge, wake-ups only and never disk writes or noise
/// (issue 40 item 18), `the_readme_s_max_latency_examples_pass` checks.
fn acceptable(argv: &[String], code: Option<i32>) -> bool {
    let verdict = argv.first().map(String::as_str) == Some("doctor")
        || argv
            .iter()
            .any(|w| w.starts_with("--fail-if") || w.starts_with("--max-latency"));
    // rt-migrate-test's `-c` is its check, whose failure is exit 255: a
    // verdict on this machine's balancing under its load, as a bound's 3.
    let migrate_check = argv.first().map(String::as_str) == Some("rt-migrate-test")
        && argv.iter().any(|w| w == "-c" || w == "--check");
    code == Some(0) || (verdict && code == Some(3)) || (migrate_check && code == Some(255))
}

#[test]
fn every_readme_example_runs_as_written() {
    let mut all = Vec::new();
    for document in DOCUMENTS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(document);
        let text = std::fs::read_to_string(&path).expect(document);
        all.extend(examples(&text).into_iter().map(|e| (document, e)));
    }
    assert!(all.len() >= 30, "only {} examples found", all.len());
    assert!(
        all.iter().any(|(_, e)| e.shown_rows.is_some()),
        "no example shows a table of tests: the row check would prove nothing"
    );
    let scratch = disk_dir("readme-examples-");
    // The compat names are links to the binary, as the package installs them.
    let links: PathBuf = scratch.path().join("bin");
    std::fs::create_dir(&links).unwrap();
    for name in COMPAT {
        std::os::unix::fs::symlink(bin(), links.join(name)).unwrap();
    }
    let mlock = mlock_args();
    let mut failures = Vec::new();
    for (document, example) in &all {
        let mut argv = shortened_argv(&example.words, scratch.path());
        if example.words[0] == "latscope" {
            argv = bounded(argv);
        }
        if let Some(why) = unavailable(&argv) {
            latscope::testing::skip_part(
                "slow::readme_examples::every_readme_example_runs_as_written",
                &format!("{document} line {}", example.line),
                &why.to_string(),
            );
            continue;
        }
        make_dirs(&argv);
        let program = match example.words[0].as_str() {
            "latscope" => bin(),
            compat => links.join(compat),
        };
        let mut cmd = std::process::Command::new(&program);
        cmd.args(&argv).current_dir(scratch.path());
        // The tests may run unprivileged: the README's examples assume root.
        let is_measuring = !matches!(
            argv.first().map(String::as_str),
            Some("compare" | "report" | "completions" | "doctor" | "cleanup")
        );
        if is_measuring && !mlock.is_empty() && example.words[0] == "latscope" {
            cmd.args(mlock);
        }
        // A hang guard only: the shortened runs take seconds.
        let out = run_std_with_timeout(cmd, Duration::from_secs(300));
        let code = out.status.code();
        let ok = acceptable(&argv, code) && (!example.redirected || !out.stdout.is_empty());
        // The output the document shows has the rows the real output has.
        if let Some(shown) = &example.shown_rows {
            let real = table_rows(&String::from_utf8_lossy(&out.stdout));
            if real.as_ref() != Some(shown) {
                failures.push(format!(
                    "{document} line {}: {}\n  shows the rows {shown:?}, the real output has {real:?}",
                    example.line, example.text
                ));
            }
        }
        if !ok {
            failures.push(format!(
                "{document} line {}: {}\n  ran: {} {}\n  exit {code:?}; stderr: {}",
                example.line,
                example.text,
                example.words[0],
                argv.join(" "),
                evidence("stderr", stderr_of(&out).trim())
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} documented examples failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// The README's first command, run as a newcomer runs it: every line it
/// prints, on standard output and standard error, fits a 100-column
/// terminal (whatever the warnings this machine gets; nothing masked).
#[test]
fn the_first_command_s_output_fits_100_columns() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let first = examples(&readme)
        .into_iter()
        .next()
        .expect("a README example");
    assert_eq!(first.words[0], "latscope", "{first:?}");
    let scratch = disk_dir("readme-first-");
    let argv = bounded(shortened_argv(&first.words, scratch.path()));
    let mut cmd = std::process::Command::new(bin());
    cmd.args(&argv)
        .args(mlock_args())
        .current_dir(scratch.path());
    let out = run_std_with_timeout(cmd, Duration::from_secs(120));
    assert!(acceptable(&argv, out.status.code()), "{}", describe(&out));
    let text = format!("{}{}", stdout_of(&out), stderr_of(&out));
    assert!(text.lines().count() > 5, "{}", describe(&out));
    let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 100).collect();
    assert!(
        wide.is_empty(),
        "{} lines wider than 100 columns:\n{}",
        wide.len(),
        wide.join("\n")
    );
}

#[test]
fn the_example_extraction_reads_quotes_comments_and_continuations() {
    let readme = "text\n```sh\nlatscope mq -D 1h30m   # a comment\nlatscope compare a.json \\\n    --fail-if 'p99>+10%' b.json\nls -l\n```\n```\nlatscope not-sh\n```\n```sh\nlatscope completions zsh > ~/.zfunc/_latscope  # dir\n```\n";
    let found = examples(readme);
    let words: Vec<Vec<String>> = found.iter().map(|e| e.words.clone()).collect();
    assert_eq!(
        words,
        [
            vec!["latscope", "mq", "-D", "1h30m"],
            vec![
                "latscope",
                "compare",
                "a.json",
                "--fail-if",
                "p99>+10%",
                "b.json"
            ],
            vec!["latscope", "completions", "zsh"],
        ]
    );
    assert_eq!(found[1].line, 4);
    assert!(found[2].redirected && !found[0].redirected);
    let scratch = Path::new("/s");
    let argv = shortened_argv(&found[0].words, scratch);
    assert_eq!(argv, ["mq", "-D", "1"]);
    let logdisk: Vec<String> =
        args("latscope logdisk --dir=/var/san1/testdir --bsize=5K,9K --fileSize=67108864 --numFiles=16 --duration=40")
            .iter()
            .map(|s| s.to_string())
            .collect();
    assert_eq!(
        shortened_argv(&logdisk, scratch),
        [
            "logdisk",
            "--dir=/s/var-san1-testdir",
            "--bsize=5K,9K",
            "--fileSize=1M",
            "--numFiles=2",
            "--duration=1"
        ]
    );
}

#[test]
fn the_output_block_after_an_example_gives_its_table_rows() {
    let doc = "```sh\nlatscope suite\nlatscope suite -D 1m\n```\n\n```\nlatscope suite on host (...)\nTest   What  Series\nmq     POSIX   2\ntimer  periodic 2\nwarning: a VM\n```\n```sh\nlatscope mq\n```\ntext\n```\nTest x\nsem 1\n```\n";
    let found = examples(doc);
    assert_eq!(found.len(), 3);
    assert_eq!(
        found[0].shown_rows,
        Some(vec!["mq".to_string(), "timer".to_string()])
    );
    // Only the first example of a block, and only an output block that
    // follows the block with nothing but blank lines between.
    assert_eq!(found[1].shown_rows, None);
    assert_eq!(found[2].shown_rows, None);
    assert_eq!(table_rows("no table\n"), None);
}

/// The README's `--max-latency` examples, run as a newcomer runs them
/// (shortened as above): the suite's bound judges the wake-ups it is meant
/// for, never the disk writes and noise it used to fail on (issue 40 item
/// 18), so the example exits 0 on this machine when its wake-ups stay under
/// the bound. A wake-up the machine's own load delays past it (the 11-29
/// whole-suite trial: the timer's 1.31 ms beside another run) is the
/// verdict working, not the example failing: that part is a counted skip.
#[test]
fn the_readme_s_max_latency_examples_pass() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let bounded_examples: Vec<Example> = examples(&readme)
        .into_iter()
        .filter(|e| e.words.iter().any(|w| w.starts_with("--max-latency")))
        .collect();
    assert!(
        bounded_examples
            .iter()
            .any(|e| e.words.get(1).map(String::as_str) == Some("suite")),
        "the README has no suite --max-latency example: {bounded_examples:?}"
    );
    let scratch = disk_dir("readme-bound-");
    for example in &bounded_examples {
        let argv = bounded(shortened_argv(&example.words, scratch.path()));
        let mut cmd = std::process::Command::new(bin());
        cmd.args(&argv)
            .args(mlock_args())
            .current_dir(scratch.path());
        let out = run_std_with_timeout(cmd, Duration::from_secs(120));
        let what = format!("README line {}: {}", example.line, example.text);
        let stdout = stdout_of(&out);
        let crossed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("FAIL: latency limit crossed by "))
            .collect();
        for by in &crossed {
            assert!(
                !by.starts_with("noise") && !by.starts_with("logdisk"),
                "{what}: the wake-up bound judged {by}\n{}",
                describe(&out)
            );
        }
        match out.status.code() {
            Some(0) => {}
            Some(3) if !crossed.is_empty() => latscope::testing::skip_part(
                "slow::readme_examples::the_readme_s_max_latency_examples_pass",
                &format!("README line {}", example.line),
                &format!(
                    "this machine's load delayed wake-ups past the bound: {}",
                    crossed.join(", ")
                ),
            ),
            _ => panic!("{what}\n{}", describe(&out)),
        }
    }
}
