//! The per-stream usage fold in the core: one stream's events, as they are mapped, into the
//! summary `checkfu_fast.usage.UsageFold.merge` takes (`StreamSummary`). It mirrors
//! `usage.py`'s `_Stream`, `_Scope` and `_Rec` rule for rule; the fold across streams (thread
//! counters, session-file messages across files, pricing, rows) stays in `usage.py`.
//! `tests/test_usage_core.py` holds the two equal on every golden, corpus and session example.
//!
//! No event dict, no `parsed`, no `raw`: the fold reads the [`Event`]s and the line's
//! [`LineMeta`] as a [`Sink`]. A stream with something the Python fold reads differently from
//! what is mirrored here (a timestamp with non-ASCII digits, an integer count beyond `i128`) is
//! left to the Python fold: [`Outcome::Python`].

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use crate::budget::{Budget, OutOfMemory};
use crate::dialect::{AnyDialect, Context};
use crate::event::{Event, Num};
use crate::normalize::{Engine, LineEvents};
use crate::sink::{self, Sink};
use crate::split::io_oom;
use crate::value::Value;

/// Dialects whose cumulative counter is the thread's across resumes (`SESSION_CUMULATIVE`).
fn session_cumulative(dialect: &str) -> bool {
    dialect == "codex"
}

/// Error subtypes that do not end a stream (`NON_TERMINAL_ERRORS`).
const NON_TERMINAL_ERRORS: [&str; 8] = [
    "invalid_utf8",
    "invalid_json",
    "line_too_long",
    "too_deep",
    "too_many_nodes",
    "stream_is_utf16",
    "retry",
    "item_error",
];

const UNKNOWN: &str = "unknown";

/// A reading's time: seconds since 1970 (`usage.epoch`), or none.
pub type Ts = Option<f64>;

/// One usage reading (`_Rec`): counts (`None`: not reported), cost, model, time, project.
#[derive(Debug, Clone, PartialEq)]
pub struct Rec {
    pub model: String,
    pub input: Option<Num>,
    pub output: Option<Num>,
    pub cached: Option<Num>,
    pub cost: Option<Num>,
    pub reasoning: Option<Num>,
    pub cache_write: Option<Num>,
    pub cache_write_1h: Option<Num>,
    pub ts: Ts,
    pub project: Option<String>,
}

/// `b > a` in Python (exact across int and float).
fn gt(b: Num, a: Num) -> bool {
    !b.le(a)
}

fn count(n: Option<Num>) -> Option<Num> {
    match n {
        Some(Num::Int(i)) if i >= 0 => n,
        Some(Num::Float(f)) if f >= 0.0 => n,
        _ => None,
    }
}

/// Integers this large could overflow `i128` when a counter line's readings are added (Python
/// adds them exactly): such a stream is left to the Python fold.
const HUGE: i128 = 1 << 100;

impl Rec {
    /// `_Rec({})`: counts 0, the rest unreported.
    fn empty() -> Rec {
        Rec {
            model: UNKNOWN.to_owned(),
            input: Some(Num::Int(0)),
            output: Some(Num::Int(0)),
            cached: Some(Num::Int(0)),
            cost: None,
            reasoning: None,
            cache_write: None,
            cache_write_1h: None,
            ts: None,
            project: None,
        }
    }

    fn slots(&mut self) -> [&mut Option<Num>; 7] {
        [
            &mut self.input,
            &mut self.output,
            &mut self.cached,
            &mut self.cost,
            &mut self.reasoning,
            &mut self.cache_write,
            &mut self.cache_write_1h,
        ]
    }

    fn values(&self) -> [Option<Num>; 7] {
        [
            self.input,
            self.output,
            self.cached,
            self.cost,
            self.reasoning,
            self.cache_write,
            self.cache_write_1h,
        ]
    }

    /// `merge_max`: componentwise largest value.
    pub(crate) fn merge_max(&mut self, other: &Rec) {
        for (a, b) in self.slots().into_iter().zip(other.values()) {
            if let Some(b) = b {
                if a.is_none_or(|a| gt(b, a)) {
                    *a = Some(b);
                }
            }
        }
        if self.model == UNKNOWN {
            self.model.clone_from(&other.model);
        }
        if self.ts.is_none() {
            self.ts = other.ts;
        }
        if self.project.is_none() {
            self.project.clone_from(&other.project);
        }
    }

    /// `rank(sidechain) > other.rank(other_sidechain)`: main over sidechain, then the largest
    /// output, then the largest input.
    pub(crate) fn outranks(&self, sidechain: bool, other: &Rec, other_sidechain: bool) -> bool {
        if sidechain != other_sidechain {
            return !sidechain;
        }
        let key = |n: Option<Num>| n.unwrap_or(Num::Int(-1));
        let (a, b) = (key(self.output), key(other.output));
        if gt(a, b) {
            return true;
        }
        if gt(b, a) {
            return false;
        }
        gt(key(self.input), key(other.input))
    }

    /// `covers(earlier)`: no count went down.
    pub(crate) fn covers(&self, earlier: &Rec) -> bool {
        earlier
            .values()
            .into_iter()
            .zip(self.values())
            .all(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.le(b),
                _ => true,
            })
    }
}

/// `_sum`: the readings of one counter line added up.
fn sum(recs: &[Rec]) -> Rec {
    let mut out = Rec::empty();
    for r in recs {
        out.ts = r.ts;
        for (a, b) in out.slots().into_iter().zip(r.values()) {
            *a = match (*a, b) {
                (None, b) => b,
                (a, None) => a,
                (Some(a), Some(b)) => Some(a.plus(b)),
            };
        }
    }
    out
}

