//! The layers of src/ as import rules that check themselves (docs/architecture.md,
//! "## Layers"). Every `crate::`, `super::` and `self::` path of every file under
//! src/ (use statements, grouped `use crate::{a, b::c}` included, and inline paths)
//! is resolved to the module it names, both ends are mapped to a layer, and the
//! table `RULES` is checked. A broken rule fails with the file, the line, the path
//! as written and the rule's reason, so whoever breaks it learns why it exists.
//!
//! This reads the source text rather than asking the compiler: it has to run as an
//! ordinary test, with no extra tool, on every `cargo test`.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::Path;

/// Where a module sits. The order is the layering, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    /// units, stats/: pure computations, no OS.
    Pure,
    /// rt/: the OS layer.
    Os,
    /// probes/: the programs latscope runs in the kernel, every family, on
    /// rt/bpf's mechanism (and the tracefs twins they are chosen against).
    Probes,
    /// report/mod.rs and report/model/: the Report model (serialized data).
    Model,
    /// ipc/, timer/, logdisk/ (the tests), spikes/, doctor/, load/ (services the
    /// tests share) and threshold.
    Measurement,
    /// report/cells.rs: the text pieces several exporters share.
    ExporterShared,
    /// every other file (or directory) of report/: one exporter each.
    Exporter,
    /// settings/.
    Settings,
    /// cli/.
    Cli,
    /// live/: what people see while a test runs (status lines, the original
    /// tools' live lines).
    Live,
    /// pipeline/: the one run sequence every measuring command goes through.
    Pipeline,
    /// measure/: each kind of test run on the prepared process and turned into
    /// report data (the measure functions the commands hand the pipeline).
    Measure,
    /// commands/: the top, which drives everything else.
    Top,
}

/// One module as the rules see it: its layer and its component (the name two
/// paths must share to be "the same module": `ipc`, `report::console`,
/// `commands::suite`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unit {
    layer: Layer,
    component: String,
}

/// The measurement modules that are tests of their own; the other measurement
/// modules (spikes, doctor, load, threshold) are services the tests share.
const TESTS: &[&str] = &["ipc", "timer", "logdisk", "noise", "hwlat"];

/// Maps a module path (segments after `crate::`) to its unit. `exporters` and
/// `commands` are the file or directory names under src/report/ (except the
/// model) and src/commands/ (except mod.rs). None for the crate root and for
/// names this table does not know (a crate-level item), which no rule covers.
fn unit_of(
    segs: &[String],
    exporters: &BTreeSet<String>,
    commands: &BTreeSet<String>,
) -> Option<Unit> {
    let first = segs.first()?.as_str();
    let second = segs.get(1).map(String::as_str);
    let (layer, component) = match first {
        "units" | "stats" => (Layer::Pure, first.to_string()),
        "rt" => (Layer::Os, first.to_string()),
        "probes" => (Layer::Probes, first.to_string()),
        // `crate::report::Report` names the model through report/mod.rs's
        // re-export; only a path through an exporter's own module is that exporter.
        "report" => match second {
            Some("cells") => (Layer::ExporterShared, "report::cells".to_string()),
            Some(s) if exporters.contains(s) => (Layer::Exporter, format!("report::{s}")),
            _ => (Layer::Model, "report".to_string()),
        },
        "ipc" | "timer" | "logdisk" | "noise" | "hwlat" | "spikes" | "doctor" | "load"
        | "kernel_log" | "threshold" | "samples" | "compare" => {
            (Layer::Measurement, first.to_string())
        }
        "settings" => (Layer::Settings, first.to_string()),
        "cli" => (Layer::Cli, first.to_string()),
        "live" => (Layer::Live, first.to_string()),
        "pipeline" => (Layer::Pipeline, first.to_string()),
        "measure" => match second {
            Some(s) => (Layer::Measure, format!("measure::{s}")),
            None => (Layer::Measure, first.to_string()),
        },
        "commands" => match second {
            Some(s) if commands.contains(s) => (Layer::Top, format!("commands::{s}")),
            _ => (Layer::Top, first.to_string()),
        },
        _ => return None,
    };
    Some(Unit { layer, component })
}

/// One rule: `broken` says whether an import from `from` to `to` (two different
/// components) breaks it; `reason` is printed with every break.
struct Rule {
    name: &'static str,
    reason: &'static str,
    broken: fn(&Unit, &Unit) -> bool,
}

fn is_test(u: &Unit) -> bool {
    TESTS.contains(&u.component.as_str())
}

