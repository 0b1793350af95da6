//! Decoder for the binary ring-buffer pages that `per_cpu/cpuN/trace_pipe_raw`
//! returns, one sub-buffer per `read()`.
//!
//! Why binary: the text `trace`/`trace_pipe` files print timestamps in whole
//! microseconds and the `raw` option drops the fields, while the breakdown
//! needs nanoseconds. A page is a header (base timestamp, commit word) and a
//! sequence of records, each with a 4-byte header `type_len:5 | time_delta:27`
//! (host byte order) followed by `array[]`:
//!
//! - `1..=data_max`: data, `type_len * 4` bytes of payload in `array[0..]`;
//! - `0`: data, `array[0]` = payload length + 4, payload in `array[1..]`;
//! - `padding`: with `time_delta == 0` the rest of the page is unused; else a
//!   discarded record of `4 + array[0]` bytes;
//! - `time_extend`: adds `array[0] << 27 | time_delta` to the running time;
//! - `time_stamp`: sets the running time to `array[0] << 27 | time_delta`
//!   (the low 59 bits of an absolute time; the top bits come from the
//!   running time, as the kernel's `rb_fix_abs_ts` does).
//!
//! Data records add their `time_delta` to the running time, which starts at the
//! page timestamp. A discarded record's delta is not added, following the
//! kernel's own reader (`rb_update_read_stamp`), so times match what `trace`
//! prints. The type numbers and header sizes come from `format::RingLayout`.
//!
//! Commit word: its low 32 bits hold the number of bytes used, bit 31 "events
//! were lost before this page" and bit 30 "their count is stored after the
//! data" (as a `long`). On 64-bit kernels the flags are added as a negative
//! `int`, so the upper 32 bits are sign-extension noise (seen here:
//! `0xffffffffc0000fe4` for a page of 4068 bytes after 962 lost events).

use super::format::RingLayout;
use std::fmt;

const MISSED_EVENTS: u32 = 1 << 31;
const MISSED_STORED: u32 = 1 << 30;
/// Everything below the two flag bits is the byte count.
const COMMIT_MASK: u32 = MISSED_STORED - 1;
/// Width of the delta in the record header (checked by `RingLayout`).
const DELTA_BITS: u32 = 27;
/// Absolute time stamps carry 59 bits; these are the bits above them.
const TS_MSB: u64 = !((1u64 << (32 + DELTA_BITS)) - 1);

/// What the page header says about events lost before this page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    /// The kernel stored how many.
    Count(u64),
    /// Some were lost; the page had no room for the count.
    Unknown,
}

/// Why (part of) a page could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// Shorter than its own header.
    Short(usize),
    /// The commit word claims more bytes than the page holds.
    Commit { bytes: usize, room: usize },
    /// A record at this data offset is cut off or of an unknown type.
    Record { offset: usize, why: &'static str },
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Short(len) => write!(f, "ring-buffer page of only {len} bytes"),
            RingError::Commit { bytes, room } => {
                write!(
                    f,
                    "ring-buffer page claims {bytes} bytes of records, has room for {room}"
                )
            }
            RingError::Record { offset, why } => {
                write!(f, "ring-buffer record at data offset {offset}: {why}")
            }
        }
    }
}

/// One page: its header, and its records through `records()`.
#[derive(Debug)]
pub struct Page<'a> {
    /// Time of the page (trace clock, ns): the base of the first record's delta.
    pub timestamp: u64,
    pub missed: Missed,
    data: &'a [u8],
    layout: &'a RingLayout,
}

fn read_uint(bytes: &[u8], at: usize, size: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(size)?)?;
    match size {
        4 => Some(u64::from(u32::from_ne_bytes(b.try_into().ok()?))),
        8 => Some(u64::from_ne_bytes(b.try_into().ok()?)),
        _ => None,
    }
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    read_uint(bytes, at, 4).map(|v| v as u32)
}

