//! Strict RFC 8259 parser for one line of text, mirrored by `reference/parse.py`.
//!
//! Contract: accepts exactly what the reference accepts (no NaN/Infinity, no float that overflows
//! to infinity, no integer of more than [`MAX_INT_DIGITS`] digits); strings without escapes are
//! borrowed; a lone surrogate escape becomes U+FFFD and is counted. Errors carry this project's
//! message and the byte offset where the reference reports it. Recursion depth is bounded by the
//! budget scan that runs first; [`HARD_DEPTH`] guards direct callers.

use std::borrow::Cow;

use bumpalo::Bump;

use crate::budget::{OutOfMemory, Over};
use crate::value::{Nodes, Pair, Value};

/// Integers with more digits than this are rejected as out of range.
pub const MAX_INT_DIGITS: usize = 4000;
/// Absolute nesting guard for callers that skip the budget scan.
pub const HARD_DEPTH: usize = 1024;

/// A syntax error: a static message and the 0-based byte offset in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonError {
    pub message: &'static str,
    pub offset: usize,
}

/// The value and the number of lone surrogates repaired.
pub type Parsed<'a> = (Value<'a>, usize);

/// Parse a whole line, with no budget beyond [`HARD_DEPTH`].
pub fn parse(text: &str) -> Result<Parsed<'_>, JsonError> {
    match parse_within(text, HARD_DEPTH, usize::MAX) {
        Ok(p) => Ok(p),
        Err(Failure::Syntax(e)) => Err(e),
        Err(Failure::Over(_)) => Err(JsonError {
            message: "nesting too deep",
            offset: 0,
        }),
        Err(Failure::OutOfMemory(_)) => Err(JsonError {
            message: "out of memory",
            offset: 0,
        }),
    }
}

/// Why [`parse_within`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Syntax(JsonError),
    /// A budget was crossed; the parser counts exactly as [`crate::budget::scan`] does, so on a
    /// valid prefix the first crossing is the one the scan would report.
    Over(Over),
    /// Growing the tree (an array, an object, an unescaped string) failed: `try_reserve`.
    OutOfMemory(OutOfMemory),
}

/// Parse a line, stopping as soon as `max_depth` or `max_nodes` is crossed (so allocation stays
/// bounded by the budget). A syntax error does not rule out a budget error later in the line:
/// the caller runs the lexical scan then (see `normalize::prepare`).
pub fn parse_within(text: &str, max_depth: usize, max_nodes: usize) -> Result<Parsed<'_>, Failure> {
    parse_line(text, max_depth, max_nodes).map(|l| (l.value, l.repairs))
}

/// A parsed line: the value, the lone surrogates repaired, and the value's own text when that
/// text is already exactly what the JSONL writer writes for it ([`Line::canonical`]).
#[derive(Debug)]
pub struct Line<'a> {
    pub value: Value<'a>,
    pub repairs: usize,
    /// The value's text (the line without the blanks around it) when writing the value as
    /// `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` gives these very bytes: no
    /// blank inside, only the escapes the writer makes (`\"`, `\\`, `\b \f \n \r \t`,
    /// lowercase `\u00XX` for the other controls), integers other than `-0`, floats in
    /// `repr` form, no object with a repeated key. What compact JSON writers print (claude's
    /// `JSON.stringify`, codex's serde_json) mostly is, so the writers copy it instead of
    /// writing the tree again.
    pub canonical: Option<&'a str>,
    /// For a canonical line, where its long strings (at least [`SPAN_MIN`] bytes) stand in
    /// `canonical`: each string's text is then exactly what the writer writes for the string,
    /// so the writers copy it rather than escape the string again (empty when the line is not
    /// canonical).
    pub strings: Vec<StrSpan>,
}

/// Strings shorter than this get no [`StrSpan`] (escaping them again costs less than a lookup;
/// the JSONL writer's shared parts use the same bound).
pub const SPAN_MIN: usize = 64;

/// A string (or, in the JSONL writer, a value) of a parsed line and its JSON text in the line's
/// `parsed` JSON: `json[start..end]`, quotes included. The string is named by its bytes' address and length (a `Value::Str` keeps its
/// bytes where the parser put them).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StrSpan {
    pub ptr: usize,
    pub len: usize,
    pub start: usize,
    pub end: usize,
}

/// The span's place in the line only: the address differs from one run to the next, and a
/// record's Debug text must not (the fuzz targets compare records made in different runs).
impl std::fmt::Debug for StrSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "StrSpan({}..{}, {} bytes)",
            self.start, self.end, self.len
        )
    }
}

impl StrSpan {
    /// The JSON text of `s` in `text` when `s` is the string this span names.
    pub fn find<'t>(spans: &[StrSpan], text: &'t str, s: &str) -> Option<&'t str> {
        let key = (s.as_ptr() as usize, s.len());
        let span = spans.iter().find(|x| (x.ptr, x.len) == key)?;
        text.get(span.start..span.end)
    }
}

/// [`parse_within`] that also tells whether the line is canonical ([`Line::canonical`]).
pub fn parse_line(text: &str, max_depth: usize, max_nodes: usize) -> Result<Line<'_>, Failure> {
    parse_line_with(text, max_depth, max_nodes, true)
}

/// [`parse_line`], which looks for the line's canonical text only when `canonical` (without,
/// [`Line::canonical`] is `None` and [`Line::strings`] empty: no object's keys are checked for
/// repeats, no long string's place kept, for callers that never copy the line's JSON text,
/// such as the usage fold and the dict output).
///
/// The tree is parsed into an arena of its own, then copied out of it into vectors and strings
/// it owns (strings without escapes stay borrowed from `text`): for the callers off the hot
/// path (tests, schemas, mapping files, the first lines of a stream). The streams parse with
/// [`parse_line_in`], into an arena they reuse.
pub fn parse_line_with(
    text: &str,
    max_depth: usize,
    max_nodes: usize,
    canonical: bool,
) -> Result<Line<'_>, Failure> {
    let bump = Bump::new();
    let mut scratch = Scratch::default();
    let line = parse_line_in(text, &bump, &mut scratch, max_depth, max_nodes, canonical)?;
    let value = detach(&line.value, text).map_err(Failure::OutOfMemory)?;
    let mut strings = line.strings;
    // only the spans of strings the detached tree still borrows from `text` (an arena
    // string's copy is elsewhere, and its old address may be reused by another allocation)
    strings.retain(|x| within(text, x.ptr, x.len).is_some());
    Ok(Line {
        value,
        repairs: line.repairs,
        canonical: line
            .canonical
            .and_then(|c| within(text, c.as_ptr() as usize, c.len())),
        strings,
    })
}

