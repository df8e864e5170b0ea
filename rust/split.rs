//! A large input cut at newlines into byte ranges that are normalized apart (in parallel by
//! `normalize_files`, or as Dask partitions), with exactly the output of the whole stream.
//!
//! What a stream carries from one line to the next, and how a split keeps it:
//! - framing: the UTF-8 BOM and the UTF-16/UTF-32 check exist only at offset 0, a line may be
//!   cut between chunks, and positions count from the stream's start. Ranges end right after an
//!   LF, and the framer of range `k > 0` is [`crate::framing::Framer::resume`]d at its start
//!   offset (positions right, no BOM check). A cut is also only made where the bytes after it
//!   would start a plain UTF-8 stream ([`plain_start`]: not a BOM, no NUL pattern), so a range
//!   normalized as a stream of its own (the Arrow/Dask path) frames the same lines too.
//! - `auto`: lines are held until one decides the dialect (or the fallback fires after 64
//!   lines / 1 MiB, with its `dialect_fallback` notice). [`plan`] runs the framing and the
//!   sniffing (no mapping, no output) over the head of the stream up to the first cut where
//!   the engine is [`Engine::split_ok`] (dialect decided, nothing held, between lines): the
//!   ranges before it are merged into range 0, which is normalized by an ordinary stream (the
//!   same decision, the same notice), and every later range gets the decided dialect.
//! - the dialect's context ([`Context`]: the model and service tier a codex rollout's
//!   `turn_context` / `thread_settings_applied` lines name for the readings that follow):
//!   [`plan`] gives each range the context the stream has at its start, each part the one set
//!   by the last line before it that touches that part ([`contexts`]: found from the cut
//!   backwards by the dialect's [`AnyDialect::context_marks`] or a `\u00XX` escape of one of
//!   their bytes, then prepared and learnt as the engine would), and the range's engine starts
//!   with it. Otherwise `map` and `meta` take one parsed line, so nothing else crosses a line
//!   boundary.
//! - budgets are per line; an over-long line is kept whole in one range (a cut is never
//!   inside a line); the last line without LF ends the last range (only its stream finishes).
//! - a UTF-16/UTF-32 stream, or one where no cut is `split_ok` (say, only blank lines for
//!   `auto`), is not split: one range, the sequential path.
//! - `seq`: each range numbers its events from 0; [`rebase`] renumbers range `k`'s JSONL from
//!   the number of events of the ranges before it (every line starts with
//!   `{"v":"events/v1","seq":`), so `seq` runs on across the file.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::budget::{Budget, OutOfMemory};
use crate::dialect::{AnyDialect, Context, Parts};
use crate::fields::Sel;
use crate::framing::plain_start;
use crate::jsonl::{Stream, READ_CHUNK};
use crate::normalize::{prepare, Engine, Prepared};

/// The range size `normalize_files` aims at (a file is split when it is larger than 1.5 times
/// this). Big enough that the per-range costs (a thread task, an output buffer, the `seq`
/// rewrite) vanish, small enough that 2 to 16 threads get several ranges of a 100 MB file.
pub const SPLIT_BYTES: u64 = 8 << 20;

/// Bytes read per step while looking for an LF or sniffing the head.
const PROBE: usize = 64 << 10;

/// Random access to an input: a byte slice or a file.
pub trait Input {
    fn size(&self) -> u64;
    /// Read into `buf` from `offset`; fewer bytes only at the end.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

impl Input for &[u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let src = self.get(start..).unwrap_or_default();
        let n = src.len().min(buf.len());
        if let (Some(d), Some(s)) = (buf.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(s);
        }
        Ok(n)
    }
}

/// A file opened for one reader (each thread opens its own).
#[derive(Debug)]
pub struct FileInput {
    file: std::fs::File,
    size: u64,
}

impl FileInput {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(FileInput { file, size })
    }
}

impl Input for FileInput {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.seek(SeekFrom::Start(offset))?;
        let mut n = 0;
        while n < buf.len() {
            match self.file.read(buf.get_mut(n..).unwrap_or_default()) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// The first offset `c >= at` right after an LF where the bytes from `c` start a plain UTF-8
/// stream, or `None` (no such LF before the end, or only the end itself).
fn next_cut(src: &mut dyn Input, at: u64) -> io::Result<Option<u64>> {
    let size = src.size();
    let mut buf = zeroed(PROBE)?;
    // the LF at offset at - 1 already ends a line right before `at`
    let mut pos = at.saturating_sub(1);
    while pos < size {
        let n = src.read_at(pos, &mut buf)?;
        if n == 0 {
            break;
        }
        let block = buf.get(..n).unwrap_or_default();
        for k in memchr::memchr_iter(b'\n', block) {
            let c = pos + k as u64 + 1;
            if c < at {
                continue;
            }
            if c >= size {
                return Ok(None);
            }
            let mut head = [0u8; 4];
            let h = src.read_at(c, &mut head)?;
            if plain_start(head.get(..h).unwrap_or_default(), c + (h as u64) >= size) {
                return Ok(Some(c));
            }
        }
        pos += n as u64;
    }
    Ok(None)
}

/// Ranges of about `target` bytes, each but the last ending right after an LF, covering the
/// input in order (one range for a small input).
pub fn ranges(src: &mut dyn Input, target: u64) -> io::Result<Vec<(u64, u64)>> {
    let size = src.size();
    let target = target.max(1);
    let mut out = Vec::new();
    let mut start = 0u64;
    while size - start > target {
        match next_cut(src, start + target)? {
            Some(c) => {
                out.push((start, c));
                start = c;
            }
            None => break,
        }
    }
    out.push((start, size));
    Ok(out)
}

/// How one input is normalized: its ranges, the dialect of every range after the first
/// (`None` when there is one range), and the dialect context at the start of each range (the
/// first's is empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub ranges: Vec<(u64, u64)>,
    pub resume: Option<AnyDialect>,
    pub contexts: Vec<Context>,
}

impl Plan {
    fn whole(size: u64) -> Self {
        Plan {
            ranges: vec![(0, size)],
            resume: None,
            contexts: vec![Context::default()],
        }
    }
}

/// Read exactly `buf.len()` bytes at `offset` (an error past the end: the input shrank).
fn read_exact_at(src: &mut dyn Input, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    if src.read_at(offset, buf)? < buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the input shrank while it was split",
        ));
    }
    Ok(())
}

