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
        if t == "system" && v.str_eq("subtype", "init") {
            return Some(if v.has("tools") {
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
        return mapped(v);
    }
    if v.get("msg").is_some_and(Value::is_object) && v.has("id") {
        return Some(AnyDialect::Codex);
    }
    if v.has("model") && (v.has("sandbox") || v.has("approval") || v.has("provider")) {
        return Some(AnyDialect::Codex);
    }
    mapped(v)
}

/// The built-in mapping files' own `sniff` conditions, in DIALECTS order.
fn mapped(v: &Value<'_>) -> Option<AnyDialect> {
    builtins()
        .iter()
        .find(|m| m.sniffs(v))
        .cloned()
        .map(AnyDialect::Mapped)
}
