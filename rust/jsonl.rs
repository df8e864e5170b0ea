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
use crate::sink::{self, Sink};
use crate::value::Value;

/// Bytes read per step by [`normalize_file`].
pub const READ_CHUNK: usize = 1 << 20;

/// The escape of each byte in a JSON string: 0 = as is, `u` = `\u00XX`, else `\<c>`.
/// (Indexing in a const block: an out-of-range index is a compile error, not a panic.)
#[allow(clippy::indexing_slicing)]
const ESC: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Input bytes escaped per step of [`write_str`] (the output slot is 6 times this).
const ESC_BLOCK: usize = 2048;

/// A JSON string as `json.dumps(s, ensure_ascii=False)` writes it.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for block in s.as_bytes().chunks(ESC_BLOCK) {
        // room for the worst case (every byte `\u00XX`) plus the slack of the 8-byte stores
        // of `escape_into`, trimmed after
        let start = out.len();
        out.resize(start + 6 * block.len() + 8, 0);
        let n = out
            .get_mut(start..)
            .map_or(0, |dst| escape_into(block, dst));
        out.truncate(start + n);
    }
    out.push(b'"');
}

/// Bit 7 of each byte of `w` that needs an escape (< 0x20, `"` or `\\`), exactly (no
/// carries cross bytes: every sum stays below 0x100).
#[inline]
fn escape_mask(w: u64) -> u64 {
    const L7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let ctl = !((w & L7).wrapping_add(LO * 0x60) | w) & HI;
    let q = w ^ (LO * u64::from(b'"'));
    let quote = !((q & L7).wrapping_add(L7) | q) & HI;
    let b = w ^ (LO * u64::from(b'\\'));
    let backslash = !((b & L7).wrapping_add(L7) | b) & HI;
    ctl | quote | backslash
}

/// Write the escape of byte `c` (one that needs one) at `dst[*j..]`.
#[inline]
fn put_escape(dst: &mut [u8], j: &mut usize, c: u8) {
    let e = ESC.get(usize::from(c)).copied().unwrap_or(b'u');
    if e == b'u' {
        let hex = [
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX.get(usize::from(c >> 4)).copied().unwrap_or(b'0'),
            HEX.get(usize::from(c & 0xf)).copied().unwrap_or(b'0'),
        ];
        if let Some(d) = dst.get_mut(*j..*j + 6) {
            d.copy_from_slice(&hex);
        }
        *j += 6;
    } else {
        if let Some(d) = dst.get_mut(*j..*j + 2) {
            d.copy_from_slice(&[b'\\', e]);
        }
        *j += 2;
    }
}

/// Escape `src` into `dst` (at least `6 * src.len() + 8` long: every 8-byte store then fits,
/// since at a word starting at `i` at most `6 * i + 42` bytes are written before its last
/// store); returns the bytes written.
///
/// 8 bytes at a time: a clean word is stored whole; in a word with escapes (JSON text in `raw`
/// has a `"` or `\\` every ten bytes or so) the exact mask of [`escape_mask`] gives their
/// places, and each clean run before one is stored as one 8-byte write (the bytes past the
/// run are overwritten next), so the cost is per escape, not per byte. The last < 8 bytes go
/// byte by byte.
#[inline]
fn escape_into(src: &[u8], dst: &mut [u8]) -> usize {
    let (mut i, mut j) = (0, 0);
    while let Some(w) = src.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        let word = u64::from_le_bytes(bytes);
        let mut m = escape_mask(word);
        let mut pos = 0usize;
        while m != 0 {
            let k = (m.trailing_zeros() / 8) as usize;
            if let Some(d) = dst.get_mut(j..j + 8) {
                d.copy_from_slice(&(word >> (8 * pos)).to_le_bytes());
            }
            j += k - pos;
            put_escape(dst, &mut j, bytes.get(k).copied().unwrap_or(0));
            pos = k + 1;
            m &= m - 1;
        }
        if pos < 8 {
            if let Some(d) = dst.get_mut(j..j + 8) {
                d.copy_from_slice(&(word >> (8 * pos)).to_le_bytes());
            }
            j += 8 - pos;
        }
        i += 8;
    }
    for &c in src.get(i..).unwrap_or_default() {
        if ESC.get(usize::from(c)).copied().unwrap_or(0) == 0 {
            if let Some(d) = dst.get_mut(j) {
                *d = c;
            }
            j += 1;
        } else {
            put_escape(dst, &mut j, c);
        }
    }
    j.min(dst.len())
}

