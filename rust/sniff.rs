//! `auto`: which dialect a parsed line proves, if any. Mirrors `reference/sniff.py`.

use crate::dialect::AnyDialect;
use crate::mapping::builtins;
use crate::value::Value;

/// Lines held before a decision at most (then the fallback fires).
pub const AUTO_HOLD_LINES: usize = 64;
/// Bytes of held lines at most.
pub const AUTO_HOLD_BYTES: usize = 1 << 20;
/// The dialect used when no line decides.
pub const FALLBACK: AnyDialect = AnyDialect::Claude;

/// The record types of a codex rollout envelope (docs/session-files-2026.md §2.4).
const ROLLOUT_TYPES: [&str; 12] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "token_usage_record",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "retained_context",
    "security_risk_score",
    "realtime_item",
];

/// Keys only claude's `system/init` has.
const CLAUDE_INIT_TELLS: [&str; 4] = [
    "tools",
    "claude_code_version",
    "capabilities",
    "output_style",
];

/// The keys of grok's bare error line (xAI: `message` plus the spend of the run; superagent:
/// `sessionID`, `timestamp`). codex prints the same shape, but always after `thread.started`.
const GROK_ERROR_KEYS: [&str; 13] = [
    "type",
    "message",
    "sessionId",
    "sessionID",
    "timestamp",
    "requestId",
    "usage",
    "num_turns",
    "modelUsage",
    "total_cost_usd",
    "total_cost_usd_ticks",
    "cost_is_partial",
    "usage_is_incomplete",
];

fn bare_error(v: &Value<'_>) -> bool {
    v.str_at("message").is_some() && v.find_key(|k| !GROK_ERROR_KEYS.contains(&k)).is_none()
}

/// The dialect this parsed line proves, or `None`.
pub fn sniff(v: &Value<'_>) -> Option<AnyDialect> {
    if !v.is_object() {
        return None;
    }
    if let Some(t) = v.str_at("type") {
        if t.starts_with("thread.")
            || t.starts_with("turn.")
            || t.starts_with("item.")
            || t == "session.created"
        {
            return Some(AnyDialect::Codex);
        }
        if ROLLOUT_TYPES.contains(&t) && v.get("payload").is_some_and(Value::is_object) {
            // a rollout file's envelope line
            return Some(AnyDialect::Codex);
        }
        if t == "tool_call" && v.has("toolCallId") && !v.has("tool_call") {
            // xAI streaming-json; a cursor tool_call always has `tool_call`
            return Some(AnyDialect::Grok);
        }
        if t == "tool_call" || t == "thinking" || v.has("model_call_id") {
            return Some(AnyDialect::Cursor);
        }
        if matches!(
            t,
            "stream_event" | "rate_limit_event" | "conversation_reset"
        ) || v.has("uuid")
            || v.has("parent_tool_use_id")
        {
            return Some(AnyDialect::Claude);
        }
        if claude_session(t, v) {
            return Some(AnyDialect::Claude);
        }
        if t == "system" && v.str_eq("subtype", "init") {
            // `apiKeySource` is no tell: cursor's init has it too
            return Some(if CLAUDE_INIT_TELLS.iter().any(|k| v.has(k)) {
                AnyDialect::Claude
            } else {
                AnyDialect::Cursor
            });
        }
        if t == "result" {
            if v.has("request_id") {
                return Some(AnyDialect::Cursor);
            }
            if v.has("total_cost_usd") || v.has("modelUsage") || v.has("num_turns") {
                return Some(AnyDialect::Claude);
            }
        }
        return sniff_later(t, v).or_else(|| mapped(v));
    }
    if v.get("msg").is_some_and(Value::is_object) && v.has("id") {
        return Some(AnyDialect::Codex);
    }
    if v.str_eq("record_type", "state") || crate::dialects::codex::is_header(v) {
        // a pre-envelope rollout's state marker or header
        return Some(AnyDialect::Codex);
    }
    if v.has("model") && (v.has("sandbox") || v.has("approval") || v.has("provider")) {
        return Some(AnyDialect::Codex);
    }
    if v.has("stopReason") && v.has("sessionId") && v.has("text") {
        // xAI `--output-format json` single object
        return Some(AnyDialect::Grok);
    }
    mapped(v)
}

