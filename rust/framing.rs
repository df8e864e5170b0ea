//! Line framing: bytes in any chunking -> lines with their stream offsets. Mirrors
//! `reference/framing.py`.
//!
//! A line ends at LF; one CR right before the LF is dropped; a bare CR is data; the last line
//! needs no LF. A UTF-8 BOM at stream offset 0 is skipped (positions still count it). Lines
//! wholly inside a chunk are returned as ranges of that chunk (zero-copy); only a line that spans
//! chunks is copied, and never more than `max_line_bytes + 1` bytes of it: an over-long line
//! keeps its prefix and the rest is counted and dropped.

const BOM: &[u8] = b"\xef\xbb\xbf";

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
    head: Vec<u8>,
    bom_done: bool,
    pending: Vec<u8>,
    total: u64,
    last: Option<u8>,
    start: u64,
    offset: u64,
}

impl Framer {
    pub fn new(max_line_bytes: usize) -> Self {
        Framer {
            max: max_line_bytes,
            head: Vec::new(),
            bom_done: false,
            pending: Vec::new(),
            total: 0,
            last: None,
            start: 0,
            offset: 0,
        }
    }

    /// Frame `chunk`, appending complete lines to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Span>) {
        let base = self.offset;
        self.offset += chunk.len() as u64;
        let mut pos = 0usize;
        if !self.bom_done {
            let mut probe = self.head.clone();
            probe.extend(chunk.iter().take(3));
            if probe.len() < 3 && BOM.starts_with(&probe) {
                self.head.extend_from_slice(chunk);
                return;
            }
            self.bom_done = true;
            let head = std::mem::take(&mut self.head);
            if probe.starts_with(BOM) {
                pos = 3 - head.len();
                self.start = 3;
            } else {
                self.take(&head);
            }
        }
        let n = chunk.len();
        while pos < n {
            let rest = chunk.get(pos..).unwrap_or_default();
            let Some(k) = memchr::memchr(b'\n', rest) else {
                self.take(rest);
                break;
            };
            let end = pos + k;
            if self.total == 0 {
                out.push(self.slice_line(chunk, pos, end));
            } else {
                self.take(chunk.get(pos..end).unwrap_or_default());
                out.push(self.pending_line(false));
            }
            self.start = base + end as u64 + 1;
            pos = end + 1;
        }
    }

    /// End of stream: the last line, if it had no LF.
    pub fn finish(&mut self, out: &mut Vec<Span>) {
        if !self.bom_done {
            self.bom_done = true;
            let head = std::mem::take(&mut self.head);
            self.take(&head);
        }
        if self.total > 0 {
            out.push(self.pending_line(true));
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let Some(&last) = bytes.last() else { return };
        let room = (self.max + 1).saturating_sub(self.pending.len());
        self.pending
            .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        self.total += bytes.len() as u64;
        self.last = Some(last);
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
            f.feed(c, &mut out);
            res.extend(
                out.iter()
                    .map(|s| (s.position, s.bytes(c).to_vec(), s.total)),
            );
        }
        let mut out = Vec::new();
        f.finish(&mut out);
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
}
