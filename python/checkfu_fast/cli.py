"""The command line: ``checkfu-fast COMMAND ...`` or ``python -m checkfu_fast COMMAND ...``.

Commands (``checkfu-fast COMMAND --help`` shows each one's options and examples):
  normalize [--dialect D] [--jobs N] [--reference] [--summary] FILE|DIR...
                                                               events as JSONL on stdout
  golden [--reference] [DIR]                                   replay golden files, diff precisely
  journal [--reference] FILE...                                validate runner journal records
  dialects                                                     list the dialect names
  vectors [--live] FILE|DIR...                                 replay oneshot-v1 vector files
  audit [--dialect D] [--json] [--strict] FILE|DIR...          record types and fields nobody knows
  run CONTRACT --prompt-file P [--state S] [--output-schema O] run one oneshot-v1 turn live
  report [--by DIM[,DIM]] [--json|--csv] [FILE|DIR...]        tokens and cost in USD
  report --limits [--json] [FILE|DIR...]                      rate-limit windows, quota ledger
  export --format atif|otel|html FILE|DIR|- [-o OUT]           ATIF, OTLP spans, transcript pages

Exit codes, the same for every command (see ``EXIT_CODES``): 0 success; 1 a failed check (golden
or vector mismatch, journal violation, a turn that did not finish), an unreadable input file, or
nothing to check; 2 usage error (bad option, unknown dialect or bad mapping file, bad budget, a
rejected contract or vector file); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from . import CheckfuError, Normalizer, __version__, _native
from . import options as _options
from .inputs import open_input, plain_fd
from .outputs import atomic_output, printable, refuse_aliases
from .paths import empty_dirs, expand
from .progress import Progress, add_arguments, wanted

CHUNK = 1 << 20


class _OnUse:
    """A module of the package imported at its first attribute's use: the pure-Python twin
    and the golden replay are most of the command line's import time, and ``report`` (or
    ``normalize`` without ``--reference``) needs neither."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{self._name}"), attr)


if TYPE_CHECKING:
    from . import golden, reference
    from .reference import MappedDialect
else:
    golden = _OnUse("golden")
    reference = _OnUse("reference")

#: The dialect names (the core's list, held equal to this one by tests/test_api.py)
DIALECTS: tuple[str, ...] = _options.DIALECTS


def _dumps(ev: dict[str, Any]) -> bytes:
    """One JSONL line, the bytes ``normalize_jsonl`` writes (stdlib json: the output does not
    depend on which optional packages are installed)."""
    return reference.dumps_jsonl([ev])


def _complain(message: str) -> int:
    """A message on stderr; returns exit status 1 (a failed check, unreadable or empty input)."""
    print(f"checkfu-fast: {printable(message)}", file=sys.stderr)
    return 1


def _unreadable(name: str, exc: OSError) -> int:
    return _complain(f"{name}: {exc.strerror or exc}")


class _OutputFailed(Exception):
    """Writing an output (stdout or ``-o``) failed (a full disk, an I/O error): the command
    stops and says so, naming the output, never the input being read (exit status 1)."""

    def __init__(self, name: str, exc: OSError) -> None:
        super().__init__(f"{name}: {exc.strerror or exc}")


