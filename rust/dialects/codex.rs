//! codex: OpenAI Codex CLI `codex exec --json`: the current `thread.*`/`turn.*`/`item.*` events
//! and the legacy `{"id","msg"}` envelope with its preamble lines. Mirrors
//! `reference/dialects/codex.py`.

use std::borrow::Cow;

use crate::dialect::{Context, Dialect, Parts};
use crate::event::{
    action, cache_writes, classify, compaction_tokens, content_blocks, content_text, error,
    line_extras, msg, name_or_unknown, nonempty, or_str, reasoning_tokens, status, tool_call,
    tool_result, usage, window_of_minutes, with_rate_limits, Event, LineMeta, Num, RateLimit,
    Subagent, Text, ToolResult,
};
use crate::value::Value;

pub struct Codex;

/// The model of a reading that names none.
const UNKNOWN: &str = "unknown";

impl Dialect for Codex {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        if let (Some(t), Some(p)) = (v.str_at("type"), v.get("payload").filter(|p| p.is_object())) {
            rollout(t, p, v.str_at("timestamp"), true, out);
            return;
        }
        let Some(t) = v.str_at("type") else {
            if let Some(m) = v.get("msg").filter(|m| m.is_object()) {
                legacy(m, out);
            } else if let Some(r) = v.str_at("record_type") {
                // a pre-envelope rollout's state marker
                out.push(status("progress", Some(Cow::Borrowed(r))));
            } else if is_header(v) {
                // a pre-envelope rollout's first line
                out.push(status("init", v.str_at("cli_version").map(Cow::Borrowed)));
            } else if let Some(p) = v.str_at("prompt") {
                out.push(msg("text", "user", p));
            } else if v.has("model") && (v.has("provider") || v.has("sandbox") || v.has("approval"))
            {
                out.push(status("init", v.str_at("model").map(Cow::Borrowed)));
            }
            return;
        };
        match t {
            "thread.started" | "session.created" => out.push(status("init", None)),
            "turn.started" => out.push(status("turn_started", None)),
            "turn.completed" => {
                out.push(status("turn_completed", None));
                if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                    out.push(codex_usage(u));
                }
            }
            "turn.failed" => {
                let m = v
                    .get("error")
                    .filter(|e| e.is_object())
                    .and_then(|e| e.str_at("message"));
                let message = or_str(m, "turn failed");
                let kind = classify(&message);
                out.push(error("turn_failed", "turn_failed", message, kind));
            }
            "error" => {
                let message = or_str(v.str_at("message"), "error");
                let kind = classify(&message);
                // "Reconnecting... 1/5": a retry
                let retry = message
                    .as_bytes()
                    .get(..12)
                    .is_some_and(|p| p.eq_ignore_ascii_case(b"reconnecting"));
                let mut ev = error("api_error", "error", message, kind);
                if retry {
                    ev.x().retry = true;
                }
                out.push(ev);
            }
            "item.started" | "item.updated" | "item.completed" => {
                if let Some(item) = v.get("item").filter(|i| i.is_object()) {
                    item_events(t.get(5..).unwrap_or(""), item, out);
                }
            }
            "item.plan.delta" => out.push(status("progress", v.str_at("delta").map(Cow::Borrowed))),
            // the thread's context was compacted (counts when given)
            "thread.compacted" => out.push(compaction_tokens(
                status("compaction", Some(Cow::Borrowed("compacted"))),
                v,
            )),
            "request_user_input" => {
                let text = questions_text(v.get("questions"));
                let mut ev = status(
                    "progress",
                    Some(if text.is_empty() {
                        Cow::Borrowed("request_user_input")
                    } else {
                        Cow::Owned(text)
                    }),
                );
                // the model asks the user: the turn waits for the answers
                let id = nonempty(v.get("call_id")).or_else(|| nonempty(v.get("id")));
                ev.require(action("question", id, None, v.get("questions")));
                out.push(ev)
            }
            // a pre-envelope rollout's bare Responses item
            t if is_bare_item(t) => response_item(v, out),
            _ => {}
        }
    }

    /// A rollout's `turn_context` names the model of the readings that follow (a later one
    /// that names another replaces it): a string `payload.model` sets it (`""`: none known),
    /// a `turn_context` without one leaves it; an older build's `payload.service_tier` sets
    /// their speed ([`tier_speed`]). An `event_msg` `thread_settings_applied` (2026: the
    /// thread's settings after `/model`, `/fast`, ...) sets both from `thread_settings`: its
    /// `model`, and its `service_tier` (absent: the default tier).
    fn learn(&self, v: &Value<'_>, ctx: &mut Context) -> Parts {
        let Some(p) = v.get("payload").filter(|p| p.is_object()) else {
            return 0;
        };
        let mut parts = 0;
        if v.str_eq("type", "turn_context") {
            if let Some(m) = p.str_at("model") {
                ctx.model = Some(m).filter(|m| !m.is_empty()).map(str::to_owned);
                parts |= Context::MODEL;
            }
            if let Some(t) = p.str_at("service_tier") {
                ctx.speed = tier_speed(t);
                parts |= Context::SPEED;
            }
        } else if v.str_eq("type", "event_msg") && p.str_eq("type", "thread_settings_applied") {
            let Some(s) = p.get("thread_settings").filter(|s| s.is_object()) else {
                return 0;
            };
            if let Some(m) = s.str_at("model") {
                ctx.model = Some(m).filter(|m| !m.is_empty()).map(str::to_owned);
                parts |= Context::MODEL;
            }
            ctx.speed = s.str_at("service_tier").and_then(tier_speed);
            parts |= Context::SPEED;
        }
        parts
    }

    /// A usage reading that names no model (`info.model`) gets the stream's, and the stream's
    /// speed where it runs at one.
    fn map_in<'v>(&self, v: &'v Value<'v>, ctx: &Context, out: &mut Vec<Event<'v>>) {
        match (v.str_at("type"), v.get("payload").filter(|p| p.is_object())) {
            // a rollout line, its `rateLimits` left out where the reader never reads them
            (Some(t), Some(p)) if ctx.skip_limits => {
                rollout(t, p, v.str_at("timestamp"), false, out);
            }
            _ => self.map(v, out),
        }
        if ctx.model.is_none() && ctx.speed.is_none() {
            return;
        }
        for ev in out.iter_mut().filter(|e| e.usage.is_some()) {
            if let (Some(m), Some(u)) = (&ctx.model, ev.usage.as_mut()) {
                if u.model == UNKNOWN {
                    u.model = Cow::Owned(m.clone());
                }
            }
            if let Some(speed) = ctx.speed {
                ev.x().speed = Some(speed);
            }
        }
    }

    fn context_marks(&self) -> &'static [&'static [u8]] {
        &[b"turn_context", b"thread_settings_applied"]
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        if is_envelope(v) || is_header(v) {
            // a rollout line (§2.3): its own timestamp
            return rollout_meta(v);
        }
        let m = v.get("msg").filter(|m| m.is_object());
        let session_id = v
            .str_at("thread_id")
            .or_else(|| m.and_then(|m| m.str_at("session_id")));
        let native_type = match m {
            Some(m) if !v.has("type") => m.str_at("type"),
            _ => v.str_at("type"),
        };
        let mut meta = LineMeta {
            session_id,
            native_type,
            native_id: v
                .get("item")
                .filter(|i| i.is_object())
                .and_then(|i| nonempty(i.get("id"))),
            ..LineMeta::default()
        };
        line_extras(v, v.str_eq("type", "turn.completed"), &mut meta);
        meta
    }
}

