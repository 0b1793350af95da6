//! The kernel's self-description of trace records: `events/<system>/<event>/format`
//! (event id and field offsets) and `events/header_page` / `events/header_event`
//! (the ring-buffer page and record header layout).
//!
//! Offsets differ between kernel versions and configurations, so they are read
//! at run time and never hard-coded. Every parser here rejects text it does not
//! understand with an error rather than guessing.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Reads a tracefs description file whole, in large reads.
///
/// Why not `fs::read_to_string`: tracefs reports size 0, so std starts with
/// a 32-byte probe read, and `events/header_page` / `header_event` answer a
/// read at a non-zero offset with end-of-file (seen on 6.18: a 32-byte `dd`
/// of header_page yields just its first 32 bytes). One 64 KiB read gets all.
pub fn read_description(path: &Path) -> Result<String, String> {
    let fail = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let mut file = File::open(path).map_err(fail)?;
    let mut text = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail(e)),
        }
        if text.len() > 1 << 20 {
            return Err(format!("{} is implausibly large", path.display()));
        }
    }
    String::from_utf8(text).map_err(|_| format!("{} is not text", path.display()))
}

/// One field of an event record, as its `format` file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc` string: the 4-byte value holds the offset (low 16 bits)
    /// and length (high 16 bits) of the text inside the record.
    pub data_loc: bool,
}

impl Field {
    /// The field as an unsigned integer of its size (1, 2, 4 or 8 bytes, host
    /// byte order); None when the record is too short or the size is unusual.
    pub fn read_u64(&self, record: &[u8]) -> Option<u64> {
        let bytes = record.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match self.size {
            1 => u64::from(bytes[0]),
            2 => u64::from(u16::from_ne_bytes(bytes.try_into().ok()?)),
            4 => u64::from(u32::from_ne_bytes(bytes.try_into().ok()?)),
            8 => u64::from_ne_bytes(bytes.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as a signed integer, sign-extended from its size when the
    /// format says it is signed.
    pub fn read_i64(&self, record: &[u8]) -> Option<i64> {
        let raw = self.read_u64(record)?;
        if !self.signed || self.size == 8 {
            return Some(raw as i64);
        }
        let shift = 64 - 8 * self.size as u32;
        Some(((raw << shift) as i64) >> shift)
    }

    /// The field as text into `out` (NUL-padded, cut to its length): a
    /// fixed `char[N]` array or a `__data_loc` string. None when the record
    /// is too short for it.
    pub fn read_text<const N: usize>(&self, record: &[u8]) -> Option<[u8; N]> {
        let bytes = if self.data_loc {
            let loc = self.read_u64(record)?;
            let start = (loc & 0xffff) as usize;
            let len = (loc >> 16 & 0xffff) as usize;
            record.get(start..start.checked_add(len)?)?
        } else {
            record.get(self.offset..self.offset.checked_add(self.size)?)?
        };
        let text = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
        let mut out = [0u8; N];
        let n = text.len().min(N);
        out[..n].copy_from_slice(&text[..n]);
        Some(out)
    }
}

/// The text of a NUL-padded name (`comm`, IRQ name), lossy.
pub fn text_of(bytes: &[u8]) -> String {
    let text = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    String::from_utf8_lossy(text).into_owned()
}

/// An event's `format` file: its numeric id (the `common_type` of its records)
/// and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    pub fn read(path: &Path) -> Result<EventFormat, String> {
        let text = read_description(path)?;
        EventFormat::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<EventFormat, String> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("name:") {
                name = Some(rest.trim().to_string());
            } else if let Some(rest) = line.strip_prefix("ID:") {
                let value: u16 = rest
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad event ID '{}'", rest.trim()))?;
                id = Some(value);
            } else if line.starts_with("field:") {
                fields.push(parse_field(line)?);
            }
        }
        Ok(EventFormat {
            name: name.ok_or("no 'name:' line")?,
            id: id.ok_or("no 'ID:' line")?,
            fields,
        })
    }

    /// The named field, or an error naming the event and field.
    pub fn field(&self, name: &str) -> Result<&Field, String> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| format!("event {} has no field '{name}'", self.name))
    }
}