/// An unsigned integer in decimal.
pub fn write_u128(out: &mut Vec<u8>, mut n: u128) {
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or_default());
}

pub fn write_u64(out: &mut Vec<u8>, n: u64) {
    write_u128(out, u128::from(n));
}

pub fn write_i128(out: &mut Vec<u8>, n: i128) {
    if n < 0 {
        out.push(b'-');
    }
    write_u128(out, n.unsigned_abs());
}

/// A float as `json.dumps` writes it: `repr(float)`, and `Infinity`/`-Infinity`/`NaN`.
pub fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    // shortest round-trip digits d1 d2 ... and exponent e (value = d1.d2... * 10^e)
    let sci = format!("{:e}", f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    let n = digits.len() as i32;
    // CPython's float_repr_style 'short': exponent form when decpt <= -4 or decpt > 16,
    // with decpt = exp + 1
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.extend_from_slice(first);
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        write_u64(out, u64::from(a));
    } else if exp < 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(&digits);
    } else if exp + 1 < n {
        let (int, frac) = digits.split_at((exp + 1) as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (exp + 1 - n) as usize));
        out.extend_from_slice(b".0");
    }
}

fn write_num(out: &mut Vec<u8>, n: Num) {
    match n {
        Num::Int(i) => write_i128(out, i),
        Num::Float(f) => write_f64(out, f),
    }
}

/// Objects up to this many pairs are checked for duplicate keys pairwise, larger ones by hash.
const DUP_SCAN_MAX: usize = 16;

fn has_duplicate_keys(pairs: &[(std::borrow::Cow<'_, str>, Value<'_>)]) -> bool {
    if pairs.len() <= DUP_SCAN_MAX {
        pairs.iter().enumerate().any(|(i, (k, _))| {
            pairs
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|(j, _)| j == k)
        })
    } else {
        let mut seen = std::collections::HashSet::with_capacity(pairs.len());
        pairs.iter().any(|(k, _)| !seen.insert(k.as_ref()))
    }
}

/// A parsed value as `json.dumps` writes the Python object `convert.rs` builds from it
/// (`convert::plain_value`): `BigInt` is a Python int (its text is already canonical).
pub fn write_value(out: &mut Vec<u8>, v: &Value<'_>) {
    write_shared(out, v, &mut Shared::default());
}

/// Parts of a line's `parsed` JSON that its events repeat (`text` borrowed from a string of
/// the line, `tool.arguments`), so they are escaped once and copied after (the JSONL twin of
/// `convert.rs`'s `Shared`). Keys: (address, length) of strings, (address, 0) of values.
#[derive(Debug, Default)]
struct Shared {
    wanted: Vec<(usize, usize)>,
    /// key -> byte range in the `parsed` buffer
    found: Vec<((usize, usize), (usize, usize))>,
}