/// file_change kinds (current items) and legacy patch keys -> file events.
fn file_event(kind: Option<&str>) -> Option<&'static str> {
    Some(match kind? {
        "add" => "create",
        "delete" => "delete",
        "update" => "modify",
        _ => return None,
    })
}

fn file_changes<'v>(
    changes: Option<&'v Value<'v>>,
) -> Vec<(&'static str, Text<'v>, Option<&'v str>)> {
    let mut out = Vec::new();
    match changes {
        Some(Value::Array(items)) => {
            for c in items.iter().filter(|c| c.is_object()) {
                if let (Some(e), Some(p)) = (file_event(c.str_at("kind")), nonempty(c.get("path")))
                {
                    out.push((e, Cow::Borrowed(p), c.str_at("diff")));
                }
            }
        }
        Some(c @ Value::Object(_)) => {
            for (path, change) in c.dict_items() {
                let kind = if change.is_object() {
                    change.first_key()
                } else {
                    None
                };
                if let Some(e) = file_event(kind).filter(|_| !path.is_empty()) {
                    out.push((e, Cow::Borrowed(path), None));
                }
            }
        }
        _ => {}
    }
    out
}

/// The legacy line without `type` and `call_id`: the tool's arguments under its current name.
fn rest<'v>(m: &'v Value<'v>) -> Value<'v> {
    match m {
        Value::Object(pairs) => Value::Object(
            pairs
                .iter()
                .filter(|(k, _)| k != "type" && k != "call_id")
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

fn one<'v>(key: &'static str, v: Option<&'v Value<'v>>) -> Value<'v> {
    Value::Object(vec![(Cow::Borrowed(key), v.cloned().unwrap_or(Value::Null))].into())
}

/// `input_tokens` already includes `cached_input_tokens` (and the 2026 builds'
/// `cache_write_input_tokens`: `cacheWriteTokens`); `output_tokens` includes reasoning.
fn codex_usage<'v>(u: &'v Value<'v>) -> Event<'v> {
    let ev = usage(
        "cumulative",
        None,
        &[u.get("input_tokens")],
        u.get("cached_input_tokens"),
        &[u.get("output_tokens")],
        None,
    );
    let ev = cache_writes(ev, Num::count(u.get("cache_write_input_tokens")), None);
    reasoning_tokens(ev, u.get("reasoning_output_tokens"))
}

/// The first generation's flat keys (`primary_used_percent`, ...) of each window.
const FLAT_WINDOWS: [(&str, &str, &str, &str); 2] = [
    (
        "primary",
        "primary_used_percent",
        "primary_window_minutes",
        "primary_reset_after_seconds",
    ),
    (
        "secondary",
        "secondary_used_percent",
        "secondary_window_minutes",
        "secondary_reset_after_seconds",
    ),
];

/// A `token_count`'s `rate_limits` as `rateLimits` readings (`_rate_limits` of the reference),
/// every generation: `primary`/`secondary` objects `{used_percent, window_minutes, resets_at`
/// (epoch seconds) `| resets_in_seconds}` (relative to `ts`, the line's timestamp), or the
/// first generation's flat `primary_used_percent`, `primary_window_minutes`,
/// `primary_reset_after_seconds`, ... A window without a usable `used_percent` gives none.
fn rate_limits<'v>(rl: Option<&'v Value<'v>>, ts: Option<&str>) -> Vec<RateLimit<'v>> {
    let Some(rl) = rl.filter(|r| r.is_object()) else {
        return Vec::new();
    };
    let prefix = nonempty(rl.get("limit_id")).filter(|id| *id != "codex");
    let mut out = Vec::new();
    for (slot, used_key, minutes_key, after_key) in FLAT_WINDOWS {
        let (used, minutes, at, after) = match rl.get(slot).filter(|w| w.is_object()) {
            Some(w) => (
                w.get("used_percent"),
                w.get("window_minutes"),
                w.get("resets_at"),
                w.get("resets_in_seconds"),
            ),
            None => (
                rl.get(used_key),
                rl.get(minutes_key),
                None,
                rl.get(after_key),
            ),
        };
        let Some(used_percent) = Num::count(used) else {
            continue;
        };
        let limit_type: Text<'v> = match prefix {
            Some(p) => Cow::Owned(format!("{p}.{slot}")),
            None => Cow::Borrowed(slot),
        };
        let window = match minutes {
            Some(Value::Int(m)) => window_of_minutes(*m).map(Cow::Owned),
            _ => None,
        };
        let resets_at = match (at, after) {
            (Some(Value::Int(s @ 0..)), _) => crate::retry::format_epoch(i128::from(*s)),
            (_, Some(Value::Int(s @ 0..))) => ts
                .and_then(crate::retry::parse_time)
                .and_then(|base| crate::retry::format_ms(base + i128::from(*s) * 1000)),
            _ => None,
        };
        out.push(RateLimit {
            window: window.unwrap_or_else(|| limit_type.clone()),
            used_percent,
            resets_at,
            limit_type,
        });
    }
    out
}

fn text_or_empty<'v>(v: &'v Value<'v>, key: &str) -> Text<'v> {
    Cow::Borrowed(v.str_at(key).unwrap_or(""))
}

