//! grok: xAI Grok Build `grok -p --output-format json|streaming-json` and superagent-ai grok-cli
//! `--format json`. Mirrors `reference/dialects/grok.py`.
//!
//! Three shapes, told apart per line: the xAI `json` single object (no `type`); xAI
//! `streaming-json` (`thought`/`text` with `data`, `tool_call`/`tool_call_update`, `usage`,
//! `plan`, `end`, ...); superagent's step-based lines (`step_start`, `text` with `text`,
//! `tool_use` with call and result, `step_finish`).

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::event::{
    cache_writes, classify, compaction_tokens, error, line_extras, msg, name_or_unknown, nonempty,
    or_str, reasoning_tokens, status, tool_call, tool_result, usage, Event, LineMeta, Num, Text,
    ToolResult,
};
use crate::value::Value;

pub struct Grok;

/// superagent reports cost in ticks of 1e-10 USD.
const TICKS_PER_USD: f64 = 1e10;

impl Dialect for Grok {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        let t = match v.get("type") {
            None | Some(Value::Null) => return json_object(v, out),
            Some(Value::Str(t)) => t.as_ref(),
            Some(_) => return,
        };
        match t {
            "thought" | "text" => {
                let sub = if t == "thought" { "thinking" } else { "text" };
                if let Some(d) = v.str_at("data") {
                    // xAI streaming-json: a token chunk, the only form of the text
                    let mut ev = msg(sub, "assistant", d);
                    ev.delta = true;
                    ev.x().delta_only = true;
                    out.push(ev);
                } else if t == "thought" {
                    out.push(msg(sub, "assistant", ""));
                } else {
                    // superagent: the step's text, whole
                    out.push(msg(sub, "assistant", v.str_at("text").unwrap_or("")));
                }
            }
            "tool_call" => out.push(tool_call(
                tool_name(v),
                v.get("rawInput"),
                v.get("toolCallId"),
            )),
            "tool_call_update" => match v.str_at("status") {
                Some(st @ ("completed" | "failed")) => {
                    let text = match v.get("rawOutput") {
                        Some(Value::Str(s)) => Cow::Borrowed(s.as_ref()),
                        _ => acp_text(v.get("content")),
                    };
                    let ev = tool_result(tool_name(v), v.get("toolCallId"), st == "failed", text);
                    out.push(raw_result(ev, v));
                }
                st => out.push(status("progress", st.map(Cow::Borrowed))),
            },
            "usage" => {
                let mut ev = grok_usage("message", v.get("model"), v.get("usage"), None);
                ev.message_id = v.str_at("messageId").map(Cow::Borrowed);
                out.push(ev);
            }
            "plan" => out.push(status(
                "progress",
                Some(Cow::Owned(plan_text(v.get("entries")))),
            )),
            "available_commands" => out.push(status("progress", Some(Cow::Borrowed(t)))),
            _ if t.starts_with("auto_compact") => {
                // the start's `reason` (`threshold`, or a sentence) names why, as pi's
                // compaction_start
                let text = if v.is_true_at("aborted") {
                    "aborted"
                } else {
                    v.str_at("reason").filter(|r| !r.is_empty()).unwrap_or(t)
                };
                out.push(compaction_tokens(
                    status("compaction", Some(Cow::Borrowed(text))),
                    v,
                ));
            }
            "max_turns_reached" => out.push(error(
                "max_turns",
                "max_turns_reached",
                or_str(v.str_at("message"), "max turns reached"),
                "semantic",
            )),
            "error" => {
                let m = v.str_at("message").unwrap_or("");
                let kind = classify(if m.is_empty() { "error" } else { m });
                out.push(error("api_error", "error", Cow::Borrowed(m), kind));
                spend(v, out);
            }
            "end" => {
                out.push(status("result", v.str_at("stopReason").map(Cow::Borrowed)));
                spend(v, out);
            }
            // superagent-ai grok-cli
            "step_start" => out.push(status("turn_started", None)),
            "tool_use" => superagent_tool(v, out),
            "step_finish" => step_finish(v, out),
            "run_finish" => run_finish(v, out),
            _ => {}
        }
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        let t = v.get("type");
        let mut m = LineMeta {
            session_id: v.str_at("sessionId").or_else(|| v.str_at("sessionID")),
            native_type: v.str_at("type"),
            model_call_id: if v.str_eq("type", "usage") {
                nonempty(v.get("messageId"))
            } else {
                None
            },
            ..LineMeta::default()
        };
        let outcome = matches!(t, None | Some(Value::Null)) || v.str_eq("type", "end");
        line_extras(v, outcome, &mut m);
        // a failed run: an error line before it is the ending
        m.repeats_error =
            v.str_eq("type", "run_finish") && matches!(v.get("success"), Some(Value::Bool(false)));
        m
    }
}

