"""Event building blocks shared by the reference dialects. Mirror of ``rust/event.rs``.

A dialect returns *partial* events (``kind``, ``subtype`` and the payload keys) plus line-level
metadata; :mod:`checkfu_fast.reference` adds ``v``/``seq``/``position``/``dialect``/``raw``/
``parsed`` and orders the keys canonically.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, TypeGuard, cast

from .retry import retry_fields

Event = dict[str, Any]

_I64_MAX = (1 << 63) - 1


def is_count(x: Any) -> bool:
    """A usable token count or cost: a non-negative JSON number that fits in i64 (no bools)."""
    t = type(x)
    if t is int:
        return cast(bool, 0 <= x <= _I64_MAX)
    return t is float and x >= 0.0


def text_of(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def name_or_unknown(x: Any) -> str:
    return x if isinstance(x, str) and x else "unknown"


def content_text(content: Any) -> str:
    """Text of a message ``content``: a string, or the ``text`` blocks of a list joined by LF."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def msg(subtype: str, role: str, text: str) -> Event:
    return {"kind": "message", "subtype": subtype, "role": role, "text": text}


def status(subtype: str, text: str | None = None) -> Event:
    ev: Event = {"kind": "status", "subtype": subtype}
    if text is not None:
        ev["text"] = text
    return ev


def tool_call(name: str, arguments: Any, call_id: Any) -> Event:
    tool: dict[str, Any] = {"name": name}
    if arguments is not None:
        tool["arguments"] = arguments
    if isinstance(call_id, str):
        tool["id"] = call_id
    return {"kind": "tool_call", "subtype": "tool_use", "role": "assistant", "tool": tool}


def tool_result(name: str, call_id: Any, is_error: bool, text: str) -> Event:
    tool: dict[str, Any] = {"name": name}
    if isinstance(call_id, str):
        tool["id"] = call_id
    tool["isError"] = is_error
    return {
        "kind": "message",
        "subtype": "tool_result",
        "role": "tool",
        "text": text,
        "tool": tool,
    }


def error(subtype: str, code: str, message: str, kind: str) -> Event:
    ev: Event = {
        "kind": "error",
        "subtype": subtype,
        "error": {"code": code, "message": message or code, "errorKind": kind},
    }
    ev.update(retry_fields(kind, message or code))
    return ev


def usage(
    scope: str,
    model: Any,
    inputs: list[Any],
    cached: Any,
    outputs: list[Any],
    cost: Any = None,
) -> Event:
    """A usage event. ``inputs`` are summed into inputTokens, ``outputs`` into outputTokens.

    Non-counts are ignored. With no count at all in ``inputs`` and ``outputs`` the usage is
    ``unknown``. ``cachedTokens`` is clamped to ``inputTokens`` so the invariant always holds.
    """
    ins = [x for x in inputs if is_count(x)]
    outs = [x for x in outputs if is_count(x)]
    u: dict[str, Any] = {}
    if ins or outs:
        total_in: Any = 0
        for x in ins:
            total_in = total_in + x
        total_out: Any = 0
        for x in outs:
            total_out = total_out + x
        u["inputTokens"] = total_in
        u["outputTokens"] = total_out
        c = cached if is_count(cached) else 0
        u["cachedTokens"] = c if c <= total_in else total_in
    if is_count(cost):
        u["costUsd"] = cost
    u["model"] = name_or_unknown(model)
    if not (ins or outs):
        u["unknown"] = True
    return {"kind": "usage", "subtype": scope, "usage": u, "usageScope": scope}


# -- error kinds ------------------------------------------------------------------------------
# One table, python/checkfu_fast/dialects/error_kinds.json (rust/event.rs embeds the same
# file): lowercase ASCII needles. Quota is checked before transport, transport before the
# semantic default. Three-digit status codes are matched as whole numbers.

_ERROR_KINDS = json.loads(
    (Path(__file__).resolve().parent.parent / "dialects" / "error_kinds.json").read_text("utf-8")
)
QUOTA_NEEDLES: tuple[str, ...] = tuple(_ERROR_KINDS["quota"])
TRANSPORT_NEEDLES: tuple[str, ...] = tuple(_ERROR_KINDS["transport"])
# A three-digit run counts as an HTTP status only at the start of the message or right after
# one of these words (so ids, prices and token counts are not mistaken for statuses).
_STATUS_CONTEXT = (b"error: ", b"error ", b"status: ", b"status ", b"code: ", b"code ", b"http ")
_CODE = re.compile(rb"(?<![0-9])[0-9]{3}(?![0-9])")