class _Guarded:
    """A stream whose write errors are :class:`_OutputFailed` (``BrokenPipeError`` is kept:
    a reader that went away stops a filter quietly)."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner, self._name = inner, name
        if hasattr(inner, "buffer"):
            self.buffer = _Guarded(inner.buffer, name)

    def write(self, data: Any) -> Any:
        try:
            return self._inner.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(self._name, exc) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(self._name, exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _core_normalizer(args: argparse.Namespace, source: str | None) -> Any:
    """A normalizer of the core for ``normalize``'s options (``feed_jsonl``/``finish_jsonl``),
    made by ``_native`` directly: the options were checked by :func:`_check_options` (the
    :class:`checkfu_fast.Normalizer` wrapper would check them again through the pure-Python
    twin, whose import is a third of the command's start). Without the core: the wrapper."""
    budgets = (args.max_line_bytes, args.max_depth, args.max_nodes)
    if _native is None:  # pragma: no cover - only without the native core
        return Normalizer(args.dialect, max_line_bytes=budgets[0], max_depth=budgets[1],
                          max_nodes=budgets[2], source=source, fields=args.fields)  # fmt: skip
    from . import _native_dialect

    return _native.Normalizer(_native_dialect(args.dialect), *budgets, source, args.fields, False)


def _check_options(args: argparse.Namespace) -> None:
    """``normalize``'s dialect and budgets checked before anything is read, as every path
    checks them (:mod:`checkfu_fast.options`: the twin's own checks, without importing it)."""
    _options.check_options(args.dialect, args.max_line_bytes, args.max_depth, args.max_nodes)


def _stream(
    fd: int | BinaryIO,
    out: BinaryIO,
    args: argparse.Namespace,
    source: str | None,
    counts: Counter[str],
    progress: Progress | None = None,
) -> None:
    """Normalize what can be read from ``fd`` as it arrives: each read returns what is
    available (a pipe gives its lines as they are written) and its events are written and
    flushed at once. Without ``--reference``/``--summary`` the JSONL is written by the core."""
    budgets = {
        "max_line_bytes": args.max_line_bytes,
        "max_depth": args.max_depth,
        "max_nodes": args.max_nodes,
    }
    if args.reference or args.summary:
        make: Any = reference.Normalizer if args.reference else Normalizer
        n = make(args.dialect, **budgets, fields=args.fields)
        projected = _options.resolve_fields(args.fields) is not None

        def feed(chunk: bytes | None) -> bytes:
            events = n.feed(chunk) if chunk is not None else n.finish()
            for ev in events:
                counts[f"{ev['kind']}/{ev['subtype']}"] += 1
                if source is not None:
                    ev["source"] = source
            return reference.dumps_jsonl(events, projected=projected)

    else:
        native = _core_normalizer(args, source)

        def feed(chunk: bytes | None) -> bytes:
            return cast(
                bytes, native.feed_jsonl(chunk) if chunk is not None else native.finish_jsonl()
            )

    if isinstance(fd, int):

        def read() -> bytes:
            return os.read(fd, CHUNK)

    else:  # a decompressing stream (inputs.open_input)
        src = fd

        def read() -> bytes:
            return src.read(CHUNK)

    while chunk := read():
        if progress is not None:
            progress.read(len(chunk))
        if data := feed(chunk):
            out.write(data)
            out.flush()
    out.write(feed(None))
    out.flush()


#: Bytes of output that ``--jobs N`` lets wait, all files together, to be written in input
#: order (``ordered``): a worker ahead of the range being written waits once this is full, so
#: memory does not grow with N or the files' sizes (JSONL: about 4.5 MiB per MiB read with
#: every field).
WINDOW_BYTES = 8 << 20
#: Bytes of output buffers (by capacity) that ``--jobs N`` lets wait in the core's run
#: (``_normalize_ordered``), all files together (peak RSS on 1 GiB with two jobs: ~105 MiB).
CORE_WINDOW = 16 << 20
#: Bytes a ``--jobs`` worker reads per step: its JSONL (about 4.5 MiB per MiB with every
#: field) stays below the sizes the core's allocator (mimalloc) hands out and takes back as
#: whole regions; at 1 MiB reads, ``--jobs 2`` peaked at 140-158 MiB on 1 GiB, at 512 KiB at
#: ~90 MiB, in as much CPU time.
JOBS_CHUNK = 512 << 10


def _cost(item: tuple[int, Any]) -> int:
    """An item's bytes in the window: JSONL bytes, or the buffers of a list of Arrow batches."""
    data = item[1]
    if isinstance(data, bytes):
        return len(data)
    return sum(b.get_total_buffer_size() for b in data)


def range_bytes(jobs: int) -> int:
    """The input bytes of a range of a large file under ``--jobs`` (a file over 1.5 times this
    is cut, each range a little longer than this: it ends at the next LF): small enough that
    the ranges the other workers finish ahead of the one being written (their JSONL about 4.5
    times their size, in the core's buffers of 128 KiB reads counted by capacity) fit in
    :data:`CORE_WINDOW` together, so no worker waits on the writing; 248 KiB for two jobs
    (on 4 x 96 MiB, 496 KiB ranges in an 8 MiB window kept 1.3 of 2 cores busy, these 1.7)."""
    return max(64 << 10, min(JOBS_CHUNK, CORE_WINDOW // (32 * max(1, jobs))) - (8 << 10))


class _Range:
    """One unit of ``--jobs`` work: file ``index`` (``name``) whole (``k`` None), or range
    ``k`` ``[start, end)`` of its split plan (rust/split.rs), normalized with ``dialect`` from
    the dialect context (``(model, speed)``); ``last`` finishes the stream."""

    __slots__ = ("context", "dialect", "end", "index", "k", "last", "name", "start")

    def __init__(
        self,
        index: int,
        name: str,
        k: int | None = None,
        start: int = 0,
        end: int = 0,
        last: bool = True,
        dialect: Any = None,
        context: tuple[str | None, str | None] | None = None,
    ) -> None:
        self.index, self.name, self.k, self.start, self.end = index, name, k, start, end
        self.last, self.dialect, self.context = last, dialect, context


def _ranges(
    args: argparse.Namespace, files: list[str], budgets: tuple[int, int, int]
) -> Iterator[_Range]:
    """Every file's units in input order, planned lazily (as ``ordered`` takes them): a plain
    regular file over 1.5 times :func:`range_bytes` is cut at newlines into ranges
    (``_split_plan``: nothing but the dialect and its context crosses a cut), anything else
    (compressed, small, not a regular file, unreadable: its error comes from the worker) is
    one unit."""
    from . import _native, _native_dialect
    from .inputs import compression

    target = range_bytes(args.jobs)
    native = _native_dialect(args.dialect)
    for i, name in enumerate(files):
        plan = None
        try:
            st = os.stat(name)
            if stat.S_ISREG(st.st_mode) and st.st_size > target + target // 2:
                with open(name, "rb") as f:
                    head = f.read(4)
                if compression(head) is None:
                    plan = _native._split_plan(name, native, target, *budgets)
        except OSError:
            plan = None  # the worker meets the same error and reports it
        if plan is None or len(plan[0]) < 2:
            yield _Range(i, name)
            continue
        ranges, resume, contexts = plan
        for k, (start, end) in enumerate(ranges):
            d = native if k == 0 or args.dialect != "auto" else resume
            yield _Range(i, name, k, start, end, k + 1 == len(ranges), d, contexts[k])


def _fd_1(out: Any) -> bool:
    """Is ``out`` the process's standard output (descriptor 1)?"""
    try:
        return bool(out.fileno() == 1)
    except (AttributeError, OSError, ValueError):
        return False


def _parallel(
    args: argparse.Namespace,
    files: list[str],
    out: BinaryIO,
    many: bool,
    progress: Progress,
    path: str | None = None,
) -> int:
    """``--jobs N``: files, and ranges of every large file, normalized N at a time and
    written in input order, the same bytes as one at a time, memory bounded by a window of
    :data:`CORE_WINDOW`, not by the files' sizes or N. To descriptor 1, or appended to
    ``path`` (the file ``out`` writes in append mode), the whole run is the core's
    (``_normalize_ordered``, rust/ordered.rs: the GIL released, no output byte handed to
    Python), but for the files it leaves to Python (compressed, not regular files), which
    :func:`_parallel_units` does in their place; any other ``out`` gets them all from it."""
    if path is None and _fd_1(out):
        direct: str | None = ""  # standard output
        name = "standard output"
    else:
        direct, name = path, args.output
    if direct is None:
        return _parallel_units(args, files, out, many, progress)
    from . import _native_dialect

    budgets = (args.max_line_bytes, args.max_depth, args.max_nodes)
    native = _native_dialect(args.dialect)
    fields = args.fields  # None, "all", "lean" or names (checked): the core takes each
    status = 0
    base = 0  # the index in ``files`` of the core's first file

    def report(read: int, index: int | None, error: tuple[int | None, str] | None) -> None:
        """The core's progress: bytes read, and each file done in order (or failed)."""
        nonlocal status
        progress.read(read)
        if index is None:
            return
        done = files[base + index]
        if error is not None:
            progress.clear()
            errno, message = error
            exc = OSError(errno, os.strerror(errno)) if errno else OSError(message)
            status = _unreadable(done, exc)
        progress.file_done(done)

    while base < len(files):
        out.flush()
        try:
            left = _native._normalize_ordered(files[base:], native, *budgets, fields, many,
                                              args.jobs, range_bytes(args.jobs), CORE_WINDOW,
                                              direct or None, report)  # fmt: skip
        except BrokenPipeError:
            raise
        except OSError as exc:  # the message of a failed write from Python (no "(os error N)")
            err = OSError(exc.errno, os.strerror(exc.errno)) if exc.errno else exc
            raise _OutputFailed(name, err) from None
        if left is None:
            break
        # the files left to Python, up to the next one for the core
        first = end = base + left
        end += 1
        while end < len(files) and not _in_core(files[end]):
            end += 1
        part = files[first:end]
        status = max(status, _parallel_units(args, part, out, many, progress, path))
        base = end
    return status


def _in_core(name: str) -> bool:
    """Does ``_normalize_ordered`` take this file (a regular file, not compressed; or one it
    cannot open: it reports the error in its place)?"""
    from .inputs import compression

    try:
        if not stat.S_ISREG(os.stat(name).st_mode):
            return False
        with open(name, "rb") as f:
            return compression(f.read(4)) is None
    except OSError:
        return True


def _parallel_units(
    args: argparse.Namespace,
    files: list[str],
    out: BinaryIO,
    many: bool,
    progress: Progress,
    path: str | None = None,
) -> int:
    """``--jobs N`` in Python's hands: files, and ranges of every large file
    (:func:`_ranges`), normalized N at a time on worker threads (the core releases the GIL),
    each read in 512 KiB chunks whose JSONL waits in a window of :data:`WINDOW_BYTES`
    (``ordered``) and is written in input order. A range's ``seq`` is numbered on from the
    ranges before it as it is written by the core (``_write_jsonl``: to descriptor 1, or
    appended to ``path``; the lines not copied), or else renumbered (``_rebase_jsonl``)."""
    from .ordered import ordered

    budgets = (args.max_line_bytes, args.max_depth, args.max_nodes)
    fields = args.fields  # None, "all", "lean" or names (checked): the core takes each

    def produce(unit: _Range, put: Callable[[tuple[int, bytes]], None]) -> None:
        source = unit.name if many else None
        if unit.k is None:
            n = _core_normalizer(args, source)
            with open_input(unit.name) as f:
                while chunk := f.read(JOBS_CHUNK):
                    put((len(chunk), n.feed_jsonl(chunk)))
            put((0, n.finish_jsonl()))
            return
        r = _native.Normalizer._range(unit.dialect, unit.start, unit.context, *budgets, source,
                                      fields)  # fmt: skip
        with open(unit.name, "rb", buffering=0) as f:
            pos = unit.start
            while pos < unit.end:
                chunk = os.pread(f.fileno(), min(JOBS_CHUNK, unit.end - pos), pos)
                if not chunk:
                    break  # the file shrank: its end is here
                pos += len(chunk)
                put((len(chunk), r.feed_jsonl(chunk)))
        if unit.last:
            put((0, r.finish_jsonl()))

    if path is None and _fd_1(out):
        direct: str | None = ""  # standard output
        name = "standard output"
    else:
        direct, name = path, args.output
    status = 0
    done: str | None = None
    index = -1
    failed = False
    seq = 0  # the events of the file written so far (a split file's ranges renumbered on)
    units = _ranges(args, files, budgets)
    window = ordered(units, args.jobs, produce, budget=WINDOW_BYTES, cost=_cost,
                     ahead=2 * args.jobs)  # fmt: skip
    for unit, item in window:
        if unit.index != index:
            if done is not None:
                progress.file_done(done)
            done, index, failed, seq = unit.name, unit.index, False, 0
        if failed:
            continue  # the rest of a file that failed
        if isinstance(item, OSError):
            progress.clear()
            status = _unreadable(unit.name, item)
            failed = True
            continue
        if isinstance(item, BaseException):
            raise item
        read, data = item
        del item
        progress.read(read)
        if unit.k is not None and direct is not None:
            # a split file: its events counted; after range 0, numbered on as written
            try:
                seq += _native._write_jsonl(data, seq if unit.k else None, direct or None)
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise _OutputFailed(name, exc) from None
            continue
        if unit.k is not None:
            data, lines = _native._rebase_jsonl(data, seq if unit.k else 0)
            seq += lines
        if data:
            out.write(data)
            out.flush()
        del data  # freed before the next item comes
    if done is not None:
        progress.file_done(done)
    return status


def _no_huge_pages() -> None:
    """No transparent huge pages for this process (Linux ``prctl(PR_SET_THP_DISABLE)``, what
    mimalloc's ``MIMALLOC_ALLOW_THP=0`` does; kept by child processes, and ``normalize`` starts
    none). The core's allocator asks for huge pages on its arenas: a 2 MiB page is resident
    once one byte of it is touched, and freed memory goes back to the system only in 2 MiB
    runs; ``normalize --jobs 2 --format parquet`` peaked ~30 MiB higher with them, no faster."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl: nothing to do
        pass


def _quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover
        pass


#: Bytes a ``--format parquet`` worker reads per step (its memory is about this chunk's
#: events, as Arrow batches waiting to be written).
PARQUET_CHUNK = 1 << 20
#: Arrow bytes gathered into one Parquet row group. The writer keeps every row group's
#: metadata until the file is closed (~0.1 MiB each, then the footer), so row groups of one
#: 2 MiB read each (~1,000 events) made memory grow with the output: 600 of them held
#: ~70 MiB by the end of a 1.2 GB input. At 16 MiB a GiB of input (all fields, ~4.3x as
#: Arrow) is ~300 row groups; the gathered batches are the other half of the cost, and the
#: writer's encoders grow with a row group's rows (lean row groups of 32 MiB peaked ~60 MiB
#: higher on 1 GiB).
ROW_GROUP_BYTES = 16 << 20


def _parquet(args: argparse.Namespace) -> int:
    """``--format parquet``: every input into the one Parquet file ``-o`` names, with the
    columns of ``normalize_arrow`` (of ``--fields``) and ``source``, file after file (each its
    own stream). ``--jobs N`` files are normalized at a time on worker threads (Arrow batches
    built by the core, GIL released) and written in input order, batch by batch: memory is
    bounded by the window of chunks (``ordered``), whatever the files' sizes."""
    if args.output is None:
        return _complain("--format parquet needs -o OUT.parquet")
    if args.reference or args.summary or "-" in args.files:
        return _complain("--format parquet reads files (not -) and takes no --reference/--summary")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return _complain("--format parquet needs pyarrow: pip install 'checkfu-fast[arrow]'")
    from .arrow import SOURCE, events_schema, source_column
    from .ordered import ordered

    for d in empty_dirs(args.files):
        return _complain(f"{d}: no stream files (*.jsonl, *.json, ...) in it")
    files = expand(args.files)
    for name in files:
        if not os.path.isfile(name):
            return _unreadable(name, FileNotFoundError(2, os.strerror(2), name))
    budgets = (args.max_line_bytes, args.max_depth, args.max_nodes)

    schema = events_schema(args.fields).append(pa.field(SOURCE, pa.large_string(), False))

    def tagged(name: str, events: Any) -> list[Any]:
        """The chunk's batches with their ``source`` column, made on the worker thread."""
        return [
            pa.RecordBatch.from_arrays(
                [*batch.columns, source_column(pa, name, batch.num_rows)], schema=schema
            )
            for batch in pa.RecordBatchReader.from_stream(events)
        ]

    def produce(name: str, put: Callable[[tuple[int, Any]], None]) -> None:
        n = Normalizer(args.dialect, max_line_bytes=budgets[0], max_depth=budgets[1],
                       max_nodes=budgets[2], fields=args.fields)  # fmt: skip
        with open_input(name) as f:
            while chunk := f.read(PARQUET_CHUNK):
                put((len(chunk), tagged(name, n.feed_arrow(chunk))))
        put((0, tagged(name, n.finish_arrow())))

    rows = size = 0
    group: list[Any] = []  # the batches of the row group being gathered, ``size`` bytes

    def write_group() -> int:
        """The batches gathered so far as one row group; their rows."""
        nonlocal size
        if not group:
            return 0
        table = pa.Table.from_batches(group, schema)
        group.clear()
        size = 0
        if table.num_rows:
            writer.write_table(table, row_group_size=table.num_rows)
        return int(table.num_rows)

    progress = Progress(files, wanted(args.progress))
    done: str | None = None
    refuse_aliases(files, [args.output])
    try:
        # a temporary file renamed onto OUT when complete (removed on failure or Ctrl-C)
        # the system allocator for the writer's buffers: pyarrow's default pool (mimalloc or
        # jemalloc) keeps what it freed, ~30 MiB more at the peak for nothing faster
        pool = pa.system_memory_pool()
        with (
            atomic_output(args.output) as tmp,
            pq.ParquetWriter(tmp, schema, memory_pool=pool) as writer,
        ):
            window = ordered(files, args.jobs, produce, budget=WINDOW_BYTES, cost=_cost)
            for name, item in window:
                if done is not None and done != name:
                    progress.file_done(done)
                done = name
                if isinstance(item, BaseException):
                    raise item
                read, batches = item
                del item
                progress.read(read)
                group.extend(batches)
                size += _cost((0, batches))
                del batches
                if size >= ROW_GROUP_BYTES:
                    rows += write_group()
            rows += write_group()
            if done is not None:
                progress.file_done(done)
    finally:
        progress.close()
    print(f"{rows} events from {len(files)} file(s) -> {args.output}", file=sys.stderr)
    return 0


def _fields_option(value: str | None) -> str | list[str] | None:
    """``--fields``: ``all``, ``lean`` or a comma list of field names (checked: an unknown name
    is an error naming the valid ones)."""
    if value is None or value in ("all", "lean"):
        return value
    names = [n.strip() for n in value.split(",") if n.strip()]
    _options.resolve_fields(names)
    return names


def _normalize(args: argparse.Namespace) -> int:
    args.fields = _fields_option(args.fields)
    _check_options(args)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.format == "parquet":
        return _parquet(args)
    status = 0
    for d in empty_dirs(args.files):
        status = _complain(f"{d}: no stream files (*.jsonl, *.json, ...) in it")
    files = expand(args.files)
    if args.output is not None:
        refuse_aliases(files, [args.output])
        # a temporary file renamed onto OUT when complete (removed on failure or Ctrl-C)
        # (appending: ``--jobs`` writes some of it through a descriptor of its own)
        with atomic_output(args.output) as tmp, open(tmp, "ab") as f:
            out: Any = _Guarded(f, args.output)
            status = max(status, _normalize_to(args, out, files, tmp))
            out.flush()
        return status
    refuse_aliases(files, [sys.stdout.fileno()])
    return max(status, _normalize_to(args, sys.stdout.buffer, files))


def _normalize_to(
    args: argparse.Namespace, out: BinaryIO, files: list[str], path: str | None = None
) -> int:
    """``files`` normalized into ``out`` (``path``: the file it writes, in append mode)."""
    counts: Counter[str] = Counter()
    status = 0
    many = len(files) > 1
    progress = Progress(files, wanted(args.progress))
    try:
        if args.jobs > 1 and not (args.reference or args.summary or "-" in files):
            status = max(status, _parallel(args, files, out, many, progress, path))
        else:
            for name in files:
                try:
                    if name == "-":
                        fd = sys.stdin.buffer.fileno()
                        _stream(fd, out, args, "-" if many else None, counts, progress)
                    else:
                        with open_input(name) as f:
                            fd = plain_fd(f)
                            src = f if fd is None else fd
                            _stream(src, out, args, name if many else None, counts, progress)
                except BrokenPipeError:
                    raise
                except OSError as exc:
                    progress.clear()
                    status = _unreadable(name, exc)
                progress.file_done(name)
        out.flush()
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, as a filter does
        _quiet_stdout()
        return 0
    finally:
        progress.close()
    if args.summary:
        total = sum(counts.values())
        print(f"{total} events from {len(files)} file(s)", file=sys.stderr)
        for key, n in sorted(counts.items()):
            print(f"  {n:6d}  {key}", file=sys.stderr)
    return status


def _golden(args: argparse.Namespace) -> int:
    from . import normalize

    fn = reference.normalize if args.reference else normalize
    if not Path(args.dir).is_dir():
        return _complain(f"{args.dir}: not a directory")
    failed = total = 0
    for dialect, inp, exp in golden.cases(Path(args.dir)):
        total += 1
        if not exp.exists():
            print(f"MISSING {inp} (no {exp.name})")
            failed += 1
            continue
        diffs = golden.check(dialect, inp, exp, fn)
        print(f"{'ok  ' if not diffs else 'FAIL'} {dialect}/{inp.name}")
        for d in diffs[:50]:
            print(f"    {d}")
        failed += bool(diffs)
    print(f"{total - failed} passed, {failed} failed")
    if not total:
        return _complain(f"{args.dir}: no golden files (DIALECT/NAME.input.jsonl) to check")
    return 1 if failed else 0


def _journal(args: argparse.Namespace) -> int:
    from . import validate_journal

    fn = reference.validate_journal if args.reference else validate_journal
    status = 0
    for name in args.files:
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            status = _unreadable(name, exc)
            continue
        violations = fn(data)
        for v in violations:
            kind = f" ({v['kind']})" if v["kind"] is not None else ""
            print(
                f"{name}:{v['line']}: {v['pointer'] or '/'}: {v['message']} [{v['keyword']}]{kind}"
            )
        records = sum(1 for line in data.split(b"\n") if line.strip(b" \t\r\x0b\x0c"))
        unknown = sum(v["keyword"] == "unknown_kind" for v in violations)
        bad = len({v["line"] for v in violations})
        print(
            f"{name}: {records} records, {bad} with violations "
            f"({len(violations)} violations, {unknown} unknown kinds)",
            file=sys.stderr,
        )
        if not records:
            status = _complain(f"{name}: no journal records to check")
        elif violations:
            status = 1
    return status


def _vectors(args: argparse.Namespace) -> int:
    from .oneshot import check_vector_file

    status = 0
    names: list[str] = []
    for name in args.files:  # a directory means the *.json files in it
        path = Path(name)
        if not path.is_dir():
            names.append(name)
        elif found := sorted(map(str, path.glob("*.json"))):
            names += found
        else:
            status = max(status, _complain(f"{name}: no vector files (*.json) to check"))
    for name in names:
        try:  # unreadable: 1 like every command; a file that is not a vector file: 2
            with open(name, "rb"):
                pass
        except OSError as exc:
            status = max(status, _unreadable(name, exc))
            continue
        checked = check_vector_file(name, live=args.live)
        for line in checked.lines():
            print(line)
        if checked.error is not None:
            status = 2
        elif not checked.ok:
            status = max(status, 1)
    return status


def _read_json(path: str, what: str) -> Any:
    from .oneshot.contract import load_json

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _Unreadable(f"{what} {path}: {exc.strerror or exc}") from None
    return load_json(data, f"{what} {path}")


def _read_state(path: str) -> Any:
    """The prior state: a state object, the ``{"resulting_state": ...}`` line ``run`` printed,
    or ``run``'s whole output (its last line is that one)."""
    from .oneshot.contract import load_json

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _Unreadable(f"state {path}: {exc.strerror or exc}") from None
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) > 1:  # run's output: observations, then the state line
        data = lines[-1]
    state = load_json(data, f"state {path}")
    if isinstance(state, dict) and list(state) == ["resulting_state"]:
        state = state["resulting_state"]
    return state


class _Unreadable(Exception):
    """An input file of ``run`` that cannot be read: exit status 1, like every command."""


def _run(args: argparse.Namespace) -> int:
    import os
    import signal
    import threading

    from .oneshot import (
        TurnRequest,
        TurnStream,
        contracts,
        minimal_environment,
        stream_turn,
        validate_contract,
    )

    if args.contract in contracts.NAMES and not Path(args.contract).exists():
        contract = contracts.get(args.contract)  # a shipped contract (and its dialect)
    else:
        contract = validate_contract(_read_json(args.contract, "contract"))
    try:
        prompt = Path(args.prompt_file).read_bytes().decode("utf-8")
    except OSError as exc:
        raise _Unreadable(f"prompt file {args.prompt_file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CheckfuError(f"prompt file {args.prompt_file}: {exc}") from None
    request = TurnRequest(
        prompt,
        _read_state(args.state) if args.state else None,
        _read_json(args.output_schema, "output schema") if args.output_schema else None,
    )
    extra = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq:
            if name not in os.environ:
                continue
            value = os.environ[name]
        extra[name] = value

    # SIGINT/SIGTERM: cancel the turn and still print its ending and state (a second one, or
    # one before the turn started, interrupts at once; the stream's cleanup still runs)
    stopped: list[int] = []
    running: list[TurnStream] = []  # the TurnStream, once it exists

    def stop(signum: int, frame: object) -> None:
        if stopped or not running:
            raise KeyboardInterrupt
        stopped.append(signum)
        running[0].cancel()

    main_thread = threading.current_thread() is threading.main_thread()
    previous = (
        {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        if main_thread
        else {}
    )
    out = sys.stdout.buffer
    last = None
    try:
        with stream_turn(
            contract,
            request,
            env=minimal_environment(extra),
            deadline_s=args.deadline,
            output_cap=args.output_cap,
            dialect=None if args.dialect == "auto" else args.dialect,  # None: contract's
            implementation="reference" if args.reference else "native",
            entrypoint=args.entrypoint,
        ) as stream:
            running.append(stream)
            for obs in stream:  # each observation as soon as the harness caused it
                out.write(_dumps(obs))
                out.flush()
                last = obs
            result = stream.result
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out.write(_dumps({"resulting_state": result.resulting_state}))
    out.flush()
    if args.state_out:
        Path(args.state_out).write_text(json.dumps(result.resulting_state) + "\n", "utf-8")
    if stopped:
        return 128 + stopped[0]
    if last is not None and last["type"] == "observation.finished":
        return 0
    return _complain(_failure(last)) if last is not None else 1


def _failure(obs: dict[str, Any]) -> str:
    """The turn's ending observation for stderr: its type, error code and message (which ends
    with the harness's stderr tail when the harness failed)."""
    error = obs.get("payload", {}).get("error") or {}
    head = f"turn ended with {obs['type']}"
    action = obs.get("payload", {}).get("action")
    if isinstance(action, dict):  # blocked on a human (the last of the turn's actions)
        what = action.get("tool_use_id") or action.get("question")
        need = "the turn needs a human (an approval or an answer)"
        return f"{head}: {action.get('kind')} {what}: {need}"
    if not isinstance(error, dict):
        return head
    code, message = error.get("type"), error.get("message")
    return f"{head}: {code}: {message}" if message else f"{head}: {code}"


DESCRIPTION = """\
Normalize coding-agent CLI streams (claude, cursor, codex, opencode, pi, grok, and dialects
defined by mapping files) into events/v1 JSONL, replay golden and oneshot-v1 vector files,
validate runner journals, and run one oneshot-v1 harness turn."""
EXIT_CODES = """exit codes (every command):
  0    success
  1    a failed check (golden or vector mismatch, journal violation, a turn that did not
       finish), an unreadable input file, or nothing to check (no golden pairs, no vector
       files in a directory, a journal without records)
  2    usage error: bad option, unknown dialect or bad mapping file, bad budget, a rejected
       contract or vector file
  130  interrupted (Ctrl-C)"""
EXAMPLES = {
    None: """examples:
  checkfu-fast normalize --summary vectors/samples/claude-api-error.jsonl
  checkfu-fast golden vectors/events
  checkfu-fast vectors vectors/oneshot
  checkfu-fast COMMAND --help""",
    "normalize": """examples:
  checkfu-fast normalize agent-output.jsonl > events.jsonl
  claude -p --output-format stream-json --verbose "hi" | checkfu-fast normalize -
  checkfu-fast normalize --dialect codex --summary run1.jsonl run2.jsonl
  checkfu-fast normalize --dialect my-format.json stream.jsonl    # a user mapping file
  checkfu-fast normalize --format parquet -o events.parquet run1.jsonl run2.jsonl""",
    "golden": """examples:
  checkfu-fast golden                      # vectors/events
  checkfu-fast golden --reference vectors/events""",
    "journal": """examples:
  checkfu-fast journal runner-journal.jsonl
  tail -n 1000 runner-journal.jsonl | checkfu-fast journal -""",
    "dialects": """examples:
  checkfu-fast dialects""",
    "vectors": """examples:
  checkfu-fast vectors vectors/oneshot-v1-author-kit.json
  checkfu-fast vectors vectors/oneshot               # every *.json in the directory
  checkfu-fast vectors --live vectors/oneshot""",
    "audit": """examples:
  checkfu-fast audit vectors/samples/
  checkfu-fast audit --strict --dialect claude --json today/*.jsonl   # CI of a pinned CLI""",
    "report": """examples:
  checkfu-fast report --by day,model            # ~/.claude and ~/.codex, local days
  checkfu-fast report --by month --since 2026-01-01 --tz Europe/Berlin
  checkfu-fast report --by block --active        # 5-hour windows, the open one's burn rate
  checkfu-fast report --by model --json ~/agent-logs/
  checkfu-fast report --limits                   # rate-limit windows: USD per 1 %, burn rate""",
    "export": """examples:
  checkfu-fast export --format atif -o trajectories/ ~/.claude/projects/my-project/
  claude -p --output-format stream-json --verbose "hi" | checkfu-fast export --format html -
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 checkfu-fast export --format otel run.jsonl""",
    "run": """examples:
  checkfu-fast run contract.json --prompt-file prompt.txt --state-out state.json
  checkfu-fast run contract.json --prompt-file next.txt --state state.json --env ANTHROPIC_API_KEY
  checkfu-fast run contract.json --prompt-file p.txt --output-schema answer.schema.json""",
}


def _dialect(value: str) -> str | MappedDialect:
    """``--dialect``: a dialect name, or the path of a mapping file ending in ``.json``."""
    if value.endswith(".json"):
        if not Path(value).is_file():
            raise argparse.ArgumentTypeError(f"mapping file {value} not found")
        from .reference import load_dialect

        try:
            return load_dialect(value)
        except (CheckfuError, OSError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    if value == "auto" or value in DIALECTS:
        return value
    raise argparse.ArgumentTypeError(
        f"unknown dialect {value!r} (choose from auto, {', '.join(DIALECTS)}, "
        "or give the path of a mapping file ending in .json)"
    )


def _add_dialect(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dialect",
        type=_dialect,
        default="auto",
        metavar="D",
        help=f"auto (default), {', '.join(DIALECTS)}, or a mapping file PATH.json",
    )


def _command(
    sub: Any, name: str, help: str, description: str | None = None
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description or help[0].upper() + help[1:] + ".",
        epilog=f"{EXAMPLES[name]}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


class _Unused:
    """The parser of a command that is not the one being run (:func:`build_parser`): what is
    added to it goes nowhere."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Unused:
        return self


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given ``command`` (the one being run), only that command's
    parser is made (the others' options go nowhere, :class:`_Unused`): ``report``'s and
    ``export``'s modules (``report``'s fold and prices, ``export``'s writers) are imported for
    them only, and are most of the command line's import time (``normalize`` needs neither);
    and every parser argparse makes looks its messages up with ``gettext``, a search of the
    locale directories on disk each time (``build_parser("normalize")`` 17M instructions with
    every command's parser, a tenth of the command's start). Without ``command``, every
    command's parser (``--help``, an unknown command's error)."""
    p = argparse.ArgumentParser(
        prog="checkfu-fast",
        description=DESCRIPTION,
        epilog=f"{EXAMPLES[None]}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def _cmd(name: str, help: str) -> argparse.ArgumentParser:
        if command not in (None, name):
            return cast(argparse.ArgumentParser, _Unused())
        return _command(sub, name, help)

    n = _cmd("normalize", "normalize agent streams to events/v1 JSONL")
    n.add_argument(
        "files", nargs="+", metavar="FILE|DIR", help="input file, directory, or - for stdin"
    )
    _add_dialect(n)
    n.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    n.add_argument("--summary", action="store_true", help="print event counts to stderr")
    n.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="normalize N files at a time in parallel, every large file split at newlines "
        "into ranges done in parallel (same output; default 1)",
    )
    n.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="jsonl (default) or parquet (needs -o and pyarrow: checkfu-fast[arrow])",
    )
    n.add_argument(
        "-o", "--output", metavar="OUT", help="write to OUT instead of stdout (parquet: required)"
    )
    n.add_argument(
        "--fields",
        metavar="F",
        help="all (default: schema-valid events), lean (all but raw and parsed, never computed) "
        "or a comma list of field names (docs/events.md, Projections)",
    )
    add_arguments(n)
    n.add_argument("--max-line-bytes", type=int, default=64 << 20)
    n.add_argument("--max-depth", type=int, default=64)
    n.add_argument("--max-nodes", type=int, default=1_000_000)
    g = _cmd("golden", "replay golden files and diff")
    g.add_argument("dir", nargs="?", default="vectors/events", metavar="DIR")
    g.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    j = _cmd("journal", "validate runner journal records against the schema")
    j.add_argument("files", nargs="+", metavar="FILE", help="journal file, or - for stdin")
    j.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    _cmd("dialects", "list dialect names")
    v = _cmd("vectors", "replay oneshot-v1 author-kit vector files and diff")
    v.add_argument("files", nargs="+", metavar="FILE", help="vector file, or a directory of them")
    v.add_argument("--live", action="store_true", help="run the stub harness for real")
    r = _cmd("run", "run one oneshot-v1 turn: observations JSONL, then the state")
    r.add_argument(
        "contract",
        metavar="CONTRACT.json",
        help="a contract file, or the name of a shipped one (claude, codex, cursor, opencode, "
        "pi, grok)",
    )
    r.add_argument("--prompt-file", required=True, metavar="P")
    r.add_argument(
        "--state",
        metavar="S.json",
        help="the prior state (resume): a state object, the resulting_state line run printed, "
        "or run's whole output",
    )
    r.add_argument("--output-schema", metavar="O.json", help="the answer's JSON schema")
    r.add_argument("--state-out", metavar="FILE", help="also write the new state here")
    _add_dialect(r)
    r.add_argument("--deadline", type=float, default=600.0, help="seconds (default 600)")
    r.add_argument("--output-cap", type=int, default=64 << 20, help="bytes (default 64 MiB)")
    r.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="pass this variable to the harness (repeatable); nothing else is inherited",
    )
    r.add_argument("--entrypoint", help="run this binary instead of the contract's entrypoint")
    r.add_argument("--reference", action="store_true", help="use the pure-Python normalizer")
    rep = _cmd("report", "tokens and cost (USD) per session, model, day, block...")
    if command in (None, "report"):
        from . import report

        report.add_arguments(rep)
        _add_dialect(rep)
        add_arguments(rep)
    x = _cmd("export", "export sessions as ATIF trajectories, OTLP spans or HTML pages")
    if command in (None, "export"):
        from .export._cli import add_arguments as export_arguments

        export_arguments(x)
        _add_dialect(x)
        add_arguments(x)
    a = _cmd("audit", "drift radar: unknown record types and fields per dialect")
    a.add_argument("files", nargs="+", metavar="FILE|DIR", help="stream file, directory, or -")
    _add_dialect(a)
    a.add_argument("--json", action="store_true", help="print the report as one JSON object")
    a.add_argument("--strict", action="store_true", help="exit 1 when anything is unknown")
    a.add_argument("--reference", action="store_true", help="use the pure-Python normalizer")
    add_arguments(a)
    return p


def _audit(args: argparse.Namespace) -> int:
    from .audit import main as audit_main

    return audit_main(args)


def _report(args: argparse.Namespace) -> int:
    from .report import main as report_main

    return report_main(args)


def _export(args: argparse.Namespace) -> int:
    from .export._cli import main as export_main

    return export_main(args)


def _dialects(args: argparse.Namespace) -> int:
    print("\n".join(DIALECTS))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "normalize": _normalize,
    "golden": _golden,
    "journal": _journal,
    "dialects": _dialects,
    "vectors": _vectors,
    "run": _run,
    "report": _report,
    "audit": _audit,
    "export": _export,
}


def _warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings (a skipped FIFO in a directory ...) as one line on stderr."""
    if sys.stderr is not None:
        print(f"checkfu-fast: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    import warnings

    real = sys.stdout is not None and sys.stdout is sys.__stdout__
    saved = warnings.showwarning
    if real:
        sys.stdout = cast(Any, _Guarded(sys.stdout, "standard output"))
    warnings.showwarning = _warning
    try:
        given = sys.argv[1:] if argv is None else argv
        # the command: the first word (the parser takes no option of its own but --help and
        # --version, which need no command's options)
        first = given[0] if given else None
        args = build_parser(first if first in COMMANDS else None).parse_args(argv)
        if argv is None and args.command == "normalize":  # the process is this command
            _no_huge_pages()
        if sys.stdout is None and not (args.command == "normalize" and args.output):
            return _complain("standard output is closed (give -o FILE or redirect it)")
        status = COMMANDS[args.command](args)
        if sys.stdout is not None:
            sys.stdout.flush()
        return status
    except _Unreadable as exc:
        return _complain(str(exc))
    except _OutputFailed as exc:
        if real:
            _quiet_stdout()
        return _complain(str(exc))
    except (CheckfuError, ValueError, NotImplementedError) as exc:
        print(f"checkfu-fast: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: quietly, with the shell's code for SIGINT
        return 130
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        _quiet_stdout()
        return 0
    finally:
        warnings.showwarning = saved
        if real:
            sys.stdout = sys.__stdout__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