/// One session inside one stream (`_Scope`).
#[derive(Debug, Default, Clone)]
pub struct Scope {
    pub dialect: &'static str,
    /// messageId -> index in `message_order` (insertion order, as a Python dict)
    messages: HashMap<String, usize>,
    message_order: Vec<Option<Rec>>,
    pub covered: HashSet<String>,
    pub plain: Vec<Rec>,
    pub counter: Vec<Rec>,
    pub counter_at: Option<u64>,
    pub closed: Vec<Rec>,
    pub prior: Vec<Rec>,
}

impl Scope {
    pub fn new(dialect: &'static str) -> Scope {
        Scope {
            dialect,
            ..Scope::default()
        }
    }

    /// The messages by id, in the order they came (`_Scope.messages`).
    pub fn messages(&self) -> Vec<(&str, &Rec)> {
        let mut out: Vec<(usize, &str)> = self
            .messages
            .iter()
            .map(|(k, &i)| (i, k.as_str()))
            .collect();
        out.sort_unstable();
        out.into_iter()
            .filter_map(|(i, k)| match self.message_order.get(i) {
                Some(Some(r)) => Some((k, r)),
                _ => None,
            })
            .collect()
    }

    /// Add a message (in order): as `messages()` gave them.
    pub fn push_message(&mut self, id: String, r: Rec) {
        self.messages.insert(id, self.message_order.len());
        self.message_order.push(Some(r));
    }

    fn settle(&mut self) {
        if !self.prior.is_empty()
            && !self.counter.is_empty()
            && !sum(&self.counter).covers(&sum(&self.prior))
        {
            self.closed.append(&mut self.prior);
        }
        self.prior.clear();
    }

    fn cover(&mut self) {
        self.covered.extend(self.messages.drain().map(|(k, _)| k));
        self.message_order.clear();
        self.plain.clear();
    }

    fn readings(mut self) -> Vec<Rec> {
        self.settle();
        let mut out = self.closed;
        out.append(&mut self.counter);
        out.extend(self.message_order.into_iter().flatten());
        out.append(&mut self.plain);
        out
    }
}

