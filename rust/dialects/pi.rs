//! pi: pi coding agent `pi -p --mode json`. Mirrors `reference/dialects/pi.py`.
//!
//! A `session` header, then one `AgentSessionEvent` per line. Content and usage come from
//! `message_end` only (the other lines repeat the message); `message_update` text/thinking deltas
//! are `delta: true` messages. Model errors are an assistant message with `stopReason: "error"`.

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::event::{
    cache_writes, classify, compaction_tokens, content_blocks, content_text, error, http_kind,
    line_extras, msg, name_or_unknown, nonneg_int, reasoning_tokens, status, tool_call,
    tool_result, usage, Event, LineMeta, Num, ToolResult,
};
use crate::value::Value;

pub struct Pi;

/// Lifecycle lines: native type -> status subtype (text = the native type).
fn lifecycle(t: &str) -> Option<&'static str> {
    Some(match t {
        "agent_start" | "agent_settled" | "message_start" => "progress",
        // session settings that changed
        "session_info_changed" | "thinking_level_changed" => "progress",
        "turn_start" => "turn_started",
        "turn_end" => "turn_completed",
        "agent_end" => "result",
        _ => return None,
    })
}

/// `model_changed: <model>` / `service_tier_changed: <tier>`, else the type.
fn setting_text<'v>(v: &'v Value<'v>, t: &'v str) -> Cow<'v, str> {
    for k in ["tier", "serviceTier", "modelId", "model"] {
        if let Some(x) = nonempty(v.str_at(k)) {
            return Cow::Owned(format!("{t}: {x}"));
        }
    }
    Cow::Borrowed(t)
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// The errors pi retries itself (`AgentSession._isRetryableError` in
/// packages/coding-agent/src/core/agent-session.ts): its own pattern, matched on the
/// ASCII-lowercased UTF-8 bytes (`.` is any one byte), as the reference does.
const PI_RETRYABLE: &str =
    "(?-u)overloaded|provider.?returned.?error|rate.?limit|too many requests\
    |429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error\
    |connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error\
    |other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up\
    |ended without|http2 request did not get a response|timed? out|timeout|terminated\
    |retry delay";

fn pi_retries(message: &str) -> bool {
    static RE: std::sync::OnceLock<Option<regex::bytes::Regex>> = std::sync::OnceLock::new();
    let low = message.as_bytes().to_ascii_lowercase();
    RE.get_or_init(|| regex::bytes::Regex::new(PI_RETRYABLE).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(&low))
}

/// The kind of a pi error message: a leading `NNN: ` HTTP status decides first (401/403
/// semantic, 429 quota, 5xx transport); then the shared classifier; an error pi retries itself
/// (`retried`: an `auto_retry_*` line, or its pattern matches) is never semantic (undici's bare
/// `terminated` is a connection cut).
pub fn error_kind(message: &str, retried: bool) -> &'static str {
    let b = message.as_bytes();
    if let (Some(d), Some(b": ")) = (b.get(..3), b.get(3..5)) {
        if d.iter().all(u8::is_ascii_digit) {
            let code = d.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0'));
            if let Some(kind) = http_kind(Some(&Value::Int(code))) {
                return kind;
            }
        }
    }
    let kind = classify(if message.is_empty() {
        "api_error"
    } else {
        message
    });
    if kind == "semantic" && (retried || pi_retries(message)) {
        return "transport";
    }
    kind
}

