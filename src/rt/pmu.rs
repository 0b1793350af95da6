//! A perf PMU's named events as sysfs describes them
//! (`/sys/bus/event_source/devices/PMU/{type,events/NAME,format/TERM}`):
//! the event's terms (`event=0x04`, `event=0x3c,umask=0x01,edge`) placed in
//! the bits of `config`, `config1` or `config2` that each term's format file
//! names (`config:0-7,32-35`). Read and encoded, never hard-coded, so any
//! PMU's event is found the way perf(1) finds it: `msr/smi/` (MSR_SMI_COUNT,
//! where the kernel offers it) and `msr/tsc/` (every x86 kernel with the msr
//! PMU) alike.

use std::path::{Path, PathBuf};

/// Where the kernel lists its PMUs (a system path).
pub const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// One named event of a PMU, ready for `perf_event_open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuEvent {
    /// `msr/smi/` as perf(1) names it.
    pub name: String,
    /// `perf_event_attr.type`: the PMU's dynamic type.
    pub kind: u32,
    /// `config`, `config1`, `config2`.
    pub config: [u64; 3],
}

/// Why a PMU event cannot be had, in the words a reason line shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PmuError {
    #[error("this kernel has no {pmu} perf PMU ({} is missing)", .dir.display())]
    NoPmu { pmu: String, dir: PathBuf },
    #[error("perf's {pmu} PMU has no {event} event")]
    NoEvent { pmu: String, event: String },
    #[error("{}: {why}", .path.display())]
    Malformed { path: PathBuf, why: String },
}

/// Event `event` of PMU `pmu` on the system whose root is `root` (`/`
/// live, a fixture tree in tests).
pub fn event_at(root: &Path, pmu: &str, event: &str) -> Result<PmuEvent, PmuError> {
    let system_dir = Path::new(EVENT_SOURCES).join(pmu);
    let dir = root.join(system_dir.strip_prefix("/").unwrap_or(&system_dir));
    let malformed = |path: &Path, why: String| PmuError::Malformed {
        path: path.to_path_buf(),
        why,
    };
    let type_file = dir.join("type");
    let Ok(type_text) = std::fs::read_to_string(&type_file) else {
        return Err(PmuError::NoPmu {
            pmu: pmu.to_string(),
            dir: system_dir,
        });
    };
    let kind = type_text.trim().parse::<u32>().map_err(|_| {
        malformed(
            &type_file,
            format!("{:?} is not a PMU type", type_text.trim()),
        )
    })?;
    // A name is one entry of events/ (never a path: `..`, `a/b`).
    let one_name = !event.is_empty() && !event.contains('/') && !event.starts_with('.');
    let event_file = dir.join("events").join(event);
    let terms = match std::fs::read_to_string(&event_file) {
        Ok(text) if one_name => text,
        _ => {
            return Err(PmuError::NoEvent {
                pmu: pmu.to_string(),
                event: event.to_string(),
            });
        }
    };
    let format_of = |term: &str| std::fs::read_to_string(dir.join("format").join(term)).ok();
    let config = encode(&terms, &format_of).map_err(|why| malformed(&event_file, why))?;
    Ok(PmuEvent {
        name: format!("{pmu}/{event}/"),
        kind,
        config,
    })
}

/// The config words of an event's terms (`event=0x04,umask=3,edge`; a
/// term without a value is 1), each placed where `format_of(term)` says.
pub fn encode(terms: &str, format_of: &dyn Fn(&str) -> Option<String>) -> Result<[u64; 3], String> {
    let mut config = [0u64; 3];
    let terms = terms.trim();
    if terms.is_empty() {
        return Err("the event has no terms".into());
    }
    for term in terms.split(',').map(str::trim) {
        let (name, value) = match term.split_once('=') {
            Some((name, value)) => (
                name.trim(),
                parse_value(value.trim()).map_err(|why| format!("{term}: {why}"))?,
            ),
            None => (term, 1),
        };
        let format = format_of(name).ok_or_else(|| {
            format!("term {name:?} has no format file: not a term this PMU knows")
        })?;
        let (word, bits) = place(&format, value).map_err(|why| format!("{term}: {why}"))?;
        config[word] |= bits;
    }
    Ok(config)
}

/// `0x04`, `4`: a term's value (`?`, a value the user must give, is refused).
fn parse_value(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    };
    parsed.map_err(|_| match text {
        "?" => "the event takes a parameter (perf's `?`)".to_string(),
        _ => format!("{text:?} is not a number"),
    })
}

/// `value` placed in the bits a format file names (`config:0-7,32-35`,
/// `config1:12`), its low bits first: (which word, the bits).
fn place(format: &str, value: u64) -> Result<(usize, u64), String> {
    let format = format.trim();
    let (word, ranges) = format
        .split_once(':')
        .ok_or_else(|| format!("format {format:?} has no `config:BITS`"))?;
    let word = match word.trim() {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        other => {
            return Err(format!(
                "format {format:?} names {other:?}, not config, config1 or config2"
            ));
        }
    };
    let mut bits = 0u64;
    let mut rest = value;
    for range in ranges.split(',').map(str::trim) {
        let (low, high) = match range.split_once('-') {
            Some((low, high)) => (bit_number(low)?, bit_number(high)?),
            None => (bit_number(range)?, bit_number(range)?),
        };
        if low > high {
            return Err(format!(
                "format {format:?}: bits {low}-{high} run backwards"
            ));
        }
        let width = high - low + 1;
        let field = if width == 64 {
            rest
        } else {
            rest & ((1u64 << width) - 1)
        };
        bits |= field << low;
        rest = if width == 64 { 0 } else { rest >> width };
    }
    if rest != 0 {
        return Err(format!("value {value:#x} does not fit in {format:?}"));
    }
    Ok((word, bits))
}

