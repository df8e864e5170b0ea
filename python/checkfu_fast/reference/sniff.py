"""``auto``: which dialect a parsed line decides, if any. Mirror of ``rust/sniff.rs``.

Lines are held (at most ``AUTO_HOLD_LINES`` lines or ``AUTO_HOLD_BYTES`` bytes of raw text)
until one decides; with none, the stream is normalized as ``FALLBACK`` and a
``status/dialect_fallback`` event says so.
"""

from __future__ import annotations

from typing import Any

AUTO_HOLD_LINES = 64
AUTO_HOLD_BYTES = 1 << 20
FALLBACK = "claude"

_CODEX_PREFIXES = ("thread.", "turn.", "item.")
_CLAUDE_ONLY_TYPES = ("stream_event", "rate_limit_event", "conversation_reset")
_CURSOR_ONLY_TYPES = ("tool_call", "thinking")


def sniff(v: Any) -> str | None:
    """The dialect this parsed line proves, or None when it proves none."""
    if not isinstance(v, dict):
        return None
    t = v.get("type")
    if isinstance(t, str):
        if t.startswith(_CODEX_PREFIXES) or t == "session.created":
            return "codex"
        if t in _CURSOR_ONLY_TYPES or "model_call_id" in v:
            return "cursor"
        if t in _CLAUDE_ONLY_TYPES or "uuid" in v or "parent_tool_use_id" in v:
            return "claude"
        if t == "system" and v.get("subtype") == "init":
            return "claude" if "tools" in v else "cursor"
        if t == "result":
            if "request_id" in v:
                return "cursor"
            if "total_cost_usd" in v or "modelUsage" in v or "num_turns" in v:
                return "claude"
        return _mapped(v)
    if isinstance(v.get("msg"), dict) and "id" in v:
        return "codex"
    if "model" in v and ("sandbox" in v or "approval" in v or "provider" in v):
        return "codex"
    return _mapped(v)


def _mapped(v: dict[str, Any]) -> str | None:
    """The built-in mapping files' own ``sniff`` conditions, in DIALECTS order."""
    from . import mapping
    from .dialects import BUILTIN_MAPPED

    for name, d in BUILTIN_MAPPED.items():
        if mapping.sniffs(d.mapping, v):
            return name
    return None