fn item_events<'v>(phase: &str, item: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let it = match item.get("type") {
        None => item.get("item_type"),
        t => t,
    }
    .and_then(Value::as_str);
    let iid = item.get("id");
    match it {
        Some("agent_message" | "assistant_message") => {
            out.push(msg("text", "assistant", text_or_empty(item, "text")))
        }
        Some("reasoning") => out.push(msg("thinking", "assistant", text_or_empty(item, "text"))),
        Some("command_execution") => match phase {
            "started" => {
                let mut ev = tool_call(Cow::Borrowed("shell"), item.get("command"), iid);
                let x = ev.x();
                x.provider_tool_name = Some(Cow::Borrowed("command_execution"));
                x.provider_arguments = Some(one("command", item.get("command")));
                out.push(ev);
            }
            "completed" => {
                let output = text_or_empty(item, "aggregated_output");
                let failed = matches!(item.str_at("status"), Some("failed" | "declined"))
                    || exit_failed(item.get("exit_code"), &output);
                let mut ev = tool_result(Cow::Borrowed("shell"), iid, failed, output);
                if let Some(o) = item.get("aggregated_output") {
                    ev.x().tool_result = Some(ToolResult::Value(o));
                }
                out.push(ev);
            }
            _ => out.push(status("progress", Some(Cow::Borrowed("command_execution")))),
        },
        Some("mcp_tool_call") => {
            let name = name_or_unknown(item.get("tool"));
            match phase {
                "started" => {
                    let mut ev = tool_call(name, item.get("arguments"), iid);
                    ev.x().tool_class = Some("mcp");
                    out.push(ev);
                }
                "completed" => {
                    let err_text = item
                        .get("error")
                        .filter(|e| e.is_object())
                        .and_then(|e| e.str_at("message"));
                    let text = match err_text {
                        Some(t) if !t.is_empty() => Cow::Borrowed(t),
                        _ => match item.get("result").filter(|r| r.is_object()) {
                            Some(r) => content_text(r.get("content")),
                            None => Cow::Borrowed(""),
                        },
                    };
                    let failed = item.str_eq("status", "failed") || err_text.is_some();
                    let mut ev = tool_result(name, iid, failed, text);
                    // structured_content is not content
                    if let Some(r) = item.get("result") {
                        ev.x().tool_result = Some(ToolResult::Value(content_blocks(r)));
                    }
                    out.push(ev);
                }
                _ => out.push(status("progress", Some(Cow::Borrowed("mcp_tool_call")))),
            }
        }
        // The query is known only on completion (started carries "" and action "other", older
        // builds print no started item): the call and its result both come from completed.
        Some("web_search") => match phase {
            "completed" => {
                let action = item.get("action").filter(|a| a.is_object());
                // the arguments: the action (the provider's own), else the query
                let mut call = tool_call(
                    Cow::Borrowed("web_search"),
                    action.or(item.get("query")),
                    iid,
                );
                if action.is_none() {
                    call.x().provider_arguments = Some(one("query", item.get("query")));
                }
                out.push(call);
                // the item reports the query, no result content: no toolResult
                let text = match (nonempty(item.get("query")), action) {
                    (Some(q), _) => Cow::Borrowed(q),
                    (None, Some(a)) => action_text(a),
                    (None, None) => Cow::Borrowed(""),
                };
                out.push(tool_result(Cow::Borrowed("web_search"), iid, false, text));
            }
            _ => out.push(status("progress", Some(Cow::Borrowed("web_search")))),
        },
        Some("file_change") => {
            let changes = changes_text(item.get("changes"));
            let paths = item
                .get("changes")
                .map(Value::items)
                .unwrap_or_default()
                .iter()
                .filter_map(|c| c.str_at("path"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut ev = status("file_change", Some(Cow::Owned(changes)));
            if phase == "completed" {
                // a patch run without a tool_use event, counted once (2026 builds also print
                // it started and updated)
                ev.x().tool_class = Some("filesystem");
            }
            if item.str_eq("status", "completed") {
                ev.x().file_changes = file_changes(item.get("changes"));
            }
            out.push(ev);
            if item.str_at("status") == Some("failed") {
                let message = if paths.is_empty() {
                    "patch failed".to_owned()
                } else {
                    format!("patch failed: {paths}")
                };
                out.push(error(
                    "item_error",
                    "file_change_failed",
                    Cow::Owned(message),
                    "semantic",
                ));
            }
        }
        Some("todo_list") => out.push(status(
            "progress",
            Some(Cow::Owned(todo_text(item.get("items")))),
        )),
        Some("plan") => out.push(status("progress", item.str_at("text").map(Cow::Borrowed))),
        Some("collab_tool_call") => collab(phase, item, iid, out),
        Some("error") => {
            let message = or_str(item.str_at("message"), "error");
            let kind = classify(&message);
            out.push(error("item_error", "item_error", message, kind));
        }
        _ => {}
    }
}

/// The text of a web_search `action` whose `query` is empty: the queries joined by `; ` (else
/// its `query`), the `url`, or `pattern @ url`.
fn action_text<'v>(action: &'v Value<'v>) -> Text<'v> {
    let url = action.str_at("url").unwrap_or("");
    match action.str_at("type") {
        Some("search") => {
            let listed: Vec<&str> = action
                .get("queries")
                .map(Value::items)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .filter(|q| !q.is_empty())
                .collect();
            if listed.is_empty() {
                Cow::Borrowed(action.str_at("query").unwrap_or(""))
            } else {
                Cow::Owned(listed.join("; "))
            }
        }
        Some("find_in_page") => {
            let pattern = action.str_at("pattern").unwrap_or("");
            match (pattern.is_empty(), url.is_empty()) {
                (false, false) => Cow::Owned(format!("{pattern} @ {url}")),
                (false, true) => Cow::Borrowed(pattern),
                _ => Cow::Borrowed(url),
            }
        }
        _ => Cow::Borrowed(url),
    }
}

/// An `agents_states` status that ends a sub-agent -> its disposition.
fn agent_end(status: Option<&str>) -> Option<&'static str> {
    Some(match status? {
        "completed" => "completed",
        "errored" => "failed",
        "shutdown" => "canceled",
        _ => return None,
    })
}

