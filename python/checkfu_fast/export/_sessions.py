"""Grouping events by session (the unit of one trajectory, one trace, one page)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..usage import SESSION_CUMULATIVE


def split_sessions(
    events: Iterable[Mapping[str, Any]], default: str = "session"
) -> dict[str, list[Mapping[str, Any]]]:
    """The events by session, in order of first appearance: an event belongs to its
    ``sessionId``, else to the latest session named before it (events before any name go to
    the first session named, ``default`` when none is). Sub-agent events (claude sidechains,
    ``parentToolUseId``) carry their parent's session id, so they stay with it."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    early: list[Mapping[str, Any]] = []
    current: str | None = None
    for ev in events:
        sid = ev.get("sessionId")
        if current is not None and ev.get("dialect") in SESSION_CUMULATIVE:
            sid = current  # a codex stream is one thread (later ids copy the parent's meta)
        if isinstance(sid, str) and sid:
            if current is None:
                out[sid] = early
            current = sid
        if current is None:
            early.append(ev)
        else:
            out.setdefault(current, []).append(ev)
    if current is None and early:
        out[default] = early
    return out