const RULES: &[Rule] = &[
    Rule {
        name: "stats/ and units are pure",
        reason: "they hold the arithmetic every layer shares (the exporters included): \
                 they make no system call and know no test, report or command line, so \
                 they import nothing but each other",
        broken: |f, t| f.layer == Layer::Pure && t.layer != Layer::Pure,
    },
    Rule {
        name: "rt/ imports nothing above it",
        reason: "rt/ is the OS layer everything else is built on; an import from rt/ to \
                 a higher layer is an import circle (rt/sysinfo <-> doctor/ was one) and \
                 ties the OS calls to one test, exporter or front end",
        broken: |f, t| f.layer == Layer::Os && t.layer > Layer::Os,
    },
    Rule {
        name: "the Report model imports only rt/, stats/ and units",
        reason: "the model is the data every producer fills and every exporter reads; \
                 if it imported a producer or an exporter, exporters would depend on \
                 measurement code through it and the JSON would change with them",
        broken: |f, t| f.layer == Layer::Model && t.layer > Layer::Model,
    },
    Rule {
        name: "measurement modules import nothing from cli/, settings/, commands/ or pipeline/",
        reason: "ipc/, timer/, logdisk/, spikes/, doctor/, load/ and threshold take typed \
                 values and fill the model; the front end sits above them and calls them, \
                 so an import upward is a circle and ties a measurement to one command line",
        broken: |f, t| f.layer == Layer::Measurement && t.layer >= Layer::Settings,
    },
    Rule {
        name: "measurement modules never import an exporter",
        reason: "what a test measures is computed in the test (or stats/) and stored in \
                 the model; an exporter only formats it (mqldt's interval meter lived in \
                 an exporter that logdisk/ imported)",
        broken: |f, t| f.layer == Layer::Measurement && t.layer == Layer::Exporter,
    },
    Rule {
        name: "no measurement module imports another test's module",
        reason: "ipc/, timer/ and logdisk/ are independent tests: what two of them share \
                 belongs in stats/, rt/, the model or a shared service (spikes/, doctor/, \
                 load/), and a service that imported a test would serve only that test",
        broken: |f, t| f.layer == Layer::Measurement && is_test(t),
    },
    Rule {
        name: "exporters import only the model, stats/, units and report/cells.rs",
        reason: "an exporter turns a Report into text; it must print the same bytes for \
                 the same Report whatever produced it, so it cannot reach into rt/, a \
                 test, settings or another exporter; what several exporters share is in \
                 report/cells.rs (console <-> console_timer was an import circle)",
        broken: |f, t| {
            f.layer == Layer::Exporter
                && !matches!(t.layer, Layer::Pure | Layer::Model | Layer::ExporterShared)
        },
    },
    Rule {
        name: "report/cells.rs imports only the model, stats/ and units",
        reason: "it holds the text pieces every exporter may use, so it cannot depend \
                 on any one exporter (that would be a circle) nor on anything an \
                 exporter may not import",
        broken: |f, t| {
            f.layer == Layer::ExporterShared && !matches!(t.layer, Layer::Pure | Layer::Model)
        },
    },
    Rule {
        name: "settings/ imports nothing from commands/ or pipeline/",
        reason: "settings/ turns arguments into typed settings before anything runs; the \
                 commands use settings, never the reverse",
        broken: |f, t| f.layer == Layer::Settings && t.layer >= Layer::Live,
    },
    Rule {
        name: "live displays import no pipeline, measure function or command",
        reason: "a live display shows what the measuring threads publish (atomics, the \
                 timer's loop records) in one format; it is handed to a measurement, so \
                 if it reached up into the run it would be a circle",
        broken: |f, t| f.layer == Layer::Live && t.layer > Layer::Live,
    },
    Rule {
        name: "the pipeline imports no measure function and no command",
        reason: "pipeline/ is the one run sequence for every kind of test: it knows a \
                 `Measurement` only through the trait, so adding a test never changes it \
                 (the run sequence was written out five times before it existed)",
        broken: |f, t| f.layer == Layer::Pipeline && t.layer > Layer::Pipeline,
    },
    Rule {
        name: "measure functions import no command and no other measure module",
        reason: "measure/ipc.rs, timer.rs and logdisk.rs each turn one kind of test into \
                 report data and are shared by the commands (suite uses all three); one \
                 that imported another or a command would tie two kinds of test together",
        broken: |f, t| {
            f.layer == Layer::Measure
                && (t.layer == Layer::Top
                    || (t.layer == Layer::Measure && f.component != t.component))
        },
    },
    Rule {
        name: "cli/ imports only units",
        reason: "cli/ only declares arguments; converting them into rt/'s or a test's \
                 types is settings/'s job, so cli/ has its own clap enums (a clap trait \
                 derived in rt/ made the OS layer depend on the argument parser)",
        broken: |f, t| f.layer == Layer::Cli && t.layer != Layer::Pure,
    },
    Rule {
        name: "a command reaches its test through measure/",
        reason: "a command turns settings into a run through its measure function \
                 (measure/<test>.rs: settings -> plan -> the test's run -> FinishedTest), \
                 so that the run of a test is written once, whichever command or drop-in \
                 asks for it (cyclictest's and oslat's runs once circled inside their \
                 command files, past measure/ and the pipeline)",
        broken: |f, t| f.layer == Layer::Top && is_test(t),
    },
    Rule {
        name: "no command module imports another command module",
        reason: "each file of commands/ runs one subcommand; what two of them share is \
                 either the run sequence (pipeline/) or belongs below them, and commands/mod.rs \
                 (the dispatcher) is the only file that knows them all",
        broken: |f, t| {
            f.component.starts_with("commands::") && t.component.starts_with("commands::")
        },
    },
    Rule {
        name: "probes/ imports only rt/, stats/ and units",
        reason: "probes/ holds the kernel programs every test and service shares (the \
                 timer's wake-up slots, the flight recorder, the next family); a program \
                 that imported a test or a service would serve only it, and the services \
                 (spikes/, timer/) that use the programs would form a circle with it",
        broken: |f, t| f.layer == Layer::Probes && t.layer > Layer::Probes,
    },
];

