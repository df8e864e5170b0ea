"""``checkfu-fast report``: token and cost totals of many agent streams (docs/usage.md).

Each file is streamed through :class:`checkfu_fast.Normalizer` in 1 MiB chunks and folded into
one :class:`checkfu_fast.usage.UsageFold`, so memory stays bounded by the number of sessions and
models, not by the number or size of the files. Directories are walked by the shared rule of
:mod:`checkfu_fast.paths` (recursive, stream file suffixes only, hidden entries skipped, stable
sorted order).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from . import Normalizer
from .inputs import open_input
from .paths import empty_dirs, expand
from .progress import Progress, wanted
from .usage import UsageFold

CHUNK = 1 << 20
_KEYS = {"session": "bySession", "model": "byModel", "day": "byDay"}
_HEADS = {"session": ["Session", "Dialect"], "model": ["Model"], "day": ["Day (UTC)"]}


def add_arguments(r: Any) -> None:
    """The ``report`` subcommand's arguments, on its argparse parser (cli.py makes it)."""
    r.add_argument("paths", nargs="+", metavar="FILE|DIR", help="stream file, directory, or -")
    r.add_argument("--by", choices=["session", "model", "day"], default="session")
    r.add_argument("--json", action="store_true", help="print JSON for scripts")


def iter_files(paths: list[str]) -> Iterator[str]:
    """Every input: files as given, directories walked (:func:`checkfu_fast.paths.expand`)."""
    yield from expand(paths)


def fold_stream(
    fold: UsageFold, src: BinaryIO, dialect: Any = "auto", progress: Progress | None = None
) -> None:
    """Normalize one stream chunk by chunk and fold its events (none are kept)."""
    n = Normalizer(dialect)
    fold.start_stream()
    while chunk := src.read(CHUNK):
        if progress is not None:
            progress.read(len(chunk))
        for ev in n.feed(chunk):
            fold.add(ev)
    for ev in n.finish():
        fold.add(ev)
    fold.end_stream()


def _int(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.1f}"


def _cost(t: dict[str, Any]) -> str:
    if t["costUsd"] is None:
        return "-"
    return f"{t['costUsd']:.4f}" + ("*" if t["source"] == "partial" else "")


def _reasoning(t: dict[str, Any]) -> str:
    return _int(t["reasoningTokens"]) if "reasoningTokens" in t else "-"


def _endings(t: dict[str, Any]) -> str:
    """``ok``, ``empty``, ``failed`` (or ``2 ok, 1 failed``): how the streams ended."""
    seen: list[tuple[str, int]] = [(k, n) for k, n in t["endings"].items() if n]
    if len(seen) == 1 and seen[0][1] == 1:
        return seen[0][0]
    return ", ".join(f"{n} {k}" for k, n in seen) or "-"


def _cells(t: dict[str, Any]) -> list[str]:
    return [
        _int(t["inputTokens"]),
        _int(t["outputTokens"]),
        _reasoning(t),
        _int(t["cachedTokens"]),
        _cost(t),
    ]


def table(totals: dict[str, Any], by: str, files: int) -> str:
    """The human table: one row per session (or model), then the total."""
    key = _KEYS[by]
    head = _HEADS[by] + ["Input", "Output", "Reasoning", "Cached", "Cost (USD)"]
    if by == "session":
        head.append("Ending")
    rows = []
    for name, t in totals[key].items():
        row = [name, t["dialect"]] if by == "session" else [name]
        row += _cells(t)
        if by == "session":
            row.append(_endings(t))
        rows.append(row)
    t = totals["total"]
    total = ["Total"] + ([""] if by == "session" else [])
    total += _cells(t)
    if by == "session":
        total.append(_endings(t))
    text_cols = 2 if by == "session" else 1
    widths = [max(len(r[i]) for r in [head, *rows, total]) for i in range(len(head))]

    def line(r: list[str]) -> str:
        cells = [
            c.ljust(w) if i < text_cols or (by == "session" and i == len(r) - 1) else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(head), rule, *map(line, rows), rule, line(total)]
    count = len(totals[key])
    out.append(f"{files} file(s), {count} {by}{'s' if count != 1 else ''}")
    if by == "day" and "unknown" in totals[key]:
        out.append("unknown: usage whose event has no timestamp (stream formats rarely give one)")
    if any(r["source"] == "partial" for r in [*totals[key].values(), t]):
        out.append("* the cost covers only some usage readings (the others had none from the CLI)")
    if any(r["source"] == "absent" for r in totals[key].values()):
        out.append(
            "- the CLI reported no cost (codex, cursor and claude session files never do); "
            "none is estimated"
        )
    ends = t["endings"]
    if by == "session" and (ends["empty"] or ends["failed"]):
        out.append(
            "empty: a success result that gave no answer; failed: the stream ended on an error "
            "(whatever the exit status)"
        )
    return "\n".join(out) + "\n"


def main(args: argparse.Namespace) -> int:
    fold = UsageFold()
    status = files = 0
    for d in empty_dirs(args.paths):
        print(f"checkfu-fast: {d}: no stream files (*.jsonl, *.json, ...) in it", file=sys.stderr)
        status = 1
    names = list(iter_files(args.paths))
    progress = Progress(names, wanted(getattr(args, "progress", None)))
    for name in names:
        try:
            if name == "-":
                fold_stream(fold, sys.stdin.buffer, args.dialect, progress)
            else:
                with open_input(name) as f:
                    fold_stream(fold, f, args.dialect, progress)
            files += 1
        except OSError as exc:
            fold.end_stream()
            progress.clear()
            print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
        progress.file_done(name)
    progress.close()
    totals = fold.totals(by_day=args.by == "day")
    if args.json:
        key = _KEYS[args.by]
        doc = {"files": files, "total": totals["total"], key: totals[key]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(table(totals, args.by, files))
    return status