/// The tool result as the line gives it: `rawOutput`, else ACP `content`, else the text.
fn raw_result<'v>(mut ev: Event<'v>, v: &'v Value<'v>) -> Event<'v> {
    let found = v.get("rawOutput").or_else(|| v.get("content"));
    ev.x().tool_result = Some(found.map_or(ToolResult::Text, ToolResult::Value));
    ev
}

fn json_object<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    if !(v.has("text") || v.has("stopReason") || v.has("thought")) {
        return;
    }
    if let Some(t) = v.str_at("thought") {
        out.push(msg("thinking", "assistant", t));
    }
    if let Some(t) = v.str_at("text") {
        out.push(msg("text", "assistant", t));
    }
    out.push(status("result", v.str_at("stopReason").map(Cow::Borrowed)));
    spend(v, out);
}

/// Run totals (`json` object, `end`, `error`): `usage/cumulative`.
fn spend<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    if !(v.has("usage") || v.has("total_cost_usd")) {
        return;
    }
    let mut ev = grok_usage("cumulative", None, v.get("usage"), v.get("total_cost_usd"));
    let first = v
        .get("modelUsage")
        .filter(|m| m.is_object())
        .and_then(Value::first_key);
    if let (Some(k), Some(u)) = (first, ev.usage.as_mut()) {
        if !k.is_empty() {
            u.model = Cow::Borrowed(k);
        }
    }
    out.push(ev);
}

/// `input_tokens` is the uncached part; `reasoning_tokens` are inside `output_tokens` unless
/// `reasoning_apart`.
fn grok_usage<'v>(
    scope: &'static str,
    model: Option<&'v Value<'v>>,
    u: Option<&'v Value<'v>>,
    cost: Option<&'v Value<'v>>,
) -> Event<'v> {
    let u = u.filter(|u| u.is_object());
    let get = |k: &str| u.and_then(|u| u.get(k));
    let cached = get("cache_read_input_tokens");
    let ev = usage(
        scope,
        model,
        &[
            get("input_tokens"),
            cached,
            get("cache_creation_input_tokens"),
        ],
        cached,
        &[
            get("output_tokens"),
            if u.is_some_and(reasoning_apart) {
                get("reasoning_tokens")
            } else {
                None
            },
        ],
        cost,
    );
    let ev = reasoning_tokens(ev, get("reasoning_tokens"));
    cache_writes(ev, Num::count(get("cache_creation_input_tokens")), None)
}

/// `reasoning_tokens` are inside `output_tokens` (the xAI token-field policy), except in builds
/// whose `total_tokens` counts them apart: `total_tokens` = input + cache read + cache creation
/// + output + reasoning (docs/formats-2026.md section 6.1).
fn reasoning_apart(u: &Value<'_>) -> bool {
    let int = |k: &str| match u.get(k) {
        Some(Value::Int(i)) if *i >= 0 => Some(i128::from(*i)),
        _ => None,
    };
    let (Some(total), Some(reasoning)) = (int("total_tokens"), int("reasoning_tokens")) else {
        return false;
    };
    let parts: i128 = [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
        "reasoning_tokens",
    ]
    .iter()
    .filter_map(|k| int(k))
    .sum();
    reasoning > 0 && parts == total
}

