"""Stubs for the compiled core. Arguments are validated by the Python layer first.

Checked against the built module by ``python -m mypy.stubtest checkfu_fast._native`` (make lint).
pyo3 classes take their arguments in ``__new__`` and cannot be subclassed (``@final``).
"""

from collections.abc import Callable, Sequence
from typing import Any, final

from typing_extensions import Self

__all__ = [
    "DIALECTS",
    "EVENT_FIELDS",
    "FIELD_TABLE",
    "ArrowEvents",
    "CancelFlag",
    "Mapping",
    "Normalizer",
    "_StreamSummary",
    "_UsageMerge",
    "_UsageSessions",
    "__version__",
    "_fingerprints",
    "_json_indent2",
    "_normalize_files_arrow",
    "_normalize_ordered",
    "_normalize_range",
    "_normalize_range_arrow",
    "_rebase_jsonl",
    "_split_plan",
    "_stamps",
    "_usage_fold_files",
    "_usage_fold_limits",
    "_usage_fold_resume",
    "_walk",
    "_write_jsonl",
    "arrow_columns",
    "normalize",
    "normalize_arrow",
    "normalize_files",
    "normalize_jsonl",
    "parse_retry",
    "validate_journal",
]

DIALECTS: list[str]
#: Every event field in output order (rust/fields.rs).
EVENT_FIELDS: tuple[str, ...]
#: Each field as ``(name, type, Arrow column, nested table or None)`` (rust/fields.rs).
FIELD_TABLE: tuple[tuple[str, str, str, Any], ...]
__version__: str

#: A ``fields`` argument: None (every field), "all", "lean" or field names.
_Fields = str | Sequence[str] | None

@final
class Mapping:
    """A mapping-defined dialect compiled by the core (see docs/mappings.md)."""

    def __new__(cls, text: str) -> Self: ...
    @property
    def dialect(self) -> str: ...

def normalize(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
    fields: _Fields = None,
) -> list[dict[str, Any]]: ...
def normalize_jsonl(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
    fields: _Fields = None,
) -> bytes:
    """The events of ``normalize`` as JSONL, written by the core with the GIL released."""

@final
class ArrowEvents:
    """The events of one stream as Arrow record batches (docs/arrow.md); the Arrow PyCapsule
    interface. Made by ``normalize_arrow`` only."""

    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __len__(self) -> int: ...
    @property
    def num_batches(self) -> int: ...

def normalize_arrow(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
    batch_rows: int = ...,
    fields: _Fields = None,
) -> ArrowEvents:
    """The events of ``normalize`` as Arrow record batches, built with the GIL released."""

def arrow_columns(fields: _Fields = None) -> list[str]:
    """The column names of ``normalize_arrow`` (of the projection ``fields``), in order."""

def normalize_files(
    inputs: list[str],
    outputs: list[str] | None,
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None,
    tag_source: bool,
    split_bytes: int | None = None,
    fields: _Fields = None,
) -> list[bytes | tuple[int | None, str] | None]:
    """Each input file as JSONL, in parallel on ``jobs`` threads (GIL released throughout);
    a large file split at newlines into ranges of about ``split_bytes`` (default 8 MiB when
    there are more threads than files, else no split), the same bytes as one stream (rust/split.rs).

    Per input: its bytes (``outputs`` is None), None (written to ``outputs[i]``), or
    ``(errno, message)`` if it could not be read or written. ``tag_source`` ends every line
    with ``"source": <input path>`` (the CLI's field for several inputs).
    """

def _normalize_range_arrow(
    data: bytes,
    dialect: str | Mapping,
    offset: int,
    last: bool,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
    batch_rows: int = ...,
    fields: _Fields = None,
    context: tuple[str | None, str | None] | None = None,
) -> ArrowEvents:
    """Private: the Arrow batches of one range of a ``_split_plan`` (``context``: the plan's
    ``(model, speed)`` for the range)."""

def _normalize_files_arrow(
    inputs: list[str],
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None,
    batch_rows: int = ...,
    fields: _Fields = None,
) -> list[ArrowEvents | tuple[int | None, str]]:
    """Private: each file's Arrow batches (files in parallel), or ``(errno, message)``."""

def _split_plan(
    path: str,
    dialect: str | Mapping,
    split_bytes: int,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
) -> tuple[list[tuple[int, int]], str | None, list[tuple[str | None, str | None]]]:
    """Private: ``(ranges, resume, contexts)``: a file's byte ranges cut at newlines
    (rust/split.rs), the dialect name of every range after the first (None for one range), and
    per range the dialect context at its start, ``(model, speed)`` (codex ``turn_context`` /
    ``thread_settings_applied``)."""

