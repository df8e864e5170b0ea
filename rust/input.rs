//! Input files: opened, and decompressed as they are read when their first bytes are a gzip
//! (`1f 8b`) or zstd (`28 b5 2f fd`) magic, whatever their names (`inputs.py` has the same
//! detection and the same rules; docs/errors.md, a differential test and the `decompress` fuzz
//! target hold the two to them):
//!
//! - gzip: members one after another; zero bytes after a member are padding and ignored (gzip(1)
//!   and Python's `gzip` accept them); anything else after a member must be another member.
//! - zstd: frames one after another; skippable frames (magic `0x184D2A5?`) are skipped; a frame
//!   whose header states a content size must decode to exactly that size, one with a content
//!   checksum must match it; anything after a frame must be another frame.
//! - a truncated or damaged stream is an error (`InvalidData`), never a silent end of input.
//!
//! Memory: the decoder's window (zstd: at most ruzstd's 128 MiB default; gzip: 32 KiB) and one
//! read buffer, never the decompressed file, so the budgets apply to decompressed bytes and a
//! "zip bomb" costs time, not memory.

use std::io::{self, BufRead, Read};
use std::path::Path;

/// The gzip and zstd magics (`inputs.py` has the same).
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Bytes read from the file at a time.
const BUF: usize = 1 << 20;

/// A buffered reader that can look ahead a few bytes across reads ([`Src::peek`]).
pub struct Src<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl<R: Read> Src<R> {
    pub fn new(inner: R, capacity: usize) -> Self {
        Src {
            inner,
            buf: vec![0; capacity.max(32)],
            pos: 0,
            end: 0,
        }
    }

    /// At least `n` (at most 32) buffered bytes, fewer only at the end of the input.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        let n = n.min(32);
        if self.end - self.pos < n {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            while self.end < n {
                match self
                    .inner
                    .read(self.buf.get_mut(self.end..).unwrap_or_default())
                {
                    Ok(0) => break,
                    Ok(k) => self.end += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(self.buf.get(self.pos..self.end).unwrap_or_default())
    }

    /// Skip `n` bytes; false when the input ended first.
    fn skip(&mut self, mut n: u64) -> io::Result<bool> {
        while n > 0 {
            let avail = self.fill_buf()?.len();
            if avail == 0 {
                return Ok(false);
            }
            let k = usize::try_from(n).unwrap_or(usize::MAX).min(avail);
            self.consume(k);
            n -= k as u64;
        }
        Ok(true)
    }
}

impl<R: Read> Read for Src<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end && out.len() >= self.buf.len() {
            return self.inner.read(out);
        }
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        if let (Some(d), Some(s)) = (out.get_mut(..n), avail.get(..n)) {
            d.copy_from_slice(s);
        }
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Src<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(k) => {
                        self.end = k;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(self.buf.get(self.pos..self.end).unwrap_or_default())
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

pub fn compression(head: &[u8]) -> Compression {
    if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// The file at `path` for reading, decompressed as read when it is gzip or zstd (by magic).
pub fn open_input(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    decoded(std::fs::File::open(path)?)
}

/// `r` read whole, decompressed when its first bytes are a gzip or zstd magic.
pub fn decoded<R: Read + Send + 'static>(r: R) -> io::Result<Box<dyn Read + Send>> {
    let mut src = Src::new(r, BUF);
    Ok(match compression(src.peek(4)?) {
        Compression::Gzip => Box::new(Gzip::Between(src, false)),
        Compression::Zstd => Box::new(Zstd::Between(src)),
        Compression::None => Box::new(src),
    })
}

fn damaged(what: &str, detail: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("damaged {what} data: {detail}"),
    )
}

/// A gzip stream of one or more members (the rules of the module doc).
pub enum Gzip<R: Read> {
    Member(Box<flate2::bufread::GzDecoder<Src<R>>>),
    /// Between members; true after the first (zero padding allowed).
    Between(Src<R>, bool),
    Done,
}

impl<R: Read> Read for Gzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(self, Gzip::Done) {
                Gzip::Done => return Ok(0),
                Gzip::Member(mut d) => {
                    let n = match d.read(buf) {
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                            *self = Gzip::Member(d);
                            continue;
                        }
                        Err(e) => return Err(damaged("gzip", e)),
                    };
                    if n > 0 {
                        *self = Gzip::Member(d);
                        return Ok(n);
                    }
                    *self = Gzip::Between(d.into_inner(), true);
                }
                Gzip::Between(mut src, after) => {
                    if after {
                        loop {
                            let b = src.fill_buf()?;
                            let zeros = b.iter().take_while(|&&c| c == 0).count();
                            let all = zeros == b.len();
                            src.consume(zeros);
                            if !all || zeros == 0 {
                                break;
                            }
                        }
                    }
                    if src.peek(1)?.is_empty() {
                        return Ok(0);
                    }
                    if !src.peek(2)?.starts_with(&GZIP_MAGIC) {
                        return Err(damaged("gzip", "trailing bytes that are not a gzip member"));
                    }
                    *self = Gzip::Member(Box::new(flate2::bufread::GzDecoder::new(src)));
                }
            }
        }
    }
}

