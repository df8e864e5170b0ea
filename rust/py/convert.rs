//! Core values and events -> Python objects. Translation only.

use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, IntoPyObjectExt};

use crate::event::{Event, Extra, Num, ToolResult};
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

fn num<'py>(py: Python<'py>, n: Num) -> PyResult<Bound<'py, PyAny>> {
    match n {
        Num::Int(i) => i.into_bound_py_any(py),
        Num::Float(f) => f.into_bound_py_any(py),
    }
}

/// Append the dicts for one line's events to `out`, numbering them from `*seq`.
pub fn line<'py>(
    py: Python<'py>,
    rec: &LineEvents<'_>,
    seq: &mut u64,
    keys: &mut KeyCache,
    out: &Bound<'py, PyList>,
) -> PyResult<()> {
    let raw = PyString::new(py, rec.raw);
    let mut shared = Shared::for_events(&rec.events);
    let parsed = match rec.parsed {
        Some(v) => shared_value(py, v, keys, &mut shared)?,
        None => py.None().into_bound(py),
    };
    let dialect = PyString::new(py, rec.dialect);
    for ev in &rec.events {
        let d = event(py, ev, rec, *seq, &dialect, &shared, keys)?;
        d.set_item(intern!(py, "raw"), &raw)?;
        d.set_item(intern!(py, "parsed"), &parsed)?;
        out.append(d)?;
        *seq += 1;
    }
    Ok(())
}

fn event<'py>(
    py: Python<'py>,
    ev: &Event<'_>,
    rec: &LineEvents<'_>,
    seq: u64,
    dialect: &Bound<'py, PyString>,
    shared: &Shared<'py>,
    keys: &mut KeyCache,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "v"), intern!(py, V))?;
    d.set_item(intern!(py, "seq"), seq)?;
    d.set_item(intern!(py, "position"), rec.position)?;
    d.set_item(intern!(py, "dialect"), dialect)?;
    d.set_item(intern!(py, "kind"), ev.kind)?;
    d.set_item(intern!(py, "subtype"), ev.subtype.as_ref())?;
    if let Some(role) = ev.role {
        d.set_item(intern!(py, "role"), role)?;
    }
    if let Some(text) = &ev.text {
        match shared.get((text.as_ptr() as usize, text.len())) {
            Some(obj) if !text.is_empty() => d.set_item(intern!(py, "text"), obj)?,
            _ => d.set_item(intern!(py, "text"), text.as_ref())?,
        }
    }
    if let Some(tool) = &ev.tool {
        let t = PyDict::new(py);
        t.set_item(intern!(py, "name"), tool.name.as_ref())?;
        if let Some(args) = tool.arguments {
            match shared.get((std::ptr::from_ref(args) as usize, 0)) {
                Some(obj) => t.set_item(intern!(py, "arguments"), obj)?,
                None => t.set_item(intern!(py, "arguments"), value(py, args, keys)?)?,
            }
        }
        if let Some(id) = tool.id {
            t.set_item(intern!(py, "id"), id)?;
        }
        if let Some(e) = tool.is_error {
            t.set_item(intern!(py, "isError"), e)?;
        }
        d.set_item(intern!(py, "tool"), t)?;
    }
    if let Some(err) = &ev.error {
        let e = PyDict::new(py);
        e.set_item(intern!(py, "code"), err.code.as_ref())?;
        e.set_item(intern!(py, "message"), err.message.as_ref())?;
        e.set_item(intern!(py, "errorKind"), err.kind)?;
        d.set_item(intern!(py, "error"), e)?;
    }
    if let Some(t) = &ev.retry_at {
        d.set_item(intern!(py, "retryAt"), t.as_str())?;
    }
    if let Some(ms) = ev.retry_after_ms {
        d.set_item(intern!(py, "retryAfterMs"), ms)?;
    }
    if let Some(u) = &ev.usage {
        let e = PyDict::new(py);
        if let Some(n) = u.input {
            e.set_item(intern!(py, "inputTokens"), num(py, n)?)?;
        }
        if let Some(n) = u.output {
            e.set_item(intern!(py, "outputTokens"), num(py, n)?)?;
        }
        if let Some(n) = u.cached {
            e.set_item(intern!(py, "cachedTokens"), num(py, n)?)?;
        }
        if let Some(n) = u.cost {
            e.set_item(intern!(py, "costUsd"), num(py, n)?)?;
        }
        e.set_item(intern!(py, "model"), u.model.as_ref())?;
        if u.unknown {
            e.set_item(intern!(py, "unknown"), true)?;
        }
        d.set_item(intern!(py, "usage"), e)?;
    }
    if let Some(scope) = ev.usage_scope {
        d.set_item(intern!(py, "usageScope"), scope)?;
    }
    if let Some(id) = ev.message_id {
        d.set_item(intern!(py, "messageId"), id)?;
    }
    if ev.delta {
        d.set_item(intern!(py, "delta"), true)?;
    }
    if let Some(n) = ev.line_bytes {
        d.set_item(intern!(py, "truncated"), true)?;
        d.set_item(intern!(py, "lineBytes"), n)?;
    }
    if let Some(s) = ev.encoding {
        d.set_item(intern!(py, "encoding"), s)?;
    }
    if let Some(n) = ev.stream_bytes {
        d.set_item(intern!(py, "streamBytes"), n)?;
    }
    if let Some(x) = &ev.extra {
        extra(py, x, &d, keys)?;
    }
    let m = &rec.meta;
    if let Some(s) = m.session_id {
        d.set_item(intern!(py, "sessionId"), s)?;
    }
    if let Some(s) = m.timestamp {
        d.set_item(intern!(py, "timestamp"), s)?;
    }
    if let Some(s) = m.parent_tool_use_id {
        d.set_item(intern!(py, "parentToolUseId"), s)?;
    }
    if let Some(s) = m.native_type {
        d.set_item(intern!(py, "nativeType"), s)?;
    }
    if let Some(s) = m.model_call_id {
        d.set_item(intern!(py, "modelCallId"), s)?;
    }
    if let Some(s) = m.native_id {
        d.set_item(intern!(py, "nativeId"), s)?;
    }
    if let Some(s) = m.stop_reason {
        d.set_item(intern!(py, "stopReason"), s)?;
    }
    if let Some(v) = m.duration_ms {
        d.set_item(intern!(py, "durationMs"), value(py, v, keys)?)?;
    }
    if let Some(s) = m.result_text {
        d.set_item(intern!(py, "resultText"), s)?;
    }
    if let Some(v) = m.structured_output {
        d.set_item(intern!(py, "structuredOutput"), value(py, v, keys)?)?;
    }
    if m.repeats_error {
        d.set_item(intern!(py, "repeatsError"), true)?;
    }
    if m.partial {
        d.set_item(intern!(py, "partial"), true)?;
    }
    if m.result_joins_messages {
        d.set_item(intern!(py, "resultJoinsMessages"), true)?;
    }
    if let Some(s) = m.request_id {
        d.set_item(intern!(py, "requestId"), s)?;
    }
    if let Some(s) = m.agent_id {
        d.set_item(intern!(py, "agentId"), s)?;
    }
    if m.sidechain {
        d.set_item(intern!(py, "sidechain"), true)?;
    }
    if rec.repairs > 0 {
        d.set_item(intern!(py, "repairedSurrogates"), rec.repairs)?;
    }
    Ok(d)
}

