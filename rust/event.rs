//! The normalized event, built from borrowed line data, and the helpers every dialect shares.
//! Mirrors `reference/events.py` function for function.
//!
//! An [`Event`] is what a dialect says about a line; the pipeline adds `v`, `seq`, `position`,
//! `dialect`, `raw` and `parsed`. Nothing here allocates for text that is already in the line.

use std::borrow::Cow;

use crate::value::Value;

pub type Text<'v> = Cow<'v, str>;

/// A number as Python sees it: exact integer or float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// A usable token count or cost (`is_count` in the reference).
    pub fn count(v: Option<&Value<'_>>) -> Option<Num> {
        match v {
            Some(Value::Int(i)) if *i >= 0 => Some(Num::Int(i128::from(*i))),
            Some(Value::Float(f)) if *f >= 0.0 => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// Python's `+` (int + int stays exact; anything with a float is a float).
    pub fn plus(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a
                .checked_add(b)
                .map_or(Num::Float(a as f64 + b as f64), Num::Int),
            (Num::Int(a), Num::Float(b)) => Num::Float(a as f64 + b),
            (Num::Float(a), Num::Int(b)) => Num::Float(a + b as f64),
            (Num::Float(a), Num::Float(b)) => Num::Float(a + b),
        }
    }

    /// Python's exact `<=` across int and float.
    pub fn le(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a <= b,
            (Num::Float(a), Num::Float(b)) => a <= b,
            (Num::Int(a), Num::Float(b)) => int_le_float(a, b),
            (Num::Float(a), Num::Int(b)) => float_le_int(a, b),
        }
    }
}

const I128_EDGE: f64 = 1.0e38;

fn int_le_float(a: i128, b: f64) -> bool {
    if b >= I128_EDGE {
        return true;
    }
    if b <= -I128_EDGE {
        return false;
    }
    a <= b.floor() as i128
}

fn float_le_int(a: f64, b: i128) -> bool {
    if a >= I128_EDGE {
        return false;
    }
    if a <= -I128_EDGE {
        return true;
    }
    (a.ceil() as i128) <= b
}

/// The `tool` object.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool<'v> {
    pub name: Text<'v>,
    pub arguments: Option<&'v Value<'v>>,
    pub id: Option<&'v str>,
    pub is_error: Option<bool>,
}

/// The `error` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorInfo<'v> {
    pub code: Text<'v>,
    pub message: Text<'v>,
    pub kind: &'static str,
}

/// The `usage` object plus the scope it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage<'v> {
    pub input: Option<Num>,
    pub output: Option<Num>,
    pub cached: Option<Num>,
    pub cost: Option<Num>,
    pub model: Text<'v>,
    pub unknown: bool,
}

/// One normalized event, before the pipeline adds the line-level fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event<'v> {
    pub kind: &'static str,
    pub subtype: Text<'v>,
    pub role: Option<&'static str>,
    pub text: Option<Text<'v>>,
    pub tool: Option<Tool<'v>>,
    pub error: Option<ErrorInfo<'v>>,
    /// For a quota or transport error: when the message says work may resume (RFC 3339 UTC).
    pub retry_at: Option<String>,
    /// For a quota or transport error: the delay the message gives, in milliseconds.
    pub retry_after_ms: Option<u64>,
    pub usage: Option<Usage<'v>>,
    pub usage_scope: Option<&'static str>,
    pub message_id: Option<&'v str>,
    pub delta: bool,
    /// For `line_too_long`: the full length of the line.
    pub line_bytes: Option<u64>,
    /// For `stream_is_utf16`: the encoding found (`UTF-16LE`, ...).
    pub encoding: Option<&'static str>,
    /// For `stream_is_utf16`: the size of the whole stream.
    pub stream_bytes: Option<u64>,
}

/// Line-level fields a dialect reads once per line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineMeta<'v> {
    pub session_id: Option<&'v str>,
    pub parent_tool_use_id: Option<&'v str>,
    pub native_type: Option<&'v str>,
}

pub fn name_or_unknown<'v>(v: Option<&'v Value<'v>>) -> Text<'v> {
    match v.and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Cow::Borrowed(s),
        _ => Cow::Borrowed("unknown"),
    }
}

