//! Runner journal validation against the events schema `$defs`. Mirrors `reference/journal.py`.
//!
//! A journal is JSONL; each line is framed, budgeted and parsed exactly as `normalize` does, then
//! dispatched on its `kind` to the `$defs` entry whose `properties.kind.const` (directly or in an
//! `allOf` branch) names it, and validated with the JSON Schema subset those definitions use:
//! `type`, `properties`, `required`, `additionalProperties` (boolean), `const`, `enum`,
//! `minimum`, `minLength`, `pattern`, `format: date-time`, `items`, `allOf` and local `$ref`.
//! Every violation is reported. The schema is embedded and compiled once ([`journal`]); the hot
//! path allocates nothing for a valid record beyond the parsed value.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::budget::{self, Budget, OutOfMemory, Over};
use crate::event::Num;
use crate::framing::{Framer, Span};
use crate::parse;
use crate::value::Value;

/// The events schema; its `$defs` are the journal record definitions.
pub const SCHEMA_TEXT: &str = include_str!("../python/checkfu_fast/schemas/events-v1.schema.json");

/// Input is framed in slices of this many bytes (bounds the span buffer; lines that straddle a
/// slice boundary are copied by the framer).
const FEED_BYTES: usize = 1 << 20;

/// One violation of one journal line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// 1-based physical line number (blank lines count).
    pub line: u64,
    /// Byte offset of the line in the stream.
    pub position: u64,
    /// The record's `kind`, once it is known to be a string.
    pub kind: Option<String>,
    /// JSON Pointer of the offending value (`""` for the whole line).
    pub pointer: String,
    pub keyword: &'static str,
    pub message: String,
}

// -- the compiled schema ----------------------------------------------------------------------

/// What a `type` keyword checks. Anything that is not one of the seven names (including a list
/// of names) falls through to the integer test, exactly as the reference's `_type_ok` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Object,
    Array,
    String,
    Boolean,
    Null,
    Number,
    Integer,
}

/// One compiled schema node: the keywords in evaluation order (`Node` in the reference).
#[derive(Debug)]
struct Node {
    /// Index into [`Journal::defs`].
    reference: Option<usize>,
    all_of: Vec<Node>,
    /// The check and the text shown in "expected ..." (`str(node.type)`).
    ty: Option<(Vec<Ty>, String)>,
    konst: Option<Value<'static>>,
    enumeration: Option<Vec<Value<'static>>>,
    minimum: Option<Value<'static>>,
    min_length: Option<i64>,
    pattern: Option<(String, Regex)>,
    date_time: bool,
    required: Vec<String>,
    properties: Vec<(String, Node)>,
    additional_false: bool,
    items: Option<Box<Node>>,
}

/// The compiled `$defs` and the kind -> definition dispatch table.
#[derive(Debug)]
pub struct Journal {
    names: Vec<String>,
    defs: Vec<Node>,
    by_kind: HashMap<String, usize>,
}

impl Journal {
    /// Number of record kinds the schema defines.
    pub fn kinds(&self) -> usize {
        self.by_kind.len()
    }

    /// The `$defs` name a kind dispatches to.
    pub fn def_for(&self, kind: &str) -> Option<&str> {
        let i = *self.by_kind.get(kind)?;
        self.names.get(i).map(String::as_str)
    }
}

