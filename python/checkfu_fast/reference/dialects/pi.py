"""pi: pi coding agent ``pi -p --mode json``. Mirror of rust/dialects/pi.rs.

A ``session`` header, then one ``AgentSessionEvent`` per line. Content and usage come from
``message_end`` only (``message_start``/``message_update``/``turn_end``/``agent_end`` repeat the
message); ``message_update`` text/thinking deltas are given as ``delta: true`` messages.
Model errors have no record of their own: the assistant message ends with ``stopReason: "error"``
and ``errorMessage``.
"""

from __future__ import annotations

import re
from typing import Any

from ..events import (
    Event,
    cache_writes,
    classify,
    compaction_tokens,
    content_blocks,
    content_text,
    error,
    http_kind,
    line_extras,
    msg,
    name_or_unknown,
    nonneg_int,
    reasoning_tokens,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
)

NAME = "pi"

# lifecycle lines: native type -> status subtype (text = the native type)
_LIFECYCLE = {
    "agent_start": "progress",
    "agent_settled": "progress",
    "message_start": "progress",
    "turn_start": "turn_started",
    "turn_end": "turn_completed",
    "agent_end": "result",
    # session settings that changed
    "session_info_changed": "progress",
    "thinking_level_changed": "progress",
}
_DELTAS = {"text_delta": "text", "thinking_delta": "thinking"}


def meta(v: dict[str, Any]) -> dict[str, Any]:
    t = v.get("type")
    out: dict[str, Any] = {}
    if t == "session" and isinstance(v.get("id"), str):
        out["sessionId"] = v["id"]
    m = v.get("message")
    if isinstance(m, dict):
        mid = m.get("responseId") if t == "message_end" and "usage" in m else None
        if not (isinstance(mid, str) and mid):
            mid = m.get("id")
        if isinstance(mid, str) and mid:
            out["modelCallId"] = mid
    out.update(line_extras(v, outcome=t in ("message_end", "turn_end", "agent_end")))
    if t in ("turn_end", "agent_end") and _ended_in_error(v):
        out["repeatsError"] = True
    elif t == "agent_end" and _last_assistant(v) is None:
        out["repeatsError"] = True  # repeats no message: the turn_end before it stands
    return out


def _last_assistant(v: dict[str, Any]) -> dict[str, Any] | None:
    messages = v.get("messages")
    candidates = messages if isinstance(messages, list) else [v.get("message")]
    for m in reversed(candidates):
        if isinstance(m, dict) and m.get("role") == "assistant":
            return m
    return None


def _ended_in_error(v: dict[str, Any]) -> bool:
    """``turn_end``/``agent_end`` repeat the turn's last assistant message; when it stopped with
    ``error`` or ``aborted`` its ``message_end`` already gave the error event."""
    m = _last_assistant(v)
    return m is not None and m.get("stopReason") in ("error", "aborted")


def map_line(v: dict[str, Any]) -> list[Event]:
    t = v.get("type")
    if not isinstance(t, str):
        return []
    if t == "session":
        return [status("init")]
    sub = _LIFECYCLE.get(t)
    if sub is not None:
        return [status(sub, t)]
    if t == "model_changed" or t == "service_tier_changed":  # forks' session settings
        return [status("progress", _setting_text(v, t))]
    if t == "message_update":
        return [_update(v.get("assistantMessageEvent"))]
    if t == "message_end":
        m = v.get("message")
        return _message(m) if isinstance(m, dict) else []
    if t == "tool_execution_start":
        # the call itself was announced by the assistant message's toolCall block
        return [status("progress", text_of(v.get("toolName")))]
    if t == "tool_execution_update":
        return [status("progress", text_of(v.get("toolName")))]
    if t == "tool_execution_end":
        r = v.get("result")
        text = content_text(r.get("content")) if isinstance(r, dict) else text_of(r) or ""
        ev = tool_result(
            name_or_unknown(v.get("toolName")),
            v.get("toolCallId"),
            v.get("isError") is True,
            text,
        )
        if "result" in v:  # details are not content
            ev["toolResult"] = content_blocks(r)
        return [ev]
    if t == "queue_update":
        return [status("progress", _queue_text(v))]
    if t == "compaction_start":
        return [status("compaction", text_of(v.get("reason")) or t)]
    if t == "compaction_end":
        return [_compaction_end(v, t)]
    if t == "auto_compaction_start":
        return [compaction_tokens(status("compaction", text_of(v.get("reason"))), v)]
    if t == "auto_compaction_end":
        message = text_of(v.get("errorMessage"))
        if message:
            return [error("compaction_error", "compaction_error", message, classify(message))]
        ev = status("compaction", "aborted" if v.get("aborted") is True else t)
        return [compaction_tokens(ev, v)]
    if t == "auto_retry_start":
        message = text_of(v.get("errorMessage")) or ""
        ev = error("retry", "auto_retry", message, error_kind(message, retried=True))
        ev["retry"] = True
        delay = v.get("delayMs")  # pi's own delay before the retry wins over the text's
        if ev["error"]["errorKind"] in ("quota", "transport") and type(delay) is int:
            if 0 <= delay < 1 << 63:
                ev["retryAfterMs"] = delay
        return [ev]
    if t == "auto_retry_end":
        final = text_of(v.get("finalError"))
        if v.get("success") is not True and final:
            return [error("retry_failed", "retry_failed", final, error_kind(final, retried=True))]
        return [status("progress", t)]
    return []


