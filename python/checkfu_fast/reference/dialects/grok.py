"""grok: xAI Grok Build ``grok -p --output-format json|streaming-json`` and superagent-ai grok-cli
``--format json``. Mirror of rust/dialects/grok.rs.

Three shapes, told apart per line: the xAI ``json`` single object (no ``type``); xAI
``streaming-json`` (``thought``/``text`` with ``data``, ``tool_call``/``tool_call_update``,
``usage``, ``plan``, ``end``, ...); superagent's step-based lines (``step_start``, ``text`` with
``text``, ``tool_use`` with call and result, ``step_finish``). ``streaming-messages-json`` is the
claude dialect.
"""

from __future__ import annotations

from typing import Any, cast

from ..events import (
    Event,
    cache_writes,
    classify,
    compaction_tokens,
    error,
    is_count,
    line_extras,
    msg,
    name_or_unknown,
    reasoning_tokens,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
)

NAME = "grok"

TICKS_PER_USD = 1e10


def meta(v: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("sessionId", "sessionID"):
        if isinstance(v.get(k), str):
            out["sessionId"] = v[k]
            break
    t = v.get("type")
    if t == "usage" and isinstance(v.get("messageId"), str) and v["messageId"]:
        out["modelCallId"] = v["messageId"]
    out.update(line_extras(v, outcome=t is None or t == "end"))
    if t == "run_finish" and v.get("success") is False:
        out["repeatsError"] = True  # an error line before it is the ending
    return out


def _raw_result(ev: Event, v: dict[str, Any]) -> Event:
    """The tool result as the line gives it: ``rawOutput``, else ACP ``content``, else text."""
    if "rawOutput" in v:
        ev["toolResult"] = v["rawOutput"]
    elif "content" in v:
        ev["toolResult"] = v["content"]
    else:
        ev["toolResult"] = ev["text"]
    return ev


def map_line(v: dict[str, Any]) -> list[Event]:
    t = v.get("type")
    if t is None:
        return _json_object(v)
    if t == "thought" or t == "text":
        d = v.get("data")
        if isinstance(d, str):  # xAI streaming-json: a token chunk, the only form of the text
            ev = msg("thinking" if t == "thought" else "text", "assistant", d)
            ev["delta"] = True
            ev["deltaOnly"] = True
            return [ev]
        if t == "thought":
            return [msg("thinking", "assistant", "")]
        return [msg("text", "assistant", text_of(v.get("text")) or "")]  # superagent: per step
    if t == "tool_call":
        return [tool_call(_tool_name(v), v.get("rawInput"), v.get("toolCallId"))]
    if t == "tool_call_update":
        st = v.get("status")
        if st == "completed" or st == "failed":
            raw = v.get("rawOutput")
            text = raw if isinstance(raw, str) else _acp_text(v.get("content"))
            ev = tool_result(_tool_name(v), v.get("toolCallId"), st == "failed", text)
            return [_raw_result(ev, v)]
        return [status("progress", text_of(st))]
    if t == "usage":
        ev = _usage("message", v.get("model"), v.get("usage"), None)
        if isinstance(v.get("messageId"), str):
            ev["messageId"] = v["messageId"]
        return [ev]
    if t == "plan":
        return [status("progress", _plan_text(v.get("entries")))]
    if t == "available_commands":
        return [status("progress", t)]
    if isinstance(t, str) and t.startswith("auto_compact"):
        # the start's `reason` (`threshold`, or a sentence) names why, as pi's compaction_start
        text = "aborted" if v.get("aborted") is True else text_of(v.get("reason")) or t
        return [compaction_tokens(status("compaction", text), v)]
    if t == "max_turns_reached":
        message = text_of(v.get("message")) or "max turns reached"
        return [error("max_turns", "max_turns_reached", message, "semantic")]
    if t == "error":
        message = text_of(v.get("message")) or ""
        return [error("api_error", "error", message, classify(message or "error")), *_spend(v)]
    if t == "end":
        return [status("result", text_of(v.get("stopReason"))), *_spend(v)]
    # superagent-ai grok-cli
    if t == "step_start":
        return [status("turn_started")]
    if t == "tool_use":
        return _superagent_tool(v)
    if t == "step_finish":
        return _step_finish(v)
    if t == "run_finish":
        return _run_finish(v)
    return []


def _json_object(v: dict[str, Any]) -> list[Event]:
    if not ("text" in v or "stopReason" in v or "thought" in v):
        return []
    out: list[Event] = []
    if isinstance(v.get("thought"), str):
        out.append(msg("thinking", "assistant", v["thought"]))
    if isinstance(v.get("text"), str):
        out.append(msg("text", "assistant", v["text"]))
    out.append(status("result", text_of(v.get("stopReason"))))
    return out + _spend(v)


def _spend(v: dict[str, Any]) -> list[Event]:
    """Run totals (``json`` object, ``end``, ``error``): ``usage/cumulative``."""
    if "usage" not in v and "total_cost_usd" not in v:
        return []
    return [
        _usage(
            "cumulative", _first_model(v.get("modelUsage")), v.get("usage"), v.get("total_cost_usd")
        )
    ]


def _usage(scope: str, model: Any, u: Any, cost: Any) -> Event:
    if not isinstance(u, dict):
        u = {}
    cached = u.get("cache_read_input_tokens")
    # input_tokens is the uncached part
    inputs = [u.get("input_tokens"), cached, u.get("cache_creation_input_tokens")]
    outputs = [u.get("output_tokens")]
    if _reasoning_apart(u):
        outputs.append(u.get("reasoning_tokens"))
    ev = usage(scope, model, inputs, cached, outputs, cost)
    ev = reasoning_tokens(ev, u.get("reasoning_tokens"))
    return cache_writes(ev, u.get("cache_creation_input_tokens"))


def _reasoning_apart(u: dict[str, Any]) -> bool:
    """``reasoning_tokens`` are inside ``output_tokens`` (the xAI token-field policy), except in
    builds whose ``total_tokens`` counts them apart: ``total_tokens`` = input + cache read +
    cache creation + output + reasoning (docs/formats-2026.md section 6.1)."""
    keys = (
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
        "reasoning_tokens",
    )
    total, reasoning = u.get("total_tokens"), u.get("reasoning_tokens")
    if not (_int_count(total) and _int_count(reasoning) and cast(int, reasoning) > 0):
        return False
    return bool(sum(u[k] for k in keys if _int_count(u.get(k))) == total)


def _int_count(x: Any) -> bool:
    return type(x) is int and 0 <= x < 1 << 63


def _first_model(model_usage: Any) -> Any:
    if isinstance(model_usage, dict):
        for k in model_usage:
            return k
    return None


def _tool_name(v: dict[str, Any]) -> str:
    for k in ("toolName", "title"):
        n = v.get(k)
        if isinstance(n, str) and n:
            return n
    return "unknown"


def _acp_text(content: Any) -> str:
    """Text of ACP tool content: ``{"type":"content","content":{"type":"text","text"}}`` or
    ``{"type":"text","text"}`` items, joined by LF."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "content" and isinstance(item.get("content"), dict):
                item = item["content"]
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                texts.append(item["text"])
    return "\n".join(texts)


def _plan_text(entries: Any) -> str:
    lines = []
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, dict) and isinstance(e.get("content"), str):
                lines.append(("[x] " if e.get("status") == "completed" else "[ ] ") + e["content"])
    return "\n".join(lines)


def _superagent_tool(v: dict[str, Any]) -> list[Event]:
    tc = v.get("toolCall")
    tc = tc if isinstance(tc, dict) else {}
    f = tc.get("function")
    f = f if isinstance(f, dict) else {}
    name = name_or_unknown(f.get("name"))
    cid = tc.get("id")
    out = [tool_call(name, f.get("arguments"), cid)]
    tr = v.get("toolResult")
    if isinstance(tr, dict):
        text = text_of(tr.get("output")) or text_of(tr.get("error")) or ""
        out.append(_raw_result(tool_result(name, cid, tr.get("success") is False, text), v))
    return out


def _run_finish(v: dict[str, Any]) -> list[Event]:
    """superagent's last line: ``status/result`` (``success``/``failed``); a failed run adds an
    ``error/run_failed`` (semantic), which the line's ``repeatsError`` lets an earlier error
    line outrank."""
    ok = v.get("success")
    out = [status("result", "success" if ok is True else "failed" if ok is False else None)]
    if ok is False:
        code = v.get("exitCode")
        i64 = type(code) is int and -(1 << 63) <= code < 1 << 63
        message = f"run failed (exit code {code})" if i64 else "run failed"
        out.append(error("run_failed", "run_failed", message, "semantic"))
    return out


def _step_finish(v: dict[str, Any]) -> list[Event]:
    out = [status("turn_completed", text_of(v.get("finishReason")))]
    if "usage" in v:
        u = v.get("usage")
        u = u if isinstance(u, dict) else {}
        ticks: Any = u.get("costUsdTicks")
        cost = ticks / TICKS_PER_USD if is_count(ticks) else None
        out.append(
            usage(
                "turn", v.get("model"), [u.get("inputTokens")], None, [u.get("outputTokens")], cost
            )
        )
    return out
