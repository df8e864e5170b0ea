"""Events as a Dask DataFrame, for log sets that outgrow one machine (optional extra ``dask``).

``read_events(paths, dialect="auto")`` gives one row per event of every file (directories are
walked by the rule of :mod:`checkfu_fast.paths`), the same rows, in the same order, as
:func:`events_frame` of :func:`checkfu_fast.normalize_arrow` of each file, with a ``source``
column (the file's path): the columns of docs/arrow.md, Arrow-backed pandas dtypes
(``pandas.ArrowDtype``, so integers stay exact and nulls stay nulls).
:func:`checkfu_fast.arrow.row_to_event` turns a row back into the event dict.

Partitions: one per file, and a file larger than ``split_bytes`` is cut at newlines into byte
ranges of about that size, one partition each (the range logic of ``normalize_files``,
rust/split.rs: nothing but the dialect and its context crosses a cut; range 0 is normalized as
the stream's head, every later range resumed at its offset with the dialect the head decided and
the context at the cut (the model a codex rollout's last ``turn_context`` before it names),
built by the core as Arrow batches). ``seq`` runs on across the ranges of a file: the graph
holds each range's event count, and a range's partition adds the counts of the ranges before it
(all in one graph, so each range is normalized once per compute).

The split plan (the cut offsets, the dialect ``auto`` decides from the head, and the context at
each cut) is made on the client when ``read_events`` is called: the client and the workers must
see the same files. Workers read only their byte range.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from . import _native
from . import paths as _paths
from .options import check_options, resolve_fields
from .reference import MappedDialect

if TYPE_CHECKING:  # pragma: no cover
    import dask.dataframe as dd

# pandas ships no type information here (no pandas-stubs): frames are typed Any
Frame = Any

__all__ = ["SPLIT_BYTES", "columns", "events_frame", "read_events", "usage_totals"]

#: The range size a file is cut into (partitions of about this many input bytes).
SPLIT_BYTES = 32 << 20


def columns(fields: Any = None) -> list[str]:
    """The columns of every partition: those of ``normalize_arrow`` (of the projection
    ``fields``), then ``source``."""
    keep = resolve_fields(fields)
    return [*_native.arrow_columns(None if keep is None else list(keep)), "source"]


def events_frame(batches: Any, source: str) -> Frame:
    """A pandas frame of Arrow event batches (``normalize_arrow``'s result, or anything
    ``pyarrow.table`` takes) with a ``source`` column; Arrow-backed dtypes."""
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa

    table = pa.table(batches)
    table = table.append_column(
        "source", pa.array([source] * table.num_rows, type=pa.large_string())
    )
    return table.to_pandas(types_mapper=pd.ArrowDtype)


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
    fields: list[str] | None = None,
    context: tuple[str | None, str | None] | None = None,
) -> Frame:
    """One range's rows, ``seq`` from 0 within the range (``context``: the dialect context at
    its start, from the plan)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    batches = _native._normalize_range_arrow(
        data, _native_dialect(dialect), start, last, *budgets, 65536, fields, context
    )
    return events_frame(batches, path)


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
    fields: str | Sequence[str] | None = None,
) -> dd.DataFrame:
    """The events of files (and directories of them) as a lazy Dask DataFrame: one partition
    per file or per byte range of a large file (see the module doc). Rows equal
    :func:`events_frame` of :func:`checkfu_fast.normalize_arrow` of each file's bytes, in file
    order, with ``source`` the file's path. ``fields`` as in :func:`checkfu_fast.normalize`
    (``"lean"``: no ``raw``/``parsed`` columns, never computed)."""
    import dask.dataframe as dd
    from dask.delayed import delayed

    if _native is None:  # pragma: no cover
        raise RuntimeError("checkfu_fast.dask needs the native core")
    check_options(dialect, max_line_bytes, max_depth, max_nodes)
    resolved = resolve_fields(fields)
    keep = None if resolved is None else list(resolved)
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
        ranges, resume, contexts = _native._split_plan(path, native, split_bytes, *budgets)
        counts: list[Any] = []
        for k, (start, end) in enumerate(ranges):
            d = arg if k == 0 or dialect != "auto" else resume
            last = k + 1 == len(ranges)
            frame = delayed(_partition, pure=True)(
                path, start, end, d, last, budgets, keep, contexts[k]
            )
            parts.append(delayed(_shift, pure=True)(frame, *counts))
            counts.append(delayed(_count, pure=True)(frame))
    meta = events_frame(_native.normalize_arrow(b"", "auto", fields=keep), "")
    if not parts:
        return cast("dd.DataFrame", dd.from_pandas(meta, npartitions=1))  # type: ignore[no-untyped-call]
    return cast("dd.DataFrame", dd.from_delayed(parts, meta=meta, verify_meta=False))


#: Columns the usage fold never reads (trees and long texts): dropped on the workers.
_NOT_FOR_USAGE = (
    "tool_arguments",
    "provider_arguments",
    "tool_result",
    "file_changes",
    "structured_output",
    "subagent_prompt",
    "partial_arguments",
    "result_text",
    "raw",
    "parsed",
)


def _usage_rows(frame: Frame) -> Frame:
    """A partition reduced to what the usage fold reads: the columns above dropped, ``text``
    kept on status rows only (a codex ``turn_context``'s model); every row stays (a row's
    ``sessionId`` or ``timestamp`` may be what a reading is attributed by)."""
    frame = frame.drop(columns=[c for c in _NOT_FOR_USAGE if c in frame.columns])
    if "text" in frame.columns:
        frame = frame.assign(text=frame["text"].where(frame["kind"] == "status"))
    return frame


def usage_totals(frame: dd.DataFrame, **options: Any) -> dict[str, Any]:
    """:func:`checkfu_fast.usage_totals` of a :func:`read_events` frame (full or lean): each
    partition is reduced on the workers to the rows and columns the fold reads
    (:func:`_usage_rows`), and the fold runs over them in file order, a new stream at each new
    ``source``, with exactly the rules of ``usage_totals`` (its deduplication across files is
    order-dependent and global, so it is one fold, not a sum of partial ones). ``options`` as
    for ``usage_totals`` (``by_day``, ``prices``, ``estimate``, ``tz``)."""
    import pyarrow as pa

    from .usage import usage_totals as fold

    reduced = frame.map_partitions(_usage_rows, meta=_usage_rows(frame._meta))  # type: ignore[no-untyped-call]
    table = pa.Table.from_pandas(reduced.compute(), preserve_index=False)
    return fold(table, **options)