/// Today's breaks of a rule, one (importing file, imported module prefix) each.
/// Every entry must still match an import (a stale one fails the test), so the
/// list only shrinks; add to it only with a reason next to the entry.
const ALLOWED: &[(&str, &str)] = &[];

/// One import: the file, its line (1-based), the path as written, and the
/// module it resolves to (segments after `crate::`).
#[derive(Debug)]
struct Import {
    line: usize,
    written: String,
    target: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    written: String,
    rule: &'static str,
    reason: &'static str,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` breaks the rule \"{}\": {}",
            self.file, self.line, self.written, self.rule, self.reason
        )
    }
}

/// The source with comments and the contents of string and character literals
/// replaced by blanks (line breaks kept), so that a path in a doc comment or a
/// message is not taken for an import and line numbers stay right.
fn blank_comments_and_literals(src: &str) -> Vec<char> {
    let c: Vec<char> = src.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let end = c[i..]
                .iter()
                .position(|&x| x == '\n')
                .map_or(c.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"') | Some('#'))
        {
            let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let mut j = i + 2 + hashes;
            while j < c.len() {
                if c[j] == '"'
                    && c[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes
                {
                    break;
                }
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\''), or else a lifetime.
            if c.get(i + 1) == Some(&'\\') {
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

fn tokens(blanked: &[char]) -> Vec<Token> {
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < blanked.len() {
        let ch = blanked[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < blanked.len() && (blanked[i].is_alphanumeric() || blanked[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: blanked[start..i].iter().collect(),
                line,
            });
        } else if ch == ':' && blanked.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Parses a path tree from `toks[*i]` on: `a::b::c`, `a::{b, c::{d, e}}`,
/// `a::*`, stopping at anything else (`::<`, `(`, `as`, ...). Returns every
/// path the tree names, each as its segments.
fn path_tree(toks: &[Token], i: &mut usize) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    loop {
        let Some(t) = toks.get(*i) else {
            return vec![segs];
        };
        if t.text == "{" {
            *i += 1;
            let mut all = Vec::new();
            while let Some(t) = toks.get(*i) {
                if t.text == "}" {
                    *i += 1;
                    break;
                }
                if t.text == "," {
                    *i += 1;
                    continue;
                }
                let before = *i;
                for sub in path_tree(toks, i) {
                    let mut p = segs.clone();
                    p.extend(sub);
                    all.push(p);
                }
                // Skip `as alias` (and anything unexpected) up to the next item.
                while let Some(t) = toks.get(*i) {
                    if t.text == "," || t.text == "}" {
                        break;
                    }
                    *i += 1;
                }
                if *i == before {
                    *i += 1;
                }
            }
            return all;
        }
        if t.text == "*" {
            *i += 1;
            return vec![segs];
        }
        if !is_ident(&t.text) {
            return vec![segs];
        }
        segs.push(t.text.clone());
        *i += 1;
        if toks.get(*i).is_some_and(|t| t.text == "::")
            && toks.get(*i + 1).is_some_and(|t| t.text != "<")
        {
            *i += 1;
        } else {
            return vec![segs];
        }
    }
}

/// The tokens of a path as one would write them: `crate::{a, b as c}`.
fn written(toks: &[Token]) -> String {
    let mut s = String::new();
    for (k, t) in toks.iter().enumerate() {
        if k > 0 && is_ident(&t.text) && is_ident(&toks[k - 1].text) {
            s.push(' ');
        }
        s.push_str(&t.text);
        if t.text == "," {
            s.push(' ');
        }
    }
    s
}

/// The module a file defines: src/a/b.rs -> [a, b], src/a/mod.rs -> [a].
fn file_module(rel: &str) -> Vec<String> {
    let rel = rel
        .strip_prefix("src/")
        .unwrap_or(rel)
        .strip_suffix(".rs")
        .unwrap_or(rel);
    let mut segs: Vec<String> = rel.split('/').map(String::from).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "lib")) {
        segs.pop();
    }
    segs
}

/// Every `crate::`/`super::`/`self::` path of one file, resolved.
fn imports_of(rel: &str, src: &str) -> Vec<Import> {
    let toks = tokens(&blank_comments_and_literals(src));
    let file_mod = file_module(rel);
    // Inline modules (`mod tests { ... }`) shift what `super` means.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut pending_mod) = (0usize, None::<String>);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match t.text.as_str() {
            "{" => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
                i += 1;
                continue;
            }
            "}" => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
                continue;
            }
            "mod" if toks.get(i + 1).is_some_and(|n| is_ident(&n.text)) => {
                pending_mod = Some(toks[i + 1].text.clone());
                i += 2;
                continue;
            }
            ";" => pending_mod = None,
            _ => {}
        }
        let starts_path = matches!(t.text.as_str(), "crate" | "super" | "self")
            && toks.get(i + 1).is_some_and(|n| n.text == "::")
            && (i == 0 || !matches!(toks[i - 1].text.as_str(), "::" | "$"));
        if !starts_path {
            i += 1;
            continue;
        }
        let line = t.line;
        let start = i;
        let mut here = file_mod.clone();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        for path in path_tree(&toks, &mut i) {
            let mut target = Vec::new();
            let mut resolved = true;
            for (k, seg) in path.iter().enumerate() {
                match seg.as_str() {
                    "crate" if k == 0 => target.clear(),
                    "self" if k == 0 => target = here.clone(),
                    "self" => {}
                    "super" if k == 0 => {
                        target = here.clone();
                        resolved &= target.pop().is_some();
                    }
                    "super" => resolved &= target.pop().is_some(),
                    s => target.push(s.to_string()),
                }
            }
            if resolved {
                out.push(Import {
                    line,
                    written: written(&toks[start..i]),
                    target,
                });
            }
        }
        if i == start {
            i += 1;
        }
    }
    out
}

