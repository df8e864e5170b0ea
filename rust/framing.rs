//! Line framing: bytes in any chunking -> lines with their stream offsets. Mirrors
//! `reference/framing.py`.
//!
//! A line ends at LF; one CR right before the LF is dropped; a bare CR is data; the last line
//! needs no LF. A UTF-8 BOM at stream offset 0 is skipped (positions still count it). Lines
//! wholly inside a chunk are returned as ranges of that chunk (zero-copy); only a line that spans
//! chunks is copied, and never more than `max_line_bytes + 1` bytes of it: an over-long line
//! keeps its prefix and the rest is counted and dropped.
//!
//! A framer made with [`Framer::detecting`] (the normalizer's) also looks for a UTF-16 or UTF-32
//! stream at offset 0 (a BOM, or the NUL pattern of the first code unit: RFC 8259 §8.1, RFC 4627
//! §3); such a stream is not split into lines at all: it is counted, its first bytes kept for
//! [`WideStream::raw`], and [`Framer::wide`] reports it.

use crate::budget::OutOfMemory;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// Bytes after the BOM of a UTF-16/UTF-32 stream kept for [`WideStream::raw`].
pub const WIDE_RAW_BYTES: usize = 256;

/// A UTF-16 or UTF-32 encoding recognised at stream offset 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wide {
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

impl Wide {
    /// `UTF-16LE`, `UTF-16BE`, `UTF-32LE` or `UTF-32BE` (the `encoding` extra).
    pub fn name(self) -> &'static str {
        match self {
            Wide::Utf16Le => "UTF-16LE",
            Wide::Utf16Be => "UTF-16BE",
            Wide::Utf32Le => "UTF-32LE",
            Wide::Utf32Be => "UTF-32BE",
        }
    }

    fn width(self) -> usize {
        match self {
            Wide::Utf16Le | Wide::Utf16Be => 2,
            Wide::Utf32Le | Wide::Utf32Be => 4,
        }
    }

    fn big_endian(self) -> bool {
        matches!(self, Wide::Utf16Be | Wide::Utf32Be)
    }
}

/// What the first bytes of a stream say (`_start` in the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Undecided: hold the bytes (fewer than 4) and wait for more.
    More,
    /// Ordinary data.
    Plain,
    /// A UTF-8 BOM: skipped.
    Utf8Bom,
    /// A UTF-16/UTF-32 stream, with a BOM of this many bytes (0: none).
    Wide(Wide, usize),
}

/// Classify the first bytes `h` of a stream; `eos` when no more bytes will come. Only `More`
/// for fewer than 4 bytes, so a decision never needs more than the first 4.
fn start(h: &[u8], eos: bool, detect: bool) -> Start {
    if h.is_empty() {
        return if eos { Start::Plain } else { Start::More };
    }
    if detect {
        if let Some(s) = wide_start(h, eos) {
            return s;
        }
    }
    if h.starts_with(BOM) {
        Start::Utf8Bom
    } else if !eos && h.len() < 3 && BOM.starts_with(h) {
        Start::More
    } else {
        Start::Plain
    }
}

/// True when a detecting framer would frame bytes starting with `h` as plain UTF-8 from their
/// first byte (no BOM skipped, no UTF-16/UTF-32 stream, nothing to wait for); `eos` when `h` is
/// all there is. `split.rs` cuts a stream only where this holds, so a range normalized as a
/// stream of its own frames like the same bytes inside the whole stream.
pub fn plain_start(h: &[u8], eos: bool) -> bool {
    let h = h.get(..4).unwrap_or(h);
    start(h, eos, true) == Start::Plain
}

/// The UTF-16/UTF-32 part of [`start`]: `None` when `h` cannot begin such a stream.
fn wide_start(h: &[u8], eos: bool) -> Option<Start> {
    let ascii = |b: &u8| (0x01..=0x7f).contains(b);
    // undecided until more bytes come; at the end of the stream `at_end` is the answer
    let wait = |at_end: Option<Start>| if eos { at_end } else { Some(Start::More) };
    match h {
        [0xFF, 0xFE, 0, 0, ..] => Some(Start::Wide(Wide::Utf32Le, 4)),
        [0xFF, 0xFE] | [0xFF, 0xFE, 0] => wait(Some(Start::Wide(Wide::Utf16Le, 2))),
        [0xFF, 0xFE, ..] => Some(Start::Wide(Wide::Utf16Le, 2)),
        [0xFE, 0xFF, ..] => Some(Start::Wide(Wide::Utf16Be, 2)),
        [0xFF] | [0xFE] => wait(None),
        [0, 0, 0xFE, 0xFF, ..] => Some(Start::Wide(Wide::Utf32Be, 4)),
        [0, 0, 0, x, ..] if ascii(x) => Some(Start::Wide(Wide::Utf32Be, 0)),
        [0, x, ..] if ascii(x) => Some(Start::Wide(Wide::Utf16Be, 0)),
        [0] | [0, 0] | [0, 0, 0] | [0, 0, 0xFE] => wait(None),
        [x, 0, 0, 0, ..] if ascii(x) => Some(Start::Wide(Wide::Utf32Le, 0)),
        [x, 0] | [x, 0, 0] if ascii(x) => wait(Some(Start::Wide(Wide::Utf16Le, 0))),
        [x, 0, ..] if ascii(x) => Some(Start::Wide(Wide::Utf16Le, 0)),
        [x] if ascii(x) => wait(None),
        _ => None,
    }
}

