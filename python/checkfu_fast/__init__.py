"""checkfu_fast: coding-agent CLI output -> clean, typed, validated events/v1 events.

``normalize`` and ``Normalizer`` run on the Rust core (``checkfu_fast._native``);
``checkfu_fast.reference`` is the pure-Python twin with identical behaviour. If the native module
cannot be imported the package falls back to the reference and says so in ``IMPLEMENTATION``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from . import options as _options
from . import paths as _paths
from .audit import audit, audit_files
from .errors import (
    CheckfuError,
    DamagedInput,
    DialectNotImplemented,
    InvalidOption,
    MappingError,
    UnknownDialect,
)
from .options import check_options as _check_options
from .outputs import atomic_output, refuse_aliases

if TYPE_CHECKING:
    from . import reference
    from .options import DIALECTS
    from .reference import MappedDialect, load_dialect
    from .usage import UsageFold, usage_totals

# imported on first use (module ``__getattr__``): the pure-Python twin and the usage fold are
# most of the package's import time, and a ``report`` re-run answered from its memo needs
# neither (report_cache.memo_hit)
_LAZY = {
    "reference": ("reference", None),
    "DIALECTS": ("options", "DIALECTS"),
    "MappedDialect": ("reference", "MappedDialect"),
    "check_options": ("reference", "check_options"),
    "load_dialect": ("reference", "load_dialect"),
    "resolve_fields": ("options", "resolve_fields"),
    "UsageFold": ("usage", "UsageFold"),
    "usage_totals": ("usage", "usage_totals"),
}


def __getattr__(name: str) -> Any:
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"{__name__}.{spec[0]}")
    value = module if spec[1] is None else getattr(module, spec[1])
    globals()[name] = value
    return value


def _ref() -> ModuleType:
    """The pure-Python twin (imported on first use)."""
    from . import reference as ref

    return ref


# The core's allocator (mimalloc) gives freed pages back to the system after its purge delay,
# which it reads from the environment once, when the module loads (here: before any command's
# code runs). Its own delay (1 s) is kept but for the commands of :data:`_PURGE_DELAYS`. With it
# a loop of library calls reuses the pages the previous call freed: claude 8 MiB, lean Arrow, 0
# page faults a call against 90-100 (and ~0.5 ms) at 30 ms; ``normalize`` (4 x 24 MiB) spends
# 12-28% less CPU (half the page faults) and on a 1 GiB directory peaks within its targets (JSONL
# 83-111 MiB, Parquet 202-236 MiB; 58-80 / 142-170 at 30 ms). ``report`` keeps 25-40 MiB of freed
# fold memory resident at 1 s: on a 1 GiB tree --no-cache 118-155 MiB and the first run 133-155
# (target 150), at 30 ms 110-122 and 110-118 MiB. A delay the user set is left alone; the
# variable is set for the import only, so no child process inherits it.
_PURGE = "MIMALLOC_PURGE_DELAY"
#: The purge delay (ms) of a command line's command, when it is not mimalloc's own.
_PURGE_DELAYS = {"report": "30"}


def _command_line() -> str | None:
    """The command this process runs when it is the command line (``checkfu-fast COMMAND``,
    or ``python -m checkfu_fast COMMAND`` whose package is imported with ``sys.argv[0]`` "-m"
    before its ``__main__`` runs), else None (a library import)."""
    argv = getattr(sys, "argv", None) or [""]
    if argv[0] == "-m":
        orig = getattr(sys, "orig_argv", [])
        if len(orig) <= len(argv):
            return None
        module = orig[-len(argv)]  # what follows -m (or "-mMODULE" in one word)
        if module.removeprefix("-m") not in ("checkfu_fast", "checkfu_fast.cli"):
            return None
    else:  # the console script (its name as pip writes it on every platform)
        name = os.path.basename(argv[0])
        for suffix in ("-script.pyw", "-script.py", ".exe"):
            name = name.removesuffix(suffix)
        if name != "checkfu-fast":
            return None
    return argv[1] if len(argv) > 1 else None


_purge = None if _PURGE in os.environ else _PURGE_DELAYS.get(_command_line() or "")
if _purge is not None:
    os.environ[_PURGE] = _purge
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
finally:
    if _purge is not None:
        os.environ.pop(_PURGE, None)

#: Every event field, in output order (the core's field table, ``rust/fields.rs``).
EVENT_FIELDS: tuple[str, ...] = (
    tuple(_native.EVENT_FIELDS) if _native is not None else _options.EVENT_FIELDS
)

__version__ = "0.1.0"
__all__ = [
    "DIALECTS",
    "EVENT_FIELDS",
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
    "normalize_arrow",
    "normalize_files",
    "normalize_jsonl",
    "output_names",
    "reference",
    "usage_totals",
    "validate_journal",
    "write_parquet",
]

Event = dict[str, Any]


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes or str, not {type(data).__name__}")


def _fields(fields: Any) -> list[str] | None:
    """A ``fields`` argument checked (:func:`checkfu_fast.options.resolve_fields`: same
    errors on both paths) as the core takes it: None for every field, else the names."""
    keep = _options.resolve_fields(fields)
    return None if keep is None else list(keep)


def _native_dialect(dialect: str | MappedDialect) -> Any:
    """The argument the native core takes: a name, or the mapping compiled once by Rust."""
    if isinstance(dialect, str) or not isinstance(dialect, _ref().MappedDialect):
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
    fields: str | Sequence[str] | None = None,
) -> list[Event]:
    """Normalize a whole stream to events/v1 events (plain dicts, in order).

    ``fields`` picks the fields: ``None`` or ``"all"`` (every field: the schema-valid events),
    ``"lean"`` (all but ``raw`` and ``parsed``, which are then never computed), or a list of
    names from :data:`EVENT_FIELDS` (``v``, ``seq``, ``position``, ``dialect``, ``kind``,
    ``subtype`` always kept). A projected event carries ``lineBytes`` (the line's length in
    bytes) on every event, so ``raw`` stays recoverable from (file, ``position``,
    ``lineBytes``)."""
    _check_options(dialect, max_line_bytes, max_depth, max_nodes)
    keep = _fields(fields)
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        return _ref().normalize(
            raw,
            dialect,
            max_line_bytes=max_line_bytes,
            max_depth=max_depth,
            max_nodes=max_nodes,
            fields=keep,
        )
    return _native.normalize(
        raw, _native_dialect(dialect), max_line_bytes, max_depth, max_nodes, keep
    )


def normalize_jsonl(
    data: bytes | str,
    dialect: str | MappedDialect = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: str | Sequence[str] | None = None,
) -> bytes:
    """The events of :func:`normalize` as JSONL bytes, written by the Rust core (no Python
    objects, GIL released). ``fields`` as in :func:`normalize`; a projection writes each tree
    (``tool.arguments``, ``toolResult``, ``providerArguments``, ``structuredOutput``,
    ``parsed``) as the JSON text of its value, so every key keeps one JSON type across a file
    (``polars.read_ndjson`` and ``duckdb.read_json`` need no schema).

    One LF-terminated line per event, exactly ``json.dumps(event, ensure_ascii=False,
    separators=(",", ":"))`` encoded as UTF-8: same keys in the same order, Python's float text
    (``1e+16``, ``-0.0``), integers of any size. ``json.loads`` of each line gives the event
    ``normalize()`` gives; :func:`checkfu_fast.reference.normalize_jsonl` gives the same bytes.
    """
    _check_options(dialect, max_line_bytes, max_depth, max_nodes)
    keep = _fields(fields)
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        return _ref().normalize_jsonl(
            raw,
            dialect,
            max_line_bytes=max_line_bytes,
            max_depth=max_depth,
            max_nodes=max_nodes,
            fields=keep,
        )
    return _native.normalize_jsonl(
        raw, _native_dialect(dialect), max_line_bytes, max_depth, max_nodes, keep
    )


def normalize_arrow(
    data: bytes | str,
    dialect: str | MappedDialect = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    batch_rows: int = 65536,
    fields: str | Sequence[str] | None = None,
) -> _native.ArrowEvents:
    """The events of :func:`normalize` as Arrow record batches built by the Rust core (GIL
    released), one row per event, flat typed columns (docs/arrow.md).

    The result implements the Arrow PyCapsule interface (``__arrow_c_schema__``,
    ``__arrow_c_array__``, ``__arrow_c_stream__``): ``pyarrow.table(x)``,
    ``pyarrow.record_batch(x)``, ``polars.from_arrow``/``polars.DataFrame(x)`` and duckdb take it
    directly. The stream yields batches of at most ``batch_rows`` rows (and about 256 MiB of
    text). :func:`checkfu_fast.arrow.row_to_event` turns a row back into the event dict.
    ``fields`` as in :func:`normalize`: the columns of the fields not asked for are left out
    and never computed. Needs the native core.
    """
    _check_options(dialect, max_line_bytes, max_depth, max_nodes)
    keep = _fields(fields)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidOption(f"batch_rows must be a positive int, got {batch_rows!r}")
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        raise RuntimeError("normalize_arrow needs the native core")
    return _native.normalize_arrow(
        raw, _native_dialect(dialect), max_line_bytes, max_depth, max_nodes, batch_rows, keep
    )


def write_parquet(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    dialect: str | MappedDialect = "auto",
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: str | Sequence[str] | None = None,
) -> int:
    """Normalize files into one Parquet file at ``out`` through pyarrow (the ``arrow`` extra:
    ``pip install checkfu-fast[arrow]``): the columns of :func:`normalize_arrow` plus
    ``source`` (the input path as given), file after file, each its own stream (``seq`` from 0
    per file); a directory stands for its stream files (:mod:`checkfu_fast.paths`). Each file is
    read 16 MiB at a time and written batch by batch (memory bounded by the chunk, not the
    file). Returns the number of rows written."""
    from .arrow import write_parquet as _write

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    _check_options(dialect, max_line_bytes, max_depth, max_nodes)
    return _write(
        _paths.expand(paths),
        os.fspath(out),
        dialect=dialect,
        max_line_bytes=max_line_bytes,
        max_depth=max_depth,
        max_nodes=max_nodes,
        fields=_fields(fields),
    )


#: The output formats of :func:`normalize_files`.
FORMATS = ("jsonl", "arrow", "parquet")


def output_names(paths: Sequence[str | os.PathLike[str]], format: str = "jsonl") -> list[str]:
    """The file names :func:`normalize_files` writes in ``out_dir``, one per input, in order:
    ``<input file name>.events.<format>`` (``jsonl``, ``arrow`` or ``parquet``); an input whose
    name is already taken (same file name in another directory) gets
    ``<input file name>~2.events.<format>``, then ``~3``, ..."""
    if format not in FORMATS:
        raise InvalidOption(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    taken: set[str] = set()
    out = []
    for p in paths:
        base = Path(p).name or "stdin"
        name, k = f"{base}.events.{format}", 1
        while name in taken:
            k += 1
            name = f"{base}~{k}.events.{format}"
        taken.add(name)
        out.append(name)
    return out


def _file_error(path: str, err: tuple[int | None, str]) -> OSError:
    errno, message = err
    if errno is None:
        if message.startswith("damaged "):
            return DamagedInput(f"{path}: {message}")
        return OSError(f"{path}: {message}")
    return OSError(errno, os.strerror(errno), path)


def normalize_files(
    paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    dialect: str | MappedDialect = "auto",
    format: str = "jsonl",
    jobs: int | None = None,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: str | Sequence[str] | None = None,
    _split_bytes: int | None = None,
) -> list[bytes] | list[str] | list[Any]:
    """Normalize many files in parallel in the Rust core (rayon, ``jobs`` threads, default the
    CPU count; the GIL is released throughout). Each file is its own stream (``seq`` from 0);
    its output is byte for byte :func:`normalize_jsonl` of its contents.

    A directory in ``paths`` stands for the stream files under it (:mod:`checkfu_fast.paths`:
    recursive, ``*.jsonl``/``*.ndjson``/``*.json``/``*.log`` and compressed ``.gz``/``.zst``
    session files, hidden entries skipped, stable sorted order); the result then has one item
    per file found.

    Without ``out_dir``: the JSONL bytes of each file, in input order. With ``out_dir``: each
    file's JSONL is streamed to ``<out_dir>/<name>`` (:func:`output_names`: ``<input file
    name>.events.jsonl``, ``~2``, ``~3``... for repeated names) and the list of the paths written
    is returned. Files are read in 1 MiB chunks. With more threads than files a file larger than
    12 MiB is cut at newlines into ranges of about 8 MiB that are normalized in parallel and
    joined (``seq`` renumbered; nothing but the dialect and its context crosses a cut,
    rust/split.rs), with the same bytes as one stream. Raises the ``OSError`` of the first file
    that could not be read or written, after all files were processed. ``_split_bytes``
    (private, for tests) sets the range size and splits with any thread count.

    ``format="arrow"`` without ``out_dir``: each file's events as one Arrow object (what
    :func:`normalize_arrow` of its contents gives: ``pyarrow.table(x)``, ``polars.DataFrame(x)``
    and DuckDB take it), built by the core on ``jobs`` threads with the GIL released.
    ``format="arrow"`` or ``"parquet"`` with ``out_dir`` (needs pyarrow, the ``arrow`` extra):
    each file written as ``<name>.events.arrow`` (an Arrow IPC file) or ``<name>.events.parquet``
    with the columns of :func:`normalize_arrow`, ``jobs`` files at a time, each read 16 MiB at a
    time (memory bounded by the chunk); an output left unfinished by an error is removed.
    ``"parquet"`` needs ``out_dir``. Files are not split into ranges in these formats.
    ``fields`` as in :func:`normalize`, in every format.
    """
    if format not in FORMATS:
        raise InvalidOption(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if format == "parquet" and out_dir is None:
        raise InvalidOption("format='parquet' writes files: it needs out_dir")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise InvalidOption(f"jobs must be a positive int or None, got {jobs!r}")
    _check_options(dialect, max_line_bytes, max_depth, max_nodes)
    keep = _fields(fields)
    inputs = _paths.expand(paths)
    outputs = None
    if out_dir is not None:
        outputs = [os.path.join(os.fspath(out_dir), n) for n in output_names(inputs, format)]
        refuse_aliases(inputs, outputs)
    budgets = (max_line_bytes, max_depth, max_nodes)
    if format != "jsonl":
        return _table_files(inputs, outputs, format, dialect, budgets, jobs, keep)
    results = _files(
        inputs,
        outputs,
        dialect,
        budgets,
        jobs,
        tag_source=False,
        split_bytes=_split_bytes,
        fields=keep,
    )
    for i, (p, r) in enumerate(zip(inputs, results, strict=True)):
        if isinstance(r, tuple):
            # the core reports one errno per file; an input that can be read means the output
            # side failed (e.g. a missing out_dir), so that path is the one named
            readable = os.path.isfile(p) and os.access(p, os.R_OK) and r[0] is not None
            raise _file_error(outputs[i] if outputs is not None and readable else p, r)
    return outputs if outputs is not None else results


def _table_files(
    inputs: list[str],
    outputs: list[str] | None,
    format: str,
    dialect: str | MappedDialect,
    budgets: tuple[int, int, int],
    jobs: int | None,
    fields: list[str] | None = None,
) -> list[Any]:
    """:func:`normalize_files` in the ``arrow`` and ``parquet`` formats (arguments checked)."""
    if _native is None:  # pragma: no cover
        raise RuntimeError(f"format={format!r} needs the native core")
    if outputs is None:  # arrow, in memory
        results = _native._normalize_files_arrow(
            inputs, _native_dialect(dialect), *budgets, jobs, 65536, fields
        )
        for p, r in zip(inputs, results, strict=True):
            if isinstance(r, tuple):
                raise _file_error(p, r)
        return cast("list[Any]", results)
    from concurrent.futures import ThreadPoolExecutor, wait

    threads = min(jobs or os.cpu_count() or 1, max(len(inputs), 1))
    # set on Ctrl-C: the core stops the chunks being converted within about 64 KiB of input
    stop = _native.CancelFlag()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [
            pool.submit(_table_file, p, out, format, dialect, budgets, fields, stop)
            for p, out in zip(inputs, outputs, strict=True)
        ]
        try:
            wait(futures)
        except BaseException:  # Ctrl-C: files not started are not started, and those being
            stop.set()  # written stop within a window of input (their partial outputs removed)
            for f in futures:
                f.cancel()
            raise
    for f in futures:  # every file done; the first failure raised
        f.result()
    return outputs


def _table_file(
    path: str,
    out: str,
    format: str,
    dialect: str | MappedDialect,
    budgets: tuple[int, int, int],
    fields: list[str] | None,
    stop: Any = None,
) -> None:
    """One Arrow/Parquet output, written to a temporary file renamed onto ``out`` when complete
    (:func:`checkfu_fast.outputs.atomic_output`: no symlink followed, nothing half-written);
    ``stop`` (a ``_native.CancelFlag``) set: abandoned within about 64 KiB of input."""
    from .arrow import write_table_file

    with atomic_output(out) as tmp:
        write_table_file(path, tmp, format, dialect, budgets, fields, stop=stop)


def _files(
    inputs: list[str],
    outputs: list[str] | None,
    dialect: str | MappedDialect,
    budgets: tuple[int, int, int],
    jobs: int | None,
    *,
    tag_source: bool,
    split_bytes: int | None = None,
    fields: list[str] | None = None,
) -> list[Any]:
    """:func:`normalize_files` without the checks: per input its bytes, None (written to its
    output) or ``(errno, message)``; ``tag_source`` adds the CLI's ``"source"`` field."""
    if _native is not None:
        return _native.normalize_files(
            inputs,
            outputs,
            _native_dialect(dialect),
            *budgets,
            jobs,
            tag_source,
            split_bytes,
            fields,
        )
    results: list[Any] = []  # pragma: no cover - only without the native core
    for i, p in enumerate(inputs):  # pragma: no cover
        try:
            n = Normalizer(dialect, max_line_bytes=budgets[0], max_depth=budgets[1],
                           max_nodes=budgets[2], source=p if tag_source else None,
                           fields=fields)  # fmt: skip
            data = n.feed_jsonl(Path(p).read_bytes()) + n.finish_jsonl()
            if outputs is None:
                results.append(data)
            else:
                Path(outputs[i]).write_bytes(data)
                results.append(None)
        except OSError as exc:
            results.append((exc.errno, str(exc)))
    return results