/// Checks `files` (path relative to the crate, e.g. "src/rt/clock.rs", and its
/// text) against `RULES` with `allowed` exceptions. Returns the broken rules and
/// the allowlist entries that no import needs any more.
fn check(files: &[(String, String)], allowed: &[(&str, &str)]) -> (Vec<Violation>, Vec<String>) {
    let names_under = |dir: &str, skip: &[&str]| -> BTreeSet<String> {
        files
            .iter()
            .filter_map(|(p, _)| p.strip_prefix(dir))
            .filter_map(|rest| rest.split('/').next())
            .map(|n| n.strip_suffix(".rs").unwrap_or(n).to_string())
            .filter(|n| !skip.contains(&n.as_str()))
            .collect()
    };
    let exporters = names_under("src/report/", &["mod", "model", "cells"]);
    let commands = names_under("src/commands/", &["mod"]);
    let mut used = vec![false; allowed.len()];
    let mut broken = Vec::new();
    for (rel, src) in files {
        // main.rs is the binary crate: its `crate::` is not the library's.
        if rel == "src/main.rs" {
            continue;
        }
        let Some(from) = unit_of(&file_module(rel), &exporters, &commands) else {
            continue;
        };
        for imp in imports_of(rel, src) {
            let Some(to) = unit_of(&imp.target, &exporters, &commands) else {
                continue;
            };
            if to.component == from.component {
                continue;
            }
            let target = imp.target.join("::");
            for rule in RULES.iter().filter(|r| (r.broken)(&from, &to)) {
                let allow = allowed.iter().position(|(f, t)| {
                    f == rel && (target == *t || target.starts_with(&format!("{t}::")))
                });
                if let Some(k) = allow {
                    used[k] = true;
                    continue;
                }
                broken.push(Violation {
                    file: rel.clone(),
                    line: imp.line,
                    written: imp.written.clone(),
                    rule: rule.name,
                    reason: rule.reason,
                });
            }
        }
    }
    // A grouped use that breaks a rule through several of its names is one break.
    broken.dedup();
    let stale = allowed
        .iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|((f, t), _)| {
            format!("ALLOWED entry ({f:?}, {t:?}) matches no import any more: remove it")
        })
        .collect();
    (broken, stale)
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read src/").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            source_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(root)
                .expect("under the crate")
                .to_string_lossy()
                .into_owned();
            out.push((rel, fs::read_to_string(&p).expect("read a source file")));
        }
    }
}

#[test]
fn the_layers_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    assert!(files.len() > 50, "src/ read: {} files", files.len());
    let (broken, stale) = check(&files, ALLOWED);
    let mut lines: Vec<String> = broken.iter().map(ToString::to_string).collect();
    lines.extend(stale);
    assert!(
        lines.is_empty(),
        "{} import rule(s) broken (docs/architecture.md, \"## Layers\"):\n{}",
        lines.len(),
        lines.join("\n")
    );
}

fn synthetic(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect()
}

/// The demonstration the rules enforce themselves: a planted `use crate::cli::...`
/// in rt/ fails with the file, the line, the path and the reason.
#[test]
fn a_planted_violation_fails_with_its_reason() {
    let files = synthetic(&[
        (
            "src/rt/clock.rs",
            "//! The clock.\nuse crate::units;\nuse crate::cli::Cli;\n",
        ),
        ("src/cli/mod.rs", "pub struct Cli;\n"),
    ]);
    let (broken, stale) = check(&files, &[]);
    assert!(stale.is_empty());
    let text: Vec<String> = broken.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 1, "{text:#?}");
    assert!(
        text[0].starts_with(
            "src/rt/clock.rs:3: `crate::cli::Cli` breaks the rule \"rt/ imports nothing above it\": \
             rt/ is the OS layer"
        ),
        "{}",
        text[0]
    );
}

