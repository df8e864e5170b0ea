//! Events as JSONL, written from the core's own data: no Python objects.
//!
//! One line per event, exactly what `json.dumps(event, ensure_ascii=False, separators=(",", ":"))`
//! gives for the dict `py/convert.rs` builds (same keys, same order, same number text), then LF.
//! The field-by-field mirror of `convert.rs` is [`write_event`]; a field added there is one line
//! here, next to the same field. The number text is Python's: `repr(float)` (shortest round-trip,
//! `1e+16`, `1e-07`, `-0.0`, `Infinity`), ints in decimal; strings escape only what `json.dumps`
//! escapes with `ensure_ascii=False` (`"`, `\`, and U+0000..U+001F, with `\n \r \t \b \f`
//! short forms and lowercase `\u00XX` for the rest). Objects of `parsed` follow Python dict
//! semantics for duplicate keys (first position, last value), as the dict built by `convert.rs`.
//!
//! [`JsonlSink`] is this output's [`Sink`]; [`Stream`] drives it with the core's assembly
//! ([`crate::sink`]), one line at a time;
//! [`crate::split::normalize_file`] runs it over a file read in chunks (bounded memory).

use std::io::Read;

use crate::budget::{Budget, OutOfMemory};
use crate::dialect::{AnyDialect, Context};
use crate::event::{Event, Num};
use crate::fields::{self, Field, Sel, Ty, Val, Writer};
use crate::normalize::{Engine, LineEvents};
use crate::parse::{StrSpan, SPAN_MIN};
use crate::sink::{self, Sink};
use crate::text::{self, write_f64, write_i128, write_str, write_str_twice, write_u64};
use crate::value::Value;

/// Bytes read per step by [`crate::split::normalize_file`].
pub const READ_CHUNK: usize = 1 << 20;

fn write_num(out: &mut Vec<u8>, n: Num) {
    match n {
        Num::Int(i) => write_i128(out, i),
        Num::Float(f) => write_f64(out, f),
    }
}

/// A parsed value as `json.dumps` writes the Python object `convert.rs` builds from it
/// (`convert::plain_value`): `BigInt` is a Python int (its text is already canonical).
pub fn write_value(out: &mut Vec<u8>, v: &Value<'_>) {
    write_shared::<false>(out, v, &mut Shared::default());
}

/// The JSON string of the JSON text of `v` (`json.dumps(json.dumps(v))`): what projected JSONL
/// writes for a tree (docs/events.md "Projections"), in one pass (strings escaped twice at once,
/// [`write_str_twice`]), not the text written and then escaped.
pub fn write_value_quoted(out: &mut Vec<u8>, v: &Value<'_>) {
    out.push(b'"');
    write_shared::<true>(out, v, &mut Shared::default());
    out.push(b'"');
}

/// Parts of a line's `parsed` JSON that its events repeat (`text` borrowed from a string of
/// the line, `tool.arguments`), so they are escaped once and copied after (the JSONL twin of
/// `convert.rs`'s `Shared`). Keys: (address, length) of strings, (address, 0) of values. For a
/// canonical line the parser found them ([`parse::Line::strings`]); otherwise writing `parsed`
/// notes them.
#[derive(Debug, Default)]
struct Shared {
    wanted: Vec<(usize, usize)>,
    /// where each part stands in the `parsed` JSON
    found: Vec<StrSpan>,
}

/// At most this many parts are looked up per line (a line can have 100k events; the rest are
/// escaped again, which gives the same bytes).
const SHARE_MAX: usize = 8;

