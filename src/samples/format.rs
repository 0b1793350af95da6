//! The `--samples` file format (docs/samples.md), little-endian throughout:
//!
//! ```text
//! header   32 bytes: magic "LATSMPL1", version u32 (1), clock u32 (1 =
//!          CLOCK_MONOTONIC), start realtime ns u64, start monotonic ns u64
//! records  type u32, payload length u32, payload:
//!   1 series   id u32, test u32, index u32, cpu i32 (-1: not pinned),
//!              then three strings (u16 length + UTF-8): test name, kind, label
//!   2 samples  id u32, count u32, count x (t_ns u64, latency_ns i64): t_ns
//!              from the header's monotonic start; 16 bytes per sample
//!   3 trailer  series u32, 0 u32, per series: id u32, 0 u32, written u64,
//!              dropped u64, not_written u64 (the last record of a whole file)
//! ```
//!
//! Encoding is pure (bytes into a buffer); `Reader` decodes from any `Read`.

use std::io::{self, Read};

pub const MAGIC: &[u8; 8] = b"LATSMPL1";
pub const VERSION: u32 = 1;
/// The clock of every time in the file (Linux's CLOCK_MONOTONIC id).
pub const CLOCK_MONOTONIC_ID: u32 = 1;
pub const HEADER_BYTES: usize = 32;
pub const RECORD_HEADER_BYTES: usize = 8;
pub const SAMPLE_BYTES: usize = 16;
/// A series record's fixed part (before its strings).
const SERIES_FIXED_BYTES: usize = 16;
/// Trailer bytes: its record header and fixed part, and per series.
pub const TRAILER_FIXED_BYTES: usize = RECORD_HEADER_BYTES + 8;
pub const TRAILER_PER_SERIES_BYTES: usize = 32;
/// Longest string of a series record (longer ones are cut at a character).
pub const MAX_STRING_BYTES: usize = 96;

const SERIES: u32 = 1;
const SAMPLES: u32 = 2;
const TRAILER: u32 = 3;
/// A record longer than this is not one this version writes: corrupt.
const MAX_RECORD_BYTES: u32 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub start_realtime_ns: u64,
    pub start_monotonic_ns: u64,
}

/// What a series record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesInfo {
    pub id: u32,
    /// The test's number in the run (0 for the first test begun).
    pub test: u32,
    /// The series' index in its test (as in the report's `series`).
    pub index: u32,
    pub cpu: Option<usize>,
    /// The test's name as the report's `test` says it (`mq`, `timer`, ...).
    pub test_name: String,
    /// The report's series kind (`ipc_pair`, `timer_thread`, ...).
    pub kind: String,
    pub label: String,
}

/// A series' counts, as the trailer holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeriesCounts {
    pub id: u32,
    pub written: u64,
    /// Lost in a full ring (the drain thread was starved).
    pub dropped: u64,
    /// Drained but not written: beyond `--samples-limit`, or after a write error.
    pub not_written: u64,
}

pub fn header_bytes(h: &Header) -> [u8; HEADER_BYTES] {
    let mut b = [0u8; HEADER_BYTES];
    b[..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&CLOCK_MONOTONIC_ID.to_le_bytes());
    b[16..24].copy_from_slice(&h.start_realtime_ns.to_le_bytes());
    b[24..32].copy_from_slice(&h.start_monotonic_ns.to_le_bytes());
    b
}