/// superagent's last line: `status/result` (`success`/`failed`); a failed run adds an
/// `error/run_failed` (semantic), which the line's `repeatsError` lets an earlier error line
/// outrank.
fn run_finish<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let ok = match v.get("success") {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let text = ok.map(|b| Cow::Borrowed(if b { "success" } else { "failed" }));
    out.push(status("result", text));
    if ok == Some(false) {
        let message = match v.get("exitCode") {
            Some(Value::Int(c)) => format!("run failed (exit code {c})"),
            _ => "run failed".to_owned(),
        };
        out.push(error(
            "run_failed",
            "run_failed",
            Cow::Owned(message),
            "semantic",
        ));
    }
}

fn tool_name<'v>(v: &'v Value<'v>) -> Text<'v> {
    ["toolName", "title"]
        .iter()
        .find_map(|k| v.str_at(k).filter(|n| !n.is_empty()))
        .map_or(Cow::Borrowed("unknown"), Cow::Borrowed)
}

/// Text of ACP tool content: `{"type":"content","content":{"type":"text","text"}}` or
/// `{"type":"text","text"}` items, joined by LF.
fn acp_text<'v>(content: Option<&'v Value<'v>>) -> Text<'v> {
    if let Some(Value::Str(s)) = content {
        return Cow::Borrowed(s.as_ref());
    }
    let mut texts: Vec<&'v str> = Vec::new();
    for item in content
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter(|i| i.is_object())
    {
        let item = match item.get("content") {
            Some(c @ Value::Object(_)) if item.str_eq("type", "content") => c,
            _ => item,
        };
        if item.str_eq("type", "text") {
            if let Some(t) = item.str_at("text") {
                texts.push(t);
            }
        }
    }
    match texts.as_slice() {
        [] => Cow::Borrowed(""),
        [one] => Cow::Borrowed(one),
        many => Cow::Owned(many.join("\n")),
    }
}

fn plan_text(entries: Option<&Value<'_>>) -> String {
    let mut lines = Vec::new();
    for e in entries
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter(|e| e.is_object())
    {
        if let Some(c) = e.str_at("content") {
            let mark = if e.str_eq("status", "completed") {
                "[x] "
            } else {
                "[ ] "
            };
            lines.push(format!("{mark}{c}"));
        }
    }
    lines.join("\n")
}

fn superagent_tool<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let tc = v.get("toolCall").filter(|t| t.is_object());
    let f = tc.and_then(|t| t.get("function")).filter(|f| f.is_object());
    let name = name_or_unknown(f.and_then(|f| f.get("name")));
    let cid = tc.and_then(|t| t.get("id"));
    out.push(tool_call(
        name.clone(),
        f.and_then(|f| f.get("arguments")),
        cid,
    ));
    if let Some(tr) = v.get("toolResult").filter(|t| t.is_object()) {
        let text = match tr.str_at("output") {
            Some(o) if !o.is_empty() => o,
            _ => tr.str_at("error").unwrap_or(""),
        };
        let is_error = matches!(tr.get("success"), Some(Value::Bool(false)));
        out.push(raw_result(
            tool_result(name, cid, is_error, Cow::Borrowed(text)),
            v,
        ));
    }
}