/// The bytes of `[start, end)` read into `buf`, `start` being `end - buf.len()` or `lo` if
/// that is later: one step of a scan backwards from `end` to `lo`.
fn block_before<'b>(
    src: &mut dyn Input,
    buf: &'b mut [u8],
    lo: u64,
    end: u64,
) -> io::Result<(u64, &'b [u8])> {
    let start = end.saturating_sub(buf.len() as u64).max(lo);
    let block = buf
        .get_mut(..usize::try_from(end - start).unwrap_or(0))
        .unwrap_or_default();
    read_exact_at(src, start, block)?;
    Ok((start, block))
}

/// Just after the last LF of `[lo, at)`, or `lo` (a line start): the start of a line that goes
/// on from `at`.
fn line_start(src: &mut dyn Input, lo: u64, at: u64) -> io::Result<u64> {
    let mut buf = zeroed(PROBE)?;
    let mut end = at;
    while end > lo {
        let (start, block) = block_before(src, &mut buf, lo, end)?;
        if let Some(i) = memchr::memrchr(b'\n', block) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(lo)
}

/// The offset of the first LF of `[at, hi)`, or `hi`: the end of a line that holds `at`.
fn line_end(src: &mut dyn Input, at: u64, hi: u64) -> io::Result<u64> {
    let mut buf = zeroed(PROBE)?;
    let mut pos = at;
    while pos < hi {
        let n = usize::try_from(hi - pos).unwrap_or(PROBE).min(PROBE);
        let block = buf.get_mut(..n).unwrap_or_default();
        read_exact_at(src, pos, block)?;
        if let Some(i) = memchr::memchr(b'\n', block) {
            return Ok(pos + i as u64);
        }
        pos += n as u64;
    }
    Ok(hi)
}

/// Whether the `\u00` escape whose two next bytes are `hex` (`None`: past the block, not
/// known) may spell a byte of one of `marks`.
fn escapes_a_mark_byte(hex: Option<&[u8]>, marks: &[&[u8]]) -> bool {
    let Some(&[h, l]) = hex else {
        return true;
    };
    let digit = |c: u8| (c as char).to_digit(16);
    match (digit(h), digit(l)) {
        (Some(h), Some(l)) => {
            u8::try_from(h * 16 + l).is_ok_and(|b| marks.iter().any(|m| m.contains(&b)))
        }
        _ => false,
    }
}

/// The offset in `block` of the last place a line touching the context may show: one of the
/// dialect's `marks` (found by `finders`, one per mark), or a `\u00XX` escape of one of their
/// bytes (the only other way a JSON text can spell them: no short escape gives a letter, a
/// digit or `_`).
fn last_mark(
    block: &[u8],
    finders: &[memchr::memmem::FinderRev<'_>],
    escape: &memchr::memmem::FinderRev<'_>,
    marks: &[&[u8]],
) -> Option<usize> {
    let m = finders.iter().filter_map(|f| f.rfind(block)).max();
    let mut lim = block.len();
    // the escapes after the last mark, from the end (a mark has no backslash: none holds an
    // escape's first byte)
    while let Some(e) = escape.rfind(block.get(..lim)?) {
        if m.is_some_and(|m| m > e) {
            break;
        }
        if escapes_a_mark_byte(block.get(e + 4..e + 6), marks) {
            return Some(e);
        }
        lim = e;
    }
    m
}

/// The parts of the context set by the last lines of `[lo, hi)` (both line starts) that touch
/// them, with the parts found: lines where [`last_mark`] finds a place, from `hi` backwards
/// until every part is found, framed as the framer frames them (a BOM at offset 0 skipped, one
/// CR before the LF dropped, over `max_line_bytes`: not a value), [`prepare`]d and given to
/// [`AnyDialect::learn`].
fn last_context(
    src: &mut dyn Input,
    lo: u64,
    hi: u64,
    dialect: &AnyDialect,
    marks: &[&[u8]],
    budget: Budget,
) -> io::Result<(Context, Parts)> {
    let finders: Vec<memchr::memmem::FinderRev<'_>> =
        marks.iter().map(memchr::memmem::FinderRev::new).collect();
    let escape = memchr::memmem::FinderRev::new(b"\\u00");
    // a place across the block's start is found whole in the next block
    let longest = marks.iter().map(|m| m.len()).max().unwrap_or(0);
    let overlap = longest.max(6) as u64 - 1;
    let mut buf = zeroed(PROBE)?;
    let mut found = Context::default();
    let mut have: Parts = 0;
    let mut end = hi;
    while end > lo && have != Context::ALL {
        let (start, block) = block_before(src, &mut buf, lo, end)?;
        let Some(hit) = last_mark(block, &finders, &escape, marks) else {
            end = if start == lo { lo } else { start + overlap };
            continue;
        };
        let at = start + hit as u64;
        // the line's bounds, in the block when they are there
        let ls = match memchr::memrchr(b'\n', block.get(..hit).unwrap_or_default()) {
            Some(i) => start + i as u64 + 1,
            None => line_start(src, lo, start)?,
        };
        let le = match memchr::memchr(b'\n', block.get(hit..).unwrap_or_default()) {
            Some(i) => at + i as u64,
            None => line_end(src, end, hi)?,
        };
        // a line may be over by a BOM (at offset 0) and a CR before its LF, which the framer drops
        if le - ls <= budget.max_line_bytes as u64 + 4 {
            let mut line = Vec::new();
            OutOfMemory::reserve(&mut line, usize::try_from(le - ls).unwrap_or(usize::MAX))
                .map_err(io_oom)?;
            line.resize(usize::try_from(le - ls).unwrap_or(0), 0);
            read_exact_at(src, ls, &mut line)?;
            let mut data = line.as_slice();
            if ls == 0 {
                data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
            }
            data = data.strip_suffix(b"\r").unwrap_or(data);
            if data.len() <= budget.max_line_bytes {
                if let Some(Prepared::Parsed { value, .. }) =
                    prepare(data, None, &budget).map_err(io_oom)?
                {
                    let mut ctx = Context::default();
                    let parts = if value.is_object() {
                        dialect.learn(&value, &mut ctx) & !have
                    } else {
                        0
                    };
                    found.take(&ctx, parts);
                    have |= parts;
                }
            }
        }
        end = ls;
    }
    Ok((found, have))
}

/// The dialect context at the start of each of `ranges`: for range `k > 0`, each part the one
/// the last line of range `k - 1` that touches that part sets ([`last_context`]), else range
/// `k - 1`'s. Each range is searched from its end back until every part is found: in a codex
/// rollout the model within a turn, the tier (set only when changed) often not, so most
/// ranges are searched whole, once (a substring search; only lines with a mark are parsed).
pub fn contexts(
    src: &mut dyn Input,
    ranges: &[(u64, u64)],
    dialect: &AnyDialect,
    budget: Budget,
) -> io::Result<Vec<Context>> {
    let mut out: Vec<Context> = vec![Context::default()];
    let marks = dialect.context_marks();
    if marks.is_empty() {
        out.resize(ranges.len().max(1), Context::default());
        return Ok(out);
    }
    for w in ranges.windows(2) {
        if let &[(lo, _), (hi, _)] = w {
            let (found, parts) = last_context(src, lo, hi, dialect, marks, budget)?;
            // the parts no line of the range touched are the ones it started with
            let mut ctx = out.last().cloned().unwrap_or_default();
            ctx.take(&found, parts);
            out.push(ctx);
        }
    }
    Ok(out)
}

/// A buffer of `n` zero bytes, its room had by `try_reserve`: an I/O path near its process's
/// memory limit gets an `io::ErrorKind::OutOfMemory` error ([`io_oom`]), not an abort.
pub(crate) fn zeroed(n: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    OutOfMemory::reserve(&mut buf, n).map_err(io_oom)?;
    buf.resize(n, 0);
    Ok(buf)
}

/// An allocation that failed, as an `io::Error` of kind `OutOfMemory` made without allocating
/// (no message: Python's `MemoryError` says "out of memory"). It is made where the failure is
/// met, while the buffers that took the memory are still held: its message as a `String`
/// (`OutOfMemory`'s `to_string`) was an allocation that could fail in turn, and Rust aborts on
/// that (SIGABRT, "memory allocation of 34 bytes failed" in [`plan`]'s framing of a 40 MiB line
/// under `RLIMIT_AS`, `normalize --jobs`: tests/test_oom_paths.py).
pub(crate) fn io_oom(_: OutOfMemory) -> io::Error {
    io::Error::from(io::ErrorKind::OutOfMemory)
}

/// The error of work stopped by [`normalize_files`]'s `cancel` flag.
pub fn cancelled() -> io::Error {
    io::Error::other(CANCELLED)
}

const CANCELLED: &str = "cancelled";

/// True for the error of [`cancelled`].
pub fn is_cancelled(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.to_string() == CANCELLED
}

/// An output file being written (docs/errors.md): a fresh hidden temporary file next to its
/// name (`.<name>.<pid>.<n>.tmp`, created with `O_EXCL`, so a symlink planted there is never
/// followed), renamed onto the name by [`Output::commit`] once complete, and removed when
/// dropped uncommitted (an error, a cancel): the name never holds a half-written file.
pub struct Output {
    file: Option<io::BufWriter<std::fs::File>>,
    temp: std::path::PathBuf,
    dest: std::path::PathBuf,
}

impl Output {
    pub fn create(dest: &Path) -> io::Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = dest.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "an output path needs a file name",
            )
        })?;
        let dir = dest.parent().filter(|d| !d.as_os_str().is_empty());
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let mut temp_name = std::ffi::OsString::from(".");
            temp_name.push(name);
            temp_name.push(format!(".{}.{n}.tmp", std::process::id()));
            let temp = dir.map_or_else(|| temp_name.clone().into(), |d| d.join(&temp_name));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(f) => {
                    return Ok(Output {
                        file: Some(io::BufWriter::with_capacity(READ_CHUNK, f)),
                        temp,
                        dest: dest.to_path_buf(),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < u64::MAX => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Flush and rename the temporary file onto the output's name.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            f.into_inner().map_err(io::IntoInnerError::into_error)?;
        }
        std::fs::rename(&self.temp, &self.dest)?;
        self.temp = std::path::PathBuf::new();
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// A growable output in memory whose growth failing is an `OutOfMemory` error, not an abort
/// (Python's `MemoryError` in the end).
#[derive(Default)]
pub struct MemOut(pub Vec<u8>);

impl MemOut {
    pub fn with_capacity(n: usize) -> io::Result<Self> {
        let mut v = Vec::new();
        OutOfMemory::reserve(&mut v, n).map_err(io_oom)?;
        Ok(MemOut(v))
    }
}

impl Write for MemOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // try_reserve grows amortized, as extend would
        OutOfMemory::reserve(&mut self.0, buf.len()).map_err(io_oom)?;
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader that fails with [`cancelled`] once `cancel` is set (checked on every read).
struct Cancellable<'c, R> {
    inner: R,
    cancel: &'c std::sync::atomic::AtomicBool,
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(cancelled());
        }
        self.inner.read(buf)
    }
}

