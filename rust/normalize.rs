//! The per-line pipeline and the stream engine.
//!
//! [`prepare`] turns one framed line into either a finished error/status event or a parsed value
//! (blank check, budgets, UTF-8, JSON); [`map_line`] runs the dialect. Both are pure and borrow
//! the line. [`Engine`] owns the only state a stream has: the framer, the `auto` decision, the
//! lines held until it is made and the dialect's [`Context`]. Mirrors `reference/__init__.py`.

use std::borrow::Cow;

use bumpalo::Bump;

use crate::budget::{self, Budget, OutOfMemory};
use crate::dialect::{AnyDialect, Context};
use crate::event::{status, Event, LineMeta, Text};
use crate::framing::{Framer, Span, Src, WideStream};
use crate::parse::{self, Scratch};
use crate::sniff::{sniff, tentative, AUTO_HOLD_BYTES, AUTO_HOLD_LINES, FALLBACK};
use crate::value::Value;

pub const V: &str = "events/v1";

/// What a line became before dialect mapping.
#[derive(Debug)]
pub enum Prepared<'a> {
    /// A framing, budget or parse outcome with no value (`parsed` is null).
    Fail {
        raw: Cow<'a, str>,
        event: Box<Event<'a>>,
    },
    /// A parsed line.
    Parsed {
        raw: &'a str,
        value: Value<'a>,
        repairs: usize,
        /// The value's text when the writers may copy it ([`parse::Line::canonical`]).
        canonical: Option<&'a str>,
        /// Where a canonical line's long strings stand in `canonical` ([`parse::Line::strings`]).
        strings: Vec<parse::StrSpan>,
    },
}

impl Prepared<'_> {
    pub fn raw(&self) -> &str {
        match self {
            Prepared::Fail { raw, .. } => raw,
            Prepared::Parsed { raw, .. } => raw,
        }
    }

    pub fn value(&self) -> Option<&Value<'_>> {
        match self {
            Prepared::Fail { .. } => None,
            Prepared::Parsed { value, .. } => Some(value),
        }
    }
}

/// Bytes stripped by Python's `bytes.strip()`: the blank-line test.
#[inline]
fn is_blank_byte(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

fn fail<'a>(code: &'static str, message: String) -> Event<'a> {
    crate::event::error(code, code, Cow::Owned(message), "semantic")
}

/// Drop an incomplete UTF-8 sequence at the end of a cut prefix (`_cut_utf8`).
fn cut_utf8(data: &[u8]) -> &[u8] {
    for back in 1..=data.len().min(4) {
        let Some(&b) = data.get(data.len() - back) else {
            break;
        };
        if b < 0x80 {
            return data;
        }
        if b >= 0xC0 {
            let need = if b < 0xE0 {
                2
            } else if b < 0xF0 {
                3
            } else {
                4
            };
            return if back >= need {
                data
            } else {
                data.get(..data.len() - back).unwrap_or_default()
            };
        }
    }
    data
}

/// Check and parse one framed line; `None` for a blank line. [`OutOfMemory`] when the parse
/// tree of the line could not be allocated (the Python layer raises `MemoryError`). The tree
/// owns its containers ([`parse::parse_line_with`]): for the lines looked at once (the `auto`
/// decision, a file's resume point); the streams use [`prepare_in`].
pub fn prepare<'a>(
    data: &'a [u8],
    total: Option<u64>,
    budget: &Budget,
) -> Result<Option<Prepared<'a>>, OutOfMemory> {
    prepare_by(data, total, budget, |text, depth, nodes| {
        parse::parse_line_with(text, depth, nodes, true)
    })
}

/// [`prepare`] with the tree in `bump` ([`parse::parse_line_in`]: no node allocated or freed on
/// its own), finding the line's canonical text only when `canonical` (an output that never
/// copies `parsed` from the line says no).
pub fn prepare_in<'a>(
    data: &'a [u8],
    total: Option<u64>,
    budget: &Budget,
    canonical: bool,
    bump: &'a Bump,
    scratch: &mut Scratch,
) -> Result<Option<Prepared<'a>>, OutOfMemory> {
    prepare_by(data, total, budget, |text, depth, nodes| {
        parse::parse_line_in(text, bump, scratch, depth, nodes, canonical)
    })
}