impl Shared {
    fn for_events(events: &[Event<'_>]) -> Self {
        let mut wanted = Vec::new();
        for ev in events {
            if wanted.len() >= SHARE_MAX {
                break;
            }
            if let Some(std::borrow::Cow::Borrowed(t)) = &ev.text {
                if t.len() >= SPAN_MIN {
                    wanted.push((t.as_ptr() as usize, t.len()));
                }
            }
            if let Some(args) = ev.tool.as_ref().and_then(|t| t.arguments) {
                wanted.push((std::ptr::from_ref(args) as usize, 0));
            }
        }
        Shared {
            wanted,
            found: Vec::new(),
        }
    }

    /// The parts of a canonical line: its long strings, where the parser found them.
    fn in_line(strings: &[StrSpan]) -> Self {
        Shared {
            wanted: Vec::new(),
            found: strings.to_vec(),
        }
    }

    #[inline]
    fn note(&mut self, (ptr, len): (usize, usize), start: usize, end: usize) {
        if self.wanted.contains(&(ptr, len))
            && !self.found.iter().any(|x| (x.ptr, x.len) == (ptr, len))
        {
            self.found.push(StrSpan {
                ptr,
                len,
                start,
                end,
            });
        }
    }

    fn get<'b>(&self, key: (usize, usize), buf: &'b [u8]) -> Option<&'b [u8]> {
        let x = self.found.iter().find(|x| (x.ptr, x.len) == key)?;
        buf.get(x.start..x.end)
    }
}

/// `v`'s JSON text (inside a JSON string, escaped, when `QUOTED`), noting the parts `shared`
/// wants.
fn write_shared<const QUOTED: bool>(out: &mut Vec<u8>, v: &Value<'_>, shared: &mut Shared) {
    let start = out.len();
    write_plain::<QUOTED>(out, v, shared);
    if !shared.wanted.is_empty() {
        let end = out.len();
        shared.note((std::ptr::from_ref(v) as usize, 0), start, end);
        if let Value::Str(s) = v {
            shared.note((s.as_ptr() as usize, s.len()), start, end);
        }
    }
}

/// A string of a tree: as JSON, or (`QUOTED`) as the inside of a JSON string of that JSON.
#[inline]
fn tree_str<const QUOTED: bool>(out: &mut Vec<u8>, s: &str) {
    if QUOTED {
        write_str_twice(out, s);
    } else {
        write_str(out, s);
    }
}

fn write_plain<const QUOTED: bool>(out: &mut Vec<u8>, v: &Value<'_>, shared: &mut Shared) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => write_i128(out, i128::from(*i)),
        Value::BigInt(text) => out.extend_from_slice(text.as_bytes()),
        Value::Float(f) => write_f64(out, *f),
        Value::Str(s) => tree_str::<QUOTED>(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_shared::<QUOTED>(out, item, shared);
            }
            out.push(b']');
        }
        Value::Object(pairs) => {
            out.push(b'{');
            if crate::value::has_duplicate_keys(pairs) {
                for (i, (k, item)) in v.dict_items().into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    tree_str::<QUOTED>(out, k);
                    out.push(b':');
                    write_shared::<QUOTED>(out, item, shared);
                }
            } else {
                for (i, (k, item)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    tree_str::<QUOTED>(out, k);
                    out.push(b':');
                    write_shared::<QUOTED>(out, item, shared);
                }
            }
            out.push(b'}');
        }
    }
}

/// The JSONL [`Writer`]: `"key":value` pairs of one event into `out`; nested objects open
/// and close as the walk reaches them. Keys are static ASCII identifiers (no escaping needed).
struct JsonWriter<'o, 'p> {
    out: &'o mut Vec<u8>,
    first: bool,
    /// the line's `parsed` JSON and the parts of it the events repeat
    shared: &'p Shared,
    parsed: &'p [u8],
    /// the line's `raw` as a JSON string
    raw: &'p [u8],
    /// where the event's `text` JSON lies in `out`, for a `toolResult` that repeats it
    text_json: Option<std::ops::Range<usize>>,
    /// a projection: trees (`Ty::Json`, `parsed`) as the JSON text of their value, so each key
    /// keeps one JSON type across a file
    projected: bool,
    /// the line, whose values' JSON text a canonical line holds ([`LineEvents::value_json`])
    rec: Option<&'p LineEvents<'p>>,
}

impl JsonWriter<'_, '_> {
    #[inline]
    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// JSON already written as text: as it is, or (a projected tree) as a JSON string of it.
    fn tree(&mut self, json: &[u8]) {
        if self.projected {
            write_str(
                self.out,
                simdutf8::basic::from_utf8(json).unwrap_or_default(),
            );
        } else {
            self.out.extend_from_slice(json);
        }
    }

    fn value(&mut self, v: &Value<'_>) {
        if self.projected {
            write_value_quoted(self.out, v);
        } else {
            write_value(self.out, v);
        }
    }