/// `s` cut to at most `MAX_STRING_BYTES`, at a character boundary.
fn short(s: &str) -> &str {
    let mut end = s.len().min(MAX_STRING_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn record_header(out: &mut Vec<u8>, kind: u32, len: usize) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

/// Appends the series record of `s`.
pub fn push_series(out: &mut Vec<u8>, s: &SeriesInfo) {
    let strings = [short(&s.test_name), short(&s.kind), short(&s.label)];
    let len = SERIES_FIXED_BYTES + strings.iter().map(|t| 2 + t.len()).sum::<usize>();
    record_header(out, SERIES, len);
    out.extend_from_slice(&s.id.to_le_bytes());
    out.extend_from_slice(&s.test.to_le_bytes());
    out.extend_from_slice(&s.index.to_le_bytes());
    let cpu = s.cpu.map_or(-1, |c| c.min(i32::MAX as usize) as i32);
    out.extend_from_slice(&cpu.to_le_bytes());
    for t in strings {
        out.extend_from_slice(&(t.len() as u16).to_le_bytes());
        out.extend_from_slice(t.as_bytes());
    }
}

/// The bytes of a samples record of `count` samples.
pub fn samples_record_bytes(count: usize) -> usize {
    RECORD_HEADER_BYTES + 8 + count * SAMPLE_BYTES
}

/// Appends a samples record: `samples` as (monotonic ns, latency ns), their
/// times made relative to `start_monotonic_ns`.
pub fn push_samples(
    out: &mut Vec<u8>,
    id: u32,
    start_monotonic_ns: u64,
    samples: impl ExactSizeIterator<Item = (u64, i64)>,
) {
    let count = samples.len();
    record_header(
        out,
        SAMPLES,
        samples_record_bytes(count) - RECORD_HEADER_BYTES,
    );
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
    for (at, latency) in samples {
        out.extend_from_slice(&at.saturating_sub(start_monotonic_ns).to_le_bytes());
        out.extend_from_slice(&latency.to_le_bytes());
    }
}

pub fn trailer_bytes(series: usize) -> usize {
    TRAILER_FIXED_BYTES + series * TRAILER_PER_SERIES_BYTES
}

/// Appends the trailer.
pub fn push_trailer(out: &mut Vec<u8>, counts: &[SeriesCounts]) {
    record_header(
        out,
        TRAILER,
        trailer_bytes(counts.len()) - RECORD_HEADER_BYTES,
    );
    out.extend_from_slice(&(counts.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for c in counts {
        out.extend_from_slice(&c.id.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&c.written.to_le_bytes());
        out.extend_from_slice(&c.dropped.to_le_bytes());
        out.extend_from_slice(&c.not_written.to_le_bytes());
    }
}

/// Why a file could not be read (further).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("is not a latscope samples file (no LATSMPL1 header)")]
    NotSamples,
    #[error("is a latscope samples file of version {0}, which this latscope does not read")]
    Version(u32),
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("is damaged: {0}")]
    Corrupt(String),
}

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Series(SeriesInfo),
    /// A batch of one series: (ns from the file's start, latency ns).
    Samples {
        id: u32,
        samples: Vec<(u64, i64)>,
    },
    Trailer(Vec<SeriesCounts>),
}

/// Reads a samples file record by record. `next` returns `Ok(None)` at the
/// end of the data; `truncated` then says whether the file ended without its
/// trailer (or inside a record).
pub struct Reader<R: Read> {
    input: R,
    pub header: Header,
    ended_inside_record: bool,
    trailer_seen: bool,
}

/// Reads exactly `buf.len()` bytes; Ok(false) at a clean end of the input
/// before the first byte, Err(UnexpectedEof) after some.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn open(mut input: R) -> Result<Reader<R>, ReadError> {
        let mut b = [0u8; HEADER_BYTES];
        match read_full(&mut input, &mut b) {
            Ok(true) => {}
            Ok(false) => return Err(ReadError::NotSamples),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(ReadError::NotSamples);
            }
            Err(e) => return Err(e.into()),
        }
        if &b[..8] != MAGIC {
            return Err(ReadError::NotSamples);
        }
        let version = u32_at(&b, 8);
        if version != VERSION {
            return Err(ReadError::Version(version));
        }
        Ok(Reader {
            input,
            header: Header {
                start_realtime_ns: u64_at(&b, 16),
                start_monotonic_ns: u64_at(&b, 24),
            },
            ended_inside_record: false,
            trailer_seen: false,
        })
    }

    /// The file ended without its trailer (the run was killed, or the
    /// copy is short).
    pub fn truncated(&self) -> bool {
        self.ended_inside_record || !self.trailer_seen
    }

    /// The next record, or None at the end (see `truncated`).
    pub fn next_item(&mut self) -> Result<Option<Item>, ReadError> {
        if self.trailer_seen {
            return Ok(None);
        }
        let mut head = [0u8; RECORD_HEADER_BYTES];
        let eof = |r: &mut Self| {
            r.ended_inside_record = true;
            Ok(None)
        };
        match read_full(&mut self.input, &mut head) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return eof(self),
            Err(e) => return Err(e.into()),
        }
        let (kind, len) = (u32_at(&head, 0), u32_at(&head, 4));
        if len > MAX_RECORD_BYTES {
            return Err(ReadError::Corrupt(format!(
                "a record of {len} bytes (type {kind})"
            )));
        }
        let mut payload = vec![0u8; len as usize];
        match read_full(&mut self.input, &mut payload) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return eof(self),
            Err(e) => return Err(e.into()),
        }
        let item = match kind {
            SERIES => Item::Series(series_of(&payload)?),
            SAMPLES => samples_of(&payload)?,
            TRAILER => {
                self.trailer_seen = true;
                Item::Trailer(trailer_of(&payload)?)
            }
            // A record type of a later minor addition: skipped.
            _ => return self.next_item(),
        };
        Ok(Some(item))
    }
}