/// The prepared line of `text` and its parse `l`.
#[inline(always)]
fn parsed<'a>(text: &'a str, l: parse::Line<'a>) -> Prepared<'a> {
    Prepared::Parsed {
        raw: text,
        value: l.value,
        repairs: l.repairs,
        canonical: l.canonical,
        strings: l.strings,
    }
}

/// [`prepare`], the line's text parsed by `parse` (text, max depth, max nodes).
#[inline(always)]
fn prepare_by<'a>(
    data: &'a [u8],
    total: Option<u64>,
    budget: &Budget,
    mut parse: impl FnMut(&'a str, usize, usize) -> Result<parse::Line<'a>, parse::Failure>,
) -> Result<Option<Prepared<'a>>, OutOfMemory> {
    if let Some(total) = total {
        let raw = String::from_utf8_lossy(cut_utf8(data));
        let message = format!(
            "line of {total} bytes exceeds max_line_bytes ({}); raw holds its first {} bytes",
            budget.max_line_bytes,
            raw.len()
        );
        let mut event = fail("line_too_long", message);
        event.line_bytes = Some(total);
        return Ok(Some(Prepared::Fail {
            raw,
            event: Box::new(event),
        }));
    }
    let Some(first) = data.iter().position(|&c| !is_blank_byte(c)) else {
        return Ok(None);
    };
    let text = match simdutf8::compat::from_utf8(data) {
        Ok(t) => t,
        Err(e) => {
            let message = format!("invalid UTF-8 at byte {}", e.valid_up_to());
            return Ok(Some(Prepared::Fail {
                raw: String::from_utf8_lossy(data),
                event: Box::new(fail("invalid_utf8", message)),
            }));
        }
    };
    if matches!(data.get(first), Some(b'{' | b'[')) {
        let over = |over: budget::Over| {
            let message = match over {
                budget::Over::Depth => {
                    format!("nesting depth exceeds max_depth ({})", budget.max_depth)
                }
                budget::Over::Nodes => {
                    format!("node count exceeds max_nodes ({})", budget.max_nodes)
                }
            };
            Prepared::Fail {
                raw: Cow::Borrowed(text),
                event: Box::new(fail(over.code(), message)),
            }
        };
        return Ok(Some(
            match parse(text, budget.max_depth, budget.max_nodes) {
                Ok(l) => parsed(text, l),
                Err(parse::Failure::OutOfMemory(e)) => return Err(e),
                Err(parse::Failure::Over(o)) => over(o),
                // a later budget crossing still wins over the syntax error (lexical scan semantics)
                Err(parse::Failure::Syntax(e)) => {
                    match budget::scan(data, budget.max_depth, budget.max_nodes) {
                        Some(o) => over(o),
                        None => {
                            let message = format!("{} at column {}", e.message, e.offset + 1);
                            Prepared::Fail {
                                raw: Cow::Borrowed(text),
                                event: Box::new(fail("invalid_json", message)),
                            }
                        }
                    }
                }
            },
        ));
    }
    // a scalar line: one node, no depth; only a long escaped string allocates
    Ok(Some(match parse(text, parse::HARD_DEPTH, usize::MAX) {
        Ok(l) => parsed(text, l),
        Err(parse::Failure::OutOfMemory(e)) => return Err(e),
        Err(_) => Prepared::Fail {
            raw: Cow::Borrowed(text),
            event: Box::new(status("non_json", Some(Cow::Borrowed(text)))),
        },
    }))
}

/// `collapse_junk` (docs/events.md, "Collapsed junk"): of a run of consecutive lines that are
/// not JSON objects (blank lines aside), only the first line of each kind gives its event:
/// `status/non_json`, a JSON scalar's `status/unknown`, and each framing error
/// (`invalid_json`, `invalid_utf8`, `line_too_long`, `too_deep`, `too_many_nodes`). The
/// others are counted in [`Collapse::collapsed`]. A line that is a JSON object ends the run.
/// A flood of junk then costs the framing and a look at each line, not an event per line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collapse {
    /// The kinds the current run has given an event for (bits of [`Collapse::kind`]).
    seen: u8,
    /// Lines whose events were left out.
    pub collapsed: u64,
}