    /// A value of the line ([`Val::Args`]): its JSON text copied (from the `parsed` JSON
    /// written for the line, or from a canonical line itself), else written.
    fn line_value(&mut self, v: &Value<'_>) {
        if self.projected && matches!(v, Value::Str(_)) {
            // a string escaped twice in one pass, not its JSON copied and escaped again
            return self.value(v);
        }
        let parsed = self.parsed;
        let rec = self.rec;
        match self.shared.get((std::ptr::from_ref(v) as usize, 0), parsed) {
            Some(json) => self.tree(json),
            None => match rec.and_then(|r| r.value_json(v)) {
                Some(json) => self.tree(json.as_bytes()),
                None => self.value(v),
            },
        }
    }

    fn object(&mut self, o: fields::Obj<'_>) {
        self.out.push(b'{');
        let first = std::mem::replace(&mut self.first, true);
        let _ = o.walk(self);
        self.first = first;
        self.out.push(b'}');
    }
}

impl Writer for JsonWriter<'_, '_> {
    type Error = std::convert::Infallible;

    #[inline]
    fn put(&mut self, f: &'static Field, v: Val<'_>) -> Result<(), Self::Error> {
        self.key(f.name);
        match v {
            Val::Str(s) => write_str(self.out, s),
            Val::Text(text) => {
                let start = self.out.len();
                match self
                    .shared
                    .get((text.as_ptr() as usize, text.len()), self.parsed)
                {
                    Some(json) => self.out.extend_from_slice(json),
                    None => write_str(self.out, text),
                }
                self.text_json = Some(start..self.out.len());
            }
            Val::UInt(n) => write_u64(self.out, n),
            Val::Bool(b) => self
                .out
                .extend_from_slice(if b { b"true" } else { b"false" }),
            Val::Num(n) => write_num(self.out, n),
            Val::Null => self.out.extend_from_slice(b"null"),
            Val::Json(v) if matches!(f.ty, Ty::Json) => self.value(v),
            Val::Json(v) => write_value(self.out, v),
            Val::Args(v) => self.line_value(v),
            // the JSON of `text` again; projected, the JSON string of that JSON, escaped twice
            // from the text in one pass (not the JSON copied and escaped again)
            Val::SameAsText(text) => match self.text_json.clone() {
                _ if self.projected => {
                    self.out.push(b'"');
                    write_str_twice(self.out, text);
                    self.out.push(b'"');
                }
                Some(r) => self.out.extend_from_within(r),
                None => write_str(self.out, text),
            },
            Val::Obj(o) => self.object(o),
            Val::List(list) => {
                self.out.push(b'[');
                for (i, o) in list.objs().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.object(o);
                }
                self.out.push(b']');
            }
            Val::Raw(_) => self.out.extend_from_slice(self.raw),
            Val::Parsed => {
                let parsed = self.parsed;
                self.tree(parsed);
            }
        }
        Ok(())
    }
}

/// A nested object as JSON (the Arrow writer's list cells: `fileChanges`, `rateLimits`).
pub fn write_object(out: &mut Vec<u8>, o: fields::Obj<'_>) {
    let shared = Shared::default();
    let mut w = JsonWriter {
        out,
        first: true,
        shared: &shared,
        parsed: b"",
        raw: b"",
        text_json: None,
        projected: false,
        rec: None,
    };
    w.object(o);
}

/// Writes lines; keeps the per-line scratch buffers, the projection and the optional `source`
/// pair.
#[derive(Debug)]
pub struct LineWriter {
    raw: Vec<u8>,
    parsed: Vec<u8>,
    sel: Sel,
    /// `"source":<path>` appended to every event (the CLI's field for several inputs).
    source: Option<Vec<u8>>,
}

impl Default for LineWriter {
    fn default() -> Self {
        LineWriter::new(None, Sel::ALL)
    }
}

impl LineWriter {
    pub fn new(source: Option<&str>, sel: Sel) -> Self {
        LineWriter {
            raw: Vec::new(),
            parsed: Vec::new(),
            sel,
            source: source.map(|s| {
                let mut b = Vec::new();
                write_str(&mut b, s);
                b
            }),
        }
    }

