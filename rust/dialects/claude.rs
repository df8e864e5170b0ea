//! claude: Claude Code `-p --output-format stream-json --verbose` (also Amp, Qwen Code and Grok
//! Build's `streaming-messages-json`), and the session files the CLI writes under
//! `~/.claude/projects/` (docs/session-files-2026.md section 1), recognised line by line (a
//! `parentUuid` key or an `isSidechain` boolean, or a record type only session files have).
//! Mirrors `reference/dialects/claude.py`.

use std::borrow::Cow;

use crate::dialect::Dialect;
use crate::event::{
    action, cache_writes, classify, compaction_tokens, content_text, error, http_kind, msg,
    name_or_unknown, nonempty, nonneg_int, or_str, percent_of_fraction, status, tool_call,
    tool_result, usage, with_rate_limits, Event, LineMeta, Num, RateLimit, Subagent, Text,
    ToolResult,
};
use crate::value::Value;

pub struct Claude;

fn system_subtype(s: &str) -> Option<&'static str> {
    Some(match s {
        "init" | "session_start" => "init",
        "compact_boundary" => "compaction",
        "task_started" | "task_progress" | "task_notification" | "task_updated" => "subagent",
        _ => return None,
    })
}

/// System subtypes that are progress notes, with the field that names them (`None`: the
/// subtype, or for a hook its `hook_name`).
fn progress_field(s: &str) -> Option<Option<&'static str>> {
    Some(match s {
        "thinking_tokens"
        | "hook_started"
        | "hook_progress"
        | "hook_response"
        | "files_persisted"
        | "elicitation_complete"
        | "memory_recall" => None,
        // the rest of the Agent SDK's SDKMessage union (sdk.d.ts, issue 25)
        "informational" => Some("content"),
        "control_request_progress" | "plugin_install" => Some("status"),
        "worker_shutting_down" => Some("reason"),
        "permission_denied" => Some("message"),
        "notification" => Some("text"),
        "session_state_changed" => Some("state"),
        "model_fallback"
        | "model_refusal_fallback"
        | "model_refusal_no_fallback"
        | "model_consent_fallback"
        | "post_turn_summary"
        | "mirror_error" => Some("content"),
        _ => return None,
    })
}

/// Top-level types that are progress notes: the field that gives their text.
fn top_progress_field(t: &str) -> Option<&'static str> {
    match t {
        "tool_progress" => Some("tool_name"),
        "tool_use_summary" => Some("summary"),
        "prompt_suggestion" => Some("suggestion"), // a predicted next prompt: never the answer
        "transcript_mirror" => Some("filePath"),   // --session-mirror: the session file's entries
        "keep_alive" => Some("type"),
        _ => None,
    }
}

/// api_retry `error` (SDKAssistantMessageError) -> kind, when the HTTP status decides none.
fn retry_error_kind(code: &str) -> Option<&'static str> {
    match code {
        "rate_limit" | "billing_error" => Some("quota"),
        "server_error" => Some("transport"),
        "authentication_failed" | "invalid_request" | "max_output_tokens" | "model_not_found" => {
            Some("semantic")
        }
        _ => None,
    }
}

/// Result `terminal_reason`s that say the failure is the request's own.
const SEMANTIC_REASONS: [&str; 3] = ["prompt_too_long", "model_error", "max_turns"];

fn assistant_error_kind(code: &str) -> Option<&'static str> {
    match code {
        "rate_limit" | "billing_error" => Some("quota"),
        "server_error" => Some("transport"),
        "authentication_failed" | "invalid_request" | "max_output_tokens" | "model_not_found" => {
            Some("semantic")
        }
        _ => None,
    }
}

impl Dialect for Claude {
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        match v.str_at("type") {
            Some("assistant") => assistant(v, out),
            Some("user") => {
                if let Some(m) = v.get("message").filter(|m| m.is_object()) {
                    // session files: text the CLI injected (skill text, a compaction's summary)
                    let injected = v.is_true_at("isMeta") || v.is_true_at("isCompactSummary");
                    let role = if injected { "system" } else { "user" };
                    let from = out.len();
                    content_events(m.get("content"), role, out);
                    refused_results(v, out.get_mut(from..).unwrap_or_default());
                }
            }
            Some("result") => result(v, out),
            Some("system") => system(v, out),
            Some("stream_event") => stream_event(v.get("event"), out),
            Some("rate_limit_event") => rate_limit(v.get("rate_limit_info"), out),
            Some("conversation_reset") => out.push(status("init", None)),
            Some("auth_status") => auth_status(v, out),
            Some(t @ ("control_response" | "control_request" | "control_cancel_request")) => {
                out.push(control(v, t));
            }
            Some("active_goal") => out.push(active_goal(v)),
            Some(t) => {
                if let Some(field) = top_progress_field(t) {
                    let text = or_str_v(v.str_at(field), t);
                    out.push(status("progress", Some(text)));
                } else if session_progress_field(t).is_some()
                    || matches!(t, "queue-operation" | "attachment")
                    || (t == "progress" && v.get("data").is_some_and(Value::is_object))
                {
                    out.push(session_record(v, t));
                }
            }
            None => {}
        }
    }

    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        // the line's keys read in one pass, each key told by its length and first byte, the
        // last of a repeated key winning as in `get` (a dozen and more scans of the line's
        // keys, each comparing every key, were 3.5 % of a report's fold)
        let Value::Object(pairs) = v else {
            return LineMeta::default();
        };
        let mut k = MetaKeys::default();
        for (key, x) in pairs.iter() {
            let key: &str = key;
            let slot = match (key.len(), key.as_bytes().first()) {
                (3, Some(b'c')) if key == "cwd" => &mut k.cwd,
                (4, Some(b't')) if key == "type" => &mut k.kind,
                (4, Some(b'd')) if key == "data" => &mut k.data,
                (4, Some(b'p')) if key == "part" => &mut k.part,
                (6, Some(b'r')) if key == "result" => &mut k.result,
                (6, Some(b'r')) if key == "reason" => &mut k.reason,
                (7, Some(b'm')) if key == "message" => &mut k.message,
                (7, Some(b'a')) if key == "agentId" => &mut k.agent_id,
                (9, Some(b's')) if key == "sessionId" => &mut k.session_id_camel,
                (9, Some(b't')) if key == "timestamp" => &mut k.timestamp,
                (9, Some(b'r')) if key == "requestId" => &mut k.request_id,
                (10, Some(b's')) if key == "session_id" => &mut k.session_id,
                (10, Some(b'd')) if key == "durationMs" => &mut k.duration_camel,
                (10, Some(b's')) if key == "stopReason" => &mut k.stop_camel,
                (11, Some(b'd')) if key == "duration_ms" => &mut k.duration,
                (11, Some(b'i')) if key == "isSidechain" => &mut k.sidechain,
                (11, Some(b's')) if key == "stop_reason" => &mut k.stop,
                (15, Some(b'p')) if key == "parentToolUseID" => &mut k.parent_camel,
                (17, Some(b's')) if key == "structured_output" => &mut k.structured,
                (18, Some(b'p')) if key == "parent_tool_use_id" => &mut k.parent,
                _ => continue,
            };
            *slot = Some(x);
        }
        let str_of = |x: Option<&'v Value<'v>>| x.and_then(Value::as_str);
        let t = str_of(k.kind);
        // a sub-agent's progress in its parent (session files)
        let data = k.data.filter(|d| t == Some("progress") && d.is_object());
        let message = k.message.filter(|m| m.is_object());
        let mut m = LineMeta {
            session_id: str_of(k.session_id).or_else(|| str_of(k.session_id_camel)),
            timestamp: nonempty(k.timestamp),
            parent_tool_use_id: str_of(k.parent).or_else(|| data.and(str_of(k.parent_camel))),
            native_type: t,
            model_call_id: message.and_then(|m| nonempty(m.get("id"))),
            ..LineMeta::default()
        };
        // `line_extras` (its `stop_reason` from the keys found)
        if matches!(t, Some("result" | "assistant")) {
            m.stop_reason = str_of(k.stop)
                .or_else(|| str_of(k.stop_camel))
                .or_else(|| str_of(k.reason))
                .or_else(|| {
                    let p = k.part.filter(|p| p.is_object())?;
                    STOP_KEYS.iter().find_map(|s| p.str_at(s))
                })
                .or_else(|| {
                    let m = message?;
                    STOP_KEYS.iter().take(2).find_map(|s| m.str_at(s))
                });
        }
        m.duration_ms = nonneg_int(k.duration).or_else(|| nonneg_int(k.duration_camel));
        if t == Some("result") {
            m.result_text = Some(str_of(k.result)); // None: reports no text
            m.structured_output = k.structured;
        }
        m.request_id = nonempty(k.request_id);
        m.agent_id = nonempty(k.agent_id).or_else(|| data.and_then(|d| nonempty(d.get("agentId"))));
        m.sidechain = matches!(k.sidechain, Some(Value::Bool(true)));
        m.cwd = nonempty(k.cwd);
        m
    }
}