impl Collapse {
    const NON_JSON: u8 = 1;

    /// The junk kind of a prepared line (`None`: a JSON object, which ends a run).
    fn kind(p: &Prepared<'_>) -> Option<u8> {
        match p {
            Prepared::Parsed { value, .. } => (!value.is_object()).then_some(1 << 7),
            Prepared::Fail { event, .. } => Some(match event.subtype.as_ref() {
                "non_json" => Self::NON_JSON,
                "invalid_json" => 1 << 1,
                "invalid_utf8" => 1 << 2,
                "line_too_long" => 1 << 3,
                "too_deep" => 1 << 4,
                "too_many_nodes" => 1 << 5,
                _ => 1 << 6,
            }),
        }
    }

    /// Whether the prepared line `p` gives its events (else it is counted as collapsed).
    pub fn keep(&mut self, p: &Prepared<'_>) -> bool {
        match Self::kind(p) {
            None => {
                self.seen = 0;
                true
            }
            Some(k) if self.seen & k != 0 => {
                self.collapsed += 1;
                false
            }
            Some(k) => {
                self.seen |= k;
                true
            }
        }
    }

    /// Whether a line is surely one more `non_json` line of a run that already gave one (its
    /// first non-blank byte is ASCII and starts no JSON value, and it is UTF-8): left out
    /// without being prepared. Exactly what [`prepare`] then [`Collapse::keep`] would decide.
    pub fn skip(&mut self, data: &[u8], total: Option<u64>) -> bool {
        if self.seen & Self::NON_JSON == 0 || total.is_some() {
            return false;
        }
        let Some(&first) = data.iter().find(|&&c| !is_blank_byte(c)) else {
            return false; // blank: prepare gives nothing, the run goes on
        };
        let junk = first.is_ascii()
            && !matches!(
                first,
                b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
            )
            && simdutf8::basic::from_utf8(data).is_ok();
        if junk {
            self.collapsed += 1;
        }
        junk
    }
}

/// One line's events with everything the output needs.
#[derive(Debug)]
pub struct LineEvents<'v> {
    pub position: u64,
    /// The line's length in the input, in bytes (without its LF): `lineBytes` of a projection.
    pub size: u64,
    pub dialect: &'static str,
    pub raw: &'v str,
    pub parsed: Option<&'v Value<'v>>,
    /// `parsed` as the writers would write it, when the line already is that text.
    pub parsed_text: Option<&'v str>,
    /// With `parsed_text`: where the line's long strings stand in it ([`LineEvents::string_json`]).
    pub strings: &'v [parse::StrSpan],
    pub meta: LineMeta<'v>,
    pub repairs: usize,
    pub events: Vec<Event<'v>>,
}

impl LineEvents<'_> {
    /// The JSON text of `s`, a string of `parsed`, copied from the line when the line is
    /// canonical and `s` is one of its long strings ([`parse::Line::strings`]): exactly what
    /// `text::write_str(s)` would write.
    pub fn string_json(&self, s: &str) -> Option<&str> {
        parse::StrSpan::find(self.strings, self.parsed_text?, s)
    }

    /// The JSON text of `v`, a value of `parsed` (a node of its tree: a `&'v Value` a dialect
    /// took from the line, never a value built apart; [`crate::fields::Val::Args`]), copied from
    /// the line when the line is canonical: exactly what `jsonl::write_value(v)` would write.
    /// The value's first byte is found from the first string it holds (a key or an item, whose
    /// bytes the parser borrowed from the line, or a long string's [`parse::StrSpan`]), its
    /// end from the last one, or by [`parse::skip_json`] from there; `None` when neither can be
    /// found (an empty object, a list of numbers: short, written again).
    pub fn value_json(&self, v: &Value<'_>) -> Option<&str> {
        let text = self.parsed_text?;
        let at = Place {
            b: text.as_bytes(),
            spans: self.strings,
        };
        let start = at.start(v)?;
        let end = match at.end(v) {
            Some(end) => end,
            None => parse::skip_json(at.b, start, 0)?,
        };
        text.get(start..end)
    }
}

/// Where the values of a canonical line stand in its text ([`LineEvents::value_json`]).
struct Place<'t> {
    b: &'t [u8],
    spans: &'t [parse::StrSpan],
}