/// A stream found to be UTF-16 or UTF-32: its encoding, BOM length, total size and first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WideStream {
    pub encoding: Wide,
    /// Length of the BOM (0 when the NUL pattern gave it away).
    pub bom: usize,
    /// Every byte of the stream, BOM included.
    pub bytes: u64,
    head: Vec<u8>,
}

impl WideStream {
    fn new(encoding: Wide, bom: usize) -> Self {
        WideStream {
            encoding,
            bom,
            bytes: 0,
            head: Vec::new(),
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = (self.bom + WIDE_RAW_BYTES).saturating_sub(self.head.len());
        self.head
            .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        self.bytes += bytes.len() as u64;
    }

    /// What the user should see: the first [`WIDE_RAW_BYTES`] bytes after the BOM, as whole
    /// code units, decoded (an unpaired surrogate or a unit beyond U+10FFFF is U+FFFD), up to the
    /// first LF (and a CR right before it).
    pub fn raw(&self) -> String {
        let body = self.head.get(self.bom..).unwrap_or_default();
        let width = self.encoding.width();
        let units = body.chunks_exact(width).map(|u| {
            u.iter().enumerate().fold(0u32, |acc, (i, &b)| {
                let shift = if self.encoding.big_endian() {
                    8 * (width - 1 - i)
                } else {
                    8 * i
                };
                acc | (u32::from(b) << shift)
            })
        });
        let text: String = if width == 2 {
            char::decode_utf16(units.map(|u| u16::try_from(u).unwrap_or(0xFFFD)))
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        } else {
            units
                .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        };
        let line = text.split('\n').next().unwrap_or_default();
        if text.contains('\n') {
            line.strip_suffix('\r').unwrap_or(line).to_string()
        } else {
            line.to_string()
        }
    }
}

/// Where a framed line's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Src {
    /// `chunk[start..end]` of the chunk just fed.
    Chunk(usize, usize),
    /// A line that spanned chunks, copied.
    Owned(Vec<u8>),
}

/// One framed line. `total` is set for an over-long line: its full length (the bytes are then
/// only its first `max_line_bytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub position: u64,
    pub src: Src,
    pub total: Option<u64>,
}

impl Span {
    /// The line's bytes, given the chunk it was framed from.
    pub fn bytes<'a>(&'a self, chunk: &'a [u8]) -> &'a [u8] {
        match &self.src {
            Src::Chunk(a, b) => chunk.get(*a..*b).unwrap_or_default(),
            Src::Owned(v) => v,
        }
    }
}

/// Incremental line splitter.
#[derive(Debug, Clone)]
pub struct Framer {
    max: usize,
    detect: bool,
    head: Vec<u8>,
    bom_done: bool,
    wide: Option<WideStream>,
    pending: Vec<u8>,
    total: u64,
    last: Option<u8>,
    start: u64,
    offset: u64,
}

impl Framer {
    /// A framer that only knows UTF-8 (and its BOM).
    pub fn new(max_line_bytes: usize) -> Self {
        Framer {
            max: max_line_bytes,
            detect: false,
            head: Vec::new(),
            bom_done: false,
            wide: None,
            pending: Vec::new(),
            total: 0,
            last: None,
            start: 0,
            offset: 0,
        }
    }

    /// A framer that also recognises a UTF-16/UTF-32 stream (see [`Framer::wide`]).
    pub fn detecting(max_line_bytes: usize) -> Self {
        Framer {
            detect: true,
            ..Framer::new(max_line_bytes)
        }
    }