/// A thread counter's reading: `(session, dialect, reading, timestamp text, continued)`.
pub type Counter = (String, &'static str, Rec, Option<String>, bool);
/// A session-file message: `(key, reading, session, dialect, sidechain)`.
pub type FileMessage = (String, Rec, Option<String>, &'static str, bool);

/// A rate-limit reading as `report --limits` takes it (`limits.py`): `(dialect, window,
/// limitType, usedPercent, resetsAt, the line's timestamp)`.
pub type LimitReading = (
    &'static str,
    String,
    String,
    Num,
    Option<String>,
    Option<String>,
);

/// One stream's summary (`StreamSummary`).
#[derive(Debug, Default)]
pub struct Summary {
    /// The stream's `rateLimits` readings, in order (not part of `StreamSummary`: the quota
    /// ledger of `report --limits` takes them apart).
    pub limits: Vec<LimitReading>,
    pub counters: Vec<Counter>,
    pub readings: Vec<(String, &'static str, Rec)>,
    pub files: Vec<FileMessage>,
    pub ending: &'static str,
    pub session: String,
    pub dialect: String,
    pub had_usage: bool,
    /// Events the dialect recognised (not `status/unknown`, not errors) and `status/unknown`s.
    pub known: u64,
    pub unknown: u64,
}

/// The fold of one stream (`_Stream`), a [`Sink`].
#[derive(Debug)]
pub struct StreamFold {
    out: Summary,
    files: HashMap<String, usize>,
    /// Scopes by session (`None`: before the stream named one), in insertion order.
    scopes: Vec<(Option<String>, Scope)>,
    current: Option<String>,
    first: Option<String>,
    ending: &'static str,
    dialect: Option<&'static str>,
    continued: HashSet<String>,
    model: Option<String>,
    project: Option<String>,
    /// Something mirrored here would differ from the Python fold: leave the stream to it.
    python: bool,
}

/// What a stream became.
#[derive(Debug)]
pub enum Outcome {
    Summary(Summary),
    /// The stream has something only the Python fold reads right: fold it there.
    Python,
}

/// `usage.epoch` for an ASCII timestamp: `Some(None)` where it gives `None`; `None` for text
/// with non-ASCII characters (Python's `\d` takes any Unicode digit: left to Python).
pub fn epoch(ts: &str) -> Option<Ts> {
    if !ts.is_ascii() {
        return None;
    }
    let b = ts.as_bytes();
    let digits = |from: usize, n: usize| -> Option<i64> {
        let s = b.get(from..from + n)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            s.iter()
                .fold(0i64, |acc, &c| acc * 10 + i64::from(c - b'0')),
        )
    };
    let at = |i: usize| b.get(i).copied();
    let parse = || -> Option<f64> {
        let (y, mo, d) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
        if at(4) != Some(b'-') || at(7) != Some(b'-') || !matches!(at(10), Some(b'T' | b't' | b' '))
        {
            return None;
        }
        let (h, mi, sec) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
        if at(13) != Some(b':') || at(16) != Some(b':') {
            return None;
        }
        let mut i = 19;
        if at(i) == Some(b'.') {
            let start = i + 1;
            i = start;
            while at(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            if i == start {
                return None;
            }
        }
        let offset = match at(i) {
            Some(b'Z' | b'z') if i + 1 == b.len() => 0,
            Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && at(i + 3) == Some(b':') => {
                let off = digits(i + 1, 2)? * 3600 + digits(i + 4, 2)? * 60;
                if sign == b'+' {
                    off
                } else {
                    -off
                }
            }
            _ => return None,
        };
        let dim = crate::retry::days_in_month(y.into(), mo.into())?;
        if y < 1 || d < 1 || i128::from(d) > dim || h > 23 || mi > 59 {
            return None;
        }
        let days =
            i64::try_from(crate::retry::days_from_civil(y.into(), mo.into(), d.into())).ok()?;
        let secs = days * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset;
        // 0001-01-01T00:00:00 .. 9999-12-31T23:59:59 (datetime's range)
        if !(-62_135_596_800..=253_402_300_799).contains(&secs) {
            return None;
        }
        // the fraction as Python's float(".ddd") (ts[19:] up to Z/z/+/-)
        let frac = ts.get(19..).unwrap_or("");
        let frac = frac.split(['Z', 'z', '+', '-']).next().unwrap_or("");
        let extra = if frac.len() > 1 && frac.starts_with('.') {
            frac.parse::<f64>().ok()? // `.ddd` is `0.ddd`, no text made
        } else {
            0.0
        };
        Some(secs as f64 + extra)
    };
    Some(parse())
}

impl StreamFold {
    pub fn new(project: Option<String>) -> StreamFold {
        StreamFold {
            out: Summary {
                ending: "none",
                session: UNKNOWN.to_owned(),
                dialect: UNKNOWN.to_owned(),
                ..Summary::default()
            },
            files: HashMap::new(),
            scopes: Vec::new(),
            current: None,
            first: None,
            ending: "none",
            dialect: None,
            continued: HashSet::new(),
            model: None,
            project,
            python: false,
        }
    }

    fn scope_index(&self, name: Option<&str>) -> Option<usize> {
        self.scopes.iter().position(|(k, _)| k.as_deref() == name)
    }

    /// A reading from a usage event (`_Rec(usage, ev, epoch(ts), project)`).
    fn rec(&mut self, ev: &Event<'_>, rec: &LineEvents<'_>) -> Option<Rec> {
        let u = ev.usage.as_ref()?;
        let known = !u.unknown;
        let c = |n: Option<Num>| {
            if known {
                Some(count(n).unwrap_or(Num::Int(0)))
            } else {
                None
            }
        };
        let x = ev.extra.as_deref();
        let part = |n: Option<Num>| if known { count(n) } else { None };
        let reasoning = match x.and_then(|x| x.reasoning_tokens) {
            None => None,
            Some(Value::Int(i)) => Some(Num::Int(i128::from(*i))),
            Some(Value::Float(f)) => Some(Num::Float(*f)),
            Some(Value::BigInt(t)) => match t.parse::<i128>() {
                Ok(i) => Some(Num::Int(i)),
                Err(_) => {
                    self.python = true;
                    None
                }
            },
            Some(_) => None,
        };
        let ts = match rec.meta.timestamp {
            None => None,
            Some(t) => epoch(t).unwrap_or_else(|| {
                self.python = true;
                None
            }),
        };
        let model = match x.and_then(|x| x.speed).filter(|s| *s != "standard") {
            // fast mode is priced apart: "claude-opus-4-8 (fast)" (prices.Snapshot.lookup)
            Some(speed) => format!("{} ({speed})", u.model),
            None => u.model.to_string(),
        };
        let r = Rec {
            model,
            input: c(u.input),
            output: c(u.output),
            cached: c(u.cached),
            cost: count(u.cost),
            reasoning: part(reasoning),
            cache_write: part(x.and_then(|x| x.cache_write_tokens)),
            cache_write_1h: part(x.and_then(|x| x.cache_write_1h_tokens)),
            ts,
            project: self.project.clone(),
        };
        if r.values()
            .iter()
            .any(|n| matches!(n, Some(Num::Int(i)) if *i >= HUGE))
        {
            self.python = true;
        }
        Some(r)
    }

    fn add(&mut self, ev: &Event<'_>, rec: &LineEvents<'_>) {
        let dialect = rec.dialect;
        let cumulative_dialect = session_cumulative(dialect);
        if ev.kind == "status" && ev.subtype == "unknown" {
            self.out.unknown += 1;
        } else if ev.kind != "error" {
            self.out.known += 1;
        }
        if let Some(x) = ev.extra.as_deref() {
            for r in &x.rate_limits {
                self.out.limits.push((
                    dialect,
                    r.window.to_string(),
                    r.limit_type.to_string(),
                    r.used_percent,
                    r.resets_at.clone(),
                    rec.meta.timestamp.map(str::to_owned),
                ));
            }
        }
        // the event's session: the line's, or (a cumulative dialect's, once the stream named
        // one) the stream's first; borrowed, copied only where it changes
        let line_sid = rec.meta.session_id.filter(|s| !s.is_empty());
        let first_sid = line_sid.is_some() && self.first.is_some() && cumulative_dialect;
        if first_sid {
            if self.current != self.first {
                self.current.clone_from(&self.first);
            }
        } else if let Some(s) = line_sid {
            if self.first.is_none() {
                self.first = Some(s.to_owned());
                if let Some(i) = self.scope_index(None) {
                    // usage before the stream named its session belongs to that session
                    let (_, early) = self.scopes.remove(i);
                    match self.scope_index(Some(s)) {
                        Some(j) => {
                            if let Some(slot) = self.scopes.get_mut(j) {
                                slot.1 = early;
                            }
                        }
                        None => self.scopes.push((Some(s.to_owned()), early)),
                    }
                }
            }
            if self.current.as_deref() != Some(s) {
                self.current = Some(s.to_owned());
            }
        }
        if self.dialect.is_none() {
            self.dialect = Some(dialect);
        }
        if let Some(cwd) = rec.meta.cwd.filter(|c| !c.is_empty()) {
            if self.project.as_deref() != Some(cwd) {
                self.project = Some(cwd.to_owned());
            }
        }
        self.outcome(ev, rec);
        if ev.kind == "status" && cumulative_dialect {
            if rec.meta.native_type == Some("turn_context") {
                if let Some(t) = &ev.text {
                    self.model = Some(t.to_string());
                }
            }
            if ev.extra.as_deref().is_some_and(|x| x.continuation) {
                let sid = if first_sid {
                    self.first.clone()
                } else {
                    line_sid.map(str::to_owned)
                };
                if let Some(s) = sid {
                    self.continued.insert(s);
                }
            }
        }
        if ev.kind != "usage" || ev.usage.is_none() {
            return;
        }
        self.out.had_usage = true;
        let scope_name: &str = ev.usage_scope.unwrap_or(&ev.subtype);
        let Some(mut r) = self.rec(ev, rec) else {
            return;
        };
        if r.model == UNKNOWN && cumulative_dialect {
            if let Some(m) = self.model.as_ref().filter(|m| !m.is_empty()) {
                r.model.clone_from(m);
            }
        }
        if let (true, Some(req)) = (scope_name == "message", rec.meta.request_id) {
            let (tag, id) = match ev.message_id.as_deref() {
                Some(m) => ("m:", m),
                None => ("r:", req),
            };
            let mut key = String::with_capacity(tag.len() + id.len());
            key.push_str(tag);
            key.push_str(id);
            self.file_message(key, r, dialect, rec.meta.sidechain);
            return;
        }
        let i = match self.scope_index(self.current.as_deref()) {
            Some(i) => i,
            None => {
                self.scopes
                    .push((self.current.clone(), Scope::new(dialect)));
                self.scopes.len() - 1
            }
        };
        let Some((_, scope)) = self.scopes.get_mut(i) else {
            return;
        };
        if scope_name == "cumulative" {
            if let (true, Some(c)) = (cumulative_dialect, &self.current) {
                let continued = self.continued.contains(c);
                let ts = rec.meta.timestamp.map(str::to_owned);
                self.out
                    .counters
                    .push((c.clone(), dialect, r, ts, continued));
                scope.cover();
                return;
            }
            scope.cover();
            let at = Some(rec.position);
            if !scope.counter.is_empty() && at == scope.counter_at {
                scope.counter.push(r); // one line reporting several models
                return;
            }
            scope.settle();
            scope.prior = std::mem::replace(&mut scope.counter, vec![r]);
            scope.counter_at = at;
        } else if let (true, Some(mid)) = (scope_name == "message", ev.message_id.as_deref()) {
            if scope.covered.contains(mid) {
                // a repeat of a message the counter already counts
            } else if let Some(&j) = scope.messages.get(mid) {
                if let Some(Some(seen)) = scope.message_order.get_mut(j) {
                    seen.merge_max(&r);
                }
            } else {
                scope
                    .messages
                    .insert(mid.to_owned(), scope.message_order.len());
                scope.message_order.push(Some(r));
            }
        } else {
            scope.plain.push(r);
        }
    }

    fn outcome(&mut self, ev: &Event<'_>, rec: &LineEvents<'_>) {
        let sub: &str = &ev.subtype;
        if ev.kind == "status" && (sub == "result" || sub == "turn_completed") {
            if !rec.meta.repeats_error {
                let empty = ev.extra.as_deref().is_some_and(|x| x.empty_result);
                self.ending = if empty { "empty" } else { "ok" };
            }
        } else if ev.kind == "error" && !NON_TERMINAL_ERRORS.contains(&sub) {
            self.ending = "failed";
        } else if ev.kind == "error"
            && ev.extra.as_deref().is_some_and(|x| x.retry)
            && self.ending == "none"
        {
            self.ending = "retrying";
        }
    }

    fn file_message(&mut self, key: String, r: Rec, dialect: &'static str, sidechain: bool) {
        let session = self.current.clone().or_else(|| self.first.clone());
        match self.files.get(&key) {
            None => {
                self.files.insert(key.clone(), self.out.files.len());
                self.out.files.push((key, r, session, dialect, sidechain));
            }
            Some(&i) => {
                if let Some(slot) = self.out.files.get_mut(i) {
                    if r.outranks(sidechain, &slot.1, slot.4) {
                        *slot = (key, r, session, dialect, sidechain);
                    }
                }
            }
        }
    }

    /// The stream's summary (`_Stream.summary`).
    pub fn finish(mut self) -> Outcome {
        if self.python {
            return Outcome::Python;
        }
        let first = self.first.clone();
        for (sid, scope) in std::mem::take(&mut self.scopes) {
            let name = sid
                .or_else(|| first.clone())
                .unwrap_or_else(|| UNKNOWN.to_owned());
            let dialect = scope.dialect;
            for r in scope.readings() {
                self.out.readings.push((name.clone(), dialect, r));
            }
        }
        self.out.session = self
            .current
            .clone()
            .filter(|s| !s.is_empty())
            .or(first)
            .unwrap_or_else(|| UNKNOWN.to_owned());
        self.out.ending = if self.ending == "retrying" {
            "failed"
        } else {
            self.ending
        };
        self.out.dialect = self.dialect.unwrap_or(UNKNOWN).to_owned();
        Outcome::Summary(self.out)
    }
}

/// Where the fold of an append-only file goes on when it grows: after its last byte folded,
/// a line's end where the engine carries nothing but the dialect and its context
/// ([`Engine::split_ok`]), the
/// fold's state (what [`StreamFold`] carries from line to line besides the readings already in
/// its summary) and hashes of the bytes that must still be there for the rest to be the same
/// stream: the first and the last [`CHECK`] bytes folded.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Bytes folded.
    pub offset: u64,
    /// [`ends_hash`] of the first `min(CHECK, offset)` bytes and of the `min(CHECK, offset)` bytes
    /// before `offset`.
    pub head: u64,
    pub tail: u64,
    /// The dialect the engine decided.
    pub engine: &'static str,
    /// The dialect's context there (the model a codex rollout runs).
    pub context: Context,
    pub state: FoldState,
}

/// XXH3 (64 bits): the hash of a file's head in the report cache's key and of the ends of
/// what a [`Checkpoint`] folded (a change detector, not a digest: sizes and times are checked
/// too). FNV-1a was here before: one multiply per byte, 11 % of a `report` over small session
/// files.
pub fn ends_hash(data: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(data)
}

/// Bytes hashed at each end of what a [`Checkpoint`] folded.
pub const CHECK: usize = 4096;

/// What [`StreamFold`] carries from one line to the next besides its summary's `counters` and
/// `files` (and `known`, `unknown`, `had_usage`).
#[derive(Debug, Clone)]
pub struct FoldState {
    pub current: Option<String>,
    pub first: Option<String>,
    /// `none`, `ok`, `empty`, `failed` or `retrying` (the ending so far).
    pub ending: &'static str,
    pub dialect: Option<&'static str>,
    /// Sorted.
    pub continued: Vec<String>,
    pub model: Option<String>,
    pub project: Option<String>,
    pub scopes: Vec<(Option<String>, Scope)>,
}

/// A [`Checkpoint`] with the summary made there (the cache keeps both): what
/// [`fold_file_from`] needs to fold the rest of the file only.
#[derive(Debug)]
pub struct Resume {
    pub checkpoint: Checkpoint,
    pub counters: Vec<Counter>,
    pub files: Vec<FileMessage>,
    pub known: u64,
    pub unknown: u64,
    pub had_usage: bool,
    /// The summary's `limits` so far.
    pub limits: Vec<LimitReading>,
}

/// The `&'static` name of a dialect of the core (a name read back from a cache).
pub fn dialect_name(name: &str) -> Option<&'static str> {
    AnyDialect::from_name(name).ok().map(|d| d.name())
}

/// The `&'static` spelling of an ending so far.
pub fn ending_name(name: &str) -> Option<&'static str> {
    ["none", "ok", "empty", "failed", "retrying"]
        .into_iter()
        .find(|e| *e == name)
}