/// `text[..]` at address `ptr`, `len` bytes, when those bytes lie in `text`.
fn within(text: &str, ptr: usize, len: usize) -> Option<&str> {
    let start = ptr.checked_sub(text.as_ptr() as usize)?;
    text.get(start..start.checked_add(len)?)
}

/// A copy of `v` that owns its containers and the strings that are not in `text` (the arena's),
/// and borrows the others from `text`.
pub fn detach<'t>(v: &Value<'_>, text: &'t str) -> Result<Value<'t>, OutOfMemory> {
    let string = |s: &str| -> Result<Cow<'t, str>, OutOfMemory> {
        if let Some(t) = within(text, s.as_ptr() as usize, s.len()) {
            return Ok(Cow::Borrowed(t));
        }
        let mut owned = String::new();
        OutOfMemory::reserve_str(&mut owned, s.len())?;
        owned.push_str(s);
        Ok(Cow::Owned(owned))
    };
    Ok(match v {
        Value::Null => Value::Null,
        Value::Bool(b) => Value::Bool(*b),
        Value::Int(n) => Value::Int(*n),
        Value::Float(f) => Value::Float(*f),
        // the parser takes a big integer's digits from the line
        Value::BigInt(s) => match within(text, s.as_ptr() as usize, s.len()) {
            Some(t) => Value::BigInt(t),
            None => Value::Str(string(s)?),
        },
        Value::Str(s) => Value::Str(string(s)?),
        Value::Array(items) => {
            let mut out = Vec::new();
            OutOfMemory::reserve(&mut out, items.len())?;
            for x in items.iter() {
                out.push(detach(x, text)?);
            }
            Value::Array(Nodes::Owned(out))
        }
        Value::Object(pairs) => {
            let mut out = Vec::new();
            OutOfMemory::reserve(&mut out, pairs.len())?;
            for (k, x) in pairs.iter() {
                out.push((string(k)?, detach(x, text)?));
            }
            Value::Object(Nodes::Owned(out))
        }
    })
}

/// The parser's reusable working space: the stacks the children of the open containers are
/// parsed onto (each container's are moved into the arena, as one slice, when it closes) and
/// the buffer escaped strings are decoded in. Kept from line to line by the caller, so a line
/// costs no allocation beyond its arena's.
#[derive(Debug, Default)]
pub struct Scratch {
    items: Vec<Value<'static>>,
    pairs: Vec<Pair<'static>>,
    buf: String,
}

/// An empty vector of `U` in the allocation of `v` (the same type but for lifetimes): the
/// in-place `collect` of an iterator that yields nothing keeps the buffer and its capacity.
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// [`parse_line_with`] into `bump`: the tree's containers (slices) and its strings with
/// escapes are allocated there and borrowed by the tree, which owns nothing (dropping it frees
/// nothing; the caller resets the arena when the lines it holds are done). Allocation failures
/// in the arena or in `scratch` are [`Failure::OutOfMemory`].
pub fn parse_line_in<'a>(
    text: &'a str,
    bump: &'a Bump,
    scratch: &mut Scratch,
    max_depth: usize,
    max_nodes: usize,
    canonical: bool,
) -> Result<Line<'a>, Failure> {
    let mut st = Stacks {
        items: std::mem::take(&mut scratch.items),
        pairs: std::mem::take(&mut scratch.pairs),
    };
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        i: 0,
        repairs: 0,
        depth: 0,
        nodes: 0,
        max_depth: max_depth.min(HARD_DEPTH),
        max_nodes,
        over: None,
        oom: None,
        canon: canonical,
        spans: Vec::new(),
        bump,
        buf: std::mem::take(&mut scratch.buf),
    };
    let line = p.line(&mut st);
    scratch.items = recycle(st.items);
    scratch.pairs = recycle(st.pairs);
    scratch.buf = p.buf;
    line
}

/// The children of the open containers, innermost last.
struct Stacks<'a> {
    items: Vec<Value<'a>>,
    pairs: Vec<Pair<'a>>,
}

/// Where a container parsed onto [`Stacks`] goes when it closes: the value of an array's
/// item or of an object's pair, by its index on the stack.
#[derive(Clone, Copy)]
enum Slot {
    Item(usize),
    Pair(usize),
}

impl Slot {
    #[inline(always)]
    fn get<'s, 'a>(self, st: &'s mut Stacks<'a>) -> Option<&'s mut Value<'a>> {
        match self {
            Slot::Item(at) => st.items.get_mut(at),
            Slot::Pair(at) => st.pairs.get_mut(at).map(|(_, v)| v),
        }
    }
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    repairs: usize,
    depth: usize,
    nodes: usize,
    max_depth: usize,
    max_nodes: usize,
    over: Option<Over>,
    oom: Option<OutOfMemory>,
    /// Nothing seen yet that the writer would write differently ([`Line::canonical`]).
    canon: bool,
    /// The long strings so far ([`Line::strings`]).
    spans: Vec<StrSpan>,
    /// Where the containers' slices and the escaped strings go.
    bump: &'a Bump,
    /// The decoding buffer of escaped strings ([`Scratch::buf`]).
    buf: String,
}

/// Returned (and ignored) when a budget stops the parse; `Parser::over` says which.
const STOPPED: JsonError = JsonError {
    message: "budget exceeded",
    offset: 0,
};