/// The keys of a stop reason, in the order `event::stop_reason` reads them.
const STOP_KEYS: [&str; 3] = ["stop_reason", "stopReason", "reason"];

/// The values of the keys [`Claude::meta`] reads (each key's last occurrence).
#[derive(Default)]
struct MetaKeys<'v> {
    kind: Option<&'v Value<'v>>,
    data: Option<&'v Value<'v>>,
    session_id: Option<&'v Value<'v>>,
    session_id_camel: Option<&'v Value<'v>>,
    timestamp: Option<&'v Value<'v>>,
    parent: Option<&'v Value<'v>>,
    parent_camel: Option<&'v Value<'v>>,
    message: Option<&'v Value<'v>>,
    duration: Option<&'v Value<'v>>,
    duration_camel: Option<&'v Value<'v>>,
    stop: Option<&'v Value<'v>>,
    stop_camel: Option<&'v Value<'v>>,
    reason: Option<&'v Value<'v>>,
    part: Option<&'v Value<'v>>,
    result: Option<&'v Value<'v>>,
    structured: Option<&'v Value<'v>>,
    request_id: Option<&'v Value<'v>>,
    agent_id: Option<&'v Value<'v>>,
    sidechain: Option<&'v Value<'v>>,
    cwd: Option<&'v Value<'v>>,
}

/// System subtypes with their own mapping (besides the tables).
const STREAM_SYSTEM: [&str; 4] = [
    "status",
    "api_retry",
    "commands_changed",
    "background_tasks_changed",
];

/// `system/commands_changed`: the slash commands and skills now available (a long list: only
/// its length is kept).
fn commands_changed<'v>(v: &'v Value<'v>) -> Event<'v> {
    let text = match v.get("commands") {
        Some(Value::Array(c)) => Some(Cow::Owned(format!("commands_changed: {}", c.len()))),
        _ => None,
    };
    status("progress", text)
}

/// `system/background_tasks_changed`: the whole live set of background tasks (each task's own
/// `task_*` lines carry its changes): their descriptions, else ids.
fn background_tasks<'v>(v: &'v Value<'v>) -> Event<'v> {
    let Some(list @ Value::Array(tasks)) = v.get("tasks") else {
        return status("progress", Some(Cow::Borrowed("background_tasks_changed")));
    };
    let names: Vec<&str> = tasks
        .iter()
        .filter(|t| t.is_object())
        .filter_map(|t| nonempty(t.get("description")).or_else(|| nonempty(t.get("task_id"))))
        .collect();
    let joined = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join("; ")
    };
    let text = Cow::Owned(format!("background tasks: {joined}"));
    let mut ev = status("progress", Some(text));
    ev.x().background_tasks = Some(list); // the live set: a runner keeps stdin open for it
    ev
}

/// The control channel of `--input-format stream-json`: `control_response` (the CLI's reply
/// to a request sent on stdin, e.g. an interrupt), `control_request` (the CLI asks the host)
/// and `control_cancel_request`. Never an error of the turn: a progress note.
fn control<'v>(v: &'v Value<'v>, t: &'v str) -> Event<'v> {
    let inner = if t == "control_response" {
        v.get("response")
    } else {
        v.get("request")
    };
    let holder = inner.filter(|h| h.is_object()).unwrap_or(v);
    let rid = nonempty(holder.get("request_id")).or_else(|| nonempty(v.get("request_id")));
    let mut text = String::from(t);
    for x in [nonempty(holder.get("subtype")), rid].into_iter().flatten() {
        text.push(' ');
        text.push_str(x);
    }
    if t == "control_response" {
        if let Some(err) = nonempty(holder.get("error")) {
            text.push_str(": ");
            text.push_str(err);
        }
    }
    let mut ev = status("progress", Some(Cow::Owned(text)));
    if rid.is_some() {
        ev.x().control_request_id = rid;
    }
    if t == "control_response" {
        // e.g. an interrupt's {"still_queued": [...]}
        if let Some(reply) = holder.get("response").filter(|r| r.is_object()) {
            ev.x().control_response = Some(reply);
        }
    }
    ev
}

/// `active_goal`: the goal the session now pursues (`value.condition`), or none.
fn active_goal<'v>(v: &'v Value<'v>) -> Event<'v> {
    let text = match v.get("value") {
        None | Some(Value::Null) => Cow::Borrowed("active_goal: none"),
        Some(value) => match nonempty(value.get("condition")) {
            Some(c) => Cow::Owned(format!("active_goal: {c}")),
            None => Cow::Borrowed("active_goal"),
        },
    };
    status("progress", Some(text))
}