impl StreamFold {
    /// The state to resume from (see [`FoldState`]).
    pub fn state(&self) -> FoldState {
        let mut continued: Vec<String> = self.continued.iter().cloned().collect();
        continued.sort_unstable();
        FoldState {
            current: self.current.clone(),
            first: self.first.clone(),
            ending: self.ending,
            dialect: self.dialect,
            continued,
            model: self.model.clone(),
            project: self.project.clone(),
            scopes: self.scopes.clone(),
        }
    }

    /// The fold as it was at a checkpoint: its state and its summary's readings so far.
    pub fn restore(r: Resume) -> StreamFold {
        let st = r.checkpoint.state;
        let mut fold = StreamFold::new(st.project);
        fold.files = r
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.0.clone(), i))
            .collect();
        fold.out.files = r.files;
        fold.out.counters = r.counters;
        fold.out.known = r.known;
        fold.out.unknown = r.unknown;
        fold.out.had_usage = r.had_usage;
        fold.out.limits = r.limits;
        fold.scopes = st.scopes;
        fold.current = st.current;
        fold.first = st.first;
        fold.ending = st.ending;
        fold.dialect = st.dialect;
        fold.continued = st.continued.into_iter().collect();
        fold.model = st.model;
        fold
    }
}

impl Sink for StreamFold {
    type Error = OutOfMemory;

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), OutOfMemory> {
        for ev in &rec.events {
            self.add(ev, rec);
            *seq += 1;
        }
        Ok(())
    }

    /// The fold reads events only, never the line's JSON text.
    fn canonical(&self) -> bool {
        false
    }
}