/// One file (decompressed as read, [`crate::input`]) as JSONL into `sink`, read
/// [`READ_CHUNK`] bytes at a time (memory bounded by the chunk and the longest line, not the
/// file), stopping with [`cancelled`] once `cancel` is set: the bytes of
/// [`crate::jsonl::normalize_jsonl`] of the file.
pub fn normalize_file(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    source: Option<&str>,
    sel: Sel,
    sink: &mut dyn Write,
    cancel: &std::sync::atomic::AtomicBool,
) -> io::Result<()> {
    let mut s = Stream::new(dialect, budget, source, sel);
    let mut out = Vec::new();
    OutOfMemory::reserve(&mut out, crate::jsonl::out_capacity(READ_CHUNK)).map_err(io_oom)?;
    let mut input = Cancellable {
        inner: crate::input::open_input(path)?,
        cancel,
    };
    crate::jsonl::read_chunks(&mut input, |chunk| {
        out.clear();
        s.feed(chunk, &mut out).map_err(io_oom)?;
        sink.write_all(&out)
    })?;
    out.clear();
    s.finish(&mut out).map_err(io_oom)?;
    sink.write_all(&out)?;
    sink.flush()
}

/// `Vec::with_capacity` whose failure is an error.
#[cfg(feature = "parallel")]
fn try_vec(n: usize) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    OutOfMemory::reserve(&mut v, n).map_err(io_oom)?;
    Ok(v)
}