    /// A framer for the part of a stream that starts at byte `offset`, right after an LF of
    /// it (a range of a split file, `split.rs`): no BOM or UTF-16/UTF-32 check (those only
    /// exist at offset 0), positions counted from `offset`. Framing the rest of a stream with
    /// it gives the spans the whole stream's framer gives there, as long as that one was
    /// [`Framer::is_idle`] at `offset`.
    pub fn resume(max_line_bytes: usize, offset: u64) -> Self {
        Framer {
            bom_done: true,
            start: offset,
            offset,
            ..Framer::new(max_line_bytes)
        }
    }

    /// Between lines of a UTF-8 stream: its start decided (not UTF-16/UTF-32), no partial line
    /// held. Only then can framing continue in a [`Framer::resume`]d framer.
    pub fn is_idle(&self) -> bool {
        self.bom_done && self.wide.is_none() && self.total == 0 && self.head.is_empty()
    }

    /// The UTF-16/UTF-32 stream this is, once its first bytes said so: it gives no lines.
    pub fn wide(&self) -> Option<&WideStream> {
        self.wide.as_ref()
    }

    /// Frame `chunk`, appending complete lines to `out`. Growing the pending line or `out` is
    /// fallible (`try_reserve`): on [`OutOfMemory`] the framer must not be fed again.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Span>) -> Result<(), OutOfMemory> {
        let base = self.offset;
        self.offset += chunk.len() as u64;
        if let Some(w) = self.wide.as_mut() {
            w.take(chunk);
            return Ok(());
        }
        let mut pos = 0usize;
        if !self.bom_done {
            let mut probe = self.head.clone();
            probe.extend(chunk.iter().take(4));
            let decision = start(&probe, false, self.detect);
            if decision == Start::More {
                // only for fewer than 4 bytes: the whole chunk is in `probe`
                self.head.extend_from_slice(chunk);
                return Ok(());
            }
            self.bom_done = true;
            let head = std::mem::take(&mut self.head);
            match decision {
                Start::Wide(encoding, bom) => {
                    let mut w = WideStream::new(encoding, bom);
                    w.take(&head);
                    w.take(chunk);
                    self.wide = Some(w);
                    return Ok(());
                }
                Start::Utf8Bom => {
                    pos = 3usize.saturating_sub(head.len());
                    self.start = 3;
                }
                Start::More | Start::Plain => self.frame_head(&head, out)?,
            }
        }
        let n = chunk.len();
        while pos < n {
            let rest = chunk.get(pos..).unwrap_or_default();
            let Some(k) = memchr::memchr(b'\n', rest) else {
                self.take(rest)?;
                break;
            };
            let end = pos + k;
            OutOfMemory::reserve(out, 1)?;
            if self.total == 0 {
                out.push(self.slice_line(chunk, pos, end));
            } else {
                self.take(chunk.get(pos..end).unwrap_or_default())?;
                out.push(self.pending_line(false));
            }
            self.start = base + end as u64 + 1;
            pos = end + 1;
        }
        Ok(())
    }

    /// End of stream: the last line, if it had no LF.
    pub fn finish(&mut self, out: &mut Vec<Span>) -> Result<(), OutOfMemory> {
        if !self.bom_done {
            // fewer than 4 bytes ever arrived and they did not decide
            self.bom_done = true;
            let head = std::mem::take(&mut self.head);
            match start(&head, true, self.detect) {
                Start::Wide(encoding, bom) => {
                    let mut w = WideStream::new(encoding, bom);
                    w.take(&head);
                    self.wide = Some(w);
                }
                Start::Utf8Bom => {
                    // unreachable: a whole BOM decides in feed; kept for completeness
                    self.start = 3;
                    self.take(head.get(3..).unwrap_or_default())?;
                }
                Start::More | Start::Plain => self.frame_head(&head, out)?,
            }
        }
        if self.wide.is_some() {
            return Ok(());
        }
        if self.total > 0 {
            OutOfMemory::reserve(out, 1)?;
            out.push(self.pending_line(true));
        }
        Ok(())
    }

    /// Frame the held first bytes of the stream (offset 0; they may hold LFs), copying.
    fn frame_head(&mut self, head: &[u8], out: &mut Vec<Span>) -> Result<(), OutOfMemory> {
        let mut pos = 0usize;
        while let Some(k) = memchr::memchr(b'\n', head.get(pos..).unwrap_or_default()) {
            self.take(head.get(pos..pos + k).unwrap_or_default())?;
            OutOfMemory::reserve(out, 1)?;
            out.push(self.pending_line(false));
            pos += k + 1;
            self.start = pos as u64;
        }
        self.take(head.get(pos..).unwrap_or_default())
    }

    /// Append to the pending line (at most `max + 1` bytes of it are kept); fallible because
    /// its size comes from the input.
    fn take(&mut self, bytes: &[u8]) -> Result<(), OutOfMemory> {
        let Some(&last) = bytes.last() else {
            return Ok(());
        };
        let room = (self.max + 1).saturating_sub(self.pending.len());
        let kept = bytes.get(..room.min(bytes.len())).unwrap_or_default();
        OutOfMemory::reserve(&mut self.pending, kept.len())?;
        self.pending.extend_from_slice(kept);
        self.total += bytes.len() as u64;
        self.last = Some(last);
        Ok(())
    }

    fn slice_line(&self, chunk: &[u8], pos: usize, end: usize) -> Span {
        let cr = end > pos && chunk.get(end - 1) == Some(&b'\r');
        let len = end - pos - usize::from(cr);
        if len > self.max {
            Span {
                position: self.start,
                src: Src::Chunk(pos, pos + self.max),
                total: Some(len as u64),
            }
        } else {
            Span {
                position: self.start,
                src: Src::Chunk(pos, pos + len),
                total: None,
            }
        }
    }

    fn pending_line(&mut self, last_line: bool) -> Span {
        let mut length = self.total;
        if !last_line && self.last == Some(b'\r') {
            length -= 1;
        }
        let mut data = std::mem::take(&mut self.pending);
        self.total = 0;
        self.last = None;
        if length > self.max as u64 {
            data.truncate(self.max);
            Span {
                position: self.start,
                src: Src::Owned(data),
                total: Some(length),
            }
        } else {
            data.truncate(usize::try_from(length).unwrap_or(usize::MAX));
            Span {
                position: self.start,
                src: Src::Owned(data),
                total: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<(u64, Vec<u8>, Option<u64>)> {
        let mut f = Framer::new(max);
        let mut res = Vec::new();
        for c in chunks {
            let mut out = Vec::new();
            assert!(f.feed(c, &mut out).is_ok());
            res.extend(
                out.iter()
                    .map(|s| (s.position, s.bytes(c).to_vec(), s.total)),
            );
        }
        let mut out = Vec::new();
        assert!(f.finish(&mut out).is_ok());
        res.extend(
            out.iter()
                .map(|s| (s.position, s.bytes(&[]).to_vec(), s.total)),
        );
        res
    }

    #[test]
    fn splits_and_drops_cr() {
        let want = vec![
            (3, b"a".to_vec(), None),
            (6, b"b\rc".to_vec(), None),
            (10, b"d\r".to_vec(), None),
        ];
        assert_eq!(lines(&[b"\xef\xbb\xbfa\r\nb\rc\nd\r"], 10), want);
        assert_eq!(
            lines(&[b"\xef", b"\xbb", b"\xbfa\r", b"\nb\rc\nd\r"], 10),
            want
        );
    }

    #[test]
    fn overlong_lines_keep_prefix() {
        let want = vec![(0, b"abc".to_vec(), Some(6)), (8, b"xy".to_vec(), None)];
        assert_eq!(lines(&[b"abcdef\r\nxy"], 3), want);
        assert_eq!(lines(&[b"ab", b"cd", b"ef\r", b"\nxy"], 3), want);
        assert_eq!(lines(&[b"abc\r\n"], 3), vec![(0, b"abc".to_vec(), None)]);
    }

    #[test]
    fn short_bom_prefix_is_data() {
        assert_eq!(
            lines(&[b"\xef\xbb"], 10),
            vec![(0, b"\xef\xbb".to_vec(), None)]
        );
        assert_eq!(
            lines(&[b"\xef", b"x\n"], 10),
            vec![(0, b"\xefx".to_vec(), None)]
        );
    }

    /// Feed `data` to a detecting framer in `step`-byte chunks: (lines, wide stream).
    fn detect(data: &[u8], step: usize) -> (usize, Option<WideStream>) {
        let mut f = Framer::detecting(64);
        let mut out = Vec::new();
        for c in data.chunks(step.max(1)) {
            assert!(f.feed(c, &mut out).is_ok());
        }
        assert!(f.finish(&mut out).is_ok());
        (out.len(), f.wide().cloned())
    }

    #[test]
    fn wide_streams_are_recognised_from_their_first_bytes() {
        let cases: &[(&[u8], Wide, usize)] = &[
            (b"\xff\xfe{\x00}\x00\n\x00", Wide::Utf16Le, 2),
            (b"\xfe\xff\x00{\x00}", Wide::Utf16Be, 2),
            (b"{\x00}\x00\n\x00{\x00", Wide::Utf16Le, 0),
            (b"\x00{\x00}\x00\n", Wide::Utf16Be, 0),
            (b"\xff\xfe\x00\x00{\x00\x00\x00", Wide::Utf32Le, 4),
            (b"\x00\x00\xfe\xff\x00\x00\x00{", Wide::Utf32Be, 4),
            (b"{\x00\x00\x00\n\x00\x00\x00", Wide::Utf32Le, 0),
            (b"\x00\x00\x00{", Wide::Utf32Be, 0),
            (b"{\x00", Wide::Utf16Le, 0),
            (b"{\x00\x00", Wide::Utf16Le, 0),
            (b"\xff\xfe", Wide::Utf16Le, 2),
            (b"\xff\xfe\x00", Wide::Utf16Le, 2),
            (b"\xfe\xff", Wide::Utf16Be, 2),
        ];
        for (data, enc, bom) in cases {
            for step in 1..=data.len() {
                let (lines, wide) = detect(data, step);
                let w = wide.unwrap_or_else(|| panic!("{data:?} in {step}s: not detected"));
                assert_eq!(
                    (lines, w.encoding, w.bom),
                    (0, *enc, *bom),
                    "{data:?} {step}"
                );
                assert_eq!(w.bytes, data.len() as u64);
            }
        }
    }

    #[test]
    fn near_misses_are_lines() {
        let cases: &[&[u8]] = &[
            b"\x00",
            b"\x00\x00",
            b"\x00\x00\x00\x00{",
            b"\x00\x00\xfe",
            b"\x00\x80",
            b"\xe9\x00",
            b"\xff",
            b"\xfe",
            b"\xff\xff",
            b"{",
            b"{}\n",
            b"\n{\x00",
            b"\xef\xbb\xbf{\x00",
            b"{\x01\x00",
        ];
        for data in cases {
            for step in 1..=data.len() {
                let (lines, wide) = detect(data, step);
                assert!(wide.is_none(), "{data:?} detected");
                assert!(lines >= 1, "{data:?} gave no line");
            }
        }
    }

    #[test]
    fn held_first_bytes_are_split_at_lf() {
        let want = vec![(0, b"".to_vec(), None), (1, b"x".to_vec(), None)];
        let mut f = Framer::detecting(10);
        let mut res = Vec::new();
        for c in [&b"\n"[..], b"x"] {
            let mut out = Vec::new();
            assert!(f.feed(c, &mut out).is_ok());
            res.extend(
                out.iter()
                    .map(|s| (s.position, s.bytes(c).to_vec(), s.total)),
            );
        }
        let mut out = Vec::new();
        assert!(f.finish(&mut out).is_ok());
        res.extend(
            out.iter()
                .map(|s| (s.position, s.bytes(&[]).to_vec(), s.total)),
        );
        assert_eq!(res, want);
    }

    #[test]
    fn plain_framer_does_not_detect() {
        let mut f = Framer::new(64);
        let mut out = Vec::new();
        assert!(f.feed(b"{\x00\n\x00", &mut out).is_ok());
        assert!(f.finish(&mut out).is_ok());
        assert!(f.wide().is_none());
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn wide_raw_is_the_first_line_and_head_is_bounded() {
        let enc = |s: &str| -> Vec<u8> { s.encode_utf16().flat_map(u16::to_le_bytes).collect() };
        let (_, w) = detect(&enc("{\"a\":\"\u{e9}\u{1F600}\"}\r\nnext\n"), 3);
        assert_eq!(
            w.map(|w| w.raw()),
            Some("{\"a\":\"\u{e9}\u{1F600}\"}".to_string())
        );
        let big = enc(&"x".repeat(100_000));
        let (_, w) = detect(&big, 4096);
        let w = w.unwrap_or_else(|| panic!("not detected"));
        assert_eq!(w.raw(), "x".repeat(128));
        assert!(w.head.len() <= WIDE_RAW_BYTES);
        assert_eq!(w.bytes, 200_000);
        // unpaired surrogates, a pair, a dangling high surrogate
        let (_, w) = detect(b"a\x00\x00\xd8b\x00\x00\xdc\x3d\xd8\x00\xde\x00\xd8", 1);
        assert_eq!(
            w.map(|w| w.raw()),
            Some("a\u{FFFD}b\u{FFFD}\u{1F600}\u{FFFD}".to_string())
        );
        let (_, w) = detect(b"\x00\x00\x00a\x00\x11\x00\x00\x00\x00\xd8\x00", 2);
        assert_eq!(w.map(|w| w.raw()), Some("a\u{FFFD}\u{FFFD}".to_string()));
    }
}
