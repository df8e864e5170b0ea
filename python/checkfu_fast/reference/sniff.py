"""``auto``: which dialect a parsed line decides, if any. Mirror of ``rust/sniff.rs``.

Lines are held (at most ``AUTO_HOLD_LINES`` lines or ``AUTO_HOLD_BYTES`` bytes of raw text)
until one decides; with none, the stream is normalized as ``FALLBACK`` and a
``status/dialect_fallback`` event says so.
"""

from __future__ import annotations

from typing import Any

from .dialects.codex import is_header

AUTO_HOLD_LINES = 64
AUTO_HOLD_BYTES = 1 << 20
FALLBACK = "claude"

_CODEX_PREFIXES = ("thread.", "turn.", "item.")
# the record types of a codex rollout envelope (docs/session-files-2026.md §2.4)
_ROLLOUT_TYPES = (
    "session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
    "token_usage_record", "inter_agent_communication", "inter_agent_communication_metadata",
    "retained_context", "security_risk_score", "realtime_item",
)  # fmt: skip
_CLAUDE_ONLY_TYPES = ("stream_event", "rate_limit_event", "conversation_reset")
_CURSOR_ONLY_TYPES = ("tool_call", "thinking")
_OPENCODE_TYPES = ("step_start", "step_finish", "tool_use", "text", "reasoning", "error")
_PI_ONLY_TYPES = (
    "agent_start", "agent_end", "agent_settled", "turn_start", "turn_end", "message_update",
    "tool_execution_start", "tool_execution_update", "tool_execution_end",
    "auto_retry_start", "auto_retry_end", "auto_compaction_start", "auto_compaction_end",
    "compaction_start", "compaction_end", "queue_update", "session_info_changed",
    "thinking_level_changed",
)  # fmt: skip
_GROK_ONLY_TYPES = ("tool_call_update", "available_commands", "max_turns_reached")
_SUPERAGENT_TYPES = ("step_start", "step_finish", "text", "tool_use")
# record types only claude session files write (docs/session-files-2026.md section 1.4)
_CLAUDE_SESSION_TYPES = (
    "summary", "file-history-snapshot", "queue-operation", "permission-mode", "ai-title",
    "custom-title", "last-prompt", "agent-name", "pr-link", "attachment", "content-replacement",
    "saved_hook_context",
)  # fmt: skip
_CLAUDE_INIT_TELLS = ("tools", "claude_code_version", "capabilities", "output_style")
# The keys of grok's bare error line (xAI: `message` plus the spend of the run; superagent:
# `sessionID`, `timestamp`). codex prints the same shape, but always after `thread.started`.
_GROK_ERROR_KEYS = frozenset(
    (
        "type", "message", "sessionId", "sessionID", "timestamp", "requestId", "usage",
        "num_turns", "modelUsage", "total_cost_usd", "total_cost_usd_ticks", "cost_is_partial",
        "usage_is_incomplete",
    )
)  # fmt: skip


def sniff(v: Any) -> str | None:
    """The dialect this parsed line proves, or None when it proves none."""
    if not isinstance(v, dict):
        return None
    t = v.get("type")
    if isinstance(t, str):
        if t.startswith(_CODEX_PREFIXES) or t == "session.created":
            return "codex"
        if t in _ROLLOUT_TYPES and isinstance(v.get("payload"), dict):
            return "codex"  # a rollout file's envelope line
        if t == "tool_call" and "toolCallId" in v and "tool_call" not in v:
            return "grok"  # xAI streaming-json; a cursor tool_call always has `tool_call`
        if t in _CURSOR_ONLY_TYPES or "model_call_id" in v:
            return "cursor"
        if t in _CLAUDE_ONLY_TYPES or "uuid" in v or "parent_tool_use_id" in v:
            return "claude"
        if _claude_session(t, v):
            return "claude"
        if t == "system" and v.get("subtype") == "init":
            # `apiKeySource` is no tell: cursor's init has it too
            return "claude" if any(k in v for k in _CLAUDE_INIT_TELLS) else "cursor"
        if t == "result":
            if "request_id" in v:
                return "cursor"
            if "total_cost_usd" in v or "modelUsage" in v or "num_turns" in v:
                return "claude"
        return _sniff_later(t, v) or _mapped(v)
    if isinstance(v.get("msg"), dict) and "id" in v:
        return "codex"
    if v.get("record_type") == "state" or is_header(v):
        return "codex"  # a pre-envelope rollout's state marker or header
    if "model" in v and ("sandbox" in v or "approval" in v or "provider" in v):
        return "codex"
    if "stopReason" in v and "sessionId" in v and "text" in v:
        return "grok"  # xAI `--output-format json` single object
    return _mapped(v)


def _claude_session(t: str, v: dict[str, Any]) -> bool:
    """A claude session-file line: its envelope (``parentUuid``, ``isSidechain``) or a record
    type only session files write."""
    if "parentUuid" in v or isinstance(v.get("isSidechain"), bool):
        return True
    if t in _CLAUDE_SESSION_TYPES:
        return True
    return t == "progress" and isinstance(v.get("data"), dict)


def _sniff_later(t: str, v: dict[str, Any]) -> str | None:
    """opencode, pi and grok tells, tried after the older dialects' own."""
    if isinstance(v.get("sessionID"), str):
        if t in _OPENCODE_TYPES and (
            isinstance(v.get("part"), dict) or isinstance(v.get("error"), dict)
        ):
            return "opencode"
        if t == "done":
            return "opencode"
    if (t == "session" and "version" in v) or t in _PI_ONLY_TYPES:
        return "pi"
    if t == "message_start" or t == "message_end":
        m = v.get("message")
        if isinstance(m, dict) and ("timestamp" in m or "api" in m):
            return "pi"  # an Anthropic message_start (canary) has neither
    if t in _GROK_ONLY_TYPES:
        return "grok"
    if (t == "thought" or t == "text") and isinstance(v.get("data"), str):
        return "grok"
    if t == "end" and "stopReason" in v:
        return "grok"
    if t == "error" and _grok_error(v) and len(v.keys() - {"type", "message"}) > 0:
        return "grok"  # a bare `{type, message}` is codex's too: see `tentative`
    if t in _SUPERAGENT_TYPES and "stepNumber" in v:
        return "grok"
    if t == "step_finish" and "finishReason" in v:
        return "grok"
    return None


def _grok_error(v: dict[str, Any]) -> bool:
    return isinstance(v.get("message"), str) and _GROK_ERROR_KEYS.issuperset(v)


def tentative(v: Any) -> str | None:
    """The dialect a line suggests without proving it: a bare ``{"type": "error", "message"}``
    is grok's whole failed run, but codex prints it too (a stream that fails before
    ``thread.started``: ``error`` then ``turn.failed``). Used only when no held line decides."""
    if isinstance(v, dict) and v.get("type") == "error" and _grok_error(v):
        return "grok"
    return None


def _mapped(v: dict[str, Any]) -> str | None:
    """The built-in mapping files' own ``sniff`` conditions, in DIALECTS order."""
    from . import mapping
    from .dialects import BUILTIN_MAPPED

    for name, d in BUILTIN_MAPPED.items():
        if mapping.sniffs(d.mapping, v):
            return name
    return None