/// Fold the stream in `data` (all of it).
pub fn fold_bytes(
    data: &[u8],
    dialect: Option<AnyDialect>,
    budget: Budget,
    project: Option<String>,
) -> Result<Outcome, OutOfMemory> {
    let mut engine = Engine::new(dialect, budget);
    let mut fold = StreamFold::new(project);
    let mut seq = 0u64;
    sink::feed(&mut engine, &mut seq, data, &mut fold)?;
    sink::finish(&mut engine, &mut seq, &mut fold)?;
    Ok(fold.finish())
}

std::thread_local! {
    /// Each worker thread's read buffer, reused from file to file (a fresh zeroed 1 MiB
    /// buffer per file, and the decompression layer's, cost more than folding a small
    /// session file).
    static READ_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Each worker thread's parse arena and parser stacks, lent to the engine of each file it
    /// folds (a fresh arena grew its chunks again for every small session file, and freed
    /// them at its end).
    static ENGINE_MEM: std::cell::RefCell<(bumpalo::Bump, crate::parse::Scratch)> =
        std::cell::RefCell::new((bumpalo::Bump::new(), crate::parse::Scratch::default()));
}

/// The engine of a stream read from its start (`limits`: with `rateLimits` readings).
fn fresh_engine(dialect: Option<AnyDialect>, budget: Budget, limits: bool) -> Engine {
    let mut engine = Engine::new(dialect, budget);
    engine.context.skip_limits = !limits;
    engine
}