/// task_notification statuses -> sub-agent dispositions.
fn disposition(s: &str) -> Option<&'static str> {
    Some(match s {
        "completed" => "completed",
        "failed" | "error" => "failed",
        "stopped" | "killed" | "canceled" | "cancelled" => "canceled",
        _ => return None,
    })
}

/// Tools whose call starts a sub-agent (their input names it).
const SPAWN_TOOLS: [&str; 2] = ["Task", "Agent"];

fn auth_status<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    if let Some(err) = v.str_at("error").filter(|e| !e.is_empty()) {
        out.push(error(
            "auth_error",
            "auth_status",
            Cow::Borrowed(err),
            "semantic",
        ));
        return;
    }
    let lines: Vec<&str> = v
        .get("output")
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let text = match lines.as_slice() {
        [] => Cow::Borrowed("auth_status"),
        [one] if !one.is_empty() => Cow::Borrowed(*one),
        _ => {
            let joined = lines.join("\n");
            if joined.is_empty() {
                Cow::Borrowed("auth_status")
            } else {
                Cow::Owned(joined)
            }
        }
    };
    out.push(status("progress", Some(text)));
}

/// `system/status`: compaction start/end/failure, else a progress note.
fn status_line<'v>(v: &'v Value<'v>) -> Event<'v> {
    let st = v.str_at("status");
    if st == Some("compacting") {
        return status("compaction", Some(Cow::Borrowed("compacting")));
    }
    match v.str_at("compact_result") {
        Some("success") => return status("compaction", Some(Cow::Borrowed("compacted"))),
        Some("failed") => {
            // no compact_boundary follows; the turn goes on
            let message = v.str_at("compact_error").filter(|m| !m.is_empty());
            let message = Cow::Borrowed(message.unwrap_or("compaction failed"));
            return error("compaction_error", "compaction_failed", message, "semantic");
        }
        _ => {}
    }
    status("progress", Some(or_str(st, "status")))
}

/// `system/api_retry`: a transient error; the CLI retries after `retry_delay_ms`.
fn api_retry<'v>(v: &'v Value<'v>) -> Event<'v> {
    let err = match v.get("error") {
        Some(e) if e.is_object() => e.get("error"), // a fork's {type, message, error}
        e => e,
    };
    let code = or_str(err.and_then(Value::as_str), "api_retry");
    let http = v.get("error_status");
    let mut message = String::from("api retry");
    if let Some(Value::Int(attempt)) = v.get("attempt") {
        message.push_str(&format!(" {attempt}"));
        if let Some(Value::Int(most)) = v.get("max_retries") {
            message.push_str(&format!("/{most}"));
        }
    }
    message.push_str(": ");
    message.push_str(&code);
    if let Some(Value::Int(status)) = http {
        message.push_str(&format!(" (HTTP {status})"));
    }
    let kind = http_kind(http)
        .or_else(|| retry_error_kind(&code))
        .unwrap_or_else(|| {
            // no HTTP response at all: a connection error or timeout
            if matches!(http, None | Some(Value::Null)) {
                "transport"
            } else {
                classify(&message)
            }
        });
    let mut ev = error("retry", code, Cow::Owned(message), kind);
    ev.x().retry = true;
    if let (Some(Value::Int(ms @ 0..)), "quota" | "transport") = (v.get("retry_delay_ms"), kind) {
        ev.retry_after_ms = u64::try_from(*ms).ok();
    }
    ev
}

/// A progress note of a `system` line: `field`'s text, else the hook's name (and outcome when
/// not a success: hooks are non-fatal, never an error), else the subtype.
fn progress_line<'v>(v: &'v Value<'v>, native: &'v str, field: Option<&str>) -> Event<'v> {
    if let Some(f) = field {
        return status("progress", Some(or_str_v(v.str_at(f), native)));
    }
    if native.starts_with("hook_") {
        let name = v
            .str_at("hook_name")
            .filter(|n| !n.is_empty())
            .unwrap_or(native);
        let text = match v.str_at("outcome") {
            Some(o) if !o.is_empty() && o != "success" => Cow::Owned(format!("{name} {o}")),
            _ => Cow::Borrowed(name),
        };
        return status("progress", Some(text));
    }
    status("progress", Some(Cow::Borrowed(native)))
}

/// `text or fallback` with a fallback of the line.
fn or_str_v<'v>(text: Option<&'v str>, fallback: &'v str) -> Text<'v> {
    match text {
        Some(t) if !t.is_empty() => Cow::Borrowed(t),
        _ => Cow::Borrowed(fallback),
    }
}

/// task_updated `patch.status` values that end a task -> sub-agent dispositions.
fn terminal_task(s: &str) -> Option<&'static str> {
    Some(match s {
        "completed" => "completed",
        "failed" => "failed",
        "killed" => "canceled",
        _ => return None,
    })
}

/// A conversation line of a session file (its envelope), not of stream-json.
fn is_session_line(v: &Value<'_>) -> bool {
    v.has("parentUuid") || matches!(v.get("isSidechain"), Some(Value::Bool(_)))
}

/// Session-file record types that are progress notes: the field that gives their text (`None`:
/// the type itself).
fn session_progress_field(t: &str) -> Option<Option<&'static str>> {
    Some(match t {
        "summary" => Some("summary"),
        "permission-mode" => Some("permissionMode"),
        "ai-title" => Some("aiTitle"),
        "custom-title" => Some("customTitle"),
        "last-prompt" => Some("lastPrompt"),
        "agent-name" => Some("agentName"),
        "mode" => Some("mode"),
        "tag" => Some("tag"),
        "file-history-snapshot" | "pr-link" | "content-replacement" | "saved_hook_context" => None,
        _ => return None,
    })
}

/// `system/task_updated`: a patch of a task's state; a terminal `patch.status` ends the
/// sub-agent (a terminal task may arrive only this way). Its id is the `task_id`, which
/// `task_started` gives as `alias` when it names the sub-agent by its `tool_use_id`. Earlier
/// builds put the patch's fields on the line itself.
fn task_updated<'v>(v: &'v Value<'v>) -> Event<'v> {
    let patch = v.get("patch").filter(|p| p.is_object()).unwrap_or(v);
    let get = |k: &str| patch.get(k);
    let st = get("status").and_then(Value::as_str);
    let text = nonempty(get("description"))
        .or_else(|| nonempty(get("error")))
        .or(st.filter(|s| !s.is_empty()))
        .unwrap_or("task_updated");
    let mut ev = status("subagent", Some(Cow::Borrowed(text)));
    if let (Some(id), Some(d)) = (nonempty(v.get("task_id")), st.and_then(terminal_task)) {
        ev.x().subagent = Some(Subagent {
            id: Cow::Borrowed(id),
            phase: "ended",
            disposition: Some(d),
            ..Subagent::default()
        });
    }
    ev
}