/// A claude session-file line: its envelope (`parentUuid`, `isSidechain`) or a record type only
/// session files write (docs/session-files-2026.md section 1.4).
fn claude_session(t: &str, v: &Value<'_>) -> bool {
    v.has("parentUuid")
        || matches!(v.get("isSidechain"), Some(Value::Bool(_)))
        || matches!(
            t,
            "summary"
                | "file-history-snapshot"
                | "queue-operation"
                | "permission-mode"
                | "ai-title"
                | "custom-title"
                | "last-prompt"
                | "agent-name"
                | "pr-link"
                | "attachment"
                | "content-replacement"
                | "saved_hook_context"
        )
        || (t == "progress" && v.get("data").is_some_and(Value::is_object))
}

/// opencode, pi and grok tells, tried after the older dialects' own.
fn sniff_later(t: &str, v: &Value<'_>) -> Option<AnyDialect> {
    if v.str_at("sessionID").is_some() {
        if matches!(
            t,
            "step_start" | "step_finish" | "tool_use" | "text" | "reasoning" | "error"
        ) && (v.get("part").is_some_and(Value::is_object)
            || v.get("error").is_some_and(Value::is_object))
        {
            return Some(AnyDialect::Opencode);
        }
        if t == "done" {
            return Some(AnyDialect::Opencode);
        }
    }
    if (t == "session" && v.has("version"))
        || matches!(
            t,
            "agent_start"
                | "agent_end"
                | "agent_settled"
                | "turn_start"
                | "turn_end"
                | "message_update"
                | "tool_execution_start"
                | "tool_execution_update"
                | "tool_execution_end"
                | "auto_retry_start"
                | "auto_retry_end"
                | "auto_compaction_start"
                | "auto_compaction_end"
                | "compaction_start"
                | "compaction_end"
                | "queue_update"
                | "session_info_changed"
                | "thinking_level_changed"
        )
    {
        return Some(AnyDialect::Pi);
    }
    if t == "message_start" || t == "message_end" {
        // an Anthropic message_start (canary) has neither
        if v.get("message")
            .is_some_and(|m| m.is_object() && (m.has("timestamp") || m.has("api")))
        {
            return Some(AnyDialect::Pi);
        }
    }
    if matches!(
        t,
        "tool_call_update" | "available_commands" | "max_turns_reached"
    ) || ((t == "thought" || t == "text") && v.str_at("data").is_some())
        || (t == "end" && v.has("stopReason"))
        || (t == "error"
            && bare_error(v)
            && v.find_key(|k| k != "type" && k != "message").is_some())
        || (matches!(t, "step_start" | "step_finish" | "text" | "tool_use") && v.has("stepNumber"))
        || (t == "step_finish" && v.has("finishReason"))
    {
        return Some(AnyDialect::Grok);
    }
    None
}

/// The dialect a line suggests without proving it: a bare `{"type": "error", "message"}` is
/// grok's whole failed run, but codex prints it too (a stream that fails before
/// `thread.started`: `error` then `turn.failed`). Used only when no held line decides.
pub fn tentative(v: &Value<'_>) -> Option<AnyDialect> {
    (v.str_at("type") == Some("error") && bare_error(v)).then_some(AnyDialect::Grok)
}

/// The built-in mapping files' own `sniff` conditions, in DIALECTS order.
fn mapped(v: &Value<'_>) -> Option<AnyDialect> {
    builtins()
        .iter()
        .find(|m| m.sniffs(v))
        .cloned()
        .map(AnyDialect::Mapped)
}