#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'a> Parser<'a> {
    fn err(&self, message: &'static str, offset: usize) -> JsonError {
        JsonError { message, offset }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        let start = self.i;
        while let Some(c) = self.peek() {
            if !is_ws(c) {
                break;
            }
            self.i += 1;
        }
        if self.i != start && self.depth > 0 {
            self.canon = false;
        }
    }

    /// Record a failed reservation; the parse stops (`STOPPED`) and reports it.
    #[cold]
    fn out_of_memory(&mut self, e: OutOfMemory) -> JsonError {
        self.oom = Some(e);
        STOPPED
    }

    /// Count one node (a container, string or scalar token), as the lexical scan does.
    #[inline]
    fn node(&mut self) -> Result<(), JsonError> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            self.over = Some(Over::Nodes);
            return Err(STOPPED);
        }
        Ok(())
    }

    /// The whole line: one value between blanks.
    fn line(&mut self, st: &mut Stacks<'a>) -> Result<Line<'a>, Failure> {
        self.ws();
        let from = self.i;
        let mut v = Value::Null;
        let r = self.value_into(st, &mut v);
        let to = self.i;
        if let Some(e) = self.oom {
            return Err(Failure::OutOfMemory(e));
        }
        if let Some(o) = self.over {
            return Err(Failure::Over(o));
        }
        r.map_err(Failure::Syntax)?;
        self.ws();
        if self.i < self.b.len() {
            return Err(Failure::Syntax(self.err("trailing characters", self.i)));
        }
        let canonical = if self.canon {
            self.s.get(from..to)
        } else {
            None
        };
        let mut spans = std::mem::take(&mut self.spans);
        if canonical.is_some() {
            // relative to the canonical text
            for x in &mut spans {
                x.start -= from;
                x.end -= from;
            }
        } else {
            spans.clear();
        }
        Ok(Line {
            value: v,
            repairs: self.repairs,
            canonical,
            strings: spans,
        })
    }

    /// The next value, written into `slot` (in place: a returned `Value` is copied through
    /// the stack in pieces on its way into its container, stalling each store's forwarding).
    /// `slot` is not on `st`: a container's children are pushed there.
    #[inline]
    fn value_into(&mut self, st: &mut Stacks<'a>, slot: &mut Value<'a>) -> Result<(), JsonError> {
        let c = self.peek();
        if !matches!(c, Some(b'{' | b'[')) {
            return self.scalar_into(slot);
        }
        // a container is written into a slot on the stacks, as a child is, then moved here
        if let Err(e) = OutOfMemory::reserve(&mut st.items, 1) {
            return Err(self.out_of_memory(e));
        }
        let at = st.items.len();
        st.items.resize_with(at + 1, || Value::Null);
        if c == Some(b'{') {
            self.object(st, Slot::Item(at))?;
        } else {
            self.array(st, Slot::Item(at))?;
        }
        if let Some(v) = st.items.pop() {
            fill(slot, v);
        }
        Ok(())
    }

    /// A value that is not a container, written into `slot`.
    #[inline]
    fn scalar_into(&mut self, slot: &mut Value<'a>) -> Result<(), JsonError> {
        // a node is counted where the lexical scan counts one: a string, or any byte that is not
        // a delimiter (containers are counted in `enter`), before the value is read
        let c = self.peek();
        if c == Some(b'"') {
            // the most frequent scalar tested first: a compare, not the table's indirect jump
            self.node()?;
            return self.string_into(slot, Value::Str);
        }
        match c {
            None => Err(self.err("unexpected end of input", self.i)),
            Some(b'-' | b'0'..=b'9') => {
                self.node()?;
                self.number_into(slot)
            }
            Some(b't' | b'f' | b'n') => {
                self.node()?;
                self.literal_into(slot)
            }
            Some(b']' | b'}' | b',' | b':') => Err(self.err("expected value", self.i)),
            Some(_) => {
                self.node()?;
                Err(self.err("expected value", self.i))
            }
        }
    }

    /// A literal, written into `slot` (a scalar's value is written in place: returned as a
    /// `Result<Value, _>`, it was copied out of the callee's frame with loads over smaller
    /// stores, a store-forwarding stall per number or literal).
    #[inline(always)]
    fn literal_into(&mut self, slot: &mut Value<'a>) -> Result<(), JsonError> {
        let rest = self.b.get(self.i..).unwrap_or_default();
        for (word, v) in [
            (&b"true"[..], Value::Bool(true)),
            (b"false", Value::Bool(false)),
            (b"null", Value::Null),
        ] {
            if rest.starts_with(word) {
                self.i += word.len();
                fill(slot, v);
                return Ok(());
            }
        }
        Err(self.err("invalid literal", self.i))
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, written into `slot` (as [`Parser::literal_into`]).
    #[inline(always)]
    fn number_into(&mut self, slot: &mut Value<'a>) -> Result<(), JsonError> {
        let start = self.i;
        let bad = |p: &Self| p.err("invalid number", start);
        let neg = self.peek() == Some(b'-');
        if neg {
            self.i += 1;
        }
        // the integer part, its value accumulated on the way (exact for up to 18 digits)
        let int_start = self.i;
        let mut acc = 0u64;
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while let Some(&c) = self.b.get(self.i) {
                    let d = c.wrapping_sub(b'0');
                    if d > 9 {
                        break;
                    }
                    acc = acc.wrapping_mul(10).wrapping_add(u64::from(d));
                    self.i += 1;
                }
            }
            _ => return Err(bad(self)),
        }
        let digits = self.i - int_start;
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(bad(self));
            }
            is_float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(bad(self));
            }
            is_float = true;
        }
        if !is_float && digits <= 18 {
            // below 10^18 < 2^63: no overflow, and -0 is the integer 0 as in Python
            let v = acc as i64;
            if neg && v == 0 {
                self.canon = false;
            }
            fill(slot, Value::Int(if neg { -v } else { v }));
            return Ok(());
        }
        let text = self.s.get(start..self.i).ok_or_else(|| bad(self))?;
        if is_float {
            let f: f64 = text.parse().map_err(|_| bad(self))?;
            if f.is_infinite() {
                return Err(self.err("number out of range", start));
            }
            if self.canon && !crate::text::float_is_repr(text, f) {
                self.canon = false;
            }
            fill(slot, Value::Float(f));
            return Ok(());
        }
        if digits > MAX_INT_DIGITS {
            return Err(self.err("number out of range", start));
        }
        fill(
            slot,
            text.parse::<i64>().map_or(Value::BigInt(text), Value::Int),
        );
        Ok(())
    }

    /// Parse a string starting at the opening quote into `dst` (`wrap` makes the slot's value:
    /// `Value::Str` for a value, the `Cow` itself for a key). A string without escapes (most
    /// of them) is one [`scan_str`] and a borrow, written straight into its slot (built
    /// apart and copied in, it went through the stack in pieces, stalling store forwarding);
    /// escapes go through [`Parser::escaped`].
    #[inline(always)]
    fn string_into<T>(
        &mut self,
        dst: &mut T,
        wrap: impl Fn(Cow<'a, str>) -> T,
    ) -> Result<(), JsonError> {
        let start = self.i;
        let at = scan_str(self.b, start + 1);
        if self.b.get(at) == Some(&b'"') {
            self.i = at + 1;
            // both ends are at a quote, a char boundary: the one-sided cuts inline (`get` of a
            // range, checking both ends, was a call per string)
            let s = self
                .s
                .split_at_checked(at)
                .and_then(|(head, _)| head.get(start + 1..))
                .unwrap_or_default();
            if s.len() >= SPAN_MIN {
                self.note_span(s, start);
            }
            fill(dst, wrap(Cow::Borrowed(s)));
            return Ok(());
        }
        let s = self.escaped(start, at)?;
        if s.len() >= SPAN_MIN {
            self.note_span(&s, start);
        }
        fill(dst, wrap(s));
        Ok(())
    }

    /// Keep where the string `s` (opening quote at `start`, closing one just before `self.i`)
    /// stands, for [`Line::strings`]. A span is an optimization: none is kept when the line is
    /// already not canonical or its room cannot be had.
    #[inline(never)]
    fn note_span(&mut self, s: &str, start: usize) {
        if self.canon && self.spans.try_reserve(1).is_ok() {
            self.spans.push(StrSpan {
                ptr: s.as_ptr() as usize,
                len: s.len(),
                start,
                end: self.i,
            });
        }
    }

    /// The rest of a string from `at`, the first quote, backslash or control byte after the
    /// opening quote at `start`, decoded ([`Parser::decode`]) into the scratch buffer, then
    /// copied into the arena (decoding straight into the arena would need the string's length
    /// first, or `bumpalo`'s `collections`; the copy is about 1 % of the lean Arrow path's time).
    /// Without `unsafe` and without that feature, bytes in the arena are a `str` only through
    /// a copy of a `str` or a UTF-8 check: any arena buffer decoded into as bytes must be
    /// initialised, then checked, which costs what the copy does (claude's escaped strings are
    /// few and long, ~1,700 of 4 KB a 8 MB corpus, so the copy runs at memcpy's speed).
    #[inline(never)]
    fn escaped(&mut self, start: usize, at: usize) -> Result<Cow<'a, str>, JsonError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let r = self.decode(start, at, &mut buf);
        let out = match r {
            Ok(()) => match self.bump.try_alloc_str(&buf) {
                Ok(s) => Ok(Cow::Borrowed(&*s)),
                Err(_) => Err(self.out_of_memory(OutOfMemory {
                    requested: buf.len(),
                })),
            },
            Err(e) => Err(e),
        };
        self.buf = buf;
        out
    }

    /// [`Parser::escaped`]'s decoding, appended to `buf` (empty): the runs of plain bytes
    /// between escapes are pushed as the `&str` slices of the line they are (both ends at an
    /// ASCII byte, so at char boundaries), each escape as its `char`, so the result is a `str`
    /// as built, with no UTF-8 check over it. Decoding into bytes (16-byte block copies) and
    /// then checking them with `simdutf8` cost fewer instructions but more time (claude corpus,
    /// `parse` path, task-clock of 10 rounds: 87-90 ms against 84-86 ms here, the check
    /// 5-6 % of the path's time). The runs are pushed by [`push_run`] in 16-byte blocks cut
    /// back to the run's end (a `memcpy` call per run was 4-5 % of the parse's time). Tried and
    /// dropped: keeping the special bytes of the current 8-byte window as an exact SWAR mask,
    /// so that the next special byte after a short run is a mask and a `trailing_zeros`
    /// without a load at the run's start (shorter dependency chain per escape): more
    /// instructions (10.6 -> 12.0 a byte on claude) and 3-10 % more time, the window missing
    /// too often. `buf` gets room for the rest of the line first (a string decodes to no more
    /// bytes than its text has), so pushing never reallocates: it grows about once per
    /// stream, and an allocation failure is an `OutOfMemory`.
    ///
    /// Also tried and dropped (issue 20, before [`block_first`]'s SSE2 mask, against the portable
    /// search; core_bench `parse`, task-clock of 10 rounds, medians of 5-11 interleaved pairs,
    /// load 1.5-2.5, base 75-79 ms on claude and mixed):
    /// * memchr's SSE2 `Two` (`"`, `\\`; safe, inlined) for each run after an escape, the
    ///   string's control bytes checked afterwards (a vector `min` per 64 bytes; any control,
    ///   or any error, decoded again here): claude 77.1 -> 83.3 ms, mixed 76.2 -> 82.7; the
    ///   search alone (control check left out) 80.4: most runs are shorter than its first
    ///   16-byte vector, and the claude runs are 0 (17 %), 1-7 (46 %), 8-63 bytes (36 %).
    ///   memchr only past the first word (runs of 8+), the run checked for controls: 78.5 ->
    ///   87.0. With a byte buffer: 82.7 against 75.9.
    /// * a `Vec<u8>` buffer (the 16-byte blocks cut back with no char-boundary read of the
    ///   bytes just stored), made a `str` by `simdutf8`: claude 75.9 -> 77.9, mixed 76.2 ->
    ///   78.9: the check costs more than the read. The 14 % of `escaped`'s samples at that read
    ///   (`truncate`'s assert) stay with an 8-byte first push (a GPR store, not a 16-byte
    ///   one): they look like the source word's load showing at its first consumer; that
    ///   variant was within noise (claude 76.0 -> 76.4 ms in 11 pairs, mixed 79.2 -> 77.4).
    /// * 8-byte words walked by an exact SWAR mask, lowest special first, each escape
    ///   clearing its bytes (the next special a `trailing_zeros`, no load per run): 75.3 ->
    ///   91.6 (no PMU counters in this VM to tell why; it is more work per plain word than the
    ///   block test).
    /// * `first_special` branch-free (`u128` `trailing_zeros`, a `cmov`): 75.1 -> 75.2; every
    ///   run through one branch-free 16-byte block (no first-word test): 79.8 -> 81.4; the
    ///   block's 16-bit mask gathered from `[u8; 16]` flags by a multiply per half: LLVM
    ///   calls `array::map`'s `try_map` out of line or scalarizes the flags (+33 %).
    /// * [`Parser::u_escape`] inlined (5 % of claude's escapes are `\\u`): 0.6-1.7 % faster
    ///   (claude best-of-9 parse 1223 -> 1244 MB/s, mixed 1303 -> 1321, medians of 5 pairs),
    ///   under the 2 % bar for landing a speed change; with the 8-byte first push, no better.
    /// * with the SSE2 mask (exact, unlike the SWAR one): the block's mask kept across the
    ///   escapes it holds, the next special byte taken from it with no load and compare (the
    ///   run pushed as one block cut back): claude 73.3 -> 76.9 ms, mixed 71.6 -> 75.2 (medians
    ///   of 6 pairs, load 3-4): the extra branches cost more than the compare they save.
    /// * 64-byte chunks (stop 38): the chunk's `"`, `\\`, control, escape-letter and `u` masks
    ///   (SSE2), the escaped bytes by simdjson's odd-backslash carry, the string's end and its
    ///   validity found with no step per escape, then the runs between escapes copied by the
    ///   escapes' bits (no search). Into this `String` (runs pushed as 16-byte blocks cut back):
    ///   `core_bench` parse claude 1,265 -> 1,024-1,054 MB/s (best of 7, alternating runs;
    ///   `truncate`'s char-boundary read of the bytes just stored took 15 % of the samples);
    ///   into a byte buffer (32 bytes copied whatever the run's length), then `simdutf8`: 1,316
    ///   -> 1,095-1,111 (the check alone 11 % of the path), std's check 1,095-1,144. The same
    ///   scan *without decoding* (the string left as its escaped text, not a correct tree)
    ///   parses claude at 1,850-1,915 MB/s: decoding, not finding the escapes, is what costs,
    ///   and that bound is what `README.md`'s issue-20 section measures.
    fn decode(&mut self, start: usize, at: usize, buf: &mut String) -> Result<(), JsonError> {
        let b = self.b;
        let s = self.s;
        let need = b.len().saturating_sub(start);
        if buf.capacity() < need {
            self.room(buf, need)?;
        }
        let unterminated = JsonError {
            message: "unterminated string",
            offset: start,
        };
        buf.push_str(s.get(start + 1..at).unwrap_or_default());
        let mut i = at;
        loop {
            match b.get(i) {
                Some(b'\\') => {}
                Some(b'"') => {
                    self.i = i + 1;
                    return Ok(());
                }
                None => return Err(unterminated),
                Some(_) => return Err(self.err("control character in string", i)),
            }
            let Some(&e) = b.get(i + 1) else {
                return Err(unterminated);
            };
            let short = short_escape(e);
            if short != 0 {
                buf.push(char::from(short));
                i += 2;
            } else if e == b'u' {
                let (next, ch) = self.u_escape(i)?;
                buf.push(ch);
                i = next;
            } else if e == b'/' {
                buf.push('/');
                i += 2;
                self.canon = false;
            } else {
                return Err(JsonError {
                    message: "invalid escape",
                    offset: i,
                });
            }
            // an escape right after the escape (a sixth of the runs after an escape in claude's
            // content are empty): no block scanned or pushed, no wait on a block's mask
            if b.get(i) == Some(&b'\\') {
                continue;
            }
            i = push_run(buf, s, i);
        }
    }

    /// Room for `need` bytes in `buf` (empty).
    #[cold]
    #[inline(never)]
    fn room(&mut self, buf: &mut String, need: usize) -> Result<(), JsonError> {
        OutOfMemory::reserve_str(buf, need).map_err(|e| self.out_of_memory(e))
    }

    /// The char of the `\\uXXXX` escape at `at` (a surrogate pair is one char, a lone
    /// surrogate U+FFFD, counted) and the index after it in the line.
    #[inline(never)]
    fn u_escape(&mut self, at: usize) -> Result<(usize, char), JsonError> {
        let Some(c) = hex4(self.b, at + 2) else {
            return Err(JsonError {
                message: "invalid \\u escape",
                offset: at,
            });
        };
        let mut i = at + 6;
        if self.canon && !is_written_u_escape(self.b.get(at..i), c) {
            self.canon = false;
        }
        let ch = if (0xD800..0xDC00).contains(&c) {
            // a high surrogate joins a following low-surrogate escape
            let low = (self.b.get(i) == Some(&b'\\') && self.b.get(i + 1) == Some(&b'u'))
                .then(|| hex4(self.b, i + 2))
                .flatten()
                .filter(|l| (0xDC00..0xE000).contains(l));
            if let Some(l) = low {
                let cp = 0x10000 + ((c - 0xD800) << 10) + (l - 0xDC00);
                i += 6;
                char::from_u32(cp).unwrap_or('\u{FFFD}')
            } else {
                self.repairs += 1;
                '\u{FFFD}'
            }
        } else if let Some(ch) = char::from_u32(c) {
            ch
        } else {
            self.repairs += 1; // a lone low surrogate
            '\u{FFFD}'
        };
        Ok((i, ch))
    }

    fn enter(&mut self) -> Result<(), JsonError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            self.over = Some(Over::Depth);
            return Err(STOPPED);
        }
        self.node()?;
        self.i += 1;
        self.ws();
        Ok(())
    }

    /// The next element of an array (or object value) whose slot is `slot`: a container is
    /// parsed onto the stacks above it, then written into the slot.
    #[inline(always)]
    fn child(&mut self, st: &mut Stacks<'a>, slot: Slot) -> Result<(), JsonError> {
        match self.peek() {
            Some(b'{') => self.object(st, slot),
            Some(b'[') => self.array(st, slot),
            _ => match slot.get(st) {
                Some(s) => self.scalar_into(s),
                None => Err(self.err("expected value", self.i)),
            },
        }
    }

    /// An array, written into `slot` (in place, as a scalar: a container returned as a
    /// `Result<Value, _>` was copied out of the callee's frame with 16-byte loads over its
    /// 8-byte stores, a store-forwarding stall per container: 20 % of `object`'s samples).
    fn array(&mut self, st: &mut Stacks<'a>, slot: Slot) -> Result<(), JsonError> {
        self.enter()?;
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            if let Some(s) = slot.get(st) {
                fill(s, Value::Array(Nodes::Borrowed(&[])));
            }
            return Ok(());
        }
        let base = st.items.len();
        loop {
            self.ws();
            if let Err(e) = OutOfMemory::reserve(&mut st.items, 1) {
                return Err(self.out_of_memory(e));
            }
            // `resize_with`, not `push`: `push` built the constant on the stack and copied it in
            // with 16-byte loads over its 8-byte stores, a store-forwarding stall per element
            let at = st.items.len();
            st.items.resize_with(at + 1, || Value::Null);
            self.child(st, Slot::Item(at))?;
            self.ws();
            match self.peek() {
                None => return Err(self.err("unexpected end of input", self.i)),
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    let n = st.items.len() - base;
                    let items = self.bump.try_alloc_slice_fill_iter(st.items.drain(base..));
                    return match items {
                        Ok(items) => {
                            if let Some(s) = slot.get(st) {
                                fill(s, Value::Array(Nodes::Borrowed(items)));
                            }
                            Ok(())
                        }
                        Err(_) => Err(self.out_of_memory(OutOfMemory {
                            requested: n.saturating_mul(std::mem::size_of::<Value<'_>>()),
                        })),
                    };
                }
                Some(b',') => self.i += 1,
                Some(_) => return Err(self.err("expected ',' or ']'", self.i)),
            }
        }
    }

    /// An object, written into `slot` (as [`Parser::array`]).
    fn object(&mut self, st: &mut Stacks<'a>, slot: Slot) -> Result<(), JsonError> {
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            if let Some(s) = slot.get(st) {
                fill(s, Value::Object(Nodes::Borrowed(&[])));
            }
            return Ok(());
        }
        let base = st.pairs.len();
        loop {
            self.ws();
            match self.peek() {
                None => return Err(self.err("unexpected end of input", self.i)),
                Some(b'"') => {}
                Some(_) => return Err(self.err("expected string key", self.i)),
            }
            self.node()?;
            if let Err(e) = OutOfMemory::reserve(&mut st.pairs, 1) {
                return Err(self.out_of_memory(e));
            }
            let at = st.pairs.len();
            st.pairs
                .resize_with(at + 1, || (Cow::Borrowed(""), Value::Null));
            let Some((key, _)) = st.pairs.last_mut() else {
                return Err(self.err("expected string key", self.i));
            };
            self.string_into(key, |k| k)?;
            self.ws();
            match self.peek() {
                None => return Err(self.err("unexpected end of input", self.i)),
                Some(b':') => self.i += 1,
                Some(_) => return Err(self.err("expected ':'", self.i)),
            }
            self.ws();
            self.child(st, Slot::Pair(at))?;
            self.ws();
            match self.peek() {
                None => return Err(self.err("unexpected end of input", self.i)),
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    let pairs = st.pairs.get(base..).unwrap_or_default();
                    if self.canon && crate::value::has_duplicate_keys(pairs) {
                        self.canon = false;
                    }
                    let n = pairs.len();
                    let pairs = self.bump.try_alloc_slice_fill_iter(st.pairs.drain(base..));
                    return match pairs {
                        Ok(pairs) => {
                            if let Some(s) = slot.get(st) {
                                fill(s, Value::Object(Nodes::Borrowed(pairs)));
                            }
                            Ok(())
                        }
                        Err(_) => Err(self.out_of_memory(OutOfMemory {
                            requested: n.saturating_mul(std::mem::size_of::<Pair<'_>>()),
                        })),
                    };
                }
                Some(b',') => self.i += 1,
                Some(_) => return Err(self.err("expected ',' or '}'", self.i)),
            }
        }
    }
}

