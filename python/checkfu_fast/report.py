"""``checkfu-fast report``: token and cost totals of many agent streams (docs/usage.md).

Each file's stream is folded by the core (:func:`fold_files`: ``_native._usage_fold_files``,
every core, no event dicts) into a :class:`checkfu_fast.usage.StreamSummary`, or taken from the
per-file cache (:mod:`checkfu_fast.report_cache`), and merged in file order into one
:class:`checkfu_fast.usage.UsageFold`, so memory stays bounded by the number of groups, not by
the size of the files. Stdin and the files the core leaves to Python are streamed through
:class:`checkfu_fast.Normalizer` (only :data:`FOLD_FIELDS`: no ``raw``, no ``parsed``) in
64 KiB chunks (:func:`fold_stream`). Directories are walked by the shared rule of
:mod:`checkfu_fast.paths` (recursive, stream file suffixes only, hidden entries skipped, stable
sorted order). Without a path, the default locations of claude and codex are read
(:func:`default_paths`).
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import itertools
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime, timezone, tzinfo
from typing import Any, BinaryIO

from . import Normalizer, _native_dialect, report_cache
from . import prices as _prices
from .inputs import open_input
from .outputs import printable
from .paths import empty_dirs, expand
from .progress import Progress, wanted
from .report_cache import Memo, SummaryCache
from .report_inputs import default_paths, local_zone
from .usage import DIMENSIONS, CoreFold, Inexact, Lazy, StreamSummary, UsageFold

# the event fields UsageFold reads (usage.py; never ``parsed`` or ``raw``): the report asks
# the core for these only (``text`` for codex's ``turn_context`` model)
FOLD_FIELDS = (
    "position",
    "text",
    "retry",
    "usage",
    "usageScope",
    "messageId",
    "reasoningTokens",
    "cacheWriteTokens",
    "cacheWrite1hTokens",
    "speed",
    "emptyResult",
    "continuation",
    "sessionId",
    "timestamp",
    "nativeType",
    "repeatsError",
    "requestId",
    "sidechain",
    "cwd",
)
# files folded by the core at a time (on every core), merged in order while the next is folded
BATCH = 64
# files folded and merged by the core at a time with --progress (the progress told between)
PROGRESS_FILES = 256
# Normalizer's default budgets (max_line_bytes, max_depth, max_nodes)
BUDGET = (64 << 20, 64, 1_000_000)
# bytes fed at a time: the events of one feed are alive together, and 64 KiB of 2-byte lines
# is 32k event dicts (1 MiB was 512k: a 1.1 GB peak on a short-line gzip bomb)
CHUNK = 1 << 16
_KEYS = {"session": "bySession", "model": "byModel", "day": "byDay"}
_HEADS = {
    "session": "Session",
    "model": "Model",
    "day": "Day",
    "week": "Week",
    "month": "Month",
    "project": "Project",
    "block": "Block",
}
WIDTH = 80


def add_arguments(r: Any) -> None:
    """The ``report`` subcommand's arguments, on its argparse parser (cli.py makes it)."""
    r.add_argument(
        "paths",
        nargs="*",
        metavar="FILE|DIR",
        help="stream file, directory, or - (default: the claude and codex session folders)",
    )
    r.add_argument(
        "--by",
        default="session",
        metavar="DIM[,DIM]",
        help=f"group by {'|'.join(DIMENSIONS)}, or a comma list (default session)",
    )
    r.add_argument("--json", action="store_true", help="print JSON for scripts")
    r.add_argument("--csv", action="store_true", help="print CSV rows for spreadsheets")
    r.add_argument("--tz", metavar="ZONE", help="IANA time zone of days (default: local, TZ)")
    r.add_argument("--since", metavar="YYYY-MM-DD", help="first day counted (inclusive)")
    r.add_argument("--until", metavar="YYYY-MM-DD", help="last day counted (inclusive)")
    r.add_argument(
        "--active", action="store_true", help="the open 5-hour block: burn rate, projection"
    )
    r.add_argument("--prices", metavar="FILE", help="price file over the shipped snapshot")
    r.add_argument(
        "--no-estimate", action="store_true", help="keep only the costs the CLIs reported"
    )
    r.add_argument(
        "--no-cache",
        action="store_true",
        help="read every file again (no per-file cache under ~/.cache/checkfu_fast)",
    )
    r.add_argument(
        "--limits",
        action="store_true",
        help="rate-limit windows: latest reading, tokens and USD per 1%%, burn rate",
    )


