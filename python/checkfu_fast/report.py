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
from .paths import empty_dirs, expand
from .progress import Progress, wanted
from .usage import UsageFold

CHUNK = 1 << 20
NO_TIME = (
    "--by day needs the time of each event, and events/v1 events carry no timestamp field "
    "(docs/usage.md, Known gaps); use --by session or --by model"
)


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


def table(totals: dict[str, Any], by: str, files: int) -> str:
    """The human table: one row per session (or model), then the total."""
    key = "bySession" if by == "session" else "byModel"
    head = ["Session", "Dialect"] if by == "session" else ["Model"]
    head += ["Input", "Output", "Cached", "Cost (USD)"]
    rows = []
    for name, t in totals[key].items():
        row = [name, t["dialect"]] if by == "session" else [name]
        rows.append(
            [
                *row,
                _int(t["inputTokens"]),
                _int(t["outputTokens"]),
                _int(t["cachedTokens"]),
                _cost(t),
            ]
        )
    t = totals["total"]
    total = ["Total"] + ([""] if by == "session" else [])
    total += [_int(t["inputTokens"]), _int(t["outputTokens"]), _int(t["cachedTokens"]), _cost(t)]
    text_cols = 2 if by == "session" else 1
    widths = [max(len(r[i]) for r in [head, *rows, total]) for i in range(len(head))]

    def line(r: list[str]) -> str:
        cells = [
            c.ljust(w) if i < text_cols else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(head), rule, *map(line, rows), rule, line(total)]
    unit = "session" if by == "session" else "model"
    count = len(totals[key])
    out.append(f"{files} file(s), {count} {unit}{'s' if count != 1 else ''}")
    if any(r["source"] == "partial" for r in [*totals[key].values(), t]):
        out.append("* the cost covers only some usage readings (the others had none from the CLI)")
    if any(r["source"] == "absent" for r in totals[key].values()):
        out.append("- the CLI reported no cost (codex and cursor never do); none is estimated")
    return "\n".join(out) + "\n"


def main(args: argparse.Namespace) -> int:
    if args.by == "day":
        print(f"checkfu-fast report: {NO_TIME}", file=sys.stderr)
        return 2
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
                with open(name, "rb") as f:
                    fold_stream(fold, f, args.dialect, progress)
            files += 1
        except OSError as exc:
            fold.end_stream()
            progress.clear()
            print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
        progress.file_done(name)
    progress.close()
    totals = fold.totals()
    if args.json:
        key = "bySession" if args.by == "session" else "byModel"
        doc = {"files": files, "total": totals["total"], key: totals[key]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(table(totals, args.by, files))
    return status