/// Python's `str()` of a schema value nested in a container (`repr`).
fn py_repr(v: &Value<'_>, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::BigInt(s) => out.push_str(s),
        Value::Float(f) => out.push_str(&py_float(*f)),
        Value::Str(s) => {
            let q = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            out.push(q);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == q => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(q);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(x, out);
            }
            out.push(']');
        }
        Value::Object(_) => {
            out.push('{');
            for (i, (k, x)) in v.dict_items().into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(&Value::Str(std::borrow::Cow::Borrowed(k)), out);
                out.push_str(": ");
                py_repr(x, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form when the decimal exponent
/// is below -4 or at least 16.
fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let e = format!("{:e}", f.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let mut s = String::new();
    if f < 0.0 {
        s.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = usize::try_from(exp).unwrap_or(0) + 1;
            let (int_part, frac) = if digits.len() > int_len {
                (
                    digits.get(..int_len).unwrap_or_default().to_string(),
                    digits.get(int_len..).unwrap_or_default().to_string(),
                )
            } else {
                let mut ip = digits.clone();
                ip.extend(std::iter::repeat_n('0', int_len - digits.len()));
                (ip, "0".to_string())
            };
            s.push_str(&int_part);
            s.push('.');
            s.push_str(&frac);
        } else {
            s.push_str("0.");
            s.extend(std::iter::repeat_n(
                '0',
                usize::try_from(-exp - 1).unwrap_or(0),
            ));
            s.push_str(&digits);
        }
    } else {
        let mut chars = digits.chars();
        if let Some(first) = chars.next() {
            s.push(first);
        }
        let rest: String = chars.collect();
        if !rest.is_empty() {
            s.push('.');
            s.push_str(&rest);
        }
        s.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    }
    s
}

/// `show` of the reference: a schema constant in a message.
fn show(v: &Value<'_>) -> String {
    match v {
        Value::Str(s) => format!("\"{s}\""),
        Value::Bool(true) => "true".into(),
        Value::Bool(false) => "false".into(),
        Value::Null => "null".into(),
        other => {
            let mut s = String::new();
            py_repr(other, &mut s);
            s
        }
    }
}

fn type_named(name: &str) -> Ty {
    match name {
        "object" => Ty::Object,
        "array" => Ty::Array,
        "string" => Ty::String,
        "boolean" => Ty::Boolean,
        "null" => Ty::Null,
        "number" => Ty::Number,
        _ => Ty::Integer,
    }
}

/// `type` as one name or a list of names; the message shows them joined by " or ".
fn compile_type(t: &Value<'_>) -> Option<(Vec<Ty>, String)> {
    let names: Vec<&str> = match t {
        Value::Null => return None,
        Value::Str(s) => vec![s.as_ref()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    Some((
        names.iter().map(|n| type_named(n)).collect(),
        names.join(" or "),
    ))
}

fn compile_node(s: &Value<'static>, index: &HashMap<String, usize>) -> Result<Node, String> {
    let reference = match s.get("$ref") {
        None => None,
        Some(Value::Str(r)) => {
            let name = r.rsplit('/').next().unwrap_or_default();
            Some(
                *index
                    .get(name)
                    .ok_or_else(|| format!("unresolved $ref {r:?}"))?,
            )
        }
        Some(_) => return Err("$ref must be a string".into()),
    };
    let all_of = match s.get("allOf") {
        Some(v) => v
            .items()
            .iter()
            .map(|x| compile_node(x, index))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let pattern = match s.get("pattern") {
        None => None,
        Some(Value::Str(p)) => {
            // the pattern's `$` is ECMA-262 end of input: the regex crate's `$` already is
            let re = Regex::new(p).map_err(|e| format!("bad pattern {p:?}: {e}"))?;
            Some((p.to_string(), re))
        }
        Some(_) => return Err("pattern must be a string".into()),
    };
    let min_length = match s.get("minLength") {
        None | Some(Value::Null) => None,
        Some(Value::Int(n)) => Some(*n),
        Some(_) => return Err("minLength must be an integer".into()),
    };
    let minimum = match s.get("minimum") {
        None | Some(Value::Null) => None,
        Some(v @ (Value::Int(_) | Value::BigInt(_) | Value::Float(_))) => Some(v.clone()),
        Some(_) => return Err("minimum must be a number".into()),
    };
    let mut properties = Vec::new();
    if let Some(props) = s.get("properties") {
        for (k, v) in props.dict_items() {
            properties.push((k.to_string(), compile_node(v, index)?));
        }
    }
    let items = match s.get("items") {
        Some(v) => Some(Box::new(compile_node(v, index)?)),
        None => None,
    };
    Ok(Node {
        reference,
        all_of,
        ty: s.get("type").and_then(compile_type),
        konst: s.get("const").cloned(),
        enumeration: match s.get("enum") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.items().to_vec()),
        },
        minimum,
        min_length,
        pattern,
        date_time: s.str_eq("format", "date-time"),
        required: s
            .get("required")
            .map(|r| {
                r.items()
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        properties,
        additional_false: matches!(s.get("additionalProperties"), Some(Value::Bool(false))),
        items,
    })
}

/// `_kind_const` of the reference.
fn kind_const<'s>(s: &'s Value<'_>) -> Option<&'s str> {
    let kind = s.get("properties").and_then(|p| p.get("kind"));
    if let Some(c) = kind.and_then(|k| k.str_at("const")) {
        return Some(c);
    }
    s.get("allOf")?.items().iter().find_map(kind_const)
}

/// Compile the schema's `$defs` (the embedded one: [`journal`]).
pub fn compile(text: &'static str) -> Result<Journal, String> {
    let (schema, _) = parse::parse(text).map_err(|e| format!("schema: {}", e.message))?;
    let defs_v = schema.get("$defs").ok_or("schema has no $defs")?;
    let items = defs_v.dict_items();
    let index: HashMap<String, usize> = items
        .iter()
        .enumerate()
        .map(|(i, (k, _))| ((*k).to_string(), i))
        .collect();
    let mut names = Vec::with_capacity(items.len());
    let mut defs = Vec::with_capacity(items.len());
    let mut by_kind = HashMap::new();
    for (i, (name, s)) in items.iter().enumerate() {
        names.push((*name).to_string());
        defs.push(compile_node(s, &index).map_err(|e| format!("$defs/{name}: {e}"))?);
        if let Some(k) = kind_const(s) {
            by_kind.insert(k.to_string(), i);
        }
    }
    Ok(Journal {
        names,
        defs,
        by_kind,
    })
}

static JOURNAL: OnceLock<Result<Journal, String>> = OnceLock::new();

/// The compiled embedded schema (compiled on first use, immutable after).
pub fn journal() -> Result<&'static Journal, &'static str> {
    JOURNAL
        .get_or_init(|| compile(SCHEMA_TEXT))
        .as_ref()
        .map_err(String::as_str)
}

// -- values -----------------------------------------------------------------------------------

/// A JSON number for exact comparison; `Big` is an integer beyond `i128` (its decimal text).
#[derive(Debug, Clone, Copy)]
enum N<'a> {
    Small(Num),
    Big(&'a str),
}

fn number<'a>(v: &Value<'a>) -> Option<N<'a>> {
    match v {
        Value::Int(i) => Some(N::Small(Num::Int(i128::from(*i)))),
        Value::Float(f) => Some(N::Small(Num::Float(*f))),
        Value::BigInt(s) => Some(
            s.parse::<i128>()
                .map_or(N::Big(s), |i| N::Small(Num::Int(i))),
        ),
        _ => None,
    }
}

/// Compare two magnitudes given as decimal digit strings without leading zeros.
fn cmp_digits(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// `big <=> f` exactly (`big` lies beyond `i128`).
fn cmp_big_float(big: &str, f: f64) -> Ordering {
    let neg = big.starts_with('-');
    let mag = big.trim_start_matches('-');
    let sign = if neg {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    if f == 0.0 || (f < 0.0) != neg {
        return sign;
    }
    let int = format!("{:.0}", f.abs().trunc());
    let m = match cmp_digits(mag, &int) {
        Ordering::Equal if f.fract() != 0.0 => Ordering::Less,
        o => o,
    };
    if neg {
        m.reverse()
    } else {
        m
    }
}

/// Python's exact `a <=> b` for two numbers (no NaN reaches here: the parser rejects it).
fn cmp_num(a: N<'_>, b: N<'_>) -> Ordering {
    match (a, b) {
        (N::Small(x), N::Small(y)) => match (x.le(y), y.le(x)) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            _ => Ordering::Greater,
        },
        (N::Big(s), N::Small(Num::Int(_))) => {
            if s.starts_with('-') {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (N::Big(s), N::Small(Num::Float(f))) => cmp_big_float(s, f),
        (N::Small(_), N::Big(_)) => cmp_num(b, a).reverse(),
        (N::Big(x), N::Big(y)) => {
            let (xn, yn) = (x.starts_with('-'), y.starts_with('-'));
            match (xn, yn) {
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                _ => {
                    let m = cmp_digits(x.trim_start_matches('-'), y.trim_start_matches('-'));
                    if xn {
                        m.reverse()
                    } else {
                        m
                    }
                }
            }
        }
    }
}

fn type_ok(t: Ty, v: &Value<'_>) -> bool {
    match t {
        Ty::Object => matches!(v, Value::Object(_)),
        Ty::Array => matches!(v, Value::Array(_)),
        Ty::String => matches!(v, Value::Str(_)),
        Ty::Boolean => matches!(v, Value::Bool(_)),
        Ty::Null => matches!(v, Value::Null),
        Ty::Number => matches!(v, Value::Int(_) | Value::BigInt(_) | Value::Float(_)),
        // any number with no fractional part (1.0 is an integer in JSON Schema)
        Ty::Integer => match v {
            Value::Int(_) | Value::BigInt(_) => true,
            Value::Float(f) => f.is_finite() && f.fract() == 0.0,
            _ => false,
        },
    }
}

/// JSON Schema equality: numbers by value (1 == 1.0), booleans are not numbers.
fn json_equal(a: &Value<'_>, b: &Value<'_>) -> bool {
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return cmp_num(x, y) == Ordering::Equal;
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(_), Value::Object(_)) => {
            let (x, y) = (a.dict_items(), b.dict_items());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| b.get(k).is_some_and(|q| json_equal(p, q)))
        }
        _ => false,
    }
}

const DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// RFC 3339 `date-time` (offsets up to 23:59), as `is_date_time`:
/// `YYYY-MM-DD[Tt]HH:MM:SS(.d+)?([Zz]|[+-]HH:MM)`, ASCII digits only. Second 60 (a leap second)
/// only where the time, with the offset applied, is 23:59 UTC.
pub fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let d = b.get(from..from + len)?;
        d.iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let at = |i: usize, set: &[u8]| b.get(i).is_some_and(|c| set.contains(c));
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        num(0, 4),
        num(5, 2),
        num(8, 2),
        num(11, 2),
        num(14, 2),
        num(17, 2),
    ) else {
        return false;
    };
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt") && at(13, b":") && at(16, b":")) {
        return false;
    }
    let mut i = 19;
    if at(i, b".") {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let (offset, west) = match b.get(i..) {
        Some([b'Z' | b'z']) => (None, false),
        Some([sign @ (b'+' | b'-'), _, _, b':', _, _]) => match (num(i + 1, 2), num(i + 4, 2)) {
            (Some(h), Some(m)) => (Some((h, m)), *sign == b'-'),
            _ => return false,
        },
        _ => return false,
    };
    if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = if month == 2 && leap {
        29
    } else {
        DAYS.get(month as usize - 1).copied().unwrap_or(0)
    };
    if !(1..=days).contains(&day) {
        return false;
    }
    if matches!(offset, Some((h, m)) if h > 23 || m > 59) {
        return false;
    }
    if second == 60 {
        // minutes of the day in UTC: local time minus the offset (east positive), mod 1440
        let (oh, om) = offset.unwrap_or((0, 0));
        let off = oh * 60 + om;
        let local = hour * 60 + minute;
        let utc = if west {
            (local + off) % 1440
        } else {
            (local + 1440 - off) % 1440
        };
        return utc == 23 * 60 + 59;
    }
    true
}

