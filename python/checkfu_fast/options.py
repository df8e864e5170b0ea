"""The options every path checks the same way, without importing a dialect: the dialect names,
the budgets' bounds, the event field table's order (the core declares the same table:
``rust/fields.rs``) and the ``fields`` projections.

The package's functions check their arguments here before calling the core, so a first call
does not import the pure-Python twin (``checkfu_fast.reference``, about half the package's
import time); the twin imports the same names from here (one source for both paths).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from .errors import DialectNotImplemented, InvalidOption, UnknownDialect

__all__ = [
    "ALWAYS_FIELDS",
    "DIALECTS",
    "EVENT_FIELDS",
    "MAX_DEPTH_LIMIT",
    "TREE_FIELDS",
    "check_options",
    "resolve_fields",
]

#: The dialects by name, in the order the errors list them.
DIALECTS = ("claude", "cursor", "codex", "north", "pi", "grok", "canary", "opencode", "solweb")

MAX_DEPTH_LIMIT = 512

_ORDER = (
    "role", "text", "tool", "error",
    "retryAt", "retryAfterMs",
    "usage", "usageScope", "messageId", "delta",
    "truncated", "lineBytes", "encoding", "streamBytes",
    "toolClass", "providerToolName", "providerArguments", "toolResult", "fileChanges",
    "subagent", "tokensBefore", "tokensAfter", "retry", "deltaOnly",
    "reasoningTokens", "cacheWriteTokens", "cacheWrite1hTokens", "speed", "rateLimits",
    "emptyResult", "answer", "partialArguments", "continuation",
    "controlRequestId", "controlResponse", "backgroundTasks", "requiresAction",
)  # fmt: skip
# line-level extras, after ``nativeType`` (docs/events.md)
_LINE_ORDER = (
    "modelCallId", "nativeId", "stopReason", "durationMs", "resultText", "structuredOutput",
    "repeatsError", "partial", "resultJoinsMessages", "requestId", "agentId", "sidechain", "cwd",
)  # fmt: skip
# line-level fields before ``nativeType``, in this order
_LINE_HEAD = ("sessionId", "timestamp", "parentToolUseId")

#: Every event field in output order (the core declares the same table: ``rust/fields.rs``;
#: a test holds the two and docs/events.md together).
EVENT_FIELDS: tuple[str, ...] = (
    ("v", "seq", "position", "dialect", "kind", "subtype", *_ORDER, *_LINE_HEAD, "nativeType",
     *_LINE_ORDER, "repairedSurrogates", "raw", "parsed")
)  # fmt: skip
#: Fields every projection keeps.
ALWAYS_FIELDS = ("v", "seq", "position", "dialect", "kind", "subtype")
#: Fields whose values are JSON trees: a projection's JSONL writes them as the JSON text of
#: their value (one JSON type per key across a file). ``tool.arguments`` too.
TREE_FIELDS = frozenset(
    {
        "providerArguments",
        "toolResult",
        "controlResponse",
        "backgroundTasks",
        "requiresAction",
        "structuredOutput",
        "parsed",
    }
)


def resolve_fields(fields: Any) -> tuple[str, ...] | None:
    """The fields a ``fields`` argument names, in output order, or None for every field:
    ``None`` or ``"all"``; ``"lean"`` (all but ``raw`` and ``parsed``); or field names
    (:data:`ALWAYS_FIELDS` always kept). An unknown name is an ``InvalidOption`` (a
    ``ValueError``) naming the valid ones."""
    if fields is None or fields == "all":
        return None
    if fields == "lean":
        return tuple(f for f in EVENT_FIELDS if f not in ("raw", "parsed"))
    if isinstance(fields, str):
        raise InvalidOption(
            'fields must be None, "all", "lean" or a list of field names, '
            f"not the string {fields!r}"
        )
    try:
        names = list(fields)
    except TypeError:
        raise TypeError(
            f"fields must be None, a string or a list of field names, not {type(fields).__name__}"
        ) from None
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"field names must be str, not {type(n).__name__}")
        if n not in EVENT_FIELDS:
            raise InvalidOption(
                f"unknown event field {n!r}; valid fields: {', '.join(EVENT_FIELDS)}"
            )
    keep = set(names) | set(ALWAYS_FIELDS)
    if keep >= set(EVENT_FIELDS):
        return None
    return tuple(f for f in EVENT_FIELDS if f in keep)


def check_options(
    dialect: Any,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    implemented: Container[str] = DIALECTS,
) -> None:
    """Validate arguments exactly as the native module does (same exceptions, same text).
    ``dialect`` is a name or a :class:`checkfu_fast.reference.MappedDialect` (any loaded mapping
    is a valid dialect); ``implemented``: the names the caller's path implements (the core: all
    of them; the twin passes its table)."""
    if not isinstance(dialect, str):
        # a mapping was loaded through the twin, so importing its class costs nothing then
        from .reference.dialects import MappedDialect

        if not isinstance(dialect, MappedDialect):
            raise TypeError("dialect must be a str or a dialect from load_dialect()")
        dialect = "auto"
    if dialect != "auto" and dialect not in DIALECTS:
        raise UnknownDialect(
            f"unknown dialect {dialect!r}; expected one of: auto, {', '.join(DIALECTS)}"
        )
    if dialect != "auto" and dialect not in implemented:
        raise DialectNotImplemented(f"dialect {dialect!r} is not implemented yet")
    for name, value, low, high in (
        ("max_line_bytes", max_line_bytes, 1, 1 << 40),
        ("max_depth", max_depth, 1, MAX_DEPTH_LIMIT),
        ("max_nodes", max_nodes, 1, 1 << 40),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int")
        if not low <= value <= high:
            raise InvalidOption(f"{name} must be between {low} and {high}, got {value}")