/// The per-event oneshot extras (docs/events.md), in output order.
fn extra<'py>(
    py: Python<'py>,
    x: &Extra<'_>,
    d: &Bound<'py, PyDict>,
    keys: &mut KeyCache,
) -> PyResult<()> {
    if let Some(c) = x.tool_class {
        d.set_item(intern!(py, "toolClass"), c)?;
    }
    if let Some(n) = &x.provider_tool_name {
        d.set_item(intern!(py, "providerToolName"), n.as_ref())?;
    }
    if let Some(a) = &x.provider_arguments {
        d.set_item(intern!(py, "providerArguments"), value(py, a, keys)?)?;
    }
    match &x.tool_result {
        Some(ToolResult::Value(v)) => {
            d.set_item(intern!(py, "toolResult"), value(py, v, keys)?)?;
        }
        Some(ToolResult::Text) => match d.get_item(intern!(py, "text"))? {
            Some(t) => d.set_item(intern!(py, "toolResult"), t)?,
            None => d.set_item(intern!(py, "toolResult"), "")?,
        },
        None => {}
    }
    if !x.file_changes.is_empty() {
        let list = PyList::empty(py);
        for (event, path, diff) in &x.file_changes {
            let c = PyDict::new(py);
            c.set_item(intern!(py, "event"), *event)?;
            c.set_item(intern!(py, "path"), path.as_ref())?;
            if let Some(diff) = diff {
                c.set_item(intern!(py, "diff"), *diff)?;
            }
            list.append(c)?;
        }
        d.set_item(intern!(py, "fileChanges"), list)?;
    }
    if let Some(s) = &x.subagent {
        let o = PyDict::new(py);
        o.set_item(intern!(py, "id"), s.id.as_ref())?;
        o.set_item(intern!(py, "phase"), s.phase)?;
        if let Some(n) = &s.name {
            o.set_item(intern!(py, "name"), n.as_ref())?;
        }
        if let Some(n) = &s.kind {
            o.set_item(intern!(py, "type"), n.as_ref())?;
        }
        if let Some(n) = &s.description {
            o.set_item(intern!(py, "description"), n.as_ref())?;
        }
        if let Some(n) = &s.prompt {
            o.set_item(intern!(py, "prompt"), n.as_ref())?;
        }
        if let Some(n) = s.disposition {
            o.set_item(intern!(py, "disposition"), n)?;
        }
        if let Some(n) = s.alias {
            o.set_item(intern!(py, "alias"), n)?;
        }
        d.set_item(intern!(py, "subagent"), o)?;
    }
    if let Some(b) = x.tokens_before {
        d.set_item(intern!(py, "tokensBefore"), value(py, b, keys)?)?;
    }
    if let Some(a) = x.tokens_after {
        d.set_item(intern!(py, "tokensAfter"), value(py, a, keys)?)?;
    }
    if x.retry {
        d.set_item(intern!(py, "retry"), true)?;
    }
    if x.delta_only {
        d.set_item(intern!(py, "deltaOnly"), true)?;
    }
    if let Some(r) = x.reasoning_tokens {
        d.set_item(intern!(py, "reasoningTokens"), value(py, r, keys)?)?;
    }
    if x.empty_result {
        d.set_item(intern!(py, "emptyResult"), true)?;
    }
    if x.answer {
        d.set_item(intern!(py, "answer"), true)?;
    }
    if let Some(p) = x.partial_arguments {
        d.set_item(intern!(py, "partialArguments"), p)?;
    }
    if x.continuation {
        d.set_item(intern!(py, "continuation"), true)?;
    }
    Ok(())
}