fn corrupt(what: &str) -> ReadError {
    ReadError::Corrupt(format!("a {what} record of the wrong length"))
}

fn series_of(p: &[u8]) -> Result<SeriesInfo, ReadError> {
    if p.len() < SERIES_FIXED_BYTES {
        return Err(corrupt("series"));
    }
    let mut at = SERIES_FIXED_BYTES;
    let mut strings = Vec::with_capacity(3);
    for _ in 0..3 {
        let n = p
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
            .ok_or_else(|| corrupt("series"))?;
        let text = p.get(at + 2..at + 2 + n).ok_or_else(|| corrupt("series"))?;
        strings.push(String::from_utf8_lossy(text).into_owned());
        at += 2 + n;
    }
    let cpu = u32_at(p, 12) as i32;
    let label = strings.pop().unwrap_or_default();
    let kind = strings.pop().unwrap_or_default();
    let test_name = strings.pop().unwrap_or_default();
    Ok(SeriesInfo {
        id: u32_at(p, 0),
        test: u32_at(p, 4),
        index: u32_at(p, 8),
        cpu: usize::try_from(cpu).ok(),
        test_name,
        kind,
        label,
    })
}

fn samples_of(p: &[u8]) -> Result<Item, ReadError> {
    if p.len() < 8 {
        return Err(corrupt("samples"));
    }
    let count = u32_at(p, 4) as usize;
    if p.len() != 8 + count * SAMPLE_BYTES {
        return Err(corrupt("samples"));
    }
    let samples = p[8..]
        .chunks_exact(SAMPLE_BYTES)
        .map(|c| (u64_at(c, 0), u64_at(c, 8) as i64))
        .collect();
    Ok(Item::Samples {
        id: u32_at(p, 0),
        samples,
    })
}

