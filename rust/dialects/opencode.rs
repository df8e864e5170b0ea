//! opencode: `opencode run --format json` (also `crush run --format json`). Mirrors
//! `reference/dialects/opencode.py`.
//!
//! Tool parts are printed only once finished, so one `tool_use` line gives both the call and its
//! result. Usage is per step, on `step_finish` (`usage/turn`).

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::event::{
    action, cache_writes, classify, error, http_kind, line_extras, msg, name_or_unknown, nonempty,
    or_str, reasoning_tokens, status, tool_call, tool_result, usage, Event, LineMeta, Num, Text,
    ToolResult, NULL,
};
use crate::value::Value;

pub struct Opencode;

impl Dialect for Opencode {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        let p = v.get("part").filter(|p| p.is_object());
        let part_text = || Cow::Borrowed(p.and_then(|p| p.str_at("text")).unwrap_or(""));
        match v.str_at("type") {
            Some("step_start") => out.push(status("turn_started", None)),
            Some("text") => out.push(msg("text", "assistant", part_text())),
            Some("reasoning") => out.push(msg("thinking", "assistant", part_text())),
            Some("tool_use") => tool(p, out),
            Some("step_finish") => step_finish(v, p, out),
            Some("error") => out.push(api_error(v.get("error"))),
            Some("done") => {
                let mut ev = status("result", v.str_at("reason").map(Cow::Borrowed));
                rejected(v, &mut ev);
                out.push(ev);
            }
            _ => {}
        }
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        let p = v.get("part").filter(|p| p.is_object());
        // one message (model call) has several parts, each with its own id
        let mut m = LineMeta {
            session_id: v.str_at("sessionID"),
            native_type: v.str_at("type"),
            model_call_id: p.and_then(|p| nonempty(p.get("messageID"))),
            native_id: p.and_then(|p| nonempty(p.get("id"))),
            ..LineMeta::default()
        };
        let outcome = matches!(v.str_at("type"), Some("step_finish" | "done"));
        line_extras(v, outcome, &mut m);
        m.repeats_error = v.str_eq("type", "error") && generic_error(v.get("error"));
        m
    }
}

/// The message opencode's HTTP layer gives any defect: it follows the actionable error of the
/// same failure (opencode #47162), so it repeats it (docs/formats-2026.md section 8.1).
pub const GENERIC_ERROR: &str = "Unexpected server error. Check server logs for details.";

fn generic_error(e: Option<&Value<'_>>) -> bool {
    let Some(e) = e.filter(|e| e.is_object()) else {
        return false;
    };
    let d = e.get("data").filter(|d| d.is_object());
    e.str_eq("name", "UnknownError") && d.is_some_and(|d| d.str_eq("message", GENERIC_ERROR))
}

fn tool<'v>(p: Option<&'v Value<'v>>, out: &mut Vec<Event<'v>>) {
    let s = p.and_then(|p| p.get("state")).filter(|s| s.is_object());
    let field = |k: &str| s.and_then(|s| s.get(k));
    let st = field("status").and_then(Value::as_str);
    let text: Text<'v> = match st {
        Some("completed") => Cow::Borrowed(field("output").and_then(Value::as_str).unwrap_or("")),
        Some("error") => Cow::Borrowed(field("error").and_then(Value::as_str).unwrap_or("")),
        _ => {
            // not terminal (opencode prints none; kept for forks)
            out.push(status("progress", st.map(Cow::Borrowed)));
            return;
        }
    };
    let name = name_or_unknown(p.and_then(|p| p.get("tool")));
    let cid = p.and_then(|p| p.get("callID"));
    let mut result = tool_result(name.clone(), cid, st == Some("error"), text);
    result.x().tool_result = Some(if s.is_some_and(|s| s.has("output") || s.has("error")) {
        let key = if st == Some("error") {
            "error"
        } else {
            "output"
        };
        ToolResult::Value(field(key).unwrap_or(&NULL))
    } else {
        ToolResult::Text
    });
    if st == Some("error")
        && result
            .text
            .as_deref()
            .is_some_and(|t| t.starts_with(REJECTED))
    {
        // a permission the run could not ask for: auto-rejected (opencode #44267)
        let tool = p.and_then(|p| nonempty(p.get("tool")));
        result.require(action("approval", nonempty(cid), tool, None));
    }
    out.push(tool_call(name, field("input"), cid));
    out.push(result);
}

