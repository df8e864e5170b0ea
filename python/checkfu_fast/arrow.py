"""Arrow rows back to events, and Parquet output (docs/arrow.md).

:func:`row_to_event` is the documented inverse of the column mapping of
:func:`checkfu_fast.normalize_arrow`: for a row as a dict (``pyarrow.Table.to_pylist()``) it
gives exactly the event dict ``normalize()`` gives, keys in the same order. Only
:func:`write_parquet` needs pyarrow (the ``arrow`` extra); this module imports without it.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

Row = dict[str, Any]
Event = dict[str, Any]

__all__ = ["SOURCE", "row_to_event", "rows_to_events", "write_parquet", "write_table_file"]

#: The column :func:`write_parquet` adds after the event columns: the input path as given.
SOURCE = "source"
#: Bytes :func:`write_parquet` reads per step (its memory is about this chunk's events).
READ_CHUNK = 16 << 20


def _json(cell: str | None) -> Any:
    return json.loads(cell) if cell is not None else None


_ABSENT = object()


def _cell(row: Row, ty: str, col: str, sub: Any) -> Any:
    """One field's value from its columns (docs/arrow.md), or ``_ABSENT``."""
    if ty == "object":  # every object has a field that is always there (name, code, model, id)
        obj: dict[str, Any] = {}
        for name, sty, scol, ssub in sub:
            v = _cell(row, sty, scol, ssub)
            if v is not _ABSENT:
                obj[name] = v
        return obj or _ABSENT
    if ty in ("int", "float"):
        exact = row.get(f"{col}_json")
        if exact is not None:
            return json.loads(exact)
        v = row.get(col)
        return _ABSENT if v is None else v
    if ty == "time":
        v = row.get(f"{col}_text")
        return _ABSENT if v is None else v
    if ty == "optstr":
        return row[col] if row.get(f"has_{col}") else _ABSENT
    if ty == "flag":
        return True if row.get(col) else _ABSENT
    if ty == "parsed":
        return _json(row.get(col))
    v = row.get(col)
    if v is None:
        return _ABSENT
    return json.loads(v) if ty in ("json", "list") else v


def _first_column(ty: str, col: str, sub: Any) -> str:
    if ty == "object":
        return _first_column(*sub[0][1:])
    return f"has_{col}" if ty == "optstr" else col


def row_to_event(row: Row) -> Event:
    """The event dict of one row (columns named as in docs/arrow.md; ``source`` is ignored): a
    walk of the core's field table (``_native.FIELD_TABLE``). The row of a projection gives the
    projected event (the fields whose columns the row has)."""
    from . import _native

    ev: Event = {}
    for name, ty, col, sub in _native.FIELD_TABLE:
        if _first_column(ty, col, sub) in row:
            v = _cell(row, ty, col, sub)
            if v is not _ABSENT:
                ev[name] = v
    return ev


def stream_events(data: Any) -> Iterator[tuple[bool, Event]]:
    """The events of Arrow data (``normalize_arrow``'s result, a pyarrow ``Table`` or
    ``RecordBatchReader``, a ``pyarrow.dataset.Dataset`` of Parquet output: anything with
    ``to_batches`` or the Arrow stream interface), read batch by batch, each with whether it
    starts a new stream: a new ``source`` where the data has that column (``write_parquet``,
    ``--format parquet``, Dask frames), else ``seq`` 0. Lean or full rows alike."""
    import pyarrow as pa

    if hasattr(data, "to_batches"):
        batches: Any = data.to_batches()
    else:
        batches = pa.RecordBatchReader.from_stream(data)
    last: Any = _ABSENT
    for batch in batches:
        has_source = SOURCE in batch.schema.names
        for row in batch.to_pylist():
            if has_source:
                new = row[SOURCE] != last
                last = row[SOURCE]
            else:
                new = row.get("seq") == 0
            yield new, row_to_event(row)


def is_arrow(data: Any) -> bool:
    """Whether ``data`` is Arrow data :func:`stream_events` reads (not an iterable of dicts)."""
    return hasattr(data, "__arrow_c_stream__") or (
        hasattr(data, "to_batches") and hasattr(data, "schema")
    )


def rows_to_events(table: Any) -> Iterator[Event]:
    """The events of a pyarrow ``Table``/``RecordBatch`` (or anything with ``to_pylist``)."""
    for row in table.to_pylist():
        yield row_to_event(row)


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "writing Parquet/Arrow files needs pyarrow: pip install 'checkfu-fast[arrow]'"
        ) from exc
    return pa, pq