    /// The JSONL of one line's events, numbered from `*seq` (`convert::line`).
    ///
    /// Every buffer is grown with `try_reserve` before it is written, by a bound on what is
    /// written ([`event_room`], [`Out::room`]): an output that does not fit is
    /// [`OutOfMemory`] (Python's `MemoryError`), never Rust's allocation-failure abort. On error
    /// `out` holds the events written before (whole lines).
    pub fn line<O: Out + ?Sized>(
        &mut self,
        out: &mut O,
        rec: &LineEvents<'_>,
        seq: &mut u64,
    ) -> Result<(), OutOfMemory> {
        let n = rec.raw.len();
        // raw and parsed are the same for every event of the line: written once, if asked for
        self.raw.clear();
        if self.sel.has_name("raw") {
            OutOfMemory::reserve(&mut self.raw, escaped_room(n))?;
            write_str(&mut self.raw, rec.raw);
        }
        // a canonical line is its own `parsed` JSON, its long strings where the parser found them
        self.parsed.clear();
        let mut shared = Shared::default();
        let wants_parsed = self.sel.is_all() || self.sel.has_name("parsed");
        let parsed: &[u8] = match (rec.parsed_text, rec.parsed) {
            (Some(text), _) => {
                shared = Shared::in_line(rec.strings);
                text.as_bytes()
            }
            (None, Some(v)) if wants_parsed => {
                shared = Shared::for_events(&rec.events);
                OutOfMemory::reserve(&mut self.parsed, escaped_room(n))?;
                write_shared::<false>(&mut self.parsed, v, &mut shared);
                &self.parsed
            }
            (None, Some(_)) => b"",
            (None, None) => b"null",
        };
        // the JSON of the line's value: written or the line itself, else (`parsed` left out of
        // a projection) about the line's size
        let tree = if parsed.is_empty() {
            n.saturating_mul(2).saturating_add(64)
        } else {
            parsed.len()
        };
        let source = self.source.as_ref().map_or(0, Vec::len);
        for ev in &rec.events {
            let text = ev.text.as_ref().map_or(0, |t| t.len());
            let room = event_room(self.raw.len(), tree, text, source);
            let out = out.room(room)?;
            out.push(b'{');
            let mut w = JsonWriter {
                out,
                first: true,
                shared: &shared,
                parsed,
                raw: &self.raw,
                text_json: None,
                projected: !self.sel.is_all(),
                rec: Some(rec),
            };
            let _ = fields::event(&mut w, self.sel, ev, rec, *seq);
            if let Some(src) = &self.source {
                out.extend_from_slice(b",\"source\":"); // cli.py: ev["source"] = source
                out.extend_from_slice(src);
            }
            out.push(b'}');
            out.push(b'\n');
            *seq += 1;
        }
        Ok(())
    }
}

/// Room for `n` bytes written as a JSON string, escaped once or twice: at most 7 bytes a byte
/// (`\\u00XX`), plus the escaper's working room (zeroed ahead of its writes, at most
/// [`text::ESCAPE_AHEAD`] past 7 bytes a byte) and the quotes.
fn escaped_room(n: usize) -> usize {
    n.saturating_mul(8)
        .saturating_add(text::ESCAPE_AHEAD)
        .saturating_add(64)
}

/// Room for the JSONL of one event of a line ([`LineWriter::line`] reserves it in `out`
/// before writing): the fields' names and small values; `raw` (already written as JSON,
/// `raw` bytes); the trees of the line's value (`parsed`, `tool.arguments`, `toolResult`: each
/// at most the line's JSON `tree`, which a projection writes as a JSON string, up to twice as
/// long); the `text` and the `toolResult` that repeats it, escaped once or twice; the
/// `source` pair.
fn event_room(raw: usize, tree: usize, text: usize, source: usize) -> usize {
    4096usize
        .saturating_add(raw)
        .saturating_add(tree.saturating_mul(3))
        .saturating_add(escaped_room(text).saturating_mul(2))
        .saturating_add(source)
}

/// Where JSONL is written ([`LineWriter::line`]).
pub trait Out {
    /// The buffer the next `n` bytes are appended to, with room for them (`try_reserve`).
    fn room(&mut self, n: usize) -> Result<&mut Vec<u8>, OutOfMemory>;
}