fn bit_number(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|&b| b < 64)
        .ok_or_else(|| format!("{text:?} is not a bit number (0-63)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree with an msr PMU of `type` and these events and formats.
    fn tree(kind: &str, events: &[(&str, &str)], formats: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sys/bus/event_source/devices/msr");
        std::fs::create_dir_all(dir.join("events")).unwrap();
        std::fs::create_dir_all(dir.join("format")).unwrap();
        std::fs::write(dir.join("type"), kind).unwrap();
        for (name, text) in events {
            std::fs::write(dir.join("events").join(name), text).unwrap();
        }
        for (name, text) in formats {
            std::fs::write(dir.join("format").join(name), text).unwrap();
        }
        root
    }

    #[test]
    fn the_smi_event_of_an_intel_kernel_and_its_absence_here() {
        let intel = tree(
            "9\n",
            &[
                ("tsc", "event=0x00\n"),
                ("smi", "event=0x04\n"),
                ("aperf", "event=0x01\n"),
            ],
            &[("event", "config:0-63\n")],
        );
        assert_eq!(
            event_at(intel.path(), "msr", "smi"),
            Ok(PmuEvent {
                name: "msr/smi/".into(),
                kind: 9,
                config: [4, 0, 0]
            })
        );
        // This machine's kernel: the msr PMU offers tsc, not smi.
        let amd = tree(
            "9\n",
            &[("tsc", "event=0x00\n")],
            &[("event", "config:0-63\n")],
        );
        assert_eq!(
            event_at(amd.path(), "msr", "tsc").unwrap().config,
            [0, 0, 0]
        );
        let e = event_at(amd.path(), "msr", "smi").unwrap_err();
        assert_eq!(e.to_string(), "perf's msr PMU has no smi event");
        // Never a path out of events/.
        assert!(matches!(
            event_at(amd.path(), "msr", "../type"),
            Err(PmuError::NoEvent { .. })
        ));
        let none = tempfile::tempdir().unwrap();
        assert_eq!(
            event_at(none.path(), "msr", "smi").unwrap_err().to_string(),
            "this kernel has no msr perf PMU (/sys/bus/event_source/devices/msr is missing)"
        );
    }

    #[test]
    fn terms_go_where_the_format_files_say() {
        let formats = |term: &str| -> Option<String> {
            match term {
                "event" => Some("config:0-7,32-35\n".into()),
                "umask" => Some("config:8-15".into()),
                "edge" => Some("config:18".into()),
                "ldlat" => Some("config1:0-15".into()),
                "frontend" => Some("config2:0-23".into()),
                _ => None,
            }
        };
        // event 0x1c2: its low 8 bits at 0-7, the rest at 32-35.
        assert_eq!(
            encode("event=0x1c2,umask=0x01,edge", &formats),
            Ok([0xc2 | (1 << 32) | (0x01 << 8) | (1 << 18), 0, 0])
        );
        assert_eq!(
            encode(" event=3 , ldlat=0x20, frontend=0x11\n", &formats),
            Ok([3, 0x20, 0x11])
        );
        // Odd or wrong ones: each one line saying what.
        assert_eq!(
            encode("event=0x1000", &formats).unwrap_err(),
            "event=0x1000: value 0x1000 does not fit in \"config:0-7,32-35\""
        );
        assert_eq!(
            encode("event=?", &formats).unwrap_err(),
            "event=?: the event takes a parameter (perf's `?`)"
        );
        assert_eq!(
            encode("period=1", &formats).unwrap_err(),
            "term \"period\" has no format file: not a term this PMU knows"
        );
        assert_eq!(encode("", &formats).unwrap_err(), "the event has no terms");
        assert_eq!(
            encode("event=zz", &formats).unwrap_err(),
            "event=zz: \"zz\" is not a number"
        );
        let odd = |_: &str| Some("config3:0-7".to_string());
        assert!(
            encode("event=1", &odd)
                .unwrap_err()
                .contains("not config, config1 or config2")
        );
        let backwards = |_: &str| Some("config:7-0".to_string());
        assert!(
            encode("event=1", &backwards)
                .unwrap_err()
                .contains("run backwards")
        );
        let wide = |_: &str| Some("config:0-64".to_string());
        assert!(
            encode("event=1", &wide)
                .unwrap_err()
                .contains("not a bit number")
        );
        let no_colon = |_: &str| Some("0-7".to_string());
        assert!(
            encode("event=1", &no_colon)
                .unwrap_err()
                .contains("has no `config:BITS`")
        );
        // A full-width field takes any value.
        let full = |_: &str| Some("config:0-63".to_string());
        assert_eq!(
            encode("event=0xffffffffffffffff", &full),
            Ok([u64::MAX, 0, 0])
        );
    }

    #[test]
    fn a_malformed_type_is_said() {
        let bad = tree(
            "msr\n",
            &[("tsc", "event=0x00\n")],
            &[("event", "config:0-63\n")],
        );
        let e = event_at(bad.path(), "msr", "tsc").unwrap_err().to_string();
        assert!(e.ends_with("type: \"msr\" is not a PMU type"), "{e}");
    }
}