def _file_batches(
    path: str, dialect: Any, budgets: tuple[int, int, int], fields: Any = None, stop: Any = None
) -> Iterator[Any]:
    """The pyarrow record batches of one file, read :data:`READ_CHUNK` bytes at a time (gzip
    and zstd decompressed as read); ``seq`` from 0. The core builds each chunk's batches with the
    GIL released; ``stop`` a ``_native.CancelFlag`` set meanwhile stops it within about 64 KiB
    of input (``InterruptedError``), not at the end of the chunk."""
    pa, _ = _pyarrow()
    from . import Normalizer, _native
    from .inputs import open_input

    cancel = stop if _native is not None and isinstance(stop, _native.CancelFlag) else None

    n = Normalizer(
        dialect,
        max_line_bytes=budgets[0],
        max_depth=budgets[1],
        max_nodes=budgets[2],
        fields=fields,
    )
    with open_input(path) as f:  # gzip/zstd session files decompressed as they are read
        while True:
            chunk = f.read(READ_CHUNK)
            events = n._inner.feed_arrow(chunk, 65536, cancel) if chunk else n.finish_arrow()
            yield from pa.RecordBatchReader.from_stream(events)
            if not chunk:
                return


def source_column(pa: Any, name: str, rows: int) -> Any:
    """The ``source`` column of a batch: ``name`` on ``rows`` rows, as a ``large_string`` array
    built from its buffers (``pa.array`` or ``pa.scalar`` on Python strings imports pandas when
    it is installed: ~50 MiB of resident memory for a column of one repeated path)."""
    data = name.encode("utf-8")
    size = len(data)
    ends = range(0, (rows + 1) * size, size) if size else [0] * (rows + 1)
    offsets = array.array("q", ends)
    return pa.Array.from_buffers(
        pa.large_string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data * rows)]
    )


def write_parquet(
    paths: Sequence[str],
    out: str,
    *,
    dialect: Any = "auto",
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: Any = None,
) -> int:
    """:func:`checkfu_fast.write_parquet` (arguments already checked)."""
    pa, pq = _pyarrow()
    rows = 0
    writer: Any = None
    budgets = (max_line_bytes, max_depth, max_nodes)
    try:
        for p in paths:
            for batch in _file_batches(p, dialect, budgets, fields):
                source = source_column(pa, p, batch.num_rows)
                tagged = pa.RecordBatch.from_arrays(
                    [*batch.columns, source],
                    schema=batch.schema.append(pa.field(SOURCE, pa.large_string(), False)),
                )
                if writer is None:
                    writer = pq.ParquetWriter(out, tagged.schema)
                writer.write_batch(tagged)
                rows += tagged.num_rows
        if writer is None:
            schema = events_schema(fields).append(pa.field(SOURCE, pa.large_string(), False))
            writer = pq.ParquetWriter(out, schema)
    finally:
        if writer is not None:
            writer.close()
    return rows


class Interrupted(Exception):
    """A table file abandoned because its ``normalize_files`` call was interrupted."""


def write_table_file(
    path: str,
    out: str,
    fmt: str,
    dialect: Any,
    budgets: tuple[int, int, int],
    fields: Any = None,
    *,
    stop: Any = None,
) -> None:
    """One input's events into ``out``: a Parquet file (``fmt="parquet"``) or an Arrow IPC file
    (``"arrow"``, ``pyarrow.ipc.open_file`` reads it), the columns of
    :func:`checkfu_fast.normalize_arrow`, written batch by batch (memory bounded by
    :data:`READ_CHUNK`). On failure a partial ``out`` it began is removed and the error raised;
    ``stop`` (anything with ``is_set()``) set: the same at the next batch (``Interrupted``), or
    within about 64 KiB of input when it is a ``_native.CancelFlag`` (``InterruptedError``)."""
    pa, pq = _pyarrow()

    def open_writer(schema: Any) -> Any:
        return pq.ParquetWriter(out, schema) if fmt == "parquet" else pa.ipc.new_file(out, schema)

    writer: Any = None
    try:
        for batch in _file_batches(path, dialect, budgets, fields, stop):
            if stop is not None and stop.is_set():
                raise Interrupted(f"{path}: stopped (the call was interrupted)")
            if writer is None:
                writer = open_writer(batch.schema)
            writer.write_batch(batch)
        if writer is None:
            writer = open_writer(events_schema(fields))
        writer.close()
    except BaseException:
        if writer is not None:  # the partial file is ours: remove it
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(OSError):
                os.unlink(out)
        raise


def events_schema(fields: Any = None) -> Any:
    """The pyarrow schema of :func:`checkfu_fast.normalize_arrow` (needs pyarrow)."""
    import pyarrow as pa

    from . import normalize_arrow

    return pa.schema(normalize_arrow(b"", fields=fields))
