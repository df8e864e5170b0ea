//! Core values and events -> Python objects. Translation only.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, IntoPyObjectExt};

use crate::event::{Event, Num};
use crate::fields::{self, Field, Sel, Val, Writer};
use crate::normalize::{LineEvents, V};
use crate::value::Value;

/// An Fx-style hash (a rotate, a xor and a multiply per 8 bytes): the keys and values kept are
/// short, SipHash's DoS resistance buys nothing for a cache that stops growing at
/// [`CACHE_SIZE_MAX`] entries, and FNV-1a's multiply per byte was most of a lookup's cost.
#[derive(Default)]
pub struct Fx(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Fx {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_K);
    }
}

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in words.by_ref() {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // (byte by byte: a copy of a variable length is a call to memcpy)
            let mut w = 0u64;
            for (i, b) in rest.iter().enumerate() {
                w |= u64::from(*b) << (8 * i);
            }
            self.add(w);
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
}

/// Object keys (and the values of the fields that [`repeats`]) seen so far, so repeated keys
/// share one Python string: one per `normalize` call, and one per `Normalizer` kept across its
/// `feed` calls (the keys of a stream repeat from chunk to chunk). Each map holds at most
/// [`CACHE_SIZE_MAX`] strings of at most [`CACHE_KEY_MAX`] bytes.
pub struct KeyCache {
    map: Kept,
    /// The same for the values of the fields that [`repeats`] (apart: a stream of many
    /// sessions does not crowd its keys out).
    values: Kept,
    /// The event dicts' template ([`event_template`]), made on first use.
    template: Option<Py<PyDict>>,
    /// The (address, length) of the dialect name whose string the template's `dialect` holds.
    template_dialect: (usize, usize),
    /// The last line's dialect name: its (address, length) (a `&'static str`: the same
    /// address is the same name for good) and its string, one for every line of a stream
    /// rather than one a line.
    dialect: Option<((usize, usize), Py<PyString>)>,
    /// Per string field, whether it [`repeats`] and its last values' strings ([`Slot`]).
    slots: Vec<Slot>,
}

/// A string field's [`Slot`] in [`KeyCache::slots`]: its (static) address over the size of a
/// [`Field`], modulo this (the rows of one table are consecutive: distinct slots; two tables'
/// rows that meet in a slot only take it from each other, at the cost of a lookup).
const SLOTS: usize = 128;

/// What one string field gave: whether it [`repeats`] (found once by its name, not by
/// comparing it with the 22 names on every value) and, if so, up to [`SLOT_WAYS`] of the
/// values it gave last and their strings. A session's events give such a field a few values
/// again and again (`kind`, `subtype`, `sessionId`, `nativeType`, `model`...): a scan of a few
/// lengths, then one comparison, not a hash and a lookup in [`KeyCache::values`].
#[derive(Default)]
struct Slot {
    /// the field's address (0: none yet)
    field: usize,
    repeats: bool,
    seen: Vec<Seen>,
    /// the entry of `seen` a new value takes once it is full (in turn)
    next: usize,
}

/// A value a [`Slot`]'s field gave and its string.
struct Seen {
    value: String,
    obj: Py<PyString>,
}

/// How many values a [`Slot`] holds (the bench corpora's `kind`s and `subtype`s: 5 and 9).
const SLOT_WAYS: usize = 8;

/// The longest value a [`Slot`] keeps (a longer one is the map's business: [`kept`]).
const SLOT_VALUE_MAX: usize = 256;

type Kept = HashMap<String, Py<PyString>, std::hash::BuildHasherDefault<Fx>>;

