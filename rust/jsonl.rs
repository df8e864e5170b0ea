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
//! [`normalize_file`] runs it over a file read in chunks (bounded memory).

use std::io::{Read, Write};
use std::path::Path;

use crate::budget::{Budget, OutOfMemory};
use crate::dialect::AnyDialect;
use crate::event::{Event, Extra, Num, ToolResult};
use crate::normalize::{Engine, LineEvents, V};
use crate::parse::{StrSpan, SPAN_MIN};
use crate::sink::{self, Sink};
use crate::text::{write_f64, write_i128, write_str, write_u64};
use crate::value::Value;

/// Bytes read per step by [`normalize_file`].
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
    write_shared(out, v, &mut Shared::default());
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

fn write_shared(out: &mut Vec<u8>, v: &Value<'_>, shared: &mut Shared) {
    let start = out.len();
    write_plain(out, v, shared);
    if !shared.wanted.is_empty() {
        let end = out.len();
        shared.note((std::ptr::from_ref(v) as usize, 0), start, end);
        if let Value::Str(s) = v {
            shared.note((s.as_ptr() as usize, s.len()), start, end);
        }
    }
}

fn write_plain(out: &mut Vec<u8>, v: &Value<'_>, shared: &mut Shared) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => write_i128(out, i128::from(*i)),
        Value::BigInt(text) => out.extend_from_slice(text.as_bytes()),
        Value::Float(f) => write_f64(out, *f),
        Value::Str(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_shared(out, item, shared);
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
                    write_str(out, k);
                    out.push(b':');
                    write_shared(out, item, shared);
                }
            } else {
                for (i, (k, item)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(out, k);
                    out.push(b':');
                    write_shared(out, item, shared);
                }
            }
            out.push(b'}');
        }
    }
}