def status_codes(low: bytes) -> list[int]:
    """HTTP statuses mentioned in a lowercased message (see ``_STATUS_CONTEXT``)."""
    out = []
    for m in _CODE.finditer(low):
        if m.start() == 0 or low.endswith(_STATUS_CONTEXT, 0, m.start()):
            out.append(int(m.group()))
    return out


def classify(message: str) -> str:
    """Error kind of a native error message: ``quota``, ``transport`` or ``semantic``."""
    low = message.encode("utf-8", "surrogatepass").lower()
    codes = status_codes(low)
    if 429 in codes or any(n.encode() in low for n in QUOTA_NEEDLES):
        return "quota"
    if any(500 <= c <= 599 for c in codes) or any(n.encode() in low for n in TRANSPORT_NEEDLES):
        return "transport"
    return "semantic"


def kind_for_status(code: Any) -> str | None:
    """Error kind implied by an HTTP status given as a number (None when it implies none)."""
    if type(code) is not int:
        return None
    if code == 429:
        return "quota"
    if 500 <= code <= 599:
        return "transport"
    return None


def http_kind(code: Any) -> str | None:
    """Error kind implied by a structured HTTP status (it decides before the wording does):
    401/403 semantic (a retry does not help), 429 quota, 5xx transport; None for others."""
    if type(code) is int and code in (401, 403):
        return "semantic"
    return kind_for_status(code)


# -- oneshot extras (docs/events.md, "Extra fields for consumers") ----------------------------
# Tool classes by the provider's own tool name, lowercased; checked shell, filesystem, then an
# ``mcp_`` prefix (or a dialect's ``mcp`` hint). Rust twin: ``SHELL_TOOLS`` / ``FILESYSTEM_TOOLS``
# in rust/event.rs (tests/test_extras.py compares the two).
SHELL_TOOLS = (
    "bash",
    "shell",
    "command_execution",
    "exec_command",
    "run_terminal_cmd",
    "run_shell_command",
    "execute_command",
    "terminal",
    "local_shell",
)
FILESYSTEM_TOOLS = (
    "read",
    "write",
    "edit",
    "multiedit",
    "glob",
    "grep",
    "ls",
    "list",
    "notebookedit",
    "notebookread",
    "view",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "search_files",
    "delete",
    "delete_file",
    "str_replace_based_edit_tool",
    "apply_patch",
    "file_change",
)


def tool_class(name: str, hint: Any = None) -> str | None:
    """``shell``, ``filesystem`` or ``mcp`` for a provider tool name (``hint``: the dialect's own
    class, used when the name is in no table)."""
    low = name.lower()
    if low in SHELL_TOOLS:
        return "shell"
    if low in FILESYSTEM_TOOLS:
        return "filesystem"
    if low.startswith("mcp_"):
        return "mcp"
    return hint if isinstance(hint, str) else None


def classify_tools(events: list[Event]) -> None:
    """Set ``toolClass`` on every ``tool_call`` event from its provider tool name (the
    pipeline's one generic pass, after the dialect)."""
    for ev in events:
        if ev.get("kind") != "tool_call":
            continue
        tool = ev.get("tool")
        name = ev.get("providerToolName")
        if not isinstance(name, str):
            name = tool.get("name") if isinstance(tool, dict) else None
        cls = tool_class(name, ev.get("toolClass")) if isinstance(name, str) else None
        if cls is None:
            ev.pop("toolClass", None)
        else:
            ev["toolClass"] = cls


def action(kind: str, tool_use_id: Any = None, tool_name: Any = None, questions: Any = None) -> Any:
    """One entry of ``requiresAction`` (docs/events.md): ``{"kind", "toolUseId"?, "toolName"?,
    "questions"?}``; ``kind`` is ``approval`` or ``question``, ``questions`` the list as given."""
    entry: dict[str, Any] = {"kind": kind}
    if isinstance(tool_use_id, str) and tool_use_id:
        entry["toolUseId"] = tool_use_id
    if isinstance(tool_name, str) and tool_name:
        entry["toolName"] = tool_name
    if isinstance(questions, list):
        entry["questions"] = questions
    return entry


def require(ev: Event, entry: Any) -> Event:
    """Adds an entry (an :func:`action`) to the event's ``requiresAction``."""
    ev.setdefault("requiresAction", []).append(entry)
    return ev


def nonneg_int(x: Any) -> bool:
    """A JSON integer >= 0 (any size; no bools)."""
    return type(x) is int and x >= 0


def _str(x: Any) -> str | None:
    return x if isinstance(x, str) and x else None


