//! cursor: Cursor CLI `cursor-agent -p --output-format stream-json`, 2025 and 2026 shapes.
//! Mirrors `reference/dialects/cursor.py`.

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::dialects::claude::content_events;
use crate::event::{
    classify, error, line_extras, msg, nonempty, status, tool_call, tool_result, usage, Event,
    LineMeta, Text, ToolResult,
};
use crate::value::Value;

pub struct Cursor;

/// Where a finished tool's text lives, per result branch; the first non-empty string wins.
const RESULT_TEXT_FIELDS: [&str; 11] = [
    "content",
    "stdout",
    "resultForModel",
    "diffString",
    "output",
    "text",
    "stderr",
    "message",
    "error",
    "errorMessage",
    "reason",
];

impl Dialect for Cursor {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        let sub = v.str_at("subtype");
        match v.str_at("type") {
            Some("system") if sub == Some("init") => out.push(status("init", None)),
            Some(role @ ("user" | "assistant")) => {
                if let Some(m) = v.get("message").filter(|m| m.is_object()) {
                    let start = out.len();
                    content_events(
                        m.get("content"),
                        if role == "user" { "user" } else { "assistant" },
                        out,
                    );
                    for ev in out.iter_mut().skip(start) {
                        if ev.subtype == "tool_result" {
                            ev.x().tool_result = Some(ToolResult::Text);
                        }
                    }
                }
            }
            Some("thinking") => {
                if sub == Some("completed") {
                    out.push(status(
                        "progress",
                        Some(Cow::Borrowed("thinking completed")),
                    ));
                } else {
                    // thinking comes only as deltas (then a text-less `completed`)
                    let mut ev = msg("thinking", "assistant", v.str_at("text").unwrap_or(""));
                    ev.delta = sub == Some("delta");
                    if ev.delta {
                        ev.x().delta_only = true;
                    }
                    out.push(ev);
                }
            }
            Some("tool_call") => tool(v, v.get("subtype"), out),
            Some("result") => result(v, out),
            _ => {}
        }
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        let t = v.str_at("type");
        let mid = v
            .get("message")
            .filter(|m| m.is_object())
            .and_then(|m| nonempty(m.get("id")));
        let mut m = LineMeta {
            session_id: v.str_at("session_id"),
            native_type: t,
            model_call_id: mid.or_else(|| nonempty(v.get("model_call_id"))),
            ..LineMeta::default()
        };
        line_extras(v, matches!(t, Some("result" | "assistant")), &mut m);
        if t == Some("result") {
            m.result_text = Some(v.str_at("result")); // None: reports no text
            m.structured_output = v.get("structured_output");
        }
        // --stream-partial-output prints chunks with timestamp_ms, then the whole segment
        m.partial = t == Some("assistant") && v.has("timestamp_ms");
        m
    }
}

/// The tool inside `tool_call`: the first `*ToolCall` key, else `function`.
pub fn find_tool<'v>(tc: Option<&'v Value<'v>>) -> Option<(&'v str, Option<&'v Value<'v>>)> {
    let tc = tc.filter(|t| t.is_object())?;
    if let Some(key) = tc.find_key(|k| k.len() > "ToolCall".len() && k.ends_with("ToolCall")) {
        return Some((
            key.get(..key.len() - "ToolCall".len()).unwrap_or(key),
            tc.get(key),
        ));
    }
    tc.get("function").map(|f| ("function", Some(f)))
}

fn tool<'v>(v: &'v Value<'v>, sub: Option<&'v Value<'v>>, out: &mut Vec<Event<'v>>) {
    let Some((key, body)) = find_tool(v.get("tool_call")) else {
        return;
    };
    let body = body.filter(|b| b.is_object());
    let field = |k: &str| body.and_then(|b| b.get(k));
    let mut name: Text<'v> = Cow::Borrowed(key);
    let args;
    if key == "function" {
        name = match field("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => Cow::Borrowed(n),
            _ => Cow::Borrowed("function"),
        };
        args = field("arguments");
    } else {
        args = field("args");
        if key == "mcp" {
            if let Some(n) = args
                .filter(|a| a.is_object())
                .and_then(|a| a.str_at("toolName"))
            {
                if !n.is_empty() {
                    name = Cow::Borrowed(n);
                }
            }
        }
    }
    let call_id = v.get("call_id");
    let tc = v.get("tool_call");
    match sub.and_then(Value::as_str) {
        Some("started") => {
            let mut ev = tool_call(name, args, call_id);
            let kind = tc.and_then(|t| t.find_key(|k| k.ends_with("ToolCall")));
            if kind == Some("mcpToolCall") {
                ev.x().tool_class = Some("mcp");
            }
            out.push(ev);
        }
        Some("completed") => {
            let (is_error, text) = result_text(field("result"));
            let mut ev = tool_result(name, call_id, is_error, text);
            let found = tc
                .map(Value::dict_items)
                .unwrap_or_default()
                .into_iter()
                .find_map(|(k, b)| {
                    if k.ends_with("ToolCall") && b.is_object() {
                        b.get("result")
                    } else {
                        None
                    }
                });
            ev.x().tool_result = Some(found.map_or(ToolResult::Text, ToolResult::Value));
            out.push(ev);
        }
        s => out.push(status("progress", s.map(Cow::Borrowed))),
    }
}

fn result_text<'v>(result: Option<&'v Value<'v>>) -> (bool, Text<'v>) {
    let Some(r) = result.filter(|r| r.is_object()) else {
        return (
            false,
            Cow::Borrowed(result.and_then(Value::as_str).unwrap_or("")),
        );
    };
    let Some(key) = r.first_key() else {
        return (false, Cow::Borrowed(""));
    };
    let is_error = key != "success";
    match r.get(key) {
        Some(Value::Str(s)) => (is_error, Cow::Borrowed(s.as_ref())),
        Some(b @ Value::Object(_)) => {
            let text = RESULT_TEXT_FIELDS
                .iter()
                .find_map(|f| b.str_at(f).filter(|t| !t.is_empty()))
                .unwrap_or("");
            (is_error, Cow::Borrowed(text))
        }
        _ => (is_error, Cow::Borrowed("")),
    }
}

fn result<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let text = v.str_at("result");
    if v.is_true_at("is_error") {
        let message: Text<'v> = match text {
            Some(t) if !t.is_empty() => Cow::Borrowed(t),
            _ => Cow::Borrowed("result_error"),
        };
        let kind = classify(&message);
        out.push(error("result_error", "result_error", message, kind));
    } else {
        out.push(status("result", text.map(Cow::Borrowed)));
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        let cached = u.get("cacheReadTokens");
        out.push(usage(
            "cumulative",
            None,
            &[u.get("inputTokens"), cached, u.get("cacheWriteTokens")],
            cached,
            &[u.get("outputTokens")],
            None,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_result_is_the_result_branch_and_partial_lines_are_marked() {
        let line = r#"{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"readToolCall":{"args":{},"result":{"success":{"content":"x"}}}}}"#;
        crate::dialect::check_line(&Cursor, line, |ev| {
            let r = ev.first().and_then(|e| e.extra.as_deref());
            assert!(matches!(
                r.and_then(|x| x.tool_result.as_ref()),
                Some(ToolResult::Value(v)) if v.has("success")
            ));
        });
        let Ok((v, _)) = crate::parse::parse(
            r#"{"type":"assistant","timestamp_ms":1,"model_call_id":"m","message":{"content":"hi"}}"#,
        ) else {
            panic!("bad test json")
        };
        let m = Cursor.meta(&v);
        assert!(m.partial);
        assert_eq!(m.model_call_id, Some("m"));
    }
}