/// Parses `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` (the type may have
/// several words; the name may carry an array suffix such as `[16]`).
fn parse_field(line: &str) -> Result<Field, String> {
    let bad = || format!("cannot parse field line '{line}'");
    let mut parts = line.split(';').map(str::trim);
    let decl = parts
        .next()
        .and_then(|p| p.strip_prefix("field:"))
        .ok_or_else(bad)?;
    let last = decl.split_whitespace().last().ok_or_else(bad)?;
    let name = last
        .split('[')
        .next()
        .unwrap_or(last)
        .trim_start_matches('*');
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in parts.filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once(':').ok_or_else(bad)?;
        let value: usize = value.trim().parse().map_err(|_| bad())?;
        match key.trim() {
            "offset" => offset = Some(value),
            "size" => size = Some(value),
            "signed" => signed = Some(value != 0),
            _ => {}
        }
    }
    if name.is_empty() {
        return Err(bad());
    }
    Ok(Field {
        data_loc: decl.contains("__data_loc"),
        name: name.to_string(),
        offset: offset.ok_or_else(bad)?,
        size: size.ok_or_else(bad)?,
        signed: signed.unwrap_or(false),
    })
}

/// Where things are in a ring-buffer page (`events/header_page`) and how record
/// headers are typed (`events/header_event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingLayout {
    /// Offset and size of the page's base timestamp.
    pub timestamp: (usize, usize),
    /// Offset and size of the commit word (bytes used, plus the missed-events
    /// flags in bits 31 and 30 of its low 32 bits).
    pub commit: (usize, usize),
    /// Offset of the first record.
    pub data_offset: usize,
    /// `type_len` values of the special records.
    pub padding: u32,
    pub time_extend: u32,
    pub time_stamp: u32,
    /// Largest `type_len` that means "data, length in 4-byte words".
    pub data_max: u32,
}

impl RingLayout {
    pub fn read(events_dir: &Path) -> Result<RingLayout, String> {
        let read = |name: &str| read_description(&events_dir.join(name));
        RingLayout::parse(&read("header_page")?, &read("header_event")?)
    }