fn trailer_of(p: &[u8]) -> Result<Vec<SeriesCounts>, ReadError> {
    if p.len() < 8 {
        return Err(corrupt("trailer"));
    }
    let n = u32_at(p, 0) as usize;
    if p.len() != 8 + n * TRAILER_PER_SERIES_BYTES {
        return Err(corrupt("trailer"));
    }
    Ok(p[8..]
        .chunks_exact(TRAILER_PER_SERIES_BYTES)
        .map(|c| SeriesCounts {
            id: u32_at(c, 0),
            written: u64_at(c, 8),
            dropped: u64_at(c, 16),
            not_written: u64_at(c, 24),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> SeriesInfo {
        SeriesInfo {
            id: 7,
            test: 1,
            index: 2,
            cpu: Some(3),
            test_name: "mq".into(),
            kind: "ipc_pair".into(),
            label: "p".into(),
        }
    }

    #[test]
    fn the_header_has_these_exact_bytes() {
        let h = header_bytes(&Header {
            start_realtime_ns: 0x0102030405060708,
            start_monotonic_ns: 0x1112131415161718,
        });
        let mut expected = b"LATSMPL1".to_vec();
        expected.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0]);
        expected.extend_from_slice(&[8, 7, 6, 5, 4, 3, 2, 1]);
        expected.extend_from_slice(&[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11]);
        assert_eq!(h.to_vec(), expected);
    }

    #[test]
    fn records_have_these_exact_bytes() {
        let mut b = Vec::new();
        push_series(&mut b, &info());
        #[rustfmt::skip]
        let series: &[u8] = &[
            1, 0, 0, 0, 33, 0, 0, 0, // type 1, 33 bytes
            7, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,
            2, 0, b'm', b'q',
            8, 0, b'i', b'p', b'c', b'_', b'p', b'a', b'i', b'r',
            1, 0, b'p',
        ];
        assert_eq!(b, series);
        b.clear();
        push_samples(&mut b, 7, 100, [(105u64, -2i64), (300, 9)].into_iter());
        #[rustfmt::skip]
        let samples: &[u8] = &[
            2, 0, 0, 0, 40, 0, 0, 0,
            7, 0, 0, 0, 2, 0, 0, 0,
            5, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            200, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(b, samples);
        assert_eq!(b.len(), samples_record_bytes(2));
        b.clear();
        push_trailer(
            &mut b,
            &[SeriesCounts {
                id: 7,
                written: 2,
                dropped: 1,
                not_written: 3,
            }],
        );
        #[rustfmt::skip]
        let trailer: &[u8] = &[
            3, 0, 0, 0, 40, 0, 0, 0,
            1, 0, 0, 0, 0, 0, 0, 0,
            7, 0, 0, 0, 0, 0, 0, 0,
            2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(b, trailer);
        assert_eq!(b.len(), trailer_bytes(1));
    }

    fn file() -> Vec<u8> {
        let mut b = header_bytes(&Header {
            start_realtime_ns: 1,
            start_monotonic_ns: 1000,
        })
        .to_vec();
        push_series(&mut b, &info());
        push_samples(&mut b, 7, 1000, [(1500u64, 40i64)].into_iter());
        push_trailer(
            &mut b,
            &[SeriesCounts {
                id: 7,
                written: 1,
                ..SeriesCounts::default()
            }],
        );
        b
    }

    fn read_all(bytes: &[u8]) -> (Vec<Item>, bool) {
        let mut r = Reader::open(bytes).unwrap();
        let mut items = Vec::new();
        while let Some(item) = r.next_item().unwrap() {
            items.push(item);
        }
        (items, r.truncated())
    }

    #[test]
    fn a_whole_file_reads_back() {
        let (items, truncated) = read_all(&file());
        assert!(!truncated);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], Item::Series(info()));
        assert_eq!(
            items[1],
            Item::Samples {
                id: 7,
                samples: vec![(500, 40)]
            }
        );
    }

    #[test]
    fn a_cut_file_reads_up_to_the_cut_and_says_it_is_truncated() {
        let whole = file();
        // Cut inside the trailer, then right before it.
        for cut in [whole.len() - 5, whole.len() - trailer_bytes(1)] {
            let (items, truncated) = read_all(&whole[..cut]);
            assert!(truncated, "cut at {cut}");
            assert_eq!(items.len(), 2);
        }
    }

    #[test]
    fn other_files_are_refused() {
        assert!(matches!(
            Reader::open(&b"{\"schema\": 1}"[..]),
            Err(ReadError::NotSamples)
        ));
        assert!(matches!(Reader::open(&b""[..]), Err(ReadError::NotSamples)));
        let mut b = file();
        b[8] = 9;
        assert!(matches!(Reader::open(&b[..]), Err(ReadError::Version(9))));
    }
}