/// The error text of a tool call whose permission was rejected (`PermissionNext.RejectedError`;
/// a headless `opencode run` rejects every permission it would have to ask for).
pub const REJECTED: &str = "The user rejected permission to use this specific tool call";

/// `done.rejected[]`: the permission requests the run auto-rejected, each waiting for an
/// approval (its `tool.callID`, else `callID`; its `permission`, else `type`).
fn rejected<'v>(v: &'v Value<'v>, ev: &mut Event<'v>) {
    for r in v.get("rejected").map(Value::items).unwrap_or_default() {
        let call = r.get("tool").and_then(|t| nonempty(t.get("callID")));
        let id = call.or_else(|| nonempty(r.get("callID")));
        let name = nonempty(r.get("permission")).or_else(|| nonempty(r.get("type")));
        ev.require(action("approval", id, name, None));
    }
}

fn step_finish<'v>(v: &'v Value<'v>, p: Option<&'v Value<'v>>, out: &mut Vec<Event<'v>>) {
    out.push(status(
        "turn_completed",
        p.and_then(|p| p.str_at("reason")).map(Cow::Borrowed),
    ));
    let Some(p) = p else { return };
    if !(p.has("tokens") || p.has("cost")) {
        return;
    }
    let tk = p.get("tokens").filter(|t| t.is_object());
    let get = |k: &str| tk.and_then(|t| t.get(k));
    let c = get("cache").filter(|c| c.is_object());
    let cached = c.and_then(|c| c.get("read"));
    let write = c.and_then(|c| c.get("write"));
    let cost = p.get("cost");
    // opencode #15779: a step whose tokens are all zero while it has a cost reports no tokens
    let counts: Vec<Num> = [
        get("input"),
        get("output"),
        get("reasoning"),
        cached,
        write,
        get("total"),
    ]
    .into_iter()
    .filter_map(Num::count)
    .collect();
    let zero = |n: &Num| matches!(n, Num::Int(0)) || matches!(n, Num::Float(f) if *f == 0.0);
    let costly = match Num::count(cost) {
        Some(Num::Int(i)) => i > 0,
        Some(Num::Float(f)) => f > 0.0,
        None => false,
    };
    if costly && !counts.is_empty() && counts.iter().all(zero) {
        out.push(usage("turn", v.get("modelID"), &[], None, &[], cost));
        return;
    }
    let ev = usage(
        "turn",
        v.get("modelID"),
        &[get("input"), cached, write],
        cached,
        &[get("output"), get("reasoning")],
        cost,
    );
    let ev = reasoning_tokens(ev, get("reasoning"));
    out.push(cache_writes(ev, Num::count(write), None));
}