/// A sub-agent tool (spawn_agent, wait, send_input, close_agent, and any later one): started
/// -> the call with its `prompt` and `receiver_thread_ids`; completed/failed -> its result
/// (spawn_agent: the receiver ids; others: every agent's `message`, the sub-agent's reply), then
/// one `status/subagent` per sub-agent started (spawn_agent) or ended (a state `completed`,
/// `errored` or `shutdown`).
fn collab<'v>(
    phase: &str,
    item: &'v Value<'v>,
    iid: Option<&'v Value<'v>>,
    out: &mut Vec<Event<'v>>,
) {
    let name = name_or_unknown(item.get("tool"));
    let receivers = item.get("receiver_thread_ids");
    let ids: Vec<&str> = match receivers {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|r| !r.is_empty())
            .collect(),
        _ => Vec::new(),
    };
    match phase {
        "started" => {
            let args = Value::Object(
                vec![
                    (
                        Cow::Borrowed("prompt"),
                        item.get("prompt").cloned().unwrap_or(Value::Null),
                    ),
                    (
                        Cow::Borrowed("receiver_thread_ids"),
                        receivers.cloned().unwrap_or(Value::Null),
                    ),
                ]
                .into(),
            );
            let mut ev = tool_call(name, item.get("prompt"), iid);
            ev.x().provider_arguments = Some(args);
            out.push(ev);
        }
        "completed" => {
            let states = item.get("agents_states").filter(|s| s.is_object());
            let pairs = states.map(Value::dict_items).unwrap_or_default();
            let mut failed = item.str_eq("status", "failed");
            let mut replies = Vec::new();
            for (_, st) in &pairs {
                if !st.is_object() {
                    continue;
                }
                if matches!(st.str_at("status"), Some("errored" | "not_found")) {
                    failed = true;
                }
                if let Some(m) = nonempty(st.get("message")) {
                    replies.push(m);
                }
            }
            let text = if name == "spawn_agent" {
                ids.join("\n")
            } else {
                replies.join("\n")
            };
            let spawn = name == "spawn_agent";
            let mut ev = tool_result(name.clone(), iid, failed, Cow::Owned(text));
            if let Some(s) = states {
                ev.x().tool_result = Some(ToolResult::Value(s));
            }
            out.push(ev);
            if spawn {
                for rid in &ids {
                    let mut ev = status("subagent", Some(name.clone()));
                    ev.x().subagent = Some(Subagent {
                        id: Cow::Borrowed(rid),
                        phase: "started",
                        description: item.str_at("prompt").map(Cow::Borrowed),
                        ..Subagent::default()
                    });
                    out.push(ev);
                }
            }
            for (tid, st) in &pairs {
                let end = if st.is_object() {
                    agent_end(st.str_at("status"))
                } else {
                    None
                };
                if let Some(d) = end.filter(|_| !tid.is_empty()) {
                    let mut ev = status("subagent", Some(name.clone()));
                    ev.x().subagent = Some(Subagent {
                        id: Cow::Borrowed(tid),
                        phase: "ended",
                        disposition: Some(d),
                        ..Subagent::default()
                    });
                    out.push(ev);
                }
            }
        }
        _ => out.push(status("progress", Some(name))),
    }
}

/// The `question` of each item, one per line (what a headless consumer must answer).
fn questions_text(questions: Option<&Value<'_>>) -> String {
    questions
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|q| q.str_at("question"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn changes_text(changes: Option<&Value<'_>>) -> String {
    let mut lines = Vec::new();
    for c in changes
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter(|c| c.is_object())
    {
        if let Some(path) = c.str_at("path") {
            lines.push(match c.str_at("kind") {
                Some(k) => format!("{k} {path}"),
                None => path.to_owned(),
            });
        }
    }
    lines.join("\n")
}

fn todo_text(items: Option<&Value<'_>>) -> String {
    let mut lines = Vec::new();
    for i in items
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter(|i| i.is_object())
    {
        if let Some(t) = i.str_at("text") {
            lines.push(format!(
                "{}{t}",
                if i.is_true_at("completed") {
                    "[x] "
                } else {
                    "[ ] "
                }
            ));
        }
    }
    lines.join("\n")
}

fn legacy_status(t: &str) -> Option<(&'static str, &'static str)> {
    Some(match t {
        "session_configured" => ("init", "model"),
        "task_started" => ("turn_started", "message"),
        "task_complete" => ("turn_completed", "last_agent_message"),
        "agent_reasoning_section_break"
        | "exec_command_output_delta"
        | "plan_update"
        | "background_event"
        | "exec_approval_request"
        | "apply_patch_approval_request"
        | "shutdown_complete" => ("progress", "message"),
        "turn_diff" => ("file_change", "unified_diff"),
        _ => return None,
    })
}

fn legacy<'v>(m: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let Some(t) = m.str_at("type") else { return };
    if let Some((sub, field)) = legacy_status(t) {
        let mut ev = status(sub, m.str_at(field).map(Cow::Borrowed));
        let asks = match t {
            "exec_approval_request" => Some("command_execution"),
            "apply_patch_approval_request" => Some("file_change"),
            _ => None,
        };
        if let Some(tool) = asks {
            // the CLI waits for the user to approve the call
            ev.require(action(
                "approval",
                nonempty(m.get("call_id")),
                Some(tool),
                None,
            ));
        }
        out.push(ev);
        return;
    }
    let cid = m.get("call_id");
    match t {
        "agent_message" => out.push(msg("text", "assistant", text_or_empty(m, "message"))),
        "agent_reasoning" | "agent_reasoning_raw_content" => {
            out.push(msg("thinking", "assistant", text_or_empty(m, "text")))
        }
        "exec_command_begin" => {
            let mut ev = tool_call(Cow::Borrowed("shell"), m.get("command"), cid);
            let x = ev.x();
            x.provider_tool_name = Some(Cow::Borrowed("command_execution"));
            x.provider_arguments = Some(rest(m));
            out.push(ev);
        }
        "exec_command_end" => {
            let text = match m.str_at("aggregated_output") {
                Some(t) => Cow::Borrowed(t),
                None => text_or_empty(m, "stdout"),
            };
            let failed = exit_failed(m.get("exit_code"), &text);
            let mut ev = tool_result(Cow::Borrowed("shell"), cid, failed, text);
            if let Some(o) = m.get("aggregated_output").or_else(|| m.get("stdout")) {
                ev.x().tool_result = Some(ToolResult::Value(o));
            }
            out.push(ev);
        }
        "patch_apply_begin" => {
            let mut ev = tool_call(Cow::Borrowed("apply_patch"), m.get("changes"), cid);
            let x = ev.x();
            x.provider_tool_name = Some(Cow::Borrowed("file_change"));
            x.provider_arguments = Some(rest(m));
            // applied once patch_apply_end reports success
            if let Some(c @ Value::Object(_)) = m.get("changes") {
                x.file_changes = file_changes(Some(c));
            }
            out.push(ev);
        }
        "patch_apply_end" => {
            let ok = m.is_true_at("success");
            let text = text_or_empty(m, if ok { "stdout" } else { "stderr" });
            let mut ev = tool_result(Cow::Borrowed("apply_patch"), cid, !ok, text);
            ev.x().tool_result = Some(ToolResult::Text);
            out.push(ev);
        }
        "mcp_tool_call_begin" | "mcp_tool_call_end" => {
            let src = m.get("invocation").filter(|i| i.is_object()).unwrap_or(m);
            let name = name_or_unknown(src.get("tool"));
            if t == "mcp_tool_call_begin" {
                let mut ev = tool_call(name, src.get("arguments"), cid);
                ev.x().tool_class = Some("mcp");
                out.push(ev);
            } else {
                let mut ev = legacy_mcp_end(name, cid, m.get("result"));
                // {"Ok": {content, isError}} or {"Err": text}
                if let Some(r) = m.get("result") {
                    let r = if r.is_object() && r.dict_items().len() == 1 {
                        content_blocks(r.get("Ok").or_else(|| r.get("Err")).unwrap_or(r))
                    } else {
                        r
                    };
                    ev.x().tool_result = Some(ToolResult::Value(r));
                }
                out.push(ev);
            }
        }
        "web_search_begin" => out.push(tool_call(Cow::Borrowed("web_search"), m.get("query"), cid)),
        "web_search_end" => {
            let mut ev = tool_result(
                Cow::Borrowed("web_search"),
                cid,
                false,
                text_or_empty(m, "query"),
            );
            ev.x().tool_result = Some(ToolResult::Text);
            out.push(ev);
        }
        "token_count" => {
            let ev = if let Some(total) = m
                .get("info")
                .filter(|i| i.is_object())
                .and_then(|i| i.get("total_token_usage"))
                .filter(|t| t.is_object())
            {
                codex_usage(total)
            } else if m.has("input_tokens") || m.has("output_tokens") {
                codex_usage(m)
            } else {
                status("progress", Some(Cow::Borrowed("token_count")))
            };
            // the legacy envelope has no timestamp: a relative reset gives no time
            out.push(with_rate_limits(
                ev,
                rate_limits(m.get("rate_limits"), None),
            ));
        }
        "error" | "stream_error" => {
            let message = or_str(
                m.str_at("message"),
                if t == "error" {
                    "error"
                } else {
                    "stream_error"
                },
            );
            let kind = classify(&message);
            if t == "error" {
                out.push(error("api_error", "error", message, kind));
            } else {
                // a retry notice: transport unless the text says quota
                let kind = if kind == "quota" {
                    "quota"
                } else {
                    "transport"
                };
                let mut ev = error("stream_error", "stream_error", message, kind);
                ev.x().retry = true;
                out.push(ev);
            }
        }
        "turn_aborted" => {
            let reason = or_str(m.str_at("reason"), "turn aborted");
            out.push(error("turn_aborted", "turn_aborted", reason, "semantic"));
        }
        _ => {}
    }
}

fn legacy_mcp_end<'v>(
    name: Text<'v>,
    cid: Option<&'v Value<'v>>,
    result: Option<&'v Value<'v>>,
) -> Event<'v> {
    if let Some(r) = result.filter(|r| r.is_object()) {
        if let Some(ok) = r.get("Ok") {
            if ok.is_object() {
                return tool_result(
                    name,
                    cid,
                    ok.is_true_at("isError"),
                    content_text(ok.get("content")),
                );
            }
            return tool_result(name, cid, false, Cow::Borrowed(""));
        }
        if let Some(e) = r.get("Err") {
            return tool_result(name, cid, true, Cow::Borrowed(e.as_str().unwrap_or("")));
        }
    }
    tool_result(name, cid, false, Cow::Borrowed(""))
}