/// Plan the split of `src` into ranges of about `target` bytes (see the module doc): the
/// ranges before the first cut where the stream's engine is [`Engine::split_ok`] are merged
/// into range 0; no such cut (or a UTF-16/UTF-32 stream) gives one range.
pub fn plan(
    src: &mut dyn Input,
    dialect: Option<AnyDialect>,
    budget: Budget,
    target: u64,
) -> io::Result<Plan> {
    let size = src.size();
    let cuts = ranges(src, target)?;
    if cuts.len() < 2 {
        return Ok(Plan::whole(size));
    }
    let mut engine = Engine::new(dialect, budget);
    let mut buf = zeroed(PROBE)?;
    let mut pos = 0u64;
    for (i, &(_, end)) in cuts.iter().enumerate() {
        if i + 1 == cuts.len() {
            break; // the last range: no cut after it
        }
        while pos < end {
            let want = usize::try_from(end - pos).unwrap_or(PROBE).min(PROBE);
            let n = src.read_at(pos, buf.get_mut(..want).unwrap_or_default())?;
            if n == 0 {
                return Ok(Plan::whole(size));
            }
            engine
                .feed(buf.get(..n).unwrap_or_default())
                .map_err(io_oom)?;
            pos += n as u64;
            if engine.is_wide() {
                return Ok(Plan::whole(size));
            }
        }
        if let (true, Some(d)) = (engine.split_ok(), engine.dialect().cloned()) {
            let mut out = vec![(0, end)];
            out.extend(cuts.get(i + 1..).unwrap_or_default().iter().copied());
            let contexts = contexts(src, &out, &d, budget)?;
            return Ok(Plan {
                ranges: out,
                resume: Some(d),
                contexts,
            });
        }
    }
    Ok(Plan::whole(size))
}

/// The JSONL prefix of every event line, right before its `seq`.
const SEQ_PREFIX: &[u8] = b"{\"v\":\"events/v1\",\"seq\":";

/// Append `jsonl` (a range's events, `seq` from 0) to `out` with `seq` numbered from `base`;
/// returns the number of events. `out` grows with `try_reserve` (a renumbered line is up to 20
/// bytes longer).
pub fn rebase(jsonl: &[u8], base: u64, out: &mut Vec<u8>) -> Result<u64, OutOfMemory> {
    if base == 0 {
        OutOfMemory::reserve(out, jsonl.len())?;
        out.extend_from_slice(jsonl);
        return Ok(memchr::memchr_iter(b'\n', jsonl).count() as u64);
    }
    let mut n = 0u64;
    let mut pos = 0usize;
    for lf in memchr::memchr_iter(b'\n', jsonl) {
        let line = jsonl.get(pos..=lf).unwrap_or_default();
        pos = lf + 1;
        if out.capacity() - out.len() < line.len() + 20 {
            OutOfMemory::reserve(out, line.len() + 20)?;
        }
        let digits = seq_digits(line);
        if digits > 0 {
            out.extend_from_slice(SEQ_PREFIX);
            crate::text::write_u64(out, base + n);
            out.extend_from_slice(line.get(SEQ_PREFIX.len() + digits..).unwrap_or_default());
        } else {
            out.extend_from_slice(line); // never written by this crate's writer
        }
        n += 1;
    }
    let rest = jsonl.get(pos..).unwrap_or_default();
    OutOfMemory::reserve(out, rest.len())?;
    out.extend_from_slice(rest);
    Ok(n)
}