/// The string kept in `map` for `k` (made and kept if there is room).
#[inline]
fn kept<'py>(map: &mut Kept, py: Python<'py>, k: &str) -> Bound<'py, PyString> {
    if k.len() > CACHE_KEY_MAX {
        return PyString::new(py, k);
    }
    if let Some(s) = map.get(k) {
        return s.bind(py).clone();
    }
    let s = PyString::new(py, k);
    // kept only where the room can be had: the cache is an optimization, and an allocation
    // that fails here (a process near its memory limit) must not abort the process
    if map.len() < CACHE_SIZE_MAX && map.try_reserve(1).is_ok() {
        let mut key = String::new();
        if key.try_reserve_exact(k.len()).is_ok() {
            key.push_str(k);
            map.insert(key, s.clone().unbind());
        }
    }
    s
}

/// A string object for a field: one a cache holds, borrowed (no reference to take and give
/// back: under the stable ABI each is a call into libpython, two of them for every value
/// that repeats), or one made for it.
enum Str<'a, 'py> {
    Kept(&'a Bound<'py, PyString>),
    Made(Bound<'py, PyString>),
}

const CACHE_KEY_MAX: usize = 48;
const CACHE_SIZE_MAX: usize = 4096;

impl KeyCache {
    pub fn new() -> Self {
        KeyCache {
            map: HashMap::default(),
            values: HashMap::default(),
            template: None,
            template_dialect: (0, 0),
            dialect: None,
            slots: Vec::new(),
        }
    }

    /// The string for value `s` of string field `f`: if `f` [`repeats`], the one its [`Slot`]
    /// holds for `s` (borrowed from it), else the one kept for `s` (then also in the slot);
    /// otherwise the line's ([`LineMemo::str`], borrowed from the memo).
    #[inline]
    fn field_str<'a, 'py>(
        &'a mut self,
        py: Python<'py>,
        f: &'static Field,
        s: &str,
        memo: &'a mut LineMemo<'py>,
    ) -> Str<'a, 'py> {
        let addr = std::ptr::from_ref(f) as usize;
        if self.slots.is_empty() {
            // (no room: every field a miss, as if it had no slot)
            if self.slots.try_reserve_exact(SLOTS).is_ok() {
                self.slots.resize_with(SLOTS, Slot::default);
            }
        }
        let i = (addr / std::mem::size_of::<Field>().max(1)) % SLOTS;
        let Some(slot) = self.slots.get_mut(i) else {
            return if repeats(f) {
                Str::Made(kept(&mut self.values, py, s))
            } else {
                memo.str(py, s)
            };
        };
        if slot.field != addr {
            slot.field = addr;
            slot.repeats = repeats(f);
            slot.seen.clear();
            slot.next = 0;
        }
        if !slot.repeats {
            return memo.str(py, s);
        }
        let len = s.len();
        let hit = slot
            .seen
            .iter()
            .position(|seen| seen.value.len() == len && seen.value.as_bytes() == s.as_bytes());
        if let Some(i) = hit {
            // (returned whatever `get` gives: a borrow returned on one branch only would hold
            // `slot` borrowed on the other)
            return match slot.seen.get(i) {
                Some(seen) => Str::Kept(seen.obj.bind(py)),
                None => Str::Made(PyString::new(py, s)),
            };
        }
        let obj = kept(&mut self.values, py, s);
        if len <= SLOT_VALUE_MAX {
            let mut value = String::new();
            if value.try_reserve_exact(len).is_ok() {
                value.push_str(s);
                let seen = Seen {
                    value,
                    obj: obj.clone().unbind(),
                };
                if slot.seen.len() < SLOT_WAYS {
                    if slot.seen.try_reserve(SLOT_WAYS).is_ok() {
                        slot.seen.push(seen);
                    }
                } else if let Some(old) = slot.seen.get_mut(slot.next % SLOT_WAYS) {
                    *old = seen;
                    slot.next = slot.next.wrapping_add(1);
                }
            }
        }
        Str::Made(obj)
    }

    /// The string of dialect name `name`.
    fn dialect<'py>(&mut self, py: Python<'py>, name: &'static str) -> Bound<'py, PyString> {
        let key = (name.as_ptr() as usize, name.len());
        match &self.dialect {
            Some((k, s)) if *k == key => s.bind(py).clone(),
            _ => {
                let s = PyString::new(py, name);
                self.dialect = Some((key, s.clone().unbind()));
                s
            }
        }
    }

