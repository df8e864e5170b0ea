"""checkfu_fast: coding-agent CLI output -> clean, typed, validated events/v1 events.

``normalize`` and ``Normalizer`` run on the Rust core (``checkfu_fast._native``);
``checkfu_fast.reference`` is the pure-Python twin with identical behaviour. If the native module
cannot be imported the package falls back to the reference and says so in ``IMPLEMENTATION``.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

from . import reference
from .audit import audit, audit_files
from .errors import (
    CheckfuError,
    DialectNotImplemented,
    InvalidOption,
    MappingError,
    UnknownDialect,
)
from .reference import DIALECTS, MappedDialect, check_options, load_dialect
from .usage import UsageFold, usage_totals

try:
    from . import _native
except ImportError as exc:  # pragma: no cover - exercised only on a broken install
    _native = None  # type: ignore[assignment]
    IMPLEMENTATION = "reference"
    warnings.warn(
        f"checkfu_fast: native core unavailable ({exc}); using the pure-Python reference",
        RuntimeWarning,
        stacklevel=2,
    )
else:
    IMPLEMENTATION = "native"

__version__ = "0.1.0"
__all__ = [
    "DIALECTS",
    "IMPLEMENTATION",
    "CheckfuError",
    "DialectNotImplemented",
    "InvalidOption",
    "MappedDialect",
    "MappingError",
    "Normalizer",
    "UnknownDialect",
    "UsageFold",
    "audit",
    "audit_files",
    "load_dialect",
    "normalize",
    "reference",
    "usage_totals",
    "validate_journal",
]

Event = dict[str, Any]


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes or str, not {type(data).__name__}")


def _native_dialect(dialect: str | MappedDialect) -> Any:
    """The argument the native core takes: a name, or the mapping compiled once by Rust."""
    if not isinstance(dialect, MappedDialect):
        return dialect
    if dialect.native_handle is None:
        dialect.native_handle = _native.Mapping(dialect.source)
    return dialect.native_handle


def normalize(
    data: bytes | str,
    dialect: str | MappedDialect = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> list[Event]:
    """Normalize a whole stream to events/v1 events (plain dicts, in order)."""
    check_options(dialect, max_line_bytes, max_depth, max_nodes)
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        return reference.normalize(
            raw, dialect, max_line_bytes=max_line_bytes, max_depth=max_depth, max_nodes=max_nodes
        )
    return _native.normalize(raw, _native_dialect(dialect), max_line_bytes, max_depth, max_nodes)


class Normalizer:
    """Incremental normalizer: ``feed(chunk)`` as bytes arrive, then ``finish()``.

    Any chunking of the same bytes gives the same events (a chunk may end anywhere). Safe to
    share between threads: concurrent calls are serialized (each chunk is framed whole, in the
    order the calls got the lock). If memory runs out, ``MemoryError`` is raised (never an abort)
    and later calls raise ``ValueError``: the stream state is lost.
    """

    def __init__(
        self,
        dialect: str | MappedDialect = "auto",
        *,
        max_line_bytes: int = 64 << 20,
        max_depth: int = 64,
        max_nodes: int = 1_000_000,
    ) -> None:
        check_options(dialect, max_line_bytes, max_depth, max_nodes)
        if _native is None:  # pragma: no cover
            self._inner: Any = reference.Normalizer(
                dialect, max_line_bytes=max_line_bytes, max_depth=max_depth, max_nodes=max_nodes
            )
        else:
            self._inner = _native.Normalizer(
                _native_dialect(dialect), max_line_bytes, max_depth, max_nodes
            )

    def feed(self, chunk: bytes) -> list[Event]:
        """Frame and normalize ``chunk``; returns the events of the lines it completed."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"chunk must be bytes, not {type(chunk).__name__}")
        return cast(list[Event], self._inner.feed(bytes(chunk)))

    def finish(self) -> list[Event]:
        """End of stream: events of the last line (if it had no LF). Idempotent."""
        return cast(list[Event], self._inner.finish())


def validate_journal(
    data: bytes | str,
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> list[dict[str, Any]]:
    """Every violation in a runner journal (JSONL of the events schema's ``$defs`` records).

    Each violation is ``{"line", "position", "kind", "pointer", "keyword", "message"}``; an
    empty list means every record is valid. Unknown kinds are violations with keyword
    ``unknown_kind`` (reported, not fatal). See docs/journal.md.
    """
    check_options("auto", max_line_bytes, max_depth, max_nodes)
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        return reference.validate_journal(
            raw, max_line_bytes=max_line_bytes, max_depth=max_depth, max_nodes=max_nodes
        )
    return _native.validate_journal(raw, max_line_bytes, max_depth, max_nodes)