    pub fn parse(header_page: &str, header_event: &str) -> Result<RingLayout, String> {
        let mut timestamp = None;
        let mut commit = None;
        let mut data = None;
        for line in header_page.lines().map(str::trim) {
            if !line.starts_with("field:") {
                continue;
            }
            let field = parse_field(line)?;
            match field.name.as_str() {
                "timestamp" => timestamp = Some((field.offset, field.size)),
                "commit" => commit = Some((field.offset, field.size)),
                "data" => data = Some(field.offset),
                _ => {}
            }
        }
        let header_page_err = |what: &str| format!("events/header_page has no '{what}' field");
        let timestamp = timestamp.ok_or_else(|| header_page_err("timestamp"))?;
        let commit = commit.ok_or_else(|| header_page_err("commit"))?;
        let data_offset = data.ok_or_else(|| header_page_err("data"))?;
        if timestamp.1 != 8 || !(commit.1 == 4 || commit.1 == 8) {
            return Err(format!(
                "unsupported ring-buffer page header (timestamp size {}, commit size {})",
                timestamp.1, commit.1
            ));
        }

        let (mut type_len_bits, mut delta_bits) = (None, None);
        let (mut padding, mut extend, mut stamp, mut max) = (None, None, None, None);
        for line in header_event.lines().map(str::trim) {
            let number = |v: &str| v.split_whitespace().next()?.parse::<u32>().ok();
            // "type_len    :    5 bits", "padding     : type == 29",
            // "data max type_len  == 28" (no colon).
            if let Some((key, n)) = line.split_once("==") {
                let n = number(n);
                let key = key.split(':').next().unwrap_or(key).trim();
                match key {
                    "padding" => padding = n,
                    "time_extend" => extend = n,
                    "time_stamp" => stamp = n,
                    _ if key.starts_with("data max") => max = n,
                    _ => {}
                }
            } else if let Some((key, value)) = line.split_once(':') {
                match key.trim() {
                    "type_len" => type_len_bits = number(value),
                    "time_delta" => delta_bits = number(value),
                    _ => {}
                }
            }
        }
        // The record header is one u32: type_len in the low 5 bits, time delta
        // in the upper 27. The decoder relies on that; refuse anything else.
        if type_len_bits != Some(5) || delta_bits != Some(27) {
            return Err(format!(
                "unsupported ring-buffer record header (type_len {type_len_bits:?} bits, time_delta {delta_bits:?} bits)"
            ));
        }
        let missing = |what: &str| format!("events/header_event does not say which type is {what}");
        Ok(RingLayout {
            timestamp,
            commit,
            data_offset,
            padding: padding.ok_or_else(|| missing("padding"))?,
            time_extend: extend.ok_or_else(|| missing("time_extend"))?,
            time_stamp: stamp.ok_or_else(|| missing("time_stamp"))?,
            data_max: max.ok_or_else(|| missing("the data maximum"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const HEADER_PAGE: &str = include_str!("testdata/header_page");
    pub const HEADER_EVENT: &str = include_str!("testdata/header_event");

    #[test]
    fn parses_this_kernels_headers() {
        let layout = RingLayout::parse(HEADER_PAGE, HEADER_EVENT).unwrap();
        // The layout the page decoder's tests are written for.
        assert_eq!(layout, crate::rt::tracefs::ring::tests::layout());
    }

    #[test]
    fn parses_an_event_format() {
        let f = EventFormat::parse(include_str!("testdata/sched_switch.format")).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, 372);
        let next = f.field("next_pid").unwrap();
        assert_eq!((next.offset, next.size, next.signed), (56, 4, true));
        let comm = f.field("prev_comm").unwrap();
        assert_eq!((comm.offset, comm.size), (8, 16));
        assert!(f.field("nope").is_err());

        let s = EventFormat::parse(include_str!("testdata/hrtimer_start.format")).unwrap();
        let hrtimer = s.field("hrtimer").unwrap();
        assert_eq!(
            (hrtimer.offset, hrtimer.size, hrtimer.signed),
            (8, 8, false)
        );
        assert_eq!(s.field("softexpires").unwrap().offset, 32);
        assert_eq!(s.field("common_type").unwrap().size, 2);
    }

    #[test]
    fn rejects_malformed_text() {
        assert!(EventFormat::parse("name: x\n").is_err());
        assert!(EventFormat::parse("name: x\nID: abc\n").is_err());
        assert!(EventFormat::parse("name: x\nID: 1\n\tfield:int a;\toffset:zz;\n").is_err());
        assert!(EventFormat::parse("name: x\nID: 1\n\tfield:int a;\tsize:4;\n").is_err());
        assert!(RingLayout::parse("", HEADER_EVENT).is_err());
        assert!(RingLayout::parse(HEADER_PAGE, "").is_err());
        let odd = HEADER_EVENT.replace("27 bits", "26 bits");
        assert!(RingLayout::parse(HEADER_PAGE, &odd).is_err());
    }

    #[test]
    fn reads_fields_of_every_size_and_sign() {
        let field = |offset, size, signed| Field {
            name: "f".into(),
            offset,
            size,
            signed,
            data_loc: false,
        };
        let rec = [0xffu8, 0xfe, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0x80];
        assert_eq!(field(0, 1, true).read_i64(&rec), Some(-1));
        assert_eq!(field(0, 1, false).read_i64(&rec), Some(255));
        assert_eq!(field(0, 2, true).read_i64(&rec), Some(-257));
        assert_eq!(field(0, 4, true).read_i64(&rec), Some(-257));
        assert_eq!(field(0, 4, false).read_u64(&rec), Some(0xffff_feff));
        assert_eq!(
            field(4, 8, false).read_u64(&rec),
            Some(0x8000_0000_0000_0001)
        );
        assert_eq!(field(8, 8, false).read_u64(&rec), None, "past the end");
        assert_eq!(field(0, 3, false).read_u64(&rec), None, "odd size");
        assert_eq!(field(usize::MAX, 8, false).read_u64(&rec), None, "overflow");
    }

    #[test]
    fn reads_fixed_and_data_loc_text() {
        let comm = Field {
            name: "comm".into(),
            offset: 0,
            size: 8,
            signed: false,
            data_loc: false,
        };
        let rec = *b"abc\0\0\0\0\0\x0c\0\x05\0virtio";
        assert_eq!(text_of(&comm.read_text::<16>(&rec).unwrap()), "abc");
        assert_eq!(text_of(&comm.read_text::<2>(&rec).unwrap()), "ab");
        // Offset 12, length 5 ("virti": the kernel counts the NUL in the length).
        let loc = Field {
            name: "name".into(),
            offset: 8,
            size: 4,
            signed: false,
            data_loc: true,
        };
        assert_eq!(text_of(&loc.read_text::<16>(&rec).unwrap()), "virti");
        let parsed =
            parse_field("field:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;").unwrap();
        assert!(parsed.data_loc && parsed.name == "name");
        assert_eq!(loc.read_text::<16>(&rec[..15]), None, "text past the end");
    }
}