    /// The template of the event dicts of a line of dialect `name` ([`event_template`]; each
    /// event's dict a copy): its `dialect` is `dialect` (set again only when the line's dialect
    /// is not the last line's).
    fn template<'py>(
        &mut self,
        py: Python<'py>,
        name: &'static str,
        dialect: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let template = match &self.template {
            Some(t) => t.bind(py).clone(),
            None => {
                let t = event_template(py)?;
                self.template = Some(t.clone().unbind());
                self.template_dialect = (0, 0);
                t
            }
        };
        let key = (name.as_ptr() as usize, name.len());
        if self.template_dialect != key {
            if let Some(row) = preset_rows().1 {
                // (a value replaced, no key taken out: the table stays one `dict.copy` copies whole)
                template.set_item(row.key.get(py), dialect)?;
            }
            self.template_dialect = key;
        }
        Ok(template)
    }

    fn key<'py>(&mut self, py: Python<'py>, k: &str) -> Bound<'py, PyString> {
        kept(&mut self.map, py, k)
    }
}

/// How many spare keys the template's table is made for: with [`fields::ALWAYS`] they fill
/// it past two thirds of 16 slots, so it has 32 (room for 21 keys; the bench corpora's events
/// have at most 15).
const TEMPLATE_SPARE: usize = 5;

/// The rows of [`fields::FIELDS`] whose values the template holds already: `v` (always
/// `events/v1`) and `dialect` (the line's: [`KeyCache::template`]), so the walk's `put` of them
/// sets nothing (two dict stores of ~11 an event fewer).
fn preset_rows() -> (Option<&'static Field>, Option<&'static Field>) {
    static ROWS: OnceLock<(Option<usize>, Option<usize>)> = OnceLock::new();
    let (v, dialect) = *ROWS.get_or_init(|| {
        let row = |name: &str| fields::FIELDS.iter().position(|f| f.name == name);
        (row("v"), row("dialect"))
    });
    (
        v.and_then(|i| fields::FIELDS.get(i)),
        dialect.and_then(|i| fields::FIELDS.get(i)),
    )
}

/// The keys every event dict starts with, in order ([`fields::ALWAYS`], the first rows of
/// [`fields::FIELDS`]), `v` holding `events/v1` and the others `None` (the walk sets them: a
/// key already there keeps its place; `dialect` is set per line: [`preset_rows`]),
/// in a table that an event's other keys fit in. The spare keys that grew the table are taken
/// out again with `popitem` (which, unlike `del`, leaves no entry behind, so `dict.copy` copies
/// the table as it is rather than inserting key by key into a new one). Copying it and setting
/// values skips the new dict's first table and its two resizes (8 -> 16 -> 32 slots): the
/// order and the set of keys of the dicts are the walk's as before.
fn event_template(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let t = PyDict::new(py);
    let v = preset_rows().0.map(|f| std::ptr::from_ref(f) as usize);
    for f in fields::FIELDS.iter().take(fields::ALWAYS.len()) {
        if v == Some(std::ptr::from_ref(f) as usize) {
            t.set_item(f.key.get(py), intern!(py, V))?;
        } else {
            t.set_item(f.key.get(py), py.None())?;
        }
    }
    // (string keys: one key of another type would make every copy a table of general keys,
    // slower to look up and to fill)
    for i in 0..TEMPLATE_SPARE {
        t.set_item(PyString::new(py, &format!("spare {i}")), py.None())?;
    }
    for _ in 0..TEMPLATE_SPARE {
        t.call_method0(intern!(py, "popitem"))?;
    }
    Ok(t)
}

/// Python objects of `parsed` that the line's events reuse (their `text` and
/// `tool.arguments`), so one line's strings are decoded once and shared, as in the reference.
struct Shared<'py> {
    /// (address, length) of wanted strings and (address, 0) of wanted values.
    wanted: Vec<(usize, usize)>,
    /// The same keys as a set once there are many (one line can have 100k events).
    wanted_set: Option<HashSet<(usize, usize)>>,
    found: HashMap<(usize, usize), Bound<'py, PyAny>>,
}