// -- rollout files (~/.codex/sessions/…/rollout-*.jsonl; docs/session-files-2026.md §2) -------
// The envelope `{"timestamp","type","payload"}` (2025-09 on) and the pre-envelope generation (a
// bare header, `{"record_type":"state"}` markers and bare Responses items). A rollout repeats
// its content as a `response_item` and as an `event_msg`: the response_items are the content,
// the duplicating event_msgs are `status/progress` (§2.6). Mirrors the reference's `_rollout`.

/// Responses items written to rollouts that carry no content of their own.
const ITEM_PROGRESS: [&str; 9] = [
    "compaction",
    "compaction_summary",
    "context_compaction",
    "compaction_trigger",
    "ghost_snapshot",
    "image_generation_call",
    "tool_search_call",
    "tool_search_output",
    "additional_tools",
];

/// event_msg payloads that duplicate a response_item or carry no event of their own.
const EVENT_PROGRESS: [&str; 24] = [
    "user_message",
    "agent_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "context_compacted",
    "entered_review_mode",
    "exited_review_mode",
    "thread_rolled_back",
    "undo_completed",
    "thread_name_updated",
    "image_generation_end",
    "exec_command_end",
    "mcp_tool_call_end",
    "web_search_end",
    "view_image_tool_call",
    "collab_agent_spawn_end",
    "collab_agent_interaction_end",
    "collab_waiting_end",
    "collab_close_end",
    "plan_update",
    "background_event",
    "session_configured",
    "turn_diff",
];

/// Top-level rollout records with no event of their own.
const RECORD_PROGRESS: [&str; 7] = [
    "world_state",
    "token_usage_record",
    "retained_context",
    "security_risk_score",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "realtime_item",
];

/// Responses item types a pre-envelope rollout writes bare (besides [`ITEM_PROGRESS`]).
const BARE_ITEMS: [&str; 8] = [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
];

/// Leading texts of the user items Codex injects (context, not typed input).
const INJECTED: [&str; 6] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
];

/// The budget of a JSON document inside a tool output string.
const INNER_DEPTH: usize = 64;
const INNER_NODES: usize = 100_000;

fn is_bare_item(t: &str) -> bool {
    BARE_ITEMS.contains(&t) || ITEM_PROGRESS.contains(&t)
}

/// A rollout envelope line: a string `type` and an object `payload`.
pub fn is_envelope(v: &Value<'_>) -> bool {
    v.str_at("type").is_some() && v.get("payload").is_some_and(Value::is_object)
}

/// The first line of a pre-envelope rollout: `id` and `timestamp`, no `type`/`msg`, and one of
/// the session keys.
pub fn is_header(v: &Value<'_>) -> bool {
    !v.has("type")
        && !v.has("msg")
        && v.str_at("id").is_some()
        && v.str_at("timestamp").is_some()
        && ["instructions", "git", "cwd", "originator", "cli_version"]
            .iter()
            .any(|k| v.has(k))
}