/// Parses the header of one page as read from `trace_pipe_raw`.
pub fn parse_page<'a>(page: &'a [u8], layout: &'a RingLayout) -> Result<Page<'a>, RingError> {
    let short = || RingError::Short(page.len());
    let timestamp = read_uint(page, layout.timestamp.0, layout.timestamp.1).ok_or_else(short)?;
    let commit = read_uint(page, layout.commit.0, layout.commit.1).ok_or_else(short)? as u32;
    let room = page
        .len()
        .checked_sub(layout.data_offset)
        .ok_or_else(short)?;
    let bytes = (commit & COMMIT_MASK) as usize;
    if bytes > room {
        return Err(RingError::Commit { bytes, room });
    }
    let data = &page[layout.data_offset..layout.data_offset + bytes];
    let missed = if commit & MISSED_EVENTS == 0 {
        Missed::None
    } else if commit & MISSED_STORED != 0 {
        // The count sits right after the records, as a kernel `long`
        // (the commit word has that size).
        match read_uint(page, layout.data_offset + bytes, layout.commit.1) {
            Some(n) => Missed::Count(n),
            None => Missed::Unknown,
        }
    } else {
        Missed::Unknown
    };
    Ok(Page {
        timestamp,
        missed,
        data,
        layout,
    })
}

impl Page<'_> {
    /// Calls `on_record(time_ns, payload)` for every data record in order and
    /// returns how many there were. On a malformed record it stops and returns
    /// the error; the records before it have been delivered.
    pub fn records(&self, mut on_record: impl FnMut(u64, &[u8])) -> Result<usize, RingError> {
        let (data, l) = (self.data, self.layout);
        let mut time = self.timestamp;
        let mut count = 0;
        let mut at = 0usize;
        while at + 4 <= data.len() {
            let bad = |why| RingError::Record { offset: at, why };
            let header = read_u32(data, at).ok_or_else(|| bad("cut off"))?;
            let type_len = header & 0x1f;
            let delta = u64::from(header >> 5);
            // array[0], for the record types that have one.
            let array0 = || read_u32(data, at + 4).map(u64::from);
            let next;
            if type_len == l.padding {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                // A discarded record; its delta is not added (see module doc).
                let Some(len) = array0() else { break };
                next = (at + 4).saturating_add(align4(len));
            } else if type_len == l.time_extend {
                let high = array0().ok_or_else(|| bad("time extend cut off"))?;
                time = time.wrapping_add((high << DELTA_BITS) | delta);
                next = at + 8;
            } else if type_len == l.time_stamp {
                let high = array0().ok_or_else(|| bad("time stamp cut off"))?;
                time = absolute_time((high << DELTA_BITS) | delta, time);
                next = at + 8;
            } else if type_len == 0 {
                let len = array0().ok_or_else(|| bad("length cut off"))?;
                if len < 4 {
                    return Err(bad("length word below 4"));
                }
                let end = at.saturating_add(4).saturating_add(len as usize);
                let payload = data.get(at + 8..end).ok_or_else(|| bad("record cut off"))?;
                time = time.wrapping_add(delta);
                on_record(time, payload);
                count += 1;
                next = (at + 4).saturating_add(align4(len));
            } else if type_len <= l.data_max {
                let end = at + 4 + 4 * type_len as usize;
                let payload = data.get(at + 4..end).ok_or_else(|| bad("record cut off"))?;
                time = time.wrapping_add(delta);
                on_record(time, payload);
                count += 1;
                next = end;
            } else {
                return Err(bad("unknown record type"));
            }
            at = next;
        }
        Ok(count)
    }
}

/// Rounds a record length up to the 4-byte alignment of the buffer,
/// saturating so that garbage lengths end the walk instead of wrapping.
fn align4(len: u64) -> usize {
    usize::try_from(len.saturating_add(3) & !3).unwrap_or(usize::MAX)
}