/// `progress`, `queue-operation`, `attachment` and the metadata records of a session file.
fn session_record<'v>(v: &'v Value<'v>, t: &'v str) -> Event<'v> {
    let text = match t {
        // never the embedded sub-agent message or its usage
        "progress" => or_str_v(v.get("data").and_then(|d| nonempty(d.get("type"))), t),
        "queue-operation" => {
            let op = or_str_v(nonempty(v.get("operation")), t);
            match nonempty(v.get("content")) {
                Some(c) => Cow::Owned(format!("{op}: {c}")),
                None => op,
            }
        }
        "attachment" => or_str_v(
            v.get("attachment")
                .filter(|a| a.is_object())
                .and_then(|a| nonempty(a.get("type"))),
            t,
        ),
        _ => or_str_v(
            session_progress_field(t)
                .flatten()
                .and_then(|f| nonempty(v.get(f))),
            t,
        ),
    };
    status("progress", Some(text))
}

/// A session file's `system/api_error`: one retry attempt of a failed request (the CLI retries
/// after `retryInMs`), not a terminal failure.
fn session_api_error<'v>(v: &'v Value<'v>) -> Event<'v> {
    let err = v.get("error");
    let (message, http, connection) = match err {
        Some(e) if e.is_object() => (
            nonempty(e.get("message")).or_else(|| nonempty(e.get("formatted"))),
            e.get("status"),
            !matches!(
                e.get("connection"),
                None | Some(Value::Null | Value::Bool(false))
            ) || e.is_true_at("isNetworkDown"),
        ),
        e => (nonempty(e), None, false),
    };
    let message = message.unwrap_or("api error");
    let message = match v.get("retryAttempt") {
        Some(Value::Int(attempt)) => {
            let most = match v.get("maxRetries") {
                Some(Value::Int(most)) => format!("/{most}"),
                _ => String::new(),
            };
            Cow::Owned(format!("api retry {attempt}{most}: {message}"))
        }
        _ => Cow::Borrowed(message),
    };
    let kind = match http {
        Some(Value::Int(_)) => http_kind(http),
        _ => None,
    };
    let kind = kind.unwrap_or_else(|| {
        if connection {
            "transport"
        } else {
            classify(&message)
        }
    });
    let mut ev = error("retry", "api_error", message, kind);
    ev.x().retry = true;
    if let (Some(Value::Int(ms @ 0..)), "quota" | "transport") = (v.get("retryInMs"), kind) {
        ev.retry_after_ms = u64::try_from(*ms).ok();
    }
    ev
}

/// The `task_id` of a sub-agent named by its `tool_use_id` (`task_updated` uses it).
fn alias<'v>(v: &'v Value<'v>, id: &str) -> Option<&'v str> {
    nonempty(v.get("task_id")).filter(|t| *t != id)
}

/// The `system` subtypes only session files write (`false`: the stream-json rules apply).
fn session_system<'v>(v: &'v Value<'v>, native: Option<&'v str>, out: &mut Vec<Event<'v>>) -> bool {
    let ev = match native {
        Some("api_error") => session_api_error(v),
        Some("microcompact_boundary") => status("compaction", Some(Cow::Borrowed("microcompact"))),
        Some("turn_duration") => status("turn_completed", None),
        Some(n)
            if progress_field(n).is_some()
                || system_subtype(n).is_some()
                || STREAM_SYSTEM.contains(&n) =>
        {
            return false
        }
        _ => {
            let text = nonempty(v.get("content"))
                .or(native.filter(|n| !n.is_empty()))
                .unwrap_or("system");
            status("progress", Some(Cow::Borrowed(text)))
        }
    };
    out.push(ev);
    true
}

fn system<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let native = v.str_at("subtype");
    if is_session_line(v) && session_system(v, native, out) {
        return;
    }
    match native {
        Some("local_command_output") => {
            // a slash command's output, shown as text
            out.push(msg("text", "system", v.str_at("content").unwrap_or("")));
            return;
        }
        Some("task_updated") => {
            out.push(task_updated(v));
            return;
        }
        Some("thinking_tokens") => {
            out.push(status("progress", Some(Cow::Borrowed("thinking_tokens"))));
            return;
        }
        Some("status") => {
            out.push(status_line(v));
            return;
        }
        Some("api_retry") => {
            out.push(api_retry(v));
            return;
        }
        Some("commands_changed") => {
            out.push(commands_changed(v));
            return;
        }
        Some("background_tasks_changed") => {
            out.push(background_tasks(v));
            return;
        }
        Some(n) => {
            if let Some(field) = progress_field(n) {
                let mut ev = progress_line(v, n, field);
                if n == "permission_denied" {
                    // a tool call the CLI refused for want of an approval (2.1.226)
                    let (id, name) = (nonempty(v.get("tool_use_id")), nonempty(v.get("tool_name")));
                    ev.require(action("approval", id, name, None));
                }
                out.push(ev);
                return;
            }
        }
        None => {}
    }
    let Some(sub) = native.and_then(system_subtype) else {
        return;
    };
    // task_notification reports its result as `summary`
    let text = v.str_at("description").filter(|d| !d.is_empty());
    let mut text = text.or_else(|| v.str_at("summary"));
    if sub == "compaction" && text.is_none_or(str::is_empty) {
        // a session file's compact_boundary: its trigger
        if let Some(cm) = v.get("compactMetadata").filter(|c| c.is_object()) {
            text = cm.str_at("trigger");
        }
    }
    let mut ev = status(sub, text.map(Cow::Borrowed));
    if sub == "compaction" {
        ev = compaction_tokens(ev, v);
    }
    let sid = nonempty(v.get("tool_use_id")).or_else(|| nonempty(v.get("task_id")));
    if let Some(id) = sid {
        match native {
            Some("task_started") => {
                ev.x().subagent = Some(Subagent {
                    id: Cow::Borrowed(id),
                    phase: "started",
                    name: nonempty(v.get("subagent_type")).map(Cow::Borrowed),
                    kind: nonempty(v.get("task_type")).map(Cow::Borrowed),
                    description: v.str_at("description").map(Cow::Borrowed),
                    prompt: v.str_at("prompt").map(Cow::Borrowed),
                    disposition: None,
                    alias: alias(v, id),
                })
            }
            Some("task_notification") => {
                ev.x().subagent = Some(Subagent {
                    id: Cow::Borrowed(id),
                    phase: "ended",
                    disposition: v.str_at("status").and_then(disposition),
                    alias: alias(v, id),
                    ..Subagent::default()
                })
            }
            _ => {}
        }
    }
    out.push(ev);
}