#[test]
fn grouped_super_and_inline_paths_are_all_seen() {
    let files = synthetic(&[
        (
            "src/logdisk/writer.rs",
            "use crate::{stats::X, settings::{a, logdisk::{b as c}}};\n\
             use super::super::ipc::Transport;\n\
             fn f() { let _ = crate::report::console::render(); }\n\
             // use crate::cli::Cli; in a comment\n\
             const S: &str = \"crate::cli::Cli\";\n\
             fn g<'a>(x: &'a str) -> char { '\"' }\n\
             #[cfg(test)]\nmod tests {\n    use super::super::files;\n    use super::super::super::timer::T;\n}\n",
        ),
        ("src/report/console.rs", "use crate::rt::clock;\n"),
        ("src/report/model/mod.rs", "use crate::report::console;\n"),
        ("src/report/mod.rs", ""),
    ]);
    let (broken, _) = check(&files, &[]);
    let got: Vec<(String, usize, &str)> = broken
        .iter()
        .map(|v| (v.file.clone(), v.line, v.rule))
        .collect();
    let measurement_up = RULES[3].name;
    let test_to_test = RULES[5].name;
    let exporter_rule = RULES[6].name;
    assert_eq!(
        got,
        vec![
            ("src/logdisk/writer.rs".to_string(), 1, measurement_up),
            ("src/logdisk/writer.rs".to_string(), 2, test_to_test),
            ("src/logdisk/writer.rs".to_string(), 3, RULES[4].name),
            ("src/logdisk/writer.rs".to_string(), 10, test_to_test),
            ("src/report/console.rs".to_string(), 1, exporter_rule),
            ("src/report/model/mod.rs".to_string(), 1, RULES[2].name),
        ]
    );
}

#[test]
fn allowlist_entries_excuse_and_must_stay_needed() {
    let files = synthetic(&[
        (
            "src/commands/suite.rs",
            "use crate::commands::ipc_cmd::run;\n",
        ),
        ("src/commands/ipc_cmd.rs", "use super::CommandError;\n"),
        ("src/commands/mod.rs", "use crate::commands::suite;\n"),
    ]);
    let (broken, stale) = check(
        &files,
        &[
            ("src/commands/suite.rs", "commands::ipc_cmd"),
            ("src/commands/timer_cmd.rs", "commands::x"),
        ],
    );
    assert!(broken.is_empty(), "{broken:#?}");
    assert_eq!(stale.len(), 1);
    assert!(stale[0].contains("timer_cmd.rs"));
    let (broken, _) = check(&files, &[]);
    assert_eq!(broken.len(), 1);
    assert_eq!(
        broken[0].rule,
        "no command module imports another command module"
    );
}

#[test]
fn a_command_reaches_its_test_through_measure() {
    let files = synthetic(&[
        (
            "src/commands/oslat_cmd.rs",
            "use crate::measure::oslat::OslatFacts;\nuse crate::noise::oslat::OslatPlan;\n",
        ),
        ("src/commands/mod.rs", ""),
        (
            "src/measure/oslat.rs",
            "use crate::noise::oslat::run_phase;\n",
        ),
    ]);
    let (broken, _) = check(&files, &[]);
    let got: Vec<(&str, usize, &str)> = broken
        .iter()
        .map(|v| (v.file.as_str(), v.line, v.rule))
        .collect();
    assert_eq!(
        got,
        vec![(
            "src/commands/oslat_cmd.rs",
            2,
            "a command reaches its test through measure/"
        )]
    );
}

// ---- Sizes: every function of src/ at most MAX_FN_LINES lines, every file of
// src/commands/ at most MAX_COMMAND_FILE_LINES (docs/architecture.md, "Sizes").

/// Longest function, in lines from its `fn` to its closing brace.
const MAX_FN_LINES: usize = 120;
/// Longest file under src/commands/: a command is thin (settings, a
/// `Measurement`, the pipeline); what it needs beyond that belongs below it,
/// or in a file of its own directory (commands/cleanup/, commands/suite/).
const MAX_COMMAND_FILE_LINES: usize = 150;

/// The files still over the limits, in one place (none since issue 30's big
/// step split the drop-ins' commands and cyclictest's thread function).
/// Every entry must still be over a limit (a stale one fails the test), so
/// the list only shrinks.
const OVERSIZED: &[&str] = &[];