/// Write `v` into `slot`, a placeholder the parser made (`Value::Null`, or a key's empty
/// borrowed string), which owns nothing: the old value is not dropped (an assignment called
/// `drop_in_place` on it, out of line, at every value: 2 % of the parse's instructions).
#[inline(always)]
fn fill<T>(slot: &mut T, v: T) {
    std::mem::forget(std::mem::replace(slot, v));
}

/// `esc` (a `\\uXXXX` escape of `c`) is the one the writer makes: `c` a control byte without
/// a short form, in lowercase hex.
fn is_written_u_escape(esc: Option<&[u8]>, c: u32) -> bool {
    let Ok(b) = u8::try_from(c) else {
        return false;
    };
    if b >= 0x20 || matches!(b, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
        return false;
    }
    let mut want = *b"\\u00xx";
    let hex = b"0123456789abcdef";
    want[4] = hex.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
    want[5] = hex.get(usize::from(b & 0xf)).copied().unwrap_or(b'0');
    esc == Some(&want[..])
}

/// Bytes that end the unescaped run of a string: `"`, `\\` and the control bytes.
#[inline(always)]
fn special(c: u8) -> bool {
    (c == b'"') | (c == b'\\') | (c < 0x20)
}

/// The char of each short escape (`\"` `\\` `\b` `\f` `\n` `\r` `\t`) by the byte after the
/// backslash, 0 for the others (`\/` and `\u` are handled apart: `/` is not canonical).
#[inline(always)]
fn short_escape(e: u8) -> u8 {
    SHORT_ESCAPES.get(usize::from(e)).copied().unwrap_or(0)
}