class Normalizer:
    """Incremental normalizer: ``feed(chunk)`` as bytes arrive, then ``finish()``.

    Any chunking of the same bytes gives the same events (a chunk may end anywhere).
    ``feed_jsonl``/``finish_jsonl`` give the same events as JSONL bytes written by the core
    (see :func:`normalize_jsonl`); the two styles may be mixed, ``seq`` continues across them.
    ``source``, when given, is added as a last ``"source"`` field to every JSONL line (the CLI's
    field when it reads several inputs); the dicts of ``feed``/``finish`` do not carry it. Safe to
    share between threads: concurrent calls are serialized (each chunk is framed whole, in the
    order the calls got the lock). If memory runs out, ``MemoryError`` is raised (never an abort)
    and later calls raise ``ValueError``: the stream state is lost.

    ``collapse_junk=True`` (docs/events.md, "Collapsed junk"): of a run of consecutive lines
    that are not JSON objects (blank lines aside), only the first line of each kind gives its
    event; :attr:`collapsed_lines` counts the others. A flood of junk lines then costs no
    event per line (the oneshot fold uses it: there such a line only ends a joined delta).
    """

    def __init__(
        self,
        dialect: str | MappedDialect = "auto",
        *,
        max_line_bytes: int = 64 << 20,
        max_depth: int = 64,
        max_nodes: int = 1_000_000,
        source: str | None = None,
        fields: str | Sequence[str] | None = None,
        collapse_junk: bool = False,
    ) -> None:
        _check_options(dialect, max_line_bytes, max_depth, max_nodes)
        if source is not None and not isinstance(source, str):
            raise TypeError("source must be a str or None")
        self._source = source
        keep = _fields(fields)
        self._projected = keep is not None
        if _native is None:  # pragma: no cover
            self._inner: Any = _ref().Normalizer(
                dialect,
                max_line_bytes=max_line_bytes,
                max_depth=max_depth,
                max_nodes=max_nodes,
                fields=keep,
                collapse_junk=collapse_junk,
            )
        else:
            self._inner = _native.Normalizer(
                _native_dialect(dialect),
                max_line_bytes,
                max_depth,
                max_nodes,
                source,
                keep,
                bool(collapse_junk),
            )

    @property
    def collapsed_lines(self) -> int:
        """With ``collapse_junk``: how many lines so far gave no event (0 without it)."""
        if _native is None:  # pragma: no cover
            return int(self._inner.collapsed_lines)
        return int(self._inner.collapsed)

    def feed_jsonl(self, chunk: bytes) -> bytes:
        """:meth:`feed`, the events as JSONL bytes (written by the core, GIL released)."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"chunk must be bytes, not {type(chunk).__name__}")
        if _native is None:  # pragma: no cover
            return _ref().dumps_jsonl(
                self._tagged(self._inner.feed(bytes(chunk))), projected=self._projected
            )
        return cast(
            bytes, self._inner.feed_jsonl(chunk if isinstance(chunk, bytes) else bytes(chunk))
        )

    def finish_jsonl(self) -> bytes:
        """:meth:`finish`, the events as JSONL bytes. Idempotent."""
        if _native is None:  # pragma: no cover
            return _ref().dumps_jsonl(self._tagged(self._inner.finish()), projected=self._projected)
        return cast(bytes, self._inner.finish_jsonl())

    def feed_arrow(self, chunk: bytes, *, batch_rows: int = 65536) -> _native.ArrowEvents:
        """:meth:`feed`, the events as Arrow record batches (see :func:`normalize_arrow`);
        ``seq`` continues. Needs the native core."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"chunk must be bytes, not {type(chunk).__name__}")
        if _native is None:  # pragma: no cover
            raise RuntimeError("feed_arrow needs the native core")
        return self._inner.feed_arrow(bytes(chunk), batch_rows)  # type: ignore[no-any-return]

    def finish_arrow(self, *, batch_rows: int = 65536) -> _native.ArrowEvents:
        """:meth:`finish`, as Arrow record batches. Idempotent."""
        if _native is None:  # pragma: no cover
            raise RuntimeError("finish_arrow needs the native core")
        return self._inner.finish_arrow(batch_rows)  # type: ignore[no-any-return]

    def _tagged(self, events: list[Event]) -> list[Event]:  # pragma: no cover - fallback only
        if self._source is not None:
            for ev in events:
                ev["source"] = self._source
        return events

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
    _check_options("auto", max_line_bytes, max_depth, max_nodes)
    raw = _as_bytes(data)
    if _native is None:  # pragma: no cover
        return _ref().validate_journal(
            raw, max_line_bytes=max_line_bytes, max_depth=max_depth, max_nodes=max_nodes
        )
    return _native.validate_journal(raw, max_line_bytes, max_depth, max_nodes)