def iter_files(paths: list[str]) -> Iterator[str]:
    """Every input: files as given, directories walked (:func:`checkfu_fast.paths.expand`)."""
    yield from expand(paths)


def recognised_none(name: str, dialect: str, unknown: int, progress: Progress) -> None:
    """Say on stderr that ``--dialect`` recognised none of a file's lines (the caller exits 1)."""
    progress.clear()
    print(
        f"checkfu-fast: {name}: --dialect {dialect} recognised none of its "
        f"{unknown} line(s) (another CLI's stream? try without --dialect)",
        file=sys.stderr,
    )


def unreadable(name: str, exc: OSError, progress: Progress) -> None:
    """Say on stderr that a file could not be read (the caller exits 1)."""
    progress.clear()
    print(f"checkfu-fast: {printable(f'{name}: {exc.strerror or exc}')}", file=sys.stderr)


def fold_stream(
    fold: UsageFold | CoreFold,
    src: BinaryIO,
    dialect: Any = "auto",
    progress: Progress | None = None,
    project: str | None = None,
) -> tuple[int, int]:
    """Normalize one stream chunk by chunk and fold its events (none are kept). Returns how
    many events were recognised and how many were ``status/unknown`` (lines the dialect did
    not know)."""
    n = Normalizer(dialect, fields=list(FOLD_FIELDS))
    fold.start_stream(project)
    known = unknown = 0

    def take(evs: list[dict[str, Any]]) -> None:
        nonlocal known, unknown
        for ev in evs:
            if ev.get("kind") == "status" and ev.get("subtype") == "unknown":
                unknown += 1
            elif ev.get("kind") != "error":
                known += 1
            fold.add(ev)

    while chunk := src.read(CHUNK):
        if progress is not None:
            progress.read(len(chunk))
        take(n.feed(chunk))
    take(n.finish())
    fold.end_stream()
    return known, unknown


def core_batches(names: list[str], core: bool) -> Iterator[str | list[str]]:
    """``names`` in order as the core folds them: runs of at most :data:`BATCH` files as lists,
    and as a bare name each ``-`` (stdin) and, without the core, every file (the caller folds
    those itself)."""
    i = 0
    while i < len(names):
        if names[i] == "-" or not core:
            yield names[i]
            i += 1
            continue
        batch: list[str] = []
        while i < len(names) and names[i] != "-" and len(batch) < BATCH:
            batch.append(names[i])
            i += 1
        yield batch


def fold_files(
    fold: UsageFold | CoreFold,
    names: list[str],
    dialect: Any = "auto",
    jobs: int | None = None,
    cache: SummaryCache | None = None,
) -> Iterator[tuple[str, tuple[int, int] | None]]:
    """Fold the files ``names`` in order: each stream is folded by the core
    (``_native._usage_fold_files``: every core, the GIL released, no event dicts) into its
    :class:`~checkfu_fast.usage.StreamSummary`, or taken from ``cache`` while the file is
    unchanged (:mod:`checkfu_fast.report_cache`), and merged into ``fold`` (a
    :class:`~checkfu_fast.usage.CoreFold` takes the core's summaries as they are). Yields,
    per name in order, ``(name, (known, unknown))`` once it is merged, or ``(name, None)``
    where the caller must fold it itself (:func:`fold_stream`): ``-``, a file the core could
    not read (the caller then meets the same error) or one with what only the Python fold
    reads right, and every file when the core is absent. Names are yielded in file order, so
    the caller's fold stays in it; the next batch is folded on a thread of its own
    (:class:`_Ahead`, the GIL released) while the caller merges this one's."""
    native = _native_module()
    core = isinstance(fold, CoreFold)
    if not isinstance(dialect, str):
        cache = None  # a mapping file's dialect may change under the same name

    def results_of(job: tuple[int, list[str]]) -> list[Any]:
        start, batch = job
        projects = [claude_project(n) for n in batch]
        if cache is None:
            return list(
                native._usage_fold_files(
                    list(zip(batch, projects, strict=True)),
                    _native_dialect(dialect),
                    *BUDGET,
                    jobs,
                    **({"handles": True} if core else {}),
                )
            )
        # unchanged files from the cache; one that grew read from where it ended
        return list(
            cache.fold(
                native,
                batch,
                projects,
                dialect,
                _native_dialect(dialect),
                BUDGET,
                jobs,
                stamps=cache.rows(start, len(batch)),
            )
        )

    batches = list(core_batches(names, native is not None))
    starts = list(
        itertools.accumulate((len(b) if isinstance(b, list) else 1 for b in batches), initial=0)
    )
    ahead: _Ahead | None = None
    try:
        for i, batch in enumerate(batches):
            if isinstance(batch, str):
                yield batch, None
                continue
            results = ahead.get() if ahead is not None else results_of((starts[i], batch))
            # the next batch folded (the GIL released) while this one is merged and yielded
            nxt = batches[i + 1] if i + 1 < len(batches) else None
            ahead = _Ahead(results_of, (starts[i + 1], nxt)) if isinstance(nxt, list) else None
            yield from _merged(fold, native, core, dialect, batch, results)
    finally:
        if ahead is not None:
            ahead.join()


