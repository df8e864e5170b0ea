"""opencode: ``opencode run --format json`` (also ``crush run --format json``). Mirror of
rust/dialects/opencode.rs.

Every line is ``{"type","timestamp","sessionID",...}``. Tool parts are printed only once they are
finished, so one ``tool_use`` line gives both the call and its result. Usage is per step, on
``step_finish`` (``usage/turn``).
"""

from __future__ import annotations

from typing import Any, cast

from ..events import (
    Event,
    action,
    cache_writes,
    classify,
    error,
    http_kind,
    is_count,
    line_extras,
    msg,
    name_or_unknown,
    reasoning_tokens,
    require,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
)

NAME = "opencode"


def meta(v: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(v.get("sessionID"), str):
        out["sessionId"] = v["sessionID"]
    part = v.get("part")
    if isinstance(part, dict):
        # one message (model call) has several parts, each with its own id
        if isinstance(part.get("messageID"), str) and part["messageID"]:
            out["modelCallId"] = part["messageID"]
        if isinstance(part.get("id"), str) and part["id"]:
            out["nativeId"] = part["id"]
    out.update(line_extras(v, outcome=v.get("type") in ("step_finish", "done")))
    if v.get("type") == "error" and _generic_error(v.get("error")):
        out["repeatsError"] = True
    return out


# The message opencode's HTTP layer gives any defect: it follows the actionable error of the
# same failure (opencode #47162), so it repeats it (docs/formats-2026.md section 8.1).
GENERIC_ERROR = "Unexpected server error. Check server logs for details."


def _generic_error(e: Any) -> bool:
    if not isinstance(e, dict):
        return False
    d = e.get("data")
    return (
        e.get("name") == "UnknownError"
        and isinstance(d, dict)
        and d.get("message") == GENERIC_ERROR
    )


def map_line(v: dict[str, Any]) -> list[Event]:
    t = v.get("type")
    part = v.get("part")
    p = part if isinstance(part, dict) else {}
    if t == "step_start":
        return [status("turn_started")]
    if t == "text":
        return [msg("text", "assistant", text_of(p.get("text")) or "")]
    if t == "reasoning":
        return [msg("thinking", "assistant", text_of(p.get("text")) or "")]
    if t == "tool_use":
        return _tool(p)
    if t == "step_finish":
        return _step_finish(v, p)
    if t == "error":
        return [_error(v.get("error"))]
    if t == "done":
        return [_rejected(v, status("result", text_of(v.get("reason"))))]
    return []


def _tool(p: dict[str, Any]) -> list[Event]:
    state = p.get("state")
    s = state if isinstance(state, dict) else {}
    name = name_or_unknown(p.get("tool"))
    cid = p.get("callID")
    st = s.get("status")
    if st == "completed":
        text = text_of(s.get("output")) or ""
    elif st == "error":
        text = text_of(s.get("error")) or ""
    else:  # not terminal (opencode prints none; kept for forks)
        return [status("progress", text_of(st))]
    result = tool_result(name, cid, st == "error", text)
    if "output" in s or "error" in s:
        result["toolResult"] = s.get("output") if st != "error" else s.get("error")
    else:
        result["toolResult"] = text
    if st == "error" and text.startswith(REJECTED):
        # a permission the run could not ask for: auto-rejected (opencode #44267)
        require(result, action("approval", cid, p.get("tool")))
    return [tool_call(name, s.get("input"), cid), result]


#: The error text of a tool call whose permission was rejected (``RejectedError``; a headless
#: ``opencode run`` rejects every permission it would have to ask for).
REJECTED = "The user rejected permission to use this specific tool call"


def _rejected(v: dict[str, Any], ev: Event) -> Event:
    """``done.rejected[]``: the permission requests the run auto-rejected, each waiting for an
    approval (its ``tool.callID``, else ``callID``; its ``permission``, else ``type``)."""
    rejected = v.get("rejected")
    for r in rejected if isinstance(rejected, list) else []:
        r = r if isinstance(r, dict) else {}
        tool = r.get("tool")
        call = tool.get("callID") if isinstance(tool, dict) else None
        cid = call if isinstance(call, str) and call else r.get("callID")
        perm = r.get("permission")
        name = perm if isinstance(perm, str) and perm else r.get("type")
        require(ev, action("approval", cid, name))
    return ev


def _step_finish(v: dict[str, Any], p: dict[str, Any]) -> list[Event]:
    out = [status("turn_completed", text_of(p.get("reason")))]
    if "tokens" in p or "cost" in p:
        tokens = p.get("tokens")
        tk = tokens if isinstance(tokens, dict) else {}
        cache = tk.get("cache")
        c = cache if isinstance(cache, dict) else {}
        cached = c.get("read")
        cost = p.get("cost")
        counts = [tk.get("input"), tk.get("output"), tk.get("reasoning"), cached, c.get("write")]
        counts = [x for x in [*counts, tk.get("total")] if is_count(x)]
        if is_count(cost) and cast(float, cost) > 0 and counts and all(x == 0 for x in counts):
            # opencode #15779: all-zero tokens with a cost report no tokens, not real zeros
            out.append(usage("turn", v.get("modelID"), [], None, [], cost))
            return out
        ev = usage(
            "turn",
            v.get("modelID"),
            [tk.get("input"), cached, c.get("write")],
            cached,
            [tk.get("output"), tk.get("reasoning")],
            cost,
        )
        ev = reasoning_tokens(ev, tk.get("reasoning"))
        out.append(cache_writes(ev, c.get("write")))
    return out


def _error(e: Any) -> Event:
    if isinstance(e, str):
        return error("api_error", "error", e, classify(e or "error"))
    e = e if isinstance(e, dict) else {}
    data = e.get("data")
    d = data if isinstance(data, dict) else {}
    name = text_of(e.get("name")) or ""
    message = text_of(d.get("message")) or name or "error"
    # the HTTP status decides first; an error opencode retries itself is never semantic
    kind = http_kind(d.get("statusCode"))
    if kind is None:
        kind = classify(message)
        if kind == "semantic" and d.get("isRetryable") is True:
            kind = "transport"
    return error("api_error", name or "error", message, kind)