fn rollout_meta<'v>(v: &'v Value<'v>) -> LineMeta<'v> {
    let p = v.get("payload").filter(|p| p.is_object());
    let header = is_header(v);
    let session_id = if header {
        v.str_at("id")
    } else if v.str_eq("type", "session_meta") {
        p.and_then(|p| nonempty(p.get("id")))
    } else {
        None
    };
    let native_type = match (v.str_at("type"), p) {
        (Some(t @ ("response_item" | "event_msg")), Some(p)) => p.str_at("type").or(Some(t)),
        (t, _) => t,
    };
    let cwd = if header {
        nonempty(v.get("cwd"))
    } else if v.str_eq("type", "session_meta") || v.str_eq("type", "turn_context") {
        p.and_then(|p| nonempty(p.get("cwd")))
    } else {
        None
    };
    let mut meta = LineMeta {
        session_id,
        timestamp: v.str_at("timestamp"),
        native_type,
        cwd,
        ..LineMeta::default()
    };
    if let Some(p) = p.filter(|_| v.str_eq("type", "event_msg")) {
        line_extras(p, false, &mut meta);
    }
    meta
}

/// A rollout line (`limits`: with its `rateLimits`).
fn rollout<'v>(
    t: &'v str,
    p: &'v Value<'v>,
    ts: Option<&str>,
    limits: bool,
    out: &mut Vec<Event<'v>>,
) {
    match t {
        "session_meta" => {
            let mut init = status("init", p.str_at("cli_version").map(Cow::Borrowed));
            let spawn = p
                .get("source")
                .filter(|s| s.is_object())
                .and_then(|s| s.get("subagent"))
                .filter(|s| s.is_object())
                .and_then(|s| s.get("thread_spawn"))
                .filter(|s| s.is_object());
            if spawn.is_some() || p.str_at("forked_from_id").is_some() {
                // the thread starts from its parent's counter (§2.5): usage_totals counts from there
                init.x().continuation = true;
            }
            out.push(init);
            if let (Some(spawn), Some(id)) = (spawn, nonempty(p.get("id"))) {
                let mut ev = status(
                    "subagent",
                    spawn.str_at("parent_thread_id").map(Cow::Borrowed),
                );
                ev.x().subagent = Some(Subagent {
                    id: Cow::Borrowed(id),
                    phase: "started",
                    kind: Some(Cow::Borrowed("thread_spawn")),
                    ..Subagent::default()
                });
                out.push(ev);
            }
        }
        "response_item" => response_item(p, out),
        "event_msg" => event_msg(p, ts, limits, out),
        "turn_context" => out.push(status("progress", p.str_at("model").map(Cow::Borrowed))),
        "compacted" => {
            let first = p
                .str_at("message")
                .map(|m| Cow::Borrowed(m.split('\n').next().unwrap_or("")));
            out.push(status("compaction", first));
        }
        t if RECORD_PROGRESS.contains(&t) => out.push(status("progress", Some(Cow::Borrowed(t)))),
        _ => {}
    }
}

/// The `text` of the parts of `kinds` joined by LF (a string content is its own text).
fn parts_text<'v>(content: Option<&'v Value<'v>>, kinds: &[&str]) -> Text<'v> {
    match content {
        Some(Value::Str(s)) => Cow::Borrowed(s.as_ref()),
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items
                .iter()
                .filter(|c| c.is_object() && c.str_at("type").is_some_and(|t| kinds.contains(&t)))
                .filter_map(|c| c.str_at("text"))
                .collect();
            match texts.as_slice() {
                [] => Cow::Borrowed(""),
                [one] => Cow::Borrowed(one),
                many => Cow::Owned(many.join("\n")),
            }
        }
        _ => Cow::Borrowed(""),
    }
}

const TEXT_PARTS: [&str; 3] = ["input_text", "output_text", "text"];

fn response_item<'v>(p: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let cid = p.get("call_id");
    match p.str_at("type") {
        Some("message") => {
            let text = parts_text(p.get("content"), &TEXT_PARTS);
            let role = match p.str_at("role") {
                Some("assistant") => "assistant",
                Some("user") if !INJECTED.iter().any(|i| text.starts_with(i)) => "user",
                // developer/system items and the injected user context
                _ => "system",
            };
            out.push(msg("text", role, text));
        }
        Some("reasoning") => {
            let mut text = parts_text(p.get("summary"), &["summary_text"]);
            if text.is_empty() {
                text = parts_text(p.get("content"), &["reasoning_text", "text"]);
            }
            out.push(msg("thinking", "assistant", text));
        }
        Some("function_call") => out.push(tool_call(
            name_or_unknown(p.get("name")),
            p.get("arguments"),
            cid,
        )),
        Some("custom_tool_call") => out.push(tool_call(
            name_or_unknown(p.get("name")),
            p.get("input"),
            cid,
        )),
        Some("local_shell_call") => {
            let command = p
                .get("action")
                .filter(|a| a.is_object())
                .and_then(|a| a.get("command"));
            let mut ev = tool_call(Cow::Borrowed("shell"), command, cid);
            ev.x().provider_tool_name = Some(Cow::Borrowed("local_shell_call"));
            out.push(ev);
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let (text, failed) = call_output(p.get("output"));
            out.push(tool_result(Cow::Borrowed("unknown"), cid, failed, text));
        }
        Some("web_search_call") => {
            let action = p.get("action").filter(|a| a.is_object());
            let iid = p.get("id");
            let text = action.map(action_text).unwrap_or(Cow::Borrowed(""));
            out.push(tool_call(Cow::Borrowed("web_search"), p.get("action"), iid));
            out.push(tool_result(Cow::Borrowed("web_search"), iid, false, text));
        }
        Some(t) if ITEM_PROGRESS.contains(&t) => {
            out.push(status("progress", Some(Cow::Borrowed(t))))
        }
        _ => {}
    }
}

/// A command's exit: its `exit_code` when it is an integer (not 0: failed), else what its
/// output says in plain text ([`text_failed`]).
fn exit_failed(code: Option<&Value<'_>>, output: &str) -> bool {
    match code {
        Some(Value::Int(c)) => *c != 0,
        Some(Value::BigInt(_)) => true,
        _ => text_failed(output),
    }
}

/// A command output that reports its own failure in plain text, as codex gives it to the model
/// (rollouts' `function_call_output` strings, and a command with no `exit_code`): a first line
/// `Exit code: N` with N not 0, or a sandbox refusal `failed in sandbox …`.
pub fn text_failed(text: &str) -> bool {
    if text.starts_with("failed in sandbox") {
        return true;
    }
    let Some(rest) = text.strip_prefix("Exit code: ") else {
        return false;
    };
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let digits: Vec<u8> = rest.bytes().take_while(u8::is_ascii_digit).collect();
    digits.iter().any(|d| *d != b'0')
}