/// `content_text` of the reference: a string, or a list's `text` blocks joined by LF.
pub fn content_text<'v>(content: Option<&'v Value<'v>>) -> Text<'v> {
    match content {
        Some(Value::Str(s)) => Cow::Borrowed(s.as_ref()),
        Some(Value::Array(items)) => {
            let mut texts = items
                .iter()
                .filter(|b| b.is_object() && b.str_eq("type", "text"))
                .filter_map(|b| b.str_at("text"));
            let Some(first) = texts.next() else {
                return Cow::Borrowed("");
            };
            match texts.next() {
                None => Cow::Borrowed(first),
                Some(second) => {
                    let mut s = String::with_capacity(first.len() + second.len() + 1);
                    s.push_str(first);
                    s.push('\n');
                    s.push_str(second);
                    for t in texts {
                        s.push('\n');
                        s.push_str(t);
                    }
                    Cow::Owned(s)
                }
            }
        }
        _ => Cow::Borrowed(""),
    }
}

/// `text or fallback` (the empty string counts as absent, as in Python).
pub fn or_str<'v>(text: Option<&'v str>, fallback: &'static str) -> Text<'v> {
    match text {
        Some(t) if !t.is_empty() => Cow::Borrowed(t),
        _ => Cow::Borrowed(fallback),
    }
}

pub fn msg<'v>(subtype: &'static str, role: &'static str, text: impl Into<Text<'v>>) -> Event<'v> {
    Event {
        kind: "message",
        subtype: Cow::Borrowed(subtype),
        role: Some(role),
        text: Some(text.into()),
        ..Event::default()
    }
}

pub fn status<'v>(subtype: &'static str, text: Option<Text<'v>>) -> Event<'v> {
    Event {
        kind: "status",
        subtype: Cow::Borrowed(subtype),
        text,
        ..Event::default()
    }
}

pub fn tool_call<'v>(
    name: Text<'v>,
    arguments: Option<&'v Value<'v>>,
    call_id: Option<&'v Value<'v>>,
) -> Event<'v> {
    let arguments = arguments.filter(|a| !matches!(a, Value::Null));
    let tool = Tool {
        name,
        arguments,
        id: call_id.and_then(Value::as_str),
        is_error: None,
    };
    Event {
        kind: "tool_call",
        subtype: Cow::Borrowed("tool_use"),
        role: Some("assistant"),
        tool: Some(tool),
        ..Event::default()
    }
}

pub fn tool_result<'v>(
    name: Text<'v>,
    call_id: Option<&'v Value<'v>>,
    is_error: bool,
    text: Text<'v>,
) -> Event<'v> {
    let tool = Tool {
        name,
        arguments: None,
        id: call_id.and_then(Value::as_str),
        is_error: Some(is_error),
    };
    Event {
        kind: "message",
        subtype: Cow::Borrowed("tool_result"),
        role: Some("tool"),
        text: Some(text),
        tool: Some(tool),
        ..Event::default()
    }
}

pub fn error<'v>(
    subtype: impl Into<Text<'v>>,
    code: impl Into<Text<'v>>,
    message: Text<'v>,
    kind: &'static str,
) -> Event<'v> {
    let code = code.into();
    let message = if message.is_empty() {
        code.clone()
    } else {
        message
    };
    let retry = crate::retry::for_error(kind, &message);
    Event {
        kind: "error",
        subtype: subtype.into(),
        error: Some(ErrorInfo {
            code,
            message,
            kind,
        }),
        retry_at: retry.at,
        retry_after_ms: retry.after_ms,
        ..Event::default()
    }
}

/// A usage event (`usage` in the reference): `inputs` summed into inputTokens, `outputs` into
/// outputTokens; non-counts ignored; no count at all -> `unknown`; cached clamped to input.
pub fn usage<'v>(
    scope: &'static str,
    model: Option<&'v Value<'v>>,
    inputs: &[Option<&'v Value<'v>>],
    cached: Option<&'v Value<'v>>,
    outputs: &[Option<&'v Value<'v>>],
    cost: Option<&'v Value<'v>>,
) -> Event<'v> {
    let ins: Vec<Num> = inputs.iter().filter_map(|v| Num::count(*v)).collect();
    let outs: Vec<Num> = outputs.iter().filter_map(|v| Num::count(*v)).collect();
    let known = !(ins.is_empty() && outs.is_empty());
    let (mut input, mut output, mut cached_n) = (None, None, None);
    if known {
        let total_in = ins.iter().fold(Num::Int(0), |a, b| a.plus(*b));
        let total_out = outs.iter().fold(Num::Int(0), |a, b| a.plus(*b));
        let c = Num::count(cached).unwrap_or(Num::Int(0));
        cached_n = Some(if c.le(total_in) { c } else { total_in });
        input = Some(total_in);
        output = Some(total_out);
    }
    let u = Usage {
        input,
        output,
        cached: cached_n,
        cost: Num::count(cost),
        model: name_or_unknown(model),
        unknown: !known,
    };
    Event {
        kind: "usage",
        subtype: Cow::Borrowed(scope),
        usage: Some(u),
        usage_scope: Some(scope),
        ..Event::default()
    }
}