impl Dialect for Pi {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        let Some(t) = v.str_at("type") else { return };
        if t == "session" {
            out.push(status("init", None));
            return;
        }
        if let Some(sub) = lifecycle(t) {
            out.push(status(sub, Some(Cow::Borrowed(t))));
            return;
        }
        match t {
            // forks' session settings
            "model_changed" | "service_tier_changed" => {
                out.push(status("progress", Some(setting_text(v, t))))
            }
            "message_update" => out.push(update(v.get("assistantMessageEvent"))),
            "message_end" => {
                if let Some(m) = v.get("message").filter(|m| m.is_object()) {
                    message(m, out);
                }
            }
            // the call itself was announced by the assistant message's toolCall block
            "tool_execution_start" => {
                out.push(status("progress", v.str_at("toolName").map(Cow::Borrowed)))
            }
            "tool_execution_update" => {
                out.push(status("progress", v.str_at("toolName").map(Cow::Borrowed)))
            }
            "tool_execution_end" => {
                let text = match v.get("result") {
                    Some(r @ Value::Object(_)) => content_text(r.get("content")),
                    r => Cow::Borrowed(r.and_then(Value::as_str).unwrap_or("")),
                };
                let mut ev = tool_result(
                    name_or_unknown(v.get("toolName")),
                    v.get("toolCallId"),
                    v.is_true_at("isError"),
                    text,
                );
                // details are not content
                if let Some(r) = v.get("result") {
                    ev.x().tool_result = Some(ToolResult::Value(content_blocks(r)));
                }
                out.push(ev);
            }
            "queue_update" => {
                let len = |k: &str| v.get(k).map_or(0, |q| q.items().len());
                let text = format!(
                    "queue: {} steering, {} follow-up",
                    len("steering"),
                    len("followUp")
                );
                out.push(status("progress", Some(Cow::Owned(text))));
            }
            "compaction_start" => out.push(status(
                "compaction",
                Some(Cow::Borrowed(nonempty(v.str_at("reason")).unwrap_or(t))),
            )),
            "compaction_end" => out.push(compaction_end(v, t)),
            "auto_compaction_start" => out.push(compaction_tokens(
                status("compaction", v.str_at("reason").map(Cow::Borrowed)),
                v,
            )),
            "auto_compaction_end" => {
                if let Some(m) = nonempty(v.str_at("errorMessage")) {
                    out.push(error(
                        "compaction_error",
                        "compaction_error",
                        Cow::Borrowed(m),
                        classify(m),
                    ));
                } else {
                    let text = if v.is_true_at("aborted") {
                        "aborted"
                    } else {
                        t
                    };
                    out.push(compaction_tokens(
                        status("compaction", Some(Cow::Borrowed(text))),
                        v,
                    ));
                }
            }
            "auto_retry_start" => {
                let m = v.str_at("errorMessage").unwrap_or("");
                let kind = error_kind(m, true);
                let mut ev = error("retry", "auto_retry", Cow::Borrowed(m), kind);
                ev.x().retry = true;
                // pi's own delay before the retry wins over one read from the text.
                if let (Some(Value::Int(ms @ 0..)), "quota" | "transport") =
                    (v.get("delayMs"), kind)
                {
                    ev.retry_after_ms = u64::try_from(*ms).ok();
                }
                out.push(ev);
            }
            "auto_retry_end" => match nonempty(v.str_at("finalError")) {
                Some(f) if !v.is_true_at("success") => {
                    out.push(error(
                        "retry_failed",
                        "retry_failed",
                        Cow::Borrowed(f),
                        error_kind(f, true),
                    ));
                }
                _ => out.push(status("progress", Some(Cow::Borrowed(t)))),
            },
            _ => {}
        }
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        let t = v.str_at("type");
        let m = v.get("message").filter(|m| m.is_object());
        let response = m
            .filter(|m| t == Some("message_end") && m.has("usage"))
            .and_then(|m| nonempty(m.str_at("responseId")));
        let mut meta = LineMeta {
            session_id: if t == Some("session") {
                v.str_at("id")
            } else {
                None
            },
            native_type: t,
            model_call_id: response.or_else(|| m.and_then(|m| nonempty(m.str_at("id")))),
            ..LineMeta::default()
        };
        let outcome = matches!(t, Some("message_end" | "turn_end" | "agent_end"));
        line_extras(v, outcome, &mut meta);
        meta.repeats_error = matches!(t, Some("turn_end" | "agent_end")) && ended_in_error(v)
            // an agent_end that repeats no message: the turn_end before it stands
            || t == Some("agent_end") && last_assistant(v).is_none();
        meta
    }
}

/// `compaction_end` (0.84; `auto_compaction_end` renamed): the text is the `reason`;
/// `result.tokensBefore` is the context size before (pi gives no size after).
fn compaction_end<'v>(v: &'v Value<'v>, t: &'v str) -> Event<'v> {
    if let Some(m) = nonempty(v.str_at("errorMessage")) {
        // a compaction that will be retried is not the ending
        if v.is_true_at("willRetry") {
            let mut ev = error("retry", "compaction_error", Cow::Borrowed(m), classify(m));
            ev.x().retry = true;
            return ev;
        }
        return error(
            "compaction_error",
            "compaction_error",
            Cow::Borrowed(m),
            classify(m),
        );
    }
    if v.is_true_at("aborted") {
        return status("compaction", Some(Cow::Borrowed("aborted")));
    }
    let text = nonempty(v.str_at("reason")).unwrap_or(t);
    let mut ev = compaction_tokens(status("compaction", Some(Cow::Borrowed(text))), v);
    let before = v
        .get("result")
        .filter(|r| r.is_object())
        .and_then(|r| nonneg_int(r.get("tokensBefore")));
    if let (None, Some(b)) = (ev.extra.as_ref().and_then(|x| x.tokens_before), before) {
        ev.x().tokens_before = Some(b);
    }
    ev
}