def _normalize_range(
    data: bytes,
    dialect: str | Mapping,
    offset: int,
    last: bool,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
    fields: _Fields = None,
    context: tuple[str | None, str | None] | None = None,
) -> list[dict[str, Any]]:
    """Private: the events of one range of a ``_split_plan`` (``seq`` from 0 in the range;
    ``context``: the plan's ``(model, speed)`` for the range)."""

def _rebase_jsonl(data: bytes, base: int) -> tuple[bytes, int]:
    """Private: ``(jsonl, lines)``: a range's JSONL with ``seq`` numbered from ``base``
    (``data`` itself for 0), and its number of lines."""

def _write_jsonl(data: bytes, base: int | None, path: str | None = None) -> int:
    """Private: a range's JSONL with ``seq`` numbered from ``base`` (None: as it is) written
    to standard output (``path`` None) or appended to ``path``; its number of lines."""

def _normalize_ordered(
    files: list[str],
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    fields: _Fields,
    tag_source: bool,
    jobs: int,
    range_bytes: int,
    window: int,
    path: str | None,
    report: Callable[[int, int | None, tuple[int | None, str] | None], object],
) -> int | None:
    """Private (``normalize --jobs``): ``files`` normalized on ``jobs`` threads, written in
    input order to standard output (``path`` None) or appended to ``path`` (rust/ordered.rs);
    ``report(read, index, error)`` on this thread; None, or the index of the first file left
    to the caller (compressed, not a regular file)."""

def validate_journal(
    data: bytes,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
) -> list[dict[str, Any]]: ...
def parse_retry(message: str) -> tuple[str | None, int | None]:
    """``(retryAt, retryAfterMs)`` stated by an error message (rust/retry.rs)."""

def _fingerprints(
    paths: list[str], head: int, jobs: int | None = None
) -> list[tuple[int, int, str] | None]:
    """Per path ``(size, mtime_ns, hash of its first head bytes)``, None where it cannot be
    read; on ``jobs`` threads, the GIL released (the report's cache keys)."""

def _json_indent2(obj: Any) -> str | None:
    """``json.dumps(obj, indent=2, allow_nan=False)`` of a document of plain JSON types, byte
    for byte; None where it has anything else (the caller then uses ``json.dumps``)."""

def _usage_fold_files(
    files: list[tuple[str, str | None]],
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None = None,
    handles: bool = False,
) -> list[tuple[Any, int, int] | None]:
    """Each ``(path, project)`` folded on its own by the core (rust/usage.rs), on ``jobs``
    threads, the GIL released: ``(summary, known, unknown)`` (``usage.StreamSummary.of`` takes
    the summary; with ``handles``, a :class:`_StreamSummary` kept in the core), or None where
    the Python fold must read the file."""

@final
class _StreamSummary:
    """One stream's summary kept in the core (``_usage_fold_files(..., handles=True)``)."""

    def as_tuple(self) -> tuple[Any, ...]:
        """``usage.StreamSummary.as_tuple()``'s form."""

@final
class _UsageMerge:
    """The fold across streams in the core (rust/usage_merge.rs; ``usage.CoreFold``)."""

    def __new__(cls, resolve: Callable[[str], Any] | None = None) -> Self: ...
    def merge(self, summary: Any) -> None:
        """A :class:`_StreamSummary` or the tuple form; ``ValueError`` when it is not one."""
    def fold_files(
        self,
        files: list[str],
        dialect: str | Mapping,
        max_line_bytes: int,
        max_depth: int,
        max_nodes: int,
        jobs: int | None = None,
    ) -> tuple[int, list[tuple[int, int]]]:
        """Each file folded on every core and merged in file order, up to the first one the
        core leaves to Python: ``(merged, [(index, unknown)])`` (files with no event
        recognised)."""
    @property
    def inexact(self) -> str | None:
        """Why the sums would differ from the Python fold's, else None."""
    def times(self) -> list[tuple[int, int]]:
        """The quarter-hour buckets: ``(first second, last second)`` each."""
    def group(
        self,
        labels: list[Any],
        none: Any,
        by: list[str],
        by_day: bool,
        active: bool,
    ) -> dict[str, Any]:
        """The totals, with each bucket's ``(day, week, month, inside, block, active)``;
        ``sessions`` a :class:`_UsageSessions`."""