impl Place<'_> {
    /// The offset of the opening quote of a string the parser borrowed from the line (one it
    /// unescaped lies in a buffer of its own, which cannot overlap the line's bytes).
    fn borrowed(&self, s: &str) -> Option<usize> {
        let at = (s.as_ptr() as usize).checked_sub(self.b.as_ptr() as usize)?;
        if at + s.len() >= self.b.len() {
            return None;
        }
        let at = at.checked_sub(1)?;
        (self.is(at, b'"') && self.is(at + s.len() + 1, b'"')).then_some(at)
    }

    /// The offset of the opening quote of a string of the line: borrowed, or a long one with
    /// its span.
    fn string(&self, s: &str) -> Option<usize> {
        self.borrowed(s).or_else(|| self.span(s).map(|x| x.start))
    }

    fn span(&self, s: &str) -> Option<&parse::StrSpan> {
        let key = (s.as_ptr() as usize, s.len());
        self.spans.iter().find(|x| (x.ptr, x.len) == key)
    }

    fn is(&self, at: usize, c: u8) -> bool {
        self.b.get(at) == Some(&c)
    }

    /// The offset of `v`'s first byte.
    fn start(&self, v: &Value<'_>) -> Option<usize> {
        match v {
            Value::Str(s) => self.string(s),
            Value::Object(pairs) => {
                let key = self.string(&pairs.first()?.0)?;
                let at = key.checked_sub(1)?;
                self.is(at, b'{').then_some(at)
            }
            Value::Array(items) => {
                let at = self.start(items.first()?)?.checked_sub(1)?;
                self.is(at, b'[').then_some(at)
            }
            _ => None,
        }
    }

    /// The offset just past `v`'s last byte.
    fn end(&self, v: &Value<'_>) -> Option<usize> {
        match v {
            Value::Str(s) => match self.borrowed(s) {
                Some(at) => Some(at + s.len() + 2),
                None => self.span(s).map(|x| x.end),
            },
            Value::Object(pairs) => {
                let (key, last) = pairs.last()?;
                match self.end(last) {
                    Some(end) if self.is(end, b'}') => Some(end + 1),
                    _ => parse::skip_json(self.b, self.string(key)?, 1),
                }
            }
            Value::Array(items) => {
                let last = items.last()?;
                match self.end(last) {
                    Some(end) if self.is(end, b']') => Some(end + 1),
                    _ => parse::skip_json(self.b, self.start(last)?, 1),
                }
            }
            _ => None,
        }
    }
}

fn unknown<'v>() -> Event<'v> {
    status("unknown", None)
}

/// Run the dialect over a prepared line, the stream's `ctx` first updated from it.
pub fn map_line<'v>(
    position: u64,
    size: u64,
    p: &'v Prepared<'v>,
    dialect: &AnyDialect,
    ctx: &mut Context,
) -> LineEvents<'v> {
    let mut out = LineEvents {
        position,
        size,
        dialect: dialect.name(),
        raw: p.raw(),
        parsed: p.value(),
        parsed_text: match p {
            Prepared::Parsed { canonical, .. } => *canonical,
            Prepared::Fail { .. } => None,
        },
        strings: match p {
            Prepared::Parsed { strings, .. } => strings,
            Prepared::Fail { .. } => &[],
        },
        meta: LineMeta::default(),
        repairs: 0,
        events: Vec::new(),
    };
    match p {
        // one event without spare room: a first `push` makes room for 4 (an event is ~450
        // bytes), and a group of short lines then held ~2 KiB per line
        Prepared::Fail { event, .. } => out.events = vec![event.as_ref().clone()],
        Prepared::Parsed { value, repairs, .. } => {
            out.repairs = *repairs;
            out.events.reserve_exact(1);
            if value.is_object() {
                dialect.learn(value, ctx);
                dialect.map_in(value, ctx, &mut out.events);
                crate::event::classify_tools(&mut out.events);
                out.meta = dialect.meta(value);
            }
            if out.events.is_empty() {
                out.events.push(unknown());
            }
        }
    }
    out
}