/// Above this many wanted objects a set beats a linear scan.
const SHARED_SCAN_MAX: usize = 8;

impl<'py> Shared<'py> {
    fn none() -> Self {
        Shared {
            wanted: Vec::new(),
            wanted_set: None,
            found: HashMap::new(),
        }
    }

    fn for_events(events: &[Event<'_>]) -> Self {
        let mut wanted = Vec::new();
        for ev in events {
            if let Some(std::borrow::Cow::Borrowed(t)) = &ev.text {
                if !t.is_empty() {
                    wanted.push((t.as_ptr() as usize, t.len()));
                }
            }
            if let Some(args) = ev.tool.as_ref().and_then(|t| t.arguments) {
                wanted.push((std::ptr::from_ref(args) as usize, 0));
            }
        }
        let wanted_set = (wanted.len() > SHARED_SCAN_MAX).then(|| wanted.iter().copied().collect());
        Shared {
            wanted,
            wanted_set,
            found: HashMap::new(),
        }
    }

    #[inline]
    fn note(&mut self, key: (usize, usize), obj: &Bound<'py, PyAny>) {
        let hit = match &self.wanted_set {
            Some(set) => set.contains(&key),
            None => self.wanted.contains(&key),
        };
        if hit {
            self.found.insert(key, obj.clone());
        }
    }

    fn get(&self, key: (usize, usize)) -> Option<&Bound<'py, PyAny>> {
        self.found.get(&key)
    }
}

pub fn value<'py>(
    py: Python<'py>,
    v: &Value<'_>,
    keys: &mut KeyCache,
) -> PyResult<Bound<'py, PyAny>> {
    let mut none = Shared::none();
    shared_value(py, v, keys, &mut none)
}

fn shared_value<'py>(
    py: Python<'py>,
    v: &Value<'_>,
    keys: &mut KeyCache,
    shared: &mut Shared<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let obj = plain_value(py, v, keys, shared)?;
    if !shared.wanted.is_empty() {
        shared.note((std::ptr::from_ref(v) as usize, 0), &obj);
        if let Value::Str(s) = v {
            shared.note((s.as_ptr() as usize, s.len()), &obj);
        }
    }
    Ok(obj)
}

fn plain_value<'py>(
    py: Python<'py>,
    v: &Value<'_>,
    keys: &mut KeyCache,
    shared: &mut Shared<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Int(i) => i.into_bound_py_any(py)?,
        Value::BigInt(text) => py.get_type::<pyo3::types::PyInt>().call1((*text,))?,
        Value::Float(f) => f.into_bound_py_any(py)?,
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(shared_value(py, item, keys, shared)?)?;
            }
            list.into_any()
        }
        Value::Object(pairs) => {
            let dict = PyDict::new(py);
            for (k, item) in pairs {
                dict.set_item(keys.key(py, k), shared_value(py, item, keys, shared)?)?;
            }
            dict.into_any()
        }
    })
}

/// [`value`], the string at `text_key` (address, length) given as `text`, the object already
/// made from it (one Python string, not a second decoding of the same text: on the claude
/// bench corpus a third of the tool results' text).
fn with_text<'py>(
    py: Python<'py>,
    v: &Value<'_>,
    keys: &mut KeyCache,
    text_key: (usize, usize),
    text: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Str(s) if (s.as_ptr() as usize, s.len()) == text_key => text.clone(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(with_text(py, item, keys, text_key, text)?)?;
            }
            list.into_any()
        }
        Value::Object(pairs) => {
            let dict = PyDict::new(py);
            for (k, item) in pairs {
                dict.set_item(keys.key(py, k), with_text(py, item, keys, text_key, text)?)?;
            }
            dict.into_any()
        }
        _ => value(py, v, keys)?,
    })
}