/// An object being written: `"key":value` pairs separated by commas. Keys are static ASCII
/// identifiers (no escaping needed).
struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    fn open(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// Start a pair; returns the buffer for the value.
    fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn str(&mut self, k: &str, s: &str) {
        write_str(self.key(k), s);
    }

    fn u64(&mut self, k: &str, n: u64) {
        write_u64(self.key(k), n);
    }

    fn num(&mut self, k: &str, n: Num) {
        write_num(self.key(k), n);
    }

    fn bool(&mut self, k: &str, b: bool) {
        self.key(k)
            .extend_from_slice(if b { b"true" } else { b"false" });
    }

    fn value(&mut self, k: &str, v: &Value<'_>) {
        write_value(self.key(k), v);
    }

    /// A value already written as JSON text.
    fn json(&mut self, k: &str, text: &[u8]) {
        self.key(k).extend_from_slice(text);
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

/// The fields of one event dict, in `convert.rs` (`event`) order, up to and excluding `raw`.
/// Each line names its `convert.rs` counterpart; keep the two in step.
/// `pre` is the line's `parsed` JSON and `shared` the parts of it the events repeat.
fn write_event(
    o: &mut Obj<'_>,
    ev: &Event<'_>,
    rec: &LineEvents<'_>,
    seq: u64,
    pre: (&Shared, &[u8]),
) {
    let (shared, parsed) = pre;
    o.str("v", V); // d.set_item("v", V)
    o.u64("seq", seq); // d.set_item("seq", seq)
    o.u64("position", rec.position); // d.set_item("position", rec.position)
    o.str("dialect", rec.dialect); // d.set_item("dialect", dialect)
    o.str("kind", ev.kind); // d.set_item("kind", ev.kind)
    o.str("subtype", &ev.subtype); // d.set_item("subtype", ev.subtype)
    if let Some(role) = ev.role {
        o.str("role", role); // d.set_item("role", role)
    }
    // where the text's JSON lies in the output, for `toolResult` (the same string again)
    let mut text_json = None;
    if let Some(text) = &ev.text {
        let start = o.key("text").len();
        match shared.get((text.as_ptr() as usize, text.len()), parsed) {
            Some(json) => o.out.extend_from_slice(json), // d.set_item("text", shared obj)
            None => write_str(o.out, text),              // d.set_item("text", text)
        }
        text_json = Some(start..o.out.len());
    }
    if let Some(tool) = &ev.tool {
        let mut t = Obj::open(o.key("tool")); // d.set_item("tool", t)
        t.str("name", &tool.name); // t.set_item("name", tool.name)
        if let Some(args) = tool.arguments {
            match shared.get((std::ptr::from_ref(args) as usize, 0), parsed) {
                Some(json) => t.json("arguments", json), // t.set_item("arguments", obj)
                None => t.value("arguments", args),      // t.set_item("arguments", value(args))
            }
        }
        if let Some(id) = tool.id {
            t.str("id", id); // t.set_item("id", id)
        }
        if let Some(e) = tool.is_error {
            t.bool("isError", e); // t.set_item("isError", e)
        }
        t.close();
    }
    if let Some(err) = &ev.error {
        let mut e = Obj::open(o.key("error")); // d.set_item("error", e)
        e.str("code", &err.code); // e.set_item("code", err.code)
        e.str("message", &err.message); // e.set_item("message", err.message)
        e.str("errorKind", err.kind); // e.set_item("errorKind", err.kind)
        e.close();
    }
    if let Some(t) = &ev.retry_at {
        o.str("retryAt", t); // d.set_item("retryAt", t)
    }
    if let Some(ms) = ev.retry_after_ms {
        o.u64("retryAfterMs", ms); // d.set_item("retryAfterMs", ms)
    }
    if let Some(u) = &ev.usage {
        let mut e = Obj::open(o.key("usage")); // d.set_item("usage", e)
        if let Some(n) = u.input {
            e.num("inputTokens", n); // e.set_item("inputTokens", num(n))
        }
        if let Some(n) = u.output {
            e.num("outputTokens", n); // e.set_item("outputTokens", num(n))
        }
        if let Some(n) = u.cached {
            e.num("cachedTokens", n); // e.set_item("cachedTokens", num(n))
        }
        if let Some(n) = u.cost {
            e.num("costUsd", n); // e.set_item("costUsd", num(n))
        }
        e.str("model", &u.model); // e.set_item("model", u.model)
        if u.unknown {
            e.bool("unknown", true); // e.set_item("unknown", true)
        }
        e.close();
    }
    if let Some(scope) = ev.usage_scope {
        o.str("usageScope", scope); // d.set_item("usageScope", scope)
    }
    if let Some(id) = ev.message_id {
        o.str("messageId", id); // d.set_item("messageId", id)
    }
    if ev.delta {
        o.bool("delta", true); // d.set_item("delta", true)
    }
    if let Some(n) = ev.line_bytes {
        o.bool("truncated", true); // d.set_item("truncated", true)
        o.u64("lineBytes", n); // d.set_item("lineBytes", n)
    }
    if let Some(s) = ev.encoding {
        o.str("encoding", s); // d.set_item("encoding", s)
    }
    if let Some(n) = ev.stream_bytes {
        o.u64("streamBytes", n); // d.set_item("streamBytes", n)
    }
    if let Some(x) = &ev.extra {
        write_extra(o, ev, x, text_json); // extra(py, x, &d, keys)
    }
    if let Some(s) = rec.meta.session_id {
        o.str("sessionId", s); // d.set_item("sessionId", s)
    }
    if let Some(s) = rec.meta.timestamp {
        o.str("timestamp", s); // d.set_item("timestamp", s)
    }
    if let Some(s) = rec.meta.parent_tool_use_id {
        o.str("parentToolUseId", s); // d.set_item("parentToolUseId", s)
    }
    if let Some(s) = rec.meta.native_type {
        o.str("nativeType", s); // d.set_item("nativeType", s)
    }
    let m = &rec.meta;
    if let Some(s) = m.model_call_id {
        o.str("modelCallId", s); // d.set_item("modelCallId", s)
    }
    if let Some(s) = m.native_id {
        o.str("nativeId", s); // d.set_item("nativeId", s)
    }
    if let Some(s) = m.stop_reason {
        o.str("stopReason", s); // d.set_item("stopReason", s)
    }
    if let Some(v) = m.duration_ms {
        o.value("durationMs", v); // d.set_item("durationMs", value(v))
    }
    match m.result_text {
        Some(Some(s)) => o.str("resultText", s), // d.set_item("resultText", s)
        Some(None) => o.json("resultText", b"null"), // d.set_item("resultText", None)
        None => {}
    }
    if let Some(v) = m.structured_output {
        o.value("structuredOutput", v); // d.set_item("structuredOutput", value(v))
    }
    if m.repeats_error {
        o.bool("repeatsError", true); // d.set_item("repeatsError", true)
    }
    if m.partial {
        o.bool("partial", true); // d.set_item("partial", true)
    }
    if m.result_joins_messages {
        o.bool("resultJoinsMessages", true); // d.set_item("resultJoinsMessages", true)
    }
    if let Some(s) = m.request_id {
        o.str("requestId", s); // d.set_item("requestId", s)
    }
    if let Some(s) = m.agent_id {
        o.str("agentId", s); // d.set_item("agentId", s)
    }
    if m.sidechain {
        o.bool("sidechain", true); // d.set_item("sidechain", true)
    }
    if rec.repairs > 0 {
        o.u64("repairedSurrogates", rec.repairs as u64); // d.set_item("repairedSurrogates", ..)
    }
}

/// The per-event oneshot extras, in `convert.rs` (`extra`) order.
/// `text_json`: the event's `text` as already written to the output.
fn write_extra(
    o: &mut Obj<'_>,
    ev: &Event<'_>,
    x: &Extra<'_>,
    text_json: Option<std::ops::Range<usize>>,
) {
    if let Some(c) = x.tool_class {
        o.str("toolClass", c); // d.set_item("toolClass", c)
    }
    if let Some(n) = &x.provider_tool_name {
        o.str("providerToolName", n); // d.set_item("providerToolName", n)
    }
    if let Some(a) = &x.provider_arguments {
        o.value("providerArguments", a); // d.set_item("providerArguments", value(a))
    }
    match &x.tool_result {
        Some(ToolResult::Value(v)) => o.value("toolResult", v), // value(v)
        Some(ToolResult::Text) => match text_json {
            Some(r) => o.key("toolResult").extend_from_within(r), // the text's JSON again
            None => o.str("toolResult", ev.text.as_deref().unwrap_or("")), // text
        },
        None => {}
    }
    if !x.file_changes.is_empty() {
        let out = o.key("fileChanges"); // d.set_item("fileChanges", list)
        out.push(b'[');
        for (i, (event, path, diff)) in x.file_changes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let mut c = Obj::open(out);
            c.str("event", event); // c.set_item("event", event)
            c.str("path", path); // c.set_item("path", path)
            if let Some(diff) = diff {
                c.str("diff", diff); // c.set_item("diff", diff)
            }
            c.close();
        }
        out.push(b']');
    }
    if let Some(s) = &x.subagent {
        let mut a = Obj::open(o.key("subagent")); // d.set_item("subagent", o)
        a.str("id", &s.id); // o.set_item("id", s.id)
        a.str("phase", s.phase); // o.set_item("phase", s.phase)
        if let Some(n) = &s.name {
            a.str("name", n); // o.set_item("name", n)
        }
        if let Some(n) = &s.kind {
            a.str("type", n); // o.set_item("type", n)
        }
        if let Some(n) = &s.description {
            a.str("description", n); // o.set_item("description", n)
        }
        if let Some(n) = &s.prompt {
            a.str("prompt", n); // o.set_item("prompt", n)
        }
        if let Some(n) = s.disposition {
            a.str("disposition", n); // o.set_item("disposition", n)
        }
        if let Some(n) = s.alias {
            a.str("alias", n); // o.set_item("alias", n)
        }
        a.close();
    }
    if let Some(b) = x.tokens_before {
        o.value("tokensBefore", b); // d.set_item("tokensBefore", value(b))
    }
    if let Some(a) = x.tokens_after {
        o.value("tokensAfter", a); // d.set_item("tokensAfter", value(a))
    }
    if x.retry {
        o.bool("retry", true); // d.set_item("retry", true)
    }
    if x.delta_only {
        o.bool("deltaOnly", true); // d.set_item("deltaOnly", true)
    }
    if let Some(r) = x.reasoning_tokens {
        o.value("reasoningTokens", r); // d.set_item("reasoningTokens", value(r))
    }
    if x.empty_result {
        o.bool("emptyResult", true); // d.set_item("emptyResult", true)
    }
    if x.answer {
        o.bool("answer", true); // d.set_item("answer", true)
    }
    if let Some(p) = x.partial_arguments {
        o.str("partialArguments", p); // d.set_item("partialArguments", p)
    }
    if x.continuation {
        o.bool("continuation", true); // d.set_item("continuation", true)
    }
}

/// Writes lines; keeps the per-line scratch buffers and the optional `source` pair.
#[derive(Debug, Default)]
pub struct LineWriter {
    raw: Vec<u8>,
    parsed: Vec<u8>,
    /// `"source":<path>` appended to every event (the CLI's field for several inputs).
    source: Option<Vec<u8>>,
}

impl LineWriter {
    pub fn new(source: Option<&str>) -> Self {
        LineWriter {
            source: source.map(|s| {
                let mut b = Vec::new();
                write_str(&mut b, s);
                b
            }),
            ..LineWriter::default()
        }
    }

    /// The JSONL of one line's events, numbered from `*seq` (`convert::line`).
    pub fn line(&mut self, out: &mut Vec<u8>, rec: &LineEvents<'_>, seq: &mut u64) {
        // raw and parsed are the same for every event of the line: written once
        self.raw.clear();
        write_str(&mut self.raw, rec.raw);
        // a canonical line is its own `parsed` JSON, its long strings where the parser found them
        self.parsed.clear();
        let mut shared = Shared::default();
        let parsed: &[u8] = match (rec.parsed_text, rec.parsed) {
            (Some(text), _) => {
                shared = Shared::in_line(rec.strings);
                text.as_bytes()
            }
            (None, Some(v)) => {
                shared = Shared::for_events(&rec.events);
                write_shared(&mut self.parsed, v, &mut shared);
                &self.parsed
            }
            (None, None) => b"null",
        };
        for ev in &rec.events {
            let mut o = Obj::open(out);
            write_event(&mut o, ev, rec, *seq, (&shared, parsed));
            o.json("raw", &self.raw); // d.set_item("raw", raw)
            o.json("parsed", parsed); // d.set_item("parsed", parsed)
            if let Some(src) = &self.source {
                o.json("source", src); // cli.py: ev["source"] = source
            }
            o.close();
            out.push(b'\n');
            *seq += 1;
        }
    }
}

/// The JSONL [`Sink`]: each line's events appended to `out` by `writer`.
pub struct JsonlSink<'w> {
    pub writer: &'w mut LineWriter,
    pub out: &'w mut Vec<u8>,
}