def stop_reason(v: dict[str, Any]) -> str | None:
    """The native stop reason of an outcome or assistant line: the first string among the
    line's ``stop_reason``/``stopReason``/``reason``, its ``part``'s, then its ``message``'s
    ``stop_reason``/``stopReason``."""
    part = v.get("part")
    message = v.get("message")
    holders: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        (v, ("stop_reason", "stopReason", "reason"))
    ]
    if isinstance(part, dict):
        holders.append((part, ("stop_reason", "stopReason", "reason")))
    if isinstance(message, dict):
        holders.append((message, ("stop_reason", "stopReason")))
    for holder, keys in holders:
        for k in keys:
            if isinstance(holder.get(k), str):
                return cast(str, holder[k])
    return None


def line_extras(v: dict[str, Any], *, outcome: bool = False) -> dict[str, Any]:
    """Line-level extras every dialect reads the same way: ``durationMs`` (a top-level
    ``duration_ms``/``durationMs``) and, on outcome or assistant lines, ``stopReason``."""
    m: dict[str, Any] = {}
    if outcome:
        reason = stop_reason(v)
        if reason is not None:
            m["stopReason"] = reason
    for k in ("duration_ms", "durationMs"):
        if nonneg_int(v.get(k)):
            m["durationMs"] = v[k]
            break
    return m


def reasoning_tokens(ev: Event, x: Any) -> Event:
    """Set ``reasoningTokens`` on a usage event with counts: how many of its ``outputTokens``
    were reasoning (only where the CLI reports them apart; never added to anything)."""
    if is_count(x) and not ev["usage"].get("unknown"):
        ev["reasoningTokens"] = x
    return ev


def cache_writes(ev: Event, write: Any, write_1h: Any = None) -> Event:
    """Set ``cacheWriteTokens`` (the cache-creation part of ``inputTokens``) and
    ``cacheWrite1hTokens`` (the part written with the 1-hour TTL) on a usage event with counts,
    where the CLI reports them."""
    if is_count(write) and not ev["usage"].get("unknown"):
        ev["cacheWriteTokens"] = write
        if is_count(write_1h):
            ev["cacheWrite1hTokens"] = write_1h
    return ev


def epoch_int(x: Any) -> TypeGuard[int]:
    """A JSON integer in 0..i64 (an epoch time, a count of seconds or minutes; no bools)."""
    return type(x) is int and 0 <= x <= _I64_MAX


def window_of_minutes(m: Any) -> str | None:
    """A window length in minutes as ``rateLimits`` names it: under an hour ``<m>m``; else
    rounded to the nearest hour, ``<d>d`` for whole days (``10079`` -> ``7d``), ``<h>h``
    otherwise (``299`` -> ``5h``); ``None`` for no length (not an integer >= 1)."""
    if not epoch_int(m) or m < 1:
        return None
    if m < 60:
        return f"{m}m"
    h = (m + 30) // 60
    return f"{h // 24}d" if h % 24 == 0 else f"{h}h"


def percent_of_fraction(x: Any) -> int | float | None:
    """A utilization fraction (claude's ``0.41``) as a percent (``41.0``): the decimal point of
    the number's shortest text moved two places, so ``0.57`` is ``57.0``, not
    ``56.99999999999999``. ``None`` for anything but a count."""
    if not is_count(x):
        return None
    if type(x) is int:
        return int(x) * 100
    mantissa, _, exp = repr(x).partition("e")
    shifted = float(f"{mantissa}e{int(exp or 0) + 2}")
    return shifted if math.isfinite(shifted) else None


def with_rate_limits(ev: Event, readings: list[dict[str, Any]]) -> Event:
    """``rateLimits`` on an event, when the line gave any reading."""
    if readings:
        ev["rateLimits"] = readings
    return ev


def compaction_tokens(ev: Event, v: dict[str, Any]) -> Event:
    """Set ``tokensBefore``/``tokensAfter`` on a compaction event from the first holder (the
    line, ``compact_metadata``, ``compactMetadata``, ``result``) with both counts."""
    pairs: tuple[tuple[str, str], ...] = (
        ("pre_tokens", "post_tokens"),
        ("tokens_before", "tokens_after"),
    )
    pairs += (("tokensBefore", "tokensAfter"),)
    for holder in (v, v.get("compact_metadata"), v.get("compactMetadata"), v.get("result")):
        if not isinstance(holder, dict):
            continue
        for b, a in pairs:
            if nonneg_int(holder.get(b)) and nonneg_int(holder.get(a)):
                ev["tokensBefore"] = holder[b]
                ev["tokensAfter"] = holder[a]
                return ev
    return ev


def content_blocks(result: Any) -> Any:
    """A result object's ``content`` (the content blocks) when it has one, else the result."""
    return result["content"] if isinstance(result, dict) and "content" in result else result
