"""Events as a Dask DataFrame, for log sets that outgrow one machine (optional extra ``dask``).

``read_events(paths, dialect="auto")`` gives one row per event of every file (directories are
walked by the rule of :mod:`checkfu_fast.paths`), the same rows, in the same order, as
:func:`events_frame` of :func:`checkfu_fast.normalize` of each file, with a ``source`` column
(the file's path). Partitions: one per file, and a file larger than ``split_bytes`` is cut at
newlines into byte ranges of about that size, one partition each (the range logic of
``normalize_files``, rust/split.rs: nothing but the dialect crosses a cut; range 0 is
normalized as the stream's head, every later range with the dialect the head decided).
``seq`` runs on across the ranges of a file: the graph holds each range's event count, and a
range's partition adds the counts of the ranges before it (all in one graph, so each range is
normalized once per compute).

The split plan (the cut offsets, and the dialect ``auto`` decides from the head) is made on the
client when ``read_events`` is called: the client and the workers must see the same files.
Workers read only their byte range.

Columns (:data:`COLUMNS`): the event fields ``v seq position dialect kind subtype role text``
and the common extras ``nativeType nativeId sessionId messageId modelCallId``; ``tool_name``;
``tool_arguments``, ``usage``, ``error`` and ``parsed`` as JSON text (``json.loads`` gives the
event's value); ``raw``; ``extra``, every other key of the event as one JSON object text (None
when there is none); ``source``. :func:`event_of_row` turns a row back into the event dict.
(These columns are built from ``normalize`` dicts; the Arrow path of issue 13 will replace the
builder when it lands.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from . import _native
from . import paths as _paths
from .reference import MappedDialect, check_options

if TYPE_CHECKING:  # pragma: no cover
    import dask.dataframe as dd

# pandas ships no type information here (no pandas-stubs): frames are typed Any
Frame = Any

__all__ = ["COLUMNS", "SPLIT_BYTES", "event_of_row", "events_frame", "read_events"]

#: The range size a file is cut into (partitions of about this many input bytes).
SPLIT_BYTES = 32 << 20

_PLAIN = ("v", "seq", "position", "dialect", "kind", "subtype", "role", "text")
_EXTRAS = ("nativeType", "nativeId", "sessionId", "messageId", "modelCallId")
_JSON = ("usage", "error")
COLUMNS = (
    *_PLAIN,
    *_EXTRAS,
    "tool_name",
    "tool_arguments",
    *_JSON,
    "raw",
    "parsed",
    "extra",
    "source",
)
_INTS = ("seq", "position")
_KNOWN = frozenset((*_PLAIN, *_EXTRAS, *_JSON, "tool", "raw", "parsed"))


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _row(ev: dict[str, Any], source: str) -> list[Any]:
    tool = ev.get("tool")
    rest = {k: v for k, v in ev.items() if k not in _KNOWN}
    if tool is not None and set(tool) - {"name", "arguments"}:  # pragma: no cover - not in v1
        rest["tool"] = tool
    return [
        *(ev.get(k) for k in _PLAIN),
        *(ev.get(k) for k in _EXTRAS),
        tool["name"] if tool is not None else None,
        _json(tool["arguments"]) if tool is not None and "arguments" in tool else None,
        *(_json(ev[k]) if k in ev else None for k in _JSON),
        ev["raw"],
        _json(ev["parsed"]),
        _json(rest) if rest else None,
        source,
    ]


def events_frame(events: Sequence[dict[str, Any]], source: str | None = None) -> Frame:
    """The rows of ``events`` (dicts of :func:`checkfu_fast.normalize`), columns
    :data:`COLUMNS`: ``seq`` and ``position`` int64, the others object (str or None)."""
    import pandas as pd  # type: ignore[import-untyped]

    rows = [_row(ev, source or "") for ev in events]
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    data = {
        name: pd.Series(list(col), dtype="int64" if name in _INTS else object)
        for name, col in zip(COLUMNS, cols, strict=True)
    }
    return pd.DataFrame(data, columns=list(COLUMNS))


def event_of_row(row: dict[str, Any]) -> dict[str, Any]:
    """The event dict a row was made from (without ``source``), keys in the dict's order up to
    the extras (which follow the known fields)."""
    ev: dict[str, Any] = {}
    for k in (*_PLAIN, *_EXTRAS):
        v = row[k]
        if k in _INTS:
            ev[k] = int(v)
        elif v is not None or k in ("v", "dialect", "kind", "subtype"):
            ev[k] = v
    if row["tool_name"] is not None:
        tool: dict[str, Any] = {"name": row["tool_name"]}
        if row["tool_arguments"] is not None:
            tool["arguments"] = json.loads(row["tool_arguments"])
        ev["tool"] = tool
    for k in _JSON:
        if row[k] is not None:
            ev[k] = json.loads(row[k])
    ev["raw"] = row["raw"]
    ev["parsed"] = json.loads(row["parsed"])
    if row["extra"] is not None:
        ev.update(json.loads(row["extra"]))
    return ev


def _dialect_arg(dialect: Any) -> Any:
    """What a worker can rebuild: a name, or ("mapping", source text) (a compiled mapping is
    not picklable)."""
    if isinstance(dialect, MappedDialect):
        return ("mapping", dialect.source)
    return dialect


def _native_dialect(d: Any) -> Any:
    if isinstance(d, tuple):
        return _native.Mapping(d[1])
    return d


def _partition(
    path: str,
    start: int,
    end: int,
    dialect: Any,
    last: bool,
    budgets: tuple[int, int, int],
) -> Frame:
    """One range's rows, ``seq`` from 0 within the range."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    events = _native._normalize_range(data, _native_dialect(dialect), start, last, *budgets)
    return events_frame(events, path)


