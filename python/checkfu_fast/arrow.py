"""Arrow rows back to events, and Parquet output (docs/arrow.md).

:func:`row_to_event` is the documented inverse of the column mapping of
:func:`checkfu_fast.normalize_arrow`: for a row as a dict (``pyarrow.Table.to_pylist()``) it
gives exactly the event dict ``normalize()`` gives, keys in the same order. Only
:func:`write_parquet` needs pyarrow (the ``arrow`` extra); this module imports without it.
"""

from __future__ import annotations

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


def row_to_event(row: Row) -> Event:
    """The event dict of one row (columns named as in docs/arrow.md; ``source`` is ignored)."""
    ev: Event = {
        "v": row["v"],
        "seq": row["seq"],
        "position": row["position"],
        "dialect": row["dialect"],
        "kind": row["kind"],
        "subtype": row["subtype"],
    }
    if row["role"] is not None:
        ev["role"] = row["role"]
    if row["text"] is not None:
        ev["text"] = row["text"]
    if row["tool_name"] is not None:
        tool: dict[str, Any] = {"name": row["tool_name"]}
        if row["tool_arguments"] is not None:
            tool["arguments"] = json.loads(row["tool_arguments"])
        if row["tool_id"] is not None:
            tool["id"] = row["tool_id"]
        if row["tool_is_error"] is not None:
            tool["isError"] = row["tool_is_error"]
        ev["tool"] = tool
    if row["error_code"] is not None:
        ev["error"] = {
            "code": row["error_code"],
            "message": row["error_message"],
            "errorKind": row["error_kind"],
        }
    if row["retry_at"] is not None:
        ev["retryAt"] = row["retry_at"]
    if row["retry_after_ms"] is not None:
        ev["retryAfterMs"] = row["retry_after_ms"]
    if row["usage_model"] is not None:
        if row["usage_json"] is not None:
            ev["usage"] = json.loads(row["usage_json"])
        else:
            usage: dict[str, Any] = {}
            for col, key in (
                ("usage_input_tokens", "inputTokens"),
                ("usage_output_tokens", "outputTokens"),
                ("usage_cached_tokens", "cachedTokens"),
                ("usage_cost_usd", "costUsd"),
            ):
                if row[col] is not None:
                    usage[key] = row[col]
            usage["model"] = row["usage_model"]
            if row["usage_unknown"]:
                usage["unknown"] = True
            ev["usage"] = usage
    if row["usage_scope"] is not None:
        ev["usageScope"] = row["usage_scope"]
    if row["message_id"] is not None:
        ev["messageId"] = row["message_id"]
    if row["delta"]:
        ev["delta"] = True
    if row["line_bytes"] is not None:
        ev["truncated"] = True
        ev["lineBytes"] = row["line_bytes"]
    if row["encoding"] is not None:
        ev["encoding"] = row["encoding"]
    if row["stream_bytes"] is not None:
        ev["streamBytes"] = row["stream_bytes"]
    if row["tool_class"] is not None:
        ev["toolClass"] = row["tool_class"]
    if row["provider_tool_name"] is not None:
        ev["providerToolName"] = row["provider_tool_name"]
    if row["provider_arguments"] is not None:
        ev["providerArguments"] = json.loads(row["provider_arguments"])
    if row["tool_result"] is not None:
        ev["toolResult"] = json.loads(row["tool_result"])
    if row["file_changes"] is not None:
        ev["fileChanges"] = json.loads(row["file_changes"])
    if row["subagent_id"] is not None:
        sub: dict[str, Any] = {"id": row["subagent_id"], "phase": row["subagent_phase"]}
        for col, key in (
            ("subagent_name", "name"),
            ("subagent_type", "type"),
            ("subagent_description", "description"),
            ("subagent_prompt", "prompt"),
            ("subagent_disposition", "disposition"),
            ("subagent_alias", "alias"),
        ):
            if row[col] is not None:
                sub[key] = row[col]
        ev["subagent"] = sub
    if row["tokens_before"] is not None:
        ev["tokensBefore"] = json.loads(row["tokens_before"])
    if row["tokens_after"] is not None:
        ev["tokensAfter"] = json.loads(row["tokens_after"])
    if row["retry"]:
        ev["retry"] = True
    if row["delta_only"]:
        ev["deltaOnly"] = True
    if row["reasoning_tokens_json"] is not None:
        ev["reasoningTokens"] = json.loads(row["reasoning_tokens_json"])
    elif row["reasoning_tokens"] is not None:
        ev["reasoningTokens"] = row["reasoning_tokens"]
    for col, key in (("empty_result", "emptyResult"), ("answer", "answer")):
        if row[col]:
            ev[key] = True
    if row["partial_arguments"] is not None:
        ev["partialArguments"] = row["partial_arguments"]
    if row["continuation"]:
        ev["continuation"] = True
    for col, key in (
        ("session_id", "sessionId"),
        ("timestamp", "timestamp"),
        ("parent_tool_use_id", "parentToolUseId"),
        ("native_type", "nativeType"),
        ("model_call_id", "modelCallId"),
        ("native_id", "nativeId"),
        ("stop_reason", "stopReason"),
    ):
        if row[col] is not None:
            ev[key] = row[col]
    if row["duration_ms"] is not None:
        ev["durationMs"] = json.loads(row["duration_ms"])
    if row["has_result_text"]:
        ev["resultText"] = row["result_text"]
    if row["structured_output"] is not None:
        ev["structuredOutput"] = json.loads(row["structured_output"])
    for col, key in (
        ("repeats_error", "repeatsError"),
        ("partial", "partial"),
        ("result_joins_messages", "resultJoinsMessages"),
    ):
        if row[col]:
            ev[key] = True
    for col, key in (("request_id", "requestId"), ("agent_id", "agentId")):
        if row[col] is not None:
            ev[key] = row[col]
    if row["sidechain"]:
        ev["sidechain"] = True
    if row["repaired_surrogates"] is not None:
        ev["repairedSurrogates"] = row["repaired_surrogates"]
    ev["raw"] = row["raw"]
    ev["parsed"] = _json(row["parsed"])
    return ev


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