/// The content size a zstd frame header states, if any (`head` starts at the magic).
fn stated_size(head: &[u8]) -> Option<u64> {
    let fhd = *head.get(4)?;
    let single = fhd & 0x20 != 0;
    let fcs = match fhd >> 6 {
        0 if single => 1,
        0 => return None,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dict = [0usize, 1, 2, 4].get(usize::from(fhd & 3)).copied()?;
    let at = 5 + usize::from(!single) + dict;
    let field = head.get(at..at + fcs)?;
    let mut v = 0u64;
    for (i, b) in field.iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    Some(if fcs == 2 { v + 256 } else { v })
}

type Frame<R> = ruzstd::decoding::StreamingDecoder<Src<R>, ruzstd::decoding::FrameDecoder>;

/// A zstd stream of one or more frames (the rules of the module doc).
pub enum Zstd<R: Read> {
    /// A frame, the size its header states, the bytes decoded so far.
    Frame(Box<Frame<R>>, Option<u64>, u64),
    Between(Src<R>),
    Done,
}

impl<R: Read> Read for Zstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(self, Zstd::Done) {
                Zstd::Done => return Ok(0),
                Zstd::Frame(mut d, stated, done) => {
                    let n = match d.read(buf) {
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                            *self = Zstd::Frame(d, stated, done);
                            continue;
                        }
                        Err(e) => return Err(damaged("zstd", e)),
                    };
                    let done = done + n as u64;
                    if let Some(s) = stated.filter(|&s| done > s || (n == 0 && done != s)) {
                        return Err(damaged(
                            "zstd",
                            format!(
                                "the frame header states {s} bytes, the frame has more or fewer"
                            ),
                        ));
                    }
                    if n > 0 {
                        *self = Zstd::Frame(d, stated, done);
                        return Ok(n);
                    }
                    let frame = &d.decoder;
                    if let (Some(want), Some(got)) = (
                        frame.get_checksum_from_data(),
                        frame.get_calculated_checksum(),
                    ) {
                        if want != got {
                            return Err(damaged("zstd", "the frame's content checksum differs"));
                        }
                    }
                    *self = Zstd::Between(d.into_inner());
                }
                Zstd::Between(mut src) => {
                    let head = src.peek(18)?;
                    if head.is_empty() {
                        return Ok(0);
                    }
                    let magic = head
                        .get(..4)
                        .and_then(|m| <[u8; 4]>::try_from(m).ok())
                        .map(u32::from_le_bytes);
                    match magic {
                        Some(m) if m & 0xffff_fff0 == 0x184d_2a50 => {
                            let len = head
                                .get(4..8)
                                .and_then(|m| <[u8; 4]>::try_from(m).ok())
                                .map(u32::from_le_bytes);
                            let Some(len) = len else {
                                return Err(damaged("zstd", "truncated skippable frame"));
                            };
                            src.consume(8);
                            if !src.skip(u64::from(len))? {
                                return Err(damaged("zstd", "truncated skippable frame"));
                            }
                            *self = Zstd::Between(src);
                        }
                        Some(0xfd2f_b528) => {
                            let stated = stated_size(head);
                            let d = Frame::new(src).map_err(|e| damaged("zstd", e))?;
                            *self = Zstd::Frame(Box::new(d), stated, 0);
                        }
                        _ => {
                            return Err(damaged("zstd", "trailing bytes that are not a zstd frame"))
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(data: &[u8]) -> io::Result<Vec<u8>> {
        let mut r = decoded(std::io::Cursor::new(data.to_vec()))?;
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    }

    #[test]
    fn gzip_members_padding_and_damage() {
        let mut two = gz(b"a\n");
        two.extend(gz(b"b\n"));
        assert_eq!(read_all(&two).ok(), Some(b"a\nb\n".to_vec()));
        let mut padded = two.clone();
        padded.extend([0u8; 7]);
        assert_eq!(read_all(&padded).ok(), Some(b"a\nb\n".to_vec()));
        let mut junk = two.clone();
        junk.extend(b"\0\0x");
        assert!(read_all(&junk).is_err());
        let cut = two.get(..two.len() - 3).unwrap_or_default();
        assert!(read_all(cut).is_err());
        assert!(read_all(&GZIP_MAGIC).is_err());
    }

    #[test]
    fn zstd_frames() {
        // one raw block frame, single segment, content size 3
        let frame = [
            0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x03, 0x19, 0x00, 0x00, b'a', b'b', b'\n',
        ];
        assert_eq!(stated_size(&frame), Some(3));
        assert_eq!(read_all(&frame).ok(), Some(b"ab\n".to_vec()));
        let mut skip = frame.to_vec();
        skip.extend([0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9]);
        skip.extend(frame);
        assert_eq!(read_all(&skip).ok(), Some(b"ab\nab\n".to_vec()));
        let mut lie = frame;
        lie[5] = 4;
        assert!(read_all(&lie).is_err());
        lie[5] = 2;
        assert!(read_all(&lie).is_err());
        assert!(read_all(frame.get(..10).unwrap_or_default()).is_err());
        let mut junk = frame.to_vec();
        junk.push(0);
        assert!(read_all(&junk).is_err());
        let mut cut_skip = frame.to_vec();
        cut_skip.extend([0x50, 0x2a, 0x4d, 0x18, 9, 0, 0, 0, 1]);
        assert!(read_all(&cut_skip).is_err());
    }
}