/// One buffer, grown in place.
impl Out for Vec<u8> {
    #[inline]
    fn room(&mut self, n: usize) -> Result<&mut Vec<u8>, OutOfMemory> {
        if self.capacity() - self.len() < n {
            OutOfMemory::reserve(self, n)?;
        }
        Ok(self)
    }
}

/// JSONL in parts, their concatenation the output: room that the part being written lacks
/// starts a new part, so no byte written is moved (one buffer grown to its room moves all of
/// it at every growth, and the room of an event of a long line, [`event_room`], is many
/// times the line).
#[derive(Debug, Default)]
pub struct Parts {
    pub parts: Vec<Vec<u8>>,
    /// the least capacity of a new part
    pub part: usize,
}

impl Out for Parts {
    fn room(&mut self, n: usize) -> Result<&mut Vec<u8>, OutOfMemory> {
        let fits = self
            .parts
            .last()
            .is_some_and(|p| p.capacity() - p.len() >= n);
        if !fits {
            let mut p = Vec::new();
            OutOfMemory::reserve(&mut p, n.max(self.part))?;
            OutOfMemory::reserve(&mut self.parts, 1)?;
            self.parts.push(p);
        }
        self.parts.last_mut().ok_or(OutOfMemory { requested: n })
    }
}

/// The JSONL [`Sink`]: each line's events appended to `out` by `writer`.
pub struct JsonlSink<'w, O: Out + ?Sized = Vec<u8>> {
    pub writer: &'w mut LineWriter,
    pub out: &'w mut O,
}

impl<O: Out + ?Sized> Sink for JsonlSink<'_, O> {
    type Error = OutOfMemory;

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), OutOfMemory> {
        self.writer.line(self.out, rec, seq)
    }
}

/// One stream's engine, numbering and writer.
#[derive(Debug)]
pub struct Stream {
    pub engine: Engine,
    pub seq: u64,
    writer: LineWriter,
}

impl Stream {
    pub fn new(
        dialect: Option<AnyDialect>,
        budget: Budget,
        source: Option<&str>,
        sel: Sel,
    ) -> Self {
        Stream {
            engine: Engine::new(dialect, budget),
            seq: 0,
            writer: LineWriter::new(source, sel),
        }
    }

    /// The stream for the part of a stream from byte `offset` on ([`Engine::resume`], with the
    /// dialect context there): `seq` numbered from 0 again (`split::rebase` renumbers).
    pub fn resume(
        dialect: AnyDialect,
        budget: Budget,
        source: Option<&str>,
        sel: Sel,
        offset: u64,
        context: Context,
    ) -> Self {
        Stream {
            engine: Engine::resume(dialect, budget, offset, context),
            seq: 0,
            writer: LineWriter::new(source, sel),
        }
    }

    /// Frame `chunk` and append the JSONL of the lines it completed.
    pub fn feed<O: Out + ?Sized>(&mut self, chunk: &[u8], out: &mut O) -> Result<(), OutOfMemory> {
        let mut sink = JsonlSink {
            writer: &mut self.writer,
            out,
        };
        sink::feed(&mut self.engine, &mut self.seq, chunk, &mut sink)
    }

    /// End of stream: the last line's events and a UTF-16/UTF-32 stream's event. Idempotent.
    pub fn finish<O: Out + ?Sized>(&mut self, out: &mut O) -> Result<(), OutOfMemory> {
        let mut sink = JsonlSink {
            writer: &mut self.writer,
            out,
        };
        sink::finish(&mut self.engine, &mut self.seq, &mut sink)
    }
}

/// A first guess of the JSONL size for `n` input bytes: every event repeats its line as
/// `raw` (escaped) and `parsed`, about 3.5 times the input on real streams. Growing the buffer
/// instead costs copies and page faults; unused capacity is never touched.
pub fn out_capacity(n: usize) -> usize {
    n.saturating_mul(7) / 2 + 4096
}

/// A whole stream as JSONL, in [`Parts`] (the first of [`out_capacity`], the next ones of a
/// quarter of it at least).
pub fn normalize_jsonl_parts(
    data: &[u8],
    dialect: Option<AnyDialect>,
    budget: Budget,
    sel: Sel,
) -> Result<Vec<Vec<u8>>, OutOfMemory> {
    let mut s = Stream::new(dialect, budget, None, sel);
    let mut out = Parts {
        parts: Vec::new(),
        part: out_capacity(data.len()),
    };
    out.room(0)?;
    out.part /= 4;
    s.feed(data, &mut out)?;
    s.finish(&mut out)?;
    Ok(out.parts)
}