/// The text of a tool output and whether it failed: a JSON string `{output, metadata}` (its
/// `output`; failed when `metadata.exit_code` is not 0), a plain string, content items, or an
/// object with `content` and `success`.
fn call_output<'v>(o: Option<&'v Value<'v>>) -> (Text<'v>, bool) {
    match o {
        Some(Value::Str(s)) => {
            let s: &'v str = s.as_ref();
            if s.starts_with('{') {
                if let Ok((inner, _)) = crate::parse::parse_within(s, INNER_DEPTH, INNER_NODES) {
                    if let Some(Value::Str(text)) = inner.get("output") {
                        let code = inner
                            .get("metadata")
                            .filter(|m| m.is_object())
                            .and_then(|m| m.get("exit_code"));
                        let failed = matches!(code, Some(Value::Int(c)) if *c != 0)
                            || matches!(code, Some(Value::BigInt(_)));
                        let text = match text {
                            Cow::Borrowed(b) => Cow::Borrowed(*b),
                            Cow::Owned(o) => Cow::Owned(o.clone()),
                        };
                        return (text, failed);
                    }
                }
            }
            (Cow::Borrowed(s), text_failed(s))
        }
        Some(items @ Value::Array(_)) => (parts_text(Some(items), &TEXT_PARTS), false),
        Some(obj @ Value::Object(_)) => (
            parts_text(obj.get("content"), &TEXT_PARTS),
            matches!(obj.get("success"), Some(Value::Bool(false))),
        ),
        _ => (Cow::Borrowed(""), false),
    }
}

fn event_msg<'v>(p: &'v Value<'v>, ts: Option<&str>, limits: bool, out: &mut Vec<Event<'v>>) {
    let Some(t) = p.str_at("type") else { return };
    match t {
        "token_count" => {
            let info = p.get("info").filter(|i| i.is_object());
            let ev = match info
                .and_then(|i| i.get("total_token_usage"))
                .filter(|u| u.is_object())
            {
                Some(total) => {
                    let mut ev = codex_usage(total);
                    if let (Some(u), Some(m)) = (
                        ev.usage.as_mut(),
                        info.and_then(|i| nonempty(i.get("model"))),
                    ) {
                        u.model = Cow::Borrowed(m);
                    }
                    ev
                }
                None => status("progress", Some(Cow::Borrowed("rate_limits"))),
            };
            if limits {
                out.push(with_rate_limits(ev, rate_limits(p.get("rate_limits"), ts)));
            } else {
                out.push(ev);
            }
        }
        "task_started" | "turn_started" => out.push(status("turn_started", None)),
        "task_complete" | "turn_complete" => {
            if let Some(e) = p.get("error").filter(|e| e.is_object()) {
                let message = or_str(e.str_at("message"), "turn failed");
                let kind = classify(&message);
                out.push(error("turn_failed", "turn_failed", message, kind));
            }
            out.push(status(
                "turn_completed",
                p.str_at("last_agent_message").map(Cow::Borrowed),
            ));
        }
        "turn_aborted" => {
            let reason = or_str(p.str_at("reason"), "turn aborted");
            let kind = if reason == "budget_limited" {
                "quota"
            } else {
                "semantic"
            };
            out.push(error("turn_aborted", "turn_aborted", reason, kind));
        }
        "error" | "stream_error" => legacy(p, out),
        "patch_apply_end" => {
            let ok = p.is_true_at("success");
            let text = p.str_at(if ok { "stdout" } else { "stderr" });
            out.push(status("file_change", text.map(Cow::Borrowed)));
        }
        "item_completed" => {
            let item = p.get("item").filter(|i| i.is_object());
            let it = item.and_then(|i| i.str_at("type"));
            match (it, item) {
                (Some("FileChange"), _) => {
                    out.push(status("file_change", Some(Cow::Borrowed("FileChange"))))
                }
                (Some("Plan"), Some(i)) => out.push(status(
                    "progress",
                    Some(Cow::Borrowed(or_plan(i.str_at("text")))),
                )),
                _ => out.push(status("progress", it.map(Cow::Borrowed))),
            }
        }
        // the thread's settings after a change (its model and service tier: `learn`)
        "thread_settings_applied" => {
            let model = p.get("thread_settings").and_then(|s| s.str_at("model"));
            let text = model.filter(|m| !m.is_empty()).unwrap_or(t);
            out.push(status("progress", Some(Cow::Borrowed(text))))
        }
        t if EVENT_PROGRESS.contains(&t) => out.push(status("progress", Some(Cow::Borrowed(t)))),
        _ => {}
    }
}

/// The speed a Codex service tier runs requests at, as the events' `speed` names it: `fast`
/// for Codex's fast mode (the config's `fast`, the API's `priority`), `flex` and `ultrafast`
/// as named; `None` for the standard tier (`default`, `auto`, `standard`) and for a tier not
/// known here.
fn tier_speed(tier: &str) -> Option<&'static str> {
    let speed = match tier {
        "priority" => "fast",
        t => t,
    };
    Context::SPEEDS.iter().copied().find(|s| *s == speed)
}