fn step_finish<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    out.push(status(
        "turn_completed",
        v.str_at("finishReason").map(Cow::Borrowed),
    ));
    if !v.has("usage") {
        return;
    }
    let u = v.get("usage").filter(|u| u.is_object());
    let get = |k: &str| u.and_then(|u| u.get(k));
    let mut ev = usage(
        "turn",
        v.get("model"),
        &[get("inputTokens")],
        None,
        &[get("outputTokens")],
        None,
    );
    let cost = match Num::count(get("costUsdTicks")) {
        Some(Num::Int(i)) => Some(Num::Float(i as f64 / TICKS_PER_USD)),
        Some(Num::Float(f)) => Some(Num::Float(f / TICKS_PER_USD)),
        None => None,
    };
    if let Some(u) = ev.usage.as_mut() {
        u.cost = cost;
    }
    out.push(ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, check: impl FnOnce(&[Event<'_>])) {
        crate::dialect::check_line(&Grok, line, check);
    }

    #[test]
    fn json_object_with_usage() {
        run(
            r#"{"text":"PONG","stopReason":"end_turn","sessionId":"s","thought":"t","usage":{"input_tokens":5,"cache_read_input_tokens":3,"output_tokens":2,"reasoning_tokens":4},"modelUsage":{"grok-4":{}},"total_cost_usd":0.01}"#,
            |ev| {
                let subs: Vec<&str> = ev.iter().map(|e| e.subtype.as_ref()).collect();
                assert_eq!(subs, ["thinking", "text", "result", "cumulative"]);
                let u = ev.get(3).and_then(|e| e.usage.as_ref());
                assert_eq!(u.and_then(|u| u.input), Some(Num::Int(8)));
                // no total_tokens: reasoning is inside output_tokens
                assert_eq!(u.and_then(|u| u.output), Some(Num::Int(2)));
                assert_eq!(u.map(|u| u.model.as_ref()), Some("grok-4"));
            },
        );
    }

    #[test]
    fn tool_call_update_result_from_acp_content() {
        run(
            r#"{"type":"tool_call_update","toolCallId":"c","status":"failed","content":[{"type":"content","content":{"type":"text","text":"no such file"}}]}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(e.and_then(|e| e.text.as_deref()), Some("no such file"));
                let t = e.and_then(|e| e.tool.as_ref());
                assert_eq!(
                    t.map(|t| (t.name.as_ref(), t.is_error)),
                    Some(("unknown", Some(true)))
                );
            },
        );
    }

    #[test]
    fn superagent_step_finish_ticks() {
        run(
            r#"{"type":"step_finish","finishReason":"stop","usage":{"inputTokens":10,"outputTokens":2,"costUsdTicks":25000000}}"#,
            |ev| {
                let u = ev.get(1).and_then(|e| e.usage.as_ref());
                assert_eq!(u.and_then(|u| u.cost), Some(Num::Float(0.0025)));
                assert_eq!(u.and_then(|u| u.input), Some(Num::Int(10)));
            },
        );
    }

    #[test]
    fn reasoning_is_added_only_when_total_counts_it_apart() {
        let end = |u: &str| format!(r#"{{"type":"end","stopReason":"end_turn","usage":{u}}}"#);
        let output = |line: &str| {
            let mut got = None;
            run(line, |ev| {
                got = ev
                    .get(1)
                    .and_then(|e| e.usage.as_ref())
                    .and_then(|u| u.output)
            });
            got
        };
        // xAI doc: 7210 + 41000 + 0 + 1893 = 50103 (reasoning inside output)
        let inside = end(
            r#"{"input_tokens":7210,"cache_read_input_tokens":41000,"cache_creation_input_tokens":0,"output_tokens":1893,"reasoning_tokens":412,"total_tokens":50103}"#,
        );
        assert_eq!(output(&inside), Some(Num::Int(1893)));
        // older build: 16016 + 11264 + 125 + 62 = 27467 (reasoning apart)
        let apart = end(
            r#"{"input_tokens":16016,"cache_read_input_tokens":11264,"output_tokens":125,"reasoning_tokens":62,"total_tokens":27467}"#,
        );
        assert_eq!(output(&apart), Some(Num::Int(187)));
    }

    #[test]
    fn streaming_chunks_are_delta_only() {
        run(r#"{"type":"text","data":"G"}"#, |ev| {
            let e = ev.first();
            assert!(e.is_some_and(|e| e.delta));
            assert!(e
                .and_then(|e| e.extra.as_ref())
                .is_some_and(|x| x.delta_only));
        });
        run(r#"{"type":"text","stepNumber":1,"text":"whole"}"#, |ev| {
            assert!(ev.first().is_some_and(|e| !e.delta && e.extra.is_none()));
        });
    }

    #[test]
    fn failed_run_finish_repeats_the_error() {
        let line = r#"{"type":"run_finish","success":false,"exitCode":2,"errorCount":0}"#;
        run(line, |ev| {
            let subs: Vec<&str> = ev.iter().map(|e| e.subtype.as_ref()).collect();
            assert_eq!(subs, ["result", "run_failed"]);
            let m = ev
                .get(1)
                .and_then(|e| e.error.as_ref())
                .map(|e| e.message.as_ref());
            assert_eq!(m, Some("run failed (exit code 2)"));
        });
        let Ok((v, _)) = crate::parse::parse(line) else {
            panic!("bad test json")
        };
        assert!(Grok.meta(&v).repeats_error);
    }
}