/// A Task/Agent call names the sub-agent it starts (its `task_started` may not).
fn spawn_hint<'v>(ev: &mut Event<'v>, b: &'v Value<'v>) {
    let input = b.get("input").filter(|i| i.is_object());
    let (Some(input), Some(id)) = (input, nonempty(b.get("id"))) else {
        return;
    };
    if !b.str_at("name").is_some_and(|n| SPAWN_TOOLS.contains(&n)) {
        return;
    }
    ev.x().subagent = Some(Subagent {
        id: Cow::Borrowed(id),
        phase: "spawned",
        name: nonempty(input.get("subagent_type")).map(Cow::Borrowed),
        description: input.str_at("description").map(Cow::Borrowed),
        ..Subagent::default()
    });
}

/// Events for a message's content blocks (shared with cursor).
pub fn content_events<'v>(
    content: Option<&'v Value<'v>>,
    role: &'static str,
    out: &mut Vec<Event<'v>>,
) {
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
            Some("redacted_thinking") => out.push(msg("thinking", "assistant", "")),
            Some("tool_use" | "server_tool_use") => {
                let mut ev = tool_call(name_or_unknown(b.get("name")), b.get("input"), b.get("id"));
                spawn_hint(&mut ev, b);
                out.push(ev);
            }
            Some("tool_result") => {
                let mut ev = tool_result(
                    Cow::Borrowed("unknown"),
                    b.get("tool_use_id"),
                    b.is_true_at("is_error"),
                    content_text(b.get("content")),
                );
                if let Some(c) = b.get("content") {
                    ev.x().tool_result = Some(ToolResult::Value(c));
                }
                out.push(ev);
            }
            Some(t) if t.ends_with("_tool_result") => {
                let mut ev = server_tool_result(b);
                if let Some(c) = b.get("content") {
                    ev.x().tool_result = Some(ToolResult::Value(c));
                }
                out.push(ev);
            }
            _ => {}
        }
    }
}

/// A server tool's result block (`web_search_tool_result`, `web_fetch_tool_result`,
/// `code_execution_tool_result`, ...): an error object, or the results' urls, or text.
fn server_tool_result<'v>(b: &'v Value<'v>) -> Event<'v> {
    let c = b.get("content");
    let id = b.get("tool_use_id");
    if let Some(err) = c.filter(|c| c.str_at("type").is_some_and(|t| t.ends_with("_error"))) {
        let code = err.str_at("error_code").unwrap_or("");
        return tool_result(Cow::Borrowed("unknown"), id, true, Cow::Borrowed(code));
    }
    let urls: Vec<&str> = match c {
        Some(Value::Array(items)) => items.iter().filter_map(|r| r.str_at("url")).collect(),
        _ => Vec::new(),
    };
    let text = if urls.is_empty() {
        content_text(c)
    } else {
        Cow::Owned(urls.join("\n"))
    };
    tool_result(Cow::Borrowed("unknown"), id, false, text)
}

fn claude_usage<'v>(
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
        &[get("output_tokens")],
        cost,
    );
    let one_hour = get("cache_creation")
        .filter(|c| c.is_object())
        .and_then(|c| c.get("ephemeral_1h_input_tokens"));
    let mut ev = cache_writes(ev, Num::count(get("cache_creation_input_tokens")), one_hour);
    // the request's speed (2026: `fast` mode is priced apart)
    if let Some(speed) = get("speed")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        ev.x().speed = Some(speed);
    }
    ev
}

fn assistant<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let Some(m) = v.get("message").filter(|m| m.is_object()) else {
        return;
    };
    let model = m.get("model");
    let native_error = v.str_at("error").filter(|e| !e.is_empty());
    let marked = native_error.is_some() || api_error_flag(v);
    let synthetic = model.and_then(Value::as_str) == Some("<synthetic>");
    if synthetic && !marked && !unmarked_api_error(v, m) {
        // a local slash command's answer (`/context`, `/usage`, `/compact`): shown as text
        out.push(msg("text", "system", content_text(m.get("content"))));
        return;
    }
    if synthetic || marked {
        let code: Text<'v> = Cow::Borrowed(native_error.unwrap_or("api_error"));
        let text = content_text(m.get("content"));
        let text = if text.is_empty() { code.clone() } else { text };
        // session files: the HTTP status decides first
        let http = v
            .get("apiErrorStatus")
            .filter(|h| matches!(h, Value::Int(_)));
        let kind = http_kind(http)
            .or_else(|| assistant_error_kind(&code))
            .unwrap_or_else(|| classify(&text));
        let at = pipe_epoch(&text);
        let mut ev = error("api_error", code, text, kind);
        if kind == "quota" && ev.retry_at.is_none() {
            ev.retry_at = at;
        }
        out.push(ev);
        return;
    }
    content_events(m.get("content"), "assistant", out);
    if m.has("usage") {
        let mut ev = claude_usage("message", model, m.get("usage"), None);
        ev.message_id = m.str_at("id").map(Cow::Borrowed);
        out.push(ev);
        billed_iterations(v, m, out);
    }
}

/// The sampling steps of one API request that its top-level `usage` leaves out and that are
/// billed (docs/usage.md "Rules"): a server-side `compaction` (the request's model) and an
/// `advisor_message` (the advisor's own `model`), each its own message reading after the
/// message's, with a `messageId` of its own (`<id>#<type><index in iterations>`, else from the
/// `requestId`) so that a repeated line counts it once. `message` and `fallback_message`
/// iterations are what the top-level numbers already count.
fn billed_iterations<'v>(v: &'v Value<'v>, m: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let Some(Value::Array(items)) = m.get("usage").and_then(|u| u.get("iterations")) else {
        return;
    };
    let base = m.str_at("id").or_else(|| nonempty(v.get("requestId")));
    for (i, it) in items.iter().enumerate() {
        let kind = match it.str_at("type") {
            Some(k @ ("compaction" | "advisor_message")) => k,
            _ => continue,
        };
        let own = it
            .get("model")
            .filter(|x| x.as_str().is_some_and(|s| !s.is_empty()));
        let model = match own {
            Some(_) => own,
            None if kind == "compaction" => m.get("model"),
            None => None,
        };
        let mut ev = claude_usage("message", model, Some(it), None);
        if ev.usage.as_ref().is_none_or(|u| u.unknown) {
            continue;
        }
        ev.message_id = base.map(|b| Cow::Owned(format!("{b}#{kind}{i}")));
        out.push(ev);
    }
}

/// `is_api_error_message: true` (stream-json), `isApiErrorMessage: true` (session files).
fn api_error_flag(v: &Value<'_>) -> bool {
    v.is_true_at("is_api_error_message") || v.is_true_at("isApiErrorMessage")
}

/// How the CLI words an API failure on a `<synthetic>` line of builds that mark none.
const API_ERROR_PREFIXES: [&str; 5] = [
    "API Error",
    "Invalid API key",
    "Not logged in",
    "Prompt is too long",
    "Credit balance is too low",
];