/// The fallback notice put before the held lines when no line decided the dialect.
pub fn fallback_event<'v>(held: usize, dialect: &AnyDialect) -> Event<'v> {
    let text: Text<'v> = Cow::Owned(format!(
        "no decisive line among the first {held}; normalizing as the {}-compatible shape",
        dialect.name()
    ));
    status("dialect_fallback", Some(text))
}

/// The one event of a UTF-16/UTF-32 stream (`position` 0, `parsed` null) and its `raw`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamError {
    pub raw: String,
    pub event: Event<'static>,
}

impl StreamError {
    /// The stream-level error as the one record both output paths (dicts, JSONL) write.
    pub fn record(&self, dialect: &AnyDialect) -> LineEvents<'_> {
        LineEvents {
            position: 0,
            size: self.event.stream_bytes.unwrap_or(self.raw.len() as u64),
            dialect: dialect.name(),
            raw: &self.raw,
            parsed: None,
            parsed_text: None,
            strings: &[],
            meta: LineMeta::default(),
            repairs: 0,
            events: vec![self.event.clone()],
        }
    }
}

/// The `error/stream_is_utf16` event for a stream the framer found to be UTF-16 or UTF-32.
pub fn stream_error(w: &WideStream) -> StreamError {
    let name = w.encoding.name();
    let (family, order) = name.split_at(name.len().saturating_sub(2));
    let bom = if w.bom > 0 { "BOM" } else { "no BOM" };
    let message = format!(
        "stream is {family} ({order}, {bom}); checkfu reads UTF-8 JSONL: re-encode the input as \
         UTF-8 ({} bytes skipped)",
        w.bytes
    );
    let mut event = fail("stream_is_utf16", message);
    event.encoding = Some(name);
    event.stream_bytes = Some(w.bytes);
    StreamError {
        raw: w.raw(),
        event,
    }
}

/// One line ready for mapping (with [`Engine::dialect`]): the span and, for the first line
/// after an `auto` fallback, the number of lines that were held.
#[derive(Debug)]
pub struct Item {
    pub span: Span,
    pub fallback: Option<usize>,
}

/// Stream state: framing plus the `auto` decision.
#[derive(Debug)]
pub struct Engine {
    pub budget: Budget,
    framer: Framer,
    dialect: Option<AnyDialect>,
    held: Vec<Span>,
    held_bytes: usize,
    /// `auto`: the first held line's suggestion ([`tentative`]).
    tentative: Option<AnyDialect>,
    finished: bool,
    stream_error: Option<StreamError>,
    /// `collapse_junk` ([`Collapse`]), applied in stream order by [`crate::sink::items`].
    pub collapse: Option<Collapse>,
    /// The dialect's per-stream state, updated line by line by [`map_line`].
    pub context: Context,
    /// Where [`crate::sink::items`] parses a group of lines ([`prepare_in`]), reset after each
    /// group: its chunks are kept from group to group.
    pub arena: Bump,
    /// The parser's stacks and buffer, kept from line to line ([`Scratch`]).
    pub scratch: Scratch,
}

impl Engine {
    /// `dialect = None` means `auto`.
    pub fn new(dialect: Option<AnyDialect>, budget: Budget) -> Self {
        Engine {
            budget,
            framer: Framer::detecting(budget.max_line_bytes),
            dialect,
            held: Vec::new(),
            held_bytes: 0,
            tentative: None,
            finished: false,
            stream_error: None,
            collapse: None,
            context: Context::default(),
            arena: Bump::new(),
            scratch: Scratch::default(),
        }
    }

    /// The engine for the part of a stream from byte `offset` on, where the whole stream's
    /// engine was [`Engine::split_ok`] with dialect `dialect` and its [`Engine::context`] was
    /// `context` (`split.rs`).
    pub fn resume(dialect: AnyDialect, budget: Budget, offset: u64, context: Context) -> Self {
        Engine {
            framer: Framer::resume(budget.max_line_bytes, offset),
            context,
            ..Engine::new(Some(dialect), budget)
        }
    }

    /// Nothing carried to the next line but the dialect and its context: the dialect is decided
    /// (no line held for `auto`), the framer is between lines of a UTF-8 stream, and the stream
    /// is not finished. At such a point the rest of the stream can be normalized by
    /// [`Engine::resume`] alone.
    pub fn split_ok(&self) -> bool {
        self.dialect.is_some() && self.held.is_empty() && self.framer.is_idle() && !self.finished
    }