/// A whole stream as JSONL.
pub fn normalize_jsonl(
    data: &[u8],
    dialect: Option<AnyDialect>,
    budget: Budget,
    sel: Sel,
) -> Result<Vec<u8>, OutOfMemory> {
    let parts = normalize_jsonl_parts(data, dialect, budget, sel)?;
    if let [_] = parts.as_slice() {
        return Ok(parts.into_iter().next().unwrap_or_default());
    }
    let mut out = Vec::new();
    OutOfMemory::reserve(&mut out, parts.iter().map(Vec::len).sum())?;
    for p in &parts {
        out.extend_from_slice(p);
    }
    Ok(out)
}

/// Every byte of `r`, handed to `f` [`READ_CHUNK`] bytes (or what one read gave) at a time.
pub fn read_chunks(
    r: &mut dyn Read,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut chunk = crate::split::zeroed(READ_CHUNK)?;
    loop {
        match r.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => f(chunk.get(..n).unwrap_or_default())?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Input files, decompressed as read (moved to [`crate::input`]).
pub use crate::input::open_input;

/// Run `f(i)` for `i` in `0..n` on a pool of `jobs` threads (default: the available
/// parallelism, at most `n`); results in index order. Feature `parallel` (on with `python`).
#[cfg(feature = "parallel")]
pub fn par_map<T: Send>(
    n: usize,
    jobs: Option<usize>,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Result<Vec<T>, rayon::ThreadPoolBuildError> {
    use rayon::prelude::*;
    let default = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let threads = jobs.unwrap_or(default).clamp(1, n.max(1));
    if threads == 1 {
        return Ok((0..n).map(f).collect());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    Ok(pool.install(|| (0..n).into_par_iter().map(f).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// Every node of `v`, depth first.
    fn nodes<'a>(v: &'a Value<'a>, out: &mut Vec<&'a Value<'a>>) {
        out.push(v);
        match v {
            Value::Array(items) => items.iter().for_each(|x| nodes(x, out)),
            Value::Object(pairs) => pairs.iter().for_each(|(_, x)| nodes(x, out)),
            _ => {}
        }
    }

    /// The JSON text `value_json` copies from a canonical line is what `write_value` writes,
    /// for every node of the line; the count of nodes it found.
    fn copies_agree(text: &str) -> usize {
        let Ok(line) = crate::parse::parse_line(text, 512, usize::MAX) else {
            panic!("not JSON: {text}");
        };
        assert!(line.canonical.is_some(), "not canonical: {text}");
        let rec = LineEvents {
            position: 0,
            size: text.len() as u64,
            dialect: "claude",
            raw: text,
            parsed: Some(&line.value),
            parsed_text: line.canonical,
            strings: &line.strings,
            meta: crate::event::LineMeta::default(),
            repairs: 0,
            events: Vec::new(),
        };
        let mut all = Vec::new();
        nodes(&line.value, &mut all);
        let mut found = 0;
        for v in all {
            let mut want = Vec::new();
            write_value(&mut want, v);
            if let Some(json) = rec.value_json(v) {
                assert_eq!(json.as_bytes(), want.as_slice(), "{text}");
                found += 1;
            }
            let mut quoted = Vec::new();
            write_value_quoted(&mut quoted, v);
            let mut twice = Vec::new();
            write_str(
                &mut twice,
                simdutf8::basic::from_utf8(&want).unwrap_or_default(),
            );
            assert_eq!(quoted, twice, "{text}");
        }
        found
    }

    #[test]
    fn values_copied_from_canonical_lines() {
        let long = "x".repeat(70);
        let long_esc = format!("{long}\\n\\\"q\\u0001");
        let lines = [
            r#"{"a":{"b":[1,2,{"c":"d"}],"e":null},"f":[[]],"g":{},"h":[1.5,-2,true]}"#.to_string(),
            format!(r#"{{"k\n":{{"x\t":"{long_esc}"}},"l":["{long_esc}"],"m":["{long}",3]}}"#),
            format!(
                r#"{{"input":{{"command":"ls","content":"{long_esc}","n":12345678901234567890123}},"z":"é😀"}}"#
            ),
            r#"[{"a":"\"q\""},["x"],{"b":{"c":{}}},"s",""]"#.to_string(),
            r#"{"a":[{"b":"\\"},{"c":[0]}],"d":{"e":"f\u001fg"}}"#.to_string(),
        ];
        let found: usize = lines.iter().map(|l| copies_agree(l)).sum();
        assert!(found > 20, "{found}");
        // random trees written as canonical text
        let mut next = crate::text::tests::xorshift(0x2545_f491_4f6c_dd1d);
        fn tree(depth: usize, next: &mut dyn FnMut(u64) -> u64) -> Value<'static> {
            let strs = ["a", "b\"c", "\n", "é", "", "k\\", "\u{1}x"];
            let s = |next: &mut dyn FnMut(u64) -> u64| -> Cow<'static, str> {
                let base = strs.get(next(7) as usize).copied().unwrap_or("a");
                Cow::Owned(base.repeat(1 + next(3) as usize * (next(40) as usize)))
            };
            match if depth == 0 { next(4) } else { next(7) } {
                0 => Value::Int(next(1000) as i64 - 500),
                1 => Value::Str(s(next)),
                2 => Value::Bool(next(2) == 0),
                3 => Value::Float(0.25 * next(9) as f64 + 0.5),
                4 => Value::Array((0..next(4)).map(|_| tree(depth - 1, next)).collect()),
                _ => Value::Object(
                    (0..next(4))
                        .map(|i| (Cow::Owned(format!("{}{i}", s(next))), tree(depth - 1, next)))
                        .collect(),
                ),
            }
        }
        let mut found = 0;
        for _ in 0..300 {
            let v = Value::Object(vec![(Cow::Borrowed("root"), tree(4, &mut next))].into());
            let mut text = Vec::new();
            write_value(&mut text, &v);
            found += copies_agree(simdutf8::basic::from_utf8(&text).unwrap_or_default());
        }
        assert!(found > 300, "{found}");
    }

    /// An [`Out`] that starts a new part at every event.
    #[derive(Default)]
    struct EveryEvent(Vec<Vec<u8>>);

    impl Out for EveryEvent {
        fn room(&mut self, n: usize) -> Result<&mut Vec<u8>, OutOfMemory> {
            self.0.push(Vec::with_capacity(n));
            self.0.last_mut().ok_or(OutOfMemory { requested: n })
        }
    }

    /// JSONL written in parts (here a part an event; [`Parts`] starts one when an event's room
    /// does not fit) is the JSONL of one buffer, full and lean, for every sample stream.
    #[test]
    fn parts_are_the_one_buffer() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/samples");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(data) = std::fs::read(entry.path()) else {
                continue;
            };
            for sel in [Sel::ALL, Sel::lean()] {
                let mut one = Vec::new();
                let mut s = Stream::new(None, Budget::default(), None, sel);
                assert!(s.feed(&data, &mut one).is_ok() && s.finish(&mut one).is_ok());
                let mut every = EveryEvent::default();
                let mut s = Stream::new(None, Budget::default(), None, sel);
                assert!(s.feed(&data, &mut every).is_ok() && s.finish(&mut every).is_ok());
                let events = one.iter().filter(|&&b| b == b'\n').count();
                assert_eq!(every.0.len(), events);
                assert_eq!(every.0.concat(), one, "{:?}", entry.path());
                let parts = normalize_jsonl_parts(&data, None, Budget::default(), sel);
                assert_eq!(parts.map(|p| p.concat()).ok().as_ref(), Some(&one));
                let joined = normalize_jsonl(&data, None, Budget::default(), sel);
                assert_eq!(joined.ok(), Some(one));
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen}");
    }

    #[test]
    fn ints_and_duplicate_keys() {
        let mut out = Vec::new();
        write_i128(&mut out, i128::MIN);
        assert_eq!(out, i128::MIN.to_string().as_bytes());
        let (v, _) = crate::parse::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap_or((Value::Null, 0));
        out.clear();
        write_value(&mut out, &v);
        assert_eq!(out, br#"{"a":3,"b":2}"#);
    }
}