// -- validation -------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Seg<'j> {
    Key(&'j str),
    Index(usize),
}

fn push_segment(out: &mut String, seg: &str) {
    out.push('/');
    for c in seg.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// One record's validation state: the path to the current value and the violations found.
struct Ctx<'j> {
    j: &'j Journal,
    path: Vec<Seg<'j>>,
    out: Vec<(String, &'static str, String)>,
}

impl<'j> Ctx<'j> {
    fn pointer(&self) -> String {
        let mut s = String::new();
        for seg in &self.path {
            match seg {
                Seg::Key(k) => push_segment(&mut s, k),
                Seg::Index(i) => {
                    s.push('/');
                    s.push_str(&i.to_string());
                }
            }
        }
        s
    }

    fn report(&mut self, keyword: &'static str, message: String) {
        let p = self.pointer();
        self.out.push((p, keyword, message));
    }

    fn validate(&mut self, node: &'j Node, v: &Value<'_>) {
        if let Some(r) = node.reference {
            if let Some(def) = self.j.defs.get(r) {
                self.validate(def, v);
            }
        }
        for branch in &node.all_of {
            self.validate(branch, v);
        }
        if let Some((types, shown)) = &node.ty {
            if !types.iter().any(|t| type_ok(*t, v)) {
                self.report("type", format!("expected {shown}"));
                return;
            }
        }
        if let Some(c) = &node.konst {
            if !json_equal(v, c) {
                self.report("const", format!("must be {}", show(c)));
            }
        }
        if let Some(choices) = &node.enumeration {
            if !choices.iter().any(|e| json_equal(v, e)) {
                let shown: Vec<String> = choices.iter().map(show).collect();
                self.report("enum", format!("must be one of {}", shown.join(", ")));
            }
        }
        if let Some(min) = &node.minimum {
            if let (Some(x), Some(m)) = (number(v), number(min)) {
                if cmp_num(x, m) == Ordering::Less {
                    self.report("minimum", format!("must be >= {}", show(min)));
                }
            }
        }
        match v {
            Value::Str(s) => self.string(node, s),
            Value::Object(pairs) => {
                for name in &node.required {
                    if !v.has(name) {
                        self.report("required", format!("missing required property \"{name}\""));
                    }
                }
                for (name, sub) in &node.properties {
                    if let Some(x) = v.get(name) {
                        self.path.push(Seg::Key(name));
                        self.validate(sub, x);
                        self.path.pop();
                    }
                }
                let declared = |k: &str| node.properties.iter().any(|(n, _)| n == k);
                if node.additional_false && pairs.iter().any(|(k, _)| !declared(k)) {
                    for (k, _) in v.dict_items() {
                        if !declared(k) {
                            let mut p = self.pointer();
                            push_segment(&mut p, k);
                            self.out.push((
                                p,
                                "additionalProperties",
                                "property not allowed".into(),
                            ));
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = &node.items {
                    for (i, item) in items.iter().enumerate() {
                        self.path.push(Seg::Index(i));
                        self.validate(sub, item);
                        self.path.pop();
                    }
                }
            }
            _ => {}
        }
    }

    fn string(&mut self, node: &Node, s: &str) {
        if let Some(min) = node.min_length {
            // chars >= bytes / 4, so only short strings need counting
            let short = usize::try_from(min)
                .is_ok_and(|m| s.len() < m.saturating_mul(4) && s.chars().count() < m);
            if short {
                self.report(
                    "minLength",
                    format!("must have at least {min} character(s)"),
                );
            }
        }
        if let Some((p, re)) = &node.pattern {
            if !re.is_match(s) {
                self.report("pattern", format!("must match {p}"));
            }
        }
        if node.date_time && !is_date_time(s) {
            self.report("format", "must be an RFC 3339 date-time".into());
        }
    }
}

// -- the journal pass -------------------------------------------------------------------------

#[inline]
fn is_blank_byte(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

fn over_message(over: Over, budget: &Budget) -> String {
    match over {
        Over::Depth => format!("nesting depth exceeds max_depth ({})", budget.max_depth),
        Over::Nodes => format!("node count exceeds max_nodes ({})", budget.max_nodes),
    }
}

/// The line-level outcome before schema validation.
enum Parsed<'a> {
    Value(Value<'a>),
    Fail(&'static str, String),
    OutOfMemory(OutOfMemory),
}

/// Budget, UTF-8 and JSON checks of one non-blank line (as `normalize::prepare` does them).
fn parse_line<'a>(data: &'a [u8], first: u8, budget: &Budget) -> Parsed<'a> {
    let text = match std::str::from_utf8(data) {
        Ok(t) => t,
        Err(e) => {
            return Parsed::Fail(
                "invalid_utf8",
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            )
        }
    };
    let syntax = |e: parse::JsonError| {
        Parsed::Fail(
            "invalid_json",
            format!("{} at column {}", e.message, e.offset + 1),
        )
    };
    if matches!(first, b'{' | b'[') {
        match parse::parse_within(text, budget.max_depth, budget.max_nodes) {
            Ok((v, _)) => Parsed::Value(v),
            Err(parse::Failure::OutOfMemory(e)) => Parsed::OutOfMemory(e),
            Err(parse::Failure::Over(o)) => Parsed::Fail(o.code(), over_message(o, budget)),
            // a later budget crossing still wins over the syntax error (lexical scan semantics)
            Err(parse::Failure::Syntax(e)) => {
                match budget::scan(data, budget.max_depth, budget.max_nodes) {
                    Some(o) => Parsed::Fail(o.code(), over_message(o, budget)),
                    None => syntax(e),
                }
            }
        }
    } else {
        match parse::parse_within(text, parse::HARD_DEPTH, usize::MAX) {
            Ok((v, _)) => Parsed::Value(v),
            Err(parse::Failure::OutOfMemory(e)) => Parsed::OutOfMemory(e),
            Err(parse::Failure::Syntax(e)) => syntax(e),
            Err(parse::Failure::Over(_)) => syntax(parse::JsonError {
                message: "nesting too deep",
                offset: 0,
            }),
        }
    }
}

/// `check_record` of the reference: append the violations of one framed line.
fn check_line(
    ctx: &mut Ctx<'static>,
    span: &Span,
    data: &[u8],
    line: u64,
    budget: &Budget,
    out: &mut Vec<Violation>,
) -> Result<(), OutOfMemory> {
    let position = span.position;
    let fail =
        |kind: Option<String>, pointer: &str, keyword: &'static str, message: String| Violation {
            line,
            position,
            kind,
            pointer: pointer.to_string(),
            keyword,
            message,
        };
    if let Some(total) = span.total {
        let m = format!(
            "line of {total} bytes exceeds max_line_bytes ({})",
            budget.max_line_bytes
        );
        out.push(fail(None, "", "line_too_long", m));
        return Ok(());
    }
    let Some(&first) = data.iter().find(|&&c| !is_blank_byte(c)) else {
        return Ok(());
    };
    let value = match parse_line(data, first, budget) {
        Parsed::Value(v) => v,
        Parsed::Fail(code, m) => {
            out.push(fail(None, "", code, m));
            return Ok(());
        }
        Parsed::OutOfMemory(e) => return Err(e),
    };
    if !value.is_object() {
        out.push(fail(None, "", "type", "a record must be an object".into()));
        return Ok(());
    }
    let Some(kind) = value.str_at("kind") else {
        let m = "a record needs a string \"kind\"".to_string();
        out.push(fail(None, "/kind", "kind", m));
        return Ok(());
    };
    let j = ctx.j;
    let Some(def) = j.by_kind.get(kind).and_then(|&i| j.defs.get(i)) else {
        let m = format!("unknown kind \"{kind}\"");
        out.push(fail(Some(kind.to_string()), "/kind", "unknown_kind", m));
        return Ok(());
    };
    ctx.path.clear();
    ctx.out.clear();
    ctx.validate(def, &value);
    for (pointer, keyword, message) in ctx.out.drain(..) {
        out.push(Violation {
            line,
            position,
            kind: Some(kind.to_string()),
            pointer,
            keyword,
            message,
        });
    }
    Ok(())
}

/// Every violation in a runner journal, in line order (empty for a valid journal).
///
/// The embedded schema is compiled on first use; should it not compile (a unit test says it
/// does), the only violation is one with keyword `schema` on line 0.
pub fn validate_journal(data: &[u8], budget: &Budget) -> Result<Vec<Violation>, OutOfMemory> {
    let j = match journal() {
        Ok(j) => j,
        Err(e) => {
            return Ok(vec![Violation {
                line: 0,
                position: 0,
                kind: None,
                pointer: String::new(),
                keyword: "schema",
                message: e.to_string(),
            }])
        }
    };
    let mut framer = Framer::new(budget.max_line_bytes);
    let mut spans = Vec::new();
    let mut ctx = Ctx {
        j,
        path: Vec::new(),
        out: Vec::new(),
    };
    let mut out = Vec::new();
    let mut line = 0u64;
    let mut run = |chunk: &[u8], spans: &[Span], out: &mut Vec<Violation>| {
        for span in spans {
            line += 1;
            check_line(&mut ctx, span, span.bytes(chunk), line, budget, out)?;
        }
        Ok::<(), OutOfMemory>(())
    };
    for chunk in data.chunks(FEED_BYTES) {
        spans.clear();
        framer.feed(chunk, &mut spans)?;
        run(chunk, &spans, &mut out)?;
    }
    spans.clear();
    framer.finish(&mut spans)?;
    run(&[], &spans, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j() -> &'static Journal {
        match journal() {
            Ok(j) => j,
            Err(e) => panic!("schema does not compile: {e}"),
        }
    }

    fn check(data: &str) -> Vec<Violation> {
        validate_journal(data.as_bytes(), &Budget::default()).unwrap_or_default()
    }

    #[test]
    fn schema_compiles_and_dispatches() {
        let j = j();
        assert!(j.kinds() >= 29, "only {} kinds", j.kinds());
        assert_eq!(j.def_for("review.verdict"), Some("reviewVerdict"));
        assert_eq!(j.def_for("attempt.ownership"), Some("attemptOwnership"));
        assert_eq!(j.def_for("supervisionOwnership"), None);
    }

    #[test]
    fn date_time_edges() {
        assert!(is_date_time("2024-02-29T00:00:00Z"));
        assert!(!is_date_time("2023-02-29T00:00:00Z"));
        assert!(is_date_time("2000-02-29T00:00:00Z"));
        assert!(!is_date_time("1900-02-29T00:00:00Z"));
        assert!(is_date_time("2016-12-31T23:59:60Z"));
        assert!(!is_date_time("2016-12-31T23:59:61Z"));
        // a leap second only at 23:59:60 UTC, after applying the offset
        assert!(is_date_time("2016-12-31T23:59:60.5z"));
        assert!(!is_date_time("2016-12-31T23:59:60+01:00"));
        assert!(is_date_time("2017-01-01T00:59:60+01:00"));
        assert!(is_date_time("2016-12-31T18:59:60-05:00"));
        assert!(is_date_time("2016-12-31T23:59:60-00:00"));
        assert!(!is_date_time("2016-12-31T23:59:60-01:00"));
        assert!(is_date_time("2016-12-31T23:29:60-00:30"));
        assert!(is_date_time("2017-01-01T23:58:60+23:59"));
        assert!(is_date_time("2016-12-31T00:00:60-23:59"));
        assert!(!is_date_time("2016-12-31T12:00:60Z"));
        assert!(!is_date_time("2016-12-31T23:58:60Z"));
        assert!(is_date_time("2024-01-01T10:00:00+23:59"));
        assert!(!is_date_time("2024-01-01T10:00:00+24:00"));
        assert!(!is_date_time("2024-01-01T10:00:00+23:60"));
        assert!(is_date_time("2024-01-01t10:00:00.123456z"));
        assert!(!is_date_time("2024-01-01T10:00:00."));
        assert!(!is_date_time("2024-01-01T10:00:00"));
        assert!(!is_date_time("2024-01-01 10:00:00Z"));
        assert!(!is_date_time("2024-13-01T10:00:00Z"));
        assert!(!is_date_time("2024-00-01T10:00:00Z"));
        assert!(!is_date_time("2024-04-31T10:00:00Z"));
        assert!(!is_date_time("2024-01-01T24:00:00Z"));
        assert!(!is_date_time("2024-01-01T10:00:00Z\n"));
        assert!(!is_date_time("٢٠٢٤-01-01T10:00:00Z"));
    }

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.5), "0.5");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(1.5e-5), "1.5e-05");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(-123.25), "-123.25");
        assert_eq!(py_float(1e15), "1000000000000000.0");
    }

    #[test]
    fn reports_violations() {
        let ok = r#"{"kind":"supervision.heartbeat","generation":1,"heartbeatAt":0}"#;
        assert_eq!(check(ok), vec![]);
        let v = check(&format!(
            "\n{ok}\n  \n{{\"kind\":\"supervision.heartbeat\",\"generation\":0}}\n"
        ));
        let got: Vec<(u64, &str, &str, &str)> = v
            .iter()
            .map(|x| (x.line, x.pointer.as_str(), x.keyword, x.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    4,
                    "",
                    "required",
                    "missing required property \"heartbeatAt\""
                ),
                (4, "/generation", "minimum", "must be >= 1"),
            ]
        );
        let v = check(r#"{"kind":"nope"}"#);
        assert_eq!(v.first().map(|x| x.keyword), Some("unknown_kind"));
        assert!(
            cmp_num(
                N::Big("123456789012345678901234567890123456789012"),
                N::Small(Num::Float(1e41))
            ) == Ordering::Greater
        );
    }
}