@final
class _UsageSessions:
    """Every session's total, by name, kept in the core (``_UsageMerge.group``)."""

    def __len__(self) -> int: ...
    def dicts(self, rows: bool = False, start: int = 0, stop: int | None = None) -> list[Any]:
        """The totals (``usage._Acc.as_dict``'s), by name: ``(name, total)`` each, with
        endings and dialect (``bySession``), or with ``rows`` ``{"session": name, ...}``;
        those from ``start`` up to ``stop``."""
    def write_json(self, write: Callable[[str], Any], rows: bool = False) -> None:
        """The JSON text of ``bySession`` (or with ``rows`` the rows by session) as
        ``report.write_json`` writes it, handed to ``write`` in pieces."""

def _stamps(paths: list[str]) -> bytes:
    """Per path ``(size, mtime_ns, ctime_ns, inode, device)`` as five native-endian 64-bit
    signed integers (``array("q")``'s bytes; inode and device as their bits), ``-1`` in each
    field where the path cannot be examined; one ``stat`` each, links followed, the GIL
    released (the report cache's and memo's stamps)."""

def _walk(
    directory: str, suffixes: list[str] | None, stats: bool
) -> list[tuple[str, tuple[int, int, int, int, int] | None, str | None]] | None:
    """``paths.walk``'s rule in the core: ``(path, stamp or None, None)`` per file listed,
    ``(path, None, kind)`` per entry skipped (not a regular file), in order; None where a name
    is not UTF-8."""

def _usage_fold_limits(
    files: list[tuple[str, str | None]],
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None = None,
) -> list[tuple[tuple[Any, ...], int, int, list[tuple[Any, ...]]] | None]:
    """:func:`_usage_fold_files` with each stream's ``rateLimits`` readings (``report
    --limits``): ``(summary, known, unknown, readings)``, a reading ``(dialect, window,
    limitType, usedPercent, resetsAt, timestamp)`` in stream order, or None."""

def _usage_fold_resume(
    files: list[tuple[str, str | None, Any]],
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None = None,
) -> list[tuple[tuple[Any, ...], int, int, tuple[Any, ...] | None, bool, list[Any]] | None]:
    """:func:`_usage_fold_files` for the report's cache: each ``(path, project, resume)``,
    ``resume`` None or ``(summary, known, unknown, checkpoint, readings)`` of an earlier fold of
    the file (tuples or JSON's lists); where the file still holds the bytes that fold read,
    only the rest is read. Per file ``(summary, known, unknown, checkpoint, resumed,
    readings)`` (checkpoint None where no later fold can go on; readings as
    :func:`_usage_fold_limits`), or None."""

@final
class CancelFlag:
    """Set by another thread to stop a ``Normalizer.feed_arrow`` given it within about
    64 KiB of input (``threading.Event``'s ``set``/``is_set``)."""

    def __new__(cls) -> Self: ...
    def set(self) -> None: ...
    def is_set(self) -> bool: ...

@final
class Normalizer:
    """Thread-safe: concurrent calls are serialized. An input-sized allocation that fails
    raises ``MemoryError``; after it, ``feed``/``finish`` raise ``ValueError``."""

    def __new__(
        cls,
        dialect: str | Mapping,
        max_line_bytes: int = ...,
        max_depth: int = 64,
        max_nodes: int = 1000000,
        source: str | None = None,
        fields: _Fields = None,
        collapse_junk: bool = False,
    ) -> Self: ...
    @staticmethod
    def _range(
        dialect: str | Mapping,
        offset: int,
        context: tuple[str | None, str | None] | None = None,
        max_line_bytes: int = ...,
        max_depth: int = 64,
        max_nodes: int = 1000000,
        source: str | None = None,
        fields: _Fields = None,
    ) -> Normalizer:
        """Private: the Normalizer of range ``[offset, ..)`` of a ``_split_plan``."""
    @property
    def collapsed(self) -> int:
        """With ``collapse_junk``: the lines whose events were left out so far."""
    def feed(self, chunk: bytes) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
    def feed_jsonl(self, chunk: bytes) -> bytes:
        """``feed`` as JSONL bytes (``source``, if set, ends every line); same ``seq``."""
    def finish_jsonl(self) -> bytes:
        """``finish`` as JSONL bytes."""
    def feed_arrow(
        self, chunk: bytes, batch_rows: int = ..., cancel: CancelFlag | None = None
    ) -> ArrowEvents:
        """``feed`` as Arrow record batches; same ``seq``. ``cancel`` set meanwhile (by another
        thread): ``InterruptedError`` within about 64 KiB of input, the stream state lost."""
    def finish_arrow(self, batch_rows: int = ...) -> ArrowEvents:
        """``finish`` as Arrow record batches."""