fn last_assistant<'v>(v: &'v Value<'v>) -> Option<&'v Value<'v>> {
    let assistant = |m: &&Value<'_>| m.is_object() && m.str_eq("role", "assistant");
    match v.get("messages") {
        Some(Value::Array(items)) => items.iter().rev().find(assistant),
        _ => v.get("message").filter(assistant),
    }
}

/// `turn_end`/`agent_end` repeat the turn's last assistant message; when it stopped with
/// `error` or `aborted` its `message_end` already gave the error event.
fn ended_in_error<'v>(v: &'v Value<'v>) -> bool {
    last_assistant(v).is_some_and(|m| matches!(m.str_at("stopReason"), Some("error" | "aborted")))
}

fn update<'v>(e: Option<&'v Value<'v>>) -> Event<'v> {
    if let Some(e) = e.filter(|e| e.is_object()) {
        let et = e.str_at("type");
        let sub = match et {
            Some("text_delta") => Some("text"),
            Some("thinking_delta") => Some("thinking"),
            _ => None,
        };
        if let (Some(sub), Some(d)) = (sub, e.str_at("delta")) {
            let mut ev = msg(sub, "assistant", d);
            ev.delta = true;
            return ev;
        }
        if let Some(et) = et {
            return status("progress", Some(Cow::Borrowed(et)));
        }
    }
    status("progress", Some(Cow::Borrowed("message_update")))
}

fn blocks<'v>(content: Option<&'v Value<'v>>, role: &'static str, out: &mut Vec<Event<'v>>) {
    let items = match content {
        Some(Value::Str(s)) => {
            out.push(msg("text", role, Cow::Borrowed(s.as_ref())));
            return;
        }
        Some(Value::Array(items)) => items,
        _ => return,
    };
    for b in items.iter().filter(|b| b.is_object()) {
        match b.str_at("type") {
            Some("text") => {
                if let Some(t) = b.str_at("text") {
                    out.push(msg("text", role, t));
                }
            }
            Some("thinking") => {
                if let Some(t) = b.str_at("thinking") {
                    out.push(msg("thinking", "assistant", t));
                }
            }
            Some("toolCall") => {
                let mut ev = tool_call(
                    name_or_unknown(b.get("name")),
                    b.get("arguments"),
                    b.get("id"),
                );
                // the unparsed argument text of a malformed call
                if let Some(pj) = nonempty(b.str_at("partialJson")) {
                    ev.x().partial_arguments = Some(pj);
                }
                out.push(ev);
            }
            _ => {}
        }
    }
}