/// A `<synthetic>` line with no `error` and no `is_api_error_message`: an API failure of builds
/// that mark none (2.0.x) when its text reads as one, else a local command's answer (a
/// `local_command_run` or `local_command_source` says so outright).
fn unmarked_api_error(v: &Value<'_>, m: &Value<'_>) -> bool {
    if v.has("local_command_run") || v.has("local_command_source") {
        return false;
    }
    let text = content_text(m.get("content"));
    API_ERROR_PREFIXES.iter().any(|p| text.starts_with(p)) || classify(&text) != "semantic"
}

/// Old builds' limit text `Claude AI usage limit reached|<epoch seconds>`: the reset time.
fn pipe_epoch(text: &str) -> Option<String> {
    let (head, tail) = text.rsplit_once('|')?;
    if !head.to_ascii_lowercase().contains("limit reached")
        || tail.is_empty()
        || tail.len() > 12
        || !tail.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: i128 = tail.parse().ok()?;
    crate::retry::format_ms(secs * 1000)
}

fn result<'v>(v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
    let sub = v.str_at("subtype").unwrap_or("");
    let text = v.str_at("result");
    if v.is_true_at("is_error") || sub.starts_with("error") {
        let code = if sub.starts_with("error") {
            sub
        } else {
            "result_error"
        };
        let message: Text<'v> = match text {
            Some(t) if !t.is_empty() => Cow::Borrowed(t),
            _ => {
                let joined = joined_errors(v.get("errors"));
                if joined.is_empty() {
                    Cow::Borrowed(code)
                } else {
                    Cow::Owned(joined)
                }
            }
        };
        let reason = v.str_at("terminal_reason").unwrap_or("");
        if reason.starts_with("aborted") {
            // an interrupt, not a failure of the model
            out.push(error("aborted", code, message, "semantic"));
        } else {
            let kind = http_kind(v.get("api_error_status"))
                .or_else(|| SEMANTIC_REASONS.contains(&reason).then_some("semantic"))
                .unwrap_or_else(|| classify(&message));
            out.push(error("result_error", code, message, kind));
        }
    } else {
        let mut ev = status("result", text.map(Cow::Borrowed));
        if empty_answer(v) {
            ev.x().empty_result = true;
        }
        out.push(ev);
    }
    if let Some(outcome) = out.last_mut() {
        denials(v, outcome);
    }
    if v.has("usage") || v.has("total_cost_usd") {
        let model_usage = v.get("modelUsage");
        let cost = v.get("total_cost_usd");
        if let Some(shares) = model_usage.and_then(|m| model_usage_shares(m, cost)) {
            out.extend(shares);
            return;
        }
        let first = model_usage.and_then(main_model);
        let mut ev = model_usage
            .and_then(|m| model_usage_total(m, cost))
            .unwrap_or_else(|| claude_usage("cumulative", None, v.get("usage"), cost));
        if let (Some(k), Some(u)) = (first, ev.usage.as_mut()) {
            if !k.is_empty() {
                u.model = Cow::Borrowed(k);
            }
        }
        out.push(ev);
    }
}

/// The calls a result says wait for a human (`requiresAction`): each `permission_denials` entry
/// (an `AskUserQuestion` call: a question, with its input's `questions`), then the
/// `deferred_tool_use` (a call a hook deferred for the host to decide).
fn denials<'v>(v: &'v Value<'v>, ev: &mut Event<'v>) {
    for d in v
        .get("permission_denials")
        .map(Value::items)
        .unwrap_or_default()
    {
        if !d.is_object() {
            continue;
        }
        let (id, name) = (nonempty(d.get("tool_use_id")), nonempty(d.get("tool_name")));
        let questions = d.get("tool_input").and_then(|i| i.get("questions"));
        let ask = name == Some("AskUserQuestion") && matches!(questions, Some(Value::Array(_)));
        let kind = if ask { "question" } else { "approval" };
        ev.require(action(kind, id, name, questions.filter(|_| ask)));
    }
    if let Some(d) = v.get("deferred_tool_use").filter(|d| d.is_object()) {
        ev.require(action(
            "approval",
            nonempty(d.get("id")),
            nonempty(d.get("name")),
            None,
        ));
    }
}

/// A user line's tool results that the CLI refused to run (`tool_result_meta` entries whose
/// `non_execution_kind` is `user-rejected` or `permission-rule`) wait for an approval.
fn refused_results<'v>(v: &'v Value<'v>, evs: &mut [Event<'v>]) {
    let meta = v
        .get("tool_result_meta")
        .map(Value::items)
        .unwrap_or_default();
    let refused: std::collections::HashSet<&str> = meta
        .iter()
        .filter(|m| {
            matches!(
                m.str_at("non_execution_kind"),
                Some("user-rejected" | "permission-rule")
            )
        })
        .filter_map(|m| nonempty(m.get("id")))
        .collect();
    if refused.is_empty() {
        return;
    }
    for ev in evs.iter_mut().filter(|e| e.subtype == "tool_result") {
        if let Some(id) = ev
            .tool
            .as_ref()
            .and_then(|t| t.id)
            .filter(|id| refused.contains(id))
        {
            ev.require(action("approval", Some(id), None, None));
        }
    }
}

/// A success that gives no answer: no `result` text (or only JSON whitespace) and no
/// `structured_output` (the CLI prints `""` for /clear, /compact and a deferred tool).
fn empty_answer(v: &Value<'_>) -> bool {
    let placeholder = match v.get("structured_output") {
        None | Some(Value::Null) => true,
        Some(Value::Str(s)) => s.is_empty(),
        Some(Value::Object(p)) => p.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    let answered = v
        .str_at("result")
        .is_some_and(|r| !r.trim_matches([' ', '\t', '\n', '\r']).is_empty());
    placeholder && !answered
}

/// The run's counter: `modelUsage` summed over its models (cumulative, like `total_cost_usd`;
/// `result.usage` is the last turn's only). `None` when it has no count.
fn model_usage_total<'v>(
    model_usage: &'v Value<'v>,
    cost: Option<&'v Value<'v>>,
) -> Option<Event<'v>> {
    if !model_usage.is_object() {
        return None;
    }
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut cached = Num::Int(0);
    let mut writes: Option<Num> = None;
    for (_, e) in model_usage.dict_items() {
        if !e.is_object() {
            continue;
        }
        let read = e.get("cacheReadInputTokens");
        inputs.extend([
            e.get("inputTokens"),
            read,
            e.get("cacheCreationInputTokens"),
        ]);
        outputs.push(e.get("outputTokens"));
        if let Some(n) = Num::count(read) {
            cached = cached.plus(n);
        }
        if let Some(n) = Num::count(e.get("cacheCreationInputTokens")) {
            writes = Some(writes.map_or(n, |w| w.plus(n)));
        }
    }
    let ev = usage("cumulative", None, &inputs, None, &outputs, cost);
    let mut ev = cache_writes(ev, writes, None);
    let u = ev.usage.as_mut()?;
    if u.unknown {
        return None;
    }
    if let Some(total_in) = u.input {
        u.cached = Some(if cached.le(total_in) {
            cached
        } else {
            total_in
        });
    }
    Some(ev)
}