impl Sink for JsonlSink<'_> {
    type Error = OutOfMemory;

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), OutOfMemory> {
        self.writer.line(self.out, rec, seq);
        Ok(())
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
    pub fn new(dialect: Option<AnyDialect>, budget: Budget, source: Option<&str>) -> Self {
        Stream {
            engine: Engine::new(dialect, budget),
            seq: 0,
            writer: LineWriter::new(source),
        }
    }

    /// The stream for the part of a stream from byte `offset` on ([`Engine::resume`]): `seq`
    /// numbered from 0 again (`split::rebase` renumbers).
    pub fn resume(dialect: AnyDialect, budget: Budget, source: Option<&str>, offset: u64) -> Self {
        Stream {
            engine: Engine::resume(dialect, budget, offset),
            seq: 0,
            writer: LineWriter::new(source),
        }
    }

    /// Frame `chunk` and append the JSONL of the lines it completed.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), OutOfMemory> {
        let mut sink = JsonlSink {
            writer: &mut self.writer,
            out,
        };
        sink::feed(&mut self.engine, &mut self.seq, chunk, &mut sink)
    }

    /// End of stream: the last line's events and a UTF-16/UTF-32 stream's event. Idempotent.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), OutOfMemory> {
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

/// A whole stream as JSONL.
pub fn normalize_jsonl(
    data: &[u8],
    dialect: Option<AnyDialect>,
    budget: Budget,
) -> Result<Vec<u8>, OutOfMemory> {
    let mut s = Stream::new(dialect, budget, None);
    let mut out = Vec::new();
    OutOfMemory::reserve(&mut out, out_capacity(data.len()))?;
    s.feed(data, &mut out)?;
    s.finish(&mut out)?;
    Ok(out)
}