/// Strings shorter than this are escaped again rather than looked up.
const SHARE_MIN: usize = 64;
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
                if t.len() >= SHARE_MIN {
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

    #[inline]
    fn note(&mut self, key: (usize, usize), start: usize, end: usize) {
        if self.wanted.contains(&key) && !self.found.iter().any(|(k, _)| *k == key) {
            self.found.push((key, (start, end)));
        }
    }

    fn get<'b>(&self, key: (usize, usize), buf: &'b [u8]) -> Option<&'b [u8]> {
        let (_, (a, b)) = self.found.iter().find(|(k, _)| *k == key)?;
        buf.get(*a..*b)
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
            if has_duplicate_keys(pairs) {
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
    if let Some(text) = &ev.text {
        match shared.get((text.as_ptr() as usize, text.len()), parsed) {
            Some(json) => o.json("text", json), // d.set_item("text", shared obj)
            None => o.str("text", text),        // d.set_item("text", text)
        }
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
        write_extra(o, ev, x); // extra(py, x, &d, keys)
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
fn write_extra(o: &mut Obj<'_>, ev: &Event<'_>, x: &Extra<'_>) {
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
        Some(ToolResult::Text) => o.str("toolResult", ev.text.as_deref().unwrap_or("")), // text
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
        self.parsed.clear();
        let mut shared = Shared::for_events(&rec.events);
        match rec.parsed {
            Some(v) => write_shared(&mut self.parsed, v, &mut shared),
            None => self.parsed.extend_from_slice(b"null"),
        }
        for ev in &rec.events {
            let mut o = Obj::open(out);
            write_event(&mut o, ev, rec, *seq, (&shared, &self.parsed));
            o.json("raw", &self.raw); // d.set_item("raw", raw)
            o.json("parsed", &self.parsed); // d.set_item("parsed", parsed)
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
    let mut f = open_input(path)?;
    let mut s = Stream::new(dialect, budget, source);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut out = Vec::with_capacity(out_capacity(READ_CHUNK));
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.clear();
        s.feed(chunk.get(..n).unwrap_or_default(), &mut out)
            .map_err(io_oom)?;
        sink.write_all(&out)?;
    }
    out.clear();
    s.finish(&mut out).map_err(io_oom)?;
    sink.write_all(&out)?;
    sink.flush()
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

    fn f(x: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    fn s(x: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn floats_are_python_repr() {
        // expected values are Python's repr() (checked in CPython 3.12)
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e16, "1.5e+16"),
            (9007199254740993.0, "9007199254740992.0"),
            (1e-7, "1e-07"),
            (1e-4, "0.0001"),
            (1.5e-5, "1.5e-05"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1.0, "1.0"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (x, want) in cases {
            assert_eq!(f(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_escape_like_json_dumps() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(
            s("\u{0}\u{1f}\u{7f}é\u{2028}"),
            "\"\\u0000\\u001f\u{7f}é\u{2028}\""
        );
    }

    #[test]
    fn fast_escape_equals_the_byte_table() {
        let naive = |x: &str| {
            let mut o = String::from("\"");
            for c in x.chars() {
                match c {
                    '"' => o.push_str("\\\""),
                    '\\' => o.push_str("\\\\"),
                    '\n' => o.push_str("\\n"),
                    '\r' => o.push_str("\\r"),
                    '\t' => o.push_str("\\t"),
                    '\u{8}' => o.push_str("\\b"),
                    '\u{c}' => o.push_str("\\f"),
                    c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
                    c => o.push(c),
                }
            }
            o.push('"');
            o
        };
        // the worst cases of the 8-byte stores: runs of controls (6 bytes out each) before
        // a clean byte, at every offset
        for n in 0..40 {
            for tail in ["", "a", "ab", "\"", "é"] {
                let x = "\u{1}".repeat(n) + tail;
                assert_eq!(s(&x), naive(&x), "{x:?}");
                let y = "a".repeat(n % 9) + &x;
                assert_eq!(s(&y), naive(&y), "{y:?}");
            }
        }
        let big = "\u{1}".repeat(3 * ESC_BLOCK + 7) + "xyz\"";
        assert_eq!(s(&big), naive(&big));
        let alphabet: Vec<char> = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain(['é', '€', '𝄞', '\u{2028}'])
            .collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..64 {
            for _ in 0..40 {
                let x: String = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let k = (seed % 8) as usize;
                        // mostly plain letters, so runs of clean words occur
                        if k < 5 {
                            'a'
                        } else {
                            alphabet
                                .get((seed >> 8) as usize % alphabet.len())
                                .copied()
                                .unwrap_or('a')
                        }
                    })
                    .collect();
                assert_eq!(s(&x), naive(&x), "{x:?}");
            }
        }
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