/// Each model's own share of the run's counter (one cumulative event per `modelUsage` model,
/// with its counts and `costUSD`), when two or more models have counts and, if the result has
/// a `total_cost_usd`, each of them has its own `costUSD`; else `None` (the sum is used).
fn model_usage_shares<'v>(
    model_usage: &'v Value<'v>,
    cost: Option<&'v Value<'v>>,
) -> Option<Vec<Event<'v>>> {
    if !model_usage.is_object() {
        return None;
    }
    let mut out = Vec::new();
    for (key, e) in model_usage.dict_items() {
        if !e.is_object() {
            continue;
        }
        let read = e.get("cacheReadInputTokens");
        let inputs = [
            e.get("inputTokens"),
            read,
            e.get("cacheCreationInputTokens"),
        ];
        let ev = usage(
            "cumulative",
            None,
            &inputs,
            read,
            &[e.get("outputTokens")],
            e.get("costUSD"),
        );
        let mut ev = cache_writes(ev, Num::count(e.get("cacheCreationInputTokens")), None);
        let u = ev.usage.as_mut()?;
        if u.unknown {
            continue;
        }
        if u.cost.is_none() && Num::count(cost).is_some() {
            return None;
        }
        if !key.is_empty() {
            u.model = Cow::Borrowed(key);
        }
        out.push(ev);
    }
    (out.len() >= 2).then_some(out)
}

/// The `modelUsage` key that cost the most (the main model, not the helper one); ties go to
/// the earlier key; with no `costUSD` count anywhere, the first key.
fn main_model<'v>(model_usage: &'v Value<'v>) -> Option<&'v str> {
    let mut best: Option<(&str, Num)> = None;
    let items = model_usage.dict_items();
    for (key, entry) in &items {
        if let Some(cost) = Num::count(entry.get("costUSD")) {
            if best.is_none_or(|(_, b)| !cost.le(b)) {
                best = Some((key, cost));
            }
        }
    }
    best.map(|(k, _)| k)
        .or_else(|| items.first().map(|(k, _)| *k))
}

fn joined_errors(errors: Option<&Value<'_>>) -> String {
    let parts: Vec<&str> = errors
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    parts.join("; ")
}

fn stream_event<'v>(e: Option<&'v Value<'v>>, out: &mut Vec<Event<'v>>) {
    let Some(e) = e.filter(|e| e.is_object()) else {
        return;
    };
    if e.str_eq("type", "content_block_delta") {
        if let Some(d) = e.get("delta").filter(|d| d.is_object()) {
            let delta = match d.str_at("type") {
                Some("text_delta") => d.str_at("text").map(|t| msg("text", "assistant", t)),
                Some("thinking_delta") => d
                    .str_at("thinking")
                    .map(|t| msg("thinking", "assistant", t)),
                _ => None,
            };
            if let Some(mut ev) = delta {
                ev.delta = true;
                out.push(ev);
                return;
            }
        }
    }
    if e.str_eq("type", "error") {
        let err = e.get("error").filter(|x| x.is_object());
        let code = or_str(err.and_then(|x| x.str_at("type")), "api_error");
        let message = match err.and_then(|x| x.str_at("message")) {
            Some(m) if !m.is_empty() => Cow::Borrowed(m),
            _ => code.clone(),
        };
        let kind = sse_error_kind(&code).unwrap_or_else(|| classify(&message));
        out.push(error("api_error", code, message, kind));
        return;
    }
    out.push(status("progress", e.str_at("type").map(Cow::Borrowed)));
}

/// Anthropic Messages SSE `error` types with a known kind.
fn sse_error_kind(code: &str) -> Option<&'static str> {
    match code {
        "overloaded_error" | "api_error" | "timeout_error" => Some("transport"),
        "rate_limit_error" | "billing_error" => Some("quota"),
        _ => None,
    }
}

fn rate_limit<'v>(info: Option<&'v Value<'v>>, out: &mut Vec<Event<'v>>) {
    let Some(info) = info.filter(|i| i.is_object()) else {
        out.push(status("progress", Some(Cow::Borrowed("rate_limit"))));
        return;
    };
    let st = info.str_at("status");
    if st == Some("rejected") {
        let mut message = match info.str_at("rateLimitType") {
            Some(t) => format!("rate limit rejected: {t}"),
            None => "rate limit rejected".to_owned(),
        };
        // epoch seconds: when a parked runner may retry
        if let Some(Value::Int(resets @ 0..)) = info.get("resetsAt") {
            message.push_str(&format!(" (resetsAt {resets})"));
        }
        let message = Cow::Owned(message);
        let ev = error("rate_limit", "rate_limit", message, "quota");
        out.push(with_rate_limits(ev, rate_limit_readings(info)));
        return;
    }
    let text = st.map_or(Cow::Borrowed("rate_limit"), |s| {
        Cow::Owned(format!("rate_limit {s}"))
    });
    out.push(with_rate_limits(
        status("progress", Some(text)),
        rate_limit_readings(info),
    ));
}

/// A `rateLimitType`'s window: `five_hour*` -> `5h`, `seven_day*` (`seven_day_opus`, ...) ->
/// `7d`; any other type (`overage`) is its own window.
fn limit_window(t: &str) -> Text<'_> {
    if t.starts_with("five_hour") {
        Cow::Borrowed("5h")
    } else if t.starts_with("seven_day") {
        Cow::Borrowed("7d")
    } else {
        Cow::Borrowed(t)
    }
}

/// One reading of `rate_limit_info` or of one of its `unifiedWindows`: `utilization` (a
/// fraction: 0.41 is 41 %) and `resetsAt` (epoch seconds); none without a utilization.
fn limit_reading<'v>(t: &'v str, w: &'v Value<'v>) -> Option<RateLimit<'v>> {
    let used_percent = percent_of_fraction(w.get("utilization"))?;
    let resets_at = match w.get("resetsAt") {
        Some(Value::Int(s @ 0..)) => crate::retry::format_epoch(i128::from(*s)),
        _ => None,
    };
    Some(RateLimit {
        window: limit_window(t),
        used_percent,
        resets_at,
        limit_type: Cow::Borrowed(t),
    })
}