fn num<'py>(py: Python<'py>, n: Num) -> PyResult<Bound<'py, PyAny>> {
    match n {
        // (an i128 goes through pyo3's slow 128-bit conversion: shifts and ors of Python ints)
        Num::Int(i) => match i64::try_from(i) {
            Ok(i) => i.into_bound_py_any(py),
            Err(_) => i.into_bound_py_any(py),
        },
        Num::Float(f) => f.into_bound_py_any(py),
    }
}

/// Whether `sel` has `raw` and `parsed`: their rows found once (`Sel::has_name` compares the
/// names of the table's rows one by one: ~1,000 instructions a line, a twentieth of lean
/// dicts' count on the claude bench corpus).
fn raw_parsed(sel: Sel) -> (bool, bool) {
    static ROWS: OnceLock<(Option<usize>, Option<usize>)> = OnceLock::new();
    let (raw, parsed) = *ROWS.get_or_init(|| {
        let row = |name: &str| fields::FIELDS.iter().position(|f| f.name == name);
        (row("raw"), row("parsed"))
    });
    (
        raw.is_some_and(|i| sel.has(i)),
        parsed.is_some_and(|i| sel.has(i)),
    )
}

/// Append the dicts for one line's events to `out`, numbering them from `*seq`; only the
/// fields of `sel` (a projection converts neither `raw` nor `parsed` unless asked).
pub fn line<'py>(
    py: Python<'py>,
    rec: &LineEvents<'_>,
    seq: &mut u64,
    keys: &mut KeyCache,
    out: &Bound<'py, PyList>,
    sel: Sel,
) -> PyResult<()> {
    let (wants_raw, wants_parsed) = raw_parsed(sel);
    let raw = wants_raw.then(|| PyString::new(py, rec.raw));
    let (parsed, shared) = if wants_parsed {
        let mut shared = Shared::for_events(&rec.events);
        let parsed = match rec.parsed {
            Some(v) => shared_value(py, v, keys, &mut shared)?,
            None => py.None().into_bound(py),
        };
        (Some(parsed), shared)
    } else {
        (None, Shared::none())
    };
    let dialect = keys.dialect(py, rec.dialect);
    let template = keys.template(py, rec.dialect, &dialect)?;
    let (v_row, dialect_row) = preset_rows();
    let preset = [
        v_row.map_or(0, |f| std::ptr::from_ref(f) as usize),
        dialect_row.map_or(0, |f| std::ptr::from_ref(f) as usize),
    ];
    let mut memo = LineMemo {
        multi: rec.events.len() > 1,
        ..LineMemo::default()
    };
    for ev in &rec.events {
        let mut w = DictWriter {
            py,
            d: template.copy()?,
            keys,
            preset,
            shared: &shared,
            memo: &mut memo,
            raw: raw.as_ref(),
            parsed: parsed.as_ref(),
            dialect: &dialect,
            dialect_str: rec.dialect,
            text: None,
            text_key: (0, 0),
            seq: *seq,
        };
        fields::event(&mut w, sel, ev, rec, *seq)?;
        out.append(w.d)?;
        *seq += 1;
    }
    Ok(())
}

/// A [`LineMemo`] slot: a value's key and its object.
type Memo<'py, K, T> = Option<(K, Bound<'py, T>)>;

/// How many strings and how many ints one line's [`LineMemo`] holds.
const MEMO: usize = 4;

/// CPython's ints up to this one are made once, at start (`_PY_NSMALLPOSINTS`).
const SMALL_INT_MAX: u64 = 256;

