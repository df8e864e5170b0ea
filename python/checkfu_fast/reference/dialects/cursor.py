"""cursor: Cursor CLI ``cursor-agent -p --output-format stream-json``.

Mirror of rust/dialects/cursor.rs.
"""

from __future__ import annotations

from typing import Any, cast

from ..events import (
    Event,
    action,
    cache_writes,
    classify,
    error,
    line_extras,
    msg,
    require,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
)
from .claude import content_events

NAME = "cursor"

# Where a finished tool's text lives, per result branch; the first non-empty string wins.
_RESULT_TEXT_FIELDS = (
    "content",
    "stdout",
    "resultForModel",
    "diffString",
    "output",
    "text",
    "stderr",
    "message",
    "error",
    "errorMessage",
    "reason",
)


def meta(v: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = {}
    if isinstance(v.get("session_id"), str):
        m["sessionId"] = v["session_id"]
    message = v.get("message")
    mid = message.get("id") if isinstance(message, dict) else None
    if not (isinstance(mid, str) and mid):
        mid = v.get("model_call_id")
    if isinstance(mid, str) and mid:
        m["modelCallId"] = mid
    t = v.get("type")
    m.update(line_extras(v, outcome=t in ("result", "assistant")))
    if t == "result":  # null: a result line that reports no text
        m["resultText"] = v["result"] if isinstance(v.get("result"), str) else None
        if "structured_output" in v:
            m["structuredOutput"] = v["structured_output"]
        if v.get("is_error") is not True:
            # the text joins every segment of the turn (docs/formats-2026.md 5.2): the final
            # answer is the last segment
            m["resultJoinsMessages"] = True
    if t == "assistant" and "timestamp_ms" in v:
        # --stream-partial-output prints chunks with timestamp_ms, then the whole segment
        m["partial"] = True
    return m


def map_line(v: dict[str, Any]) -> list[Event]:
    t = v.get("type")
    sub = v.get("subtype")
    if t == "system":
        simple = _SYSTEM.get(sub) if isinstance(sub, str) else None
        return [status(simple, None if simple == "init" else sub)] if simple else []
    if t in ("user", "assistant"):
        m = v.get("message")
        out = content_events(m.get("content"), t) if isinstance(m, dict) else []
        for ev in out:
            if ev["subtype"] == "tool_result":
                ev["toolResult"] = ev["text"]
        return out
    if t == "thinking":
        if sub == "completed":
            return [status("progress", "thinking completed")]
        ev = msg("thinking", "assistant", text_of(v.get("text")) or "")
        if sub == "delta":  # thinking comes only as deltas (then a text-less `completed`)
            ev["delta"] = True
            ev["deltaOnly"] = True
        return [ev]
    if t == "tool_call":
        return _tool_call(v, sub)
    if t == "result":
        return _result(v)
    if t == "connection":
        if sub == "reconnecting":  # the one error of a reconnect (retry lines only report it)
            n = v.get("attempt")
            message = f"reconnecting (attempt {n})" if type(n) is int else "reconnecting"
            ev = error("retry", "reconnecting", message, "transport")
            ev["retry"] = True
            return [ev]
        return [status("progress", f"connection {sub}" if isinstance(sub, str) else "connection")]
    if t == "retry":
        return [status("progress", f"retry {sub}" if isinstance(sub, str) else "retry")]
    if t == "interaction_query":
        ev = status("progress", _query_text(v, sub))
        if sub == "request" and v.get("query_type") == "createPlanRequestQuery" and _plan(v):
            ev["answer"] = True  # plan mode: the plan is the run's answer, not the narration
        return [ev]
    return []


# system subtypes -> status subtypes (the others are unknown)
_SYSTEM = {"init": "init", "background_shell_timeout": "progress", "task_notification": "subagent"}


def _query_text(v: dict[str, Any], sub: Any) -> str:
    """An interaction_query's text: its ``query_type``; a ``createPlanRequestQuery`` request
    gives the plan itself; a response adds its branch (``approved``, ``rejected``) and reason."""
    qt = text_of(v.get("query_type")) or "interaction_query"
    if sub == "request":
        plan = _plan(v) if qt == "createPlanRequestQuery" else None
        return plan or qt
    r = v.get("result")
    if sub == "response" and isinstance(r, dict) and r:
        branch = next(iter(r))
        inner = r[branch]
        reason = inner.get("reason") if isinstance(inner, dict) else None
        if isinstance(reason, str) and reason:
            return f"{qt}: {branch}: {reason}"
        return f"{qt}: {branch}"
    return qt


def _plan(v: dict[str, Any]) -> str | None:
    """A ``createPlanRequestQuery`` request's ``query.createPlanRequestQuery.args.plan``."""
    q = v.get("query")
    body = q.get("createPlanRequestQuery") if isinstance(q, dict) else None
    args = body.get("args") if isinstance(body, dict) else None
    plan = args.get("plan") if isinstance(args, dict) else None
    return plan if isinstance(plan, str) and plan else None


def find_tool(tc: Any) -> tuple[str, Any] | None:
    """The tool inside ``tool_call``: the first ``*ToolCall`` key, else ``function``."""
    if not isinstance(tc, dict):
        return None
    for key in tc:
        if key.endswith("ToolCall") and len(key) > len("ToolCall"):
            return key[: -len("ToolCall")], tc[key]
    if "function" in tc:
        return "function", tc["function"]
    return None


def _tool_call(v: dict[str, Any], sub: Any) -> list[Event]:
    found = find_tool(v.get("tool_call"))
    if found is None:
        return []
    name, body = found
    body = body if isinstance(body, dict) else {}
    if name == "function":
        name = cast(
            str,
            body.get("name") if isinstance(body.get("name"), str) and body["name"] else "function",
        )
        args = body.get("arguments")
    else:
        args = body.get("args")
        if name == "mcp" and isinstance(args, dict):
            tool_name = args.get("toolName")
            if isinstance(tool_name, str) and tool_name:
                name = tool_name
    call_id = v.get("call_id")
    tc = cast(dict[str, Any], v.get("tool_call"))  # a dict: find_tool found a tool in it
    if sub == "started":
        ev = tool_call(name, args, call_id)
        kinds = [k for k in tc if k.endswith("ToolCall")]
        if kinds and kinds[0] == "mcpToolCall":
            ev["toolClass"] = "mcp"
        return [ev]
    if sub == "completed":
        is_error, text = _result_text(body.get("result"))
        ev = tool_result(name, call_id, is_error, text)
        r = body.get("result")
        if isinstance(r, dict) and r and next(iter(r)) in _REFUSED:
            require(ev, action("approval", call_id, name))  # a permission rule refused it
        ev["toolResult"] = text
        for key, value in tc.items():
            if key.endswith("ToolCall") and isinstance(value, dict) and "result" in value:
                ev["toolResult"] = value["result"]
                break
        return [ev]
    return [status("progress", text_of(sub))]


# result branches of a call a permission rule refused (``requiresAction``)
_REFUSED = ("rejected", "writePermissionDenied")


def _result_text(result: Any) -> tuple[bool, str]:
    if not isinstance(result, dict):
        return False, text_of(result) or ""
    for key in result:
        branch = result[key]
        is_error = key != "success"
        if isinstance(branch, str):
            return is_error, branch
        if isinstance(branch, dict):
            for f in _RESULT_TEXT_FIELDS:
                if isinstance(branch.get(f), str) and branch[f]:
                    return is_error, branch[f]
        if key == "rejected":  # a permission rule denied it, often with an empty reason
            command = branch.get("command") if isinstance(branch, dict) else None
            return True, f"rejected: {command}" if isinstance(command, str) and command else key
        return is_error, ""
    return False, ""


def _result(v: dict[str, Any]) -> list[Event]:
    text = text_of(v.get("result"))
    out: list[Event]
    if v.get("is_error") is True:
        message = text or "result_error"
        out = [error("result_error", "result_error", message, classify(message))]
    else:
        out = [status("result", text)]
    u = v.get("usage")
    if isinstance(u, dict):
        cached = u.get("cacheReadTokens")
        ev = usage(
            "cumulative",
            None,
            [u.get("inputTokens"), cached, u.get("cacheWriteTokens")],
            cached,
            [u.get("outputTokens")],
        )
        out.append(cache_writes(ev, u.get("cacheWriteTokens")))
    return out