/// `rateLimits` of a `rate_limit_info` (`_rate_limit_readings` of the reference): one per
/// `unifiedWindows` entry (newer builds: `{<type>: {utilization, resetsAt}}`, in order), then
/// the info's own (`rateLimitType`, `utilization`, `resetsAt`) unless a window of its type
/// came before.
fn rate_limit_readings<'v>(info: &'v Value<'v>) -> Vec<RateLimit<'v>> {
    let mut out: Vec<RateLimit<'v>> = Vec::new();
    if let Some(windows) = info.get("unifiedWindows").filter(|w| w.is_object()) {
        for (t, w) in windows.dict_items() {
            if let Some(r) = Some(w).filter(|w| w.is_object() && !t.is_empty()) {
                out.extend(limit_reading(t, r));
            }
        }
    }
    if let Some(t) = nonempty(info.get("rateLimitType")) {
        if !out.iter().any(|r| r.limit_type == t) {
            out.extend(limit_reading(t, info));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, check: impl FnOnce(&[Event<'_>])) {
        crate::dialect::check_line(&Claude, line, check);
    }

    #[test]
    fn old_limit_text_gives_the_reset_time() {
        run(
            r#"{"type":"assistant","isApiErrorMessage":true,"message":{"model":"<synthetic>","content":[{"type":"text","text":"Claude AI usage limit reached|1784028330"}]}}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(
                    e.and_then(|e| e.error.as_ref()).map(|i| i.kind),
                    Some("quota")
                );
                assert_eq!(
                    e.and_then(|e| e.retry_at.as_deref()),
                    Some("2026-07-14T11:25:30Z")
                );
            },
        );
        assert_eq!(pipe_epoch("usage limit reached|"), None);
        assert_eq!(pipe_epoch("limit reached|12a"), None);
        assert_eq!(pipe_epoch("no limit|123"), None);
    }

    #[test]
    fn session_api_error_is_a_retry_notice() {
        run(
            r#"{"parentUuid":"p","isSidechain":false,"type":"system","subtype":"api_error","error":{"message":"529 overloaded","status":529},"retryInMs":601,"retryAttempt":1,"maxRetries":10}"#,
            |ev| {
                let e = ev.first();
                assert_eq!(
                    e.map(|e| (e.kind, e.subtype.as_ref())),
                    Some(("error", "retry"))
                );
                let info = e.and_then(|e| e.error.as_ref());
                assert_eq!(info.map(|i| i.kind), Some("transport"));
                assert_eq!(
                    info.map(|i| i.message.as_ref()),
                    Some("api retry 1/10: 529 overloaded")
                );
                assert_eq!(e.and_then(|e| e.retry_after_ms), Some(601));
            },
        );
    }

    #[test]
    fn stream_system_subtypes_stay_unknown_without_the_envelope() {
        // a stream-json line with a new subtype: nothing (status/unknown), as before
        run(r#"{"type":"system","subtype":"turn_duration"}"#, |ev| {
            assert!(ev.is_empty())
        });
        run(
            r#"{"type":"system","subtype":"turn_duration","parentUuid":null,"durationMs":5}"#,
            |ev| {
                assert_eq!(
                    ev.first().map(|e| e.subtype.as_ref()),
                    Some("turn_completed")
                )
            },
        );
    }

    #[test]
    fn progress_is_never_expanded_and_meta_reads_the_session_envelope() {
        let line = r#"{"parentUuid":"p","isSidechain":true,"agentId":"a1","sessionId":"s","type":"progress","data":{"type":"agent_progress","agentId":"a2","message":{"type":"assistant","message":{"usage":{"input_tokens":3}}}},"parentToolUseID":"toolu_1","requestId":"req_1","timestamp":"2026-08-20T10:22:13.010Z"}"#;
        run(line, |ev| {
            assert_eq!(ev.len(), 1);
            assert_eq!(
                ev.first().and_then(|e| e.text.as_deref()),
                Some("agent_progress")
            );
        });
        let Ok((v, _)) = crate::parse::parse(line) else {
            panic!("bad test json")
        };
        let m = Claude.meta(&v);
        assert_eq!(m.session_id, Some("s"));
        assert_eq!(m.timestamp, Some("2026-08-20T10:22:13.010Z"));
        assert_eq!(m.parent_tool_use_id, Some("toolu_1"));
        assert_eq!(m.agent_id, Some("a1"));
        assert_eq!(m.request_id, Some("req_1"));
        assert!(m.sidechain);
    }

    /// (messageId, model, input, output) of each usage event
    type Row = (Option<String>, String, Option<Num>, Option<Num>);

    fn usage_rows(ev: &[Event<'_>]) -> Vec<Row> {
        ev.iter()
            .filter_map(|e| {
                let u = e.usage.as_ref()?;
                Some((
                    e.message_id.as_deref().map(str::to_owned),
                    u.model.to_string(),
                    u.input,
                    u.output,
                ))
            })
            .collect()
    }

    #[test]
    fn billed_iterations_are_their_own_readings() {
        // compaction (the message's model), advisor (its own), message and fallback not again
        let line = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-opus-4-6","content":[],"usage":{"input_tokens":4,"output_tokens":10,"iterations":[{"type":"compaction","input_tokens":100,"cache_read_input_tokens":900,"output_tokens":30},{"type":"message","input_tokens":4,"output_tokens":10},{"type":"advisor_message","model":"claude-fable-5","input_tokens":50,"output_tokens":7},{"type":"fallback_message","input_tokens":4,"output_tokens":10},{"type":"advisor_message"},"x"]}}}"#;
        run(line, |ev| {
            let id = |s: &str| Some(s.to_owned());
            assert_eq!(
                usage_rows(ev),
                vec![
                    (
                        id("msg_1"),
                        "claude-opus-4-6".into(),
                        Some(Num::Int(4)),
                        Some(Num::Int(10))
                    ),
                    (
                        id("msg_1#compaction0"),
                        "claude-opus-4-6".into(),
                        Some(Num::Int(1000)),
                        Some(Num::Int(30))
                    ),
                    (
                        id("msg_1#advisor_message2"),
                        "claude-fable-5".into(),
                        Some(Num::Int(50)),
                        Some(Num::Int(7))
                    ),
                ]
            );
        });
        // no message id: the requestId names them; neither: no messageId
        let line = r#"{"type":"assistant","requestId":"req_9","message":{"usage":{"input_tokens":0,"output_tokens":0,"iterations":[{"type":"advisor_message","input_tokens":5,"output_tokens":1}]}}}"#;
        run(line, |ev| {
            let rows = usage_rows(ev);
            assert_eq!(rows.len(), 2);
            let last = rows.last().map(|r| (r.0.as_deref(), r.1.as_str()));
            // an advisor without its model is not priced
            assert_eq!(last, Some((Some("req_9#advisor_message0"), "unknown")));
        });
        let line = r#"{"type":"assistant","message":{"usage":{"iterations":[{"type":"compaction","input_tokens":5,"output_tokens":1}]}}}"#;
        run(line, |ev| {
            let rows = usage_rows(ev);
            assert_eq!(rows.len(), 2);
            assert_eq!(rows.last().map(|r| r.0.is_none()), Some(true));
        });
    }
}