/// Error-kind needles, lowercase ASCII; quota is checked before transport.
const QUOTA_NEEDLES: &[&str] = &[
    "rate limit",
    "rate_limit",
    "ratelimit",
    "usage limit",
    "usage_limit",
    "limit reached",
    "hit your",
    "quota",
    "billing",
    "credit balance",
    "insufficient_quota",
    "out of extra usage",
    "budget exhausted",
    "too many requests",
];
const TRANSPORT_NEEDLES: &[&str] = &[
    "reconnecting",
    "timeout",
    "timed out",
    "connection",
    "network",
    "disconnect",
    "stream ended",
    "stream error",
    "overloaded",
    "econnreset",
    "socket",
    "unavailable",
    "bad gateway",
    "internal server error",
];

/// Error kind of a native error message: `quota`, `transport` or `semantic`.
pub fn classify(message: &str) -> &'static str {
    let low = message.to_ascii_lowercase();
    let codes = status_codes(low.as_bytes());
    let has = |needles: &[&str]| {
        needles
            .iter()
            .any(|n| memchr::memmem::find(low.as_bytes(), n.as_bytes()).is_some())
    };
    if codes.contains(&429) || has(QUOTA_NEEDLES) {
        return "quota";
    }
    if codes.iter().any(|c| (500..=599).contains(c)) || has(TRANSPORT_NEEDLES) {
        return "transport";
    }
    "semantic"
}

/// A three-digit run counts as an HTTP status only at the start of the message or right after
/// one of these words (so ids, prices and token counts are not mistaken for statuses).
const STATUS_CONTEXT: [&[u8]; 7] = [
    b"error: ",
    b"error ",
    b"status: ",
    b"status ",
    b"code: ",
    b"code ",
    b"http ",
];

/// HTTP statuses mentioned in a lowercased message (see [`STATUS_CONTEXT`]).
fn status_codes(b: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b.get(i).is_some_and(u8::is_ascii_digit) {
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let before = b.get(..start).unwrap_or_default();
            let in_context = start == 0 || STATUS_CONTEXT.iter().any(|c| before.ends_with(c));
            if i - start == 3 && in_context {
                let n = b
                    .get(start..i)
                    .unwrap_or_default()
                    .iter()
                    .fold(0u32, |a, d| a * 10 + u32::from(d - b'0'));
                out.push(n);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Error kind implied by an HTTP status given as a number.
pub fn kind_for_status(v: Option<&Value<'_>>) -> Option<&'static str> {
    match v {
        Some(Value::Int(429)) => Some("quota"),
        Some(Value::Int(c)) if (500..=599).contains(c) => Some("transport"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_real_messages() {
        assert_eq!(classify("Weekly limit reached ∙ resets 5am"), "quota");
        assert_eq!(classify("Reconnecting... 2/5"), "transport");
        assert_eq!(
            classify("exceeded retry limit, last status: 401 Unauthorized, request id: x"),
            "semantic"
        );
        assert_eq!(classify("API Error: 529 {\"type\":\"error\"}"), "transport");
        assert_eq!(classify("API Error: 429"), "quota");
        assert_eq!(classify("used 1500 tokens"), "semantic");
        assert_eq!(
            classify("401 Unauthorized, request id: req_500abc"),
            "semantic"
        );
        assert_eq!(classify("Reached maximum budget ($500)"), "semantic");
        assert_eq!(
            classify("last status: 503 Service Unavailable"),
            "transport"
        );
        assert_eq!(classify("429 {\"type\":\"error\"}"), "quota");
    }

    #[test]
    fn num_arithmetic_matches_python() {
        assert_eq!(Num::Int(1).plus(Num::Float(0.5)), Num::Float(1.5));
        assert!(Num::Int(3).le(Num::Float(3.0)));
        assert!(!Num::Float(3.5).le(Num::Int(3)));
        assert!(Num::Int(9_007_199_254_740_993).le(Num::Float(9_007_199_254_740_994.0)));
    }
}