    /// The stream was found to be UTF-16/UTF-32 (it gives one event at the end, no lines).
    pub fn is_wide(&self) -> bool {
        self.framer.wide().is_some()
    }

    /// The dialect of every item returned so far (`None` while `auto` is undecided).
    pub fn dialect(&self) -> Option<&AnyDialect> {
        self.dialect.as_ref()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Frame a chunk: the lines ready for mapping, in order. Held lines are released (owned)
    /// once a line decides the dialect.
    ///
    /// [`OutOfMemory`]: a buffer sized by the input could not grow; the engine must not be fed
    /// again (some lines of `chunk` may have been consumed).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Item>, OutOfMemory> {
        let mut spans = Vec::new();
        self.framer.feed(chunk, &mut spans)?;
        self.route(spans, chunk, false)
    }

    /// End of stream. A UTF-16/UTF-32 stream gives no items; its one event is then ready in
    /// [`Engine::take_stream_error`] (and `auto` settles on the fallback dialect, unannounced).
    pub fn finish(&mut self) -> Result<Vec<Item>, OutOfMemory> {
        let mut spans = Vec::new();
        if !self.finished {
            self.finished = true;
            self.framer.finish(&mut spans)?;
            if let Some(w) = self.framer.wide() {
                self.stream_error = Some(stream_error(w));
                if self.dialect.is_none() {
                    self.dialect = Some(FALLBACK);
                }
            }
        }
        self.route(spans, &[], true)
    }

    /// After [`Engine::finish`], once: the event of a UTF-16/UTF-32 stream, to put after the
    /// items `finish` returned (there are none for such a stream).
    pub fn take_stream_error(&mut self) -> Option<StreamError> {
        self.stream_error.take()
    }

    fn route(
        &mut self,
        spans: Vec<Span>,
        chunk: &[u8],
        last: bool,
    ) -> Result<Vec<Item>, OutOfMemory> {
        let mut out = Vec::new();
        OutOfMemory::reserve(&mut out, spans.len())?;
        for span in spans {
            if self.dialect.is_some() {
                out.push(Item {
                    span,
                    fallback: None,
                });
                continue;
            }
            let data = span.bytes(chunk);
            let Some(p) = prepare(data, span.total, &self.budget)? else {
                continue;
            };
            let decided = p.value().and_then(sniff);
            if self.tentative.is_none() {
                self.tentative = p.value().and_then(tentative);
            }
            let mut copy = Vec::new();
            OutOfMemory::reserve(&mut copy, data.len())?;
            copy.extend_from_slice(data);
            self.held_bytes += data.len();
            let owned = Span {
                position: span.position,
                src: Src::Owned(copy),
                total: span.total,
            };
            OutOfMemory::reserve(&mut self.held, 1)?;
            self.held.push(owned);
            if let Some(d) = decided {
                self.release(d, false, &mut out)?;
            } else if self.held.len() >= AUTO_HOLD_LINES || self.held_bytes >= AUTO_HOLD_BYTES {
                self.undecided(&mut out)?;
            }
        }
        if last && self.dialect.is_none() && !self.held.is_empty() {
            self.undecided(&mut out)?;
        }
        Ok(out)
    }

    /// No held line decided: the first tentative tell, else the announced fallback.
    fn undecided(&mut self, out: &mut Vec<Item>) -> Result<(), OutOfMemory> {
        match self.tentative.take() {
            Some(d) => self.release(d, false, out),
            None => self.release(FALLBACK, true, out),
        }
    }

    fn release(
        &mut self,
        d: AnyDialect,
        fallback: bool,
        out: &mut Vec<Item>,
    ) -> Result<(), OutOfMemory> {
        OutOfMemory::reserve(out, self.held.len())?;
        self.dialect = Some(d);
        let held = std::mem::take(&mut self.held);
        let n = held.len();
        self.held_bytes = 0;
        for (i, span) in held.into_iter().enumerate() {
            out.push(Item {
                span,
                fallback: (fallback && i == 0).then_some(n),
            });
        }
        Ok(())
    }
}