/// One file as JSONL into `sink`, read [`READ_CHUNK`] bytes at a time (memory bounded by the
/// chunk and the longest line, not the file). Same bytes as [`normalize_jsonl`] of the file.
pub fn normalize_file(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    source: Option<&str>,
    sink: &mut dyn Write,
) -> std::io::Result<()> {
    let mut s = Stream::new(dialect, budget, source);
    let mut out = Vec::with_capacity(out_capacity(READ_CHUNK));
    read_chunks(&mut open_input(path)?, |chunk| {
        out.clear();
        s.feed(chunk, &mut out).map_err(io_oom)?;
        sink.write_all(&out)
    })?;
    out.clear();
    s.finish(&mut out).map_err(io_oom)?;
    sink.write_all(&out)?;
    sink.flush()
}

/// Every byte of `r`, handed to `f` [`READ_CHUNK`] bytes (or what one read gave) at a time.
pub fn read_chunks(
    r: &mut dyn Read,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        match r.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => f(chunk.get(..n).unwrap_or_default())?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The gzip and zstd magics (`inputs.py` has the same).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A file for reading, decompressed as it is read when its first bytes are a gzip (every member)
/// or zstd (every frame) magic, whatever its name. Memory: the decoder's window (zstd: at most
/// ruzstd's 128 MiB default; gzip: 32 KiB) and one read, never the decompressed file, so the
/// budgets apply to decompressed bytes and a "zip bomb" costs time, not memory.
pub fn open_input(path: &Path) -> std::io::Result<Box<dyn Read + Send>> {
    let mut f = std::fs::File::open(path)?;
    let mut head = [0u8; 4];
    let mut n = 0;
    while let Some(rest) = head.get_mut(n..).filter(|r| !r.is_empty()) {
        match f.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let head = head.get(..n).unwrap_or_default().to_vec();
    let gzip = head.starts_with(&GZIP_MAGIC);
    let zstd = head.starts_with(&ZSTD_MAGIC);
    let r = std::io::BufReader::with_capacity(READ_CHUNK, std::io::Cursor::new(head).chain(f));
    if gzip {
        return Ok(Box::new(flate2::bufread::MultiGzDecoder::new(r)));
    }
    if zstd {
        return Ok(Box::new(Zstd::new(r)?));
    }
    Ok(Box::new(r))
}

/// A zstd stream of one or more frames (ruzstd decodes one frame per decoder).
struct Zstd<R: std::io::BufRead> {
    dec: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

fn zstd_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("zstd: {e}"))
}

impl<R: std::io::BufRead> Zstd<R> {
    fn new(r: R) -> std::io::Result<Self> {
        let dec = ruzstd::decoding::StreamingDecoder::new(r).map_err(zstd_err)?;
        Ok(Zstd { dec: Some(dec) })
    }
}

impl<R: std::io::BufRead> Read for Zstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(0);
            };
            let n = dec.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // the frame is done: another one follows, or the stream ends
            let Some(mut inner) = self.dec.take().map(|d| d.into_inner()) else {
                return Ok(0);
            };
            if inner.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.dec = Some(ruzstd::decoding::StreamingDecoder::new(inner).map_err(zstd_err)?);
        }
    }
}

fn io_oom(e: OutOfMemory) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string())
}

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