fn message<'v>(m: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    match m.str_at("role") {
        Some("user") => return blocks(m.get("content"), "user", out),
        Some("system") => return blocks(m.get("content"), "system", out),
        // the result itself was reported by tool_execution_end
        Some("toolResult") => {
            out.push(status("progress", m.str_at("toolName").map(Cow::Borrowed)));
            return;
        }
        Some("assistant") => {}
        // extended messages (0.84): summaries and extension messages are system text, a
        // user's `!command` run is progress
        Some("compactionSummary" | "branchSummary") => {
            match m.str_at("summary") {
                Some(s) => out.push(msg("text", "system", s)),
                None => out.push(status("progress", m.str_at("role").map(Cow::Borrowed))),
            }
            return;
        }
        Some("custom") => return blocks(m.get("content"), "system", out),
        Some("bashExecution") => {
            let text = nonempty(m.str_at("command")).unwrap_or("bashExecution");
            out.push(status("progress", Some(Cow::Borrowed(text))));
            return;
        }
        _ => return,
    }
    blocks(m.get("content"), "assistant", out);
    let em = m.str_at("errorMessage").unwrap_or("");
    match m.str_at("stopReason") {
        Some("error") => {
            out.push(error(
                "api_error",
                "api_error",
                Cow::Borrowed(em),
                error_kind(em, false),
            ));
        }
        Some("aborted") => out.push(error("aborted", "aborted", Cow::Borrowed(em), "semantic")),
        _ => {}
    }
    if m.has("usage") {
        let u = m.get("usage").filter(|u| u.is_object());
        let get = |k: &str| u.and_then(|u| u.get(k));
        let cost = get("cost")
            .filter(|c| c.is_object())
            .and_then(|c| c.get("total"));
        let cached = get("cacheRead");
        // `reasoning` (newer builds) is a subset of `output`: not added
        let ev = usage(
            "message",
            m.get("model"),
            &[get("input"), cached, get("cacheWrite")],
            cached,
            &[get("output")],
            cost,
        );
        let ev = reasoning_tokens(ev, get("reasoning"));
        let mut ev = cache_writes(ev, Num::count(get("cacheWrite")), None);
        ev.message_id = m.str_at("responseId").map(Cow::Borrowed);
        out.push(ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Num;

    fn run(line: &str, check: impl FnOnce(&[Event<'_>])) {
        crate::dialect::check_line(&Pi, line, check);
    }

    #[test]
    fn message_end_error_and_usage() {
        run(
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"model":"m","usage":{"input":3,"output":4,"cacheRead":2,"cacheWrite":1,"cost":{"total":0.25}},"stopReason":"error","errorMessage":"Codex error: The usage limit has been reached"}}"#,
            |ev| {
                let kinds: Vec<&str> = ev.iter().map(|e| e.kind).collect();
                assert_eq!(kinds, ["message", "tool_call", "error", "usage"]);
                let e = ev.get(2).and_then(|e| e.error.as_ref());
                assert_eq!(e.map(|e| e.kind), Some("quota"));
                let u = ev.get(3).and_then(|e| e.usage.as_ref());
                assert_eq!(u.and_then(|u| u.input), Some(Num::Int(6)));
                assert_eq!(u.and_then(|u| u.cached), Some(Num::Int(2)));
                assert_eq!(u.and_then(|u| u.cost), Some(Num::Float(0.25)));
                assert_eq!(u.map(|u| u.model.as_ref()), Some("m"));
            },
        );
    }

    #[test]
    fn malformed_call_partial_json_reasoning_and_fork_settings() {
        run(
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"edit","arguments":{},"partialJson":"{\"a"}],"usage":{"input":1,"output":5,"reasoning":2},"stopReason":"error","errorMessage":"Bad"}}"#,
            |ev| {
                let x = ev.first().and_then(|e| e.extra.as_deref());
                assert_eq!(x.and_then(|x| x.partial_arguments), Some("{\"a"));
                let u = ev.last().and_then(|e| e.extra.as_deref());
                assert_eq!(u.and_then(|x| x.reasoning_tokens), Some(&Value::Int(2)));
            },
        );
        run(
            r#"{"type":"service_tier_changed","tier":"priority","fastMode":true}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(
                    e.and_then(|e| e.text.as_deref()),
                    Some("service_tier_changed: priority")
                );
            },
        );
    }

    #[test]
    fn update_deltas_and_progress() {
        run(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"He"}}"#,
            |ev| {
                assert_eq!(
                    ev.first().map(|e| (e.delta, e.text.as_deref())),
                    Some((true, Some("He")))
                );
            },
        );
        run(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_start"}}"#,
            |ev| {
                assert_eq!(
                    ev.first().and_then(|e| e.text.as_deref()),
                    Some("toolcall_start")
                )
            },
        );
    }

    #[test]
    fn tool_execution_end_result_text() {
        run(
            r#"{"type":"tool_execution_end","toolCallId":"t","toolName":"read","result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"isError":true}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(e.and_then(|e| e.text.as_deref()), Some("a\nb"));
                assert_eq!(
                    e.and_then(|e| e.tool.as_ref()).and_then(|t| t.is_error),
                    Some(true)
                );
            },
        );
    }

    #[test]
    fn compaction_end_gives_tokens_before_alone() {
        run(
            r#"{"type":"compaction_end","reason":"threshold","result":{"tokensBefore":171204},"aborted":false,"willRetry":false}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(e.and_then(|e| e.text.as_deref()), Some("threshold"));
                let x = e.and_then(|e| e.extra.as_ref());
                assert_eq!(x.and_then(|x| x.tokens_before), Some(&Value::Int(171204)));
                assert_eq!(x.and_then(|x| x.tokens_after), None);
            },
        );
        run(
            r#"{"type":"compaction_end","reason":"overflow","willRetry":true,"errorMessage":"529 overloaded"}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(e.map(|e| e.subtype.as_ref()), Some("retry"));
                assert!(e.and_then(|e| e.extra.as_ref()).is_some_and(|x| x.retry));
            },
        );
    }
}