/// The full time of an absolute time stamp record, whose 59 stored bits are
/// completed with the top bits of the running time (and carried when the
/// low part wrapped).
fn absolute_time(stored: u64, running: u64) -> u64 {
    let top = running & TS_MSB;
    if top == 0 {
        return stored;
    }
    let full = stored | top;
    if full < running {
        full.wrapping_add(1 << (32 + DELTA_BITS))
    } else {
        full
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn layout() -> RingLayout {
        RingLayout {
            timestamp: (0, 8),
            commit: (8, 8),
            data_offset: 16,
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max: 28,
        }
    }

    /// Builds a page the way the kernel writes one (64-bit, little or big
    /// endian as the host).
    pub struct PageBuilder {
        pub bytes: Vec<u8>,
        pub size: usize,
    }

    impl PageBuilder {
        pub fn new(timestamp: u64, size: usize) -> PageBuilder {
            let mut bytes = vec![0u8; 16];
            bytes[..8].copy_from_slice(&timestamp.to_ne_bytes());
            PageBuilder { bytes, size }
        }

        fn header(&mut self, type_len: u32, delta: u32) {
            assert!(type_len < 32 && delta < (1 << 27));
            self.bytes
                .extend_from_slice(&(type_len | (delta << 5)).to_ne_bytes());
        }

        fn word(&mut self, w: u32) {
            self.bytes.extend_from_slice(&w.to_ne_bytes());
        }

        /// A data record; the kernel uses the compact form up to 28 words.
        pub fn data(&mut self, delta: u32, payload: &[u8]) -> &mut Self {
            let words = payload.len().div_ceil(4);
            if words <= 28 && !payload.is_empty() {
                self.header(words as u32, delta);
            } else {
                self.header(0, delta);
                self.word(4 * words as u32 + 4);
            }
            self.bytes.extend_from_slice(payload);
            self.bytes
                .resize(self.bytes.len() + (4 * words - payload.len()), 0);
            self
        }

        pub fn extend(&mut self, delta: u64) -> &mut Self {
            self.header(30, (delta & ((1 << 27) - 1)) as u32);
            self.word((delta >> 27) as u32);
            self
        }

        pub fn stamp(&mut self, abs: u64) -> &mut Self {
            self.header(31, (abs & ((1 << 27) - 1)) as u32);
            self.word(((abs >> 27) & 0xffff_ffff) as u32);
            self
        }

        pub fn discarded(&mut self, delta: u32, payload_words: u32) -> &mut Self {
            self.header(29, delta);
            self.word(4 * payload_words);
            for _ in 1..payload_words {
                self.word(0xdead_beef);
            }
            self
        }

        /// Sets the commit word and returns the finished page.
        pub fn finish(&mut self, missed: Option<Option<u64>>) -> Vec<u8> {
            let used = (self.bytes.len() - 16) as u32;
            let mut commit = i64::from(used);
            if let Some(count) = missed {
                if let Some(n) = count {
                    self.bytes.extend_from_slice(&n.to_ne_bytes());
                    commit += i64::from(MISSED_STORED as i32);
                }
                // The kernel adds (1 << 31) as an int: a negative number.
                commit += i64::from(MISSED_EVENTS as i32);
            }
            let mut page = self.bytes.clone();
            page[8..16].copy_from_slice(&commit.to_ne_bytes());
            page.resize(self.size, 0);
            page
        }
    }

    /// (time, payload) of each record.
    type Records = Vec<(u64, Vec<u8>)>;

    fn decode(page: &[u8]) -> (Page<'_>, Records, Result<usize, RingError>) {
        static LAYOUT: std::sync::OnceLock<RingLayout> = std::sync::OnceLock::new();
        let layout = LAYOUT.get_or_init(layout);
        let p = parse_page(page, layout).unwrap();
        let mut out = Vec::new();
        let r = p.records(|t, payload| out.push((t, payload.to_vec())));
        (p, out, r)
    }

    #[test]
    fn decodes_every_record_kind() {
        let long: Vec<u8> = (0..120u8).collect(); // 30 words: the type_len 0 form
        let page = PageBuilder::new(1_000, 4096)
            .data(5, b"abcd")
            .data(7, &[1, 2, 3, 4, 5, 6]) // padded to 8 bytes
            .discarded(1_000_000, 3) // its delta is not added
            .extend((3u64 << 27) + 11) // 402 653 195 ns
            .data(0, &long)
            .stamp(5_000_000_000)
            .data(20, b"wxyz")
            .finish(None);
        let (p, out, r) = decode(&page);
        assert_eq!(p.timestamp, 1_000);
        assert_eq!(p.missed, Missed::None);
        assert_eq!(r, Ok(4));
        let times: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
        let extended = 1_012 + (3u64 << 27) + 11;
        assert_eq!(times, vec![1_005, 1_012, extended, 5_000_000_020]);
        assert_eq!(out[0].1, b"abcd");
        assert_eq!(out[1].1, vec![1, 2, 3, 4, 5, 6, 0, 0]);
        assert_eq!(out[2].1, long);
        assert_eq!(out[3].1, b"wxyz");
    }

    #[test]
    fn stops_at_tail_padding() {
        let mut b = PageBuilder::new(0, 4096);
        b.data(1, b"1234");
        // rb_event_set_padding: type padding, delta 0, then garbage.
        b.bytes.extend_from_slice(&29u32.to_ne_bytes());
        b.bytes.extend_from_slice(&[0xff; 12]);
        let page = b.finish(None);
        let (_, out, r) = decode(&page);
        assert_eq!((out.len(), r), (1, Ok(1)));
    }

    #[test]
    fn reports_missed_events() {
        let page = PageBuilder::new(0, 4096)
            .data(1, b"1234")
            .finish(Some(Some(962)));
        let (p, out, _) = decode(&page);
        assert_eq!(p.missed, Missed::Count(962));
        assert_eq!(out.len(), 1, "the stored count is not a record");
        let page = PageBuilder::new(0, 4096)
            .data(1, b"1234")
            .finish(Some(None));
        assert_eq!(decode(&page).0.missed, Missed::Unknown);
        // A full page has no room for the count: flagged, count unknown.
        let mut b = PageBuilder::new(0, 24);
        b.data(1, b"1234");
        let page = b.finish(Some(None));
        assert_eq!(decode(&page).0.missed, Missed::Unknown);
    }

    #[test]
    fn malformed_pages_are_errors_not_panics() {
        let l = layout();
        assert_eq!(
            parse_page(&[0u8; 10], &l).unwrap_err(),
            RingError::Short(10)
        );
        let mut page = PageBuilder::new(0, 64).finish(None);
        page[8..16].copy_from_slice(&100u64.to_ne_bytes());
        assert_eq!(
            parse_page(&page, &l).unwrap_err(),
            RingError::Commit {
                bytes: 100,
                room: 48
            }
        );
        // A record longer than the committed bytes.
        let mut b = PageBuilder::new(0, 64);
        b.data(1, b"12345678");
        let mut page = b.finish(None);
        page[8..16].copy_from_slice(&8u64.to_ne_bytes());
        let (_, out, r) = decode(&page);
        assert!(out.is_empty());
        assert!(matches!(r, Err(RingError::Record { offset: 0, .. })));
        // type_len 0 with a length word below 4, and one past the end.
        for len in [0u32, 3, 0x7fff_ffff] {
            let mut b = PageBuilder::new(0, 64);
            b.header(0, 1);
            b.word(len);
            b.word(0);
            let page = b.finish(None);
            assert!(decode(&page).2.is_err(), "length {len}");
        }
        // A time extend cut off by the commit.
        let mut b = PageBuilder::new(0, 64);
        b.header(30, 1);
        let page = b.finish(None);
        assert!(decode(&page).2.is_err());
        // A layout with fewer data types: 28 is then unknown.
        let narrow = RingLayout { data_max: 27, ..l };
        let mut b = PageBuilder::new(0, 256);
        b.data(1, &[0u8; 112]);
        let page = b.finish(None);
        let p = parse_page(&page, &narrow).unwrap();
        assert!(p.records(|_, _| {}).is_err());
    }

    #[test]
    fn garbage_never_panics() {
        // Every short prefix and some noise through both stages.
        let l = layout();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for size in [0usize, 7, 16, 17, 20, 64, 4096] {
            for _ in 0..200 {
                let page: Vec<u8> = (0..size)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as u8
                    })
                    .collect();
                if let Ok(p) = parse_page(&page, &l) {
                    let _ = p.records(|_, _| {});
                }
            }
        }
    }

    #[test]
    fn absolute_times_keep_the_top_bits() {
        assert_eq!(absolute_time(5, 0), 5);
        let running = (1u64 << 60) + 100;
        assert_eq!(absolute_time(200, running), (1 << 60) + 200);
        // The low part wrapped since the running time: carry into the top.
        assert_eq!(absolute_time(50, running), (1 << 60) + (1 << 59) + 50);
    }
}
