//! cursor: Cursor CLI `cursor-agent -p --output-format stream-json`, 2025 and 2026 shapes.
//! Mirrors `reference/dialects/cursor.py`.

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::dialects::claude::content_events;
use crate::event::{
    action, cache_writes, classify, error, line_extras, msg, nonempty, status, tool_call,
    tool_result, usage, Event, LineMeta, Num, Text, ToolResult,
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
            Some("system") => match sub {
                Some("init") => out.push(status("init", None)),
                Some(s @ "background_shell_timeout") => {
                    out.push(status("progress", Some(Cow::Borrowed(s))))
                }
                Some(s @ "task_notification") => {
                    out.push(status("subagent", Some(Cow::Borrowed(s))))
                }
                _ => {}
            },
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
            // the one error of a reconnect (the retry lines only report it)
            Some("connection") if sub == Some("reconnecting") => {
                let message = match v.get("attempt") {
                    Some(Value::Int(n)) => Cow::Owned(format!("reconnecting (attempt {n})")),
                    Some(Value::BigInt(n)) => Cow::Owned(format!("reconnecting (attempt {n})")),
                    _ => Cow::Borrowed("reconnecting"),
                };
                let mut ev = error("retry", "reconnecting", message, "transport");
                ev.x().retry = true;
                out.push(ev);
            }
            Some("connection") => out.push(status("progress", Some(with_sub("connection", sub)))),
            Some("retry") => out.push(status("progress", Some(with_sub("retry", sub)))),
            Some("interaction_query") => {
                let mut ev = status("progress", Some(query_text(v, sub)));
                if sub == Some("request")
                    && v.str_eq("query_type", "createPlanRequestQuery")
                    && plan(v).is_some()
                {
                    ev.x().answer = true; // plan mode: the plan is the run's answer
                }
                out.push(ev);
            }
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
            // a successful result's text joins every segment of the turn (docs/formats-2026.md
            // 5.2): the final answer is the last segment
            m.result_joins_messages = !v.is_true_at("is_error");
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
            // a permission rule refused the call (`rejected`, `writePermissionDenied`)
            let refused = field("result")
                .and_then(Value::first_key)
                .is_some_and(|k| matches!(k, "rejected" | "writePermissionDenied"));
            let tool_name = match &name {
                Cow::Borrowed(n) => Some(*n),
                Cow::Owned(_) => None,
            };
            let mut ev = tool_result(name, call_id, is_error, text);
            if refused {
                ev.require(action("approval", nonempty(call_id), tool_name, None));
            }
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
            match RESULT_TEXT_FIELDS
                .iter()
                .find_map(|f| b.str_at(f).filter(|t| !t.is_empty()))
            {
                Some(text) => (is_error, Cow::Borrowed(text)),
                None => (is_error, rejected_text(key, Some(b))),
            }
        }
        b => (is_error, rejected_text(key, b)),
    }
}

/// A `rejected` branch (a permission rule denied the call, often with an empty reason) with no
/// text: `rejected: <command>`, else `rejected`; any other branch: empty.
fn rejected_text<'v>(key: &'v str, branch: Option<&'v Value<'v>>) -> Text<'v> {
    if key != "rejected" {
        return Cow::Borrowed("");
    }
    match branch.and_then(|b| nonempty(b.get("command"))) {
        Some(c) => Cow::Owned(format!("rejected: {c}")),
        None => Cow::Borrowed(key),
    }
}

/// An interaction_query's text: its `query_type`; a `createPlanRequestQuery` request gives the
/// plan itself; a response adds its branch (`approved`, `rejected`) and reason.
/// A `createPlanRequestQuery` request's `query.createPlanRequestQuery.args.plan`.
fn plan<'v>(v: &'v Value<'v>) -> Option<&'v str> {
    v.get("query")
        .filter(|q| q.is_object())
        .and_then(|q| q.get("createPlanRequestQuery"))
        .filter(|b| b.is_object())
        .and_then(|b| b.get("args"))
        .filter(|a| a.is_object())
        .and_then(|a| nonempty(a.get("plan")))
}

fn query_text<'v>(v: &'v Value<'v>, sub: Option<&str>) -> Text<'v> {
    let qt = v
        .str_at("query_type")
        .filter(|q| !q.is_empty())
        .unwrap_or("interaction_query");
    if sub == Some("request") {
        return match plan(v) {
            Some(p) if qt == "createPlanRequestQuery" => Cow::Borrowed(p),
            _ => Cow::Borrowed(qt),
        };
    }
    if sub == Some("response") {
        if let Some(r) = v.get("result").filter(|r| r.is_object()) {
            if let Some(branch) = r.first_key() {
                let reason = r
                    .get(branch)
                    .filter(|b| b.is_object())
                    .and_then(|b| nonempty(b.get("reason")));
                return Cow::Owned(match reason {
                    Some(reason) => format!("{qt}: {branch}: {reason}"),
                    None => format!("{qt}: {branch}"),
                });
            }
        }
    }
    Cow::Borrowed(qt)
}

/// `<prefix> <subtype>`, else the prefix.
fn with_sub<'v>(prefix: &'static str, sub: Option<&'v str>) -> Text<'v> {
    match sub {
        Some(s) => Cow::Owned(format!("{prefix} {s}")),
        None => Cow::Borrowed(prefix),
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
        let ev = usage(
            "cumulative",
            None,
            &[u.get("inputTokens"), cached, u.get("cacheWriteTokens")],
            cached,
            &[u.get("outputTokens")],
            None,
        );
        out.push(cache_writes(
            ev,
            Num::count(u.get("cacheWriteTokens")),
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