/// Every function of one file: its name, the line of its `fn` and its length
/// in lines. A declaration without a body (a trait's) is not one.
fn functions_of(src: &str) -> Vec<(String, usize, usize)> {
    let toks = tokens(&blank_comments_and_literals(src));
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.text != "fn" || !toks.get(i + 1).is_some_and(|n| is_ident(&n.text)) {
            continue;
        }
        // The body's brace: the first `{` outside the signature's (), [] and
        // <> (a `;` first: no body).
        let mut depth = 0i32;
        let mut body = None;
        for (k, tok) in toks.iter().enumerate().skip(i + 2) {
            match tok.text.as_str() {
                "(" | "[" | "<" => depth += 1,
                ")" | "]" => depth -= 1,
                // `->` is not a closing angle bracket.
                ">" if toks[k - 1].text != "-" => depth -= 1,
                ";" if depth <= 0 => break,
                "{" if depth <= 0 => {
                    body = Some(k);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = body else { continue };
        let mut braces = 0usize;
        for tok in &toks[open..] {
            match tok.text.as_str() {
                "{" => braces += 1,
                "}" => {
                    braces -= 1;
                    if braces == 0 {
                        out.push((toks[i + 1].text.clone(), t.line, tok.line - t.line + 1));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The functions and command files over the limits (`OVERSIZED` excepted),
/// and the `OVERSIZED` entries no longer over any.
fn oversized(files: &[(String, String)], allowed: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut over = Vec::new();
    let mut still_needed = vec![false; allowed.len()];
    for (rel, src) in files {
        let mut found = Vec::new();
        let lines = src.lines().count();
        if rel.starts_with("src/commands/") && lines > MAX_COMMAND_FILE_LINES {
            found.push(format!(
                "{rel}: {lines} lines, more than {MAX_COMMAND_FILE_LINES} for a command file: move what is not the command's below it"
            ));
        }
        for (name, line, length) in functions_of(src) {
            if length > MAX_FN_LINES {
                found.push(format!(
                    "{rel}:{line}: fn {name} is {length} lines, more than {MAX_FN_LINES}: split it into named steps"
                ));
            }
        }
        match allowed.iter().position(|a| *a == rel.as_str()) {
            Some(k) => still_needed[k] |= !found.is_empty(),
            None => over.extend(found),
        }
    }
    let stale = allowed
        .iter()
        .zip(still_needed)
        .filter(|(_, needed)| !needed)
        .map(|(a, _)| format!("OVERSIZED entry {a:?} is within the limits now: remove it"))
        .collect();
    (over, stale)
}

#[test]
fn functions_and_command_files_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let (mut over, stale) = oversized(&files, OVERSIZED);
    over.extend(stale);
    assert!(
        over.is_empty(),
        "{} size limit(s) broken (docs/architecture.md, \"## Sizes\"):\n{}",
        over.len(),
        over.join("\n")
    );
}

#[test]
fn function_lengths_are_counted_from_fn_to_the_closing_brace() {
    let src = "trait T {\n    fn declared(&self) -> u8;\n}\n\
               fn generic<F: Fn() -> u8>(f: F) -> Vec<u8>\nwhere\n    F: Copy,\n{\n    \
               let s = \"{ not a brace\";\n    // } nor this\n    vec![f()]\n}\n\
               impl T for u8 {\n    fn declared(&self) -> u8 { *self }\n}\n";
    assert_eq!(
        functions_of(src),
        vec![
            ("generic".to_string(), 4, 8),
            ("declared".to_string(), 13, 1)
        ]
    );
    let long = format!(
        "fn long() {{\n{}}}\n",
        "    step();\n".repeat(MAX_FN_LINES - 1)
    );
    let files = synthetic(&[("src/commands/x.rs", long.as_str())]);
    let (over, stale) = oversized(&files, &["src/timer/cyclic.rs"]);
    assert_eq!(
        over,
        [format!(
            "src/commands/x.rs:1: fn long is {} lines, more than {MAX_FN_LINES}: split it into named steps",
            MAX_FN_LINES + 1
        )]
    );
    assert_eq!(
        stale,
        ["OVERSIZED entry \"src/timer/cyclic.rs\" is within the limits now: remove it"]
    );
}

// ---- Import circles between the files of one directory (mod.rs, the
// directory's own face, excepted; test modules, which may share test
// helpers, too): a circle means neither file can be read, changed or tested
// without the other (ipc/harness/start.rs and the task files that imported
// it back were one).

/// The circles among `files`: each as its files, in a stable order.
fn sibling_circles(files: &[(String, String)]) -> Vec<Vec<String>> {
    use std::collections::BTreeMap;
    let module_of: BTreeMap<Vec<String>, &str> = files
        .iter()
        .map(|(rel, _)| (file_module(rel), rel.as_str()))
        .collect();
    let dir = |rel: &str| rel.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (rel, src) in files {
        if rel.ends_with("/mod.rs") || rel == "src/main.rs" || rel == "src/lib.rs" {
            continue;
        }
        // The product code: a test module may use a sibling's test helpers.
        let product = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
        for imp in imports_of(rel, product) {
            let mut target = imp.target.clone();
            while !target.is_empty() && !module_of.contains_key(&target) {
                target.pop();
            }
            if let Some(&to) = module_of.get(&target)
                && to != rel.as_str()
                && !to.ends_with("/mod.rs")
                && dir(to) == dir(rel.as_str())
            {
                edges.entry(rel.as_str()).or_default().insert(to);
            }
        }
    }
    // Every file that reaches itself, grouped by the files it shares a
    // circle with (small graphs: a search per file is enough).
    let reach = |from: &str| -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = edges.get(from).into_iter().flatten().copied().collect();
        while let Some(f) = todo.pop() {
            if seen.insert(f) {
                todo.extend(edges.get(f).into_iter().flatten().copied());
            }
        }
        seen
    };
    let mut circles: Vec<Vec<String>> = Vec::new();
    for &from in edges.keys() {
        let reached = reach(from);
        if !reached.contains(from) {
            continue;
        }
        let circle: Vec<String> = reached
            .iter()
            .filter(|&&f| reach(f).contains(from))
            .map(|f| f.to_string())
            .collect();
        if !circles.contains(&circle) {
            circles.push(circle);
        }
    }
    circles
}

#[test]
fn no_import_circle_between_the_files_of_a_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let circles = sibling_circles(&files);
    assert!(
        circles.is_empty(),
        "import circles between files of one directory (move what both need into one of \
         them, or below both):\n{}",
        circles
            .iter()
            .map(|c| c.join(" -> ..."))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_planted_circle_is_found_and_mod_rs_is_not_one() {
    let files = synthetic(&[
        (
            "src/ipc/harness/mod.rs",
            "mod start;\nuse start::Started;\n",
        ),
        (
            "src/ipc/harness/start.rs",
            "use super::receiver::task;\nuse super::Plan;\n",
        ),
        ("src/ipc/harness/receiver.rs", "use super::start::Result;\n"),
        ("src/ipc/harness/plan.rs", "use super::start::X;\n"),
        (
            "src/ipc/harness/sender.rs",
            "use super::plan::Y;\n#[cfg(test)]\nmod tests {\n    use super::super::start::Z;\n}\n",
        ),
    ]);
    assert_eq!(
        sibling_circles(&files),
        vec![vec![
            "src/ipc/harness/receiver.rs".to_string(),
            "src/ipc/harness/start.rs".to_string()
        ]]
    );
}

// ---- No `try_borrow_mut` in the product code: a busy cell answered by
// doing nothing loses what it was given in silence (`Run::record_deadline`
// dropped a `--policy deadline` run's series that way). Data flows so that
// no borrow can conflict, or a conflict is a panic: a logic error seen.

/// The `try_borrow_mut` calls outside comments, literals and test modules,
/// `file:line` each.
fn try_borrow_muts(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, src) in files {
        let product = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
        for t in tokens(&blank_comments_and_literals(product)) {
            if t.text == "try_borrow_mut" {
                found.push(format!("{rel}:{}", t.line));
            }
        }
    }
    found
}

#[test]
fn no_try_borrow_mut_in_product_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let found = try_borrow_muts(&files);
    assert!(
        found.is_empty(),
        "try_borrow_mut in product code (a busy cell must not drop what it is given): {}",
        found.join(", ")
    );
}

#[test]
fn a_planted_try_borrow_mut_is_found_outside_comments_and_tests() {
    let src = "fn f(c: &RefCell<u8>) {\n    // c.try_borrow_mut()\n    \
               let _ = c.try_borrow_mut();\n}\n\
               #[cfg(test)]\nmod tests {\n    \
               fn g(c: &RefCell<u8>) { let _ = c.try_borrow_mut(); }\n}\n";
    let files = synthetic(&[("src/pipeline/x.rs", src)]);
    assert_eq!(try_borrow_muts(&files), ["src/pipeline/x.rs:3"]);
}

// ---- Typed errors where the kernel programs live: a `Result<_, String>`
// in a signature under rt/bpf, spikes/ or probes/ loses what went wrong
// (issue 39, item 4); each layer has its error enum whose `Display` is
// still the one line a user sees.

/// Directories whose signatures must not carry `Result<_, String>`.
const TYPED_ERROR_DIRS: &[&str] = &["src/rt/bpf/", "src/spikes/", "src/probes/"];

/// `file:line` of every `-> Result<_, String>` return type outside comments
/// and test modules, under `TYPED_ERROR_DIRS`.
fn string_results(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, src) in files {
        if !TYPED_ERROR_DIRS.iter().any(|d| rel.starts_with(d)) {
            continue;
        }
        let product = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
        let code: String = blank_comments_and_literals(product).into_iter().collect();
        for (i, line) in code.lines().enumerate() {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            // A return type, on the `fn` line or on its own `) -> ...` line.
            if compact.contains("->Result<") && compact.contains(",String>") {
                found.push(format!("{rel}:{}", i + 1));
            }
        }
    }
    found
}

#[test]
fn errors_are_typed_where_the_kernel_programs_live() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let found = string_results(&files);
    assert!(
        found.is_empty(),
        "Result<_, String> in a signature under rt/bpf, spikes or probes (give it a typed error): {}",
        found.join(", ")
    );
}

#[test]
fn a_planted_string_result_is_found_in_signatures_only() {
    let src = "// fn a() -> Result<(), String>\n\
               pub fn b() -> Result<u8, String> {\n    Ok(1)\n}\n\
               fn c() -> Result<u8, ProbeError> {\n    Ok(1)\n}\n\
               fn d(\n    x: u8,\n) -> Result<u8, String> {\n    Ok(x)\n}\n";
    let files = synthetic(&[("src/probes/x.rs", src), ("src/report/y.rs", src)]);
    assert_eq!(
        string_results(&files),
        ["src/probes/x.rs:2", "src/probes/x.rs:10"]
    );
}

/// The files of rt/ that may assemble a BPF program: the emitter itself, its
/// text form and the mechanism's own tests (a counter, a broken program).
const OS_PROGRAM_FILES: &[&str] = &[
    "src/rt/bpf/insn.rs",
    "src/rt/bpf/text.rs",
    "src/rt/bpf/tests_live.rs",
];

/// The files under src/rt/ that assemble a program (`Asm::new`) without
/// being one of `OS_PROGRAM_FILES`.
fn programs_in_the_os_layer(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, src)| {
            rel.starts_with("src/rt/")
                && !OS_PROGRAM_FILES.contains(&rel.as_str())
                && src.contains("Asm::new(")
        })
        .map(|(rel, _)| rel.clone())
        .collect()
}

#[test]
fn the_os_layer_holds_no_tests_programs() {
    // rt/bpf is the mechanism (emitter, system calls, BTF, attachment); a
    // program a test or a service runs in the kernel, and the choice of how
    // it is attached, belong in probes/ (the timer's wake-up programs once
    // lived in rt/bpf/wakeups.rs, beside a second loader in spikes/).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let found = programs_in_the_os_layer(&files);
    assert!(
        found.is_empty(),
        "programs in the OS layer: move them to src/probes/ (rt/bpf keeps the mechanism): {found:?}"
    );
    // The check sees a program planted in rt/.
    let planted = synthetic(&[("src/rt/bpf/slots.rs", "fn p() { let a = Asm::new(); }")]);
    assert_eq!(programs_in_the_os_layer(&planted), ["src/rt/bpf/slots.rs"]);
}

// ---- rt/tracefs is tracefs access only: the pairing of trace events into
// wake-ups lives beside its BPF sibling in probes/wakeups/ (it once lived in
// rt/tracefs/wakeups.rs and rt/tracefs/session.rs). The import rule above
// already keeps rt/ from importing probes/ or timer/; this one keeps rt/
// from holding a copy of its own: no code under src/rt/ names a type of the
// families of probes/ (comments and messages may).

/// The types of the kernel-program families that mark their code: the
/// timer breakdown's pairing, tracefs session and BPF slots, and the flight
/// recorder's. Each must still be declared under src/probes/ (a stale name
/// fails the test), so the list follows the code.
const FAMILY_TYPES: &[&str] = &[
    "TracedThread",
    "WakeupRecord",
    "Matcher",
    "WakeupTrace",
    "RecordCounts",
    "WakeupSlots",
    "SlotReader",
    "SlotRead",
    "TimerProgram",
    "Arming",
    "LoadedRecorder",
    "RawRecord",
    "SwitchState",
];

/// `file:line: name` for every family type the code under src/rt/ names,
/// then a line for every name of `FAMILY_TYPES` that src/probes/ no longer
/// declares.
fn family_types_in_the_os_layer(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, src) in files.iter().filter(|(rel, _)| rel.starts_with("src/rt/")) {
        for t in tokens(&blank_comments_and_literals(src)) {
            if FAMILY_TYPES.contains(&t.text.as_str()) {
                found.push(format!("{rel}:{}: {}", t.line, t.text));
            }
        }
    }
    for name in FAMILY_TYPES {
        let declared = files.iter().any(|(rel, src)| {
            rel.starts_with("src/probes/") && {
                let toks = tokens(&blank_comments_and_literals(src));
                toks.windows(2).any(|w| {
                    matches!(w[0].text.as_str(), "struct" | "enum" | "type" | "trait")
                        && w[1].text == *name
                })
            }
        });
        if !declared {
            found.push(format!(
                "FAMILY_TYPES names {name}, which src/probes/ no longer declares: remove it"
            ));
        }
    }
    found
}