/// The strings and ints already made for one line's events, so that a value they repeat is
/// one object, not one per field: on the claude bench corpus a usage event's `messageId` and
/// `modelCallId` (the same bytes of the line) and the `position` and `lineBytes` of a line's
/// second event (a third of the events), 6,500 objects of 43,000 fewer to make and free.
/// Strings are known by (address, length): every value the walk gives borrows from the line
/// or its events, alive (and unchanged) until the line is done, so equal keys are equal bytes.
#[derive(Default)]
struct LineMemo<'py> {
    strs: [Memo<'py, (usize, usize), PyString>; MEMO],
    ints: [Memo<'py, u64, PyAny>; MEMO],
    /// whether the line has more than one event (else its ints are not kept)
    multi: bool,
    /// the next slot to fill (past [`MEMO`] the first ones are overwritten in turn)
    next_str: usize,
    next_int: usize,
}

impl<'py> LineMemo<'py> {
    /// The string of `s`, kept (and borrowed from) here.
    #[inline]
    fn str(&mut self, py: Python<'py>, s: &str) -> Str<'_, 'py> {
        let key = (s.as_ptr() as usize, s.len());
        let hit = self
            .strs
            .iter()
            .take(self.next_str)
            .position(|m| m.as_ref().is_some_and(|(k, _)| *k == key));
        let i = match hit {
            Some(i) => i,
            None => {
                let i = self.next_str % MEMO;
                self.next_str = self.next_str.wrapping_add(1);
                match self.strs.get_mut(i) {
                    Some(slot) => *slot = Some((key, PyString::new(py, s))),
                    None => return Str::Made(PyString::new(py, s)),
                }
                i
            }
        };
        match self.strs.get(i) {
            Some(Some((_, obj))) => Str::Kept(obj),
            _ => Str::Made(PyString::new(py, s)),
        }
    }

    #[inline]
    fn uint(&mut self, py: Python<'py>, n: u64) -> PyResult<Bound<'py, PyAny>> {
        if n <= SMALL_INT_MAX {
            return n.into_bound_py_any(py);
        }
        for (k, obj) in self.ints.iter().take(self.next_int).flatten() {
            if *k == n {
                return Ok(obj.clone());
            }
        }
        let obj = n.into_bound_py_any(py)?;
        if let Some(slot) = self.ints.get_mut(self.next_int % MEMO) {
            *slot = Some((n, obj.clone()));
        }
        self.next_int = self.next_int.wrapping_add(1);
        Ok(obj)
    }
}

/// Whether `f`'s values come from a small set (a kind, a model, a session id...), so that one
/// Python string per value, kept in the [`KeyCache`], serves every event rather than a new
/// string decoded for each (ids unique to an event are not kept: they would fill the cache).
#[inline(always)]
fn repeats(f: &Field) -> bool {
    matches!(
        f.name,
        "kind"
            | "subtype"
            | "role"
            | "usageScope"
            | "encoding"
            | "toolClass"
            | "providerToolName"
            | "speed"
            | "sessionId"
            | "nativeType"
            | "stopReason"
            | "cwd"
            | "name"
            | "code"
            | "errorKind"
            | "model"
            | "phase"
            | "type"
            | "disposition"
            | "event"
            | "window"
            | "limitType"
    )
}

/// The dict [`Writer`]: each field set on the dict being built (`d`; a nested object's own
/// while the walk is inside it).
struct DictWriter<'py, 'w> {
    py: Python<'py>,
    d: Bound<'py, PyDict>,
    keys: &'w mut KeyCache,
    shared: &'w Shared<'py>,
    memo: &'w mut LineMemo<'py>,
    raw: Option<&'w Bound<'py, PyString>>,
    parsed: Option<&'w Bound<'py, PyAny>>,
    dialect: &'w Bound<'py, PyString>,
    dialect_str: &'w str,
    /// the addresses of the rows whose values `d` (a copy of the line's template) holds
    /// already ([`preset_rows`])
    preset: [usize; 2],
    /// the event's `text` object, for a `toolResult` that repeats it, and (address, length)
    /// of the string it was made from, for a value of the line that is that very string
    text: Option<Bound<'py, PyAny>>,
    text_key: (usize, usize),
    /// the event's `seq`
    seq: u64,
}

impl<'py> DictWriter<'py, '_> {
    fn object(&mut self, o: fields::Obj<'_>) -> PyResult<Bound<'py, PyDict>> {
        let outer = std::mem::replace(&mut self.d, PyDict::new(self.py));
        let walked = o.walk(self);
        let inner = std::mem::replace(&mut self.d, outer);
        walked.map(|()| inner)
    }
}

impl Writer for DictWriter<'_, '_> {
    type Error = PyErr;

    /// The rows the template holds already set nothing, here in the walk (inlined): not a
    /// call of [`DictWriter::set`], whose frame (six saved registers, a jump table) is most
    /// of what a row that stores nothing costs.
    #[inline]
    fn put(&mut self, f: &'static Field, v: Val<'_>) -> PyResult<()> {
        if matches!(v, Val::Str(_)) && self.preset.contains(&(std::ptr::from_ref(f) as usize)) {
            return Ok(());
        }
        self.set(f, v)
    }
}

impl DictWriter<'_, '_> {
    /// Field `f`'s value `v` set on the dict.
    #[inline(never)]
    fn set(&mut self, f: &'static Field, v: Val<'_>) -> PyResult<()> {
        let py = self.py;
        let key = f.key.get(py);
        match v {
            Val::Str(s) if std::ptr::eq(s, self.dialect_str) => self.d.set_item(key, self.dialect),
            Val::Str(s) if std::ptr::eq(s, V) => self.d.set_item(key, intern!(py, V)),
            Val::Str(s) => match self.keys.field_str(py, f, s, self.memo) {
                Str::Kept(obj) => self.d.set_item(key, obj),
                Str::Made(obj) => self.d.set_item(key, obj),
            },
            Val::Text(text) => {
                let obj = match self.shared.get((text.as_ptr() as usize, text.len())) {
                    Some(obj) if !text.is_empty() => obj.clone(),
                    _ => PyString::new(py, text).into_any(),
                };
                self.d.set_item(key, &obj)?;
                self.text = Some(obj);
                self.text_key = (text.as_ptr() as usize, text.len());
                Ok(())
            }
            // (an event's own `seq` is no other's; one event has no other to share with)
            Val::UInt(n) if n == self.seq || !self.memo.multi => self.d.set_item(key, n),
            Val::UInt(n) => self.d.set_item(key, self.memo.uint(py, n)?),
            Val::Bool(b) => self.d.set_item(key, b),
            Val::Num(n) => self.d.set_item(key, num(py, n)?),
            Val::Null => self.d.set_item(key, py.None()),
            Val::Json(v) => self.d.set_item(key, value(py, v, self.keys)?),
            Val::Args(args) => match self.shared.get((std::ptr::from_ref(args) as usize, 0)) {
                Some(obj) => self.d.set_item(key, obj),
                // the string the event's `text` was made from (a tool result's content): its
                // object again, not a second decoding (a projection has no `parsed` to share)
                // or a tree holding it (a tool result's one text block): the tree built around
                // that object
                None => match &self.text {
                    Some(t) if self.text_key.1 > 0 => {
                        let obj = with_text(py, args, self.keys, self.text_key, t)?;
                        self.d.set_item(key, obj)
                    }
                    _ => self.d.set_item(key, value(py, args, self.keys)?),
                },
            },
            Val::SameAsText(_) => match &self.text {
                Some(t) => self.d.set_item(key, t),
                None => self.d.set_item(key, ""),
            },
            Val::Obj(o) => {
                let inner = self.object(o)?;
                self.d.set_item(key, inner)
            }
            Val::List(objs) => {
                let list = PyList::empty(py);
                for o in objs.objs() {
                    list.append(self.object(o)?)?;
                }
                self.d.set_item(key, list)
            }
            Val::Raw(s) => match self.raw {
                Some(raw) => self.d.set_item(key, raw),
                None => self.d.set_item(key, s),
            },
            Val::Parsed => match self.parsed {
                Some(p) => self.d.set_item(key, p),
                None => self.d.set_item(key, py.None()),
            },
        }
    }
}