def _file_batches(path: str, dialect: Any, budgets: tuple[int, int, int]) -> Iterator[Any]:
    """The pyarrow record batches of one file, read :data:`READ_CHUNK` bytes at a time (gzip
    and zstd decompressed as read); ``seq`` from 0. The core builds each chunk's batches with the
    GIL released."""
    pa, _ = _pyarrow()
    from . import Normalizer
    from .inputs import open_input

    n = Normalizer(dialect, max_line_bytes=budgets[0], max_depth=budgets[1], max_nodes=budgets[2])
    with open_input(path) as f:  # gzip/zstd session files decompressed as they are read
        while True:
            chunk = f.read(READ_CHUNK)
            events = n.feed_arrow(chunk) if chunk else n.finish_arrow()
            yield from pa.RecordBatchReader.from_stream(events)
            if not chunk:
                return


def write_parquet(
    paths: Sequence[str],
    out: str,
    *,
    dialect: Any = "auto",
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> int:
    """:func:`checkfu_fast.write_parquet` (arguments already checked)."""
    pa, pq = _pyarrow()
    rows = 0
    writer: Any = None
    budgets = (max_line_bytes, max_depth, max_nodes)
    try:
        for p in paths:
            for batch in _file_batches(p, dialect, budgets):
                source = pa.array([p] * batch.num_rows, type=pa.large_string())
                tagged = pa.RecordBatch.from_arrays(
                    [*batch.columns, source],
                    schema=batch.schema.append(pa.field(SOURCE, pa.large_string(), False)),
                )
                if writer is None:
                    writer = pq.ParquetWriter(out, tagged.schema)
                writer.write_batch(tagged)
                rows += tagged.num_rows
        if writer is None:
            schema = events_schema().append(pa.field(SOURCE, pa.large_string(), False))
            writer = pq.ParquetWriter(out, schema)
    finally:
        if writer is not None:
            writer.close()
    return rows


def write_table_file(
    path: str, out: str, fmt: str, dialect: Any, budgets: tuple[int, int, int]
) -> None:
    """One input's events into ``out``: a Parquet file (``fmt="parquet"``) or an Arrow IPC file
    (``"arrow"``, ``pyarrow.ipc.open_file`` reads it), the columns of
    :func:`checkfu_fast.normalize_arrow`, written batch by batch (memory bounded by
    :data:`READ_CHUNK`). On failure a partial ``out`` it began is removed and the error raised."""
    pa, pq = _pyarrow()

    def open_writer(schema: Any) -> Any:
        return pq.ParquetWriter(out, schema) if fmt == "parquet" else pa.ipc.new_file(out, schema)

    writer: Any = None
    try:
        for batch in _file_batches(path, dialect, budgets):
            if writer is None:
                writer = open_writer(batch.schema)
            writer.write_batch(batch)
        if writer is None:
            writer = open_writer(events_schema())
        writer.close()
    except BaseException:
        if writer is not None:  # the partial file is ours: remove it
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(OSError):
                os.unlink(out)
        raise


def events_schema() -> Any:
    """The pyarrow schema of :func:`checkfu_fast.normalize_arrow` (needs pyarrow)."""
    import pyarrow as pa

    from . import normalize_arrow

    return pa.schema(normalize_arrow(b""))