#[test]
fn the_os_layer_holds_no_wakeup_pairing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(&root.join("src"), root, &mut files);
    let found = family_types_in_the_os_layer(&files);
    assert!(
        found.is_empty(),
        "the OS layer names the types of a kernel-program family: what pairs, \
         records or reads a test's events belongs in src/probes/ (rt/tracefs keeps \
         tracefs access: mount, instance, ring, format, events, reader):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_pairing_planted_in_rt_is_found_in_code_only() {
    let mut files = synthetic(&[
        (
            "src/rt/tracefs/wakeups.rs",
            "//! Pairs events into a WakeupRecord.\n\
             pub struct Matcher;\n\
             fn f() -> &'static str { \"TracedThread\" }\n",
        ),
        (
            "src/rt/tracefs/reader.rs",
            "use crate::probes::wakeups::WakeupRecord;\n",
        ),
    ]);
    // Declared in probes/, so that no name is stale.
    let declared: String = FAMILY_TYPES
        .iter()
        .map(|n| format!("pub struct {n};\n"))
        .collect();
    files.push(("src/probes/wakeups/mod.rs".to_string(), declared));
    assert_eq!(
        family_types_in_the_os_layer(&files),
        [
            "src/rt/tracefs/wakeups.rs:2: Matcher",
            "src/rt/tracefs/reader.rs:1: WakeupRecord",
        ]
    );
    // And the import itself breaks the layering rule.
    let (broken, _) = check(&files, &[]);
    assert_eq!(broken.len(), 1, "{broken:#?}");
    assert_eq!(broken[0].rule, "rt/ imports nothing above it");
    // A family type src/probes/ no longer declares is a stale entry.
    files.pop();
    assert_eq!(
        family_types_in_the_os_layer(&files).len(),
        2 + FAMILY_TYPES.len()
    );
}