def _count(frame: Frame) -> int:
    return len(frame)


def _shift(frame: Frame, *before: int) -> Frame:
    base = sum(before)
    if base:
        frame = frame.assign(seq=frame["seq"] + base)
    return frame


def read_events(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    dialect: str | MappedDialect = "auto",
    *,
    split_bytes: int = SPLIT_BYTES,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> dd.DataFrame:
    """The events of files (and directories of them) as a lazy Dask DataFrame: one partition
    per file or per byte range of a large file (see the module doc). Rows equal
    :func:`events_frame` of :func:`checkfu_fast.normalize` of each file's bytes, in file order,
    with ``source`` the file's path."""
    import dask.dataframe as dd
    from dask.delayed import delayed

    if _native is None:  # pragma: no cover
        raise RuntimeError("checkfu_fast.dask needs the native core")
    check_options(dialect, max_line_bytes, max_depth, max_nodes)
    if isinstance(split_bytes, bool) or not isinstance(split_bytes, int) or split_bytes < 1:
        raise ValueError(f"split_bytes must be a positive int, got {split_bytes!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = _paths.expand(paths)
    budgets = (max_line_bytes, max_depth, max_nodes)
    arg = _dialect_arg(dialect)
    native = _native_dialect(arg)
    parts = []
    for path in files:
        ranges, resume = _native._split_plan(path, native, split_bytes, *budgets)
        counts: list[Any] = []
        for k, (start, end) in enumerate(ranges):
            d = arg if k == 0 or dialect != "auto" else resume
            last = k + 1 == len(ranges)
            frame = delayed(_partition, pure=True)(path, start, end, d, last, budgets)
            parts.append(delayed(_shift, pure=True)(frame, *counts))
            counts.append(delayed(_count, pure=True)(frame))
    meta = events_frame([])
    if not parts:
        return cast("dd.DataFrame", dd.from_pandas(meta, npartitions=1))  # type: ignore[no-untyped-call]
    return cast("dd.DataFrame", dd.from_delayed(parts, meta=meta, verify_meta=False))