/// Lend the thread's [`ENGINE_MEM`] to `engine` (when no other fold of this thread holds it).
fn lend_memory(engine: &mut Engine) -> bool {
    ENGINE_MEM.with(|cell| {
        let Ok(mut mem) = cell.try_borrow_mut() else {
            return false;
        };
        std::mem::swap(&mut engine.arena, &mut mem.0);
        std::mem::swap(&mut engine.scratch, &mut mem.1);
        true
    })
}

/// Give the memory [`lend_memory`] lent back to the thread, its arena emptied as the engine
/// empties it ([`sink::recycle`]).
fn return_memory(engine: &mut Engine) {
    ENGINE_MEM.with(|cell| {
        if let Ok(mut mem) = cell.try_borrow_mut() {
            sink::recycle(&mut engine.arena);
            std::mem::swap(&mut engine.arena, &mut mem.0);
            std::mem::swap(&mut engine.scratch, &mut mem.1);
        }
    });
}

/// Fold the file at `path`, read in chunks; a gzip or zstd file (by its magic, as
/// `input::open_input`) is decompressed as read.
pub fn fold_file(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    project: Option<String>,
) -> io::Result<Outcome> {
    Ok(fold_file_at(path, dialect, budget, project, None, false, true)?.outcome)
}

/// [`fold_file`] for a caller that reads the summary's totals only, never its `limits`: the
/// dialect leaves the `rateLimits` readings out ([`Context::skip_limits`]), the summary has
/// none of them.
pub fn fold_file_totals(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    project: Option<String>,
) -> io::Result<Outcome> {
    Ok(fold_file_at(path, dialect, budget, project, None, false, false)?.outcome)
}

/// What [`fold_file_from`] gives: the outcome, where a later fold of the grown file can go on
/// (a plain file whose end is a line's end), and whether this one went on from `resume`.
#[derive(Debug)]
pub struct Folded {
    pub outcome: Outcome,
    pub checkpoint: Option<Checkpoint>,
    pub resumed: bool,
}

/// The first and the last [`CHECK`] bytes of what was read.
#[derive(Default)]
struct Ends {
    head: Vec<u8>,
    last: Vec<u8>,
}

impl Ends {
    fn push(&mut self, chunk: &[u8]) {
        let room = CHECK.saturating_sub(self.head.len()).min(chunk.len());
        self.head
            .extend_from_slice(chunk.get(..room).unwrap_or_default());
        if chunk.len() >= CHECK {
            self.last.clear();
            self.last
                .extend_from_slice(chunk.get(chunk.len() - CHECK..).unwrap_or_default());
        } else {
            self.last.extend_from_slice(chunk);
            let over = self.last.len().saturating_sub(CHECK);
            self.last.drain(..over);
        }
    }
}

/// `resume`'s bytes are still the file's (its size is at least the offset, its first and last
/// [`CHECK`] bytes hash the same): their [`Ends`], the file positioned at the offset.
fn still_there(file: &mut std::fs::File, c: &Checkpoint) -> io::Result<Option<Ends>> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() < c.offset {
        return Ok(None); // truncated: read again whole
    }
    let n = usize::try_from(c.offset).unwrap_or(usize::MAX).min(CHECK);
    let mut ends = Ends {
        head: vec![0; n],
        last: vec![0; n],
    };
    file.seek(SeekFrom::Start(0))?;
    if file.read_exact(&mut ends.head).is_err() {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(c.offset - n as u64))?;
    if file.read_exact(&mut ends.last).is_err() {
        return Ok(None);
    }
    if ends_hash(&ends.head) != c.head || ends_hash(&ends.last) != c.tail {
        return Ok(None);
    }
    Ok(Some(ends))
}

/// [`fold_file`], going on from `resume` where the file still holds what it folded (an
/// append-only file that grew: only the rest is read), and saying where a later fold can go on.
pub fn fold_file_from(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    project: Option<String>,
    resume: Option<Resume>,
) -> io::Result<Folded> {
    fold_file_at(path, dialect, budget, project, resume, true, true)
}