/// The digits of the `seq` of a JSONL line this crate wrote (0 when the line does not start
/// with [`SEQ_PREFIX`] and a number).
fn seq_digits(line: &[u8]) -> usize {
    if !line.starts_with(SEQ_PREFIX) {
        return 0;
    }
    line.get(SEQ_PREFIX.len()..)
        .unwrap_or_default()
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// Lines a [`write_rebased`] hands to one vectored write (two slices each).
const WRITE_LINES: usize = 512;

/// All of `bufs` written with vectored writes (`Write::write_all_vectored` is unstable).
fn write_all_vectored(w: &mut dyn Write, mut bufs: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    io::IoSlice::advance_slices(&mut bufs, 0); // empty slices at the start dropped
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => io::IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `jsonl` (a range's events, `seq` from 0) written to `w` with `seq` numbered from `base`
/// (the bytes of [`rebase`]; `None`: as it is), its lines never copied: each line's new
/// `{"v":"events/v1","seq":N` and the rest of the line go out as two slices of a vectored
/// write of up to [`WRITE_LINES`] lines. Returns the number of lines (events).
pub fn write_rebased(jsonl: &[u8], base: Option<u64>, w: &mut dyn Write) -> io::Result<u64> {
    let Some(base) = base else {
        w.write_all(jsonl)?;
        return Ok(memchr::memchr_iter(b'\n', jsonl).count() as u64);
    };
    // per line: its new head in `heads` and the rest of the line in `jsonl`
    let mut heads: Vec<u8> = Vec::new();
    let mut spans: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut n = 0u64;
    let mut pos = 0usize;
    let mut write = |heads: &mut Vec<u8>, spans: &mut Vec<(usize, usize, usize, usize)>| {
        let mut bufs: Vec<io::IoSlice<'_>> = spans
            .iter()
            .flat_map(|&(a, b, c, d)| {
                [
                    io::IoSlice::new(heads.get(a..b).unwrap_or_default()),
                    io::IoSlice::new(jsonl.get(c..d).unwrap_or_default()),
                ]
            })
            .collect();
        let done = write_all_vectored(w, &mut bufs);
        heads.clear();
        spans.clear();
        done
    };
    for lf in memchr::memchr_iter(b'\n', jsonl) {
        let digits = seq_digits(jsonl.get(pos..=lf).unwrap_or_default());
        if digits > 0 {
            let a = heads.len();
            heads.extend_from_slice(SEQ_PREFIX);
            crate::text::write_u64(&mut heads, base + n);
            spans.push((a, heads.len(), pos + SEQ_PREFIX.len() + digits, lf + 1));
        } else {
            spans.push((0, 0, pos, lf + 1)); // never written by this crate's writer
        }
        pos = lf + 1;
        n += 1;
        if spans.len() == WRITE_LINES {
            write(&mut heads, &mut spans)?;
        }
    }
    spans.push((0, 0, pos, jsonl.len()));
    write(&mut heads, &mut spans)?;
    Ok(n)
}

/// The stream that normalizes range `k` of `plan` (range 0 is an ordinary stream).
pub fn range_stream(
    plan: &Plan,
    k: usize,
    dialect: Option<AnyDialect>,
    budget: Budget,
    source: Option<&str>,
    sel: Sel,
) -> Stream {
    match (k, &plan.resume, plan.ranges.get(k)) {
        (1.., Some(d), Some(&(start, _))) => {
            let context = plan.contexts.get(k).cloned().unwrap_or_default();
            Stream::resume(d.clone(), budget, source, sel, start, context)
        }
        _ => Stream::new(dialect, budget, source, sel),
    }
}

/// The JSONL of range `k` of `plan` (its `seq` from 0), read in [`READ_CHUNK`] pieces.
#[allow(clippy::too_many_arguments)]
pub fn normalize_range(
    src: &mut dyn Input,
    plan: &Plan,
    k: usize,
    dialect: Option<AnyDialect>,
    budget: Budget,
    source: Option<&str>,
    sel: Sel,
    sink: &mut dyn Write,
) -> io::Result<()> {
    let Some(&(start, end)) = plan.ranges.get(k) else {
        return Ok(());
    };
    let mut s = range_stream(plan, k, dialect, budget, source, sel);
    let mut chunk = zeroed(READ_CHUNK.min(usize::try_from(end - start).unwrap_or(READ_CHUNK)))?;
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        let want = usize::try_from(end - pos)
            .unwrap_or(READ_CHUNK)
            .min(READ_CHUNK);
        let n = src.read_at(pos, chunk.get_mut(..want).unwrap_or_default())?;
        if n == 0 {
            break;
        }
        out.clear();
        s.feed(chunk.get(..n).unwrap_or_default(), &mut out)
            .map_err(io_oom)?;
        sink.write_all(&out)?;
        pos += n as u64;
    }
    // range 0 of several ends where the engine is split_ok: finishing it would add nothing,
    // and it is not the end of the stream
    if k + 1 == plan.ranges.len() {
        out.clear();
        s.finish(&mut out).map_err(io_oom)?;
        sink.write_all(&out)?;
    }
    Ok(())
}

/// A whole input split into ranges of about `target` bytes, normalized range by range, one
/// after another, and joined: the same bytes as [`crate::jsonl::normalize_jsonl`] (the split's test
/// and fuzz target compare the two).
pub fn normalize_split(
    data: &[u8],
    dialect: Option<AnyDialect>,
    budget: Budget,
    target: u64,
) -> io::Result<Vec<u8>> {
    let mut src: &[u8] = data;
    let plan = plan(&mut src, dialect.clone(), budget, target)?;
    let mut out = Vec::new();
    let mut seq = 0u64;
    let mut part = Vec::new();
    for k in 0..plan.ranges.len() {
        part.clear();
        normalize_range(
            &mut src,
            &plan,
            k,
            dialect.clone(),
            budget,
            None,
            Sel::ALL,
            &mut part,
        )?;
        seq += rebase(&part, seq, &mut out).map_err(io_oom)?;
    }
    Ok(out)
}

/// One input of [`normalize_files`]: its path, where its JSONL goes (`None`: returned), and
/// the `source` field to tag its events with.
#[derive(Debug, Clone, Copy)]
pub struct FileJob<'a> {
    pub input: &'a Path,
    pub output: Option<&'a Path>,
    pub source: Option<&'a str>,
    /// The fields to write.
    pub sel: Sel,
}

/// What one file became: its JSONL as parts to be joined in order (`None` when it was written
/// to its output path). A split file's parts are its ranges' JSONL, each renumbered on a worker
/// thread, so joining them is the one copy left (into the Python bytes).
pub type FileOutcome = io::Result<Option<Vec<Vec<u8>>>>;

/// Many files as JSONL on `jobs` threads (default: the available parallelism), each file
/// split into ranges of about `split` bytes (default [`SPLIT_BYTES`] when there are more
/// threads than files, else no split). Ranges are processed in waves of twice the thread count, in input order,
/// and each wave's JSONL is renumbered and appended to its file's output before the next, so
/// memory holds at most a wave of range outputs when writing to files. A file of one range
/// goes straight to its sink ([`normalize_file`]). Results in input order.
#[cfg(feature = "parallel")]
pub fn normalize_files(
    files: &[FileJob<'_>],
    dialect: Option<AnyDialect>,
    budget: Budget,
    jobs: Option<usize>,
    split: Option<u64>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<Vec<FileOutcome>, rayon::ThreadPoolBuildError> {
    use rayon::prelude::*;
    use std::sync::atomic::Ordering;
    let default = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let threads = jobs.unwrap_or(default).max(1);
    // split by default only when the files alone cannot keep the threads busy (a split costs
    // extra copies of the output, about a quarter of one stream's time)
    let target = split.unwrap_or(if threads > files.len() {
        SPLIT_BYTES
    } else {
        u64::MAX
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    // every thread started before any work: a thread's start registers a thread-local
    // destructor with glibc, a fatal abort when it cannot allocate for it, and a thread at
    // work could take the memory left first (as in `ordered::run`)
    pool.broadcast(|_| ());
    // plans (cheap: the cut search and, for the first range, framing and sniffing)
    let planned: Vec<io::Result<Plan>> = pool.install(|| {
        files
            .par_iter()
            .map(|f| {
                let mut src = FileInput::open(f.input)?;
                if src.size() <= target.saturating_add(target / 2) {
                    return Ok(Plan::whole(src.size()));
                }
                let mut head = [0u8; 4];
                let n = src.read_at(0, &mut head)?;
                let head = head.get(..n).unwrap_or_default();
                if crate::input::compression(head) != crate::input::Compression::None {
                    return Ok(Plan::whole(src.size())); // read whole, decompressed
                }
                plan(&mut src, dialect.clone(), budget, target)
            })
            .collect()
    });
    let mut plans: Vec<Option<Plan>> = Vec::with_capacity(planned.len());
    let mut errors: Vec<Option<io::Error>> = Vec::with_capacity(planned.len());
    for p in planned {
        match p {
            Ok(p) => {
                plans.push(Some(p));
                errors.push(None);
            }
            Err(e) => {
                plans.push(None);
                errors.push(Some(e));
            }
        }
    }
    let mut tasks: Vec<(usize, usize)> = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        if let Some(p) = p {
            tasks.extend((0..p.ranges.len()).map(|k| (i, k)));
        }
    }
    /// A split file's output so far.
    enum Acc {
        Memory(Vec<Vec<u8>>),
        File(Output),
    }
    struct State {
        acc: Option<Acc>,
        seq: u64,
        error: Option<io::Error>,
    }
    let mut states: Vec<State> = errors
        .into_iter()
        .map(|error| State {
            acc: None,
            seq: 0,
            error,
        })
        .collect();
    let run = |&(i, k): &(usize, usize)| -> io::Result<Option<Vec<u8>>> {
        let (Some(f), Some(Some(p))) = (files.get(i), plans.get(i)) else {
            return Ok(None);
        };
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        if p.ranges.len() == 1 {
            return match f.output {
                Some(dest) => {
                    let mut sink = Output::create(dest)?;
                    normalize_file(
                        f.input,
                        dialect.clone(),
                        budget,
                        f.source,
                        f.sel,
                        &mut sink,
                        cancel,
                    )?;
                    sink.commit()?;
                    Ok(None)
                }
                None => {
                    // a first guess from the file's size (a compressed file grows on its own)
                    let size = p.ranges.first().map_or(0, |r| r.1).min(1 << 30);
                    let guess = crate::jsonl::out_capacity(usize::try_from(size).unwrap_or(0));
                    let mut sink = MemOut::with_capacity(guess)
                        .or_else(|_| MemOut::with_capacity(READ_CHUNK))?;
                    normalize_file(
                        f.input,
                        dialect.clone(),
                        budget,
                        f.source,
                        f.sel,
                        &mut sink,
                        cancel,
                    )?;
                    Ok(Some(sink.0))
                }
            };
        }
        let mut src = FileInput::open(f.input)?;
        let len = p.ranges.get(k).map_or(0, |r| r.1 - r.0);
        let mut sink = MemOut::with_capacity(crate::jsonl::out_capacity(
            usize::try_from(len).unwrap_or(0),
        ))?;
        normalize_range(
            &mut src,
            p,
            k,
            dialect.clone(),
            budget,
            f.source,
            f.sel,
            &mut sink,
        )?;
        Ok(Some(sink.0))
    };
    let wave = (2 * threads).max(1);
    for batch in tasks.chunks(wave) {
        if cancel.load(Ordering::Relaxed) {
            for st in &mut states {
                st.acc = None; // an unfinished output file removed
                st.error.get_or_insert_with(cancelled);
            }
            break;
        }
        let results: Vec<io::Result<Option<Vec<u8>>>> =
            pool.install(|| batch.par_iter().map(run).collect());
        // parts kept in memory: (file, seq base, JSONL numbered from 0), renumbered in parallel
        let mut pending: Vec<(usize, u64, Vec<u8>)> = Vec::new();
        for (&(i, k), r) in batch.iter().zip(results) {
            let (Some(st), Some(Some(p))) = (states.get_mut(i), plans.get(i)) else {
                continue;
            };
            let last = k + 1 == p.ranges.len();
            if st.error.is_some() {
                continue;
            }
            match r {
                Err(e) => {
                    st.error = Some(e);
                    st.acc = None; // an unfinished output file removed
                }
                Ok(None) => {}
                Ok(Some(part)) if p.ranges.len() == 1 => st.acc = Some(Acc::Memory(vec![part])),
                Ok(Some(part)) => {
                    if st.acc.is_none() {
                        st.acc = Some(match files.get(i).and_then(|f| f.output) {
                            Some(dest) => match Output::create(dest) {
                                Ok(out) => Acc::File(out),
                                Err(e) => {
                                    st.error = Some(e);
                                    continue;
                                }
                            },
                            None => Acc::Memory(Vec::with_capacity(p.ranges.len())),
                        });
                    }
                    match &mut st.acc {
                        Some(Acc::Memory(_)) => {
                            let n = memchr::memchr_iter(b'\n', &part).count() as u64;
                            pending.push((i, st.seq, part));
                            st.seq += n;
                        }
                        Some(Acc::File(w)) => {
                            let written =
                                try_vec(part.len() + part.len() / 64).and_then(|mut buf| {
                                    st.seq += rebase(&part, st.seq, &mut buf).map_err(io_oom)?;
                                    w.write_all(&buf)
                                });
                            if let Err(e) = written {
                                st.error = Some(e);
                                st.acc = None;
                            }
                        }
                        None => {}
                    }
                    if last && matches!(st.acc, Some(Acc::File(_))) {
                        if let Some(Acc::File(w)) = st.acc.take() {
                            if let Err(e) = w.commit() {
                                st.error = Some(e);
                            }
                        }
                    }
                }
            }
        }
        let renumbered: Vec<(usize, io::Result<Vec<u8>>)> = pool.install(|| {
            pending
                .into_par_iter()
                .map(|(i, base, part)| {
                    if base == 0 {
                        return (i, Ok(part));
                    }
                    let buf = try_vec(part.len() + part.len() / 64).and_then(|mut buf| {
                        rebase(&part, base, &mut buf).map_err(io_oom)?;
                        Ok(buf)
                    });
                    (i, buf)
                })
                .collect()
        });
        for (i, part) in renumbered {
            let part = match part {
                Ok(p) => p,
                Err(e) => {
                    if let Some(st) = states.get_mut(i) {
                        st.error = Some(e);
                        st.acc = None;
                    }
                    continue;
                }
            };
            if let Some(State {
                acc: Some(Acc::Memory(parts)),
                ..
            }) = states.get_mut(i)
            {
                parts.push(part);
            }
        }
    }
    Ok(states
        .into_iter()
        .map(|st| match (st.error, st.acc) {
            (Some(e), _) => Err(e),
            (None, Some(Acc::Memory(b))) => Ok(Some(b)),
            (None, _) => Ok(None),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(data: &[u8], dialect: Option<AnyDialect>, target: u64) {
        let whole =
            crate::jsonl::normalize_jsonl(data, dialect.clone(), Budget::default(), Sel::ALL)
                .unwrap_or_default();
        let split = normalize_split(data, dialect, Budget::default(), target).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&split),
            String::from_utf8_lossy(&whole),
            "target {target}"
        );
    }

    #[test]
    fn cuts_after_lf_and_skip_bom_and_nul_starts() {
        let mut src: &[u8] = b"aa\nbb\n\xef\xbb\xbfcc\ndd\n";
        // every target: each range but the last ends with LF, no range starts with a BOM
        for t in 1..20 {
            let r = ranges(&mut src, t).unwrap_or_default();
            assert_eq!(r.first().map(|x| x.0), Some(0));
            assert_eq!(r.last().map(|x| x.1), Some(src.len() as u64));
            for w in r.windows(2) {
                if let [(_, a), (b, _)] = w {
                    assert_eq!(a, b);
                    let a = usize::try_from(*a).unwrap_or(0);
                    assert_eq!(src.get(a - 1), Some(&b'\n'));
                    assert_ne!(src.get(a), Some(&0xef));
                }
            }
        }
        let mut nul: &[u8] = b"x\n{\0\n";
        assert_eq!(ranges(&mut nul, 1).unwrap_or_default(), vec![(0, 5)]);
    }

    #[test]
    fn split_equals_whole() {
        let lines = [
            &br#"{"type":"system","subtype":"init","session_id":"s","tools":[]}"#[..],
            br#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            b"",
            b"not json",
            br#"{"type":"result","subtype":"success","result":"ok","usage":{"input_tokens":1}}"#,
        ];
        let mut data = b"\xef\xbb\xbf".to_vec();
        for i in 0..40 {
            data.extend_from_slice(lines.get(i % lines.len()).copied().unwrap_or_default());
            data.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
        }
        data.extend_from_slice(b"{\"type\":\"result\"}"); // no final LF
        for t in [1, 7, 50, 100, 1000, 1 << 20] {
            same(&data, None, t);
            same(&data, Some(AnyDialect::Claude), t);
            same(&data, Some(AnyDialect::Codex), t);
        }
        // undecided `auto` (only non-decisive lines): the fallback notice, held lines
        let plain = b"1\n2\n{}\n[]\n\"x\"\n".repeat(30);
        for t in [1, 5, 64, 300] {
            same(&plain, None, t);
        }
        // UTF-16: one range
        let wide: Vec<u8> = "{\"a\":1}\n"
            .repeat(20)
            .bytes()
            .flat_map(|b| [b, 0])
            .collect();
        same(&wide, None, 4);
        let mut src: &[u8] = &wide;
        let p = plan(&mut src, None, Budget::default(), 4).ok();
        assert_eq!(p.map(|p| p.ranges.len()), Some(1));
    }

    /// A rollout whose `turn_context`s come before many cuts (one escaped, one over a small
    /// `max_line_bytes`, one naming no model, one the first line after a BOM, CRLF lines).
    fn rollout() -> Vec<u8> {
        let tc = |m: &str| format!(r#"{{"type":"turn_context","payload":{{"model":"{m}"}}}}"#);
        let count = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1}}}}"#;
        let text = r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":"turn_context \u00e9"}}"#;
        let mut data = b"\xef\xbb\xbf".to_vec();
        let mut line = |l: &str, crlf: bool| {
            data.extend_from_slice(l.as_bytes());
            data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        };
        line(&tc("gpt-first"), true);
        for i in 0..6 {
            line(count, i % 2 == 0);
            line(text, false);
        }
        line(&tc("gpt-a"), false);
        for _ in 0..8 {
            line(count, false);
        }
        line(
            r#"{"type":"turn\u005fcontext","payload":{"model":"gpt-escaped"}}"#,
            true,
        );
        line(count, false);
        line(text, false);
        line(text, false);
        line(&tc(&format!("gpt-long{}", "x".repeat(300))), false);
        line(count, false);
        line(
            r#"{"type":"turn_context","payload":{"cwd":"/no/model"}}"#,
            false,
        );
        line(count, false);
        line(&tc("gpt-b"), false);
        for _ in 0..5 {
            line(count, true);
        }
        data
    }

    #[test]
    fn split_keeps_the_dialect_context() {
        let data = rollout();
        let small = Budget {
            max_line_bytes: 200,
            ..Budget::default()
        };
        for t in (1..1200).step_by(37) {
            same(&data, None, t);
            same(&data, Some(AnyDialect::Codex), t);
            let whole = crate::jsonl::normalize_jsonl(&data, None, small, Sel::ALL);
            let split = normalize_split(&data, None, small, t);
            assert_eq!(split.ok(), whole.ok(), "target {t}, small budget");
        }
        // not vacuous: the readings name their models, and the ranges start with them
        let whole = crate::jsonl::normalize_jsonl(&data, None, Budget::default(), Sel::ALL)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&whole);
        for m in ["gpt-first", "gpt-a", "gpt-escaped", "gpt-longxxx", "gpt-b"] {
            assert!(text.contains(&format!(r#""model":"{m}"#)), "{m}");
        }
        let mut src: &[u8] = &data;
        let p = plan(&mut src, None, Budget::default(), 50).ok();
        let models: Vec<Option<String>> = p
            .map(|p| p.contexts.into_iter().map(|c| c.model).collect())
            .unwrap_or_default();
        assert!(models.len() > 10);
        assert_eq!(models.first(), Some(&None));
        assert_eq!(
            models.get(1).cloned().flatten().as_deref(),
            Some("gpt-first")
        );
        assert_eq!(models.last().cloned().flatten().as_deref(), Some("gpt-b"));
        assert!(models.iter().any(|m| m.as_deref() == Some("gpt-escaped")));
        // with lines over max_line_bytes, the long one names nothing
        let mut src: &[u8] = &data;
        let p = plan(&mut src, None, small, 50).ok();
        assert!(p.is_some_and(|p| p.contexts.iter().all(|c| !c
            .model
            .as_deref()
            .unwrap_or("")
            .starts_with("gpt-long"))));
    }

    #[test]
    fn places_are_the_mark_and_escapes_of_its_bytes() {
        let marks: &[&[u8]] = &[b"turn_context", b"thread_settings_applied"];
        let finders: Vec<_> = marks.iter().map(memchr::memmem::FinderRev::new).collect();
        let escape = memchr::memmem::FinderRev::new(b"\\u00");
        let at = |b: &[u8]| last_mark(b, &finders, &escape, marks);
        assert_eq!(at(br#"{"a":"\u001b[0m \u00e9 \u00zz"}"#), None);
        assert_eq!(at(br#"{"type":"turn_context","x":"\u001b"}"#), Some(9));
        assert_eq!(at(br#"{"type":"\u0074urn_context"}"#), Some(9));
        assert_eq!(at(br#"{"type":"turn\u005Fcontext"}"#), Some(13));
        assert_eq!(at(br#"{"type":"x","t":"\u0074"}"#), Some(17));
        // the last of either mark
        let both = br#"{"type":"turn_context"}{"type":"thread_settings_applied"}{"a":"\u0000"}"#;
        assert_eq!(at(both), Some(32));
        assert_eq!(at(&both[..30]), Some(9));
        // an escape of a byte only the second mark has ('h', 0x68)
        assert_eq!(at(br#"{"t":"\u0068"}"#), Some(6));
        // the escape's digits past the block: maybe
        assert_eq!(at(br#"{"a":"\u00"#), Some(6));
    }

    #[test]
    fn a_mark_across_a_block_start_is_found() {
        let tc = br#"{"type":"turn_context","payload":{"model":"gpt-x"}}"#;
        let m = tc
            .windows(12)
            .position(|w| w == b"turn_context")
            .unwrap_or(0);
        // the first block searched starts inside the mark (or right at it, or before it)
        for shift in 0..14 {
            let hi = PROBE + m + shift;
            let mut data = tc.to_vec();
            data.push(b'\n');
            data.resize(hi - 1, b'x');
            data.push(b'\n');
            let mut src: &[u8] = &data;
            let got = last_context(
                &mut src,
                0,
                hi as u64,
                &AnyDialect::Codex,
                AnyDialect::Codex.context_marks(),
                Budget::default(),
            )
            .ok()
            .filter(|(_, parts)| *parts == Context::MODEL);
            assert_eq!(
                got.and_then(|(c, _)| c.model).as_deref(),
                Some("gpt-x"),
                "{shift}"
            );
        }
    }

    #[test]
    fn rebase_renumbers() {
        let part =
            b"{\"v\":\"events/v1\",\"seq\":0,\"x\":1}\n{\"v\":\"events/v1\",\"seq\":1,\"x\":2}\n";
        let mut out = Vec::new();
        assert_eq!(rebase(part, 9, &mut out), Ok(2));
        assert_eq!(
            out,
            b"{\"v\":\"events/v1\",\"seq\":9,\"x\":1}\n{\"v\":\"events/v1\",\"seq\":10,\"x\":2}\n"
        );
    }
    #[test]
    fn write_rebased_writes_rebase() {
        let mut part = Vec::new();
        for i in 0..120u64 {
            part.extend_from_slice(b"{\"v\":\"events/v1\",\"seq\":");
            crate::text::write_u64(&mut part, i);
            part.extend_from_slice(b",\"x\":1}\n");
        }
        let whole = part.clone(); // every line ends with LF: nothing after the last
        part.extend_from_slice(b"not ours\n{\"v\":\"events/v1\",\"seq\":7"); // no LF
        let mut written = Vec::new();
        assert_eq!(write_rebased(&whole, Some(3), &mut written).ok(), Some(120));
        assert_eq!(write_rebased(b"", Some(3), &mut written).ok(), Some(0));
        assert!(written.starts_with(b"{\"v\":\"events/v1\",\"seq\":3,"));
        for base in [0, 1, 9, 95, 999_999_999_990, u64::MAX - 200] {
            let mut want = Vec::new();
            let n = rebase(&part, base, &mut want).ok();
            let mut written = Vec::new();
            assert_eq!(write_rebased(&part, Some(base), &mut written).ok(), n);
            assert_eq!(written, want, "{base}");
        }
    }
}