fn or_plan(text: Option<&str>) -> &str {
    match text {
        Some(t) if !t.is_empty() => t,
        _ => "Plan",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, check: impl FnOnce(&[Event<'_>])) {
        crate::dialect::check_line(&Codex, line, check);
    }

    #[test]
    fn legacy_patch_proposes_its_changes_under_the_current_name() {
        run(
            r#"{"id":"1","msg":{"type":"patch_apply_begin","call_id":"c","auto_approved":true,"changes":{"a.rs":{"update":{}},"b.rs":{"add":{}},"":{"add":{}},"c.rs":{"rename":{}}}}}"#,
            |ev| {
                let x = ev.first().and_then(|e| e.extra.as_deref());
                assert_eq!(
                    x.and_then(|x| x.provider_tool_name.as_deref()),
                    Some("file_change")
                );
                let changes: Vec<(&str, &str)> = x
                    .map(|x| {
                        x.file_changes
                            .iter()
                            .map(|(e, p, _)| (*e, p.as_ref()))
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(changes, [("modify", "a.rs"), ("create", "b.rs")]);
                let args = x.and_then(|x| x.provider_arguments.as_ref());
                assert!(args.is_some_and(|a| a.has("auto_approved") && !a.has("call_id")));
            },
        );
    }

    #[test]
    fn reconnecting_is_a_retry() {
        run(
            r#"{"type":"error","message":"Reconnecting... 2/5"}"#,
            |ev| {
                assert!(ev
                    .first()
                    .and_then(|e| e.extra.as_deref())
                    .is_some_and(|x| x.retry));
            },
        );
        run(r#"{"type":"error","message":"boom"}"#, |ev| {
            assert!(ev.first().is_some_and(|e| e.extra.is_none()));
        });
    }

    #[test]
    fn rollout_output_json_gives_its_output_and_exit_code() {
        run(
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"output\":\"no\\u00e9\",\"metadata\":{\"exit_code\":2}}"}}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(e.and_then(|e| e.text.as_deref()), Some("noé"));
                assert_eq!(
                    e.and_then(|e| e.tool.as_ref()).and_then(|t| t.is_error),
                    Some(true)
                );
            },
        );
    }

    /// The usage readings of `lines` mapped in order with one context, as the engine does:
    /// each one's model and speed.
    fn readings(lines: &[&str]) -> Vec<(String, Option<String>)> {
        let mut ctx = Context::default();
        let mut got = Vec::new();
        for line in lines {
            let Ok((v, _)) = crate::parse::parse(line) else {
                panic!("bad test json")
            };
            let mut out = Vec::new();
            Codex.learn(&v, &mut ctx);
            Codex.map_in(&v, &ctx, &mut out);
            for e in &out {
                if let Some(u) = &e.usage {
                    let speed = e.extra.as_deref().and_then(|x| x.speed);
                    got.push((u.model.to_string(), speed.map(str::to_owned)));
                }
            }
        }
        got
    }

    /// The usage models of `lines` ([`readings`]).
    fn models(lines: &[&str]) -> Vec<String> {
        readings(lines).into_iter().map(|(m, _)| m).collect()
    }

    #[test]
    fn turn_context_names_the_model_of_later_readings() {
        let tc =
            |m: &str| format!(r#"{{"type":"turn_context","payload":{{"cwd":"/p","model":{m}}}}}"#);
        let count = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1}}}}"#;
        let own = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":6,"output_tokens":1},"model":"own"}}}"#;
        let (a, b, empty, null) = (tc("\"gpt-a\""), tc("\"gpt-b\""), tc("\"\""), tc("null"));
        let no_model = r#"{"type":"turn_context","payload":{"cwd":"/p"}}"#;
        assert_eq!(
            models(&[count, &a, count, own, no_model, count, &null, count, &b, count]),
            ["unknown", "gpt-a", "own", "gpt-a", "gpt-a", "gpt-b"]
        );
        // an empty model: none known from there on
        assert_eq!(models(&[&a, count, &empty, count]), ["gpt-a", "unknown"]);
        // the exec stream's usage too, once a turn_context named one
        let done = r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#;
        assert_eq!(models(&[done, &a, done]), ["unknown", "gpt-a"]);
        // the line is a turn_context by its parsed type: an escaped spelling counts too
        let escaped = r#"{"type":"turn\u005fcontext","payload":{"model":"gpt-e"}}"#;
        assert_eq!(models(&[escaped, count]), ["gpt-e"]);
        assert!(escaped.contains("\\u"));
    }

    #[test]
    fn the_service_tier_sets_the_speed_of_later_readings() {
        let speeds = readings;
        let count = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1}}}}"#;
        let set = |m: &str, tier: &str| {
            format!(
                r#"{{"type":"event_msg","payload":{{"type":"thread_settings_applied","thread_settings":{{"model":"{m}"{tier}}}}}}}"#
            )
        };
        let fast = set("gpt-f", r#","service_tier":"fast""#);
        let priority = set("gpt-p", r#","service_tier":"priority""#);
        let flex = set("gpt-x", r#","service_tier":"flex""#);
        let unknown = set("gpt-u", r#","service_tier":"scale""#);
        let default = set("gpt-d", "");
        let tc = r#"{"type":"turn_context","payload":{"model":"gpt-t"}}"#;
        let old =
            r#"{"type":"turn_context","payload":{"model":"gpt-o","service_tier":"priority"}}"#;
        let s = |m: &str, sp: Option<&str>| (m.to_owned(), sp.map(str::to_owned));
        assert_eq!(
            speeds(&[count, &fast, count, tc, count, &default, count, &priority, count]),
            [
                s("unknown", None),
                s("gpt-f", Some("fast")),
                s("gpt-t", Some("fast")), // a turn_context without a tier keeps it
                s("gpt-d", None),
                s("gpt-p", Some("fast")),
            ]
        );
        assert_eq!(
            speeds(&[&flex, count, &unknown, count, old, count]),
            [
                s("gpt-x", Some("flex")),
                s("gpt-u", None),
                s("gpt-o", Some("fast"))
            ]
        );
        // which parts each line touches
        let parts = |line: &str| {
            let Ok((v, _)) = crate::parse::parse(line) else {
                panic!("bad test json")
            };
            Codex.learn(&v, &mut Context::default())
        };
        assert_eq!(parts(tc), Context::MODEL);
        assert_eq!(parts(old), Context::ALL);
        assert_eq!(parts(&default), Context::ALL);
        assert_eq!(
            parts(
                r#"{"type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{}}}"#
            ),
            Context::SPEED
        );
        assert_eq!(parts(count), 0);
        // the line maps to status/progress naming the model
        let Ok((v, _)) = crate::parse::parse(&fast) else {
            panic!("bad test json")
        };
        let mut out = Vec::new();
        Codex.map(&v, &mut out);
        let [ev] = out.as_slice() else {
            panic!("one event")
        };
        assert_eq!((ev.kind, &*ev.subtype), ("status", "progress"));
        assert_eq!(ev.text.as_deref(), Some("gpt-f"));
    }

    #[test]
    fn rollout_meta_reads_session_and_timestamp() {
        let Ok((v, _)) = crate::parse::parse(
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s1","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}"#,
        ) else {
            panic!("bad test json")
        };
        let m = Codex.meta(&v);
        assert_eq!(m.session_id, Some("s1"));
        assert_eq!(m.timestamp, Some("2026-01-01T00:00:00Z"));
        let mut out = Vec::new();
        Codex.map(&v, &mut out);
        assert!(out
            .first()
            .and_then(|e| e.extra.as_deref())
            .is_some_and(|x| x.continuation));
        assert_eq!(out.len(), 2);
    }
}