/// [`short_escape`]'s table (a `match` was a jump table: 7 instructions an escape).
#[allow(clippy::indexing_slicing)]
static SHORT_ESCAPES: [u8; 256] = {
    let mut t = [0; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0c;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

/// Width of one step of [`scan_str`]: a 16-byte block is one SSE2 register (x86-64's baseline).
const BLOCK: usize = 16;

/// The index in `block` of its first special byte (`"`, `\\` or a control byte), `BLOCK` if
/// none: the block's mask ([`crate::scan::mask16`]: SSE2 on x86-64) and a `trailing_zeros`.
/// Testing a string's first 8 bytes as a SWAR word before the block (the shortcut of the
/// portable search this replaced, for keys and short runs) no longer paid (73.4 / 72.9 ms
/// against 72.3 / 72.7 on claude / mixed, `core_bench` parse).
#[inline(always)]
fn block_first(block: &[u8; BLOCK]) -> usize {
    (u32::from(crate::scan::mask16(block)) | 1 << BLOCK).trailing_zeros() as usize
}

/// The index of the first `"`, `\\` or control byte in `b` at or after `i` (`b.len()` if none):
/// 16-byte blocks ([`block_first`]), then the last bytes of the line byte by byte.
#[inline]
fn scan_str(b: &[u8], i: usize) -> usize {
    run_end(b, i)
}

/// [`scan_str`], always inlined (the decoding loop of escaped strings: a call per run cost
/// 3-4 % there).
#[inline(always)]
fn run_end(b: &[u8], mut i: usize) -> usize {
    while let Some(block) = b.get(i..i + BLOCK) {
        let Ok(block) = <&[u8; BLOCK]>::try_from(block) else {
            break;
        };
        let k = block_first(block);
        if k < BLOCK {
            return i + k;
        }
        i += BLOCK;
    }
    while let Some(&c) = b.get(i) {
        if special(c) {
            return i;
        }
        i += 1;
    }
    i
}

/// Push onto `buf` the run of plain bytes of `s` from `i` (just after an escape, so at a char
/// boundary) to the next `"`, `\\` or control byte, and return that byte's index. The run is
/// copied 16 bytes at a time, each block pushed whole (one 16-byte move) and the last one cut
/// back to the special byte (an ASCII byte, so a char boundary): no `memcpy` call per run, whose
/// length (0 to 40 bytes for most runs on claude's content) took a branch on its size each time.
/// A block that would end inside a char, and the line's last bytes, go through [`run_end`].
/// `buf` needs room for 16 bytes beyond the decoded string (it has the rest of the line's).
#[inline(always)]
fn push_run(buf: &mut String, s: &str, mut i: usize) -> usize {
    while let Some(chunk) = s.get(i..i + BLOCK) {
        let Ok(block) = <&[u8; BLOCK]>::try_from(chunk.as_bytes()) else {
            break;
        };
        let len = buf.len();
        buf.push_str(chunk);
        let k = block_first(block);
        if k < BLOCK {
            if buf.is_char_boundary(len + k) {
                buf.truncate(len + k);
                return i + k;
            }
            // not reached (the byte at `k` is ASCII): the block taken back (`len`, the old
            // length, is a char boundary), the run scanned
            buf.truncate(len);
            break;
        }
        i += BLOCK;
    }
    let j = run_end(s.as_bytes(), i);
    buf.push_str(s.get(i..j).unwrap_or_default());
    j
}

/// The end (exclusive) of a JSON value of canonical text `b` ([`Line::canonical`]: no blank,
/// no raw control byte), scanned from `i`, where `depth` containers are already open: with
/// `depth` 0, `i` must be at a `"`, `{` or `[` (the value's first byte); with `depth` > 0 the
/// scan stops after the bracket that closes the last of them. Strings are skipped with
/// [`scan_str`], so a long string costs a block scan, not a byte loop. `None` when `b` ends
/// first (or `i` is at no such value). The writers use it to find the JSON text of a value of a
/// canonical line ([`crate::normalize::LineEvents::value_json`]).
pub fn skip_json(b: &[u8], mut i: usize, mut depth: usize) -> Option<usize> {
    if depth == 0 && !matches!(b.get(i)?, b'"' | b'{' | b'[') {
        return None;
    }
    loop {
        match *b.get(i)? {
            b'"' => {
                let mut j = i + 1;
                loop {
                    j = scan_str(b, j);
                    match *b.get(j)? {
                        b'"' => break,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                }
                i = j + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ => i += 1,
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

/// The value of the 4 hex digits at `at` (either case), from a table (`to_digit` per digit
/// was ~60 instructions a `\u` escape).
#[inline]
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    let mut bad = 0u8;
    for &d in digits {
        let h = HEX_VALUES.get(usize::from(d)).copied().unwrap_or(NOT_HEX);
        bad |= h;
        v = (v << 4) | u32::from(h & 0xf);
    }
    (bad & NOT_HEX == 0).then_some(v)
}

/// [`hex4`]'s table: each hex digit's value, [`NOT_HEX`] for the other bytes.
#[allow(clippy::indexing_slicing)]
static HEX_VALUES: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

const NOT_HEX: u8 = 0x80;

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> (&'static str, usize) {
        let e = parse(s).err().map(|e| (e.message, e.offset));
        e.unwrap_or(("ok", 0))
    }

    #[test]
    fn canonical_lines_keep_their_long_strings() {
        let long = "x".repeat(70);
        let esc = format!("{long}\\n\\\"é");
        let text = format!(r#"{{"a":"{long}","b":["{esc}","short"],"{long}":1}}"#);
        let bump = Bump::new();
        let mut scratch = Scratch::default();
        let line = parse_line_in(&text, &bump, &mut scratch, 64, 1000, true);
        // parsed on its own, the tree owns the escaped string's copy: its span is left out
        let detached = parse_line(&text, 64, 1000).map(|l| l.strings.len());
        assert_eq!(detached, Ok(2));
        let Ok(Line {
            value,
            canonical: Some(json),
            strings,
            ..
        }) = &line
        else {
            panic!("not canonical: {line:?}");
        };
        // every long string of the value, keys included, found with its exact written JSON
        let mut found = 0;
        let mut check = |s: &str| {
            if s.len() >= SPAN_MIN {
                let mut want = Vec::new();
                crate::text::write_str(&mut want, s);
                assert_eq!(
                    StrSpan::find(strings, json, s).map(str::as_bytes),
                    Some(&want[..])
                );
                found += 1;
            }
        };
        if let Value::Object(pairs) = value {
            for (k, v) in pairs.iter() {
                check(k);
                match v {
                    Value::Str(s) => check(s),
                    Value::Array(items) => {
                        for i in items {
                            if let Value::Str(s) = i {
                                check(s);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        assert_eq!((found, strings.len()), (3, 3));
        // a copy of a string elsewhere is not the string: no span
        assert_eq!(StrSpan::find(strings, json, &long.clone()), None);
        // a line the writer would write differently keeps none
        let spaced = format!(r#"{{"a": "{long}"}}"#);
        let l = parse_line(&spaced, 64, 1000).ok();
        assert_eq!(
            l.map(|l| (l.canonical.is_none(), l.strings.len())),
            Some((true, 0))
        );
    }

    /// The arena's tree and the detached one are the same value; the arena keeps every node
    /// (nothing owned, so nothing is left undropped in it); the stacks keep their room from line
    /// to line; an arena that cannot grow is an `OutOfMemory`, not an abort.
    #[test]
    fn arena_trees_borrow_everything() {
        let text = r#"{"a":[1,{"b":"x\ny","c":[],"d":{}},"\u00e9",[[true]]],"e":"plain","a":null}"#;
        let bump = Bump::new();
        let mut scratch = Scratch::default();
        let line = parse_line_in(text, &bump, &mut scratch, 64, 1000, true);
        let Ok(line) = line else {
            panic!("{line:?}");
        };
        assert_eq!(Ok(&line.value), parse(text).as_ref().map(|p| &p.0));
        fn borrowed(v: &Value<'_>) -> bool {
            match v {
                Value::Str(s) => matches!(s, Cow::Borrowed(_)),
                Value::Array(items) => {
                    matches!(items, Nodes::Borrowed(_)) && items.iter().all(borrowed)
                }
                Value::Object(pairs) => {
                    matches!(pairs, Nodes::Borrowed(_))
                        && pairs
                            .iter()
                            .all(|(k, v)| matches!(k, Cow::Borrowed(_)) && borrowed(v))
                }
                _ => true,
            }
        }
        assert!(borrowed(&line.value));
        assert_eq!(line.value.get("a"), Some(&Value::Null));
        assert!(line.canonical.is_none(), "a repeated key");
        assert!(scratch.items.capacity() > 0 && scratch.pairs.capacity() > 0);
        assert!(scratch.items.is_empty() && scratch.pairs.is_empty());
        // a syntax error inside containers leaves the stacks empty for the next line
        let bad = r#"{"a":[1,{"b":[2,"#;
        let e = parse_line_in(bad, &bump, &mut scratch, 64, 1000, true).map(|l| l.value);
        assert!(matches!(e, Err(Failure::Syntax(_))));
        assert!(scratch.items.is_empty() && scratch.pairs.is_empty());
        // an arena that may not grow
        let small = Bump::new();
        small.set_allocation_limit(Some(0));
        let big = format!("[{}]", vec!["\"x\\ny\""; 100].join(","));
        let r = parse_line_in(&big, &small, &mut scratch, 64, 1000, true).map(|l| l.value);
        assert!(matches!(r, Err(Failure::OutOfMemory(_))), "{r:?}");
    }

    #[test]
    fn accepts_values() {
        assert_eq!(
            parse("[1, -0, 2.5, \"a\\u00e9\", true, null]").map(|p| p.1),
            Ok(0)
        );
        assert_eq!(
            parse("123456789012345678901234567890").map(|p| p.0),
            Ok(Value::BigInt("123456789012345678901234567890"))
        );
        assert_eq!(
            parse("\"\\ud83d\\ude00\"").map(|p| p.0),
            Ok(Value::Str(Cow::Owned("😀".into())))
        );
    }

    #[test]
    fn repairs_lone_surrogates() {
        let (v, n) = parse("[\"\\ud800x\", \"\\udc00\", \"\\ud800\\ud800\\udc00\"]")
            .unwrap_or((Value::Null, 9));
        assert_eq!(n, 3);
        assert_eq!(v.items().get(2).and_then(Value::as_str), Some("\u{FFFD}𐀀"));
    }

    #[test]
    fn scan_finds_the_first_special_byte_anywhere() {
        // every position in and across 16-byte blocks, every kind of special byte
        for n in 0..40 {
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let mut line = vec![b'a'; n];
                line.push(special);
                line.extend_from_slice(b"\"zz\\\x01");
                assert_eq!(scan_str(&line, 0), n, "{n} {special}");
            }
            // bytes just outside the set, and UTF-8 continuation bytes, are plain
            let plain: Vec<u8> = (0..n)
                .map(|k| {
                    [0x20u8, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff]
                        .get(k % 7)
                        .copied()
                        .unwrap_or(0x20)
                })
                .collect();
            assert_eq!(scan_str(&plain, 0), n);
        }
    }

    #[test]
    fn escapes_decode_at_every_offset() {
        // each escape (and a raw multi-byte char) after runs of 0..20 bytes, so that escapes and
        // the string's end fall at every place in and across the 8-byte words: the decoded
        // string is serde_json's, and the error offsets stay where they were
        let escapes = [
            "\\n",
            "\\\"",
            "\\\\",
            "\\t",
            "\\/",
            "\\b",
            "\\f",
            "\\r",
            "\\u00e9",
            "\\u0001",
            "\\ud83d\\ude00",
            "é",
            "日本",
        ];
        for run in 0..20 {
            for (k, a) in escapes.iter().enumerate() {
                let b = escapes
                    .get((k * 7 + run) % escapes.len())
                    .copied()
                    .unwrap_or("");
                let body = format!(
                    "{}{a}{}{b}{}",
                    "x".repeat(run),
                    "y".repeat(run % 9),
                    "z".repeat(run % 3)
                );
                let text = format!("[\"{body}\",1]");
                let want: Result<serde_json::Value, _> = serde_json::from_str(&text);
                let got = parse(&text).map(|p| p.0);
                let want = want
                    .ok()
                    .and_then(|w| w.get(0).and_then(|s| s.as_str().map(String::from)));
                assert_eq!(
                    got.ok().and_then(|v| v
                        .items()
                        .first()
                        .and_then(Value::as_str)
                        .map(String::from)),
                    want,
                    "{text}"
                );
                // cut inside the string: unterminated at the opening quote
                assert_eq!(err(&format!("[\"{body}")), ("unterminated string", 1));
                assert_eq!(err(&format!("[\"{body}\\")), ("unterminated string", 1));
                // a bad escape or a control byte after the same runs
                let bad = format!("[\"{body}\\x\"]");
                assert_eq!(err(&bad), ("invalid escape", bad.len() - 4));
                let ctl = format!("[\"{body}\u{1}\"]");
                assert_eq!(err(&ctl), ("control character in string", ctl.len() - 3));
            }
        }
        assert_eq!(err("[\"ab\\u12\"]"), ("invalid \\u escape", 4));
    }

    #[test]
    fn numbers_at_the_fast_path_edges() {
        fn v(s: &str) -> Result<Value<'_>, JsonError> {
            parse(s).map(|p| p.0)
        }
        assert_eq!(v("-0"), Ok(Value::Int(0)));
        assert_eq!(
            v("999999999999999999"),
            Ok(Value::Int(999_999_999_999_999_999))
        );
        assert_eq!(
            v("-999999999999999999"),
            Ok(Value::Int(-999_999_999_999_999_999))
        );
        assert_eq!(v("9223372036854775807"), Ok(Value::Int(i64::MAX)));
        assert_eq!(v("-9223372036854775808"), Ok(Value::Int(i64::MIN)));
        assert_eq!(
            v("9223372036854775808"),
            Ok(Value::BigInt("9223372036854775808"))
        );
        assert_eq!(v("12.5e1"), Ok(Value::Float(125.0)));
        assert_eq!(v("1E2"), Ok(Value::Float(100.0)));
        assert_eq!(err("-"), ("invalid number", 0));
        assert_eq!(err("[1.]"), ("invalid number", 1));
        assert_eq!(err("[-01]"), ("expected ',' or ']'", 3));
    }

    #[test]
    fn errors_have_offsets() {
        assert_eq!(err("[1,"), ("unexpected end of input", 3));
        assert_eq!(err("{\"a\" 1}"), ("expected ':'", 5));
        assert_eq!(err("[\"a\\x\"]"), ("invalid escape", 3));
        assert_eq!(err("\"abc"), ("unterminated string", 0));
        assert_eq!(err("[NaN]"), ("expected value", 1));
        assert_eq!(err("[1e400]"), ("number out of range", 1));
        assert_eq!(err("[01]"), ("expected ',' or ']'", 2));
        assert_eq!(err("[\"a\tb\"]"), ("control character in string", 3));
        assert_eq!(err("[tru]"), ("invalid literal", 1));
        assert_eq!(err("{} x"), ("trailing characters", 3));
    }
}