fn api_error<'v>(e: Option<&'v Value<'v>>) -> Event<'v> {
    if let Some(Value::Str(s)) = e {
        let kind = classify(if s.is_empty() { "error" } else { s });
        return error("api_error", "error", Cow::Borrowed(s.as_ref()), kind);
    }
    let e = e.filter(|e| e.is_object());
    let d = e.and_then(|e| e.get("data")).filter(|d| d.is_object());
    let name = e.and_then(|e| e.str_at("name")).unwrap_or("");
    let message = match d.and_then(|d| d.str_at("message")) {
        Some(m) if !m.is_empty() => Cow::Borrowed(m),
        _ => or_str(Some(name), "error"),
    };
    // the HTTP status decides first; an error opencode retries itself is never semantic
    let kind = http_kind(d.and_then(|d| d.get("statusCode"))).unwrap_or_else(|| {
        match classify(&message) {
            "semantic" if d.is_some_and(|d| d.is_true_at("isRetryable")) => "transport",
            k => k,
        }
    });
    error("api_error", or_str(Some(name), "error"), message, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, check: impl FnOnce(&[Event<'_>])) {
        crate::dialect::check_line(&Opencode, line, check);
    }

    #[test]
    fn tool_use_gives_call_and_result() {
        run(
            r#"{"type":"tool_use","sessionID":"s","part":{"callID":"c","tool":"bash","state":{"status":"error","input":{},"error":"boom"}}}"#,
            |ev| {
                assert_eq!(ev.len(), 2);
                assert_eq!(ev.first().map(|e| e.kind), Some("tool_call"));
                let r = ev.get(1);
                assert_eq!(r.and_then(|e| e.text.as_deref()), Some("boom"));
                let t = r.and_then(|e| e.tool.as_ref());
                assert_eq!(t.and_then(|t| t.is_error), Some(true));
                assert_eq!(t.and_then(|t| t.id), Some("c"));
            },
        );
    }

    #[test]
    fn error_kind_from_status_code() {
        run(
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"slow down","statusCode":429}}}"#,
            |ev| {
                let e = ev.first().and_then(|e| e.error.as_ref());
                assert_eq!(
                    e.map(|e| (e.code.as_ref(), e.kind)),
                    Some(("APIError", "quota"))
                );
            },
        );
        run(
            r#"{"type":"error","error":{"name":"UnknownError"}}"#,
            |ev| {
                let e = ev.first().and_then(|e| e.error.as_ref());
                assert_eq!(e.map(|e| e.message.as_ref()), Some("UnknownError"));
            },
        );
    }

    #[test]
    fn step_finish_usage_sums_cache_and_reasoning() {
        run(
            r#"{"type":"step_finish","part":{"reason":"stop","cost":0.5,"tokens":{"input":10,"output":3,"reasoning":2,"cache":{"read":5,"write":1}}}}"#,
            |ev| {
                assert_eq!(ev.first().and_then(|e| e.text.as_deref()), Some("stop"));
                let u = ev.get(1).and_then(|e| e.usage.as_ref());
                assert_eq!(u.and_then(|u| u.input), Some(Num::Int(16)));
                assert_eq!(u.and_then(|u| u.cached), Some(Num::Int(5)));
                assert_eq!(u.and_then(|u| u.output), Some(Num::Int(5)));
                assert_eq!(u.and_then(|u| u.cost), Some(Num::Float(0.5)));
                assert_eq!(u.map(|u| u.model.as_ref()), Some("unknown"));
            },
        );
    }

    #[test]
    fn zero_tokens_with_a_cost_are_unknown() {
        run(
            r#"{"type":"step_finish","part":{"cost":0.0139,"tokens":{"total":0,"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
            |ev| {
                let u = ev.get(1).and_then(|e| e.usage.as_ref());
                assert_eq!(u.map(|u| (u.input, u.unknown)), Some((None, true)));
                assert_eq!(u.and_then(|u| u.cost), Some(Num::Float(0.0139)));
            },
        );
        run(
            r#"{"type":"step_finish","part":{"cost":0,"tokens":{"input":0,"output":0}}}"#,
            |ev| {
                let u = ev.get(1).and_then(|e| e.usage.as_ref());
                assert_eq!(u.and_then(|u| u.input), Some(Num::Int(0)));
            },
        );
    }

    #[test]
    fn the_generic_unknown_error_repeats() {
        let meta = |line: &str| {
            let Ok((v, _)) = crate::parse::parse(line) else {
                panic!("bad test json")
            };
            Opencode.meta(&v).repeats_error
        };
        assert!(meta(
            r#"{"type":"error","error":{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details."}}}"#
        ));
        assert!(!meta(
            r#"{"type":"error","error":{"name":"UnknownError","data":{"message":"Model not found: x"}}}"#
        ));
    }
}