/// [`fold_file_from`]; with `checkpoint` false (a fold no cache keeps), no [`Checkpoint`] and
/// none of the copying and hashing of the ends it needs; without `limits`, no `rateLimits`
/// readings ([`fold_file_totals`]).
fn fold_file_at(
    path: &Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    project: Option<String>,
    resume: Option<Resume>,
    checkpoint: bool,
    limits: bool,
) -> io::Result<Folded> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut start = None;
    if let Some(r) = resume {
        let engine = AnyDialect::from_name(r.checkpoint.engine).ok();
        if let (Some(engine), Some(ends)) = (engine, still_there(&mut file, &r.checkpoint)?) {
            start = Some((r, engine, ends));
        } else {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(0))?;
        }
    }
    let plain = READ_BUF.with(|cell| -> io::Result<Option<Folded>> {
        let Ok(mut buf) = cell.try_borrow_mut() else {
            return Ok(None);
        };
        if buf.len() < crate::jsonl::READ_CHUNK {
            OutOfMemory::reserve(&mut buf, crate::jsonl::READ_CHUNK).map_err(io_oom)?;
            buf.resize(crate::jsonl::READ_CHUNK, 0);
        }
        let resumed = start.is_some();
        let (mut engine, mut fold, mut ends, mut offset) = match start {
            Some((r, engine, ends)) => {
                let offset = r.checkpoint.offset;
                (
                    Engine::resume(engine, budget, offset, r.checkpoint.context.clone()),
                    StreamFold::restore(r),
                    ends,
                    offset,
                )
            }
            None => (
                fresh_engine(dialect.clone(), budget, limits),
                StreamFold::new(project.clone()),
                Ends::default(),
                0,
            ),
        };
        let lent = lend_memory(&mut engine);
        let mut seq = 0u64;
        let mut first = !resumed;
        loop {
            let mut n = 0;
            // the first chunk: at least the 4 bytes of a magic, or the whole file
            loop {
                match file.read(buf.get_mut(n..).unwrap_or_default()) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                if !first || n >= 4 {
                    break;
                }
            }
            let chunk = buf.get(..n).unwrap_or_default();
            if first {
                first = false;
                if crate::input::compression(chunk) != crate::input::Compression::None {
                    return Ok(None); // read through the decompressing input
                }
            }
            if n == 0 {
                break;
            }
            if checkpoint {
                ends.push(chunk);
            }
            offset += n as u64;
            sink::feed(&mut engine, &mut seq, chunk, &mut fold).map_err(io_oom)?;
        }
        let checkpoint = match engine.dialect() {
            Some(d) if checkpoint && engine.split_ok() && offset > 0 => Some(Checkpoint {
                offset,
                head: ends_hash(&ends.head),
                tail: ends_hash(&ends.last),
                engine: d.name(),
                context: engine.context.clone(),
                state: fold.state(),
            }),
            _ => None,
        };
        sink::finish(&mut engine, &mut seq, &mut fold).map_err(io_oom)?;
        if lent {
            return_memory(&mut engine);
        }
        Ok(Some(Folded {
            outcome: fold.finish(),
            checkpoint,
            resumed,
        }))
    })?;
    if let Some(out) = plain {
        return Ok(out);
    }
    let mut engine = fresh_engine(dialect, budget, limits);
    let mut fold = StreamFold::new(project);
    let mut seq = 0u64;
    let mut input = crate::input::open_input(path)?;
    crate::jsonl::read_chunks(&mut input, |chunk| {
        sink::feed(&mut engine, &mut seq, chunk, &mut fold).map_err(io_oom)
    })?;
    sink::finish(&mut engine, &mut seq, &mut fold).map_err(io_oom)?;
    Ok(Folded {
        outcome: fold.finish(),
        checkpoint: None,
        resumed: false,
    })
}

/// A claude session file's project folder (`report.claude_project`): the component after the
/// last `projects` component of the lexically normalized path (`os.path.normpath`), when it is
/// not the last component (the file's own name); else None.
pub fn claude_project(path: &str) -> Option<String> {
    // posixpath.normpath: one or two leading slashes kept (three or more are one), `.` and
    // empty components dropped, `..` taking the component before it where there is one
    let slashes = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else {
        usize::from(path.starts_with('/'))
    };
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        if c.is_empty() || c == "." {
            continue;
        }
        if c != ".." || (slashes == 0 && comps.is_empty()) || comps.last() == Some(&"..") {
            comps.push(c);
        } else {
            comps.pop();
        }
    }
    // the normalized path split on `/`: the leading slashes as empty parts ("." when empty)
    let mut parts: Vec<&str> = vec![""; slashes];
    if comps.is_empty() {
        parts.push(if slashes == 0 { "." } else { "" });
    }
    parts.extend(comps);
    parts
        .windows(2)
        .take(parts.len().saturating_sub(2))
        .rev()
        .find(|w| w.first() == Some(&"projects") && w.get(1).is_some_and(|p| !p.is_empty()))
        .and_then(|w| w.get(1))
        .map(|p| (*p).to_owned())
}

/// Where [`fold_in_order`] stands: results `base..` as they come (`None`: not yet folded), and
/// how many were merged (`base` less the one being merged).
struct InOrder<T> {
    base: usize,
    merged: usize,
    ready: std::collections::VecDeque<Option<T>>,
    merging: bool,
    stop: bool,
}

