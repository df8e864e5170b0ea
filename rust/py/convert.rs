//! Core values and events -> Python objects. Translation only.

use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, IntoPyObjectExt};

use crate::event::{Event, Num};
use crate::fields::{self, Field, Sel, Val, Writer};
use crate::normalize::{LineEvents, V};
use crate::value::Value;

/// FNV-1a: object keys are short, and SipHash's DoS resistance buys nothing for a cache that
/// stops growing at [`CACHE_SIZE_MAX`] entries.
#[derive(Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Object keys seen so far, so repeated keys share one Python string: one per `normalize`
/// call, and one per `Normalizer` kept across its `feed` calls (the keys of a stream repeat from
/// chunk to chunk). Holds at most [`CACHE_SIZE_MAX`] keys of at most [`CACHE_KEY_MAX`] bytes.
pub struct KeyCache {
    map: HashMap<String, Py<PyString>, std::hash::BuildHasherDefault<Fnv>>,
}

const CACHE_KEY_MAX: usize = 48;
const CACHE_SIZE_MAX: usize = 4096;

impl KeyCache {
    pub fn new() -> Self {
        KeyCache {
            map: HashMap::default(),
        }
    }

    fn key<'py>(&mut self, py: Python<'py>, k: &str) -> Bound<'py, PyString> {
        if k.len() > CACHE_KEY_MAX {
            return PyString::new(py, k);
        }
        if let Some(s) = self.map.get(k) {
            return s.bind(py).clone();
        }
        let s = PyString::new(py, k);
        if self.map.len() < CACHE_SIZE_MAX {
            self.map.insert(k.to_owned(), s.clone().unbind());
        }
        s
    }
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
        Num::Int(i) => i.into_bound_py_any(py),
        Num::Float(f) => f.into_bound_py_any(py),
    }
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
    let raw = sel.has_name("raw").then(|| PyString::new(py, rec.raw));
    let (parsed, shared) = if sel.has_name("parsed") {
        let mut shared = Shared::for_events(&rec.events);
        let parsed = match rec.parsed {
            Some(v) => shared_value(py, v, keys, &mut shared)?,
            None => py.None().into_bound(py),
        };
        (Some(parsed), shared)
    } else {
        (None, Shared::none())
    };
    let dialect = PyString::new(py, rec.dialect);
    for ev in &rec.events {
        let mut w = DictWriter {
            py,
            d: PyDict::new(py),
            keys,
            shared: &shared,
            raw: raw.as_ref(),
            parsed: parsed.as_ref(),
            dialect: &dialect,
            dialect_str: rec.dialect,
            text: None,
            text_key: (0, 0),
        };
        fields::event(&mut w, sel, ev, rec, *seq)?;
        out.append(w.d)?;
        *seq += 1;
    }
    Ok(())
}

/// The dict [`Writer`]: each field set on the dict being built (`d`; a nested object's own
/// while the walk is inside it).
struct DictWriter<'py, 'w> {
    py: Python<'py>,
    d: Bound<'py, PyDict>,
    keys: &'w mut KeyCache,
    shared: &'w Shared<'py>,
    raw: Option<&'w Bound<'py, PyString>>,
    parsed: Option<&'w Bound<'py, PyAny>>,
    dialect: &'w Bound<'py, PyString>,
    dialect_str: &'w str,
    /// the event's `text` object, for a `toolResult` that repeats it, and (address, length)
    /// of the string it was made from, for a value of the line that is that very string
    text: Option<Bound<'py, PyAny>>,
    text_key: (usize, usize),
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

    #[inline]
    fn put(&mut self, f: &'static Field, v: Val<'_>) -> PyResult<()> {
        let py = self.py;
        let key = f.key.get(py);
        match v {
            Val::Str(s) if std::ptr::eq(s, self.dialect_str) => self.d.set_item(key, self.dialect),
            Val::Str(s) if std::ptr::eq(s, V) => self.d.set_item(key, intern!(py, V)),
            Val::Str(s) => self.d.set_item(key, s),
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
            Val::UInt(n) => self.d.set_item(key, n),
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