class _Ahead(threading.Thread):
    """``fn(arg)`` on a thread of its own, started at once; :meth:`get` waits for its result
    (or raises what it raised)."""

    def __init__(self, fn: Callable[[Any], Any], arg: Any) -> None:
        super().__init__(name="checkfu-fast-report-ahead", daemon=True)
        self.fn, self.arg = fn, arg
        self.result: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.fn(self.arg)
        except BaseException as exc:  # handed to the caller as it is (get)
            self.error = exc

    def get(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.result


def _merged(
    fold: UsageFold | CoreFold,
    native: Any,
    core: bool,
    dialect: Any,
    batch: list[str],
    results: list[Any],
) -> Iterator[tuple[str, tuple[int, int] | None]]:
    """:func:`fold_files`' yields for one batch's ``results``, each merged into ``fold``."""
    take = _hit if core else _summary
    done = [None if res is None else take(res) for res in results]
    for name, got in zip(batch, done, strict=True):
        if got is None:
            yield name, None
            continue
        summary, known, unknown = got
        try:
            fold.merge(summary)
        except (ValueError, OverflowError):
            if not core:
                raise
            # a cache entry the core refuses (checked as merged): the file read again
            res = native._usage_fold_files(
                [(name, claude_project(name))],
                _native_dialect(dialect),
                *BUDGET,
                1,
                handles=True,
            )[0]
            if res is None:
                yield name, None
                continue
            summary, known, unknown = res
            fold.merge(summary)
        yield name, (known, unknown)


def _summary(res: Any) -> tuple[StreamSummary, int, int] | None:
    """A core result (or a cache entry) as ``(summary, known, unknown)``; None when it is not
    one (a damaged cache entry: the file is folded again)."""
    try:
        summary, known, unknown = res
        if not (isinstance(known, int) and isinstance(unknown, int)):
            return None
        return StreamSummary.of(summary), known, unknown
    except (TypeError, ValueError, IndexError, KeyError):
        return None


def _hit(res: Any) -> tuple[Any, int, int] | None:
    """A core result or cache entry as ``(summary, known, unknown)`` for a :class:`CoreFold`
    (the summary as it is: the core checks it as it merges it); None when it is not one."""
    try:
        summary, known, unknown = res[:3]
    except (TypeError, ValueError):
        return None
    if not (isinstance(known, int) and isinstance(unknown, int)):
        return None
    return summary, known, unknown


def _native_module() -> Any:
    """The core, or None where the package runs on the reference (it could not be loaded)."""
    try:
        from . import _native as native
    except ImportError:  # pragma: no cover - the package falls back to the reference
        return None
    return native


def claude_project(path: str) -> str | None:
    """A claude session file's project folder (``projects/<encoded-cwd>/...``), else None."""
    parts = os.path.normpath(path).split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "projects" and parts[i]:
            return parts[i]
    return None


def _finite(v: Any) -> Any:
    """``v`` with every float that is not finite (a sum that overflowed) as None: JSON has no
    ``Infinity``/``NaN`` and ``--json`` output is always valid JSON."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def dumps(doc: Any) -> str:
    """``--json``'s text: ``json.dumps(doc, indent=2, allow_nan=False)`` with every float that is
    not finite as null (:func:`_finite`). The core writes the same bytes (``_json_indent2``:
    the stdlib encoder with an indent is pure Python, a third of a large report's time); where
    it declines (a float that is not finite, a type that is not plain JSON), ``json.dumps``."""
    encode = getattr(_native_module(), "_json_indent2", None)
    text = encode(doc) if encode is not None else None
    if isinstance(text, str):
        return text
    return json.dumps(_finite(doc), indent=2, allow_nan=False)


def write_json(doc: dict[str, Any], write: Callable[[str], Any]) -> None:
    """``dumps(doc)`` and a newline, written in pieces: each :class:`~checkfu_fast.usage.Lazy`
    value (``bySession``, ``rows``) by the core where it writes it (``Lazy.text``: the text
    straight from the sums, 256 KiB at a time), else item by item as it is made, so neither its
    dicts nor the whole text are held at once (25 MB of text for a 1 GiB tree of 35,945
    sessions); the same text (an item's own lines indented to its depth: a JSON string has no
    newline)."""
    if not any(isinstance(v, Lazy) for v in doc.values()):
        write(dumps(doc))  # not `+ "\n"`: a copy of a big document's text
        write("\n")
        return
    write("{")
    for i, (key, v) in enumerate(doc.items()):
        write(("," if i else "") + "\n  " + json.dumps(key) + ": ")
        if not isinstance(v, Lazy):
            write(dumps(v).replace("\n", "\n  "))
        elif v.text is not None:
            v.text(write)  # the core writes the items' text
        elif not len(v):
            write("{}" if v.pairs else "[]")
        else:
            write("{" if v.pairs else "[")
            sep = "\n    "
            for item in v:
                k, x = item if v.pairs else (None, item)
                head = "" if k is None else json.dumps(k) + ": "
                write(sep + head + dumps(x).replace("\n", "\n    "))
                sep = ",\n    "
            write("\n  }" if v.pairs else "\n  ]")
    write("\n}\n")


def _int(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.1f}"


def _compact(v: Any) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.1f}{unit}"
    return _int(v)


_MARK = {"reported": "", "estimated": "~", "mixed": "*", "absent": ""}


def _cost(t: dict[str, Any]) -> str:
    if t["costUsd"] is None:
        return "-"
    c = t["costUsd"]
    return (f"{c:,.2f}" if c >= 100 else f"{c:.4f}") + _MARK[t["source"]]


def _endings(t: dict[str, Any]) -> str:
    """``ok``, ``empty``, ``failed`` (or ``2 ok, 1 failed``): how the streams ended."""
    seen: list[tuple[str, int]] = [(k, n) for k, n in t["endings"].items() if n]
    if len(seen) == 1 and seen[0][1] == 1:
        return seen[0][0]
    return ", ".join(f"{n} {k}" for k, n in seen) or "-"


def _local(iso: str | None, tz: tzinfo) -> str:
    if not iso:
        return "unknown"
    t = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return t.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def table(doc: dict[str, Any], by: list[str], files: int, tz: tzinfo, snapshot: Any = None) -> str:
    """The human table: one row per group, then the total, then notes; fits 80 columns
    (:func:`_fit`). See :func:`write_table`."""
    out: list[str] = []
    write_table(doc, by, files, tz, snapshot, out.append)
    return "".join(out)


def write_table(
    doc: dict[str, Any],
    by: list[str],
    files: int,
    tz: tzinfo,
    snapshot: Any,
    write: Callable[[str], Any],
) -> None:
    """:func:`table`'s text handed to ``write`` a run of lines at a time. The rows are gone
    through twice (``doc["rows"]`` and ``bySession`` may be :class:`~checkfu_fast.usage.Lazy`:
    made a chunk at a time by the core, never all held): once for the columns' widths, the
    notes' sources and the fit to 80 columns (:func:`_fit`, worked out on the widths), once
    for the lines; no row's cells are kept."""
    sessions = doc.get("bySession", {})
    session_only = by == ["session"]
    head = [_HEADS[d] for d in by]
    if session_only:
        head.append("Dialect")
    head += ["Input", "Output", "Cached", "Cost USD"]
    if session_only:
        head.append("Ending")
    text_cols = len(by) + (1 if session_only else 0)
    rows = doc["rows"]

    def each() -> Iterator[tuple[list[Any], dict[str, Any], dict[str, Any] | None]]:
        """Per row: its dimensions' values, its total, its session's (by session)."""
        if session_only and isinstance(sessions, Lazy):
            # the rows by session are bySession's totals, in the same (name) order
            for name, s in sessions:
                yield [name], s, s
            return
        for r in rows:
            yield [r[d] for d in by], r, (sessions.get(r["session"]) if session_only else None)

    def texts(vals: list[Any], s: dict[str, Any] | None) -> list[str]:
        """A row's text cells, uncut."""
        row: list[str] = []
        for d, v in zip(by, vals, strict=True):
            v = _local(v, tz) if d == "block" and v != "unknown" else v
            # names come from the input: control characters escaped for the terminal
            row.append(printable(str(v)))
        if session_only:
            row.append(printable(str((s if s is not None else {}).get("dialect", ""))))
        return row

    total = ["Total"] + [""] * (text_cols - 1)
    total_tail = [_endings(doc["total"])] if session_only else []
    t = doc["total"]
    keys = ("inputTokens", "outputTokens", "cachedTokens")
    # first pass: the widths of the text columns (before any cut), the cost and ending
    # columns, the counts written in full, and what the notes say of the rows
    longest = [max(len(head[i]), len(total[i])) for i in range(text_cols)]
    shortest = list(longest)
    cost_w = max(len(head[text_cols + 3]), len(_cost(t)))
    tail_w = max(len(head[-1]), len(total_tail[0])) if session_only else 0
    sources = {t["source"]}
    unknown = False
    count = 0
    for vals, r, s in each():
        count += 1
        for i, c in enumerate(texts(vals, s)):
            longest[i] = max(longest[i], len(c))
        cost_w = max(cost_w, len(_cost(r)))
        if session_only:
            tail_w = max(tail_w, len(_endings(s) if s is not None else "-"))
        sources.add(r["source"])
        unknown = unknown or "unknown" in vals
    nums: dict[Any, list[int]] = {}

    def widths(num: Callable[[Any], str], cut: dict[int, int]) -> list[int]:
        if num not in nums:  # the count columns' widths with this format (a pass over rows)
            cols = [max(len(head[text_cols + k]), len(num(t[keys[k]]))) for k in range(3)]
            for _, r, _ in each():
                for k in range(3):
                    cols[k] = max(cols[k], len(num(r[keys[k]])))
            nums[num] = cols
        text = [
            max(shortest[i], min(longest[i], cut[i])) if i in cut else longest[i]
            for i in range(text_cols)
        ]
        return [*text, *nums[num], cost_w, *([tail_w] if session_only else [])]

    num, cut, w = _fit(widths, text_cols)

    def line(r: list[str]) -> str:
        out = []
        for i, (c, width) in enumerate(zip(r, w, strict=True)):
            left = i < text_cols or (session_only and i == len(r) - 1)
            out.append(c.ljust(width) if left else c.rjust(width))
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * x for x in w)
    write(line(head) + "\n" + rule + "\n")
    lines: list[str] = []
    for vals, r, s in each():
        row = [_cut(c, cut.get(i)) for i, c in enumerate(texts(vals, s))]
        row += [num(r[k]) for k in keys]
        row.append(_cost(r))
        if session_only:
            row.append(_endings(s) if s is not None else "-")
        lines.append(line(row))
        if len(lines) >= 1024:
            write("\n".join(lines) + "\n")
            lines.clear()
    if lines:
        write("\n".join(lines) + "\n")
    out = [rule, line([*total, *(num(t[k]) for k in keys), _cost(t), *total_tail])]
    what = ",".join(by)
    out.append(f"{files} file(s), {count} row{'s' if count != 1 else ''} by {what}")
    notes = _notes(doc, by, tz, snapshot, sources, unknown)
    write("\n".join(out + notes) + "\n")


def _notes(
    doc: dict[str, Any],
    by: list[str],
    tz: tzinfo,
    snapshot: Any,
    sources: set[str] | None = None,
    unknown: bool | None = None,
) -> list[str]:
    """The notes under the table (``sources``: the rows' and the total's sources; ``unknown``:
    whether a row has a dimension ``unknown``; each found in ``doc["rows"]`` where not
    given)."""
    notes = []
    t = doc["total"]
    if sources is None:
        sources = {r["source"] for r in [*doc["rows"], t]}
    if unknown is None:
        unknown = any(r.get(d) == "unknown" for r in doc["rows"] for d in by)
    if snapshot is not None and t["estimatedUsd"]:
        notes.append(f"~ estimated at list prices ({snapshot.describe()})")
    elif snapshot is not None:
        notes.append(f"prices: {snapshot.describe()}")
    if "mixed" in sources:
        notes.append("* part reported by the CLI, part estimated or unpriced")
    if t["unpricedModels"]:
        notes.append("no price for: " + ", ".join(t["unpricedModels"]))
    if any(d in by for d in ("day", "week", "month", "block")):
        notes.append(f"times in {getattr(tz, 'key', None) or tz}")
        if unknown:
            notes.append(
                "unknown: usage whose event has no timestamp (stream formats rarely give one)"
            )
    ends = t["endings"]
    if by == ["session"] and (ends["empty"] or ends["failed"]):
        notes.append(
            "empty: a success result that gave no answer; failed: the stream ended on an error "
            "(whatever the exit status)"
        )
    return notes


def _fit(
    widths: Callable[[Callable[[Any], str], dict[int, int]], list[int]], text_cols: int
) -> tuple[Callable[[Any], str], dict[int, int], list[int]]:
    """The table's number format, cuts and column widths within :data:`WIDTH` (``widths(num,
    cut)``: the columns' widths with the counts written by ``num`` and the text columns cut
    to ``cut[i]`` characters): the longest text columns cut first (to 12 characters at
    least), then the token counts made compact (``12.3k``)."""
    for num in (_int, _compact):
        cut: dict[int, int] = {}
        w = widths(num, cut)
        while _width(w) > WIDTH:
            i = max(range(text_cols), key=lambda c: w[c])
            if w[i] <= 12:
                break
            cut[i] = max(w[i] - (_width(w) - WIDTH), 12)
            w = widths(num, cut)
        if _width(w) <= WIDTH:
            break
    return num, cut, w


def _cut(s: str, n: int | None) -> str:
    return s if n is None or len(s) <= n else s[: n - 1] + "…"


def _width(widths: list[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


CSV_FIELDS = (
    "inputTokens",
    "outputTokens",
    "cachedTokens",
    "cacheWriteTokens",
    "cacheWrite1hTokens",
    "reasoningTokens",
    "costUsd",
    "source",
    "estimatedUsd",
    "unpricedModels",
)


def to_csv(rows: Iterable[dict[str, Any]], by: list[str]) -> str:
    """One CSV line per row: the dimensions, then the totals' fields (empty where absent)."""
    out: list[str] = []
    write_csv(rows, by, out.append)
    return "".join(out)


def write_csv(rows: Iterable[dict[str, Any]], by: list[str], write: Callable[[str], Any]) -> None:
    """:func:`to_csv`'s text handed to ``write`` 1,024 rows at a time (``rows`` may be a
    :class:`~checkfu_fast.usage.Lazy`: never all held)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    dims = [d for dim in by for d in ((dim, "blockEnd") if dim == "block" else (dim,))]
    w.writerow([*dims, *CSV_FIELDS])
    for i, r in enumerate(rows, 1):
        vals = [r.get(d) for d in dims]
        for k in CSV_FIELDS:
            v = r.get(k)
            vals.append(" ".join(v) if isinstance(v, list) else v)
        w.writerow(["" if v is None else v for v in vals])
        if i % 1024 == 0:
            write(buf.getvalue())
            buf.seek(0)
            buf.truncate()
    write(buf.getvalue())


def _by(value: str) -> list[str]:
    dims = [d.strip() for d in value.split(",") if d.strip()]
    bad = [d for d in dims if d not in DIMENSIONS]
    if not dims or bad:
        raise ValueError(f"--by {value}: choose from {', '.join(DIMENSIONS)} (or a comma list)")
    if len(set(dims)) != len(dims):
        raise ValueError(f"--by {value}: a dimension twice")
    return dims


def _day(flag: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ValueError(f"{flag} {value}: not a date (YYYY-MM-DD)") from None


def main(args: argparse.Namespace) -> int:
    """``checkfu-fast report``: the output is written at the end, and kept in the memo
    (:func:`_memo_key`) when the run was clean."""
    args.memo = None
    out = sys.stdout
    # the output waits in a temporary file, not in memory (a big tree's --json is tens of MB
    # of text), then is copied out a MiB at a time (and into the memo)
    with tempfile.TemporaryFile(
        "w+", encoding="utf-8", errors="surrogatepass", newline=""
    ) as spool:
        sys.stdout = spool
        # the fold keeps one object per distinct message and session alive and makes no
        # cycles: the cyclic collector's passes over them cost a fifth of a big report's
        # time, and more the bigger the tree (a short-lived process: collected at its end)
        collecting = gc.isenabled()
        gc.disable()
        try:
            status = _main(args)
        finally:
            sys.stdout = out
            if collecting:
                gc.enable()

        def pieces() -> Iterator[str]:
            spool.seek(0)
            while piece := spool.read(1 << 20):
                yield piece

        for piece in pieces():
            out.write(piece)
        if status == 0 and args.memo is not None:
            memo, key = args.memo
            memo.put_pieces(key, pieces)
    return status


def _main(args: argparse.Namespace) -> int:
    by = _by(args.by)
    tz = local_zone(args.tz)
    since, until = _day("--since", args.since), _day("--until", args.until)
    snap = _prices.snapshot()
    if args.prices:
        try:
            snap = _prices.load(args.prices)
        except OSError as exc:
            raise ValueError(f"{args.prices}: {exc.strerror or exc}") from None
    estimate = not args.no_estimate
    status = 0
    paths: list[str] = list(args.paths)
    # the walk the entry point made asking the memo, when it found nothing kept: taken as it is
    walked = report_cache.take_walk(paths)
    if walked is not None and not paths:
        names = walked[0]  # (the memo's walk found folders)
    elif not paths:
        names, dirs = default_paths()
        if not dirs:
            print(
                "checkfu-fast: no claude or codex session folder found (~/.claude/projects, "
                "~/.config/claude/projects, ~/.codex/sessions; CLAUDE_CONFIG_DIR, CODEX_HOME)",
                file=sys.stderr,
            )
            status = 1
    else:
        for d in empty_dirs(paths):
            print(
                f"checkfu-fast: {d}: no stream files (*.jsonl, *.json, ...) in it", file=sys.stderr
            )
            status = 1
        names = expand(paths) if walked is None else walked[0]
    dialect = args.dialect if args.dialect is not None else "auto"
    cache = memo = None
    # every input's stamp, one stat each by the core, packed (report_cache.stamp_table): the
    # memo's key, the cache's check without reading a file (not taken with --no-cache)
    table = None
    if not args.no_cache and _native_module() is not None:
        table = report_cache.stamp_table(names) if walked is None else walked[1]
        memo_key = _memo_key(args, names, table, by, tz, since, until, status)
        if memo_key is not None:
            memo = Memo()
            # the same options over the same unchanged files: the output a MiB at a time
            if memo.copy(memo_key, sys.stdout.write):
                if not report_cache.replay_progress(
                    names, table[::5], getattr(args, "progress", None)
                ):
                    progress = Progress(names, True)
                    for name in names:
                        progress.file_done(name)
                return 0
            args.memo = (memo, memo_key)
    if getattr(args, "limits", False):  # also kept in the memo (its key says --limits)
        from .limits import run

        return run(args, names, status, snap if estimate else None, tz)
    if not args.no_cache and _native_module() is not None:
        cache = SummaryCache()
        cache.table = table
    progress = Progress(names, wanted(getattr(args, "progress", None)))
    options: dict[str, Any] = dict(
        prices=snap, estimate=estimate, tz=tz, by=by, since=since, until=until, active=args.active
    )
    native = _native_module()
    # the fold across files in the core, where the inputs can be read again (stdin cannot)
    # should the core's sums differ from Python's (usage.Inexact): then the Python fold
    fold: UsageFold | CoreFold
    if native is not None and hasattr(native, "_UsageMerge") and "-" not in names:
        fold = CoreFold(native, **options)
    else:
        fold = UsageFold(**options)
    files, status = _fold_all(fold, names, dialect, cache, progress, args, status)
    # the stamps and the cache's places freed before the totals are made beside the fold
    cache = table = walked = None
    # every output written as it is made (write_json, write_table, write_csv): the sessions'
    # totals are never all dicts at once
    lazy = isinstance(fold, CoreFold)
    try:
        if isinstance(fold, CoreFold):
            totals = fold.totals(by_day="day" in by, lazy=lazy)
            rows: Any = fold.rows(lazy=lazy)
        else:
            totals = fold.totals(by_day="day" in by)
            rows = fold.rows()
        active = fold.active_block(time.time()) if args.active else None
    except Inexact:
        fold = UsageFold(**options)
        _fold_all(fold, names, dialect, None, Progress(names, False), args, status, quiet=True)
        totals = fold.totals(by_day="day" in by)
        rows = fold.rows()
        active = fold.active_block(time.time()) if args.active else None
    doc: dict[str, Any] = {"files": files, "total": totals["total"]}
    for dim in by:
        if dim in _KEYS:
            doc[_KEYS[dim]] = totals[_KEYS[dim]]
    doc["rows"] = rows
    doc["prices"] = {"date": snap.date, "source": snap.source} if estimate else None
    if args.active:
        doc["active"] = active
    if args.json:
        write_json(doc, sys.stdout.write)
    elif args.csv:
        write_csv(rows, by, sys.stdout.write)
    else:
        write_table(doc, by, files, tz, snap if estimate else None, sys.stdout.write)
        if args.active:
            sys.stdout.write(_active_text(doc["active"], tz))
    return status


def _fold_all(
    fold: UsageFold | CoreFold,
    names: list[str],
    dialect: Any,
    cache: SummaryCache | None,
    progress: Progress,
    args: argparse.Namespace,
    status: int,
    quiet: bool = False,
) -> tuple[int, int]:
    """Fold every input in order (into a :class:`~checkfu_fast.usage.CoreFold` without a
    cache: :meth:`~checkfu_fast.usage.CoreFold.fold_files`, else :func:`fold_files`;
    :func:`fold_stream` for what the core leaves); returns how many files were read and the
    exit status (a warning on stderr, but not when ``quiet``: the second fold of the inputs,
    in Python, says nothing again)."""
    explicit = args.dialect not in (None, "auto")
    files = 0

    def one(name: str, done: tuple[int, int] | None) -> None:
        """``name`` folded (``done``: its counts, else folded here) and counted."""
        nonlocal files, status
        try:
            if done is not None:
                known, unknown = done
            elif name == "-":
                known, unknown = fold_stream(fold, sys.stdin.buffer, dialect, progress)
            else:
                with open_input(name) as f:
                    known, unknown = fold_stream(fold, f, dialect, progress, claude_project(name))
            files += 1
            if explicit and unknown and not known:
                if not quiet:
                    recognised_none(name, args.dialect, unknown, progress)
                status = 1
        except OSError as exc:
            fold.end_stream()
            if not quiet:
                unreadable(name, exc, progress)
            status = 1
        progress.file_done(name)

    try:
        if cache is None and isinstance(fold, CoreFold):
            # the whole pipeline in the core: every file folded on every core and merged in
            # file order there (no summary handed to Python); it stops before a file it leaves
            # to Python, folded here in its place, and goes on after it. --progress: in runs
            # of PROGRESS_FILES files, each file done in turn
            step = PROGRESS_FILES if progress.enabled else max(len(names), 1)
            i = 0
            while i < len(names):
                run = names[i : i + step]
                merged, quiet_files = fold.fold_files(run, _native_dialect(dialect), BUDGET)
                if progress.enabled:
                    unknown = dict(quiet_files)
                    for j in range(merged):
                        one(run[j], (0, unknown[j]) if j in unknown else (1, 0))
                else:
                    files += merged - len(quiet_files)
                    for j, n in quiet_files:  # none recognised: warned with --dialect
                        one(run[j], (0, n))
                i += merged
                if merged < len(run):
                    one(names[i], None)
                    i += 1
        else:
            for name, done in fold_files(fold, names, dialect, cache=cache):
                one(name, done)
        progress.close()
        if cache is not None:
            cache.save()
    finally:
        if cache is not None:
            cache.discard()  # saved, or (cut short) its new file removed
    return files, status


def _memo_key(
    args: argparse.Namespace,
    names: list[str],
    table: Any,
    by: list[str],
    tz: tzinfo,
    since: str | None,
    until: str | None,
    status: int,
) -> str | None:
    """The key of this run's output in :class:`~checkfu_fast.report_cache.Memo`
    (:func:`~checkfu_fast.report_cache.memo_key`: the options, the paths, every input and its
    stamp); None where the output may differ on a re-run with the same ones (``--active``
    depends on the time, ``-`` on what is piped, a mapping file on its text, an input just
    modified may change again unseen) or is not kept (a warning was given, a file cannot be
    read)."""
    dialect = args.dialect if args.dialect is not None else "auto"
    if status or args.active or "-" in names or not isinstance(dialect, str):
        return None
    st = report_cache.stamps(names, table=table)
    if st is None:
        return None
    return report_cache.memo_key(
        by=by,
        zone=getattr(tz, "key", None) or str(tz),
        since=since,
        until=until,
        prices=args.prices,
        no_estimate=args.no_estimate,
        json_out=args.json,
        csv_out=args.csv,
        dialect=dialect,
        paths=list(args.paths),
        names=names,
        stamps=st,
        limits=bool(getattr(args, "limits", False)),
    )


def _active_text(a: dict[str, Any] | None, tz: tzinfo) -> str:
    if a is None:
        return "active block: none (no reading in the last 5 hours)\n"
    cost = "-" if a["costUsd"] is None else f"${a['costUsd']:.2f}"
    return (
        f"active block: {_local(a['block'], tz)} - {_local(a['blockEnd'], tz)[11:]}, "
        f"{a['remainingMinutes']} min left\n"
        f"  so far {a['inputTokens'] + a['outputTokens']:,} tokens, {cost}; "
        f"burn {a['tokensPerHour']:,.0f} tokens/h, ${a['usdPerHour']:.2f}/h\n"
        f"  projected at its end: {a['projectedTokens']:,} tokens, ${a['projectedUsd']:.2f}\n"
    )