/// Items `0..n` folded by `fold` on `threads` threads (the caller's one of them), each result
/// handed to `merge` in index order as soon as those before it are merged (an ordered reduce:
/// one thread at a time merges, whichever finished the next item). At most `window` results
/// wait for their turn: a thread that would fold an item further ahead waits. `merge`
/// returning false refuses its item: nothing after it is merged, no new item is folded.
/// Returns how many items were merged (`n`, or the index of the refused item). A thread that
/// cannot be started leaves its share to the others.
pub fn fold_in_order<T, F, M>(n: usize, threads: usize, window: usize, fold: F, merge: M) -> usize
where
    T: Send,
    F: Fn(usize) -> T + Sync,
    M: FnMut(T) -> bool + Send,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
    fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }
    let window = window.max(1);
    let next = AtomicUsize::new(0);
    let state = Mutex::new(InOrder {
        base: 0,
        merged: 0,
        ready: std::collections::VecDeque::new(),
        merging: false,
        stop: false,
    });
    let advanced = Condvar::new();
    let merge = Mutex::new(merge);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            return;
        }
        {
            let mut st = lock(&state);
            while !st.stop && i >= st.base + window {
                st = advanced.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            if st.stop {
                return;
            }
        }
        let r = fold(i);
        let mut st = lock(&state);
        if st.stop {
            return;
        }
        let k = i - st.base; // i is not taken to merge yet: base <= i
        if st.ready.len() <= k {
            st.ready.resize_with(k + 1, || None);
        }
        if let Some(slot) = st.ready.get_mut(k) {
            *slot = Some(r);
        }
        if st.merging {
            continue; // the merging thread takes it in its turn
        }
        st.merging = true;
        while matches!(st.ready.front(), Some(Some(_))) {
            let Some(Some(r)) = st.ready.pop_front() else {
                break;
            };
            st.base += 1; // `ready` starts at `base` again
            drop(st);
            let ok = (lock(&merge))(r);
            st = lock(&state);
            if !ok {
                st.stop = true;
                st.ready.clear();
                advanced.notify_all();
                break;
            }
            st.merged += 1;
            advanced.notify_all();
        }
        st.merging = false;
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(n) {
            let started = std::thread::Builder::new()
                .name("checkfu-fast-fold".into())
                .spawn_scoped(s, work);
            if started.is_err() {
                break;
            }
        }
        work();
    });
    let merged = lock(&state).merged;
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs() {
        let e = |s: &str| epoch(s).flatten();
        assert_eq!(e("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(e("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(e("2026-02-29T00:00:00Z"), None);
        assert_eq!(e("2024-02-29T00:00:00.5z"), Some(1_709_164_800.5));
        assert_eq!(e("2024-02-29 00:00:60Z"), Some(1_709_164_859.0));
        assert_eq!(e("2024-02-29T24:00:00Z"), None);
        assert_eq!(e("0001-01-01T00:00:00+00:01"), None);
        assert_eq!(e("2024-02-29T00:00:00."), None);
        assert_eq!(e("2024-02-29T00:00:00"), None);
        assert!(epoch("٢٠٢٤-02-29T00:00:00Z").is_none());
    }

    #[test]
    fn ranks_and_covers() {
        let r = |o: i128, i: i128| Rec {
            output: Some(Num::Int(o)),
            input: Some(Num::Int(i)),
            ..Rec::empty()
        };
        assert!(r(2, 0).outranks(false, &r(1, 9), false));
        assert!(r(1, 0).outranks(false, &r(9, 9), true));
        assert!(!r(1, 1).outranks(false, &r(1, 1), false));
        assert!(r(2, 2).covers(&r(1, 2)));
        assert!(!r(2, 1).covers(&r(1, 2)));
    }

    #[test]
    fn claude_projects() {
        // as report.claude_project (os.path.normpath, then the component after `projects`)
        let p = |s: &str| claude_project(s);
        assert_eq!(
            p("/h/.claude/projects/-home-x/s.jsonl").as_deref(),
            Some("-home-x")
        );
        assert_eq!(p("projects/a/b/s.jsonl").as_deref(), Some("a"));
        assert_eq!(p("///projects/a/s").as_deref(), Some("a"));
        assert_eq!(p("projects/a/projects/s.jsonl").as_deref(), Some("a"));
        assert_eq!(p("/projects/s.jsonl"), None);
        assert_eq!(p("projects/a"), None);
        assert_eq!(p("x/projects/./a//s.jsonl").as_deref(), Some("a"));
        assert_eq!(p("x/projects/a/../b/s.jsonl").as_deref(), Some("b"));
        assert_eq!(p("projects/a/.."), None);
        assert_eq!(p("../projects/a/s"), Some("a".into()));
        assert_eq!(p("//projects/a/s").as_deref(), Some("a"));
        assert_eq!(p("/../projects/a/s").as_deref(), Some("a"));
        assert_eq!(p(""), None);
        assert_eq!(p("/"), None);
    }

    #[test]
    fn folds_in_order() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for threads in [1, 2, 3, 8] {
            for window in [1, 2, 5, 64] {
                let seen = std::sync::Mutex::new(Vec::new());
                let mut got = Vec::new();
                // uneven work: later items often finish first
                let n = fold_in_order(
                    40,
                    threads,
                    window,
                    |i| {
                        let mut x = 0u64;
                        for k in 0..((40 - i) * 2000) as u64 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(k));
                        }
                        seen.lock().map(|mut v| v.push(i)).ok();
                        (i, x)
                    },
                    |(i, _)| {
                        // a slow merge: items come while it runs
                        let mut x = 0u64;
                        for k in 0..(i as u64 % 3) * 20_000 {
                            x = std::hint::black_box(x.wrapping_add(k));
                        }
                        std::hint::black_box(x);
                        got.push(i);
                        true
                    },
                );
                assert_eq!(n, 40);
                assert_eq!(got, (0..40).collect::<Vec<_>>());
                assert_eq!(seen.lock().map(|v| v.len()).ok(), Some(40));
            }
        }
        // refused at 7: 0..7 merged, and no fold starts more than `window` past the stop
        let folded = AtomicUsize::new(0);
        let mut got = Vec::new();
        let n = fold_in_order(
            1000,
            3,
            4,
            |i| {
                folded.fetch_add(1, Ordering::Relaxed);
                i
            },
            |i| {
                if i == 7 {
                    return false;
                }
                got.push(i);
                true
            },
        );
        assert_eq!(n, 7);
        assert_eq!(got, (0..7).collect::<Vec<_>>());
        assert!(folded.load(Ordering::Relaxed) <= 7 + 4 + 3);
        assert_eq!(fold_in_order(0, 4, 4, |i| i, |_| true), 0);
    }
}