# The errors pi retries itself (`AgentSession._isRetryableError` in
# packages/coding-agent/src/core/agent-session.ts): its own pattern, case-insensitive, matched
# on the ASCII-lowercased UTF-8 bytes (`.` is any one byte), so the twins agree byte for byte.
_PI_RETRYABLE = re.compile(
    rb"overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504"
    rb"|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error"
    rb"|connection.?refused|connection.?lost|websocket.?closed|websocket.?error"
    rb"|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up"
    rb"|ended without|http2 request did not get a response|timed? out|timeout|terminated"
    rb"|retry delay"
)


def error_kind(message: str, retried: bool = False) -> str:
    """The kind of a pi error message: a leading ``NNN: `` HTTP status decides first (401/403
    semantic, 429 quota, 5xx transport); then the shared classifier; an error pi retries itself
    (``retried``: an ``auto_retry_*`` line, or its pattern matches) is never semantic
    (undici's bare ``terminated`` is a connection cut)."""
    b = message.encode("utf-8", "surrogatepass")
    if len(b) >= 5 and b[:3].isdigit() and b[3:5] == b": ":
        kind = http_kind(int(b[:3]))
        if kind is not None:
            return kind
    kind = classify(message or "api_error")
    if kind == "semantic" and (retried or _PI_RETRYABLE.search(b.lower())):
        return "transport"
    return kind


# the field that names a fork's new setting, first present wins
_SETTING_FIELDS = ("tier", "serviceTier", "modelId", "model")


def _setting_text(v: dict[str, Any], t: str) -> str:
    """``model_changed: <model>`` / ``service_tier_changed: <tier>``, else the type."""
    for k in _SETTING_FIELDS:
        x = v.get(k)
        if isinstance(x, str) and x:
            return f"{t}: {x}"
    return t


def _queue_text(v: dict[str, Any]) -> str:
    """``queue: N steering, M follow-up`` (the queues' lengths)."""
    n = [len(q) if isinstance(q, list) else 0 for q in (v.get("steering"), v.get("followUp"))]
    return f"queue: {n[0]} steering, {n[1]} follow-up"


def _compaction_end(v: dict[str, Any], t: str) -> Event:
    """``compaction_end`` (0.84; ``auto_compaction_end`` renamed): the text is the ``reason``;
    ``result.tokensBefore`` is the context size before (pi gives no size after)."""
    message = text_of(v.get("errorMessage"))
    if message:
        # a compaction that will be retried is not the ending
        if v.get("willRetry") is True:
            ev = error("retry", "compaction_error", message, classify(message))
            ev["retry"] = True
            return ev
        return error("compaction_error", "compaction_error", message, classify(message))
    if v.get("aborted") is True:
        return status("compaction", "aborted")
    ev = compaction_tokens(status("compaction", text_of(v.get("reason")) or t), v)
    r = v.get("result")
    if "tokensBefore" not in ev and isinstance(r, dict) and nonneg_int(r.get("tokensBefore")):
        ev["tokensBefore"] = r["tokensBefore"]
    return ev


def _update(e: Any) -> Event:
    if isinstance(e, dict):
        et = e.get("type")
        sub = _DELTAS.get(et) if isinstance(et, str) else None
        if sub is not None and isinstance(e.get("delta"), str):
            ev = msg(sub, "assistant", e["delta"])
            ev["delta"] = True
            return ev
        if isinstance(et, str):
            return status("progress", et)
    return status("progress", "message_update")


def _blocks(content: Any, role: str) -> list[Event]:
    if isinstance(content, str):
        return [msg("text", role, content)]
    out: list[Event] = []
    if not isinstance(content, list):
        return out
    for b in content:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str):
            out.append(msg("text", role, b["text"]))
        elif bt == "thinking" and isinstance(b.get("thinking"), str):
            out.append(msg("thinking", "assistant", b["thinking"]))
        elif bt == "toolCall":
            ev = tool_call(name_or_unknown(b.get("name")), b.get("arguments"), b.get("id"))
            pj = b.get("partialJson")
            if isinstance(pj, str) and pj:  # the unparsed argument text of a malformed call
                ev["partialArguments"] = pj
            out.append(ev)
    return out


def _message(m: dict[str, Any]) -> list[Event]:
    role = m.get("role")
    if role == "user" or role == "system":
        return _blocks(m.get("content"), role)
    if role == "toolResult":
        # the result itself was reported by tool_execution_end
        return [status("progress", text_of(m.get("toolName")))]
    # extended messages (0.84): summaries and extension messages are system text, a user's
    # `!command` run is progress
    if role == "compactionSummary" or role == "branchSummary":
        summary = m.get("summary")
        return [
            msg("text", "system", summary) if isinstance(summary, str) else status("progress", role)
        ]
    if role == "custom":
        return _blocks(m.get("content"), "system")
    if role == "bashExecution":
        return [status("progress", text_of(m.get("command")) or "bashExecution")]
    if role != "assistant":
        return []
    out = _blocks(m.get("content"), "assistant")
    stop = m.get("stopReason")
    if stop == "error" or stop == "aborted":
        message = text_of(m.get("errorMessage")) or ""
        if stop == "error":
            out.append(error("api_error", "api_error", message, error_kind(message)))
        else:
            out.append(error("aborted", "aborted", message, "semantic"))
    if "usage" in m:
        u = m.get("usage")
        u = u if isinstance(u, dict) else {}
        cost = u.get("cost")
        cached = u.get("cacheRead")
        # `reasoning` (newer builds) is a subset of `output`: not added
        ev = usage(
            "message",
            m.get("model"),
            [u.get("input"), cached, u.get("cacheWrite")],
            cached,
            [u.get("output")],
            cost.get("total") if isinstance(cost, dict) else None,
        )
        reasoning_tokens(ev, u.get("reasoning"))
        cache_writes(ev, u.get("cacheWrite"))
        if isinstance(m.get("responseId"), str):
            ev["messageId"] = m["responseId"]
        out.append(ev)
    return out
